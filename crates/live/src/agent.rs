//! The agent: the dispatcher driving real threads. A first, minimal form of
//! `hsched live`'s core, for one hierarchy built in code: it runs the same
//! policy code as `hsched sim`, fed with the kernel's block and wakeup
//! events ([`crate::events`]) and the real clock, and applies each
//! decision to the managed threads:
//!
//! - on a CPU: `SCHED_FIFO` at [`RUN_PRIORITY`], pinned to that CPU;
//! - parked (soft, as Vassal delegates to the native scheduler):
//!   `SCHED_IDLE`, pinned to the managed CPUs, so Linux may run it only on
//!   time nobody else wants there.
//!
//! The agent itself runs at [`AGENT_PRIORITY`], above every managed
//! thread, with its memory locked; before it touches a thread it tells the
//! guardian ([`crate::guardian`]) the thread's original state.
//!
//! Not yet here (issue 7 goes on): scenarios and commands, hard parking,
//! timerfd timers (waits are rounded to the millisecond), exits, the
//! control socket, reports.

use crate::events::{monotonic_ns, SchedEvent, SchedEvents};
use crate::guardian::{Guardian, Line, Original, Watch};
use crate::sys::{self, SchedAttr, SCHED_IDLE};
use hsched_core::{CpuId, Instant, Params, ThreadId};
use hsched_dispatch::{Config, Dispatcher, Platform};
use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::time::Duration;

/// The agent's own `SCHED_FIFO` priority.
pub const AGENT_PRIORITY: u32 = 50;
/// The priority of a managed thread the hierarchy put on a CPU.
pub const RUN_PRIORITY: u32 = 40;

/// A thread to manage: its kernel id, a name, its attachment parameters.
#[derive(Clone, Debug)]
pub struct Managed {
    pub tid: i32,
    pub name: String,
    pub params: Params,
}

/// What the dispatcher's decisions do to real threads.
struct LivePlatform {
    /// The real CPU behind each of the dispatcher's CPUs.
    cpus: Vec<usize>,
    /// Kernel thread id by dispatcher thread id.
    tids: Vec<i32>,
    on_cpu: Vec<Option<ThreadId>>,
    /// Calls that failed (a thread gone, say), for the caller to report.
    errors: Vec<String>,
    /// Priority changes made.
    changes: u64,
}

impl LivePlatform {
    fn park(&mut self, t: ThreadId) {
        let tid = self.tids[t.index()];
        let r = sys::set_attr(tid, &SchedAttr::fair(SCHED_IDLE, 0))
            .and_then(|()| sys::set_affinity(tid, &self.cpus));
        self.note(tid, r);
    }

    fn run(&mut self, t: ThreadId, cpu: usize) {
        let tid = self.tids[t.index()];
        let r = sys::set_affinity(tid, &[self.cpus[cpu]])
            .and_then(|()| sys::set_attr(tid, &SchedAttr::fifo(RUN_PRIORITY)));
        self.note(tid, r);
    }

    fn note(&mut self, tid: i32, r: io::Result<()>) {
        self.changes += 1;
        if let Err(e) = r {
            self.errors.push(format!("thread {tid}: {e}"));
        }
    }
}

impl Platform for LivePlatform {
    fn set_cpu(&mut self, _now: Instant, cpu: CpuId, thread: Option<ThreadId>) {
        let c = cpu.0 as usize;
        if let Some(old) = self.on_cpu[c].take() {
            if Some(old) != thread && !self.on_cpu.contains(&Some(old)) {
                self.park(old);
            }
        }
        if let Some(t) = thread {
            self.run(t, c);
        }
        self.on_cpu[c] = thread;
    }
}

/// The dispatcher, its platform, and the kernel's events.
pub struct Agent {
    disp: Dispatcher,
    platform: LivePlatform,
    events: SchedEvents,
    guardian: Guardian,
    /// What each thread was before the agent took it.
    originals: Vec<Original>,
    by_tid: HashMap<i32, ThreadId>,
    start_ns: u64,
    now: Instant,
}

impl Agent {
    /// Takes over `threads` on the real CPUs `cpus` under one root
    /// scheduler of `policy` with `params`. `guardian_exe` is the
    /// `hsched-guardian` program.
    pub fn start(
        cpus: &[usize],
        policy: &str,
        params: &Params,
        threads: &[Managed],
        guardian_exe: &Path,
    ) -> Result<Agent, String> {
        let fail = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
        let mut guardian = Guardian::spawn(
            guardian_exe,
            &Watch {
                agent: Some(std::process::id() as i32),
                heartbeat: None,
            },
        )
        .map_err(|e| fail("starting the guardian", &e))?;
        let _ = sys::lock_memory();
        sys::set_attr(0, &SchedAttr::fifo(AGENT_PRIORITY))
            .map_err(|e| fail("raising the agent to SCHED_FIFO", &e))?;
        let tids: Vec<i32> = threads.iter().map(|m| m.tid).collect();
        let mut originals = Vec::new();
        for &tid in &tids {
            let original =
                Original::capture(tid).map_err(|e| fail(&format!("thread {tid}"), &e))?;
            guardian
                .send(&Line::Manage(original.clone()))
                .map_err(|e| fail("telling the guardian", &e))?;
            originals.push(original);
        }
        let events = SchedEvents::open(&tids).map_err(|e| fail("kernel events", &e))?;
        let mut disp = Dispatcher::new(Config {
            cpus: cpus.len() as u32,
            tick: None,
            watchdog: None,
            check_invariants: false,
        });
        let root = disp.create_root("root", policy, params)?;
        disp.set_default(root);
        let mut platform = LivePlatform {
            cpus: cpus.to_vec(),
            tids: Vec::new(),
            on_cpu: vec![None; cpus.len()],
            errors: Vec::new(),
            changes: 0,
        };
        let mut by_tid = HashMap::new();
        for m in threads {
            let (t, admitted) = disp.add_thread(&m.name, root, &m.params);
            admitted.map_err(|e| fail(&format!("thread `{}`", m.name), &e))?;
            platform.tids.push(m.tid);
            by_tid.insert(m.tid, t);
            platform.park(t);
        }
        let mut agent = Agent {
            disp,
            platform,
            events,
            guardian,
            originals,
            by_tid,
            start_ns: monotonic_ns(),
            now: Instant::ZERO,
        };
        // Threads running or ready now are runnable; the others announce
        // themselves with their next wakeup.
        for m in threads {
            let pid = sys::tgid_of(m.tid).unwrap_or(m.tid);
            if matches!(sys::thread_state(pid, m.tid), Ok('R')) {
                let t = agent.by_tid[&m.tid];
                agent
                    .disp
                    .thread_ready(&mut agent.platform, Instant::ZERO, t);
            }
        }
        Ok(agent)
    }

    fn clock(&self, ns: u64) -> Instant {
        Instant(ns.saturating_sub(self.start_ns)).max(self.now)
    }

    /// Schedules for `span` of real time.
    pub fn run_for(&mut self, span: Duration) -> Result<(), String> {
        let end = self
            .clock(monotonic_ns())
            .saturating_add(hsched_core::Duration(span.as_nanos() as u64));
        let mut seen = Vec::new();
        loop {
            let now = self.clock(monotonic_ns());
            if now >= end {
                return Ok(());
            }
            let until = self.disp.next_deadline().unwrap_or(end).min(end);
            let wait = Duration::from_nanos(until.0.saturating_sub(now.0));
            if !wait.is_zero() {
                self.events
                    .wait(wait.max(Duration::from_millis(1)))
                    .map_err(|e| format!("waiting for kernel events: {e}"))?;
            }
            seen.clear();
            self.events
                .drain(&mut seen)
                .map_err(|e| format!("reading kernel events: {e}"))?;
            for e in &seen {
                self.now = self.clock(e.time_ns());
                match *e {
                    SchedEvent::Switch {
                        prev,
                        prev_blocked: true,
                        ..
                    } => {
                        if let Some(&t) = self.by_tid.get(&prev) {
                            self.disp.thread_block(&mut self.platform, self.now, t);
                        }
                    }
                    SchedEvent::Wakeup { tid, .. } => {
                        if let Some(&t) = self.by_tid.get(&tid) {
                            self.disp.thread_ready(&mut self.platform, self.now, t);
                        }
                    }
                    SchedEvent::Switch { .. } => {}
                }
            }
            self.now = self.clock(monotonic_ns());
            self.disp.advance(&mut self.platform, self.now);
        }
    }

    /// CPU time each scheduler received, by name, as the dispatcher
    /// accounted it.
    pub fn received(&self) -> Vec<(String, Duration)> {
        self.disp
            .node_results()
            .iter()
            .map(|n| (n.name.clone(), Duration::from_nanos(n.received.as_nanos())))
            .collect()
    }

    /// Priority and affinity changes made, and those that failed.
    pub fn changes(&self) -> (u64, &[String]) {
        (self.platform.changes, &self.platform.errors)
    }

    /// Gives every thread back as it was, tells the guardian so, and lowers
    /// the agent. What could not be given back (an error) the guardian
    /// restores when its pipe closes.
    pub fn stop(mut self) -> io::Result<()> {
        for o in &self.originals {
            let back =
                sys::set_attr(o.tid, &o.attr()).and_then(|()| sys::set_affinity(o.tid, &o.cpus));
            let gone = matches!(&back, Err(e) if e.raw_os_error() == Some(libc::ESRCH));
            if back.is_ok() || gone {
                self.guardian.send(&Line::Release(o.tid))?;
            }
        }
        let _ = sys::set_attr(0, &SchedAttr::fair(sys::SCHED_OTHER, 0));
        let status = self.guardian.finish()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "the guardian ended with {status}"
            )))
        }
    }
}
