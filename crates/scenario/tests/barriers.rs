//! The `barrier` operation: what parses into what, and the error for a
//! barrier in a domain's stop body (whose parties would be its callers).

mod common;

use common::{parse, BASE};
use hsched_model::Op;

#[test]
fn a_barrier_parses_by_name() {
    let text = BASE.replace(
        "{ run = \"5ms\" }",
        "{ loop = { count = 3, body = [ { run = \"1ms\" }, { barrier = \"frame\" } ] } }",
    );
    let text = format!(
        "{text}\n[[thread]]\nname = \"b\"\ncount = 2\nprogram = [ {{ barrier = \"frame\" }} ]\n"
    );
    let s = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let Op::Loop { body, .. } = &s.threads[0].program.ops[0] else {
        panic!("{:?}", s.threads[0].program.ops);
    };
    assert!(matches!(&body[1], Op::Barrier(n) if n == "frame"));
    assert!(matches!(&s.threads[2].program.ops[0], Op::Barrier(n) if n == "frame"));
}

#[test]
fn a_barrier_needs_a_name() {
    let text = BASE.replace("{ run = \"5ms\" }", "{ barrier = 3 }");
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("thread[0].program[0].barrier"), "{e}");
    assert!(e.contains("a barrier name"), "{e}");
}

#[test]
fn a_barrier_in_a_stop_body_is_refused() {
    let text = format!(
        "{BASE}\n[[domain]]\nname = \"server\"\nstops = [ {{ name = \"compute\", body = [ {{ run = \"1ms\" }}, {{ barrier = \"b\" }} ] }} ]\n"
    );
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("barrier `b` in a stop's body"), "{e}");
    assert!(e.contains("domain[0].stops[0].body[1].barrier"), "{e}");
}
