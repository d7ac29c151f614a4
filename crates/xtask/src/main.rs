//! `cargo xtask test [ARGS]`: the project's test command; `cargo xtask
//! scx-kernel`: the sched_ext kernel the guest tests boot (see
//! `scx_kernel.rs`).
//!
//! Runs `cargo test --workspace --locked --no-fail-fast [ARGS]` (every
//! test binary, also after one fails), with the sched_ext backend (the
//! `hsched/scx` feature) where this machine can build it (see
//! [`scx_toolchain`]; a machine that cannot skips its tests, naming what
//! is missing, and CI fails them), passing its output through as it
//! comes, then prints the tests that were skipped and why (each test that
//! lacked a requirement left a line in the skip log: see the
//! `hsched-testkit` crate) and closes, whatever happened, with the plain
//! line `tests: N passed, N failed, N skipped`. A skipped test reports `ok`
//! to libtest; it is counted as skipped here, not as passed.
//!
//! Then it runs the Python package's pytest suite (see [`python`]) in
//! `target/py-venv`, which `cargo xtask python-env` makes: it builds and
//! installs the package from `python/` there first, so the suite tests
//! this checkout, and adds pytest's counts to the line.
//!
//! Exits 0 only when cargo and pytest did and nothing failed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

mod child_output;
mod python;
mod scx_kernel;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("python-env") => match python::make_env(&workspace_root()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("python-env: {e}");
                ExitCode::FAILURE
            }
        },
        Some("scx-kernel") => match scx_kernel::run(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("scx-kernel: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: cargo xtask test [ARGS for cargo test]");
            eprintln!("       cargo xtask python-env");
            eprintln!("       cargo xtask scx-kernel");
            ExitCode::from(2)
        }
    }
}

/// Totals over every `test result:` line.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl Counts {
    /// Adds a libtest summary line such as
    /// `test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s`.
    fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim_start().strip_prefix("test result:") else {
            return;
        };
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match what {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether this machine can build the sched_ext backend (the BPF
/// scheduler and libbpf linked statically): a clang for BPF, a
/// `vmlinux.h`, pkg-config, and static libelf and zlib where the
/// workspace's `.cargo/config.toml` points libbpf-sys. What is missing is
/// named with its Debian package.
fn scx_toolchain(root: &Path) -> Result<(), String> {
    let on_path = |program: &str| {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    let clang = std::env::var("HSCHED_BPF_CLANG").ok();
    if !clang
        .as_deref()
        .map_or(on_path("clang-19") || on_path("clang"), on_path)
    {
        return Err(
            "no clang-19 or clang to compile the BPF scheduler (Debian package clang-19)".into(),
        );
    }
    if !on_path("pkg-config") {
        return Err("no pkg-config (Debian package pkg-config)".into());
    }
    let vmlinux_h = match std::env::var_os("HSCHED_VMLINUX_H") {
        Some(path) => PathBuf::from(path),
        None => hsched_testkit::guest::kernel_dir().join("vmlinux.h"),
    };
    if !vmlinux_h.is_file() {
        return Err(format!(
            "no {}: run `cargo xtask scx-kernel`",
            vmlinux_h.display()
        ));
    }
    let config = std::fs::read_to_string(root.join(".cargo/config.toml")).unwrap_or_default();
    let libs = config
        .lines()
        .find_map(|l| {
            let (key, value) = l.split_once('=')?;
            key.trim()
                .starts_with("LIBBPF_SYS_LIBRARY_PATH")
                .then(|| value.trim().trim_matches('"').to_string())
        })
        .ok_or("no LIBBPF_SYS_LIBRARY_PATH in .cargo/config.toml")?;
    for (lib, package) in [("libelf.a", "libelf-dev"), ("libz.a", "zlib1g-dev")] {
        if !Path::new(&libs).join(lib).is_file() {
            return Err(format!("no {libs}/{lib} (Debian package {package})"));
        }
    }
    Ok(())
}

fn test(extra: &[String]) -> ExitCode {
    let root = workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let _ = std::fs::create_dir_all(&target);
    let skip_log = target.join("test-skips.log");
    let _ = std::fs::remove_file(&skip_log);

    // Not a libtest test: skipped (or, under CI, failed) on its own count.
    let scx = scx_toolchain(&root).map_err(|why| {
        format!("the sched_ext backend (cargo feature hsched/scx, its BPF build and guest tests): {why}")
    });
    if let Err(line) = &scx {
        if hsched_testkit::under_ci() {
            eprintln!("requirement missing under CI: {line}");
        }
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let child = Command::new(cargo)
        .current_dir(&root)
        .args(["test", "--workspace", "--locked", "--no-fail-fast"])
        .args(scx.is_ok().then_some("--features=hsched/scx"))
        .args(extra)
        .env(hsched_testkit::SKIP_LOG, &skip_log)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot run cargo: {e}");
            println!("tests: 0 passed, 0 failed");
            return ExitCode::FAILURE;
        }
    };
    let mut counts = Counts::default();
    let (cargo_ok, left_running) =
        child_output::pass_through(&mut child, |line| counts.add_line(line));
    if left_running {
        eprintln!(
            "cargo test has ended, but a process the tests started is still running \
             (it holds their output): a test left it behind; counted as a failure"
        );
        counts.failed += 1;
    }

    // The Python suite runs even after a Rust failure: its verdicts are its own.
    let py = python::test(&root, &target);
    counts.passed += py.passed;
    counts.failed += py.failed;

    let skips = std::fs::read_to_string(&skip_log).unwrap_or_default();
    let skipped: Vec<&str> = skips.lines().filter(|l| !l.is_empty()).collect();
    let scx_skipped = scx.as_ref().err().filter(|_| !hsched_testkit::under_ci());
    println!();
    if !skipped.is_empty() || scx_skipped.is_some() || !py.skipped.is_empty() {
        println!("skipped, a requirement missing (CI=true makes each a failure):");
        for line in &skipped {
            let (test, why) = line.split_once('\t').unwrap_or((line, ""));
            println!("  {test}: {why}");
        }
        if let Some(line) = scx_skipped {
            println!("  {line}");
        }
        for line in &py.skipped {
            println!("  {line}");
        }
    }
    if counts.ignored > 0 {
        let (n, are) = match counts.ignored {
            1 => ("1 test".to_string(), "is"),
            n => (format!("{n} tests"), "are"),
        };
        println!("{n} {are} #[ignore]d (counted as skipped)");
    }
    if scx.is_err() && hsched_testkit::under_ci() {
        println!("the sched_ext backend could not be built (see above): counted as one failure");
        counts.failed += 1;
    }
    if !cargo_ok && counts.failed == 0 {
        // A binary that did not build or crashed has no result line.
        println!("cargo test failed without a failing test (see above): counted as one failure");
        counts.failed = 1;
    }
    // A skipped test returned early and libtest counted it as passed.
    let passed = counts.passed.saturating_sub(skipped.len() as u64);
    let skipped = skipped.len() as u64
        + counts.ignored
        + u64::from(scx_skipped.is_some())
        + py.skipped.len() as u64;
    println!(
        "tests: {passed} passed, {} failed, {skipped} skipped",
        counts.failed
    );
    if cargo_ok && py.ran_clean && counts.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_are_added_up_and_other_lines_ignored() {
        let mut c = Counts::default();
        c.add_line("test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s");
        c.add_line("test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.5s");
        c.add_line("test a_test_named_test_result ... ok");
        c.add_line("running 5 tests");
        assert_eq!(
            c,
            Counts {
                passed: 15,
                failed: 2,
                ignored: 1
            }
        );
    }
}
