//! Identifiers. All are small integers so that policies can index vectors
//! with them and so that runs are reproducible (no addresses, no hashing of
//! pointers).

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident($ty:ty), $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $ty);

        impl $name {
            /// The id as a vector index.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id!(
    /// A physical CPU, `0..cpus`.
    CpuId(u32), "cpu"
);
id!(
    /// A thread (a leaf virtual processor), unique for the whole run.
    ThreadId(u32), "thread"
);
id!(
    /// A scheduler instance in the hierarchy, unique for the whole run (never reused).
    SchedId(u32), "sched"
);
id!(
    /// A child virtual processor of one scheduler, as that scheduler sees it.
    ///
    /// Ids are local to the scheduler instance and dense: the dispatcher hands
    /// out the lowest free index at `register_vp` and frees it after
    /// `unregister_vp`, so a policy keeps its per-child state in a
    /// [`ChildMap`](crate::ChildMap) (a `Vec` indexed by `ChildId::index()`).
    /// A child is a thread or one virtual processor of a child scheduler; the
    /// policy does not need to know which.
    ChildId(u32), "child"
);
id!(
    /// One of the virtual processors a scheduler holds from its parent(s),
    /// numbered `0..n` in the order of its parent links. The root's virtual
    /// processors are the physical CPUs: the root's `ParentVp(i)` is CPU `i`.
    ParentVp(u32), "vp"
);

id!(
    /// A mutex of the platform, unique for the whole run.
    MutexId(u32), "mutex"
);

/// A timer key chosen by the policy. One timer per key and scheduler: setting a
/// key that is already armed moves it.
pub type TimerKey = u64;
