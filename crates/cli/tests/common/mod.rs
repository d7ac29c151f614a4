//! What the command-line tests share: running `hsched` from the repository
//! root as a user would, and a scratch directory per test binary.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
