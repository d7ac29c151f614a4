//! Two runs of one scenario side by side, thread by thread: what `hsched
//! live --compare-sim` prints (the simulator's run first, the real one
//! second). Shares are percent of one CPU over each run's horizon; the
//! difference is in percentage points, the figure the sim-against-live
//! check is stated in.

use crate::metrics::metrics;
use crate::summary::{dur, percent, Align, Table};
use hsched_model::RunResult;
use std::fmt::Write as _;

/// The side-by-side table of runs `a` and `b` (threads matched by name;
/// one missing from a run shows `-`). Ends with a newline.
pub fn compare(a: &RunResult, b: &RunResult) -> String {
    let (ma, mb) = (metrics(a), metrics(b));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} against {} (share: % of one CPU; diff: percentage points)",
        a.platform, b.platform
    );
    let (pa, pb) = (a.platform.as_str(), b.platform.as_str());
    let heads = [
        "name".to_string(),
        format!("{pa} share"),
        format!("{pb} share"),
        "diff".to_string(),
        format!("{pa} wakeup p50/p99"),
        format!("{pb} wakeup p50/p99"),
        format!("{pa} misses"),
        format!("{pb} misses"),
    ];
    let columns: Vec<(&str, Align)> = heads
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), if i == 0 { Align::Left } else { Align::Right }))
        .collect();
    let mut t = Table::new(&columns);
    let mut names: Vec<&str> = ma.threads.iter().map(|t| t.name.as_str()).collect();
    for th in &mb.threads {
        if !names.contains(&th.name.as_str()) {
            names.push(&th.name);
        }
    }
    let latency = |p: &crate::Percentiles| match (p.p50_ns, p.p99_ns) {
        (Some(a), Some(b)) => format!("{}/{}", dur(a), dur(b)),
        _ => "-".to_string(),
    };
    for name in names {
        let x = ma.threads.iter().find(|t| t.name == name);
        let y = mb.threads.iter().find(|t| t.name == name);
        let share = |t: Option<&crate::metrics::ThreadMetrics>| percent(t.and_then(|t| t.share));
        let diff = match (x.and_then(|t| t.share), y.and_then(|t| t.share)) {
            (Some(p), Some(q)) => format!("{:+.1}", 100.0 * (q - p)),
            _ => "-".to_string(),
        };
        let misses = |t: Option<&crate::metrics::ThreadMetrics>| {
            t.map_or("-".into(), |t| format!("{}/{}", t.deadline_misses, t.jobs))
        };
        t.row(vec![
            name.to_string(),
            share(x),
            share(y),
            diff,
            x.map_or("-".into(), |t| latency(&t.wakeup_latency)),
            y.map_or("-".into(), |t| latency(&t.wakeup_latency)),
            misses(x),
            misses(y),
        ]);
    }
    t.render(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsched_core::{Duration, ThreadId};
    use hsched_model::ThreadResult;

    fn run(platform: &str, threads: &[(&str, u64)]) -> RunResult {
        RunResult {
            platform: platform.into(),
            horizon: Duration::from_millis(1000),
            threads: threads
                .iter()
                .enumerate()
                .map(|(i, &(name, ms))| ThreadResult {
                    id: ThreadId(i as u32),
                    name: name.into(),
                    cpu_time: Duration::from_millis(ms),
                    ..ThreadResult::default()
                })
                .collect(),
            ..RunResult::default()
        }
    }

    #[test]
    fn threads_are_matched_by_name_and_the_difference_is_in_points() {
        let text = compare(
            &run("sim", &[("a", 500), ("b", 500)]),
            &run("live", &[("b", 480), ("a", 505), ("c", 10)]),
        );
        let row = |name: &str| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("no row {name} in\n{text}"))
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(row("a")[1..4], ["50.0%", "50.5%", "+0.5"]);
        assert_eq!(row("b")[1..4], ["50.0%", "48.0%", "-2.0"]);
        assert_eq!(row("c")[1..4], ["-", "1.0%", "-"]);
        assert!(text.contains("sim against live"), "{text}");
    }
}
