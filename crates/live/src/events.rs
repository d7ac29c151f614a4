//! Block and wakeup events from the kernel: the `sched:sched_switch`,
//! `sched:sched_waking` and `sched:sched_wakeup_new` tracepoints of the
//! watched threads, and their forks and exits (`sched_process_fork`,
//! `sched_process_exit`: a new thread or process of a managed one is
//! managed too), recorded in private ftrace instances
//! (`/sys/kernel/tracing/instances/hsched-PID-N`) and read as their ring
//! buffers' binary pages, one `trace_pipe_raw` per CPU: no polling of
//! `/proc`, all CPUs' events merged in time order, CLOCK_MONOTONIC stamps
//! (`trace_clock = mono`) to the nanosecond.
//!
//! Why ftrace and not `perf_event_open`: sampled through perf on this
//! kernel, the wakeup tracepoints fired in hard-interrupt context on CPU 1
//! (a timer waking a thread that sleeps there) never reached the perf
//! buffer, while ftrace records every one (measured: 1 of 40 timer
//! wakeups of a thread pinned to CPU 1 through perf, 40 of 40 through
//! ftrace). The kernel filters by thread before anything is recorded (see
//! below), so the agent's own activity does not feed back into the stream.
//!
//! Why binary pages and not `trace_pipe`: for `trace_pipe` the kernel
//! formats every event as text, which the reader then parses back; at
//! 1,000 decisions a second that was about a third of the agent's own CPU
//! time. The pages are copied out as recorded and decoded with the layout
//! the kernel publishes (`events/header_page`, `events/sched/*/format`).
//!
//! Why two instances: only blocks, wakeups, forks and exits need the agent
//! at once, and each decision it applies makes a watched thread switch
//! (preempted, or given the CPU). Recorded with the others, those switches
//! woke the agent a second time for every decision. So they go to a
//! second instance (`hsched-PID-N-rest`), which is not waited on but read
//! with the first.
//!
//! Which threads: the instances' `set_event_pid` lists them (a list of
//! any length, grown with one write per batch of threads; with
//! `options/event-fork`, the kernel adds what a listed thread forks and
//! drops a thread that exits). It records an event of a listed thread,
//! a switch from or to one, and anything a listed thread does (a wakeup
//! of another it causes): a coarser set than the agent's, which it
//! narrows itself (an event of a thread it does not manage is dropped).
//! The switches' filters name no thread but the reader's own: a switch
//! away from it, blocked, is not a block the agent waits for (it would
//! wake for its own sleep, forever), so it goes with the other switches.
//! Why not one filter naming every thread, as before: the kernel takes a
//! filter of up to a page, some 60 threads.
//!
//! Limits: a CPU is read if the instances had it when the reader was
//! opened (one brought online later is not); the
//! instances are removed when the reader is dropped (an agent killed
//! outright leaves idle instances behind, which the next reader removes).

mod decode;
mod sched_event;
mod text;
mod tracefs;

use decode::{decode_page, Layout, BLOCKED};
pub use sched_event::{monotonic_ns, SchedEvent};
use sched_event::{EVENTS, SWITCH};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::Duration;
pub use text::{parse, Line};
pub use tracefs::tracefs;
use tracefs::{read, remove_stale, write, Stream};

/// An epoll set of `fds`, each reported with its index: readable when one
/// of them is, and it says which.
fn epoll<'a>(fds: impl Iterator<Item = &'a File>) -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 has no memory arguments.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    let set = unsafe { OwnedFd::from_raw_fd(fd) };
    for (i, f) in fds.enumerate() {
        let mut e = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: i as u64,
        };
        // SAFETY: `e` is a valid epoll_event; both descriptors are open.
        let r =
            unsafe { libc::epoll_ctl(set.as_raw_fd(), libc::EPOLL_CTL_ADD, f.as_raw_fd(), &mut e) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(set)
}

/// Reads CPU `cpu`'s pipe until it is empty, appending its events to
/// `out`, in order; returns how many the kernel lost.
fn read_pipe(
    pipe: &mut File,
    cpu: u32,
    page: &mut [u8],
    layout: &Layout,
    out: &mut Vec<SchedEvent>,
) -> io::Result<u64> {
    let mut lost = 0;
    loop {
        match pipe.read(page) {
            Ok(0) => return Ok(lost),
            Ok(n) => lost += decode_page(&page[..n], cpu, layout, out),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(lost),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Switch and wakeup events of chosen threads, all CPUs.
pub struct SchedEvents {
    /// Blocks, wakeups, forks and exits.
    wake: Stream,
    /// The other switches.
    rest: Stream,
    /// Readable when `wake` has events: what the agent waits on.
    wake_ready: OwnedFd,
    /// Readable when `rest` has events.
    rest_ready: OwnedFd,
    /// What `epoll_wait` fills in.
    ready: Vec<libc::epoll_event>,
    layout: Layout,
    /// One page, read into.
    page: Vec<u8>,
    /// Switches read from `rest` that are to be given with the next drain.
    held: Vec<SchedEvent>,
    /// When the last drain of `wake` had read everything (CLOCK_MONOTONIC).
    mark: u64,
    /// Events the kernel could not keep (its buffer was full).
    pub lost: u64,
    /// Whether the events are on: not before a thread is listed (an empty
    /// `set_event_pid` lists every thread).
    enabled: bool,
}

impl SchedEvents {
    /// Starts recording the switches and wakeups of threads `tids` in
    /// private ftrace instances. Needs root and tracefs. The calling
    /// thread is the reader: its own blocks never end a wait.
    pub fn open(tids: &[i32]) -> io::Result<SchedEvents> {
        let tracefs = tracefs()?;
        let formats = EVENTS
            .iter()
            .map(|name| read(&tracefs.join(format!("events/sched/{name}/format"))))
            .collect::<io::Result<Vec<String>>>()?;
        let formats: Vec<&str> = formats.iter().map(String::as_str).collect();
        let layout = Layout::parse(&read(&tracefs.join("events/header_page"))?, &formats)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let instances = tracefs.join("instances");
        remove_stale(&instances);
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("hsched-{}-{n}", std::process::id());
        let wake = Stream::open(instances.join(&name))?;
        let rest = Stream::open(instances.join(format!("{name}-rest")))?;
        let mut events = SchedEvents {
            wake_ready: epoll(wake.pipes.iter().map(|(_, p)| p))?,
            rest_ready: epoll(rest.pipes.iter().map(|(_, p)| p))?,
            ready: vec![
                libc::epoll_event { events: 0, u64: 0 };
                wake.pipes.len().max(rest.pipes.len())
            ],
            page: vec![0; wake.page.max(rest.page)],
            wake,
            rest,
            layout,
            held: Vec::new(),
            mark: 0,
            lost: 0,
            enabled: false,
        };
        // SAFETY: gettid has no arguments.
        let reader = unsafe { libc::gettid() };
        // A block is a watched thread leaving blocked; the reader blocking
        // (to give a watched thread the CPU, where it shares one) is not:
        // waking it for its own sleep would never end. Switches from an
        // unwatched thread to a watched one also come here (the agent
        // drops those it does not manage).
        let block = format!("prev_state & {BLOCKED} && prev_pid != {reader}");
        for stream in [&events.wake, &events.rest] {
            write(&stream.dir().join("options/event-fork"), "1")?;
        }
        events.wake.set(SWITCH, "filter", &block)?;
        events.rest.set(SWITCH, "filter", &format!("!({block})"))?;
        // The reader woken (by its timer, say) while a watched thread runs.
        for waking in &EVENTS[1..3] {
            events
                .wake
                .set(waking, "filter", &format!("pid != {reader}"))?;
        }
        events.watch(tids)?;
        Ok(events)
    }

    /// The ftrace instance directory it records in (the switches that are
    /// not blocks go to a second one: the same name with `-rest`).
    pub fn instance(&self) -> &Path {
        self.wake.dir()
    }

    /// Records threads `tids` too from now on, with what they fork (one
    /// write per instance, some tens of ms of the kernel's: a batch of
    /// threads is best given at once). Those listed before stay listed
    /// until they exit.
    pub fn watch(&mut self, tids: &[i32]) -> io::Result<()> {
        if tids.is_empty() {
            return Ok(());
        }
        self.wake.add_pids(tids)?;
        self.rest.add_pids(tids)?;
        if !self.enabled {
            for name in EVENTS {
                self.wake.set(name, "enable", "1")?;
            }
            self.rest.set(SWITCH, "enable", "1")?;
            self.enabled = true;
        }
        Ok(())
    }

    /// Waits until an event is ready or `timeout` passes; whether one is.
    /// (A switch that is not a block does not end the wait: it comes with
    /// the next drain.)
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        Ok(crate::sys::poll_readable(&[self.fd()], timeout)?[0])
    }

    /// The descriptor that becomes readable when events are ready (but
    /// for switches that are not blocks), to wait on together with others.
    pub fn fd(&self) -> RawFd {
        self.wake_ready.as_raw_fd()
    }

    /// Appends the blocks, wakeups, forks and exits available now to
    /// `out`, in time order: what the dispatcher decides on, read before
    /// anything else so that its decision waits for nothing. The other
    /// switches up to now come with [`SchedEvents::drain_switches`].
    pub fn drain(&mut self, out: &mut Vec<SchedEvent>) -> io::Result<()> {
        let start = out.len();
        let ready = wait_ready(&self.wake_ready, &mut self.ready)?;
        for e in &self.ready[..ready] {
            let (cpu, pipe) = &mut self.wake.pipes[e.u64 as usize];
            self.lost += read_pipe(pipe, *cpu, &mut self.page, &self.layout, out)?;
        }
        // Every block and wakeup up to here is read: the other switches
        // after it wait for the next drain, so that none comes before an
        // event of `wake` that happened earlier.
        self.mark = monotonic_ns();
        // Each CPU's events are in order; merged, the CPUs are not.
        out[start..].sort_by_key(|e| e.time_ns());
        Ok(())
    }

    /// Appends the switches that are not blocks (preemptions, a thread
    /// given the CPU) up to the last [`SchedEvents::drain`] to `out`, in
    /// time order.
    pub fn drain_switches(&mut self, out: &mut Vec<SchedEvent>) -> io::Result<()> {
        let start = out.len();
        out.append(&mut self.held);
        let ready = wait_ready(&self.rest_ready, &mut self.ready)?;
        for e in &self.ready[..ready] {
            let (cpu, pipe) = &mut self.rest.pipes[e.u64 as usize];
            self.lost += read_pipe(pipe, *cpu, &mut self.page, &self.layout, out)?;
        }
        let mut kept = start;
        for i in start..out.len() {
            let e = out[i];
            if e.time_ns() > self.mark {
                self.held.push(e);
            } else {
                out[kept] = e;
                kept += 1;
            }
        }
        out.truncate(kept);
        out[start..].sort_by_key(|e| e.time_ns());
        Ok(())
    }
}

/// Which pipes of an epoll set `epfd` are readable now: their indices go
/// to the first entries of `ready`, which are returned.
fn wait_ready(epfd: &OwnedFd, ready: &mut [libc::epoll_event]) -> io::Result<usize> {
    // SAFETY: `ready` is a valid array of its length.
    let n =
        unsafe { libc::epoll_wait(epfd.as_raw_fd(), ready.as_mut_ptr(), ready.len() as i32, 0) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(n.max(0) as usize)
}
