//! `hsched bench`: simulator throughput, the cost of one scheduling
//! decision per hierarchy level, and the Rialto paper's measurements (the
//! decision cost against the number of threads, graph construction,
//! constraint feasibility), measured side by side in one run.
//!
//! The machine this runs on may be shared and noisy, so every figure is the
//! median of several repetitions, and the figures that matter are ratios
//! between configurations measured in the same run. Set-up cost (creating
//! 100,000 threads, their first wake-ups) is kept out by warming each run up
//! before the timed window.

pub(crate) mod plugin;
mod stats;

pub(crate) use stats::{best, best_series};

use crate::CliError;
use hsched_core::{Duration, Instant, Params, Value};
use hsched_policies::rialto::figures;
use hsched_sim::{workloads, SimOptions, Simulation};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant as WallClock;

/// Wall nanoseconds per decision and events per wall-second at steady
/// state: the run is warmed up for a fifth of its quanta (thread creation,
/// first wake-ups), then a window of the rest is timed.
pub(crate) fn measure(threads: usize, levels: usize, quanta: u64) -> Result<(f64, f64), CliError> {
    let quantum = Duration::from_millis(1);
    let horizon = Duration::from_millis(quanta + quanta / 5 + 1);
    let scn = workloads::cpu_bound(threads, levels, 1, quantum, horizon);
    let mut sim = Simulation::new(&scn, &SimOptions::default(), &[]).map_err(CliError::Failed)?;
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5));
    let (d0, e0) = (sim.decisions(), sim.events());
    let started = WallClock::now();
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5 + quanta));
    let wall = started.elapsed().as_nanos() as f64;
    let (d, e) = (sim.decisions() - d0, sim.events() - e0);
    Ok((wall / d.max(1) as f64, e as f64 / (wall / 1e9)))
}

/// Like `measure`, for CPU-bound threads under one `bvt` (mcu 1ms, C 1ms):
/// every decision is a countdown expiry that picks the smallest EVT.
fn measure_bvt(threads: usize, quanta: u64) -> Result<f64, CliError> {
    let ms = |x| Value::Duration(Duration::from_millis(x));
    let params = Params::new().with("mcu", ms(1)).with("allowance", ms(1));
    let horizon = Duration::from_millis(2 * quanta + quanta / 5 + 1);
    let scn = workloads::flat(threads, 1, "bvt", params, horizon);
    let mut sim = Simulation::new(&scn, &SimOptions::default(), &[]).map_err(CliError::Failed)?;
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5));
    let d0 = sim.decisions();
    let started = WallClock::now();
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5 + 2 * quanta));
    let wall = started.elapsed().as_nanos() as f64;
    Ok(wall / (sim.decisions() - d0).max(1) as f64)
}

/// Like `measure_bvt`, for CPU-bound threads under one `hfsc` (quantum
/// 1ms), each with the concave curve <8e-6, 1ms, 4e-6> (admitted up to
/// 100,000 threads): decisions go through eligibility, deadline and
/// finish-value sets.
fn measure_hfsc(threads: usize, quanta: u64) -> Result<f64, CliError> {
    let params = Params::new().with("quantum", Value::Duration(Duration::from_millis(1)));
    let horizon = Duration::from_millis(2 * quanta + quanta / 5 + 1);
    let mut scn = workloads::flat(threads, 1, "hfsc", params, horizon);
    for t in &mut scn.threads {
        t.params = Params::new()
            .with("r1", Value::Str("0.000008".into()))
            .with("x", Value::Duration(Duration::from_millis(1)))
            .with("r2", Value::Str("0.000004".into()));
    }
    let mut sim = Simulation::new(&scn, &SimOptions::default(), &[]).map_err(CliError::Failed)?;
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5));
    let d0 = sim.decisions();
    let started = WallClock::now();
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5 + 2 * quanta));
    let wall = started.elapsed().as_nanos() as f64;
    Ok(wall / (sim.decisions() - d0).max(1) as f64)
}

/// Like `measure_bvt`, for CPU-bound threads under one `frc` or `rcsp`
/// (the policy named): every thread at rate 1e-6 (Σr = 0.1 at 100,000
/// threads, so Corollary 1.1's setting) and work quantum 1ms; every decision ends a quantum and picks the smallest (for
/// `rcsp`: the eligible highest-precedence) finish value.
fn measure_frc(policy: &str, threads: usize, quanta: u64) -> Result<f64, CliError> {
    let horizon = Duration::from_millis(2 * quanta + quanta / 5 + 1);
    let mut scn = workloads::flat(threads, 1, policy, Params::new(), horizon);
    for t in &mut scn.threads {
        t.params = Params::new()
            .with("rate", Value::Str("0.000001".into()))
            .with("quantum", Value::Duration(Duration::from_millis(1)));
    }
    let mut sim = Simulation::new(&scn, &SimOptions::default(), &[]).map_err(CliError::Failed)?;
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5));
    let d0 = sim.decisions();
    let started = WallClock::now();
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5 + 2 * quanta));
    let wall = started.elapsed().as_nanos() as f64;
    Ok(wall / (sim.decisions() - d0).max(1) as f64)
}

/// Like `measure_bvt`, for `rialto` ([`workloads::rialto`]): a fixed graph
/// and constraint load, `threads` threads in all.
pub(crate) fn measure_rialto(threads: usize, quanta: u64) -> Result<f64, CliError> {
    let horizon = Duration::from_millis(10 * (quanta + quanta / 5) + 1);
    let scn = workloads::rialto(threads, horizon);
    let mut sim = Simulation::new(&scn, &SimOptions::default(), &[]).map_err(CliError::Failed)?;
    sim.run_until(Instant::ZERO + Duration::from_millis(10 * (quanta / 5)));
    let d0 = sim.decisions();
    let started = WallClock::now();
    sim.run_until(Instant::ZERO + horizon);
    let wall = started.elapsed().as_nanos() as f64;
    Ok(wall / (sim.decisions() - d0).max(1) as f64)
}

/// Fig. 5-1: wall ns of each reservation of the cumulative sequence of
/// 400us reservations, and whether it rebuilt the graph.
pub(crate) fn graph_construction() -> Result<Vec<(Duration, bool, f64)>, CliError> {
    let mut g = figures::Reservations::new();
    let mut out = Vec::new();
    for (a, period) in workloads::rialto_fig_5_1_periods().into_iter().enumerate() {
        let started = WallClock::now();
        let rebuilt = g.reserve(a as u32, period);
        let wall = started.elapsed().as_nanos() as f64;
        let rebuilt = rebuilt.map_err(|e| {
            CliError::Failed(format!("Fig. 5-1 reservation {a} ({period}) refused: {e}"))
        })?;
        out.push((period, rebuilt, wall));
    }
    Ok(out)
}

/// Fig. 5-2's book: no reservations (everything from one free node), or
/// the Fig. 5-1 graph of 58 activities.
fn fig_5_2_book(with_reservations: bool) -> figures::Feasibility {
    let periods = match with_reservations {
        true => workloads::rialto_fig_5_1_periods(),
        false => Vec::new(),
    };
    figures::Feasibility::new(&periods)
}

/// Fig. 5-2: wall ns of each of `count` feasibility analyses of 300us
/// constraints due within 3s, with no reservations (everything from one
/// free node) or on the Fig. 5-1 graph (58 activities, four threads each).
pub(crate) fn feasibility(with_reservations: bool, count: usize) -> Vec<f64> {
    let mut book = fig_5_2_book(with_reservations);
    (0..count)
        .map(|i| {
            let started = WallClock::now();
            let _ = book.begin(i);
            started.elapsed().as_nanos() as f64
        })
        .collect()
}

/// Fig. 5-2's cost, counted ([`figures::Feasibility::walks`]): for each
/// analysis of [`feasibility`], the graph intervals its walk visits and
/// the pieces it copies for undo.
pub(crate) fn feasibility_walks(with_reservations: bool, count: usize) -> Vec<(u64, u64)> {
    fig_5_2_book(with_reservations).walks(count)
}

pub fn command(quick: bool) -> Result<(), CliError> {
    let (quanta, reps) = if quick { (200_000, 3) } else { (1_000_000, 5) };
    println!("hsched bench ({} mode; best of {reps} rounds; release builds only give meaningful numbers)", if quick { "quick" } else { "full" });
    if cfg!(debug_assertions) {
        println!("warning: this is a debug build; use `cargo run --release -- bench`");
    }

    let counts = [10usize, 1_000, 100_000];
    let levels = [1usize, 2, 3, 4];
    let rialto_counts = [10usize, 100, 1_000, 10_000];
    let constraints = 232;
    // A progress bar on stderr; hidden when stderr is not a terminal.
    let progress = ProgressBar::new(
        (reps * (3 + counts.len() * levels.len() + 6 + rialto_counts.len() + 3)) as u64,
    );
    progress.set_style(
        ProgressStyle::with_template("{spinner} measuring [{bar:30}] {pos}/{len} runs, {elapsed}")
            .expect("a valid template")
            .progress_chars("=> "),
    );

    // Every configuration is measured once per round, rounds repeated, so
    // that a slow spell of the machine hits all of them alike.
    let mut rates = Vec::new();
    let mut table = vec![vec![Vec::new(); levels.len()]; counts.len()];
    let mut bvt = vec![Vec::new(); 2];
    let mut hfsc = vec![Vec::new(); 2];
    let mut frc = vec![Vec::new(); 2];
    let mut rcsp = vec![Vec::new(); 2];
    let mut rialto = vec![Vec::new(); rialto_counts.len()];
    let (mut construction, mut free_only, mut on_graph) = (Vec::new(), Vec::new(), Vec::new());
    let mut kinds = Vec::new();
    for _ in 0..reps {
        // Throughput: 100 CPU-bound threads under rr on one CPU (higher is
        // better, so the best is the largest: take the smallest inverse).
        rates.push(1.0 / measure(100, 1, quanta * 2)?.1);
        progress.inc(1);
        for (i, &n) in counts.iter().enumerate() {
            for (j, &l) in levels.iter().enumerate() {
                table[i][j].push(measure(n, l, quanta)?.0);
                progress.inc(1);
            }
        }
        for (i, n) in [10usize, 100_000].into_iter().enumerate() {
            bvt[i].push(measure_bvt(n, quanta)?);
            progress.inc(1);
        }
        for (i, n) in [10usize, 100_000].into_iter().enumerate() {
            hfsc[i].push(measure_hfsc(n, quanta)?);
            progress.inc(1);
            frc[i].push(measure_frc("frc", n, quanta)?);
            progress.inc(1);
            rcsp[i].push(measure_frc("rcsp", n, quanta)?);
            progress.inc(1);
        }
        for (i, &n) in rialto_counts.iter().enumerate() {
            rialto[i].push(measure_rialto(n, quanta / 10)?);
            progress.inc(1);
        }
        let run = graph_construction()?;
        kinds = run.iter().map(|&(p, rebuilt, _)| (p, rebuilt)).collect();
        construction.push(run.iter().map(|r| r.2).collect::<Vec<_>>());
        progress.inc(1);
        free_only.push(feasibility(false, constraints));
        progress.inc(1);
        on_graph.push(feasibility(true, constraints));
        progress.inc(1);
    }
    progress.finish_and_clear();
    let rate = 1.0 / best(&rates);
    let table: Vec<Vec<f64>> = table
        .iter()
        .map(|row| row.iter().map(|v| best(v)).collect())
        .collect();
    let bvt: Vec<f64> = bvt.iter().map(|v| best(v)).collect();
    let hfsc: Vec<f64> = hfsc.iter().map(|v| best(v)).collect();
    let frc: Vec<f64> = frc.iter().map(|v| best(v)).collect();
    let rcsp: Vec<f64> = rcsp.iter().map(|v| best(v)).collect();
    let rialto: Vec<f64> = rialto.iter().map(|v| best(v)).collect();
    let construction = best_series(&construction);
    let (free_only, on_graph) = (best_series(&free_only), best_series(&on_graph));

    println!();
    println!("simulator throughput, 100 CPU-bound threads under rr (1ms quantum), 1 CPU:");
    println!(
        "  {:.2} million events per wall-second ({})",
        rate / 1e6,
        verdict("at least 5", rate >= 5e6)
    );
    println!();
    println!(
        "cost of one decision (quantum expiry: charge along the path, re-decide, re-arm), ns:"
    );
    print!("  {:>10}", "threads");
    for l in levels {
        print!(
            "  {:>9}",
            format!("{l} level{}", if l > 1 { "s" } else { "" })
        );
    }
    println!();
    for (i, &n) in counts.iter().enumerate() {
        print!("  {n:>10}");
        for cost in &table[i] {
            print!("  {cost:>9.0}");
        }
        println!();
    }
    let growth = table[2][0] / table[0][0];
    let per_level: Vec<f64> = (0..counts.len())
        .map(|i| (table[i][levels.len() - 1] - table[i][0]) / (levels.len() - 1) as f64)
        .collect();
    println!();
    println!(
        "  growth from 10 to 100,000 threads (1 level): {growth:.2}x ({})",
        verdict("at most 3x", growth <= 3.0)
    );
    println!(
        "  added per extra level: {} ns ({})",
        per_level
            .iter()
            .map(|c| format!("{c:.0}"))
            .collect::<Vec<_>>()
            .join(" / "),
        verdict("under 100 ns", per_level.iter().all(|&c| c < 100.0))
    );
    println!();
    println!(
        "bvt: cost of one decision (countdown expiry, smallest EVT) with CPU-bound threads, ns:"
    );
    println!("  {:>10}  {:>9}", "threads", "bvt");
    println!("  {:>10}  {:>9.0}", 10, bvt[0]);
    println!("  {:>10}  {:>9.0}", 100_000, bvt[1]);
    println!(
        "  growth from 10 to 100,000 threads: {:.2}x ({})",
        bvt[1] / bvt[0],
        verdict("at most 3x", bvt[1] / bvt[0] <= 3.0)
    );
    println!();
    println!("hfsc, frc, rcsp: cost of one decision with CPU-bound threads, ns (hfsc: concave curves, eligibility / deadline / finish-value sets; frc, rcsp: rate 1e-6, quantum 1ms, finish-value sets):");
    println!(
        "  {:>10}  {:>9}  {:>9}  {:>9}",
        "threads", "hfsc", "frc", "rcsp"
    );
    for (i, n) in [10usize, 100_000].into_iter().enumerate() {
        println!(
            "  {n:>10}  {:>9.0}  {:>9.0}  {:>9.0}",
            hfsc[i], frc[i], rcsp[i]
        );
    }
    let growths = [
        ("hfsc", hfsc[1] / hfsc[0]),
        ("frc", frc[1] / frc[0]),
        ("rcsp", rcsp[1] / rcsp[0]),
    ];
    let missed: Vec<&str> = growths
        .iter()
        .filter(|(_, g)| *g > 3.0)
        .map(|(name, _)| *name)
        .collect();
    println!(
        "  growth from 10 to 100,000 threads: {} ({})",
        growths
            .iter()
            .map(|(name, g)| format!("{name} {g:.2}x"))
            .collect::<Vec<_>>()
            .join(", "),
        match missed.as_slice() {
            [] => verdict("at most 3x", true),
            m => format!("target at most 3x: missed by {}", m.join(", ")),
        }
    );
    print_rialto(
        &rialto_counts,
        &rialto,
        &kinds,
        &construction,
        &free_only,
        &on_graph,
    );
    print_analysis(reps);
    plugin::print(reps, quanta / 20)?;
    Ok(())
}

/// HLS §3.3: wall time of the top-down analysis of a generated hierarchy of
/// 10,000 schedulers and threads (fp, res, joins, sfq, rr), best of `reps`.
fn print_analysis(reps: usize) {
    let scn = hsched_analysis::compose::bench_hierarchy(10_000);
    let book = hsched_pipeline::rule_book();
    let size = scn.schedulers.len() + scn.threads.len();
    let mut walls = Vec::new();
    let mut composes = false;
    for _ in 0..reps {
        let started = WallClock::now();
        let a = hsched_analysis::compose::analyse(&scn, &book);
        walls.push(started.elapsed().as_nanos() as f64);
        composes = a.composes();
    }
    println!();
    println!(
        "analysis: HLS top-down labelling of a {size}-node hierarchy (fp, res, joins, sfq, rr):"
    );
    println!(
        "  {:.1} ms (composes: {composes}; {})",
        best(&walls) / 1e6,
        verdict("under 1 s", best(&walls) < 1e9)
    );
    print_review(&scn, &book, reps, best(&walls));
    print_drawing(&scn, reps);
}

/// The change guard's review of one run-time change (a scheduler loaded
/// under the root of the same hierarchy): a whole recomposition plus the
/// comparison with what was promised, best of `reps`, beside the analysis
/// measured just before.
fn print_review(
    scn: &hsched_model::Scenario,
    book: &hsched_analysis::rules::RuleBook,
    reps: usize,
    analysis_ns: f64,
) {
    use hsched_model::guard::{Change, ChangeGuard};
    let analysis = hsched_analysis::compose::analyse(scn, book);
    let mut guard = hsched_analysis::guard::AnalysisGuard::new(scn, book.clone(), analysis, false);
    let load = hsched_model::Action::Load(hsched_model::SchedulerSpec {
        name: "bench-loaded".into(),
        policy: "rr".into(),
        params: Params::new(),
        parents: vec![hsched_model::ParentLink {
            parent: scn.schedulers[0].name.clone(),
            vps: 1,
            params: Params::new(),
        }],
    });
    let mut walls = Vec::new();
    for _ in 0..reps {
        let started = WallClock::now();
        let _ = guard.review(Instant::ZERO, &Change::Hierarchy(&load));
        walls.push(started.elapsed().as_nanos() as f64);
    }
    println!(
        "  a run-time change reviewed (the change guard: the whole hierarchy recomposed and compared): {:.1} ms, {:.2}x the analysis",
        best(&walls) / 1e6,
        best(&walls) / analysis_ns
    );
}

/// The hierarchy drawing (`check --svg`): of the analysis' hierarchy (laid
/// out as a layered tree), and of 100,000 threads under one scheduler
/// (drawn as a few and a summary leaf), best of `reps`, the analysis not
/// counted.
fn print_drawing(scn: &hsched_model::Scenario, reps: usize) {
    let mut crowd = hsched_analysis::compose::bench_hierarchy(10);
    let template = crowd.threads[0].clone();
    for k in 0..100_000 - crowd.threads.len() {
        let mut t = template.clone();
        t.name = format!("crowd{k}");
        t.parent = crowd.default_scheduler.clone();
        t.params = Params::new();
        t.needs = None;
        crowd.threads.push(t);
    }
    let book = hsched_pipeline::rule_book();
    println!();
    println!("drawing: the hierarchy as SVG (`check --svg`), without the analysis:");
    for (what, scn) in [
        ("the hierarchy above, a layered tree", scn),
        ("100,000 threads under one scheduler", &crowd),
    ] {
        let a = hsched_analysis::compose::analyse(scn, &book);
        let mut walls = Vec::new();
        let mut bytes = 0;
        for _ in 0..reps {
            let started = WallClock::now();
            bytes = hsched_analysis::draw::svg(scn, &a).len();
            walls.push(started.elapsed().as_nanos() as f64);
        }
        println!(
            "  {what}: {:.1} ms, {} KiB ({})",
            best(&walls) / 1e6,
            bytes / 1024,
            verdict("under 1 s", best(&walls) < 1e9)
        );
    }
}

/// A measurement's target and whether it was met: `target at most 3x:
/// met`, `target at most 3x: MISSED`.
fn verdict(target: &str, met: bool) -> String {
    format!("target {target}: {}", if met { "met" } else { "MISSED" })
}

fn print_rialto(
    counts: &[usize],
    decision: &[f64],
    kinds: &[(Duration, bool)],
    construction: &[f64],
    free_only: &[f64],
    on_graph: &[f64],
) {
    println!();
    println!("rialto: cost of one decision (4 reservations, a periodic constraint, the rest CPU-bound, each thread its own activity), ns:");
    println!("  {:>10}  {:>9}", "threads", "rialto");
    for (n, cost) in counts.iter().zip(decision) {
        println!("  {n:>10}  {cost:>9.0}");
    }
    let spread = decision.iter().copied().fold(0.0, f64::max)
        / decision.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "  largest over smallest, {} to {} threads: {spread:.2}x ({}; Rialto §3.1: the decision is independent of the number of threads, activities and constraints)",
        counts[0],
        counts[counts.len() - 1],
        verdict("at most 1.5x", spread <= 1.5)
    );
    println!();
    println!("rialto: Fig. 5-1, time to change the graph for each of 58 cumulative 400us reservations (switch 20us), us:");
    for (row, chunk) in kinds
        .iter()
        .zip(construction)
        .collect::<Vec<_>>()
        .chunks(6)
        .enumerate()
    {
        let cells: Vec<String> = chunk
            .iter()
            .map(|((period, rebuilt), wall)| {
                format!(
                    "{:>9} {} {:>7.1}",
                    period.to_string(),
                    if *rebuilt { "R" } else { "i" },
                    *wall / 1e3
                )
            })
            .collect();
        println!("  {:>2}: {}", row * 6 + 1, cells.join("  "));
    }
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let of = |r: bool| -> Vec<f64> {
        kinds
            .iter()
            .zip(construction)
            .filter(|((_, rebuilt), _)| *rebuilt == r)
            .map(|(_, w)| *w)
            .collect()
    };
    let (inc, reb) = (of(false), of(true));
    println!(
        "  (i: incremental, R: full rebuild) {} incremental, mean {:.1} us; {} rebuilds, mean {:.1} us (paper: 19us for a one-node incremental change on a 200MHz Pentium Pro)",
        inc.len(),
        mean(inc.clone()) / 1e3,
        reb.len(),
        mean(reb.clone()) / 1e3
    );
    println!();
    println!("rialto: Fig. 5-2, time of one feasibility analysis (300us due within 3s) by constraints already accepted, us:");
    println!(
        "  {:>11}  {:>14}  {:>16}",
        "constraints", "no reservations", "Fig. 5-1 graph"
    );
    for k in [1usize, 25, 50, 100, 150, 200, 232] {
        let at = |v: &[f64]| v.get(k - 1).copied().unwrap_or(f64::NAN) / 1e3;
        println!("  {k:>11}  {:>14.2}  {:>16.2}", at(free_only), at(on_graph));
    }
}
