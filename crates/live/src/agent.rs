//! The agent: the dispatcher driving real threads. It runs the same
//! policy code as `hsched sim` (the hierarchy built in it by the caller:
//! [`crate::run`] builds a scenario's), fed with the kernel's block and
//! wakeup events ([`crate::events`]) and the real clock, and applies each
//! decision to the managed threads:
//!
//! - on a CPU: `SCHED_OTHER` at nice [`RUN_NICE`], pinned to that CPU;
//!   the first millisecond after a wakeup at `SCHED_FIFO` [`WAKE_PRIORITY`]
//!   (see `LivePlatform::run`);
//! - parked soft (as Vassal delegates to the native scheduler):
//!   `SCHED_IDLE`, pinned to the managed CPUs, so Linux may run it only on
//!   time nobody else wants there (against a nice -20 thread, a
//!   `SCHED_IDLE` one weighs 3 in 88761: it runs when the CPU would idle);
//! - parked hard ([`Agent::park_hard`]): its process stopped instead.
//!
//! Why not `SCHED_FIFO` on the CPU throughout: real-time throttling. With managed
//! threads using a CPU fully at a real-time priority, the kernel stops
//! them all for 50 ms of every second (`sched_rt_runtime_us`, 95%).
//! Measured with HLS Table 5's frame loop (RESBS 10, 33): gaps of 60 ms
//! between frames once a second at `SCHED_FIFO`, at most 34.3 ms at
//! nice -20. Nor is throttling turned off: it is what keeps a CPU's
//! kernel threads alive under a runaway real-time thread.
//!
//! The agent itself runs at `SCHED_FIFO` [`AGENT_PRIORITY`], above every
//! managed thread, pinned to one CPU (by default the first managed one:
//! see [`Agent::new`]), with its memory locked; before it touches a thread it tells the
//! guardian ([`crate::guardian`]) the thread's original state, and it
//! gives the guardian a heartbeat: silent for [`HEARTBEAT_TIMEOUT`] once it
//! has begun beating (its run), it is killed and every thread restored.
//!
//! The agent waits for the kernel's events and for its next deadline
//! together (a CLOCK_MONOTONIC timerfd, timer slack 1 ns).
//!
//! On a kernel with sched_ext, [`Agent::new_scx`] makes the agent drive
//! hsched's BPF scheduler ([`hsched_scx`]) instead: the same dispatcher
//! and policies, but the kernel enforces each decision (a managed thread
//! runs only where and until user space decided: see `agent/platform.rs`'s `Scx`), the
//! events come from the BPF ring buffer instead of ftrace, and no guardian
//! is needed: if the agent dies, the kernel unloads the scheduler and
//! every thread goes back to the fair class. Nothing above is done to the
//! threads there but giving them the `SCHED_EXT` policy.
//!
//! With [`Agent::listen`], it answers control requests ([`crate::control`])
//! between events: messages to schedulers and changes of the hierarchy.
//!
//! It stops before the end it was given ([`Agent::interrupted`]) when a
//! stop is asked for ([`Agent::stop_on`], SIGINT or SIGTERM) or when its
//! guardian is gone (watched through a pidfd): without a guardian nothing
//! would undo its changes if it died, so it ends the run and gives every
//! thread back itself ([`Agent::stop`]).

mod control;
mod event_loop;
mod family;
mod intake;
mod platform;
mod script;

use crate::control::{ControlSocket, Peer};
use crate::events::{monotonic_ns, SchedEvent, SchedEvents};
use crate::guardian::{Guardian, Line, Original, Watch};
use crate::observe::Observations;
use crate::signals::StopHandle;
use crate::sys::{self, SchedAttr};
use hsched_core::{Instant, Params, ThreadId};
use hsched_dispatch::{Config, Dispatcher, Platform};
use hsched_model::LogEntry;
use platform::{LivePlatform, Scx};
pub use platform::{RUN_NICE, WAKE_PRIORITY};
use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Duration;

/// The agent's own `SCHED_FIFO` priority.
pub const AGENT_PRIORITY: u32 = 50;

/// How long the guardian waits for a sign of life before it takes the
/// agent for hung, kills it and restores every thread.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(1);

/// Why the agent stopped before the end it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interrupted {
    /// A stop was asked for by this signal (see [`Agent::stop_on`]).
    Signal(i32),
    /// The guardian ended (killed, say); what happened to it.
    GuardianGone(String),
    /// The kernel ejected the sched_ext scheduler (its watchdog, say): its
    /// reason and message. The threads run on under the fair class.
    Ejected(String),
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Interrupted::Signal(sig) => write!(f, "stopped by {}", crate::signals::name(*sig)),
            Interrupted::GuardianGone(how) => write!(f, "the guardian ended ({how})"),
            Interrupted::Ejected(why) => {
                write!(f, "the kernel ejected the sched_ext scheduler: {why}")
            }
        }
    }
}

/// The name of the thread that stands for the tasks nobody manages
/// ([`Agent::delegate_others`]).
pub const OTHERS: &str = "(others)";

/// A thread to manage: its kernel id, a name, its attachment parameters.
#[derive(Clone, Debug)]
pub struct Managed {
    pub tid: i32,
    pub name: String,
    pub params: Params,
}

/// The kernel's watchdog timeout for the sched_ext scheduler under a
/// dispatcher whose watchdog is `watchdog`: a second longer, so that a
/// policy starving a thread is ejected by the dispatcher first (its
/// threads handed back, the rest of the hierarchy running on), and the
/// kernel's watchdog only catches what the dispatcher cannot, an agent
/// that stopped deciding; without a dispatcher watchdog, the kernel's
/// longest ([`hsched_scx::MAX_TIMEOUT`], 30 s), also the cap.
pub fn kernel_watchdog(watchdog: Option<hsched_core::Duration>) -> Duration {
    watchdog
        .map(|w| Duration::from_nanos(w.as_nanos()) + Duration::from_secs(1))
        .unwrap_or(hsched_scx::MAX_TIMEOUT)
        .min(hsched_scx::MAX_TIMEOUT)
}

/// Makes the calling thread the agent: its memory locked, pinned to CPU
/// `home` (if given; it must be one this process may use), at
/// `SCHED_FIFO` [`AGENT_PRIORITY`]. Returns the CPUs the process was
/// allowed before (the commands it starts get them).
fn raise_self(home: Option<usize>) -> Result<Vec<usize>, String> {
    let _ = sys::lock_memory();
    let all_cpus = sys::get_affinity(0).map_err(|e| format!("the agent's CPUs: {e}"))?;
    if let Some(home) = home {
        if !all_cpus.contains(&home) {
            return Err(format!(
                "the agent's CPU {home} is not one this process may use ({all_cpus:?})"
            ));
        }
        sys::set_affinity(0, &[home])
            .map_err(|e| format!("pinning the agent to CPU {home}: {e}"))?;
    }
    // Reset on fork: the commands the agent starts begin at the default
    // policy, not at the agent's real-time priority (which the guardian
    // would otherwise take for their original state).
    let agent = SchedAttr {
        flags: sys::SCHED_FLAG_RESET_ON_FORK,
        ..SchedAttr::fifo(AGENT_PRIORITY)
    };
    sys::set_attr(0, &agent)
        .map_err(|e| format!("raising the agent to SCHED_FIFO {AGENT_PRIORITY}: {e}"))?;
    Ok(all_cpus)
}

/// The dispatcher, its platform, and the kernel's events.
pub struct Agent {
    disp: Dispatcher,
    platform: LivePlatform,
    /// The kernel's events from ftrace (`None` under sched_ext: the BPF
    /// scheduler's ring buffer has them).
    events: Option<SchedEvents>,
    /// Wakes the agent at the dispatcher's next deadline.
    timer: sys::Timer,
    /// The guardian (`None` under sched_ext: the kernel unloads the
    /// scheduler if the agent dies).
    guardian: Option<Guardian>,
    /// What each thread was before the agent took it.
    originals: Vec<Original>,
    by_tid: HashMap<i32, ThreadId>,
    /// The threads whose events the kernel reports.
    watched: std::collections::HashSet<i32>,
    start_ns: u64,
    now: Instant,
    last_beat: std::time::Instant,
    /// Beats have begun (see [`Agent::beat_now`]).
    beating: bool,
    /// How late each deadline of the dispatcher was acted on, ns.
    lateness: Vec<u64>,
    /// The managed threads' switches and wakeups, for the figures.
    observed: Observations,
    /// Events the dispatcher has had, to be recorded with the switches
    /// read next; and when those were last read.
    unobserved: Vec<SchedEvent>,
    switches_read: std::time::Instant,
    /// Where control requests come in, if anywhere.
    control: Option<ControlSocket>,
    /// What control requests did.
    log: Vec<LogEntry>,
    /// The CPUs this process was allowed at the start (the commands it
    /// starts get them).
    all_cpus: Vec<usize>,
    /// By managed thread: the head of its family, its attachment
    /// parameters, when it ended.
    family: Vec<ThreadId>,
    params: Vec<Params>,
    exits: Vec<Option<Instant>>,
    /// By managed thread: handed back to Linux (see
    /// [`Agent::hand_back_ejected`]).
    released: Vec<bool>,
    /// By managed thread: a command held at its gate, not woken since
    /// ([`Agent::manage_held`]).
    held: Vec<bool>,
    /// Plugin libraries loaded by control requests (kept open for the run).
    plugins: Vec<hsched_plugin_host::Plugin>,
    /// Autogroup as it was, if the agent turned it off
    /// ([`Agent::autogroup_off`]).
    autogroup: Option<bool>,
    /// Readable once the guardian has ended (`None` where the kernel has
    /// no pidfd: a failed write then tells, at the next heartbeat).
    guardian_exit: Option<OwnedFd>,
    /// Readable once a stop was asked for.
    stop_request: Option<StopHandle>,
    /// Why the agent stopped early, once it did.
    interrupted: Option<Interrupted>,
    /// A plugin library being loaded off the loop, if one is.
    plugin_load: Option<PluginLoad>,
    /// When the control socket was last served.
    control_served: std::time::Instant,
}

/// A plugin library being loaded on a thread of its own, and who asked.
struct PluginLoad {
    peer: Peer,
    connection: u64,
    result: std::sync::mpsc::Receiver<Result<hsched_plugin_host::Plugin, String>>,
}

impl Agent {
    /// An agent on the real CPUs `cpus` with an empty hierarchy: it starts
    /// its guardian (`guardian` runs the guardian program: its first word
    /// the executable, the rest leading arguments), locks its memory and
    /// raises itself to [`AGENT_PRIORITY`], pinned to real CPU `home`
    /// (`None`: the first of `cpus`).
    /// `watchdog`: the dispatcher's starvation watchdog bound (a policy
    /// that starves a thread that long is ejected), as in the scenario.
    ///
    /// Why on a managed CPU by default: a managed CPU is kept busy, so the
    /// kernel's event wakes the agent there at once, while an idle CPU
    /// elsewhere must first be woken itself (on a virtual machine, by the
    /// host). Measured side by side on a 2-CPU VM, cyclictest under a BVT
    /// warp beside two hogs: wakeup p99 147-155 µs with the agent on the
    /// managed CPU, 2.1-3.6 ms with it on the other (idle) one, where a
    /// plain pipe wakes a reader with a p99 of 1.6 ms; and the agent used
    /// 2.5-3.6 % of a CPU at 1,000 decisions/s there, 4.7-5.2 % elsewhere.
    /// The price: the agent's own time comes out of the managed threads'.
    pub fn new(
        cpus: &[usize],
        home: Option<usize>,
        guardian: &[&std::ffi::OsStr],
        watchdog: Option<hsched_core::Duration>,
    ) -> Result<Agent, String> {
        let (exe, lead) = guardian.split_first().ok_or("no guardian program given")?;
        let guardian = Guardian::spawn_with(
            Path::new(exe),
            lead,
            &Watch {
                agent: Some(std::process::id() as i32),
                heartbeat: Some(HEARTBEAT_TIMEOUT),
            },
        )
        .map_err(|e| format!("starting the guardian: {e}"))?;
        let guardian_exit = sys::pidfd(guardian.process_id() as i32).ok();
        // A write to a dead guardian must fail (EPIPE), not kill the agent,
        // which is then the only one left to give the threads back.
        // SAFETY: setting a signal's disposition to ignore.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        let home = home.or(cpus.first().copied()).ok_or("no CPU to manage")?;
        let all_cpus = raise_self(Some(home))?;
        // Opened before any thread is managed (it takes milliseconds), so
        // that the clock starts after it.
        let events = SchedEvents::open(&[]).map_err(|e| format!("kernel events: {e}"))?;
        let mut agent = Agent::assemble(cpus, watchdog, all_cpus, None)?;
        agent.events = Some(events);
        agent.guardian = Some(guardian);
        agent.guardian_exit = guardian_exit;
        Ok(agent)
    }

    /// An agent on the real CPUs `cpus` that drives hsched's sched_ext
    /// scheduler ([`hsched_scx`]), which it loads: the kernel must have
    /// sched_ext and none loaded, hsched the `scx` feature, and the caller
    /// root. `watchdog` as for [`Agent::new`]; the kernel's own watchdog
    /// ejects the whole scheduler if a task waits unrun for
    /// [`kernel_watchdog`] (see [`Interrupted::Ejected`]).
    /// `whole_machine`: every `SCHED_NORMAL` task is under the scheduler,
    /// the ones nobody names as one thread of the default scheduler
    /// ([`Agent::delegate_others`], to be called once the hierarchy is
    /// built); otherwise only the threads managed (partial mode).
    ///
    /// No guardian: if the agent dies, the kernel unloads the scheduler
    /// and the threads run on under the fair class. The agent raises
    /// itself to `SCHED_FIFO` [`AGENT_PRIORITY`] (its decisions come
    /// before the threads it schedules, as in-kernel scheduling would),
    /// on `home` if given, else wherever Linux places it.
    pub fn new_scx(
        cpus: &[usize],
        home: Option<usize>,
        watchdog: Option<hsched_core::Duration>,
        whole_machine: bool,
    ) -> Result<Agent, String> {
        let sched = hsched_scx::Scheduler::load_with(&hsched_scx::Options {
            whole_machine,
            timeout: kernel_watchdog(watchdog),
        })?;
        let all_cpus = raise_self(home)?;
        let scx = Scx::new(sched, cpus.len());
        Agent::assemble(cpus, watchdog, all_cpus, Some(scx))
    }

    /// The parts both backends share; the caller adds its own.
    fn assemble(
        cpus: &[usize],
        watchdog: Option<hsched_core::Duration>,
        all_cpus: Vec<usize>,
        scx: Option<Scx>,
    ) -> Result<Agent, String> {
        // Deadlines to the nanosecond: no timer slack.
        sys::set_timer_slack(1).map_err(|e| format!("setting the timer slack: {e}"))?;
        let timer = sys::Timer::new().map_err(|e| format!("a timerfd: {e}"))?;
        Ok(Agent {
            // Policies a scenario or an operator loads from plugins are
            // added as they come (`Dispatcher::add_policy`).
            disp: Dispatcher::new(
                Config {
                    cpus: cpus.len() as u32,
                    tick: None,
                    watchdog,
                    check_invariants: false,
                },
                hsched_policies::builtins(),
            ),
            platform: LivePlatform::new(cpus, scx),
            events: None,
            timer,
            guardian: None,
            originals: Vec::new(),
            by_tid: HashMap::new(),
            watched: Default::default(),
            start_ns: monotonic_ns(),
            now: Instant::ZERO,
            last_beat: std::time::Instant::now(),
            beating: false,
            // Reserved now: grown later, on the CPU it shares with the
            // threads it manages, the copy would hold them back.
            lateness: Vec::with_capacity(1 << 16),
            observed: Observations::default(),
            unobserved: Vec::new(),
            switches_read: std::time::Instant::now(),
            control: None,
            log: Vec::new(),
            all_cpus,
            family: Vec::new(),
            params: Vec::new(),
            exits: Vec::new(),
            released: Vec::new(),
            held: Vec::new(),
            plugins: Vec::new(),
            autogroup: None,
            guardian_exit: None,
            stop_request: None,
            interrupted: None,
            plugin_load: None,
            control_served: std::time::Instant::now(),
        })
    }

    /// Turns Linux's autogroup off until [`Agent::stop`] (the guardian
    /// turns it back on if the agent dies); whether it was on. With it on,
    /// the fair class shares a CPU between sessions before nice counts
    /// (see [`sys::autogroup`]), so a managed thread at [`RUN_NICE`] gets
    /// half a CPU against one busy loop of another terminal: measured on
    /// the desktop example beside two such loops, the batch threads got
    /// 11% each where the simulation gives 26%, and the media threads
    /// missed deadlines; with it off, within 2 percentage points and no
    /// miss. It is a machine-wide switch: while it is off, sessions are
    /// not shared fairly against each other.
    pub fn autogroup_off(&mut self) -> Result<bool, String> {
        let was = sys::autogroup().map_err(|e| format!("reading autogroup: {e}"))?;
        if was != Some(true) {
            return Ok(false);
        }
        self.tell(&Line::Autogroup(true))
            .map_err(|e| format!("telling the guardian: {e}"))?;
        self.autogroup = Some(true);
        sys::set_autogroup(false).map_err(|e| format!("turning autogroup off: {e}"))?;
        Ok(true)
    }

    /// The dispatcher and the platform it drives, to build the hierarchy in.
    pub fn dispatcher(&mut self) -> (&mut Dispatcher, &mut dyn Platform) {
        (&mut self.disp, &mut self.platform)
    }

    /// Speculates on wakeups from now on: a thread the hierarchy gave its
    /// CPU as soon as it woke, and which then blocks there, is left armed
    /// (at `SCHED_FIFO` [`WAKE_PRIORITY`], pinned) instead of parked, so
    /// that at its next wakeup Linux runs it at once, as if the hierarchy
    /// had decided in advance, and the agent's reaction (tens of µs) is
    /// not on its path. When the agent hears of the wakeup it asks the
    /// hierarchy as always; where the hierarchy does not give the thread
    /// the CPU (a misprediction), the thread is parked then, having run
    /// meanwhile against the hierarchy's decision. Counted
    /// ([`Agent::speculation`]); within the CPU's wakeup budget; off with
    /// hard parking, which promises that a parked thread gets nothing.
    pub fn speculate(&mut self) {
        self.platform.speculate = true;
    }

    /// Wakeups of armed threads so far, and of them those the hierarchy
    /// did not give the CPU.
    pub fn speculation(&self) -> (u64, u64) {
        (self.platform.armed_wakeups, self.platform.mispredicted)
    }

    /// Parks hard from now on: a thread off its CPU has its process stopped
    /// (SIGSTOP) instead of lowered to `SCHED_IDLE`, so that it gets no CPU
    /// at all. For single-threaded processes: stopping one stops all its
    /// threads.
    pub fn park_hard(&mut self) -> Result<(), String> {
        let guardian = self.guardian.as_ref().ok_or(
            "hard parking is the user-space agent's; sched_ext holds a thread back itself",
        )?;
        self.platform.to_guardian = Some(
            guardian
                .writer()
                .map_err(|e| format!("a handle on the guardian's pipe: {e}"))?,
        );
        self.platform.hard = true;
        Ok(())
    }

    /// The managed threads' switches and wakeups so far; taken.
    pub fn take_observations(&mut self) -> Observations {
        std::mem::take(&mut self.observed)
    }

    /// CLOCK_MONOTONIC at the agent's time zero, ns.
    pub fn zero_ns(&self) -> u64 {
        self.start_ns
    }

    /// How late the dispatcher's deadlines (decision horizons, policy
    /// timers) were acted on so far, in ns, in order.
    pub fn lateness(&self) -> &[u64] {
        &self.lateness
    }

    /// Decisions made so far.
    pub fn decisions(&self) -> u64 {
        self.disp.decisions()
    }

    /// What each scheduler received, as the dispatcher accounted it.
    pub fn node_results(&self) -> &[hsched_model::NodeResult] {
        self.disp.node_results()
    }

    /// The name of managed thread `t`.
    pub fn thread_name(&self, t: ThreadId) -> &str {
        self.disp.thread_name(t)
    }

    /// The scheduler thread `t` is under.
    pub fn sched_of(&self, t: ThreadId) -> String {
        self.disp
            .thread_sched(t)
            .map(|s| self.disp.sched_name(s).to_string())
            .unwrap_or_default()
    }

    /// Every scheduler the thread has been under, from when.
    pub fn homes_of(&self, t: ThreadId) -> Vec<hsched_model::Home> {
        self.disp.thread_homes(t)
    }

    /// Under sched_ext, what the BPF dispatch did with the decisions so
    /// far (`None` on the user-space agent).
    pub fn scx_stats(&self) -> Option<Result<hsched_scx::Stats, String>> {
        self.platform.scx.as_ref().map(|scx| scx.sched.stats())
    }

    /// Priority and affinity changes made, and those that failed.
    pub fn changes(&self) -> (u64, &[String]) {
        (self.platform.changes, &self.platform.errors)
    }

    /// Gives every thread back as it was, tells the guardian so, and lowers
    /// the agent. Policy, nice and affinity first, then the stopped
    /// processes continued (none continues at a priority it should not
    /// have). Every thread is tried, whatever fails: a guardian that is
    /// gone (see [`Agent::interrupted`]) is not told, the agent restores
    /// alone. What could not be given back is the error; with the guardian
    /// alive, it restores that when its pipe closes.
    pub fn stop(mut self) -> io::Result<()> {
        // Threads created since the last look are adopted first, so that
        // they are given back too.
        let _ = self.take_events(&mut Vec::new());
        if let Some(on) = self.autogroup.take() {
            // The guardian puts it back too, should this fail.
            let _ = sys::set_autogroup(on);
        }
        // The guardian is told what was given back; a failed write means
        // it is gone, and then the agent restores alone.
        let mut failures = self.platform.hand_cpus_to_default();
        for o in self.originals.iter().filter(|o| o.tid != 0) {
            match self.platform.restore(o) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    failures.push(format!("thread {}: {e}", o.tid));
                    continue;
                }
            }
            let _ = self
                .guardian
                .as_mut()
                .map(|g| g.send(&Line::Release(o.tid)));
        }
        // A kept command never given a CPU goes on from its gate, as it
        // was given back.
        for t in 0..self.platform.at_gate.len() {
            match self.platform.release(ThreadId(t as u32)) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => failures.push(format!(
                    "thread {}: releasing it: {e}",
                    self.originals[t].tid
                )),
            }
        }
        for pid in std::mem::take(&mut self.platform.stopped) {
            match sys::signal(pid, libc::SIGCONT) {
                Ok(()) => {
                    let _ = self.guardian.as_mut().map(|g| g.send(&Line::Resumed(pid)));
                }
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => failures.push(format!("process {pid}: {e}")),
            }
        }
        // The second pipe handle closed too: the guardian waits for all.
        self.platform.to_guardian = None;
        if let Some(scx) = self.platform.scx.take() {
            // Every thread is back under the fair class now, also one that
            // could not be given its old policy. Before the agent lowers
            // itself: in whole-machine mode it would then be one of the
            // tasks the scheduler runs.
            if let Err(e) = scx.sched.unload() {
                failures.push(format!("unloading the sched_ext scheduler: {e}"));
            }
        }
        // The agent's own thread back as it was: a second agent in this
        // process (a program running several scenarios) starts from there.
        let _ = sys::set_attr(0, &SchedAttr::fair(sys::SCHED_OTHER, 0));
        let _ = sys::set_affinity(0, &self.all_cpus);
        let known_gone = matches!(self.interrupted, Some(Interrupted::GuardianGone(_)));
        let status = match self.guardian.take() {
            Some(g) => g.finish()?,
            None => std::process::ExitStatus::default(),
        };
        if !failures.is_empty() {
            return Err(io::Error::other(format!(
                "could not give back {}",
                failures.join("; ")
            )));
        }
        if status.success() || known_gone {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "the guardian ended with {status}"
            )))
        }
    }
}
