//! Loading the BPF scheduler and talking to it.

use libbpf_rs::{
    Link, Map, MapCore, MapFlags, Object, ObjectBuilder, RingBuffer, RingBufferBuilder,
};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// The BPF object, compiled by build.rs from src/bpf/hsched.bpf.c.
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hsched.bpf.o"));

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
    fn to_bytes(self) -> [u8; 16] {
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
    fn parse(bytes: &[u8]) -> Option<Event> {
        let u32_at = |at: usize| Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
        let kind = match u32_at(0)? {
            1 => EventKind::Runnable,
            2 => EventKind::Quiescent,
            3 => EventKind::Exit,
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

/// The loaded and attached scheduler. Dropping it unregisters it from the
/// kernel (as the death of its process would): tasks with `SCHED_EXT` go
/// back to the fair class.
pub struct Scheduler {
    // Dropped first: unregisters the scheduler while the object lives.
    link: Option<Link>,
    events: RingBuffer<'static>,
    pending: Rc<RefCell<Vec<Event>>>,
    object: Object,
}

impl Scheduler {
    /// Opens the embedded BPF object, loads it (the kernel verifies it and
    /// resolves its kfuncs) and attaches its `sched_ext_ops`: from then on
    /// the kernel schedules `SCHED_EXT` tasks with it and
    /// `/sys/kernel/sched_ext/state` reads `enabled`.
    ///
    /// Needs root (CAP_SYS_ADMIN and CAP_BPF) and a kernel with sched_ext;
    /// only one sched_ext scheduler can be attached at a time. Every CPU's
    /// decision starts as [`Decision::RunDefault`]. Pairs with
    /// [`Scheduler::unload`] (or drop).
    pub fn load() -> Result<Scheduler, String> {
        let mut builder = ObjectBuilder::default();
        builder.name("hsched").map_err(|e| e.to_string())?;
        let open = builder
            .open_memory(OBJECT)
            .map_err(|e| format!("opening the BPF scheduler: {e}"))?;
        let mut object = open
            .load()
            .map_err(|e| format!("loading the BPF scheduler (the kernel's verifier): {e}"))?;
        let pending = Rc::new(RefCell::new(Vec::new()));
        let events = {
            let map = find_map(&object, "events")?;
            let sink = Rc::clone(&pending);
            let mut builder = RingBufferBuilder::new();
            builder
                .add(&map, move |bytes: &[u8]| {
                    if let Some(event) = Event::parse(bytes) {
                        sink.borrow_mut().push(event);
                    }
                    0
                })
                .map_err(|e| format!("the events ring buffer: {e}"))?;
            builder
                .build()
                .map_err(|e| format!("the events ring buffer: {e}"))?
        };
        let link = {
            let mut ops = object
                .maps_mut()
                .find(|m| m.name() == "hsched_ops")
                .ok_or("the BPF object has no hsched_ops")?;
            let link = ops
                .attach_struct_ops()
                .map_err(|e| format!("attaching the sched_ext scheduler: {e}"))?;
            // Kernels whose kfuncs find their scheduler through the calling
            // program (7.x) need the kick program tied to this struct_ops;
            // older kernels have no such call and need none.
            let ops = find_map(&object, "hsched_ops")?;
            if let Some(kick) = object.progs_mut().find(|p| p.name() == "kick") {
                let _ = kick.assoc_struct_ops(&ops);
            }
            link
        };
        Ok(Scheduler {
            link: Some(link),
            events,
            pending,
            object,
        })
    }

    /// Tells the scheduler that user space manages task `tid`: when it is
    /// runnable it waits in the BPF program's custody for a
    /// [`Decision::RunTask`] naming it, and its events reach
    /// [`Scheduler::poll_events`]. Call it before the task gets
    /// `SCHED_EXT`; a task that is already queued in the default DSQ stays
    /// there until it runs once. Pairs with [`Scheduler::unmanage`]; a task
    /// that exits is forgotten by itself.
    ///
    /// The thread that writes the decisions must never wait for a managed
    /// task that waits for a decision: such a wait ends only when the
    /// kernel's watchdog ejects the scheduler. A task in the middle of an
    /// exec is one (reading its `/proc` files waits for its exec lock, and
    /// `Command::spawn` returns before the exec has finished); so is one
    /// holding a lock or a pipe the decider needs.
    pub fn manage(&self, tid: u32) -> Result<(), String> {
        find_map(&self.object, "managed")?
            .update(&tid.to_ne_bytes(), &[1], MapFlags::ANY)
            .map_err(|e| format!("managing task {tid}: {e}"))
    }

    /// Stops managing `tid`: from its next enqueue it goes to the default
    /// DSQ. If it waits in custody now, it stays there until a decision
    /// names it; name it once, or unmanage only tasks that run or sleep.
    pub fn unmanage(&self, tid: u32) -> Result<(), String> {
        match find_map(&self.object, "managed")?.delete(&tid.to_ne_bytes()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("unmanaging task {tid}: {e}")),
        }
    }

    /// Writes `cpu`'s decision, which its next dispatch reads: when its
    /// current task's slice ends, when it has nothing else to run, or at
    /// once after [`Scheduler::kick`]. A [`Decision::RunTask`] whose task is
    /// not runnable in custody, not allowed on `cpu`, or whose horizon has
    /// passed, leaves the CPU without a task of this scheduler's until the
    /// next decision.
    pub fn set_decision(&self, cpu: u32, decision: Decision) -> Result<(), String> {
        if cpu >= MAX_CPUS {
            return Err(format!("CPU {cpu} is beyond the scheduler's {MAX_CPUS}"));
        }
        find_map(&self.object, "decisions")?
            .update(&cpu.to_ne_bytes(), &decision.to_bytes(), MapFlags::ANY)
            .map_err(|e| format!("writing CPU {cpu}'s decision: {e}"))
    }

    /// Preempts whatever runs on `cpu` (`scx_bpf_kick_cpu` with
    /// `SCX_KICK_PREEMPT`, from a BPF syscall program run with
    /// BPF_PROG_RUN), so that it dispatches again and reads its decision.
    /// Call it after [`Scheduler::set_decision`] for a decision that must
    /// take effect now rather than at the end of the current slice.
    pub fn kick(&self, cpu: u32) -> Result<(), String> {
        let prog = self
            .object
            .progs_mut()
            .find(|p| p.name() == "kick")
            .ok_or("the BPF object has no kick program")?;
        let mut args = (cpu as i32).to_ne_bytes();
        let input = libbpf_rs::ProgramInput {
            context_in: Some(&mut args),
            ..Default::default()
        };
        prog.test_run(input)
            .map(drop)
            .map_err(|e| format!("kicking CPU {cpu}: {e}"))
    }

    /// Waits up to `timeout` for events of managed tasks (wakeups, blocks,
    /// exits) and returns those that arrived, oldest first (possibly none).
    pub fn poll_events(&self, timeout: Duration) -> Result<Vec<Event>, String> {
        self.events
            .poll(timeout)
            .map_err(|e| format!("polling the events ring buffer: {e}"))?;
        Ok(std::mem::take(&mut *self.pending.borrow_mut()))
    }

    /// Unregisters the scheduler (the kernel returns every `SCHED_EXT` task
    /// to the fair class and `/sys/kernel/sched_ext/state` reads
    /// `disabled`) and returns why it stopped, as its `exit` callback
    /// recorded: "unregistered from user space" normally, the kernel's
    /// reason if it had ejected the scheduler before.
    pub fn unload(mut self) -> Result<ExitInfo, String> {
        drop(self.link.take());
        self.exit_info()?
            .ok_or_else(|| "the scheduler's exit callback recorded nothing".to_string())
    }

    /// Why the scheduler stopped, if it has (the kernel ejected it, e.g.
    /// its watchdog): `None` while it runs. Poll it to notice an ejection;
    /// the tasks are then back under the fair class.
    pub fn exit_info(&self) -> Result<Option<ExitInfo>, String> {
        let bss = find_map(&self.object, "hsched.bss")?;
        let bytes = bss
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| format!("reading the exit record: {e}"))?
            .ok_or("the exit record is missing")?;
        // struct exit_record: s32 kind, s32 pad, s64 exit_code,
        // char reason[128], char msg[1024].
        let text = |range: std::ops::Range<usize>| {
            let raw = bytes.get(range).unwrap_or(&[]);
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            String::from_utf8_lossy(&raw[..end]).into_owned()
        };
        if bytes.len() < 1168 {
            return Err(format!(
                "the exit record has {} bytes, not 1168",
                bytes.len()
            ));
        }
        let kind = i32::from_ne_bytes(bytes[0..4].try_into().unwrap());
        if kind == 0 {
            return Ok(None);
        }
        Ok(Some(ExitInfo {
            kind,
            exit_code: i64::from_ne_bytes(bytes[8..16].try_into().unwrap()),
            reason: text(16..144),
            msg: text(144..1168),
        }))
    }
}

fn find_map<'obj>(object: &'obj Object, name: &str) -> Result<Map<'obj>, String> {
    object
        .maps()
        .find(|m| m.name() == name)
        .ok_or_else(|| format!("the BPF object has no map {name}"))
}
