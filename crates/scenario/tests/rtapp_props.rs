//! Property tests of the rt-app importer: arbitrary json-like text (random
//! and mutated real files) never makes it panic, and every structurally
//! valid rt-app task tree imports into TOML the scenario parser accepts and
//! the simulator runs.

use hsched_scenario::import::rtapp::{import, Options};
use proptest::prelude::*;

/// A small valid rt-app file, mutated below.
const SEED_FILE: &str = r#"{
  /* comment */ "tasks": {
    "a": { "instance": 2, "loop": -1, "phases": {
      "p0": { "loop": 3, "run0": 1000, "timer": { "ref": "unique", "period": 5000 } },
      "p1": { "lock": "m", "wait": { "ref": "q", "mutex": "m" }, "unlock": "m", "sleep": 10, },
    } },
    "b": { "policy": "SCHED_DEADLINE", "dl-runtime": 100, "dl-period": 1000, "run": 50, "signal": "q", "suspend", "resume": "b" },
  },
  "global": { "duration": 1, "default_policy": "SCHED_OTHER" }
}"#;

fn no_panic(text: &str) {
    // Either outcome is fine; a panic fails the property.
    if let Ok(i) = import(text, "p.json", &Options::default()) {
        assert!(!i.toml.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_json_like_text_never_panics(text in r#"[{}\[\]:,"a-z0-9 \n/*\-.\\]{0,200}"#) {
        no_panic(&text);
    }

    #[test]
    fn mutated_real_files_never_panic(
        edits in proptest::collection::vec((0usize..10_000, 0usize..4, "[{}\\[\\]:,\"a-z0-9 /*-]"), 1..6)
    ) {
        let mut text: Vec<char> = SEED_FILE.chars().collect();
        for (at, how, with) in edits {
            let at = at % (text.len() + 1);
            let c = with.chars().next().unwrap_or(' ');
            match how {
                0 if at < text.len() => { text.remove(at); }
                1 => text.insert(at, c),
                2 if at < text.len() => text[at] = c,
                _ => text.truncate(at),
            }
        }
        no_panic(&text.into_iter().collect::<String>());
    }
}

/// One event, as JSON text; names come from small pools so that waits,
/// signals, locks and timers meet each other.
fn event() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["x", "y", "a", "b", "m"]);
    prop_oneof![
        (-5i64..20_000).prop_map(|d| format!("\"run\": {d}")),
        (0i64..20_000).prop_map(|d| format!("\"runtime\": {d}")),
        (-5i64..20_000).prop_map(|d| format!("\"sleep\": {d}")),
        (name.clone(), -1i64..20_000, any::<bool>()).prop_map(|(n, p, abs)| format!(
            "\"timer\": {{ \"ref\": \"{n}\", \"period\": {p}, \"mode\": \"{}\" }}",
            if abs { "absolute" } else { "relative" }
        )),
        name.clone().prop_map(|n| format!("\"lock\": \"{n}\"")),
        name.clone().prop_map(|n| format!("\"unlock\": \"{n}\"")),
        (name.clone(), name.clone())
            .prop_map(|(c, m)| format!("\"wait\": {{ \"ref\": \"{c}\", \"mutex\": \"{m}\" }}")),
        (name.clone(), name.clone())
            .prop_map(|(c, m)| format!("\"sync\": {{ \"ref\": \"{c}\", \"mutex\": \"{m}\" }}")),
        name.clone().prop_map(|n| format!("\"signal\": \"{n}\"")),
        name.clone().prop_map(|n| format!("\"broad\": \"{n}\"")),
        name.clone().prop_map(|n| format!("\"suspend\": \"{n}\"")),
        Just("\"suspend\"".to_string()),
        name.clone().prop_map(|n| format!("\"resume\": \"{n}\"")),
        Just("\"yield\": \"\"".to_string()),
        name.clone().prop_map(|n| format!("\"barrier\": \"{n}\"")),
        name.clone().prop_map(|n| format!("\"fork\": \"{n}\"")),
        Just("\"mem\": 100".to_string()),
        name.clone().prop_map(|n| format!("\"sem_post\": \"{n}\"")),
        name.prop_map(|n| format!("\"sem_wait\": \"{n}\"")),
    ]
}

fn events() -> impl Strategy<Value = String> {
    proptest::collection::vec(event(), 1..6).prop_map(|e| e.join(", "))
}

fn sched() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        (-25i64..25).prop_map(|p| format!("\"priority\": {p}, ")),
        (0i64..120).prop_map(|p| format!("\"policy\": \"SCHED_FIFO\", \"priority\": {p}, ")),
        (0i64..120).prop_map(|p| format!("\"policy\": \"SCHED_RR\", \"priority\": {p}, ")),
        Just("\"policy\": \"SCHED_IDLE\", ".to_string()),
        (0i64..5000, 0i64..20_000, 0i64..20_000).prop_map(|(r, p, d)| format!(
            "\"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": {r}, \"dl-period\": {p}, \"dl-deadline\": {d}, "
        )),
    ]
}

fn task() -> impl Strategy<Value = String> {
    let loop_key = prop::option::of(-2i64..4)
        .prop_map(|l| l.map(|l| format!("\"loop\": {l}, ")).unwrap_or_default());
    let phases =
        proptest::collection::vec((loop_key.clone(), sched(), events()), 1..4).prop_map(|ps| {
            let body: Vec<String> = ps
                .iter()
                .enumerate()
                .map(|(i, (l, s, e))| format!("\"p{i}\": {{ {l}{s}{e} }}"))
                .collect();
            format!("\"phases\": {{ {} }}", body.join(", "))
        });
    (
        0i64..3,
        0i64..3000,
        loop_key,
        sched(),
        prop_oneof![events(), phases],
        prop::option::of(prop::sample::select(vec!["[0]", "[1, 2]", "[5]"])),
    )
        .prop_map(|(inst, delay, l, s, body, cpus)| {
            let cpus = cpus.map(|c| format!("\"cpus\": {c}, ")).unwrap_or_default();
            format!("{{ \"instance\": {inst}, \"delay\": {delay}, {l}{s}{cpus}{body} }}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn valid_task_trees_import_into_toml_that_parses(
        tasks in proptest::collection::vec(task(), 1..5),
        duration in prop_oneof![Just(-1i64), 1i64..5],
    ) {
        let body: Vec<String> = tasks.iter().enumerate().map(|(i, t)| format!("\"t{i}\": {t}")).collect();
        let text = format!("{{ \"tasks\": {{ {} }}, \"global\": {{ \"duration\": {duration} }} }}", body.join(", "));
        match import(&text, "gen.json", &Options::default()) {
            Ok(imported) => {
                let scn = match hsched_scenario::parse(&imported.toml, "gen.toml") {
                    Ok(scn) => scn,
                    Err(e) => panic!("{e}\n--- rt-app:\n{text}\n--- TOML:\n{}", imported.toml),
                };
                // It runs too, unless its deadline reservations exceed the
                // CPU (warned: the analysis refuses those before a run).
                if !imported.warnings.iter().any(|w| w.message.contains("more than one CPU")) {
                    let opts = hsched_sim::SimOptions {
                        horizon: Some(hsched_core::Duration::from_millis(20)),
                        ..Default::default()
                    };
                    if let Err(e) = hsched_sim::run(&scn, &opts) {
                        panic!("{e}\n--- rt-app:\n{text}\n--- TOML:\n{}", imported.toml);
                    }
                }
            }
            // The only refusal of a valid tree: no task makes a thread.
            Err(e) => prop_assert!(e.message.contains("no task creates a thread"), "{e}\n{text}"),
        }
    }
}

/// An rt-app file whose global duration and one task's run, sleep and
/// SCHED_DEADLINE runtime are the given integers.
fn with_durations(duration: i64, run: i64, sleep: i64, runtime: i64) -> String {
    format!(
        r#"{{ "global": {{ "duration": {duration} }},
  "tasks": {{ "a": {{ "run": {run}, "sleep": {sleep} }},
             "d": {{ "policy": "SCHED_DEADLINE", "dl-runtime": {runtime}, "dl-period": {runtime}, "run": 1 }} }} }}"#
    )
}

/// Integers across the whole range, with the edges of what fits hsched's
/// 64-bit nanoseconds and horizon bound well represented.
fn any_duration() -> impl Strategy<Value = i64> {
    prop_oneof![
        -5i64..100_000,
        Just(86_400),
        Just(86_401),
        Just((u64::MAX / 1000) as i64),
        Just((u64::MAX / 1000) as i64 + 1),
        Just(i64::MAX),
        any::<i64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever durations the file gives, the import either refuses it
    /// naming the key, or writes TOML the scenario parser accepts: an
    /// error in a scenario run from an rt-app file is never about lines of
    /// TOML the user did not write.
    #[test]
    fn imported_durations_always_parse_or_are_refused_by_key(
        duration in any_duration(),
        run in any_duration(),
        sleep in any_duration(),
        runtime in any_duration(),
    ) {
        let text = with_durations(duration, run, sleep, runtime);
        match import(&text, "d.json", &Options::default()) {
            Ok(imported) => {
                let parsed = hsched_scenario::parse(&imported.toml, "d.toml");
                prop_assert!(parsed.is_ok(), "{text}\n{:?}", parsed.err());
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("d.json:"), "{msg}");
                prop_assert!(
                    msg.contains("MAX_HORIZON") || msg.contains("MAX_DURATION_US") || msg.contains("dl-"),
                    "{msg}"
                );
            }
        }
    }
}
