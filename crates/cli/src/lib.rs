//! The `hsched` command line: `sim`, `live`, `ctl`, `check`, `plot`,
//! `import`, `policies`, `repro`, `bench`, `sweep`.
//!
//! Exit codes: 0 success; 1 a run or a reproduction failed; 2 bad input
//! (scenario, arguments), with a message naming the file, key or line.

pub mod bench;
pub mod ctl;
mod error;
pub mod import;
pub mod import_simso;
mod manual;
mod output;
pub mod plot;
pub mod repro;
pub mod simso;
pub mod sweep;
mod to_run;
mod values;

pub use error::CliError;
pub use output::print_stdout;

use clap::{CommandFactory, Parser, Subcommand};
use hsched_core::Duration;
use hsched_pipeline::{self as pipeline, plugins};
use output::{stdout_colour, write_file};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use to_run::{load_to_run, warn_uncomposed};
use values::{parse_attach, parse_horizon};

#[derive(Parser, Debug)]
#[command(
    name = "hsched",
    version,
    about = "Hierarchical, loadable CPU scheduling: simulate, check and reproduce"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a scenario in the deterministic simulator and print a summary.
    Sim(SimArgs),
    /// Run a scenario for real: its hierarchy schedules the commands its
    /// threads name (`command = [...]`) on this machine's CPUs, from user
    /// space (needs root). Prints the same summary as `sim`.
    Live(LiveArgs),
    /// Talk to a running `hsched live` (root): message a scheduler for a
    /// thread, move a thread, load or unload a scheduler, show the status.
    Ctl(ctl::CtlArgs),
    /// The guardian process `live` starts (internal): restores every
    /// managed thread if the agent dies.
    #[command(name = "__guardian", hide = true)]
    Guardian {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The worker `live` starts for a thread without a command (internal):
    /// executes the thread's workload program.
    #[command(name = "__worker", hide = true)]
    Worker {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Check a scenario file and print its hierarchy, every edge labelled
    /// with its HLS guarantee; exits 2 if it does not compose. No thread
    /// runs and no scheduler is created, but the plugin libraries it names
    /// are loaded (their initialisation code runs) for their policies'
    /// parameters and HLS rules.
    Check(CheckArgs),
    /// Simulate a scenario and draw one figure of the run as SVG or PNG
    /// (the figures of `--report`); the hierarchy is `check --svg`.
    Plot(plot::PlotArgs),
    /// Turn a workload written for another tool into a scenario (TOML on
    /// stdout); what hsched cannot express is reported on stderr.
    Import(import::ImportArgs),
    /// List the registered policies with their parameters and documentation.
    Policies {
        /// Show one policy only.
        name: Option<String>,
        /// Also list the policies of a plugin library; repeatable.
        #[arg(long = "plugin", value_name = "PATH")]
        plugins: Vec<PathBuf>,
    },
    /// Run paper reproductions: each prints paper value, measured value, tolerance and verdict.
    Repro {
        /// Entry to run (see --list).
        name: Option<String>,
        /// List the entries.
        #[arg(long)]
        list: bool,
        /// Run every entry; exits 1 if any verdict fails.
        #[arg(long)]
        all: bool,
        /// The experiments on this machine's real CPUs (`hsched live`
        /// against plain Linux, side by side; needs root).
        #[arg(long)]
        live: bool,
        /// With --live: what schedules the real threads (as `hsched live
        /// --backend`).
        #[arg(long, value_enum, requires = "live")]
        backend: Option<BackendArg>,
        /// The timing entries: ratios the papers draw from timings on their
        /// hardware, measured side by side on this machine (build with
        /// --release; not run by --all alone).
        #[arg(long, conflicts_with = "live")]
        timing: bool,
    },
    /// Measure simulator throughput and decision cost per hierarchy level.
    Bench {
        /// Shorter runs (less precise), for a quick look.
        #[arg(long)]
        quick: bool,
        /// Instead: SimSo and hsched on the same periodic task sets, jobs
        /// per second of each and the ratio (SimSo is installed from PyPI
        /// into --simso-dir if it is not there).
        #[arg(long)]
        simso: bool,
        /// Where SimSo is (or is installed with pip --target); the
        /// cross-check test uses the default too.
        #[arg(long, value_name = "DIR", default_value = "target/simso-py")]
        simso_dir: PathBuf,
    },
    /// Run a parameter sweep (docs/sweep.md): a grid or random sample of
    /// scenarios, or generated task sets, in parallel, one CSV row per point;
    /// continues an interrupted run; --shard k/N splits it across machines.
    Sweep(sweep::SweepArgs),
    /// Print a shell completion script for hsched (e.g. `hsched completions
    /// bash > /etc/bash_completion.d/hsched`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print hsched's man page (roff: `hsched man | man -l -`), or with
    /// --out DIR write one page per command there (hsched.1, hsched-sim.1, ...).
    Man {
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// Scenario file (TOML), or an rt-app file (`.json`, imported).
    file: PathBuf,
    /// Load a policy plugin (a library built with hsched-plugin); repeatable.
    #[arg(long = "plugin", value_name = "PATH")]
    plugins: Vec<PathBuf>,
    /// Write the labelled hierarchy as Graphviz DOT; to stdout (instead of
    /// the text) without a path.
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "FILE")]
    dot: Option<PathBuf>,
    /// Write it as SVG, drawn like the HLS paper's Fig. 3; to stdout
    /// (instead of the text) without a path.
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write the analysis as JSON (stable keys); to stdout (instead of the
    /// text) without a path.
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct LiveArgs {
    /// Scenario file (TOML). A thread runs its `command`, or the process
    /// `--attach` names, or else hsched's worker executes its program.
    file: PathBuf,
    /// Override the scenario's horizon (e.g. 10s, 500ms; at most 1 day).
    #[arg(long, value_parser = parse_horizon)]
    horizon: Option<Duration>,
    #[command(flatten)]
    out: Outputs,
    /// Also run the scenario in the simulator (same seed) and print each
    /// thread's CPU share, wakeup latency and deadline misses in both
    /// worlds side by side.
    #[arg(long)]
    compare_sim: bool,
    /// Run a hierarchy that does not compose (HLS guarantees, as `hsched
    /// check` reports them) anyway, with a warning, instead of refusing it.
    #[arg(long)]
    allow_uncomposed: bool,
    /// Listen for control requests (`hsched ctl`, programs, the workers'
    /// `msg`) at PATH [default: /run/hsched/hsched-PID.sock].
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// How a thread off its CPU is held back: `soft` lowers it to
    /// SCHED_IDLE (Linux may still give it spare time), `hard` stops its
    /// process (it gets none).
    #[arg(long, value_enum, default_value_t = Parking::Soft)]
    park: Parking,
    /// Thread NAME of the scenario is the existing process PID: taken over
    /// instead of started, given back as it was at the end; repeatable.
    #[arg(long, value_name = "NAME=PID", value_parser = parse_attach)]
    attach: Vec<(String, i32)>,
    /// The CPU hsched's agent runs on. By default the first CPU the
    /// scenario's threads run on: it wakes at once there (an idle CPU
    /// elsewhere must wake first), at the cost of its own time on that CPU.
    #[arg(long, value_name = "CPU")]
    agent_cpu: Option<usize>,
    /// Speculate on wakeups: a thread the hierarchy ran as soon as it woke
    /// is left ready to run at its next wakeup, before the agent hears of
    /// it (latency near SCHED_FIFO's); where the hierarchy then decides
    /// otherwise, the thread is parked, and the log counts how often. The
    /// agent then runs off the scenario's CPUs (unless `--agent-cpu`). Not
    /// with `--park hard`. With the sched_ext backend, the BPF scheduler
    /// runs such a thread at its wakeup (for at most 1 ms before the
    /// hierarchy's decision).
    #[arg(long)]
    speculate: bool,
    /// Leave Linux's autogroup on. By default it is turned off for the run
    /// (and back on at the end): with it on, Linux shares a CPU between
    /// sessions before nice values count, so work started from another
    /// terminal takes half of a managed thread's CPU.
    #[arg(long)]
    keep_autogroup: bool,
    /// Load a policy plugin (a library built with hsched-plugin); repeatable.
    #[arg(long = "plugin", value_name = "PATH")]
    plugins: Vec<PathBuf>,
    /// Leave the scenario's commands running when the run ends (horizon,
    /// Ctrl-C, SIGTERM), given back to Linux as they started, instead of
    /// ending them with everything they started.
    #[arg(long)]
    keep_commands: bool,
    /// What schedules the real threads. By default `scx` where this hsched
    /// and the kernel offer it, else `agent` (and always `agent` with
    /// `--park hard`, which is its own); the summary's platform says which
    /// ran: `live-scx` or `live`.
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// With the sched_ext backend: only the scenario's threads (and what
    /// they start) are under hsched, and Linux's fair class runs before
    /// them. By default the whole machine is: every SCHED_NORMAL task, those
    /// the scenario does not name as one thread, `(others)`, of its default
    /// scheduler.
    #[arg(long)]
    partial: bool,
}

/// What a run writes besides its summary (`sim` and `live` alike).
#[derive(clap::Args, Debug)]
struct Outputs {
    /// Print metrics as JSON (stable keys) instead of the summary; with a
    /// path, write them there.
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one CSV row per job to FILE.
    #[arg(long, value_name = "FILE")]
    jobs_csv: Option<PathBuf>,
    /// Write the timeline as Chrome/Perfetto trace JSON to FILE.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Write a single-file HTML report to FILE: timelines, CPU share over
    /// time, latency CDFs, response-time histograms, the hierarchy and the
    /// scenario (records the timeline, as --trace does).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

impl Outputs {
    /// Whether the run must record its timeline.
    fn wants_trace(&self) -> bool {
        self.trace.is_some() || self.report.is_some()
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum BackendArg {
    /// hsched's sched_ext scheduler: the kernel runs what the hierarchy
    /// decides (a kernel with sched_ext; hsched built with `--features scx`).
    Scx,
    /// The user-space agent: priorities and parking, on any Linux.
    Agent,
}

impl From<BackendArg> for hsched_live::run::Backend {
    fn from(b: BackendArg) -> Self {
        match b {
            BackendArg::Scx => hsched_live::run::Backend::Scx,
            BackendArg::Agent => hsched_live::run::Backend::Agent,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Parking {
    Soft,
    Hard,
}

#[derive(clap::Args, Debug)]
struct SimArgs {
    /// Scenario file (TOML), or an rt-app file (`.json`, imported).
    file: PathBuf,
    /// Load a policy plugin (a library built with hsched-plugin); repeatable.
    #[arg(long = "plugin", value_name = "PATH")]
    plugins: Vec<PathBuf>,
    /// Override the scenario's horizon (e.g. 10s, 500ms; at most 1 day).
    #[arg(long, value_parser = parse_horizon)]
    horizon: Option<Duration>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    out: Outputs,
    /// Check every policy's invariants after every callback (slower).
    #[arg(long)]
    check: bool,
    /// Job records held in memory (at least 64); past that, jobs are
    /// counted in the metrics (response times from a histogram) and
    /// written to --jobs-csv as they end, and the summary says so.
    #[arg(long, value_name = "N", default_value_t = hsched_sim::DEFAULT_KEEP_JOBS)]
    keep_jobs: usize,
    /// Segments and marks a --trace or --report timeline may hold; a run
    /// that needs more writes its other outputs, then exits 2 naming it.
    #[arg(long, value_name = "N", default_value_t = hsched_sim::DEFAULT_TRACE_LIMIT)]
    trace_limit: usize,
    /// Events the run may process (a bound on its time that keeps it
    /// deterministic: millions a second); a run that needs more
    /// stops there, writes what it covered, then exits 2 naming it.
    #[arg(long, value_name = "N", default_value_t = hsched_sim::DEFAULT_MAX_EVENTS)]
    max_events: u64,
    /// Run a hierarchy that does not compose (HLS guarantees, as `hsched
    /// check` reports them) anyway, with a warning, instead of refusing it.
    #[arg(long)]
    allow_uncomposed: bool,
}

/// Whether the command line runs or talks to a live agent (`live`, `ctl`,
/// `repro --live`, the internal guardian and worker): those write to
/// sockets and pipes whose other end may go away and must then see the
/// error rather than die of SIGPIPE, so they keep SIGPIPE ignored and
/// write their stdout with [`print_stdout`]. Every other command may
/// take SIGPIPE's default.
pub fn talks_to_peers(args: &[OsString]) -> bool {
    let command = args.get(1).and_then(|c| c.to_str()).unwrap_or("");
    matches!(command, "live" | "ctl" | "__guardian" | "__worker")
        || (command == "repro" && args.iter().any(|a| a == "--live"))
}

/// Runs the command line; returns the exit code.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(CliError::Input(m)) => {
            eprintln!("error: {m}");
            2
        }
        Err(CliError::Failed(m)) => {
            eprintln!("{m}");
            1
        }
        Err(CliError::Stopped(m, code)) => {
            eprintln!("{m}");
            code
        }
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.cmd {
        Cmd::Sim(args) => sim(args),
        Cmd::Live(args) => live(&args),
        Cmd::Ctl(args) => ctl::command(args),
        Cmd::Worker { args } => std::process::exit(hsched_live::worker::main_with_args(&args)),
        Cmd::Guardian { args } => {
            std::process::exit(hsched_live::guardian::main_with_args(&args));
        }
        Cmd::Check(args) => check(&args),
        Cmd::Plot(args) => plot::command(&args),
        Cmd::Import(args) => import::command(args),
        Cmd::Policies { name, plugins } => policies(name.as_deref(), &plugins),
        Cmd::Repro {
            name,
            list,
            all,
            live,
            backend,
            timing,
        } => repro::command(
            name.as_deref(),
            list,
            all,
            repro::Set::pick(live, timing),
            backend.map(Into::into),
        ),
        Cmd::Bench {
            quick,
            simso: true,
            simso_dir,
        } => simso::bench(&simso_dir, quick),
        Cmd::Bench { quick, .. } => bench::command(quick),
        Cmd::Sweep(args) => sweep::command(args),
        Cmd::Completions { shell } => manual::completions(shell, &mut Cli::command()),
        Cmd::Man { out } => manual::man(&Cli::command(), out.as_deref()),
    }
}

fn sim(args: SimArgs) -> Result<(), CliError> {
    let (mut loaded, guard) = load_to_run(&args.file, &args.plugins, args.allow_uncomposed)?;
    let opts = pipeline::RunOptions {
        horizon: args.horizon,
        seed: args.seed,
        trace: args.out.wants_trace(),
        check_invariants: args.check,
        keep_jobs: args.keep_jobs,
        trace_limit: args.trace_limit,
        max_events: args.max_events,
    };
    let file = loaded.file();
    let infos = loaded.infos();
    let plugins = std::mem::take(&mut loaded.plugins);
    let mut sim = pipeline::simulation(&file, &loaded.scenario, &opts, &guard, &infos)?;
    let jobs_csv = match &args.out.jobs_csv {
        Some(path) => Some(StreamedJobs::start(path, &mut sim)?),
        None => None,
    };
    // From here the instances hold their plugin libraries open: a library
    // whose last instance the script unloads is closed then.
    drop(plugins);
    run_with_progress(&mut sim);
    let (cut_at, horizon) = (sim.cut_at(), sim.horizon());
    let mut result = sim.finish();
    guard.label(&mut result);
    warn_uncomposed(&result);
    let source = pipeline::RunSource {
        origin: &loaded.origin,
        scn: &loaded.scenario,
        analysis: &guard.initial,
    };
    if let Some(csv) = jobs_csv {
        csv.finish(&result)?;
    }
    // A timeline past --trace-limit was dropped during the run.
    let trace_lost = args.out.wants_trace() && result.trace.is_none();
    let out = Outputs {
        jobs_csv: None, // written above
        trace: args.out.trace.filter(|_| !trace_lost),
        report: args.out.report.filter(|_| !trace_lost),
        json: args.out.json,
    };
    write_outputs(&result, &out, &source)?;
    if let Some(cut) = cut_at {
        return Err(CliError::Input(pipeline::cut_message(
            &file,
            args.max_events,
            cut,
            horizon,
        )));
    }
    if trace_lost {
        return Err(CliError::Input(pipeline::trace_lost_message(
            &file,
            args.trace_limit,
        )));
    }
    Ok(())
}

/// Runs `sim` to its horizon with a progress bar on stderr by simulated
/// time, shown when stderr is a terminal and the run lasts over a second.
/// In steps: the events, and so the run, are the same as in one go.
fn run_with_progress(sim: &mut hsched_sim::Simulation) {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    const STEPS: u64 = 1000;
    let horizon = sim.horizon();
    let step = (horizon - hsched_core::Instant::ZERO)
        .as_nanos()
        .div_ceil(STEPS)
        .max(1);
    let bar = ProgressBar::with_draw_target(Some(STEPS), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {percent}% of the horizon  {elapsed_precise} (eta {eta})",
        )
        .expect("the template is valid"),
    );
    let started = std::time::Instant::now();
    let mut at = hsched_core::Instant::ZERO;
    while at < horizon && sim.cut_at().is_none() {
        at = at.saturating_add(Duration::from_nanos(step)).min(horizon);
        sim.run_until(at);
        if started.elapsed() > std::time::Duration::from_secs(1) {
            bar.set_position((at - hsched_core::Instant::ZERO).as_nanos() / step);
        }
    }
    bar.finish_and_clear();
}

/// The jobs CSV of a `sim` run, written as the run goes: the jobs it stops
/// holding (past --keep-jobs) as they are handed over, the rest at the end.
struct StreamedJobs {
    path: PathBuf,
    csv: std::rc::Rc<std::cell::RefCell<StreamedCsv>>,
}

struct StreamedCsv {
    out: hsched_report::JobsCsv<Box<dyn std::io::Write>>,
    /// The first write that failed; nothing more is written after it.
    error: Option<String>,
}

impl StreamedJobs {
    /// Creates the file (`-`: stdout), writes the header and hands `sim`
    /// the writer.
    fn start(path: &Path, sim: &mut hsched_sim::Simulation) -> Result<Self, CliError> {
        let writer: Box<dyn std::io::Write> = if path == Path::new("-") {
            Box::new(std::io::stdout())
        } else {
            let file = std::fs::File::create(path).map_err(|e| {
                CliError::Input(format!(
                    "cannot write the jobs CSV to {}: {e}",
                    path.display()
                ))
            })?;
            Box::new(std::io::BufWriter::new(file))
        };
        let out = hsched_report::JobsCsv::new(writer, sim.horizon()).map_err(|e| {
            CliError::Input(format!(
                "cannot write the jobs CSV to {}: {e}",
                path.display()
            ))
        })?;
        let csv = std::rc::Rc::new(std::cell::RefCell::new(StreamedCsv { out, error: None }));
        let sink = csv.clone();
        sim.set_job_sink(Box::new(move |job, thread| {
            let mut s = sink.borrow_mut();
            if s.error.is_none() {
                if let Err(e) = s.out.row(thread, job) {
                    s.error = Some(e.to_string());
                }
            }
        }));
        Ok(StreamedJobs {
            path: path.to_path_buf(),
            csv,
        })
    }

    /// Writes the jobs the result holds and flushes.
    fn finish(self, result: &hsched_model::RunResult) -> Result<(), CliError> {
        let fail = |e: String| {
            CliError::Input(format!(
                "cannot write the jobs CSV to {}: {e}",
                self.path.display()
            ))
        };
        let cell = std::rc::Rc::try_unwrap(self.csv)
            .map_err(|_| fail("the simulation still holds it".into()))?;
        let mut s = cell.into_inner();
        if let Some(e) = s.error {
            return Err(fail(e));
        }
        s.out.rows_of(result).map_err(|e| fail(e.to_string()))?;
        s.out.finish().map_err(|e| fail(e.to_string()))
    }
}

/// Writes a run's jobs CSV, trace and report where asked, then its metrics.
fn write_outputs(
    result: &hsched_model::RunResult,
    out: &Outputs,
    source: &pipeline::RunSource,
) -> Result<(), CliError> {
    if let Some(path) = &out.jobs_csv {
        write_file(path, "the jobs CSV", |w| {
            hsched_report::jobs_csv(result, w).map_err(|e| std::io::Error::other(e.to_string()))
        })?;
    }
    if let Some(path) = &out.trace {
        write_file(path, "the trace", |w| pipeline::write_trace(result, w))?;
    }
    if let Some(path) = &out.report {
        let html = pipeline::html_report(result, source)?;
        write_file(path, "the report", |w| w.write_all(html.as_bytes()))?;
    }
    print_result(result, out.json.as_deref())
}

/// The metrics as JSON (to `json`, `-` for stdout), or the summary.
fn print_result(result: &hsched_model::RunResult, json: Option<&Path>) -> Result<(), CliError> {
    match json {
        Some(path) => write_file(path, "the metrics", |w| {
            w.write_all(pipeline::metrics_json(result).as_bytes())?;
            w.write_all(b"\n")
        }),
        None => print_stdout(&hsched_report::summary_styled(result, stdout_colour())),
    }
}

fn live(args: &LiveArgs) -> Result<(), CliError> {
    let mut opts = pipeline::LiveRunOptions {
        backend: args.backend.map(Into::into),
        hard_parking: args.park == Parking::Hard,
        partial: args.partial,
        speculate: args.speculate,
        horizon: args.horizon,
        attach: args.attach.clone(),
        agent_cpu: args.agent_cpu,
        keep_autogroup: args.keep_autogroup,
        keep_commands: args.keep_commands,
        trace: args.out.wants_trace(),
        control: Some(args.socket.clone().unwrap_or_else(|| {
            Path::new(hsched_live::control::SOCKET_DIR)
                .join(format!("hsched-{}.sock", std::process::id()))
        })),
        ..Default::default()
    };
    let backend = opts.pick_backend()?;
    let (loaded, guard) = load_to_run(&args.file, &args.plugins, args.allow_uncomposed)?;
    let exe = std::env::current_exe().map_err(|e| {
        CliError::Failed(format!("finding the hsched program for the guardian: {e}"))
    })?;
    opts.guardian = vec![exe.clone().into_os_string(), "__guardian".into()];
    opts.worker = vec![exe.into_os_string(), "__worker".into()];
    // Held until the outputs are written: a Ctrl-C meanwhile stops in
    // order, a second one at once (the guardian restores the threads).
    let signal_error = |e| CliError::Failed(format!("handling SIGINT and SIGTERM: {e}"));
    let signals = hsched_live::signals::StopSignals::install().map_err(signal_error)?;
    opts.stop = Some(signals.handle().map_err(signal_error)?);
    let run = pipeline::live(&loaded, &guard, &opts, backend)?;
    let result = &run.result;
    warn_uncomposed(result);
    let source = pipeline::RunSource {
        origin: &loaded.origin,
        scn: &loaded.scenario,
        analysis: &guard.initial,
    };
    // A timeline past what a run keeps was given up during the run.
    let out = Outputs {
        jobs_csv: args.out.jobs_csv.clone(),
        trace: args.out.trace.clone().filter(|_| !run.trace_lost),
        report: args.out.report.clone().filter(|_| !run.trace_lost),
        json: args.out.json.clone(),
    };
    write_outputs(result, &out, &source)?;
    if args.compare_sim {
        let simulated = pipeline::simulate_beside(&loaded, &guard, &run, args.horizon)?;
        print_stdout(&hsched_report::compare(&simulated, result))?;
    }
    // The plugin libraries stay open until no instance is left.
    drop(loaded);
    drop(signals);
    let Some(why) = &run.interrupted else {
        if run.trace_lost {
            return Err(CliError::Input(pipeline::live_trace_lost_message(
                &args.file.display().to_string(),
            )));
        }
        return Ok(());
    };
    let message = pipeline::live_stopped_message(why, result, args.keep_commands);
    match why {
        hsched_live::agent::Interrupted::Signal(sig) => Err(CliError::Stopped(message, 128 + sig)),
        hsched_live::agent::Interrupted::GuardianGone(_)
        | hsched_live::agent::Interrupted::Ejected(_) => Err(CliError::Failed(message)),
    }
}

fn check(args: &CheckArgs) -> Result<(), CliError> {
    let extras = pipeline::Extras {
        plugin_paths: args.plugins.clone(),
        ..Default::default()
    };
    let loaded = pipeline::Loaded::from_path(&args.file, extras)?;
    let analysis = loaded.analysis()?;
    let (file, scn) = (loaded.file(), &loaded.scenario);
    let to_stdout = |p: &Option<PathBuf>| p.as_deref() == Some(Path::new("-"));
    let text_on_stdout = !(to_stdout(&args.dot) || to_stdout(&args.svg) || to_stdout(&args.json));
    if text_on_stdout {
        print!("{}", pipeline::check_text(&file, scn, &analysis));
    }
    type Render = fn(&hsched_model::Scenario, &hsched_analysis::compose::Analysis) -> String;
    let outputs: [(&Option<PathBuf>, &str, Render); 3] = [
        (&args.dot, "the DOT drawing", hsched_analysis::draw::dot),
        (&args.svg, "the SVG drawing", hsched_analysis::draw::svg),
        (&args.json, "the JSON analysis", |_, a| {
            hsched_analysis::draw::json(a) + "\n"
        }),
    ];
    for (path, what, render) in outputs {
        if let Some(path) = path {
            let body = render(scn, &analysis);
            write_file(path, what, |w| w.write_all(body.as_bytes()))?;
        }
    }
    if analysis.composes() {
        Ok(())
    } else {
        Err(CliError::Input(pipeline::uncomposed(&file, &analysis)))
    }
}

fn policies(name: Option<&str>, plugin_paths: &[PathBuf]) -> Result<(), CliError> {
    let plugins = plugins::load(plugin_paths)?;
    let all: Vec<(Option<&str>, &hsched_core::PolicyInfo)> = hsched_policies::registry()
        .iter()
        .map(|i| (None, i))
        .chain(plugins.policies().map(|(label, i)| (Some(label), i)))
        .chain(
            hsched_analysis::rules::literature::infos()
                .iter()
                .map(|i| (None, i)),
        )
        .collect();
    let book = pipeline::rule_book();
    let list: Vec<_> = match name {
        Some(n) => vec![*all.iter().find(|(_, i)| i.name == n).ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|(_, p)| p.name).collect();
            CliError::Input(format!(
                "unknown policy `{n}` (known: {})",
                known.join(", ")
            ))
        })?],
        None => all,
    };
    for (plugin, info) in list {
        println!("{} — {}", info.name, info.summary);
        if let Some(label) = plugin {
            println!("  from plugin {label}");
            if let Some(rule) = plugins.hls_rule(info.name) {
                println!("  HLS rule (Table 1): {rule}");
            }
        } else if let Some(rule) = book.get(info.name) {
            println!("  HLS rule (Table 1): {}", rule.row());
        }
        for line in info.doc.lines() {
            println!("    {line}");
        }
        let show = |title: &str, specs: Vec<hsched_core::ParamSpec>| {
            if specs.is_empty() {
                return;
            }
            println!("  {title}:");
            for p in specs {
                let default = p
                    .default
                    .as_ref()
                    .map(|d| format!(" (default {d})"))
                    .unwrap_or_else(|| " (required)".into());
                println!("    {:<12} {}{default}: {}", p.name, p.kind, p.doc);
            }
        };
        show("parameters", (info.params)());
        show(
            "child parameters (set on each child's attachment)",
            (info.child_params)(),
        );
        let parents = if info.max_parents > 1 {
            format!("up to {} parents", info.max_parents)
        } else {
            "one parent".into()
        };
        let children = if info.max_children == u32::MAX {
            "any number of children".into()
        } else {
            format!("at most {} child(ren)", info.max_children)
        };
        println!("  shape: {parents}, {children}");
        println!();
    }
    Ok(())
}
