//! `hsched bench`: simulator throughput and the cost of one scheduling
//! decision per hierarchy level, measured side by side in one run.
//!
//! The machine this runs on may be shared and noisy, so every figure is the
//! median of several repetitions, and the figures that matter are ratios
//! between configurations measured in the same run. Set-up cost (creating
//! 100,000 threads, their first wake-ups) is kept out by warming each run up
//! before the timed window.

use crate::CliError;
use hsched_core::{Duration, Instant, Params, Value};
use hsched_sim::{workloads, SimOptions, Simulation};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant as WallClock;

/// Wall nanoseconds per decision and events per wall-second at steady
/// state: the run is warmed up for a fifth of its quanta (thread creation,
/// first wake-ups), then a window of the rest is timed.
fn measure(threads: usize, levels: usize, quanta: u64) -> Result<(f64, f64), CliError> {
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

/// The least disturbed of several repetitions: on a shared machine noise
/// only ever adds time.
fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

pub fn command(quick: bool) -> Result<(), CliError> {
    let (quanta, reps) = if quick { (200_000, 3) } else { (1_000_000, 5) };
    println!("hsched bench ({} mode; best of {reps} rounds; release builds only give meaningful numbers)", if quick { "quick" } else { "full" });
    if cfg!(debug_assertions) {
        println!("warning: this is a debug build; use `cargo run --release -- bench`");
    }

    let counts = [10usize, 1_000, 100_000];
    let levels = [1usize, 2, 3, 4];
    // A progress bar on stderr; hidden when stderr is not a terminal.
    let progress = ProgressBar::new((reps * (3 + counts.len() * levels.len())) as u64);
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
    }
    progress.finish_and_clear();
    let rate = 1.0 / best(&rates);
    let table: Vec<Vec<f64>> = table
        .iter()
        .map(|row| row.iter().map(|v| best(v)).collect())
        .collect();
    let bvt: Vec<f64> = bvt.iter().map(|v| best(v)).collect();

    println!();
    println!("simulator throughput, 100 CPU-bound threads under rr (1ms quantum), 1 CPU:");
    println!(
        "  {:.2} million events per wall-second (target: at least 5)",
        rate / 1e6
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
    println!("  growth from 10 to 100,000 threads (1 level): {growth:.2}x (target: at most 3x)");
    println!(
        "  added per extra level: {} ns (target: under 100 ns)",
        per_level
            .iter()
            .map(|c| format!("{c:.0}"))
            .collect::<Vec<_>>()
            .join(" / ")
    );
    println!();
    println!(
        "bvt: cost of one decision (countdown expiry, smallest EVT) with CPU-bound threads, ns:"
    );
    println!("  {:>10}  {:>9}", "threads", "bvt");
    println!("  {:>10}  {:>9.0}", 10, bvt[0]);
    println!("  {:>10}  {:>9.0}", 100_000, bvt[1]);
    println!(
        "  growth from 10 to 100,000 threads: {:.2}x (target: at most 3x)",
        bvt[1] / bvt[0]
    );
    Ok(())
}
