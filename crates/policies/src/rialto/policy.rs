//! `rialto`: the Rialto scheduler as a policy — CPU reservations on a
//! precomputed scheduling graph plus time constraints, over the building
//! blocks [`super::graph`] and [`super::constraints`].
//!
//! **Source.** Jones, Roşu & Roşu, "CPU Reservations and Time Constraints"
//! (SOSP '97): §2.3 (reservations per activity), §2.4 (time constraints),
//! §3 (the scheduling graph, interval assignment, EDF in assigned time,
//! round robin within an activity and among activities for the rest), §4.2
//! (constraint inheritance across mutexes), §4.5 (the second-chance queue)
//! and §4.6 (next-thread selection, rules 1–5; in `select.rs`).
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
//!   while the constraint was in effect). A refused (infeasible)
//!   `begin_constraint` stays *pending as denied* until the thread's next
//!   `end_constraint`, which then answers `Ok { taken, released: 0,
//!   denied: true }`;
//! - `lock { mutex }` (an integer): takes a free mutex (`Err` if held: the
//!   thread should then send `block_on` and block); `block_on { mutex }`:
//!   the thread waits for the mutex's holder (`Err` on a free mutex or a
//!   wait-for cycle); `unlock { mutex }`: releases it, handing it to the
//!   first waiter (`Ok { handed_over }`). The simulator's own mutexes are
//!   not visible to a policy: these messages mirror them.
//!
//! When the graph changes (`reserve`, `release`, the last thread of a
//! reserved activity leaving) the constraint book is rebuilt over the new
//! graph and the open constraints are carried over by re-admitting each
//! (in id order, so outer before inner) with what it has not yet received
//! and its remaining window; one that no longer fits is dropped (its
//! `end_constraint` then answers `Err`).
//!
//! **Decisions (§4.6).** Base period `i` starts at the absolute instant
//! `i * base`; a *node* is the graph interval (switch + run) of
//! [`Graph::period`]`(now / base)` that holds `now` (without a base period
//! everything is one free node). On the *graph VP* (`ParentVp(0)`), the
//! paper's rules in order:
//! 1. with less than `threshold` left in the node, the next node is used;
//! 2. among the constraints owning assigned time in the node, earliest
//!    deadline first, one whose effective start has come, that has not
//!    received its guaranteed time and not yet used its share of the node,
//!    and whose thread waits — or is blocked on a mutex and the thread at
//!    the end of its inheritance chain waits (§4.2): that thread runs until
//!    the share is used, the node ends, or it unlocks;
//! 3. in a node reserved for an activity, a waiting thread of it: threads
//!    with pending denied constraints, then threads with late constraints
//!    (guaranteed time used, or past the deadline; both earliest deadline
//!    first), then round robin; for at most `quantum`;
//! 4. an activity of the second-chance queue with a waiting thread, chosen
//!    the same way, for at most what it has left to make up;
//! 5. the round-robin queue of activities (the first with a waiting thread
//!    goes to the back), a thread chosen the same way, for `quantum`.
//!
//! A thread picked in steps 3–5 goes to the back of its activity's round
//! robin. The second-chance queue (§4.5): when an activity's last runnable
//! thread releases during a node reserved for it (graph VP held), the rest
//! of the node is recorded as lost, valid until the activity's next node
//! starts; waking inside the same node takes back what is left of it; time
//! run in step 4 pays it off.
//!
//! Every horizon is cut at the end of the current node, so each node
//! boundary re-decides. A waking child that outranks (by rule) what the
//! graph VP runs preempts it; a timer at a constraint's future start does
//! too; `block_on` re-decides. Other VPs use rule 5 alone with `quantum`. The policy is work
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
//! window. Both hold with `threshold = 0` (the default); a positive
//! `threshold` may give up to `threshold` of each node to the next node's
//! choice (rule 1). Inherited runs (§4.2) use only the waiter's constraint's
//! own pieces. With a tick, each interval may start up to one tick late (a
//! horizon takes effect at the next tick).
//!
//! **Implemented.** §3 graph and interval assignment, §4.3 criticality,
//! §4.4 nesting (in [`super::constraints`]); §4.6 rules 1–5; §4.5 second
//! chance; §4.2 inheritance across mutexes reported by message.
//!
//! **Limits.** Only `ParentVp(0)` follows the graph: on several CPUs the
//! other VPs use free-time round robin (a reserved thread gets at least its
//! guarantee, possibly more), and if the parent never grants `ParentVp(0)`
//! nothing is guaranteed. Not done: RPC inheritance (§4.2; the building
//! block has `call`/`reply` but no message drives them); inheritance for a
//! blocked thread *without* a constraint whose activity has nothing else
//! runnable (only constrained waiters pass their time on); the chain is
//! walked on every decision without path compression (the building block's
//! `runs_for` needs `&mut`); a thread that leaves while blocked keeps the
//! mutexes it holds in the inheritance book (others it holds are handed
//! on); rule 3's preference for denied/late threads acts at decisions and
//! does not preempt; the second-chance record is the rest of the node at
//! the block, not time actually displaced; `activity` cannot be an integer
//! (a child parameter has one kind; use a string), no admission control at
//! `register_vp`. Selection scans the children: `O(n)` per decision.
//!
use std::collections::BTreeMap;

use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Reply, Scheduler, Sender, TimerKey, Value, VpState,
};

use super::constraints::{ConstraintId, ConstraintInfo, Constraints, Rejected, Request};
use super::graph::{Graph, GraphParams};
use super::inherit::Inheritance;

#[path = "select.rs"]
mod select;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "rialto",
    summary: "Rialto: CPU reservations on a precomputed graph, time constraints EDF, round robin",
    doc: "Jones, Rosu & Rosu (SOSP '97). Threads attach with `activity`; message \
          `reserve { amount, period }` reserves for the activity on a precomputed \
          scheduling graph (refused with the reason if it does not fit), `release` drops \
          it, `begin_constraint { start, estimate, deadline, critical }` / \
          `end_constraint` run time constraints EDF in assigned time; `lock`, `unlock`, \
          `block_on { mutex }` report mutexes so holders inherit waiters' constraints. \
          The first VP follows the graph by the paper's §4.6 rules (next node under \
          `threshold`, EDF constraint, the node's activity, the second-chance queue, \
          round robin of activities with `quantum`); other VPs are activity round \
          robin. Limits: no RPC inheritance.",
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
        ParamSpec::new(
            "threshold",
            dur(Duration::ZERO),
            "§4.6 rule 1: with less than this left in a node, select the next node",
        )
        .with_default(Value::Duration(Duration::ZERO)),
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

fn mutex_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "mutex",
        ParamKind::Int {
            min: i64::MIN,
            max: i64::MAX,
        },
        "the mutex (any integer naming it among the scheduler's threads)",
    )]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let base = params.duration("base_period");
    let mut gp = GraphParams::paper(params.duration("switch_cost"));
    gp.base_period = (!base.is_zero()).then_some(base);
    gp.min_interval = params.duration("min_interval");
    let mut r = Rialto::new(gp, params.duration("quantum"), params.duration("horizon"));
    r.threshold = params.duration("threshold");
    Ok(Box::new(r))
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
    /// Its name in the inheritance graph (child ids are reused, serials not).
    serial: u64,
    /// Mutexes it holds (§4.2).
    holds: std::collections::BTreeSet<i64>,
}

/// A refused `begin_constraint` still pending (§4.6 rule 3 (1)).
#[derive(Clone, Copy, Debug)]
struct Denied {
    id: ConstraintId,
    deadline: Instant,
    taken: Duration,
}

/// An entry of the second-chance queue (§4.5).
#[derive(Clone, Copy, Debug)]
struct SecondChance {
    /// Reserved time it failed to run by blocking, not made up yet.
    lost: Duration,
    /// The start of its next node: the entry is void from then on.
    expires: Instant,
    /// When it was queued (the queue's order).
    since: Instant,
}

/// Why a child runs, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    Constraint(ConstraintId),
    Activity,
    SecondChance(Activity),
    Free,
}

impl Tier {
    fn rank(self) -> u8 {
        match self {
            Tier::Constraint(_) => 0,
            Tier::Activity => 1,
            Tier::SecondChance(_) => 2,
            Tier::Free => 3,
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
    /// §4.6 rule 1's minimum threshold.
    threshold: Duration,
    /// Round-robin order of activities for free time (smallest first).
    act_turn: BTreeMap<Activity, u64>,
    /// Pending denied constraints per thread, oldest first.
    denied: BTreeMap<ChildId, Vec<Denied>>,
    /// The second-chance queue (§4.5).
    second: BTreeMap<Activity, SecondChance>,
    /// Mutex ownership and blocking (§4.2), by thread serial.
    inherit: Inheritance<u64, i64, ()>,
    by_serial: BTreeMap<u64, ChildId>,
    next_serial: u64,
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
            threshold: Duration::ZERO,
            act_turn: BTreeMap::new(),
            denied: BTreeMap::new(),
            second: BTreeMap::new(),
            inherit: Inheritance::new(),
            by_serial: BTreeMap::new(),
            next_serial: 0,
        }
    }

    /// Sets §4.6 rule 1's threshold.
    pub fn with_threshold(mut self, threshold: Duration) -> Self {
        self.threshold = threshold;
        self
    }

    /// The second-chance queue: activity -> reserved time still to make up.
    pub fn second_chance_queue(&self) -> Vec<(Activity, Duration)> {
        self.second.iter().map(|(&a, e)| (a, e.lost)).collect()
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

    /// Re-decide the graph VP if a waiting child outranks what runs there.
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        if !matches!(cx.vp_state(GRAPH_VP), VpState::Held(_)) {
            return;
        }
        let Some(Some(slot)) = self.on_vp.get(GRAPH_VP.index()) else {
            return;
        };
        let now = cx.now();
        let (start, _, _) = self.node(now);
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
        let acc = match self.book.begin(now, activity, child, id, req) {
            Ok(acc) => acc,
            Err(e) => {
                // A denied constraint stays pending until `end_constraint`:
                // its thread is preferred in its activity's time (§4.6 rule 3).
                if matches!(e, Rejected::Infeasible { .. }) {
                    self.next_constraint += 1;
                    self.denied.entry(child).or_default().push(Denied {
                        id,
                        deadline,
                        taken: Duration::ZERO,
                    });
                }
                return Err(format!(
                    "constraint refused: {e} (pending as denied until `end_constraint`)"
                ));
            }
        };
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
        let last_denied = self.denied.get(&child).and_then(|v| v.last()).map(|d| d.id);
        if last_denied.is_some_and(|d| self.book.current(child).is_none_or(|c| c < d)) {
            let v = self.denied.get_mut(&child).expect("present");
            let mut d = v.pop().expect("present");
            if v.is_empty() {
                self.denied.remove(&child);
            }
            let c = &self.children[child];
            if matches!(c.state, State::Running(_)) {
                d.taken += (cx.now() - c.since).saturating_sub(c.flushed);
            }
            return Ok(Params::new()
                .with("taken", Value::Duration(d.taken))
                .with("released", Value::Duration(Duration::ZERO))
                .with("denied", Value::Bool(true)));
        }
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
        let serial = self.next_serial;
        self.next_serial += 1;
        self.by_serial.insert(serial, child);
        self.children.insert(
            child,
            Child {
                state: State::Idle,
                activity,
                turn: 0,
                since: Instant::ZERO,
                flushed: Duration::ZERO,
                serial,
                holds: Default::default(),
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
        self.denied.remove(&child);
        let c = self.children.remove(child).expect("registered");
        self.by_serial.remove(&c.serial);
        for m in c.holds {
            self.unlock_as(c.serial, m);
        }
        let m = self.members.entry(activity).or_default();
        *m -= 1;
        if *m == 0 {
            self.members.remove(&activity);
            self.names.retain(|_, a| *a != activity);
            self.second.remove(&activity);
            self.act_turn.remove(&activity);
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
        let a = c.activity;
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        // Woken inside the node it blocked in: what is left of the node is
        // not lost after all.
        let now = cx.now();
        let (_, end, act) = self.interval_at(now);
        if act == Some(a) {
            if let Some(e) = self.second.get_mut(&a) {
                e.lost = e.lost.saturating_sub(end - now);
                if e.lost.is_zero() {
                    self.second.remove(&a);
                }
            }
        }
        self.preempt_if_needed(cx);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state != State::Idle {
            self.forget_runnable(child);
            cx.want_cpus(self.runnable);
            let a = self.children[child].activity;
            self.note_blocked(cx, a);
            // A constrained thread blocking on a mutex hands its rank to the
            // holder (§4.2), which may outrank what runs.
            self.preempt_if_needed(cx);
        }
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
        }
        self.stop(vp);
        self.second
            .retain(|_, e| now < e.expires && !e.lost.is_zero());
        let pick = if vp == GRAPH_VP {
            self.pick_graph(now)
        } else {
            self.pick_free(now)
        };
        let Some(select::Pick {
            child,
            tier,
            until,
            node,
        }) = pick
        else {
            return Dispatch::Release;
        };
        let c = &mut self.children[child];
        c.state = State::Running(vp);
        c.since = now;
        c.flushed = Duration::ZERO;
        let activity = c.activity;
        // A thread picked by round robin goes to the back of its activity's
        // line (assigned time does not cost it its place); an activity given
        // a turn of free time goes to the back of the activities' line.
        if !matches!(tier, Tier::Constraint(_)) {
            self.seq += 1;
            c.turn = self.seq;
        }
        if tier == Tier::Free {
            self.seq += 1;
            self.act_turn.insert(activity, self.seq);
        }
        self.on_vp[vp.index()] = Some(Slot {
            child,
            tier,
            interval: node,
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
        for d in self.denied.get_mut(&child).into_iter().flatten() {
            d.taken += fresh;
        }
        let State::Running(vp) = c.state else {
            return;
        };
        if let Some(Some(slot)) = self.on_vp.get(vp.index()) {
            match slot.tier {
                Tier::Constraint(id) => {
                    if self.used_in.0 != slot.interval {
                        self.used_in = (slot.interval, BTreeMap::new());
                    }
                    let u = self.used_in.1.entry(id).or_default();
                    *u += ran;
                }
                Tier::SecondChance(a) => {
                    if let Some(e) = self.second.get_mut(&a) {
                        e.lost = e.lost.saturating_sub(ran);
                        if e.lost.is_zero() {
                            self.second.remove(&a);
                        }
                    }
                }
                _ => {}
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
            "reserve"
                | "release"
                | "begin_constraint"
                | "end_constraint"
                | "lock"
                | "unlock"
                | "block_on"
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
            "end_constraint" => self.end(cx, child),
            _ => self.mutex_msg(cx, child, name, &msg.args),
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
        for a in self.second.keys().chain(self.act_turn.keys()) {
            if !self.members.contains_key(a) {
                return Err(format!("activity {a} is queued but has no thread"));
            }
        }
        for child in self.denied.keys() {
            if !self.children.contains(*child) {
                return Err(format!("{child} has denied constraints but left"));
            }
        }
        for (id, c) in self.children.iter() {
            if self.by_serial.get(&c.serial) != Some(&id) {
                return Err(format!("{id}'s serial {} is not indexed", c.serial));
            }
            for &m in &c.holds {
                if self.inherit.holder(m) != Some(c.serial) {
                    return Err(format!("{id} thinks it holds mutex {m}"));
                }
            }
        }
        if self.by_serial.len() != self.children.iter().count() {
            return Err("serial index names threads that left".into());
        }
        if self.served.len() != self.book.open().count() {
            return Err("accounting kept for a closed constraint".into());
        }
        self.graph().check_invariants()?;
        self.book.check_invariants()
    }
}
