//! The `frames` operation (a free-running frame loop with a maximum gap
//! between frames): what parses into what, what is refused with which
//! message, and no value in any of its places panics (a property test).

mod common;

use common::{first_op, op_error as err, parse, with_op};
use hsched_core::Duration;
use hsched_model::{Dist, Op};
use proptest::prelude::*;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

#[test]
fn run_is_shorthand_for_a_one_burst_frame() {
    match first_op("{ frames = { max_gap = \"33ms\", run = \"10ms\" } }") {
        Op::Frames {
            max_gap,
            count: None,
            body,
        } => {
            assert_eq!(max_gap, ms(33));
            assert!(matches!(&body[..], [Op::Run(Dist::Fixed(d))] if *d == ms(10)));
        }
        other => panic!("{other:?}"),
    }
    match first_op(
        "{ frames = { max_gap = \"20ms\", count = 4, body = [ { run = \"1ms\" }, { sleep = \"2ms\" } ] } }",
    ) {
        Op::Frames {
            max_gap,
            count: Some(4),
            body,
        } => {
            assert_eq!(max_gap, ms(20));
            assert_eq!(body.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    // Frames take time, so a forever loop may rest on them.
    assert!(matches!(
        first_op("{ loop = { body = [ { frames = { max_gap = \"1ms\", run = \"1ms\", count = 2 } } ] } }"),
        Op::Loop { count: None, .. }
    ));
}

#[test]
fn mistakes_are_named() {
    for (op, want) in [
        (
            "{ frames = { run = \"10ms\" } }",
            "thread[0].program[0].frames: missing key `max_gap`",
        ),
        (
            "{ frames = { max_gap = \"0ms\", run = \"10ms\" } }",
            "thread[0].program[0].frames.max_gap: expected a duration greater than zero",
        ),
        (
            "{ frames = { max_gap = \"33ms\" } }",
            "thread[0].program[0].frames: missing key `body`",
        ),
        (
            "{ frames = { max_gap = \"33ms\", run = \"1ms\", body = [ { run = \"1ms\" } ] } }",
            "thread[0].program[0].frames.run: give either `body` or `run`",
        ),
        (
            "{ frames = { max_gap = \"33ms\", run = \"0ms\" } }",
            "frames without `count` repeat forever, so a frame must take time",
        ),
        (
            "{ frames = { max_gap = \"33ms\", run = \"1ms\", count = -2 } }",
            "thread[0].program[0].frames.count: -2 is out of range",
        ),
        (
            "{ frames = { max_gap = \"33ms\", run = \"1ms\", gap = \"1ms\" } }",
            "thread[0].program[0].frames.gap: unknown key `gap`",
        ),
        (
            "{ frames = \"33ms\" }",
            "thread[0].program[0].frames: expected a table",
        ),
    ] {
        let e = err(op);
        assert!(e.contains(want), "{op}: {e}");
    }
    // A zero-time frame is fine when the loop ends.
    assert!(matches!(
        first_op("{ frames = { max_gap = \"33ms\", run = \"0ms\", count = 3 } }"),
        Op::Frames { count: Some(3), .. }
    ));
}

const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "9223372036854775807",
    "1.5",
    "true",
    "\"\"",
    "\"0ms\"",
    "\"18446744073709551615ns\"",
    "\"99999999999999s\"",
    "\"é\"",
    "[]",
    "[ { run = \"1ms\" } ]",
    "[ { yield = true } ]",
    "{}",
    "{ uniform = [\"0ns\", \"0ns\"] }",
];

const KEYS: &[&str] = &["max_gap", "run", "count"];

proptest! {
    /// Any value in any place of a `frames` gives a scenario or a
    /// well-formed error naming its place, never a panic.
    #[test]
    fn no_value_in_any_place_panics(key in 0..KEYS.len() + 2, value in 0..VALUES.len()) {
        let v = VALUES[value];
        let op = match KEYS.get(key) {
            Some(k) => {
                let mut parts = vec![
                    ("max_gap", "\"33ms\""),
                    ("run", "\"10ms\""),
                    ("count", "5"),
                ];
                for p in &mut parts {
                    if p.0 == *k {
                        p.1 = v;
                    }
                }
                let inner: Vec<String> = parts.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!("{{ frames = {{ {} }} }}", inner.join(", "))
            }
            None if key == KEYS.len() => format!("{{ frames = {v} }}"),
            None => format!("{{ frames = {{ max_gap = \"33ms\", body = {v} }} }}"),
        };
        let text = with_op(&op);
        for r in [
            parse(&text).map(|_| ()),
            hsched_scenario::parse(&text, "p.toml").map(|_| ()),
        ] {
            if let Err(e) = r {
                prop_assert!(e.line() >= 1 && e.column() >= 1, "{}", e);
                prop_assert!(!e.message().is_empty());
                prop_assert!(e.to_string().contains("frames"), "{}", e);
            }
        }
    }
}
