//! `res` and `dbs` on 2 and 4 CPUs end to end (issue 19): the simulator
//! admits exactly what the stated test allows (the next thread refused,
//! with the numbers), the analysis labels the same, and the simulated
//! schedule of CPU-bound threads keeps every label in every window
//! (checked with `schedule_check::Schedule`); partitioned threads never
//! change CPU.

use hsched_analysis::compose::analyse;
use hsched_analysis::rules::RuleBook;
use hsched_analysis::schedule_check::Schedule;
use hsched_core::{CpuId, Duration, Instant, Msg, Params, Value};
use hsched_model::{
    Dist, LogKind, Machine, Op, Program, RunResult, Scenario, SchedulerSpec, SegmentKind,
    ThreadSpec,
};

mod common;
use common::{go, replies, tid};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn forever() -> Vec<Op> {
    vec![Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(100)))],
    }]
}

fn rsv(amount: u64, period: u64) -> Params {
    Params::new()
        .with("amount", Value::Duration(ms(amount)))
        .with("period", Value::Duration(ms(period)))
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

fn scenario(cpus: u32, root: SchedulerSpec, threads: Vec<ThreadSpec>) -> Scenario {
    Scenario {
        name: "multiprocessor".into(),
        description: String::new(),
        machine: Machine {
            cpus,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon: ms(400),
        seed: 3,
        default_scheduler: root.name.clone(),
        schedulers: vec![root],
        threads,
        script: vec![],
    }
}

fn root(policy: &str, params: &[(&str, &str)]) -> SchedulerSpec {
    let mut p = Params::new();
    for (k, v) in params {
        p.set(k, Value::Str(v.to_string()));
    }
    SchedulerSpec {
        name: "r".into(),
        policy: policy.into(),
        params: p,
        parents: vec![],
    }
}

/// A thread's run segments, as a schedule, and the CPUs they ran on.
fn runs(r: &RunResult, name: &str) -> (Schedule, Vec<CpuId>) {
    let t = tid(r, name);
    let segs: Vec<_> = r
        .trace
        .as_ref()
        .unwrap()
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t) && s.end > s.start)
        .collect();
    let mut cpus: Vec<CpuId> = segs.iter().map(|s| s.cpu).collect();
    cpus.sort();
    cpus.dedup();
    let s = Schedule::new(segs.iter().map(|s| (s.start.as_nanos(), s.end.as_nanos()))).unwrap();
    (s, cpus)
}

fn refusals(r: &RunResult) -> Vec<&str> {
    r.log
        .iter()
        .filter(|e| e.kind == LogKind::Refused)
        .map(|e| e.text.as_str())
        .collect()
}

/// Runs `scn`, checks that the analysis labels each of `admitted` with
/// its RESBH and `refused` as refused, that the simulator refused exactly
/// `refused` (its message containing `why`), and that every admitted
/// CPU-bound thread gets exactly its amount in every window of its grid
/// (from 0) over the 400ms run: a basic, hard reservation kept. Returns
/// the run.
fn check(scn: &Scenario, admitted: &[(&str, u64, u64)], refused: &str, why: &[&str]) -> RunResult {
    let a = analyse(scn, &RuleBook::standard());
    for &(t, am, p) in admitted {
        let e = a.edge(Some("r"), t).unwrap();
        assert_eq!(e.guarantee.to_string(), format!("RESBH {am}, {p}"), "{t}");
    }
    assert!(a.edge(Some("r"), refused).unwrap().refused, "{refused}");
    let r = go(scn);
    let no = refusals(&r);
    assert_eq!(no.len(), 1, "{no:?}");
    assert!(no[0].contains(refused), "{no:?}");
    for w in why {
        assert!(no[0].contains(w), "{w:?} not in {}", no[0]);
    }
    for &(t, am, p) in admitted {
        let (s, _) = runs(&r, t);
        let (am, p) = (ms(am).as_nanos(), ms(p).as_nanos());
        s.check_basic(am, p, 0, 400_000_000 / p, true)
            .unwrap_or_else(|e| panic!("{t}: {e}"));
    }
    r
}

/// Partitioned first-fit on 2 and 4 CPUs: one 7/10 per VP (each to the
/// lowest VP with room: the k-th to VP k), then two 3/20 per VP
/// (7/10 + 3/20 + 3/20 = 1 on each): all admitted; the next, 1/10, fits
/// nowhere (every VP holds 1/1): refused. Each thread runs on one CPU only.
#[test]
fn partitioned_res_admits_a_full_cpu_per_vp_and_keeps_every_label() {
    for cpus in [2u32, 4] {
        let mut threads = Vec::new();
        let mut admitted = Vec::new();
        let names: Vec<String> = (0..3 * cpus).map(|i| format!("t{i}")).collect();
        for (i, name) in names.iter().enumerate() {
            // The first `cpus` ask 7/10, the rest 3/20.
            let (a, p) = if i < cpus as usize { (7, 10) } else { (3, 20) };
            threads.push(thread(name, "r", rsv(a, p), forever()));
            admitted.push((name.as_str(), a, p));
        }
        let mp = root("res", &[("multiprocessor", "partitioned")]);
        let mut with_extra = threads.clone();
        with_extra.push(thread("extra", "r", rsv(1, 10), forever()));
        let scn = scenario(cpus, mp.clone(), with_extra);
        check(
            &scn,
            &admitted,
            "extra",
            &["fits on none", "VP 0 holds 1/1"],
        );
        // Without the refused thread (whose fallback puts a `machine` fp
        // above `r`, which then picks the CPU of each of r's VPs), r is
        // the root: its VP k is CPU k, and no thread changes CPU.
        let r = go(&scenario(cpus, mp, threads));
        for (t, ..) in &admitted {
            let (_, on) = runs(&r, t);
            assert_eq!(on.len(), 1, "{t} ran on {on:?}");
        }
        // The k-th 7/10 thread is on CPU k (the root's VP k is CPU k).
        for (k, name) in names.iter().take(cpus as usize).enumerate() {
            assert_eq!(runs(&r, name).1, vec![CpuId(k as u32)]);
        }
    }
}

/// Worst-fit differs: 6/10, 5/10, 4/10, 3/10 on 2 CPUs go to CPUs 0, 1,
/// 1, 0 (first-fit: 0, 1, 0, 1); then 2/10 is refused by worst-fit
/// (9/10 + 2/10 on both) and admitted by first-fit (on VP 1: 8/10 + 2/10).
#[test]
fn worst_fit_places_otherwise_than_first_fit() {
    let asks = [(6, 10), (5, 10), (4, 10), (3, 10), (2, 10)];
    for (fit, cpus_of, refused) in [
        ("first", [0u32, 1, 0, 1], false),
        ("worst", [0, 1, 1, 0], true),
    ] {
        let threads: Vec<ThreadSpec> = asks
            .iter()
            .enumerate()
            .map(|(i, &(a, p))| thread(&format!("t{i}"), "r", rsv(a, p), forever()))
            .collect();
        let mp = root("res", &[("multiprocessor", "partitioned"), ("fit", fit)]);
        // The first four, with `r` the root: each on its VP's CPU.
        let r = go(&scenario(2, mp.clone(), threads[..4].to_vec()));
        for (i, &cpu) in cpus_of.iter().enumerate() {
            let name = format!("t{i}");
            assert_eq!(runs(&r, &name).1, vec![CpuId(cpu)], "{fit}: {name}");
        }
        // The fifth: refused by worst-fit only, in the run and the analysis.
        let scn = scenario(2, mp, threads);
        let r = go(&scn);
        assert_eq!(refusals(&r).len(), usize::from(refused), "{fit}");
        let a = analyse(&scn, &RuleBook::standard());
        assert_eq!(a.edge(Some("r"), "t4").unwrap().refused, refused);
    }
}

/// Global EDF by the Goossens-Funk-Baruah bound Σu + (m-1)·u_max <= m.
/// 2 CPUs: 1/2, 1/2, 2/5, 1/10 admitted (Σ 3/2 + 1/2 = 2); 1/5 (listed
/// before 1/10) refused: 8/5 + 1/2 = 21/10 > 2. 4 CPUs: five of 1/2
/// admitted (5/2 + 3/2 = 4), a 1/10 refused (13/5 + 3/2 = 41/10 > 4).
#[test]
fn global_res_admits_up_to_the_density_bound_and_keeps_every_label() {
    let two = [
        ("a", 5, 10),
        ("b", 5, 10),
        ("c", 4, 10),
        ("x", 2, 10),
        ("e", 1, 10),
    ];
    let four = [
        ("a", 5, 10),
        ("b", 5, 10),
        ("c", 5, 10),
        ("d", 5, 10),
        ("e", 5, 10),
        ("x", 1, 10),
    ];
    for (cpus, set) in [(2u32, &two[..]), (4, &four[..])] {
        let threads = set
            .iter()
            .map(|&(n, a, p)| thread(n, "r", rsv(a, p), forever()))
            .collect();
        let scn = scenario(cpus, root("res", &[("multiprocessor", "global")]), threads);
        let admitted: Vec<(&str, u64, u64)> = set.iter().copied().filter(|t| t.0 != "x").collect();
        check(
            &scn,
            &admitted,
            "x",
            &[&format!("global EDF on {cpus} VPs"), "u_max = 1/2"],
        );
    }
}

/// Partitioned `dbs` on 2 CPUs: threads join CPU 0, 1, 0, 1 (fewest
/// children); each reserves 8ms of every 10ms window... once, in [0, 10ms]
/// with `relative`: a and b fit (8ms on each CPU), c's 8ms fits nowhere
/// (16ms in 10ms on both): refused naming both loads; d's 2ms fits on
/// CPU 0 (first-fit). Each reservation is served by its deadline and no
/// thread changes CPU.
#[test]
fn partitioned_dbs_admits_per_cpu_and_meets_every_reservation() {
    let ask = |amount: u64| {
        let mut ops = vec![Op::Msg {
            to: hsched_model::Target::Parent,
            msg: Msg::new("reserve")
                .arg("amount", Value::Duration(ms(amount)))
                .arg("deadline", Value::Duration(ms(10)))
                .arg("relative", Value::Bool(true)),
        }];
        ops.extend(forever());
        ops
    };
    let threads = vec![
        thread("a", "r", Params::new(), ask(8)),
        thread("b", "r", Params::new(), ask(8)),
        thread("c", "r", Params::new(), ask(8)),
        thread("d", "r", Params::new(), ask(2)),
    ];
    let mut scn = scenario(
        2,
        root("dbs", &[("multiprocessor", "partitioned")]),
        threads,
    );
    scn.horizon = ms(10);
    let r = go(&scn);
    let c = replies(&r, "c");
    assert!(
        c[0].text.contains("fits on none of its 2 VPs") && c[0].text.contains("peak load 80.00%"),
        "{}",
        c[0].text
    );
    for (t, amount) in [("a", 8), ("b", 8), ("d", 2)] {
        let rep = replies(&r, t);
        assert!(!rep[0].text.contains("refused"), "{}", rep[0].text);
        let (s, on) = runs(&r, t);
        assert!(s.supply(0, 10_000_000) >= ms(amount).as_nanos(), "{t}");
        assert_eq!(on.len(), 1, "{t} ran on {on:?}");
    }
    assert_eq!(runs(&r, "d").1, vec![CpuId(0)]);
}
