//! hsched scenario files: the TOML format read into [`hsched_model::Scenario`].
//!
//! A scenario names the machine, the scheduling hierarchy (policy instances
//! from the registry with their parameters and parents), the threads with
//! their workload programs, the horizon, the seed, and a script of hierarchy
//! changes over time. The format is documented in `docs/scenario.md`.
//!
//! Everything the file says is checked before anything runs: keys, types,
//! durations, policy and attachment parameters (against the policies'
//! declarations in the registry), the shape of the hierarchy (one root, no
//! cycle, parent and child limits), and every name the script uses at the
//! moment it uses it. The first problem found is returned as a
//! [`ScenarioError`] naming the file, line, column and key path, and saying
//! what was expected. No input makes the parser panic.

mod build;
mod domains;
mod error;
mod hierarchy;
pub mod import;
pub mod input;
mod interrupts;
mod mutexes;
mod program;
mod refs;
mod replay;
pub mod rules;
mod script;
mod sections;
mod threads;
pub mod tree;
mod typed;

pub use error::ScenarioError;

use hsched_core::PolicyInfo;
use hsched_model::Scenario;
use std::path::Path;

/// Parses and validates scenario text against the policy registry.
/// `file_name` is used in error messages and as the default scenario name
/// (its stem).
pub fn parse(text: &str, file_name: &str) -> Result<Scenario, ScenarioError> {
    parse_with_registry(text, file_name, hsched_policies::registry())
}

/// Like [`parse`], with the policies taken from `registry` instead of the
/// built-in one (tests, or a build with extra policies).
pub fn parse_with_registry(
    text: &str,
    file_name: &str,
    registry: &[PolicyInfo],
) -> Result<Scenario, ScenarioError> {
    build::build(text, file_name, registry).map_err(|f| f.into_error(text, file_name))
}

/// The plugin libraries a scenario's top-level `plugins` key names, as
/// written (a relative path is relative to the scenario file's directory).
/// The caller loads them and parses the scenario with their policies added
/// to the registry ([`parse_with_registry`]); the parser does no I/O.
pub fn plugins(text: &str, file_name: &str) -> Result<Vec<String>, ScenarioError> {
    let paths = || {
        let root = tree::parse(text)?;
        let top = root.table("", "a table")?;
        build::plugin_paths(&top)
    };
    paths().map_err(|f| f.into_error(text, file_name))
}

/// Reads and parses a scenario file; the error names the path as given.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text =
        input::read_text(path, "the scenario").map_err(|e| ScenarioError::whole_file(&file, e))?;
    parse(&text, &file)
}
