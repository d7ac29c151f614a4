//! The schedulers from the literature (HLS Table 1, lower part) and rows
//! added at run time: each child's promise checked against the row.

mod build_scenario;
mod hierarchies;

use build_scenario::*;
use hierarchies::{under_all, under_null};
use hsched_analysis::rules::{RuleBook, Severity};

#[test]
fn literature_schedulers_check_their_childrens_promises_against_the_row() {
    let a = under_all("c", "cbs", &[])
        .thread("v", "c", &[("guarantee", text("RESBH 5, 33"))])
        .thread("w", "c", &[("guarantee", text("RESBH 40, 80"))])
        .thread("x", "c", &[])
        .analyse();
    assert_eq!(label(&a, "c", "v"), "RESBH 5, 33");
    assert_eq!(label(&a, "c", "w"), "RESBH 40, 80");
    assert_eq!(label(&a, "c", "x"), "NULL");
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert!(a.nodes.iter().find(|n| n.name == "c").unwrap().literature);

    // A kind the row does not provide; shares past the CPU.
    let a = under_all("c", "cbs", &[])
        .thread("p", "c", &[("guarantee", text("PSBE 0.1, 5"))])
        .analyse();
    assert!(only_error(&a).contains("cbs provides RESBH+ from ALL"));
    let a = under_all("c", "cbs", &[])
        .thread("a", "c", &[("guarantee", text("RESBH 60, 100"))])
        .thread("b", "c", &[("guarantee", text("RESBH 50, 100"))])
        .analyse();
    assert!(only_error(&a).contains("110%"));

    // Under NULL: an error with promises, a warning without.
    let a = under_null("c", "cbs", &[])
        .thread("v", "c", &[("guarantee", text("RESBH 5, 33"))])
        .analyse();
    assert!(only_error(&a).contains("cbs needs ALL or RESU"));
    let a = under_null("c", "cbs", &[]).thread("v", "c", &[]).analyse();
    assert!(a.composes());
}

#[test]
fn literature_schedulers_on_a_slower_processor_promise_in_its_time() {
    // BSS-I gives a RESU 0.5 to a CBS; CBS's RESBH 10, 20 is then 25%.
    let a = under_all("b", "bss-i", &[])
        .sched(
            "c",
            "cbs",
            &[],
            &[("b", &[("guarantee", text("RESU 0.5"))])],
        )
        .thread("t", "c", &[("guarantee", text("RESBH 10, 20"))])
        .thread("u", "c", &[("guarantee", text("RESBH 10, 20"))])
        .analyse();
    assert_eq!(label(&a, "b", "c"), "RESU 0.5");
    assert_eq!(label(&a, "c", "t"), "RESBH 5, 20");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    // Lottery takes ALL as PS 1 and hands out shares.
    let a = under_all("l", "lottery", &[])
        .thread("t", "l", &[("guarantee", text("PS 0.3"))])
        .analyse();
    assert_eq!(label(&a, "l", "t"), "PS 0.3");
    assert!(a
        .nodes
        .iter()
        .find(|n| n.name == "l")
        .unwrap()
        .taken_as
        .is_some());

    // Time sharing from the literature gives NULL and needs nothing.
    let a = under_null("w", "win-2000", &[])
        .thread("t", "w", &[])
        .analyse();
    assert!(a.problems.is_empty());
}

#[test]
fn a_row_added_at_run_time_is_used_for_its_policy() {
    let mut book = RuleBook::standard();
    book.add_row("edf-plugin", "ALL -> RESBH+").unwrap();
    let b =
        under_all("p", "edf-plugin", &[]).thread("t", "p", &[("guarantee", text("RESBH 2, 10"))]);
    let a = b.analyse_with(&book);
    assert_eq!(label(&a, "p", "t"), "RESBH 2, 10");
    assert!(a.problems.is_empty());

    // Without the row: a warning, and NULL.
    let a = b.analyse();
    assert_eq!(label(&a, "p", "t"), "NULL");
    assert!(messages(&a, Severity::Warning)[0].contains("no guarantee rule is known"));
}
