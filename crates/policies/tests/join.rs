//! `join` driven by the testkit harness (its behaviour through the protocol).

use hsched_core::{ChildId, Dispatch, Duration, Effect, Instant, Params, ParentVp, VpState};
use hsched_dispatch::testkit::{Harness, Parent};
use hsched_policies::join::Join;

fn harness(vps: u32, parent: Parent) -> (Harness<Join>, ChildId) {
    let mut h = Harness::new(Box::new(Join::new()), vps, parent);
    let c = h.register(&Params::new()).unwrap();
    (h, c)
}

#[test]
fn requests_every_parent_and_runs_on_the_first_grant() {
    let (mut h, c) = harness(3, Parent::Manual);
    h.take_effects();
    h.wake(c);
    assert_eq!(h.take_effects(), vec![Effect::WantCpus(3)]);
    for v in 0..3 {
        assert_eq!(h.vp_state(ParentVp(v)), VpState::Requesting);
    }
    h.grant(ParentVp(2));
    assert_eq!(h.running_on(ParentVp(2)), Some(c));
    assert_eq!(h.horizon(ParentVp(2)), Some(Instant::NEVER));
}

#[test]
fn declines_a_grant_while_the_child_runs_elsewhere() {
    let (mut h, c) = harness(2, Parent::Manual);
    h.wake(c);
    h.grant(ParentVp(0));
    h.grant(ParentVp(1));
    let last = h.decisions().last().unwrap();
    assert_eq!((last.vp, last.dispatch), (ParentVp(1), Dispatch::Release));
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Idle);
    assert_eq!(h.running_on(ParentVp(0)), Some(c));
}

#[test]
fn asks_again_everywhere_when_its_cpu_is_taken() {
    let (mut h, c) = harness(2, Parent::Manual);
    h.wake(c);
    h.grant(ParentVp(0));
    h.grant(ParentVp(1)); // declined: VP 1 idles
    h.revoke(ParentVp(0));
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting);
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Requesting);
    h.grant(ParentVp(1));
    assert_eq!(h.running_on(ParentVp(1)), Some(c));
}

#[test]
fn releases_everything_when_the_child_blocks() {
    let (mut h, c) = harness(3, Parent::Manual);
    h.wake(c);
    h.grant(ParentVp(1));
    h.advance(Duration::from_millis(2));
    h.block(c);
    for v in 0..3 {
        assert_eq!(h.vp_state(ParentVp(v)), VpState::Idle, "vp{v}");
    }
    assert_eq!(h.cpu_time(c), Duration::from_millis(2));
    assert_eq!(h.decisions().last().unwrap().dispatch, Dispatch::Release);
}

#[test]
fn overrun_mode_asks_the_overrun_parent_only_once_the_budget_is_spent() {
    let ms = Duration::from_millis;
    let mut h = Harness::new(
        Box::new(Join::with_overrun(ms(5), ms(33)).unwrap()),
        2,
        Parent::Manual,
    );
    let c = h.register(&Params::new()).unwrap();
    h.wake(c);
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting);
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Idle, "budget left");
    h.grant(ParentVp(0));
    h.advance(ms(3));
    h.revoke(ParentVp(0)); // preempted with 2ms left: still not overrunning
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Idle);
    h.grant(ParentVp(0));
    h.advance(ms(2));
    h.revoke(ParentVp(0)); // the budget is spent
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Requesting);
    h.grant(ParentVp(1));
    assert_eq!(h.running_on(ParentVp(1)), Some(c));
    // The next window gives the budget back: off the overrun parent.
    h.advance_to(Instant::ZERO + ms(33));
    assert_eq!(h.running_on(ParentVp(1)), None);
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Idle);
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting);
}

#[test]
fn overrun_mode_needs_both_numbers() {
    let ms = Duration::from_millis;
    assert!(Join::with_overrun(ms(5), Duration::ZERO).is_err());
    assert!(Join::with_overrun(ms(40), ms(33)).is_err());
    assert!(Join::with_overrun(Duration::ZERO, Duration::ZERO).is_ok());
}

#[test]
fn takes_exactly_one_child() {
    let (mut h, c) = harness(2, Parent::Manual);
    let err = h.register(&Params::new()).unwrap_err();
    assert!(err.0.contains("exactly one child"), "{err}");
    h.unregister(c);
    assert!(
        h.register(&Params::new()).is_ok(),
        "the place is free again"
    );
}
