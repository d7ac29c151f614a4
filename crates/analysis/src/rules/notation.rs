//! Table 1's notation (Regehr & Stankovic, HLS, §5.1), parsed, and the
//! generic rule a row gives a scheduler the analysis knows only by its row.
//!
//! A row is a comma-separated list of conversions `A -> B`:
//! - `A` is the weakest guarantee kind the scheduler accepts to provide
//!   `B`; anything that rewrites into `A` (§5.2) is acceptable too. `any`
//!   binds to whatever the scheduler receives. `A+` (SFS) takes several
//!   guarantees, one per processor.
//! - `B` is what it provides: one guarantee of that kind, or with `+`
//!   ("`B+`") as many as it likes; several kinds in parentheses
//!   (`(RESBS+, RESBH+)`); `any` is the received guarantee passed on.
//! - Whenever `A` is `RESU`, amounts in what the scheduler provides are in
//!   the slower processor's time (§5.1): a child promised `RESBS 10, 20` on
//!   `RESU 0.5` has a quarter of the CPU.
//!
//! The arrow may be written `->`, `→` or `|->`, kinds in any case.
//!
//! **The generic rule** ([`eval_row`]). The first conversion whose `A` the
//! scheduler's input implies is used. Each child says what it is promised
//! with the attachment key `guarantee` (text as `Guarantee::parse` reads
//! it); a child without one gets NULL. Admission: each promise is of a kind
//! the conversion provides (or, for `any`, implied by the input); a kind
//! without `+` is promised to one child at most; and the promised shares
//! sum to no more than the input provides (1 for ALL and, in its own time,
//! for RESU; the share of a reservation or a proportional share). Anything
//! finer (an EDF demand test, an SFQ error bound) needs a built-in rule.

use super::{rate_text, share_sum, str_param, Label, Node, Severity, Verdict};
use crate::guarantee::{Guarantee, Kind, Reservation};
use crate::rewrite::{self, Derivation};
use hsched_core::{Duration, Share};
use std::fmt;

/// One side of a conversion: a kind (or `any`), one or many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    /// `None` is `any`.
    pub kind: Option<Kind>,
    /// `+`: several guarantees of this kind.
    pub many: bool,
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Some(k) => write!(f, "{k}")?,
            None => f.write_str("any")?,
        }
        if self.many {
            f.write_str("+")?;
        }
        Ok(())
    }
}

/// `A -> B` or `A -> (B, C)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversion {
    pub input: Term,
    pub outputs: Vec<Term>,
}

impl fmt::Display for Conversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> ", self.input)?;
        if self.outputs.len() == 1 {
            write!(f, "{}", self.outputs[0])
        } else {
            let outs: Vec<String> = self.outputs.iter().map(Term::to_string).collect();
            write!(f, "({})", outs.join(", "))
        }
    }
}

/// A Table 1 row: the conversions one scheduler performs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub conversions: Vec<Conversion>,
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.conversions.iter().map(|c| c.to_string()).collect();
        f.write_str(&parts.join(", "))
    }
}

impl Row {
    /// Parses a row: `"ALL -> RESBH+, RESU -> RESBH+"`,
    /// `"any -> (any, NULL+)"`, `"ALL -> (RESBS+, RESBH+)"`.
    ///
    /// ```
    /// use hsched_analysis::rules::notation::Row;
    /// let row = Row::parse("all → (resbs+, RESBH+),RESU|->RESBH+").unwrap();
    /// assert_eq!(row.to_string(), "ALL -> (RESBS+, RESBH+), RESU -> RESBH+");
    /// assert!(Row::parse("ALL -> ").unwrap_err().contains("conversion 1"));
    /// ```
    pub fn parse(text: &str) -> Result<Row, String> {
        let normalised = text.replace('→', "->").replace("|->", "->");
        let parts =
            split_top_level(&normalised).map_err(|e| format!("row `{}`: {e}", text.trim()))?;
        let mut conversions = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let conv = parse_conversion(part).map_err(|e| {
                format!(
                    "row `{}`: conversion {} (`{}`): {e}",
                    text.trim(),
                    i + 1,
                    part.trim()
                )
            })?;
            conversions.push(conv);
        }
        if conversions.is_empty() {
            return Err(format!(
                "row `{}`: expected at least one conversion `A -> B`",
                text.trim()
            ));
        }
        Ok(Row { conversions })
    }

    /// The input kinds, as "ALL or RESU".
    pub fn inputs_text(&self) -> String {
        let mut seen: Vec<String> = Vec::new();
        for c in &self.conversions {
            let t = match c.input.kind {
                Some(k) => k.to_string(),
                None => "any guarantee".to_string(),
            };
            if !seen.contains(&t) {
                seen.push(t);
            }
        }
        seen.join(" or ")
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<String>, String> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or("a `)` without its `(`".to_string())?;
                cur.push(c);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if depth != 0 {
        return Err("a `(` without its `)`".into());
    }
    if !cur.trim().is_empty() || !parts.is_empty() {
        parts.push(cur);
    }
    Ok(parts)
}

fn parse_conversion(text: &str) -> Result<Conversion, String> {
    let (a, b) = text
        .split_once("->")
        .ok_or("expected `A -> B` (an accepted kind, `->`, the provided kind)")?;
    if b.contains("->") {
        return Err("expected one `->` (separate conversions with commas)".into());
    }
    let input = parse_term(a)?;
    let b = b.trim();
    let outputs = match b.strip_prefix('(') {
        Some(inner) => {
            let inner = inner
                .strip_suffix(')')
                .ok_or("expected `)` to close the list of provided kinds")?;
            let outs = inner
                .split(',')
                .map(parse_term)
                .collect::<Result<Vec<_>, _>>()?;
            if outs.is_empty() {
                return Err("expected at least one provided kind".into());
            }
            outs
        }
        None => vec![parse_term(b)?],
    };
    Ok(Conversion { input, outputs })
}

fn parse_term(text: &str) -> Result<Term, String> {
    let t = text.trim();
    let (name, many) = match t.strip_suffix('+') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    if name.is_empty() {
        return Err("expected a guarantee kind (ALL, NULL, RESBH, ..., PS) or `any`".into());
    }
    if name.eq_ignore_ascii_case("any") {
        return Ok(Term { kind: None, many });
    }
    Ok(Term {
        kind: Some(Kind::parse(name)?),
        many,
    })
}

/// How a guarantee received as input is converted to a conversion's `A`.
fn accept(input: &Guarantee, term: &Term) -> Option<Derivation> {
    match term.kind {
        None => Some(Derivation {
            result: *input,
            steps: Vec::new(),
        }),
        Some(k) if input.kind() == k => Some(Derivation {
            result: *input,
            steps: Vec::new(),
        }),
        Some(k) => rewrite::strongest(input, k),
    }
}

/// The first conversion the input satisfies, with the input rewritten to
/// its `A`.
pub fn matching<'r>(row: &'r Row, input: &Guarantee) -> Option<(&'r Conversion, Derivation)> {
    row.conversions
        .iter()
        .find_map(|c| accept(input, &c.input).map(|d| (c, d)))
}

/// The CPU share available to the children under a conversion whose input
/// became `taken`: on a RESU the children's amounts are in the slower
/// processor's time, so all of it (1).
fn available(taken: &Guarantee) -> Share {
    match taken {
        Guarantee::Resu(_) => Share::ONE,
        g => g.share().unwrap_or(Share::ZERO),
    }
}

/// A guarantee stated in the time of a uniformly slower processor of rate
/// `rate`, as an absolute guarantee: amounts, shares and error terms scaled
/// by the rate (§5.1: RESU 0.5 and RESBS 10, 20 is a quarter of the CPU).
/// Amounts round down and error terms up, so the result never promises more.
pub fn on_slower_processor(g: Guarantee, rate: Share) -> Guarantee {
    let scale_down = |d: Duration| {
        let v = u128::from(d.as_nanos()) * u128::from(rate.num()) / u128::from(rate.den());
        Duration(v as u64)
    };
    let scale_up = |d: Duration| {
        let v =
            (u128::from(d.as_nanos()) * u128::from(rate.num())).div_ceil(u128::from(rate.den()));
        Duration(u64::try_from(v).unwrap_or(u64::MAX))
    };
    let times = |s: Share| s.checked_mul(rate).unwrap_or(Share::ZERO);
    match g {
        Guarantee::All => Guarantee::Resu(rate),
        Guarantee::Null => Guarantee::Null,
        Guarantee::Res(r) => Guarantee::Res(Reservation {
            amount: scale_down(r.amount),
            ..r
        }),
        Guarantee::Resu(q) => Guarantee::Resu(times(q)),
        Guarantee::Psbe { share, delta } => Guarantee::Psbe {
            share: times(share),
            delta: scale_up(delta),
        },
        Guarantee::Ps(s) => Guarantee::Ps(times(s)),
    }
}

/// The generic rule of a row (see the module documentation).
pub fn eval_row(row: &Row, node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    let input = node.input();
    // What each child asks for.
    let mut asked: Vec<Option<Guarantee>> = Vec::with_capacity(node.children.len());
    for c in &node.children {
        let g = match str_param(c.params, "guarantee") {
            Ok(None) | Ok(Some("")) => None,
            Ok(Some(text)) => match Guarantee::parse(text) {
                Ok(g) => Some(g),
                Err(e) => {
                    v.problems.push(node.child_problem(
                        c,
                        Severity::Error,
                        format!(
                            "{} under {}: its attachment `guarantee` = {text:?} is not a guarantee: {e}",
                            c.describe(),
                            node.who()
                        ),
                    ));
                    None
                }
            },
            Err(e) => {
                v.problems.push(node.child_problem(
                    c,
                    Severity::Error,
                    format!("{} under {}: {e}", c.describe(), node.who()),
                ));
                None
            }
        };
        asked.push(g.filter(|g| *g != Guarantee::Null));
    }
    let promises = asked.iter().filter(|a| a.is_some()).count();

    let Some((conv, taken)) = matching(row, &input) else {
        let severity = if promises > 0 {
            Severity::Error
        } else {
            Severity::Warning
        };
        v.problems.push(node.problem(
            severity,
            format!(
                "{}: {} needs {}, but {}: its children get NULL",
                node.under(),
                node.policy,
                row.inputs_text(),
                node.given()
            ),
        ));
        return v;
    };
    let rate = match (conv.input.kind, taken.result) {
        (Some(Kind::Resu), Guarantee::Resu(r)) => Some(r),
        _ => None,
    };
    if !taken.steps.is_empty() {
        v.taken_as = Some(taken.clone());
    }
    let provides: Vec<String> = conv.outputs.iter().map(Term::to_string).collect();
    let mut claimed: Vec<(Term, &str)> = Vec::new();
    let mut granted: Vec<Guarantee> = Vec::new();
    for (i, c) in node.children.iter().enumerate() {
        let Some(g) = asked[i] else {
            v.labels[i] = Label::because(Guarantee::Null, "no `guarantee` on its attachment");
            continue;
        };
        let term = conv.outputs.iter().find(|t| match t.kind {
            Some(k) => k == g.kind(),
            None => rewrite::implies(&taken.result, &g).is_ok(),
        });
        let Some(term) = term else {
            v.problems.push(node.child_problem(
                c,
                Severity::Error,
                format!(
                    "{} under {}: it is promised {g}, but {} provides {} from {}",
                    c.describe(),
                    node.who(),
                    node.policy,
                    provides.join(", "),
                    taken.result
                ),
            ));
            continue;
        };
        if !term.many {
            if let Some((_, other)) = claimed.iter().find(|(t, _)| t == term) {
                v.problems.push(node.child_problem(
                    c,
                    Severity::Error,
                    format!(
                        "{} under {}: {} provides one {term} guarantee, already promised to `{other}`",
                        c.describe(),
                        node.who(),
                        node.policy
                    ),
                ));
                continue;
            }
        }
        if !term.many {
            // Only single outputs are looked up again: one entry each.
            claimed.push((*term, c.name));
        }
        granted.push(g);
        v.labels[i] = match rate {
            Some(r) => Label::because(
                on_slower_processor(g, r),
                format!("{g} on a processor of rate {}", rate_text(r)),
            ),
            None => Label::because(g, "its attachment's `guarantee`"),
        };
    }
    let avail = available(&taken.result);
    match share_sum(&granted) {
        Some(sum) if sum <= avail => {}
        sum => {
            let list: Vec<String> = node
                .children
                .iter()
                .zip(&asked)
                .filter_map(|(c, a)| a.map(|g| format!("{g} (`{}`)", c.name)))
                .collect();
            let total = sum.map_or("more than can be counted".into(), |s| s.percent_string());
            v.problems.push(node.problem(
                Severity::Error,
                format!(
                    "{}: its promises sum to {total} of {}, more than the {} it has from {}: {}",
                    node.who(),
                    if rate.is_some() {
                        "its slower processor"
                    } else {
                        "the CPU"
                    },
                    avail.percent_string(),
                    taken.result,
                    list.join(" + ")
                ),
            ));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_and_print_in_the_paper_notation() {
        for (text, printed) in [
            (
                "ALL -> RESBH+, RESU -> RESBH+",
                "ALL -> RESBH+, RESU -> RESBH+",
            ),
            ("any → (any, NULL+)", "any -> (any, NULL+)"),
            ("RESBS -> RESBH", "RESBS -> RESBH"),
            ("PS+ -> PS+, RESU+ -> PS+", "PS+ -> PS+, RESU+ -> PS+"),
            (
                "ALL |-> ( RESBS+ , RESBH+ ), resu -> (RESBS+, RESBH+)",
                "ALL -> (RESBS+, RESBH+), RESU -> (RESBS+, RESBH+)",
            ),
        ] {
            let row = Row::parse(text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(row.to_string(), printed);
            assert_eq!(Row::parse(printed).unwrap(), row, "round trip");
        }
    }

    #[test]
    fn malformed_rows_say_what_was_expected() {
        for (text, needle) in [
            ("", "at least one conversion"),
            ("ALL", "expected `A -> B`"),
            ("ALL -> ", "expected a guarantee kind"),
            ("ALL -> RESBX+", "unknown guarantee `RESBX`"),
            ("ALL -> (RESBS+", "a `(` without its `)`"),
            ("ALL -> RESBS+)", "a `)` without its `(`"),
            ("ALL -> RESBS -> PS", "one `->`"),
            ("ALL -> RESBS, RESU -> ", "conversion 2"),
        ] {
            let e = Row::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn slower_processor_amounts_scale_by_the_rate() {
        let half = Share::new(1, 2).unwrap();
        let g = Guarantee::parse("RESBS 10, 20").unwrap();
        // §5.1: RESU 0.5 and RESBS 10, 20 is 25% of the CPU.
        let abs = on_slower_processor(g, half);
        assert_eq!(abs.to_string(), "RESBS 5, 20");
        assert_eq!(abs.share(), Share::new(1, 4));
        assert_eq!(
            on_slower_processor(Guarantee::All, half),
            Guarantee::Resu(half)
        );
        let third = Share::new(1, 3).unwrap();
        let p = on_slower_processor(Guarantee::parse("PSBE 0.3, 1ns").unwrap(), third);
        assert_eq!(
            p,
            Guarantee::Psbe {
                share: Share::new(1, 10).unwrap(),
                delta: Duration(1)
            },
            "error terms round up"
        );
    }
}
