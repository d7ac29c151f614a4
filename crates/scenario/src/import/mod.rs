//! Importers: workload files written for other tools, turned into hsched
//! scenario TOML. Each importer returns the scenario text and the list of
//! what it could not express (never dropped silently): warnings that name
//! the place in the source file, written as comments at the top of the
//! emitted TOML too.

pub mod rtapp;
pub mod simso;

use std::fmt;

/// Something in the source that hsched cannot express exactly: where it is
/// and what was done instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The key path in the source, e.g. `tasks.thread0.phases.p1.barrier`.
    pub path: String,
    /// 1-based line and column in the source (0 if not about a place).
    pub line: usize,
    pub column: usize,
    /// What hsched does instead, and why.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: ", self.line, self.column)?;
        }
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A source that cannot be imported: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    pub file: String,
    /// 1-based; 0 when not about a place in the text.
    pub line: usize,
    pub column: usize,
    /// The key path, empty for a syntax error.
    pub path: String,
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ImportError {}

/// An imported scenario: its TOML text (parseable by [`crate::parse`]) and
/// the warnings, also written at the top of the text as comments.
#[derive(Clone, Debug)]
pub struct Imported {
    pub toml: String,
    pub warnings: Vec<Warning>,
}

/// `s` as a TOML basic string, quoted and escaped.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A duration of `ns` nanoseconds in the scenario format, with the largest
/// unit that keeps it whole (`"20ms"`, `"1500us"`, `"7ns"`).
pub fn toml_duration(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (scale, unit) in UNITS {
        if ns % scale == 0 && (ns > 0 || scale == 1) {
            return format!("\"{}{unit}\"", ns / scale);
        }
    }
    format!("\"{ns}ns\"")
}

/// A comment line (or lines) for the emitted TOML: `# ` before each line.
pub fn toml_comment(text: &str) -> String {
    text.lines().map(|l| format!("# {l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_the_largest_whole_unit() {
        assert_eq!(toml_duration(0), "\"0ns\"");
        assert_eq!(toml_duration(7), "\"7ns\"");
        assert_eq!(toml_duration(1_500_000), "\"1500us\"");
        assert_eq!(toml_duration(20_000_000), "\"20ms\"");
        assert_eq!(toml_duration(6_000_000_000), "\"6s\"");
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(toml_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    }
}
