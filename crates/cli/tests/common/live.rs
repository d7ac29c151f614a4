//! What the `hsched live` tests share (live.rs, live_control.rs,
//! live_processes.rs, live_safety.rs): root, one live run at a time, and
//! the managed threads' shares.

use hsched_live::sys;
use std::os::fd::AsRawFd;

/// Whether this process may set `SCHED_FIFO` (root), which `hsched live` needs.
pub fn realtime() -> Result<(), String> {
    sys::realtime_allowed().map_err(|e| format!("cannot set SCHED_FIFO here ({e}); run as root"))
}

/// One `hsched live` at a time: two agents would fight over the CPUs.
/// Held while it lives.
pub struct LiveTurn {
    _thread: std::sync::MutexGuard<'static, ()>,
    _file: std::fs::File,
}

/// Waits for the turn of this test's `hsched live`. The tests of one
/// binary are threads of one process (the mutex keeps them apart); the
/// live tests are in several binaries, which cargo runs one after
/// another, and the lock file in the temporary directory keeps them apart
/// where they are not (two `cargo test` at once, a runner that starts a
/// process per test).
pub fn one_at_a_time() -> LiveTurn {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let thread = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::temp_dir().join("hsched-live-tests.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: flock on a descriptor this function owns; no memory passed.
    // Released when the file closes, with the turn.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(
        locked,
        0,
        "{}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    LiveTurn {
        _thread: thread,
        _file: file,
    }
}

/// Each thread's share of what the managed threads received together.
pub fn shares_of_total(result: &serde_json::Value) -> Vec<f64> {
    let shares: Vec<f64> = result["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["share"].as_f64().unwrap())
        .collect();
    let total: f64 = shares.iter().sum();
    shares.iter().map(|s| s / total).collect()
}
