//! Plugins on the command line: `--plugin` on `sim`, `live`, `check` and
//! `policies`, a scenario's `plugins` key (relative to the file), the
//! shipped example scenario `plugins/example-edf/edf.toml`, and exit code 2
//! naming the library for every way loading can fail.

use hsched_plugin_host::cargo;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

mod common;
use common::{hsched, repo, text};

fn target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugins")
}

/// The example plugin and the test plugins, built once for this binary.
fn lib(name: &str) -> String {
    static LIBS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    let libs = LIBS.get_or_init(|| {
        let mut all = Vec::new();
        for dir in ["plugins/example-edf", "plugins/tests"] {
            all.extend(
                cargo::build(&repo().join(dir), &target()).unwrap_or_else(|e| panic!("{e}")),
            );
        }
        all
    });
    cargo::find(libs, name)
        .unwrap_or_else(|| panic!("no {name} among {libs:?}"))
        .display()
        .to_string()
}

/// `plugins/example-edf/edf.toml` with its `plugins` key pointing at
/// `plugin_path`, written as `file_name` next to the built libraries.
fn example_scenario(file_name: &str, plugin_path: &str) -> PathBuf {
    let shipped = std::fs::read_to_string(repo().join("plugins/example-edf/edf.toml")).unwrap();
    let key = "plugins = [\"target/debug/libexample_edf.so\"]";
    assert!(
        shipped.contains(key),
        "the shipped scenario names its plugin"
    );
    let text = shipped.replace(key, &format!("plugins = [{plugin_path:?}]"));
    let dir = Path::new(&lib("example-edf"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = dir.join(file_name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn policies_lists_a_plugins_policies() {
    let edf = lib("example-edf");
    let out = hsched(&["policies", "--plugin", &edf]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for needle in [
        "fifo —",
        "edf — earliest deadline first",
        &format!("from plugin {edf}"),
        "HLS rule (Table 1): ALL -> NULL+",
        "deadline",
    ] {
        assert!(s.contains(needle), "`{needle}` in:\n{s}");
    }
    let one = hsched(&["policies", "example-edf", "--plugin", &edf]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    assert!(text(&one.stdout).starts_with("example-edf — "));
    let without = hsched(&["policies", "example-edf"]);
    assert_eq!(without.status.code(), Some(2));
}

#[test]
fn the_shipped_example_scenario_runs_with_its_plugins_key() {
    // Relative to the scenario file, as the shipped one is.
    let name = Path::new(&lib("example-edf"))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let scn = example_scenario("edf-relative.toml", &name);
    let scn = scn.display().to_string();
    let out = hsched(&["sim", &scn]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for needle in [
        "rt (gone)  example-edf",
        "thread `video` moved to `rt`",
        "thread `audio` returned to the default scheduler",
        "unloaded `rt`",
    ] {
        assert!(s.contains(needle), "`{needle}` in:\n{s}");
    }
    let check = hsched(&["check", &scn]);
    assert!(check.status.success(), "{}", text(&check.stderr));
}

/// The same scenario on real CPUs (root): the script loads the plugin's
/// `edf` at run time, the workers join it by message, and it is unloaded.
#[test]
fn the_shipped_example_scenario_runs_live() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let scn = example_scenario("edf-live.toml", &lib("example-edf"));
    let out = hsched(&["live", "--backend", "agent", &scn.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for needle in [
        "loaded `rt` (example-edf)",
        "thread `video` moved to `rt`",
        "thread `audio` moved to `rt`",
        "unloaded `rt`",
    ] {
        assert!(s.contains(needle), "`{needle}` in:\n{s}");
    }
}

/// A plugin library loaded into a running `hsched live` (root) with
/// Whether this process may set `SCHED_FIFO` (root), which `hsched live` needs.
fn realtime() -> Result<(), String> {
    hsched_live::sys::realtime_allowed()
        .map_err(|e| format!("cannot set SCHED_FIFO here ({e}); run as root"))
}

/// One `hsched live` at a time: two agents would fight over the CPUs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A scenario for `hsched ctl` to act on: a busy thread under `rr` (the
/// default scheduler) below an `fp` root, for a minute unless stopped.
const CTL_SCENARIO: &str = r#"
name = "ctl-plugin"
horizon = "60s"
default = "ts"
[machine]
cpus = 1
[[scheduler]]
name = "root"
policy = "fp"
[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = { prio = 0 }
[[thread]]
name = "hog"
program = [ { loop = { body = [ { run = "1s" } ] } } ]
"#;

/// `hsched live SCENARIO --json --socket SOCKET`, once it listens.
fn live_with_socket(scenario: &Path, socket: &str) -> std::process::Child {
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args([
            "live",
            "--backend",
            "agent",
            &scenario.display().to_string(),
            "--json",
            "--socket",
            socket,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !Path::new(socket).exists() {
        assert!(start.elapsed().as_secs() < 5, "no socket at {socket}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    run
}

fn ctl_args<'a>(socket: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["ctl", "--socket", socket];
    all.extend_from_slice(args);
    all
}

/// Stops a live run with SIGTERM (not racing its horizon: how long a
/// test's requests take depends on the machine, and a run that ended
/// under one would reset its connection); its output, after checking it
/// stopped in order.
fn stop(run: std::process::Child) -> Output {
    hsched_live::sys::signal(run.id() as i32, libc::SIGTERM).unwrap();
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("stopped by SIGTERM"));
    out
}

/// `hsched ctl plugin`: its policy can then be loaded; the same library
/// again is refused, naming the policy it already has.
#[test]
fn ctl_loads_a_plugin_into_a_live_run() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let edf = lib("example-edf");
    let dir = Path::new(&edf).parent().unwrap().to_path_buf();
    let scn = dir.join("ctl-plugin.toml");
    std::fs::write(&scn, CTL_SCENARIO).unwrap();
    let socket = dir.join(format!("ctl-plugin-{}.sock", std::process::id()));
    let socket = socket.display().to_string();
    let run = live_with_socket(&scn, &socket);
    let ctl = |args: &[&str]| hsched(&ctl_args(&socket, args));
    let loaded = ctl(&["plugin", &edf]);
    assert!(loaded.status.success(), "{}", text(&loaded.stderr));
    let again = ctl(&["plugin", &edf]);
    assert!(!again.status.success(), "loaded twice");
    assert!(
        text(&again.stderr).contains("`example-edf`"),
        "{}",
        text(&again.stderr)
    );
    let rt = ctl(&[
        "load",
        "rt",
        "example-edf",
        "--parent",
        "root",
        "--at",
        "prio=1",
    ]);
    assert!(rt.status.success(), "{}", text(&rt.stderr));
    let out = stop(run);
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    for needle in [
        "loaded plugin",
        "loaded `rt` (example-edf)",
        "already known",
    ] {
        assert!(log.contains(needle), "`{needle}` in:\n{log}");
    }
}

/// A plugin library whose constructor takes 3 s stalls nothing: the live
/// run answers another client while it loads (the load is off the
/// agent's loop, which would otherwise miss its guardian's heartbeat and
/// be killed), then refuses the library, naming it, and stops in order.
#[test]
fn a_plugin_that_takes_seconds_to_load_stalls_no_live_run() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hsched_testkit::require!("root", realtime());
    let slow = lib("slow-start");
    let dir = Path::new(&slow).parent().unwrap().to_path_buf();
    let scn = dir.join("ctl-slow.toml");
    std::fs::write(&scn, CTL_SCENARIO).unwrap();
    let socket = dir.join(format!("ctl-slow-{}.sock", std::process::id()));
    let socket = socket.display().to_string();
    let run = live_with_socket(&scn, &socket);
    let loading = std::process::Command::new(env!("CARGO_BIN_EXE_hsched"))
        .args(ctl_args(&socket, &["plugin", &slow]))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its request in before the status one: the status is answered while
    // the library is still loading, its client still waiting.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = hsched(&ctl_args(&socket, &["status"]));
    let mut loading = loading;
    let still_loading = loading.try_wait().unwrap().is_none();
    assert!(status.status.success(), "{}", text(&status.stderr));
    assert!(text(&status.stdout).contains("scheduler ts"));
    assert!(still_loading, "the status was answered after the load");
    let loaded = loading.wait_with_output().unwrap();
    assert_eq!(loaded.status.code(), Some(2), "{}", text(&loaded.stderr));
    assert!(
        text(&loaded.stderr).contains(&slow),
        "{}",
        text(&loaded.stderr)
    );
    let out = stop(run);
    let log = text(&out.stdout);
    assert!(log.contains(&slow), "the refusal is logged: {log}");
}

#[test]
fn sim_and_check_take_plugin_flags() {
    let edf = lib("example-edf");
    let scn = example_scenario("edf-flag.toml", &edf);
    let scn = scn.display().to_string();
    // Loading it twice (flag and key) is the same library: no clash.
    let out = hsched(&["sim", &scn, "--plugin", &edf, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"example-edf\""));
    // The same run twice: byte for byte.
    let again = hsched(&["sim", &scn, "--plugin", &edf, "--json"]);
    let strip = |o: &Output| {
        text(&o.stdout)
            .lines()
            .filter(|l| !l.contains("wall"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&out), strip(&again));
}

/// Every way a plugin can fail to load: exit code 2, the path named.
#[test]
fn a_plugin_that_cannot_be_loaded_is_bad_input_naming_it() {
    let desktop = "scenarios/examples/desktop.toml";
    let future = lib("future-abi");
    let not_plugin = lib("not-a-plugin");
    let v = hsched_plugin::ABI_VERSION;
    let future_msg = format!("ABI version {}", v + 1);
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            "no/such/libplugin.so".into(),
            vec!["cannot open it", "docs/plugins.md"],
        ),
        (
            "my-policy/target/release/libmy_policy.so".into(),
            vec![
                "cannot open it",
                "build it: `cargo build --release --manifest-path my-policy/Cargo.toml`",
            ],
        ),
        (desktop.into(), vec!["cannot load it"]),
        (not_plugin.clone(), vec!["not an hsched plugin"]),
        (future.clone(), vec![&future_msg, "this hsched loads"]),
    ];
    for (path, needles) in &cases {
        for cmd in ["sim", "check"] {
            let out = hsched(&[cmd, desktop, "--plugin", path]);
            assert_eq!(out.status.code(), Some(2), "{cmd} --plugin {path}");
            let err = text(&out.stderr);
            assert!(err.contains(path.as_str()), "{path} in: {err}");
            for n in needles {
                assert!(err.contains(n), "`{n}` in: {err}");
            }
        }
        let out = hsched(&["policies", "--plugin", path]);
        assert_eq!(out.status.code(), Some(2));
    }
}

#[test]
fn a_scenario_naming_a_missing_plugin_is_bad_input_naming_key_and_path() {
    let scn = example_scenario("edf-missing.toml", "libno_such_plugin.so");
    let out = hsched(&["sim", &scn.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    for needle in ["edf-missing.toml", "plugins[0]", "libno_such_plugin.so"] {
        assert!(err.contains(needle), "`{needle}` in: {err}");
    }
}
