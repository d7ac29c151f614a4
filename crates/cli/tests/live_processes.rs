//! The processes `hsched live` (root) schedules: an existing process
//! attached, scheduled and given back running, and bad attachments
//! refused; what a command starts managed with it; 500 commands started
//! managed and together.

mod common;

use common::live::{one_at_a_time, realtime, shares_of_total};
use common::{hsched, repo, text, tmp};
use hsched_live::sys::{self, SCHED_OTHER};
use std::process::Command;
use std::time::Duration;

#[test]
fn an_attached_process_is_scheduled_then_given_back_running() {
    let _turn = one_at_a_time();
    hsched_testkit::require!("root", realtime());
    let mut existing = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let pid = existing.id() as i32;
    let file = repo().join("scenarios/live/two-hogs-rr.toml");
    let attach = format!("hog.1={pid}");
    let out = hsched(&[
        "live",
        "--backend",
        "agent",
        file.to_str().unwrap(),
        "--horizon",
        "1s",
        "--attach",
        &attach,
        "--json",
    ]);
    let alive = sys::thread_state(pid, pid);
    let policy = sys::get_attr(pid).map(|a| a.policy);
    let _ = existing.kill();
    let _ = existing.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let share = shares_of_total(&live)[1];
    // It shared the CPU with the started hog, as rr gives it: half of what
    // the two received together.
    assert!((share - 0.5).abs() <= 0.05, "attached hog got {share}");
    // Not ended at the horizon, and back at its own policy, running.
    assert!(
        alive.as_ref().is_ok_and(|&s| s != 'T' && s != 'Z'),
        "{alive:?}"
    );
    assert_eq!(policy.unwrap(), SCHED_OTHER);
}

#[test]
fn bad_attachments_are_refused_with_exit_2() {
    let file = repo().join("scenarios/live/two-hogs-rr.toml");
    let file = file.to_str().unwrap();
    for (arg, want) in [
        ("nobody=1", "no thread `nobody`"),
        ("hog.0=2147483000", "no process 2147483000"),
        ("hog.0", "expected NAME=PID"),
        ("hog.0=x", "is not a process id"),
    ] {
        let out = hsched(&["live", "--backend", "agent", file, "--attach", arg]);
        assert_eq!(out.status.code(), Some(2), "{arg}");
        assert!(
            text(&out.stderr).contains(want),
            "{arg}: {}",
            text(&out.stderr)
        );
    }
}

/// What a command starts is scheduled with it: a shell that starts two
/// busy loops is three threads of rr against one busy loop, so its family
/// gets two thirds of the CPU (it would get half if only the shell were
/// managed); and the horizon ends the whole family.
#[test]
fn the_processes_a_command_starts_are_managed_with_it() {
    let _turn = one_at_a_time();
    hsched_testkit::require!("root", realtime());
    let file = tmp("live", "family.toml");
    // Marks this test's loops apart from any other on the machine.
    let mark = format!("hsched-family-{}", std::process::id());
    std::fs::write(
        &file,
        format!(
            r#"
name = "family"
horizon = "2s"
[machine]
cpus = 1
[[scheduler]]
name = "rr"
policy = "rr"
quantum = "10ms"
[[thread]]
name = "pair"
program = [ {{ run = "10s" }} ]
command = ["sh", "-c", "sh -c 'while :; do :; done # {mark}' & sh -c 'while :; do :; done # {mark}'; wait"]
[[thread]]
name = "one"
program = [ {{ run = "10s" }} ]
command = ["sh", "-c", "while :; do :; done # {mark}"]
"#,
        ),
    )
    .unwrap();
    let out = hsched(&[
        "live",
        "--backend",
        "agent",
        file.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Parts of what the two families received together.
    let parts = shares_of_total(&result);
    let (pair, one) = (parts[0], parts[1]);
    eprintln!("pair {pair:.3}, one {one:.3}");
    assert!((pair - 2.0 / 3.0).abs() < 0.05, "pair {pair}, one {one}");
    assert!((one - 1.0 / 3.0).abs() < 0.05, "pair {pair}, one {one}");
    let left = Command::new("pgrep").args(["-f", &mark]).output().unwrap();
    assert!(
        text(&left.stdout).trim().is_empty(),
        "left running after the horizon: {}",
        text(&left.stdout)
    );
}

/// `hsched live --json` of `count` commands `sleep 0.2`, marked with
/// `marker` (their `$0`), arriving together on one CPU under rr for
/// `horizon_s`: the result, and how far the run overran its horizon (the
/// start-up).
fn many_sleepers(count: usize, horizon_s: u64, marker: &str) -> (serde_json::Value, Duration) {
    let scenario = tmp("live", &format!("many-{count}.toml"));
    std::fs::write(
        &scenario,
        format!(
            r#"
name = "many"
horizon = "{horizon_s}s"
[machine]
cpus = 1
[[scheduler]]
name = "rr"
policy = "rr"
quantum = "20ms"
[[thread]]
name = "s"
count = {count}
parent = "rr"
command = ["sh", "-c", "sleep 0.2", "{marker}"]
program = [ {{ run = "1ms" }} ]
"#
        ),
    )
    .unwrap();
    let out = hsched(&[
        "live",
        "--backend",
        "agent",
        scenario.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{count} commands: {}",
        text(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let wall = Duration::from_nanos(result["global"]["wall_ns"].as_u64().unwrap());
    (result, wall.saturating_sub(Duration::from_secs(horizon_s)))
}

/// The processes whose command line holds `marker`.
fn marked(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.windows(marker.len()).any(|w| w == marker.as_bytes()))
        })
        .collect()
}

/// 500 commands arriving together all start managed (the kernel reports
/// each one's wakeups: before, its filter held some 60 threads and 70
/// commands aborted the run, one left running), are started in about the
/// time one is (before, 50 took seconds, each running unmanaged until the
/// rest were started), and none is left running after the run.
#[test]
fn five_hundred_commands_start_managed_and_together() {
    let _turn = one_at_a_time();
    hsched_testkit::require!("root", realtime());
    let marker = format!("hsched-scale-{}", std::process::id());
    let (_, baseline) = many_sleepers(1, 1, &marker);
    // Long enough for each to run: its shell and its sleep take about
    // 2 ms of the one CPU, and the wakeup counted is its first run after.
    let (result, startup) = many_sleepers(500, 4, &marker);
    let threads = result["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 500);
    for t in threads {
        // At least the release from the gate; then the end of its sleep.
        assert!(
            t["wakeup_latency"]["count"].as_u64().unwrap() >= 1,
            "no wakeup of {} was reported: {t}",
            t["name"]
        );
    }
    let log = result["log"].as_array().unwrap();
    assert!(
        log.iter().all(|e| e["kind"] == "platform"),
        "every thread was taken over: {log:?}"
    );
    eprintln!("start-up: 1 command {baseline:?}, 500 commands {startup:?}");
    // 500 forks and one listing of them with the kernel: well under a
    // second more than one command (before: 50 commands took 4 to 7 s).
    assert!(
        startup < baseline + Duration::from_millis(1500),
        "500 commands took {startup:?} to start, one {baseline:?}"
    );
    let left = marked(&marker);
    assert!(left.is_empty(), "left running: {left:?}");
}
