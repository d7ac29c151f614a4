//! `ts`: priority time sharing, as the Windows 2000 and Unix schedulers
//! the HLS papers compare against.
//!
//! **Source.** Regehr & Stankovic, "HLS: A Framework for Composing Soft
//! Real-Time Schedulers", §5.1 ("Time Sharing": no guarantee, NULL →
//! NULL) and §7.2 with Table 5 and its footnote: "the HLS time-sharing
//! scheduler (like the native Windows 2000 scheduler) attempts to avoid
//! unbounded priority inversion by not completely starving threads even in
//! the presence of a higher-priority thread that is CPU bound", and "the
//! scheduling quantum of the time-sharing scheduler is longer than the
//! period of the real-time task" (33 ms). The rules are Windows 2000's
//! (Solomon & Russinovich, *Inside Windows 2000*, ch. 6), simplified.
//!
//! **Algorithm.** Each child attaches with a base priority `prio` (1..=31,
//! default 8, Windows' normal; 16..=31 is the real-time class). Runnable
//! children wait in one queue ordered by (current priority, arrival); the
//! highest runs, round robin within a priority with a `quantum` (default
//! 50 ms). A child preempted by a higher priority goes back to the head of
//! its level with the rest of its quantum; one whose quantum is used up
//! goes to the back with a new one. A waking child with a higher priority
//! than a running one preempts it at once.
//! - *Wakeup boost*: a child that blocked and wakes gets its base plus
//!   `boost` (default 2, capped at 15, the top of the variable range);
//!   the boost decays by one per quantum it runs out, never below the base.
//! - *Starvation relief* (the footnote; Windows' balance set manager): a
//!   child ready but not run for `starve_after` (default 4 s) is raised to
//!   priority 15 for one quantum of `starve_quantum` (default 50 ms), after
//!   which it drops back to its base. 0 turns relief off. A child
//!   dispatched and preempted at the same instant has not run: its wait
//!   goes on from where it began.
//!
//! Real-time-class children (base 16 and up) are never boosted and never
//! decay; relief does not raise a child above 15, so a CPU-bound
//! real-time-class child still starves the others, as in Windows.
//!
//! **Why these defaults (Table 5).** Windows 2000's quanta range from
//! 20 ms (two ticks on a workstation) to 180 ms (a server); 50 ms is longer
//! than the 33 ms frame period, as the paper requires, and it is the
//! quantum Table 5's equal-priority row implies: two CPU-bound threads
//! alternating quanta leave the frame loop a gap of one quantum plus a
//! 10 ms frame, 60 ms, one miss per 100 ms cycle: 300 in 30 s against the
//! paper's 290. Windows lets a starved thread run about 4 s after it became
//! ready, at 15 with a doubled (~2 × 20-30 ms) quantum; one 50 ms quantum
//! every 4 s gives the high-priority row its few misses (one per relief,
//! 7 in 30 s against 6) and the background thread about 1% of the CPU
//! (the paper measured 3.26%; its machine had other threads and interrupts
//! that broke the frame loop's hold on the CPU more often).
//!
//! **Guarantees.** None (NULL): time sharing passes on no timing
//! guarantee. Work conserving on any number of CPUs. Among runnable
//! children of one priority, round robin. No runnable child with a base of
//! 15 or less waits longer than `starve_after` plus the relief quanta of
//! the children relieved before it (with relief on), whatever runs above it
//! in the variable range.
//!
//! **Limits.** No foreground quantum stretching, no I/O-class-specific
//! boosts, no priority inheritance; global on several CPUs (children
//! migrate freely), where relief and boosts are as on one. Decisions,
//! wake-ups and relief cost O(log n) (plus O(vps) when a preemption is
//! considered).

use crate::preempt::{Better, RunningSlots};
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Scheduler, TimerKey, Value,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "ts",
    summary:
        "priority time sharing as in Windows 2000: long quantum, wakeup boost, starvation relief",
    doc: "A model of the Windows 2000 / Unix time sharing the HLS paper compares against \
          (Regehr & Stankovic, sections 5.1 and 7.2): children attach with `prio` (1..31, \
          default 8; 16 and up is the real-time class); the highest priority runs, round \
          robin with a long `quantum` (default 50ms, longer than a 33ms frame period); a \
          child waking from a block gets `boost` (default 2, up to 15) that decays by one \
          per quantum; a child ready but not run for `starve_after` (default 4s) runs one \
          `starve_quantum` (default 50ms) at 15 (the paper's footnote: CPU-bound higher \
          priorities do not starve others completely). Gives no guarantee (NULL).",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// The lowest and highest base priorities; Windows' normal one.
pub const PRIO_MIN: i64 = 1;
pub const PRIO_MAX: i64 = 31;
pub const PRIO_NORMAL: i64 = 8;
/// The top of the variable range: boosts and relief go no higher.
pub const PRIO_TOP: i64 = 15;

pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(50);
pub const DEFAULT_BOOST: i64 = 2;
pub const DEFAULT_STARVE_AFTER: Duration = Duration::from_secs(4);
pub const DEFAULT_STARVE_QUANTUM: Duration = Duration::from_millis(50);

/// The one timer: the next starvation relief.
const RELIEF_TIMER: TimerKey = 0;

fn params() -> Vec<ParamSpec> {
    let positive = ParamKind::Duration {
        min: Duration::from_nanos(1),
    };
    let any = ParamKind::Duration {
        min: Duration::ZERO,
    };
    vec![
        ParamSpec::new("quantum", positive, "round-robin slice within a priority")
            .with_default(Value::Duration(DEFAULT_QUANTUM)),
        ParamSpec::new(
            "boost",
            ParamKind::Int {
                min: 0,
                max: PRIO_TOP,
            },
            "priority added when a child wakes from a block (decays by one per quantum)",
        )
        .with_default(Value::Int(DEFAULT_BOOST)),
        ParamSpec::new(
            "starve_after",
            any,
            "a child ready this long without running is relieved (0: never)",
        )
        .with_default(Value::Duration(DEFAULT_STARVE_AFTER)),
        ParamSpec::new(
            "starve_quantum",
            positive,
            "how long a relieved child runs at priority 15",
        )
        .with_default(Value::Duration(DEFAULT_STARVE_QUANTUM)),
    ]
}

fn child_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "prio",
        ParamKind::Int {
            min: PRIO_MIN,
            max: PRIO_MAX,
        },
        "base priority, higher runs first (8 normal, 16..31 real-time class)",
    )
    .with_default(Value::Int(PRIO_NORMAL))]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let cfg = Config {
        quantum: params.duration("quantum"),
        boost: params.int("boost"),
        starve_after: params.duration("starve_after"),
        starve_quantum: params.duration("starve_quantum"),
    };
    TimeSharing::new(cfg).map(|t| Box::new(t) as Box<dyn Scheduler>)
}

/// The parameters of a `ts` instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub quantum: Duration,
    pub boost: i64,
    /// Zero: no relief.
    pub starve_after: Duration,
    pub starve_quantum: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            quantum: DEFAULT_QUANTUM,
            boost: DEFAULT_BOOST,
            starve_after: DEFAULT_STARVE_AFTER,
            starve_quantum: DEFAULT_STARVE_QUANTUM,
        }
    }
}

/// Queue order: highest priority first, then lowest sequence number.
type Key = (Reverse<i64>, u64);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// Waiting in the queue since the instant given.
    Waiting(Key, Instant),
    /// Dispatched on the VP at `at`, after waiting since `since`.
    Running {
        vp: ParentVp,
        at: Instant,
        since: Instant,
    },
}

#[derive(Clone, Copy, Debug)]
struct Child {
    base: i64,
    /// Current priority: the base, a decaying boost, or 15 under relief.
    prio: i64,
    state: State,
    slice_left: Duration,
    /// Running (or waiting with) a starvation-relief quantum.
    relief: bool,
    /// It has blocked since it joined: its next wake-up is boosted.
    blocked: bool,
}

impl Child {
    /// Relief applies to children in the variable range below its top.
    fn can_starve(&self) -> bool {
        self.prio < PRIO_TOP && !self.relief
    }
}

/// The time-sharing scheduler. See the module documentation.
#[derive(Debug)]
pub struct TimeSharing {
    cfg: Config,
    children: ChildMap<Child>,
    queue: BTreeMap<Key, ChildId>,
    /// Waiting children relief may raise, by the time they started waiting.
    starving: BTreeSet<(Instant, ChildId)>,
    armed: Option<Instant>,
    /// What runs on each VP, ranked by the priority it was dispatched
    /// with; the run's horizon.
    running: RunningSlots<i64, Instant>,
    back_seq: u64,
    head_seq: u64,
    runnable: u32,
    reliefs: u64,
}

const MIDDLE: u64 = u64::MAX / 2;

impl TimeSharing {
    pub fn new(cfg: Config) -> Result<Self, String> {
        if cfg.quantum.is_zero() || cfg.starve_quantum.is_zero() {
            return Err("`quantum` and `starve_quantum` must be longer than zero".into());
        }
        if !(0..=PRIO_TOP).contains(&cfg.boost) {
            return Err(format!("`boost` = {} is not in 0..={PRIO_TOP}", cfg.boost));
        }
        Ok(TimeSharing {
            cfg,
            children: ChildMap::new(),
            queue: BTreeMap::new(),
            starving: BTreeSet::new(),
            armed: None,
            running: RunningSlots::new(Better::Higher),
            back_seq: MIDDLE + 1,
            head_seq: MIDDLE,
            runnable: 0,
            reliefs: 0,
        })
    }

    /// `child`'s (base, current) priority.
    pub fn prio(&self, child: ChildId) -> Option<(i64, i64)> {
        self.children.get(child).map(|c| (c.base, c.prio))
    }

    /// How many starvation reliefs were given.
    pub fn reliefs(&self) -> u64 {
        self.reliefs
    }

    fn relief_on(&self) -> bool {
        !self.cfg.starve_after.is_zero()
    }

    /// Queues `child` as waiting since `since` (the starvation clock's
    /// start).
    fn enqueue(&mut self, child: ChildId, at_head: bool, since: Instant) {
        let seq = if at_head {
            self.head_seq -= 1;
            self.head_seq + 1
        } else {
            self.back_seq += 1;
            self.back_seq - 1
        };
        let relief = self.relief_on();
        let c = &mut self.children[child];
        let key = (Reverse(c.prio), seq);
        c.state = State::Waiting(key, since);
        self.queue.insert(key, child);
        if relief && c.can_starve() {
            self.starving.insert((since, child));
        }
    }

    /// Takes a waiting child out of the queues.
    fn unqueue(&mut self, child: ChildId) {
        if let State::Waiting(key, since) = self.children[child].state {
            self.queue.remove(&key);
            self.starving.remove(&(since, child));
        }
    }

    /// Whatever ran on `vp` stopped. Preempted: back to the head of its
    /// level with the rest of its slice. Slice used up: the boost decays
    /// (relief ends), back of the level with a new slice. A child stopped
    /// the instant it was dispatched has not run: its wait goes on from
    /// where it began, so relief still comes `starve_after` after that.
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        let Some(run) = self.running.clear(vp) else {
            return;
        };
        let quantum = self.cfg.quantum;
        let c = &mut self.children[run.child()];
        let State::Running { vp: on, at, since } = c.state else {
            return;
        };
        if on != vp {
            return;
        }
        let since = if now > at { now } else { since };
        let used_up = c.slice_left.is_zero() || now >= run.data;
        if used_up {
            if c.relief {
                c.relief = false;
                c.prio = c.base;
            } else if c.prio > c.base {
                c.prio -= 1;
            }
            c.slice_left = quantum;
        }
        self.enqueue(run.child(), !used_up, since);
    }

    fn forget_runnable(&mut self, child: ChildId) {
        match self.children[child].state {
            State::Idle => return,
            State::Waiting(..) => self.unqueue(child),
            State::Running { vp, .. } => {
                self.running.clear(vp);
            }
        }
        self.children[child].state = State::Idle;
        self.runnable -= 1;
    }

    /// While the best waiting children outrank the worst running ones,
    /// preempt those (idle held CPUs and re-decisions take them first).
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        let waiting = self.queue.keys().map(|&(Reverse(p), _)| p);
        self.running.preempt_if_needed(cx, waiting);
    }

    /// Raises every child that has waited `starve_after` to priority 15
    /// for one relief quantum.
    fn relieve(&mut self, now: Instant) {
        if !self.relief_on() {
            return;
        }
        while let Some(&(since, child)) = self.starving.first() {
            if since.saturating_add(self.cfg.starve_after) > now {
                break;
            }
            self.unqueue(child);
            let c = &mut self.children[child];
            c.relief = true;
            c.prio = PRIO_TOP;
            c.slice_left = self.cfg.starve_quantum;
            self.reliefs += 1;
            self.enqueue(child, false, now);
        }
    }

    fn rearm(&mut self, cx: &mut Cx) {
        let next = self
            .starving
            .first()
            .map(|&(since, _)| since.saturating_add(self.cfg.starve_after));
        if next != self.armed {
            match next {
                Some(at) => cx.set_timer(RELIEF_TIMER, at),
                None => cx.cancel_timer(RELIEF_TIMER),
            }
            self.armed = next;
        }
    }
}

impl Scheduler for TimeSharing {
    fn policy(&self) -> &'static str {
        "ts"
    }

    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let base = params.opt_int("prio").unwrap_or(PRIO_NORMAL);
        if !(PRIO_MIN..=PRIO_MAX).contains(&base) {
            return Err(Reject(format!(
                "`prio` = {base} is not in {PRIO_MIN}..={PRIO_MAX}"
            )));
        }
        self.children.insert(
            child,
            Child {
                base,
                prio: base,
                state: State::Idle,
                slice_left: self.cfg.quantum,
                relief: false,
                blocked: false,
            },
        );
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.children.contains(child) {
            return;
        }
        if self.children[child].state != State::Idle {
            self.forget_runnable(child);
            cx.want_cpus(self.runnable);
        }
        self.children.remove(child);
        self.rearm(cx);
    }

    /// A waking child gets its boost (if it blocked before and is in the
    /// variable range), a new slice, the back of its level, and preempts a
    /// lower priority if no CPU is free.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let (quantum, boost) = (self.cfg.quantum, self.cfg.boost);
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        if c.blocked && c.base <= PRIO_TOP {
            c.prio = (c.base + boost).min(PRIO_TOP).max(c.base);
        }
        c.relief = false;
        c.slice_left = quantum;
        self.enqueue(child, false, cx.now());
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        self.preempt_if_needed(cx);
        self.rearm(cx);
    }

    /// A child that blocks loses a relief it was given (Windows drops a
    /// starved thread back to its base after one quantum or a wait).
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state == State::Idle {
            return;
        }
        self.forget_runnable(child);
        let c = &mut self.children[child];
        c.blocked = true;
        if c.relief {
            c.relief = false;
            c.prio = c.base;
        }
        cx.want_cpus(self.runnable);
        self.rearm(cx);
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.stop(vp, now);
        self.relieve(now);
        let decision = match self.queue.pop_first() {
            Some((_, child)) => {
                let since = match self.children[child].state {
                    State::Waiting(_, since) => since,
                    _ => now,
                };
                self.starving.remove(&(since, child));
                let c = &mut self.children[child];
                c.state = State::Running { vp, at: now, since };
                let until = now.saturating_add(c.slice_left);
                let prio = c.prio;
                self.running.place(vp, child, prio, until);
                Dispatch::Run { child, until }
            }
            None => Dispatch::Release,
        };
        self.preempt_if_needed(cx);
        self.rearm(cx);
        decision
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
        self.preempt_if_needed(cx);
        self.rearm(cx);
    }

    fn charge(&mut self, _cx: &mut Cx, child: ChildId, ran: Duration) {
        if let Some(c) = self.children.get_mut(child) {
            c.slice_left = c.slice_left.saturating_sub(ran);
        }
    }

    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        if key != RELIEF_TIMER {
            return;
        }
        self.armed = None;
        self.relieve(cx.now());
        self.preempt_if_needed(cx);
        self.rearm(cx);
    }

    fn check_invariants(&self) -> Result<(), String> {
        for (key, &child) in &self.queue {
            match self.children.get(child) {
                Some(c)
                    if matches!(c.state, State::Waiting(k, _) if k == *key)
                        && key.0 == Reverse(c.prio) => {}
                other => {
                    return Err(format!(
                        "queue entry {key:?} -> {child} does not match {other:?}"
                    ))
                }
            }
        }
        let longest = self.cfg.quantum.max(self.cfg.starve_quantum);
        let (mut runnable, mut starving) = (0, 0);
        for (child, c) in self.children.iter() {
            let ceiling = if c.base > PRIO_TOP { c.base } else { PRIO_TOP };
            if c.prio < c.base || c.prio > ceiling || (c.relief && c.prio != PRIO_TOP) {
                return Err(format!(
                    "{child} has priority {} (base {}, relief {})",
                    c.prio, c.base, c.relief
                ));
            }
            if c.slice_left > longest {
                return Err(format!("{child} has a slice longer than any quantum"));
            }
            match c.state {
                State::Idle => {}
                State::Waiting(key, since) => {
                    runnable += 1;
                    if self.queue.get(&key) != Some(&child) {
                        return Err(format!("{child} waits but is not queued"));
                    }
                    let listed = self.starving.contains(&(since, child));
                    if listed != (self.relief_on() && c.can_starve()) {
                        return Err(format!("{child}'s starvation watch is wrong ({listed})"));
                    }
                    starving += usize::from(listed);
                }
                State::Running { vp, at, since } => {
                    runnable += 1;
                    if self.running.child_on(vp) != Some(child) {
                        return Err(format!("{child} runs on {vp} but {vp} does not know it"));
                    }
                    if since > at {
                        return Err(format!("{child} was dispatched before its wait began"));
                    }
                }
            }
        }
        if starving != self.starving.len() {
            return Err("the starvation watch lists children that do not wait".into());
        }
        if runnable != self.runnable {
            return Err(format!(
                "runnable count is {} but {runnable} children are runnable",
                self.runnable
            ));
        }
        for (vp, run) in self.running.iter() {
            let c = self
                .children
                .get(run.child())
                .ok_or_else(|| format!("{vp} runs {}, which is not registered", run.child()))?;
            if !matches!(c.state, State::Running { vp: on, .. } if on == vp) {
                return Err(format!(
                    "{vp} runs {}, which is not running there",
                    run.child()
                ));
            }
        }
        self.running.check_invariants()
    }
}
