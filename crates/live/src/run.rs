//! `hsched live SCENARIO`: a scenario's hierarchy scheduling the real
//! commands its threads name (`command = [...]`), started at their
//! arrival, stopped at the horizon, with a [`RunResult`] like the
//! simulator's (CPU time from the kernel's own accounting).
//!
//! A thread may instead be an existing process (`attach`): taken over at
//! its arrival, given back as it was at the end, not ended. For now a
//! thread must have one or the other (hsched's instrumented worker that
//! executes workload programs is still to come), only a process's main
//! thread is managed, and the script is not played.

use crate::agent::Agent;
use hsched_core::{Duration, Instant, ThreadId};
use hsched_model::{RunResult, Scenario, ThreadResult};
use std::ffi::OsStr;
use std::process::{Child, Command, Stdio};

/// How to run live.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// The guardian program and its leading arguments.
    pub guardian: Vec<std::ffi::OsString>,
    /// Override the scenario's horizon.
    pub horizon: Option<Duration>,
    /// Park threads off their CPU by stopping their process (SIGSTOP)
    /// rather than lowering them to `SCHED_IDLE`.
    pub hard_parking: bool,
    /// Threads that are existing processes (thread name, pid): taken over
    /// at their arrival instead of started, and left running at the end.
    pub attach: Vec<(String, i32)>,
}

/// A managed process: a command started for a thread, or one attached.
struct Started {
    /// `None` for an attached process (not ours to wait for or end).
    child: Option<Child>,
    pid: i32,
    id: ThreadId,
    index: usize,
    /// CPU time when it was taken over.
    cpu_at_start: std::time::Duration,
    last_cpu: std::time::Duration,
    exit: Option<Instant>,
}

/// CPU time (user + system) of process `pid` so far.
pub fn process_cpu_time(pid: i32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no memory arguments.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()?
        .max(1);
    Some(std::time::Duration::from_nanos(ticks * 1_000_000_000 / hz))
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

/// Runs `scn` on real threads. Needs root.
pub fn run(scn: &Scenario, opts: &LiveOptions) -> Result<RunResult, String> {
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
    if let Some(t) = scn
        .threads
        .iter()
        .find(|t| t.program.command.is_none() && attached(&t.name).is_none())
    {
        return Err(format!(
            "thread `{}` has no `command`: `hsched live` runs real commands (command = [\"...\"]) or attaches existing processes (--attach {}=PID); workload programs run in `hsched sim` only, for now",
            t.name, t.name
        ));
    }
    let horizon = Instant::ZERO + opts.horizon.unwrap_or(scn.horizon);
    let cpus = pick_cpus(scn.machine.cpus)?;
    let guardian: Vec<&OsStr> = opts.guardian.iter().map(|s| s.as_os_str()).collect();
    let mut agent = Agent::new(&cpus, &guardian, scn.machine.watchdog)?;
    if opts.hard_parking {
        agent.park_hard()?;
    }
    {
        let (disp, platform) = agent.dispatcher();
        hsched_dispatch::build_hierarchy(disp, platform, scn)?;
    }
    agent.start_clock();
    let mut order: Vec<usize> = (0..scn.threads.len()).collect();
    order.sort_by_key(|&i| (scn.threads[i].arrival, i));
    let mut next = 0;
    let mut started: Vec<Started> = Vec::new();
    // Run in a closure so that an error still reaches the clean-up below.
    let result = (|| -> Result<(), String> {
        while agent.now() < horizon {
            // Arrivals due now.
            while next < order.len() && scn.threads[order[next]].arrival <= agent.now() {
                let i = order[next];
                next += 1;
                let spec = &scn.threads[i];
                let (child, pid) = match attached(&spec.name) {
                    Some(pid) => (None, pid),
                    None => {
                        let argv = spec.program.command.as_ref().expect("checked above");
                        let child = agent
                            .spawn(Command::new(&argv[0]).args(&argv[1..]).stdin(Stdio::null()))
                            .map_err(|e| {
                                format!("thread `{}`: starting `{}`: {e}", spec.name, argv[0])
                            })?;
                        let pid = child.id() as i32;
                        (Some(child), pid)
                    }
                };
                let id = agent.manage(pid, &spec.name, &spec.parent, &spec.params)?;
                let cpu = process_cpu_time(pid).unwrap_or_default();
                started.push(Started {
                    child,
                    pid,
                    id,
                    index: i,
                    cpu_at_start: cpu,
                    last_cpu: cpu,
                    exit: None,
                });
            }
            let until = order
                .get(next)
                .map_or(horizon, |&i| scn.threads[i].arrival.min(horizon));
            let mut last_look = std::time::Instant::now();
            agent.run_until(until, |agent| {
                // Exits, looked for every 10ms (reading /proc costs the
                // agent CPU): reap them and tell the dispatcher.
                if last_look.elapsed() < std::time::Duration::from_millis(10) {
                    return false;
                }
                last_look = std::time::Instant::now();
                let mut any = false;
                for s in started.iter_mut().filter(|s| s.exit.is_none()) {
                    if let Some(c) = process_cpu_time(s.pid) {
                        s.last_cpu = c;
                    }
                    let gone = match &mut s.child {
                        Some(child) => matches!(child.try_wait(), Ok(Some(_))),
                        None => !std::path::Path::new(&format!("/proc/{}", s.pid)).exists(),
                    };
                    if gone {
                        s.exit = Some(agent.now());
                        agent.exited(s.pid);
                        any = true;
                    }
                }
                any
            })?;
        }
        Ok(())
    })();
    for s in &mut started {
        if s.exit.is_none() {
            if let Some(c) = process_cpu_time(s.pid) {
                s.last_cpu = c;
            }
        }
    }
    let decisions = agent.decisions();
    let errors: Vec<hsched_model::LogEntry> = agent
        .changes()
        .1
        .iter()
        .map(|e| hsched_model::LogEntry {
            at: horizon,
            kind: hsched_model::LogKind::Refused,
            text: format!("could not change a managed thread: {e}"),
        })
        .collect();
    let nodes = agent.node_results().to_vec();
    let schedulers: Vec<String> = started.iter().map(|s| agent.sched_of(s.id)).collect();
    let stopped = agent
        .stop()
        .map_err(|e| format!("giving the threads back: {e}"));
    // The horizon ends the commands, as it ends a simulated run; attached
    // processes go on, given back as they were.
    for s in &mut started {
        if let Some(child) = &mut s.child {
            if s.exit.is_none() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
    result?;
    stopped?;
    let threads = started
        .iter()
        .zip(schedulers)
        .map(|(s, scheduler)| ThreadResult {
            id: s.id,
            name: scn.threads[s.index].name.clone(),
            scheduler,
            cpu_time: Duration(s.last_cpu.saturating_sub(s.cpu_at_start).as_nanos() as u64),
            arrival: scn.threads[s.index].arrival,
            exit: s.exit,
            ..ThreadResult::default()
        })
        .collect();
    Ok(RunResult {
        scenario: scn.name.clone(),
        platform: "live".into(),
        seed: scn.seed,
        cpus: scn.machine.cpus,
        horizon: horizon - Instant::ZERO,
        threads,
        nodes,
        decisions,
        log: errors,
        ..RunResult::default()
    })
}
