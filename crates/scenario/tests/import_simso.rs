//! `import::simso`: a SimSo configuration saved by SimSo itself (the
//! fixture was written by SimSo 0.8.5's `Configuration.save`) imported to
//! scenario TOML (golden), which the scenario parser accepts; what cannot
//! be imported is refused with the line and element; arbitrary input never
//! panics.

use hsched_scenario::import::simso::{import, ImportError};
use proptest::prelude::*;

const FIXTURE: &str = include_str!("fixtures/simso/edf-three-tasks.xml");

fn errors(text: &str) -> ImportError {
    import(text, "t.xml").expect_err("refused")
}

fn wrap(sched: &str, procs: &str, tasks: &str) -> String {
    format!(
        "<?xml version=\"1.0\" ?>\n<simulation duration=\"1000000\" cycles_per_ms=\"1000\" etm=\"wcet\">\n\
         <sched class=\"simso.schedulers.{sched}\"/>\n<processors>{procs}</processors>\n<tasks>\n{tasks}\n</tasks>\n</simulation>\n"
    )
}

const ONE_CPU: &str = "<processor name=\"CPU 1\" id=\"1\"/>";

fn periodic(name: &str, period: &str, wcet: &str) -> String {
    format!(
        "<task name=\"{name}\" id=\"1\" task_type=\"Periodic\" abort_on_miss=\"no\" period=\"{period}\" \
         deadline=\"{period}\" WCET=\"{wcet}\"/>"
    )
}

#[test]
fn simsos_own_file_imports_to_a_scenario_that_parses() {
    let out = import(FIXTURE, "edf-three-tasks.xml").unwrap();
    insta::assert_snapshot!("simso_edf_three_tasks", out.toml);
    assert!(
        out.notes.iter().any(|n| n.contains("abort_on_miss")),
        "{:?}",
        out.notes
    );
    let scn = hsched_scenario::parse(&out.toml, "edf-three-tasks.toml").unwrap();
    assert_eq!(scn.machine.cpus, 1);
    assert_eq!(scn.horizon.as_nanos(), 100_000_000);
    let names: Vec<&str> = scn.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["video", "audio", "log", "log-releases"]);
    assert_eq!(scn.schedulers[0].policy, "edf");
}

#[test]
fn schedulers_map_to_policies_and_mono_uses_one_cpu() {
    let two = format!("{ONE_CPU}<processor name=\"CPU 2\" id=\"2\"/>");
    let t = periodic("a", "10", "2");
    let rm = import(&wrap("RM_mono", &two, &t), "t.xml").unwrap();
    assert!(rm.toml.contains("policy = \"rm\"") && rm.toml.contains("cpus = 1"));
    assert!(rm
        .notes
        .iter()
        .any(|n| n.contains("first of the 2 processors")));
    assert!(rm
        .toml
        .contains("at = { period = \"10ms\", wcet = \"2ms\" }"));
    let global = import(&wrap("EDF", &two, &t), "t.xml").unwrap();
    assert!(global.toml.contains("policy = \"edf\"") && global.toml.contains("cpus = 2"));
    assert!(global.notes.is_empty(), "{:?}", global.notes);
    let fp = wrap(
        "FP",
        ONE_CPU,
        "<task name=\"a\" id=\"1\" abort_on_miss=\"no\" period=\"10\" deadline=\"10\" WCET=\"2\" priority=\"7\"/>",
    );
    assert!(import(&fp, "t.xml")
        .unwrap()
        .toml
        .contains("at = { prio = 7 }"));
}

#[test]
fn what_has_no_equivalent_is_refused_with_line_and_element() {
    let text = wrap(
        "LLF",
        "<processor name=\"CPU 1\" id=\"1\" speed=\"0.5\"/>",
        &format!(
            "{}\n<task name=\"chain\" id=\"2\" task_type=\"APeriodic\" period=\"0\" deadline=\"5\" WCET=\"x\"/>",
            periodic("ok", "10", "2")
        ),
    );
    let e = errors(&text);
    let all = e.to_string();
    for needle in [
        "t.xml:3:",
        "<sched> attribute `class`: scheduler `simso.schedulers.LLF` has no hsched equivalent (supported: EDF_mono, EDF, RM_mono, RM, FP)",
        "<processor name=\"CPU 1\"> attribute `speed`",
        "t.xml:7:",
        "<task name=\"chain\"> attribute `WCET`: `x`: expected a non-negative decimal number",
        "<task name=\"chain\"> attribute `task_type`: `APeriodic` tasks have no hsched equivalent",
    ] {
        assert!(all.contains(needle), "`{needle}` in:\n{all}");
    }
    assert_eq!(e.problems.len(), 4, "{all}");
}

#[test]
fn times_that_are_not_whole_nanoseconds_or_xml_that_is_broken_are_refused() {
    let e = errors(&wrap(
        "EDF_mono",
        ONE_CPU,
        &periodic("a", "10", "0.0000001"),
    ));
    assert!(
        e.to_string()
            .contains("`WCET`: `0.0000001`: not a whole number of nanoseconds"),
        "{e}"
    );
    let e = errors("<simulation><tasks></simulation>");
    assert!(e.to_string().starts_with("t.xml:1:"), "{e}");
    let e = errors("<config/>");
    assert!(
        e.to_string().contains("root element is <simulation>"),
        "{e}"
    );
}

#[test]
fn values_simso_truncates_to_cycles_are_noted() {
    // At 1000 cycles/ms a cycle is 1us: 2.0005 ms is 2000.5 cycles.
    let out = import(
        &wrap("EDF_mono", ONE_CPU, &periodic("a", "10", "2.0005")),
        "t.xml",
    )
    .unwrap();
    assert!(out.toml.contains("run = \"2000500ns\""), "{}", out.toml);
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("truncates it to whole cycles")),
        "{:?}",
        out.notes
    );
    assert!(out
        .toml
        .contains("# - <task name=\"a\"> `WCET` = 2.0005 ms"));
}

#[test]
fn a_sporadic_task_without_dates_imports_as_a_thread_without_jobs() {
    let text = wrap(
        "EDF_mono",
        ONE_CPU,
        "<task name=\"s\" id=\"1\" task_type=\"Sporadic\" abort_on_miss=\"no\" period=\"0\" \
         list_activation_dates=\"\" deadline=\"5\" WCET=\"1\"/>",
    );
    let out = import(&text, "t.xml").unwrap();
    assert!(
        out.notes.iter().any(|n| n.contains("releases no job")),
        "{:?}",
        out.notes
    );
    let scn = hsched_scenario::parse(&out.toml, "t.toml").unwrap();
    assert_eq!(scn.threads.len(), 1, "no releaser");
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        let _ = import(&text, "p.xml");
    }

    #[test]
    fn mutated_configurations_never_panic_and_errors_have_places(
        at in 0usize..FIXTURE.len(),
        cut in 0usize..40,
        insert in prop::sample::select(vec!["", "\"", "<", ">", "x", "-1", "1e999", "0", "&amp;", "<task/>", " period=\"\"", "\u{0}"]),
    ) {
        let mut text = FIXTURE.to_string();
        let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        let end = (at + cut).min(text.len());
        let end = (end..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
        text.replace_range(at..end, insert);
        match import(&text, "p.xml") {
            Ok(out) => {
                // Whatever imports is a scenario the parser accepts.
                let parsed = hsched_scenario::parse(&out.toml, "p.toml");
                prop_assert!(parsed.is_ok(), "{:?}\n{}", parsed.err(), out.toml);
            }
            Err(e) => {
                prop_assert!(!e.problems.is_empty());
                for p in &e.problems {
                    prop_assert!(p.line >= 1 && p.column >= 1 && !p.message.is_empty());
                }
            }
        }
    }
}
