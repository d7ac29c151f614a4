//! hsched sim: a deterministic discrete-event simulator, the `Platform` the
//! dispatcher drives in `hsched sim`.
//!
//! Events are ordered by (time, sequence number); at equal times workload
//! events (completions, wakeups, arrivals, script steps, `randres`
//! deadlines) come before the dispatcher's timers. Every random draw comes from a ChaCha8 stream seeded
//! from the scenario seed and the thread's index, so the same scenario and
//! seed give the same run, byte for byte, and adding a thread does not change
//! the draws of the others.
//!
//! Interrupt sources (`[[interrupt]]`) draw their arrivals and handler
//! lengths from streams of their own, one per source and CPU; a handler
//! holds its CPU whatever is on it, and a dispatch to that CPU waits for it
//! to return (see `hsched_model::InterruptSpec`).
//!
//! Time accounting is exact: on every CPU, busy + context-switch overhead +
//! interrupt handlers + idle equals the horizon.

pub mod conformance;
mod jobs;
mod program;
pub mod workloads;
mod world;

pub use jobs::{JobSink, DEFAULT_KEEP_JOBS, MIN_KEEP_JOBS};
pub use world::{CallOutcome, CallRecord, MAX_DEPTH};
use world::{Ev, World};
pub use world::{DEFAULT_TRACE_LIMIT, MAX_KEPT_LATENCIES, MAX_LOG_ENTRIES};

use hsched_core::{Duration, Instant};
use hsched_dispatch::{build_hierarchy, Config, Dispatcher};
use hsched_model::{RunResult, Scenario};
use std::cmp::Reverse;

/// Events a run processes at most unless told otherwise
/// ([`Simulation::max_events`]). A bound on time, in a unit that keeps the
/// run deterministic: 5 to 16 s of a release build here (measured: 6 to
/// 20 million events a second, a debug build a tenth of that); the
/// largest bundled scenario takes 10^5.
/// A scenario that needs more (a period of nanoseconds, a day of
/// milliseconds) is cut short there, saying so, instead of running for
/// hours.
pub const DEFAULT_MAX_EVENTS: u64 = 100_000_000;

/// How to run a scenario.
#[derive(Clone, Debug, Default)]
pub struct SimOptions {
    /// Override the scenario's horizon.
    pub horizon: Option<Duration>,
    /// Override the scenario's seed.
    pub seed: Option<u64>,
    /// Record the full timeline (segments and marks) for traces and plots.
    pub trace: bool,
    /// Re-analyses each change of the hierarchy during the run (script
    /// steps, `join` and `leave`) before it is made, and is told of
    /// admissions; `None`: changes are checked by the policies only.
    pub guard: Option<hsched_model::guard::SharedGuard>,
    /// Run every policy's `check_invariants` after every callback and the
    /// dispatcher's structural checks after every event.
    pub check_invariants: bool,
}

/// Runs a scenario to its horizon.
pub fn run(scn: &Scenario, opts: &SimOptions) -> Result<RunResult, String> {
    run_with_policies(scn, opts, &[])
}

/// Like [`run`], with policies beyond the built-in registry available by
/// name (out-of-tree policies, test doubles).
pub fn run_with_policies(
    scn: &Scenario,
    opts: &SimOptions,
    extra: &[&'static hsched_core::PolicyInfo],
) -> Result<RunResult, String> {
    let mut sim = Simulation::new(scn, opts, extra)?;
    sim.run_until(sim.horizon);
    Ok(sim.finish())
}

/// A simulation that can be advanced in steps (benchmarks time a window
/// of a run; tools can look at it between steps).
pub struct Simulation<'a> {
    scn: &'a Scenario,
    disp: Dispatcher,
    world: World,
    horizon: Instant,
    seed: u64,
    world_events: u64,
    started: std::time::Instant,
    max_events: u64,
    /// Where the run stopped on reaching `max_events`, if it did: the time
    /// of the first event not processed.
    cut_at: Option<Instant>,
}

impl<'a> Simulation<'a> {
    /// Builds the hierarchy and schedules arrivals and script steps.
    pub fn new(
        scn: &'a Scenario,
        opts: &SimOptions,
        extra: &[&'static hsched_core::PolicyInfo],
    ) -> Result<Self, String> {
        let started = std::time::Instant::now();
        let horizon = Instant::ZERO + opts.horizon.unwrap_or(scn.horizon);
        let seed = opts.seed.unwrap_or(scn.seed);
        let mut registry = hsched_policies::builtins();
        for info in extra {
            registry.add(info);
        }
        let mut disp = Dispatcher::new(
            Config {
                cpus: scn.machine.cpus,
                tick: scn.machine.tick,
                watchdog: scn.machine.watchdog,
                check_invariants: opts.check_invariants,
            },
            registry,
        );
        if let Some(guard) = &opts.guard {
            disp.set_guard(guard.clone());
        }
        let mut world = World::new(scn, seed, opts.trace, horizon);
        build_hierarchy(&mut disp, &mut world, scn)?;
        for (i, spec) in scn.threads.iter().enumerate() {
            world.push(spec.arrival, Ev::Arrive(i));
        }
        for (i, ev) in scn.script.iter().enumerate() {
            world.push(ev.at, Ev::Script(i));
        }
        Ok(Simulation {
            scn,
            disp,
            world,
            horizon,
            seed,
            world_events: 0,
            started,
            max_events: DEFAULT_MAX_EVENTS,
            cut_at: None,
        })
    }

    /// Holds at most `keep` job records in memory (at least
    /// [`MIN_KEEP_JOBS`]; default [`DEFAULT_KEEP_JOBS`]); beyond, the jobs
    /// are counted in the result's `retired_jobs`.
    pub fn keep_jobs(&mut self, keep: usize) {
        self.world.jobs.set_keep(keep);
    }

    /// Hands each job record the run stops holding to `sink`, as it goes:
    /// with the result's `jobs` at the end, every job exactly once.
    pub fn set_job_sink(&mut self, sink: JobSink) {
        self.world.jobs.set_sink(sink);
    }

    /// Drops the trace once it holds more than `limit` segments and marks
    /// (default [`DEFAULT_TRACE_LIMIT`]); the result says so in `limits`.
    pub fn trace_limit(&mut self, limit: usize) {
        self.world.trace_limit = limit;
    }

    /// Processes at most `max` events (default [`DEFAULT_MAX_EVENTS`]):
    /// a run that needs more stops there and covers the time before it
    /// ([`Simulation::cut_at`]); its result says so in `limits`.
    pub fn max_events(&mut self, max: u64) {
        self.max_events = max;
    }

    /// Where the run stopped on reaching its bound on events, if it did.
    pub fn cut_at(&self) -> Option<Instant> {
        self.cut_at
    }

    /// The end of the run.
    pub fn horizon(&self) -> Instant {
        self.horizon
    }

    /// Decisions made so far.
    pub fn decisions(&self) -> u64 {
        self.disp.decisions()
    }

    /// Every cross-domain call made so far (train and RPC), in the order
    /// made, with when and how each returned.
    pub fn calls(&self) -> &[CallRecord] {
        self.world.calls()
    }

    /// Threads stranded by a domain's death (in a dead domain, or waiting
    /// for an RPC answer nobody will give), described; empty when none.
    pub fn stranded(&self) -> Vec<String> {
        self.world.stranded()
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.world_events + self.disp.timers_fired()
    }

    /// Processes every event before `until` (and before the horizon), in
    /// (time, sequence) order; workload events first at equal times.
    pub fn run_until(&mut self, until: Instant) {
        let stop = until.min(self.horizon);
        loop {
            let next_world = self.world.next_event();
            let next_disp = self.disp.next_deadline();
            let (t, from_world) = match (next_world, next_disp) {
                (Some((w, _, _)), Some(d)) if d < w => (d, false),
                (Some((w, _, _)), _) => (w, true),
                (None, Some(d)) => (d, false),
                (None, None) => break,
            };
            if t >= stop || self.cut_at.is_some() {
                break;
            }
            if self.events() >= self.max_events {
                self.cut_at = Some(t);
                break;
            }
            if from_world {
                self.world_events += 1;
                match next_world.unwrap().2 {
                    Some(cpu) => self.world.complete(&mut self.disp, t, cpu),
                    None => {
                        let Reverse((now, _, ev)) = self.world.events.pop().unwrap();
                        self.world.handle(&mut self.disp, self.scn, now, ev);
                    }
                }
            } else {
                self.disp.advance(&mut self.world, t);
            }
        }
    }

    /// Runs to the horizon and assembles the result.
    /// A run cut short by its bound on events covers the time before the
    /// cut, as if its horizon were there.
    pub fn finish(mut self) -> RunResult {
        self.run_until(self.horizon);
        let events = self.events();
        let wall = self.started.elapsed();
        let end = self.cut_at.unwrap_or(self.horizon);
        let mut result = self
            .world
            .finish(&mut self.disp, self.scn, end, self.seed, events, wall);
        if let Some(cut) = self.cut_at {
            result.limits.push(format!(
                "events: the run reached {} events (--max-events) at {} of its {} horizon: \
                 it covers the time before that",
                self.max_events,
                cut - Instant::ZERO,
                self.horizon - Instant::ZERO
            ));
        }
        result
    }
}
