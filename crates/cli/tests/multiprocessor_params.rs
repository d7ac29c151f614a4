//! `res` and `dbs` `multiprocessor` / `fit` values from a scenario file:
//! a value that is not a supported mode or placement is a clear error
//! (exit 2) naming the policy and what it supports.

mod common;
use common::{hsched, text};

fn scenario(policy: &str, params: &str) -> std::path::PathBuf {
    let path = common::tmp(
        "cli-multiprocessor",
        &format!("{policy}-{}.toml", params.len()),
    );
    let body = format!(
        "name = \"mp\"\nhorizon = \"100ms\"\ndefault = \"r\"\n[machine]\ncpus = 2\n\n\
         [[scheduler]]\nname = \"r\"\npolicy = \"{policy}\"\n{params}\n\n\
         [[thread]]\nname = \"t\"\nparent = \"r\"\nprogram = [ {{ run = \"10ms\" }} ]\n"
    );
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn bad_multiprocessor_or_fit_exits_2_naming_the_supported_values() {
    for (policy, params, needles) in [
        (
            "res",
            "multiprocessor = \"several\"",
            &["res", "\"one\", \"partitioned\", \"global\""][..],
        ),
        (
            "res",
            "multiprocessor = \"partitioned\"\nfit = \"best\"",
            &["`fit`", "\"first\" or \"worst\""][..],
        ),
        (
            "dbs",
            "multiprocessor = \"global\"",
            &["dbs", "one-off", "\"one\", \"partitioned\""][..],
        ),
    ] {
        let file = scenario(policy, params);
        let out = hsched(&["sim", file.to_str().unwrap()]);
        // The report wraps long lines: compare with the wrapping undone.
        let err = text(&out.stderr).replace('│', " ");
        let err = err.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(out.status.code(), Some(2), "{policy} {params}: {err}");
        for n in needles {
            assert!(err.contains(n), "{n:?} not in {err}");
        }
    }
    // A good value runs.
    let file = scenario("res", "multiprocessor = \"global\"");
    let out = hsched(&["sim", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}
