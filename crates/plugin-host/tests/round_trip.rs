//! The whole plugin round trip: the example plugin (`plugins/example-edf`,
//! a crate outside the workspace) is built with cargo, loaded, run in the
//! simulator under the conformance suite and in a scenario file, and its
//! scheduling checked; misbehaving plugins are ejected with nothing lost;
//! libraries that are not plugins for this hsched are refused by name.
//!
//! Unloading a plugin's last instance while its threads run (and the
//! library closing) is in `unload.rs`, a test binary of its own so that no
//! other test holds the library open meanwhile.

mod support;

use hsched_core::{Duration, ParamKind, Value};
use hsched_model::{LogKind, RunResult};
use hsched_plugin_host::{LoadErrorKind, Plugin};
use hsched_sim::{conformance, run_with_policies, SimOptions};
use support::{example_edf, load, registry_with, test_plugin};

fn checked() -> SimOptions {
    SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    }
}

#[test]
fn the_example_plugin_describes_its_policy() {
    let plugin = load(example_edf());
    assert_eq!(plugin.policies().len(), 1);
    let edf = &plugin.policies()[0];
    assert_eq!(edf.info.name, "example-edf");
    assert!(edf.info.summary.contains("earliest deadline first"));
    assert_eq!(edf.hls_rule.as_deref(), Some("ALL -> NULL+"));
    assert_eq!(edf.info.max_parents, 1);
    assert_eq!(edf.info.max_children, u32::MAX);
    let params = (edf.info.params)();
    assert_eq!(params.len(), 1);
    assert_eq!(params[0].name, "deadline");
    assert_eq!(
        params[0].kind,
        ParamKind::Duration {
            min: Duration::from_micros(1)
        }
    );
    assert_eq!(
        params[0].default,
        Some(Value::Duration(Duration::from_millis(10)))
    );
    assert_eq!((edf.info.child_params)()[0].name, "deadline");
    assert_eq!(plugin.sdk_version(), env!("CARGO_PKG_VERSION"));
    // Loading it again shares the open library and its PolicyInfo.
    let again = load(example_edf());
    assert!(std::ptr::eq(again.policies()[0].info, edf.info));
}

#[test]
fn the_example_plugin_passes_the_conformance_suite() {
    let plugin = load(example_edf());
    let info = plugin.policies()[0].info;
    conformance::conforms(info, &[info]);
}

/// One CPU: a CPU hog with a long relative deadline, a periodic job with a
/// short one, and a thread that shortens its own deadline by message.
const EDF_SCENARIO: &str = r#"
horizon = "500ms"
seed = 3

[machine]
cpus = 1
context_switch = "5us"

[[scheduler]]
name = "rt"
policy = "example-edf"
deadline = "50ms"

[[thread]]
name = "hog"
parent = "rt"
program = [ { loop = { body = [ { run = "20ms" } ] } } ]

[[thread]]
name = "video"
parent = "rt"
at = { deadline = "4ms" }
program = [ { periodic = { period = "10ms", deadline = "4ms", run = "2ms" } } ]

[[thread]]
name = "audio"
parent = "rt"
program = [
  { msg = { name = "deadline", args = { relative = "3ms" } } },
  { periodic = { period = "5ms", deadline = "3ms", offset = "1ms", run = "1ms" } },
]
"#;

fn run_edf_scenario(plugin: &Plugin, seed: Option<u64>) -> RunResult {
    let registry = registry_with(plugin);
    let scn = hsched_scenario::parse_with_registry(EDF_SCENARIO, "edf.toml", &registry)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let infos: Vec<_> = plugin.policies().iter().map(|p| p.info).collect();
    let opts = SimOptions { seed, ..checked() };
    run_with_policies(&scn, &opts, &infos).unwrap()
}

#[test]
fn edf_from_the_plugin_meets_short_deadlines_beside_a_hog() {
    let plugin = load(example_edf());
    let r = run_edf_scenario(&plugin, None);
    assert!(
        r.log.iter().all(|e| e.kind != LogKind::Eject),
        "{:#?}",
        r.log
    );
    let thread = |name: &str| r.threads.iter().find(|t| t.name == name).unwrap();
    for name in ["video", "audio"] {
        let id = thread(name).id;
        let jobs: Vec<_> = r.jobs.iter().filter(|j| j.thread == id).collect();
        assert!(jobs.len() >= 45, "{name}: {} jobs", jobs.len());
        let missed: Vec<_> = jobs
            .iter()
            .filter(|j| j.finish.is_none_or(|f| f > j.deadline))
            .filter(|j| j.deadline.as_nanos() < r.horizon.as_nanos())
            .collect();
        assert!(missed.is_empty(), "{name} missed deadlines: {missed:#?}");
    }
    // The hog gets what the periodic threads leave: 1 - 2/10 - 1/5 = 60%,
    // less context switches.
    let hog = thread("hog").cpu_time.as_nanos();
    assert!(
        (280_000_000..=300_000_000).contains(&hog),
        "hog ran {}",
        thread("hog").cpu_time
    );
    // The message crossed the boundary both ways, durations intact.
    let reply = r
        .log
        .iter()
        .find(|e| e.kind == LogKind::Reply && e.text.contains("`audio`"))
        .unwrap_or_else(|| panic!("no reply to audio: {:#?}", r.log));
    assert!(reply.text.contains("relative=3ms"), "{}", reply.text);
}

#[test]
fn edf_from_the_plugin_is_deterministic() {
    let plugin = load(example_edf());
    let a = run_edf_scenario(&plugin, Some(9));
    let b = run_edf_scenario(&plugin, Some(9));
    assert_eq!(format!("{:?}", a.trace), format!("{:?}", b.trace));
    assert_eq!(format!("{:?}", a.jobs), format!("{:?}", b.jobs));
}

/// fp root over the plugin policy (high) and the default rr (low); three
/// threads under the plugin with 60ms of work each, one asleep until 50ms
/// (while the other two run).
fn misbehaving_scenario(policy: &str) -> String {
    format!(
        r#"
horizon = "1s"
seed = 7
default = "ts"

[machine]
cpus = 2
watchdog = "100ms"

[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "broken"
policy = "{policy}"
parent = "root"
vps = 2
at = {{ prio = 10 }}

[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
vps = 2

[[thread]]
name = "sleeper"
parent = "broken"
program = [ {{ sleep = "50ms" }}, {{ run = "60ms" }} ]

[[thread]]
name = "a"
parent = "broken"
program = [ {{ run = "60ms" }} ]

[[thread]]
name = "b"
parent = "broken"
program = [ {{ run = "60ms" }} ]
"#
    )
}

fn run_misbehaving(policy: &str) -> RunResult {
    let plugin = load(&test_plugin("misbehaving"));
    let registry = registry_with(&plugin);
    let text = misbehaving_scenario(policy);
    let scn = hsched_scenario::parse_with_registry(&text, "broken.toml", &registry)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let infos: Vec<_> = plugin.policies().iter().map(|p| p.info).collect();
    run_with_policies(&scn, &checked(), &infos).unwrap()
}

fn assert_ejected_and_nothing_lost(r: &RunResult, why: &[&str]) {
    let ejections: Vec<_> = r.log.iter().filter(|e| e.kind == LogKind::Eject).collect();
    assert_eq!(ejections.len(), 1, "exactly one ejection: {:#?}", r.log);
    let text = &ejections[0].text;
    assert!(text.contains("`broken`"), "{text}");
    for w in why {
        assert!(text.contains(w), "`{w}` in {text}");
    }
    conformance::assert_all_work_done_under(r, Duration::from_millis(60), "ts");
    assert!(!r.nodes.iter().find(|n| n.name == "broken").unwrap().alive);
}

#[test]
fn a_plugin_that_panics_is_ejected_and_its_threads_fall_back() {
    let r = run_misbehaving("panics-on-wake");
    assert_ejected_and_nothing_lost(&r, &["panicked", "deliberately broken", "libmisbehaving"]);
    // It panicked mid-run, when the sleeper woke with the other two running.
    let eject = r.log.iter().find(|e| e.kind == LogKind::Eject).unwrap();
    assert_eq!(eject.at.as_nanos(), 50_000_000);
}

#[test]
fn a_plugin_that_breaks_the_protocol_is_ejected_and_its_threads_fall_back() {
    let r = run_misbehaving("grants-idle");
    assert_ejected_and_nothing_lost(&r, &["did not request"]);
}

#[test]
fn a_library_built_for_another_abi_is_refused_naming_both_versions() {
    let path = test_plugin("future-abi");
    let err = Plugin::load(&path).unwrap_err();
    let v = hsched_plugin::ABI_VERSION;
    assert_eq!(
        err.kind,
        LoadErrorKind::AbiMismatch {
            found: v + 1,
            expected: v
        }
    );
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains(&format!("ABI version {}", v + 1)), "{msg}");
    assert!(msg.contains(&format!("ABI version {v}")), "{msg}");
}

#[test]
fn a_library_that_is_not_a_plugin_is_refused_by_name() {
    let path = test_plugin("not-a-plugin");
    let err = Plugin::load(&path).unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::NotAPlugin);
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("hsched_plugin_entry"), "{msg}");
}

#[test]
fn a_missing_file_or_a_file_that_is_no_library_is_refused_by_name() {
    let err = Plugin::load("no/such/libplugin.so").unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::Missing);
    assert!(err.to_string().contains("no/such/libplugin.so"), "{err}");

    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let err = Plugin::load(manifest).unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::NotALibrary);
    assert!(err.to_string().contains(manifest), "{err}");
}
