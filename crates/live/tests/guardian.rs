//! The guardian on real processes: a managed process raised to SCHED_FIFO
//! and stopped is put back (policy, affinity, running) within one second of
//! the agent's SIGKILL, and when the agent's heartbeat stops; a released
//! thread is left alone; the protocol round-trips and bad input never
//! panics. The tests that change scheduling policies need root (CI runs as
//! root) and say why they skip otherwise.

use hsched_live::guardian::{parse, Guardian, Line, Original, Watch};
use hsched_live::sys::{self, SchedAttr, SCHED_FIFO, SCHED_OTHER};
use proptest::prelude::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn guardian_exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_hsched-guardian"))
}

/// A process to manage: it sleeps, so raising it costs no CPU.
fn victim() -> Child {
    Command::new("sleep").arg("60").spawn().unwrap()
}

/// Whether this process may set real-time policies on another (root).
fn realtime() -> Result<(), String> {
    let mut probe = victim();
    let ok = sys::set_attr(probe.id() as i32, &SchedAttr::fifo(1));
    let _ = probe.kill();
    let _ = probe.wait();
    ok.map_err(|e| format!("cannot set SCHED_FIFO here ({e}); run as root"))
}

/// What the agent does to a process it parks hard: tell the guardian,
/// raise it, pin it to CPU 0, stop it.
fn manage_and_park(g: &mut Guardian, pid: i32) -> Original {
    let original = Original::capture(pid).unwrap();
    g.send(&Line::Manage(original.clone())).unwrap();
    sys::set_attr(pid, &SchedAttr::fifo(10)).unwrap();
    sys::set_affinity(pid, &[0]).unwrap();
    g.send(&Line::Stopped(pid)).unwrap();
    sys::signal(pid, libc::SIGSTOP).unwrap();
    assert_eq!(sys::get_attr(pid).unwrap().policy, SCHED_FIFO);
    original
}

fn is_restored(pid: i32, original: &Original) -> bool {
    let attr = sys::get_attr(pid).unwrap();
    attr.policy == original.policy
        && attr.priority == original.priority
        && sys::get_affinity(pid).unwrap() == original.cpus
        && sys::thread_state(pid, pid).unwrap() != 'T'
}

/// Polls every millisecond until `pid` is back as it was; how long it took.
fn time_to_restore(pid: i32, original: &Original, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if is_restored(pid, original) {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

#[test]
fn a_sigkilled_agent_s_threads_are_back_within_a_second() {
    hsched_testkit::require!("root", realtime());
    let mut v = victim();
    let pid = v.id() as i32;
    let mut g = Guardian::spawn(guardian_exe(), &Watch::default()).unwrap();
    let original = manage_and_park(&mut g, pid);
    assert_eq!(original.policy, SCHED_OTHER);
    // The pipe now lives only in a stand-in agent; the test's copy closes.
    let (mut guardian, pipe) = g.into_parts();
    let mut agent = Command::new("sleep")
        .arg("60")
        .stdin(Stdio::from(pipe))
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !is_restored(pid, &original),
        "restored while the agent lived"
    );
    agent.kill().unwrap(); // SIGKILL
    agent.wait().unwrap();
    let took = time_to_restore(pid, &original, Duration::from_secs(1));
    eprintln!("restored {took:?} after the agent's SIGKILL");
    assert!(took.is_some(), "not restored within 1s");
    assert!(guardian.wait().unwrap().success());
    v.kill().unwrap();
    v.wait().unwrap();
}

/// Silent past the heartbeat once it has beaten, the agent is killed and
/// its threads restored; before its first beat (its start) it is not.
#[test]
fn a_silent_agent_is_killed_and_its_threads_restored() {
    hsched_testkit::require!("root", realtime());
    let mut v = victim();
    let pid = v.id() as i32;
    // The "agent" hangs: alive, holding nothing, sending no beat.
    let mut hung = Command::new("sleep").arg("60").spawn().unwrap();
    let watch = Watch {
        agent: Some(hung.id() as i32),
        heartbeat: Some(Duration::from_millis(150)),
    };
    let mut g = Guardian::spawn(guardian_exe(), &watch).unwrap();
    let original = manage_and_park(&mut g, pid);
    // Before its first beat the agent is starting, however long that
    // takes: not killed.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!is_restored(pid, &original), "restored before any beat");
    assert!(hung.try_wait().unwrap().is_none(), "killed before any beat");
    // Beats keep it waiting past several timeouts.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(500) {
        g.send(&Line::Beat).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!is_restored(pid, &original), "restored despite beats");
    }
    let silent = Instant::now();
    let took = time_to_restore(pid, &original, Duration::from_secs(1));
    assert!(took.is_some(), "not restored within 1s of the last beat");
    assert!(
        silent.elapsed() >= Duration::from_millis(100),
        "restored before the heartbeat timed out"
    );
    // The hung agent was killed so it cannot undo the restoration.
    let status = hung.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    let (mut guardian, _pipe) = g.into_parts();
    assert!(guardian.wait().unwrap().success());
    v.kill().unwrap();
    v.wait().unwrap();
}

#[test]
fn a_released_thread_is_left_as_the_agent_set_it() {
    hsched_testkit::require!("root", realtime());
    let mut kept = victim();
    let mut given_back = victim();
    let mut g = Guardian::spawn(guardian_exe(), &Watch::default()).unwrap();
    for c in [&kept, &given_back] {
        let pid = c.id() as i32;
        g.send(&Line::Manage(Original::capture(pid).unwrap()))
            .unwrap();
        sys::set_attr(pid, &SchedAttr::fifo(5)).unwrap();
    }
    // A second report of the same thread does not replace its original.
    let mut later = Original::capture(kept.id() as i32).unwrap();
    later.tgid = kept.id() as i32;
    g.send(&Line::Manage(later)).unwrap();
    g.send(&Line::Release(given_back.id() as i32)).unwrap();
    assert!(g.finish().unwrap().success());
    assert_eq!(sys::get_attr(kept.id() as i32).unwrap().policy, SCHED_OTHER);
    assert_eq!(
        sys::get_attr(given_back.id() as i32).unwrap().policy,
        SCHED_FIFO
    );
    for c in [&mut kept, &mut given_back] {
        c.kill().unwrap();
        c.wait().unwrap();
    }
}

#[test]
fn the_guardian_refuses_bad_arguments_with_exit_2() {
    for args in [
        &["--agent"][..],
        &["--heartbeat-ms", "0"],
        &["--frobnicate", "1"],
    ] {
        let out = Command::new(guardian_exe())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("bad argument"));
    }
}

#[test]
fn bad_lines_are_reported_and_guarding_goes_on() {
    let mut g = Command::new(guardian_exe())
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let stdin = g.stdin.as_mut().unwrap();
        stdin
            .write_all(b"manage 1 2\nfly away\nstopped -3\nbeat\n")
            .unwrap();
    }
    let out = g.wait_with_output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ignored `manage 1 2`: `manage` takes 7 fields, got 2"),
        "{err}"
    );
    assert!(err.contains("unknown command `fly`"), "{err}");
    assert!(err.contains("process id -3 must be positive"), "{err}");
}

fn arb_original() -> impl Strategy<Value = Original> {
    (
        1i32..=i32::MAX,
        1i32..=i32::MAX,
        0u32..8,
        0u32..100,
        -20i32..20,
        any::<u64>(),
        prop::collection::vec(0usize..1024, 0..6),
    )
        .prop_map(
            |(tid, tgid, policy, priority, nice, flags, cpus)| Original {
                tid,
                tgid,
                policy,
                priority,
                nice,
                flags,
                cpus,
            },
        )
}

proptest! {
    #[test]
    fn every_line_round_trips(o in arb_original(), pid in 1i32..=i32::MAX) {
        for line in [Line::Manage(o.clone()), Line::Stopped(pid), Line::Resumed(pid), Line::Release(pid), Line::Autogroup(pid % 2 == 0), Line::Beat] {
            prop_assert_eq!(parse(&line.to_string()), Ok(line.clone()));
        }
    }

    #[test]
    fn arbitrary_lines_never_panic(text in ".{0,80}", words in prop::collection::vec("[a-z0-9,-]{0,6}", 0..9)) {
        let _ = parse(&text);
        let _ = parse(&words.join(" "));
        let _ = parse(&format!("manage {}", words.join(" ")));
    }
}
