//! The agent's loop and clock: it waits for the kernel's events, its
//! next deadline, the guardian's end, a stop request and the control
//! socket together, and gives the guardian its heartbeat.

use super::platform::OPEN_HORIZON;
use super::{Agent, Interrupted};
use crate::events::monotonic_ns;
use crate::guardian::{Guardian, Line};
use crate::signals::StopHandle;
use crate::sys;
use hsched_core::Instant;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// How often the agent gives the guardian a heartbeat (and the longest it
/// waits between two turns of its loop).
const HEARTBEAT_EVERY: Duration = Duration::from_millis(100);
/// How often, at most, control work left over (replies a client has not
/// read, requests beyond a turn's share) is taken up when nothing else
/// wakes the loop for it.
const CONTROL_BACKLOG_EVERY: Duration = Duration::from_millis(10);

impl Agent {
    /// Tells the guardian the agent is alive (a heartbeat); the first one
    /// (from the run's loop) starts the guardian's watch on it.
    pub(super) fn beat_now(&mut self) {
        self.beating = true;
        self.last_beat = std::time::Instant::now();
        if let Err(e) = self.tell(&Line::Beat) {
            self.guardian_gone(format!("writing to it: {e}"));
        }
    }

    /// Starts the agent's clock (time zero) now: after setting up, before
    /// the first arrival.
    pub fn start_clock(&mut self) {
        self.start_ns = monotonic_ns();
        self.now = Instant::ZERO;
    }

    /// Time since the agent started, on its clock.
    pub fn now(&self) -> Instant {
        self.clock(monotonic_ns())
    }

    pub(super) fn clock(&self, ns: u64) -> Instant {
        Instant(ns.saturating_sub(self.start_ns)).max(self.now)
    }

    /// Stops early ([`Agent::interrupted`]) once `handle` says a stop was
    /// asked for.
    pub fn stop_on(&mut self, handle: StopHandle) {
        self.stop_request = Some(handle);
    }

    /// Why the agent stopped before the end it was given, if it did: a stop
    /// was asked for, or the guardian is gone. [`Agent::run_until`] then
    /// returns at once; what is left to do is [`Agent::stop`].
    pub fn interrupted(&mut self) -> Option<&Interrupted> {
        if self.interrupted.is_none() {
            if let Some(sig) = self.stop_request.as_ref().and_then(StopHandle::received) {
                self.interrupted = Some(Interrupted::Signal(sig));
            }
        }
        self.interrupted.as_ref()
    }

    /// Tells the guardian `line`, if there is one.
    pub(super) fn tell(&mut self, line: &Line) -> io::Result<()> {
        match &mut self.guardian {
            Some(g) => g.send(line),
            None => Ok(()),
        }
    }

    /// The guardian is gone: noted, so that the run stops and
    /// [`Agent::stop`] gives the threads back without it.
    fn guardian_gone(&mut self, how: String) {
        self.interrupted
            .get_or_insert(Interrupted::GuardianGone(how));
    }

    /// Schedules until `end` on the agent's clock, or until `stop_early`
    /// (checked between events) says so, or until it is interrupted
    /// ([`Agent::interrupted`]).
    pub fn run_until(
        &mut self,
        end: Instant,
        mut stop_early: impl FnMut(&mut Agent) -> bool,
    ) -> Result<(), String> {
        let mut seen = Vec::new();
        let mut fds = Vec::new();
        loop {
            let now = self.clock(monotonic_ns());
            if now >= end || self.interrupted().is_some() || stop_early(self) {
                return self.read_switches();
            }
            let until = self.disp.next_deadline().unwrap_or(end).min(end);
            let wake_at = self.platform.next_lowering().unwrap_or(end).min(until);
            self.flush();
            self.timer
                .arm_at(self.start_ns + wake_at.0)
                .map_err(|e| format!("arming the timer: {e}"))?;
            // The kernel's events, the timer, the guardian's end, a stop
            // request (the last two may be missing: -1, which poll skips),
            // then the control socket's.
            fds.clear();
            let events_fd = match (&self.events, &self.platform.scx) {
                (Some(events), _) => events.fd(),
                (None, Some(scx)) => scx.sched.events_fd(),
                (None, None) => -1,
            };
            fds.extend([
                events_fd,
                self.timer.fd(),
                self.guardian_exit.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
                self.stop_request.as_ref().map_or(-1, StopHandle::fd),
            ]);
            if let Some(c) = &self.control {
                fds.extend(c.fds());
            }
            let ready = sys::poll_readable(&fds, HEARTBEAT_EVERY)
                .map_err(|e| format!("waiting for kernel events: {e}"))?;
            if ready[1] {
                self.timer.clear();
            }
            if ready[2] {
                let how = self.guardian.as_mut().map(Guardian::try_status);
                self.guardian_gone(how.unwrap_or_default());
            }
            self.take_events(&mut seen)?;
            self.now = self.clock(monotonic_ns());
            let backlog = self.control.as_ref().is_some_and(|c| c.backlog())
                && self.control_served.elapsed() >= CONTROL_BACKLOG_EVERY;
            if ready[4..].contains(&true) || backlog {
                self.serve_control();
            }
            self.finish_plugin_load();
            if until < end && self.now >= until {
                self.lateness.push(self.now.0 - until.0);
            }
            self.disp.advance(&mut self.platform, self.now);
            self.hand_back_ejected();
            self.platform.lower_woken(self.now);
            if self.last_beat.elapsed() >= HEARTBEAT_EVERY {
                self.beat_now();
                self.check_ejected();
            }
        }
    }

    /// Under sched_ext, writes the decisions made since the last time (see
    /// [`LivePlatform::flush`](super::platform::LivePlatform::flush)), with the
    /// dispatcher's next deadline as their horizon.
    pub(super) fn flush(&mut self) {
        let horizon = match self.disp.next_deadline() {
            Some(deadline) => self.start_ns + deadline.0,
            None => monotonic_ns() + OPEN_HORIZON.as_nanos() as u64,
        };
        self.platform.flush(monotonic_ns(), horizon);
    }
}
