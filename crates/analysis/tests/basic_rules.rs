//! The rules for the HLS components and the time-sharing schedulers
//! (`fifo`, `rr`, `ts`, `fp`, `join`, `limit`; HLS Table 1, §5.1) on small
//! hierarchies: what each child's edge carries, and which problems are
//! errors and which warnings.

mod build_scenario;
mod hierarchies;

use build_scenario::*;
use hierarchies::{under_all, under_null};

#[test]
fn time_sharing_gives_null_whatever_it_receives() {
    for policy in ["fifo", "rr", "ts"] {
        for b in [under_all("x", policy, &[]), under_null("x", policy, &[])] {
            let a = b.thread("t", "x", &[]).thread("u", "x", &[]).analyse();
            assert_eq!(label(&a, "x", "t"), "NULL", "{policy}");
            assert_eq!(label(&a, "x", "u"), "NULL", "{policy}");
            assert!(a.problems.is_empty(), "{policy}: {:?}", a.problems);
        }
    }
}

#[test]
fn fixed_priority_passes_its_guarantee_to_the_one_top_child() {
    let a = scenario(1)
        .sched("root", "fp", &[], &[])
        .thread("high", "root", &[("prio", int(5))])
        .thread("low", "root", &[("prio", int(3))])
        .analyse();
    assert_eq!(label(&a, "root", "high"), "ALL");
    assert_eq!(label(&a, "root", "low"), "NULL");
    assert_eq!(
        edge(&a, "root", "low").why.as_deref(),
        Some("priority 3, below `high` at 5")
    );
    assert!(a.problems.is_empty());

    // Below a reservation, the top child gets the reservation.
    let a = under_all("r", "res", &[])
        .sched(
            "f",
            "fp",
            &[],
            &[("r", &[("amount", ms(10)), ("period", ms(20))])],
        )
        .thread("top", "f", &[("prio", int(2))])
        .thread("next", "f", &[("prio", int(1))])
        .analyse();
    assert_eq!(label(&a, "r", "f"), "RESBH 10, 20");
    assert_eq!(label(&a, "f", "top"), "RESBH 10, 20");
    assert_eq!(label(&a, "f", "next"), "NULL");
}

#[test]
fn fixed_priority_gives_null_to_children_sharing_the_top_priority() {
    let a = scenario(1)
        .sched("root", "fp", &[], &[])
        .sched("r", "res", &[], &[("root", &[("prio", int(5))])])
        .thread("t", "root", &[("prio", int(5))])
        .thread("v", "r", &[("amount", ms(5)), ("period", ms(33))])
        .analyse();
    assert_eq!(label(&a, "root", "r"), "NULL");
    assert_eq!(label(&a, "root", "t"), "NULL");
    let e = only_error(&a);
    assert!(
        e.contains("`r` (res) under `root`")
            && e.contains("res needs ALL or RESU")
            && e.contains("priority 5, shared with `t`"),
        "{e}"
    );
}

#[test]
fn fixed_priority_on_several_cpus_gives_all_to_the_vps_that_never_wait() {
    let a = scenario(2)
        .sched("root", "fp", &[], &[])
        .thread("a", "root", &[("prio", int(3))])
        .thread("b", "root", &[("prio", int(2))])
        .thread("c", "root", &[("prio", int(1))])
        .analyse();
    assert_eq!(a.edge(None, "root").unwrap().vps, 2);
    assert_eq!(label(&a, "root", "a"), "ALL");
    assert_eq!(label(&a, "root", "b"), "ALL");
    assert_eq!(label(&a, "root", "c"), "NULL");
    assert!(a.notes.iter().any(|n| n.contains("2 CPUs")));
}

#[test]
fn a_join_passes_on_the_best_parent_guarantee_made_soft() {
    let a = scenario(1)
        .sched("fp", "fp", &[], &[])
        .sched("res", "res", &[], &[("fp", &[("prio", int(10))])])
        .sched(
            "j",
            "join",
            &[],
            &[
                ("res", &[("amount", ms(40)), ("period", ms(80))]),
                ("fp", &[("prio", int(0))]),
            ],
        )
        .thread("t", "j", &[])
        .analyse();
    assert_eq!(label(&a, "res", "j"), "RESBH 40, 80");
    assert_eq!(label(&a, "fp", "j"), "NULL");
    assert_eq!(label(&a, "j", "t"), "RESBS 40, 80");
    let why = edge(&a, "j", "t").why.clone().unwrap();
    assert!(
        why.contains("made soft") && why.contains("NULL from `fp`"),
        "{why}"
    );
    assert!(a.problems.is_empty(), "{:?}", a.problems);
}

#[test]
fn a_limit_turns_a_soft_reservation_or_all_into_a_hard_one() {
    let a = under_all("cap", "limit", &[("budget", ms(5)), ("period", ms(33))])
        .thread("t", "cap", &[])
        .analyse();
    assert_eq!(label(&a, "cap", "t"), "RESBH 5, 33");
    let taken = a.nodes.iter().find(|n| n.name == "cap").unwrap();
    assert_eq!(
        taken.taken_as.as_ref().unwrap().result.to_string(),
        "RESBS 5, 33"
    );
    assert!(a.problems.is_empty());

    // From a join's soft reservation of the same period.
    let a = scenario(1)
        .sched("fp", "fp", &[], &[])
        .sched("res", "res", &[], &[("fp", &[("prio", int(10))])])
        .sched("ts", "rr", &[], &[("fp", &[("prio", int(0))])])
        .sched(
            "j",
            "join",
            &[],
            &[
                ("res", &[("amount", ms(40)), ("period", ms(80))]),
                ("ts", &[]),
            ],
        )
        .sched(
            "cap",
            "limit",
            &[("budget", ms(40)), ("period", ms(80))],
            &[("j", &[])],
        )
        .thread("t", "cap", &[])
        .analyse();
    assert_eq!(label(&a, "j", "cap"), "RESBS 40, 80");
    assert_eq!(label(&a, "cap", "t"), "RESBH 40, 80");
    assert!(edge(&a, "cap", "t")
        .why
        .as_deref()
        .unwrap()
        .contains("in line"));
    assert!(a.composes());
}

#[test]
fn a_limit_without_a_reservation_to_cap_is_an_error() {
    let a = under_null("cap", "limit", &[("budget", ms(5)), ("period", ms(33))])
        .thread("t", "cap", &[])
        .analyse();
    assert_eq!(label(&a, "cap", "t"), "NULL");
    let e = only_error(&a);
    assert!(
        e.starts_with("`cap` (limit) under `ts`: limit needs RESBS 5, 33")
            && e.contains("`ts` (rr) gives it NULL"),
        "{e}"
    );
}
