//! The HTML report (`hsched sim --report`) in a real headless browser,
//! Debian's chromium: the page loads without a script error and a
//! screenshot shows the timeline drawn.
//!
//! The test installs nothing: `.ci/run` installs chromium (see
//! `hsched-testkit` for what happens when it is missing).
//! `HSCHED_CHROMIUM` names another browser binary to use.

mod common;

use common::{hsched, text, tmp};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The thread colours of the report's palette, in thread order (video,
/// audio, compile.0, compile.1, compile.2, editor in desktop.toml).
const PALETTE: [[u8; 3]; 6] = [
    [0x4e, 0x79, 0xa7],
    [0xf2, 0x8e, 0x2b],
    [0xe1, 0x57, 0x59],
    [0x76, 0xb7, 0xb2],
    [0x59, 0xa1, 0x4f],
    [0xed, 0xc9, 0x48],
];

/// The browser to test with.
fn chromium() -> Result<PathBuf, String> {
    match std::env::var_os("HSCHED_CHROMIUM") {
        Some(path) => Ok(PathBuf::from(path)),
        None => hsched_testkit::program("chromium"),
    }
}

fn run_browser(browser: &Path, profile: &Path, args: &[&str], page: &str) -> Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--no-first-run",
            "--window-size=1280,2400",
            "--force-device-scale-factor=1",
            "--virtual-time-budget=3000",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(page)
        .output()
        .expect("chromium runs")
}

/// The value of `attr="..."` on the first tag that has it in `dom`.
fn attribute<'a>(dom: &'a str, attr: &str) -> Option<&'a str> {
    let key = format!("{attr}=\"");
    let start = dom.find(&key)? + key.len();
    let end = start + dom[start..].find('"')?;
    Some(&dom[start..end])
}

#[test]
fn the_report_loads_in_chromium_and_shows_the_timeline() {
    let browser = hsched_testkit::require!("chromium", chromium());
    let report = tmp("browser", "desktop.html");
    let out = hsched(&[
        "sim",
        "scenarios/examples/desktop.toml",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = format!("file://{}", report.display());
    let profile = tmp("browser", "profile");

    // The page's script records every error (window.onerror, unhandled
    // rejections, console.error) in #errors and body[data-errors], and
    // marks body[data-ready] when it has drawn everything.
    let dom = run_browser(&browser, &profile, &["--dump-dom"], &page);
    let dom_text = text(&dom.stdout);
    let log = text(&dom.stderr);
    assert!(
        dom_text.contains("<body data-ready=\"1\">"),
        "the report's script did not finish:\n{}\n{log}",
        &dom_text[dom_text.find("<div id=\"errors\"").unwrap_or(0)..][..2_000.min(dom_text.len())]
    );
    assert!(
        dom_text.contains("<div id=\"errors\" class=\"errors\"></div>"),
        "errors in the page: {}",
        &dom_text[dom_text.find("<div id=\"errors\"").unwrap()..][..1_000]
    );
    for line in log.lines() {
        assert!(
            !(line.contains("CONSOLE") && line.contains("Uncaught")),
            "console error: {line}"
        );
    }
    let plot_box: Vec<u32> = attribute(&dom_text, "data-plot-box")
        .expect("the timeline canvas says where its rows are")
        .split(',')
        .map(|n| n.parse().unwrap())
        .collect();
    let [x, y, w, h] = plot_box[..] else {
        panic!("data-plot-box: {plot_box:?}")
    };

    // The screenshot: the timeline's rows show the threads' colours.
    let shot = tmp("browser", "shot.png");
    let out = run_browser(
        &browser,
        &profile,
        &[&format!("--screenshot={}", shot.display())],
        &page,
    );
    assert!(shot.is_file(), "no screenshot: {}", text(&out.stderr));
    let png = std::fs::read(&shot).unwrap();
    let image = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
    assert!(
        y + h <= image.height() && x + w <= image.width(),
        "timeline {plot_box:?} outside the {}x{} screenshot",
        image.width(),
        image.height()
    );
    let mut seen = [0usize; PALETTE.len()];
    let mut distinct = std::collections::BTreeSet::new();
    for py in y..y + h {
        for px in x..x + w {
            let p = image.pixel(px, py).unwrap();
            let rgb = [p.red(), p.green(), p.blue()];
            distinct.insert(rgb);
            if let Some(i) = PALETTE.iter().position(|c| *c == rgb) {
                seen[i] += 1;
            }
        }
    }
    // The threads that run for 5 ms at a time or more (video, the three
    // compiles) are wider than a pixel (about 1.8 ms at this width) and so
    // drawn in their colour exactly; audio's 0.5 ms bursts and the
    // editor's are merged into pixel columns, drawn translucent.
    for i in [0, 2, 3, 4] {
        assert!(
            seen[i] > 0,
            "thread colour {i} not in the timeline: {seen:?}"
        );
    }
    assert!(
        distinct.len() >= 8,
        "{} colours in the timeline",
        distinct.len()
    );
    let _ = std::fs::remove_dir_all(report.parent().unwrap());
}

/// A run that reached a bound says so on the page: cut short by
/// `--max-events`, its report (written before the exit 2) shows the
/// limit above the tables.
#[test]
fn the_report_shows_the_limits_a_run_reached() {
    let browser = hsched_testkit::require!("chromium", chromium());
    let report = tmp("browser", "cut.html");
    let out = hsched(&[
        "sim",
        "scenarios/examples/desktop.toml",
        "--max-events",
        "200",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let page = format!("file://{}", report.display());
    let profile = tmp("browser", "profile-limits");
    let dom = run_browser(&browser, &profile, &["--dump-dom"], &page);
    let dom_text = text(&dom.stdout);
    assert!(
        dom_text.contains("<body data-ready=\"1\">"),
        "the report's script did not finish: {}",
        text(&dom.stderr)
    );
    let limits = &dom_text[dom_text.find("<div id=\"limits\"").expect("the limits box")..];
    let limits = &limits[..limits.find("</div>").unwrap()];
    assert!(
        limits.contains("limits reached") && limits.contains("--max-events"),
        "{limits}"
    );
}
