//! The `rialto` policy's state: its threads, activities, graph VPs and
//! the records selection and the messages share (pending denied
//! constraints, the second-chance queue, constraint accounting, the
//! inheritance book's mutex names), and the read-only questions asked of
//! them. What changes it lives beside: the callbacks in `scheduler.rs`,
//! the messages in `requests.rs`, the queues in `queues.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use hsched_core::{ChildId, ChildMap, Duration, Instant, MutexId, ParentVp};

use super::super::constraints::{ConstraintId, Constraints};
use super::super::graph::{Graph, GraphParams};
use super::super::inherit::Inheritance;
use super::super::place::{Fit, Multiprocessor, VpPin};
use super::walk::Walk;

/// An activity: an index into the policy's table.
pub type Activity = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Idle,
    Waiting,
    Running(ParentVp),
}

#[derive(Clone, Debug)]
pub(super) struct Child {
    pub(super) state: State,
    /// The activity it was attached with: its reservation, its constraints.
    pub(super) activity: Activity,
    /// The activity it is scheduled in: `activity`, or while it serves an
    /// RPC the (outermost) caller's (§4.2).
    pub(super) sched: Activity,
    /// Round-robin order: the smallest waiting turn goes first.
    pub(super) turn: u64,
    /// Start of its current run segment (or its last charge).
    pub(super) since: Instant,
    /// Part of the current segment already counted by `end_constraint`.
    pub(super) flushed: Duration,
    /// Its name in the inheritance graph (child ids are reused, serials not).
    pub(super) serial: u64,
    /// Mutexes it holds (§4.2).
    pub(super) holds: BTreeSet<MutexKey>,
    /// RPC ports it serves.
    pub(super) ports: BTreeSet<i64>,
    /// Where the selection queues hold it (see `queues.rs`).
    pub(super) entry: Option<Entry>,
}

/// A refused `begin_constraint` still pending (§4.6 rule 3 (1)).
#[derive(Clone, Copy, Debug)]
pub(super) struct Denied {
    pub(super) id: ConstraintId,
    pub(super) deadline: Instant,
    pub(super) taken: Duration,
}

/// An entry of the second-chance queue (§4.5).
#[derive(Clone, Copy, Debug)]
pub(super) struct SecondChance {
    /// Reserved time it failed to run by blocking, not made up yet.
    pub(super) lost: Duration,
    /// The start of its next node: the entry is void from then on.
    pub(super) expires: Instant,
    /// When it was queued (the queue's order).
    pub(super) since: Instant,
}

/// Why a child runs, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Tier {
    Constraint(ConstraintId),
    Activity,
    SecondChance(Activity),
    Free,
}

impl Tier {
    pub(super) fn rank(self) -> u8 {
        match self {
            Tier::Constraint(_) => 0,
            Tier::Activity => 1,
            Tier::SecondChance(_) => 2,
            Tier::Free => 3,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    pub(super) child: ChildId,
    pub(super) tier: Tier,
    /// Start of the graph interval it was chosen in.
    pub(super) interval: Instant,
    /// When it was granted.
    pub(super) granted: Instant,
    /// Its round-robin turn and its activity's before this grant.
    pub(super) turns_before: (u64, Option<u64>),
}

/// CPU time of an open constraint.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Served {
    /// Since its `begin_constraint` (the `taken` of `end_constraint`).
    pub(super) taken: Duration,
    /// Since it was last admitted (compared with its guaranteed time).
    pub(super) since_admitted: Duration,
}

/// What each graph VP keeps: the graph inside its constraint book, the walk
/// of its current base period and the constraint time used in its current
/// interval. One in mode `one`, one per VP in mode `partitioned`.
pub(super) struct Cpu {
    pub(super) book: Constraints<Activity, ChildId>,
    /// The walk of the current and the next base period.
    pub(super) walk: Option<Walk<Activity>>,
    /// Constraint time used in the interval that starts at `.0`.
    pub(super) used_in: (Instant, BTreeMap<ConstraintId, Duration>),
}

impl Cpu {
    pub(super) fn new(graph: GraphParams, horizon: Duration) -> Self {
        Cpu {
            book: Constraints::new(Graph::new(graph), horizon),
            walk: None,
            used_in: (Instant::ZERO, BTreeMap::new()),
        }
    }
}

/// A round-robin lane of rule 5: activities that may run on any VP
/// (`None`: not placed) or only on VP `Some(v)` (placed, partitioned mode).
pub(super) type Lane = Option<usize>;

/// The Rialto policy. See the module documentation.
pub struct Rialto {
    pub(super) quantum: Duration,
    pub(super) horizon: Duration,
    /// The graph parameters every graph is built with.
    pub(super) gp: GraphParams,
    /// The graph VPs: `cpus[v]` is followed by `ParentVp(v)`.
    pub(super) cpus: Vec<Cpu>,
    pub(super) mode: Multiprocessor,
    pub(super) fit: Fit,
    pub(super) children: ChildMap<Child>,
    pub(super) on_vp: Vec<Option<Slot>>,
    pub(super) runnable: u32,
    pub(super) seq: u64,
    pub(super) names: BTreeMap<String, Activity>,
    /// Activities with at least one thread (the others are forgotten).
    pub(super) acts: BTreeMap<Activity, Act>,
    /// Rule 5's round-robin queues: the activities with a waiting thread,
    /// by (turn, activity), per lane (no empty lane is kept).
    pub(super) ready: BTreeMap<Lane, BTreeSet<(u64, Activity)>>,
    /// Runnable threads per lane (by the activity they are scheduled in),
    /// for the VPs partitioned mode asks for; no zero count is kept.
    pub(super) lane_runnable: BTreeMap<Lane, u32>,
    pub(super) next_activity: Activity,
    pub(super) next_constraint: u64,
    pub(super) served: BTreeMap<ConstraintId, Served>,
    /// §4.6 rule 1's minimum threshold.
    pub(super) threshold: Duration,
    /// Pending denied constraints per thread, oldest first.
    pub(super) denied: BTreeMap<ChildId, Vec<Denied>>,
    /// The second-chance queue (§4.5).
    pub(super) second: BTreeMap<Activity, SecondChance>,
    /// Mutexes, RPCs and who waits for whom (§4.2), by thread serial.
    pub(super) inherit: Inheritance<u64, MutexKey, ()>,
    pub(super) by_serial: BTreeMap<u64, ChildId>,
    pub(super) next_serial: u64,
    /// RPC port -> the serial of its server thread.
    pub(super) ports: BTreeMap<i64, u64>,
    /// Graph nodes pinned for named activities (the `placement` parameter).
    pub(super) pins: BTreeMap<String, VpPin>,
}

/// An activity with at least one thread.
#[derive(Clone, Debug, Default)]
pub(super) struct Act {
    /// Threads attached with it.
    pub members: u32,
    /// The name it was attached by (`s:NAME`), if any.
    pub name: Option<String>,
    /// Its place in rule 5's round robin (smallest first).
    pub turn: u64,
    /// Threads scheduled in it that are waiting or running.
    pub runnable: u32,
    /// Its waiting threads by (round-robin turn, child).
    pub waiting: BTreeSet<(u64, ChildId)>,
    /// Its waiting threads with a pending denied or an open constraint.
    pub marked: BTreeSet<ChildId>,
    /// Its lane and key in `ready`, while it has a waiting thread.
    pub queued: Option<(Lane, u64)>,
    /// The VP it is placed on (partitioned mode, from its first grant to
    /// its last thread's leaving): its threads run there only.
    pub vp: Option<usize>,
}

/// Where the queues hold a runnable child (an idle one has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    /// The activity it is scheduled in.
    pub activity: Activity,
    /// Waiting, with this round-robin turn.
    pub waiting: Option<u64>,
    /// Waiting with a pending denied or an open constraint.
    pub marked: bool,
}

/// A mutex in the inheritance book: one a program names in its `lock`,
/// `block_on` and `unlock` messages, or one of the platform's, reported
/// through [`SyncEvent`]s. Separate name spaces, so the two never collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MutexKey {
    Named(i64),
    Platform(MutexId),
}

impl fmt::Display for MutexKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MutexKey::Named(m) => write!(f, "mutex {m}"),
            MutexKey::Platform(m) => write!(f, "platform {m}"),
        }
    }
}

impl Rialto {
    /// An empty instance.
    pub fn new(graph: GraphParams, quantum: Duration, horizon: Duration) -> Self {
        Rialto {
            quantum,
            horizon,
            gp: graph,
            cpus: vec![Cpu::new(graph, horizon)],
            mode: Multiprocessor::One,
            fit: Fit::First,
            children: ChildMap::new(),
            on_vp: Vec::new(),
            runnable: 0,
            seq: 0,
            names: BTreeMap::new(),
            acts: BTreeMap::new(),
            ready: BTreeMap::new(),
            lane_runnable: BTreeMap::new(),
            next_activity: 0,
            next_constraint: 0,
            served: BTreeMap::new(),
            threshold: Duration::ZERO,
            denied: BTreeMap::new(),
            second: BTreeMap::new(),
            inherit: Inheritance::new(),
            by_serial: BTreeMap::new(),
            next_serial: 0,
            ports: BTreeMap::new(),
            pins: BTreeMap::new(),
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

    /// The graph the first VP follows.
    pub fn graph(&self) -> &Graph<Activity> {
        self.cpus[0].book.graph()
    }

    /// The constraint book of the first VP.
    pub fn constraints(&self) -> &Constraints<Activity, ChildId> {
        &self.cpus[0].book
    }

    /// The VP activity `a` is placed on (partitioned mode), if any.
    pub fn placed_on(&self, a: Activity) -> Option<usize> {
        self.acts.get(&a).and_then(|act| act.vp)
    }

    /// The graph VP holding `a`'s reservation and constraints: its VP when
    /// placed, else the first.
    pub(super) fn home(&self, a: Activity) -> usize {
        self.placed_on(a).unwrap_or(0)
    }

    /// The constraint book of `child`'s own activity.
    pub(super) fn book_of(&self, child: ChildId) -> &Constraints<Activity, ChildId> {
        let a = self.children.get(child).map_or(0, |c| c.activity);
        &self.cpus[self.home(a)].book
    }

    /// Whether `vp` follows a graph (all of them when partitioned).
    pub(super) fn follows_graph(&self, vp: usize) -> bool {
        vp < self.cpus.len()
    }

    /// Whether `child` may run on `vp`: the activity it is scheduled in is
    /// not placed, or placed there.
    pub(super) fn may_run_on(&self, child: ChildId, vp: usize) -> bool {
        self.children
            .get(child)
            .is_some_and(|c| self.placed_on(c.sched).is_none_or(|v| v == vp))
    }

    /// The activity of `child`.
    pub fn activity_of(&self, child: ChildId) -> Option<Activity> {
        self.children.get(child).map(|c| c.activity)
    }

    /// The activity `child` is scheduled in: its own, or while it serves an
    /// RPC its caller's.
    pub fn scheduled_in(&self, child: ChildId) -> Option<Activity> {
        self.children.get(child).map(|c| c.sched)
    }

    /// The interval of the first VP's graph holding `now`.
    pub fn interval_at(&self, now: Instant) -> (Instant, Instant, Option<Activity>) {
        self.interval_on(0, now)
    }

    /// The interval of graph VP `v`'s graph holding `now`: `(start, end,
    /// activity)`. `O(log m)` for `m` intervals on a path when the walk
    /// kept for decisions holds `now`'s base period, a walk of the graph
    /// otherwise.
    pub fn interval_on(&self, v: usize, now: Instant) -> (Instant, Instant, Option<Activity>) {
        let Some(cpu) = self.cpus.get(v) else {
            return (Instant::ZERO, Instant::NEVER, None);
        };
        let Some(base) = cpu.book.graph().base_period().map(|b| b.0) else {
            return (Instant::ZERO, Instant::NEVER, None);
        };
        match &cpu.walk {
            Some(w) if w.covers(base, now) => w.at(now),
            _ => Walk::new(cpu.book.graph(), base, now.0 / base).at(now),
        }
    }
}
