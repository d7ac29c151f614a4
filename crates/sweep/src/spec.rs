//! A sweep spec (`docs/sweep.md`) once read and checked: the [`Spec`] from
//! which every point can be computed on its own (reading it is
//! `crate::reader`'s).

use crate::edit::KeyPath;
use crate::generator::TaskSet;
use crate::metric::Metric;
use crate::value::{Decimal, Value};

/// More points than this are refused: a typo in a range, not a plan.
pub const MAX_POINTS: u64 = 1_000_000_000;

/// Column names the CSV uses itself; no parameter may take them.
pub const RESERVED: &[&str] = &["index", "seed", "replicate"];

/// A parsed, checked sweep spec.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The spec file as given (for messages).
    pub file: String,
    /// The file name without extension: the default name of generated
    /// scenarios and of the output.
    pub name: String,
    pub description: String,
    /// The base seed: point `i`'s seed is derived from it and `i`.
    pub seed: u64,
    /// Points per parameter combination (grid) or per sample (random),
    /// each with its own seed.
    pub replicates: u64,
    pub design: Design,
    pub params: Vec<Param>,
    /// The base scenario (file or inline), if any.
    pub base: Option<Base>,
    /// The task-set generator, if any.
    pub taskset: Option<TaskSet>,
    /// The metric columns, in order.
    pub metrics: Vec<Metric>,
}

impl Spec {
    /// The parameters' names, in order (a point's values follow it).
    pub fn param_names(&self) -> Vec<&str> {
        self.params.iter().map(|p| p.name.as_str()).collect()
    }
}

/// How parameter values are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// Every combination of the parameters' values (the first parameter
    /// varies slowest).
    Grid,
    /// `samples` independent draws of every parameter.
    Random { samples: u64 },
}

#[derive(Clone, Debug)]
pub struct Base {
    /// For messages: the scenario file as the spec names it, or
    /// `SPEC [scenario]` for an inline one.
    pub file: String,
    pub text: String,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub domain: Domain,
    /// Key paths into the base scenario this parameter's value is written to.
    pub set: Vec<KeyPath>,
}

impl Param {
    /// Whether its values are durations (integer nanoseconds).
    pub fn is_duration(&self) -> bool {
        matches!(
            self.domain,
            Domain::Durations(_)
                | Domain::DurationRange { .. }
                | Domain::DurationUniform { .. }
                | Domain::DurationLogUniform { .. }
        )
    }

    /// Its CSV column: the name, with `_ns` for a duration (as every time
    /// column of hsched's tables) unless the name already ends so.
    pub fn column(&self) -> String {
        if self.is_duration() && !self.name.ends_with("_ns") {
            format!("{}_ns", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// Where a parameter's values come from.
#[derive(Clone, Debug)]
pub enum Domain {
    /// Grid: these values, in order. Random: one of them, uniformly.
    List(Vec<Value>),
    /// Grid: `from, from + step, ...` up to `to` (exact decimals; integers
    /// when `from` and `step` are).
    Range {
        from: Decimal,
        step: Decimal,
        count: u64,
    },
    /// Grid: these durations, as nanoseconds, in order. Random: one of them,
    /// uniformly (a list whose every value is a duration with a unit).
    Durations(Vec<u64>),
    /// Grid: durations `from, from + step, ...` up to `to`, as nanoseconds.
    DurationRange { from: u64, step: u64, count: u64 },
    /// Random: uniform on `[lo, hi]`, rounded to `digits` decimals.
    Uniform { lo: f64, hi: f64, digits: u32 },
    /// Random: log-uniform on `[lo, hi]` (`lo > 0`), rounded to `digits`.
    LogUniform { lo: f64, hi: f64, digits: u32 },
    /// Random: an integer uniform on `[lo, hi]`.
    IntUniform { lo: i64, hi: i64 },
    /// Random: a duration uniform on `[lo, hi]`, as nanoseconds.
    DurationUniform { lo: u64, hi: u64 },
    /// Random: a duration log-uniform on `[lo, hi]` (`lo > 0`), as nanoseconds.
    DurationLogUniform { lo: u64, hi: u64 },
}

impl Domain {
    /// How many values a grid parameter takes.
    pub fn grid_len(&self) -> u64 {
        match self {
            Domain::List(v) => v.len() as u64,
            Domain::Durations(v) => v.len() as u64,
            Domain::Range { count, .. } | Domain::DurationRange { count, .. } => *count,
            _ => 0,
        }
    }
}

/// Reads a base scenario named by the spec: its path relative to the spec
/// -> (the name to show in messages, its text).
pub type ReadScenario<'a> = &'a dyn Fn(&str) -> Result<(String, String), String>;
