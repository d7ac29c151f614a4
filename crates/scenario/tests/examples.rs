//! Every scenario shipped under `scenarios/` (at any depth, but not the
//! sweep specs of `scenarios/sweeps/`) parses against
//! the real policy registry: the policies and parameters the files name
//! exist as written.

use std::path::{Path, PathBuf};

fn scenario_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                // Sweep specs (docs/sweep.md) are not scenarios.
                if p.file_name().is_some_and(|n| n == "sweeps") {
                    continue;
                }
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut out = Vec::new();
    walk(&root, &mut out);
    out.sort();
    out
}

/// The path as shown in messages: relative to the workspace.
fn shown(p: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    p.strip_prefix(&root).unwrap_or(p).display().to_string()
}

#[test]
fn the_examples_are_there() {
    let names: Vec<String> = scenario_files()
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    for want in ["desktop.toml", "join.toml", "multiprocessor.toml"] {
        assert!(
            names.iter().any(|n| n == want),
            "missing scenarios/examples/{want}"
        );
    }
}

#[test]
fn every_scenario_parses_with_the_real_registry() {
    let mut failures = Vec::new();
    for p in scenario_files() {
        let text = std::fs::read_to_string(&p).unwrap();
        if let Err(e) = hsched_scenario::parse(&text, &shown(&p)) {
            failures.push(format!("{:?}", miette::Report::new(e)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_real_policies_check_their_parameters_together() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples/join.toml");
    let text = std::fs::read_to_string(p)
        .unwrap()
        .replace("budget = \"5ms\"", "budget = \"40ms\"");
    let e = hsched_scenario::parse(&text, "join.toml").unwrap_err();
    assert!(
        e.to_string()
            .contains("scheduler[1]: scheduler `cap`: policy `limit` refuses these parameters"),
        "{e}"
    );
}

#[test]
fn res_overrun_partition_key_is_a_bool() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/papers/hls-fig4.toml");
    let text = std::fs::read_to_string(p).unwrap();
    assert!(text.contains("overrun = true"));
    let e = hsched_scenario::parse(
        &text.replace("overrun = true", "overrun = \"yes\""),
        "f.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("at.overrun") && e.contains("expected bool"),
        "{e}"
    );
}
