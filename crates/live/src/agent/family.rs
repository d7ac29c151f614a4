//! The process family: the threads the agent manages, taken over with
//! what they start (threads and processes, as the kernel reports their
//! forks), the commands started held at a gate, and the threads handed
//! back to Linux when their scheduler is ejected or they end.

use super::{Agent, OTHERS};
use crate::events::monotonic_ns;
use crate::guardian::{Line, Original};
use crate::sys;
use hsched_core::{Instant, Params, ThreadId};
use hsched_model::{LogEntry, LogKind};
use std::io;

impl Agent {
    /// Takes over thread `tid` as `name` under scheduler `parent` with
    /// attachment `params`: the guardian learns its original state first,
    /// then it is parked until the hierarchy gives it a CPU. The threads
    /// and processes it creates from then on are taken over too (see
    /// [`Agent::family`]).
    pub fn manage(
        &mut self,
        tid: i32,
        name: &str,
        parent: &str,
        params: &Params,
    ) -> Result<ThreadId, String> {
        self.manage_as(tid, name, parent, params, false)
    }

    /// Whole-machine mode under sched_ext: adds the thread that stands for
    /// every task nobody manages (`(others)`, under the default scheduler,
    /// with no parameters). It is ready while such tasks wait to run (the
    /// BPF scheduler says when), and a CPU the hierarchy gives it runs
    /// them, first come first served with 5 ms slices. So they get the
    /// time the hierarchy grants them, as HLS's whole-machine hierarchy
    /// and Vassal's delegation have it, and none beyond (the CPUs outside
    /// the scenario run them all the time). Once, after the hierarchy is
    /// built and before any thread is managed.
    pub fn delegate_others(&mut self) -> Result<ThreadId, String> {
        let sched = self.disp.default_sched().ok_or(
            "whole-machine mode: the hierarchy has no default scheduler for the tasks nobody names",
        )?;
        // The dispatcher's own clock, not the wall clock: events already read
        // may carry earlier kernel times, which it must not have passed.
        let now = self.disp.now();
        let (t, admitted) = self.disp.add_thread(now, OTHERS, sched, &Params::new());
        admitted.map_err(|e| {
            format!("whole-machine mode: the default scheduler refuses the tasks nobody names ({e}); use --partial")
        })?;
        // A thread with no kernel task: id 0, which nothing managed has
        // (and which the give-backs skip).
        let original = Original {
            tid: 0,
            tgid: 0,
            policy: sys::SCHED_OTHER,
            priority: 0,
            nice: 0,
            flags: 0,
            cpus: Vec::new(),
        };
        self.record(t, 0, original, t, &Params::new());
        self.platform.others = Some(t);
        Ok(t)
    }

    /// Records dispatcher thread `t`: kernel task `pid` (0: none), as
    /// `original` was before, in family `family`, attached with `params`.
    fn record(
        &mut self,
        t: ThreadId,
        pid: i32,
        original: Original,
        family: ThreadId,
        params: &Params,
    ) {
        debug_assert_eq!(
            t.index(),
            self.originals.len(),
            "threads are recorded in order"
        );
        self.platform.tids.push(original.tid);
        self.platform.pids.push(pid);
        self.platform.fresh.push(false);
        self.platform.at_gate.push(None);
        self.platform.woke_to_cpu.push(false);
        self.platform.armed.push(false);
        self.originals.push(original);
        self.family.push(family);
        self.params.push(params.clone());
        self.exits.push(None);
        self.released.push(false);
        self.held.push(false);
    }

    /// [`Agent::manage`] for a command held at a gate
    /// ([`Agent::start_held`]) and about to be released: it is ready from
    /// now on, as a simulated thread is at its arrival, whatever its state
    /// at the gate: its wait there is no block, its release no new
    /// wakeup.
    pub fn manage_held(
        &mut self,
        tid: i32,
        name: &str,
        parent: &str,
        params: &Params,
    ) -> Result<ThreadId, String> {
        self.manage_as(tid, name, parent, params, true)
    }

    fn manage_as(
        &mut self,
        tid: i32,
        name: &str,
        parent: &str,
        params: &Params,
        ready: bool,
    ) -> Result<ThreadId, String> {
        self.watch(&[tid])?;
        let original =
            Original::capture(tid).map_err(|e| format!("thread {tid} (`{name}`): {e}"))?;
        let parent = self
            .disp
            .sched_by_name(parent)
            .or(self.disp.default_sched())
            .ok_or_else(|| format!("thread `{name}`: no scheduler `{parent}` to join"))?;
        let t = self.take(tid, name, parent, params, original, None, ready)?;
        self.held[t.index()] = ready;
        self.adopt_offspring(t);
        Ok(t)
    }

    /// Adopts what managed thread `t` has already started: threads and
    /// processes made before the kernel was told to report its forks
    /// (which it now is) would otherwise escape.
    fn adopt_offspring(&mut self, t: ThreadId) {
        let tid = self.platform.tids[t.index()];
        let offspring = sys::offspring_of(tid);
        if let Err(e) = self.watch(&offspring) {
            self.log.push(LogEntry {
                at: self.now,
                kind: LogKind::Refused,
                text: format!("could not take over what thread {tid} started: {e}"),
            });
            return;
        }
        for child in offspring {
            self.adopt(t, child);
        }
    }

    /// Takes over `tid` under `sched`; `family`: the managed thread whose
    /// descendant it is (`None`: it heads its own family); `ready`: taken
    /// as ready whatever its state.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &mut self,
        tid: i32,
        name: &str,
        sched: hsched_core::SchedId,
        params: &Params,
        original: Original,
        family: Option<ThreadId>,
        ready: bool,
    ) -> Result<ThreadId, String> {
        self.tell(&Line::Manage(original.clone()))
            .map_err(|e| format!("telling the guardian: {e}"))?;
        // The dispatcher's own clock, not the wall clock: events already read
        // may carry earlier kernel times, which it must not have passed.
        let now = self.disp.now();
        let (t, admitted) = self.disp.add_thread(now, name, sched, params);
        // A descendant its creator's scheduler refuses runs under the
        // default one (the dispatcher logs it); a thread the scenario
        // places must be admitted.
        if family.is_none() {
            admitted.map_err(|e| format!("thread `{name}`: {e}"))?;
        }
        // Read before parking: a hard-parked process shows as stopped.
        let pid = sys::tgid_of(tid).unwrap_or(tid);
        let running = ready || matches!(sys::thread_state(pid, tid), Ok('R'));
        self.record(t, pid, original, family.unwrap_or(t), params);
        self.by_tid.insert(tid, t);
        // Listed by the caller, or, forked by a listed thread, by the
        // kernel itself (`event-fork`).
        self.watched.insert(tid);
        self.platform.take_over(t);
        // Running or ready now: runnable; otherwise its next wakeup says so.
        if running {
            let now = self.clock(monotonic_ns());
            self.now = now;
            self.disp.thread_ready(&mut self.platform, now, t);
        }
        Ok(t)
    }

    /// Managed thread `parent` created `child` (a thread or a process): it
    /// joins its creator's scheduler with the same attachment parameters,
    /// as `NAME/TID` of the family, and would be given back as the family's
    /// head was found.
    pub(super) fn adopt(&mut self, parent: ThreadId, child: i32) {
        if self.by_tid.contains_key(&child) || self.released[parent.index()] {
            return;
        }
        let head = self.family[parent.index()];
        let original = Original {
            tid: child,
            tgid: sys::tgid_of(child).unwrap_or(child),
            ..self.originals[head.index()].clone()
        };
        let Some(sched) = self.disp.thread_sched(parent).or(self.disp.default_sched()) else {
            return;
        };
        let name = format!("{}/{child}", self.disp.thread_name(head));
        let params = self.params[parent.index()].clone();
        match self.take(child, &name, sched, &params, original, Some(head), false) {
            Ok(t) => self.adopt_offspring(t),
            Err(e) => self.log.push(LogEntry {
                at: self.now,
                kind: LogKind::Refused,
                text: format!("could not take over `{name}`: {e}"),
            }),
        }
    }

    /// For each managed thread, the thread heading its family: itself for
    /// a thread given to [`Agent::manage`], else the managed thread whose
    /// descendant it is.
    pub fn family(&self) -> &[ThreadId] {
        &self.family
    }

    /// The processes of the family `head` leads (its own and those its
    /// threads started), each once.
    pub fn family_processes(&self, head: ThreadId) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .family
            .iter()
            .zip(&self.platform.pids)
            .filter(|(h, _)| **h == head)
            .map(|(_, &p)| p)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// When each managed thread ended, if it did.
    pub fn exits(&self) -> &[Option<Instant>] {
        &self.exits
    }

    /// Starts command `argv` held at `gate` ([`crate::launch`]): at the
    /// default policy (`SCHED_OTHER`, nice 0) on every CPU this process was
    /// allowed when the agent started, as it would have started without
    /// hsched, but running none of its own code until released. So a
    /// batch is started, listed with the kernel ([`Agent::watch`]) and
    /// managed first, then released ([`Agent::open_gate`]).
    pub fn start_held(
        &mut self,
        argv: &[&std::ffi::OsStr],
        stdout: Option<&std::fs::File>,
        gate: &mut crate::launch::Gate,
    ) -> io::Result<crate::launch::Held> {
        crate::launch::start_held(argv, stdout, &self.all_cpus, gate)
    }

    /// Opens `gate` once the commands held at it are managed: each one the
    /// hierarchy has given a CPU goes on to exec now, each other one when
    /// it is first given a CPU. Why not all at once: released while parked
    /// at `SCHED_IDLE` beside a busy thread, a command is preempted within
    /// its exec and waits there, holding its memory's lock, for as long as
    /// it is kept off the CPU, and every program that reads its
    /// `/proc/<pid>/cmdline` meanwhile (`ps`, `top`) waits with it
    /// (measured: 1.5 s, a starved thread's whole wait). At the gate it
    /// holds no lock, and the hierarchy sees it ready either way.
    pub fn open_gate(&mut self, gate: crate::launch::Gate) -> io::Result<()> {
        for pid in gate.into_held() {
            let t = self.by_tid[&pid];
            self.platform.at_gate[t.index()] = Some(pid);
            if self.platform.on_cpu.contains(&Some(t)) {
                self.platform.release(t)?;
            }
        }
        Ok(())
    }

    /// Has the kernel report the events of threads `tids` (and of what
    /// they fork) from now on: one write for all (each costs the kernel
    /// tens of ms), before they are managed, so that none of their
    /// blocks or wakeups after [`Agent::manage`] reads their state is
    /// missed.
    pub fn watch(&mut self, tids: &[i32]) -> Result<(), String> {
        let new: Vec<i32> = tids
            .iter()
            .copied()
            .filter(|t| !self.watched.contains(t))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        // The write waits for the kernel's tracing to settle (tens of ms,
        // more on a busy machine): once the heartbeat has begun (the run),
        // the guardian's wait starts afresh on either side of it.
        let beating = self.beating;
        if beating {
            self.beat_now();
        }
        match (&mut self.events, &self.platform.scx) {
            (Some(events), _) => events
                .watch(&new)
                .map_err(|e| format!("kernel events: {e}"))?,
            // Its custody and events from its next wakeup on; what it
            // forks from now on is managed by the scheduler itself.
            (None, Some(scx)) => {
                for &tid in &new {
                    scx.sched.manage(tid as u32)?;
                }
            }
            (None, None) => unreachable!("an agent has ftrace or sched_ext"),
        }
        if beating {
            self.beat_now();
        }
        self.watched.extend(new);
        Ok(())
    }

    /// Thread `tid` ended.
    pub(super) fn exited(&mut self, tid: i32) {
        if let Some(&t) = self.by_tid.get(&tid) {
            if self.exits[t.index()].is_some() {
                return;
            }
            self.exits[t.index()] = Some(self.now);
            if !self.released[t.index()] {
                self.disp.thread_exit(&mut self.platform, self.now, t);
                let _ = self.tell(&Line::Release(tid));
            }
        }
    }

    /// Hands the threads of an ejected scheduler (a stuck or failing
    /// policy: the watchdog's verdict, a panic, broken invariants) back to
    /// Linux: as they were before the agent took them, no longer scheduled
    /// by the hierarchy, their figures still counted. (The simulator moves
    /// them to the default scheduler instead; on a real machine the
    /// operating system is the scheduler that is always there.) What they
    /// start from then on is not taken over.
    pub(super) fn hand_back_ejected(&mut self) {
        for t in self.disp.take_ejected_threads() {
            let i = t.index();
            if self.released[i] || self.exits[i].is_some() {
                continue;
            }
            self.released[i] = true;
            self.disp.thread_exit(&mut self.platform, self.now, t);
            if self.platform.others == Some(t) {
                // The tasks nobody names: the CPUs outside the scenario
                // still run them.
                self.log.push(LogEntry {
                    at: self.now,
                    kind: LogKind::Moved,
                    text: format!("`{OTHERS}` no longer given time by the hierarchy: its scheduler was ejected"),
                });
                continue;
            }
            let original = self.originals[i].clone();
            // Its policy first: a stopped process never continues at a
            // priority it should not have.
            let back = self.platform.give_back(t, &original);
            let name = self.disp.thread_name(t).to_string();
            let (kind, text) = match back {
                Ok(()) => {
                    let _ = self.tell(&Line::Release(original.tid));
                    (
                        LogKind::Moved,
                        format!("thread `{name}` handed back to Linux: its scheduler was ejected"),
                    )
                }
                Err(e) => (
                    LogKind::Refused,
                    format!("thread `{name}`: handing it back to Linux failed ({e}); the guardian restores it at the end"),
                ),
            };
            self.log.push(LogEntry {
                at: self.now,
                kind,
                text,
            });
        }
    }
}
