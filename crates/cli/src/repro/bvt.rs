//! Reproductions from the BVT paper (Duda & Cheriton, SOSP '99): Figs. 1–4,
//! Tables 4 and 5, the deadline experiments of §5 (Figs. 5–8) and the
//! configuration examples of §6.

use super::{scenario, share, simulate, simulate_with, Bound, Check, Entry};
use hsched_core::{Duration, Instant, ThreadId};
use hsched_model::{Op, RunResult, Scenario, SegmentKind};

const MCU: u64 = 10_000_000;

/// The BVT entries.
pub fn entries() -> Vec<Entry> {
    vec![
        Entry {
            name: "bvt-fig1",
            source: "BVT §2.1, Fig. 1",
            claim: "weights 2:1 give 2/3 and 1/3 of the CPU; the error between fair share and allocation never exceeds C + 1 mcu while both are runnable",
            scenarios: &["scenarios/papers/bvt-fig1.toml"],
            run: || {
                let r = simulate(scenario!("bvt-fig1.toml"))?;
                let c = 2 * MCU;
                Ok(vec![
                    Check {
                        quantity: "share of gcc (weight 2)".into(),
                        paper: 2.0 / 3.0,
                        measured: share(&r, "gcc"),
                        tolerance: 0.003,
                        why: "the allocation error is at most C + 1 mcu = 30ms, 0.3% of the 10s run",
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "share of bigsim (weight 1)".into(),
                        paper: 1.0 / 3.0,
                        measured: share(&r, "bigsim"),
                        tolerance: 0.003,
                        why: "as for gcc",
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "max |fair - allocated| of gcc over the run, in mcu".into(),
                        paper: (c + MCU) as f64 / MCU as f64,
                        measured: max_error_mcu(&r, "gcc", 2, 3, Instant::ZERO),
                        tolerance: 0.0,
                        why: "a bound, checked at every switch of the whole run: measured must not exceed it (verdict fails only above)",
                        bound: Bound::Within,
                        differs: None,
                    }
                    .at_most(),
                ])
            },
        },
        Entry {
            name: "bvt-fig2",
            source: "BVT §2.1, Fig. 2",
            claim: "after a 15-mcu sleep, the waking thread's AVT is brought up to SVT: it shares fairly with bigsim and does not starve it",
            scenarios: &["scenarios/papers/bvt-fig2.toml"],
            run: || {
                let r = simulate(scenario!("bvt-fig2.toml"))?;
                let wake = Instant::ZERO + Duration(15 * MCU);
                Ok(vec![
                    Check {
                        quantity: "share of bigsim after gcc wakes".into(),
                        paper: 0.5,
                        measured: share_between(&r, "bigsim", wake, horizon(&r)),
                        tolerance: 0.02,
                        why: "equal weights; C + 1 mcu = 30ms over the 1.85s after the wakeup is 1.6%",
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "longest wait of bigsim after gcc wakes, in mcu".into(),
                        paper: 4.0,
                        measured: longest_wait_mcu(&r, "bigsim", wake),
                        tolerance: 0.0,
                        why: "with equal weights each runs until it passes the other by C = 2 mcu, so waits last 2C = 4 mcu (Fig. 1's rule); without the SVT rule bigsim would wait 15 mcu + C",
                        bound: Bound::Within,
                        differs: None,
                    }
                    .at_most(),
                    Check {
                        quantity: "max |fair - allocated| of bigsim after gcc wakes, in mcu".into(),
                        paper: 3.0,
                        measured: max_error_mcu(&r, "bigsim", 1, 2, wake),
                        tolerance: 0.0,
                        why: "§2.1's bound C + 1 mcu, checked at every switch after the wakeup",
                        bound: Bound::Within,
                        differs: None,
                    }
                    .at_most(),
                ])
            },
        },
        Entry {
            name: "bvt-fig3",
            source: "BVT §2.2, Fig. 3",
            claim: "a warped thread (warp 50) waking every 10 mcu is dispatched at once, and still gets only its weighted share",
            scenarios: &["scenarios/papers/bvt-fig3.toml"],
            run: || {
                let r = simulate(scenario!("bvt-fig3.toml"))?;
                let mpeg = thread(&r, "mpeg");
                let worst = mpeg.wakeup_latencies.iter().max().copied().unwrap_or_default();
                Ok(vec![
                    Check {
                        quantity: "worst dispatch latency of mpeg (ms)".into(),
                        paper: 0.0,
                        measured: worst.as_nanos() as f64 / 1e6,
                        tolerance: 0.0,
                        why: "exact: its EVT is SVT - 50, below every other thread's, at each wakeup (no switch cost here)",
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "share of mpeg".into(),
                        paper: 0.5,
                        measured: share(&r, "mpeg"),
                        tolerance: 0.005,
                        why: "it needs 5 of every 10 mcu, which is its weighted share (advance 1 against 2 and 2)",
                        bound: Bound::Within,
                        differs: None,
                    },
                ])
            },
        },
        Entry {
            name: "bvt-fig4",
            source: "BVT §2.2, Fig. 4",
            claim: "a warped thread in an infinite loop is unwarped after its warp time limit L (5 mcu) and fair sharing resumes",
            scenarios: &["scenarios/papers/bvt-fig4.toml"],
            run: || {
                let r = simulate(scenario!("bvt-fig4.toml"))?;
                let unwarp = Instant::ZERO + Duration(10 * MCU);
                Ok(vec![
                    Check {
                        quantity: "first time gcc or bigsim runs after mpeg wakes (mcu)".into(),
                        paper: 10.0,
                        measured: first_run_after(&r, &["gcc", "bigsim"], Instant::ZERO + Duration(5 * MCU)),
                        tolerance: 0.0,
                        why: "exact: mpeg runs warped from 5 mcu until L = 5 mcu later, then reverts to its AVT, which is behind nobody's",
                        bound: Bound::Within,
                        differs: None,
                    }
                    .at_most(),
                    Check {
                        quantity: "share of mpeg after it is unwarped".into(),
                        paper: 1.0 / 3.0,
                        measured: share_between(&r, "mpeg", unwarp, horizon(&r)),
                        tolerance: 0.01,
                        why: "equal weights; the warped stretch is repaid within a few C",
                        bound: Bound::Within,
                        differs: None,
                    },
                ])
            },
        },
        Entry {
            name: "bvt-table4",
            source: "BVT §4.3, Table 4",
            claim: "rt / int / cont get CPU shares near 5 / 29.5 / 65.5 %, and dispatch latency is ordered rt << int << cont, with rt at about one context switch",
            scenarios: &["scenarios/papers/bvt-table4.toml"],
            run: || {
                let r = simulate(scenario!("bvt-table4.toml"))?;
                let mut checks = shares(&r, &[("rt", 0.05), ("int", 0.295), ("cont", 0.655)], 0.01);
                checks.extend(latencies(&r, 0.005, 5.02, 265.1));
                let end = horizon(&r);
                checks.push(Check {
                    quantity: "deadlines (end of period) rt misses".into(),
                    paper: 0.0,
                    measured: r.jobs.iter().filter(|j| j.missed(end)).count() as f64,
                    tolerance: 0.0,
                    why: "exact: a hard real-time thread with enough warp is dispatched at each release and runs its 5ms",
                    bound: Bound::Within,
                    differs: None,
                });
                Ok(checks)
            },
        },
        Entry {
            name: "bvt-table5",
            source: "BVT §4.3, Table 5",
            claim: "when rt fails into an infinite loop, int and cont keep their shares within a few percent, and int's latency stays bounded by about one mcu",
            scenarios: &["scenarios/papers/bvt-table5.toml"],
            run: || {
                let r = simulate(scenario!("bvt-table5.toml"))?;
                let mut checks = shares(&r, &[("rt", 0.061), ("int", 0.30), ("cont", 0.639)], 0.015);
                let int = thread(&r, "int");
                let worst = int.wakeup_latencies.iter().max().copied().unwrap_or_default();
                checks.push(
                    Check {
                        quantity: "worst dispatch latency of int (ms)".into(),
                        paper: 10.0,
                        measured: worst.as_nanos() as f64 / 1e6,
                        tolerance: 0.0,
                        why: "the paper's bound: one mcu (it checks warp limits at mcu granularity; hsched's timers are exact, so it may do better)",
                        bound: Bound::Within,
                        differs: None,
                    }
                    .at_most(),
                );
                Ok(checks)
            },
        },
        Entry {
            name: "bvt-5-deadlines",
            source: "BVT §5, Figs. 5–8",
            claim: "with exact predictions BVT makes within about 10% of DBS's deadlines at every contention level, like fixed priority, and WRR is uncompetitive; with prediction error DBS degrades and BVT does not, crossing over near 7–15% error",
            scenarios: &[
                "scenarios/papers/bvt-5-deadlines-bvt.toml",
                "scenarios/papers/bvt-5-deadlines-dbs.toml",
                "scenarios/papers/bvt-5-deadlines-fp.toml",
                "scenarios/papers/bvt-5-deadlines-wrr.toml",
            ],
            run: deadlines,
        },
        Entry {
            name: "bvt-6.2.3",
            source: "BVT §6.2.3: large-scale web server",
            claim: "with warp, short queries complete in half the time of round robin against one long query and in a third against two, while long queries keep their fair share",
            scenarios: &[
                "scenarios/papers/bvt-6.2.3-webserver-bvt.toml",
                "scenarios/papers/bvt-6.2.3-webserver-rr.toml",
            ],
            run: || {
                let bvt = simulate(scenario!("bvt-6.2.3-webserver-bvt.toml"))?;
                let rr = simulate(scenario!("bvt-6.2.3-webserver-rr.toml"))?;
                let second_long = Instant::ZERO + Duration::from_secs(10);
                let mean_response = |r: &RunResult, before: bool| {
                    let v: Vec<Duration> = r
                        .jobs
                        .iter()
                        .filter(|j| (j.release < second_long) == before)
                        .filter_map(|j| j.response())
                        .collect();
                    mean_ms(&v)
                };
                let why = "round robin finishes a 5-quantum query in 9 quanta (not 10) against one long query and in 14 (not 15) against two, since the query's last quantum ends it: 5/9 and 5/14";
                Ok(vec![
                    Check {
                        quantity: "short-query response, BVT over RR, one long query".into(),
                        paper: 0.5,
                        measured: mean_response(&bvt, true) / mean_response(&rr, true),
                        tolerance: 0.06,
                        why,
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "short-query response, BVT over RR, two long queries".into(),
                        paper: 1.0 / 3.0,
                        measured: mean_response(&bvt, false) / mean_response(&rr, false),
                        tolerance: 0.03,
                        why,
                        bound: Bound::Within,
                        differs: None,
                    },
                    Check {
                        quantity: "long1 over long2 CPU while both run, under BVT".into(),
                        paper: 1.0,
                        measured: received(&bvt, "long1", second_long, horizon(&bvt)) as f64
                            / received(&bvt, "long2", second_long, horizon(&bvt)) as f64,
                        tolerance: 0.02,
                        why: "equal weights; C + 1 mcu = 20ms over the 10s both run",
                        bound: Bound::Within,
                        differs: None,
                    },
                ])
            },
        },
        Entry {
            name: "bvt-6.1.1",
            source: "BVT §6.1.1 and §6.2.3: configuration",
            claim: "shares 10/30/60 % with C = 2 mcu give mcu advances 6, 2, 1, a virtual window V = 12 and a physical window W = 20 mcu (and the other numbers §6 states)",
            scenarios: &[],
            run: || {
                Ok(hsched_analysis::bvt_config::paper_numbers()
                    .into_iter()
                    .map(|n| Check {
                        quantity: format!("{} {}", n.section, n.quantity),
                        paper: n.paper.as_f64(),
                        measured: n.computed.as_f64(),
                        tolerance: 0.0,
                        why: "exact rational arithmetic",
                        bound: Bound::Within,
                        differs: None,
                    })
                    .collect())
            },
        },
    ]
}

fn horizon(r: &RunResult) -> Instant {
    Instant::ZERO + r.horizon
}

fn thread<'a>(r: &'a RunResult, name: &str) -> &'a hsched_model::ThreadResult {
    r.threads
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("the scenario has no thread `{name}`"))
}

fn id(r: &RunResult, name: &str) -> ThreadId {
    thread(r, name).id
}

/// (start, end) of every stretch `name` ran, in time order.
fn runs(r: &RunResult, name: &str) -> Vec<(Instant, Instant)> {
    let t = id(r, name);
    let trace = r.trace.as_ref().expect("repro runs record the trace");
    let mut v: Vec<_> = trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t))
        .map(|s| (s.start, s.end))
        .collect();
    v.sort();
    v
}

/// CPU time `name` received in [from, to).
fn received(r: &RunResult, name: &str, from: Instant, to: Instant) -> u64 {
    runs(r, name)
        .into_iter()
        .map(|(s, e)| e.min(to).as_nanos().saturating_sub(s.max(from).as_nanos()))
        .sum()
}

fn share_between(r: &RunResult, name: &str, from: Instant, to: Instant) -> f64 {
    received(r, name, from, to) as f64 / (to - from).as_nanos() as f64
}

/// The largest |fair - allocated| for `name` with fair share num/den from
/// `from` on, in mcu, over every segment boundary (the extremes of a
/// piecewise-linear difference lie there).
fn max_error_mcu(r: &RunResult, name: &str, num: u64, den: u64, from: Instant) -> f64 {
    let trace = r.trace.as_ref().expect("repro runs record the trace");
    let mut points: Vec<Instant> = trace
        .segments
        .iter()
        .flat_map(|s| [s.start, s.end])
        .collect();
    points.sort();
    points.dedup();
    let mut worst: i128 = 0;
    for p in points.into_iter().filter(|p| *p >= from) {
        let fair = ((p - from).as_nanos() as i128) * num as i128 / den as i128;
        let got = received(r, name, from, p) as i128;
        worst = worst.max((fair - got).abs());
    }
    worst as f64 / MCU as f64
}

/// The longest stretch after `from` during which `name` (always runnable)
/// did not run, in mcu.
fn longest_wait_mcu(r: &RunResult, name: &str, from: Instant) -> f64 {
    let mut last = from;
    let mut worst = 0;
    for (s, e) in runs(r, name).into_iter().filter(|(_, e)| *e > from) {
        worst = worst.max(s.as_nanos().saturating_sub(last.as_nanos()));
        last = e;
    }
    worst = worst.max(horizon(r).as_nanos() - last.as_nanos());
    worst as f64 / MCU as f64
}

/// The first time (in mcu) any of `names` runs at or after `from`.
fn first_run_after(r: &RunResult, names: &[&str], from: Instant) -> f64 {
    names
        .iter()
        .flat_map(|n| runs(r, n))
        .filter(|(_, e)| *e > from)
        .map(|(s, _)| s.max(from))
        .min()
        .map_or(f64::INFINITY, |t| t.as_nanos() as f64 / MCU as f64)
}

fn shares(r: &RunResult, expected: &[(&str, f64)], tolerance: f64) -> Vec<Check> {
    expected
        .iter()
        .map(|&(name, paper)| Check {
            quantity: format!("share of {name}"),
            paper,
            measured: share(r, name),
            tolerance,
            why: "the paper's Linux run is one measurement with I/O and X noise; our workload matches its description, not its exact timing",
            bound: Bound::Within,
            differs: None,
        })
        .collect()
}

fn mean_ms(samples: &[Duration]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.iter().map(|d| d.as_nanos() as f64).sum::<f64>() / samples.len() as f64 / 1e6
}

/// Dispatch latency as the paper's Table 4 reports it: rt and int after
/// their wakeups; cont, which never sleeps, the mean time it waits when it
/// is taken off the CPU.
fn latencies(r: &RunResult, rt: f64, int: f64, cont: f64) -> Vec<Check> {
    let rt_ms = mean_ms(&thread(r, "rt").wakeup_latencies);
    let int_ms = mean_ms(&thread(r, "int").wakeup_latencies);
    let cont_runs = runs(r, "cont");
    let waits: Vec<Duration> = cont_runs
        .windows(2)
        .map(|w| w[1].0 - w[0].1)
        .filter(|d| !d.is_zero())
        .collect();
    let cont_ms = mean_ms(&waits);
    vec![
        Check {
            quantity: "mean dispatch latency of rt (ms)".into(),
            paper: rt,
            measured: rt_ms,
            tolerance: 0.005,
            why: "about one context switch (5us here); hsched dispatches at the wakeup, so it measures 0 to 5us",
            bound: Bound::Within,
            differs: None,
        },
        Check {
            quantity: "mean dispatch latency of int (ms)".into(),
            paper: int,
            measured: int_ms,
            tolerance: 0.0,
            why: "an upper bound: int waits only when it wakes during an rt run (5ms at most); the paper's 5.02 includes Linux's own delays",
            bound: Bound::Within,
            differs: None,
        }
        .at_most(),
        Check {
            quantity: format!("cont's mean wait over int's latency (paper {:.1})", cont / int),
            paper: 10.0,
            measured: cont_ms / int_ms.max(1e-6),
            tolerance: 0.0,
            why: "batch waits tens of times longer than interactive (paper: 265.1ms against 5.02ms); we require at least 10x, since Linux's 265ms also held other processes",
            bound: Bound::Within,
            differs: None,
        }
        .at_least(),
        Check {
            quantity: "latency order rt < int < cont (1 = holds)".into(),
            paper: 1.0,
            measured: if rt_ms < int_ms && int_ms < cont_ms { 1.0 } else { 0.0 },
            tolerance: 0.0,
            why: "the paper's qualitative result",
            bound: Bound::Within,
            differs: None,
        },
    ]
}

/// Fraction of the randres deadlines made in a run.
fn made(r: &RunResult) -> f64 {
    let end = horizon(r);
    let jobs: Vec<_> = r.jobs.iter().filter(|j| j.deadline <= end).collect();
    let ok = jobs.iter().filter(|j| !j.missed(end)).count();
    ok as f64 / jobs.len().max(1) as f64
}

/// Sets the fussiness (per mille) and prediction error of every randres.
fn set_randres(scn: &mut Scenario, fussiness: u32, error: Duration, mode: hsched_model::ErrorMode) {
    for t in &mut scn.threads {
        for op in &mut t.program.ops {
            if let Op::Randres(rr) = op {
                rr.fussiness = fussiness;
                rr.error = error;
                rr.mode = mode;
            }
        }
    }
}

fn deadlines() -> Result<Vec<Check>, String> {
    use hsched_model::ErrorMode;
    let run = |which: (&'static str, &'static str), f: u32, error_ms: u64, mode: ErrorMode| {
        simulate_with(which, |scn| {
            set_randres(scn, f, Duration::from_millis(error_ms), mode)
        })
        .map(|r| made(&r))
    };
    let bvt = scenario!("bvt-5-deadlines-bvt.toml");
    let dbs = scenario!("bvt-5-deadlines-dbs.toml");
    let fp = scenario!("bvt-5-deadlines-fp.toml");
    let wrr = scenario!("bvt-5-deadlines-wrr.toml");
    let mut checks = Vec::new();
    // Fig. 5: exact predictions, each contention level.
    for (label, f) in [
        ("none", 0),
        ("low", 400),
        ("medium", 540),
        ("high", 660),
        ("hopeless", 750),
    ] {
        let (b, d, p, w) = (
            run(bvt, f, 0, ErrorMode::Mixed)?,
            run(dbs, f, 0, ErrorMode::Mixed)?,
            run(fp, f, 0, ErrorMode::Mixed)?,
            run(wrr, f, 0, ErrorMode::Mixed)?,
        );
        checks.push(
            Check {
                quantity: format!("f={:.2} ({label}): DBS made - BVT made", f as f64 / 1000.0),
                paper: 0.10,
                measured: d - b,
                tolerance: 0.0,
                why: "\"BVT is within 10% of DBS\" (Fig. 5): a bound",
                bound: Bound::Within,
                differs: None,
            }
            .at_most(),
        );
        checks.push(Check {
            quantity: format!("f={:.2} ({label}): BVT made - FPS made", f as f64 / 1000.0),
            paper: 0.0,
            measured: b - p,
            tolerance: 0.05,
            why: "\"the same behavior as fixed priority\" (Fig. 5); 5 points for the different tie-breaking",
            bound: Bound::Within,
            differs: None,
        });
        checks.push(
            Check {
                quantity: format!("f={:.2} ({label}): WRR made - BVT made", f as f64 / 1000.0),
                paper: 0.0,
                measured: w - b,
                tolerance: 0.0,
                why: "\"WRR is uncompetitive\": never better than BVT (a bound)",
                bound: Bound::Within,
                differs: None,
            }
            .at_most(),
        );
    }
    // Figs. 6-8: prediction error. BVT does not look at predictions, so its
    // result is the same at every error; DBS degrades as the error (mixed
    // sign: the paper's "DBS middle") grows. The paper: "unless the
    // application developers can program so that the CPU predictions are
    // within 15%, using BVT is better than using DBS".
    let mean_need_ms = 90.0; // need is uniform on 60..120ms
    for (label, f) in [("medium", 540), ("high", 660)] {
        let b = run(bvt, f, 0, ErrorMode::Mixed)?;
        let b30 = run(bvt, f, 30, ErrorMode::Mixed)?;
        let mut crossover = None;
        let mut d0 = 0.0;
        let mut last = 0.0;
        for error_ms in 0..=30 {
            let d = run(dbs, f, error_ms, ErrorMode::Mixed)?;
            if error_ms == 0 {
                d0 = d;
            }
            if crossover.is_none() && d <= b {
                crossover = Some(error_ms as f64 / mean_need_ms);
            }
            last = d;
        }
        let ff = f as f64 / 1000.0;
        checks.push(Check {
            quantity: format!("f={ff:.2} ({label}): BVT made with 33% error minus with none"),
            paper: 0.0,
            measured: b30 - b,
            tolerance: 0.0,
            why: "exact: BVT never sees the predictions",
            bound: Bound::Within,
            differs: None,
        });
        checks.push(
            Check {
                quantity: format!("f={ff:.2} ({label}): DBS made with no error minus with 33% error"),
                paper: 0.05,
                measured: d0 - last,
                tolerance: 0.0,
                why: "\"error in prediction degrades DBS significantly\": a drop of at least 5 points",
                bound: Bound::Within,
                differs: None,
            }
            .at_least(),
        );
        let crossover = crossover.unwrap_or(f64::INFINITY);
        checks.push(
            Check {
                quantity: format!("f={ff:.2} ({label}): error (of the mean need) where BVT overtakes DBS"),
                paper: 0.15,
                measured: crossover,
                tolerance: 0.0,
                why: "\"unless ... the CPU predictions are within 15%, using BVT is better than using DBS\" (a bound; measured in 1ms steps = 1.1%)",
                bound: Bound::Within,
                differs: None,
            }
            .at_most(),
        );
        if f == 660 {
            checks.push(Check {
                quantity: "f=0.66 (high): that crossover against the paper's".into(),
                paper: 0.074,
                measured: crossover,
                tolerance: 0.03,
                why: "\"BVT performs as well as DBS under high contention with CPU predictions in error by less than 7.4%\"; 3 points: the 1ms sweep step (1.1%) plus the error model (the paper does not define its %err exactly)",
                bound: Bound::Within,
                differs: None,
            });
        }
    }
    Ok(checks)
}

/// Timing entries (`hsched repro --timing`).
pub fn timing_entries() -> Vec<Entry> {
    Vec::new()
}
