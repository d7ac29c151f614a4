//! What the command-line tests share: running `hsched` from the repository
//! root as a user would, and a scratch directory per test binary.

#![allow(dead_code)] // each test binary uses its own subset

#[cfg(target_os = "linux")]
pub mod live;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The repository root: relative paths in the tests resolve from here.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the `hsched` binary with `args` from the repository root.
pub fn hsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("hsched runs")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `name` in a scratch directory of this test process (`what` keeps test
/// binaries apart).
pub fn tmp(what: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hsched-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs `hsched args` with its address space limited to `memory` bytes;
/// fails the test if it runs longer than `wall` (a bound for a debug build
/// on a busy machine, several times the time measured alone).
pub fn bounded(args: &[&str], memory: u64, wall: Duration) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hsched"));
    cmd.args(args)
        .current_dir(repo())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: memory,
                rlim_max: memory,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("hsched starts");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > wall {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`hsched {}` ran past {wall:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
