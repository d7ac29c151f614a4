//! The rules' multiprocessor modes: partitioned `rialto`, `res` partitioned
//! and global, `dbs` and partitioned `hfsc`, each replaying admission in
//! arrival order through the policy's own placement.

mod build_scenario;

use build_scenario::*;
use hsched_analysis::rules::Severity;

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
