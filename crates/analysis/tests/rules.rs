//! Every conversion rule of Table 1 (HLS §5.1), built in or from the
//! literature, on small hierarchies: what each child's edge carries, and
//! which problems are errors and which warnings.

mod build_scenario;

use build_scenario::*;
use hsched_analysis::rules::{RuleBook, Severity};

/// A root `fp` with the scheduler under test at the top priority (ALL).
fn under_all(name: &str, policy: &str, own: &[(&str, hsched_core::Value)]) -> Build {
    scenario(1).sched("root", "fp", &[], &[]).sched(
        name,
        policy,
        own,
        &[("root", &[("prio", int(10))])],
    )
}

/// The scheduler under test under a round robin (NULL).
fn under_null(name: &str, policy: &str, own: &[(&str, hsched_core::Value)]) -> Build {
    scenario(1)
        .sched("ts", "rr", &[], &[])
        .sched(name, policy, own, &[("ts", &[])])
}

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

#[test]
fn res_gives_basic_hard_reservations_and_admits_up_to_the_whole_cpu() {
    let a = under_all("r", "res", &[])
        .thread("v", "r", &[("amount", ms(5)), ("period", ms(33))])
        .thread("d", "r", &[])
        .thread("u", "r", &[("rate", text("0.25"))])
        .analyse();
    assert_eq!(label(&a, "r", "v"), "RESBH 5, 33");
    assert_eq!(
        label(&a, "r", "d"),
        "RESBH 1, 10",
        "the default reservation"
    );
    assert_eq!(label(&a, "r", "u"), "RESU 0.25");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    let a = under_all("r", "res", &[])
        .thread("a", "r", &[("amount", ms(60)), ("period", ms(100))])
        .thread("b", "r", &[("amount", ms(50)), ("period", ms(100))])
        .analyse();
    let e = only_error(&a);
    assert!(
        e.contains("`r` (res): its reservations sum to 110% of the CPU")
            && e.contains("RESBH 60, 100 (`a`)")
            && e.contains("RESBH 50, 100 (`b`)"),
        "{e}"
    );
}

#[test]
fn res_on_a_slower_processor_scales_its_reservations() {
    // A `res` at rate 0.5 under a RESU 0.5: RESBH 10, 20 in its time is a
    // quarter of the CPU (§5.1).
    let a = under_all("outer", "res", &[])
        .sched(
            "inner",
            "res",
            &[("rate", text("0.5"))],
            &[("outer", &[("rate", text("0.5"))])],
        )
        .thread("t", "inner", &[("amount", ms(10)), ("period", ms(20))])
        .analyse();
    assert_eq!(label(&a, "outer", "inner"), "RESU 0.5");
    assert_eq!(label(&a, "inner", "t"), "RESBH 5, 20");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    // Claiming a faster processor than it is given is an error.
    let a = under_all("outer", "res", &[])
        .sched(
            "inner",
            "res",
            &[("rate", text("0.8"))],
            &[("outer", &[("rate", text("0.5"))])],
        )
        .thread("t", "inner", &[("amount", ms(10)), ("period", ms(20))])
        .analyse();
    let e = only_error(&a);
    assert!(e.contains("rate 0.8") && e.contains("rate 0.5"), "{e}");
}

#[test]
fn res_under_time_sharing_is_an_error_naming_the_edge() {
    let a = under_null("res", "res", &[])
        .thread("v", "res", &[("amount", ms(5)), ("period", ms(33))])
        .analyse();
    let e = only_error(&a);
    assert!(
        e.starts_with("`res` under `ts`: res needs ALL or RESU, but `ts` (rr) gives it NULL"),
        "{e}"
    );
    let p = a.errors().next().unwrap();
    assert_eq!(p.edge, Some((Some("ts".into()), "res".into())));
}

#[test]
fn res_child_parameters_are_checked() {
    let a = under_all("r", "res", &[])
        .thread(
            "both",
            "r",
            &[("amount", ms(1)), ("period", ms(2)), ("rate", text("0.1"))],
        )
        .thread("over", "r", &[("amount", ms(3)), ("period", ms(2))])
        .analyse();
    let e = messages(&a, Severity::Error);
    assert!(e[0].contains("not both"), "{e:?}");
    assert!(e[1].contains("exceeds its period"), "{e:?}");
}

#[test]
fn dbs_needs_all_for_the_reservations_its_threads_ask_for() {
    let reserving = || vec![msg("reserve", &[("amount", ms(5)), ("deadline", ms(50))])];
    let a = under_all("d", "dbs", &[])
        .thread_with("r", "d", &[], None, reserving())
        .thread("c", "d", &[])
        .analyse();
    assert_eq!(label(&a, "d", "r"), "NULL");
    assert!(edge(&a, "d", "r")
        .why
        .as_deref()
        .unwrap()
        .contains("met while dbs holds ALL"));
    assert!(a.problems.is_empty());

    let a = under_null("d", "dbs", &[])
        .thread_with("r", "d", &[], None, reserving())
        .analyse();
    let e = only_error(&a);
    assert!(
        e.contains("dbs admits reservations") && e.contains("`r`"),
        "{e}"
    );

    // Without reservations, a dbs under NULL promises nothing.
    let a = under_null("d", "dbs", &[]).thread("c", "d", &[]).analyse();
    assert!(a.problems.is_empty());
}

#[test]
fn rialto_gives_continuous_reservations_to_activities() {
    let reserve = |a, p| vec![msg("reserve", &[("amount", ms(a)), ("period", ms(p))])];
    let a = scenario(1)
        .sched("r", "rialto", &[], &[])
        .thread_with(
            "decode",
            "r",
            &[("activity", text("media"))],
            None,
            [reserve(8, 20), vec![run_ms(100)]].concat(),
        )
        .thread_with(
            "render",
            "r",
            &[("activity", text("media"))],
            None,
            vec![run_ms(100)],
        )
        .thread_with("audio", "r", &[], None, reserve(1, 5))
        .thread("make", "r", &[])
        .analyse();
    assert_eq!(label(&a, "r", "audio"), "RESCS 1, 5");
    assert_eq!(label(&a, "r", "decode"), "NULL");
    assert!(edge(&a, "r", "render")
        .why
        .as_deref()
        .unwrap()
        .contains("shares activity `media`'s RESCS 8, 20 with 1 other member(s) that use the CPU"));
    assert_eq!(label(&a, "r", "make"), "NULL");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    let a = under_null("r", "rialto", &[])
        .thread_with("audio", "r", &[], None, reserve(1, 5))
        .analyse();
    assert!(only_error(&a).contains("rialto keeps reservations"));

    let a = scenario(1)
        .sched("r", "rialto", &[], &[])
        .thread_with("a", "r", &[], None, reserve(15, 20))
        .thread_with("b", "r", &[], None, reserve(10, 20))
        .analyse();
    let w = messages(&a, Severity::Warning);
    assert!(
        w.iter().any(|w| w.contains("125%") && w.contains("refuse")),
        "{w:?}"
    );
    // The second request does not fit: its thread is labelled with the
    // refusal, not with what it asked for.
    assert_eq!(label(&a, "r", "a"), "RESCS 15, 20");
    assert_eq!(label(&a, "r", "b"), "NULL");
    assert!(edge(&a, "r", "b")
        .why
        .as_deref()
        .unwrap()
        .contains("its RESCS 10, 20 is refused"));
    assert!(a.composes(), "refused at run time, not broken");
}

/// Rialto grants what its graph can give, which may be less than asked:
/// with a 16 ms base (the first request's period), 5 ms every 20 ms is
/// placed at the next smaller power-of-two multiple of the base, 16 ms,
/// with the same percentage: 4 ms (the running policy's answer too). The
/// label says what is granted, and a thread that needs the 5 ms every 20
/// ms it asked for is refused: in some 20 ms window it gets only 4.
/// Paper §3.1's example: 6 ms every 30 ms on a 10 ms base is granted the
/// same percentage at 10 ms, RESCS 2, 10 (which gives 6 in every 30).
#[test]
fn rialto_labels_what_its_graph_grants_not_what_was_asked() {
    let reserve = |a, p| vec![msg("reserve", &[("amount", ms(a)), ("period", ms(p))])];
    let a = scenario(1)
        .sched("r", "rialto", &[], &[])
        .thread_with("b", "r", &[], None, reserve(2, 16))
        .thread_with("a", "r", &[], Some("RESCS 5ms, 20ms"), reserve(5, 20))
        .analyse();
    assert_eq!(label(&a, "r", "b"), "RESCS 2, 16");
    assert_eq!(label(&a, "r", "a"), "RESCS 4, 16");
    let e = only_error(&a);
    assert!(
        e.starts_with("thread `a` needs RESCS 5, 20, but `r` (rialto) gives it RESCS 4, 16"),
        "{e}"
    );

    let a = scenario(1)
        .sched("r", "rialto", &[], &[])
        .thread_with("A", "r", &[], Some("RESCS 6ms, 30ms"), reserve(6, 30))
        .thread_with("B", "r", &[], None, reserve(3, 10))
        .analyse();
    assert_eq!(label(&a, "r", "A"), "RESCS 2, 10");
    assert!(a.composes(), "{:?}", a.problems);
}

/// A scheduler joins a reserved activity by its attachment; a thread of
/// that activity that only asks for the reservation and leaves takes no
/// CPU, so the scheduler has all of it: RESCS, which `sfq` below takes as
/// Theorem 3's PSBE 5/20, 20 − 5 = 0.25, 15 (its children share it by
/// weight). Requests are replayed in the order threads arrive: `late`
/// (arriving at 50 ms, listed first) asks after `early`, which takes the
/// room, so `late` is the one refused.
#[test]
fn rialto_gives_a_scheduler_in_a_reserved_activity_its_reservation() {
    let reserve = |a, p| vec![msg("reserve", &[("amount", ms(a)), ("period", ms(p))])];
    let media = [("activity", text("media"))];
    let a = scenario(1)
        .sched("r", "rialto", &[], &[])
        .sched("s", "sfq", &[], &[("r", &media)])
        .thread_with("owner", "r", &media, None, reserve(5, 20))
        .thread_with("x", "s", &[], None, vec![run_ms(1000)])
        .analyse();
    assert_eq!(label(&a, "r", "s"), "RESCS 5, 20");
    assert!(edge(&a, "r", "s")
        .why
        .as_deref()
        .unwrap()
        .contains("its other members use no CPU"));
    assert_eq!(label(&a, "r", "owner"), "NULL");
    assert!(
        label(&a, "s", "x").starts_with("PSBE 0.25, "),
        "{}",
        label(&a, "s", "x")
    );
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    let mut b = scenario(1)
        .sched("r", "rialto", &[], &[])
        .thread_with("late", "r", &[], None, reserve(60, 100))
        .thread_with("early", "r", &[], None, reserve(60, 100));
    b.scn.threads[0].arrival = hsched_core::Instant::ZERO + hsched_core::Duration::from_millis(50);
    let a = b.analyse();
    assert_eq!(label(&a, "r", "early"), "RESCS 60, 100");
    assert_eq!(label(&a, "r", "late"), "NULL");
    assert!(edge(&a, "r", "late").refused);
}

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
fn rtwake_needs_all_for_exact_wakeups() {
    let a = under_all("w", "rtwake", &[])
        .thread("t", "w", &[])
        .analyse();
    assert!(a.problems.is_empty());
    assert_eq!(label(&a, "w", "t"), "NULL");
    let a = under_null("w", "rtwake", &[])
        .thread("t", "w", &[])
        .analyse();
    assert!(only_error(&a).contains("rtwake promises wake-ups at exact times"));
    let a = under_null("w", "rtwake", &[]).analyse();
    assert!(a.composes() && !a.problems.is_empty(), "a warning only");

    // Over the default scheduler (Vassal): two parents, the best counts.
    let a = scenario(1)
        .sched("root", "fp", &[], &[])
        .sched("default", "rr", &[], &[("root", &[("prio", int(0))])])
        .sched(
            "w",
            "rtwake",
            &[],
            &[("root", &[("prio", int(1))]), ("default", &[])],
        )
        .thread("t", "w", &[])
        .analyse();
    assert!(a.problems.is_empty(), "{:?}", a.problems);
}

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

/// Partitioned `rialto` (a graph per VP): requests replayed in arrival
/// order through the policy's own placement. On 2 CPUs two activities of
/// 60 ms every 100 ms each fit (0.6 per CPU; first fit: `a` on vp0, `b`
/// refused by vp0, 60 + 60 > 100, so vp1), a third of 60/100 fits neither
/// (each VP holds 60 ms of 100 ms) and is refused naming both loads. The
/// default mode, one graph, refuses `b` already. Worst fit on 4 CPUs puts
/// two 20/100 activities on vp0 and vp1 (the emptier graph after adding
/// it, ties to the lowest), first fit both on vp0 (20 + 20 ≤ 100).
#[test]
fn rialto_partitioned_places_each_activity_on_one_cpus_graph() {
    let reserve = |a, p| vec![msg("reserve", &[("amount", ms(a)), ("period", ms(p))])];
    let three = |mode: &str| {
        let mut b = scenario(2)
            .sched("r", "rialto", &[("multiprocessor", text(mode))], &[])
            .thread_with("a", "r", &[], None, reserve(60, 100))
            .thread_with("b", "r", &[], None, reserve(60, 100))
            .thread_with("c", "r", &[], None, reserve(60, 100));
        for (i, t) in b.scn.threads.iter_mut().enumerate() {
            t.arrival = hsched_core::Instant::ZERO + hsched_core::Duration::from_millis(i as u64);
        }
        b.analyse()
    };
    let a = three("partitioned");
    assert_eq!(label(&a, "r", "a"), "RESCS 60, 100");
    assert_eq!(label(&a, "r", "b"), "RESCS 60, 100");
    assert!(edge(&a, "r", "a").why.as_deref().unwrap().contains("vp0"));
    assert!(edge(&a, "r", "b").why.as_deref().unwrap().contains("vp1"));
    assert_eq!(label(&a, "r", "c"), "NULL");
    assert!(edge(&a, "r", "c").refused);
    let why = edge(&a, "r", "c").why.clone().unwrap();
    assert!(
        why.contains("vp0 (60ms of 100ms per hyperperiod (60.0%))")
            && why.contains("vp1 (60ms of 100ms per hyperperiod (60.0%))"),
        "{why}"
    );
    // 180% of 2 CPUs is not past them: no sum warning, one refusal warning.
    assert!(a.composes(), "{:?}", a.problems);

    let a = three("one");
    assert_eq!(label(&a, "r", "a"), "RESCS 60, 100");
    assert_eq!(label(&a, "r", "b"), "NULL");
    assert!(edge(&a, "r", "b").refused);

    for (fit, b_on) in [("first", "vp0"), ("worst", "vp1")] {
        let a = scenario(4)
            .sched(
                "r",
                "rialto",
                &[("multiprocessor", text("partitioned")), ("fit", text(fit))],
                &[],
            )
            .thread_with("a", "r", &[], None, reserve(20, 100))
            .thread_with("b", "r", &[], None, reserve(20, 100))
            .analyse();
        assert_eq!(label(&a, "r", "b"), "RESCS 20, 100", "{fit}");
        let why = edge(&a, "r", "b").why.clone().unwrap();
        assert!(
            why.contains(&format!("placed on {b_on}'s graph")),
            "{fit}: {why}"
        );
    }
}

/// Partitioned `rialto` keeps a schedule of a whole CPU per VP: under an
/// `fp` top priority with 2 VPs it gets ALL on each; under a round robin
/// (NULL) its reservations cannot be kept, an error naming every VP.
#[test]
fn rialto_partitioned_needs_all_on_every_vp() {
    let reserve = vec![msg("reserve", &[("amount", ms(60)), ("period", ms(100))])];
    let part = [("multiprocessor", text("partitioned"))];
    let a = scenario(2)
        .sched("root", "fp", &[], &[])
        .sched("r", "rialto", &part, &[("root", &[("prio", int(10))])])
        .vps("r", "root", 2)
        .thread_with("a", "r", &[], None, reserve.clone())
        .thread_with("b", "r", &[], None, reserve.clone())
        .analyse();
    assert_eq!(label(&a, "r", "a"), "RESCS 60, 100");
    assert_eq!(label(&a, "r", "b"), "RESCS 60, 100");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    let a = scenario(2)
        .sched("ts", "rr", &[], &[])
        .sched("r", "rialto", &part, &[("ts", &[])])
        .vps("r", "ts", 2)
        .thread_with("a", "r", &[], None, reserve)
        .analyse();
    assert!(only_error(&a).contains("needs ALL on every VP"));
}

/// `res` on several CPUs (issue 19), replayed in arrival order.
/// Partitioned first-fit on 2 CPUs with 6/10, 5/10, 4/10, 3/10, 2/10:
/// VP0 0.6 + 0.4, VP1 0.5 + 0.3 + 0.2: all admitted, each RESBH; worst-fit
/// puts 0.4 on VP1 (0.9 < 1.0) and 0.3 on VP0 (0.9), so 0.2 fits nowhere
/// (1.1 on both): refused, a warning for a thread, an error for a
/// scheduler. Global on 2 CPUs: 1/2, 1/2, 2/5 admitted (Σ 7/5 + 1/2 =
/// 19/10 <= 2), 1/5 refused (8/5 + 1/2 = 21/10 > 2).
#[test]
fn res_on_several_cpus_labels_what_its_multiprocessor_admission_lets_in() {
    let asks = [(6, 10), (5, 10), (4, 10), (3, 10), (2, 10)];
    for (fit, refused) in [("first", None), ("worst", Some("t4"))] {
        let own = [("multiprocessor", text("partitioned")), ("fit", text(fit))];
        let mut b = scenario(2).sched("r", "res", &own, &[]);
        for (i, (a, p)) in asks.iter().enumerate() {
            b = b.thread(
                &format!("t{i}"),
                "r",
                &[("amount", ms(*a)), ("period", ms(*p))],
            );
        }
        let a = b.analyse();
        for (i, (am, p)) in asks.iter().enumerate() {
            let name = format!("t{i}");
            if Some(name.as_str()) == refused {
                assert_eq!(label(&a, "r", &name), "NULL");
                assert!(edge(&a, "r", &name).refused);
                let why = edge(&a, "r", &name).why.clone().unwrap();
                assert!(
                    why.contains("VP 0 holds 90%") && why.contains("VP 1 holds 90%"),
                    "{why}"
                );
            } else {
                assert_eq!(label(&a, "r", &name), format!("RESBH {am}, {p}"), "{fit}");
                assert!(edge(&a, "r", &name)
                    .why
                    .as_deref()
                    .unwrap()
                    .contains("partitioned"));
            }
        }
        assert!(a.composes(), "{fit}: {:?}", a.problems);
        assert_eq!(
            messages(&a, Severity::Warning).len(),
            usize::from(refused.is_some())
        );
    }
    // A scheduler child refused is an error: three of 6/10 on 2 CPUs.
    let own = [
        ("multiprocessor", text("partitioned")),
        ("fit", text("worst")),
    ];
    let six = [("amount", ms(6)), ("period", ms(10))];
    let a = scenario(2)
        .sched("r", "res", &own, &[])
        .sched("s1", "rr", &[], &[("r", &six)])
        .sched("s2", "rr", &[], &[("r", &six)])
        .sched("s3", "rr", &[], &[("r", &six)])
        .analyse();
    assert_eq!(label(&a, "r", "s2"), "RESBH 6, 10");
    assert!(edge(&a, "r", "s3").refused);
    assert!(only_error(&a).contains("fits on none of the 2 VPs"));

    // Global EDF on 2 CPUs: the Goossens-Funk-Baruah bound.
    let own = [("multiprocessor", text("global"))];
    let a = scenario(2)
        .sched("r", "res", &own, &[])
        .thread("a", "r", &[("amount", ms(5)), ("period", ms(10))])
        .thread("b", "r", &[("amount", ms(5)), ("period", ms(10))])
        .thread("c", "r", &[("amount", ms(4)), ("period", ms(10))])
        .thread("d", "r", &[("amount", ms(2)), ("period", ms(10))])
        .thread("e", "r", &[("amount", ms(1)), ("period", ms(10))])
        .analyse();
    for (t, l) in [
        ("a", "RESBH 5, 10"),
        ("b", "RESBH 5, 10"),
        ("c", "RESBH 4, 10"),
        ("e", "RESBH 1, 10"),
    ] {
        assert_eq!(label(&a, "r", t), l);
        assert!(edge(&a, "r", t)
            .why
            .as_deref()
            .unwrap()
            .contains("Goossens-Funk-Baruah"));
    }
    assert!(edge(&a, "r", "d").refused);
    let why = edge(&a, "r", "d").why.clone().unwrap();
    assert!(why.contains("= 210% > 2"), "{why}");

    // "one" (the default) on 2 CPUs: one CPU's worth, as before.
    let a = scenario(2)
        .sched("r", "res", &[], &[])
        .thread("a", "r", &[("amount", ms(6)), ("period", ms(10))])
        .thread("b", "r", &[("amount", ms(6)), ("period", ms(10))])
        .analyse();
    assert!(only_error(&a).contains("past 100%"));

    // Under an `fp` top priority holding 2 VPs (ALL on each), partitioned
    // works as at the root; under a lower priority (NULL), it is an error.
    let own = [("multiprocessor", text("partitioned"))];
    let a = scenario(2)
        .sched("root", "fp", &[], &[])
        .sched("r", "res", &own, &[("root", &[("prio", int(10))])])
        .vps("r", "root", 2)
        .thread("a", "r", &[("amount", ms(6)), ("period", ms(10))])
        .thread("b", "r", &[("amount", ms(6)), ("period", ms(10))])
        .analyse();
    assert_eq!(label(&a, "r", "a"), "RESBH 6, 10");
    assert_eq!(label(&a, "r", "b"), "RESBH 6, 10");
    assert!(a.composes(), "{:?}", a.problems);

    // Bad values are errors naming the policy and the supported modes.
    let a = scenario(2)
        .sched("r", "res", &[("multiprocessor", text("many"))], &[])
        .analyse();
    assert!(only_error(&a).contains("\"one\", \"partitioned\", \"global\""));
}

/// `dbs` partitioned labels its reservations NULL with why (they are
/// one-off windows admitted at run time on the thread's VP); `global` is
/// an error naming the supported modes and the reason.
#[test]
fn dbs_on_several_cpus_is_partitioned_or_one() {
    let reserve = vec![msg("reserve", &[("amount", ms(5)), ("deadline", ms(10))])];
    let a = scenario(2)
        .sched("d", "dbs", &[("multiprocessor", text("partitioned"))], &[])
        .thread_with("t", "d", &[], None, reserve.clone())
        .analyse();
    assert_eq!(label(&a, "d", "t"), "NULL");
    assert!(edge(&a, "d", "t")
        .why
        .as_deref()
        .unwrap()
        .contains("on every VP"));
    assert!(a.composes());
    let a = scenario(2)
        .sched("d", "dbs", &[("multiprocessor", text("global"))], &[])
        .thread_with("t", "d", &[], None, reserve)
        .analyse();
    let e = only_error(&a);
    assert!(
        e.contains("one-off") && e.contains("\"one\", \"partitioned\""),
        "{e}"
    );
}

// ----- hfsc on several CPUs ---------------------------------------------------

/// A root partitioned `hfsc` named `h` on `cpus` CPUs, with `fit`.
fn hfsc_partitioned(cpus: u32, fit: &str) -> Build {
    scenario(cpus).sched(
        "h",
        "hfsc",
        &[("multiprocessor", text("partitioned")), ("fit", text(fit))],
        &[],
    )
}

/// A CPU-bound thread under `h` with the linear curve of slope `r`.
fn linear(b: Build, name: &str, r: &str) -> Build {
    b.thread_with(
        name,
        "h",
        &[("r1", text(r)), ("r2", text(r))],
        None,
        vec![run_ms(1000)],
    )
}

#[test]
fn partitioned_hfsc_labels_each_placed_curve_and_refuses_what_fits_no_vp() {
    // 2 CPUs, three <0.6, 0, 0.6>: one per VP, the third refused.
    let mut b = hfsc_partitioned(2, "first");
    for n in ["a", "b", "c"] {
        b = linear(b, n, "0.6");
    }
    let a = b.analyse();
    assert_eq!(a.edge(None, "h").unwrap().vps, 2);
    assert_eq!(label(&a, "h", "a"), "PS 0.6");
    assert_eq!(label(&a, "h", "b"), "PS 0.6");
    let why = |n: &str| edge(&a, "h", n).why.clone().unwrap();
    assert!(
        why("a").contains("vp0 of 2") && why("a").contains("first fit"),
        "{}",
        why("a")
    );
    assert!(why("b").contains("vp1 of 2"), "{}", why("b"));
    assert_eq!(label(&a, "h", "c"), "NULL");
    assert!(edge(&a, "h", "c").refused);
    // A refused thread runs elsewhere: a warning naming each VP's load.
    let w = messages(&a, Severity::Warning);
    assert!(
        w.len() == 1
            && w[0].contains("thread `c`")
            && w[0].contains("vp0 (Σ r2 = 0.6)")
            && w[0].contains("vp1 (Σ r2 = 0.6)"),
        "{w:?}"
    );
    assert!(a.composes());

    // The default mode on the same 2 CPUs claims nothing.
    let mut b = scenario(2).sched("h", "hfsc", &[], &[]);
    for n in ["a", "b"] {
        b = linear(b, n, "0.4");
    }
    let a = b.analyse();
    assert_eq!(label(&a, "h", "a"), "NULL");
    assert!(messages(&a, Severity::Warning)[0].contains("several CPUs"));

    // 4 CPUs: four 0.7 and four 0.3 fill them (Σ r2 = 1 on each), a 0.05
    // fits nowhere.
    let mut b = hfsc_partitioned(4, "first");
    for i in 0..4 {
        b = linear(b, &format!("big{i}"), "0.7");
    }
    for i in 0..4 {
        b = linear(b, &format!("small{i}"), "0.3");
    }
    let a = linear(b, "late", "0.05").analyse();
    for i in 0..4 {
        assert_eq!(label(&a, "h", &format!("big{i}")), "PS 0.7");
        assert_eq!(label(&a, "h", &format!("small{i}")), "PS 0.3");
        let why = edge(&a, "h", &format!("small{i}")).why.clone().unwrap();
        assert!(
            why.contains(&format!("vp{i} of 4")) && why.contains("Σ r2 there 1"),
            "{why}"
        );
    }
    assert!(edge(&a, "h", "late").refused);
}

#[test]
fn partitioned_hfsc_replays_first_and_worst_fit_as_the_policy_places() {
    // Three 0.3: first fit all on vp0; worst fit vp0, vp1, vp0.
    let place = |fit: &str| {
        let mut b = hfsc_partitioned(2, fit);
        for n in ["x", "y", "z"] {
            b = linear(b, n, "0.3");
        }
        let a = b.analyse();
        ["x", "y", "z"]
            .iter()
            .map(|n| {
                assert_eq!(label(&a, "h", n), "PS 0.3");
                let why = edge(&a, "h", n).why.clone().unwrap();
                why.split("on vp").nth(1).unwrap()[..1].to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(place("first"), ["0", "0", "0"]);
    assert_eq!(place("worst"), ["0", "1", "0"]);
}

#[test]
fn partitioned_hfsc_needs_all_on_each_vp_and_refusing_a_scheduler_is_an_error() {
    // Under fp at the top priority with 2 VPs on 2 CPUs: ALL on each.
    let b = scenario(2)
        .sched("root", "fp", &[], &[])
        .sched(
            "h",
            "hfsc",
            &[("multiprocessor", text("partitioned"))],
            &[("root", &[("prio", int(10))])],
        )
        .vps("h", "root", 2);
    let a = linear(linear(b, "a", "0.9"), "b", "0.9").analyse();
    assert_eq!(label(&a, "h", "a"), "PS 0.9");
    assert_eq!(label(&a, "h", "b"), "PS 0.9");
    assert!(a.problems.is_empty(), "{:?}", a.problems);

    // Under round robin (NULL): nothing, a warning.
    let b = scenario(2)
        .sched("ts", "rr", &[], &[])
        .sched(
            "h",
            "hfsc",
            &[("multiprocessor", text("partitioned"))],
            &[("ts", &[])],
        )
        .vps("h", "ts", 2);
    let a = linear(b, "a", "0.5").analyse();
    assert_eq!(label(&a, "h", "a"), "NULL");
    assert!(a.composes());

    // A child scheduler no VP admits cannot attach: an error. Schedulers
    // attach before threads arrive, in child order: s0 vp0, s1 vp1, s2
    // refused (0.8 + 0.8 > 1 on both).
    let mut b = hfsc_partitioned(2, "first");
    for i in 0..3 {
        let s = format!("s{i}");
        b = b
            .sched(
                &s,
                "rr",
                &[],
                &[("h", &[("r1", text("0.8")), ("r2", text("0.8"))])],
            )
            .thread(&format!("t{i}"), &s, &[]);
    }
    let a = b.analyse();
    assert_eq!(label(&a, "h", "s0"), "PS 0.8");
    assert_eq!(label(&a, "h", "s1"), "PS 0.8");
    let e = only_error(&a);
    assert!(
        e.contains("scheduler `s2`") && e.contains("no VP admits"),
        "{e}"
    );
    assert!(edge(&a, "h", "s2").refused);
}

#[test]
fn partitioned_hfsc_promises_a_placement_only_if_departures_cannot_change_it() {
    // 2 CPUs. x, y (0.6) at 0; z (0.3) at 5 ms; w (0.4) at 10 ms. Replay:
    // x vp0, y vp1, z vp0 (0.9), w vp1 (1.0). x or y may have left before
    // z and w join (they joined earlier), so placement may differ: z is
    // promised since it fits whatever left (2 x 0.3 + 1.2 = 1.8 <= 2: some
    // VP's peak load is at most 0.6), w is not (2 x 0.4 + 1.5 = 2.3 > 2).
    let mut b = hfsc_partitioned(2, "first");
    for (n, r) in [("x", "0.6"), ("y", "0.6"), ("z", "0.3"), ("w", "0.4")] {
        b = linear(b, n, r);
    }
    b.scn.threads[2].arrival = hsched_core::Instant::ZERO + hsched_core::Duration::from_millis(5);
    b.scn.threads[3].arrival = hsched_core::Instant::ZERO + hsched_core::Duration::from_millis(10);
    let a = b.analyse();
    assert_eq!(label(&a, "h", "x"), "PS 0.6");
    assert_eq!(label(&a, "h", "y"), "PS 0.6");
    assert_eq!(label(&a, "h", "z"), "PS 0.3");
    assert_eq!(label(&a, "h", "w"), "NULL");
    let why = edge(&a, "h", "w").why.clone().unwrap();
    assert!(why.contains("only if no earlier child left"), "{why}");
    assert!(!edge(&a, "h", "w").refused);
    // All joining at once: the replay is what the policy sees, w promised.
    b.scn.threads[2].arrival = hsched_core::Instant::ZERO;
    b.scn.threads[3].arrival = hsched_core::Instant::ZERO;
    assert_eq!(label(&b.analyse(), "h", "w"), "PS 0.4");
}

#[test]
fn hfsc_refuses_a_global_mode_and_bad_fit_values() {
    for (own, needle) in [
        (vec![("multiprocessor", text("global"))], "no published"),
        (vec![("multiprocessor", text("spread"))], "\"partitioned\""),
        (
            vec![
                ("multiprocessor", text("partitioned")),
                ("fit", text("best")),
            ],
            "\"worst\"",
        ),
        (vec![("fit", text("worst"))], "needs `multiprocessor`"),
    ] {
        let a = scenario(2)
            .sched("h", "hfsc", &own, &[])
            .thread("t", "h", &[])
            .analyse();
        let e = only_error(&a);
        assert!(e.contains(needle), "{e}");
    }
}
