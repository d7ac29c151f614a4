//! Running live: the options of `hsched live`, the run on this machine's
//! CPUs with its guard, the simulation beside it, and what a run that
//! stopped early says.

use crate::guard::RunGuard;
use crate::load::Loaded;
use crate::PipelineError;
use hsched_core::Duration;
use hsched_model::RunResult;
use std::path::PathBuf;

/// How to run a scenario live: the options of `hsched live`.
#[derive(Clone, Default)]
pub struct LiveRunOptions {
    /// The backend asked for (`None`: sched_ext where this hsched and the
    /// kernel offer it, else the agent).
    pub backend: Option<hsched_live::run::Backend>,
    /// Park a thread off its CPU by stopping its process (the agent's).
    pub hard_parking: bool,
    /// Under sched_ext, only the scenario's threads are under hsched.
    pub partial: bool,
    /// Speculative wakeups.
    pub speculate: bool,
    /// Overrides the scenario's horizon.
    pub horizon: Option<Duration>,
    /// Threads that are existing processes: (thread name, pid).
    pub attach: Vec<(String, i32)>,
    /// The real CPU the agent runs on.
    pub agent_cpu: Option<usize>,
    /// Leave Linux's autogroup on.
    pub keep_autogroup: bool,
    /// Leave the scenario's commands running at the end.
    pub keep_commands: bool,
    /// Record the timeline.
    pub trace: bool,
    /// Where to listen for control requests.
    pub control: Option<PathBuf>,
    /// The guardian program and its leading arguments (the command line:
    /// its own executable and `__guardian`).
    pub guardian: Vec<std::ffi::OsString>,
    /// The worker program and its leading arguments (`__worker`).
    pub worker: Vec<std::ffi::OsString>,
    /// What asks the run to stop early (SIGINT, SIGTERM, a caller's stop).
    pub stop: Option<hsched_live::signals::StopHandle>,
}

impl LiveRunOptions {
    /// The backend that runs, and why sched_ext was not picked where it was
    /// not asked for; options that contradict each other are refused here,
    /// before anything is loaded.
    pub fn pick_backend(
        &self,
    ) -> Result<(hsched_live::run::Backend, Option<String>), PipelineError> {
        use hsched_live::run::Backend;
        if self.speculate && self.hard_parking {
            return Err(PipelineError::Input(
                "--speculate runs a thread before the hierarchy has decided on it; --park hard promises a parked thread gets nothing: choose one".into(),
            ));
        }
        if self.hard_parking && self.backend == Some(Backend::Scx) {
            return Err(PipelineError::Input(
                "--park hard is the user-space agent's (`--backend agent`): under sched_ext a thread off its CPU waits in the scheduler's custody".into(),
            ));
        }
        Ok(match self.hard_parking {
            true => (Backend::Agent, None),
            false => Backend::pick(self.backend),
        })
    }
}

/// A live run: its result, labelled with what the analysis promised, and
/// why it ended before its horizon if it did.
pub struct LiveRun {
    pub result: RunResult,
    pub interrupted: Option<hsched_live::agent::Interrupted>,
    /// The timeline was asked for and given up during the run (past
    /// `MAX_KEPT_EVENTS`).
    pub trace_lost: bool,
}

/// Runs `loaded` live on this machine's CPUs with `opts` on `backend`
/// (from [`LiveRunOptions::pick_backend`]), its changes guarded by `guard`:
/// what `hsched live` does between reading the scenario and writing the
/// outputs. Needs root.
pub fn live(
    loaded: &Loaded,
    guard: &RunGuard,
    opts: &LiveRunOptions,
    (backend, not_scx): (hsched_live::run::Backend, Option<String>),
) -> Result<LiveRun, PipelineError> {
    let file = loaded.file();
    if opts.partial && backend != hsched_live::run::Backend::Scx {
        return Err(PipelineError::Input(match not_scx {
            Some(why) => format!(
                "--partial is a mode of the sched_ext backend, which is not available: {why}"
            ),
            None => "--partial is a mode of the sched_ext backend (`--backend scx`)".into(),
        }));
    }
    let live_opts = hsched_live::run::LiveOptions {
        backend,
        partial: opts.partial,
        guardian: opts.guardian.clone(),
        worker: opts.worker.clone(),
        horizon: opts.horizon,
        hard_parking: opts.hard_parking,
        attach: opts.attach.clone(),
        trace: opts.trace,
        control: opts.control.clone(),
        agent_cpu: opts.agent_cpu,
        speculate: opts.speculate,
        keep_autogroup: opts.keep_autogroup,
        policies: loaded.infos(),
        keep_commands: opts.keep_commands,
        stop: opts.stop.clone(),
        guard: Some(guard.shared()),
    };
    let hsched_live::run::Outcome {
        mut result,
        interrupted,
    } = hsched_live::run::run_to_outcome(&loaded.scenario, &live_opts)
        .map_err(|e| PipelineError::Input(format!("{file}: {e}")))?;
    if let Some(why) = not_scx {
        result.log.insert(
            0,
            hsched_model::LogEntry {
                at: hsched_core::Instant::ZERO,
                kind: hsched_model::LogKind::Platform,
                text: format!("backend: the user-space agent (sched_ext not used: {why})"),
            },
        );
    }
    guard.label(&mut result);
    let trace_lost = opts.trace && result.trace.is_none();
    Ok(LiveRun {
        result,
        interrupted,
        trace_lost,
    })
}

/// The simulation of a live run's scenario to the same end (`hsched live
/// --compare-sim`): the same seed, a guard of its own; `horizon` is the
/// live run's override.
pub fn simulate_beside(
    loaded: &Loaded,
    guard: &RunGuard,
    run: &LiveRun,
    horizon: Option<Duration>,
) -> Result<RunResult, PipelineError> {
    let scn = &loaded.scenario;
    let sim_guard = guard.fresh(scn);
    let opts = hsched_sim::SimOptions {
        // Stopped early: the simulation to the same end.
        horizon: match run.interrupted {
            Some(_) => Some(run.result.horizon),
            None => horizon,
        },
        guard: Some(sim_guard.shared()),
        ..Default::default()
    };
    let sim = hsched_sim::Simulation::new(scn, &opts, &loaded.infos())
        .map_err(|e| PipelineError::Input(format!("{}: {e}", loaded.file())))?;
    let mut simulated = sim.finish();
    sim_guard.label(&mut simulated);
    Ok(simulated)
}

/// Why a live run's timeline was not kept.
pub fn live_trace_lost_message(file: &str) -> String {
    format!(
        "{file}: the timeline needs more than {} switches and wakeups \
         (MAX_KEPT_EVENTS): the trace and report were not written (the other \
         outputs were): shorten --horizon",
        hsched_live::observe::MAX_KEPT_EVENTS
    )
}

/// What ended a live run before its horizon, and that everything was
/// given back.
pub fn live_stopped_message(
    why: &hsched_live::agent::Interrupted,
    result: &RunResult,
    keep_commands: bool,
) -> String {
    let commands = if keep_commands {
        "its commands left running"
    } else {
        "its commands ended"
    };
    format!(
        "hsched live: {why}: the run stopped at {}, the outputs cover the time that ran; every thread given back, {commands}",
        hsched_core::Instant::ZERO + result.horizon
    )
}
