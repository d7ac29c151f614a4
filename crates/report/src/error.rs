//! Errors the report writers return. Computing metrics cannot fail; writing
//! can (I/O), and the Perfetto trace needs a recorded timeline.

use std::fmt;

#[derive(Debug)]
pub enum ReportError {
    /// The run was made without recording its timeline (`RunResult::trace`
    /// is `None`), so there is nothing to draw.
    NoTrace,
    /// Writing the output failed.
    Io(std::io::Error),
    /// The CSV writer failed (in practice: an I/O error underneath).
    Csv(csv::Error),
    /// A plot could not be drawn (what was asked of it, or the drawing
    /// library's error).
    Plot(String),
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::NoTrace => f.write_str(
                "this run has no trace: the timeline was not recorded, so no Perfetto \
                 trace can be written (run again with tracing enabled)",
            ),
            ReportError::Io(e) => write!(f, "could not write the report: {e}"),
            ReportError::Csv(e) => write!(f, "could not write the job CSV: {e}"),
            ReportError::Plot(e) => write!(f, "could not draw the plot: {e}"),
        }
    }
}

impl std::error::Error for ReportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReportError::NoTrace => None,
            ReportError::Io(e) => Some(e),
            ReportError::Csv(e) => Some(e),
            ReportError::Plot(_) => None,
        }
    }
}

impl From<std::io::Error> for ReportError {
    fn from(e: std::io::Error) -> Self {
        ReportError::Io(e)
    }
}

impl From<csv::Error> for ReportError {
    fn from(e: csv::Error) -> Self {
        ReportError::Csv(e)
    }
}
