//! Reproductions of the BVT paper's (Duda & Cheriton, SOSP '99) claims
//! beyond its figures and §5: the video-player tables of §4.1–4.2 in
//! simulation, Fig. 1's scheduling window, §2.2's device thread, §2.5's
//! two-level threshold and direct modes, §6.1.3's warp assignment, and (a
//! timing entry) §4's scheduler overhead.
//!
//! Where the paper's number follows from BVT's rules, the expected value is
//! computed from those rules and the scenario's own inputs (so a scenario
//! run with other parameters is judged by the same rule), and the paper's
//! number is checked beside it.
//!
//! One file per section of the paper; beside them what the entries read
//! from a scenario's BVT inputs and from a run.

mod device;
mod inputs;
mod overhead;
mod results;
mod two_level;
#[cfg(test)]
mod variants;
mod video;
mod warps;
mod window;

use crate::repro::Entry;

/// The entries run by `hsched repro --all`.
pub fn entries() -> Vec<Entry> {
    vec![
        video::table1(),
        video::table2(),
        video::table3(),
        window::fig1_window(),
        device::device(),
        warps::warps(),
        two_level::threshold(),
        two_level::direct(),
    ]
}

/// The timing entries (`hsched repro --timing`).
pub fn timing_entries() -> Vec<Entry> {
    vec![overhead::overhead()]
}
