//! Partitioned multiprocessor mode, shared by `res` and `dbs`
//! (`multiprocessor = "partitioned"`): one uniprocessor instance of the
//! policy per VP the scheduler holds, each child living on exactly one of
//! them.
//!
//! [`Parts`] routes every callback to the instance of the VP concerned,
//! giving it a [`Cx`] that shows one VP (its own, as `ParentVp(0)`), and
//! maps what it asks for back: a request, release or reschedule of its VP
//! 0 becomes one of VP k, `want_cpus(n)` becomes a request (n > 0) or a
//! release of VP k, a timer key `key` becomes `key << 32 | k`. So each
//! instance is exactly the uniprocessor policy on its VP, and a child runs
//! only on its VP: no migration, because nothing is proven for one (a
//! child's guarantee is its VP's uniprocessor guarantee).
//!
//! A child moves only when the policy re-places it (a `reserve` that
//! changes it; see the policies): [`Parts::relocate`] takes it out of its
//! old instance and puts it in the new one. A child moved while it runs
//! joins its new VP's queue only after its old CPU has been re-decided (so
//! that no decision names a child still running elsewhere), and the
//! charge of the run it was in is dropped: the old instance, which the
//! time belonged to, no longer holds it.
//!
//! Cost: O(1) routing per callback, plus the instance's own cost.

use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Effect, ParentVp, Reject, Scheduler,
    TimerKey, VpState,
};

/// The callbacks a partitioned policy (its `parts: Parts<_>` field) hands
/// straight to the instance of the VP concerned; written once here, used
/// inside each such policy's `impl Scheduler`.
macro_rules! route_to_parts {
    () => {
        fn unregister_vp(&mut self, cx: &mut hsched_core::Cx, child: hsched_core::ChildId) {
            self.parts.unregister(cx, child);
        }

        fn vp_request(&mut self, cx: &mut hsched_core::Cx, child: hsched_core::ChildId) {
            self.parts.request(cx, child);
        }

        fn vp_release(&mut self, cx: &mut hsched_core::Cx, child: hsched_core::ChildId) {
            self.parts.release(cx, child);
        }

        fn vp_grant(
            &mut self,
            cx: &mut hsched_core::Cx,
            vp: hsched_core::ParentVp,
            cpu: hsched_core::CpuId,
        ) -> hsched_core::Dispatch {
            self.parts.grant(cx, vp, cpu)
        }

        fn vp_revoke(
            &mut self,
            cx: &mut hsched_core::Cx,
            vp: hsched_core::ParentVp,
            cpu: hsched_core::CpuId,
        ) {
            self.parts.revoke(cx, vp, cpu);
        }

        fn charge(
            &mut self,
            cx: &mut hsched_core::Cx,
            child: hsched_core::ChildId,
            ran: hsched_core::Duration,
        ) {
            self.parts.charge(cx, child, ran);
        }

        fn timer(&mut self, cx: &mut hsched_core::Cx, key: hsched_core::TimerKey) {
            self.parts.timer(cx, key);
        }
    };
}
pub(crate) use route_to_parts;

/// `multiprocessor`: how a policy that holds several VPs uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Admission for one CPU's worth; extra VPs bring unpromised time.
    One,
    /// One uniprocessor instance per VP; children placed by `fit`.
    Partitioned(Fit),
    /// Global EDF with a published multiprocessor admission test.
    Global,
}

/// `fit`: where a child is placed in partitioned mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// The lowest-index VP whose uniprocessor admission test passes.
    First,
    /// The VP with the most spare load after adding it, ties to the lowest.
    Worst,
}

impl Fit {
    pub fn name(self) -> &'static str {
        match self {
            Fit::First => "first-fit",
            Fit::Worst => "worst-fit",
        }
    }
}

impl Mode {
    /// Reads `multiprocessor` and `fit` for `policy`, which supports the
    /// modes in `supported` (`"global"` refused with `why_not_global` when
    /// it is not among them).
    pub fn parse(
        policy: &str,
        multiprocessor: &str,
        fit: &str,
        supported: &[&str],
        why_not_global: &str,
    ) -> Result<Mode, String> {
        let list = supported
            .iter()
            .map(|m| format!("\"{m}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let fit = match fit.trim() {
            "first" => Fit::First,
            "worst" => Fit::Worst,
            other => {
                return Err(format!(
                "{policy}: `fit` = {other:?} is not a placement: expected \"first\" or \"worst\""
            ))
            }
        };
        let mode = match multiprocessor.trim() {
            "one" => Mode::One,
            "partitioned" => Mode::Partitioned(fit),
            "global" if supported.contains(&"global") => Mode::Global,
            "global" => {
                return Err(format!(
                    "{policy}: `multiprocessor` = \"global\" is not supported ({why_not_global}); supported modes: {list}"
                ))
            }
            other => {
                return Err(format!(
                    "{policy}: `multiprocessor` = {other:?} is not a mode; supported modes: {list}"
                ))
            }
        };
        if fit == Fit::Worst && !matches!(mode, Mode::Partitioned(_)) {
            return Err(format!(
                "{policy}: `fit` = \"worst\" places children in partitioned mode only, but `multiprocessor` = {:?}",
                multiprocessor.trim()
            ));
        }
        Ok(mode)
    }
}

/// Where a child of a partitioned scheduler is.
#[derive(Clone, Copy, Debug)]
struct Kid {
    vp: u32,
    /// It wants a CPU (as its parent, we were told so).
    runnable: bool,
    /// Moved while it ran on this VP: it joins its new VP's queue when
    /// this VP's CPU is next decided.
    moving_from: Option<u32>,
}

/// One uniprocessor instance per VP; see the module documentation.
#[derive(Debug)]
pub struct Parts<S> {
    pub subs: Vec<S>,
    kids: ChildMap<Kid>,
    /// What each VP runs, as its instance last decided.
    on: Vec<Option<ChildId>>,
    /// Children moved while they ran, not yet settled: while none is, a
    /// grant or revoke looks at no child (moves are rare).
    moving: usize,
    /// An empty instance, copied for each VP.
    template: S,
}

impl<S: Scheduler + Clone> Parts<S> {
    /// No instance yet: one copy of `template` (empty) is made per VP the
    /// scheduler holds, the first time it is seen.
    pub fn new(template: S) -> Self {
        Parts {
            subs: Vec::new(),
            kids: ChildMap::new(),
            on: Vec::new(),
            moving: 0,
            template,
        }
    }

    /// One instance per VP held.
    pub fn ensure(&mut self, cx: &Cx) {
        while self.subs.len() < cx.vp_count() as usize {
            self.subs.push(self.template.clone());
            self.on.push(None);
        }
    }

    /// The VP `child` lives on.
    pub fn home(&self, child: ChildId) -> Option<u32> {
        self.kids.get(child).map(|k| k.vp)
    }

    /// Children by VP, for messages.
    pub fn count_on(&self, vp: u32) -> usize {
        self.kids.iter().filter(|(_, k)| k.vp == vp).count()
    }

    /// Runs `f` on VP `vp`'s instance with a context that shows it that VP
    /// alone, and passes what it asks for on as VP `vp`'s.
    pub fn call<R>(&mut self, cx: &mut Cx, vp: u32, f: impl FnOnce(&mut S, &mut Cx) -> R) -> R {
        let state = [cx.vp_state(ParentVp(vp))];
        let mut effects = Vec::new();
        let r = {
            let mut sub = Cx::new(cx.now(), cx.cpus(), cx.tick(), &state, &mut effects);
            sub.set_involuntary(cx.involuntary());
            f(&mut self.subs[vp as usize], &mut sub)
        };
        let mine = ParentVp(vp);
        for e in effects {
            match e {
                Effect::SetTimer { key, at } => cx.set_timer(key << 32 | u64::from(vp), at),
                Effect::CancelTimer { key } => cx.cancel_timer(key << 32 | u64::from(vp)),
                Effect::Request(_) => cx.request(mine),
                Effect::Release(_) => cx.release(mine),
                Effect::WantCpus(n) if n > 0 => cx.request(mine),
                // `want_cpus(0)` gives back only a VP that is requesting.
                Effect::WantCpus(_) => {
                    if state[0] == VpState::Requesting {
                        cx.release(mine)
                    }
                }
                Effect::Reschedule(_) => cx.reschedule(mine),
                Effect::Revoke(child) => cx.revoke(child),
                Effect::MsgParent { msg, .. } => cx.msg_parent(mine, msg),
            }
        }
        r
    }

    /// Admits `child` on VP `vp` (its instance's own admission decides).
    pub fn register(
        &mut self,
        cx: &mut Cx,
        vp: u32,
        child: ChildId,
        admit: impl FnOnce(&mut S, &mut Cx) -> Result<(), Reject>,
    ) -> Result<(), Reject> {
        self.call(cx, vp, admit)?;
        self.kids.insert(
            child,
            Kid {
                vp,
                runnable: false,
                moving_from: None,
            },
        );
        Ok(())
    }

    pub fn unregister(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(k) = self.kids.remove(child) else {
            return;
        };
        if k.moving_from.is_some() {
            self.moving -= 1;
        }
        for slot in &mut self.on {
            if *slot == Some(child) {
                *slot = None;
            }
        }
        self.call(cx, k.vp, |s, cx| s.unregister_vp(cx, child));
    }

    pub fn request(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(k) = self.kids.get_mut(child) else {
            return;
        };
        k.runnable = true;
        let (vp, moving) = (k.vp, k.moving_from.is_some());
        if !moving {
            self.call(cx, vp, |s, cx| s.vp_request(cx, child));
        }
    }

    pub fn release(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(k) = self.kids.get_mut(child) else {
            return;
        };
        k.runnable = false;
        let (vp, moving) = (k.vp, k.moving_from.is_some());
        if !moving {
            self.call(cx, vp, |s, cx| s.vp_release(cx, child));
        }
    }

    /// VP `vp`'s CPU is decided again: what ran there stopped, and a child
    /// moved away from it may now wait on its new VP.
    fn settle(&mut self, cx: &mut Cx, vp: u32) {
        self.on[vp as usize] = None;
        if self.moving == 0 {
            return;
        }
        let moved: Vec<ChildId> = self
            .kids
            .iter()
            .filter(|(_, k)| k.moving_from == Some(vp))
            .map(|(c, _)| c)
            .collect();
        self.moving -= moved.len();
        for child in moved {
            let k = &mut self.kids[child];
            k.moving_from = None;
            let (to, runnable) = (k.vp, k.runnable);
            if runnable {
                self.call(cx, to, |s, cx| s.vp_request(cx, child));
            }
        }
    }

    pub fn grant(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) -> Dispatch {
        self.ensure(cx);
        let v = vp.0;
        self.settle(cx, v);
        let d = self.call(cx, v, |s, cx| s.vp_grant(cx, ParentVp(0), cpu));
        if let Dispatch::Run { child, .. } = d {
            self.on[v as usize] = Some(child);
        }
        d
    }

    pub fn revoke(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) {
        self.ensure(cx);
        self.settle(cx, vp.0);
        self.call(cx, vp.0, |s, cx| s.vp_revoke(cx, ParentVp(0), cpu));
    }

    /// A run of a child moved while it ran is not charged: the instance it
    /// ran under no longer holds it.
    pub fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        let Some(k) = self.kids.get(child) else {
            return;
        };
        if k.moving_from.is_none() {
            let vp = k.vp;
            self.call(cx, vp, |s, cx| s.charge(cx, child, ran));
        }
    }

    pub fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        let vp = (key & 0xffff_ffff) as u32;
        if (vp as usize) < self.subs.len() {
            self.call(cx, vp, |s, cx| s.timer(cx, key >> 32));
        }
    }

    /// Moves `child` to VP `to`, where `admit` registers it. On a refusal
    /// it stays where it was, untouched. A running child's CPU is re-decided.
    pub fn relocate(
        &mut self,
        cx: &mut Cx,
        child: ChildId,
        to: u32,
        admit: impl FnOnce(&mut S, &mut Cx) -> Result<(), Reject>,
    ) -> Result<(), Reject> {
        let Some(&k) = self.kids.get(child) else {
            return Err(Reject(format!("no child {child}")));
        };
        if k.vp == to {
            return Ok(());
        }
        self.call(cx, to, admit)?;
        let running = self.on[k.vp as usize] == Some(child);
        self.call(cx, k.vp, |s, cx| s.unregister_vp(cx, child));
        let kid = &mut self.kids[child];
        kid.vp = to;
        if running {
            if kid.moving_from.is_none() {
                self.moving += 1;
            }
            kid.moving_from = Some(k.vp);
            cx.revoke(child);
        } else if k.moving_from.is_none() && k.runnable {
            self.call(cx, to, |s, cx| s.vp_request(cx, child));
        }
        Ok(())
    }

    /// The instances' own checks, and every child in its VP's instance
    /// (`holds` says whether an instance holds a child).
    pub fn check_invariants(&self, holds: impl Fn(&S, ChildId) -> bool) -> Result<(), String> {
        for (vp, s) in self.subs.iter().enumerate() {
            s.check_invariants().map_err(|e| format!("VP {vp}: {e}"))?;
        }
        let moving = self
            .kids
            .iter()
            .filter(|(_, k)| k.moving_from.is_some())
            .count();
        if moving != self.moving {
            return Err(format!(
                "{moving} children are moving, {} counted",
                self.moving
            ));
        }
        for (child, k) in self.kids.iter() {
            let Some(s) = self.subs.get(k.vp as usize) else {
                return Err(format!(
                    "{child} is placed on VP {}, which is not held",
                    k.vp
                ));
            };
            if !holds(s, child) {
                return Err(format!("{child} is placed on VP {} but not there", k.vp));
            }
            for (other, s) in self.subs.iter().enumerate() {
                if other != k.vp as usize && holds(s, child) {
                    return Err(format!("{child} is on VP {} and on VP {other}", k.vp));
                }
            }
        }
        Ok(())
    }
}
