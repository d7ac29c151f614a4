//! Writing: a run's metrics JSON, Perfetto trace and HTML report, the same
//! bytes whoever asks.

use crate::load::Origin;
use crate::PipelineError;
use hsched_analysis::compose::Analysis;
use hsched_model::{RunResult, Scenario};

/// What the HTML report shows besides the run: the scenario, where it came
/// from and its analysis.
pub struct RunSource<'a> {
    pub origin: &'a Origin,
    pub scn: &'a Scenario,
    pub analysis: &'a Analysis,
}

/// The metrics of a run as JSON (stable keys), ending in a newline
/// (`--json` prints one more after it).
pub fn metrics_json(result: &RunResult) -> String {
    hsched_report::metrics_json(result)
}

/// Writes the timeline of a run as Chrome/Perfetto trace JSON (`--trace`).
pub fn write_trace(result: &RunResult, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    hsched_report::perfetto_trace(result, out).map_err(|e| std::io::Error::other(e.to_string()))
}

/// The HTML report of a run of `source`.
pub fn html_report(result: &RunResult, source: &RunSource) -> Result<String, PipelineError> {
    let (name, text) = match source.origin {
        Origin::File(path) => (
            path.display().to_string(),
            hsched_scenario::input::read_text(path, "").unwrap_or_default(),
        ),
        Origin::Text { name, text } => (name.clone(), text.clone()),
    };
    let svg = hsched_analysis::draw::svg(source.scn, source.analysis);
    let input = hsched_report::html::ReportInput {
        scenario: Some(source.scn),
        source: Some((&name, &text)),
        hierarchy_svg: Some(&svg),
    };
    hsched_report::html::html_report(result, &input)
        .map_err(|e| PipelineError::Failed(format!("writing the report: {e}")))
}
