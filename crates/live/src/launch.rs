//! Commands started held: forked, then waiting at a gate before they
//! exec, so that no code of theirs runs before the agent manages them,
//! each released ([`release`]) when the agent has and gives it a CPU
//! (see `Agent::open_gate`).
//!
//! Why not `std::process::Command`: its `spawn` returns only once the
//! child has exec'd, so a child cannot wait for the agent before it runs
//! its program; started one after another, each command ran unmanaged
//! until the next ones were started (measured: 50 commands took 6.8 s to
//! start, the first holding most of the CPU meanwhile).
//!
//! The child is forked from the agent, whose reset-on-fork policy gives it
//! the default one (`SCHED_OTHER`, nice 0); the agent then gives it every
//! CPU the agent's process had: as it would have started without hsched.
//! It is born ignoring SIGHUP (see [`start_held`]). Between fork and exec
//! it only sets its group, duplicates descriptors and waits at the gate
//! (nothing that allocates or takes a lock).

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Where a batch of held commands wait until each is [`release`]d.
///
/// A held command waits for `RELEASE` (blocked in it from the fork on,
/// so it cannot kill it early), each its own: one hard-parked (stopped)
/// before it ran holds none of the others back, as a shared pipe's write
/// end it inherited would. The same signal comes as its parent-death
/// signal: an agent that dies before the release leaves none held.
pub struct Gate {
    held: Vec<i32>,
}

/// The signal that releases a held command.
const RELEASE: libc::c_int = libc::SIGUSR1;

impl Gate {
    pub fn new() -> Gate {
        Gate { held: Vec::new() }
    }

    /// The processes held at it, for their release ([`release`]).
    pub fn into_held(self) -> Vec<i32> {
        self.held
    }
}

/// Releases command `pid` held at its gate: it goes on to exec.
pub fn release(pid: i32) -> io::Result<()> {
    crate::sys::signal(pid, RELEASE)
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

/// A command started held at a gate: its process, in a group of its own.
#[derive(Debug)]
pub struct Held {
    pid: i32,
    reaped: bool,
}

impl Held {
    pub fn id(&self) -> i32 {
        self.pid
    }

    /// Waits for the process to end and reaps it.
    pub fn wait(&mut self) -> io::Result<()> {
        while !self.reaped {
            let mut status = 0;
            // SAFETY: `status` is a valid int.
            if unsafe { libc::waitpid(self.pid, &mut status, 0) } == self.pid {
                self.reaped = true;
            } else {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

/// The program `name` names, as `execvp` would find it: a path as given,
/// a bare name looked up in `PATH`; an error saying why not if there is
/// no such executable file.
pub fn resolve(name: &OsStr) -> io::Result<PathBuf> {
    let executable = |p: &Path| {
        let c = CString::new(p.as_os_str().as_bytes()).ok()?;
        // SAFETY: `c` is a valid C string.
        let ok = p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0;
        ok.then(|| p.to_path_buf())
    };
    if name.as_bytes().contains(&b'/') {
        let p = Path::new(name);
        if !p.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no such file (or not a regular file)",
            ));
        }
        return executable(p).ok_or_else(|| {
            io::Error::new(io::ErrorKind::PermissionDenied, "not an executable file")
        });
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .find_map(|dir| executable(&dir.join(name)))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no executable `{}` in PATH", name.to_string_lossy()),
            )
        })
}

/// Starts `argv` (its program resolved with [`resolve`]) held at `gate`,
/// in a process group of its own, stdin from /dev/null, stdout to
/// `stdout` if given, on CPUs `cpus`. The program is found before the
/// fork: a missing one is an error here, nothing started.
pub fn start_held(
    argv: &[&OsStr],
    stdout: Option<&File>,
    cpus: &[usize],
    gate: &mut Gate,
) -> io::Result<Held> {
    let program = resolve(
        argv.first()
            .ok_or_else(|| io::Error::other("an empty command"))?,
    )?;
    let cstr =
        |s: &[u8]| CString::new(s).map_err(|_| io::Error::other("a command word holds a NUL byte"));
    let program = cstr(program.as_os_str().as_bytes())?;
    let args = argv
        .iter()
        .map(|a| cstr(a.as_bytes()))
        .collect::<io::Result<Vec<CString>>>()?;
    let mut arg_ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    arg_ptrs.push(std::ptr::null());
    let null = File::open("/dev/null")?;
    let stdout: RawFd = stdout.map_or(-1, AsRawFd::as_raw_fd);
    // SAFETY: plain signal-set calls on local sets.
    let (release, mut before) = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, RELEASE);
        (set, std::mem::zeroed::<libc::sigset_t>())
    };
    // The child is born with the release blocked (the mask is inherited):
    // sent before it waits, it stays pending instead of killing it.
    // SAFETY: valid signal sets.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &release, &mut before) };
    // SIGHUP ignored, as under `nohup` (a program that sets its own
    // handler still gets it): the agent's death must not kill a command.
    // When a process exits, the kernel sends SIGHUP (which kills by
    // default) and SIGCONT to each process group the exit leaves orphaned
    // with a stopped member: a command whose process hard parking had
    // stopped was killed so when the agent died (16 of 20 runs). Ignoring
    // SIGHUP, it is continued instead, and the guardian restores it
    // milliseconds later. Ignored in the agent across the fork, so that
    // the child is born ignoring it: hard parking may stop it before it
    // has run a single instruction. Why not a session of its own, which
    // the kernel's rule spares: each session is its own autogroup, and
    // Linux shares a CPU between autogroups before it looks at nice values
    // or `SCHED_IDLE` (a family of two busy processes got half the CPU
    // beside one process, not two thirds).
    // SAFETY: plain sigaction calls on local structures.
    let hangup_before = unsafe {
        let mut ignore: libc::sigaction = std::mem::zeroed();
        ignore.sa_sigaction = libc::SIG_IGN;
        let mut before: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, &ignore, &mut before);
        before
    };
    // SAFETY: getpid has no arguments.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the child makes only async-signal-safe calls on memory
    // prepared before the fork, and ends in exec or _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, RELEASE as libc::c_ulong);
            let ok = libc::setpgid(0, 0) == 0
                && libc::dup2(null.as_raw_fd(), 0) == 0
                && (stdout < 0 || libc::dup2(stdout, 1) == 1);
            // Held until released, or until the agent is gone (if it died
            // before the line above, its parent is another already).
            if ok && libc::getppid() == parent {
                let mut sig = 0;
                while libc::sigwait(&release, &mut sig) != 0 {}
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, 0 as libc::c_ulong);
            // A release still pending (the waiting was skipped, or the
            // agent's death sent one more) is discarded, not delivered
            // once unblocked: by default it would end the command.
            libc::signal(RELEASE, libc::SIG_IGN);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::signal(RELEASE, libc::SIG_DFL);
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            if ok {
                libc::execv(program.as_ptr(), arg_ptrs.as_ptr());
            }
            libc::_exit(127);
        }
    }
    let forked = io::Error::last_os_error();
    // SAFETY: the mask and the disposition saved above.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        libc::sigaction(libc::SIGHUP, &hangup_before, std::ptr::null_mut());
    }
    if pid < 0 {
        return Err(forked);
    }
    gate.held.push(pid);
    let mut held = Held { pid, reaped: false };
    // SAFETY: setpgid has no memory arguments. (Both sides set the group:
    // whichever runs first, it is set before either goes on.)
    unsafe { libc::setpgid(pid, pid) };
    if let Err(e) = crate::sys::set_affinity(pid, cpus) {
        let _ = crate::sys::signal(pid, libc::SIGKILL);
        let _ = held.wait();
        return Err(e);
    }
    Ok(held)
}
