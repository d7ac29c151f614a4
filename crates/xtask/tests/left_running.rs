//! `cargo xtask test` ends even when a process the tests started is left
//! running with their output open: a stand-in for cargo (the `CARGO`
//! variable) reports one passed test, leaves `sleep` holding its stdout (only:
//! its stderr would hold this test's own pipe) and
//! exits; the run closes within seconds, counting the leftover as a failure.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_process_left_holding_the_output_ends_the_run_as_a_failure() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("left-running");
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("fake-cargo");
    std::fs::write(
        &fake,
        "#!/bin/sh\n\
         echo 'test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s'\n\
         sleep 30 2>/dev/null &\n\
         exit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("test")
        .env("CARGO", &fake)
        .env("CARGO_TARGET_DIR", &dir)
        // Whether this machine can build the sched_ext backend only adds a
        // skip (or, under CI, a failure) to the counts: not this test's.
        .env_remove("CI")
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(!out.status.success());
    let last = stdout.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("tests: 1 passed, 1 failed, ") && last.ends_with(" skipped"),
        "{stdout}"
    );
    assert!(stderr.contains("still running"), "{stderr}");
}
