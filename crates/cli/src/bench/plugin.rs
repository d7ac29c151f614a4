//! The cost of the plugin boundary (`docs/plugins.md`): the same policy,
//! `rr`, built in and through the plugin ABI, measured side by side in one
//! run on the same workload (CPU-bound threads under one `rr`, 1ms quantum,
//! one CPU: every decision is a quantum expiry, a `charge` and a
//! `vp_grant`).
//!
//! The ABI side is the `rr` code behind the exact table, encoding and
//! adapter a loaded library uses, linked in (`export_policy!(entry = ...)`)
//! so the benchmark needs no plugin build; a `dlopen`ed library differs
//! only in how the table was found, which costs nothing per call.

use super::stats::best;
use crate::CliError;
use hsched_core::{Duration, Instant, Params, PolicyInfo, Value};
use hsched_plugin_host::Plugin;
use hsched_sim::{workloads, SimOptions, Simulation};
use std::time::Instant as WallClock;

static RR_THROUGH_ABI: PolicyInfo = PolicyInfo {
    name: "rr-abi",
    ..hsched_policies::rr::INFO
};

hsched_plugin::export_policy!(
    entry = rr_through_abi,
    exports: [hsched_plugin::Export::new(&RR_THROUGH_ABI)]
);

/// Wall ns per decision and plugin callbacks per decision, for `threads`
/// CPU-bound threads under `policy` (warmed up for a fifth of the run).
pub(crate) fn measure(
    policy: &str,
    extra: &[&'static PolicyInfo],
    threads: usize,
    quanta: u64,
) -> Result<(f64, f64), CliError> {
    let params = Params::new().with("quantum", Value::Duration(Duration::from_millis(1)));
    let horizon = Duration::from_millis(quanta + quanta / 5 + 1);
    let scn = workloads::flat(threads, 1, policy, params, horizon);
    let mut sim = Simulation::new(&scn, &SimOptions::default(), extra).map_err(CliError::Failed)?;
    sim.run_until(Instant::ZERO + Duration::from_millis(quanta / 5));
    let (d0, c0) = (sim.decisions(), hsched_plugin_host::calls());
    let started = WallClock::now();
    sim.run_until(Instant::ZERO + horizon);
    let wall = started.elapsed().as_nanos() as f64;
    let decisions = (sim.decisions() - d0).max(1) as f64;
    let calls = (hsched_plugin_host::calls() - c0) as f64;
    Ok((wall / decisions, calls / decisions))
}

/// `rr` through the plugin ABI (linked in), as a loaded plugin.
pub(crate) fn rr_plugin() -> Result<Plugin, CliError> {
    Plugin::from_entry("rr-abi (linked in)", rr_through_abi)
        .map_err(|e| CliError::Failed(e.to_string()))
}

/// Measures and prints the boundary's cost, best of `reps` rounds.
pub fn print(reps: usize, quanta: u64) -> Result<(), CliError> {
    let plugin = rr_plugin()?;
    let extra = [plugin.policies()[0].info];
    let counts = [10usize, 1_000];
    let (mut direct, mut abi) = (
        vec![Vec::new(); counts.len()],
        vec![Vec::new(); counts.len()],
    );
    let mut per_decision = 0.0;
    for _ in 0..reps {
        for (i, &n) in counts.iter().enumerate() {
            direct[i].push(measure("rr", &[], n, quanta)?.0);
            let (ns, calls) = measure("rr-abi", &extra, n, quanta)?;
            abi[i].push(ns);
            per_decision = calls;
        }
    }
    println!();
    println!("plugin boundary: one decision of `rr` built in and through the plugin ABI (CPU-bound threads, 1ms quantum, 1 CPU), ns:");
    println!(
        "  {:>10}  {:>9}  {:>9}  {:>6}  {:>13}",
        "threads", "built in", "plugin", "ratio", "per callback"
    );
    for (i, &n) in counts.iter().enumerate() {
        let (d, a) = (best(&direct[i]), best(&abi[i]));
        println!(
            "  {n:>10}  {d:>9.0}  {a:>9.0}  {:>5.2}x  {:>10.0} ns",
            a / d,
            (a - d) / per_decision.max(1.0)
        );
    }
    println!(
        "  ({per_decision:.1} plugin callbacks per decision; per callback: the added time divided by them)"
    );
    Ok(())
}
