//! `rm`: preemptive rate monotonic.
//!
//! **Source.** Liu & Layland, "Scheduling Algorithms for Multiprogramming in
//! a Hard-Real-Time Environment" (JACM 1973), §3-§5: fixed priorities
//! assigned by rate (the shorter the period, the higher the priority) are
//! optimal among fixed-priority assignments for periodic tasks with
//! deadlines at the period ends, and n such tasks meet every deadline when
//! their utilisation is at most n(2^(1/n) − 1). As a loadable scheduler in
//! the HLS framework (Regehr & Stankovic, "HLS", §5.1: a fixed-priority
//! scheduler with a schedulability test).
//!
//! **Algorithm.** Each child attaches with its `period` (and, for the
//! analysis, its `wcet`); the priority is the period, shorter first. A child
//! without a period (`period = 0`, the default) ranks below every periodic
//! one. Runnable children wait in one queue ordered by (period, activation
//! order): among equal periods the child that became ready first runs, as
//! in SimSo's `RM_mono`, whose ready list keeps activation order and takes
//! the first minimum; a preempted child keeps its place. The priority is
//! per task, not per job, so no job accounting is needed: a late job that
//! follows its predecessor without a block has the same priority. A waking
//! child with a shorter period than a running one preempts it (on several
//! CPUs, the running child with the longest period: global RM).
//!
//! **Guarantees.** Work conserving. On one CPU, a periodic child i with
//! `wcet` C_i (deadline = period) meets every deadline if the children of
//! its priority or higher all give their `wcet` and pass the hyperbolic
//! bound Π(1 + C_j/T_j) ≤ 2 (Bini, Buttazzo & Buttazzo 2003), which accepts
//! every set the Liu & Layland bound accepts, and more; then it receives
//! RESBH C_i, T_i from an ALL (the analysis rule, `hsched check`). No
//! budget is enforced: a child that runs past its `wcet` delays those
//! below it.
//!
//! **Priority inheritance** ([`crate::pi`]): a thread holding a platform
//! mutex declared `protocol = "inherit"` runs at the shortest period of
//! the threads blocked on it (transitively) until it unlocks. Children of
//! this scheduler only; mutexes with the default protocol lend nothing.
//! An RPC server runs at least at its caller's rank while it serves the
//! call. The analysis's bound does not count blocking times.
//!
//! **Limits.** No admission control; lower priorities starve under
//! overload (that is the policy). The bound is sufficient, not exact
//! (response-time analysis would accept more). On several CPUs it is global
//! RM, with its known analysis limits. Decisions cost O(log n).

use crate::pi::Lending;
use crate::preempt::Better;
use crate::ranked::{Place, RankedQueue};
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Scheduler, SyncEvent, Value,
};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "rm",
    summary: "preemptive rate monotonic (child `period`, shorter first; `wcet` for the analysis)",
    doc: "Runs the runnable children with the shortest `period` (child parameter; 0, \
          the default, ranks below every periodic child). Ties: the child ready first. \
          A waking child preempts a running one with a longer period. Work conserving, \
          global on several CPUs, O(log n). Liu & Layland 1973; `hsched check` gives a \
          child RESBH wcet, period when it and every child of higher or equal priority \
          give their `wcet` and pass the hyperbolic bound (prod(1 + C/T) <= 2, which \
          covers the Liu & Layland bound). Lower priorities starve under overload. \
          A holder of a mutex declared `protocol = \"inherit\"` runs at the shortest \
          period blocked on it (priority inheritance, transitive).",
    params: no_params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn child_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "period",
            ParamKind::Duration {
                min: Duration::ZERO,
            },
            "the task's period: its priority, shorter first; 0: below every periodic child",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "wcet",
            ParamKind::Duration {
                min: Duration::ZERO,
            },
            "CPU time of each job, for the analysis (not used to schedule); 0: unknown",
        )
        .with_default(Value::Duration(Duration::ZERO)),
    ]
}

fn build(_params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(RateMonotonic::new()))
}

/// Queue order: shortest period (no period last), then activation order.
type Key = (Duration, u64);

#[derive(Clone, Copy, Debug)]
struct Child {
    /// Its own rank: the period, or `Duration::MAX` for an aperiodic child.
    own: Duration,
    /// The rank it is scheduled by: `own`, or a shorter period lent by a
    /// thread blocked on a mutex it holds.
    rank: Duration,
    /// Activation order of its last wake-up (tie-break).
    seq: u64,
    state: Place,
}

impl Child {
    fn key(&self) -> Key {
        (self.rank, self.seq)
    }
}

/// The rate-monotonic scheduler. See the module documentation.
#[derive(Debug)]
pub struct RateMonotonic {
    children: ChildMap<Child>,
    ready: RankedQueue<Key>,
    next_seq: u64,
    lending: Lending<Duration>,
}

impl Default for RateMonotonic {
    fn default() -> Self {
        Self::new()
    }
}

impl RateMonotonic {
    pub fn new() -> Self {
        RateMonotonic {
            children: ChildMap::new(),
            ready: RankedQueue::new(Better::Lower),
            next_seq: 0,
            lending: Lending::new(Duration::cmp),
        }
    }

    /// Gives each of `children` the rank the lending book says, moving it
    /// in the queue or re-ranking its CPU.
    fn rerank(&mut self, children: Vec<ChildId>) {
        for child in children {
            let Some(&c) = self.children.get(child) else {
                continue;
            };
            let rank = self.lending.rank(child, c.own);
            if rank == c.rank {
                continue;
            }
            self.children[child].rank = rank;
            let key = self.children[child].key();
            self.ready.rerank(child, c.state, c.key(), key);
        }
    }

    /// The period `child` ranks by (`Duration::MAX`: none).
    pub fn rank_of(&self, child: ChildId) -> Option<Duration> {
        self.children.get(child).map(|c| c.rank)
    }

    /// `child` stopped being runnable (if it was).
    fn forget_runnable(&mut self, cx: &mut Cx, child: ChildId) {
        let c = &mut self.children[child];
        self.ready.forget(cx, c.key(), &mut c.state);
    }

    /// Whatever ran on `vp` stopped; a child still runnable waits again in
    /// its place (it keeps its activation order).
    fn stop(&mut self, vp: ParentVp) {
        let Some(child) = self.ready.stop(vp) else {
            return;
        };
        let c = &mut self.children[child];
        if c.state == Place::Running(vp) {
            self.ready.enqueue(child, c.key(), &mut c.state);
        }
    }
}

impl Scheduler for RateMonotonic {
    fn policy(&self) -> &'static str {
        "rm"
    }

    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let period = params.opt_duration("period").unwrap_or(Duration::ZERO);
        let rank = if period.is_zero() {
            Duration::MAX
        } else {
            period
        };
        self.children.insert(
            child,
            Child {
                own: rank,
                rank,
                seq: 0,
                state: Place::Idle,
            },
        );
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.children.contains(child) {
            return;
        }
        self.forget_runnable(cx, child);
        self.children.remove(child);
        // Only a holder or waiter of an inheriting mutex changes ranks.
        let changed = self.lending.remove(child);
        if !changed.is_empty() {
            self.rerank(changed);
            self.ready.preempt_if_needed(cx);
        }
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state != Place::Idle {
            return;
        }
        let c = &mut self.children[child];
        c.seq = self.next_seq;
        self.next_seq += 1;
        self.ready.wake(cx, child, c.key(), &mut c.state);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        self.forget_runnable(cx, child);
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        self.stop(vp);
        let Some((key, child)) = self.ready.pop_best() else {
            return Dispatch::Release;
        };
        self.ready
            .run(cx, vp, child, key, &mut self.children[child].state);
        Dispatch::Run {
            child,
            until: Instant::NEVER,
        }
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp);
        self.ready.preempt_if_needed(cx);
    }

    /// A mutex declared `protocol = "inherit"` changed hands or gained a
    /// waiter: re-rank who the lending book says, and preempt if a waiting
    /// child now outranks a running one.
    fn sync(&mut self, cx: &mut Cx, event: &SyncEvent<ChildId>) {
        let children = &self.children;
        let changed = self.lending.apply(event, |c| children[c].own);
        if !changed.is_empty() {
            self.rerank(changed);
            self.ready.preempt_if_needed(cx);
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        let ranks = self
            .lending
            .check_ranks(&self.children, |c| c.own, |c| c.rank)?;
        if let Some((child, rank, own, lent)) = ranks {
            return Err(format!(
                "{child} ranks {rank} but its own {own} and what it is lent make {lent}"
            ));
        }
        if let Some((child, _)) = self.children.iter().find(|(_, c)| c.rank.is_zero()) {
            return Err(format!("{child} ranks with a zero period"));
        }
        let places = self.children.iter().map(|(id, c)| (id, c.state, c.key()));
        self.ready.check(places)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::{running_set_ends, strategy, Harness, Parent};

    use proptest::prelude::*;

    fn period(ms: u64) -> Params {
        Params::new().with("period", Value::Duration(Duration::from_millis(ms)))
    }

    fn harness(vps: u32, parent: Parent) -> Harness<RateMonotonic> {
        Harness::new(Box::new(RateMonotonic::new()), vps, parent)
    }

    proptest! {
        #[test]
        fn random_protocol_runs_keep_the_rules(
            vps in 1u32..4,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..150),
        ) {
            let mut h = harness(vps, parent);
            let params = vec![period(10), period(10), period(3), Params::new(), period(50)];
            for step in steps {
                h.step(step, &params);
                if parent == Parent::Manual {
                    continue;
                }
                h.assert_work_conserving();
                let (worst_running, best_waiting) =
                    running_set_ends(&h, Better::Lower, |s, c| s.rank_of(c).unwrap());
                if let (Some(run), Some(wait)) = (worst_running, best_waiting) {
                    prop_assert!(wait >= run, "waiting period {:?} < running {:?} after {:?}", wait, run, step);
                }
            }
        }
    }
}
