//! The Rialto precomputed scheduling graph for CPU reservations.
//!
//! **Source.** Jones, Roşu & Roşu, "CPU Reservations and Time Constraints"
//! (SOSP '97): §2.3 (a reservation is "X units of time out of every Y",
//! continuously guaranteed), §3.1 (the precomputed scheduling graph, a binary
//! tree walked one root-to-leaf path per base period), §4.1 (building it: the
//! availability tree, reservations placed in decreasing order of percentage,
//! backtracking, incremental change vs. full rebuild) and §4.8 (context-switch
//! overhead, minimum execution interval, maximum round-up, maximum period).
//!
//! **Model.** The base period `B` is the configured one, or else the smallest
//! requested period. A request `X per Y` is scaled *down* to the period
//! `Y' = B * 2^k` with the largest `k >= 0` such that `Y' <= Y`, and the
//! amount is scaled with it, rounded *up* to the nanosecond:
//! `X' = ceil(X * Y' / Y)` (exact `u128` arithmetic), so `X'/Y' >= X/Y` and
//! the percentage never shrinks. `(X', Y')` is what [`Graph::reserve`]
//! returns and what is guaranteed.
//!
//! The graph is a complete binary tree of depth `D` (the largest `k`). Node
//! `(d, j)` (`0 <= j < 2^d`) holds an ordered list of intervals (activity,
//! context switch, run time); base period `i` walks the path
//! `(0, 0), (1, i mod 2), ..., (D, i mod 2^D)`, executing each node's
//! intervals in order, then free time up to `B`. So node `(d, j)` runs once
//! every `2^d` base periods, always at the same offset in its base period:
//! every interval is strictly periodic with period `B * 2^d`. The walk
//! repeats every hyperperiod `B * 2^D` (the paper's Figure 3-1 example is a
//! unit test).
//!
//! **Construction (§4.1).** The availability tree is kept in the graph
//! itself: each node knows `used` (the sum of its intervals, switches
//! included) and `below` (the largest `used` sum along any path strictly
//! below it), so its label — the time still available on *every* path
//! through it — is `B - (used on the path from the root to it) - below`, and
//! a parent's label is the minimum of its children's, as in the paper. A
//! reservation of depth `k` is placed on nodes at depth `k` only:
//! - on one node whose label is at least `X' + switch`, trying the nodes in
//!   decreasing order of label (worst fit: this spreads the reserved time,
//!   hence the free time, evenly across sibling branches), one node per
//!   distinct label (nodes with equal labels are treated as equivalent, a
//!   heuristic that keeps backtracking small);
//! - if no single node fits, split over several nodes of depth `k`
//!   (greedily, largest label first), each part paying its own switch and
//!   being at least the minimum execution interval.
//!
//! A placement with a leftover at its node that is positive, below
//! `min_interval + switch` (too small to hold any future interval), at most
//! `max_round_up`, and with nothing allocated below that node (so no path is
//! penalised unequally) is absorbed: the interval is extended by it (§4.8,
//! "maximum reservation round-up"). The extension is a bonus, not part of
//! the grant.
//!
//! *Pins*: a reservation may be pinned to one node
//! ([`Graph::reserve_pinned`]); it then goes there whole, in incremental
//! changes and rebuilds alike (pinned ones are placed first), or is refused.
//!
//! *Incremental change*: a new (or changed) reservation whose period is at
//! least the current base is placed into the current graph without moving
//! anything (the tree deepens if needed: deeper nodes inherit their parent's
//! path). *Full rebuild* otherwise, or when that fails: every reservation is
//! rescaled to the new base (the smallest requested period, unless
//! configured) so that the grant already made still holds in every window
//! of its period (`X'` per `Y'` becomes `ceil(X' / m)` per `Y'' = Y' / m`
//! for a power-of-two multiple `Y''` of the new base fitting `m` whole
//! times in `Y'`, the smallest percentage winning: plain percentage
//! scaling would break the grant when `Y'` is not such a multiple), sorted by decreasing percentage (exact cross-multiplication;
//! ties: shorter period, then activity), and placed depth-first with
//! backtracking, bounded by `search_budget` placements. A reservation that
//! cannot be granted leaves the graph exactly as it was. A release removes
//! the intervals and trims empty deepest levels; it never rebuilds, so the
//! base does not grow back until [`Graph::rebuild`].
//!
//! **Guarantee.** For every granted `(X', Y')` and every instant `T`, the
//! activity's intervals give it at least `X'` run time (switches excluded)
//! in `[T, T + Y']`: its parts sit on nodes of depth `k`, each strictly
//! periodic with period `Y'`, so any window of length `Y'` sees exactly one
//! period's worth of each. A property test checks this on random
//! reservation sets by walking two hyperperiods.
//!
//! **Limits.** Not optimal (the paper's problem is NP-hard; neither is its
//! algorithm): equal labels are pruned, splitting is greedy and only at the
//! reservation's own depth (never on shallower nodes), and the search is
//! budgeted. Free time is spread across branches by worst fit but sits at the
//! end of each base period, not interleaved. Free intervals carry no switch
//! cost; adjacent intervals of the same activity are not merged. A base-
//! changing rebuild regrants every reservation (reported in
//! [`Granted::regranted`]); the depth is capped at [`MAX_DEPTH`]. Time
//! constraints (§3.2) and the run-time dispatcher are later layers.

use std::collections::BTreeMap;
use std::fmt;

use hsched_core::Duration;

/// Deepest graph allowed (2^16 base periods per hyperperiod).
pub const MAX_DEPTH: u32 = 16;

/// Construction parameters (§4.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphParams {
    /// Fixed base period; `None`: the smallest requested period.
    pub base_period: Option<Duration>,
    /// Expected context-switch cost, added in front of every interval.
    pub switch_cost: Duration,
    /// No interval (and no granted amount) shorter than this.
    pub min_interval: Duration,
    /// The most an interval may be extended to absorb an unusable leftover.
    pub max_round_up: Duration,
    /// Longest period accepted.
    pub max_period: Duration,
    /// Placements tried by one rebuild before giving up.
    pub search_budget: u64,
    /// How a base-changing rebuild regrants the reservations already made:
    /// `false` keeps each grant's guarantee in every window of its period
    /// (see [`Graph::reserve`]); `true` scales each activity's original
    /// request to the new base afresh, the same percentage at the next
    /// smaller power-of-two multiple (§3.1's rule, as for a new request),
    /// which may shorten an earlier grant's period below what it promised.
    pub regrant_from_request: bool,
}

impl GraphParams {
    /// The paper's choices for a measured switch cost `c`: minimum interval
    /// `10c`, maximum round-up `3c`, maximum period 1 s.
    pub fn paper(c: Duration) -> Self {
        GraphParams {
            base_period: None,
            switch_cost: c,
            min_interval: Duration(c.0.saturating_mul(10)),
            max_round_up: Duration(c.0.saturating_mul(3)),
            max_period: Duration::from_secs(1),
            search_budget: 100_000,
            regrant_from_request: false,
        }
    }
}

impl Default for GraphParams {
    /// No overheads, no minimum, no round-up, maximum period 1 s.
    fn default() -> Self {
        GraphParams::paper(Duration::ZERO)
    }
}

/// "`amount` out of every `period`".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reservation {
    pub amount: Duration,
    pub period: Duration,
}

/// A node of the graph: `node` (`0..2^depth`) at `depth`, run every
/// `2^depth` base periods, in base periods `i` with `i mod 2^depth = node`.
/// Written `depth.node` (the root is `0.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pin {
    pub depth: u32,
    pub node: u64,
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.depth, self.node)
    }
}

impl std::str::FromStr for Pin {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a node: expected DEPTH.NODE, e.g. `1.0`");
        let (d, j) = s.split_once('.').ok_or_else(bad)?;
        let depth: u32 = d.parse().map_err(|_| bad())?;
        let node: u64 = j.parse().map_err(|_| bad())?;
        if depth > MAX_DEPTH || node >= 1u64 << depth {
            return Err(format!(
                "node `{s}` does not exist: depth is at most {MAX_DEPTH} and depth d has nodes d.0 to d.(2^d - 1)"
            ));
        }
        Ok(Pin { depth, node })
    }
}

/// A successful [`Graph::reserve`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted<A> {
    /// What is guaranteed to the requesting activity.
    pub reservation: Reservation,
    /// The graph was recomputed from scratch (not changed incrementally).
    pub rebuilt: bool,
    /// Other activities whose grant changed (the base period changed).
    pub regranted: Vec<(A, Reservation)>,
}

/// Why a reservation (or a rebuild) was refused; the graph is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Zero amount or period, or amount above period.
    Invalid { amount: Duration, period: Duration },
    /// The period is above `max_period`.
    PeriodTooLong { period: Duration, max: Duration },
    /// The period is below the configured base period.
    PeriodTooShort { period: Duration, base: Duration },
    /// A scaled amount falls below the minimum execution interval.
    BelowMinimum { granted: Reservation, min: Duration },
    /// `period / base` needs a deeper graph than [`MAX_DEPTH`].
    TooDeep { period: Duration, base: Duration },
    /// Per hyperperiod, the reservations (switches included) need `demand`
    /// but only `capacity` exists.
    OverCapacity {
        demand: Duration,
        capacity: Duration,
    },
    /// Capacity suffices but no placement was found in `attempts` tries.
    NoPlacement { attempts: u64 },
    /// The reservation is pinned to a node of another depth than its
    /// (scaled) period needs, or to a node that does not exist.
    PinMismatch { pin: Pin, depth: u32 },
    /// The pinned node has only `room` left (switch included).
    PinnedNodeFull { pin: Pin, room: Duration },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Invalid { amount, period } => write!(
                f,
                "invalid reservation {amount} per {period}: need 0 < amount <= period"
            ),
            Refusal::PeriodTooLong { period, max } => {
                write!(f, "period {period} is above the maximum period {max}")
            }
            Refusal::PeriodTooShort { period, base } => {
                write!(f, "period {period} is below the base period {base}")
            }
            Refusal::BelowMinimum { granted, min } => write!(
                f,
                "scaled reservation {} per {} is below the minimum execution interval {min}",
                granted.amount, granted.period
            ),
            Refusal::TooDeep { period, base } => write!(
                f,
                "period {period} is more than 2^{MAX_DEPTH} base periods of {base}"
            ),
            Refusal::OverCapacity { demand, capacity } => write!(
                f,
                "over capacity: reservations need {demand} (switches included) per hyperperiod of {capacity}"
            ),
            Refusal::NoPlacement { attempts } => write!(
                f,
                "no scheduling graph found in {attempts} placement attempts (fragmentation)"
            ),
            Refusal::PinMismatch { pin, depth } => write!(
                f,
                "pinned to node {pin} but the period needs a node at depth {depth} (nodes {depth}.0 to {depth}.{})",
                (1u64 << depth) - 1
            ),
            Refusal::PinnedNodeFull { pin, room } => {
                write!(f, "pinned node {pin} has only {room} left")
            }
        }
    }
}

/// One step of the walk: `switch` of context-switch overhead, then `run`
/// for `activity` (`None`: free time, never with a switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval<A> {
    pub activity: Option<A>,
    pub switch: Duration,
    pub run: Duration,
}

impl<A> Interval<A> {
    /// Switch plus run.
    pub fn len(&self) -> Duration {
        self.switch + self.run
    }

    /// Whether the interval takes no time.
    pub fn is_empty(&self) -> bool {
        self.len().is_zero()
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot<A> {
    activity: A,
    run: u64,
    switch: u64,
}

#[derive(Clone, Debug)]
struct Node<A> {
    slots: Vec<Slot<A>>,
    used: u64,
    below: u64,
}

impl<A> Node<A> {
    fn empty() -> Self {
        Node {
            slots: Vec::new(),
            used: 0,
            below: 0,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Req {
    granted: Reservation,
    /// What the activity asked for (before any scaling).
    requested: Reservation,
    depth: u32,
    /// The node it must occupy (see [`Graph::reserve_pinned`]).
    pin: Option<Pin>,
}

/// A placement: (depth-`k` node index `j`, run time) parts.
type Placement = Vec<(u64, u64)>;

/// The scheduling graph. `A` names activities.
#[derive(Clone, Debug)]
pub struct Graph<A> {
    params: GraphParams,
    base: Option<u64>,
    depth: u32,
    nodes: Vec<Node<A>>,
    reqs: BTreeMap<A, Req>,
}

fn idx(d: u32, j: u64) -> usize {
    ((1u64 << d) - 1 + j) as usize
}

impl<A: Copy + Ord + fmt::Debug> Graph<A> {
    /// An empty graph.
    pub fn new(params: GraphParams) -> Self {
        Graph {
            params,
            base: params.base_period.map(|b| b.0),
            depth: 0,
            nodes: vec![Node::empty()],
            reqs: BTreeMap::new(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &GraphParams {
        &self.params
    }

    /// The base period (one root-to-leaf path); `None` while empty and not
    /// configured.
    pub fn base_period(&self) -> Option<Duration> {
        self.base.map(Duration)
    }

    /// The depth `D`: the walk repeats every `2^D` base periods.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// `B * 2^D`, or `None` without a base period.
    pub fn hyperperiod(&self) -> Option<Duration> {
        self.base.map(|b| Duration(b << self.depth))
    }

    /// The grant of `activity`.
    pub fn granted(&self, activity: A) -> Option<Reservation> {
        self.reqs.get(&activity).map(|r| r.granted)
    }

    /// Every activity with its grant, by activity.
    pub fn grants(&self) -> impl Iterator<Item = (A, Reservation)> + '_ {
        self.reqs.iter().map(|(a, r)| (*a, r.granted))
    }

    /// How much of a hyperperiod its intervals take (switches and
    /// round-ups included), and the hyperperiod: `(used, capacity)` in
    /// nanoseconds; `(0, 0)` without a base period. `used / capacity` is the
    /// share of the CPU the graph holds; a partitioned `rialto` compares it
    /// across its VPs' graphs (worst fit) and reports it on refusal.
    pub fn load(&self) -> (u128, u128) {
        let Some(base) = self.base else {
            return (0, 0);
        };
        let mut used = 0u128;
        for d in 0..=self.depth {
            for j in 0..(1u64 << d) {
                used += (self.nodes[idx(d, j)].used as u128) << (self.depth - d);
            }
        }
        (used, (base as u128) << self.depth)
    }

    /// The intervals of base period `i` (counted from the graph's start), in
    /// execution order, ending with the free time if any. Empty without a
    /// base period. Their lengths add up to the base period.
    pub fn period(&self, i: u64) -> Vec<Interval<A>> {
        let Some(base) = self.base else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut used = 0;
        for d in 0..=self.depth {
            let node = &self.nodes[idx(d, i & ((1u64 << d) - 1))];
            used += node.used;
            out.extend(node.slots.iter().map(|s| Interval {
                activity: Some(s.activity),
                switch: Duration(s.switch),
                run: Duration(s.run),
            }));
        }
        if used < base {
            out.push(Interval {
                activity: None,
                switch: Duration::ZERO,
                run: Duration(base - used),
            });
        }
        out
    }

    /// Reserves `amount` per `period` for `activity` (replacing its current
    /// reservation, if any). Incremental when the period is at least the
    /// current base, a full rebuild otherwise or if that fails.
    pub fn reserve(
        &mut self,
        activity: A,
        amount: Duration,
        period: Duration,
    ) -> Result<Granted<A>, Refusal> {
        self.reserve_pinned(activity, amount, period, None)
    }

    /// Like [`Graph::reserve`], but with a `pin` the reservation occupies
    /// exactly that node, whole (no split, no search), now and in every
    /// later rebuild; refused if the scaled period needs another depth or
    /// the node lacks room. Pins let a scenario fix a graph's layout, such
    /// as the paper's Figure 3-1, which the placement heuristic would not
    /// choose; use them with a configured base period, since a rebuild on
    /// a new base changes every depth.
    pub fn reserve_pinned(
        &mut self,
        activity: A,
        amount: Duration,
        period: Duration,
        pin: Option<Pin>,
    ) -> Result<Granted<A>, Refusal> {
        if amount.is_zero() || amount > period {
            return Err(Refusal::Invalid { amount, period });
        }
        if period > self.params.max_period {
            return Err(Refusal::PeriodTooLong {
                period,
                max: self.params.max_period,
            });
        }
        if let Some(base) = self.params.base_period {
            if period < base {
                return Err(Refusal::PeriodTooShort { period, base });
            }
        }
        let requested = Reservation { amount, period };
        let mut trial = self.clone();
        trial.remove(activity);
        if let Some(base) = trial.base.filter(|&b| period.0 >= b) {
            let req = trial.request(base, requested, pin)?;
            trial.deepen(req.depth);
            let mut budget = 0;
            if trial.place_first(activity, req, &mut budget) {
                trial.reqs.insert(activity, req);
                *self = trial;
                return Ok(Granted {
                    reservation: req.granted,
                    rebuilt: false,
                    regranted: Vec::new(),
                });
            }
            if let Some(pin) = pin {
                let room = Duration(trial.label(pin.depth, pin.node));
                return Err(Refusal::PinnedNodeFull { pin, room });
            }
        }
        let mut all: Vec<(A, Reservation, Option<Pin>, Option<Reservation>)> = trial
            .reqs
            .iter()
            .map(|(a, r)| trial.regrant(*a, r))
            .collect();
        all.push((activity, requested, pin, None));
        let rebuilt = self.build(&all)?;
        let regranted = rebuilt.changed_from(self, activity);
        let reservation = rebuilt.reqs[&activity].granted;
        *self = rebuilt;
        Ok(Granted {
            reservation,
            rebuilt: true,
            regranted,
        })
    }

    /// Removes `activity`'s reservation (incrementally: nothing else moves)
    /// and returns its grant.
    pub fn release(&mut self, activity: A) -> Option<Reservation> {
        self.remove(activity)
    }

    /// Recomputes the graph from the requested reservations, with the base
    /// period recomputed (the smallest requested period, unless configured).
    /// Returns the activities whose grant changed; on refusal nothing changes.
    pub fn rebuild(&mut self) -> Result<Vec<(A, Reservation)>, Refusal> {
        let all: Vec<(A, Reservation, Option<Pin>, Option<Reservation>)> =
            self.reqs.iter().map(|(a, r)| self.regrant(*a, r)).collect();
        let rebuilt = self.build(&all)?;
        let changed = rebuilt.changed_from(self, None);
        *self = rebuilt;
        Ok(changed)
    }

    /// Checks the availability-tree bookkeeping against the intervals.
    pub fn check_invariants(&self) -> Result<(), String> {
        let Some(base) = self.base else {
            return if self.reqs.is_empty() && self.depth == 0 && self.nodes[0].slots.is_empty() {
                Ok(())
            } else {
                Err("no base period but reservations exist".into())
            };
        };
        if self.nodes.len() != idx(self.depth + 1, 0) {
            return Err("node count does not match the depth".into());
        }
        for d in (0..=self.depth).rev() {
            for j in 0..(1u64 << d) {
                let n = &self.nodes[idx(d, j)];
                let used: u64 = n.slots.iter().map(|s| s.run + s.switch).sum();
                if used != n.used {
                    return Err(format!("node ({d},{j}): used {} != {used}", n.used));
                }
                if n.below != self.below_of(d, j) {
                    return Err(format!("node ({d},{j}): stale `below`"));
                }
                if self.path_used(d, j) + n.below > base {
                    return Err(format!("node ({d},{j}): a path exceeds the base period"));
                }
                for s in &n.slots {
                    let r = self
                        .reqs
                        .get(&s.activity)
                        .ok_or("slot of unknown activity")?;
                    if r.depth != d {
                        return Err(format!("{:?} placed at depth {d}", s.activity));
                    }
                }
            }
        }
        for (a, r) in &self.reqs {
            let k = r.depth;
            let total: u64 = (0..(1u64 << k))
                .flat_map(|j| self.nodes[idx(k, j)].slots.iter())
                .filter(|s| s.activity == *a)
                .map(|s| s.run)
                .sum();
            if total < r.granted.amount.0 {
                return Err(format!("{a:?} placed {total} < granted {:?}", r.granted));
            }
            if let Some(pin) = r.pin {
                let elsewhere = (0..(1u64 << k))
                    .filter(|&j| j != pin.node)
                    .any(|j| self.nodes[idx(k, j)].slots.iter().any(|s| s.activity == *a));
                if pin.depth != k || elsewhere {
                    return Err(format!("{a:?} is pinned to {pin} but placed elsewhere"));
                }
            }
        }
        Ok(())
    }

    // ---- construction ----------------------------------------------------

    /// `requested` scaled to `base`, its pin checked against the depth.
    fn request(&self, base: u64, requested: Reservation, pin: Option<Pin>) -> Result<Req, Refusal> {
        let (granted, depth) = self.scale(base, requested)?;
        if let Some(pin) = pin.filter(|p| p.depth != depth) {
            return Err(Refusal::PinMismatch { pin, depth });
        }
        Ok(Req {
            granted,
            requested,
            depth,
            pin,
        })
    }

    /// A grant already made, `g`, placed on the graph of base `base`: the
    /// new grant must still give `g.amount` in every window of `g.period`.
    /// Scaling the percentage alone would not when `g.period` is not a
    /// power-of-two multiple of `base` (1ms per 15ms as 0.67ms per 10ms
    /// leaves a 15ms window with 0.67ms), so: a period `base * 2^k` that
    /// fits `m` whole times in `g.period` carries `ceil(g.amount / m)`, and
    /// the `k` with the smallest percentage wins (then the longest period).
    fn keep(
        &self,
        base: u64,
        g: Reservation,
        requested: Reservation,
        pin: Option<Pin>,
    ) -> Result<Req, Refusal> {
        let mut best: Option<(Reservation, u32)> = None;
        let mut k = 0u32;
        while k <= MAX_DEPTH && (base << k) >> k == base && (base << k) <= g.period.0 {
            let period = base << k;
            let amount = g.amount.0.div_ceil(g.period.0 / period);
            let cand = Reservation {
                amount: Duration(amount),
                period: Duration(period),
            };
            let better = best.is_none_or(|(b, _)| {
                amount as u128 * b.period.0 as u128 <= b.amount.0 as u128 * period as u128
            });
            if cand.amount >= self.params.min_interval && better {
                best = Some((cand, k));
            }
            k += 1;
        }
        let Some((granted, depth)) = best else {
            // As a fresh request it fails with the reason.
            return self.request(base, g, pin).map(|r| Req { requested, ..r });
        };
        if let Some(pin) = pin.filter(|p| p.depth != depth) {
            return Err(Refusal::PinMismatch { pin, depth });
        }
        Ok(Req {
            granted,
            requested,
            depth,
            pin,
        })
    }

    fn scale(&self, base: u64, r: Reservation) -> Result<(Reservation, u32), Refusal> {
        let mut k = 0u32;
        while k < 63 && (base << (k + 1)) <= r.period.0 && (base << (k + 1)) >> (k + 1) == base {
            k += 1;
        }
        if k > MAX_DEPTH {
            return Err(Refusal::TooDeep {
                period: r.period,
                base: Duration(base),
            });
        }
        let period = base << k;
        let num = r.amount.0 as u128 * period as u128;
        let amount = num.div_ceil(r.period.0 as u128) as u64;
        let granted = Reservation {
            amount: Duration(amount),
            period: Duration(period),
        };
        if granted.amount < self.params.min_interval {
            return Err(Refusal::BelowMinimum {
                granted,
                min: self.params.min_interval,
            });
        }
        Ok((granted, k))
    }

    /// How a rebuild takes a reservation already granted: its grant to keep
    /// (with the original request beside it), or, with
    /// `regrant_from_request`, its original request to scale afresh.
    fn regrant(&self, a: A, r: &Req) -> (A, Reservation, Option<Pin>, Option<Reservation>) {
        if self.params.regrant_from_request {
            (a, r.requested, r.pin, None)
        } else {
            (a, r.granted, r.pin, Some(r.requested))
        }
    }

    /// A fresh graph for `all`, placed in decreasing order of percentage
    /// with backtracking.
    /// `all`: (activity, reservation, pin, and for a grant already made, to
    /// be kept, the original request it was granted for).
    fn build(
        &self,
        all: &[(A, Reservation, Option<Pin>, Option<Reservation>)],
    ) -> Result<Self, Refusal> {
        let mut g = Graph::new(self.params);
        let base = match self.params.base_period {
            Some(b) => b.0,
            None => match all.iter().map(|(_, r, _, _)| r.period.0).min() {
                Some(b) => b,
                None => return Ok(g),
            },
        };
        g.base = Some(base);
        let mut order = Vec::with_capacity(all.len());
        for &(a, reservation, pin, kept) in all {
            let req = if let Some(requested) = kept {
                self.keep(base, reservation, requested, pin)?
            } else {
                self.request(base, reservation, pin)?
            };
            order.push((a, req));
        }
        let depth = order.iter().map(|(_, r)| r.depth).max().unwrap_or(0);
        g.deepen(depth);
        let switch = self.params.switch_cost.0 as u128;
        let demand: u128 = order
            .iter()
            .map(|(_, r)| (r.granted.amount.0 as u128 + switch) << (depth - r.depth))
            .sum();
        let capacity = (base as u128) << depth;
        if demand > capacity {
            let clamp = |x: u128| Duration(x.min(u64::MAX as u128) as u64);
            return Err(Refusal::OverCapacity {
                demand: clamp(demand),
                capacity: clamp(capacity),
            });
        }
        // Pinned reservations first: they have one place only.
        order.sort_by(|(a, x), (b, y)| {
            let pinned = y.pin.is_some().cmp(&x.pin.is_some());
            let lhs = y.granted.amount.0 as u128 * x.granted.period.0 as u128;
            let rhs = x.granted.amount.0 as u128 * y.granted.period.0 as u128;
            pinned
                .then(lhs.cmp(&rhs))
                .then(x.granted.period.cmp(&y.granted.period))
                .then(a.cmp(b))
        });
        let mut attempts = 0;
        if !g.search(&order, &mut attempts) {
            return Err(Refusal::NoPlacement { attempts });
        }
        for (a, r) in order {
            g.reqs.insert(a, r);
        }
        Ok(g)
    }

    /// Depth-first placement of `order` with backtracking.
    fn search(&mut self, order: &[(A, Req)], attempts: &mut u64) -> bool {
        let Some(&(a, req)) = order.first() else {
            return true;
        };
        for cand in self.candidates(req) {
            if *attempts >= self.params.search_budget {
                return false;
            }
            *attempts += 1;
            self.apply(a, req.depth, &cand);
            if self.search(&order[1..], attempts) {
                return true;
            }
            self.undo(req.depth, &cand);
        }
        false
    }

    /// Places `req` with its first candidate (no backtracking).
    fn place_first(&mut self, a: A, req: Req, attempts: &mut u64) -> bool {
        match self.candidates(req).into_iter().next() {
            Some(cand) => {
                *attempts += 1;
                self.apply(a, req.depth, &cand);
                true
            }
            None => false,
        }
    }

    /// Where `req` could go now: single nodes of depth `k` by decreasing
    /// label (one per distinct label); else splits: even ones over 2, 3, ...
    /// of the roomiest nodes (they leave time on every path, which a
    /// shorter-period reservation placed later needs), then one greedy
    /// split (fewest parts).
    fn candidates(&self, req: Req) -> Vec<Placement> {
        let k = req.depth;
        let c = self.params.switch_cost.0;
        let amount = req.granted.amount.0;
        let min = self.params.min_interval.0.max(1);
        if let Some(pin) = req.pin {
            let fits = self.label(k, pin.node) >= amount.saturating_add(c);
            return if fits {
                vec![vec![(pin.node, amount)]]
            } else {
                Vec::new()
            };
        }
        let mut nodes: Vec<(u64, u64)> = (0..(1u64 << k)).map(|j| (self.label(k, j), j)).collect();
        nodes.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        let mut out: Vec<Placement> = Vec::new();
        let mut last = None;
        for &(label, j) in &nodes {
            if label < amount.saturating_add(c) {
                break;
            }
            if last != Some(label) {
                out.push(vec![(j, amount)]);
                last = Some(label);
            }
        }
        if !out.is_empty() {
            return out;
        }
        // Even splits: `m` parts of (almost) equal size on the `m` roomiest
        // nodes, each part paying its own switch and reaching the minimum.
        for m in 2..=nodes.len() as u64 {
            let share = amount / m;
            let extra = amount % m;
            if share < min {
                break;
            }
            let parts: Placement = nodes
                .iter()
                .take(m as usize)
                .enumerate()
                .map(|(i, &(_, j))| (j, share + u64::from((i as u64) < extra)))
                .collect();
            let fits = parts
                .iter()
                .zip(&nodes)
                .all(|(&(_, part), &(label, _))| label >= part.saturating_add(c));
            if fits {
                out.push(parts);
            }
        }
        let mut parts: Placement = Vec::new();
        let mut left = amount;
        for &(label, j) in &nodes {
            if left == 0 {
                break;
            }
            let room = label.saturating_sub(c);
            if room < min {
                break;
            }
            let part = left.min(room);
            parts.push((j, part));
            left -= part;
        }
        if left > 0 {
            return out;
        }
        // The last part must reach the minimum: shift time from the previous.
        if let [.., (_, prev), (_, tail)] = parts.as_mut_slice() {
            if *tail < min {
                let shift = min - *tail;
                if *prev < min + shift {
                    return out;
                }
                *prev -= shift;
                *tail += shift;
            }
        }
        out.push(parts);
        out
    }

    fn apply(&mut self, a: A, k: u32, cand: &Placement) {
        let c = self.params.switch_cost.0;
        for &(j, run) in cand {
            let label = self.label(k, j);
            let slack = label - run - c;
            let n = &self.nodes[idx(k, j)];
            let extra = if slack > 0
                && slack <= self.params.max_round_up.0
                && slack < self.params.min_interval.0 + c
                && n.below == 0
            {
                slack
            } else {
                0
            };
            let n = &mut self.nodes[idx(k, j)];
            n.slots.push(Slot {
                activity: a,
                run: run + extra,
                switch: c,
            });
            n.used += run + extra + c;
            self.fix_up(k, j);
        }
    }

    fn undo(&mut self, k: u32, cand: &Placement) {
        for &(j, _) in cand.iter().rev() {
            let n = &mut self.nodes[idx(k, j)];
            let s = n.slots.pop().expect("undo of an applied slot");
            n.used -= s.run + s.switch;
            self.fix_up(k, j);
        }
    }

    fn remove(&mut self, a: A) -> Option<Reservation> {
        let req = self.reqs.remove(&a)?;
        let k = req.depth;
        for j in 0..(1u64 << k) {
            let n = &mut self.nodes[idx(k, j)];
            let before = n.slots.len();
            n.slots.retain(|s| s.activity != a);
            if n.slots.len() != before {
                n.used = n.slots.iter().map(|s| s.run + s.switch).sum();
                self.fix_up(k, j);
            }
        }
        while self.depth > 0
            && (0..(1u64 << self.depth)).all(|j| self.nodes[idx(self.depth, j)].slots.is_empty())
        {
            self.nodes.truncate(idx(self.depth, 0));
            self.depth -= 1;
        }
        if self.reqs.is_empty() && self.params.base_period.is_none() {
            self.base = None;
        }
        Some(req.granted)
    }

    fn deepen(&mut self, depth: u32) {
        while self.depth < depth {
            self.depth += 1;
            self.nodes
                .extend((0..(1u64 << self.depth)).map(|_| Node::empty()));
        }
    }

    // ---- the availability tree ------------------------------------------

    /// Time used on the path from the root down to `(d, j)`, inclusive.
    fn path_used(&self, d: u32, j: u64) -> u64 {
        (0..=d)
            .map(|e| self.nodes[idx(e, j & ((1u64 << e) - 1))].used)
            .sum()
    }

    /// Time still available on every path through `(d, j)`.
    fn label(&self, d: u32, j: u64) -> u64 {
        let base = self.base.expect("a graph with nodes has a base");
        base - self.path_used(d, j) - self.nodes[idx(d, j)].below
    }

    fn below_of(&self, d: u32, j: u64) -> u64 {
        if d == self.depth {
            return 0;
        }
        [j, j + (1u64 << d)]
            .iter()
            .map(|&c| {
                let n = &self.nodes[idx(d + 1, c)];
                n.used + n.below
            })
            .max()
            .unwrap_or(0)
    }

    /// Recomputes `below` on the ancestors of `(d, j)`.
    fn fix_up(&mut self, d: u32, j: u64) {
        for e in (0..d).rev() {
            let je = j & ((1u64 << e) - 1);
            let below = self.below_of(e, je);
            self.nodes[idx(e, je)].below = below;
        }
    }

    /// Grants in `self` that differ from `old`'s, except `skip`'s.
    fn changed_from(&self, old: &Self, skip: impl Into<Option<A>>) -> Vec<(A, Reservation)> {
        let skip = skip.into();
        self.reqs
            .iter()
            .filter(|(a, r)| Some(**a) != skip && old.granted(**a) != Some(r.granted))
            .map(|(a, r)| (*a, r.granted))
            .collect()
    }
}
