//! The `rialto` policy through the test harness: the protocol rules under
//! random runs (mutex, constraint and RPC messages included), reservations
//! refused with a reason, the graph followed on one CPU, the §4.6 selection
//! rules and their round-robin order, the §4.5 second-chance queue and §4.2
//! inheritance across mutexes and RPCs.

use hsched_core::{ChildId, Dispatch, Duration, Instant, Msg, Params, ParentVp, Reply, Value};
use hsched_dispatch::testkit::{Harness, Parent, Step};
use hsched_policies::rialto::graph::GraphParams;
use hsched_policies::rialto::Rialto;
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
            let kids = h.children();
            if !kids.is_empty() {
                let child = kids[i % kids.len()];
                let m = match i % 7 {
                    1 => Some(mutex("lock", (i / 7 % 2) as i64)),
                    2 => Some(mutex("block_on", (i / 7 % 2) as i64)),
                    3 => Some(mutex("unlock", (i / 7 % 2) as i64)),
                    4 => Some(begin(ms(1 + i as u64 % 20), ms(5 + i as u64 % 40))),
                    5 => Some(Msg::new("end_constraint")),
                    _ => None,
                };
                if let Some(m) = m {
                    let _ = h.message(Some(child), &m);
                }
                let other = kids[(i * 5 + 3) % kids.len()];
                let port = (i / 11 % 2) as i64;
                let r = match i % 11 {
                    2 => Some(rpc("rpc_serve", port)),
                    5 | 9 => Some(rpc("rpc_call", port)),
                    8 => Some(Msg::new("rpc_reply")),
                    _ => None,
                };
                if let Some(r) = r {
                    let _ = h.message(Some(other), &r);
                }
            }
            if parent != Parent::Manual {
                h.assert_work_conserving();
            }
        }
    }
}

fn begin(estimate: Duration, deadline: Duration) -> Msg {
    Msg::new("begin_constraint")
        .arg("estimate", Value::Duration(estimate))
        .arg("deadline", Value::Duration(deadline))
        .arg("relative", Value::Bool(true))
}

fn mutex(name: &str, m: i64) -> Msg {
    Msg::new(name).arg("mutex", Value::Int(m))
}

fn rpc(name: &str, port: i64) -> Msg {
    Msg::new(name).arg("port", Value::Int(port))
}

/// §4.6 rule 5: free time goes round robin among activities, not threads;
/// rule 3: within an activity, round robin among its threads.
#[test]
fn free_time_is_shared_by_activities_then_threads() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let many: Vec<_> = (0..3).map(|_| h.register(&act("many")).unwrap()).collect();
    let one = h.register(&act("one")).unwrap();
    for &t in &many {
        h.wake(t);
    }
    h.wake(one);
    h.advance(ms(1200));
    let total = Duration(many.iter().map(|&t| h.cpu_time(t).0).sum());
    let solo = h.cpu_time(one);
    assert!(solo >= ms(590) && total >= ms(590), "{solo} {total}");
    for &t in &many {
        let x = h.cpu_time(t);
        assert!(x >= ms(190) && x <= ms(210), "{x}");
    }
    h.assert_work_conserving();
}

/// §4.6 rule 3 (1): a thread with a pending denied constraint goes first in
/// its activity's time, until `end_constraint`.
#[test]
fn denied_constraints_go_first_in_their_activity() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let t: Vec<_> = (0..3).map(|_| h.register(&act("a")).unwrap()).collect();
    let Reply::Err(e) = h.message(Some(t[2]), &begin(ms(500), ms(100))) else {
        panic!("infeasible constraint accepted");
    };
    assert!(e.contains("denied"), "{e}");
    // Selection happens at decisions (a quantum's end, a block): the
    // denied thread wakes first so it holds the first one.
    for &c in t.iter().rev() {
        h.wake(c);
    }
    let before: Vec<_> = t.iter().map(|&c| h.cpu_time(c)).collect();
    h.advance(ms(90));
    assert_eq!(h.running_on(ParentVp(0)), Some(t[2]));
    assert_eq!(h.cpu_time(t[0]), before[0]);
    assert_eq!(h.cpu_time(t[1]), before[1]);
    let Reply::Ok(r) = h.message(Some(t[2]), &Msg::new("end_constraint")) else {
        panic!("end of a denied constraint refused");
    };
    assert!(r.bool("denied"));
    assert!(r.duration("taken") >= ms(90), "{}", r.duration("taken"));
    h.block(t[2]);
    h.advance(ms(300));
    assert!(h.cpu_time(t[0]) >= ms(90) && h.cpu_time(t[1]) >= ms(90));
}

/// §4.5: an activity that blocks briefly during its node and wakes before
/// its next node gets the lost time back in free time.
#[test]
fn briefly_blocked_activity_gets_a_second_chance() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let a = h.register(&act("a")).unwrap();
    let hog = h.register(&act("hog")).unwrap();
    assert!(h.message(Some(a), &reserve(ms(4), ms(20))).is_ok());
    h.wake(hog);
    h.wake(a);
    // Find the start of a node of `a` a few periods in.
    let mut t = h.now() + ms(40);
    let node = loop {
        let (s, e, act) = h.sched().interval_at(t);
        if act == Some(0) && s >= t {
            break (s, e);
        }
        t = if act == Some(0) {
            e
        } else {
            e.max(t + Duration(1))
        };
    };
    h.advance_to(node.0 + ms(1));
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    h.block(a);
    let ran = h.cpu_time(a);
    assert_eq!(h.sched().second_chance_queue(), vec![(0, ms(3))]);
    h.advance_to(node.1 + ms(1));
    h.wake(a);
    h.advance(ms(3));
    h.block(a);
    // It ran the 3ms it lost, ahead of the hog's free-time turn.
    assert_eq!(h.cpu_time(a) - ran, ms(3));
    assert!(h.sched().second_chance_queue().is_empty());
    h.assert_work_conserving();
}

/// §4.2: a holder of a mutex that a constrained thread waits for runs with
/// the waiter's constraint until it unlocks.
#[test]
fn mutex_holder_inherits_the_waiters_constraint() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let waiter = h.register(&act("w")).unwrap();
    let holder = h.register(&act("h")).unwrap();
    let hog = h.register(&act("x")).unwrap();
    assert!(h.message(Some(holder), &mutex("lock", 7)).is_ok());
    let Reply::Err(e) = h.message(Some(waiter), &mutex("lock", 7)) else {
        panic!("a held mutex was locked again");
    };
    assert!(e.contains("block_on"), "{e}");
    h.wake(hog);
    h.wake(holder);
    h.wake(waiter);
    assert!(h.message(Some(waiter), &begin(ms(20), ms(100))).is_ok());
    assert!(h.message(Some(waiter), &mutex("block_on", 7)).is_ok());
    h.block(waiter);
    // The holder runs the waiter's constraint time, ahead of the hog.
    let x0 = h.cpu_time(hog);
    h.advance(ms(15));
    assert_eq!(h.running_on(ParentVp(0)), Some(holder));
    assert_eq!(h.cpu_time(hog), x0);
    let Reply::Ok(r) = h.message(Some(holder), &mutex("unlock", 7)) else {
        panic!("unlock refused");
    };
    assert!(r.bool("handed_over"));
    // Awake again, the waiter runs at once what the holder left of the
    // constraint's 20ms.
    let w0 = h.cpu_time(waiter);
    h.wake(waiter);
    h.advance(ms(5));
    assert_eq!(h.cpu_time(waiter) - w0, ms(5));
    assert!(!h.message(Some(holder), &mutex("unlock", 7)).is_ok());
    assert!(h.message(Some(waiter), &mutex("unlock", 7)).is_ok());
}

/// §4.6 rule 1: with less than the threshold left in a node, the next node
/// is selected (here: the reserved activity's, up to its end).
#[test]
fn little_left_of_a_node_selects_the_next() {
    let r =
        Rialto::new(GraphParams::default(), ms(10), Duration::from_secs(1)).with_threshold(ms(2));
    let mut h = Harness::new(Box::new(r), 1, Parent::Root);
    let a = h.register(&act("a")).unwrap();
    let x = h.register(&act("x")).unwrap();
    let y = h.register(&act("y")).unwrap();
    assert!(h.message(Some(a), &reserve(ms(4), ms(20))).is_ok());
    h.wake(x);
    h.wake(y);
    let mut t = h.now() + ms(40);
    let (s, e) = loop {
        let (s, e, act) = h.sched().interval_at(t);
        if act == Some(0) && s >= t {
            break (s, e);
        }
        t = e;
    };
    h.advance_to(s - ms(1));
    h.wake(a);
    let hog = h.running_on(ParentVp(0)).unwrap();
    assert_ne!(hog, a);
    h.block(hog);
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    assert_eq!(h.horizon(ParentVp(0)), Some(e));
}

/// §4.2: the waiter runs on until it really blocks; then the holder takes
/// its constraint's time, and a second waiter without a constraint passes
/// nothing on.
#[test]
fn inheritance_starts_when_the_waiter_blocks() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let hog = h.register(&act("x")).unwrap();
    let waiter = h.register(&act("w")).unwrap();
    let holder = h.register(&act("h")).unwrap();
    let plain = h.register(&act("p")).unwrap();
    h.wake(hog);
    assert!(h.message(Some(holder), &mutex("lock", 1)).is_ok());
    h.wake(holder);
    assert!(h.message(Some(plain), &mutex("block_on", 1)).is_ok());
    assert!(h.message(Some(waiter), &begin(ms(20), ms(100))).is_ok());
    h.wake(waiter);
    assert_eq!(h.running_on(ParentVp(0)), Some(waiter));
    assert!(h.message(Some(waiter), &mutex("block_on", 1)).is_ok());
    assert_eq!(h.running_on(ParentVp(0)), Some(waiter));
    h.block(waiter);
    assert_eq!(h.running_on(ParentVp(0)), Some(holder));
    let now = h.now();
    assert_eq!(h.horizon(ParentVp(0)), Some(now + ms(20)));
    // Unlocking hands the mutex to the first waiter and ends the inherited run.
    let Reply::Ok(r) = h.message(Some(holder), &mutex("unlock", 1)) else {
        panic!("unlock refused");
    };
    assert!(r.bool("handed_over"));
    // The mutex went to `plain` (first in line), which has no constraint and
    // does not run: the decision is re-made, plain round robin (a quantum).
    let now = h.now();
    assert_eq!(h.horizon(ParentVp(0)), Some(now + ms(10)));
    assert!(h.message(Some(plain), &mutex("unlock", 1)).is_ok());
    // Handed on to the constrained waiter, which may now unlock it.
    assert!(h.message(Some(waiter), &mutex("unlock", 1)).is_ok());
    assert!(!h.message(Some(waiter), &mutex("unlock", 1)).is_ok());
}

/// The children run on VP 0 by the decisions recorded, in order.
fn runs(h: &Harness<Rialto>) -> Vec<ChildId> {
    h.decisions()
        .iter()
        .filter(|d| d.vp == ParentVp(0))
        .filter_map(|d| match d.dispatch {
            Dispatch::Run { child, .. } => Some(child),
            _ => None,
        })
        .collect()
}

/// §3.5, §4.6 rule 5: free time is plain round robin among activities. An
/// activity none of whose threads waited or ran takes a fresh turn at the
/// back of the queue when one wakes: a briefly sleeping activity does not
/// jump ahead of the CPU-bound ones (the paper's Fig. 5-5 response of
/// about 50 + 50N ms rests on this).
#[test]
fn a_waking_activity_goes_to_the_back_of_the_round_robin() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let s = h.register(&act("s")).unwrap();
    let [a, b, c] = ["a", "b", "c"].map(|n| h.register(&act(n)).unwrap());
    for t in [s, a, b, c] {
        h.wake(t);
    }
    h.advance(ms(5));
    assert_eq!(h.running_on(ParentVp(0)), Some(s));
    // 10ms quanta from 5ms: a, b, c, a, then b from 45ms.
    h.block(s);
    h.advance(ms(42));
    assert_eq!(h.running_on(ParentVp(0)), Some(b));
    h.clear_decisions();
    h.wake(s);
    h.advance(ms(47));
    // `s` queues behind every activity that had a turn since it slept, the
    // one running when it woke included (it went to the back when picked).
    assert_eq!(runs(&h), vec![c, a, b, s]);
}

/// §3.4: within an activity too, a thread that wakes takes a fresh turn at
/// the back of its activity's line.
#[test]
fn a_waking_thread_goes_to_the_back_of_its_activitys_line() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let [t1, t2, t3] = [(); 3].map(|_| h.register(&act("m")).unwrap());
    for t in [t1, t2, t3] {
        h.wake(t);
    }
    h.advance(ms(5));
    assert_eq!(h.running_on(ParentVp(0)), Some(t1));
    // 10ms quanta from 5ms: t2, then t3 from 15ms.
    h.block(t1);
    h.advance(ms(12));
    assert_eq!(h.running_on(ParentVp(0)), Some(t3));
    h.clear_decisions();
    h.wake(t1);
    h.advance(ms(37));
    assert_eq!(runs(&h), vec![t2, t3, t1]);
}

/// CPU time `child` received in `[a, b)` (finished segments).
fn ran_in(h: &Harness<Rialto>, child: ChildId, a: Instant, b: Instant) -> Duration {
    Duration(
        h.segments()
            .iter()
            .filter(|s| s.child == child && s.start < b && s.end > a)
            .map(|s| (s.end.min(b) - s.start.max(a)).0)
            .sum(),
    )
}

/// §4.2 RPC: while it serves a call, the server is scheduled in the
/// caller's activity: it runs in the caller's reserved intervals (5ms in
/// every 10ms here) while the caller is blocked; after the reply it is back
/// in its own activity. Refusals say why.
#[test]
fn an_rpc_server_runs_in_the_callers_activity() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let client = h.register(&act("c")).unwrap();
    let server = h.register(&act("s")).unwrap();
    let [x, y] = ["x", "y"].map(|n| h.register(&act(n)).unwrap());
    let own = h.sched().activity_of(server).unwrap();
    let callers = h.sched().activity_of(client).unwrap();
    assert!(h.message(Some(client), &reserve(ms(5), ms(10))).is_ok());
    assert!(h.message(Some(server), &rpc("rpc_serve", 1)).is_ok());
    for (from, m, why) in [
        (x, rpc("rpc_serve", 1), "already has a server"),
        (client, rpc("rpc_call", 2), "no server"),
        (server, rpc("rpc_call", 1), "itself"),
        (client, Msg::new("rpc_reply"), "serves no call"),
    ] {
        let Reply::Err(e) = h.message(Some(from), &m) else {
            panic!("`{}` accepted", m.name);
        };
        assert!(e.contains(why), "{e}");
    }
    for t in [server, x, y, client] {
        h.wake(t);
    }
    h.advance(ms(30));
    assert!(h.message(Some(client), &rpc("rpc_call", 1)).is_ok());
    assert_eq!(h.sched().scheduled_in(server), Some(callers));
    let Reply::Err(e) = h.message(Some(x), &rpc("rpc_call", 1)) else {
        panic!("a busy server took a second call");
    };
    assert!(e.contains("busy"), "{e}");
    h.block(client);
    let from = h.now() + ms(10);
    h.advance(ms(100));
    for t in (0..80).map(|k| from + Duration::from_micros(k * 1000)) {
        let got = ran_in(&h, server, t, t + ms(10));
        assert!(got >= ms(5), "window at {t}: {got}");
    }
    assert!(h.message(Some(server), &Msg::new("rpc_reply")).is_ok());
    assert_eq!(h.sched().scheduled_in(server), Some(own));
    let from = h.now() + ms(10);
    h.advance(ms(100));
    let short = (0..80)
        .map(|k| from + Duration::from_micros(k * 1000))
        .filter(|&t| ran_in(&h, server, t, t + ms(10)) < ms(5))
        .count();
    assert!(short > 0, "the server kept the caller's reserved time");
    h.assert_work_conserving();
}

/// §4.2 RPC: a caller with a constraint that blocks in a call passes the
/// constraint to the server, as to a mutex holder.
#[test]
fn an_rpc_server_inherits_the_blocked_callers_constraint() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let hog = h.register(&act("x")).unwrap();
    let client = h.register(&act("c")).unwrap();
    let server = h.register(&act("s")).unwrap();
    assert!(h.message(Some(server), &rpc("rpc_serve", 4)).is_ok());
    h.wake(hog);
    h.wake(server);
    h.wake(client);
    assert!(h.message(Some(client), &begin(ms(20), ms(100))).is_ok());
    assert_eq!(h.running_on(ParentVp(0)), Some(client));
    assert!(h.message(Some(client), &rpc("rpc_call", 4)).is_ok());
    h.block(client);
    assert_eq!(h.running_on(ParentVp(0)), Some(server));
    let now = h.now();
    assert_eq!(h.horizon(ParentVp(0)), Some(now + ms(20)));
    h.advance(ms(5));
    // The reply ends the inherited run: the decision is made again.
    assert!(h.message(Some(server), &Msg::new("rpc_reply")).is_ok());
    assert_eq!(h.horizon(ParentVp(0)), Some(h.now() + ms(10)));
}

/// A thread that leaves ends the calls it is in: a caller's server goes
/// back to its own activity and can be called again; a server's caller is
/// no longer blocked.
#[test]
fn leaving_ends_the_calls_a_thread_is_in() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let client = h.register(&act("c")).unwrap();
    let server = h.register(&act("s")).unwrap();
    let other = h.register(&act("o")).unwrap();
    let own = h.sched().activity_of(server).unwrap();
    for t in [client, server, other] {
        h.wake(t);
    }
    assert!(h.message(Some(server), &rpc("rpc_serve", 1)).is_ok());
    assert!(h.message(Some(client), &rpc("rpc_call", 1)).is_ok());
    h.advance(ms(25));
    h.unregister(client);
    assert_eq!(h.sched().scheduled_in(server), Some(own));
    assert!(h.message(Some(other), &rpc("rpc_call", 1)).is_ok());
    let Reply::Err(e) = h.message(Some(other), &mutex("lock", 3)) else {
        panic!("a thread blocked in a call took a mutex");
    };
    assert!(e.contains("blocked"), "{e}");
    h.advance(ms(25));
    h.unregister(server);
    // The call is over and the port closed with its server.
    assert!(h.message(Some(other), &mutex("lock", 3)).is_ok());
    let Reply::Err(e) = h.message(Some(other), &rpc("rpc_call", 1)) else {
        panic!("a port without a server took a call");
    };
    assert!(e.contains("no server"), "{e}");
    h.assert_work_conserving();
}

/// §4.3/§4.4 in the reply: a nested constraint reports its effective
/// criticality and what it took over from the outer one; a critical one of
/// the same activity reports what it took from a non-critical one.
#[test]
fn begin_reply_reports_criticality_inherited_and_stolen_time() {
    let mut h = Harness::new(rialto(), 1, Parent::Root);
    let a = h.register(&act("a")).unwrap();
    let b = h.register(&act("a")).unwrap();
    // No reservation: one free node; the first takes 60ms of the 100ms.
    let Reply::Ok(outer) = h.message(Some(a), &begin(ms(60), ms(100))) else {
        panic!("outer refused");
    };
    assert!(!outer.bool("critical"));
    assert_eq!(outer.duration("stolen"), Duration::ZERO);
    let inner = begin(ms(10), ms(50)).arg("critical", Value::Bool(true));
    let Reply::Ok(r) = h.message(Some(a), &inner) else {
        panic!("nested refused");
    };
    assert!(r.bool("critical"));
    // The outer's pieces before 50ms: all 50ms of them.
    assert_eq!(r.duration("inherited"), ms(50));
    assert_eq!(r.duration("estimate"), ms(50));
    assert!(h.message(Some(a), &Msg::new("end_constraint")).is_ok());
    // 40ms free by 100ms; a critical 50ms takes 10ms from `a`'s outer.
    let crit = begin(ms(50), ms(100)).arg("critical", Value::Bool(true));
    let Reply::Ok(r) = h.message(Some(b), &crit) else {
        panic!("critical refused");
    };
    assert_eq!(r.duration("stolen"), ms(10));
    assert_eq!(r.duration("inherited"), Duration::ZERO);
}
