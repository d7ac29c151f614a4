//! The `[[mutex]]` tables: a mutex's protocol, what parses into what, the
//! errors (each naming the key and what was expected), and no value in
//! their places panics.

mod common;

use common::{parse, BASE};
use hsched_core::{Instant, MutexProtocol};
use hsched_model::{Action, Scenario};
use proptest::prelude::*;

/// `BASE` with thread `a` holding `m` around its first run, then `tables`.
fn with_tables(tables: &str) -> String {
    let text = BASE.replace(
        "{ run = \"5ms\" }",
        "{ lock = \"m\" }, { run = \"5ms\" }, { unlock = \"m\" }",
    );
    format!("{text}\n{tables}\n")
}

fn declared(s: &Scenario) -> Vec<(String, MutexProtocol)> {
    s.script
        .iter()
        .filter_map(|e| match &e.action {
            Action::Mutex(m) => {
                assert_eq!(e.at, Instant::ZERO);
                Some((m.name.clone(), m.protocol))
            }
            _ => None,
        })
        .collect()
}

fn error(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_mutex_table_sets_the_protocol_and_none_is_the_default() {
    let s = parse(&with_tables(
        "[[mutex]]\nname = \"m\"\nprotocol = \"inherit\"",
    ))
    .unwrap();
    assert_eq!(declared(&s), [("m".to_string(), MutexProtocol::Inherit)]);
    let s = parse(&with_tables("[[mutex]]\nname = \"m\"")).unwrap();
    assert_eq!(declared(&s), [("m".to_string(), MutexProtocol::None)]);
    let s = parse(&with_tables("")).unwrap();
    assert!(declared(&s).is_empty());
}

#[test]
fn errors_name_the_place_and_what_was_expected() {
    let cases = [
        (
            with_tables("[[mutex]]\nname = \"n\""),
            "mutex[0].name: mutex `n` is declared but no program locks it; did you mean `m`?",
        ),
        (
            with_tables("[[mutex]]\nname = \"m\"\nprotocol = \"inherits\""),
            "mutex[0].protocol: unknown protocol `inherits`",
        ),
        (
            with_tables("[[mutex]]\nname = \"m\"\nprotocol = 1"),
            "mutex[0].protocol",
        ),
        (
            with_tables("[[mutex]]\nname = \"m\"\n[[mutex]]\nname = \"m\""),
            "mutex[1].name: mutex `m` is declared twice",
        ),
        (
            with_tables("[[mutex]]\nprotocol = \"inherit\""),
            "missing key `name`",
        ),
        (
            with_tables("[[mutex]]\nname = \"m\"\nceiling = 3"),
            "mutex[0]",
        ),
        (with_tables("mutex = 3"), "mutex"),
    ];
    for (text, want) in cases {
        let e = error(&text);
        assert!(e.contains(want), "expected {want:?} in:\n{e}");
    }
}

proptest! {
    /// Whatever is written in a mutex table, parsing answers with a
    /// scenario or an error, never a panic.
    #[test]
    fn arbitrary_mutex_tables_never_panic(
        name in "[a-z]{0,3}",
        protocol in "[a-z]{0,8}",
        extra in prop_oneof![Just(""), Just("protocol = 2"), Just("x = 1"), Just("name = \"m\"")],
    ) {
        let _ = parse(&with_tables(&format!(
            "[[mutex]]\nname = \"{name}\"\nprotocol = \"{protocol}\"\n{extra}"
        )));
        let _ = parse(&with_tables(&format!("[[mutex]]\n{extra}")));
    }
}
