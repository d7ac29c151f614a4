//! `hsched sim` re-analyses every change of the running hierarchy before it
//! is made (issue 19): a script step or a thread's `join` that would break
//! a guarantee already promised is refused with the analysis's reason and
//! the run goes on; `--allow-uncomposed` lets it through with a warning;
//! what a change creates or moves is labelled from the time it happens.
//!
//! The hierarchy: an `fp` root over a `res` (`r`, above) and an `rr` (`ts`,
//! the default); thread `a` holds 5 ms every 10 ms of `r`, `hog` runs under
//! `ts`. Each test adds its own script or threads.

use serde_json::Value;

mod common;
use common::{hsched, text, tmp};

const BASE: &str = r#"
name = "reanalyse"
horizon = "2s"
seed = 1
default = "ts"

[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "r"
policy = "res"
parent = "root"
at = { prio = 10 }

[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = { prio = 1 }

[[thread]]
name = "a"
parent = "r"
at = { amount = "5ms", period = "10ms" }
program = [ { run = "10s" } ]
"#;

const SECOND_NS: u64 = 1_000_000_000;

/// The base scenario with `more` appended, written as `name`.
fn scenario(name: &str, more: &str) -> String {
    let path = tmp("reanalyse", name);
    std::fs::write(&path, format!("{BASE}\n{more}")).unwrap();
    path.to_str().unwrap().to_string()
}

/// Runs `hsched sim` on `file` with `extra` arguments and `--json`; the
/// metrics and stderr. The run must succeed.
fn metrics(file: &str, extra: &[&str]) -> (Value, String) {
    let mut args = vec!["sim", file, "--json"];
    args.extend_from_slice(extra);
    let out = hsched(&args);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

fn row<'a>(v: &'a Value, list: &str, name: &str) -> &'a Value {
    v[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {list} row {name} in {v}"))
}

/// The log entries of `kind`, as text.
fn log(v: &Value, kind: &str) -> Vec<String> {
    v["log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

const HOG: &str = r#"
[[thread]]
name = "hog"
program = [ { run = "10s" } ]
"#;

/// At 1 s the script loads `b` asking 60% of `r`, which promised `a` 50%,
/// then `c` asking 20%; at 1.5 s it moves `hog` into `r` for 10%.
const OVER: &str = r#"
[[script]]
at = "1s"
load = { name = "b", policy = "res", parent = "r", at = { amount = "6ms", period = "10ms" } }

[[script]]
at = "1s"
load = { name = "c", policy = "res", parent = "r", at = { amount = "2ms", period = "10ms" } }

[[script]]
at = "1500ms"
move = { thread = "hog", to = "r", at = { amount = "1ms", period = "10ms" } }
"#;

#[test]
fn a_script_load_past_what_res_promised_is_refused_and_the_run_goes_on() {
    let file = scenario("over.toml", &format!("{HOG}{OVER}"));
    let (v, _) = metrics(&file, &[]);
    let refused = log(&v, "refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with("load `b` (res) under `r`: refused, it would break what the hierarchy promised: `r` (res): its reservations sum to 110% of the CPU"),
        "{}",
        refused[0]
    );
    let names: Vec<&str> = v["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["root", "r", "ts", "c"], "`b` was never created");
    // The steps after it were made: the run went on.
    assert_eq!(row(&v, "threads", "hog")["scheduler"], "r");
    // `a` kept its 5 ms every 10 ms all along.
    assert_eq!(row(&v, "threads", "a")["cpu_time_ns"], SECOND_NS);
}

#[test]
fn a_script_load_and_move_that_compose_are_labelled_from_their_time() {
    let file = scenario("labelled.toml", &format!("{HOG}{OVER}"));
    let (v, _) = metrics(&file, &[]);
    let c = row(&v, "schedulers", "c");
    assert_eq!(c["guarantee"], "RESBH 2, 10");
    assert_eq!(c["guaranteed_from_ns"], SECOND_NS);
    let hog = row(&v, "threads", "hog");
    assert_eq!(hog["guarantee"], "RESBH 1, 10");
    assert_eq!(hog["guaranteed_from_ns"], 1_500_000_000u64);
    // What held from the start says no time.
    let a = row(&v, "threads", "a");
    assert_eq!(a["guarantee"], "RESBH 5, 10");
    assert!(a.get("guaranteed_from_ns").is_none(), "{a}");

    let out = hsched(&["sim", &file]);
    let summary = text(&out.stdout);
    let line = |name: &str| {
        summary
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name} in\n{summary}"))
            .to_string()
    };
    assert!(
        line("c").ends_with("RESBH 2, 10 (20.0%) from 1s"),
        "{summary}"
    );
    assert!(
        line("hog").contains("RESBH 1, 10 (10.0%) from 1.5s"),
        "{summary}"
    );
}

/// At 1 s the script loads a `res` under the `rr` (it receives NULL), at
/// 1.5 s it moves `hog` into it with a reservation, at 1.8 s it unloads
/// `r`, whose thread `a` would go back to `ts` (NULL).
const UNDER_RR: &str = r#"
[[script]]
at = "1s"
load = { name = "b", policy = "res", parent = "ts" }

[[script]]
at = "1500ms"
move = { thread = "hog", to = "b", at = { amount = "2ms", period = "10ms" } }

[[script]]
at = "1800ms"
unload = "r"
"#;

#[test]
fn a_script_move_or_unload_that_breaks_a_promise_is_refused() {
    let file = scenario("under-rr.toml", &format!("{HOG}{UNDER_RR}"));
    let (v, stderr) = metrics(&file, &[]);
    let refused = log(&v, "refused");
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(
        refused[0].starts_with("move `hog` to `b`: refused, it would break what the hierarchy promised: `b` (res) under `ts`: res needs ALL or RESU, but `ts` (rr) gives it NULL"),
        "{}",
        refused[0]
    );
    assert!(
        refused[1].starts_with("unload `r`: refused, it would break what the hierarchy promised: thread `a` was promised RESBH 5, 10 and would get NULL under `ts`"),
        "{}",
        refused[1]
    );
    assert_eq!(row(&v, "threads", "hog")["scheduler"], "ts");
    assert_eq!(row(&v, "threads", "a")["scheduler"], "r");
    assert!(row(&v, "schedulers", "r")["alive"].as_bool().unwrap());
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn allow_uncomposed_lets_a_breaking_change_through_with_a_warning() {
    let file = scenario("allowed.toml", &format!("{HOG}{UNDER_RR}"));
    let (v, stderr) = metrics(&file, &["--allow-uncomposed"]);
    assert!(log(&v, "refused").is_empty(), "{v}");
    let warned = log(&v, "uncomposed");
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(
        warned[0].starts_with("move `hog` to `b` breaks what the hierarchy promised (let through: --allow-uncomposed): `b` (res) under `ts`"),
        "{}",
        warned[0]
    );
    assert!(
        stderr.contains("warning: at t=1.5s: move `hog` to `b` breaks what the hierarchy promised"),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: at t=1.8s: unload `r` breaks"),
        "{stderr}"
    );
    let hog = row(&v, "threads", "hog");
    assert_eq!(hog["scheduler"], "b");
    assert_eq!(
        (&hog["guarantee"], &hog["guaranteed_from_ns"]),
        (&"NULL".into(), &1_500_000_000u64.into())
    );
    assert_eq!(row(&v, "threads", "a")["scheduler"], "ts");
}

/// `joiner` asks to join `b` (a `res` under the `rr`) with a reservation
/// at 100 ms, then `r` with one at 200 ms.
const JOINS: &str = r#"
[[scheduler]]
name = "b"
policy = "res"
parent = "ts"

[[thread]]
name = "joiner"
program = [
  { sleep = "100ms" },
  { msg = { to = "b", name = "join", args = { amount = "2ms", period = "10ms" } } },
  { sleep = "100ms" },
  { msg = { to = "r", name = "join", args = { amount = "1ms", period = "10ms" } } },
  { run = "10s" },
]
"#;

#[test]
fn a_join_by_message_is_refused_or_labelled_from_its_time() {
    let file = scenario("joins.toml", JOINS);
    let (v, _) = metrics(&file, &[]);
    let refused = log(&v, "refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("move `joiner` to `b`: refused, it would break what the hierarchy promised: `b` (res) under `ts`: res needs ALL or RESU"),
        "{}",
        refused[0]
    );
    let joiner = row(&v, "threads", "joiner");
    assert_eq!(joiner["scheduler"], "r");
    assert_eq!(joiner["guarantee"], "RESBH 1, 10");
    assert_eq!(joiner["guaranteed_from_ns"], 200_000_000u64);
}

/// A `rialto` above everything but the `rr`; `asker` starts under the
/// `rr`, joins the `rialto` at 100 ms and asks it for 1 ms every 10 ms.
const RESERVES: &str = r#"
name = "reserves"
horizon = "1s"
seed = 1
default = "ts"

[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "rt"
policy = "rialto"
parent = "root"
at = { prio = 20 }

[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = { prio = 1 }

[[thread]]
name = "asker"
program = [
  { sleep = "100ms" },
  { msg = { to = "rt", name = "join" } },
  { msg = { name = "reserve", args = { amount = "1ms", period = "10ms" } } },
  { run = "10s" },
]
"#;

#[test]
fn a_reservation_by_message_after_a_join_is_labelled_from_then() {
    let path = tmp("reanalyse", "reserves.toml");
    std::fs::write(&path, RESERVES).unwrap();
    let (v, _) = metrics(path.to_str().unwrap(), &[]);
    let asker = row(&v, "threads", "asker");
    assert_eq!(asker["scheduler"], "rt", "{v}");
    // As `hsched check` labels a thread of `rt` that asks this from the start.
    assert_eq!(asker["guarantee"], "RESCS 1, 10", "{asker}");
    assert_eq!(asker["guaranteed_from_ns"], 100_000_000u64, "{asker}");
}

/// A scheduler loaded above the time-sharing default takes the CPU from it,
/// but `ts`'s threads are promised NULL, so nobody relied on what `ts`
/// received: the load is made (Vassal's use). Loaded above `r`, whose
/// thread `a` holds a reservation, the same load is refused.
#[test]
fn a_load_above_schedulers_nobody_relies_on_is_made() {
    let more = r#"
[[thread]]
name = "hog"
parent = "ts"
program = [ { run = "10s" } ]

[[script]]
at = "1s"
load = { name = "rt", policy = "rr", parent = "root", at = { prio = 5 } }

[[script]]
at = "1s"
load = { name = "top", policy = "rr", parent = "root", at = { prio = 20 } }
"#;
    let (v, _) = metrics(&scenario("above-ts.toml", more), &[]);
    let refused = log(&v, "refused");
    assert!(
        !refused.iter().any(|t| t.contains("`rt`")),
        "loading `rt` above `ts` breaks nothing: {refused:?}"
    );
    assert!(
        refused
            .iter()
            .any(|t| t.contains("`top`") && t.contains("thread `a` was promised RESBH 5, 10")),
        "{refused:?}"
    );
}
