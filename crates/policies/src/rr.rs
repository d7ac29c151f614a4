//! `rr`: round-robin time sharing with a fixed quantum.
//!
//! **Source.** Classic round robin, as POSIX `SCHED_RR` among equal
//! priorities; one of the time-sharing schedulers HLS composes (Regehr &
//! Stankovic, HLS, §4: the time-sharing scheduler gets the NULL guarantee
//! and passes NULL to its children). Protocol: HLS Table 3 with Vassal's
//! delegation, as for every policy here.
//!
//! **Algorithm.** Runnable children wait in one FIFO queue. A CPU that needs
//! a decision takes the head and runs it for what is left of its quantum
//! (horizon = now + slice left; a fresh slice is the `quantum` parameter).
//! When the slice is used up the child goes to the back of the queue with a
//! fresh slice. A waking child goes to the back with a fresh slice, and does
//! not preempt anyone. A child whose CPU the parent took back before its
//! slice ended goes to the *head* and keeps the rest of its slice (as Linux
//! does for `SCHED_RR`), so a parent that preempts often cannot make one
//! child get all of this scheduler's time. Slices are consumed by `charge`,
//! so they are exact to the nanosecond whatever the parent does.
//!
//! **Guarantees.** Work conserving on any number of CPUs (one CPU per
//! runnable child, up to the VPs it holds). With `n` runnable children
//! sharing `m` CPUs that the parent grants continuously, a waiting child is
//! dispatched within `ceil(n / m) * quantum` (plus the time its predecessors
//! were off the CPU for reasons of the parent); over a window in which the
//! same children stay runnable, the CPU time of any two differs by at most
//! one quantum (exactly equal over whole rounds with one CPU).
//!
//! **Limits.** No priorities, no weights (use `fp`, or a proportional-share
//! policy). A child that blocks just before its slice ends loses nothing and
//! gains nothing: it goes to the back on wake-up. Cost: O(1) per callback
//! (amortized): a child that leaves the queue without running leaves a stale
//! entry behind, skipped when it reaches the head and swept when stale
//! entries outnumber live ones.

use crate::params;
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, ParamSpec, Params, ParentVp,
    PolicyInfo, Reject, Scheduler,
};
use std::collections::VecDeque;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "rr",
    summary: "round-robin time sharing with a fixed quantum",
    doc: "Runnable children take turns, each running for `quantum` (default 10ms) \
          before going to the back of the queue. A waking child goes to the back \
          and preempts no one; a child preempted by the parent resumes first with \
          the rest of its slice. Work conserving on any number of CPUs; O(1) per \
          decision. Gives NULL (no timing guarantee) to its children, as the time \
          sharing scheduler of HLS (Regehr & Stankovic, section 4).",
    params,
    child_params: no_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// The quantum when none is given.
pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);

fn params() -> Vec<ParamSpec> {
    vec![params::positive_duration(
        "quantum",
        DEFAULT_QUANTUM,
        "how long a child runs before the next one's turn",
    )]
}

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    RoundRobin::new(params.duration("quantum")).map(|rr| Box::new(rr) as Box<dyn Scheduler>)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// In the queue; `ticket` tells its live entry from stale ones.
    Waiting {
        ticket: u64,
    },
    Running(ParentVp),
}

#[derive(Clone, Copy, Debug)]
struct Child {
    state: State,
    /// What is left of the current quantum; never zero while waiting.
    slice_left: Duration,
}

/// What runs on one VP, and until when it was told it could.
#[derive(Clone, Copy, Debug)]
struct Slot {
    child: ChildId,
    until: Instant,
}

/// The round-robin scheduler. See the module documentation.
#[derive(Debug)]
pub struct RoundRobin {
    quantum: Duration,
    children: ChildMap<Child>,
    /// Waiting children, head first, as `(child, ticket)`. An entry is live
    /// iff the child is `Waiting` with that ticket; tickets are never reused,
    /// so an entry left by a child that since left (or whose id was reused)
    /// can never look live again.
    queue: VecDeque<(ChildId, u64)>,
    next_ticket: u64,
    /// Live entries in `queue` (= children `Waiting`).
    waiting: usize,
    on_vp: Vec<Option<Slot>>,
    /// Children `Waiting` or `Running`.
    runnable: u32,
}

impl RoundRobin {
    /// A round-robin scheduler giving each child `quantum` per turn.
    pub fn new(quantum: Duration) -> Result<Self, String> {
        if quantum.is_zero() {
            return Err("`quantum` must be longer than zero".into());
        }
        Ok(RoundRobin {
            quantum,
            children: ChildMap::new(),
            queue: VecDeque::new(),
            next_ticket: 0,
            waiting: 0,
            on_vp: Vec::new(),
            runnable: 0,
        })
    }

    pub fn quantum(&self) -> Duration {
        self.quantum
    }

    fn is_live(&self, (child, ticket): (ChildId, u64)) -> bool {
        matches!(
            self.children.get(child),
            Some(Child { state: State::Waiting { ticket: t }, .. }) if *t == ticket
        )
    }

    fn enqueue(&mut self, child: ChildId, at_head: bool) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.children[child].state = State::Waiting { ticket };
        if at_head {
            self.queue.push_front((child, ticket));
        } else {
            self.queue.push_back((child, ticket));
        }
        self.waiting += 1;
    }

    /// The head of the queue, skipping stale entries.
    fn dequeue(&mut self) -> Option<ChildId> {
        while let Some(entry) = self.queue.pop_front() {
            if self.is_live(entry) {
                self.waiting -= 1;
                return Some(entry.0);
            }
        }
        None
    }

    /// A waiting child left the queue (its entry goes stale). Sweeping when
    /// stale entries outnumber live ones keeps the queue O(live) in size and
    /// every operation O(1) amortized.
    fn forget_waiting(&mut self) {
        self.waiting -= 1;
        if self.queue.len() > 64 && self.queue.len() > 2 * self.waiting {
            let queue = std::mem::take(&mut self.queue);
            self.queue = queue.into_iter().filter(|&e| self.is_live(e)).collect();
        }
    }

    /// Whatever ran on `vp` stopped. A child still runnable goes to the back
    /// with a fresh slice if its slice is used up (the horizon passed, or the
    /// charges say so), else to the head with the rest of it.
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        let Some(slot) = self.on_vp.get_mut(vp.index()).and_then(Option::take) else {
            return;
        };
        let child = &mut self.children[slot.child];
        if child.state != State::Running(vp) {
            return;
        }
        let used_up = child.slice_left.is_zero() || now >= slot.until;
        if used_up {
            child.slice_left = self.quantum;
        }
        self.enqueue(slot.child, !used_up);
    }

    /// A child stopped being runnable, whatever its state was.
    fn forget_runnable(&mut self, state: State) {
        match state {
            State::Idle => return,
            State::Waiting { .. } => self.forget_waiting(),
            State::Running(vp) => self.on_vp[vp.index()] = None,
        }
        self.runnable -= 1;
    }
}

impl Scheduler for RoundRobin {
    fn policy(&self) -> &'static str {
        "rr"
    }

    fn register_vp(
        &mut self,
        _cx: &mut Cx,
        child: ChildId,
        _params: &Params,
    ) -> Result<(), Reject> {
        let c = Child {
            state: State::Idle,
            slice_left: self.quantum,
        };
        self.children.insert(child, c);
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(c) = self.children.remove(child) else {
            return;
        };
        if c.state != State::Idle {
            self.forget_runnable(c.state);
            cx.want_cpus(self.runnable);
        }
    }

    /// A waking child goes to the back with a fresh slice and preempts no
    /// one: it is dispatched when a CPU comes free or a slice ends.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        c.slice_left = self.quantum;
        self.enqueue(child, false);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        let state = std::mem::replace(&mut self.children[child].state, State::Idle);
        if state != State::Idle {
            self.forget_runnable(state);
            cx.want_cpus(self.runnable);
        }
    }

    /// Runs the head of the queue for the rest of its slice, or declines the
    /// CPU when nobody waits.
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
        }
        self.stop(vp, now);
        let Some(child) = self.dequeue() else {
            return Dispatch::Release;
        };
        let c = &mut self.children[child];
        c.state = State::Running(vp);
        let until = now.saturating_add(c.slice_left);
        self.on_vp[vp.index()] = Some(Slot { child, until });
        Dispatch::Run { child, until }
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
    }

    /// Slices are consumed by what the child really ran, not by wall time,
    /// so a segment cut short by the parent costs only what it used.
    fn charge(&mut self, _cx: &mut Cx, child: ChildId, ran: Duration) {
        if let Some(c) = self.children.get_mut(child) {
            c.slice_left = c.slice_left.saturating_sub(ran);
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        let mut live_entries = ChildMap::new();
        for &entry in &self.queue {
            if self.is_live(entry) {
                let seen = live_entries.get(entry.0).copied().unwrap_or(0u32);
                live_entries.insert(entry.0, seen + 1);
            }
        }
        let (mut waiting, mut runnable) = (0, 0);
        for (child, c) in self.children.iter() {
            if c.slice_left > self.quantum {
                return Err(format!("{child} has a slice of {} > quantum", c.slice_left));
            }
            match c.state {
                State::Idle => {}
                State::Waiting { .. } => {
                    waiting += 1;
                    runnable += 1;
                    let entries = live_entries.get(child).copied().unwrap_or(0);
                    if entries != 1 {
                        return Err(format!("{child} waits with {entries} queue entries"));
                    }
                    if c.slice_left.is_zero() {
                        return Err(format!("{child} waits with an empty slice"));
                    }
                }
                State::Running(vp) => {
                    runnable += 1;
                    if self
                        .on_vp
                        .get(vp.index())
                        .copied()
                        .flatten()
                        .map(|s| s.child)
                        != Some(child)
                    {
                        return Err(format!("{child} runs on {vp} but {vp} does not know it"));
                    }
                }
            }
        }
        for (v, slot) in self.on_vp.iter().enumerate() {
            if let Some(slot) = slot {
                let vp = ParentVp(v as u32);
                let state = self.children.get(slot.child).map(|c| c.state);
                if state != Some(State::Running(vp)) {
                    return Err(format!(
                        "{vp} runs {}, which is not running there",
                        slot.child
                    ));
                }
            }
        }
        if waiting != self.waiting || runnable != self.runnable {
            return Err(format!(
                "counts say {} waiting / {} runnable, states say {waiting} / {runnable}",
                self.waiting, self.runnable
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::{strategy, Harness, Parent};

    use proptest::prelude::*;

    const Q: Duration = Duration::from_millis(10);

    fn harness(vps: u32, parent: Parent) -> Harness<RoundRobin> {
        Harness::new(Box::new(RoundRobin::new(Q).unwrap()), vps, parent)
    }

    fn register(h: &mut Harness<RoundRobin>, n: usize) -> Vec<ChildId> {
        (0..n)
            .map(|_| h.register(&Params::new()).unwrap())
            .collect()
    }

    /// The sweep is private: the queue's length is not visible to the protocol.
    #[test]
    fn stale_queue_entries_are_swept() {
        let mut h = harness(1, Parent::Manual);
        let c = register(&mut h, 200);
        for _ in 0..10 {
            for &x in &c {
                h.wake(x);
            }
            for &x in &c {
                h.block(x);
            }
        }
        assert!(h.sched().queue.len() <= 200, "{}", h.sched().queue.len());
        h.wake(c[7]);
        h.grant(ParentVp(0));
        assert_eq!(h.running_on(ParentVp(0)), Some(c[7]));
    }

    proptest! {
        #[test]
        fn random_protocol_runs_keep_the_rules(
            vps in 1u32..4,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..150),
        ) {
            let mut h = harness(vps, parent);
            for step in steps {
                h.step(step, &[Params::new()]);
                if parent != Parent::Manual {
                    h.assert_work_conserving();
                }
            }
        }
    }
}
