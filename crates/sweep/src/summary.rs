//! The table `hsched sweep` prints at the end: for a grid, one line per
//! parameter combination with the mean of each metric over its replicates
//! (the mean of `schedulable` is the acceptance ratio); for a random
//! design, the means over every point. Computed from the rows of the file,
//! so a sweep finished in several runs summarises all of them.

use crate::csvfile::Row;
use crate::spec::{Design, Spec};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The summary of `rows` (a spec's file, or a shard of it).
pub fn summary(spec: &Spec, rows: &[Row]) -> String {
    let first_param = if spec.replicates > 1 { 3 } else { 2 };
    let first_metric = first_param + spec.params.len();
    let mut groups: BTreeMap<u64, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let key = match spec.design {
            Design::Grid => r.index / spec.replicates,
            Design::Random { .. } => 0,
        };
        groups.entry(key).or_default().push(r);
    }
    let grid = spec.design == Design::Grid;
    let mut head: Vec<String> = Vec::new();
    if grid {
        head.extend(spec.params.iter().map(|p| p.column()));
    }
    head.push("points".into());
    head.extend(spec.metrics.iter().map(|m| format!("mean {}", m.column())));
    let mut lines: Vec<Vec<String>> = vec![head];
    for rows in groups.values() {
        let mut line: Vec<String> = Vec::new();
        if grid {
            line.extend(rows[0].cells[first_param..first_metric].iter().cloned());
        }
        line.push(rows.len().to_string());
        for col in first_metric..first_metric + spec.metrics.len() {
            let xs: Vec<f64> = rows
                .iter()
                .filter_map(|r| r.cells[col].parse::<f64>().ok())
                .collect();
            line.push(if xs.is_empty() {
                "-".into()
            } else {
                let mean = xs.iter().sum::<f64>() / xs.len() as f64;
                format_mean(mean)
            });
        }
        lines.push(line);
    }
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in &lines {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// Three decimals, or a whole number as one.
fn format_mean(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else if x.abs() >= 1000.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}
