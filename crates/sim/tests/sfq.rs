//! `sfq` end to end: weighted shares, hierarchical shares, the `warp`
//! message sent by a thread, the fairness bound on random workloads.

use hsched_core::{Duration, Instant, Msg, Params, Value};
use hsched_model::{
    Dist, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec,
    SegmentKind, Target, ThreadSpec,
};
use proptest::prelude::*;

mod common;
use common::go;

const Q: Duration = Duration::from_millis(10);

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn forever() -> Vec<Op> {
    vec![Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(100)))],
    }]
}

fn weight(w: i64) -> Params {
    Params::new().with("weight", Value::Int(w))
}

fn thread(name: &str, parent: &str, params: Params, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: parent.into(),
        params,
        arrival: Instant::ZERO,
        program: Program::new(ops),
        needs: None,
    }
}

fn sched(name: &str, policy: &str, parent: Option<(&str, Params)>) -> SchedulerSpec {
    SchedulerSpec {
        name: name.into(),
        policy: policy.into(),
        params: Params::new(),
        parents: parent
            .map(|(p, params)| {
                vec![ParentLink {
                    parent: p.into(),
                    vps: 1,
                    params,
                }]
            })
            .unwrap_or_default(),
    }
}

fn scenario(
    cpus: u32,
    horizon: Duration,
    schedulers: Vec<SchedulerSpec>,
    threads: Vec<ThreadSpec>,
) -> Scenario {
    Scenario {
        name: "sfq".into(),
        description: String::new(),
        machine: Machine {
            cpus,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon,
        seed: 3,
        default_scheduler: schedulers[0].name.clone(),
        schedulers,
        threads,
        script: vec![],
    }
}

fn cpu(r: &RunResult, name: &str) -> Duration {
    r.threads.iter().find(|t| t.name == name).unwrap().cpu_time
}

fn near(got: Duration, want: Duration, slack: Duration) -> bool {
    got.max(want) - got.min(want) <= slack
}

#[test]
fn weights_one_two_three_as_root() {
    let threads = (1..=3)
        .map(|w| thread(&format!("w{w}"), "sfq", weight(w), forever()))
        .collect();
    let r = go(&scenario(
        1,
        Duration::from_secs(6),
        vec![sched("sfq", "sfq", None)],
        threads,
    ));
    for w in 1..=3 {
        let got = cpu(&r, &format!("w{w}"));
        assert!(near(got, Duration::from_secs(w), Q + Q), "w{w}: {got}");
    }
}

#[test]
fn sfq_under_sfq_divides_by_group_then_within() {
    // A root SFQ gives group `a` (weight 1) a third and `b` (weight 2) two
    // thirds; each group's SFQ divides that among its threads.
    let schedulers = vec![
        sched("root", "sfq", None),
        sched("a", "sfq", Some(("root", weight(1)))),
        sched("b", "sfq", Some(("root", weight(2)))),
    ];
    let threads = vec![
        thread("a1", "a", weight(1), forever()),
        thread("a2", "a", weight(1), forever()),
        thread("b1", "b", weight(1), forever()),
        thread("b3", "b", weight(3), forever()),
    ];
    let r = go(&scenario(1, Duration::from_secs(3), schedulers, threads));
    let want = [("a1", 500), ("a2", 500), ("b1", 500), ("b3", 1_500)];
    for (name, share) in want {
        let got = cpu(&r, name);
        assert!(near(got, ms(share), ms(40)), "{name}: {got}");
    }
    let received = |n: &str| r.nodes.iter().find(|x| x.name == n).unwrap().received;
    assert!(near(received("a"), Duration::from_secs(1), Q + Q));
    assert!(near(received("b"), Duration::from_secs(2), Q + Q));
}

#[test]
fn sfq_in_the_middle_on_two_cpus_is_work_conserving() {
    let schedulers = vec![
        SchedulerSpec {
            parents: vec![],
            ..sched("root", "fp", None)
        },
        SchedulerSpec {
            parents: vec![ParentLink {
                parent: "root".into(),
                vps: 2,
                params: Params::new().with("prio", Value::Int(10)),
            }],
            ..sched("ps", "sfq", None)
        },
    ];
    let threads = (0..5)
        .map(|i| thread(&format!("t{i}"), "ps", weight(1 + i % 2), forever()))
        .collect();
    let r = go(&scenario(2, Duration::from_secs(1), schedulers, threads));
    for c in &r.cpu_stats {
        assert_eq!(c.idle, Duration::ZERO, "{}", c.cpu);
    }
}

/// An interactive thread: 1ms bursts 13ms apart, among two CPU hogs.
fn interactive(warp: bool) -> Scenario {
    let mut ops = Vec::new();
    if warp {
        ops.push(Op::Msg {
            to: Target::Parent,
            msg: Msg::new("warp").arg("on", Value::Bool(true)),
        });
    }
    ops.push(Op::Loop {
        count: None,
        body: vec![Op::Sleep(Dist::Fixed(ms(13))), Op::Run(Dist::Fixed(ms(1)))],
    });
    let warped = Params::new().with("warp", Value::Duration(ms(50)));
    scenario(
        1,
        Duration::from_secs(2),
        vec![sched("sfq", "sfq", None)],
        vec![
            thread("hog1", "sfq", Params::new(), forever()),
            thread("hog2", "sfq", Params::new(), forever()),
            thread("ui", "sfq", warped, ops),
        ],
    )
}

#[test]
fn a_thread_that_warps_itself_is_dispatched_at_once() {
    let r = go(&interactive(true));
    assert!(r
        .log
        .iter()
        .any(|e| e.kind == LogKind::Reply && e.text.contains("warp(on=true)")));
    let ui = r.threads.iter().find(|t| t.name == "ui").unwrap();
    assert!(ui.wakeup_latencies.len() > 50);
    assert!(
        ui.wakeup_latencies.iter().all(|l| l.is_zero()),
        "{:?}",
        ui.wakeup_latencies
    );
    // Unwarped, it waits for running quanta.
    let r = go(&interactive(false));
    let ui = r.threads.iter().find(|t| t.name == "ui").unwrap();
    let worst = ui.wakeup_latencies.iter().max().unwrap();
    assert!(*worst >= ms(5), "{worst}");
}

#[test]
fn a_warped_hog_gets_no_more_than_its_share_in_the_long_run() {
    let warped = Params::new()
        .with("warp", Value::Duration(ms(100)))
        .with("warp_on", Value::Bool(true));
    let r = go(&scenario(
        1,
        Duration::from_secs(3),
        vec![sched("sfq", "sfq", None)],
        vec![
            thread("warped", "sfq", warped, forever()),
            thread("plain1", "sfq", Params::new(), forever()),
            thread("plain2", "sfq", Params::new(), forever()),
        ],
    ));
    for name in ["warped", "plain1", "plain2"] {
        let got = cpu(&r, name);
        assert!(
            near(got, Duration::from_secs(1), ms(100) + Q + Q),
            "{name}: {got}"
        );
    }
}

fn random_thread(i: usize, w: i64, kind: u8, a: u64, b: u64) -> ThreadSpec {
    let ops = match kind {
        0 => forever(),
        k => common::bursts(k == 1, a, b),
    };
    ThreadSpec {
        arrival: Instant::ZERO + ms(b % 50),
        ..thread(&format!("t{i}"), "sfq", weight(w), ops)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The SFQ bound between every two always-runnable threads, over every
    /// window of a random workload on one CPU (hogs, sleepers, yielders).
    #[test]
    fn the_fairness_bound_holds_end_to_end(
        hogs in proptest::collection::vec(1i64..6, 2..4),
        others in proptest::collection::vec((1i64..6, 1u8..3, any::<u64>(), any::<u64>()), 0..4),
        seed in any::<u64>(),
    ) {
        let mut threads: Vec<ThreadSpec> = hogs
            .iter()
            .enumerate()
            .map(|(i, &w)| thread(&format!("t{i}"), "sfq", weight(w), forever()))
            .collect();
        for (k, &(w, kind, a, b)) in others.iter().enumerate() {
            threads.push(random_thread(hogs.len() + k, w, kind, a, b));
        }
        let mut scn = scenario(1, ms(600), vec![sched("sfq", "sfq", None)], threads);
        scn.seed = seed;
        let r = go(&scn);
        let trace = r.trace.as_ref().unwrap();
        let mut bounds: Vec<Instant> =
            trace.segments.iter().flat_map(|s| [s.start, s.end]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let served: Vec<Vec<i128>> = (0..hogs.len() as u32)
            .map(|t| {
                let mut acc = 0i128;
                let mut out = Vec::new();
                let mut segs = trace
                    .segments
                    .iter()
                    .filter(|s| s.what == SegmentKind::Run(hsched_core::ThreadId(t)))
                    .peekable();
                for &b in &bounds {
                    while let Some(s) = segs.next_if(|s| s.end <= b) {
                        acc += (s.end - s.start).as_nanos() as i128;
                    }
                    let partial = segs
                        .peek()
                        .filter(|s| s.start < b)
                        .map_or(0, |s| (b - s.start).as_nanos() as i128);
                    out.push(acc + partial);
                }
                out
            })
            .collect();
        let l = Q.as_nanos() as i128;
        for i in 0..hogs.len() {
            for j in i + 1..hogs.len() {
                let (wi, wj) = (hogs[i] as i128, hogs[j] as i128);
                let bound = l * wj + l * wi;
                for a in 0..bounds.len() {
                    for b in a + 1..bounds.len() {
                        let gi = served[i][b] - served[i][a];
                        let gj = served[j][b] - served[j][a];
                        prop_assert!(
                            (gi * wj - gj * wi).abs() <= bound,
                            "t{} and t{} in [{}, {}]: {} and {}", i, j, bounds[a], bounds[b], gi, gj
                        );
                    }
                }
            }
        }
    }
}
