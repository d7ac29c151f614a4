//! hsched analysis: the HLS guarantee algebra (Regehr & Stankovic §3–§4)
//! and per-policy configuration and admission rules.
//!
//! This layer labels every edge of a hierarchy with the guarantee it
//! carries (ALL, NULL, RESBH/RESBS/RESCH/RESCS, RESU, PSBE, PS), applying
//! each policy's conversion rules, and checks admission at every node
//! before anything runs. It is pure: no I/O, no clock, integer arithmetic.
//!
//! - Shares and other exact fractions are [`hsched_core::Share`]s.
//! - [`bvt_config`]: configuring BVT (Duda & Cheriton §6): shares → mcu
//!   advances, the virtual and physical windows V and W, priority levels →
//!   warps, reserved-effort admission control, and a configured node read
//!   back ([`bvt_config::describe`]).
//! - [`bvt_report`](mod@bvt_report): what `hsched check` prints under a `bvt` node.
//! - [`guarantee`]: the HLS guarantee types (§4), parsed and printed as the
//!   paper writes them; [`rewrite`]: Table 2, Theorems 1–6 and the SFQ rule;
//!   [`schedule_check`]: whether a schedule (busy intervals) meets one.
//! - [`rules`]: Table 1, per policy: what each scheduler accepts and gives
//!   its children (built-in rules, the literature rows as data, rows added
//!   at run time); [`compose`]: the top-down analysis of §3.3, every edge
//!   labelled or the problem named; [`draw`]: the labelled hierarchy as
//!   text, DOT, SVG (like the paper's Fig. 3) and JSON; [`guard`]: the
//!   analysis re-run on each change of a running hierarchy.

#![forbid(unsafe_code)]

pub mod bvt_config;
pub mod bvt_report;
pub mod compose;
pub mod draw;
pub mod guarantee;
pub mod guard;
pub mod rewrite;
pub mod rules;
pub mod schedule_check;
pub mod throughput;

pub use bvt_report::bvt_report;
