//! `hsched repro`: paper reproductions. Each entry is named after its paper
//! and figure or section, runs its scenario from `scenarios/papers/`
//! (compiled into the binary, so it runs from anywhere), and compares
//! measured values with the paper's, each with its tolerance and why.
//!
//! An entry is a scenario plus a function that turns the run into checks.
//! Where the paper gives a number, its check is two-sided, with the
//! tolerance and its reason beside it; one-sided only where the paper
//! itself states a bound. No paper value is derived from the run it is
//! compared with. Where hsched disagrees with the paper for a reason
//! measured and understood, the check says so ([`Check::differs`]) rather
//! than widening its tolerance.
//!
//! Timing entries ([`timing_entries`]) reproduce a ratio or ordering the
//! paper draws from timings on its hardware, measured side by side in one
//! run; they run with `hsched repro --timing` (build with `--release`), not
//! with `--all`, whose verdicts must not depend on how busy the machine is.

use crate::CliError;

mod check;
mod entry;
mod print;
mod simulate;

mod bvt;
mod bvt_claims;
mod bvt_paper;
mod hls;
mod hls_guarantees;
mod live;
mod rialto;
mod vassal;
mod yau;
mod yau_trains;

pub use check::{Bound, Check, Verdict};
pub(crate) use entry::scenario;
pub use entry::{run_entry, Entry};
use print::print_entry;
pub use simulate::{node_share, parse, share, simulate, simulate_with};

/// Every timing entry (`hsched repro --timing`), in the order `--list`
/// shows them.
pub fn timing_entries() -> Vec<Entry> {
    let mut all = Vec::new();
    all.extend(hls::timing_entries());
    all.extend(bvt::timing_entries());
    all.extend(bvt_claims::timing_entries());
    all.extend(rialto::timing_entries());
    all.extend(vassal::timing_entries());
    all.extend(yau::timing_entries());
    all
}

/// Every entry, in the order `--list` shows them.
pub fn entries() -> Vec<Entry> {
    let mut all = Vec::new();
    all.extend(hls::entries());
    all.extend(hls_guarantees::entries());
    all.extend(bvt::entries());
    all.extend(bvt_claims::entries());
    all.extend(rialto::entries());
    all.extend(vassal::entries());
    all.extend(yau::entries());
    all.extend(yau_trains::entries());
    all
}

/// Which entries `hsched repro` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    /// Simulated and analysed: deterministic.
    Simulated,
    /// Timings on this machine, side by side (`--timing`).
    Timing,
    /// The experiments on this machine's CPUs (`--live`).
    Live,
}

impl Set {
    pub fn pick(live: bool, timing: bool) -> Set {
        match (live, timing) {
            (true, _) => Set::Live,
            (false, true) => Set::Timing,
            (false, false) => Set::Simulated,
        }
    }
}

/// `hsched repro`: the simulated entries, the timing entries, or the
/// experiments on this machine's CPUs.
pub fn command(
    name: Option<&str>,
    list: bool,
    all: bool,
    set: Set,
    backend: Option<hsched_live::run::Backend>,
) -> Result<(), CliError> {
    let live = set == Set::Live;
    let (entries, flag) = match set {
        Set::Simulated => (entries(), ""),
        Set::Timing => (timing_entries(), " --timing"),
        Set::Live => (live::entries(), " --live"),
    };
    if list || (name.is_none() && !all) {
        for e in &entries {
            println!("{:<28} {}", e.name, e.source);
        }
        if set == Set::Simulated {
            println!(
                "\n(and {} timing entries: `hsched repro --timing --list`; {} on real CPUs: `hsched repro --live --list`)",
                timing_entries().len(),
                live::entries().len()
            );
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
