//! One queue of waiting children ordered by their rank, with the running
//! slots beside it: the bookkeeping of the policies whose every decision
//! runs the best-ranked waiting child and whose waking children may preempt
//! (`edf`, by deadline; `rm`, by period).
//!
//! [`RankedQueue`] holds the queue, the [`RunningSlots`] and the count of
//! runnable children; each child's [`Place`] stays in the policy's own
//! record of it (beside its rank), and the queue's methods move it. What
//! ranks a child, and when its rank changes, is the policy's.

use crate::preempt::{Better, RunningSlots};
use hsched_core::{ChildId, Cx, ParentVp};
use std::collections::BTreeMap;

/// Where a child stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Idle,
    Waiting,
    Running(ParentVp),
}

/// The waiting children by rank, the running ones by VP, and how many are
/// runnable (the CPUs to want): see the module documentation.
#[derive(Clone, Debug)]
pub struct RankedQueue<K> {
    queue: BTreeMap<K, ChildId>,
    running: RunningSlots<K>,
    runnable: u32,
}

impl<K: Ord + Copy + std::fmt::Debug> RankedQueue<K> {
    /// Nothing waits or runs; ranks are ordered by `better`.
    pub fn new(better: Better) -> Self {
        RankedQueue {
            queue: BTreeMap::new(),
            running: RunningSlots::new(better),
            runnable: 0,
        }
    }

    /// `child` (in `place`) waits under `rank`.
    pub fn enqueue(&mut self, child: ChildId, rank: K, place: &mut Place) {
        *place = Place::Waiting;
        self.queue.insert(rank, child);
    }

    /// An idle `child` became runnable: it waits under `rank`, the policy
    /// wants one more CPU, and it preempts a worse running child if no CPU
    /// is free.
    pub fn wake(&mut self, cx: &mut Cx, child: ChildId, rank: K, place: &mut Place) {
        self.enqueue(child, rank, place);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        self.preempt_if_needed(cx);
    }

    /// A child (in `place`, ranked `rank`) stopped being runnable: it
    /// leaves the queue or its VP (whose re-decision follows) and the
    /// policy wants one CPU fewer. Nothing for an idle child.
    pub fn forget(&mut self, cx: &mut Cx, rank: K, place: &mut Place) {
        match *place {
            Place::Idle => return,
            Place::Waiting => {
                self.queue.remove(&rank);
            }
            Place::Running(vp) => {
                self.running.clear(vp);
            }
        }
        *place = Place::Idle;
        self.runnable -= 1;
        cx.want_cpus(self.runnable);
    }

    /// The run on `vp` stopped (a re-decision, a revoke): the child that
    /// ran there, for the policy to queue again if its place is still
    /// `Running(vp)`.
    pub fn stop(&mut self, vp: ParentVp) -> Option<ChildId> {
        self.running.clear(vp).map(|run| run.child())
    }

    /// The best waiting child, out of the queue, with its rank.
    pub fn pop_best(&mut self) -> Option<(K, ChildId)> {
        self.queue.pop_first()
    }

    /// `child` runs on `vp` under `rank`; a child the choice left waiting
    /// may preempt elsewhere.
    pub fn run(&mut self, cx: &mut Cx, vp: ParentVp, child: ChildId, rank: K, place: &mut Place) {
        *place = Place::Running(vp);
        self.running.place(vp, child, rank, ());
        self.preempt_if_needed(cx);
    }

    /// A child's rank changed from `old` to `new`: it moves in the queue,
    /// or its run is re-ranked.
    pub fn rerank(&mut self, child: ChildId, place: Place, old: K, new: K) {
        match place {
            Place::Idle => {}
            Place::Waiting => {
                self.queue.remove(&old);
                self.queue.insert(new, child);
            }
            Place::Running(vp) => self.running.rerank(vp, new),
        }
    }

    /// While a waiting child outranks a running one, preempt the worst.
    pub fn preempt_if_needed(&mut self, cx: &mut Cx) {
        self.running
            .preempt_if_needed(cx, self.queue.keys().copied());
    }

    /// The queue, the slots, the runnable count and the children's own
    /// places (with their ranks) agree. Every queue entry is a waiting
    /// child under its rank and every waiting child is queued; every
    /// running child holds its VP with its rank and every VP's child runs
    /// there; the count is the waiting plus the running. Then the slots'
    /// own bookkeeping.
    pub fn check(
        &self,
        children: impl IntoIterator<Item = (ChildId, Place, K)>,
    ) -> Result<(), String> {
        let places: BTreeMap<ChildId, (Place, K)> = children
            .into_iter()
            .map(|(child, place, rank)| (child, (place, rank)))
            .collect();
        for (key, &child) in &self.queue {
            match places.get(&child) {
                Some(&(Place::Waiting, rank)) if rank == *key => {}
                other => {
                    return Err(format!(
                        "queue entry {key:?} -> {child} does not match {other:?}"
                    ))
                }
            }
        }
        let (mut waiting, mut counted) = (0, 0);
        for (&child, &(place, rank)) in &places {
            match place {
                Place::Idle => {}
                Place::Waiting => {
                    waiting += 1;
                    counted += 1;
                    if self.queue.get(&rank) != Some(&child) {
                        return Err(format!("{child} waits but is not queued"));
                    }
                }
                Place::Running(vp) => {
                    counted += 1;
                    match self.running.get(vp) {
                        Some(run) if run.child() == child && run.rank() == rank => {}
                        other => {
                            return Err(format!(
                                "{child} runs on {vp} with key {rank:?} but {vp} holds {other:?}"
                            ))
                        }
                    }
                }
            }
        }
        for (vp, run) in self.running.iter() {
            if places.get(&run.child()).map(|p| p.0) != Some(Place::Running(vp)) {
                return Err(format!(
                    "{vp} runs {}, which is not running there",
                    run.child()
                ));
            }
        }
        if waiting != self.queue.len() || counted != self.runnable {
            return Err(format!(
                "queue holds {} / count says {} runnable; states say {waiting} waiting / {counted} runnable",
                self.queue.len(),
                self.runnable
            ));
        }
        self.running.check_invariants()
    }
}
