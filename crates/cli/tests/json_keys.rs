//! docs/json.md documents the metrics JSON: every key a run writes is in
//! its table, and every key in its table is written by the runs below,
//! except those the table says are absent in some runs.

mod common;

use common::{hsched, repo, text};
use serde_json::Value;
use std::collections::BTreeSet;

/// The keys of `v` as the table writes them: `global.seed`,
/// `threads[].wakeup_latency.p50_ns`, `limits` (an array of values).
fn keys(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                keys(x, &p, out);
            }
        }
        // An empty list says nothing of its items' keys.
        Value::Array(items) if items.is_empty() => {}
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for item in items {
                keys(item, &format!("{path}[]"), out);
            }
        }
        _ => {
            out.insert(path.to_string());
        }
    }
}

/// (key, may be absent) for each row of the table.
fn documented() -> Vec<(String, bool)> {
    let doc = std::fs::read_to_string(repo().join("docs/json.md")).expect("docs/json.md");
    doc.lines()
        .filter_map(|l| {
            let row = l.strip_prefix("| `")?;
            let (key, rest) = row.split_once('`')?;
            let absent = rest.contains("absent") || rest.contains("only when");
            Some((key.to_string(), absent))
        })
        .collect()
}

#[test]
fn every_key_a_run_writes_is_documented_and_every_documented_key_is_written() {
    let examples = repo().join("scenarios/examples");
    let mut files: Vec<_> = std::fs::read_dir(&examples)
        .expect("scenarios/examples")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut runs: Vec<Vec<String>> = files
        .iter()
        .map(|f| vec![f.to_str().expect("a UTF-8 path").to_string()])
        .collect();
    // One that reaches a bound, so `limits` is written.
    runs.push(vec![
        examples.join("desktop.toml").to_str().unwrap().to_string(),
        "--keep-jobs".into(),
        "5".into(),
    ]);
    let mut written = BTreeSet::new();
    for run in &runs {
        let mut args = vec!["sim", "--json", "-"];
        args.extend(run.iter().map(String::as_str));
        let out = hsched(&args);
        assert!(out.status.success(), "{run:?}: {}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        keys(&v, "", &mut written);
    }
    let table = documented();
    let in_table: BTreeSet<String> = table.iter().map(|(k, _)| k.clone()).collect();
    let undocumented: Vec<_> = written.difference(&in_table).collect();
    assert!(
        undocumented.is_empty(),
        "keys written but not in docs/json.md: {undocumented:?}"
    );
    let never: Vec<_> = table
        .iter()
        .filter(|(k, absent)| !absent && !written.contains(k))
        .map(|(k, _)| k)
        .collect();
    assert!(
        never.is_empty(),
        "keys in docs/json.md that no run wrote (mark them absent, or remove them): {never:?}"
    );
}
