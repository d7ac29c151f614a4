//! A child process's standard output passed through to ours line by line,
//! without waiting for ever on a pipe that a process it left running holds.

use std::io::{BufRead, BufReader, Write};

/// Copies `child`'s standard output to ours line by line, handing each
/// line to `each`, until the child has exited and its output is closed;
/// returns whether it succeeded and whether a process it started still
/// held the output `LEFT_RUNNING_GRACE` after it exited.
pub(crate) fn pass_through(
    child: &mut std::process::Child,
    mut each: impl FnMut(&str),
) -> (bool, bool) {
    let stdout = child.stdout.take().expect("piped");
    // Read on a thread: a process a test left running keeps the pipe open
    // after the child has exited, and reading to its end would wait for ever.
    let (lines, from_child) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut out = std::io::stdout().lock();
    let mut exited: Option<(bool, std::time::Instant)> = None;
    let mut left_running = false;
    loop {
        match from_child.recv_timeout(std::time::Duration::from_millis(200)) {
            Ok(line) => {
                each(&line);
                let _ = writeln!(out, "{line}");
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if exited.is_none() {
                    if let Ok(Some(status)) = child.try_wait() {
                        exited = Some((status.success(), std::time::Instant::now()));
                    }
                }
                if exited.is_some_and(|(_, at)| at.elapsed() > LEFT_RUNNING_GRACE) {
                    left_running = true;
                    break;
                }
            }
        }
    }
    let ok = match exited {
        Some((ok, _)) => ok,
        None => child.wait().map(|s| s.success()).unwrap_or(false),
    };
    (ok, left_running)
}

/// How long after cargo exits its output may stay open: past that, a
/// process the tests started and left running holds it.
const LEFT_RUNNING_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
