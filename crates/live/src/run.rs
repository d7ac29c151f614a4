//! `hsched live SCENARIO`: a scenario's hierarchy scheduling real
//! processes, one per thread, with a [`RunResult`] like the simulator's:
//! CPU time, latencies, switches and the trace from the kernel's switch
//! and wakeup events, jobs from the workers.
//!
//! A thread is one of:
//! - a real command (`command = [...]`), started at its arrival (with
//!   SIGHUP ignored: see [`crate::launch::start_held`]) and ended at the horizon,
//!   unless [`LiveOptions::keep_commands`];
//! - an existing process (`attach`), taken over at its arrival and given
//!   back as it was at the end, not ended;
//! - otherwise hsched's instrumented worker ([`crate::worker`]) executing
//!   the thread's workload program, started and ended like a command.
//!
//! What a thread's process starts (threads, processes) is managed with it
//! and counted as its. The script's hierarchy changes are played at their
//! times, and the control socket ([`crate::control`]) takes requests while
//! it runs.
//!
//! The run ends early, as if its horizon were that moment, when a stop is
//! asked for ([`LiveOptions::stop`]) or the guardian is gone: its commands
//! ended, every thread given back, the result for the time that ran
//! ([`Outcome`]).

use crate::agent::{Agent, Interrupted};
use crate::launch::{Gate, Held};
use crate::observe::{Observations, Seen, ThreadFigures};
use hsched_core::{Duration, Instant, ThreadId};
use hsched_model::{Action, RunResult, Scenario, ThreadResult};
use std::ffi::{OsStr, OsString};

/// Ends commands started held that are not managed (a batch that failed
/// to start): they ran nothing of their own.
fn abandon(held: impl Iterator<Item = Held>) {
    for mut h in held {
        let _ = crate::sys::signal(h.id(), libc::SIGKILL);
        let _ = h.wait();
    }
}

/// What schedules the real threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The user-space agent ([`Agent::new`]): priorities, parking and
    /// ftrace, on any Linux.
    Agent,
    /// hsched's sched_ext scheduler ([`Agent::new_scx`]): the kernel runs
    /// what the hierarchy decides. Needs a kernel with sched_ext and hsched
    /// built with the `scx` feature.
    Scx,
}

impl Backend {
    /// The backend asked for, or where none was: sched_ext where this
    /// hsched and this kernel offer it, else the agent, with the reason
    /// sched_ext was not picked.
    pub fn pick(asked: Option<Backend>) -> (Backend, Option<String>) {
        match (asked, hsched_scx::available()) {
            (Some(b), _) => (b, None),
            (None, Ok(())) => (Backend::Scx, None),
            (None, Err(why)) => (Backend::Agent, Some(why)),
        }
    }

    /// The platform name a run on it reports (`RunResult::platform`).
    pub fn platform(self) -> &'static str {
        match self {
            Backend::Agent => "live",
            Backend::Scx => "live-scx",
        }
    }
}

/// How to run live.
#[derive(Clone)]
pub struct LiveOptions {
    /// What schedules the real threads.
    pub backend: Backend,
    /// Under sched_ext, only the scenario's threads (and what they start)
    /// are under hsched, and the fair class runs before them; otherwise
    /// the whole machine is (see [`Agent::delegate_others`]).
    pub partial: bool,
    /// The guardian program and its leading arguments.
    pub guardian: Vec<OsString>,
    /// Override the scenario's horizon.
    pub horizon: Option<Duration>,
    /// Park threads off their CPU by stopping their process (SIGSTOP)
    /// rather than lowering them to `SCHED_IDLE`.
    pub hard_parking: bool,
    /// Threads that are existing processes (thread name, pid): taken over
    /// at their arrival instead of started, and left running at the end.
    pub attach: Vec<(String, i32)>,
    /// The worker program and its leading arguments (it is given the
    /// worker spec as one more): runs the threads that have neither a
    /// command nor an attached process.
    pub worker: Vec<OsString>,
    /// Record the timeline ([`RunResult::trace`]).
    pub trace: bool,
    /// Where to listen for control requests ([`crate::control`]); the
    /// workers' `msg` operations come through it too.
    pub control: Option<std::path::PathBuf>,
    /// The real CPU the agent runs on (`None`: the first managed one; see
    /// [`Agent::new`]).
    pub agent_cpu: Option<usize>,
    /// Speculative wakeups ([`Agent::speculate`]); the agent then runs off
    /// the managed CPUs unless `agent_cpu` says otherwise.
    pub speculate: bool,
    /// Leave Linux's autogroup as it is (see [`Agent::autogroup_off`]):
    /// the run then shares its CPUs with other sessions' work by session.
    pub keep_autogroup: bool,
    /// Policies beyond the built-in ones (plugins'), by name for the
    /// scenario's schedulers and the script's and control's loads. Their
    /// libraries must stay loaded for the run.
    pub policies: Vec<&'static hsched_core::PolicyInfo>,
    /// Leave the commands started for the scenario's threads running at
    /// the end (given back to Linux as they started), instead of ending
    /// them with everything they started. The workers end either way.
    pub keep_commands: bool,
    /// Stop early, at that moment, when this says a stop was asked for
    /// (SIGINT, SIGTERM: [`crate::signals`]); the result then covers the
    /// time that ran.
    pub stop: Option<crate::signals::StopHandle>,
    /// Re-analyses each change of the hierarchy (script steps, control
    /// requests, `join` and `leave`) before it is made; `None`: changes
    /// are checked by the policies only.
    pub guard: Option<hsched_model::guard::SharedGuard>,
}

/// A live run's result, and why it ended before its horizon if it did.
pub struct Outcome {
    pub result: RunResult,
    pub interrupted: Option<Interrupted>,
}

/// A managed process: a command started for a thread, or one attached.
struct Started {
    /// `None` for an attached process (not ours to wait for or end).
    child: Option<Held>,
    id: ThreadId,
    index: usize,
    /// Where a worker reports its jobs.
    report: Option<std::fs::File>,
}

/// The real CPUs a scenario of `n` CPUs runs on: the highest-numbered `n`
/// this process may use (CPU 0 keeps the system's housekeeping).
fn pick_cpus(n: u32) -> Result<Vec<usize>, String> {
    let allowed =
        crate::sys::get_affinity(0).map_err(|e| format!("reading this process's CPUs: {e}"))?;
    if (n as usize) > allowed.len() {
        return Err(format!(
            "the scenario asks for {n} CPUs; this machine lets hsched use {} ({allowed:?})",
            allowed.len()
        ));
    }
    Ok(allowed[allowed.len() - n as usize..].to_vec())
}

/// Runs `scn` on real threads to its horizon. Needs root. A run stopped
/// early (see [`run_to_outcome`]) is an error here.
pub fn run(scn: &Scenario, opts: &LiveOptions) -> Result<RunResult, String> {
    let outcome = run_to_outcome(scn, opts)?;
    match outcome.interrupted {
        None => Ok(outcome.result),
        Some(why) => Err(format!(
            "{why}: the run stopped at {} (every thread given back)",
            Instant::ZERO + outcome.result.horizon
        )),
    }
}

/// Runs `scn` on real threads until its horizon or an earlier stop (a
/// stop asked for, the guardian gone). Needs root.
pub fn run_to_outcome(scn: &Scenario, opts: &LiveOptions) -> Result<Outcome, String> {
    for (name, pid) in &opts.attach {
        if !scn.threads.iter().any(|t| &t.name == name) {
            let names: Vec<&str> = scn.threads.iter().map(|t| t.name.as_str()).collect();
            return Err(format!(
                "--attach {name}={pid}: no thread `{name}` (the scenario has {})",
                names.join(", ")
            ));
        }
        if *pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(format!("--attach {name}={pid}: no process {pid}"));
        }
    }
    let attached = |name: &str| opts.attach.iter().find(|(n, _)| n == name).map(|&(_, p)| p);
    // What each worker runs, checked before anything starts.
    let plans = scn
        .threads
        .iter()
        .map(|t| match (&t.program.command, attached(&t.name)) {
            (None, None) => crate::worker::plan(&t.program.ops)
                .map(Some)
                .map_err(|e| format!("thread `{}`: {e}", t.name)),
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>, String>>()?;
    let messages = plans
        .iter()
        .flatten()
        .any(|p| crate::worker::sends_messages(p));
    if messages && opts.control.is_none() {
        return Err("the workers send messages (`msg`), and there is no control socket to send them through".into());
    }
    if plans.iter().any(Option::is_some) && opts.worker.is_empty() {
        return Err(
            "threads without a `command` need hsched's worker program, and none was given".into(),
        );
    }
    // The script's hierarchy changes are played; protection domains
    // (Yau et al. §6) are the simulator's: a domain declared at time zero
    // only groups threads, anything more is refused.
    if let Some(e) = scn.script.iter().find(|e| match &e.action {
        Action::Domain(_) | Action::Mutex(_) => e.at > Instant::ZERO,
        Action::Kill(_) | Action::Create(_) => true,
        _ => false,
    }) {
        return Err(format!(
            "the script at t={} starts, creates or kills a protection domain: `hsched live` does not run protection domains (run it in `hsched sim`)",
            e.at
        ));
    }
    // The real machine has its own interrupts; injecting more is not
    // something a user-space runner can do.
    if let Some(Action::Interrupt(spec)) = scn
        .script
        .iter()
        .map(|e| &e.action)
        .find(|a| matches!(a, Action::Interrupt(_)))
    {
        return Err(format!(
            "interrupt source `{}`: `hsched live` cannot inject interrupts (the machine's own are there); run it in `hsched sim`, or remove the [[interrupt]] tables",
            spec.name
        ));
    }
    let mut script: Vec<&hsched_model::ScriptEvent> = scn
        .script
        .iter()
        .filter(|e| !matches!(e.action, Action::Domain(_) | Action::Mutex(_)))
        .collect();
    script.sort_by_key(|e| e.at);
    let mut next_step = 0;
    let horizon = Instant::ZERO + opts.horizon.unwrap_or(scn.horizon);
    let cpus = pick_cpus(scn.machine.cpus)?;
    let guardian: Vec<&OsStr> = opts.guardian.iter().map(|s| s.as_os_str()).collect();
    // Speculating, the agent is best off the managed CPUs: there it would
    // wake at every wakeup of an armed thread and run first, above it. So
    // under sched_ext, where it runs above every thread it schedules:
    // measured in the guest, on the managed CPU its wakeups took 70% of
    // the CPU from the threads (each preemption a switch to record).
    let scx = opts.backend == Backend::Scx;
    let agent_cpu = opts.agent_cpu.or_else(|| {
        let others = crate::sys::get_affinity(0).ok()?;
        (opts.speculate || scx)
            .then(|| others.into_iter().find(|c| !cpus.contains(c)))
            .flatten()
    });
    if scx && opts.hard_parking {
        return Err(
            "hard parking is the user-space agent's (`--backend agent`): \
                    under sched_ext a thread off its CPU waits in the scheduler's custody"
                .into(),
        );
    }
    let mut agent = match opts.backend {
        Backend::Agent => Agent::new(&cpus, agent_cpu, &guardian, scn.machine.watchdog)?,
        Backend::Scx => Agent::new_scx(&cpus, agent_cpu, scn.machine.watchdog, !opts.partial)
            .map_err(|e| format!("the sched_ext backend: {e}"))?,
    };
    if let Some(stop) = &opts.stop {
        agent.stop_on(stop.clone());
    }
    if opts.hard_parking {
        agent.park_hard()?;
    } else if opts.speculate {
        agent.speculate();
    }
    if let Some(path) = &opts.control {
        agent.listen(path)?;
    }
    // Autogroup shares the fair class, which the managed threads leave
    // under sched_ext.
    let autogroup_off = !scx && !opts.keep_autogroup && agent.autogroup_off()?;
    // What the run notes about the platform, for the log.
    let mut notes: Vec<hsched_model::LogEntry> = Vec::new();
    if scx {
        let mode = match opts.partial {
            true => "partial mode (only the scenario's threads and what they start are under hsched; the fair class runs before them)",
            false => "whole machine (every SCHED_NORMAL task is under hsched; those the scenario does not name run as one thread of the default scheduler, `(others)`, and on the CPUs outside the scenario)",
        };
        notes.push(hsched_model::LogEntry {
            at: Instant::ZERO,
            kind: hsched_model::LogKind::Platform,
            text: format!(
                "backend: sched_ext, {mode}; the kernel's watchdog ejects the scheduler if a task waits {} s unrun",
                crate::agent::kernel_watchdog(scn.machine.watchdog).as_secs()
            ),
        });
    }
    {
        let (disp, platform) = agent.dispatcher();
        for &p in &opts.policies {
            disp.add_policy(p);
        }
        hsched_dispatch::build_hierarchy(disp, platform, scn)?;
        if let Some(guard) = &opts.guard {
            disp.set_guard(guard.clone());
        }
    }
    if scx && !opts.partial {
        agent.delegate_others()?;
    }
    agent.start_clock();
    // Each CPU's idle time over the run: the kernel's count at the start
    // and, below, at the end (see `crate::cpu_idle` for why the kernel's).
    let idle_at_start = crate::cpu_idle::sample(&cpus);
    let wall = std::time::Instant::now();
    let mut order: Vec<usize> = (0..scn.threads.len()).collect();
    order.sort_by_key(|&i| (scn.threads[i].arrival, i));
    let mut next = 0;
    let mut started: Vec<Started> = Vec::new();
    // Run in a closure so that an error still reaches the clean-up below.
    let result = (|| -> Result<(), String> {
        while agent.now() < horizon && agent.interrupted().is_none() {
            // Arrivals due now, as one batch: the commands started held
            // (none runs code of its own yet), listed with the kernel in
            // one write, managed, then released (each when the hierarchy
            // first gives it a CPU).
            let mut due = Vec::new();
            while next < order.len() && scn.threads[order[next]].arrival <= agent.now() {
                due.push(order[next]);
                next += 1;
            }
            let mut gate = Gate::new();
            let mut batch: Vec<(usize, Option<Held>, i32, Option<std::fs::File>)> = Vec::new();
            for &i in &due {
                let spec = &scn.threads[i];
                if let Some(pid) = attached(&spec.name) {
                    batch.push((i, None, pid, None));
                    continue;
                }
                let mut report = None;
                let argv: Vec<OsString> = match (&spec.program.command, &plans[i]) {
                    (Some(argv), _) => argv.iter().map(OsString::from).collect(),
                    (None, steps) => {
                        let spec = crate::worker::WorkerSpec {
                            zero_ns: agent.zero_ns(),
                            seed: scn.seed,
                            stream: i as u64 + 1,
                            control: opts.control.clone(),
                            steps: steps.clone().expect("planned above"),
                        };
                        let file = crate::sys::memfd(c"hsched-jobs")
                            .map_err(|e| format!("a file for the jobs: {e}"))?;
                        report = Some(file);
                        let mut argv = opts.worker.clone();
                        argv.push(spec.to_arg().into());
                        argv
                    }
                };
                let argv: Vec<&OsStr> = argv.iter().map(OsString::as_os_str).collect();
                match agent.start_held(&argv, report.as_ref(), &mut gate) {
                    Ok(child) => {
                        let pid = child.id();
                        batch.push((i, Some(child), pid, report));
                    }
                    Err(e) => {
                        let what = spec
                            .program
                            .command
                            .as_ref()
                            .map_or("the worker", |a| a[0].as_str());
                        abandon(batch.into_iter().filter_map(|b| b.1));
                        return Err(format!("thread `{}`: starting {what}: {e}", spec.name));
                    }
                }
            }
            let pids: Vec<i32> = batch.iter().map(|b| b.2).collect();
            if let Err(e) = agent.watch(&pids) {
                abandon(batch.into_iter().filter_map(|b| b.1));
                return Err(e);
            }
            let mut batch = batch.into_iter();
            while let Some((i, child, pid, report)) = batch.next() {
                let spec = &scn.threads[i];
                let managed = if child.is_some() {
                    agent.manage_held(pid, &spec.name, &spec.parent, &spec.params)
                } else {
                    if autogroup_off {
                        // Started before autogroup went off, it is still
                        // in its session's group: take it out, as if it
                        // were started now.
                        regroup_process(pid, &spec.name, agent.now(), &mut notes);
                    }
                    agent.manage(pid, &spec.name, &spec.parent, &spec.params)
                };
                match managed {
                    Ok(id) => started.push(Started {
                        child,
                        report,
                        id,
                        index: i,
                    }),
                    Err(e) => {
                        abandon(child.into_iter().chain(batch.filter_map(|b| b.1)));
                        return Err(e);
                    }
                }
            }
            agent
                .open_gate(gate)
                .map_err(|e| format!("releasing the commands started: {e}"))?;
            // Script steps due now, after the arrivals at the same time
            // (as in simulation).
            while next_step < script.len() && script[next_step].at <= agent.now() {
                agent.script(&script[next_step].action);
                next_step += 1;
            }
            let arrival = order.get(next).map(|&i| scn.threads[i].arrival);
            let step = script.get(next_step).map(|e| e.at);
            let until = [arrival, step]
                .into_iter()
                .flatten()
                .fold(horizon, Instant::min);
            agent.run_until(until, |_| false)?;
        }
        Ok(())
    })();
    let idle_at_end = crate::cpu_idle::sample(&cpus);
    // Stopped early: the run covers the time that ran, as if its horizon
    // were now.
    let interrupted = agent.interrupted().cloned();
    let horizon = match &interrupted {
        Some(_) => agent.now().min(horizon),
        None => horizon,
    };
    let decisions = agent.decisions();
    let mut log = agent.take_log();
    if let Some(why) = &interrupted {
        log.push(hsched_model::LogEntry {
            at: horizon,
            kind: hsched_model::LogKind::Platform,
            text: format!("{why}: the run ends here, every thread given back"),
        });
    }
    log.extend(agent.changes().1.iter().map(|e| hsched_model::LogEntry {
        at: horizon,
        kind: hsched_model::LogKind::Refused,
        text: format!("could not change a managed thread: {e}"),
    }));
    if opts.speculate && !opts.hard_parking {
        let (woke, wrong) = agent.speculation();
        let until = match scx {
            true => "it ran until the decision written preempted it, at most 1 ms",
            false => "the thread ran until the agent parked it",
        };
        log.push(hsched_model::LogEntry {
            at: horizon,
            kind: hsched_model::LogKind::Platform,
            text: format!(
                "speculative wakeups: {woke}, of which {wrong} against the hierarchy's decision ({until})"
            ),
        });
    }
    if let Some(stats) = agent.scx_stats() {
        let mut late = agent.lateness().to_vec();
        late.sort_unstable();
        let at = |q: f64| {
            late.get(((late.len() as f64 - 1.0) * q) as usize)
                .copied()
                .unwrap_or(0)
        };
        let stats = match stats {
            Ok(stats) => stats.to_string(),
            Err(e) => e,
        };
        log.push(hsched_model::LogEntry {
            at: horizon,
            kind: hsched_model::LogKind::Platform,
            text: format!(
                "sched_ext dispatch: {stats}; the agent acted on {} deadlines late by p50 {} p99 {}",
                late.len(),
                Duration::from_nanos(at(0.5)),
                Duration::from_nanos(at(0.99)),
            ),
        });
    }
    if autogroup_off {
        log.push(hsched_model::LogEntry {
            at: Instant::ZERO,
            kind: hsched_model::LogKind::Platform,
            text: "Linux's autogroup was off for the run (turned back on at the end; --keep-autogroup leaves it): with it on, other sessions' work takes a managed thread's CPU whatever its nice value".into(),
        });
    }
    let nodes = agent.node_results().to_vec();
    let schedulers: Vec<(String, Vec<hsched_model::Home>)> = started
        .iter()
        .map(|s| (agent.sched_of(s.id), agent.homes_of(s.id)))
        .collect();
    // The horizon ends the commands, as it ends a simulated run, with
    // everything they started (some, like stress-ng, start their workers
    // in groups of their own); attached processes go on, given back as
    // they were, and so do the commands the caller keeps (not the
    // workers: they only stand in for the scenario's programs).
    let ends = |s: &Started| s.child.is_some() && (!opts.keep_commands || s.report.is_some());
    for s in started.iter().filter(|s| ends(s)) {
        for pid in agent.family_processes(s.id) {
            let _ = crate::sys::signal(pid, libc::SIGKILL);
        }
    }
    let agent_observations = agent.take_observations();
    let family = agent.family().to_vec();
    let exits = agent.exits().to_vec();
    let names: Vec<String> = (0..family.len())
        .map(|i| agent.thread_name(ThreadId(i as u32)).to_string())
        .collect();
    let stopped = agent
        .stop()
        .map_err(|e| format!("giving the threads back: {e}"));
    for s in &mut started {
        if !ends(s) {
            continue;
        }
        if let Some(child) = &mut s.child {
            // The group is the child's own (not reaped yet, so its id is
            // not reused).
            let _ = crate::sys::kill_group(child.id());
            let _ = child.wait();
        }
    }
    if autogroup_off {
        // Autogroup is on again: attached processes back into their
        // sessions' groups.
        for s in started.iter().filter(|s| s.child.is_none()) {
            let pid = attached(&scn.threads[s.index].name).expect("attached");
            regroup_process(pid, &scn.threads[s.index].name, horizon, &mut notes);
        }
    }
    log.append(&mut notes);
    result?;
    stopped?;
    let observed = agent_observations;
    // A scenario thread is its process and everything it started: its
    // figures are its family's.
    let figures = observed.thread_figures(family.len(), horizon);
    let mut families: Vec<ThreadFigures> = vec![ThreadFigures::default(); family.len()];
    for (t, f) in figures.into_iter().enumerate() {
        families[family[t].index()].absorb(f);
    }
    let mut jobs = Vec::new();
    for s in &mut started {
        if let Some(file) = &mut s.report {
            use std::io::{Read, Seek};
            let mut text = String::new();
            file.rewind()
                .and_then(|()| file.read_to_string(&mut text))
                .map_err(|e| format!("reading the jobs of `{}`: {e}", scn.threads[s.index].name))?;
            jobs.extend(crate::worker::jobs_from_report(s.id, &text));
        }
    }
    // As in simulation: the jobs released before the horizon, unfinished
    // if they finished after it (the workers outlive it by the clean-up).
    jobs.retain(|j| j.release < horizon);
    for j in &mut jobs {
        j.start = j.start.filter(|&t| t < horizon);
        j.finish = j.finish.filter(|&t| t <= horizon);
    }
    jobs.sort_by_key(|j| (j.release, j.thread, j.job));
    let threads: Vec<ThreadResult> = started
        .iter()
        .zip(schedulers)
        .map(|(s, (scheduler, homes))| {
            let f = std::mem::take(&mut families[s.id.index()]);
            ThreadResult {
                id: s.id,
                name: scn.threads[s.index].name.clone(),
                scheduler,
                homes,
                cpu_time: f.cpu_time,
                wakeup_latencies: f.wakeup_latencies,
                wakeup_sketch: f.wakeup_sketch,
                max_runnable_gap: f.max_runnable_gap,
                context_switches: f.context_switches,
                migrations: f.migrations,
                arrival: scn.threads[s.index].arrival,
                exit: exits[s.id.index()],
                ..ThreadResult::default()
            }
        })
        .collect();
    let mut limits = Vec::new();
    if !observed.timeline_kept() {
        limits.push(format!(
            "timeline: more than {} switches and wakeups (MAX_KEPT_EVENTS): not kept; \
             the figures count them all",
            crate::observe::MAX_KEPT_EVENTS
        ));
    }
    limits.extend(hsched_model::sketched_latencies_note(&threads));
    let idle = idle_at_start.and_then(|start| {
        let end = idle_at_end?;
        Ok(crate::cpu_idle::idle_between(
            &start,
            &end,
            crate::cpu_idle::ticks_per_second(),
        ))
    });
    let cpu_stats = cpu_stats(&observed, cpus.len(), idle, horizon, &mut limits);
    let trace = (opts.trace && observed.timeline_kept()).then(|| {
        let segments = observed.segments(cpus.len(), horizon);
        trace(&observed, segments, names, &jobs, horizon)
    });
    let result = RunResult {
        scenario: scn.name.clone(),
        platform: opts.backend.platform().into(),
        seed: scn.seed,
        cpus: scn.machine.cpus,
        horizon: horizon - Instant::ZERO,
        threads,
        nodes,
        cpu_stats,
        decisions,
        events: observed.len(),
        wall_ns: wall.elapsed().as_nanos() as u64,
        jobs,
        log,
        trace,
        limits,
        ..RunResult::default()
    };
    Ok(Outcome {
        result,
        interrupted,
    })
}

/// Each managed CPU's figures over `[0, horizon)`, as the simulator
/// gives them: busy, the managed threads' time there (from the kernel's
/// switch events, as their `cpu_time`); idle, the time the kernel counted
/// it idle (`idle`, by CPU; where it could not be read, 0 and the reason
/// in `limits`). What is left of the run's length went to what hsched
/// does not manage (the agent, other processes, kernel threads,
/// interrupts): neither busy nor idle. Switch overhead is not measured
/// live (0).
fn cpu_stats(
    observed: &Observations,
    cpus: usize,
    idle: Result<Vec<Duration>, String>,
    horizon: Instant,
    limits: &mut Vec<String>,
) -> Vec<hsched_model::CpuStats> {
    let length = horizon - Instant::ZERO;
    let idle = idle.unwrap_or_else(|why| {
        limits.push(format!("CPU idle time: not measured ({why})"));
        vec![Duration::ZERO; cpus]
    });
    (observed
        .cpu_busy(cpus, horizon)
        .into_iter()
        .zip(idle)
        .enumerate())
    .map(|(c, (busy, idle))| {
        let busy = busy.min(length);
        hsched_model::CpuStats {
            cpu: hsched_core::CpuId(c as u32),
            busy,
            // The kernel counts in ticks: not past what the managed
            // threads left of the run.
            idle: idle.min(length - busy),
            ..Default::default()
        }
    })
    .collect()
}

/// Places every thread of process `pid` (thread `name`) afresh in Linux's
/// task groups ([`crate::sys::regroup`]); what fails is noted.
fn regroup_process(pid: i32, name: &str, at: Instant, notes: &mut Vec<hsched_model::LogEntry>) {
    let tids = crate::sys::threads_of(pid).unwrap_or_default();
    if let Some(e) = tids.iter().find_map(|&t| crate::sys::regroup(t).err()) {
        notes.push(hsched_model::LogEntry {
            at,
            kind: hsched_model::LogKind::Platform,
            text: format!("thread `{name}` (process {pid}): moving it between autogroups failed ({e}): while the run lasts, its session's other work shares its CPU"),
        });
    }
}

/// The timeline of a live run: the managed CPUs' segments, wakeups, job
/// releases and deadline misses; `names` by dispatcher thread.
fn trace(
    observed: &Observations,
    segments: Vec<hsched_model::Segment>,
    names: Vec<String>,
    jobs: &[hsched_model::JobRecord],
    horizon: Instant,
) -> hsched_model::Trace {
    use hsched_model::{Mark, MarkKind};
    let mut marks: Vec<Mark> = observed
        .iter()
        .filter_map(|&(at, seen)| match seen {
            Seen::Wakeup(t) => Some(Mark {
                at,
                thread: Some(t),
                kind: MarkKind::Wakeup,
            }),
            Seen::Switch { .. } => None,
        })
        .collect();
    for j in jobs.iter().filter(|j| j.release < horizon) {
        marks.push(Mark {
            at: j.release,
            thread: Some(j.thread),
            kind: MarkKind::Release { job: j.job },
        });
        if j.missed(horizon) {
            marks.push(Mark {
                at: j.finish.unwrap_or(j.deadline),
                thread: Some(j.thread),
                kind: MarkKind::DeadlineMiss { job: j.job },
            });
        }
    }
    marks.sort_by_key(|m| m.at);
    hsched_model::Trace {
        segments,
        marks,
        thread_names: names,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Managed threads on CPU 0 for 60 ns of a 100 ns run, nothing on
    /// CPU 1.
    fn observed() -> Observations {
        let mut o = Observations::default();
        let on = |next| Seen::Switch {
            cpu: Some(0),
            prev: None,
            blocked: false,
            next,
        };
        o.push(Instant(10), on(Some(ThreadId(0))));
        o.push(Instant(70), on(None));
        o
    }

    #[test]
    fn a_cpu_s_busy_time_is_its_managed_threads_and_its_idle_time_the_kernel_s() {
        let mut limits = Vec::new();
        let idle = Ok(vec![Duration(30), Duration(100)]);
        let stats = cpu_stats(&observed(), 2, idle, Instant(100), &mut limits);
        let got: Vec<_> = stats.iter().map(|c| (c.cpu.0, c.busy, c.idle)).collect();
        assert_eq!(
            got,
            vec![
                (0, Duration(60), Duration(30)),
                (1, Duration::ZERO, Duration(100))
            ]
        );
        assert!(limits.is_empty());
    }

    #[test]
    fn idle_is_not_counted_past_what_the_managed_threads_left() {
        // The kernel counts in ticks: 50 ns idle beside 60 ns busy in 100.
        let mut limits = Vec::new();
        let idle = Ok(vec![Duration(50), Duration(0)]);
        let stats = cpu_stats(&observed(), 2, idle, Instant(100), &mut limits);
        assert_eq!(stats[0].idle, Duration(40));
    }

    #[test]
    fn an_unreadable_count_leaves_idle_at_zero_and_says_so() {
        let mut limits = Vec::new();
        let idle = Err("/proc/stat: permission denied".to_string());
        let stats = cpu_stats(&observed(), 2, idle, Instant(100), &mut limits);
        assert_eq!(stats[0].busy, Duration(60));
        assert_eq!(stats[0].idle, Duration::ZERO);
        assert_eq!(
            limits,
            vec!["CPU idle time: not measured (/proc/stat: permission denied)".to_string()]
        );
    }
}
