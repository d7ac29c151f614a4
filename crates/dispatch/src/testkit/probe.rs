//! The policy under test as the dispatcher sees it: a [`Probe`] forwards
//! every callback and records, in a [`Record`] it shares with the harness,
//! what the harness reads back (decisions, charged segments, effects,
//! timers), and hands the policy what the harness gives it past the
//! dispatcher (a child's parameters, a message's sender).

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Effect, Instant, Msg, Params, ParentVp, Reject, Reply,
    Scheduler, Sender, TimerKey, VpState,
};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// One stretch of CPU time a child received (as charged to the policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub child: ChildId,
    pub vp: ParentVp,
    pub start: Instant,
    pub end: Instant,
}

/// One answer the policy gave to a grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub at: Instant,
    pub vp: ParentVp,
    pub dispatch: Dispatch,
}

/// What the harness hands the policy past the dispatcher, and what it
/// records of the policy's callbacks; shared by the harness and the
/// [`Probe`] the dispatcher calls.
#[derive(Default)]
pub(crate) struct Record {
    /// Run `check_invariants` after every callback.
    pub checking: bool,
    pub tick: Option<Duration>,
    /// The attachment parameters of the child being registered.
    pub params: Params,
    /// The sender of the message being delivered.
    pub sender: Option<Sender>,
    /// The child the last `register_vp` was asked about, and its answer.
    pub registered: Option<(ChildId, Result<(), Reject>)>,
    /// `init`'s effects, once it ran (replayed when the dispatcher is
    /// rebuilt with another tick or checking mode).
    pub init: Option<Vec<Effect>>,
    pub effects: Vec<Effect>,
    pub decisions: Vec<Decision>,
    pub segments: Vec<Segment>,
    pub cpu_time: Vec<Duration>,
    /// Per VP: the child the last grant ran there, with its horizon
    /// (rounded up to the tick, as the dispatcher arms it).
    pub runs: Vec<Option<(ChildId, Instant)>>,
    pub timers: BTreeMap<TimerKey, Instant>,
}

impl Record {
    fn quantize(&self, at: Instant) -> Instant {
        match self.tick {
            Some(t) if !at.is_never() && !t.is_zero() => {
                let t = t.as_nanos();
                Instant(at.as_nanos().div_ceil(t).saturating_mul(t))
            }
            _ => at,
        }
    }

    fn note_effects(&mut self, now: Instant, effects: &[Effect]) {
        for e in effects {
            match *e {
                Effect::SetTimer { key, at } => {
                    let at = self.quantize(at.max(now));
                    self.timers.insert(key, at);
                }
                Effect::CancelTimer { key } => {
                    self.timers.remove(&key);
                }
                _ => {}
            }
            self.effects.push(e.clone());
        }
    }
}

/// The policy under test as the dispatcher sees it: forwards every
/// callback and records what the harness reads back.
pub(crate) struct Probe<S: ?Sized> {
    pub policy: Rc<RefCell<Box<S>>>,
    pub record: Rc<RefCell<Record>>,
}

impl<S: Scheduler + ?Sized> Probe<S> {
    fn forward<R>(&mut self, cx: &mut Cx, f: impl FnOnce(&mut S, &mut Cx) -> R) -> R {
        let vps: Vec<VpState> = (0..cx.vp_count())
            .map(|v| cx.vp_state(ParentVp(v)))
            .collect();
        let mut effects = Vec::new();
        let r = {
            let mut inner = Cx::new(cx.now(), cx.cpus(), cx.tick(), &vps, &mut effects);
            inner.set_involuntary(cx.involuntary());
            f(&mut self.policy.borrow_mut(), &mut inner)
        };
        self.record.borrow_mut().note_effects(cx.now(), &effects);
        for e in effects {
            cx.replay(e);
        }
        r
    }
}

impl<S: Scheduler + ?Sized> Scheduler for Probe<S> {
    fn policy(&self) -> &'static str {
        self.policy.borrow().policy()
    }
    fn init(&mut self, cx: &mut Cx) {
        let again = self.record.borrow().init.clone();
        match again {
            Some(effects) => {
                self.record.borrow_mut().note_effects(cx.now(), &effects);
                effects.into_iter().for_each(|e| cx.replay(e));
            }
            None => {
                let before = self.record.borrow().effects.len();
                self.forward(cx, |s, cx| s.init(cx));
                let mut record = self.record.borrow_mut();
                record.init = Some(record.effects[before..].to_vec());
            }
        }
    }
    fn deinit(&mut self, cx: &mut Cx) {
        self.forward(cx, |s, cx| s.deinit(cx));
    }
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, _: &Params) -> Result<(), Reject> {
        let params = std::mem::take(&mut self.record.borrow_mut().params);
        let r = self.forward(cx, |s, cx| s.register_vp(cx, child, &params));
        self.record.borrow_mut().registered = Some((child, r.clone()));
        r
    }
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        self.forward(cx, |s, cx| s.unregister_vp(cx, child));
    }
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        self.forward(cx, |s, cx| s.vp_request(cx, child));
    }
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        self.forward(cx, |s, cx| s.vp_release(cx, child));
    }
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) -> Dispatch {
        let answer = self.forward(cx, |s, cx| s.vp_grant(cx, vp, cpu));
        let mut record = self.record.borrow_mut();
        record.decisions.push(Decision {
            at: cx.now(),
            vp,
            dispatch: answer,
        });
        let run = match answer {
            Dispatch::Run { child, until } => Some((child, record.quantize(until))),
            _ => None,
        };
        if let Some(slot) = record.runs.get_mut(vp.index()) {
            *slot = run;
        }
        answer
    }
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) {
        self.forward(cx, |s, cx| s.vp_revoke(cx, vp, cpu));
    }
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        {
            let mut record = self.record.borrow_mut();
            let vp = record
                .runs
                .iter()
                .position(|r| r.is_some_and(|(c, _)| c == child))
                .map_or(ParentVp(0), |v| ParentVp(v as u32));
            let now = cx.now();
            record.segments.push(Segment {
                child,
                vp,
                start: Instant(now.as_nanos() - ran.as_nanos()),
                end: now,
            });
            if record.cpu_time.len() <= child.index() {
                record.cpu_time.resize(child.index() + 1, Duration::ZERO);
            }
            record.cpu_time[child.index()] += ran;
        }
        self.forward(cx, |s, cx| s.charge(cx, child, ran));
    }
    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        self.record.borrow_mut().timers.remove(&key);
        self.forward(cx, |s, cx| s.timer(cx, key));
    }
    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        let from = self.record.borrow_mut().sender.take().unwrap_or(from);
        self.forward(cx, |s, cx| s.msg(cx, from, msg))
    }
    fn sync(&mut self, cx: &mut Cx, event: &hsched_core::SyncEvent<ChildId>) {
        self.forward(cx, |s, cx| s.sync(cx, event));
    }
    fn check_invariants(&self) -> Result<(), String> {
        match self.record.borrow().checking {
            true => self.policy.borrow().check_invariants(),
            false => Ok(()),
        }
    }
}
