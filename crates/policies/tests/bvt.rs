//! `bvt` through the testkit harness: the paper's figures (§2.1, §2.2), the
//! warp limits, migration penalty, messages, charging, and properties
//! (fair share within C + 1 mcu, warp does not buy share).

use hsched_core::{
    ChildId, Duration, Effect, Instant, Msg, Params, ParentVp, Reply, Sender, ThreadId, Value,
};
use hsched_dispatch::testkit::{Harness, Parent, Step};
use hsched_policies::bvt::{Bvt, Config, Mode};
use proptest::prelude::*;

type H = Harness<Bvt>;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
fn at(n: u64) -> Instant {
    Instant::ZERO + ms(n)
}
fn at_us(n: u64) -> Instant {
    Instant::ZERO + Duration::from_micros(n)
}

fn config(mcu: Duration, allowance: Duration) -> Config {
    Config {
        mcu,
        allowance,
        ..Config::default()
    }
}

fn harness(cfg: Config, vps: u32, parent: Parent) -> H {
    Harness::new(Box::new(Bvt::new(cfg)), vps, parent)
}

/// Attachment parameters.
fn attach(advance: i64, warp: i64, limit: Duration, unwarp: Duration, on: bool) -> Params {
    Params::new()
        .with("advance", Value::Int(advance))
        .with("warp", Value::Int(warp))
        .with("warp_limit", Value::Duration(limit))
        .with("unwarp", Value::Duration(unwarp))
        .with("warp_on", Value::Bool(on))
}

fn plain(advance: i64) -> Params {
    attach(advance, 0, Duration::ZERO, Duration::ZERO, false)
}

/// Advance 1 and warp `warp` (warped now when `on`), with no limit on the warp.
fn warping(warp: i64, on: bool) -> Params {
    attach(1, warp, Duration::ZERO, Duration::ZERO, on)
}

fn bvt(h: &H) -> std::cell::Ref<'_, Bvt> {
    h.sched()
}

/// A message from `child` (a thread when `thread`, else a child scheduler),
/// or from the operator (`child` = None), delivered through the harness.
fn send(h: &mut H, child: Option<ChildId>, thread: bool, msg: Msg) -> Reply {
    let from = Sender {
        thread: child.filter(|_| thread).map(|c| ThreadId(c.0)),
        child,
    };
    h.message_from(from, &msg)
}

fn warp_msg(on: bool) -> Msg {
    Msg::new("warp").arg("on", Value::Bool(on))
}

fn running(h: &H) -> Option<ChildId> {
    h.running_on(ParentVp(0))
}

// ----- §2.1: weighted fair sharing (Figure 1) ---------------------------------------

#[test]
fn two_to_one_weights_get_two_thirds_and_one_third() {
    // gcc has twice bigsim's weight: half its mcu advance. C = 2 mcu.
    let mut h = harness(config(ms(10), ms(20)), 1, Parent::Root);
    let gcc = h.register(&plain(1)).unwrap();
    let bigsim = h.register(&plain(2)).unwrap();
    h.wake(gcc);
    h.wake(bigsim);
    assert_eq!(running(&h), Some(gcc));
    assert_eq!(
        h.horizon(ParentVp(0)),
        Some(at(20)),
        "it passes bigsim by C"
    );
    h.advance_to(at(20));
    // From here a 9-mcu scheduling window repeats: bigsim 3 mcu, gcc 6.
    for k in 0..10u64 {
        let start = 20 + 90 * k;
        assert_eq!(running(&h), Some(bigsim), "window {k}");
        h.advance_to(at(start + 30));
        assert_eq!(running(&h), Some(gcc), "window {k}");
        h.advance_to(at(start + 90));
    }
    assert_eq!(h.cpu_time(gcc), ms(20 + 600));
    assert_eq!(h.cpu_time(bigsim), ms(300));
    // Each virtual time stays within C_i + m_i of SVT.
    let svt = bvt(&h).svt();
    assert!(bvt(&h).avt(gcc).unwrap() - svt < 2 + 1);
    assert!(bvt(&h).avt(bigsim).unwrap() - svt < 4 + 2);
}

// ----- §2.1: the wakeup rule (Figure 2) ------------------------------------------------

#[test]
fn a_long_sleeper_wakes_at_svt_and_does_not_starve_the_other() {
    let mut h = harness(config(ms(10), ms(20)), 1, Parent::Root);
    let gcc = h.register(&plain(1)).unwrap();
    let bigsim = h.register(&plain(1)).unwrap();
    h.wake(bigsim);
    h.advance_to(at(150)); // gcc sleeps 15 mcu while bigsim runs alone
    h.wake(gcc);
    assert_eq!(
        bvt(&h).avt(gcc),
        Some(15),
        "A_gcc is brought up to SVT, bigsim's A as of now"
    );
    assert_eq!(running(&h), Some(bigsim), "equal E: no preemption");
    let before = (h.cpu_time(gcc), h.cpu_time(bigsim));
    h.advance_to(at(350));
    let got = |c, i: usize| {
        let t = h.cpu_time(c);
        t - if i == 0 { before.0 } else { before.1 }
    };
    // They share the next 20 mcu within C + 1 mcu of 10 mcu each.
    for (c, i) in [(gcc, 0), (bigsim, 1)] {
        let g = got(c, i).as_nanos() as i64;
        assert!((g - 100_000_000).abs() <= 30_000_000, "{c}: {g}");
    }
}

// ----- §2.2: low-latency dispatch (Figure 3) ------------------------------------------

#[test]
fn a_warped_thread_waking_every_10_mcu_is_dispatched_immediately() {
    let mut h = harness(config(ms(10), ms(20)), 1, Parent::Root);
    let gcc = h.register(&plain(1)).unwrap();
    let bigsim = h.register(&plain(1)).unwrap();
    let mpeg = h.register(&warping(50, true)).unwrap();
    h.wake(gcc);
    h.wake(bigsim);
    for k in 0..6u64 {
        h.advance_to(at(50 + 100 * k));
        h.wake(mpeg);
        assert_eq!(running(&h), Some(mpeg), "wake-up {k} preempts at once");
        assert_eq!(bvt(&h).is_warped(mpeg), Some(true));
        // Its AVT was brought up to SVT at wake-up; E is 50 below.
        let (a, e) = (bvt(&h).avt(mpeg).unwrap(), bvt(&h).evt(mpeg).unwrap());
        assert_eq!(a - e, 50);
        h.advance(ms(50));
        h.block(mpeg);
    }
    // Long term, warp does not raise its share above a third (plus what the
    // warp lets it borrow once: (W + C_i + m_i) mcu).
    let start = h.now();
    for k in 0..200u64 {
        h.advance_to(start + ms(100 * k + 50));
        h.wake(mpeg);
        h.advance(ms(50));
        if h.is_requesting(mpeg) {
            h.block(mpeg);
        }
    }
    let total = h.now().as_nanos();
    let share = h.cpu_time(mpeg).as_nanos();
    assert!(
        share <= total / 3 + ms((50 + 2 + 1) * 10).as_nanos(),
        "{share} of {total}"
    );
}

// ----- §2.2: warp time limit (Figure 4) -------------------------------------------------

#[test]
fn a_warped_thread_in_an_infinite_loop_is_unwarped_after_its_limit() {
    let mut h = harness(config(ms(10), ms(20)), 1, Parent::Root);
    let gcc = h.register(&plain(1)).unwrap();
    let bigsim = h.register(&plain(1)).unwrap();
    // L = 5 mcu, U = 0.
    let mpeg = h
        .register(&attach(1, 50, ms(50), Duration::ZERO, true))
        .unwrap();
    h.wake(gcc);
    h.wake(bigsim);
    h.advance_to(at(50));
    h.wake(mpeg); // and never blocks again
    assert_eq!(running(&h), Some(mpeg));
    h.advance_to(at(99));
    assert_eq!(running(&h), Some(mpeg));
    h.advance_to(at(100));
    assert_eq!(bvt(&h).is_warped(mpeg), Some(false), "unwarped after L");
    assert_eq!(
        bvt(&h).wants_warp(mpeg),
        Some(false),
        "U = 0: it stays unwarped until it asks again"
    );
    assert_ne!(running(&h), Some(mpeg), "it reverts to its A, others run");
    // From here the three share fairly: within C + 1 mcu of a third, less
    // for mpeg by the 5 mcu it ran ahead while warped.
    let base: Vec<Duration> = [gcc, bigsim, mpeg].iter().map(|&c| h.cpu_time(c)).collect();
    h.advance_to(at(100 + 3000));
    for (i, c) in [gcc, bigsim, mpeg].into_iter().enumerate() {
        let got = (h.cpu_time(c) - base[i]).as_nanos() as i64;
        assert!((got - 1_000_000_000).abs() <= 80_000_000, "{c}: {got}");
    }
    // Blocking and waking does not warp it again (U = 0 semantics) ...
    h.block(mpeg);
    h.advance(ms(5));
    h.wake(mpeg);
    assert_eq!(bvt(&h).is_warped(mpeg), Some(false));
    // ... until it sets its warp again.
    let r = send(&mut h, Some(mpeg), true, warp_msg(true));
    assert_eq!(
        r,
        Reply::Ok(Params::new().with("warped", Value::Bool(true)))
    );
    assert_eq!(running(&h), Some(mpeg), "warped again: dispatched at once");
}

#[test]
fn a_zero_warp_limit_means_no_limit() {
    let mut h = harness(config(ms(10), ms(20)), 1, Parent::Root);
    let other = h.register(&plain(1)).unwrap();
    let hog = h.register(&warping(1_000, true)).unwrap();
    h.wake(other);
    h.wake(hog);
    assert_eq!(running(&h), Some(hog));
    h.advance(ms(5_000));
    assert_eq!(bvt(&h).is_warped(hog), Some(true), "L = 0: warped for good");
    assert_eq!(h.timer(u64::from(hog.0) << 1), None, "no limit timer");
    // But it only borrows: W = 1000 virtual units is 10s at m = 1.
    assert_eq!(running(&h), Some(hog));
    h.advance(ms(10_000));
    assert!(
        h.cpu_time(other) > Duration::ZERO,
        "it pays back once W is used"
    );
}

// ----- §2.2: unwarp time requirement ---------------------------------------------------

#[test]
fn the_unwarp_requirement_runs_a_thread_unwarped_until_u_has_passed() {
    // A device thread: W large, L = 1ms, U = 20ms; mcu = 1ms, C = 2ms.
    let mut h = harness(config(ms(1), ms(2)), 1, Parent::Root);
    let cont = h.register(&plain(1)).unwrap();
    let dev = h.register(&attach(1, 1_000, ms(1), ms(20), true)).unwrap();
    h.wake(cont);
    h.advance_to(at(10));
    h.wake(dev);
    assert_eq!(running(&h), Some(dev), "first wake-up: warped, immediate");
    h.advance_to(at_us(10_500));
    h.block(dev); // the episode ends at 10.5ms
    h.advance_to(at(12));
    h.wake(dev); // the device fails and signals again 1.5ms later
    assert_eq!(bvt(&h).is_warped(dev), Some(false), "within U: unwarped");
    assert_eq!(running(&h), Some(cont), "so no preemption");
    let rewarp_key = (u64::from(dev.0) << 1) | 1;
    assert_eq!(h.timer(rewarp_key), Some(at_us(30_500)), "U from the block");
    h.advance_to(at_us(30_499));
    assert_eq!(bvt(&h).is_warped(dev), Some(false));
    h.advance_to(at_us(30_500));
    assert_eq!(bvt(&h).is_warped(dev), Some(true), "U has passed");
    assert_eq!(running(&h), Some(dev));
    // Hitting L with U > 0 keeps the wish: it warps again U later by itself.
    h.advance_to(at_us(31_500));
    assert_eq!(bvt(&h).is_warped(dev), Some(false), "L = 1ms used up");
    assert_eq!(bvt(&h).wants_warp(dev), Some(true));
    assert_eq!(h.timer(rewarp_key), Some(at_us(51_500)));
    h.advance_to(at_us(51_500));
    assert_eq!(bvt(&h).is_warped(dev), Some(true));
}

#[test]
fn explicit_unwarp_starts_the_unwarp_time_too() {
    let mut h = harness(config(ms(1), ms(2)), 1, Parent::Root);
    let cont = h.register(&plain(1)).unwrap();
    let t = h
        .register(&attach(1, 100, Duration::ZERO, ms(10), true))
        .unwrap();
    h.wake(cont);
    h.wake(t);
    assert_eq!(bvt(&h).is_warped(t), Some(true));
    h.advance(ms(3));
    assert!(send(&mut h, Some(t), true, warp_msg(false)).is_ok());
    assert_eq!(bvt(&h).is_warped(t), Some(false));
    h.advance(ms(4));
    let r = send(&mut h, Some(t), true, warp_msg(true));
    assert_eq!(
        r,
        Reply::Ok(Params::new().with("warped", Value::Bool(false)))
    );
    h.advance(ms(6));
    assert_eq!(bvt(&h).is_warped(t), Some(true), "10ms after the unwarp");
    assert_eq!(bvt(&h).avt(cont).map(|a| a > 0), Some(true));
}

// ----- charging ---------------------------------------------------------------------

#[test]
fn runs_are_charged_in_whole_mcus_rounded_up() {
    let mut h = harness(config(ms(10), ms(20)), 1, Parent::Root);
    let a = h.register(&plain(3)).unwrap();
    let b = h.register(&plain(3)).unwrap();
    h.wake(a);
    h.advance(ms(3));
    h.block(a);
    assert_eq!(bvt(&h).avt(a), Some(3), "3ms costs one mcu");
    h.advance(ms(1)); // (a wake-up at the same instant would resume the run)
    h.wake(a);
    h.advance(ms(12));
    h.block(a);
    assert_eq!(bvt(&h).avt(a), Some(9), "12ms costs two more");
    h.advance(ms(1));
    // A run split at one instant on one CPU is one run: b wakes 3ms into
    // a's run, a's countdown is re-made (its 3ms charged as one mcu,
    // 7ms prepaid), and a stops at a whole mcu of its run.
    h.wake(a);
    let t0 = h.now();
    h.advance(ms(3));
    h.wake(b);
    assert_eq!(bvt(&h).avt(a), Some(12));
    assert_eq!(bvt(&h).avt(b), Some(12), "b woke at a's A as of now");
    assert_eq!(running(&h), Some(a));
    // C = 2 mcu = 6 virtual units: two more mcus after the prepaid 7ms.
    assert_eq!(h.horizon(ParentVp(0)), Some(t0 + ms(30)));
    h.advance_to(t0 + ms(30));
    assert_eq!(bvt(&h).avt(a), Some(18), "30ms in one run: exactly 3 mcus");
    assert_eq!(running(&h), Some(b));
}

// ----- SVT and involuntary blocks -------------------------------------------------------

fn involuntary_wake(counts: bool) -> i128 {
    let cfg = Config {
        svt_counts_involuntary: counts,
        ..config(ms(10), ms(20))
    };
    let mut h = harness(cfg, 1, Parent::Root);
    let a = h.register(&plain(1)).unwrap();
    let b = h.register(&plain(1)).unwrap();
    h.wake(a);
    h.wake(b);
    h.advance_to(at(20));
    assert_eq!(running(&h), Some(b));
    h.advance_to(at(25));
    h.block_involuntary(b); // a page fault right after being dispatched
    h.advance_to(at(125));
    h.wake(b);
    let avt = bvt(&h).avt(b).unwrap();
    avt
}

#[test]
fn an_involuntary_block_can_hold_svt_back() {
    assert_eq!(
        involuntary_wake(true),
        1,
        "b keeps its place: SVT counted it while it was blocked"
    );
    assert_eq!(involuntary_wake(false), 12, "b is brought up to SVT");
}

// ----- §2.4: multiprocessors ---------------------------------------------------------

fn migrations(h: &H) -> usize {
    let mut last: std::collections::BTreeMap<ChildId, ParentVp> = Default::default();
    let mut n = 0;
    for s in h.segments() {
        if last.insert(s.child, s.vp).is_some_and(|v| v != s.vp) {
            n += 1;
        }
    }
    n
}

fn three_on_two(penalty: i64) -> H {
    let cfg = Config {
        migration_penalty: penalty,
        ..config(ms(1), ms(2))
    };
    let mut h = harness(cfg, 2, Parent::Root);
    let c: Vec<ChildId> = (0..3).map(|_| h.register(&plain(1)).unwrap()).collect();
    for &x in &c {
        h.wake(x);
    }
    h.advance(ms(500));
    h.assert_work_conserving();
    h
}

#[test]
fn the_migration_penalty_keeps_threads_on_their_cpu() {
    let free = three_on_two(0);
    assert!(
        migrations(&free) > 10,
        "without a penalty threads move freely"
    );
    let sticky = three_on_two(1_000_000);
    assert_eq!(migrations(&sticky), 0);
}

#[test]
fn the_migration_penalty_is_added_to_e_when_another_cpu_considers_a_thread() {
    // M = 3 virtual units, C = 0: a thread that ran on the other CPU must be
    // more than 3 units ahead to be taken.
    let cfg = Config {
        migration_penalty: 3,
        ..config(ms(1), Duration::ZERO)
    };
    let mut h = harness(cfg, 2, Parent::Root);
    let c: Vec<ChildId> = (0..3).map(|_| h.register(&plain(1)).unwrap()).collect();
    for &x in &c {
        h.wake(x);
    }
    h.advance(ms(200));
    // Whenever a CPU takes a thread that last ran on the other one, no
    // thread that last ran on this CPU (or never ran) had E within M.
    let mut where_: std::collections::BTreeMap<ChildId, ParentVp> = Default::default();
    let mut moved = 0;
    for s in h.segments() {
        if where_.insert(s.child, s.vp).is_some_and(|v| v != s.vp) {
            moved += 1;
        }
    }
    let spread = c
        .iter()
        .map(|&x| bvt(&h).avt(x).unwrap())
        .fold((i128::MAX, i128::MIN), |(lo, hi), a| (lo.min(a), hi.max(a)));
    assert!(moved > 0, "three threads on two CPUs must move sometimes");
    assert!(
        spread.1 - spread.0 <= 3 + 1 + 1,
        "fair within M + C + m: {spread:?}"
    );
}

// ----- messages ------------------------------------------------------------------------

#[test]
fn messages_warp_set_info_and_errors() {
    let mut h = harness(config(ms(10), ms(20)), 1, Parent::Root);
    let a = h.register(&plain(1)).unwrap();
    let b = h.register(&warping(40, false)).unwrap();
    h.wake(a);
    h.wake(b);
    assert_eq!(running(&h), Some(a));
    // b warps: it waits, its E drops below a's: it runs at once.
    let r = send(&mut h, Some(b), true, warp_msg(true));
    assert_eq!(
        r,
        Reply::Ok(Params::new().with("warped", Value::Bool(true)))
    );
    assert_eq!(running(&h), Some(b));
    assert_eq!(bvt(&h).evt(b), Some(-40));
    assert!(send(&mut h, Some(b), true, warp_msg(false)).is_ok());
    assert_eq!(bvt(&h).evt(b), Some(0));
    // set: a new advance applies to the next charges.
    assert!(send(
        &mut h,
        Some(b),
        true,
        Msg::new("set").arg("advance", Value::Int(5))
    )
    .is_ok());
    let before = bvt(&h).avt(b).unwrap();
    h.advance(ms(10));
    if running(&h) == Some(b) {
        h.block(b);
        assert_eq!(bvt(&h).avt(b), Some(before + 5));
    }
    // The operator names the child.
    let set_a = Msg::new("set")
        .arg("child", Value::Int(i64::from(a.0)))
        .arg("warp", Value::Int(7))
        .arg("warp_limit", Value::Str("5ms".into()));
    assert!(send(&mut h, None, false, set_a).is_ok());
    // ... and may switch its warp on (a runs now: its limit timer is armed).
    assert_eq!(running(&h), Some(a));
    let on = Msg::new("set")
        .arg("child", Value::Int(i64::from(a.0)))
        .arg("warp_on", Value::Bool(true));
    assert!(send(&mut h, None, false, on).is_ok());
    assert_eq!(bvt(&h).is_warped(a), Some(true));
    assert_eq!(h.timer(u64::from(a.0) << 1), Some(h.now() + ms(5)));
    let off = Msg::new("set")
        .arg("child", Value::Int(i64::from(a.0)))
        .arg("warp_on", Value::Bool(false));
    assert!(send(&mut h, None, false, off).is_ok());
    assert_eq!(bvt(&h).is_warped(a), Some(false));
    let info = send(&mut h, Some(a), true, Msg::new("info"));
    let Reply::Ok(p) = info else {
        panic!("{info:?}")
    };
    assert_eq!(
        p.get("avt"),
        Some(&Value::Int(bvt(&h).avt(a).unwrap() as i64))
    );
    assert_eq!(p.get("warped"), Some(&Value::Bool(false)));
    assert!(p.get("svt").is_some());
    // Errors say what is wrong.
    let err = |r: Reply, what: &str| match r {
        Reply::Err(e) => assert!(e.contains(what), "{e}"),
        ok => panic!("expected an error about {what}: {ok:?}"),
    };
    err(send(&mut h, Some(a), true, Msg::new("warp")), "on");
    err(
        send(
            &mut h,
            Some(a),
            true,
            Msg::new("warp").arg("on", Value::Int(1)),
        ),
        "bool",
    );
    err(send(&mut h, None, false, warp_msg(true)), "thread");
    err(
        send(
            &mut h,
            Some(a),
            true,
            warp_msg(true).arg("warp", Value::Int(9)),
        ),
        "cannot choose",
    );
    err(
        send(
            &mut h,
            Some(a),
            true,
            Msg::new("set").arg("advance", Value::Int(0)),
        ),
        "advance",
    );
    err(
        send(
            &mut h,
            Some(a),
            true,
            Msg::new("set").arg("weight", Value::Int(2)),
        ),
        "unknown parameter `weight`",
    );
    err(send(&mut h, None, false, Msg::new("set")), "child");
    err(
        send(
            &mut h,
            None,
            false,
            Msg::new("info").arg("child", Value::Int(99)),
        ),
        "not a child",
    );
    err(
        send(&mut h, Some(a), true, Msg::new("reserve")),
        "does not understand",
    );
}

// ----- §2.5: multi-level ----------------------------------------------------------------

fn told(effects: &[Effect]) -> Vec<Msg> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::MsgParent { vp, msg } if *vp == ParentVp(0) => Some(msg.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn threshold_mode_tells_the_parent_when_a_thread_over_the_threshold_runs() {
    let cfg = Config {
        mode: Mode::Threshold,
        threshold: 100,
        ..config(ms(10), ms(20))
    };
    let mut h = harness(cfg, 1, Parent::Eager);
    let batch = h.register(&plain(1)).unwrap();
    let low = h.register(&warping(50, true)).unwrap();
    let mpeg = h.register(&warping(500, true)).unwrap();
    h.take_effects();
    h.wake(batch);
    assert_eq!(told(&h.take_effects()), vec![warp_msg(false)]);
    h.wake(low);
    assert_eq!(running(&h), Some(low));
    assert!(told(&h.take_effects()).is_empty(), "50 is not over 100");
    h.wake(mpeg);
    assert_eq!(running(&h), Some(mpeg));
    assert_eq!(told(&h.take_effects()), vec![warp_msg(true)]);
    h.advance(ms(5));
    h.block(mpeg);
    assert_eq!(told(&h.take_effects()), vec![warp_msg(false)]);
}

#[test]
fn direct_mode_forwards_the_running_threads_warp_and_limit() {
    let cfg = Config {
        mode: Mode::Direct,
        ..config(ms(10), ms(20))
    };
    let mut h = harness(cfg, 1, Parent::Eager);
    let net = h
        .register(&attach(1, 300, ms(4), Duration::ZERO, true))
        .unwrap();
    h.take_effects();
    h.wake(net);
    let on = warp_msg(true)
        .arg("warp", Value::Int(300))
        .arg("limit", Value::Duration(ms(4)));
    assert_eq!(told(&h.take_effects()), vec![on]);
    h.advance(ms(4)); // its own limit ends the warp: the parent hears it
    assert_eq!(told(&h.take_effects()), vec![warp_msg(false)]);
}

#[test]
fn a_parent_runs_a_child_scheduler_warped_with_its_own_or_the_forwarded_warp() {
    let mut h = harness(config(ms(10), ms(20)), 1, Parent::Root);
    let rt = h.register(&plain(1)).unwrap();
    let be = h.register(&warping(1_000, false)).unwrap();
    h.wake(rt);
    h.wake(be);
    assert_eq!(running(&h), Some(rt));
    // Threshold mode: `warp on` from the child scheduler uses its attachment W.
    assert!(send(&mut h, Some(be), false, warp_msg(true)).is_ok());
    assert_eq!(bvt(&h).evt(be), Some(bvt(&h).avt(be).unwrap() - 1_000));
    assert_eq!(running(&h), Some(be), "and it preempts");
    // Direct mode: the forwarded W replaces it while on.
    let direct = warp_msg(true)
        .arg("warp", Value::Int(30))
        .arg("limit", Value::Duration(ms(20)));
    assert!(send(&mut h, Some(be), false, direct).is_ok());
    assert_eq!(bvt(&h).evt(be), Some(bvt(&h).avt(be).unwrap() - 30));
    h.advance(ms(20));
    assert_eq!(
        bvt(&h).is_warped(be),
        Some(false),
        "the forwarded L applies"
    );
    assert!(send(&mut h, Some(be), false, warp_msg(false)).is_ok());
    assert_eq!(bvt(&h).wants_warp(be), Some(false));
}

// ----- scale -------------------------------------------------------------------------

#[test]
fn a_hundred_thousand_runnable_threads() {
    let mut h = harness(config(ms(1), Duration::ZERO), 4, Parent::Root);
    h.set_checking(false);
    let n = 100_000u32;
    let c: Vec<ChildId> = (0..n)
        .map(|i| h.register(&plain(1 + i64::from(i % 7))).unwrap())
        .collect();
    for &x in &c {
        h.wake(x);
    }
    h.check();
    h.advance(ms(2_000));
    h.assert_work_conserving();
    h.check();
    assert!(h.decisions().len() >= 8_000, "{}", h.decisions().len());
}

// ----- properties ----------------------------------------------------------------------

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => any::<u8>().prop_map(Step::Register),
        1 => any::<u8>().prop_map(Step::Unregister),
        4 => any::<u8>().prop_map(Step::Wake),
        3 => any::<u8>().prop_map(Step::Block),
        2 => any::<u8>().prop_map(Step::Grant),
        1 => any::<u8>().prop_map(Step::Revoke),
        3 => (0u32..30_000).prop_map(Step::Advance),
    ]
}

fn parent() -> impl Strategy<Value = Parent> {
    prop_oneof![
        Just(Parent::Root),
        Just(Parent::Manual),
        Just(Parent::Eager)
    ]
}

/// A random protocol step, or a message from a child.
#[derive(Clone, Debug)]
enum Act {
    Step(Step),
    /// `warp on/off` from the n-th child, as a thread or (direct) as a
    /// child scheduler forwarding `(W, L)`.
    Warp(u8, bool, Option<(i64, u64)>),
    /// `set` of the n-th child: advance, warp limit (µs), warp on.
    Set(u8, i64, u64, bool),
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        12 => step().prop_map(Act::Step),
        2 => (any::<u8>(), any::<bool>(), proptest::option::of((0i64..600, 0u64..3_000)))
            .prop_map(|(n, on, d)| Act::Warp(n, on, d)),
        1 => (any::<u8>(), 1i64..5, 0u64..3_000, any::<bool>())
            .prop_map(|(n, a, l, on)| Act::Set(n, a, l, on)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random protocol runs, messages and involuntary blocks: the harness
    /// rejects every answer the dispatcher would eject for and checks the
    /// invariants after every callback; a granting parent sees work
    /// conservation.
    #[test]
    fn random_protocol_runs_keep_the_rules(
        vps in 1u32..4,
        parent in parent(),
        penalty in prop_oneof![Just(0i64), Just(4i64)],
        mode in prop_oneof![Just(Mode::None), Just(Mode::Threshold), Just(Mode::Direct)],
        involuntary in any::<bool>(),
        acts in proptest::collection::vec(act(), 1..150),
    ) {
        let cfg = Config {
            migration_penalty: penalty,
            mode,
            threshold: 20,
            svt_counts_involuntary: involuntary,
            ..config(ms(1), ms(3))
        };
        let mut h = harness(cfg, vps, parent);
        let params = [
            plain(1),
            plain(3),
            attach(2, 50, ms(2), Duration::ZERO, true),
            attach(1, 10, Duration::ZERO, ms(5), true),
            attach(1, 500, ms(1), ms(3), true),
        ];
        for (i, a) in acts.into_iter().enumerate() {
            let kids = h.children();
            let pick = |n: u8| (!kids.is_empty()).then(|| kids[n as usize % kids.len()]);
            match a {
                Act::Step(s) => {
                    h.set_blocks_involuntary(involuntary && i % 3 == 0);
                    h.step(s, &params);
                    h.set_blocks_involuntary(false);
                }
                Act::Warp(n, on, direct) => {
                    let Some(c) = pick(n) else { continue };
                    let mut msg = warp_msg(on);
                    if let Some((w, l)) = direct {
                        msg = msg.arg("warp", Value::Int(w)).arg("limit", Value::Duration(Duration::from_micros(l)));
                    }
                    let r = send(&mut h, Some(c), direct.is_none(), msg);
                    prop_assert!(r.is_ok(), "{:?}", r);
                }
                Act::Set(n, adv, l, on) => {
                    let Some(c) = pick(n) else { continue };
                    let msg = Msg::new("set")
                        .arg("advance", Value::Int(adv))
                        .arg("warp_limit", Value::Duration(Duration::from_micros(l)))
                        .arg("warp_on", Value::Bool(on));
                    prop_assert!(send(&mut h, Some(c), true, msg).is_ok());
                }
            }
            if parent != Parent::Manual {
                h.assert_work_conserving();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// One CPU, every thread always runnable (CPU-bound), random weights,
    /// mcu and allowance: at every sample time each thread's virtual time is
    /// in [SVT, SVT + C_i + m_i), so over every window between samples (and
    /// over the run from 0) its CPU time differs from its weighted fair
    /// share against SVT, ΔSVT * mcu / m_i, by less than C + mcu (ns).
    #[test]
    fn cpu_bound_threads_get_their_fair_share_within_c_plus_one_mcu(
        advances in proptest::collection::vec(1i64..6, 2..6),
        mcu_us in 500u64..5_000,
        allowance_us in 0u64..20_000,
        samples in proptest::collection::vec(0u64..1_000_000, 1..25),
    ) {
        let (mcu, allowance) = (Duration::from_micros(mcu_us), Duration::from_micros(allowance_us));
        let mut h = harness(config(mcu, allowance), 1, Parent::Root);
        let c: Vec<ChildId> = advances.iter().map(|&m| h.register(&plain(m)).unwrap()).collect();
        for &x in &c {
            h.wake(x);
        }
        let mut samples = samples;
        samples.sort_unstable();
        // (time, SVT, per-thread CPU ns)
        let mut seen: Vec<(i128, Vec<i128>)> = vec![(0, vec![0; c.len()])];
        for t in samples {
            h.advance_to(Instant::ZERO + Duration::from_micros(t));
            let svt = bvt(&h).svt();
            let cpu: Vec<i128> = c.iter().map(|&x| i128::from(h.cpu_time(x).as_nanos())).collect();
            for (i, &x) in c.iter().enumerate() {
                let a = bvt(&h).avt(x).unwrap();
                let mcu_ns = i128::from(mcu.as_nanos());
                let cv = (i128::from(allowance.as_nanos()) * i128::from(advances[i]) + mcu_ns - 1)
                    / mcu_ns;
                prop_assert!(a >= svt && a - svt < cv + i128::from(advances[i]),
                    "{x}: A {a}, SVT {svt}");
            }
            seen.push((svt, cpu));
        }
        let mcu_ns = i128::from(mcu.as_nanos());
        let bound = i128::from(allowance.as_nanos()) + mcu_ns;
        for (k, (svt1, cpu1)) in seen.iter().enumerate() {
            for (svt2, cpu2) in &seen[k + 1..] {
                for i in 0..c.len() {
                    let m = i128::from(advances[i]);
                    // |S_i - ΔSVT * mcu / m_i| < C + mcu, scaled by m_i.
                    let err = (cpu2[i] - cpu1[i]) * m - (svt2 - svt1) * mcu_ns;
                    prop_assert!(err.abs() < bound * m,
                        "thread {i}: error {} ns over a window", err / m);
                }
            }
        }
    }

    /// Warp buys latency, not share: a CPU-bound thread that is always
    /// warped (no limit) receives at most a constant more than unwarped,
    /// (W + C_0 + m_0) * mcu / m_0 + n * (C + mcu), however long the run.
    #[test]
    fn warp_does_not_raise_long_term_share(
        advances in proptest::collection::vec(1i64..5, 2..5),
        warp in 0i64..2_000,
        mcu_ms in 1u64..5,
        c_mcus in 0u64..4,
    ) {
        let (mcu, allowance) = (ms(mcu_ms), ms(mcu_ms * c_mcus));
        let run = |w: i64, horizon: Duration| {
            let mut h = harness(config(mcu, allowance), 1, Parent::Root);
            let mut c = Vec::new();
            for (i, &m) in advances.iter().enumerate() {
                let p = if i == 0 { attach(m, w, Duration::ZERO, Duration::ZERO, true) } else { plain(m) };
                c.push(h.register(&p).unwrap());
            }
            for &x in &c {
                h.wake(x);
            }
            h.advance(horizon);
            h.cpu_time(c[0]).as_nanos() as i128
        };
        let m0 = i128::from(advances[0]);
        let mcu_ns = i128::from(mcu.as_nanos());
        let cv0 = (i128::from(allowance.as_nanos()) * m0 + mcu_ns - 1) / mcu_ns;
        let bound = (i128::from(warp) + cv0 + m0) * mcu_ns / m0
            + advances.len() as i128 * (i128::from(allowance.as_nanos()) + mcu_ns);
        for horizon in [ms(500), ms(3_000)] {
            let extra = run(warp, horizon) - run(0, horizon);
            prop_assert!(extra <= bound, "over {horizon}: {extra} > {bound}");
        }
    }
}
