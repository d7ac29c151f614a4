//! hsched model: plain data shared by the scenario parser, both platforms
//! (sim and live) and the reports.
//!
//! - [`Scenario`]: what a scenario file describes: the machine, the hierarchy,
//!   the threads and their workload programs, scripted hierarchy changes.
//! - [`RunResult`]: what a run produces, whichever platform ran it.
//!
//! This crate sits beside `core` below `dispatch`: the original layer list
//! had no home for data both platforms and the scenario parser share
//! (docs/architecture.md, "Where the code departs from the original
//! design"). It holds data only: no I/O, no clock.

#![forbid(unsafe_code)]

mod draw;
pub mod guard;
pub mod result;
pub mod scenario;
pub mod sketch;

pub use draw::draw;
pub use result::*;
pub use scenario::*;
pub use sketch::{record_latency, sketched_latencies_note, Sketch, MAX_KEPT_LATENCIES};
