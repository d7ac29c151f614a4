//! Helpers shared by the simulator's end-to-end tests.
#![allow(dead_code)] // each test file uses its own subset

use hsched_core::{Duration, Instant, Params, ThreadId, Value};
use hsched_model::{
    Dist, LogEntry, LogKind, Machine, Op, Program, RunResult, Scenario, SchedulerSpec, ScriptEvent,
    ThreadSpec,
};
use hsched_sim::{run, SimOptions};

/// Runs `scn` with every invariant checked and the trace recorded, and
/// fails the test if anything was ejected or starved.
pub fn go(scn: &Scenario) -> RunResult {
    let opts = SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    };
    let r = run(scn, &opts).unwrap();
    let bad: Vec<_> = r
        .log
        .iter()
        .filter(|e| matches!(e.kind, LogKind::Eject | LogKind::Watchdog))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    r
}

/// The replies to thread `name`'s messages, in order.
pub fn replies<'a>(r: &'a RunResult, name: &str) -> Vec<&'a LogEntry> {
    let prefix = format!("`{name}` ->");
    r.log
        .iter()
        .filter(|e| {
            matches!(e.kind, LogKind::Reply | LogKind::Refused) && e.text.starts_with(&prefix)
        })
        .collect()
}

/// The id of thread `name`.
pub fn tid(r: &RunResult, name: &str) -> ThreadId {
    r.threads.iter().find(|t| t.name == name).unwrap().id
}

/// A random workload program for property tests, from two random numbers:
/// with `sleeps`, bursts of 1 to 1 + a%30 ms each followed by a sleep of
/// 1 to 1 + b%30 ms; without, bursts of 100 to 999 µs each followed by a
/// yield. Both loop forever.
pub fn bursts(sleeps: bool, a: u64, b: u64) -> Vec<Op> {
    let ms = Duration::from_millis;
    let body = if sleeps {
        vec![
            Op::Run(Dist::Uniform {
                min: ms(1),
                max: ms(1 + a % 30),
            }),
            Op::Sleep(Dist::Uniform {
                min: ms(1),
                max: ms(1 + b % 30),
            }),
        ]
    } else {
        vec![
            Op::Run(Dist::Fixed(Duration::from_micros(100 + a % 900))),
            Op::Yield,
        ]
    };
    vec![Op::Loop { count: None, body }]
}

/// A thread under `fp` at priority `prio`, arriving at time zero.
pub fn fp_thread(name: &str, prio: i64, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: "fp".into(),
        params: Params::new().with("prio", Value::Int(prio)),
        arrival: Instant::ZERO,
        program: Program::new(ops),
        needs: None,
    }
}

/// `threads` under one `fp` root on one CPU (no switch cost, no tick),
/// seed 1.
pub fn under_fp(
    name: &str,
    horizon: Duration,
    threads: Vec<ThreadSpec>,
    script: Vec<ScriptEvent>,
) -> Scenario {
    Scenario {
        name: name.into(),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon,
        seed: 1,
        schedulers: vec![SchedulerSpec {
            name: "fp".into(),
            policy: "fp".into(),
            params: Params::new(),
            parents: vec![],
        }],
        default_scheduler: "fp".into(),
        threads,
        script,
    }
}
