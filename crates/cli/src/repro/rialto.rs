//! Reproductions from the Rialto paper (Jones, Roşu & Roşu, SOSP '97).
//!
//! One file per concept: the reservations on the scheduling graph
//! ([`reservations`]), the time constraints' rules ([`constraints`]) and
//! under load ([`load`]), the timing entry ([`timing`]); beside them the
//! graph arithmetic, the run's intervals and the logged replies the checks
//! read.

mod constraints;
mod graph_rule;
mod intervals;
mod load;
mod replies;
mod reservations;
mod timing;

use crate::repro::Entry;

/// The Rialto entries.
pub fn entries() -> Vec<Entry> {
    vec![
        reservations::fig_3_1(),
        constraints::section_3_2(),
        reservations::fig_5_3(),
        load::section_5_4(),
        load::fig_5_5(),
        load::fig_5_6(),
        reservations::fig_5_7(),
        reservations::fig_5_8(),
        reservations::fig_5_1(),
        reservations::timesharing_minimum(),
        constraints::section_4_3(),
        constraints::section_4_4(),
        constraints::section_4_5(),
    ]
}

/// Timing entries (`hsched repro --timing`).
pub fn timing_entries() -> Vec<Entry> {
    vec![timing::section_5_1_timing()]
}
