//! `hsched completions SHELL` and `hsched man`: the shell completion
//! scripts and man pages, generated from the same clap definitions that
//! parse the command line, so they cannot disagree with it.

use crate::CliError;
use std::io::Write;
use std::path::Path;

/// Writes `shell`'s completion script for `cmd` to stdout.
pub fn completions(shell: clap_complete::Shell, cmd: &mut clap::Command) -> Result<(), CliError> {
    let mut out = Vec::new();
    clap_complete::generate(shell, cmd, "hsched", &mut out);
    crate::output::print_stdout(&String::from_utf8_lossy(&out))
}

/// Writes the man page of `cmd` to stdout, or with `dir` one page per
/// command and subcommand there (`hsched.1`, `hsched-sim.1`, ...).
pub fn man(cmd: &clap::Command, dir: Option<&Path>) -> Result<(), CliError> {
    let Some(dir) = dir else {
        let mut page = Vec::new();
        render(cmd, &mut page)?;
        return crate::output::print_stdout(&String::from_utf8_lossy(&page));
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::Input(format!("--out {}: {e}", dir.display())))?;
    let mut written = Vec::new();
    write_pages(cmd, "hsched", dir, &mut written)?;
    eprintln!("wrote {} man pages to {}", written.len(), dir.display());
    Ok(())
}

fn render(cmd: &clap::Command, out: &mut dyn Write) -> Result<(), CliError> {
    clap_mangen::Man::new(cmd.clone())
        .render(out)
        .map_err(|e| CliError::Failed(format!("writing the man page: {e}")))
}

/// The page of `cmd` (named `name`) and of each visible subcommand below it.
fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<String>,
) -> Result<(), CliError> {
    let cmd = cmd.clone().name(name.to_string());
    let path = dir.join(format!("{name}.1"));
    let mut file = std::fs::File::create(&path)
        .map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?;
    render(&cmd, &mut file)?;
    written.push(name.to_string());
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
