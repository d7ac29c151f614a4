//! `hsched import simso`: the scenario on stdout runs with `hsched sim`,
//! notes go to stderr, and a file that cannot be imported exits 2 naming
//! the file, line and element.

mod common;

use common::{hsched, text, tmp};

const FIXTURE: &str = "crates/scenario/tests/fixtures/simso/edf-three-tasks.xml";

#[test]
fn the_imported_scenario_runs_and_notes_go_to_stderr() {
    let out = hsched(&["import", "simso", FIXTURE]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let toml = text(&out.stdout);
    assert!(
        toml.starts_with("# Imported by `hsched import simso`"),
        "{toml}"
    );
    assert!(
        text(&out.stderr).contains("note: abort_on_miss"),
        "{}",
        text(&out.stderr)
    );
    let path = tmp("import-simso", "three.toml");
    std::fs::write(&path, &toml).unwrap();
    let sim = hsched(&["sim", path.to_str().unwrap(), "--json"]);
    assert!(sim.status.success(), "{}", text(&sim.stderr));
    let metrics: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
    let misses = &metrics["global"]["deadline_misses"];
    // video 3ms/10ms, audio 1.25ms/5ms due in 4ms, log 2ms sporadic: EDF meets every deadline.
    assert_eq!(misses, 0, "{}", metrics["global"]);
}

#[test]
fn a_file_that_cannot_be_imported_exits_2_with_its_place() {
    let path = tmp("import-simso", "bad.xml");
    std::fs::write(
        &path,
        "<simulation>\n<sched class=\"simso.schedulers.LLF\"/>\n<processors><processor id=\"1\"/></processors>\n\
         <tasks><task name=\"a\" period=\"10\" deadline=\"10\" WCET=\"2\"/></tasks>\n</simulation>\n",
    )
    .unwrap();
    let out = hsched(&["import", "simso", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.xml:2:")
            && err.contains("<sched> attribute `class`")
            && err.contains("LLF"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let missing = hsched(&["import", "simso", "no/such.xml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no/such.xml: cannot read"));
}
