//! Small or merely large inputs never exhaust time or memory: each case
//! runs the `hsched` binary under an address-space limit and a wall-time
//! bound, and expects it to finish, or to exit 2 naming the limit it hit.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{bounded, repo, text};

fn tmp(name: &str) -> PathBuf {
    common::tmp("bounded-test", name)
}

/// 1 GiB of address space: several times what any case below needs once
/// bounded, far below what the unbounded runs reached (2.8 GB to 7 GB).
const MEMORY: u64 = 1 << 30;

/// Exit 2 with a message containing each of `needles`.
fn refused(out: &Output, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

/// `hsched sim --json` of `scenario` (written to the scratch file
/// `name`) to `horizon`, under `memory` of address space and `time`: its
/// metrics, once it has succeeded.
fn sim_json(
    name: &str,
    scenario: &str,
    horizon: &str,
    memory: u64,
    time: Duration,
) -> serde_json::Value {
    let file = tmp(name);
    std::fs::write(&file, scenario).unwrap();
    let out = bounded(
        &[
            "sim",
            file.to_str().unwrap(),
            "--horizon",
            horizon,
            "--json",
        ],
        memory,
        time,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One thread released every nanosecond, each job 1 ns of work.
const EVERY_NANOSECOND: &str = r#"name = "ns"
horizon = "1s"
[machine]
cpus = 1
[[scheduler]]
name = "root"
policy = "fifo"
[[thread]]
name = "tick"
parent = "root"
program = [ { periodic = { period = "1ns", run = "1ns" } } ]
"#;

#[test]
fn a_run_of_ten_million_jobs_holds_a_bounded_number_of_records() {
    // 10 million jobs: held one by one they needed about 850 MB (the
    // unbounded simulator ran out of this limit); with a million records
    // held it stays near 150 MB. Half the usual limit makes the
    // difference certain.
    let json = sim_json(
        "ns.toml",
        EVERY_NANOSECOND,
        "10ms",
        MEMORY / 2,
        Duration::from_secs(180),
    );
    assert_eq!(json["global"]["jobs"], 10_000_000);
    assert_eq!(json["threads"][0]["jobs"], 10_000_000);
    // The last one is unfinished at the horizon, as without the bound.
    assert_eq!(json["threads"][0]["job_response"]["count"], 9_999_999);
    assert_eq!(json["threads"][0]["job_response"]["max_ns"], 1);
    let limits = json["limits"][0].as_str().unwrap();
    assert!(limits.contains("--keep-jobs"), "{limits}");
}

#[test]
fn ten_million_releases_pending_at_the_end_hold_a_bounded_number_of_records() {
    // Starved by a hog ahead of it under `fifo`, the thread never finishes
    // its first job: every release after it is recorded at the end of the
    // run, unfinished (held one by one they needed about 870 MB).
    let starved = EVERY_NANOSECOND.replace(
        "[[thread]]\nname = \"tick\"",
        "[[thread]]\nname = \"hog\"\nparent = \"root\"\nprogram = [ { run = \"10s\" } ]\n\
         [[thread]]\nname = \"tick\"",
    );
    assert!(starved.contains("hog"));
    let json = sim_json(
        "starved.toml",
        &starved,
        "10ms",
        MEMORY / 2,
        Duration::from_secs(180),
    );
    assert_eq!(json["global"]["jobs"], 10_000_000);
    // All but the last, released at 10ms - 1ns with its deadline at the
    // horizon, are missed.
    assert_eq!(json["global"]["deadline_misses"], 9_999_999);
    assert!(json["limits"][0].as_str().unwrap().contains("--keep-jobs"));
}

#[test]
fn jobs_past_the_bound_are_streamed_to_the_csv_and_counted_in_the_metrics() {
    let scenario = "scenarios/examples/rialto.toml";
    let whole = tmp("whole.csv");
    let streamed = tmp("streamed.csv");
    let run = |csv: &PathBuf, keep: &str| {
        let out = bounded(
            &[
                "sim",
                scenario,
                "--keep-jobs",
                keep,
                "--jobs-csv",
                csv.to_str().unwrap(),
                "--json",
            ],
            MEMORY,
            Duration::from_secs(120),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let all = run(&whole, "1000000");
    let kept = run(&streamed, "64");
    assert!(
        all.get("limits").is_none(),
        "a run that fits names no limit"
    );
    assert!(kept["limits"][0]
        .as_str()
        .unwrap()
        .contains("64 job records"));
    // Every job once: the same rows, the streamed ones first.
    let rows = |p: &PathBuf| {
        let mut r: Vec<String> = std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        r.sort();
        r
    };
    let (a, b) = (rows(&whole), rows(&streamed));
    assert!(a.len() > 500, "{} rows", a.len());
    assert_eq!(a, b);
    // Counts exact; response percentiles within the histogram's 0.8 %.
    assert_eq!(all["global"]["jobs"], kept["global"]["jobs"]);
    let (ta, tk) = (
        all["threads"].as_array().unwrap(),
        kept["threads"].as_array().unwrap(),
    );
    for (x, y) in ta.iter().zip(tk) {
        assert_eq!(x["jobs"], y["jobs"]);
        assert_eq!(x["deadline_misses"], y["deadline_misses"]);
        assert_eq!(x["job_response"]["count"], y["job_response"]["count"]);
        assert_eq!(x["job_response"]["max_ns"], y["job_response"]["max_ns"]);
        if let (Some(exact), Some(near)) = (
            x["job_response"]["p99_ns"].as_u64(),
            y["job_response"]["p99_ns"].as_u64(),
        ) {
            assert!(
                near <= exact && exact - near <= exact / 128,
                "{exact} vs {near}"
            );
        }
    }
}

#[test]
fn wakeup_latencies_past_the_bound_are_counted_in_a_histogram() {
    // 200,000 wakeups of one thread: twice what it keeps one by one.
    let json = sim_json(
        "wakeups.toml",
        &EVERY_NANOSECOND.replace(
            r#"{ period = "1ns", run = "1ns" }"#,
            r#"{ period = "1us", run = "100ns" }"#,
        ),
        "200ms",
        MEMORY,
        Duration::from_secs(120),
    );
    // One wakeup per job: the thread sleeps between its jobs.
    assert_eq!(json["threads"][0]["wakeup_latency"]["count"], 200_000);
    let limits = json["limits"].to_string();
    assert!(limits.contains("MAX_KEPT_LATENCIES"), "{limits}");
}

#[test]
fn a_log_of_a_message_every_microsecond_keeps_its_first_entries() {
    let json = sim_json(
        "chatty.toml",
        &EVERY_NANOSECOND.replace(
            r#"{ periodic = { period = "1ns", run = "1ns" } }"#,
            r#"{ loop = { body = [ { msg = { name = "ping" } }, { run = "1us" } ] } }"#,
        ),
        "200ms",
        MEMORY,
        Duration::from_secs(120),
    );
    assert_eq!(json["log"].as_array().unwrap().len(), 100_000);
    let limits = json["limits"].to_string();
    assert!(limits.contains("MAX_LOG_ENTRIES"), "{limits}");
}

#[test]
fn a_timeline_past_the_trace_limit_is_refused_after_the_other_outputs() {
    let trace = tmp("t.json");
    let csv = tmp("t.csv");
    let _ = std::fs::remove_file(&trace);
    let out = bounded(
        &[
            "sim",
            "scenarios/examples/rialto.toml",
            "--trace",
            trace.to_str().unwrap(),
            "--jobs-csv",
            csv.to_str().unwrap(),
            "--trace-limit",
            "1000",
        ],
        MEMORY,
        Duration::from_secs(120),
    );
    refused(&out, &["--trace-limit", "1000 segments and marks"]);
    assert!(
        text(&out.stdout).contains("scenario rialto"),
        "the summary is printed"
    );
    assert!(!trace.exists(), "no partial trace");
    assert!(std::fs::read_to_string(&csv).unwrap().lines().count() > 500);
}

/// A release every nanosecond for a second is two billion events (hours
/// of simulation): the run stops at its bound on events, writes what it
/// covered, says so, and exits 2; the same bound cuts it at the same
/// place every time.
#[test]
fn a_run_past_its_bound_on_events_stops_there_and_says_so() {
    let file = tmp("ns-events.toml");
    std::fs::write(&file, EVERY_NANOSECOND).unwrap();
    let run = || {
        bounded(
            &[
                "sim",
                file.to_str().unwrap(),
                "--max-events",
                "300000",
                "--json",
            ],
            MEMORY,
            Duration::from_secs(120),
        )
    };
    let out = run();
    refused(
        &out,
        &["--max-events", "300000 events", "of its 1s horizon"],
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let covered = json["global"]["horizon_ns"].as_u64().unwrap();
    assert!(
        covered > 0 && covered < 1_000_000_000,
        "covered {covered} ns"
    );
    assert_eq!(json["global"]["events"], 300_000);
    let limits = json["limits"].to_string();
    assert!(limits.contains("--max-events"), "{limits}");
    // The time covered is accounted for: the thread's time is within it.
    assert!(json["threads"][0]["cpu_time_ns"].as_u64().unwrap() <= covered);
    // The same cut every time: all but the wall-clock figures.
    let timeless = |stdout: &[u8]| {
        let mut v: serde_json::Value = serde_json::from_slice(stdout).unwrap();
        for k in ["wall_ns", "events_per_wall_second"] {
            v["global"].as_object_mut().unwrap().remove(k);
        }
        v
    };
    assert_eq!(timeless(&run().stdout), timeless(&out.stdout));
}

#[test]
fn horizons_of_zero_or_past_a_day_are_refused() {
    let scenario = "scenarios/examples/desktop.toml";
    for horizon in ["18446744073709551615ns", "0", "0ms", "86401s"] {
        let out = bounded(
            &["sim", scenario, "--horizon", horizon],
            MEMORY,
            Duration::from_secs(60),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{horizon}: {err}");
        assert!(err.contains("--horizon"), "{err}");
        assert!(
            err.contains("MAX_HORIZON") || err.contains("greater than zero"),
            "{err}"
        );
    }
    let text_of = std::fs::read_to_string(repo().join(scenario)).unwrap();
    for (horizon, why) in [
        ("86401s", Some("MAX_HORIZON")),
        ("0s", Some("greater than zero")),
        ("86400s", None),
    ] {
        let file = tmp("h.toml");
        let changed: String = text_of
            .lines()
            .map(|l| {
                if l.starts_with("horizon") {
                    format!("horizon = \"{horizon}\"")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&file, changed).unwrap();
        let out = bounded(
            &["check", file.to_str().unwrap()],
            MEMORY,
            Duration::from_secs(60),
        );
        match why {
            Some(why) => refused(&out, &["h.toml:", "horizon", why]),
            // A day is the longest horizon accepted.
            None => assert!(out.status.success(), "{}", text(&out.stderr)),
        }
    }
}

#[test]
fn endless_or_huge_inputs_are_refused_at_the_size_limit() {
    let cases: [&[&str]; 5] = [
        &["sim", "/dev/zero"],
        &["check", "/dev/urandom"],
        &["import", "rt-app", "/dev/zero"],
        &["import", "simso", "/dev/zero"],
        &["sweep", "/dev/zero", "--out", "/dev/null"],
    ];
    for args in cases {
        let out = bounded(args, MEMORY, Duration::from_secs(60));
        refused(&out, &["/dev/", "64 MiB (MAX_INPUT_BYTES)"]);
    }
}

#[test]
fn rtapp_durations_out_of_range_are_refused_at_import_by_key() {
    let cases = [
        (
            r#"{ "global": { "duration": 1000000000000000000 }, "tasks": { "t": { "run": 1000 } } }"#,
            "d.json:1:27: global.duration",
            "MAX_HORIZON",
        ),
        (
            r#"{ "global": { "duration": 2 }, "tasks": { "t": { "run": 1000000000000000000 } } }"#,
            "d.json:1:50: tasks.t.run",
            "MAX_DURATION_US",
        ),
    ];
    let file = tmp("d.json");
    for (json, at, limit) in cases {
        std::fs::write(&file, json).unwrap();
        for command in [&["import", "rt-app"][..], &["sim"][..]] {
            let mut args = command.to_vec();
            args.push(file.to_str().unwrap());
            let out = bounded(&args, MEMORY, Duration::from_secs(60));
            refused(&out, &[at, limit]);
        }
    }
}

#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    for args in [
        &["policies"][..],
        &["sim", "scenarios/examples/desktop.toml"][..],
        &["check", "scenarios/examples/desktop.toml", "--json"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hsched"))
            .args(args)
            .current_dir(repo())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then go away, as `| head -c 1` does.
        let mut byte = [0u8];
        child.stdout.take().unwrap().read_exact(&mut byte).unwrap();
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        let quiet = out.status.success() || out.status.signal() == Some(libc::SIGPIPE);
        assert!(quiet, "{args:?}: {:?} {err}", out.status);
    }
}

#[test]
fn a_plugin_that_is_not_a_regular_file_is_refused() {
    let fifo = tmp("plugin.so");
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = bounded(
        &["policies", "--plugin", fifo.to_str().unwrap()],
        MEMORY,
        Duration::from_secs(60),
    );
    refused(&out, &["plugin.so", "not a regular file"]);
    let scenario = tmp("with-plugin.toml");
    let desktop = std::fs::read_to_string(repo().join("scenarios/examples/desktop.toml")).unwrap();
    std::fs::write(&scenario, format!("plugins = [\"plugin.so\"]\n{desktop}")).unwrap();
    let out = bounded(
        &["check", scenario.to_str().unwrap()],
        MEMORY,
        Duration::from_secs(60),
    );
    refused(&out, &["plugins[0]", "plugin.so", "not a regular file"]);
}
