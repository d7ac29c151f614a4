//! The cost of a Python policy against a built-in one, on the seeded
//! periodic task sets `hsched bench --simso` uses (the EDF ones of
//! `hsched_cli::simso::speed_sets`: 8 tasks, 5-50ms periods, 90% and 110%
//! utilisation, one CPU), and SimSo on the same sets when it is installed.
//! `python -m hsched.bench` drives these and prints the table.
//!
//! Each task set goes through the SimSo XML and `hsched import simso`, as
//! in the CLI's comparison. The Python run swaps the scheduler for the
//! Python policy named, each thread attached with its relative
//! `deadline` only (what `hsched.examples.edf` takes).

use hsched_cli::simso::{self, Sched, TaskSet};
use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Msg, Params, ParentVp, PolicyInfo, Reject, Reply,
    Scheduler, Sender, SyncEvent, TimerKey,
};
use hsched_model::{RunResult, Scenario};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The EDF task sets of the CLI's speed comparison, `horizon_ms` long.
fn edf_sets(horizon_ms: u64) -> Vec<TaskSet> {
    simso::speed_sets(horizon_ms)
        .into_iter()
        .filter(|s| s.sched == Sched::Edf)
        .collect()
}

/// Callbacks made into [`Counted`] instances.
static COUNTED_CALLS: AtomicU64 = AtomicU64::new(0);

/// A built-in policy with its callbacks counted (every call the
/// dispatcher makes into it), to put the Python policy's count beside.
struct Counted(Box<dyn Scheduler>);

fn tick() {
    COUNTED_CALLS.fetch_add(1, Ordering::Relaxed);
}

impl Scheduler for Counted {
    fn policy(&self) -> &'static str {
        self.0.policy()
    }
    fn init(&mut self, cx: &mut Cx) {
        tick();
        self.0.init(cx)
    }
    fn deinit(&mut self, cx: &mut Cx) {
        tick();
        self.0.deinit(cx)
    }
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        tick();
        self.0.register_vp(cx, child, params)
    }
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        tick();
        self.0.unregister_vp(cx, child)
    }
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        tick();
        self.0.vp_request(cx, child)
    }
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        tick();
        self.0.vp_release(cx, child)
    }
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) -> Dispatch {
        tick();
        self.0.vp_grant(cx, vp, cpu)
    }
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) {
        tick();
        self.0.vp_revoke(cx, vp, cpu)
    }
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        tick();
        self.0.charge(cx, child, ran)
    }
    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        tick();
        self.0.timer(cx, key)
    }
    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        tick();
        self.0.msg(cx, from, msg)
    }
    fn sync(&mut self, cx: &mut Cx, event: &SyncEvent<ChildId>) {
        tick();
        self.0.sync(cx, event)
    }
    fn check_invariants(&self) -> Result<(), String> {
        tick();
        self.0.check_invariants()
    }
}

fn build_counted_edf(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    (hsched_policies::edf::INFO.build)(params).map(|s| Box::new(Counted(s)) as Box<dyn Scheduler>)
}

/// The built-in `edf`, counted.
static EDF_COUNTED: PolicyInfo = PolicyInfo {
    name: "edf-counted",
    build: build_counted_edf,
    ..hsched_policies::edf::INFO
};

/// The task set as a scenario under `policy`: the built-in `edf` (or its
/// counted twin) as imported, or a Python policy taking a `deadline` per
/// child.
fn scenario(set: &TaskSet, policy: &str) -> Result<Scenario, String> {
    let imported = hsched_scenario::import::simso::import(&simso::to_xml(set), &set.name)
        .map_err(|e| e.to_string())?;
    let mut scn = hsched_scenario::parse(&imported.toml, &set.name).map_err(|e| e.to_string())?;
    if policy == "edf" {
        return Ok(scn);
    }
    let edf = scn
        .schedulers
        .iter_mut()
        .find(|s| s.policy == "edf")
        .ok_or("the imported task set has no edf scheduler")?;
    edf.policy = policy.to_string();
    if policy != EDF_COUNTED.name {
        edf.params = Params::new();
        for t in &mut scn.threads {
            let deadline = t
                .params
                .get("deadline")
                .cloned()
                .ok_or_else(|| format!("thread {} has no deadline", t.name))?;
            t.params = Params::new().with("deadline", deadline);
        }
    }
    Ok(scn)
}

/// `(thread, release, finish)` of every job released before the horizon,
/// in order: what two runs must agree on (an event exactly at the horizon
/// counts on one simulator and not the other).
type Outcomes = Vec<(u32, u64, Option<u64>)>;

fn outcomes(r: &RunResult, horizon_ns: u64) -> Outcomes {
    let mut jobs: Vec<_> = r
        .jobs
        .iter()
        .filter(|j| j.release.as_nanos() < horizon_ns)
        .map(|j| {
            (
                j.thread.0,
                j.release.as_nanos(),
                j.finish.map(|f| f.as_nanos()),
            )
        })
        .collect();
    jobs.sort();
    jobs
}

/// The task sets' names, in order (index them in `_bench_run`).
#[pyfunction]
fn _bench_task_sets(horizon_ms: u64) -> Vec<String> {
    edf_sets(horizon_ms).into_iter().map(|s| s.name).collect()
}

/// One timed run of task set `index` under `policy` (`"edf"`, or a Python
/// policy's name): `(jobs, deadline misses, wall seconds, callbacks,
/// outcomes)`. The wall time covers parsing and simulating, not the XML
/// import. Callbacks: those made into the Python policy; for `"edf"`, those
/// of an untimed second run with every call into `edf` counted.
#[pyfunction]
fn _bench_run(
    index: usize,
    horizon_ms: u64,
    policy: &str,
) -> PyResult<(usize, usize, f64, u64, Outcomes)> {
    let sets = edf_sets(horizon_ms);
    let set = sets
        .get(index)
        .ok_or_else(|| PyValueError::new_err(format!("no task set {index}")))?;
    let scn = scenario(set, policy).map_err(PyRuntimeError::new_err)?;
    let extra = super::slots::infos();
    let opts = hsched_sim::SimOptions::default();
    let before = super::adapter::calls();
    let started = std::time::Instant::now();
    let r = hsched_sim::run_with_policies(&scn, &opts, &extra).map_err(PyRuntimeError::new_err)?;
    let wall = started.elapsed().as_secs_f64();
    let mut callbacks = super::adapter::calls() - before;
    if policy == "edf" {
        let counted = scenario(set, EDF_COUNTED.name).map_err(PyRuntimeError::new_err)?;
        let c0 = COUNTED_CALLS.load(Ordering::Relaxed);
        hsched_sim::run_with_policies(&counted, &opts, &[&EDF_COUNTED])
            .map_err(PyRuntimeError::new_err)?;
        callbacks = COUNTED_CALLS.load(Ordering::Relaxed) - c0;
    }
    let misses = r
        .jobs
        .iter()
        .filter(|j| {
            j.finish
                .map_or(j.deadline.as_nanos() < set.horizon_ns, |f| f > j.deadline)
        })
        .count();
    Ok((
        r.jobs.len(),
        misses,
        wall,
        callbacks,
        outcomes(&r, set.horizon_ns),
    ))
}

/// SimSo on the same task sets, from `site` (where `pip install --target`
/// put it), writing its files under `dir`: `(jobs, wall seconds,
/// outcomes)` per set. Raises `RuntimeError` saying how to install SimSo
/// when python3 does not import it from `site`.
#[pyfunction]
fn _bench_simso(
    py: Python<'_>,
    site: PathBuf,
    dir: PathBuf,
    horizon_ms: u64,
) -> PyResult<Vec<(usize, f64, Outcomes)>> {
    let sets = edf_sets(horizon_ms);
    let runs = py
        .detach(|| {
            let python = simso::find_simso(&site)?;
            let xml = simso::write_sets(&dir, &sets)?;
            simso::run_simso(&python, &dir, &xml)
        })
        .map_err(PyRuntimeError::new_err)?;
    Ok(runs
        .into_iter()
        .zip(&sets)
        .map(|(run, set)| {
            let mut jobs: Outcomes = run
                .tasks
                .iter()
                .enumerate()
                .flat_map(|(t, (_, jobs))| {
                    jobs.iter()
                        .filter(|j| j.release_ns < set.horizon_ns)
                        .map(move |j| (t as u32, j.release_ns, j.finish_ns))
                })
                .collect();
            jobs.sort();
            (run.jobs(), run.wall_s, jobs)
        })
        .collect())
}

/// The EDF task sets' utilisation asked for, in permille, by index.
#[pyfunction]
fn _bench_task_set_utilisation(horizon_ms: u64) -> Vec<u64> {
    edf_sets(horizon_ms)
        .iter()
        .map(|s| s.utilisation_permille)
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_bench_task_sets, m)?)?;
    m.add_function(wrap_pyfunction!(_bench_run, m)?)?;
    m.add_function(wrap_pyfunction!(_bench_simso, m)?)?;
    m.add_function(wrap_pyfunction!(_bench_task_set_utilisation, m)?)?;
    Ok(())
}
