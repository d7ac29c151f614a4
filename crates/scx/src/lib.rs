//! hsched's sched_ext backend, first step: a BPF scheduler (src/bpf,
//! GPL-2.0, as sched_ext requires) that runs, on each CPU, what user space
//! decided, and a loader for it.
//!
//! User space decides, the kernel enforces: user space writes per CPU a
//! [`Decision`] (run this task until this time, run the default DSQ, or
//! idle) and kicks the CPU; the BPF dispatch inserts the named task with
//! slice = horizon − now, so the kernel preempts it at the horizon. Tasks
//! user space manages stay in the BPF program's custody while runnable;
//! their wakeups, blocks and exits reach user space as [`Event`]s through a
//! BPF ring buffer.
//!
//! The scheduler runs in partial mode (`SCX_OPS_SWITCH_PARTIAL`): only
//! tasks whose policy is `SCHED_EXT` (7) are scheduled by it, and the fair
//! class runs before them. Its watchdog timeout is 5 s: a runnable task
//! that no decision runs for that long makes the kernel unload the
//! scheduler, and every task goes back to the fair class.
//!
//! Everything BPF is behind the crate feature `scx` (clang, libelf, zlib and
//! a `vmlinux.h` needed at build time; see the README). Without it the crate
//! is a stub whose [`available`] says so.

#[cfg(feature = "scx")]
mod loader;

#[cfg(feature = "scx")]
pub use loader::{Decision, Event, EventKind, ExitInfo, Scheduler};

/// Whether this build can load the sched_ext scheduler: `Err` with the
/// reason when it was built without the `scx` feature.
pub fn available() -> Result<(), String> {
    if cfg!(feature = "scx") {
        Ok(())
    } else {
        Err(
            "hsched was built without the `scx` feature (the sched_ext backend); \
             rebuild with `--features scx`"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn available_says_whether_the_feature_is_built() {
        assert_eq!(super::available().is_ok(), cfg!(feature = "scx"));
    }
}
