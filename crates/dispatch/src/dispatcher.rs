//! The dispatcher core: state, callback delivery, effects, decisions, timers.
//!
//! Hierarchy changes (create, attach, detach, destroy, eject, move) live in
//! `hierarchy.rs`; both are `impl Dispatcher`.

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Effect, Instant, Msg, ParamSpec, ParentVp, PolicyInfo,
    Registry, Reply, SchedId, Scheduler, Sender, SyncEvent, ThreadId, TimerKey, VpState,
};
use hsched_model::guard::{Change, Ruling, SharedGuard};
use hsched_model::{Action, LogEntry, LogKind, NodeResult};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};

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

/// A scheduler will be ejected when it asks for more re-decisions than this
/// within one event: it is livelocking the dispatcher.
const RESCHEDULE_LIMIT: u32 = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChildRef {
    Thread(ThreadId),
    Vp(SchedId, ParentVp),
}

/// The dispatcher's record of one child of a scheduler.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kid {
    pub what: ChildRef,
    pub runnable: bool,
    pub running: Option<CpuId>,
}

/// Where one of a scheduler's VPs is attached: the parent and the child id
/// the parent knows it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub parent: SchedId,
    pub child: ChildId,
}

pub(crate) struct Inst {
    pub name: String,
    pub policy: Box<dyn Scheduler>,
    pub info: &'static PolicyInfo,
    pub child_specs: Vec<ParamSpec>,
    pub vps: Vec<VpState>,
    /// Per VP: where it is attached (`None` for the root's CPUs and for a
    /// detached instance).
    pub links: Vec<Option<Link>>,
    pub children: Vec<Option<Kid>>,
    pub free_children: BinaryHeap<Reverse<u32>>,
    pub live_children: u32,
    /// Armed timers: key -> generation of the heap entry that is current.
    pub timers: HashMap<TimerKey, u64>,
    /// Re-decisions asked within the current event (livelock guard), and
    /// the event they were counted in.
    pub reschedules: u32,
    pub reschedules_event: u64,
}

impl Inst {
    pub fn kid(&self, c: ChildId) -> Option<&Kid> {
        self.children.get(c.index()).and_then(|k| k.as_ref())
    }
    pub fn kid_mut(&mut self, c: ChildId) -> Option<&mut Kid> {
        self.children.get_mut(c.index()).and_then(|k| k.as_mut())
    }
    pub fn alloc_child(&mut self, what: ChildRef) -> ChildId {
        let idx = match self.free_children.pop() {
            Some(Reverse(i)) => i,
            None => self.children.len() as u32,
        };
        let kid = Kid {
            what,
            runnable: false,
            running: None,
        };
        if idx as usize == self.children.len() {
            self.children.push(Some(kid));
        } else {
            self.children[idx as usize] = Some(kid);
        }
        self.live_children += 1;
        ChildId(idx)
    }
    pub fn free_child(&mut self, c: ChildId) {
        if self.children[c.index()].take().is_some() {
            self.free_children.push(Reverse(c.0));
            self.live_children -= 1;
        }
    }
}

pub(crate) struct Thr {
    pub name: String,
    pub parent: Option<Link>,
    pub runnable: bool,
    pub running: Option<CpuId>,
    pub alive: bool,
    /// Runnable and not running since then (for the watchdog).
    pub waiting_since: Instant,
    pub starving_reported: bool,
    /// Every scheduler it has been attached to, from when: what reports
    /// attribute its CPU time to over the run.
    pub homes: Vec<(Instant, SchedId)>,
}

/// One grant on a CPU's decision path: `sched` holds the CPU on `vp` and
/// gave it to `child` (None: idle) until `until`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hop {
    pub sched: SchedId,
    pub vp: ParentVp,
    pub child: Option<ChildId>,
    pub until: Instant,
}

pub(crate) struct Cpu {
    pub path: Vec<Hop>,
    pub thread: Option<ThreadId>,
    /// What the platform was last told runs here.
    pub shown: Option<ThreadId>,
    /// Start of the current run segment (for charging).
    pub since: Instant,
    /// Shallowest path depth that must be re-decided.
    pub dirty: Option<usize>,
    /// Generation of the horizon timer that is current.
    pub horizon_gen: u64,
    /// The last hop answered `Dispatch::Spin`: its horizon is exact, not
    /// rounded to the tick (the CPU busy-waits on the clock).
    pub spinning: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKind {
    Policy {
        sched: SchedId,
        key: TimerKey,
        gen: u64,
    },
    Horizon {
        cpu: u32,
        gen: u64,
    },
    Watchdog,
}

/// Child-to-parent notifications waiting for delivery.
#[derive(Clone, Debug)]
pub(crate) enum Note {
    Request(Link),
    Release(Link),
    /// A child scheduler's message to its parent.
    Msg(Link, Msg),
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

    // ----- events from the platform ----------------------------------------

    /// A thread became runnable.
    pub fn thread_ready(&mut self, p: &mut dyn Platform, now: Instant, t: ThreadId) {
        self.set_now(now);
        let thr = &mut self.threads[t.index()];
        if !thr.alive || thr.runnable {
            return;
        }
        thr.runnable = true;
        thr.waiting_since = now;
        thr.starving_reported = false;
        if let Some(link) = thr.parent {
            self.deliver_request(link);
        }
        self.settle(p);
    }

    /// A thread blocked (or yielded: block then ready at the same instant).
    pub fn thread_block(&mut self, p: &mut dyn Platform, now: Instant, t: ThreadId) {
        self.set_now(now);
        self.block_inner(t);
        self.settle(p);
    }

    /// A thread blocked involuntarily (a page fault): its scheduler's
    /// `vp_release` sees `Cx::involuntary()` set.
    pub fn thread_fault(&mut self, p: &mut dyn Platform, now: Instant, t: ThreadId) {
        self.set_now(now);
        self.involuntary = true;
        self.block_inner(t);
        self.involuntary = false;
        self.settle(p);
    }

    /// A thread ended. Its scheduler learns it through `vp_release` (if it
    /// was runnable) and `unregister_vp`.
    pub fn thread_exit(&mut self, p: &mut dyn Platform, now: Instant, t: ThreadId) {
        self.set_now(now);
        self.block_inner(t);
        self.detach_thread(t);
        self.threads[t.index()].alive = false;
        self.settle(p);
    }

    /// A thread took, waits for or gave up a mutex, or an RPC began or
    /// ended: the scheduler `event`'s acting thread is a direct child of
    /// hears of it (see [`SyncEvent`]). A hand-over to a waiter under
    /// another scheduler is a `Released` with no `to` here and an
    /// `Acquired` there; an RPC between threads of different schedulers is
    /// not delivered (inheritance does not cross schedulers).
    pub fn sync(&mut self, p: &mut dyn Platform, now: Instant, event: SyncEvent<ThreadId>) {
        self.set_now(now);
        let link = |d: &Self, t: ThreadId| {
            d.threads
                .get(t.index())
                .filter(|th| th.alive)
                .and_then(|th| th.parent)
        };
        let Some(actor) = link(self, event.actor()) else {
            return;
        };
        let local = |d: &Self, t: ThreadId| {
            link(d, t)
                .filter(|l| l.parent == actor.parent)
                .map(|l| l.child)
        };
        let mut handed_elsewhere = None;
        let delivered = match event {
            SyncEvent::Acquired {
                mutex, protocol, ..
            } => Some(SyncEvent::Acquired {
                thread: actor.child,
                mutex,
                protocol,
            }),
            SyncEvent::Blocked {
                mutex, protocol, ..
            } => Some(SyncEvent::Blocked {
                thread: actor.child,
                mutex,
                protocol,
            }),
            SyncEvent::Released {
                mutex,
                to,
                protocol,
                ..
            } => {
                let to_here = to.and_then(|w| local(self, w));
                if to_here.is_none() {
                    handed_elsewhere = to.map(|w| SyncEvent::Acquired {
                        thread: w,
                        mutex,
                        protocol,
                    });
                }
                Some(SyncEvent::Released {
                    thread: actor.child,
                    mutex,
                    to: to_here,
                    protocol,
                })
            }
            SyncEvent::CallServed { server, .. } => {
                local(self, server).map(|server| SyncEvent::CallServed {
                    client: actor.child,
                    server,
                })
            }
            SyncEvent::CallEnded { server, .. } => {
                local(self, server).map(|server| SyncEvent::CallEnded {
                    client: actor.child,
                    server,
                })
            }
        };
        if let Some(ev) = delivered {
            self.call(actor.parent, |s, cx| s.sync(cx, &ev));
        }
        self.settle(p);
        if let Some(ev) = handed_elsewhere {
            self.sync(p, now, ev);
        }
    }

    /// Fires every dispatcher timer due at or before `now` (policy timers,
    /// decision horizons, the watchdog), each followed by its consequences.
    pub fn advance(&mut self, p: &mut dyn Platform, now: Instant) {
        self.set_now(now);
        while let Some(&Reverse((at, _, kind))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            match kind {
                TimerKind::Policy { sched, key, gen } => {
                    let current = self.inst(sched).and_then(|i| i.timers.get(&key)) == Some(&gen);
                    if current {
                        self.fired += 1;
                        self.inst_mut(sched).unwrap().timers.remove(&key);
                        self.call(sched, |s, cx| s.timer(cx, key));
                    }
                }
                TimerKind::Horizon { cpu, gen } => {
                    let c = &self.cpus[cpu as usize];
                    if c.horizon_gen == gen {
                        self.fired += 1;
                        if let Some(depth) = c.path.iter().position(|h| h.until <= now) {
                            self.mark_dirty(cpu as usize, depth);
                        }
                    }
                }
                TimerKind::Watchdog => {
                    self.fired += 1;
                    self.watchdog();
                }
            }
            self.settle(p);
        }
    }

    /// A message to scheduler `to` from a thread (or the operator when
    /// `from` is `None`), answered at once. `join` and `leave` are the
    /// dispatcher's own (Vassal's JOIN): the sender moves to `to` (with the
    /// message's arguments as attachment parameters) or back to the default.
    pub fn message(
        &mut self,
        p: &mut dyn Platform,
        now: Instant,
        from: Option<ThreadId>,
        to: SchedId,
        msg: &Msg,
    ) -> Reply {
        self.set_now(now);
        let reply = self.message_inner(from, to, msg);
        self.settle(p);
        reply
    }

    fn message_inner(&mut self, from: Option<ThreadId>, to: SchedId, msg: &Msg) -> Reply {
        if self.inst(to).is_none() {
            return Reply::Err(format!("no scheduler {to} (it was destroyed)"));
        }
        match (msg.name.as_str(), from) {
            ("join", Some(t)) => self.guarded_move(t, to, &msg.args),
            ("leave", Some(t)) => match self.default {
                Some(d) => self.guarded_move(t, d, &hsched_core::Params::new()),
                None => Reply::Err("there is no default scheduler".into()),
            },
            _ => {
                let child = from.and_then(|t| {
                    self.threads[t.index()]
                        .parent
                        .filter(|l| l.parent == to)
                        .map(|l| l.child)
                });
                let sender = Sender {
                    thread: from,
                    child,
                };
                let reply = self
                    .call(to, |s, cx| s.msg(cx, sender, msg))
                    .unwrap_or_else(|| {
                        Reply::Err("the scheduler was ejected while answering".into())
                    });
                if let (Reply::Ok(_), Some(t), Some(inst)) = (&reply, from, self.inst(to)) {
                    let change = Change::Admitted {
                        thread: &self.threads[t.index()].name,
                        to: &inst.name,
                        msg,
                    };
                    self.applied(self.now, &change);
                }
                reply
            }
        }
    }

    /// Thread `t` asks to move to `to` (`join`, `leave`): put to the guard
    /// as a move, then to `to`'s admission.
    fn guarded_move(&mut self, t: ThreadId, to: SchedId, params: &hsched_core::Params) -> Reply {
        if self.guard.is_none() {
            return match self.move_thread_inner(t, to, params) {
                Ok(()) => Reply::ok(),
                Err(e) => Reply::Err(e),
            };
        }
        let action = Action::Move {
            thread: self.threads[t.index()].name.clone(),
            to: self.sched_name(to).to_string(),
            params: params.clone(),
        };
        let change = Change::Hierarchy(&action);
        let warning = match self.review(self.now, &change) {
            Ruling::Refuse(why) => return Reply::Err(why),
            Ruling::Warn(why) => Some(why),
            Ruling::Accept => None,
        };
        match self.move_thread_inner(t, to, params) {
            Ok(()) => {
                self.applied(self.now, &change);
                if let Some(why) = warning {
                    let text = format!(
                        "thread `{}` moved to `{}` by message: {why}",
                        self.threads[t.index()].name,
                        self.sched_name(to)
                    );
                    self.record(LogKind::Uncomposed, text);
                }
                Reply::ok()
            }
            Err(e) => Reply::Err(e),
        }
    }

    /// Ends the run at `now`: charges every CPU's current run segment so that
    /// each scheduler's received time covers the whole run.
    pub fn close(&mut self, p: &mut dyn Platform, now: Instant) {
        self.set_now(now);
        for cpu in 0..self.cpus.len() {
            self.end_segment(cpu);
        }
        self.settle(p);
    }

    // ----- internals: time, timers ------------------------------------------

    pub(crate) fn set_now(&mut self, now: Instant) {
        debug_assert!(now >= self.now, "time went backwards: {now} < {}", self.now);
        self.now = now.max(self.now);
        self.event += 1;
    }

    fn quantize(&self, at: Instant) -> Instant {
        match self.cfg.tick {
            Some(tick) if !at.is_never() && tick.as_nanos() > 0 => {
                let t = tick.as_nanos();
                Instant(at.as_nanos().div_ceil(t).saturating_mul(t))
            }
            _ => at,
        }
    }

    pub(crate) fn arm(&mut self, at: Instant, kind: TimerKind) {
        self.seq += 1;
        self.timers.push(Reverse((at, self.seq, kind)));
    }

    pub(crate) fn inst(&self, s: SchedId) -> Option<&Inst> {
        self.scheds.get(s.index()).and_then(|i| i.as_ref())
    }
    pub(crate) fn inst_mut(&mut self, s: SchedId) -> Option<&mut Inst> {
        self.scheds.get_mut(s.index()).and_then(|i| i.as_mut())
    }

    // ----- calling policies --------------------------------------------------

    /// Calls one policy callback, then applies its effects and (in checking
    /// mode) its invariants. `None`: the scheduler is gone or was ejected.
    pub(crate) fn call<R>(
        &mut self,
        s: SchedId,
        f: impl FnOnce(&mut dyn Scheduler, &mut Cx) -> R,
    ) -> Option<R> {
        let (now, cpus, tick) = (self.now, self.cfg.cpus, self.cfg.tick);
        let inst = self.scheds.get_mut(s.index())?.as_mut()?;
        let mut cx = Cx::new(now, cpus, tick, &inst.vps, &mut self.effects);
        let policy = &mut inst.policy;
        let result = catch_unwind(AssertUnwindSafe(|| f(policy.as_mut(), &mut cx)));
        let r = match result {
            Ok(r) => r,
            Err(panic) => {
                self.effects.clear();
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                self.eject(s, format!("panicked: {what}"));
                return None;
            }
        };
        self.apply_effects(s);
        if self.cfg.check_invariants {
            let inst = self.inst(s)?;
            if let Err(e) = inst.policy.check_invariants() {
                self.eject(s, format!("broke its invariants: {e}"));
                return None;
            }
        }
        self.inst(s)?;
        Some(r)
    }

    fn apply_effects(&mut self, s: SchedId) {
        if self.effects.is_empty() {
            return;
        }
        let mut effects = std::mem::take(&mut self.effects);
        for e in effects.drain(..) {
            if self.inst(s).is_none() {
                break;
            }
            if let Err(why) = self.apply_effect(s, e) {
                self.eject(s, why);
                break;
            }
        }
        effects.clear();
        if self.effects.is_empty() {
            self.effects = effects; // keep the allocation
        }
    }

    fn apply_effect(&mut self, s: SchedId, e: Effect) -> Result<(), String> {
        let is_root = self.root == Some(s);
        let now = self.now;
        let inst = self.inst_mut(s).unwrap();
        let vp_ok = |vp: ParentVp, inst: &Inst| {
            if vp.index() < inst.vps.len() {
                Ok(())
            } else {
                Err(format!("used {vp}, but holds only {} VPs", inst.vps.len()))
            }
        };
        match e {
            Effect::SetTimer { key, at } => {
                let at = self.quantize(at.max(now));
                self.seq += 1;
                let gen = self.seq;
                self.inst_mut(s).unwrap().timers.insert(key, gen);
                self.arm(at, TimerKind::Policy { sched: s, key, gen });
            }
            Effect::CancelTimer { key } => {
                inst.timers.remove(&key);
            }
            Effect::Request(vp) => {
                vp_ok(vp, inst)?;
                self.request_vp(s, vp, is_root);
            }
            Effect::Release(vp) => {
                vp_ok(vp, inst)?;
                self.release_vp(s, vp);
            }
            Effect::WantCpus(n) => {
                let n = (n as usize).min(inst.vps.len());
                if is_root {
                    let busy = self
                        .cpus
                        .iter()
                        .filter(|c| !c.path.first().is_some_and(root_declined) || c.dirty.is_some())
                        .count();
                    let mut missing = n.saturating_sub(busy);
                    for cpu in 0..self.cpus.len() {
                        if missing == 0 {
                            break;
                        }
                        let c = &self.cpus[cpu];
                        if c.dirty.is_none() && c.path.first().is_some_and(root_declined) {
                            self.mark_dirty(cpu, 0);
                            missing -= 1;
                        }
                    }
                } else {
                    let count = inst.vps.len();
                    let have = inst
                        .vps
                        .iter()
                        .filter(|v| !matches!(v, VpState::Idle))
                        .count();
                    if n > have {
                        let mut missing = n - have;
                        for vp in 0..count {
                            if missing == 0 {
                                break;
                            }
                            if self.inst(s).unwrap().vps[vp] == VpState::Idle {
                                self.request_vp(s, ParentVp(vp as u32), false);
                                missing -= 1;
                            }
                        }
                    } else {
                        let mut surplus = have - n;
                        for vp in (0..count).rev() {
                            if surplus == 0 {
                                break;
                            }
                            if self.inst(s).unwrap().vps[vp] == VpState::Requesting {
                                self.release_vp(s, ParentVp(vp as u32));
                                surplus -= 1;
                            }
                        }
                    }
                }
            }
            Effect::Reschedule(vp) => {
                vp_ok(vp, inst)?;
                if let VpState::Held(cpu) = inst.vps[vp.index()] {
                    self.count_reschedule(s)?;
                    self.resched_at(cpu, s);
                }
            }
            Effect::MsgParent { vp, msg } => {
                vp_ok(vp, inst)?;
                if let Some(link) = inst.links[vp.index()] {
                    self.notes.push_back(Note::Msg(link, msg));
                }
            }
            Effect::Revoke(child) => {
                let kid = inst
                    .kid(child)
                    .ok_or_else(|| format!("revoked {child}, which is not its child"))?;
                if let Some(cpu) = kid.running {
                    self.count_reschedule(s)?;
                    self.resched_at(cpu, s);
                }
            }
        }
        Ok(())
    }

    fn count_reschedule(&mut self, s: SchedId) -> Result<(), String> {
        let event = self.event;
        let inst = self.inst_mut(s).unwrap();
        if inst.reschedules_event != event {
            inst.reschedules_event = event;
            inst.reschedules = 0;
        }
        inst.reschedules += 1;
        if inst.reschedules > RESCHEDULE_LIMIT {
            return Err(format!(
                "asked for more than {RESCHEDULE_LIMIT} reschedules at one instant (livelock)"
            ));
        }
        Ok(())
    }

    /// Marks the CPU for re-decision from `s`'s grant downwards.
    pub(crate) fn resched_at(&mut self, cpu: CpuId, s: SchedId) {
        if let Some(depth) = self.cpus[cpu.index()]
            .path
            .iter()
            .position(|h| h.sched == s)
        {
            self.mark_dirty(cpu.index(), depth);
        }
    }

    pub(crate) fn mark_dirty(&mut self, cpu: usize, depth: usize) {
        let c = &mut self.cpus[cpu];
        c.dirty = Some(c.dirty.map_or(depth, |d| d.min(depth)));
    }

    pub(crate) fn request_vp(&mut self, s: SchedId, vp: ParentVp, is_root: bool) {
        if is_root {
            let cpu = vp.index();
            if self.cpus[cpu].path.first().is_some_and(root_declined) {
                self.mark_dirty(cpu, 0);
            }
            return;
        }
        let inst = self.inst_mut(s).unwrap();
        if inst.vps[vp.index()] == VpState::Idle {
            inst.vps[vp.index()] = VpState::Requesting;
            if let Some(link) = inst.links[vp.index()] {
                self.notes.push_back(Note::Request(link));
            }
        }
    }

    pub(crate) fn release_vp(&mut self, s: SchedId, vp: ParentVp) {
        let inst = self.inst_mut(s).unwrap();
        match inst.vps[vp.index()] {
            VpState::Idle => {}
            VpState::Requesting => {
                inst.vps[vp.index()] = VpState::Idle;
                if let Some(link) = inst.links[vp.index()] {
                    self.notes.push_back(Note::Release(link));
                }
            }
            // Giving back a held CPU is answered at the next decision on it.
            VpState::Held(cpu) => self.resched_at(cpu, s),
        }
    }

    // ----- notifications ------------------------------------------------------

    pub(crate) fn deliver_request(&mut self, link: Link) {
        let Some(kid) = self
            .inst_mut(link.parent)
            .and_then(|i| i.kid_mut(link.child))
        else {
            return;
        };
        if !kid.runnable {
            kid.runnable = true;
            self.call(link.parent, |s, cx| s.vp_request(cx, link.child));
        }
    }

    pub(crate) fn deliver_release(&mut self, link: Link) {
        let Some(kid) = self
            .inst_mut(link.parent)
            .and_then(|i| i.kid_mut(link.child))
        else {
            return;
        };
        if kid.runnable {
            kid.runnable = false;
            let involuntary = self.involuntary;
            self.call(link.parent, |s, cx| {
                cx.set_involuntary(involuntary);
                s.vp_release(cx, link.child)
            });
        }
    }

    fn deliver_child_msg(&mut self, link: Link, msg: &Msg) {
        let sender = Sender {
            thread: None,
            child: Some(link.child),
        };
        if let Some(Reply::Err(e)) = self.call(link.parent, |s, cx| s.msg(cx, sender, msg)) {
            let parent = self.sched_name(link.parent).to_string();
            self.record(
                LogKind::Refused,
                format!("`{parent}` refused {msg} from its child: {e}"),
            );
        }
    }

    /// Delivers queued notifications and re-decides dirty CPUs until nothing
    /// is left to do; then runs the checks.
    pub(crate) fn settle(&mut self, p: &mut dyn Platform) {
        loop {
            while let Some(note) = self.notes.pop_front() {
                match note {
                    Note::Request(link) => self.deliver_request(link),
                    Note::Release(link) => self.deliver_release(link),
                    Note::Msg(link, msg) => self.deliver_child_msg(link, &msg),
                }
            }
            match self.cpus.iter().position(|c| c.dirty.is_some()) {
                Some(cpu) => self.redecide(cpu),
                None => break,
            }
        }
        // A thread that moved to another CPU within this event leaves the
        // old one first: the platform never sees it on two CPUs at once.
        for cpu in 0..self.cpus.len() {
            let shown = self.cpus[cpu].shown;
            let migrates = shown.is_some_and(|t| {
                self.cpus
                    .iter()
                    .enumerate()
                    .any(|(other, c)| other != cpu && c.thread == Some(t) && c.shown != c.thread)
            });
            if migrates && self.cpus[cpu].thread != shown {
                self.cpus[cpu].shown = None;
                p.set_cpu(self.now, CpuId(cpu as u32), None);
            }
        }
        for (cpu, c) in self.cpus.iter_mut().enumerate() {
            if c.shown != c.thread {
                c.shown = c.thread;
                p.set_cpu(self.now, CpuId(cpu as u32), c.thread);
            }
        }
        if self.cfg.check_invariants {
            if let Err(e) = self.check_structure() {
                panic!("dispatcher invariant broken at {}: {e}", self.now);
            }
        }
    }

    // ----- accounting and decisions -------------------------------------------

    /// Ends the current run segment on `cpu`: charges every scheduler on the
    /// path, bottom-up.
    pub(crate) fn end_segment(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        let ran = self.now.saturating_since(c.since);
        c.since = self.now;
        if c.thread.is_none() || ran.is_zero() {
            return;
        }
        // By index, bottom-up: a charge may eject a scheduler and shorten
        // the path under us; what is left above is still valid.
        for k in (0..self.cpus[cpu].path.len()).rev() {
            let Some(hop) = self.cpus[cpu].path.get(k).copied() else {
                continue;
            };
            let Some(child) = hop.child else { continue };
            if self.inst(hop.sched).is_none() {
                continue;
            }
            self.nodes[hop.sched.index()].received += ran;
            self.call(hop.sched, |p, cx| p.charge(cx, child, ran));
        }
    }

    /// Marks whatever `hop` gave its CPU to as no longer running there.
    fn stop_child(&mut self, hop: Hop) {
        let Some(child) = hop.child else { return };
        let Some(kid) = self.inst_mut(hop.sched).and_then(|i| i.kid_mut(child)) else {
            return;
        };
        kid.running = None;
        if let ChildRef::Thread(t) = kid.what {
            self.set_thread_running(t, None);
        }
    }

    pub(crate) fn set_thread_running(&mut self, t: ThreadId, cpu: Option<CpuId>) {
        let thr = &mut self.threads[t.index()];
        if thr.running.is_some() && cpu.is_none() && thr.runnable {
            thr.waiting_since = self.now;
            thr.starving_reported = false;
        }
        thr.running = cpu;
    }

    /// Takes back the CPU from every grant below `depth` (bottom-up, each
    /// scheduler hearing `vp_revoke`) and leaves the grant at `depth` empty.
    pub(crate) fn unwind_below(&mut self, cpu: usize, depth: usize) {
        while self.cpus[cpu].path.len() > depth + 1 {
            let hop = self.cpus[cpu].path.pop().unwrap();
            self.stop_child(hop);
            if let Some(inst) = self.inst_mut(hop.sched) {
                inst.vps[hop.vp.index()] = VpState::Requesting;
                self.call(hop.sched, |s, cx| {
                    s.vp_revoke(cx, hop.vp, CpuId(cpu as u32))
                });
            }
            // The parent's grant to this VP ended too.
            let parent = self.cpus[cpu].path.last().copied();
            if let Some(parent) = parent {
                if let Some(kid) = parent
                    .child
                    .and_then(|c| self.inst_mut(parent.sched).and_then(|i| i.kid_mut(c)))
                {
                    kid.running = None;
                }
            }
        }
        if let Some(hop) = self.cpus[cpu].path.get(depth).copied() {
            self.stop_child(hop);
            self.cpus[cpu].path[depth].child = None;
        }
        self.cpus[cpu].thread = None;
    }

    /// Re-decides `cpu` from its dirty depth: takes the CPU back below it,
    /// then decides anew. What taking it back made the schedulers below ask
    /// their parents (a join whose child lost this CPU requests again from
    /// every parent) is heard before the decision: the CPU stays marked and
    /// `settle` delivers those notifications first. Deciding before them
    /// would decide on stale requests: a parent the join had just declined
    /// would hear the request only after this CPU went elsewhere, preempt
    /// for it, be declined again because the child runs here by then, and
    /// so on forever (a livelock of a join under two multi-VP parents).
    fn redecide(&mut self, cpu: usize) {
        let depth = self.cpus[cpu].dirty.take().unwrap();
        self.end_segment(cpu);
        if depth < self.cpus[cpu].path.len() {
            self.unwind_below(cpu, depth);
            if !self.notes.is_empty() {
                // Taking back again is a no-op (the path ends at `depth`),
                // so the next visit descends unless a note moved it up.
                self.mark_dirty(cpu, depth);
                return;
            }
            self.descend(cpu);
        }
        self.cpus[cpu].since = self.now;
        // A spin's horizon is exact; every other one waits for the tick.
        let c = &self.cpus[cpu];
        let last = c.path.len().wrapping_sub(1);
        let spin_hop = |i: usize, h: &Hop| c.spinning && i == last && h.child.is_none();
        let at = c
            .path
            .iter()
            .enumerate()
            .map(|(i, h)| {
                if spin_hop(i, h) {
                    h.until
                } else {
                    self.quantize(h.until)
                }
            })
            .min()
            .unwrap_or(Instant::NEVER);
        self.cpus[cpu].horizon_gen += 1;
        if !at.is_never() {
            let gen = self.cpus[cpu].horizon_gen;
            self.arm(
                at,
                TimerKind::Horizon {
                    cpu: cpu as u32,
                    gen,
                },
            );
        }
    }

    /// Asks the scheduler at the bottom of `cpu`'s path what to do with the
    /// CPU, and follows the answer down to a thread, an idle CPU, or back up
    /// (a `Release` hands the CPU to the parent, which decides instead).
    fn descend(&mut self, cpu: usize) {
        self.decisions += 1;
        self.cpus[cpu].spinning = false;
        let cpu_id = CpuId(cpu as u32);
        loop {
            let Some(&hop) = self.cpus[cpu].path.last() else {
                return;
            };
            let s = hop.sched;
            let Some(answer) = self.call(s, |p, cx| p.vp_grant(cx, hop.vp, cpu_id)) else {
                return; // ejected: the CPU was marked for re-decision above it
            };
            if self.cpus[cpu].path.last().map(|h| (h.sched, h.vp)) != Some((s, hop.vp)) {
                return; // the path changed under the callback (ejection below)
            }
            if let Err(why) = self.validate(s, answer) {
                self.eject(s, why);
                return;
            }
            let last = self.cpus[cpu].path.len() - 1;
            match answer {
                Dispatch::Run { child, until } => {
                    let inst = self.inst_mut(s).unwrap();
                    let kid = inst.kid_mut(child).unwrap();
                    kid.running = Some(cpu_id);
                    let what = kid.what;
                    self.cpus[cpu].path[last].child = Some(child);
                    self.cpus[cpu].path[last].until = until;
                    match what {
                        ChildRef::Thread(t) => {
                            self.cpus[cpu].thread = Some(t);
                            self.set_thread_running(t, Some(cpu_id));
                            return;
                        }
                        ChildRef::Vp(c, vp) => {
                            self.inst_mut(c).unwrap().vps[vp.index()] = VpState::Held(cpu_id);
                            self.cpus[cpu].path.push(Hop {
                                sched: c,
                                vp,
                                child: None,
                                until: Instant::NEVER,
                            });
                        }
                    }
                }
                Dispatch::Idle { until } | Dispatch::Spin { until } => {
                    self.cpus[cpu].path[last].child = None;
                    self.cpus[cpu].path[last].until = until;
                    self.cpus[cpu].spinning = matches!(answer, Dispatch::Spin { .. });
                    return;
                }
                Dispatch::Release if last == 0 => {
                    self.cpus[cpu].path[0].child = None;
                    self.cpus[cpu].path[0].until = Instant::NEVER;
                    return;
                }
                Dispatch::Release => {
                    self.cpus[cpu].path.pop();
                    self.inst_mut(s).unwrap().vps[hop.vp.index()] = VpState::Idle;
                    let parent = self.cpus[cpu].path[last - 1];
                    let pc = parent.child.expect("a non-root hop has a parent grant");
                    self.cpus[cpu].path[last - 1].child = None;
                    self.cpus[cpu].path[last - 1].until = Instant::NEVER;
                    let kid = self.inst_mut(parent.sched).unwrap().kid_mut(pc).unwrap();
                    kid.running = None;
                    kid.runnable = false;
                    if self
                        .call(parent.sched, |p, cx| p.vp_release(cx, pc))
                        .is_none()
                    {
                        return; // ejected: the CPU was marked for re-decision above it
                    }
                    // Loop: the parent decides for the CPU now.
                }
            }
        }
    }

    fn validate(&self, s: SchedId, answer: Dispatch) -> Result<(), String> {
        let inst = self.inst(s).unwrap();
        match answer {
            Dispatch::Run { child, until } => {
                let kid = inst
                    .kid(child)
                    .ok_or_else(|| format!("granted {child}, which is not its child"))?;
                if !kid.runnable {
                    return Err(format!("granted {child}, which did not request a CPU"));
                }
                if let Some(other) = kid.running {
                    return Err(format!(
                        "granted {child}, which is already running on {other}"
                    ));
                }
                if until <= self.now {
                    return Err(format!(
                        "answered a grant with a horizon in the past ({until})"
                    ));
                }
            }
            Dispatch::Idle { until } | Dispatch::Spin { until } => {
                if until <= self.now {
                    return Err(format!(
                        "answered a grant with a horizon in the past ({until})"
                    ));
                }
            }
            Dispatch::Release => {}
        }
        Ok(())
    }

    fn block_inner(&mut self, t: ThreadId) {
        let thr = &mut self.threads[t.index()];
        if !thr.alive || !thr.runnable {
            return;
        }
        thr.runnable = false;
        let running = thr.running;
        let Some(link) = thr.parent else { return };
        if let Some(cpu) = running {
            self.end_segment(cpu.index());
            let depth = self.cpus[cpu.index()].path.len() - 1;
            self.unwind_below(cpu.index(), depth);
            self.mark_dirty(cpu.index(), depth);
        }
        self.deliver_release(link);
    }

    pub(crate) fn record(&mut self, kind: LogKind, text: String) {
        self.log.push(LogEntry {
            at: self.now,
            kind,
            text,
        });
    }
}

/// The root declined the CPU (nothing to run): a request may wake it.
fn root_declined(hop: &Hop) -> bool {
    hop.child.is_none() && hop.until.is_never()
}

pub(crate) fn half(d: Duration) -> Duration {
    Duration((d.as_nanos() / 2).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AttachLink;
    use hsched_core::{Params, Value};

    struct NoPlatform;
    impl Platform for NoPlatform {
        fn set_cpu(&mut self, _: Instant, _: CpuId, _: Option<ThreadId>) {}
    }

    /// An `fp` under the default `rr` that keeps its low thread waiting is
    /// ejected by the watchdog: both its threads are reported (a live
    /// platform hands them back to its operating system), once.
    #[test]
    fn the_threads_of_an_ejected_scheduler_are_reported_once() {
        let mut d = Dispatcher::new(
            Config {
                cpus: 1,
                tick: None,
                watchdog: Some(Duration::from_millis(100)),
                check_invariants: true,
            },
            hsched_policies::builtins(),
        );
        let p = &mut NoPlatform;
        let root = d.create_root("root", "rr", &Params::new()).unwrap();
        d.set_default(root);
        let fp = d.create("fp", "fp", &Params::new(), 1).unwrap();
        let link = AttachLink {
            parent: root,
            vps: 1,
            params: Params::new(),
        };
        d.attach(p, Instant::ZERO, fp, &[link]).unwrap();
        let prio = |v| Params::new().with("prio", Value::Int(v));
        let (high, _) = d.add_thread(Instant::ZERO, "high", fp, &prio(2));
        let (low, _) = d.add_thread(Instant::ZERO, "low", fp, &prio(1));
        for t in [high, low] {
            d.thread_ready(p, Instant::ZERO, t);
        }
        assert!(d.take_ejected_threads().is_empty());
        for ms in (10..=400).step_by(10) {
            d.advance(p, Instant::ZERO + Duration::from_millis(ms));
        }
        let mut ejected = d.take_ejected_threads();
        ejected.sort();
        assert_eq!(ejected, vec![high, low], "{:#?}", d.take_log());
        assert_eq!(d.thread_sched(low), Some(root));
        d.advance(p, Instant::ZERO + Duration::from_millis(800));
        assert!(d.take_ejected_threads().is_empty());
    }
}
