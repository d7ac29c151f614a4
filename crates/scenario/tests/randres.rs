//! The `fault` and `randres` operations: what parses into what, what is
//! refused with which message, and no value in any of their places panics.

mod common;

use common::{first_op, op_error as err, parse, with_op};
use hsched_core::Duration;
use hsched_model::{Dist, ErrorMode, Op, Randres};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn randres(op: &str) -> Randres {
    match first_op(op) {
        Op::Randres(r) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn fault_takes_a_duration_or_a_distribution() {
    assert!(matches!(first_op("{ fault = \"2ms\" }"), Op::Fault(Dist::Fixed(d)) if d == ms(2)));
    assert!(matches!(
        first_op("{ fault = { uniform = [\"1ms\", \"3ms\"] } }"),
        Op::Fault(Dist::Uniform { min, max }) if min == ms(1) && max == ms(3)
    ));
    // A fault takes time, so a forever loop may rest on one.
    assert!(matches!(
        first_op("{ loop = { body = [ { fault = \"1ms\" } ] } }"),
        Op::Loop { count: None, .. }
    ));
    let e = err("{ fault = \"3 jiffies\" }");
    assert!(
        e.contains("thread[0].program[0].fault: `3 jiffies` has unknown unit `jiffies`"),
        "{e}"
    );
    let e = err("{ loop = { body = [ { fault = \"0ms\" } ] } }");
    assert!(e.contains("so its body must take time"), "{e}");
    let e = err("{ faults = \"1ms\" }");
    assert!(
        e.contains("unknown operation `faults`; did you mean `fault`?"),
        "{e}"
    );
}

#[test]
fn the_papers_randres() {
    let r = randres(
        r#"{ randres = { spacing = ["260ms", "340ms"], need = ["60ms", "120ms"], error = "10ms", mode = "mixed", fussiness = "0.54", reserve = true } }"#,
    );
    assert_eq!(
        r,
        Randres {
            spacing: Dist::Uniform {
                min: ms(260),
                max: ms(340)
            },
            need: Dist::Uniform {
                min: ms(60),
                max: ms(120)
            },
            error: ms(10),
            mode: ErrorMode::Mixed,
            fussiness: 540,
            reserve: true,
            count: None,
        }
    );
}

#[test]
fn randres_defaults_and_forms() {
    let r = randres(r#"{ randres = { spacing = "300ms", need = ["60ms", "120ms"] } }"#);
    assert_eq!(r.spacing, Dist::Fixed(ms(300)));
    assert_eq!(r.error, Duration::ZERO);
    assert_eq!(r.mode, ErrorMode::Mixed);
    assert_eq!(r.fussiness, 0);
    assert!(!r.reserve);
    assert_eq!(r.count, None);

    let r = randres(
        r#"{ randres = { spacing = { exponential = "300ms", max = "1s" }, need = { normal = "90ms", sd = "10ms" }, mode = "over", count = 12, reserve = false, error = 1_000 } }"#,
    );
    assert_eq!(
        r.spacing,
        Dist::Exponential {
            mean: ms(300),
            max: ms(1000)
        }
    );
    assert!(matches!(r.need, Dist::Normal { mean, .. } if mean == ms(90)));
    assert_eq!(r.mode, ErrorMode::Over);
    assert_eq!(r.count, Some(12));
    assert_eq!(r.error, Duration(1_000));
    assert_eq!(
        randres(r#"{ randres = { spacing = "1s", need = "1ms", mode = "under" } }"#).mode,
        ErrorMode::Under
    );

    // Fussiness: exact thousandths.
    for (text, permille) in [
        ("\"0\"", 0),
        ("0", 0),
        ("\"0.4\"", 400),
        ("\"0.54\"", 540),
        ("\".75\"", 750),
        ("\"0.666\"", 666),
        ("\"0.999\"", 999),
        ("\"0.\"", 0),
        ("\" 0.5 \"", 500),
    ] {
        let r = randres(&format!(
            "{{ randres = {{ spacing = \"1s\", need = \"1ms\", fussiness = {text} }} }}"
        ));
        assert_eq!(r.fussiness, permille, "{text}");
    }

    // A forever loop around a randres takes time; one with count = 0 does not.
    assert!(matches!(
        first_op(
            r#"{ loop = { body = [ { randres = { spacing = "1s", need = "1ms", count = 2 } } ] } }"#
        ),
        Op::Loop { count: None, .. }
    ));
    let e = err(
        r#"{ loop = { body = [ { randres = { spacing = "1s", need = "1ms", count = 0 } } ] } }"#,
    );
    assert!(e.contains("so its body must take time"), "{e}");
}

#[test]
fn randres_errors_name_the_key_and_what_is_expected() {
    let p = "thread[0].program[0].randres";
    let cases: &[(&str, &str)] = &[
        (
            r#"{ randres = "fast" }"#,
            "randres: expected a table: { spacing = [\"260ms\", \"340ms\"], need = [\"60ms\", \"120ms\"], ... }, found a string",
        ),
        (
            r#"{ randres = { need = "1ms" } }"#,
            "randres: missing key `spacing` (the time between deadlines, e.g. [\"260ms\", \"340ms\"])",
        ),
        (
            r#"{ randres = { spacing = "1s" } }"#,
            "randres: missing key `need` (the actual CPU need per deadline, e.g. [\"60ms\", \"120ms\"])",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fusiness = "0.5" } }"#,
            "randres.fusiness: unknown key `fusiness`; did you mean `fussiness`?",
        ),
        (
            r#"{ randres = { spacing = ["1s"], need = "1ms" } }"#,
            "randres.spacing: expected two durations [min, max], e.g. [\"260ms\", \"340ms\"], found 1 element(s)",
        ),
        (
            r#"{ randres = { spacing = ["3s", "1s"], need = "1ms" } }"#,
            "randres.spacing[1]: max 1s is below min 3s: expected [min, max] with min <= max",
        ),
        (
            r#"{ randres = { spacing = ["1s", 2.5], need = "1ms" } }"#,
            "randres.spacing[1]: expected a duration",
        ),
        (
            r#"{ randres = { spacing = ["0s", "0s"], need = "1ms" } }"#,
            "randres.spacing: deadlines must move forward: expected a spacing that can be more than zero",
        ),
        (
            r#"{ randres = { spacing = "1s", need = ["2ms", "1ms"] } }"#,
            "randres.need[1]: max 1ms is below min 2ms",
        ),
        (
            r#"{ randres = { spacing = "1s", need = true } }"#,
            "randres.need: expected a duration (\"5ms\", or integer nanoseconds) or a distribution table, found a boolean",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", error = -3 } }"#,
            "randres.error: -3 is negative",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", mode = "overr" } }"#,
            "randres.mode: unknown mode `overr` (expected \"over\", \"under\" or \"mixed\"); did you mean `over`?",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", mode = 1 } }"#,
            "randres.mode: expected \"over\", \"under\" or \"mixed\", found an integer",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = 0.54 } }"#,
            "randres.fussiness: expected a decimal in [0, 1) as a string, e.g. \"0.54\", found a float",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = 540 } }"#,
            "randres.fussiness: 540 is out of range: expected a decimal in [0, 1)",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = "1" } }"#,
            "randres.fussiness: `1` is out of range: expected a decimal in [0, 1)",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = "1.0" } }"#,
            "randres.fussiness: `1.0` is out of range",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = "0.5455" } }"#,
            "randres.fussiness: `0.5455` has more than 3 decimal places",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = "-0.5" } }"#,
            "randres.fussiness: `-0.5` is not a decimal number",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = "." } }"#,
            "randres.fussiness: `.` is not a decimal number",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = "54%" } }"#,
            "randres.fussiness: `54%` is not a decimal number",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", fussiness = true } }"#,
            "randres.fussiness: expected a decimal in [0, 1) as a string, e.g. \"0.54\", found a boolean",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", reserve = "yes" } }"#,
            "randres.reserve: expected `true` or `false`, found a string",
        ),
        (
            r#"{ randres = { spacing = "1s", need = "1ms", count = -1 } }"#,
            "randres.count: -1 is out of range: expected an integer >= 0",
        ),
    ];
    for (op, want) in cases {
        let e = err(op);
        let want = format!("{p}{}", want.strip_prefix("randres").unwrap());
        assert!(e.contains(&want), "{op}\n got: {e}\nwant: {want}");
        assert!(e.starts_with("test.toml:"), "{e}");
    }
}

#[test]
fn hints_explain_the_choices() {
    let hint = |op: &str| parse(&with_op(op)).unwrap_err().hint().map(str::to_string);
    let h = hint(r#"{ randres = { spacing = "1s", need = "1ms", fussiness = 0.54 } }"#).unwrap();
    assert!(h.contains("fussiness = \"0.54\""), "{h}");
    let h = hint(r#"{ randres = { spacing = "1s", need = "1ms", mode = "best" } }"#).unwrap();
    assert!(h.contains("over:") && h.contains("mixed:"), "{h}");
    let h = hint(r#"{ randres = { spacing = "1s", need = "1ms", typo = 1 } }"#).unwrap();
    assert!(
        h.contains("spacing, need, error, mode, fussiness, reserve, count"),
        "{h}"
    );
}

/// Every edge value in every place of a randres and a fault gives a
/// scenario or a well-formed error, never a panic.
#[test]
fn no_value_in_any_place_panics() {
    const VALUES: &[&str] = &[
        "0",
        "-1",
        "1",
        "9223372036854775807",
        "-9223372036854775808",
        "1.5",
        "nan",
        "true",
        "\"\"",
        "\"0ms\"",
        "\"18446744073709551615ns\"",
        "\"99999999999999s\"",
        "\"0.9999\"",
        "\"0.\"",
        "\"..\"",
        "\"é\"",
        "\"over\"",
        "[]",
        "[\"1ms\"]",
        "[\"1ms\", \"2ms\", \"3ms\"]",
        "[\"18446744073709551615ns\", \"18446744073709551615ns\"]",
        "{}",
        "{ uniform = [\"0ns\", \"0ns\"] }",
        "{ exponential = \"1ms\" }",
    ];
    const KEYS: &[&str] = &[
        "spacing",
        "need",
        "error",
        "mode",
        "fussiness",
        "reserve",
        "count",
    ];
    let base = r#"{ spacing = ["260ms", "340ms"], need = ["60ms", "120ms"], error = "10ms", mode = "mixed", fussiness = "0.54", reserve = true, count = 3 }"#;
    let mut texts = Vec::new();
    for v in VALUES {
        texts.push(with_op(&format!("{{ fault = {v} }}")));
        texts.push(with_op(&format!("{{ randres = {v} }}")));
        for k in KEYS {
            // Replace the value of `k` in `base` by `v`.
            let start = base.find(&format!("{k} = ")).unwrap() + k.len() + 3;
            let rest = &base[start..];
            let end = if rest.starts_with('[') {
                rest.find(']').unwrap() + 1
            } else {
                rest.find([',', ' ']).unwrap()
            };
            let op = format!("{}{v}{}", &base[..start], &rest[end..]);
            texts.push(with_op(&format!("{{ randres = {op} }}")));
        }
    }
    for text in texts {
        for r in [
            parse(&text).map(|_| ()),
            hsched_scenario::parse(&text, "p.toml").map(|_| ()),
        ] {
            if let Err(e) = r {
                assert!(e.line() >= 1 && e.column() >= 1, "{e}");
                assert!(!e.message().is_empty());
                assert!(!e.key().is_empty(), "{e}");
                let mut s = String::new();
                miette::GraphicalReportHandler::new_themed(
                    miette::GraphicalTheme::unicode_nocolor(),
                )
                .render_report(&mut s, &e)
                .unwrap();
            }
        }
    }
}
