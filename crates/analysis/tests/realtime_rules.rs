//! The `edf` and `rm` rules (Liu & Layland over periodic children): what
//! each child's edge carries, at and past the bounds, and the warnings.

mod build_scenario;

use build_scenario::*;
use hsched_analysis::rules::Severity;

/// `root` (fp) with the scheduler under test at the top priority (ALL).
fn under_all(name: &str, policy: &str) -> Build {
    scenario(1).sched("root", "fp", &[], &[]).sched(
        name,
        policy,
        &[],
        &[("root", &[("prio", int(10))])],
    )
}

fn task(period: u64, wcet: u64) -> Vec<(&'static str, hsched_core::Value)> {
    vec![("period", ms(period)), ("wcet", ms(wcet))]
}

#[test]
fn edf_gives_each_child_its_reservation_up_to_a_full_cpu() {
    let a = under_all("e", "edf")
        .thread("a", "e", &task(10, 5))
        .thread("b", "e", &task(20, 6))
        .thread("c", "e", &task(50, 10))
        .analyse();
    // 50% + 30% + 20% = 100%: exactly schedulable under EDF.
    assert_eq!(label(&a, "e", "a"), "RESBH 5, 10");
    assert_eq!(label(&a, "e", "b"), "RESBH 6, 20");
    assert_eq!(label(&a, "e", "c"), "RESBH 10, 50");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    let over = under_all("e", "edf")
        .thread("a", "e", &task(10, 5))
        .thread("b", "e", &task(20, 7))
        .thread("c", "e", &task(50, 10))
        .analyse();
    assert_eq!(label(&over, "e", "a"), "NULL");
    let w = messages(&over, Severity::Warning);
    assert!(
        w.iter()
            .any(|m| m.contains("utilisation is 105%") && m.contains("overloaded")),
        "{w:?}"
    );
    assert!(messages(&over, Severity::Error).is_empty());
}

#[test]
fn edf_with_shorter_deadlines_uses_the_density() {
    let mut b = task(10, 4);
    b.push(("deadline", ms(5)));
    let a = under_all("e", "edf")
        .thread("a", "e", &b)
        .thread("b", "e", &task(10, 3))
        .analyse();
    // 4/5 + 3/10 = 110% by density, though the utilisation is 70%.
    assert_eq!(label(&a, "e", "a"), "NULL");
    let w = messages(&a, Severity::Warning).join("\n");
    assert!(w.contains("density") && w.contains("110%"), "{w}");
}

#[test]
fn edf_guarantees_nothing_beside_a_child_of_unknown_demand() {
    let a = under_all("e", "edf")
        .thread("a", "e", &task(10, 1))
        .thread("hog", "e", &[("period", ms(10))])
        .analyse();
    assert_eq!(label(&a, "e", "a"), "NULL");
    let w = messages(&a, Severity::Warning).join("\n");
    assert!(w.contains("`hog`") && w.contains("unknown"), "{w}");
}

#[test]
fn rm_guarantees_by_priority_under_the_hyperbolic_bound() {
    // U = 0.5 + 0.25 + 0.2 = 95%: past Liu & Layland's bound for 3 tasks
    // (78%) and the hyperbolic bound (1.5 * 1.25 * 1.2 = 2.25 > 2) for all
    // three, but the two shortest periods pass (1.5 * 1.25 = 1.875).
    let a = under_all("r", "rm")
        .thread("fast", "r", &task(10, 5))
        .thread("mid", "r", &task(20, 5))
        .thread("slow", "r", &task(50, 10))
        .thread("bg", "r", &[])
        .analyse();
    assert_eq!(label(&a, "r", "fast"), "RESBH 5, 10");
    assert_eq!(label(&a, "r", "mid"), "RESBH 5, 20");
    assert_eq!(label(&a, "r", "slow"), "NULL");
    assert_eq!(label(&a, "r", "bg"), "NULL");
    let w = messages(&a, Severity::Warning).join("\n");
    assert!(w.contains("`slow`") && w.contains("hyperbolic"), "{w}");
    assert!(!w.contains("`mid`"), "{w}");
}

#[test]
fn rm_does_not_let_a_lower_priority_child_of_unknown_demand_spoil_the_higher() {
    let a = under_all("r", "rm")
        .thread("fast", "r", &task(10, 2))
        .thread("unknown", "r", &[("period", ms(20))])
        .thread("slow", "r", &task(40, 2))
        .analyse();
    assert_eq!(label(&a, "r", "fast"), "RESBH 2, 10");
    assert_eq!(label(&a, "r", "slow"), "NULL");
    let w = messages(&a, Severity::Warning).join("\n");
    assert!(w.contains("no `wcet` from `unknown`"), "{w}");
}

#[test]
fn real_time_schedulers_need_a_whole_processor() {
    for policy in ["edf", "rm"] {
        let a = scenario(1)
            .sched("ts", "rr", &[], &[])
            .sched("x", policy, &[], &[("ts", &[])])
            .thread("a", "x", &task(10, 1))
            .analyse();
        assert_eq!(label(&a, "x", "a"), "NULL");
        let w = messages(&a, Severity::Warning).join("\n");
        assert!(w.contains("needs ALL"), "{policy}: {w}");
    }
}
