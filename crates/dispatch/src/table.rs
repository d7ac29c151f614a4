//! The dispatcher's tables: its records of scheduler instances (and their
//! children), threads and CPUs (each CPU's decision path), and of what
//! waits to happen (notifications to parents, timers). Data only: the
//! `impl Dispatcher` files act on them.

use hsched_core::{
    ChildId, CpuId, Duration, Instant, Msg, ParamSpec, ParentVp, PolicyInfo, SchedId, Scheduler,
    ThreadId, TimerKey, VpState,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

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

impl Hop {
    /// The root declined the CPU (nothing to run): a request may wake it.
    pub(crate) fn root_declined(&self) -> bool {
        self.child.is_none() && self.until.is_never()
    }
}

/// How often the watchdog looks, for a starvation bound `d`.
pub(crate) fn half(d: Duration) -> Duration {
    Duration((d.as_nanos() / 2).max(1))
}
