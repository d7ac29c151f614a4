//! Analysing: the labelled hierarchy a run starts from, the refusal of one
//! that does not compose, and the guard that re-analyses every change the
//! run makes and labels its result with what was promised.

use crate::PipelineError;
use hsched_analysis::compose::Analysis;
use hsched_analysis::rules::RuleBook;
use hsched_model::{RunResult, Scenario};

/// The guarantee rules a run is analysed with when no plugin or caller
/// adds a row: HLS Table 1 and hsched's own policies.
pub fn rule_book() -> RuleBook {
    RuleBook::standard()
}

/// Adds the caller's rows of HLS Table 1 (policy, row) to `book` (the
/// Python package's policies; a plugin's come with [`crate::Plugins`]).
pub fn add_rules(
    book: &mut RuleBook,
    rows: &[(&'static str, String)],
) -> Result<(), PipelineError> {
    for (policy, row) in rows {
        book.add_row(policy, row)
            .map_err(|e| PipelineError::Input(format!("policy `{policy}`: its HLS rule: {e}")))?;
    }
    Ok(())
}

/// The analysis a run of `scn` (named `file` in messages) starts from,
/// with `book`, and the guard that re-analyses each change while it runs:
/// refused unless the hierarchy composes or `allow_uncomposed` (a
/// scheduler from the literature, which the analysis knows but nothing can
/// run, is refused either way). With `allow_uncomposed`, the second value
/// is why it does not compose (for the caller's warning).
pub fn prepare(
    file: &str,
    scn: &Scenario,
    book: RuleBook,
    allow_uncomposed: bool,
) -> Result<(RunGuard, Option<String>), PipelineError> {
    hsched_analysis::rules::literature::refuse_to_run(scn)
        .map_err(|e| PipelineError::Input(format!("{file}: {e}")))?;
    let analysis = hsched_analysis::compose::analyse(scn, &book);
    let warning = match analysis.composes() {
        true => None,
        false if allow_uncomposed => Some(uncomposed(file, &analysis)),
        false => {
            return Err(PipelineError::Uncomposed {
                file: file.to_string(),
                analysis: Box::new(analysis),
            })
        }
    };
    let guard = RunGuard::new(scn, book, analysis, allow_uncomposed);
    Ok((guard, warning))
}

/// Why a scenario's hierarchy does not compose, as `check` and `sim` say it
/// (exit 2): the file, then each error.
pub fn uncomposed(file: &str, analysis: &Analysis) -> String {
    format!("{file}: {}", analysis.verdict())
}

/// What `hsched check` prints: a line on the scenario (`ok` only for a
/// hierarchy that composes), then the labelled hierarchy.
pub fn check_text(file: &str, scn: &Scenario, analysis: &Analysis) -> String {
    let verdict = if analysis.composes() {
        "ok"
    } else {
        "does not compose"
    };
    format!(
        "{file}: {verdict} — {} CPU(s), horizon {}, seed {}\n{}",
        scn.machine.cpus,
        scn.horizon,
        scn.seed,
        hsched_analysis::draw::text(scn, analysis)
    )
}

/// The changes a run let through that broke a promise (allowed with
/// `allow_uncomposed`), each `at TIME: what it breaks`: the log has them
/// too, but a run written as JSON would not show them.
pub fn uncomposed_changes(result: &RunResult) -> Vec<String> {
    result
        .log
        .iter()
        .filter(|e| e.kind == hsched_model::LogKind::Uncomposed)
        .map(|e| format!("at {}: {}", e.at, e.text))
        .collect()
}

/// A run's change guard: the analysis at time 0, re-run on every change
/// of the hierarchy the run makes, with what it promised whom from when.
pub struct RunGuard {
    guard: std::sync::Arc<std::sync::Mutex<hsched_analysis::guard::AnalysisGuard>>,
    /// The analysis at time 0 (the report draws it).
    pub initial: Analysis,
    book: RuleBook,
    allow_uncomposed: bool,
}

impl RunGuard {
    fn new(scn: &Scenario, book: RuleBook, analysis: Analysis, allow_uncomposed: bool) -> Self {
        let guard = hsched_analysis::guard::AnalysisGuard::new(
            scn,
            book.clone(),
            analysis.clone(),
            allow_uncomposed,
        );
        RunGuard {
            guard: std::sync::Arc::new(std::sync::Mutex::new(guard)),
            initial: analysis,
            book,
            allow_uncomposed,
        }
    }

    /// The handle a run's dispatcher consults.
    pub fn shared(&self) -> hsched_model::guard::SharedGuard {
        hsched_model::guard::SharedGuard(self.guard.clone())
    }

    /// A guard of its own for another run of `scn`, the same scenario.
    pub fn fresh(&self, scn: &Scenario) -> Self {
        RunGuard::new(
            scn,
            self.book.clone(),
            self.initial.clone(),
            self.allow_uncomposed,
        )
    }

    /// Writes what was promised each scheduler and thread into the run's
    /// result, so that the outputs show CPU received next to it, and from
    /// when where that was after the start. A thread is labelled with what
    /// it was promised under the scheduler it ended under; one that got
    /// there by a change the guard was not told of (none of the run's
    /// changes are hidden from it, but a platform may end a thread's stay
    /// itself) is not labelled.
    pub fn label(&self, result: &mut RunResult) {
        let guard = self.guard.lock().unwrap_or_else(|e| e.into_inner());
        let label = |p: &hsched_analysis::guard::Promise| {
            let share = p.received.share();
            let from = (p.since > hsched_core::Instant::ZERO).then_some(p.since);
            (Some(p.received.to_string()), share, from)
        };
        // The k-th node of a name is its k-th load.
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for node in &mut result.nodes {
            let k = seen.entry(node.name.as_str()).or_default();
            if let Some(p) = guard.scheduler_promises(&node.name).get(*k) {
                (node.guarantee, node.guaranteed_share, node.guaranteed_from) = label(p);
            }
            *k += 1;
        }
        for thread in &mut result.threads {
            match guard.thread_promise(&thread.name) {
                // A refused thread shows its refusal wherever it went: that
                // is why it went.
                Some(tp) if tp.under == thread.scheduler || tp.promise.received.refused => {
                    (
                        thread.guarantee,
                        thread.guaranteed_share,
                        thread.guaranteed_from,
                    ) = label(&tp.promise);
                }
                _ => {}
            }
        }
    }
}
