//! `rialto`: the Rialto scheduler (Jones, Roşu & Roşu, "CPU Reservations and
//! Time Constraints: Efficient, Predictable Scheduling of Independent
//! Activities", SOSP '97).
//!
//! The policy is split by concept:
//!
//! - [`graph`]: the precomputed scheduling graph for CPU reservations (§3.1,
//!   §4.1, §4.8): construction, incremental change, and the per-base-period
//!   walk the dispatcher follows.
//! - [`constraints`]: time interval assignment for time constraints (§3.2)
//!   and their bookkeeping: feasibility, criticality (§4.3), nesting (§4.4),
//!   the EDF view of assigned time (§3.3).
//! - [`inherit`] (shared with `fp` and `rm`): constraint inheritance across mutexes and RPCs (§4.2,
//!   §4.6): blocked-on chains with path compression, FIFO hand-off,
//!   deadlock refusal, the RPC server's activity.
//! - [`figures`]: the paper's §5 measurements (Fig. 5-1, Fig. 5-2) as work
//!   a benchmark times, without its reaching into the graph or the book.
//! - [`policy`]: the `rialto` policy itself and its guarantees (the
//!   module documentation), over its child modules:
//!   - `policy/state.rs`: threads, activities, graph VPs and the records
//!     the rest share; `policy/params.rs`: parameters, building, `grants`;
//!   - `policy/scheduler.rs`: the scheduler callbacks;
//!     `policy/invariants.rs`: `check_invariants`;
//!   - `policy/select.rs`: next-thread selection, §4.6 rules 1–5 (EDF execution of
//!     constraints in assigned time, §3.3; round robin within an activity
//!     and for the timeshared remainder, §3.4, §3.5; the second-chance
//!     queue, §4.5; the inheritance chain, §4.2);
//!   - `policy/queues.rs` and `policy/walk.rs`: the per-activity and
//!     round-robin queues and the walk of the current base period that keep
//!     a decision `O(log n)`;
//!   - `policy/requests.rs`: the messages (reservations, constraints, mutexes and
//!     RPCs driving [`inherit`]).

pub mod constraints;
pub mod figures;
pub mod graph;
/// The inheritance book, shared with the priority policies.
pub use crate::inherit;
pub mod place;
pub mod policy;

pub use policy::{grants, Grant, Rialto, INFO};
