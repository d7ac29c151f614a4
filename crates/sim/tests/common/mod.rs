//! Helpers shared by the simulator's end-to-end tests.
#![allow(dead_code)] // each test file uses its own subset

use hsched_core::ThreadId;
use hsched_model::{LogEntry, LogKind, RunResult, Scenario};
use hsched_sim::{run, SimOptions};

/// Runs `scn` with every invariant checked and the trace recorded, and
/// fails the test if anything was ejected or starved.
pub fn go(scn: &Scenario) -> RunResult {
    let opts = SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    };
    let r = run(scn, &opts).unwrap();
    let bad: Vec<_> = r
        .log
        .iter()
        .filter(|e| matches!(e.kind, LogKind::Eject | LogKind::Watchdog))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    r
}

/// The replies to thread `name`'s messages, in order.
pub fn replies<'a>(r: &'a RunResult, name: &str) -> Vec<&'a LogEntry> {
    let prefix = format!("`{name}` ->");
    r.log
        .iter()
        .filter(|e| {
            matches!(e.kind, LogKind::Reply | LogKind::Refused) && e.text.starts_with(&prefix)
        })
        .collect()
}

/// The id of thread `name`.
pub fn tid(r: &RunResult, name: &str) -> ThreadId {
    r.threads.iter().find(|t| t.name == name).unwrap().id
}
