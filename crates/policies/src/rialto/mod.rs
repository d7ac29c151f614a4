//! `rialto`: the Rialto scheduler (Jones, Roşu & Roşu, "CPU Reservations and
//! Time Constraints: Efficient, Predictable Scheduling of Independent
//! Activities", SOSP '97).
//!
//! This folder will hold the Rialto policy, split by concept:
//!
//! - [`graph`]: the precomputed scheduling graph for CPU reservations (§3.1,
//!   §4.1, §4.8): construction, incremental change, and the per-base-period
//!   walk the dispatcher follows.
//! - interval assignment (§3.2): reserving future graph intervals for time
//!   constraints (not yet written).
//! - constraints (§3.3, §4.2–§4.5): EDF execution of feasible constraints,
//!   inheritance, criticality, nesting (not yet written).
//! - next-thread selection (§3.4, §3.5, §4.6): round robin within an
//!   activity and the timeshared remainder (not yet written).
//!
//! Nothing here is registered as a policy yet.

pub mod graph;
