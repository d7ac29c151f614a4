//! Soundness of the guarantee analysis, hunted over random hierarchies:
//! every label `hsched check` gives is kept by the simulated schedule.
//!
//! A case is a random tree of schedulers over every built-in policy whose
//! rule can promise something to CPU-bound children (fp, rr, sfq, bvt,
//! res, rialto, frc, rcsp, limit; res and rialto in each of their
//! multiprocessor modes), with random parameters, attachment
//! parameters and reservation requests, CPU-bound threads (which always
//! want a CPU, so what they receive is what was promised) beside bursty
//! ones (which come at 0, 50 or 100 ms, run and sleep at random, and are
//! not checked), on 1 to 3
//! CPUs. A case whose hierarchy does not compose (an error) is skipped: its
//! labels promise nothing. Otherwise it is simulated with every policy's
//! invariants checked after every event, and every label on an edge into a
//! CPU-bound thread, or into a one-VP scheduler with one below it, is
//! checked over every window of the run (`schedule_check`, exact):
//!
//! - ALL: the whole CPU, every nanosecond;
//! - PSBE s, δ: at least s·(b − a) − δ over every interval [a, b);
//! - RESCS/RESCH x, y: at least x in every window of length y;
//! - RESBS/RESBH x, y: at least x in every window of length 2y − x (what
//!   "x in every period of some grid" implies, the grid being unknown).
//!
//! PS and RESU labels carry no bound a finite schedule can break, and NULL
//! none at all. Reservations asked by message count from the moment the
//! last one is answered (a reservation exists from its grant).
//!
//! A failing case is shrunk by proptest to a smallest hierarchy that still
//! breaks a label, and printed with the label, the window and the run.

use hsched_analysis::compose::analyse;
use hsched_analysis::guarantee::{Guarantee, Shape};
use hsched_analysis::rules::RuleBook;
use hsched_analysis::schedule_check::Schedule;
use hsched_core::{Duration, Instant, Msg, Params, Share, Value};
use hsched_model::{
    Dist, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec,
    SegmentKind, Target, ThreadSpec,
};
use hsched_sim::{run, SimOptions};
use proptest::prelude::*;
use std::collections::BTreeMap;

const HORIZON_MS: u64 = 600;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The policies generated, and what their rules can promise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    Fp,
    Rr,
    Sfq,
    Bvt,
    Res,
    Rialto,
    Frc,
    Rcsp,
    Limit,
}

const POLICIES: [Policy; 9] = [
    Policy::Fp,
    Policy::Rr,
    Policy::Sfq,
    Policy::Bvt,
    Policy::Res,
    Policy::Rialto,
    Policy::Frc,
    Policy::Rcsp,
    Policy::Limit,
];

/// A generated scheduler: its policy, knobs its parameters are read from,
/// and its children.
#[derive(Clone, Debug)]
struct Tree {
    policy: Policy,
    knobs: [u8; 3],
    kids: Vec<Kid>,
}

/// A child with the knobs its attachment parameters are read from.
#[derive(Clone, Debug)]
struct Kid {
    knobs: [u8; 3],
    what: What,
}

#[derive(Clone, Debug)]
enum What {
    /// Always wants a CPU: checked.
    Busy,
    /// Runs 1 to 1 + a ms, sleeps 1 to 1 + b ms, for ever: not checked.
    Bursty(u8, u8),
    Sched(Tree),
}

/// Rialto's labels depend on its graph's scaling, which only shows when
/// several reservations of unrelated periods compete on one CPU: it is
/// drawn three times as often.
fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        9 => prop::sample::select(&POLICIES[..]),
        2 => Just(Policy::Rialto),
    ]
}

fn knobs() -> impl Strategy<Value = [u8; 3]> {
    any::<[u8; 3]>()
}

fn thread() -> impl Strategy<Value = What> {
    prop_oneof![
        3 => Just(What::Busy),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| What::Bursty(a, b)),
    ]
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = (
        policy(),
        knobs(),
        prop::collection::vec((knobs(), thread()), 1..6),
    )
        .prop_map(|(policy, knobs, kids)| Tree {
            policy,
            knobs,
            kids: kids
                .into_iter()
                .map(|(knobs, what)| Kid { knobs, what })
                .collect(),
        });
    leaf.prop_recursive(2, 12, 4, |inner| {
        (
            policy(),
            knobs(),
            prop::collection::vec(
                (
                    knobs(),
                    prop_oneof![2 => thread(), 1 => inner.prop_map(What::Sched)],
                ),
                1..5,
            ),
        )
            .prop_map(|(policy, knobs, kids)| Tree {
                policy,
                knobs,
                kids: kids
                    .into_iter()
                    .map(|(knobs, what)| Kid { knobs, what })
                    .collect(),
            })
    })
}

/// Builds the scenario: names `s0`, `s1`... for schedulers, `t0`... for
/// threads (`own.sN` for the thread that reserves for scheduler `sN`'s
/// activity under `rialto`). Returns it with the names of the CPU-bound
/// threads.
struct Builder {
    scn: Scenario,
    busy: Vec<String>,
}

impl Builder {
    fn new(cpus: u32) -> Builder {
        Builder {
            scn: Scenario {
                name: "soundness".into(),
                description: String::new(),
                machine: Machine {
                    cpus,
                    context_switch: Duration::ZERO,
                    tick: None,
                    watchdog: None,
                },
                horizon: ms(HORIZON_MS),
                seed: 1,
                schedulers: Vec::new(),
                default_scheduler: String::new(),
                threads: Vec::new(),
                script: Vec::new(),
            },
            busy: Vec::new(),
        }
    }

    /// Adds `tree` under `parent` (with `link` parameters); returns its name.
    fn add(&mut self, tree: &Tree, parent: Option<(&str, Params)>, vps: u32) -> String {
        let name = format!("s{}", self.scn.schedulers.len());
        let k = tree.knobs;
        let params = match tree.policy {
            Policy::Rr | Policy::Sfq => {
                Params::new().with("quantum", Value::Duration(ms(1 + u64::from(k[0]) % 10)))
            }
            Policy::Fp => match k[0] % 2 {
                0 => Params::new(),
                _ => Params::new().with("quantum", Value::Duration(ms(1 + u64::from(k[1]) % 10))),
            },
            Policy::Bvt => Params::new().with("mcu", Value::Duration(ms(1 + u64::from(k[0]) % 5))),
            Policy::Frc | Policy::Rcsp => {
                let p = Params::new().with("min_quantum", Value::Duration(ms(1)));
                match k[0] % 3 {
                    0 => p,
                    1 => p.with("classes", Value::Str("GR:0.5:0, FR:0.5:inf".into())),
                    _ => p.with("classes", Value::Str("GR:0.6:0.5".into())),
                }
            }
            Policy::Limit => {
                let period = 10 * (1 + u64::from(k[0]) % 4);
                let budget = 1 + u64::from(k[1]) % period;
                Params::new()
                    .with("budget", Value::Duration(ms(budget)))
                    .with("period", Value::Duration(ms(period)))
            }
            // On several VPs, each multiprocessor mode with its admission
            // test: one CPU's worth, partitioned (first or worst fit), or
            // global EDF (res).
            Policy::Res | Policy::Rialto => {
                let modes: &[&str] = match tree.policy {
                    Policy::Res => &["one", "partitioned", "global"],
                    _ => &["one", "partitioned"],
                };
                let mode = modes[usize::from(k[0]) % modes.len()];
                let p = Params::new().with("multiprocessor", Value::Str(mode.into()));
                match mode {
                    "partitioned" => p.with(
                        "fit",
                        Value::Str(["first", "worst"][usize::from(k[1]) % 2].into()),
                    ),
                    _ => p,
                }
            }
        };
        let parents = match parent {
            Some((p, at)) => vec![ParentLink {
                parent: p.to_string(),
                vps,
                params: at,
            }],
            None => Vec::new(),
        };
        self.scn.schedulers.push(SchedulerSpec {
            name: name.clone(),
            policy: policy_name(tree.policy).into(),
            params,
            parents,
        });
        // `limit` takes one child.
        let kids = match tree.policy {
            Policy::Limit => &tree.kids[..1],
            _ => &tree.kids[..],
        };
        for kid in kids {
            let (at, reserve) = attachment(tree.policy, kid.knobs);
            match &kid.what {
                What::Sched(sub) => {
                    let child = format!("s{}", self.scn.schedulers.len());
                    let at = match (tree.policy, reserve) {
                        // A scheduler reserves under rialto through a thread
                        // of its activity that asks and leaves.
                        (Policy::Rialto, Some(msg)) => {
                            let act = format!("act.{child}");
                            self.scn.threads.push(ThreadSpec {
                                name: format!("own.{child}"),
                                parent: name.clone(),
                                params: Params::new().with("activity", Value::Str(act.clone())),
                                arrival: Instant::ZERO,
                                program: Program::new(vec![Op::Msg {
                                    to: Target::Parent,
                                    msg,
                                }]),
                                needs: None,
                            });
                            at.with("activity", Value::Str(act))
                        }
                        _ => at,
                    };
                    self.add(sub, Some((&name, at)), 1);
                }
                What::Busy | What::Bursty(..) => {
                    let t = format!("t{}", self.scn.threads.len());
                    let mut ops: Vec<Op> = reserve
                        .into_iter()
                        .map(|msg| Op::Msg {
                            to: Target::Parent,
                            msg,
                        })
                        .collect();
                    match kid.what {
                        What::Busy => {
                            ops.push(Op::Run(Dist::Fixed(ms(HORIZON_MS * 2))));
                            self.busy.push(t.clone());
                        }
                        What::Bursty(a, b) => ops.push(Op::Loop {
                            count: None,
                            body: vec![
                                Op::Run(Dist::Uniform {
                                    min: ms(1),
                                    max: ms(1 + u64::from(a) % 20),
                                }),
                                Op::Sleep(Dist::Uniform {
                                    min: ms(1),
                                    max: ms(1 + u64::from(b) % 20),
                                }),
                            ],
                        }),
                        What::Sched(_) => unreachable!(),
                    }
                    // Bursty threads come at 0, 50 or 100 ms: late joiners
                    // meet admission after the others.
                    let arrival = match kid.what {
                        What::Bursty(a, _) => Instant::ZERO + ms(50 * (u64::from(a) % 3)),
                        _ => Instant::ZERO,
                    };
                    self.scn.threads.push(ThreadSpec {
                        name: t,
                        parent: name.clone(),
                        params: at,
                        arrival,
                        program: Program::new(ops),
                        needs: None,
                    });
                }
            }
        }
        name
    }
}

fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::Fp => "fp",
        Policy::Rr => "rr",
        Policy::Sfq => "sfq",
        Policy::Bvt => "bvt",
        Policy::Res => "res",
        Policy::Rialto => "rialto",
        Policy::Frc => "frc",
        Policy::Rcsp => "rcsp",
        Policy::Limit => "limit",
    }
}

/// A child's attachment parameters under `parent`, and the reservation it
/// asks for by message (rialto).
fn attachment(parent: Policy, k: [u8; 3]) -> (Params, Option<Msg>) {
    let n = |i: usize, m: u64| u64::from(k[i]) % m;
    let p = Params::new();
    match parent {
        Policy::Fp => (p.with("prio", Value::Int(n(0, 4) as i64)), None),
        Policy::Sfq => (p.with("weight", Value::Int(1 + n(0, 4) as i64)), None),
        Policy::Bvt => (p.with("advance", Value::Int(1 + n(0, 20) as i64)), None),
        Policy::Res => match n(2, 4) {
            // The default reservation (1ms every 10ms) now and then.
            0 => (p, None),
            _ => (
                p.with("amount", Value::Duration(ms(1 + n(0, 6))))
                    .with("period", Value::Duration(ms(10 * (1 + n(1, 4))))),
                None,
            ),
        },
        Policy::Rialto => match n(2, 3) {
            0 => (p, None),
            _ => (
                p,
                Some(
                    // Periods 10 to 50 ms in steps of 5: most pairs are
                    // not a power of two apart, so the graph scales them.
                    Msg::new("reserve")
                        .arg("amount", Value::Duration(ms(1 + n(0, 6))))
                        .arg("period", Value::Duration(ms(5 * (2 + n(1, 9))))),
                ),
            ),
        },
        Policy::Frc | Policy::Rcsp => {
            let class = ["GR", "FR"][n(2, 2) as usize];
            let p = p
                .with("rate", Value::Str(format!("0.{}", 1 + n(0, 5))))
                .with("quantum", Value::Duration(ms(1 + n(1, 10))));
            (p.with("class", Value::Str(class.into())), None)
        }
        Policy::Rr | Policy::Limit => (p, None),
    }
}

/// Classes name only what the node declares: `GR` always; `FR` only in the
/// two-class set. A child asking for an undeclared class is refused at run
/// time and by the analysis; keep the generated ones valid.
fn fix_classes(scn: &mut Scenario) {
    let two: Vec<String> = scn
        .schedulers
        .iter()
        .filter(|s| matches!(s.params.get("classes"), Some(Value::Str(c)) if c.contains("FR")))
        .map(|s| s.name.clone())
        .collect();
    let frc: Vec<String> = scn
        .schedulers
        .iter()
        .filter(|s| matches!(s.policy.as_str(), "frc" | "rcsp"))
        .map(|s| s.name.clone())
        .collect();
    let fix = |parent: &str, params: &mut Params| {
        if frc.iter().any(|f| f == parent) && !two.iter().any(|t| t == parent) {
            params.set("class", Value::Str(String::new()));
        }
    };
    for t in &mut scn.threads {
        fix(&t.parent, &mut t.params);
    }
    for s in &mut scn.schedulers {
        for l in &mut s.parents {
            fix(&l.parent, &mut l.params);
        }
    }
}

/// The tree under an `fp` root at priority 1, over an `rr` at priority 0:
/// the tree receives ALL per CPU. The default scheduler, where a thread
/// refused by its scheduler goes, is that `rr` for half the cases and the
/// tree's own top for the others (then a refused thread takes its share of
/// the tree's top, and the analysis must count it there).
fn scenario(tree: &Tree, cpus: u32) -> (Scenario, Vec<String>) {
    let mut b = Builder::new(cpus);
    let top = |name: &str, policy: &str, prio: Option<i64>| SchedulerSpec {
        name: name.into(),
        policy: policy.into(),
        params: Params::new(),
        parents: prio.map_or_else(Vec::new, |p| {
            vec![ParentLink {
                parent: "top".into(),
                vps: cpus,
                params: Params::new().with("prio", Value::Int(p)),
            }]
        }),
    };
    b.scn.schedulers.push(top("top", "fp", None));
    b.scn.schedulers.push(top("default", "rr", Some(0)));
    let own = b.add(
        tree,
        Some(("top", Params::new().with("prio", Value::Int(1)))),
        cpus,
    );
    b.scn.default_scheduler = match tree.knobs[2] % 2 {
        0 => "default".into(),
        _ => own,
    };
    fix_classes(&mut b.scn);
    (b.scn, b.busy)
}

/// The busy intervals of the named threads, merged; `Err` if two of them
/// ran at once (they were meant to share one VP).
fn supply(r: &RunResult, names: &[&str]) -> Result<Schedule, String> {
    let ids: Vec<_> = r
        .threads
        .iter()
        .filter(|t| names.contains(&t.name.as_str()))
        .map(|t| t.id)
        .collect();
    let trace = r.trace.as_ref().expect("traced");
    Schedule::new(trace.segments.iter().filter_map(|s| match s.what {
        SegmentKind::Run(t) if ids.contains(&t) => Some((s.start.as_nanos(), s.end.as_nanos())),
        _ => None,
    }))
    .map_err(|e| format!("{names:?} share one VP, yet {e}"))
}

/// Checks `g` against `s` over `[from, to)`; `Err` says how it broke.
fn keeps(g: &Guarantee, s: &Schedule, from: u64, to: u64) -> Result<(), String> {
    match *g {
        Guarantee::All => s.check_psbe(Share::ONE, 0, from, to),
        Guarantee::Psbe { share, delta } => s.check_psbe(share, delta.as_nanos(), from, to),
        Guarantee::Res(r) => {
            let (x, y) = (r.amount.as_nanos(), r.period.as_nanos());
            match r.shape {
                Shape::Continuous => s.check_least(x, y, from, to),
                Shape::Basic => s.check_least(x, 2 * y - x, from, to),
            }
        }
        Guarantee::Null | Guarantee::Ps(_) | Guarantee::Resu(_) => Ok(()),
    }
}

/// Every checkable label of the case, checked: which, as "parent policy:
/// kind" (`None`: the hierarchy does not compose), or what broke.
fn check_case(scn: &Scenario, busy: &[String]) -> Result<Option<Vec<String>>, String> {
    let a = analyse(scn, &RuleBook::standard());
    if !a.composes() {
        return Ok(None);
    }
    let opts = SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    };
    let r = run(scn, &opts).map_err(|e| format!("the run failed: {e}"))?;
    if let Some(e) = r
        .log
        .iter()
        .find(|e| matches!(e.kind, LogKind::Eject | LogKind::Watchdog))
    {
        return Err(format!("{:?}: {}", e.kind, e.text));
    }
    // Reservations asked by message exist from their answer on.
    let from = r
        .log
        .iter()
        .filter(|e| e.kind == LogKind::Reply && e.text.contains("reserve"))
        .map(|e| e.at.as_nanos())
        .max()
        .unwrap_or(0);
    let to = r.horizon.as_nanos();
    let end_parent: BTreeMap<&str, &str> = r
        .threads
        .iter()
        .map(|t| (t.name.as_str(), t.scheduler.as_str()))
        .collect();
    // The threads below each scheduler at the end; and the schedulers that
    // may leave a CPU they were given idle (a hard reservation, a cap), and
    // those above them: what such a scheduler receives is more than what
    // its threads run, so its threads' time does not measure it.
    let mut below: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let up = |at: &str| {
        scn.schedulers
            .iter()
            .find(|s| s.name == at)
            .and_then(|s| s.parents.first())
            .map(|l| l.parent.as_str())
    };
    for (&t, &placed) in &end_parent {
        // Where it ended: a thread refused where the scenario placed it
        // runs elsewhere.
        let mut at = Some(placed);
        while let Some(s) = at {
            below.entry(s).or_default().push(t);
            at = up(s);
        }
    }
    let mut idles: Vec<&str> = Vec::new();
    for s in &scn.schedulers {
        if matches!(s.policy.as_str(), "res" | "limit") {
            let mut at = Some(s.name.as_str());
            while let Some(x) = at {
                idles.push(x);
                at = up(x);
            }
        }
    }
    let mut checked = Vec::new();
    let mut broken = Vec::new();
    for e in &a.edges {
        if matches!(
            e.guarantee,
            Guarantee::Null | Guarantee::Ps(_) | Guarantee::Resu(_)
        ) {
            continue;
        }
        let names: Vec<&str> = if e.to_thread {
            // Only CPU-bound threads still where they were placed (one that
            // ended elsewhere was refused there).
            if !busy.contains(&e.to) || e.from.as_deref() != end_parent.get(e.to.as_str()).copied()
            {
                continue;
            }
            vec![e.to.as_str()]
        } else {
            let Some(names) = below.get(e.to.as_str()) else {
                continue;
            };
            if e.vps != 1
                || idles.contains(&e.to.as_str())
                || !names.iter().any(|n| busy.iter().any(|b| b == n))
            {
                continue;
            }
            names.clone()
        };
        let policy = e
            .from
            .as_deref()
            .and_then(|f| scn.schedulers.iter().find(|s| s.name == f));
        // A multiprocessor mode counts apart where it matters: on several
        // CPUs.
        let mode = policy
            .and_then(|s| match s.params.get("multiprocessor") {
                Some(Value::Str(m)) if m != "one" && scn.machine.cpus > 1 => Some(format!(" {m}")),
                _ => None,
            })
            .unwrap_or_default();
        checked.push(format!(
            "{}{mode}: {:?}",
            policy.map_or("machine", |s| s.policy.as_str()),
            e.guarantee.kind()
        ));
        if let Err(why) = supply(&r, &names).and_then(|s| keeps(&e.guarantee, &s, from, to)) {
            broken.push(format!(
                "{} -> {}: {} ({}): {why}",
                e.from.as_deref().unwrap_or("machine"),
                e.to,
                e.guarantee,
                e.why.as_deref().unwrap_or("")
            ));
        }
    }
    match broken.is_empty() {
        true => Ok(Some(checked)),
        false => Err(format!(
            "labels the schedule breaks (checked from {from} ns):\n  {}",
            broken.join("\n  ")
        )),
    }
}

#[test]
fn every_label_the_analysis_gives_is_kept_by_the_schedule() {
    use proptest::test_runner::{Config, TestError, TestRunner};
    use std::cell::{Cell, RefCell};
    // Enough cases to meet every policy's labels many times over (the
    // counts below check it), few enough for a test run.
    // The same cases on every run (PROPTEST_CASES sets how many: more to
    // hunt by hand).
    let cases_wanted = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: cases_wanted,
            failure_persistence: None,
            ..Config::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let (cases, composed) = (Cell::new(0u32), Cell::new(0u32));
    let labels: RefCell<BTreeMap<String, u32>> = RefCell::default();
    let cpus = prop_oneof![2 => Just(1u32), 1 => 2u32..=3];
    let result = runner.run(&(tree(), cpus), |(tree, cpus)| {
        let (scn, busy) = scenario(&tree, cpus);
        cases.set(cases.get() + 1);
        match check_case(&scn, &busy) {
            Ok(None) => {}
            Ok(Some(checked)) => {
                composed.set(composed.get() + 1);
                for c in checked {
                    *labels.borrow_mut().entry(c).or_default() += 1;
                }
            }
            Err(e) => return Err(TestCaseError::fail(e)),
        }
        Ok(())
    });
    if let Err(TestError::Fail(_, (tree, cpus))) = &result {
        let (scn, busy) = scenario(tree, *cpus);
        let why = check_case(&scn, &busy).err().unwrap_or_default();
        let text = serde_json::to_string_pretty(&scn).unwrap();
        panic!("a label the schedule breaks (shrunk):\n{why}\n\nscenario: {text}");
    }
    result.unwrap();
    // Not vacuous: most cases compose, and every policy's labels are met
    // many times.
    let labels = labels.into_inner();
    eprintln!(
        "{} cases, {} composed; labels checked: {labels:?}",
        cases.get(),
        composed.get()
    );
    assert!(
        composed.get() * 3 >= cases.get() * 2,
        "too few cases compose"
    );
    for want in [
        "fp: All",
        "sfq: Psbe",
        "res: Resbh",
        "rialto: Rescs",
        "frc: Psbe",
        "rcsp: Psbe",
        "limit: Resbh",
        "res partitioned: Resbh",
        "res global: Resbh",
        "rialto partitioned: Rescs",
    ] {
        let n = labels.get(want).copied().unwrap_or(0);
        assert!(n >= 10, "only {n} labels `{want}` checked: {labels:?}");
    }
}
