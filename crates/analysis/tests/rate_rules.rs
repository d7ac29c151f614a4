//! The rate-based rules (`frc`, `rcsp`, `hfsc`): admission replayed in
//! arrival order, the rates and shares each child's edge carries, and
//! NULL under NULL or on several CPUs.

mod build_scenario;
mod hierarchies;

use build_scenario::*;
use hierarchies::{under_all, under_null};
use hsched_analysis::rules::Severity;

/// Differential admission (§3.1) replayed in arrival order: a class of
/// 0.5 that may not overbook admits five children of 0.1 and refuses the
/// sixth; the five keep their full rate (the refused one does not dilute
/// it), the sixth is labelled refused, with a warning. A child admitted
/// only when another has left first gets NULL and why. A scheduler child
/// refused is an error: the hierarchy cannot be built.
#[test]
fn frc_labels_what_admission_lets_in() {
    let rate = |r: &str| [("rate", text(r)), ("quantum", ms(10))];
    let mut b = under_all("f", "frc", &[("classes", text("GR:0.5:0"))]);
    for i in 0..6 {
        b = b.thread(&format!("w{i}"), "f", &rate("0.1"));
    }
    let a = b.analyse();
    for i in 0..5 {
        // δ = 0.1 × 5 other quanta of 10 ms + its own 10 ms.
        assert_eq!(label(&a, "f", &format!("w{i}")), "PSBE 0.1, 15");
    }
    assert_eq!(label(&a, "f", "w5"), "NULL");
    assert!(edge(&a, "f", "w5").refused);
    let w = messages(&a, Severity::Warning);
    assert!(
        w.iter()
            .any(|w| w.contains("`w5`") && w.contains("refuses it at admission")),
        "{w:?}"
    );
    assert!(a.composes());

    // 0.3 then 0.3 (refused while the first stays), then 0.2: admitted
    // when none leaves, but after the first leaves the second gets in and
    // then 0.2 does not fit: NULL, and why.
    let a = under_all("f", "frc", &[("classes", text("GR:0.5:0"))])
        .thread("a", "f", &rate("0.3"))
        .thread("b", "f", &rate("0.3"))
        .thread("c", "f", &rate("0.2"))
        .analyse();
    assert_eq!(label(&a, "f", "a"), "PSBE 0.3, 16");
    assert!(edge(&a, "f", "b").refused);
    assert_eq!(label(&a, "f", "c"), "NULL");
    assert!(!edge(&a, "f", "c").refused);
    assert!(edge(&a, "f", "c")
        .why
        .as_deref()
        .unwrap()
        .contains("may refuse it"));

    let a = under_all("f", "frc", &[("classes", text("GR:0.5:0"))])
        .sched("p", "rr", &[], &[("f", &rate("0.4"))])
        .sched("q", "rr", &[], &[("f", &rate("0.4"))])
        .analyse();
    assert!(only_error(&a)
        .contains("scheduler `q` under `f` (frc): class `GR` refuses it at admission"));
}

/// A thread refused where it is placed runs under the default scheduler
/// and takes its share there: an `sfq` root (the default) over an `frc`
/// and a thread `a`, weights 1; the `frc`'s class admits five of six
/// threads, and the sixth joins the root with weight 1, so `a` shares the
/// root three ways, not two (PSBE 1/3). The refused thread keeps its
/// refusal on the `frc`'s edge.
#[test]
fn a_refused_thread_is_counted_where_it_runs() {
    let rate = [("rate", text("0.1")), ("quantum", ms(10))];
    let mut b = scenario(1)
        .sched("root", "sfq", &[], &[])
        .sched(
            "f",
            "frc",
            &[("classes", text("GR:0.5:0"))],
            &[("root", &[])],
        )
        .thread("a", "root", &[]);
    for i in 0..6 {
        b = b.thread(&format!("w{i}"), "f", &rate);
    }
    b.scn.default_scheduler = "root".into();
    let a = b.analyse();
    assert!(
        label(&a, "root", "a").starts_with("PSBE 0.3333,"),
        "{}",
        label(&a, "root", "a")
    );
    assert!(
        label(&a, "root", "f").starts_with("PSBE 0.3333,"),
        "{}",
        label(&a, "root", "f")
    );
    assert!(edge(&a, "f", "w5").refused);
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("`w5` run under the default scheduler `root`")),
        "{:?}",
        a.notes
    );
}

#[test]
fn frc_gives_corollary_1_1_under_a_whole_cpu() {
    // Σr = 0.5 <= 1, q = w (no tick): PSBE r_i, r_i·Σ_{j≠i} q_j + q_i:
    // 0.2·5 + 10 = 11 and 0.3·10 + 5 = 8.
    let a = under_all("f", "frc", &[])
        .thread("a", "f", &[("rate", text("0.2")), ("quantum", ms(10))])
        .thread("b", "f", &[("rate", text("0.3")), ("quantum", ms(5))])
        .analyse();
    assert_eq!(label(&a, "f", "a"), "PSBE 0.2, 11");
    assert_eq!(label(&a, "f", "b"), "PSBE 0.3, 8");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    // RCSP: the same with the quanta doubled: 0.2·10 + 20, 0.3·20 + 10.
    let a = under_all("f", "rcsp", &[])
        .thread("a", "f", &[("rate", text("0.2")), ("quantum", ms(10))])
        .thread("b", "f", &[("rate", text("0.3")), ("quantum", ms(5))])
        .analyse();
    assert_eq!(label(&a, "f", "a"), "PSBE 0.2, 22");
    assert_eq!(label(&a, "f", "b"), "PSBE 0.3, 16");

    // A tick adds to every q, and a quantum below min_quantum is raised:
    // q = 2 + 1 and 10 + 1: 0.2·11 + 3 = 5.2.
    let mut b = under_all("f", "frc", &[("min_quantum", ms(2))])
        .thread("a", "f", &[("rate", text("0.2")), ("quantum", ms(1))])
        .thread("b", "f", &[("rate", text("0.3")), ("quantum", ms(10))]);
    b.scn.machine.tick = Some(hsched_core::Duration::from_millis(1));
    let a = b.analyse();
    assert_eq!(label(&a, "f", "a"), "PSBE 0.2, 5.2");
}

#[test]
fn frc_overbooked_gives_theorem_1_and_classes_give_effective_rates() {
    // Σr = 1.4: PSBE 0.6/1.4, (0.6·10 + 10·0.8) / 1.4 = 10 (rounded up
    // in two parts: 10.000001).
    let a = under_all("f", "frc", &[])
        .thread("a", "f", &[("rate", text("0.6")), ("quantum", ms(10))])
        .thread("b", "f", &[("rate", text("0.8")), ("quantum", ms(10))])
        .analyse();
    assert_eq!(label(&a, "f", "a"), "PSBE 0.4285, 10.001");
    let share = edge(&a, "f", "a").guarantee.share().unwrap();
    assert_eq!((share.num(), share.den()), (3, 7));

    // FR overbooked: two nominal 0.5 in a class of 0.5 get 0.25 each;
    // Σ effective = 0.9: 0.4·20 + 10 = 18 and 0.25·20 + 10 = 15.
    let a = under_all("f", "frc", &[("classes", text("GR:0.5:0, FR:0.5:inf"))])
        .thread("a", "f", &[("rate", text("0.4")), ("class", text("GR"))])
        .thread("b", "f", &[("rate", text("0.5")), ("class", text("FR"))])
        .thread("c", "f", &[("rate", text("0.5")), ("class", text("FR"))])
        .analyse();
    assert_eq!(label(&a, "f", "a"), "PSBE 0.4, 18");
    assert_eq!(label(&a, "f", "b"), "PSBE 0.25, 15");
    assert_eq!(label(&a, "f", "c"), "PSBE 0.25, 15");
}

#[test]
fn frc_under_a_reservation_gives_shares_of_it() {
    // RESBH 10, 20 rewrites to PS 0.5: children at 0.2 and 0.3 of 0.5.
    let a = under_all("r", "res", &[])
        .sched(
            "f",
            "frc",
            &[],
            &[("r", &[("amount", ms(10)), ("period", ms(20))])],
        )
        .thread("a", "f", &[("rate", text("0.2"))])
        .thread("b", "f", &[("rate", text("0.3"))])
        .analyse();
    assert_eq!(label(&a, "f", "a"), "PS 0.2");
    assert_eq!(label(&a, "f", "b"), "PS 0.3");
    assert!(a.composes(), "{:?}", a.problems);
}

#[test]
fn hfsc_gives_the_long_term_slope_of_admitted_curves() {
    let a = under_all("h", "hfsc", &[])
        .thread(
            "a",
            "h",
            &[("r1", text("0.5")), ("x", ms(10)), ("r2", text("0.1"))],
        )
        .thread("b", "h", &[("r1", text("0")), ("r2", text("0.4"))])
        .thread(
            "c",
            "h",
            &[
                ("r1", text("0.1")),
                ("r2", text("0.1")),
                ("best_effort", hsched_core::Value::Bool(true)),
            ],
        )
        .analyse();
    assert_eq!(label(&a, "h", "a"), "PS 0.1");
    assert_eq!(label(&a, "h", "b"), "PS 0.4");
    assert_eq!(label(&a, "h", "c"), "NULL");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    // Misaligned curves whose peaks sum to 1.8 still fit (Fig. 10):
    // <0.9, 2s, 0.1> + <0.1, 2s, 0.9> is 2s at t = 2s, slope 1 after.
    let s2 = hsched_core::Value::Duration(hsched_core::Duration::from_secs(2));
    let a = under_all("h", "hfsc", &[])
        .thread(
            "x",
            "h",
            &[("r1", text("0.9")), ("x", s2.clone()), ("r2", text("0.1"))],
        )
        .thread(
            "y",
            "h",
            &[("r1", text("0.1")), ("x", s2), ("r2", text("0.9"))],
        )
        .analyse();
    assert_eq!(label(&a, "h", "x"), "PS 0.1");
    assert_eq!(label(&a, "h", "y"), "PS 0.9");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    // <0.8, 10ms, 0.1> + <0.4, 0, 0.4>: 12ms at t = 10ms: an error,
    // nothing promised.
    let a = under_all("h", "hfsc", &[])
        .thread(
            "a",
            "h",
            &[("r1", text("0.8")), ("x", ms(10)), ("r2", text("0.1"))],
        )
        .thread("b", "h", &[("r1", text("0.4")), ("r2", text("0.4"))])
        .analyse();
    assert_eq!(label(&a, "h", "a"), "NULL");
    assert!(only_error(&a).contains("exceed the CPU"));

    // Real-time curves need a whole CPU: under a reservation, NULL.
    let a = under_all("r", "res", &[])
        .sched(
            "h",
            "hfsc",
            &[],
            &[("r", &[("amount", ms(10)), ("period", ms(20))])],
        )
        .thread("a", "h", &[("r2", text("0.1"))])
        .analyse();
    assert_eq!(label(&a, "h", "a"), "NULL");
    let w = messages(&a, Severity::Warning);
    assert!(w.len() == 1 && w[0].contains("whole CPU"), "{w:?}");
}

#[test]
fn rate_based_policies_under_null_or_on_several_cpus_give_null() {
    for policy in ["frc", "rcsp", "hfsc"] {
        let a = under_null("x", policy, &[]).thread("t", "x", &[]).analyse();
        assert_eq!(label(&a, "x", "t"), "NULL", "{policy}");
        assert!(a.composes(), "{policy}: a warning only");

        let a = scenario(2)
            .sched("x", policy, &[], &[])
            .thread("t", "x", &[])
            .analyse();
        assert_eq!(label(&a, "x", "t"), "NULL", "{policy}");
        let w = messages(&a, Severity::Warning);
        assert!(w[0].contains("several CPUs"), "{policy}: {w:?}");
    }
}
