//! `hsched import rt-app FILE`: a workload written for another tool, printed
//! as an hsched scenario (TOML) on stdout, with what hsched cannot express
//! as warnings on stderr (`--strict`: as errors, exit 2). `sim`, `check` and
//! `live` read such a file directly when its name ends in `.json`
//! ([`scenario_text`]).

use crate::CliError;
use hsched_scenario::import::{rtapp, Imported};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub format: Format,
}

#[derive(clap::Subcommand, Debug)]
pub enum Format {
    /// An rt-app workload (its json-like file): tasks, phases and events
    /// become threads and programs, policies a hierarchy.
    #[command(name = "rt-app")]
    RtApp(RtAppArgs),
    /// A SimSo XML configuration (as SimSo's GUI saves it): its tasks
    /// become periodic or sporadic threads under `edf`, `rm` or `fp`.
    Simso(crate::import_simso::SimsoArgs),
}

#[derive(clap::Args, Debug)]
pub struct RtAppArgs {
    /// The rt-app file (JSON, with rt-app's comments, trailing commas and
    /// repeated keys).
    pub file: PathBuf,
    /// Refuse (exit 2) what hsched cannot express exactly instead of
    /// warning about it.
    #[arg(long)]
    pub strict: bool,
    /// CPUs of the simulated machine [default: one more than the highest
    /// CPU a task's `cpus` names, or 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cpus: Option<u32>,
}

pub fn command(args: ImportArgs) -> Result<(), CliError> {
    match args.format {
        Format::RtApp(a) => {
            let imported = import_rtapp(&a.file, a.cpus)?;
            report(&a.file, &imported, a.strict)?;
            print!("{}", imported.toml);
            Ok(())
        }
        Format::Simso(a) => crate::import_simso::command(&a),
    }
}

fn import_rtapp(path: &Path, cpus: Option<u32>) -> Result<Imported, CliError> {
    let file = path.display().to_string();
    let text = hsched_scenario::input::read_text(path, "the rt-app file")
        .map_err(|e| CliError::Input(format!("{file}: {e}")))?;
    rtapp::import(&text, &file, &rtapp::Options { cpus })
        .map_err(|e| CliError::Input(e.to_string()))
}

/// Prints the warnings on stderr, or with `strict` refuses the file.
fn report(path: &Path, imported: &Imported, strict: bool) -> Result<(), CliError> {
    let file = path.display();
    if strict && !imported.warnings.is_empty() {
        let list: Vec<String> = imported
            .warnings
            .iter()
            .map(|w| format!("  {file}:{w}"))
            .collect();
        return Err(CliError::Input(format!(
            "{file}: {} thing(s) hsched cannot express exactly (--strict):\n{}",
            imported.warnings.len(),
            list.join("\n")
        )));
    }
    for w in &imported.warnings {
        eprintln!("warning: {file}:{w}");
    }
    Ok(())
}

/// The scenario text of `path` and the name its errors give it: the file
/// itself, or, for an rt-app file (`.json`), its import, the warnings
/// printed on stderr. An error in imported text names the command that
/// prints that text, never the JSON file: its lines are the TOML's.
pub fn scenario_text(path: &Path) -> Result<(String, String), CliError> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        let imported = import_rtapp(path, None)?;
        report(path, &imported, false)?;
        let name = format!("`hsched import rt-app {}`", path.display());
        return Ok((imported.toml, name));
    }
    let text = hsched_scenario::input::read_text(path, "the scenario")
        .map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?;
    Ok((text, path.display().to_string()))
}
