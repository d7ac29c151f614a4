//! A policy's rule ([`Rule`]: built in, or a row in the paper's notation)
//! and the [`RuleBook`] that finds it by policy name. The standard book,
//! assembled from the rule files, is [`RuleBook::standard`].

use super::node::{Eval, Node, Verdict};
use super::notation::{self, Row};
use std::collections::BTreeMap;

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
    pub(super) rules: BTreeMap<String, Rule>,
}

impl RuleBook {
    /// No rules at all.
    pub fn empty() -> RuleBook {
        RuleBook {
            rules: BTreeMap::new(),
        }
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
