//! hsched's sched_ext backend: a BPF scheduler (src/bpf, GPL-2.0, as
//! sched_ext requires) that runs, on each CPU, what user space decided, and
//! a loader for it. `hsched live --backend scx` drives it (hsched-live's
//! agent): the policies and the dispatcher stay in user space.
//!
//! User space decides, the kernel enforces: user space writes per CPU a
//! [`Decision`] (run this task until this time, run the default DSQ, or
//! idle) and kicks the CPU; the BPF dispatch inserts the named task with
//! slice = horizon − now, so the kernel preempts it at the horizon. Tasks
//! user space manages stay in the BPF program's custody while runnable;
//! their wakeups, blocks, switches, forks and exits reach user space as
//! [`Event`]s through a BPF ring buffer. What a managed task creates is
//! managed from its creation (its fork is an event).
//!
//! It schedules the whole machine ([`Options::whole_machine`]: every
//! `SCHED_NORMAL` task; those user space does not manage wait in the
//! default DSQ, and [`EventKind::Others`] tells user space when they do) or
//! runs in partial mode (`SCX_OPS_SWITCH_PARTIAL`: only tasks whose policy
//! is `SCHED_EXT`, [`SCHED_EXT`], are scheduled by it, and the fair class
//! runs before them). Its watchdog timeout is [`Options::timeout`]: a
//! runnable task that no decision runs for that long makes the kernel
//! unload the scheduler, and every task goes back to the fair class.
//!
//! Everything BPF is behind the crate feature `scx` (clang, libelf, zlib and
//! a `vmlinux.h` needed at build time; see the README). Without it the crate
//! is a stub: [`available`] says why, and [`Scheduler::load`] fails with
//! that reason.

#[cfg(feature = "scx")]
mod loader;
#[cfg(not(feature = "scx"))]
mod stub;

#[cfg(feature = "scx")]
pub use loader::Scheduler;
#[cfg(not(feature = "scx"))]
pub use stub::Scheduler;

/// The policy of tasks a sched_ext scheduler runs (`SCHED_EXT`).
pub const SCHED_EXT: u32 = 7;

/// The longest watchdog timeout the kernel accepts
/// (`SCX_WATCHDOG_MAX_TIMEOUT`).
pub const MAX_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How the scheduler is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Every `SCHED_NORMAL` task is under the scheduler (not only those
    /// given `SCHED_EXT`).
    pub whole_machine: bool,
    /// The kernel's watchdog timeout (its `timeout_ms`, at most
    /// [`MAX_TIMEOUT`]): a task left runnable and unrun this long gets the
    /// scheduler ejected.
    pub timeout: std::time::Duration,
}

impl Default for Options {
    /// Partial mode, a 5 s watchdog.
    fn default() -> Self {
        Options {
            whole_machine: false,
            timeout: std::time::Duration::from_secs(5),
        }
    }
}

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

/// sched_ext's state as the kernel shows it (`enabled`, `disabled`, ...).
pub fn state() -> Result<String, String> {
    std::fs::read_to_string(format!("{SYSFS}/state"))
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("{SYSFS}/state: {e}"))
}

/// The number of CPUs the `decisions` map has room for.
pub const MAX_CPUS: u32 = 256;

/// What a CPU runs next, as user space decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run the tasks user space does not manage (the default DSQ, FIFO).
    /// What every CPU does until user space writes a decision.
    RunDefault,
    /// Run the managed task `tid` until `until_ns` (CLOCK_MONOTONIC, in
    /// nanoseconds): the kernel preempts it then, whatever it does.
    RunTask {
        /// The task (thread) id.
        tid: u32,
        /// The horizon, on CLOCK_MONOTONIC.
        until_ns: u64,
    },
    /// Run nothing of this scheduler's.
    Idle,
}

impl Decision {
    /// As the BPF program's `struct decision` lays it out.
    pub fn to_bytes(self) -> [u8; 16] {
        let (kind, tid, until): (u32, u32, u64) = match self {
            Decision::RunDefault => (0, 0, 0),
            Decision::RunTask { tid, until_ns } => (1, tid, until_ns),
            Decision::Idle => (2, 0, 0),
        };
        let mut bytes = [0; 16];
        bytes[0..4].copy_from_slice(&kind.to_ne_bytes());
        bytes[4..8].copy_from_slice(&tid.to_ne_bytes());
        bytes[8..16].copy_from_slice(&until.to_ne_bytes());
        bytes
    }
}

/// What happened to a managed task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// It became runnable (woke up, or was just switched to this
    /// scheduler) and waits in the BPF program's custody for a decision.
    Runnable,
    /// It went to sleep (blocked).
    Quiescent,
    /// It exited, or the scheduler is unloading; it is no longer managed.
    Exit,
    /// It was created by managed task `parent` (a thread or a process),
    /// and is managed from now on.
    Fork {
        /// The creating task.
        parent: u32,
    },
    /// It started running on the event's CPU.
    Running,
    /// It stopped running there: preempted or at its horizon (`runnable`),
    /// or blocked (`!runnable`).
    Stopping {
        /// Still runnable (back in custody), not blocked.
        runnable: bool,
    },
    /// Tasks nobody manages now wait in the default DSQ (`ready`), or a CPU
    /// running the default found it empty (`!ready`). The event's task is
    /// 0: it concerns them all.
    Others {
        /// Some wait.
        ready: bool,
    },
}

/// One event from the BPF ring buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The task (thread) id.
    pub tid: u32,
    /// The CPU the event was recorded on.
    pub cpu: u32,
    /// When, on CLOCK_MONOTONIC (bpf_ktime_get_ns), in nanoseconds.
    pub time_ns: u64,
}

impl Event {
    /// From the BPF program's `struct event`: kind, tid, cpu, a
    /// kind-dependent word (the parent of a fork, whether a stopping task
    /// is still runnable), then the time; `None` for anything else.
    pub fn parse(bytes: &[u8]) -> Option<Event> {
        let u32_at = |at: usize| Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
        let other = u32_at(12)?;
        let kind = match u32_at(0)? {
            1 => EventKind::Runnable,
            2 => EventKind::Quiescent,
            3 => EventKind::Exit,
            4 => EventKind::Fork { parent: other },
            5 => EventKind::Running,
            6 => EventKind::Stopping {
                runnable: other != 0,
            },
            7 => EventKind::Others { ready: other != 0 },
            _ => return None,
        };
        Some(Event {
            kind,
            tid: u32_at(4)?,
            cpu: u32_at(8)?,
            time_ns: u64::from_ne_bytes(bytes.get(16..24)?.try_into().ok()?),
        })
    }
}

/// What the BPF dispatch did so far, summed over the CPUs: how each
/// decision it read came out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// The decided task inserted to run.
    pub inserted: u64,
    /// The decided task was running: its slice extended to the horizon.
    pub extended: u64,
    /// The default DSQ consumed (a CPU whose decision is to run it).
    pub default: u64,
    /// The horizon had passed: the CPU waited for user space.
    pub late: u64,
    /// The decided task was not in custody (not runnable, or running on
    /// another CPU): the CPU waited.
    pub missing: u64,
    /// The decided task may not run on that CPU (its affinity).
    pub not_allowed: u64,
    /// Tasks dispatched at their wakeup by the fast path, before user space
    /// decided ([`Scheduler::arm`]).
    pub fast: u64,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} inserted, {} extended, {} of the default, {} past their horizon, {} with the task not waiting, {} on a CPU the task may not use; {} tasks run at their wakeup by the fast path",
            self.inserted, self.extended, self.default, self.late, self.missing, self.not_allowed, self.fast
        )
    }
}

/// Why the scheduler stopped, as the kernel told its `exit` callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    /// `enum scx_exit_kind`: 64 is "unregistered from user space", 1024 and
    /// above an error (1026: the watchdog ejected it).
    pub kind: i32,
    /// The exit code (for exits the scheduler asked for).
    pub exit_code: i64,
    /// The kernel's reason, e.g. "unregistered from user space".
    pub reason: String,
    /// The message with it, if any.
    pub msg: String,
}

impl ExitInfo {
    /// Whether the kernel ejected the scheduler (an error exit: the
    /// watchdog, a failed callback), rather than user space unloading it.
    pub fn is_error(&self) -> bool {
        self.kind >= 1024
    }
}

impl std::fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (exit kind {})", self.reason, self.kind)?;
        if !self.msg.is_empty() {
            write!(f, ": {}", self.msg)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_needs_the_feature_and_a_sched_ext_kernel() {
        let here = std::path::Path::new(SYSFS).is_dir();
        match available() {
            Ok(()) => assert!(cfg!(feature = "scx") && here),
            Err(why) if !cfg!(feature = "scx") => assert!(why.contains("`scx` feature"), "{why}"),
            Err(why) => assert!(!here && why.contains("no sched_ext"), "{why}"),
        }
    }

    fn event_bytes(kind: u32, tid: u32, cpu: u32, other: u32, time: u64) -> Vec<u8> {
        [kind, tid, cpu, other]
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .chain(time.to_ne_bytes())
            .collect()
    }

    #[test]
    fn events_parse_as_the_bpf_program_lays_them_out() {
        let fork = Event::parse(&event_bytes(4, 12, 1, 11, 99)).unwrap();
        assert_eq!(fork.kind, EventKind::Fork { parent: 11 });
        assert_eq!((fork.tid, fork.cpu, fork.time_ns), (12, 1, 99));
        let stop = |other| Event::parse(&event_bytes(6, 5, 0, other, 1)).unwrap().kind;
        assert_eq!(stop(0), EventKind::Stopping { runnable: false });
        assert_eq!(stop(1), EventKind::Stopping { runnable: true });
        assert_eq!(
            Event::parse(&event_bytes(5, 5, 0, 0, 1)).unwrap().kind,
            EventKind::Running
        );
        assert_eq!(Event::parse(&event_bytes(9, 5, 0, 0, 1)), None);
        assert_eq!(Event::parse(&event_bytes(1, 5, 0, 0, 1)[..20]), None);
    }

    #[test]
    #[cfg(not(feature = "scx"))]
    fn the_stub_says_why_it_cannot_load() {
        match Scheduler::load() {
            Err(why) => assert!(why.contains("`scx` feature"), "{why}"),
            Ok(_) => panic!("the stub loaded"),
        }
    }
}
