//! `dbs` end to end: threads reserve with `Op::Msg`, admission answers at
//! once, accepted reservations are met, leftover time is shared; with
//! `overrun` (default) a served thread that goes on runs before the round
//! robin. The tests written before `overrun` run with it off and on: their
//! outcomes do not depend on it.

use hsched_core::{Duration, Instant, Msg, Params, ThreadId, Value};
use hsched_model::{
    Dist, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec,
    SegmentKind, Target, ThreadSpec,
};
use proptest::prelude::*;

mod common;
use common::{go, replies, tid};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Instant {
    Instant::ZERO + ms(x)
}

fn forever() -> Op {
    Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(100)))],
    }
}

/// `reserve { start, amount, deadline }`, absolute times.
fn reserve(start: Duration, amount: Duration, deadline: Duration) -> Op {
    Op::Msg {
        to: Target::Parent,
        msg: Msg::new("reserve")
            .arg("start", Value::Duration(start))
            .arg("amount", Value::Duration(amount))
            .arg("deadline", Value::Duration(deadline)),
    }
}

fn thread(name: &str, parent: &str, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: parent.into(),
        params: Params::new(),
        arrival: Instant::ZERO,
        program: Program::new(ops),
        needs: None,
    }
}

fn root(name: &str, policy: &str) -> SchedulerSpec {
    SchedulerSpec {
        name: name.into(),
        policy: policy.into(),
        params: Params::new(),
        parents: vec![],
    }
}

/// A root `dbs` with `overrun` set.
fn dbs(overrun: bool) -> SchedulerSpec {
    SchedulerSpec {
        params: Params::new().with("overrun", Value::Bool(overrun)),
        ..root("dbs", "dbs")
    }
}

/// A root `dbs` with `overrun` and slack stealing (`steal`) set.
fn dbs_stealing(steal: bool) -> SchedulerSpec {
    SchedulerSpec {
        params: Params::new()
            .with("overrun", Value::Bool(true))
            .with("steal", Value::Bool(steal)),
        ..root("dbs", "dbs")
    }
}

fn scenario(
    cpus: u32,
    horizon: Duration,
    scheds: Vec<SchedulerSpec>,
    threads: Vec<ThreadSpec>,
) -> Scenario {
    Scenario {
        name: "dbs".into(),
        description: String::new(),
        machine: Machine {
            cpus,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon,
        seed: 7,
        default_scheduler: scheds[0].name.clone(),
        schedulers: scheds,
        threads,
        script: vec![],
    }
}

/// CPU time `t` received in [a, b).
fn ran(r: &RunResult, t: ThreadId, a: Instant, b: Instant) -> Duration {
    let trace = r.trace.as_ref().unwrap();
    let ns = trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t) && s.start < b && s.end > a)
        .map(|s| (s.end.min(b) - s.start.max(a)).as_nanos())
        .sum();
    Duration(ns)
}

#[test]
fn threads_reserve_and_get_their_amounts_or_a_reason() {
    let threads = vec![
        thread(
            "r1",
            "dbs",
            vec![reserve(ms(100), ms(30), ms(200)), forever()],
        ),
        thread(
            "r2",
            "dbs",
            vec![reserve(ms(100), ms(70), ms(180)), forever()],
        ),
        // [100ms, 200ms] is now full.
        thread(
            "r3",
            "dbs",
            vec![reserve(ms(150), ms(1), ms(200)), forever()],
        ),
        thread("cont", "dbs", vec![forever()]),
    ];
    for overrun in [false, true] {
        threads_reserve_in(&scenario(1, ms(400), vec![dbs(overrun)], threads.clone()));
    }
}

fn threads_reserve_in(scn: &Scenario) {
    let r = go(scn);
    let r1 = replies(&r, "r1");
    assert_eq!(r1.len(), 1);
    assert_eq!(r1[0].kind, LogKind::Reply);
    assert!(r1[0].text.contains("ok: id=0"), "{}", r1[0].text);
    assert_eq!(replies(&r, "r2")[0].kind, LogKind::Reply);
    let r3 = replies(&r, "r3");
    assert_eq!(r3[0].kind, LogKind::Refused);
    assert!(r3[0].text.contains("[t=100ms, t=200ms]"), "{}", r3[0].text);
    // Both reservations are met exactly: r2 first (earlier deadline).
    assert_eq!(ran(&r, tid(&r, "r2"), at(100), at(170)), ms(70));
    assert_eq!(ran(&r, tid(&r, "r1"), at(170), at(200)), ms(30));
    // Leftover time is round-robin among all four.
    for name in ["r1", "r2", "r3", "cont"] {
        let got = ran(&r, tid(&r, name), at(200), at(400));
        assert_eq!(got, ms(50), "{name}");
    }
}

/// A periodic job of 10ms every 50ms among `hogs` CPU-bound threads,
/// reserving each job (relative times) or not.
fn periodic(
    reserving: bool,
    hogs: usize,
    cpus: u32,
    scheds: Vec<SchedulerSpec>,
    under: &str,
) -> Scenario {
    let mut body = Vec::new();
    if reserving {
        body.push(Op::Msg {
            to: Target::Parent,
            msg: Msg::new("reserve")
                .arg("amount", Value::Duration(ms(10)))
                .arg("deadline", Value::Duration(ms(40)))
                .arg("relative", Value::Bool(true)),
        });
    }
    body.push(Op::Run(Dist::Fixed(ms(10))));
    let mut threads = vec![thread(
        "rt",
        under,
        vec![Op::Periodic {
            period: ms(50),
            deadline: ms(40),
            offset: ms(3),
            jobs: None,
            body,
        }],
    )];
    for i in 0..hogs {
        threads.push(thread(&format!("hog{i}"), under, vec![forever()]));
    }
    scenario(cpus, Duration::from_secs(2), scheds, threads)
}

fn misses(r: &RunResult) -> usize {
    let end = Instant::ZERO + r.horizon;
    r.jobs.iter().filter(|j| j.missed(end)).count()
}

#[test]
fn reserved_periodic_jobs_meet_their_deadlines_where_round_robin_does_not() {
    for overrun in [false, true] {
        periodic_jobs_with(overrun);
    }
}

fn periodic_jobs_with(overrun: bool) {
    let r = go(&periodic(true, 5, 1, vec![dbs(overrun)], "dbs"));
    assert!(r.jobs.len() >= 39);
    assert_eq!(misses(&r), 0);
    assert!(replies(&r, "rt").iter().all(|e| e.kind == LogKind::Reply));
    let unreserved = go(&periodic(false, 5, 1, vec![dbs(overrun)], "dbs"));
    assert!(misses(&unreserved) > 10, "{}", misses(&unreserved));
    // The hogs share the rest evenly.
    let hog = |i: usize| {
        r.threads
            .iter()
            .find(|t| t.name == format!("hog{i}"))
            .unwrap()
            .cpu_time
    };
    for i in 1..5 {
        assert!(hog(i).max(hog(0)) - hog(i).min(hog(0)) <= ms(10));
    }
}

#[test]
fn dbs_in_the_middle_and_on_several_cpus() {
    for overrun in [false, true] {
        in_the_middle_with(overrun);
    }
}

fn in_the_middle_with(overrun: bool) {
    let middle = vec![
        root("root", "fp"),
        SchedulerSpec {
            name: "dbs".into(),
            policy: "dbs".into(),
            params: Params::new()
                .with("quantum", Value::Duration(ms(5)))
                .with("overrun", Value::Bool(overrun)),
            parents: vec![ParentLink {
                parent: "root".into(),
                vps: 2,
                params: Params::new().with("prio", Value::Int(10)),
            }],
        },
    ];
    for (cpus, scheds) in [(2, middle), (3, vec![dbs(overrun)])] {
        let r = go(&periodic(true, 7, cpus, scheds, "dbs"));
        assert_eq!(misses(&r), 0, "{cpus} CPUs");
        for c in &r.cpu_stats {
            assert_eq!(c.idle, Duration::ZERO, "{}", c.cpu);
        }
    }
}

#[test]
fn cancel_and_a_deadline_end_reservations() {
    let cancel = Op::Msg {
        to: Target::Parent,
        msg: Msg::new("cancel"),
    };
    let threads = vec![
        // Reserves 50ms of [0, 100], runs 5ms of it, cancels.
        thread(
            "quitter",
            "dbs",
            vec![
                reserve(ms(0), ms(50), ms(100)),
                Op::Run(Dist::Fixed(ms(5))),
                cancel,
                forever(),
            ],
        ),
        // Reserves 80ms of [0, 200] but sleeps through most of its window.
        thread(
            "sleeper",
            "dbs",
            vec![
                reserve(ms(0), ms(80), ms(200)),
                Op::Sleep(Dist::Fixed(ms(170))),
                forever(),
            ],
        ),
        thread("cont", "dbs", vec![forever()]),
    ];
    for overrun in [false, true] {
        cancel_and_deadline_in(&scenario(1, ms(400), vec![dbs(overrun)], threads.clone()));
    }
}

fn cancel_and_deadline_in(scn: &Scenario) {
    let r = go(scn);
    let q = replies(&r, "quitter");
    assert_eq!(q.len(), 2);
    assert!(q[1].text.contains("ok: dropped=1"), "{}", q[1].text);
    assert_eq!(ran(&r, tid(&r, "quitter"), at(0), at(5)), ms(5));
    // After the cancel, the CPU is shared round-robin until the sleeper
    // wakes at 170ms; its 80ms are not all served by 200ms: it runs
    // reserved to the deadline, then as leftover.
    let s = tid(&r, "sleeper");
    assert_eq!(ran(&r, s, at(170), at(200)), ms(30));
    let after = ran(&r, s, at(200), at(400));
    assert!(after <= ms(70), "{after}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Threads that stay runnable and reserve (s, t, d) at random moments:
    /// each accepted reservation gets its amount within its window.
    #[test]
    fn accepted_reservations_are_met_end_to_end(
        plans in proptest::collection::vec(
            (0u64..200, proptest::collection::vec((0u64..40, 0u64..100, 1u64..30, 1u64..150), 1..6)),
            1..4,
        ),
        cpus in 1u32..3,
        overrun in any::<bool>(),
        steal in any::<bool>(),
    ) {
        let mut threads = Vec::new();
        // (thread, start, amount, deadline) requested, in each thread's order.
        let mut asked: Vec<Vec<(Duration, Duration, Duration)>> = Vec::new();
        for (i, (arrival, reqs)) in plans.iter().enumerate() {
            let mut ops = Vec::new();
            let mut mine = Vec::new();
            let mut t = *arrival;
            for &(run, lead, amount, len) in reqs {
                ops.push(Op::Run(Dist::Fixed(ms(run + 1))));
                t += run + 1;
                let (s, d) = (ms(t + lead), ms(t + lead + len));
                ops.push(reserve(s, ms(amount), d));
                mine.push((s, ms(amount), d));
            }
            ops.push(forever());
            threads.push(ThreadSpec {
                arrival: at(*arrival),
                ..thread(&format!("r{i}"), "dbs", ops)
            });
            asked.push(mine);
        }
        threads.push(thread("cont", "dbs", vec![forever()]));
        let sched = if overrun { dbs_stealing(steal) } else { dbs(false) };
        let r = go(&scenario(cpus, ms(1_500), vec![sched], threads));
        for (i, mine) in asked.iter().enumerate() {
            let name = format!("r{i}");
            let answers = replies(&r, &name);
            let t = tid(&r, &name);
            // The requests a thread made before the horizon, with their answers.
            let accepted: Vec<(Instant, Duration, Instant)> = answers
                .iter()
                .zip(mine)
                .filter(|(e, _)| e.kind == LogKind::Reply)
                .map(|(e, &(s, amount, d))| ((Instant::ZERO + s).max(e.at), amount, Instant::ZERO + d))
                .collect();
            for &(a, _, _) in &accepted {
                for &(_, _, b) in &accepted {
                    if b <= a || b > Instant::ZERO + r.horizon {
                        continue;
                    }
                    let need = accepted
                        .iter()
                        .filter(|x| x.0 >= a && x.2 <= b)
                        .map(|x| x.1)
                        .fold(Duration::ZERO, |x, y| x + y);
                    let got = ran(&r, t, a, b);
                    prop_assert!(got >= need, "{} ran {} in [{}, {}], needs {}", name, got, a, b, need);
                }
            }
        }
    }
}

#[test]
fn with_a_tick_windows_and_horizons_act_at_tick_boundaries() {
    for (tick, overrun) in [ms(1), Duration::from_micros(700)]
        .into_iter()
        .flat_map(|t| [(t, false), (t, true)])
    {
        let mut scn = periodic(true, 5, 1, vec![dbs(overrun)], "dbs");
        scn.machine.tick = Some(tick);
        let r = go(&scn);
        assert_eq!(misses(&r), 0, "tick {tick}, overrun {overrun}");
        assert!(replies(&r, "rt").iter().all(|e| e.kind == LogKind::Reply));
    }
}

/// `under` reserves 20ms of [0, 100ms] but needs 30ms, then sleeps; `rt`
/// reserves each 10ms job of a 50ms period (deadline 40ms, from 3ms);
/// `cont` is a batch thread.
fn under_predicted(overrun: bool) -> RunResult {
    let mut scn = periodic(true, 0, 1, vec![dbs(overrun)], "dbs");
    scn.horizon = ms(500);
    let under = vec![
        reserve(ms(0), ms(20), ms(100)),
        Op::Run(Dist::Fixed(ms(30))),
        Op::Sleep(Dist::Fixed(Duration::from_secs(10))),
    ];
    scn.threads.insert(0, thread("under", "dbs", under));
    scn.threads.push(thread("cont", "dbs", vec![forever()]));
    go(&scn)
}

#[test]
fn an_under_predicting_thread_finishes_before_the_batch_thread_runs() {
    let r = [under_predicted(false), under_predicted(true)];
    let (under, cont) = (tid(&r[1], "under"), tid(&r[1], "cont"));
    // With overrun: rt's first job preempts under's reservation (3..13ms,
    // deadline 43ms), under is served at 30ms and runs its extra 10ms at
    // once, ahead of cont; rt meets every deadline all the same.
    assert_eq!(ran(&r[1], under, at(0), at(40)), ms(30));
    assert_eq!(ran(&r[1], cont, at(0), at(40)), Duration::ZERO);
    // Without: served at 30ms, under takes turns with cont.
    assert_eq!(ran(&r[0], under, at(0), at(40)), ms(20));
    assert_eq!(ran(&r[0], cont, at(0), at(40)), ms(10));
    for r in &r {
        assert!(r.jobs.len() >= 9);
        assert_eq!(misses(r), 0);
        assert!(replies(r, "rt").iter().all(|e| e.kind == LogKind::Reply));
        assert_eq!(ran(r, tid(r, "under"), at(0), at(500)), ms(30));
    }
}

#[test]
fn an_overrunning_thread_does_not_delay_another_reservation() {
    // `hog` reserves 5ms of [0, 200ms] and never stops: it overruns all
    // of [5ms, 200ms] except what rt's reservations need.
    let mut scn = periodic(true, 0, 1, vec![dbs(true)], "dbs");
    scn.horizon = ms(400);
    let hog = vec![reserve(ms(0), ms(5), ms(200)), forever()];
    scn.threads.insert(0, thread("hog", "dbs", hog));
    scn.threads.push(thread("cont", "dbs", vec![forever()]));
    let r = go(&scn);
    assert_eq!(misses(&r), 0);
    let (hog, rt, cont) = (tid(&r, "hog"), tid(&r, "rt"), tid(&r, "cont"));
    // rt's 10ms of each 50ms period (4 jobs released before 200ms) and the
    // hog's overrun fill [0, 200ms]: cont waits for the hog's deadline.
    assert_eq!(ran(&r, rt, at(0), at(200)), ms(40));
    assert_eq!(ran(&r, hog, at(0), at(200)), ms(160));
    assert_eq!(ran(&r, cont, at(0), at(200)), Duration::ZERO);
    assert!(ran(&r, cont, at(200), at(400)) >= ms(80));
}

/// `under` reserves 20ms of [0, 40ms] but needs 25ms; `late` reserves 50ms
/// of [0, 100ms] and runs on; `cont` is a batch thread.
fn short_of_slack(steal: bool) -> RunResult {
    let threads = vec![
        thread(
            "under",
            "dbs",
            vec![
                reserve(ms(0), ms(20), ms(40)),
                Op::Run(Dist::Fixed(ms(25))),
                Op::Sleep(Dist::Fixed(Duration::from_secs(10))),
            ],
        ),
        thread(
            "late",
            "dbs",
            vec![reserve(ms(0), ms(50), ms(100)), forever()],
        ),
        thread("cont", "dbs", vec![forever()]),
    ];
    go(&scenario(1, ms(200), vec![dbs_stealing(steal)], threads))
}

#[test]
fn slack_stealing_lets_an_under_predicting_thread_finish_first() {
    let [plain, stealing] = [short_of_slack(false), short_of_slack(true)];
    let (under, late) = (tid(&plain, "under"), tid(&plain, "late"));
    // Without stealing, under's overrun waits for late's whole amount
    // (20..70ms), past its own deadline.
    assert_eq!(ran(&plain, under, at(0), at(40)), ms(20));
    // With it, the slack at 20ms is 100 - 20 - 50 = 30ms: under runs its
    // last 5ms at once, and late still gets its 50ms by 100ms.
    assert_eq!(ran(&stealing, under, at(0), at(40)), ms(25));
    assert_eq!(ran(&stealing, under, at(20), at(25)), ms(5));
    for r in [&plain, &stealing] {
        assert!(ran(r, late, at(0), at(100)) >= ms(50));
    }
}

#[test]
fn a_new_reservation_ends_a_steal_that_would_starve_it() {
    // `thief` reserves 5ms of [0, 30ms] and never stops: from 5ms it
    // steals the slack late leaves (100 - 5 - 50 = 45ms), to its deadline.
    // At 20ms rt reserves 30ms of [20, 60ms]: admitted against the
    // reservations alone, it leaves no slack, so the steal must end then
    // (left to 30ms, it would make late miss 100ms).
    let threads = vec![
        thread(
            "thief",
            "dbs",
            vec![reserve(ms(0), ms(5), ms(30)), forever()],
        ),
        thread(
            "late",
            "dbs",
            vec![reserve(ms(0), ms(50), ms(100)), forever()],
        ),
        thread(
            "rt",
            "dbs",
            vec![
                Op::Sleep(Dist::Fixed(ms(20))),
                reserve(ms(20), ms(30), ms(60)),
                forever(),
            ],
        ),
    ];
    let r = go(&scenario(1, ms(200), vec![dbs_stealing(true)], threads));
    assert!(replies(&r, "rt").iter().all(|e| e.kind == LogKind::Reply));
    let (thief, late, rt) = (tid(&r, "thief"), tid(&r, "late"), tid(&r, "rt"));
    assert_eq!(ran(&r, thief, at(5), at(20)), ms(15));
    assert!(ran(&r, rt, at(20), at(60)) >= ms(30));
    assert!(ran(&r, late, at(0), at(100)) >= ms(50));
    assert_eq!(ran(&r, thief, at(20), at(100)), Duration::ZERO);
}
