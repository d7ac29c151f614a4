//! Where the events are recorded: tracefs (mounted if it is not), the
//! private ftrace instances made and removed in it, and each instance's
//! per-CPU pipes.

use super::sched_event::EVENTS;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where tracefs is looked for, in order.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

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
pub(super) fn remove_stale(instances: &Path) {
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

pub(super) fn write(path: &Path, text: &str) -> io::Result<()> {
    std::fs::write(path, text)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The whole of a tracefs file.
pub(super) fn read(path: &Path) -> io::Result<String> {
    // In one read: a file such as `header_page` ends after the first read,
    // however short, and `read_to_string` starts with a 32-byte one.
    let mut text = Vec::with_capacity(64 * 1024);
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut text))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    String::from_utf8(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// One instance and its per-CPU pipes.
pub(super) struct Stream {
    // Fields drop in order: the pipes close before the instance is removed
    // (a directory with an open pipe cannot be).
    pub(super) pipes: Vec<(u32, File)>,
    instance: Instance,
    /// The size of its pages (a read takes a whole one).
    pub(super) page: usize,
}

impl Stream {
    pub(super) fn open(dir: PathBuf) -> io::Result<Stream> {
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

    /// The instance's directory.
    pub(super) fn dir(&self) -> &Path {
        &self.instance.0
    }

    pub(super) fn set(&self, event: &str, file: &str, text: &str) -> io::Result<()> {
        write(
            &self.instance.0.join(format!("events/sched/{event}/{file}")),
            text,
        )
    }

    /// Adds threads `tids` to the instance's `set_event_pid` (appended:
    /// opened for writing without truncation, which would clear it).
    pub(super) fn add_pids(&self, tids: &[i32]) -> io::Result<()> {
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
