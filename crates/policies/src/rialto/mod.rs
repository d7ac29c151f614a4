//! `rialto`: the Rialto scheduler (Jones, Roşu & Roşu, "CPU Reservations and
//! Time Constraints: Efficient, Predictable Scheduling of Independent
//! Activities", SOSP '97).
//!
//! This folder will hold the Rialto policy, split by concept:
//!
//! - [`graph`]: the precomputed scheduling graph for CPU reservations (§3.1,
//!   §4.1, §4.8): construction, incremental change, and the per-base-period
//!   walk the dispatcher follows.
//! - [`constraints`]: time interval assignment for time constraints (§3.2)
//!   and their bookkeeping: feasibility, criticality (§4.3), nesting (§4.4),
//!   the EDF view of assigned time (§3.3).
//! - EDF execution of accepted constraints in assigned time (§3.3): in
//!   [`policy`] (the second-chance queue of §4.5 is not written yet).
//! - [`inherit`]: constraint inheritance across mutexes and RPCs (§4.2,
//!   §4.6): blocked-on chains with path compression, FIFO hand-off,
//!   deadlock refusal, the RPC server's activity (not wired into the policy
//!   yet).
//! - next-thread selection (§3.4, §3.5, §4.6): round robin within an
//!   activity and the timeshared remainder: in [`policy`].
//!
//! - [`policy`]: the `rialto` policy itself (§4.6 selection over the
//!   graph's walk, reservations and constraints by message).

pub mod constraints;
pub mod graph;
pub mod inherit;
pub mod policy;

pub use policy::{Rialto, INFO};
