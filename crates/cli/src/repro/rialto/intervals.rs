//! Time intervals of a run, ns: when a thread ran, how much it received in
//! a window, and how two sets of intervals overlap.

use hsched_core::{Duration, Instant};
use hsched_model::{RunResult, SegmentKind};

pub(super) const MS: u64 = 1_000_000;

/// Length of the intersection of two sets of disjoint intervals.
pub(super) fn overlap(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    a.iter()
        .flat_map(|&(s, e)| {
            b.iter()
                .map(move |&(t, f)| e.min(f).saturating_sub(s.max(t)))
        })
        .sum()
}

/// The least CPU time `name` received in any window of length `len`
/// starting at or after `from` and ending by the horizon. The received time
/// is piecewise linear in the window's start, so its minimum lies where the
/// start or the end meets a segment boundary.
pub(super) fn least_in_window(r: &RunResult, name: &str, len: Duration, from: Instant) -> u64 {
    let trace = r.trace.as_ref().expect("repro runs record the trace");
    let runs = run_segments(r, name);
    let end = r.horizon.as_nanos();
    let (from, len) = (from.as_nanos(), len.as_nanos());
    let received = |a: u64, b: u64| -> u64 {
        runs.iter()
            .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
            .sum()
    };
    let mut starts: Vec<u64> = trace
        .segments
        .iter()
        .flat_map(|s| [s.start.as_nanos(), s.end.as_nanos()])
        .flat_map(|p| [p, p.saturating_sub(len)])
        .filter(|&p| p >= from && p + len <= end)
        .collect();
    starts.push(from);
    starts.sort_unstable();
    starts.dedup();
    starts
        .into_iter()
        .map(|a| received(a, a + len))
        .min()
        .unwrap_or(0)
}

/// Time `name` ran (its run segments, switches apart) in `[a, b)`, ns.
pub(super) fn ran_between(r: &RunResult, name: &str, a: u64, b: u64) -> u64 {
    run_segments(r, name)
        .iter()
        .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
        .sum()
}

/// `name`'s run segments (switches apart) as (start, end), ns.
pub(super) fn run_segments(r: &RunResult, name: &str) -> Vec<(u64, u64)> {
    let t = r
        .threads
        .iter()
        .find(|t| t.name == name)
        .expect("the thread exists")
        .id;
    let trace = r.trace.as_ref().expect("repro runs record the trace");
    trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t))
        .map(|s| (s.start.as_nanos(), s.end.as_nanos()))
        .collect()
}
