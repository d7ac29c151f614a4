//! The sweep spec's TOML as a small tree whose every node knows where it is
//! in the text, so that an error names the file, line, column and key.
//!
//! toml_edit's `ImDocument` keeps the spans; this copies what the spec
//! reader needs out of its many item kinds (a `[table]` and an inline
//! `{ ... }` are both a `Table` here). Floats keep their source text, so a
//! spec's `0.05` is read as the exact decimal it says.

use std::fmt;
use std::ops::Range;
use toml_edit::{ImDocument, Item};

/// A spec error: where, which key, what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub file: String,
    /// 1-based line and column, when the error has a place in the text.
    pub at: Option<(usize, usize)>,
    /// The key path (`grid.u.step`); empty for the whole file.
    pub key: String,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some((line, col)) = self.at {
            write!(f, ":{line}:{col}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SpecError {}

/// The text being read, to turn spans into line and column.
pub(crate) struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    pub fn error(&self, span: &Range<usize>, key: &str, message: impl Into<String>) -> SpecError {
        let at = span.start.min(self.text.len());
        let at = (0..=at)
            .rev()
            .find(|&i| self.text.is_char_boundary(i))
            .unwrap_or(0);
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        SpecError {
            file: self.file.to_string(),
            at: Some((line, col)),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Node {
    pub span: Range<usize>,
    pub kind: Kind,
    /// Written as a value (`{ ... }`, `[ ... ]`, a scalar), not as a
    /// `[table]` or `[[array]]` header: kept so when copied.
    pub inline: bool,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Str(String),
    Int(i64),
    /// A float, as written.
    Float(String),
    Bool(bool),
    Datetime,
    Array(Vec<Node>),
    /// Entries in file order.
    Table(Vec<(String, Node)>),
}

impl Node {
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Str(_) => "a string",
            Kind::Int(_) => "an integer",
            Kind::Float(_) => "a float",
            Kind::Bool(_) => "a boolean",
            Kind::Datetime => "a date-time",
            Kind::Array(_) => "an array",
            Kind::Table(_) => "a table",
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Table(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, n)| n),
            _ => None,
        }
    }

    pub fn entries(&self) -> &[(String, Node)] {
        match &self.kind {
            Kind::Table(entries) => entries,
            _ => &[],
        }
    }
}

/// Parses TOML text into the tree; a syntax error points where the parser
/// stopped.
pub(crate) fn parse(src: &Source<'_>) -> Result<Node, SpecError> {
    let doc = ImDocument::parse(src.text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let msg = e.message().trim().replace('\n', "; ");
        src.error(&span, "", format!("invalid TOML: {msg}"))
    })?;
    let whole = 0..src.text.len();
    Ok(Node {
        kind: Kind::Table(table_entries(src.text, doc.as_table(), &whole)),
        span: whole,
        inline: false,
    })
}

fn table_entries(text: &str, t: &toml_edit::Table, fallback: &Range<usize>) -> Vec<(String, Node)> {
    t.iter()
        .filter_map(|(k, item)| {
            let key_span = t
                .key(k)
                .and_then(|k| k.span())
                .unwrap_or_else(|| fallback.clone());
            Some((k.to_string(), item_node(text, item, &key_span)?))
        })
        .collect()
}

fn item_node(text: &str, item: &Item, fallback: &Range<usize>) -> Option<Node> {
    match item {
        Item::None => None,
        Item::Value(v) => Some(value_node(text, v, fallback)),
        Item::Table(t) => {
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
        V::Array(a) => Kind::Array(a.iter().map(|e| value_node(text, e, &span)).collect()),
        V::InlineTable(t) => Kind::Table(
            t.iter()
                .map(|(k, e)| {
                    let key_span = t
                        .key(k)
                        .and_then(|k| k.span())
                        .unwrap_or_else(|| span.clone());
                    (k.to_string(), value_node(text, e, &key_span))
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
