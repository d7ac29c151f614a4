//! hsched core: integer-nanosecond time, ids, typed parameters, messages and
//! the scheduler protocol ([`Scheduler`], [`Dispatch`], [`Cx`]).
//!
//! This crate does no I/O, reads no clock, holds no global state and uses no
//! floating point in anything a decision depends on.

#![forbid(unsafe_code)]

pub mod child_map;
pub mod ids;
pub mod msg;
pub mod params;
pub mod registry;
pub mod sched;
pub mod share;
pub mod sync;
pub mod time;

pub use child_map::ChildMap;
pub use ids::{ChildId, CpuId, MutexId, ParentVp, SchedId, ThreadId, TimerKey};
pub use msg::{Msg, Reply};
pub use params::{ParamKind, ParamSpec, Params, Value};
pub use registry::{Fallback, Registry};
pub use sched::{Cx, Dispatch, Effect, Reject, Scheduler, Sender, VpState};
pub use share::{Share, ShareRange};
pub use sync::{MutexProtocol, SyncEvent};
pub use time::{Duration, Instant};

/// What a policy type declares: its name, documentation, its own parameters,
/// the parameters each child attaches with, and how to build an instance.
/// Policy *types* are separate from *instances* (a hierarchy may run several
/// instances of one policy, as Xen does). `Copy`, so that a registry can be
/// assembled from the built-in one and policies loaded at run time.
#[derive(Clone, Copy)]
pub struct PolicyInfo {
    pub name: &'static str,
    /// One line: what it is.
    pub summary: &'static str,
    /// The paper and section it follows, its guarantees and limits.
    pub doc: &'static str,
    pub params: fn() -> Vec<ParamSpec>,
    pub child_params: fn() -> Vec<ParamSpec>,
    /// Builds an instance from parameters already resolved against `params`.
    pub build: fn(&Params) -> Result<Box<dyn Scheduler>, String>,
    /// How many parents an instance may have: 1 for most, more for `join`.
    pub max_parents: u32,
    /// How many children an instance may have: 1 for `join` and `limit`.
    pub max_children: u32,
}
