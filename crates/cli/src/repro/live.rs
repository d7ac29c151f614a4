//! `hsched repro --live`: experiments on this machine's real CPUs, each
//! beside its baseline measured in the same run (the machine is shared
//! and noisy: only side-by-side figures mean anything). They need root;
//! `live-cyclictest` and `live-bvt-table1` also need rt-tests and
//! stress-ng (`apt-get install rt-tests stress-ng`).
//!
//! Each entry runs a scenario file with `hsched live` (the same code as
//! the command) and the baseline with plain Linux: the same programs
//! started at their default policy, or at `SCHED_FIFO`, on the same CPU.

use super::{share, Bound, Check, Entry};
use crate::repro::parse;
use hsched_core::Duration;
use hsched_live::run::LiveOptions;
use hsched_live::sys::{self, SchedAttr};
use hsched_model::{JobRecord, RunResult, Scenario};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A scenario file: its path and text, compiled in.
macro_rules! file {
    ($path:literal) => {
        ($path, include_str!(concat!("../../../../", $path)))
    };
}

/// The live entries.
pub fn entries() -> Vec<Entry> {
    vec![
        Entry {
            name: "live-sim-shares",
            source: "hsched: the same scenario in sim and live",
            claim: "each thread's CPU share live is within 3 percentage points of its share in simulation (the desktop example: periodic media, an interactive thread and three compiles, all on hsched's worker; two shell hogs under round robin)",
            scenarios: &["scenarios/examples/desktop.toml", "scenarios/live/two-hogs-rr.toml"],
            run: sim_shares,
        },
        Entry {
            name: "live-hls-table5",
            source: "HLS §7.2, Table 5, on real CPUs",
            claim: "a CPU-bound 10ms frame loop that must not go 33ms without a frame, beside a CPU-bound background thread: RESBH 10, 33 gives it 32.6% and RESBS 10, 33 67.3% (no miss in the paper)",
            scenarios: &[
                "scenarios/papers/hls-table5-resbh.toml",
                "scenarios/papers/hls-table5-resbs.toml",
            ],
            run: hls_table5,
        },
        Entry {
            name: "live-bvt-table1",
            source: "BVT §4.1, Table 1, on real CPUs",
            claim: "a warped video player beside a 4-way CPU-bound load keeps its frame rate with few late frames (BVT: 29.78 frames/s, 8 of 553 late), where Linux's default scheduler halves it (14.91 frames/s, 113 of 284 late)",
            scenarios: &["scenarios/live/bvt-table1.toml"],
            run: bvt_table1,
        },
        Entry {
            name: "live-vassal-table2",
            source: "Vassal §5-§6, Table 2, on real CPUs",
            claim: "periodic 1ms wakeups through the loaded sample scheduler (rtwake) are never early and spread less than through the system's timer (paper, µs: rtwake min 996, max 1485, avg 1002, std 21; the tick min 75, max 1566, avg 996, std 82); here against clock_nanosleep at SCHED_OTHER, beside the same CPU-bound load",
            scenarios: &[
                "scenarios/live/vassal-table2.toml",
                "scenarios/live/vassal-table2-sleep.toml",
            ],
            run: vassal_table2,
        },
        Entry {
            name: "live-cyclictest",
            source: "hsched: a latency-sensitive thread under hsched against cyclictest at SCHED_FIFO",
            claim: "cyclictest managed by hsched (BVT warp; a 200us/1ms reservation) beside two stress-ng hogs wakes with a p99 within 3x of plain cyclictest at SCHED_FIFO beside the same hogs",
            scenarios: &[
                "scenarios/live/cyclictest-bvt.toml",
                "scenarios/live/cyclictest-res.toml",
            ],
            run: cyclictest,
        },
    ]
}

/// Why a live experiment cannot run here, if it cannot.
fn can_run(tools: &[(&str, &str)]) -> Result<(), String> {
    sys::realtime_allowed()
        .map_err(|e| format!("live experiments need root (SCHED_FIFO refused: {e})"))?;
    let missing: Vec<&str> = tools
        .iter()
        .filter(|(tool, _)| which(tool).is_none())
        .map(|&(_, package)| package)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "this experiment runs programs that are not installed: apt-get install {}",
            missing.join(" ")
        ))
    }
}

/// Where `tool` is on the PATH.
pub fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| PathBuf::from(d).join(tool))
        .find(|p| p.is_file())
}

fn this_program() -> Result<std::ffi::OsString, String> {
    std::env::current_exe()
        .map(|p| p.into_os_string())
        .map_err(|e| format!("finding the hsched program: {e}"))
}

/// Where the live runs of `hsched repro --live` watch for a stop (SIGINT,
/// SIGTERM): set once by [`stop_on`] before the first experiment.
static STOP: std::sync::OnceLock<hsched_live::signals::StopHandle> = std::sync::OnceLock::new();

/// Stops every live run from now on when `handle` says a stop was asked
/// for: the run ends in order (its threads given back, its commands
/// ended) and its experiment fails, naming the signal.
pub fn stop_on(handle: hsched_live::signals::StopHandle) {
    let _ = STOP.set(handle);
}

/// The backend the live runs use: set once by [`use_backend`] before the
/// first experiment (the agent if never set).
static BACKEND: std::sync::OnceLock<hsched_live::run::Backend> = std::sync::OnceLock::new();

/// Runs every live experiment on `backend` from now on.
pub fn use_backend(backend: hsched_live::run::Backend) {
    let _ = BACKEND.set(backend);
}

/// Runs a scenario live, after `edit`.
fn live(file: (&str, &str), edit: impl FnOnce(&mut Scenario)) -> Result<RunResult, String> {
    run_live(file, false, edit)
}

/// Runs a scenario live, after `edit`, parking hard if `hard_parking`.
fn run_live(
    file: (&str, &str),
    hard_parking: bool,
    edit: impl FnOnce(&mut Scenario),
) -> Result<RunResult, String> {
    run_live_with(file, |o| o.hard_parking = hard_parking, edit)
}

/// Runs a scenario live, after `edit`, with the options `options` sets.
fn run_live_with(
    (path, text): (&str, &str),
    options: impl FnOnce(&mut LiveOptions),
    edit: impl FnOnce(&mut Scenario),
) -> Result<RunResult, String> {
    let mut scn = parse((path, text))?;
    edit(&mut scn);
    let exe = this_program()?;
    let backend = BACKEND
        .get()
        .copied()
        .unwrap_or(hsched_live::run::Backend::Agent);
    let mut opts = LiveOptions {
        backend,
        partial: false,
        guardian: vec![exe.clone(), "__guardian".into()],
        worker: vec![exe, "__worker".into()],
        horizon: None,
        hard_parking: false,
        attach: Vec::new(),
        trace: false,
        control: Some(
            std::path::Path::new(hsched_live::control::SOCKET_DIR)
                .join(format!("hsched-repro-{}.sock", std::process::id())),
        ),
        agent_cpu: None,
        speculate: false,
        keep_autogroup: false,
        policies: Vec::new(),
        keep_commands: false,
        stop: STOP.get().cloned(),
        // A reproduction measures the policies, as the papers ran them.
        guard: None,
    };
    options(&mut opts);
    if backend == hsched_live::run::Backend::Scx {
        // The agent's way of holding a thread back; sched_ext's custody
        // gives a thread off its CPU nothing, as hard parking does.
        opts.hard_parking = false;
    }
    let outcome =
        hsched_live::run::run_to_outcome(&scn, &opts).map_err(|e| format!("{path}: {e}"))?;
    match outcome.interrupted {
        Some(why) => Err(format!(
            "{path}: {why}: the run stopped, every thread given back"
        )),
        None => Ok(outcome.result),
    }
}

/// The last CPU this process may use: where `hsched live` runs a 1-CPU
/// scenario, and so where the baselines run too.
fn last_cpu() -> Result<usize, String> {
    sys::get_affinity(0)
        .map_err(|e| format!("reading this process's CPUs: {e}"))?
        .last()
        .copied()
        .ok_or_else(|| "no CPU to run on".into())
}

/// Starts `argv` on CPU `cpu` at `attr`, as plain Linux would run it,
/// its output to `stdout`.
fn start_plain(
    argv: &[String],
    cpu: usize,
    attr: SchedAttr,
    stdout: Stdio,
) -> Result<Child, String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(stdout)
        .process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes system calls on itself.
    unsafe {
        cmd.pre_exec(move || {
            sys::set_affinity(0, &[cpu])?;
            sys::set_attr(0, &attr)
        });
    }
    cmd.spawn()
        .map_err(|e| format!("starting `{}`: {e}", argv.join(" ")))
}

/// hsched's worker running a scenario thread's program as plain Linux
/// would run it (`SCHED_OTHER`, nice 0, on one CPU), unmanaged: a
/// baseline.
struct PlainWorker {
    child: Child,
    report: std::fs::File,
}

impl PlainWorker {
    /// Starts thread `index` of `scn` on CPU `cpu`, its time zero now.
    fn start(scn: &Scenario, index: usize, cpu: usize) -> Result<PlainWorker, String> {
        let report = sys::memfd(c"hsched-plain").map_err(|e| e.to_string())?;
        let spec = hsched_live::worker::WorkerSpec {
            zero_ns: hsched_live::events::monotonic_ns(),
            seed: scn.seed,
            stream: index as u64 + 1,
            control: None,
            steps: hsched_live::worker::plan(&scn.threads[index].program.ops)?,
        };
        let mut argv = vec![
            this_program()?
                .into_string()
                .map_err(|_| "a program path that is not UTF-8")?,
            "__worker".into(),
        ];
        argv.push(spec.to_arg());
        let out = report.try_clone().map_err(|e| e.to_string())?;
        let normal = SchedAttr::fair(sys::SCHED_OTHER, 0);
        let child = start_plain(&argv, cpu, normal, out.into())?;
        Ok(PlainWorker { child, report })
    }

    /// Ends it; the jobs it reported.
    fn end(mut self) -> Result<String, String> {
        use std::io::{Read, Seek};
        end(self.child);
        let mut text = String::new();
        self.report
            .rewind()
            .and_then(|()| self.report.read_to_string(&mut text))
            .map_err(|e| e.to_string())?;
        Ok(text)
    }
}

/// Ends a process and everything it started.
fn end(mut child: Child) {
    // The group is the child's own (not reaped yet: its id is not reused).
    let _ = sys::kill_group(child.id() as i32);
    let _ = child.wait();
}

/// The command of thread `name` in a scenario.
fn command_of(scn: &Scenario, name: &str) -> Result<Vec<String>, String> {
    scn.threads
        .iter()
        .find(|t| t.name == name || t.name.starts_with(&format!("{name}.")))
        .and_then(|t| t.program.command.clone())
        .ok_or_else(|| format!("the scenario has no command for `{name}`"))
}

// ---- live-sim-shares ----------------------------------------------------

fn sim_shares() -> Result<Vec<Check>, String> {
    can_run(&[])?;
    let mut checks = Vec::new();
    for file in [
        file!("scenarios/examples/desktop.toml"),
        file!("scenarios/live/two-hogs-rr.toml"),
    ] {
        let simulated = super::simulate_with(file, |_| {})?;
        let real = live(file, |_| {})?;
        for t in &simulated.threads {
            checks.push(Check {
                quantity: format!("{}: share of {} (sim → live)", real.scenario, t.name),
                paper: share(&simulated, &t.name),
                measured: share(&real, &t.name),
                tolerance: 0.03,
                why: "the issue's target: the simulation's share within 3 percentage points; live loses a little to the agent, interrupts and kernel threads",
                bound: Bound::Within,
                differs: None,
            });
        }
    }
    Ok(checks)
}

// ---- live-hls-table5 ----------------------------------------------------

/// The fraction of the gaps between consecutive frames of `thread` that
/// are longer than `limit_ms`.
fn gaps_over(r: &RunResult, thread: &str, limit_ms: f64) -> f64 {
    let id = r.threads.iter().find(|t| t.name == thread).map(|t| t.id);
    let mut done: Vec<u64> = r
        .jobs
        .iter()
        .filter(|j| Some(j.thread) == id)
        .filter_map(|j| j.finish.map(|f| f.as_nanos()))
        .collect();
    done.sort_unstable();
    let gaps: Vec<f64> = done
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e6)
        .collect();
    if gaps.is_empty() {
        return 1.0;
    }
    gaps.iter().filter(|&&g| g > limit_ms).count() as f64 / gaps.len() as f64
}

fn hls_table5() -> Result<Vec<Check>, String> {
    can_run(&[])?;
    let horizon = |s: &mut Scenario| s.horizon = Duration::from_secs(10);
    let resbh = live(super::scenario!("hls-table5-resbh.toml"), horizon)?;
    let resbs = live(super::scenario!("hls-table5-resbs.toml"), horizon)?;
    // The same hard reservation with a millisecond to spare.
    let spare = live(super::scenario!("hls-table5-resbh.toml"), |s| {
        horizon(s);
        let app = s.threads.iter_mut().find(|t| t.name == "app");
        if let Some(app) = app {
            app.params
                .set("amount", hsched_core::Value::Str("11ms".into()));
        }
    })?;
    const SHARE: &str = "the paper's Windows 2000 figure against a user-space agent on a VM: the reservation is 10/33 = 30.3% exactly; the paper's exceeds it (tick-granular budgets), live falls short of it by what the agent and the kernel take";
    Ok(vec![
        Check {
            quantity: "RESBH 10, 33: share of app".into(),
            paper: 0.326,
            measured: share(&resbh, "app"),
            tolerance: 0.035,
            why: SHARE,
            bound: Bound::Within,
            differs: None,
        },
        Check {
            quantity: "RESBS 10, 33: share of app".into(),
            paper: 0.673,
            measured: share(&resbs, "app"),
            tolerance: 0.035,
            why: SHARE,
            bound: Bound::Within,
            differs: None,
        },
        Check {
            quantity: "RESBS 10, 33: frame gaps over 35ms (fraction)".into(),
            paper: 0.0,
            measured: gaps_over(&resbs, "app", 35.0),
            tolerance: 0.01,
            why: "no miss in the paper: every gap at most 33ms; live, a frame can end a wakeup-and-dispatch delay late (up to a few ms in this VM's tail), so 2ms of slack, and 1% of gaps for the host's hiccups; a gap over 33ms by a microsecond is a miss, so misses are not compared",
            bound: Bound::AtMost,
            differs: None,
        },
        Check {
            quantity: "RESBH 11, 33: frame gaps over 35ms (fraction)".into(),
            paper: 0.0,
            measured: gaps_over(&spare, "app", 35.0),
            tolerance: 0.01,
            why: "RESBH 10, 33 is an exact fit: live, every reserved 10ms gives a little less than 10ms of the thread's own CPU clock, so frames spill into the next period (gaps near 2 x 33ms); with a millisecond to spare the paper's result holds, with the same slack as above",
            bound: Bound::AtMost,
            differs: None,
        },
    ])
}

// ---- live-bvt-table1 ----------------------------------------------------

/// Frames done in the run and how many of them were late (done after the
/// deadline or not at all by the end of the run).
fn frames(jobs: &[JobRecord], end: hsched_core::Instant) -> (u64, u64) {
    let done = jobs.iter().filter(|j| j.finish.is_some()).count() as u64;
    let late = jobs.iter().filter(|j| j.missed(end)).count() as u64;
    (done, late)
}

fn bvt_table1() -> Result<Vec<Check>, String> {
    can_run(&[("stress-ng", "stress-ng")])?;
    let file = file!("scenarios/live/bvt-table1.toml");
    let scn = parse(file)?;
    let under_bvt = live(file, |_| {})?;
    let horizon = hsched_core::Instant::ZERO + scn.horizon;
    let bvt = frames(&under_bvt.jobs, horizon);

    // The same video worker and hogs under Linux's default scheduler.
    let cpu = last_cpu()?;
    let video = scn
        .threads
        .iter()
        .position(|t| t.name == "video")
        .ok_or("no video thread")?;
    let hog = command_of(&scn, "load")?;
    let normal = SchedAttr::fair(sys::SCHED_OTHER, 0);
    let hogs = (0..4)
        .map(|_| start_plain(&hog, cpu, normal, Stdio::null()))
        .collect::<Result<Vec<_>, _>>()?;
    let video_worker = PlainWorker::start(&scn, video, cpu)?;
    std::thread::sleep(std::time::Duration::from_nanos(scn.horizon.as_nanos()));
    let text = video_worker.end()?;
    hogs.into_iter().for_each(end);
    let mut jobs = hsched_live::worker::jobs_from_report(hsched_core::ThreadId(0), &text);
    jobs.retain(|j| j.release < horizon);
    let linux = frames(&jobs, horizon);

    let secs = scn.horizon.as_nanos() as f64 / 1e9;
    let released = (secs * 60.0).floor();
    eprintln!(
        "live-bvt-table1: BVT {} frames ({} late), Linux {} frames ({} late), of {released} released",
        bvt.0, bvt.1, linux.0, linux.1
    );
    Ok(vec![
        Check {
            quantity: "BVT: frame rate / the video's (frames/s of 60)".into(),
            paper: 29.78 / 30.0,
            measured: bvt.0 as f64 / secs / 60.0,
            tolerance: 0.02,
            why: "the paper's video ran at 30 frames/s, this one at 60: compared as a fraction of the video's own rate; a frame in progress at the end is not counted",
            bound: Bound::AtLeast,
            differs: None,
        },
        Check {
            quantity: "BVT: late frames (fraction)".into(),
            paper: 8.0 / 553.0,
            measured: bvt.1 as f64 / released,
            tolerance: 0.01,
            why: "late: not done 30ms after the frame time, as the paper counts; a point of slack for the host's hiccups of milliseconds",
            bound: Bound::AtMost,
            differs: None,
        },
        Check {
            quantity: "Linux default: frame rate / the video's".into(),
            paper: 14.91 / 30.0,
            measured: linux.0 as f64 / secs / 60.0,
            tolerance: 0.4,
            why: "the paper's point, not its number: Linux 2.2 halved the rate; today's EEVDF gives the video its fair fifth (20%) of a CPU against four hogs, of the 24% it needs: about 0.83 of the rate, so at most 0.9",
            bound: Bound::AtMost,
            differs: None,
        },
        Check {
            quantity: "Linux default: late frames (fraction)".into(),
            paper: 113.0 / 284.0,
            measured: linux.1 as f64 / released,
            tolerance: 0.2,
            why: "the paper's point: far more frames late than under BVT (its 40%); at least 20% here",
            bound: Bound::AtLeast,
            differs: None,
        },
    ])
}

// ---- live-vassal-table2 -------------------------------------------------

/// The wakeups of a periodic thread: how many, how many came before their
/// time, and the intervals between consecutive ones (of releases one
/// period apart: a wakeup rtwake refused leaves a gap, not a long
/// interval), in µs.
struct Wakeups {
    count: usize,
    early: usize,
    min: f64,
    max: f64,
    mean: f64,
    std: f64,
}

fn wakeups(jobs: &[JobRecord], period: Duration) -> Result<Wakeups, String> {
    let started: Vec<&JobRecord> = jobs.iter().filter(|j| j.start.is_some()).collect();
    let iv: Vec<f64> = started
        .windows(2)
        .filter(|w| w[1].release.saturating_since(w[0].release) == period)
        .map(|w| {
            w[1].start
                .unwrap()
                .saturating_since(w[0].start.unwrap())
                .as_nanos() as f64
                / 1e3
        })
        .collect();
    if iv.len() < 100 {
        return Err(format!("only {} intervals between wakeups", iv.len()));
    }
    let n = iv.len() as f64;
    let mean = iv.iter().sum::<f64>() / n;
    let var = iv.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    Ok(Wakeups {
        count: started.len(),
        early: started.iter().filter(|j| j.start < Some(j.release)).count(),
        min: iv.iter().copied().fold(f64::INFINITY, f64::min),
        max: iv.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mean,
        std: var.sqrt(),
    })
}

fn vassal_table2() -> Result<Vec<Check>, String> {
    can_run(&[])?;
    let period = Duration::from_millis(1);
    // Parked hard: a thread rtwake holds back must not run before its
    // wakeup, not even on time Linux has spare.
    let rt = run_live(file!("scenarios/live/vassal-table2.toml"), true, |_| {})?;
    let timer = rt
        .threads
        .iter()
        .find(|t| t.name == "timer")
        .ok_or("no thread `timer`")?
        .id;
    let rt_jobs: Vec<JobRecord> = rt
        .jobs
        .iter()
        .filter(|j| j.thread == timer)
        .cloned()
        .collect();
    let rt = wakeups(&rt_jobs, period)?;

    let scn = parse(file!("scenarios/live/vassal-table2-sleep.toml"))?;
    let index = |name: &str| {
        scn.threads
            .iter()
            .position(|t| t.name == name)
            .ok_or(format!("no thread `{name}`"))
    };
    let cpu = last_cpu()?;
    let load = PlainWorker::start(&scn, index("load")?, cpu)?;
    let sleeper = PlainWorker::start(&scn, index("timer")?, cpu)?;
    std::thread::sleep(std::time::Duration::from_nanos(scn.horizon.as_nanos()));
    let text = sleeper.end()?;
    load.end()?;
    let sleep = wakeups(
        &hsched_live::worker::jobs_from_report(hsched_core::ThreadId(0), &text),
        period,
    )?;
    for (label, w) in [("rtwake", &rt), ("clock_nanosleep", &sleep)] {
        eprintln!(
            "live-vassal-table2: {label:<16} {} wakeups, {} early; intervals µs: min {:.0} max {:.0} mean {:.1} std {:.1}",
            w.count, w.early, w.min, w.max, w.mean, w.std
        );
    }
    Ok(vec![
        Check {
            quantity: "rtwake: wakeups before their time".into(),
            paper: 0.0,
            measured: rt.early as f64,
            tolerance: 0.0,
            why: "rtwake's guarantee: it never runs a thread before its wakeup (the paper's 4µs-early samples were clock jitter); live with hard parking the thread is stopped until then",
            bound: Bound::Within,
            differs: None,
        },
        Check {
            quantity: "rtwake: mean interval (µs)".into(),
            paper: 1002.0,
            measured: rt.mean,
            tolerance: 20.0,
            why: "the wakeups keep the period: between wakeups one period apart, the mean is the period plus the change in lateness, which averages out; 2% for the host's hiccups",
            bound: Bound::Within,
            differs: None,
        },
        Check {
            quantity: "rtwake std / clock_nanosleep std (intervals)".into(),
            paper: 21.0 / 82.0,
            measured: rt.std / sleep.std,
            tolerance: 1.0 - 21.0 / 82.0,
            why: "the paper's claim, a tighter spread than the system's timer (a quarter of NT's tick-based timers'); here against Linux's high-resolution clock_nanosleep, which has no tick to round to: at most the same spread",
            bound: Bound::AtMost,
            differs: None,
        },
    ])
}

// ---- live-cyclictest ----------------------------------------------------

/// cyclictest's latencies from its histogram file: p50, p99, max (µs).
fn histogram(text: &str) -> Result<(f64, f64, f64), String> {
    let mut buckets: Vec<(u64, u64)> = Vec::new();
    let mut max = None;
    let mut overflows = 0;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("# Max Latencies:") {
            max = v
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok());
        } else if let Some(v) = line.strip_prefix("# Histogram Overflows:") {
            overflows = v
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        } else if !line.starts_with('#') {
            let mut cols = line.split_whitespace().map(|c| c.parse::<u64>());
            if let (Some(Ok(us)), Some(Ok(n))) = (cols.next(), cols.next()) {
                buckets.push((us, n));
            }
        }
    }
    let total: u64 = buckets.iter().map(|b| b.1).sum::<u64>() + overflows;
    let max = max.ok_or("cyclictest wrote no `# Max Latencies` line")? as f64;
    if total == 0 {
        return Err("cyclictest recorded no samples".into());
    }
    let at = |pct: u64| {
        let want = (total * pct).div_ceil(100);
        let mut seen = 0;
        buckets
            .iter()
            .find(|b| {
                seen += b.1;
                seen >= want
            })
            .map_or(max, |b| b.0 as f64)
    };
    Ok((at(50), at(99), max))
}

fn cyclictest() -> Result<Vec<Check>, String> {
    can_run(&[("cyclictest", "rt-tests"), ("stress-ng", "stress-ng")])?;
    let dir = std::env::temp_dir().join(format!("hsched-cyclictest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let histfile = |label: &str| dir.join(format!("{label}.hist"));
    let with_histfile = |argv: &mut Vec<String>, label: &str| {
        argv.push(format!("--histfile={}", histfile(label).display()));
    };
    let read = |label: &str| -> Result<(f64, f64, f64), String> {
        let text = std::fs::read_to_string(histfile(label))
            .map_err(|e| format!("cyclictest's histogram ({label}): {e}"))?;
        histogram(&text).map_err(|e| format!("{label}: {e}"))
    };
    let bvt_file = file!("scenarios/live/cyclictest-bvt.toml");
    let res_file = file!("scenarios/live/cyclictest-res.toml");
    let scn = parse(bvt_file)?;
    let base = command_of(&scn, "cyclictest")?;
    let hog = command_of(&scn, "hog")?;
    let cpu = last_cpu()?;

    // Plain Linux: the hogs at the default policy, cyclictest at it too,
    // then at SCHED_FIFO.
    let plain = |label: &str, attr: SchedAttr, fifo: Option<u32>| -> Result<(), String> {
        let hogs = (0..2)
            .map(|_| {
                start_plain(
                    &hog,
                    cpu,
                    SchedAttr::fair(sys::SCHED_OTHER, 0),
                    Stdio::null(),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut argv = base.clone();
        argv.push(format!("--affinity={cpu}"));
        if let Some(p) = fifo {
            argv.push(format!("--priority={p}"));
        }
        with_histfile(&mut argv, label);
        let status = start_plain(&argv, cpu, attr, Stdio::null())?.wait();
        hogs.into_iter().for_each(end);
        match status {
            Ok(s) if s.success() => Ok(()),
            other => Err(format!("cyclictest ({label}) ended with {other:?}")),
        }
    };
    plain("other", SchedAttr::fair(sys::SCHED_OTHER, 0), None)?;
    plain("fifo", SchedAttr::fair(sys::SCHED_OTHER, 0), Some(95))?;
    // Each hierarchy as it decides by default, then speculating on
    // wakeups (the thread the hierarchy ran at its wakeup is left ready to
    // run at the next; see `hsched live --speculate`).
    let mut mispredicted = Vec::new();
    for (label, file, speculate) in [
        ("bvt", bvt_file, false),
        ("res", res_file, false),
        ("bvt-spec", bvt_file, true),
        ("res-spec", res_file, true),
    ] {
        let result = run_live_with(
            file,
            |o| o.speculate = speculate,
            |s| {
                for t in &mut s.threads {
                    if t.name == "cyclictest" {
                        if let Some(argv) = &mut t.program.command {
                            with_histfile(argv, label);
                        }
                    }
                }
            },
        )?;
        if speculate {
            mispredicted.push(speculation(&result)?);
        }
    }
    let other = read("other")?;
    let fifo = read("fifo")?;
    let bvt = read("bvt")?;
    let res = read("res")?;
    let bvt_spec = read("bvt-spec")?;
    let res_spec = read("res-spec")?;
    let _ = std::fs::remove_dir_all(&dir);
    for (label, (p50, p99, max)) in [
        ("SCHED_OTHER", other),
        ("SCHED_FIFO", fifo),
        ("hsched BVT warp", bvt),
        ("hsched reservation", res),
        ("hsched BVT, spec.", bvt_spec),
        ("hsched res., spec.", res_spec),
    ] {
        eprintln!("live-cyclictest: {label:<19} p50 {p50:>6} us  p99 {p99:>6} us  max {max:>6} us");
    }
    for (label, (woke, wrong)) in ["BVT", "reservation"].iter().zip(&mispredicted) {
        eprintln!("live-cyclictest: {label} speculating: {woke} speculative wakeups, {wrong} against the hierarchy's decision");
    }
    let ratio = |x: (f64, f64, f64)| x.1 / fifo.1.max(1.0);
    let wrong = |(woke, wrong): (u64, u64)| wrong as f64 / woke.max(1) as f64;
    Ok(vec![
        Check {
            quantity: "BVT warp: wakeup p99 / SCHED_FIFO's".into(),
            paper: 3.0,
            measured: ratio(bvt),
            tolerance: 0.0,
            why: "the issue's target, measured side by side in one run: hsched's user-space dispatch adds the agent's hearing of the wakeup (the kernel's irq_work, a context switch), its decision and its raising of the thread to the kernel's timer latency",
            bound: Bound::AtMost,
            differs: None,
        },
        Check {
            quantity: "reservation: wakeup p99 / SCHED_FIFO's".into(),
            paper: 3.0,
            measured: ratio(res),
            tolerance: 0.0,
            why: "as above, under `res` (EDF over reservations)",
            bound: Bound::AtMost,
            differs: None,
        },
        Check {
            quantity: "BVT warp, speculating: p99 / SCHED_FIFO's".into(),
            paper: 3.0,
            measured: ratio(bvt_spec),
            tolerance: 0.0,
            why: "the same target with `--speculate`: the warped thread, run at each wakeup, is left ready to run at the next, so Linux runs it before the agent hears of the wakeup",
            bound: Bound::AtMost,
            differs: None,
        },
        Check {
            quantity: "reservation, speculating: p99 / SCHED_FIFO's".into(),
            paper: 3.0,
            measured: ratio(res_spec),
            tolerance: 0.0,
            why: "as above, under `res`",
            bound: Bound::AtMost,
            differs: None,
        },
        Check {
            quantity: "BVT, speculating: wakeups against the hierarchy".into(),
            paper: 0.0,
            measured: wrong(mispredicted[0]),
            tolerance: 0.01,
            why: "the speculation must be the hierarchy's own decision: a warped thread wins every wakeup, so at most 1% of speculative wakeups may have run against it",
            bound: Bound::AtMost,
            differs: None,
        },
        Check {
            quantity: "reservation, speculating: wakeups against the hierarchy".into(),
            paper: 0.0,
            measured: wrong(mispredicted[1]),
            tolerance: 0.01,
            why: "as above: a reserved thread that has budget wins its wakeup",
            bound: Bound::AtMost,
            differs: None,
        },
    ])
}

/// The speculative wakeups a live run logged: how many, how many against
/// the hierarchy's decision.
fn speculation(result: &RunResult) -> Result<(u64, u64), String> {
    let text = result
        .log
        .iter()
        .find(|e| {
            e.kind == hsched_model::LogKind::Platform && e.text.starts_with("speculative wakeups")
        })
        .map(|e| e.text.as_str())
        .ok_or("the run logged no speculative wakeups")?;
    let numbers: Vec<u64> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    match numbers[..] {
        [woke, wrong, ..] => Ok((woke, wrong)),
        _ => Err(format!("unreadable: {text}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclictest_histograms_read_as_percentiles() {
        let text = "# Histogram\n000001 000050\n000002 000049\n000010 000001\n# Total: 000000100\n# Min Latencies: 00001\n# Avg Latencies: 00001\n# Max Latencies: 00010\n# Histogram Overflows: 00000\n";
        assert_eq!(histogram(text), Ok((1.0, 2.0, 10.0)));
        assert!(histogram("# Max Latencies: 00003\n").is_err(), "no samples");
        assert!(histogram("000001 000005\n").is_err(), "no max line");
    }
}
