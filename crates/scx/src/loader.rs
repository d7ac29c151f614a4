//! Loading the BPF scheduler and talking to it.

use crate::{Decision, Event, ExitInfo, Options, Stats, MAX_CPUS, MAX_TIMEOUT};
use libbpf_rs::{
    Link, Map, MapCore, MapFlags, Object, ObjectBuilder, RingBuffer, RingBufferBuilder,
};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// The BPF object, compiled by build.rs from src/bpf/hsched.bpf.c.
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hsched.bpf.o"));

/// How long [`Scheduler::unload`] waits for the kernel to finish.
const UNLOAD_WAIT: Duration = Duration::from_secs(5);

/// By CPU, the task its decision names; by task, that CPU (the `wanted`
/// map as written).
type Named = (Vec<Option<u32>>, std::collections::HashMap<u32, u32>);

/// The loaded and attached scheduler. Dropping it unregisters it from the
/// kernel (as the death of its process would): tasks with `SCHED_EXT` go
/// back to the fair class.
pub struct Scheduler {
    // Dropped first: unregisters the scheduler while the object lives.
    link: Option<Link>,
    events: RingBuffer<'static>,
    pending: Rc<RefCell<Vec<Event>>>,
    named: RefCell<Named>,
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
        Scheduler::load_with(&Options::default())
    }

    /// [`Scheduler::load`] with `options`: the mode and the watchdog
    /// timeout are written into the scheduler's `sched_ext_ops` before the
    /// kernel sees it.
    pub fn load_with(options: &Options) -> Result<Scheduler, String> {
        crate::available()?;
        if options.timeout > MAX_TIMEOUT || options.timeout.is_zero() {
            return Err(format!(
                "a watchdog timeout of {:?}: the kernel takes one above 0 and up to {MAX_TIMEOUT:?}",
                options.timeout
            ));
        }
        let mut builder = ObjectBuilder::default();
        builder.name("hsched").map_err(|e| e.to_string())?;
        let mut open = builder
            .open_memory(OBJECT)
            .map_err(|e| format!("opening the BPF scheduler: {e}"))?;
        configure(&mut open, options)?;
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
            named: RefCell::new((vec![None; MAX_CPUS as usize], Default::default())),
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

    /// Arms managed task `tid` for the fast path on wakeup: at its next
    /// wakeup the scheduler runs it on `cpu` at once, for at most 1 ms,
    /// preempting what runs there, before user space has heard of the
    /// wakeup (whose event comes as always). For a task the hierarchy is
    /// predicted to give `cpu` as soon as it wakes; where it then decides
    /// otherwise, the decision written preempts it back into custody.
    /// Once: the wakeup uses the arming up. `None` disarms.
    pub fn arm(&self, tid: u32, cpu: Option<u32>) -> Result<(), String> {
        let armed = find_map(&self.object, "armed")?;
        match cpu {
            Some(cpu) => armed
                .update(
                    &tid.to_ne_bytes(),
                    &(cpu as i32).to_ne_bytes(),
                    MapFlags::ANY,
                )
                .map_err(|e| format!("arming task {tid}: {e}")),
            None => match armed.delete(&tid.to_ne_bytes()) {
                Err(e) if e.kind() != libbpf_rs::ErrorKind::NotFound => {
                    Err(format!("disarming task {tid}: {e}"))
                }
                _ => Ok(()),
            },
        }
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
    /// next decision; such a task that enters custody later kicks `cpu`
    /// itself.
    pub fn set_decision(&self, cpu: u32, decision: Decision) -> Result<(), String> {
        if cpu >= MAX_CPUS {
            return Err(format!("CPU {cpu} is beyond the scheduler's {MAX_CPUS}"));
        }
        let tid = match decision {
            Decision::RunTask { tid, .. } => Some(tid),
            _ => None,
        };
        let wanted = find_map(&self.object, "wanted")?;
        let wanted_error = |e: libbpf_rs::Error| format!("writing CPU {cpu}'s decision: {e}");
        let mut named = self.named.borrow_mut();
        let (by_cpu, by_task) = &mut *named;
        let old = by_cpu[cpu as usize];
        if let Some(old) = old.filter(|&old| Some(old) != tid) {
            // Another CPU's decision may name it by now.
            if by_task.get(&old) == Some(&cpu) {
                by_task.remove(&old);
                match wanted.delete(&old.to_ne_bytes()) {
                    Err(e) if e.kind() != libbpf_rs::ErrorKind::NotFound => {
                        return Err(wanted_error(e))
                    }
                    _ => {}
                }
            }
        }
        if let Some(tid) = tid.filter(|&tid| by_task.get(&tid) != Some(&cpu)) {
            wanted
                .update(
                    &tid.to_ne_bytes(),
                    &(cpu as i32).to_ne_bytes(),
                    MapFlags::ANY,
                )
                .map_err(wanted_error)?;
            by_task.insert(tid, cpu);
        }
        by_cpu[cpu as usize] = tid;
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

    /// A file descriptor that polls readable when events are waiting (the
    /// ring buffer's epoll instance), for a caller that waits for them
    /// together with other things; then [`Scheduler::take_events`].
    pub fn events_fd(&self) -> std::os::fd::RawFd {
        self.events.epoll_fd()
    }

    /// Appends the events waiting to `out`, oldest first, without waiting
    /// for any.
    pub fn take_events(&self, out: &mut Vec<Event>) -> Result<(), String> {
        self.events
            .consume()
            .map_err(|e| format!("reading the events ring buffer: {e}"))?;
        out.append(&mut self.pending.borrow_mut());
        Ok(())
    }

    /// Unregisters the scheduler (the kernel returns every `SCHED_EXT` task
    /// to the fair class and `/sys/kernel/sched_ext/state` reads
    /// `disabled`) and returns why it stopped, as its `exit` callback
    /// recorded: "unregistered from user space" normally, the kernel's
    /// reason if it had ejected the scheduler before.
    /// The kernel may finish disabling after the detach returns (seen on
    /// 7.3): the record is waited for, up to [`UNLOAD_WAIT`].
    pub fn unload(mut self) -> Result<ExitInfo, String> {
        drop(self.link.take());
        let start = std::time::Instant::now();
        loop {
            if let Some(exit) = self.exit_info()? {
                return Ok(exit);
            }
            if start.elapsed() > UNLOAD_WAIT {
                return Err(format!(
                    "the scheduler's exit callback recorded nothing within {UNLOAD_WAIT:?} (sched_ext: {})",
                    crate::state().unwrap_or_else(|e| e)
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// What the BPF dispatch did so far, summed over the CPUs.
    pub fn stats(&self) -> Result<Stats, String> {
        let map = find_map(&self.object, "stats")?;
        let mut sums = [0u64; 7];
        for (key, sum) in sums.iter_mut().enumerate() {
            let per_cpu = map
                .lookup_percpu(&(key as u32).to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| format!("reading the dispatch counts: {e}"))?
                .unwrap_or_default();
            *sum = per_cpu
                .iter()
                .filter_map(|v| Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?)))
                .sum();
        }
        let [inserted, extended, default, late, missing, not_allowed, fast] = sums;
        Ok(Stats {
            inserted,
            extended,
            default,
            late,
            missing,
            not_allowed,
            fast,
        })
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

/// `SCX_OPS_SWITCH_PARTIAL`, as `enum scx_ops_flags` has it.
const SWITCH_PARTIAL: u64 = 1 << 3;

/// Writes `options` into the `hsched_ops` struct_ops of the opened object:
/// its flags (partial mode or not) and `timeout_ms`, at the offsets the
/// object's own BTF gives for `struct sched_ext_ops` (the layout libbpf
/// reads the value with, whatever the running kernel's).
fn configure(open: &mut libbpf_rs::OpenObject, options: &Options) -> Result<(), String> {
    use libbpf_rs::btf::types::{MemberAttr, Struct};
    use libbpf_rs::AsRawLibbpf;
    let offsets = {
        // SAFETY: the object outlives this borrow of it, which ends here.
        let raw = unsafe { open.as_libbpf_object().as_ref() };
        let btf = libbpf_rs::btf::Btf::from_bpf_object(raw)
            .map_err(|e| format!("the BPF object's BTF: {e}"))?
            .ok_or("the BPF object has no BTF")?;
        let ops: Struct = btf
            .type_by_name("sched_ext_ops")
            .ok_or("the BPF object's BTF has no struct sched_ext_ops")?;
        let offset = |field: &str| {
            ops.iter()
                .find(|m| m.name.is_some_and(|n| n == field))
                .and_then(|m| match m.attr {
                    MemberAttr::Normal { offset } => Some(offset as usize / 8),
                    MemberAttr::BitField { .. } => None,
                })
                .ok_or(format!("struct sched_ext_ops has no field {field}"))
        };
        (offset("flags")?, offset("timeout_ms")?)
    };
    let mut ops = open
        .maps_mut()
        .find(|m| m.name() == "hsched_ops")
        .ok_or("the BPF object has no hsched_ops")?;
    let value = ops
        .initial_value_mut()
        .ok_or("hsched_ops has no initial value")?;
    let (flags_at, timeout_at) = offsets;
    let flags_bytes = value
        .get_mut(flags_at..flags_at + 8)
        .ok_or("sched_ext_ops.flags lies beyond hsched_ops")?;
    let mut flags = u64::from_ne_bytes(flags_bytes.try_into().expect("8 bytes"));
    if options.whole_machine {
        flags &= !SWITCH_PARTIAL;
    } else {
        flags |= SWITCH_PARTIAL;
    }
    flags_bytes.copy_from_slice(&flags.to_ne_bytes());
    let timeout_ms = options.timeout.as_millis() as u32;
    value
        .get_mut(timeout_at..timeout_at + 4)
        .ok_or("sched_ext_ops.timeout_ms lies beyond hsched_ops")?
        .copy_from_slice(&timeout_ms.to_ne_bytes());
    Ok(())
}

fn find_map<'obj>(object: &'obj Object, name: &str) -> Result<Map<'obj>, String> {
    object
        .maps()
        .find(|m| m.name() == name)
        .ok_or_else(|| format!("the BPF object has no map {name}"))
}
