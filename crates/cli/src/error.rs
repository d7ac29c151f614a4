//! The command line's failures and their exit codes: bad input (2), a
//! failed run (1), a run stopped by a signal (128 + the signal).

use hsched_pipeline::{self as pipeline, plugins, PipelineError};
use std::fmt;

/// A failure of the command line: bad input (exit 2) or a failed run (exit 1).
#[derive(Debug)]
pub enum CliError {
    Input(String),
    Failed(String),
    /// Stopped by a signal after an orderly stop: the message, and the
    /// exit status (128 + the signal, as a shell reports it).
    Stopped(String, i32),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(m) | CliError::Failed(m) | CliError::Stopped(m, _) => f.write_str(m),
        }
    }
}

/// What the command line makes of the pipeline's errors: bad input (exit
/// 2) with the scenario error drawn at its line, or a failure (exit 1).
impl From<PipelineError> for CliError {
    fn from(e: PipelineError) -> Self {
        match e {
            PipelineError::Scenario(e) => CliError::Input(plugins::render(e)),
            PipelineError::Input(m) => CliError::Input(m),
            PipelineError::Uncomposed { file, analysis } => CliError::Input(format!(
                "{}\n(`hsched check` shows the labelled hierarchy; --allow-uncomposed runs it anyway)",
                pipeline::uncomposed(&file, &analysis)
            )),
            PipelineError::Failed(m) => CliError::Failed(m),
        }
    }
}
