//! Nothing is lost in the hierarchy: an unloaded scheduler's child
//! schedulers lose only that parent (one left with none goes, with its
//! threads, under the default scheduler), a thread the default scheduler
//! refuses still runs (on
//! the built-in `fallback` below the hierarchy) with the refusal logged, and
//! a refused request shows as refused, not as the guarantee it asked for.

use serde_json::Value;

mod common;
use common::{hsched, text};

fn scenario_file(name: &str, body: &str) -> String {
    let path = common::tmp("nothing-lost", name);
    std::fs::write(&path, format!("horizon = \"1s\"\nseed = 1\n\n{body}")).unwrap();
    path.to_str().unwrap().to_string()
}

fn sim_json(file: &str) -> Value {
    let out = hsched(&["sim", file, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn row<'a>(v: &'a Value, list: &str, name: &str) -> &'a Value {
    v[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {list} row {name} in {v:#}"))
}

fn log_texts(v: &Value) -> Vec<String> {
    v["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

const MS: u64 = 1_000_000;

/// `root` (fp) over `rr` (low) and `mid` (high), `leaf` under `mid`, one
/// CPU-bound thread in `leaf`. `mid` goes at 100 ms; at 200 ms `leaf` is
/// moved from where that left it to the root.
const UNLOAD_MID: &str = r#"
default = "rr"

[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "rr"
policy = "rr"
parent = "root"
at = { prio = 1 }

[[scheduler]]
name = "mid"
policy = "rr"
parent = "root"
at = { prio = 5 }

[[scheduler]]
name = "leaf"
policy = "rr"
parent = "mid"

[[thread]]
name = "a"
parent = "leaf"
program = [{ run = "2s" }]

[[script]]
at = "100ms"
unload = "mid"

[[script]]
at = "200ms"
detach = "leaf"

[[script]]
at = "200ms"
attach = { scheduler = "leaf", parent = "root", at = { prio = 4 } }
"#;

#[test]
fn unloading_a_parent_sends_its_child_scheduler_to_the_default_with_its_threads() {
    let v = sim_json(&scenario_file("unload-mid.toml", UNLOAD_MID));
    let log = log_texts(&v);
    assert!(
        log.iter().any(|t| t
            == "scheduler `leaf` lost its last parent with `mid`: attached under the default scheduler `rr`"),
        "{log:#?}"
    );
    assert!(log.iter().any(|t| t == "attached `leaf`"), "{log:#?}");
    assert!(
        !log.iter().any(|t| t.contains("no scheduler `leaf`")),
        "{log:#?}"
    );
    // `a` stays with `leaf` throughout and never waits: 100 ms under
    // `mid`, 100 ms under `rr` (alone there), 800 ms under the root.
    let a = row(&v, "threads", "a");
    assert_eq!(a["scheduler"], "leaf");
    assert_eq!(a["cpu_time_ns"], 1000 * MS);
    assert_eq!(row(&v, "schedulers", "rr")["received_ns"], 100 * MS);
    assert_eq!(row(&v, "schedulers", "leaf")["alive"], true);
    assert_eq!(row(&v, "schedulers", "mid")["alive"], false);
}

/// The default scheduler is an `frc` whose one class admits 0.5: five
/// threads at 0.1, each wanting `work` of CPU, fill it; `late` (arriving at
/// 100 ms, CPU-bound) is refused.
fn frc_default(work: &str) -> String {
    format!(
        r#"
default = "f"

[[scheduler]]
name = "f"
policy = "frc"
classes = "GR:0.5:0"

[[thread]]
name = "w"
count = 5
program = [{{ run = "{work}" }}]

[[thread]]
name = "late"
arrival = "100ms"
program = [{{ run = "2s" }}]
"#
    )
}

#[test]
fn a_thread_the_default_scheduler_refuses_runs_on_the_fallback_and_the_log_says_why() {
    let v = sim_json(&scenario_file("frc-default.toml", &frc_default("2s")));
    let late = row(&v, "threads", "late");
    assert_eq!(late["scheduler"], "fallback");
    // The refusal is its label, not a guarantee it never had.
    assert_eq!(late["guarantee"], "NULL (refused)");
    let log = log_texts(&v);
    assert!(
        log.iter().any(|t| t.starts_with("thread `late`: `f` refused it: frc: class `GR` refuses rate 0.1")
            && t.ends_with("it runs under `fallback` (rr, below the hierarchy: it runs on the time the hierarchy leaves)")),
        "{log:#?}"
    );
    for i in 0..5 {
        let w = row(&v, "threads", &format!("w.{i}"));
        // frc is work conserving: the five admitted share the whole CPU,
        // and the fallback gets nothing.
        assert_eq!(w["cpu_time_ns"], 200 * MS);
        // Admission lets only 0.5 in, so each keeps its full rate 0.1 (the
        // refused thread does not dilute it): PSBE 0.1, δ = 0.1 × the
        // other children's quanta (5 × 10 ms, `late`'s counted: a superset
        // only lowers the bound) + its own 10 ms = 15 ms.
        assert_eq!(w["guarantee"], "PSBE 0.1, 15");
    }
    assert_eq!(late["cpu_time_ns"], 0);

    // When the five are done (5 × 100 ms), the fallback runs `late` on
    // what the hierarchy leaves: the rest of the second.
    let v = sim_json(&scenario_file(
        "frc-default-done.toml",
        &frc_default("100ms"),
    ));
    let late = row(&v, "threads", "late");
    assert_eq!(late["scheduler"], "fallback");
    assert_eq!(late["cpu_time_ns"], 500 * MS);
}

/// Under `rialto`, `a` reserves 60 ms every 100 ms, then `d` asks for 50 ms
/// every 100 ms, which does not fit.
const RIALTO_REFUSES_D: &str = r#"
[[scheduler]]
name = "r"
policy = "rialto"

[[thread]]
name = "a"
parent = "r"
program = [{ msg = { to = "parent", name = "reserve", args = { amount = "60ms", period = "100ms" } } }, { run = "2s" }]

[[thread]]
name = "d"
parent = "r"
arrival = "10ms"
program = [{ msg = { to = "parent", name = "reserve", args = { amount = "50ms", period = "100ms" } } }, { run = "2s" }]
"#;

#[test]
fn a_refused_reservation_shows_as_refused_not_as_what_was_asked() {
    let file = scenario_file("rialto-refuses-d.toml", RIALTO_REFUSES_D);
    let v = sim_json(&file);
    assert_eq!(row(&v, "threads", "a")["guarantee"], "RESCS 60, 100");
    let d = row(&v, "threads", "d");
    assert_eq!(d["guarantee"], "NULL (refused)");
    assert!(d["guaranteed_share"].is_null(), "{d}");
    // The run agrees: the policy refused it.
    let log = log_texts(&v);
    assert!(
        log.iter()
            .any(|t| t.starts_with("`d` -> `r` reserve") && t.contains("refused")),
        "{log:#?}"
    );
    // `check` says why.
    let out = hsched(&["check", &file]);
    let s = text(&out.stdout);
    assert!(
        s.contains("thread d") && s.contains("NULL (its RESCS 50, 100 is refused:"),
        "{s}"
    );
}
