//! Rules for the classic real-time schedulers over periodic tasks: `edf`
//! (earliest deadline first) and `rm` (rate monotonic), Liu & Layland
//! (JACM 1973), placed in HLS's Table 1 as the paper places its EDF-based
//! reservation schedulers: `ALL -> RESBH+`.
//!
//! Each child attaches with its task parameters, `period` T and `wcet` C
//! (and, under `edf`, a relative `deadline` D, default T). A child whose
//! jobs each get C by their deadline, one job per period, receives the
//! basic hard reservation RESBH C, T (C units in every period of length T,
//! aligned with its releases). Neither policy enforces a budget, so every
//! guarantee below assumes that every child keeps to its `wcet`; the label
//! says so.
//!
//! **`edf`**: every child is guaranteed when every child gives `period`
//! and `wcet` and the density Σ C/min(D, T) is at most 1. With D = T that
//! is Liu & Layland's utilisation bound, exact for EDF; with D < T it is
//! sufficient, not exact (the processor-demand test would accept more): a
//! conservative choice, kept because it is a closed form in exact
//! fractions. A child whose demand is unknown (no `period` or no `wcet`)
//! can delay every other: then nobody is guaranteed anything (a warning
//! naming it). An overloaded set is a warning, not an error: `edf` admits
//! everyone and promises nothing by itself; a thread that `needs` a
//! guarantee turns it into an error at the thread.
//!
//! **`rm`**: a periodic child i is guaranteed when it and every child of
//! higher or equal priority (period at most T_i) give their `wcet` and pass
//! the hyperbolic bound Π(1 + C_j/T_j) ≤ 2 (Bini, Buttazzo & Buttazzo,
//! "Rate Monotonic Analysis: the Hyperbolic Bound", IEEE TC 2003). It is
//! exact in fractions and accepts every set Liu & Layland's
//! U ≤ n(2^(1/n) − 1) accepts (and more), which is irrational and would
//! need floating point. Where the product's fraction overflows 64 bits the
//! rule falls back to U ≤ 693/1000, below ln 2, the limit of Liu &
//! Layland's bound: sufficient for any n. Lower-priority children cannot
//! delay i, so they do not count. Children without a period rank last and
//! get NULL.
//!
//! Both need ALL (one whole processor per VP): from anything else, their
//! children get NULL, with a warning when one gave a `wcet`.

use super::{duration_param, Eval, Label, Node, Severity, Verdict};
use crate::guarantee::{Guarantee, Limit, Shape};
use hsched_core::{Duration, Share};

/// (policy, Table 1 row, rule).
pub const RULES: &[(&str, &str, Eval)] =
    &[("edf", "ALL -> RESBH+", edf), ("rm", "ALL -> RESBH+", rm)];

/// The task parameters a child attached with; errors name the key.
#[derive(Clone, Copy, Debug)]
struct Task {
    period: Duration,
    deadline: Duration,
    wcet: Duration,
}

impl Task {
    fn known(&self) -> bool {
        !self.period.is_zero() && !self.wcet.is_zero()
    }
    fn guarantee(&self) -> Option<Guarantee> {
        Guarantee::reservation(Shape::Basic, Limit::Hard, self.wcet, self.period).ok()
    }
}

/// Reads every child's task parameters; a malformed one is an error at the
/// child and counts as unknown.
fn tasks(node: &Node<'_>, v: &mut Verdict) -> Vec<Task> {
    node.children
        .iter()
        .map(|c| {
            let read = |key| duration_param(c.params, key, Some(Duration::ZERO));
            match (read("period"), read("deadline"), read("wcet")) {
                (Ok(p), Ok(d), Ok(w)) => {
                    let period = p.unwrap_or_default();
                    let deadline = d.unwrap_or_default();
                    Task {
                        period,
                        deadline: if deadline.is_zero() { period } else { deadline },
                        wcet: w.unwrap_or_default(),
                    }
                }
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                    v.problems.push(node.child_problem(
                        c,
                        Severity::Error,
                        format!("{} under {}: {e}", c.describe(), node.who()),
                    ));
                    Task {
                        period: Duration::ZERO,
                        deadline: Duration::ZERO,
                        wcet: Duration::ZERO,
                    }
                }
            }
        })
        .collect()
}

/// The input is one whole processor; if not, a warning when a child gave
/// its `wcet` (it expected a guarantee).
fn needs_all(node: &Node<'_>, tasks: &[Task], v: &mut Verdict) -> bool {
    if node.input() == Guarantee::All {
        return true;
    }
    if tasks.iter().any(|t| !t.wcet.is_zero()) {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: {}, but a real-time scheduler needs ALL (a whole processor): its children's deadlines are not guaranteed",
                node.under(),
                node.given()
            ),
        ));
    }
    false
}

fn names(node: &Node<'_>, which: impl Fn(usize) -> bool) -> String {
    node.children
        .iter()
        .enumerate()
        .filter(|&(i, _)| which(i))
        .map(|(_, c)| format!("`{}`", c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn edf(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    let tasks = tasks(node, &mut v);
    if node.children.is_empty() || !needs_all(node, &tasks, &mut v) {
        return v;
    }
    if tasks.iter().any(|t| !t.known()) {
        if tasks.iter().any(|t| t.known()) {
            v.problems.push(node.problem(
                Severity::Warning,
                format!(
                    "{}: {} give no `period` and `wcet`: their demand is unknown and may delay every other child, so no deadline is guaranteed",
                    node.who(),
                    names(node, |i| !tasks[i].known())
                ),
            ));
        }
        return v;
    }
    let density = tasks.iter().try_fold(Share::ZERO, |sum, t| {
        sum.checked_add(Share::new(
            t.wcet.as_nanos(),
            t.deadline.min(t.period).as_nanos(),
        )?)
    });
    let what = if tasks.iter().all(|t| t.deadline >= t.period) {
        "utilisation"
    } else {
        "density (sum of wcet / min(deadline, period))"
    };
    match density {
        Some(d) if d <= Share::ONE => {
            let why = format!(
                "EDF, {what} {} <= 100%; holds while every child keeps to its wcet",
                d.percent_string()
            );
            for (i, t) in tasks.iter().enumerate() {
                if let Some(g) = t.guarantee() {
                    v.labels[i] = Label::because(g, why.clone());
                }
            }
        }
        other => {
            let total = other.map_or("more than can be counted".into(), |d| d.percent_string());
            v.problems.push(node.problem(
                Severity::Warning,
                format!(
                    "{}: its children's {what} is {total}, past 100%: overloaded, no deadline is guaranteed",
                    node.who()
                ),
            ));
        }
    }
    v
}

/// Whether the tasks pass the hyperbolic bound (or, where its fraction
/// overflows, U ≤ 693/1000); `None` if even the sum overflows.
fn rm_schedulable(set: &[Task]) -> bool {
    let one_plus = |t: &Task| {
        Share::new(
            t.period.as_nanos().checked_add(t.wcet.as_nanos())?,
            t.period.as_nanos(),
        )
    };
    let product = set
        .iter()
        .try_fold(Share::ONE, |acc, t| acc.checked_mul(one_plus(t)?));
    match product {
        Some(p) => p <= Share::integer(2),
        None => set
            .iter()
            .try_fold(Share::ZERO, |acc, t| {
                acc.checked_add(Share::new(t.wcet.as_nanos(), t.period.as_nanos())?)
            })
            .is_some_and(|u| u <= Share::new(693, 1000).expect("a fraction")),
    }
}

pub fn rm(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    let tasks = tasks(node, &mut v);
    if node.children.is_empty() || !needs_all(node, &tasks, &mut v) {
        return v;
    }
    let mut refused = Vec::new();
    for (i, t) in tasks.iter().enumerate() {
        if t.period.is_zero() {
            continue; // below every periodic child: nothing to guarantee
        }
        let above: Vec<usize> = (0..tasks.len())
            .filter(|&j| !tasks[j].period.is_zero() && tasks[j].period <= t.period)
            .collect();
        let unknown: Vec<usize> = above
            .iter()
            .copied()
            .filter(|&j| tasks[j].wcet.is_zero())
            .collect();
        if !unknown.is_empty() {
            if !t.wcet.is_zero() {
                refused.push(format!(
                    "`{}` (no `wcet` from {})",
                    node.children[i].name,
                    names(node, |j| unknown.contains(&j))
                ));
            }
            continue;
        }
        let set: Vec<Task> = above.iter().map(|&j| tasks[j]).collect();
        if !rm_schedulable(&set) {
            refused.push(format!(
                "`{}` (it and the {} child(ren) at or above its priority fail the hyperbolic bound)",
                node.children[i].name,
                set.len() - 1
            ));
            continue;
        }
        if let Some(g) = t.guarantee() {
            v.labels[i] = Label::because(
                g,
                format!(
                    "RM, hyperbolic bound holds for the {} child(ren) at or above its priority; holds while they keep to their wcet",
                    set.len()
                ),
            );
        }
    }
    if !refused.is_empty() {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: no deadline guarantee for {}",
                node.who(),
                refused.join(", ")
            ),
        ));
    }
    v
}
