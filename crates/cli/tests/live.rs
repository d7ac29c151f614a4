//! `hsched live` as a user runs it (root): the bundled live scenario's
//! shares; the desktop example on hsched's workers against its
//! simulation (`--compare-sim`), with its jobs and trace; a scenario live
//! cannot run refused with exit 2; and the agent
//! SIGKILLed mid-run with one process raised and one stopped: every managed
//! process is back at its original policy and running within one second;
//! a policy the watchdog ejects hands its threads back to Linux; rtwake's
//! wakeups of the worker never come early.

mod common;

use common::{hsched, repo, text, tmp};
use hsched_live::agent::RUN_NICE;
use hsched_live::sys::{self, SCHED_OTHER};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether this process may set `SCHED_FIFO` (root), which `hsched live` needs.
fn realtime() -> Result<(), String> {
    sys::realtime_allowed().map_err(|e| format!("cannot set SCHED_FIFO here ({e}); run as root"))
}

/// One `hsched live` at a time: two agents would fight over the CPUs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn the_live_example_shares_the_cpu_as_the_simulation_does() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let file = repo().join("scenarios/live/two-hogs-rr.toml");
    let file = file.to_str().unwrap();
    let out = hsched(&["live", file, "--horizon", "2s", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = hsched(&["sim", file, "--horizon", "2s", "--json"]);
    let sim: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for i in 0..2 {
        let l = live["threads"][i]["share"].as_f64().unwrap();
        let s = sim["threads"][i]["share"].as_f64().unwrap();
        eprintln!("hog.{i}: live {l:.3}, sim {s:.3}");
        // The issue's target: within 3 percentage points of the simulation.
        assert!((l - s).abs() <= 0.03, "hog.{i}: live {l} against sim {s}");
    }
    assert_eq!(live["global"]["platform"], "live");
    assert_eq!(
        live["log"],
        serde_json::json!([]),
        "every thread change took"
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
    let out = hsched(&["live", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("`lock` is not run by the live worker") && err.contains("locks.toml"),
        "{err}"
    );
}

#[test]
fn the_desktop_example_runs_on_workers_as_it_simulates() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    // Periodic video and audio, an interactive editor and three compiles,
    // every one a worker executing its program.
    let (trace, jobs) = (tmp("live", "trace.json"), tmp("live", "jobs.csv"));
    let file = repo().join("scenarios/examples/desktop.toml");
    let out = hsched(&[
        "live",
        file.to_str().unwrap(),
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
    let mut rows = 0;
    for line in table.lines().skip(2) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let diff: f64 = cells[3].parse().unwrap();
        eprintln!("{line}");
        // The issue's target: within 3 percentage points of the simulation.
        assert!(diff.abs() <= 3.0, "{line}");
        rows += 1;
    }
    assert_eq!(rows, 6, "{table}");
    // Jobs came from the workers, with the simulation's release grid:
    // video's releases, 33 ms apart.
    let csv = std::fs::read_to_string(&jobs).unwrap();
    let video: Vec<Vec<&str>> = csv
        .lines()
        .filter(|l| l.starts_with("video,"))
        .map(|l| l.split(',').collect())
        .collect();
    assert!(
        (60..=61).contains(&video.len()),
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

/// The children of process `pid`.
/// Two shell loops under scheduler `fp`, `high` above `low`: `fp` runs
/// only `high`.
const FP_HOGS: &str = r#"
[[thread]]
name = "high"
parent = "fp"
at = { prio = 2 }
command = ["sh", "-c", "while :; do :; done"]
program = [ { run = "100s" } ]
[[thread]]
name = "low"
parent = "fp"
at = { prio = 1 }
command = ["sh", "-c", "while :; do :; done"]
program = [ { run = "100s" } ]
"#;

/// The shells among process `pid`'s children.
/// The commands agent `pid` started: its children but the guardian. (A
/// command hard-parked before it ran has not exec'd yet: its name is
/// still the agent's.)
fn shell_children(pid: u32) -> Vec<i32> {
    children(pid)
        .into_iter()
        .filter(|&p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| !c.windows(10).any(|w| w == b"__guardian"))
        })
        .collect()
}

fn children(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        if after.split_whitespace().nth(1) == Some(&pid.to_string()) {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_sigkilled_agent_leaves_no_thread_raised_or_stopped() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let file = tmp("live", "long.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "long"
horizon = "60s"
[machine]
cpus = 1
[[scheduler]]
name = "fp"
policy = "fp"
{FP_HOGS}"#
        ),
    )
    .unwrap();
    // Hard parking: the low-priority process is stopped while the agent
    // lives; after the kill it must run again.
    let mut agent = Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args(["live", "--park", "hard"])
        .arg(&file)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until both commands run under the agent, one of them raised.
    let start = Instant::now();
    let hogs = loop {
        let mine = shell_children(agent.id());
        let raised = mine
            .iter()
            .any(|&p| sys::get_attr(p).is_ok_and(|a| a.nice == RUN_NICE));
        let stopped = mine
            .iter()
            .any(|&p| sys::thread_state(p, p).is_ok_and(|s| s == 'T'));
        if mine.len() == 2 && raised && stopped {
            break mine;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the agent did not start its commands"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    std::thread::sleep(Duration::from_millis(300));
    agent.kill().unwrap(); // SIGKILL
    agent.wait().unwrap();
    let killed = Instant::now();
    let back = |p: i32| {
        sys::get_attr(p).is_ok_and(|a| a.policy == SCHED_OTHER && a.nice == 0)
            && sys::thread_state(p, p).is_ok_and(|s| s != 'T')
    };
    while !hogs.iter().all(|&p| back(p)) && killed.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let took = killed.elapsed();
    let all_back = hogs.iter().all(|&p| back(p));
    for &p in &hogs {
        let _ = sys::signal(p, libc::SIGKILL);
    }
    eprintln!("all managed processes back {took:?} after the agent's SIGKILL");
    assert!(all_back, "not all back within 1s");
}

/// The safety net for a stuck policy: `fp` keeps its low thread off the
/// CPU past the watchdog's bound, is ejected, and both its threads are
/// handed back to Linux while the run goes on (their policy and CPUs as
/// before, running), each logged.
#[test]
fn an_ejected_policy_hands_its_threads_back_to_linux() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let file = tmp("live", "starving.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "starving"
horizon = "3s"
default = "root"
[machine]
cpus = 1
watchdog = "300ms"
[[scheduler]]
name = "root"
policy = "rr"
[[scheduler]]
name = "fp"
policy = "fp"
parent = "root"
{FP_HOGS}"#
        ),
    )
    .unwrap();
    let agent = Command::new(env!("CARGO_BIN_EXE_hsched"))
        .arg("live")
        .arg(&file)
        .arg("--json")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let all_cpus = sys::get_affinity(0).unwrap();
    let start = Instant::now();
    // As Linux had them: nice 0 on every CPU, and not waiting for the
    // agent's end to get there.
    let back = |p: i32| {
        sys::get_attr(p).is_ok_and(|a| a.policy == SCHED_OTHER && a.nice == 0)
            && sys::get_affinity(p).is_ok_and(|c| c == all_cpus)
    };
    // Managed first (one raised), then back.
    let mut managed = false;
    let handed_back = loop {
        let hogs = shell_children(agent.id());
        managed |= hogs
            .iter()
            .any(|&p| sys::get_attr(p).is_ok_and(|a| a.nice == RUN_NICE));
        if managed && hogs.len() == 2 && hogs.iter().all(|&p| back(p)) {
            break start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_millis(2500),
            "not handed back (managed: {managed}): {hogs:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    let out = agent.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = result["log"].to_string();
    eprintln!("handed back {handed_back:?} after the start");
    assert!(log.contains("ejected `fp`"), "{log}");
    for name in ["high", "low"] {
        assert!(
            log.contains(&format!("thread `{name}` handed back to Linux")),
            "{log}"
        );
    }
}

#[test]
fn an_attached_process_is_scheduled_then_given_back_running() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    let share = live["threads"][1]["share"].as_f64().unwrap();
    // It shared the CPU with the started hog, as rr gives it.
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
        let out = hsched(&["live", file, "--attach", arg]);
        assert_eq!(out.status.code(), Some(2), "{arg}");
        assert!(
            text(&out.stderr).contains(want),
            "{arg}: {}",
            text(&out.stderr)
        );
    }
}

/// `hsched ctl` against a running `hsched live`: the status; a scheduler
/// loaded and a thread moved under it at run time; a message to a
/// scheduler that does not exist, a malformed request, and a managed
/// process speaking for another thread, each refused with nothing changed.
#[test]
fn ctl_changes_a_live_run_and_bad_requests_change_nothing() {
    use std::io::{BufRead, BufReader, Write};
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let socket = tmp("live", "ctl.sock");
    let socket = socket.to_str().unwrap();
    let scenario = tmp("live", "ctl.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"
name = "ctl"
horizon = "3s"
[machine]
cpus = 1
[[scheduler]]
name = "root"
policy = "fp"
[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = {{ prio = 0 }}
[[thread]]
name = "hog"
parent = "ts"
program = [ {{ run = "100s" }} ]
[[thread]]
name = "meddler"
parent = "ts"
arrival = "200ms"
program = [ {{ run = "1ms" }} ]
command = ["{exe}", "ctl", "--socket", "{socket}", "msg", "--thread", "hog", "--to", "ts", "leave"]
"#,
            exe = env!("CARGO_BIN_EXE_hsched"),
        ),
    )
    .unwrap();
    let mut live = Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args([
            "live",
            scenario.to_str().unwrap(),
            "--json",
            "--socket",
            socket,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ctl = |args: &[&str]| {
        let mut all = vec!["ctl", "--socket", socket];
        all.extend_from_slice(args);
        hsched(&all)
    };
    // Until the agent listens.
    let started = Instant::now();
    let status = loop {
        let out = ctl(&["status"]);
        if out.status.success() || started.elapsed() > Duration::from_secs(5) {
            break out;
        }
        if let Ok(Some(_)) = live.try_wait() {
            let out = live.wait_with_output().unwrap();
            panic!("hsched live ended: {}", text(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.status.success(), "{}", text(&status.stderr));
    assert!(
        text(&status.stdout).contains("thread hog"),
        "{}",
        text(&status.stdout)
    );

    let out = ctl(&["msg", "--to", "nosuch", "warp", "on=true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no scheduler `nosuch`"),
        "{}",
        text(&out.stderr)
    );

    let mut raw = std::os::unix::net::UnixStream::connect(socket).unwrap();
    raw.write_all(b"{\"op\": \"load\"}\n").unwrap();
    let mut answer = String::new();
    BufReader::new(&raw).read_line(&mut answer).unwrap();
    assert!(
        answer.contains("\"ok\":false") && answer.contains("malformed"),
        "{answer}"
    );

    let out = ctl(&[
        "load",
        "fast",
        "rr",
        "--parent",
        "root",
        "--at",
        "prio=5",
        "quantum=10ms",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::thread::sleep(Duration::from_millis(300));
    let out = ctl(&["move", "hog", "fast"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = live.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hog = &result["threads"][0];
    assert_eq!(hog["name"], "hog");
    assert_eq!(hog["scheduler"], "fast", "moved at run time");
    let fast = result["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fast")
        .expect("the loaded scheduler is in the result");
    assert!(
        fast["received_ns"].as_u64().unwrap() > 500_000_000,
        "{fast}"
    );
    let log = result["log"].to_string();
    assert!(log.contains("may speak only for its own threads"), "{log}");
    assert!(log.contains("no scheduler `nosuch`"), "{log}");
    assert!(
        !std::path::Path::new(socket).exists(),
        "the socket is removed"
    );
}

/// What a command starts is scheduled with it: a shell that starts two
/// busy loops is three threads of rr against one busy loop, so its family
/// gets two thirds of the CPU (it would get half if only the shell were
/// managed); and the horizon ends the whole family.
#[test]
fn the_processes_a_command_starts_are_managed_with_it() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let file = tmp("live", "family.toml");
    std::fs::write(
        &file,
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
program = [ { run = "10s" } ]
command = ["sh", "-c", "sh -c 'while :; do :; done' & sh -c 'while :; do :; done'; wait"]
[[thread]]
name = "one"
program = [ { run = "10s" } ]
command = ["sh", "-c", "while :; do :; done"]
"#,
    )
    .unwrap();
    let out = hsched(&["live", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pair = result["threads"][0]["share"].as_f64().unwrap();
    let one = result["threads"][1]["share"].as_f64().unwrap();
    eprintln!("pair {pair:.3}, one {one:.3}");
    assert!((pair - 2.0 / 3.0).abs() < 0.05, "pair {pair}, one {one}");
    assert!((one - 1.0 / 3.0).abs() < 0.05, "pair {pair}, one {one}");
    let left = Command::new("pgrep")
        .args(["-f", "while :; do :; done"])
        .output()
        .unwrap();
    assert!(
        text(&left.stdout).trim().is_empty(),
        "left running after the horizon: {}",
        text(&left.stdout)
    );
}

/// Vassal's sample scheduler on real CPUs: the wakeups `rtwake` promises
/// the worker become jobs (release = the time promised, start = when the
/// worker next ran), and with hard parking none comes early.
#[test]
fn rtwake_wakes_the_worker_never_early() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let file = repo().join("scenarios/live/vassal-table2.toml");
    let csv = tmp("live", "rtwake-jobs.csv");
    let out = hsched(&[
        "live",
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
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    let out = hsched(&["live", file, "--park", "hard", "--speculate"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--speculate"));
    let out = hsched(&["live", file, "--speculate", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let line = result["log"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "platform")
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
    let out = hsched(&["live", scenario.to_str().unwrap(), "--json"]);
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
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    assert_eq!(
        result["log"],
        serde_json::json!([]),
        "every thread was taken over"
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

/// A control request the scenario parser would refuse as a script step is
/// refused with its reason and changes nothing (unload of the root or of
/// the default scheduler, `vps` beyond the CPUs, an empty name); a plugin
/// that is a named pipe is refused without opening it; and 100
/// connections that send requests and never read the replies stall
/// nothing: the others are answered and the run ends on time.
#[test]
fn ctl_refuses_what_a_script_may_not_do_and_no_client_stalls_the_agent() {
    use std::io::Write;
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let socket = tmp("live", "refuse.sock");
    let socket = socket.to_str().unwrap();
    let scenario = tmp("live", "refuse.toml");
    std::fs::write(
        &scenario,
        r#"
name = "refuse"
horizon = "3s"
default = "ts"
[machine]
cpus = 1
[[scheduler]]
name = "root"
policy = "fp"
[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = { prio = 0 }
[[thread]]
name = "hog"
parent = "ts"
program = [ { run = "100s" } ]
"#,
    )
    .unwrap();
    let started = Instant::now();
    let live = Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args([
            "live",
            scenario.to_str().unwrap(),
            "--json",
            "--socket",
            socket,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ctl = |args: &[&str]| {
        let mut all = vec!["ctl", "--socket", socket];
        all.extend_from_slice(args);
        hsched(&all)
    };
    while !ctl(&["status"]).status.success() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the agent never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // 100 connections, each sending status requests until the socket
    // takes no more, none reading a reply.
    let flood: Vec<std::os::unix::net::UnixStream> = (0..100)
        .filter_map(|_| std::os::unix::net::UnixStream::connect(socket).ok())
        .collect();
    let request = b"{\"op\":\"status\"}\n".repeat(4096);
    for mut c in &flood {
        c.set_nonblocking(true).unwrap();
        let _ = c.write(&request);
    }
    let fifo = tmp("live", "plugin.fifo");
    let _ = std::fs::remove_file(&fifo);
    let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0);
    let refusals: [(&[&str], &str); 5] = [
        (
            &["unload", "root"],
            "`root` is the root and cannot be unloaded",
        ),
        (
            &["unload", "ts"],
            "`ts` is the default scheduler and cannot be unloaded",
        ),
        (
            &[
                "load", "fast", "rr", "--parent", "root", "--vps", "100000", "--at", "prio=5",
            ],
            "expected an integer in 1..=1",
        ),
        (
            &["load", "", "rr", "--parent", "root", "--at", "prio=5"],
            "found an empty string",
        ),
        (&["plugin", fifo.to_str().unwrap()], "not a regular file"),
    ];
    for (args, why) in refusals {
        let asked = Instant::now();
        let out = ctl(args);
        if out.status.code() != Some(2) {
            let _ = hsched_live::sys::signal(live.id() as i32, libc::SIGTERM);
            let live = live.wait_with_output().unwrap();
            panic!(
                "ctl {args:?}: {} (hsched live: {})",
                text(&out.stderr),
                text(&live.stderr)
            );
        }
        assert!(
            text(&out.stderr).contains(why),
            "ctl {args:?}: {}",
            text(&out.stderr)
        );
        // Answered while the flood is unread: the agent never waits on it.
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "ctl {args:?} took {:?}",
            asked.elapsed()
        );
    }
    let status = ctl(&["status"]);
    if !status.status.success() {
        let _ = hsched_live::sys::signal(live.id() as i32, libc::SIGTERM);
        let live = live.wait_with_output().unwrap();
        panic!(
            "ctl status: {} (hsched live: {})",
            text(&status.stderr),
            text(&live.stderr)
        );
    }
    let status = text(&status.stdout);
    assert!(
        status.contains("scheduler root")
            && status.contains("scheduler ts")
            && !status.contains("fast"),
        "nothing changed: {status}"
    );
    let out = live.wait_with_output().unwrap();
    let took = started.elapsed();
    drop(flood);
    let _ = std::fs::remove_file(&fifo);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The 3 s horizon, with room for start-up and wrap-up: an agent stalled
    // on a client is killed by its guardian after 1 s without a heartbeat.
    assert!(took < Duration::from_secs(8), "the run took {took:?}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = result["log"].to_string();
    for why in ["is the root and cannot be unloaded", "not a regular file"] {
        assert!(log.contains(why), "{log}");
    }
}
