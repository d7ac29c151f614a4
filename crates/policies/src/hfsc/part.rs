//! One CPU's worth of `hfsc`: the children with their curves and their
//! real-time sets (eligible, pending), the link-sharing class tree with its
//! finish values and virtual times, and the part's own consistency check.
//! With `multiprocessor = "one"` one part serves every VP; partitioned,
//! each VP has its own.

use super::curve::{ClassSpec, Curve, ServiceCurve, PPM};
use hsched_core::{ChildId, ChildMap, Instant, ParentVp};
use std::collections::BTreeSet;

/// A finish value: ns of service scaled by `10^6 / rate`.
pub type Fin = u128;

/// Adds `ran / rate` to a finish value, carrying the remainder (L6).
fn advance_finish(finish: &mut Fin, rem: &mut u64, rate: u32, ran: u64) {
    let scaled = u128::from(ran) * u128::from(PPM) + u128::from(*rem);
    let rate = u128::from(rate.max(1));
    *finish += scaled / rate;
    *rem = (scaled % rate) as u64;
}

/// A node of the link-sharing tree below the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Node {
    Leaf(ChildId),
    Class(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Idle,
    Waiting,
    Running(ParentVp),
}

#[derive(Clone, Debug)]
pub(super) struct Child {
    pub(super) curve: ServiceCurve,
    pub(super) best_effort: bool,
    pub(super) class: Option<u32>,
    pub(super) state: State,
    /// The deadline curve `D`; `None` before the first wake-up.
    pub(super) deadline_curve: Option<Curve>,
    /// `c`: CPU time received (all of it, or only by the real-time
    /// criterion without `count_link_sharing`).
    pub(super) rt_service: u64,
    /// All CPU time received.
    pub(super) total_service: u64,
    /// Immediate CPU demand estimate `δ̂` (ns).
    pub(super) icd: u64,
    /// When the current burst began (scheduled after blocking or
    /// preemption).
    pub(super) burst_start: Instant,
    /// Whether the current or last decision was by the real-time criterion.
    pub(super) by_rt: bool,
    pub(super) finish: Fin,
    pub(super) rem: u64,
    /// While waiting: `(eligible time, deadline)`, and which set holds it.
    pub(super) eligible_at: u64,
    pub(super) deadline: u64,
    pub(super) in_eligible: bool,
}

impl Child {
    /// The eligibility curve (9) for this child's deadline curve.
    fn eligibility_curve(&self) -> Option<Curve> {
        let d = self.deadline_curve?;
        Some(if self.curve.is_concave() {
            d
        } else {
            Curve {
                dx: 0,
                r1: self.curve.r2,
                ..d
            }
        })
    }
}

/// An internal node of the link-sharing tree.
#[derive(Clone, Debug)]
pub(super) struct Class {
    pub(super) name: String,
    pub(super) rate: u32,
    /// The class it is nested in; `None`: the root.
    pub(super) parent: Option<u32>,
    pub(super) finish: Fin,
    pub(super) rem: u64,
    /// The virtual time `v` (L2) of the nodes inside it, a never-decreasing
    /// floor.
    pub(super) floor: Fin,
    /// The nodes inside it (leaves and classes) that have a waiting leaf
    /// at or below them. A class is in its parent's set iff this is not
    /// empty.
    pub(super) waiting: BTreeSet<(Fin, Node)>,
    /// Runnable (waiting or running) leaves at any depth below it.
    pub(super) runnable: u32,
}

/// The scheduling state of one CPU's worth of HFSC: its children with
/// their curves, its copy of the class tree and its sets. With
/// `multiprocessor = "one"` a single part serves every VP; partitioned, VP
/// `k` is served by part `k` alone.
#[derive(Debug)]
pub(super) struct Part {
    pub(super) children: ChildMap<Child>,
    pub(super) classes: Vec<Class>,
    /// Root level: waiting leaves and classes with waiting children.
    pub(super) root: BTreeSet<(Fin, Node)>,
    pub(super) root_floor: Fin,
    /// Waiting real-time children not yet eligible, by eligible time.
    pub(super) pending: BTreeSet<(u64, ChildId)>,
    /// Waiting eligible children, by deadline.
    pub(super) eligible: BTreeSet<(u64, ChildId)>,
    pub(super) runnable: u32,
    /// `Σ max(r1, r2)` over the admitted (not best-effort) children.
    pub(super) peak_sum: u64,
    /// Best-effort children placed here (partitioned placement spreads
    /// them by this count).
    pub(super) best_effort: u32,
}

impl Part {
    pub(super) fn new(classes: &[ClassSpec]) -> Part {
        Part {
            children: ChildMap::new(),
            classes: classes
                .iter()
                .map(|c| Class {
                    name: c.name.clone(),
                    rate: c.rate,
                    parent: c.parent,
                    finish: 0,
                    rem: 0,
                    floor: 0,
                    waiting: BTreeSet::new(),
                    runnable: 0,
                })
                .collect(),
            root: BTreeSet::new(),
            root_floor: 0,
            pending: BTreeSet::new(),
            eligible: BTreeSet::new(),
            runnable: 0,
            peak_sum: 0,
            best_effort: 0,
        }
    }

    /// The curves admitted here (the non-best-effort children's).
    pub(super) fn curves(&self) -> Vec<ServiceCurve> {
        self.children
            .iter()
            .filter(|(_, c)| !c.best_effort)
            .map(|(_, c)| c.curve)
            .collect()
    }

    fn class_key(&self, k: u32) -> (Fin, Node) {
        (self.classes[k as usize].finish, Node::Class(k))
    }

    /// The waiting set of the nodes inside `at` (`None`: the root).
    fn level(&mut self, at: Option<u32>) -> &mut BTreeSet<(Fin, Node)> {
        match at {
            None => &mut self.root,
            Some(k) => &mut self.classes[k as usize].waiting,
        }
    }

    /// The virtual time `v` of the nodes inside `at`.
    pub(super) fn level_floor(&self, at: Option<u32>) -> Fin {
        match at {
            None => self.root_floor,
            Some(k) => self.classes[k as usize].floor,
        }
    }

    /// The classes from `class` up to the top, innermost first (for the
    /// invariant checks; the hot paths walk `parent` in place).
    fn path(&self, class: Option<u32>) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(class, |&k| self.classes[k as usize].parent)
    }

    /// Puts `key` into the set inside `at`, and each class that thereby
    /// gets its first waiting node into its parent's set, up the tree.
    fn insert_ls(&mut self, mut key: (Fin, Node), mut at: Option<u32>) {
        loop {
            let set = self.level(at);
            let first = set.is_empty();
            set.insert(key);
            match at {
                Some(k) if first => {
                    key = self.class_key(k);
                    at = self.classes[k as usize].parent;
                }
                _ => return,
            }
        }
    }

    /// Takes `key` out of the set inside `at`, and each class that thereby
    /// loses its last waiting node out of its parent's set, up the tree.
    fn remove_ls(&mut self, mut key: (Fin, Node), mut at: Option<u32>) {
        loop {
            let set = self.level(at);
            set.remove(&key);
            match at {
                Some(k) if set.is_empty() => {
                    key = self.class_key(k);
                    at = self.classes[k as usize].parent;
                }
                _ => return,
            }
        }
    }

    /// Puts a child that is runnable and not running into every set it
    /// belongs to, computing its eligible time (9) and deadline (8).
    pub(super) fn insert_waiting(&mut self, child: ChildId) {
        let c = &mut self.children[child];
        c.state = State::Waiting;
        if !c.best_effort {
            let dc = c
                .deadline_curve
                .expect("a runnable child has a deadline curve");
            let ec = c.eligibility_curve().expect("idem");
            c.eligible_at = ec.inverse(c.rt_service);
            c.deadline = dc.inverse(c.rt_service.saturating_add(c.icd));
            c.in_eligible = false;
            self.pending.insert((c.eligible_at, child));
        }
        let (finish, class) = (c.finish, c.class);
        self.insert_ls((finish, Node::Leaf(child)), class);
    }

    /// Takes a waiting child out of every set.
    pub(super) fn remove_waiting(&mut self, child: ChildId) {
        let c = &self.children[child];
        if !c.best_effort {
            if c.in_eligible {
                self.eligible.remove(&(c.deadline, child));
            } else {
                self.pending.remove(&(c.eligible_at, child));
            }
        }
        let (finish, class) = (c.finish, c.class);
        self.remove_ls((finish, Node::Leaf(child)), class);
    }

    /// A child becomes runnable: L2-L3 for it and for every class above it
    /// that becomes runnable with it, then (7) for its deadline curve.
    pub(super) fn activate(&mut self, child: ChildId, now: u64) {
        let class = self.children[child].class;
        let mut at = class;
        while let Some(k) = at {
            let parent = self.classes[k as usize].parent;
            let parent_floor = self.level_floor(parent);
            let cl = &mut self.classes[k as usize];
            if cl.runnable == 0 {
                debug_assert!(cl.waiting.is_empty());
                if cl.finish < parent_floor {
                    cl.finish = parent_floor;
                    cl.rem = 0;
                }
            }
            cl.runnable += 1;
            at = parent;
        }
        let level_floor = self.level_floor(class);
        let c = &mut self.children[child];
        if c.finish < level_floor {
            c.finish = level_floor;
            c.rem = 0;
        }
        let y = c.rt_service;
        match &mut c.deadline_curve {
            None => c.deadline_curve = Some(c.curve.anchored(now, y)),
            Some(d) => d.min_with(&c.curve, now, y),
        }
        self.runnable += 1;
    }

    /// A runnable child stops being runnable (it may be waiting or running).
    /// Returns the VP it ran on, if it was running (the caller clears it).
    pub(super) fn deactivate(&mut self, child: ChildId) -> Option<ParentVp> {
        let mut ran_on = None;
        match self.children[child].state {
            State::Idle => return None,
            State::Waiting => self.remove_waiting(child),
            State::Running(vp) => ran_on = Some(vp),
        }
        self.children[child].state = State::Idle;
        let mut at = self.children[child].class;
        while let Some(k) = at {
            let cl = &mut self.classes[k as usize];
            cl.runnable -= 1;
            at = cl.parent;
        }
        self.runnable -= 1;
        ran_on
    }

    /// The real-time choice: the eligible waiting child with the earliest
    /// deadline, after moving the children that became eligible.
    pub(super) fn pick_rt(&mut self, now: u64) -> Option<ChildId> {
        while let Some(&(e, child)) = self.pending.first() {
            if e > now {
                break;
            }
            self.pending.pop_first();
            let c = &mut self.children[child];
            c.in_eligible = true;
            self.eligible.insert((c.deadline, child));
        }
        self.eligible.first().map(|&(_, child)| child)
    }

    /// The link-sharing choice: smallest finish value, root down, each
    /// level's virtual time taken as it is passed.
    pub(super) fn pick_ls(&mut self) -> Option<ChildId> {
        let &(f, mut node) = self.root.first()?;
        self.root_floor = self.root_floor.max(f);
        loop {
            match node {
                Node::Leaf(child) => return Some(child),
                Node::Class(k) => {
                    let cl = &mut self.classes[k as usize];
                    let &(f, inner) = cl.waiting.first()?;
                    cl.floor = cl.floor.max(f);
                    node = inner;
                }
            }
        }
    }

    /// L6 for `child` and every class above it: `f += ran / rate`.
    pub(super) fn advance_finishes(&mut self, child: ChildId, ran: u64) {
        let c = &mut self.children[child];
        let waiting = c.state == State::Waiting;
        if waiting {
            self.remove_waiting(child);
        }
        let c = &mut self.children[child];
        advance_finish(&mut c.finish, &mut c.rem, c.curve.r2, ran);
        let mut at = c.class;
        while let Some(k) = at {
            let (key, parent) = (self.class_key(k), self.classes[k as usize].parent);
            let queued = self.level(parent).remove(&key);
            let cl = &mut self.classes[k as usize];
            advance_finish(&mut cl.finish, &mut cl.rem, cl.rate, ran);
            if queued {
                let key = self.class_key(k);
                self.level(parent).insert(key);
            }
            at = parent;
        }
        if waiting {
            self.insert_waiting(child);
        }
    }
}

impl Part {
    /// The part's own consistency: counts, sets and the class tree.
    pub(super) fn check(&self, on_vp: &[Option<ChildId>]) -> Result<(), String> {
        let (mut runnable, mut waiting_rt) = (0u32, 0usize);
        let mut class_runnable = vec![0u32; self.classes.len()];
        for (child, c) in self.children.iter() {
            if c.rt_service > c.total_service {
                return Err(format!("{child}: real-time service above total service"));
            }
            if u128::from(c.rem) >= u128::from(c.curve.r2.max(1)) {
                return Err(format!("{child}: finish remainder not below its rate"));
            }
            if c.state == State::Idle {
                continue;
            }
            runnable += 1;
            for k in self.path(c.class) {
                class_runnable[k as usize] += 1;
            }
            if !c.best_effort && c.deadline_curve.is_none() {
                return Err(format!("{child} is runnable without a deadline curve"));
            }
            match c.state {
                State::Waiting => {
                    if !c.best_effort {
                        waiting_rt += 1;
                        let ok = if c.in_eligible {
                            self.eligible.contains(&(c.deadline, child))
                        } else {
                            self.pending.contains(&(c.eligible_at, child))
                        };
                        if !ok {
                            return Err(format!("{child} waits but is not in its real-time set"));
                        }
                    }
                    let in_ls = match c.class {
                        None => self.root.contains(&(c.finish, Node::Leaf(child))),
                        Some(k) => self.classes[k as usize]
                            .waiting
                            .contains(&(c.finish, Node::Leaf(child))),
                    };
                    if !in_ls {
                        return Err(format!("{child} waits but is not in its link-sharing set"));
                    }
                }
                State::Running(vp) => {
                    if on_vp.get(vp.index()).copied().flatten() != Some(child) {
                        return Err(format!("{child} runs on {vp} but {vp} does not know it"));
                    }
                }
                State::Idle => unreachable!(),
            }
        }
        let be = self.children.iter().filter(|(_, c)| c.best_effort).count();
        if be != self.best_effort as usize {
            return Err(format!(
                "{be} best-effort children, count says {}",
                self.best_effort
            ));
        }
        let peak: u64 = self
            .children
            .iter()
            .filter(|(_, c)| !c.best_effort)
            .map(|(_, c)| u64::from(c.curve.r1.max(c.curve.r2)))
            .sum();
        if peak != self.peak_sum {
            return Err(format!(
                "peak rate sum {} but children add up to {peak}",
                self.peak_sum
            ));
        }
        if runnable != self.runnable {
            return Err(format!(
                "{runnable} runnable children, count says {}",
                self.runnable
            ));
        }
        if waiting_rt != self.pending.len() + self.eligible.len() {
            return Err(format!(
                "{waiting_rt} waiting real-time children, sets hold {}",
                self.pending.len() + self.eligible.len()
            ));
        }
        // Each level's set holds exactly its waiting leaves and its classes
        // with something waiting.
        let mut expected = vec![0usize; self.classes.len() + 1];
        let slot = |at: Option<u32>| at.map_or(0, |k| k as usize + 1);
        for (k, cl) in self.classes.iter().enumerate() {
            if cl.runnable != class_runnable[k] {
                return Err(format!(
                    "class `{}` counts {} runnable, {} are",
                    cl.name, cl.runnable, class_runnable[k]
                ));
            }
            let parent_set = match cl.parent {
                None => &self.root,
                Some(p) => &self.classes[p as usize].waiting,
            };
            let queued = parent_set.contains(&(cl.finish, Node::Class(k as u32)));
            if queued == cl.waiting.is_empty() {
                return Err(format!(
                    "class `{}` queued in its parent: {queued}, waiting inside: {}",
                    cl.name,
                    cl.waiting.len()
                ));
            }
            expected[slot(cl.parent)] += usize::from(queued);
        }
        for (_, c) in self.children.iter() {
            if c.state == State::Waiting {
                expected[slot(c.class)] += 1;
            }
        }
        let sizes = std::iter::once(&self.root).chain(self.classes.iter().map(|c| &c.waiting));
        for (i, set) in sizes.enumerate() {
            if set.len() != expected[i] {
                let at = i.checked_sub(1).map_or("the root".to_string(), |k| {
                    format!("class `{}`", self.classes[k].name)
                });
                return Err(format!(
                    "{at} queues {} nodes, expected {}",
                    set.len(),
                    expected[i]
                ));
            }
        }
        Ok(())
    }
}
