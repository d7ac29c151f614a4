//! Reproductions from the Rialto paper (Jones, Roşu & Roşu, SOSP '97).

use super::{scenario, simulate, Bound, Check, Entry};
use hsched_core::{Duration, Instant};
use hsched_model::{RunResult, SegmentKind};

/// The Rialto entries.
pub fn entries() -> Vec<Entry> {
    vec![Entry {
        name: "rialto-3.1",
        source: "Rialto §3.1, Fig. 3-1",
        claim: "six reservations (A 6ms/30ms granted as 4ms/20ms, B 3/10, C 2/40, D 1/20, E 1/10, F 5/40) on a 10ms-base graph: each activity gets its amount in every window of its period, not only in aligned ones",
        scenarios: &["scenarios/papers/rialto-3.1.toml"],
        run: || {
            let r = simulate(scenario!("rialto-3.1.toml"))?;
            // After one 40ms hyperperiod, once every reservation is in place.
            let from = Instant::ZERO + Duration::from_millis(40);
            let granted = [("A", 4, 20), ("B", 3, 10), ("C", 2, 40), ("D", 1, 20), ("E", 1, 10), ("F", 5, 40)];
            Ok(granted
                .into_iter()
                .map(|(name, amount, period)| Check {
                    quantity: format!("least CPU of {name} in any {period}ms window (ms)"),
                    paper: amount as f64,
                    measured: least_in_window(&r, name, Duration::from_millis(period), from) as f64 / 1e6,
                    tolerance: 0.0,
                    why: "the continuous guarantee is exact: a lower bound, checked over every window of the run",
                    bound: Bound::Within,
                }
                .at_least())
                .collect())
        },
    }]
}

/// The least CPU time `name` received in any window of length `len`
/// starting at or after `from` and ending by the horizon. The received time
/// is piecewise linear in the window's start, so its minimum lies where the
/// start or the end meets a segment boundary.
fn least_in_window(r: &RunResult, name: &str, len: Duration, from: Instant) -> u64 {
    let t = r
        .threads
        .iter()
        .find(|t| t.name == name)
        .expect("the thread exists")
        .id;
    let trace = r.trace.as_ref().expect("repro runs record the trace");
    let runs: Vec<(u64, u64)> = trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t))
        .map(|s| (s.start.as_nanos(), s.end.as_nanos()))
        .collect();
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
