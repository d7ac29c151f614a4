//! The human-readable summary `hsched sim` prints by default: a header, a
//! table of threads, a table of schedulers, one global line and the notable
//! log entries.
//!
//! It is built from [`crate::metrics()`], so the terminal and the JSON never
//! disagree. Measured durations keep three significant digits
//! ([`crate::readable`]: `99.7ms`); times the scenario wrote (the horizon, a
//! log entry's time) are exact. Shares are percent of **one** CPU over the
//! horizon (a node fed by two busy CPUs shows 200%).
//!
//! [`summary_styled`] adds colour for a terminal (titles bold, missed
//! deadlines and ejections red); [`summary`] is the same text without it,
//! which is what a pipe or a test reads.
//!
//! When the run carries the HLS analysis's guarantees (`hsched sim` runs the
//! analysis first), both tables get a `guarantee` column next to the share,
//! `RESBH 5, 33 (15.2%)`: the guarantee and the share it promises, to read
//! against the share received. Without any, the tables are as before.

use crate::metrics::{metrics, Metrics};
use anstyle::{AnsiColor, Style};
use hsched_core::Duration;
use hsched_model::{LogKind, RunResult};
use std::fmt::Write as _;

/// At most this many log lines are printed; the rest is counted.
const MAX_LOG_LINES: usize = 20;

/// Renders the terminal summary of a run (ends with a newline), plain.
pub fn summary(result: &RunResult) -> String {
    summary_styled(result, false)
}

/// The summary, with ANSI colour when `colour` (the caller decides: a
/// terminal that has not asked for `NO_COLOR`). Without colour the text is
/// byte for byte [`summary`]'s; with it, only escape codes are added, so the
/// columns line up the same.
pub fn summary_styled(result: &RunResult, colour: bool) -> String {
    let m = metrics(result);
    let mut out = Out {
        text: String::new(),
        colour,
    };
    header(&m, &mut out);
    threads(&m, &mut out);
    calls(&m, &mut out);
    schedulers(&m, &mut out);
    global(&m, &mut out);
    log(&m, &mut out);
    limits(&m, &mut out);
    out.text
}

/// Section titles and table headers.
const TITLE: Style = Style::new().bold();
/// What went wrong: missed deadlines, an ejection, a watchdog.
const BAD: Style = AnsiColor::Red.on_default().bold();
/// Worth a look: a refusal, a change that broke a promise.
const WARN: Style = AnsiColor::Yellow.on_default();
/// Secondary: a scheduler that left the hierarchy.
const DIM: Style = Style::new().dimmed();

/// The text being built, and whether it may carry colour.
struct Out {
    text: String,
    colour: bool,
}

impl Out {
    /// `text` in `style` (plain when colour is off).
    fn styled(&self, style: Style, text: &str) -> String {
        if self.colour && style != Style::new() {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }

    /// A blank line and a section title.
    fn title(&mut self, title: &str) {
        let t = self.styled(TITLE, title);
        let _ = writeln!(self.text, "\n{t}");
    }
}

impl std::fmt::Write for Out {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

/// The bounds on memory the run reached (nothing for a run that fits).
fn limits(m: &Metrics, out: &mut Out) {
    if m.limits.is_empty() {
        return;
    }
    out.title("limits reached");
    for l in &m.limits {
        let _ = writeln!(out, "  {l}");
    }
}

fn header(m: &Metrics, out: &mut Out) {
    let g = &m.global;
    let scenario = out.styled(TITLE, &g.scenario);
    let _ = writeln!(
        out,
        "scenario {}  platform {}  cpus {}  horizon {}  seed {}",
        scenario,
        g.platform,
        g.cpus,
        Duration::from_nanos(g.horizon_ns),
        g.seed
    );
}

fn threads(m: &Metrics, out: &mut Out) {
    out.title("threads (share: % of one CPU)");
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
        let misses = row.len() - 2;
        t.row(row);
        if th.deadline_misses > 0 {
            t.style_last(misses, BAD);
        }
    }
    t.render_to(out);
}

/// The cross-domain calls, for the threads that made any (nothing when
/// none did).
fn calls(m: &Metrics, out: &mut Out) {
    let callers: Vec<_> = m.threads.iter().filter(|t| t.calls.made > 0).collect();
    if callers.is_empty() {
        return;
    }
    out.title("calls (train and RPC, by how they ended)");
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
    t.render_to(out);
}

fn schedulers(m: &Metrics, out: &mut Out) {
    out.title("schedulers");
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
        if !s.alive {
            t.style_last(0, DIM);
        }
    }
    t.render_to(out);
}

fn global(m: &Metrics, out: &mut Out) {
    let g = &m.global;
    let rate = g
        .events_per_wall_second
        .map_or_else(|| "-".to_string(), compact);
    let misses = format!("{}/{}", g.deadline_misses, g.jobs);
    let misses = match g.deadline_misses {
        0 => misses,
        _ => out.styled(BAD, &misses),
    };
    let title = out.styled(TITLE, "global");
    let _ = writeln!(
        out,
        "\n{}  decisions {}  events {} ({}/s wall)  idle {}  switch overhead {}  deadline misses {}",
        title,
        g.decisions,
        g.events,
        rate,
        percent(g.idle_fraction),
        dur(g.overhead_ns),
        misses
    );
}

fn log(m: &Metrics, out: &mut Out) {
    // Replies to messages are routine and can be many; they stay in the JSON.
    let shown: Vec<_> = m.log.iter().filter(|e| e.kind != LogKind::Reply).collect();
    if shown.is_empty() {
        return;
    }
    out.title("log");
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
        match e.kind {
            LogKind::Eject | LogKind::Watchdog => t.style_last(1, BAD),
            LogKind::Refused | LogKind::Uncomposed => t.style_last(1, WARN),
            _ => {}
        }
    }
    t.render_to(out);
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

/// A measured duration, to three significant digits.
pub(crate) fn dur(ns: u64) -> String {
    crate::readable::duration(ns)
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
        // A time the scenario's script wrote: exact.
        Some(ns) if ns > 0 => format!("{label} from {}", Duration::from_nanos(ns)),
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

/// A cell's column and its style.
type CellStyle = (usize, Style);

/// A text table: columns padded to their widest cell (in characters, so
/// non-ASCII names line up), two spaces apart, indented by two. A cell may
/// carry a style, applied around its padded text so colour never moves a
/// column.
pub(crate) struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
    /// Per row, the styled cells.
    styles: Vec<Vec<CellStyle>>,
    header: bool,
}

impl Table {
    pub(crate) fn new(columns: &[(&str, Align)]) -> Self {
        Table {
            columns: columns.iter().map(|&(h, a)| (h.to_string(), a)).collect(),
            rows: Vec::new(),
            styles: Vec::new(),
            header: true,
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
        self.styles.push(Vec::new());
    }

    /// Styles cell `column` of the last row.
    fn style_last(&mut self, column: usize, style: Style) {
        if let Some(s) = self.styles.last_mut() {
            s.push((column, style));
        }
    }

    /// The table, plain.
    pub(crate) fn render(&self, out: &mut String) {
        let mut plain = Out {
            text: std::mem::take(out),
            colour: false,
        };
        self.render_to(&mut plain);
        *out = plain.text;
    }

    fn render_to(&self, out: &mut Out) {
        let header: Vec<String> = self.columns.iter().map(|(h, _)| h.clone()).collect();
        let header_styles: Vec<CellStyle> = (0..header.len()).map(|i| (i, TITLE)).collect();
        let lines: Vec<(&Vec<String>, &[CellStyle])> = if self.header {
            std::iter::once((&header, header_styles.as_slice()))
                .chain(self.rows.iter().zip(self.styles.iter().map(Vec::as_slice)))
                .collect()
        } else {
            self.rows
                .iter()
                .zip(self.styles.iter().map(Vec::as_slice))
                .collect()
        };
        let width = |i: usize| {
            lines
                .iter()
                .map(|(r, _)| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.columns.len()).map(width).collect();
        for (r, styles) in lines {
            let mut line = String::from(" ");
            for (i, (_, align)) in self.columns.iter().enumerate() {
                let cell = r.get(i).map_or("", String::as_str);
                let pad = " ".repeat(widths[i] - cell.chars().count());
                let style = styles
                    .iter()
                    .find(|(c, _)| *c == i)
                    .map_or(Style::new(), |&(_, s)| s);
                let cell = out.styled(style, cell);
                line.push(' ');
                match align {
                    Align::Left => {
                        line.push_str(&cell);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(&cell);
                    }
                }
                line.push(' ');
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}
