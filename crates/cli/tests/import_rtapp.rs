//! `hsched import rt-app` and `hsched sim`/`check` on an rt-app file, as a
//! user meets them: TOML on stdout, warnings on stderr, exit codes 0 and 2.

mod common;
use common::{hsched, text};

fn tmp(name: &str, contents: &str) -> String {
    let p = common::tmp("import-rtapp", name);
    std::fs::write(&p, contents).unwrap();
    p.to_str().unwrap().to_string()
}

const WORKLOAD: &str = r#"{
    /* a media thread and a batch thread */
    "tasks": {
        "media": { "policy": "SCHED_FIFO", "priority": 30, "loop": -1,
                   "run": 5000, "timer": { "ref": "unique", "period": 33000, "mode": "absolute" } },
        "batch": { "run": 10000, "barrier": "B", },
    },
    "global": { "duration": 1 },
}"#;

#[test]
fn import_prints_toml_and_warns_on_stderr() {
    let file = tmp("workload.json", WORKLOAD);
    let out = hsched(&["import", "rt-app", &file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let toml = text(&out.stdout);
    assert!(toml.contains("policy = \"fp\""), "{toml}");
    assert!(
        toml.contains("{ periodic = { period = \"33ms\", body = ["),
        "{toml}"
    );
    let err = text(&out.stderr);
    assert!(err.contains("warning: "), "{err}");
    assert!(
        err.contains("workload.json:6:34: tasks.batch.barrier"),
        "{err}"
    );

    // The TOML it printed is a scenario `hsched check` accepts.
    let scenario = tmp("workload.toml", &toml);
    let check = hsched(&["check", &scenario]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));

    // --strict refuses what hsched cannot express, naming it.
    let strict = hsched(&["import", "rt-app", &file, "--strict"]);
    assert_eq!(strict.status.code(), Some(2));
    let err = text(&strict.stderr);
    assert!(
        err.contains("--strict") && err.contains("tasks.batch.barrier"),
        "{err}"
    );
    assert!(strict.stdout.is_empty());
}

#[test]
fn sim_and_check_read_an_rt_app_file_directly() {
    let file = tmp("direct.json", WORKLOAD);
    let out = hsched(&["sim", &file, "--horizon", "200ms"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(
        summary.contains("media") && summary.contains("batch"),
        "{summary}"
    );
    assert!(text(&out.stderr).contains("tasks.batch.barrier"));
    let check = hsched(&["check", &file]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
}

#[test]
fn bad_rt_app_files_exit_2_naming_file_line_and_column() {
    let file = tmp(
        "broken.json",
        "{\n  \"tasks\": {\n    \"t\": { \"run\" 10 }\n  }\n}\n",
    );
    for args in [vec!["import", "rt-app", &file], vec!["sim", &file]] {
        let out = hsched(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("broken.json:3:18: expected `:` after the key \"run\""),
            "{err}"
        );
    }
    let missing = hsched(&["import", "rt-app", "no/such/file.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no/such/file.json"));
}
