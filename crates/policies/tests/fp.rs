//! `fp` driven by the testkit harness: a higher priority preempts, an
//! equal or lower one waits, a preempted child resumes first in its level,
//! several CPUs and parent revocations, the quantum's round robin within a
//! level, a hundred thousand children, and the declared parameters.

use hsched_core::{ChildId, Duration, Effect, Instant, Params, ParentVp, Value, VpState};
use hsched_dispatch::testkit::{Harness, Parent};
use hsched_policies::fp::{FixedPriority, PRIO_MAX};

fn harness(vps: u32, parent: Parent, quantum: Option<Duration>) -> Harness<FixedPriority> {
    Harness::new(Box::new(FixedPriority::new(quantum)), vps, parent)
}

fn prio(p: i64) -> Params {
    Params::new().with("prio", Value::Int(p))
}

fn add(h: &mut Harness<FixedPriority>, prios: &[i64]) -> Vec<ChildId> {
    prios
        .iter()
        .map(|&p| h.register(&prio(p)).unwrap())
        .collect()
}

fn ms(n: u64) -> Instant {
    Instant(Duration::from_millis(n).as_nanos())
}

#[test]
fn higher_priority_wakeup_preempts() {
    let mut h = harness(1, Parent::Root, None);
    let c = add(&mut h, &[0, 5, 9]);
    h.wake(c[0]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    h.take_effects();
    h.wake(c[1]);
    let effects = h.take_effects();
    assert!(effects.contains(&Effect::Revoke(c[0])), "{effects:?}");
    assert_eq!(h.running_on(ParentVp(0)), Some(c[1]));
    h.wake(c[2]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[2]));
    h.block(c[2]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[1]));
    h.block(c[1]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
}

#[test]
fn lower_or_equal_priority_wakeup_does_not_preempt() {
    let mut h = harness(1, Parent::Root, None);
    let c = add(&mut h, &[3, 3, 1]);
    h.wake(c[0]);
    h.take_effects();
    h.wake(c[1]);
    h.wake(c[2]);
    let effects = h.take_effects();
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Revoke(_))),
        "{effects:?}"
    );
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    h.advance(Duration::from_secs(1));
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]), "FIFO: run to block");
    h.block(c[0]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[1]));
    h.block(c[1]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[2]));
}

#[test]
fn preempted_child_resumes_first_in_its_level() {
    let mut h = harness(1, Parent::Root, None);
    let c = add(&mut h, &[1, 1, 7]);
    h.wake(c[0]);
    h.wake(c[1]);
    h.wake(c[2]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[2]));
    h.block(c[2]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
}

#[test]
fn preempts_the_lowest_running_child_on_several_cpus() {
    let mut h = harness(2, Parent::Root, None);
    let c = add(&mut h, &[3, 1, 2, 5, 6]);
    h.wake(c[0]);
    h.wake(c[1]);
    let vp_of_low = h.where_runs(c[1]).unwrap();
    h.take_effects();
    h.wake(c[2]);
    assert!(h.take_effects().contains(&Effect::Revoke(c[1])));
    assert_eq!(h.running_on(vp_of_low), Some(c[2]));
    h.wake(c[3]);
    assert!(h.where_runs(c[2]).is_none(), "prio 2 was the lowest");
    h.wake(c[4]);
    let mut running: Vec<ChildId> = (0..2).filter_map(|v| h.running_on(ParentVp(v))).collect();
    running.sort();
    assert_eq!(running, vec![c[3], c[4]]);
    h.block(c[4]);
    let mut running: Vec<ChildId> = (0..2).filter_map(|v| h.running_on(ParentVp(v))).collect();
    running.sort();
    assert_eq!(running, vec![c[0], c[3]]);
}

#[test]
fn preempts_even_while_another_vp_is_only_requested() {
    let mut h = harness(2, Parent::Manual, None);
    let c = add(&mut h, &[1, 5]);
    h.wake(c[0]);
    h.grant(ParentVp(0));
    h.take_effects();
    h.wake(c[1]);
    assert_eq!(
        h.take_effects(),
        vec![Effect::WantCpus(2), Effect::Revoke(c[0])]
    );
    assert_eq!(h.running_on(ParentVp(0)), Some(c[1]));
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Requesting);
    h.grant(ParentVp(1));
    assert_eq!(h.running_on(ParentVp(1)), Some(c[0]));
}

#[test]
fn parent_revocation_displaces_a_lower_child_elsewhere() {
    let mut h = harness(2, Parent::Manual, None);
    let c = add(&mut h, &[9, 1]);
    h.wake(c[0]);
    h.wake(c[1]);
    h.grant(ParentVp(0));
    h.grant(ParentVp(1));
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    h.revoke(ParentVp(0));
    assert_eq!(
        h.running_on(ParentVp(1)),
        Some(c[0]),
        "prio 9 takes the CPU left"
    );
}

#[test]
fn quantum_shares_a_level_round_robin() {
    let q = Duration::from_millis(10);
    let mut h = harness(1, Parent::Root, Some(q));
    let c = add(&mut h, &[2, 2, 0]);
    for &x in &c {
        h.wake(x);
    }
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(10)));
    h.advance_to(ms(100));
    assert_eq!(h.cpu_time(c[0]), Duration::from_millis(50));
    assert_eq!(h.cpu_time(c[1]), Duration::from_millis(50));
    assert_eq!(h.cpu_time(c[2]), Duration::ZERO, "lower priority starves");
}

#[test]
fn hundred_thousand_children_in_priority_order() {
    let mut h = harness(4, Parent::Root, None);
    h.set_checking(false);
    let n = 100_000u32;
    // A scrambled priority per child (deterministic).
    let p = |i: u32| i64::from(i.wrapping_mul(2_654_435_761) % 1000);
    let c: Vec<ChildId> = (0..n).map(|i| h.register(&prio(p(i))).unwrap()).collect();
    for &x in &c {
        h.wake(x);
    }
    h.check();
    let mut last = i64::MAX;
    for _ in 0..2_000 {
        let x = h.running_on(ParentVp(0)).unwrap();
        let px = h.sched().prio(x).unwrap();
        // Whatever runs on CPU 0 never outranks what ran there before.
        assert!(px <= last);
        last = px;
        h.block(x);
    }
    h.check();
}

#[test]
fn registry_declares_prio() {
    let info = hsched_policies::find("fp").unwrap();
    let specs = (info.child_params)();
    assert_eq!(specs[0].name, "prio");
    assert!(Params::new()
        .with("prio", Value::Int(PRIO_MAX + 1))
        .resolve(&specs)
        .is_err());
    assert!(hsched_policies::build("fp", &Params::new()).is_ok());
}
