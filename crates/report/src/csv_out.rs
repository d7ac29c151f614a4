//! The per-job CSV: one row per job (of a periodic timer, a `randres`
//! deadline, a `constraints` time constraint).
//!
//! Columns, always in this order, header always written (even with no jobs):
//!
//! | column | meaning |
//! |---|---|
//! | `thread` | thread name |
//! | `job` | 0-based job number within the thread |
//! | `release_ns` | release time |
//! | `start_ns` | first time the thread ran after the release; empty: never |
//! | `finish_ns` | completion; empty: unfinished at the horizon |
//! | `response_ns` | `finish_ns - release_ns`; empty if unfinished |
//! | `deadline_ns` | absolute deadline |
//! | `missed` | `true` / `false`, as in the metrics (unfinished counts once its deadline is before the horizon) |
//! | `lateness_ns` | `finish_ns - deadline_ns`, negative when early; empty if unfinished |
//! | `admitted` | `true` / `false`: whether the job's scheduler accepted what the job asked of it (a `randres` reservation, a `constraints` time constraint); empty for a job that asked nothing |
//!
//! Rows keep the order of `RunResult::jobs`. A run that held more jobs
//! than it keeps in memory hands the ones it stops holding to a
//! [`JobsCsv`] as it goes (`hsched sim --jobs-csv`), then the rest: every
//! job once, the streamed ones first.

use crate::names::ThreadNames;
use crate::ReportError;
use hsched_core::Instant;
use hsched_model::{JobRecord, RunResult};
use std::io::Write;

/// The header row.
pub const JOBS_CSV_HEADER: [&str; 10] = [
    "thread",
    "job",
    "release_ns",
    "start_ns",
    "finish_ns",
    "response_ns",
    "deadline_ns",
    "missed",
    "lateness_ns",
    "admitted",
];

/// Writes the job CSV of `result` to `writer`.
pub fn jobs_csv<W: Write>(result: &RunResult, writer: W) -> Result<(), ReportError> {
    let mut out = JobsCsv::new(writer, Instant::from_nanos(result.horizon.as_nanos()))?;
    out.rows_of(result)?;
    out.finish()
}

/// A jobs CSV written row by row, as a run hands over its jobs.
pub struct JobsCsv<W: Write> {
    out: csv::Writer<W>,
    /// The end of the run, against which an unfinished job counts as missed.
    end: Instant,
}

impl<W: Write> JobsCsv<W> {
    /// Writes the header; `end` is the end of the run.
    pub fn new(writer: W, end: Instant) -> Result<Self, ReportError> {
        let mut out = csv::Writer::from_writer(writer);
        out.write_record(JOBS_CSV_HEADER)?;
        Ok(JobsCsv { out, end })
    }

    /// Writes the rows of the jobs `result` holds, in its order.
    pub fn rows_of(&mut self, result: &RunResult) -> Result<(), ReportError> {
        let names = ThreadNames::new(result);
        for j in &result.jobs {
            self.row(&names.name(j.thread), j)?;
        }
        Ok(())
    }

    /// Writes the row of one job of thread `thread`.
    pub fn row(&mut self, thread: &str, j: &JobRecord) -> Result<(), ReportError> {
        // An absent value is an empty cell, which spreadsheets and pandas
        // read as missing (a 0 would read as a real time).
        fn opt<T: ToString>(v: Option<T>) -> String {
            v.map(|v| v.to_string()).unwrap_or_default()
        }
        self.out.write_record([
            thread.to_string(),
            j.job.to_string(),
            j.release.as_nanos().to_string(),
            opt(j.start.map(Instant::as_nanos)),
            opt(j.finish.map(Instant::as_nanos)),
            opt(j.response().map(|d| d.as_nanos())),
            j.deadline.as_nanos().to_string(),
            j.missed(self.end).to_string(),
            opt(j.lateness_ns()),
            opt(j.admitted),
        ])?;
        Ok(())
    }

    /// Flushes what is written.
    pub fn finish(mut self) -> Result<(), ReportError> {
        self.out.flush()?;
        Ok(())
    }
}
