//! The metrics of a run as plain data and as JSON with stable keys.
//!
//! Every key, its type and its meaning are in docs/json.md (the user's
//! reference; `crates/cli/tests/json_keys.rs` checks that every key a run
//! writes is there). Keys appear in struct field order (no maps), so the
//! JSON of two runs diffs line by line. Times are integer nanoseconds and
//! their keys end in `_ns`; shares and rates are floats. A value that is
//! undefined (a percentile of no samples, a share of an empty horizon, a
//! rate with no wall time) is `null`, never NaN or 0.

use crate::stats::{ratio, Percentiles};
use hsched_core::{Instant, Share, ThreadId};
use hsched_model::{CallCounts, JobRecord, JobTally, LogKind, RunResult, Sketch};
use serde::Serialize;
use std::collections::BTreeMap;

/// Version of the JSON layout (docs/json.md).
pub const FORMAT_VERSION: u32 = 1;

/// Everything [`metrics_json`] writes. Field order is key order.
#[derive(Clone, Debug, Serialize)]
pub struct Metrics {
    pub format_version: u32,
    pub global: Global,
    pub threads: Vec<ThreadMetrics>,
    pub schedulers: Vec<SchedulerMetrics>,
    pub log: Vec<LogMetrics>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Global {
    pub scenario: String,
    pub platform: String,
    pub seed: u64,
    pub cpus: u32,
    pub horizon_ns: u64,
    pub decisions: u64,
    pub events: u64,
    pub wall_ns: u64,
    pub events_per_wall_second: Option<f64>,
    pub busy_ns: u64,
    pub overhead_ns: u64,
    pub idle_ns: u64,
    pub idle_fraction: Option<f64>,
    pub jobs: u64,
    pub deadline_misses: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ThreadMetrics {
    pub id: u32,
    pub name: String,
    pub scheduler: String,
    pub cpu_time_ns: u64,
    pub share: Option<f64>,
    pub guarantee: Option<String>,
    pub guaranteed_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guaranteed_from_ns: Option<u64>,
    pub wakeup_latency: Percentiles,
    pub jobs: u64,
    pub job_response: Percentiles,
    pub deadline_misses: u64,
    pub max_gap_ns: u64,
    pub context_switches: u64,
    pub migrations: u64,
    pub calls: CallCounts,
}

#[derive(Clone, Debug, Serialize)]
pub struct SchedulerMetrics {
    pub name: String,
    pub policy: String,
    pub alive: bool,
    pub received_ns: u64,
    pub share: Option<f64>,
    pub guarantee: Option<String>,
    pub guaranteed_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guaranteed_from_ns: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LogMetrics {
    pub at_ns: u64,
    pub kind: LogKind,
    pub text: String,
}

/// Computes the metrics of a run. Never fails; undefined values are `None`.
pub fn metrics(result: &RunResult) -> Metrics {
    let horizon = result.horizon.as_nanos();
    // A job counts as missed against the end of the run.
    let end = Instant::from_nanos(horizon);
    let share = |ns: u64| ratio(ns, u128::from(horizon));

    // Jobs grouped by thread once (ordered map, input order within a thread)
    // rather than a scan of all jobs per thread.
    let mut jobs_of: BTreeMap<ThreadId, Vec<&JobRecord>> = BTreeMap::new();
    for j in &result.jobs {
        jobs_of.entry(j.thread).or_default().push(j);
    }

    let threads = result
        .threads
        .iter()
        .map(|t| {
            let jobs = jobs_of.get(&t.id).map(Vec::as_slice).unwrap_or_default();
            let retired = result
                .retired_jobs
                .get(t.id.index())
                .filter(|r| r.count > 0);
            let responses = jobs
                .iter()
                .filter_map(|j| j.response())
                .map(|d| d.as_nanos());
            let job_response = match retired {
                Some(tally) => from_sketch(&tally.response, responses),
                None => Percentiles::from_samples(responses),
            };
            let latencies = t.wakeup_latencies.iter().map(|d| d.as_nanos());
            let wakeup_latency = match &t.wakeup_sketch {
                // The sketch counts every latency, the kept ones too.
                Some(sketch) => from_sketch(sketch, std::iter::empty()),
                None => Percentiles::from_samples(latencies),
            };
            ThreadMetrics {
                id: t.id.0,
                name: t.name.clone(),
                scheduler: t.scheduler.clone(),
                cpu_time_ns: t.cpu_time.as_nanos(),
                share: share(t.cpu_time.as_nanos()),
                guarantee: t.guarantee.clone(),
                guaranteed_share: t.guaranteed_share.map(Share::as_f64),
                guaranteed_from_ns: t.guaranteed_from.map(|i| i.as_nanos()),
                wakeup_latency,
                jobs: jobs.len() as u64 + retired.map_or(0, |r| r.count),
                job_response,
                deadline_misses: jobs.iter().filter(|j| j.missed(end)).count() as u64
                    + retired.map_or(0, |r| r.missed),
                max_gap_ns: t.max_runnable_gap.as_nanos(),
                context_switches: t.context_switches,
                migrations: t.migrations,
                calls: t.calls,
            }
        })
        .collect();

    let schedulers = result
        .nodes
        .iter()
        .map(|n| SchedulerMetrics {
            name: n.name.clone(),
            policy: n.policy.clone(),
            alive: n.alive,
            received_ns: n.received.as_nanos(),
            share: share(n.received.as_nanos()),
            guarantee: n.guarantee.clone(),
            guaranteed_share: n.guaranteed_share.map(Share::as_f64),
            guaranteed_from_ns: n.guaranteed_from.map(|i| i.as_nanos()),
        })
        .collect();

    let log = result
        .log
        .iter()
        .map(|e| LogMetrics {
            at_ns: e.at.as_nanos(),
            kind: e.kind,
            text: e.text.clone(),
        })
        .collect();

    // Sums saturate: a corrupt result should give a wrong number, not a panic.
    let sum = |f: fn(&hsched_model::CpuStats) -> u64| {
        result
            .cpu_stats
            .iter()
            .map(f)
            .fold(0u64, u64::saturating_add)
    };
    let idle_ns = sum(|c| c.idle.as_nanos());
    let retired = |f: fn(&JobTally) -> u64| result.retired_jobs.iter().map(f).sum::<u64>();
    let global = Global {
        scenario: result.scenario.clone(),
        platform: result.platform.clone(),
        seed: result.seed,
        cpus: result.cpus,
        horizon_ns: horizon,
        decisions: result.decisions,
        events: result.events,
        wall_ns: result.wall_ns,
        events_per_wall_second: ratio(result.events, u128::from(result.wall_ns)).map(|r| r * 1e9),
        busy_ns: sum(|c| c.busy.as_nanos()),
        overhead_ns: sum(|c| c.overhead.as_nanos()),
        idle_ns,
        idle_fraction: ratio(idle_ns, u128::from(result.cpus) * u128::from(horizon)),
        jobs: result.jobs.len() as u64 + retired(|r| r.count),
        deadline_misses: result.jobs.iter().filter(|j| j.missed(end)).count() as u64
            + retired(|r| r.missed),
    };

    Metrics {
        format_version: FORMAT_VERSION,
        global,
        threads,
        schedulers,
        log,
        limits: result.limits.clone(),
    }
}

/// The percentiles of the samples `sketch` counts plus `more`.
fn from_sketch(sketch: &Sketch, more: impl Iterator<Item = u64>) -> Percentiles {
    let mut all = sketch.clone();
    more.for_each(|v| all.add(v));
    Percentiles {
        count: all.count(),
        p50_ns: all.percentile(50),
        p99_ns: all.percentile(99),
        max_ns: all.max(),
    }
}

/// [`metrics`] as pretty-printed JSON (two-space indent, keys in the order of
/// docs/json.md, trailing newline).
pub fn metrics_json(result: &RunResult) -> String {
    let mut text = serde_json::to_string_pretty(&metrics(result))
        // Serializing plain structs of numbers and strings cannot fail
        // (no maps with non-string keys, floats are finite or None).
        .expect("metrics are always serializable");
    text.push('\n');
    text
}
