//! `res` and `dbs` on several VPs (issue 19): `multiprocessor` and `fit`
//! read strictly; partitioned placement by first-fit and worst-fit, with
//! the refusal naming every VP's load; partitioned children that run only
//! on their VP and get their amount in every window; `res` in global mode
//! admitting exactly up to the Goossens-Funk-Baruah bound; random protocol
//! runs that keep every rule (the harness checks the invariants, placement
//! included, after each callback).

use hsched_core::{ChildId, Duration, Instant, Msg, Params, ParentVp, Reply, Share, Value};
use hsched_dispatch::testkit::{Harness, Parent, Segment, Step};
use hsched_policies::dbs::partitioned::DbsParts;
use hsched_policies::dbs::Dbs;
use hsched_policies::partition::Fit;
use hsched_policies::res::partitioned::ResParts;
use hsched_policies::res::Res;
use proptest::prelude::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Instant {
    Instant(ms(n).as_nanos())
}

fn rsv(amount: u64, period: u64) -> Params {
    Params::new()
        .with("amount", Value::Duration(ms(amount)))
        .with("period", Value::Duration(ms(period)))
}

fn build(policy: &str, mp: &str, fit: &str) -> Result<(), String> {
    let params = Params::new()
        .with("multiprocessor", Value::Str(mp.into()))
        .with("fit", Value::Str(fit.into()));
    hsched_policies::build(policy, &params).map(|_| ())
}

/// CPU time `child` got in `[from, to)`, and the VPs it ran on.
fn got(segments: &[Segment], child: ChildId, from: Instant, to: Instant) -> Duration {
    segments
        .iter()
        .filter(|s| s.child == child)
        .map(|s| s.end.min(to).saturating_since(s.start.max(from)))
        .fold(Duration::ZERO, |a, b| a + b)
}

fn vps_of(segments: &[Segment], child: ChildId) -> Vec<ParentVp> {
    let mut v: Vec<ParentVp> = segments
        .iter()
        .filter(|s| s.child == child && s.end > s.start)
        .map(|s| s.vp)
        .collect();
    v.dedup();
    v.sort();
    v.dedup();
    v
}

#[test]
fn modes_and_fits_are_read_strictly() {
    assert!(build("res", "one", "first").is_ok());
    assert!(build("res", "partitioned", "worst").is_ok());
    assert!(build("res", "global", "first").is_ok());
    let e = build("res", "several", "first").unwrap_err();
    assert!(
        e.contains("res") && e.contains("\"one\", \"partitioned\", \"global\""),
        "{e}"
    );
    let e = build("res", "partitioned", "best").unwrap_err();
    assert!(
        e.contains("`fit`") && e.contains("\"first\" or \"worst\""),
        "{e}"
    );
    // `worst` places children of a partitioned scheduler only.
    assert!(build("res", "global", "worst")
        .unwrap_err()
        .contains("partitioned mode only"));
    assert!(build("dbs", "partitioned", "first").is_ok());
    let e = build("dbs", "global", "first").unwrap_err();
    assert!(
        e.contains("dbs") && e.contains("one-off") && e.contains("\"one\", \"partitioned\""),
        "{e}"
    );
    // A uniformly slower processor is for "one" only.
    let p = Params::new()
        .with("rate", Value::Str("0.5".into()))
        .with("multiprocessor", Value::Str("global".into()));
    let e = hsched_policies::build("res", &p).err().unwrap();
    assert!(e.contains("whole CPU per VP"), "{e}");
}

/// Utilizations 6/10, 5/10, 4/10, 3/10, then 2/10, on 2 VPs.
/// First-fit: 0.6 -> VP0; 0.5 -> VP1 (VP0 would hold 1.1); 0.4 -> VP0
/// (1.0); 0.3 -> VP1 (0.8); 0.2 -> VP1 (1.0). Worst-fit: 0.6 -> VP0;
/// 0.5 -> VP1 (0.5 < 1.1); 0.4 -> VP1 (0.9 < 1.0); 0.3 -> VP0 (0.9;
/// VP1 would hold 1.2); 0.2 fits nowhere (1.1 on both): refused.
#[test]
fn first_fit_and_worst_fit_place_as_stated() {
    let asks = [(6, 10), (5, 10), (4, 10), (3, 10), (2, 10)];
    for (fit, want) in [
        (
            Fit::First,
            vec![Some(0), Some(1), Some(0), Some(1), Some(1)],
        ),
        (Fit::Worst, vec![Some(0), Some(1), Some(1), Some(0), None]),
    ] {
        let mut h = Harness::new(Box::new(ResParts::new(fit)), 2, Parent::Root);
        let mut homes = Vec::new();
        let mut refusal = None;
        for (a, p) in asks {
            match h.register(&rsv(a, p)) {
                Ok(c) => homes.push(h.sched().home(c)),
                Err(e) => {
                    homes.push(None);
                    refusal = Some(e.0);
                }
            }
        }
        assert_eq!(homes, want, "{fit:?}");
        if fit == Fit::Worst {
            let e = refusal.unwrap();
            assert!(
                e.contains("RESBH 2ms, 10ms")
                    && e.contains("VP 0 holds 9/10")
                    && e.contains("VP 1 holds 9/10")
                    && e.contains("worst-fit"),
                "{e}"
            );
        }
    }
}

/// First-fit on 2 and 4 VPs admits CPU-bound children up to a full load on
/// every VP (2 and 4 of 1/2 + 1/2... here 3/10 + 7/10 per VP); the next,
/// 1/10, is refused. Each child runs only on its VP and gets exactly its
/// amount in every window of its grid (its VP is a uniprocessor `res`).
#[test]
fn partitioned_res_fills_each_vp_and_keeps_every_window() {
    for vps in [2u32, 4] {
        let mut h = Harness::new(Box::new(ResParts::new(Fit::First)), vps, Parent::Root);
        let mut kids = Vec::new();
        for _ in 0..vps {
            // 7/10 goes to the first VP with room: VP k for the k-th.
            let c = h.register(&rsv(7, 10)).unwrap();
            kids.push((c, 7, 10));
        }
        for _ in 0..vps {
            // 3/20 twice fills each VP: 7/10 + 3/20 + 3/20 = 1.
            for _ in 0..2 {
                let c = h.register(&rsv(3, 20)).unwrap();
                kids.push((c, 3, 20));
            }
        }
        let e = h.register(&rsv(1, 10)).unwrap_err().0;
        assert!(e.contains("fits on none of its"), "{e}");
        for vp in 0..vps {
            assert!(e.contains(&format!("VP {vp} holds 1/1")), "{e}");
        }
        for &(c, ..) in &kids {
            h.wake(c);
        }
        h.advance_to(at(200));
        let segs = h.segments().to_vec();
        for &(c, a, p) in &kids {
            let home = h.sched().home(c).unwrap();
            assert_eq!(vps_of(&segs, c), vec![ParentVp(home)], "{c} migrated");
            for k in 0..200 / p {
                let w = got(&segs, c, at(k * p), at((k + 1) * p));
                assert_eq!(w, ms(a), "{c} in window {k} on {vps} VPs");
            }
        }
    }
}

/// Global EDF on m VPs admits while Σu + (m-1)·u_max <= m.
/// 2 VPs: 1/2, 1/2, 2/5: Σ = 7/5, + 1/2 = 19/10 <= 2; then 1/5 makes
/// Σ = 8/5, + 1/2 = 21/10 > 2: refused; 1/10 makes 3/2 + 1/2 = 2: admitted.
/// 4 VPs: five of 1/2: Σ = 5/2, + 3/2 = 4 <= 4; a sixth 1/10: 13/5 + 3/2
/// = 41/10 > 4: refused. Every CPU-bound child then gets exactly its
/// amount in every window (its server's deadlines are met).
#[test]
fn global_res_admits_up_to_the_density_bound_and_meets_every_window() {
    /// (VPs, admitted, refused, admitted after the refusal).
    type Case<'a> = (u32, &'a [(u64, u64)], (u64, u64), Option<(u64, u64)>);
    let cases: [Case; 2] = [
        (2, &[(5, 10), (5, 10), (4, 10)], (2, 10), Some((1, 10))),
        (
            4,
            &[(5, 10), (5, 10), (5, 10), (5, 10), (5, 10)],
            (1, 10),
            None,
        ),
    ];
    for (vps, admitted, refused, last) in cases {
        let mut h = Harness::new(Box::new(Res::new(Share::ONE).global()), vps, Parent::Root);
        let mut kids = Vec::new();
        for &(a, p) in admitted {
            kids.push((h.register(&rsv(a, p)).unwrap(), a, p));
        }
        let e = h.register(&rsv(refused.0, refused.1)).unwrap_err().0;
        assert!(
            e.contains(&format!("global EDF on {vps} VPs")) && e.contains("u_max = 1/2"),
            "{e}"
        );
        if let Some((a, p)) = last {
            kids.push((h.register(&rsv(a, p)).unwrap(), a, p));
        }
        for &(c, ..) in &kids {
            h.wake(c);
        }
        h.advance_to(at(300));
        let segs = h.segments().to_vec();
        for &(c, a, p) in &kids {
            for k in 0..300 / p {
                let w = got(&segs, c, at(k * p), at((k + 1) * p));
                assert_eq!(w, ms(a), "{c} in window {k} on {vps} VPs");
            }
        }
    }
}

fn reserve(start: u64, amount: u64, deadline: u64) -> Msg {
    Msg::new("reserve")
        .arg("start", Value::Duration(ms(start)))
        .arg("amount", Value::Duration(ms(amount)))
        .arg("deadline", Value::Duration(ms(deadline)))
}

/// Threads join the VP with the fewest children (a -> VP0, b -> VP1,
/// c -> VP0), then reserve in [0, 10ms]: a 8ms (VP0), b 6ms (VP0 would
/// need 14ms: VP1), c 3ms (VP0 11ms: VP1, 9ms), d 2ms (VP0, 10ms), e 1ms
/// (VP1, 10ms); f's 1ms fits nowhere: refused naming both VPs' 100% peak
/// load. Then every reservation is met by 10ms, each thread on its VP.
#[test]
fn partitioned_dbs_places_reservations_by_fit() {
    for fit in [Fit::First, Fit::Worst] {
        let mut h = Harness::new(
            Box::new(DbsParts::new(fit, Dbs::new(ms(10)).unwrap())),
            2,
            Parent::Root,
        );
        let a = h.register(&Params::new()).unwrap();
        let b = h.register(&Params::new()).unwrap();
        let c = h.register(&Params::new()).unwrap();
        assert_eq!(
            [a, b, c].map(|x| h.sched().home(x)),
            [Some(0), Some(1), Some(0)]
        );
        // a: 8ms in [0, 10]: VP0 (first: lowest that passes; worst: 8/10
        // on either, tie to VP0).
        assert!(matches!(
            h.message(Some(a), &reserve(0, 8, 10)),
            Reply::Ok(_)
        ));
        // b: 6ms: VP0 would need 14ms in 10ms; VP1 passes.
        assert!(matches!(
            h.message(Some(b), &reserve(0, 6, 10)),
            Reply::Ok(_)
        ));
        // c: 3ms: VP0 11ms > 10ms; VP1 9ms: VP1, under both fits.
        let r = h.message(Some(c), &reserve(0, 3, 10));
        assert!(matches!(r, Reply::Ok(_)), "{r:?}");
        assert_eq!(h.sched().home(c), Some(1));
        // d: 2ms: VP0 holds 8, VP1 9: first-fit VP0 (10/10); worst-fit
        // VP0 too (10/10 < 11/10 refused on VP1).
        let d = h.register(&Params::new()).unwrap();
        let r = h.message(Some(d), &reserve(0, 2, 10));
        assert!(matches!(r, Reply::Ok(_)), "{r:?}");
        assert_eq!(h.sched().home(d), Some(0), "{fit:?}");
        // e: 1ms: VP0 11ms > 10ms, VP1 10ms: fits on VP1 only.
        let e = h.register(&Params::new()).unwrap();
        let r = h.message(Some(e), &reserve(0, 1, 10));
        assert!(matches!(r, Reply::Ok(_)), "{r:?}");
        assert_eq!(h.sched().home(e), Some(1));
        // f: 1ms: full everywhere: refused naming both VPs.
        let f = h.register(&Params::new()).unwrap();
        let Reply::Err(why) = h.message(Some(f), &reserve(0, 1, 10)) else {
            panic!("f was admitted");
        };
        assert!(
            why.contains("fits on none of its 2 VPs")
                && why.contains("VP 0 (peak load 100.00%)")
                && why.contains("VP 1 (peak load 100.00%)"),
            "{why}"
        );
        for x in [a, b, c, d, e, f] {
            h.wake(x);
        }
        h.advance_to(at(10));
        let segs = h.segments().to_vec();
        for (x, amount) in [(a, 8), (b, 6), (c, 3), (d, 2), (e, 1)] {
            assert!(got(&segs, x, at(0), at(10)) >= ms(amount), "{x}");
            let home = h.sched().home(x).unwrap();
            assert_eq!(vps_of(&segs, x), vec![ParentVp(home)], "{x} migrated");
        }
    }
}

/// Worst-fit differs from first-fit: with 4ms on VP0 and 6ms on VP1 of
/// [0, 10ms], a 2ms request goes to VP0 under both (first: lowest; worst:
/// 6/10 < 8/10); with 6ms on VP0 and 4ms on VP1, first-fit takes VP0
/// (8/10) and worst-fit VP1 (6/10).
#[test]
fn partitioned_dbs_worst_fit_takes_the_least_loaded_vp() {
    for (fit, want) in [(Fit::First, 0), (Fit::Worst, 1)] {
        let mut h = Harness::new(
            Box::new(DbsParts::new(fit, Dbs::new(ms(10)).unwrap())),
            2,
            Parent::Root,
        );
        let a = h.register(&Params::new()).unwrap(); // VP0
        let b = h.register(&Params::new()).unwrap(); // VP1
        assert!(matches!(
            h.message(Some(a), &reserve(0, 6, 10)),
            Reply::Ok(_)
        ));
        // b: 4ms: first-fit VP0 (10/10); worst-fit VP1 (4/10). Keep it on
        // VP1 either way: reserve 5ms, which VP0 cannot take.
        assert!(matches!(
            h.message(Some(b), &reserve(0, 5, 10)),
            Reply::Ok(_)
        ));
        assert_eq!(h.sched().home(b), Some(1));
        let c = h.register(&Params::new()).unwrap();
        assert!(matches!(
            h.message(Some(c), &reserve(0, 2, 10)),
            Reply::Ok(_)
        ));
        // first: VP0 passes (8/10); worst: VP1 after 7/10 < VP0 after 8/10.
        assert_eq!(h.sched().home(c), Some(want), "{fit:?}");
    }
}

fn res_params() -> Vec<Params> {
    vec![rsv(1, 10), rsv(3, 10), rsv(5, 20), Params::new()]
}

proptest! {
    /// Random protocol runs of both partitioned schedulers (and global
    /// `res`) under every kind of parent: no answer the dispatcher would
    /// eject, every invariant (placement: each child in its VP's instance,
    /// each VP's load at most 1) after every callback.
    #[test]
    fn random_protocol_runs_keep_the_rules(
        which in 0u8..4,
        vps in 1u32..5,
        parent in prop_oneof![Just(Parent::Root), Just(Parent::Manual), Just(Parent::Eager)],
        steps in proptest::collection::vec(
            prop_oneof![
                2 => any::<u8>().prop_map(Step::Register),
                1 => any::<u8>().prop_map(Step::Unregister),
                4 => any::<u8>().prop_map(Step::Wake),
                3 => any::<u8>().prop_map(Step::Block),
                2 => any::<u8>().prop_map(Step::Grant),
                1 => any::<u8>().prop_map(Step::Revoke),
                3 => (0u32..30_000).prop_map(Step::Advance),
            ],
            1..150,
        ),
        msgs in proptest::collection::vec((any::<u8>(), 1u64..8, 1u64..30), 0..10),
    ) {
        let sched: Box<dyn hsched_core::Scheduler> = match which {
            0 => Box::new(ResParts::new(Fit::First)),
            1 => Box::new(ResParts::new(Fit::Worst)),
            2 => Box::new(Res::new(Share::ONE).global()),
            _ => Box::new(DbsParts::new(Fit::Worst, Dbs::new(ms(10)).unwrap())),
        };
        let mut h = Harness::new(sched, vps, parent);
        let params = res_params();
        for (i, step) in steps.into_iter().enumerate() {
            h.step(step, &params);
            // Now and then a child re-reserves (and may move).
            if let Some(&(n, a, p)) = msgs.get(i / 15).filter(|_| i % 15 == 7) {
                let kids = h.children();
                if !kids.is_empty() {
                    let c = kids[n as usize % kids.len()];
                    let now = h.now().as_nanos() / 1_000_000;
                    let m = if which == 3 {
                        reserve(now, a, now + a + p)
                    } else {
                        Msg::new("reserve")
                            .arg("amount", Value::Duration(ms(a)))
                            .arg("period", Value::Duration(ms(a + p)))
                    };
                    let _ = h.message(Some(c), &m);
                }
            }
        }
    }
}
