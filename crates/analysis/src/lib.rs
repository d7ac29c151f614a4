//! hsched analysis: the HLS guarantee algebra (Regehr & Stankovic §3–§4)
//! and per-policy configuration and admission rules.
//!
//! This layer will label every edge of a hierarchy with the guarantee it
//! carries (ALL, NULL, RESBH/RESBS/RESCH/RESCS, RESU, PSBE, PS), apply each
//! policy's conversion rules, and check admission at every node before
//! anything runs. It is pure: no I/O, no clock, integer arithmetic.
//!
//! - [`ratio`]: exact non-negative fractions (shares, windows).
//! - [`bvt_config`]: configuring BVT (Duda & Cheriton §6): shares → mcu
//!   advances, the virtual and physical windows V and W, priority levels →
//!   warps, reserved-effort admission control, and a configured node read
//!   back ([`bvt_config::describe`]).
//! - [`bvt_report`](mod@bvt_report): what `hsched check` prints under a `bvt` node.
//!
//! Status: the HLS guarantee types, rewrite rules and the top-down analysis
//! arrive with the HLS guarantees work; until then `hsched check` validates
//! the scenario, prints the hierarchy, and analyses `bvt` nodes.

pub mod bvt_config;
pub mod bvt_report;
pub mod ratio;

pub use bvt_report::bvt_report;
