//! The dispatcher itself: its setup, its state and what it shows.
//!
//! What it does is split by concept, each file an `impl Dispatcher`:
//! `events.rs` (what the platform reports), `timers.rs` (the clock and the
//! timer heap), `effects.rs` (calling a policy, then applying its effects
//! and delivering the notifications they queue), `decide.rs` (the decision
//! path: grants, accounting, settling), `hierarchy.rs` (create, attach,
//! detach, destroy, eject, move) and `checks.rs` (the watchdog and the
//! structural checks). Their records are in `table.rs`.

use crate::table::{half, Cpu, Inst, Note, Thr, TimerKind};
use hsched_core::{CpuId, Duration, Effect, Instant, Registry, SchedId, ThreadId, VpState};
use hsched_model::guard::{Change, Ruling, SharedGuard};
use hsched_model::{LogEntry, LogKind, NodeResult};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// How the dispatcher is set up.
#[derive(Clone, Debug)]
pub struct Config {
    pub cpus: u32,
    /// With a tick, timers and horizons take effect at the next tick boundary
    /// (except a `Dispatch::Spin` horizon: the CPU busy-waits on the clock).
    pub tick: Option<Duration>,
    /// Starvation watchdog bound; `None` turns it off.
    pub watchdog: Option<Duration>,
    /// Run every policy's `check_invariants` after every callback, and the
    /// dispatcher's own structural checks after every event (tests, debug).
    pub check_invariants: bool,
}

/// What the dispatcher needs from a platform: to put a thread (or nothing)
/// on a CPU. Everything else flows the other way (the platform calls the
/// dispatcher's `thread_*`, `message` and `advance` methods).
pub trait Platform {
    /// From `now` on, `cpu` runs `thread` (`None`: idle). Called only when
    /// the thread on the CPU changes.
    fn set_cpu(&mut self, now: Instant, cpu: CpuId, thread: Option<ThreadId>);
}

/// The dispatcher. See the crate documentation.
pub struct Dispatcher {
    pub(crate) cfg: Config,
    pub(crate) now: Instant,
    pub(crate) scheds: Vec<Option<Inst>>,
    pub(crate) nodes: Vec<NodeResult>,
    pub(crate) threads: Vec<Thr>,
    pub(crate) cpus: Vec<Cpu>,
    pub(crate) root: Option<SchedId>,
    pub(crate) default: Option<SchedId>,
    /// Where a thread goes that the default scheduler refused (its
    /// admission test): the registry's fallback `rr` below the hierarchy,
    /// made the first time it is needed.
    pub(crate) fallback: Option<SchedId>,
    pub(crate) timers: BinaryHeap<Reverse<(Instant, u64, TimerKind)>>,
    pub(crate) seq: u64,
    pub(crate) effects: Vec<Effect>,
    pub(crate) notes: VecDeque<Note>,
    pub(crate) log: Vec<LogEntry>,
    pub(crate) decisions: u64,
    /// The policies `create` builds by name, and the fallback ones.
    pub(crate) registry: Registry,
    /// Dispatcher timers fired (horizons, policy timers, watchdog).
    pub(crate) fired: u64,
    /// Counts platform calls (events), for per-event limits.
    pub(crate) event: u64,
    /// Set while a thread's involuntary block is being delivered.
    pub(crate) involuntary: bool,
    /// Instances being removed right now: removing one ends run segments,
    /// which charges it, and a failure there must not eject it again.
    pub(crate) removing: Vec<SchedId>,
    /// Threads whose scheduler was ejected, since the last
    /// [`Dispatcher::take_ejected_threads`].
    pub(crate) ejected_threads: Vec<ThreadId>,
    /// Re-analyses each change of the hierarchy before it is carried out
    /// (none: every change the policies admit is carried out).
    pub(crate) guard: Option<SharedGuard>,
}

impl Dispatcher {
    /// A dispatcher with no scheduler yet, building policies from
    /// `registry` (see [`Registry`]).
    pub fn new(cfg: Config, registry: Registry) -> Self {
        let cpus = (0..cfg.cpus)
            .map(|_| Cpu {
                path: Vec::with_capacity(8),
                thread: None,
                shown: None,
                since: Instant::ZERO,
                dirty: None,
                horizon_gen: 0,
                spinning: false,
            })
            .collect();
        let mut d = Dispatcher {
            cfg,
            now: Instant::ZERO,
            scheds: Vec::new(),
            nodes: Vec::new(),
            threads: Vec::new(),
            cpus,
            root: None,
            default: None,
            fallback: None,
            timers: BinaryHeap::new(),
            seq: 0,
            effects: Vec::new(),
            notes: VecDeque::new(),
            log: Vec::new(),
            decisions: 0,
            registry,
            fired: 0,
            event: 0,
            involuntary: false,
            removing: Vec::new(),
            ejected_threads: Vec::new(),
            guard: None,
        };
        if let Some(bound) = d.cfg.watchdog {
            d.arm(
                Instant::ZERO.saturating_add(half(bound)),
                TimerKind::Watchdog,
            );
        }
        d
    }

    /// From now on, every change of the hierarchy (script steps, operator
    /// requests, `join` and `leave`) is put to `guard` first, and the
    /// admissions and ejections it should know of are told to it.
    pub fn set_guard(&mut self, guard: SharedGuard) {
        self.guard = Some(guard);
    }

    /// What the guard says of `change` at `now` (accepted without one).
    pub fn review(&self, now: Instant, change: &Change) -> Ruling {
        match &self.guard {
            Some(g) => g.with(|g| g.review(now, change)),
            None => Ruling::Accept,
        }
    }

    /// Tells the guard, if there is one, that `change` was carried out.
    pub fn applied(&self, now: Instant, change: &Change) {
        if let Some(g) = &self.guard {
            g.with(|g| g.applied(now, change));
        }
    }

    // ----- read-only views -------------------------------------------------

    pub fn now(&self) -> Instant {
        self.now
    }
    /// Root-to-leaf decisions made so far.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }
    /// Dispatcher timers fired so far (each one an event of the run).
    pub fn timers_fired(&self) -> u64 {
        self.fired
    }
    pub fn take_log(&mut self) -> Vec<LogEntry> {
        std::mem::take(&mut self.log)
    }
    /// The threads whose scheduler (or an ancestor of it) was ejected since
    /// the last call: the dispatcher has moved them to the default
    /// scheduler; a platform may instead give them up (the live one hands
    /// them back to Linux).
    pub fn take_ejected_threads(&mut self) -> Vec<ThreadId> {
        std::mem::take(&mut self.ejected_threads)
    }
    /// Per-instance results, indexed by `SchedId`, destroyed ones included.
    pub fn node_results(&self) -> &[NodeResult] {
        &self.nodes
    }
    pub fn sched_by_name(&self, name: &str) -> Option<SchedId> {
        self.scheds
            .iter()
            .position(|s| s.as_ref().is_some_and(|i| i.name == name))
            .map(|i| SchedId(i as u32))
    }
    pub fn sched_name(&self, s: SchedId) -> &str {
        &self.nodes[s.index()].name
    }
    pub fn root(&self) -> Option<SchedId> {
        self.root
    }
    pub fn default_sched(&self) -> Option<SchedId> {
        self.default
    }
    /// The states of scheduler `s`'s VPs (none once it is gone).
    pub fn vp_states(&self, s: SchedId) -> &[VpState] {
        self.inst(s).map_or(&[], |i| &i.vps)
    }
    /// The scheduler a thread is attached to now.
    pub fn thread_sched(&self, t: ThreadId) -> Option<SchedId> {
        self.threads[t.index()].parent.map(|l| l.parent)
    }
    /// Every scheduler the thread has been attached to, by name, from when
    /// (its arrival first), for the run's result.
    pub fn thread_homes(&self, t: ThreadId) -> Vec<hsched_model::Home> {
        self.threads[t.index()]
            .homes
            .iter()
            .map(|&(since, s)| hsched_model::Home {
                since,
                scheduler: self.sched_name(s).to_string(),
            })
            .collect()
    }
    pub fn thread_name(&self, t: ThreadId) -> &str {
        &self.threads[t.index()].name
    }
    /// The first thread of that name to have arrived.
    pub fn thread_by_name(&self, name: &str) -> Option<ThreadId> {
        let i = self.threads.iter().position(|t| t.name == name)?;
        Some(ThreadId(i as u32))
    }
    /// The earliest time `advance` has work to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((at, _, _))| *at)
    }

    pub(crate) fn inst(&self, s: SchedId) -> Option<&Inst> {
        self.scheds.get(s.index()).and_then(|i| i.as_ref())
    }
    pub(crate) fn inst_mut(&mut self, s: SchedId) -> Option<&mut Inst> {
        self.scheds.get_mut(s.index()).and_then(|i| i.as_mut())
    }

    pub(crate) fn record(&mut self, kind: LogKind, text: String) {
        self.log.push(LogEntry {
            at: self.now,
            kind,
            text,
        });
    }
}
