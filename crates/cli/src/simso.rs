//! hsched against SimSo on the same periodic task sets: the cross-check
//! (`crates/cli/tests/simso.rs`: every job's completion and deadline miss
//! must agree) and the speed comparison (`hsched bench --simso`: jobs per
//! wall-second of each, side by side in one run).
//!
//! Both run the same SimSo XML files: this module writes them from seeded
//! task sets, SimSo reads them with its own parser (the driver script
//! `tests/simso/driver.py`, embedded here), and hsched reads them with
//! `hsched import simso` and simulates the scenario. So the importer is on
//! the path that is checked.
//!
//! **Task sets** are drawn from a seed (ChaCha8) by the sweep's task-set
//! generator (`hsched_sweep::generator::draw_exact`), in integers: n tasks
//! with distinct periods of whole milliseconds, a total utilisation split
//! at random (in permille, like UUniFast, without floating point), each
//! WCET a multiple of 125us (exact in SimSo's float milliseconds and in integer
//! nanoseconds; SimSo runs at 1,000,000 cycles per ms, one cycle per ns).
//! Under EDF, task i's relative deadline is its period less i·125us, so
//! that no two jobs of different tasks ever share an absolute deadline
//! (they differ modulo 1ms); each such set is also checked with implicit
//! deadlines, where jobs released at different times do tie and both give
//! the CPU to the one activated first. What stays out is two jobs released
//! at the same instant with the same deadline (equal relative deadlines):
//! SimSo orders those by its event queue, which hsched does not reproduce. Under RM the periods are distinct, so
//! priorities never tie. The horizon is a whole number of milliseconds
//! plus 1ns, so no release or completion falls exactly on it. Every task
//! has `abort_on_miss="no"`: hsched does not abort late jobs.

use crate::CliError;
use hsched_model::RunResult;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The driver SimSo runs under (written next to the XML files).
pub const DRIVER: &str = include_str!("../tests/simso/driver.py");

/// The SimSo release the cross-check is written against.
pub const SIMSO_VERSION: &str = "0.8.5";

const GRAIN_NS: u64 = 125_000;

/// A SimSo scheduler and the hsched policy it maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sched {
    Edf,
    Rm,
}

impl Sched {
    pub fn simso_class(self) -> &'static str {
        match self {
            Sched::Edf => "simso.schedulers.EDF_mono",
            Sched::Rm => "simso.schedulers.RM_mono",
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Sched::Edf => "EDF",
            Sched::Rm => "RM",
        }
    }
}

/// One periodic task, in nanoseconds.
#[derive(Clone, Debug)]
pub struct Task {
    pub period_ns: u64,
    pub deadline_ns: u64,
    pub wcet_ns: u64,
}

/// A task set on one CPU under one scheduler.
#[derive(Clone, Debug)]
pub struct TaskSet {
    pub name: String,
    pub sched: Sched,
    /// Total utilisation asked for, in permille (the WCETs are rounded to
    /// the 125us grain, so the real one differs a little).
    pub utilisation_permille: u64,
    pub tasks: Vec<Task>,
    pub horizon_ns: u64,
}

impl TaskSet {
    /// The utilisation the WCETs give, in permille (rounded down).
    pub fn actual_permille(&self) -> u64 {
        self.tasks
            .iter()
            .map(|t| t.wcet_ns * 1000 / t.period_ns)
            .sum()
    }
}

/// A seeded task set: `n` tasks (at most 8) with distinct periods of
/// `min_period_ms..=max_period_ms` whole milliseconds and total utilisation
/// about `permille`/1000.
pub fn generate(
    seed: u64,
    sched: Sched,
    n: usize,
    permille: u64,
    (min_period_ms, max_period_ms): (u64, u64),
    horizon_ms: u64,
) -> TaskSet {
    let n = n.clamp(1, 8);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let drawn = hsched_sweep::generator::draw_exact(
        n,
        permille,
        (min_period_ms, max_period_ms),
        GRAIN_NS,
        &mut rng,
    );
    let tasks = drawn
        .into_iter()
        .enumerate()
        .map(|(i, (period_ns, wcet_ns))| Task {
            period_ns,
            deadline_ns: match sched {
                Sched::Edf => period_ns - i as u64 * GRAIN_NS,
                Sched::Rm => period_ns,
            },
            wcet_ns,
        })
        .collect();
    TaskSet {
        name: format!("{}-u{permille}-s{seed}", sched.name().to_lowercase()),
        sched,
        utilisation_permille: permille,
        tasks,
        horizon_ns: horizon_ms * 1_000_000 + 1,
    }
}

/// The same set with implicit deadlines (each task's deadline its period).
/// EDF ties between jobs released at different times then occur (periods
/// 10 and 20 both have a deadline at 20ms): both simulators give them to
/// the job activated first. Periods stay distinct, so no two jobs released
/// at the same instant share a deadline (there the order would be SimSo's
/// event queue's).
pub fn with_implicit_deadlines(mut set: TaskSet) -> TaskSet {
    for t in &mut set.tasks {
        t.deadline_ns = t.period_ns;
    }
    set.name = format!("{}-implicit", set.name);
    set
}

/// The cross-check's task sets: EDF (with deadlines that never tie, and
/// with implicit deadlines) and RM, utilisations from 50% to 130%
/// (overloaded ones miss deadlines), a few seeds each.
pub fn cross_check_sets() -> Vec<TaskSet> {
    let mut sets = Vec::new();
    for sched in [Sched::Edf, Sched::Rm] {
        for (k, permille) in [500, 800, 950, 1000, 1100, 1300].into_iter().enumerate() {
            for seed in 0..3u64 {
                let n = 3 + ((seed as usize + k) % 6);
                let set = generate(seed * 1000 + permille, sched, n, permille, (4, 60), 1_000);
                if sched == Sched::Edf {
                    sets.push(with_implicit_deadlines(set.clone()));
                }
                sets.push(set);
            }
        }
    }
    sets
}

/// The speed comparison's task sets: 8 tasks, 5 to 50ms periods, 90% and
/// 110% utilisation, `horizon_ms` long.
pub fn speed_sets(horizon_ms: u64) -> Vec<TaskSet> {
    let mut sets = Vec::new();
    for sched in [Sched::Edf, Sched::Rm] {
        for (seed, permille) in [(1, 900), (2, 1100)] {
            sets.push(generate(seed, sched, 8, permille, (5, 50), horizon_ms));
        }
    }
    sets
}

fn ms_text(ns: u64) -> String {
    // Whole nanoseconds as decimal milliseconds, exactly.
    let (ms, rest) = (ns / 1_000_000, ns % 1_000_000);
    if rest == 0 {
        format!("{ms}")
    } else {
        let frac = format!("{rest:06}");
        format!("{ms}.{}", frac.trim_end_matches('0'))
    }
}

/// The task set as a SimSo XML configuration (the attributes SimSo's
/// `Configuration.save` writes).
pub fn to_xml(set: &TaskSet) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "<?xml version=\"1.0\" ?>");
    let _ = writeln!(
        s,
        "<simulation duration=\"{}\" cycles_per_ms=\"1000000\" etm=\"wcet\">",
        set.horizon_ns
    );
    let _ = writeln!(
        s,
        "\t<sched overhead=\"0\" overhead_activate=\"0\" overhead_terminate=\"0\" class=\"{}\"/>",
        set.sched.simso_class()
    );
    let _ = writeln!(s, "\t<caches memory_access_time=\"100\"/>");
    let _ = writeln!(
        s,
        "\t<processors>\n\t\t<processor name=\"CPU 1\" id=\"1\" cl_overhead=\"0\" cs_overhead=\"0\" speed=\"1.0\"/>\n\t</processors>"
    );
    let _ = writeln!(s, "\t<tasks>");
    for (i, t) in set.tasks.iter().enumerate() {
        let _ = writeln!(
            s,
            "\t\t<task name=\"T{}\" id=\"{}\" task_type=\"Periodic\" abort_on_miss=\"no\" period=\"{}\" \
             activationDate=\"0\" list_activation_dates=\"\" deadline=\"{}\" base_cpi=\"1.0\" \
             instructions=\"0\" mix=\"0.5\" WCET=\"{}\" ACET=\"0\" preemption_cost=\"0\" et_stddev=\"0\"/>",
            i + 1,
            i + 1,
            ms_text(t.period_ns),
            ms_text(t.deadline_ns),
            ms_text(t.wcet_ns)
        );
    }
    let _ = writeln!(s, "\t</tasks>\n</simulation>");
    s
}

/// One job as both sides report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub release_ns: u64,
    pub deadline_ns: u64,
    pub finish_ns: Option<u64>,
    /// The side's own verdict: finished after its deadline (unfinished
    /// jobs: `None`, judged the same way on both sides below).
    pub missed: Option<bool>,
}

/// One side's run of one task set: jobs per task name, and the wall time.
#[derive(Clone, Debug)]
pub struct Run {
    pub tasks: Vec<(String, Vec<Job>)>,
    pub wall_s: f64,
}

impl Run {
    pub fn jobs(&self) -> usize {
        self.tasks.iter().map(|(_, j)| j.len()).sum()
    }
}

/// A Python that imports SimSo: `python3` with `site` (where SimSo was
/// installed with `pip --target`) on its path.
#[derive(Clone, Debug)]
pub struct Python {
    pub program: PathBuf,
    pub site: PathBuf,
}

impl Python {
    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.env("PYTHONPATH", &self.site);
        c
    }

    /// Whether this Python imports SimSo.
    pub fn has_simso(&self) -> bool {
        self.command()
            .args(["-c", "import simso.core, simso.configuration"])
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

/// SimSo already installed under `site`, installing nothing; the error
/// says how to install it.
pub fn find_simso(site: &Path) -> Result<Python, String> {
    let python = Python {
        program: PathBuf::from("python3"),
        site: site.to_path_buf(),
    };
    if python.has_simso() {
        Ok(python)
    } else {
        Err(format!(
            "python3 does not import SimSo from {} \
             (python3 -m pip install --target {} simso=={SIMSO_VERSION})",
            site.display(),
            site.display()
        ))
    }
}

/// SimSo under `site` (a directory of its own), installed from PyPI with
/// pip if it is not there yet (`hsched bench --simso`). Errors say why (no
/// python3, no pip, PyPI unreachable).
pub fn ensure_simso(site: &Path) -> Result<Python, String> {
    if let Ok(python) = find_simso(site) {
        return Ok(python);
    }
    let python = Python {
        program: PathBuf::from("python3"),
        site: site.to_path_buf(),
    };
    std::fs::create_dir_all(site).map_err(|e| format!("cannot create {}: {e}", site.display()))?;
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg("--target")
        .arg(site)
        .arg(format!("simso=={SIMSO_VERSION}"))
        .output()
        .map_err(|e| format!("cannot run python3 -m pip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pip could not install simso=={SIMSO_VERSION} from PyPI: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if python.has_simso() {
        Ok(python)
    } else {
        Err(format!(
            "simso was installed in {} but does not import",
            site.display()
        ))
    }
}

/// Writes each set's XML (and the driver) under `dir`; returns the paths.
pub fn write_sets(dir: &Path, sets: &[TaskSet]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    sets.iter()
        .map(|set| {
            let path = dir.join(format!("{}.xml", set.name));
            std::fs::write(&path, to_xml(set)).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(path)
        })
        .collect()
}

/// Runs SimSo on the XML files (in that order) through the driver.
pub fn run_simso(python: &Python, dir: &Path, xml: &[PathBuf]) -> Result<Vec<Run>, String> {
    let driver = dir.join("driver.py");
    std::fs::write(&driver, DRIVER).map_err(|e| format!("{}: {e}", driver.display()))?;
    let out_json = dir.join("simso-results.json");
    let out = python
        .command()
        .arg(&driver)
        .arg(&out_json)
        .args(xml)
        .output()
        .map_err(|e| format!("cannot run the SimSo driver: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the SimSo driver failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text =
        std::fs::read_to_string(&out_json).map_err(|e| format!("{}: {e}", out_json.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("the driver's output: {e}"))?;
    let runs = value
        .as_array()
        .ok_or("the driver's output is not a list")?;
    runs.iter().map(parse_simso_run).collect()
}

fn parse_simso_run(v: &serde_json::Value) -> Result<Run, String> {
    let bad = || format!("unexpected driver output: {v}");
    let wall_s = v["wall_s"].as_f64().ok_or_else(bad)?;
    let mut tasks = Vec::new();
    for t in v["tasks"].as_array().ok_or_else(bad)? {
        let name = t["name"].as_str().ok_or_else(bad)?.to_string();
        let mut jobs = Vec::new();
        for j in t["jobs"].as_array().ok_or_else(bad)? {
            if j["aborted"].as_bool() == Some(true) {
                return Err(format!("SimSo aborted a job of {name}: {j}"));
            }
            jobs.push(Job {
                release_ns: j["release_ns"].as_u64().ok_or_else(bad)?,
                deadline_ns: j["deadline_ns"].as_u64().ok_or_else(bad)?,
                finish_ns: j["finish_ns"].as_u64(),
                missed: j["missed"].as_bool(),
            });
        }
        tasks.push((name, jobs));
    }
    Ok(Run { tasks, wall_s })
}

/// Imports the XML with `hsched import simso`, simulates the scenario and
/// reports its jobs per thread. The wall time covers import, parse and
/// simulation, as SimSo's covers loading and simulating.
pub fn run_hsched(xml_path: &Path) -> Result<Run, String> {
    let text =
        std::fs::read_to_string(xml_path).map_err(|e| format!("{}: {e}", xml_path.display()))?;
    let started = std::time::Instant::now();
    let name = xml_path.display().to_string();
    let imported =
        hsched_scenario::import::simso::import(&text, &name).map_err(|e| e.to_string())?;
    let scn = hsched_scenario::parse(&imported.toml, &name).map_err(|e| e.to_string())?;
    let r = hsched_sim::run(&scn, &hsched_sim::SimOptions::default())?;
    let wall_s = started.elapsed().as_secs_f64();
    Ok(Run {
        tasks: jobs_by_thread(&r),
        wall_s,
    })
}

fn jobs_by_thread(r: &RunResult) -> Vec<(String, Vec<Job>)> {
    let mut tasks: Vec<(String, Vec<Job>)> = r
        .threads
        .iter()
        .map(|t| (t.name.clone(), Vec::new()))
        .collect();
    let mut records: Vec<_> = r.jobs.iter().collect();
    records.sort_by_key(|j| (j.thread.index(), j.job));
    for j in records {
        tasks[j.thread.index()].1.push(Job {
            release_ns: j.release.as_nanos(),
            deadline_ns: j.deadline.as_nanos(),
            finish_ns: j.finish.map(|f| f.as_nanos()),
            missed: j.finish.map(|f| f > j.deadline),
        });
    }
    tasks
}

/// Every disagreement between the two runs of `set`: a job one side has
/// and the other not, or a release, deadline, completion or miss verdict
/// that differs. Jobs released at or after the horizon are left out (the
/// two simulators disagree on whether an event exactly at the end counts).
pub fn compare(set: &TaskSet, simso: &Run, hsched: &Run) -> Vec<String> {
    let mut out = Vec::new();
    let keep = |jobs: &[Job]| -> Vec<Job> {
        jobs.iter()
            .filter(|j| j.release_ns < set.horizon_ns)
            .cloned()
            .collect()
    };
    for (name, s_jobs) in &simso.tasks {
        let Some((_, h_jobs)) = hsched.tasks.iter().find(|(n, _)| n == name) else {
            out.push(format!("{}: task {name} is missing from hsched", set.name));
            continue;
        };
        let (s_jobs, h_jobs) = (keep(s_jobs), keep(h_jobs));
        if s_jobs.len() != h_jobs.len() {
            out.push(format!(
                "{}: {name}: SimSo released {} jobs, hsched {}",
                set.name,
                s_jobs.len(),
                h_jobs.len()
            ));
        }
        for (k, (s, h)) in s_jobs.iter().zip(&h_jobs).enumerate() {
            let h_missed = h
                .finish_ns
                .map_or(h.deadline_ns < set.horizon_ns, |f| f > h.deadline_ns);
            let s_missed = s.missed.unwrap_or(s.deadline_ns < set.horizon_ns);
            if s.release_ns != h.release_ns
                || s.deadline_ns != h.deadline_ns
                || s.finish_ns != h.finish_ns
                || s_missed != h_missed
            {
                out.push(format!(
                    "{}: {name} job {k}: SimSo released {} due {} finished {:?} missed {s_missed}; \
                     hsched released {} due {} finished {:?} missed {h_missed}",
                    set.name,
                    s.release_ns,
                    s.deadline_ns,
                    s.finish_ns,
                    h.release_ns,
                    h.deadline_ns,
                    h.finish_ns
                ));
            }
        }
    }
    out
}

/// How many jobs of `run` missed their deadline by the horizon.
pub fn misses(set: &TaskSet, run: &Run) -> usize {
    run.tasks
        .iter()
        .flat_map(|(_, jobs)| jobs)
        .filter(|j| j.release_ns < set.horizon_ns)
        .filter(|j| {
            j.finish_ns
                .map_or(j.deadline_ns < set.horizon_ns, |f| f > j.deadline_ns)
        })
        .count()
}

/// `hsched bench --simso`: runs SimSo and hsched on the same task sets,
/// prints jobs per second for each and the ratio. SimSo is taken from
/// `site` (installed there from PyPI if missing).
pub fn bench(site: &Path, quick: bool) -> Result<(), CliError> {
    let python = ensure_simso(site).map_err(CliError::Failed)?;
    let horizon_ms = if quick { 2_000 } else { 10_000 };
    let sets = speed_sets(horizon_ms);
    let dir = site.join("bench-sets");
    let xml = write_sets(&dir, &sets).map_err(CliError::Failed)?;
    println!(
        "SimSo {SIMSO_VERSION} against hsched on the same {} task sets (8 periodic tasks, 5-50ms periods, {}s each, one CPU)",
        sets.len(),
        horizon_ms / 1000
    );
    let simso = run_simso(&python, &dir, &xml).map_err(CliError::Failed)?;
    // hsched runs each set several times (its runs are short); the median
    // wall time per set counts.
    let reps = if quick { 3 } else { 7 };
    let mut hsched = Vec::new();
    for path in &xml {
        let mut runs: Vec<Run> = (0..reps)
            .map(|_| run_hsched(path))
            .collect::<Result<_, _>>()
            .map_err(CliError::Failed)?;
        runs.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
        hsched.push(runs.swap_remove(reps / 2));
    }
    println!(
        "  {:<18} {:>7} {:>12} {:>14} {:>8}",
        "set", "jobs", "SimSo jobs/s", "hsched jobs/s", "ratio"
    );
    let (mut jobs, mut s_wall, mut h_wall, mut disagreements) = (0usize, 0.0, 0.0, 0usize);
    for ((set, s), h) in sets.iter().zip(&simso).zip(&hsched) {
        let n = s.jobs();
        disagreements += compare(set, s, h).len();
        println!(
            "  {:<18} {:>7} {:>12.0} {:>14.0} {:>7.0}x",
            set.name,
            n,
            n as f64 / s.wall_s,
            h.jobs() as f64 / h.wall_s,
            s.wall_s / h.wall_s * h.jobs() as f64 / n.max(1) as f64
        );
        jobs += n;
        s_wall += s.wall_s;
        h_wall += h.wall_s;
    }
    println!(
        "  {:<18} {:>7} {:>12.0} {:>14.0} {:>7.0}x   (hsched: import + parse + simulate; SimSo: load + simulate)",
        "all",
        jobs,
        jobs as f64 / s_wall,
        jobs as f64 / h_wall,
        s_wall / h_wall
    );
    println!("  disagreements on job completions and misses: {disagreements}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_sets_are_exact_and_deterministic() {
        let a = generate(7, Sched::Edf, 6, 950, (4, 60), 1000);
        let b = generate(7, Sched::Edf, 6, 950, (4, 60), 1000);
        assert_eq!(to_xml(&a), to_xml(&b));
        assert_eq!(a.tasks.len(), 6);
        let mut periods: Vec<u64> = a.tasks.iter().map(|t| t.period_ns).collect();
        periods.sort_unstable();
        periods.dedup();
        assert_eq!(periods.len(), 6, "distinct periods");
        for (i, t) in a.tasks.iter().enumerate() {
            assert_eq!(t.wcet_ns % GRAIN_NS, 0);
            assert_eq!(t.period_ns % 1_000_000, 0);
            // Deadlines differ modulo 1ms between tasks: no EDF ties.
            assert_eq!((t.period_ns - t.deadline_ns) / GRAIN_NS, i as u64);
        }
        assert!(
            a.actual_permille().abs_diff(950) < 60,
            "{}",
            a.actual_permille()
        );
        assert_eq!(ms_text(1_250_000), "1.25");
        assert_eq!(ms_text(4_000_000), "4");
        assert_eq!(ms_text(1_000_000_001), "1000.000001");
    }

    #[test]
    fn the_xml_imports_as_the_task_set() {
        let set = generate(3, Sched::Rm, 4, 800, (4, 60), 500);
        let out = hsched_scenario::import::simso::import(&to_xml(&set), "x.xml").unwrap();
        assert!(out.notes.is_empty(), "{:?}", out.notes);
        let scn = hsched_scenario::parse(&out.toml, "x.toml").unwrap();
        assert_eq!(scn.horizon.as_nanos(), set.horizon_ns);
        assert_eq!(scn.schedulers[0].policy, "rm");
        assert_eq!(scn.threads.len(), 4);
    }
}
