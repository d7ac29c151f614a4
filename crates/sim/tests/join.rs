//! `join` end to end on several CPUs: a join under a reservation (`res`)
//! and a time-sharing parent (`ts`), both under a fixed-priority root, each
//! parent holding one or two of the machine's two CPUs (HLS §5.4's soft
//! reservation, with Vassal's delegation for the grants the join declines).
//!
//! This once livelocked the dispatcher: the join declined a grant on one
//! CPU because its child still ran on the other, whose re-decision was
//! already pending; when that CPU was taken back, the join asked every
//! parent again, but the CPU was decided before the requests were heard,
//! so the parents preempted again, and so on within one instant until the
//! root or `ts` was ejected for asking more than 10000 reschedules.

use hsched_core::{Duration, Instant, Params, ThreadId, Value};
use hsched_model::{
    Dist, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec, SegmentKind,
    ThreadSpec,
};

mod common;
use common::{go, tid};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn us(x: u64) -> Duration {
    Duration::from_micros(x)
}

const AMOUNT: Duration = Duration::from_millis(3);
const PERIOD: Duration = Duration::from_millis(10);

fn rsv(amount: Duration, period: Duration) -> Params {
    Params::new()
        .with("amount", Value::Duration(amount))
        .with("period", Value::Duration(period))
}

fn link(parent: &str, vps: u32, params: Params) -> ParentLink {
    ParentLink {
        parent: parent.into(),
        vps,
        params,
    }
}

fn sched(name: &str, policy: &str, parents: Vec<ParentLink>) -> SchedulerSpec {
    SchedulerSpec {
        name: name.into(),
        policy: policy.into(),
        params: Params::new(),
        parents,
    }
}

fn thread(name: &str, parent: &str, params: Params, body: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: parent.into(),
        params,
        arrival: Instant::ZERO,
        program: Program::new(vec![Op::Loop { count: None, body }]),
        needs: None,
    }
}

/// Sleeps and runs of random length, in that order.
fn bursty(sleep: Dist, run: Dist) -> Vec<Op> {
    vec![Op::Sleep(sleep), Op::Run(run)]
}

/// The stress scenario that livelocked, with `res_vps` and `ts_vps` CPUs
/// for the two parents (the join takes as many VPs from each): a CPU-bound
/// `t` under the join holds RESBH 3, 10 through `res`; two bursty reserved
/// threads share `res`; three bursty threads keep `ts` busy.
fn scenario(res_vps: u32, ts_vps: u32, seed: u64) -> Scenario {
    let prio = |p: i64| Params::new().with("prio", Value::Int(p));
    let schedulers = vec![
        sched("root", "fp", vec![]),
        sched("res", "res", vec![link("root", res_vps, prio(10))]),
        sched("ts", "ts", vec![link("root", ts_vps, prio(1))]),
        sched(
            "j",
            "join",
            vec![
                link("res", res_vps, rsv(AMOUNT, PERIOD)),
                link("ts", ts_vps, Params::new()),
            ],
        ),
    ];
    let mut threads = vec![thread(
        "t",
        "j",
        Params::new(),
        vec![Op::Run(Dist::Fixed(Duration::from_secs(1)))],
    )];
    for i in 0..2 {
        threads.push(thread(
            &format!("a{i}"),
            "res",
            rsv(ms(1), ms(7)),
            bursty(
                Dist::Uniform {
                    min: us(100),
                    max: ms(9),
                },
                Dist::Uniform {
                    min: us(500),
                    max: ms(4),
                },
            ),
        ));
    }
    for i in 0..3 {
        threads.push(thread(
            &format!("x{i}"),
            "ts",
            Params::new(),
            bursty(
                Dist::Exponential {
                    mean: ms(5),
                    max: ms(50),
                },
                Dist::Uniform {
                    min: ms(1),
                    max: ms(30),
                },
            ),
        ));
    }
    Scenario {
        name: format!("join-res{res_vps}-ts{ts_vps}"),
        description: String::new(),
        machine: Machine {
            cpus: 2,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon: Duration::from_secs(1),
        seed,
        default_scheduler: "root".into(),
        schedulers,
        threads,
        script: vec![],
    }
}

/// CPU time thread `t` got in `[from, to)`, from the trace.
fn got(r: &RunResult, t: ThreadId, from: Instant, to: Instant) -> Duration {
    r.trace
        .as_ref()
        .unwrap()
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t))
        .map(|s| s.end.min(to).saturating_since(s.start.max(from)))
        .fold(Duration::ZERO, |a, b| a + b)
}

/// Runs every mix of one or two CPUs per parent with every invariant
/// checked (`go` fails on any ejection), and checks that the joined thread,
/// CPU bound throughout, gets at least its reservation in every window of
/// its grid (which starts at 0, when the join attached): whatever `ts`
/// gives it comes on top.
#[test]
fn a_join_under_two_multi_cpu_parents_keeps_its_reservation_without_livelock() {
    for (res_vps, ts_vps) in [(2, 2), (2, 1), (1, 2), (1, 1)] {
        for seed in [9, 10, 11] {
            let r = go(&scenario(res_vps, ts_vps, seed));
            let t = tid(&r, "t");
            let p = PERIOD.as_nanos();
            for k in 0..r.horizon.as_nanos() / p {
                let (from, to) = (Instant(k * p), Instant((k + 1) * p));
                let had = got(&r, t, from, to);
                assert!(
                    had >= AMOUNT,
                    "res vps {res_vps}, ts vps {ts_vps}, seed {seed}: t got {had} in [{from}, {to})"
                );
            }
        }
    }
}
