//! The rewrite rules checked on schedules: random allocations of CPU time
//! that meet a guarantee are generated, and the guarantee each rule derives
//! is checked on them over every window (exactly: see `schedule_check`).
//! A rule is sound only if no schedule meeting its premise breaks its
//! conclusion; these tests look for one.

mod common;

use common::rng;
use hsched_analysis::guarantee::{Guarantee, Kind, Limit, Shape};
use hsched_analysis::rewrite::{
    basic_supply, continuous_supply, implies, sfq_child, strongest, to_reservation, EPSILON,
};
use hsched_analysis::schedule_check::Schedule;
use hsched_core::{Duration, Share};
use proptest::prelude::*;
use rand::Rng;

fn ns(d: Duration) -> u64 {
    d.as_nanos()
}

fn reservation(shape: Shape, limit: Limit, x: u64, y: u64) -> Guarantee {
    Guarantee::reservation(
        shape,
        limit,
        Duration::from_nanos(x),
        Duration::from_nanos(y),
    )
    .unwrap()
}

/// A reservation, a schedule meeting it, and the range it was built over.
#[derive(Debug)]
struct Case {
    have: Guarantee,
    y: u64,
    offset: u64,
    end: u64,
    schedule: Schedule,
}

fn case(seed: u64, shape: Shape, limit: Limit, x: u64, y: u64, windows: u64) -> Case {
    let mut r = rng(seed);
    let offset = r.gen_range(0..=y);
    let soft = limit == Limit::Soft;
    let busy = match shape {
        Shape::Basic => common::basic(&mut r, x, y, offset, windows, soft),
        Shape::Continuous => common::continuous(&mut r, x, y, offset, windows, soft),
    };
    Case {
        have: reservation(shape, limit, x, y),
        y,
        offset,
        end: offset + windows * y,
        schedule: Schedule::new(busy).unwrap(),
    }
}

fn psbe_parts(g: Guarantee) -> (Share, u64) {
    match g {
        Guarantee::Psbe { share, delta } => (share, ns(delta)),
        other => panic!("expected PSBE, got {other}"),
    }
}

/// Checks on `c.schedule` any guarantee derived from `c.have` (a basic one
/// on the premise's own grid, which every derived basic reservation keeps).
fn holds(c: &Case, g: &Guarantee) -> Result<(), String> {
    let s = &c.schedule;
    match *g {
        Guarantee::Null => Ok(()),
        Guarantee::Res(r) => {
            let (a, l) = (ns(r.amount), ns(r.period));
            let fits = (c.end - c.offset) / l;
            match r.shape {
                Shape::Basic => s.check_basic(a, l, c.offset, fits, r.limit == Limit::Hard),
                Shape::Continuous => {
                    s.check_least(a, l, c.offset, c.end)?;
                    if r.limit == Limit::Hard {
                        s.check_most(a, l, c.offset, c.end)?;
                    }
                    Ok(())
                }
            }
        }
        Guarantee::Psbe { share, delta } => s.check_psbe(share, ns(delta), c.offset, c.end),
        Guarantee::Ps(share) => {
            // A long-run share, over the whole run (a finite run cannot
            // show a limit: allow the two periods' deficit a reservation
            // may have at the ends).
            let total = s.supply(c.offset, c.end);
            let span = u128::from(c.end - c.offset);
            let owed = span * u128::from(share.num()) / u128::from(share.den());
            if u128::from(total) + 2 * u128::from(c.y) >= owed {
                Ok(())
            } else {
                Err(format!(
                    "received {total} of {span} ns, share {share} owes {owed}"
                ))
            }
        }
        Guarantee::All => s.check_least(c.end - c.offset, c.end - c.offset, c.offset, c.end),
        Guarantee::Resu(_) => Err(format!("{g} is not derivable from {}", c.have)),
    }
}

fn shapes() -> impl Strategy<Value = (Shape, Limit)> {
    prop_oneof![
        Just((Shape::Basic, Limit::Hard)),
        Just((Shape::Basic, Limit::Soft)),
        Just((Shape::Continuous, Limit::Hard)),
        Just((Shape::Continuous, Limit::Soft)),
    ]
}

/// `(x, y)` with `0 ≤ x ≤ y`, at a random scale (ns, µs or ms steps).
fn amounts() -> impl Strategy<Value = (u64, u64)> {
    (
        1u64..=60,
        0u64..=60,
        prop_oneof![Just(1u64), Just(1_000), Just(1_000_000)],
    )
        .prop_map(|(y, x, scale)| ((x % (y + 1)) * scale, y * scale))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Th. 4 (and Lemma B): a basic reservation `x, y` meets
    /// PSBE `x/y, 2(x/y)(y − x)` over every interval.
    #[test]
    fn th4_basic_reservation_is_psbe(seed: u64, (x, y) in amounts(), hard: bool, windows in 2u64..30) {
        let limit = if hard { Limit::Hard } else { Limit::Soft };
        let c = case(seed, Shape::Basic, limit, x, y, windows);
        let d = strongest(&c.have, Kind::Psbe).unwrap();
        prop_assert_eq!(d.steps[0].rule, "Th. 4");
        let (share, delta) = psbe_parts(d.result);
        prop_assert_eq!(share, Share::new(x, y).unwrap());
        prop_assert!(c.schedule.check_psbe(share, delta, c.offset, c.end).is_ok(),
            "{}: {:?}", d, c.schedule.check_psbe(share, delta, c.offset, c.end));
    }

    /// Th. 3 (and Lemma C): a continuous reservation meets
    /// PSBE `x/y, (x/y)(y − x)` over every interval.
    #[test]
    fn th3_continuous_reservation_is_psbe(seed: u64, (x, y) in amounts(), hard: bool, windows in 2u64..30) {
        let limit = if hard { Limit::Hard } else { Limit::Soft };
        let c = case(seed, Shape::Continuous, limit, x, y, windows);
        let d = strongest(&c.have, Kind::Psbe).unwrap();
        prop_assert_eq!(d.steps[0].rule, "Th. 3");
        let (share, delta) = psbe_parts(d.result);
        prop_assert!(c.schedule.check_psbe(share, delta, c.offset, c.end).is_ok(), "{}", d);
    }

    /// Th. 1: every window of length `2y − x + ε` of a basic reservation
    /// holds `x`; so does every window of any length `L` hold Lemma B's
    /// `sbf_b(L)`.
    #[test]
    fn th1_basic_reservation_is_continuous(seed: u64, (x, y) in amounts(), hard: bool, windows in 3u64..30, l_frac in 0u64..=1000) {
        prop_assume!(0 < x && x < y);
        let limit = if hard { Limit::Hard } else { Limit::Soft };
        let c = case(seed, Shape::Basic, limit, x, y, windows);
        let d = strongest(&c.have, Kind::Rescs).unwrap();
        let th1 = 2 * y - x + ns(EPSILON);
        prop_assert_eq!(d.result, reservation(Shape::Continuous, Limit::Soft, x, th1));
        prop_assert!(d.steps.iter().any(|s| s.rule == "Th. 1"), "{}", d);
        prop_assert!(c.schedule.check_least(x, th1, c.offset, c.end).is_ok());
        // Lemma B at a random window up to the whole run.
        let l = 1 + (c.end - c.offset - 1) * l_frac / 1000;
        let bound = ns(basic_supply(Duration::from_nanos(x), Duration::from_nanos(y), Duration::from_nanos(l)));
        prop_assert!(c.schedule.check_least(bound, l, c.offset, c.end).is_ok());
    }

    /// Lemma C: every window of length `L` of a continuous reservation holds
    /// `sbf_c(L)`; a hard one holds exactly `x` in every window of `y`.
    #[test]
    fn continuous_supply_bound_holds(seed: u64, (x, y) in amounts(), hard: bool, windows in 2u64..30, l_frac in 0u64..=1000) {
        let limit = if hard { Limit::Hard } else { Limit::Soft };
        let c = case(seed, Shape::Continuous, limit, x, y, windows);
        let l = 1 + (c.end - c.offset - 1) * l_frac / 1000;
        let bound = ns(continuous_supply(Duration::from_nanos(x), Duration::from_nanos(y), Duration::from_nanos(l)));
        prop_assert!(c.schedule.check_least(bound, l, c.offset, c.end).is_ok());
        if hard {
            prop_assert!(c.schedule.check_most(x, y, c.offset, c.end).is_ok());
        }
    }

    /// Th. 5: the share over the whole run is `x/y` (every window of the
    /// grid holds `x`), and over windows of length `T` it is at least
    /// `x/y − 2x(y − x)/(yT)`, which tends to `x/y`.
    #[test]
    fn th5_reservation_is_ps(seed: u64, (x, y) in amounts(), (shape, limit) in shapes(), windows in 2u64..30) {
        let c = case(seed, shape, limit, x, y, windows);
        let d = strongest(&c.have, Kind::Ps).unwrap();
        prop_assert_eq!(d.steps[0].rule, "Th. 5");
        prop_assert_eq!(d.result, Guarantee::Ps(Share::new(x, y).unwrap()));
        prop_assert!(c.schedule.supply(c.offset, c.end) >= windows * x);
        for k in [windows / 2, windows] {
            let t = k * y;
            if let Some(w) = c.schedule.least_window(t, c.offset, c.end) {
                prop_assert!(u128::from(w.supply) * u128::from(y) + 2 * u128::from(x) * u128::from(y - x)
                    >= u128::from(x) * u128::from(t));
            }
        }
    }

    /// Whatever `implies` accepts from a reservation holds on every schedule
    /// meeting that reservation, and so does every step on the way: random
    /// wanted guarantees of every kind, anywhere (mostly refused) or just
    /// below the best the rules give (which `implies` must accept).
    #[test]
    fn everything_implies_accepts_holds(
        seed: u64,
        (x, y) in amounts(),
        (shape, limit) in shapes(),
        windows in 3u64..20,
        want_kind in 0usize..6,
        near_best: bool,
        a_frac in 0u64..=1000,
        l_frac in 1u64..=1000,
    ) {
        let c = case(seed, shape, limit, x, y, windows);
        let span = c.end - c.offset;
        let l = (span * l_frac / 1000).max(1);
        let k = (l / y).max(1);
        let scaled = |n: u64| (u128::from(n) * u128::from(a_frac) / 1000) as u64;
        // Set where the wanted guarantee is built just below the best.
        let mut must_accept = false;
        let want = match want_kind {
            0 | 1 => {
                let ws = if want_kind == 0 { Shape::Continuous } else { Shape::Basic };
                let best = to_reservation(&c.have, ws, Limit::Soft, Duration::from_nanos(l));
                match (near_best, best) {
                    (true, Some(d)) => {
                        must_accept = true;
                        let Guarantee::Res(b) = d.result else { unreachable!() };
                        reservation(ws, Limit::Soft, scaled(ns(b.amount)), l)
                    }
                    _ => reservation(ws, Limit::Soft, scaled(l), l),
                }
            }
            2 => reservation(Shape::Basic, Limit::Hard, x * k, y * k),
            3 => {
                let (s, delta) = psbe_parts(strongest(&c.have, Kind::Psbe).unwrap().result);
                if near_best && !s.is_zero() {
                    // s' = s·f, δ' = δ·f + something: covered by proportional weakening.
                    let f = Share::new(a_frac, 1000).unwrap();
                    must_accept = true;
                    Guarantee::Psbe {
                        share: s.checked_mul(f).unwrap(),
                        delta: Duration::from_nanos(scaled(delta) + 1 + l % 7),
                    }
                } else {
                    Guarantee::Psbe { share: Share::new(a_frac, 1000).unwrap(), delta: Duration::from_nanos(l) }
                }
            }
            4 => Guarantee::Ps(Share::new(a_frac, 1000).unwrap()),
            _ => reservation(Shape::Continuous, Limit::Hard, x * k, y * k),
        };
        let derived = implies(&c.have, &want);
        if must_accept {
            prop_assert!(derived.is_ok(), "{} → {}: {:?}", c.have, want, derived);
        }
        if let Ok(d) = derived {
            prop_assert_eq!(d.result, want);
            prop_assert!(holds(&c, &want).is_ok(), "{}: {:?}", d, holds(&c, &want));
            for step in &d.steps {
                prop_assert!(holds(&c, &step.to).is_ok(), "step {} of {}: {:?}", step.rule, d, holds(&c, &step.to));
            }
        }
    }

    /// Th. 6: a schedule that meets PSBE `s, δ` (δ measured on it) meets
    /// RESCS and RESBS `(y·s − δ), y` for any `y > δ/s`.
    #[test]
    fn th6_psbe_is_reservation(
        seed: u64,
        num in 1u64..=9,
        quantum in 1u64..=50,
        slack in 0u64..=200,
        y_frac in 0u64..=1000,
    ) {
        let mut r = rng(seed);
        let share = Share::new(num, 10).unwrap();
        let horizon = 20_000;
        let busy = common::fluid(&mut r, num, 10, quantum, slack, horizon);
        let s = Schedule::new(busy).unwrap();
        let (_, deficit) = s.worst_psbe_deficit(share, 0, horizon);
        let delta = deficit.div_ceil(u128::from(share.den())) as u64;
        prop_assert!(s.check_psbe(share, delta, 0, horizon).is_ok());
        let have = Guarantee::Psbe { share, delta: Duration::from_nanos(delta) };
        // y from just above δ/s up to a quarter of the run.
        let least_y = delta * share.den() / share.num() + 1;
        let y = least_y + (horizon / 4) * y_frac / 1000;
        for shape in [Shape::Continuous, Shape::Basic] {
            let d = to_reservation(&have, shape, Limit::Soft, Duration::from_nanos(y));
            let Some(d) = d else {
                // Only when y·s − δ rounds to nothing.
                prop_assert!(u128::from(y) * u128::from(num) / 10 <= u128::from(delta));
                continue;
            };
            prop_assert_eq!(d.steps[0].rule, "Th. 6");
            let Guarantee::Res(res) = d.result else { unreachable!() };
            let amount = ns(res.amount);
            prop_assert_eq!(u128::from(amount), u128::from(y) * u128::from(num) / 10 - u128::from(delta));
            match shape {
                Shape::Continuous => prop_assert!(s.check_least(amount, y, 0, horizon).is_ok()),
                Shape::Basic => {
                    let offset = r.gen_range(0..y);
                    prop_assert!(s.check_basic(amount, y, offset, (horizon - offset) / y, false).is_ok());
                }
            }
        }
    }

    /// The SFQ rule of §5.1 on a simulated SFQ scheduler: under a parent
    /// basic reservation (so PSBE by Th. 4), every thread with weight
    /// fraction `r` meets PSBE `s·r, r·δ + r·T·q + q`.
    #[test]
    fn sfq_rule_holds_on_simulated_sfq(
        seed: u64,
        (x, y) in (1u64..=8, 2u64..=8).prop_map(|(x, y)| (x.min(y) * 10_000, y * 10_000)),
        weights in proptest::collection::vec(1u64..=5, 1..=4),
        quantum in 1u64..=20,
        hard: bool,
    ) {
        let quantum = quantum * 1_000;
        let limit = if hard { Limit::Hard } else { Limit::Soft };
        let c = case(seed, Shape::Basic, limit, x, y, 40);
        let (s, delta) = psbe_parts(strongest(&c.have, Kind::Psbe).unwrap().result);
        let threads = sfq(&c.schedule, &weights, quantum);
        let total: u64 = weights.iter().sum();
        for (i, busy) in threads.into_iter().enumerate() {
            let r = Share::new(weights[i], total).unwrap();
            let g = sfq_child(s, Duration::from_nanos(delta), Duration::from_nanos(quantum), weights.len() as u64, r);
            let (share, lag) = psbe_parts(g);
            let schedule = Schedule::new(busy).unwrap();
            prop_assert!(schedule.check_psbe(share, lag, c.offset, c.end).is_ok(),
                "thread {} of {:?} under {}: {} fails: {:?}", i, weights, c.have, g,
                schedule.check_psbe(share, lag, c.offset, c.end));
        }
    }
}

/// Start-time fair queuing over the parent's busy time, every thread always
/// backlogged: the thread with the least start tag runs a quantum of
/// service (which may span the parent's idle gaps); its next start tag is
/// its finish tag `S + q/w`. Ties go to the lowest index.
fn sfq(parent: &Schedule, weights: &[u64], quantum: u64) -> Vec<Vec<(u64, u64)>> {
    let lcm = weights.iter().fold(1u64, |l, &w| l / gcd(l, w) * w);
    let mut tags: Vec<u128> = vec![0; weights.len()];
    let mut out = vec![Vec::new(); weights.len()];
    let mut current = 0usize;
    let mut left = 0u64;
    for &(mut s, e) in parent.intervals() {
        while s < e {
            if left == 0 {
                current = (0..weights.len()).min_by_key(|&i| (tags[i], i)).unwrap();
                tags[current] += u128::from(quantum) * u128::from(lcm / weights[current]);
                left = quantum;
            }
            let run = left.min(e - s);
            out[current].push((s, s + run));
            s += run;
            left -= run;
        }
    }
    out
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Th. 4 and Th. 1 are tight: the schedule that runs at the start of one
/// window and at the end of the next reaches the bounds exactly.
#[test]
fn th1_and_th4_are_tight() {
    let (x, y) = (30_000u64, 80_000u64);
    let mut busy = vec![(0, x)];
    busy.extend((1..10).map(|i| ((i + 1) * y - x, (i + 1) * y)));
    let c = Case {
        have: reservation(Shape::Basic, Limit::Hard, x, y),
        y,
        offset: 0,
        end: 10 * y,
        schedule: Schedule::new(busy).unwrap(),
    };
    assert!(c.schedule.check_basic(x, y, 0, 10, true).is_ok());
    let (share, delta) = psbe_parts(strongest(&c.have, Kind::Psbe).unwrap().result);
    assert_eq!(delta, 2 * x * (y - x) / y);
    let (_, deficit) = c.schedule.worst_psbe_deficit(share, 0, 10 * y);
    assert_eq!(
        deficit,
        u128::from(delta) * u128::from(share.den()),
        "δ is reached"
    );
    // A window of 2y − x holds exactly x; one of 2y − x − 1 holds less.
    assert_eq!(
        c.schedule
            .least_window(2 * y - x, 0, 10 * y)
            .unwrap()
            .supply,
        x
    );
    assert!(
        c.schedule
            .least_window(2 * y - x - 1, 0, 10 * y)
            .unwrap()
            .supply
            < x
    );
}

/// Th. 2's counterexample: a schedule meeting RESBH x, y (x < y) that runs
/// at the start of every window but one, where it runs at the end. It
/// breaks RESCH x, y both ways, and is no hard continuous reservation of
/// any period: windows of every length hold different amounts.
#[test]
fn th2_counterexample_breaks_every_continuous_hard_reservation() {
    let (x, y) = (3u64, 8u64);
    let windows = 12;
    let busy: Vec<(u64, u64)> = (0..windows)
        .map(|i| {
            if i == 5 {
                (i * y + y - x, (i + 1) * y)
            } else {
                (i * y, i * y + x)
            }
        })
        .collect();
    let s = Schedule::new(busy).unwrap();
    let end = windows * y;
    assert!(
        s.check_basic(x, y, 0, windows, true).is_ok(),
        "it is RESBH 3, 8"
    );
    assert!(
        s.check_most(x, y, 0, end).is_err(),
        "the cap of RESCH 3, 8 breaks"
    );
    assert!(
        s.check_least(x, y, 0, end).is_err(),
        "the floor of RESCH 3, 8 breaks"
    );
    for period in 1..=3 * y {
        let least = s.least_window(period, 0, end).unwrap().supply;
        let most = s.most_window(period, 0, end).unwrap().supply;
        assert!(
            least < most,
            "RESCH {least}, {period} would need every window equal"
        );
    }
    let err = implies(
        &reservation(Shape::Basic, Limit::Hard, x, y),
        &reservation(Shape::Continuous, Limit::Hard, x, y),
    )
    .unwrap_err();
    assert!(err.contains("Th. 2"), "{err}");
}

/// A hard reservation keeps its cap at multiples of its period, and a hard
/// continuous one is a hard basic one on any grid.
#[test]
fn hard_reservations_keep_their_cap() {
    for seed in 0..50 {
        let c = case(seed, Shape::Continuous, Limit::Hard, 3_000, 8_000, 24);
        for k in 1..4u64 {
            let want = reservation(Shape::Basic, Limit::Hard, 3_000 * k, 8_000 * k);
            let d = implies(&c.have, &want).unwrap();
            assert!(holds(&c, &want).is_ok(), "{d}");
            let shifted = c.offset + seed * 100 % 8_000;
            assert!(c
                .schedule
                .check_basic(3_000 * k, 8_000 * k, shifted, 24 / k - 1, true)
                .is_ok());
        }
        let b = case(seed, Shape::Basic, Limit::Hard, 3_000, 8_000, 24);
        let want = reservation(Shape::Basic, Limit::Hard, 9_000, 24_000);
        assert!(implies(&b.have, &want).is_ok());
        assert!(holds(&b, &want).is_ok());
    }
}
