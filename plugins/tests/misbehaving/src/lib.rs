//! Two plugin policies that go wrong on purpose, exported from one library
//! (a library may export several policies):
//!
//! - `panics-on-wake` panics in `vp_request` when a child wakes after time
//!   zero, i.e. in the middle of a run, with threads on its CPUs;
//! - `grants-idle` answers a grant with a child that never asked for a CPU,
//!   which breaks the protocol.
//!
//! Both otherwise run their children first come, first served. The
//! dispatcher must eject each and return its threads to the default
//! scheduler with nothing lost, as for a built-in policy.

use hsched_plugin::{
    ChildId, CpuId, Cx, Dispatch, Export, Instant, ParamSpec, Params, ParentVp, PolicyInfo, Reject,
    Scheduler,
};

#[derive(Clone, Copy)]
enum Fault {
    PanicsOnWake,
    GrantsIdle,
}

struct Misbehaving {
    fault: Fault,
    children: Vec<ChildId>,
    waiting: Vec<ChildId>,
    running: Vec<(ParentVp, ChildId)>,
}

impl Misbehaving {
    fn new(fault: Fault) -> Self {
        Misbehaving {
            fault,
            children: Vec::new(),
            waiting: Vec::new(),
            running: Vec::new(),
        }
    }

    fn runnable(&self) -> u32 {
        (self.waiting.len() + self.running.len()) as u32
    }

    fn stop(&mut self, vp: ParentVp) {
        if let Some(pos) = self.running.iter().position(|(v, _)| *v == vp) {
            let (_, child) = self.running.remove(pos);
            self.waiting.insert(0, child);
        }
    }
}

impl Scheduler for Misbehaving {
    fn policy(&self) -> &'static str {
        match self.fault {
            Fault::PanicsOnWake => "panics-on-wake",
            Fault::GrantsIdle => "grants-idle",
        }
    }

    fn register_vp(
        &mut self,
        _cx: &mut Cx,
        child: ChildId,
        _params: &Params,
    ) -> Result<(), Reject> {
        self.children.push(child);
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        self.children.retain(|&c| c != child);
        self.waiting.retain(|&c| c != child);
        self.running.retain(|&(_, c)| c != child);
        cx.want_cpus(self.runnable());
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if matches!(self.fault, Fault::PanicsOnWake) && cx.now() > Instant::ZERO {
            panic!("deliberately broken: panics when {child} wakes up");
        }
        self.waiting.push(child);
        cx.want_cpus(self.runnable());
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        self.waiting.retain(|&c| c != child);
        self.running.retain(|&(_, c)| c != child);
        cx.want_cpus(self.runnable());
    }

    fn vp_grant(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        self.stop(vp);
        if matches!(self.fault, Fault::GrantsIdle) {
            let asleep = self
                .children
                .iter()
                .copied()
                .find(|c| !self.waiting.contains(c) && !self.running.iter().any(|r| r.1 == *c));
            if let Some(child) = asleep {
                return Dispatch::run(child);
            }
        }
        if self.waiting.is_empty() {
            return Dispatch::Release;
        }
        let child = self.waiting.remove(0);
        self.running.push((vp, child));
        Dispatch::run(child)
    }

    fn vp_revoke(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp);
    }
}

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

static PANICS_ON_WAKE: PolicyInfo = PolicyInfo {
    name: "panics-on-wake",
    summary: "FIFO that panics when a child wakes after time zero (test plugin)",
    doc: "",
    params: no_params,
    child_params: no_params,
    build: |_| Ok(Box::new(Misbehaving::new(Fault::PanicsOnWake))),
    max_parents: 1,
    max_children: u32::MAX,
};

static GRANTS_IDLE: PolicyInfo = PolicyInfo {
    name: "grants-idle",
    summary: "FIFO that grants a child that did not ask for a CPU (test plugin)",
    doc: "",
    params: no_params,
    child_params: no_params,
    build: |_| Ok(Box::new(Misbehaving::new(Fault::GrantsIdle))),
    max_parents: 1,
    max_children: u32::MAX,
};

hsched_plugin::export_policy!(exports: [Export::new(&PANICS_ON_WAKE), Export::new(&GRANTS_IDLE)]);
