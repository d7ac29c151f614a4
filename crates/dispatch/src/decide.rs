//! The decision path: on each CPU, the chain of grants from the root down
//! to a thread (or idle). Re-deciding a CPU takes it back below the
//! shallowest dirty grant (each scheduler hearing `vp_revoke`), asks the
//! scheduler there again and follows its answer down; every run segment
//! is charged to each scheduler on the path. Settling repeats this, with
//! the notifications it causes, until nothing is left to do, then tells
//! the platform what runs where.

use crate::dispatcher::{Dispatcher, Platform};
use crate::table::{ChildRef, Hop, Note, TimerKind};
use hsched_core::{CpuId, Dispatch, Instant, SchedId, ThreadId, VpState};

impl Dispatcher {
    /// Marks the CPU for re-decision from `s`'s grant downwards.
    pub(crate) fn resched_at(&mut self, cpu: CpuId, s: SchedId) {
        if let Some(depth) = self.cpus[cpu.index()]
            .path
            .iter()
            .position(|h| h.sched == s)
        {
            self.mark_dirty(cpu.index(), depth);
        }
    }

    pub(crate) fn mark_dirty(&mut self, cpu: usize, depth: usize) {
        let c = &mut self.cpus[cpu];
        c.dirty = Some(c.dirty.map_or(depth, |d| d.min(depth)));
    }

    /// Delivers queued notifications and re-decides dirty CPUs until nothing
    /// is left to do; then runs the checks.
    pub(crate) fn settle(&mut self, p: &mut dyn Platform) {
        loop {
            while let Some(note) = self.notes.pop_front() {
                match note {
                    Note::Request(link) => self.deliver_request(link),
                    Note::Release(link) => self.deliver_release(link),
                    Note::Msg(link, msg) => self.deliver_child_msg(link, &msg),
                }
            }
            match self.cpus.iter().position(|c| c.dirty.is_some()) {
                Some(cpu) => self.redecide(cpu),
                None => break,
            }
        }
        // A thread that moved to another CPU within this event leaves the
        // old one first: the platform never sees it on two CPUs at once.
        for cpu in 0..self.cpus.len() {
            let shown = self.cpus[cpu].shown;
            let migrates = shown.is_some_and(|t| {
                self.cpus
                    .iter()
                    .enumerate()
                    .any(|(other, c)| other != cpu && c.thread == Some(t) && c.shown != c.thread)
            });
            if migrates && self.cpus[cpu].thread != shown {
                self.cpus[cpu].shown = None;
                p.set_cpu(self.now, CpuId(cpu as u32), None);
            }
        }
        for (cpu, c) in self.cpus.iter_mut().enumerate() {
            if c.shown != c.thread {
                c.shown = c.thread;
                p.set_cpu(self.now, CpuId(cpu as u32), c.thread);
            }
        }
        if self.cfg.check_invariants {
            if let Err(e) = self.check_structure() {
                panic!("dispatcher invariant broken at {}: {e}", self.now);
            }
        }
    }

    // ----- accounting and decisions -------------------------------------------

    /// Ends the current run segment on `cpu`: charges every scheduler on the
    /// path, bottom-up.
    pub(crate) fn end_segment(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        let ran = self.now.saturating_since(c.since);
        c.since = self.now;
        if c.thread.is_none() || ran.is_zero() {
            return;
        }
        // By index, bottom-up: a charge may eject a scheduler and shorten
        // the path under us; what is left above is still valid.
        for k in (0..self.cpus[cpu].path.len()).rev() {
            let Some(hop) = self.cpus[cpu].path.get(k).copied() else {
                continue;
            };
            let Some(child) = hop.child else { continue };
            if self.inst(hop.sched).is_none() {
                continue;
            }
            self.nodes[hop.sched.index()].received += ran;
            self.call(hop.sched, |p, cx| p.charge(cx, child, ran));
        }
    }

    /// Marks whatever `hop` gave its CPU to as no longer running there.
    fn stop_child(&mut self, hop: Hop) {
        let Some(child) = hop.child else { return };
        let Some(kid) = self.inst_mut(hop.sched).and_then(|i| i.kid_mut(child)) else {
            return;
        };
        kid.running = None;
        if let ChildRef::Thread(t) = kid.what {
            self.set_thread_running(t, None);
        }
    }

    pub(crate) fn set_thread_running(&mut self, t: ThreadId, cpu: Option<CpuId>) {
        let thr = &mut self.threads[t.index()];
        if thr.running.is_some() && cpu.is_none() && thr.runnable {
            thr.waiting_since = self.now;
            thr.starving_reported = false;
        }
        thr.running = cpu;
    }

    /// Takes back the CPU from every grant below `depth` (bottom-up, each
    /// scheduler hearing `vp_revoke`) and leaves the grant at `depth` empty.
    pub(crate) fn unwind_below(&mut self, cpu: usize, depth: usize) {
        while self.cpus[cpu].path.len() > depth + 1 {
            let hop = self.cpus[cpu].path.pop().unwrap();
            self.stop_child(hop);
            if let Some(inst) = self.inst_mut(hop.sched) {
                inst.vps[hop.vp.index()] = VpState::Requesting;
                self.call(hop.sched, |s, cx| {
                    s.vp_revoke(cx, hop.vp, CpuId(cpu as u32))
                });
            }
            // The parent's grant to this VP ended too.
            let parent = self.cpus[cpu].path.last().copied();
            if let Some(parent) = parent {
                if let Some(kid) = parent
                    .child
                    .and_then(|c| self.inst_mut(parent.sched).and_then(|i| i.kid_mut(c)))
                {
                    kid.running = None;
                }
            }
        }
        if let Some(hop) = self.cpus[cpu].path.get(depth).copied() {
            self.stop_child(hop);
            self.cpus[cpu].path[depth].child = None;
        }
        self.cpus[cpu].thread = None;
    }

    /// Re-decides `cpu` from its dirty depth: takes the CPU back below it,
    /// then decides anew. What taking it back made the schedulers below ask
    /// their parents (a join whose child lost this CPU requests again from
    /// every parent) is heard before the decision: the CPU stays marked and
    /// `settle` delivers those notifications first. Deciding before them
    /// would decide on stale requests: a parent the join had just declined
    /// would hear the request only after this CPU went elsewhere, preempt
    /// for it, be declined again because the child runs here by then, and
    /// so on forever (a livelock of a join under two multi-VP parents).
    fn redecide(&mut self, cpu: usize) {
        let depth = self.cpus[cpu].dirty.take().unwrap();
        self.end_segment(cpu);
        if depth < self.cpus[cpu].path.len() {
            self.unwind_below(cpu, depth);
            if !self.notes.is_empty() {
                // Taking back again is a no-op (the path ends at `depth`),
                // so the next visit descends unless a note moved it up.
                self.mark_dirty(cpu, depth);
                return;
            }
            self.descend(cpu);
        }
        self.cpus[cpu].since = self.now;
        // A spin's horizon is exact; every other one waits for the tick.
        let c = &self.cpus[cpu];
        let last = c.path.len().wrapping_sub(1);
        let spin_hop = |i: usize, h: &Hop| c.spinning && i == last && h.child.is_none();
        let at = c
            .path
            .iter()
            .enumerate()
            .map(|(i, h)| {
                if spin_hop(i, h) {
                    h.until
                } else {
                    self.quantize(h.until)
                }
            })
            .min()
            .unwrap_or(Instant::NEVER);
        self.cpus[cpu].horizon_gen += 1;
        if !at.is_never() {
            let gen = self.cpus[cpu].horizon_gen;
            self.arm(
                at,
                TimerKind::Horizon {
                    cpu: cpu as u32,
                    gen,
                },
            );
        }
    }

    /// Asks the scheduler at the bottom of `cpu`'s path what to do with the
    /// CPU, and follows the answer down to a thread, an idle CPU, or back up
    /// (a `Release` hands the CPU to the parent, which decides instead).
    fn descend(&mut self, cpu: usize) {
        self.decisions += 1;
        self.cpus[cpu].spinning = false;
        let cpu_id = CpuId(cpu as u32);
        loop {
            let Some(&hop) = self.cpus[cpu].path.last() else {
                return;
            };
            let s = hop.sched;
            let Some(answer) = self.call(s, |p, cx| p.vp_grant(cx, hop.vp, cpu_id)) else {
                return; // ejected: the CPU was marked for re-decision above it
            };
            if self.cpus[cpu].path.last().map(|h| (h.sched, h.vp)) != Some((s, hop.vp)) {
                return; // the path changed under the callback (ejection below)
            }
            if let Err(why) = self.validate(s, answer) {
                self.eject(s, why);
                return;
            }
            let last = self.cpus[cpu].path.len() - 1;
            match answer {
                Dispatch::Run { child, until } => {
                    let inst = self.inst_mut(s).unwrap();
                    let kid = inst.kid_mut(child).unwrap();
                    kid.running = Some(cpu_id);
                    let what = kid.what;
                    self.cpus[cpu].path[last].child = Some(child);
                    self.cpus[cpu].path[last].until = until;
                    match what {
                        ChildRef::Thread(t) => {
                            self.cpus[cpu].thread = Some(t);
                            self.set_thread_running(t, Some(cpu_id));
                            return;
                        }
                        ChildRef::Vp(c, vp) => {
                            self.inst_mut(c).unwrap().vps[vp.index()] = VpState::Held(cpu_id);
                            self.cpus[cpu].path.push(Hop {
                                sched: c,
                                vp,
                                child: None,
                                until: Instant::NEVER,
                            });
                        }
                    }
                }
                Dispatch::Idle { until } | Dispatch::Spin { until } => {
                    self.cpus[cpu].path[last].child = None;
                    self.cpus[cpu].path[last].until = until;
                    self.cpus[cpu].spinning = matches!(answer, Dispatch::Spin { .. });
                    return;
                }
                Dispatch::Release if last == 0 => {
                    self.cpus[cpu].path[0].child = None;
                    self.cpus[cpu].path[0].until = Instant::NEVER;
                    return;
                }
                Dispatch::Release => {
                    self.cpus[cpu].path.pop();
                    self.inst_mut(s).unwrap().vps[hop.vp.index()] = VpState::Idle;
                    let parent = self.cpus[cpu].path[last - 1];
                    let pc = parent.child.expect("a non-root hop has a parent grant");
                    self.cpus[cpu].path[last - 1].child = None;
                    self.cpus[cpu].path[last - 1].until = Instant::NEVER;
                    let kid = self.inst_mut(parent.sched).unwrap().kid_mut(pc).unwrap();
                    kid.running = None;
                    kid.runnable = false;
                    if self
                        .call(parent.sched, |p, cx| p.vp_release(cx, pc))
                        .is_none()
                    {
                        return; // ejected: the CPU was marked for re-decision above it
                    }
                    // Loop: the parent decides for the CPU now.
                }
            }
        }
    }

    fn validate(&self, s: SchedId, answer: Dispatch) -> Result<(), String> {
        let inst = self.inst(s).unwrap();
        match answer {
            Dispatch::Run { child, until } => {
                let kid = inst
                    .kid(child)
                    .ok_or_else(|| format!("granted {child}, which is not its child"))?;
                if !kid.runnable {
                    return Err(format!("granted {child}, which did not request a CPU"));
                }
                if let Some(other) = kid.running {
                    return Err(format!(
                        "granted {child}, which is already running on {other}"
                    ));
                }
                if until <= self.now {
                    return Err(format!(
                        "answered a grant with a horizon in the past ({until})"
                    ));
                }
            }
            Dispatch::Idle { until } | Dispatch::Spin { until } => {
                if until <= self.now {
                    return Err(format!(
                        "answered a grant with a horizon in the past ({until})"
                    ));
                }
            }
            Dispatch::Release => {}
        }
        Ok(())
    }
}
