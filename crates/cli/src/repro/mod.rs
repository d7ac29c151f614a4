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
use hsched_model::RunResult;

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
    /// A disagreement with the paper that is understood: why hsched
    /// differs, as measured (see [`Check::differs`]).
    pub differs: Option<&'static str>,
}

/// What a check concludes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within the tolerance.
    Pass,
    /// Outside it, with no reason known: the suite fails.
    Fail,
    /// Outside it, for the reason given with [`Check::differs`].
    Differs,
    /// Marked as differing but within the tolerance: the stated reason no
    /// longer holds and must go (the suite fails until it does).
    Stale,
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
    /// A two-sided comparison: |measured − paper| ≤ tolerance, for `why`.
    pub fn new(
        quantity: impl Into<String>,
        paper: f64,
        measured: f64,
        tolerance: f64,
        why: &'static str,
    ) -> Self {
        Check {
            quantity: quantity.into(),
            paper,
            measured,
            tolerance,
            why,
            bound: Bound::Within,
            differs: None,
        }
    }

    /// Whether the measured value is within the tolerance.
    pub fn within(&self) -> bool {
        match self.bound {
            Bound::Within => (self.measured - self.paper).abs() <= self.tolerance,
            Bound::AtMost => self.measured <= self.paper + self.tolerance,
            Bound::AtLeast => self.measured >= self.paper - self.tolerance,
        }
    }

    pub fn verdict(&self) -> Verdict {
        match (self.within(), self.differs) {
            (true, None) => Verdict::Pass,
            (false, None) => Verdict::Fail,
            (false, Some(_)) => Verdict::Differs,
            (true, Some(_)) => Verdict::Stale,
        }
    }

    /// Whether the suite passes with this check.
    pub fn passed(&self) -> bool {
        matches!(self.verdict(), Verdict::Pass | Verdict::Differs)
    }

    /// Marks a disagreement with the paper whose cause is known and
    /// measured (the entry shows the measurement): the verdict says
    /// "differs" with `diagnosis`, and the suite still passes. Once the
    /// value comes within the tolerance the verdict turns "stale" and
    /// fails, so no stale excuse stays.
    pub fn differs(mut self, diagnosis: &'static str) -> Self {
        self.differs = Some(diagnosis);
        self
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
mod bvt_claims;
mod bvt_paper;
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

/// Parses a compiled-in scenario (its path, its text).
pub fn parse((path, text): (&str, &str)) -> Result<hsched_model::Scenario, String> {
    hsched_scenario::parse(text, path).map_err(|e| e.to_string())
}

/// Parses and runs a compiled-in scenario with the full timeline recorded.
pub fn simulate(scenario: (&str, &str)) -> Result<RunResult, String> {
    simulate_with(scenario, |_| {})
}

/// Like [`simulate`], after `edit` changes the scenario (a parameter sweep
/// over one file). Through the run pipeline, as `hsched sim` runs it: a
/// hierarchy that does not compose is refused.
pub fn simulate_with(
    file: (&str, &str),
    edit: impl FnOnce(&mut hsched_model::Scenario),
) -> Result<RunResult, String> {
    let path = file.0;
    let mut scn = parse(file)?;
    edit(&mut scn);
    let opts = hsched_pipeline::RunOptions {
        trace: true,
        ..Default::default()
    };
    let book = hsched_pipeline::rule_book();
    hsched_pipeline::run_to_horizon(path, &scn, book, &opts, &[], false)
        .map(|run| run.result)
        .map_err(|e| crate::CliError::from(e).to_string())
}

/// Runs one entry; returns its checks.
pub fn run_entry(entry: &Entry) -> Result<Vec<Check>, CliError> {
    (entry.run)().map_err(|e| CliError::Failed(format!("{}: {e}", entry.name)))
}

/// The width `repro` wraps its prose to.
const TEXT_WIDTH: usize = 100;
/// A quantity longer than this is printed on a line of its own, so the
/// table stays within about [`TEXT_WIDTH`] columns.
const QUANTITY_WIDTH: usize = 56;

/// `text` wrapped to [`TEXT_WIDTH`], its first line after `first`, the rest
/// indented by `indent` columns.
fn wrapped(first: &str, indent: usize, text: &str) -> String {
    let indent = " ".repeat(indent);
    let options = textwrap::Options::new(TEXT_WIDTH)
        .initial_indent(first)
        .subsequent_indent(&indent);
    textwrap::fill(text, options)
}

/// An entry: its claim, a table of its checks, then each tolerance and
/// diagnosis once, numbered, and referred to from the rows by number.
fn print_entry(entry: &Entry, checks: &[Check]) {
    println!("{} — {}", entry.name, entry.source);
    println!("{}", wrapped("  claim: ", 9, entry.claim));
    for path in entry.scenarios {
        println!("  scenario: {path}");
    }
    // Each distinct note once, in the order the rows first use it.
    let mut notes: Vec<(&str, &str)> = Vec::new();
    let mut note = |kind: &'static str, text: &'static str| -> usize {
        match notes.iter().position(|&(k, t)| k == kind && t == text) {
            Some(i) => i + 1,
            None => {
                notes.push((kind, text));
                notes.len()
            }
        }
    };
    let rows: Vec<(&Check, &str, String)> = checks
        .iter()
        .map(|c| {
            let verdict = match c.verdict() {
                Verdict::Pass => "pass",
                Verdict::Fail => "FAIL",
                Verdict::Differs => "differs",
                Verdict::Stale => "FAIL (agrees now: drop its `differs`)",
            };
            let mut refs = vec![note("tolerance", c.why)];
            if let Some(diagnosis) = c.differs {
                refs.push(note("differs", diagnosis));
            }
            let refs = refs.iter().map(usize::to_string).collect::<Vec<_>>();
            (c, verdict, refs.join(", "))
        })
        .collect();
    let width = checks
        .iter()
        .map(|c| c.quantity.chars().count())
        .filter(|&w| w <= QUANTITY_WIDTH)
        .max()
        .unwrap_or(0)
        .max("quantity".len());
    let verdict_width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(7);
    println!(
        "  {:<width$}  {:>8}  {:>8}  {:>9}  {:<verdict_width$}  note",
        "quantity", "paper", "measured", "tolerance", "verdict"
    );
    for (c, verdict, refs) in &rows {
        // A long quantity gets a line of its own, whole, the numbers under it.
        let quantity = if c.quantity.chars().count() > width {
            println!("  {}", c.quantity);
            ""
        } else {
            c.quantity.as_str()
        };
        println!(
            "  {:<width$}  {:>8.4}  {:>8.4}  {:>9}  {verdict:<verdict_width$}  {refs}",
            quantity,
            c.paper,
            c.measured,
            c.tolerance_text(),
        );
    }
    let number_width = notes.len().to_string().len();
    for (i, (kind, text)) in notes.iter().enumerate() {
        let first = format!("  {:>number_width$}  {kind}: ", i + 1);
        println!("{}", wrapped(&first, number_width + 4, text));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_disagreement_passes_until_it_agrees() {
        let check = |measured| Check::new("x", 1.0, measured, 0.1, "test");
        assert_eq!(check(1.05).verdict(), Verdict::Pass);
        assert_eq!(check(1.2).verdict(), Verdict::Fail);
        assert!(!check(1.2).passed());
        assert_eq!(check(1.2).differs("known").verdict(), Verdict::Differs);
        assert!(check(1.2).differs("known").passed());
        assert_eq!(check(1.05).differs("known").verdict(), Verdict::Stale);
        assert!(!check(1.05).differs("known").passed());
        assert_eq!(check(0.95).at_least().verdict(), Verdict::Pass);
        assert_eq!(check(5.0).at_least().verdict(), Verdict::Pass);
        assert_eq!(check(0.85).at_least().verdict(), Verdict::Fail);
    }
}
