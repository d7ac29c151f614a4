//! `hsched check` and `hsched sim` with the HLS guarantee analysis: the
//! labelled hierarchy (text, DOT, SVG, JSON), hierarchies that do not
//! compose (exit 2, the edge named), `needs`, schedulers from the
//! literature, and `--allow-uncomposed`.

mod common;
use common::{hsched, repo, text};

/// Writes a scenario to a file of its own; returns its path.
fn scenario_file(name: &str, body: &str) -> String {
    let path = common::tmp("check-guarantees", name);
    std::fs::write(
        &path,
        format!("horizon = \"1s\"\nseed = 1\n\n[machine]\ncpus = 1\n\n{body}"),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

const FIG3: &str = "scenarios/papers/hls-fig3.toml";

const RES_UNDER_RR: &str = r#"
[[scheduler]]
name = "ts"
policy = "rr"

[[scheduler]]
name = "res"
policy = "res"
parent = "ts"

[[thread]]
name = "video"
parent = "res"
at = { amount = "5ms", period = "33ms" }
program = [ { periodic = { period = "33ms", run = "5ms" } } ]
"#;

#[test]
fn check_prints_figure_3_labelled() {
    let out = hsched(&["check", FIG3]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    insta::assert_snapshot!("fig3_text", text(&out.stdout));
}

#[test]
fn check_draws_figure_3_as_dot_and_json() {
    let out = hsched(&["check", FIG3, "--dot"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dot = text(&out.stdout);
    assert!(
        dot.starts_with("digraph"),
        "only the drawing on stdout: {dot}"
    );
    insta::assert_snapshot!("fig3_dot", dot);

    let out = hsched(&["check", FIG3, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["composes"], true);
    let voice = v["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["to"] == "voice")
        .unwrap();
    assert_eq!(voice["guarantee"], "PSBE 0.4, 58");
    assert_eq!(voice["share"], "2/5");
    insta::assert_snapshot!("fig3_json", text(&out.stdout));
}

#[test]
fn check_writes_drawings_to_files_and_still_prints_the_text() {
    let dir = std::env::temp_dir().join(format!("hsched-check-draw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("fig3.svg");
    let json = dir.join("fig3.json");
    let out = hsched(&[
        "check",
        FIG3,
        "--svg",
        svg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("⇐ PSBE 0.1, 22"));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.contains("<svg") && drawn.contains("RESBS 40, 80"),
        "{drawn}"
    );
    let again = hsched(&["check", FIG3, "--svg"]);
    assert_eq!(text(&again.stdout), drawn, "the same drawing every time");
    assert!(std::fs::read_to_string(&json)
        .unwrap()
        .contains("\"composes\": true"));

    let out = hsched(&["check", FIG3, "--svg", "/no/such/dir/x.svg"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot write the SVG drawing to /no/such/dir/x.svg"));
}

#[test]
fn a_reservation_scheduler_under_time_sharing_is_refused_naming_the_edge() {
    let path = scenario_file("res-under-rr.toml", RES_UNDER_RR);
    let want = "`res` under `ts`: res needs ALL or RESU, but `ts` (rr) gives it NULL";
    let out = hsched(&["check", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("the hierarchy does not compose") && err.contains(want),
        "{err}"
    );
    assert!(text(&out.stdout)
        .contains("res: res [rate=\"1\", multiprocessor=\"one\", fit=\"first\"]  ⇐ NULL"));
    // Its first line does not say `ok`.
    let first = text(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(first.contains(": does not compose — "), "{first}");

    // The simulator refuses it with the same message...
    let out = hsched(&["sim", &path]);
    assert_eq!(out.status.code(), Some(2));
    let sim_err = text(&out.stderr);
    assert!(
        sim_err.contains(want) && sim_err.contains("--allow-uncomposed"),
        "{sim_err}"
    );
    assert!(out.stdout.is_empty());

    // ... unless told to run it anyway, with a warning.
    let out = hsched(&["sim", &path, "--allow-uncomposed"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let warn = text(&out.stderr);
    assert!(
        warn.starts_with("warning: ") && warn.contains(want),
        "{warn}"
    );
    assert!(text(&out.stdout).contains("video"));
}

#[test]
fn reservations_past_the_cpu_are_an_admission_error() {
    let path = scenario_file(
        "overbooked.toml",
        r#"
[[scheduler]]
name = "res"
policy = "res"

[[thread]]
name = "a"
parent = "res"
at = { amount = "60ms", period = "100ms" }
program = [ { run = "1ms" } ]

[[thread]]
name = "b"
parent = "res"
at = { amount = "50ms", period = "100ms" }
program = [ { run = "1ms" } ]
"#,
    );
    let out = hsched(&["check", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("`res`: its reservations sum to 110% of the CPU, past 100%"),
        "{err}"
    );
}

#[test]
fn needs_are_checked_and_bad_needs_are_a_scenario_error() {
    let fig3 = std::fs::read_to_string(repo().join(FIG3)).unwrap();
    let greedy = fig3.replace("needs = \"PSBE 0.4, 58\"", "needs = \"PSBE 0.5, 58\"");
    let dir = std::env::temp_dir().join(format!("hsched-check-needs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("greedy.toml");
    std::fs::write(&path, greedy).unwrap();
    let out = hsched(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("thread `voice` needs PSBE 0.5, 58, but `ps` (sfq) gives it PSBE 0.4, 58"),
        "{err}"
    );

    let bad = fig3.replace("needs = \"PSBE 0.4, 58\"", "needs = \"PSBE 0.4\"");
    let path = dir.join("bad-needs.toml");
    std::fs::write(&path, bad).unwrap();
    let out = hsched(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("thread[2].needs") && err.contains("PSBE takes two parameters"),
        "{err}"
    );
    assert!(
        err.contains("bad-needs.toml:") || err.contains("bad-needs.toml"),
        "{err}"
    );
}

#[test]
fn literature_schedulers_are_analysed_but_never_run() {
    let path = scenario_file(
        "cbs.toml",
        r#"
[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "server"
policy = "cbs"
parent = "root"
at = { prio = 5 }

[[thread]]
name = "video"
parent = "server"
at = { guarantee = "RESBH 5, 33" }
needs = "RESBS 5, 33"
program = [ { periodic = { period = "33ms", run = "5ms" } } ]
"#,
    );
    let out = hsched(&["check", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.contains("thread video @ guarantee=\"RESBH 5, 33\"  ⇐ RESBH 5, 33"),
        "{s}"
    );
    assert!(
        s.contains("needs RESBS 5, 33: met: RESBH 5, 33 -> RESBS 5, 33"),
        "{s}"
    );

    let out = hsched(&["sim", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("`cbs` is a scheduler from the literature known to the analysis only"),
        "{err}"
    );
}

#[test]
fn every_bundled_scenario_composes() {
    // A bundled scenario that legitimately does not compose would be named
    // here with the reason; none does.
    for dir in ["scenarios/examples", "scenarios/papers"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let p = path.to_str().unwrap();
                let out = hsched(&["check", p, "--json"]);
                assert!(out.status.success(), "{p}: {}", text(&out.stderr));
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(v["composes"], true, "{p}");
            }
        }
    }
}

mod needs_key {
    use proptest::prelude::*;

    fn scenario(needs: &str) -> String {
        format!(
            "horizon = \"1s\"\n[[scheduler]]\nname = \"r\"\npolicy = \"rr\"\n\n[[thread]]\nname = \"t\"\nneeds = {needs}\nprogram = [ {{ run = \"1ms\" }} ]\n"
        )
    }

    proptest! {
        /// The `needs` key takes exactly what the guarantee parser takes,
        /// and anything else is refused naming the key, never a panic.
        #[test]
        fn needs_parses_as_a_guarantee_or_is_refused_naming_the_key(
            text in prop_oneof![
                "\\PC{0,30}",
                "(ALL|NULL|RESBH|RESBS|RESCS|RESU|PSBE|PS)( [0-9]{1,3}(\\.[0-9])?(ms|us)?(, ?[0-9]{1,3}%?)?)?",
            ]
        ) {
            let quoted = toml_quote(&text);
            match hsched_scenario::parse(&scenario(&quoted), "needs.toml") {
                Ok(scn) => {
                    prop_assert!(hsched_analysis::guarantee::Guarantee::parse(&text).is_ok());
                    prop_assert_eq!(scn.threads[0].needs.as_deref(), Some(text.as_str()));
                }
                Err(e) => {
                    prop_assert!(hsched_analysis::guarantee::Guarantee::parse(&text).is_err());
                    prop_assert_eq!(e.key(), "thread[0].needs");
                }
            }
        }
    }

    /// A TOML basic string holding `s`.
    fn toml_quote(s: &str) -> String {
        let mut q = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    q.push_str(&format!("\\u{:04X}", c as u32))
                }
                c => q.push(c),
            }
        }
        q.push('"');
        q
    }

    #[test]
    fn a_needs_that_is_not_a_string_is_refused() {
        let e = hsched_scenario::parse(&scenario("5"), "needs.toml").unwrap_err();
        assert_eq!(e.key(), "thread[0].needs");
    }
}
