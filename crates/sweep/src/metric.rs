//! The metric columns of a sweep: names for values of a run's metrics as
//! `hsched-report` computes them (the keys of `hsched sim --json`), and a
//! few derived ones for schedulability studies.
//!
//! | name | value |
//! |---|---|
//! | `schedulable` | 1 if no job missed its deadline, else 0 |
//! | `miss_ratio` | jobs that missed / jobs (empty with no jobs) |
//! | `threads_missing` | threads with at least one missed deadline |
//! | `global.KEY` | a global metric, e.g. `global.deadline_misses`, `global.idle_fraction` |
//! | `threads[NAME].KEY` | a thread's metric, e.g. `threads[video].wakeup_latency.p99_ns` |
//! | `schedulers[NAME].KEY` | a scheduler's, e.g. `schedulers[media].share` |
//! | `max(threads[*].KEY)` | over every thread (also `min`, `sum`, `mean`; `schedulers[*]`) |
//!
//! Cells are integers as integers, shares as Rust prints an `f64` (the
//! shortest text that reads back to the same number), booleans as 1 and 0,
//! an undefined value (a percentile of no samples) as an empty cell. The
//! wall-clock keys (`global.wall_ns`, `global.events_per_wall_second`) are
//! refused: they differ from run to run, and a sweep's file must not.

use hsched_model::{NodeResult, RunResult, ThreadResult};
use serde_json::Value as Json;

/// The columns when the spec names none.
pub const DEFAULT: &[&str] = &[
    "schedulable",
    "global.jobs",
    "global.deadline_misses",
    "miss_ratio",
];

const NOT_DETERMINISTIC: &[&str] = &["wall_ns", "events_per_wall_second"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Max,
    Min,
    Sum,
    Mean,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    Threads,
    Schedulers,
}

impl Group {
    fn key(self) -> &'static str {
        match self {
            Group::Threads => "threads",
            Group::Schedulers => "schedulers",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Schedulable,
    MissRatio,
    ThreadsMissing,
    Global(Vec<String>),
    One(Group, String, Vec<String>),
    All(Reduce, Group, Vec<String>),
}

/// One metric column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metric {
    text: String,
    kind: Kind,
}

impl Metric {
    /// Parses a metric name and checks it against the keys the metrics have.
    pub fn parse(text: &str) -> Result<Metric, String> {
        let t = text.trim();
        let kind = match t {
            "schedulable" => Kind::Schedulable,
            "miss_ratio" => Kind::MissRatio,
            "threads_missing" => Kind::ThreadsMissing,
            _ => {
                let reduce = [
                    ("max(", Reduce::Max),
                    ("min(", Reduce::Min),
                    ("sum(", Reduce::Sum),
                    ("mean(", Reduce::Mean),
                ]
                .into_iter()
                .find_map(|(p, r)| Some((r, t.strip_prefix(p)?.strip_suffix(')')?)));
                match reduce {
                    Some((r, inner)) => {
                        let (group, name, path) = selector(inner)?;
                        if name != "*" {
                            return Err(format!(
                                "`{t}`: a reduction goes over `threads[*]` or `schedulers[*]`"
                            ));
                        }
                        check_leaf(group.key(), &path, true)?;
                        Kind::All(r, group, path)
                    }
                    None => {
                        if let Some(rest) = t.strip_prefix("global.") {
                            let path = dotted(rest, t)?;
                            check_leaf("global", &path, false)?;
                            Kind::Global(path)
                        } else if t.starts_with("threads[") || t.starts_with("schedulers[") {
                            let (group, name, path) = selector(t)?;
                            if name == "*" {
                                return Err(format!(
                                    "`{t}`: `[*]` needs a reduction: max(...), min(...), sum(...) or mean(...)"
                                ));
                            }
                            check_leaf(group.key(), &path, false)?;
                            Kind::One(group, name, path)
                        } else {
                            return Err(format!(
                                "unknown metric `{t}` (expected schedulable, miss_ratio, threads_missing, global.KEY, threads[NAME].KEY, schedulers[NAME].KEY, or max/min/sum/mean(threads[*].KEY); the keys are those of `hsched sim --json`)"
                            ));
                        }
                    }
                }
            }
        };
        Ok(Metric {
            text: t.to_string(),
            kind,
        })
    }

    /// The CSV column name: the metric as written.
    pub fn column(&self) -> &str {
        &self.text
    }

    /// The cell for one run.
    pub fn value(&self, metrics: &Json) -> Result<String, String> {
        let global = &metrics["global"];
        Ok(match &self.kind {
            Kind::Schedulable => bool_cell(global["deadline_misses"].as_u64() == Some(0)),
            Kind::MissRatio => {
                let jobs = global["jobs"].as_u64().unwrap_or(0);
                let missed = global["deadline_misses"].as_u64().unwrap_or(0);
                if jobs == 0 {
                    String::new()
                } else {
                    float_cell(missed as f64 / jobs as f64)
                }
            }
            Kind::ThreadsMissing => {
                let n = list(metrics, Group::Threads)
                    .iter()
                    .filter(|t| t["deadline_misses"].as_u64().unwrap_or(0) > 0)
                    .count();
                n.to_string()
            }
            Kind::Global(path) => cell(walk(global, path)),
            Kind::One(group, name, path) => {
                let items = list(metrics, *group);
                let item = items
                    .iter()
                    .find(|i| i["name"].as_str() == Some(name))
                    .ok_or_else(|| {
                        let names: Vec<&str> =
                            items.iter().filter_map(|i| i["name"].as_str()).collect();
                        format!(
                            "metric `{}`: the run has no {} `{name}` (it has: {})",
                            self.text,
                            &group.key()[..group.key().len() - 1],
                            names.join(", ")
                        )
                    })?;
                cell(walk(item, path))
            }
            Kind::All(reduce, group, path) => {
                let xs: Vec<f64> = list(metrics, *group)
                    .iter()
                    .filter_map(|i| number(walk(i, path)))
                    .collect();
                let all_ints = list(metrics, *group).iter().all(|i| {
                    walk(i, path).is_u64() || walk(i, path).is_i64() || walk(i, path).is_null()
                });
                if xs.is_empty() {
                    String::new()
                } else {
                    let r = match reduce {
                        Reduce::Max => xs.iter().copied().fold(f64::MIN, f64::max),
                        Reduce::Min => xs.iter().copied().fold(f64::MAX, f64::min),
                        Reduce::Sum => xs.iter().sum(),
                        Reduce::Mean => xs.iter().sum::<f64>() / xs.len() as f64,
                    };
                    if all_ints && *reduce != Reduce::Mean && r.abs() < 9.0e15 {
                        format!("{}", r as i64)
                    } else {
                        float_cell(r)
                    }
                }
            }
        })
    }
}

/// `threads[NAME].a.b` -> (group, NAME, [a, b]).
fn selector(t: &str) -> Result<(Group, String, Vec<String>), String> {
    let (group, rest) = if let Some(r) = t.strip_prefix("threads[") {
        (Group::Threads, r)
    } else if let Some(r) = t.strip_prefix("schedulers[") {
        (Group::Schedulers, r)
    } else {
        return Err(format!(
            "`{t}`: expected threads[NAME].KEY or schedulers[NAME].KEY"
        ));
    };
    let close = rest
        .find(']')
        .ok_or_else(|| format!("`{t}`: `[` without `]`"))?;
    let name = rest[..close].trim().to_string();
    if name.is_empty() {
        return Err(format!(
            "`{t}`: name a {} or write `*`",
            &group.key()[..group.key().len() - 1]
        ));
    }
    let path = rest[close + 1..]
        .strip_prefix('.')
        .ok_or_else(|| format!("`{t}`: expected `.KEY` after `]`"))?;
    Ok((group, name, dotted(path, t)?))
}

fn dotted(path: &str, whole: &str) -> Result<Vec<String>, String> {
    let parts: Vec<String> = path.split('.').map(|p| p.trim().to_string()).collect();
    if parts.iter().any(String::is_empty) {
        return Err(format!("`{whole}`: empty key"));
    }
    Ok(parts)
}

/// Checks that `path` leads to a value (not a table) in a run's metrics,
/// against the keys of a run with one thread and one scheduler.
fn check_leaf(group: &str, path: &[String], numeric: bool) -> Result<(), String> {
    let sample = sample_metrics();
    let root = match group {
        "global" => &sample["global"],
        g => &sample[g][0],
    };
    let shown = format!(
        "{group}{}.{}",
        if group == "global" { "" } else { "[…]" },
        path.join(".")
    );
    if let Some(bad) = path
        .iter()
        .find(|p| NOT_DETERMINISTIC.contains(&p.as_str()))
    {
        return Err(format!(
            "`{shown}`: `{bad}` is wall-clock time, different on every run; a sweep's file is the same on every run"
        ));
    }
    let mut at = root;
    for (i, key) in path.iter().enumerate() {
        let Some(obj) = at.as_object() else {
            return Err(format!(
                "`{shown}`: `{}` is a value, it has no `{key}`",
                path[..i].join(".")
            ));
        };
        at = obj.get(key).ok_or_else(|| {
            let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
            format!("`{shown}`: no key `{key}` (there are: {})", keys.join(", "))
        })?;
    }
    if at.is_object() || at.is_array() {
        let what = if at.is_object() {
            let keys: Vec<&str> = at
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys())
                .map(String::as_str)
                .collect();
            format!("a table; name one of its keys: {}", keys.join(", "))
        } else {
            "a list".to_string()
        };
        return Err(format!("`{shown}` is {what}"));
    }
    if numeric && at.is_string() {
        return Err(format!("`{shown}` is text; a reduction needs numbers"));
    }
    Ok(())
}

fn sample_metrics() -> Json {
    let result = RunResult {
        threads: vec![ThreadResult::default()],
        nodes: vec![NodeResult::default()],
        ..RunResult::default()
    };
    serde_json::to_value(hsched_report::metrics(&result)).expect("metrics serialise")
}

fn list(metrics: &Json, group: Group) -> &[Json] {
    metrics[group.key()].as_array().map_or(&[], Vec::as_slice)
}

fn walk<'a>(mut at: &'a Json, path: &[String]) -> &'a Json {
    for key in path {
        at = &at[key.as_str()];
    }
    at
}

fn number(v: &Json) -> Option<f64> {
    match v {
        Json::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => v.as_f64(),
    }
}

fn bool_cell(b: bool) -> String {
    if b { "1" } else { "0" }.to_string()
}

fn float_cell(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

fn cell(v: &Json) -> String {
    match v {
        Json::Null => String::new(),
        Json::Bool(b) => bool_cell(*b),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.to_string(),
            (None, Some(i)) => i.to_string(),
            _ => float_cell(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => s.clone(),
        Json::Array(_) | Json::Object(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_against_the_metrics_keys() {
        for ok in [
            "schedulable",
            "global.deadline_misses",
            "global.idle_fraction",
            "threads[video].wakeup_latency.p99_ns",
            "threads[a.b].share",
            "schedulers[root].received_ns",
            "max(threads[*].job_response.max_ns)",
            "mean(threads[*].share)",
        ] {
            Metric::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for (bad, says) in [
            ("global.wall_ns", "wall-clock"),
            ("threads[*].share", "reduction"),
            ("threads[x].wakeup_latency", "a table"),
            ("threads[x].shaer", "no key `shaer`"),
            ("max(threads[x].share)", "threads[*]"),
            ("max(threads[*].name)", "text"),
            ("deadline_misses", "unknown metric"),
        ] {
            let e = Metric::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
