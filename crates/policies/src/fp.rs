//! `fp`: preemptive fixed priority.
//!
//! **Source.** Regehr & Stankovic, "HLS: A Framework for Composing Soft
//! Real-Time Schedulers", §4 (the fixed-priority scheduler of Table 1) and
//! §5.1 ("Fixed Priority"): a preemptive fixed-priority scheduler passes the
//! guarantee it receives to its highest-priority child and NULL to the
//! others. Equal priorities are served FIFO or round-robin, as POSIX
//! `SCHED_FIFO` / `SCHED_RR`.
//!
//! **Algorithm.** Each child attaches with a priority `prio` (higher runs
//! first). Runnable children wait in one ordered queue keyed by
//! (priority, arrival). A CPU that needs a decision runs the head. On every
//! change (a wake-up, a CPU decided or taken back) the scheduler keeps the
//! running set equal to the top `k` runnable children, `k` being the CPUs it
//! holds: while the best waiting child outranks the worst running one (and
//! no idle CPU will take it), it preempts the worst running one with
//! `Cx::revoke`; the `vp_grant` that follows runs the best waiting child.
//! A preempted child goes back to the *head* of its priority level. With
//! the `quantum` parameter set, children of equal priority share the CPU
//! round-robin: the horizon is the rest of the child's slice, and a child
//! whose slice is used up goes to the *back* of its level with a new one.
//! With `quantum = 0` (the default) equal priorities run FIFO, to block.
//!
//! **Guarantees.** Work conserving on any number of CPUs. Strict priority:
//! after each decision, no waiting child has a higher priority than a
//! running one, except while a preemption it asked for is on its way (the
//! dispatcher applies effects right after the callback). On one CPU, the
//! highest-priority runnable child receives every grant this scheduler gets,
//! which is why it can inherit the parent's guarantee (admission control
//! that keeps one child per priority is left to the analysis layer).
//!
//! **Priority inheritance** ([`crate::pi`]): a thread holding a platform
//! mutex declared `protocol = "inherit"` runs at the highest priority of
//! the threads blocked on it (transitively) until it unlocks, so a
//! medium-priority thread cannot stretch a high-priority one's blocking
//! beyond the holder's critical section (no unbounded priority inversion).
//! Children of this scheduler only; mutexes with the default protocol
//! lend nothing. An RPC server runs at least at its caller's priority
//! while it serves the call.
//!
//! **Limits.** Lower priorities can starve (that is the policy). On
//! several CPUs it is *global* fixed priority
//! (children migrate freely), with its known analysis limits. Cost: a
//! decision, a wake-up or a release is O(log n) in the number of children
//! (a `BTreeMap`); when a preemption must be considered it also scans the
//! VPs, O(vps).

use crate::pi::Lending;
use crate::preempt::{Better, RunningSlots};
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Scheduler, SyncEvent, Value,
};
use std::cmp::Reverse;
use std::collections::BTreeMap;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "fp",
    summary: "preemptive fixed priority (child parameter `prio`, higher first)",
    doc: "Runs the runnable children with the highest `prio` (child parameter, \
          default 0); a waking child preempts the lowest-priority running child \
          it outranks. Equal priorities run FIFO, or round-robin with `quantum`. \
          Work conserving, global on several CPUs, O(log n) per decision. \
          Passes its guarantee to its highest-priority child, NULL to the others \
          (Regehr & Stankovic, HLS, section 5.1). Lower priorities can starve. \
          A holder of a mutex declared `protocol = \"inherit\"` runs at the highest \
          priority blocked on it (priority inheritance, transitive).",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// The range of `prio`.
pub const PRIO_MIN: i64 = -1_000_000;
pub const PRIO_MAX: i64 = 1_000_000;

fn params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "quantum",
        ParamKind::Duration {
            min: Duration::ZERO,
        },
        "round-robin slice among equal priorities; 0 = FIFO, run to block",
    )
    .with_default(Value::Duration(Duration::ZERO))]
}

fn child_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "prio",
        ParamKind::Int {
            min: PRIO_MIN,
            max: PRIO_MAX,
        },
        "priority; higher runs first",
    )
    .with_default(Value::Int(0))]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let quantum = params.duration("quantum");
    Ok(Box::new(FixedPriority::new(
        (!quantum.is_zero()).then_some(quantum),
    )))
}

/// Queue order: highest priority first, then lowest sequence number.
type Key = (Reverse<i64>, u64);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Waiting(Key),
    Running(ParentVp),
}

#[derive(Clone, Copy, Debug)]
struct Child {
    /// Its own priority, as attached.
    prio: i64,
    /// The priority it is scheduled by: `prio`, or a higher one lent by a
    /// thread blocked on a mutex it holds.
    rank: i64,
    state: State,
    /// With a quantum: what is left of the current slice.
    slice_left: Duration,
}

/// The fixed-priority scheduler. See the module documentation.
#[derive(Debug)]
pub struct FixedPriority {
    quantum: Option<Duration>,
    children: ChildMap<Child>,
    queue: BTreeMap<Key, ChildId>,
    /// What runs on each VP, ranked by priority; the run's horizon.
    running: RunningSlots<i64, Instant>,
    /// Sequence numbers: the back of a level counts up from the middle of
    /// the range, the head counts down, so both ends are O(log n) inserts.
    back_seq: u64,
    head_seq: u64,
    runnable: u32,
    lending: Lending<i64>,
}

const MIDDLE: u64 = u64::MAX / 2;

impl FixedPriority {
    /// `quantum`: `None` for FIFO among equal priorities, `Some` for
    /// round-robin (must be longer than zero).
    pub fn new(quantum: Option<Duration>) -> Self {
        FixedPriority {
            quantum: quantum.filter(|q| !q.is_zero()),
            children: ChildMap::new(),
            queue: BTreeMap::new(),
            running: RunningSlots::new(Better::Higher),
            back_seq: MIDDLE + 1,
            head_seq: MIDDLE,
            runnable: 0,
            lending: Lending::new(|a, b| b.cmp(a)),
        }
    }

    /// The priority `child` is scheduled by now (its own, or one inherited).
    pub fn rank(&self, child: ChildId) -> Option<i64> {
        self.children.get(child).map(|c| c.rank)
    }

    /// Gives each of `children` the priority the lending book says,
    /// moving it in the queue or re-ranking its CPU.
    fn rerank(&mut self, children: Vec<ChildId>) {
        for child in children {
            let Some(c) = self.children.get(child) else {
                continue;
            };
            let rank = self.lending.rank(child, c.prio);
            if rank == c.rank {
                continue;
            }
            let c = &mut self.children[child];
            c.rank = rank;
            match c.state {
                State::Idle => {}
                State::Waiting(key) => {
                    self.queue.remove(&key);
                    let key = (Reverse(rank), key.1);
                    c.state = State::Waiting(key);
                    self.queue.insert(key, child);
                }
                State::Running(vp) => self.running.rerank(vp, rank),
            }
        }
    }

    /// The priority `child` attached with.
    pub fn prio(&self, child: ChildId) -> Option<i64> {
        self.children.get(child).map(|c| c.prio)
    }

    fn full_slice(&self) -> Duration {
        self.quantum.unwrap_or(Duration::MAX)
    }

    fn enqueue(&mut self, child: ChildId, at_head: bool) {
        let seq = if at_head {
            self.head_seq -= 1;
            self.head_seq + 1
        } else {
            self.back_seq += 1;
            self.back_seq - 1
        };
        let c = &mut self.children[child];
        let key = (Reverse(c.rank), seq);
        c.state = State::Waiting(key);
        self.queue.insert(key, child);
    }

    /// Whatever ran on `vp` stopped. A child still runnable goes back to the
    /// head of its level (it was preempted), or to the back with a fresh
    /// slice if its round-robin slice is used up.
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        let Some(run) = self.running.clear(vp) else {
            return;
        };
        let full = self.full_slice();
        let c = &mut self.children[run.child()];
        if c.state != State::Running(vp) {
            return;
        }
        let used_up = c.slice_left.is_zero() || now >= run.data;
        if used_up {
            c.slice_left = full;
        }
        self.enqueue(run.child(), !used_up);
    }

    fn forget_runnable(&mut self, state: State) {
        match state {
            State::Idle => return,
            State::Waiting(key) => {
                self.queue.remove(&key);
            }
            State::Running(vp) => {
                self.running.clear(vp);
            }
        }
        self.runnable -= 1;
    }

    /// Keeps the running set equal to the top runnable children: while the
    /// best waiting children outrank the worst running ones, preempt those.
    /// Idle held CPUs (at the root, after a `Release`) and CPUs already
    /// being re-decided will take the best waiting children first, so only
    /// the rest may preempt.
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        let waiting = self.queue.keys().map(|&(Reverse(prio), _)| prio);
        self.running.preempt_if_needed(cx, waiting);
    }
}

impl Scheduler for FixedPriority {
    fn policy(&self) -> &'static str {
        "fp"
    }

    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let prio = params.opt_int("prio").unwrap_or(0);
        let c = Child {
            prio,
            rank: prio,
            state: State::Idle,
            slice_left: self.full_slice(),
        };
        self.children.insert(child, c);
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(&c) = self.children.get(child) else {
            return;
        };
        if c.state != State::Idle {
            self.forget_runnable(c.state);
            cx.want_cpus(self.runnable);
        }
        self.children.remove(child);
        // Only a holder or waiter of an inheriting mutex changes ranks.
        let changed = self.lending.remove(child);
        if !changed.is_empty() {
            self.rerank(changed);
            self.preempt_if_needed(cx);
        }
    }

    /// A waking child joins the back of its level and, if it outranks a
    /// running child and no CPU is free for it, preempts the lowest one.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let full = self.full_slice();
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        c.slice_left = full;
        self.enqueue(child, false);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        self.preempt_if_needed(cx);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        let state = std::mem::replace(&mut self.children[child].state, State::Idle);
        if state != State::Idle {
            self.forget_runnable(state);
            cx.want_cpus(self.runnable);
        }
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.stop(vp, now);
        let Some((_, child)) = self.queue.pop_first() else {
            return Dispatch::Release;
        };
        let round_robin = self.quantum.is_some();
        let c = &mut self.children[child];
        c.state = State::Running(vp);
        let prio = c.rank;
        let until = if round_robin {
            now.saturating_add(c.slice_left)
        } else {
            Instant::NEVER
        };
        self.running.place(vp, child, prio, until);
        // The child that stopped here may outrank one running elsewhere.
        self.preempt_if_needed(cx);
        Dispatch::Run { child, until }
    }

    /// The parent took a CPU: its child goes back to the head of its level,
    /// and may outrank a child running on another of our CPUs.
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
        self.preempt_if_needed(cx);
    }

    fn charge(&mut self, _cx: &mut Cx, child: ChildId, ran: Duration) {
        if self.quantum.is_none() {
            return;
        }
        if let Some(c) = self.children.get_mut(child) {
            c.slice_left = c.slice_left.saturating_sub(ran);
        }
    }

    /// A mutex declared `protocol = "inherit"` changed hands or gained a
    /// waiter: re-rank who the lending book says, and preempt if a waiting
    /// child now outranks a running one.
    fn sync(&mut self, cx: &mut Cx, event: &SyncEvent<ChildId>) {
        let children = &self.children;
        let changed = self.lending.apply(event, |c| children[c].prio);
        if !changed.is_empty() {
            self.rerank(changed);
            self.preempt_if_needed(cx);
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        let ranks = self
            .lending
            .check_ranks(&self.children, |c| c.prio, |c| c.rank)?;
        if let Some((child, rank, own, lent)) = ranks {
            return Err(format!(
                "{child} runs at {rank} but its own {own} and what it is lent make {lent}"
            ));
        }
        for (key, &child) in &self.queue {
            match self.children.get(child) {
                Some(c) if c.state == State::Waiting(*key) && key.0 == Reverse(c.rank) => {}
                other => {
                    return Err(format!(
                        "queue entry {key:?} -> {child} does not match {other:?}"
                    ))
                }
            }
        }
        let (mut waiting, mut runnable) = (0, 0);
        let full = self.full_slice();
        for (child, c) in self.children.iter() {
            if c.slice_left > full {
                return Err(format!("{child} has a slice longer than the quantum"));
            }
            match c.state {
                State::Idle => {}
                State::Waiting(key) => {
                    waiting += 1;
                    runnable += 1;
                    if self.queue.get(&key) != Some(&child) {
                        return Err(format!("{child} waits but is not queued under {key:?}"));
                    }
                    if c.slice_left.is_zero() {
                        return Err(format!("{child} waits with an empty slice"));
                    }
                }
                State::Running(vp) => {
                    runnable += 1;
                    if self.running.child_on(vp) != Some(child) {
                        return Err(format!("{child} runs on {vp} but {vp} does not know it"));
                    }
                }
            }
        }
        self.running.check_runs(
            |id| self.children.get(id),
            |c| match c.state {
                State::Running(vp) => Some(vp),
                _ => None,
            },
            |vp, run, c| {
                if run.rank() != c.rank {
                    return Err(format!(
                        "{} runs on {vp} ranked {} but has priority {}",
                        run.child(),
                        run.rank(),
                        c.rank
                    ));
                }
                Ok(())
            },
        )?;
        if waiting != self.queue.len() || runnable != self.runnable {
            return Err(format!(
                "queue holds {} / count says {} runnable; states say {waiting} waiting / {runnable} runnable",
                self.queue.len(),
                self.runnable
            ));
        }
        self.running.check_invariants()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{running_set_ends, strategy, Harness, Parent};
    use proptest::prelude::*;

    fn harness(vps: u32, parent: Parent, quantum: Option<Duration>) -> Harness<FixedPriority> {
        Harness::new(Box::new(FixedPriority::new(quantum)), vps, parent)
    }

    fn prio(p: i64) -> Params {
        Params::new().with("prio", Value::Int(p))
    }

    proptest! {
        #[test]
        fn random_protocol_runs_keep_the_rules(
            vps in 1u32..4,
            parent in strategy::parent(),
            rr in any::<bool>(),
            steps in proptest::collection::vec(strategy::step(), 1..150),
        ) {
            let quantum = rr.then_some(Duration::from_millis(7));
            let mut h = harness(vps, parent, quantum);
            let params: Vec<Params> = [0, 1, 1, 5, -3].iter().map(|&p| prio(p)).collect();
            for step in steps {
                h.step(step, &params);
                if parent == Parent::Manual {
                    continue;
                }
                h.assert_work_conserving();
                // The running set is the top of the runnable children.
                let (lowest_running, best_waiting) =
                    running_set_ends(&h, Better::Higher, |s, c| s.prio(c).unwrap());
                if let (Some(lo), Some(hi)) = (lowest_running, best_waiting) {
                    prop_assert!(hi <= lo, "waiting prio {} > running prio {} after {:?}", hi, lo, step);
                }
            }
        }
    }
}
