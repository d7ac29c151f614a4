//! What a test needs beyond the Rust toolchain (root, a program on the
//! PATH, a Python module, the shared fixtures), checked where the test
//! starts, with one rule for all of them:
//!
//! - under CI (`CI=true`) a missing requirement fails the test, naming it:
//!   `.ci/run` installs everything the tests need, so a missing one there
//!   is a broken install step, not something to pass over;
//! - elsewhere the test is skipped: it returns early, says why on stderr,
//!   and appends a line to the skip log named by `HSCHED_SKIP_LOG`, which
//!   `cargo xtask test` sets and reads at the end of the run to list the
//!   skipped tests and count them apart from the passes.
//!
//! ```no_run
//! fn the_report_renders_in_chromium() {
//!     let chromium = hsched_testkit::require!("chromium", hsched_testkit::program("chromium"));
//!     // ... run it
//! #   let _ = chromium;
//! }
//! ```

use std::io::Write;
use std::path::PathBuf;

pub mod guest;

/// The variable naming the skip log (one line per skipped test).
pub const SKIP_LOG: &str = "HSCHED_SKIP_LOG";

/// Whether this is a CI run, where every requirement must be met.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `Some(value)` when `check` holds; when it does not, fails the test
/// under CI and otherwise records the test as skipped and returns `None`.
/// [`require!`] returns from the test on `None`.
pub fn require<T>(requirement: &str, check: Result<T, String>) -> Option<T> {
    let why = match check {
        Ok(value) => return Some(value),
        Err(why) => why,
    };
    let test = current_test();
    if under_ci() {
        panic!("{test}: requirement missing under CI: {requirement}: {why} (.ci/run installs it)");
    }
    eprintln!("skipped {test}: {requirement}: {why}");
    if let Some(log) = std::env::var_os(SKIP_LOG) {
        // One write of one line: appends from parallel tests do not mix.
        let line = format!(
            "{test}\t{requirement}: {}\n",
            why.replace(['\n', '\t'], " ")
        );
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!(
                "{test}: cannot record the skip in {}: {e}",
                PathBuf::from(log).display()
            );
        }
    }
    None
}

/// Returns from the enclosing test, skipped, unless the requirement holds;
/// evaluates to the requirement's value. See [`require()`](fn@require).
#[macro_export]
macro_rules! require {
    ($requirement:expr, $check:expr) => {
        match $crate::require($requirement, $check) {
            Some(value) => value,
            None => return,
        }
    };
}

/// `binary::test`, as a person finds it again: the test binary's name
/// without cargo's hash, and libtest's name for the thread running the test.
fn current_test() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|stem| match stem.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
            _ => stem,
        })
        .unwrap_or_else(|| "?".into());
    let thread = std::thread::current();
    format!("{binary}::{}", thread.name().unwrap_or("?"))
}

/// The effective user is root.
pub fn root() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { geteuid() } == 0 {
        Ok(())
    } else {
        Err("not root".into())
    }
}

extern "C" {
    fn geteuid() -> u32;
}

/// `name`'s path on the PATH.
pub fn program(name: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").ok_or("PATH is not set")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("`{name}` is not on the PATH"))
}

/// The directory `dir`, which must exist.
pub fn directory(dir: impl Into<PathBuf>) -> Result<PathBuf, String> {
    let dir = dir.into();
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(format!("{} is not there", dir.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_met_requirement_gives_its_value() {
        assert_eq!(require("x", Ok::<_, String>(7)), Some(7));
    }

    #[test]
    fn a_program_that_is_not_there_is_named() {
        let err = program("hsched-no-such-program").unwrap_err();
        assert!(err.contains("hsched-no-such-program"), "{err}");
        assert!(program("sh").is_ok());
    }

    /// Run as a child by the two tests below (with the variable set):
    /// a test whose requirement is not met.
    #[test]
    fn probe_of_a_missing_requirement() {
        if std::env::var_os("HSCHED_TESTKIT_PROBE").is_some() {
            require!("a unicorn", Err::<(), _>("none in this stable".to_string()));
            panic!("ran past a missing requirement");
        }
    }

    fn probe(ci: &str, log: &std::path::Path) -> std::process::Output {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::probe_of_a_missing_requirement",
                "--nocapture",
            ])
            .env("HSCHED_TESTKIT_PROBE", "1")
            .env("CI", ci)
            .env(SKIP_LOG, log)
            .output()
            .unwrap()
    }

    #[test]
    fn a_missing_requirement_fails_under_ci_and_is_logged_as_skipped_elsewhere() {
        let log = std::env::temp_dir().join(format!("hsched-testkit-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let out = probe("true", &log);
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{said}");
        assert!(
            said.contains("requirement missing under CI: a unicorn"),
            "{said}"
        );
        assert!(!log.exists(), "a failure is not a skip");

        let out = probe("", &log);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let logged = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        assert_eq!(
            logged,
            "hsched_testkit::tests::probe_of_a_missing_requirement\ta unicorn: none in this stable\n"
        );
    }

    #[test]
    fn the_test_is_named_after_its_binary_and_thread() {
        let name = current_test();
        assert!(
            name.starts_with("hsched_testkit::")
                && name.ends_with("the_test_is_named_after_its_binary_and_thread"),
            "{name}"
        );
    }
}
