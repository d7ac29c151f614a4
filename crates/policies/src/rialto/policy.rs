//! `rialto`: the Rialto scheduler as a policy — CPU reservations on a
//! precomputed scheduling graph plus time constraints, over the building
//! blocks [`super::graph`] and [`super::constraints`].
//!
//! **Source.** Jones, Roşu & Roşu, "CPU Reservations and Time Constraints"
//! (SOSP '97): §2.3 (reservations per activity), §2.4 (time constraints),
//! §3 (the scheduling graph, interval assignment, EDF in assigned time,
//! round robin within an activity and for the rest) and §4.6 (the order in
//! which the dispatcher looks for a thread).
//!
//! **Children and messages.** A child (a thread) attaches with `activity`
//! (a string; empty or absent: the thread is an activity of its own).
//! Threads of one activity share its reservation. A thread sends:
//! - `reserve { amount, period }`: reserve for its activity; replies
//!   `Ok { amount, period, rebuilt }` with the grant (the period scaled down
//!   to `base * 2^k`, the amount scaled with it, rounded up), or `Err` with
//!   the graph's refusal (over capacity, period too short, ...);
//! - `release`: drops its activity's reservation (`Ok { amount, period }`);
//! - `begin_constraint { start, estimate, deadline, critical, relative }`:
//!   `start` and `deadline` are instants (time since 0; with `relative =
//!   true`, from now), `start` defaults to now; replies `Ok { id, start,
//!   deadline, estimate }` or `Err` saying how much could be found;
//! - `end_constraint`: ends the thread's innermost constraint; replies
//!   `Ok { taken, released }` (`taken`: the CPU time the thread received
//!   while the constraint was in effect).
//!
//! When the graph changes (`reserve`, `release`, the last thread of a
//! reserved activity leaving) the constraint book is rebuilt over the new
//! graph and the open constraints are carried over by re-admitting each
//! (in id order, so outer before inner) with what it has not yet received
//! and its remaining window; one that no longer fits is dropped (its
//! `end_constraint` then answers `Err`).
//!
//! **Decisions (§4.6).** Base period `i` starts at the absolute instant
//! `i * base`; the current interval is the graph interval (switch + run) of
//! [`Graph::period`]`(now / base)` that holds `now` (without a base period
//! everything is one free interval). On the *graph VP* (`ParentVp(0)`):
//! 1. among the constraints owning assigned time in the current interval,
//!    earliest deadline first, one whose thread waits, whose effective start
//!    has come, that has not received its guaranteed time and has not yet
//!    used its share of this interval: it runs until it has used that share
//!    (or the interval ends);
//! 2. otherwise, the interval's activity's waiting threads, round robin,
//!    for at most `quantum`;
//! 3. otherwise (free interval, or nothing of the activity waits), every
//!    waiting child, round robin, for at most `quantum`.
//!
//! Every horizon is cut at the end of the current interval, so each
//! interval boundary re-decides. A waking child that outranks what the
//! graph VP runs preempts it; a timer at a constraint's future start does
//! too. Other VPs run plain round robin with `quantum`. The policy is work
//! conserving: it answers `Release` only when nothing waits.
//!
//! **Guarantee.** Holding one CPU through `ParentVp(0)` without a platform
//! tick: an activity granted `(X', Y')` one of whose threads is waiting or
//! running on that CPU at every instant of its intervals receives, in every
//! window `[T, T + Y')`, at least `X'` of CPU time minus the real context
//! switch cost in excess of the configured `switch_cost` at the start of each
//! of its intervals (the graph reserves `switch_cost + run` per interval and
//! the whole interval goes to the activity's threads, the constraints of the
//! same activity included, since assigned pieces in an activity's interval
//! are that activity's). An accepted constraint whose thread stays runnable
//! from its effective start to its deadline receives its guaranteed time by
//! its deadline: in each interval where it owns `p` of assigned time it
//! runs `p` ahead of anything else there (the pieces in one interval fit in
//! its run part), and its pieces add up to the guaranteed time inside its
//! window. With a tick, each interval may start up to one tick late (a
//! horizon takes effect at the next tick).
//!
//! **Limits.** Only `ParentVp(0)` follows the graph: on several CPUs the
//! other VPs are plain round robin (a reserved thread gets at least its
//! guarantee, possibly more), and if the parent never grants `ParentVp(0)`
//! nothing is guaranteed. Not done yet: the second-chance queue for
//! constraints that overran their estimate (§4.5), constraint inheritance
//! across mutexes and RPCs (§4.2; [`super::inherit`] is not wired in), the
//! activity's own round robin ignores which thread owns assigned time,
//! `activity` cannot be an integer (a child parameter has one kind; use a
//! string), no admission control at `register_vp`. Selection scans the
//! children: `O(n)` per decision.

use std::collections::BTreeMap;

use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Reply, Scheduler, Sender, TimerKey, Value, VpState,
};

use super::constraints::{ConstraintId, ConstraintInfo, Constraints, Request};
use super::graph::{Graph, GraphParams};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "rialto",
    summary: "Rialto: CPU reservations on a precomputed graph, time constraints EDF, round robin",
    doc: "Jones, Rosu & Rosu (SOSP '97). Threads attach with `activity`; message \
          `reserve { amount, period }` reserves for the activity on a precomputed \
          scheduling graph (refused with the reason if it does not fit), `release` drops \
          it, `begin_constraint { start, estimate, deadline, critical }` / \
          `end_constraint` run time constraints EDF in assigned time. The first VP \
          follows the graph (constraints, then the interval's activity round robin, then \
          everyone round robin with `quantum`); other VPs are round robin. Limits: no \
          second-chance queue, no inheritance yet.",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// The default round-robin quantum.
pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);

/// The VP that follows the graph.
const GRAPH_VP: ParentVp = ParentVp(0);

fn dur(min: Duration) -> ParamKind {
    ParamKind::Duration { min }
}

fn params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "base_period",
            dur(Duration::ZERO),
            "fixed base period of the graph (0: the smallest requested period)",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "switch_cost",
            dur(Duration::ZERO),
            "context-switch cost reserved in front of every interval",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "min_interval",
            dur(Duration::ZERO),
            "shortest interval (and granted amount)",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "quantum",
            dur(Duration::from_nanos(1)),
            "round-robin slice within an activity and for free time",
        )
        .with_default(Value::Duration(DEFAULT_QUANTUM)),
        ParamSpec::new(
            "horizon",
            dur(Duration::from_nanos(1)),
            "constraint windows are judged up to now + horizon",
        )
        .with_default(Value::Duration(Duration::from_secs(1))),
    ]
}

fn child_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "activity",
        ParamKind::Str,
        "the activity whose reservation the thread shares (empty: its own)",
    )
    .with_default(Value::Str(String::new()))]
}

fn reserve_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new("amount", dur(Duration::ZERO), "CPU time per period"),
        ParamSpec::new("period", dur(Duration::ZERO), "the period"),
    ]
}

fn begin_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new("start", dur(Duration::ZERO), "earliest start (default now)")
            .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new("estimate", dur(Duration::ZERO), "CPU time needed"),
        ParamSpec::new("deadline", dur(Duration::ZERO), "deadline"),
        ParamSpec::new("critical", ParamKind::Bool, "critical constraint (§4.3)")
            .with_default(Value::Bool(false)),
        ParamSpec::new(
            "relative",
            ParamKind::Bool,
            "start and deadline count from now",
        )
        .with_default(Value::Bool(false)),
    ]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let base = params.duration("base_period");
    let mut gp = GraphParams::paper(params.duration("switch_cost"));
    gp.base_period = (!base.is_zero()).then_some(base);
    gp.min_interval = params.duration("min_interval");
    Ok(Box::new(Rialto::new(
        gp,
        params.duration("quantum"),
        params.duration("horizon"),
    )))
}

/// An activity: an index into the policy's table.
pub type Activity = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Waiting,
    Running(ParentVp),
}

#[derive(Clone, Debug)]
struct Child {
    state: State,
    activity: Activity,
    /// Round-robin order: the smallest waiting turn goes first.
    turn: u64,
    /// Start of its current run segment (or its last charge).
    since: Instant,
    /// Part of the current segment already counted by `end_constraint`.
    flushed: Duration,
}

/// Why a child runs, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    Constraint(ConstraintId),
    Activity,
    Free,
}

impl Tier {
    fn rank(self) -> u8 {
        match self {
            Tier::Constraint(_) => 0,
            Tier::Activity => 1,
            Tier::Free => 2,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    child: ChildId,
    tier: Tier,
    /// Start of the graph interval it was chosen in.
    interval: Instant,
}

/// CPU time of an open constraint.
#[derive(Clone, Copy, Debug, Default)]
struct Served {
    /// Since its `begin_constraint` (the `taken` of `end_constraint`).
    taken: Duration,
    /// Since it was last admitted (compared with its guaranteed time).
    since_admitted: Duration,
}

/// The Rialto policy. See the module documentation.
pub struct Rialto {
    quantum: Duration,
    horizon: Duration,
    book: Constraints<Activity, ChildId>,
    children: ChildMap<Child>,
    on_vp: Vec<Option<Slot>>,
    runnable: u32,
    seq: u64,
    names: BTreeMap<String, Activity>,
    /// Threads per activity (activities with none are forgotten).
    members: BTreeMap<Activity, u32>,
    next_activity: Activity,
    next_constraint: u64,
    served: BTreeMap<ConstraintId, Served>,
    /// Constraint time used in the interval that starts at `.0`.
    used_in: (Instant, BTreeMap<ConstraintId, Duration>),
}

impl Rialto {
    /// An empty instance.
    pub fn new(graph: GraphParams, quantum: Duration, horizon: Duration) -> Self {
        Rialto {
            quantum,
            horizon,
            book: Constraints::new(Graph::new(graph), horizon),
            children: ChildMap::new(),
            on_vp: Vec::new(),
            runnable: 0,
            seq: 0,
            names: BTreeMap::new(),
            members: BTreeMap::new(),
            next_activity: 0,
            next_constraint: 0,
            served: BTreeMap::new(),
            used_in: (Instant::ZERO, BTreeMap::new()),
        }
    }

    /// The graph the walk follows.
    pub fn graph(&self) -> &Graph<Activity> {
        self.book.graph()
    }

    /// The constraint book.
    pub fn constraints(&self) -> &Constraints<Activity, ChildId> {
        &self.book
    }

    /// The activity of `child`.
    pub fn activity_of(&self, child: ChildId) -> Option<Activity> {
        self.children.get(child).map(|c| c.activity)
    }

    /// The graph interval holding `now`: `(start, end, activity)`.
    pub fn interval_at(&self, now: Instant) -> (Instant, Instant, Option<Activity>) {
        let Some(base) = self.graph().base_period().map(|b| b.0) else {
            return (Instant::ZERO, Instant::NEVER, None);
        };
        let i = now.0 / base;
        let t0 = i * base;
        let off = now.0 - t0;
        let mut acc = 0;
        for iv in self.graph().period(i) {
            let len = iv.len().0;
            if off < acc + len {
                return (Instant(t0 + acc), Instant(t0 + acc + len), iv.activity);
            }
            acc += len;
        }
        (Instant(t0 + acc.min(off)), Instant(t0 + base), None)
    }

    /// What constraint `c` may still run in the interval `[start, end)`.
    fn available(&self, c: ConstraintId, now: Instant, start: Instant, end: Instant) -> Duration {
        let Some(info) = self.book.get(c) else {
            return Duration::ZERO;
        };
        if info.start > now || self.book.current(info.thread) != Some(c) {
            return Duration::ZERO;
        }
        let served = self.served.get(&c).copied().unwrap_or_default();
        let used = if self.used_in.0 == start {
            self.used_in.1.get(&c).copied().unwrap_or_default()
        } else {
            Duration::ZERO
        };
        let share = self
            .book
            .assigned_between(c, start, end)
            .saturating_sub(used);
        share.min(info.guaranteed.saturating_sub(served.since_admitted))
    }

    /// The best waiting constraint thread in the interval, with the time it may run.
    fn best_constraint(
        &self,
        now: Instant,
        start: Instant,
        end: Instant,
    ) -> Option<(ChildId, ConstraintId, Duration)> {
        self.book
            .assigned_in(start, end)
            .into_iter()
            .find_map(|(c, _)| {
                let thread = self.book.get(c)?.thread;
                if self.children.get(thread)?.state != State::Waiting {
                    return None;
                }
                let left = self.available(c, now, start, end);
                (!left.is_zero()).then_some((thread, c, left))
            })
    }

    /// The waiting child first in round-robin order, of `activity` if given.
    fn next_rr(&self, activity: Option<Activity>) -> Option<ChildId> {
        self.children
            .iter()
            .filter(|(_, c)| c.state == State::Waiting)
            .filter(|(_, c)| activity.is_none_or(|a| a == c.activity))
            .min_by_key(|(_, c)| c.turn)
            .map(|(id, _)| id)
    }

    /// The best tier any waiting child could get on the graph VP now.
    fn best_waiting_rank(&self, now: Instant) -> Option<u8> {
        let (start, end, act) = self.interval_at(now);
        if self.best_constraint(now, start, end).is_some() {
            return Some(0);
        }
        if act.is_some() && self.next_rr(act).is_some() {
            return Some(1);
        }
        self.next_rr(None).map(|_| 2)
    }

    /// Re-decide the graph VP if a waiting child outranks what runs there.
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        if !matches!(cx.vp_state(GRAPH_VP), VpState::Held(_)) {
            return;
        }
        let Some(Some(slot)) = self.on_vp.get(GRAPH_VP.index()) else {
            return;
        };
        let now = cx.now();
        let (start, _, _) = self.interval_at(now);
        // A slot chosen in an earlier interval is re-decided by its horizon.
        if slot.interval != start {
            return;
        }
        if self
            .best_waiting_rank(now)
            .is_some_and(|r| r < slot.tier.rank())
        {
            cx.reschedule(GRAPH_VP);
        }
    }

    /// Whatever ran on `vp` stopped.
    fn stop(&mut self, vp: ParentVp) {
        if let Some(slot) = self.on_vp.get_mut(vp.index()).and_then(Option::take) {
            if let Some(c) = self.children.get_mut(slot.child) {
                if c.state == State::Running(vp) {
                    c.state = State::Waiting;
                }
            }
        }
    }

    /// The child leaves the runnable set.
    fn forget_runnable(&mut self, child: ChildId) {
        let c = &mut self.children[child];
        if let State::Running(vp) = c.state {
            self.on_vp[vp.index()] = None;
        }
        if c.state != State::Idle {
            c.state = State::Idle;
            self.runnable -= 1;
        }
    }

    /// Replaces the graph: a new book, open constraints re-admitted.
    fn set_graph(&mut self, cx: &mut Cx, graph: Graph<Activity>) {
        let now = cx.now();
        let old = std::mem::replace(&mut self.book, Constraints::new(graph, self.horizon));
        let mut open: Vec<ConstraintInfo<Activity, ChildId>> = old.open().copied().collect();
        open.sort_by_key(|i| i.id);
        for info in open {
            let served = self.served.get(&info.id).copied().unwrap_or_default();
            let req = Request {
                start: info.start.max(now),
                estimate: info.guaranteed.saturating_sub(served.since_admitted),
                deadline: info.deadline,
                critical: info.critical,
            };
            if self
                .book
                .begin(now, info.activity, info.thread, info.id, req)
                .is_ok()
            {
                if let Some(s) = self.served.get_mut(&info.id) {
                    s.since_admitted = Duration::ZERO;
                }
            } else {
                self.served.remove(&info.id);
                cx.cancel_timer(timer_key(info.id));
            }
        }
        self.used_in.1.clear();
        if matches!(cx.vp_state(GRAPH_VP), VpState::Held(_)) {
            cx.reschedule(GRAPH_VP);
        }
    }

    fn reserve(&mut self, cx: &mut Cx, child: ChildId, args: &Params) -> Result<Params, String> {
        let args = args.resolve(&reserve_params())?;
        let activity = self.children[child].activity;
        let mut graph = self.graph().clone();
        let g = graph
            .reserve(activity, args.duration("amount"), args.duration("period"))
            .map_err(|r| format!("reservation refused: {r}"))?;
        self.set_graph(cx, graph);
        Ok(Params::new()
            .with("amount", Value::Duration(g.reservation.amount))
            .with("period", Value::Duration(g.reservation.period))
            .with("rebuilt", Value::Bool(g.rebuilt)))
    }

    fn release(&mut self, cx: &mut Cx, activity: Activity) -> Result<Params, String> {
        let mut graph = self.graph().clone();
        let r = graph
            .release(activity)
            .ok_or_else(|| "the sender's activity holds no reservation".to_string())?;
        self.set_graph(cx, graph);
        Ok(Params::new()
            .with("amount", Value::Duration(r.amount))
            .with("period", Value::Duration(r.period)))
    }

    fn begin(&mut self, cx: &mut Cx, child: ChildId, args: &Params) -> Result<Params, String> {
        let args = args.resolve(&begin_params())?;
        let now = cx.now();
        let (s, d) = (args.duration("start"), args.duration("deadline"));
        let (start, deadline) = if args.bool("relative") {
            (now.saturating_add(s), now.saturating_add(d))
        } else {
            (Instant(s.0), Instant(d.0))
        };
        if deadline <= now.max(start) {
            return Err(format!(
                "the deadline ({deadline}) is not after the start ({})",
                now.max(start)
            ));
        }
        let id = ConstraintId(self.next_constraint);
        let activity = self.children[child].activity;
        let req = Request {
            start,
            estimate: args.duration("estimate"),
            deadline,
            critical: args.bool("critical"),
        };
        let acc = self
            .book
            .begin(now, activity, child, id, req)
            .map_err(|e| format!("constraint refused: {e}"))?;
        self.next_constraint += 1;
        self.served.insert(id, Served::default());
        if acc.start > now {
            cx.set_timer(timer_key(id), acc.start);
        }
        self.preempt_if_needed(cx);
        Ok(Params::new()
            .with("id", Value::Int(id.0 as i64))
            .with("start", Value::Duration(Duration(acc.start.0)))
            .with("deadline", Value::Duration(Duration(acc.deadline.0)))
            .with("estimate", Value::Duration(acc.estimate)))
    }

    fn end(&mut self, cx: &mut Cx, child: ChildId) -> Result<Params, String> {
        let id = self
            .book
            .current(child)
            .ok_or_else(|| "the sender has no open constraint".to_string())?;
        // Count the part of the running segment not charged yet.
        let now = cx.now();
        let c = &mut self.children[child];
        if matches!(c.state, State::Running(_)) {
            let extra = (now - c.since).saturating_sub(c.flushed);
            c.flushed += extra;
            if let Some(s) = self.served.get_mut(&id) {
                s.taken += extra;
                s.since_admitted += extra;
            }
        }
        let taken = self.served.remove(&id).unwrap_or_default().taken;
        let ended = self
            .book
            .end(id, cx.now(), taken)
            .map_err(|e| format!("{e:?}"))?;
        cx.cancel_timer(timer_key(id));
        if let Some(Some(slot)) = self.on_vp.get(GRAPH_VP.index()) {
            if slot.tier == Tier::Constraint(id)
                && matches!(cx.vp_state(GRAPH_VP), VpState::Held(_))
            {
                cx.reschedule(GRAPH_VP);
            }
        }
        Ok(Params::new()
            .with("taken", Value::Duration(ended.taken))
            .with("released", Value::Duration(ended.released)))
    }

    /// Ends every open constraint of `child`, innermost first.
    fn end_all(&mut self, cx: &mut Cx, child: ChildId) {
        while let Some(id) = self.book.current(child) {
            let taken = self.served.remove(&id).unwrap_or_default().taken;
            let _ = self.book.end(id, cx.now(), taken);
            cx.cancel_timer(timer_key(id));
        }
    }
}

fn timer_key(id: ConstraintId) -> TimerKey {
    id.0 + 1
}

fn activity_name(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::Str(s)) if !s.is_empty() => Some(format!("s:{s}")),
        Some(Value::Int(i)) => Some(format!("i:{i}")),
        _ => None,
    }
}

impl Scheduler for Rialto {
    fn policy(&self) -> &'static str {
        "rialto"
    }

    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let activity = match activity_name(params.get("activity")) {
            Some(name) => match self.names.get(&name) {
                Some(&a) => a,
                None => {
                    let a = self.next_activity;
                    self.next_activity += 1;
                    self.names.insert(name, a);
                    a
                }
            },
            None => {
                let a = self.next_activity;
                self.next_activity += 1;
                a
            }
        };
        *self.members.entry(activity).or_default() += 1;
        self.children.insert(
            child,
            Child {
                state: State::Idle,
                activity,
                turn: 0,
                since: Instant::ZERO,
                flushed: Duration::ZERO,
            },
        );
        Ok(())
    }

    /// A child leaves: its constraints end; the last thread of an activity
    /// takes the activity's reservation with it.
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(c) = self.children.get(child) else {
            return;
        };
        let activity = c.activity;
        if c.state != State::Idle {
            self.forget_runnable(child);
            cx.want_cpus(self.runnable);
        }
        self.end_all(cx, child);
        self.children.remove(child);
        let m = self.members.entry(activity).or_default();
        *m -= 1;
        if *m == 0 {
            self.members.remove(&activity);
            self.names.retain(|_, a| *a != activity);
            if self.graph().granted(activity).is_some() {
                let mut graph = self.graph().clone();
                graph.release(activity);
                self.set_graph(cx, graph);
            }
        }
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        c.state = State::Waiting;
        self.seq += 1;
        c.turn = self.seq;
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        self.preempt_if_needed(cx);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state != State::Idle {
            self.forget_runnable(child);
            cx.want_cpus(self.runnable);
        }
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
        }
        self.stop(vp);
        let (start, end, act) = self.interval_at(now);
        let pick = if vp == GRAPH_VP {
            if let Some((child, c, left)) = self.best_constraint(now, start, end) {
                Some((
                    child,
                    Tier::Constraint(c),
                    now.saturating_add(left).min(end),
                ))
            } else {
                let slice = now.saturating_add(self.quantum).min(end);
                match act.and_then(|a| self.next_rr(Some(a))) {
                    Some(child) => Some((child, Tier::Activity, slice)),
                    None => self.next_rr(None).map(|child| (child, Tier::Free, slice)),
                }
            }
        } else {
            self.next_rr(None)
                .map(|child| (child, Tier::Free, now.saturating_add(self.quantum)))
        };
        let Some((child, tier, until)) = pick else {
            return Dispatch::Release;
        };
        let c = &mut self.children[child];
        c.state = State::Running(vp);
        c.since = now;
        c.flushed = Duration::ZERO;
        // Only a round-robin turn of free time sends a child to the back;
        // reserved and assigned time does not cost it its place.
        if tier == Tier::Free {
            self.seq += 1;
            c.turn = self.seq;
        }
        self.on_vp[vp.index()] = Some(Slot {
            child,
            tier,
            interval: start,
        });
        if vp != GRAPH_VP {
            self.preempt_if_needed(cx);
        }
        Dispatch::Run { child, until }
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp);
        self.preempt_if_needed(cx);
    }

    /// Time goes to the thread's constraint in effect (for `taken` and the
    /// guaranteed time) and, on the graph VP, to its share of the interval.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        let fresh = ran.saturating_sub(c.flushed);
        c.flushed = Duration::ZERO;
        c.since = cx.now();
        let c = &self.children[child];
        if let Some(id) = self.book.current(child) {
            let s = self.served.entry(id).or_default();
            s.taken += fresh;
            s.since_admitted += fresh;
        }
        let State::Running(vp) = c.state else {
            return;
        };
        if let Some(Some(slot)) = self.on_vp.get(vp.index()) {
            if let Tier::Constraint(id) = slot.tier {
                if self.used_in.0 != slot.interval {
                    self.used_in = (slot.interval, BTreeMap::new());
                }
                let u = self.used_in.1.entry(id).or_default();
                *u += ran;
            }
        }
    }

    fn timer(&mut self, cx: &mut Cx, _key: TimerKey) {
        self.preempt_if_needed(cx);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        let name = msg.name.as_str();
        if !matches!(
            name,
            "reserve" | "release" | "begin_constraint" | "end_constraint"
        ) {
            return Reply::unknown(self.policy(), msg);
        }
        let Some(child) = from.child.filter(|&c| self.children.contains(c)) else {
            return Reply::Err(format!(
                "rialto: `{name}` must come from a thread attached to this scheduler"
            ));
        };
        let result = match name {
            "reserve" => self.reserve(cx, child, &msg.args),
            "release" => self.release(cx, self.children[child].activity),
            "begin_constraint" => self.begin(cx, child, &msg.args),
            _ => self.end(cx, child),
        };
        match result {
            Ok(args) => Reply::Ok(args),
            Err(e) => Reply::Err(format!("rialto: `{name}` refused: {e}")),
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        let mut runnable = 0;
        let mut members: BTreeMap<Activity, u32> = BTreeMap::new();
        for (id, c) in self.children.iter() {
            *members.entry(c.activity).or_default() += 1;
            match c.state {
                State::Idle => {}
                State::Waiting => runnable += 1,
                State::Running(vp) => {
                    runnable += 1;
                    match self.on_vp.get(vp.index()).copied().flatten() {
                        Some(s) if s.child == id => {}
                        other => {
                            return Err(format!("{id} runs on {vp} but the slot holds {other:?}"))
                        }
                    }
                }
            }
        }
        if runnable != self.runnable {
            return Err(format!(
                "runnable count {} but {runnable} children are runnable",
                self.runnable
            ));
        }
        for (i, slot) in self.on_vp.iter().enumerate() {
            if let Some(s) = slot {
                let ok = self
                    .children
                    .get(s.child)
                    .is_some_and(|c| c.state == State::Running(ParentVp(i as u32)));
                if !ok {
                    return Err(format!(
                        "slot of vp{i} names {} which does not run there",
                        s.child
                    ));
                }
                if i != GRAPH_VP.index() && s.tier != Tier::Free {
                    return Err(format!("vp{i} is not the graph VP but runs {:?}", s.tier));
                }
            }
        }
        if members != self.members {
            return Err(format!(
                "activity members {:?} do not match the children {members:?}",
                self.members
            ));
        }
        for (a, _) in self.graph().grants() {
            if !self.members.contains_key(&a) {
                return Err(format!(
                    "activity {a} holds a reservation but has no thread"
                ));
            }
        }
        for (name, a) in &self.names {
            if !self.members.contains_key(a) {
                return Err(format!("activity {name} ({a}) is named but has no thread"));
            }
        }
        for info in self.book.open() {
            match self.children.get(info.thread) {
                Some(c) if c.activity == info.activity => {}
                _ => {
                    return Err(format!(
                        "constraint {} belongs to {} which is not attached with activity {}",
                        info.id, info.thread, info.activity
                    ))
                }
            }
            if !self.served.contains_key(&info.id) {
                return Err(format!("constraint {} has no accounting", info.id));
            }
        }
        if self.served.len() != self.book.open().count() {
            return Err("accounting kept for a closed constraint".into());
        }
        self.graph().check_invariants()?;
        self.book.check_invariants()
    }
}
