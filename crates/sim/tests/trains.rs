//! Trains and RPC across protection domains (Yau, Tan & Lam §6): what a
//! train call carries, nesting, the leg-status fault semantics, and a
//! property test that random call programs with random kills never strand
//! a thread in a dead domain or lose a call.

mod common;

use common::go;
use hsched_core::{Duration, Instant, Params, ThreadId};
use hsched_model::{
    Action, DomainSpec, Machine, Op, Program, RunResult, Scenario, SchedulerSpec, ScriptEvent,
    StopSpec, ThreadSpec, Via,
};
use hsched_sim::{CallOutcome, CallRecord, SimOptions, Simulation};
use proptest::prelude::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}
fn run(d: Duration) -> Op {
    Op::Run(hsched_model::Dist::Fixed(d))
}
fn call(domain: &str, stop: &str, via: Via) -> Op {
    Op::Call {
        domain: domain.into(),
        stop: stop.into(),
        via,
    }
}

fn domain(name: &str, stops: Vec<(&str, Vec<Op>)>, members: &[&str]) -> ScriptEvent {
    ScriptEvent {
        at: Instant::ZERO,
        action: Action::Domain(DomainSpec {
            name: name.into(),
            stops: stops
                .into_iter()
                .map(|(n, body)| StopSpec {
                    name: n.into(),
                    body,
                })
                .collect(),
            members: members.iter().map(|m| m.to_string()).collect(),
            start: true,
        }),
    }
}

/// A domain declared at time zero that waits for a `create`.
fn unstarted(name: &str, stops: Vec<(&str, Vec<Op>)>, members: &[&str]) -> ScriptEvent {
    let mut ev = domain(name, stops, members);
    if let Action::Domain(spec) = &mut ev.action {
        spec.start = false;
    }
    ev
}

fn thread(name: &str, at: Duration, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: "rr".into(),
        params: Params::new(),
        arrival: Instant::ZERO + at,
        program: Program::new(ops),
        needs: None,
    }
}

fn scenario(threads: Vec<ThreadSpec>, script: Vec<ScriptEvent>, horizon: Duration) -> Scenario {
    Scenario {
        name: "trains".into(),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon,
        seed: 3,
        schedulers: vec![SchedulerSpec {
            name: "rr".into(),
            policy: "rr".into(),
            params: Params::new(),
            parents: vec![],
        }],
        default_scheduler: "rr".into(),
        threads,
        script,
    }
}

/// Runs with invariants checked; the result, the calls, the stranded list.
fn simulate(scn: &Scenario) -> (RunResult, Vec<CallRecord>, Vec<String>) {
    let opts = SimOptions {
        check_invariants: true,
        ..Default::default()
    };
    let mut sim = Simulation::new(scn, &opts, &[]).unwrap();
    sim.run_until(Instant::ZERO + scn.horizon);
    let calls = sim.calls().to_vec();
    let stranded = sim.stranded();
    (sim.finish(), calls, stranded)
}

fn by_name<'a>(r: &'a RunResult, name: &str) -> &'a hsched_model::ThreadResult {
    r.threads.iter().find(|t| t.name == name).unwrap()
}

fn outcomes(calls: &[CallRecord], t: ThreadId) -> Vec<Option<CallOutcome>> {
    calls
        .iter()
        .filter(|c| c.thread == t)
        .map(|c| c.outcome)
        .collect()
}

#[test]
fn a_train_call_runs_the_server_work_on_the_callers_thread_without_blocking() {
    let scn = scenario(
        vec![thread(
            "client",
            Duration::ZERO,
            vec![Op::Loop {
                count: Some(5),
                body: vec![call("server", "compute", Via::Train), run(us(100))],
            }],
        )],
        vec![domain("server", vec![("compute", vec![run(ms(2))])], &[])],
        ms(100),
    );
    let (r, calls, stranded) = simulate(&scn);
    let client = by_name(&r, "client");
    // 5 × (2ms in the server + 100us at home), all on the client's thread.
    assert_eq!(client.cpu_time, ms(10) + us(500));
    assert_eq!(client.exit, Some(Instant::ZERO + ms(10) + us(500)));
    // No rescheduling point: the only wakeup is its arrival.
    assert_eq!(client.wakeup_latencies.len(), 1);
    assert_eq!(calls.len(), 5);
    assert!(calls.iter().all(|c| c.outcome == Some(CallOutcome::Ok)));
    assert_eq!(calls[0].end, Some(Instant::ZERO + ms(2)));
    assert!(stranded.is_empty(), "{stranded:?}");
    let _ = go(&scn);
}

#[test]
fn an_rpc_blocks_the_client_and_a_server_thread_does_the_work() {
    let mut server = thread("server", Duration::ZERO, vec![Op::Serve("server".into())]);
    server.name = "worker".into();
    let scn = scenario(
        vec![
            server,
            thread(
                "client",
                Duration::ZERO,
                vec![Op::Loop {
                    count: Some(3),
                    body: vec![call("server", "compute", Via::Rpc), run(us(100))],
                }],
            ),
        ],
        vec![domain(
            "server",
            vec![("compute", vec![run(ms(2))])],
            &["worker"],
        )],
        ms(100),
    );
    let (r, calls, stranded) = simulate(&scn);
    assert_eq!(by_name(&r, "client").cpu_time, us(300));
    assert_eq!(by_name(&r, "worker").cpu_time, ms(6));
    // Its first call blocks it before it ever needs the CPU; then each
    // reply wakes it: three wakeups (a train client has only its arrival).
    assert_eq!(by_name(&r, "client").wakeup_latencies.len(), 3);
    assert!(calls.iter().all(|c| c.outcome == Some(CallOutcome::Ok)));
    assert_eq!(calls.len(), 3);
    // The server thread waits for more, in its live domain: not stranded.
    assert_eq!(by_name(&r, "worker").exit, None);
    assert!(stranded.is_empty(), "{stranded:?}");
}

#[test]
fn nested_train_calls_push_and_pop_invocation_records() {
    let scn = scenario(
        vec![thread(
            "client",
            Duration::ZERO,
            vec![call("a", "outer", Via::Train), run(ms(1))],
        )],
        vec![
            domain(
                "a",
                vec![(
                    "outer",
                    vec![run(ms(1)), call("b", "inner", Via::Train), run(ms(1))],
                )],
                &[],
            ),
            domain("b", vec![("inner", vec![run(ms(3))])], &[]),
        ],
        ms(100),
    );
    let (r, calls, _) = simulate(&scn);
    assert_eq!(by_name(&r, "client").cpu_time, ms(6));
    // The inner call returns first (at 4ms), then the outer (at 5ms).
    assert_eq!(calls[0].stop, "outer");
    assert_eq!(calls[0].end, Some(Instant::ZERO + ms(5)));
    assert_eq!(calls[1].end, Some(Instant::ZERO + ms(4)));
    assert!(calls.iter().all(|c| c.outcome == Some(CallOutcome::Ok)));
}

#[test]
fn a_client_domain_that_dies_during_a_train_call_ends_the_thread_at_the_return() {
    // `client` lives in `app`; `killer` (its own domain) kills `app` at
    // 1ms, while the client is in the server's 5ms stop.
    let scn = scenario(
        vec![
            thread(
                "client",
                Duration::ZERO,
                vec![call("server", "compute", Via::Train), run(ms(10))],
            ),
            thread("killer", us(1000), vec![Op::Kill("app".into())]),
        ],
        vec![
            domain("app", vec![], &["client"]),
            domain("server", vec![("compute", vec![run(ms(5))])], &[]),
        ],
        ms(100),
    );
    let (r, calls, stranded) = simulate(&scn);
    let client = by_name(&r, "client");
    // The server's work is done (a client fault does not hurt the server);
    // the return finds no valid caller and the thread exits.
    assert_eq!(client.cpu_time, ms(5));
    assert!(client.exit.is_some());
    assert_eq!(
        outcomes(&calls, client.id),
        vec![Some(CallOutcome::CallerGone)]
    );
    assert!(r.log.iter().any(|e| e.text.contains("caller gone")));
    assert!(stranded.is_empty(), "{stranded:?}");
}

#[test]
fn a_dead_intermediate_caller_is_skipped_with_broken_pipe() {
    // home -> mid.relay -> far.work; `mid` dies while the thread is in `far`.
    let scn = scenario(
        vec![
            thread(
                "t",
                Duration::ZERO,
                vec![call("mid", "relay", Via::Train), run(ms(1))],
            ),
            thread("killer", ms(2), vec![Op::Kill("mid".into())]),
        ],
        vec![
            domain(
                "mid",
                vec![(
                    "relay",
                    vec![run(ms(1)), call("far", "work", Via::Train), run(ms(7))],
                )],
                &[],
            ),
            domain("far", vec![("work", vec![run(ms(4))])], &[]),
        ],
        ms(100),
    );
    let (r, calls, stranded) = simulate(&scn);
    let t = by_name(&r, "t");
    // 1ms in mid, 4ms in far, then back home (mid's last 7ms skipped), 1ms.
    assert_eq!(t.cpu_time, ms(6));
    let mine = outcomes(&calls, t.id);
    assert_eq!(
        mine,
        vec![Some(CallOutcome::BrokenPipe), Some(CallOutcome::CallerGone)]
    );
    assert!(r.log.iter().any(|e| e.text.contains("broken pipe")));
    assert!(stranded.is_empty(), "{stranded:?}");
}

/// A server process started by a program, killed, and started again: calls
/// fail while it is not alive, a train inside it when it dies comes home
/// with `server exit`, and the new incarnation serves again. The thread's
/// result counts every outcome.
#[test]
fn a_domain_started_by_a_program_serves_only_while_alive_and_can_be_restarted() {
    let scn = scenario(
        vec![
            thread(
                "client",
                Duration::ZERO,
                vec![Op::Loop {
                    count: Some(10),
                    body: vec![
                        call("svc", "work", Via::Train),
                        Op::Sleep(hsched_model::Dist::Fixed(ms(1))),
                    ],
                }],
            ),
            thread(
                "admin",
                Duration::ZERO,
                vec![
                    Op::Sleep(hsched_model::Dist::Fixed(us(2500))),
                    Op::Create("svc".into()),
                    Op::Sleep(hsched_model::Dist::Fixed(us(4500))),
                    Op::Kill("svc".into()),
                    Op::Create("svc".into()),
                    Op::Create("svc".into()),
                ],
            ),
        ],
        vec![unstarted("svc", vec![("work", vec![run(ms(2))])], &[])],
        ms(100),
    );
    let (r, calls, stranded) = simulate(&scn);
    let client = by_name(&r, "client");
    // 0, 1, 2ms: not alive yet. 3-5ms: served. 6ms: inside when the
    // domain dies at 7ms. From 8ms on, the new incarnation serves.
    let got = outcomes(&calls, client.id);
    use CallOutcome::{Ok as Done, ServerExit};
    assert_eq!(
        got,
        vec![
            Some(ServerExit),
            Some(ServerExit),
            Some(ServerExit),
            Some(Done),
            Some(ServerExit),
            Some(Done),
            Some(Done),
            Some(Done),
            Some(Done),
            Some(Done),
        ]
    );
    assert_eq!(calls[4].end, Some(Instant::ZERO + ms(7)));
    let counts = client.calls;
    assert_eq!((counts.made, counts.ok, counts.server_exit), (10, 6, 4));
    assert_eq!(counts.errors(), 4);
    assert_eq!(by_name(&r, "admin").calls.made, 0);
    // The second create of a live domain is refused and says so.
    assert!(
        r.log.iter().any(|e| e
            .text
            .contains("thread `admin`: create: domain `svc` is already alive")),
        "{:?}",
        r.log
    );
    assert!(stranded.is_empty(), "{stranded:?}");
}

/// A server thread born into a domain that is not alive ends at once (and
/// says why); one that arrives after the domain is started serves it.
#[test]
fn server_threads_live_only_in_a_started_domain() {
    let scn = scenario(
        vec![
            thread("early", Duration::ZERO, vec![Op::Serve("svc".into())]),
            thread("late", ms(2), vec![Op::Serve("svc".into())]),
            thread("admin", ms(1), vec![Op::Create("svc".into())]),
            thread(
                "client",
                ms(3),
                vec![call("svc", "work", Via::Rpc), run(us(100))],
            ),
        ],
        vec![unstarted(
            "svc",
            vec![("work", vec![run(ms(1))])],
            &["early", "late"],
        )],
        ms(20),
    );
    let (r, calls, stranded) = simulate(&scn);
    assert_eq!(by_name(&r, "early").exit, Some(Instant::ZERO));
    assert!(r.log.iter().any(|e| e
        .text
        .contains("thread `early`: its home domain `svc` is not alive")));
    assert_eq!(by_name(&r, "late").cpu_time, ms(1));
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome, Some(CallOutcome::Ok));
    assert_eq!(by_name(&r, "client").calls.ok, 1);
    assert!(stranded.is_empty(), "{stranded:?}");
}

#[test]
fn a_server_domain_that_dies_sends_its_callers_back_with_server_exit() {
    let scn = scenario(
        vec![
            thread(
                "client",
                Duration::ZERO,
                vec![call("server", "compute", Via::Train), run(ms(2))],
            ),
            thread("killer", ms(3), vec![Op::Kill("server".into())]),
        ],
        vec![domain("server", vec![("compute", vec![run(ms(50))])], &[])],
        ms(100),
    );
    let (r, calls, stranded) = simulate(&scn);
    let client = by_name(&r, "client");
    // Round robin shares the CPU from 3ms (killer arrives, runs 0): the
    // client leaves the server at 3ms with 3ms done, then runs its 2ms.
    assert_eq!(client.cpu_time, ms(5));
    assert_eq!(
        outcomes(&calls, client.id),
        vec![Some(CallOutcome::ServerExit)]
    );
    assert_eq!(calls[0].end, Some(Instant::ZERO + ms(3)));
    assert!(stranded.is_empty(), "{stranded:?}");
}

#[test]
fn a_dead_rpc_server_answers_its_clients_and_its_threads_exit() {
    let scn = scenario(
        vec![
            thread("worker", Duration::ZERO, vec![Op::Serve("server".into())]),
            thread(
                "a",
                Duration::ZERO,
                vec![call("server", "compute", Via::Rpc), run(ms(1))],
            ),
            thread(
                "b",
                Duration::ZERO,
                vec![call("server", "compute", Via::Rpc), run(ms(1))],
            ),
            thread("killer", ms(5), vec![Op::Kill("server".into())]),
        ],
        vec![domain(
            "server",
            vec![("compute", vec![run(ms(20))])],
            &["worker"],
        )],
        ms(100),
    );
    let (r, calls, stranded) = simulate(&scn);
    assert!(by_name(&r, "worker").exit.is_some());
    for name in ["a", "b"] {
        let t = by_name(&r, name);
        // One was being served, one was queued: both answered, both go on.
        assert_eq!(outcomes(&calls, t.id), vec![Some(CallOutcome::ServerExit)]);
        assert_eq!(t.cpu_time, ms(1));
        assert!(t.exit.is_some());
    }
    // A call to the dead domain fails at once.
    assert!(stranded.is_empty(), "{stranded:?}");
}

// ---- property: random programs, random kills ----

const DOMAINS: [&str; 3] = ["d0", "d1", "d2"];

fn arb_op(depth: u32) -> BoxedStrategy<Op> {
    let leaf = prop_oneof![
        (1u64..3000).prop_map(|n| run(us(n))),
        (1u64..3000).prop_map(|n| Op::Sleep(hsched_model::Dist::Fixed(us(n)))),
        (0usize..3, 0usize..2, any::<bool>()).prop_map(|(d, s, train)| call(
            DOMAINS[d],
            ["s0", "s1"][s],
            if train { Via::Train } else { Via::Rpc }
        )),
        (0usize..3).prop_map(|d| Op::Kill(DOMAINS[d].into())),
        (0usize..3).prop_map(|d| Op::Create(DOMAINS[d].into())),
        Just(Op::Kill("c1".into())),
    ];
    if depth == 0 {
        leaf.boxed()
    } else {
        prop_oneof![
            4 => leaf,
            1 => (1u64..4, prop::collection::vec(arb_op(depth - 1), 1..4)).prop_map(|(n, mut body)| {
                body.push(run(us(50)));
                Op::Loop { count: Some(n), body }
            }),
        ]
        .boxed()
    }
}

fn arb_body() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(arb_op(1), 1..5).prop_map(|mut ops| {
        ops.push(run(us(200)));
        ops
    })
}

prop_compose! {
    fn arb_scenario()(
        stops in prop::collection::vec(arb_body(), 6),
        clients in prop::collection::vec((prop::collection::vec(arb_op(1), 1..6), 0u64..5), 1..4),
        servers in prop::collection::vec(0usize..3, 0..4),
        kill_at in prop::option::of((0usize..3, 1u64..40)),
        create_at in prop::option::of((0usize..3, 1u64..40)),
        started in prop::collection::vec(any::<bool>(), 3),
        exit_in in any::<bool>(),
    ) -> Scenario {
        let mut script: Vec<ScriptEvent> = (0..3)
            .map(|d| {
                let stops = vec![("s0", stops[2 * d].clone()), ("s1", stops[2 * d + 1].clone())];
                if started[d] { domain(DOMAINS[d], stops, &[]) } else { unstarted(DOMAINS[d], stops, &[]) }
            })
            .collect();
        let mut threads = Vec::new();
        for (i, d) in servers.iter().enumerate() {
            let name = format!("srv{i}");
            if let Action::Domain(spec) = &mut script[*d].action {
                spec.members.push(name.clone());
            }
            threads.push(thread(&name, Duration::ZERO, vec![Op::Serve(DOMAINS[*d].into())]));
        }
        for (i, (mut ops, at)) in clients.into_iter().enumerate() {
            if exit_in && i == 0 {
                ops.insert(ops.len() / 2, Op::Exit);
            }
            threads.push(thread(&format!("c{i}"), ms(at), ops));
        }
        if let Some((d, at)) = kill_at {
            script.push(ScriptEvent { at: Instant::ZERO + ms(at), action: Action::Kill(DOMAINS[d].into()) });
        }
        if let Some((d, at)) = create_at {
            script.push(ScriptEvent { at: Instant::ZERO + ms(at), action: Action::Create(DOMAINS[d].into()) });
        }
        script.sort_by_key(|e| e.at);
        scenario(threads, script, ms(60))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_calls_kills_and_creates_never_strand_a_thread_or_lose_a_call(scn in arb_scenario()) {
        let (r, calls, stranded) = simulate(&scn);
        // Every thread runs in a live domain, has exited, or waits for an
        // answer someone alive will give (a queued request of a live
        // domain, or one a live server thread is serving).
        prop_assert!(stranded.is_empty(), "{:?}", stranded);
        // No call is lost: each returned (with results or an error) or is
        // still open on a thread that has not exited.
        for c in &calls {
            if c.outcome.is_none() {
                let t = &r.threads[c.thread.index()];
                prop_assert!(t.exit.is_none(), "call {:?} lost by exited `{}`", c, t.name);
            } else {
                prop_assert!(c.end.is_some_and(|e| e >= c.start));
            }
        }
        // Each thread's counts agree with the call records.
        for t in &r.threads {
            let mine: Vec<_> = calls.iter().filter(|c| c.thread == t.id).collect();
            prop_assert_eq!(t.calls.made, mine.len() as u64);
            let ended = mine.iter().filter(|c| c.outcome.is_some()).count() as u64;
            prop_assert_eq!(t.calls.ok + t.calls.errors(), ended);
            let ok = mine.iter().filter(|c| c.outcome == Some(CallOutcome::Ok)).count() as u64;
            prop_assert_eq!(t.calls.ok, ok);
        }
        // The CPU's time is all accounted for (the simulator's own check).
        let busy: Duration = r.threads.iter().map(|t| t.cpu_time).fold(Duration::ZERO, |a, b| a + b);
        prop_assert!(busy <= scn.horizon);
    }
}
