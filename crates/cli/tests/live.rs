//! `hsched live` as a user runs it (root): the bundled live scenario's
//! shares; the desktop example on hsched's workers against its
//! simulation (`--compare-sim`), with its jobs and trace; a scenario live
//! cannot run refused with exit 2; the agent SIGKILLed mid-run with one
//! process raised and one stopped: none killed, every managed process back
//! at its original policy and running within one second; the guardian
//! SIGKILLed: the agent gives everything back itself and stops; SIGINT and
//! SIGTERM: an orderly stop with the outputs written;
//! a policy the watchdog ejects hands its threads back to Linux; rtwake's
//! wakeups of the worker never come early.
//!
//! These are the user-space agent's tests: each run names `--backend
//! agent` (on a sched_ext kernel the default would be the other backend,
//! whose tests boot a guest: scx_guest.rs); the last test checks the
//! choice of backend itself.

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

/// Each thread's share of what the managed threads received together.
fn shares_of_total(result: &serde_json::Value) -> Vec<f64> {
    let shares: Vec<f64> = result["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["share"].as_f64().unwrap())
        .collect();
    let total: f64 = shares.iter().sum();
    shares.iter().map(|s| s / total).collect()
}

/// Two rr hogs beside two busy loops hsched does not manage, started from
/// another session. Shares are what the kernel's switch records say each
/// thread received, taken as a part of what the managed threads received
/// together in the same run (the baseline: the CPU left to them by the
/// unmanaged loops), and compared with the simulation's.
#[test]
fn the_live_example_shares_the_cpu_as_the_simulation_does() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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

/// A process's scheduling state as Linux keeps it: policy, flags (reset
/// on fork), nice, CPUs.
type SchedState = (u32, u64, i32, Vec<usize>);

fn sched_state(p: i32) -> Option<SchedState> {
    let attr = sys::get_attr(p).ok()?;
    Some((
        attr.policy,
        attr.flags,
        attr.nice,
        sys::get_affinity(p).ok()?,
    ))
}

/// Whether process `p` lives (it may be stopped).
fn alive(p: i32) -> bool {
    sys::thread_state(p, p).is_ok_and(|s| !matches!(s, 'Z' | 'X'))
}

/// Whether process `p` lives and is not stopped.
fn running(p: i32) -> bool {
    sys::thread_state(p, p).is_ok_and(|s| !matches!(s, 'Z' | 'X' | 'T' | 't'))
}

/// Whether `ok` holds within `limit` (checked every millisecond).
fn within(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if ok() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits (at most `limit`) for `child` to exit.
fn exit_within(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if start.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The guardian among the agent's children (`hsched __guardian`).
fn guardian_of(agent: u32) -> Option<i32> {
    children(agent).into_iter().find(|&p| {
        std::fs::read_to_string(format!("/proc/{p}/cmdline"))
            .is_ok_and(|c| c.contains("__guardian"))
    })
}

/// A shell loop of the test's own, at nice 3 on every CPU: an original
/// state that is not Linux's default, so that giving it back shows.
fn own_hog() -> (std::process::Child, i32, SchedState) {
    let hog = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let pid = hog.id() as i32;
    sys::set_attr(pid, &sys::SchedAttr::fair(SCHED_OTHER, 3)).unwrap();
    let original = sched_state(pid).unwrap();
    (hog, pid, original)
}

/// SIGKILL of the agent, ten times, each while hard parking holds one
/// command stopped and the other raised: no command dies (the kernel's
/// SIGHUP to a process group orphaned with a stopped member killed the
/// stopped one in 16 of 20 runs before commands started with SIGHUP
/// ignored), and within one second of the death each runs again at its
/// original policy, nice and CPUs.
#[test]
fn a_sigkilled_agent_kills_no_command_and_leaves_none_raised_or_stopped() {
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
    // The commands start as hsched would have found them: the default
    // policy at nice 0, on every CPU the agent was allowed.
    let original = (SCHED_OTHER, 0, 0, sys::get_affinity(0).unwrap());
    // And Linux's autogroup as it was (the agent turns it off).
    let autogroup = sys::autogroup().unwrap();
    const RUNS: usize = 10;
    let (mut killed, mut not_back) = (0, 0);
    let mut slowest = Duration::ZERO;
    for _ in 0..RUNS {
        let mut agent = Command::new(env!("CARGO_BIN_EXE_hsched"))
            .args(["live", "--backend", "agent", "--park", "hard"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Both commands under the agent, one raised, one stopped.
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
            std::thread::sleep(Duration::from_millis(2));
        };
        agent.kill().unwrap(); // SIGKILL
        let died = Instant::now();
        agent.wait().unwrap();
        let back = within(Duration::from_secs(1), || {
            hogs.iter()
                .all(|&p| running(p) && sched_state(p).as_ref() == Some(&original))
                && sys::autogroup().unwrap() == autogroup
        });
        slowest = slowest.max(died.elapsed());
        // A SIGHUP sent at the agent's exit has taken effect by now.
        std::thread::sleep(Duration::from_millis(50));
        killed += usize::from(!hogs.iter().all(|&p| alive(p)));
        not_back += usize::from(!back);
        for &p in &hogs {
            let _ = sys::signal(p, libc::SIGKILL);
        }
    }
    eprintln!("{RUNS} agents SIGKILLed: a command killed in {killed}, not all back within 1 s in {not_back}; slowest check {slowest:?}");
    assert_eq!(
        (killed, not_back),
        (0, 0),
        "of {RUNS} runs: a command killed in {killed}, not all back within 1 s in {not_back}"
    );
}

/// SIGKILL of the guardian, ten times (soft and hard parking in turn),
/// while the agent holds a process it was given (`--attach`) and one it
/// started: the agent gives the attached process back itself, within one
/// second (its original nice 3, its CPUs, running), ends its command as at
/// the horizon, writes its outputs and exits with status 1, saying why.
/// (Before, it exited in about 0.15 s leaving the attached process raised,
/// idle or stopped.)
#[test]
fn a_sigkilled_guardian_leaves_the_agent_to_give_everything_back_and_stop() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let file = repo().join("scenarios/live/two-hogs-rr.toml");
    let json = tmp("live", "guardian-killed.json");
    // Not a pipe: a command left running would hold it open.
    let err_file = tmp("live", "guardian-killed.err");
    const RUNS: usize = 10;
    let mut failures = Vec::new();
    for run in 0..RUNS {
        let (mut mine, pid, original) = own_hog();
        let _ = std::fs::remove_file(&json);
        let mut agent = Command::new(env!("CARGO_BIN_EXE_hsched"))
            .args(["live", "--backend", "agent"])
            .arg(&file)
            .args(["--horizon", "60s", "--json"])
            .arg(&json)
            .arg("--attach")
            .arg(format!("hog.1={pid}"))
            .args(if run % 2 == 1 {
                &["--park", "hard"][..]
            } else {
                &[]
            })
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err_file).unwrap())
            .spawn()
            .unwrap();
        // Taken over (no longer as it was), its command started.
        assert!(
            within(Duration::from_secs(10), || {
                sched_state(pid).as_ref() != Some(&original)
                    && shell_children(agent.id()).len() == 1
            }),
            "run {run}: the agent did not take over {pid}"
        );
        let command = shell_children(agent.id());
        let guardian = guardian_of(agent.id()).expect("the agent's guardian");
        sys::signal(guardian, libc::SIGKILL).unwrap();
        let back = within(Duration::from_secs(1), || {
            running(pid) && sched_state(pid).as_ref() == Some(&original)
        });
        let status = exit_within(&mut agent, Duration::from_secs(5));
        let err = std::fs::read_to_string(&err_file).unwrap_or_default();
        let attached_alive = alive(pid);
        let _ = mine.kill();
        let _ = mine.wait();
        let log = std::fs::read_to_string(&json)
            .ok()
            .and_then(|j| serde_json::from_str::<serde_json::Value>(&j).ok())
            .map(|j| j["log"].to_string())
            .unwrap_or_default();
        let checks = [
            (back, "the attached process back within 1 s"),
            (attached_alive, "the attached process alive"),
            (status.and_then(|s| s.code()) == Some(1), "exit status 1"),
            (err.contains("the guardian ended"), "the reason on stderr"),
            (
                log.contains("the guardian ended"),
                "the reason in the JSON log",
            ),
            (!command.iter().any(|&p| alive(p)), "its command ended"),
        ];
        for (ok, what) in checks {
            if !ok {
                failures.push(format!("run {run}: not {what} ({status:?}, {err})"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// SIGINT and SIGTERM (Ctrl-C, a service manager), ten times, in turn: an
/// orderly stop. The outputs are written for the time that ran (JSON,
/// trace, jobs, report), with the signal in the log; the exit status is
/// 128 plus the signal; the command hsched started is ended, or with
/// `--keep-commands` (the last two runs) left running as it started; the
/// attached process is given back as it was, running; the control socket
/// is removed. (Before: no output, the command left running, the socket
/// left behind.)
#[test]
fn sigint_and_sigterm_stop_a_live_run_in_order() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let file = repo().join("scenarios/live/two-hogs-rr.toml");
    let out = |name: &str| tmp("live", &format!("stopped-{name}"));
    let socket = out("control.sock");
    let as_started = (SCHED_OTHER, 0, 0, sys::get_affinity(0).unwrap());
    const RUNS: usize = 10;
    let mut failures = Vec::new();
    for run in 0..RUNS {
        let (sig, name) = if run % 2 == 0 {
            (libc::SIGINT, "SIGINT")
        } else {
            (libc::SIGTERM, "SIGTERM")
        };
        let keep = run >= RUNS - 2;
        let (mut mine, pid, original) = own_hog();
        for f in ["json", "trace", "csv", "html"] {
            let _ = std::fs::remove_file(out(f));
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hsched"));
        cmd.args(["live", "--backend", "agent"])
            .arg(&file)
            .args(["--horizon", "60s", "--attach"])
            .arg(format!("hog.1={pid}"))
            .arg("--socket")
            .arg(&socket)
            .arg("--json")
            .arg(out("json"))
            .arg("--trace")
            .arg(out("trace"))
            .arg("--jobs-csv")
            .arg(out("csv"))
            .arg("--report")
            .arg(out("html"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(out("err")).unwrap());
        if keep {
            cmd.arg("--keep-commands");
        }
        let mut agent = cmd.spawn().unwrap();
        assert!(
            within(Duration::from_secs(10), || {
                sched_state(pid).as_ref() != Some(&original)
                    && shell_children(agent.id()).len() == 1
                    && socket.exists()
            }),
            "run {run}: the agent did not take over {pid}"
        );
        let command = shell_children(agent.id());
        std::thread::sleep(Duration::from_millis(100));
        sys::signal(agent.id() as i32, sig).unwrap();
        let status = exit_within(&mut agent, Duration::from_secs(10));
        let err = std::fs::read_to_string(out("err")).unwrap_or_default();
        let json: serde_json::Value = std::fs::read_to_string(out("json"))
            .ok()
            .and_then(|j| serde_json::from_str(&j).ok())
            .unwrap_or_default();
        let horizon = json["global"]["horizon_ns"].as_u64().unwrap_or(0);
        let trace_ok = std::fs::read_to_string(out("trace"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|t| t.to_string().contains("hog.0"));
        let csv_ok = std::fs::read_to_string(out("csv")).is_ok_and(|c| c.starts_with("thread,"));
        let report_ok = std::fs::read_to_string(out("html")).is_ok_and(|h| h.contains("<html"));
        let attached_back = running(pid) && sched_state(pid).as_ref() == Some(&original);
        let command_as_wanted = if keep {
            command
                .iter()
                .all(|&p| running(p) && sched_state(p).as_ref() == Some(&as_started))
        } else {
            !command.iter().any(|&p| alive(p))
        };
        for &p in &command {
            let _ = sys::signal(p, libc::SIGKILL);
        }
        let _ = mine.kill();
        let _ = mine.wait();
        let checks = [
            (
                status.and_then(|s| s.code()) == Some(128 + sig),
                "exit status 128 + the signal",
            ),
            (
                err.contains(&format!("stopped by {name}")),
                "the signal named on stderr",
            ),
            (
                json["log"]
                    .to_string()
                    .contains(&format!("stopped by {name}")),
                "the signal in the JSON log",
            ),
            (
                horizon > 0 && horizon < 10_000_000_000,
                "the JSON covering the time that ran",
            ),
            (trace_ok, "the trace written"),
            (csv_ok, "the jobs CSV written"),
            (report_ok, "the report written"),
            (attached_back, "the attached process given back, running"),
            (
                command_as_wanted,
                "the command ended (kept with --keep-commands)",
            ),
            (!socket.exists(), "the control socket removed"),
        ];
        for (ok, what) in checks {
            if !ok {
                failures.push(format!(
                    "run {run} ({name}, keep {keep}): not {what} ({status:?}, {err})"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The safety net for a stuck policy: `fp` keeps its low thread off the
/// CPU past the watchdog's bound, is ejected, and both its threads are
/// handed back to Linux while the run goes on (their policy and CPUs as
/// before, running), each logged.
///
/// The bound is a second, so that the managed state stays in sight of
/// this test's polling for that long even when the polling thread is
/// kept off the CPU for a while on a busy machine.
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
horizon = "4s"
default = "root"
[machine]
cpus = 1
watchdog = "1s"
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
    let mut agent = Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args(["live", "--backend", "agent"])
        .arg(&file)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
    // Managed first (raised or parked, as only the agent's management
    // leaves them: a held command is born at nice 0), then back, before
    // the run's end (the agent's clock starts after this test's, so 3.5 s
    // here is before 4 s there).
    let managed_now =
        |p: i32| sys::get_attr(p).is_ok_and(|a| a.nice == RUN_NICE || a.policy != SCHED_OTHER);
    let mut managed = false;
    let mut handed_back = None;
    // The longest this test went without a look: a command released
    // while parked was stopped in its exec, and reading its command line
    // waited with it, through the whole managed time.
    let (mut last, mut gap) = (start.elapsed(), Duration::ZERO);
    while start.elapsed() < Duration::from_millis(3500) {
        gap = gap.max(start.elapsed() - last);
        last = start.elapsed();
        let hogs = shell_children(agent.id());
        managed |= hogs.iter().any(|&p| managed_now(p));
        if managed && hogs.len() == 2 && hogs.iter().all(|&p| back(p)) {
            handed_back = Some(start.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let Some(handed_back) = handed_back else {
        let hogs = shell_children(agent.id());
        let _ = agent.kill();
        // The agent's death kills no command, and they hold its stderr.
        for &p in &hogs {
            let _ = sys::signal(p, libc::SIGKILL);
        }
        let out = agent.wait_with_output().unwrap();
        panic!(
            "not handed back within 3.5 s (managed seen: {managed}; longest between looks {gap:?}; \
             {hogs:?} as {:?})\n\
             stderr: {}\nstdout: {}",
            hogs.iter()
                .map(|&p| (sys::get_attr(p).map(|a| (a.policy, a.nice)), sys::get_affinity(p)))
                .collect::<Vec<_>>(),
            text(&out.stderr),
            text(&out.stdout)
        );
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

/// `hsched live SCENARIO --json --socket SOCKET`, its output piped.
fn live_with_socket(scenario: &std::path::Path, socket: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args(["live", "--backend", "agent"])
        .arg(scenario)
        .args(["--json", "--socket", socket])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `hsched ctl --socket SOCKET ARGS`.
fn ctl_at(socket: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["ctl", "--socket", socket];
    all.extend_from_slice(args);
    hsched(&all)
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
horizon = "60s"
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
    let mut live = live_with_socket(&scenario, socket);
    let ctl = |args: &[&str]| ctl_at(socket, args);
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
    // The meddler has had its say before the hog moves above it: after the
    // move it would wait for the CPU until the stop (its program starts
    // slowly on a busy machine).
    let started = Instant::now();
    loop {
        let out = ctl(&["status"]);
        let status = text(&out.stdout);
        if status
            .lines()
            .any(|l| l.starts_with("thread meddler ") && l.contains(" ended at "))
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the meddler never ended: {status}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = ctl(&["move", "hog", "fast"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::thread::sleep(Duration::from_secs(1));

    // Stopped, not ended by its horizon: how long the requests above take
    // depends on the machine, and a run that ended under one would reset
    // its connection.
    hsched_live::sys::signal(live.id() as i32, libc::SIGTERM).unwrap();
    let out = live.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        text(&out.stderr)
    );
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
    // The hog, alone under `fast` from its move to the stop, got most of
    // that time (it is at nice -20 against whatever else runs there).
    let moved_at = result["log"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["text"] == "thread `hog` moved to `fast`")
        .and_then(|e| e["at_ns"].as_u64())
        .expect("the move is logged");
    let since_move = result["global"]["horizon_ns"].as_u64().unwrap() - moved_at;
    assert!(
        fast["received_ns"].as_u64().unwrap() * 2 > since_move,
        "{fast} in the {since_move} ns after the move; the run: {} {}; its stderr: {}",
        result["threads"],
        result["log"],
        text(&out.stderr)
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

/// Ctrl-C during `hsched repro --live` stops in order: the live run
/// under way gives its threads back and ends its workers, no later
/// experiment starts, and it exits 128 + SIGINT naming the signal.
#[test]
fn sigint_stops_repro_live_in_order() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let workers = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.windows(8).any(|w| w == b"__worker"))
            })
            .collect()
    };
    let repro = Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args(["repro", "--live", "live-sim-shares"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its first live run has started once its control socket is there.
    let socket = std::path::Path::new(hsched_live::control::SOCKET_DIR)
        .join(format!("hsched-repro-{}.sock", repro.id()));
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no live run started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(!workers().is_empty(), "the run's workers are running");
    sys::signal(repro.id() as i32, libc::SIGINT).unwrap();
    let stopping = Instant::now();
    let out = repro.wait_with_output().unwrap();
    let took = stopping.elapsed();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGINT), "{err}");
    assert!(err.contains("stopped by SIGINT"), "{err}");
    assert!(took < Duration::from_secs(5), "the stop took {took:?}");
    assert!(!socket.exists(), "the control socket removed");
    assert_eq!(workers(), Vec::<i32>::new(), "workers left running");
    assert!(
        !text(&out.stdout).contains("all verdicts pass"),
        "no verdict after the stop"
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

/// A control request the scenario parser would refuse as a script step is
/// refused with its reason and changes nothing (unload of the root or of
/// the default scheduler, `vps` beyond the CPUs, an empty name); a plugin
/// that is a named pipe is refused without opening it; and 100
/// connections that send requests and never read the replies stall
/// nothing: the others are answered and the run stops when asked.
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
horizon = "60s"
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
    let live = live_with_socket(&scenario, socket);
    let ctl = |args: &[&str]| ctl_at(socket, args);
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
    // Stopped, not ended by its horizon: how long the checks above take
    // depends on the machine, and a run that ended under a request would
    // reset its connection.
    let stopping = Instant::now();
    hsched_live::sys::signal(live.id() as i32, libc::SIGTERM).unwrap();
    let out = live.wait_with_output().unwrap();
    let took = stopping.elapsed();
    drop(flood);
    let _ = std::fs::remove_file(&fifo);
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        text(&out.stderr)
    );
    // An orderly stop with the flood still unread, with room for the
    // wrap-up: an agent stalled on a client is killed by its guardian
    // after 1 s without a heartbeat.
    assert!(took < Duration::from_secs(3), "the stop took {took:?}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = result["log"].to_string();
    for why in ["is the root and cannot be unloaded", "not a regular file"] {
        assert!(log.contains(why), "{log}");
    }
}

/// Where the kernel has no sched_ext, `--backend scx` and `--partial` are
/// refused with exit 2 saying why, before anything is managed; `--park
/// hard` is the agent's; and without `--backend` the agent runs, the log
/// saying why sched_ext was not used.
#[test]
fn the_sched_ext_backend_says_why_it_cannot_run_here() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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

/// `hsched ctl load` into a live run is re-analysed as a script step is: a
/// `res` asking 60% of a `res` that promised 50% is refused with the
/// analysis's reason (exit 2) and the run goes on; a load that composes is
/// made and labelled from its time.
#[test]
fn ctl_refuses_a_load_that_breaks_a_promise() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let socket = tmp("live", "guard.sock");
    let socket = socket.to_str().unwrap();
    let scenario = tmp("live", "guard.toml");
    std::fs::write(
        &scenario,
        r#"
name = "guard"
horizon = "60s"
default = "ts"
[machine]
cpus = 1
[[scheduler]]
name = "root"
policy = "fp"
[[scheduler]]
name = "r"
policy = "res"
parent = "root"
at = { prio = 10 }
[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = { prio = 0 }
[[thread]]
name = "a"
parent = "r"
at = { amount = "5ms", period = "10ms" }
program = [ { run = "100s" } ]
"#,
    )
    .unwrap();
    let mut live = live_with_socket(&scenario, socket);
    let ctl = |args: &[&str]| ctl_at(socket, args);
    let started = Instant::now();
    loop {
        let out = ctl(&["status"]);
        if out.status.success() {
            break;
        }
        if let Ok(Some(_)) = live.try_wait() {
            let out = live.wait_with_output().unwrap();
            panic!("hsched live ended: {}", text(&out.stderr));
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{}",
            text(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let at = |name: &str, amount: &str| {
        ctl(&[
            "load",
            name,
            "res",
            "--parent",
            "r",
            "--at",
            amount,
            "--at",
            "period=10ms",
        ])
    };
    let over = at("b", "amount=6ms");
    let fits = at("c", "amount=2ms");
    std::thread::sleep(Duration::from_millis(200));
    // Stopped before anything is checked: a failed check must not leave
    // the run holding the CPU.
    hsched_live::sys::signal(live.id() as i32, libc::SIGTERM).unwrap();
    let out = live.wait_with_output().unwrap();

    assert_eq!(over.status.code(), Some(2), "{}", text(&over.stdout));
    assert!(
        text(&over.stderr).contains(
            "load `b` (res) under `r`: refused, it would break what the hierarchy promised: `r` (res): its reservations sum to 110% of the CPU"
        ),
        "{}",
        text(&over.stderr)
    );
    assert!(fits.status.success(), "{}", text(&fits.stderr));
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        text(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let schedulers = result["schedulers"].as_array().unwrap();
    assert!(schedulers.iter().all(|s| s["name"] != "b"), "{result}");
    let c = schedulers.iter().find(|s| s["name"] == "c").unwrap();
    assert_eq!(c["guarantee"], "RESBH 2, 10", "{c}");
    assert!(c["guaranteed_from_ns"].as_u64().unwrap() > 0, "{c}");
    let a = &result["threads"][0];
    assert_eq!(
        (&a["name"], &a["guarantee"]),
        (&"a".into(), &"RESBH 5, 10".into())
    );
    assert!(result["log"]
        .to_string()
        .contains("refused, it would break"));
}
