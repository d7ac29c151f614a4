//! The typed reading of a [`tree`](crate::tree) node that the scenario
//! reader is built from: a node read as a table, a name, a count, a
//! duration, a parameter value, each failing with a [`Fail`] that names the
//! key path and says what was expected.

use crate::error::{did_you_mean, Fail, Span};
use crate::tree::{Entry, Kind, Node};
use hsched_core::{Duration, Instant, Value};

impl Node {
    fn expected(&self, path: &str, what: &str) -> Fail {
        Fail::new(
            &self.span,
            path,
            format!("expected {what}, found {}", self.type_name()),
        )
    }

    pub(crate) fn table<'a>(&'a self, path: &str, what: &str) -> Result<Table<'a>, Fail> {
        match &self.kind {
            Kind::Table(entries) => Ok(Table {
                entries,
                span: &self.span,
                path: path.to_string(),
            }),
            _ => Err(self.expected(path, what)),
        }
    }

    pub(crate) fn array(&self, path: &str, what: &str) -> Result<&[Node], Fail> {
        match &self.kind {
            Kind::Array(a) => Ok(a),
            _ => Err(self.expected(path, what)),
        }
    }

    pub(crate) fn str(&self, path: &str, what: &str) -> Result<&str, Fail> {
        match &self.kind {
            Kind::Str(s) => Ok(s),
            _ => Err(self.expected(path, what)),
        }
    }

    /// A non-empty name.
    pub(crate) fn name(&self, path: &str, what: &str) -> Result<&str, Fail> {
        let s = self.str(path, what)?;
        if s.trim().is_empty() {
            return Err(Fail::new(
                &self.span,
                path,
                format!("expected {what}, found an empty string"),
            ));
        }
        Ok(s)
    }

    pub(crate) fn bool(&self, path: &str) -> Result<bool, Fail> {
        match &self.kind {
            Kind::Bool(b) => Ok(*b),
            _ => Err(self.expected(path, "`true` or `false`")),
        }
    }

    /// An integer in `min..=max`.
    pub(crate) fn int(&self, path: &str, min: i64, max: i64) -> Result<i64, Fail> {
        let range = if max == i64::MAX {
            format!("an integer >= {min}")
        } else {
            format!("an integer in {min}..={max}")
        };
        match &self.kind {
            Kind::Int(i) if (min..=max).contains(i) => Ok(*i),
            Kind::Int(i) => Err(Fail::new(
                &self.span,
                path,
                format!("{i} is out of range: expected {range}"),
            )),
            _ => Err(self.expected(path, &range)),
        }
    }

    /// A count: an integer >= 0.
    pub(crate) fn count(&self, path: &str) -> Result<u64, Fail> {
        Ok(self.int(path, 0, i64::MAX)? as u64)
    }

    /// A duration: a string with a unit (`"10ms"`, `"1.5s"`) or an integer
    /// number of nanoseconds.
    pub(crate) fn duration(&self, path: &str) -> Result<Duration, Fail> {
        const WHAT: &str = "a duration: a string with a unit (\"10ms\", \"1.5s\", \"250us\") or integer nanoseconds";
        match &self.kind {
            Kind::Str(s) => Duration::parse(s).map_err(|e| {
                Fail::new(&self.span, path, e)
                    .help("units: ns, us, ms, s, min; e.g. \"10ms\", \"1.5s\", \"250us\"")
            }),
            Kind::Int(i) if *i >= 0 => Ok(Duration(*i as u64)),
            Kind::Int(i) => Err(Fail::new(
                &self.span,
                path,
                format!("{i} is negative: expected {WHAT}"),
            )),
            Kind::Float(_) => Err(self
                .expected(path, WHAT)
                .help("write a fractional duration as a string with a unit, e.g. \"1.5ms\"")),
            _ => Err(self.expected(path, WHAT)),
        }
    }

    /// A duration that must be more than zero.
    pub(crate) fn positive_duration(&self, path: &str) -> Result<Duration, Fail> {
        let d = self.duration(path)?;
        if d.is_zero() {
            return Err(Fail::new(
                &self.span,
                path,
                "expected a duration greater than zero",
            ));
        }
        Ok(d)
    }

    /// A point in time, written as the duration since the start of the run.
    pub(crate) fn instant(&self, path: &str) -> Result<Instant, Fail> {
        Ok(Instant(self.duration(path)?.as_nanos()))
    }

    /// A parameter value. No floats: decisions are made on integers.
    /// Strings stay strings here; `Params::resolve` turns them into
    /// durations where the parameter is declared as one.
    pub(crate) fn param_value(&self, path: &str) -> Result<Value, Fail> {
        const WHAT: &str =
            "a parameter value: an integer, a boolean or a string (durations as \"10ms\")";
        match &self.kind {
            Kind::Str(s) => Ok(Value::Str(s.clone())),
            Kind::Int(i) => Ok(Value::Int(*i)),
            Kind::Bool(b) => Ok(Value::Bool(*b)),
            Kind::Float(_) => Err(self.expected(path, WHAT).help(
                "parameters are integers (no floats in decisions): write a ratio as two integers or a duration pair",
            )),
            _ => Err(self.expected(path, WHAT)),
        }
    }
}

/// A table being read: its entries, where it is, and its key path.
pub(crate) struct Table<'a> {
    pub entries: &'a [Entry],
    pub span: &'a Span,
    pub path: String,
}

impl<'a> Table<'a> {
    pub(crate) fn get(&self, key: &str) -> Option<&'a Node> {
        self.entry(key).map(|e| &e.value)
    }

    pub(crate) fn entry(&self, key: &str) -> Option<&'a Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// The path of a key of this table.
    pub(crate) fn key_path(&self, key: &str) -> String {
        join_path(&self.path, key)
    }

    /// An array of tables (`[[key]]`), empty when absent.
    pub(crate) fn tables(&self, key: &str, what: &str) -> Result<&'a [Node], Fail> {
        match self.get(key) {
            None => Ok(&[]),
            Some(n) => n
                .array(&self.key_path(key), what)
                .map_err(|e| e.help(format!("write each entry under its own [[{key}]] header"))),
        }
    }

    /// A required key; the error points at the table and says what it holds.
    pub(crate) fn require(&self, key: &str, what: &str) -> Result<&'a Node, Fail> {
        self.get(key).ok_or_else(|| {
            Fail::new(
                self.span,
                &self.path,
                format!("missing key `{key}` ({what})"),
            )
        })
    }

    /// Every key must be one of `allowed`; an unknown one is an error that
    /// suggests the closest and lists the rest.
    pub(crate) fn only(&self, allowed: &[&str]) -> Result<(), Fail> {
        for e in self.entries {
            if !allowed.contains(&e.key.as_str()) {
                return Err(self.unknown_key(e, allowed));
            }
        }
        Ok(())
    }

    pub(crate) fn unknown_key(&self, e: &Entry, allowed: &[&str]) -> Fail {
        let mut msg = format!("unknown key `{}`", e.key);
        msg.push_str(&did_you_mean(&e.key, allowed.iter().copied()));
        let mut help = format!("expected one of: {}", allowed.join(", "));
        if !self.path.is_empty() && crate::sections::TOP_KEYS.contains(&e.key.as_str()) {
            help = format!(
                "`{}` is a top-level key: in TOML, keys after a [table] header belong to that table, so put top-level keys before the first header",
                e.key
            );
        }
        Fail::new(&e.key_span, &self.key_path(&e.key), msg).help(help)
    }

    /// A table whose keys are parameters (`at = { prio = 3 }`, msg args).
    pub(crate) fn params(&self) -> Result<Vec<RawParam>, Fail> {
        self.entries
            .iter()
            .map(|e| {
                let path = self.key_path(&e.key);
                Ok(RawParam {
                    value: e.value.param_value(&path)?,
                    key: e.key.clone(),
                    key_span: e.key_span.clone(),
                    value_span: e.value.span.clone(),
                    path,
                })
            })
            .collect()
    }
}

/// One parameter as written, before it is checked against a declaration.
#[derive(Debug, Clone)]
pub(crate) struct RawParam {
    pub key: String,
    pub value: Value,
    pub key_span: Span,
    pub value_span: Span,
    pub path: String,
}

/// `a.b`, or `b` at the top.
pub(crate) fn join_path(base: &str, key: &str) -> String {
    // Keys that are not bare TOML keys are quoted so the path reads back.
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    if base.is_empty() {
        key
    } else {
        format!("{base}.{key}")
    }
}

/// `a[3]`.
pub(crate) fn index_path(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}
