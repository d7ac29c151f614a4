//! How `hsched repro` prints an entry: its claim, a table of its checks,
//! and each tolerance and diagnosis once, numbered.

use super::check::{Check, Verdict};
use super::entry::Entry;

/// The width `repro` wraps its prose to.
const TEXT_WIDTH: usize = 100;
/// A quantity longer than this is printed on a line of its own, so the
/// table stays within about [`TEXT_WIDTH`] columns.
const QUANTITY_WIDTH: usize = 56;

/// `text` wrapped to [`TEXT_WIDTH`], its first line after `first`, the rest
/// indented by `indent` columns.
fn wrapped(first: &str, indent: usize, text: &str) -> String {
    let indent = " ".repeat(indent);
    let options = textwrap::Options::new(TEXT_WIDTH)
        .initial_indent(first)
        .subsequent_indent(&indent);
    textwrap::fill(text, options)
}

/// An entry: its claim, a table of its checks, then each tolerance and
/// diagnosis once, numbered, and referred to from the rows by number.
pub(super) fn print_entry(entry: &Entry, checks: &[Check]) {
    println!("{} — {}", entry.name, entry.source);
    println!("{}", wrapped("  claim: ", 9, entry.claim));
    for path in entry.scenarios {
        println!("  scenario: {path}");
    }
    // Each distinct note once, in the order the rows first use it.
    let mut notes: Vec<(&str, &str)> = Vec::new();
    let mut note = |kind: &'static str, text: &'static str| -> usize {
        match notes.iter().position(|&(k, t)| k == kind && t == text) {
            Some(i) => i + 1,
            None => {
                notes.push((kind, text));
                notes.len()
            }
        }
    };
    let rows: Vec<(&Check, &str, String)> = checks
        .iter()
        .map(|c| {
            let verdict = match c.verdict() {
                Verdict::Pass => "pass",
                Verdict::Fail => "FAIL",
                Verdict::Differs => "differs",
                Verdict::Stale => "FAIL (agrees now: drop its `differs`)",
            };
            let mut refs = vec![note("tolerance", c.why)];
            if let Some(diagnosis) = c.differs {
                refs.push(note("differs", diagnosis));
            }
            let refs = refs.iter().map(usize::to_string).collect::<Vec<_>>();
            (c, verdict, refs.join(", "))
        })
        .collect();
    let width = checks
        .iter()
        .map(|c| c.quantity.chars().count())
        .filter(|&w| w <= QUANTITY_WIDTH)
        .max()
        .unwrap_or(0)
        .max("quantity".len());
    let verdict_width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(7);
    println!(
        "  {:<width$}  {:>8}  {:>8}  {:>9}  {:<verdict_width$}  note",
        "quantity", "paper", "measured", "tolerance", "verdict"
    );
    for (c, verdict, refs) in &rows {
        // A long quantity gets a line of its own, whole, the numbers under it.
        let quantity = if c.quantity.chars().count() > width {
            println!("  {}", c.quantity);
            ""
        } else {
            c.quantity.as_str()
        };
        println!(
            "  {:<width$}  {:>8.4}  {:>8.4}  {:>9}  {verdict:<verdict_width$}  {refs}",
            quantity,
            c.paper,
            c.measured,
            c.tolerance_text(),
        );
    }
    let number_width = notes.len().to_string().len();
    for (i, (kind, text)) in notes.iter().enumerate() {
        let first = format!("  {:>number_width$}  {kind}: ", i + 1);
        println!("{}", wrapped(&first, number_width + 4, text));
    }
}
