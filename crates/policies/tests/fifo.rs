//! `fifo` driven by the testkit harness (its behaviour through the protocol).

use hsched_core::{
    ChildId, CpuId, Dispatch, Duration, Effect, Instant, Params, ParentVp, Scheduler, VpState,
};
use hsched_dispatch::testkit::{Harness, Host, Parent};
use hsched_policies::fifo::Fifo;

fn harness(vps: u32, parent: Parent) -> Harness<Fifo> {
    Harness::new(Box::new(Fifo::new()), vps, parent)
}

fn register(h: &mut Harness<Fifo>, n: usize) -> Vec<ChildId> {
    (0..n)
        .map(|_| h.register(&Params::new()).unwrap())
        .collect()
}

#[test]
fn runs_in_arrival_order_to_block() {
    let mut h = harness(1, Parent::Root);
    let c = register(&mut h, 3);
    h.wake(c[2]);
    h.wake(c[0]);
    h.wake(c[1]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[2]));
    assert_eq!(h.horizon(ParentVp(0)), Some(Instant::NEVER));
    h.advance(Duration::from_secs(5));
    assert_eq!(h.running_on(ParentVp(0)), Some(c[2]), "no time slicing");
    h.block(c[2]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    h.block(c[0]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[1]));
    h.block(c[1]);
    assert_eq!(h.running_on(ParentVp(0)), None);
    assert_eq!(h.decisions().last().unwrap().dispatch, Dispatch::Release);
}

#[test]
fn asks_for_one_cpu_per_runnable_child() {
    let mut h = harness(3, Parent::Manual);
    let c = register(&mut h, 2);
    h.take_effects();
    h.wake(c[0]);
    h.wake(c[1]);
    assert_eq!(
        h.take_effects(),
        vec![Effect::WantCpus(1), Effect::WantCpus(2)]
    );
    assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting);
    assert_eq!(h.vp_state(ParentVp(1)), VpState::Requesting);
    assert_eq!(h.vp_state(ParentVp(2)), VpState::Idle);
    h.grant(ParentVp(1));
    assert_eq!(h.running_on(ParentVp(1)), Some(c[0]));
    h.block(c[1]); // waiting child leaves the queue
    assert_eq!(
        h.vp_state(ParentVp(0)),
        VpState::Idle,
        "one runnable child, one VP"
    );
}

#[test]
fn preempted_child_keeps_its_turn() {
    let mut h = harness(1, Parent::Manual);
    let c = register(&mut h, 2);
    h.wake(c[0]);
    h.wake(c[1]);
    h.grant(ParentVp(0));
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    h.revoke(ParentVp(0));
    h.grant(ParentVp(0));
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]), "back at the head");
}

#[test]
fn several_cpus_take_the_head_in_turn() {
    let mut h = harness(2, Parent::Root);
    let c = register(&mut h, 4);
    for &x in &c {
        h.wake(x);
    }
    assert_eq!(h.running_on(ParentVp(0)), Some(c[0]));
    assert_eq!(h.running_on(ParentVp(1)), Some(c[1]));
    h.block(c[1]);
    assert_eq!(h.running_on(ParentVp(1)), Some(c[2]));
    h.unregister(c[0]);
    assert_eq!(h.running_on(ParentVp(0)), Some(c[3]));
    h.block(c[3]);
    assert_eq!(h.running_on(ParentVp(0)), None);
    h.assert_work_conserving();
}

#[test]
fn release_is_the_answer_when_nobody_waits() {
    let mut fifo = Fifo::new();
    let mut host = Host::new(1);
    host.vps[0] = VpState::Held(CpuId(0));
    let (d, effects) = host.call(&mut fifo, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
    assert_eq!(d, Dispatch::Release);
    assert!(effects.is_empty());
}

#[test]
fn registry_builds_it() {
    let s = hsched_policies::build("fifo", &Params::new()).unwrap();
    assert_eq!(s.policy(), "fifo");
    assert!(
        hsched_policies::build("fifo", &Params::new().with("x", hsched_core::Value::Int(1)))
            .is_err()
    );
}
