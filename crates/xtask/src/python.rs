//! The Python package's tests (`python/tests`, pytest) and the
//! environment they run in.
//!
//! `cargo xtask python-env` makes `target/py-venv` afresh: a virtualenv
//! with `python/requirements-dev.txt` (pytest, pandas, Dask, Ray, the
//! notebook's kernel, maturin). `.ci/run` calls it; a developer does once.
//!
//! `cargo xtask test` then, after the Rust tests: builds the package from
//! `python/` with maturin in the dev profile (reusing what `cargo test`
//! just compiled) and installs it into that environment, so the suite
//! tests this checkout, and runs pytest, counting its closing line. No
//! environment is a missing requirement: skipped, and under CI a failure.

use std::path::Path;
use std::process::{Command, Stdio};

/// Where the environment lives, under the workspace's target directory.
const VENV: &str = "py-venv";

/// What the Python suite gave.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    pub passed: u64,
    pub failed: u64,
    /// One line per skipped test (or the whole suite), with why.
    pub skipped: Vec<String>,
    /// False when the suite could not run cleanly (counted in `failed`).
    pub ran_clean: bool,
}

/// Makes `target/py-venv` afresh with the test requirements.
pub fn make_env(root: &Path) -> Result<(), String> {
    let venv = root.join("target").join(VENV);
    if venv.exists() {
        std::fs::remove_dir_all(&venv)
            .map_err(|e| format!("cannot remove the old {}: {e}", venv.display()))?;
    }
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    run(Command::new(&python).args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(root.join("python/requirements-dev.txt")))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed ({status})"))
    }
}

/// Builds and installs the package into the environment, then runs pytest.
pub fn test(root: &Path, target: &Path) -> Outcome {
    let venv = target.join(VENV);
    let python = venv.join("bin/python");
    let suite = "the Python package's tests (python/tests)";
    if !python.is_file() {
        let why = format!(
            "{suite}: no {} (run `cargo xtask python-env`)",
            venv.display()
        );
        if hsched_testkit::under_ci() {
            println!("requirement missing under CI: {why}");
            return Outcome {
                failed: 1,
                ..Outcome::default()
            };
        }
        return Outcome {
            skipped: vec![why],
            ran_clean: true,
            ..Outcome::default()
        };
    }
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("the venv's path has no separator in it");
    println!("\n== {suite}: building the package (maturin, dev profile)");
    let built = Command::new(venv.join("bin/pip"))
        .current_dir(root)
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "--force-reinstall",
            "./python",
        ])
        .env("PATH", &path)
        .env("MATURIN_PEP517_ARGS", "--profile dev")
        .env("CARGO_TARGET_DIR", target)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        println!("{suite}: the package did not build (see above): counted as one failure");
        return Outcome {
            failed: 1,
            ..Outcome::default()
        };
    }
    let child = Command::new(&python)
        .current_dir(root)
        // -rs: each skip with its reason, for the list at the end.
        .args([
            "-m",
            "pytest",
            "python/tests",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
        ])
        .env("PATH", &path)
        .env("HSCHED_CLI", target.join("debug/hsched"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            println!("{suite}: cannot run pytest: {e}: counted as one failure");
            return Outcome {
                failed: 1,
                ..Outcome::default()
            };
        }
    };
    let mut outcome = Outcome::default();
    let mut closing = None;
    let (ok, left_running) = crate::child_output::pass_through(&mut child, |line| {
        if let Some(skip) = skipped_line(line) {
            outcome.skipped.push(skip);
        }
        if let Some(counts) = closing_counts(line) {
            closing = Some(counts);
        }
    });
    let (passed, failed) = closing.unwrap_or((0, 0));
    outcome.passed = passed;
    outcome.failed = failed;
    outcome.ran_clean = ok && !left_running && closing.is_some();
    if left_running {
        println!("{suite}: a process the tests started is still running: counted as a failure");
        outcome.failed += 1;
    } else if !ok && failed == 0 {
        println!(
            "{suite}: pytest failed without a failing test (see above): counted as one failure"
        );
        outcome.failed += 1;
    }
    outcome
}

/// pytest's `SKIPPED [1] python/tests/test_x.py:12: why` (from `-rs`).
fn skipped_line(line: &str) -> Option<String> {
    let rest = line.strip_prefix("SKIPPED ")?;
    let rest = rest.split_once("] ").map_or(rest, |(_, r)| r);
    Some(format!("python: {rest}"))
}

/// (passed, failed) from pytest's closing line, such as `3 passed, 1
/// skipped, 2 warnings in 1.23s` (errors count as failures); `None` for
/// any other line.
fn closing_counts(line: &str) -> Option<(u64, u64)> {
    let line = line.trim().trim_matches('=').trim();
    let (counts, time) = line.rsplit_once(" in ")?;
    if !time.ends_with('s') && !time.contains("s (") {
        return None;
    }
    let (mut passed, mut failed, mut any) = (0, 0, false);
    for part in counts.split(", ") {
        let (n, what) = part.split_once(' ')?;
        let n: u64 = n.parse().ok()?;
        any = true;
        match what {
            "passed" => passed += n,
            "failed" | "error" | "errors" => failed += n,
            _ => {}
        }
    }
    any.then_some((passed, failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_closing_lines_are_counted_and_others_ignored() {
        assert_eq!(
            closing_counts("==== 3 passed, 1 skipped, 2 warnings in 1.23s ===="),
            Some((3, 0))
        );
        assert_eq!(
            closing_counts("1 failed, 40 passed, 2 errors in 63.10s (0:01:03)"),
            Some((40, 3))
        );
        assert_eq!(closing_counts("5 skipped in 0.01s"), Some((0, 0)));
        assert_eq!(closing_counts("no tests ran in 0.01s"), None);
        assert_eq!(
            closing_counts("python/tests/test_run.py ....  [ 40%]"),
            None
        );
        assert_eq!(closing_counts("the run in the middle of it"), None);
    }

    #[test]
    fn skip_reasons_are_kept() {
        assert_eq!(
            skipped_line("SKIPPED [1] python/tests/test_sweep.py:80: no ray"),
            Some("python: python/tests/test_sweep.py:80: no ray".into())
        );
        assert_eq!(skipped_line("PASSED"), None);
    }
}
