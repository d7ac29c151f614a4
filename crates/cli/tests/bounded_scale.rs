//! Large but valid inputs finish within a memory limit (`ulimit -v` 1 GiB)
//! and a generous wall bound that only a quadratic or cubic blow-up
//! exceeds: rt-app barriers of thousands of tasks import to TOML linear in
//! the tasks and simulate, and `check --svg` draws 100,000 threads.
//! Speed itself is measured by `hsched bench`, not here.

mod common;
use common::{bounded, text};
use std::time::Duration;

/// 1 GiB of address space.
const MEMORY: u64 = 1 << 30;

/// An rt-app file of `tasks` tasks that each run, then meet at barrier `B`,
/// for ever.
fn barrier_workload(tasks: usize) -> String {
    let list: Vec<String> = (0..tasks)
        .map(|i| {
            format!(
                "\"t{i}\": {{ \"loop\": -1, \"run\": {}, \"barrier\": \"B\" }}",
                1000 + 100 * (i % 7)
            )
        })
        .collect();
    format!(
        "{{ \"tasks\": {{ {} }}, \"global\": {{ \"duration\": 1, \"default_policy\": \"SCHED_OTHER\" }} }}",
        list.join(",\n")
    )
}

fn import(tasks: usize) -> Vec<u8> {
    let file = common::tmp("bounded-scale", &format!("barrier-{tasks}.json"));
    std::fs::write(&file, barrier_workload(tasks)).unwrap();
    let ran = bounded(
        &["import", "rt-app", file.to_str().unwrap()],
        MEMORY,
        Duration::from_secs(60),
    );
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    ran.stdout
}

#[test]
fn rt_app_barriers_import_linear_in_the_tasks_and_simulate() {
    let (one, two, three) = (import(1000), import(2000), import(3000));
    // Linear: twice the tasks, about twice the TOML (the header is fixed).
    let ratio = two.len() as f64 / one.len() as f64;
    assert!(
        (1.8..2.2).contains(&ratio),
        "{} -> {} bytes",
        one.len(),
        two.len()
    );
    let toml = text(&three);
    assert_eq!(toml.matches("{ barrier = \"B\" }").count(), 3000);

    let file = common::tmp("bounded-scale", "barrier-3000.toml");
    std::fs::write(&file, &three).unwrap();
    let ran = bounded(
        &["sim", file.to_str().unwrap()],
        MEMORY,
        Duration::from_secs(120),
    );
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    let summary = text(&ran.stdout);
    assert!(summary.contains("horizon 1s"), "{summary}");
    assert!(summary.contains("\n  t2999 "), "{summary}");
}

#[test]
fn check_svg_of_100000_threads_draws_a_summary_leaf() {
    let file = common::tmp("bounded-scale", "crowd.toml");
    std::fs::write(
        &file,
        r#"name = "crowd"
horizon = "1s"
default = "fair"

[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "fair"
policy = "sfq"
parent = "root"
at = { prio = 1 }

[[scheduler]]
name = "rt"
policy = "fp"
parent = "root"
at = { prio = 2 }

[[thread]]
name = "video"
parent = "rt"
at = { prio = 1 }
program = [ { periodic = { period = "33ms", run = "5ms" } } ]

[[thread]]
name = "w"
count = 99999
program = [ { run = "1ms" }, { sleep = "5ms" } ]
"#,
    )
    .unwrap();
    let svg = common::tmp("bounded-scale", "crowd.svg");
    let ran = bounded(
        &[
            "check",
            file.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ],
        MEMORY,
        Duration::from_secs(120),
    );
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    let drawing = std::fs::read_to_string(&svg).unwrap();
    // `fair` shows its first 11 threads and one leaf for the rest.
    assert!(drawing.contains("and 99,988 more threads"));
    assert!(drawing.contains(">w.10<") && !drawing.contains(">w.11<"));
}
