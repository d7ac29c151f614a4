//! Calling a policy: one callback at a time, its effects applied after it
//! returns (never re-entrantly), its invariants checked in checking mode; a
//! panic or an invalid effect ejects it. Effects that concern a parent are
//! queued as notifications and delivered when the dispatcher settles.

use crate::dispatcher::Dispatcher;
use crate::table::{Hop, Inst, Link, Note, TimerKind};
use hsched_core::{Cx, Effect, Msg, ParentVp, Reply, SchedId, Scheduler, Sender, VpState};
use hsched_model::LogKind;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A scheduler will be ejected when it asks for more re-decisions than this
/// within one event: it is livelocking the dispatcher.
const RESCHEDULE_LIMIT: u32 = 10_000;

impl Dispatcher {
    /// Calls one policy callback, then applies its effects and (in checking
    /// mode) its invariants. `None`: the scheduler is gone or was ejected.
    pub(crate) fn call<R>(
        &mut self,
        s: SchedId,
        f: impl FnOnce(&mut dyn Scheduler, &mut Cx) -> R,
    ) -> Option<R> {
        let (now, cpus, tick) = (self.now, self.cfg.cpus, self.cfg.tick);
        let inst = self.scheds.get_mut(s.index())?.as_mut()?;
        let mut cx = Cx::new(now, cpus, tick, &inst.vps, &mut self.effects);
        let policy = &mut inst.policy;
        let result = catch_unwind(AssertUnwindSafe(|| f(policy.as_mut(), &mut cx)));
        let r = match result {
            Ok(r) => r,
            Err(panic) => {
                self.effects.clear();
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                self.eject(s, format!("panicked: {what}"));
                return None;
            }
        };
        self.apply_effects(s);
        if self.cfg.check_invariants {
            let inst = self.inst(s)?;
            if let Err(e) = inst.policy.check_invariants() {
                self.eject(s, format!("broke its invariants: {e}"));
                return None;
            }
        }
        self.inst(s)?;
        Some(r)
    }

    fn apply_effects(&mut self, s: SchedId) {
        if self.effects.is_empty() {
            return;
        }
        let mut effects = std::mem::take(&mut self.effects);
        for e in effects.drain(..) {
            if self.inst(s).is_none() {
                break;
            }
            if let Err(why) = self.apply_effect(s, e) {
                self.eject(s, why);
                break;
            }
        }
        effects.clear();
        if self.effects.is_empty() {
            self.effects = effects; // keep the allocation
        }
    }

    fn apply_effect(&mut self, s: SchedId, e: Effect) -> Result<(), String> {
        let is_root = self.root == Some(s);
        let now = self.now;
        let inst = self.inst_mut(s).unwrap();
        let vp_ok = |vp: ParentVp, inst: &Inst| {
            if vp.index() < inst.vps.len() {
                Ok(())
            } else {
                Err(format!("used {vp}, but holds only {} VPs", inst.vps.len()))
            }
        };
        match e {
            Effect::SetTimer { key, at } => {
                let at = self.quantize(at.max(now));
                self.seq += 1;
                let gen = self.seq;
                self.inst_mut(s).unwrap().timers.insert(key, gen);
                self.arm(at, TimerKind::Policy { sched: s, key, gen });
            }
            Effect::CancelTimer { key } => {
                inst.timers.remove(&key);
            }
            Effect::Request(vp) => {
                vp_ok(vp, inst)?;
                self.request_vp(s, vp, is_root);
            }
            Effect::Release(vp) => {
                vp_ok(vp, inst)?;
                self.release_vp(s, vp);
            }
            Effect::WantCpus(n) => {
                let n = (n as usize).min(inst.vps.len());
                if is_root {
                    let busy = self
                        .cpus
                        .iter()
                        .filter(|c| {
                            !c.path.first().is_some_and(Hop::root_declined) || c.dirty.is_some()
                        })
                        .count();
                    let mut missing = n.saturating_sub(busy);
                    for cpu in 0..self.cpus.len() {
                        if missing == 0 {
                            break;
                        }
                        let c = &self.cpus[cpu];
                        if c.dirty.is_none() && c.path.first().is_some_and(Hop::root_declined) {
                            self.mark_dirty(cpu, 0);
                            missing -= 1;
                        }
                    }
                } else {
                    let count = inst.vps.len();
                    let have = inst
                        .vps
                        .iter()
                        .filter(|v| !matches!(v, VpState::Idle))
                        .count();
                    if n > have {
                        let mut missing = n - have;
                        for vp in 0..count {
                            if missing == 0 {
                                break;
                            }
                            if self.inst(s).unwrap().vps[vp] == VpState::Idle {
                                self.request_vp(s, ParentVp(vp as u32), false);
                                missing -= 1;
                            }
                        }
                    } else {
                        let mut surplus = have - n;
                        for vp in (0..count).rev() {
                            if surplus == 0 {
                                break;
                            }
                            if self.inst(s).unwrap().vps[vp] == VpState::Requesting {
                                self.release_vp(s, ParentVp(vp as u32));
                                surplus -= 1;
                            }
                        }
                    }
                }
            }
            Effect::Reschedule(vp) => {
                vp_ok(vp, inst)?;
                if let VpState::Held(cpu) = inst.vps[vp.index()] {
                    self.count_reschedule(s)?;
                    self.resched_at(cpu, s);
                }
            }
            Effect::MsgParent { vp, msg } => {
                vp_ok(vp, inst)?;
                if let Some(link) = inst.links[vp.index()] {
                    self.notes.push_back(Note::Msg(link, msg));
                }
            }
            Effect::Revoke(child) => {
                let kid = inst
                    .kid(child)
                    .ok_or_else(|| format!("revoked {child}, which is not its child"))?;
                if let Some(cpu) = kid.running {
                    self.count_reschedule(s)?;
                    self.resched_at(cpu, s);
                }
            }
        }
        Ok(())
    }

    fn count_reschedule(&mut self, s: SchedId) -> Result<(), String> {
        let event = self.event;
        let inst = self.inst_mut(s).unwrap();
        if inst.reschedules_event != event {
            inst.reschedules_event = event;
            inst.reschedules = 0;
        }
        inst.reschedules += 1;
        if inst.reschedules > RESCHEDULE_LIMIT {
            return Err(format!(
                "asked for more than {RESCHEDULE_LIMIT} reschedules at one instant (livelock)"
            ));
        }
        Ok(())
    }

    pub(crate) fn request_vp(&mut self, s: SchedId, vp: ParentVp, is_root: bool) {
        if is_root {
            let cpu = vp.index();
            if self.cpus[cpu].path.first().is_some_and(Hop::root_declined) {
                self.mark_dirty(cpu, 0);
            }
            return;
        }
        let inst = self.inst_mut(s).unwrap();
        if inst.vps[vp.index()] == VpState::Idle {
            inst.vps[vp.index()] = VpState::Requesting;
            if let Some(link) = inst.links[vp.index()] {
                self.notes.push_back(Note::Request(link));
            }
        }
    }

    pub(crate) fn release_vp(&mut self, s: SchedId, vp: ParentVp) {
        let inst = self.inst_mut(s).unwrap();
        match inst.vps[vp.index()] {
            VpState::Idle => {}
            VpState::Requesting => {
                inst.vps[vp.index()] = VpState::Idle;
                if let Some(link) = inst.links[vp.index()] {
                    self.notes.push_back(Note::Release(link));
                }
            }
            // Giving back a held CPU is answered at the next decision on it.
            VpState::Held(cpu) => self.resched_at(cpu, s),
        }
    }

    // ----- notifications ------------------------------------------------------

    pub(crate) fn deliver_request(&mut self, link: Link) {
        let Some(kid) = self
            .inst_mut(link.parent)
            .and_then(|i| i.kid_mut(link.child))
        else {
            return;
        };
        if !kid.runnable {
            kid.runnable = true;
            self.call(link.parent, |s, cx| s.vp_request(cx, link.child));
        }
    }

    pub(crate) fn deliver_release(&mut self, link: Link) {
        let Some(kid) = self
            .inst_mut(link.parent)
            .and_then(|i| i.kid_mut(link.child))
        else {
            return;
        };
        if kid.runnable {
            kid.runnable = false;
            let involuntary = self.involuntary;
            self.call(link.parent, |s, cx| {
                cx.set_involuntary(involuntary);
                s.vp_release(cx, link.child)
            });
        }
    }

    pub(crate) fn deliver_child_msg(&mut self, link: Link, msg: &Msg) {
        let sender = Sender {
            thread: None,
            child: Some(link.child),
        };
        if let Some(Reply::Err(e)) = self.call(link.parent, |s, cx| s.msg(cx, sender, msg)) {
            let parent = self.sched_name(link.parent).to_string();
            self.record(
                LogKind::Refused,
                format!("`{parent}` refused {msg} from its child: {e}"),
            );
        }
    }
}
