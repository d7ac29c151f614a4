//! `hfsc` on several CPUs from the command line: the partitioned example
//! checks and runs with its labels, `hsched policies hfsc` describes the
//! modes, and a bad `multiprocessor` or `fit` exits 2 naming the modes.

mod common;
use common::{hsched, text};

fn tmp(name: &str) -> std::path::PathBuf {
    common::tmp("hfsc-mp", name)
}

const EXAMPLE: &str = "scenarios/examples/hfsc-partitioned.toml";

#[test]
fn the_partitioned_example_labels_a_curve_per_cpu_and_refuses_the_third() {
    let out = hsched(&["check", EXAMPLE]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for needle in [
        "thread rt.0 @",
        "PS 0.6 (service curve <0.6, 0ns, 0.6> on vp0 of 2",
        "on vp1 of 2",
        "PS 0.05 (service curve <0.4, 5ms, 0.05> on vp0 of 2",
        "warning: thread `rt.2` under `hfsc`: partitioned hfsc (first fit) refuses it",
    ] {
        assert!(s.contains(needle), "`{needle}` in:\n{s}");
    }
    let out = hsched(&["sim", EXAMPLE, "--check"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.contains("no VP admits") && s.contains("vp1 (Σ r2 = 0.6)"),
        "{s}"
    );
}

#[test]
fn policies_text_names_the_modes() {
    let out = hsched(&["policies", "hfsc"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for needle in ["multiprocessor", "partitioned", "fit", "worst"] {
        assert!(s.contains(needle), "`{needle}` in:\n{s}");
    }
}

#[test]
fn bad_mode_or_fit_exits_2_naming_what_is_supported() {
    let example = std::fs::read_to_string(common::repo().join(EXAMPLE)).unwrap();
    let mp = |m: &str| format!("multiprocessor = \"{m}\"");
    let fit = |f: &str| format!("fit = \"{f}\"");
    for (mode, fit, needle) in [
        (mp("global"), fit("first"), "no published"),
        (mp("spread"), fit("first"), "\"partitioned\""),
        (mp("partitioned"), fit("best"), "\"worst\""),
        (mp("one"), fit("worst"), "needs `multiprocessor`"),
    ] {
        let bad = tmp("bad.toml");
        // The lines of the [[scheduler]] table (the header comment quotes
        // them too).
        let text_ = example
            .replacen(
                "\nmultiprocessor = \"partitioned\"\n",
                &format!("\n{mode}\n"),
                1,
            )
            .replacen("\nfit = \"first\"\n", &format!("\n{fit}\n"), 1);
        std::fs::write(&bad, text_).unwrap();
        let to = format!("{mode}, {fit}");
        for cmd in ["sim", "check"] {
            let out = hsched(&[cmd, bad.to_str().unwrap()]);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{cmd} {to}: {}",
                text(&out.stdout)
            );
            let err = text(&out.stderr);
            assert!(err.contains(needle), "{cmd} {to}: {err}");
        }
    }
}
