//! Per-policy guarantee conversion rules: the paper's Table 1 (Regehr &
//! Stankovic, "HLS: A Framework for Composing Soft Real-Time Schedulers",
//! §5.1), one rule per scheduling policy, kept in a [`RuleBook`].
//!
//! A rule looks at one scheduler instance — its parameters, the
//! guarantee(s) its parent links carry, its children with their attachment
//! parameters — and says what each child receives (a [`Label`] per child),
//! how it used its input (rewrites, §5.2) and what is wrong (admission,
//! §3.3). The top-down walk that calls the rules is [`crate::compose`].
//!
//! Two kinds of rule:
//! - **built in**, for the policies of this product (fifo, rr, ts, fp,
//!   join, limit, sfq, bvt, res, dbs, rialto, rtwake, frc, rcsp, hfsc, edf, rm):
//!   code that reads the policy's own parameters (priorities, weights, quanta, budgets,
//!   reservations asked by attachment or by message). Each also states its
//!   Table 1 row in the paper's notation, for people and for `--json`.
//! - **rows**, in the paper's notation ([`notation`]): the schedulers of
//!   the literature part of Table 1 ([`literature`]), and rows an
//!   out-of-tree policy adds at run time with [`RuleBook::add_row`]. A row
//!   node's children say what they are promised with the attachment key
//!   `guarantee = "RESBH 5, 33"`; the row checks the kinds and the sum of
//!   the shares ([`notation::eval_row`]).
//!
//! Errors and warnings (§3.3 and the project's rule): a scheduler that makes
//! explicit promises (reservations asked by its children, a cap it is
//! configured with) it cannot back is an **error**; a scheduler that only
//! passes on what it gets, and gets NULL, gives NULL (a **warning** when it
//! would have given more: its children are best effort).
//!
//! On several CPUs (what the analysis assumes): the root receives one ALL per
//! CPU, one per VP it holds. `fp` hands ALL to every child VP that has at
//! most as many VPs at or above its priority as it holds ALLs (global fixed
//! priority: such a VP never waits). Every other rule is the paper's
//! uniprocessor rule applied to one of the VPs the node holds: what the
//! others bring is extra, not promised (EDF-based rules stay valid: a job
//! set EDF meets on one processor, global EDF meets on several). `sfq`,
//! `bvt`, `frc`, `rcsp` and `hfsc` claim nothing on several CPUs (their own documentation claims no
//! bound there), except `hfsc` with `multiprocessor = "partitioned"`: each
//! child is placed on one VP and each VP is a uniprocessor HFSC. `res`,
//! `dbs` and `rialto` have multiprocessor modes of their own
//! (`multiprocessor`: partitioned, or global EDF for `res`), analysed by
//! their rules ([`reservation`]).
//!
//! Everything here is integer or exact-fraction arithmetic, and the output
//! depends only on the scenario: no clock, no I/O, no hashing order.

pub mod basic;
pub mod literature;
pub mod notation;
pub mod proportional;
pub mod rate;
pub mod realtime;
pub mod reservation;

mod book;
mod node;
mod params;
pub mod pick;
mod shares;

pub use book::{Rule, RuleBook};
pub use node::{who, Child, ChildKind, Eval, Input, Label, Node, Problem, Severity, Verdict};
pub(crate) use params::{duration_param, int_param, str_param};
pub use shares::rate_text;
pub(crate) use shares::share_sum;

use notation::Row;

// The standard book is assembled here, where the rule files are declared,
// so that `book.rs` needs none of them (and `literature`, which reads a
// book, does not import its own assembler).
impl RuleBook {
    /// The built-in rules and the literature rows.
    ///
    /// ```
    /// use hsched_analysis::rules::RuleBook;
    /// let book = RuleBook::standard();
    /// assert_eq!(book.get("cbs").unwrap().row().to_string(), "ALL -> RESBH+, RESU -> RESBH+");
    /// assert_eq!(book.get("fp").unwrap().row().to_string(), "any -> (any, NULL+)");
    /// ```
    pub fn standard() -> RuleBook {
        let mut book = RuleBook::empty();
        for (name, row, eval) in basic::RULES
            .iter()
            .chain(proportional::RULES)
            .chain(rate::RULES)
            .chain(reservation::RULES)
            .chain(realtime::RULES)
        {
            let row = Row::parse(row).expect("built-in rows parse");
            book.rules
                .insert(name.to_string(), Rule::Builtin { row, eval: *eval });
        }
        for entry in literature::TABLE {
            let row = Row::parse(entry.row).expect("literature rows parse");
            for name in entry.policies {
                // A literature scheduler this product implements (SFQ,
                // Rialto) keeps its built-in rule: same row, and it reads
                // the real parameters.
                book.rules
                    .entry(name.to_string())
                    .or_insert_with(|| Rule::Row(row.clone()));
            }
        }
        book
    }
}

impl Default for RuleBook {
    fn default() -> Self {
        RuleBook::standard()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_and_literature_policy_has_a_parsed_row() {
        let book = RuleBook::standard();
        for name in [
            "fifo", "rr", "ts", "fp", "join", "limit", "sfq", "bvt", "res", "dbs", "rialto",
            "rtwake", "frc", "rcsp", "hfsc", "edf", "rm",
        ] {
            assert!(
                matches!(book.get(name), Some(Rule::Builtin { .. })),
                "{name}"
            );
        }
        for name in [
            "bss-i",
            "pshed",
            "cbs",
            "eevdf",
            "linux",
            "win-2000",
            "lottery",
            "stride",
            "resource-kernel",
            "rialto-nt",
            "sfs",
            "spring",
            "tbs",
        ] {
            assert!(matches!(book.get(name), Some(Rule::Row(_))), "{name}");
        }
        // The literature's SFQ and Rialto are this product's sfq and rialto.
        assert!(matches!(book.get("sfq"), Some(Rule::Builtin { .. })));
        assert!(matches!(book.get("rialto"), Some(Rule::Builtin { .. })));
    }
}
