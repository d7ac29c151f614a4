//! Inheritance carried by the simulator's own mutexes, without messages:
//! priority inheritance in `fp` and `rm` for mutexes declared
//! `protocol = "inherit"` (the classic three-thread unbounded priority
//! inversion, avoided), and none for mutexes with the default protocol;
//! an RPC server runs at its caller's priority while it serves the call.

use hsched_core::{Duration, Instant, MutexProtocol, Params, Value};
use hsched_model::{
    Action, Dist, DomainSpec, Machine, MutexSpec, Op, Program, RunResult, Scenario, SchedulerSpec,
    ScriptEvent, StopSpec, ThreadSpec, Via,
};

mod common;
use common::go;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Instant {
    Instant::ZERO + ms(x)
}

fn run(d: Duration) -> Op {
    Op::Run(Dist::Fixed(d))
}

fn thread(name: &str, params: Params, arrival: Instant, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: "top".into(),
        params,
        arrival,
        program: Program::new(ops),
        needs: None,
    }
}

/// The classic case on one CPU: `low` locks `m` at 0 for a 30ms critical
/// section; `high` arrives at 10 and needs `m` for 5ms; `medium` arrives
/// at 15 and is CPU-bound for 100ms, needing no mutex. `rank` gives each
/// its attachment parameters, high to low.
fn inversion(policy: &str, rank: [Params; 3], protocol: MutexProtocol) -> Scenario {
    let [high, medium, low] = rank;
    let critical = |d| {
        vec![
            Op::Lock("m".into()),
            run(d),
            Op::Unlock("m".into()),
            Op::Exit,
        ]
    };
    Scenario {
        name: "inversion".into(),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon: ms(300),
        seed: 1,
        default_scheduler: "top".into(),
        schedulers: vec![SchedulerSpec {
            name: "top".into(),
            policy: policy.into(),
            params: Params::new(),
            parents: vec![],
        }],
        threads: vec![
            thread("low", low, at(0), critical(ms(30))),
            thread("high", high, at(10), critical(ms(5))),
            thread("medium", medium, at(15), vec![run(ms(100)), Op::Exit]),
        ],
        script: vec![ScriptEvent {
            at: Instant::ZERO,
            action: Action::Mutex(MutexSpec {
                name: "m".into(),
                protocol,
            }),
        }],
    }
}

fn exit(r: &RunResult, name: &str) -> Instant {
    let t = r.threads.iter().find(|t| t.name == name).unwrap();
    t.exit.unwrap_or_else(|| panic!("{name} did not finish"))
}

fn prio(p: i64) -> Params {
    Params::new().with("prio", Value::Int(p))
}

fn period(p: u64) -> Params {
    Params::new().with("period", Value::Duration(ms(p)))
}

fn fp() -> [Params; 3] {
    [prio(10), prio(5), prio(1)]
}

fn rm() -> [Params; 3] {
    [period(50), period(100), period(200)]
}

/// Without inheritance: low runs 0-10 (10ms of its section), high
/// preempts at 10 and blocks on `m`, low runs 10-15, medium preempts it at
/// 15 and runs its whole 100ms, 15-115; low finishes its section 115-130
/// and unlocks; high runs 130-135. High waits for medium's whole run: its
/// response time, 125ms, grows with medium's.
#[test]
fn without_the_protocol_high_waits_for_mediums_whole_run() {
    for (policy, rank) in [("fp", fp()), ("rm", rm())] {
        let r = go(&inversion(policy, rank, MutexProtocol::None));
        assert_eq!(exit(&r, "medium"), at(115), "{policy}");
        assert_eq!(exit(&r, "low"), at(130), "{policy}");
        assert_eq!(exit(&r, "high"), at(135), "{policy}");
    }
}

/// With `protocol = "inherit"`: high blocks at 10 and low runs at high's
/// priority, so medium (arriving at 15) does not preempt it; low finishes
/// its section 10-30 and unlocks, falling back to its own priority; high
/// runs 30-35; medium 35-135, low's last instant after. High's blocking is
/// the rest of low's section (20ms): response time 25ms, whatever medium
/// does.
#[test]
fn with_priority_inheritance_high_blocks_only_for_lows_critical_section() {
    for (policy, rank) in [("fp", fp()), ("rm", rm())] {
        let r = go(&inversion(policy, rank, MutexProtocol::Inherit));
        assert_eq!(exit(&r, "high"), at(35), "{policy}");
        assert_eq!(exit(&r, "medium"), at(135), "{policy}");
    }
}

/// Transitive: `low` holds `a`; `mid` (priority 5) holds `b` and blocks
/// on `a`; `high` blocks on `b`. Low must run at high's priority through
/// mid, ahead of `other` (priority 7, CPU-bound from 3ms). Low holds `a`
/// from 0 for 10ms; mid arrives at 1, locks `b`, blocks on `a` (low now
/// at 5); high arrives at 2, blocks on `b` (low now at 10); other arrives
/// at 3 and waits. Low finishes at 10, mid takes `a` at 10 (at high's
/// priority), runs 2ms, unlocks `a` and `b` at 12; high runs 12-14.
#[test]
fn inheritance_follows_a_chain_of_holders() {
    let ops = |pre: Vec<Op>, d, post: Vec<Op>| {
        let mut v = pre;
        v.push(run(d));
        v.extend(post);
        v.push(Op::Exit);
        v
    };
    let mut scn = inversion("fp", fp(), MutexProtocol::Inherit);
    scn.threads = vec![
        thread(
            "low",
            prio(1),
            at(0),
            ops(
                vec![Op::Lock("a".into())],
                ms(10),
                vec![Op::Unlock("a".into())],
            ),
        ),
        thread(
            "mid",
            prio(5),
            at(1),
            ops(
                vec![Op::Lock("b".into()), Op::Lock("a".into())],
                ms(2),
                vec![Op::Unlock("a".into()), Op::Unlock("b".into())],
            ),
        ),
        thread(
            "high",
            prio(10),
            at(2),
            ops(
                vec![Op::Lock("b".into())],
                ms(2),
                vec![Op::Unlock("b".into())],
            ),
        ),
        thread("other", prio(7), at(3), vec![run(ms(50)), Op::Exit]),
    ];
    scn.script = ["a", "b"]
        .into_iter()
        .map(|m| ScriptEvent {
            at: Instant::ZERO,
            action: Action::Mutex(MutexSpec {
                name: m.into(),
                protocol: MutexProtocol::Inherit,
            }),
        })
        .collect();
    let r = go(&scn);
    assert_eq!(exit(&r, "low"), at(10));
    assert_eq!(exit(&r, "mid"), at(12));
    assert_eq!(exit(&r, "high"), at(14));
    assert_eq!(exit(&r, "other"), at(64));
}

/// A call lends the caller's priority to the RPC server, as a train would
/// run the call at the caller's own priority: `server` (lowest) serves
/// domain `svc`, whose stop runs 5ms; `medium` arrives at 5 and is
/// CPU-bound for 100ms; `high` arrives at 10 and calls the stop. The server
/// takes the call at 10 and, at `high`'s priority, preempts `medium`: the
/// reply comes at 15 and `high` exits then; `medium` loses those 5ms and
/// exits at 110. (Without the loan the server would wait for `medium`'s
/// whole run: the reply at 110.)
#[test]
fn an_rpc_server_runs_at_its_callers_priority_while_it_serves() {
    for (policy, [high, medium, low]) in [("fp", fp()), ("rm", rm())] {
        let mut scn = inversion(
            policy,
            [high.clone(), medium.clone(), low.clone()],
            MutexProtocol::None,
        );
        scn.threads = vec![
            thread("server", low, at(0), vec![Op::Serve("svc".into())]),
            thread("medium", medium, at(5), vec![run(ms(100)), Op::Exit]),
            thread(
                "high",
                high,
                at(10),
                vec![
                    Op::Call {
                        domain: "svc".into(),
                        stop: "work".into(),
                        via: Via::Rpc,
                    },
                    Op::Exit,
                ],
            ),
        ];
        scn.script = vec![ScriptEvent {
            at: Instant::ZERO,
            action: Action::Domain(DomainSpec {
                name: "svc".into(),
                stops: vec![StopSpec {
                    name: "work".into(),
                    body: vec![run(ms(5))],
                }],
                members: vec!["server".into()],
                start: true,
            }),
        }];
        let r = go(&scn);
        assert_eq!(exit(&r, "high"), at(15), "{policy}");
        assert_eq!(exit(&r, "medium"), at(110), "{policy}");
    }
}
