//! A stand-in policy registry for the format tests: the parameter and
//! attachment declarations of fifo, rr, fp, join and limit, without the
//! policies. The format tests then do not move when the real policies do;
//! `examples.rs` checks the shipped scenarios against the real registry.

#![allow(dead_code)]

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, ParamKind, ParamSpec, Params, ParentVp, PolicyInfo,
    Reject, Scheduler, Value,
};

/// A scheduler that does nothing: the parser only builds an instance to let
/// the policy check its parameters together.
struct Inert;

impl Scheduler for Inert {
    fn policy(&self) -> &'static str {
        "inert"
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

fn inert(_: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(Inert))
}

/// Like the real `limit`: the budget must fit in the period.
fn build_limit(p: &Params) -> Result<Box<dyn Scheduler>, String> {
    let (x, y) = (p.duration("budget"), p.duration("period"));
    if x > y {
        return Err(format!(
            "budget {x} exceeds period {y}: expected 0 < budget <= period"
        ));
    }
    inert(p)
}
fn none() -> Vec<ParamSpec> {
    Vec::new()
}
fn rr_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "quantum",
        ParamKind::Duration {
            min: Duration::from_micros(1),
        },
        "the time slice",
    )
    .with_default(Value::Duration(Duration::from_millis(10)))]
}
fn fp_child() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "prio",
        ParamKind::Int { min: 0, max: 255 },
        "priority: higher runs first",
    )]
}
fn limit_params() -> Vec<ParamSpec> {
    let d = ParamKind::Duration {
        min: Duration::from_nanos(1),
    };
    vec![
        ParamSpec::new("budget", d, "CPU time per period"),
        ParamSpec::new("period", d, "the replenishment period"),
    ]
}

const fn info(
    name: &'static str,
    build: fn(&Params) -> Result<Box<dyn Scheduler>, String>,
    params: fn() -> Vec<ParamSpec>,
    child_params: fn() -> Vec<ParamSpec>,
    max_parents: u32,
    max_children: u32,
) -> PolicyInfo {
    PolicyInfo {
        name,
        summary: "stand-in",
        doc: "stand-in",
        params,
        child_params,
        build,
        max_parents,
        max_children,
    }
}

pub static REGISTRY: [PolicyInfo; 5] = [
    info("fifo", inert, none, none, 1, u32::MAX),
    info("rr", inert, rr_params, none, 1, u32::MAX),
    info("fp", inert, none, fp_child, 1, u32::MAX),
    info("join", inert, none, none, u32::MAX, 1),
    info("limit", build_limit, limit_params, none, 1, 1),
];

pub fn parse(text: &str) -> Result<hsched_model::Scenario, hsched_scenario::ScenarioError> {
    hsched_scenario::parse_with_registry(text, "test.toml", &REGISTRY)
}

/// A small valid scenario the tests mutate.
pub const BASE: &str = r#"
name = "base"
horizon = "1s"
seed = 7
default = "ts"

[machine]
cpus = 2
context_switch = "5us"

[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "ts"
policy = "rr"
quantum = "2ms"
parent = "root"
at = { prio = 1 }

[[thread]]
name = "a"
program = [ { run = "5ms" }, { sleep = { exponential = "2ms", max = "20ms" } } ]
"#;

/// `BASE` with thread `a`'s first operation replaced by `op`.
pub fn with_op(op: &str) -> String {
    let text = BASE.replace("{ run = \"5ms\" }", op);
    assert_ne!(text, BASE);
    text
}

/// The first operation of thread `a` once `op` replaces it in `BASE`.
pub fn first_op(op: &str) -> hsched_model::Op {
    match parse(&with_op(op)) {
        Ok(s) => s.threads[0].program.ops[0].clone(),
        Err(e) => panic!("{op}: {e}"),
    }
}

/// The one-line error for `op` in `BASE`.
pub fn op_error(op: &str) -> String {
    match parse(&with_op(op)) {
        Ok(_) => panic!("expected an error for {op}"),
        Err(e) => e.to_string(),
    }
}
