//! `hsched plot` and `hsched sim --report` from the command line: the files
//! they write, and the refusals (exit 2) of what they cannot do.

mod common;

use common::{hsched, text, tmp};

#[test]
fn sim_writes_a_report_without_being_asked_for_a_trace() {
    let out_path = tmp("plot", "desktop.html");
    let out = hsched(&[
        "sim",
        "scenarios/examples/desktop.toml",
        "--report",
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The summary is still printed.
    assert!(text(&out.stdout).contains("compile.0"));
    let html = std::fs::read_to_string(&out_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // The timeline was recorded: its segments are in the data.
    let start = html.find("id=\"report-data\">").unwrap() + "id=\"report-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    assert!(data["timeline"]["source_segments"].as_u64().unwrap() > 100);
    // The hierarchy drawing and the scenario text are in.
    assert!(html.contains("root (fp)"));
    assert!(html.contains("name = &quot;desktop&quot;"));
    // The same command gives the same file.
    let again = tmp("plot", "desktop2.html");
    let out = hsched(&[
        "sim",
        "scenarios/examples/desktop.toml",
        "--report",
        again.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(std::fs::read(&again).unwrap() == html.as_bytes());
}

#[test]
fn plot_writes_svg_and_png_by_extension() {
    let svg = tmp("plot", "share.svg");
    let out = hsched(&[
        "plot",
        "share",
        "scenarios/examples/desktop.toml",
        "-o",
        svg.to_str().unwrap(),
        "--thread",
        "video",
        "--thread",
        "editor",
        "--from",
        "100ms",
        "--to",
        "600ms",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = std::fs::read_to_string(&svg).unwrap();
    assert!(body.starts_with("<svg"));
    assert!(body.contains("video") && body.contains("editor"));
    assert!(
        !body.contains("compile.0"),
        "a thread not asked for is drawn"
    );

    let png = tmp("plot", "timeline.png");
    let out = hsched(&[
        "plot",
        "timeline",
        "scenarios/examples/multiprocessor.toml",
        "-o",
        png.to_str().unwrap(),
        "--width",
        "800",
        "--height",
        "400",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let image = resvg::tiny_skia::Pixmap::decode_png(&std::fs::read(&png).unwrap()).unwrap();
    assert_eq!((image.width(), image.height()), (800, 400));
}

#[test]
fn plot_refuses_what_it_cannot_draw() {
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "plot",
                "timeline",
                "scenarios/examples/desktop.toml",
                "-o",
                "x.pdf",
            ],
            "must end in .svg or .png",
        ),
        (
            &[
                "plot",
                "latency",
                "scenarios/examples/desktop.toml",
                "-o",
                "x.svg",
                "--thread",
                "nobody",
            ],
            "no thread `nobody`",
        ),
        (
            &[
                "plot",
                "share",
                "scenarios/examples/desktop.toml",
                "-o",
                "x.svg",
                "--from",
                "3s",
            ],
            "time window is empty",
        ),
        (
            &["plot", "timeline", "no/such/file.toml", "-o", "x.svg"],
            "no/such/file.toml",
        ),
    ];
    for (args, message) in cases {
        let out = hsched(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // Nothing was written for a refused plot.
    assert!(!common::repo().join("x.svg").exists());
}
