//! The rest of the harness's hierarchy: the parent the test plays
//! ([`Stand`]), the scheduler children leave to ([`Sink`]), their policy
//! types, and the platform ([`Screen`]).

use crate::dispatcher::Platform;
use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Instant, Msg, ParamSpec, Params, ParentVp, PolicyInfo, Reject,
    Reply, Scheduler, Sender, ThreadId, Value,
};

/// The root above the policy under test when the test plays its parent:
/// child `i` is the policy's VP `i`, run on CPU `i` when the test granted
/// it ([`Parent::Manual`]) or whenever it requests ([`Parent::Eager`]).
pub(crate) struct Stand {
    pub eager: bool,
    pub requesting: Vec<bool>,
    pub granted: Vec<bool>,
}

impl Stand {
    fn grants(&self, c: usize) -> bool {
        self.requesting[c] && (self.eager || self.granted[c])
    }
}

impl Scheduler for Stand {
    fn policy(&self) -> &'static str {
        "parent"
    }
    fn register_vp(&mut self, _: &mut Cx, _: ChildId, _: &Params) -> Result<(), Reject> {
        Ok(())
    }
    fn unregister_vp(&mut self, _: &mut Cx, _: ChildId) {}
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        self.requesting[child.index()] = true;
        if self.grants(child.index()) {
            cx.request(ParentVp(child.0));
        }
    }
    fn vp_release(&mut self, _: &mut Cx, child: ChildId) {
        self.requesting[child.index()] = false;
        self.granted[child.index()] = false;
    }
    fn vp_grant(&mut self, _: &mut Cx, vp: ParentVp, _: CpuId) -> Dispatch {
        match self.grants(vp.index()) {
            true => Dispatch::Run {
                child: ChildId(vp.0),
                until: Instant::NEVER,
            },
            false => Dispatch::Release,
        }
    }
    fn msg(&mut self, cx: &mut Cx, _: Sender, msg: &Msg) -> Reply {
        let Some(Value::Int(vp)) = msg.args.get("vp") else {
            return Reply::ok(); // the policy's own message to its parent
        };
        let vp = ParentVp(*vp as u32);
        match msg.name.as_str() {
            "grant" => {
                self.granted[vp.index()] = true;
                cx.request(vp);
            }
            _ => {
                self.granted[vp.index()] = false;
                cx.revoke(ChildId(vp.0));
            }
        }
        Reply::ok()
    }
}

/// Where a child goes when it leaves the policy (and where one the policy
/// refused stays): detached, so it never runs.
pub(crate) struct Sink;

impl Scheduler for Sink {
    fn policy(&self) -> &'static str {
        "sink"
    }
    fn register_vp(&mut self, _: &mut Cx, _: ChildId, _: &Params) -> Result<(), Reject> {
        Ok(())
    }
    fn unregister_vp(&mut self, _: &mut Cx, _: ChildId) {}
    fn vp_request(&mut self, _: &mut Cx, _: ChildId) {}
    fn vp_release(&mut self, _: &mut Cx, _: ChildId) {}
    fn vp_grant(&mut self, _: &mut Cx, _: ParentVp, _: CpuId) -> Dispatch {
        Dispatch::Release
    }
}

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn build_sink(_: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(Sink))
}

fn built_by_the_harness(_: &Params) -> Result<Box<dyn Scheduler>, String> {
    Err("built by the test harness only".into())
}

pub(crate) const fn info(name: &'static str, max_parents: u32) -> PolicyInfo {
    PolicyInfo {
        name,
        summary: "the test harness's",
        doc: "",
        params: no_params,
        child_params: no_params,
        build: built_by_the_harness,
        max_parents,
        max_children: u32::MAX,
    }
}

pub(crate) static STAND_INFO: PolicyInfo = info("parent", 1);
pub(crate) static SINK_INFO: PolicyInfo = PolicyInfo {
    build: build_sink,
    ..info("sink", 1)
};

/// The platform: what runs on each CPU.
pub(crate) struct Screen {
    pub on_cpu: Vec<Option<ThreadId>>,
}

impl Platform for Screen {
    fn set_cpu(&mut self, _: Instant, cpu: CpuId, thread: Option<ThreadId>) {
        self.on_cpu[cpu.index()] = thread;
    }
}
