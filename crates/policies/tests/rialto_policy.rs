//! The `rialto` policy through the test harness: the protocol rules under
//! random runs, reservations refused with a reason, the graph followed on
//! one CPU.

use hsched_core::{Duration, Msg, Params, Reply, Value};
use hsched_policies::rialto::graph::GraphParams;
use hsched_policies::rialto::Rialto;
use hsched_policies::testkit::{Harness, Parent, Step};
use proptest::prelude::*;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn rialto() -> Box<Rialto> {
    Box::new(Rialto::new(
        GraphParams::default(),
        ms(10),
        Duration::from_secs(1),
    ))
}

fn act(name: &str) -> Params {
    Params::new().with("activity", Value::Str(name.into()))
}

fn reserve(amount: Duration, period: Duration) -> Msg {
    Msg::new("reserve")
        .arg("amount", Value::Duration(amount))
        .arg("period", Value::Duration(period))
}

#[test]
fn refused_reservations_say_why_and_change_nothing() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let a = h.register(&act("a")).unwrap();
    let b = h.register(&act("b")).unwrap();
    assert!(h.message(Some(a), &reserve(ms(6), ms(10))).is_ok());
    let Reply::Err(e) = h.message(Some(b), &reserve(ms(5), ms(10))) else {
        panic!("over capacity accepted");
    };
    assert!(e.contains("over capacity"), "{e}");
    let Reply::Err(e) = h.message(Some(b), &reserve(ms(11), ms(10))) else {
        panic!("amount above period accepted");
    };
    assert!(e.contains("invalid"), "{e}");
    assert!(h.sched().graph().granted(1).is_none());
    let Reply::Err(e) = h.message(None, &reserve(ms(1), ms(10))) else {
        panic!("operator reserved");
    };
    assert!(e.contains("thread attached"), "{e}");
    let Reply::Err(e) = h.message(Some(b), &Msg::new("release")) else {
        panic!("released nothing");
    };
    assert!(e.contains("no reservation"), "{e}");
    assert!(h.message(Some(a), &Msg::new("release")).is_ok());
    assert!(h.sched().graph().granted(0).is_none());
}

#[test]
fn one_cpu_follows_the_graph_and_shares_the_rest() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let a = h.register(&act("a")).unwrap();
    let hog = h.register(&Params::new()).unwrap();
    let Reply::Ok(g) = h.message(Some(a), &reserve(ms(4), ms(10))) else {
        panic!("refused");
    };
    assert_eq!(g.duration("amount"), ms(4));
    h.wake(hog);
    h.wake(a);
    h.advance(ms(1000));
    let (ta, th) = (h.cpu_time(a), h.cpu_time(hog));
    assert!(ta >= ms(400) && th >= ms(300), "{ta} {th}");
    h.assert_work_conserving();
    // The last thread of the activity leaving takes its reservation along.
    h.unregister(a);
    assert!(h.sched().graph().grants().next().is_none());
}

#[test]
fn constraints_begin_and_end_with_what_they_took() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let c = h.register(&Params::new()).unwrap();
    h.wake(c);
    let begin = Msg::new("begin_constraint")
        .arg("estimate", Value::Duration(ms(5)))
        .arg("deadline", Value::Duration(ms(20)))
        .arg("relative", Value::Bool(true));
    assert!(h.message(Some(c), &begin).is_ok());
    h.advance(ms(7));
    let Reply::Ok(r) = h.message(Some(c), &Msg::new("end_constraint")) else {
        panic!("end refused");
    };
    assert_eq!(r.duration("taken"), ms(7));
    assert!(!h.message(Some(c), &Msg::new("end_constraint")).is_ok());
    let late = Msg::new("begin_constraint")
        .arg("estimate", Value::Duration(ms(30)))
        .arg("deadline", Value::Duration(ms(20)))
        .arg("relative", Value::Bool(true));
    let Reply::Err(e) = h.message(Some(c), &late) else {
        panic!("infeasible constraint accepted");
    };
    assert!(e.contains("infeasible"), "{e}");
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<u8>().prop_map(Step::Register),
        any::<u8>().prop_map(Step::Unregister),
        any::<u8>().prop_map(Step::Wake),
        any::<u8>().prop_map(Step::Block),
        any::<u8>().prop_map(Step::Grant),
        any::<u8>().prop_map(Step::Revoke),
        (1u32..30_000).prop_map(Step::Advance),
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
    #[test]
    fn random_protocol_runs_keep_the_rules(
        vps in 1u32..4,
        parent in parent(),
        steps in proptest::collection::vec(step(), 1..150),
        amounts in proptest::collection::vec(1u64..8, 3),
    ) {
        let mut h = Harness::new(rialto(), vps, parent);
        let params = [act("x"), act("y"), Params::new()];
        for (i, step) in steps.into_iter().enumerate() {
            h.step(step, &params);
            if i % 10 == 0 {
                if let Some(&child) = h.children().first() {
                    let amount = ms(amounts[i / 10 % 3]);
                    let _ = h.message(Some(child), &reserve(amount, ms(10 * (1 + i as u64 % 3))));
                }
            }
            if parent != Parent::Manual {
                h.assert_work_conserving();
            }
        }
    }
}
