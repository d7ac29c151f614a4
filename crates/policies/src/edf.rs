//! `edf`: preemptive earliest deadline first, job by job.
//!
//! **Source.** Liu & Layland, "Scheduling Algorithms for Multiprogramming in
//! a Hard-Real-Time Environment" (JACM 1973), §7: the deadline-driven
//! scheduling algorithm, optimal on one processor: a set of periodic tasks
//! with deadlines at the period ends meets every deadline if and only if its
//! utilisation is at most 1. As a loadable scheduler in the HLS framework
//! (Regehr & Stankovic, "HLS", §5.1 and Table 1, where EDF-based
//! reservation schedulers give RESBH guarantees).
//!
//! **How it knows each job's absolute deadline.** The protocol tells a
//! scheduler when a child wants a CPU (`vp_request`), when it stops
//! (`vp_release`) and how long it ran (`charge`); it says nothing of jobs.
//! So each child attaches with its task parameters: `period` T, relative
//! `deadline` D (default T) and, optionally, `wcet` C. A periodic child's
//! release grid is anchored at the first time it asks for a CPU here (job
//! 0's release, `a`); job k is released at `a + k·T` and is due at
//! `a + k·T + D`.
//! - A child that wakes at time t starts job `k = ⌊(t − a)/T⌋` if that is
//!   later than the job it was in; otherwise it resumes the job it was in
//!   (it blocked inside a job: a mutex, a sleep in the body), which keeps
//!   its deadline and the CPU time it has used.
//! - A job that overruns does not block before its successor: the thread
//!   goes straight on to the next job, which the scheduler cannot see. With
//!   `wcet`, it counts completions by CPU time instead: once the current job
//!   has used C and the next release has passed, the job is complete and
//!   the child is in job k+1 (with its own deadline). Until then an
//!   overrunning job keeps its own, earlier deadline, as EDF wants. To see
//!   that moment, a run's horizon is the rest of the job's C (or, past C,
//!   the next release).
//! - Without `wcet`, job boundaries are seen only where the child blocks: a
//!   job that overruns lends its deadline to the jobs that follow it until
//!   the thread next blocks (they run too early, never too late).
//! - `period = 0` (the default): an aperiodic child; each wake-up is a job,
//!   due `deadline` later (or the scheduler's `deadline` if the child gives
//!   none).
//!
//! The simulator's `periodic` operation releases jobs on exactly this grid
//! (`start + offset + k·period`), so a thread whose program is one
//! `periodic` with `jobs` executing exactly `wcet` is scheduled job by job
//! as Liu & Layland's EDF (and as SimSo's `EDF_mono`: the cross-check test).
//!
//! **Algorithm.** Runnable children wait in one queue ordered by (absolute
//! deadline, activation order): ties go to the job that became ready first,
//! as in SimSo's EDF, whose ready list keeps activation order and takes the
//! first minimum; a preempted job keeps its place. Each decision runs the
//! head. A child that wakes with an earlier deadline than a running one
//! preempts it (on several CPUs, the running job with the latest deadline,
//! after idle CPUs are used: global EDF).
//!
//! **Guarantees.** Work conserving. On one CPU, with every child periodic
//! with a known `wcet` (C ≤ D ≤ T) and Σ C/D ≤ 1 (the density test; Σ C/T
//! ≤ 1 when D = T, Liu & Layland's exact condition), every job that runs no
//! more than C meets its deadline: each child receives RESBH C, T from an
//! ALL (the analysis rule, `hsched check`). No budget is enforced: a child
//! that runs past its `wcet` may make others miss.
//!
//! **Limits.** No admission control: an overloaded set is admitted and
//! misses deadlines (EDF's domino effect). On several CPUs it is global
//! EDF, which is not optimal there. A job that runs past its `wcet` and is
//! preempted waits under its own deadline until it is picked again, even if
//! the next release passes meanwhile (it may preempt a running child, then
//! yield to it once its next deadline is seen). The grid is anchored at the
//! first wake-up under this scheduler: a thread moved in mid-job starts its
//! grid there. Decisions cost O(log n).

use crate::preempt::Better;
use crate::ranked::{Place, RankedQueue};
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Scheduler, Value,
};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "edf",
    summary: "preemptive earliest deadline first, job by job (child `period`, `deadline`, `wcet`)",
    doc: "Runs the runnable children whose current jobs have the earliest absolute \
          deadlines. A child attaches with its task parameters: `period` (its jobs are \
          released every period from its first wake-up), relative `deadline` (default \
          the period) and `wcet`, which lets EDF see where an overrunning job ends and \
          the next begins (each job keeps its own deadline). Ties: the job ready \
          first. Preemptive, work conserving, global on several CPUs, O(log n). No \
          admission control. Liu & Layland 1973: with utilisation <= 1 every \
          deadline is met; `hsched check` gives each child RESBH wcet, period.",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

fn params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "deadline",
        ParamKind::Duration {
            min: Duration::from_nanos(1),
        },
        "relative deadline of a child that gives neither `period` nor `deadline`",
    )
    .with_default(Value::Duration(Duration::from_millis(10)))]
}

fn child_params() -> Vec<ParamSpec> {
    let duration = |name, doc| {
        ParamSpec::new(
            name,
            ParamKind::Duration {
                min: Duration::ZERO,
            },
            doc,
        )
        .with_default(Value::Duration(Duration::ZERO))
    };
    vec![
        duration(
            "period",
            "time between job releases; 0: aperiodic, each wake-up is a job",
        ),
        duration(
            "deadline",
            "relative deadline of each job; 0: the period (or the scheduler's `deadline`)",
        ),
        duration(
            "wcet",
            "CPU time of each job, to see where an overrunning job ends; 0: unknown",
        ),
    ]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let deadline = params
        .opt_duration("deadline")
        .unwrap_or(Duration::from_millis(10));
    if deadline.is_zero() {
        return Err("`deadline` must be longer than zero".into());
    }
    Ok(Box::new(Edf::new(deadline)))
}

/// Queue order: earliest absolute deadline, then activation order.
type Key = (Instant, u64);

/// A child's task parameters and where it is in its jobs.
#[derive(Clone, Copy, Debug)]
struct Child {
    /// 0: aperiodic.
    period: Duration,
    /// Relative deadline, > 0.
    relative: Duration,
    /// 0: unknown.
    wcet: Duration,
    /// Job 0's release (the first wake-up); `None` before it.
    anchor: Option<Instant>,
    /// Index of the current job (periodic children).
    job: u64,
    release: Instant,
    deadline: Instant,
    /// CPU time used by the current job.
    used: Duration,
    /// Activation order of the current job (tie-break).
    seq: u64,
    state: Place,
}

impl Child {
    fn key(&self) -> Key {
        (self.deadline, self.seq)
    }

    fn periodic(&self) -> bool {
        !self.period.is_zero()
    }

    /// Release of job `k` on the grid (saturating far in the future).
    fn release_of(&self, k: u64) -> Instant {
        let anchor = self.anchor.unwrap_or(Instant::ZERO);
        anchor.saturating_add(Duration(self.period.as_nanos().saturating_mul(k)))
    }
}

/// The EDF scheduler. See the module documentation.
#[derive(Debug)]
pub struct Edf {
    default_relative: Duration,
    children: ChildMap<Child>,
    ready: RankedQueue<Key>,
    next_seq: u64,
}

impl Edf {
    /// `default_relative`: the relative deadline of a child that gives
    /// neither a period nor a deadline.
    pub fn new(default_relative: Duration) -> Self {
        Edf {
            default_relative: default_relative.max(Duration(1)),
            children: ChildMap::new(),
            ready: RankedQueue::new(Better::Lower),
            next_seq: 0,
        }
    }

    /// The absolute deadline of `child`'s current job.
    pub fn deadline_of(&self, child: ChildId) -> Option<Instant> {
        self.children.get(child).map(|c| c.deadline)
    }

    /// The index of `child`'s current job (periodic children; 0 before it
    /// first woke).
    pub fn job_of(&self, child: ChildId) -> Option<u64> {
        self.children.get(child).map(|c| c.job)
    }

    /// `child` starts a new job released at `release`.
    fn new_job(&mut self, child: ChildId, release: Instant) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let c = &mut self.children[child];
        c.release = release;
        c.deadline = release.saturating_add(c.relative);
        c.used = Duration::ZERO;
        c.seq = seq;
    }

    /// A job that has used its `wcet` while the next release has passed is
    /// complete: the child, still runnable, is in the next job. Returns
    /// whether it moved on.
    fn complete_by_budget(&mut self, child: ChildId, now: Instant) -> bool {
        let c = &self.children[child];
        if !c.periodic() || c.wcet.is_zero() || c.used < c.wcet {
            return false;
        }
        let next = c.release_of(c.job + 1);
        if next > now {
            return false;
        }
        self.children[child].job += 1;
        self.new_job(child, next);
        true
    }

    fn enqueue(&mut self, child: ChildId) {
        let c = &mut self.children[child];
        self.ready.enqueue(child, c.key(), &mut c.state);
    }

    /// Whatever ran on `vp` stopped; a child still runnable waits again, in
    /// its next job if the one it ran is complete.
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        let Some(child) = self.ready.stop(vp) else {
            return;
        };
        if self.children[child].state != Place::Running(vp) {
            return;
        }
        self.complete_by_budget(child, now);
        self.enqueue(child);
    }

    /// `child` stopped being runnable (if it was).
    fn forget_runnable(&mut self, cx: &mut Cx, child: ChildId) {
        let c = &mut self.children[child];
        self.ready.forget(cx, c.key(), &mut c.state);
    }

    /// The horizon of a run of `child` from `now`: where its job's `wcet`
    /// runs out (past it, the next release), so that a job boundary that
    /// comes without a block is seen.
    fn horizon(&self, child: ChildId, now: Instant) -> Instant {
        let c = &self.children[child];
        if !c.periodic() || c.wcet.is_zero() {
            return Instant::NEVER;
        }
        if c.used < c.wcet {
            now.saturating_add(c.wcet.saturating_sub(c.used))
        } else {
            c.release_of(c.job + 1)
        }
    }
}

impl Scheduler for Edf {
    fn policy(&self) -> &'static str {
        "edf"
    }

    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let period = params.opt_duration("period").unwrap_or(Duration::ZERO);
        let deadline = params.opt_duration("deadline").unwrap_or(Duration::ZERO);
        let wcet = params.opt_duration("wcet").unwrap_or(Duration::ZERO);
        let relative = match (deadline.is_zero(), period.is_zero()) {
            (false, _) => deadline,
            (true, false) => period,
            (true, true) => self.default_relative,
        };
        self.children.insert(
            child,
            Child {
                period,
                relative,
                wcet,
                anchor: None,
                job: 0,
                release: Instant::ZERO,
                deadline: Instant::ZERO.saturating_add(relative),
                used: Duration::ZERO,
                seq: 0,
                state: Place::Idle,
            },
        );
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children.contains(child) {
            self.forget_runnable(cx, child);
            self.children.remove(child);
        }
    }

    /// A waking child starts a job (or resumes the one it blocked in), waits
    /// under that job's deadline and preempts a running child with a later
    /// one if no CPU is free.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let now = cx.now();
        let c = self.children[child];
        if c.state != Place::Idle {
            return;
        }
        match c.anchor {
            _ if !c.periodic() => self.new_job(child, now),
            None => {
                let c = &mut self.children[child];
                c.anchor = Some(now);
                c.job = 0;
                self.new_job(child, now);
            }
            Some(anchor) => {
                let k = now.saturating_since(anchor).as_nanos() / c.period.as_nanos();
                if k > c.job {
                    self.children[child].job = k;
                    let release = self.children[child].release_of(k);
                    self.new_job(child, release);
                }
            }
        }
        let c = &mut self.children[child];
        self.ready.wake(cx, child, c.key(), &mut c.state);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        self.forget_runnable(cx, child);
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.stop(vp, now);
        // A job that ran past its wcet and was preempted may have become
        // complete while it waited (the next release passed): it competes
        // with its next job's deadline.
        let child = loop {
            let Some((_, child)) = self.ready.pop_best() else {
                return Dispatch::Release;
            };
            if self.complete_by_budget(child, now) {
                self.enqueue(child);
                continue;
            }
            break child;
        };
        let until = self.horizon(child, now);
        let c = &mut self.children[child];
        self.ready.run(cx, vp, child, c.key(), &mut c.state);
        Dispatch::Run { child, until }
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
        self.ready.preempt_if_needed(cx);
    }

    fn charge(&mut self, _cx: &mut Cx, child: ChildId, ran: Duration) {
        if let Some(c) = self.children.get_mut(child) {
            c.used = c.used.saturating_add(ran);
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        for (child, c) in self.children.iter() {
            if c.relative.is_zero() {
                return Err(format!("{child} has a zero relative deadline"));
            }
            if c.deadline != c.release.saturating_add(c.relative) {
                return Err(format!(
                    "{child}: deadline {} is not release {} + {}",
                    c.deadline, c.release, c.relative
                ));
            }
            if c.periodic() && c.anchor.is_some() && c.release != c.release_of(c.job) {
                return Err(format!(
                    "{child}: job {} released at {}, off its grid",
                    c.job, c.release
                ));
            }
            if c.seq >= self.next_seq && c.anchor.is_some() {
                return Err(format!(
                    "{child} has activation number {} from the future",
                    c.seq
                ));
            }
        }
        let places = self.children.iter().map(|(id, c)| (id, c.state, c.key()));
        self.ready.check(places)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::{running_set_ends, strategy, Harness, Parent};

    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn task(period: u64, deadline: u64, wcet: u64) -> Params {
        Params::new()
            .with("period", Value::Duration(ms(period)))
            .with("deadline", Value::Duration(ms(deadline)))
            .with("wcet", Value::Duration(ms(wcet)))
    }

    fn harness(vps: u32, parent: Parent) -> Harness<Edf> {
        Harness::new(Box::new(Edf::new(ms(10))), vps, parent)
    }

    proptest! {
        #[test]
        fn random_protocol_runs_keep_the_rules(
            vps in 1u32..4,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..150),
        ) {
            let mut h = harness(vps, parent);
            let params = vec![
                task(10, 10, 3),
                task(7, 5, 0),
                Params::new(),
                task(25, 0, 20),
            ];
            for step in steps {
                h.step(step, &params);
                if parent == Parent::Manual {
                    continue;
                }
                h.assert_work_conserving();
                // No waiting job is due before a running one.
                let (latest_running, earliest_waiting) =
                    running_set_ends(&h, Better::Lower, |s, c| s.deadline_of(c).unwrap());
                if let (Some(run), Some(wait)) = (latest_running, earliest_waiting) {
                    prop_assert!(wait >= run, "waiting deadline {} < running {} after {:?}", wait, run, step);
                }
            }
        }
    }
}
