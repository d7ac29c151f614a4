//! The one error a scenario file gets: where (file, line, column, key path)
//! and what was expected, as a plain line and as a miette diagnostic with a
//! source snippet.

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode, SourceSpan};
use std::fmt;
use std::ops::Range;

/// A byte range in the scenario text.
pub(crate) type Span = Range<usize>;

/// A scenario that cannot be used, and why.
///
/// `Display` is one line, `file:line:col: key: message`, for logs and CI;
/// rendered through miette (`miette::Report::new(err)`) it also shows the
/// offending line with the spot marked, and a hint where there is one.
#[derive(Debug)]
pub struct ScenarioError(Box<Details>);

// Boxed: the error travels in `Result`s and is rare, the scenario is not.
#[derive(Debug)]
struct Details {
    file: String,
    /// 1-based; 0 when the error has no place in the text (unreadable file).
    line: usize,
    /// 1-based, in characters.
    column: usize,
    key: String,
    message: String,
    help: Option<String>,
    // `NamedSource` so the snippet header names the file.
    code: Option<NamedSource<String>>,
    span: Option<SourceSpan>,
}

impl ScenarioError {
    /// The file name as given to [`crate::parse`] or [`crate::load`].
    pub fn file(&self) -> &str {
        &self.0.file
    }
    /// The 1-based line, or 0 if the error is not about a place in the text.
    pub fn line(&self) -> usize {
        self.0.line
    }
    /// The 1-based column (in characters), or 0 with `line`.
    pub fn column(&self) -> usize {
        self.0.column
    }
    /// The key path, e.g. `thread[2].program[1].run`; empty for a TOML
    /// syntax error or an unreadable file.
    pub fn key(&self) -> &str {
        &self.0.key
    }
    /// What is wrong and what was expected.
    pub fn message(&self) -> &str {
        &self.0.message
    }
    /// A hint (closest name, the known choices, ...), if any.
    pub fn hint(&self) -> Option<&str> {
        self.0.help.as_deref()
    }

    /// An error about the file as a whole (it could not be read).
    pub(crate) fn whole_file(file: &str, message: String) -> Self {
        ScenarioError(Box::new(Details {
            file: file.to_string(),
            line: 0,
            column: 0,
            key: String::new(),
            message,
            help: None,
            code: None,
            span: None,
        }))
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.0;
        write!(f, "{}", d.file)?;
        if d.line > 0 {
            write!(f, ":{}:{}", d.line, d.column)?;
        }
        if !d.key.is_empty() {
            write!(f, ": {}", d.key)?;
        }
        write!(f, ": {}", d.message)
    }
}

impl std::error::Error for ScenarioError {}

impl Diagnostic for ScenarioError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new("hsched::scenario"))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.0.code.as_ref().map(|c| c as &dyn SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.0.span?;
        let label = if self.0.key.is_empty() {
            "here".to_string()
        } else {
            self.0.key.clone()
        };
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some(label),
            span,
        ))))
    }
}

/// An error found while reading the tree: where and what, before the file
/// name and text are attached.
#[derive(Debug, Clone)]
pub(crate) struct Fail {
    pub span: Span,
    pub key: String,
    pub msg: String,
    pub help: Option<String>,
}

impl Fail {
    pub fn new(span: &Span, key: &str, msg: impl Into<String>) -> Self {
        Fail {
            span: span.clone(),
            key: key.to_string(),
            msg: msg.into(),
            help: None,
        }
    }
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
    pub fn maybe_help(mut self, help: Option<String>) -> Self {
        self.help = help;
        self
    }

    /// Attaches the file and text, computing line and column.
    pub fn into_error(self, text: &str, file: &str) -> ScenarioError {
        let start = floor_boundary(text, self.span.start.min(text.len()));
        let mut end = floor_boundary(text, self.span.end.clamp(start, text.len()));
        // A multi-line span (a whole table) would draw a box around all of it;
        // its first line says where just as well.
        if let Some(nl) = text[start..end].find('\n') {
            end = start + nl;
        }
        let before = &text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..start].chars().count() + 1;
        ScenarioError(Box::new(Details {
            file: file.to_string(),
            line,
            column,
            key: self.key,
            message: self.msg,
            help: self.help,
            code: Some(NamedSource::new(file, text.to_string())),
            span: Some(SourceSpan::from(start..end)),
        }))
    }
}

impl From<crate::tree::SyntaxError> for Fail {
    fn from(e: crate::tree::SyntaxError) -> Self {
        Fail::new(&e.span, "", e.message).maybe_help(e.help)
    }
}

/// The largest char boundary at or before `i` (spans come from the parser
/// and are on boundaries; this keeps a bad one from panicking a slice).
fn floor_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The closest of `candidates` to `word`, if one is close enough to be a
/// plausible typo.
pub(crate) fn closest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `; did you mean `x`?` or nothing.
pub(crate) fn did_you_mean<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    match closest(word, candidates) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column() {
        let text = "a = 1\nbé = 2\n";
        let e = Fail::new(&(10..11), "b", "bad").into_error(text, "f.toml");
        assert_eq!((e.line(), e.column()), (2, 4));
        assert_eq!(e.to_string(), "f.toml:2:4: b: bad");
    }

    #[test]
    fn spans_out_of_range_do_not_panic() {
        let text = "é";
        let e = Fail::new(&(1..99), "", "x").into_error(text, "f");
        assert_eq!(e.line(), 1);
        assert_eq!(e.to_string(), "f:1:1: x");
    }

    #[test]
    fn suggestions() {
        assert_eq!(closest("horizn", ["horizon", "seed"]), Some("horizon"));
        assert_eq!(closest("xyz", ["horizon", "seed"]), None);
    }
}
