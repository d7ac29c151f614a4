//! `edf` driven by the testkit harness (its behaviour through the protocol).

use hsched_core::{ChildId, Duration, Effect, Instant, Params, ParentVp, Value};
use hsched_dispatch::testkit::{Harness, Parent};
use hsched_policies::edf::Edf;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Instant {
    Instant::ZERO.saturating_add(ms(n))
}

fn task(period: u64, deadline: u64, wcet: u64) -> Params {
    Params::new()
        .with("period", Value::Duration(ms(period)))
        .with("deadline", Value::Duration(ms(deadline)))
        .with("wcet", Value::Duration(ms(wcet)))
}

fn harness(vps: u32, parent: Parent) -> Harness<Edf> {
    Harness::new(Box::new(Edf::new(ms(10))), vps, parent)
}

#[test]
fn earliest_deadline_runs_and_preempts() {
    let mut h = harness(1, Parent::Root);
    let long = h.register(&task(100, 100, 0)).unwrap();
    let short = h.register(&task(10, 10, 0)).unwrap();
    h.wake(long);
    assert_eq!(h.running_on(ParentVp(0)), Some(long));
    h.take_effects();
    h.advance(ms(1));
    h.wake(short); // due at 11ms, before 100ms
    assert!(h.take_effects().contains(&Effect::Revoke(long)));
    assert_eq!(h.running_on(ParentVp(0)), Some(short));
    assert_eq!(h.sched().deadline_of(short), Some(at(11)));
    h.block(short);
    assert_eq!(h.running_on(ParentVp(0)), Some(long));
}

#[test]
fn equal_deadlines_go_to_the_job_ready_first_and_do_not_preempt() {
    let mut h = harness(1, Parent::Root);
    let a = h.register(&task(20, 20, 0)).unwrap();
    let b = h.register(&task(10, 20, 0)).unwrap();
    h.wake(a);
    h.take_effects();
    h.wake(b); // same deadline, 20ms
    let effects = h.take_effects();
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Revoke(_))),
        "{effects:?}"
    );
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
}

#[test]
fn jobs_follow_the_release_grid_from_the_first_wakeup() {
    let mut h = harness(1, Parent::Root);
    let c = h.register(&task(10, 8, 0)).unwrap();
    h.advance_to(at(3));
    h.wake(c);
    assert_eq!(h.sched().deadline_of(c), Some(at(11)));
    h.advance(ms(2));
    h.block(c); // job 0 done at 5ms
    h.advance_to(at(13));
    h.wake(c); // job 1 released at 13ms
    assert_eq!(h.sched().job_of(c), Some(1));
    assert_eq!(h.sched().deadline_of(c), Some(at(21)));
    h.advance(ms(1));
    h.block(c); // blocks inside job 1 (a mutex) ...
    h.advance(ms(1));
    h.wake(c); // ... and resumes it: same deadline
    assert_eq!(h.sched().job_of(c), Some(1));
    assert_eq!(h.sched().deadline_of(c), Some(at(21)));
    h.block(c);
    h.advance_to(at(43));
    h.wake(c); // skipped a period: job 4
    assert_eq!(h.sched().job_of(c), Some(4));
    assert_eq!(h.sched().deadline_of(c), Some(at(51)));
}

#[test]
fn an_overrunning_job_keeps_its_deadline_and_the_next_gets_its_own() {
    // T = 10, C = 6: job 0 is delayed by a 7ms job due at 9ms, finishes
    // at 13ms (late), and job 1 (released at 10, due at 20) follows
    // without a block.
    let mut h = harness(1, Parent::Root);
    let c = h.register(&task(10, 10, 6)).unwrap();
    let other = h.register(&task(100, 9, 0)).unwrap();
    h.wake(other);
    h.wake(c);
    assert_eq!(h.running_on(ParentVp(0)), Some(other));
    h.advance(ms(7));
    h.block(other);
    assert_eq!(h.running_on(ParentVp(0)), Some(c));
    assert_eq!(h.horizon(ParentVp(0)), Some(at(13)), "the rest of C");
    h.advance_to(at(12));
    assert_eq!(h.sched().deadline_of(c), Some(at(10)), "job 0, late");
    h.advance_to(at(13));
    assert_eq!(h.sched().job_of(c), Some(1));
    assert_eq!(h.sched().deadline_of(c), Some(at(20)));
    assert_eq!(h.running_on(ParentVp(0)), Some(c));
    assert_eq!(h.horizon(ParentVp(0)), Some(at(19)));
}

#[test]
fn a_job_past_its_wcet_before_the_next_release_keeps_its_deadline() {
    let mut h = harness(1, Parent::Root);
    let c = h.register(&task(10, 10, 2)).unwrap();
    h.wake(c);
    h.advance_to(at(2));
    // It used its wcet but job 1 is not released: still job 0, until 10ms.
    assert_eq!(h.sched().job_of(c), Some(0));
    assert_eq!(h.horizon(ParentVp(0)), Some(at(10)));
    h.advance_to(at(10));
    assert_eq!(h.sched().job_of(c), Some(1));
    assert_eq!(h.sched().deadline_of(c), Some(at(20)));
}

#[test]
fn aperiodic_children_take_a_job_per_wakeup() {
    let mut h = harness(1, Parent::Root);
    let own = h
        .register(&Params::new().with("deadline", Value::Duration(ms(3))))
        .unwrap();
    let dflt = h.register(&Params::new()).unwrap();
    h.advance_to(at(5));
    h.wake(dflt);
    h.wake(own);
    assert_eq!(h.sched().deadline_of(dflt), Some(at(15)));
    assert_eq!(h.sched().deadline_of(own), Some(at(8)));
    assert_eq!(h.running_on(ParentVp(0)), Some(own));
}

#[test]
fn global_edf_preempts_the_latest_deadline() {
    let mut h = harness(2, Parent::Root);
    let c: Vec<ChildId> = [50, 30, 10]
        .iter()
        .map(|&d| h.register(&task(100, d, 0)).unwrap())
        .collect();
    h.wake(c[0]);
    h.wake(c[1]);
    h.take_effects();
    h.wake(c[2]);
    assert!(h.take_effects().contains(&Effect::Revoke(c[0])));
    let mut running: Vec<ChildId> = (0..2).filter_map(|v| h.running_on(ParentVp(v))).collect();
    running.sort();
    assert_eq!(running, vec![c[1], c[2]]);
}

#[test]
fn registry_builds_it_and_refuses_a_zero_deadline() {
    assert_eq!(
        hsched_policies::build("edf", &Params::new())
            .unwrap()
            .policy(),
        "edf"
    );
    let zero = Params::new().with("deadline", Value::Duration(Duration::ZERO));
    assert!(hsched_policies::build("edf", &zero).is_err());
}
