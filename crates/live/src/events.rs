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

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where tracefs is looked for, in order.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The tracepoints read.
const EVENTS: [&str; 5] = [
    "sched_switch",
    "sched_waking",
    "sched_wakeup_new",
    "sched_process_fork",
    "sched_process_exit",
];

/// The switches: of them, only blocks are waited for.
const SWITCH: &str = EVENTS[0];

/// The `prev_state` bits of `sched_switch` (its format's flag table) that
/// say the thread left blocked: S, D, X, Z, P and I; not stopped (T) or
/// traced (t), as the agent's hard parking stops processes, and not
/// preempted (no bit, or the one above these).
const BLOCKED: i64 = 0xf3;

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

/// One line of `trace_pipe`, the events' text form (the reader does not
/// use it; it is for reading a trace by hand).
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
    let (marker, at) = [
        " sched_switch: ",
        " sched_waking: ",
        " sched_wakeup_new: ",
        " sched_process_fork: ",
        " sched_process_exit: ",
    ]
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
        " sched_process_fork: " => SchedEvent::Fork {
            time_ns,
            parent: pid("pid")?,
            child: pid("child_pid")?,
        },
        " sched_process_exit: " => SchedEvent::Exit {
            time_ns,
            tid: pid("pid")?,
        },
        _ => SchedEvent::Wakeup {
            time_ns,
            cpu,
            tid: pid("pid")?,
        },
    }))
}

/// Where a field lies in an event's record, as its `format` file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    offset: usize,
    size: usize,
    signed: bool,
}

impl Field {
    /// The field's value in `record`; `None` if the record is too short.
    fn read(&self, record: &[u8]) -> Option<i64> {
        let b = record.get(self.offset..self.offset.checked_add(self.size)?)?;
        Some(match (self.size, self.signed) {
            (1, true) => b[0] as i8 as i64,
            (1, false) => b[0] as i64,
            (2, true) => i16::from_ne_bytes(b.try_into().ok()?) as i64,
            (2, false) => u16::from_ne_bytes(b.try_into().ok()?) as i64,
            (4, true) => i32::from_ne_bytes(b.try_into().ok()?) as i64,
            (4, false) => u32::from_ne_bytes(b.try_into().ok()?) as i64,
            (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }
}

/// The fields of a `format` file (`events/sched/NAME/format` or
/// `events/header_page`) by name, and its event id if it has one.
fn fields(format: &str) -> (Option<u16>, Vec<(&str, Field)>) {
    let id = format
        .lines()
        .find_map(|l| l.strip_prefix("ID:"))
        .and_then(|v| v.trim().parse().ok());
    let fields = format
        .lines()
        .filter_map(|l| {
            // `field:pid_t prev_pid;<TAB>offset:24;<TAB>size:4;<TAB>signed:1;`
            let (decl, rest) = l.trim().strip_prefix("field:")?.split_once(';')?;
            let name = decl.split_whitespace().last()?.split('[').next()?;
            let num = |key: &str| -> Option<usize> {
                rest.split(';')
                    .find_map(|kv| kv.trim().strip_prefix(key)?.strip_prefix(':'))?
                    .trim()
                    .parse()
                    .ok()
            };
            let field = Field {
                offset: num("offset")?,
                size: num("size")?,
                signed: num("signed") == Some(1),
            };
            Some((name, field))
        })
        .collect();
    (id, fields)
}

/// Where the fields the reader takes lie in a record of one of [`EVENTS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    Switch {
        prev_pid: Field,
        prev_state: Field,
        next_pid: Field,
    },
    Wakeup {
        pid: Field,
    },
    Fork {
        parent_pid: Field,
        child_pid: Field,
    },
    Exit {
        pid: Field,
    },
}

/// How to decode the ring buffer's pages and the events' records.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Layout {
    /// The page header: its base time stamp, the length of its data (with
    /// the lost-events flags above it), where its data starts.
    page_stamp: Field,
    page_commit: Field,
    page_data: usize,
    /// The event id every record starts with.
    common_type: Field,
    /// Each event's id and record.
    records: Vec<(i64, Record)>,
}

impl Layout {
    /// From the text of `events/header_page` and of the `format` of each
    /// of [`EVENTS`], in order.
    fn parse(header_page: &str, formats: &[&str]) -> Result<Layout, String> {
        let find = |fields: &[(&str, Field)], name: &str, what: &str| {
            fields
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, f)| f)
                .ok_or_else(|| format!("no field `{name}` in the format of {what}"))
        };
        let (_, page) = fields(header_page);
        let mut common_type = None;
        let mut records = Vec::new();
        for (&event, format) in EVENTS.iter().zip(formats) {
            let (id, fields) = fields(format);
            let id = id.ok_or_else(|| format!("no ID in the format of {event}"))?;
            let get = |name| find(&fields, name, event);
            common_type = Some(get("common_type")?);
            let record = match event {
                "sched_switch" => Record::Switch {
                    prev_pid: get("prev_pid")?,
                    prev_state: get("prev_state")?,
                    next_pid: get("next_pid")?,
                },
                "sched_process_fork" => Record::Fork {
                    parent_pid: get("parent_pid")?,
                    child_pid: get("child_pid")?,
                },
                "sched_process_exit" => Record::Exit { pid: get("pid")? },
                _ => Record::Wakeup { pid: get("pid")? },
            };
            records.push((id as i64, record));
        }
        Ok(Layout {
            page_stamp: find(&page, "timestamp", "header_page")?,
            page_commit: find(&page, "commit", "header_page")?,
            page_data: find(&page, "data", "header_page")?.offset,
            common_type: common_type.ok_or("no events")?,
            records,
        })
    }

    /// The event in `record`, stamped `time_ns` on CPU `cpu`; `None` for
    /// another event or a record too short.
    fn event(&self, record: &[u8], time_ns: u64, cpu: u32) -> Option<SchedEvent> {
        let id = self.common_type.read(record)?;
        let &(_, r) = self.records.iter().find(|&&(i, _)| i == id)?;
        let pid = |f: Field| f.read(record).map(|v| v as i32);
        Some(match r {
            Record::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => SchedEvent::Switch {
                time_ns,
                cpu,
                prev: pid(prev_pid)?,
                prev_blocked: prev_state.read(record)? & BLOCKED != 0,
                next: pid(next_pid)?,
            },
            Record::Wakeup { pid: tid } => SchedEvent::Wakeup {
                time_ns,
                cpu,
                tid: pid(tid)?,
            },
            Record::Fork {
                parent_pid,
                child_pid,
            } => SchedEvent::Fork {
                time_ns,
                parent: pid(parent_pid)?,
                child: pid(child_pid)?,
            },
            Record::Exit { pid: tid } => SchedEvent::Exit {
                time_ns,
                tid: pid(tid)?,
            },
        })
    }
}

/// Decodes one page of CPU `cpu`'s ring buffer as `trace_pipe_raw` gives
/// it, appending its events to `out`; returns how many events the kernel
/// lost before it.
///
/// The format is the kernel's (`kernel/trace/ring_buffer.c`): records of
/// a 32-bit header, 5 bits of type (or of length in words) and 27 of time
/// since the previous record, among them time extensions and absolute
/// stamps. Nothing in `page` makes it panic: it stops where the page stops
/// making sense.
fn decode_page(page: &[u8], cpu: u32, layout: &Layout, out: &mut Vec<SchedEvent>) -> u64 {
    const PADDING: u32 = 29;
    const TIME_EXTEND: u32 = 30;
    const TIME_STAMP: u32 = 31;
    const MISSED_EVENTS: i64 = 1 << 31;
    const MISSED_STORED: i64 = 1 << 30;
    let (Some(stamp), Some(commit)) = (layout.page_stamp.read(page), layout.page_commit.read(page))
    else {
        return 0;
    };
    let mut time = stamp as u64;
    let len = (commit & ((1 << 27) - 1)) as usize;
    let data = page.get(layout.page_data..).unwrap_or(&[]);
    let data = &data[..len.min(data.len())];
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(
            data.get(at..at.checked_add(4)?)?.try_into().ok()?,
        ))
    };
    let mut at = 0;
    while let Some(header) = word(at) {
        let kind = header & 0x1f;
        let delta = (header >> 5) as u64;
        let size = match kind {
            PADDING => match word(at + 4) {
                // A discarded record, whose time the kernel's own reader
                // does not count; with no time, the page's empty end.
                Some(n) if delta != 0 => 4 + n as usize,
                _ => break,
            },
            TIME_EXTEND | TIME_STAMP => {
                let Some(high) = word(at + 4) else { break };
                let t = ((high as u64) << 27) | delta;
                if kind == TIME_EXTEND {
                    time = time.wrapping_add(t);
                } else {
                    // 59 bits: the top ones are those of the time so far.
                    const TOP: u64 = 0xf << 59;
                    let mut abs = t | (time & TOP);
                    if time & TOP != 0 && abs < time {
                        abs = abs.wrapping_add(1 << 59);
                    }
                    time = abs;
                }
                8
            }
            _ => {
                time = time.wrapping_add(delta);
                // Type 0: the length in bytes is the next word, which it
                // counts.
                let (start, size) = match kind {
                    0 => match word(at + 4) {
                        Some(n) => (at + 8, (n as usize).saturating_sub(4)),
                        None => break,
                    },
                    words => (at + 4, words as usize * 4),
                };
                let Some(record) = data.get(start..start.saturating_add(size)) else {
                    break;
                };
                out.extend(layout.event(record, time, cpu));
                start - at + size
            }
        };
        at = at.saturating_add(size.max(4));
    }
    // How many were lost before this page: after its data if there was
    // room for the count, else at least one.
    if commit & MISSED_EVENTS == 0 {
        0
    } else if commit & MISSED_STORED != 0 {
        let at = layout.page_data + len;
        page.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(1, |b| u64::from_ne_bytes(b).max(1))
    } else {
        1
    }
}

/// A private ftrace instance directory: its events are disabled and it is
/// removed when this is dropped.
struct Instance(PathBuf);

impl Drop for Instance {
    fn drop(&mut self) {
        for name in EVENTS {
            let _ = std::fs::write(self.0.join(format!("events/sched/{name}/enable")), "0");
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn write(path: &Path, text: &str) -> io::Result<()> {
    std::fs::write(path, text)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The whole of a tracefs file.
fn read(path: &Path) -> io::Result<String> {
    // In one read: a file such as `header_page` ends after the first read,
    // however short, and `read_to_string` starts with a 32-byte one.
    let mut text = Vec::with_capacity(64 * 1024);
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut text))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    String::from_utf8(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// One instance and its per-CPU pipes.
struct Stream {
    // Fields drop in order: the pipes close before the instance is removed
    // (a directory with an open pipe cannot be).
    pipes: Vec<(u32, File)>,
    instance: Instance,
    /// The size of its pages (a read takes a whole one).
    page: usize,
}

impl Stream {
    fn open(dir: PathBuf) -> io::Result<Stream> {
        std::fs::create_dir(&dir)?;
        let instance = Instance(dir);
        let mut pipes = Vec::new();
        for e in std::fs::read_dir(instance.0.join("per_cpu"))? {
            let e = e?;
            let Some(cpu) = e
                .file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("cpu")?.parse().ok())
            else {
                continue;
            };
            let pipe = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(e.path().join("trace_pipe_raw"))?;
            pipes.push((cpu, pipe));
        }
        write(&instance.0.join("trace_clock"), "mono")?;
        write(&instance.0.join("buffer_size_kb"), "1024")?;
        // A CPU's pipe is readable as soon as it holds an event, not once
        // its buffer is half full (as on kernels without the setting).
        match write(&instance.0.join("buffer_percent"), "0") {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let page = read(&instance.0.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|t| t.trim().parse::<usize>().ok())
            .map_or(4096, |kb| kb * 1024);
        Ok(Stream {
            pipes,
            instance,
            page,
        })
    }

    fn set(&self, event: &str, file: &str, text: &str) -> io::Result<()> {
        write(
            &self.instance.0.join(format!("events/sched/{event}/{file}")),
            text,
        )
    }

    /// Adds threads `tids` to the instance's `set_event_pid` (appended:
    /// opened for writing without truncation, which would clear it).
    fn add_pids(&self, tids: &[i32]) -> io::Result<()> {
        use std::io::Write;
        let path = self.instance.0.join("set_event_pid");
        let mut text = String::new();
        for t in tids {
            text.push_str(&t.to_string());
            text.push(' ');
        }
        OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }
}

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
            write(&stream.instance.0.join("options/event-fork"), "1")?;
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
        &self.wake.instance.0
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a 6.x kernel publishes (`events/header_page`, and the fields of
    /// the events' `format`, the print format left out).
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";
    const COMMON: &str = "format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

";
    const SWITCHED: &str = "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;
";
    const WAKING: &str = "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;
";

    const FORK: &str = "\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;
\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;
";
    const EXIT: &str = "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:bool group_dead;\toffset:32;\tsize:1;\tsigned:0;
";

    fn layout() -> Layout {
        let formats = [
            (372, SWITCHED),
            (375, WAKING),
            (373, WAKING),
            (366, FORK),
            (369, EXIT),
        ]
        .map(|(id, fields)| format!("ID: {id}\n{COMMON}{fields}"));
        let formats: Vec<&str> = formats.iter().map(String::as_str).collect();
        Layout::parse(HEADER_PAGE, &formats).unwrap()
    }

    /// A page being written: records appended after the header.
    struct Page(Vec<u8>);

    impl Page {
        fn new(stamp: u64) -> Page {
            let mut p = stamp.to_ne_bytes().to_vec();
            p.extend([0; 8]);
            Page(p)
        }
        fn word(&mut self, w: u32) -> &mut Self {
            self.0.extend(w.to_ne_bytes());
            self
        }
        fn header(&mut self, kind: u32, delta: u32) -> &mut Self {
            self.word(kind | (delta << 5))
        }
        /// A record of `size` bytes, `fields` (offset, value, size) set.
        fn record(&mut self, id: u16, size: usize, fields: &[(usize, i64, usize)]) -> &mut Self {
            let mut r = vec![0u8; size];
            r[..2].copy_from_slice(&id.to_ne_bytes());
            for &(at, v, n) in fields {
                r[at..at + n].copy_from_slice(&v.to_ne_bytes()[..n]);
            }
            self.0.extend(r);
            self
        }
        /// Sets the length of the data, with `flags`; the rest of a 4 KiB
        /// page zero.
        fn finish(&mut self, flags: i64) -> Vec<u8> {
            let len = self.0.len() as i64 - 16;
            self.0[8..16].copy_from_slice(&(len | flags).to_ne_bytes());
            let mut p = self.0.clone();
            p.resize(4096, 0);
            p
        }
    }

    fn switch(p: &mut Page, delta: u32, prev: i32, state: i64, next: i32) {
        p.header(16, delta).record(
            372,
            64,
            &[(24, prev as i64, 4), (32, state, 8), (56, next as i64, 4)],
        );
    }

    #[test]
    fn a_ring_buffer_page_decodes() {
        let l = layout();
        let t0 = 5_000_000_000u64;
        let mut p = Page::new(t0);
        // A time extension of 2^27 + 5 ns, then a block 10 ns later.
        p.header(30, 5).word(1);
        let t1 = t0 + (1 << 27) + 5 + 10;
        switch(&mut p, 10, 42, 0x01, 0);
        // A discarded record (its length counts all but the header):
        // skipped, its time not counted.
        p.header(29, 7).word(12).word(0).word(0);
        // A wakeup whose length is in the word after the header.
        p.header(0, 3).word(36 + 4).record(375, 36, &[(24, 43, 4)]);
        let t2 = t1 + 3;
        // An absolute time stamp, then a new thread's wakeup at it.
        let t3 = t2 + 1_000_000_007;
        p.header(31, (t3 & ((1 << 27) - 1)) as u32)
            .word((t3 >> 27) as u32);
        p.header(9, 0).record(373, 36, &[(24, 44, 4)]);
        // Preempted (the bit above the states) and stopped: not blocks.
        switch(&mut p, 100, 43, 0x100, 42);
        switch(&mut p, 0, 42, 0x04, 0);
        // A fork (its names after the record's fixed part) and an exit.
        p.header(9, 2).record(366, 36, &[(12, 44, 4), (20, 45, 4)]);
        p.header(9, 3).record(369, 36, &[(24, 42, 4)]);
        // Another event, then the empty end of the page.
        p.header(9, 1).record(999, 36, &[]);
        p.header(29, 0);
        switch(&mut p, 1, 1, 1, 1);
        let page = p.finish(0);
        let mut out = Vec::new();
        assert_eq!(decode_page(&page, 3, &l, &mut out), 0);
        let block = |time_ns, prev, prev_blocked, next| SchedEvent::Switch {
            time_ns,
            cpu: 3,
            prev,
            prev_blocked,
            next,
        };
        let wakeup = |time_ns, tid| SchedEvent::Wakeup {
            time_ns,
            cpu: 3,
            tid,
        };
        assert_eq!(
            out,
            [
                block(t1, 42, true, 0),
                wakeup(t2, 43),
                wakeup(t3, 44),
                block(t3 + 100, 43, false, 42),
                block(t3 + 100, 42, false, 0),
                SchedEvent::Fork {
                    time_ns: t3 + 102,
                    parent: 44,
                    child: 45,
                },
                SchedEvent::Exit {
                    time_ns: t3 + 105,
                    tid: 42,
                },
            ]
        );
    }

    #[test]
    fn lost_events_are_counted() {
        let l = layout();
        let mut p = Page::new(1);
        switch(&mut p, 1, 5, 1, 0);
        let mut counted = p.finish(0);
        // The count after the data, with both flags.
        let at = 16 + 4 + 64;
        counted[at..at + 8].copy_from_slice(&12u64.to_ne_bytes());
        let len = (4 + 64) as i64 | 1 << 31 | 1 << 30;
        counted[8..16].copy_from_slice(&len.to_ne_bytes());
        let mut out = Vec::new();
        assert_eq!(decode_page(&counted, 0, &l, &mut out), 12);
        assert_eq!(out.len(), 1);
        // No room for the count: at least one.
        let uncounted = p.finish(1 << 31);
        assert_eq!(decode_page(&uncounted, 0, &l, &mut out), 1);
    }

    #[test]
    fn this_kernel_s_formats_parse() {
        let Ok(tracefs) = tracefs() else {
            return;
        };
        let read = |p: &str| read(&tracefs.join(p)).unwrap();
        let formats: Vec<String> = EVENTS
            .iter()
            .map(|e| read(&format!("events/sched/{e}/format")))
            .collect();
        let formats: Vec<&str> = formats.iter().map(String::as_str).collect();
        let l = Layout::parse(&read("events/header_page"), &formats).unwrap();
        assert_eq!(l.records.len(), EVENTS.len());
    }

    proptest! {
        #[test]
        fn arbitrary_pages_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut out = Vec::new();
            let _ = decode_page(&bytes, 0, &layout(), &mut out);
        }
    }
}
