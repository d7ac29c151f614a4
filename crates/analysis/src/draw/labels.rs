//! The words every drawing of the hierarchy shares: the machine's text, a
//! scheduler's box text, an edge's label, and which edges an error is
//! about.

use crate::compose::{Analysis, Edge};
use crate::rules::Severity;
use std::collections::HashSet;
use std::fmt::Write as _;

/// An edge's label: its guarantee, and `×n` when it carries n VPs.
pub(super) fn label_text(e: &Edge) -> String {
    let mut s = e.guarantee.to_string();
    if e.vps > 1 {
        let _ = write!(s, " ×{}", e.vps);
    }
    s
}

/// The machine's text: "CPU" or "4 CPUs".
pub(super) fn cpus_text(a: &Analysis) -> String {
    if a.cpus == 1 {
        "CPU".to_string()
    } else {
        format!("{} CPUs", a.cpus)
    }
}

/// A scheduler's box text: its name, and its policy when that differs.
pub(super) fn sched_label(name: &str, policy: &str) -> String {
    if name == policy {
        name.to_string()
    } else {
        format!("{name} ({policy})")
    }
}

/// The (parent, child) pairs of edges an error is about.
pub(super) fn error_edges(a: &Analysis) -> HashSet<(Option<&str>, &str)> {
    a.problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .filter_map(|p| p.edge.as_ref())
        .map(|(f, t)| (f.as_deref(), t.as_str()))
        .collect()
}
