//! What a rule sees and what it says: one scheduler instance ([`Node`])
//! with its inputs and children, and the [`Verdict`] a rule returns, a
//! [`Label`] per child and the [`Problem`]s found.

use super::pick::pick_best;
use crate::guarantee::Guarantee;
use crate::rewrite::Derivation;
use hsched_core::{Instant, Msg, Params};
use hsched_model::Machine;
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
                cands[pick_best(&cands, None)]
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
