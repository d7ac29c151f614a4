//! `rialto`'s `multiprocessor` and `fit` parameters at the command line:
//! a bad value is a build error (exit 2) naming the supported modes, and a
//! partitioned `rialto` on 2 CPUs runs and is analysed with a label per VP.

mod common;
use common::{hsched, text};

fn scenario(name: &str, params: &str) -> std::path::PathBuf {
    let path = common::tmp("rialto-mp", name);
    std::fs::write(
        &path,
        format!(
            r#"name = "mp"
horizon = "300ms"
[machine]
cpus = 2
[[scheduler]]
name = "r"
policy = "rialto"
{params}
[[thread]]
name = "a"
parent = "r"
program = [ {{ msg = {{ name = "reserve", args = {{ amount = "60ms", period = "100ms" }} }} }}, {{ run = "1s" }} ]
[[thread]]
name = "b"
parent = "r"
program = [ {{ msg = {{ name = "reserve", args = {{ amount = "60ms", period = "100ms" }} }} }}, {{ run = "1s" }} ]
"#
        ),
    )
    .unwrap();
    path
}

#[test]
fn bad_multiprocessor_values_exit_2_naming_the_modes() {
    for (name, params, want) in [
        ("global.toml", "multiprocessor = \"global\"", "no published"),
        (
            "bogus.toml",
            "multiprocessor = \"spread\"",
            "\"one\" and \"partitioned\"",
        ),
        (
            "fit.toml",
            "multiprocessor = \"partitioned\"\nfit = \"best\"",
            "\"first\" or \"worst\"",
        ),
        ("regrant.toml", "regrant = \"percent\"", "`regrant`"),
    ] {
        let path = scenario(name, params);
        let out = hsched(&["sim", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = text(&out.stderr);
        assert!(err.contains(want), "{name}: {err}");
    }
}

#[test]
fn partitioned_runs_and_labels_each_grant_with_its_vp() {
    let path = scenario("ok.toml", "multiprocessor = \"partitioned\"");
    let out = hsched(&["sim", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = hsched(&["check", path.to_str().unwrap()]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("vp0") && all.contains("vp1"), "{all}");
}
