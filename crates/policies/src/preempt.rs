//! Preemption on several CPUs, shared by the policies that keep "the best
//! runnable children on the CPUs I hold" (`fp`, `sfq`, `dbs`).
//!
//! When children wait that outrank running ones, the waiting ones go, best
//! first, to CPUs that will take a child anyway (held but idle, or already
//! being re-decided); each of the rest displaces the worst running child it
//! outranks. Ranks are the policy's: priority, effective tag, deadline.

use hsched_core::{Cx, ParentVp, VpState};

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
}
