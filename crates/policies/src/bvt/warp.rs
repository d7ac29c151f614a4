//! BVT's warp (§2.4): episodes begun when a child wants one and `U`
//! allows it, ended at the limit `L`, and what the parent is told about
//! running warped.

use super::{unwarp_key, Bvt, Child, Mode, State, OFF};
use hsched_core::{ChildId, Cx, Instant, Msg, ParentVp, Value};

impl Bvt {
    /// Starts a warp episode if `child` wants one and `U` allows it, else
    /// arms the timer for when it does. Sets fields only: callers re-file.
    pub(super) fn begin_warp(&mut self, cx: &mut Cx, child: ChildId, now: Instant) -> bool {
        let c = &mut self.children[child];
        if !c.want || c.warped {
            return false;
        }
        if let Some(t) = c.last_unwarp.filter(|_| !c.unwarp.is_zero()) {
            let at = t.saturating_add(c.unwarp);
            if now < at {
                if c.rewarp_at.replace(at) != Some(at) {
                    cx.set_timer(unwarp_key(child), at);
                }
                return false;
            }
        }
        if c.rewarp_at.take().is_some() {
            cx.cancel_timer(unwarp_key(child));
        }
        c.warped = true;
        c.warp_left = Some(c.limit_value()).filter(|l| !l.is_zero());
        true
    }

    /// `begin_warp` for a runnable child, re-filed and timed.
    pub(super) fn try_warp(&mut self, cx: &mut Cx, child: ChildId, now: Instant) {
        let old = self.children[child].evt();
        if self.children[child].runnable() && self.begin_warp(cx, child, now) {
            let running = matches!(self.children[child].state, State::Running(_));
            self.set_limit_timer(cx, child, now, running);
            self.evt_changed(cx, child, old, now);
        }
    }

    /// Ends `child`'s warp episode, if any (`limit`: it ran out of `L`), and
    /// returns its `E` before; the caller re-files it (`evt_changed`).
    pub(super) fn unwarp(
        &mut self,
        cx: &mut Cx,
        child: ChildId,
        now: Instant,
        limit: bool,
    ) -> i128 {
        self.set_limit_timer(cx, child, now, false);
        let c = &mut self.children[child];
        let old = c.evt();
        if c.warped {
            c.warped = false;
            c.warp_left = None;
            c.last_unwarp = Some(now);
            if limit && c.unwarp.is_zero() {
                c.want = false; // until it asks again (§2.2)
            } else if limit {
                let at = now.saturating_add(c.unwarp);
                c.rewarp_at = Some(at);
                cx.set_timer(unwarp_key(child), at);
            }
        }
        old
    }

    pub(super) fn cancel_rewarp(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].rewarp_at.take().is_some() {
            cx.cancel_timer(unwarp_key(child));
        }
    }

    // ----- multi-level --------------------------------------------------------------

    /// Tells the parent, per VP, whether to run it warped (§2.5), judging by
    /// what each VP runs, or for one that runs nothing what `vp_grant` would
    /// choose now among the waiting children not taken by a VP before it.
    pub(super) fn advertise(&mut self, cx: &mut Cx) {
        if self.cfg.mode == Mode::None {
            return;
        }
        let (n, direct) = (cx.vp_count() as usize, self.cfg.mode == Mode::Direct);
        if n > 0 {
            self.ensure_vp(ParentVp(n as u32 - 1));
        }
        let mut taken: Vec<ChildId> = self.vps[..n]
            .iter()
            .filter_map(|v| v.run.map(|s| s.child))
            .collect();
        let mut wanted = Vec::with_capacity(n);
        for v in &self.vps[..n] {
            let who = v.run.map(|s| s.child).or_else(|| {
                let free = |c: &ChildId| !taken.contains(c);
                let inc = v
                    .incumbent
                    .filter(|c| free(c) && self.children.get(*c).is_some_and(Child::waiting));
                let best = self.global.iter().find(|k| free(&k.2) && Some(k.2) != inc);
                let who = self.choose(inc, best.copied(), 0);
                taken.extend(who);
                who
            });
            let told = match who.map(|c| &self.children[c]).filter(|c| c.warped) {
                Some(c) if direct && c.warp_value() > 0 => (true, c.warp_value(), c.limit_value()),
                Some(c) if !direct && c.warp_value() > self.cfg.threshold => (true, 0, OFF.2),
                _ => OFF,
            };
            wanted.push(told);
        }
        for (v, told) in wanted.into_iter().enumerate() {
            if self.vps[v].told.replace(told) == Some(told) {
                continue;
            }
            let mut msg = Msg::new("warp").arg("on", Value::Bool(told.0));
            if direct && told.0 {
                let limit = Value::Duration(told.2);
                msg = msg.arg("warp", Value::Int(told.1)).arg("limit", limit);
            }
            cx.msg_parent(ParentVp(v as u32), msg);
        }
    }
}
