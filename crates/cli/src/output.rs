//! Where the commands write: stdout (a reader that went away is no error;
//! colour only on a terminal) or a file named on the command line.

use crate::error::CliError;
use std::path::Path;

/// Writes `text` to stdout; a reader that has gone away (EPIPE) is no
/// error: nobody is left to read the rest.
pub fn print_stdout(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::Failed(format!("writing to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// Whether stdout takes colour: a terminal, and neither `NO_COLOR` nor
/// `TERM=dumb` set (`CLICOLOR_FORCE` forces it); never a pipe or a file.
pub(crate) fn stdout_colour() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

pub(crate) fn write_file(
    path: &Path,
    what: &str,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), CliError> {
    let out = |e: std::io::Error| {
        CliError::Input(format!("cannot write {what} to {}: {e}", path.display()))
    };
    if path == Path::new("-") {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        return match write(&mut lock) {
            // The reader went away: nobody is left to read the rest.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r.map_err(out),
        };
    }
    let file = std::fs::File::create(path).map_err(out)?;
    let mut w = std::io::BufWriter::new(file);
    write(&mut w).map_err(out)?;
    std::io::Write::flush(&mut w).map_err(out)
}
