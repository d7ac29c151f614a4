//! Parsers of the command line's values: durations, horizons, `NAME=PID`.

use hsched_core::Duration;

pub(crate) fn parse_attach(text: &str) -> Result<(String, i32), String> {
    let (name, pid) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: expected NAME=PID, e.g. video=4242"))?;
    let pid: i32 = pid
        .trim()
        .parse()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("`{text}`: `{pid}` is not a process id"))?;
    Ok((name.trim().to_string(), pid))
}

pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    Duration::parse(s)
}

/// A `--horizon`: a duration, not zero and at most
/// [`hsched_model::MAX_HORIZON`].
pub(crate) fn parse_horizon(s: &str) -> Result<Duration, String> {
    let horizon = Duration::parse(s)?;
    match hsched_model::horizon_problem(horizon) {
        Some(problem) => Err(problem),
        None => Ok(horizon),
    }
}
