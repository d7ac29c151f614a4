//! The `constraints` operation (the Rialto paper's constraint stress test,
//! §5.4): what parses into what, what is refused with which message, and no
//! value in any of its places panics.

mod common;

use common::{first_op, op_error as err, parse, with_op};
use hsched_core::Duration;
use hsched_model::{ConstraintLoad, Dist, Op};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn constraints(op: &str) -> ConstraintLoad {
    match first_op(op) {
        Op::Constraints(c) => c,
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_empty_table_is_the_papers_test() {
    let c = constraints("{ constraints = {} }");
    assert_eq!(
        c,
        ConstraintLoad {
            immediate: 500,
            start: Dist::Uniform {
                min: Duration::ZERO,
                max: ms(1000)
            },
            window: Dist::Uniform {
                min: ms(1),
                max: ms(1000)
            },
            work: [500, 1000],
            gap: Dist::Fixed(Duration::ZERO),
            count: None,
        }
    );
    assert_eq!(c, ConstraintLoad::default());
}

#[test]
fn every_key_written_out() {
    let c = constraints(
        r#"{ constraints = { immediate = "0.25", start = ["10ms", "500ms"], window = ["2ms", "300ms"], work = ["0.5", "1.5"], gap = "5ms", count = 40 } }"#,
    );
    assert_eq!(
        c,
        ConstraintLoad {
            immediate: 250,
            start: Dist::Uniform {
                min: ms(10),
                max: ms(500)
            },
            window: Dist::Uniform {
                min: ms(2),
                max: ms(300)
            },
            work: [500, 1500],
            gap: Dist::Fixed(ms(5)),
            count: Some(40),
        }
    );
}

#[test]
fn forms_of_each_key() {
    // Durations: fixed, a pair, or any distribution table.
    let c = constraints(
        r#"{ constraints = { start = { exponential = "100ms", max = "1s" }, window = "50ms", gap = { uniform = ["1ms", "2ms"] } } }"#,
    );
    assert_eq!(
        c.start,
        Dist::Exponential {
            mean: ms(100),
            max: ms(1000)
        }
    );
    assert_eq!(c.window, Dist::Fixed(ms(50)));
    assert_eq!(
        c.gap,
        Dist::Uniform {
            min: ms(1),
            max: ms(2)
        }
    );
    // `immediate`: exact thousandths, 0 to 1 inclusive.
    for (text, permille) in [
        ("\"0\"", 0),
        ("0", 0),
        ("1", 1000),
        ("\"1\"", 1000),
        ("\"1.000\"", 1000),
        ("\"0.5\"", 500),
        ("\".125\"", 125),
        ("\" 0.75 \"", 750),
    ] {
        let c = constraints(&format!(
            "{{ constraints = {{ immediate = {text}, gap = \"1ms\" }} }}"
        ));
        assert_eq!(c.immediate, permille, "{text}");
    }
    // `work`: a pair, or one fraction for both ends; integers are whole
    // multiples of the estimate.
    for (text, work) in [
        ("[\"0.5\", \"1\"]", [500, 1000]),
        ("[\"1.5\", \"2\"]", [1500, 2000]),
        ("[1, 2]", [1000, 2000]),
        ("[0, \"0.001\"]", [0, 1]),
        ("\"0.75\"", [750, 750]),
        ("2", [2000, 2000]),
        ("\"100\"", [100_000, 100_000]),
    ] {
        let c = constraints(&format!("{{ constraints = {{ work = {text} }} }}"));
        assert_eq!(c.work, work, "{text}");
    }
    assert_eq!(
        constraints("{ constraints = { count = 0 } }").count,
        Some(0)
    );
    // The examples of docs/scenario.md.
    constraints(
        r#"{ constraints = { immediate = "0.5", start = ["0s", "1s"], window = ["1ms", "1s"], work = ["0.5", "1"], count = 100 } }"#,
    );
    let c =
        constraints(r#"{ constraints = { work = ["1.5", "2"], gap = { exponential = "10ms" } } }"#);
    assert_eq!(c.work, [1500, 2000]);
}

#[test]
fn a_forever_loop_may_rest_on_constraints_that_take_time() {
    assert!(matches!(
        first_op("{ loop = { body = [ { constraints = { count = 3 } } ] } }"),
        Op::Loop { count: None, .. }
    ));
    // Immediate and without work, but with a gap.
    assert!(matches!(
        first_op(
            r#"{ loop = { body = [ { constraints = { immediate = "1", work = "0", gap = "1ms", count = 3 } } ] } }"#
        ),
        Op::Loop { count: None, .. }
    ));
    let e = err("{ loop = { body = [ { constraints = { count = 0 } } ] } }");
    assert!(e.contains("so its body must take time"), "{e}");
    assert!(e.contains("`constraints`"), "{e}");
    // Every iteration takes no time: a finite count is fine on its own...
    constraints(r#"{ constraints = { immediate = "1", work = "0", count = 5 } }"#);
    // ...but not forever, nor inside a forever loop.
    let e = err(r#"{ constraints = { immediate = "1", work = "0" } }"#);
    assert!(
        e.contains("thread[0].program[0].constraints: without `count` it repeats until the horizon, so a constraint must be able to take time"),
        "{e}"
    );
    let e = err(
        r#"{ loop = { body = [ { constraints = { start = "0s", work = "0.5", window = "1ns", count = 2 } } ] } }"#,
    );
    assert!(e.contains("so its body must take time"), "{e}");
}

#[test]
fn constraints_errors_name_the_key_and_what_is_expected() {
    let p = "thread[0].program[0].constraints";
    let cases: &[(&str, &str)] = &[
        (
            r#"{ constraints = "stress" }"#,
            "constraints: expected a table: { immediate = \"0.5\", window = [\"1ms\", \"1s\"], ... }, found a string",
        ),
        (
            r#"{ constraints = { imediate = "0.5" } }"#,
            "constraints.imediate: unknown key `imediate`; did you mean `immediate`?",
        ),
        (
            r#"{ constraints = { windows = "1s" } }"#,
            "constraints.windows: unknown key `windows`; did you mean `window`?",
        ),
        (
            r#"{ constraints = { immediate = 0.5 } }"#,
            "constraints.immediate: expected a probability in [0, 1] as a string, e.g. \"0.5\", found a float",
        ),
        (
            r#"{ constraints = { immediate = "1.5" } }"#,
            "constraints.immediate: `1.5` is out of range: expected a probability in [0, 1]",
        ),
        (
            r#"{ constraints = { immediate = 2 } }"#,
            "constraints.immediate: 2 is out of range: expected a probability in [0, 1]",
        ),
        (
            r#"{ constraints = { immediate = -1 } }"#,
            "constraints.immediate: -1 is out of range",
        ),
        (
            r#"{ constraints = { immediate = "50%" } }"#,
            "constraints.immediate: `50%` is not a decimal number",
        ),
        (
            r#"{ constraints = { immediate = "0.5555" } }"#,
            "constraints.immediate: `0.5555` has more than 3 decimal places",
        ),
        (
            r#"{ constraints = { immediate = true } }"#,
            "constraints.immediate: expected a probability in [0, 1] as a string, e.g. \"0.5\", found a boolean",
        ),
        (
            r#"{ constraints = { start = ["1s"] } }"#,
            "constraints.start: expected two durations [min, max], e.g. [\"260ms\", \"340ms\"], found 1 element(s)",
        ),
        (
            r#"{ constraints = { start = ["2s", "1s"] } }"#,
            "constraints.start[1]: max 1s is below min 2s: expected [min, max] with min <= max",
        ),
        (
            r#"{ constraints = { start = "3 jiffies" } }"#,
            "constraints.start: `3 jiffies` has unknown unit `jiffies`",
        ),
        (
            r#"{ constraints = { window = ["0s", "0s"] } }"#,
            "constraints.window: a deadline comes after its start: expected a window that can be more than zero",
        ),
        (
            r#"{ constraints = { window = "0ms" } }"#,
            "constraints.window: a deadline comes after its start",
        ),
        (
            r#"{ constraints = { window = true } }"#,
            "constraints.window: expected a duration (\"5ms\", or integer nanoseconds) or a distribution table, found a boolean",
        ),
        (
            r#"{ constraints = { work = ["1", "0.5"] } }"#,
            "constraints.work[1]: max 0.5 is below min 1: expected [min, max] with min <= max",
        ),
        (
            r#"{ constraints = { work = ["0.5"] } }"#,
            "constraints.work: expected two fractions [lo, hi] of the estimate, e.g. [\"0.5\", \"1\"], found 1 element(s)",
        ),
        (
            r#"{ constraints = { work = ["0.5", "1", "2"] } }"#,
            "constraints.work: expected two fractions [lo, hi] of the estimate",
        ),
        (
            r#"{ constraints = { work = [500, 1000] } }"#,
            "constraints.work[0]: 500 is out of range: expected a fraction of the estimate as a string, at most \"100\"",
        ),
        (
            r#"{ constraints = { work = ["0.5", 1.0] } }"#,
            "constraints.work[1]: expected a fraction of the estimate as a string, at most \"100\", e.g. \"0.5\", found a float",
        ),
        (
            r#"{ constraints = { work = ["-0.5", "1"] } }"#,
            "constraints.work[0]: `-0.5` is not a decimal number",
        ),
        (
            r#"{ constraints = { work = "100.001" } }"#,
            "constraints.work: `100.001` is out of range",
        ),
        (
            r#"{ constraints = { work = "99999999999999999999" } }"#,
            "constraints.work: `99999999999999999999` is out of range",
        ),
        (
            r#"{ constraints = { work = { lo = "0.5" } } }"#,
            "constraints.work: expected a fraction of the estimate as a string, at most \"100\", e.g. \"0.5\", found a table",
        ),
        (
            r#"{ constraints = { gap = -5 } }"#,
            "constraints.gap: -5 is negative",
        ),
        (
            r#"{ constraints = { count = -1 } }"#,
            "constraints.count: -1 is out of range: expected an integer >= 0",
        ),
        (
            r#"{ constraints = { count = "10" } }"#,
            "constraints.count: expected an integer >= 0, found a string",
        ),
    ];
    for (op, want) in cases {
        let e = err(op);
        let want = format!("{p}{}", want.strip_prefix("constraints").unwrap());
        assert!(e.contains(&want), "{op}\n got: {e}\nwant: {want}");
        assert!(e.starts_with("test.toml:"), "{e}");
    }
    let e = err("{ constraint = {} }");
    assert!(
        e.contains("unknown operation `constraint`; did you mean `constraints`?"),
        "{e}"
    );
}

#[test]
fn hints_give_an_example_and_the_keys() {
    let hint = |op: &str| parse(&with_op(op)).unwrap_err().hint().map(str::to_string);
    let h = hint(r#"{ constraints = 1 }"#).unwrap();
    assert!(
        h.contains("{ constraints = {} }") && h.contains("work = [\"0.5\", \"1\"]"),
        "{h}"
    );
    let h = hint(r#"{ constraints = { typo = 1 } }"#).unwrap();
    assert!(
        h.contains("immediate, start, window, work, gap, count"),
        "{h}"
    );
    let h = hint(r#"{ constraints = { immediate = 0.5 } }"#).unwrap();
    assert!(h.contains("immediate = \"0.5\""), "{h}");
    let h = hint(r#"{ constraints = { work = [0.5, 1] } }"#).unwrap();
    assert!(h.contains("work = [\"0.5\", \"1\"]"), "{h}");
    let h = hint(r#"{ constraints = { work = [500, 1000] } }"#).unwrap();
    assert!(h.contains("above 1 a constraint overruns"), "{h}");
    let h = hint(r#"{ constraints = { immediate = "1", work = "0" } }"#).unwrap();
    assert!(h.contains("e.g."), "{h}");
}

/// Every edge value in every place of a `constraints` gives a scenario or a
/// well-formed error, never a panic.
#[test]
fn no_value_in_any_place_panics() {
    const VALUES: &[&str] = &[
        "0",
        "-1",
        "1",
        "2",
        "101",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
        "1.5",
        "nan",
        "inf",
        "true",
        "\"\"",
        "\"0\"",
        "\"1\"",
        "\"0ms\"",
        "\"1ns\"",
        "\"18446744073709551615ns\"",
        "\"99999999999999s\"",
        "\"0.9999\"",
        "\"100.000\"",
        "\"4294967.295\"",
        "\"4294968\"",
        "\"0.\"",
        "\".\"",
        "\"..\"",
        "\"é\"",
        "[]",
        "[\"1ms\"]",
        "[\"0.5\"]",
        "[\"1ms\", \"2ms\", \"3ms\"]",
        "[\"0\", \"0\"]",
        "[\"100\", \"100\"]",
        "[1.5, 2]",
        "[\"18446744073709551615ns\", \"18446744073709551615ns\"]",
        "{}",
        "{ uniform = [\"0ns\", \"0ns\"] }",
        "{ exponential = \"1ms\" }",
        "{ normal = \"1ms\", sd = \"1ms\" }",
    ];
    const KEYS: &[&str] = &["immediate", "start", "window", "work", "gap", "count"];
    let base = r#"{ immediate = "0.5", start = ["0s", "1s"], window = ["1ms", "1s"], work = ["0.5", "1"], gap = "0s", count = 3 }"#;
    let mut texts = Vec::new();
    for v in VALUES {
        texts.push(with_op(&format!("{{ constraints = {v} }}")));
        texts.push(with_op(&format!(
            "{{ loop = {{ body = [ {{ constraints = {{ work = {v}, immediate = \"1\" }} }} ] }} }}"
        )));
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
            texts.push(with_op(&format!("{{ constraints = {op} }}")));
            // The same without `count`: the take-time check runs too.
            let op = op.replace(", count = 3", "");
            texts.push(with_op(&format!("{{ constraints = {op} }}")));
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
