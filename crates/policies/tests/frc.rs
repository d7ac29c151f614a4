//! `frc` driven by the testkit harness: Figure 1's updates (L1–L8) to the
//! picosecond, the no-preemption-before-w rule, proportional sharing,
//! differential admission control (§3.1) and the parsers.

use hsched_core::{ChildId, Duration, Effect, Instant, Params, ParentVp, Share, ShareRange, Value};
use hsched_dispatch::testkit::{Harness, Parent, Step};
use hsched_policies::frc::{parse_classes, Frc, FINISH_SCALE};
use proptest::prelude::*;

fn harness(vps: u32, policy: Params) -> Harness<Frc> {
    Harness::new(
        Box::new(Frc::with_params(&policy).unwrap()),
        vps,
        Parent::Root,
    )
}

fn rate(r: &str) -> Params {
    Params::new().with("rate", Value::Str(r.into()))
}

fn rate_q(r: &str, q: Duration) -> Params {
    rate(r).with("quantum", Value::Duration(q))
}

fn in_class(r: &str, class: &str) -> Params {
    rate(r).with("class", Value::Str(class.into()))
}

fn ms(n: u64) -> Instant {
    Instant(Duration::from_millis(n).as_nanos())
}

/// Finish units of `ns` of virtual time.
fn vt(ns: u64) -> u128 {
    u128::from(ns) * FINISH_SCALE
}

#[test]
fn a_wakeup_starts_w_over_r_ahead_of_the_slowest_runnable_thread() {
    let mut h = harness(1, Params::new());
    let a = h.register(&rate("0.5")).unwrap();
    let b = h.register(&rate("0.25")).unwrap();
    h.wake(a);
    // Δ was empty: the floor is 0, so f_a = 0 + 10ms/0.5 = 20ms.
    assert_eq!(h.sched().finish(a), Some(vt(20_000_000)));
    h.advance_to(ms(3));
    h.block(a);
    // L6: f_a += 3ms / 0.5.
    assert_eq!(h.sched().finish(a), Some(vt(26_000_000)));
    h.wake(b);
    // Δ empty again: the floor is the last minimum, f_a = 26ms; + 10ms/0.25.
    assert_eq!(h.sched().finish(b), Some(vt(66_000_000)));
    h.wake(a);
    // L2–L3: vtime = min{f_b} + 20ms = 86ms > f_a.
    assert_eq!(h.sched().finish(a), Some(vt(86_000_000)));
}

#[test]
fn a_rate_that_does_not_divide_carries_its_remainder() {
    let mut h = Harness::new(
        Box::new(Frc::with_params(&Params::new()).unwrap()),
        1,
        Parent::Manual,
    );
    let x = h.register(&rate("0.3")).unwrap();
    h.wake(x);
    h.grant(ParentVp(0));
    let start = h.sched().finish(x).unwrap();
    for _ in 0..3 {
        // Each revocation charges 1ns; x stays runnable (no wakeup).
        h.advance(Duration::from_nanos(1));
        h.revoke(ParentVp(0));
        h.grant(ParentVp(0));
    }
    assert_eq!(h.running_on(ParentVp(0)), Some(x));
    // 3 ns at rate 0.3 is exactly 10 ns of virtual time, though a single
    // nanosecond is 3333.33 ps.
    assert_eq!(h.sched().finish(x).unwrap() - start, vt(10));
}

#[test]
fn rates_share_in_proportion() {
    let mut h = harness(1, Params::new());
    let rates = ["0.5", "0.3", "0.2"];
    let c: Vec<ChildId> = rates
        .iter()
        .map(|r| h.register(&rate(r)).unwrap())
        .collect();
    for &x in &c {
        h.wake(x);
    }
    h.advance_to(ms(10_000));
    for (i, &x) in c.iter().enumerate() {
        let want = [5_000u64, 3_000, 2_000][i];
        let got = h.cpu_time(x).as_nanos() / 1_000_000;
        // Within two work quanta (the q_j terms of Theorem 1) of exact.
        assert!(got.abs_diff(want) <= 20, "{i}: {got}ms for {want}ms");
    }
    h.assert_work_conserving();
}

#[test]
fn a_thread_is_not_preempted_before_it_has_run_w() {
    let mut h = harness(1, Params::new());
    let one_ms = Duration::from_millis(1);
    let a = h.register(&rate("0.5")).unwrap();
    let b = h.register(&rate_q("0.5", one_ms)).unwrap();
    let c = h.register(&rate_q("0.5", one_ms)).unwrap();
    h.wake(a);
    h.wake(b);
    // f_a = 20ms, f_b = 20 + 1/0.5 = 22ms: a runs, and passes f_b after
    // 1ms, but keeps the CPU for its 10ms work quantum.
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    h.advance_to(ms(5));
    h.take_effects();
    // At 5ms a is at 30ms; c wakes at min{22, 30} + 2 = 24ms, below a. The
    // VP is decided again, but a keeps it to the end of its quantum.
    h.wake(c);
    assert_eq!(h.sched().finish(c), Some(vt(24_000_000)));
    assert!(!h
        .take_effects()
        .iter()
        .any(|e| matches!(e, Effect::Revoke(_))));
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(10)));
    h.advance_to(Instant(ms(10).0 - 1));
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    // Then the smallest finish values, b (22) and c (24), each for its own
    // 1ms quantum.
    h.advance_to(ms(10));
    assert_eq!(h.running_on(ParentVp(0)), Some(b));
    h.advance_to(ms(11));
    assert_eq!(h.running_on(ParentVp(0)), Some(c));
}

/// A decision is timed against the children waiting when it was made; a
/// child waking later with a smaller finish value must end it earlier, or
/// the running child overruns the woken one by up to its whole lead
/// (Theorem 1 failed on random workloads this way).
#[test]
fn a_wakeup_shortens_a_decision_timed_before_it() {
    let mut h = harness(1, Params::new());
    let one_ms = Duration::from_millis(1);
    let a = h.register(&rate_q("0.5", one_ms)).unwrap();
    let b = h.register(&rate_q("0.1", one_ms)).unwrap();
    let c = h.register(&rate_q("0.5", one_ms)).unwrap();
    h.wake(a);
    h.wake(b);
    // f_a = 2ms, f_b = 2 + 1/0.1 = 12ms. After its 1ms quantum a is at 4ms
    // and would run until it reaches 12ms: 4ms more.
    h.advance_to(ms(1));
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(5)));
    // At 2ms a is at 6ms; c wakes at 6 + 2 = 8ms: a now stops when it
    // reaches 8ms, at 3ms, and c runs.
    h.advance_to(ms(2));
    h.wake(c);
    assert_eq!(h.sched().finish(c), Some(vt(8_000_000)));
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    assert_eq!(h.horizon(ParentVp(0)), Some(ms(3)));
    h.advance_to(ms(3));
    assert_eq!(h.running_on(ParentVp(0)), Some(c));
    assert_eq!(h.cpu_time(a), Duration::from_millis(3));
}

#[test]
fn the_minimum_work_quantum_is_enforced() {
    let mut h = harness(
        1,
        Params::new().with("min_quantum", Value::Duration(Duration::from_millis(5))),
    );
    let a = h
        .register(&rate_q("0.5", Duration::from_micros(1)))
        .unwrap();
    let b = h.register(&rate("0.5")).unwrap();
    h.wake(a);
    h.wake(b);
    h.advance_to(ms(1));
    // a runs first and keeps the CPU for the enforced 5ms, not 1µs.
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
    h.advance_to(Instant(ms(5).0 - 1));
    assert_eq!(h.running_on(ParentVp(0)), Some(a));
}

#[test]
fn guaranteed_rate_refuses_past_its_class_rate_and_says_why() {
    let classes = Params::new().with("classes", Value::Str("GR:0.6:0, FR:0.4:inf".into()));
    let mut h = harness(1, classes);
    h.register(&in_class("0.3", "GR")).unwrap();
    h.register(&in_class("0.3", "GR")).unwrap();
    let e = h.register(&in_class("0.01", "GR")).unwrap_err().0;
    assert!(
        e.contains("GR") && e.contains("0.6") && e.contains("0.01"),
        "{e}"
    );
    // FR overbooks without limit.
    for _ in 0..20 {
        h.register(&in_class("0.1", "FR")).unwrap();
    }
    let e = h.register(&in_class("0.1", "XX")).unwrap_err().0;
    assert!(e.contains("unknown class `XX`"), "{e}");
}

#[test]
fn effective_rates_follow_joins_and_leaves() {
    let classes = Params::new().with("classes", Value::Str("GR:0.6:0, FR:0.4:inf".into()));
    let mut h = harness(1, classes);
    let g = h.register(&in_class("0.3", "GR")).unwrap();
    let f: Vec<ChildId> = (0..5)
        .map(|_| h.register(&in_class("0.1", "FR")).unwrap())
        .collect();
    let eff = |h: &Harness<Frc>, c| {
        let (n, d) = h.sched().effective_rate(c).unwrap();
        (n * 1_000_000 / d) as u64
    };
    // GR is not overbooked: effective = nominal.
    assert_eq!(eff(&h, g), 300_000);
    // FR: 0.1 × 0.4 / 0.5 = 0.08.
    assert_eq!(eff(&h, f[0]), 80_000);
    h.unregister(f[4]);
    h.unregister(f[3]);
    // Σ = 0.3 <= 0.4: nominal again.
    assert_eq!(eff(&h, f[0]), 100_000);
    assert_eq!(h.sched().classes()[1].admitted, 300_000);
}

#[test]
fn five_fr_hogs_do_not_dent_a_gr_reservation() {
    let classes = Params::new().with("classes", Value::Str("GR:0.6:0, FR:0.4:inf".into()));
    let mut h = harness(1, classes);
    let g = h.register(&in_class("0.3", "GR")).unwrap();
    let fr: Vec<ChildId> = (0..5)
        .map(|_| h.register(&in_class("0.1", "FR")).unwrap())
        .collect();
    h.wake(g);
    for &x in &fr {
        h.wake(x);
    }
    h.advance_to(ms(10_000));
    // The effective rates sum to 0.3 + 0.4 = 0.7 of the CPU, so the GR
    // thread gets 3/7 of it (the CPU is work conserving), at least 0.3.
    let got = h.cpu_time(g).as_nanos() / 1_000_000;
    assert!(got.abs_diff(30_000 / 7) <= 20, "{got}ms");
}

/// A class's overbooking fraction as `frc` reads it: any, in ppm.
fn parse_ppm(text: &str) -> Result<u64, String> {
    Share::parse_ppm(text, ShareRange::Any)
}

/// A child's or a class's rate as `frc` reads it: `(0, 1]`, in ppm.
fn parse_rate(text: &str) -> Result<u64, String> {
    Share::parse_ppm(text, ShareRange::Rate)
}

#[test]
fn parsers_reject_bad_input_with_the_reason() {
    assert_eq!(parse_ppm("0.2"), Ok(200_000));
    assert_eq!(parse_ppm(".05"), Ok(50_000));
    assert_eq!(parse_ppm("1"), Ok(1_000_000));
    assert!(parse_rate("0").unwrap_err().contains("(0, 1]"));
    assert!(parse_rate("1.5").unwrap_err().contains("(0, 1]"));
    assert!(parse_rate("0.1234567").unwrap_err().contains("6 decimal"));
    assert!(parse_rate("abc").unwrap_err().contains("decimal"));
    assert!(parse_classes("GR:0.6")
        .unwrap_err()
        .contains("NAME:RATE:OVERBOOK"));
    assert!(parse_classes("A:0.6:0, B:0.6:0")
        .unwrap_err()
        .contains("more than 1"));
    assert!(parse_classes("A:0.5:0, A:0.5:0")
        .unwrap_err()
        .contains("repeated"));
    let c = parse_classes("GR:0.6:0, MID:0.2:0.5, FR:0.2:INF").unwrap();
    assert_eq!(
        c.iter().map(|c| (c.rate, c.overbook)).collect::<Vec<_>>(),
        [
            (600_000, Some(0)),
            (200_000, Some(500_000)),
            (200_000, None)
        ]
    );
    let Err(e) = hsched_policies::build(
        "frc",
        &Params::new().with("classes", Value::Str("x".into())),
    ) else {
        panic!("bad classes accepted");
    };
    assert!(
        e.starts_with("policy `frc`") && e.contains("classes"),
        "{e}"
    );
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => any::<u8>().prop_map(Step::Register),
        1 => any::<u8>().prop_map(Step::Unregister),
        4 => any::<u8>().prop_map(Step::Wake),
        3 => any::<u8>().prop_map(Step::Block),
        3 => (0u32..30_000).prop_map(Step::Advance),
    ]
}

proptest! {
    #[test]
    fn parsers_never_panic(s in "\\PC{0,24}") {
        let _ = parse_ppm(&s);
        let _ = parse_classes(&s);
    }

    #[test]
    fn decimals_round_trip(ppm in 0u64..=1_000_000) {
        let text = format!("{}.{:06}", ppm / 1_000_000, ppm % 1_000_000);
        prop_assert_eq!(parse_ppm(&text), Ok(ppm));
    }

    /// Admission never admits past `R(1+b)`, and refuses only when the next
    /// rate would pass it.
    #[test]
    fn admission_never_admits_past_the_overbooked_class_rate(
        r in 1u64..=10, b in 0u64..=3,
        ops in proptest::collection::vec((any::<bool>(), 1u64..=40, any::<u8>()), 1..80),
    ) {
        let classes = format!("K:0.{r}:{b}");
        if r == 10 { return Ok(()); }
        let cap = u128::from(r) * 100_000 * (1 + u128::from(b));
        let mut h = harness(1, Params::new().with("classes", Value::Str(classes)));
        let mut members: Vec<(ChildId, u64)> = Vec::new();
        for (join, pct, pick) in ops {
            if join || members.is_empty() {
                let ppm = pct * 10_000;
                let sum: u64 = members.iter().map(|m| m.1).sum();
                let fits = u128::from(sum + ppm) <= cap;
                match h.register(&rate(&format!("0.{:06}", ppm))) {
                    Ok(c) => { prop_assert!(fits); members.push((c, ppm)); }
                    Err(e) => prop_assert!(!fits, "{}", e.0),
                }
            } else {
                let (c, _) = members.remove(pick as usize % members.len());
                h.unregister(c);
            }
            let admitted = h.sched().classes()[0].admitted;
            prop_assert!(u128::from(admitted) <= cap);
            prop_assert_eq!(admitted, members.iter().map(|m| m.1).sum::<u64>());
        }
    }

    #[test]
    fn random_protocol_runs_keep_the_rules(
        vps in 1u32..4,
        steps in proptest::collection::vec(step(), 1..150),
    ) {
        let mut h = harness(vps, Params::new());
        let sets = [rate("0.5"), rate_q("0.05", Duration::from_millis(2)), rate("0.3")];
        for s in steps {
            h.step(s, &sets);
            h.assert_work_conserving();
        }
    }
}
