//! A TOML document as a small tree in which every key and value keeps its
//! place in the text, and the typed getters the format reader is built from.
//!
//! toml_edit's `ImDocument` has the spans; copying it into this tree once
//! keeps the rest of the crate free of its many item kinds (standard table,
//! inline table, array of tables, dotted keys all become `Table`/`Array`).

use crate::error::{did_you_mean, Fail, Span};
use hsched_core::{Duration, Instant, Value};
use toml_edit::{ImDocument, Item};

#[derive(Debug)]
pub(crate) struct Node {
    pub span: Span,
    pub kind: Kind,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Str(String),
    Int(i64),
    Float,
    Bool(bool),
    Datetime,
    Array(Vec<Node>),
    Table(Vec<Entry>),
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub key: String,
    pub key_span: Span,
    pub value: Node,
}

/// Parses TOML text into the tree; a syntax error points where the parser
/// stopped.
pub(crate) fn parse(text: &str) -> Result<Node, Fail> {
    let doc = ImDocument::parse(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let msg = e.message().trim().replace('\n', "; ");
        let help = bare_duration(text, span.start).map(|w| {
            format!("durations are strings in TOML: write \"{w}\" (or integer nanoseconds)")
        });
        Fail::new(&span, "", format!("invalid TOML: {msg}")).maybe_help(help)
    })?;
    let span = 0..text.len();
    Ok(Node {
        kind: Kind::Table(table_entries(doc.as_table(), &span)),
        span,
    })
}

/// The unquoted word around byte `at` if it looks like a duration with a
/// unit (`10ms`), the most common TOML slip in a scenario.
fn bare_duration(text: &str, at: usize) -> Option<&str> {
    let word = |c: char| c.is_alphanumeric() || c == '.' || c == '_';
    let at = at.min(text.len());
    if !text.is_char_boundary(at) {
        return None;
    }
    let start = text[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| word(*c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = text[at..]
        .find(|c: char| !word(c))
        .map_or(text.len(), |i| at + i);
    let w = text.get(start..end)?;
    let looks = w.starts_with(|c: char| c.is_ascii_digit())
        && w.chars().any(|c| c.is_alphabetic())
        && Duration::parse(w).is_ok();
    looks.then_some(w)
}

fn table_entries(t: &toml_edit::Table, fallback: &Span) -> Vec<Entry> {
    t.iter()
        .filter_map(|(k, item)| {
            let key_span = t
                .key(k)
                .and_then(|k| k.span())
                .or_else(|| item.span())
                .unwrap_or_else(|| fallback.clone());
            let value = item_node(item, &key_span)?;
            Some(Entry {
                key: k.to_string(),
                key_span,
                value,
            })
        })
        .collect()
}

fn item_node(item: &Item, fallback: &Span) -> Option<Node> {
    match item {
        Item::None => None,
        Item::Value(v) => Some(value_node(v, fallback)),
        Item::Table(t) => {
            // Implicit tables (made by dotted keys or `[a.b]`) have no span of
            // their own: the key that made them is the best place to point.
            let span = t.span().unwrap_or_else(|| fallback.clone());
            Some(Node {
                kind: Kind::Table(table_entries(t, &span)),
                span,
            })
        }
        Item::ArrayOfTables(a) => {
            let span = a.span().unwrap_or_else(|| fallback.clone());
            let elems = a
                .iter()
                .map(|t| {
                    let s = t.span().unwrap_or_else(|| span.clone());
                    Node {
                        kind: Kind::Table(table_entries(t, &s)),
                        span: s,
                    }
                })
                .collect();
            Some(Node {
                kind: Kind::Array(elems),
                span,
            })
        }
    }
}

fn value_node(v: &toml_edit::Value, fallback: &Span) -> Node {
    use toml_edit::Value as V;
    let span = v.span().unwrap_or_else(|| fallback.clone());
    let kind = match v {
        V::String(s) => Kind::Str(s.value().clone()),
        V::Integer(i) => Kind::Int(*i.value()),
        V::Float(_) => Kind::Float,
        V::Boolean(b) => Kind::Bool(*b.value()),
        V::Datetime(_) => Kind::Datetime,
        V::Array(a) => Kind::Array(a.iter().map(|v| value_node(v, &span)).collect()),
        V::InlineTable(t) => Kind::Table(
            t.iter()
                .map(|(k, v)| {
                    let key_span = t
                        .key(k)
                        .and_then(|k| k.span())
                        .or_else(|| v.span())
                        .unwrap_or_else(|| span.clone());
                    Entry {
                        key: k.to_string(),
                        value: value_node(v, &key_span),
                        key_span,
                    }
                })
                .collect(),
        ),
    };
    Node { span, kind }
}

impl Node {
    /// "a string", "an integer", ...: for "expected X, found Y".
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            Kind::Str(_) => "a string",
            Kind::Int(_) => "an integer",
            Kind::Float => "a float",
            Kind::Bool(_) => "a boolean",
            Kind::Datetime => "a date-time",
            Kind::Array(_) => "an array",
            Kind::Table(_) => "a table",
        }
    }

    fn expected(&self, path: &str, what: &str) -> Fail {
        Fail::new(
            &self.span,
            path,
            format!("expected {what}, found {}", self.type_name()),
        )
    }

    pub fn table<'a>(&'a self, path: &str, what: &str) -> Result<Table<'a>, Fail> {
        match &self.kind {
            Kind::Table(entries) => Ok(Table {
                entries,
                span: &self.span,
                path: path.to_string(),
            }),
            _ => Err(self.expected(path, what)),
        }
    }

    pub fn array(&self, path: &str, what: &str) -> Result<&[Node], Fail> {
        match &self.kind {
            Kind::Array(a) => Ok(a),
            _ => Err(self.expected(path, what)),
        }
    }

    pub fn str(&self, path: &str, what: &str) -> Result<&str, Fail> {
        match &self.kind {
            Kind::Str(s) => Ok(s),
            _ => Err(self.expected(path, what)),
        }
    }

    /// A non-empty name.
    pub fn name(&self, path: &str, what: &str) -> Result<&str, Fail> {
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

    pub fn bool(&self, path: &str) -> Result<bool, Fail> {
        match &self.kind {
            Kind::Bool(b) => Ok(*b),
            _ => Err(self.expected(path, "`true` or `false`")),
        }
    }

    /// An integer in `min..=max`.
    pub fn int(&self, path: &str, min: i64, max: i64) -> Result<i64, Fail> {
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
    pub fn count(&self, path: &str) -> Result<u64, Fail> {
        Ok(self.int(path, 0, i64::MAX)? as u64)
    }

    /// A duration: a string with a unit (`"10ms"`, `"1.5s"`) or an integer
    /// number of nanoseconds.
    pub fn duration(&self, path: &str) -> Result<Duration, Fail> {
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
            Kind::Float => Err(self
                .expected(path, WHAT)
                .help("write a fractional duration as a string with a unit, e.g. \"1.5ms\"")),
            _ => Err(self.expected(path, WHAT)),
        }
    }

    /// A duration that must be more than zero.
    pub fn positive_duration(&self, path: &str) -> Result<Duration, Fail> {
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
    pub fn instant(&self, path: &str) -> Result<Instant, Fail> {
        Ok(Instant(self.duration(path)?.as_nanos()))
    }

    /// A parameter value. No floats: decisions are made on integers.
    /// Strings stay strings here; `Params::resolve` turns them into
    /// durations where the parameter is declared as one.
    pub fn param_value(&self, path: &str) -> Result<Value, Fail> {
        const WHAT: &str =
            "a parameter value: an integer, a boolean or a string (durations as \"10ms\")";
        match &self.kind {
            Kind::Str(s) => Ok(Value::Str(s.clone())),
            Kind::Int(i) => Ok(Value::Int(*i)),
            Kind::Bool(b) => Ok(Value::Bool(*b)),
            Kind::Float => Err(self.expected(path, WHAT).help(
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
    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.entry(key).map(|e| &e.value)
    }

    pub fn entry(&self, key: &str) -> Option<&'a Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// The path of a key of this table.
    pub fn key_path(&self, key: &str) -> String {
        join_path(&self.path, key)
    }

    /// A required key; the error points at the table and says what it holds.
    pub fn require(&self, key: &str, what: &str) -> Result<&'a Node, Fail> {
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
    pub fn only(&self, allowed: &[&str]) -> Result<(), Fail> {
        for e in self.entries {
            if !allowed.contains(&e.key.as_str()) {
                return Err(self.unknown_key(e, allowed));
            }
        }
        Ok(())
    }

    pub fn unknown_key(&self, e: &Entry, allowed: &[&str]) -> Fail {
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
    pub fn params(&self) -> Result<Vec<RawParam>, Fail> {
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
