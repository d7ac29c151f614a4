//! `hfsc` against Yau & Lam §5: curve arithmetic and equation (7),
//! eligibility (9), SCED deadlines (8), the ICD estimate (10), admission,
//! link sharing through classes, the best-effort class, and a property
//! test that every admitted service curve is met, driven by the testkit
//! harness.

use hsched_core::{ChildId, Duration, Instant, Params, Share, ShareRange, Value};
use hsched_dispatch::testkit::{Harness, Parent};
use hsched_policies::hfsc::{
    admissible, parse_classes, parse_fit, parse_mode, parse_modes, place, ClassSpec, Curve, Fit,
    Hfsc, Mode, ServiceCurve, PPM,
};
use proptest::prelude::*;

const Q: Duration = Duration::from_millis(1);
const MS: u64 = 1_000_000;

fn harness(classes: &str) -> Harness<Hfsc> {
    let classes = parse_classes(classes).unwrap();
    Harness::new(Box::new(Hfsc::new(Q, classes).unwrap()), 1, Parent::Root)
}

fn curve(r1: &str, x_ms: u64, r2: &str) -> Params {
    Params::new()
        .with("r1", Value::Str(r1.into()))
        .with("x", Value::Duration(Duration::from_millis(x_ms)))
        .with("r2", Value::Str(r2.into()))
}

/// A best-effort child of `class` with equal rates `rate` (best effort needs r1 = r2).
fn best_effort(rate: &str, class: &str) -> Params {
    curve(rate, 0, rate)
        .with("best_effort", Value::Bool(true))
        .with("class", Value::Str(class.into()))
}

fn ms(n: u64) -> Instant {
    Instant(n * MS)
}

fn sc(r1: u32, x: u64, r2: u32) -> ServiceCurve {
    ServiceCurve { r1, x, r2 }
}

/// A curve's or class's rate as `hfsc` reads it: `[0, 1]`, in ppm.
fn parse_rate(text: &str) -> Result<u32, String> {
    Share::parse_ppm(text, ShareRange::AtMostOne).map(|ppm| ppm as u32)
}

// ----- parsers ---------------------------------------------------------------

#[test]
fn rates_parse_exactly() {
    assert_eq!(parse_rate("0.35"), Ok(350_000));
    assert_eq!(parse_rate("1"), Ok(1_000_000));
    assert_eq!(parse_rate("1.0"), Ok(1_000_000));
    assert_eq!(parse_rate(".5"), Ok(500_000));
    assert_eq!(parse_rate("0.000001"), Ok(1));
    assert_eq!(parse_rate(" 0 "), Ok(0));
    for bad in [
        "",
        ".",
        "1.1",
        "2",
        "-0.1",
        "0.1.2",
        "abc",
        "0.0000001",
        "1e-3",
    ] {
        assert!(parse_rate(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn classes_parse_and_errors_name_the_class() {
    let class = |name: &str, rate, parent| ClassSpec {
        name: name.into(),
        rate,
        parent,
    };
    assert_eq!(
        parse_classes("interactive:0.3, batch:0.2, rt:0.5").unwrap(),
        vec![
            class("interactive", 300_000, None),
            class("batch", 200_000, None),
            class("rt", 500_000, None)
        ]
    );
    assert_eq!(
        parse_classes("media:0.6, media/audio:0.2, media/video:0.4, media/video/hd:0.3").unwrap(),
        vec![
            class("media", 600_000, None),
            class("audio", 200_000, Some(0)),
            class("video", 400_000, Some(0)),
            class("hd", 300_000, Some(2))
        ]
    );
    let e = parse_classes("media:0.5, media/audio:0.3, media/video:0.3").unwrap_err();
    assert!(
        e.contains("inside `media`") && e.contains("0.6") && e.contains("`media`'s rate 0.5"),
        "{e}"
    );
    let e = parse_classes("media/audio:0.2").unwrap_err();
    assert!(e.contains("no class `media` declared before it"), "{e}");
    let e = parse_classes("a:0.5, b:0.4, a/c:0.1, b/c:0.1").unwrap_err();
    assert!(e.contains("`c`") && e.contains("twice"), "{e}");
    let e = parse_classes("a:0.5, a/b:0.4, b/x:0.1").unwrap_err();
    assert!(e.contains("`b` is at `a/b`"), "{e}");
    assert!(parse_classes("a:0.5, /b:0.1").is_err());
    assert!(parse_classes("a:0.5, a//b:0.1").is_err());
    assert_eq!(parse_classes("").unwrap(), vec![]);
    let e = parse_classes("a:0.6, b:0.6").unwrap_err();
    assert!(e.contains("more than 1"), "{e}");
    let e = parse_classes("a:0.1, a:0.2").unwrap_err();
    assert!(e.contains("`a`") && e.contains("twice"), "{e}");
    let e = parse_classes("a").unwrap_err();
    assert!(e.contains("name:rate"), "{e}");
    let e = parse_classes("a:zero").unwrap_err();
    assert!(e.contains("class `a`"), "{e}");
    assert!(parse_classes("a:0").is_err());
}

proptest! {
    #[test]
    fn every_ppm_value_round_trips(ppm in 0u32..=1_000_000) {
        let text = format!("{}.{:06}", ppm / 1_000_000, ppm % 1_000_000);
        prop_assert_eq!(parse_rate(&text), Ok(ppm));
    }

    #[test]
    fn rate_and_class_parsers_never_panic(text in ".{0,40}") {
        let _ = parse_rate(&text);
        let _ = parse_classes(&text);
    }
}

// ----- curves and equation (7) ------------------------------------------------

#[test]
fn curve_values_and_inverse_agree() {
    let c = sc(350_000, 7 * MS, 50_000).anchored(100 * MS, 2 * MS);
    assert_eq!(c.at(100 * MS), 2 * MS);
    assert_eq!(c.at(107 * MS), 2 * MS + 2_450_000);
    assert_eq!(c.at(127 * MS), 2 * MS + 2_450_000 + MS);
    for v in [2 * MS, 2 * MS + 1, 3 * MS, 4_450_000, 4_450_001, 9 * MS] {
        let t = c.inverse(v);
        assert!(c.at(t) >= v, "at(inverse({v})) < {v}");
        assert!(
            t == c.x || c.at(t - 1) < v,
            "inverse({v}) = {t} is not the first"
        );
    }
    let flat = sc(0, 5 * MS, 0).anchored(0, 0);
    assert_eq!(flat.inverse(1), u64::MAX);
}

#[test]
fn concave_update_keeps_replaces_or_crosses() {
    let s = sc(500_000, 10 * MS, 100_000);
    // Old curve already below at the wake-up: kept.
    let mut d = s.anchored(0, 0);
    d.min_with(&s, 20 * MS, 6 * MS); // D(20ms) = 5 + 1 = 6 ms... equal: kept
    assert_eq!(d, s.anchored(0, 0));
    // New curve below everywhere after the wake-up: replaced.
    let mut d = s.anchored(0, 0);
    d.min_with(&s, 100 * MS, 2 * MS);
    assert_eq!(d, s.anchored(100 * MS, 2 * MS));
    // They cross: the new first segment ends where it meets the old curve.
    // Old: 5 ms at 10 ms, then 0.1/ms; at 12 ms it is 5.2 ms. New from
    // (12 ms, 4.7 ms) at 0.5 meets 5.2 + 0.1 d: d = 1.25 ms.
    let mut d = s.anchored(0, 0);
    d.min_with(&s, 12 * MS, 4_700_000);
    assert_eq!(
        d,
        Curve {
            x: 12 * MS,
            y: 4_700_000,
            dx: 1_250_000,
            r1: 500_000,
            r2: 100_000
        }
    );
    let old = s.anchored(0, 0);
    for t in (12 * MS..40 * MS).step_by(100_000) {
        let want = old.at(t).min(s.anchored(12 * MS, 4_700_000).at(t));
        assert!(d.at(t).abs_diff(want) <= 1, "min wrong at {t}");
    }
}

#[test]
fn convex_update_takes_the_new_curve_when_it_is_lower_at_the_wake_up() {
    let s = sc(100_000, 10 * MS, 900_000);
    let mut d = s.anchored(0, 0);
    d.min_with(&s, 50 * MS, 60 * MS); // old is at 1 + 36 = 37 ms < 60: kept
    assert_eq!(d, s.anchored(0, 0));
    d.min_with(&s, 50 * MS, 30 * MS);
    assert_eq!(d, s.anchored(50 * MS, 30 * MS));
}

#[test]
fn admission_checks_the_sum_of_curves_at_every_breakpoint() {
    // Fig. 10's pair: 0.9 + 0.1 then 0.1 + 0.9: exactly the CPU.
    assert!(admissible(&[
        sc(900_000, 2000 * MS, 100_000),
        sc(100_000, 2000 * MS, 900_000)
    ])
    .is_ok());
    // Long-term rates over 1.
    let e = admissible(&[sc(500_000, 0, 600_000), sc(500_000, 0, 500_000)]).unwrap_err();
    assert!(e.contains("r2"), "{e}");
    // Over the CPU at the 10 ms breakpoint although Σ r2 = 0.3.
    let e = admissible(&[sc(900_000, 10 * MS, 100_000), sc(200_000, 0, 200_000)]).unwrap_err();
    assert!(e.contains("10ms") || e.contains("10 ms"), "{e}");
}

#[test]
fn registration_refuses_what_admission_refuses_and_bad_params() {
    let mut h = harness("be:0.1");
    h.register(&curve("0.9", 2000, "0.1")).unwrap();
    h.register(&curve("0.1", 2000, "0.9")).unwrap();
    let e = h.register(&curve("0.01", 0, "0.01")).unwrap_err();
    assert!(e.0.contains("not admitted"), "{}", e.0);
    // Best effort is not admission controlled, but needs r1 = r2.
    h.register(&best_effort("0.05", "be")).unwrap();
    let e = h
        .register(&curve("0.05", 0, "0.1").with("best_effort", Value::Bool(true)))
        .unwrap_err();
    assert!(e.0.contains("r1") && e.0.contains("5.2"), "{}", e.0);
    let e = h
        .register(&curve("0.05", 0, "0.05").with("class", Value::Str("nope".into())))
        .unwrap_err();
    assert!(e.0.contains("nope") && e.0.contains("be"), "{}", e.0);
    let e = h.register(&curve("zero", 0, "0.1")).unwrap_err();
    assert!(e.0.contains("`r1`"), "{}", e.0);
}

// ----- eligibility, deadlines, ICD --------------------------------------------

#[test]
fn wake_up_sets_eligibility_and_deadline_from_the_curves() {
    let mut h = harness("");
    let busy = h.register(&curve("0.5", 0, "0.5")).unwrap();
    let concave = h.register(&curve("0.35", 7, "0.05")).unwrap();
    let convex = h.register(&curve("0.1", 10, "0.3")).unwrap();
    h.wake(busy);
    h.advance_to(ms(3));
    h.wake(concave);
    h.wake(convex);
    let s = h.sched();
    // Concave: eligible at once; deadline D^-1(0 + δ̂ = 1 ms) at 0.35.
    let (e, d) = s.eligible_and_deadline(concave).unwrap();
    assert_eq!(e, 3 * MS);
    assert_eq!(d, 3 * MS + (MS * PPM).div_ceil(350_000));
    // Convex: eligible at once too (E is the 0.3 line from the anchor), but
    // its deadline follows the slow first segment: 1 ms at 0.1 = 10 ms.
    let (e, d) = s.eligible_and_deadline(convex).unwrap();
    assert_eq!((e, d), (3 * MS, 13 * MS));
    drop(s);
    // The earliest deadline among eligible children wins over `busy`,
    // whose finish value is larger anyway; then the concave one runs.
    h.advance_to(ms(4));
    assert_eq!(h.running_on(hsched_core::ParentVp(0)), Some(concave));
}

#[test]
fn a_child_that_ran_ahead_is_not_eligible_until_its_curve_catches_up() {
    for count_link_sharing in [true, false] {
        let mut sched = Hfsc::new(Q, vec![]).unwrap();
        sched.count_link_sharing = count_link_sharing;
        let mut h = Harness::new(Box::new(sched), 1, Parent::Root);
        let a = h.register(&curve("0.5", 0, "0.5")).unwrap();
        h.wake(a);
        h.advance_to(ms(1));
        // Alone: ran 1 ms by the real-time criterion, E = 0.5 t: eligible
        // at 2 ms.
        let (e, _) = h.sched().eligible_and_deadline(a).unwrap();
        assert_eq!(e, 2 * MS);
        let (_, c, _) = h.sched().rt_state(a).unwrap();
        assert_eq!(c, MS);
        // Not eligible at 1 ms: link sharing runs it (it is alone). That
        // time counts in c only with `count_link_sharing` (the paper's c_i).
        h.advance_to(ms(2));
        let (_, c, _) = h.sched().rt_state(a).unwrap();
        assert_eq!(c, if count_link_sharing { 2 * MS } else { MS });
    }
}

#[test]
fn icd_is_averaged_with_alpha_one_quarter_when_a_child_blocks() {
    let mut h = harness("");
    let a = h.register(&curve("0.3", 0, "0.3")).unwrap();
    let mut expected = Q.as_nanos();
    for round in 0..4u64 {
        h.advance_to(ms(10 * round));
        h.wake(a);
        h.advance_to(Instant(10 * round * MS + 400_000));
        h.block(a);
        expected = (expected + 3 * 400_000 + 2) / 4;
        let (_, _, icd) = h.sched().rt_state(a).unwrap();
        assert_eq!(icd, expected, "round {round}");
    }
    // 1 ms -> 550 us -> 437.5 -> 409.4 -> 402.3 us: converging to 400 us.
    assert!(expected.abs_diff(400_000) < 3_000);
}

// ----- link sharing -----------------------------------------------------------

fn cpu_share(h: &Harness<Hfsc>, a: ChildId, b: ChildId) -> (u64, u64) {
    (h.cpu_time(a).as_nanos(), h.cpu_time(b).as_nanos())
}

#[test]
fn best_effort_children_share_by_class_rates_then_by_their_rates() {
    // Class a (0.6) has one thread, class b (0.2) three: a gets 3/4 of
    // the CPU whatever the threads' own rates, b's threads share the rest
    // 1:1:2 by r2.
    let mut h = harness("a:0.6, b:0.2");
    let a = h.register(&best_effort("0.01", "a")).unwrap();
    let b1 = h.register(&best_effort("0.1", "b")).unwrap();
    let b2 = h.register(&best_effort("0.1", "b")).unwrap();
    let b3 = h.register(&best_effort("0.2", "b")).unwrap();
    for c in [a, b1, b2, b3] {
        h.wake(c);
    }
    h.advance_to(ms(4000));
    let (ta, tb1) = cpu_share(&h, a, b1);
    let (tb2, tb3) = cpu_share(&h, b2, b3);
    // Within two quanta per child of the exact split.
    let near = |got: u64, want: u64| got.abs_diff(want) <= 2 * MS;
    assert!(near(ta, 3000 * MS), "a got {ta}");
    assert!(near(tb1, 250 * MS) && near(tb2, 250 * MS), "{tb1} {tb2}");
    assert!(near(tb3, 500 * MS), "b3 got {tb3}");
}

/// Four greedy best-effort threads, one in each leaf class of
/// `media:0.5 {audio:0.1, video:0.4}, batch:0.5`, with equal rates of their
/// own: the leaves get their class rates. When `audio` sleeps, what it
/// leaves goes to `video`, its sibling inside `media` (0.5 in all), not in
/// proportion to every class as a flat tree would give (0.4/0.9 = 0.44).
#[test]
fn nested_classes_share_the_excess_down_the_tree() {
    let mut h = harness("media:0.5, media/audio:0.1, media/video:0.4, batch:0.5");
    let audio = h.register(&best_effort("0.1", "audio")).unwrap();
    let video = h.register(&best_effort("0.1", "video")).unwrap();
    let batch = h.register(&best_effort("0.1", "batch")).unwrap();
    for c in [audio, video, batch] {
        h.wake(c);
    }
    h.advance_to(ms(2000));
    // Within two quanta per child of the exact split.
    let near = |got: u64, want: u64| got.abs_diff(want) <= 2 * MS;
    let (ta, tv) = cpu_share(&h, audio, video);
    let tb = h.cpu_time(batch).as_nanos();
    assert!(near(ta, 200 * MS), "audio got {ta}");
    assert!(near(tv, 800 * MS), "video got {tv}");
    assert!(near(tb, 1000 * MS), "batch got {tb}");
    h.block(audio);
    h.advance_to(ms(4000));
    let tv = h.cpu_time(video).as_nanos() - tv;
    let tb = h.cpu_time(batch).as_nanos() - tb;
    assert!(near(tv, 1000 * MS), "video got {tv} of 2s without audio");
    assert!(near(tb, 1000 * MS), "batch got {tb} of 2s without audio");
    // A class with no runnable leaf is not selected: nothing ran audio.
    assert!(near(h.cpu_time(audio).as_nanos(), 200 * MS));
}

#[test]
fn a_class_returning_after_idling_starts_at_its_siblings_virtual_time() {
    // `a/idle` sleeps for 2s while `a/busy` runs: when it comes back it
    // must not claim the 2s it missed (L2-L3 at every level), so over the
    // next second the two split `a`'s half 1:1.
    let mut h = harness("a:0.5, a/busy:0.25, a/idle:0.25, b:0.5");
    let busy = h.register(&best_effort("0.1", "busy")).unwrap();
    let idle = h.register(&best_effort("0.1", "idle")).unwrap();
    let b = h.register(&best_effort("0.1", "b")).unwrap();
    h.wake(busy);
    h.wake(b);
    h.advance_to(ms(2000));
    h.wake(idle);
    let (busy0, idle0) = cpu_share(&h, busy, idle);
    h.advance_to(ms(3000));
    let (busy1, idle1) = cpu_share(&h, busy, idle);
    let near = |got: u64, want: u64| got.abs_diff(want) <= 2 * MS;
    assert!(near(busy1 - busy0, 250 * MS), "busy got {}", busy1 - busy0);
    assert!(near(idle1 - idle0, 250 * MS), "idle got {}", idle1 - idle0);
}

#[test]
fn real_time_service_advances_finish_values_up_the_path() {
    let mut h = harness("rt:0.5");
    let a = h
        .register(&curve("0.5", 0, "0.5").with("class", Value::Str("rt".into())))
        .unwrap();
    h.wake(a);
    h.advance_to(ms(1));
    // 1 ms at rate 0.5 (leaf) and 0.5 (class): 2 ms of finish value each.
    assert_eq!(h.sched().finish(a), Some(u128::from(2 * MS)));
    assert_eq!(h.sched().class_finish("rt"), Some(u128::from(2 * MS)));
    // Nested: 1 ms at 0.2 in `in` and 0.4 in `out`, above a leaf at 0.1.
    let mut h = harness("out:0.4, out/in:0.2");
    let a = h
        .register(&curve("0.1", 0, "0.1").with("class", Value::Str("in".into())))
        .unwrap();
    h.wake(a);
    h.advance_to(ms(1));
    assert_eq!(h.sched().finish(a), Some(u128::from(10 * MS)));
    assert_eq!(h.sched().class_finish("in"), Some(u128::from(5 * MS)));
    assert_eq!(h.sched().class_finish("out"), Some(u128::from(5 * MS / 2)));
}

// ----- the service curve guarantee --------------------------------------------

/// How long the property tests run their threads.
const END: u64 = 1200 * MS;

/// An admitted child: its id, its curve, and when it is activated (ns).
type Admitted = (ChildId, ServiceCurve, u64);

/// Registers and wakes a greedy child of the best-effort class `be`.
fn wake_best_effort_competitor(h: &mut Harness<Hfsc>) {
    let id = h.register(&best_effort("0.1", "be")).unwrap();
    h.wake(id);
}

/// Wakes each admitted child at its activation time, in order, and runs to [`END`].
fn run_from_their_starts(h: &mut Harness<Hfsc>, admitted: &[Admitted]) {
    let mut starts: Vec<_> = admitted.iter().map(|&(id, _, s)| (s, id)).collect();
    starts.sort();
    for (s, id) in starts {
        h.advance_to(Instant(s));
        h.wake(id);
    }
    h.advance_to(Instant(END));
}

/// Every admitted curve is met from its activation at every 5 ms sample, to
/// within 2 quanta.
fn assert_curves_met(h: &Harness<Hfsc>, admitted: &[Admitted]) -> Result<(), TestCaseError> {
    for &(id, s, start) in admitted {
        for t in (start..=END).step_by(5 * MS as usize) {
            let got = service_between(h, id, start, t);
            let owed = s.at(t - start);
            prop_assert!(
                got + 2 * Q.as_nanos() >= owed,
                "{id} with {s:?} from {start}: {got} by {t} but owed {owed}"
            );
        }
    }
    Ok(())
}

/// CPU time `child` received in `[from, to]`, from the harness's segments
/// and the segment in progress.
fn service_between(h: &Harness<Hfsc>, child: ChildId, from: u64, to: u64) -> u64 {
    let mut total = 0;
    for s in h.segments().iter().filter(|s| s.child == child) {
        let (a, b) = (s.start.0.max(from), s.end.0.min(to));
        total += b.saturating_sub(a);
    }
    total
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Greedy threads with random two-piece curves (rates in hundredths),
    /// activated at random times, plus a best-effort greedy competitor:
    /// every admitted curve is met from its activation at every 5 ms
    /// sample, to within 2 quanta (one non-preemptible decision of another
    /// thread, plus one decision of rounding between the eligibility
    /// instant and the next rescheduling point).
    #[test]
    fn every_admitted_service_curve_is_met(
        threads in prop::collection::vec((1u32..=90, 0u64..=300, 1u32..=90, 0u64..=200), 1..6),
        competitor in any::<bool>(),
        count_link_sharing in any::<bool>(),
    ) {
        let mut sched = Hfsc::new(Q, parse_classes("top:0.2, top/be:0.1").unwrap()).unwrap();
        sched.count_link_sharing = count_link_sharing;
        let mut h = Harness::new(Box::new(sched), 1, Parent::Root);
        h.set_checking(true);
        let mut admitted = Vec::new();
        for &(r1, x, r2, start) in &threads {
            let params = curve(&format!("0.{r1:02}"), x, &format!("0.{r2:02}"));
            if let Ok(id) = h.register(&params) {
                admitted.push((id, sc(r1 * 10_000, x * MS, r2 * 10_000), start * MS));
            }
        }
        if competitor {
            wake_best_effort_competitor(&mut h);
        }
        run_from_their_starts(&mut h, &admitted);
        assert_curves_met(&h, &admitted)?;
    }
}

// ----- several VPs ------------------------------------------------------------

fn partitioned(vps: u32, fit: Fit, classes: &str) -> Harness<Hfsc> {
    let classes = parse_classes(classes).unwrap();
    let sched = Hfsc::with_mode(Q, classes, Mode::Partitioned, fit).unwrap();
    Harness::new(Box::new(sched), vps, Parent::Root)
}

fn vp_of(h: &Harness<Hfsc>, child: ChildId) -> u32 {
    h.sched().placed_on(child).expect("placed").0
}

#[test]
fn modes_parse_and_global_is_refused_naming_the_supported_modes() {
    assert_eq!(parse_mode("one"), Ok(Mode::One));
    assert_eq!(parse_mode("partitioned"), Ok(Mode::Partitioned));
    let e = parse_mode("global").unwrap_err();
    assert!(
        e.contains("no published") && e.contains("\"one\"") && e.contains("\"partitioned\""),
        "{e}"
    );
    assert!(parse_mode("spread")
        .unwrap_err()
        .contains("\"partitioned\""));
    assert_eq!(parse_fit("first"), Ok(Fit::First));
    assert_eq!(parse_fit("worst"), Ok(Fit::Worst));
    assert!(parse_fit("best").unwrap_err().contains("\"worst\""));
    let p = |m: &str, f: &str| {
        Params::new()
            .with("multiprocessor", Value::Str(m.into()))
            .with("fit", Value::Str(f.into()))
    };
    assert_eq!(
        parse_modes(&p("partitioned", "worst")),
        Ok((Mode::Partitioned, Fit::Worst))
    );
    assert_eq!(parse_modes(&Params::new()), Ok((Mode::One, Fit::First)));
    // `fit` alone would be ignored: refused.
    assert!(parse_modes(&p("one", "worst"))
        .unwrap_err()
        .contains("partitioned"));
}

#[test]
fn partitioned_admits_one_cpu_of_curves_per_vp_and_names_each_vps_load() {
    // 2 VPs, three <0.6, 0, 0.6>: 0.6 + 0.6 > 1 on a VP, so one per VP;
    // the third fits on neither (Σ r2 would be 1.2 on each).
    let mut h = partitioned(2, Fit::First, "");
    let a = h.register(&curve("0.6", 0, "0.6")).unwrap();
    let b = h.register(&curve("0.6", 0, "0.6")).unwrap();
    assert_eq!((vp_of(&h, a), vp_of(&h, b)), (0, 1));
    let e = h.register(&curve("0.6", 0, "0.6")).unwrap_err().0;
    assert!(
        e.contains("not admitted")
            && e.contains("vp0 (Σ r2 = 0.6)")
            && e.contains("vp1 (Σ r2 = 0.6)")
            && e.contains("1.2"),
        "{e}"
    );
    // Today's mode on the same 2 VPs admits one CPU's worth: only one.
    let mut one = Harness::new(Box::new(Hfsc::new(Q, vec![]).unwrap()), 2, Parent::Root);
    one.register(&curve("0.6", 0, "0.6")).unwrap();
    assert!(one.register(&curve("0.6", 0, "0.6")).is_err());
    assert_eq!(one.sched().placed_on(ChildId(0)), None);

    // 4 VPs: four <0.9, 0, 0.9>, then four <0.1, 0, 0.1>, first fit: each
    // 0.9 on its own VP (0.9 + 0.9 > 1), each 0.1 on the lowest VP still
    // at 0.9 (Σ r2 1.0 on every VP), then nothing more fits anywhere.
    let mut h = partitioned(4, Fit::First, "");
    for k in 0..4 {
        let id = h.register(&curve("0.9", 0, "0.9")).unwrap();
        assert_eq!(vp_of(&h, id), k);
    }
    for k in 0..4 {
        let id = h.register(&curve("0.1", 0, "0.1")).unwrap();
        assert_eq!(vp_of(&h, id), k);
    }
    let e = h.register(&curve("0.01", 0, "0.01")).unwrap_err().0;
    assert!(e.contains("vp3 (Σ r2 = 1)"), "{e}");
    // The per-VP test is the exact one: Fig. 10's pair <0.9, 2s, 0.1> +
    // <0.1, 2s, 0.9> (peaks 1.8) shares a VP.
    let mut h = partitioned(2, Fit::First, "");
    let x = h.register(&curve("0.9", 2000, "0.1")).unwrap();
    let y = h.register(&curve("0.1", 2000, "0.9")).unwrap();
    assert_eq!((vp_of(&h, x), vp_of(&h, y)), (0, 0));
}

#[test]
fn first_fit_packs_and_worst_fit_spreads() {
    // <0.3, 0, 0.3> three times, then <0.5, 0, 0.5>:
    // first fit: 0.3, 0.3, 0.3 on vp0 (Σ r2 0.9), 0.5 on vp1;
    // worst fit: vp0, vp1 (0.3 < 0.6), vp0 (tie 0.6 = 0.6: lowest),
    // then 0.5 on vp1 (0.8 < vp0's 1.1, which fails anyway).
    let place_all = |fit| {
        let mut h = partitioned(2, fit, "");
        let ids: Vec<ChildId> = ["0.3", "0.3", "0.3", "0.5"]
            .iter()
            .map(|r| h.register(&curve(r, 0, r)).unwrap())
            .collect();
        ids.iter().map(|&id| vp_of(&h, id)).collect::<Vec<_>>()
    };
    assert_eq!(place_all(Fit::First), vec![0, 0, 0, 1]);
    assert_eq!(place_all(Fit::Worst), vec![0, 1, 0, 1]);
    // The shared placement function says the same.
    let v = vec![vec![sc(300_000, 0, 300_000)], vec![]];
    assert_eq!(place(&v, sc(300_000, 0, 300_000), Fit::First), Ok(0));
    assert_eq!(place(&v, sc(300_000, 0, 300_000), Fit::Worst), Ok(1));
}

#[test]
fn best_effort_children_go_where_there_are_fewest_and_classes_are_per_vp() {
    let mut h = partitioned(2, Fit::First, "be:0.2");
    let rt = h.register(&curve("0.9", 0, "0.9")).unwrap();
    let be = |h: &mut Harness<Hfsc>| h.register(&best_effort("0.1", "be")).unwrap();
    // Not admission controlled: the fewest best-effort children, ties low.
    let (b0, b1, b2) = (be(&mut h), be(&mut h), be(&mut h));
    assert_eq!(vp_of(&h, rt), 0);
    assert_eq!((vp_of(&h, b0), vp_of(&h, b1), vp_of(&h, b2)), (0, 1, 0));
    // Each VP runs its own: vp1's only child is b1, which gets all of vp1;
    // on vp0, rt and b0, b2 share by curve then by link sharing.
    for id in [rt, b0, b1, b2] {
        h.wake(id);
    }
    h.advance_to(ms(100));
    assert_eq!(h.cpu_time(b1), Duration::from_millis(100));
    assert!(
        h.cpu_time(rt) >= Duration::from_millis(89),
        "{:?}",
        h.cpu_time(rt)
    );
    for s in h.segments() {
        assert_eq!(s.vp.0, vp_of(&h, s.child), "{s:?}");
    }
    // A child leaving frees its VP's room.
    h.unregister(rt);
    let again = h.register(&curve("0.9", 0, "0.9")).unwrap();
    assert_eq!(vp_of(&h, again), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Partitioned on 2 or 4 VPs, first or worst fit: greedy threads with
    /// random curves (more than one CPU's worth, so placement matters) and
    /// a best-effort competitor per VP. Every admitted curve is met from its
    /// activation at every 5 ms sample to within 2 quanta (as on one CPU),
    /// every child runs only on the VP it was placed on, and the children
    /// admitted are exactly those the shared placement function admits.
    #[test]
    fn partitioned_curves_are_met_on_their_own_vp(
        threads in prop::collection::vec((1u32..=90, 0u64..=300, 1u32..=90, 0u64..=200), 1..12),
        four in any::<bool>(),
        worst in any::<bool>(),
    ) {
        let vps = if four { 4 } else { 2 };
        let fit = if worst { Fit::Worst } else { Fit::First };
        let mut h = partitioned(vps, fit, "top:0.2, top/be:0.1");
        let mut model: Vec<Vec<ServiceCurve>> = vec![Vec::new(); vps as usize];
        let mut admitted = Vec::new();
        for &(r1, x, r2, start) in &threads {
            let s = sc(r1 * 10_000, x * MS, r2 * 10_000);
            let params = curve(&format!("0.{r1:02}"), x, &format!("0.{r2:02}"));
            let expect = place(&model, s, fit);
            match h.register(&params) {
                Ok(id) => {
                    let k = vp_of(&h, id);
                    prop_assert_eq!(expect, Ok(k as usize));
                    model[k as usize].push(s);
                    admitted.push((id, s, start * MS));
                }
                Err(_) => prop_assert!(expect.is_err()),
            }
        }
        for _ in 0..vps {
            wake_best_effort_competitor(&mut h);
        }
        run_from_their_starts(&mut h, &admitted);
        for s in h.segments() {
            prop_assert_eq!(s.vp.0, vp_of(&h, s.child));
        }
        assert_curves_met(&h, &admitted)?;
    }
}
