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

/// Whether hsched can load its sched_ext scheduler here: `Err` with the
/// reason when it was built without the `scx` feature, or when the running
/// kernel has no sched_ext (no `/sys/kernel/sched_ext`). Loading may still
/// fail for want of privileges (it needs root) or because another
/// sched_ext scheduler is attached.
pub fn available() -> Result<(), String> {
    if !cfg!(feature = "scx") {
        return Err(
            "hsched was built without the `scx` feature (the sched_ext backend); \
                    rebuild with `--features scx`"
                .into(),
        );
    }
    if !std::path::Path::new(SYSFS).is_dir() {
        return Err(format!(
            "this kernel has no sched_ext ({SYSFS} is missing; it needs CONFIG_SCHED_CLASS_EXT)"
        ));
    }
    Ok(())
}

/// Where the kernel shows sched_ext's state.
const SYSFS: &str = "/sys/kernel/sched_ext";

#[cfg(test)]
mod tests {
    #[test]
    fn available_needs_the_feature_and_a_sched_ext_kernel() {
        let here = std::path::Path::new(super::SYSFS).is_dir();
        match super::available() {
            Ok(()) => assert!(cfg!(feature = "scx") && here),
            Err(why) if !cfg!(feature = "scx") => assert!(why.contains("`scx` feature"), "{why}"),
            Err(why) => assert!(!here && why.contains("no sched_ext"), "{why}"),
        }
    }
}
