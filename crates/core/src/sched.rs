//! The scheduler protocol: the [`Scheduler`] trait every policy implements,
//! the [`Dispatch`] decision it returns, and the [`Cx`] through which it acts.
//!
//! This is the HLS notification interface (Regehr & Stankovic, Table 3) with
//! Vassal's delegation (a scheduler may decline a decision and its parent
//! decides). A scheduler instance holds virtual processors (VPs) from its
//! parent(s) and hands one VP to each child. A VP is *idle* (does not want a
//! CPU), *requesting* (wants one) or *held* (a CPU has been granted to it).
//!
//! # Rules the dispatcher enforces
//!
//! - A decision names a child that is registered, requesting, and not already
//!   running on another CPU. A horizon lies in the future.
//! - `check_invariants` holds after every callback (in tests: after every event).
//! - A callback does not panic.
//! - A requesting thread does not starve past the watchdog bound.
//!
//! A scheduler that breaks one is ejected: it is removed from the hierarchy and
//! its threads return to the default scheduler with their state intact, as
//! Linux ejects a misbehaving `sched_ext` scheduler. "Answering twice" cannot
//! happen by construction: a grant is answered by the value `vp_grant` returns.
//!
//! # Callbacks and what they may do
//!
//! Every callback receives a [`Cx`]. Effects requested through it (timers,
//! requests to the parent, reschedules) are applied by the dispatcher after the
//! callback returns, never re-entrantly. Only `vp_grant` chooses who runs;
//! the other callbacks update state and, when the choice may have changed, ask
//! for a reschedule ("decide in one place").

use crate::ids::{ChildId, CpuId, ParentVp, ThreadId, TimerKey};
use crate::msg::{Msg, Reply};
use crate::params::Params;
use crate::time::Instant;
use std::fmt;

/// A scheduler's answer to a grant: what the CPU it was handed does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Run `child` on the CPU. The decision stands until `until` (its time
    /// horizon; `Instant::NEVER` for none), when `vp_grant` is called again,
    /// unless something ends it first: the child releases or exits, this
    /// scheduler asks for a reschedule, or the parent revokes the CPU.
    Run { child: ChildId, until: Instant },
    /// Keep the CPU but leave it idle until `until` (a non-work-conserving
    /// choice, e.g. a hard reservation whose budget is spent).
    Idle { until: Instant },
    /// Keep the CPU, idle, busy-waiting until exactly `until`. Unlike
    /// `Idle`, the horizon is not rounded up to the platform tick: the CPU
    /// polls the clock instead of waiting for the next clock interrupt
    /// (Vassal §5: the sample real-time scheduler takes the CPU slightly
    /// early and spins until the exact wakeup time). No thread makes
    /// progress meanwhile; the time counts as idle, charged to no one.
    Spin { until: Instant },
    /// Decline the CPU: hand it back and let the parent decide (Vassal's
    /// delegation). The VP it came on becomes idle; the scheduler requests it
    /// again (`Cx::request` / `Cx::want_cpus`) when it wants a CPU.
    Release,
}

impl Dispatch {
    /// Run `child` with no horizon.
    #[inline]
    pub fn run(child: ChildId) -> Self {
        Dispatch::Run {
            child,
            until: Instant::NEVER,
        }
    }
}

/// A refused admission, with the reason ("which guarantee could not be met and why").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reject(pub String);

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who sent a message: a thread (`thread` set; `child` too if it is this
/// scheduler's child), a child scheduler (`thread: None, child: Some`), or
/// the operator (both `None`: a scenario script, `hsched ctl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sender {
    pub thread: Option<ThreadId>,
    /// The sender's VP as this scheduler knows it, if the sender is its child.
    pub child: Option<ChildId>,
}

/// A CPU-scheduling policy instance. See the module documentation for the
/// rules; each method says when it is called, what it may do and what it
/// pairs with.
pub trait Scheduler {
    /// The policy's registered name (`"rr"`, `"bvt"`, ...), for messages and logs.
    fn policy(&self) -> &'static str;

    /// Called once, after the instance is created and before anything else.
    /// May set timers. Pairs with `deinit`.
    fn init(&mut self, _cx: &mut Cx) {}

    /// Called once when the instance is destroyed in an orderly way (not when
    /// it is ejected). Its children have already been moved away.
    fn deinit(&mut self, _cx: &mut Cx) {}

    /// A child asks to join with `params` (already checked against the
    /// policy's declared child parameters). Admission control happens here:
    /// return `Err(Reject)` with the reason to refuse; the child then stays
    /// where it was. The child starts idle (not requesting). Pairs with
    /// `unregister_vp`.
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject>;

    /// A child leaves (moved, exited or destroyed). If it was requesting, no
    /// `vp_release` comes first; if it was running, the CPU it ran on is
    /// re-decided afterwards by a `vp_grant`. Its `ChildId` may be reused.
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId);

    /// A child wants a CPU (a thread woke up, a child scheduler got work).
    /// Update state; if the child should run now, ask for CPUs
    /// (`Cx::want_cpus`, `Cx::request`) or preempt (`Cx::revoke`,
    /// `Cx::reschedule`). Pairs with `vp_release`.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId);

    /// A child no longer wants a CPU (blocked, or a scheduler ran out of
    /// work). If it was running, its CPU is re-decided by a `vp_grant` right
    /// after this call.
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId);

    /// The CPU `cpu` held on `vp` needs a decision: the parent just granted
    /// it, or the previous decision on it ended (horizon reached, the child
    /// released it or declined it, a reschedule was asked). Return exactly one
    /// [`Dispatch`]. The child chosen must be requesting and not running
    /// elsewhere. Pairs with `vp_revoke` (the parent takes the CPU back) or
    /// with the next `vp_grant` on the same VP (this scheduler keeps it).
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) -> Dispatch;

    /// The parent took back the CPU held on `vp`; whatever ran on it under
    /// this scheduler has stopped (and was charged). The VP stays requesting.
    /// What this callback asks of the parents (`Cx::request`,
    /// `Cx::want_cpus`) is delivered before the CPU is decided again, so the
    /// new decision already counts those requests.
    fn vp_revoke(&mut self, _cx: &mut Cx, _vp: ParentVp, _cpu: CpuId) {}

    /// `child` ran for `ran` ending now (called on every scheduler on the path
    /// from the root to the thread, bottom-up, whenever a run segment ends,
    /// before the `vp_release` / `vp_revoke` / `vp_grant` that follows), so
    /// virtual times and budgets stay exact. May ask for a reschedule.
    fn charge(&mut self, _cx: &mut Cx, _child: ChildId, _ran: crate::Duration) {}

    /// A timer this scheduler set with `Cx::set_timer` fired. Timers are
    /// one-shot.
    fn timer(&mut self, _cx: &mut Cx, _key: TimerKey) {}

    /// A message from a thread or the operator (Vassal's MessageToScheduler,
    /// HLS's HLSCtl), answered at once. Unknown messages: `Reply::unknown`.
    fn msg(&mut self, _cx: &mut Cx, _from: Sender, msg: &Msg) -> Reply {
        Reply::unknown(self.policy(), msg)
    }

    /// A child thread took, waits for or gave up a mutex, or an RPC between
    /// two child threads began or ended (see [`crate::SyncEvent`]). A policy
    /// that lends scheduling state across them updates it here and asks for
    /// a reschedule when the choice may have changed; the default ignores
    /// it.
    fn sync(&mut self, _cx: &mut Cx, _event: &crate::SyncEvent<ChildId>) {}

    /// The policy's own consistency checks; called after every callback in
    /// tests and debug runs. An `Err` ejects the scheduler.
    fn check_invariants(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The state of one of a scheduler's own virtual processors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VpState {
    /// Does not want a CPU.
    Idle,
    /// Wants a CPU, not granted yet.
    Requesting,
    /// Holds this CPU.
    Held(CpuId),
}

/// Something a policy asked for during a callback; applied afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    SetTimer {
        key: TimerKey,
        at: Instant,
    },
    CancelTimer {
        key: TimerKey,
    },
    /// Make `vp` requesting (no effect if already requesting or held).
    Request(ParentVp),
    /// Make `vp` idle if it is requesting. If it is held, the CPU on it is
    /// re-decided: the policy's next `vp_grant` answers `Release` to give it
    /// back.
    Release(ParentVp),
    /// Keep exactly `min(n, vps)` VPs requesting or held: requests idle VPs
    /// (lowest first) or releases requesting ones that hold no CPU (highest
    /// first). On a held VP idling because of an earlier `Release`/`Idle`
    /// answer at the root, wakes it.
    WantCpus(u32),
    /// Re-decide the CPU held on `vp` (a new `vp_grant` follows).
    Reschedule(ParentVp),
    /// Take the CPU away from `child`: re-decide the CPU it runs on.
    Revoke(ChildId),
    /// Send a message to the parent this scheduler holds `vp` from (a
    /// child scheduler telling its parent about itself, e.g. the warp a
    /// second-level BVT runs with). Delivered to the parent's `msg` with
    /// `Sender { thread: None, child: Some(..) }`; the reply is dropped, a
    /// refusal logged.
    MsgParent {
        vp: ParentVp,
        msg: Msg,
    },
}

/// The context a policy acts through. Created by the dispatcher for each
/// callback; cheap. Reading `now` is the only clock a policy has.
pub struct Cx<'a> {
    now: Instant,
    cpus: u32,
    tick: Option<crate::Duration>,
    vps: &'a [VpState],
    effects: &'a mut Vec<Effect>,
    involuntary: bool,
}

impl<'a> Cx<'a> {
    /// Made by the dispatcher (and by test harnesses).
    #[inline]
    pub fn new(
        now: Instant,
        cpus: u32,
        tick: Option<crate::Duration>,
        vps: &'a [VpState],
        effects: &'a mut Vec<Effect>,
    ) -> Self {
        Cx {
            now,
            cpus,
            tick,
            vps,
            effects,
            involuntary: false,
        }
    }

    /// Marks this context as delivering an involuntary block (see
    /// [`Cx::involuntary`]); used by the dispatcher and test harnesses.
    pub fn set_involuntary(&mut self, involuntary: bool) {
        self.involuntary = involuntary;
    }

    /// In `vp_release`: whether the child blocked involuntarily (a page
    /// fault, not a sleep or a wait it chose). BVT can keep such a thread's
    /// virtual time in its SVT computation (paper §2.2). False in every
    /// other callback.
    pub fn involuntary(&self) -> bool {
        self.involuntary
    }
    /// The current time.
    #[inline]
    pub fn now(&self) -> Instant {
        self.now
    }
    /// Physical CPUs in the machine.
    #[inline]
    pub fn cpus(&self) -> u32 {
        self.cpus
    }
    /// The platform's clock tick (the papers' mcu), if the run has one: with a
    /// tick, timers and horizons take effect at the first tick at or after
    /// their time, as in a tick-driven kernel (except a [`Dispatch::Spin`]
    /// horizon, which is exact: the CPU polls the clock).
    #[inline]
    pub fn tick(&self) -> Option<crate::Duration> {
        self.tick
    }
    /// How many VPs this scheduler holds from its parents.
    #[inline]
    pub fn vp_count(&self) -> u32 {
        self.vps.len() as u32
    }
    /// The state of `vp` as of the start of this callback.
    #[inline]
    pub fn vp_state(&self, vp: ParentVp) -> VpState {
        self.vps.get(vp.index()).copied().unwrap_or(VpState::Idle)
    }
    /// Arm (or move) the one-shot timer `key` to fire at `at`.
    #[inline]
    pub fn set_timer(&mut self, key: TimerKey, at: Instant) {
        self.effects.push(Effect::SetTimer { key, at });
    }
    /// Disarm timer `key` (no effect if it is not armed).
    #[inline]
    pub fn cancel_timer(&mut self, key: TimerKey) {
        self.effects.push(Effect::CancelTimer { key });
    }
    /// Ask the parent for a CPU on `vp`.
    #[inline]
    pub fn request(&mut self, vp: ParentVp) {
        self.effects.push(Effect::Request(vp));
    }
    /// Stop asking for a CPU on `vp` (or give back the one held).
    #[inline]
    pub fn release(&mut self, vp: ParentVp) {
        self.effects.push(Effect::Release(vp));
    }
    /// Want `n` CPUs from the parents: the usual call for a work-conserving
    /// policy after its set of runnable children changed.
    #[inline]
    pub fn want_cpus(&mut self, n: u32) {
        self.effects.push(Effect::WantCpus(n));
    }
    /// Re-decide the CPU held on `vp`.
    #[inline]
    pub fn reschedule(&mut self, vp: ParentVp) {
        self.effects.push(Effect::Reschedule(vp));
    }
    /// Preempt `child`: re-decide the CPU it runs on.
    #[inline]
    pub fn revoke(&mut self, child: ChildId) {
        self.effects.push(Effect::Revoke(child));
    }
    /// Tell the parent of `vp` something (see [`Effect::MsgParent`]).
    pub fn msg_parent(&mut self, vp: ParentVp, msg: Msg) {
        self.effects.push(Effect::MsgParent { vp, msg });
    }
    /// Asks for `effect` as its own method would: for an adapter that
    /// collected a callback's effects elsewhere (a test probe, a Python
    /// policy's `Cx`) and hands them on, in order.
    #[inline]
    pub fn replay(&mut self, effect: Effect) {
        self.effects.push(effect);
    }
}
