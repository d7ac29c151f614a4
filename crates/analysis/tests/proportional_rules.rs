//! The proportional-share rules (`sfq`, `bvt`; HLS Table 1, §5.1) on small
//! hierarchies: the shares each child's edge carries, and the warnings
//! under NULL or on several CPUs.

mod build_scenario;
mod hierarchies;

use build_scenario::*;
use hierarchies::{under_all, under_null};
use hsched_analysis::rules::Severity;

#[test]
fn sfq_passes_a_bounded_error_share_by_the_rule_of_5_1() {
    // Under ALL (PSBE 1, 0): weights 1 and 3, T = 2, q = 10ms:
    // 1/4·2·10 + 10 = 15 and 3/4·2·10 + 10 = 25.
    let a = under_all("ps", "sfq", &[("quantum", ms(10))])
        .thread("a", "ps", &[("weight", int(1))])
        .thread("b", "ps", &[("weight", int(3))])
        .analyse();
    assert_eq!(label(&a, "ps", "a"), "PSBE 0.25, 15");
    assert_eq!(label(&a, "ps", "b"), "PSBE 0.75, 25");
    assert!(a.problems.is_empty());

    // A platform tick lengthens the longest segment: q = 11ms.
    let mut b = under_all("ps", "sfq", &[("quantum", ms(10))])
        .thread("a", "ps", &[("weight", int(1))])
        .thread("b", "ps", &[("weight", int(3))]);
    b.scn.machine.tick = Some(hsched_core::Duration::from_millis(1));
    let a = b.analyse();
    assert_eq!(label(&a, "ps", "a"), "PSBE 0.25, 16.5");
}

#[test]
fn sfq_with_a_warp_claims_shares_only() {
    let a = under_all("ps", "sfq", &[])
        .thread("a", "ps", &[("weight", int(1)), ("warp", ms(5))])
        .thread("b", "ps", &[("weight", int(1))])
        .analyse();
    assert_eq!(label(&a, "ps", "a"), "PS 0.5");
    assert_eq!(label(&a, "ps", "b"), "PS 0.5");
    let w = messages(&a, Severity::Warning);
    assert!(w.len() == 1 && w[0].contains("`a` has a warp"), "{w:?}");
    assert!(a.composes());
}

#[test]
fn proportional_share_under_null_or_on_several_cpus_warns_and_gives_null() {
    for policy in ["sfq", "bvt"] {
        let a = under_null("ps", policy, &[])
            .thread("t", "ps", &[])
            .analyse();
        assert_eq!(label(&a, "ps", "t"), "NULL");
        let w = messages(&a, Severity::Warning);
        assert!(
            w.len() == 1 && w[0].contains("receiving NULL gives NULL"),
            "{policy}: {w:?}"
        );
        assert!(a.composes(), "a warning only");

        let a = scenario(2)
            .sched("ps", policy, &[], &[])
            .thread("t", "ps", &[])
            .analyse();
        assert_eq!(label(&a, "ps", "t"), "NULL");
        let w = messages(&a, Severity::Warning);
        assert!(w[0].contains("several CPUs"), "{policy}: {w:?}");
    }
}

#[test]
fn bvt_gives_shares_by_the_inverse_of_the_mcu_advance() {
    let a = under_all("b", "bvt", &[])
        .thread("x", "b", &[("advance", int(1))])
        .thread("y", "b", &[("advance", int(2))])
        .analyse();
    // Weights 1 and 1/2: shares 2/3 and 1/3.
    assert_eq!(label(&a, "b", "x"), "PS 0.6666");
    assert_eq!(label(&a, "b", "y"), "PS 0.3333");
    let share = edge(&a, "b", "y").guarantee.share().unwrap();
    assert_eq!((share.num(), share.den()), (1, 3));
}
