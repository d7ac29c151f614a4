//! Running a sweep: each point's scenario built, parsed by the scenario
//! parser and run through the run pipeline (`hsched_pipeline`: analysed,
//! refused unless it composes, simulated with its changes guarded), on a
//! pool of threads; rows written to
//! the CSV in index order through a reorder buffer, so that the file is at
//! every moment the sweep's first rows, whatever order points finish in.
//!
//! On start, the rows an earlier run of the same spec and shard left are
//! read back (a partial last line is cut off) and checked against the spec;
//! their points are skipped. A run stopped by `limit`, an error or a kill
//! and then restarted thus writes the same file, byte for byte, as one run
//! straight through.

use crate::csvfile::{self, Row};
use crate::generator::{Setting, Task};
use crate::points::{self, Point, Shard};
use crate::spec::Spec;
use crate::value::Value;
use hsched_analysis::rules::RuleBook;
use hsched_core::PolicyInfo;
use hsched_pipeline::PipelineError;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

/// A sweep that could not finish: bad input (a point whose scenario does
/// not parse or run, an output written for another spec) or a failure.
#[derive(Debug)]
pub enum SweepError {
    /// Bad input: exit code 2.
    Input(String),
    /// I/O or a crashed simulation: exit code 1.
    Failed(String),
}

impl std::fmt::Display for SweepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepError::Input(m) | SweepError::Failed(m) => f.write_str(m),
        }
    }
}

/// How to run a sweep.
#[derive(Clone)]
pub struct Options {
    /// The CSV file (created, or continued).
    pub out: PathBuf,
    pub shard: Shard,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Run at most this many points this time (the rest on a later run).
    pub limit: Option<u64>,
    /// The policies scenarios may name (the built-in registry, plus plugins).
    pub registry: Vec<PolicyInfo>,
    /// Policies beyond the built-in registry, for the simulator.
    pub extra: Vec<&'static PolicyInfo>,
    /// The guarantee rules points are analysed with (the standard ones,
    /// plus the plugins' and the caller's rows).
    pub rules: RuleBook,
}

impl Options {
    /// Built-in policies only, one thread per CPU.
    pub fn new(out: impl Into<PathBuf>) -> Options {
        Options {
            out: out.into(),
            shard: Shard::ALL,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            limit: None,
            registry: hsched_policies::registry().to_vec(),
            extra: Vec::new(),
            rules: hsched_pipeline::rule_book(),
        }
    }
}

/// What a run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Points in this shard.
    pub total: u64,
    /// Of those, already in the file when it started.
    pub done_before: u64,
    /// Run and written this time.
    pub ran: u64,
    /// Still to run (after a `limit`).
    pub remaining: u64,
}

/// Progress reports, for a progress bar.
pub trait Progress: Sync {
    /// The run starts: `todo` points to run now, of `total` in the shard.
    fn start(&self, todo: u64, total: u64);
    /// One more point finished.
    fn point_done(&self);
}

/// No progress reports.
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _: u64, _: u64) {}
    fn point_done(&self) {}
}

/// The scenario text of one point: the base scenario with `${name}`s
/// substituted and `set` key paths written, and the generated tasks.
/// Returns the name to parse it under (for messages) and the text.
pub fn scenario_text(spec: &Spec, p: &Point) -> Result<(String, String), String> {
    let lookup = |name: &str| -> Option<Value> {
        let i = spec.params.iter().position(|q| q.name == name)?;
        Some(p.values[i].clone())
    };
    let (file, text) = match &spec.base {
        Some(b) => (
            b.file.clone(),
            crate::edit::substitute(&b.text, &spec.param_names(), &p.values)?,
        ),
        None => (format!("{} (generated)", spec.file), String::new()),
    };
    let edits = spec.params.iter().any(|q| !q.set.is_empty());
    if !edits && spec.taskset.is_none() {
        return Ok((file, text));
    }
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        format!("{file}: invalid TOML: {}", e.message().trim())
    })?;
    for (q, v) in spec.params.iter().zip(&p.values) {
        for path in &q.set {
            crate::edit::set(&mut doc, path, v).map_err(|e| format!("{file}: {e}"))?;
        }
    }
    if let Some(ts) = &spec.taskset {
        let set = taskset_of(spec, p).expect("the spec has a task set")?;
        ts.write(&mut doc, &spec.name, &set, &lookup)?;
    }
    Ok((file, doc.to_string()))
}

/// The tasks the generator draws for a point (`None` without `[taskset]`).
pub fn taskset_of(spec: &Spec, p: &Point) -> Option<Result<Vec<Task>, String>> {
    let ts = spec.taskset.as_ref()?;
    let lookup = |name: &str| -> Result<Value, String> {
        let i = spec
            .params
            .iter()
            .position(|q| q.name == name)
            .ok_or_else(|| format!("no parameter `{name}`"))?;
        Ok(p.values[i].clone())
    };
    let draw = || {
        let tasks = match &ts.tasks {
            Setting::Lit(n) => *n,
            Setting::Param(name) => {
                let v = lookup(name).map_err(|e| format!("taskset.tasks: {e}"))?;
                v.as_decimal()
                    .and_then(|d| d.as_integer())
                    .and_then(|i| u64::try_from(i).ok())
                    .ok_or_else(|| format!("taskset.tasks: `{v}` is not a number of tasks"))?
            }
        };
        let util = match &ts.utilisation {
            Setting::Lit(d) => d.to_f64(),
            Setting::Param(name) => {
                let v = lookup(name).map_err(|e| format!("taskset.utilisation: {e}"))?;
                v.as_decimal()
                    .ok_or_else(|| format!("taskset.utilisation: `{v}` is not a number"))?
                    .to_f64()
            }
        };
        ts.draw(tasks, util, &mut points::generator_rng(p))
    };
    Some(draw())
}

/// Runs one point: its scenario through the parser and the run pipeline
/// (a hierarchy that does not compose is refused, as `hsched sim` refuses
/// it); returns its metric cells.
pub fn run_point(spec: &Spec, p: &Point, opts: &Options) -> Result<Vec<String>, SweepError> {
    let bad = |e: String| SweepError::Input(format!("{}: {e}", points::describe(spec, p)));
    let (file, text) = scenario_text(spec, p).map_err(bad)?;
    let scn = hsched_scenario::parse_with_registry(&text, &file, &opts.registry)
        .map_err(|e| bad(e.to_string()))?;
    let run_opts = hsched_pipeline::RunOptions {
        seed: Some(p.seed),
        ..Default::default()
    };
    let run = hsched_pipeline::run_to_horizon(
        &file,
        &scn,
        opts.rules.clone(),
        &run_opts,
        &opts.extra,
        false,
    )
    .map_err(|e| match e {
        PipelineError::Scenario(e) => bad(e.to_string()),
        PipelineError::Input(m) => bad(m),
        PipelineError::Uncomposed { file, analysis } => {
            bad(hsched_pipeline::uncomposed(&file, &analysis))
        }
        PipelineError::Failed(m) => {
            SweepError::Failed(format!("{}: {m}", points::describe(spec, p)))
        }
    })?;
    if let Some(cut) = run.cut_at {
        return Err(bad(format!(
            "{file}: the run needs more than {} events (hsched_sim::DEFAULT_MAX_EVENTS): \
             it reached them at {}; shorten its horizon",
            run_opts.max_events,
            cut - hsched_core::Instant::ZERO
        )));
    }
    let metrics = serde_json::to_value(hsched_report::metrics(&run.result))
        .map_err(|e| SweepError::Failed(format!("metrics: {e}")))?;
    spec.metrics
        .iter()
        .map(|m| m.value(&metrics).map_err(&bad))
        .collect()
}

/// Point `index`'s whole row (its index, seed, values and metrics), a
/// panic in the simulator turned into an error naming the point.
pub fn point_row(spec: &Spec, index: u64, opts: &Options) -> Result<Vec<String>, SweepError> {
    let p = points::point(spec, index);
    let metrics =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_point(spec, &p, opts)))
            .unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(SweepError::Failed(format!(
                    "{}: the simulation panicked: {why}",
                    points::describe(spec, &p)
                )))
            })?;
    let mut cells = csvfile::point_cells(spec, &p);
    cells.extend(metrics);
    Ok(cells)
}

/// Runs (or continues) a sweep into `opts.out`.
pub fn run(spec: &Spec, opts: &Options, progress: &dyn Progress) -> Result<Outcome, SweepError> {
    let out = &opts.out;
    let header = csvfile::header(spec);
    let count = points::count(spec);
    let total = opts.shard.len(count);
    let io = |e: std::io::Error| SweepError::Failed(format!("{}: {e}", out.display()));

    let existing = csvfile::resume(spec, opts.shard, out).map_err(SweepError::Input)?;
    let mut done: std::collections::HashSet<u64> = Default::default();
    let mut in_order = true;
    match &existing {
        Some(ex) => {
            // Cut a partial last line a kill left.
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(out)
                .map_err(io)?;
            f.set_len(ex.complete_len).map_err(io)?;
            done.extend(ex.rows.iter().map(|r| r.index));
            in_order = ex.rows.windows(2).all(|w| w[0].index < w[1].index);
        }
        None => {
            let mut f = std::fs::File::create(out).map_err(io)?;
            f.write_all(&csvfile::encode(&header)).map_err(io)?;
        }
    }
    let last_done = existing
        .as_ref()
        .and_then(|ex| ex.rows.last().map(|r| r.index));
    // The points to run now, lazily (a sweep may have millions).
    let todo_all = total - done.len() as u64;
    let todo_now = opts.limit.map_or(todo_all, |l| l.min(todo_all));
    let todo = || {
        opts.shard
            .indexes(count)
            .filter(|i| !done.contains(i))
            .take(usize::try_from(todo_now).unwrap_or(usize::MAX))
    };
    // New rows go after the old ones; if one comes before an old row (the
    // file had a gap), the file is sorted at the end.
    if let (Some(first), Some(last)) = (todo().next(), last_done) {
        in_order &= first > last;
    }
    progress.start(todo_now, total);

    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(out)
        .map_err(io)?;
    let feed = Mutex::new(todo().enumerate());
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<Vec<String>, SweepError>)>();
    let mut written = 0usize;
    let mut first_error: Option<(usize, SweepError)> = None;
    std::thread::scope(|scope| -> Result<(), SweepError> {
        let workers = opts
            .threads
            .max(1)
            .min(usize::try_from(todo_now).unwrap_or(usize::MAX).max(1));
        for _ in 0..workers {
            let tx = tx.clone();
            let (feed, stop) = (&feed, &stop);
            scope.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let next = feed.lock().map_or(None, |mut f| f.next());
                let Some((slot, index)) = next else { return };
                let result = point_row(spec, index, opts);
                if tx.send((slot, result)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut pending: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (slot, result) in rx {
            match result {
                Ok(cells) => {
                    pending.insert(slot, cells);
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    // Of several failures, report the first point's.
                    if first_error.as_ref().is_none_or(|(s, _)| slot < *s) {
                        first_error = Some((slot, e));
                    }
                }
            }
            while let Some(cells) = pending.remove(&written) {
                if first_error.as_ref().is_some_and(|(s, _)| written >= *s) {
                    break;
                }
                file.write_all(&csvfile::encode(&cells)).map_err(io)?;
                written += 1;
                progress.point_done();
            }
        }
        Ok(())
    })?;
    file.sync_data().map_err(io)?;
    if let Some((_, e)) = first_error {
        return Err(e);
    }
    if !in_order {
        let ex = csvfile::read(out)
            .map_err(SweepError::Failed)?
            .ok_or_else(|| SweepError::Failed(format!("{}: vanished", out.display())))?;
        let mut rows: Vec<Row> = ex.rows;
        csvfile::write_sorted(out, &header, &mut rows).map_err(SweepError::Failed)?;
    }
    Ok(Outcome {
        total,
        done_before: done.len() as u64,
        ran: written as u64,
        remaining: todo_all - written as u64,
    })
}
