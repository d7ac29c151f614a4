//! Why the pipeline stopped, as data a caller hands on (the command line
//! turns it into its exit codes, the Python package into its exceptions).

use hsched_analysis::compose::Analysis;

/// Why the pipeline stopped. The scenario parser's error stays whole (its
/// file, line, column and key), and so does the analysis of a hierarchy
/// that does not compose, so that a caller other than the command line can
/// hand them on as data.
#[derive(Debug)]
pub enum PipelineError {
    /// The scenario text is wrong: where and what.
    Scenario(hsched_scenario::ScenarioError),
    /// Other bad input (an unreadable file, a plugin, a policy's
    /// parameters at build time): the whole message, naming the file.
    Input(String),
    /// The hierarchy does not compose and the caller did not allow that.
    Uncomposed {
        file: String,
        analysis: Box<Analysis>,
    },
    /// Something failed that is not the input's fault.
    Failed(String),
}
