//! `hsched live` as a user runs it (root), scenarios against their
//! simulation: the bundled live scenario's shares; the desktop example on
//! hsched's workers against its simulation (`--compare-sim`), with its
//! jobs and trace; a scenario live cannot run refused with exit 2;
//! rtwake's wakeups of the worker never come early; speculative wakeups;
//! the live experiments of `hsched repro`.
//!
//! These are the user-space agent's tests (as are live_control.rs,
//! live_processes.rs and live_safety.rs): each run names `--backend
//! agent` (on a sched_ext kernel the default would be the other backend,
//! whose tests boot a guest: scx_guest.rs); the last test checks the
//! choice of backend itself.

mod common;

use common::live::{one_at_a_time, realtime, shares_of_total};
use common::{hsched, repo, text, tmp};
use hsched_live::sys;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Busy loops hsched does not manage (stress-ng), in a session of their
/// own as work started from another terminal is; killed when dropped.
struct UnmanagedHogs(std::process::Child);

impl UnmanagedHogs {
    fn start(n: usize) -> Result<UnmanagedHogs, String> {
        use std::os::unix::process::CommandExt;
        let stress = hsched_testkit::program("stress-ng")?;
        let mut cmd = Command::new(stress);
        cmd.args(["--cpu", &n.to_string(), "--timeout", "60s", "--quiet"])
            .stdout(Stdio::null());
        // SAFETY: setsid is async-signal-safe and touches nothing shared.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("starting stress-ng: {e}"))?;
        // Until its workers run.
        std::thread::sleep(Duration::from_millis(300));
        Ok(UnmanagedHogs(child))
    }
}

impl Drop for UnmanagedHogs {
    fn drop(&mut self) {
        // The session's group: stress-ng and its workers.
        let _ = sys::signal(-(self.0.id() as i32), libc::SIGKILL);
        let _ = self.0.wait();
    }
}

/// Two rr hogs beside two busy loops hsched does not manage, started from
/// another session. Shares are what the kernel's switch records say each
/// thread received, taken as a part of what the managed threads received
/// together in the same run (the baseline: the CPU left to them by the
/// unmanaged loops), and compared with the simulation's.
#[test]
fn the_live_example_shares_the_cpu_as_the_simulation_does() {
    let _turn = one_at_a_time();
    hsched_testkit::require!("root", realtime());
    let _hogs = hsched_testkit::require!("stress-ng", UnmanagedHogs::start(2));
    let file = repo().join("scenarios/live/two-hogs-rr.toml");
    let file = file.to_str().unwrap();
    let out = hsched(&[
        "live",
        file,
        "--backend",
        "agent",
        "--horizon",
        "2s",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = hsched(&["sim", file, "--horizon", "2s", "--json"]);
    let sim: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let managed: f64 = (0..2)
        .map(|i| live["threads"][i]["share"].as_f64().unwrap())
        .sum();
    eprintln!("the managed threads received {managed:.3} of their CPU");
    // A thread at nice -20 weighs 88761 against 1024 for a nice-0 loop:
    // even 20 loops on its CPU would leave it 81%. Below that, Linux is
    // not running what the hierarchy chose (as with autogroup on, where
    // one loop of another session takes half).
    assert!(managed >= 0.8, "the managed threads got {managed:.3}");
    let (l, s) = (shares_of_total(&live), shares_of_total(&sim));
    for i in 0..2 {
        eprintln!(
            "hog.{i}: live {:.3}, sim {:.3} of the managed total",
            l[i], s[i]
        );
        // The issue's target: within 3 percentage points of the simulation.
        assert!(
            (l[i] - s[i]).abs() <= 0.03,
            "hog.{i}: live {} against sim {}",
            l[i],
            s[i]
        );
    }
    assert_eq!(live["global"]["platform"], "live");
    let log = live["log"].as_array().unwrap();
    assert!(
        log.iter().all(|e| e["kind"] == "platform"),
        "every thread change took: {log:?}"
    );
}

#[test]
fn a_program_the_worker_cannot_run_is_refused_with_exit_2() {
    let file = tmp("live", "locks.toml");
    std::fs::write(
        &file,
        "name = \"locks\"\nhorizon = \"1s\"\n[[scheduler]]\nname = \"rr\"\npolicy = \"rr\"\n[[thread]]\nname = \"a\"\nprogram = [ { lock = \"m\" }, { run = \"1ms\" }, { unlock = \"m\" } ]\n",
    )
    .unwrap();
    let out = hsched(&["live", "--backend", "agent", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("`lock` is not run by the live worker") && err.contains("locks.toml"),
        "{err}"
    );
}

#[test]
fn the_desktop_example_runs_on_workers_as_it_simulates() {
    let _turn = one_at_a_time();
    hsched_testkit::require!("root", realtime());
    // Beside two busy loops of another session.
    let _hogs = hsched_testkit::require!("stress-ng", UnmanagedHogs::start(2));
    // Periodic video and audio, an interactive editor and three compiles,
    // every one a worker executing its program.
    let (trace, jobs) = (tmp("live", "trace.json"), tmp("live", "jobs.csv"));
    let file = repo().join("scenarios/examples/desktop.toml");
    // 4 s, twice the file's horizon: starting six workers costs the
    // batch threads a fixed few tens of ms that the simulation does not
    // model (measured beside two loops: compile.0 +1.0 points and the
    // others -1.8 over 2 s, +0.5 and -1.4 over 4 s).
    let out = hsched(&[
        "live",
        "--backend",
        "agent",
        file.to_str().unwrap(),
        "--horizon",
        "4s",
        "--compare-sim",
        "--trace",
        trace.to_str().unwrap(),
        "--jobs-csv",
        jobs.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let table = stdout
        .split("sim against live")
        .nth(1)
        .unwrap_or_else(|| panic!("no comparison in\n{stdout}"));
    // Name, sim share, live share (percent of the CPU), ...
    let rows: Vec<(String, f64, f64)> = table
        .lines()
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            let percent = |c: &str| c.trim_end_matches('%').parse::<f64>().unwrap();
            (cells[0].to_string(), percent(cells[1]), percent(cells[2]))
        })
        .collect();
    assert_eq!(rows.len(), 6, "{table}");
    // Each thread's part of what the managed threads received together in
    // the same run (the baseline: what other work on the machine left
    // them), against the simulation's.
    let sim_total: f64 = rows.iter().map(|r| r.1).sum();
    let live_total: f64 = rows.iter().map(|r| r.2).sum();
    eprintln!(
        "the managed threads received {live_total:.1}% of the CPU (simulated: {sim_total:.1}%)"
    );
    for (name, sim, live) in &rows {
        let (s, l) = (100.0 * sim / sim_total, 100.0 * live / live_total);
        eprintln!("{name}: sim {s:.1}%, live {l:.1}% of the total");
        // The issue's target: within 3 percentage points of the simulation.
        assert!(
            (l - s).abs() <= 3.0,
            "{name}: live {l:.1}% against sim {s:.1}%\n{table}"
        );
    }
    // Jobs came from the workers, with the simulation's release grid:
    // video's releases, 33 ms apart.
    let csv = std::fs::read_to_string(&jobs).unwrap();
    let video: Vec<Vec<&str>> = csv
        .lines()
        .filter(|l| l.starts_with("video,"))
        .map(|l| l.split(',').collect())
        .collect();
    assert!(
        (121..=122).contains(&video.len()),
        "{} video jobs",
        video.len()
    );
    let release = |row: &[&str]| row[2].parse::<u64>().unwrap();
    for w in video.windows(2) {
        let gap = release(&w[1]) - release(&w[0]);
        assert_eq!(gap, 33_000_000);
    }
    // The trace shows the CPU running the managed threads.
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let text = trace.to_string();
    for name in ["video", "audio", "compile.0", "editor"] {
        assert!(text.contains(name), "{name} not in the trace");
    }
}

/// Vassal's sample scheduler on real CPUs: the wakeups `rtwake` promises
/// the worker become jobs (release = the time promised, start = when the
/// worker next ran), and with hard parking none comes early.
#[test]
fn rtwake_wakes_the_worker_never_early() {
    let _turn = one_at_a_time();
    hsched_testkit::require!("root", realtime());
    let file = repo().join("scenarios/live/vassal-table2.toml");
    let csv = tmp("live", "rtwake-jobs.csv");
    let out = hsched(&[
        "live",
        "--backend",
        "agent",
        file.to_str().unwrap(),
        "--park",
        "hard",
        "--horizon",
        "1s",
        "--jobs-csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let jobs = std::fs::read_to_string(&csv).unwrap();
    let mut lines = jobs.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (release, start) = (col("release_ns"), col("start_ns"));
    let mut count = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let (r, s): (u64, u64) = (f[release].parse().unwrap(), f[start].parse().unwrap());
        assert!(s >= r, "woken {}ns early: {line}", r - s);
        count += 1;
    }
    eprintln!("{count} wakeups in 1s, none early");
    // Wakeups every 1ms from 50ms on (950 asked for); rtwake refuses those
    // the worker asks for too late (measured: 3-26% here), and this is not
    // a test of speed.
    assert!(count >= 400, "only {count} wakeups");
}

/// `--speculate`: a warped periodic worker (BVT) the hierarchy runs at
/// every wakeup is left ready to run at the next; the log counts the
/// speculative wakeups, and the hierarchy agreed with nearly all of them.
#[test]
fn speculative_wakeups_follow_the_hierarchy() {
    let _turn = one_at_a_time();
    hsched_testkit::require!("root", realtime());
    let file = tmp("live", "speculate.toml");
    std::fs::write(
        &file,
        r#"
name = "speculate"
horizon = "1s"
[machine]
cpus = 1
[[scheduler]]
name = "bvt"
policy = "bvt"
mcu = "1ms"
allowance = "20ms"
[[thread]]
name = "tick"
at = { warp = 100000, warp_on = true }
program = [ { periodic = { period = "1ms", run = "50us" } } ]
[[thread]]
name = "hog"
program = [ { loop = { body = [ { run = "1s" } ] } } ]
"#,
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let out = hsched(&[
        "live",
        "--backend",
        "agent",
        file,
        "--park",
        "hard",
        "--speculate",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--speculate"));
    let out = hsched(&["live", "--backend", "agent", file, "--speculate", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let line = result["log"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["kind"] == "platform"
                && e["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("speculative wakeups"))
        })
        .unwrap_or_else(|| panic!("no speculation line in {}", result["log"]))["text"]
        .as_str()
        .unwrap()
        .to_string();
    let n: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    eprintln!("{line}");
    // A wakeup every 1ms from the first: most of them are speculative.
    assert!(n[0] >= 500, "{line}");
    assert!(n[1] * 100 <= n[0], "{line}");
}

#[test]
fn the_live_experiments_are_listed() {
    let out = hsched(&["repro", "--live", "--list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = text(&out.stdout);
    for name in [
        "live-sim-shares",
        "live-hls-table5",
        "live-bvt-table1",
        "live-vassal-table2",
        "live-cyclictest",
    ] {
        assert!(list.contains(name), "{name} missing from\n{list}");
    }
}

/// Where the kernel has no sched_ext, `--backend scx` and `--partial` are
/// refused with exit 2 saying why, before anything is managed; `--park
/// hard` is the agent's; and without `--backend` the agent runs, the log
/// saying why sched_ext was not used.
#[test]
fn the_sched_ext_backend_says_why_it_cannot_run_here() {
    let _turn = one_at_a_time();
    hsched_testkit::require!(
        "a kernel without sched_ext",
        match std::path::Path::new("/sys/kernel/sched_ext").exists() {
            true =>
                Err("this kernel has sched_ext (its tests run in the guest: scx_guest.rs)".into()),
            false => Ok(()),
        }
    );
    let file = repo().join("scenarios/live/two-hogs-rr.toml");
    let file = file.to_str().unwrap();
    let out = hsched(&["live", file, "--backend", "scx", "--horizon", "200ms"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let why = text(&out.stderr);
    assert!(
        why.contains("the sched_ext backend: ")
            && (why.contains("no sched_ext") || why.contains("without the `scx` feature")),
        "{why}"
    );
    let out = hsched(&["live", file, "--partial", "--horizon", "200ms"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("--partial is a mode of the sched_ext backend, which is not available"),
        "{}",
        text(&out.stderr)
    );
    let out = hsched(&["live", file, "--park", "hard", "--backend", "scx"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--park hard is the user-space agent's"));

    hsched_testkit::require!("root", realtime());
    let out = hsched(&["live", file, "--horizon", "300ms", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["global"]["platform"], "live");
    let first = &run["log"][0];
    assert!(
        first["text"]
            .as_str()
            .unwrap()
            .starts_with("backend: the user-space agent (sched_ext not used: "),
        "{first}"
    );
}
