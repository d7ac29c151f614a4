//! The guarantee text form (§4.1): parsing what the paper writes, printing
//! it back exactly, conservative rounding, and the error messages.

use hsched_analysis::guarantee::{Guarantee, Kind, Limit, Reservation, Shape};
use hsched_analysis::rewrite::implies;
use hsched_core::{Duration, Share};
use proptest::prelude::*;

fn parse(text: &str) -> Guarantee {
    Guarantee::parse(text).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

fn err(text: &str) -> String {
    match Guarantee::parse(text) {
        Ok(g) => panic!("`{text}` parsed as {g}"),
        Err(e) => e,
    }
}

#[test]
fn the_papers_guarantees_print_back_exactly() {
    for text in [
        "ALL",
        "NULL",
        "RESBH 5, 33",
        "RESBS 40, 80",
        "RESCH 3, 8",
        "RESCS 3, 8",
        "RESBH 1, 10",
        "RESBS 5, 33",
        "PSBE 0.1, 22",
        "PSBE 0.4, 58",
        "PSBE 0.5, 40",
        "RESU 0.5",
        "PS 0.25",
        "PS 0.2",
        "RESBH 10, 33",
        "RESBS 1.5, 33.25",
    ] {
        assert_eq!(parse(text).to_string(), text);
        assert_eq!(text.parse::<Guarantee>().unwrap(), parse(text));
    }
}

#[test]
fn parsed_values_are_exact() {
    let ms = Duration::from_millis;
    assert_eq!(
        parse("RESBH 5, 33"),
        Guarantee::Res(Reservation {
            shape: Shape::Basic,
            limit: Limit::Hard,
            amount: ms(5),
            period: ms(33),
        })
    );
    assert_eq!(
        parse("PSBE 0.1, 22"),
        Guarantee::Psbe {
            share: Share::new(1, 10).unwrap(),
            delta: ms(22)
        }
    );
    assert_eq!(
        parse("RESU 0.5"),
        Guarantee::Resu(Share::new(1, 2).unwrap())
    );
    assert_eq!(parse("RESBS 500us, 2s"), parse("RESBS 0.5, 2000"));
    assert_eq!(parse("RESBS 500us, 2s").to_string(), "RESBS 0.5, 2000");
    assert_eq!(parse("RESCS 1.5ms, 10ms"), parse("RESCS 1.5, 10"));
    assert_eq!(
        parse("RESCS 250ns, 1ms"),
        Guarantee::reservation(
            Shape::Continuous,
            Limit::Soft,
            Duration::from_nanos(250),
            ms(1)
        )
        .unwrap()
    );
}

#[test]
fn spelling_is_forgiving() {
    assert_eq!(parse("psbe 0.1, 22"), parse("PSBE 0.1, 22"));
    assert_eq!(parse("  RESBH   5 ,33  "), parse("RESBH 5, 33"));
    assert_eq!(parse("Resbh 5,\t33"), parse("RESBH 5, 33"));
    assert_eq!(parse("all"), Guarantee::All);
    assert_eq!(parse("PS 25%"), parse("PS 0.25"));
    assert_eq!(parse("PS 12.5%"), parse("PS 0.125"));
    assert_eq!(parse("PS 1/4"), parse("PS 0.25"));
    assert_eq!(parse("PS .25"), parse("PS 0.25"));
    assert_eq!(parse("PS 1"), Guarantee::Ps(Share::ONE));
    assert_eq!(
        parse("PSBE 1/3, 1_000us"),
        Guarantee::Psbe {
            share: Share::new(1, 3).unwrap(),
            delta: Duration::from_millis(1)
        }
    );
}

#[test]
fn kinds_parse_and_print() {
    for kind in Kind::TABLE_ORDER {
        assert_eq!(Kind::parse(kind.name()), Ok(kind));
        assert_eq!(Kind::parse(&kind.name().to_lowercase()), Ok(kind));
        assert_eq!(kind.to_string().parse::<Kind>(), Ok(kind));
    }
    assert!(Kind::parse("RESBX")
        .unwrap_err()
        .contains("expected ALL, NULL, RESBH"));
    for (shape, limit, name) in [
        (Shape::Basic, Limit::Hard, "RESBH"),
        (Shape::Basic, Limit::Soft, "RESBS"),
        (Shape::Continuous, Limit::Hard, "RESCH"),
        (Shape::Continuous, Limit::Soft, "RESCS"),
    ] {
        let kind = Kind::reservation(shape, limit);
        assert_eq!(kind.name(), name);
        assert_eq!(kind.as_reservation(), Some((shape, limit)));
    }
}

#[test]
fn errors_say_what_was_expected() {
    let cases = [
        ("", "empty guarantee"),
        ("   ", "empty guarantee"),
        ("RESBH 5", "RESBH takes two parameters: amount, period"),
        ("RESBH 5 33", "RESBH takes two parameters: amount, period"),
        ("RESBH 5, 33, 2", "RESBH takes two parameters"),
        ("RESBH 5,", "RESBH takes two parameters"),
        ("PSBE 0.1", "PSBE takes two parameters: share, delta"),
        ("ALL 1", "ALL takes no parameters"),
        ("NULL 0", "NULL takes no parameters"),
        ("RESU", "RESU takes one parameter: rate"),
        ("PS", "PS takes one parameter: share"),
        ("RESU 0.5, 3", "RESU takes one parameter"),
        ("FOO 1, 2", "unknown guarantee `FOO`"),
        ("RESBH 40, 33", "RESBH amount 40 exceeds its period 33"),
        ("RESBH 5, 0", "RESBH period must be more than 0"),
        ("RESBH -5, 33", "RESBH amount"),
        ("RESBH 5, 33x", "RESBH period"),
        ("RESBH 5, 3 parsecs", "unknown unit"),
        ("RESCS 0.0000001, 33", "whole number of nanoseconds"),
        ("PSBE x, 22", "PSBE share: `x` is not a share"),
        ("PSBE 0.1, y", "PSBE delta"),
        ("PS 1.5", "more than 1"),
        ("PS 150%", "more than 1"),
        ("PS 1/0", "is not a share"),
        ("RESU 2/1", "more than 1"),
        ("PS 0.1234567890123456789", "is not a share"),
        ("RESBH 99999999999999999999, 1", "RESBH amount"),
    ];
    for (text, expected) in cases {
        let e = err(text);
        assert!(
            e.contains(expected),
            "`{text}`: got `{e}`, expected it to contain `{expected}`"
        );
    }
    // Time errors say how times are written.
    assert!(err("RESBH 5, 33x").contains("a bare number is milliseconds"));
}

#[test]
fn accessors() {
    assert_eq!(parse("RESBH 5, 33").kind(), Kind::Resbh);
    assert!(parse("RESBH 5, 33").is_hard());
    assert!(parse("RESCH 5, 33").is_hard());
    assert!(!parse("RESBS 5, 33").is_hard());
    assert!(!parse("ALL").is_hard());
    assert_eq!(parse("RESBH 5, 33").soften(), parse("RESBS 5, 33"));
    assert_eq!(parse("RESCH 5, 33").soften(), parse("RESCS 5, 33"));
    for same in [
        "ALL",
        "NULL",
        "RESBS 5, 33",
        "PSBE 0.1, 22",
        "PS 0.2",
        "RESU 0.5",
    ] {
        assert_eq!(parse(same).soften(), parse(same));
    }
    assert_eq!(parse("ALL").share(), Some(Share::ONE));
    assert_eq!(parse("NULL").share(), None);
    assert_eq!(parse("RESBH 5, 33").share(), Share::new(5, 33));
    assert_eq!(parse("RESBS 500us, 2s").share(), Share::new(1, 4000));
    assert_eq!(parse("PSBE 0.1, 22").share(), Share::new(1, 10));
    assert_eq!(parse("PS 25%").share(), Share::new(1, 4));
    assert_eq!(parse("RESU 0.5").share(), Share::new(1, 2));
}

#[test]
fn printing_rounds_towards_weaker() {
    let ns = Duration::from_nanos;
    // A share that does not terminate prints rounded down.
    let third = Guarantee::Ps(Share::new(1, 3).unwrap());
    assert_eq!(third.to_string(), "PS 0.3333");
    let two_thirds = Guarantee::Psbe {
        share: Share::new(2, 3).unwrap(),
        delta: ns(22_000_000_001),
    };
    // δ rounds up to whole microseconds.
    assert_eq!(two_thirds.to_string(), "PSBE 0.6666, 22000.001");
    // A soft continuous reservation: amount down, period up.
    let rescs = Guarantee::reservation(
        Shape::Continuous,
        Limit::Soft,
        ns(40_000_999),
        ns(120_000_001),
    )
    .unwrap();
    assert_eq!(rescs.to_string(), "RESCS 40, 120.001");
    // A soft basic one keeps its period (its grid cannot move).
    let resbs =
        Guarantee::reservation(Shape::Basic, Limit::Soft, ns(40_000_999), ns(80_000_001)).unwrap();
    assert_eq!(resbs.to_string(), "RESBS 40, 80.000001");
    // A hard one prints exactly: a smaller cap would be a different promise.
    let resbh =
        Guarantee::reservation(Shape::Basic, Limit::Hard, ns(5_000_001), ns(33_333_333)).unwrap();
    assert_eq!(resbh.to_string(), "RESBH 5.000001, 33.333333");
    for g in [third, two_thirds, rescs, resbs, resbh] {
        let back = parse(&g.to_string());
        assert!(implies(&g, &back).is_ok(), "{g} → {back}");
        if back != g {
            assert!(
                implies(&back, &g).is_err(),
                "{back} should be weaker than {g}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

fn any_reservation() -> impl Strategy<Value = Guarantee> {
    (
        0u8..4,
        prop_oneof![1u64..=10u64.pow(12), 1u64..=u64::MAX],
        any::<u64>(),
    )
        .prop_map(|(k, period, a)| {
            let shape = if k & 1 == 0 {
                Shape::Basic
            } else {
                Shape::Continuous
            };
            let limit = if k & 2 == 0 { Limit::Hard } else { Limit::Soft };
            Guarantee::reservation(
                shape,
                limit,
                Duration::from_nanos(a % period.saturating_add(1)),
                Duration::from_nanos(period),
            )
            .unwrap()
        })
}

fn any_share() -> impl Strategy<Value = Share> {
    (1u64..=u64::MAX, any::<u64>())
        .prop_map(|(den, n)| Share::new(n % (den.saturating_add(1)).max(1), den).unwrap())
        .prop_filter("at most 1", |r| *r <= Share::ONE)
}

fn any_guarantee() -> impl Strategy<Value = Guarantee> {
    prop_oneof![
        Just(Guarantee::All),
        Just(Guarantee::Null),
        any_reservation(),
        any_share().prop_map(Guarantee::Resu),
        any_share().prop_map(Guarantee::Ps),
        (any_share(), prop_oneof![0u64..=10u64.pow(15), any::<u64>()]).prop_map(|(share, d)| {
            Guarantee::Psbe {
                share,
                delta: Duration::from_nanos(d),
            }
        }),
    ]
}

/// Guarantees whose numbers are exact at the printed precision: whole
/// microseconds, shares in ten-thousandths.
fn exact_guarantee() -> impl Strategy<Value = Guarantee> {
    let share = (0u64..=10_000).prop_map(|n| Share::new(n, 10_000).unwrap());
    let reservation = (0u8..4, 1u64..=10u64.pow(9), any::<u64>()).prop_map(|(k, period_us, a)| {
        let shape = if k & 1 == 0 {
            Shape::Basic
        } else {
            Shape::Continuous
        };
        let limit = if k & 2 == 0 { Limit::Hard } else { Limit::Soft };
        let amount_us = a % (period_us + 1);
        Guarantee::reservation(
            shape,
            limit,
            Duration::from_micros(amount_us),
            Duration::from_micros(period_us),
        )
        .unwrap()
    });
    prop_oneof![
        Just(Guarantee::All),
        Just(Guarantee::Null),
        reservation,
        share.clone().prop_map(Guarantee::Resu),
        share.clone().prop_map(Guarantee::Ps),
        (share, 0u64..=10u64.pow(9)).prop_map(|(share, us)| Guarantee::Psbe {
            share,
            delta: Duration::from_micros(us)
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,40}") {
        let _ = Guarantee::parse(&text);
        let _ = Kind::parse(&text);
    }

    #[test]
    fn guarantee_shaped_text_never_panics(
        kind in prop_oneof![Just("RESBH"), Just("resbs"), Just("RESCH"), Just("RESCS"), Just("RESU"), Just("PSBE"), Just("PS"), Just("ALL"), Just("NULL"), Just("X")],
        params in proptest::collection::vec("[0-9./%_a-z µ-]{0,12}", 0..4),
    ) {
        let text = format!("{kind} {}", params.join(", "));
        if let Ok(g) = Guarantee::parse(&text) {
            // Whatever parses prints and parses again.
            prop_assert!(Guarantee::parse(&g.to_string()).is_ok(), "{} → {}", text, g);
        }
    }

    /// The printed text never parses to something stronger.
    #[test]
    fn printing_never_strengthens(g in any_guarantee()) {
        let text = g.to_string();
        let back = Guarantee::parse(&text).map_err(|e| TestCaseError::fail(format!("{g:?} printed `{text}`: {e}")))?;
        prop_assert_eq!(back.kind(), g.kind());
        prop_assert!(implies(&g, &back).is_ok(), "{:?} → `{}`: {:?}", g, text, implies(&g, &back));
        match (g, back) {
            (Guarantee::Psbe { share, delta }, Guarantee::Psbe { share: s2, delta: d2 }) => {
                prop_assert!(s2 <= share && d2 >= delta);
            }
            (Guarantee::Ps(a), Guarantee::Ps(b)) | (Guarantee::Resu(a), Guarantee::Resu(b)) => prop_assert!(b <= a),
            (Guarantee::Res(a), Guarantee::Res(b)) => {
                prop_assert!(b.amount <= a.amount);
                if a.limit == Limit::Hard || a.shape == Shape::Basic {
                    prop_assert_eq!(b.period, a.period);
                } else {
                    prop_assert!(b.period >= a.period);
                }
                if a.limit == Limit::Hard {
                    prop_assert_eq!(b, a);
                }
            }
            _ => prop_assert_eq!(back, g),
        }
    }

    /// Exact numbers print and parse back to the same guarantee.
    #[test]
    fn exact_guarantees_round_trip(g in exact_guarantee()) {
        let text = g.to_string();
        prop_assert_eq!(Guarantee::parse(&text), Ok(g), "`{}`", text);
    }
}
