//! The walk of the current and the next base period of a graph: the
//! intervals in time order, so that finding the node holding `now` is a
//! binary search rather than a walk of the graph. Each graph VP keeps one,
//! rebuilt when the base-period index or the graph changes. Generic over
//! the graph's activity type, like the graph.

use std::fmt;

use hsched_core::Instant;

use super::super::graph::Graph;

/// The walk of base periods `first` and `first + 1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Walk<A> {
    pub(super) first: u64,
    /// `(start, end, activity)` in time order, covering both periods
    /// (free time at the end of a period included).
    nodes: Vec<(Instant, Instant, Option<A>)>,
}

impl<A: Copy + Ord + fmt::Debug> Walk<A> {
    /// The walk of base periods `first` and `first + 1` of `graph`, which
    /// has base period `base`.
    pub fn new(graph: &Graph<A>, base: u64, first: u64) -> Self {
        let mut w = Walk {
            first,
            nodes: Vec::new(),
        };
        w.push_period(graph, base, first);
        w.push_period(graph, base, first + 1);
        w
    }

    fn push_period(&mut self, graph: &Graph<A>, base: u64, i: u64) {
        let t0 = i.saturating_mul(base);
        let mut acc = 0u64;
        for iv in graph.period(i) {
            let len = iv.len().0;
            // Past the base period nothing is reached (the graph keeps each
            // path within it anyway).
            if len > 0 && acc < base {
                let s = t0.saturating_add(acc);
                self.nodes
                    .push((Instant(s), Instant(s.saturating_add(len)), iv.activity));
            }
            acc += len;
        }
        if acc < base {
            self.nodes.push((
                Instant(t0.saturating_add(acc)),
                Instant(t0.saturating_add(base)),
                None,
            ));
        }
    }

    /// Moves on to base period `i` (the next one kept too).
    pub fn advance(&mut self, graph: &Graph<A>, base: u64, i: u64) {
        if i == self.first {
            return;
        }
        if i == self.first + 1 {
            let from = Instant(i.saturating_mul(base));
            self.nodes.retain(|n| n.0 >= from);
            self.first = i;
            self.push_period(graph, base, i + 1);
        } else {
            *self = Walk::new(graph, base, i);
        }
    }

    /// Whether it holds the base period of `t`.
    pub fn covers(&self, base: u64, t: Instant) -> bool {
        let i = t.0 / base;
        i == self.first || i == self.first + 1
    }

    /// The start of the first node of `a` at or after `from` that it
    /// holds, if `from` is in its periods.
    pub fn next_of(&self, base: u64, a: A, from: Instant) -> Option<Instant> {
        if !self.covers(base, from) {
            return None;
        }
        let k = self.nodes.partition_point(|n| n.0 < from);
        self.nodes[k..].iter().find(|n| n.2 == Some(a)).map(|n| n.0)
    }

    /// The node holding `t`, which it covers: `(start, end, activity)`.
    pub fn at(&self, t: Instant) -> (Instant, Instant, Option<A>) {
        let k = self.nodes.partition_point(|n| n.0 <= t);
        self.nodes[k.saturating_sub(1)]
    }
}
