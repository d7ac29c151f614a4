//! Scenarios built in code, for benchmarks and tests: many CPU-bound
//! threads under a chain of schedulers, and the Rialto paper's workloads.

use hsched_core::{Duration, Instant, Msg, Params, Value};
use hsched_model::{
    Dist, Machine, Op, ParentLink, Program, Scenario, SchedulerSpec, Target, ThreadSpec,
};

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
    let forever = Program::new(vec![Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(3600)))],
    }]);
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
                needs: None,
            })
            .collect(),
        script: vec![],
    }
}

/// `threads` threads under one `rialto` (the root), each in an activity of
/// its own: four of them reserve (1ms/10ms, 2ms/20ms, 4ms/40ms, 8ms/80ms),
/// one runs a 5ms time constraint due within 40ms every 50ms, the rest are
/// CPU-bound and share the free time round robin. The graph and the
/// constraints stay the same whatever `threads` is (at least 5), so the
/// cost of a decision can be compared across thread counts.
pub fn rialto(threads: usize, horizon: Duration) -> Scenario {
    assert!(threads >= 5, "four reserving threads and a constrained one");
    let ms = Duration::from_millis;
    let mut scn = flat(threads, 1, "rialto", Params::new(), horizon);
    scn.name = format!("rialto-{threads}");
    let msg = |m: Msg| Op::Msg {
        to: Target::Parent,
        msg: m,
    };
    for (i, (amount, period)) in [(1, 10), (2, 20), (4, 40), (8, 80)].into_iter().enumerate() {
        let reserve = Msg::new("reserve")
            .arg("amount", Value::Duration(ms(amount)))
            .arg("period", Value::Duration(ms(period)));
        scn.threads[i].program.ops.insert(0, msg(reserve));
    }
    let begin = Msg::new("begin_constraint")
        .arg("estimate", Value::Duration(ms(5)))
        .arg("deadline", Value::Duration(ms(40)))
        .arg("relative", Value::Bool(true));
    scn.threads[4].program.ops = vec![Op::Periodic {
        period: ms(50),
        deadline: ms(40),
        offset: Duration::ZERO,
        jobs: None,
        body: vec![
            msg(begin),
            Op::Run(Dist::Fixed(ms(5))),
            msg(Msg::new("end_constraint")),
        ],
    }];
    scn
}

/// The periods of the Rialto paper's Fig. 5-1 sequence of 400us
/// reservations (§5.1): "1s, 1s, 500ms, 1s, 500ms, 250ms, 1s, 500ms,
/// 250ms, 125ms, etc.", that is group `k` (from 1) reserves at 1s, 1s/2,
/// ..., 1s/2^(k-1). Fig. 5-2 speaks of the 58 activities of that graph:
/// ten whole groups (55) and the first three of the eleventh.
pub fn rialto_fig_5_1_periods() -> Vec<Duration> {
    (1..=11u32)
        .flat_map(|k| (0..k).map(|j| Duration(1_000_000_000 >> j)))
        .take(58)
        .collect()
}
