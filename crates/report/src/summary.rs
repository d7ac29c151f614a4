//! The human-readable summary `hsched sim` prints by default: a header, a
//! table of threads, a table of schedulers, one global line and the notable
//! log entries.
//!
//! It is built from [`crate::metrics()`], so the terminal and the JSON never
//! disagree. Durations use core's `Display` (`1.5ms`); shares are percent of
//! **one** CPU over the horizon (a node fed by two busy CPUs shows 200%).
//!
//! When the run carries the HLS analysis's guarantees (`hsched sim` runs the
//! analysis first), both tables get a `guarantee` column next to the share,
//! `RESBH 5, 33 (15.2%)`: the guarantee and the share it promises, to read
//! against the share received. Without any, the tables are as before.

use crate::metrics::{metrics, Metrics};
use hsched_core::Duration;
use hsched_model::{LogKind, RunResult};
use std::fmt::Write as _;

/// At most this many log lines are printed; the rest is counted.
const MAX_LOG_LINES: usize = 20;

/// Renders the terminal summary of a run (ends with a newline).
pub fn summary(result: &RunResult) -> String {
    let m = metrics(result);
    let mut out = String::new();
    header(&m, &mut out);
    threads(&m, &mut out);
    calls(&m, &mut out);
    schedulers(&m, &mut out);
    global(&m, &mut out);
    log(&m, &mut out);
    limits(&m, &mut out);
    out
}

/// The bounds on memory the run reached (nothing for a run that fits).
fn limits(m: &Metrics, out: &mut String) {
    if m.limits.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nlimits reached");
    for l in &m.limits {
        let _ = writeln!(out, "  {l}");
    }
}

fn header(m: &Metrics, out: &mut String) {
    let g = &m.global;
    let _ = writeln!(
        out,
        "scenario {}  platform {}  cpus {}  horizon {}  seed {}",
        g.scenario,
        g.platform,
        g.cpus,
        Duration::from_nanos(g.horizon_ns),
        g.seed
    );
}

fn threads(m: &Metrics, out: &mut String) {
    let _ = writeln!(out, "\nthreads (share: % of one CPU)");
    if m.threads.is_empty() {
        let _ = writeln!(out, "  (none)");
        return;
    }
    let guarantees = m.threads.iter().any(|t| t.guarantee.is_some());
    let mut columns = vec![
        ("name", Align::Left),
        ("scheduler", Align::Left),
        ("cpu time", Align::Right),
        ("share", Align::Right),
    ];
    if guarantees {
        columns.push(("guarantee", Align::Left));
    }
    columns.extend([
        ("wakeup p99", Align::Right),
        ("jobs", Align::Right),
        ("misses", Align::Right),
        ("ctx sw", Align::Right),
    ]);
    let mut t = Table::new(&columns);
    for th in &m.threads {
        let mut row = vec![
            th.name.clone(),
            th.scheduler.clone(),
            dur(th.cpu_time_ns),
            percent(th.share),
        ];
        if guarantees {
            row.push(guarantee(
                th.guarantee.as_deref(),
                th.guaranteed_share,
                th.guaranteed_from_ns,
            ));
        }
        row.extend([
            th.wakeup_latency.p99_ns.map_or_else(|| "-".into(), dur),
            th.jobs.to_string(),
            th.deadline_misses.to_string(),
            th.context_switches.to_string(),
        ]);
        t.row(row);
    }
    t.render(out);
}

/// The cross-domain calls, for the threads that made any (nothing when
/// none did).
fn calls(m: &Metrics, out: &mut String) {
    let callers: Vec<_> = m.threads.iter().filter(|t| t.calls.made > 0).collect();
    if callers.is_empty() {
        return;
    }
    let _ = writeln!(out, "\ncalls (train and RPC, by how they ended)");
    let mut t = Table::new(&[
        ("thread", Align::Left),
        ("made", Align::Right),
        ("ok", Align::Right),
        ("broken pipe", Align::Right),
        ("server exit", Align::Right),
        ("caller gone", Align::Right),
        ("abandoned", Align::Right),
        ("too deep", Align::Right),
        ("open", Align::Right),
    ]);
    for th in callers {
        let c = &th.calls;
        t.row(vec![
            th.name.clone(),
            c.made.to_string(),
            c.ok.to_string(),
            c.broken_pipe.to_string(),
            c.server_exit.to_string(),
            c.caller_gone.to_string(),
            c.abandoned.to_string(),
            c.too_deep.to_string(),
            (c.made - c.ok - c.errors()).to_string(),
        ]);
    }
    t.render(out);
}

fn schedulers(m: &Metrics, out: &mut String) {
    let _ = writeln!(out, "\nschedulers");
    if m.schedulers.is_empty() {
        let _ = writeln!(out, "  (none)");
        return;
    }
    let guarantees = m.schedulers.iter().any(|s| s.guarantee.is_some());
    let mut columns = vec![
        ("name", Align::Left),
        ("policy", Align::Left),
        ("received", Align::Right),
        ("share", Align::Right),
    ];
    if guarantees {
        columns.push(("guarantee", Align::Left));
    }
    let mut t = Table::new(&columns);
    for s in &m.schedulers {
        // A node that left the hierarchy is marked, so its low share is not
        // read as starvation.
        let name = if s.alive {
            s.name.clone()
        } else {
            format!("{} (gone)", s.name)
        };
        let mut row = vec![name, s.policy.clone(), dur(s.received_ns), percent(s.share)];
        if guarantees {
            row.push(guarantee(
                s.guarantee.as_deref(),
                s.guaranteed_share,
                s.guaranteed_from_ns,
            ));
        }
        t.row(row);
    }
    t.render(out);
}

fn global(m: &Metrics, out: &mut String) {
    let g = &m.global;
    let rate = g
        .events_per_wall_second
        .map_or_else(|| "-".to_string(), compact);
    let _ = writeln!(
        out,
        "\nglobal  decisions {}  events {} ({}/s wall)  idle {}  switch overhead {}  deadline misses {}/{}",
        g.decisions,
        g.events,
        rate,
        percent(g.idle_fraction),
        dur(g.overhead_ns),
        g.deadline_misses,
        g.jobs
    );
}

fn log(m: &Metrics, out: &mut String) {
    // Replies to messages are routine and can be many; they stay in the JSON.
    let shown: Vec<_> = m.log.iter().filter(|e| e.kind != LogKind::Reply).collect();
    if shown.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nlog");
    let mut t = Table::new(&[
        ("at", Align::Right),
        ("kind", Align::Left),
        ("", Align::Left),
    ]);
    t.header = false;
    for e in shown.iter().take(MAX_LOG_LINES) {
        t.row(vec![
            format!("t={}", Duration::from_nanos(e.at_ns)),
            kind_name(e.kind).to_string(),
            e.text.clone(),
        ]);
    }
    t.render(out);
    let hidden = shown.len().saturating_sub(MAX_LOG_LINES);
    if hidden > 0 {
        let _ = writeln!(out, "  ... and {hidden} more (see the metrics JSON)");
    }
}

fn kind_name(k: LogKind) -> &'static str {
    match k {
        LogKind::Eject => "eject",
        LogKind::Watchdog => "watchdog",
        LogKind::Refused => "refused",
        LogKind::Script => "script",
        LogKind::Moved => "moved",
        LogKind::Reply => "reply",
        LogKind::Platform => "platform",
        LogKind::Uncomposed => "uncomposed",
    }
}

pub(crate) fn dur(ns: u64) -> String {
    Duration::from_nanos(ns).to_string()
}

pub(crate) fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "-".to_string(), |s| format!("{:.1}%", s * 100.0))
}

/// `RESBH 5, 33 (15.2%)`; `NULL` (it promises no share); `-` (no label);
/// `RESBH 2, 10 (20.0%) from 1s` for one given after the start.
fn guarantee(text: Option<&str>, share: Option<f64>, from_ns: Option<u64>) -> String {
    let label = match (text, share) {
        (None, _) => return "-".to_string(),
        (Some(g), None) => g.to_string(),
        (Some(g), Some(_)) => format!("{g} ({})", percent(share)),
    };
    match from_ns {
        Some(ns) if ns > 0 => format!("{label} from {}", dur(ns)),
        _ => label,
    }
}

/// A rate with an SI suffix: `950`, `12.3k`, `4.56M`, `1.20G`.
fn compact(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Align {
    Left,
    Right,
}

/// A text table: columns padded to their widest cell (in characters, so
/// non-ASCII names line up), two spaces apart, indented by two.
pub(crate) struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
    header: bool,
}

impl Table {
    pub(crate) fn new(columns: &[(&str, Align)]) -> Self {
        Table {
            columns: columns.iter().map(|&(h, a)| (h.to_string(), a)).collect(),
            rows: Vec::new(),
            header: true,
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn render(&self, out: &mut String) {
        let header: Vec<String> = self.columns.iter().map(|(h, _)| h.clone()).collect();
        let lines: Vec<&Vec<String>> = if self.header {
            std::iter::once(&header).chain(&self.rows).collect()
        } else {
            self.rows.iter().collect()
        };
        let width = |i: usize| {
            lines
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.columns.len()).map(width).collect();
        for r in lines {
            let mut line = String::from(" ");
            for (i, (_, align)) in self.columns.iter().enumerate() {
                let cell = r.get(i).map_or("", String::as_str);
                let pad = widths[i] - cell.chars().count();
                line.push(' ');
                match align {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(cell);
                    }
                }
                line.push(' ');
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}
