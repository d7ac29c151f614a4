//! One reproduction ([`Entry`]): the paper's claim, the scenarios it runs
//! (compiled in with [`scenario!`]) and the function that compares.

use super::check::Check;
use crate::CliError;

/// One reproduction.
pub struct Entry {
    pub name: &'static str,
    /// The paper and the figure, table or section reproduced.
    pub source: &'static str,
    /// What the paper states.
    pub claim: &'static str,
    /// The scenario files it runs (paths inside the repository).
    pub scenarios: &'static [&'static str],
    /// Runs the scenarios (compiled into the binary) and compares.
    pub run: fn() -> Result<Vec<Check>, String>,
}

/// A scenario of `scenarios/papers/`: its path and its text, compiled in.
/// The text is found from the crate's directory, so the macro works in a
/// file at any depth under `repro/`.
macro_rules! scenario {
    ($file:literal) => {
        (
            concat!("scenarios/papers/", $file),
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../scenarios/papers/",
                $file
            )),
        )
    };
}
pub(crate) use scenario;

/// Runs one entry; returns its checks.
pub fn run_entry(entry: &Entry) -> Result<Vec<Check>, CliError> {
    (entry.run)().map_err(|e| CliError::Failed(format!("{}: {e}", entry.name)))
}
