//! Table 1's notation (HLS §5.1) as a parser: every row the paper prints
//! parses, rows print back and parse to the same row, and no text makes
//! the parser panic.

use hsched_analysis::rules::literature::TABLE;
use hsched_analysis::rules::notation::Row;
use hsched_analysis::rules::RuleBook;
use proptest::prelude::*;

#[test]
fn every_row_of_table_1_parses_and_prints_back() {
    for entry in TABLE {
        let row = Row::parse(entry.row).unwrap_or_else(|e| panic!("{}: {e}", entry.paper));
        assert_eq!(row.to_string(), entry.row, "{}", entry.paper);
    }
    for (name, rule) in RuleBook::standard().policies() {
        let printed = rule.row().to_string();
        assert_eq!(&Row::parse(&printed).unwrap(), rule.row(), "{name}");
    }
}

fn term() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "ALL", "NULL", "RESBH", "RESBS", "RESCH", "RESCS", "RESU", "PSBE", "PS", "any", "all",
            "psbe",
        ]),
        any::<bool>(),
    )
        .prop_map(|(k, many)| format!("{k}{}", if many { "+" } else { "" }))
}

fn row_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            term(),
            prop::collection::vec(term(), 1..4),
            prop::sample::select(vec!["->", "→", "|->", " -> "]),
        ),
        1..5,
    )
    .prop_map(|convs| {
        convs
            .into_iter()
            .map(|(a, outs, arrow)| {
                let b = if outs.len() == 1 {
                    outs[0].clone()
                } else {
                    format!("({})", outs.join(", "))
                };
                format!("{a}{arrow}{b}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    })
}

proptest! {
    #[test]
    fn well_formed_rows_round_trip(text in row_text()) {
        let row = Row::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let printed = row.to_string();
        prop_assert_eq!(Row::parse(&printed).unwrap(), row);
    }

    #[test]
    fn any_text_parses_or_says_why(text in "\\PC{0,60}") {
        match Row::parse(&text) {
            Ok(row) => prop_assert!(!row.conversions.is_empty()),
            Err(e) => prop_assert!(e.starts_with("row `"), "{}", e),
        }
    }

    #[test]
    fn near_misses_are_refused_with_a_reason(
        text in row_text(),
        cut in 0usize..40,
        junk in prop::sample::select(vec!["(", ")", ",", "->", "+", "X", ""]),
    ) {
        let mut t: String = text.chars().take(cut).collect();
        t.push_str(junk);
        if let Err(e) = Row::parse(&t) {
            prop_assert!(!e.is_empty());
        }
        let mut book = RuleBook::standard();
        let _ = book.add_row("plugin", &t);
    }
}
