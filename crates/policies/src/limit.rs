//! `limit`: the HLS limit scheduler (at most `budget` per `period`).
//!
//! **Source.** Regehr & Stankovic, "HLS: A Framework for Composing Soft
//! Real-Time Schedulers", §4 and §5.1 ("Limit"): "Limit schedulers can be
//! used to convert a soft guarantee into a hard one. A limit scheduler ...
//! keep(s) track of the amount of CPU time that it has allocated to its
//! (single) child virtual processor during each period. However, when its
//! child is about to receive more than the guaranteed amount, it releases
//! the processor and does not request it again until the start of the next
//! period."
//!
//! **Algorithm.** One child; parameters `budget` (x) and `period` (y),
//! `0 < x <= y`. Periods are aligned to the instance's creation: period `k`
//! is `[t0 + k*y, t0 + (k+1)*y)` where `t0` is the time of `init`. The CPU
//! time the child receives is counted per period from `charge` (a run
//! segment that crosses a period boundary is split at the boundary). A
//! grant runs the child until `now + (x - used)`, so it cannot exceed the
//! budget; when the budget is spent it answers `Release`, stops requesting,
//! and sets a timer for the next period boundary, where it requests again
//! if the child is runnable.
//!
//! **Guarantees.** Without a platform tick, the child receives at most `x`
//! in every period `[t0 + k*y, t0 + (k+1)*y)`. With a tick, a horizon takes
//! effect at the first tick at or after it, so one segment may overrun by
//! up to a tick; the overrun is carried as a debt into the next period, so
//! the child gets at most `x + tick` in any one period and at most `x` per
//! period on average over any run of whole periods (plus at most one tick).
//! Given a soft reservation (x, y) from its parent, the child gets the hard
//! reservation (x, y) when the periods are aligned with the parent's (§5.1).
//! Work conserving within the budget: while budget is left and the child is
//! runnable, it asks for a CPU.
//!
//! **Limits.** One child. It only caps: the CPU itself comes from the parent,
//! so what the child gets below `x` depends on the parent's guarantee. The
//! period alignment is fixed at creation. O(1) per callback.

use crate::sole::SoleChild;
use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params, ParentVp,
    PolicyInfo, Reject, Scheduler, TimerKey,
};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "limit",
    summary: "caps its one child at `budget` CPU time per `period`",
    doc: "The HLS limit scheduler (Regehr & Stankovic, sections 4 and 5.1): one \
          child, which gets at most `budget` of CPU time in every `period` \
          (periods aligned to the instance's creation). Runs the child only up to \
          the budget left; when it is spent, releases the CPU until the next \
          period. Turns a soft reservation from its parent into a hard one. With \
          a platform tick a segment may overrun by a tick; the overrun is taken \
          from the next period.",
    params,
    child_params: no_params,
    build,
    max_parents: 1,
    max_children: 1,
};

fn params() -> Vec<ParamSpec> {
    let positive = ParamKind::Duration {
        min: Duration::from_nanos(1),
    };
    vec![
        ParamSpec::new(
            "budget",
            positive,
            "CPU time the child may use per period (x)",
        ),
        ParamSpec::new("period", positive, "the period (y), at least `budget`"),
    ]
}

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Limit::new(params.duration("budget"), params.duration("period"))
        .map(|l| Box::new(l) as Box<dyn Scheduler>)
}

/// The timer that marks the next period boundary.
pub const PERIOD_TIMER: TimerKey = 0;

/// The running child and the budget arithmetic behind its horizon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    vp: ParentVp,
    /// What the current period had used when the child was dispatched.
    used_at_start: Duration,
    start: Instant,
    until: Instant,
}

/// The limit scheduler. See the module documentation.
#[derive(Debug)]
pub struct Limit {
    budget: Duration,
    period: Duration,
    /// `init` time: period boundaries are `origin + k * period`.
    origin: Instant,
    period_start: Instant,
    /// CPU time charged to the current period, including a debt carried
    /// from an overrun (tick) in the previous one. May exceed `budget` only
    /// by such an overrun.
    used: Duration,
    /// The child, and its run.
    child: SoleChild<Run>,
}

impl Limit {
    /// A limit of `budget` per `period`; `0 < budget <= period`.
    pub fn new(budget: Duration, period: Duration) -> Result<Self, String> {
        if budget.is_zero() || period.is_zero() {
            return Err("`budget` and `period` must be longer than zero".into());
        }
        if budget > period {
            return Err(format!(
                "`budget` ({budget}) must not exceed `period` ({period}): a child cannot use \
                 more than one CPU's worth of time"
            ));
        }
        Ok(Limit {
            budget,
            period,
            origin: Instant::ZERO,
            period_start: Instant::ZERO,
            used: Duration::ZERO,
            child: SoleChild::default(),
        })
    }

    /// CPU time left in the current period, as of the last event.
    pub fn remaining(&self) -> Duration {
        self.budget.saturating_sub(self.used)
    }

    /// The start of the current period, as of the last event.
    pub fn period_start(&self) -> Instant {
        self.period_start
    }

    fn next_boundary(&self) -> Instant {
        self.period_start.saturating_add(self.period)
    }

    /// Moves to the period that contains `now`. What was used beyond the
    /// budget (an overrun past a horizon, with a tick) is a debt that each
    /// period passed since pays `budget` of.
    fn roll(&mut self, now: Instant) {
        if now < self.next_boundary() {
            return;
        }
        let periods = (now - self.period_start).as_nanos() / self.period.as_nanos();
        self.period_start = self
            .period_start
            .saturating_add(Duration(periods.saturating_mul(self.period.as_nanos())));
        self.used = self
            .used
            .saturating_sub(Duration(periods.saturating_mul(self.budget.as_nanos())));
    }

    /// Budget is spent: ask for nothing, wake up at the next boundary.
    fn wait_for_next_period(&mut self, cx: &mut Cx) {
        cx.want_cpus(0);
        cx.set_timer(PERIOD_TIMER, self.next_boundary());
    }
}

impl Scheduler for Limit {
    fn policy(&self) -> &'static str {
        "limit"
    }

    /// Periods are aligned to this moment.
    fn init(&mut self, cx: &mut Cx) {
        self.origin = cx.now();
        self.period_start = cx.now();
        self.used = Duration::ZERO;
    }

    fn register_vp(
        &mut self,
        _cx: &mut Cx,
        child: ChildId,
        _params: &Params,
    ) -> Result<(), Reject> {
        self.child.register("limit", child)
    }

    /// The budget stays with the instance: a child that leaves and comes
    /// back (or a new child) cannot get more than `budget` in one period.
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        self.child.unregister(cx, child);
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.child.request(child) {
            return;
        }
        self.roll(cx.now());
        if self.remaining().is_zero() {
            self.wait_for_next_period(cx);
        } else {
            cx.want_cpus(1);
        }
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        self.child.release(cx, child);
    }

    /// Runs the child for at most the budget left in this period; with none
    /// left, hands the CPU back until the next period.
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        if self.child.run().is_some_and(|r| r.vp == vp) {
            self.child.stop();
        }
        let Some(child) = self.child.id() else {
            return Dispatch::Release;
        };
        if !self.child.runnable() || self.child.run().is_some() {
            // (Not rolling the period here while the child runs elsewhere
            // keeps its segment's charge in the period it started in.)
            return Dispatch::Release;
        }
        self.roll(now);
        let remaining = self.remaining();
        if remaining.is_zero() {
            self.wait_for_next_period(cx);
            return Dispatch::Release;
        }
        let until = now.saturating_add(remaining);
        self.child.start(Run {
            vp,
            used_at_start: self.used,
            start: now,
            until,
        });
        Dispatch::Run { child, until }
    }

    /// The parent took the CPU back; the VP stays requesting, which is right
    /// unless the budget is gone meanwhile.
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        if self.child.run().is_some_and(|r| r.vp == vp) {
            self.child.stop();
        }
        self.roll(cx.now());
        if self.child.runnable() && self.child.run().is_none() && self.remaining().is_zero() {
            self.wait_for_next_period(cx);
        }
    }

    /// Counts the segment `[now - ran, now)` against the period(s) it lies
    /// in: the part before the current period's end to this period, the
    /// rest to the period that contains `now`.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        if !self.child.is(child) {
            return;
        }
        let now = cx.now();
        let boundary = self.next_boundary();
        if now <= boundary {
            self.used += ran;
            return;
        }
        let start = Instant(now.as_nanos().saturating_sub(ran.as_nanos()));
        let before = boundary.saturating_since(start).min(ran);
        self.used += before;
        self.roll(now);
        // Whole periods skipped by one segment (only after a very long
        // overrun) are counted against this one: that errs on the safe side.
        self.used += ran - before;
    }

    /// A period boundary: fresh budget. Ask for a CPU if the child waits.
    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        if key != PERIOD_TIMER || self.child.run().is_some() {
            return;
        }
        self.roll(cx.now());
        if self.child.runnable() && self.child.run().is_none() {
            if self.remaining().is_zero() {
                // A debt from an overrun ate this period's budget too.
                self.wait_for_next_period(cx);
            } else {
                cx.want_cpus(1);
            }
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.budget.is_zero() || self.budget > self.period {
            return Err(format!(
                "budget {} does not fit period {}",
                self.budget, self.period
            ));
        }
        if self.period_start < self.origin
            || (self.period_start - self.origin).as_nanos() % self.period.as_nanos() != 0
        {
            return Err(format!(
                "period start {} is not aligned to {} + k * {}",
                self.period_start, self.origin, self.period
            ));
        }
        self.child.check(|run| run.vp)?;
        if let Some(run) = self.child.run() {
            // The decision itself never plans past the budget.
            let within = match run
                .used_at_start
                .checked_add(run.until.saturating_since(run.start))
            {
                Some(planned) => planned <= self.budget,
                None => false,
            };
            if !within {
                return Err(format!(
                    "the child was dispatched at {} with {} used, until {}: beyond the budget {}",
                    run.start, run.used_at_start, run.until, self.budget
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::{strategy, usage_per_period, Harness, Parent, Step};

    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn at(n: u64) -> Instant {
        Instant(ms(n).as_nanos())
    }

    proptest! {
        /// Whatever the child and the parent do, the child never gets more
        /// than the budget in any aligned period.
        #[test]
        fn never_exceeds_the_budget(
            x in 1u64..20,
            extra in 0u64..30,
            start in 0u64..50,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..200),
        ) {
            let (budget, period) = (ms(x), ms(x + extra));
            let origin = at(start);
            let mut h = Harness::new_at(
                Box::new(Limit::new(budget, period).unwrap()), 1, parent, origin);
            for step in steps {
                h.step(step, &[Params::new()]);
                prop_assert!(h.running_count() <= 1);
                if parent != Parent::Manual && h.sched().remaining() > Duration::ZERO {
                    // Within the budget, a parent that grants runs the child.
                    h.assert_work_conserving();
                }
            }
            h.step(Step::Advance(1_000_000), &[]);
            for (k, u) in usage_per_period(h.segments(), origin, period).into_iter().enumerate() {
                prop_assert!(u <= budget.as_nanos(), "period {}: {}ns > {}", k, u, budget);
            }
        }
    }
}
