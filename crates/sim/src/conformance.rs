//! The conformance suite: the checks every policy must pass, in several
//! hierarchy shapes, on one and several CPUs, with varied workloads and
//! hierarchy changes. `crates/sim/tests/conformance.rs` runs it against
//! every registered policy (a policy added to the registry joins
//! automatically); [`conforms`] runs it against any other policy, such as
//! one loaded from a plugin, given the policies the scenarios may name
//! beyond the registry.
//!
//! The catalogue (each check is tagged in its failure message):
//! - \[C1\] one thread per CPU: no CPU runs two threads, no thread runs on two CPUs;
//! - \[C2\] a thread runs only while it and every scheduler above it hold a
//!   grant (the dispatcher's structural check, after every event);
//! - \[C3\] exact accounting: busy + context-switch overhead + idle = horizon
//!   on every CPU, and thread CPU times add up to the busy time;
//! - \[C4\] the protocol holds: no scheduler is ejected (no invalid decision,
//!   no panic, no livelock);
//! - \[C5\] `check_invariants` holds after every callback;
//! - \[C6\] determinism: the same scenario and seed give the same timeline;
//! - \[C7\] nothing is lost: at the end every thread has exited or is attached
//!   to a scheduler that is still in the hierarchy, whatever was loaded,
//!   moved and unloaded in between.
//!
//! The checks panic with the tag of the one that failed: they are meant to
//! run inside tests.

use crate::{run_with_policies, SimOptions};
use hsched_core::{Duration, Instant, ParamKind, ParamSpec, Params, PolicyInfo, Value};
use hsched_model::{
    Action, Dist, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec,
    ScriptEvent, SegmentKind, ThreadSpec,
};

/// Every check on `info`: as the root on 1 and 3 CPUs, in the middle of a
/// hierarchy that changes while threads run on 1 and 2 CPUs (no script
/// step may be refused), and with a 1ms tick. `extra`: policies beyond the
/// registry that the scenarios may name (`info` itself if it is not
/// registered).
pub fn conforms(info: &'static PolicyInfo, extra: &[&'static PolicyInfo]) {
    for cpus in [1, 3] {
        check(
            &as_root(info, cpus, extra),
            extra,
            &format!("{} as root on {cpus} CPU(s)", info.name),
        );
    }
    for cpus in [1, 2] {
        conforms_in_the_middle(info, cpus, extra);
    }
    let mut scn = in_middle(info, 2, extra);
    scn.machine.tick = Some(ms(1));
    check(&scn, extra, &format!("{} with a 1ms tick", info.name));
}

/// The in-the-middle check, and that no script step was refused.
pub fn conforms_in_the_middle(info: &'static PolicyInfo, cpus: u32, extra: &[&'static PolicyInfo]) {
    let r = check(
        &in_middle(info, cpus, extra),
        extra,
        &format!("{} in the middle on {cpus} CPU(s)", info.name),
    );
    let script: Vec<_> = r
        .log
        .iter()
        .filter(|e| e.kind == LogKind::Refused)
        .collect();
    assert!(
        script.is_empty(),
        "{}: script steps refused: {script:#?}",
        info.name
    );
}

/// Parameters for an example instance: declared defaults, and a plausible
/// value for each required parameter.
fn example_params(specs: &[ParamSpec]) -> Params {
    let mut p = Params::new();
    for spec in specs.iter().filter(|s| s.default.is_none()) {
        let v = match spec.kind {
            ParamKind::Bool => Value::Bool(false),
            ParamKind::Int { min, max } => Value::Int(1.clamp(min, max)),
            ParamKind::Duration { min } => Value::Duration(min.max(Duration::from_millis(10))),
            ParamKind::Str => Value::Str(String::new()),
            ParamKind::Rate { .. } => Value::Str("1".into()),
        };
        p.set(spec.name, v);
    }
    p
}

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}
fn us(x: u64) -> Duration {
    Duration::from_micros(x)
}

/// A varied mix of workloads, `n` threads.
fn workload_threads(n: usize, parent: &str, params: &Params) -> Vec<ThreadSpec> {
    let programs = [
        // CPU-bound with variable bursts.
        vec![Op::Loop {
            count: None,
            body: vec![Op::Run(Dist::Uniform {
                min: ms(1),
                max: ms(20),
            })],
        }],
        // Interactive: think, then a short burst.
        vec![Op::Loop {
            count: None,
            body: vec![
                Op::Sleep(Dist::Exponential {
                    mean: ms(5),
                    max: ms(50),
                }),
                Op::Run(Dist::Uniform {
                    min: us(100),
                    max: ms(2),
                }),
            ],
        }],
        // Periodic media-like job.
        vec![Op::Periodic {
            period: ms(10),
            deadline: ms(10),
            offset: Duration::ZERO,
            jobs: None,
            body: vec![Op::Run(Dist::Normal {
                mean: ms(2),
                sd: us(500),
                min: us(500),
                max: ms(4),
            })],
        }],
        // Lock users.
        vec![Op::Loop {
            count: None,
            body: vec![
                Op::Run(Dist::Fixed(ms(1))),
                Op::Lock("m".into()),
                Op::Run(Dist::Fixed(us(500))),
                Op::Unlock("m".into()),
                Op::Sleep(Dist::Fixed(ms(2))),
            ],
        }],
        // Yielder.
        vec![Op::Loop {
            count: None,
            body: vec![Op::Run(Dist::Fixed(us(300))), Op::Yield],
        }],
        // Short-lived.
        vec![
            Op::Run(Dist::Fixed(ms(5))),
            Op::Sleep(Dist::Fixed(ms(3))),
            Op::Run(Dist::Fixed(ms(5))),
        ],
    ];
    (0..n)
        .map(|i| ThreadSpec {
            name: format!("w{i}"),
            parent: parent.into(),
            params: params.clone(),
            arrival: Instant::ZERO + ms(7 * (i as u64 % 3)),
            program: Program::new(programs[i % programs.len()].clone()),
            needs: None,
        })
        .collect()
}

fn sched(name: &str, info: &PolicyInfo, parents: Vec<ParentLink>) -> SchedulerSpec {
    SchedulerSpec {
        name: name.into(),
        policy: info.name.into(),
        params: example_params(&(info.params)()),
        parents,
    }
}

fn link(parent: &str, vps: u32, params: Params) -> ParentLink {
    ParentLink {
        parent: parent.into(),
        vps,
        params,
    }
}

fn find(name: &str, extra: &[&'static PolicyInfo]) -> &'static PolicyInfo {
    hsched_policies::find(name)
        .or_else(|| extra.iter().copied().find(|p| p.name == name))
        .unwrap_or_else(|| panic!("the conformance suite needs `{name}`"))
}

/// The policy as the root of the hierarchy.
pub fn as_root(info: &'static PolicyInfo, cpus: u32, extra: &[&'static PolicyInfo]) -> Scenario {
    let mut schedulers = vec![sched("p", info, vec![])];
    let threads_under = if info.max_children >= 6 {
        "p".to_string()
    } else {
        let child_params = example_params(&(info.child_params)());
        let vps = cpus.min(info.max_children);
        schedulers.push(sched(
            "inner",
            find("rr", extra),
            vec![link("p", vps, child_params)],
        ));
        "inner".to_string()
    };
    let thread_params =
        example_params(&(find_policy(&threads_under, &schedulers, extra).child_params)());
    base(
        info,
        cpus,
        schedulers,
        &threads_under,
        thread_params,
        threads_under.clone(),
    )
}

fn find_policy(
    name: &str,
    schedulers: &[SchedulerSpec],
    extra: &[&'static PolicyInfo],
) -> &'static PolicyInfo {
    find(
        &schedulers.iter().find(|s| s.name == name).unwrap().policy,
        extra,
    )
}

/// The policy in the middle: fp root over it (high priority) and a
/// background rr (low), which is also the default scheduler. A policy that
/// takes several parents hangs under both.
pub fn in_middle(info: &'static PolicyInfo, cpus: u32, extra: &[&'static PolicyInfo]) -> Scenario {
    let fp = find("fp", extra);
    let rr = find("rr", extra);
    let hi = Params::new().with("prio", Value::Int(10));
    let child_params = example_params(&(info.child_params)());
    let mut schedulers = vec![
        sched("root", fp, vec![]),
        sched("bg", rr, vec![link("root", cpus, Params::new())]),
    ];
    let parents = if info.max_parents > 1 {
        vec![link("root", cpus, hi), link("bg", 1, Params::new())]
    } else {
        vec![link("root", cpus, hi)]
    };
    schedulers.push(sched("p", info, parents));
    let threads_under = if info.max_children >= 6 {
        "p".to_string()
    } else {
        let vps = cpus.min(info.max_children);
        schedulers.push(sched(
            "inner",
            rr,
            vec![link("p", vps, child_params.clone())],
        ));
        "inner".to_string()
    };
    let thread_params =
        example_params(&(find_policy(&threads_under, &schedulers, extra).child_params)());
    let mut scn = base(
        info,
        cpus,
        schedulers,
        &threads_under,
        thread_params,
        "bg".into(),
    );
    // Hierarchy changes while threads run: a second instance is loaded,
    // a thread moves into it and back, and the instance is unloaded.
    let mut second = sched(
        "p2",
        info,
        vec![link(
            "root",
            cpus,
            Params::new().with("prio", Value::Int(5)),
        )],
    );
    if info.max_parents > 1 {
        second.parents.push(link("bg", 1, Params::new()));
    }
    let target = if info.max_children >= 6 { "p2" } else { "bg" };
    scn.script = vec![
        ScriptEvent {
            at: Instant::ZERO + ms(40),
            action: Action::Load(second),
        },
        ScriptEvent {
            at: Instant::ZERO + ms(60),
            action: Action::Move {
                thread: "w0".into(),
                to: target.into(),
                params: example_params(&(find_policy_in(target, info, extra).child_params)()),
            },
        },
        ScriptEvent {
            at: Instant::ZERO + ms(90),
            action: Action::Move {
                thread: "w1".into(),
                to: target.into(),
                params: example_params(&(find_policy_in(target, info, extra).child_params)()),
            },
        },
        ScriptEvent {
            at: Instant::ZERO + ms(120),
            action: Action::Unload("p2".into()),
        },
    ];
    scn
}

fn find_policy_in(
    target: &str,
    info: &'static PolicyInfo,
    extra: &[&'static PolicyInfo],
) -> &'static PolicyInfo {
    if target == "p2" {
        info
    } else {
        find("rr", extra)
    }
}

fn base(
    info: &PolicyInfo,
    cpus: u32,
    schedulers: Vec<SchedulerSpec>,
    threads_under: &str,
    thread_params: Params,
    default: String,
) -> Scenario {
    Scenario {
        name: format!("conformance-{}", info.name),
        description: String::new(),
        machine: Machine {
            cpus,
            context_switch: us(5),
            tick: None,
            watchdog: None,
        },
        horizon: ms(300),
        seed: 11,
        schedulers,
        default_scheduler: default,
        threads: workload_threads(8, threads_under, &thread_params),
        script: vec![],
    }
}

/// Runs `scn` with every check on; panics naming the check that failed
/// and `tag`. `extra`: policies beyond the registry that `scn` names.
pub fn check(scn: &Scenario, extra: &[&'static PolicyInfo], tag: &str) -> RunResult {
    let opts = SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    };
    let r = run_with_policies(scn, &opts, extra)
        .unwrap_or_else(|e| panic!("{tag}: the scenario does not load: {e}"));
    // [C4], [C5]: invariant failures and protocol breaches end in ejection.
    let ejections: Vec<_> = r.log.iter().filter(|e| e.kind == LogKind::Eject).collect();
    assert!(ejections.is_empty(), "[C4/C5] {tag}: {ejections:#?}");
    // [C3]
    let horizon = scn.horizon;
    let mut busy = Duration::ZERO;
    for c in &r.cpu_stats {
        assert_eq!(
            c.busy + c.overhead + c.interrupt + c.idle,
            horizon,
            "[C3] {tag}: {}",
            c.cpu
        );
        busy += c.busy;
    }
    let used: u64 = r.threads.iter().map(|t| t.cpu_time.as_nanos()).sum();
    assert_eq!(
        Duration(used),
        busy,
        "[C3] {tag}: thread times vs busy time"
    );
    // [C1]: the timeline tiles each CPU, and no thread is on two CPUs at once.
    let trace = r.trace.as_ref().unwrap();
    let mut runs: Vec<(Instant, Instant, u32, u32)> = Vec::new();
    for cpu in 0..scn.machine.cpus {
        let mut at = Instant::ZERO;
        for s in trace.segments.iter().filter(|s| s.cpu.0 == cpu) {
            assert_eq!(
                s.start, at,
                "[C1] {tag}: cpu{cpu} timeline has a gap or overlap"
            );
            at = s.end;
            if let SegmentKind::Run(t) | SegmentKind::Switch(t) = s.what {
                runs.push((s.start, s.end, t.0, cpu));
            }
        }
        assert_eq!(
            at,
            Instant::ZERO + horizon,
            "[C1] {tag}: cpu{cpu} timeline ends early"
        );
    }
    runs.sort();
    for t in 0..r.threads.len() as u32 {
        let mine: Vec<_> = runs.iter().filter(|r| r.2 == t).collect();
        for w in mine.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "[C1] {tag}: thread {t} on two CPUs at once: {w:?}"
            );
        }
    }
    // [C7]
    for t in &r.threads {
        if t.exit.is_none() {
            let home = r.nodes.iter().find(|n| n.name == t.scheduler);
            assert!(
                home.is_some_and(|n| n.alive),
                "[C7] {tag}: thread {} ended under `{}`, which is gone",
                t.name,
                t.scheduler
            );
        }
    }
    // [C6]
    let again = run_with_policies(scn, &opts, extra).unwrap();
    assert_eq!(
        format!("{:?}", again.trace),
        format!("{:?}", r.trace),
        "[C6] {tag}: the same scenario and seed gave another timeline"
    );
    r
}

/// After a policy was ejected or unloaded: every thread did all of its
/// `work` (nothing lost, nothing counted twice), exited, and ended under
/// `default`, the scheduler threads fall back to.
pub fn assert_all_work_done_under(r: &RunResult, work: Duration, default: &str) {
    for t in &r.threads {
        assert_eq!(t.cpu_time, work, "thread {} did all its work", t.name);
        assert!(t.exit.is_some(), "thread {} finished", t.name);
        assert_eq!(
            t.scheduler, default,
            "thread {} ended under the default scheduler",
            t.name
        );
    }
}
