//! `frc` and `rcsp` end to end: Theorem 1 and Corollary 1.1 of Yau & Lam
//! on random workloads, for FRC and for RCSP (which §4 says keeps them).

use hsched_analysis::throughput::{self, Competition};
use hsched_core::{Duration, Instant, Params, ThreadId, Value};
use hsched_model::{
    Dist, LogKind, Machine, Op, Program, Scenario, SchedulerSpec, SegmentKind, ThreadSpec,
};
use proptest::prelude::*;

mod common;
use common::go;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn forever() -> Vec<Op> {
    vec![Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(100)))],
    }]
}

/// A thread of rate `ppm`, quantum `w`, precedence `prec` (RCSP only:
/// `None` for FRC, which has no such parameter).
fn thread(
    i: usize,
    ppm: u64,
    w: Duration,
    prec: Option<i64>,
    ops: Vec<Op>,
    at: Duration,
) -> ThreadSpec {
    let mut params = Params::new()
        .with("rate", Value::Str(format!("0.{ppm:06}")))
        .with("quantum", Value::Duration(w));
    if let Some(p) = prec {
        params.set("precedence", Value::Int(p));
    }
    ThreadSpec {
        name: format!("t{i}"),
        parent: "s".into(),
        params,
        arrival: Instant::ZERO + at,
        program: Program::new(ops),
        needs: None,
    }
}

/// `(rate ppm, quantum, precedence)` of a thread.
type Spec = (u64, u64, i64);

/// Runs the workload under `policy` and checks, for every hog (runnable
/// from 0 to the end) and every interval between two segment boundaries,
/// bound (3) of Theorem 1 and, when the rates sum to at most 1, bound (4)
/// of Corollary 1.1. `Δ` is taken as every thread arrived by `t'`, a
/// superset of the threads ever runnable in `[t, t']`; a superset only
/// lowers both bounds, so the check is implied by the theorem. `tick_ms`
/// is the platform tick (horizons wait for it): `q_j = w_j + tick`, as the
/// paper defines it.
fn check_bounds(
    policy: &str,
    hogs: &[Spec],
    others: &[(Spec, u8, u64, u64)],
    tick_ms: u64,
    seed: u64,
) -> Result<(), TestCaseError> {
    let prec = |p: i64| (policy == "rcsp").then_some(p);
    let mut threads: Vec<ThreadSpec> = hogs
        .iter()
        .enumerate()
        .map(|(i, &(r, w, p))| thread(i, r, ms(w), prec(p), forever(), Duration::ZERO))
        .collect();
    for (k, &((r, w, p), kind, a, b)) in others.iter().enumerate() {
        threads.push(thread(
            hogs.len() + k,
            r,
            ms(w),
            prec(p),
            common::bursts(kind == 0, a, b),
            ms(b % 50),
        ));
    }
    let specs: Vec<(Spec, Instant)> = hogs
        .iter()
        .map(|&s| (s, Instant::ZERO))
        .chain(
            others
                .iter()
                .map(|&(s, _, _, b)| (s, Instant::ZERO + ms(b % 50))),
        )
        .collect();
    let scn = Scenario {
        name: format!("{policy}-bound"),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: (tick_ms > 0).then(|| ms(tick_ms)),
            watchdog: None,
        },
        horizon: ms(500),
        seed,
        default_scheduler: "s".into(),
        schedulers: vec![SchedulerSpec {
            name: "s".into(),
            policy: policy.into(),
            params: Params::new(),
            parents: vec![],
        }],
        threads,
        script: vec![],
    };
    let r = go(&scn);
    let refused: Vec<_> = r
        .log
        .iter()
        .filter(|e| e.kind == LogKind::Refused)
        .collect();
    prop_assert!(refused.is_empty(), "{:?}", refused);
    let trace = r.trace.as_ref().unwrap();
    let mut bounds: Vec<Instant> = trace
        .segments
        .iter()
        .flat_map(|s| [s.start, s.end])
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let served: Vec<Vec<i128>> = (0..hogs.len() as u32)
        .map(|t| {
            let mut acc = 0i128;
            let mut out = Vec::new();
            let mut segs = trace
                .segments
                .iter()
                .filter(|s| s.what == SegmentKind::Run(ThreadId(t)))
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
    // RCSP: an eligible thread may be up to w/r ahead of the slowest and is
    // then dispatched for a whole quantum, so it can lead by 2w/r where FRC
    // leads by w/r: the bound holds with q_j = 2 w_j, not w_j (a two-thread
    // counterexample for q_j = w_j: rates 0.01, w = 1ms, the lower
    // precedence thread waits 3ms at the start, bound (3) says 0.5ms).
    let factor = if policy == "rcsp" { 2 } else { 1 };
    let q = |w: u64| (factor * ms(w).as_nanos() + ms(tick_ms).as_nanos()) as i128;
    for (i, &(ri, wi, _)) in hogs.iter().enumerate() {
        let (ri, qi) = (ri as i128, q(wi));
        for b in 1..bounds.len() {
            let delta: Vec<&Spec> = specs
                .iter()
                .filter(|(_, at)| *at < bounds[b])
                .map(|(s, _)| s)
                .collect();
            let competition = Competition {
                rates: delta.iter().map(|s| s.0 as i128).sum(),
                quanta: delta.iter().map(|s| q(s.1)).sum(),
            };
            for a in 0..b {
                let len = (bounds[b] - bounds[a]).as_nanos() as i128;
                let got = served[i][b] - served[i][a];
                let need3 = throughput::theorem_1(len, ri, qi, competition);
                prop_assert!(
                    need3.met_by(got),
                    "{policy}: t{i} got {got}ns in [{}, {}], bound (3) {}ns",
                    bounds[a],
                    bounds[b],
                    got - need3.slack(got)
                );
                if competition.rates <= throughput::PPM {
                    let need4 = throughput::corollary_1_1(len, ri, qi, competition);
                    prop_assert!(
                        need4.met_by(got),
                        "{policy}: t{i} got {got}ns in [{}, {}], bound (4) {}ns",
                        bounds[a],
                        bounds[b],
                        got - need4.slack(got)
                    );
                }
            }
        }
    }
    Ok(())
}

fn spec() -> impl Strategy<Value = Spec> {
    (1u64..=40, 1u64..=10, 0i64..3).prop_map(|(r, w, p)| (r * 10_000, w, p))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // Failed before a waking child could shorten a running child's
    // decision (hogs at 0.01 and 0.11 with a 0.16 sleeper, w = 1ms: the
    // 0.11 hog got nothing for 3.8ms where (3) gives 0.1ms). The policy
    // test `a_wakeup_shortens_a_decision_timed_before_it` pins the cause.
    #[test]
    fn frc_meets_theorem_1_and_corollary_1_1(
        hogs in proptest::collection::vec(spec(), 1..4),
        others in proptest::collection::vec((spec(), 0u8..2, any::<u64>(), any::<u64>()), 0..4),
        tick_ms in prop_oneof![Just(0u64), 1u64..=4],
        seed in any::<u64>(),
    ) {
        check_bounds("frc", &hogs, &others, tick_ms, seed)?;
    }

    #[test]
    fn rcsp_keeps_frc_s_throughput_bound(
        hogs in proptest::collection::vec(spec(), 1..4),
        others in proptest::collection::vec((spec(), 0u8..2, any::<u64>(), any::<u64>()), 0..4),
        tick_ms in prop_oneof![Just(0u64), 1u64..=4],
        seed in any::<u64>(),
    ) {
        check_bounds("rcsp", &hogs, &others, tick_ms, seed)?;
    }
}
