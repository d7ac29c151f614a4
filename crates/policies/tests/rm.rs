//! `rm` driven by the testkit harness (its behaviour through the protocol).

use hsched_core::{Duration, Effect, Params, ParentVp, Value};
use hsched_dispatch::testkit::{Harness, Parent};
use hsched_policies::rm::RateMonotonic;

fn period(ms: u64) -> Params {
    Params::new().with("period", Value::Duration(Duration::from_millis(ms)))
}

fn harness(vps: u32, parent: Parent) -> Harness<RateMonotonic> {
    Harness::new(Box::new(RateMonotonic::new()), vps, parent)
}

#[test]
fn shorter_period_runs_first_and_preempts() {
    let mut h = harness(1, Parent::Root);
    let none = h.register(&Params::new()).unwrap();
    let slow = h.register(&period(100)).unwrap();
    let fast = h.register(&period(10)).unwrap();
    h.wake(none);
    h.take_effects();
    h.wake(slow);
    assert!(h.take_effects().contains(&Effect::Revoke(none)));
    assert_eq!(h.running_on(ParentVp(0)), Some(slow));
    h.wake(fast);
    assert_eq!(h.running_on(ParentVp(0)), Some(fast));
    h.block(fast);
    assert_eq!(h.running_on(ParentVp(0)), Some(slow));
    h.block(slow);
    assert_eq!(h.running_on(ParentVp(0)), Some(none));
}

#[test]
fn equal_periods_run_in_activation_order_and_a_preempted_child_keeps_its_place() {
    let mut h = harness(1, Parent::Root);
    let a = h.register(&period(20)).unwrap();
    let b = h.register(&period(20)).unwrap();
    let top = h.register(&period(5)).unwrap();
    h.wake(a);
    h.wake(b);
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    h.wake(top);
    assert_eq!(h.running_on(ParentVp(0)), Some(top));
    h.block(top);
    assert_eq!(h.running_on(ParentVp(0)), Some(a), "a was ready first");
    h.advance(Duration::from_secs(1));
    assert_eq!(h.running_on(ParentVp(0)), Some(a), "no time slicing");
}

#[test]
fn registry_declares_period_and_wcet() {
    let info = hsched_policies::find("rm").unwrap();
    let names: Vec<&str> = (info.child_params)().iter().map(|s| s.name).collect();
    assert_eq!(names, ["period", "wcet"]);
    assert_eq!(
        hsched_policies::build("rm", &Params::new())
            .unwrap()
            .policy(),
        "rm"
    );
}
