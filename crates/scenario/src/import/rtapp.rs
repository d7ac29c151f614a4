//! rt-app workload files (scheduler-tools/rt-app, `doc/tutorial.txt`)
//! imported as hsched scenarios.
//!
//! The whole rt-app grammar is read: `global`, `tasks` with `instance`,
//! `delay`, `loop`, `phases`, the scheduling keys (`policy`, `priority`,
//! `dl-runtime`, `dl-period`, `dl-deadline`) and the events, matched by
//! prefix as rt-app does (`run0`, `timer1`, `runtime2`). What hsched can
//! express is mapped (docs/guide.md, "Importing rt-app workloads", has the
//! table); everything else is a [`Warning`](super::Warning) naming its key path and what
//! was done instead. A file rt-app itself would refuse (an event with a
//! value of the wrong type, an unknown policy, a phase without events) is an
//! [`ImportError`].
//!
//! The hierarchy mirrors Linux's classes: an `fp` root; SCHED_DEADLINE
//! threads under a `res` (EDF hard reservations) at the top; SCHED_FIFO
//! threads on the root at their real-time priority, SCHED_RR ones in an
//! `rr` per priority; SCHED_OTHER, SCHED_BATCH and SCHED_IDLE under an
//! `sfq` (weighted fair queuing, CFS's nice weights) at the bottom.

mod emit;
mod event;
mod json_like;
mod members;
mod model;
mod program;
mod read;

pub use emit::DEFAULT_HORIZON_S;
pub use json_like::{parse as parse_json_like, Kind, Member, Pos, SyntaxError, Value};
pub use model::MAX_DURATION_US;

use super::{toml_comment, toml_string, ImportError, Imported};
use emit::emit;
use members::Cx;
use read::read_file;

/// Import options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// CPUs of the machine; by default one more than the highest CPU a
    /// task's `cpus` names, or 1.
    pub cpus: Option<u32>,
}

/// Imports rt-app text; `file_name` is used in errors and as the
/// scenario's name (its stem).
pub fn import(text: &str, file_name: &str, opts: &Options) -> Result<Imported, ImportError> {
    let root = json_like::parse(text).map_err(|e| ImportError {
        file: file_name.to_string(),
        line: e.pos.line,
        column: e.pos.column,
        path: String::new(),
        message: e.message,
    })?;
    let mut cx = Cx::default();
    let file = read_file(&root, &mut cx).map_err(|f| f.into_error(file_name))?;
    let toml = emit(&file, file_name, opts.cpus, &mut cx).map_err(|f| f.into_error(file_name))?;
    if let Some(fail) = cx.out_of_range {
        return Err(fail.into_error(file_name));
    }
    // In file order (those about no place first), whatever pass found them.
    cx.warnings.sort_by_key(|w| (w.line, w.column));
    let mut header = format!(
        "# Imported from {} by `hsched import rt-app` (rt-app's durations are microseconds).\n",
        toml_string(
            std::path::Path::new(file_name)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
                .as_str()
        )
    );
    if cx.warnings.is_empty() {
        header.push_str("# Everything in it is expressed exactly.\n");
    } else {
        header.push_str(&format!(
            "# {} thing(s) hsched cannot express exactly:\n",
            cx.warnings.len()
        ));
        for w in &cx.warnings {
            header.push_str(&toml_comment(&format!("  {w}")));
        }
    }
    header.push('\n');
    Ok(Imported {
        toml: header + &toml,
        warnings: cx.warnings,
    })
}
