//! `sfq`: start-time fair queuing with weights and HLS's warp extension.
//!
//! **Source.** Goyal, Guo & Vin, "A Hierarchical CPU Scheduler for
//! Multimedia Operating Systems" (OSDI '96), and Goyal, Vin & Cheng,
//! "Start-time Fair Queuing" (SIGCOMM '96): SFQ. Regehr & Stankovic, "HLS",
//! §5.1 ("Proportional Share"): the HLS PS scheduler is SFQ "with a warp
//! extension similar to the one in BVT; when the warp of all virtual
//! processors is zero, it behaves as an SFQ scheduler". The warp is BVT's
//! (Duda & Cheriton, "Borrowed-Virtual-Time scheduling", SOSP '99, §2.2):
//! an effective virtual time `E = A - W` while warp is on.
//!
//! **Algorithm.** Each child has a `weight` `w`, a start tag `S` and a
//! finish tag `F`. The scheduler keeps a virtual time `v`.
//! - A child that becomes runnable, and a runnable child whose run segment
//!   ended (its quantum), gets `S = max(v, F)`, then `F = S`.
//! - Running for `l` (each `charge`) advances `F` by `l / w`.
//! - `v` is the smallest start tag of the runnable children (on one CPU:
//!   the start tag of the child in service, as in SFQ), never decreasing;
//!   when no child is runnable it becomes the largest finish tag given so
//!   far (SFQ's rule at the end of a busy period).
//! - A CPU that needs a decision runs the waiting child with the smallest
//!   *effective* start tag `S - (warp_on ? warp : 0)` (ties: the earliest
//!   to queue) for at most `quantum`.
//! - A waking child whose warp is in effect (`warp_on` and `warp > 0`)
//!   preempts the running child with the largest effective tag if its own
//!   is smaller (BVT's "immediate dispatch"); so does a warp switched on
//!   for a waiting child, or off for a running one. Nothing else preempts:
//!   with every warp zero, quanta run to their end as in SFQ.
//!
//! Virtual time is exact integer arithmetic: tags are `u128` in units of
//! `1/VT_SCALE` ns of weight-1 service, with `VT_SCALE = 2^8 3^4 5^3 7 11 13`
//! (about 2.6e9), so `l * VT_SCALE / w` is exact for every weight that
//! divides it (1..=16, 18, 20, 24, 25, 100, 1000, ...). For other weights
//! the remainder is carried per child into the next charge, so the error
//! never accumulates: it stays below `1/VT_SCALE` ns at all times.
//!
//! **Child parameters.** `weight` (integer `1..=10^9`, default 1), `warp`
//! (a duration of virtual time, i.e. of weight-1 service, default 0),
//! `warp_on` (bool, default false). **Parameter.** `quantum` (default
//! 10ms): the longest a child runs before the next decision.
//!
//! **Message.** `warp { on = <bool> }` from a child (a thread attached
//! here, or a child scheduler through `Cx::msg_parent`) switches its own
//! warp on or off. Reply: `Ok { on, warp }`; errors name the argument.
//!
//! **Guarantees.** Work conserving. On one CPU, for any interval in which
//! children `i` and `j` are both runnable throughout and no warp is in
//! effect, `|W_i/w_i - W_j/w_j| <= l_i/w_i + l_j/w_j` where `W` is the
//! service received in the interval and `l` the longest run segment (at
//! most `quantum`; `quantum + tick` with a platform tick) (SFQ's fairness
//! theorem). It holds whatever capacity the parent grants, so, as HLS §5.1
//! argues after Goyal et al., SFQ turns a `PS` guarantee into `PS_T` and
//! passes a PSBE (fluctuation-constrained) guarantee through: if its CPU is
//! FC with rate `s` and burstiness `δ`, child `i` with share
//! `r_i = w_i / Σw` is FC with rate `r_i s` and burstiness
//! `r_i δ + r_i Σ_j l_j + l_i` (Goyal et al., Theorem 4). A warp borrows:
//! the tag of a warped child still advances by its service over its
//! weight, so over any interval it gets at most `warp * w` more than the
//! same child unwarped would (BVT §2.2): immediate dispatch, no long-term
//! gain.
//!
//! **Limits.** The fairness bound is for one CPU. With several VPs every
//! CPU takes the smallest effective tag (global SFQ); a child uses one CPU
//! at a time, so weights asking for more than `1/m` of `m` CPUs cannot be
//! honoured and no bound is claimed. No warp time limit `L` or unwarp time
//! `U` (BVT §2.2): a warped CPU-bound child is held back only by its tag.
//! An unwarped wake-up waits for running quanta to end (up to `quantum`).
//! Cost: O(log n) per decision, wake-up, release and charge; a preemption
//! also scans the VPs, O(vps).

use crate::params;
use crate::preempt::{Better, RunningSlots};
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Msg, ParamKind, ParamSpec, Params, ParentVp,
    PolicyInfo, Reject, Reply, Scheduler, Sender, Value,
};
use std::collections::BTreeSet;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "sfq",
    summary: "start-time fair queuing with weights and an optional BVT-style warp",
    doc: "Start-time fair queuing (Goyal, Guo & Vin 1996), the HLS proportional-share \
          scheduler (Regehr & Stankovic, section 5.1): each child gets CPU in proportion \
          to its `weight`; the waiting child with the smallest start tag runs for at most \
          `quantum`. On one CPU two always-runnable children stay within \
          l_i/w_i + l_j/w_j of their fair shares; a PSBE guarantee passes through. A child \
          with `warp_on` is ordered `warp` earlier in virtual time and preempts on wake-up \
          (BVT's warp, without its time limits); message `warp { on }` toggles it. \
          Work conserving; global SFQ on several CPUs (no bound claimed there).",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// Virtual-time units per nanosecond of weight-1 service:
/// `2^8 * 3^4 * 5^3 * 7 * 11 * 13`, so that service divides exactly by most
/// weights people use (see the module documentation).
pub const VT_SCALE: u128 = 2_594_592_000;

/// The largest `weight`.
pub const WEIGHT_MAX: i64 = 1_000_000_000;

/// The default quantum.
pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);

fn params() -> Vec<ParamSpec> {
    vec![params::positive_duration(
        "quantum",
        DEFAULT_QUANTUM,
        "the longest a child runs before the next decision",
    )]
}

fn child_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "weight",
            ParamKind::Int {
                min: 1,
                max: WEIGHT_MAX,
            },
            "share of the CPU, relative to the other children's weights",
        )
        .with_default(Value::Int(1)),
        ParamSpec::new(
            "warp",
            ParamKind::Duration {
                min: Duration::ZERO,
            },
            "how far back in virtual time (weight-1 service) the child is ordered while warped",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "warp_on",
            ParamKind::Bool,
            "whether the warp is in effect (message `warp { on }` changes it)",
        )
        .with_default(Value::Bool(false)),
    ]
}

fn warp_msg_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "on",
        ParamKind::Bool,
        "warp on (true) or off",
    )]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Sfq::new(params.duration("quantum")).map(|s| Box::new(s) as Box<dyn Scheduler>)
}

/// A virtual time or tag, in `1/VT_SCALE` ns of weight-1 service.
pub type Tag = u128;
/// An effective tag: a start tag minus the warp in effect (may be negative).
type Eff = i128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// In `ready` under `(eff, seq, child)`.
    Waiting {
        seq: u64,
    },
    Running(ParentVp),
}

#[derive(Clone, Copy, Debug)]
struct Child {
    weight: u64,
    /// Scaled warp.
    warp: Tag,
    warp_on: bool,
    start: Tag,
    finish: Tag,
    /// `(service * VT_SCALE) mod weight` not yet turned into tag.
    rem: u64,
    state: State,
}

impl Child {
    fn eff(&self) -> Eff {
        let warp = if self.warp_on { self.warp } else { 0 };
        self.start as Eff - warp as Eff
    }
    fn warped(&self) -> bool {
        self.warp_on && self.warp > 0
    }
}

/// The SFQ scheduler. See the module documentation.
#[derive(Debug)]
pub struct Sfq {
    quantum: Duration,
    children: ChildMap<Child>,
    /// Waiting children by (effective start tag, queue order).
    ready: BTreeSet<(Eff, u64, ChildId)>,
    /// Runnable children (waiting or running) by actual start tag: `v`.
    starts: BTreeSet<(Tag, ChildId)>,
    /// What runs on each VP, ranked by effective tag (the largest is the
    /// first to be preempted).
    running: RunningSlots<Eff>,
    vtime: Tag,
    max_finish: Tag,
    next_seq: u64,
    runnable: u32,
}

impl Sfq {
    /// An SFQ scheduler whose decisions last at most `quantum` (> 0).
    pub fn new(quantum: Duration) -> Result<Self, String> {
        if quantum.is_zero() {
            return Err("`quantum` must be longer than zero".into());
        }
        Ok(Sfq {
            quantum,
            children: ChildMap::new(),
            ready: BTreeSet::new(),
            starts: BTreeSet::new(),
            running: RunningSlots::new(Better::Lower),
            vtime: 0,
            max_finish: 0,
            next_seq: 0,
            runnable: 0,
        })
    }

    pub fn quantum(&self) -> Duration {
        self.quantum
    }

    /// The virtual time `v`, in `1/VT_SCALE` ns.
    pub fn virtual_time(&self) -> Tag {
        self.vtime
    }

    /// `child`'s start and finish tags.
    pub fn tags(&self, child: ChildId) -> Option<(Tag, Tag)> {
        self.children.get(child).map(|c| (c.start, c.finish))
    }

    /// Whether `child`'s warp is switched on.
    pub fn warp_on(&self, child: ChildId) -> Option<bool> {
        self.children.get(child).map(|c| c.warp_on)
    }

    /// `v = max(v, smallest runnable start tag)`, or the largest finish tag
    /// when nobody is runnable.
    fn sync_vtime(&mut self) {
        let floor = match self.starts.first() {
            Some(&(s, _)) => s,
            None => self.max_finish,
        };
        self.vtime = self.vtime.max(floor);
    }

    /// A new quantum for a child becoming (or staying) runnable:
    /// `S = max(v, F)`; a child brought forward to `v` drops its remainder.
    fn new_start(&mut self, child: ChildId) {
        let v = self.vtime;
        let c = &mut self.children[child];
        if v > c.finish {
            c.finish = v;
            c.rem = 0;
        }
        c.start = c.finish;
    }

    fn enqueue(&mut self, child: ChildId) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let c = &mut self.children[child];
        c.state = State::Waiting { seq };
        self.ready.insert((c.eff(), seq, child));
    }

    /// Whatever ran on `vp` stopped. A child still runnable starts a new
    /// quantum at `max(v, F)` and waits.
    fn stop(&mut self, vp: ParentVp) {
        let Some(run) = self.running.clear(vp) else {
            return;
        };
        let child = run.child();
        if self.children[child].state != State::Running(vp) {
            return;
        }
        self.sync_vtime();
        self.starts.remove(&(self.children[child].start, child));
        self.new_start(child);
        self.starts.insert((self.children[child].start, child));
        self.enqueue(child);
    }

    /// A child stopped being runnable, whatever it was doing.
    fn forget_runnable(&mut self, child: ChildId) {
        let c = self.children[child];
        match c.state {
            State::Idle => return,
            State::Waiting { seq } => {
                self.ready.remove(&(c.eff(), seq, child));
            }
            State::Running(vp) => {
                self.running.clear(vp);
            }
        }
        self.starts.remove(&(c.start, child));
        self.children[child].state = State::Idle;
        self.runnable -= 1;
        self.sync_vtime();
    }

    /// While the best waiting child's effective tag is smaller than the
    /// largest running one's, preempt that one. CPUs held idle and CPUs
    /// already being re-decided take the best waiting children first.
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        let waiting = self.ready.iter().map(|&(eff, _, _)| eff);
        self.running.preempt_if_needed(cx, waiting);
    }

    /// Switches `child`'s warp on or off, re-keying it wherever it is.
    fn set_warp(&mut self, cx: &mut Cx, child: ChildId, on: bool) {
        let c = self.children[child];
        if c.warp_on == on {
            return;
        }
        let old = c.eff();
        self.children[child].warp_on = on;
        let new = self.children[child].eff();
        match c.state {
            State::Idle => {}
            State::Waiting { seq } => {
                self.ready.remove(&(old, seq, child));
                self.ready.insert((new, seq, child));
            }
            State::Running(vp) => self.running.rerank(vp, new),
        }
        if c.warp > 0 {
            self.preempt_if_needed(cx);
        }
    }
}

impl Scheduler for Sfq {
    fn policy(&self) -> &'static str {
        "sfq"
    }

    /// Admits everyone. A new child's finish tag is `v`, so it starts level
    /// with the others rather than with the credit of virtual time zero.
    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let weight = params.opt_int("weight").unwrap_or(1);
        let weight = u64::try_from(weight)
            .ok()
            .filter(|w| *w >= 1)
            .ok_or_else(|| Reject(format!("sfq: `weight` = {weight}: expected at least 1")))?;
        let warp = params.opt_duration("warp").unwrap_or(Duration::ZERO);
        let warp_on = matches!(params.get("warp_on"), Some(Value::Bool(true)));
        self.children.insert(
            child,
            Child {
                weight,
                warp: u128::from(warp.as_nanos()) * VT_SCALE,
                warp_on,
                start: self.vtime,
                finish: self.vtime,
                rem: 0,
                state: State::Idle,
            },
        );
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(c) = self.children.get(child) else {
            return;
        };
        if c.state != State::Idle {
            self.forget_runnable(child);
            cx.want_cpus(self.runnable);
        }
        self.children.remove(child);
    }

    /// A waking child gets `S = max(v, F)` and waits; it preempts only if
    /// its warp is in effect and puts it ahead of a running child.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state != State::Idle {
            return;
        }
        self.sync_vtime();
        self.new_start(child);
        self.starts.insert((self.children[child].start, child));
        self.enqueue(child);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        if self.children[child].warped() {
            self.preempt_if_needed(cx);
        }
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state != State::Idle {
            self.forget_runnable(child);
            cx.want_cpus(self.runnable);
        }
    }

    /// Runs the waiting child with the smallest effective start tag for at
    /// most a quantum, or declines the CPU when nobody waits.
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        self.stop(vp);
        let Some((eff, _, child)) = self.ready.pop_first() else {
            return Dispatch::Release;
        };
        self.children[child].state = State::Running(vp);
        self.running.place(vp, child, eff, ());
        Dispatch::Run {
            child,
            until: cx.now().saturating_add(self.quantum),
        }
    }

    fn vp_revoke(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp);
    }

    /// `F += ran / weight`, exactly: the remainder of the division is kept
    /// for the next charge.
    fn charge(&mut self, _cx: &mut Cx, child: ChildId, ran: Duration) {
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        let w = u128::from(c.weight);
        let scaled = u128::from(ran.as_nanos()) * VT_SCALE + u128::from(c.rem);
        c.finish += scaled / w;
        c.rem = (scaled % w) as u64;
        self.max_finish = self.max_finish.max(c.finish);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        if msg.name != "warp" {
            return Reply::unknown(self.policy(), msg);
        }
        let Some(child) = from.child.filter(|&c| self.children.contains(c)) else {
            return Reply::Err(
                "sfq: `warp` sets the sender's own warp: it must come from a child of this scheduler"
                    .into(),
            );
        };
        let args = match msg.args.resolve(&warp_msg_params()) {
            Ok(args) => args,
            Err(e) => return Reply::Err(format!("sfq: `warp`: {e}")),
        };
        let on = args.bool("on");
        self.set_warp(cx, child, on);
        let warp = self.children[child].warp / VT_SCALE;
        Reply::Ok(
            Params::new()
                .with("on", Value::Bool(on))
                .with("warp", Value::Duration(Duration(warp as u64))),
        )
    }

    fn check_invariants(&self) -> Result<(), String> {
        for &(eff, seq, child) in &self.ready {
            match self.children.get(child) {
                Some(c) if c.state == (State::Waiting { seq }) && c.eff() == eff => {}
                other => {
                    return Err(format!(
                        "ready entry ({eff}, {seq}) -> {child} does not match {other:?}"
                    ))
                }
            }
        }
        for &(start, child) in &self.starts {
            match self.children.get(child) {
                Some(c) if c.state != State::Idle && c.start == start => {}
                other => {
                    return Err(format!(
                        "start entry {start} -> {child} does not match {other:?}"
                    ))
                }
            }
        }
        let (mut waiting, mut runnable) = (0usize, 0u32);
        for (child, c) in self.children.iter() {
            if c.rem >= c.weight {
                return Err(format!("{child}: remainder {} >= weight", c.rem));
            }
            if c.finish < c.start {
                return Err(format!("{child}: finish tag below start tag"));
            }
            match c.state {
                State::Idle => continue,
                State::Waiting { seq } => {
                    waiting += 1;
                    if !self.ready.contains(&(c.eff(), seq, child)) {
                        return Err(format!("{child} waits but is not in the ready queue"));
                    }
                    if c.finish != c.start {
                        return Err(format!("{child} waits with service in its quantum"));
                    }
                }
                State::Running(vp) => {
                    if self.running.child_on(vp) != Some(child) {
                        return Err(format!("{child} runs on {vp} but {vp} does not know it"));
                    }
                }
            }
            runnable += 1;
            if c.start < self.vtime {
                return Err(format!(
                    "{child} is runnable with start tag {} below v = {}",
                    c.start, self.vtime
                ));
            }
            if !self.starts.contains(&(c.start, child)) {
                return Err(format!("{child} is runnable but not in the start set"));
            }
        }
        self.running.check_runs(
            |id| self.children.get(id),
            |c| match c.state {
                State::Running(vp) => Some(vp),
                _ => None,
            },
            |vp, run, c| {
                if !run.preempting() && run.rank() != c.eff() {
                    return Err(format!(
                        "{} runs on {vp} ranked {} but its effective tag is {}",
                        run.child(),
                        run.rank(),
                        c.eff()
                    ));
                }
                Ok(())
            },
        )?;
        if waiting != self.ready.len()
            || runnable != self.runnable
            || runnable as usize != self.starts.len()
        {
            return Err(format!(
                "{} ready / {} starts / count {}; states say {waiting} waiting, {runnable} runnable",
                self.ready.len(),
                self.starts.len(),
                self.runnable
            ));
        }
        self.running.check_invariants()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::{strategy, Harness, Parent};

    use proptest::prelude::*;

    const Q: Duration = DEFAULT_QUANTUM;

    fn harness(vps: u32, parent: Parent) -> Harness<Sfq> {
        Harness::new(Box::new(Sfq::new(Q).unwrap()), vps, parent)
    }

    fn child(weight: i64, warp_ms: u64, warp_on: bool) -> Params {
        Params::new()
            .with("weight", Value::Int(weight))
            .with("warp", Value::Duration(Duration::from_millis(warp_ms)))
            .with("warp_on", Value::Bool(warp_on))
    }

    fn param_sets() -> Vec<Params> {
        vec![
            Params::new(),
            child(3, 0, false),
            child(2, 20, true),
            child(5, 7, false),
        ]
    }

    proptest! {
        #[test]
        fn random_protocol_runs_keep_the_rules(
            vps in 1u32..4,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..150),
        ) {
            let mut h = harness(vps, parent);
            let sets = param_sets();
            for step in steps {
                h.step(step, &sets);
                if parent != Parent::Manual {
                    h.assert_work_conserving();
                }
            }
        }

        /// With every warp zero or off, the decisions are those of plain
        /// SFQ: the same as with no warp parameters at all.
        #[test]
        fn zero_warps_change_nothing(
            vps in 1u32..3,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..150),
        ) {
            let plain = [Params::new(), child(3, 0, false), child(2, 0, false)];
            let zero = [child(1, 0, true), child(3, 40, false), child(2, 0, true)];
            let mut a = harness(vps, parent);
            let mut b = harness(vps, parent);
            for step in steps {
                a.step(step, &plain);
                b.step(step, &zero);
            }
            prop_assert_eq!(a.decisions(), b.decisions());
            prop_assert_eq!(a.segments(), b.segments());
        }
    }
}
