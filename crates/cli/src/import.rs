//! `hsched import rt-app FILE`: a workload written for another tool, printed
//! as an hsched scenario (TOML) on stdout, with what hsched cannot express
//! as warnings on stderr (`--strict`: as errors, exit 2). `sim`, `check` and
//! `live` read such a file directly when its name ends in `.json`
//! (`hsched_pipeline::source::scenario_text`).

use crate::CliError;
use hsched_pipeline::source::import_rtapp;
use hsched_scenario::import::Imported;
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
