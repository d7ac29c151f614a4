//! `dbs` driven by the testkit harness: EDF order, leftover round robin,
//! window starts and deadlines, `cancel`, the overrun tier, and DBS's
//! guarantee (with `overrun` on and off). The tests written before the
//! overrun tier run with it off: their schedules are today's, unchanged.

use hsched_core::{ChildId, Duration, Instant, Msg, Params, ParentVp, Reply, Value};
use hsched_dispatch::testkit::{Harness, Parent};
use hsched_policies::dbs::Dbs;
use proptest::prelude::*;

const Q: Duration = Duration::from_millis(10);

type H = Harness<Dbs>;

fn harness(vps: u32, parent: Parent, overrun: bool) -> H {
    Harness::new(
        Box::new(Dbs::new(Q).unwrap().with_overrun(overrun)),
        vps,
        parent,
    )
}

fn send(h: &mut H, from: ChildId, msg: Msg) -> Reply {
    h.message(Some(from), &msg)
}

fn ms(n: u64) -> Instant {
    Instant(Duration::from_millis(n).as_nanos())
}

fn reserve(start: Instant, amount: Duration, deadline: Instant) -> Msg {
    Msg::new("reserve")
        .arg("start", Value::Duration(Duration(start.as_nanos())))
        .arg("amount", Value::Duration(amount))
        .arg("deadline", Value::Duration(Duration(deadline.as_nanos())))
}

fn register(h: &mut H, n: usize) -> Vec<ChildId> {
    (0..n)
        .map(|_| h.register(&Params::new()).unwrap())
        .collect()
}

#[test]
fn parameters_are_checked() {
    use hsched_policies::{build, dbs::INFO};
    assert!(Dbs::new(Duration::ZERO).is_err());
    let Err(e) = build("dbs", &Params::new().with("quantum", Value::Int(0))) else {
        panic!("a zero quantum was accepted");
    };
    assert!(e.contains("quantum"), "{e}");
    assert_eq!(build("dbs", &Params::new()).unwrap().policy(), "dbs");
    let Err(e) = build("dbs", &Params::new().with("overrun", Value::Int(0))) else {
        panic!("an integer `overrun` was accepted");
    };
    assert!(e.contains("overrun"), "{e}");
    assert!(build("dbs", &Params::new().with("overrun", Value::Bool(false))).is_ok());
    let overrun = (INFO.params)().into_iter().find(|p| p.name == "overrun");
    assert_eq!(overrun.and_then(|p| p.default), Some(Value::Bool(true)));
}

#[test]
fn reservations_run_earliest_deadline_first_then_leftover_round_robin() {
    let mut h = harness(1, Parent::Root, false);
    let c = register(&mut h, 3);
    let (a, b, plain) = (c[0], c[1], c[2]);
    assert!(send(&mut h, a, reserve(ms(0), Duration::from_millis(5), ms(30))).is_ok());
    assert!(send(&mut h, b, reserve(ms(0), Duration::from_millis(5), ms(10))).is_ok());
    h.wake(plain);
    h.wake(a);
    h.wake(b);
    h.advance_to(ms(45));
    // Each waking reserved child preempts one with a later deadline (or
    // none); once served they join the round robin behind `plain`.
    let expect = vec![
        (ms(0), plain, ms(10)),
        (ms(0), a, ms(5)),
        (ms(0), b, ms(5)),
        (ms(5), a, ms(10)),
        (ms(10), plain, ms(20)),
        (ms(20), b, ms(30)),
        (ms(30), a, ms(40)),
        (ms(40), plain, ms(50)),
    ];
    assert_eq!(h.runs(), expect);
    assert_eq!(h.sched().served(), 2);
    assert_eq!(h.cpu_time(a), Duration::from_millis(15));
}

#[test]
fn a_window_start_preempts_leftover_and_a_deadline_ends_the_reservation() {
    let mut h = harness(1, Parent::Root, false);
    let c = register(&mut h, 2);
    let (a, b) = (c[0], c[1]);
    h.wake(b);
    h.wake(a);
    // a wants 8ms in [22ms, 27ms]: infeasible; in [22ms, 40ms]: fine.
    assert!(!send(&mut h, a, reserve(ms(22), Duration::from_millis(8), ms(27))).is_ok());
    assert!(send(&mut h, a, reserve(ms(22), Duration::from_millis(8), ms(40))).is_ok());
    assert_eq!(h.timer(0), Some(ms(22)));
    h.advance_to(ms(22));
    // The window opens while b runs its leftover slice (20..30): a takes over.
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(30)));
    // a blocks after 3ms of it; 5ms are left when it wakes at 37ms, with
    // 3ms to the deadline: it runs reserved until the deadline, where the
    // reservation ends unserved and a goes on as leftover.
    h.advance_to(ms(25));
    h.block(a);
    assert_eq!(h.sched().remaining(0), Some(Duration::from_millis(5)));
    h.advance_to(ms(37));
    h.wake(a);
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(40)));
    h.advance_to(ms(40));
    let inner = h.sched();
    assert_eq!(
        (inner.served(), inner.expired(), inner.in_force()),
        (0, 1, 0)
    );
    assert_eq!(h.timer(0), None);
    assert_eq!(h.running_on(ParentVp(0)), Some(b), "a went to the back");
}

#[test]
fn cancel_returns_a_running_reserved_child_to_the_round_robin() {
    let mut h = harness(1, Parent::Root, false);
    let c = register(&mut h, 2);
    h.wake(c[0]);
    h.wake(c[1]);
    assert!(send(
        &mut h,
        c[1],
        reserve(ms(0), Duration::from_millis(50), ms(100))
    )
    .is_ok());
    assert_eq!(h.running_on(ParentVp(0)), Some(c[1]));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(50)));
    h.advance_to(ms(5));
    let reply = send(&mut h, c[1], Msg::new("cancel"));
    assert_eq!(
        reply,
        Reply::Ok(Params::new().with("dropped", Value::Int(1)))
    );
    assert_eq!(
        h.running_on(ParentVp(0)),
        Some(c[0]),
        "c0 was first in line"
    );
    assert_eq!(h.timer(0), None);
}

#[test]
fn unreserved_children_share_round_robin_and_keep_a_cut_slice() {
    let mut h = harness(1, Parent::Root, false);
    let c = register(&mut h, 3);
    for &x in &c {
        h.wake(x);
    }
    h.advance_to(ms(4));
    // c1 reserves 2ms now: it preempts c0, which keeps 6ms at the head.
    assert!(send(
        &mut h,
        c[1],
        reserve(ms(4), Duration::from_millis(2), ms(50))
    )
    .is_ok());
    h.advance_to(ms(30));
    let expect = vec![
        (ms(0), c[0], ms(10)),
        (ms(4), c[1], ms(6)),
        (ms(6), c[0], ms(12)),
        (ms(12), c[2], ms(22)),
        (ms(22), c[1], ms(32)),
    ];
    assert_eq!(h.runs(), expect);
}

#[test]
fn several_cpus_run_the_earliest_deadlines() {
    let mut h = harness(2, Parent::Root, false);
    let c = register(&mut h, 4);
    for &x in &c {
        h.wake(x);
    }
    assert!(send(
        &mut h,
        c[2],
        reserve(ms(0), Duration::from_millis(5), ms(20))
    )
    .is_ok());
    assert!(send(
        &mut h,
        c[3],
        reserve(ms(0), Duration::from_millis(5), ms(10))
    )
    .is_ok());
    let mut running: Vec<ChildId> = (0..2).filter_map(|v| h.running_on(ParentVp(v))).collect();
    running.sort();
    assert_eq!(running, vec![c[2], c[3]]);
    h.advance_to(ms(5));
    assert_eq!(h.sched().served(), 2);
    h.assert_work_conserving();
}

// ----- the overrun tier ----------------------------------------------------------------

/// Child `a` reserves 5ms of [0, 40] but needs 8ms, next to a batch child,
/// on one CPU; `a` blocks at `done`, which must be when it has run 8ms.
fn under_reserved(overrun: bool, done: Instant) -> (H, ChildId, ChildId) {
    let mut h = harness(1, Parent::Root, overrun);
    let c = register(&mut h, 2);
    let (a, batch) = (c[0], c[1]);
    assert!(send(&mut h, a, reserve(ms(0), Duration::from_millis(5), ms(40))).is_ok());
    h.wake(batch);
    h.wake(a);
    h.advance_to(done);
    h.block(a);
    assert_eq!(h.cpu_time(a), Duration::from_millis(8));
    (h, a, batch)
}

#[test]
fn an_under_reserved_child_overruns_before_the_batch_child() {
    // Served at 5ms, a runs on until its deadline (40ms) unless it blocks:
    // its 3ms of extra work are done at 8ms; the batch child has had nothing.
    let (mut h, a, batch) = under_reserved(true, ms(8));
    assert_eq!(h.cpu_time(batch), Duration::ZERO);
    let expect = vec![
        (ms(0), batch, ms(10)),
        (ms(0), a, ms(5)),
        (ms(5), a, ms(40)),
        (ms(8), batch, ms(18)),
    ];
    assert_eq!(h.runs(), expect);
    let inner = h.sched();
    assert_eq!(
        (inner.served(), inner.in_force(), inner.overrunning()),
        (1, 0, 1)
    );
    assert_eq!(inner.remaining(0), Some(Duration::ZERO));
    drop(inner);
    // Waking again before the deadline, a overruns again at once.
    h.advance_to(ms(20));
    h.wake(a);
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(40)));
    // At the deadline the reservation ends: a shares the round robin.
    h.advance_to(ms(40));
    assert_eq!(h.running_on(ParentVp(0)), Some(batch));
    let inner = h.sched();
    assert_eq!(
        (inner.served(), inner.expired(), inner.overrunning()),
        (1, 0, 0)
    );
    assert_eq!(h.timer(0), None);
    assert_eq!(h.cpu_time(a), Duration::from_millis(28));
}

#[test]
fn without_overrun_a_served_child_takes_turns_with_the_batch_child() {
    // Served at 5ms, a waits behind the batch child's slice: done at 18ms.
    let (h, a, batch) = under_reserved(false, ms(18));
    assert_eq!(h.cpu_time(batch), Duration::from_millis(10));
    let expect = vec![
        (ms(0), batch, ms(10)),
        (ms(0), a, ms(5)),
        (ms(5), batch, ms(15)),
        (ms(15), a, ms(25)),
        (ms(18), batch, ms(28)),
    ];
    assert_eq!(h.runs(), expect);
    let inner = h.sched();
    assert_eq!(
        (inner.served(), inner.in_force(), inner.overrunning()),
        (1, 0, 0)
    );
}

#[test]
fn overruns_run_edf_and_yield_to_every_reserved_amount() {
    let mut h = harness(1, Parent::Root, true);
    let c = register(&mut h, 4);
    let (a, b, r, batch) = (c[0], c[1], c[2], c[3]);
    let two = Duration::from_millis(2);
    assert!(send(&mut h, a, reserve(ms(0), two, ms(50))).is_ok());
    assert!(send(&mut h, b, reserve(ms(0), two, ms(30))).is_ok());
    assert!(send(&mut h, r, reserve(ms(10), Duration::from_millis(5), ms(20))).is_ok());
    for x in [batch, a, b, r] {
        h.wake(x);
    }
    h.advance_to(ms(50));
    // Reserved amounts first (b, a); then the overruns, earliest deadline
    // first (b), until r's window opens: r's reserved amount preempts b's
    // overrun; served, r overruns to its deadline (20ms < 30ms); then b's
    // overrun and a's, each to its deadline; the batch child and r (whose
    // reservation is over) only then.
    let expect = vec![
        (ms(0), batch, ms(10)),
        (ms(0), a, ms(2)),
        (ms(0), b, ms(2)),
        (ms(2), a, ms(4)),
        (ms(4), b, ms(30)),
        (ms(10), r, ms(15)),
        (ms(15), r, ms(20)),
        (ms(20), b, ms(30)),
        (ms(30), a, ms(50)),
        (ms(50), batch, ms(60)),
    ];
    assert_eq!(h.runs(), expect);
    let inner = h.sched();
    assert_eq!(
        (
            inner.served(),
            inner.expired(),
            inner.in_force() + inner.overrunning()
        ),
        (3, 0, 0)
    );
}

// ----- DBS's guarantee ---------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Reserved child `n` asks for `amount` in a window starting `lead`
    /// after now (or before now, with `lead` negative) of `length`.
    Reserve {
        n: u8,
        lead: i32,
        amount: u32,
        length: u32,
        relative: bool,
    },
    /// Wake or block noise child `n`.
    Noise(u8),
    Advance(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (any::<u8>(), -20_000i32..40_000, 1u32..15_000, 1u32..60_000, any::<bool>())
            .prop_map(|(n, lead, amount, length, relative)| Step::Reserve {
                n, lead, amount, length, relative
            }),
        1 => any::<u8>().prop_map(Step::Noise),
        3 => (1u32..20_000).prop_map(Step::Advance),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every accepted reservation of a child that stays runnable receives
    /// its amount within its window: for every interval [a, b] formed by
    /// its windows, the child runs at least the amounts of its accepted
    /// reservations inside [a, b]. On one or several CPUs.
    #[test]
    fn accepted_reservations_of_runnable_children_are_met(
        overrun in any::<bool>(),
        vps in 1u32..4,
        parent in prop_oneof![Just(Parent::Root), Just(Parent::Eager)],
        reserved in 1usize..5,
        noise in 0usize..4,
        steps in proptest::collection::vec(step(), 1..80),
    ) {
        let us = |n: i64| Duration::from_micros(n.unsigned_abs());
        let mut h = harness(vps, parent, overrun);
        let rsv = register(&mut h, reserved);
        let noisy = register(&mut h, noise);
        for &c in &rsv {
            h.wake(c);
        }
        // (child, effective start, amount, deadline) of accepted requests.
        let mut accepted: Vec<(ChildId, Instant, Duration, Instant)> = Vec::new();
        let mut last = Instant::ZERO;
        for step in steps {
            match step {
                Step::Reserve { n, lead, amount, length, relative } => {
                    let now = h.now();
                    let child = rsv[n as usize % rsv.len()];
                    let start = if lead >= 0 {
                        now + us(lead.into())
                    } else {
                        Instant(now.as_nanos().saturating_sub(us(lead.into()).as_nanos()))
                    };
                    let deadline = start + us(length.into());
                    let amount = us(amount.into());
                    let msg = if relative && lead >= 0 {
                        Msg::new("reserve")
                            .arg("start", Value::Duration(start - now))
                            .arg("amount", Value::Duration(amount))
                            .arg("deadline", Value::Duration(deadline - now))
                            .arg("relative", Value::Bool(true))
                    } else {
                        reserve(start, amount, deadline)
                    };
                    match send(&mut h, child, msg) {
                        Reply::Ok(args) => {
                            prop_assert_eq!(args.duration("amount"), amount);
                            prop_assert_eq!(args.duration("deadline").as_nanos(), deadline.as_nanos());
                            accepted.push((child, start.max(now), amount, deadline));
                            last = last.max(deadline);
                        }
                        Reply::Err(e) => {
                            prop_assert!(
                                e.contains("infeasible") || e.contains("has passed"),
                                "{}", e
                            );
                        }
                    }
                }
                Step::Noise(n) if !noisy.is_empty() => {
                    let c = noisy[n as usize % noisy.len()];
                    if h.is_requesting(c) { h.block(c) } else { h.wake(c) }
                }
                Step::Advance(t) => h.advance(us(t.into())),
                _ => {}
            }
        }
        h.advance_to(last.max(h.now()) + Duration::from_millis(1));
        let inner = h.sched();
        prop_assert_eq!(inner.expired(), 0);
        prop_assert_eq!(inner.in_force(), 0);
        prop_assert_eq!(inner.served(), accepted.len() as u64);
        let segs = h.segments();
        let got = |child: ChildId, a: Instant, b: Instant| -> u64 {
            segs.iter()
                .filter(|s| s.child == child && s.start < b && s.end > a)
                .map(|s| (s.end.min(b) - s.start.max(a)).as_nanos())
                .sum()
        };
        for &child in &rsv {
            let mine: Vec<_> = accepted.iter().filter(|r| r.0 == child).collect();
            for a in mine.iter().map(|r| r.1) {
                for b in mine.iter().map(|r| r.3) {
                    if b <= a {
                        continue;
                    }
                    let need: u64 = mine
                        .iter()
                        .filter(|r| r.1 >= a && r.3 <= b)
                        .map(|r| r.2.as_nanos())
                        .sum();
                    let ran = got(child, a, b);
                    prop_assert!(ran >= need, "{} ran {}ns in [{}, {}], needs {}ns", child, ran, a, b, need);
                }
            }
        }
    }
}

/// Admission, callback by callback through `Host` (effects not applied).
mod admission {
    use hsched_core::{
        ChildId, CpuId, Dispatch, Duration, Instant, Msg, Params, ParentVp, Reply, Scheduler,
        Sender, Value, VpState,
    };
    use hsched_dispatch::testkit::Host;
    use hsched_policies::dbs::Dbs;

    const Q: Duration = Duration::from_millis(10);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn reserve(start: Duration, amount: Duration, deadline: Duration) -> Msg {
        Msg::new("reserve")
            .arg("start", Value::Duration(start))
            .arg("amount", Value::Duration(amount))
            .arg("deadline", Value::Duration(deadline))
    }

    /// A DBS with `n` idle children on one held CPU, driven callback by
    /// callback (effects are not applied).
    fn solo(n: u32) -> (Dbs, Host) {
        solo_with(n, false)
    }

    fn solo_with(n: u32, overrun: bool) -> (Dbs, Host) {
        let mut dbs = Dbs::new(Q).unwrap().with_overrun(overrun);
        let mut host = Host::new(1);
        host.vps[0] = VpState::Held(CpuId(0));
        for i in 0..n {
            let (r, _) = host.call(&mut dbs, |s, cx| {
                s.register_vp(cx, ChildId(i), &Params::new())
            });
            r.unwrap();
        }
        (dbs, host)
    }

    fn ask(dbs: &mut Dbs, host: &Host, child: u32, msg: &Msg) -> Reply {
        let from = Sender {
            thread: None,
            child: Some(ChildId(child)),
        };
        let (reply, _) = host.call(dbs, |s, cx| s.msg(cx, from, msg));
        dbs.check_invariants().unwrap();
        reply
    }

    fn refusal(reply: Reply) -> String {
        match reply {
            Reply::Err(e) => e,
            Reply::Ok(args) => panic!("accepted: {args}"),
        }
    }

    #[test]
    fn a_window_holds_exactly_its_length() {
        let (mut dbs, host) = solo(2);
        let e = refusal(ask(
            &mut dbs,
            &host,
            0,
            &reserve(ms(0), ms(10) + Duration(1), ms(10)),
        ));
        assert!(
            e.contains("[t=0ns, t=10ms]") && e.contains("10.000001ms"),
            "{e}"
        );
        let ok = ask(&mut dbs, &host, 0, &reserve(ms(0), ms(10), ms(10)));
        assert_eq!(
            ok,
            Reply::Ok(
                Params::new()
                    .with("id", Value::Int(0))
                    .with("start", Value::Duration(ms(0)))
                    .with("amount", Value::Duration(ms(10)))
                    .with("deadline", Value::Duration(ms(10)))
            )
        );
        let e = refusal(ask(
            &mut dbs,
            &host,
            1,
            &reserve(ms(0), Duration(1), ms(10)),
        ));
        assert!(e.contains("[t=0ns, t=10ms]"), "{e}");
        // Right after the window: free again.
        assert!(ask(&mut dbs, &host, 1, &reserve(ms(10), ms(5), ms(15))).is_ok());
        assert_eq!(dbs.refused(), 2);
    }

    #[test]
    fn nested_windows_fill_up_to_every_interval_and_no_further() {
        let (mut dbs, host) = solo(3);
        assert!(ask(&mut dbs, &host, 0, &reserve(ms(0), ms(5), ms(20))).is_ok());
        assert!(ask(&mut dbs, &host, 1, &reserve(ms(5), ms(5), ms(10))).is_ok());
        // [5ms, 10ms] is full.
        let e = refusal(ask(
            &mut dbs,
            &host,
            2,
            &reserve(ms(5), Duration(1), ms(10)),
        ));
        assert!(e.contains("[t=5ms, t=10ms]"), "{e}");
        // [10, 20] alone would hold 10, but [5, 20] then needs 15 of 15 and
        // [0, 20] 20 of 20: exactly feasible.
        assert!(ask(&mut dbs, &host, 2, &reserve(ms(10), ms(10), ms(20))).is_ok());
        let e = refusal(ask(
            &mut dbs,
            &host,
            2,
            &reserve(ms(0), Duration(1), ms(20)),
        ));
        assert!(e.contains("[t=0ns, t=20ms]"), "{e}");
        // [0, 40] has 20ms left: 21ms do not fit.
        let e = refusal(ask(&mut dbs, &host, 2, &reserve(ms(0), ms(21), ms(40))));
        assert!(e.contains("[t=0ns, t=40ms]") && e.contains("41ms"), "{e}");
        assert!(ask(&mut dbs, &host, 2, &reserve(ms(0), ms(20), ms(40))).is_ok());
        assert_eq!(dbs.in_force(), 4);
    }

    #[test]
    fn a_window_that_started_counts_from_now() {
        let (mut dbs, mut host) = solo(1);
        host.now = Instant(ms(5).as_nanos());
        let e = refusal(ask(
            &mut dbs,
            &host,
            0,
            &reserve(ms(0), ms(5) + Duration(1), ms(10)),
        ));
        assert!(e.contains("[t=5ms, t=10ms]"), "{e}");
        assert!(ask(&mut dbs, &host, 0, &reserve(ms(0), ms(5), ms(10))).is_ok());
        // Relative times count from now as well.
        let rel = reserve(ms(5), ms(5), ms(10)).arg("relative", Value::Bool(true));
        let Reply::Ok(args) = ask(&mut dbs, &host, 0, &rel) else {
            panic!("relative reservation refused");
        };
        assert_eq!(args.duration("start"), ms(10));
        assert_eq!(args.duration("deadline"), ms(15));
    }

    #[test]
    fn what_a_running_reservation_has_used_is_not_counted_again() {
        for charged in [false, true] {
            let (mut dbs, mut host) = solo(2);
            assert!(ask(&mut dbs, &host, 0, &reserve(ms(0), ms(10), ms(20))).is_ok());
            host.call(&mut dbs, |s, cx| s.vp_request(cx, ChildId(0)));
            let (d, _) = host.call(&mut dbs, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
            assert_eq!(
                d,
                Dispatch::Run {
                    child: ChildId(0),
                    until: Instant(ms(10).as_nanos())
                }
            );
            host.now = Instant(ms(6).as_nanos());
            if charged {
                host.call(&mut dbs, |s, cx| s.charge(cx, ChildId(0), ms(6)));
                assert_eq!(dbs.remaining(0), Some(ms(4)));
            }
            // 4ms left of the first, 10ms asked: 14ms in [6ms, 20ms].
            let e = refusal(ask(
                &mut dbs,
                &host,
                1,
                &reserve(ms(0), ms(10) + Duration(1), ms(20)),
            ));
            assert!(e.contains("[t=6ms, t=20ms]"), "{e}");
            assert!(ask(&mut dbs, &host, 1, &reserve(ms(0), ms(10), ms(20))).is_ok());
        }
    }

    #[test]
    fn an_overrunning_reservation_needs_no_room_and_yields_to_a_reserved_one() {
        let (mut dbs, mut host) = solo_with(2, true);
        assert!(ask(&mut dbs, &host, 0, &reserve(ms(0), ms(5), ms(10))).is_ok());
        host.call(&mut dbs, |s, cx| s.vp_request(cx, ChildId(0)));
        host.call(&mut dbs, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
        host.now = Instant(ms(5).as_nanos());
        host.call(&mut dbs, |s, cx| s.charge(cx, ChildId(0), ms(5)));
        dbs.check_invariants().unwrap();
        assert_eq!((dbs.served(), dbs.in_force(), dbs.overrunning()), (1, 0, 1));
        // [5ms, 10ms] is free for others: admission counts amounts only.
        assert!(ask(&mut dbs, &host, 1, &reserve(ms(0), ms(5), ms(10))).is_ok());
        // Child 1's amount outranks child 0's overrun.
        host.call(&mut dbs, |s, cx| s.vp_request(cx, ChildId(1)));
        let (d, _) = host.call(&mut dbs, |s, cx| s.vp_grant(cx, ParentVp(0), CpuId(0)));
        let until = Instant(ms(10).as_nanos());
        assert_eq!(
            d,
            Dispatch::Run {
                child: ChildId(1),
                until
            }
        );
        dbs.check_invariants().unwrap();
        // `cancel` drops an overrunning reservation as well.
        assert_eq!(
            ask(&mut dbs, &host, 0, &Msg::new("cancel")),
            Reply::Ok(Params::new().with("dropped", Value::Int(1)))
        );
        assert_eq!((dbs.in_force(), dbs.overrunning()), (1, 0));
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let (mut dbs, mut host) = solo(1);
        host.now = Instant(ms(50).as_nanos());
        let e = refusal(ask(&mut dbs, &host, 0, &reserve(ms(10), ms(1), ms(10))));
        assert!(e.contains("not after the start"), "{e}");
        let e = refusal(ask(&mut dbs, &host, 0, &reserve(ms(10), ms(1), ms(20))));
        assert!(e.contains("has passed"), "{e}");
        let e = refusal(ask(
            &mut dbs,
            &host,
            0,
            &Msg::new("reserve").arg("amount", Value::Duration(ms(1))),
        ));
        assert!(e.contains("`deadline`"), "{e}");
        let e = refusal(ask(
            &mut dbs,
            &host,
            0,
            &reserve(ms(0), ms(1), ms(60)).arg("amount", Value::Bool(true)),
        ));
        assert!(e.contains("`amount`"), "{e}");
        let e = refusal(ask(&mut dbs, &host, 0, &Msg::new("warp")));
        assert!(e.contains("warp"), "{e}");
        let operator = Sender {
            thread: None,
            child: None,
        };
        let msg = reserve(ms(60), ms(1), ms(70));
        let (reply, _) = host.call(&mut dbs, |s, cx| s.msg(cx, operator, &msg));
        assert!(refusal(reply).contains("child of this scheduler"));
        // A zero amount needs nothing and is accepted, even with no room.
        assert!(ask(&mut dbs, &host, 0, &reserve(ms(50), ms(20), ms(70))).is_ok());
        assert!(ask(&mut dbs, &host, 0, &reserve(ms(50), ms(0), ms(70))).is_ok());
        assert_eq!((dbs.in_force(), dbs.served()), (1, 1));
    }

    #[test]
    fn cancel_drops_the_senders_reservations() {
        let (mut dbs, host) = solo(2);
        for _ in 0..3 {
            assert!(ask(&mut dbs, &host, 0, &reserve(ms(0), ms(2), ms(10))).is_ok());
        }
        assert!(ask(&mut dbs, &host, 1, &reserve(ms(0), ms(2), ms(10))).is_ok());
        let one = Msg::new("cancel").arg("id", Value::Int(1));
        assert!(ask(&mut dbs, &host, 0, &one).is_ok());
        assert!(refusal(ask(&mut dbs, &host, 0, &one)).contains("no reservation 1"));
        assert!(refusal(ask(
            &mut dbs,
            &host,
            0,
            &Msg::new("cancel").arg("id", Value::Int(3))
        ))
        .contains("no reservation 3"));
        assert_eq!(
            ask(&mut dbs, &host, 0, &Msg::new("cancel")),
            Reply::Ok(Params::new().with("dropped", Value::Int(2)))
        );
        assert_eq!(dbs.in_force(), 1);
        // The room is free again.
        assert!(ask(&mut dbs, &host, 0, &reserve(ms(0), ms(8), ms(10))).is_ok());
    }
}

// ----- the protocol, with reservations -------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Action {
    Kit(hsched_dispatch::testkit::Step),
    Reserve(u8, i32, u32, u32),
    Cancel(u8),
}

fn action() -> impl Strategy<Value = Action> {
    use hsched_dispatch::testkit::Step as S;
    prop_oneof![
        2 => any::<u8>().prop_map(|n| Action::Kit(S::Register(n))),
        1 => any::<u8>().prop_map(|n| Action::Kit(S::Unregister(n))),
        4 => any::<u8>().prop_map(|n| Action::Kit(S::Wake(n))),
        3 => any::<u8>().prop_map(|n| Action::Kit(S::Block(n))),
        2 => any::<u8>().prop_map(|n| Action::Kit(S::Grant(n))),
        1 => any::<u8>().prop_map(|n| Action::Kit(S::Revoke(n))),
        3 => (0u32..30_000).prop_map(|us| Action::Kit(S::Advance(us))),
        4 => (any::<u8>(), -20_000i32..30_000, 0u32..20_000, 1u32..60_000)
            .prop_map(|(n, lead, amount, len)| Action::Reserve(n, lead, amount, len)),
        1 => any::<u8>().prop_map(Action::Cancel),
    ]
}

proptest! {
    /// Random registrations, wake-ups, blocks, grants, revokes,
    /// reservations and cancels on one to three VPs: the harness rejects
    /// every answer the dispatcher would eject for, and checks the
    /// invariants after every callback.
    #[test]
    fn random_runs_with_reservations_keep_the_rules(
        overrun in any::<bool>(),
        vps in 1u32..4,
        parent in prop_oneof![Just(Parent::Root), Just(Parent::Manual), Just(Parent::Eager)],
        actions in proptest::collection::vec(action(), 1..150),
    ) {
        let mut h = harness(vps, parent, overrun);
        for a in actions {
            let kids = h.children();
            let pick = |n: u8| (!kids.is_empty()).then(|| kids[n as usize % kids.len()]);
            match a {
                Action::Kit(step) => h.step(step, &[Params::new()]),
                Action::Reserve(n, lead, amount, len) => {
                    if let Some(c) = pick(n) {
                        let now = h.now().as_nanos() as i64;
                        let start = Instant((now + i64::from(lead) * 1_000).max(0) as u64);
                        let deadline = start + Duration::from_micros(len.into());
                        let amount = Duration::from_micros(amount.into());
                        send(&mut h, c, reserve(start, amount, deadline));
                    }
                }
                Action::Cancel(n) => {
                    if let Some(c) = pick(n) {
                        prop_assert!(send(&mut h, c, Msg::new("cancel")).is_ok());
                    }
                }
            }
            if parent != Parent::Manual {
                h.assert_work_conserving();
            }
        }
    }
}

#[test]
fn steal_needs_overrun() {
    let build = |params: &Params| hsched_policies::build("dbs", params);
    let p = |overrun, steal| {
        Params::new()
            .with("overrun", Value::Bool(overrun))
            .with("steal", Value::Bool(steal))
    };
    assert!(build(&p(true, true)).is_ok());
    assert!(build(&p(false, false)).is_ok());
    let err = build(&p(false, true)).err().unwrap();
    assert!(
        err.contains("`steal = true` needs `overrun = true`"),
        "{err}"
    );
}
