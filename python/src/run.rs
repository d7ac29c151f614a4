//! Scenarios, runs and analyses: `load`, `simulate`, `live`, `check`,
//! `policies`, `repro`. Everything goes through the run pipeline
//! (`hsched_pipeline`), so a scenario loaded here parses, analyses,
//! simulates and writes exactly as `hsched sim` and `hsched check` do; the
//! Python package (`hsched/_run.py`) turns what these return into
//! DataFrames.

mod catalog;
mod convert;
pub(crate) mod live;
mod tables;

use hsched_analysis::compose::Analysis;
use hsched_core::Duration;
use hsched_model::RunResult;
use hsched_pipeline::{self as pipeline, Extras, Loaded, PipelineError, RunOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;

/// What the policies registered from Python add to every scenario loaded
/// from now on, with the plugin libraries `plugins`.
fn extras(plugins: Vec<PathBuf>) -> Extras {
    Extras {
        plugin_paths: plugins,
        policies: crate::policy::extra_infos(),
        hls_rules: crate::policy::hls_rules(),
    }
}

/// A scenario, parsed and checked (`hsched.Scenario` wraps it).
#[pyclass(name = "Scenario", module = "hsched._hsched", frozen)]
pub struct PyScenario {
    loaded: Loaded,
}

impl PyScenario {
    fn load(
        py: Python<'_>,
        file: &str,
        load: impl FnOnce() -> Result<Loaded, PipelineError>,
    ) -> PyResult<Self> {
        match load() {
            Ok(loaded) => Ok(PyScenario { loaded }),
            Err(e) => Err(convert::error(py, e, file, |_| Ok(py.None()))),
        }
    }
}

#[pymethods]
impl PyScenario {
    /// The scenario's name (its `name` key, else the file's stem).
    #[getter]
    fn name(&self) -> &str {
        &self.loaded.scenario.name
    }
    #[getter]
    fn description(&self) -> &str {
        &self.loaded.scenario.description
    }
    /// The name its messages give it: the path as given, or the text's name.
    #[getter]
    fn file(&self) -> String {
        self.loaded.file()
    }
    #[getter]
    fn horizon_ns(&self) -> u64 {
        self.loaded.scenario.horizon.as_nanos()
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.loaded.scenario.seed
    }
    #[getter]
    fn cpus(&self) -> u32 {
        self.loaded.scenario.machine.cpus
    }
    /// The TOML it was parsed from (an rt-app file's import).
    #[getter]
    fn text(&self) -> &str {
        &self.loaded.text
    }
    #[getter]
    fn threads(&self) -> Vec<String> {
        self.loaded
            .scenario
            .threads
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }
    /// The scheduler instances at the start, parents before children as
    /// the file gives them.
    #[getter]
    fn schedulers(&self) -> Vec<(String, String)> {
        self.loaded
            .scenario
            .schedulers
            .iter()
            .map(|s| (s.name.clone(), s.policy.clone()))
            .collect()
    }
    #[getter]
    fn default_scheduler(&self) -> &str {
        &self.loaded.scenario.default_scheduler
    }
}

/// Reads and parses a scenario file (TOML, or an rt-app `.json`), as
/// `hsched sim FILE --plugin P...` does.
#[pyfunction]
#[pyo3(signature = (path, plugins = Vec::new()))]
fn load_path(py: Python<'_>, path: PathBuf, plugins: Vec<PathBuf>) -> PyResult<PyScenario> {
    let file = path.display().to_string();
    PyScenario::load(py, &file, || Loaded::from_path(&path, extras(plugins)))
}

/// Parses scenario text; `name` is the file name its messages give.
#[pyfunction]
#[pyo3(signature = (text, name, plugins = Vec::new()))]
fn load_text(
    py: Python<'_>,
    text: String,
    name: &str,
    plugins: Vec<PathBuf>,
) -> PyResult<PyScenario> {
    PyScenario::load(py, name, || Loaded::from_text(text, name, extras(plugins)))
}

/// The TOML text of a scenario given as a dict; `name` is the name its
/// errors give it.
#[pyfunction]
fn toml_of(py: Python<'_>, value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    convert::toml_of(py, value, name)
}

/// Nanoseconds of a duration as scenarios write it (`10ms`, `1.5s`).
#[pyfunction]
fn parse_duration(text: &str) -> PyResult<u64> {
    Duration::parse(text)
        .map(Duration::as_nanos)
        .map_err(PyValueError::new_err)
}

/// A scenario's labelled hierarchy (`hsched check`; `hsched.Analysis`
/// wraps it).
#[pyclass(name = "Analysis", module = "hsched._hsched", frozen)]
pub struct PyAnalysis {
    analysis: Analysis,
    scenario: Py<PyScenario>,
}

#[pymethods]
impl PyAnalysis {
    #[getter]
    fn composes(&self) -> bool {
        self.analysis.composes()
    }
    /// Each error, one message each.
    #[getter]
    fn errors(&self) -> Vec<String> {
        self.analysis.errors().map(|p| p.message.clone()).collect()
    }
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.analysis
            .warnings()
            .map(|p| p.message.clone())
            .collect()
    }
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.analysis.notes.clone()
    }
    /// "the hierarchy composes" or its errors.
    #[getter]
    fn verdict(&self) -> String {
        self.analysis.verdict()
    }
    /// What `hsched check FILE` prints.
    fn text(&self) -> String {
        let s = &self.scenario.get().loaded;
        pipeline::check_text(&s.file(), &s.scenario, &self.analysis)
    }
    /// `hsched check --json` (without its final newline).
    fn json(&self) -> String {
        hsched_analysis::draw::json(&self.analysis)
    }
    /// `hsched check --svg`: the hierarchy drawn like HLS Fig. 3.
    fn svg(&self) -> String {
        hsched_analysis::draw::svg(&self.scenario.get().loaded.scenario, &self.analysis)
    }
    /// `hsched check --dot`.
    fn dot(&self) -> String {
        hsched_analysis::draw::dot(&self.scenario.get().loaded.scenario, &self.analysis)
    }
    /// One dict per labelled edge, in the order `check` walks them.
    fn edge_rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows = PyList::empty(py);
        for e in &self.analysis.edges {
            let label = hsched_analysis::compose::Received {
                guarantee: e.guarantee,
                vps: e.vps,
                refused: e.refused,
            };
            let d = PyDict::new(py);
            d.set_item("parent", e.from.as_deref())?;
            d.set_item("child", &e.to)?;
            d.set_item(
                "child_kind",
                if e.to_thread { "thread" } else { "scheduler" },
            )?;
            d.set_item("vps", e.vps)?;
            d.set_item("label", label.to_string())?;
            d.set_item("guarantee", e.guarantee.to_string())?;
            d.set_item("kind", e.guarantee.kind().name())?;
            let share = e.guarantee.share();
            d.set_item("share", share.map(|s| s.to_string()))?;
            d.set_item(
                "share_per_vp",
                share.map(|s| s.num() as f64 / s.den() as f64),
            )?;
            d.set_item("refused", e.refused)?;
            d.set_item("why", e.why.as_deref())?;
            d.set_item(
                "taken_as",
                e.taken_as.as_ref().map(|t| t.result.to_string()),
            )?;
            rows.append(d)?;
        }
        Ok(rows)
    }
    /// One dict per problem (errors and warnings).
    fn problem_rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows = PyList::empty(py);
        for p in &self.analysis.problems {
            let d = PyDict::new(py);
            d.set_item("severity", p.severity.to_string())?;
            d.set_item("node", &p.node)?;
            d.set_item("edge_from", p.edge.as_ref().and_then(|(f, _)| f.as_deref()))?;
            d.set_item("edge_to", p.edge.as_ref().map(|(_, t)| t.as_str()))?;
            d.set_item("message", &p.message)?;
            rows.append(d)?;
        }
        Ok(rows)
    }
}

/// Analyses a scenario's hierarchy as `hsched check` does.
#[pyfunction]
fn check(py: Python<'_>, scenario: Py<PyScenario>) -> PyResult<PyAnalysis> {
    let loaded = &scenario.get().loaded;
    let analysis = loaded
        .analysis()
        .map_err(|e| convert::error(py, e, &loaded.file(), |_| Ok(py.None())))?;
    Ok(PyAnalysis {
        analysis,
        scenario: scenario.clone_ref(py),
    })
}

/// A finished simulation (`hsched.Run` wraps it).
#[pyclass(name = "Run", module = "hsched._hsched", frozen)]
pub struct PyRun {
    result: RunResult,
    scenario: Py<PyScenario>,
    /// The analysis at time 0 (the report draws it).
    initial: Analysis,
    /// Why the timeline was not kept, if it was asked for and was not.
    trace_lost: Option<String>,
    /// Why the run stopped short of its horizon, if it did.
    cut: Option<String>,
}

impl PyRun {
    fn timeline(&self) -> PyResult<&RunResult> {
        match (&self.result.trace, &self.trace_lost) {
            (Some(_), _) => Ok(&self.result),
            (None, Some(why)) => Err(PyValueError::new_err(why.clone())),
            (None, None) => Err(PyValueError::new_err(
                "the run kept no timeline: simulate with trace=True",
            )),
        }
    }
}

#[pymethods]
impl PyRun {
    /// `hsched sim FILE --json -` without the last of its two final
    /// newlines.
    fn to_json(&self) -> String {
        pipeline::metrics_json(&self.result)
    }
    /// What `hsched sim FILE` prints.
    fn summary(&self) -> String {
        hsched_report::summary(&self.result)
    }
    /// `--trace PATH`: the timeline as Chrome/Perfetto trace JSON.
    fn write_trace(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let result = self.timeline()?;
        py.detach(|| {
            let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
            pipeline::write_trace(result, &mut out)?;
            std::io::Write::flush(&mut out)
        })?;
        Ok(())
    }
    /// The `--report` page.
    fn report_html(&self, py: Python<'_>) -> PyResult<String> {
        let result = self.timeline()?;
        let loaded = &self.scenario.get().loaded;
        let source = pipeline::RunSource {
            origin: &loaded.origin,
            scn: &loaded.scenario,
            analysis: &self.initial,
        };
        pipeline::html_report(result, &source)
            .map_err(|e| convert::error(py, e, &loaded.file(), |_| Ok(py.None())))
    }
    /// `--jobs-csv PATH`.
    fn write_jobs_csv(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let result = &self.result;
        py.detach(|| {
            let out = std::io::BufWriter::new(std::fs::File::create(&path)?);
            hsched_report::jobs_csv(result, out).map_err(|e| std::io::Error::other(e.to_string()))
        })?;
        Ok(())
    }
    /// The columns of table `name` (threads, schedulers, jobs, segments,
    /// marks, cpus, log); see `tables.rs` for their encoding.
    fn table<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyList>> {
        let r = &self.result;
        let table = match name {
            "threads" => tables::threads(r),
            "schedulers" => tables::schedulers(r),
            "jobs" => tables::jobs(r),
            "cpus" => tables::cpus(r),
            "log" => tables::log(r),
            "segments" => tables::segments(self.timeline()?).expect("a timeline"),
            "marks" => tables::marks(self.timeline()?).expect("a timeline"),
            _ => return Err(PyValueError::new_err(format!("no table `{name}`"))),
        };
        table.into_py(py)
    }
    #[getter]
    fn scenario(&self, py: Python<'_>) -> Py<PyScenario> {
        self.scenario.clone_ref(py)
    }
    #[getter]
    fn horizon_ns(&self) -> u64 {
        self.result.horizon.as_nanos()
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.result.seed
    }
    #[getter]
    fn cpus(&self) -> u32 {
        self.result.cpus
    }
    #[getter]
    fn platform(&self) -> &str {
        &self.result.platform
    }
    #[getter]
    fn events(&self) -> u64 {
        self.result.events
    }
    #[getter]
    fn decisions(&self) -> u64 {
        self.result.decisions
    }
    #[getter]
    fn wall_ns(&self) -> u64 {
        self.result.wall_ns
    }
    /// The bounds on what a run holds that this run reached.
    #[getter]
    fn limits(&self) -> Vec<String> {
        self.result.limits.clone()
    }
    #[getter]
    fn has_timeline(&self) -> bool {
        self.result.trace.is_some()
    }
    /// Why the run stopped short of its horizon (`max_events`), if it did.
    #[getter]
    fn cut(&self) -> Option<String> {
        self.cut.clone()
    }
}

/// Simulates a scenario as `hsched sim` does; returns the run and the
/// warnings the command line would print on stderr.
#[pyfunction]
#[pyo3(signature = (scenario, *, horizon_ns=None, seed=None, check=false, allow_uncomposed=false,
    trace=true, keep_jobs=hsched_sim::DEFAULT_KEEP_JOBS, trace_limit=hsched_sim::DEFAULT_TRACE_LIMIT,
    max_events=hsched_sim::DEFAULT_MAX_EVENTS))]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `hsched.simulate`
fn simulate(
    py: Python<'_>,
    scenario: Py<PyScenario>,
    horizon_ns: Option<u64>,
    seed: Option<u64>,
    check: bool,
    allow_uncomposed: bool,
    trace: bool,
    keep_jobs: usize,
    trace_limit: usize,
    max_events: u64,
) -> PyResult<(PyRun, Vec<String>)> {
    let loaded = &scenario.get().loaded;
    let file = loaded.file();
    let horizon = horizon_ns.map(Duration::from_nanos);
    if let Some(problem) = horizon.and_then(hsched_model::horizon_problem) {
        return Err(PyValueError::new_err(format!("horizon: {problem}")));
    }
    let opts = RunOptions {
        horizon,
        seed,
        trace,
        check_invariants: check,
        keep_jobs,
        trace_limit,
        max_events,
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
    let (guard, why) = loaded.to_run(allow_uncomposed).map_err(fail)?;
    let mut warnings: Vec<String> = why
        .map(|w| format!("{w}\n(running it anyway: allow_uncomposed=True)"))
        .into_iter()
        .collect();
    let infos = loaded.infos();
    // The simulation runs without the GIL: other Python threads go on, and
    // a policy written in Python takes the GIL for each of its callbacks.
    let finished = py.detach(|| {
        let mut sim = pipeline::simulation(&file, &loaded.scenario, &opts, &guard, &infos)?;
        sim.run_until(sim.horizon());
        let (cut_at, horizon) = (sim.cut_at(), sim.horizon());
        let mut result = sim.finish();
        guard.label(&mut result);
        Ok::<_, PipelineError>((result, cut_at, horizon))
    });
    let (result, cut_at, horizon) = finished.map_err(fail)?;
    warnings.extend(pipeline::uncomposed_changes(&result));
    let trace_lost =
        (trace && result.trace.is_none()).then(|| pipeline::trace_lost_message(&file, trace_limit));
    let cut = cut_at.map(|c| pipeline::cut_message(&file, max_events, c, horizon));
    let run = PyRun {
        result,
        scenario: scenario.clone_ref(py),
        initial: guard.initial,
        trace_lost,
        cut,
    };
    Ok((run, warnings))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyScenario>()?;
    m.add_class::<PyAnalysis>()?;
    m.add_class::<PyRun>()?;
    m.add_function(wrap_pyfunction!(load_path, m)?)?;
    m.add_function(wrap_pyfunction!(load_text, m)?)?;
    m.add_function(wrap_pyfunction!(toml_of, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::policy_rows, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::repro_entries, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::repro_run, m)?)?;
    Ok(())
}
