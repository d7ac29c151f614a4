//! The single-file HTML report of a run (`hsched sim|live --report
//! out.html`): one file a person opens in a browser, with nothing fetched
//! from the network.
//!
//! What it shows, top to bottom: the run (scenario, platform, seed, CPUs,
//! horizon) and a table per thread and per scheduler (CPU time and share
//! beside the HLS guarantee, wakeup latency, jobs and misses); a timeline
//! per CPU and per thread (zoom with the wheel, pan by dragging, hover for
//! the thread and times; job releases and deadline misses marked on the
//! thread rows); CPU share over time per thread, per scheduler node and per
//! CPU; wakeup-latency CDFs; job response-time histograms with the deadlines
//! marked; the hierarchy with the guarantee on every edge (the drawing of
//! `hsched check --svg`, passed in); the scenario file it came from; the log.
//!
//! The figures' data come from [`crate::figures`] (which says what is
//! derived and what is approximate) and are embedded as one JSON document in
//! a `<script type="application/json">`; the page's own script and style are
//! in `html/report.js` and `html/report.css` beside this file, hand-written
//! and inlined here. Long runs stay usable: the timeline's data are binned
//! above [`crate::figures::MAX_TIMELINE_SEGMENTS`] segments, and the script
//! draws only the visible segments, merging those narrower than a pixel
//! into one column coloured by the thread that held most of it.
//!
//! Deterministic: no timestamps, the wall-clock time of the run left out;
//! the same result and input give the same bytes.

use crate::figures::{self, Figures};
use crate::metrics::{metrics, Metrics};
use crate::ReportError;
use hsched_model::{RunResult, Scenario};
use serde::Serialize;

const TEMPLATE: &str = include_str!("html/report.html");
const STYLE: &str = include_str!("html/report.css");
const SCRIPT: &str = include_str!("html/report.js");

/// Bins of the share-over-time figure.
pub const SHARE_BINS: u64 = 200;
/// Log entries kept in the report (the first ones).
pub const MAX_LOG_ENTRIES: usize = 1_000;

/// What the report shows besides the run itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReportInput<'a> {
    /// The scenario that was run: its hierarchy attributes CPU time to
    /// scheduler nodes.
    pub scenario: Option<&'a Scenario>,
    /// The file it came from (a name to show) and its text.
    pub source: Option<(&'a str, &'a str)>,
    /// The labelled hierarchy as SVG (`hsched_analysis::draw::svg`).
    pub hierarchy_svg: Option<&'a str>,
}

/// The report's embedded data (the JSON the page's script reads).
#[derive(Serialize)]
struct ReportData<'a> {
    format_version: u32,
    metrics: Metrics,
    log_dropped: usize,
    threads: &'a [figures::ThreadLabel],
    timeline: CompactTimeline,
    marks: Vec<(u64, i64, &'static str, &'a str)>,
    marks_dropped: u64,
    marks_per_kind: usize,
    shares: &'a figures::Shares,
    latency: &'a [figures::Cdf],
    response: &'a [figures::Histogram],
}

/// The timeline as the script reads it: per CPU, the durations of its
/// consecutive segments from 0 and their [`figures::Slot::code`]s (decoded by the script).
#[derive(Serialize)]
struct CompactTimeline {
    bin_ns: u64,
    source_segments: usize,
    cpus: Vec<CpuRow>,
}

#[derive(Serialize)]
struct CpuRow {
    d: Vec<u64>,
    k: Vec<u64>,
}

/// The embedded data of the report of `result`, as JSON.
pub fn report_data_json(result: &RunResult, input: &ReportInput) -> Result<String, ReportError> {
    let figs = figures::figures(result, input.scenario, SHARE_BINS)?;
    Ok(data_json(result, &figs))
}

fn data_json(result: &RunResult, figs: &Figures) -> String {
    // The wall-clock time is not a property of the run: leave it out so
    // the same run gives the same file.
    let mut m = metrics(result);
    m.global.wall_ns = 0;
    m.global.events_per_wall_second = None;
    let log_dropped = m.log.len().saturating_sub(MAX_LOG_ENTRIES);
    m.log.truncate(MAX_LOG_ENTRIES);
    let cpus = figs
        .timeline
        .cpus
        .iter()
        .map(|spans| CpuRow {
            d: spans.iter().map(|s| s.end - s.start).collect(),
            k: spans.iter().map(|s| s.slot.code()).collect(),
        })
        .collect();
    let data = ReportData {
        format_version: 1,
        metrics: m,
        log_dropped,
        threads: &figs.threads,
        timeline: CompactTimeline {
            bin_ns: figs.timeline.bin_ns,
            source_segments: figs.timeline.source_segments,
            cpus,
        },
        marks: figs
            .marks
            .iter()
            .map(|m| {
                (
                    m.at,
                    m.thread.map_or(-1, i64::from),
                    m.kind,
                    m.label.as_str(),
                )
            })
            .collect(),
        marks_dropped: figs.marks_dropped,
        marks_per_kind: figures::MAX_MARKS_PER_KIND,
        shares: &figs.shares,
        latency: &figs.latency,
        response: &figs.response,
    };
    serde_json::to_string(&data).expect("report data serialises")
}

/// The whole report of `result` as one HTML document. Fails with
/// [`ReportError::NoTrace`] when the run did not record its timeline.
pub fn html_report(result: &RunResult, input: &ReportInput) -> Result<String, ReportError> {
    let figs = figures::figures(result, input.scenario, SHARE_BINS)?;
    let data = script_safe_json(&data_json(result, &figs));
    let title = format!("hsched {} — {}", result.platform, result.scenario);
    let subtitle = format!(
        "{} · seed {} · {} CPU{} · horizon {}",
        result.platform,
        result.seed,
        result.cpus,
        if result.cpus == 1 { "" } else { "s" },
        result.horizon
    );
    let hierarchy = match input.hierarchy_svg {
        Some(svg) => strip_xml_prolog(svg).to_string(),
        None => "<p class=\"note\">No hierarchy drawing (no analysis was run).</p>".into(),
    };
    let (source_name, source_text) = input.source.unwrap_or(("", ""));
    let source = if source_text.is_empty() {
        "<p class=\"note\">The scenario text was not given.</p>".to_string()
    } else {
        format!(
            "<p class=\"note\">{}</p><pre class=\"source\">{}</pre>",
            escape(source_name),
            escape(source_text)
        )
    };
    let timeline_note = if figs.timeline.bin_ns == 0 {
        format!(
            "Exact: all {} segments of the trace.",
            figs.timeline.source_segments
        )
    } else {
        format!(
            "Aggregated: the trace has {} segments, more than {}; each CPU is drawn in bins of {}, \
             each bin showing the thread that held the CPU longest in it. Zooming in shows the bins, not the exact switches.",
            figs.timeline.source_segments,
            figures::MAX_TIMELINE_SEGMENTS,
            hsched_core::Duration::from_nanos(figs.timeline.bin_ns)
        )
    };
    let fields = [
        ("TITLE", escape(&title)),
        ("SUBTITLE", escape(&subtitle)),
        ("STYLE", STYLE.to_string()),
        ("TIMELINE_NOTE", escape(&timeline_note)),
        ("HIERARCHY", hierarchy),
        ("SOURCE", source),
        ("DATA", data),
        ("SCRIPT", SCRIPT.to_string()),
    ];
    Ok(fill(TEMPLATE, &fields))
}

/// `template` with every `{{NAME}}` replaced by its field, in one pass (a
/// field's text is never scanned for placeholders).
fn fill(template: &str, fields: &[(&str, String)]) -> String {
    let mut out =
        String::with_capacity(template.len() + fields.iter().map(|f| f.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        match after.find("}}").and_then(|close| {
            let name = &after[..close];
            fields
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (close, v))
        }) {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// JSON made safe inside a `<script>` element: `<`, `>` and `&` only occur
/// in strings there, and become `\u` escapes, so no `</script>` or `<!--`
/// can end the element early.
fn script_safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

/// Text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document without its `<?xml ...?>` line, to inline in HTML.
fn strip_xml_prolog(svg: &str) -> &str {
    let s = svg.trim_start();
    match s
        .strip_prefix("<?xml")
        .and_then(|r| r.find("?>").map(|i| &r[i + 2..]))
    {
        Some(rest) => rest.trim_start(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_once() {
        let out = fill(
            "a {{X}} b {{Y}} {{Z}} {{",
            &[("X", "{{Y}}".into()), ("Y", "y".into())],
        );
        assert_eq!(out, "a {{Y}} b y {{Z}} {{");
    }

    #[test]
    fn json_cannot_close_the_script() {
        let s = script_safe_json(r#"{"a":"</script><!-- & >"}"#);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["a"], "</script><!-- & >");
    }

    #[test]
    fn escaping_and_prolog() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(
            strip_xml_prolog("<?xml version=\"1.0\"?>\n<svg/>"),
            "<svg/>"
        );
        assert_eq!(strip_xml_prolog("<svg/>"), "<svg/>");
    }
}
