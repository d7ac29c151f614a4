//! The data behind the figures of the HTML report and of `hsched plot`,
//! derived from a [`RunResult`] (and, where the result does not say it, from
//! the scenario that produced it).
//!
//! - [`Timeline`]: what every CPU did, as contiguous segments covering
//!   `[0, horizon)`. Exact up to [`MAX_TIMELINE_SEGMENTS`] segments in all;
//!   beyond that each CPU is cut into equal bins (a 1-2-5 duration chosen so
//!   the total fits) and a bin shows what held the CPU longest in it
//!   (ties: idle, then the lowest thread id), adjacent equal bins merged.
//!   A person zooming a long run then sees the bins, and the report says so.
//! - [`Shares`]: CPU time per bin of time, per thread, per scheduler node
//!   and per CPU (integer nanoseconds; the share is that over the bin's
//!   length). A thread's time is also charged to every scheduler above it,
//!   and so are the context switches to it (as the dispatcher charges a
//!   node, [`hsched_model::NodeResult::received`]); a thread's and a CPU's
//!   rows count run time only.
//!   A thread's scheduler at each moment is the result's record of where it
//!   was ([`hsched_model::ThreadResult::homes`]; without one, the scenario's).
//!   **Approximate where the result does not record it**: a `join` node with several parents passes its
//!   time up to them in proportion to the VPs it holds from each (which
//!   parent really granted each CPU is not recorded); a scheduler the script
//!   loads has the parents its `load` names (the first `load` of a name),
//!   and a later `attach` or `detach` is not followed.
//! - [`Cdf`]: wakeup-to-dispatch latency, per thread: at most
//!   [`MAX_CDF_POINTS`] points, each a sample that really occurred and how
//!   many samples are at or below it (so the last point counts them all).
//! - [`Histogram`]: job response times (release to finish) per thread with
//!   jobs, with the relative deadlines (deadline − release) to mark, the
//!   unfinished jobs counted apart.
//!
//! Everything is integers and follows the input's order: the same result
//! gives the same figures, byte for byte once serialised.

use crate::names::ThreadNames;
use crate::ReportError;
use hsched_core::ThreadId;
use hsched_model::{MarkKind, RunResult, Scenario, SegmentKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Above this many segments (all CPUs together) the timeline is binned.
pub const MAX_TIMELINE_SEGMENTS: usize = 200_000;
/// Points kept per latency CDF.
pub const MAX_CDF_POINTS: usize = 256;
/// Marks (deadline misses, job releases, ejections) kept per kind.
pub const MAX_MARKS_PER_KIND: usize = 20_000;

/// What a timeline segment shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    Idle,
    /// Context switching to the thread.
    Switch(u32),
    Run(u32),
    /// Interrupt handlers.
    Interrupt,
}

/// [`Slot::code`] of interrupt handlers: even (not a run) and above every
/// switch's code; the report's script looks for it by value.
pub const INTERRUPT_CODE: u64 = 1 << 40;

impl Slot {
    fn of(kind: SegmentKind) -> Slot {
        match kind {
            SegmentKind::Idle => Slot::Idle,
            SegmentKind::Switch(t) => Slot::Switch(t.0),
            SegmentKind::Run(t) => Slot::Run(t.0),
            SegmentKind::Interrupt => Slot::Interrupt,
        }
    }

    /// The compact code the HTML report's data uses: 0 idle, `1 + 2t` thread
    /// `t` runs, `2 + 2t` switching to thread `t`, [`INTERRUPT_CODE`]
    /// interrupt handlers.
    pub fn code(self) -> u64 {
        match self {
            Slot::Idle => 0,
            Slot::Interrupt => INTERRUPT_CODE,
            Slot::Run(t) => 1 + 2 * u64::from(t),
            Slot::Switch(t) => 2 + 2 * u64::from(t),
        }
    }
}

/// One stretch of a CPU's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub slot: Slot,
}

/// Every CPU's time, `[0, horizon)` covered without gaps or overlaps.
#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    /// 0: exact; else the bin length each CPU was cut into.
    pub bin_ns: u64,
    /// Segments in the trace (before any binning).
    pub source_segments: usize,
    pub cpus: Vec<Vec<Span>>,
}

/// A point event drawn on a thread's track.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PointMark {
    pub at: u64,
    /// Thread id, for per-thread marks.
    pub thread: Option<u32>,
    pub kind: &'static str,
    pub label: String,
}

/// CPU time in bins of `bin_ns` over `[0, horizon)`; the last bin may be
/// shorter (`bin_len`).
#[derive(Clone, Debug, Serialize)]
pub struct Shares {
    pub bin_ns: u64,
    pub bins: usize,
    /// (thread id, run ns per bin), in thread id order.
    pub threads: Vec<(u32, Vec<u64>)>,
    /// (scheduler name, ns per bin: its threads' run time and the switches
    /// to them), in scenario order, then schedulers only the run knows of.
    pub nodes: Vec<(String, Vec<u64>)>,
    /// Busy (running a thread, switches excluded) ns per bin, per CPU.
    pub cpus: Vec<Vec<u64>>,
}

impl Shares {
    /// Length of bin `i` (the last one may be cut by the horizon).
    pub fn bin_len(&self, i: usize, horizon: u64) -> u64 {
        let start = self.bin_ns.saturating_mul(i as u64);
        horizon.min(start.saturating_add(self.bin_ns)) - start.min(horizon)
    }
}

/// A thread's latency distribution: `(value ns, samples <= value)`.
#[derive(Clone, Debug, Serialize)]
pub struct Cdf {
    pub thread: u32,
    pub samples: u64,
    pub points: Vec<(u64, u64)>,
}

/// A thread's job response times.
#[derive(Clone, Debug, Serialize)]
pub struct Histogram {
    pub thread: u32,
    pub jobs: u64,
    pub bin_ns: u64,
    /// Finished jobs per bin `[i*bin_ns, (i+1)*bin_ns)`.
    pub counts: Vec<u64>,
    pub unfinished: u64,
    pub missed: u64,
    /// Smallest and largest relative deadline (deadline − release).
    pub deadline_min_ns: u64,
    pub deadline_max_ns: u64,
    pub response_max_ns: u64,
}

/// A thread as the figures label it.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadLabel {
    pub id: u32,
    pub name: String,
    /// The scheduler it started under (the scenario's), else the one it
    /// ended under.
    pub scheduler: String,
}

/// Everything the figures draw.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub horizon_ns: u64,
    pub threads: Vec<ThreadLabel>,
    pub timeline: Timeline,
    pub marks: Vec<PointMark>,
    /// How many marks of each kind were left out over the cap.
    pub marks_dropped: u64,
    pub shares: Shares,
    pub latency: Vec<Cdf>,
    pub response: Vec<Histogram>,
}

/// The figures of `result`, with CPU time in `share_bins` bins (about;
/// the bin length is rounded up to 1, 2 or 5 times a power of ten ns).
/// `scenario` gives the hierarchy for per-node shares; without it a thread's
/// time is charged to its own scheduler only.
pub fn figures(
    result: &RunResult,
    scenario: Option<&Scenario>,
    share_bins: u64,
) -> Result<Figures, ReportError> {
    let trace = result.trace.as_ref().ok_or(ReportError::NoTrace)?;
    let horizon = result.horizon.as_nanos();
    let names = ThreadNames::new(result);
    let mut ids: BTreeSet<ThreadId> = names.ids().collect();
    for s in &trace.segments {
        if let SegmentKind::Run(t) | SegmentKind::Switch(t) = s.what {
            ids.insert(t);
        }
    }
    let start_sched = starting_schedulers(result, scenario);
    let threads: Vec<ThreadLabel> = ids
        .iter()
        .map(|&t| ThreadLabel {
            id: t.0,
            name: names.name(t),
            scheduler: start_sched.get(&t).cloned().unwrap_or_default(),
        })
        .collect();

    let exact = exact_timeline(result);
    let source_segments = trace.segments.len();
    let timeline = if source_segments <= MAX_TIMELINE_SEGMENTS {
        Timeline {
            bin_ns: 0,
            source_segments,
            cpus: exact.clone(),
        }
    } else {
        let per_cpu = (MAX_TIMELINE_SEGMENTS / exact.len().max(1)).max(1) as u64;
        let bin_ns = nice_at_least(horizon.div_ceil(per_cpu));
        Timeline {
            bin_ns,
            source_segments,
            cpus: exact.iter().map(|c| binned(c, bin_ns, horizon)).collect(),
        }
    };

    let (marks, marks_dropped) = marks(result, &names);
    let shares = shares(result, scenario, &exact, &start_sched, share_bins);
    let latency = result
        .threads
        .iter()
        .filter(|t| !t.wakeup_latencies.is_empty())
        .map(|t| cdf(t.id.0, t.wakeup_latencies.iter().map(|d| d.as_nanos())))
        .collect();
    let response = histograms(result);
    Ok(Figures {
        horizon_ns: horizon,
        threads,
        timeline,
        marks,
        marks_dropped,
        shares,
        latency,
        response,
    })
}

/// The smallest 1, 2 or 5 × 10^k that is at least `ns` (and at least 1).
pub fn nice_at_least(ns: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1u64, 2, 5] {
            let v = step.saturating_mul(m);
            if v >= ns || v == u64::MAX {
                return v;
            }
        }
        step = step.saturating_mul(10);
    }
}

/// Each CPU's segments in time order, clipped to `[0, horizon)`, with any
/// gap filled as idle and overlaps cut (a later segment starts where the
/// earlier ended), so every CPU is covered exactly once.
fn exact_timeline(result: &RunResult) -> Vec<Vec<Span>> {
    let horizon = result.horizon.as_nanos();
    let trace = result.trace.as_ref().expect("checked by the caller");
    let cpus = trace
        .segments
        .iter()
        .map(|s| s.cpu.0 + 1)
        .chain([result.cpus])
        .max()
        .unwrap_or(0) as usize;
    let mut by_cpu: Vec<Vec<Span>> = vec![Vec::new(); cpus];
    for s in &trace.segments {
        by_cpu[s.cpu.0 as usize].push(Span {
            start: s.start.as_nanos(),
            end: s.end.as_nanos(),
            slot: Slot::of(s.what),
        });
    }
    by_cpu
        .into_iter()
        .map(|mut segs| {
            segs.sort_by_key(|s| s.start);
            let mut out: Vec<Span> = Vec::with_capacity(segs.len() + 1);
            let mut at = 0u64;
            let push = |out: &mut Vec<Span>, start: u64, end: u64, slot: Slot| {
                if end <= start {
                    return;
                }
                match out.last_mut() {
                    Some(last) if last.slot == slot && last.end == start => last.end = end,
                    _ => out.push(Span { start, end, slot }),
                }
            };
            for s in segs {
                let (start, end) = (s.start.max(at), s.end.min(horizon));
                if start >= end {
                    continue;
                }
                push(&mut out, at, start, Slot::Idle);
                push(&mut out, start, end, s.slot);
                at = end;
            }
            push(&mut out, at, horizon, Slot::Idle);
            out
        })
        .collect()
}

/// `spans` cut into bins of `bin_ns`, each bin given what held it longest.
fn binned(spans: &[Span], bin_ns: u64, horizon: u64) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut next = 0usize;
    let mut bin_start = 0u64;
    while bin_start < horizon {
        let bin_end = horizon.min(bin_start.saturating_add(bin_ns));
        let mut held: BTreeMap<Slot, u64> = BTreeMap::new();
        while next < spans.len() && spans[next].end <= bin_start {
            next += 1;
        }
        let mut i = next;
        while i < spans.len() && spans[i].start < bin_end {
            let s = &spans[i];
            *held.entry(s.slot).or_default() += s.end.min(bin_end) - s.start.max(bin_start);
            i += 1;
        }
        // Longest first; the map's order (idle, switches, runs, by id)
        // breaks ties, and `max_by_key` keeps the last maximum, so iterate
        // reversed to keep the first.
        let slot = held
            .iter()
            .rev()
            .max_by_key(|(_, &ns)| ns)
            .map_or(Slot::Idle, |(&s, _)| s);
        match out.last_mut() {
            Some(last) if last.slot == slot => last.end = bin_end,
            _ => out.push(Span {
                start: bin_start,
                end: bin_end,
                slot,
            }),
        }
        bin_start = bin_end;
    }
    out
}

/// Deadline misses, job releases and ejections, at most
/// [`MAX_MARKS_PER_KIND`] of each (the earliest), in time order; and how
/// many were left out.
fn marks(result: &RunResult, names: &ThreadNames) -> (Vec<PointMark>, u64) {
    let trace = result.trace.as_ref().expect("checked by the caller");
    let mut kept: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut dropped = 0u64;
    let mut out = Vec::new();
    for m in &trace.marks {
        let thread_name = m.thread.map(|t| names.name(t)).unwrap_or_default();
        let (kind, label) = match &m.kind {
            MarkKind::Wakeup => continue,
            MarkKind::Release { job } => ("release", format!("{thread_name} job {job} released")),
            MarkKind::DeadlineMiss { job } => (
                "miss",
                format!("{thread_name} job {job} missed its deadline"),
            ),
            MarkKind::Eject { scheduler } => ("eject", format!("scheduler {scheduler} ejected")),
        };
        let n = kept.entry(kind).or_default();
        if *n >= MAX_MARKS_PER_KIND {
            dropped += 1;
            continue;
        }
        *n += 1;
        out.push(PointMark {
            at: m.at.as_nanos(),
            thread: m.thread.map(|t| t.0),
            kind,
            label,
        });
    }
    out.sort_by_key(|m| m.at);
    (out, dropped)
}

/// The scheduler each thread starts under: the scenario's, else the one the
/// result says it ended under.
fn starting_schedulers(
    result: &RunResult,
    scenario: Option<&Scenario>,
) -> BTreeMap<ThreadId, String> {
    let by_name: BTreeMap<&str, &str> = scenario
        .map(|s| {
            s.threads
                .iter()
                .map(|t| (t.name.as_str(), t.parent.as_str()))
                .collect()
        })
        .unwrap_or_default();
    result
        .threads
        .iter()
        .map(|t| {
            let sched = by_name
                .get(t.name.as_str())
                .map_or(t.scheduler.clone(), |s| (*s).to_string());
            (t.id, sched)
        })
        .collect()
}

/// The parents of every scheduler with the VPs held from each.
type Parents<'a> = BTreeMap<&'a str, Vec<(&'a str, u64)>>;

fn shares(
    result: &RunResult,
    scenario: Option<&Scenario>,
    exact: &[Vec<Span>],
    start_sched: &BTreeMap<ThreadId, String>,
    share_bins: u64,
) -> Shares {
    let horizon = result.horizon.as_nanos();
    let bin_ns = nice_at_least(horizon.div_ceil(share_bins.max(1)));
    let bins = horizon.div_ceil(bin_ns) as usize;
    let mut threads: BTreeMap<u32, Vec<u64>> =
        start_sched.keys().map(|t| (t.0, vec![0; bins])).collect();
    let mut cpus = vec![vec![0u64; bins]; exact.len()];
    // Run time per (thread, bin), then charged to nodes below.
    for (cpu, spans) in exact.iter().enumerate() {
        for s in spans {
            let Slot::Run(t) = s.slot else { continue };
            let row = threads.entry(t).or_insert_with(|| vec![0; bins]);
            add_to_bins(row, s.start, s.end, bin_ns);
            add_to_bins(&mut cpus[cpu], s.start, s.end, bin_ns);
        }
    }

    // The hierarchy: node order and parents.
    let mut node_order: Vec<String> = Vec::new();
    let mut parents: Parents = BTreeMap::new();
    if let Some(scn) = scenario {
        let loaded = scn.script.iter().filter_map(|e| match &e.action {
            hsched_model::Action::Load(spec) => Some(spec),
            _ => None,
        });
        for s in scn.schedulers.iter().chain(loaded) {
            if parents.contains_key(s.name.as_str()) {
                continue; // a name loaded again: its first parents stand
            }
            node_order.push(s.name.clone());
            parents.insert(
                s.name.as_str(),
                s.parents
                    .iter()
                    .map(|p| (p.parent.as_str(), u64::from(p.vps.max(1))))
                    .collect(),
            );
        }
    }
    for n in &result.nodes {
        if !node_order.contains(&n.name) {
            node_order.push(n.name.clone());
        }
    }
    let mut nodes: BTreeMap<String, Vec<u64>> = node_order
        .iter()
        .map(|n| (n.clone(), vec![0; bins]))
        .collect();

    // A thread's time goes to its scheduler of the moment, segment by
    // segment, then up the hierarchy.
    let timeline_of: BTreeMap<ThreadId, Vec<(u64, &str)>> = start_sched
        .iter()
        .map(|(&t, start)| {
            let homes = result.threads.iter().find(|r| r.id == t).map(|r| &r.homes);
            let scheds = match homes {
                Some(h) if !h.is_empty() => h
                    .iter()
                    .map(|h| (h.since.as_nanos(), h.scheduler.as_str()))
                    .collect(),
                _ => vec![(0, start.as_str())],
            };
            (t, scheds)
        })
        .collect();
    for spans in exact {
        for s in spans {
            let (Slot::Run(t) | Slot::Switch(t)) = s.slot else {
                continue;
            };
            let Some(scheds) = timeline_of.get(&ThreadId(t)) else {
                continue;
            };
            // Split the span where the thread changed scheduler.
            for (i, &(from, sched)) in scheds.iter().enumerate() {
                let until = scheds.get(i + 1).map_or(u64::MAX, |&(at, _)| at);
                let (a, b) = (s.start.max(from), s.end.min(until));
                if a < b {
                    charge_up(&mut nodes, &parents, sched, a, b, bin_ns);
                }
            }
        }
    }
    Shares {
        bin_ns,
        bins,
        threads: threads.into_iter().collect(),
        nodes: node_order
            .into_iter()
            .map(|n| {
                let row = nodes.remove(&n).unwrap_or_default();
                (n, row)
            })
            .collect(),
        cpus,
    }
}

/// Adds `[start, end)` to the bins it overlaps.
fn add_to_bins(row: &mut [u64], start: u64, end: u64, bin_ns: u64) {
    let mut at = start;
    while at < end {
        let i = (at / bin_ns) as usize;
        let bin_end = (i as u64 + 1) * bin_ns;
        let upto = end.min(bin_end);
        if let Some(cell) = row.get_mut(i) {
            *cell += upto - at;
        }
        at = upto;
    }
}

/// Charges `[start, end)` to `node` and, split by VPs, to its ancestors.
/// Integer splits: the first parent takes the remainder, so the total
/// reaching the root is exactly the time charged.
fn charge_up(
    nodes: &mut BTreeMap<String, Vec<u64>>,
    parents: &Parents,
    node: &str,
    start: u64,
    end: u64,
    bin_ns: u64,
) {
    let bins = nodes.values().next().map_or(0, Vec::len);
    let mut row = vec![0u64; bins];
    add_to_bins(&mut row, start, end, bin_ns);
    // Work list of (node, ns per bin); a DAG, so every path is finite.
    let mut work: Vec<(&str, Vec<u64>)> = vec![(node, row)];
    let mut guard = 0usize;
    while let Some((name, row)) = work.pop() {
        guard += 1;
        if guard > 100_000 {
            break; // a cycle would be a scenario bug; do not hang on it
        }
        let target = nodes
            .entry(name.to_string())
            .or_insert_with(|| vec![0; bins]);
        for (t, v) in target.iter_mut().zip(&row) {
            *t += v;
        }
        let Some(ups) = parents.get(name) else {
            continue;
        };
        let total: u64 = ups.iter().map(|(_, v)| v).sum();
        if total == 0 {
            continue;
        }
        let mut rest = row.clone();
        let mut parts: Vec<(&str, Vec<u64>)> = Vec::new();
        for &(p, vps) in ups.iter().skip(1) {
            let part: Vec<u64> = row.iter().map(|v| v * vps / total).collect();
            for (r, v) in rest.iter_mut().zip(&part) {
                *r -= v;
            }
            parts.push((p, part));
        }
        work.push((ups[0].0, rest));
        work.extend(parts);
    }
}

/// The CDF of `samples`: at most [`MAX_CDF_POINTS`] points at evenly spaced
/// ranks, always including the largest sample.
pub fn cdf(thread: u32, samples: impl IntoIterator<Item = u64>) -> Cdf {
    let mut sorted: Vec<u64> = samples.into_iter().collect();
    sorted.sort_unstable();
    let n = sorted.len() as u64;
    let steps = (MAX_CDF_POINTS as u64).min(n);
    let mut points: Vec<(u64, u64)> = Vec::new();
    for k in 1..=steps {
        let rank = (k * n).div_ceil(steps);
        let value = sorted[(rank - 1) as usize];
        // Everything equal to `value` is at or below it: count them all.
        let at_or_below = sorted.partition_point(|&x| x <= value) as u64;
        match points.last() {
            Some(&(v, _)) if v == value => {}
            _ => points.push((value, at_or_below)),
        }
    }
    Cdf {
        thread,
        samples: n,
        points,
    }
}

/// Response-time histograms, about 30 bins each, of every thread with jobs.
fn histograms(result: &RunResult) -> Vec<Histogram> {
    let end = hsched_core::Instant::ZERO.saturating_add(result.horizon);
    let mut by_thread: BTreeMap<u32, Vec<&hsched_model::JobRecord>> = BTreeMap::new();
    for j in &result.jobs {
        by_thread.entry(j.thread.0).or_default().push(j);
    }
    by_thread
        .into_iter()
        .map(|(thread, jobs)| {
            let responses: Vec<u64> = jobs
                .iter()
                .filter_map(|j| j.response().map(|d| d.as_nanos()))
                .collect();
            let deadlines: Vec<u64> = jobs
                .iter()
                .map(|j| j.deadline.saturating_since(j.release).as_nanos())
                .collect();
            let response_max = responses.iter().copied().max().unwrap_or(0);
            let deadline_min = deadlines.iter().copied().min().unwrap_or(0);
            let deadline_max = deadlines.iter().copied().max().unwrap_or(0);
            let upper = response_max.max(deadline_max).max(1);
            let bin_ns = nice_at_least(upper.div_ceil(30));
            let mut counts = vec![0u64; (upper / bin_ns + 1) as usize];
            for r in &responses {
                counts[(r / bin_ns) as usize] += 1;
            }
            Histogram {
                thread,
                jobs: jobs.len() as u64,
                bin_ns,
                counts,
                unfinished: (jobs.len() - responses.len()) as u64,
                missed: jobs.iter().filter(|j| j.missed(end)).count() as u64,
                deadline_min_ns: deadline_min,
                deadline_max_ns: deadline_max,
                response_max_ns: response_max,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_durations() {
        assert_eq!(nice_at_least(0), 1);
        assert_eq!(nice_at_least(1), 1);
        assert_eq!(nice_at_least(3), 5);
        assert_eq!(nice_at_least(6), 10);
        assert_eq!(nice_at_least(11), 20);
        assert_eq!(nice_at_least(10_000_001), 20_000_000);
        assert_eq!(nice_at_least(u64::MAX), u64::MAX);
    }

    #[test]
    fn cdf_is_monotone_and_ends_at_every_sample() {
        let c = cdf(0, [5, 1, 3, 3, 9]);
        assert_eq!(c.points, vec![(1, 1), (3, 3), (5, 4), (9, 5)]);
        let many = cdf(0, (0..10_000u64).map(|i| (i * 7919) % 1000));
        assert!(many.points.len() <= MAX_CDF_POINTS);
        assert!(many
            .points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert_eq!(many.points.last(), Some(&(999, 10_000)));
        assert!(cdf(0, []).points.is_empty());
    }

    #[test]
    fn bins_split_spans_exactly() {
        let mut row = vec![0; 4];
        add_to_bins(&mut row, 5, 27, 10);
        assert_eq!(row, vec![5, 10, 7, 0]);
    }

    #[test]
    fn binning_keeps_what_held_a_bin_longest() {
        let spans = [
            Span {
                start: 0,
                end: 4,
                slot: Slot::Run(1),
            },
            Span {
                start: 4,
                end: 10,
                slot: Slot::Run(2),
            },
            Span {
                start: 10,
                end: 15,
                slot: Slot::Idle,
            },
            Span {
                start: 15,
                end: 20,
                slot: Slot::Run(2),
            },
            Span {
                start: 20,
                end: 25,
                slot: Slot::Run(3),
            },
        ];
        let b = binned(&spans, 10, 25);
        assert_eq!(
            b,
            vec![
                // [0,10): thread 2 held 6 of 10.
                Span {
                    start: 0,
                    end: 10,
                    slot: Slot::Run(2)
                },
                // [10,20): a 5-5 tie between idle and thread 2: idle first.
                Span {
                    start: 10,
                    end: 20,
                    slot: Slot::Idle
                },
                Span {
                    start: 20,
                    end: 25,
                    slot: Slot::Run(3)
                },
            ]
        );
    }
}
