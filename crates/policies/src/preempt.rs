//! Preemption on several CPUs, shared by the policies that keep "the best
//! runnable children on the CPUs I hold" (`fp`, `sfq`, `dbs`, `res`, `ts`, `edf`, `rm`).
//!
//! [`RunningSlots`] is the bookkeeping they share: what runs on each VP the
//! scheduler holds, the running children that may be preempted ordered by
//! the policy's rank (priority, effective tag, deadline), and the VPs whose
//! child was revoked and is about to be re-decided. Its
//! [`RunningSlots::preempt_if_needed`] keeps the running set equal to the
//! top runnable children: when children wait that outrank running ones,
//! the waiting ones go, best first, to CPUs that will take a child anyway
//! (held but idle, or already being re-decided); each of the rest displaces
//! the worst running child it outranks, with `Cx::revoke`. The `vp_grant`
//! that follows each revoke is where the policy runs its best waiting child.
//!
//! Ties between running children of equal rank are broken by VP, so that
//! every decision is a function of the state alone: the worst running
//! child is the smallest (rank, VP) pair when higher ranks are better and
//! the largest when lower ranks are better.
//!
//! Cost: placing, clearing, revoking and re-ranking are O(log vps); a
//! preemption check is O(log vps) when nothing waits that outranks a
//! running child (the common case) and O(vps) when it scans for spare CPUs.

use hsched_core::{ChildId, Cx, ParentVp, VpState};
use std::collections::BTreeSet;

/// Which ranks run first: the policy's order of its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Smaller ranks run first (deadlines, virtual-time tags).
    Lower,
    /// Larger ranks run first (priorities).
    Higher,
}

impl Better {
    /// Whether rank `a` should run before rank `b` (strictly).
    pub fn outranks<K: Ord>(self, a: &K, b: &K) -> bool {
        match self {
            Better::Lower => a < b,
            Better::Higher => a > b,
        }
    }
}

/// What runs on one VP: the child, the rank it runs with, and the policy's
/// own state of the run (`data`: its horizon, when it was last charged...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Running<K, S> {
    child: ChildId,
    rank: K,
    preempting: bool,
    /// The policy's state of this run.
    pub data: S,
}

impl<K: Copy, S> Running<K, S> {
    pub fn child(&self) -> ChildId {
        self.child
    }
    /// The rank the child runs with (kept up to date with
    /// [`RunningSlots::rerank`]).
    pub fn rank(&self) -> K {
        self.rank
    }
    /// A revoke of this child was asked and its re-decision is pending: it
    /// is no longer a candidate for preemption, and its VP counts as spare.
    pub fn preempting(&self) -> bool {
        self.preempting
    }
}

/// What a scheduler runs on each of its VPs, and which of those runs may be
/// preempted: see the module documentation.
#[derive(Clone, Debug)]
pub struct RunningSlots<K, S = ()> {
    better: Better,
    slots: Vec<Option<Running<K, S>>>,
    /// The runs not being preempted, by (rank, VP).
    candidates: BTreeSet<(K, ParentVp)>,
    /// Slots whose run is being preempted.
    preempting: usize,
}

impl<K: Ord + Copy, S> RunningSlots<K, S> {
    /// Nothing runs yet; ranks are ordered by `better`.
    pub fn new(better: Better) -> Self {
        RunningSlots {
            better,
            slots: Vec::new(),
            candidates: BTreeSet::new(),
            preempting: 0,
        }
    }

    /// `child` runs on `vp` with `rank`. The VP must be empty (the policy
    /// [`clear`](Self::clear)s it when the run there stops).
    pub fn place(&mut self, vp: ParentVp, child: ChildId, rank: K, data: S) {
        if vp.index() >= self.slots.len() {
            self.slots.resize_with(vp.index() + 1, || None);
        }
        let replaced = self.clear(vp);
        debug_assert!(replaced.is_none(), "{vp} was not cleared before a new run");
        self.slots[vp.index()] = Some(Running {
            child,
            rank,
            preempting: false,
            data,
        });
        self.candidates.insert((rank, vp));
    }

    /// The run on `vp` stopped (a new decision, a revoke, the child left):
    /// empties the slot and returns what ran there.
    pub fn clear(&mut self, vp: ParentVp) -> Option<Running<K, S>> {
        let run = self.slots.get_mut(vp.index()).and_then(Option::take)?;
        if run.preempting {
            self.preempting -= 1;
        } else {
            self.candidates.remove(&(run.rank, vp));
        }
        Some(run)
    }

    /// Preempts the child on `vp` (`Cx::revoke`) unless it is already being
    /// preempted; the slot stays filled until the re-decision clears it.
    pub fn revoke(&mut self, cx: &mut Cx, vp: ParentVp) {
        let Some(run) = self.slots.get_mut(vp.index()).and_then(Option::as_mut) else {
            return;
        };
        if !run.preempting {
            run.preempting = true;
            self.candidates.remove(&(run.rank, vp));
            self.preempting += 1;
            cx.revoke(run.child);
        }
    }

    /// The child on `vp` now runs with `rank` (its warp, its reservation
    /// changed); a candidate moves to its new place in the order.
    pub fn rerank(&mut self, vp: ParentVp, rank: K) {
        let Some(run) = self.slots.get_mut(vp.index()).and_then(Option::as_mut) else {
            return;
        };
        if !run.preempting {
            self.candidates.remove(&(run.rank, vp));
            self.candidates.insert((rank, vp));
        }
        run.rank = rank;
    }

    pub fn get(&self, vp: ParentVp) -> Option<&Running<K, S>> {
        self.slots.get(vp.index()).and_then(Option::as_ref)
    }

    /// The policy's state of the run on `vp`.
    pub fn data_mut(&mut self, vp: ParentVp) -> Option<&mut S> {
        let run = self.slots.get_mut(vp.index()).and_then(Option::as_mut)?;
        Some(&mut run.data)
    }

    /// The child running on `vp`, if any.
    pub fn child_on(&self, vp: ParentVp) -> Option<ChildId> {
        self.get(vp).map(|r| r.child)
    }

    /// Every run, by VP.
    pub fn iter(&self) -> impl Iterator<Item = (ParentVp, &Running<K, S>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(v, run)| Some((ParentVp(v as u32), run.as_ref()?)))
    }

    /// How many VPs run a child (being preempted or not).
    pub fn len(&self) -> usize {
        self.candidates.len() + self.preempting
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The worst running child that may be preempted: its (rank, VP).
    pub fn worst(&self) -> Option<(K, ParentVp)> {
        match self.better {
            Better::Higher => self.candidates.first().copied(),
            Better::Lower => self.candidates.last().copied(),
        }
    }

    /// Keeps the running set equal to the top runnable children: while the
    /// best waiting children outrank the worst running ones, revoke those.
    /// `waiting` yields the waiting children's ranks, best first (it is
    /// read no further than the first rank unless that one outranks the
    /// worst running child). Idle held CPUs (at the root, after a
    /// `Release`) and CPUs already being re-decided take the best waiting
    /// children first, so only the rest preempt.
    pub fn preempt_if_needed(&mut self, cx: &mut Cx, waiting: impl IntoIterator<Item = K>) {
        let mut waiting = waiting.into_iter().peekable();
        let (Some(best), Some((worst, _))) = (waiting.peek(), self.worst()) else {
            return;
        };
        let better = self.better;
        if !better.outranks(best, &worst) {
            return; // the common case, in O(log n)
        }
        let spare = idle_held(cx, |vp| self.get(vp).is_some()) + self.preempting;
        let outranks = |w: &K, r: &K| better.outranks(w, r);
        let chosen = match better {
            Better::Higher => victims(waiting, self.candidates.iter().copied(), spare, outranks),
            Better::Lower => victims(
                waiting,
                self.candidates.iter().rev().copied(),
                spare,
                outranks,
            ),
        };
        for (_, vp) in chosen {
            self.revoke(cx, vp);
        }
    }

    /// Every run is of a registered child whose own state says it runs on
    /// that VP, and passes the policy's `check` of it (its rank, say).
    /// `child(id)` finds a registered child; `runs_on` reads where its
    /// state says it runs.
    pub fn check_runs<'c, C: 'c>(
        &self,
        child: impl Fn(ChildId) -> Option<&'c C>,
        runs_on: impl Fn(&C) -> Option<ParentVp>,
        check: impl Fn(ParentVp, &Running<K, S>, &C) -> Result<(), String>,
    ) -> Result<(), String> {
        for (vp, run) in self.iter() {
            let Some(c) = child(run.child) else {
                return Err(format!("{vp} runs {}, which is not registered", run.child));
            };
            if runs_on(c) != Some(vp) {
                return Err(format!(
                    "{vp} runs {}, which is not running there",
                    run.child
                ));
            }
            check(vp, run, c)?;
        }
        Ok(())
    }

    /// The bookkeeping is consistent: every run not being preempted is a
    /// candidate under its rank, and the counts agree with the slots.
    pub fn check_invariants(&self) -> Result<(), String>
    where
        K: std::fmt::Debug,
    {
        let (mut preempting, mut candidates) = (0, 0);
        for (vp, run) in self.iter() {
            if run.preempting {
                preempting += 1;
            } else {
                candidates += 1;
                if !self.candidates.contains(&(run.rank, vp)) {
                    return Err(format!(
                        "{} runs on {vp} with rank {:?} but is no preemption candidate",
                        run.child, run.rank
                    ));
                }
            }
        }
        if preempting != self.preempting || candidates != self.candidates.len() {
            return Err(format!(
                "{} preempting / {} candidates recorded, slots say {preempting} / {candidates}",
                self.preempting,
                self.candidates.len()
            ));
        }
        Ok(())
    }
}

/// The running children to preempt, worst first: `waiting` yields the
/// waiting children's ranks best first, `running_worst_first` the running
/// ones' (rank, VP) worst first, `spare` counts CPUs that take a waiting
/// child without preempting anyone, and `outranks(w, r)` says whether a
/// waiting rank should displace a running one.
pub fn victims<W, R: Copy>(
    waiting: impl IntoIterator<Item = W>,
    running_worst_first: impl IntoIterator<Item = (R, ParentVp)>,
    spare: usize,
    outranks: impl Fn(&W, &R) -> bool,
) -> Vec<(R, ParentVp)> {
    let mut worst_first = running_worst_first.into_iter();
    let mut chosen = Vec::new();
    for w in waiting.into_iter().skip(spare) {
        match worst_first.next() {
            Some((r, vp)) if outranks(&w, &r) => chosen.push((r, vp)),
            _ => break,
        }
    }
    chosen
}

/// The two ends that meet when the running set is the top of the runnable
/// children: the worst rank among `running` and the best among `waiting`
/// (`None` for an empty side). No waiting child outranks a running one
/// exactly when `better.outranks(best waiting, worst running)` is false.
pub fn worst_running_best_waiting<K: Ord>(
    better: Better,
    running: impl IntoIterator<Item = K>,
    waiting: impl IntoIterator<Item = K>,
) -> (Option<K>, Option<K>) {
    match better {
        Better::Lower => (running.into_iter().max(), waiting.into_iter().min()),
        Better::Higher => (running.into_iter().min(), waiting.into_iter().max()),
    }
}

/// CPUs this scheduler holds but runs nothing on: `runs(vp)` says whether
/// the policy runs a child on `vp`.
pub fn idle_held(cx: &Cx, runs: impl Fn(ParentVp) -> bool) -> usize {
    (0..cx.vp_count())
        .map(ParentVp)
        .filter(|&vp| matches!(cx.vp_state(vp), VpState::Held(_)) && !runs(vp))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsched_core::{CpuId, Effect, Instant};

    #[test]
    fn waiting_children_take_spare_cpus_first_then_displace_the_worst() {
        // Higher is better; running ranks 1, 3, 5 on vp0..2 (worst first).
        let running = [(1, ParentVp(0)), (3, ParentVp(1)), (5, ParentVp(2))];
        let outranks = |w: &i32, r: &i32| w > r;
        assert_eq!(
            victims([9, 4], running, 0, outranks),
            vec![(1, ParentVp(0)), (3, ParentVp(1))]
        );
        assert_eq!(
            victims([9, 4], running, 1, outranks),
            vec![(1, ParentVp(0))]
        );
        assert_eq!(victims([9, 4], running, 2, outranks), vec![]);
        // A waiting child that does not outrank the worst running one stops it.
        assert_eq!(victims([0, 9], running, 0, outranks), vec![]);
        assert_eq!(
            victims([2, 2], running, 0, outranks),
            vec![(1, ParentVp(0))]
        );
    }

    /// Runs `f` with a context whose VPs are in `vps`; returns the effects.
    fn with_cx(vps: &[VpState], f: impl FnOnce(&mut Cx)) -> Vec<Effect> {
        let mut effects = Vec::new();
        let mut cx = Cx::new(Instant::ZERO, vps.len() as u32, None, vps, &mut effects);
        f(&mut cx);
        effects
    }

    fn held(n: u32) -> Vec<VpState> {
        (0..n).map(|c| VpState::Held(CpuId(c))).collect()
    }

    fn revoked(effects: &[Effect]) -> Vec<ChildId> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Revoke(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    /// Three VPs run ranks 1, 3, 3 (higher is better).
    fn three_running() -> RunningSlots<i64, &'static str> {
        let mut s = RunningSlots::new(Better::Higher);
        s.place(ParentVp(0), ChildId(10), 3, "a");
        s.place(ParentVp(1), ChildId(11), 1, "b");
        s.place(ParentVp(2), ChildId(12), 3, "c");
        s.check_invariants().unwrap();
        s
    }

    #[test]
    fn the_worst_is_the_lowest_rank_or_the_highest_deadline_ties_by_vp() {
        let mut s = three_running();
        assert_eq!(s.worst(), Some((1, ParentVp(1))));
        s.clear(ParentVp(1));
        assert_eq!(s.worst(), Some((3, ParentVp(0))), "ties: the lower VP");
        let mut edf = RunningSlots::<u64>::new(Better::Lower);
        edf.place(ParentVp(0), ChildId(1), 20, ());
        edf.place(ParentVp(1), ChildId(2), 20, ());
        edf.place(ParentVp(2), ChildId(3), 10, ());
        assert_eq!(edf.worst(), Some((20, ParentVp(1))), "ties: the higher VP");
    }

    #[test]
    fn preempts_the_worst_runs_a_better_waiting_child_outranks() {
        let mut s = three_running();
        // Nothing waiting, or nothing better: no preemption.
        let none = with_cx(&held(3), |cx| s.preempt_if_needed(cx, []));
        assert!(revoked(&none).is_empty());
        let equal = with_cx(&held(3), |cx| s.preempt_if_needed(cx, [1, 1]));
        assert!(revoked(&equal).is_empty());
        // Ranks 5 and 4 wait: they displace rank 1 (vp1), then rank 3 on vp0.
        let effects = with_cx(&held(3), |cx| s.preempt_if_needed(cx, [5, 4, 2]));
        assert_eq!(revoked(&effects), vec![ChildId(11), ChildId(10)]);
        assert!(s.get(ParentVp(1)).unwrap().preempting());
        assert_eq!(s.len(), 3, "revoked runs keep their slots until cleared");
        assert_eq!(s.worst(), Some((3, ParentVp(2))));
        s.check_invariants().unwrap();
        // The two re-decisions pending absorb the next two waiting children.
        let again = with_cx(&held(3), |cx| s.preempt_if_needed(cx, [5, 4]));
        assert!(revoked(&again).is_empty());
        let third = with_cx(&held(3), |cx| s.preempt_if_needed(cx, [5, 4, 9]));
        assert_eq!(revoked(&third), vec![ChildId(12)]);
        // A revoked run's re-decision clears it.
        let cleared = s.clear(ParentVp(1)).unwrap();
        assert_eq!(
            (cleared.child(), cleared.rank(), cleared.data),
            (ChildId(11), 1, "b")
        );
        s.check_invariants().unwrap();
    }

    #[test]
    fn idle_held_cpus_take_waiting_children_before_anyone_is_preempted() {
        let mut s = RunningSlots::<u64>::new(Better::Lower);
        s.place(ParentVp(0), ChildId(1), 50, ());
        // vp1 is held with nothing on it: the first waiting child goes there.
        let one = with_cx(&held(2), |cx| s.preempt_if_needed(cx, [10]));
        assert!(revoked(&one).is_empty());
        let two = with_cx(&held(2), |cx| s.preempt_if_needed(cx, [10, 20]));
        assert_eq!(revoked(&two), vec![ChildId(1)]);
        // A VP only requested does not count as spare.
        let mut t = RunningSlots::<u64>::new(Better::Lower);
        t.place(ParentVp(0), ChildId(1), 50, ());
        let vps = [VpState::Held(CpuId(0)), VpState::Requesting];
        let effects = with_cx(&vps, |cx| t.preempt_if_needed(cx, [10]));
        assert_eq!(revoked(&effects), vec![ChildId(1)]);
    }

    #[test]
    fn reranking_moves_a_candidate_and_revoke_is_idempotent() {
        let mut s = three_running();
        s.rerank(ParentVp(1), 7);
        assert_eq!(s.worst(), Some((3, ParentVp(0))));
        s.check_invariants().unwrap();
        let first = with_cx(&held(3), |cx| s.revoke(cx, ParentVp(1)));
        let second = with_cx(&held(3), |cx| s.revoke(cx, ParentVp(1)));
        assert_eq!(
            (revoked(&first), revoked(&second)),
            (vec![ChildId(11)], vec![])
        );
        // A run being preempted keeps its new rank but is no candidate.
        s.rerank(ParentVp(1), 0);
        assert_eq!(s.get(ParentVp(1)).unwrap().rank(), 0);
        assert_eq!(s.worst(), Some((3, ParentVp(0))));
        *s.data_mut(ParentVp(2)).unwrap() = "c2";
        assert_eq!(s.get(ParentVp(2)).unwrap().data, "c2");
        assert_eq!(s.child_on(ParentVp(2)), Some(ChildId(12)));
        assert_eq!(s.child_on(ParentVp(7)), None);
        let vps: Vec<ParentVp> = s.iter().map(|(vp, _)| vp).collect();
        assert_eq!(vps, vec![ParentVp(0), ParentVp(1), ParentVp(2)]);
        s.check_invariants().unwrap();
        // Clearing or revoking an empty or unknown VP does nothing.
        assert!(s.clear(ParentVp(9)).is_none());
        assert!(revoked(&with_cx(&held(3), |cx| s.revoke(cx, ParentVp(9)))).is_empty());
        for v in 0..3 {
            s.clear(ParentVp(v));
        }
        assert!(s.is_empty());
        s.check_invariants().unwrap();
    }
}
