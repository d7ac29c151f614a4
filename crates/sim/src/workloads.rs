//! Scenarios built in code, for benchmarks and tests: many CPU-bound
//! threads under a chain of schedulers.

use hsched_core::{Duration, Instant, Params, Value};
use hsched_model::{Dist, Machine, Op, ParentLink, Program, Scenario, SchedulerSpec, ThreadSpec};

/// `threads` CPU-bound threads at the bottom of a chain of `levels` `rr`
/// schedulers with the same `quantum`, each the only child of the one above;
/// every instance has one VP per CPU. All horizons expire together, so every
/// decision descends the whole chain from the root: the worst case for the
/// cost of depth.
pub fn cpu_bound(
    threads: usize,
    levels: usize,
    cpus: u32,
    quantum: Duration,
    horizon: Duration,
) -> Scenario {
    let rr = (
        "rr",
        Params::new().with("quantum", Value::Duration(quantum)),
    );
    chain(threads, levels, cpus, rr, horizon)
}

/// `threads` CPU-bound threads under one instance of `policy` with `params`
/// (the root), e.g. to time a policy's decisions.
pub fn flat(
    threads: usize,
    cpus: u32,
    policy: &str,
    params: Params,
    horizon: Duration,
) -> Scenario {
    chain(threads, 1, cpus, (policy, params), horizon)
}

/// A chain of `levels` instances of one policy, threads at the bottom.
fn chain(
    threads: usize,
    levels: usize,
    cpus: u32,
    (policy, params): (&str, Params),
    horizon: Duration,
) -> Scenario {
    assert!(levels >= 1);
    let mut schedulers = Vec::new();
    for level in 0..levels {
        let name = if level + 1 == levels {
            policy.to_string()
        } else {
            format!("{policy}{level}")
        };
        let parents = if level == 0 {
            vec![]
        } else {
            vec![ParentLink {
                parent: schedulers
                    .last()
                    .map(|s: &SchedulerSpec| s.name.clone())
                    .unwrap(),
                vps: cpus,
                params: Params::new(),
            }]
        };
        schedulers.push(SchedulerSpec {
            name,
            policy: policy.to_string(),
            params: params.clone(),
            parents,
        });
    }
    let leaf = policy.to_string();
    let forever = Program {
        ops: vec![Op::Loop {
            count: None,
            body: vec![Op::Run(Dist::Fixed(Duration::from_secs(3600)))],
        }],
    };
    Scenario {
        name: format!("cpu-bound-{policy}-{threads}x{levels}"),
        description: String::new(),
        machine: Machine {
            cpus,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon,
        seed: 1,
        schedulers,
        default_scheduler: leaf.clone(),
        threads: (0..threads)
            .map(|i| ThreadSpec {
                name: format!("t{i}"),
                parent: leaf.clone(),
                params: Params::new(),
                arrival: Instant::ZERO,
                program: forever.clone(),
            })
            .collect(),
        script: vec![],
    }
}
