//! Ctrl-C and SIGTERM as an orderly stop of a live run.
//!
//! Killed by the default action of SIGINT or SIGTERM, the agent would leave
//! no summary, its commands running and its control socket behind (the
//! guardian would still restore the threads). With [`StopSignals`]
//! installed, the first SIGINT or SIGTERM only asks the agent to stop: it
//! wakes from its `poll` (a byte on a self-pipe), ends the run at that
//! moment, gives every thread back and ends its commands, and the caller
//! writes the outputs for the time that ran. A second one ends the process
//! at once (exit status 128 + the signal), for a stop that hangs: the
//! guardian, which sees the agent's end, restores every managed thread.
//!
//! A caller whose process handles the signals itself (the Python package:
//! the interpreter owns SIGINT and turns it into `KeyboardInterrupt`)
//! asks for the same stop from code instead, with [`StopRequest`].

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::SigId;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The signals that stop a live run.
const STOPPING: [i32; 2] = [SIGINT, SIGTERM];

/// SIGINT and SIGTERM handled as stop requests while this lives.
pub struct StopSignals {
    wake: UnixStream,
    received: Arc<AtomicUsize>,
    ids: Vec<SigId>,
}

/// What the agent watches: readable once a stop was asked for, and which
/// signal asked.
#[derive(Clone)]
pub struct StopHandle {
    wake: Arc<OwnedFd>,
    received: Arc<AtomicUsize>,
}

impl StopSignals {
    /// Installs the handlers (replacing the default action of both signals
    /// until dropped).
    pub fn install() -> io::Result<StopSignals> {
        let (wake, ring) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        let received = Arc::new(AtomicUsize::new(0));
        let asked = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for sig in STOPPING {
            // The order matters: the shutdown checks the flag before the
            // second action sets it, so only a second signal ends at once.
            ids.push(signal_hook::flag::register_conditional_shutdown(
                sig,
                128 + sig,
                Arc::clone(&asked),
            )?);
            ids.push(signal_hook::flag::register(sig, Arc::clone(&asked))?);
            ids.push(signal_hook::flag::register_usize(
                sig,
                Arc::clone(&received),
                sig as usize,
            )?);
            ids.push(signal_hook::low_level::pipe::register(
                sig,
                ring.try_clone()?,
            )?);
        }
        Ok(StopSignals {
            wake,
            received,
            ids,
        })
    }

    /// A handle for the agent ([`crate::run::LiveOptions::stop`]).
    pub fn handle(&self) -> io::Result<StopHandle> {
        Ok(StopHandle {
            wake: Arc::new(self.wake.try_clone()?.into()),
            received: Arc::clone(&self.received),
        })
    }

    /// The signal that asked for a stop, if one did.
    pub fn received(&self) -> Option<i32> {
        received(&self.received)
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// A stop asked for from code rather than by a signal: [`StopRequest::ask`]
/// does what the first SIGINT or SIGTERM does under [`StopSignals`], and
/// installs no handler.
pub struct StopRequest {
    ring: UnixStream,
    handle: StopHandle,
}

impl StopRequest {
    pub fn new() -> io::Result<StopRequest> {
        let (wake, ring) = UnixStream::pair()?;
        ring.set_nonblocking(true)?;
        Ok(StopRequest {
            ring,
            handle: StopHandle {
                wake: Arc::new(wake.into()),
                received: Arc::new(AtomicUsize::new(0)),
            },
        })
    }

    /// A handle for the agent ([`crate::run::LiveOptions::stop`]).
    pub fn handle(&self) -> StopHandle {
        self.handle.clone()
    }

    /// Asks for a stop, in the name of signal `sig` (the run's log and
    /// [`crate::agent::Interrupted::Signal`] name it); the first ask counts.
    pub fn ask(&self, sig: i32) {
        let _ = self.handle.received.compare_exchange(
            0,
            sig as usize,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        // One byte makes the handle readable; a full buffer already is.
        let _ = (&self.ring).write(&[1]);
    }
}

impl StopHandle {
    /// Readable once a stop was asked for (for `poll`).
    pub fn fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// The signal that asked for a stop, if one did.
    pub fn received(&self) -> Option<i32> {
        received(&self.received)
    }
}

fn received(flag: &AtomicUsize) -> Option<i32> {
    match flag.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig as i32),
    }
}

/// The conventional name of a stop signal, for messages.
pub fn name(sig: i32) -> String {
    match sig {
        SIGINT => "SIGINT".into(),
        SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}
