//! `rialto` end to end: threads reserve for their activity and begin time
//! constraints with `Op::Msg`; reservations hold in every window of their
//! period against CPU-bound competitors, accepted constraints finish their
//! estimate by their deadline, refusals say why, a mutex holder runs on a
//! blocked waiter's constraint, an RPC server on its blocked caller's
//! reservation.

use hsched_core::{Duration, Instant, Msg, Params, ThreadId, Value};
use hsched_model::{
    Action, Dist, DomainSpec, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario,
    SchedulerSpec, ScriptEvent, SegmentKind, StopSpec, Target, ThreadSpec, Via,
};

mod common;
use common::{go, replies, tid};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Instant {
    Instant::ZERO + ms(x)
}

fn forever() -> Op {
    Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(100)))],
    }
}

fn msg(m: Msg) -> Op {
    Op::Msg {
        to: Target::Parent,
        msg: m,
    }
}

fn reserve(amount: Duration, period: Duration) -> Op {
    msg(Msg::new("reserve")
        .arg("amount", Value::Duration(amount))
        .arg("period", Value::Duration(period)))
}

/// `begin_constraint`, times relative to now.
fn begin(estimate: Duration, deadline: Duration) -> Op {
    msg(Msg::new("begin_constraint")
        .arg("estimate", Value::Duration(estimate))
        .arg("deadline", Value::Duration(deadline))
        .arg("relative", Value::Bool(true)))
}

fn thread(name: &str, activity: &str, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: "rialto".into(),
        params: if activity.is_empty() {
            Params::new()
        } else {
            Params::new().with("activity", Value::Str(activity.into()))
        },
        arrival: Instant::ZERO,
        program: Program::new(ops),
        needs: None,
    }
}

fn scenario(cpus: u32, horizon: Duration, threads: Vec<ThreadSpec>) -> Scenario {
    Scenario {
        name: "rialto".into(),
        description: String::new(),
        machine: Machine {
            cpus,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon,
        seed: 7,
        default_scheduler: "rialto".into(),
        schedulers: vec![SchedulerSpec {
            name: "rialto".into(),
            policy: "rialto".into(),
            params: Params::new(),
            parents: vec![],
        }],
        threads,
        script: vec![],
    }
}

/// CPU time the threads `names` received in [a, b).
fn ran(r: &RunResult, names: &[&str], a: Instant, b: Instant) -> Duration {
    let ids: Vec<ThreadId> = names.iter().map(|n| tid(r, n)).collect();
    let trace = r.trace.as_ref().unwrap();
    let ns = trace
        .segments
        .iter()
        .filter(|s| matches!(s.what, SegmentKind::Run(t) if ids.contains(&t)))
        .filter(|s| s.start < b && s.end > a)
        .map(|s| (s.end.min(b) - s.start.max(a)).as_nanos())
        .sum();
    Duration(ns)
}

#[test]
fn a_reserved_activity_gets_its_amount_in_every_window_and_refusals_say_why() {
    let threads = vec![
        thread("v1", "video", vec![reserve(ms(3), ms(10)), forever()]),
        thread("v2", "video", vec![forever()]),
        // 3 + 8 > 10: over capacity.
        thread("big", "audio", vec![reserve(ms(8), ms(10)), forever()]),
        thread("hog1", "", vec![forever()]),
        thread("hog2", "", vec![forever()]),
    ];
    let r = go(&scenario(1, ms(500), threads));
    let v1 = replies(&r, "v1");
    assert_eq!(v1.len(), 1);
    assert_eq!(v1[0].kind, LogKind::Reply, "{}", v1[0].text);
    assert!(v1[0].text.contains("amount"), "{}", v1[0].text);
    let big = replies(&r, "big");
    assert_eq!(big[0].kind, LogKind::Refused);
    assert!(big[0].text.contains("over capacity"), "{}", big[0].text);
    // After the reservation is in place (it is sent by 30ms at the latest),
    // every window of the period holds the amount.
    for t in (40..490).step_by(1) {
        let got = ran(&r, &["v1", "v2"], at(t), at(t + 10));
        assert!(got >= ms(3), "window at {t}ms: {got}");
    }
    // The competitors share the rest.
    for hog in ["hog1", "hog2", "big"] {
        assert!(ran(&r, &[hog], at(40), at(500)) >= ms(60), "{hog}");
    }
}

#[test]
fn accepted_constraints_finish_their_estimate_by_the_deadline() {
    let job = vec![
        begin(ms(20), ms(50)),
        Op::Run(Dist::Fixed(ms(20))),
        msg(Msg::new("end_constraint")),
    ];
    let threads = vec![
        thread("r", "res", vec![reserve(ms(5), ms(10)), forever()]),
        thread(
            "c",
            "",
            vec![Op::Periodic {
                period: ms(100),
                deadline: ms(80),
                offset: ms(5),
                jobs: None,
                body: job,
            }],
        ),
        // Only about 25ms of free time in 50ms: refused.
        thread("greedy", "", vec![begin(ms(40), ms(50)), forever()]),
        thread("hog1", "", vec![forever()]),
        thread("hog2", "", vec![forever()]),
    ];
    let r = go(&scenario(1, Duration::from_secs(1), threads));
    let greedy = replies(&r, "greedy");
    assert_eq!(greedy[0].kind, LogKind::Refused);
    assert!(greedy[0].text.contains("infeasible"), "{}", greedy[0].text);
    let c = replies(&r, "c");
    assert!(c.len() >= 16, "{c:#?}");
    for e in &c {
        assert_eq!(e.kind, LogKind::Reply, "{}", e.text);
    }
    assert!(c.iter().any(|e| e.text.contains("taken")));
    let end = Instant::ZERO + r.horizon;
    let jobs: Vec<_> = r.jobs.iter().filter(|j| j.thread == tid(&r, "c")).collect();
    assert!(jobs.len() >= 9);
    assert!(jobs.iter().all(|j| !j.missed(end)), "{jobs:#?}");
    // The reservation still holds.
    for t in (40..990).step_by(1) {
        assert!(
            ran(&r, &["r"], at(t), at(t + 10)) >= ms(5),
            "window at {t}ms"
        );
    }
}

#[test]
fn several_cpus_in_the_middle_of_a_hierarchy() {
    let mut scn = scenario(
        2,
        ms(300),
        vec![
            thread("v", "video", vec![reserve(ms(2), ms(10)), forever()]),
            thread("h1", "", vec![forever()]),
            thread("h2", "", vec![forever()]),
        ],
    );
    scn.schedulers.insert(
        0,
        SchedulerSpec {
            name: "top".into(),
            policy: "rr".into(),
            params: Params::new(),
            parents: vec![],
        },
    );
    scn.schedulers[1].parents = vec![ParentLink {
        parent: "top".into(),
        vps: 2,
        params: Params::new(),
    }];
    scn.default_scheduler = "top".into();
    let r = go(&scn);
    assert_eq!(replies(&r, "v")[0].kind, LogKind::Reply);
    for name in ["v", "h1", "h2"] {
        let got = ran(&r, &[name], at(0), at(300));
        assert!(got >= ms(50), "{name}: {got}");
    }
    for t in (40..290).step_by(1) {
        assert!(
            ran(&r, &["v"], at(t), at(t + 10)) >= ms(2),
            "window at {t}ms"
        );
    }
}

fn mutex(name: &str, m: i64) -> Op {
    msg(Msg::new(name).arg("mutex", Value::Int(m)))
}

/// §4.2 end to end: a thread mirrors its simulator mutex with `lock` /
/// `block_on` / `unlock`; while a constrained waiter is blocked, the holder
/// runs on the waiter's constraint ahead of the CPU-bound competitors.
#[test]
fn a_mutex_holder_runs_on_the_blocked_waiters_constraint() {
    let threads = vec![
        thread(
            "holder",
            "h",
            vec![
                mutex("lock", 1),
                Op::Lock("m".into()),
                Op::Run(Dist::Fixed(ms(40))),
                mutex("unlock", 1),
                Op::Unlock("m".into()),
                forever(),
            ],
        ),
        thread(
            "waiter",
            "w",
            vec![
                Op::Sleep(Dist::Fixed(ms(50))),
                begin(ms(10), ms(60)),
                mutex("block_on", 1),
                Op::Lock("m".into()),
                Op::Run(Dist::Fixed(ms(2))),
                mutex("unlock", 1),
                Op::Unlock("m".into()),
                msg(Msg::new("end_constraint")),
            ],
        ),
        thread("hog1", "", vec![forever()]),
        thread("hog2", "", vec![forever()]),
    ];
    let r = go(&scenario(1, ms(300), threads));
    let w = replies(&r, "waiter");
    assert_eq!(w.len(), 4, "{w:#?}");
    for e in &w {
        assert_eq!(e.kind, LogKind::Reply, "{}", e.text);
    }
    let tb = w[1].at;
    assert!(tb >= at(50), "{tb}");
    let got = ran(&r, &["holder"], tb, tb + ms(10));
    assert_eq!(got, ms(10), "block_on at {tb}");
    assert_eq!(ran(&r, &["hog1", "hog2"], tb, tb + ms(10)), Duration::ZERO);
}

/// §4.2 with the simulator's own mutex and no message at all: the
/// simulator tells rialto who holds and who waits. One CPU, no
/// reservations: free time goes round robin by 10ms quanta among the
/// activities, so a quantum of 10ms ends at 50. At 50 the waiter wakes,
/// begins a 10ms constraint due at 110 (its assigned time is 50-60, the
/// earliest free time) and blocks on `m`, which the holder has held since
/// 0 with 40ms of work. Rule 2 runs the end of the waiter's chain, the
/// holder, in all of 50-60 and neither hog there; round robin alone would
/// have moved on to a hog at 50. The hand-over at the unlock needs no
/// message, so nothing is refused, and the waiter ends its constraint.
#[test]
fn a_mutex_holder_inherits_the_blocked_waiters_constraint_without_messages() {
    let threads = vec![
        thread(
            "holder",
            "h",
            vec![
                Op::Lock("m".into()),
                Op::Run(Dist::Fixed(ms(40))),
                Op::Unlock("m".into()),
                forever(),
            ],
        ),
        thread(
            "waiter",
            "w",
            vec![
                Op::Sleep(Dist::Fixed(ms(50))),
                begin(ms(10), ms(60)),
                Op::Lock("m".into()),
                Op::Run(Dist::Fixed(ms(2))),
                Op::Unlock("m".into()),
                msg(Msg::new("end_constraint")),
                Op::Exit,
            ],
        ),
        thread("hog1", "", vec![forever()]),
        thread("hog2", "", vec![forever()]),
    ];
    let r = go(&scenario(1, ms(300), threads));
    let refused: Vec<_> = r
        .log
        .iter()
        .filter(|e| e.kind == LogKind::Refused)
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
    let w = replies(&r, "waiter");
    assert_eq!(w.len(), 2, "{w:#?}");
    assert_eq!(w[0].at, at(50));
    assert_eq!(ran(&r, &["holder"], at(50), at(60)), ms(10));
    assert_eq!(ran(&r, &["hog1", "hog2"], at(50), at(60)), Duration::ZERO);
}

/// §4.2 RPC through the simulator's own `call … via rpc`, no message: the
/// client reserves 5ms every 10ms and calls a server thread of an
/// activity without a reservation, whose stop runs 100ms; two CPU-bound
/// hogs compete. While it serves, the server is scheduled in the client's
/// activity: at least 5ms in every 10ms window, so its 100ms are done
/// within 200ms (round robin alone, a third of the CPU, would take about
/// 300ms).
#[test]
fn an_rpc_server_runs_on_the_callers_reservation_without_messages() {
    let server = thread("server", "srv", vec![Op::Serve("svc".into())]);
    let client = thread(
        "client",
        "cli",
        vec![
            reserve(ms(5), ms(10)),
            Op::Call {
                domain: "svc".into(),
                stop: "work".into(),
                via: Via::Rpc,
            },
            Op::Exit,
        ],
    );
    let threads = vec![
        server,
        client,
        thread("hog1", "", vec![forever()]),
        thread("hog2", "", vec![forever()]),
    ];
    let mut scn = scenario(1, ms(600), threads);
    scn.script.push(ScriptEvent {
        at: Instant::ZERO,
        action: Action::Domain(DomainSpec {
            name: "svc".into(),
            stops: vec![StopSpec {
                name: "work".into(),
                body: vec![Op::Run(Dist::Fixed(ms(100)))],
            }],
            members: vec!["server".into()],
            start: true,
        }),
    });
    let r = go(&scn);
    let c = replies(&r, "client");
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!(c[0].kind, LogKind::Reply, "{}", c[0].text);
    let client = r.threads.iter().find(|t| t.name == "client").unwrap();
    assert_eq!(client.calls.ok, 1);
    let replied = client.exit.expect("the reply came");
    assert!(replied <= at(200), "replied at {replied}");
    assert_eq!(ran(&r, &["server"], at(0), replied), ms(100));
    let mut t = at(0);
    while t + ms(10) <= replied {
        let got = ran(&r, &["server"], t, t + ms(10));
        assert!(got >= ms(5), "window at {t} during the call: {got}");
        t += ms(1);
    }
}

fn rpc(name: &str, port: i64) -> Op {
    msg(Msg::new(name).arg("port", Value::Int(port)))
}

/// §4.2 RPC end to end: a client holding 5ms/10ms calls a server of an
/// activity without a reservation and sleeps; CPU-bound competitors run.
/// During the call the server is scheduled in the client's activity and
/// gets the client's reserved time in every 10ms window; after the reply
/// it is one competitor among others again.
#[test]
fn an_rpc_server_runs_on_the_callers_reservation_until_it_replies() {
    let mut client = thread(
        "client",
        "cli",
        vec![
            reserve(ms(5), ms(10)),
            rpc("rpc_call", 1),
            Op::Sleep(Dist::Fixed(ms(400))),
            forever(),
        ],
    );
    // It calls once the server has opened the port.
    client.arrival = at(20);
    let threads = vec![
        thread(
            "server",
            "srv",
            vec![
                rpc("rpc_serve", 1),
                Op::Run(Dist::Fixed(ms(100))),
                msg(Msg::new("rpc_reply")),
                forever(),
            ],
        ),
        client,
        thread("hog1", "", vec![forever()]),
        thread("hog2", "", vec![forever()]),
    ];
    let r = go(&scenario(1, ms(600), threads));
    let (c, s) = (replies(&r, "client"), replies(&r, "server"));
    assert_eq!(c.len(), 2, "{c:#?}");
    assert_eq!(s.len(), 2, "{s:#?}");
    for e in c.iter().chain(&s) {
        assert_eq!(e.kind, LogKind::Reply, "{}", e.text);
    }
    let (called, replied) = (c[1].at, s[1].at);
    assert!(replied >= called + ms(100), "{called} {replied}");
    let mut t = called + ms(10);
    while t + ms(10) <= replied {
        let got = ran(&r, &["server"], t, t + ms(10));
        assert!(got >= ms(5), "window at {t} during the call: {got}");
        t += ms(1);
    }
    let (from, to) = (replied + ms(10), replied + ms(190));
    let mut t = from;
    let mut short = 0;
    while t + ms(10) <= to {
        short += usize::from(ran(&r, &["server"], t, t + ms(10)) < ms(5));
        t += ms(1);
    }
    assert!(short > 0, "the server kept the client's reserved time");
    let got = ran(&r, &["server"], from, to);
    assert!(got < ms(90), "after the reply: {got}");
}

mod random_sets {
    //! Random reservation sets under the simulator, with the paper's
    //! constraint stress load and CPU-bound competitors: every granted
    //! reservation holds in every window of its period, and every granted
    //! constraint (work within its estimate) finishes by its deadline.
    use super::*;
    use hsched_model::ConstraintLoad;
    use proptest::prelude::*;

    /// `amount=…, period=…` of a granted `reserve` reply.
    fn grant(text: &str) -> Option<(Duration, Duration)> {
        let reply = text.split_once(": ok: ")?.1;
        let field = |key: &str| {
            let rest = reply.split_once(&format!("{key}="))?.1;
            Duration::parse(rest.split([',', ' ']).next()?).ok()
        };
        Some((field("amount")?, field("period")?))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        #[test]
        fn granted_reservations_and_constraints_hold(
            sets in proptest::collection::vec((1u64..6, 0u32..3, 1u64..4), 1..5),
            seed in 0u64..1000,
        ) {
            let mut threads = Vec::new();
            for (i, &(amount, k, base)) in sets.iter().enumerate() {
                let period = ms((base * 5) << k);
                threads.push(thread(
                    &format!("r{i}"),
                    &format!("a{i}"),
                    vec![reserve(ms(amount), period), forever()],
                ));
            }
            threads.push(thread(
                "stress",
                "",
                vec![Op::Constraints(ConstraintLoad {
                    window: Dist::Uniform { min: ms(1), max: ms(200) },
                    start: Dist::Uniform { min: Duration::ZERO, max: ms(200) },
                    ..ConstraintLoad::default()
                })],
            ));
            threads.push(thread("hog1", "", vec![forever()]));
            threads.push(thread("hog2", "", vec![forever()]));
            let mut scn = scenario(1, Duration::from_secs(2), threads);
            scn.seed = seed;
            scn.machine.context_switch = Duration::from_micros(20);
            scn.schedulers[0].params =
                Params::new().with("switch_cost", Value::Duration(Duration::from_micros(20)));
            let r = go(&scn);
            // Reservations are all made at time 0; one hyperperiod (at most
            // 160ms) later every grant is in force.
            let from = 200;
            for i in 0..sets.len() {
                let name = format!("r{i}");
                let reply = replies(&r, &name);
                let Some((amount, period)) = grant(&reply[0].text) else {
                    prop_assert_eq!(reply[0].kind, LogKind::Refused, "{}", reply[0].text);
                    continue;
                };
                let p = period.as_nanos() / 1_000_000;
                for t in from..(2000 - p) {
                    let got = ran(&r, &[name.as_str()], at(t), at(t + p));
                    prop_assert!(got >= amount, "{name} {amount}/{period}: {got} in [{t}, {t}+{p})ms");
                }
            }
            let end = Instant::ZERO + r.horizon;
            let stress = tid(&r, "stress");
            for j in r.jobs.iter().filter(|j| j.thread == stress) {
                if j.admitted == Some(true) {
                    prop_assert!(!j.missed(end), "granted constraint missed: {j:?}");
                }
            }
        }
    }
}

// ----- multiprocessor = "partitioned": a graph per VP ----------------------

/// A root `rialto` on `cpus` CPUs with `params` (its VP `i` is CPU `i`).
fn partitioned(cpus: u32, fit: &str, threads: Vec<ThreadSpec>) -> Scenario {
    let mut scn = scenario(cpus, ms(1000), threads);
    scn.schedulers[0].params = Params::new()
        .with("multiprocessor", Value::Str("partitioned".into()))
        .with("fit", Value::Str(fit.into()));
    scn
}

/// The CPUs the threads `names` ran on.
fn cpus_of(r: &RunResult, names: &[&str]) -> std::collections::BTreeSet<u32> {
    let ids: Vec<ThreadId> = names.iter().map(|n| tid(r, n)).collect();
    r.trace
        .as_ref()
        .unwrap()
        .segments
        .iter()
        .filter(|s| matches!(s.what, SegmentKind::Run(t) if ids.contains(&t)))
        .map(|s| s.cpu.0)
        .collect()
}

/// Every window of `period` from `from` to the horizon gives the threads
/// `names` at least `amount` (the RESCS label, checked exactly).
fn keeps_rescs(r: &RunResult, names: &[&str], amount: Duration, period: Duration, from: Instant) {
    use hsched_analysis::schedule_check::Schedule;
    let ids: Vec<ThreadId> = names.iter().map(|n| tid(r, n)).collect();
    let s = Schedule::new(
        r.trace
            .as_ref()
            .unwrap()
            .segments
            .iter()
            .filter_map(|s| match s.what {
                SegmentKind::Run(t) if ids.contains(&t) => {
                    Some((s.start.as_nanos(), s.end.as_nanos()))
                }
                _ => None,
            }),
    )
    .unwrap();
    s.check_least(
        amount.as_nanos(),
        period.as_nanos(),
        from.as_nanos(),
        r.horizon.as_nanos(),
    )
    .unwrap_or_else(|e| panic!("{names:?}: {e}"));
}

/// On 2 CPUs, two activities of 60 ms every 100 ms (1.2 CPUs) are both
/// granted, which `"one"` refuses (60 + 60 > 100 on its one graph); first
/// fit puts `a` on vp0 and `b` on vp1 (vp0 has 40 ms left); a third of
/// 60/100 fits neither and is refused naming both VPs' 60 ms of 100 ms.
/// Against four CPU-bound unreserved threads (two activities of two
/// threads each), every 100 ms window from the grants on gives `a` and `b`
/// at least 60 ms each, and each ran on its own CPU only.
#[test]
fn partitioned_admits_a_cpu_per_vp_and_keeps_every_reservation_on_its_cpu() {
    let threads = || {
        vec![
            thread("a1", "a", vec![reserve(ms(60), ms(100)), forever()]),
            thread("a2", "a", vec![forever()]),
            thread("b1", "b", vec![reserve(ms(60), ms(100)), forever()]),
            thread("c1", "c", vec![reserve(ms(60), ms(100)), forever()]),
            thread("h1", "h", vec![forever()]),
            thread("h2", "h", vec![forever()]),
            thread("k1", "", vec![forever()]),
        ]
    };
    let r = go(&partitioned(2, "first", threads()));
    let a = &replies(&r, "a1")[0];
    let b = &replies(&r, "b1")[0];
    let c = &replies(&r, "c1")[0];
    assert_eq!(a.kind, LogKind::Reply, "{}", a.text);
    assert!(a.text.contains("vp=0"), "{}", a.text);
    assert_eq!(b.kind, LogKind::Reply, "{}", b.text);
    assert!(b.text.contains("vp=1"), "{}", b.text);
    assert_eq!(c.kind, LogKind::Refused, "{}", c.text);
    assert!(
        c.text
            .contains("vp0 (60ms of 100ms per hyperperiod (60.0%))")
            && c.text
                .contains("vp1 (60ms of 100ms per hyperperiod (60.0%))"),
        "{}",
        c.text
    );
    // Activity `a`'s two threads share its 60 ms; `b1` has its own.
    keeps_rescs(&r, &["a1", "a2"], ms(60), ms(100), Instant::ZERO);
    keeps_rescs(&r, &["b1"], ms(60), ms(100), Instant::ZERO);
    assert_eq!(cpus_of(&r, &["a1", "a2"]), [0].into());
    assert_eq!(cpus_of(&r, &["b1"]), [1].into());
    // The unreserved ones may use either CPU's free time: 40 ms of each
    // 100 ms per CPU, 800 ms over the run, round robin among the five
    // activities (`a` and `b` use their own CPU's free time too; `c`,
    // refused, is unreserved): 800 / 5 = 160 ms each (measured: exactly
    // 160 ms for `c1`, `h1` + `h2` and `k1`).
    assert!(ran(&r, &["c1"], at(0), at(1000)) >= ms(150));
    assert!(ran(&r, &["h1", "h2"], at(0), at(1000)) >= ms(150));
    assert!(ran(&r, &["k1"], at(0), at(1000)) >= ms(150));

    // One graph: the same requests, `b` refused (60 + 60 > 100).
    let mut one = partitioned(2, "first", threads());
    one.schedulers[0].params = Params::new();
    let r = go(&one);
    assert_eq!(replies(&r, "b1")[0].kind, LogKind::Refused);
}

/// On 4 CPUs, four activities of 90 ms every 100 ms (3.6 CPUs) each get a
/// CPU of their own (first fit: 90 + 90 > 100, so one per VP) and a fifth
/// is refused; with worst fit, four of 20/100 spread one per VP (the
/// emptiest graph after adding, ties to the lowest index) where first fit
/// stacks them all on vp0 (4 × 20 ≤ 100). Every reservation holds in
/// every window, each on its own CPU, against CPU-bound competitors.
#[test]
fn partitioned_on_four_cpus_first_and_worst_fit() {
    let mut threads: Vec<ThreadSpec> = (0..5)
        .map(|i| {
            thread(
                &format!("r{i}"),
                &format!("act{i}"),
                vec![reserve(ms(90), ms(100)), forever()],
            )
        })
        .collect();
    threads.extend((0..4).map(|i| thread(&format!("h{i}"), "", vec![forever()])));
    let r = go(&partitioned(4, "first", threads));
    for i in 0..4 {
        let name = format!("r{i}");
        let rep = &replies(&r, &name)[0];
        assert_eq!(rep.kind, LogKind::Reply, "{}", rep.text);
        assert!(rep.text.contains(&format!("vp={i}")), "{}", rep.text);
        keeps_rescs(&r, &[&name], ms(90), ms(100), Instant::ZERO);
        assert_eq!(cpus_of(&r, &[&name]), [i as u32].into());
    }
    assert_eq!(replies(&r, "r4")[0].kind, LogKind::Refused);

    for (fit, want) in [("first", [0, 0, 0, 0]), ("worst", [0, 1, 2, 3])] {
        let mut threads: Vec<ThreadSpec> = (0..4)
            .map(|i| {
                thread(
                    &format!("r{i}"),
                    &format!("act{i}"),
                    vec![reserve(ms(20), ms(100)), forever()],
                )
            })
            .collect();
        threads.extend((0..6).map(|i| thread(&format!("h{i}"), "", vec![forever()])));
        let r = go(&partitioned(4, fit, threads));
        for (i, vp) in want.iter().enumerate() {
            let name = format!("r{i}");
            let rep = &replies(&r, &name)[0];
            assert!(
                rep.text.contains(&format!("vp={vp}")),
                "{fit}: {}",
                rep.text
            );
            keeps_rescs(&r, &[&name], ms(20), ms(100), Instant::ZERO);
            assert_eq!(cpus_of(&r, &[&name]), [*vp as u32].into(), "{fit} {name}");
        }
    }
}

/// A time constraint is admitted on its activity's VP and met there; an
/// activity without a VP (no grant yet) is refused one, saying why.
#[test]
fn partitioned_constraints_live_on_their_activitys_vp() {
    let threads = vec![
        thread("a", "a", vec![reserve(ms(60), ms(100)), forever()]),
        thread(
            "b",
            "b",
            vec![
                reserve(ms(60), ms(100)),
                begin(ms(20), ms(200)),
                Op::Run(Dist::Fixed(ms(20))),
                msg(Msg::new("end_constraint")),
                forever(),
            ],
        ),
        thread("u", "", vec![begin(ms(5), ms(100)), forever()]),
        thread("h", "", vec![forever()]),
    ];
    let r = go(&partitioned(2, "first", threads));
    let b = replies(&r, "b");
    assert_eq!(b[1].kind, LogKind::Reply, "{}", b[1].text);
    assert_eq!(b[2].kind, LogKind::Reply, "{}", b[2].text);
    assert_eq!(cpus_of(&r, &["b"]), [1].into());
    let u = &replies(&r, "u")[0];
    assert_eq!(u.kind, LogKind::Refused, "{}", u.text);
    assert!(u.text.contains("reserve first"), "{}", u.text);
}

/// Bad values of `multiprocessor` and `fit` are build errors that name the
/// supported modes; `global` is refused (no published test).
#[test]
fn partitioned_parameters_are_checked() {
    for (k, v, want) in [
        ("multiprocessor", "global", "no published"),
        ("multiprocessor", "both", "\"one\" and \"partitioned\""),
        ("fit", "best", "\"first\" or \"worst\""),
        ("placement", "A@x:0.0", "not a VP index"),
    ] {
        let mut scn = partitioned(2, "first", vec![thread("t", "", vec![forever()])]);
        scn.schedulers[0].params = scn.schedulers[0]
            .params
            .clone()
            .with(k, Value::Str(v.into()));
        let e = hsched_sim::run(&scn, &Default::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(want), "{k} = {v}: {e}");
    }
    let mut scn = scenario(2, ms(10), vec![]);
    scn.schedulers[0].params = Params::new().with("fit", Value::Str("worst".into()));
    let e = hsched_sim::run(&scn, &Default::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("needs multiprocessor = \"partitioned\""), "{e}");
}
