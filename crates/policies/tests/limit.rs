//! `limit` driven by the testkit harness (its behaviour through the protocol).

use hsched_core::{
    ChildId, CpuId, Dispatch, Duration, Effect, Instant, Params, ParentVp, Scheduler, Value,
    VpState,
};
use hsched_dispatch::testkit::{usage_per_period, Harness, Parent};
use hsched_policies::limit::{Limit, PERIOD_TIMER};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Instant {
    Instant(ms(n).as_nanos())
}

fn harness(x: u64, y: u64, parent: Parent, start: Instant) -> (Harness<Limit>, ChildId) {
    let limit = Limit::new(ms(x), ms(y)).unwrap();
    let mut h = Harness::new_at(Box::new(limit), 1, parent, start);
    let c = h.register(&Params::new()).unwrap();
    (h, c)
}

#[test]
fn cpu_bound_child_gets_exactly_the_budget_every_period() {
    let (mut h, c) = harness(3, 10, Parent::Eager, Instant::ZERO);
    h.wake(c);
    assert_eq!(h.horizon(ParentVp(0)), Some(at(3)));
    h.advance_to(at(3));
    assert_eq!(
        h.vp_state(ParentVp(0)),
        VpState::Idle,
        "budget spent: CPU released"
    );
    assert_eq!(h.timer(PERIOD_TIMER), Some(at(10)));
    h.advance_to(at(10));
    assert_eq!(
        h.running_on(ParentVp(0)),
        Some(c),
        "re-requested at the boundary"
    );
    h.advance_to(at(1_000));
    let usage = usage_per_period(h.segments(), Instant::ZERO, ms(10));
    assert_eq!(usage.len(), 100);
    assert!(usage.iter().all(|&u| u == ms(3).as_nanos()), "{usage:?}");
}

#[test]
fn periods_are_aligned_to_creation() {
    let start = at(7);
    let (mut h, c) = harness(2, 10, Parent::Eager, start);
    h.advance_to(at(15));
    h.wake(c);
    assert_eq!(h.horizon(ParentVp(0)), Some(at(17)));
    h.advance_to(at(17));
    // 17 starts a new period: fresh budget at once.
    assert_eq!(h.horizon(ParentVp(0)), Some(at(19)));
    h.advance_to(at(19));
    assert_eq!(h.timer(PERIOD_TIMER), Some(at(27)), "boundaries at 7 + 10k");
    h.advance_to(at(27));
    assert_eq!(h.running_on(ParentVp(0)), Some(c));
    assert_eq!(h.sched().period_start(), at(27));
}

#[test]
fn segment_across_a_boundary_is_split() {
    let (mut h, c) = harness(4, 10, Parent::Eager, Instant::ZERO);
    h.advance_to(at(8));
    h.wake(c); // 4ms left: runs until 12, 2ms in each period
    assert_eq!(h.horizon(ParentVp(0)), Some(at(12)));
    h.advance_to(at(12));
    assert_eq!(h.sched().remaining(), ms(2));
    assert_eq!(h.horizon(ParentVp(0)), Some(at(14)));
    h.advance_to(at(14));
    assert_eq!(h.running_on(ParentVp(0)), None);
    assert_eq!(h.timer(PERIOD_TIMER), Some(at(20)));
}

#[test]
fn waking_with_no_budget_waits_for_the_boundary() {
    let (mut h, c) = harness(2, 10, Parent::Manual, Instant::ZERO);
    h.wake(c);
    h.grant(ParentVp(0));
    h.advance_to(at(1));
    h.block(c);
    h.wake(c);
    h.grant(ParentVp(0));
    h.advance_to(at(2)); // budget spent at 2
    h.block(c);
    h.take_effects();
    h.wake(c);
    assert_eq!(
        h.take_effects(),
        vec![
            Effect::WantCpus(0),
            Effect::SetTimer {
                key: PERIOD_TIMER,
                at: at(10)
            }
        ]
    );
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Idle);
    h.advance_to(at(10));
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting);
}

#[test]
fn revoked_after_the_budget_is_spent_stops_asking() {
    let (mut h, c) = harness(2, 10, Parent::Manual, Instant::ZERO);
    h.wake(c);
    h.grant(ParentVp(0));
    // The parent takes the CPU exactly when the budget runs out, before
    // the horizon is handled.
    h.advance_to(at(2) - Duration(1));
    h.revoke(ParentVp(0));
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting, "1ns left");
    h.grant(ParentVp(0));
    h.advance_to(at(2));
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Idle);
    assert_eq!(h.cpu_time(c), ms(2));
}

#[test]
fn rejects_budget_beyond_period_and_a_second_child() {
    let params = Params::new()
        .with("budget", Value::Duration(ms(20)))
        .with("period", Value::Duration(ms(10)));
    let Err(err) = hsched_policies::build("limit", &params) else {
        panic!("budget > period accepted");
    };
    assert!(err.contains("budget") && err.contains("period"), "{err}");
    let Err(err) = hsched_policies::build("limit", &Params::new()) else {
        panic!("missing parameters accepted");
    };
    assert!(err.contains("missing parameter"), "{err}");
    let ok = Params::new()
        .with("budget", Value::Str("10ms".into()))
        .with("period", Value::Str("10ms".into()));
    assert!(
        hsched_policies::build("limit", &ok).is_ok(),
        "budget == period is allowed"
    );
    let (mut h, _) = harness(1, 2, Parent::Manual, Instant::ZERO);
    assert!(h.register(&Params::new()).is_err());
}

/// With a tick the dispatcher ends a segment at the first tick after its
/// horizon; the overrun is taken from the next period.
#[test]
fn an_overrun_is_a_debt_on_the_next_period() {
    use hsched_dispatch::testkit::Host;
    let mut limit = Limit::new(ms(2), ms(10)).unwrap();
    let mut host = Host::new(1);
    host.tick = Some(ms(3));
    host.call(&mut limit, |s, cx| s.init(cx));
    let c = ChildId(0);
    host.call(&mut limit, |s, cx| {
        s.register_vp(cx, c, &Params::new()).unwrap()
    });
    host.call(&mut limit, |s, cx| s.vp_request(cx, c));
    host.vps[0] = VpState::Held(CpuId(0));
    let (d, _) = host.call(&mut limit, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
    assert_eq!(
        d,
        Dispatch::Run {
            child: c,
            until: at(2)
        }
    );
    host.now = at(3); // the tick after the horizon
    host.call(&mut limit, |s, cx| s.charge(cx, c, ms(3)));
    let (d, effects) = host.call(&mut limit, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
    assert_eq!(d, Dispatch::Release);
    assert!(effects.contains(&Effect::SetTimer {
        key: PERIOD_TIMER,
        at: at(10)
    }));
    host.now = at(10);
    host.call(&mut limit, |s, cx| s.timer(cx, PERIOD_TIMER));
    assert_eq!(
        limit.remaining(),
        ms(1),
        "1ms of overrun paid from this period"
    );
    assert!(limit.check_invariants().is_ok());
}
