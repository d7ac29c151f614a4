//! Vassal end to end (Candea & Jones, §3-§5): a loaded scheduler (`rtwake`)
//! over the default one under an `fp` root; threads join it by message,
//! ask for precise wakeups, and return to the default on `leave` or when it
//! is unloaded, with nothing lost. When rtwake has nothing due it declines
//! and the default decides; a thread it is not waking can still be run by
//! the default through rtwake's VP under it.

mod common;

use common::{go, replies};
use hsched_core::{Duration, Instant, Msg, Params, Value};
use hsched_model::{
    Action, Dist, JobRecord, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario,
    SchedulerSpec, ScriptEvent, SegmentKind, Target, ThreadSpec,
};

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}
fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
fn at_ms(n: u64) -> Instant {
    Instant::ZERO + ms(n)
}

fn to_rt(msg: Msg) -> Op {
    Op::Msg {
        to: Target::Named("rt".into()),
        msg,
    }
}
fn run(d: Duration) -> Op {
    Op::Run(Dist::Fixed(d))
}

fn thread(name: &str, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: "default".into(),
        params: Params::new(),
        arrival: Instant::ZERO,
        program: Program::new(ops),
        needs: None,
    }
}

/// A CPU-bound thread under the default scheduler.
fn load() -> ThreadSpec {
    thread(
        "load",
        vec![Op::Loop {
            count: None,
            body: vec![run(ms(100))],
        }],
    )
}

fn link(parent: &str, prio: Option<i64>) -> ParentLink {
    ParentLink {
        parent: parent.into(),
        vps: 1,
        params: prio.map_or_else(Params::new, |p| Params::new().with("prio", Value::Int(p))),
    }
}

/// One CPU: an `fp` root over `rt` (rtwake, high) and `default` (rr, low);
/// with `background`, rt also holds a VP under the default scheduler.
fn vassal(background: bool, tick: Option<Duration>, threads: Vec<ThreadSpec>) -> Scenario {
    let mut rt_links = vec![link("root", Some(10))];
    let mut rt_params = Params::new();
    if background {
        rt_links.push(link("default", None));
        rt_params.set("background_vps", Value::Int(1));
    }
    Scenario {
        name: "vassal".into(),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick,
            watchdog: None,
        },
        horizon: ms(100),
        seed: 1,
        schedulers: vec![
            SchedulerSpec {
                name: "root".into(),
                policy: "fp".into(),
                params: Params::new(),
                parents: vec![],
            },
            SchedulerSpec {
                name: "default".into(),
                policy: "rr".into(),
                params: Params::new(),
                parents: vec![link("root", Some(0))],
            },
            SchedulerSpec {
                name: "rt".into(),
                policy: "rtwake".into(),
                params: rt_params,
                parents: rt_links,
            },
        ],
        default_scheduler: "default".into(),
        threads,
        script: vec![],
    }
}

fn jobs<'a>(r: &'a RunResult, name: &str) -> Vec<&'a JobRecord> {
    let t = common::tid(r, name);
    r.jobs.iter().filter(|j| j.thread == t).collect()
}

fn cpu(r: &RunResult, name: &str) -> Duration {
    r.threads.iter().find(|t| t.name == name).unwrap().cpu_time
}

/// The timer thread of the story: joins rt, 20 periodic 1ms wakeups from
/// 10ms doing 50us of work each, leaves, and runs 5ms under the default.
fn timer() -> ThreadSpec {
    let set = Msg::new("set")
        .arg("at", Value::Duration(ms(10)))
        .arg("period", Value::Duration(ms(1)));
    thread(
        "timer",
        vec![
            to_rt(Msg::new("join")),
            to_rt(set),
            Op::Loop {
                count: Some(19),
                body: vec![run(us(50)), to_rt(Msg::new("wait"))],
            },
            run(us(50)),
            to_rt(Msg::new("leave")),
            run(ms(5)),
        ],
    )
}

#[test]
fn the_vassal_story_join_wake_exactly_decline_and_leave() {
    for tick in [None, Some(Duration::from_nanos(976_562))] {
        let r = go(&vassal(true, tick, vec![load(), timer()]));
        let tag = format!("tick {tick:?}");
        // Every message was answered at once and accepted.
        let answers = replies(&r, "timer");
        assert_eq!(answers.len(), 22, "{tag}: join, set, 19 waits, leave");
        assert!(
            answers.iter().all(|e| e.kind == LogKind::Reply),
            "{tag}: {answers:#?}"
        );
        // Each wakeup is a job: dispatched exactly at its time.
        let js = jobs(&r, "timer");
        assert_eq!(js.len(), 20, "{tag}");
        for (k, j) in js.iter().enumerate() {
            assert_eq!(j.release, at_ms(10 + k as u64), "{tag}");
            assert_eq!(j.start, Some(j.release), "{tag}: wakeup {k} not exact");
            assert_eq!(j.lateness_ns(), Some(0), "{tag}");
        }
        // It left: back under the default, where it finished its program.
        let t = r.threads.iter().find(|t| t.name == "timer").unwrap();
        assert_eq!(t.scheduler, "default", "{tag}");
        assert!(t.exit.is_some(), "{tag}: the timer thread finished");
        assert_eq!(cpu(&r, "timer"), us(20 * 50) + ms(5), "{tag}: nothing lost");
        // Between wakeups rtwake declined and the default ran `load`; the
        // only idle time is rtwake's spins.
        let idle = r.cpu_stats[0].idle;
        assert_eq!(cpu(&r, "load") + cpu(&r, "timer") + idle, ms(100), "{tag}");
        match tick {
            // Without a tick each spin lasts the latency, 20us.
            None => {
                assert_eq!(idle, us(20 * 20), "{tag}");
                assert_eq!(cpu(&r, "load"), ms(100) - ms(6) - us(400), "{tag}");
            }
            // With one, from the tick before `W - latency`: at most a tick more.
            Some(t) => assert!(idle <= (us(20) + t).checked_mul(20).unwrap(), "{tag}"),
        }
        // No thread ran during a spin: the trace shows idle right before
        // each wakeup.
        let trace = r.trace.as_ref().unwrap();
        for j in &js {
            let before = trace
                .segments
                .iter()
                .find(|s| s.end == j.release && s.start < j.release)
                .unwrap();
            assert_eq!(before.what, SegmentKind::Idle, "{tag}: {before:?}");
        }
    }
}

#[test]
fn refusals_come_at_once_and_leave_the_thread_to_the_default() {
    let first = Msg::new("set").arg("at", Value::Duration(ms(10)));
    let close = Msg::new("set").arg("at", Value::Duration(ms(10) + us(10)));
    let soon = Msg::new("set").arg("in", Value::Duration(us(5)));
    let a = thread("a", vec![to_rt(Msg::new("join")), to_rt(first), run(ms(1))]);
    let b = thread(
        "b",
        vec![
            to_rt(Msg::new("join")),
            to_rt(close),
            to_rt(soon),
            run(ms(2)),
        ],
    );
    let r = go(&vassal(true, None, vec![load(), a, b]));
    let answers = replies(&r, "b");
    assert_eq!(answers.len(), 3);
    assert!(
        answers.iter().all(|e| e.at == Instant::ZERO),
        "told at once"
    );
    assert!(
        answers[1]
            .text
            .contains("collides with the wakeup promised to thread1"),
        "{:#?}",
        answers[1]
    );
    assert!(
        answers[2].text.contains("closer than rtwake's latency"),
        "{:#?}",
        answers[2]
    );
    // b was refused, so it is an ordinary thread: the default runs it
    // (through rt's VP under it) in turn with `load`, 10ms quanta.
    assert!(jobs(&r, "b").is_empty());
    assert_eq!(cpu(&r, "b"), ms(2));
    let b = r.threads.iter().find(|t| t.name == "b").unwrap();
    assert!(b.exit.is_some_and(|e| e < at_ms(20)), "{b:?}");
    assert_eq!(jobs(&r, "a")[0].start, Some(at_ms(10)));
}

#[test]
fn a_thread_rtwake_is_not_waking_is_run_by_the_default_among_its_own() {
    let joined = thread(
        "joined",
        vec![
            to_rt(Msg::new("join")),
            Op::Loop {
                count: None,
                body: vec![run(ms(100))],
            },
        ],
    );
    // With a VP under the default, rr shares the CPU between `load` and rt's
    // free thread (10ms quanta over 100ms).
    let r = go(&vassal(true, None, vec![load(), joined.clone()]));
    assert_eq!(cpu(&r, "joined"), ms(50));
    assert_eq!(cpu(&r, "load"), ms(50));
    assert_eq!(r.threads[1].scheduler, "rt");
    // Without one, a free thread runs at rt's precedence: under the fp root
    // it keeps the default from running, as any high-priority thread would.
    let r = go(&vassal(false, None, vec![load(), joined]));
    assert_eq!(cpu(&r, "joined"), ms(100));
    assert_eq!(cpu(&r, "load"), Duration::ZERO);
}

#[test]
fn unloading_rtwake_returns_its_threads_to_the_default_with_nothing_lost() {
    let later = Msg::new("set").arg("at", Value::Duration(ms(60)));
    let waiting = thread(
        "waiting",
        vec![to_rt(Msg::new("join")), to_rt(later), run(ms(3))],
    );
    let free = thread("free", vec![to_rt(Msg::new("join")), run(ms(30))]);
    let mut scn = vassal(true, None, vec![load(), waiting, free]);
    scn.script = vec![ScriptEvent {
        at: at_ms(20),
        action: Action::Unload("rt".into()),
    }];
    let r = go(&scn);
    for name in ["waiting", "free"] {
        let t = r.threads.iter().find(|t| t.name == name).unwrap();
        assert_eq!(t.scheduler, "default", "{name}");
        assert!(t.exit.is_some(), "{name} finished its program");
        assert!(
            r.log.iter().any(|e| e.kind == LogKind::Moved
                && e.text == format!("thread `{name}` returned to the default scheduler")),
            "{name}: {:#?}",
            r.log
        );
    }
    assert_eq!(cpu(&r, "waiting"), ms(3));
    assert_eq!(cpu(&r, "free"), ms(30));
    // The promise died with the scheduler: the default ran `waiting` as soon
    // as it had it, before its time, and the wakeup job shows it.
    let j = jobs(&r, "waiting");
    assert_eq!(j.len(), 1);
    assert!(j[0].start.unwrap() >= at_ms(20) && j[0].start.unwrap() < at_ms(60));
    assert!(j[0].lateness_ns().unwrap() < 0);
    let idle = r.cpu_stats[0].idle;
    assert_eq!(cpu(&r, "load") + ms(33) + idle, ms(100));
    assert!(!r.nodes.iter().find(|n| n.name == "rt").unwrap().alive);
}

mod random {
    use super::*;
    use proptest::prelude::*;

    /// A thread that joins rt and, forever, works a random while and asks
    /// to be woken `delay` later (a `wait` on a period when `period`).
    fn waker(i: usize, delay_us: u64, work_us: (u64, u64), period: bool) -> ThreadSpec {
        let work = Op::Run(Dist::Uniform {
            min: us(work_us.0),
            max: us(work_us.0 + work_us.1),
        });
        let first = Msg::new("set").arg("in", Value::Duration(us(delay_us)));
        let (first, again) = if period {
            let p = first.arg("period", Value::Duration(us(delay_us)));
            (p, Msg::new("wait"))
        } else {
            (first.clone(), first)
        };
        thread(
            &format!("w{i}"),
            vec![
                to_rt(Msg::new("join")),
                to_rt(first),
                Op::Loop {
                    count: None,
                    body: vec![work, to_rt(again)],
                },
            ],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Through the whole dispatcher (fp root, default rr, context
        /// switches): no wakeup is ever dispatched before its time, and every
        /// accepted one is dispatched exactly at it, with or without a tick.
        #[test]
        fn accepted_wakeups_are_exact_and_never_early(
            seed in 0u64..1_000,
            tick_us in prop_oneof![Just(0u64), Just(1_000), Just(977)],
            latency_us in 0u64..60,
            cs_us in 0u64..30,
            wakers in proptest::collection::vec(
                (1u64..3_000, (1u64..400, 0u64..400), any::<bool>()), 1..4),
        ) {
            let threads = std::iter::once(load())
                .chain(wakers.iter().enumerate().map(|(i, &(d, w, p))| waker(i, d, w, p)))
                .collect();
            let mut scn = vassal(true, (tick_us > 0).then(|| us(tick_us)), threads);
            scn.seed = seed;
            scn.horizon = ms(60);
            scn.machine.context_switch = us(cs_us);
            scn.schedulers[2].params.set("latency", Value::Duration(us(latency_us)));
            let r = go(&scn);
            let horizon = Instant::ZERO + scn.horizon;
            let mut woken = 0;
            for j in r.jobs.iter().filter(|j| j.release < horizon) {
                prop_assert_eq!(j.start, Some(j.release), "{:?}", j);
                woken += 1;
            }
            // Some wakeup was accepted unless every one was too close.
            if wakers.iter().any(|w| w.0 >= latency_us) {
                prop_assert!(woken > 0);
            }
        }
    }
}
