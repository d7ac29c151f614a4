//! Interrupt sources (`[[interrupt]]`): handlers take the CPU from whatever
//! runs, dispatches wait for them, deferred work runs as a thread, the
//! accounting stays exact, and the same seed gives the same run.

mod common;

use common::{fp_thread, go, tid, under_fp};
use hsched_core::{Duration, Instant};
use hsched_model::{
    Action, Dist, InterruptSpec, Op, RunResult, Scenario, ScriptEvent, SegmentKind,
};
use hsched_sim::{run, SimOptions};

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn source(name: &str, every: Dist, duration: Dist, signal: Option<&str>) -> ScriptEvent {
    ScriptEvent {
        at: Instant::ZERO,
        action: Action::Interrupt(InterruptSpec {
            name: name.into(),
            cpus: vec![0],
            every,
            offset: Duration::ZERO,
            duration,
            signal: signal.map(String::from),
        }),
    }
}

fn hog() -> Vec<Op> {
    vec![Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_millis(10)))],
    }]
}

/// The interrupt segments of CPU 0.
fn handlers(r: &RunResult) -> Vec<(Instant, Instant)> {
    r.trace
        .as_ref()
        .unwrap()
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Interrupt && s.cpu.0 == 0)
        .map(|s| (s.start, s.end))
        .collect()
}

/// busy + overhead + interrupt + idle is the horizon on every CPU, the
/// threads' CPU time is the busy time, and the handlers' segments add up
/// to the interrupt time.
fn accounts(r: &RunResult, scn: &Scenario) {
    for c in &r.cpu_stats {
        assert_eq!(c.busy + c.overhead + c.interrupt + c.idle, scn.horizon);
    }
    let busy: u64 = r.cpu_stats.iter().map(|c| c.busy.as_nanos()).sum();
    let used: u64 = r.threads.iter().map(|t| t.cpu_time.as_nanos()).sum();
    assert_eq!(busy, used);
    let segs: u64 = handlers(r).iter().map(|(a, b)| (*b - *a).as_nanos()).sum();
    assert_eq!(Duration(segs), r.cpu_stats[0].interrupt);
}

#[test]
fn a_periodic_handler_takes_its_share_from_the_running_thread() {
    let scn = under_fp(
        "irq-periodic",
        Duration::from_millis(100),
        vec![fp_thread("hog", 1, hog())],
        vec![source(
            "clock",
            Dist::Fixed(us(1000)),
            Dist::Fixed(us(50)),
            None,
        )],
    );
    let r = go(&scn);
    accounts(&r, &scn);
    // At 1ms, 2ms, ..., 99ms: 99 handlers of 50us.
    assert_eq!(r.cpu_stats[0].interrupts, 99);
    assert_eq!(r.cpu_stats[0].interrupt, us(50 * 99));
    assert_eq!(
        r.threads[0].cpu_time,
        Duration::from_millis(100) - us(50 * 99),
        "the thread is not credited with the handlers' time"
    );
    let h = handlers(&r);
    assert_eq!(h[0], (Instant::ZERO + us(1000), Instant::ZERO + us(1050)));
}

#[test]
fn a_dispatch_waits_for_the_handler() {
    // A periodic thread released at 1ms, when a 200us handler arrived at
    // 900us (the next ones at 1800us, 2700us): it starts at 1100us, its
    // 20us switch then, its 100us of work done at 1220us.
    let mut scn = under_fp(
        "irq-dispatch",
        Duration::from_millis(3),
        vec![
            fp_thread("hog", 1, hog()),
            fp_thread(
                "timer",
                2,
                vec![Op::Periodic {
                    period: Duration::from_millis(10),
                    deadline: Duration::from_millis(10),
                    offset: Duration::from_millis(1),
                    jobs: Some(1),
                    body: vec![Op::Run(Dist::Fixed(us(100)))],
                }],
            ),
        ],
        vec![ScriptEvent {
            at: Instant::ZERO,
            action: Action::Interrupt(InterruptSpec {
                name: "disk".into(),
                cpus: vec![0],
                every: Dist::Fixed(us(900)),
                offset: Duration::ZERO,
                duration: Dist::Fixed(us(200)),
                signal: None,
            }),
        }],
    );
    scn.machine.context_switch = us(20);
    let r = go(&scn);
    accounts(&r, &scn);
    let t = tid(&r, "timer");
    let job = r.jobs.iter().find(|j| j.thread == t).unwrap();
    assert_eq!(job.release, Instant::ZERO + us(1000));
    assert_eq!(job.start, Some(Instant::ZERO + us(1100)));
    assert_eq!(job.finish, Some(Instant::ZERO + us(1220)));
    let lat = &r.threads[t.index()].wakeup_latencies;
    assert_eq!(lat.first().copied(), Some(us(100)), "{lat:?}");
}

#[test]
fn deferred_work_runs_as_a_thread_after_each_handler() {
    // BVT §2.3: the handler's work continues in a thread that waits on a
    // semaphore the handler signals; it runs above the hog under fp.
    let bottom = vec![Op::Loop {
        count: None,
        body: vec![Op::Wait("nic".into()), Op::Run(Dist::Fixed(us(30)))],
    }];
    let scn = under_fp(
        "irq-deferred",
        Duration::from_millis(50),
        vec![fp_thread("hog", 1, hog()), fp_thread("dpc", 2, bottom)],
        vec![source(
            "nic",
            Dist::Exponential {
                mean: Duration::from_millis(2),
                max: Duration::MAX,
            },
            Dist::Uniform {
                min: us(5),
                max: us(15),
            },
            Some("nic"),
        )],
    );
    let r = go(&scn);
    accounts(&r, &scn);
    let n = r.cpu_stats[0].interrupts;
    assert!(n > 10, "{n}");
    let dpc = &r.threads[tid(&r, "dpc").index()];
    // Each handler's work, charged to the thread that did it (a handler
    // arriving within 30us of the previous one may merge with it: a
    // binary semaphore does not count).
    let runs = dpc.cpu_time.as_nanos() / us(30).as_nanos();
    assert!(runs <= n && runs + 3 >= n, "{runs} of {n}");
    // It runs right after each handler returns.
    let h = handlers(&r);
    let trace = r.trace.as_ref().unwrap();
    let (_, end) = h[0];
    assert!(trace.segments.iter().any(|s| s.start == end
        && matches!(s.what, SegmentKind::Run(t) | SegmentKind::Switch(t) if t == dpc.id)));
}

fn poisson_scenario(seed: u64) -> Scenario {
    let mut scn = under_fp(
        "irq-poisson",
        Duration::from_millis(200),
        vec![
            fp_thread("hog", 1, hog()),
            fp_thread("sleeper", 2, common::bursts(true, 3, 5)),
        ],
        vec![source(
            "noise",
            Dist::Exponential {
                mean: us(700),
                max: Duration::MAX,
            },
            Dist::Exponential {
                mean: us(40),
                max: us(400),
            },
            None,
        )],
    );
    scn.seed = seed;
    scn.machine.context_switch = us(7);
    scn.machine.tick = Some(us(976));
    scn
}

#[test]
fn the_same_seed_gives_the_same_trace_byte_for_byte() {
    let scn = poisson_scenario(7);
    let opts = SimOptions {
        trace: true,
        check_invariants: true,
        ..Default::default()
    };
    let json = |r: &RunResult| {
        serde_json::to_string(&(
            &r.trace,
            &r.cpu_stats,
            &r.jobs,
            r.threads.iter().map(|t| t.cpu_time).collect::<Vec<_>>(),
        ))
        .unwrap()
    };
    let a = run(&scn, &opts).unwrap();
    let b = run(&scn, &opts).unwrap();
    accounts(&a, &scn);
    assert!(a.cpu_stats[0].interrupts > 100);
    assert_eq!(json(&a), json(&b));
    let c = run(&poisson_scenario(8), &opts).unwrap();
    assert_ne!(handlers(&a), handlers(&c), "another seed, other arrivals");
}

#[test]
fn a_source_keeps_its_arrivals_when_another_is_added() {
    let mut scn = poisson_scenario(3);
    scn.machine.cpus = 2;
    let alone = go(&scn);
    scn.script.push(ScriptEvent {
        at: Instant::ZERO,
        action: Action::Interrupt(InterruptSpec {
            name: "other".into(),
            cpus: vec![1],
            every: Dist::Fixed(us(300)),
            offset: Duration::ZERO,
            duration: Dist::Fixed(us(10)),
            signal: None,
        }),
    });
    let both = go(&scn);
    accounts(&both, &scn);
    assert_eq!(handlers(&alone), handlers(&both));
    assert_eq!(both.cpu_stats[1].interrupts, 666);
}

#[test]
fn conformance_scenarios_hold_with_interrupts_on_every_cpu() {
    // The invariants of every policy hold when handlers take time from
    // under them at arbitrary moments (`go` runs them after every
    // callback and fails on any ejection).
    for seed in 0..4 {
        let mut scn = poisson_scenario(seed);
        scn.machine.cpus = 2;
        if let Action::Interrupt(spec) = &mut scn.script[0].action {
            spec.cpus = vec![0, 1];
        }
        let r = go(&scn);
        accounts(&r, &scn);
        assert!(r.cpu_stats[1].interrupts > 100);
    }
}
