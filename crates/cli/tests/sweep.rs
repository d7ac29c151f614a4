//! `hsched sweep` as a user runs it: exit codes and messages, the file a
//! run straight through writes against one stopped (`--limit`, or killed)
//! and restarted, shards and `--merge`, `--scenario N`.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{hsched, text};

fn tmp(name: &str) -> PathBuf {
    let p = common::tmp("sweep-test", name);
    let _ = std::fs::remove_file(&p);
    p
}

const EXAMPLE: &str = "scenarios/sweeps/acceptance-fp.toml";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_example_runs_and_prints_its_acceptance_curve() {
    let out = tmp("example.csv");
    let run = hsched(&["sweep", EXAMPLE, "--out", s(&out)]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let table = text(&run.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].contains("mean schedulable"), "{table}");
    // One line per utilisation, 0.5 to 1.0 by 0.05, 20 sets each.
    assert_eq!(lines.len(), 12, "{table}");
    assert!(
        lines[1].trim_start().starts_with("0.5  ") && lines[1].contains(" 20 "),
        "{table}"
    );
    let err = text(&run.stderr);
    assert!(err.contains("220 of 220 points"), "{err}");
    // No progress bar when stderr is not a terminal: one status line.
    assert_eq!(err.lines().count(), 1, "{err}");
    let csv = std::fs::read_to_string(&out).unwrap();
    assert_eq!(csv.lines().count(), 221);
    assert!(csv.starts_with(
        "index,seed,replicate,u,schedulable,miss_ratio,threads_missing,global.jobs\n"
    ));
    let quiet = hsched(&["sweep", EXAMPLE, "--out", s(&out), "--quiet"]);
    assert!(quiet.status.success());
    assert!(quiet.stdout.is_empty() && quiet.stderr.is_empty());
}

#[test]
fn a_bad_spec_exits_2_naming_the_file_line_and_key() {
    let spec = tmp("bad.toml");
    std::fs::write(
        &spec,
        "seed = 1\n[grid]\nu = { from = 0.5, to = 1.0, step = -0.1 }\n[taskset]\ntasks = 4\nutilisation = \"${u}\"\nperiod = [\"10ms\"]\npolicy = \"fp\"\n",
    )
    .unwrap();
    let out = hsched(&["sweep", s(&spec), "--out", s(&tmp("bad.csv"))]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.toml:3:") && err.contains("grid.u.step"),
        "{err}"
    );
    assert!(
        !tmp("bad.csv").exists(),
        "nothing is written for a bad spec"
    );

    let missing = hsched(&["sweep", "no/such/spec.toml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no/such/spec.toml"));

    let shard = hsched(&["sweep", EXAMPLE, "--shard", "4/3"]);
    assert_eq!(shard.status.code(), Some(2));
    assert!(
        text(&shard.stderr).contains("k/N"),
        "{}",
        text(&shard.stderr)
    );
}

#[test]
fn a_point_the_policy_refuses_exits_2_with_its_parameters() {
    let spec = tmp("unknown-policy.toml");
    std::fs::write(
        &spec,
        "[grid]\nu = [0.5]\n[taskset]\ntasks = 3\nutilisation = \"${u}\"\nperiod = [\"10ms\"]\npolicy = \"edff\"\n",
    )
    .unwrap();
    let out = hsched(&["sweep", s(&spec), "--out", s(&tmp("unknown-policy.csv"))]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("point 0 (u=0.5, seed ") && err.contains("edff"),
        "{err}"
    );
}

#[test]
fn stopped_or_killed_and_restarted_it_writes_the_file_of_one_run() {
    let straight = tmp("straight.csv");
    let run = hsched(&["sweep", EXAMPLE, "-o", s(&straight), "-j", "2", "-q"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let expected = std::fs::read(&straight).unwrap();

    let pieces = tmp("pieces.csv");
    let first = hsched(&["sweep", EXAMPLE, "-o", s(&pieces), "--limit", "50"]);
    assert!(first.status.success());
    let err = text(&first.stderr);
    assert!(
        err.contains("50 of 220 points") && err.contains("170 points to go"),
        "{err}"
    );
    let rest = hsched(&["sweep", EXAMPLE, "-o", s(&pieces), "-j", "1"]);
    assert!(rest.status.success());
    assert!(text(&rest.stderr).contains("(170 run now, 50 there before)"));
    assert_eq!(std::fs::read(&pieces).unwrap(), expected);

    // Killed for real (SIGKILL) part way, one worker so it is slow enough.
    let killed = tmp("killed.csv");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args(["sweep", EXAMPLE, "-o", s(&killed), "-j", "1", "-q"])
        .current_dir(common::repo())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::fs::read(&killed).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count()) < 20
        && started.elapsed() < std::time::Duration::from_secs(60)
    {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = std::fs::read(&killed).unwrap();
    assert!(left.len() < expected.len(), "killed before the end");
    assert!(expected.starts_with(&left[..left.iter().rposition(|&c| c == b'\n').unwrap() + 1]));
    let again = hsched(&["sweep", EXAMPLE, "-o", s(&killed)]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(std::fs::read(&killed).unwrap(), expected);
}

#[test]
fn shards_merge_into_the_file_of_one_run() {
    let whole = tmp("whole.csv");
    assert!(hsched(&["sweep", EXAMPLE, "-o", s(&whole), "-q"])
        .status
        .success());
    let mut shards = Vec::new();
    for k in 1..=3 {
        let f = tmp(&format!("shard-{k}.csv"));
        let run = hsched(&["sweep", EXAMPLE, "--shard", &format!("{k}/3"), "-o", s(&f)]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        assert!(
            text(&run.stderr).contains(" of shard "),
            "{}",
            text(&run.stderr)
        );
        shards.push(f);
    }
    let merged = tmp("merged.csv");
    let mut args = vec!["sweep", EXAMPLE, "--out", s(&merged), "--merge"];
    args.extend(shards.iter().map(|p| s(p)));
    let m = hsched(&args);
    assert!(m.status.success(), "{}", text(&m.stderr));
    assert_eq!(
        std::fs::read(&merged).unwrap(),
        std::fs::read(&whole).unwrap()
    );
    // Two shards of three: the merge says what is missing.
    let partial = tmp("partial.csv");
    let m = hsched(&[
        "sweep",
        EXAMPLE,
        "--out",
        s(&partial),
        "--merge",
        s(&shards[0]),
        s(&shards[2]),
    ]);
    assert!(m.status.success());
    assert!(
        text(&m.stderr).contains("73 points of the spec are in none"),
        "{}",
        text(&m.stderr)
    );
}

#[test]
fn a_point_s_scenario_can_be_printed_and_run_by_itself() {
    let out = hsched(&["sweep", EXAMPLE, "--scenario", "219"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let scenario = text(&out.stdout);
    assert!(
        scenario.starts_with("# point 219 (u=1, replicate 19, seed "),
        "{scenario}"
    );
    let file = tmp("point-219.toml");
    std::fs::write(&file, &scenario).unwrap();
    let sim = hsched(&["sim", s(&file), "--json"]);
    assert!(sim.status.success(), "{}", text(&sim.stderr));
    // The sweep's row for the point has the run's numbers.
    let csv = tmp("point-219.csv");
    assert!(hsched(&["sweep", EXAMPLE, "-o", s(&csv), "-q"])
        .status
        .success());
    let row = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_string();
    let json: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
    let jobs = json["global"]["jobs"].as_u64().unwrap();
    assert!(row.ends_with(&format!(",{jobs}")), "{row} vs {jobs} jobs");
    let beyond = hsched(&["sweep", EXAMPLE, "--scenario", "220"]);
    assert_eq!(beyond.status.code(), Some(2));
}

#[test]
fn every_shipped_sweep_spec_runs() {
    for entry in std::fs::read_dir(common::repo().join("scenarios/sweeps")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = tmp(&format!(
                "{}.csv",
                path.file_stem().unwrap().to_str().unwrap()
            ));
            let run = hsched(&["sweep", s(&path), "-o", s(&out), "--limit", "12"]);
            assert!(
                run.status.success(),
                "{}: {}",
                path.display(),
                text(&run.stderr)
            );
            let rows = std::fs::read_to_string(&out).unwrap().lines().count();
            assert_eq!(rows, 13, "{}", path.display());
        }
    }
}
