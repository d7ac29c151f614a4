//! Reproductions from the HLS paper (Regehr & Stankovic) and the
//! time-sharing baseline the papers compare against.

use super::{node_share, scenario, share, simulate, Bound, Check, Entry};
use crate::repro::parse;
use hsched_core::{Duration, Instant};
use hsched_model::{RunResult, SegmentKind};

/// The HLS entries.
pub fn entries() -> Vec<Entry> {
    vec![
        Entry {
            name: "hls-timesharing-equal",
            source: "HLS §5.4 / Rialto §5: the time-sharing baseline",
            claim: "identical CPU-bound threads under round robin share the CPU equally (4 threads: 1/4 each)",
            scenarios: &["scenarios/papers/hls-timesharing-equal.toml"],
            run: || {
                let r = &simulate(scenario!("hls-timesharing-equal.toml"))?;
                Ok({
                r.threads
                    .iter()
                    .map(|t| Check {
                        quantity: format!("share of {}", t.name),
                        paper: 0.25,
                        measured: share(r, &t.name),
                        tolerance: 0.001,
                        why: "one 10ms quantum over the 10s horizon: the last rotation may be cut short",
                        bound: Bound::Within,
                        differs: None,
                    })
                    .collect()
                })
            },
        },
        Entry {
            name: "hls-5.4-join-slack",
            source: "HLS §4 (join) and §5.4 (schedulers as components: res + join)",
            claim: "a join lets a reservation's slack flow to a second scheduler: a 3ms/10ms hard reservation joined with time sharing against one batch thread gives 0.3 + 0.7/2 = 0.65",
            scenarios: &["scenarios/papers/hls-5.4-join-slack.toml"],
            run: || {
                let r = &simulate(scenario!("hls-5.4-join-slack.toml"))?;
                Ok({
                vec![
                    Check {
                        quantity: "share of t (reservation + slack)".into(),
                        paper: 0.65,
                        measured: share(r, "t"),
                        tolerance: 0.01,
                        why: "rr hands out 10ms quanta inside 7ms windows between reservation periods, so who gets a window alternates; the imbalance stays under one quantum per 100 windows",
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "share of b (the rest)".into(),
                        paper: 0.35,
                        measured: share(r, "b"),
                        tolerance: 0.01,
                        why: "the complement of t's share (no idle time, no switch cost)",
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "CPU received by the reservation".into(),
                        paper: 0.30,
                        measured: node_share(r, "res"),
                        tolerance: 0.001,
                        why: "the reservation is exact to the nanosecond; one period may be cut by the horizon",
                        bound: Bound::Within,
                        differs: None,
                    },
                ]
                })
            },
        },
        Entry {
            name: "hls-5.4-reservation-only",
            source: "HLS §5.1 (res, a hard reservation) and §5.4, the contrast case",
            claim: "without the join the same hard reservation caps the thread at exactly 3ms/10ms = 0.30",
            scenarios: &["scenarios/papers/hls-5.4-reservation-only.toml"],
            run: || {
                let r = &simulate(scenario!("hls-5.4-reservation-only.toml"))?;
                Ok({
                vec![
                    Check {
                        quantity: "share of t (hard reservation only)".into(),
                        paper: 0.30,
                        measured: share(r, "t"),
                        tolerance: 0.001,
                        why: "the reservation is exact to the nanosecond; one period may be cut by the horizon",
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "share of b".into(),
                        paper: 0.70,
                        measured: share(r, "b"),
                        tolerance: 0.001,
                        why: "the complement of t's share",
                        bound: Bound::Within,
                        differs: None,
                    },
                ]
                })
            },
        },
        Entry {
            name: "hls-fp-null",
            source: "HLS §4, fixed priority",
            claim: "a fixed-priority scheduler passes its guarantee (ALL) to its highest-priority child; the others get NULL, since that child may be CPU bound",
            scenarios: &["scenarios/papers/hls-fp-null.toml"],
            run: || {
                let r = &simulate(scenario!("hls-fp-null.toml"))?;
                Ok({
                vec![
                    Check {
                        quantity: "share of high (ALL)".into(),
                        paper: 1.0,
                        measured: share(r, "high"),
                        tolerance: 0.0,
                        why: "exact: nothing else can run while it is runnable",
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "share of low (NULL)".into(),
                        paper: 0.0,
                        measured: share(r, "low"),
                        tolerance: 0.0,
                        why: "exact",
                        bound: Bound::Within,
                        differs: None,
                    },
                ]
                })
            },
        },
        Entry {
            name: "hls-table5",
            source: "HLS §7.2, Table 5 (res, join, ts)",
            claim: "a CPU-bound 10ms frame loop that must not go 33ms without a frame, beside a CPU-bound background thread, 30s each: RESBH 10, 33 gives it 32.6% and no miss; a soft reservation (res + join + ts) 67.3% and no miss; time sharing at high, equal and low priority 96.7% / 49.9% / 3.11% with 6, 290 and 985 misses",
            scenarios: &[
                "scenarios/papers/hls-table5-resbh.toml",
                "scenarios/papers/hls-table5-resbs.toml",
                "scenarios/papers/hls-table5-high.toml",
                "scenarios/papers/hls-table5-default.toml",
                "scenarios/papers/hls-table5-low.toml",
            ],
            run: table5,
        },
        Entry {
            name: "hls-fig4",
            source: "HLS §5.4, Fig. 4 (CPU service classes)",
            claim: "RES gives T1 a hard reservation (RESBH 1, 10), T2 and T3 soft ones through joins (RESBS 5, 33) and an overrun partition to a round-robin OVR under which the joins also sit: each thread gets its reservation, plus a share of the partition when it overruns; time sharing (T4) gets the rest",
            scenarios: &["scenarios/papers/hls-fig4.toml"],
            run: fig4,
        },
    ]
}

/// Deadline misses of thread `name`: `frames` deadlines missed by the end.
fn misses(r: &RunResult, name: &str) -> f64 {
    let t = r.threads.iter().find(|t| t.name == name);
    let t = t
        .unwrap_or_else(|| panic!("the scenario has no thread `{name}`"))
        .id;
    let end = Instant::ZERO + r.horizon;
    r.jobs
        .iter()
        .filter(|j| j.thread == t && j.missed(end))
        .count() as f64
}

/// The most CPU time (in ms) thread `name` got in one window
/// `[k * len, (k + 1) * len)` of the run, from the trace.
fn most_in_a_window(r: &RunResult, name: &str, len: Duration) -> f64 {
    let t = r.threads.iter().find(|t| t.name == name);
    let t = t
        .unwrap_or_else(|| panic!("the scenario has no thread `{name}`"))
        .id;
    let len = len.as_nanos();
    let mut per_window: Vec<u64> = Vec::new();
    let trace = r.trace.as_ref().expect("simulate records the trace");
    for s in trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t))
    {
        let (mut at, end) = (s.start.as_nanos(), s.end.as_nanos());
        while at < end {
            let k = (at / len) as usize;
            let stop = end.min((k as u64 + 1) * len);
            if per_window.len() <= k {
                per_window.resize(k + 1, 0);
            }
            per_window[k] += stop - at;
            at = stop;
        }
    }
    per_window.into_iter().max().unwrap_or(0) as f64 / 1e6
}

/// Why the shares of Table 5 may differ by 3 points.
const TABLE5_SHARE: &str = "3 points: the paper's single 30s run on Windows 2000 lost time to interrupts, other threads and coarse timers; the simulation has none of those, and its time-sharing model is simplified";

/// Why a starved row's shares may differ by half a point.
const STARVED_SHARE: &str = "half a point, 150ms of 30s: about one starvation relief more or less (the relief count is 6 or 7 in 30s), the coarsest step the starved thread's share moves by";

/// Why the starved rows differ, as the diagnosis checks measure it.
const TABLE5_RELIEF: &str = "the starved thread gets only ts's starvation relief, 7 x 50ms in 30s = 1.17%; the paper's 3.1-3.3% would need a 140ms relief, which the diagnosis run shows costs ~28 misses in the high row, not the paper's 6: the paper's extra ~2% came in pieces too short to cost a frame, which the model has no source for";

fn table5() -> Result<Vec<Check>, String> {
    let resbh = simulate(scenario!("hls-table5-resbh.toml"))?;
    let resbs = simulate(scenario!("hls-table5-resbs.toml"))?;
    let high = simulate(scenario!("hls-table5-high.toml"))?;
    let default = simulate(scenario!("hls-table5-default.toml"))?;
    let low = simulate(scenario!("hls-table5-low.toml"))?;
    let row = |r: &RunResult, label: &str, app: f64, bg: f64| {
        vec![
            Check {
                quantity: format!("{label}: share of app"),
                paper: app,
                measured: share(r, "app"),
                tolerance: 0.03,
                why: TABLE5_SHARE,
                bound: Bound::Within,
                differs: None,
            },
            Check {
                quantity: format!("{label}: share of background"),
                paper: bg,
                measured: share(r, "bg"),
                tolerance: 0.03,
                why: TABLE5_SHARE,
                bound: Bound::Within,
                differs: None,
            },
        ]
    };
    let mut checks = Vec::new();
    checks.extend(row(&resbh, "RESBH 10, 33", 0.326, 0.673));
    checks.push(Check {
        quantity: "RESBH 10, 33: most CPU of app in a 33ms window (ms)".into(),
        paper: 10.0,
        measured: most_in_a_window(&resbh, "app", Duration::from_millis(33)),
        tolerance: 0.0,
        why: "hard: never more than the amount in a window of the grid (from 0, when it joined); the paper's 32.6% is above 10/33 = 30.3%, probably because its Windows 2000 budgets were enforced at clock-interrupt granularity",
        bound: Bound::AtMost,
        differs: None,
    });
    checks.push(Check {
        quantity: "RESBH 10, 33: misses".into(),
        paper: 0.0,
        measured: misses(&resbh, "app"),
        tolerance: 0.0,
        why: "exact: the 10ms come at the start of every 33ms window, so frames are exactly 33ms apart",
        bound: Bound::Within,
        differs: None,
    });
    checks.extend(row(&resbs, "RESBS 10, 33", 0.673, 0.326));
    checks.push(Check {
        quantity: "RESBS 10, 33: misses".into(),
        paper: 0.0,
        measured: misses(&resbs, "app"),
        tolerance: 0.0,
        why:
            "exact: the reserved 10ms of every window complete a frame, whatever time sharing adds",
        bound: Bound::Within,
        differs: None,
    });
    checks.push(Check {
        quantity: "RESBS 10, 33: CPU through res".into(),
        paper: 10.0 / 33.0,
        measured: node_share(&resbs, "res"),
        tolerance: 0.001,
        why: "the reservation part is exact; the last window is cut by the horizon",
        bound: Bound::Within,
        differs: None,
    });
    let mut high_row = row(&high, "NULL, high priority", 0.967, 0.0326);
    for c in &mut high_row {
        c.tolerance = 0.005;
        c.why = STARVED_SHARE;
        c.differs = Some(TABLE5_RELIEF);
    }
    checks.extend(high_row);
    checks.push(Check {
        quantity: "NULL, high priority: misses".into(),
        paper: 6.0,
        measured: misses(&high, "app"),
        tolerance: 1.0,
        why: "one miss per starvation relief (a 50ms relief is a 60ms gap): the paper's balance set manager scans once a second for threads ready 4s, so its reliefs come 4 to 5s apart, 6 or 7 in 30s",
        bound: Bound::Within,
        differs: None,
    });
    checks.extend(row(&default, "NULL, default priority", 0.499, 0.50));
    checks.push(Check {
        quantity: "NULL, default priority: misses".into(),
        paper: 290.0,
        measured: misses(&default, "app"),
        tolerance: 15.0,
        why: "one miss per cycle of two quanta, horizon / (2 * quantum): the paper's 290 is a 51.7ms quantum against ts's 50ms; 5% is about one tick of a 10ms clock on a ~100ms cycle over one 30s run",
        bound: Bound::Within,
        differs: None,
    });
    let mut low_row = row(&low, "NULL, low priority", 0.0311, 0.969);
    for c in &mut low_row {
        c.tolerance = 0.005;
        c.why = STARVED_SHARE;
        c.differs = Some(TABLE5_RELIEF);
    }
    checks.extend(low_row);
    checks.push(Check {
        quantity: "NULL, low priority: misses".into(),
        paper: 985.0,
        measured: misses(&low, "app"),
        tolerance: 15.0,
        why: "as the default row: 5% of one 30s run",
        bound: Bound::Within,
        differs: Some("no 30s run can miss more than 30s / 33ms = 909 deadlines (the check below measures it with relief off: the app never runs); the paper's 985 counts a longer run or a finer rule than one miss per 33ms without a frame, which the paper does not state"),
    });
    // The diagnosis of the starved rows, measured: the relief quantum that
    // gives the starved thread the paper's 3.2% costs the app a miss for
    // every 33ms of it, far more than the paper's 6.
    let relief = |name: &str, q: Duration, after: Duration| {
        super::simulate_with(scenario!("hls-table5-high.toml"), |s| {
            let ts = s.schedulers.iter_mut().find(|s| s.name == "ts");
            let ts = ts.expect("the scenario has `ts`");
            ts.params
                .set("starve_quantum", hsched_core::Value::Duration(q));
            ts.params
                .set("starve_after", hsched_core::Value::Duration(after));
        })
        .map(|r| (share(&r, name), misses(&r, "app")))
    };
    let (long_share, long_misses) =
        relief("bg", Duration::from_millis(140), Duration::from_secs(4))?;
    checks.push(Check::new(
        "diagnosis: bg's share with a 140ms relief (7 x 140ms = 3.27%)",
        0.0326,
        long_share,
        0.003,
        "a relief long enough for the paper's 3.26% share",
    ));
    checks.push(
        Check::new(
            "diagnosis: the app's misses with that 140ms relief",
            6.0,
            long_misses,
            1.0,
            "as the high-priority row's misses",
        )
        .differs("measured: a 140ms relief is a 150ms gap, 4 misses each, 28 in all: no relief length gives both the paper's 3.26% and its 6 misses, so the paper's starved thread got most of its 3% in pieces shorter than the 23ms a frame can spare (too short to miss), which the model has no source for"),
    );
    let low_never = super::simulate_with(scenario!("hls-table5-low.toml"), |s| {
        let ts = s.schedulers.iter_mut().find(|s| s.name == "ts");
        let ts = ts.expect("the scenario has `ts`");
        ts.params
            .set("starve_after", hsched_core::Value::Duration(Duration::ZERO));
    })?;
    checks.push(Check::new(
        "diagnosis: low-priority misses with relief off (the most in 30s)",
        (30_000.0f64 / 33.0).floor(),
        misses(&low_never, "app"),
        0.0,
        "exact: the app never runs, one miss per 33ms of the 30s",
    ));
    let (h, d, l) = (
        misses(&high, "app"),
        misses(&default, "app"),
        misses(&low, "app"),
    );
    checks.push(Check {
        quantity: "misses grow: high < default < low".into(),
        paper: 1.0,
        measured: f64::from(u8::from(h < d && d < l)),
        tolerance: 0.0,
        why: "the order is the paper's claim: the lower the priority, the more misses",
        bound: Bound::Within,
        differs: None,
    });
    Ok(checks)
}

/// Amount and period (ms) of the reservation `res` gives the link of
/// scheduler or thread `name` (its `at` under `res`).
fn reservation(scn: &hsched_model::Scenario, name: &str) -> Result<(f64, f64), String> {
    let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
    let of = |p: &hsched_core::Params| match (p.opt_duration("amount"), p.opt_duration("period")) {
        (Some(a), Some(t)) => Ok((ms(a), ms(t))),
        _ => Err(format!(
            "`{name}` has no reservation (amount, period) under res"
        )),
    };
    if let Some(s) = scn.schedulers.iter().find(|s| s.name == name) {
        let link = s.parents.iter().find(|l| l.parent == "res");
        return of(&link
            .ok_or_else(|| format!("`{name}` is not under res"))?
            .params);
    }
    let t = scn.threads.iter().find(|t| t.name == name);
    of(&t
        .ok_or_else(|| format!("the scenario has no `{name}`"))?
        .params)
}

/// Run time and period (ms) of a thread whose program is one fixed-length
/// periodic job.
fn periodic_demand(scn: &hsched_model::Scenario, name: &str) -> Result<(f64, f64), String> {
    use hsched_model::{Dist, Op};
    let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
    let t = scn.threads.iter().find(|t| t.name == name);
    let t = t.ok_or_else(|| format!("the scenario has no thread `{name}`"))?;
    match t.program.ops.as_slice() {
        [Op::Periodic { period, body, .. }] => {
            let mut run = 0.0;
            for op in body {
                match op {
                    Op::Run(Dist::Fixed(d)) => run += ms(*d),
                    _ => return Err(format!("`{name}`: the derivation needs fixed `run`s only")),
                }
            }
            Ok((run, ms(*period)))
        }
        _ => Err(format!("`{name}`: the derivation needs one `periodic`")),
    }
}

/// The `quantum` (ms) of round-robin scheduler `name`.
fn rr_quantum(scn: &hsched_model::Scenario, name: &str) -> Result<f64, String> {
    let s = scn.schedulers.iter().find(|s| s.name == name);
    let s = s.ok_or_else(|| format!("the scenario has no scheduler `{name}`"))?;
    let q = s.params.opt_duration("quantum");
    let q = q.ok_or_else(|| format!("`{name}` needs an explicit `quantum` for the derivation"))?;
    Ok(q.as_nanos() as f64 / 1e6)
}

/// What the second of two always-runnable threads gets of `total` ms of
/// round robin in `quantum`-ms turns, the first taking the first turn.
fn second_turns(total: f64, quantum: f64) -> f64 {
    let (mut t, mut got, mut second) = (0.0, 0.0, false);
    while t < total {
        let len = quantum.min(total - t);
        if second {
            got += len;
        }
        t += len;
        second = !second;
    }
    got
}

/// Fig. 4 under the paper's rule, from the scenario's own parameters. RES
/// serves T1, then the two reservations (J2's first: both end with the
/// window, J2 joined first), then OVR, whose partition comes last on the
/// tie. So OVR starts once both budgets are spent: T2 (always overrunning)
/// took the first turn, T3 takes the second and every other turn of round
/// robin until its job is done; T2 gets the rest of the partition. T4 gets
/// what the reservations leave, plus any of T3's budget its job leaves.
struct Fig4Rule {
    t1: f64,
    t2: f64,
    t3: f64,
    t4: f64,
    partition: f64,
    /// T3's own budget (ms per window, what its job uses of it).
    own3: f64,
    /// The common period (ms).
    period: f64,
    /// Whether T3's job is done within its period.
    t3_served: bool,
    /// T3's jobs in the horizon.
    t3_jobs: f64,
}

fn fig4_rule(scn: &hsched_model::Scenario) -> Result<Fig4Rule, String> {
    let (a1, p1) = reservation(scn, "t1")?;
    let (b2, p2) = reservation(scn, "j2")?;
    let (b3, p3) = reservation(scn, "j3")?;
    let (o, po) = reservation(scn, "ovr")?;
    let (run3, pt3) = periodic_demand(scn, "t3")?;
    if p2 != p3 || p3 != po || pt3 != po {
        return Err("the derivation assumes J2, J3, OVR and T3 share one period".into());
    }
    let own3 = run3.min(b3);
    let over3 = (run3 - own3).min(second_turns(o, rr_quantum(scn, "ovr")?));
    let horizon = scn.horizon.as_nanos() as f64 / 1e6;
    Ok(Fig4Rule {
        t1: a1 / p1,
        t2: (b2 + o - over3) / po,
        t3: (own3 + over3) / po,
        t4: 1.0 - a1 / p1 - (b2 + own3 + o) / po,
        partition: o / po,
        own3,
        period: po,
        t3_served: own3 + over3 >= run3,
        t3_jobs: (horizon / pt3).floor(),
    })
}

fn fig4() -> Result<Vec<Check>, String> {
    let (path, text) = scenario!("hls-fig4.toml");
    let scn = parse((path, text))?;
    let rule = fig4_rule(&scn)?;
    let r = &simulate((path, text))?;
    // The cause of the earlier disagreement, measured: the partition as a
    // plain reservation (no `overrun`): on the EDF tie RES serves OVR,
    // admitted first, before J3's reservation, so T2, exhausted first,
    // takes all of the partition and T3 gets only its own budget.
    let plain = &super::simulate_with((path, text), |s| {
        for c in s.schedulers.iter_mut().filter(|s| s.name == "ovr") {
            for l in c.parents.iter_mut() {
                l.params.set("overrun", hsched_core::Value::Bool(false));
            }
        }
    })?;
    const HORIZON: &str = "exact in the rule; the horizon may cut the last period (1 in 1000 of a 33ms grid over 33s: 0.0005 bounds what one period can shift)";
    let (missed, missed_why) = if rule.t3_served {
        (
            0.0,
            "exact: its budget and its overrun both come within its period",
        )
    } else {
        (
            rule.t3_jobs,
            "its job needs more than its budget and its turns of the partition, so its backlog grows and every job is late; 1 for the job due at the horizon, which the run may not judge",
        )
    };
    Ok(vec![
        Check::new("T1: RESBH 1, 10", rule.t1, share(r, "t1"), 0.0005, HORIZON),
        Check::new(
            "OVR: the overrun partition",
            rule.partition,
            node_share(r, "ovr"),
            0.0005,
            "T2 always overruns, so the partition is always used, all of it even though OVR wakes only at T2's overrun (RES's `overrun`: no CBS cut on its late wake-up); the horizon may cut the last window",
        ),
        Check::new(
            "T2 (always overruns): its budget + the partition T3 leaves",
            rule.t2,
            share(r, "t2"),
            0.0005,
            HORIZON,
        ),
        Check::new(
            "T3 (periodic, overruns its budget): budget + its turns of OVR",
            rule.t3,
            share(r, "t3"),
            0.0005,
            HORIZON,
        ),
        Check::new(
            "T3: missed deadlines",
            missed,
            misses(r, "t3"),
            if rule.t3_served { 0.0 } else { 1.0 },
            missed_why,
        ),
        Check::new(
            "T4 (NULL): what the reservations leave",
            rule.t4,
            share(r, "t4"),
            0.0005,
            HORIZON,
        ),
        Check::new(
            "contrast, the partition without `overrun`: T3 gets only its own budget",
            rule.own3 / rule.period,
            share(plain, "t3"),
            0.0005,
            "the measured cause of the old 0.404 for T2: on the EDF tie OVR (admitted first) ran before J3's reservation and spent the partition on T2; tolerance as above",
        ),
    ])
}

/// Timing entries (`hsched repro --timing`).
pub fn timing_entries() -> Vec<Entry> {
    vec![Entry {
        name: "hls-switch-levels",
        source: "HLS §7.1 (context switch cost: 7.10µs native, 11.7µs under HLS, +0.96µs per level)",
        claim: "a context switch under HLS's time-sharing scheduler costs 11.7µs against the native 7.10µs, and each additional level of the hierarchy traversed adds roughly 0.96µs: the cost grows linearly with depth (here: the same step per level, as a ratio of steps timed side by side)",
        scenarios: &[],
        run: switch_levels,
    }]
}

/// Wall time per decision of CPU-bound threads under a chain of 1 to 4
/// `rr` levels (`hsched bench`'s measure), best of several rounds after a
/// warm-up round, the levels interleaved within each round.
fn switch_levels() -> Result<Vec<Check>, String> {
    const THREADS: usize = 10;
    const QUANTA: u64 = 50_000;
    const ROUNDS: usize = 5;
    let measure = |levels| {
        crate::bench::measure(THREADS, levels, QUANTA)
            .map(|m| m.0)
            .map_err(|e| e.to_string())
    };
    for levels in 1..=4 {
        measure(levels)?; // warm-up
    }
    let mut best = [f64::INFINITY; 4];
    for _ in 0..ROUNDS {
        for (i, b) in best.iter_mut().enumerate() {
            *b = b.min(measure(i + 1)?);
        }
    }
    let [c1, c2, c3, c4] = best;
    // The paper's numbers give the same per-level step at every depth
    // (0.96µs each); their size against a one-level switch (8%) is not
    // compared: the rest of the paper's 11.7µs is Windows 2000's own switch
    // work (registers, address space, its bookkeeping), which a simulated
    // decision does not do, so the base the step is a fraction of differs.
    let deeper = c1 < c2 && c2 < c3 && c3 < c4;
    Ok(vec![
        Check::new(
            "each level deeper costs more: t1 < t2 < t3 < t4 (1 = yes)",
            1.0,
            if deeper { 1.0 } else { 0.0 },
            0.0,
            "an ordering: the paper's costs grow by 0.96µs a level",
        ),
        Check::new(
            "linear in depth: the 4th level's step / the 2nd's, (t4 - t3) / (t2 - t1)",
            1.0, // 0.96µs / 0.96µs
            (c4 - c3) / (c2 - c1),
            0.3,
            "the paper's steps are equal; a difference of two best-of-5 timings, each within a few percent, is noisier than either: 30% of the step",
        ),
        Check::new(
            "linear in depth: the mean step over 3 levels / the 2nd's, (t4 - t1) / 3(t2 - t1)",
            1.0,
            (c4 - c1) / (3.0 * (c2 - c1)),
            0.2,
            "as above, averaged over three steps",
        ),
    ])
}
