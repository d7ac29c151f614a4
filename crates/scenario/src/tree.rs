//! A TOML document as a small tree in which every key and value keeps its
//! place in the text: what the scenario reader and the sweep spec reader
//! (`hsched-sweep`) are built on.
//!
//! toml_edit's `ImDocument` has the spans; copying it into this tree once
//! keeps its readers free of its many item kinds (standard table, inline
//! table, array of tables, dotted keys all become `Table`/`Array`). A float
//! keeps its source text, so `0.05` can be read as the exact decimal it
//! says; whether a table or array was written inline is kept, so a reader
//! that copies a subtree can keep its layout.

use hsched_core::Duration;
use std::ops::Range;
use toml_edit::{ImDocument, Item};

/// A value, where it is in the text, and how it was written.
#[derive(Debug)]
pub struct Node {
    /// The byte range of the value (of the `[header]` for a table).
    pub span: Range<usize>,
    pub kind: Kind,
    /// Written as a value (`{ ... }`, `[ ... ]`, a scalar), not as a
    /// `[table]` or `[[array]]` header.
    pub inline: bool,
}

#[derive(Debug)]
pub enum Kind {
    Str(String),
    Int(i64),
    /// A float, as written.
    Float(String),
    Bool(bool),
    Datetime,
    Array(Vec<Node>),
    /// Entries in file order.
    Table(Vec<Entry>),
}

/// One key of a table and its value.
#[derive(Debug)]
pub struct Entry {
    pub key: String,
    pub key_span: Range<usize>,
    pub value: Node,
}

/// Text that is not TOML: where the parser stopped and what it expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub span: Range<usize>,
    /// `invalid TOML: ...`.
    pub message: String,
    /// A likely fix (a duration written without quotes), if one is seen.
    pub help: Option<String>,
}

/// Parses TOML text into the tree; a syntax error points where the parser
/// stopped.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let doc = ImDocument::parse(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let msg = e.message().trim().replace('\n', "; ");
        let help = bare_duration(text, span.start).map(|w| {
            format!("durations are strings in TOML: write \"{w}\" (or integer nanoseconds)")
        });
        SyntaxError {
            span,
            message: format!("invalid TOML: {msg}"),
            help,
        }
    })?;
    let span = 0..text.len();
    Ok(Node {
        kind: Kind::Table(table_entries(text, doc.as_table(), &span)),
        span,
        inline: false,
    })
}

impl Node {
    /// "a string", "an integer", ...: for "expected X, found Y".
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            Kind::Str(_) => "a string",
            Kind::Int(_) => "an integer",
            Kind::Float(_) => "a float",
            Kind::Bool(_) => "a boolean",
            Kind::Datetime => "a date-time",
            Kind::Array(_) => "an array",
            Kind::Table(_) => "a table",
        }
    }

    /// The value of `key` if this is a table that has it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entries()
            .iter()
            .find(|e| e.key == key)
            .map(|e| &e.value)
    }

    /// The entries of a table, in file order; none for any other value.
    pub fn entries(&self) -> &[Entry] {
        match &self.kind {
            Kind::Table(entries) => entries,
            _ => &[],
        }
    }
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

fn table_entries(text: &str, t: &toml_edit::Table, fallback: &Range<usize>) -> Vec<Entry> {
    t.iter()
        .filter_map(|(k, item)| {
            let key_span = t
                .key(k)
                .and_then(|k| k.span())
                .or_else(|| item.span())
                .unwrap_or_else(|| fallback.clone());
            let value = item_node(text, item, &key_span)?;
            Some(Entry {
                key: k.to_string(),
                key_span,
                value,
            })
        })
        .collect()
}

fn item_node(text: &str, item: &Item, fallback: &Range<usize>) -> Option<Node> {
    match item {
        Item::None => None,
        Item::Value(v) => Some(value_node(text, v, fallback)),
        Item::Table(t) => {
            // Implicit tables (made by dotted keys or `[a.b]`) have no span of
            // their own: the key that made them is the best place to point.
            let span = t.span().unwrap_or_else(|| fallback.clone());
            Some(Node {
                kind: Kind::Table(table_entries(text, t, &span)),
                span,
                inline: false,
            })
        }
        Item::ArrayOfTables(a) => {
            let span = a.span().unwrap_or_else(|| fallback.clone());
            let elems = a
                .iter()
                .map(|t| {
                    let s = t.span().unwrap_or_else(|| span.clone());
                    Node {
                        kind: Kind::Table(table_entries(text, t, &s)),
                        span: s,
                        inline: false,
                    }
                })
                .collect();
            Some(Node {
                kind: Kind::Array(elems),
                span,
                inline: false,
            })
        }
    }
}

fn value_node(text: &str, v: &toml_edit::Value, fallback: &Range<usize>) -> Node {
    use toml_edit::Value as V;
    let span = v.span().unwrap_or_else(|| fallback.clone());
    let kind = match v {
        V::String(s) => Kind::Str(s.value().clone()),
        V::Integer(i) => Kind::Int(*i.value()),
        V::Float(f) => Kind::Float(
            text.get(span.clone())
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map_or_else(|| f.value().to_string(), str::to_string),
        ),
        V::Boolean(b) => Kind::Bool(*b.value()),
        V::Datetime(_) => Kind::Datetime,
        V::Array(a) => Kind::Array(a.iter().map(|v| value_node(text, v, &span)).collect()),
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
                        value: value_node(text, v, &key_span),
                        key_span,
                    }
                })
                .collect(),
        ),
    };
    Node {
        span,
        kind,
        inline: true,
    }
}
