//! The agent: the dispatcher driving real threads. It runs the same
//! policy code as `hsched sim` (the hierarchy built in it by the caller:
//! [`crate::run`] builds a scenario's), fed with the kernel's block and
//! wakeup events ([`crate::events`]) and the real clock, and applies each
//! decision to the managed threads:
//!
//! - on a CPU: `SCHED_FIFO` at [`RUN_PRIORITY`], pinned to that CPU;
//! - parked soft (as Vassal delegates to the native scheduler):
//!   `SCHED_IDLE`, pinned to the managed CPUs, so Linux may run it only on
//!   time nobody else wants there;
//! - parked hard ([`Agent::park_hard`]): also its process stopped.
//!
//! The agent itself runs at [`AGENT_PRIORITY`], above every managed
//! thread, with its memory locked; before it touches a thread it tells the
//! guardian ([`crate::guardian`]) the thread's original state, and it
//! gives the guardian a heartbeat: silent for [`HEARTBEAT_TIMEOUT`], it is
//! killed and every thread restored.
//!
//! The agent waits for the kernel's events and for its next deadline
//! together (a CLOCK_MONOTONIC timerfd, timer slack 1 ns).
//!
//! With [`Agent::listen`], it answers control requests ([`crate::control`])
//! between events: messages to schedulers and changes of the hierarchy.

use crate::control::{authorize, ControlSocket, Peer, Request, Response, Speaker};
use crate::events::{monotonic_ns, SchedEvent, SchedEvents};
use crate::guardian::{Guardian, Line, Original, Watch};
use crate::observe::{Observations, Seen};
use crate::sys::{self, SchedAttr, SCHED_IDLE};
use hsched_core::{CpuId, Instant, Msg, Params, Reply, ThreadId};
use hsched_dispatch::{Config, Dispatcher, Platform};
use hsched_model::{Action, LogEntry, LogKind};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::Duration;

/// The agent's own `SCHED_FIFO` priority.
pub const AGENT_PRIORITY: u32 = 50;
/// The priority of a managed thread the hierarchy put on a CPU.
pub const RUN_PRIORITY: u32 = 40;
/// How long the guardian waits for a sign of life before it takes the
/// agent for hung, kills it and restores every thread.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(1);
/// How often the agent gives one (and the longest it waits between two
/// turns of its loop).
const HEARTBEAT_EVERY: Duration = Duration::from_millis(100);

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
    /// The process of each, by dispatcher thread id (read once: the hot
    /// path does not read /proc).
    pids: Vec<i32>,
    on_cpu: Vec<Option<ThreadId>>,
    /// Calls that failed (a thread gone, say), for the caller to report.
    errors: Vec<String>,
    /// Priority changes made.
    changes: u64,
    /// Hard parking: a parked thread's process is stopped (SIGSTOP), so it
    /// gets no CPU at all, not even what Linux has spare.
    hard: bool,
    /// Announces stops to the guardian (before each stop, so a stopped
    /// process is always continued if the agent dies).
    to_guardian: Option<std::fs::File>,
    /// Processes stopped now.
    stopped: std::collections::HashSet<i32>,
}

impl LivePlatform {
    fn park(&mut self, t: ThreadId) {
        let tid = self.tids[t.index()];
        let mut r = sys::set_attr(tid, &SchedAttr::fair(SCHED_IDLE, 0))
            .and_then(|()| sys::set_affinity(tid, &self.cpus));
        if self.hard && r.is_ok() {
            r = self.stop_process(self.pids[t.index()]);
        }
        self.note(tid, r);
    }

    fn run(&mut self, t: ThreadId, cpu: usize) {
        let tid = self.tids[t.index()];
        let mut r = sys::set_affinity(tid, &[self.cpus[cpu]])
            .and_then(|()| sys::set_attr(tid, &SchedAttr::fifo(RUN_PRIORITY)));
        if r.is_ok() {
            r = self.continue_process(self.pids[t.index()]);
        }
        self.note(tid, r);
    }

    fn stop_process(&mut self, pid: i32) -> io::Result<()> {
        if !self.stopped.insert(pid) {
            return Ok(());
        }
        if let Some(g) = &mut self.to_guardian {
            use std::io::Write;
            writeln!(g, "{}", Line::Stopped(pid))?;
        }
        sys::signal(pid, libc::SIGSTOP)
    }

    fn continue_process(&mut self, pid: i32) -> io::Result<()> {
        if !self.stopped.remove(&pid) {
            return Ok(());
        }
        match sys::signal(pid, libc::SIGCONT) {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()), // gone
            other => other?,
        }
        if let Some(g) = &mut self.to_guardian {
            use std::io::Write;
            writeln!(g, "{}", Line::Resumed(pid))?;
        }
        Ok(())
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
    /// Wakes the agent at the dispatcher's next deadline.
    timer: sys::Timer,
    guardian: Guardian,
    /// What each thread was before the agent took it.
    originals: Vec<Original>,
    by_tid: HashMap<i32, ThreadId>,
    start_ns: u64,
    now: Instant,
    last_beat: std::time::Instant,
    /// How late each deadline of the dispatcher was acted on, ns.
    lateness: Vec<u64>,
    /// The managed threads' switches and wakeups, for the figures.
    observed: Observations,
    /// Where control requests come in, if anywhere.
    control: Option<ControlSocket>,
    /// What control requests did.
    log: Vec<LogEntry>,
}

impl Agent {
    /// An agent on the real CPUs `cpus` with an empty hierarchy: it starts
    /// its guardian (`guardian` runs the guardian program: its first word
    /// the executable, the rest leading arguments), locks its memory and
    /// raises itself to [`AGENT_PRIORITY`].
    /// `watchdog`: the dispatcher's starvation watchdog bound (a policy
    /// that starves a thread that long is ejected), as in the scenario.
    pub fn new(
        cpus: &[usize],
        guardian: &[&std::ffi::OsStr],
        watchdog: Option<hsched_core::Duration>,
    ) -> Result<Agent, String> {
        let (exe, lead) = guardian.split_first().ok_or("no guardian program given")?;
        let guardian = Guardian::spawn_with(
            Path::new(exe),
            lead,
            &Watch {
                agent: Some(std::process::id() as i32),
                heartbeat: Some(HEARTBEAT_TIMEOUT),
            },
        )
        .map_err(|e| format!("starting the guardian: {e}"))?;
        let _ = sys::lock_memory();
        // Reset on fork: the commands the agent starts begin at the
        // default policy, not at the agent's real-time priority (which the
        // guardian would otherwise take for their original state).
        let agent = SchedAttr {
            flags: sys::SCHED_FLAG_RESET_ON_FORK,
            ..SchedAttr::fifo(AGENT_PRIORITY)
        };
        sys::set_attr(0, &agent)
            .map_err(|e| format!("raising the agent to SCHED_FIFO {AGENT_PRIORITY}: {e}"))?;
        // Opened before any thread is managed (it takes milliseconds), so
        // that the clock starts after it.
        let events = SchedEvents::open(&[]).map_err(|e| format!("kernel events: {e}"))?;
        // Deadlines to the nanosecond: no timer slack.
        sys::set_timer_slack(1).map_err(|e| format!("setting the timer slack: {e}"))?;
        let timer = sys::Timer::new().map_err(|e| format!("a timerfd: {e}"))?;
        Ok(Agent {
            disp: Dispatcher::new(Config {
                cpus: cpus.len() as u32,
                tick: None,
                watchdog,
                check_invariants: false,
            }),
            platform: LivePlatform {
                cpus: cpus.to_vec(),
                tids: Vec::new(),
                pids: Vec::new(),
                on_cpu: vec![None; cpus.len()],
                errors: Vec::new(),
                changes: 0,
                hard: false,
                to_guardian: None,
                stopped: Default::default(),
            },
            events,
            timer,
            guardian,
            originals: Vec::new(),
            by_tid: HashMap::new(),
            start_ns: monotonic_ns(),
            now: Instant::ZERO,
            last_beat: std::time::Instant::now(),
            lateness: Vec::new(),
            observed: Observations::default(),
            control: None,
            log: Vec::new(),
        })
    }

    /// The dispatcher and the platform it drives, to build the hierarchy in.
    pub fn dispatcher(&mut self) -> (&mut Dispatcher, &mut dyn Platform) {
        (&mut self.disp, &mut self.platform)
    }

    /// Takes over thread `tid` as `name` under scheduler `parent` with
    /// attachment `params`: the guardian learns its original state first,
    /// then it is parked until the hierarchy gives it a CPU.
    pub fn manage(
        &mut self,
        tid: i32,
        name: &str,
        parent: &str,
        params: &Params,
    ) -> Result<ThreadId, String> {
        let original =
            Original::capture(tid).map_err(|e| format!("thread {tid} (`{name}`): {e}"))?;
        self.guardian
            .send(&Line::Manage(original.clone()))
            .map_err(|e| format!("telling the guardian: {e}"))?;
        self.originals.push(original);
        let parent = self
            .disp
            .sched_by_name(parent)
            .or(self.disp.default_sched())
            .ok_or_else(|| format!("thread `{name}`: no scheduler `{parent}` to join"))?;
        let (t, admitted) = self.disp.add_thread(name, parent, params);
        admitted.map_err(|e| format!("thread `{name}`: {e}"))?;
        // Read before parking: a hard-parked process shows as stopped.
        let pid = sys::tgid_of(tid).unwrap_or(tid);
        let running = matches!(sys::thread_state(pid, tid), Ok('R'));
        self.platform.tids.push(tid);
        self.platform.pids.push(pid);
        self.by_tid.insert(tid, t);
        self.platform.park(t);
        self.events
            .watch(&self.platform.tids)
            .map_err(|e| format!("kernel events: {e}"))?;
        // Running or ready now: runnable; otherwise its next wakeup says so.
        if running {
            let now = self.clock(monotonic_ns());
            self.now = now;
            self.disp.thread_ready(&mut self.platform, now, t);
        }
        Ok(t)
    }

    /// Starts a command the hierarchy is to manage, at the default policy
    /// (`SCHED_OTHER`, nice 0) it would have started with.
    ///
    /// Why not simply fork: a new process must run before it can exec (and
    /// `spawn` waits for the exec). Started at the default policy it could
    /// land on a CPU a managed thread holds at `SCHED_FIFO` and wait there
    /// until real-time throttling frees the CPU, up to a second. So the
    /// agent forks at a real-time priority just below its own (inherited:
    /// the child execs at once, and cannot starve the agent), then lowers
    /// the child to the default.
    pub fn spawn(&mut self, cmd: &mut std::process::Command) -> io::Result<std::process::Child> {
        sys::set_attr(0, &SchedAttr::fifo(AGENT_PRIORITY - 1))?;
        let child = cmd.spawn();
        let back = sys::set_attr(
            0,
            &SchedAttr {
                flags: sys::SCHED_FLAG_RESET_ON_FORK,
                ..SchedAttr::fifo(AGENT_PRIORITY)
            },
        );
        let child = child?;
        back?;
        sys::set_attr(child.id() as i32, &SchedAttr::fair(sys::SCHED_OTHER, 0))?;
        Ok(child)
    }

    /// Thread `tid` ended.
    pub fn exited(&mut self, tid: i32) {
        if let Some(&t) = self.by_tid.get(&tid) {
            self.now = self.clock(monotonic_ns());
            self.disp.thread_exit(&mut self.platform, self.now, t);
            let _ = self.guardian.send(&Line::Release(tid));
        }
    }

    /// Parks hard from now on: a thread off its CPU has its process stopped
    /// (SIGSTOP) instead of lowered to `SCHED_IDLE`, so that it gets no CPU
    /// at all. For single-threaded processes: stopping one stops all its
    /// threads.
    pub fn park_hard(&mut self) -> Result<(), String> {
        self.platform.to_guardian = Some(
            self.guardian
                .writer()
                .map_err(|e| format!("a handle on the guardian's pipe: {e}"))?,
        );
        self.platform.hard = true;
        Ok(())
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

    fn clock(&self, ns: u64) -> Instant {
        Instant(ns.saturating_sub(self.start_ns)).max(self.now)
    }

    /// Schedules until `end` on the agent's clock, or until `stop_early`
    /// (checked between events) says so.
    pub fn run_until(
        &mut self,
        end: Instant,
        mut stop_early: impl FnMut(&mut Agent) -> bool,
    ) -> Result<(), String> {
        let mut seen = Vec::new();
        loop {
            let now = self.clock(monotonic_ns());
            if now >= end || stop_early(self) {
                return Ok(());
            }
            let until = self.disp.next_deadline().unwrap_or(end).min(end);
            self.timer
                .arm_at(self.start_ns + until.0)
                .map_err(|e| format!("arming the timer: {e}"))?;
            let mut fds = vec![self.events.fd(), self.timer.fd()];
            if let Some(c) = &self.control {
                fds.extend(c.fds());
            }
            let ready = sys::poll_readable(&fds, HEARTBEAT_EVERY)
                .map_err(|e| format!("waiting for kernel events: {e}"))?;
            self.timer.clear();
            seen.clear();
            self.events
                .drain(&mut seen)
                .map_err(|e| format!("reading kernel events: {e}"))?;
            for e in &seen {
                self.now = self.clock(e.time_ns());
                self.observe(e);
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
            if ready[2..].contains(&true) {
                self.serve_control();
            }
            if until < end && self.now >= until {
                self.lateness.push(self.now.0 - until.0);
            }
            self.disp.advance(&mut self.platform, self.now);
            if self.last_beat.elapsed() >= HEARTBEAT_EVERY {
                self.last_beat = std::time::Instant::now();
                self.guardian
                    .send(&Line::Beat)
                    .map_err(|e| format!("the guardian is gone: {e}"))?;
            }
        }
    }

    /// Listens for control requests at `path` from now on (see
    /// [`crate::control`]).
    pub fn listen(&mut self, path: &Path) -> Result<(), String> {
        self.control =
            Some(ControlSocket::bind(path).map_err(|e| format!("the control socket: {e}"))?);
        Ok(())
    }

    /// Answers the control requests that have come in.
    fn serve_control(&mut self) {
        let Some(mut control) = self.control.take() else {
            return;
        };
        control.serve(|peer, req| self.answer(peer, req));
        self.control = Some(control);
    }

    /// Carries out one control request from `peer`, logging what it did.
    fn answer(&mut self, peer: &Peer, req: Request) -> Response {
        let managed: Vec<(String, i32)> = (0..self.platform.tids.len())
            .map(|i| {
                let name = self.disp.thread_name(ThreadId(i as u32)).to_string();
                (name, self.platform.pids[i])
            })
            .collect();
        let speaker = match authorize(peer, &managed, &req) {
            Ok(s) => s,
            Err(e) => return self.logged(Response::refused(e), peer),
        };
        let now = self.now;
        let action = match req {
            Request::Status => {
                return Response {
                    ok: true,
                    text: self.status(),
                    reply: Params::new(),
                }
            }
            Request::Msg { to, name, args, .. } => {
                return self.message(peer, &speaker, to.as_deref(), Msg { name, args })
            }
            Request::Move { thread, to, params } => Action::Move { thread, to, params },
            Request::Load { scheduler } => Action::Load(scheduler),
            Request::Unload { scheduler } => Action::Unload(scheduler),
            Request::Detach { scheduler } => Action::Detach(scheduler),
            Request::Attach { scheduler, parents } => Action::Attach { scheduler, parents },
        };
        let result = hsched_dispatch::apply(&mut self.disp, &mut self.platform, now, &action)
            .expect("control requests are hierarchy actions");
        let response = match result {
            Ok(text) => Response {
                ok: true,
                text,
                reply: Params::new(),
            },
            Err(e) => Response::refused(e),
        };
        self.logged(response, peer)
    }

    /// Message `msg` to scheduler `to` (by default the speaker's) from
    /// `speaker`.
    fn message(&mut self, peer: &Peer, speaker: &Speaker, to: Option<&str>, msg: Msg) -> Response {
        let from = match speaker {
            Speaker::Operator => None,
            Speaker::Thread(name) => match self.disp.thread_by_name(name) {
                Some(t) => Some(t),
                None => return self.logged(Response::refused(format!("no thread `{name}`")), peer),
            },
        };
        let target = match to {
            Some(name) => self
                .disp
                .sched_by_name(name)
                .ok_or(format!("no scheduler `{name}`")),
            None => from.and_then(|t| self.disp.thread_sched(t)).ok_or_else(|| {
                "name the scheduler (`to`): the operator has none of its own".into()
            }),
        };
        let s = match target {
            Ok(s) => s,
            Err(e) => return self.logged(Response::refused(e), peer),
        };
        let reply = self
            .disp
            .message(&mut self.platform, self.now, from, s, &msg);
        let sender = from.map_or("operator".to_string(), |t| {
            format!("`{}`", self.disp.thread_name(t))
        });
        let text = format!("{sender} -> `{}` {msg}: {reply}", self.disp.sched_name(s));
        let response = match reply {
            Reply::Ok(reply) => Response {
                ok: true,
                text,
                reply,
            },
            Reply::Err(_) => Response::refused(text),
        };
        self.logged(response, peer)
    }

    /// Logs a control request's outcome (as the simulator logs script
    /// steps and replies) and returns it.
    fn logged(&mut self, response: Response, peer: &Peer) -> Response {
        let kind = if response.ok {
            LogKind::Reply
        } else {
            LogKind::Refused
        };
        self.log.push(LogEntry {
            at: self.now,
            kind,
            text: format!("control (pid {}): {}", peer.pid, response.text),
        });
        response
    }

    /// The managed threads and their schedulers, one per line.
    fn status(&self) -> String {
        let mut out = format!("{} decisions {}\n", self.now, self.disp.decisions());
        for (i, tid) in self.platform.tids.iter().enumerate() {
            let t = ThreadId(i as u32);
            let _ = writeln!(
                out,
                "thread {} tid {tid} under {}",
                self.disp.thread_name(t),
                self.sched_of(t)
            );
        }
        for n in self.disp.node_results() {
            let _ = writeln!(
                out,
                "scheduler {} ({}) received {}",
                n.name, n.policy, n.received
            );
        }
        out
    }

    /// Carries out a change of the hierarchy now, logged as the simulator
    /// logs a script step. Protection-domain actions are not the
    /// hierarchy's and are refused.
    pub fn script(&mut self, action: &Action) {
        self.now = self.clock(monotonic_ns());
        let result = hsched_dispatch::apply(&mut self.disp, &mut self.platform, self.now, action)
            .unwrap_or_else(|| Err("protection domains are not run live".into()));
        let (kind, text) = match result {
            Ok(text) => (LogKind::Script, text),
            Err(text) => (LogKind::Refused, text),
        };
        self.log.push(LogEntry {
            at: self.now,
            kind,
            text,
        });
    }

    /// What the script and the control socket did, in order.
    pub fn log(&self) -> &[LogEntry] {
        &self.log
    }

    /// Records a kernel event of a managed thread, at the agent's `now`.
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
        };
        self.observed.push(self.now, seen);
    }

    /// The managed threads' switches and wakeups so far.
    pub fn observations(&self) -> &Observations {
        &self.observed
    }

    /// CLOCK_MONOTONIC at the agent's time zero, ns.
    pub fn zero_ns(&self) -> u64 {
        self.start_ns
    }

    /// How late the dispatcher's deadlines (decision horizons, policy
    /// timers) were acted on so far, in ns, in order.
    pub fn lateness(&self) -> &[u64] {
        &self.lateness
    }

    /// Decisions made so far.
    pub fn decisions(&self) -> u64 {
        self.disp.decisions()
    }

    /// What each scheduler received, as the dispatcher accounted it.
    pub fn node_results(&self) -> &[hsched_model::NodeResult] {
        self.disp.node_results()
    }

    /// The scheduler thread `t` is under.
    pub fn sched_of(&self, t: ThreadId) -> String {
        self.disp
            .thread_sched(t)
            .map(|s| self.disp.sched_name(s).to_string())
            .unwrap_or_default()
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
        // Continue every stopped process, then close the second pipe handle
        // (the guardian waits for all of them).
        let stopped: Vec<i32> = self.platform.stopped.drain().collect();
        for pid in stopped {
            let _ = sys::signal(pid, libc::SIGCONT);
            self.guardian.send(&Line::Resumed(pid))?;
        }
        self.platform.to_guardian = None;
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
