//! `hsched.live`: a scenario's hierarchy scheduling real processes on this
//! machine's CPUs, through the run pipeline's live step
//! (`hsched_pipeline::live`), with the policies registered from
//! Python; and `_live_process`, the guardian and worker processes it
//! starts.
//!
//! What differs from `hsched live` is what an interpreter imposes:
//! - The guardian and the workers are separate processes, and this
//!   process's executable is the interpreter: they are started as
//!   `python -I -S hsched/_live_boot.py EXTENSION ROLE ...`, which loads
//!   this extension module alone and calls [`_live_process`] (see
//!   `_live_boot.py` for why not the `hsched` binary).
//! - The interpreter owns SIGINT (it raises `KeyboardInterrupt`), so no
//!   signal handler is installed: the run goes on another thread, and this
//!   one runs the interpreter's pending signal handlers every
//!   [`SIGNAL_CHECK`]; when one raises, the run is stopped in order
//!   (`StopRequest`, as SIGINT stops `hsched live`) and the exception
//!   is handed back with the run. A second one during that stop ends the
//!   process at once, as a second Ctrl-C ends `hsched live` (the guardian
//!   gives the threads back).
//! - The agent raises its own thread to `SCHED_FIFO` and pins it: on a
//!   thread of its own, that ends with the run, the caller's thread is
//!   left as it was. It also locks the process's memory (`mlockall`),
//!   which is undone after the run: the interpreter goes on.

use super::{convert, PyAnalysis, PyRun, PyScenario};
use hsched_core::Duration;
use hsched_live::agent::Interrupted;
use hsched_live::run::Backend;
use hsched_pipeline::{self as pipeline, LiveRunOptions, PipelineError};
use pyo3::exceptions::{PyPermissionError, PyValueError};
use pyo3::prelude::*;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc;

/// How often the waiting thread runs the interpreter's signal handlers:
/// a Ctrl-C stops the run within this.
const SIGNAL_CHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// Why this process cannot run live, or `None` if it can: the agent and
/// the guardian take `SCHED_FIFO`, which needs root (or CAP_SYS_NICE with a
/// real-time limit).
#[pyfunction]
fn live_unavailable() -> Option<String> {
    hsched_live::sys::realtime_allowed().err().map(|e| {
        format!(
            "hsched.live schedules real threads from a real-time agent and needs root \
             (or CAP_SYS_NICE with a real-time limit): this process cannot take SCHED_FIFO ({e})"
        )
    })
}

/// How a live run ended early: `(kind, message, exception)`, where kind is
/// `signal` (a signal handler of the interpreter raised `exception`),
/// `guardian` or `ejected`.
type Stop = (&'static str, String, Option<PyErr>);

/// Runs a scenario live as `hsched live` does; returns the run, the
/// warnings the command line prints on stderr, the simulation beside it
/// and the comparison table (`compare_sim`), and how it ended early, if
/// it did. `guardian` and `worker` are the commands that start those
/// processes.
#[pyfunction]
#[pyo3(signature = (scenario, *, guardian, worker, horizon_ns=None, backend=None,
    allow_uncomposed=false, trace=true, compare_sim=false, park_hard=false, speculate=false,
    partial=false, attach=Vec::new(), agent_cpu=None, keep_autogroup=false,
    keep_commands=false, socket=None))]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `hsched.live`
#[allow(clippy::type_complexity)] // one tuple, unpacked by `hsched.live`
fn live(
    py: Python<'_>,
    scenario: Py<PyScenario>,
    guardian: Vec<OsString>,
    worker: Vec<OsString>,
    horizon_ns: Option<u64>,
    backend: Option<&str>,
    allow_uncomposed: bool,
    trace: bool,
    compare_sim: bool,
    park_hard: bool,
    speculate: bool,
    partial: bool,
    attach: Vec<(String, i32)>,
    agent_cpu: Option<usize>,
    keep_autogroup: bool,
    keep_commands: bool,
    socket: Option<PathBuf>,
) -> PyResult<(
    PyRun,
    Vec<String>,
    Option<(PyRun, String)>,
    Option<(&'static str, String, Option<Py<PyAny>>)>,
)> {
    if let Some(why) = live_unavailable() {
        return Err(PyPermissionError::new_err(why));
    }
    let loaded = &scenario.get().loaded;
    let file = loaded.file();
    let horizon = horizon_ns.map(Duration::from_nanos);
    if let Some(problem) = horizon.and_then(hsched_model::horizon_problem) {
        return Err(PyValueError::new_err(format!("horizon: {problem}")));
    }
    let backend = match backend {
        None => None,
        Some("agent") => Some(Backend::Agent),
        Some("scx") => Some(Backend::Scx),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "backend: {other:?}: expected \"agent\", \"scx\" or None"
            )))
        }
    };
    let opts = LiveRunOptions {
        backend,
        hard_parking: park_hard,
        partial,
        speculate,
        horizon,
        attach,
        agent_cpu,
        keep_autogroup,
        keep_commands,
        trace,
        control: Some(socket.unwrap_or_else(|| {
            PathBuf::from(hsched_live::control::SOCKET_DIR)
                .join(format!("hsched-{}.sock", std::process::id()))
        })),
        guardian,
        worker,
        stop: None,
    };
    let fail = |e: PipelineError| {
        convert::error(py, e, &file, |a| {
            Ok(Py::new(
                py,
                PyAnalysis {
                    analysis: a,
                    scenario: scenario.clone_ref(py),
                },
            )?
            .into_any())
        })
    };
    // The command line's refusals, in the keyword arguments' words.
    if speculate && park_hard {
        return Err(PyValueError::new_err(
            "speculate=True runs a thread before the hierarchy has decided on it; \
             park=\"hard\" promises a parked thread gets nothing: choose one",
        ));
    }
    if park_hard && backend == Some(Backend::Scx) {
        return Err(PyValueError::new_err(
            "park=\"hard\" is the agent backend's (backend=\"agent\"): under sched_ext \
             a thread off its CPU waits in the scheduler's custody",
        ));
    }
    if backend == Some(Backend::Scx) {
        if let (_, Some(why)) = Backend::pick(None) {
            return Err(PyValueError::new_err(format!(
                "backend=\"scx\": the sched_ext backend does not run here: {why}"
            )));
        }
    }
    let picked = opts
        .pick_backend()
        .map_err(|e| PyValueError::new_err(hsched_cli::CliError::from(e).to_string()))?;
    if partial && picked.0 != Backend::Scx {
        let why = picked
            .1
            .as_deref()
            .unwrap_or("the agent backend was asked for");
        return Err(PyValueError::new_err(format!(
            "partial=True is a mode of the sched_ext backend, which does not run here: {why}"
        )));
    }
    let (guard, why) = loaded.to_run(allow_uncomposed).map_err(fail)?;
    let mut warnings: Vec<String> = why
        .map(|w| format!("{w}\n(running it anyway: allow_uncomposed=True)"))
        .into_iter()
        .collect();
    let request = hsched_live::signals::StopRequest::new()
        .map_err(|e| PyErr::from(std::io::Error::other(format!("a stop request: {e}"))))?;
    let opts = LiveRunOptions {
        stop: Some(request.handle()),
        ..opts
    };
    let guard = &guard;
    let ran = py.detach(|| {
        let (done, finished) = mpsc::channel();
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("hsched-live-agent".into())
                .spawn_scoped(s, || {
                    let run = pipeline::live(loaded, guard, &opts, picked);
                    let simulated = match (&run, compare_sim) {
                        (Ok(run), true) => {
                            Some(pipeline::simulate_beside(loaded, guard, run, horizon))
                        }
                        _ => None,
                    };
                    let _ = done.send(());
                    (run, simulated)
                })
                .map(|agent| {
                    let raised = wait_for(&finished, &request);
                    (agent.join(), raised)
                })
        })
    });
    // SAFETY: munlockall has no arguments; the agent's mlockall is undone.
    unsafe { libc::munlockall() };
    let (joined, raised) =
        ran.map_err(|e| PyErr::from(std::io::Error::other(format!("starting the agent: {e}"))))?;
    let (run, simulated) = match joined {
        Ok(done) => done,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    let run = run.map_err(fail)?;
    warnings.extend(pipeline::uncomposed_changes(&run.result));
    let stop: Option<Stop> = run.interrupted.as_ref().map(|why| {
        let message = pipeline::live_stopped_message(why, &run.result, keep_commands)
            .replace("the outputs cover", "the run covers");
        match why {
            Interrupted::Signal(_) => ("signal", message, raised),
            Interrupted::GuardianGone(_) => ("guardian", message, None),
            Interrupted::Ejected(_) => ("ejected", message, None),
        }
    });
    let beside = match simulated {
        Some(sim) => {
            let sim = sim.map_err(fail)?;
            let table = hsched_report::compare(&sim, &run.result);
            let sim_run = PyRun {
                result: sim,
                scenario: scenario.clone_ref(py),
                initial: guard.initial.clone(),
                trace_lost: None,
                cut: None,
            };
            Some((sim_run, table))
        }
        None => None,
    };
    let trace_lost = run
        .trace_lost
        .then(|| pipeline::live_trace_lost_message(&file));
    let live_run = PyRun {
        result: run.result,
        scenario: scenario.clone_ref(py),
        initial: guard.initial.clone(),
        trace_lost,
        cut: None,
    };
    let stop =
        stop.map(|(kind, message, e)| (kind, message, e.map(|e| e.into_value(py).into_any())));
    Ok((live_run, warnings, beside, stop))
}

/// Waits for the run to end (`finished`), running the interpreter's signal
/// handlers meanwhile; the first exception one raises asks the run to stop
/// (and is returned), a second ends the process at once.
fn wait_for(
    finished: &mpsc::Receiver<()>,
    request: &hsched_live::signals::StopRequest,
) -> Option<PyErr> {
    let mut raised: Option<PyErr> = None;
    loop {
        match finished.recv_timeout(SIGNAL_CHECK) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // Sent, or the agent's thread ended without sending (a panic,
            // which its join hands on).
            _ => return raised,
        }
        let Err(e) = Python::attach(|py| py.check_signals()) else {
            continue;
        };
        if raised.is_none() {
            request.ask(libc::SIGINT);
            raised = Some(e);
        } else {
            eprintln!(
                "hsched.live: interrupted again while stopping: ending the process now \
                 (the guardian gives every thread back)"
            );
            // As the command line's second Ctrl-C (signal-hook's shutdown):
            // no exit handlers, the agent's thread is mid-stop.
            // SAFETY: _exit ends the process; nothing runs after it.
            unsafe { libc::_exit(128 + libc::SIGINT) };
        }
    }
}

/// The guardian's or a worker's main (`role` `__guardian` or `__worker`,
/// as the command line's hidden subcommands), in a process started by
/// `hsched/_live_boot.py`; ends the process with its exit status.
#[pyfunction]
fn _live_process(role: &str, args: Vec<String>) -> PyResult<()> {
    let main: fn(&[String]) -> i32 = match role {
        "__guardian" => hsched_live::guardian::main_with_args,
        "__worker" => hsched_live::worker::main_with_args,
        other => {
            return Err(PyValueError::new_err(format!(
                "{other:?}: expected __guardian or __worker"
            )))
        }
    };
    // SIGINT at its default, as in the command line's processes: the
    // interpreter's handler would only set a flag nobody reads. (SIGPIPE
    // stays ignored, as the command line keeps it for these two.)
    // SAFETY: restoring a signal's default disposition.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
    std::process::exit(main(&args))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(live, m)?)?;
    m.add_function(wrap_pyfunction!(live_unavailable, m)?)?;
    m.add_function(wrap_pyfunction!(_live_process, m)?)?;
    Ok(())
}
