//! The top-down analysis (HLS §3.3): the paper's Fig. 3 labelled edge by
//! edge, what threads need, hierarchies that do not compose, malformed
//! hierarchies built in code, and random hierarchies of every policy.

mod build_scenario;

use build_scenario::*;
use hsched_analysis::compose::{analyse, bench_hierarchy, Analysis, Received};
use hsched_analysis::draw;
use hsched_analysis::rules::{RuleBook, Severity};
use hsched_core::Value;
use proptest::prelude::*;

/// Fig. 1 of the paper, as `scenarios/papers/hls-fig3.toml` writes it.
fn fig1() -> Build {
    scenario(1)
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
        .sched("ps", "sfq", &[("quantum", ms(10))], &[("j", &[])])
        .thread_with(
            "video",
            "res",
            &[("amount", ms(5)), ("period", ms(33))],
            Some("RESBH 5, 33"),
            vec![],
        )
        .thread("word", "ps", &[("weight", int(1))])
        .thread("voice", "ps", &[("weight", int(4))])
}

#[test]
fn figure_3_every_edge_as_the_paper_labels_it() {
    let a = fig1().analyse();
    assert_eq!(a.edge(None, "fp").unwrap().guarantee.to_string(), "ALL");
    for (from, to, want) in [
        ("fp", "res", "ALL"),
        ("fp", "j", "NULL"),
        ("res", "video", "RESBH 5, 33"),
        ("res", "j", "RESBH 40, 80"),
        ("j", "ps", "RESBS 40, 80"),
        ("ps", "word", "PSBE 0.1, 22"),
        ("ps", "voice", "PSBE 0.4, 58"),
    ] {
        assert_eq!(label(&a, from, to), want, "{from} -> {to}");
    }
    // PS is not directly compatible with a reservation: Theorem 4.
    let ps = edge(&a, "j", "ps").taken_as.as_ref().unwrap();
    assert_eq!(ps.result.to_string(), "PSBE 0.5, 40");
    assert_eq!(draw::steps_text(ps), "RESBS 40, 80 -> PSBE 0.5, 40 (Th. 4)");
    // Exact values, not just their printing.
    let hsched_analysis::guarantee::Guarantee::Psbe { share, delta } =
        edge(&a, "ps", "voice").guarantee
    else {
        panic!("voice is not PSBE");
    };
    assert_eq!((share.num(), share.den()), (2, 5));
    assert_eq!(delta, hsched_core::Duration::from_millis(58));
    assert!(a.composes() && a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(a.verdict(), "the hierarchy composes");
    let text = draw::text(&fig1().scn, &a);
    assert!(text.contains("needs RESBH 5, 33: met"), "{text}");
}

#[test]
fn a_threads_needs_are_met_through_rewrites_or_reported() {
    let a = fig1()
        .thread_with("w2", "ps", &[], Some("PS 0.05"), vec![])
        .analyse();
    let d = edge(&a, "ps", "w2").taken_as.as_ref().unwrap();
    assert_eq!(d.result.to_string(), "PS 0.05");
    assert!(a.composes());

    let a = fig1()
        .thread_with("greedy", "ps", &[], Some("RESBS 10, 33"), vec![])
        .analyse();
    let e = only_error(&a);
    assert!(
        e.starts_with("thread `greedy` needs RESBS 10, 33, but `ps` (sfq) gives it PSBE"),
        "{e}"
    );
    let p = a.errors().next().unwrap();
    assert_eq!(p.edge, Some((Some("ps".into()), "greedy".into())));
    assert!(a
        .verdict()
        .starts_with("the hierarchy does not compose:\n  error: thread `greedy`"));

    // Needs that are not a guarantee (a scenario built in code).
    let a = fig1()
        .thread_with("odd", "ps", &[], Some("RESBH 5"), vec![])
        .analyse();
    assert!(only_error(&a).contains("`needs` = \"RESBH 5\""));
}

/// A join of a reservation (from `res`) and a slower processor (from a
/// BSS-I), over a thread that needs `needs`: neither parent's guarantee
/// implies the other's.
fn reservation_or_slower_processor(needs: Option<&str>) -> Analysis {
    scenario(1)
        .sched("res", "res", &[], &[])
        .sched("b", "bss-i", &[], &[("res", &[("rate", text("0.5"))])])
        .sched(
            "j",
            "join",
            &[],
            &[
                ("res", &[("amount", ms(10)), ("period", ms(20))]),
                ("b", &[("guarantee", text("RESU 0.5"))]),
            ],
        )
        .thread_with("t", "j", &[], needs, vec![])
        .analyse()
}

#[test]
fn the_join_picks_what_its_thread_needs() {
    // A join of a reservation (from `res`) and a slower processor (from a
    // BSS-I): neither implies the other.
    let join = reservation_or_slower_processor;
    let a = join(None);
    assert_eq!(
        label(&a, "b", "j"),
        "RESU 0.25",
        "in the USP's time: 0.5 of 0.5"
    );
    assert_eq!(label(&a, "j", "t"), "RESBS 10, 20", "by rank");
    assert!(a.composes(), "{}", a.verdict());
    let a = join(Some("RESU 0.2"));
    assert_eq!(label(&a, "j", "t"), "RESU 0.25", "what the thread needs");
    assert!(a.composes(), "{}", a.verdict());
}

#[test]
fn malformed_hierarchies_are_reported_not_panicked_on() {
    // A missing parent, a thread of a missing scheduler, a cycle.
    let mut b = scenario(1)
        .sched("root", "fp", &[], &[])
        .sched("a", "rr", &[], &[("nowhere", &[])])
        .thread("t", "ghost", &[]);
    let a = b.analyse();
    let e = messages(&a, Severity::Error);
    assert!(
        e.iter().any(|m| m.contains("`nowhere` does not exist")),
        "{e:?}"
    );
    assert!(
        e.iter().any(|m| m.contains("`ghost` does not exist")),
        "{e:?}"
    );

    b = scenario(1)
        .sched("root", "fp", &[], &[])
        .sched("x", "join", &[], &[("root", &[]), ("y", &[])])
        .sched("y", "join", &[], &[("x", &[])]);
    let a = b.analyse();
    assert!(messages(&a, Severity::Error)[0].contains("cycle"));

    // Parameters of the wrong type.
    let a = scenario(1)
        .sched("root", "fp", &[], &[])
        .thread("t", "root", &[("prio", Value::Str("high".into()))])
        .sched(
            "ps",
            "sfq",
            &[("quantum", Value::Bool(true))],
            &[("root", &[("prio", int(1))])],
        )
        .thread("u", "ps", &[])
        .analyse();
    let e = messages(&a, Severity::Error);
    assert!(e.iter().any(|m| m.contains("`prio`")), "{e:?}");
    assert!(e.iter().any(|m| m.contains("`quantum`")), "{e:?}");
}

#[test]
fn the_analysis_and_its_drawings_are_deterministic() {
    let scn = fig1().scn;
    let book = RuleBook::standard();
    let (a, b) = (analyse(&scn, &book), analyse(&scn, &book));
    assert_eq!(a, b);
    assert_eq!(draw::text(&scn, &a), draw::text(&scn, &b));
    assert_eq!(draw::dot(&scn, &a), draw::dot(&scn, &b));
    assert_eq!(draw::json(&a), draw::json(&b));
    assert_eq!(draw::svg(&scn, &a), draw::svg(&scn, &b));
    let svg = draw::svg(&scn, &a);
    assert!(svg.contains("<svg") && svg.contains("RESBH 5, 33"), "{svg}");
    let dot = draw::dot(&scn, &a);
    assert!(
        dot.contains("\"s:res\" -> \"t:video\" [label=\"RESBH 5, 33\"];"),
        "{dot}"
    );
}

#[test]
fn the_bench_hierarchy_composes_and_labels_every_edge() {
    let scn = bench_hierarchy(10_000);
    let size = scn.schedulers.len() + scn.threads.len();
    assert_eq!(size, 10_000);
    let a = analyse(&scn, &RuleBook::standard());
    assert!(a.composes(), "{}", a.verdict());
    let links: usize = scn.schedulers.iter().map(|s| s.parents.len()).sum();
    assert_eq!(a.edges.len(), 1 + links + scn.threads.len());
}

// ---------------------------------------------------------------------------
// Random hierarchies
// ---------------------------------------------------------------------------

const POLICIES: &[&str] = &[
    "fifo",
    "rr",
    "ts",
    "fp",
    "join",
    "limit",
    "sfq",
    "bvt",
    "res",
    "dbs",
    "rialto",
    "rtwake",
    "cbs",
    "bss-i",
    "eevdf",
    "lottery",
    "linux",
    "resource-kernel",
    "tbs",
    "mystery",
];

const GUARANTEES: &[&str] = &[
    "ALL",
    "NULL",
    "RESBH 5, 33",
    "RESBS 40, 80",
    "RESCS 1, 5",
    "RESU 0.5",
    "PSBE 0.1, 22",
    "PS 0.25",
    "RESBH 90, 100",
    "bogus",
];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-5i64..20).prop_map(Value::Int),
        (0u64..120).prop_map(ms),
        prop::sample::select(vec!["0.5", "1", "1/3", "2", "x", ""]).prop_map(text),
        prop::sample::select(GUARANTEES.to_vec()).prop_map(text),
        any::<bool>().prop_map(Value::Bool),
    ]
}

fn attach() -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![
                "prio",
                "weight",
                "amount",
                "period",
                "rate",
                "guarantee",
                "advance",
                "warp",
                "activity",
            ]),
            value(),
        ),
        0..4,
    )
    .prop_map(|v| v.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Attachment parameters as generated.
type Attach = Vec<(String, Value)>;

#[derive(Debug, Clone)]
struct RandomSched {
    policy: &'static str,
    own: Vec<(String, Value)>,
    /// Indices of earlier schedulers (a DAG by construction).
    parents: Vec<(usize, Attach, u32)>,
}

#[derive(Debug, Clone)]
struct RandomThread {
    parent: usize,
    at: Attach,
    needs: Option<&'static str>,
    reserve: Option<(u64, u64)>,
}

fn hierarchy() -> impl Strategy<Value = (u32, Vec<RandomSched>, Vec<RandomThread>)> {
    let sched = (
        prop::sample::select(POLICIES.to_vec()),
        prop::collection::vec(
            (
                prop::sample::select(vec!["quantum", "budget", "period", "rate", "mcu"]),
                value(),
            ),
            0..3,
        ),
        prop::collection::vec((any::<prop::sample::Index>(), attach(), 1u32..3), 1..3),
    );
    (
        1u32..4,
        prop::collection::vec(sched, 1..14),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                attach(),
                prop::option::of(prop::sample::select(GUARANTEES.to_vec())),
                prop::option::of((1u64..50, 1u64..60)),
            ),
            0..20,
        ),
    )
        .prop_map(|(cpus, scheds, threads)| {
            let scheds: Vec<RandomSched> = scheds
                .into_iter()
                .enumerate()
                .map(|(i, (policy, own, parents))| RandomSched {
                    policy,
                    own: own.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                    parents: if i == 0 {
                        vec![]
                    } else {
                        let mut seen = Vec::new();
                        parents
                            .into_iter()
                            .take(if policy == "join" { 3 } else { 1 })
                            .map(|(ix, at, vps)| (ix.index(i), at, vps))
                            .filter(|(p, _, _)| {
                                let fresh = !seen.contains(p);
                                seen.push(*p);
                                fresh
                            })
                            .collect()
                    },
                })
                .collect();
            let n = scheds.len();
            let threads = threads
                .into_iter()
                .map(|(ix, at, needs, reserve)| RandomThread {
                    parent: ix.index(n),
                    at,
                    needs,
                    reserve,
                })
                .collect();
            (cpus, scheds, threads)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the hierarchy, the analysis does not panic, labels every
    /// edge (one per link and thread, plus the machine's), names the node
    /// of every problem, and says the same thing twice.
    #[test]
    fn random_hierarchies_get_every_edge_labelled_or_a_named_problem(
        (cpus, scheds, threads) in hierarchy()
    ) {
        let mut b = scenario(cpus);
        for (i, s) in scheds.iter().enumerate() {
            let own: Vec<(&str, Value)> = s.own.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            let parents: Vec<(String, Vec<(&str, Value)>)> = s
                .parents
                .iter()
                .map(|(p, at, _)| {
                    (format!("s{p}"), at.iter().map(|(k, v)| (k.as_str(), v.clone())).collect())
                })
                .collect();
            let refs: Vec<(&str, &[(&str, Value)])> =
                parents.iter().map(|(p, at)| (p.as_str(), at.as_slice())).collect();
            b = b.sched(&format!("s{i}"), s.policy, &own, &refs);
            for (p, _, vps) in &s.parents {
                b = b.vps(&format!("s{i}"), &format!("s{p}"), (*vps).min(cpus));
            }
        }
        for (t, th) in threads.iter().enumerate() {
            let at: Vec<(&str, Value)> = th.at.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            let ops = th
                .reserve
                .map(|(a, p)| vec![msg("reserve", &[("amount", ms(a)), ("period", ms(p))])])
                .unwrap_or_default();
            b = b.thread_with(&format!("t{t}"), &format!("s{}", th.parent), &at, th.needs, ops);
        }
        let a = b.analyse();
        let links: usize = b.scn.schedulers.iter().map(|s| s.parents.len()).sum();
        prop_assert_eq!(a.edges.len(), 1 + links + b.scn.threads.len());
        for s in &b.scn.schedulers {
            for l in &s.parents {
                prop_assert!(a.edge(Some(&l.parent), &s.name).is_some());
            }
        }
        for t in &b.scn.threads {
            prop_assert!(a.edge(Some(&t.parent), &t.name).is_some());
        }
        for p in &a.problems {
            prop_assert!(!p.message.is_empty());
            prop_assert!(
                b.scn.schedulers.iter().any(|s| s.name == p.node)
                    || b.scn.threads.iter().any(|t| t.name == p.node),
                "problem about an unknown node: {:?}", p
            );
        }
        prop_assert_eq!(&a, &b.analyse());
        let _ = (draw::text(&b.scn, &a), draw::dot(&b.scn, &a), draw::json(&a));
    }
}

#[test]
fn what_each_node_and_thread_receives() {
    use hsched_core::Share;
    let a = fig1().analyse();
    let got = |name: &str| {
        a.received(name)
            .unwrap_or_else(|| panic!("nothing reaches {name}"))
    };
    for (name, want) in [
        ("fp", "ALL"),
        ("res", "ALL"),
        // A join: its parents give RESBH 40, 80 and NULL; it receives, in
        // effect, what it passes on: the reservation made soft.
        ("j", "RESBS 40, 80"),
        ("ps", "RESBS 40, 80"),
        ("video", "RESBH 5, 33"),
        ("word", "PSBE 0.1, 22"),
        ("voice", "PSBE 0.4, 58"),
    ] {
        assert_eq!(got(name).to_string(), want, "{name}");
        assert_eq!(got(name).vps, 1, "{name}");
    }
    assert_eq!(got("video").share(), Share::new(5, 33));
    assert_eq!(got("voice").share(), Share::new(2, 5));
    assert_eq!(got("fp").share(), Some(Share::ONE));
    assert_eq!(a.received("nobody"), None);
    let all = a.received_all();
    assert_eq!(all.schedulers.len(), 4);
    assert_eq!(all.threads.len(), 3);

    // A join passes on what its thread needs, not the best by rank: that
    // is what it receives in effect.
    let join = reservation_or_slower_processor;
    assert_eq!(
        join(None).received("j").unwrap().guarantee,
        g("RESBS 10, 20")
    );
    let picked = join(Some("RESU 0.2")).received("j").unwrap();
    assert_eq!(picked.guarantee, g("RESU 0.25"));
    assert_eq!(picked.share(), Share::new(1, 4));

    // Two CPUs: the root holds two VPs, each given ALL.
    let a = scenario(2)
        .sched("root", "fp", &[], &[])
        .thread("t", "root", &[])
        .analyse();
    let root = a.received("root").unwrap();
    assert_eq!(
        (root.to_string(), root.share()),
        ("ALL ×2".to_string(), Share::new(2, 1))
    );

    // Not a join, two parents: the best of them made soft, on one VP. A
    // join with no child receives the same. A thread may be named like a
    // scheduler; each keeps its own.
    let a = scenario(1)
        .sched("root", "fp", &[], &[])
        .sched("res", "res", &[], &[("root", &[("prio", int(1))])])
        .sched(
            "x",
            "rr",
            &[],
            &[
                ("res", &[("amount", ms(10)), ("period", ms(20))]),
                ("root", &[("prio", int(0))]),
            ],
        )
        .sched(
            "lonely",
            "join",
            &[],
            &[
                ("res", &[("amount", ms(2)), ("period", ms(20))]),
                ("root", &[("prio", int(0))]),
            ],
        )
        .thread("x", "root", &[])
        .analyse();
    let all = a.received_all();
    assert_eq!(all.schedulers["x"].guarantee, g("RESBS 10, 20"));
    assert_eq!(all.schedulers["x"].vps, 1);
    assert_eq!(all.schedulers["lonely"].guarantee, g("RESBS 2, 20"));
    assert_eq!(
        all.threads["x"],
        a.edge(Some("root"), "x")
            .map(|e| Received {
                guarantee: e.guarantee,
                vps: 1,
                refused: false,
            })
            .unwrap()
    );
    assert_eq!(a.received("x"), Some(all.schedulers["x"]));
    assert_eq!(all.schedulers["root"].share(), Some(Share::ONE));
    assert_eq!(all.schedulers["res"].share(), Some(Share::ONE));
}
