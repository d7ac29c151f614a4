//! The rewrite rules one by one (§5.2): Table 2 cell by cell, each theorem
//! with numbers, the trivial rewrites, the SFQ rule with the paper's Fig. 3
//! numbers, and the refusals with their reasons.

use hsched_analysis::guarantee::Reservation;
use hsched_analysis::guarantee::{Guarantee, Kind, Limit, Shape};
use hsched_analysis::rewrite::{
    implies, rewritable, sfq_child, strongest, to_reservation, why_not, DEFAULT_PERIOD,
};
use hsched_core::{Duration, Share};
use proptest::prelude::*;

fn g(text: &str) -> Guarantee {
    Guarantee::parse(text).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `implies(have, want)`, which must succeed, as text with its rules.
fn chain(have: &str, want: &str) -> String {
    implies(&g(have), &g(want))
        .unwrap_or_else(|e| panic!("{have} → {want}: {e}"))
        .to_string()
}

fn refusal(have: &str, want: &str) -> String {
    match implies(&g(have), &g(want)) {
        Ok(d) => panic!("{have} → {want} accepted: {d}"),
        Err(e) => e,
    }
}

/// Table 2: `Some(rule)` where the paper's matrix has a "t", `None` for "f".
/// Rows are `from`, columns `to`, both in the table's order:
/// ALL, RESBH, RESBS, RESCH, RESCS, RESU, PSBE, PS, NULL.
const TABLE2: [[Option<&str>; 9]; 9] = {
    const ALLR: Option<&str> = Some("ALL is any reservation");
    const W: Option<&str> = Some("weaken");
    const N: Option<&str> = Some("anything is NULL");
    const F: Option<&str> = None;
    [
        // ALL
        [
            Some("same kind"),
            ALLR,
            ALLR,
            ALLR,
            ALLR,
            Some("ALL is RESU 1"),
            Some("ALL is PSBE 1, 0"),
            Some("ALL is PS 1"),
            N,
        ],
        // RESBH
        [
            F,
            W,
            Some("hard is soft"),
            F,
            Some("Th. 1"),
            F,
            Some("Th. 4"),
            Some("Th. 5"),
            N,
        ],
        // RESBS
        [
            F,
            F,
            W,
            F,
            Some("Th. 1"),
            F,
            Some("Th. 4"),
            Some("Th. 5"),
            N,
        ],
        // RESCH
        [
            F,
            Some("continuous is basic"),
            Some("continuous is basic"),
            W,
            Some("hard is soft"),
            F,
            Some("Th. 3"),
            Some("Th. 5"),
            N,
        ],
        // RESCS
        [
            F,
            F,
            Some("continuous is basic"),
            F,
            W,
            F,
            Some("Th. 3"),
            Some("Th. 5"),
            N,
        ],
        // RESU
        [F, F, F, F, F, W, F, F, N],
        // PSBE
        [
            F,
            F,
            Some("Th. 6"),
            F,
            Some("Th. 6"),
            F,
            W,
            Some("PSBE is PS"),
            N,
        ],
        // PS
        [F, F, F, F, F, F, F, W, N],
        // NULL
        [F, F, F, F, F, F, F, F, Some("same kind")],
    ]
};

/// A typical guarantee of each kind (none of them ALL in disguise).
fn sample(kind: Kind) -> Guarantee {
    g(match kind {
        Kind::All => "ALL",
        Kind::Resbh => "RESBH 3, 8",
        Kind::Resbs => "RESBS 3, 8",
        Kind::Resch => "RESCH 3, 8",
        Kind::Rescs => "RESCS 3, 8",
        Kind::Resu => "RESU 0.5",
        Kind::Psbe => "PSBE 0.5, 4",
        Kind::Ps => "PS 0.5",
        Kind::Null => "NULL",
    })
}

#[test]
fn table2_every_cell() {
    for (i, from) in Kind::TABLE_ORDER.into_iter().enumerate() {
        for (j, to) in Kind::TABLE_ORDER.into_iter().enumerate() {
            assert_eq!(rewritable(from, to), TABLE2[i][j], "{from} → {to}");
            assert_eq!(
                why_not(from, to).is_some(),
                TABLE2[i][j].is_none(),
                "{from} → {to}"
            );
            // The rules agree with the table: a feasible cell derives a
            // guarantee of that kind from a typical one, an infeasible one
            // derives none.
            let derived = strongest(&sample(from), to);
            assert_eq!(
                derived.is_some(),
                TABLE2[i][j].is_some(),
                "{from} → {to}: {derived:?}"
            );
            if let Some(d) = derived {
                assert_eq!(d.result.kind(), to, "{d}");
                if from != to {
                    assert!(
                        d.steps.iter().any(|s| s.rule == TABLE2[i][j].unwrap()),
                        "{from} → {to}: {d}"
                    );
                }
            }
        }
    }
}

#[test]
fn table2_refusals_name_their_reason() {
    use Kind::*;
    for (from, to, reason) in [
        (Resbh, Resch, "Th. 2"),
        (Resbs, Resch, "Th. 2"),
        (Resbs, Resbh, "no upper bound"),
        (Rescs, Resch, "no upper bound"),
        (Psbe, Resbh, "no upper bound"),
        (Resbh, All, "full reservation"),
        (Resu, Ps, "deadlines"),
        (Resu, Psbe, "deadlines"),
        (Resbs, Resu, "deadlines"),
        (Psbe, Resu, "deficit"),
        (Ps, Psbe, "long run"),
        (Null, Ps, "nothing"),
    ] {
        let why = why_not(from, to).unwrap();
        assert!(why.contains(reason), "{from} → {to}: {why}");
    }
}

#[test]
fn theorem_1_basic_to_continuous() {
    assert_eq!(
        strongest(&g("RESBS 40, 80"), Kind::Rescs)
            .unwrap()
            .to_string(),
        "RESBS 40, 80 → RESCS 40, 120.001 [Th. 1]"
    );
    let d = strongest(&g("RESBH 5, 33"), Kind::Rescs).unwrap();
    assert_eq!(
        d.result,
        Guarantee::reservation(
            Shape::Continuous,
            Limit::Soft,
            ms(5),
            ms(61) + Duration::from_nanos(1)
        )
        .unwrap()
    );
    assert_eq!(
        d.steps.iter().map(|s| s.rule).collect::<Vec<_>>(),
        ["hard is soft", "Th. 1"]
    );
    // Lemma B: ε = 0 is enough, and other windows have their own bound.
    assert_eq!(
        chain("RESBS 40, 80", "RESCS 40, 120"),
        "RESBS 40, 80 → RESCS 40, 120 [basic supply bound]"
    );
    assert_eq!(
        chain("RESBS 3, 8", "RESCS 4, 19"),
        "RESBS 3, 8 → RESCS 4, 19 [basic supply bound]"
    );
    assert!(refusal("RESBS 3, 8", "RESCS 5, 19").contains("RESCS 4, 19"));
    assert!(refusal("RESBS 40, 80", "RESCS 40, 119").contains("RESCS 39, 119"));
    assert!(refusal("RESBS 40, 80", "RESCS 1, 80").contains("may hold none"));
}

#[test]
fn theorem_2_no_basic_reservation_is_continuous_hard() {
    for (have, want) in [
        ("RESBH 5, 33", "RESCH 5, 33"),
        ("RESBS 5, 33", "RESCH 5, 33"),
        ("RESBH 5, 33", "RESCH 10, 66"),
        ("RESBH 5, 33", "RESCH 1, 33"),
    ] {
        let e = refusal(have, want);
        assert!(e.contains("Th. 2"), "{have} → {want}: {e}");
    }
    assert!(strongest(&g("RESBH 5, 33"), Kind::Resch).is_none());
    // ... unless x = y: that reservation is ALL.
    assert_eq!(
        chain("RESBH 33, 33", "RESCH 33, 33"),
        "RESBH 33, 33 → ALL [a full reservation is ALL] → RESCH 33, 33 [ALL is any reservation]"
    );
    assert_eq!(
        chain("RESBS 10, 10", "RESCH 7, 7"),
        "RESBS 10, 10 → ALL [a full reservation is ALL] → RESCH 7, 7 [ALL is any reservation]"
    );
}

#[test]
fn theorem_3_continuous_to_psbe() {
    assert_eq!(
        strongest(&g("RESCS 3, 8"), Kind::Psbe).unwrap().result,
        Guarantee::Psbe {
            share: Share::new(3, 8).unwrap(),
            delta: Duration::from_nanos(1_875_000)
        }
    );
    assert_eq!(
        chain("RESCH 40, 80", "PSBE 0.5, 20"),
        "RESCH 40, 80 → PSBE 0.5, 20 [Th. 3]"
    );
    // δ rounds up: 1·(3 − 1)/3 ms = 0.666… ms.
    let d = strongest(&g("RESCS 1, 3"), Kind::Psbe).unwrap();
    assert_eq!(
        d.result,
        Guarantee::Psbe {
            share: Share::new(1, 3).unwrap(),
            delta: Duration::from_nanos(666_667)
        }
    );
    assert_eq!(d.result.to_string(), "PSBE 0.3333, 0.667");
}

#[test]
fn theorem_4_basic_to_psbe() {
    // §5.3: J's soft reservation of 40 every 80 ms is PSBE 0.5, 40.
    assert_eq!(
        chain("RESBS 40, 80", "PSBE 0.5, 40"),
        "RESBS 40, 80 → PSBE 0.5, 40 [Th. 4]"
    );
    assert_eq!(
        strongest(&g("RESBH 5, 33"), Kind::Psbe)
            .unwrap()
            .result
            .to_string(),
        "PSBE 0.1515, 8.485"
    );
    // At a smaller share the bound shrinks in proportion (Lemma B's tightest line).
    assert_eq!(
        chain("RESBS 40, 80", "PSBE 0.25, 20"),
        "RESBS 40, 80 → PSBE 0.5, 40 [Th. 4] → PSBE 0.25, 20 [weaken]"
    );
    assert!(refusal("RESBS 40, 80", "PSBE 0.25, 19.999").contains("PSBE 0.5, 40 (Th. 4)"));
    assert!(refusal("RESBS 40, 80", "PSBE 0.6, 100").contains("s' ≤ s"));
    // The chain of the brief: a hard basic reservation through to a weaker PSBE.
    assert_eq!(
        chain("RESBH 40, 80", "PSBE 0.4, 50"),
        "RESBH 40, 80 → PSBE 0.5, 40 [Th. 4] → PSBE 0.4, 50 [weaken]"
    );
}

#[test]
fn theorem_5_reservation_to_ps() {
    for (have, share) in [
        ("RESBH 5, 33", (5, 33)),
        ("RESBS 40, 80", (1, 2)),
        ("RESCH 3, 8", (3, 8)),
        ("RESCS 1, 10", (1, 10)),
    ] {
        let d = strongest(&g(have), Kind::Ps).unwrap();
        assert_eq!(
            d.result,
            Guarantee::Ps(Share::new(share.0, share.1).unwrap())
        );
        assert_eq!(d.steps[0].rule, "Th. 5");
    }
    assert_eq!(
        chain("RESCS 1, 10", "PS 0.05"),
        "RESCS 1, 10 → PS 0.1 [Th. 5] → PS 0.05 [weaken]"
    );
    assert!(refusal("RESCS 1, 10", "PS 0.2").contains("the most it gives is PS 0.1"));
}

#[test]
fn theorem_6_psbe_to_reservation() {
    let psbe = g("PSBE 0.5, 40");
    for shape in [Shape::Continuous, Shape::Basic] {
        let d = to_reservation(&psbe, shape, Limit::Soft, ms(100)).unwrap();
        assert_eq!(
            d.result,
            Guarantee::reservation(shape, Limit::Soft, ms(10), ms(100)).unwrap()
        );
        assert_eq!(d.steps[0].rule, "Th. 6");
        // y must exceed δ/s = 80 ms.
        assert!(to_reservation(&psbe, shape, Limit::Soft, ms(80)).is_none());
        assert!(to_reservation(&psbe, shape, Limit::Hard, ms(100)).is_none());
    }
    assert_eq!(
        to_reservation(
            &psbe,
            Shape::Continuous,
            Limit::Soft,
            ms(80) + Duration::from_nanos(2)
        )
        .unwrap()
        .result,
        Guarantee::reservation(
            Shape::Continuous,
            Limit::Soft,
            Duration::from_nanos(1),
            ms(80) + Duration::from_nanos(2)
        )
        .unwrap()
    );
    assert!(refusal("PSBE 0.5, 40", "RESCS 1, 80").contains("longer than δ/s = 80 ms"));
    assert_eq!(
        chain("PSBE 0.1, 22", "RESBS 8, 300"),
        "PSBE 0.1, 22 → RESBS 8, 300 [Th. 6]"
    );
    assert_eq!(
        chain("PSBE 0.1, 22", "RESBS 7, 300"),
        "PSBE 0.1, 22 → RESBS 8, 300 [Th. 6] → RESBS 7, 300 [weaken]"
    );
    // strongest picks y = 2δ/s: amount δ, half the share.
    assert_eq!(
        strongest(&psbe, Kind::Rescs).unwrap().result.to_string(),
        "RESCS 40, 160"
    );
    assert_eq!(
        strongest(&g("PSBE 0.3, 0"), Kind::Resbs).unwrap().result,
        Guarantee::reservation(
            Shape::Basic,
            Limit::Soft,
            Duration::from_micros(300),
            DEFAULT_PERIOD
        )
        .unwrap()
    );
}

#[test]
fn all_is_every_guarantee() {
    for want in [
        "RESBS 1, 10",
        "RESCS 9, 10",
        "RESBH 10, 10",
        "RESCH 33, 33",
        "RESU 1",
        "RESU 0.3",
        "PSBE 1, 0",
        "PSBE 0.2, 5",
        "PS 1",
        "NULL",
        "ALL",
    ] {
        assert!(implies(&Guarantee::All, &g(want)).is_ok(), "ALL → {want}");
    }
    assert_eq!(
        chain("ALL", "RESBS 1, 10"),
        "ALL → RESBS 10, 10 [ALL is any reservation] → RESBS 1, 10 [weaken]"
    );
    // ... but not a cap below the whole CPU: that takes a reservation scheduler.
    let e = refusal("ALL", "RESBH 5, 33");
    assert!(e.contains("cap"), "{e}");
    assert!(refusal("ALL", "RESCH 1, 2").contains("cap"));
    // A full reservation and PSBE 1, 0 are ALL.
    assert_eq!(
        chain("RESCS 8, 8", "ALL"),
        "RESCS 8, 8 → ALL [a full reservation is ALL]"
    );
    assert_eq!(
        chain("PSBE 1, 0", "ALL"),
        "PSBE 1, 0 → ALL [PSBE 1, 0 is ALL]"
    );
    assert!(refusal("PSBE 1, 1", "ALL").contains("only ALL itself"));
    assert!(refusal("RESBH 5, 33", "ALL").contains("only ALL itself"));
}

#[test]
fn trivial_rewrites() {
    // anything is NULL
    for have in [
        "ALL",
        "RESBH 5, 33",
        "RESU 0.5",
        "PSBE 0.1, 22",
        "PS 0.2",
        "NULL",
    ] {
        let d = implies(&g(have), &Guarantee::Null).unwrap();
        assert_eq!(d.result, Guarantee::Null);
    }
    // hard is soft, continuous is basic
    assert_eq!(
        chain("RESBH 5, 33", "RESBS 5, 33"),
        "RESBH 5, 33 → RESBS 5, 33 [hard is soft]"
    );
    assert_eq!(
        chain("RESCS 5, 33", "RESBS 5, 33"),
        "RESCS 5, 33 → RESBS 5, 33 [continuous is basic]"
    );
    assert_eq!(
        chain("RESCH 5, 33", "RESBH 5, 33"),
        "RESCH 5, 33 → RESBH 5, 33 [continuous is basic]"
    );
    assert_eq!(chain("RESCH 5, 33", "RESBS 4, 33"), "RESCH 5, 33 → RESCS 5, 33 [hard is soft] → RESBS 5, 33 [continuous is basic] → RESBS 4, 33 [weaken]");
    // PSBE is PS
    assert_eq!(
        chain("PSBE 0.1, 22", "PS 0.1"),
        "PSBE 0.1, 22 → PS 0.1 [PSBE is PS]"
    );
    // RESU only weakens
    assert_eq!(
        chain("RESU 0.5", "RESU 0.25"),
        "RESU 0.5 → RESU 0.25 [weaken]"
    );
    assert!(refusal("RESU 0.5", "RESU 0.6").contains("RESU 0.5"));
    assert!(refusal("RESU 0.5", "PS 0.5").contains("deadlines"));
    // PS only weakens
    assert_eq!(chain("PS 0.5", "PS 0.25"), "PS 0.5 → PS 0.25 [weaken]");
    assert!(refusal("PS 0.5", "PSBE 0.1, 1000").contains("long run"));
    // anything gives what promises nothing
    assert_eq!(
        chain("NULL", "RESBS 0, 10"),
        "NULL → RESBS 0, 10 [promises nothing]"
    );
    assert_eq!(
        chain("RESU 0.5", "PS 0"),
        "RESU 0.5 → PS 0 [promises nothing]"
    );
    assert!(refusal("NULL", "RESBH 0, 10").contains("nothing"));
}

#[test]
fn reservations_weaken_soundly() {
    // basic soft: fewer time, or k windows at a time on the same grid
    assert_eq!(
        chain("RESBS 40, 80", "RESBS 30, 80"),
        "RESBS 40, 80 → RESBS 30, 80 [weaken]"
    );
    assert_eq!(
        chain("RESBS 40, 80", "RESBS 120, 240"),
        "RESBS 40, 80 → RESBS 120, 240 [weaken]"
    );
    // a basic period that is not a multiple goes through Lemma B
    assert_eq!(
        chain("RESBS 40, 80", "RESBS 40, 120"),
        "RESBS 40, 80 → RESCS 40, 120 [basic supply bound] → RESBS 40, 120 [continuous is basic]"
    );
    assert!(refusal("RESBS 40, 80", "RESBS 41, 120").contains("RESBS 40, 120"));
    // hard: exactly k·x in k·y, nothing else
    assert_eq!(
        chain("RESBH 5, 33", "RESBH 10, 66"),
        "RESBH 5, 33 → RESBH 10, 66 [weaken]"
    );
    assert_eq!(
        chain("RESCH 5, 33", "RESCH 15, 99"),
        "RESCH 5, 33 → RESCH 15, 99 [weaken]"
    );
    assert!(refusal("RESBH 5, 33", "RESBH 4, 33").contains("exactly that amount"));
    assert!(refusal("RESBH 5, 33", "RESBH 6, 34").contains("multiples of its period (33 ms)"));
    assert!(refusal("RESCH 5, 33", "RESCH 6, 34").contains("multiples of its period (33 ms)"));
    // continuous soft: Lemma C at any window
    assert_eq!(
        chain("RESCS 3, 8", "RESCS 6, 16"),
        "RESCS 3, 8 → RESCS 6, 16 [weaken]"
    );
    assert_eq!(
        chain("RESCS 3, 8", "RESCS 2, 7"),
        "RESCS 3, 8 → RESCS 2, 7 [weaken]"
    );
    assert!(refusal("RESCS 3, 8", "RESCS 3, 7").contains("RESCS 2, 7"));
    // soft never becomes hard
    assert!(refusal("RESBS 5, 33", "RESBH 5, 33").contains("upper bound"));
    assert!(refusal("PSBE 0.5, 1", "RESCH 5, 33").contains("upper bound"));
}

#[test]
fn psbe_weakens_in_proportion() {
    assert_eq!(
        chain("PSBE 0.5, 40", "PSBE 0.4, 32"),
        "PSBE 0.5, 40 → PSBE 0.4, 32 [weaken]"
    );
    assert_eq!(
        chain("PSBE 0.5, 40", "PSBE 0.5, 41"),
        "PSBE 0.5, 40 → PSBE 0.5, 41 [weaken]"
    );
    assert!(refusal("PSBE 0.5, 40", "PSBE 0.4, 31.999").contains("δ' ≥ (s'/s)·δ"));
    assert!(refusal("PSBE 0.5, 40", "PSBE 0.6, 1000").contains("PSBE 0.5, 40"));
}

#[test]
fn sfq_rule_gives_the_papers_figure_3() {
    // §5.3: J's RESBS 40, 80 → PSBE 0.5, 40 (Th. 4); PS with q = 10 ms and
    // two threads of weights 1 and 4 gives PSBE 0.1, 22 and PSBE 0.4, 58.
    let parent = strongest(&g("RESBS 40, 80"), Kind::Psbe).unwrap().result;
    let Guarantee::Psbe { share, delta } = parent else {
        unreachable!()
    };
    assert_eq!(parent.to_string(), "PSBE 0.5, 40");
    let word = sfq_child(share, delta, ms(10), 2, Share::new(1, 5).unwrap());
    let voice = sfq_child(share, delta, ms(10), 2, Share::new(4, 5).unwrap());
    assert_eq!(word, g("PSBE 0.1, 22"));
    assert_eq!(voice, g("PSBE 0.4, 58"));
    assert_eq!(word.to_string(), "PSBE 0.1, 22");
    assert_eq!(voice.to_string(), "PSBE 0.4, 58");
}

#[test]
fn sfq_rule_rounds_the_safe_way() {
    // r = 1/3 of δ + T·q = 10 ms + 3·1 ms: 13/3 ms, rounded up, plus q.
    let child = sfq_child(Share::ONE, ms(10), ms(1), 3, Share::new(1, 3).unwrap());
    assert_eq!(
        child,
        Guarantee::Psbe {
            share: Share::new(1, 3).unwrap(),
            delta: Duration::from_nanos(4_333_334) + ms(1)
        }
    );
    // Absurd inputs saturate (weaker), never wrap or panic.
    let huge = sfq_child(
        Share::ONE,
        Duration::MAX,
        Duration::MAX,
        u64::MAX,
        Share::new(u64::MAX - 1, u64::MAX).unwrap(),
    );
    assert_eq!(
        huge,
        Guarantee::Psbe {
            share: Share::new(u64::MAX - 1, u64::MAX).unwrap(),
            delta: Duration::MAX
        }
    );
}

#[test]
fn strongest_of_each_kind() {
    let cases = [
        ("RESBH 5, 33", Kind::Resbh, Some("RESBH 5, 33")),
        ("RESBH 5, 33", Kind::Resbs, Some("RESBS 5, 33")),
        ("RESCH 5, 33", Kind::Resbh, Some("RESBH 5, 33")),
        ("RESCS 5, 33", Kind::Resbs, Some("RESBS 5, 33")),
        ("RESCS 5, 33", Kind::Resbh, None),
        ("ALL", Kind::Resbh, Some("RESBH 1, 1")),
        ("ALL", Kind::Psbe, Some("PSBE 1, 0")),
        ("ALL", Kind::Resu, Some("RESU 1")),
        ("RESBS 33, 33", Kind::Resu, Some("RESU 1")),
        ("RESU 0.5", Kind::Resu, Some("RESU 0.5")),
        ("RESU 0.5", Kind::Ps, None),
        ("PS 0.5", Kind::Psbe, None),
        ("NULL", Kind::Null, Some("NULL")),
        ("NULL", Kind::Ps, None),
    ];
    for (have, kind, want) in cases {
        let got = strongest(&g(have), kind).map(|d| d.result.to_string());
        assert_eq!(got.as_deref(), want, "{have} as {kind}");
    }
}

// ---------------------------------------------------------------------------
// Properties of the rules as a whole
// ---------------------------------------------------------------------------

/// Any guarantee, including reservations built by hand with period 0 or an
/// amount above the period (which the rules must treat as promising nothing).
fn any_guarantee() -> impl Strategy<Value = Guarantee> {
    let time = prop_oneof![0u64..=200, 0u64..=u64::MAX];
    let share = (0u64..=20, 1u64..=20).prop_map(|(n, d)| Share::new(n.min(d), d).unwrap());
    prop_oneof![
        Just(Guarantee::All),
        Just(Guarantee::Null),
        (0u8..4, time.clone(), time.clone()).prop_map(|(k, a, p)| Guarantee::Res(Reservation {
            shape: if k & 1 == 0 {
                Shape::Basic
            } else {
                Shape::Continuous
            },
            limit: if k & 2 == 0 { Limit::Hard } else { Limit::Soft },
            amount: Duration::from_nanos(a),
            period: Duration::from_nanos(p),
        })),
        share.clone().prop_map(Guarantee::Resu),
        share.clone().prop_map(Guarantee::Ps),
        (share, time).prop_map(|(share, d)| Guarantee::Psbe {
            share,
            delta: Duration::from_nanos(d)
        }),
    ]
}

fn any_kind() -> impl Strategy<Value = Kind> {
    (0usize..9).prop_map(|i| Kind::TABLE_ORDER[i])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// No input panics; a derivation is a connected chain from `have` to
    /// exactly `want`; a refusal says what it refuses.
    #[test]
    fn implies_is_total_and_chains(have in any_guarantee(), want in any_guarantee()) {
        match implies(&have, &want) {
            Ok(d) => {
                prop_assert_eq!(d.result, want);
                let mut at = have;
                for step in &d.steps {
                    prop_assert_eq!(step.from, at);
                    prop_assert_ne!(step.from, step.to);
                    at = step.to;
                }
                prop_assert_eq!(at, want);
            }
            Err(e) => prop_assert!(e.contains(" does not give "), "{}", e),
        }
    }

    /// What `strongest` derives, `implies` accepts, and it is of the kind
    /// asked for; Table 2 never says "f" where a guarantee was derived from
    /// a typical (not ALL-like) one.
    #[test]
    fn strongest_is_implied(have in any_guarantee(), kind in any_kind()) {
        if let Some(d) = strongest(&have, kind) {
            prop_assert_eq!(d.result.kind(), kind);
            prop_assert!(implies(&have, &d.result).is_ok(), "{}", d);
            let all_like = strongest(&have, Kind::All).is_some();
            if !all_like && !matches!(d.result, Guarantee::Res(r) if r.amount.is_zero()) {
                prop_assert!(rewritable(have.kind(), kind).is_some(), "{} → {}: {}", have.kind(), kind, d);
            }
        }
    }

    /// Reservations at a given period: the result has that period, shape
    /// and limit, and `implies` accepts it.
    #[test]
    fn to_reservation_is_implied(have in any_guarantee(), k in 0u8..4, period in 1u64..=1_000) {
        let shape = if k & 1 == 0 { Shape::Basic } else { Shape::Continuous };
        let limit = if k & 2 == 0 { Limit::Hard } else { Limit::Soft };
        if let Some(d) = to_reservation(&have, shape, limit, Duration::from_nanos(period)) {
            let Guarantee::Res(r) = d.result else { panic!("{d}") };
            prop_assert_eq!((r.shape, r.limit, r.period), (shape, limit, Duration::from_nanos(period)));
            prop_assert!(r.amount <= r.period);
            // Only a hard one may be of amount 0 (a cap of nothing).
            prop_assert!(limit == Limit::Hard || !r.amount.is_zero());
            prop_assert!(implies(&have, &d.result).is_ok(), "{}", d);
        }
    }
}
