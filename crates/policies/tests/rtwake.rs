//! `rtwake` through the testkit harness (Vassal §5): refusals told at once
//! with the reason, exact wakeups with and without a tick, declining when
//! nothing is due, background VPs offering free threads to the default,
//! leaving, preemption by a later wakeup, the per-wakeup quantum, periodic
//! wakeups, and a property test: random `set` sequences are never early and
//! always exact.

use hsched_core::{
    ChildId, CpuId, Dispatch, Duration, Instant, Msg, Params, ParentVp, Reply, Scheduler, Sender,
    ThreadId, Value, VpState,
};
use hsched_dispatch::testkit::{Harness, Host, Parent};
use hsched_policies::rtwake::{RtWake, DEFAULT_LATENCY, DEFAULT_QUANTUM};
use proptest::prelude::*;

/// rtwake's one timer.
const TIMER: u64 = 0;

fn since_zero(t: Instant) -> Duration {
    t.saturating_since(Instant::ZERO)
}

const L: Duration = DEFAULT_LATENCY;

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}
fn at_us(n: u64) -> Instant {
    Instant::ZERO + us(n)
}
fn harness(vps: u32, background: u32, parent: Parent) -> Harness<RtWake> {
    let s = RtWake::new(L, DEFAULT_QUANTUM, background);
    Harness::new(Box::new(s), vps, parent)
}
fn set_in(d: Duration) -> Msg {
    Msg::new("set").arg("in", Value::Duration(d))
}
fn set_at(t: Instant) -> Msg {
    Msg::new("set").arg("at", Value::Duration(since_zero(t)))
}
fn refusal(r: Reply) -> String {
    match r {
        Reply::Err(e) => e,
        Reply::Ok(p) => panic!("accepted: {p}"),
    }
}
fn wakeup(r: &Reply) -> Instant {
    match r {
        Reply::Ok(p) => Instant::ZERO + p.duration("wakeup"),
        Reply::Err(e) => panic!("refused: {e}"),
    }
}
/// When each of `child`'s runs began, in order.
fn run_starts(h: &Harness<RtWake>, child: ChildId) -> Vec<Instant> {
    h.decisions()
        .iter()
        .filter(|d| matches!(d.dispatch, Dispatch::Run { child: c, .. } if c == child))
        .map(|d| d.at)
        .collect()
}
/// A running thread `load` (free, CPU-bound) and a thread `t`, running.
fn two_threads(h: &mut Harness<RtWake>) -> (ChildId, ChildId) {
    let t = h.register(&Params::new()).unwrap();
    let load = h.register(&Params::new()).unwrap();
    h.wake(t);
    h.wake(load);
    (t, load)
}

#[test]
fn refusals_are_told_at_once_with_the_reason() {
    let mut h = harness(1, 0, Parent::Root);
    let (t, other) = two_threads(&mut h);
    h.advance_to(at_us(100));
    let e = refusal(h.message(Some(t), &Msg::new("set")));
    assert!(e.contains("exactly one of `in`"), "{e}");
    let e = refusal(h.message(Some(t), &set_at(at_us(100))));
    assert!(e.contains("has passed"), "{e}");
    let e = refusal(h.message(Some(t), &set_in(us(5))));
    assert!(e.contains("closer than rtwake's latency 20us"), "{e}");
    let e = refusal(h.message(Some(t), &set_in(us(1)).arg("when", Value::Int(3))));
    assert!(e.contains("unknown argument `when`"), "{e}");
    let e = refusal(h.message(Some(t), &Msg::new("wait")));
    assert!(e.contains("no periodic wakeup"), "{e}");
    let e = refusal(h.message(None, &set_in(us(500))));
    assert!(e.contains("send it `join` first"), "{e}");
    let e = refusal(h.message(Some(t), &Msg::new("warp")));
    assert!(e.contains("does not understand"), "{e}");
    // Accepted: the reply says when, and when rtwake takes the CPU.
    let r = h.message(Some(t), &set_at(at_us(1_000)));
    assert_eq!(wakeup(&r), at_us(1_000));
    let Reply::Ok(p) = &r else { unreachable!() };
    assert_eq!(p.duration("spin_from"), us(980));
    // Another thread's wakeup within the window [980us, 1000us] collides.
    let e = refusal(h.message(Some(other), &set_at(at_us(1_015))));
    assert!(
        e.contains("collides with the wakeup promised to thread0 at t=1ms"),
        "{e}"
    );
    let e = refusal(h.message(Some(other), &set_at(at_us(990))));
    assert!(e.contains("collides"), "{e}");
    // Just outside it: fine.
    assert!(h.message(Some(other), &set_at(at_us(1_021))).is_ok());
}

#[test]
fn a_tick_widens_the_collision_window_to_the_tick_before() {
    let mut h = harness(1, 0, Parent::Root);
    h.set_tick(Some(us(1_000)));
    let (t, other) = two_threads(&mut h);
    // Spin from the tick at 2ms (2.5ms - 20us rounded down).
    let r = h.message(Some(t), &set_at(at_us(2_500)));
    let Reply::Ok(p) = &r else { panic!("{r}") };
    assert_eq!(p.duration("spin_from"), us(2_000));
    let e = refusal(h.message(Some(other), &set_at(at_us(2_010))));
    assert!(e.contains("from t=2ms to t=2.5ms"), "{e}");
    // 2.51ms would spin from 2ms too.
    assert!(!h.message(Some(other), &set_at(at_us(2_510))).is_ok());
    // 3.03ms spins from 3ms, after 2.5ms: no collision.
    assert!(h.message(Some(other), &set_at(at_us(3_030))).is_ok());
}

#[test]
fn wakes_exactly_without_a_tick_and_never_early() {
    let mut h = harness(1, 0, Parent::Root);
    let (t, load) = two_threads(&mut h);
    assert_eq!(h.running_on(ParentVp(0)), Some(t));
    let r = h.message(Some(t), &set_in(us(1_000)));
    assert_eq!(wakeup(&r), at_us(1_000));
    // `t` stays runnable but does not run: `load` does, until the spin.
    assert_eq!(h.running_on(ParentVp(0)), Some(load));
    h.advance_to(at_us(999));
    assert_eq!(h.running_on(ParentVp(0)), None, "spinning");
    let spin = h
        .decisions()
        .iter()
        .find(|d| matches!(d.dispatch, Dispatch::Spin { .. }));
    assert_eq!(
        spin.map(|d| (d.at, d.dispatch)),
        Some((
            at_us(980),
            Dispatch::Spin {
                until: at_us(1_000)
            }
        ))
    );
    h.advance_to(at_us(1_000));
    assert_eq!(h.running_on(ParentVp(0)), Some(t));
    assert_eq!(run_starts(&h, t), vec![Instant::ZERO, at_us(1_000)]);
    assert_eq!(h.cpu_time(load), us(980));
}

#[test]
fn wakes_exactly_with_a_tick_by_spinning_from_the_tick_before() {
    let mut h = harness(1, 0, Parent::Root);
    h.set_tick(Some(us(1_000)));
    let (t, load) = two_threads(&mut h);
    h.advance_to(at_us(300));
    assert_eq!(h.running_on(ParentVp(0)), Some(t));
    assert!(h.message(Some(t), &set_in(us(2_200))).is_ok()); // 2.5ms
    assert_eq!(h.running_on(ParentVp(0)), Some(load));
    h.advance_to(at_us(2_499));
    assert_eq!(h.running_on(ParentVp(0)), None, "spinning since 2ms");
    h.advance_to(at_us(2_500));
    assert_eq!(
        h.running_on(ParentVp(0)),
        Some(t),
        "at 2.5ms, not at the 3ms tick"
    );
    assert_eq!(run_starts(&h, t).last(), Some(&at_us(2_500)));
    assert_eq!(h.cpu_time(load), us(1_700));
}

#[test]
fn declines_when_nothing_is_due_and_asks_at_the_spin_start() {
    let mut h = harness(1, 0, Parent::Manual);
    let t = h.register(&Params::new()).unwrap();
    h.wake(t);
    h.grant(ParentVp(0));
    assert_eq!(h.running_on(ParentVp(0)), Some(t));
    assert!(h.message(Some(t), &set_in(us(500))).is_ok());
    // t is revoked; rtwake has nothing to run and hands the CPU back.
    assert_eq!(h.decisions().last().unwrap().dispatch, Dispatch::Release);
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Idle);
    h.advance_to(at_us(479));
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Idle);
    h.advance_to(at_us(480));
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting);
    h.grant(ParentVp(0));
    assert_eq!(
        h.decisions().last().unwrap().dispatch,
        Dispatch::Spin { until: at_us(500) }
    );
    h.advance_to(at_us(500));
    assert_eq!(h.running_on(ParentVp(0)), Some(t));
    // A bare grant with only a waiting child is declined.
    let mut s = RtWake::new(L, DEFAULT_QUANTUM, 0);
    let mut host = Host::new(1);
    host.vps[0] = VpState::Held(CpuId(0));
    host.call(&mut s, |s, cx| {
        s.register_vp(cx, ChildId(0), &Params::new())
    })
    .0
    .unwrap();
    host.call(&mut s, |s, cx| s.vp_request(cx, ChildId(0)));
    let sender = Sender {
        thread: Some(ThreadId(0)),
        child: Some(ChildId(0)),
    };
    let (r, _) = host.call(&mut s, |s, cx| s.msg(cx, sender, &set_in(us(100))));
    assert!(r.is_ok());
    let (d, _) = host.call(&mut s, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
    assert_eq!(d, Dispatch::Release);
}

#[test]
fn background_vps_offer_free_threads_to_the_default_but_never_waiting_ones() {
    // vp0 under the fp root (own), vp1 under the default scheduler.
    let mut h = harness(2, 1, Parent::Manual);
    let t = h.register(&Params::new()).unwrap();
    h.wake(t);
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Idle, "nothing due");
    assert_eq!(
        h.vp_state(ParentVp(1)),
        VpState::Requesting,
        "free: the default may run it"
    );
    h.grant(ParentVp(1));
    assert_eq!(h.running_on(ParentVp(1)), Some(t));
    assert!(h.message(Some(t), &set_in(us(300))).is_ok());
    // Waiting: not offered to the default any more.
    assert_eq!(h.running_on(ParentVp(1)), None);
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Idle);
    h.advance_to(at_us(280));
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting);
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Idle);
    h.grant(ParentVp(0));
    h.advance_to(at_us(300));
    assert_eq!(h.running_on(ParentVp(0)), Some(t), "woken on its own VP");
    // Its next request ends the wakeup: free again, back to the default.
    assert!(h.message(Some(t), &Msg::new("cancel")).is_ok());
    assert_eq!(h.running_on(ParentVp(0)), None);
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Requesting);
}

#[test]
fn leaving_or_unloading_drops_the_promise_and_stops_the_spin() {
    let mut h = harness(1, 0, Parent::Root);
    let (t, load) = two_threads(&mut h);
    assert!(h.message(Some(t), &set_in(us(1_000))).is_ok());
    h.advance_to(at_us(990));
    assert_eq!(h.running_on(ParentVp(0)), None, "spinning for t");
    // t leaves (a `leave`, a move, or rtwake unloaded: the dispatcher
    // unregisters it and re-homes it).
    h.unregister(t);
    assert_eq!(h.running_on(ParentVp(0)), Some(load), "no spin for nobody");
    assert_eq!(h.sched().pending(), 0);
    assert_eq!(h.timer(TIMER), None, "nothing left to wake");
    h.advance_to(at_us(5_000));
    assert_eq!(h.running_on(ParentVp(0)), Some(load));
    h.unregister(load);
    assert_eq!(h.decisions().last().unwrap().dispatch, Dispatch::Release);
}

#[test]
fn a_later_wakeup_preempts_the_thread_woken_before_which_then_continues() {
    let mut h = harness(1, 0, Parent::Root);
    let (a, b) = two_threads(&mut h);
    assert!(h.message(Some(a), &set_in(us(1_000))).is_ok());
    h.advance_to(at_us(200));
    assert!(h.message(Some(b), &set_in(us(1_800))).is_ok()); // at 2ms
    h.advance_to(at_us(1_000));
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    h.advance_to(at_us(1_990));
    assert_eq!(h.running_on(ParentVp(0)), None, "b's spin preempts a");
    h.advance_to(at_us(2_000));
    assert_eq!(h.running_on(ParentVp(0)), Some(b));
    h.advance(us(100));
    h.block(b);
    assert_eq!(h.running_on(ParentVp(0)), Some(a), "a's wakeup continues");
    assert_eq!(run_starts(&h, a)[1], at_us(1_000));
    assert_eq!(run_starts(&h, b).last(), Some(&at_us(2_000)));
}

#[test]
fn a_woken_thread_runs_ahead_for_one_quantum_then_is_free() {
    let s = RtWake::new(L, us(300), 1);
    let mut h = Harness::new(Box::new(s), 2, Parent::Eager);
    let t = h.register(&Params::new()).unwrap();
    h.wake(t);
    assert_eq!(
        h.running_on(ParentVp(1)),
        Some(t),
        "free: under the default"
    );
    assert!(h.message(Some(t), &set_in(us(1_000))).is_ok());
    h.advance_to(at_us(1_000));
    assert_eq!(
        h.running_on(ParentVp(0)),
        Some(t),
        "woken: ahead of the default"
    );
    h.advance_to(at_us(1_300));
    assert_eq!(
        h.running_on(ParentVp(1)),
        Some(t),
        "quantum used: free again"
    );
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Idle);
}

#[test]
fn periodic_wakeups_keep_the_grid_and_a_missed_one_is_told() {
    let mut h = harness(1, 0, Parent::Root);
    let (t, _load) = two_threads(&mut h);
    let set = set_at(at_us(1_000)).arg("period", Value::Duration(us(1_000)));
    assert!(h.message(Some(t), &set).is_ok());
    for k in 1..=5u64 {
        h.advance_to(at_us(k * 1_000));
        assert_eq!(h.running_on(ParentVp(0)), Some(t), "wakeup {k}");
        h.advance(us(50));
        let r = h.message(Some(t), &Msg::new("wait"));
        assert_eq!(wakeup(&r), at_us((k + 1) * 1_000));
    }
    // The sixth job overruns past the seventh wakeup.
    h.advance_to(at_us(6_000));
    h.advance(us(1_200));
    let e = refusal(h.message(Some(t), &Msg::new("wait")));
    assert!(
        e.contains("wakeup at t=7ms cannot be honoured: the time t=7ms has passed"),
        "{e}"
    );
    assert!(e.contains("the next `wait` asks for t=8ms"), "{e}");
    assert_eq!(wakeup(&h.message(Some(t), &Msg::new("wait"))), at_us(8_000));
    let starts = run_starts(&h, t);
    assert_eq!(
        starts[1..]
            .iter()
            .filter(|s| s.as_nanos() % 1_000_000 == 0)
            .count(),
        6
    );
}

#[test]
fn registry_builds_it_with_two_parents() {
    let s = hsched_policies::build("rtwake", &Params::new()).unwrap();
    assert_eq!(s.policy(), "rtwake");
    assert_eq!(hsched_policies::find("rtwake").unwrap().max_parents, 2);
    assert!(hsched_policies::build(
        "rtwake",
        &Params::new().with("background_vps", Value::Int(-1))
    )
    .is_err());
}

/// A random step: `set` by the running thread, time passing, a running
/// thread blocking, a sleeping one waking, a thread leaving or joining.
#[derive(Clone, Copy, Debug)]
enum Step {
    Set { n: u8, delay_us: u32 },
    Advance(u32),
    Block(u8),
    Wake(u8),
    Leave(u8),
    Join,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (any::<u8>(), 0u32..3_000).prop_map(|(n, delay_us)| Step::Set { n, delay_us }),
        4 => (0u32..1_500).prop_map(Step::Advance),
        1 => any::<u8>().prop_map(Step::Block),
        2 => any::<u8>().prop_map(Step::Wake),
        1 => any::<u8>().prop_map(Step::Leave),
        1 => Just(Step::Join),
    ]
}

proptest! {
    /// Random `set` sequences never make rtwake run a thread before its
    /// time, and every accepted wakeup happens at its time exactly, with
    /// or without a tick. Only a running thread sends `set` or blocks,
    /// as in a real program, so a waiting thread is runnable at its time.
    #[test]
    fn random_sets_are_never_early_and_always_exact(
        vps in 1u32..3,
        tick_us in prop_oneof![Just(0u64), Just(1_000), Just(977)],
        latency_us in 0u64..80,
        steps in proptest::collection::vec(step(), 1..80),
    ) {
        let s = RtWake::new(us(latency_us), DEFAULT_QUANTUM, 0);
        let parent = if vps == 1 { Parent::Root } else { Parent::Eager };
        let mut h = Harness::new(Box::new(s), vps, parent);
        h.set_tick((tick_us > 0).then(|| us(tick_us)));
        let mut promise: Vec<Option<Instant>> = Vec::new();
        for _ in 0..3 {
            let c = h.register(&Params::new()).unwrap();
            h.wake(c);
        }
        let mut seen = h.decisions().len();
        for st in steps {
            let pick = |list: Vec<ChildId>, n: u8| {
                (!list.is_empty()).then(|| list[n as usize % list.len()])
            };
            let running: Vec<ChildId> = h
                .children()
                .into_iter()
                .filter(|&c| h.where_runs(c).is_some())
                .collect();
            match st {
                Step::Set { n, delay_us } => {
                    if let Some(c) = pick(running, n) {
                        let r = h.message(Some(c), &set_in(us(u64::from(delay_us))));
                        if let Reply::Ok(_) = r {
                            if promise.len() <= c.index() {
                                promise.resize(c.index() + 1, None);
                            }
                            promise[c.index()] = Some(wakeup(&r));
                        }
                    }
                }
                Step::Advance(d) => h.advance(us(u64::from(d))),
                Step::Block(n) => {
                    if let Some(c) = pick(running, n) {
                        h.block(c);
                    }
                }
                Step::Wake(n) => {
                    let asleep: Vec<ChildId> = h
                        .children()
                        .into_iter()
                        .filter(|&c| !h.is_requesting(c))
                        .collect();
                    if let Some(c) = pick(asleep, n) {
                        h.wake(c);
                    }
                }
                Step::Leave(n) => {
                    if let Some(c) = pick(h.children(), n) {
                        h.unregister(c);
                        if let Some(p) = promise.get_mut(c.index()) {
                            *p = None;
                        }
                    }
                }
                Step::Join => {
                    let c = h.register(&Params::new()).unwrap();
                    h.wake(c);
                }
            }
            for d in &h.decisions()[seen..] {
                if let Dispatch::Run { child, .. } = d.dispatch {
                    if let Some(w) = promise.get(child.index()).copied().flatten() {
                        prop_assert!(d.at >= w, "{child} ran at {} before its wakeup {w}", d.at);
                        prop_assert_eq!(d.at, w, "{} woken late", child);
                        promise[child.index()] = None;
                    }
                }
            }
            seen = h.decisions().len();
            // Every wakeup whose time has passed has happened.
            for (i, p) in promise.iter().enumerate() {
                if let Some(w) = p {
                    prop_assert!(*w > h.now(), "child{i}'s wakeup at {w} did not happen by {}", h.now());
                }
            }
        }
    }
}
