//! `[[interrupt]]` tables: what parses into what, the errors (each naming
//! the file, the key and what was expected), and that no value in their
//! places makes the parser panic.

mod common;

use common::{parse, BASE};
use hsched_core::{Duration, Instant};
use hsched_model::{Action, Dist, InterruptSpec};
use proptest::prelude::*;

/// `BASE` (two CPUs) with a thread `bh` waiting on semaphore `nic`, and
/// `table` appended.
fn with(table: &str) -> String {
    format!(
        "{BASE}\n[[thread]]\nname = \"bh\"\nprogram = [ {{ loop = {{ body = [ {{ wait = \"nic\" }}, {{ run = \"30us\" }} ] }} }} ]\n\n{table}\n"
    )
}

fn sources(table: &str) -> Vec<InterruptSpec> {
    let s = parse(&with(table)).unwrap_or_else(|e| panic!("{table}: {e}"));
    s.script
        .iter()
        .filter_map(|e| match &e.action {
            Action::Interrupt(i) => {
                assert_eq!(e.at, Instant::ZERO);
                Some(i.clone())
            }
            _ => None,
        })
        .collect()
}

fn error(table: &str) -> (String, String) {
    match parse(&with(table)) {
        Ok(_) => panic!("expected an error for {table}"),
        Err(e) => (e.key().to_string(), e.to_string()),
    }
}

#[test]
fn sources_parse() {
    let s = sources(
        "[[interrupt]]\nname = \"clock\"\nevery = \"976562ns\"\nduration = \"5us\"\n\n\
         [[interrupt]]\nname = \"disk\"\nevery = { exponential = \"30ms\" }\n\
         duration = { uniform = [\"10us\", \"500us\"] }\ncpus = [1]\noffset = \"2ms\"\nsignal = \"nic\"",
    );
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].name, "clock");
    assert_eq!(s[0].cpus, vec![0, 1], "every CPU by default");
    assert_eq!(s[0].every, Dist::Fixed(Duration(976_562)));
    assert_eq!(s[0].duration, Dist::Fixed(Duration::from_micros(5)));
    assert_eq!(s[0].offset, Duration::ZERO);
    assert_eq!(s[0].signal, None);
    assert_eq!(s[1].cpus, vec![1]);
    assert_eq!(
        s[1].every,
        Dist::Exponential {
            mean: Duration::from_millis(30),
            max: Duration::MAX
        }
    );
    assert_eq!(s[1].offset, Duration::from_millis(2));
    assert_eq!(s[1].signal.as_deref(), Some("nic"));
}

#[test]
fn an_interrupt_signal_counts_as_the_semaphores_signaller() {
    // Without the source, `bh` waits on a semaphore nothing signals.
    let e = parse(&with("")).unwrap_err().to_string();
    assert!(e.contains("nothing signals it"), "{e}");
}

#[test]
fn errors_name_the_key_and_what_was_expected() {
    let t = |rest: &str| format!("[[interrupt]]\nname = \"x\"\n{rest}");
    let cases: &[(&str, &str, &str)] = &[
        (&t("duration = \"5us\""), "interrupt[0]", "missing key `every`"),
        (&t("every = \"1ms\""), "interrupt[0]", "missing key `duration`"),
        (&t("every = \"0ns\"\nduration = \"1us\""), "interrupt[0].every", "never let time pass"),
        (&t("every = \"1ms\"\nduration = \"1ms\""), "interrupt[0].duration", "shorter than `every`"),
        (&t("every = \"1ms\"\nduration = \"1us\"\ncpus = [2]"), "interrupt[0].cpus[0]", "0..=1"),
        (&t("every = \"1ms\"\nduration = \"1us\"\ncpus = [0, 0]"), "interrupt[0].cpus[1]", "listed twice"),
        (&t("every = \"1ms\"\nduration = \"1us\"\ncpus = []"), "interrupt[0].cpus", "an empty list"),
        (&t("every = \"1ms\"\nduration = \"1us\"\nsignal = \"nc\""), "interrupt[0].signal", "did you mean `nic`"),
        (&t("every = \"1ms\"\nduration = \"1us\"\nperiod = \"1ms\""), "interrupt[0].period", "unknown key"),
        (&t("every = { poisson = \"1ms\" }\nduration = \"1us\""), "interrupt[0].every", "unknown distribution"),
        (&t("every = \"1ms\"\nduration = \"fast\""), "interrupt[0].duration", "duration"),
        (&t("every = \"1ms\"\nduration = \"1us\"\noffset = -1"), "interrupt[0].offset", "duration"),
        ("[[interrupt]]\nevery = \"1ms\"\nduration = \"1us\"", "interrupt[0]", "missing key `name`"),
        (
            "[[interrupt]]\nname = \"x\"\nevery = \"1ms\"\nduration = \"1us\"\n[[interrupt]]\nname = \"x\"\nevery = \"1ms\"\nduration = \"1us\"",
            "interrupt[1].name",
            "declared twice",
        ),
    ];
    for (table, key, says) in cases {
        let (k, msg) = error(table);
        assert!(
            k.starts_with(key),
            "{table}: key {k}, expected {key}: {msg}"
        );
        assert!(msg.contains(says), "{table}: {msg}");
        assert!(msg.contains("test.toml"), "{msg}");
    }
    let e = parse(&format!("interrupt = 3\n{BASE}")).unwrap_err();
    assert_eq!(e.key(), "interrupt");
    assert!(e.to_string().contains("[[interrupt]] tables"), "{e}");
}

/// Values of every shape in the table's keys.
const VALUES: &[&str] = &[
    "\"1ms\"",
    "\"0ns\"",
    "0",
    "1",
    "-5",
    "\"\"",
    "\"x\"",
    "\"nic\"",
    "[]",
    "[0]",
    "[1, 0]",
    "[0, 9]",
    "[\"a\"]",
    "{ exponential = \"1ms\" }",
    "{ exponential = \"0ns\" }",
    "{ uniform = [\"0ns\", \"0ns\"] }",
    "{ uniform = [\"2us\", \"1us\"] }",
    "{ normal = \"1ms\", sd = \"1ms\" }",
    "{ }",
    "true",
    "1.5",
    "\"18446744073709551615ns\"",
    "\"99999999999999999999s\"",
];
const KEYS: &[&str] = &[
    "name", "cpus", "every", "offset", "duration", "signal", "what",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Any values in any of the keys: a scenario or an error naming a key
    /// under `interrupt`, never a panic.
    #[test]
    fn any_values_parse_or_fail_cleanly(
        picks in prop::collection::vec((0..KEYS.len(), 0..VALUES.len()), 0..7)
    ) {
        let mut table = String::from("[[interrupt]]\n");
        let mut seen = std::collections::BTreeSet::new();
        for (k, v) in picks {
            if seen.insert(k) {
                table.push_str(&format!("{} = {}\n", KEYS[k], VALUES[v]));
            }
        }
        match parse(&with(&table)) {
            Ok(s) => {
                let n = s.script.iter().filter(|e| matches!(e.action, Action::Interrupt(_))).count();
                prop_assert_eq!(n, 1);
            }
            Err(e) => {
                prop_assert!(!e.message().is_empty());
                // Without a source that signals `nic`, the thread waiting
                // on it is an error of its own (the scenario's, not the
                // table's).
                let unsignalled = !table.contains("signal = \"nic\"")
                    && e.message().contains("semaphore `nic` is waited on but nothing signals it");
                prop_assert!(
                    e.key().starts_with("interrupt") || unsignalled,
                    "{}: {}",
                    table,
                    e
                );
            }
        }
    }
}
