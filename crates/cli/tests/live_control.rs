//! `hsched ctl` against a running `hsched live` (root): the hierarchy
//! changed at run time, requests a script step could not make refused
//! with nothing changed, no client stalling the agent, and a load that
//! breaks a promise refused with the analysis's reason.

mod common;

use common::live::{one_at_a_time, realtime};
use common::{hsched, text, tmp};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let _turn = one_at_a_time();
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

/// A control request the scenario parser would refuse as a script step is
/// refused with its reason and changes nothing (unload of the root or of
/// the default scheduler, `vps` beyond the CPUs, an empty name); a plugin
/// that is a named pipe is refused without opening it; and 100
/// connections that send requests and never read the replies stall
/// nothing: the others are answered and the run stops when asked.
#[test]
fn ctl_refuses_what_a_script_may_not_do_and_no_client_stalls_the_agent() {
    use std::io::Write;
    let _turn = one_at_a_time();
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

/// `hsched ctl load` into a live run is re-analysed as a script step is: a
/// `res` asking 60% of a `res` that promised 50% is refused with the
/// analysis's reason (exit 2) and the run goes on; a load that composes is
/// made and labelled from its time.
#[test]
fn ctl_refuses_a_load_that_breaks_a_promise() {
    let _turn = one_at_a_time();
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
