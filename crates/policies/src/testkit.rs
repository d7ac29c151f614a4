//! A test harness that drives one policy directly, without the dispatcher.
//!
//! Two levels:
//!
//! - [`Host`] owns a VP-state vector and an effects vector, makes a [`Cx`]
//!   for one callback and hands back the effects the policy asked for. Use it
//!   to check exactly what a single callback does.
//! - [`Harness`] plays the dispatcher for one scheduler instance: it keeps
//!   the children's and VPs' states, applies effects right after each
//!   callback, re-decides CPUs in a settle loop (as the dispatcher does),
//!   ends run segments with `charge`, fires timers and horizons as virtual
//!   time advances, plays the parent (the machine at the root, or a parent
//!   that grants when told or at once), and **rejects every answer the
//!   dispatcher would eject the policy for** (a `Run` of a child that is
//!   unknown, not requesting or running elsewhere; a horizon not in the
//!   future), panicking with the reason. It calls `check_invariants` after
//!   every callback.
//!
//! The harness maps VP `i` to CPU `i`. Horizons and timers take effect
//! exactly at their time unless [`Harness::set_tick`] gives a tick: then,
//! as in the dispatcher, they take effect at the first tick at or after
//! their time, except a `Dispatch::Spin` horizon, which stays exact. Like
//! the dispatcher, a `charge` is only sent for segments longer than zero.

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Effect, Instant, Msg, Params, ParentVp, Reject, Reply,
    Scheduler, Sender, ThreadId, TimerKey, VpState,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Makes a [`Cx`] for one callback and collects the effects it asks for.
#[derive(Clone, Debug)]
pub struct Host {
    pub now: Instant,
    pub cpus: u32,
    pub tick: Option<Duration>,
    pub vps: Vec<VpState>,
}

impl Host {
    /// A host with `vp_count` idle VPs on a machine of as many CPUs.
    pub fn new(vp_count: u32) -> Self {
        Host {
            now: Instant::ZERO,
            cpus: vp_count.max(1),
            tick: None,
            vps: vec![VpState::Idle; vp_count as usize],
        }
    }

    /// Runs one callback of `sched` and returns its result and the effects it
    /// asked for (not applied).
    pub fn call<S: Scheduler + ?Sized, R>(
        &self,
        sched: &mut S,
        f: impl FnOnce(&mut S, &mut Cx) -> R,
    ) -> (R, Vec<Effect>) {
        let mut effects = Vec::new();
        let mut cx = Cx::new(self.now, self.cpus, self.tick, &self.vps, &mut effects);
        let r = f(sched, &mut cx);
        (r, effects)
    }
}

/// How the harness plays the parent of the scheduler under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    /// The scheduler is the root: VP `i` is CPU `i` and always held. A
    /// `Release` answer leaves the CPU idle until `want_cpus`/`request`
    /// wakes it; `Idle { until }` idles it until `until`.
    Root,
    /// A parent that grants a requesting VP only when the test calls
    /// [`Harness::grant`] and takes it back on [`Harness::revoke`].
    Manual,
    /// A parent that grants every requesting VP at once (after the effects
    /// that made it request are applied). It still revokes when told.
    Eager,
}

/// One stretch of CPU time a child received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub child: ChildId,
    pub vp: ParentVp,
    pub start: Instant,
    pub end: Instant,
}

/// One answer the policy gave to a grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub at: Instant,
    pub vp: ParentVp,
    pub dispatch: Dispatch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Running {
    child: ChildId,
    start: Instant,
    until: Instant,
}

/// What a held VP is doing under the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    /// Not held, or held and waiting for its decision.
    None,
    Run(Running),
    /// Held and idle (or spinning) until this time (`NEVER`: declined at
    /// the root).
    Idle(Instant),
}

/// A scheduler livelocks the harness when one event needs more decisions
/// than this (the dispatcher ejects at the same bound).
const DECISION_LIMIT: u32 = 10_000;

/// Plays the dispatcher around one scheduler instance. See the module
/// documentation.
pub struct Harness<S: Scheduler + ?Sized> {
    sched: Box<S>,
    host: Host,
    parent: Parent,
    uses: Vec<Use>,
    dirty: Vec<bool>,
    /// Per child: `None` free, `Some(requesting)`.
    children: Vec<Option<bool>>,
    /// Free child ids below `children.len()`, lowest first.
    free_ids: BinaryHeap<Reverse<u32>>,
    timers: BTreeMap<TimerKey, Instant>,
    effect_log: Vec<Effect>,
    decisions: Vec<Decision>,
    segments: Vec<Segment>,
    cpu_time: Vec<Duration>,
    decisions_this_event: u32,
    checking: bool,
    blocks_involuntary: bool,
}

impl<S: Scheduler + ?Sized> Harness<S> {
    /// Wraps `sched` with `vp_count` VPs under `parent`, and calls `init` at
    /// time zero.
    pub fn new(sched: Box<S>, vp_count: u32, parent: Parent) -> Self {
        Self::new_at(sched, vp_count, parent, Instant::ZERO)
    }

    /// Like [`Harness::new`], with the instance created (and `init` called)
    /// at `start`.
    pub fn new_at(sched: Box<S>, vp_count: u32, parent: Parent, start: Instant) -> Self {
        assert!(vp_count >= 1, "a scheduler holds at least one VP");
        let mut host = Host::new(vp_count);
        host.now = start;
        let uses = match parent {
            Parent::Root => {
                for (i, v) in host.vps.iter_mut().enumerate() {
                    *v = VpState::Held(CpuId(i as u32));
                }
                vec![Use::Idle(Instant::NEVER); vp_count as usize]
            }
            _ => vec![Use::None; vp_count as usize],
        };
        let mut h = Harness {
            sched,
            host,
            parent,
            uses,
            dirty: vec![false; vp_count as usize],
            children: Vec::new(),
            free_ids: BinaryHeap::new(),
            timers: BTreeMap::new(),
            effect_log: Vec::new(),
            decisions: Vec::new(),
            segments: Vec::new(),
            cpu_time: Vec::new(),
            decisions_this_event: 0,
            checking: true,
            blocks_involuntary: false,
        };
        h.callback(|s, cx| s.init(cx));
        h.settle();
        h
    }

    // ----- views ----------------------------------------------------------------

    pub fn now(&self) -> Instant {
        self.host.now
    }
    pub fn sched(&self) -> &S {
        &self.sched
    }
    pub fn sched_mut(&mut self) -> &mut S {
        &mut self.sched
    }
    pub fn vp_count(&self) -> u32 {
        self.host.vps.len() as u32
    }
    pub fn vp_state(&self, vp: ParentVp) -> VpState {
        self.host.vps[vp.index()]
    }
    /// The child running on `vp`, if any.
    pub fn running_on(&self, vp: ParentVp) -> Option<ChildId> {
        match self.uses[vp.index()] {
            Use::Run(r) => Some(r.child),
            _ => None,
        }
    }
    /// The horizon of what runs on `vp`.
    pub fn horizon(&self, vp: ParentVp) -> Option<Instant> {
        match self.uses[vp.index()] {
            Use::Run(r) => Some(r.until),
            _ => None,
        }
    }
    /// The VP `child` runs on, if it runs.
    pub fn where_runs(&self, child: ChildId) -> Option<ParentVp> {
        (0..self.vp_count())
            .map(ParentVp)
            .find(|&vp| self.running_on(vp) == Some(child))
    }
    pub fn is_registered(&self, child: ChildId) -> bool {
        matches!(self.children.get(child.index()), Some(Some(_)))
    }
    pub fn is_requesting(&self, child: ChildId) -> bool {
        matches!(self.children.get(child.index()), Some(Some(true)))
    }
    /// Registered children, in id order.
    pub fn children(&self) -> Vec<ChildId> {
        (0..self.children.len())
            .filter(|&i| self.children[i].is_some())
            .map(|i| ChildId(i as u32))
            .collect()
    }
    /// Children that are requesting a CPU (running or waiting).
    pub fn requesting(&self) -> Vec<ChildId> {
        (0..self.children.len())
            .filter(|&i| self.children[i] == Some(true))
            .map(|i| ChildId(i as u32))
            .collect()
    }
    /// How many children run now.
    pub fn running_count(&self) -> usize {
        self.uses
            .iter()
            .filter(|u| matches!(u, Use::Run(_)))
            .count()
    }
    /// CPU time `child` received so far (finished segments only).
    pub fn cpu_time(&self, child: ChildId) -> Duration {
        self.cpu_time
            .get(child.index())
            .copied()
            .unwrap_or(Duration::ZERO)
    }
    /// Every finished run segment, in the order they ended.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
    /// Every answer to a grant, in order.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }
    /// The time timer `key` is armed for.
    pub fn timer(&self, key: TimerKey) -> Option<Instant> {
        self.timers.get(&key).copied()
    }
    /// Every effect the policy asked for since the last call, in order.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effect_log)
    }
    /// Forgets the decisions recorded so far.
    pub fn clear_decisions(&mut self) {
        self.decisions.clear();
    }

    /// Gives the platform a clock tick (`None`: exact timers, the default).
    /// Applies to timers set and decisions made from now on.
    pub fn set_tick(&mut self, tick: Option<Duration>) {
        self.host.tick = tick.filter(|t| !t.is_zero());
    }

    /// `at` rounded up to the tick, as the dispatcher rounds timers and
    /// horizons.
    fn quantize(&self, at: Instant) -> Instant {
        match self.host.tick {
            Some(t) if !at.is_never() => {
                let t = t.as_nanos();
                Instant(at.as_nanos().div_ceil(t).saturating_mul(t))
            }
            _ => at,
        }
    }

    /// Turns the `check_invariants` call after every callback on or off (on
    /// by default). Off is for runs with very many children, where an O(n)
    /// check per callback would dominate; call [`Harness::check`] instead.
    pub fn set_checking(&mut self, on: bool) {
        self.checking = on;
    }

    /// Runs the policy's `check_invariants` now, panicking on an error.
    pub fn check(&self) {
        if let Err(e) = self.sched.check_invariants() {
            panic!(
                "{} broke its invariants at {}: {e}",
                self.sched.policy(),
                self.now()
            );
        }
    }

    // ----- events -----------------------------------------------------------------

    /// A child joins with `params` (already resolved). The id is the lowest
    /// free one, as the dispatcher hands out.
    pub fn register(&mut self, params: &Params) -> Result<ChildId, Reject> {
        self.begin_event();
        let idx = match self.free_ids.peek() {
            Some(&Reverse(i)) => i as usize,
            None => self.children.len(),
        };
        let child = ChildId(idx as u32);
        let r = self.callback(|s, cx| s.register_vp(cx, child, params));
        if r.is_ok() {
            if idx == self.children.len() {
                self.children.push(Some(false));
            } else {
                self.free_ids.pop();
                self.children[idx] = Some(false);
            }
            if self.cpu_time.len() <= idx {
                self.cpu_time.resize(idx + 1, Duration::ZERO);
            }
            self.cpu_time[idx] = Duration::ZERO;
        }
        self.settle();
        r.map(|()| child)
    }

    /// A child leaves. If it ran, its segment is charged first and its CPU
    /// is re-decided after `unregister_vp`.
    pub fn unregister(&mut self, child: ChildId) {
        assert!(
            self.is_registered(child),
            "unregister: {child} is not registered"
        );
        self.begin_event();
        if let Some(vp) = self.where_runs(child) {
            self.end_segment(vp);
            self.dirty[vp.index()] = true;
        }
        self.children[child.index()] = None;
        self.free_ids.push(Reverse(child.0));
        self.callback(|s, cx| s.unregister_vp(cx, child));
        self.settle();
    }

    /// A child asks for a CPU (a thread wakes).
    pub fn wake(&mut self, child: ChildId) {
        assert!(self.is_registered(child), "wake: {child} is not registered");
        assert!(!self.is_requesting(child), "wake: {child} already requests");
        self.begin_event();
        self.children[child.index()] = Some(true);
        self.callback(|s, cx| s.vp_request(cx, child));
        self.settle();
    }

    /// A child stops asking (a thread blocks). If it ran, its segment is
    /// charged, then `vp_release`, then its CPU is re-decided.
    pub fn block(&mut self, child: ChildId) {
        self.block_as(child, self.blocks_involuntary);
    }

    /// From now on, every [`Harness::block`] (also the ones random
    /// [`Step`]s make) is involuntary, or voluntary again.
    pub fn set_blocks_involuntary(&mut self, on: bool) {
        self.blocks_involuntary = on;
    }

    /// Like [`Harness::block`], for an involuntary block (a page fault):
    /// `Cx::involuntary()` is set in the `vp_release`.
    pub fn block_involuntary(&mut self, child: ChildId) {
        self.block_as(child, true);
    }

    fn block_as(&mut self, child: ChildId, involuntary: bool) {
        assert!(self.is_requesting(child), "block: {child} does not request");
        self.begin_event();
        if let Some(vp) = self.where_runs(child) {
            self.end_segment(vp);
            self.dirty[vp.index()] = true;
        }
        self.children[child.index()] = Some(false);
        self.callback(|s, cx| {
            cx.set_involuntary(involuntary);
            s.vp_release(cx, child)
        });
        self.settle();
    }

    /// A message to the policy, answered at once, its effects applied as the
    /// dispatcher does. `from`: the sending child (a thread, whose
    /// `ThreadId` the harness makes equal to the child's index, or a child
    /// scheduler with `thread: None` — see [`Harness::message_from`]);
    /// `None`: the operator.
    pub fn message(&mut self, from: Option<ChildId>, msg: &Msg) -> Reply {
        let sender = Sender {
            thread: from.map(|c| ThreadId(c.0)),
            child: from,
        };
        self.message_from(sender, msg)
    }

    /// A message with an explicit sender.
    pub fn message_from(&mut self, sender: Sender, msg: &Msg) -> Reply {
        self.begin_event();
        let reply = self.callback(|s, cx| s.msg(cx, sender, msg));
        self.settle();
        reply
    }

    /// The parent grants the CPU on a requesting `vp` (not at the root).
    pub fn grant(&mut self, vp: ParentVp) {
        assert!(
            self.parent != Parent::Root,
            "the root's CPUs are always held"
        );
        assert_eq!(
            self.vp_state(vp),
            VpState::Requesting,
            "grant: {vp} does not request"
        );
        self.begin_event();
        self.host.vps[vp.index()] = VpState::Held(CpuId(vp.0));
        self.uses[vp.index()] = Use::None;
        self.dirty[vp.index()] = true;
        self.settle();
    }

    /// The parent takes back the CPU held on `vp` (not at the root): what ran
    /// there is charged, the VP goes back to requesting, `vp_revoke` follows.
    pub fn revoke(&mut self, vp: ParentVp) {
        assert!(
            self.parent != Parent::Root,
            "nobody revokes the root's CPUs"
        );
        let VpState::Held(cpu) = self.vp_state(vp) else {
            panic!("revoke: {vp} is not held");
        };
        self.begin_event();
        self.end_segment(vp);
        self.uses[vp.index()] = Use::None;
        self.dirty[vp.index()] = false;
        self.host.vps[vp.index()] = VpState::Requesting;
        self.callback(|s, cx| s.vp_revoke(cx, vp, cpu));
        self.settle();
    }

    /// Advances virtual time to `t`, handling every horizon, idle wake-up and
    /// timer due on the way, in time order (at one instant: horizons, then
    /// idle wake-ups, then timers by key).
    pub fn advance_to(&mut self, t: Instant) {
        assert!(t >= self.now(), "time goes forward");
        let mut same_instant = 0u32;
        while let Some(at) = self.next_due().filter(|&at| at <= t) {
            same_instant = if at == self.now() {
                same_instant + 1
            } else {
                0
            };
            assert!(
                same_instant <= DECISION_LIMIT,
                "{} keeps setting timers for {at} (livelock)",
                self.sched.policy()
            );
            self.host.now = at;
            self.begin_event();
            for i in 0..self.uses.len() {
                match self.uses[i] {
                    Use::Run(r) if r.until <= at => {
                        self.end_segment(ParentVp(i as u32));
                        self.dirty[i] = true;
                    }
                    Use::Idle(until) if until <= at => {
                        self.uses[i] = Use::None;
                        self.dirty[i] = true;
                    }
                    _ => {}
                }
            }
            self.settle();
            let due: Vec<TimerKey> = self
                .timers
                .iter()
                .filter(|&(_, &when)| when <= at)
                .map(|(&k, _)| k)
                .collect();
            for key in due {
                // An earlier timer's callback may have moved or cancelled it.
                if self.timers.get(&key).is_some_and(|&when| when <= at) {
                    self.timers.remove(&key);
                    self.callback(|s, cx| s.timer(cx, key));
                    self.settle();
                }
            }
        }
        self.host.now = t;
    }

    /// Advances virtual time by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.advance_to(self.now() + d);
    }

    /// The next time something is due, if anything is.
    pub fn next_due(&self) -> Option<Instant> {
        let uses = self.uses.iter().filter_map(|u| match u {
            Use::Run(r) if !r.until.is_never() => Some(r.until),
            Use::Idle(until) if !until.is_never() => Some(*until),
            _ => None,
        });
        uses.chain(self.timers.values().copied()).min()
    }

    /// Checks the answer a work-conserving policy owes: as many children run
    /// as there are requesting children, up to the CPUs it could get. Only
    /// meaningful with a parent that grants (`Root`, `Eager`).
    pub fn assert_work_conserving(&self) {
        let want = self.requesting().len().min(self.vp_count() as usize);
        assert_eq!(
            self.running_count(),
            want,
            "{}: at {} {} children request a CPU and {} VPs exist, but {} run",
            self.sched.policy(),
            self.now(),
            self.requesting().len(),
            self.vp_count(),
            self.running_count()
        );
    }

    // ----- the dispatcher's part ----------------------------------------------------

    fn begin_event(&mut self) {
        self.decisions_this_event = 0;
    }

    /// Calls one policy callback, applies its effects, checks invariants.
    fn callback<R>(&mut self, f: impl FnOnce(&mut S, &mut Cx) -> R) -> R {
        let (r, effects) = self.host.call(&mut *self.sched, f);
        if self.checking {
            self.check();
        }
        for e in effects {
            self.effect_log.push(e.clone());
            self.apply(e);
        }
        r
    }

    fn check_vp(&self, vp: ParentVp) {
        assert!(
            vp.index() < self.uses.len(),
            "{} used {vp}, but holds only {} VPs",
            self.sched.policy(),
            self.uses.len()
        );
    }

    fn apply(&mut self, e: Effect) {
        let now = self.now();
        match e {
            Effect::SetTimer { key, at } => {
                let at = self.quantize(at.max(now));
                self.timers.insert(key, at);
            }
            Effect::CancelTimer { key } => {
                self.timers.remove(&key);
            }
            Effect::Request(vp) => {
                self.check_vp(vp);
                self.request_vp(vp);
            }
            // The harness has no parent policy: a test reads these from the
            // effect log.
            Effect::MsgParent { vp, .. } => self.check_vp(vp),
            Effect::Release(vp) => {
                self.check_vp(vp);
                match self.host.vps[vp.index()] {
                    VpState::Idle => {}
                    VpState::Requesting => self.host.vps[vp.index()] = VpState::Idle,
                    // Answered at the next decision on it, as the dispatcher does.
                    VpState::Held(_) => self.dirty[vp.index()] = true,
                }
            }
            Effect::WantCpus(n) => {
                let n = (n as usize).min(self.uses.len());
                if self.parent == Parent::Root {
                    let declined =
                        |h: &Self, i: usize| h.uses[i] == Use::Idle(Instant::NEVER) && !h.dirty[i];
                    let busy = (0..self.uses.len()).filter(|&i| !declined(self, i)).count();
                    let mut missing = n.saturating_sub(busy);
                    for i in 0..self.uses.len() {
                        if missing == 0 {
                            break;
                        }
                        if declined(self, i) {
                            self.dirty[i] = true;
                            missing -= 1;
                        }
                    }
                } else {
                    let have = self
                        .host
                        .vps
                        .iter()
                        .filter(|v| **v != VpState::Idle)
                        .count();
                    if n > have {
                        let mut missing = n - have;
                        for i in 0..self.uses.len() {
                            if missing == 0 {
                                break;
                            }
                            if self.host.vps[i] == VpState::Idle {
                                self.host.vps[i] = VpState::Requesting;
                                missing -= 1;
                            }
                        }
                    } else {
                        let mut surplus = have - n;
                        for i in (0..self.uses.len()).rev() {
                            if surplus == 0 {
                                break;
                            }
                            if self.host.vps[i] == VpState::Requesting {
                                self.host.vps[i] = VpState::Idle;
                                surplus -= 1;
                            }
                        }
                    }
                }
            }
            Effect::Reschedule(vp) => {
                self.check_vp(vp);
                if matches!(self.host.vps[vp.index()], VpState::Held(_)) {
                    self.dirty[vp.index()] = true;
                }
            }
            Effect::Revoke(child) => {
                assert!(
                    self.is_registered(child),
                    "{} revoked {child}, which is not its child",
                    self.sched.policy()
                );
                if let Some(vp) = self.where_runs(child) {
                    self.dirty[vp.index()] = true;
                }
            }
        }
    }

    fn request_vp(&mut self, vp: ParentVp) {
        match self.parent {
            Parent::Root => {
                if self.uses[vp.index()] == Use::Idle(Instant::NEVER) {
                    self.dirty[vp.index()] = true;
                }
            }
            _ => {
                if self.host.vps[vp.index()] == VpState::Idle {
                    self.host.vps[vp.index()] = VpState::Requesting;
                }
            }
        }
    }

    /// Ends the run segment on `vp` (if any) and charges it.
    fn end_segment(&mut self, vp: ParentVp) {
        let Use::Run(r) = self.uses[vp.index()] else {
            return;
        };
        self.uses[vp.index()] = Use::None;
        let now = self.now();
        let ran = now - r.start;
        self.segments.push(Segment {
            child: r.child,
            vp,
            start: r.start,
            end: now,
        });
        if let Some(t) = self.cpu_time.get_mut(r.child.index()) {
            *t += ran;
        }
        if !ran.is_zero() {
            self.callback(|s, cx| s.charge(cx, r.child, ran));
        }
    }

    /// Re-decides dirty CPUs (lowest first) and lets an eager parent grant,
    /// until nothing is left to do.
    fn settle(&mut self) {
        loop {
            if let Some(i) = self.dirty.iter().position(|&d| d) {
                self.dirty[i] = false;
                self.decide(ParentVp(i as u32));
                continue;
            }
            if self.parent == Parent::Eager {
                if let Some(i) = self.host.vps.iter().position(|v| *v == VpState::Requesting) {
                    self.host.vps[i] = VpState::Held(CpuId(i as u32));
                    self.uses[i] = Use::None;
                    self.decide(ParentVp(i as u32));
                    continue;
                }
            }
            break;
        }
    }

    fn decide(&mut self, vp: ParentVp) {
        let VpState::Held(cpu) = self.host.vps[vp.index()] else {
            return; // released meanwhile
        };
        self.decisions_this_event += 1;
        assert!(
            self.decisions_this_event <= DECISION_LIMIT,
            "{} needs more than {DECISION_LIMIT} decisions at {} (livelock)",
            self.sched.policy(),
            self.now()
        );
        self.end_segment(vp);
        let answer = self.callback(|s, cx| s.vp_grant(cx, vp, cpu));
        self.decisions.push(Decision {
            at: self.now(),
            vp,
            dispatch: answer,
        });
        let policy = self.sched.policy();
        let now = self.now();
        match answer {
            Dispatch::Run { child, until } => {
                assert!(
                    self.is_registered(child),
                    "{policy} granted {child} on {vp} at {now}, which is not its child"
                );
                assert!(
                    self.is_requesting(child),
                    "{policy} granted {child} on {vp} at {now}, which did not request a CPU"
                );
                if let Some(other) = self.where_runs(child) {
                    panic!(
                        "{policy} granted {child} on {vp} at {now}, which already runs on {other}"
                    );
                }
                assert!(
                    until > now,
                    "{policy} answered a grant on {vp} at {now} with a past horizon {until}"
                );
                self.uses[vp.index()] = Use::Run(Running {
                    child,
                    start: now,
                    until: self.quantize(until),
                });
            }
            Dispatch::Idle { until } | Dispatch::Spin { until } => {
                assert!(
                    until > now,
                    "{policy} answered a grant on {vp} at {now} with a past horizon {until}"
                );
                let spin = matches!(answer, Dispatch::Spin { .. });
                self.uses[vp.index()] = Use::Idle(if spin { until } else { self.quantize(until) });
            }
            Dispatch::Release => {
                if self.parent == Parent::Root {
                    self.uses[vp.index()] = Use::Idle(Instant::NEVER);
                } else {
                    self.uses[vp.index()] = Use::None;
                    self.host.vps[vp.index()] = VpState::Idle;
                }
            }
        }
    }
}

/// A random step for property tests, decoded against the harness state by
/// [`Harness::step`]: indices are taken modulo whatever they pick from, and
/// a step that does not apply (waking a child that already requests, ...)
/// does nothing.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Register a child with the parameter set `n` of the test's list.
    Register(u8),
    Unregister(u8),
    Wake(u8),
    Block(u8),
    /// Grant the `n`-th requesting VP (not at the root).
    Grant(u8),
    /// Revoke the `n`-th held VP (not at the root).
    Revoke(u8),
    /// Advance time by this many microseconds.
    Advance(u32),
}

impl<S: Scheduler + ?Sized> Harness<S> {
    /// Applies one random [`Step`]; `params` are the parameter sets a
    /// `Register` step picks from (at least one).
    pub fn step(&mut self, step: Step, params: &[Params]) {
        let pick =
            |list: Vec<ChildId>, n: u8| (!list.is_empty()).then(|| list[n as usize % list.len()]);
        match step {
            Step::Register(n) => {
                let _ = self.register(&params[n as usize % params.len()]);
            }
            Step::Unregister(n) => {
                if let Some(c) = pick(self.children(), n) {
                    self.unregister(c);
                }
            }
            Step::Wake(n) => {
                let idle: Vec<ChildId> = self
                    .children()
                    .into_iter()
                    .filter(|&c| !self.is_requesting(c))
                    .collect();
                if let Some(c) = pick(idle, n) {
                    self.wake(c);
                }
            }
            Step::Block(n) => {
                if let Some(c) = pick(self.requesting(), n) {
                    self.block(c);
                }
            }
            Step::Grant(n) => {
                if self.parent == Parent::Root {
                    return;
                }
                let vps: Vec<ParentVp> = (0..self.vp_count())
                    .map(ParentVp)
                    .filter(|&v| self.vp_state(v) == VpState::Requesting)
                    .collect();
                if !vps.is_empty() {
                    self.grant(vps[n as usize % vps.len()]);
                }
            }
            Step::Revoke(n) => {
                if self.parent == Parent::Root {
                    return;
                }
                let vps: Vec<ParentVp> = (0..self.vp_count())
                    .map(ParentVp)
                    .filter(|&v| matches!(self.vp_state(v), VpState::Held(_)))
                    .collect();
                if !vps.is_empty() {
                    self.revoke(vps[n as usize % vps.len()]);
                }
            }
            Step::Advance(us) => self.advance(Duration::from_micros(u64::from(us))),
        }
    }
}

/// Proptest strategies shared by the policies' property tests.
#[cfg(test)]
pub(crate) mod strategy {
    use super::{Parent, Step};
    use proptest::prelude::*;

    /// A random step; time advances by up to 30ms.
    pub fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            2 => any::<u8>().prop_map(Step::Register),
            1 => any::<u8>().prop_map(Step::Unregister),
            4 => any::<u8>().prop_map(Step::Wake),
            3 => any::<u8>().prop_map(Step::Block),
            2 => any::<u8>().prop_map(Step::Grant),
            1 => any::<u8>().prop_map(Step::Revoke),
            3 => (0u32..30_000).prop_map(Step::Advance),
        ]
    }

    pub fn parent() -> impl Strategy<Value = Parent> {
        prop_oneof![
            Just(Parent::Root),
            Just(Parent::Manual),
            Just(Parent::Eager)
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest possible policy, to test the harness itself: runs child 0
    /// whenever it requests, on any VP, and rejects nothing.
    struct One {
        requesting: bool,
        running: Option<ParentVp>,
    }

    impl Scheduler for One {
        fn policy(&self) -> &'static str {
            "one"
        }
        fn register_vp(&mut self, _: &mut Cx, _: ChildId, _: &Params) -> Result<(), Reject> {
            Ok(())
        }
        fn unregister_vp(&mut self, _: &mut Cx, _: ChildId) {}
        fn vp_request(&mut self, cx: &mut Cx, _: ChildId) {
            self.requesting = true;
            cx.want_cpus(1);
        }
        fn vp_release(&mut self, cx: &mut Cx, _: ChildId) {
            self.requesting = false;
            self.running = None;
            cx.want_cpus(0);
        }
        fn vp_grant(&mut self, _: &mut Cx, vp: ParentVp, _: CpuId) -> Dispatch {
            if self.running == Some(vp) {
                self.running = None;
            }
            if self.requesting && self.running.is_none() {
                self.running = Some(vp);
                Dispatch::Run {
                    child: ChildId(0),
                    until: Instant::NEVER,
                }
            } else {
                Dispatch::Release
            }
        }
    }

    #[test]
    fn host_collects_effects() {
        let host = Host::new(2);
        let mut one = One {
            requesting: false,
            running: None,
        };
        let ((), effects) = host.call(&mut one, |s, cx| s.vp_request(cx, ChildId(0)));
        assert_eq!(effects, vec![Effect::WantCpus(1)]);
    }

    #[test]
    fn eager_parent_grants_and_charges() {
        let one = One {
            requesting: false,
            running: None,
        };
        let mut h = Harness::new(Box::new(one), 1, Parent::Eager);
        let c = h.register(&Params::new()).unwrap();
        h.wake(c);
        assert_eq!(h.running_on(ParentVp(0)), Some(c));
        h.advance(Duration::from_millis(3));
        h.block(c);
        assert_eq!(h.cpu_time(c), Duration::from_millis(3));
        assert_eq!(h.vp_state(ParentVp(0)), VpState::Idle);
    }

    #[test]
    #[should_panic(expected = "did not request")]
    fn rejects_a_run_of_a_child_that_does_not_request() {
        let one = One {
            requesting: true,
            running: None,
        };
        let mut h = Harness::new(Box::new(one), 1, Parent::Root);
        h.register(&Params::new()).unwrap();
        // The policy believes child 0 requests; the harness knows it does not.
        h.take_effects();
        h.apply(Effect::WantCpus(1));
        h.settle();
    }
}
