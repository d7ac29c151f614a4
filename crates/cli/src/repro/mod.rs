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
    /// Whether the paper's value is a target (within the tolerance either
    /// way) or an upper bound (the measured value may be anything below).
    pub bound: Bound,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bound {
    /// |measured - paper| <= tolerance.
    #[default]
    Within,
    /// measured <= paper + tolerance.
    AtMost,
    /// measured >= paper - tolerance.
    AtLeast,
}

impl Check {
    pub fn passed(&self) -> bool {
        match self.bound {
            Bound::Within => (self.measured - self.paper).abs() <= self.tolerance,
            Bound::AtMost => self.measured <= self.paper + self.tolerance,
            Bound::AtLeast => self.measured >= self.paper - self.tolerance,
        }
    }

    /// Makes the paper's value a lower bound.
    pub fn at_least(mut self) -> Self {
        self.bound = Bound::AtLeast;
        self
    }

    /// Makes the paper's value an upper bound.
    pub fn at_most(mut self) -> Self {
        self.bound = Bound::AtMost;
        self
    }

    fn tolerance_text(&self) -> String {
        let t = compact(self.tolerance);
        match self.bound {
            Bound::Within => format!("±{t}"),
            Bound::AtMost if self.tolerance == 0.0 => "at most".into(),
            Bound::AtMost => format!("≤ +{t}"),
            Bound::AtLeast if self.tolerance == 0.0 => "at least".into(),
            Bound::AtLeast => format!("≥ -{t}"),
        }
    }
}

/// A number with at most four decimals, trailing zeros dropped.
fn compact(x: f64) -> String {
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// One reproduction.
pub struct Entry {
    pub name: &'static str,
    /// The paper and the figure, table or section reproduced.
    pub source: &'static str,
    /// What the paper states.
    pub claim: &'static str,
    /// The scenario files it runs (paths inside the repository).
    pub scenarios: &'static [&'static str],
    /// Runs the scenarios (compiled into the binary) and compares.
    pub run: fn() -> Result<Vec<Check>, String>,
}

mod bvt;
mod hls;
mod hls_guarantees;
mod live;
mod rialto;
mod vassal;
mod yau;
mod yau_trains;

/// A scenario of `scenarios/papers/`: its path and its text, compiled in.
macro_rules! scenario {
    ($file:literal) => {
        (
            concat!("scenarios/papers/", $file),
            include_str!(concat!("../../../../scenarios/papers/", $file)),
        )
    };
}
pub(crate) use scenario;

/// Every entry, in the order `--list` shows them.
pub fn entries() -> Vec<Entry> {
    let mut all = Vec::new();
    all.extend(hls::entries());
    all.extend(hls_guarantees::entries());
    all.extend(bvt::entries());
    all.extend(rialto::entries());
    all.extend(vassal::entries());
    all.extend(yau::entries());
    all.extend(yau_trains::entries());
    all
}

/// The fraction of the horizon thread `thread` ran.
pub fn share(r: &RunResult, thread: &str) -> f64 {
    let t = r.threads.iter().find(|t| t.name == thread);
    let t = t.unwrap_or_else(|| panic!("the scenario has no thread `{thread}`"));
    t.cpu_time.as_nanos() as f64 / r.horizon.as_nanos() as f64
}

/// The fraction of the horizon scheduler `node` received.
pub fn node_share(r: &RunResult, node: &str) -> f64 {
    let n = r.nodes.iter().find(|n| n.name == node);
    let n = n.unwrap_or_else(|| panic!("the scenario has no scheduler `{node}`"));
    n.received.as_nanos() as f64 / r.horizon.as_nanos() as f64
}

/// Parses and runs a compiled-in scenario with the full timeline recorded.
pub fn simulate(scenario: (&str, &str)) -> Result<RunResult, String> {
    simulate_with(scenario, |_| {})
}

/// Like [`simulate`], after `edit` changes the scenario (a parameter sweep
/// over one file).
pub fn simulate_with(
    (path, text): (&str, &str),
    edit: impl FnOnce(&mut hsched_model::Scenario),
) -> Result<RunResult, String> {
    let mut scn = hsched_scenario::parse(text, path).map_err(|e| e.to_string())?;
    edit(&mut scn);
    let opts = SimOptions {
        trace: true,
        ..Default::default()
    };
    run(&scn, &opts).map_err(|e| format!("{path}: {e}"))
}

/// Runs one entry; returns its checks.
pub fn run_entry(entry: &Entry) -> Result<Vec<Check>, CliError> {
    (entry.run)().map_err(|e| CliError::Failed(format!("{}: {e}", entry.name)))
}

fn print_entry(entry: &Entry, checks: &[Check]) {
    println!("{} — {}", entry.name, entry.source);
    println!("  claim: {}", entry.claim);
    for path in entry.scenarios {
        println!("  scenario: {path}");
    }
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
            c.tolerance_text(),
            if c.passed() { "pass" } else { "FAIL" }
        );
        println!("  {:<width$}  tolerance: {}", "", c.why);
    }
}

/// `hsched repro`: the simulated entries, or with `live` the experiments
/// on this machine's CPUs.
pub fn command(
    name: Option<&str>,
    list: bool,
    all: bool,
    live: bool,
    backend: Option<hsched_live::run::Backend>,
) -> Result<(), CliError> {
    let entries = if live { live::entries() } else { entries() };
    let flag = if live { " --live" } else { "" };
    if list || (name.is_none() && !all) {
        for e in &entries {
            println!("{:<28} {}", e.name, e.source);
        }
        if !list {
            println!(
                "\nrun one with `hsched repro{flag} NAME`, or all with `hsched repro{flag} --all`"
            );
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
    // A live experiment stops in order on Ctrl-C or SIGTERM: the run under
    // way gives its threads back and ends its commands, and no later
    // experiment starts.
    let signals = if live {
        let error = |e| CliError::Failed(format!("handling SIGINT and SIGTERM: {e}"));
        let signals = hsched_live::signals::StopSignals::install().map_err(error)?;
        live::stop_on(signals.handle().map_err(error)?);
        let (backend, not_scx) = hsched_live::run::Backend::pick(backend);
        live::use_backend(backend);
        match not_scx {
            Some(why) => println!("backend: the user-space agent (sched_ext not used: {why})\n"),
            None if backend == hsched_live::run::Backend::Scx => {
                println!("backend: sched_ext (hsched's BPF scheduler)\n")
            }
            None => println!("backend: the user-space agent\n"),
        }
        Some(signals)
    } else {
        None
    };
    let stopped = |signals: &Option<hsched_live::signals::StopSignals>| {
        let sig = signals.as_ref()?.received()?;
        let name = if sig == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        Some(CliError::Stopped(
            format!("hsched repro --live: stopped by {name}; every thread given back"),
            128 + sig,
        ))
    };
    let mut failed = Vec::new();
    for entry in chosen {
        let checks = match run_entry(entry) {
            Ok(checks) => checks,
            Err(e) => return Err(stopped(&signals).unwrap_or(e)),
        };
        if let Some(stop) = stopped(&signals) {
            return Err(stop);
        }
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
