//! The metrics of a run as plain data and as JSON with stable keys.
//!
//! Keys appear in the order below (struct field order; no maps), so the JSON
//! of two runs diffs line by line. Times are integer nanoseconds and their
//! keys end in `_ns`; shares and rates are floats. A value that is undefined
//! (a percentile of no samples, a share of an empty horizon, a rate with no
//! wall time) is `null`, never NaN or 0.
//!
//! **Definitions.**
//! - *share* = time / horizon: the fraction of **one** CPU over the whole run.
//!   A thread that kept one CPU busy the whole run has share 1.0; a scheduler
//!   node fed by two CPUs can reach 2.0.
//! - *p50 / p99* are nearest-rank percentiles (see [`crate::stats`]): always
//!   one of the samples, `x[ceil(p/100 * n)]` of the n sorted samples.
//! - A job *misses* its deadline if it finished after it, or is unfinished at
//!   the horizon with its deadline before the horizon
//!   ([`hsched_model::JobRecord::missed`] with `end` = horizon).
//!
//! | key | type | meaning |
//! |---|---|---|
//! | `format_version` | int | version of this layout (1); bumped when a key changes meaning or goes away |
//! | `global.scenario` | string | scenario name |
//! | `global.platform` | string | platform that ran it (`sim`; `live-scx` or `live`: `hsched live` on sched_ext or on the user-space agent) |
//! | `global.seed` | int | seed of the run |
//! | `global.cpus` | int | physical CPUs |
//! | `global.horizon_ns` | int | span covered by the run |
//! | `global.decisions` | int | scheduling decisions (root-to-leaf descents) |
//! | `global.events` | int | platform events processed |
//! | `global.wall_ns` | int | wall-clock time the run took (not deterministic) |
//! | `global.events_per_wall_second` | float or null | `events / (wall_ns / 1e9)`; null when `wall_ns` is 0 |
//! | `global.busy_ns` | int | time threads made progress, summed over CPUs |
//! | `global.overhead_ns` | int | context-switch time, summed over CPUs |
//! | `global.idle_ns` | int | idle time, summed over CPUs |
//! | `global.idle_fraction` | float or null | `idle_ns / (cpus * horizon_ns)` |
//! | `global.jobs` | int | jobs recorded (all threads) |
//! | `global.deadline_misses` | int | jobs that missed their deadline (all threads) |
//! | `threads[].id` | int | thread id |
//! | `threads[].name` | string | thread name |
//! | `threads[].scheduler` | string | scheduler it ended under |
//! | `threads[].cpu_time_ns` | int | CPU time used (switch overhead excluded) |
//! | `threads[].share` | float or null | `cpu_time_ns / horizon_ns` |
//! | `threads[].guarantee` | string or null | what the HLS analysis promised it, as the paper writes it (`RESBH 5, 33`); null when no analysis ran or it does not cover the thread |
//! | `threads[].guaranteed_share` | float or null | the long-run fraction of one CPU that promises (`5/33` for RESBH 5, 33; a RESU rate as it is); null for NULL or no guarantee |
//! | `threads[].guaranteed_from_ns` | integer, absent from 0 | from when that guarantee holds, when a change during the run (a move, `join`, an admission) gave it |
//! | `threads[].wakeup_latency.count` | int | wakeups measured |
//! | `threads[].wakeup_latency.p50_ns` | int or null | wakeup-to-dispatch latency, median |
//! | `threads[].wakeup_latency.p99_ns` | int or null | same, 99th percentile |
//! | `threads[].wakeup_latency.max_ns` | int or null | same, maximum |
//! | `threads[].jobs` | int | jobs recorded for the thread |
//! | `threads[].job_response.count` | int | finished jobs (the response samples) |
//! | `threads[].job_response.p50_ns` | int or null | release-to-finish time, median |
//! | `threads[].job_response.p99_ns` | int or null | same, 99th percentile |
//! | `threads[].job_response.max_ns` | int or null | same, maximum |
//! | `threads[].deadline_misses` | int | jobs that missed their deadline |
//! | `threads[].max_gap_ns` | int | longest span runnable without running |
//! | `threads[].context_switches` | int | times put on a CPU after something else |
//! | `threads[].migrations` | int | times put on a different CPU than last time |
//! | `threads[].calls.made` | int | cross-domain calls (train or RPC) it made |
//! | `threads[].calls.ok` | int | of those, returned with results |
//! | `threads[].calls.broken_pipe` | int | returned with `broken pipe` (a caller between died) |
//! | `threads[].calls.server_exit` | int | returned with `server exit` (the server domain died or was not alive) |
//! | `threads[].calls.caller_gone` | int | its own domain died first: nobody to return to |
//! | `threads[].calls.abandoned` | int | it exited with the call open |
//! | `threads[].calls.too_deep` | int | refused: too many calls open |
//! | `schedulers[].name` | string | scheduler instance name |
//! | `schedulers[].policy` | string | policy it runs |
//! | `schedulers[].alive` | bool | still in the hierarchy at the end |
//! | `schedulers[].received_ns` | int | CPU time charged through it |
//! | `schedulers[].share` | float or null | `received_ns / horizon_ns` |
//! | `schedulers[].guarantee` | string or null | what the analysis says it receives: its incoming edge's label, for a join the one it passes on (the best of its parents, made soft); `ALL ×2` for two VPs given ALL; null when no analysis ran |
//! | `schedulers[].guaranteed_share` | float or null | the long-run fraction of one CPU that promises, over all its VPs (`ALL ×2`: 2.0); null for NULL or no guarantee |
//! | `schedulers[].guaranteed_from_ns` | integer, absent from 0 | from when that guarantee holds, when a change during the run (a script load, a `ctl` request) gave it |
//! | `log[].at_ns` | int | when it happened |
//! | `log[].kind` | string | `eject`, `watchdog`, `refused`, `script`, `moved`, `reply` |
//! | `log[].text` | string | what happened |
//! | `limits` | array of strings | only when the run reached a bound on what it holds in memory: each bound reached, what was kept and where the rest went (absent otherwise) |
//!
//! A run that held more jobs or wakeup latencies than it keeps one by one
//! (`limits` says so) counts them all, and takes their `p50_ns` and
//! `p99_ns` from a bounded histogram: at most 0.8 % below the exact
//! nearest-rank value ([`hsched_model::Sketch`]); `count` and `max_ns` stay
//! exact.
//!
//! `threads`, `schedulers` and `log` keep the order of the `RunResult`.

use crate::stats::{ratio, Percentiles};
use hsched_core::{Instant, Share, ThreadId};
use hsched_model::{CallCounts, JobRecord, JobTally, LogKind, RunResult, Sketch};
use serde::Serialize;
use std::collections::BTreeMap;

/// Version of the JSON layout; see the module table.
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
/// the module table, trailing newline).
pub fn metrics_json(result: &RunResult) -> String {
    let mut text = serde_json::to_string_pretty(&metrics(result))
        // Serializing plain structs of numbers and strings cannot fail
        // (no maps with non-string keys, floats are finite or None).
        .expect("metrics are always serializable");
    text.push('\n');
    text
}
