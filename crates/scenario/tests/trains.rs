//! The scenario syntax of protection domains, train and RPC calls and
//! kills (Yau, Tan & Lam §6): what it builds, and the errors bad input
//! gets (never a panic).

use hsched_model::{Action, Op, Via};
use hsched_scenario::parse;
use proptest::prelude::*;

const HEAD: &str = r#"
horizon = "1s"
[[scheduler]]
name = "rr"
policy = "rr"
"#;

fn with(body: &str) -> String {
    format!("{HEAD}\n{body}")
}

const GOOD: &str = r#"
[[domain]]
name = "server"
stops = [ { name = "compute", body = [ { run = "5ms" } ] } ]

[[thread]]
name = "worker"
domain = "server"
program = [ { serve = "server" } ]

[[thread]]
name = "client"
program = [
  { call = { stop = "server.compute", via = "train" } },
  { call = { stop = "server.compute", via = "rpc" } },
  { call = { stop = "server.compute" } },
  { kill = "server" },
  { exit = true },
]

[[script]]
at = "500ms"
kill = "client"
"#;

#[test]
fn domains_calls_and_kills_are_built() {
    let scn = parse(&with(GOOD), "t.toml").unwrap();
    // The domain comes first in the script, at time zero, with its members.
    let Action::Domain(d) = &scn.script[0].action else {
        panic!("{:?}", scn.script[0]);
    };
    assert_eq!(scn.script[0].at.as_nanos(), 0);
    assert_eq!(d.name, "server");
    assert_eq!(d.members, vec!["worker".to_string()]);
    assert_eq!(d.stops[0].name, "compute");
    assert!(matches!(scn.script[1].action, Action::Kill(ref n) if n == "client"));
    let client = scn.threads.iter().find(|t| t.name == "client").unwrap();
    let vias: Vec<Via> = client
        .program
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Call { domain, stop, via } => {
                assert_eq!((domain.as_str(), stop.as_str()), ("server", "compute"));
                Some(*via)
            }
            _ => None,
        })
        .collect();
    assert_eq!(vias, vec![Via::Train, Via::Rpc, Via::Train]);
    assert!(matches!(client.program.ops[3], Op::Kill(ref n) if n == "server"));
    assert!(matches!(client.program.ops[4], Op::Exit));
}

fn error(body: &str) -> String {
    let e = parse(&with(body), "t.toml").expect_err("should be refused");
    format!("{e:?}")
}

#[test]
fn bad_references_are_refused_with_the_key_and_what_was_expected() {
    let cases = [
        (
            r#"[[thread]]
name = "c"
program = [ { call = { stop = "nowhere.x" } }, { run = "1ms" } ]"#,
            "no domain `nowhere`",
        ),
        (
            r#"[[domain]]
name = "server"
stops = [ { name = "compute", body = [ { run = "5ms" } ] } ]
[[thread]]
name = "c"
program = [ { call = { stop = "server.comput" } } ]"#,
            "exports no stop `comput`",
        ),
        (
            r#"[[thread]]
name = "c"
program = [ { call = { stop = "serverdotless" } } ]"#,
            "expected \\\"domain.stop\\\"",
        ),
        (
            r#"[[domain]]
name = "s"
stops = [ { name = "x", body = [ { run = "5ms" } ] } ]
[[thread]]
name = "c"
program = [ { call = { stop = "s.x", via = "pigeon" } } ]"#,
            "unknown call mechanism `pigeon`",
        ),
        (
            r#"[[domain]]
name = "s"
stops = [ { name = "x", body = [ { serve = "s" } ] } ]"#,
            "`serve` inside a stop",
        ),
        (
            r#"[[domain]]
name = "s"
stops = [ { name = "x", body = [ { yield = true } ] } ]"#,
            "must take time",
        ),
        (
            r#"[[domain]]
name = "a.b""#,
            "contains `.`",
        ),
        (
            r#"[[domain]]
name = "s"
[[domain]]
name = "s""#,
            "declared twice",
        ),
        (
            r#"[[thread]]
name = "c"
domain = "ghost"
program = [ { run = "1ms" } ]"#,
            "no domain `ghost`",
        ),
        (
            r#"[[thread]]
name = "c"
program = [ { kill = "ghost" } ]"#,
            "no domain `ghost`",
        ),
        (
            r#"[[thread]]
name = "c"
program = [ { run = "1ms" } ]
[[script]]
at = "1ms"
kill = "ghost""#,
            "no domain `ghost`",
        ),
        (
            r#"[[thread]]
name = "c"
program = [ { exit = false } ]"#,
            "expected `exit = true`",
        ),
        (
            r#"[[thread]]
name = "c"
program = [ { create = "ghost" }, { run = "1ms" } ]"#,
            "no domain `ghost`",
        ),
        (
            // A private domain cannot be started: it has nothing to run.
            r#"[[thread]]
name = "c"
program = [ { create = "c" }, { run = "1ms" } ]"#,
            "no domain `c`",
        ),
        (
            r#"[[thread]]
name = "c"
program = [ { run = "1ms" } ]
[[script]]
at = "1ms"
create = "ghost""#,
            "no domain `ghost`",
        ),
        (
            r#"[[domain]]
name = "s"
start = "later""#,
            "domain[0].start",
        ),
    ];
    for (body, want) in cases {
        let e = error(body);
        assert!(e.contains(want), "{body}\n--- expected {want:?} in:\n{e}");
    }
}

#[test]
fn a_domain_can_wait_for_a_create_from_a_program_or_the_script() {
    let scn = parse(
        &with(
            r#"[[domain]]
name = "svc"
start = false
stops = [ { name = "work", body = [ { run = "1ms" } ] } ]
[[thread]]
name = "admin"
program = [ { create = "svc" }, { run = "1ms" } ]
[[script]]
at = "5ms"
create = "svc""#,
        ),
        "t.toml",
    )
    .unwrap();
    let Action::Domain(d) = &scn.script[0].action else {
        panic!("{:?}", scn.script[0]);
    };
    assert!(!d.start);
    assert!(matches!(scn.script[1].action, Action::Create(ref n) if n == "svc"));
    assert!(matches!(scn.threads[0].program.ops[0], Op::Create(ref n) if n == "svc"));
    // Declared without `start`, a domain is alive from the beginning.
    let scn = parse(&with(GOOD), "t.toml").unwrap();
    let Action::Domain(d) = &scn.script[0].action else {
        panic!("{:?}", scn.script[0]);
    };
    assert!(d.start);
}

#[test]
fn a_thread_without_a_domain_has_a_private_one_a_kill_can_name() {
    let scn = parse(
        &with(
            r#"[[thread]]
name = "victim"
program = [ { run = "1s" } ]
[[thread]]
name = "killer"
program = [ { kill = "victim" } ]"#,
        ),
        "t.toml",
    )
    .unwrap();
    assert!(scn.script.is_empty());
}

proptest! {
    /// Whatever is written in a call, a kill, a create or a domain, parsing answers
    /// with a scenario or an error, never a panic.
    #[test]
    fn arbitrary_domain_text_never_panics(
        stop in "[a-z.]{0,8}",
        via in "[a-z]{0,5}",
        dname in "[a-z.]{0,5}",
        sname in "[a-z]{0,4}",
        kill in "[a-z]{0,5}",
        create in "[a-z]{0,5}",
        start in prop_oneof![Just("true"), Just("false"), Just("\"no\""), Just("1")],
        body in prop_oneof![Just("{ run = \"1ms\" }"), Just("{ serve = \"s\" }"), Just("{ yield = true }"), Just("{ call = { stop = \"s.x\" } }")],
    ) {
        let text = with(&format!(
            r#"[[domain]]
name = "{dname}"
start = {start}
stops = [ {{ name = "{sname}", body = [ {body} ] }} ]
[[thread]]
name = "c"
program = [ {{ call = {{ stop = "{stop}", via = "{via}" }} }}, {{ kill = "{kill}" }}, {{ create = "{create}" }}, {{ run = "1ms" }} ]"#
        ));
        let _ = parse(&text, "t.toml");
    }
}
