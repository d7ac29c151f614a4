//! `hfsc` end to end through the dispatcher: a concave curve's delay bound
//! against a greedy thread, a child scheduler with a service curve, class
//! link sharing, admission refusals logged, and byte-for-byte determinism.

use hsched_core::{Duration, Instant, Params, Value};
use hsched_model::{
    Dist, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec, ThreadSpec,
};

mod common;
use common::go;

const MS: u64 = 1_000_000;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn forever() -> Vec<Op> {
    vec![Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(100)))],
    }]
}

fn periodic(period: u64, run_us: u64) -> Vec<Op> {
    vec![Op::Periodic {
        period: ms(period),
        deadline: ms(period),
        offset: ms(5),
        jobs: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_micros(run_us)))],
    }]
}

fn curve(r1: &str, x_ms: u64, r2: &str) -> Params {
    Params::new()
        .with("r1", Value::Str(r1.into()))
        .with("x", Value::Duration(ms(x_ms)))
        .with("r2", Value::Str(r2.into()))
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

fn hfsc(classes: &str) -> SchedulerSpec {
    SchedulerSpec {
        name: "hfsc".into(),
        policy: "hfsc".into(),
        params: Params::new().with("classes", Value::Str(classes.into())),
        parents: vec![],
    }
}

fn scenario(
    horizon: Duration,
    schedulers: Vec<SchedulerSpec>,
    threads: Vec<ThreadSpec>,
) -> Scenario {
    Scenario {
        name: "hfsc".into(),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: Some(ms(1)),
            watchdog: None,
        },
        horizon,
        seed: 5,
        default_scheduler: "hfsc".into(),
        schedulers,
        threads,
        script: vec![],
    }
}

fn cpu(r: &RunResult, name: &str) -> u64 {
    r.threads
        .iter()
        .find(|t| t.name == name)
        .unwrap()
        .cpu_time
        .as_nanos()
}

fn worst_response(r: &RunResult, name: &str) -> u64 {
    let id = r.threads.iter().find(|t| t.name == name).unwrap().id;
    r.jobs
        .iter()
        .filter(|j| j.thread == id)
        .map(|j| j.finish.expect("every job finishes").as_nanos() - j.release.as_nanos())
        .max()
        .unwrap()
}

#[test]
fn a_concave_curve_bounds_delay_below_what_its_rate_gives() {
    // 2ms every 40ms: rate 0.05. With <0.4, 5ms, 0.05> the 2ms are due
    // within 5ms of the release; with the linear 0.05 curve, within 40ms.
    let run = |r1: &str, x: u64| {
        go(&scenario(
            Duration::from_secs(4),
            vec![hfsc("")],
            vec![
                thread("greedy", "hfsc", curve("0.5", 0, "0.5"), forever()),
                thread("rt", "hfsc", curve(r1, x, "0.05"), periodic(40, 2000)),
            ],
        ))
    };
    let concave = worst_response(&run("0.4", 5), "rt");
    let linear = worst_response(&run("0.05", 0), "rt");
    // Within the curve's 5ms plus one tick of waiting for the decision.
    assert!(concave <= 6 * MS, "concave: worst response {concave}");
    assert!(linear > 10 * MS, "linear: worst response {linear}");
}

#[test]
fn a_child_scheduler_gets_its_curve_and_classes_share_the_excess() {
    // rr (a child scheduler) with rate 0.2 in class `a`, one greedy thread
    // with 0.2 in class `b`; classes 0.75 : 0.25 split the excess.
    let rr = SchedulerSpec {
        name: "rr".into(),
        policy: "rr".into(),
        params: Params::new(),
        parents: vec![ParentLink {
            parent: "hfsc".into(),
            vps: 1,
            params: curve("0.2", 0, "0.2").with("class", Value::Str("a".into())),
        }],
    };
    let r = go(&scenario(
        Duration::from_secs(8),
        vec![hfsc("a:0.75, b:0.25"), rr],
        vec![
            thread("r1", "rr", Params::new(), forever()),
            thread("r2", "rr", Params::new(), forever()),
            thread(
                "g",
                "hfsc",
                curve("0.2", 0, "0.2").with("class", Value::Str("b".into())),
                forever(),
            ),
        ],
    ));
    let a = cpu(&r, "r1") + cpu(&r, "r2");
    let b = cpu(&r, "g");
    // Each gets at least its 0.2 by the real-time criterion, but real-time
    // time also advances the finish values up the path (L6), so link
    // sharing evens the classes' finish values: the totals split 3:1.
    let total = a + b;
    assert!(total >= 8000 * MS - MS, "work conserving: {total}");
    let a_share = a as f64 / total as f64;
    assert!((a_share - 0.75).abs() < 0.01, "class a got {a_share}");
}

#[test]
fn a_thread_past_admission_is_refused_and_logged() {
    let r = go(&scenario(
        Duration::from_millis(100),
        vec![hfsc("")],
        vec![
            thread("a", "hfsc", curve("0.9", 10, "0.1"), forever()),
            thread("b", "hfsc", curve("0.2", 0, "0.2"), forever()),
        ],
    ));
    assert!(
        r.log
            .iter()
            .any(|e| e.kind == LogKind::Refused && e.text.contains("not admitted")),
        "{:?}",
        r.log
    );
}

#[test]
fn same_scenario_same_result() {
    let scn = || {
        scenario(
            Duration::from_secs(2),
            vec![hfsc("")],
            vec![
                thread("g", "hfsc", curve("0.3", 0, "0.3"), forever()),
                thread("p", "hfsc", curve("0.4", 5, "0.1"), periodic(20, 1500)),
                thread("q", "hfsc", curve("0.05", 20, "0.3"), periodic(30, 4000)),
            ],
        )
    };
    let (a, b) = (go(&scn()), go(&scn()));
    let key = |r: &RunResult| format!("{:?} {:?}", r.jobs, r.trace.as_ref().map(|t| &t.segments));
    assert_eq!(key(&a), key(&b));
}

// ----- several CPUs -----------------------------------------------------------

use hsched_analysis::schedule_check::Schedule;
use hsched_model::SegmentKind;
use hsched_policies::hfsc::ServiceCurve;
use std::collections::BTreeSet;

fn partitioned(fit: &str) -> SchedulerSpec {
    SchedulerSpec {
        name: "hfsc".into(),
        policy: "hfsc".into(),
        params: Params::new()
            .with("multiprocessor", Value::Str("partitioned".into()))
            .with("fit", Value::Str(fit.into())),
        parents: vec![],
    }
}

fn on_cpus(cpus: u32, mut scn: Scenario) -> Scenario {
    scn.machine.cpus = cpus;
    scn
}

fn best_effort(name: &str) -> ThreadSpec {
    let p = curve("0.1", 0, "0.1").with("best_effort", Value::Bool(true));
    thread(name, "hfsc", p, forever())
}

/// The CPUs thread `name` ran on.
fn cpus_of(r: &RunResult, name: &str) -> BTreeSet<u32> {
    let id = r.threads.iter().find(|t| t.name == name).unwrap().id;
    let trace = r.trace.as_ref().expect("traced");
    trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(id))
        .map(|s| s.cpu.0)
        .collect()
}

/// What thread `name` received, as a schedule.
fn received(r: &RunResult, name: &str) -> Schedule {
    let id = r.threads.iter().find(|t| t.name == name).unwrap().id;
    let trace = r.trace.as_ref().expect("traced");
    Schedule::new(trace.segments.iter().filter_map(|s| match s.what {
        SegmentKind::Run(t) if t == id => Some((s.start.as_nanos(), s.end.as_nanos())),
        _ => None,
    }))
    .unwrap()
}

fn sc(r1: &str, x_ms: u64, r2: &str) -> ServiceCurve {
    let ppm = |r: &str| {
        hsched_core::Share::parse_ppm(r, hsched_core::ShareRange::AtMostOne).unwrap() as u32
    };
    ServiceCurve {
        r1: ppm(r1),
        x: x_ms * MS,
        r2: ppm(r2),
    }
}

/// The largest shortfall of a CPU-bound thread (backlogged from 0 to the
/// end) below its curve, sampled every ms: `max_t S(t) - service(0, t)`.
fn worst_lag(r: &RunResult, name: &str, s: ServiceCurve, end_ms: u64) -> i128 {
    let got = received(r, name);
    (0..=end_ms)
        .map(|t| i128::from(s.at(t * MS)) - i128::from(got.supply(0, t * MS)))
        .max()
        .unwrap()
}

fn refused(r: &RunResult) -> Vec<String> {
    r.log
        .iter()
        .filter(|e| e.kind == LogKind::Refused)
        .map(|e| e.text.clone())
        .collect()
}

#[test]
fn partitioned_on_two_cpus_admits_a_curve_per_cpu_and_each_keeps_its_curve_on_its_cpu() {
    // Three CPU-bound <0.6, 0, 0.6>: one per CPU (0.6 + 0.6 > 1 on one),
    // the third refused naming both VPs' load. A periodic thread with a
    // concave <0.4, 5ms, 0.05> fits with the first (peaks 0.6 + 0.4 = 1),
    // and a greedy best-effort thread per CPU competes for the rest.
    let scn = on_cpus(
        2,
        scenario(
            Duration::from_secs(2),
            vec![partitioned("first")],
            vec![
                thread("a", "hfsc", curve("0.6", 0, "0.6"), forever()),
                thread("b", "hfsc", curve("0.6", 0, "0.6"), forever()),
                thread("c", "hfsc", curve("0.6", 0, "0.6"), forever()),
                thread("p", "hfsc", curve("0.4", 5, "0.05"), periodic(40, 2000)),
                best_effort("be0"),
                best_effort("be1"),
            ],
        ),
    );
    // What the analysis promises, from the same placement code: a, b PS
    // 0.6, p PS 0.05, c refused, the best-effort threads nothing.
    let labels =
        hsched_analysis::compose::analyse(&scn, &hsched_analysis::rules::RuleBook::standard());
    let label = |to: &str| labels.edge(Some("hfsc"), to).unwrap();
    for (to, g) in [
        ("a", "PS 0.6"),
        ("b", "PS 0.6"),
        ("p", "PS 0.05"),
        ("c", "NULL"),
        ("be0", "NULL"),
    ] {
        assert_eq!(label(to).guarantee.to_string(), g, "{to}");
    }
    assert!(label("c").refused && labels.composes());
    let r = go(&scn);
    let no = refused(&r);
    assert!(
        no.len() == 1
            && no[0].contains("`c`")
            && no[0].contains("vp0 (Σ r2 = 0.6)")
            && no[0].contains("vp1 (Σ r2 = 0.6)"),
        "{no:?}"
    );
    // Placement: a and p on CPU 0, b on CPU 1, each best-effort thread on
    // its own CPU; none ever runs elsewhere.
    assert_eq!(cpus_of(&r, "a"), BTreeSet::from([0]));
    assert_eq!(cpus_of(&r, "p"), BTreeSet::from([0]));
    assert_eq!(cpus_of(&r, "b"), BTreeSet::from([1]));
    assert_eq!(cpus_of(&r, "be0"), BTreeSet::from([0]));
    assert_eq!(cpus_of(&r, "be1"), BTreeSet::from([1]));
    // Each CPU-bound thread keeps its curve 0.6 t to within one quantum
    // (1 ms) at every ms (measured: 0.2 ms at worst; a got 1.628 s and b
    // 1.714 s of 2 s, the rest went to p and the best-effort threads).
    for name in ["a", "b"] {
        let lag = worst_lag(&r, name, sc("0.6", 0, "0.6"), 2000);
        assert!(lag <= MS as i128, "{name} lags {lag} ns");
        assert!(cpu(&r, name) >= 1200 * MS - MS, "{}", cpu(&r, name));
    }
    // `c`, refused, runs below the hierarchy: hfsc keeps both CPUs busy.
    assert_eq!(cpu(&r, "c"), 0);
    // p's 2 ms jobs are due 5 ms after release by <0.4, 5ms, ...> (2 ms at
    // 0.4 takes 5 ms); plus the 1 ms decision it may wait: within 6 ms
    // (measured: 4 ms).
    let worst = worst_response(&r, "p");
    assert!(worst <= 6 * MS, "p's worst response {worst}");

    // Today's mode on the same 2 CPUs admits one CPU's worth: only `a`.
    let mut one = scn.clone();
    one.schedulers = vec![hfsc("")];
    let no = refused(&go(&one));
    assert!(
        no.iter().any(|t| t.contains("`b`")) && no.iter().any(|t| t.contains("`c`")),
        "{no:?}"
    );
}

#[test]
fn partitioned_on_four_cpus_admits_four_cpus_of_curves() {
    // Four <0.7, 0, 0.7> (one per CPU), four <0.3, 0, 0.3> (one beside
    // each: Σ r2 = 1.0 on every CPU), then a <0.05, 0, 0.05> fits nowhere.
    let mut threads = Vec::new();
    for i in 0..4 {
        threads.push(thread(
            &format!("big{i}"),
            "hfsc",
            curve("0.7", 0, "0.7"),
            forever(),
        ));
    }
    for i in 0..4 {
        threads.push(thread(
            &format!("small{i}"),
            "hfsc",
            curve("0.3", 0, "0.3"),
            forever(),
        ));
    }
    threads.push(thread("late", "hfsc", curve("0.05", 0, "0.05"), forever()));
    let scn = on_cpus(
        4,
        scenario(Duration::from_secs(1), vec![partitioned("first")], threads),
    );
    let r = go(&scn);
    let no = refused(&r);
    assert!(
        no.len() == 1 && no[0].contains("`late`") && no[0].contains("vp3 (Σ r2 = 1)"),
        "{no:?}"
    );
    for i in 0..4u32 {
        for (name, s) in [("big", sc("0.7", 0, "0.7")), ("small", sc("0.3", 0, "0.3"))] {
            let name = format!("{name}{i}");
            assert_eq!(cpus_of(&r, &name), BTreeSet::from([i]), "{name}");
            // Measured: 0.6 ms (big), 0.3 ms (small) at worst.
            let lag = worst_lag(&r, &name, s, 1000);
            assert!(lag <= MS as i128, "{name} lags {lag} ns");
        }
    }
    // The four CPUs are fully booked by curves: all 4 s go to them.
    let total: u64 = r.threads.iter().map(|t| t.cpu_time.as_nanos()).sum();
    assert!(total >= 4000 * MS - 4 * MS, "{total}");
}

#[test]
fn first_fit_packs_onto_cpu_zero_and_worst_fit_spreads() {
    // Three CPU-bound <0.3, 0, 0.3> on 2 CPUs: first fit puts all on CPU 0
    // (Σ r2 = 0.9), CPU 1 idles; worst fit puts them on 0, 1, 0 (the tie
    // at 0.6 goes to the lowest). Under first fit each still gets 0.3 and
    // the excess of CPU 0 is shared by link sharing: about 1/3 each.
    let run = |fit: &str| {
        let scn = on_cpus(
            2,
            scenario(
                Duration::from_secs(1),
                vec![partitioned(fit)],
                ["x", "y", "z"]
                    .iter()
                    .map(|n| thread(n, "hfsc", curve("0.3", 0, "0.3"), forever()))
                    .collect(),
            ),
        );
        go(&scn)
    };
    let first = run("first");
    for n in ["x", "y", "z"] {
        assert_eq!(cpus_of(&first, n), BTreeSet::from([0]), "{n}");
        assert!(cpu(&first, n) >= 300 * MS, "{n}: {}", cpu(&first, n));
    }
    let worst = run("worst");
    assert_eq!(cpus_of(&worst, "x"), BTreeSet::from([0]));
    assert_eq!(cpus_of(&worst, "y"), BTreeSet::from([1]));
    assert_eq!(cpus_of(&worst, "z"), BTreeSet::from([0]));
    // Measured: first fit 334, 333, 333 ms; worst fit 500, 1000, 500 ms.
    // y has CPU 1 alone: all of it.
    assert!(cpu(&worst, "y") >= 999 * MS, "{}", cpu(&worst, "y"));
}
