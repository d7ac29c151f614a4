//! Configuring BVT: Duda & Cheriton, "Borrowed-Virtual-Time (BVT)
//! scheduling", SOSP '99, §6 ("Configuring BVT scheduling").
//!
//! What this module computes, each from the section that defines it:
//!
//! - §6.1.1 *CPU share*: shares → small-integer mcu advances `m_i`, the
//!   virtual window `V` and the physical window `W`
//!   ([`advances_from_shares`], [`window_from_advances`],
//!   [`window_from_shares`]); the worst-case share of a thread whose warp is
//!   not bounded by an unwarp time requirement, `m·w_i` with `m = W_i/V`
//!   ([`warp_windows`], [`worst_case_share`]).
//! - §6.1.3 *Response time*: priority levels → warp values
//!   ([`warps_from_priorities`], [`warps_for_advances`], [`warp_increment`]).
//! - §6.1.1 / §6.3 *admission control* for reserved-effort (RE) threads next
//!   to a best-effort (BE) aggregate share ([`admit`]).
//! - A configured node read back for display: advances, warps and limits →
//!   shares, `V`, `W`, warp lead times and the problems found ([`describe`]).
//! - §6.2.3: how long a warp lets a thread run ahead ([`warp_lead_mcu`]).
//!
//! Units. Time is integer nanoseconds ([`hsched_core::Duration`]). Virtual
//! time is in the units the `bvt` policy uses: a thread with mcu advance
//! `m_i` gains `m_i` units of actual virtual time (AVT) per mcu it is
//! charged (§2.1), and the charge for running `t` is `ceil(t/mcu)` mcu.
//! The paper's `L_i/w_i` ("the amount the thread's AVT increases by running
//! for the full `L_i`") is therefore `ceil(L_i/mcu)·m_i` units here.
//! Shares are exact fractions ([`Share`]): nothing computed here goes
//! through floating point.
//!
//! Limits. The paper states no approximation tolerance for the advances, so
//! they represent the shares *exactly* (the smallest such integers); shares
//! that are not simple fractions give large advances and windows, which is
//! what they cost. Admission follows the paper's accounting, which is a
//! worst case per thread (it assumes every unlimited warper takes its warp
//! in the same window); it is deliberately conservative.

mod admission;
mod clock;
mod describe;
mod priorities;
mod warp;
mod window;

pub use admission::*;
pub use clock::{BvtClock, ConfigError};
pub use describe::*;
/// The exact fraction these functions compute with (hsched-core's).
pub use hsched_core::Share;
pub use priorities::*;
pub use warp::*;
pub use window::*;
