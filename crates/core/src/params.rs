//! Typed parameters: what a policy is built from, what a child attaches with,
//! and what a message carries.
//!
//! A policy declares its parameters as [`ParamSpec`]s; the registry checks a
//! scenario's values against them (unknown key, wrong type, out of range) before
//! the policy sees them, so a policy reads its parameters with plain getters.

use crate::share::{Share, ShareRange};
use crate::time::Duration;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One parameter value. There are no floats: decisions are made on integers.
/// A ratio is written as two integers or as a duration pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Duration(Duration),
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Duration(d) => write!(f, "{d}"),
            Value::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// The type of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamKind {
    Bool,
    /// An integer in `min..=max`.
    Int {
        min: i64,
        max: i64,
    },
    /// A duration, at least `min`.
    Duration {
        min: Duration,
    },
    Str,
    /// A fraction of a CPU written as text (`"0.25"`, `"1/3"`, `"25%"`,
    /// read by [`Share::parse`]) in `range`; with `ppm`, a whole number of
    /// parts per million (at most 6 decimal places). A parameter whose
    /// default is the empty string may be left empty (not given).
    Rate {
        range: ShareRange,
        ppm: bool,
    },
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamKind::Bool => f.write_str("bool"),
            ParamKind::Int { min, max } if *max == i64::MAX => write!(f, "integer >= {min}"),
            ParamKind::Int { min, max } => write!(f, "integer in {min}..={max}"),
            ParamKind::Duration { min } if min.is_zero() => f.write_str("duration"),
            ParamKind::Duration { min } => write!(f, "duration >= {min}"),
            ParamKind::Str => f.write_str("string"),
            ParamKind::Rate { range, ppm: false } => write!(f, "{range}"),
            ParamKind::Rate { range, ppm: true } => write!(f, "{range}, at most 6 decimals"),
        }
    }
}

/// The declaration of one parameter.
#[derive(Clone, Debug, Serialize)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    /// `None`: the parameter is required.
    pub default: Option<Value>,
    pub doc: &'static str,
}

impl ParamSpec {
    pub const fn new(name: &'static str, kind: ParamKind, doc: &'static str) -> Self {
        ParamSpec {
            name,
            kind,
            default: None,
            doc,
        }
    }
    pub fn with_default(mut self, v: Value) -> Self {
        self.default = Some(v);
        self
    }

    /// Checks a value against this declaration; the error says what was expected.
    pub fn check(&self, v: &Value) -> Result<(), String> {
        let ok = match (&self.kind, v) {
            (ParamKind::Bool, Value::Bool(_)) => true,
            (ParamKind::Int { min, max }, Value::Int(i)) => {
                if i < min || i > max {
                    return Err(format!(
                        "`{}` = {i} is out of range: expected {}",
                        self.name, self.kind
                    ));
                }
                true
            }
            (ParamKind::Duration { min }, Value::Duration(d)) => {
                if d < min {
                    return Err(format!(
                        "`{}` = {d} is too short: expected {}",
                        self.name, self.kind
                    ));
                }
                true
            }
            (ParamKind::Str, Value::Str(_)) => true,
            // An empty default means "not given": the empty string is too.
            (ParamKind::Rate { .. }, Value::Str(s))
                if s.trim().is_empty() && self.default == Some(Value::Str(String::new())) =>
            {
                true
            }
            (ParamKind::Rate { range, ppm }, Value::Str(s)) => {
                let read = match ppm {
                    true => Share::parse_ppm(s, *range).map(drop),
                    false => Share::parse(s, *range).map(drop),
                };
                read.map_err(|e| format!("`{}` = {v}: {e}", self.name))?;
                true
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!("`{}` = {v}: expected {}", self.name, self.kind))
        }
    }
}

/// An ordered list of named values (order kept as written, for stable output).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params(pub Vec<(String, Value)>);

impl Params {
    pub fn new() -> Self {
        Params(Vec::new())
    }
    pub fn with(mut self, key: &str, v: Value) -> Self {
        self.set(key, v);
        self
    }
    pub fn set(&mut self, key: &str, v: Value) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = v,
            None => self.0.push((key.to_string(), v)),
        }
    }
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// An integer parameter. Panics if absent or of another type: only call it
    /// for a key that [`Params::resolve`] checked against a spec with a default
    /// or that is required.
    pub fn int(&self, key: &str) -> i64 {
        match self.get(key) {
            Some(Value::Int(i)) => *i,
            other => panic!("parameter `{key}` is not an integer: {other:?} (was it declared?)"),
        }
    }
    pub fn duration(&self, key: &str) -> Duration {
        match self.get(key) {
            Some(Value::Duration(d)) => *d,
            other => panic!("parameter `{key}` is not a duration: {other:?} (was it declared?)"),
        }
    }
    pub fn bool(&self, key: &str) -> bool {
        match self.get(key) {
            Some(Value::Bool(b)) => *b,
            other => panic!("parameter `{key}` is not a bool: {other:?} (was it declared?)"),
        }
    }
    pub fn str(&self, key: &str) -> &str {
        match self.get(key) {
            Some(Value::Str(s)) => s,
            other => panic!("parameter `{key}` is not a string: {other:?} (was it declared?)"),
        }
    }
    /// A [`ParamKind::Rate`] parameter, exact.
    pub fn share(&self, key: &str) -> Share {
        Share::parse(self.str(key), ShareRange::Any)
            .unwrap_or_else(|e| panic!("parameter `{key}` is not a rate: {e} (was it declared?)"))
    }
    /// A [`ParamKind::Rate`] parameter declared with `ppm`, in parts per
    /// million.
    pub fn ppm(&self, key: &str) -> u64 {
        Share::parse_ppm(self.str(key), ShareRange::Any)
            .unwrap_or_else(|e| panic!("parameter `{key}` is not a rate: {e} (was it declared?)"))
    }
    /// Like [`Params::int`] but `None` when absent (for optional parameters
    /// without a default).
    pub fn opt_int(&self, key: &str) -> Option<i64> {
        self.get(key).map(|_| self.int(key))
    }
    pub fn opt_duration(&self, key: &str) -> Option<Duration> {
        self.get(key).map(|_| self.duration(key))
    }

    /// Checks these values against `specs` and fills in defaults: an unknown
    /// key, a missing required key or a wrong type is an error naming the key
    /// and what was expected. Integers given for a duration parameter are
    /// nanoseconds.
    pub fn resolve(&self, specs: &[ParamSpec]) -> Result<Params, String> {
        let mut out = Params::new();
        for (k, v) in self.iter() {
            let Some(spec) = specs.iter().find(|s| s.name == k) else {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(if known.is_empty() {
                    format!("unknown parameter `{k}` (this takes no parameters)")
                } else {
                    format!(
                        "unknown parameter `{k}` (expected one of: {})",
                        known.join(", ")
                    )
                });
            };
            let v = match (&spec.kind, v) {
                (ParamKind::Duration { .. }, Value::Int(i)) if *i >= 0 => {
                    Value::Duration(Duration(*i as u64))
                }
                (ParamKind::Duration { .. }, Value::Str(s)) => {
                    Value::Duration(Duration::parse(s).map_err(|e| format!("`{k}`: {e}"))?)
                }
                _ => v.clone(),
            };
            spec.check(&v)?;
            out.set(k, v);
        }
        for spec in specs {
            if out.get(spec.name).is_none() {
                match &spec.default {
                    Some(d) => out.set(spec.name, d.clone()),
                    None => {
                        return Err(format!(
                            "missing parameter `{}` ({}: {})",
                            spec.name, spec.kind, spec.doc
                        ))
                    }
                }
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}
