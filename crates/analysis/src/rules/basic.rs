//! Rules for the HLS components and the time-sharing schedulers: `fifo`,
//! `rr`, `ts` (Table 1's time sharing), `fp` (fixed priority), `join` and
//! `limit` (Regehr & Stankovic, HLS, §5.1).
//!
//! - **Time sharing** (`fifo`, `rr`, `ts`): `NULL -> NULL+`. They make no
//!   promise, so they accept anything (every guarantee rewrites to NULL)
//!   and give NULL to every child. Nothing is lost when they receive NULL.
//! - **Fixed priority**: `any -> (any, NULL+)`. "It passes whatever
//!   guarantee it receives to its highest-priority child. All other children
//!   receive the NULL guarantee" — provided one VP alone holds the top
//!   priority (the paper's admission control): if two share it, both get
//!   NULL. On several CPUs holding ALL each, a child VP gets ALL when no more
//!   VPs than CPUs sit at or above its priority (global fixed priority: it
//!   never waits); with weaker guarantees on several VPs the top child gets
//!   one of them, made soft (it may run on the others too).
//! - **Join**: its child "may pick any one of the join scheduler's parent
//!   guarantees ... if ... a hard guarantee, it must be converted into the
//!   corresponding soft guarantee". The pick: for a thread with `needs`, the
//!   first parent guarantee (softened) that implies it; otherwise the one
//!   that implies the most of the others (ALL before reservations before
//!   shares before NULL, then the larger share, on a tie).
//! - **Limit**: `RESBS -> RESBH`: a limit with `budget` x and `period` y
//!   that receives RESBS x, y (or anything that rewrites into it) gives its
//!   one child RESBH x, y. It is configured to promise a reservation, so an
//!   input that does not imply RESBS x, y is an error. The limit's periods
//!   start when it is created; under anything but ALL the analysis assumes,
//!   as the paper does, that they line up with the parent's.

use super::pick::pick_best;
use super::{int_param, Eval, Label, Node, Severity, Verdict};
use crate::guarantee::{Guarantee, Limit, Shape};
use crate::rewrite;

/// (policy, Table 1 row, rule).
pub const RULES: &[(&str, &str, Eval)] = &[
    ("fifo", "NULL -> NULL+", time_sharing),
    ("rr", "NULL -> NULL+", time_sharing),
    ("ts", "NULL -> NULL+", time_sharing),
    ("fp", "any -> (any, NULL+)", fixed_priority),
    ("join", "any -> any", join),
    ("limit", "RESBS -> RESBH", limit),
];

/// `NULL -> NULL+`.
pub fn time_sharing(node: &Node<'_>) -> Verdict {
    Verdict::all_null(node)
}

/// `any -> (any, NULL+)`, with one VP at the top priority.
pub fn fixed_priority(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    if node.children.is_empty() {
        return v;
    }
    let mut prios = Vec::with_capacity(node.children.len());
    for c in &node.children {
        let p = int_param(c.params, "prio", 0).unwrap_or_else(|e| {
            v.problems.push(node.child_problem(
                c,
                Severity::Error,
                format!("{} under {}: {e} (its priority)", c.describe(), node.who()),
            ));
            0
        });
        prios.push(p);
    }
    // Children by priority, highest first (stable: file order on a tie).
    let mut order: Vec<usize> = (0..node.children.len()).collect();
    order.sort_by(|&a, &b| prios[b].cmp(&prios[a]));
    // VPs at or above each child's priority, in one pass over the order.
    let mut at_or_above = vec![0u64; node.children.len()];
    // The first two children of the top priority level, to name a tie.
    let mut top_two: (usize, Option<usize>) = (order[0], None);
    let mut i = 0;
    let mut running = 0u64;
    while i < order.len() {
        let p = prios[order[i]];
        let mut j = i;
        while j < order.len() && prios[order[j]] == p {
            running += u64::from(node.children[order[j]].vps);
            j += 1;
        }
        for &k in &order[i..j] {
            at_or_above[k] = running;
        }
        if i == 0 && j > 1 {
            top_two.1 = Some(order[1]);
        }
        i = j;
    }
    let top = order[0];
    let top_prio = prios[top];
    let held = u64::from(node.vps());
    let input = node.input();
    let below = |k: usize| -> String {
        let p = prios[k];
        if p == top_prio {
            let other = match top_two {
                (first, _) if first != k => first,
                (_, Some(second)) => second,
                (first, None) => first,
            };
            format!("priority {p}, shared with `{}`", node.children[other].name)
        } else {
            format!(
                "priority {p}, below `{}` at {top_prio}",
                node.children[top].name
            )
        }
    };
    if input == Guarantee::All {
        for k in 0..node.children.len() {
            let p = prios[k];
            v.labels[k] = if at_or_above[k] <= held {
                let why = if held == 1 {
                    format!("priority {p}, the highest")
                } else {
                    format!(
                        "priority {p}: {} VP(s) at or above it, {held} CPUs",
                        at_or_above[k]
                    )
                };
                Label::because(Guarantee::All, why)
            } else if held == 1 {
                Label::because(Guarantee::Null, below(k))
            } else {
                Label::because(
                    Guarantee::Null,
                    format!(
                        "priority {p}: {} VPs at or above it, more than the {held} CPUs",
                        at_or_above[k]
                    ),
                )
            };
        }
        return v;
    }
    for (k, label) in v.labels.iter_mut().enumerate() {
        *label = if k == top && at_or_above[k] == u64::from(node.children[k].vps) {
            let g = if held > 1 { input.soften() } else { input };
            let why = if held > 1 && g != input {
                format!(
                    "priority {top_prio}, the highest; made soft: it may also run on the other VPs"
                )
            } else {
                format!("priority {top_prio}, the highest")
            };
            Label::because(g, why)
        } else {
            Label::because(Guarantee::Null, below(k))
        };
    }
    v
}

/// The join's pick among its parents' guarantees, made soft.
pub fn join(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    let Some(child) = node.children.first() else {
        return v;
    };
    let cands: Vec<Guarantee> = node.inputs.iter().map(|i| i.guarantee.soften()).collect();
    if cands.is_empty() {
        return v;
    }
    let pick = pick_best(&cands, child.needs.as_ref());
    let listed: Vec<String> = node
        .inputs
        .iter()
        .map(|i| {
            let from = i.parent.unwrap_or("the machine");
            if i.guarantee.is_hard() {
                format!("{} from `{from}` made soft", i.guarantee)
            } else {
                format!("{} from `{from}`", i.guarantee)
            }
        })
        .collect();
    let why = if cands.len() == 1 {
        listed[0].clone()
    } else {
        format!("the best of {}", listed.join("; "))
    };
    v.labels[0] = Label::because(cands[pick], why);
    v
}

/// `RESBS x, y -> RESBH x, y`.
pub fn limit(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    let dur = |key: &str| super::duration_param(node.params, key, None);
    let (budget, period) = match (dur("budget"), dur("period")) {
        (Ok(Some(b)), Ok(Some(p))) => (b, p),
        (Err(e), _) | (_, Err(e)) => {
            v.problems
                .push(node.problem(Severity::Error, format!("{}: {e}", node.who())));
            return v;
        }
        _ => {
            v.problems.push(node.problem(
                Severity::Error,
                format!("{}: a limit needs both `budget` and `period`", node.who()),
            ));
            return v;
        }
    };
    let want = match Guarantee::reservation(Shape::Basic, Limit::Soft, budget, period) {
        Ok(w) => w,
        Err(e) => {
            v.problems
                .push(node.problem(Severity::Error, format!("{}: {e}", node.who())));
            return v;
        }
    };
    let input = node.input();
    match rewrite::implies(&input, &want) {
        Ok(d) => {
            if d.result != input {
                v.taken_as = Some(d);
            }
            let hard = Guarantee::reservation(Shape::Basic, Limit::Hard, budget, period)
                .expect("checked as the soft one");
            let why = if input == Guarantee::All {
                format!("at most {budget} per {period}")
            } else {
                format!("at most {budget} per {period}; periods assumed in line with the parent's")
            };
            for l in &mut v.labels {
                *l = Label::because(hard, why.clone());
            }
        }
        Err(e) => {
            v.problems.push(node.problem(
                Severity::Error,
                format!(
                    "{}: limit needs {want} (or anything implying it) to give {}, but {}: {e}",
                    node.under(),
                    Guarantee::reservation(Shape::Basic, Limit::Hard, budget, period)
                        .map_or_else(|_| "a hard reservation".into(), |g| g.to_string()),
                    node.given()
                ),
            ));
        }
    }
    v
}
