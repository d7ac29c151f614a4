//! What the unit tests of the policies share: the dispatcher's testkit
//! (one policy in a real dispatcher) and proptest strategies over it.

pub(crate) use hsched_dispatch::testkit::*;

use crate::preempt::{worst_running_best_waiting, Better};
use hsched_core::{ChildId, Scheduler};

/// The two ends that meet when the running set is the top of the runnable
/// children, under the policy's `rank` of a child: the worst rank among the
/// requesting children that run and the best among those that wait (`None`
/// for an empty side). See [`worst_running_best_waiting`].
pub fn running_set_ends<S: Scheduler + ?Sized, K: Ord>(
    h: &Harness<S>,
    better: Better,
    rank: impl Fn(&S, ChildId) -> K,
) -> (Option<K>, Option<K>) {
    let (running, waiting): (Vec<ChildId>, Vec<ChildId>) = h
        .requesting()
        .into_iter()
        .partition(|&c| h.where_runs(c).is_some());
    let sched = h.sched();
    let ranks = |children: Vec<ChildId>| children.into_iter().map(|c| rank(&sched, c));
    worst_running_best_waiting(better, ranks(running), ranks(waiting))
}

/// Proptest strategies shared by the policies' property tests.
pub(crate) mod strategy {
    use super::{Parent, Step};
    use proptest::prelude::*;

    /// A random step; time advances by up to 30ms.
    pub fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            2 => any::<u8>().prop_map(Step::Register),
            1 => any::<u8>().prop_map(Step::Unregister),
            4 => any::<u8>().prop_map(Step::Wake),
            3 => any::<u8>().prop_map(Step::Block),
            2 => any::<u8>().prop_map(Step::Grant),
            1 => any::<u8>().prop_map(Step::Revoke),
            3 => (0u32..30_000).prop_map(Step::Advance),
        ]
    }

    pub fn parent() -> impl Strategy<Value = Parent> {
        prop_oneof![
            Just(Parent::Root),
            Just(Parent::Manual),
            Just(Parent::Eager)
        ]
    }
}
