//! The semaphore operations: `signal`, `wait` and `sporadic` (jobs
//! released by signals): what parses into what, the cross-thread check that
//! every semaphore waited on is signalled somewhere, the errors, and no
//! value in their places panics.

mod common;

use common::{parse, BASE};
use hsched_core::Duration;
use hsched_model::{Dist, Op};
use proptest::prelude::*;

/// `BASE` plus a driver that signals `go` and thread `a`'s first operation
/// replaced by `op`.
fn with_driver(op: &str) -> String {
    let text = BASE.replace("{ run = \"5ms\" }", op);
    format!(
        "{text}\n[[thread]]\nname = \"driver\"\nprogram = [ {{ run = \"1ms\" }}, {{ signal = \"go\" }} ]\n"
    )
}

fn first_op(op: &str) -> Op {
    match parse(&with_driver(op)) {
        Ok(s) => s.threads[0].program.ops[0].clone(),
        Err(e) => panic!("{op}: {e}"),
    }
}

fn error(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn signal_wait_and_sporadic_parse() {
    assert!(matches!(first_op("{ wait = \"go\" }"), Op::Wait(ref n) if n == "go"));
    let s = parse(&with_driver("{ wait = \"go\" }")).unwrap();
    assert!(matches!(s.threads[1].program.ops[1], Op::Signal(ref n) if n == "go"));
    match first_op("{ sporadic = { on = \"go\", deadline = \"7ms\", run = \"2500us\" } }") {
        Op::Sporadic {
            on,
            deadline,
            jobs: None,
            body,
        } => {
            assert_eq!(on, "go");
            assert_eq!(deadline, Duration::from_millis(7));
            assert!(
                matches!(&body[..], [Op::Run(Dist::Fixed(d))] if *d == Duration::from_micros(2500))
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        first_op("{ sporadic = { on = \"go\", deadline = \"7ms\", jobs = 3, body = [ { yield = true } ] } }"),
        Op::Sporadic { jobs: Some(3), .. }
    ));
}

#[test]
fn errors_name_the_place_and_what_was_expected() {
    let cases = [
        (
            BASE.replace("{ run = \"5ms\" }", "{ wait = \"og\" }")
                + "\n[[thread]]\nname = \"d\"\nprogram = [ { signal = \"go\" }, { run = \"1ms\" } ]\n",
            "thread[0].program[0].wait: semaphore `og` is waited on but nothing signals it; did you mean `go`?",
        ),
        (
            BASE.replace(
                "{ run = \"5ms\" }",
                "{ sporadic = { on = \"never\", deadline = \"1ms\", run = \"1ms\" } }",
            ),
            "thread[0].program[0].sporadic.on",
        ),
        (
            with_driver("{ sporadic = { deadline = \"7ms\", run = \"1ms\" } }"),
            "missing key `on`",
        ),
        (
            with_driver("{ sporadic = { on = \"go\", run = \"1ms\" } }"),
            "missing key `deadline`",
        ),
        (
            with_driver("{ sporadic = { on = \"go\", deadline = \"0ms\", run = \"1ms\" } }"),
            "sporadic.deadline",
        ),
        (
            with_driver("{ sporadic = { on = \"go\", deadline = \"1ms\", body = [ { yield = true } ] } }"),
            "each job must take time",
        ),
        (
            with_driver("{ sporadic = { on = \"go\", deadline = \"1ms\", run = \"1ms\", period = \"2ms\" } }"),
            "period",
        ),
        (with_driver("{ wait = 3 }"), "thread[0].program[0].wait"),
    ];
    for (text, want) in cases {
        let e = error(&text);
        assert!(e.contains(want), "expected {want:?} in:\n{e}");
    }
}

proptest! {
    /// Whatever is written in a semaphore operation, parsing answers with a
    /// scenario or an error, never a panic.
    #[test]
    fn arbitrary_semaphore_text_never_panics(
        name in "[a-z]{0,4}",
        other in "[a-z]{0,4}",
        deadline in "[0-9a-z]{0,5}",
        jobs in -2i64..3,
        body in prop_oneof![Just("run = \"1ms\""), Just("body = [ { yield = true } ]"), Just("body = []"), Just("")],
    ) {
        let op = format!(
            "{{ sporadic = {{ on = \"{name}\", deadline = \"{deadline}\", jobs = {jobs}, {body} }} }}, {{ wait = \"{other}\" }}"
        );
        let _ = parse(&with_driver(&op));
        let _ = parse(&BASE.replace("{ run = \"5ms\" }", &format!("{{ signal = \"{other}\" }}, {{ wait = \"{name}\" }}")));
    }
}
