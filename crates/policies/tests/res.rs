//! `res` driven by the testkit harness: budget enforcement and
//! replenishment, EDF order, hard throttling, admission (exact, with the
//! numbers in the refusal), the `reserve` / `release` / `deadline`
//! messages, uniformly slower processors (RESU children and a `res` running
//! on one), and random runs that must never give a child more than its
//! amount in a window of its grid, nor less to a child that stays runnable.

use hsched_core::{
    ChildId, CpuId, Dispatch, Duration, Effect, Instant, Msg, Params, ParentVp, Reply, Scheduler,
    Share, ShareRange, Value, VpState,
};
use hsched_dispatch::testkit::{Harness, Host, Parent, Segment, Step};
use hsched_policies::res::{Res, Util};
use proptest::prelude::*;

type H = Harness<Res>;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Instant {
    Instant(ms(n).as_nanos())
}

fn harness(vps: u32, parent: Parent) -> H {
    Harness::new(Box::new(Res::new(Share::ONE)), vps, parent)
}

fn rsv(amount: Duration, period: Duration) -> Params {
    Params::new()
        .with("amount", Value::Duration(amount))
        .with("period", Value::Duration(period))
}

fn rate(r: &str) -> Params {
    Params::new().with("rate", Value::Str(r.into()))
}

fn deadline(at: Instant) -> Msg {
    Msg::new("deadline").arg("at", Value::Duration(Duration(at.as_nanos())))
}

/// CPU time `child` got in `[from, to)`, from the finished segments.
fn got(segments: &[Segment], child: ChildId, from: Instant, to: Instant) -> Duration {
    segments
        .iter()
        .filter(|s| s.child == child)
        .map(|s| s.end.min(to).saturating_since(s.start.max(from)))
        .fold(Duration::ZERO, |a, b| a + b)
}

#[test]
fn rates_parse_exactly() {
    assert_eq!(Share::parse("1", ShareRange::Rate).unwrap(), Share::ONE);
    let half = Share::parse("0.5", ShareRange::Rate).unwrap();
    assert_eq!((half.num(), half.den()), (1, 2));
    assert_eq!(
        Share::parse(".25", ShareRange::Rate).unwrap().to_string(),
        "1/4"
    );
    assert_eq!(
        Share::parse("1/3", ShareRange::Rate).unwrap().to_string(),
        "1/3"
    );
    assert_eq!(
        Share::parse(" 2/6 ", ShareRange::Rate).unwrap().to_string(),
        "1/3"
    );
    for bad in [
        "0", "1.5", "", ".", "x", "-0.5", "1/0", "3/2", "0.5.1", "1e-3",
    ] {
        assert!(
            Share::parse(bad, ShareRange::Rate).is_err(),
            "{bad:?} was accepted"
        );
    }
    // Budgets: run floor(b * r), charge ceil(t / r).
    let third = Share::parse("1/3", ShareRange::Rate).unwrap();
    assert_eq!(third.of(Duration(10)), Duration(3));
    assert_eq!(third.charge(Duration(3)), Duration(9));
    assert_eq!(third.charge(Duration(1)), Duration(3));
}

#[test]
fn a_cpu_bound_child_gets_exactly_its_amount_every_window() {
    let mut h = harness(1, Parent::Root);
    let c = h.register(&rsv(ms(3), ms(10))).unwrap();
    h.wake(c);
    assert_eq!(h.running_on(ParentVp(0)), Some(c));
    assert_eq!(h.horizon(ParentVp(0)), Some(at(3)));
    h.advance_to(at(3));
    // Hard: the CPU is idle, yet the child waits for its next window.
    assert_eq!(h.running_on(ParentVp(0)), None);
    assert_eq!(h.decisions().last().unwrap().dispatch, Dispatch::Release);
    assert_eq!(h.timer(0), Some(at(10)), "replenished at the window's end");
    h.advance_to(at(10));
    assert_eq!(h.running_on(ParentVp(0)), Some(c), "replenished");
    h.advance_to(at(1_000));
    for k in 0..100 {
        assert_eq!(
            got(h.segments(), c, at(10 * k), at(10 * k + 10)),
            ms(3),
            "window {k}"
        );
    }
}

#[test]
fn earliest_deadline_first_and_preemption_by_an_earlier_deadline() {
    let mut h = harness(1, Parent::Root);
    let long = h.register(&rsv(ms(4), ms(20))).unwrap();
    let short = h.register(&rsv(ms(2), ms(5))).unwrap();
    h.wake(long);
    h.wake(short);
    assert_eq!(
        h.running_on(ParentVp(0)),
        Some(short),
        "deadline 5 before 20"
    );
    h.advance_to(at(2));
    assert_eq!(h.running_on(ParentVp(0)), Some(long));
    h.advance_to(at(5));
    // short's next window (deadline 10) beats long's 20: it preempts.
    assert_eq!(h.running_on(ParentVp(0)), Some(short));
    h.advance_to(at(20));
    assert_eq!(got(h.segments(), long, at(0), at(20)), ms(4));
    for k in 0..4 {
        assert_eq!(got(h.segments(), short, at(5 * k), at(5 * k + 5)), ms(2));
    }
}

#[test]
fn a_child_waking_late_keeps_only_its_share_of_the_rest_of_the_window() {
    let mut h = harness(1, Parent::Root);
    let c = h.register(&rsv(ms(5), ms(10))).unwrap();
    h.advance_to(at(6));
    h.wake(c);
    // 4ms of the window left: 5 * 4 / 10 = 2ms.
    assert_eq!(h.horizon(ParentVp(0)), Some(at(8)));
    h.advance_to(at(10));
    assert_eq!(got(h.segments(), c, at(0), at(10)), ms(2));
    assert_eq!(h.horizon(ParentVp(0)), Some(at(15)), "a full window at 10");
}

fn partition(amount: Duration, period: Duration) -> Params {
    rsv(amount, period).with("overrun", Value::Bool(true))
}

#[test]
fn an_overrun_partition_waking_late_keeps_its_whole_amount() {
    let mut h = harness(1, Parent::Root);
    let p = h.register(&partition(ms(5), ms(10))).unwrap();
    h.advance_to(at(4));
    h.wake(p);
    // Woken by an overrun 4ms into the window: the full 5ms, not 5 * 6 / 10.
    assert_eq!(h.horizon(ParentVp(0)), Some(at(9)));
    h.advance_to(at(10));
    assert_eq!(got(h.segments(), p, at(0), at(10)), ms(5));
}

#[test]
fn on_an_edf_tie_the_reservations_go_before_the_overrun_partition() {
    let mut h = harness(1, Parent::Root);
    // The partition joins first (a lower child id), yet the reservation
    // with the same deadline runs first.
    let p = h.register(&partition(ms(3), ms(10))).unwrap();
    let r = h.register(&rsv(ms(2), ms(10))).unwrap();
    h.wake(p);
    h.wake(r);
    assert_eq!(h.running_on(ParentVp(0)), Some(r));
    h.advance_to(at(2));
    assert_eq!(h.running_on(ParentVp(0)), Some(p));
    // An earlier deadline still wins over the tie rule.
    let short = h.register(&rsv(ms(1), ms(4))).unwrap();
    h.wake(short);
    assert_eq!(h.running_on(ParentVp(0)), Some(short));
    h.advance_to(at(10));
    assert_eq!(got(h.segments(), r, at(0), at(10)), ms(2));
    assert_eq!(got(h.segments(), p, at(0), at(10)), ms(3));
}

/// A partition waking late keeps no more than its own bandwidth plus the
/// spare CPU allows of the rest of its window: 4ms per 10ms beside 3ms per
/// 6ms (0.9 reserved) waking at 6ms may use (0.4 + 0.1) · 4ms = 2ms by 10ms,
/// so the reservation still gets its 3ms in [6, 12). With the whole 4ms it
/// would run until 10 and leave the reservation 2ms.
#[test]
fn a_late_partition_borrows_only_the_spare_cpu() {
    let mut h = harness(1, Parent::Root);
    let r = h.register(&rsv(ms(3), ms(6))).unwrap();
    let p = h.register(&partition(ms(4), ms(10))).unwrap();
    h.wake(r);
    h.advance_to(at(6));
    h.wake(p);
    h.advance_to(at(12));
    assert_eq!(got(h.segments(), p, at(6), at(10)), ms(2));
    assert_eq!(got(h.segments(), r, at(6), at(12)), ms(3));
}

#[test]
fn plain_reservations_keep_ties_by_child_id() {
    let mut h = harness(1, Parent::Manual);
    let first = h.register(&rsv(ms(3), ms(10))).unwrap();
    let second = h.register(&rsv(ms(2), ms(10))).unwrap();
    h.wake(second);
    h.wake(first);
    h.grant(ParentVp(0));
    assert_eq!(h.running_on(ParentVp(0)), Some(first));
}

#[test]
fn an_overrun_partition_needs_an_amount_and_a_period() {
    let mut h = harness(1, Parent::Manual);
    let e = h
        .register(&rate("0.5").with("overrun", Value::Bool(true)))
        .unwrap_err();
    assert!(e.0.contains("overrun"), "{}", e.0);
}

#[test]
fn admission_is_exact_and_refusals_name_the_numbers() {
    let mut h = harness(1, Parent::Manual);
    for _ in 0..3 {
        h.register(&rsv(ms(1), ms(3))).unwrap(); // 1/3 each: exactly 1
    }
    assert_eq!(h.sched().reserved(), Util::of(ms(3), ms(3)));
    let Err(e) = h.register(&rsv(Duration(1), ms(1_000))) else {
        panic!("a fourth reservation fit beside three thirds");
    };
    assert!(
        e.0.contains("1ns") && e.0.contains("1/1 (100.00%) is already reserved"),
        "{e}"
    );
    let mut h = harness(1, Parent::Manual);
    h.register(&rsv(ms(6), ms(10))).unwrap();
    let Err(e) = h.register(&rsv(ms(5), ms(10))) else {
        panic!("0.6 + 0.5 admitted");
    };
    assert!(e.0.contains("RESBH 5ms, 10ms"), "{e}");
    assert!(e.0.contains("1/2 (50.00%)"), "{e}");
    assert!(e.0.contains("3/5 (60.00%)"), "{e}");
    assert!(e.0.contains("11/10 (110.00%)"), "{e}");
    let Err(e) = h.register(&rate("0.5")) else {
        panic!("RESU 0.5 beside 0.6 admitted");
    };
    assert!(e.0.contains("RESU 1/2"), "{e}");
    assert!(h.register(&rate("0.4")).is_ok());
    // Malformed attachments.
    let both = rsv(ms(1), ms(10)).with("rate", Value::Str("0.1".into()));
    assert!(h.register(&both).unwrap_err().0.contains("not both"));
    let mut h = harness(1, Parent::Manual);
    assert!(h
        .register(&rsv(ms(11), ms(10)))
        .unwrap_err()
        .0
        .contains("exceeds"));
    assert!(h.register(&rsv(ms(1), Duration::ZERO)).is_err());
    assert!(h.register(&rate("2")).unwrap_err().0.contains("(0, 1]"));
    // Nothing given: the default reservation.
    let c = h.register(&Params::new()).unwrap();
    let info = h.message(Some(c), &Msg::new("info"));
    let Reply::Ok(p) = info else { panic!("{info}") };
    assert_eq!(p.get("amount"), Some(&Value::Duration(ms(1))));
    assert_eq!(p.get("period"), Some(&Value::Duration(ms(10))));
}

#[test]
fn leaving_frees_the_utilization() {
    let mut h = harness(1, Parent::Manual);
    let a = h.register(&rsv(ms(7), ms(10))).unwrap();
    assert!(h.register(&rsv(ms(4), ms(10))).is_err());
    h.unregister(a);
    assert!(h.register(&rsv(ms(4), ms(10))).is_ok());
}

#[test]
fn reserve_changes_a_reservation_at_run_time_and_release_drops_it() {
    let mut h = harness(1, Parent::Root);
    let a = h.register(&rsv(ms(2), ms(10))).unwrap();
    let b = h.register(&rsv(ms(5), ms(10))).unwrap();
    let reserve = |amount: u64, period: u64| {
        Msg::new("reserve")
            .arg("amount", Value::Duration(ms(amount)))
            .arg("period", Value::Duration(ms(period)))
    };
    let r = h.message(Some(a), &reserve(6, 10));
    assert!(matches!(&r, Reply::Err(e) if e.contains("11/10")), "{r}");
    let r = h.message(Some(a), &reserve(4, 20));
    let Reply::Ok(p) = r else { panic!("{r}") };
    assert_eq!(
        p.get("utilization"),
        Some(&Value::Str("1/5 (20.00%)".into()))
    );
    assert_eq!(p.get("reserved"), Some(&Value::Str("7/10 (70.00%)".into())));
    h.wake(a);
    h.advance_to(at(40));
    assert_eq!(got(h.segments(), a, at(0), at(20)), ms(4));
    assert_eq!(got(h.segments(), a, at(20), at(40)), ms(4));
    // From the operator, naming the child.
    let r = h.message(
        None,
        &Msg::new("release").arg("child", Value::Int(a.0 as i64)),
    );
    assert!(r.is_ok(), "{r}");
    assert_eq!(h.running_on(ParentVp(0)), None);
    h.advance_to(at(100));
    assert_eq!(got(h.segments(), a, at(40), at(100)), Duration::ZERO);
    let r = h.message(Some(b), &reserve(10, 10));
    assert!(r.is_ok(), "all of the CPU is free again: {r}");
    let r = h.message(None, &Msg::new("reserve").arg("amount", Value::Int(1)));
    assert!(matches!(&r, Reply::Err(e) if e.contains("child")), "{r}");
    let r = h.message(Some(b), &Msg::new("reserve").arg("bogus", Value::Int(1)));
    assert!(matches!(&r, Reply::Err(e) if e.contains("bogus")), "{r}");
}

#[test]
fn a_resu_child_gets_its_rate_between_consecutive_deadlines() {
    let mut h = harness(1, Parent::Root);
    let u = h.register(&rate("0.5")).unwrap();
    h.wake(u);
    assert_eq!(h.running_on(ParentVp(0)), None, "no deadline, no budget");
    assert!(h.message(Some(u), &deadline(at(10))).is_ok());
    assert_eq!(h.horizon(ParentVp(0)), Some(at(5)), "0.5 * (10 - 0)");
    assert!(h.message(Some(u), &deadline(at(30))).is_ok());
    assert!(h.message(Some(u), &deadline(at(34))).is_ok());
    h.advance_to(at(50));
    assert_eq!(got(h.segments(), u, at(0), at(10)), ms(5));
    assert_eq!(got(h.segments(), u, at(10), at(30)), ms(10));
    assert_eq!(got(h.segments(), u, at(30), at(34)), ms(2));
    assert_eq!(
        got(h.segments(), u, at(34), at(50)),
        Duration::ZERO,
        "no more deadlines"
    );
    let r = h.message(Some(u), &deadline(at(40)));
    assert!(
        matches!(&r, Reply::Err(e) if e.contains("not in the future")),
        "{r}"
    );
    let r = h.message(
        Some(u),
        &Msg::new("deadline")
            .arg("at", Value::Duration(ms(4)))
            .arg("relative", Value::Bool(true)),
    );
    assert!(r.is_ok(), "{r}");
    assert_eq!(h.horizon(ParentVp(0)), Some(at(52)));
}

#[test]
fn an_earlier_deadline_splits_the_current_job() {
    let mut h = harness(1, Parent::Root);
    let u = h.register(&rate("1/4")).unwrap();
    assert!(h.message(Some(u), &deadline(at(40))).is_ok()); // 10ms by 40
    h.wake(u);
    h.advance_to(at(2));
    assert!(h.message(Some(u), &deadline(at(10))).is_ok());
    // [2, 10) holds 2ms; the rest [10, 40) another 7.5ms.
    h.advance_to(at(40));
    assert_eq!(got(h.segments(), u, at(0), at(10)), ms(2) + ms(2));
    assert_eq!(
        got(h.segments(), u, at(10), at(40)),
        Duration::from_micros(7_500)
    );
    let r = h.message(Some(ChildId(0)), &Msg::new("deadline"));
    assert!(!r.is_ok());
    let plain = h.register(&rsv(ms(1), ms(10))).unwrap();
    let r = h.message(Some(plain), &deadline(at(100)));
    assert!(matches!(&r, Reply::Err(e) if e.contains("`rate`")), "{r}");
}

#[test]
fn on_a_slower_processor_budgets_are_in_its_time_and_deadlines_go_to_the_parent() {
    // Under RESU 1/2, RESBH 10, 20 is 5ms of CPU every 20ms (HLS section 5.1).
    let slow = Res::new(Share::parse("0.5", ShareRange::Rate).unwrap());
    assert!(slow.announces());
    let mut h = Harness::new(Box::new(slow), 1, Parent::Eager);
    let c = h.register(&rsv(ms(10), ms(20))).unwrap();
    h.take_effects();
    h.wake(c);
    let effects = h.take_effects();
    let told: Vec<&Msg> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::MsgParent { vp, msg } if *vp == ParentVp(0) => Some(msg),
            _ => None,
        })
        .collect();
    assert_eq!(told, vec![&deadline(at(20))]);
    // The deadline goes before the request for a CPU.
    let first_msg = effects
        .iter()
        .position(|e| matches!(e, Effect::MsgParent { .. }));
    let first_want = effects
        .iter()
        .position(|e| matches!(e, Effect::WantCpus(1)));
    assert!(first_msg < first_want, "{effects:?}");
    assert_eq!(h.horizon(ParentVp(0)), Some(at(5)));
    h.advance_to(at(100));
    for k in 0..5 {
        assert_eq!(got(h.segments(), c, at(20 * k), at(20 * k + 20)), ms(5));
    }
    let told: Vec<Msg> = h
        .take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::MsgParent { msg, .. } => Some(msg),
            _ => None,
        })
        .collect();
    let expected: Vec<Msg> = (2..=6).map(|k| deadline(at(20 * k))).collect();
    assert_eq!(told, expected, "each new window's end, once");
    assert!(!Res::new(Share::ONE).announces());
}

#[test]
fn a_tick_overrun_is_taken_from_the_next_window() {
    let mut res = Res::new(Share::ONE);
    let mut host = Host::new(1);
    host.vps[0] = VpState::Held(CpuId(0));
    let c = ChildId(0);
    host.call(&mut res, |s, cx| {
        s.register_vp(cx, c, &rsv(ms(2), ms(10))).unwrap()
    });
    host.call(&mut res, |s, cx| s.vp_request(cx, c));
    let (d, _) = host.call(&mut res, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
    assert_eq!(
        d,
        Dispatch::Run {
            child: c,
            until: at(2)
        }
    );
    host.now = at(3); // the tick after the horizon
    host.call(&mut res, |s, cx| s.charge(cx, c, ms(3)));
    let (d, _) = host.call(&mut res, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
    assert_eq!(d, Dispatch::Release);
    host.now = at(10);
    host.call(&mut res, |s, cx| s.timer(cx, 0));
    assert_eq!(res.job(c), Some((at(10), at(20), ms(1))), "1ms owed");
    assert!(res.check_invariants().is_ok());
}

#[test]
fn registry_builds_it_with_a_rate() {
    let ok = Params::new().with("rate", Value::Str("0.25".into()));
    assert_eq!(hsched_policies::build("res", &ok).unwrap().policy(), "res");
    let Err(e) = hsched_policies::build("res", &Params::new().with("rate", Value::Str("x".into())))
    else {
        panic!("a bad rate was accepted");
    };
    assert!(e.contains("rate"), "{e}");
}

/// Reservation parameters of random children: (amount, period) in µs.
fn reservations() -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec((1u64..40, 1u64..40), 1..7).prop_map(|v| {
        v.into_iter()
            .map(|(a, b)| {
                let period = 500 * (a.max(b) + 1);
                (500 * a.min(b).max(1), period)
            })
            .collect()
    })
}

#[derive(Clone, Copy, Debug)]
enum Act {
    Kit(Step),
    Reserve(u8, u16, u16),
    Release(u8),
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        6 => prop_oneof![
            any::<u8>().prop_map(Step::Wake),
            any::<u8>().prop_map(Step::Block),
            any::<u8>().prop_map(Step::Grant),
            any::<u8>().prop_map(Step::Revoke),
            any::<u8>().prop_map(Step::Register),
            any::<u8>().prop_map(Step::Unregister),
            (0u32..30_000).prop_map(Step::Advance),
        ].prop_map(Act::Kit),
        1 => (any::<u8>(), 1u16..20_000, 1u16..40_000).prop_map(|(n, a, p)| Act::Reserve(n, a, p)),
        1 => any::<u8>().prop_map(Act::Release),
    ]
}

proptest! {
    /// Children registered at 0 with admitted random reservations: those
    /// that never block get exactly their amount in every window of their
    /// grid (holding the CPU throughout: the root); every child gets at
    /// most its amount in every window, whatever it does.
    #[test]
    fn admitted_reservations_hold_in_every_window_and_never_more(
        set in reservations(),
        vps in 1u32..3,
        blocking in proptest::collection::vec(any::<bool>(), 7),
        steps in proptest::collection::vec((any::<u8>(), 0u32..20_000, any::<bool>()), 1..120),
    ) {
        let us = Duration::from_micros;
        let mut h = harness(vps, Parent::Root);
        let mut kids: Vec<(ChildId, Duration, Duration, bool)> = Vec::new();
        for (i, &(a, p)) in set.iter().enumerate() {
            if let Ok(c) = h.register(&rsv(us(a), us(p))) {
                kids.push((c, us(a), us(p), blocking[i]));
            }
        }
        for &(c, ..) in &kids {
            h.wake(c);
        }
        for (n, adv, toggle) in steps {
            let (c, _, _, may_block) = kids[n as usize % kids.len()];
            if may_block && toggle {
                if h.is_requesting(c) { h.block(c) } else { h.wake(c) }
            }
            h.advance(us(u64::from(adv)));
            h.assert_work_conserving_or_throttled();
        }
        let end = h.now();
        h.advance(Duration::from_millis(100)); // finishes the segments in progress
        for (c, amount, period, may_block) in kids {
            let mut k = 0;
            while Duration(period.as_nanos() * (k + 1)) <= end - Instant::ZERO {
                let from = Instant(period.as_nanos() * k);
                let got = got(h.segments(), c, from, from + period);
                prop_assert!(got <= amount, "{c}: {got} > {amount} in window {k}");
                if !may_block {
                    prop_assert_eq!(got, amount, "{} in window {}", c, k);
                }
                k += 1;
            }
        }
    }

    /// Random protocol runs with reservations changing and being dropped:
    /// the harness rejects every answer the dispatcher would eject for and
    /// checks the invariants after every callback.
    #[test]
    fn random_runs_keep_the_rules(
        vps in 1u32..4,
        parent in prop_oneof![Just(Parent::Root), Just(Parent::Manual), Just(Parent::Eager)],
        actions in proptest::collection::vec(act(), 1..150),
    ) {
        let mut h = harness(vps, parent);
        let params = [rsv(ms(1), ms(10)), rsv(ms(3), ms(7)), rate("1/5"), Params::new()];
        for a in actions {
            let kids = h.children();
            let pick = |n: u8| (!kids.is_empty()).then(|| kids[n as usize % kids.len()]);
            match a {
                Act::Kit(step) => h.step(step, &params),
                Act::Reserve(n, a, p) => {
                    if let Some(c) = pick(n) {
                        let msg = Msg::new("reserve")
                            .arg("amount", Value::Duration(Duration::from_micros(a.into())))
                            .arg("period", Value::Duration(Duration::from_micros(p.into())));
                        h.message(Some(c), &msg);
                        let dl = deadline(h.now() + Duration::from_micros(p.into()));
                        h.message(Some(c), &dl);
                    }
                }
                Act::Release(n) => {
                    if let Some(c) = pick(n) {
                        h.message(Some(c), &Msg::new("release"));
                    }
                }
            }
        }
    }
}

/// A check the harness does not have: every requesting child either runs
/// or has no budget left in its job.
trait Throttled {
    fn assert_work_conserving_or_throttled(&self);
}

impl Throttled for H {
    fn assert_work_conserving_or_throttled(&self) {
        let now = self.now();
        let waiting_with_budget = self
            .requesting()
            .into_iter()
            .filter(|&c| self.where_runs(c).is_none())
            .filter(|&c| {
                let (_, deadline, budget) = self.sched().job(c).unwrap();
                deadline > now && !budget.is_zero()
            })
            .count();
        let idle = (0..self.vp_count())
            .filter(|&v| self.running_on(ParentVp(v)).is_none())
            .count();
        assert!(
            waiting_with_budget == 0 || idle == 0,
            "at {now}: {waiting_with_budget} children wait with budget while {idle} CPUs idle"
        );
    }
}
