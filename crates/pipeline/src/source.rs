//! A scenario file's text: the TOML as it is, or an rt-app workload
//! (`.json`) imported on reading, with what hsched cannot express as
//! warnings on stderr.

use crate::PipelineError;
use hsched_scenario::import::{rtapp, Imported};
use std::path::Path;

/// The rt-app file `path` imported as a scenario on `cpus` CPUs (default:
/// those its tasks name), with what hsched cannot express as warnings.
pub fn import_rtapp(path: &Path, cpus: Option<u32>) -> Result<Imported, PipelineError> {
    let file = path.display().to_string();
    let text = hsched_scenario::input::read_text(path, "the rt-app file")
        .map_err(|e| PipelineError::Input(format!("{file}: {e}")))?;
    rtapp::import(&text, &file, &rtapp::Options { cpus })
        .map_err(|e| PipelineError::Input(e.to_string()))
}

/// The scenario text of `path` and the name its errors give it: the file
/// itself, or, for an rt-app file (`.json`), its import, the warnings
/// printed on stderr. An error in imported text names the command that
/// prints that text, never the JSON file: its lines are the TOML's.
pub fn scenario_text(path: &Path) -> Result<(String, String), PipelineError> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        let imported = import_rtapp(path, None)?;
        for w in &imported.warnings {
            eprintln!("warning: {}:{w}", path.display());
        }
        let name = format!("`hsched import rt-app {}`", path.display());
        return Ok((imported.toml, name));
    }
    let text = hsched_scenario::input::read_text(path, "the scenario")
        .map_err(|e| PipelineError::Input(format!("{}: {e}", path.display())))?;
    Ok((text, path.display().to_string()))
}
