//! The guardian: a separate process that undoes what the agent did to
//! threads it manages, if the agent cannot.
//!
//! The live agent changes real threads: it raises them to real-time
//! priorities, pins them, and stops whole processes (hard parking). If the
//! agent dies (any signal, SIGKILL included) or hangs, those threads must
//! not stay stopped or at real-time priority. So before it touches a
//! thread, the agent tells the guardian the thread's original state over a
//! pipe; the guardian keeps the list and, when the pipe reaches end of file
//! (the kernel closes it when the agent dies, however it dies) or the
//! agent's heartbeat stops, restores every thread still on the list and
//! continues every process still stopped, then exits.
//!
//! The guardian runs in its own process group (a Ctrl-C at the terminal
//! reaches the agent, not it), at the highest `SCHED_FIFO` priority with
//! its memory locked, so it gets a CPU even when managed real-time threads
//! hold every other: it acts within milliseconds of the agent's death.
//!
//! The protocol is one command per line:
//!
//! | line | meaning |
//! |---|---|
//! | `manage TID TGID POLICY PRIORITY NICE FLAGS CPUS` | the agent is about to change thread `TID` of process `TGID`; this is its original state (`CPUS`: its affinity, `0,1`) |
//! | `stopped TGID` | the agent stopped process `TGID` (SIGSTOP) |
//! | `resumed TGID` | the agent continued it |
//! | `release TID` | the agent gave thread `TID` back itself |
//! | `autogroup ON` | the agent changed Linux's autogroup switch; `ON` (0 or 1) is how it was |
//! | `beat` | the agent is alive (only watched with a heartbeat timeout) |
//!
//! A line that does not parse is reported on stderr and ignored: the
//! guardian never stops guarding because of its input.

use crate::sys::{self, SchedAttr};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// A thread's state before the agent changed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Original {
    pub tid: i32,
    pub tgid: i32,
    pub policy: u32,
    pub priority: u32,
    pub nice: i32,
    pub flags: u64,
    pub cpus: Vec<usize>,
}

impl Original {
    /// Reads thread `tid`'s current state from the kernel.
    pub fn capture(tid: i32) -> io::Result<Original> {
        let attr = sys::get_attr(tid)?;
        Ok(Original {
            tid,
            tgid: sys::tgid_of(tid)?,
            policy: attr.policy,
            priority: attr.priority,
            nice: attr.nice,
            flags: attr.flags,
            cpus: sys::get_affinity(tid)?,
        })
    }

    /// The attributes to set back.
    pub fn attr(&self) -> SchedAttr {
        SchedAttr {
            policy: self.policy,
            priority: self.priority,
            nice: self.nice,
            flags: self.flags,
            ..SchedAttr::default()
        }
    }
}

/// One line of the protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    Manage(Original),
    Stopped(i32),
    Resumed(i32),
    Release(i32),
    /// Autogroup as it was before the agent changed it.
    Autogroup(bool),
    Beat,
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Manage(o) => {
                let cpus: Vec<String> = o.cpus.iter().map(|c| c.to_string()).collect();
                write!(
                    f,
                    "manage {} {} {} {} {} {} {}",
                    o.tid,
                    o.tgid,
                    o.policy,
                    o.priority,
                    o.nice,
                    o.flags,
                    if cpus.is_empty() {
                        "-".to_string()
                    } else {
                        cpus.join(",")
                    }
                )
            }
            Line::Stopped(p) => write!(f, "stopped {p}"),
            Line::Resumed(p) => write!(f, "resumed {p}"),
            Line::Release(t) => write!(f, "release {t}"),
            Line::Autogroup(on) => write!(f, "autogroup {}", u8::from(*on)),
            Line::Beat => write!(f, "beat"),
        }
    }
}

fn field<T: std::str::FromStr>(words: &[&str], i: usize, what: &str) -> Result<T, String> {
    let w = words
        .get(i)
        .ok_or_else(|| format!("missing {what} (field {})", i + 1))?;
    w.parse()
        .map_err(|_| format!("{what} `{w}` is not a valid number"))
}

/// Parses one line of the protocol.
pub fn parse(line: &str) -> Result<Line, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let id = |what| -> Result<i32, String> {
        let v: i32 = field(&words, 1, what)?;
        if v <= 0 {
            return Err(format!("{what} {v} must be positive"));
        }
        Ok(v)
    };
    let want = |n: usize| -> Result<(), String> {
        if words.len() == n {
            Ok(())
        } else {
            Err(format!(
                "`{}` takes {} fields, got {}",
                words[0],
                n - 1,
                words.len() - 1
            ))
        }
    };
    match words.first().copied() {
        None => Err("empty line".into()),
        Some("manage") => {
            want(8)?;
            let cpus = match words[7] {
                "-" => Vec::new(),
                list => list
                    .split(',')
                    .map(|c| {
                        c.parse::<usize>()
                            .ok()
                            .filter(|&c| c < 8 * size_of::<libc::cpu_set_t>())
                            .ok_or_else(|| format!("CPU `{c}` is not a CPU number"))
                    })
                    .collect::<Result<_, _>>()?,
            };
            let tid = id("thread id")?;
            let tgid: i32 = field(&words, 2, "process id")?;
            if tgid <= 0 {
                return Err(format!("process id {tgid} must be positive"));
            }
            Ok(Line::Manage(Original {
                tid,
                tgid,
                policy: field(&words, 3, "policy")?,
                priority: field(&words, 4, "priority")?,
                nice: field(&words, 5, "nice value")?,
                flags: field(&words, 6, "flags")?,
                cpus,
            }))
        }
        Some("stopped") => want(2).and_then(|_| id("process id").map(Line::Stopped)),
        Some("resumed") => want(2).and_then(|_| id("process id").map(Line::Resumed)),
        Some("release") => want(2).and_then(|_| id("thread id").map(Line::Release)),
        Some("autogroup") => want(2).and_then(|_| match words[1] {
            "0" => Ok(Line::Autogroup(false)),
            "1" => Ok(Line::Autogroup(true)),
            w => Err(format!("autogroup `{w}`: expected 0 or 1")),
        }),
        Some("beat") => want(1).map(|_| Line::Beat),
        Some(other) => Err(format!(
            "unknown command `{other}`: expected manage, stopped, resumed, release, autogroup or beat"
        )),
    }
}

/// What the guardian holds: the original state of every managed thread and
/// the processes the agent has stopped.
#[derive(Debug, Default)]
pub struct Ledger {
    pub managed: BTreeMap<i32, Original>,
    pub stopped: BTreeSet<i32>,
    /// Autogroup as it was, if the agent changed it.
    pub autogroup: Option<bool>,
}

/// What a restoration did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Threads set back to their original policy and affinity.
    pub threads: usize,
    /// Threads that had exited meanwhile.
    pub gone: usize,
    /// Processes continued.
    pub continued: usize,
    /// What could not be undone, with the reason.
    pub failures: Vec<String>,
}

impl Ledger {
    pub fn apply(&mut self, line: Line) {
        match line {
            // The first report is the original; a thread managed again
            // after a release starts afresh.
            Line::Manage(o) => {
                self.managed.entry(o.tid).or_insert(o);
            }
            Line::Stopped(p) => {
                self.stopped.insert(p);
            }
            Line::Resumed(p) => {
                self.stopped.remove(&p);
            }
            Line::Release(t) => {
                self.managed.remove(&t);
            }
            Line::Autogroup(on) => {
                self.autogroup.get_or_insert(on);
            }
            Line::Beat => {}
        }
    }

    /// Sets every managed thread back (policy first, so a stopped process
    /// never continues at a real-time priority), then continues every
    /// stopped process, and empties the ledger.
    pub fn restore_all(&mut self) -> Restored {
        let mut out = Restored::default();
        for o in std::mem::take(&mut self.managed).into_values() {
            let set = sys::set_attr(o.tid, &o.attr()).and_then(|()| {
                if o.cpus.is_empty() {
                    Ok(())
                } else {
                    sys::set_affinity(o.tid, &o.cpus)
                }
            });
            match set {
                Ok(()) => out.threads += 1,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => out.gone += 1,
                Err(e) => out.failures.push(format!("thread {}: {e}", o.tid)),
            }
        }
        for p in std::mem::take(&mut self.stopped) {
            match sys::signal(p, libc::SIGCONT) {
                Ok(()) => out.continued += 1,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => out.failures.push(format!("process {p}: {e}")),
            }
        }
        if let Some(on) = self.autogroup.take() {
            if let Err(e) = sys::set_autogroup(on) {
                out.failures.push(format!("autogroup: {e}"));
            }
        }
        out
    }
}

/// How the guardian watches the agent.
#[derive(Clone, Debug, Default)]
pub struct Watch {
    /// The agent's process id: killed (SIGKILL) if its heartbeat stops, so
    /// that it cannot undo the restoration.
    pub agent: Option<i32>,
    /// Restore when no line has come for this long once the agent has
    /// sent its first beat (`None`: only at end of file).
    pub heartbeat: Option<Duration>,
}

/// Why the guardian restored.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// The pipe closed: the agent exited or died.
    AgentGone,
    /// No line within the heartbeat timeout: the agent hangs or starves.
    HeartbeatLost,
}

/// Reads commands from `fd` until the agent is gone (end of file, or no
/// line within the heartbeat), then restores everything. `on_bad_line`
/// hears each line that did not parse.
pub fn guard(
    fd: RawFd,
    watch: &Watch,
    mut on_bad_line: impl FnMut(&str, &str),
) -> (Ending, Restored) {
    let mut ledger = Ledger::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    let mut last = Instant::now();
    // The heartbeat is watched from the agent's first beat: its start (a
    // tracing instance, its memory locked, the threads listed with the
    // kernel) can take seconds on a busy machine, and a kill then (it
    // was, measured beside two CPU hogs and a build) ends a run that
    // never hung. Its death is seen at once either way (the pipe closes).
    let mut beating = false;
    let ending = loop {
        let timeout_ms = match watch.heartbeat {
            Some(_) if !beating => -1,
            None => -1,
            Some(h) => {
                let left = h.saturating_sub(last.elapsed());
                if left.is_zero() {
                    break Ending::HeartbeatLost;
                }
                left.as_millis().clamp(1, i32::MAX as u128) as i32
            }
        };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if ready < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break Ending::AgentGone;
        }
        if ready == 0 {
            continue; // the heartbeat check above decides
        }
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break Ending::AgentGone;
        }
        if n == 0 {
            break Ending::AgentGone;
        }
        last = Instant::now();
        pending.extend_from_slice(&buf[..n as usize]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&raw[..raw.len() - 1]);
            match parse(&text) {
                Ok(line) => {
                    beating |= line == Line::Beat;
                    ledger.apply(line);
                }
                Err(e) => on_bad_line(&text, &e),
            }
        }
    };
    if ending == Ending::HeartbeatLost {
        if let Some(agent) = watch.agent {
            let _ = sys::signal(agent, libc::SIGKILL);
        }
    }
    (ending, ledger.restore_all())
}

/// The guardian process's `main`: raise itself, guard standard input, say
/// on stderr what it had to undo. Arguments: `--agent PID`,
/// `--heartbeat-ms N`.
pub fn main_with_args(args: &[String]) -> i32 {
    let mut watch = Watch::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().and_then(|v| v.parse::<u64>().ok());
        match (a.as_str(), value) {
            ("--agent", Some(p)) if p > 0 && p <= i32::MAX as u64 => watch.agent = Some(p as i32),
            ("--heartbeat-ms", Some(ms)) if ms > 0 => {
                watch.heartbeat = Some(Duration::from_millis(ms))
            }
            _ => {
                eprintln!(
                    "hsched guardian: bad argument `{a}`: expected --agent PID and --heartbeat-ms N (N > 0)"
                );
                return 2;
            }
        }
    }
    // Best effort: without privileges it still restores what it can.
    let _ = sys::lock_memory();
    if let Err(e) = sys::set_attr(0, &SchedAttr::fifo(99)) {
        eprintln!("hsched guardian: cannot take SCHED_FIFO 99 ({e}); guarding at normal priority");
    }
    let (ending, restored) = guard(io::stdin().as_raw_fd(), &watch, |line, e| {
        eprintln!("hsched guardian: ignored `{line}`: {e}");
    });
    let undone = restored.threads + restored.continued;
    if undone > 0 || !restored.failures.is_empty() {
        eprintln!(
            "hsched guardian: {}: restored {} thread(s), continued {} process(es){}",
            match ending {
                Ending::AgentGone => "the agent ended without giving its threads back",
                Ending::HeartbeatLost => "the agent stopped answering (killed it)",
            },
            restored.threads,
            restored.continued,
            if restored.failures.is_empty() {
                String::new()
            } else {
                format!("; could not undo: {}", restored.failures.join("; "))
            }
        );
    }
    i32::from(!restored.failures.is_empty())
}

/// The agent's end of the guardian: a child process fed through a pipe.
pub struct Guardian {
    child: Child,
    to: ChildStdin,
}

impl Guardian {
    /// Starts the guardian program `exe` (the `hsched-guardian` binary, or
    /// anything that calls [`main_with_args`]) in its own process group.
    /// The agent passes its own process id in `watch.agent`.
    pub fn spawn(exe: &Path, watch: &Watch) -> io::Result<Guardian> {
        Self::spawn_with(exe, &[], watch)
    }

    /// Like [`Guardian::spawn`], with `lead` arguments before the
    /// guardian's own (e.g. the subcommand of a program that is also
    /// something else).
    pub fn spawn_with(
        exe: &Path,
        lead: &[&std::ffi::OsStr],
        watch: &Watch,
    ) -> io::Result<Guardian> {
        let mut cmd = Command::new(exe);
        cmd.args(lead);
        if let Some(agent) = watch.agent {
            cmd.arg("--agent").arg(agent.to_string());
        }
        if let Some(h) = watch.heartbeat {
            cmd.arg("--heartbeat-ms")
                .arg(h.as_millis().max(1).to_string());
        }
        let mut child = cmd.stdin(Stdio::piped()).process_group(0).spawn()?;
        let to = child.stdin.take().expect("stdin was piped");
        Ok(Guardian { child, to })
    }

    /// Tells the guardian one thing. Call it *before* the change it
    /// announces: a thread the guardian does not know about is not undone.
    pub fn send(&mut self, line: &Line) -> io::Result<()> {
        writeln!(self.to, "{line}")
    }

    /// A second handle on the pipe, for a part of the agent that announces
    /// changes itself. Drop it before [`Guardian::finish`]: the guardian
    /// waits for every handle to close.
    pub fn writer(&self) -> io::Result<std::fs::File> {
        use std::os::fd::AsFd;
        Ok(std::fs::File::from(self.to.as_fd().try_clone_to_owned()?))
    }

    pub fn process_id(&self) -> u32 {
        self.child.id()
    }

    /// How the guardian ended, in words (`running` if it has not).
    pub fn try_status(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => status.to_string(),
            Ok(None) => "running".into(),
            Err(e) => e.to_string(),
        }
    }

    /// Hands over the pipe (e.g. to a process that will hold it open in the
    /// agent's place) and the child, for tests and supervisors.
    pub fn into_parts(self) -> (Child, ChildStdin) {
        (self.child, self.to)
    }

    /// A clean end: closes the pipe, so the guardian restores whatever is
    /// still listed, and waits for it.
    pub fn finish(self) -> io::Result<std::process::ExitStatus> {
        let Guardian { mut child, to } = self;
        drop(to);
        child.wait()
    }
}
