//! hsched report: turns a [`RunResult`] into what people and tools read.
//!
//! - [`metrics()`] / [`metrics_json`]: per-thread, per-scheduler and global
//!   numbers as JSON with stable keys (the key table is docs/json.md);
//! - [`jobs_csv()`]: one CSV row per job (periodic, `randres`, `constraints`);
//! - [`perfetto_trace()`]: the timeline as Chrome trace-event JSON, which opens
//!   in the Perfetto UI and in chrome://tracing (one track per CPU);
//! - [`summary()`]: the human-readable table `hsched sim` prints by default;
//! - [`compare()`]: two runs of one scenario side by side (`hsched live
//!   --compare-sim`);
//! - [`html::html_report`]: the single-file HTML report (`--report`);
//! - [`plot::plot`]: one figure of the report as SVG or PNG (`hsched plot`);
//!   both draw the data [`figures`] derives from the run.
//!
//! Every output is a pure function of the `RunResult`: same input, same bytes.
//! Nothing here iterates a hash map; orders come from the input vectors or from
//! ordered maps. Floats appear only in shares and rates, never in times: times
//! are integer nanoseconds (`_ns` keys) or exact decimals built from them.

pub mod compare;
pub mod csv_out;
pub mod error;
pub mod figures;
pub mod html;
pub mod metrics;
pub mod names;
pub mod perfetto;
pub mod plot;
pub mod readable;
pub mod stats;
pub mod summary;

pub use compare::compare;
pub use csv_out::{jobs_csv, JobsCsv};
pub use error::ReportError;
pub use metrics::{metrics, metrics_json, Metrics};
pub use perfetto::perfetto_trace;
pub use stats::{percentile, Percentiles};
pub use summary::{summary, summary_styled};

// Re-exported so callers can name the input without depending on the model
// crate themselves.
pub use hsched_model::RunResult;
