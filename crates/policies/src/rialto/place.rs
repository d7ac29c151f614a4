//! `rialto`'s multiprocessor modes and the placement rule of its
//! partitioned mode: one scheduling graph per VP, each built as on one CPU,
//! and an activity placed on one of them when it first reserves.
//!
//! One owner of the rule: the policy calls [`place`] for every `reserve`
//! in partitioned mode, and [`super::grants`] (which the analysis replays
//! requests through) calls the same function, so the labels and the run
//! agree on where each reservation lives.
//!
//! **Rule.** Candidates: the activity's VP if it is placed already (a
//! placement is for the activity's life: its threads, constraints and
//! round-robin turns stay on that VP's CPU; a new `reserve` that does not
//! fit there is refused, never moved, since nothing is proven for a
//! migration), else the pinned VP if the `placement` parameter pins it,
//! else every VP. Among the candidates whose graph grants the request:
//! `first` fit takes the lowest VP index; `worst` fit the VP whose graph
//! has the largest free share of its hyperperiod after adding it (exact
//! cross-multiplication; ties to the lowest index), which spreads load
//! across CPUs. A refusal names each candidate VP's load and its graph's
//! reason.

use std::fmt;

use hsched_core::Duration;

use super::graph::{Granted, Graph, Pin};

/// The `multiprocessor` parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Multiprocessor {
    /// One graph, followed by the first VP; the other VPs run activities
    /// round robin (the behaviour before the modes existed).
    One,
    /// A graph per VP, activities placed on one of them.
    Partitioned,
}

impl Multiprocessor {
    /// Parses the parameter's text.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "one" => Ok(Multiprocessor::One),
            "partitioned" => Ok(Multiprocessor::Partitioned),
            "global" => Err(
                "`multiprocessor = \"global\"` is not supported by rialto: no published \
                 multiprocessor test exists for its scheduling graph; use \"one\" (the first \
                 VP follows one graph) or \"partitioned\" (a graph per VP, activities placed \
                 on one)"
                    .into(),
            ),
            other => Err(format!(
                "`multiprocessor`: `{other}` is not a mode; rialto supports \"one\" and \"partitioned\""
            )),
        }
    }
}

/// The `fit` parameter (partitioned mode), shared with the other
/// partitioned policies: first, the lowest-index VP whose graph grants the
/// request; worst, the VP whose graph keeps the largest free share after it.
pub use crate::partition::Fit;

/// Parses `fit`.
pub fn parse_fit(s: &str) -> Result<Fit, String> {
    match s {
        "first" => Ok(Fit::First),
        "worst" => Ok(Fit::Worst),
        other => Err(format!(
            "`fit`: `{other}` is not a fit; use \"first\" or \"worst\""
        )),
    }
}

/// A pin of the `placement` parameter: a VP (0 unless `VP:` prefixes the
/// node) and a graph node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VpPin {
    pub vp: usize,
    pub pin: Pin,
}

/// The free share of `graph`'s hyperperiod as (free, capacity); an empty
/// graph without a base period is wholly free.
fn free_share<A: Copy + Ord + fmt::Debug>(graph: &Graph<A>) -> (u128, u128) {
    match graph.load() {
        (_, 0) => (1, 1),
        (used, cap) => (cap.saturating_sub(used), cap),
    }
}

/// "60ms of 100ms per hyperperiod (60.0%)", or "empty".
pub fn load_text<A: Copy + Ord + fmt::Debug>(graph: &Graph<A>) -> String {
    let (used, cap) = graph.load();
    if cap == 0 || used == 0 {
        return "empty".into();
    }
    let clamp = |x: u128| Duration(x.min(u64::MAX as u128) as u64);
    let permille = used.saturating_mul(1000) / cap;
    format!(
        "{} of {} per hyperperiod ({}.{}%)",
        clamp(used),
        clamp(cap),
        permille / 10,
        permille % 10
    )
}

/// Places `activity`'s request `amount` per `period` on one of `graphs`
/// (one per VP) by the rule in the module documentation: `only` is the
/// VP it must go to and why ("placed on", "pinned to"), `pin` the graph
/// node.
/// Returns the VP, that VP's graph with the reservation, and the grant;
/// `graphs` is not changed. `Err` names each candidate VP's load and why
/// its graph refuses.
pub fn place<A: Copy + Ord + fmt::Debug>(
    graphs: &[Graph<A>],
    fit: Fit,
    only: Option<(usize, &str)>,
    activity: A,
    amount: Duration,
    period: Duration,
    pin: Option<Pin>,
) -> Result<(usize, Graph<A>, Granted<A>), String> {
    if let Some((v, how)) = only.filter(|&(v, _)| v >= graphs.len()) {
        return Err(format!(
            "its activity is {how} vp{v}, but the scheduler holds {} VP(s)",
            graphs.len()
        ));
    }
    let candidates: Vec<usize> = match only {
        Some((v, _)) => vec![v],
        None => (0..graphs.len()).collect(),
    };
    // The best candidate so far, with its free share after the request.
    type Best<A> = (usize, Graph<A>, Granted<A>, (u128, u128));
    let mut best: Option<Best<A>> = None;
    let mut refusals = Vec::new();
    for v in candidates {
        let mut g = graphs[v].clone();
        match g.reserve_pinned(activity, amount, period, pin) {
            Ok(granted) => {
                let free = free_share(&g);
                let better = match (&best, fit) {
                    (None, _) => true,
                    (Some(_), Fit::First) => false,
                    // Strictly more free share wins: ties keep the lower index.
                    (Some((_, _, _, (bf, bc))), Fit::Worst) => {
                        free.0.saturating_mul(*bc) > bf.saturating_mul(free.1)
                    }
                };
                if better {
                    best = Some((v, g, granted, free));
                }
                if fit == Fit::First {
                    break;
                }
            }
            Err(why) => refusals.push(format!("vp{v} ({}): {why}", load_text(&graphs[v]))),
        }
    }
    match best {
        Some((v, g, granted, _)) => Ok((v, g, granted)),
        None => match only {
            Some((_, how)) => Err(format!(
                "its activity is {how} {} (a placement never moves)",
                refusals.join("; ")
            )),
            None => Err(format!("no VP's graph grants it: {}", refusals.join("; "))),
        },
    }
}
