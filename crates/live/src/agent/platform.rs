//! The platform the agent's dispatcher drives: what each decision does to
//! the real threads (their policy, priority and affinity on the
//! user-space agent, the decisions written to the BPF scheduler under
//! sched_ext), with the wakeup window and speculation that keep a woken
//! thread's wait short.

use crate::guardian::{Line, Original};
use crate::sys::{self, SchedAttr, SCHED_IDLE};
use hsched_core::{CpuId, Instant, ThreadId};
use hsched_dispatch::Platform;
use std::io;
use std::time::Duration;

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

/// What the dispatcher's decisions do to real threads.
pub(super) struct LivePlatform {
    /// The real CPU behind each of the dispatcher's CPUs.
    pub(super) cpus: Vec<usize>,
    /// Kernel thread id by dispatcher thread id.
    pub(super) tids: Vec<i32>,
    /// The process of each, by dispatcher thread id (read once: the hot
    /// path does not read /proc).
    pub(super) pids: Vec<i32>,
    pub(super) on_cpu: Vec<Option<ThreadId>>,
    /// Calls that failed (a thread gone, say), for the caller to report.
    pub(super) errors: Vec<String>,
    /// Priority changes made.
    pub(super) changes: u64,
    /// Hard parking: a parked thread's process is stopped (SIGSTOP), so it
    /// gets no CPU at all, not even what Linux has spare.
    pub(super) hard: bool,
    /// Announces stops to the guardian (before each stop, so a stopped
    /// process is always continued if the agent dies).
    pub(super) to_guardian: Option<std::fs::File>,
    /// Processes stopped now.
    pub(super) stopped: std::collections::HashSet<i32>,
    /// Each thread's affinity as last set, by dispatcher thread id
    /// (missing: not set yet).
    pinned: Vec<Option<Pin>>,
    /// By dispatcher thread id: woken and not given a CPU since.
    pub(super) fresh: Vec<bool>,
    /// By dispatcher thread id: the process of a command still at its
    /// gate after the gate opened
    /// ([`Agent::open_gate`](super::Agent::open_gate)), released when the
    /// hierarchy first gives it a CPU (or when it is handed back).
    pub(super) at_gate: Vec<Option<i32>>,
    /// By CPU: the thread at [`WAKE_ATTR`] there, and since when.
    woken: Vec<Option<(ThreadId, Instant)>>,
    /// By CPU: the second (of the agent's clock) and the time given at
    /// [`WAKE_ATTR`] in it.
    wake_spent: Vec<(u64, hsched_core::Duration)>,
    /// Speculative wakeups (see [`Agent::speculate`](super::Agent::speculate)).
    pub(super) speculate: bool,
    /// The thread whose wakeup, or block, the dispatcher is being told of.
    pub(super) waking: Option<ThreadId>,
    pub(super) blocking: Option<ThreadId>,
    /// By dispatcher thread id: given its CPU at its last wakeup; left at
    /// [`WAKE_ATTR`] on its CPU while it sleeps.
    pub(super) woke_to_cpu: Vec<bool>,
    pub(super) armed: Vec<bool>,
    /// Wakeups of armed threads, and of them those the hierarchy did not
    /// give the CPU.
    pub(super) armed_wakeups: u64,
    pub(super) mispredicted: u64,
    /// The sched_ext backend, when it is the one: the decisions go to the
    /// BPF scheduler instead of the calls above.
    pub(super) scx: Option<Scx>,
    /// Whole-machine mode under sched_ext: the thread that stands for the
    /// tasks nobody manages (see [`Agent::delegate_others`](super::Agent::delegate_others)).
    pub(super) others: Option<ThreadId>,
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
pub(super) struct Scx {
    pub(super) sched: hsched_scx::Scheduler,
    /// By CPU, the decision as last written.
    written: Vec<Option<hsched_scx::Decision>>,
    /// The ring buffer's events as last read (kept for its capacity: it is
    /// read on every turn of the loop).
    pub(super) events: Vec<hsched_scx::Event>,
}

impl Scx {
    /// The backend of scheduler `sched` on `cpus` CPUs, nothing written yet.
    pub(super) fn new(sched: hsched_scx::Scheduler, cpus: usize) -> Scx {
        Scx {
            sched,
            written: vec![None; cpus],
            events: Vec::new(),
        }
    }

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

/// How far ahead a decision's horizon lies when the dispatcher has no
/// deadline: the agent's loop turns at least every heartbeat (100 ms,
/// `HEARTBEAT_EVERY`) and writes it afresh, so a running thread never
/// meets it.
pub(super) const OPEN_HORIZON: Duration = Duration::from_secs(1);

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
    /// The platform of real CPUs `cpus` with no thread yet; `scx`: the
    /// sched_ext backend, when it is the one.
    pub(super) fn new(cpus: &[usize], scx: Option<Scx>) -> LivePlatform {
        LivePlatform {
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
        }
    }

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
    pub(super) fn take_over(&mut self, t: ThreadId) {
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
    pub(super) fn release(&mut self, t: ThreadId) -> io::Result<()> {
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
    pub(super) fn armed_woke(&mut self, t: ThreadId) {
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
    pub(super) fn lower_woken(&mut self, now: Instant) {
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
    pub(super) fn next_lowering(&self) -> Option<Instant> {
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
    pub(super) fn flush(&mut self, now: u64, until: u64) {
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
    pub(super) fn give_back(&mut self, t: ThreadId, original: &Original) -> io::Result<()> {
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
    pub(super) fn restore(&mut self, original: &Original) -> io::Result<()> {
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
    pub(super) fn hand_cpus_to_default(&mut self) -> Vec<String> {
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
