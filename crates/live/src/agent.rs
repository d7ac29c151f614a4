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
//! runs only where and until user space decided: see [`Scx`]), the
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

use crate::control::{authorize, ControlSocket, Peer, Request, Response, Speaker};
use crate::events::{monotonic_ns, SchedEvent, SchedEvents};
use crate::guardian::{Guardian, Line, Original, Watch};
use crate::observe::{Observations, Seen};
use crate::signals::StopHandle;
use crate::sys::{self, SchedAttr, SCHED_IDLE};
use hsched_core::{CpuId, Instant, Msg, Params, Reply, ThreadId};
use hsched_dispatch::{Config, Dispatcher, Platform};
use hsched_model::guard::{Change, Ruling};
use hsched_model::{Action, LogEntry, LogKind};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The agent's own `SCHED_FIFO` priority.
pub const AGENT_PRIORITY: u32 = 50;
/// The nice value of a managed thread the hierarchy put on a CPU.
pub const RUN_NICE: i32 = -20;
/// A managed thread on its CPU: nice [`RUN_NICE`], and what it forks
/// starts at nice 0 (reset on fork), not above everything else on the
/// machine, until the agent has adopted it.
const RUN_ATTR: SchedAttr = SchedAttr {
    size: 0,
    policy: sys::SCHED_OTHER,
    flags: sys::SCHED_FLAG_RESET_ON_FORK,
    nice: RUN_NICE,
    priority: 0,
    runtime: 0,
    deadline: 0,
    period: 0,
    util_min: 0,
    util_max: 0,
};
/// A thread given a CPU first since it woke: `SCHED_FIFO`, below the agent, for
/// at most [`WAKE_WINDOW`]; see [`LivePlatform::run`].
const WAKE_ATTR: SchedAttr = SchedAttr {
    policy: sys::SCHED_FIFO,
    priority: WAKE_PRIORITY,
    nice: 0,
    ..RUN_ATTR
};
/// The `SCHED_FIFO` priority a managed thread runs at in the first
/// millisecond after it wakes.
pub const WAKE_PRIORITY: u32 = 1;
/// The longest a woken thread keeps [`WAKE_ATTR`] before it is lowered to
/// [`RUN_ATTR`].
const WAKE_WINDOW: hsched_core::Duration = hsched_core::Duration::from_millis(1);
/// At most this much of each second of a CPU goes to threads at
/// [`WAKE_ATTR`]: under any one second's window, two of these stay below
/// the 950 ms at which real-time throttling stops them.
const WAKE_BUDGET: hsched_core::Duration = hsched_core::Duration::from_millis(400);

/// How long the guardian waits for a sign of life before it takes the
/// agent for hung, kills it and restores every thread.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(1);
/// How often the agent gives one (and the longest it waits between two
/// turns of its loop).
const HEARTBEAT_EVERY: Duration = Duration::from_millis(100);
/// How often, at most, control work left over (replies a client has not
/// read, requests beyond a turn's share) is taken up when nothing else
/// wakes the loop for it.
const CONTROL_BACKLOG_EVERY: Duration = Duration::from_millis(10);
/// How often the switches that do not wake the agent are read (their
/// buffer holds seconds of them).
const READ_SWITCHES_EVERY: Duration = Duration::from_millis(20);

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

/// What the dispatcher's decisions do to real threads.
struct LivePlatform {
    /// The real CPU behind each of the dispatcher's CPUs.
    cpus: Vec<usize>,
    /// Kernel thread id by dispatcher thread id.
    tids: Vec<i32>,
    /// The process of each, by dispatcher thread id (read once: the hot
    /// path does not read /proc).
    pids: Vec<i32>,
    on_cpu: Vec<Option<ThreadId>>,
    /// Calls that failed (a thread gone, say), for the caller to report.
    errors: Vec<String>,
    /// Priority changes made.
    changes: u64,
    /// Hard parking: a parked thread's process is stopped (SIGSTOP), so it
    /// gets no CPU at all, not even what Linux has spare.
    hard: bool,
    /// Announces stops to the guardian (before each stop, so a stopped
    /// process is always continued if the agent dies).
    to_guardian: Option<std::fs::File>,
    /// Processes stopped now.
    stopped: std::collections::HashSet<i32>,
    /// Each thread's affinity as last set, by dispatcher thread id
    /// (missing: not set yet).
    pinned: Vec<Option<Pin>>,
    /// By dispatcher thread id: woken and not given a CPU since.
    fresh: Vec<bool>,
    /// By dispatcher thread id: the process of a command still at its
    /// gate after the gate opened ([`Agent::open_gate`]), released when the
    /// hierarchy first gives it a CPU (or when it is handed back).
    at_gate: Vec<Option<i32>>,
    /// By CPU: the thread at [`WAKE_ATTR`] there, and since when.
    woken: Vec<Option<(ThreadId, Instant)>>,
    /// By CPU: the second (of the agent's clock) and the time given at
    /// [`WAKE_ATTR`] in it.
    wake_spent: Vec<(u64, hsched_core::Duration)>,
    /// Speculative wakeups (see [`Agent::speculate`]).
    speculate: bool,
    /// The thread whose wakeup, or block, the dispatcher is being told of.
    waking: Option<ThreadId>,
    blocking: Option<ThreadId>,
    /// By dispatcher thread id: given its CPU at its last wakeup; left at
    /// [`WAKE_ATTR`] on its CPU while it sleeps.
    woke_to_cpu: Vec<bool>,
    armed: Vec<bool>,
    /// Wakeups of armed threads, and of them those the hierarchy did not
    /// give the CPU.
    armed_wakeups: u64,
    mispredicted: u64,
    /// The sched_ext backend, when it is the one: the decisions go to the
    /// BPF scheduler instead of the calls above.
    scx: Option<Scx>,
    /// Whole-machine mode under sched_ext: the thread that stands for the
    /// tasks nobody manages (see [`Agent::delegate_others`]).
    others: Option<ThreadId>,
}

/// The sched_ext backend's side of the platform: the loaded BPF scheduler
/// and the decisions written to it.
///
/// A decision names, per CPU, the managed thread the hierarchy gave it and
/// a horizon: the dispatcher's next deadline, when it will decide again
/// (or [`OPEN_HORIZON`] ahead when it has none). The kernel stops the
/// thread there whatever the agent does: if the agent is late, the CPU
/// runs nothing of the hierarchy's until it decides, as a reservation's
/// enforcement wants. A CPU the hierarchy leaves idle runs the default
/// DSQ (the scheduler's tasks nobody manages). Decisions are written once
/// per turn of the agent's loop ([`LivePlatform::flush`]), after
/// everything the turn decided, so a thread given and taken in one turn
/// costs no write.
struct Scx {
    sched: hsched_scx::Scheduler,
    /// By CPU, the decision as last written.
    written: Vec<Option<hsched_scx::Decision>>,
    /// The ring buffer's events as last read (kept for its capacity: it is
    /// read on every turn of the loop).
    events: Vec<hsched_scx::Event>,
}

impl Scx {
    /// Writes decision `decision` for the dispatcher's CPU `c` (real CPU
    /// `cpu`), and kicks that CPU if `kick`.
    fn write(
        &mut self,
        c: usize,
        cpu: usize,
        decision: hsched_scx::Decision,
        kick: bool,
    ) -> Result<(), String> {
        self.written[c] = Some(decision);
        self.sched.set_decision(cpu as u32, decision)?;
        if kick {
            self.sched.kick(cpu as u32)?;
        }
        Ok(())
    }
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

/// How far ahead a decision's horizon lies when the dispatcher has no
/// deadline: the agent's loop turns at least every [`HEARTBEAT_EVERY`] and
/// writes it afresh, so a running thread never meets it.
const OPEN_HORIZON: Duration = Duration::from_secs(1);

/// The policy a managed thread gets on the sched_ext backend: `SCHED_EXT`,
/// inherited by what it forks (no reset on fork), so that a thread it
/// creates is under the scheduler from its start.
const EXT_ATTR: SchedAttr = SchedAttr {
    policy: hsched_scx::SCHED_EXT,
    flags: 0,
    ..RUN_ATTR
};

/// A managed thread's CPU affinity: one real CPU, or all the managed ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pin {
    One(usize),
    All,
}

impl LivePlatform {
    /// Holds thread `t` back: soft, at `SCHED_IDLE`; hard, its process
    /// stopped at the priority it had. Why not both: a stop takes effect
    /// when the thread next runs (it runs no code of its own before), and
    /// at `SCHED_IDLE` beside a thread at nice -20 that could be seconds
    /// away, in which it shows as running.
    fn park(&mut self, t: ThreadId) {
        let tid = self.tids[t.index()];
        if self.scx.is_some() {
            // Under sched_ext a thread off its CPU waits in the
            // scheduler's custody (see `take_over`).
            return;
        }
        let r = if self.hard {
            self.stop_process(self.pids[t.index()])
        } else {
            sys::set_attr(tid, &SchedAttr::fair(SCHED_IDLE, 0))
        }
        .and_then(|()| self.pin(t, None));
        self.note(tid, r);
    }

    /// Takes managed thread `t` over, held back until the hierarchy gives
    /// it a CPU: parked; under sched_ext, given the `SCHED_EXT` policy,
    /// which puts it in the scheduler's custody.
    fn take_over(&mut self, t: ThreadId) {
        if self.scx.is_none() {
            return self.park(t);
        }
        let tid = self.tids[t.index()];
        let r = sys::set_attr(tid, &EXT_ATTR);
        self.note(tid, r);
    }

    /// Gives thread `t` real CPU `cpu` (a dispatcher CPU's index) at `now`.
    ///
    /// At [`RUN_ATTR`]; but a thread given the CPU first since it woke runs
    /// its first [`WAKE_WINDOW`] at [`WAKE_ATTR`] (while the CPU's
    /// [`WAKE_BUDGET`] lasts). Why: raised from `SCHED_IDLE` while queued,
    /// a thread at nice -20 is not always run before a parked one (EEVDF
    /// keeps its lag through the change of weight, and an ineligible
    /// thread waits): measured, cyclictest under a BVT warp or a
    /// reservation waited up to 2.3 ms behind a parked `SCHED_IDLE` hog,
    /// which also ate the reservation's budget. A real-time thread runs
    /// before every fair one. Only for a window: see [`RUN_ATTR`].
    fn run(&mut self, t: ThreadId, cpu: usize, now: Instant) {
        let tid = self.tids[t.index()];
        let fresh = std::mem::take(&mut self.fresh[t.index()]);
        self.woke_to_cpu[t.index()] = self.waking == Some(t);
        if self.scx.is_some() {
            // The decision is written at the end of the turn (flush).
            let r = self.release(t);
            self.note(tid, r);
            return;
        }
        let attr = if fresh && self.wake_left(cpu, now) {
            self.woken[cpu] = Some((t, now));
            &WAKE_ATTR
        } else {
            &RUN_ATTR
        };
        let mut r = self
            .pin(t, Some(cpu))
            .and_then(|()| sys::set_attr(tid, attr));
        if r.is_ok() {
            r = self.continue_process(self.pids[t.index()]);
        }
        if r.is_ok() {
            r = self.release(t);
        }
        self.note(tid, r);
    }

    /// Releases thread `t`'s command from its gate if it is still there.
    fn release(&mut self, t: ThreadId) -> io::Result<()> {
        match self.at_gate[t.index()].take() {
            Some(pid) => crate::launch::release(pid),
            None => Ok(()),
        }
    }

    /// Whether thread `t`, blocking on CPU `cpu`, is left armed there: with
    /// speculation on, soft parking, budget left, and given its CPU at its
    /// last wakeup (the hierarchy is predicted to do so again).
    /// (Under sched_ext no budget: a thread run at its wakeup is no
    /// real-time thread there.)
    fn may_arm(&mut self, t: ThreadId, cpu: usize, now: Instant) -> bool {
        self.speculate
            && !self.hard
            && self.woke_to_cpu[t.index()]
            && (self.scx.is_some() || self.wake_left(cpu, now))
    }

    /// Leaves blocked thread `t` at [`WAKE_ATTR`], pinned to CPU `cpu`
    /// where it ran: when it wakes, Linux runs it at once, before the
    /// agent has heard of it. Under sched_ext, arms it there in the BPF
    /// scheduler, which does the same ([`hsched_scx::Scheduler::arm`]).
    fn arm(&mut self, t: ThreadId, cpu: usize) {
        self.armed[t.index()] = true;
        let tid = self.tids[t.index()];
        let r = match &self.scx {
            Some(scx) => scx
                .sched
                .arm(tid as u32, Some(self.cpus[cpu] as u32))
                .map_err(io::Error::other),
            None => sys::set_attr(tid, &WAKE_ATTR),
        };
        self.note(tid, r);
    }

    /// Armed thread `t` woke and the hierarchy has decided: if it did not
    /// give `t` a CPU, the speculation was wrong and `t` is parked.
    fn armed_woke(&mut self, t: ThreadId) {
        if !std::mem::take(&mut self.armed[t.index()]) {
            return;
        }
        self.armed_wakeups += 1;
        if !self.on_cpu.contains(&Some(t)) {
            self.mispredicted += 1;
            self.park(t);
        }
    }

    /// Whether CPU `cpu` has [`WAKE_BUDGET`] left in the second of `now`.
    fn wake_left(&mut self, cpu: usize, now: Instant) -> bool {
        let second = now.as_nanos() / 1_000_000_000;
        let spent = &mut self.wake_spent[cpu];
        if spent.0 != second {
            *spent = (second, hsched_core::Duration::ZERO);
        }
        spent.1 < WAKE_BUDGET
    }

    /// The thread at [`WAKE_ATTR`] on CPU `cpu`, if any, is done with it
    /// at `now`: its time there is counted.
    fn end_wake(&mut self, cpu: usize, now: Instant) -> Option<ThreadId> {
        let (t, since) = self.woken[cpu].take()?;
        let spent = &mut self.wake_spent[cpu];
        spent.1 = spent.1.saturating_add(now.saturating_since(since));
        Some(t)
    }

    /// Lowers the threads whose [`WAKE_WINDOW`] has passed at `now` to
    /// [`RUN_ATTR`].
    fn lower_woken(&mut self, now: Instant) {
        for cpu in 0..self.woken.len() {
            if self.woken[cpu].is_some_and(|(_, since)| now >= since.saturating_add(WAKE_WINDOW)) {
                if let Some(t) = self.end_wake(cpu, now) {
                    let tid = self.tids[t.index()];
                    let r = sys::set_attr(tid, &RUN_ATTR);
                    self.note(tid, r);
                }
            }
        }
    }

    /// When the next thread at [`WAKE_ATTR`] is to be lowered.
    fn next_lowering(&self) -> Option<Instant> {
        self.woken
            .iter()
            .flatten()
            .map(|&(_, since)| since.saturating_add(WAKE_WINDOW))
            .min()
    }

    fn stop_process(&mut self, pid: i32) -> io::Result<()> {
        if !self.stopped.insert(pid) {
            return Ok(());
        }
        if let Some(g) = &mut self.to_guardian {
            use std::io::Write;
            writeln!(g, "{}", Line::Stopped(pid))?;
        }
        sys::signal(pid, libc::SIGSTOP)
    }

    fn continue_process(&mut self, pid: i32) -> io::Result<()> {
        if !self.stopped.remove(&pid) {
            return Ok(());
        }
        match sys::signal(pid, libc::SIGCONT) {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()), // gone
            other => other?,
        }
        if let Some(g) = &mut self.to_guardian {
            use std::io::Write;
            writeln!(g, "{}", Line::Resumed(pid))?;
        }
        Ok(())
    }

    /// Pins thread `t` to managed CPU `cpu`, or to all of them, unless it
    /// is already: the call costs the agent microseconds, and with one
    /// managed CPU running and parking pin to the same. (So a thread that
    /// changes its own affinity keeps it until the agent pins it
    /// elsewhere.)
    fn pin(&mut self, t: ThreadId, cpu: Option<usize>) -> io::Result<()> {
        let pin = match cpu {
            Some(c) => Pin::One(self.cpus[c]),
            None if self.cpus.len() == 1 => Pin::One(self.cpus[0]),
            None => Pin::All,
        };
        if self.pinned.get(t.index()) == Some(&Some(pin)) {
            return Ok(());
        }
        let cpus = match pin {
            Pin::One(c) => &[c][..],
            Pin::All => &self.cpus,
        };
        sys::set_affinity(self.tids[t.index()], cpus)?;
        if self.pinned.len() <= t.index() {
            self.pinned.resize(t.index() + 1, None);
        }
        self.pinned[t.index()] = Some(pin);
        Ok(())
    }

    /// Writes each CPU's decision where it changed, with horizon `until`
    /// (CLOCK_MONOTONIC ns), and kicks the CPUs that must act on it now:
    /// those given another thread, or the same one with an earlier horizon,
    /// or whose earlier horizon has passed at `now` (the kernel may have
    /// stopped the thread there). A later horizon for the thread running
    /// needs no kick: the kernel reads it when the slice ends.
    fn flush(&mut self, now: u64, until: u64) {
        use hsched_scx::Decision;
        let Some(scx) = &mut self.scx else {
            return;
        };
        for c in 0..self.on_cpu.len() {
            let decision = match self.on_cpu[c] {
                Some(t) if Some(t) == self.others => Decision::RunDefault,
                Some(t) => Decision::RunTask {
                    tid: self.tids[t.index()] as u32,
                    until_ns: until,
                },
                None => Decision::RunDefault,
            };
            let old = scx.written[c];
            if old == Some(decision) {
                continue;
            }
            let kick = match (old, decision) {
                (
                    Some(Decision::RunTask {
                        tid: a,
                        until_ns: before,
                    }),
                    Decision::RunTask { tid: b, until_ns },
                ) if a == b => until_ns < before || now >= before,
                _ => true,
            };
            let cpu = self.cpus[c];
            self.changes += 1;
            if let Err(e) = scx.write(c, cpu, decision, kick) {
                self.errors.push(format!("CPU {cpu}: {e}"));
            }
        }
    }

    /// Gives managed thread `t` back to Linux as `original` describes it
    /// (see [`LivePlatform::restore`]), its process continued and its gate
    /// opened.
    fn give_back(&mut self, t: ThreadId, original: &Original) -> io::Result<()> {
        self.restore(original)?;
        self.continue_process(self.pids[t.index()])?;
        self.release(t)
    }

    /// Puts a managed thread's policy and affinity back as `original`
    /// has them. Under sched_ext only the policy was changed, and the
    /// scheduler first forgets the thread: the change of policy takes it
    /// out of custody (a dequeue), and in whole-machine mode, where its
    /// old policy is still the scheduler's, puts it back as a task nobody
    /// manages, into the default DSQ.
    fn restore(&mut self, original: &Original) -> io::Result<()> {
        if let Some(scx) = &self.scx {
            scx.sched
                .unmanage(original.tid as u32)
                .map_err(io::Error::other)?;
            return sys::set_attr(original.tid, &original.attr());
        }
        sys::set_attr(original.tid, &original.attr())?;
        sys::set_affinity(original.tid, &original.cpus)
    }

    /// Under sched_ext, at the end: every managed CPU runs the default DSQ
    /// from now on, so that nothing waits for a decision while the
    /// threads are given back and the scheduler unloads (a thread killed
    /// at the horizon, say, must run to exit).
    fn hand_cpus_to_default(&mut self) -> Vec<String> {
        let Some(scx) = &mut self.scx else {
            return Vec::new();
        };
        let default = hsched_scx::Decision::RunDefault;
        (self.cpus.iter().enumerate())
            .filter_map(|(c, &cpu)| {
                scx.write(c, cpu, default, true)
                    .err()
                    .map(|e| format!("CPU {cpu}: {e}"))
            })
            .collect()
    }

    fn note(&mut self, tid: i32, r: io::Result<()>) {
        self.changes += 1;
        if let Err(e) = r {
            self.errors.push(format!("thread {tid}: {e}"));
        }
    }
}

impl Platform for LivePlatform {
    fn set_cpu(&mut self, now: Instant, cpu: CpuId, thread: Option<ThreadId>) {
        let c = cpu.0 as usize;
        self.end_wake(c, now);
        if let Some(old) = self.on_cpu[c].take() {
            if Some(old) != thread && !self.on_cpu.contains(&Some(old)) {
                if self.blocking == Some(old) && self.may_arm(old, c, now) {
                    self.arm(old, c);
                } else {
                    self.park(old);
                }
            }
        }
        if let Some(t) = thread {
            self.run(t, c, now);
        }
        self.on_cpu[c] = thread;
    }
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
        let scx = Scx {
            sched,
            written: vec![None; cpus.len()],
            events: Vec::new(),
        };
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
            platform: LivePlatform {
                cpus: cpus.to_vec(),
                tids: Vec::new(),
                pids: Vec::new(),
                on_cpu: vec![None; cpus.len()],
                errors: Vec::new(),
                changes: 0,
                hard: false,
                to_guardian: None,
                stopped: Default::default(),
                pinned: Vec::new(),
                fresh: Vec::new(),
                at_gate: Vec::new(),
                woken: vec![None; cpus.len()],
                speculate: false,
                waking: None,
                blocking: None,
                woke_to_cpu: Vec::new(),
                armed: Vec::new(),
                armed_wakeups: 0,
                mispredicted: 0,
                wake_spent: vec![(0, hsched_core::Duration::ZERO); cpus.len()],
                scx,
                others: None,
            },
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

    /// Takes over thread `tid` as `name` under scheduler `parent` with
    /// attachment `params`: the guardian learns its original state first,
    /// then it is parked until the hierarchy gives it a CPU. The threads
    /// and processes it creates from then on are taken over too (see
    /// [`Agent::family`]).
    pub fn manage(
        &mut self,
        tid: i32,
        name: &str,
        parent: &str,
        params: &Params,
    ) -> Result<ThreadId, String> {
        self.manage_as(tid, name, parent, params, false)
    }

    /// Whole-machine mode under sched_ext: adds the thread that stands for
    /// every task nobody manages (`(others)`, under the default scheduler,
    /// with no parameters). It is ready while such tasks wait to run (the
    /// BPF scheduler says when), and a CPU the hierarchy gives it runs
    /// them, first come first served with 5 ms slices. So they get the
    /// time the hierarchy grants them, as HLS's whole-machine hierarchy
    /// and Vassal's delegation have it, and none beyond (the CPUs outside
    /// the scenario run them all the time). Once, after the hierarchy is
    /// built and before any thread is managed.
    pub fn delegate_others(&mut self) -> Result<ThreadId, String> {
        let sched = self.disp.default_sched().ok_or(
            "whole-machine mode: the hierarchy has no default scheduler for the tasks nobody names",
        )?;
        // The dispatcher's own clock, not the wall clock: events already read
        // may carry earlier kernel times, which it must not have passed.
        let now = self.disp.now();
        let (t, admitted) = self.disp.add_thread(now, OTHERS, sched, &Params::new());
        admitted.map_err(|e| {
            format!("whole-machine mode: the default scheduler refuses the tasks nobody names ({e}); use --partial")
        })?;
        // A thread with no kernel task: id 0, which nothing managed has
        // (and which the give-backs skip).
        let original = Original {
            tid: 0,
            tgid: 0,
            policy: sys::SCHED_OTHER,
            priority: 0,
            nice: 0,
            flags: 0,
            cpus: Vec::new(),
        };
        self.record(t, 0, original, t, &Params::new());
        self.platform.others = Some(t);
        Ok(t)
    }

    /// Records dispatcher thread `t`: kernel task `pid` (0: none), as
    /// `original` was before, in family `family`, attached with `params`.
    fn record(
        &mut self,
        t: ThreadId,
        pid: i32,
        original: Original,
        family: ThreadId,
        params: &Params,
    ) {
        debug_assert_eq!(
            t.index(),
            self.originals.len(),
            "threads are recorded in order"
        );
        self.platform.tids.push(original.tid);
        self.platform.pids.push(pid);
        self.platform.fresh.push(false);
        self.platform.at_gate.push(None);
        self.platform.woke_to_cpu.push(false);
        self.platform.armed.push(false);
        self.originals.push(original);
        self.family.push(family);
        self.params.push(params.clone());
        self.exits.push(None);
        self.released.push(false);
        self.held.push(false);
    }

    /// [`Agent::manage`] for a command held at a gate
    /// ([`Agent::start_held`]) and about to be released: it is ready from
    /// now on, as a simulated thread is at its arrival, whatever its state
    /// at the gate: its wait there is no block, its release no new
    /// wakeup.
    pub fn manage_held(
        &mut self,
        tid: i32,
        name: &str,
        parent: &str,
        params: &Params,
    ) -> Result<ThreadId, String> {
        self.manage_as(tid, name, parent, params, true)
    }

    fn manage_as(
        &mut self,
        tid: i32,
        name: &str,
        parent: &str,
        params: &Params,
        ready: bool,
    ) -> Result<ThreadId, String> {
        self.watch(&[tid])?;
        let original =
            Original::capture(tid).map_err(|e| format!("thread {tid} (`{name}`): {e}"))?;
        let parent = self
            .disp
            .sched_by_name(parent)
            .or(self.disp.default_sched())
            .ok_or_else(|| format!("thread `{name}`: no scheduler `{parent}` to join"))?;
        let t = self.take(tid, name, parent, params, original, None, ready)?;
        self.held[t.index()] = ready;
        self.adopt_offspring(t);
        Ok(t)
    }

    /// Adopts what managed thread `t` has already started: threads and
    /// processes made before the kernel was told to report its forks
    /// (which it now is) would otherwise escape.
    fn adopt_offspring(&mut self, t: ThreadId) {
        let tid = self.platform.tids[t.index()];
        let offspring = sys::offspring_of(tid);
        if let Err(e) = self.watch(&offspring) {
            self.log.push(LogEntry {
                at: self.now,
                kind: LogKind::Refused,
                text: format!("could not take over what thread {tid} started: {e}"),
            });
            return;
        }
        for child in offspring {
            self.adopt(t, child);
        }
    }

    /// Takes over `tid` under `sched`; `family`: the managed thread whose
    /// descendant it is (`None`: it heads its own family); `ready`: taken
    /// as ready whatever its state.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &mut self,
        tid: i32,
        name: &str,
        sched: hsched_core::SchedId,
        params: &Params,
        original: Original,
        family: Option<ThreadId>,
        ready: bool,
    ) -> Result<ThreadId, String> {
        self.tell(&Line::Manage(original.clone()))
            .map_err(|e| format!("telling the guardian: {e}"))?;
        // The dispatcher's own clock, not the wall clock: events already read
        // may carry earlier kernel times, which it must not have passed.
        let now = self.disp.now();
        let (t, admitted) = self.disp.add_thread(now, name, sched, params);
        // A descendant its creator's scheduler refuses runs under the
        // default one (the dispatcher logs it); a thread the scenario
        // places must be admitted.
        if family.is_none() {
            admitted.map_err(|e| format!("thread `{name}`: {e}"))?;
        }
        // Read before parking: a hard-parked process shows as stopped.
        let pid = sys::tgid_of(tid).unwrap_or(tid);
        let running = ready || matches!(sys::thread_state(pid, tid), Ok('R'));
        self.record(t, pid, original, family.unwrap_or(t), params);
        self.by_tid.insert(tid, t);
        // Listed by the caller, or, forked by a listed thread, by the
        // kernel itself (`event-fork`).
        self.watched.insert(tid);
        self.platform.take_over(t);
        // Running or ready now: runnable; otherwise its next wakeup says so.
        if running {
            let now = self.clock(monotonic_ns());
            self.now = now;
            self.disp.thread_ready(&mut self.platform, now, t);
        }
        Ok(t)
    }

    /// Managed thread `parent` created `child` (a thread or a process): it
    /// joins its creator's scheduler with the same attachment parameters,
    /// as `NAME/TID` of the family, and would be given back as the family's
    /// head was found.
    fn adopt(&mut self, parent: ThreadId, child: i32) {
        if self.by_tid.contains_key(&child) || self.released[parent.index()] {
            return;
        }
        let head = self.family[parent.index()];
        let original = Original {
            tid: child,
            tgid: sys::tgid_of(child).unwrap_or(child),
            ..self.originals[head.index()].clone()
        };
        let Some(sched) = self.disp.thread_sched(parent).or(self.disp.default_sched()) else {
            return;
        };
        let name = format!("{}/{child}", self.disp.thread_name(head));
        let params = self.params[parent.index()].clone();
        match self.take(child, &name, sched, &params, original, Some(head), false) {
            Ok(t) => self.adopt_offspring(t),
            Err(e) => self.log.push(LogEntry {
                at: self.now,
                kind: LogKind::Refused,
                text: format!("could not take over `{name}`: {e}"),
            }),
        }
    }

    /// For each managed thread, the thread heading its family: itself for
    /// a thread given to [`Agent::manage`], else the managed thread whose
    /// descendant it is.
    pub fn family(&self) -> &[ThreadId] {
        &self.family
    }

    /// The processes of the family `head` leads (its own and those its
    /// threads started), each once.
    pub fn family_processes(&self, head: ThreadId) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .family
            .iter()
            .zip(&self.platform.pids)
            .filter(|(h, _)| **h == head)
            .map(|(_, &p)| p)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// When each managed thread ended, if it did.
    pub fn exits(&self) -> &[Option<Instant>] {
        &self.exits
    }

    /// Starts command `argv` held at `gate` ([`crate::launch`]): at the
    /// default policy (`SCHED_OTHER`, nice 0) on every CPU this process was
    /// allowed when the agent started, as it would have started without
    /// hsched, but running none of its own code until released. So a
    /// batch is started, listed with the kernel ([`Agent::watch`]) and
    /// managed first, then released ([`Agent::open_gate`]).
    pub fn start_held(
        &mut self,
        argv: &[&std::ffi::OsStr],
        stdout: Option<&std::fs::File>,
        gate: &mut crate::launch::Gate,
    ) -> io::Result<crate::launch::Held> {
        crate::launch::start_held(argv, stdout, &self.all_cpus, gate)
    }

    /// Opens `gate` once the commands held at it are managed: each one the
    /// hierarchy has given a CPU goes on to exec now, each other one when
    /// it is first given a CPU. Why not all at once: released while parked
    /// at `SCHED_IDLE` beside a busy thread, a command is preempted within
    /// its exec and waits there, holding its memory's lock, for as long as
    /// it is kept off the CPU, and every program that reads its
    /// `/proc/<pid>/cmdline` meanwhile (`ps`, `top`) waits with it
    /// (measured: 1.5 s, a starved thread's whole wait). At the gate it
    /// holds no lock, and the hierarchy sees it ready either way.
    pub fn open_gate(&mut self, gate: crate::launch::Gate) -> io::Result<()> {
        for pid in gate.into_held() {
            let t = self.by_tid[&pid];
            self.platform.at_gate[t.index()] = Some(pid);
            if self.platform.on_cpu.contains(&Some(t)) {
                self.platform.release(t)?;
            }
        }
        Ok(())
    }

    /// Has the kernel report the events of threads `tids` (and of what
    /// they fork) from now on: one write for all (each costs the kernel
    /// tens of ms), before they are managed, so that none of their
    /// blocks or wakeups after [`Agent::manage`] reads their state is
    /// missed.
    pub fn watch(&mut self, tids: &[i32]) -> Result<(), String> {
        let new: Vec<i32> = tids
            .iter()
            .copied()
            .filter(|t| !self.watched.contains(t))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        // The write waits for the kernel's tracing to settle (tens of ms,
        // more on a busy machine): once the heartbeat has begun (the run),
        // the guardian's wait starts afresh on either side of it.
        let beating = self.beating;
        if beating {
            self.beat_now();
        }
        match (&mut self.events, &self.platform.scx) {
            (Some(events), _) => events
                .watch(&new)
                .map_err(|e| format!("kernel events: {e}"))?,
            // Its custody and events from its next wakeup on; what it
            // forks from now on is managed by the scheduler itself.
            (None, Some(scx)) => {
                for &tid in &new {
                    scx.sched.manage(tid as u32)?;
                }
            }
            (None, None) => unreachable!("an agent has ftrace or sched_ext"),
        }
        if beating {
            self.beat_now();
        }
        self.watched.extend(new);
        Ok(())
    }

    /// Tells the guardian the agent is alive (a heartbeat); the first one
    /// (from the run's loop) starts the guardian's watch on it.
    fn beat_now(&mut self) {
        self.beating = true;
        self.last_beat = std::time::Instant::now();
        if let Err(e) = self.tell(&Line::Beat) {
            self.guardian_gone(format!("writing to it: {e}"));
        }
    }

    /// Reads the kernel's events that are ready and tells the dispatcher
    /// (blocks, wakeups, new threads, exits), in time order; every
    /// [`READ_SWITCHES_EVERY`], records them for the figures with the
    /// other switches.
    fn take_events(&mut self, seen: &mut Vec<SchedEvent>) -> Result<(), String> {
        seen.clear();
        self.drain(seen)?;
        for e in seen.iter() {
            self.now = self.clock(e.time_ns());
            match *e {
                SchedEvent::Switch {
                    prev,
                    prev_blocked: true,
                    ..
                } => {
                    // A held command waiting at its gate stays ready: it
                    // is released at once.
                    if let Some(&t) = self.by_tid.get(&prev).filter(|t| !self.held[t.index()]) {
                        self.platform.blocking = Some(t);
                        self.disp.thread_block(&mut self.platform, self.now, t);
                        self.platform.blocking = None;
                    }
                }
                SchedEvent::Wakeup { tid, .. } => {
                    if let Some(&t) = self.by_tid.get(&tid) {
                        self.held[t.index()] = false;
                        self.platform.fresh[t.index()] = true;
                        self.platform.waking = Some(t);
                        self.disp.thread_ready(&mut self.platform, self.now, t);
                        self.platform.waking = None;
                        self.platform.armed_woke(t);
                    }
                }
                SchedEvent::Fork { parent, child, .. } => {
                    if let Some(&p) = self.by_tid.get(&parent) {
                        self.adopt(p, child);
                    }
                }
                SchedEvent::Exit { tid, .. } => {
                    // The kernel drops it from its list (`event-fork`): a
                    // later thread given its id is listed anew.
                    self.watched.remove(&tid);
                    self.exited(tid);
                }
                SchedEvent::Others { ready, .. } => {
                    if let Some(t) = self.platform.others {
                        match ready {
                            true => self.disp.thread_ready(&mut self.platform, self.now, t),
                            false => self.disp.thread_block(&mut self.platform, self.now, t),
                        }
                    }
                }
                SchedEvent::Switch { .. } => {}
            }
        }
        self.unobserved.extend_from_slice(seen);
        if self.switches_read.elapsed() >= READ_SWITCHES_EVERY {
            self.read_switches()?;
        }
        Ok(())
    }

    /// The kernel's events that are ready, in time order: from ftrace, or
    /// from the sched_ext scheduler's ring buffer, where a switch comes as
    /// two events (a thread stopping, one running) and is recorded as two
    /// switches, each with an idle side.
    fn drain(&mut self, out: &mut Vec<SchedEvent>) -> Result<(), String> {
        use hsched_scx::EventKind;
        if let Some(events) = &mut self.events {
            return events
                .drain(out)
                .map_err(|e| format!("reading kernel events: {e}"));
        }
        let Some(scx) = &mut self.platform.scx else {
            return Ok(());
        };
        scx.events.clear();
        scx.sched.take_events(&mut scx.events)?;
        for e in &scx.events {
            let (tid, cpu, time_ns) = (e.tid as i32, e.cpu, e.time_ns);
            out.push(match e.kind {
                EventKind::Runnable => SchedEvent::Wakeup { time_ns, cpu, tid },
                EventKind::Stopping { runnable } => SchedEvent::Switch {
                    time_ns,
                    cpu,
                    prev: tid,
                    prev_blocked: !runnable,
                    next: 0,
                },
                EventKind::Running => SchedEvent::Switch {
                    time_ns,
                    cpu,
                    prev: 0,
                    prev_blocked: false,
                    next: tid,
                },
                EventKind::Fork { parent } => SchedEvent::Fork {
                    time_ns,
                    parent: parent as i32,
                    child: tid,
                },
                EventKind::Exit => SchedEvent::Exit { time_ns, tid },
                EventKind::Others { ready } => SchedEvent::Others { time_ns, ready },
                // Its stopping event (not runnable) said so already.
                EventKind::Quiescent => continue,
            });
        }
        Ok(())
    }

    /// Whether the kernel has ejected the sched_ext scheduler: noted, so
    /// that the run stops.
    fn check_ejected(&mut self) {
        let Some(scx) = &self.platform.scx else {
            return;
        };
        let why = match scx.sched.exit_info() {
            Ok(None) => return,
            Ok(Some(exit)) => exit.to_string(),
            Err(e) => format!("its exit record is unreadable: {e}"),
        };
        self.interrupted.get_or_insert(Interrupted::Ejected(why));
    }

    /// Reads the switches that are not blocks and records them, with the
    /// events the dispatcher has had since the last time, for the
    /// figures. Not on every wakeup: the agent shares its CPU with the
    /// threads it raises, and each read would delay them.
    fn read_switches(&mut self) -> Result<(), String> {
        self.switches_read = std::time::Instant::now();
        let mut all = std::mem::take(&mut self.unobserved);
        let decided = all.len();
        if let Some(events) = &mut self.events {
            events
                .drain_switches(&mut all)
                .map_err(|e| format!("reading kernel events: {e}"))?;
        }
        if decided > 0 && decided < all.len() {
            all.sort_by_key(|e| e.time_ns());
        }
        for e in &all {
            self.observe(e);
        }
        all.clear();
        self.unobserved = all;
        Ok(())
    }

    /// Thread `tid` ended.
    fn exited(&mut self, tid: i32) {
        if let Some(&t) = self.by_tid.get(&tid) {
            if self.exits[t.index()].is_some() {
                return;
            }
            self.exits[t.index()] = Some(self.now);
            if !self.released[t.index()] {
                self.disp.thread_exit(&mut self.platform, self.now, t);
                let _ = self.tell(&Line::Release(tid));
            }
        }
    }

    /// Hands the threads of an ejected scheduler (a stuck or failing
    /// policy: the watchdog's verdict, a panic, broken invariants) back to
    /// Linux: as they were before the agent took them, no longer scheduled
    /// by the hierarchy, their figures still counted. (The simulator moves
    /// them to the default scheduler instead; on a real machine the
    /// operating system is the scheduler that is always there.) What they
    /// start from then on is not taken over.
    fn hand_back_ejected(&mut self) {
        for t in self.disp.take_ejected_threads() {
            let i = t.index();
            if self.released[i] || self.exits[i].is_some() {
                continue;
            }
            self.released[i] = true;
            self.disp.thread_exit(&mut self.platform, self.now, t);
            if self.platform.others == Some(t) {
                // The tasks nobody names: the CPUs outside the scenario
                // still run them.
                self.log.push(LogEntry {
                    at: self.now,
                    kind: LogKind::Moved,
                    text: format!("`{OTHERS}` no longer given time by the hierarchy: its scheduler was ejected"),
                });
                continue;
            }
            let original = self.originals[i].clone();
            // Its policy first: a stopped process never continues at a
            // priority it should not have.
            let back = self.platform.give_back(t, &original);
            let name = self.disp.thread_name(t).to_string();
            let (kind, text) = match back {
                Ok(()) => {
                    let _ = self.tell(&Line::Release(original.tid));
                    (
                        LogKind::Moved,
                        format!("thread `{name}` handed back to Linux: its scheduler was ejected"),
                    )
                }
                Err(e) => (
                    LogKind::Refused,
                    format!("thread `{name}`: handing it back to Linux failed ({e}); the guardian restores it at the end"),
                ),
            };
            self.log.push(LogEntry {
                at: self.now,
                kind,
                text,
            });
        }
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

    /// Starts the agent's clock (time zero) now: after setting up, before
    /// the first arrival.
    pub fn start_clock(&mut self) {
        self.start_ns = monotonic_ns();
        self.now = Instant::ZERO;
    }

    /// Time since the agent started, on its clock.
    pub fn now(&self) -> Instant {
        self.clock(monotonic_ns())
    }

    fn clock(&self, ns: u64) -> Instant {
        Instant(ns.saturating_sub(self.start_ns)).max(self.now)
    }

    /// Stops early ([`Agent::interrupted`]) once `handle` says a stop was
    /// asked for.
    pub fn stop_on(&mut self, handle: StopHandle) {
        self.stop_request = Some(handle);
    }

    /// Why the agent stopped before the end it was given, if it did: a stop
    /// was asked for, or the guardian is gone. [`Agent::run_until`] then
    /// returns at once; what is left to do is [`Agent::stop`].
    pub fn interrupted(&mut self) -> Option<&Interrupted> {
        if self.interrupted.is_none() {
            if let Some(sig) = self.stop_request.as_ref().and_then(StopHandle::received) {
                self.interrupted = Some(Interrupted::Signal(sig));
            }
        }
        self.interrupted.as_ref()
    }

    /// Tells the guardian `line`, if there is one.
    fn tell(&mut self, line: &Line) -> io::Result<()> {
        match &mut self.guardian {
            Some(g) => g.send(line),
            None => Ok(()),
        }
    }

    /// The guardian is gone: noted, so that the run stops and
    /// [`Agent::stop`] gives the threads back without it.
    fn guardian_gone(&mut self, how: String) {
        self.interrupted
            .get_or_insert(Interrupted::GuardianGone(how));
    }

    /// Schedules until `end` on the agent's clock, or until `stop_early`
    /// (checked between events) says so, or until it is interrupted
    /// ([`Agent::interrupted`]).
    pub fn run_until(
        &mut self,
        end: Instant,
        mut stop_early: impl FnMut(&mut Agent) -> bool,
    ) -> Result<(), String> {
        let mut seen = Vec::new();
        let mut fds = Vec::new();
        loop {
            let now = self.clock(monotonic_ns());
            if now >= end || self.interrupted().is_some() || stop_early(self) {
                return self.read_switches();
            }
            let until = self.disp.next_deadline().unwrap_or(end).min(end);
            let wake_at = self.platform.next_lowering().unwrap_or(end).min(until);
            self.flush();
            self.timer
                .arm_at(self.start_ns + wake_at.0)
                .map_err(|e| format!("arming the timer: {e}"))?;
            // The kernel's events, the timer, the guardian's end, a stop
            // request (the last two may be missing: -1, which poll skips),
            // then the control socket's.
            fds.clear();
            let events_fd = match (&self.events, &self.platform.scx) {
                (Some(events), _) => events.fd(),
                (None, Some(scx)) => scx.sched.events_fd(),
                (None, None) => -1,
            };
            fds.extend([
                events_fd,
                self.timer.fd(),
                self.guardian_exit.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
                self.stop_request.as_ref().map_or(-1, StopHandle::fd),
            ]);
            if let Some(c) = &self.control {
                fds.extend(c.fds());
            }
            let ready = sys::poll_readable(&fds, HEARTBEAT_EVERY)
                .map_err(|e| format!("waiting for kernel events: {e}"))?;
            if ready[1] {
                self.timer.clear();
            }
            if ready[2] {
                let how = self.guardian.as_mut().map(Guardian::try_status);
                self.guardian_gone(how.unwrap_or_default());
            }
            self.take_events(&mut seen)?;
            self.now = self.clock(monotonic_ns());
            let backlog = self.control.as_ref().is_some_and(|c| c.backlog())
                && self.control_served.elapsed() >= CONTROL_BACKLOG_EVERY;
            if ready[4..].contains(&true) || backlog {
                self.serve_control();
            }
            self.finish_plugin_load();
            if until < end && self.now >= until {
                self.lateness.push(self.now.0 - until.0);
            }
            self.disp.advance(&mut self.platform, self.now);
            self.hand_back_ejected();
            self.platform.lower_woken(self.now);
            if self.last_beat.elapsed() >= HEARTBEAT_EVERY {
                self.beat_now();
                self.check_ejected();
            }
        }
    }

    /// Under sched_ext, writes the decisions made since the last time (see
    /// [`LivePlatform::flush`]), with the dispatcher's next deadline as
    /// their horizon.
    fn flush(&mut self) {
        let horizon = match self.disp.next_deadline() {
            Some(deadline) => self.start_ns + deadline.0,
            None => monotonic_ns() + OPEN_HORIZON.as_nanos() as u64,
        };
        self.platform.flush(monotonic_ns(), horizon);
    }

    /// Listens for control requests at `path` from now on (see
    /// [`crate::control`]).
    pub fn listen(&mut self, path: &Path) -> Result<(), String> {
        self.control =
            Some(ControlSocket::bind(path).map_err(|e| format!("the control socket: {e}"))?);
        Ok(())
    }

    /// Answers the control requests that have come in.
    fn serve_control(&mut self) {
        let Some(mut control) = self.control.take() else {
            return;
        };
        control.serve(|peer, id, req| self.answer(peer, id, req));
        self.control = Some(control);
        self.control_served = std::time::Instant::now();
    }

    /// Applies the plugin library loaded off the loop, if it is, and
    /// answers the request that asked for it.
    fn finish_plugin_load(&mut self) {
        let Some(load) = &self.plugin_load else {
            return;
        };
        let loaded = match load.result.try_recv() {
            Ok(loaded) => loaded,
            Err(std::sync::mpsc::TryRecvError::Empty) => return,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                Err("loading the plugin failed (its loader ended)".into())
            }
        };
        let load = self.plugin_load.take().expect("checked above");
        let response = match loaded.and_then(|p| self.add_plugin(p)) {
            Ok(text) => Response {
                ok: true,
                text,
                reply: Params::new(),
            },
            Err(e) => Response::refused(e),
        };
        let response = self.logged(response, &load.peer);
        if let Some(c) = &mut self.control {
            c.complete(load.connection, &response);
        }
        self.serve_control();
    }

    /// Carries out one control request from `peer` on connection
    /// `connection`, logging what it did; `None` when the answer comes
    /// later (a plugin loaded off the loop).
    fn answer(&mut self, peer: &Peer, connection: u64, req: Request) -> Option<Response> {
        let managed: Vec<(String, i32)> = (0..self.platform.tids.len())
            .map(|i| {
                let name = self.disp.thread_name(ThreadId(i as u32)).to_string();
                (name, self.platform.pids[i])
            })
            .collect();
        let speaker = match authorize(peer, &managed, &req) {
            Ok(s) => s,
            Err(e) => return Some(self.logged(Response::refused(e), peer)),
        };
        let response = self.carry_out(peer, connection, speaker, req);
        // Under sched_ext the kernel learns the decisions the request made
        // before its sender hears the answer: a thread told to wait
        // (rtwake's `wait`) wakes at the answer, and must not find its CPU
        // still decided for it (measured: a job 16 ms early).
        self.flush();
        response
    }

    /// [`Agent::answer`] once `speaker` may make request `req`.
    fn carry_out(
        &mut self,
        peer: &Peer,
        connection: u64,
        speaker: Speaker,
        req: Request,
    ) -> Option<Response> {
        let now = self.now;
        let action = match req {
            Request::Status => {
                return Some(Response {
                    ok: true,
                    text: self.status(),
                    reply: Params::new(),
                })
            }
            Request::Msg { to, name, args, .. } => {
                return Some(self.message(peer, &speaker, to.as_deref(), Msg { name, args }))
            }
            Request::Move { thread, to, params } => Action::Move { thread, to, params },
            Request::Load { scheduler } => Action::Load(scheduler),
            Request::Plugin { path } => {
                return match self.start_plugin_load(path, *peer, connection) {
                    Ok(()) => None,
                    Err(e) => Some(self.logged(Response::refused(e), peer)),
                };
            }
            Request::Unload { scheduler } => Action::Unload(scheduler),
            Request::Detach { scheduler } => Action::Detach(scheduler),
            Request::Attach { scheduler, parents } => Action::Attach { scheduler, parents },
        };
        // The scenario's rules first: a request is refused as the same step
        // of a script would be.
        let name = |s: Option<hsched_core::SchedId>| s.map(|s| self.disp.sched_name(s));
        let exists = |n: &str| self.disp.sched_by_name(n).is_some();
        let rules = hsched_scenario::rules::Hierarchy {
            root: name(self.disp.root()).unwrap_or_default(),
            default: name(self.disp.default_sched()).unwrap_or_default(),
            cpus: self.platform.cpus.len() as u32,
            exists: &exists,
        };
        let result = hsched_scenario::rules::check_action(&action, &rules).and_then(|()| {
            hsched_dispatch::apply(&mut self.disp, &mut self.platform, now, &action)
                .expect("control requests are hierarchy actions")
        });
        let response = match result {
            Ok(text) => Response {
                ok: true,
                text,
                reply: Params::new(),
            },
            Err(e) => Response::refused(e),
        };
        Some(self.logged(response, peer))
    }

    /// Starts loading the plugin library at `path` for `peer` on a thread
    /// of its own: a library's constructors run as it loads, for as long as
    /// they take, and the loop must not wait for them. Only a regular file
    /// is opened (a named pipe would block the opener); one load at a time.
    fn start_plugin_load(
        &mut self,
        path: PathBuf,
        peer: Peer,
        connection: u64,
    ) -> Result<(), String> {
        if self.plugin_load.is_some() {
            return Err(format!(
                "plugin {}: another plugin is being loaded; ask again when it is",
                path.display()
            ));
        }
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(format!(
                    "plugin {}: not a regular file (a directory, named pipe or device): expected a plugin library",
                    path.display()
                ))
            }
            Err(e) => return Err(format!("plugin {}: {e}", path.display())),
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("hsched-plugin".into())
            .spawn(move || {
                let _ = tx.send(hsched_plugin_host::Plugin::load(&path).map_err(|e| e.to_string()));
            })
            .map_err(|e| format!("a thread to load the plugin on: {e}"))?;
        self.plugin_load = Some(PluginLoad {
            peer,
            connection,
            result: rx,
        });
        Ok(())
    }

    /// Adds the policies of a loaded plugin library to the ones the
    /// hierarchy may create. Refused if one of them has the name of a
    /// built-in policy or of one loaded before.
    fn add_plugin(&mut self, plugin: hsched_plugin_host::Plugin) -> Result<String, String> {
        let names: Vec<&str> = plugin.policies().iter().map(|p| p.info.name).collect();
        for name in &names {
            let loaded = self
                .plugins
                .iter()
                .flat_map(|p| p.policies())
                .any(|p| p.info.name == *name);
            if hsched_policies::find(name).is_some() || loaded {
                return Err(format!(
                    "plugin `{}`: policy `{name}` is already known; a plugin cannot replace it",
                    plugin.label()
                ));
            }
        }
        // The change guard learns each policy's HLS rule first: a rule it
        // cannot use refuses the library (its instances would be analysed
        // by no rule at all).
        // The dispatcher's own clock, not the wall clock: events already read
        // may carry earlier kernel times, which it must not have passed.
        let now = self.disp.now();
        for p in plugin.policies() {
            let change = Change::PolicyAdded {
                policy: p.info.name,
                rule: p.hls_rule.as_deref(),
            };
            if let Ruling::Refuse(why) = self.disp.review(now, &change) {
                return Err(format!(
                    "plugin `{}`: policy `{}`: {why}",
                    plugin.label(),
                    p.info.name
                ));
            }
        }
        for p in plugin.policies() {
            self.disp.add_policy(p.info);
            self.disp.applied(
                now,
                &Change::PolicyAdded {
                    policy: p.info.name,
                    rule: p.hls_rule.as_deref(),
                },
            );
        }
        let text = format!("loaded plugin `{}`: {}", plugin.label(), names.join(", "));
        self.plugins.push(plugin);
        Ok(text)
    }

    /// Message `msg` to scheduler `to` (by default the speaker's) from
    /// `speaker`.
    fn message(&mut self, peer: &Peer, speaker: &Speaker, to: Option<&str>, msg: Msg) -> Response {
        let from = match speaker {
            Speaker::Operator => None,
            Speaker::Thread(name) => match self.disp.thread_by_name(name) {
                Some(t) => Some(t),
                None => return self.logged(Response::refused(format!("no thread `{name}`")), peer),
            },
        };
        let target = match to {
            Some(name) => self
                .disp
                .sched_by_name(name)
                .ok_or(format!("no scheduler `{name}`")),
            None => from.and_then(|t| self.disp.thread_sched(t)).ok_or_else(|| {
                "name the scheduler (`to`): the operator has none of its own".into()
            }),
        };
        let s = match target {
            Ok(s) => s,
            Err(e) => return self.logged(Response::refused(e), peer),
        };
        let reply = self
            .disp
            .message(&mut self.platform, self.now, from, s, &msg);
        let sender = from.map_or("operator".to_string(), |t| {
            format!("`{}`", self.disp.thread_name(t))
        });
        let text = format!("{sender} -> `{}` {msg}: {reply}", self.disp.sched_name(s));
        let response = match reply {
            Reply::Ok(reply) => Response {
                ok: true,
                text,
                reply,
            },
            Reply::Err(_) => Response::refused(text),
        };
        self.logged(response, peer)
    }

    /// Logs a control request's outcome (as the simulator logs script
    /// steps and replies) and returns it.
    fn logged(&mut self, response: Response, peer: &Peer) -> Response {
        let kind = if response.ok {
            LogKind::Reply
        } else {
            LogKind::Refused
        };
        self.log.push(LogEntry {
            at: self.now,
            kind,
            text: format!("control (pid {}): {}", peer.pid, response.text),
        });
        response
    }

    /// The managed threads (their schedulers, and when they ended) and
    /// the schedulers, one per line.
    fn status(&self) -> String {
        let mut out = format!("{} decisions {}\n", self.now, self.disp.decisions());
        for (i, tid) in self.platform.tids.iter().enumerate() {
            let t = ThreadId(i as u32);
            let _ = write!(
                out,
                "thread {} tid {tid} under {}",
                self.disp.thread_name(t),
                self.sched_of(t)
            );
            let _ = match self.exits[i] {
                Some(at) => writeln!(out, " ended at {at}"),
                None => writeln!(out),
            };
        }
        for n in self.disp.node_results() {
            let _ = writeln!(
                out,
                "scheduler {} ({}) received {}",
                n.name, n.policy, n.received
            );
        }
        out
    }

    /// Carries out a change of the hierarchy now, logged as the simulator
    /// logs a script step. Protection-domain actions are not the
    /// hierarchy's and are refused.
    pub fn script(&mut self, action: &Action) {
        self.now = self.clock(monotonic_ns());
        let result = hsched_dispatch::apply(&mut self.disp, &mut self.platform, self.now, action)
            .unwrap_or_else(|| Err("protection domains are not run live".into()));
        let (kind, text) = match result {
            Ok(text) => (LogKind::Script, text),
            Err(text) => (LogKind::Refused, text),
        };
        self.log.push(LogEntry {
            at: self.now,
            kind,
            text,
        });
    }

    /// What happened (the dispatcher's refusals and ejections, the
    /// script's steps, control requests), in time order; taken.
    pub fn take_log(&mut self) -> Vec<LogEntry> {
        let mut log = std::mem::take(&mut self.log);
        log.extend(self.disp.take_log());
        log.sort_by_key(|e| e.at);
        log
    }

    /// Records a kernel event of a managed thread.
    fn observe(&mut self, e: &SchedEvent) {
        let seen = match *e {
            SchedEvent::Switch {
                cpu,
                prev,
                prev_blocked,
                next,
                ..
            } => Seen::Switch {
                cpu: self.platform.cpus.iter().position(|&c| c == cpu as usize),
                prev: self.by_tid.get(&prev).copied(),
                blocked: prev_blocked,
                next: self.by_tid.get(&next).copied(),
            },
            SchedEvent::Wakeup { tid, .. } => match self.by_tid.get(&tid) {
                Some(&t) => Seen::Wakeup(t),
                None => return,
            },
            SchedEvent::Fork { .. } | SchedEvent::Exit { .. } | SchedEvent::Others { .. } => return,
        };
        let at = Instant(e.time_ns().saturating_sub(self.start_ns));
        self.observed.push(at, seen);
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
