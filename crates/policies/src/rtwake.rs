//! `rtwake`: Vassal's sample real-time scheduler — a thread asks to be woken
//! at a precise time and is told at once if that cannot be done.
//!
//! **Source.** Candea & Jones, "Vassal: Loadable Scheduler Support for
//! Multi-Policy Scheduling" (USENIX Windows NT Symposium 1998): §3 (a
//! loaded scheduler over the native one; it may decline a decision, and a
//! thread it does not select may still be selected by the native
//! scheduler, "while also making it possible for a scheduler to prevent
//! it"), §4 (`decision_maker` returning a thread or NULL,
//! `MessageToScheduler`, `SetSchedulerEvent`, which fires on the clock
//! interrupt), §5 (the sample scheduler: `JOIN`, then `SET` a wakeup; a
//! request it cannot satisfy is refused at once; the event is set
//! `Tpredicted` early; "keeping a thread spinning" for sub-tick precision)
//! and §6 Table 2 (periodic 1 ms wakeups: never more than 4 µs early, a
//! quarter of the multimedia timers' spread). How Vassal maps onto the
//! protocol: `decision_maker` is `vp_grant` (a thread, or `Release` for
//! NULL: the parent, typically an `fp` root with the default scheduler
//! below rtwake, decides instead); `MessageToScheduler` is `msg`; `JOIN`
//! and leaving are the dispatcher's own `join` and `leave` messages;
//! `SetSchedulerEvent` is `Cx::set_timer`, which like the clock-interrupt
//! check fires at the first tick at or after its time.
//!
//! **Messages** (from a thread under rtwake; times are durations):
//! - `set { in = d }` or `set { at = t }` (since the start of the run), and
//!   optionally `period = p`: "wake me at W" (`W = now + d`, or `t`). The
//!   reply says at once whether W can be honoured; if not, why (below). An
//!   accepted reply carries `wakeup = W` (the simulator records each one as
//!   a *wakeup job*: release = deadline = W, start = when the thread was put
//!   on a CPU) and `spin_from`, when rtwake will take the CPU for it.
//! - `wait`: the next wakeup of the period, `W_last + period`, accepted or
//!   refused like `set`. The grid advances by one period either way, so a
//!   thread that overran is told which wakeup it missed and the next `wait`
//!   asks for the one after.
//! - `cancel`: drop any promised wakeup and the period.
//!
//! Until W the thread does not run, whatever it does: rtwake never
//! dispatches it, and since it is rtwake's child nobody else can. That is
//! how a scenario thread "waits to be woken": the operation after its `set`
//! simply does not start until rtwake dispatches it. A `set` or `wait` from
//! a woken thread ends its wakeup.
//!
//! **Refusals, told at once with the reason.** `W` is refused if it has
//! passed (`W <= now`), if it is closer than the scheduler's latency
//! `Tpredicted` (`latency`: `W - now < latency`), or if it collides with
//! wakeups already promised to other threads. The collision rule: rtwake
//! holds a CPU for each wakeup from its *spin start* `S(W) = W - latency`
//! (with a tick, rounded down to a tick boundary, because its timer can
//! only fire on a tick) through `W`; two wakeups collide when these closed
//! windows overlap, and `W` is refused when as many promised windows as
//! rtwake has VPs of its own overlap its window. So two threads' wakeups on
//! one CPU must be more than `latency` apart without a tick, more than
//! `latency` plus up to a tick with one.
//!
//! **Algorithm.** A child is *free* (no promise), *waiting* (a wakeup W is
//! promised) or *due* (woken at W). rtwake's timer (one, key 0) fires at
//! the next spin start. From `S(W)` rtwake asks its parent for a CPU and
//! answers the grant with `Dispatch::Spin { until: W }`: it holds the CPU
//! busy-waiting, a horizon the dispatcher does not round to the tick, so
//! the thread is dispatched at exactly W, ahead of whatever the default
//! scheduler ran. A due thread runs ahead of the default until it sends its
//! next message, blocks, or has used `quantum` of CPU since its wakeup;
//! then it is free again. On its own VPs rtwake serves, in this order:
//! spins that have begun, due threads (latest wakeup first: a wakeup
//! preempts the thread woken before it, which continues afterwards), and —
//! only when it has no VP under the default — free threads, round robin in
//! `quantum` slices. Otherwise it declines (`Release`) and the parent's
//! other children run.
//!
//! **Free threads and the default scheduler (Vassal §3).** A thread that
//! rtwake does not select can still be run by the default scheduler when
//! rtwake allows it: rtwake's last `background_vps` VPs are attached under
//! the default scheduler (a second parent), and through them it offers its
//! free threads, round robin, so the default runs them among its own
//! threads. Waiting threads are never offered: that is how rtwake prevents
//! the default from running a thread before its wakeup. With
//! `background_vps = 0` free threads run on rtwake's own VPs instead (at
//! rtwake's precedence: under an `fp` root a CPU-bound free thread then
//! keeps the default from running, as any high-priority thread would).
//!
//! **Guarantees.** Never early: no thread runs between an accepted `set`
//! and its W (checked by `check_invariants` after every callback). Exact:
//! an accepted wakeup of a thread that is runnable at W is dispatched at
//! exactly W, with or without a tick, provided the parent grants rtwake's
//! VP when asked (true at the top of an `fp` root: the parent preempts at
//! once) — the collision rule guarantees a free VP for every spin. The
//! context switch to the thread follows the dispatch, as in Vassal, where
//! the decision is made at the time and the switch comes after.
//!
//! **Limits.** Spinning costs CPU: from the spin start to W the CPU does no
//! work (up to `latency` plus a tick per wakeup with a tick; §5 calls it
//! "not a very clean solution"). rtwake promises start times only: a woken
//! thread may be preempted by a later wakeup's spin. A thread that is not
//! runnable at its W gets no wakeup (it is free when it becomes runnable).
//! Exact means exact in the scheduler's decision: an interrupt handler
//! (a scenario's `[[interrupt]]` source) that spans W delays the dispatch
//! until it returns, the source of the late tail in the paper's Table 2.
//! Cost: O(log n) per callback in the number of children, plus O(w) for
//! the w wakeups whose windows are near a new one.

use crate::params;
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Reply, Scheduler, Sender, ThreadId, TimerKey, Value, VpState,
};
use std::cmp::Reverse;
use std::collections::BTreeSet;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "rtwake",
    summary: "Vassal's sample real-time scheduler: wakes a thread at a precise time",
    doc: "Vassal's loadable sample scheduler (Candea & Jones, sections 3 to 6). A \
          thread joins it (`join` message) and asks `set { in | at, period }` to be \
          woken at a precise time; the reply says at once if that cannot be done \
          (passed, closer than `latency`, or colliding with another promised \
          wakeup). Until then rtwake declines the CPU so the default scheduler \
          runs; it takes the CPU `latency` early (a tick early with a tick) and \
          spins (`Dispatch::Spin`) so the thread is dispatched at exactly its time. \
          `wait` asks for the next periodic wakeup, `cancel` drops it. Its last \
          `background_vps` VPs hang under the default scheduler, which runs the \
          threads rtwake is not waking. Never early; exact when its parent grants \
          at once.",
    params,
    child_params: no_params,
    build,
    max_parents: 2,
    max_children: u32::MAX,
};

/// `Tpredicted` when none is given: about one context switch of the
/// paper's machine (Table 1, 20 µs).
pub const DEFAULT_LATENCY: Duration = Duration::from_micros(20);
/// The default `quantum`.
pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);

const TIMER: TimerKey = 0;

fn params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "latency",
            ParamKind::Duration {
                min: Duration::ZERO,
            },
            "Tpredicted: how long before a wakeup rtwake takes the CPU; a wakeup \
             closer than this is refused",
        )
        .with_default(Value::Duration(DEFAULT_LATENCY)),
        params::positive_duration(
            "quantum",
            DEFAULT_QUANTUM,
            "CPU a woken thread may use ahead of the default per wakeup; also the \
             round-robin slice of threads that are not being woken",
        ),
        ParamSpec::new(
            "background_vps",
            ParamKind::Int { min: 0, max: 4096 },
            "how many of its VPs, the last ones, are attached under the default \
             scheduler, which runs rtwake's threads that are not being woken \
             through them (0: those threads run on rtwake's own VPs)",
        )
        .with_default(Value::Int(0)),
    ]
}

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn build(p: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(RtWake::new(
        p.duration("latency"),
        p.duration("quantum"),
        p.int("background_vps") as u32,
    )))
}

/// Where a child stands with respect to wakeups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wake {
    /// No promise: an ordinary thread.
    Free,
    /// A wakeup is promised at this time; the child does not run before it.
    Waiting(Instant),
    /// Woken at this time; runs ahead of the default until its next message,
    /// a block, or `quantum` of CPU.
    Due(Instant),
}

#[derive(Clone, Debug)]
struct Child {
    wake: Wake,
    runnable: bool,
    /// The VP it runs on, or the VP spinning for its wakeup.
    on: Option<ParentVp>,
    /// CPU used since its wakeup (while due).
    used: Duration,
    /// The period of `wait`, and the last wakeup asked for (its grid).
    period: Option<Duration>,
    last: Option<Instant>,
    /// The thread behind this child, once it sent a message (for replies).
    thread: Option<ThreadId>,
}

/// What one of rtwake's held VPs is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    /// Busy-waiting until `at`, the wakeup promised to `child`.
    Spin {
        child: ChildId,
        at: Instant,
    },
    Run(ChildId),
}

/// How urgent a task is on rtwake's own VPs (higher first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Free,
    /// A due thread; a later wakeup outranks an earlier one.
    Due(Instant),
    Spin,
}

/// The rtwake scheduler. See the module documentation.
#[derive(Debug)]
pub struct RtWake {
    latency: Duration,
    quantum: Duration,
    background_vps: u32,
    children: ChildMap<Child>,
    /// Promised wakeups not reached yet, earliest first.
    pending: BTreeSet<(Instant, ChildId)>,
    /// Runnable due children, latest wakeup first.
    due: BTreeSet<(Reverse<Instant>, ChildId)>,
    /// Runnable free children.
    free: BTreeSet<ChildId>,
    /// The free child picked last (round robin resumes after it).
    cursor: Option<ChildId>,
    /// Per VP: what it is doing, while held.
    on_vp: Vec<Option<Task>>,
    /// When timer 0 is armed for.
    armed: Option<Instant>,
}

impl RtWake {
    pub fn new(latency: Duration, quantum: Duration, background_vps: u32) -> Self {
        RtWake {
            latency,
            quantum: quantum.max(Duration::from_nanos(1)),
            background_vps,
            children: ChildMap::new(),
            pending: BTreeSet::new(),
            due: BTreeSet::new(),
            free: BTreeSet::new(),
            cursor: None,
            on_vp: Vec::new(),
            armed: None,
        }
    }

    /// How many wakeups are promised and not reached yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The wakeup promised to `child`, if one is pending.
    pub fn promised(&self, child: ChildId) -> Option<Instant> {
        match self.children.get(child)?.wake {
            Wake::Waiting(w) => Some(w),
            _ => None,
        }
    }

    /// When rtwake takes the CPU for a wakeup at `w`: `latency` early,
    /// rounded down to a tick since its timer fires only on one.
    pub fn spin_start(&self, w: Instant, tick: Option<Duration>) -> Instant {
        let s = w.as_nanos().saturating_sub(self.latency.as_nanos());
        match tick {
            Some(t) if !t.is_zero() => Instant(s / t.as_nanos() * t.as_nanos()),
            _ => Instant(s),
        }
    }

    /// How many of the `vps` VPs are rtwake's own (not under the default).
    fn own(&self, vps: u32) -> u32 {
        vps - self.background_vps.min(vps)
    }

    fn slot(&mut self, vp: ParentVp) -> &mut Option<Task> {
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
        }
        &mut self.on_vp[vp.index()]
    }

    fn who(&self, c: ChildId) -> String {
        match self.children.get(c).and_then(|ch| ch.thread) {
            Some(t) => t.to_string(),
            None => c.to_string(),
        }
    }

    /// Whatever `vp` was doing has stopped.
    fn stop(&mut self, vp: ParentVp) {
        if let Some(task) = self.slot(vp).take() {
            let (Task::Spin { child, .. } | Task::Run(child)) = task;
            if let Some(ch) = self.children.get_mut(child) {
                if ch.on == Some(vp) {
                    ch.on = None;
                }
            }
        }
    }

    /// Takes `child` off the VP it runs or spins on: a running one is
    /// revoked (the dispatcher re-decides its CPU), a spin is cut short.
    fn unassign(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(v) = self.children.get_mut(child).and_then(|ch| ch.on.take()) else {
            return;
        };
        match self.slot(v).take() {
            Some(Task::Run(_)) => cx.revoke(child),
            Some(Task::Spin { .. }) => cx.reschedule(v),
            None => {}
        }
    }

    /// Takes `child` out of the run sets, whatever its state.
    fn unlist(&mut self, child: ChildId) {
        let ch = &self.children[child];
        match ch.wake {
            Wake::Free => {
                self.free.remove(&child);
            }
            Wake::Due(w) => {
                self.due.remove(&(Reverse(w), child));
            }
            Wake::Waiting(w) => {
                self.pending.remove(&(w, child));
            }
        }
    }

    /// Puts `child` in state `wake`, in the right set.
    fn enlist(&mut self, child: ChildId, wake: Wake) {
        let ch = &mut self.children[child];
        ch.wake = wake;
        let runnable = ch.runnable;
        match wake {
            Wake::Free if runnable => {
                self.free.insert(child);
            }
            Wake::Due(w) if runnable => {
                self.children[child].used = Duration::ZERO;
                self.due.insert((Reverse(w), child));
            }
            Wake::Waiting(w) => {
                self.pending.insert((w, child));
            }
            Wake::Free => {}
            // A due child that cannot run has had its wakeup.
            Wake::Due(_) => self.children[child].wake = Wake::Free,
        }
    }

    /// Wakeups whose time has come: a runnable child becomes due, one that
    /// cannot run now has missed it and is free.
    fn promote(&mut self, cx: &mut Cx) {
        let now = cx.now();
        while let Some(&(w, c)) = self.pending.first() {
            if w > now {
                break;
            }
            self.pending.remove(&(w, c));
            // The spin for it, if still on, ends now: re-decide that VP.
            self.unassign(cx, c);
            self.enlist(c, Wake::Due(w));
        }
    }

    /// Pending wakeups whose spin has begun, earliest first.
    fn spinning_now(&self, cx: &Cx) -> impl Iterator<Item = (Instant, ChildId)> + '_ {
        let (now, tick) = (cx.now(), cx.tick());
        self.pending
            .iter()
            .copied()
            .take_while(move |&(w, _)| self.spin_start(w, tick) <= now)
    }

    fn unassigned_spin(&self, cx: &Cx) -> Option<(Instant, ChildId)> {
        self.spinning_now(cx)
            .find(|&(_, c)| self.children[c].on.is_none())
    }

    fn unassigned_due(&self) -> Option<(Instant, ChildId)> {
        self.due
            .iter()
            .find(|&&(_, c)| self.children[c].on.is_none())
            .map(|&(Reverse(w), c)| (w, c))
    }

    /// The next free child after the cursor that is not running, round robin.
    fn unassigned_free(&self) -> Option<ChildId> {
        let idle = |c: &&ChildId| self.children[**c].on.is_none();
        let after = match self.cursor {
            Some(k) => self.free.range(ChildId(k.0 + 1)..).find(idle),
            None => None,
        };
        after.or_else(|| self.free.iter().find(idle)).copied()
    }

    /// The best task waiting for one of rtwake's own VPs.
    fn best_unassigned(&self, cx: &Cx) -> Option<Rank> {
        if self.unassigned_spin(cx).is_some() {
            return Some(Rank::Spin);
        }
        if let Some((w, _)) = self.unassigned_due() {
            return Some(Rank::Due(w));
        }
        (self.background_vps == 0 && self.unassigned_free().is_some()).then_some(Rank::Free)
    }

    fn rank_of_run(&self, c: ChildId) -> Rank {
        match self.children[c].wake {
            Wake::Due(w) => Rank::Due(w),
            _ => Rank::Free,
        }
    }

    /// Asks for as many VPs of each kind as there is work for: on its own
    /// VPs, begun spins, due children and (without background VPs) free
    /// children; on background VPs, free children. A VP counts as asked for
    /// if it requests, or holds a CPU and does something with it (at the
    /// root a VP that declined is still "held": requesting wakes it).
    fn sync(&mut self, cx: &mut Cx) {
        let vps = cx.vp_count();
        let own = self.own(vps);
        let free = self.free.len() as u32;
        let spins = self.spinning_now(cx).count() as u32;
        let own_need = spins + self.due.len() as u32 + if own == vps { free } else { 0 };
        let background_need = if own == vps { 0 } else { free };
        self.want(cx, 0..own, own_need);
        self.want(cx, own..vps, background_need);
    }

    fn want(&self, cx: &mut Cx, range: std::ops::Range<u32>, need: u32) {
        let active = |s: &Self, v: u32| match cx.vp_state(ParentVp(v)) {
            VpState::Idle => false,
            VpState::Requesting => true,
            VpState::Held(_) => s.on_vp.get(v as usize).copied().flatten().is_some(),
        };
        let have = range.clone().filter(|&v| active(self, v)).count() as u32;
        if need > have {
            let idle: Vec<u32> = range.filter(|&v| !active(self, v)).collect();
            for v in idle.into_iter().take((need - have) as usize) {
                cx.request(ParentVp(v));
            }
        } else if need < have {
            let asking: Vec<u32> = range
                .rev()
                .filter(|&v| cx.vp_state(ParentVp(v)) == VpState::Requesting)
                .collect();
            for v in asking.into_iter().take((have - need) as usize) {
                cx.release(ParentVp(v));
            }
        }
    }

    /// When every own VP is busy, preempts the least urgent thread running
    /// on one of them if something more urgent waits (a spin that must
    /// begin, a fresh wakeup).
    fn rebalance(&mut self, cx: &mut Cx) {
        let own = self.own(cx.vp_count());
        let Some(best) = self.best_unassigned(cx) else {
            return;
        };
        let mut worst: Option<(Rank, ParentVp)> = None;
        for v in 0..own {
            let vp = ParentVp(v);
            let busy = matches!(cx.vp_state(vp), VpState::Held(_));
            match self.on_vp.get(v as usize).copied().flatten() {
                Some(Task::Run(c)) if busy => {
                    let r = self.rank_of_run(c);
                    if worst.is_none_or(|(wr, _)| r < wr) {
                        worst = Some((r, vp));
                    }
                }
                Some(Task::Spin { .. }) if busy => {}
                // A VP that is idle, asking, or held without a task will
                // take the work without preempting anyone.
                _ => return,
            }
        }
        if let Some((r, vp)) = worst {
            if best > r {
                cx.reschedule(vp);
            }
        }
    }

    /// Arms timer 0 for the next spin start, or (for a wakeup whose spin
    /// has begun) for its time, in case no VP could spin for it.
    fn arm(&mut self, cx: &mut Cx) {
        let (now, tick) = (cx.now(), cx.tick());
        let mut next: Option<Instant> = None;
        for &(w, _) in &self.pending {
            let s = self.spin_start(w, tick);
            if next.is_some_and(|n| s > n) {
                break; // spin starts only grow with w
            }
            let at = if s > now { s } else { w };
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        if next != self.armed {
            match next {
                Some(at) => cx.set_timer(TIMER, at),
                None => cx.cancel_timer(TIMER),
            }
            self.armed = next;
        }
    }

    /// Everything that follows a change of state.
    fn settle(&mut self, cx: &mut Cx) {
        self.sync(cx);
        self.rebalance(cx);
        self.arm(cx);
    }

    /// Whether a wakeup at `w` for `child` can be promised; why not.
    fn check_promise(&self, cx: &Cx, child: ChildId, w: Instant) -> Result<(), String> {
        let (now, tick) = (cx.now(), cx.tick());
        let own = self.own(cx.vp_count());
        if own == 0 {
            return Err("rtwake holds no VP of its own (all are under the default \
                        scheduler), so it cannot take a CPU at a given time"
                .into());
        }
        if w <= now {
            return Err(format!("the time {w} has passed (now {now})"));
        }
        let ahead = w - now;
        if ahead < self.latency {
            return Err(format!(
                "{w} is only {ahead} from now, closer than rtwake's latency {} \
                 (Tpredicted): it cannot take the CPU in time",
                self.latency
            ));
        }
        // Windows [S(w'), w'] that overlap [S(w), w]: w' >= S(w), and
        // S(w') <= w, which needs w' <= w + latency + tick.
        let s = self.spin_start(w, tick);
        let reach = self.latency.saturating_add(tick.unwrap_or(Duration::ZERO));
        let upto = w.saturating_add(reach);
        let clashes: Vec<(Instant, ChildId)> = self
            .pending
            .range((s, ChildId(0))..=(upto, ChildId(u32::MAX)))
            .copied()
            .filter(|&(w2, c)| c != child && self.spin_start(w2, tick) <= w)
            .collect();
        if clashes.len() as u32 >= own {
            let (w2, c) = clashes[0];
            return Err(format!(
                "it collides with the wakeup promised to {} at {w2}: rtwake holds a \
                 CPU from {} to {w} for this one and from {} to {w2} for that one, \
                 and has {own} VP(s) of its own",
                self.who(c),
                s,
                self.spin_start(w2, tick)
            ));
        }
        Ok(())
    }

    /// Promises `child` a wakeup at `w` (already checked).
    fn promise(&mut self, cx: &mut Cx, child: ChildId, w: Instant) -> Params {
        self.unassign(cx, child);
        self.unlist(child);
        self.enlist(child, Wake::Waiting(w));
        self.children[child].last = Some(w);
        let s = self.spin_start(w, cx.tick());
        Params::new()
            .with("wakeup", Value::Duration(since_zero(w)))
            .with("spin_from", Value::Duration(since_zero(s)))
    }

    /// A woken child that sends a request has had its wakeup.
    fn end_wakeup(&mut self, cx: &mut Cx, child: ChildId) {
        if let Wake::Due(_) = self.children[child].wake {
            self.unlist(child);
            self.enlist(child, Wake::Free);
            if self.background_vps > 0 {
                // Free children run only under the default scheduler.
                self.unassign(cx, child);
            }
        }
    }

    fn set(&mut self, cx: &mut Cx, child: ChildId, args: &Params) -> Result<Params, String> {
        for (k, _) in args.iter() {
            if !["in", "at", "period"].contains(&k) {
                return Err(format!(
                    "unknown argument `{k}` (expected `in` or `at`, and optionally `period`)"
                ));
            }
        }
        let w = match (duration_arg(args, "in")?, duration_arg(args, "at")?) {
            (Some(d), None) => cx.now().saturating_add(d),
            (None, Some(t)) => Instant::ZERO.saturating_add(t),
            _ => {
                return Err(
                    "give the wakeup as exactly one of `in` (a delay from now) or `at` \
                     (a time since the start)"
                        .into(),
                )
            }
        };
        let period = duration_arg(args, "period")?;
        if period.is_some_and(|p| p.is_zero()) {
            return Err("`period` must be longer than zero".into());
        }
        self.end_wakeup(cx, child);
        self.check_promise(cx, child, w)?;
        let mut reply = self.promise(cx, child, w);
        self.children[child].period = period;
        if let Some(p) = period {
            reply.set("period", Value::Duration(p));
        }
        Ok(reply)
    }

    fn wait(&mut self, cx: &mut Cx, child: ChildId) -> Result<Params, String> {
        let ch = &self.children[child];
        let (Some(period), Some(last)) = (ch.period, ch.last) else {
            return Err("there is no periodic wakeup: `set` one with a `period` first".into());
        };
        self.end_wakeup(cx, child);
        let w = last.saturating_add(period);
        // The grid moves on whether or not this one can be honoured.
        self.children[child].last = Some(w);
        if let Err(why) = self.check_promise(cx, child, w) {
            return Err(format!(
                "the periodic wakeup at {w} cannot be honoured: {why}; the next `wait` \
                 asks for {}",
                w.saturating_add(period)
            ));
        }
        Ok(self.promise(cx, child, w))
    }

    fn cancel(&mut self, cx: &mut Cx, child: ChildId) {
        self.end_wakeup(cx, child);
        if let Wake::Waiting(_) = self.children[child].wake {
            self.unassign(cx, child);
            self.unlist(child);
            self.enlist(child, Wake::Free);
        }
        let ch = &mut self.children[child];
        ch.period = None;
        ch.last = None;
    }
}

fn since_zero(t: Instant) -> Duration {
    t.saturating_since(Instant::ZERO)
}

/// A duration argument: a duration, or an integer of nanoseconds.
fn duration_arg(args: &Params, key: &str) -> Result<Option<Duration>, String> {
    match args.get(key) {
        None => Ok(None),
        Some(Value::Duration(d)) => Ok(Some(*d)),
        Some(Value::Int(i)) if *i >= 0 => Ok(Some(Duration(*i as u64))),
        Some(v) => Err(format!(
            "`{key}` = {v}: expected a duration such as \"1ms\""
        )),
    }
}

impl Scheduler for RtWake {
    fn policy(&self) -> &'static str {
        "rtwake"
    }

    /// Everyone is admitted: a thread asks for wakeups with messages, and
    /// each is admitted (or refused) on its own.
    fn register_vp(
        &mut self,
        _cx: &mut Cx,
        child: ChildId,
        _params: &Params,
    ) -> Result<(), Reject> {
        self.children.insert(
            child,
            Child {
                wake: Wake::Free,
                runnable: false,
                on: None,
                used: Duration::ZERO,
                period: None,
                last: None,
                thread: None,
            },
        );
        Ok(())
    }

    /// A child leaves (`leave`, moved, exited, or rtwake is unloaded): its
    /// promise goes with it, and a spin for it stops.
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(on) = self.children.get(child).map(|ch| ch.on) else {
            return;
        };
        // The CPU it ran on is re-decided by the dispatcher; a spin for it
        // is cut short here.
        if let Some(v) = on {
            if let Some(Task::Spin { .. }) = self.slot(v).take() {
                cx.reschedule(v);
            }
        }
        self.unlist(child);
        self.children.remove(child);
        if self.cursor == Some(child) {
            self.cursor = None;
        }
        self.settle(cx);
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let ch = &mut self.children[child];
        if ch.runnable {
            return;
        }
        ch.runnable = true;
        let wake = ch.wake;
        // A waiting child is in no run set: nothing runs it before its time.
        self.enlist(child, wake);
        self.settle(cx);
    }

    /// A child blocked: a due one has had its wakeup; a waiting one keeps
    /// its promise (it gets the wakeup only if runnable again by then).
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.children[child].runnable {
            return;
        }
        self.unlist(child);
        let ch = &mut self.children[child];
        ch.runnable = false;
        if let Wake::Due(_) = ch.wake {
            ch.wake = Wake::Free;
        }
        let wake = ch.wake;
        if let Some(v) = ch.on {
            if self.on_vp.get(v.index()).copied().flatten() == Some(Task::Run(child)) {
                ch.on = None;
                self.on_vp[v.index()] = None;
            }
        }
        self.enlist(child, wake);
        self.settle(cx);
    }

    /// The only place rtwake chooses (Vassal's `decision_maker`).
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        self.stop(vp);
        self.promote(cx);
        let now = cx.now();
        let own = self.own(cx.vp_count());
        let pick = if vp.0 >= own {
            self.unassigned_free().map(Task::Run)
        } else if let Some((at, child)) = self.unassigned_spin(cx) {
            Some(Task::Spin { child, at })
        } else if let Some((_, c)) = self.unassigned_due() {
            Some(Task::Run(c))
        } else if self.background_vps == 0 {
            self.unassigned_free().map(Task::Run)
        } else {
            None
        };
        let answer = match pick {
            Some(Task::Spin { child, at }) => {
                self.children[child].on = Some(vp);
                Dispatch::Spin { until: at }
            }
            Some(Task::Run(c)) => {
                let ch = &mut self.children[c];
                ch.on = Some(vp);
                let slice = match ch.wake {
                    Wake::Due(_) => self.quantum.saturating_sub(ch.used),
                    _ => {
                        self.cursor = Some(c);
                        self.quantum
                    }
                };
                Dispatch::Run {
                    child: c,
                    until: now.saturating_add(slice.max(Duration::from_nanos(1))),
                }
            }
            None => Dispatch::Release,
        };
        *self.slot(vp) = pick;
        self.settle(cx);
        answer
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp);
        self.settle(cx);
    }

    /// A woken child that used `quantum` since its wakeup is free again.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        let Some(ch) = self.children.get_mut(child) else {
            return;
        };
        if let Wake::Due(_) = ch.wake {
            ch.used = ch.used.saturating_add(ran);
            if ch.used >= self.quantum {
                self.end_wakeup(cx, child);
                self.settle(cx);
            }
        }
    }

    /// A spin must begin (or a wakeup's time has come).
    fn timer(&mut self, cx: &mut Cx, _key: TimerKey) {
        self.armed = None;
        self.promote(cx);
        self.settle(cx);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        let name = msg.name.as_str();
        if !["set", "wait", "cancel"].contains(&name) {
            return Reply::unknown(self.policy(), msg);
        }
        let Some(child) = from.child.filter(|&c| self.children.contains(c)) else {
            return Reply::Err(format!(
                "rtwake: `{name}` must come from a thread under rtwake: send it `join` first"
            ));
        };
        if from.thread.is_some() {
            self.children[child].thread = from.thread;
        }
        self.promote(cx);
        let result = match name {
            "set" => self.set(cx, child, &msg.args),
            "wait" => self.wait(cx, child),
            _ => {
                self.cancel(cx, child);
                Ok(Params::new())
            }
        };
        self.settle(cx);
        match result {
            Ok(p) => Reply::Ok(p),
            Err(why) => Reply::Err(format!("rtwake: `{name}` refused: {why}")),
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        let (mut pending, mut due, mut free) = (0, 0, 0);
        for (c, ch) in self.children.iter() {
            let listed = match ch.wake {
                Wake::Waiting(w) => {
                    pending += 1;
                    self.pending.contains(&(w, c))
                }
                Wake::Due(w) => {
                    due += 1;
                    if !ch.runnable {
                        return Err(format!("{c} is due but cannot run"));
                    }
                    if ch.used >= self.quantum {
                        return Err(format!("{c} is due but used its quantum"));
                    }
                    self.due.contains(&(Reverse(w), c))
                }
                Wake::Free if ch.runnable => {
                    free += 1;
                    self.free.contains(&c)
                }
                Wake::Free => !self.free.contains(&c),
            };
            if !listed {
                return Err(format!("{c} ({ch:?}) is not where its state says"));
            }
            if let Some(v) = ch.on {
                let task = self.on_vp.get(v.index()).copied().flatten();
                let ok = match (task, ch.wake) {
                    (Some(Task::Spin { child, at }), Wake::Waiting(w)) => child == c && at == w,
                    // Never early: a waiting child never runs.
                    (Some(Task::Run(child)), Wake::Due(_) | Wake::Free) => {
                        child == c && ch.runnable
                    }
                    _ => false,
                };
                if !ok {
                    return Err(format!("{c} ({ch:?}) is on {v}, which does {task:?}"));
                }
            }
        }
        if (pending, due, free) != (self.pending.len(), self.due.len(), self.free.len()) {
            return Err(format!(
                "set sizes {}/{}/{} but {pending}/{due}/{free} children waiting/due/free",
                self.pending.len(),
                self.due.len(),
                self.free.len()
            ));
        }
        for (v, task) in self.on_vp.iter().enumerate() {
            if let Some(Task::Spin { child, .. } | Task::Run(child)) = task {
                if self.children.get(*child).and_then(|ch| ch.on) != Some(ParentVp(v as u32)) {
                    return Err(format!("vp{v} does {task:?} but its child is not on it"));
                }
            }
        }
        if let Some(&(w, _)) = self.pending.first() {
            if self.armed.is_none_or(|a| a > w) {
                return Err(format!(
                    "a wakeup is promised at {w} but the timer is armed for {:?}",
                    self.armed
                ));
            }
        }
        Ok(())
    }
}
