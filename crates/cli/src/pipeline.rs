//! The run pipeline below the command line: read a scenario (from a file
//! or from text), with plugin policies and policies the caller brings
//! (the Python package's), analyse its hierarchy, simulate it or run it
//! live on this machine's CPUs ([`live`]), label the run with what the
//! analysis promised, and turn the run into its outputs.
//!
//! `hsched sim`, `check`, `plot` and `live` go through it, and so does the
//! Python package (`python/`): both get the same parser, the same refusal
//! of a hierarchy that does not compose, the same simulation and live
//! options and the same bytes out, so the two cannot drift apart. What is the command
//! line's own (its flags, progress bar, stdout and exit codes) stays in
//! `lib.rs`.

use crate::plugins::{self, Plugins};
use crate::CliError;
use hsched_analysis::compose::Analysis;
use hsched_analysis::rules::RuleBook;
use hsched_core::{Duration, PolicyInfo};
use hsched_model::{RunResult, Scenario};
use std::path::{Path, PathBuf};

/// Why the pipeline stopped. The scenario parser's error stays whole (its
/// file, line, column and key), and so does the analysis of a hierarchy
/// that does not compose, so that a caller other than the command line can
/// hand them on as data; [`CliError`] is what the command line makes of
/// them.
#[derive(Debug)]
pub enum PipelineError {
    /// The scenario text is wrong: where and what.
    Scenario(hsched_scenario::ScenarioError),
    /// Other bad input (an unreadable file, a plugin, a policy's
    /// parameters at build time): the whole message, naming the file.
    Input(String),
    /// The hierarchy does not compose and the caller did not allow that.
    Uncomposed {
        file: String,
        analysis: Box<Analysis>,
    },
    /// Something failed that is not the input's fault.
    Failed(String),
}

impl From<CliError> for PipelineError {
    fn from(e: CliError) -> Self {
        match e {
            CliError::Input(m) => PipelineError::Input(m),
            CliError::Failed(m) | CliError::Stopped(m, _) => PipelineError::Failed(m),
        }
    }
}

impl From<PipelineError> for CliError {
    fn from(e: PipelineError) -> Self {
        match e {
            PipelineError::Scenario(e) => CliError::Input(plugins::render(e)),
            PipelineError::Input(m) => CliError::Input(m),
            PipelineError::Uncomposed { file, analysis } => CliError::Input(format!(
                "{}\n(`hsched check` shows the labelled hierarchy; --allow-uncomposed runs it anyway)",
                uncomposed(&file, &analysis)
            )),
            PipelineError::Failed(m) => CliError::Failed(m),
        }
    }
}

/// Where a scenario came from, for its errors and the report's copy of it.
#[derive(Clone, Debug)]
pub enum Origin {
    /// A file (TOML, or an rt-app `.json` imported on reading); the report
    /// shows the file as it is when the report is written.
    File(PathBuf),
    /// Text handed over with the name its messages give it.
    Text { name: String, text: String },
}

impl Origin {
    /// The name messages give the scenario: the path as given, or the
    /// text's name.
    pub fn name(&self) -> String {
        match self {
            Origin::File(path) => path.display().to_string(),
            Origin::Text { name, .. } => name.clone(),
        }
    }
}

/// What a caller adds to the built-in policies.
#[derive(Clone, Default)]
pub struct Extras {
    /// Plugin libraries (`--plugin`), loaded before those the scenario's
    /// `plugins` key names.
    pub plugin_paths: Vec<PathBuf>,
    /// Policies beyond the built-in ones and the plugins' (the Python
    /// package's), by name for the parser and the simulator.
    pub policies: Vec<&'static PolicyInfo>,
    /// Their rows of HLS Table 1, for the analysis: (policy, row).
    pub hls_rules: Vec<(&'static str, String)>,
}

/// A scenario read and parsed, with the plugins it and the caller named
/// (open while this lives) and the caller's policies.
pub struct Loaded {
    pub scenario: Scenario,
    /// The TOML parsed (an rt-app file's import).
    pub text: String,
    pub plugins: Plugins,
    pub origin: Origin,
    extras: Extras,
}

impl Loaded {
    /// Reads and parses the scenario file `path` (an rt-app `.json` is
    /// imported, its warnings on stderr), as `hsched sim FILE` does.
    pub fn from_path(path: &Path, extras: Extras) -> Result<Self, PipelineError> {
        let (text, file) = crate::import::scenario_text(path)?;
        let base = path.parent().unwrap_or(Path::new(""));
        Self::parse(&text, &file, base, Origin::File(path.to_path_buf()), extras)
    }

    /// Parses scenario text; `name` is the file name its errors give (and
    /// its default scenario name, the name's stem). The plugin paths its
    /// `plugins` key names are relative to the current directory.
    pub fn from_text(text: String, name: &str, extras: Extras) -> Result<Self, PipelineError> {
        let origin = Origin::Text {
            name: name.to_string(),
            text: text.clone(),
        };
        Self::parse(&text, name, Path::new(""), origin, extras)
    }

    fn parse(
        text: &str,
        file: &str,
        base: &Path,
        origin: Origin,
        extras: Extras,
    ) -> Result<Self, PipelineError> {
        let declared = hsched_scenario::plugins(text, file).map_err(PipelineError::Scenario)?;
        let mut plugins = plugins::load(&extras.plugin_paths)?;
        for (i, p) in declared.iter().enumerate() {
            plugins.add(&base.join(p), &format!("{file}: plugins[{i}]: "))?;
        }
        let registry: Vec<PolicyInfo> = plugins
            .registry()
            .into_iter()
            .chain(extras.policies.iter().map(|i| **i))
            .collect();
        let scenario = hsched_scenario::parse_with_registry(text, file, &registry)
            .map_err(PipelineError::Scenario)?;
        Ok(Loaded {
            scenario,
            text: text.to_string(),
            plugins,
            origin,
            extras,
        })
    }

    /// The name messages give the scenario.
    pub fn file(&self) -> String {
        self.origin.name()
    }

    /// The policies beyond the built-in ones, for the simulator: the
    /// plugins', then the caller's.
    pub fn infos(&self) -> Vec<&'static PolicyInfo> {
        let mut infos = self.plugins.infos();
        infos.extend(self.extras.policies.iter().copied());
        infos
    }

    /// The standard guarantee rules, each plugin policy's declared row of
    /// HLS Table 1 and the caller's rows.
    pub fn rule_book(&self) -> Result<RuleBook, PipelineError> {
        let mut book = self.plugins.rule_book()?;
        for (policy, row) in &self.extras.hls_rules {
            book.add_row(policy, row).map_err(|e| {
                PipelineError::Input(format!("policy `{policy}`: its HLS rule: {e}"))
            })?;
        }
        Ok(book)
    }

    /// The labelled hierarchy, as `hsched check` analyses it (a scheduler
    /// from the literature is analysed, not refused).
    pub fn analysis(&self) -> Result<Analysis, PipelineError> {
        Ok(hsched_analysis::compose::analyse(
            &self.scenario,
            &self.rule_book()?,
        ))
    }

    /// The analysis a run starts from, with the guard that re-analyses each
    /// change while it runs: refused unless the hierarchy composes or
    /// `allow_uncomposed`. With `allow_uncomposed`, the second value is
    /// why it does not compose (for the caller's warning).
    pub fn to_run(
        &self,
        allow_uncomposed: bool,
    ) -> Result<(RunGuard, Option<String>), PipelineError> {
        let file = self.file();
        let book = self.rule_book()?;
        hsched_analysis::rules::literature::refuse_to_run(&self.scenario)
            .map_err(|e| PipelineError::Input(format!("{file}: {e}")))?;
        let analysis = hsched_analysis::compose::analyse(&self.scenario, &book);
        let warning = match analysis.composes() {
            true => None,
            false if allow_uncomposed => Some(uncomposed(&file, &analysis)),
            false => {
                return Err(PipelineError::Uncomposed {
                    file,
                    analysis: Box::new(analysis),
                })
            }
        };
        let guard = RunGuard::new(&self.scenario, book, analysis, allow_uncomposed);
        Ok((guard, warning))
    }
}

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
/// built-in ones ([`Loaded::infos`]); ready to run.
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
pub fn cut_message(
    file: &str,
    max_events: u64,
    cut: hsched_core::Instant,
    horizon: hsched_core::Instant,
) -> String {
    format!(
        "{file}: the run needs more than {max_events} events (--max-events): it stopped at {} of its {} \
         horizon, and what it wrote covers the time before that: raise --max-events or \
         shorten --horizon",
        cut - hsched_core::Instant::ZERO,
        horizon - hsched_core::Instant::ZERO,
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

/// Why a scenario's hierarchy does not compose, as `check` and `sim` say it
/// (exit 2): the file, then each error.
pub fn uncomposed(file: &str, analysis: &Analysis) -> String {
    format!("{file}: {}", analysis.verdict())
}

/// What `hsched check` prints: a line on the scenario (`ok` only for a
/// hierarchy that composes), then the labelled hierarchy.
pub fn check_text(file: &str, scn: &Scenario, analysis: &Analysis) -> String {
    let verdict = if analysis.composes() {
        "ok"
    } else {
        "does not compose"
    };
    format!(
        "{file}: {verdict} — {} CPU(s), horizon {}, seed {}\n{}",
        scn.machine.cpus,
        scn.horizon,
        scn.seed,
        hsched_analysis::draw::text(scn, analysis)
    )
}

/// The changes a run let through that broke a promise (allowed with
/// `allow_uncomposed`), each `at TIME: what it breaks`: the log has them
/// too, but a run written as JSON would not show them.
pub fn uncomposed_changes(result: &RunResult) -> Vec<String> {
    result
        .log
        .iter()
        .filter(|e| e.kind == hsched_model::LogKind::Uncomposed)
        .map(|e| format!("at {}: {}", e.at, e.text))
        .collect()
}

/// What the HTML report shows besides the run: the scenario, where it came
/// from and its analysis.
pub struct RunSource<'a> {
    pub origin: &'a Origin,
    pub scn: &'a Scenario,
    pub analysis: &'a Analysis,
}

/// The metrics of a run as JSON (stable keys), ending in a newline
/// (`--json` prints one more after it).
pub fn metrics_json(result: &RunResult) -> String {
    hsched_report::metrics_json(result)
}

/// Writes the timeline of a run as Chrome/Perfetto trace JSON (`--trace`).
pub fn write_trace(result: &RunResult, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    hsched_report::perfetto_trace(result, out).map_err(|e| std::io::Error::other(e.to_string()))
}

/// The HTML report of a run of `source`.
pub fn html_report(result: &RunResult, source: &RunSource) -> Result<String, PipelineError> {
    let (name, text) = match source.origin {
        Origin::File(path) => (
            path.display().to_string(),
            hsched_scenario::input::read_text(path, "").unwrap_or_default(),
        ),
        Origin::Text { name, text } => (name.clone(), text.clone()),
    };
    let svg = hsched_analysis::draw::svg(source.scn, source.analysis);
    let input = hsched_report::html::ReportInput {
        scenario: Some(source.scn),
        source: Some((&name, &text)),
        hierarchy_svg: Some(&svg),
    };
    hsched_report::html::html_report(result, &input)
        .map_err(|e| PipelineError::Failed(format!("writing the report: {e}")))
}

/// A run's change guard: the analysis at time 0, re-run on every change
/// of the hierarchy the run makes, with what it promised whom from when.
pub struct RunGuard {
    guard: std::sync::Arc<std::sync::Mutex<hsched_analysis::guard::AnalysisGuard>>,
    /// The analysis at time 0 (the report draws it).
    pub initial: Analysis,
    book: RuleBook,
    allow_uncomposed: bool,
}

impl RunGuard {
    fn new(scn: &Scenario, book: RuleBook, analysis: Analysis, allow_uncomposed: bool) -> Self {
        let guard = hsched_analysis::guard::AnalysisGuard::new(
            scn,
            book.clone(),
            analysis.clone(),
            allow_uncomposed,
        );
        RunGuard {
            guard: std::sync::Arc::new(std::sync::Mutex::new(guard)),
            initial: analysis,
            book,
            allow_uncomposed,
        }
    }

    /// The handle a run's dispatcher consults.
    pub fn shared(&self) -> hsched_model::guard::SharedGuard {
        hsched_model::guard::SharedGuard(self.guard.clone())
    }

    /// A guard of its own for another run of `scn`, the same scenario.
    pub fn fresh(&self, scn: &Scenario) -> Self {
        RunGuard::new(
            scn,
            self.book.clone(),
            self.initial.clone(),
            self.allow_uncomposed,
        )
    }

    /// Writes what was promised each scheduler and thread into the run's
    /// result, so that the outputs show CPU received next to it, and from
    /// when where that was after the start. A thread is labelled with what
    /// it was promised under the scheduler it ended under; one that got
    /// there by a change the guard was not told of (none of the run's
    /// changes are hidden from it, but a platform may end a thread's stay
    /// itself) is not labelled.
    pub fn label(&self, result: &mut RunResult) {
        let guard = self.guard.lock().unwrap_or_else(|e| e.into_inner());
        let label = |p: &hsched_analysis::guard::Promise| {
            let share = p.received.share();
            let from = (p.since > hsched_core::Instant::ZERO).then_some(p.since);
            (Some(p.received.to_string()), share, from)
        };
        // The k-th node of a name is its k-th load.
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for node in &mut result.nodes {
            let k = seen.entry(node.name.as_str()).or_default();
            if let Some(p) = guard.scheduler_promises(&node.name).get(*k) {
                (node.guarantee, node.guaranteed_share, node.guaranteed_from) = label(p);
            }
            *k += 1;
        }
        for thread in &mut result.threads {
            match guard.thread_promise(&thread.name) {
                // A refused thread shows its refusal wherever it went: that
                // is why it went.
                Some(tp) if tp.under == thread.scheduler || tp.promise.received.refused => {
                    (
                        thread.guarantee,
                        thread.guaranteed_share,
                        thread.guaranteed_from,
                    ) = label(&tp.promise);
                }
                _ => {}
            }
        }
    }
}

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
