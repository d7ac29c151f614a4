//! hsched sweeps: many runs of the simulator over a grid or a random sample
//! of scenarios, one CSV row per run (`hsched sweep`, `docs/sweep.md`).
//!
//! A **spec** ([`spec`]) says where each point's scenario comes from (a base
//! scenario edited by key path or `${name}` substitution, and/or tasks
//! drawn by the [`generator`] for acceptance-ratio studies), which
//! parameters vary and how ([`spec::Domain`]), and which [`metric`]s become
//! columns. Every point is a pure function of the spec and its index
//! ([`points`]): its seed, its values, its scenario. It runs through the
//! real parser (`hsched_scenario`) and the run pipeline (`hsched_pipeline`:
//! analysed, refused unless it composes, simulated), and its metrics are
//! `hsched-report`'s.
//!
//! [`run::run`] runs the points on a pool of threads into a CSV
//! ([`csvfile`]) written in index order, continuing a file an interrupted
//! run left; `--shard k/N` runs every N-th point, and [`csvfile::merge`]
//! puts shard files together. The file of a spec is the same, byte for
//! byte, however it was run: any number of threads, in one go or stopped
//! and restarted, sharded and merged.

pub mod csvfile;
pub mod edit;
mod error;
pub mod generator;
pub mod metric;
pub mod points;
mod reader;
pub mod run;
pub mod spec;
pub mod summary;
pub mod value;

pub use error::SpecError;
pub use points::Shard;
pub use reader::{load, parse};
pub use run::{run, Options, Outcome, Progress, Silent, SweepError};
pub use spec::Spec;
