//! What the BVT entries read from a run: a thread, its jobs, its runs (cut
//! segments merged), the horizon, durations in milliseconds.

use hsched_core::{Duration, Instant};
use hsched_model::{JobRecord, RunResult, SegmentKind, ThreadResult};

pub(super) fn thread<'a>(r: &'a RunResult, name: &str) -> Result<&'a ThreadResult, String> {
    r.threads
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("the scenario has no thread `{name}`"))
}

pub(super) fn end(r: &RunResult) -> Instant {
    Instant::ZERO + r.horizon
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// The jobs of the threads named `names`.
pub(super) fn jobs<'a>(r: &'a RunResult, names: &[&str]) -> Result<Vec<&'a JobRecord>, String> {
    let ids = names
        .iter()
        .map(|n| thread(r, n).map(|t| t.id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(r.jobs.iter().filter(|j| ids.contains(&j.thread)).collect())
}

/// (start, end) of every run of `name` (segments cut and resumed at one
/// instant merged), in time order.
pub(super) fn runs(r: &RunResult, name: &str) -> Result<Vec<(Instant, Instant)>, String> {
    let id = thread(r, name)?.id;
    let trace = r.trace.as_ref().ok_or("repro runs record the trace")?;
    let mut segs: Vec<(Instant, Instant)> = trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(id))
        .map(|s| (s.start, s.end))
        .collect();
    segs.sort();
    let mut out: Vec<(Instant, Instant)> = Vec::new();
    for (s, e) in segs {
        match out.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    Ok(out)
}
