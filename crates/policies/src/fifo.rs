//! `fifo`: first come, first served, run to block. The template policy.
//!
//! **Source.** The simplest scheduler a hierarchy can load, modelled on the
//! FIFO mode of `sched_ext`'s `scx_simple` and on `scx_rlfifo`; the protocol
//! is HLS's (Regehr & Stankovic, "HLS: A Framework for Composing Soft
//! Real-Time Schedulers", §3, Table 3) with Vassal's delegation.
//!
//! **Algorithm.** Children that request a CPU wait in one queue in the order
//! they asked. Whenever one of this scheduler's CPUs needs a decision, the
//! child at the head runs, with no time horizon, until it blocks (releases),
//! leaves, or the parent takes the CPU back. A child whose CPU was taken by
//! the parent was not done: it goes back to the *head* of the queue (as a
//! preempted POSIX `SCHED_FIFO` thread does). Nothing preempts a running
//! child from inside this scheduler. With several VPs (several CPUs at once)
//! the queue is global: each CPU takes the head.
//!
//! **Guarantees.** Work conserving: it asks its parent(s) for as many CPUs as
//! it has runnable children, and never leaves a held CPU idle while a child
//! waits. A child waits only behind children that asked before it (or were
//! preempted by the parent while running). It passes on no timing guarantee
//! of its own: one CPU-bound child keeps a CPU for as long as the parent
//! grants it.
//!
//! **Limits.** No time sharing (a CPU-bound child starves the ones behind it:
//! use `rr` for that), no priorities. Taking a *waiting* child out of the
//! queue (it releases or leaves before it ran) costs O(queue length); every
//! other operation is O(1).
//!
//! **How to read this file.** It is the tutorial for writing a policy
//! (`docs/writing-a-policy.md` walks through it): every callback says when
//! the dispatcher calls it and why it does what it does.

use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Instant, ParamSpec, Params, ParentVp, PolicyInfo,
    Reject, Scheduler,
};
use std::collections::VecDeque;

/// The registry entry: the name a hierarchy uses, the documentation shown by
/// `hsched policies`, the (empty) parameter lists, and how to build one.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "fifo",
    summary: "first come, first served; a child runs until it blocks",
    doc: "Children run in the order they became runnable, each until it blocks \
          (no time slices, no priorities). A child preempted by the parent goes \
          back to the head of the queue. Work conserving on any number of CPUs. \
          Modelled on sched_ext's scx_simple (FIFO mode) and scx_rlfifo. \
          Gives no timing guarantee: a CPU-bound child keeps its CPU.",
    params: no_params,
    child_params: no_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn build(_params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(Fifo::new()))
}

/// Where a registered child is. Every child is in exactly one state, which
/// is what makes the bookkeeping checkable (see `check_invariants`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Does not want a CPU.
    Idle,
    /// Wants a CPU and is in the queue.
    Waiting,
    /// Runs on the CPU held on this VP.
    Running(ParentVp),
}

/// The FIFO scheduler. See the module documentation.
#[derive(Debug, Default)]
pub struct Fifo {
    /// Per registered child. Ids are dense (the dispatcher hands out the
    /// lowest free one), so `ChildMap` keeps them in a `Vec` indexed by id.
    /// Callbacks use `self.children[child]`: the dispatcher only names
    /// registered children (a missing one panics, naming it).
    children: ChildMap<State>,
    /// The waiting children, head first. Holds exactly the `Waiting` ones.
    queue: VecDeque<ChildId>,
    /// Per VP: the child running on it. The inverse of `State::Running`,
    /// kept so that `vp_grant` finds in O(1) what stops on a VP.
    on_vp: Vec<Option<ChildId>>,
    /// Children that are `Waiting` or `Running`: how many CPUs we want.
    runnable: u32,
}

impl Fifo {
    pub fn new() -> Self {
        Fifo::default()
    }

    /// Whatever ran on `vp` has stopped (the CPU is being re-decided or was
    /// taken away). A child that still wants a CPU was not done: it goes
    /// back to the head, keeping its turn.
    fn stop(&mut self, vp: ParentVp) {
        if let Some(child) = self.on_vp.get_mut(vp.index()).and_then(Option::take) {
            let state = &mut self.children[child];
            if *state == State::Running(vp) {
                *state = State::Waiting;
                self.queue.push_front(child);
            }
        }
    }

    /// Takes a waiting child out of the queue (it released or left before it
    /// ran). Rare for threads, which only block while running; O(n).
    fn unqueue(&mut self, child: ChildId) {
        if let Some(pos) = self.queue.iter().position(|&c| c == child) {
            self.queue.remove(pos);
        }
    }

    /// A child stopped wanting a CPU, whatever its state was.
    fn forget_runnable(&mut self, child: ChildId, state: State) {
        match state {
            State::Idle => return,
            State::Waiting => self.unqueue(child),
            // Its CPU is re-decided by the `vp_grant` that follows; clearing
            // `on_vp` now means that grant will not requeue it.
            State::Running(vp) => self.on_vp[vp.index()] = None,
        }
        self.runnable -= 1;
    }
}

impl Scheduler for Fifo {
    fn policy(&self) -> &'static str {
        "fifo"
    }

    // `init` is not overridden: FIFO needs no timer and learns its VP count
    // from `cx` when it needs it.

    /// A new child. FIFO admits everyone (no guarantee to protect). The child
    /// starts idle; it asks for a CPU with `vp_request`.
    fn register_vp(
        &mut self,
        _cx: &mut Cx,
        child: ChildId,
        _params: &Params,
    ) -> Result<(), Reject> {
        self.children.insert(child, State::Idle);
        Ok(())
    }

    /// A child leaves. If it was waiting there is no `vp_release` first, so
    /// drop it from the queue here; if it was running, the `vp_grant` that
    /// follows re-decides its CPU.
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(state) = self.children.remove(child) else {
            return;
        };
        let was_runnable = state != State::Idle;
        self.forget_runnable(child, state);
        if was_runnable {
            cx.want_cpus(self.runnable);
        }
    }

    /// A child wants a CPU: it joins the tail of the queue. We do not choose
    /// here ("decide in one place"); we ask for one CPU per runnable child,
    /// and the dispatcher calls `vp_grant` when a CPU is ours (at the root:
    /// it wakes an idle CPU).
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let state = &mut self.children[child];
        if *state != State::Idle {
            return; // already runnable: nothing changes
        }
        *state = State::Waiting;
        self.queue.push_back(child);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
    }

    /// A child no longer wants a CPU. Asking for fewer CPUs releases the VPs
    /// that are only requesting; a VP that is held (the one this child ran
    /// on) is re-decided by the `vp_grant` that follows, which hands it back
    /// if nobody waits.
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        let state = std::mem::replace(&mut self.children[child], State::Idle);
        if state == State::Idle {
            return;
        }
        self.forget_runnable(child, state);
        cx.want_cpus(self.runnable);
    }

    /// The only place FIFO chooses. Called when the parent grants the CPU on
    /// `vp` and again whenever the decision on it ended, so first treat what
    /// ran there as stopped. Then run the head of the queue with no horizon,
    /// or decline the CPU if nobody waits (the parent gives it to someone
    /// else; `want_cpus` asks for it again when a child wakes).
    fn vp_grant(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
        }
        self.stop(vp);
        match self.queue.pop_front() {
            Some(child) => {
                self.children[child] = State::Running(vp);
                self.on_vp[vp.index()] = Some(child);
                Dispatch::Run {
                    child,
                    until: Instant::NEVER,
                }
            }
            None => Dispatch::Release,
        }
    }

    /// The parent took the CPU back. The child that ran there was preempted,
    /// not done: it returns to the head of the queue. The VP stays
    /// requesting, so the parent will grant it again; no effect needed.
    fn vp_revoke(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp);
    }

    // `charge`, `timer` and `msg` keep their defaults: FIFO does not account
    // time, sets no timers and understands no message.

    fn check_invariants(&self) -> Result<(), String> {
        let mut queued = ChildMap::new();
        for &child in &self.queue {
            match self.children.get(child) {
                Some(State::Waiting) => {}
                other => return Err(format!("{child} is queued but its state is {other:?}")),
            }
            if queued.insert(child, ()).is_some() {
                return Err(format!("{child} is queued twice"));
            }
        }
        let mut runnable = 0;
        for (child, state) in self.children.iter() {
            match state {
                State::Waiting => {
                    runnable += 1;
                    if !queued.contains(child) {
                        return Err(format!("{child} waits but is not queued"));
                    }
                }
                State::Running(vp) => {
                    runnable += 1;
                    if self.on_vp.get(vp.index()).copied().flatten() != Some(child) {
                        return Err(format!("{child} runs on {vp} but {vp} does not know it"));
                    }
                }
                State::Idle => {}
            }
        }
        for (v, on) in self.on_vp.iter().enumerate() {
            if let Some(child) = on {
                let vp = ParentVp(v as u32);
                if self.children.get(*child) != Some(&State::Running(vp)) {
                    return Err(format!("{vp} runs {child}, which is not running there"));
                }
            }
        }
        if runnable != self.runnable {
            return Err(format!(
                "runnable count is {} but {runnable} children are runnable",
                self.runnable
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

    fn harness(vps: u32, parent: Parent) -> Harness<Fifo> {
        Harness::new(Box::new(Fifo::new()), vps, parent)
    }

    proptest! {
        #[test]
        fn random_protocol_runs_keep_the_rules(
            vps in 1u32..4,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..120),
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
