//! Building plugin crates with cargo, for tests and tools: runs
//! `cargo build --locked` on a crate (or a workspace of plugin crates) and
//! returns the dynamic libraries it produced.
//!
//! The cargo used is `$CARGO` when set (as it is under `cargo test`), else
//! `cargo` from `PATH`. Build into a target directory of your own, not the
//! one a running `cargo` holds locked (under `cargo test`,
//! `CARGO_TARGET_TMPDIR` is the place).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the crate or workspace at `manifest_dir` (debug profile,
/// `--locked`) into `target_dir`; returns every cdylib built, in cargo's
/// order. The error carries cargo's output.
pub fn build(manifest_dir: &Path, target_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = manifest_dir.join("Cargo.toml");
    let output = Command::new(&cargo)
        .arg("build")
        .arg("--locked")
        .arg("--workspace")
        .arg("--message-format=json-render-diagnostics")
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo build --locked --manifest-path {}` failed ({}):\n{}",
            manifest.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let mut libraries = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let is_cdylib = msg["target"]["crate_types"]
            .as_array()
            .is_some_and(|t| t.iter().any(|k| k == "cdylib"));
        if !is_cdylib {
            continue;
        }
        for file in msg["filenames"].as_array().into_iter().flatten() {
            if let Some(f) = file.as_str() {
                if f.ends_with(std::env::consts::DLL_SUFFIX) {
                    libraries.push(PathBuf::from(f));
                }
            }
        }
    }
    Ok(libraries)
}

/// The library among `libraries` whose file stem ends with `crate_name`
/// (with `-` as `_`), e.g. `libexample_edf.so` for `example-edf`.
pub fn find<'a>(libraries: &'a [PathBuf], crate_name: &str) -> Option<&'a Path> {
    let want = format!(
        "{}{}",
        std::env::consts::DLL_PREFIX,
        crate_name.replace('-', "_")
    );
    libraries
        .iter()
        .find(|p| p.file_stem().is_some_and(|s| s.to_string_lossy() == want))
        .map(PathBuf::as_path)
}
