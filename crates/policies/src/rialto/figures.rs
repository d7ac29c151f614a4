//! The Rialto paper's §5 measurements as work a caller can time or count
//! (`hsched bench`, `hsched repro --timing`), so that neither reaches into
//! [`super::graph`] or [`super::constraints`]: Fig. 5-1's cumulative
//! reservations on the paper's graph, and Fig. 5-2's feasibility analyses
//! of time constraints, free or on that graph. No clock here: the caller
//! times each step.

use super::constraints::{ConstraintId, Constraints, Request};
use super::graph::{Graph, GraphParams};
use hsched_core::{Duration, Instant};

/// Each Fig. 5-1 reservation asks for this much CPU in its period.
const RESERVATION: Duration = Duration::from_micros(400);

/// When every Fig. 5-2 constraint is due.
const FIG_5_2_DEADLINE: Instant = Instant(3_000_000_000);

/// The graph of the paper's switch cost (20us on its PC, §5.1): minimum
/// interval 200us, round-up 60us, maximum period 1s.
fn paper_graph() -> Graph<u32> {
    Graph::new(GraphParams::paper(Duration::from_micros(20)))
}

/// Fig. 5-1: the paper's graph taking, one by one, a cumulative sequence
/// of 400us reservations, one per activity, in the given periods.
pub struct Reservations {
    graph: Graph<u32>,
}

impl Default for Reservations {
    fn default() -> Self {
        Self::new()
    }
}

impl Reservations {
    /// The paper's graph with no reservation yet.
    pub fn new() -> Self {
        Reservations {
            graph: paper_graph(),
        }
    }

    /// Activity `activity` reserves 400us every `period`: whether that
    /// rebuilt the graph, or why it was refused.
    pub fn reserve(&mut self, activity: u32, period: Duration) -> Result<bool, String> {
        self.graph
            .reserve(activity, RESERVATION, period)
            .map(|granted| granted.rebuilt)
            .map_err(|e| e.to_string())
    }
}

/// Fig. 5-2's constraint book: no reservations (everything from one free
/// node), or the graph after Fig. 5-1's sequence of `periods`.
pub struct Feasibility {
    book: Constraints<u32, u32>,
}

impl Feasibility {
    /// The book over the free graph (`periods` empty) or over the graph
    /// with one 400us reservation per period (the sequence is known to
    /// fit: Fig. 5-1 checks it).
    pub fn new(periods: &[Duration]) -> Self {
        let mut g = paper_graph();
        for (a, &period) in periods.iter().enumerate() {
            let _ = g.reserve(a as u32, RESERVATION, period);
        }
        Feasibility {
            book: Constraints::new(g, Duration::from_secs(4)),
        }
    }

    /// The `i`th analysis: 300us due within 3s, by activity `i % 58`;
    /// whether it was accepted.
    pub fn begin(&mut self, i: usize) -> bool {
        let req = Request {
            start: Instant::ZERO,
            estimate: Duration::from_micros(300),
            deadline: FIG_5_2_DEADLINE,
            critical: false,
        };
        self.book
            .begin(
                Instant::ZERO,
                (i % 58) as u32,
                i as u32,
                ConstraintId(i as u64),
                req,
            )
            .is_ok()
    }

    /// Fig. 5-2's cost, counted: for each of `count` analyses of
    /// [`Feasibility::begin`], the graph intervals its walk visits
    /// (`Constraints` walks the window base period by base period,
    /// rebuilding each period's interval list, first for the activity's own
    /// time, then for free time) and the pieces already in the book that it
    /// copies for undo. Read off the accepted pieces: a walk stops in the
    /// interval where the estimate is found, and walks the whole window
    /// when it is not.
    pub fn walks(mut self, count: usize) -> Vec<(u64, u64)> {
        let deadline = FIG_5_2_DEADLINE;
        // Intervals the walk over [0, deadline) visits up to the one ending at
        // or after `stop` (the whole window without one).
        let visited = |graph: &Graph<u32>, stop: Option<u64>| -> u64 {
            let Some(base) = graph.base_period().map(|b| b.0) else {
                return 1;
            };
            let mut n = 0;
            let mut i = 0;
            while i * base < deadline.0 {
                let mut t = i * base;
                for iv in graph.period(i) {
                    let s = t + iv.switch.0;
                    let e = s + iv.run.0;
                    t = e;
                    if s.min(deadline.0) < e.min(deadline.0) {
                        n += 1;
                        if stop.is_some_and(|x| x <= e) {
                            return n;
                        }
                    }
                }
                i += 1;
            }
            n
        };
        (0..count)
            .map(|i| {
                let copied = self.book.pieces().len() as u64;
                let (activity, id) = ((i % 58) as u32, ConstraintId(i as u64));
                let accepted = self.begin(i);
                let book = &self.book;
                let mine: Vec<(u64, bool)> = book
                    .pieces()
                    .iter()
                    .filter(|p| p.constraint == id)
                    .map(|p| {
                        let own = book.run_at(p.start).is_some_and(|r| r.2 == Some(activity));
                        (p.end.0, own)
                    })
                    .collect();
                let last_own = mine.iter().filter(|m| m.1).map(|m| m.0).max();
                let last_free = mine.iter().filter(|m| !m.1).map(|m| m.0).max();
                let graph = book.graph();
                let walked = match (accepted, last_free) {
                    (true, None) => visited(graph, last_own),
                    (true, Some(f)) => visited(graph, None) + visited(graph, Some(f)),
                    (false, _) => 2 * visited(graph, None),
                };
                (walked, copied)
            })
            .collect()
    }
}
