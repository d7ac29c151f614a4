//! The sched_ext guest harness end to end: the cached kernel boots under
//! qemu, its init mounts what a sched_ext test needs, and a dynamically
//! linked Rust binary (this test binary, as a sched_ext loader will be) runs
//! inside with the libraries `ldd` found for it.

use hsched_testkit::guest::{self, Guest, KERNEL_VERSION};
use hsched_testkit::require;
use std::time::Duration;

/// What this binary prints when the guest's script runs it (ignored on
/// the host, where it has nothing to show).
#[test]
#[ignore = "run inside the guest by a_script_runs_in_the_sched_ext_guest_with_a_host_binary"]
fn probe_inside_the_guest() {
    let version = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    println!("probe ran on {}", version.trim());
}

#[test]
fn a_script_runs_in_the_sched_ext_guest_with_a_host_binary() {
    require!("the sched_ext guest", guest::requirements());

    let me = std::env::current_exe().unwrap();
    let out = Guest::new()
        .binary_at(&me, "/bin/probe")
        .script(
            "echo \"state=$(cat /sys/kernel/sched_ext/state)\"\n\
             echo \"cpus=$(nproc)\"\n\
             echo \"release=$(uname -r)\"\n\
             /bin/probe --exact probe_inside_the_guest --ignored --nocapture \
                 --test-threads 1 | grep -o 'probe ran on .*'\n\
             grep -q ' /sys/kernel/tracing tracefs ' /proc/mounts && grep -q ' /sys/fs/bpf bpf ' /proc/mounts && echo mounted\n\
             echo to-stderr >&2\n\
             exit 7\n",
        )
        .run(Duration::from_secs(300))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "guest: boot {:.1?}, whole run {:.1?}",
        out.boot, out.elapsed
    );
    assert_eq!(
        out.stdout,
        format!(
            "state=disabled\ncpus=2\nrelease={KERNEL_VERSION}\nprobe ran on {KERNEL_VERSION}\nmounted\n"
        ),
        "{out:#?}"
    );
    assert_eq!(out.stderr, "to-stderr\n", "{out:#?}");
    assert_eq!(out.code, 7, "{out:#?}");
}

#[test]
fn a_guest_past_its_timeout_is_killed_and_says_so() {
    require!("the sched_ext guest", guest::requirements());

    let err = Guest::new()
        .script("sleep 600")
        .run(Duration::from_secs(2))
        .unwrap_err();
    assert!(
        err.contains("did not finish within 2s") && err.contains("qemu killed"),
        "{err}"
    );
}
