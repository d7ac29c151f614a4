//! The `hsched` command line as a user meets it: exit codes, messages,
//! outputs, and the byte-for-byte golden trace.

use std::path::PathBuf;

mod common;
use common::{hsched, repo, text};

fn tmp(name: &str) -> PathBuf {
    common::tmp("cli-test", name)
}

#[test]
fn sim_prints_a_readable_summary() {
    let out = hsched(&["sim", "scenarios/examples/desktop.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for needle in [
        "scenario desktop",
        "threads",
        "video",
        "schedulers",
        "decisions",
    ] {
        assert!(s.contains(needle), "`{needle}` in:\n{s}");
    }
    assert!(
        out.stderr.is_empty(),
        "quiet by default: {}",
        text(&out.stderr)
    );
}

#[test]
fn every_bundled_scenario_runs() {
    for dir in ["scenarios/examples", "scenarios/papers"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let p = path.to_str().unwrap();
                let out = hsched(&["sim", p, "--horizon", "300ms", "--check"]);
                assert!(out.status.success(), "{p}: {}", text(&out.stderr));
                let check = hsched(&["check", p]);
                assert!(check.status.success(), "{p}: {}", text(&check.stderr));
            }
        }
    }
}

#[test]
fn bad_input_exits_2_with_a_message_naming_the_file_and_line() {
    let bad = tmp("bad.toml");
    std::fs::write(&bad, "horizon = \"2s\"\n[machine]\ncpus = \"many\"\n").unwrap();
    let out = hsched(&["sim", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains("cpus"), "{err}");
    assert!(
        err.contains(":3:") || err.contains("3 │") || err.contains("line 3"),
        "names line 3: {err}"
    );

    let out = hsched(&["sim", "no/such/file.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no/such/file.toml"));

    let out = hsched(&[
        "sim",
        "scenarios/examples/desktop.toml",
        "--horizon",
        "soon",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("soon"));

    let out = hsched(&["repro", "no-such-entry"]);
    assert_eq!(out.status.code(), Some(2));
    let out = hsched(&["policies", "no-such-policy"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn json_metrics_have_stable_keys_and_the_overrides_apply() {
    let out = hsched(&[
        "sim",
        "scenarios/examples/desktop.toml",
        "--json",
        "--horizon",
        "500ms",
        "--seed",
        "9",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["global"]["horizon_ns"], 500_000_000u64);
    assert_eq!(v["global"]["seed"], 9);
    let t = &v["threads"][0];
    for key in [
        "name",
        "cpu_time_ns",
        "share",
        "wakeup_latency",
        "job_response",
        "deadline_misses",
        "max_gap_ns",
        "context_switches",
    ] {
        assert!(
            !t[key].is_null() || key == "job_response",
            "thread key {key}: {t}"
        );
    }
    for key in ["decisions", "idle_ns", "events_per_wall_second"] {
        assert!(!v["global"][key].is_null(), "global key {key}");
    }
    assert!(v["schedulers"][0]["received_ns"].is_u64());
}

#[test]
fn jobs_csv_and_trace_files_are_written() {
    let csv = tmp("jobs.csv");
    let trace = tmp("trace.json");
    let out = hsched(&[
        "sim",
        "scenarios/examples/desktop.toml",
        "--horizon",
        "200ms",
        "--jobs-csv",
        csv.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = std::fs::read_to_string(&csv).unwrap();
    let mut lines = rows.lines();
    assert_eq!(
        lines.next(),
        Some("thread,job,release_ns,start_ns,finish_ns,response_ns,deadline_ns,missed,lateness_ns,admitted")
    );
    let rows: Vec<&str> = lines.collect();
    assert!(rows.len() > 10);
    // The desktop's jobs are periodic: they ask their scheduler nothing, so
    // `admitted` is empty.
    assert!(rows
        .iter()
        .all(|r| r.split(',').count() == 10 && r.ends_with(',')));
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert!(t["traceEvents"].as_array().unwrap().len() > 10);
}

/// The golden test: a scenario and seed always give the same trace, byte
/// for byte, and that trace is the one checked in.
#[test]
fn the_trace_is_byte_identical_to_the_golden_one() {
    let a = tmp("golden-a.json");
    let b = tmp("golden-b.json");
    for path in [&a, &b] {
        let out = hsched(&[
            "sim",
            "scenarios/examples/desktop.toml",
            "--horizon",
            "60ms",
            "--trace",
            path.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let first = std::fs::read_to_string(&a).unwrap();
    assert_eq!(
        first,
        std::fs::read_to_string(&b).unwrap(),
        "two runs, two traces"
    );
    insta::assert_snapshot!("desktop_60ms_trace", first);
}

#[test]
fn policies_lists_every_registered_policy_with_parameters() {
    let out = hsched(&["policies"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    for p in hsched_policies_names() {
        assert!(s.contains(&format!("{p} —")), "{p} listed:\n{s}");
    }
    assert!(s.contains("quantum"), "rr's parameter is shown");
}

fn hsched_policies_names() -> Vec<&'static str> {
    vec!["fifo", "rr", "fp", "join", "limit"]
}

#[test]
fn repro_all_passes_and_lists() {
    let out = hsched(&["repro", "--list"]);
    assert!(out.status.success());
    let list = text(&out.stdout);
    assert!(list.contains("hls-5.4-join-slack"));
    // Every quantitative claim of the five papers has an entry: at least
    // 50 simulated or analysed ones, beside the timing entries.
    let simulated = list.lines().take_while(|l| !l.is_empty()).count();
    assert!(simulated >= 50, "{simulated} entries:\n{list}");
    let out = hsched(&["repro", "--timing", "--list"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("vassal-table1"));
    let out = hsched(&["repro", "--all"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let s = text(&out.stdout);
    assert!(
        s.contains("paper")
            && s.contains("measured")
            && s.contains("tolerance")
            && s.contains("pass")
    );
    assert!(!s.contains("FAIL"));
    // Known disagreements say so, each with its measured diagnosis.
    assert!(s.contains("differs") && s.contains("  differs: "));
}
