//! What the reader gives: the tracepoints it reads, the event each
//! becomes ([`SchedEvent`]), and the clock they are stamped with.

/// The tracepoints read.
pub(super) const EVENTS: [&str; 5] = [
    "sched_switch",
    "sched_waking",
    "sched_wakeup_new",
    "sched_process_fork",
    "sched_process_exit",
];

/// The switches: of them, only blocks are waited for.
pub(super) const SWITCH: &str = EVENTS[0];

/// What the kernel reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedEvent {
    /// CPU `cpu` switched from `prev` to `next`; `prev_blocked` when `prev`
    /// left in a sleeping state (it blocked), not preempted or stopped.
    Switch {
        time_ns: u64,
        cpu: u32,
        prev: i32,
        prev_blocked: bool,
        next: i32,
    },
    /// Thread `tid` is being woken (or was just created).
    Wakeup { time_ns: u64, cpu: u32, tid: i32 },
    /// Thread `parent` made a new thread or process, `child`.
    Fork {
        time_ns: u64,
        parent: i32,
        child: i32,
    },
    /// Thread `tid` ended.
    Exit { time_ns: u64, tid: i32 },
    /// Tasks nobody manages now wait to run (`ready`), or no longer do
    /// (sched_ext's whole-machine mode: see [`hsched_scx::EventKind::Others`]).
    Others { time_ns: u64, ready: bool },
}

impl SchedEvent {
    pub fn time_ns(&self) -> u64 {
        match *self {
            SchedEvent::Switch { time_ns, .. }
            | SchedEvent::Wakeup { time_ns, .. }
            | SchedEvent::Fork { time_ns, .. }
            | SchedEvent::Exit { time_ns, .. }
            | SchedEvent::Others { time_ns, .. } => time_ns,
        }
    }
}

/// CLOCK_MONOTONIC now, in ns: the clock the events are stamped with.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
