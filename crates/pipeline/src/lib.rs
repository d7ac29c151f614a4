//! The one run pipeline: read a scenario (from a file or from text), with
//! plugin policies and policies the caller brings (the Python package's),
//! analyse its hierarchy and refuse one that does not compose, simulate it
//! or run it live on this machine's CPUs, label the run with what the
//! analysis promised, and turn the run into its outputs.
//!
//! `hsched sim`, `check`, `plot`, `live`, `repro` and `sweep` go through
//! it, and so does the Python package (`python/`): all get the same parser,
//! the same refusal of a hierarchy that does not compose, the same guard on
//! the run's changes, the same simulation and live options and the same
//! bytes out, so that they cannot drift apart. What is a caller's own (the
//! command line's flags, progress bar, stdout and exit codes) stays with
//! the caller.
//!
//! The steps, each a module: [`load`] (text, plugins, parse), [`guard`]
//! (analyse, refuse, guard the changes, label), [`simulate`](mod@simulate) and [`live`](mod@live)
//! (run), [`outputs`] (write).

pub mod error;
pub mod guard;
pub mod live;
pub mod load;
pub mod outputs;
pub mod plugins;
pub mod simulate;
pub mod source;

pub use error::PipelineError;
pub use guard::{
    add_rules, check_text, prepare, rule_book, uncomposed, uncomposed_changes, RunGuard,
};
pub use live::{
    live, live_stopped_message, live_trace_lost_message, simulate_beside, LiveRun, LiveRunOptions,
};
pub use load::{Extras, Loaded, Origin};
pub use outputs::{html_report, metrics_json, write_trace, RunSource};
pub use plugins::Plugins;
pub use simulate::{
    cut_message, run_to_horizon, simulation, trace_lost_message, RunOptions, Simulated,
};
