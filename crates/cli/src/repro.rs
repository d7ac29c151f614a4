//! `hsched repro`: paper reproductions. Each entry is named after its paper
//! and figure or section, runs its scenario from `scenarios/papers/`
//! (compiled into the binary, so it runs from anywhere), and compares
//! measured values with the paper's, each with its tolerance and why.
//!
//! Later work adds entries here (BVT figures, Rialto sections, HLS tables,
//! Yau figures, Vassal tables); an entry is a scenario plus a function that
//! turns the run into checks.

use crate::CliError;
use hsched_model::RunResult;
use hsched_sim::{run, SimOptions};

/// One compared quantity.
#[derive(Clone, Debug)]
pub struct Check {
    pub quantity: String,
    pub paper: f64,
    pub measured: f64,
    /// Allowed absolute difference.
    pub tolerance: f64,
    /// Why the tolerance is what it is.
    pub why: &'static str,
}

impl Check {
    pub fn passed(&self) -> bool {
        (self.measured - self.paper).abs() <= self.tolerance
    }
}

/// One reproduction.
pub struct Entry {
    pub name: &'static str,
    /// The paper and the figure, table or section reproduced.
    pub source: &'static str,
    /// What the paper states.
    pub claim: &'static str,
    /// The scenario file (path inside the repository) and its text.
    pub scenario_path: &'static str,
    pub scenario: &'static str,
    pub checks: fn(&RunResult) -> Vec<Check>,
}

macro_rules! scenario {
    ($file:literal) => {
        (
            concat!("scenarios/papers/", $file),
            include_str!(concat!("../../../scenarios/papers/", $file)),
        )
    };
}

/// Every entry, in the order `--list` shows them.
pub fn entries() -> Vec<Entry> {
    let (ts_path, ts) = scenario!("hls-timesharing-equal.toml");
    let (join_path, join) = scenario!("hls-5.4-join-slack.toml");
    let (res_path, res) = scenario!("hls-5.4-reservation-only.toml");
    let (fp_path, fp) = scenario!("hls-fp-null.toml");
    vec![
        Entry {
            name: "hls-timesharing-equal",
            source: "HLS §5.4 / Rialto §5: the time-sharing baseline",
            claim: "identical CPU-bound threads under round robin share the CPU equally (4 threads: 1/4 each)",
            scenario_path: ts_path,
            scenario: ts,
            checks: |r| {
                r.threads
                    .iter()
                    .map(|t| Check {
                        quantity: format!("share of {}", t.name),
                        paper: 0.25,
                        measured: share(r, &t.name),
                        tolerance: 0.001,
                        why: "one 10ms quantum over the 10s horizon: the last rotation may be cut short",
                    })
                    .collect()
            },
        },
        Entry {
            name: "hls-5.4-join-slack",
            source: "HLS §4 (join) and §5.4 (schedulers as components)",
            claim: "a join lets a reservation's slack flow to a second scheduler: a 3ms/10ms hard reservation joined with time sharing against one batch thread gives 0.3 + 0.7/2 = 0.65",
            scenario_path: join_path,
            scenario: join,
            checks: |r| {
                vec![
                    Check {
                        quantity: "share of t (reservation + slack)".into(),
                        paper: 0.65,
                        measured: share(r, "t"),
                        tolerance: 0.01,
                        why: "rr hands out 10ms quanta inside 7ms windows between reservation periods, so who gets a window alternates; the imbalance stays under one quantum per 100 windows",
                    },
                    Check {
                        quantity: "share of b (the rest)".into(),
                        paper: 0.35,
                        measured: share(r, "b"),
                        tolerance: 0.01,
                        why: "the complement of t's share (no idle time, no switch cost)",
                    },
                    Check {
                        quantity: "CPU received by the reservation".into(),
                        paper: 0.30,
                        measured: node_share(r, "res"),
                        tolerance: 0.001,
                        why: "the limit is exact to the nanosecond; one period may be cut by the horizon",
                    },
                ]
            },
        },
        Entry {
            name: "hls-5.4-reservation-only",
            source: "HLS §4 (limit) and §5.4, the contrast case",
            claim: "without the join the same hard reservation caps the thread at exactly 3ms/10ms = 0.30",
            scenario_path: res_path,
            scenario: res,
            checks: |r| {
                vec![
                    Check {
                        quantity: "share of t (hard reservation only)".into(),
                        paper: 0.30,
                        measured: share(r, "t"),
                        tolerance: 0.001,
                        why: "the limit is exact to the nanosecond; one period may be cut by the horizon",
                    },
                    Check {
                        quantity: "share of b".into(),
                        paper: 0.70,
                        measured: share(r, "b"),
                        tolerance: 0.001,
                        why: "the complement of t's share",
                    },
                ]
            },
        },
        Entry {
            name: "hls-fp-null",
            source: "HLS §4, fixed priority",
            claim: "a fixed-priority scheduler passes its guarantee (ALL) to its highest-priority child; the others get NULL, since that child may be CPU bound",
            scenario_path: fp_path,
            scenario: fp,
            checks: |r| {
                vec![
                    Check {
                        quantity: "share of high (ALL)".into(),
                        paper: 1.0,
                        measured: share(r, "high"),
                        tolerance: 0.0,
                        why: "exact: nothing else can run while it is runnable",
                    },
                    Check {
                        quantity: "share of low (NULL)".into(),
                        paper: 0.0,
                        measured: share(r, "low"),
                        tolerance: 0.0,
                        why: "exact",
                    },
                ]
            },
        },
    ]
}

fn share(r: &RunResult, thread: &str) -> f64 {
    let t = r.threads.iter().find(|t| t.name == thread);
    let t = t.unwrap_or_else(|| panic!("the scenario has no thread `{thread}`"));
    t.cpu_time.as_nanos() as f64 / r.horizon.as_nanos() as f64
}

fn node_share(r: &RunResult, node: &str) -> f64 {
    let n = r.nodes.iter().find(|n| n.name == node);
    let n = n.unwrap_or_else(|| panic!("the scenario has no scheduler `{node}`"));
    n.received.as_nanos() as f64 / r.horizon.as_nanos() as f64
}

/// Runs one entry; returns its checks.
pub fn run_entry(entry: &Entry) -> Result<Vec<Check>, CliError> {
    let scn = hsched_scenario::parse(entry.scenario, entry.scenario_path)
        .map_err(|e| CliError::Failed(format!("{}: {e}", entry.name)))?;
    let result = run(&scn, &SimOptions::default())
        .map_err(|e| CliError::Failed(format!("{}: {e}", entry.name)))?;
    Ok((entry.checks)(&result))
}

fn print_entry(entry: &Entry, checks: &[Check]) {
    println!("{} — {}", entry.name, entry.source);
    println!("  claim: {}", entry.claim);
    println!("  scenario: {}", entry.scenario_path);
    let width = checks.iter().map(|c| c.quantity.len()).max().unwrap_or(0);
    println!(
        "  {:<width$}  {:>8}  {:>8}  {:>9}  verdict",
        "quantity", "paper", "measured", "tolerance"
    );
    for c in checks {
        println!(
            "  {:<width$}  {:>8.4}  {:>8.4}  {:>9}  {}",
            c.quantity,
            c.paper,
            c.measured,
            format!("±{}", c.tolerance),
            if c.passed() { "pass" } else { "FAIL" }
        );
        println!("  {:<width$}  tolerance: {}", "", c.why);
    }
}

pub fn command(name: Option<&str>, list: bool, all: bool) -> Result<(), CliError> {
    let entries = entries();
    if list || (name.is_none() && !all) {
        for e in &entries {
            println!("{:<28} {}", e.name, e.source);
        }
        if !list {
            println!("\nrun one with `hsched repro NAME`, or all with `hsched repro --all`");
        }
        return Ok(());
    }
    let chosen: Vec<&Entry> = match name {
        Some(n) => vec![entries.iter().find(|e| e.name == n).ok_or_else(|| {
            let known: Vec<&str> = entries.iter().map(|e| e.name).collect();
            CliError::Input(format!(
                "no reproduction named `{n}` (known: {})",
                known.join(", ")
            ))
        })?],
        None => entries.iter().collect(),
    };
    let mut failed = Vec::new();
    for entry in chosen {
        let checks = run_entry(entry)?;
        print_entry(entry, &checks);
        println!();
        if checks.iter().any(|c| !c.passed()) {
            failed.push(entry.name);
        }
    }
    if failed.is_empty() {
        println!("all verdicts pass");
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "failed reproductions: {}",
            failed.join(", ")
        )))
    }
}
