//! Simulating: the options of `hsched sim`, the simulation of a prepared
//! scenario with its guard, the whole path for callers that need only the
//! result, and what a run that hit a limit says.

use crate::guard::{prepare, RunGuard};
use crate::PipelineError;
use hsched_analysis::rules::RuleBook;
use hsched_core::{Duration, Instant, PolicyInfo};
use hsched_model::{RunResult, Scenario};

/// How to simulate: the options of `hsched sim`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Overrides the scenario's horizon.
    pub horizon: Option<Duration>,
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Record the timeline (segments and marks).
    pub trace: bool,
    /// Check every policy's invariants after every callback.
    pub check_invariants: bool,
    /// Job records held in memory.
    pub keep_jobs: usize,
    /// Segments and marks the timeline may hold.
    pub trace_limit: usize,
    /// Events the run may process.
    pub max_events: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            horizon: None,
            seed: None,
            trace: false,
            check_invariants: false,
            keep_jobs: hsched_sim::DEFAULT_KEEP_JOBS,
            trace_limit: hsched_sim::DEFAULT_TRACE_LIMIT,
            max_events: hsched_sim::DEFAULT_MAX_EVENTS,
        }
    }
}

/// The simulation of `scn` (named `file` in messages) with `opts`, its
/// changes guarded by `guard`, the policies `extra` available beyond the
/// built-in ones ([`Loaded::infos`](crate::Loaded::infos)); ready to run.
pub fn simulation<'a>(
    file: &str,
    scn: &'a Scenario,
    opts: &RunOptions,
    guard: &RunGuard,
    extra: &[&'static PolicyInfo],
) -> Result<hsched_sim::Simulation<'a>, PipelineError> {
    let sim_opts = hsched_sim::SimOptions {
        horizon: opts.horizon,
        seed: opts.seed,
        trace: opts.trace,
        check_invariants: opts.check_invariants,
        guard: Some(guard.shared()),
    };
    let mut sim = hsched_sim::Simulation::new(scn, &sim_opts, extra)
        .map_err(|e| PipelineError::Input(format!("{file}: {e}")))?;
    sim.keep_jobs(opts.keep_jobs);
    sim.trace_limit(opts.trace_limit);
    sim.max_events(opts.max_events);
    Ok(sim)
}

/// Why a run stopped short of its horizon on reaching `--max-events`.
pub fn cut_message(file: &str, max_events: u64, cut: Instant, horizon: Instant) -> String {
    format!(
        "{file}: the run needs more than {max_events} events (--max-events): it stopped at {} of its {} \
         horizon, and what it wrote covers the time before that: raise --max-events or \
         shorten --horizon",
        cut - Instant::ZERO,
        horizon - Instant::ZERO,
    )
}

/// Why a run's timeline was not kept (past `--trace-limit`).
pub fn trace_lost_message(file: &str, trace_limit: usize) -> String {
    format!(
        "{file}: the timeline needs more than {trace_limit} segments and marks (--trace-limit); \
         the trace and report were not written (the other outputs were): \
         raise --trace-limit or shorten --horizon"
    )
}

/// A run simulated to its horizon and labelled.
pub struct Simulated {
    pub result: RunResult,
    /// Where the run stopped short of its horizon on reaching
    /// `max_events`, if it did (what it covers is the time before).
    pub cut_at: Option<Instant>,
}

/// The whole pipeline after parsing, for a caller that needs no outputs
/// but the result (`hsched repro`, `hsched sweep`): `scn` (named `file` in
/// messages) analysed with `book` and refused unless it composes or
/// `allow_uncomposed`, simulated to its horizon with `opts` and the
/// policies `extra` beyond the built-in ones, its changes guarded, then
/// labelled with what was promised.
pub fn run_to_horizon(
    file: &str,
    scn: &Scenario,
    book: RuleBook,
    opts: &RunOptions,
    extra: &[&'static PolicyInfo],
    allow_uncomposed: bool,
) -> Result<Simulated, PipelineError> {
    let (guard, _) = prepare(file, scn, book, allow_uncomposed)?;
    let mut sim = simulation(file, scn, opts, &guard, extra)?;
    sim.run_until(sim.horizon());
    let cut_at = sim.cut_at();
    let mut result = sim.finish();
    guard.label(&mut result);
    Ok(Simulated { result, cut_at })
}
