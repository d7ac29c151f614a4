//! The Linux calls the live platform makes on threads it does not own:
//! scheduling policy and priority (`sched_getattr`/`sched_setattr`), CPU
//! affinity, stop and continue, and what `/proc` says about a thread.
//!
//! Thin and safe: every call takes a thread or process id and returns an
//! `io::Error` (ESRCH when the thread is gone, EPERM without privileges);
//! nothing here panics on what the kernel answers.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `SCHED_OTHER` (`SCHED_NORMAL`), the default time-sharing class.
pub const SCHED_OTHER: u32 = 0;
/// `SCHED_FIFO`: real-time, run until it blocks or something higher runs.
pub const SCHED_FIFO: u32 = 1;
/// `SCHED_RR`: real-time round robin.
pub const SCHED_RR: u32 = 2;
/// `SCHED_BATCH`.
pub const SCHED_BATCH: u32 = 3;
/// `SCHED_IDLE`: runs only when nothing else wants the CPU.
pub const SCHED_IDLE: u32 = 5;
/// `SCHED_DEADLINE`.
pub const SCHED_DEADLINE: u32 = 6;
/// `SCHED_FLAG_RESET_ON_FORK`: children start at the default policy.
pub const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;

/// A thread's scheduling attributes as the kernel keeps them (`struct
/// sched_attr`, the first version: 48 bytes, plus the utilisation clamps
/// some kernels add; the size field says which the kernel filled in).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    pub size: u32,
    pub policy: u32,
    pub flags: u64,
    /// Nice value, for `SCHED_OTHER` and `SCHED_BATCH`.
    pub nice: i32,
    /// Static priority, for `SCHED_FIFO` and `SCHED_RR` (1..99).
    pub priority: u32,
    /// `SCHED_DEADLINE` parameters, ns.
    pub runtime: u64,
    pub deadline: u64,
    pub period: u64,
    pub util_min: u32,
    pub util_max: u32,
}

impl SchedAttr {
    /// A real-time FIFO priority.
    pub fn fifo(priority: u32) -> Self {
        SchedAttr {
            policy: SCHED_FIFO,
            priority,
            ..Self::default()
        }
    }

    /// A time-sharing policy (`SCHED_OTHER`, `SCHED_BATCH` or `SCHED_IDLE`)
    /// at a nice value.
    pub fn fair(policy: u32, nice: i32) -> Self {
        SchedAttr {
            policy,
            nice,
            ..Self::default()
        }
    }

    /// Whether the kernel treats it as real time (it can starve others).
    pub fn is_realtime(&self) -> bool {
        matches!(self.policy, SCHED_FIFO | SCHED_RR | SCHED_DEADLINE)
    }
}

fn check(ret: libc::c_long) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The scheduling attributes of thread `tid` (0: the calling thread).
pub fn get_attr(tid: i32) -> io::Result<SchedAttr> {
    let mut attr = SchedAttr::default();
    let size = size_of::<SchedAttr>() as libc::c_uint;
    // SAFETY: `attr` is a valid, writable `sched_attr` of `size` bytes.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            size,
            0,
        )
    };
    check(ret)?;
    Ok(attr)
}

/// Sets thread `tid`'s policy, priority and nice value (0: the calling
/// thread). `SCHED_FLAG_RESET_ON_FORK` and the deadline fields go as given.
pub fn set_attr(tid: i32, attr: &SchedAttr) -> io::Result<()> {
    let mut attr = *attr;
    attr.size = size_of::<SchedAttr>() as u32;
    // The clamps are honoured only with their flags; zero them otherwise so
    // a kernel without clamp support does not refuse the call.
    const SCHED_FLAG_UTIL_CLAMP: u64 = 0x20 | 0x40;
    if attr.flags & SCHED_FLAG_UTIL_CLAMP == 0 {
        attr.util_min = 0;
        attr.util_max = 0;
    }
    // SAFETY: `attr` is a valid `sched_attr` whose size field is its size.
    let ret = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const SchedAttr, 0) };
    check(ret)
}

/// The CPUs thread `tid` may run on.
pub fn get_affinity(tid: i32) -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let ret = unsafe { libc::sched_getaffinity(tid, size_of::<libc::cpu_set_t>(), &mut set) };
    check(ret.into())?;
    let max = 8 * size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads within the set for cpu < its bit size.
    Ok((0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Lets thread `tid` run on `cpus` only.
pub fn set_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * size_of::<libc::cpu_set_t>();
    for &c in cpus {
        if c >= max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond the {max} a cpu_set_t holds"),
            ));
        }
        // SAFETY: c < the set's bit size.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let ret = unsafe { libc::sched_setaffinity(tid, size_of::<libc::cpu_set_t>(), &set) };
    check(ret.into())
}

/// Sends `signal` to process `pid` (all its threads: SIGSTOP and SIGCONT
/// act on the whole process).
pub fn signal(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill has no memory arguments.
    check(unsafe { libc::kill(pid, signal) }.into())
}

/// Kills process group `pgid` (a command and everything it started that
/// stayed in its group) with SIGKILL.
pub fn kill_group(pgid: i32) -> io::Result<()> {
    signal(-pgid, libc::SIGKILL)
}

/// The one-letter state `/proc` gives for thread `tid` of process `pid`
/// (`R` running, `S` sleeping, `T` stopped, ...).
pub fn thread_state(pid: i32, tid: i32) -> io::Result<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat"))?;
    // The command name is in parentheses and may hold anything: the state
    // is the first field after the last ')'.
    let after = stat
        .rfind(')')
        .map(|i| &stat[i + 1..])
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no ')' in stat"))?;
    after
        .split_whitespace()
        .next()
        .and_then(|s| s.chars().next())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no state in stat"))
}

/// The thread ids of process `pid`, ascending.
pub fn threads_of(pid: i32) -> io::Result<Vec<i32>> {
    let mut out: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// What thread `tid` has started that lives now: the other threads of its
/// process (when it leads one) and the processes it forked.
pub fn offspring_of(tid: i32) -> Vec<i32> {
    let pid = tgid_of(tid).unwrap_or(tid);
    let mut out: Vec<i32> = if pid == tid {
        threads_of(pid).unwrap_or_default()
    } else {
        Vec::new()
    };
    if let Ok(children) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children")) {
        out.extend(
            children
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok()),
        );
    }
    out.retain(|&t| t != tid);
    out
}

/// CPU time (user + system) of process `pid` so far.
pub fn process_cpu_time(pid: i32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no memory arguments.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()?
        .max(1);
    Some(std::time::Duration::from_nanos(ticks * 1_000_000_000 / hz))
}

/// The process (thread group) that thread `tid` belongs to.
pub fn tgid_of(tid: i32) -> io::Result<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Tgid in status"))
}

/// Locks the process's memory (current and future) so that page faults do
/// not delay it; the agent and the guardian both do this.
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: mlockall has no memory arguments.
    check(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) }.into())
}

/// Linux's autogroup switch (absent from kernels built without
/// `CONFIG_SCHED_AUTOGROUP`).
const AUTOGROUP: &str = "/proc/sys/kernel/sched_autogroup_enabled";

/// Whether autogroup is on: `None` on a kernel without it.
///
/// With autogroup on, the fair class first shares a CPU between sessions
/// (each terminal, each daemon) and only then, inside a session, by nice:
/// a managed thread at nice -20 gets half a CPU against one busy loop
/// started from another terminal, and nice means nothing across sessions.
pub fn autogroup() -> io::Result<Option<bool>> {
    match std::fs::read_to_string(AUTOGROUP) {
        Ok(text) => Ok(Some(text.trim() != "0")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Turns autogroup on or off (root).
pub fn set_autogroup(on: bool) -> io::Result<()> {
    std::fs::write(AUTOGROUP, if on { "1" } else { "0" })
}

/// Moves thread `tid` through a temporary cgroup of the version-1 `cpu`
/// controller and back to the root one, so that Linux places it afresh:
/// in its session's autogroup if autogroup is on now, in the root task
/// group if it is off. (Turning autogroup off moves nobody: a thread stays
/// in the task group it was given when it started, until it is moved.)
/// `Ok(false)` where there is nothing to do that way: no version-1 `cpu`
/// controller (on a unified hierarchy the thread is in a cgroup of its
/// own, where autogroup never applies) or the thread is not in its root.
pub fn regroup(tid: i32) -> io::Result<bool> {
    let Some(root) = cpu_controller_v1()? else {
        return Ok(false);
    };
    let cgroups = std::fs::read_to_string(format!("/proc/{tid}/cgroup"))?;
    let in_root = cgroups.lines().any(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        controllers.split(',').any(|c| c == "cpu") && path == "/"
    });
    if !in_root {
        return Ok(false);
    }
    let through = root.join(format!("hsched-regroup-{}", std::process::id()));
    match std::fs::create_dir(&through) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let moved = std::fs::write(through.join("tasks"), tid.to_string())
        .and_then(|()| std::fs::write(root.join("tasks"), tid.to_string()));
    let removed = std::fs::remove_dir(&through);
    moved.and(removed).map(|()| true)
}

/// Where the version-1 `cpu` controller is mounted, if it is.
fn cpu_controller_v1() -> io::Result<Option<std::path::PathBuf>> {
    let mounts = std::fs::read_to_string("/proc/self/mounts")?;
    Ok(mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 4 && f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpu"))
            .then(|| std::path::PathBuf::from(f[1]))
    }))
}

/// Whether the calling thread may take a real-time policy (root, or
/// CAP_SYS_NICE with an RT limit): it tries `SCHED_FIFO` 1 and puts its
/// policy back. The error says why not.
pub fn realtime_allowed() -> io::Result<()> {
    let before = get_attr(0)?;
    set_attr(0, &SchedAttr::fifo(1))?;
    set_attr(0, &before)
}

/// A CLOCK_MONOTONIC timer file descriptor armed at absolute instants:
/// readable (for `poll`) once the instant has passed.
pub struct Timer {
    fd: OwnedFd,
    /// The instant it is armed at, unless it fired since: arming it there
    /// again would change nothing (and costs a system call).
    armed: std::cell::Cell<Option<u64>>,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: timerfd_create has no memory arguments.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor this Timer now owns.
        Ok(Timer {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed: Default::default(),
        })
    }

    /// Fires at CLOCK_MONOTONIC `ns` (at once if that has passed).
    pub fn arm_at(&self, ns: u64) -> io::Result<()> {
        // Zero would disarm it: the earliest instant is 1ns.
        let ns = ns.max(1);
        if self.armed.get() == Some(ns) {
            return Ok(());
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked.
        let ret = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        check(ret.into())?;
        self.armed.set(Some(ns));
        Ok(())
    }

    /// Notes that it fired: the next `arm_at` re-arms it, which takes the
    /// expiry (until then the descriptor stays readable). Cheaper than
    /// reading the expiry count, a system call at every expiry.
    pub fn clear(&self) {
        self.armed.set(None);
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Sets the calling thread's timer slack (the kernel may delay its timers
/// by this much to batch wakeups; the default is 50us).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) }.into())
}

/// Waits until one of `fds` is readable or `timeout` passes; which are.
pub fn poll_readable(fds: &[RawFd], timeout: std::time::Duration) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `pfds` is a valid array of its length.
    let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(pfds.iter().map(|p| p.revents & libc::POLLIN != 0).collect())
}

/// An anonymous in-memory file (`memfd_create`): where a child writes
/// what the agent reads after the child is gone.
pub fn memfd(name: &std::ffi::CStr) -> io::Result<std::fs::File> {
    // SAFETY: `name` is a valid C string; no other arguments.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// A descriptor that becomes readable when process `pid` ends
/// (`pidfd_open`, Linux 5.3): how the agent notices its guardian's death
/// at once, in the same `poll` as everything else.
pub fn pidfd(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open has no memory arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}
