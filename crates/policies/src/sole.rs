//! The one child of a scheduler that schedules exactly one (`join`,
//! `limit`): which child it is, whether it wants a CPU, and its run (what
//! the policy keeps of it: the VP, the budget behind its horizon).
//!
//! The protocol's bookkeeping for such a child is the same in every such
//! policy: a second child is refused; a child that leaves or stops wanting
//! a CPU takes every request with it (`want_cpus(0)`); callbacks about any
//! other child are ignored. What the policy does with the CPUs is its own.

use hsched_core::{ChildId, Cx, ParentVp, Reject};

/// The child, whether it is runnable, and its run (`R`).
#[derive(Clone, Copy, Debug)]
pub struct SoleChild<R> {
    child: Option<ChildId>,
    runnable: bool,
    run: Option<R>,
}

impl<R> Default for SoleChild<R> {
    fn default() -> Self {
        SoleChild {
            child: None,
            runnable: false,
            run: None,
        }
    }
}

impl<R: Copy> SoleChild<R> {
    /// The child, once registered.
    pub fn id(&self) -> Option<ChildId> {
        self.child
    }

    /// Whether `child` is this one.
    pub fn is(&self, child: ChildId) -> bool {
        self.child == Some(child)
    }

    /// The child wants a CPU.
    pub fn runnable(&self) -> bool {
        self.runnable
    }

    /// Its run, while it runs.
    pub fn run(&self) -> Option<R> {
        self.run
    }

    /// It runs now (`run` describes where and how).
    pub fn start(&mut self, run: R) {
        self.run = Some(run);
    }

    /// Its run ended (the decision on its VP ended, or the CPU was taken).
    pub fn stop(&mut self) -> Option<R> {
        self.run.take()
    }

    /// `child` attaches; `policy` (its name) refuses a second one.
    pub fn register(&mut self, policy: &str, child: ChildId) -> Result<(), Reject> {
        if let Some(existing) = self.child {
            return Err(Reject(format!(
                "{policy} schedules exactly one child and already has {existing}"
            )));
        }
        *self = SoleChild {
            child: Some(child),
            ..SoleChild::default()
        };
        Ok(())
    }

    /// `child` leaves: if it wanted a CPU, the policy wants none now.
    pub fn unregister(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.is(child) {
            return;
        }
        let was_runnable = self.runnable;
        *self = SoleChild::default();
        if was_runnable {
            cx.want_cpus(0);
        }
    }

    /// `child` asks for a CPU: whether it became runnable now (it is ours
    /// and was not).
    pub fn request(&mut self, child: ChildId) -> bool {
        if !self.is(child) || self.runnable {
            return false;
        }
        self.runnable = true;
        true
    }

    /// `child` no longer wants a CPU: the policy wants none. The VP it ran
    /// on is re-decided next, and handed back by the policy's `vp_grant`.
    pub fn release(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.is(child) || !self.runnable {
            return;
        }
        self.runnable = false;
        self.run = None;
        cx.want_cpus(0);
    }

    /// Runnable only with a child; running only while runnable (`vp_of`
    /// says where a run is).
    pub fn check(&self, vp_of: impl Fn(&R) -> ParentVp) -> Result<(), String> {
        if self.runnable && self.child.is_none() {
            return Err("runnable without a child".into());
        }
        if let Some(run) = &self.run {
            if !self.runnable {
                return Err(format!(
                    "the child runs on {} but does not want a CPU",
                    vp_of(run)
                ));
            }
        }
        Ok(())
    }
}
