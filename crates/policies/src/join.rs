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
//! **Overrun mode** (parameters `budget` and `period`, both non-zero): the
//! HLS paper's CPU service classes (§5.4, Fig. 4) join a thread's
//! reservation (the first parent) with an overrun scheduler OVR "which
//! schedules threads that have exhausted their reservation budgets". The
//! join then asks only its first parent until its child has received
//! `budget` from it in the current window of `period` (the reservation's
//! grid, from when the join was made, as `res` lays it out from admission),
//! and its other parents only from then to the window's end, when the child
//! goes back to its reservation (a CPU held from another parent is handed
//! back). A child that wakes in the middle of a window keeps at most
//! `budget * (time left) / period` of it, as `res`'s CBS rule does, so the
//! join's count matches the reservation's. Without it (the default) an
//! overrun scheduler could serve the child before its own reservation,
//! leaving the reservation unused.
//!
//! **Limits.** The child runs on one CPU at a time: the CPUs that parents
//! grant while it runs are handed back, not saved. A parent whose grant was
//! declined hears from the join again only when the child stops running
//! somewhere (or blocks and wakes). No parameters, no messages; O(1) per
//! callback except `want_cpus` over all VPs.

use crate::sole::SoleChild;
use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params, ParentVp,
    PolicyInfo, Reject, Scheduler, TimerKey, Value,
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
    params,
    child_params: no_params,
    build,
    max_parents: MAX_PARENTS,
    max_children: 1,
};

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn params() -> Vec<ParamSpec> {
    let any = ParamKind::Duration {
        min: Duration::ZERO,
    };
    vec![
        ParamSpec::new(
            "budget",
            any,
            "overrun mode: the reservation the first parent gives per `period`; the other parents are asked only once it is used up (0: off)",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "period",
            any,
            "overrun mode: the first parent's reservation period (0: off)",
        )
        .with_default(Value::Duration(Duration::ZERO)),
    ]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let (budget, period) = (params.duration("budget"), params.duration("period"));
    Join::with_overrun(budget, period).map(|j| Box::new(j) as Box<dyn Scheduler>)
}

/// The one timer: the end of the window in which the budget ran out.
const WINDOW_TIMER: TimerKey = 0;

/// Overrun mode's state: the first parent's budget, tracked per window.
#[derive(Clone, Copy, Debug)]
struct Overrun {
    budget: Duration,
    period: Duration,
    /// The start of the grid (when the join was made).
    origin: Option<Instant>,
    /// The end of the current window.
    window_end: Instant,
    /// Budget left in the current window.
    left: Duration,
}

impl Overrun {
    /// Moves to the window holding `now`, with a full budget if it is new.
    fn advance(&mut self, now: Instant) {
        let origin = *self.origin.get_or_insert(now);
        if now < self.window_end {
            return;
        }
        let p = self.period.as_nanos();
        let k = now.saturating_since(origin).as_nanos() / p;
        self.window_end = origin.saturating_add(Duration(k.saturating_add(1).saturating_mul(p)));
        self.left = self.budget;
    }

    fn exhausted(&self) -> bool {
        self.left.is_zero()
    }
}

/// The join scheduler. See the module documentation.
#[derive(Debug, Default)]
pub struct Join {
    /// The child, and the VP it runs on.
    child: SoleChild<ParentVp>,
    /// Overrun mode, if on.
    overrun: Option<Overrun>,
}

impl Join {
    pub fn new() -> Self {
        Join::default()
    }

    /// A join in overrun mode (`budget` of the first parent per `period`);
    /// both zero: a plain join.
    pub fn with_overrun(budget: Duration, period: Duration) -> Result<Self, String> {
        if budget.is_zero() && period.is_zero() {
            return Ok(Join::new());
        }
        if budget.is_zero() || period.is_zero() || budget > period {
            return Err(format!(
                "`budget` and `period` go together, with 0 < budget <= period (got budget {budget}, period {period})"
            ));
        }
        Ok(Join {
            overrun: Some(Overrun {
                budget,
                period,
                origin: None,
                window_end: Instant::ZERO,
                left: budget,
            }),
            ..Join::default()
        })
    }

    /// Whether the child may take a CPU from `vp` now: in overrun mode the
    /// parents after the first only once the budget is used up.
    fn may_use(&self, vp: ParentVp) -> bool {
        match &self.overrun {
            Some(o) if vp != ParentVp(0) => o.exhausted(),
            _ => true,
        }
    }

    /// Asks the parents the child may use now; lets the others go.
    fn ask(&self, cx: &mut Cx) {
        if !self.child.runnable() {
            cx.want_cpus(0);
            return;
        }
        if self.overrun.is_none() || self.may_use(ParentVp(1)) {
            cx.want_cpus(cx.vp_count());
            return;
        }
        cx.request(ParentVp(0));
        for v in 1..cx.vp_count() {
            cx.release(ParentVp(v));
        }
    }

    /// The VP the child runs on, if it runs.
    pub fn running_on(&self) -> Option<ParentVp> {
        self.child.run()
    }

    /// Overrun mode: the window changes with time; the budget runs out.
    fn advance(&mut self, cx: &mut Cx) {
        let now = cx.now();
        if let Some(o) = &mut self.overrun {
            let was = o.exhausted();
            o.advance(now);
            if was != o.exhausted() {
                self.ask(cx);
            }
        }
    }
}

impl Scheduler for Join {
    fn policy(&self) -> &'static str {
        "join"
    }

    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, _params: &Params) -> Result<(), Reject> {
        self.child.register("join", child)?;
        if let Some(o) = &mut self.overrun {
            o.advance(cx.now());
        }
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        self.child.unregister(cx, child);
    }

    /// Ask every parent: whichever grants first runs the child.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.child.request(child) {
            return;
        }
        let now = cx.now();
        if let Some(o) = &mut self.overrun {
            // As res's CBS rule: at most the budget's share of the rest.
            o.advance(now);
            let rest = o.window_end.saturating_since(now).as_nanos();
            let share = u128::from(o.budget.as_nanos()) * u128::from(rest)
                / u128::from(o.period.as_nanos());
            o.left = o.left.min(Duration(share as u64));
            if o.exhausted() {
                cx.set_timer(WINDOW_TIMER, o.window_end);
            }
        }
        self.ask(cx);
    }

    fn init(&mut self, cx: &mut Cx) {
        if let Some(o) = &mut self.overrun {
            o.advance(cx.now());
        }
    }

    /// Overrun mode: what the first parent gave counts against the budget.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        if !self.child.is(child) || self.child.run() != Some(ParentVp(0)) {
            return;
        }
        let now = cx.now();
        let Some(o) = &mut self.overrun else { return };
        if now > o.window_end {
            // Ran across a window's end (the parent should not let it):
            // only the part after the end counts, against the new window.
            let after = now.saturating_since(o.window_end).min(ran);
            o.advance(now);
            o.left = o.left.saturating_sub(after);
        } else {
            o.left = o.left.saturating_sub(ran);
        }
        if o.exhausted() {
            cx.set_timer(WINDOW_TIMER, o.window_end);
            self.ask(cx);
        }
    }

    /// The window of an exhausted budget ended: back to the reservation.
    fn timer(&mut self, cx: &mut Cx, _key: TimerKey) {
        self.advance(cx);
    }

    /// Nothing to run any more: stop asking everywhere. The VP the child ran
    /// on is re-decided next and handed back by `vp_grant`.
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        self.child.release(cx, child);
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        if self.child.run() == Some(vp) {
            self.child.stop(); // the decision on this VP ended
        }
        self.advance(cx);
        let free = self.child.runnable() && self.child.run().is_none();
        match self.child.id() {
            Some(child) if free && self.may_use(vp) => {
                self.child.start(vp);
                // No horizon of our own: the parent that granted bounds it.
                Dispatch::Run {
                    child,
                    until: Instant::NEVER,
                }
            }
            // Not runnable, already running on another parent's CPU, or (in
            // overrun mode) an overrun parent while the budget lasts: let
            // this parent give its CPU to someone else.
            _ => Dispatch::Release,
        }
    }

    /// The CPU the child ran on was taken back. The child still wants one:
    /// ask every parent again, including those whose grants were declined
    /// while it ran (their VPs went idle).
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        if self.child.run() == Some(vp) {
            self.child.stop();
            if self.child.runnable() {
                self.ask(cx);
            }
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.child.check(|&vp| vp)?;
        if let Some(o) = &self.overrun {
            if o.left > o.budget {
                return Err(format!(
                    "budget left {} above the budget {}",
                    o.left, o.budget
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::{strategy, Harness, Parent};

    use proptest::prelude::*;

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
