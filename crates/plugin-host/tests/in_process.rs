//! The plugin ABI driven in-process: entry functions linked into this test
//! (`export_policy!(entry = ...)`) go through exactly the same table,
//! encoding and adapter as a loaded library, without building one. Here the
//! boundary itself is checked: it is transparent (a built-in policy through
//! it schedules bit for bit as it does built in), and refusals, broken
//! invariants and panics cross it as the dispatcher expects.

use hsched_core::{ChildId, Cx, Duration, Instant, Params, PolicyInfo, Reject, VpState};
use hsched_model::{LogKind, Scenario};
use hsched_plugin::{Dispatch, Export, ParentVp, Scheduler};
use hsched_plugin_host::Plugin;
use hsched_sim::{conformance, run_with_policies, SimOptions};

static FIFO_ABI: PolicyInfo = PolicyInfo {
    name: "fifo-abi",
    ..hsched_policies::fifo::INFO
};

static RR_ABI: PolicyInfo = PolicyInfo {
    name: "rr-abi",
    ..hsched_policies::rr::INFO
};

static SFQ_ABI: PolicyInfo = PolicyInfo {
    name: "sfq-abi",
    ..hsched_policies::sfq::INFO
};

hsched_plugin::export_policy!(entry = builtins_entry, exports: [
    Export::new(&FIFO_ABI),
    Export::new(&RR_ABI),
    Export::new(&SFQ_ABI).hls_rule("PSBE -> PSBE+"),
]);

/// Runs its children first come first served and reports its invariants
/// broken once it has run one; refuses to be built with `fail = true`.
struct Fussy {
    waiting: Vec<ChildId>,
    ran: bool,
}

impl Scheduler for Fussy {
    fn policy(&self) -> &'static str {
        "fussy"
    }
    fn register_vp(&mut self, _: &mut Cx, _: ChildId, _: &Params) -> Result<(), Reject> {
        Ok(())
    }
    fn unregister_vp(&mut self, _: &mut Cx, child: ChildId) {
        self.waiting.retain(|&c| c != child);
    }
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        self.waiting.push(child);
        cx.want_cpus(1);
    }
    fn vp_release(&mut self, _: &mut Cx, child: ChildId) {
        self.waiting.retain(|&c| c != child);
    }
    fn vp_grant(&mut self, _: &mut Cx, _: ParentVp, _: hsched_core::CpuId) -> Dispatch {
        match self.waiting.first() {
            Some(&c) => {
                self.ran = true;
                Dispatch::run(c)
            }
            None => Dispatch::Release,
        }
    }
    fn check_invariants(&self) -> Result<(), String> {
        if self.ran {
            Err("deliberately broken invariant".into())
        } else {
            Ok(())
        }
    }
}

fn fail_param() -> Vec<hsched_core::ParamSpec> {
    vec![
        hsched_core::ParamSpec::new("fail", hsched_core::ParamKind::Bool, "refuse to build")
            .with_default(hsched_core::Value::Bool(false)),
    ]
}

static FUSSY: PolicyInfo = PolicyInfo {
    name: "fussy",
    summary: "breaks its invariants once it ran a child (test policy)",
    doc: "",
    params: fail_param,
    child_params: Vec::new,
    build: |p| {
        if p.bool("fail") {
            return Err("`fail` is set: refusing to build".into());
        }
        Ok(Box::new(Fussy {
            waiting: Vec::new(),
            ran: false,
        }))
    },
    max_parents: 1,
    max_children: u32::MAX,
};

hsched_plugin::export_policy!(entry = fussy_entry, exports: [Export::new(&FUSSY)]);

fn builtins() -> Plugin {
    Plugin::from_entry("built-ins (in process)", builtins_entry).unwrap()
}

fn checked() -> SimOptions {
    SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    }
}

#[test]
fn one_library_exports_several_policies() {
    let plugin = builtins();
    let names: Vec<&str> = plugin.policies().iter().map(|p| p.info.name).collect();
    assert_eq!(names, ["fifo-abi", "rr-abi", "sfq-abi"]);
    assert_eq!(plugin.policies()[0].hls_rule, None);
    assert_eq!(
        plugin.policies()[2].hls_rule.as_deref(),
        Some("PSBE -> PSBE+")
    );
    let specs = |f: fn() -> Vec<hsched_core::ParamSpec>| format!("{:?}", f());
    assert_eq!(
        specs(plugin.policies()[2].info.params),
        specs(hsched_policies::sfq::INFO.params),
        "declarations cross the boundary intact"
    );
    assert_eq!(
        specs(plugin.policies()[2].info.child_params),
        specs(hsched_policies::sfq::INFO.child_params)
    );
}

#[test]
fn policies_through_the_abi_pass_the_conformance_suite() {
    let plugin = builtins();
    let infos: Vec<_> = plugin.policies().iter().map(|p| p.info).collect();
    for info in &infos {
        conformance::conforms(info, &infos);
    }
}

/// The same scenario with `from` renamed to `to` wherever a scheduler uses it.
fn renamed(scn: &Scenario, from: &str, to: &str) -> Scenario {
    let mut scn = scn.clone();
    for s in &mut scn.schedulers {
        if s.policy == from {
            s.policy = to.to_string();
        }
    }
    for ev in &mut scn.script {
        if let hsched_model::Action::Load(s) = &mut ev.action {
            if s.policy == from {
                s.policy = to.to_string();
            }
        }
    }
    scn
}

#[test]
fn the_boundary_is_transparent_same_schedule_bit_for_bit() {
    let plugin = builtins();
    let infos: Vec<_> = plugin.policies().iter().map(|p| p.info).collect();
    for (builtin, through_abi) in [
        (&hsched_policies::rr::INFO, "rr-abi"),
        (&hsched_policies::sfq::INFO, "sfq-abi"),
    ] {
        for cpus in [1, 2] {
            let scn = conformance::in_middle(builtin, cpus, &[]);
            let direct = run_with_policies(&scn, &checked(), &[]).unwrap();
            let plugged = run_with_policies(
                &renamed(&scn, builtin.name, through_abi),
                &checked(),
                &infos,
            )
            .unwrap();
            let segments = direct.trace.as_ref().unwrap().segments.len();
            assert!(
                segments > 20,
                "{} on {cpus}: {segments} segments",
                builtin.name
            );
            assert_eq!(
                format!("{:?}", direct.trace),
                format!("{:?}", plugged.trace),
                "{} on {cpus} CPU(s)",
                builtin.name
            );
            assert_eq!(format!("{:?}", direct.jobs), format!("{:?}", plugged.jobs));
        }
    }
}

#[test]
fn a_refused_build_crosses_the_boundary_with_its_reason() {
    let plugin = Plugin::from_entry("fussy", fussy_entry).unwrap();
    let info = plugin.policies()[0].info;
    let params = Params::new()
        .with("fail", hsched_core::Value::Bool(true))
        .resolve(&(info.params)())
        .unwrap();
    let err = (info.build)(&params).err().unwrap();
    assert_eq!(err, "`fail` is set: refusing to build");
    let ok = Params::new().resolve(&(info.params)()).unwrap();
    assert!((info.build)(&ok).is_ok());
}

#[test]
fn broken_invariants_cross_the_boundary_and_eject() {
    let plugin = Plugin::from_entry("fussy", fussy_entry).unwrap();
    let info = plugin.policies()[0].info;
    let mut scn = conformance::in_middle(info, 1, &[info]);
    scn.script.clear();
    let r = run_with_policies(&scn, &checked(), &[info]).unwrap();
    let ejections: Vec<_> = r.log.iter().filter(|e| e.kind == LogKind::Eject).collect();
    assert_eq!(ejections.len(), 1, "{:#?}", r.log);
    assert!(
        ejections[0].text.contains("deliberately broken invariant"),
        "{}",
        ejections[0].text
    );
    // Its threads went on under the default scheduler.
    assert!(r.threads.iter().all(|t| t.scheduler == "bg"));
    let busy: u64 = r.threads.iter().map(|t| t.cpu_time.as_nanos()).sum();
    assert!(busy > 250_000_000, "{busy}");
}

#[test]
fn effects_and_the_context_cross_the_boundary() {
    // sfq sets no timer, but asks for CPUs and reschedules: drive one
    // instance by hand and compare its effects with the built-in's.
    let plugin = builtins();
    let info = plugin.policies()[2].info;
    let params = Params::new().resolve(&(info.params)()).unwrap();
    let mut plugged = (info.build)(&params).unwrap();
    let mut direct = (hsched_policies::sfq::INFO.build)(&params).unwrap();
    let child_params = Params::new().resolve(&(info.child_params)()).unwrap();
    let vps = [VpState::Held(hsched_core::CpuId(0)), VpState::Requesting];
    let mut got = [Vec::new(), Vec::new()];
    for (s, effects) in [&mut plugged, &mut direct].into_iter().zip(got.iter_mut()) {
        let now = Instant::ZERO + Duration::from_millis(3);
        let mut cx = Cx::new(now, 2, Some(Duration::from_millis(1)), &vps, effects);
        for c in 0..3 {
            s.register_vp(&mut cx, ChildId(c), &child_params).unwrap();
            s.vp_request(&mut cx, ChildId(c));
        }
        let d = s.vp_grant(&mut cx, ParentVp(0), hsched_core::CpuId(0));
        // The decision goes in the same list, to be compared too.
        cx.msg_parent(ParentVp(0), hsched_core::Msg::new(&format!("{d:?}")));
        s.charge(&mut cx, ChildId(0), Duration::from_micros(700));
        s.vp_release(&mut cx, ChildId(0));
    }
    assert!(got[0].len() > 3, "{:?}", got[0]);
    assert_eq!(got[0], got[1]);
}
