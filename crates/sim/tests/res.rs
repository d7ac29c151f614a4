//! `res` end to end in the simulator: random admitted reservation sets
//! with CPU-bound and random workloads get their amount in every window of
//! their grid and never more; a RESU thread gets its rate between the
//! deadlines it announces; a `res` running on another `res`'s uniformly
//! slower processor gets `rate * (d_{n+1} - d_n)` between its announced
//! deadlines, and its threads their amounts in that processor's time.

use hsched_core::{Duration, Instant, Msg, Params, Share, ShareRange, ThreadId, Value};
use hsched_model::{
    Dist, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec,
    SegmentKind, Target, ThreadSpec,
};
use hsched_policies::res::Util;
use proptest::prelude::*;

mod common;
use common::{go, tid};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn us(x: u64) -> Duration {
    Duration::from_micros(x)
}

fn forever() -> Vec<Op> {
    vec![Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(100)))],
    }]
}

/// Bursts and sleeps of random length.
fn bursty() -> Vec<Op> {
    vec![Op::Loop {
        count: None,
        body: vec![
            Op::Run(Dist::Uniform {
                min: us(100),
                max: ms(9),
            }),
            Op::Sleep(Dist::Exponential {
                mean: ms(6),
                max: ms(40),
            }),
        ],
    }]
}

fn rsv(amount: Duration, period: Duration) -> Params {
    Params::new()
        .with("amount", Value::Duration(amount))
        .with("period", Value::Duration(period))
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

fn sched(name: &str, policy: &str, params: Params, parents: Vec<ParentLink>) -> SchedulerSpec {
    SchedulerSpec {
        name: name.into(),
        policy: policy.into(),
        params,
        parents,
    }
}

fn under(parent: &str, params: Params) -> Vec<ParentLink> {
    vec![ParentLink {
        parent: parent.into(),
        vps: 1,
        params,
    }]
}

fn scenario(horizon: Duration, scheds: Vec<SchedulerSpec>, threads: Vec<ThreadSpec>) -> Scenario {
    Scenario {
        name: "res".into(),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon,
        seed: 5,
        default_scheduler: scheds[0].name.clone(),
        schedulers: scheds,
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

/// The windows `[k * period, (k + 1) * period)` that end by `end`.
fn windows(period: Duration, end: Instant) -> impl Iterator<Item = (Instant, Instant)> {
    let p = period.as_nanos();
    (0..end.as_nanos() / p).map(move |k| (Instant(k * p), Instant((k + 1) * p)))
}

fn refusals(r: &RunResult) -> Vec<&str> {
    r.log
        .iter()
        .filter(|e| e.kind == LogKind::Refused)
        .map(|e| e.text.as_str())
        .collect()
}

/// Random (amount, period) pairs in 100µs units whose utilizations sum to
/// at most 1 exactly (checked with `res`'s own arithmetic: a set `res`
/// admits).
fn admitted_set() -> impl Strategy<Value = Vec<(Duration, Duration)>> {
    proptest::collection::vec((1u64..60, 1u64..60), 1..7).prop_map(|pairs| {
        let mut total = Util::ZERO;
        let mut out = Vec::new();
        for (a, b) in pairs {
            let (amount, period) = (us(100 * a.min(b)), us(100 * a.max(b) + 100));
            if let Some(t) = total.checked_add(Util::of(amount, period)) {
                if t.at_most_one() {
                    total = t;
                    out.push((amount, period));
                }
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Admitted reservations at the root, some threads CPU bound, some
    /// bursty: every CPU-bound thread gets exactly its amount in every
    /// window of its grid (which starts when it joined, at 0), and no
    /// thread ever gets more than its amount in one.
    #[test]
    fn admitted_reservations_hold_in_every_window(
        set in admitted_set(),
        bound in proptest::collection::vec(any::<bool>(), 7),
    ) {
        let horizon = ms(400);
        let threads: Vec<ThreadSpec> = set
            .iter()
            .enumerate()
            .map(|(i, &(a, p))| {
                let ops = if bound[i] { forever() } else { bursty() };
                thread(&format!("t{i}"), "res", rsv(a, p), ops)
            })
            .collect();
        let scn = scenario(horizon, vec![sched("res", "res", Params::new(), vec![])], threads);
        let r = go(&scn);
        prop_assert!(refusals(&r).is_empty(), "{:?}", refusals(&r));
        let end = Instant::ZERO + horizon;
        for (i, &(amount, period)) in set.iter().enumerate() {
            let t = tid(&r, &format!("t{i}"));
            for (from, to) in windows(period, end) {
                let g = got(&r, t, from, to);
                prop_assert!(g <= amount, "t{} got {} > {} in [{}, {})", i, g, amount, from, to);
                if bound[i] {
                    prop_assert_eq!(g, amount, "t{} in [{}, {})", i, from, to);
                }
            }
        }
    }

    /// A `res` running on another `res`'s uniformly slower processor of
    /// random rate r, full inside (its reservations sum to 1 in its own
    /// time), beside a CPU-bound reservation that takes the rest: between
    /// consecutive deadlines it announces (its threads' window ends) the
    /// inner `res` gets exactly r times their distance, and each of its
    /// CPU-bound threads gets its amount in the slower processor's time,
    /// r * amount of CPU, in every window.
    #[test]
    fn res_on_a_uniformly_slower_processor(
        rate in prop_oneof![Just("1/2"), Just("1/3"), Just("3/4"), Just("2/5")],
        periods in proptest::collection::vec(1u64..5, 1..4),
    ) {
        let r_ = Share::parse(rate, ShareRange::Rate).unwrap();
        // Equal shares of the inner processor: amount_i = period_i / n,
        // exact (periods are multiples of 30ms, n <= 3).
        let n = periods.len() as u64;
        let inner: Vec<(Duration, Duration)> = periods
            .iter()
            .map(|&p| (ms(30 * p / n), ms(30 * p)))
            .collect();
        let horizon = ms(600);
        let mut threads: Vec<ThreadSpec> = inner
            .iter()
            .enumerate()
            .map(|(i, &(a, p))| thread(&format!("in{i}"), "inner", rsv(a, p), forever()))
            .collect();
        // The rest of the CPU, reserved for one outer thread: 1 - r.
        let rest = (ms(60).as_nanos() * (r_.den() - r_.num())) / r_.den();
        threads.push(thread("out", "outer", rsv(Duration(rest), ms(60)), forever()));
        let scn = scenario(
            horizon,
            vec![
                sched("outer", "res", Params::new(), vec![]),
                sched(
                    "inner",
                    "res",
                    Params::new().with("rate", Value::Str(rate.into())),
                    under("outer", Params::new().with("rate", Value::Str(rate.into()))),
                ),
            ],
            threads,
        );
        let r = go(&scn);
        prop_assert!(refusals(&r).is_empty(), "{:?}", refusals(&r));
        let end = Instant::ZERO + horizon;
        let ids: Vec<ThreadId> = (0..inner.len()).map(|i| tid(&r, &format!("in{i}"))).collect();
        for (i, &(amount, period)) in inner.iter().enumerate() {
            let want = r_.of(amount);
            for (from, to) in windows(period, end) {
                let g = got(&r, ids[i], from, to);
                prop_assert!(g <= want, "in{} got {} > {} in [{}, {})", i, g, want, from, to);
                // Each run of a budget is rounded down to whole nanoseconds.
                prop_assert!(g + Duration(100) >= want, "in{} got {} < {} in [{}, {})", i, g, want, from, to);
            }
        }
        // The inner processor's deadlines: every window end of its threads.
        let mut deadlines: Vec<Instant> = inner
            .iter()
            .flat_map(|&(_, p)| windows(p, end).map(|w| w.1))
            .collect();
        deadlines.push(Instant::ZERO);
        deadlines.sort();
        deadlines.dedup();
        for w in deadlines.windows(2) {
            let g = ids.iter().map(|&t| got(&r, t, w[0], w[1])).fold(Duration::ZERO, |a, b| a + b);
            let want = r_.of(w[1] - w[0]);
            prop_assert!(
                g <= want && g + Duration(100 * ids.len() as u64) >= want,
                "inner got {} between its deadlines {} and {}, want {}", g, w[0], w[1], want
            );
        }
    }
}

/// A thread attached with `rate` announces its deadlines (here all at
/// once, when it starts) and gets `rate * (d_{n+1} - d_n)` between
/// consecutive ones, beside a CPU-bound reservation.
#[test]
fn a_resu_thread_gets_its_rate_between_its_deadlines() {
    let deadlines = [10u64, 25, 30, 61, 100, 130];
    let mut ops: Vec<Op> = deadlines
        .iter()
        .map(|&d| Op::Msg {
            to: Target::Parent,
            msg: Msg::new("deadline").arg("at", Value::Duration(ms(d))),
        })
        .collect();
    ops.extend(forever());
    let scn = scenario(
        ms(200),
        vec![sched("res", "res", Params::new(), vec![])],
        vec![
            thread(
                "u",
                "res",
                Params::new().with("rate", Value::Str("1/3".into())),
                ops,
            ),
            thread("hog", "res", rsv(ms(2), ms(3)), forever()),
        ],
    );
    let r = go(&scn);
    assert!(refusals(&r).is_empty(), "{:?}", refusals(&r));
    let u = tid(&r, "u");
    let third = Share::parse("1/3", ShareRange::Rate).unwrap();
    let mut prev = 0;
    for &d in &deadlines {
        let g = got(&r, u, Instant::ZERO + ms(prev), Instant::ZERO + ms(d));
        assert_eq!(g, third.of(ms(d - prev)), "between {prev}ms and {d}ms");
        prev = d;
    }
    let after = got(&r, u, Instant::ZERO + ms(130), Instant::ZERO + ms(200));
    assert_eq!(after, Duration::ZERO, "no deadline, no budget");
    let hog = tid(&r, "hog");
    for (from, to) in windows(ms(3), Instant::ZERO + ms(200)) {
        assert_eq!(got(&r, hog, from, to), ms(2));
    }
}

/// §5.1's example: RESBS 10, 20 under RESU 0.5 is 25% of the CPU.
#[test]
fn a_reservation_on_a_half_speed_processor_is_a_quarter_of_the_cpu() {
    let half = || Params::new().with("rate", Value::Str("0.5".into()));
    let scn = scenario(
        ms(1_000),
        vec![
            sched("outer", "res", Params::new(), vec![]),
            sched("inner", "res", half(), under("outer", half())),
        ],
        vec![
            thread("t", "inner", rsv(ms(10), ms(20)), forever()),
            thread("other", "outer", rsv(ms(10), ms(20)), forever()),
        ],
    );
    let r = go(&scn);
    assert!(refusals(&r).is_empty(), "{:?}", refusals(&r));
    let t = r.threads.iter().find(|t| t.name == "t").unwrap();
    assert_eq!(t.cpu_time, ms(250));
    let other = r.threads.iter().find(|t| t.name == "other").unwrap();
    assert_eq!(other.cpu_time, ms(500));
}

/// A refused reservation leaves the thread under the default scheduler,
/// and the refusal names the numbers.
#[test]
fn a_refused_thread_goes_to_the_default_scheduler_with_the_reason() {
    let mut scn = scenario(
        ms(100),
        vec![
            sched("ts", "ts", Params::new(), vec![]),
            sched("res", "res", Params::new(), under("ts", Params::new())),
        ],
        vec![
            thread("a", "res", rsv(ms(6), ms(10)), forever()),
            thread("b", "res", rsv(ms(5), ms(10)), forever()),
        ],
    );
    scn.default_scheduler = "ts".into();
    let r = go(&scn);
    let refused = refusals(&r);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("`b`") && refused[0].contains("11/10 (110.00%)"),
        "{}",
        refused[0]
    );
    assert_eq!(r.threads[1].scheduler, "ts");
}
