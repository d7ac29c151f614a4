//! A scenario file loaded to run (`sim`, `plot`, `live`) through the
//! pipeline, and the warnings the command line gives for a run it was told
//! to let run uncomposed.

use crate::error::CliError;
use hsched_pipeline as pipeline;
use std::path::{Path, PathBuf};

/// A scenario to run (`sim`, `plot`, `live`) with its plugins, analysed:
/// refused unless it composes or `allow_uncomposed` (then with a warning on
/// stderr); with the guard that re-analyses each change while it runs.
pub(crate) fn load_to_run(
    file: &Path,
    plugin_paths: &[PathBuf],
    allow_uncomposed: bool,
) -> Result<(pipeline::Loaded, pipeline::RunGuard), CliError> {
    let extras = pipeline::Extras {
        plugin_paths: plugin_paths.to_vec(),
        ..Default::default()
    };
    let loaded = pipeline::Loaded::from_path(file, extras)?;
    let (guard, why) = loaded.to_run(allow_uncomposed)?;
    if let Some(why) = why {
        eprintln!("warning: {why}\n(running it anyway: --allow-uncomposed)");
    }
    Ok((loaded, guard))
}

/// Says on stderr each change a run let through that broke a promise
/// (`--allow-uncomposed`): the summary's log has them too, but a run
/// written as JSON would not show them.
pub(crate) fn warn_uncomposed(result: &hsched_model::RunResult) {
    for change in pipeline::uncomposed_changes(result) {
        eprintln!("warning: {change}");
    }
}
