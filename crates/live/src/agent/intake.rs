//! The kernel's events into the agent: blocks, wakeups, forks and exits
//! told to the dispatcher as they come (from ftrace or from the sched_ext
//! scheduler's ring buffer), and the switches recorded for the figures.

use super::{Agent, Interrupted};
use crate::events::SchedEvent;
use crate::observe::Seen;
use hsched_core::Instant;
use std::time::Duration;

/// How often the switches that do not wake the agent are read (their
/// buffer holds seconds of them).
const READ_SWITCHES_EVERY: Duration = Duration::from_millis(20);

impl Agent {
    /// Reads the kernel's events that are ready and tells the dispatcher
    /// (blocks, wakeups, new threads, exits), in time order; every
    /// [`READ_SWITCHES_EVERY`], records them for the figures with the
    /// other switches.
    pub(super) fn take_events(&mut self, seen: &mut Vec<SchedEvent>) -> Result<(), String> {
        seen.clear();
        self.drain(seen)?;
        for e in seen.iter() {
            self.now = self.clock(e.time_ns());
            match *e {
                SchedEvent::Switch {
                    prev,
                    prev_blocked: true,
                    ..
                } => {
                    // A held command waiting at its gate stays ready: it
                    // is released at once.
                    if let Some(&t) = self.by_tid.get(&prev).filter(|t| !self.held[t.index()]) {
                        self.platform.blocking = Some(t);
                        self.disp.thread_block(&mut self.platform, self.now, t);
                        self.platform.blocking = None;
                    }
                }
                SchedEvent::Wakeup { tid, .. } => {
                    if let Some(&t) = self.by_tid.get(&tid) {
                        self.held[t.index()] = false;
                        self.platform.fresh[t.index()] = true;
                        self.platform.waking = Some(t);
                        self.disp.thread_ready(&mut self.platform, self.now, t);
                        self.platform.waking = None;
                        self.platform.armed_woke(t);
                    }
                }
                SchedEvent::Fork { parent, child, .. } => {
                    if let Some(&p) = self.by_tid.get(&parent) {
                        self.adopt(p, child);
                    }
                }
                SchedEvent::Exit { tid, .. } => {
                    // The kernel drops it from its list (`event-fork`): a
                    // later thread given its id is listed anew.
                    self.watched.remove(&tid);
                    self.exited(tid);
                }
                SchedEvent::Others { ready, .. } => {
                    if let Some(t) = self.platform.others {
                        match ready {
                            true => self.disp.thread_ready(&mut self.platform, self.now, t),
                            false => self.disp.thread_block(&mut self.platform, self.now, t),
                        }
                    }
                }
                SchedEvent::Switch { .. } => {}
            }
        }
        self.unobserved.extend_from_slice(seen);
        if self.switches_read.elapsed() >= READ_SWITCHES_EVERY {
            self.read_switches()?;
        }
        Ok(())
    }

    /// The kernel's events that are ready, in time order: from ftrace, or
    /// from the sched_ext scheduler's ring buffer, where a switch comes as
    /// two events (a thread stopping, one running) and is recorded as two
    /// switches, each with an idle side.
    fn drain(&mut self, out: &mut Vec<SchedEvent>) -> Result<(), String> {
        use hsched_scx::EventKind;
        if let Some(events) = &mut self.events {
            return events
                .drain(out)
                .map_err(|e| format!("reading kernel events: {e}"));
        }
        let Some(scx) = &mut self.platform.scx else {
            return Ok(());
        };
        scx.events.clear();
        scx.sched.take_events(&mut scx.events)?;
        for e in &scx.events {
            let (tid, cpu, time_ns) = (e.tid as i32, e.cpu, e.time_ns);
            out.push(match e.kind {
                EventKind::Runnable => SchedEvent::Wakeup { time_ns, cpu, tid },
                EventKind::Stopping { runnable } => SchedEvent::Switch {
                    time_ns,
                    cpu,
                    prev: tid,
                    prev_blocked: !runnable,
                    next: 0,
                },
                EventKind::Running => SchedEvent::Switch {
                    time_ns,
                    cpu,
                    prev: 0,
                    prev_blocked: false,
                    next: tid,
                },
                EventKind::Fork { parent } => SchedEvent::Fork {
                    time_ns,
                    parent: parent as i32,
                    child: tid,
                },
                EventKind::Exit => SchedEvent::Exit { time_ns, tid },
                EventKind::Others { ready } => SchedEvent::Others { time_ns, ready },
                // Its stopping event (not runnable) said so already.
                EventKind::Quiescent => continue,
            });
        }
        Ok(())
    }

    /// Whether the kernel has ejected the sched_ext scheduler: noted, so
    /// that the run stops.
    pub(super) fn check_ejected(&mut self) {
        let Some(scx) = &self.platform.scx else {
            return;
        };
        let why = match scx.sched.exit_info() {
            Ok(None) => return,
            Ok(Some(exit)) => exit.to_string(),
            Err(e) => format!("its exit record is unreadable: {e}"),
        };
        self.interrupted.get_or_insert(Interrupted::Ejected(why));
    }

    /// Reads the switches that are not blocks and records them, with the
    /// events the dispatcher has had since the last time, for the
    /// figures. Not on every wakeup: the agent shares its CPU with the
    /// threads it raises, and each read would delay them.
    pub(super) fn read_switches(&mut self) -> Result<(), String> {
        self.switches_read = std::time::Instant::now();
        let mut all = std::mem::take(&mut self.unobserved);
        let decided = all.len();
        if let Some(events) = &mut self.events {
            events
                .drain_switches(&mut all)
                .map_err(|e| format!("reading kernel events: {e}"))?;
        }
        if decided > 0 && decided < all.len() {
            all.sort_by_key(|e| e.time_ns());
        }
        for e in &all {
            self.observe(e);
        }
        all.clear();
        self.unobserved = all;
        Ok(())
    }

    /// Records a kernel event of a managed thread.
    fn observe(&mut self, e: &SchedEvent) {
        let seen = match *e {
            SchedEvent::Switch {
                cpu,
                prev,
                prev_blocked,
                next,
                ..
            } => Seen::Switch {
                cpu: self.platform.cpus.iter().position(|&c| c == cpu as usize),
                prev: self.by_tid.get(&prev).copied(),
                blocked: prev_blocked,
                next: self.by_tid.get(&next).copied(),
            },
            SchedEvent::Wakeup { tid, .. } => match self.by_tid.get(&tid) {
                Some(&t) => Seen::Wakeup(t),
                None => return,
            },
            SchedEvent::Fork { .. } | SchedEvent::Exit { .. } | SchedEvent::Others { .. } => return,
        };
        let at = Instant(e.time_ns().saturating_sub(self.start_ns));
        self.observed.push(at, seen);
    }
}
