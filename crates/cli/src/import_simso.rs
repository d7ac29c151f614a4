//! `hsched import simso FILE.xml`: a SimSo configuration as a scenario
//! (TOML on stdout). The mapping and what it refuses are documented in
//! `hsched_scenario::import::simso`; the notes on what is imported with a
//! difference go to stderr (and open the TOML as comments).

use crate::CliError;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct SimsoArgs {
    /// SimSo XML configuration (as SimSo's GUI saves it).
    pub file: PathBuf,
}

pub fn command(args: &SimsoArgs) -> Result<(), CliError> {
    let name = args.file.display().to_string();
    let text = hsched_scenario::input::read_text(&args.file, "the SimSo file")
        .map_err(|e| CliError::Input(format!("{name}: {e}")))?;
    let out = hsched_scenario::import::simso::import(&text, &name)
        .map_err(|e| CliError::Input(e.to_string()))?;
    for note in &out.notes {
        eprintln!("note: {note}");
    }
    print!("{}", out.toml);
    Ok(())
}
