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

use crate::guarantee::{Guarantee, Kind};
use crate::rewrite::Derivation;
use hsched_core::{Duration, Instant, Msg, Params, Share, Value};
use hsched_model::Machine;
use notation::Row;
use std::collections::BTreeMap;
use std::fmt;

/// How bad a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The hierarchy does not compose: a promise cannot be backed.
    Error,
    /// It composes, but something receives less than it could use.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One problem found at a node or a thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub severity: Severity,
    /// The scheduler or thread the problem is about.
    pub node: String,
    /// The edge (parent, child) it concerns, when there is one; the parent
    /// is `None` for the machine's edge into the root.
    pub edge: Option<(Option<String>, String)>,
    /// What is wrong and why, naming the schedulers involved.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.message)
    }
}

/// What a scheduler receives on one parent link.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    /// The parent's name; `None` for the root (it receives from the machine).
    pub parent: Option<&'a str>,
    /// The parent's policy (empty for the machine).
    pub parent_policy: &'a str,
    /// What each VP on this link is promised.
    pub guarantee: Guarantee,
    /// How many VPs the link holds.
    pub vps: u32,
    /// Why the parent gave this (e.g. "priority 0, below `rt` at 10").
    pub why: Option<&'a str>,
}

impl Input<'_> {
    /// "`ts` (rr) gives it NULL (priority 0, below `rt` at 10)".
    pub fn describe(&self) -> String {
        let source = match self.parent {
            Some(p) => who(p, self.parent_policy),
            None => "the machine".to_string(),
        };
        match self.why {
            Some(w) => format!("{source} gives it {} ({w})", self.guarantee),
            None => format!("{source} gives it {}", self.guarantee),
        }
    }
}

/// What a child is: a scheduler (with its policy) or a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildKind<'a> {
    Scheduler { policy: &'a str },
    Thread,
}

/// One child of the node, as the rule sees it.
#[derive(Clone, Debug)]
pub struct Child<'a> {
    pub name: &'a str,
    pub kind: ChildKind<'a>,
    /// The attachment parameters under this node.
    pub params: &'a Params,
    /// VPs the child holds through this node (1 for a thread).
    pub vps: u32,
    /// Messages a thread child sends to this node in its program (e.g.
    /// `reserve`), in program order. Empty for schedulers.
    pub messages: Vec<&'a Msg>,
    /// What a thread says it needs (`needs = "RESBS 10, 33"`).
    pub needs: Option<Guarantee>,
    /// When it joins (a thread's arrival; 0 for a scheduler): admission
    /// tests see children in this order, ties in [`Node::children`] order.
    pub arrival: Instant,
    /// Whether it can use the CPU at all: false for a thread whose program
    /// only sends messages, sleeps or synchronises (one that reserves for
    /// its activity and leaves, say), which takes nothing from the children
    /// it shares with.
    pub runs: bool,
}

impl Child<'_> {
    /// "thread `video`" or "scheduler `j`".
    pub fn describe(&self) -> String {
        match self.kind {
            ChildKind::Thread => format!("thread `{}`", self.name),
            ChildKind::Scheduler { .. } => format!("scheduler `{}`", self.name),
        }
    }
}

/// One scheduler instance, as its rule sees it.
#[derive(Clone, Debug)]
pub struct Node<'a> {
    pub name: &'a str,
    pub policy: &'a str,
    pub params: &'a Params,
    /// One per parent link (one for most, several for a join); the root's
    /// single input is the machine's ALL, one per CPU.
    pub inputs: Vec<Input<'a>>,
    /// Child schedulers (one per link to this node), then threads.
    pub children: Vec<Child<'a>>,
    pub machine: &'a Machine,
}

impl Node<'_> {
    /// "`res`" or "`rsv` (res)".
    pub fn who(&self) -> String {
        who(self.name, self.policy)
    }

    /// "`res` under `ts`" (or "`res`, the root").
    pub fn under(&self) -> String {
        let parents: Vec<String> = self
            .inputs
            .iter()
            .filter_map(|i| i.parent.map(|p| format!("`{p}`")))
            .collect();
        if parents.is_empty() {
            format!("{}, the root,", self.who())
        } else {
            format!("{} under {}", self.who(), parents.join(" and "))
        }
    }

    /// The input the rules use. One parent link: its guarantee. Several (a
    /// policy other than `join` that takes several parents, as `rtwake`
    /// sits over the default scheduler): like a join, the best of them,
    /// made soft, since the others may add time.
    pub fn input(&self) -> Guarantee {
        match self.inputs.as_slice() {
            [] => Guarantee::Null,
            [one] => one.guarantee,
            many => {
                let cands: Vec<Guarantee> = many.iter().map(|i| i.guarantee.soften()).collect();
                cands[basic::pick_best(&cands, None)]
            }
        }
    }

    /// How many VPs the node holds, over all its links.
    pub fn vps(&self) -> u32 {
        self.inputs.iter().map(|i| i.vps).sum::<u32>().max(1)
    }

    /// "`ts` (rr) gives it NULL", for each input.
    pub fn given(&self) -> String {
        if self.inputs.is_empty() {
            return "nothing reaches it".to_string();
        }
        let all: Vec<String> = self.inputs.iter().map(Input::describe).collect();
        all.join(" and ")
    }

    /// The edge into this node that carries `inputs[i]`.
    pub fn edge_in(&self, i: usize) -> Option<(Option<String>, String)> {
        self.inputs
            .get(i)
            .map(|inp| (inp.parent.map(str::to_string), self.name.to_string()))
    }

    /// A problem at this node, about its (first) input edge.
    pub fn problem(&self, severity: Severity, message: String) -> Problem {
        Problem {
            severity,
            node: self.name.to_string(),
            edge: self.edge_in(0),
            message,
        }
    }

    /// A problem at this node about the edge to `child`.
    pub fn child_problem(&self, child: &Child<'_>, severity: Severity, message: String) -> Problem {
        Problem {
            severity,
            node: child.name.to_string(),
            edge: Some((Some(self.name.to_string()), child.name.to_string())),
            message,
        }
    }
}

/// "`name`" or "`name` (policy)".
pub fn who(name: &str, policy: &str) -> String {
    if name == policy || policy.is_empty() {
        format!("`{name}`")
    } else {
        format!("`{name}` ({policy})")
    }
}

/// The guarantee one child receives, and why (shown beside the edge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub guarantee: Guarantee,
    pub why: Option<String>,
    /// The child asked for something (a reservation, admission) the parent
    /// refuses: it gets NULL, and `why` says what was refused.
    pub refused: bool,
}

impl Label {
    pub fn new(guarantee: Guarantee) -> Label {
        Label {
            guarantee,
            why: None,
            refused: false,
        }
    }
    pub fn because(guarantee: Guarantee, why: impl Into<String>) -> Label {
        Label {
            guarantee,
            why: Some(why.into()),
            refused: false,
        }
    }
    pub fn null() -> Label {
        Label::new(Guarantee::Null)
    }
    /// NULL for a child whose request the parent refuses, and why.
    pub fn refused(why: impl Into<String>) -> Label {
        Label {
            refused: true,
            ..Label::because(Guarantee::Null, why)
        }
    }
}

/// What a rule says about one node.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// How the node used what it received, when a rewrite (§5.2) was needed
    /// (e.g. RESBS 40, 80 taken as PSBE 0.5, 40 by Theorem 4).
    pub taken_as: Option<Derivation>,
    /// One label per child, in the order of [`Node::children`].
    pub labels: Vec<Label>,
    pub problems: Vec<Problem>,
}

impl Verdict {
    /// Every child gets NULL.
    pub fn all_null(node: &Node<'_>) -> Verdict {
        Verdict {
            taken_as: None,
            labels: node.children.iter().map(|_| Label::null()).collect(),
            problems: Vec::new(),
        }
    }
}

/// A built-in rule: reads the node, returns the verdict.
pub type Eval = fn(&Node<'_>) -> Verdict;

/// One policy's rule.
#[derive(Clone, Debug)]
pub enum Rule {
    /// A policy of this product: `row` is its Table 1 row in the paper's
    /// notation (documentation); `eval` is the rule.
    Builtin { row: Row, eval: Eval },
    /// A row in the paper's notation, evaluated generically (literature
    /// schedulers, out-of-tree policies).
    Row(Row),
}

impl Rule {
    /// The Table 1 row, in the paper's notation.
    pub fn row(&self) -> &Row {
        match self {
            Rule::Builtin { row, .. } | Rule::Row(row) => row,
        }
    }

    /// Applies the rule to a node.
    pub fn eval(&self, node: &Node<'_>) -> Verdict {
        match self {
            Rule::Builtin { eval, .. } => eval(node),
            Rule::Row(row) => notation::eval_row(row, node),
        }
    }
}

/// The rules the analysis knows, by policy name: the built-in policies, the
/// literature rows of Table 1, and rows added at run time.
#[derive(Clone, Debug)]
pub struct RuleBook {
    rules: BTreeMap<String, Rule>,
}

impl Default for RuleBook {
    fn default() -> Self {
        RuleBook::standard()
    }
}

impl RuleBook {
    /// No rules at all.
    pub fn empty() -> RuleBook {
        RuleBook {
            rules: BTreeMap::new(),
        }
    }

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

    /// Adds the row of a policy this book does not know yet, written as in
    /// Table 1 (`"ALL -> RESBH+, RESU -> RESBH+"`). An out-of-tree policy
    /// calls this when it is loaded. Errors: a malformed row (saying what
    /// was expected where), or a name that already has a rule.
    ///
    /// ```
    /// use hsched_analysis::rules::RuleBook;
    /// let mut book = RuleBook::standard();
    /// book.add_row("edf-plugin", "ALL -> RESBH+").unwrap();
    /// assert!(book.add_row("fp", "ALL -> NULL+").unwrap_err().contains("already"));
    /// assert!(book.add_row("x", "ALL RESBH").unwrap_err().contains("->"));
    /// ```
    pub fn add_row(&mut self, policy: &str, text: &str) -> Result<(), String> {
        let policy = policy.trim();
        if policy.is_empty() {
            return Err("a rule needs a policy name".into());
        }
        if self.rules.contains_key(policy) {
            return Err(format!(
                "policy `{policy}` already has a guarantee rule ({})",
                self.rules[policy].row()
            ));
        }
        let row = Row::parse(text).map_err(|e| format!("policy `{policy}`: {e}"))?;
        self.rules.insert(policy.to_string(), Rule::Row(row));
        Ok(())
    }

    /// The rule for `policy`.
    pub fn get(&self, policy: &str) -> Option<&Rule> {
        self.rules.get(policy)
    }

    /// Every policy with a rule, by name.
    pub fn policies(&self) -> impl Iterator<Item = (&str, &Rule)> {
        self.rules.iter().map(|(k, v)| (k.as_str(), v))
    }
}

// ---------------------------------------------------------------------------
// Reading parameters defensively: a scenario built in code may leave out a
// parameter the file parser would have defaulted, or give another type.
// ---------------------------------------------------------------------------

/// An integer parameter, `default` when absent.
pub(crate) fn int_param(params: &Params, key: &str, default: i64) -> Result<i64, String> {
    match params.get(key) {
        None => Ok(default),
        Some(Value::Int(i)) => Ok(*i),
        Some(v) => Err(format!("`{key}` = {v}: expected an integer")),
    }
}

/// A duration parameter (a duration, integer nanoseconds, or text such as
/// "10ms"), `default` when absent.
pub(crate) fn duration_param(
    params: &Params,
    key: &str,
    default: Option<Duration>,
) -> Result<Option<Duration>, String> {
    match params.get(key) {
        None => Ok(default),
        Some(Value::Duration(d)) => Ok(Some(*d)),
        Some(Value::Int(i)) if *i >= 0 => Ok(Some(Duration(*i as u64))),
        Some(Value::Str(s)) => Duration::parse(s)
            .map(Some)
            .map_err(|e| format!("`{key}` = {s:?}: {e}")),
        Some(v) => Err(format!("`{key}` = {v}: expected a duration")),
    }
}

/// A string parameter, `None` when absent.
pub(crate) fn str_param<'p>(params: &'p Params, key: &str) -> Result<Option<&'p str>, String> {
    match params.get(key) {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s)),
        Some(v) => Err(format!("`{key}` = {v}: expected a string")),
    }
}

/// A rate or share as the guarantees print it (`0.5`, `0.3333`).
pub fn rate_text(r: Share) -> String {
    crate::guarantee::share_down(r)
}

/// The sum of the shares of `gs` (NULL counts 0); `None` on overflow.
pub(crate) fn share_sum<'g>(gs: impl IntoIterator<Item = &'g Guarantee>) -> Option<Share> {
    gs.into_iter().try_fold(Share::ZERO, |acc, g| {
        acc.checked_add(g.share().unwrap_or(Share::ZERO))
    })
}

/// Rank for choosing among incomparable guarantees: ALL first, NULL last.
pub(crate) fn kind_rank(k: Kind) -> usize {
    Kind::TABLE_ORDER
        .iter()
        .position(|&t| t == k)
        .unwrap_or(Kind::TABLE_ORDER.len())
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

    #[test]
    fn rates_parse_exactly_and_refuse_nonsense() {
        let parse_rate = |t| Share::parse(t, hsched_core::ShareRange::Rate);
        assert_eq!(parse_rate("0.5"), Ok(Share::new(1, 2).unwrap()));
        assert_eq!(parse_rate("1/3"), Ok(Share::new(1, 3).unwrap()));
        assert_eq!(parse_rate("1"), Ok(Share::ONE));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("1.5").unwrap_err().contains("more than 1"));
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn parameters_are_read_defensively() {
        let p = Params::new()
            .with("q", Value::Str("10ms".into()))
            .with("n", Value::Int(3))
            .with("b", Value::Bool(true));
        assert_eq!(
            duration_param(&p, "q", None),
            Ok(Some(Duration::from_millis(10)))
        );
        assert_eq!(duration_param(&p, "n", None), Ok(Some(Duration(3))));
        assert!(duration_param(&p, "b", None).is_err());
        assert_eq!(int_param(&p, "n", 0), Ok(3));
        assert_eq!(int_param(&p, "absent", 7), Ok(7));
        assert!(int_param(&p, "q", 0).is_err());
        assert_eq!(str_param(&p, "q"), Ok(Some("10ms")));
    }
}
