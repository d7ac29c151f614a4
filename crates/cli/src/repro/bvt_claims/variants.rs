//! Test support for the BVT entries: a scenario file with edits (the
//! rules judged on other parameters), and the assertion that every check
//! passes.

use crate::repro::Check;

/// Asserts that every check passes.
pub(super) fn all_pass(checks: &[Check]) {
    for c in checks {
        assert!(
            c.passed(),
            "{}: paper {} measured {}",
            c.quantity,
            c.paper,
            c.measured
        );
    }
}

/// `file`'s text with each `(from, to)` replaced (`from` must occur).
pub(super) fn variant(file: (&str, &str), edits: &[(&str, &str)]) -> String {
    let mut text = file.1.to_string();
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replace(from, to);
    }
    text
}
