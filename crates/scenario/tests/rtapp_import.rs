//! The rt-app importer: every example file of `../shared/fixtures/rt-app`
//! (rt-app's own doc/examples) imported, the TOML checked by the scenario
//! parser and run briefly in the simulator, output and warnings pinned by
//! golden snapshots; then one small hand-written input per grammar feature
//! and per error.

use hsched_core::Duration;
use hsched_scenario::import::rtapp::{import, Options};
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/fixtures/rt-app"
);

/// Every `.json` under the fixtures folder, sorted; `None` (with the reason
/// printed) when the folder is not there.
fn fixtures() -> Option<Vec<PathBuf>> {
    let dir = hsched_testkit::require(
        "the shared rt-app fixtures (beside the project, in shared/fixtures/rt-app)",
        hsched_testkit::directory(FIXTURES),
    )?;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("fixtures folder readable") {
            let p = entry.expect("fixture entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    Some(out)
}

/// Imports `text`, parses the TOML and runs it for `run_for`.
fn import_and_run(text: &str, name: &str, run_for: Duration) -> Imported {
    let imported = import(text, name, &Options::default())
        .unwrap_or_else(|e| panic!("{name} does not import: {e}"));
    let scn = hsched_scenario::parse(&imported.toml, &format!("{name}.toml")).unwrap_or_else(|e| {
        panic!(
            "{name}: the imported TOML does not parse: {:?}\n{}",
            miette::Report::new(e),
            imported.toml
        )
    });
    let opts = hsched_sim::SimOptions {
        horizon: Some(run_for),
        ..Default::default()
    };
    let result = hsched_sim::run(&scn, &opts)
        .unwrap_or_else(|e| panic!("{name}: the imported scenario does not run: {e}"));
    assert_eq!(
        result.threads.len(),
        scn.threads.len(),
        "{name}: every thread ran"
    );
    imported
}

#[test]
fn every_fixture_imports_parses_and_runs() {
    let Some(files) = fixtures() else { return };
    assert!(
        files.len() >= 15,
        "expected the rt-app examples, found {files:?}"
    );
    for path in files {
        let rel = path
            .strip_prefix(FIXTURES)
            .expect("under the fixtures")
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).expect("fixture readable");
        let imported = import_and_run(&text, &rel, Duration::from_millis(200));
        // Every warning is also in the TOML, as a comment.
        for w in &imported.warnings {
            assert!(
                imported.toml.contains(&format!("#   {w}\n")),
                "{rel}: warning {w} missing from the TOML comments"
            );
        }
        let snap = rel.replace(['/', '.'], "_");
        insta::assert_snapshot!(snap, imported.toml);
    }
}

// ---------------------------------------------------------------------------
// Hand-written inputs: one per grammar feature, one per error.

use hsched_model::{Dist, Op, Scenario};
use hsched_scenario::import::{ImportError, Imported};

fn imp(text: &str) -> (Scenario, Imported) {
    let imported = import(text, "t.json", &Options::default())
        .unwrap_or_else(|e| panic!("does not import: {e}\n{text}"));
    let scn = hsched_scenario::parse(&imported.toml, "t.toml")
        .unwrap_or_else(|e| panic!("TOML does not parse: {e}\n{}", imported.toml));
    (scn, imported)
}

fn err(text: &str) -> ImportError {
    match import(text, "bad.json", &Options::default()) {
        Ok(i) => panic!("imported, expected an error:\n{}", i.toml),
        Err(e) => e,
    }
}

/// A program as a compact line: `run 10us; loop 5 [sleep 1ms]`.
fn show(ops: &[Op]) -> String {
    let d = |d: &Dist| match d {
        Dist::Fixed(x) => x.to_string(),
        other => format!("{other:?}"),
    };
    ops.iter()
        .map(|op| match op {
            Op::Run(x) => format!("run {}", d(x)),
            Op::Spin(x) => format!("spin {}", d(x)),
            Op::Sleep(x) => format!("sleep {}", d(x)),
            Op::Lock(m) => format!("lock {m}"),
            Op::Unlock(m) => format!("unlock {m}"),
            Op::Signal(s) => format!("signal {s}"),
            Op::Wait(s) => format!("wait {s}"),
            Op::Barrier(b) => format!("barrier {b}"),
            Op::Yield => "yield".into(),
            Op::Loop { count, body } => match count {
                Some(c) => format!("loop {c} [{}]", show(body)),
                None => format!("loop [{}]", show(body)),
            },
            Op::Periodic {
                period, jobs, body, ..
            } => match jobs {
                Some(j) => format!("periodic {period} x{j} [{}]", show(body)),
                None => format!("periodic {period} [{}]", show(body)),
            },
            Op::Msg { to, msg } => {
                let to = match to {
                    hsched_model::Target::Named(n) => n.clone(),
                    other => format!("{other:?}"),
                };
                let args: Vec<String> = msg.args.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{} {to} {}", msg.name, args.join(","))
            }
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn program(scn: &Scenario, thread: &str) -> String {
    let t = scn
        .threads
        .iter()
        .find(|t| t.name == thread)
        .unwrap_or_else(|| panic!("no thread {thread}"));
    show(&t.program.ops)
}

fn warned(i: &Imported, path: &str, needle: &str) -> bool {
    i.warnings
        .iter()
        .any(|w| w.path == path && w.message.contains(needle))
}

const GLOBAL: &str = r#""global": { "duration": 2 }"#;

#[test]
fn events_match_by_prefix_and_keep_their_order() {
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{ "t": {{ "loop": 2, "run0": 10, "runtime1": 20, "sleep2": 30, "run": 40, "sleep": 5, "run": 1, "yield3": "" }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(
        program(&scn, "t"),
        "loop 2 [run 10us; spin 20us; sleep 30us; run 40us; sleep 5us; run 1us; yield]"
    );
    assert!(i.warnings.is_empty(), "{:?}", i.warnings);
}

#[test]
fn comments_trailing_commas_and_a_bare_suspend() {
    let (scn, _) = imp(&format!(
        "/* head */ {{ \"tasks\": {{ // the tasks\n \"a\": {{ \"suspend\", \"run\": 5, }}, \"b\": {{ \"resume\": \"a\", \"sleep\": 100, }}, }}, {GLOBAL}, }}"
    ));
    assert_eq!(program(&scn, "a"), "loop [wait a; run 5us]");
    assert_eq!(program(&scn, "b"), "loop [signal a; sleep 100us]");
}

#[test]
fn instance_delay_and_loops() {
    let (scn, _) = imp(&format!(
        r#"{{ "tasks": {{ "t": {{ "instance": 3, "delay": 1500, "loop": 4,
             "phases": {{ "p0": {{ "loop": 2, "run": 10 }}, "p1": {{ "sleep": 20 }} }} }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(scn.threads.len(), 3);
    assert_eq!(scn.threads[2].name, "t.2");
    assert_eq!(scn.threads[0].arrival.to_string(), "t=1.5ms");
    assert_eq!(
        program(&scn, "t.0"),
        "loop 4 [loop 2 [run 10us]; sleep 20us]"
    );
}

#[test]
fn a_timer_at_the_end_of_a_phase_is_a_periodic_job() {
    // One phase looping for ever: exact, jobs on rt-app's grid.
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{ "t": {{ "loop": -1, "run": 10000, "timer": {{ "ref": "unique", "period": 100000, "mode": "absolute" }} }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(program(&scn, "t"), "periodic 100ms [run 10ms]");
    assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    // Relative mode (the default) is named as the difference it is.
    let (_, i) = imp(&format!(
        r#"{{ "tasks": {{ "t": {{ "loop": -1, "run": 10, "timer": {{ "ref": "unique", "period": 100 }} }} }}, {GLOBAL} }}"#
    ));
    assert!(warned(&i, "tasks.t.timer", "relative timer mode"));
    // Phases on one timer: one periodic per phase inside the cycle's.
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{ "t": {{ "phases": {{
            "a": {{ "loop": 2, "run": 10, "timer": {{ "ref": "unique", "period": 100, "mode": "absolute" }} }},
            "b": {{ "loop": 3, "run": 20, "timer1": {{ "ref": "unique", "period": 100, "mode": "absolute" }} }} }} }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(
        program(&scn, "t"),
        "periodic 500us [periodic 100us x2 [run 10us]; periodic 100us x3 [run 20us]]"
    );
    assert!(warned(&i, "tasks.t.phases.a.timer", "not waited for"));
    assert!(!i
        .warnings
        .iter()
        .any(|w| w.path == "tasks.t.phases.b.timer1"));
    // A timer in the middle of a phase is a sleep, said so.
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{ "t": {{ "run": 10, "timer": {{ "ref": "x", "period": 100 }}, "run1": 5 }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(program(&scn, "t"), "loop [run 10us; sleep 100us; run 5us]");
    assert!(warned(&i, "tasks.t.timer", "mapped to a sleep"));
}

#[test]
fn a_timer_shared_between_tasks_is_named() {
    let (_, i) = imp(&format!(
        r#"{{ "tasks": {{ "a": {{ "run": 1, "timer": {{ "ref": "tick", "period": 100 }} }},
                         "b": {{ "run": 2, "timer": {{ "ref": "tick", "period": 100 }} }} }}, {GLOBAL} }}"#
    ));
    assert!(warned(&i, "tasks.a.timer", "shared by a, b"));
}

#[test]
fn policies_become_a_hierarchy_of_linux_classes() {
    let (scn, i) = imp(r#"{ "tasks": {
            "fifo": { "policy": "SCHED_FIFO", "priority": 50, "run": 10, "sleep": 10 },
            "rr": { "policy": "SCHED_RR", "priority": 20, "run": 10, "sleep": 10 },
            "dl": { "policy": "SCHED_DEADLINE", "dl-runtime": 1000, "dl-period": 10000, "dl-deadline": 5000, "run": 500, "sleep": 9000 },
            "nice": { "priority": 5, "run": 10, "sleep": 10 },
            "idle": { "policy": "SCHED_IDLE", "run": 10, "sleep": 10 } },
          "global": { "duration": 1, "default_policy": "SCHED_OTHER" } }"#);
    let at = |name: &str| {
        let t = scn.threads.iter().find(|t| t.name == name).unwrap();
        (t.parent.clone(), format!("{:?}", t.params))
    };
    assert_eq!(at("fifo").0, "root");
    assert!(at("fifo").1.contains("50"), "{:?}", at("fifo"));
    assert_eq!(at("rr").0, "rr_20");
    assert_eq!(at("dl").0, "deadline");
    assert!(
        at("dl").1.contains("(1000000)") && at("dl").1.contains("(10000000)"),
        "{:?}",
        at("dl")
    );
    assert_eq!(at("nice").0, "other");
    assert!(at("nice").1.contains("335"), "{:?}", at("nice"));
    assert!(at("idle").1.contains('3'), "{:?}", at("idle"));
    let sched = |name: &str| scn.schedulers.iter().find(|s| s.name == name).unwrap();
    assert_eq!(sched("root").policy, "fp");
    assert_eq!(sched("deadline").policy, "res");
    assert_eq!(sched("rr_20").policy, "rr");
    assert_eq!(sched("other").policy, "sfq");
    assert_eq!(scn.default_scheduler, "other");
    assert!(warned(&i, "tasks.dl.dl-deadline", "other than the period"));
    // Reservations past one CPU in all: named on the task that tips it over.
    let (_, i) = imp(r#"{ "tasks": {
            "a": { "policy": "SCHED_DEADLINE", "dl-runtime": 6000, "dl-period": 10000, "run": 10 },
            "b": { "policy": "SCHED_DEADLINE", "dl-runtime": 6000, "dl-period": 10000, "dl-reclaim": true, "run": 10 } },
          "global": { "duration": 1 } }"#);
    assert!(warned(&i, "tasks.b", "more than one CPU"));
    assert!(!warned(&i, "tasks.a", "more than one CPU"));
    assert!(warned(&i, "tasks.b.dl-reclaim", "reclaiming"));
    // Each instance reserves its own share.
    let (_, i) = imp(
        r#"{ "tasks": { "a": { "instance": 2, "policy": "SCHED_DEADLINE", "dl-runtime": 6000, "dl-period": 10000, "run": 10 } },
             "global": { "duration": 1 } }"#,
    );
    assert!(warned(&i, "tasks.a", "more than one CPU"));
    // The default policy applies to tasks that name none.
    let (scn, _) = imp(
        r#"{ "tasks": { "t": { "run": 10, "sleep": 10 } }, "global": { "duration": 1, "default_policy": "SCHED_FIFO" } }"#,
    );
    assert_eq!(scn.threads[0].parent, "root");
}

#[test]
fn a_phase_may_change_the_policy() {
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{ "t": {{ "policy": "SCHED_OTHER", "loop": 1, "phases": {{
            "p0": {{ "policy": "SCHED_FIFO", "priority": 50, "run": 10 }},
            "p1": {{ "priority": 60, "run": 20 }},
            "p2": {{ "policy": "SCHED_RR", "priority": 5, "run": 30 }},
            "p3": {{ "policy": "SCHED_DEADLINE", "dl-runtime": 100, "dl-period": 1000, "run": 40 }},
            "p4": {{ "policy": "SCHED_OTHER", "run": 50 }} }} }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(
        program(&scn, "t"),
        "join root prio=50; run 10us; join root prio=60; run 20us; join rr_5 ; run 30us; \
         join deadline amount=100us,period=1ms; run 40us; join other weight=1024; run 50us"
    );
    assert_eq!(scn.threads[0].parent, "other");
    assert!(scn.schedulers.iter().any(|s| s.name == "rr_5"));
    assert!(scn.schedulers.iter().any(|s| s.name == "deadline"));
    assert!(warned(&i, "tasks.t.phases.p0", "joins the phase's class"));
    // It runs, through every class, and ends in the fair one.
    let r = hsched_sim::run(&scn, &hsched_sim::SimOptions::default()).unwrap();
    assert_eq!(r.threads[0].cpu_time, Duration::from_micros(150));
    assert_eq!(r.threads[0].scheduler, "other");
}

#[test]
fn duration_becomes_the_horizon_or_a_default_with_a_warning() {
    let (scn, i) = imp(r#"{ "tasks": { "t": { "run": 10 } }, "global": { "duration": 3 } }"#);
    assert_eq!(scn.horizon.to_string(), "3s");
    assert!(i.warnings.is_empty());
    let (scn, i) = imp(r#"{ "tasks": { "t": { "run": 10 } }, "global": { "duration": -1 } }"#);
    assert_eq!(scn.horizon.to_string(), "10s");
    assert!(warned(&i, "global.duration", "needs a horizon"));
}

#[test]
fn what_hsched_cannot_express_is_named_with_its_path() {
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{
            "t": {{ "taskgroup": "/tg", "frobnicate": 1, "phases": {{ "p1": {{ "run": 10, "barrier": "B", "mem": 100, "fork": "u", "sleep": 5 }} }} }},
            "u": {{ "instance": 0, "run": 10 }},
            "v": {{ "run": 1, "barrier": "B" }} }}, {GLOBAL} }}"#
    ));
    // A barrier of two single-instance tasks is hsched's own: exact, so
    // no warning.
    assert!(!i.warnings.iter().any(|w| w.path.ends_with("barrier")));
    assert!(warned(&i, "tasks.t.phases.p1.mem", "not modelled"));
    assert!(warned(&i, "tasks.t.phases.p1.fork", "not modelled"));
    assert!(warned(&i, "tasks.t.taskgroup", "task groups"));
    assert!(warned(&i, "tasks.t.frobnicate", "unknown key"));
    assert!(warned(&i, "tasks.u", "instance: 0"));
    assert_eq!(program(&scn, "t"), "loop [run 10us; barrier B; sleep 5us]");
    assert_eq!(program(&scn, "v"), "loop [run 1us; barrier B]");
    assert!(!scn.threads.iter().any(|t| t.name == "u"));
    // Every warning is in the TOML too.
    for w in &i.warnings {
        assert!(i.toml.contains(&format!("#   {w}\n")), "{w}");
    }
}

#[test]
fn condition_variables_mutexes_and_suspend() {
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{
            "w": {{ "lock": "m", "wait": {{ "ref": "q", "mutex": "m" }}, "unlock": "m", "run": 10 }},
            "s": {{ "run": 10, "lock": "m", "signal": "q", "unlock": "m", "sleep": 100 }},
            "x": {{ "run": 5, "suspend": "nobody", "run1": 5 }},
            "two": {{ "instance": 2, "suspend": "gate", "run": 10 }},
            "opener": {{ "resume": "gate", "sleep": 1000 }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(
        program(&scn, "w"),
        "loop [lock m; unlock m; wait q; lock m; unlock m; run 10us]"
    );
    assert_eq!(
        program(&scn, "s"),
        "loop [run 10us; lock m; signal q; unlock m; sleep 100us]"
    );
    // Nothing resumes `nobody`: rt-app blocks for ever, hsched sleeps to the horizon.
    assert_eq!(program(&scn, "x"), "loop [run 5us; sleep 2s; run 5us]");
    assert!(warned(&i, "tasks.x", "no thread signals or resumes"));
    // A resume wakes both instances waiting on `gate`.
    assert_eq!(
        program(&scn, "opener"),
        "loop [signal gate; signal gate; sleep 1ms]"
    );
    assert!(warned(&i, "tasks.opener.resume", "2 can"));
    assert!(warned(&i, "tasks.s.signal", "lost"));
}

#[test]
fn a_resume_reaches_every_task_suspended_on_the_name() {
    // Two tasks suspend on `gate`: each gets its own semaphore, and a
    // resume signals both (rt-app's broadcast).
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{
            "a": {{ "suspend": "gate", "run": 10 }},
            "b": {{ "suspend": "gate", "run": 20 }},
            "opener": {{ "resume": "gate", "sleep": 1000 }},
            "self": {{ "resume": "self", "run": 5, "suspend": "self" }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(program(&scn, "a"), "loop [wait gate@a; run 10us]");
    assert_eq!(program(&scn, "b"), "loop [wait gate@b; run 20us]");
    assert_eq!(
        program(&scn, "opener"),
        "loop [signal gate@a; signal gate@b; sleep 1ms]"
    );
    // Resuming itself wakes nobody, and nothing else resumes it: it blocks
    // for ever in rt-app, sleeps to the horizon here.
    assert_eq!(program(&scn, "self"), "loop [run 5us; sleep 2s]");
    assert!(warned(&i, "tasks.self.resume", "wakes nobody"));
    assert!(warned(&i, "tasks.self", "no thread signals or resumes"));
}

#[test]
fn cpus_follow_the_affinities_and_their_loss_is_named() {
    let (scn, i) = imp(&format!(
        r#"{{ "tasks": {{ "a": {{ "cpus": [0], "run": 10 }}, "b": {{ "cpus": [3], "run": 10 }} }}, {GLOBAL} }}"#
    ));
    assert_eq!(scn.machine.cpus, 4);
    assert!(warned(&i, "tasks.a.cpus", "not modelled"));
    let imported = import(
        r#"{ "tasks": { "a": { "run": 10 } }, "global": { "duration": 1 } }"#,
        "t.json",
        &Options { cpus: Some(8) },
    )
    .unwrap();
    assert!(imported.toml.contains("cpus = 8"));
}

#[test]
fn errors_name_the_file_line_column_and_what_was_expected() {
    let e = err("{\n  \"tasks\": {\n    \"t\": { \"run\": 10 \"sleep\": 5 }\n  }\n}");
    assert_eq!((e.line, e.column), (3, 22));
    assert!(
        e.to_string()
            .starts_with("bad.json:3:22: expected `,` or `}`"),
        "{e}"
    );

    let e = err("{ \"tasks\": { \"t\": {\n \"run\": \"fast\" } } }");
    assert_eq!((e.line, e.column, e.path.as_str()), (2, 9, "tasks.t.run"));
    assert!(
        e.message
            .contains("expected an integer number of microseconds"),
        "{e}"
    );

    let e = err("{ \"tasks\": { \"t\": { \"policy\": \"SCHED_FAST\", \"run\": 1 } } }");
    assert_eq!(e.path, "tasks.t.policy");
    assert!(e.message.contains("SCHED_FIFO"), "{e}");

    let e = err("{ \"global\": { \"duration\": 1 } }");
    assert_eq!(e.path, "tasks");
    assert!(e.message.contains("expected a `tasks` object"), "{e}");

    let e = err("{ \"tasks\": { \"t\": { \"phases\": { \"p\": { \"loop\": 2 } } } } }");
    assert_eq!(e.path, "tasks.t.phases.p");
    assert!(e.message.contains("no events"), "{e}");

    let e = err("{ \"tasks\": { \"t\": { \"timer\": 5 } } }");
    assert_eq!(e.path, "tasks.t.timer");
    assert!(e.message.contains("expected an object for `timer`"), "{e}");

    let e = err("[1, 2]");
    assert!(
        e.message
            .contains("expected the rt-app document (an object)"),
        "{e}"
    );

    let e = err("{ \"tasks\": { \"t\": { \"run\": 1 }, \"t\": { \"run\": 2 } } }");
    assert!(e.message.contains("defined twice"), "{e}");
}

/// Runs an imported fixture for `horizon`; `None` when the fixtures are absent.
fn run_fixture(rel: &str, horizon: Duration) -> Option<hsched_model::RunResult> {
    hsched_testkit::require(
        "the shared rt-app fixtures (beside the project, in shared/fixtures/rt-app)",
        hsched_testkit::directory(FIXTURES),
    )?;
    let path = Path::new(FIXTURES).join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let imported = import(&text, rel, &Options::default()).unwrap();
    let scn = hsched_scenario::parse(&imported.toml, rel).unwrap();
    let opts = hsched_sim::SimOptions {
        horizon: Some(horizon),
        ..Default::default()
    };
    Some(hsched_sim::run(&scn, &opts).unwrap())
}

fn cpu(r: &hsched_model::RunResult, thread: &str) -> Duration {
    r.threads
        .iter()
        .find(|t| t.name == thread)
        .unwrap_or_else(|| panic!("no thread {thread}"))
        .cpu_time
}

#[test]
fn fixtures_run_as_rt_app_describes_them() {
    // example1: run 2ms, sleep 8ms... in rt-app's 20000/80000us: 20% of the CPU.
    let Some(r) = run_fixture("tutorial/example1.json", Duration::from_secs(2)) else {
        return;
    };
    assert_eq!(cpu(&r, "thread0"), Duration::from_millis(400));

    // example2: a 10ms job every 100ms on the timer's grid: 20 jobs in 2s,
    // released at 0, 100ms, 200ms, ...
    let r = run_fixture("tutorial/example2.json", Duration::from_secs(2)).unwrap();
    assert_eq!(cpu(&r, "thread0"), Duration::from_millis(200));
    assert_eq!(r.jobs.len(), 20);
    for (k, job) in r.jobs.iter().enumerate() {
        let expected = hsched_core::Instant::ZERO + Duration::from_millis(k as u64 * 100);
        assert_eq!(job.release, expected, "job {k}");
    }

    // example4: two threads wake each other in turn, 10ms each: the CPU
    // never idles (a lost wakeup would stop both).
    let r = run_fixture("tutorial/example4.json", Duration::from_secs(1)).unwrap();
    let (a, b) = (cpu(&r, "thread0"), cpu(&r, "thread1"));
    assert_eq!(a + b, Duration::from_secs(1), "{a} + {b}");
    assert!(
        a >= Duration::from_millis(400) && b >= Duration::from_millis(400),
        "{a} {b}"
    );

    // mp3-short: AudioTick resumes AudioOut once per 30ms cycle (one 6ms
    // timer period, then four more): AudioOut runs 5ms per cycle, once at
    // the start and once per cycle released at 0, 30ms, ..., 990ms: 35.
    let r = run_fixture("mp3-short.json", Duration::from_secs(1)).unwrap();
    assert_eq!(cpu(&r, "AudioOut"), Duration::from_millis(175));

    // example7: the barriers hold the two tasks together without a
    // deadlock: both keep running to the horizon.
    let r = run_fixture("tutorial/example7.json", Duration::from_secs(1)).unwrap();
    let (a, b) = (cpu(&r, "task0"), cpu(&r, "task1"));
    assert!(
        a >= Duration::from_millis(300) && b >= Duration::from_millis(300),
        "{a} {b}"
    );
}
