//! Running a compiled-in scenario for a reproduction, and the shares the
//! entries read from its result.

use hsched_model::RunResult;

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
