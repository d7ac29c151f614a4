//! A sweep spec's errors: the file, the line and column, the key path and
//! what was wrong, and the spec text that turns a byte span into a place.

use std::fmt;
use std::ops::Range;

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
