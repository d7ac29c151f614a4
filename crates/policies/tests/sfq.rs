//! `sfq` against SFQ's fairness theorem, against a textbook SFQ, and its
//! `warp` message, driven by the testkit harness.

use hsched_core::{
    ChildId, Dispatch, Duration, Effect, Instant, Msg, Params, ParentVp, Reply, Scheduler, Sender,
    Value,
};
use hsched_dispatch::testkit::{Harness, Parent};
use hsched_policies::sfq::{Sfq, INFO, VT_SCALE};
use proptest::prelude::*;

const Q: Duration = Duration::from_millis(10);

fn harness(vps: u32, parent: Parent) -> Harness<Sfq> {
    Harness::new(Box::new(Sfq::new(Q).unwrap()), vps, parent)
}

/// `from` sends `msg` now.
fn send(h: &mut Harness<Sfq>, from: ChildId, msg: Msg) -> Reply {
    h.message(Some(from), &msg)
}

fn weighted(w: i64) -> Params {
    Params::new().with("weight", Value::Int(w))
}

fn ms(n: u64) -> Instant {
    Instant(Duration::from_millis(n).as_nanos())
}

/// Every run segment so far, the one in progress included (cut at now).
fn segments(h: &Harness<Sfq>) -> Vec<(ChildId, Instant, Instant)> {
    let mut all: Vec<_> = h
        .segments()
        .iter()
        .map(|s| (s.child, s.start, s.end))
        .collect();
    for v in 0..h.vp_count() {
        let vp = ParentVp(v);
        if let Some(child) = h.running_on(vp) {
            let start = h.decisions().iter().rev().find(|d| d.vp == vp).unwrap().at;
            all.push((child, start, h.now()));
        }
    }
    all
}

// ----- the warp message ----------------------------------------------------------

#[test]
fn warp_on_preempts_and_warp_off_gives_the_cpu_back() {
    let mut h = harness(1, Parent::Root);
    let busy = h.register(&Params::new()).unwrap();
    let x = h
        .register(&Params::new().with("warp", Value::Duration(Q)))
        .unwrap();
    h.wake(busy);
    h.advance_to(ms(3));
    h.wake(x);
    assert_eq!(
        h.running_on(ParentVp(0)),
        Some(busy),
        "unwarped: no preemption"
    );
    h.take_effects();
    let on = send(&mut h, x, Msg::new("warp").arg("on", Value::Bool(true)));
    assert_eq!(
        on,
        Reply::Ok(
            Params::new()
                .with("on", Value::Bool(true))
                .with("warp", Value::Duration(Q))
        )
    );
    assert!(h.take_effects().contains(&Effect::Revoke(busy)));
    assert_eq!(h.running_on(ParentVp(0)), Some(x), "immediate dispatch");
    assert_eq!(h.sched().warp_on(x), Some(true));
    // SFQ does not cut a quantum short: switching the warp off while x
    // runs on a start tag level with busy's leaves x its quantum.
    h.advance_to(ms(8));
    assert!(send(&mut h, x, Msg::new("warp").arg("on", Value::Bool(false))).is_ok());
    assert_eq!(h.running_on(ParentVp(0)), Some(x));
    assert_eq!(h.sched().warp_on(x), Some(false));
}

#[test]
fn switching_the_warp_off_hands_the_cpu_to_a_child_behind_in_virtual_time() {
    let mut h = harness(1, Parent::Root);
    let busy = h.register(&Params::new()).unwrap();
    let x = h
        .register(&Params::new().with("warp", Value::Duration(Duration::from_millis(25))))
        .unwrap();
    assert!(send(&mut h, x, Msg::new("warp").arg("on", Value::Bool(true))).is_ok());
    h.wake(busy);
    h.wake(x);
    assert_eq!(
        h.running_on(ParentVp(0)),
        Some(x),
        "a warped wake-up preempts"
    );
    // x runs three quanta (its tag minus 25ms stays below busy's 0), then
    // busy one, then x again, now 20ms ahead of busy in virtual time.
    h.advance_to(ms(45));
    let order: Vec<ChildId> = h
        .decisions()
        .iter()
        .filter_map(|d| match d.dispatch {
            Dispatch::Run { child, .. } => Some(child),
            _ => None,
        })
        .collect();
    assert_eq!(order, vec![busy, x, x, x, busy, x]);
    h.take_effects();
    assert!(send(&mut h, x, Msg::new("warp").arg("on", Value::Bool(false))).is_ok());
    assert!(h.take_effects().contains(&Effect::Revoke(x)));
    assert_eq!(h.running_on(ParentVp(0)), Some(busy));
}

#[test]
fn warp_message_errors_name_the_problem() {
    let mut h = harness(1, Parent::Root);
    let x = h.register(&Params::new()).unwrap();
    let Reply::Err(e) = send(&mut h, x, Msg::new("warp")) else {
        panic!("no `on` accepted");
    };
    assert!(e.contains("`on`"), "{e}");
    let Reply::Err(e) = send(&mut h, x, Msg::new("warp").arg("on", Value::Int(1))) else {
        panic!("an integer `on` accepted");
    };
    assert!(e.contains("`on`") && e.contains("bool"), "{e}");
    let Reply::Err(e) = send(&mut h, x, Msg::new("reserve")) else {
        panic!("an unknown message accepted");
    };
    assert!(e.contains("reserve"), "{e}");
    // From someone who is not a child (the operator).
    let mut sfq = Sfq::new(Q).unwrap();
    let host = hsched_dispatch::testkit::Host::new(1);
    let operator = Sender {
        thread: None,
        child: None,
    };
    let msg = Msg::new("warp").arg("on", Value::Bool(true));
    let (reply, _) = host.call(&mut sfq, |s, cx| s.msg(cx, operator, &msg));
    assert!(!reply.is_ok());
}

// ----- the fairness theorem ----------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Wake or block noise child `n`.
    Noise(u8),
    Grant,
    Revoke,
    Advance(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => any::<u8>().prop_map(Step::Noise),
        1 => Just(Step::Grant),
        1 => Just(Step::Revoke),
        4 => (1u32..30_000).prop_map(Step::Advance),
    ]
}

fn parent() -> impl Strategy<Value = Parent> {
    prop_oneof![
        Just(Parent::Root),
        Just(Parent::Manual),
        Just(Parent::Eager)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Goyal et al.: for any interval in which children i and j are both
    /// runnable, |W_i/w_i - W_j/w_j| <= l_i/w_i + l_j/w_j, on one CPU,
    /// whatever the parent grants and takes back, with other children
    /// coming and going.
    #[test]
    fn the_fairness_bound_holds_over_every_window(
        parent in parent(),
        weights in proptest::collection::vec(1i64..7, 2..5),
        noise in proptest::collection::vec(1i64..7, 0..4),
        steps in proptest::collection::vec(step(), 1..120),
    ) {
        let mut h = harness(1, parent);
        let backlogged: Vec<ChildId> =
            weights.iter().map(|&w| h.register(&weighted(w)).unwrap()).collect();
        let noisy: Vec<ChildId> =
            noise.iter().map(|&w| h.register(&weighted(w)).unwrap()).collect();
        for &c in &backlogged {
            h.wake(c);
        }
        for step in steps {
            match step {
                Step::Noise(n) if !noisy.is_empty() => {
                    let c = noisy[n as usize % noisy.len()];
                    if h.is_requesting(c) { h.block(c) } else { h.wake(c) }
                }
                Step::Grant if parent == Parent::Manual
                    && h.vp_state(ParentVp(0)) == hsched_core::VpState::Requesting => {
                    h.grant(ParentVp(0))
                }
                Step::Revoke if parent != Parent::Root
                    && matches!(h.vp_state(ParentVp(0)), hsched_core::VpState::Held(_)) => {
                    h.revoke(ParentVp(0))
                }
                Step::Advance(us) => h.advance(Duration::from_micros(u64::from(us))),
                _ => {}
            }
        }
        let segs = segments(&h);
        let mut bounds: Vec<Instant> = segs.iter().flat_map(|s| [s.1, s.2]).collect();
        bounds.push(Instant::ZERO);
        bounds.sort_unstable();
        bounds.dedup();
        // served[k][b]: service of backlogged child k in [0, bounds[b]].
        let served: Vec<Vec<i128>> = backlogged
            .iter()
            .map(|&c| {
                bounds
                    .iter()
                    .map(|&t| {
                        segs.iter()
                            .filter(|s| s.0 == c && s.1 < t)
                            .map(|s| (s.2.min(t) - s.1).as_nanos() as i128)
                            .sum()
                    })
                    .collect()
            })
            .collect();
        let longest: Vec<i128> = backlogged
            .iter()
            .map(|&c| {
                segs.iter()
                    .filter(|s| s.0 == c)
                    .map(|s| (s.2 - s.1).as_nanos() as i128)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for i in 0..backlogged.len() {
            prop_assert!(longest[i] <= Q.as_nanos() as i128);
            for j in i + 1..backlogged.len() {
                let (wi, wj) = (weights[i] as i128, weights[j] as i128);
                // |W_i/w_i - W_j/w_j| <= l_i/w_i + l_j/w_j, times w_i*w_j.
                let bound = longest[i] * wj + longest[j] * wi;
                for a in 0..bounds.len() {
                    for b in a + 1..bounds.len() {
                        let gi = served[i][b] - served[i][a];
                        let gj = served[j][b] - served[j][a];
                        let gap = (gi * wj - gj * wi).abs();
                        prop_assert!(
                            gap <= bound,
                            "children {i} (w {wi}) and {j} (w {wj}) in [{}, {}]: \
                             served {gi} and {gj}, gap {gap} > {bound}",
                            bounds[a], bounds[b]
                        );
                    }
                }
            }
        }
    }
}

// ----- against a textbook SFQ ------------------------------------------------------

/// SFQ as Goyal et al. state it for one CPU: v is the start tag of the
/// child in service (the largest finish tag when the CPU idles); a child
/// that arrives, or whose quantum ends while it is still runnable, gets
/// S = max(v, F); quanta run to their end (`Q`) unless the child blocks;
/// the smallest start tag runs next, ties in arrival order. Tags are in
/// 1/12 ns so that l/w is exact for weights 1..=4.
struct Textbook {
    weight: Vec<u64>,
    start: Vec<u64>,
    finish: Vec<u64>,
    /// (start tag, arrival sequence, child) of the waiting children.
    waiting: Vec<(u64, u64, usize)>,
    runnable: Vec<bool>,
    /// The child in service and when its quantum began.
    serving: Option<(usize, u64)>,
    v: u64,
    max_finish: u64,
    seq: u64,
    now: u64,
    log: Vec<(u64, usize)>,
}

impl Textbook {
    fn new(weight: Vec<u64>) -> Self {
        let n = weight.len();
        Textbook {
            weight,
            start: vec![0; n],
            finish: vec![0; n],
            waiting: Vec::new(),
            runnable: vec![false; n],
            serving: None,
            v: 0,
            max_finish: 0,
            seq: 0,
            now: 0,
            log: Vec::new(),
        }
    }
    fn arrive(&mut self, c: usize) {
        self.start[c] = self.v.max(self.finish[c]);
        self.finish[c] = self.start[c];
        self.waiting.push((self.start[c], self.seq, c));
        self.seq += 1;
    }
    fn dispatch(&mut self) {
        if self.serving.is_some() {
            return;
        }
        let Some(best) = (0..self.waiting.len()).min_by_key(|&i| self.waiting[i]) else {
            self.v = self.v.max(self.max_finish);
            return;
        };
        let (s, _, c) = self.waiting.remove(best);
        self.v = s;
        self.serving = Some((c, self.now));
        self.log.push((self.now, c));
    }
    fn end_quantum(&mut self) {
        let (c, began) = self.serving.take().unwrap();
        self.finish[c] += (self.now - began) * 12 / self.weight[c];
        self.max_finish = self.max_finish.max(self.finish[c]);
    }
    fn wake(&mut self, c: usize) {
        if self.serving.is_none() {
            self.v = self.v.max(self.max_finish);
        }
        self.runnable[c] = true;
        self.arrive(c);
        self.dispatch();
    }
    fn block(&mut self, c: usize) {
        self.runnable[c] = false;
        if self.serving.is_some_and(|s| s.0 == c) {
            self.end_quantum();
            self.dispatch();
        } else {
            self.waiting.retain(|w| w.2 != c);
        }
    }
    fn advance_to(&mut self, t: u64) {
        while let Some((c, began)) = self.serving {
            let end = began + Q.as_nanos();
            if end > t {
                break;
            }
            self.now = end;
            self.end_quantum();
            self.arrive(c);
            self.dispatch();
        }
        self.now = t;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn zero_warp_sfq_orders_as_the_textbook(
        weights in proptest::collection::vec(1u64..5, 1..6),
        warps in proptest::collection::vec(any::<bool>(), 6),
        events in proptest::collection::vec((0u8..3, any::<u8>(), 0u32..25_000), 1..150),
    ) {
        let mut h = harness(1, Parent::Root);
        // Warp switched on but zero, or non-zero but off: plain SFQ.
        let kids: Vec<ChildId> = weights
            .iter()
            .zip(&warps)
            .map(|(&w, &on)| {
                let warp = if on { Duration::ZERO } else { Q };
                h.register(
                    &weighted(w as i64)
                        .with("warp", Value::Duration(warp))
                        .with("warp_on", Value::Bool(on)),
                )
                .unwrap()
            })
            .collect();
        let mut book = Textbook::new(weights.clone());
        for (kind, n, us) in events {
            let c = n as usize % kids.len();
            match kind {
                0 if !book.runnable[c] => {
                    h.wake(kids[c]);
                    book.wake(c);
                }
                1 if book.runnable[c] => {
                    h.block(kids[c]);
                    book.block(c);
                }
                _ => {
                    h.advance(Duration::from_micros(u64::from(us)));
                    book.advance_to(h.now().as_nanos());
                }
            }
        }
        let ours: Vec<(u64, usize)> = h
            .decisions()
            .iter()
            .filter_map(|d| match d.dispatch {
                Dispatch::Run { child, .. } => {
                    Some((d.at.as_nanos(), kids.iter().position(|&k| k == child).unwrap()))
                }
                _ => None,
            })
            .collect();
        prop_assert_eq!(ours, book.log);
    }
}

// ----- the protocol, with warp messages ----------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Action {
    Kit(Step2),
    Warp(u8, bool),
}

type Step2 = hsched_dispatch::testkit::Step;

fn action() -> impl Strategy<Value = Action> {
    use hsched_dispatch::testkit::Step as S;
    prop_oneof![
        2 => any::<u8>().prop_map(|n| Action::Kit(S::Register(n))),
        1 => any::<u8>().prop_map(|n| Action::Kit(S::Unregister(n))),
        4 => any::<u8>().prop_map(|n| Action::Kit(S::Wake(n))),
        3 => any::<u8>().prop_map(|n| Action::Kit(S::Block(n))),
        2 => any::<u8>().prop_map(|n| Action::Kit(S::Grant(n))),
        1 => any::<u8>().prop_map(|n| Action::Kit(S::Revoke(n))),
        3 => (0u32..30_000).prop_map(|us| Action::Kit(S::Advance(us))),
        3 => (any::<u8>(), any::<bool>()).prop_map(|(n, on)| Action::Warp(n, on)),
    ]
}

proptest! {
    /// Random registrations, wake-ups, blocks, grants, revokes and warp
    /// toggles on one to three VPs: the harness rejects every answer the
    /// dispatcher would eject for, and checks the invariants after every
    /// callback.
    #[test]
    fn random_runs_with_warp_messages_keep_the_rules(
        vps in 1u32..4,
        parent in parent(),
        actions in proptest::collection::vec(action(), 1..150),
    ) {
        let mut h = harness(vps, parent);
        let sets = [
            Params::new(),
            weighted(3).with("warp", Value::Duration(Q)),
            weighted(2)
                .with("warp", Value::Duration(Duration::from_millis(50)))
                .with("warp_on", Value::Bool(true)),
        ];
        for a in actions {
            match a {
                Action::Kit(step) => h.step(step, &sets),
                Action::Warp(n, on) => {
                    let kids = h.children();
                    if !kids.is_empty() {
                        let c = kids[n as usize % kids.len()];
                        let reply = send(&mut h, c, Msg::new("warp").arg("on", Value::Bool(on)));
                        prop_assert!(reply.is_ok());
                    }
                }
            }
            if parent != Parent::Manual {
                h.assert_work_conserving();
            }
        }
    }
}

fn child(weight: i64, warp_ms: u64, warp_on: bool) -> Params {
    Params::new()
        .with("weight", Value::Int(weight))
        .with("warp", Value::Duration(Duration::from_millis(warp_ms)))
        .with("warp_on", Value::Bool(warp_on))
}

fn runs(h: &Harness<Sfq>) -> Vec<(Instant, ChildId)> {
    h.decisions()
        .iter()
        .filter_map(|d| match d.dispatch {
            Dispatch::Run { child, .. } => Some((d.at, child)),
            _ => None,
        })
        .collect()
}

#[test]
fn weights_one_two_three_share_one_two_three() {
    let mut h = harness(1, Parent::Root);
    let c: Vec<ChildId> = (1..=3)
        .map(|w| h.register(&child(w, 0, false)).unwrap())
        .collect();
    for &x in &c {
        h.wake(x);
    }
    h.advance_to(ms(6_000));
    for (i, &x) in c.iter().enumerate() {
        let want = Duration::from_millis(1_000 * (i as u64 + 1));
        let got = h.cpu_time(x);
        let diff = got.max(want) - got.min(want);
        assert!(diff <= Q + Q, "{x}: {got} for {want}");
    }
    h.assert_work_conserving();
}

#[test]
fn equal_weights_take_quanta_in_arrival_order() {
    let mut h = harness(1, Parent::Root);
    let c: Vec<ChildId> = (0..3)
        .map(|_| h.register(&Params::new()).unwrap())
        .collect();
    h.wake(c[1]);
    h.wake(c[2]);
    h.wake(c[0]);
    h.advance_to(ms(55));
    let order: Vec<ChildId> = runs(&h).iter().map(|r| r.1).collect();
    assert_eq!(order, vec![c[1], c[2], c[0], c[1], c[2], c[0]]);
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(60)));
}

#[test]
fn a_sleeper_gets_no_credit_for_its_sleep() {
    let mut h = harness(1, Parent::Root);
    let a = h.register(&Params::new()).unwrap();
    let b = h.register(&Params::new()).unwrap();
    h.wake(a);
    h.wake(b);
    h.advance_to(ms(15));
    h.block(b);
    h.advance_to(ms(1_015));
    let before = h.cpu_time(a);
    h.wake(b);
    h.advance_to(ms(1_215));
    // From its wake-up b shares evenly: it does not catch up on 1s.
    let (ga, gb) = (h.cpu_time(a) - before, h.cpu_time(b) - Q);
    assert!(ga.max(gb) - ga.min(gb) <= Q + Q, "{ga} vs {gb}");
    assert!(h.sched().virtual_time() > 1_000 * 1_000_000 * VT_SCALE);
}

#[test]
fn a_warped_wakeup_is_dispatched_at_once_an_unwarped_one_waits() {
    for warp_on in [true, false] {
        let mut h = harness(1, Parent::Root);
        let busy: Vec<ChildId> = (0..2)
            .map(|_| h.register(&Params::new()).unwrap())
            .collect();
        let x = h.register(&child(1, 50, warp_on)).unwrap();
        for &b in &busy {
            h.wake(b);
        }
        h.advance_to(ms(104));
        h.take_effects();
        h.wake(x);
        let preempted = h
            .take_effects()
            .iter()
            .any(|e| matches!(e, Effect::Revoke(_)));
        assert_eq!(preempted, warp_on);
        if warp_on {
            assert_eq!(h.running_on(ParentVp(0)), Some(x), "immediate dispatch");
        } else {
            assert_ne!(h.running_on(ParentVp(0)), Some(x));
            // Its start tag is v, level with the waiting busy child,
            // which queued first: x runs after it, two quanta later.
            h.advance_to(ms(110));
            assert_ne!(h.running_on(ParentVp(0)), Some(x));
            h.advance_to(ms(120));
            assert_eq!(h.running_on(ParentVp(0)), Some(x));
        }
    }
}

#[test]
fn warp_borrows_but_does_not_raise_the_long_term_share() {
    let mut h = harness(1, Parent::Root);
    let warped = h.register(&child(1, 30, true)).unwrap();
    let others: Vec<ChildId> = (0..2)
        .map(|_| h.register(&Params::new()).unwrap())
        .collect();
    for &o in &others {
        h.wake(o);
    }
    h.wake(warped);
    h.advance_to(ms(40));
    // It runs first and keeps the CPU until it is `warp` ahead.
    assert_eq!(h.cpu_time(warped), Duration::from_millis(30));
    h.advance_to(ms(3_000));
    let fair = Duration::from_millis(1_000);
    for &x in [warped].iter().chain(&others) {
        let got = h.cpu_time(x);
        let diff = got.max(fair) - got.min(fair);
        assert!(diff <= Duration::from_millis(30) + Q + Q, "{x}: {got}");
    }
}

#[test]
fn several_cpus_share_among_more_children() {
    let mut h = harness(2, Parent::Root);
    let c: Vec<ChildId> = (0..5)
        .map(|_| h.register(&Params::new()).unwrap())
        .collect();
    for &x in &c {
        h.wake(x);
    }
    h.advance_to(ms(1_000));
    h.assert_work_conserving();
    for &x in &c {
        let got = h.cpu_time(x);
        let fair = Duration::from_millis(400);
        assert!(got.max(fair) - got.min(fair) <= Q + Q, "{x}: {got}");
    }
}

#[test]
fn a_warped_wakeup_takes_the_cpu_of_the_latest_tag_on_several_cpus() {
    let mut h = harness(2, Parent::Root);
    let a = h.register(&child(1, 0, false)).unwrap();
    let b = h.register(&child(4, 0, false)).unwrap();
    let x = h.register(&child(1, 100, true)).unwrap();
    h.wake(a);
    h.wake(b);
    h.advance_to(ms(95));
    // a (weight 1) is further ahead in virtual time than b (weight 4).
    let (sa, sb) = (h.sched().tags(a).unwrap().0, h.sched().tags(b).unwrap().0);
    assert!(sa > sb);
    h.wake(x);
    assert!(h.where_runs(x).is_some(), "immediate dispatch");
    assert!(h.where_runs(a).is_none(), "a had the largest tag");
    assert!(h.where_runs(b).is_some());
}

#[test]
fn tags_divide_exactly_by_common_weights_and_carry_the_rest() {
    for w in [1u64, 2, 3, 6, 7, 12, 100, 1_000] {
        assert_eq!(VT_SCALE % u128::from(w), 0, "{w}");
    }
    let mut h = harness(1, Parent::Root);
    let odd = h.register(&child(17, 0, false)).unwrap();
    h.wake(odd);
    for _ in 0..17 {
        h.advance(Duration::from_nanos(1));
        h.block(odd);
        h.wake(odd);
    }
    // 17ns of service at weight 17: exactly 1ns of virtual time.
    let (_, finish) = h.sched().tags(odd).unwrap();
    assert_eq!(finish, VT_SCALE);
}

#[test]
fn parameters_are_checked() {
    assert!(Sfq::new(Duration::ZERO).is_err());
    let Err(e) = hsched_policies::build("sfq", &Params::new().with("quantum", Value::Int(0)))
    else {
        panic!("a zero quantum was accepted");
    };
    assert!(e.contains("quantum"), "{e}");
    let s = hsched_policies::build("sfq", &Params::new()).unwrap();
    assert_eq!(s.policy(), "sfq");
    let specs = (INFO.child_params)();
    assert!(Params::new()
        .with("weight", Value::Int(0))
        .resolve(&specs)
        .is_err());
    let p = Params::new().resolve(&specs).unwrap();
    assert_eq!(
        (p.int("weight"), p.duration("warp"), p.bool("warp_on")),
        (1, Duration::ZERO, false)
    );
}
