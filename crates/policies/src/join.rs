//! `join`: the HLS join scheduler (several parents, one child).
//!
//! **Source.** Regehr & Stankovic, "HLS: A Framework for Composing Soft
//! Real-Time Schedulers", §4 and §5.1 ("Join"): "the join scheduler ...
//! registers multiple virtual processors with its parents and schedules its
//! child VP any time any of the parents allocates a physical processor to
//! it. This allows the scheduling hierarchy to be generalized to a directed
//! acyclic graph." Its usual job is to direct idle time to a child that
//! also holds a reservation: join a reservation with a time-sharing (NULL)
//! parent.
//!
//! **Algorithm.** One VP per parent link (`max_parents` 64), exactly one
//! child. While the child is runnable and not running, every VP requests a
//! CPU. The first grant runs the child, with no horizon of its own (each
//! parent bounds its own grant). A grant on another VP while the child runs
//! is declined with `Release` (Vassal's delegation): that parent decides
//! for the CPU instead, and the VP goes idle. When the parent whose CPU the
//! child ran on takes it back, every VP requests again, so the parents that
//! were declined get their say again. When the child releases (blocks),
//! all VPs are released. The dispatcher delivers those requests before it
//! decides the CPU taken back; deciding it first (on requests a moment
//! old) livelocked a join under two parents holding two CPUs each: the
//! parents preempted for the requests arriving late, the join declined
//! again because the child had got the CPU back meanwhile, and so on.
//!
//! **Guarantees.** The child receives at least what any single parent
//! grants to its VP while the child is runnable and not already running:
//! a join never gives less than the guarantee of any one of its parents
//! (§5.1); it may give more, so a hard guarantee from a parent becomes the
//! corresponding soft one.
//!
//! **Limits.** The child runs on one CPU at a time: the CPUs that parents
//! grant while it runs are handed back, not saved. A parent whose grant was
//! declined hears from the join again only when the child stops running
//! somewhere (or blocks and wakes). No parameters, no messages; O(1) per
//! callback except `want_cpus` over all VPs.

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Instant, ParamSpec, Params, ParentVp, PolicyInfo, Reject,
    Scheduler,
};

/// How many parents a join may have.
pub const MAX_PARENTS: u32 = 64;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "join",
    summary: "runs its one child whenever any of its parents grants a CPU",
    doc: "The HLS join scheduler (Regehr & Stankovic, sections 4 and 5.1): one \
          VP per parent (up to 64), one child. While the child is runnable it \
          requests a CPU from every parent and runs on the first grant; a grant \
          that comes while the child already runs elsewhere is declined so that \
          parent decides instead. Turns the hierarchy into a DAG, typically to \
          give a reserved child the slack of a time-sharing parent. The child \
          gets at least any one parent's guarantee, as a soft guarantee.",
    params: no_params,
    child_params: no_params,
    build,
    max_parents: MAX_PARENTS,
    max_children: 1,
};

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn build(_params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(Join::new()))
}

/// The join scheduler. See the module documentation.
#[derive(Debug, Default)]
pub struct Join {
    child: Option<ChildId>,
    /// The child wants a CPU.
    runnable: bool,
    /// The VP the child runs on.
    running_on: Option<ParentVp>,
}

impl Join {
    pub fn new() -> Self {
        Join::default()
    }

    /// The VP the child runs on, if it runs.
    pub fn running_on(&self) -> Option<ParentVp> {
        self.running_on
    }

    fn is_our_child(&self, child: ChildId) -> bool {
        self.child == Some(child)
    }
}

impl Scheduler for Join {
    fn policy(&self) -> &'static str {
        "join"
    }

    fn register_vp(
        &mut self,
        _cx: &mut Cx,
        child: ChildId,
        _params: &Params,
    ) -> Result<(), Reject> {
        if let Some(existing) = self.child {
            return Err(Reject(format!(
                "join schedules exactly one child and already has {existing}"
            )));
        }
        self.child = Some(child);
        self.runnable = false;
        self.running_on = None;
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.is_our_child(child) {
            return;
        }
        let was_runnable = self.runnable;
        *self = Join::new();
        if was_runnable {
            cx.want_cpus(0);
        }
    }

    /// Ask every parent: whichever grants first runs the child.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.is_our_child(child) || self.runnable {
            return;
        }
        self.runnable = true;
        cx.want_cpus(cx.vp_count());
    }

    /// Nothing to run any more: stop asking everywhere. The VP the child ran
    /// on is re-decided next and handed back by `vp_grant`.
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.is_our_child(child) || !self.runnable {
            return;
        }
        self.runnable = false;
        self.running_on = None;
        cx.want_cpus(0);
    }

    fn vp_grant(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        if self.running_on == Some(vp) {
            self.running_on = None; // the decision on this VP ended
        }
        match self.child {
            Some(child) if self.runnable && self.running_on.is_none() => {
                self.running_on = Some(vp);
                // No horizon of our own: the parent that granted bounds it.
                Dispatch::Run {
                    child,
                    until: Instant::NEVER,
                }
            }
            // Not runnable, or already running on another parent's CPU: let
            // this parent give its CPU to someone else.
            _ => Dispatch::Release,
        }
    }

    /// The CPU the child ran on was taken back. The child still wants one:
    /// ask every parent again, including those whose grants were declined
    /// while it ran (their VPs went idle).
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        if self.running_on == Some(vp) {
            self.running_on = None;
            if self.runnable {
                cx.want_cpus(cx.vp_count());
            }
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.runnable && self.child.is_none() {
            return Err("runnable without a child".into());
        }
        if let Some(vp) = self.running_on {
            if !self.runnable {
                return Err(format!("the child runs on {vp} but does not want a CPU"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{strategy, Harness, Parent};
    use hsched_core::{Duration, Effect, VpState};
    use proptest::prelude::*;

    fn harness(vps: u32, parent: Parent) -> (Harness<Join>, ChildId) {
        let mut h = Harness::new(Box::new(Join::new()), vps, parent);
        let c = h.register(&Params::new()).unwrap();
        (h, c)
    }

    #[test]
    fn requests_every_parent_and_runs_on_the_first_grant() {
        let (mut h, c) = harness(3, Parent::Manual);
        h.take_effects();
        h.wake(c);
        assert_eq!(h.take_effects(), vec![Effect::WantCpus(3)]);
        for v in 0..3 {
            assert_eq!(h.vp_state(ParentVp(v)), VpState::Requesting);
        }
        h.grant(ParentVp(2));
        assert_eq!(h.running_on(ParentVp(2)), Some(c));
        assert_eq!(h.horizon(ParentVp(2)), Some(Instant::NEVER));
    }

    #[test]
    fn declines_a_grant_while_the_child_runs_elsewhere() {
        let (mut h, c) = harness(2, Parent::Manual);
        h.wake(c);
        h.grant(ParentVp(0));
        h.grant(ParentVp(1));
        let last = h.decisions().last().unwrap();
        assert_eq!((last.vp, last.dispatch), (ParentVp(1), Dispatch::Release));
        assert_eq!(h.vp_state(ParentVp(1)), VpState::Idle);
        assert_eq!(h.running_on(ParentVp(0)), Some(c));
    }

    #[test]
    fn asks_again_everywhere_when_its_cpu_is_taken() {
        let (mut h, c) = harness(2, Parent::Manual);
        h.wake(c);
        h.grant(ParentVp(0));
        h.grant(ParentVp(1)); // declined: VP 1 idles
        h.revoke(ParentVp(0));
        assert_eq!(h.vp_state(ParentVp(0)), VpState::Requesting);
        assert_eq!(h.vp_state(ParentVp(1)), VpState::Requesting);
        h.grant(ParentVp(1));
        assert_eq!(h.running_on(ParentVp(1)), Some(c));
    }

    #[test]
    fn releases_everything_when_the_child_blocks() {
        let (mut h, c) = harness(3, Parent::Manual);
        h.wake(c);
        h.grant(ParentVp(1));
        h.advance(Duration::from_millis(2));
        h.block(c);
        for v in 0..3 {
            assert_eq!(h.vp_state(ParentVp(v)), VpState::Idle, "vp{v}");
        }
        assert_eq!(h.cpu_time(c), Duration::from_millis(2));
        assert_eq!(h.decisions().last().unwrap().dispatch, Dispatch::Release);
    }

    #[test]
    fn takes_exactly_one_child() {
        let (mut h, c) = harness(2, Parent::Manual);
        let err = h.register(&Params::new()).unwrap_err();
        assert!(err.0.contains("exactly one child"), "{err}");
        h.unregister(c);
        assert!(
            h.register(&Params::new()).is_ok(),
            "the place is free again"
        );
    }

    proptest! {
        #[test]
        fn random_protocol_runs_keep_the_rules(
            vps in 1u32..5,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..150),
        ) {
            let mut h = Harness::new(Box::new(Join::new()), vps, parent);
            for step in steps {
                h.step(step, &[Params::new()]);
                if parent != Parent::Manual {
                    // Any parent that grants runs the child.
                    h.assert_work_conserving();
                }
                prop_assert!(h.running_count() <= 1);
            }
        }
    }
}
