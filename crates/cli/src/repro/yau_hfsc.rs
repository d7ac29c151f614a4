//! Yau & Lam §5.3 reproduced: HFSC's sharing dynamics with misaligned
//! service curves (Figs. 9-10) and its delay guarantee decoupled from the
//! rate (Fig. 11), both under the `hfsc` policy.

use super::{scenario, simulate, Bound, Check, Entry};
use hsched_core::{Instant, ThreadId};
use hsched_model::{RunResult, SegmentKind};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;

pub fn entries() -> Vec<Entry> {
    vec![
        Entry {
            name: "yau-fig10",
            source: "Yau & Lam §5.3, Figs. 9-10 (HFSC sharing dynamics)",
            claim: "greedy x <0.9, 2s, 0.1> and y <0.1, 2s, 0.9>, y runnable 1.3s early: x gets \
                    0.9 for its first 2s while y, served in advance, drops below its long-term \
                    rate; long-term progress 1:9; both service curves met from activation",
            scenarios: &["scenarios/papers/yau-fig10.toml"],
            run: fig_10,
        },
        Entry {
            name: "yau-fig11",
            source: "Yau & Lam §5.3, Fig. 11 (HFSC work delay)",
            claim: "worker <0.35, 7ms, 0.05> doing 2.5ms per 50ms signal, driver \
                    <0.1, 10ms, 0.01>, greedy at 0.5, 1ms tick: every response within 7ms",
            scenarios: &["scenarios/papers/yau-fig11.toml"],
            run: fig_11,
        },
    ]
}

fn check(quantity: &str, paper: f64, measured: f64, tolerance: f64, why: &'static str) -> Check {
    Check {
        quantity: quantity.into(),
        paper,
        measured,
        tolerance,
        why,
        bound: Bound::Within,
    }
}

fn thread_id(r: &RunResult, name: &str) -> Result<(ThreadId, Instant), String> {
    r.threads
        .iter()
        .find(|t| t.name == name)
        .map(|t| (t.id, t.arrival))
        .ok_or_else(|| format!("the scenario has no thread `{name}`"))
}

/// (start, end) in ns of every stretch `thread` ran, in time order.
fn runs(r: &RunResult, thread: ThreadId) -> Vec<(u64, u64)> {
    let trace = r.trace.as_ref().expect("repro runs record the trace");
    let mut v: Vec<_> = trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(thread))
        .map(|s| (s.start.as_nanos(), s.end.as_nanos()))
        .collect();
    v.sort();
    v
}

fn received(runs: &[(u64, u64)], from: u64, to: u64) -> u64 {
    runs.iter()
        .map(|&(s, e)| e.min(to).saturating_sub(s.max(from)))
        .sum()
}

/// The two-piece curve <r1, x, r2> (rates as fractions) at `t` ns.
fn curve_at(r1: f64, x: u64, r2: f64, t: u64) -> f64 {
    if t <= x {
        r1 * t as f64
    } else {
        r1 * x as f64 + r2 * (t - x) as f64
    }
}

/// The largest amount (ms) by which `name` fell behind its curve, from its
/// arrival, sampled every millisecond to the horizon.
fn worst_shortfall_ms(r: &RunResult, name: &str, r1: f64, x: u64, r2: f64) -> Result<f64, String> {
    let (id, arrival) = thread_id(r, name)?;
    let runs = runs(r, id);
    let start = arrival.as_nanos();
    let mut worst = 0f64;
    let mut t = start;
    while t <= r.horizon.as_nanos() {
        let owed = curve_at(r1, x, r2, t - start);
        let got = received(&runs, start, t) as f64;
        worst = worst.max(owed - got);
        t += MS;
    }
    Ok(worst / MS as f64)
}

fn share(r: &RunResult, name: &str, from: u64, to: u64) -> Result<f64, String> {
    let (id, _) = thread_id(r, name)?;
    Ok(received(&runs(r, id), from, to) as f64 / (to - from) as f64)
}

fn fig_10() -> Result<Vec<Check>, String> {
    let r = simulate(scenario!("yau-fig10.toml"))?;
    let (x_from, x_to) = (1300 * MS, 3300 * MS);
    let x_long = share(&r, "x", 10 * SEC, 40 * SEC)?;
    let y_long = share(&r, "y", 10 * SEC, 40 * SEC)?;
    Ok(vec![
        check(
            "long-term share of x, [10s, 40s]",
            0.1,
            x_long,
            0.002,
            "1:9 progress is shares 0.1 and 0.9 of the CPU; 0.002 is a 1ms tick's worth of \
             rounding at each of the 60 rescheduling points a second can misplace",
        ),
        check(
            "long-term share of y, [10s, 40s]",
            0.9,
            y_long,
            0.002,
            "the same, for y",
        ),
        check(
            "x's CPU rate in its first 2s (Fig. 10b)",
            0.9,
            share(&r, "x", x_from, x_to)?,
            0.01,
            "the initial slope r1 of x's curve: x is served by its deadline curve at 0.9; 0.01 \
             allows the tick granularity at the start and end of the window",
        ),
        check(
            "y's CPU rate while x is in its first segment (Fig. 10b)",
            0.1,
            share(&r, "y", x_from, x_to)?,
            0.01,
            "the paper: much lower than its long-term 0.9; what is left once x takes 0.9",
        ),
        check(
            "x: most CPU time behind its service curve from its arrival (ms)",
            0.0,
            worst_shortfall_ms(&r, "x", 0.9, 2 * SEC, 0.1)?,
            2.0,
            "the curve is met to within two 1ms ticks: one decision of another thread that \
             cannot be preempted, plus one tick between becoming eligible and the next \
             rescheduling point",
        )
        .at_most(),
        check(
            "y: most CPU time behind its service curve from its arrival (ms)",
            0.0,
            worst_shortfall_ms(&r, "y", 0.1, 2 * SEC, 0.9)?,
            2.0,
            "the same bound, for y, whose early excess carries it through x's first segment",
        )
        .at_most(),
    ])
}

fn fig_11() -> Result<Vec<Check>, String> {
    let r = simulate(scenario!("yau-fig11.toml"))?;
    let (worker, _) = thread_id(&r, "worker")?;
    let responses: Vec<u64> = r
        .jobs
        .iter()
        .filter(|j| j.thread == worker)
        .filter_map(|j| j.finish.map(|f| f.as_nanos() - j.release.as_nanos()))
        .collect();
    let released = r.jobs.iter().filter(|j| j.thread == worker).count();
    if responses.len() < 150 {
        return Err(format!(
            "only {} worker responses were completed",
            responses.len()
        ));
    }
    let worst = *responses.iter().max().unwrap_or(&0) as f64 / MS as f64;
    let mean = responses.iter().sum::<u64>() as f64 / responses.len() as f64 / MS as f64;
    Ok(vec![
        check(
            "worst worker response, signal to work done (ms)",
            7.0,
            worst,
            0.0,
            "the paper's target delay, met by every response in Fig. 11 (an upper bound)",
        )
        .at_most(),
        check(
            "worker responses not completed",
            0.0,
            (released - responses.len()) as f64,
            1.0,
            "every signal is answered; the last release may fall within 7ms of the horizon",
        )
        .at_most(),
        check(
            "mean worker response (ms)",
            7.0,
            mean,
            0.0,
            "below the target on average too (the paper's plot sits under 7ms throughout)",
        )
        .at_most(),
    ])
}
