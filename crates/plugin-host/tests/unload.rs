//! Unloading a plugin while its threads run (Vassal's UnregisterScheduler):
//! the instance is removed by the scenario's script, its threads return to
//! the default scheduler and finish their work there, and the library is
//! closed once no instance is left. A test binary of its own, so that no
//! other test holds the library open meanwhile.

mod support;

use hsched_core::{Duration, Instant};
use hsched_model::LogKind;
use hsched_sim::{SimOptions, Simulation};
use support::{example_edf, load, registry_with};

/// fp root over an `edf` instance (high) and the default rr (low). Two
/// threads start under edf; a third joins it by message at 30ms; the
/// script unloads edf at 100ms with all three mid-work (200ms each), then
/// loads a fresh edf at 300ms that nobody joins.
const SCENARIO: &str = r#"
horizon = "1s"
seed = 5
default = "ts"

[machine]
cpus = 2
context_switch = "5us"

[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "rt"
policy = "example-edf"
parent = "root"
vps = 2
at = { prio = 10 }

[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
vps = 2

[[thread]]
name = "a"
parent = "rt"
at = { deadline = "5ms" }
program = [ { run = "200ms" } ]

[[thread]]
name = "b"
parent = "rt"
program = [ { loop = { count = 20, body = [ { run = "10ms" }, { sleep = "1ms" } ] } } ]

[[thread]]
name = "c"
program = [
  { sleep = "30ms" },
  { msg = { to = "rt", name = "join", args = { deadline = "2ms" } } },
  { run = "200ms" },
]

[[script]]
at = "100ms"
unload = "rt"

[[script]]
at = "300ms"
load = { name = "rt2", policy = "example-edf", parent = "root", vps = 2, at = { prio = 10 } }
"#;

fn ms(x: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(x)
}

#[test]
fn unloading_mid_run_loses_nothing_and_closes_the_library() {
    let plugin = load(example_edf());
    let watch = plugin.watch();
    let registry = registry_with(&plugin);
    let scn = hsched_scenario::parse_with_registry(SCENARIO, "unload.toml", &registry)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let infos: Vec<_> = plugin.policies().iter().map(|p| p.info).collect();
    let opts = SimOptions {
        check_invariants: true,
        ..Default::default()
    };
    let mut sim = Simulation::new(&scn, &opts, &infos).unwrap();
    // From here only the instance holds the library open.
    drop(plugin);
    assert!(watch.is_open(), "the running instance keeps it open");
    sim.run_until(ms(99));
    assert!(watch.is_open(), "still in use just before the unload");
    sim.run_until(ms(101));
    assert!(
        !watch.is_open(),
        "the last instance is gone: the library is closed"
    );
    // The script loads a fresh instance later: the library opens again.
    let r = sim.finish();

    assert!(
        r.log.iter().all(|e| e.kind != LogKind::Eject),
        "{:#?}",
        r.log
    );
    let joined = r
        .log
        .iter()
        .find(|e| e.text.contains("thread `c` moved to `rt`"));
    assert!(joined.is_some(), "c joined the plugin: {:#?}", r.log);
    let returned = r
        .log
        .iter()
        .filter(|e| e.kind == LogKind::Moved && e.text.contains("returned to the default"))
        .count();
    assert_eq!(returned, 3, "{:#?}", r.log);
    hsched_sim::conformance::assert_all_work_done_under(&r, Duration::from_millis(200), "ts");
    let node = |name: &str| r.nodes.iter().find(|n| n.name == name).unwrap();
    assert!(!node("rt").alive);
    assert!(node("rt2").alive, "a new instance after the unload");
    // Each thread ran under the plugin for a while (rt received time).
    assert!(node("rt").received >= Duration::from_millis(100));
}
