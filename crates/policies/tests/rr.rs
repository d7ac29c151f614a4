//! `rr` driven by the testkit harness (its behaviour through the protocol).

use hsched_core::{ChildId, Duration, Effect, Instant, Params, ParentVp, Value};
use hsched_dispatch::testkit::{Harness, Parent};
use hsched_policies::rr::RoundRobin;

const Q: Duration = Duration::from_millis(10);

fn harness(vps: u32, parent: Parent) -> Harness<RoundRobin> {
    Harness::new(Box::new(RoundRobin::new(Q).unwrap()), vps, parent)
}

fn register(h: &mut Harness<RoundRobin>, n: usize) -> Vec<ChildId> {
    (0..n)
        .map(|_| h.register(&Params::new()).unwrap())
        .collect()
}

fn ms(n: u64) -> Instant {
    Instant(Duration::from_millis(n).as_nanos())
}

#[test]
fn rotates_with_quantum_horizons() {
    let mut h = harness(1, Parent::Root);
    let c = register(&mut h, 3);
    for &x in &c {
        h.wake(x);
    }
    h.advance_to(ms(45));
    let expect = vec![
        (ms(0), c[0], ms(10)),
        (ms(10), c[1], ms(20)),
        (ms(20), c[2], ms(30)),
        (ms(30), c[0], ms(40)),
        (ms(40), c[1], ms(50)),
    ];
    assert_eq!(h.runs(), expect);
}

#[test]
fn waking_child_goes_to_the_back_without_preempting() {
    let mut h = harness(1, Parent::Root);
    let c = register(&mut h, 3);
    h.wake(c[0]);
    h.wake(c[1]);
    h.advance_to(ms(3));
    h.take_effects();
    h.wake(c[2]);
    assert_eq!(
        h.take_effects(),
        vec![Effect::WantCpus(3)],
        "no revoke, no reschedule"
    );
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    h.clear_decisions();
    h.advance_to(ms(25));
    let order: Vec<ChildId> = h.runs().iter().map(|r| r.1).collect();
    assert_eq!(order, vec![c[1], c[2]]);
}

#[test]
fn blocking_passes_the_turn_and_waking_gets_a_fresh_slice() {
    let mut h = harness(1, Parent::Root);
    let c = register(&mut h, 2);
    h.wake(c[0]);
    h.wake(c[1]);
    h.advance_to(ms(4));
    h.block(c[0]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[1]));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(14)));
    h.wake(c[0]);
    h.advance_to(ms(14));
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(24)));
}

#[test]
fn parent_preemption_keeps_the_rest_of_the_slice_at_the_head() {
    let mut h = harness(1, Parent::Manual);
    let c = register(&mut h, 2);
    h.wake(c[0]);
    h.wake(c[1]);
    h.grant(ParentVp(0));
    h.advance_to(ms(4));
    h.revoke(ParentVp(0));
    h.advance_to(ms(50));
    h.grant(ParentVp(0));
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    assert_eq!(
        h.horizon(ParentVp(0)),
        Some(ms(56)),
        "6ms of its slice were left"
    );
    h.advance_to(ms(56));
    assert_eq!(h.running_on(ParentVp(0)), Some(c[1]));
    assert_eq!(h.cpu_time(c[0]), Q);
}

#[test]
fn cpu_bound_children_share_exactly_per_round() {
    let mut h = harness(1, Parent::Root);
    let c = register(&mut h, 100);
    for &x in &c {
        h.wake(x);
    }
    // 7 full rounds of 100 quanta.
    h.advance_to(ms(7 * 100 * 10));
    for &x in &c {
        assert_eq!(h.cpu_time(x), Duration::from_millis(70), "{x}");
    }
    h.assert_work_conserving();
}

#[test]
fn several_cpus_stay_within_one_quantum() {
    let mut h = harness(3, Parent::Root);
    let c = register(&mut h, 7);
    for &x in &c {
        h.wake(x);
    }
    h.advance_to(ms(1_003));
    h.assert_work_conserving();
    let times: Vec<Duration> = c.iter().map(|&x| h.cpu_time(x)).collect();
    let (lo, hi) = (times.iter().min().unwrap(), times.iter().max().unwrap());
    assert!(*hi - *lo <= Q, "{times:?}");
    let total: u64 = times.iter().map(|t| t.as_nanos()).sum();
    // Finished segments only: the three running now are not counted yet.
    assert!(total >= Duration::from_millis(3 * 1_000 - 30).as_nanos());
}

#[test]
fn hundred_thousand_children_one_round() {
    let mut h = harness(4, Parent::Root);
    h.set_checking(false);
    let c = register(&mut h, 100_000);
    for &x in &c {
        h.wake(x);
    }
    h.check();
    // One round: 100,000 quanta on 4 CPUs.
    h.advance_to(ms(100_000 / 4 * 10));
    h.check();
    assert!(c.iter().all(|&x| h.cpu_time(x) == Q));
    assert_eq!(h.decisions().len(), 100_000 + 4);
}

#[test]
fn rejects_a_zero_quantum() {
    assert!(RoundRobin::new(Duration::ZERO).is_err());
    let Err(err) = hsched_policies::build("rr", &Params::new().with("quantum", Value::Int(0)))
    else {
        panic!("a zero quantum was accepted");
    };
    assert!(err.contains("quantum"), "{err}");
    let rr = hsched_policies::build("rr", &Params::new()).unwrap();
    assert_eq!(rr.policy(), "rr");
}
