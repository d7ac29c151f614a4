//! Block and wakeup events from the kernel: the `sched:sched_switch`,
//! `sched:sched_waking` and `sched:sched_wakeup_new` tracepoints of the
//! watched threads, read from a private ftrace instance
//! (`/sys/kernel/tracing/instances/hsched-PID-N`) whose `trace_pipe` the
//! agent polls: no polling of `/proc`, one time-ordered stream for all
//! CPUs, CLOCK_MONOTONIC stamps (`trace_clock = mono`).
//!
//! Why ftrace and not `perf_event_open`: sampled through perf on this
//! kernel, the wakeup tracepoints fired in hard-interrupt context on CPU 1
//! (a timer waking a thread that sleeps there) never reached the perf
//! buffer, while ftrace records every one (measured: 1 of 40 timer
//! wakeups of a thread pinned to CPU 1 through perf, 40 of 40 through
//! ftrace). The kernel filters by thread id before anything is recorded,
//! so the agent's own activity does not feed back into the stream.
//!
//! Limits: stamps have the microsecond resolution of ftrace's text output;
//! the instance is removed when the reader is dropped (an agent killed
//! outright leaves an idle instance behind, which the next reader removes).

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where tracefs is looked for, in order.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The tracepoints read, each with the fields its filter tests.
const EVENTS: [(&str, &[&str]); 3] = [
    ("sched_switch", &["prev_pid", "next_pid"]),
    ("sched_waking", &["pid"]),
    ("sched_wakeup_new", &["pid"]),
];

/// The tracefs directory, mounting it if it is not (the agent is
/// privileged; the tracepoints live there).
pub fn tracefs() -> io::Result<PathBuf> {
    let has_events = |p: &str| Path::new(p).join("events/sched").is_dir();
    if let Some(p) = TRACEFS.iter().find(|p| has_events(p)) {
        return Ok(PathBuf::from(p));
    }
    let target = TRACEFS[0];
    let status = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev", target])
        .status();
    if matches!(status, Ok(s) if s.success()) && has_events(target) {
        return Ok(PathBuf::from(target));
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "no tracefs with sched events at {} and mounting it at {target} failed: run `mount -t tracefs nodev {target}` as root",
            TRACEFS.join(" or ")
        ),
    ))
}

/// Removes the instances of agents that are gone (`hsched-PID` with no
/// process PID): an agent killed outright cannot remove its own.
fn remove_stale(instances: &Path) {
    let Ok(entries) = std::fs::read_dir(instances) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hsched-"))
            .and_then(|n| n.split('-').next())
        else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

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
}

impl SchedEvent {
    pub fn time_ns(&self) -> u64 {
        match *self {
            SchedEvent::Switch { time_ns, .. } | SchedEvent::Wakeup { time_ns, .. } => time_ns,
        }
    }
}

/// One line of `trace_pipe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    Event(SchedEvent),
    /// `CPU:1 [LOST 12 EVENTS]`: the buffer overflowed.
    Lost(u64),
}

/// The value of `key=` in an event's fields (`prev_pid=42 ...`).
fn value<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = fields;
    loop {
        let at = rest.find(key)?;
        let before_ok = at == 0 || rest.as_bytes()[at - 1] == b' ';
        let after = &rest[at + key.len()..];
        if before_ok {
            if let Some(v) = after.strip_prefix('=') {
                return Some(v.split(' ').next().unwrap_or(""));
            }
        }
        rest = after;
    }
}

/// Parses one line of `trace_pipe`; `None` for anything else (other
/// events, blank lines, a line the kernel cut).
pub fn parse(line: &str) -> Option<Line> {
    if let Some(rest) = line.trim_start().strip_prefix("CPU:") {
        let n = rest.split("[LOST ").nth(1)?.split(' ').next()?;
        return n.parse().ok().map(Line::Lost);
    }
    let (marker, at) = [" sched_switch: ", " sched_waking: ", " sched_wakeup_new: "]
        .iter()
        .find_map(|m| line.find(m).map(|i| (*m, i)))?;
    let head = &line[..at];
    let fields = &line[at + marker.len()..];
    // `comm-pid [cpu] flags secs.usecs:`, the command name free text: read
    // from the right.
    let mut words = head.split_whitespace().rev();
    let stamp = words.next()?.strip_suffix(':')?;
    let (secs, usecs) = stamp.split_once('.')?;
    let time_ns = secs
        .parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(usecs.parse::<u64>().ok()?.checked_mul(1_000)?)?;
    let cpu = words.find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse::<u32>().ok())?;
    let pid = |key| value(fields, key)?.parse::<i32>().ok();
    Some(Line::Event(match marker {
        " sched_switch: " => {
            let state = value(fields, "prev_state")?;
            SchedEvent::Switch {
                time_ns,
                cpu,
                prev: pid("prev_pid")?,
                // Running (preempted), or stopped or traced (the agent's
                // hard parking stops processes): not blocked.
                prev_blocked: !state.starts_with(['R', 'T', 't']),
                next: pid("next_pid")?,
            }
        }
        _ => SchedEvent::Wakeup {
            time_ns,
            cpu,
            tid: pid("pid")?,
        },
    }))
}

/// Switch and wakeup events of chosen threads, all CPUs.
pub struct SchedEvents {
    // Fields drop in order: the pipe closes before the instance is
    // removed (a directory with an open pipe cannot be).
    pipe: File,
    instance: Instance,
    pending: Vec<u8>,
    /// Events the kernel could not keep (its buffer was full).
    pub lost: u64,
}

/// A private ftrace instance directory: its events are disabled and it is
/// removed when this is dropped.
struct Instance(PathBuf);

impl Drop for Instance {
    fn drop(&mut self) {
        for (name, _) in EVENTS {
            let _ = std::fs::write(self.0.join(format!("events/sched/{name}/enable")), "0");
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn write(path: &Path, text: &str) -> io::Result<()> {
    std::fs::write(path, text)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl SchedEvents {
    /// Starts recording the switches and wakeups of threads `tids` in a
    /// private ftrace instance. Needs root and tracefs.
    pub fn open(tids: &[i32]) -> io::Result<SchedEvents> {
        let instances = tracefs()?.join("instances");
        remove_stale(&instances);
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = instances.join(format!("hsched-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir)?;
        let instance = Instance(dir);
        let mut events = SchedEvents {
            pipe: OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(instance.0.join("trace_pipe"))?,
            instance,
            pending: Vec::new(),
            lost: 0,
        };
        write(&events.instance.0.join("trace_clock"), "mono")?;
        write(&events.instance.0.join("buffer_size_kb"), "1024")?;
        events.watch(tids)?;
        for (name, _) in EVENTS {
            write(
                &events
                    .instance
                    .0
                    .join(format!("events/sched/{name}/enable")),
                "1",
            )?;
        }
        Ok(events)
    }

    /// The ftrace instance directory it records in.
    pub fn instance(&self) -> &Path {
        &self.instance.0
    }

    /// Records threads `tids` from now on (instead of the ones before;
    /// none: nothing is recorded).
    pub fn watch(&mut self, tids: &[i32]) -> io::Result<()> {
        // No thread has id -1: with none to watch, a filter that matches
        // nothing.
        let ids: &[i32] = if tids.is_empty() { &[-1] } else { tids };
        for (name, keys) in EVENTS {
            let terms: Vec<String> = ids
                .iter()
                .flat_map(|t| keys.iter().map(move |k| format!("{k} == {t}")))
                .collect();
            write(
                &self.instance.0.join(format!("events/sched/{name}/filter")),
                &terms.join(" || "),
            )?;
        }
        Ok(())
    }

    /// Waits until an event is ready or `timeout` passes; whether one is.
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        Ok(crate::sys::poll_readable(&[self.fd()], timeout)?[0])
    }

    /// The descriptor that becomes readable when events are ready, to
    /// wait on together with others.
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.pipe.as_raw_fd()
    }

    /// Appends every event available now to `out`, in time order.
    pub fn drain(&mut self, out: &mut Vec<SchedEvent>) -> io::Result<()> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        let start = out.len();
        // Whole lines only, parsed where they lie; a partial last line
        // waits for the rest.
        let whole = self
            .pending
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        for raw in self.pending[..whole].split(|&b| b == b'\n') {
            match std::str::from_utf8(raw).ok().and_then(parse) {
                Some(Line::Event(e)) => out.push(e),
                Some(Line::Lost(n)) => self.lost += n,
                None => {}
            }
        }
        self.pending.drain(..whole);
        out[start..].sort_by_key(|e| e.time_ns());
        Ok(())
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
