//! Kernel scheduling events: the `trace_pipe` line parser on the kernel's
//! own text, and (as root) a real thread's blocks and wakeups on every CPU
//! read from a private ftrace instance, with how late the notification
//! comes.

use hsched_live::events::{monotonic_ns, parse, Line, SchedEvent, SchedEvents};
use proptest::prelude::*;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn trace_pipe_lines_parse() {
    let switch = "            sleep-31780   [001] d..2.  5511.207797: sched_switch: prev_comm=sleep prev_pid=31780 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120";
    assert_eq!(
        parse(switch),
        Some(Line::Event(SchedEvent::Switch {
            time_ns: 5_511_207_797_000,
            cpu: 1,
            prev: 31780,
            prev_blocked: true,
            next: 0
        }))
    );
    // Preempted (R+), and a command name with spaces and brackets.
    let preempted = " my worker [x]-77 [000] dN.3. 12.000001: sched_switch: prev_comm=my worker [x] prev_pid=77 prev_prio=120 prev_state=R+ ==> next_comm=a next_pid=78 next_prio=120";
    assert!(matches!(
        parse(preempted),
        Some(Line::Event(SchedEvent::Switch {
            prev: 77,
            prev_blocked: false,
            next: 78,
            cpu: 0,
            time_ns: 12_000_001_000
        }))
    ));
    let waking = "          <idle>-0       [001] d.h3.  5511.221010: sched_waking: comm=sleep pid=31784 prio=120 target_cpu=001";
    assert_eq!(
        parse(waking),
        Some(Line::Event(SchedEvent::Wakeup {
            time_ns: 5_511_221_010_000,
            cpu: 1,
            tid: 31784
        }))
    );
    assert_eq!(parse("CPU:1 [LOST 42 EVENTS]"), Some(Line::Lost(42)));
    assert_eq!(
        parse("bash-1 [000] .... 1.000000: sched_stat_runtime: comm=x pid=1"),
        None
    );
    assert_eq!(parse(""), None);
    assert_eq!(parse("x-1 [000] .... notatime: sched_waking: pid=3"), None);
}

proptest! {
    #[test]
    fn arbitrary_lines_never_panic(
        comm in ".{0,12}",
        cpu in "[0-9a-z]{0,4}",
        stamp in "[0-9.:]{0,14}",
        name in prop_oneof![Just("sched_switch"), Just("sched_waking"), Just("sched_wakeup_new"), Just("x")],
        fields in "[a-z_=0-9 +]{0,60}",
    ) {
        let _ = parse(&format!("{comm} [{cpu}] d..2. {stamp} {name}: {fields}"));
        let _ = parse(&format!("CPU:{cpu} [LOST {fields} EVENTS]"));
    }
}

/// Percentile `p` (0..=100) of sorted samples.
fn pct(sorted: &[u64], p: usize) -> u64 {
    sorted[(sorted.len() - 1) * p / 100]
}

/// A thread pinned to `cpu` sleeps 3ms 40 times: the reader must see its
/// 40 blocks and 40 wakeups.
fn blocks_and_wakeups_on(cpu: usize) {
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let tid = Arc::new(AtomicI32::new(0));
    let sleeper = {
        let tid = tid.clone();
        std::thread::spawn(move || {
            hsched_live::sys::set_affinity(0, &[cpu]).unwrap();
            // SAFETY: gettid has no arguments.
            tid.store(unsafe { libc::gettid() }, Ordering::SeqCst);
            let _ = go_rx.recv();
            for _ in 0..40 {
                std::thread::sleep(Duration::from_millis(3));
            }
        })
    };
    while tid.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let me = tid.load(Ordering::SeqCst);
    let opened = SchedEvents::open(&[me])
        .map_err(|e| format!("cannot record sched events ({e}); run as root"));
    let Some(mut events) = hsched_testkit::require("tracefs (root)", opened) else {
        let _ = go_tx.send(());
        sleeper.join().unwrap();
        return;
    };
    go_tx.send(()).unwrap();
    let (mut blocks, mut wakeups) = (0, 0);
    let mut delays = Vec::new();
    let mut seen = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) && (blocks < 40 || wakeups < 40) {
        if !events.wait(Duration::from_millis(50)).unwrap() {
            continue;
        }
        seen.clear();
        events.drain(&mut seen).unwrap();
        let now = monotonic_ns();
        for e in &seen {
            match *e {
                SchedEvent::Switch {
                    prev,
                    prev_blocked: true,
                    cpu: c,
                    ..
                } if prev == me => {
                    assert_eq!(c as usize, cpu);
                    blocks += 1;
                }
                SchedEvent::Wakeup { tid, .. } if tid == me => wakeups += 1,
                _ => continue,
            }
            delays.push(now.saturating_sub(e.time_ns()));
        }
        assert!(
            seen.windows(2).all(|w| w[0].time_ns() <= w[1].time_ns()),
            "out of order"
        );
    }
    sleeper.join().unwrap();
    // 40 sleeps, plus the wait for the go signal.
    assert!(blocks >= 40, "CPU {cpu}: saw {blocks} blocks of 40");
    assert!(wakeups >= 40, "CPU {cpu}: saw {wakeups} wakeups of 40");
    assert_eq!(events.lost, 0);
    delays.sort_unstable();
    eprintln!(
        "CPU {cpu}: notification delay over {} events: p50 {} us, p99 {} us, max {} us",
        delays.len(),
        pct(&delays, 50) / 1000,
        pct(&delays, 99) / 1000,
        delays.last().unwrap() / 1000
    );
    // Stamped with CLOCK_MONOTONIC: a stamp seconds away would be another
    // clock.
    assert!(pct(&delays, 50) < 1_000_000_000);
}

#[test]
fn a_sleeping_thread_s_blocks_and_wakeups_arrive_on_every_cpu() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    for cpu in 0..cpus {
        blocks_and_wakeups_on(cpu);
    }
}

#[test]
fn the_private_instance_is_removed_with_the_reader() {
    // SAFETY: gettid has no arguments.
    let me = unsafe { libc::gettid() };
    let opened = SchedEvents::open(&[me])
        .map_err(|e| format!("cannot record sched events ({e}); run as root"));
    let events = hsched_testkit::require!("tracefs (root)", opened);
    let dir = events.instance().to_path_buf();
    assert!(dir.is_dir());
    drop(events);
    assert!(!dir.exists(), "{} left behind", dir.display());
}
