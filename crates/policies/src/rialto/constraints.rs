//! Rialto time constraints: feasibility by time interval assignment, and
//! the bookkeeping of accepted constraints (not yet the scheduling policy).
//!
//! **Source.** Jones, Roşu & Roşu, "CPU Reservations and Time Constraints"
//! (SOSP '97): §2.4 (`BeginConstraint(start, estimate, deadline,
//! criticality)` is answered at once; composite End/Begin), §3.2 (time
//! interval assignment), §3.3 (EDF execution of accepted constraints during
//! assigned time), §4.3 (critical vs. non-critical) and §4.4 (nesting).
//!
//! **Model.** Time is the walk of a [`Graph`]: base period `i` starts at the
//! absolute instant `i * B` (the graph's origin is [`Instant::ZERO`]) and
//! runs the intervals of [`Graph::period`]`(i)` in order. Only the *run* part
//! of an interval can be assigned (its context switch is overhead). Without
//! a base period (an empty graph) all time is free. An assignment is a
//! [`Piece`]: a half-open range `[start, end)` of run time owned by one
//! constraint. Pieces never overlap, and each lies inside one run part of an
//! interval that is free or belongs to its constraint's activity.
//!
//! **Algorithm (`begin`).** The window is `[s, d)` with the effective start
//! `s` and deadline `d` (below), `d` cut at `now + horizon`. The estimate is
//! looked for, stopping as soon as it is found:
//! 1. (nested only) the outer constraint's pieces inside the window are
//!    handed to the new one (§4.4);
//! 2. the activity's own reserved run time in the window that no piece
//!    owns, earliest first (§3.2: "first assigns node intervals already
//!    dedicated to the requesting activity");
//! 3. free run time in the window that no piece owns, earliest first;
//! 4. for a critical constraint only, pieces of *non-critical* constraints
//!    of the *same activity* in the window, earliest first (§4.3); they lose
//!    that time (reported in [`Accepted::stolen`]). Another activity's
//!    pieces are never touched.
//!
//! **Context switches (§4.8).** The graph reserves a switch in front of
//! every activity interval, but a constraint's thread is also switched in
//! wherever else one of its pieces starts (in free time, or mid-interval).
//! So every piece pays the graph's `switch_cost` out of its own length,
//! on top of the estimate ([`Accepted::overhead`]). The platform charges
//! switch time to the thread switched in, so the thread's received time,
//! switches included, is what the pieces must cover; even the switch the
//! graph reserves in front of an activity's interval is charged to the
//! constraint's thread if it is the one switched in there, and a piece that
//! continues the previous one in time may still be entered by a switch when
//! EDF (§3.3) ran another constraint in between. This costs a constraint
//! one switch per piece that it may not need: a safe over-estimate.
//!
//! Step 4 runs after 2 and 3 have failed to find enough, which finds as much
//! as the paper's "logically, the feasibility analysis is performed again".
//! Within an interval, the earliest unowned time is taken first, as in the
//! paper's example. If the estimate is not found, every tentative change is
//! undone (the book is restored from a copy taken on entry) and
//! [`Rejected::Infeasible`] says how much could be found by the deadline.
//!
//! **Nesting (§4.4).** Each thread has a stack of constraints; a `begin`
//! while one is open nests. Effective values: deadline = the earlier of the
//! outer's and the new; start = the latest of `now`, the new start and the
//! outer's start (the paper says "now and the new start"; adding the
//! outer's start keeps the inner window inside the outer's, so time donated
//! back stays in the outer's window); estimate = the larger of the new
//! estimate and the outer's assigned time inside the window; criticality =
//! critical if either is. `end` of the innermost constraint pops it and
//! donates its remaining (not yet elapsed) pieces back to the outer, which
//! is in effect again. A rejected nested `begin` pushes nothing.
//!
//! **`end`.** Returns the time taken (the caller's measure of the CPU time
//! the constraint ran) and gives its pieces from `now` on back: to the
//! outer constraint if nested, otherwise to where they came from (the
//! activity's reserved time or the free pool: removing the piece is enough,
//! the graph says whose time it is). Elapsed pieces are forgotten.
//!
//! **Guarantee.** At acceptance, the constraint owns pieces of total length
//! equal to its effective estimate plus its switch overhead, all inside `[s, d)`, disjoint from every
//! other constraint's pieces. Later operations keep this for it except:
//! stealing by a later critical constraint of the same activity (only if it
//! is non-critical; its [`ConstraintInfo::guaranteed`] drops by what was
//! taken), a nested constraint of the same thread borrowing its pieces (given
//! back at its end), and its own end. Hence, by the EDF theorem on a single
//! CPU with varying supply: if the policy, during every instant of assigned
//! time, runs the runnable constraint with the earliest effective deadline
//! among those that have not yet received their guaranteed time (a
//! constraint counting as runnable from its effective start), then every
//! accepted constraint whose thread stays runnable from `s` to `d` receives
//! at least its guaranteed time (= its estimate unless stolen from) of CPU
//! by `d`. Time it runs outside assigned pieces only helps. Nothing is
//! promised for a constraint whose thread blocks (inheritance, §4.2, is a
//! later layer).
//!
//! **Complexity.** With `P` pieces in the book, `C` open constraints and
//! `W` base periods in the window (each walked with [`Graph::period`], cost
//! `O(D + n)` for depth `D` and `n` intervals on the path): `begin` is
//! `O(P + C + W * (D + n + log P))` plus the copy taken for undo (`O(P + C)`);
//! `end` is `O(P)`; [`Constraints::assigned_at`] is `O(D + n + k log P)` for
//! `k` pieces in the interval. Simple over fast.
//!
//! **Limits.** The graph is fixed at construction: a changed reservation
//! needs a new book (assignments are not migrated). Windows are cut at
//! `now + horizon`, so a constraint with a far deadline is judged on the
//! first `horizon` only (conservative). The assignment is greedy, not
//! optimal: own time first, then free time, earliest first, as in the paper,
//! so a later constraint with an earlier deadline can be refused although
//! moving earlier pieces would have made room. Pieces of open constraints are
//! kept until their end, even once elapsed. Effective criticality does not
//! revert when a nested critical constraint ends. The caller must not `end`
//! a rejected constraint (it was never pushed).

use std::collections::BTreeMap;
use std::fmt;

use hsched_core::{Duration, Instant};

use super::graph::Graph;

/// Names a constraint; chosen by the caller, unique among open ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConstraintId(pub u64);

impl fmt::Display for ConstraintId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "constraint{}", self.0)
    }
}

/// `BeginConstraint(start, estimate, deadline, criticality)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub start: Instant,
    pub estimate: Duration,
    pub deadline: Instant,
    pub critical: bool,
}

/// A feasible constraint: the effective parameters now in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    pub start: Instant,
    pub deadline: Instant,
    pub estimate: Duration,
    pub critical: bool,
    /// The enclosing constraint of the same thread, if nested.
    pub outer: Option<ConstraintId>,
    /// Time taken over from the outer constraint (§4.4).
    pub inherited: Duration,
    /// Context switches into its pieces, assigned on top of the estimate.
    pub overhead: Duration,
    /// Non-critical constraints of the same activity that lost time to this
    /// critical one (§4.3), with how much each lost.
    pub stolen: Vec<(ConstraintId, Duration)>,
}

/// Why `begin` refused; nothing changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejected {
    /// Only `found` of the (effective) estimate `needed` could be assigned
    /// by the deadline.
    Infeasible { needed: Duration, found: Duration },
    /// The id names an open constraint.
    DuplicateId(ConstraintId),
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejected::Infeasible { needed, found } => write!(
                f,
                "infeasible: only {found} of {needed} can be assigned by the deadline"
            ),
            Rejected::DuplicateId(id) => write!(f, "{id} is already open"),
        }
    }
}

/// What `end` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The time the constraint actually took (`EndConstraint`'s result).
    pub taken: Duration,
    /// Assigned time from `now` on that the constraint gave back.
    pub released: Duration,
    /// The outer constraint it went to (nested), else `None`: back to the
    /// activity's reservation or the free pool.
    pub donated_to: Option<ConstraintId>,
}

/// Why `end` refused; nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndError {
    /// No open constraint has this id.
    Unknown(ConstraintId),
    /// Constraints end innermost first; this one is.
    NotInnermost { innermost: ConstraintId },
}

/// Assigned run time `[start, end)` owned by `constraint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub start: Instant,
    pub end: Instant,
    pub constraint: ConstraintId,
}

/// An open constraint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstraintInfo<A, T> {
    pub id: ConstraintId,
    pub activity: A,
    pub thread: T,
    /// Effective start, deadline, estimate, criticality.
    pub start: Instant,
    pub deadline: Instant,
    pub estimate: Duration,
    pub critical: bool,
    /// Time its pieces add up to: the estimate plus `overhead`, less what
    /// was stolen, less what a nested constraint holds for now; plus, once a
    /// nested one has ended, what it donated back (which may exceed what it
    /// took).
    pub guaranteed: Duration,
    /// Switch time assigned at acceptance on top of the estimate.
    pub overhead: Duration,
    pub outer: Option<ConstraintId>,
}

#[derive(Clone, Debug)]
struct Book<A, T> {
    /// start -> (end, owner); disjoint, non-empty.
    pieces: BTreeMap<u64, (u64, ConstraintId)>,
    open: BTreeMap<ConstraintId, ConstraintInfo<A, T>>,
    stacks: BTreeMap<T, Vec<ConstraintId>>,
}

/// Interval assignment and constraint bookkeeping over one graph.
#[derive(Clone, Debug)]
pub struct Constraints<A, T> {
    graph: Graph<A>,
    horizon: u64,
    book: Book<A, T>,
}

/// Calls `f(start, end, activity)` for the run parts of the walk that
/// overlap `[from, to)`, clipped to it, in time order, until `f` says stop.
fn walk<A: Copy + Ord + fmt::Debug>(
    graph: &Graph<A>,
    from: u64,
    to: u64,
    mut f: impl FnMut(u64, u64, Option<A>) -> bool,
) {
    if from >= to {
        return;
    }
    let Some(base) = graph.base_period().map(|b| b.0) else {
        f(from, to, None);
        return;
    };
    let mut i = from / base;
    while let Some(mut t) = i.checked_mul(base).filter(|&t| t < to) {
        for iv in graph.period(i) {
            let s = t.saturating_add(iv.switch.0);
            let e = s.saturating_add(iv.run.0);
            t = e;
            let (cs, ce) = (s.max(from), e.min(to));
            if cs < ce && !f(cs, ce, iv.activity) {
                return;
            }
        }
        i += 1;
    }
}

impl<A: Copy + Ord + fmt::Debug, T: Copy + Ord + fmt::Debug> Book<A, T> {
    /// Unowned sub-ranges of `[s, e)`, in order.
    fn gaps(&self, s: u64, e: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if s >= e {
            return out;
        }
        let mut cur = s;
        if let Some((_, &(pe, _))) = self.pieces.range(..s).next_back() {
            cur = cur.max(pe);
        }
        for (&ps, &(pe, _)) in self.pieces.range(s..e) {
            if ps > cur {
                out.push((cur, ps));
            }
            cur = cur.max(pe);
        }
        if cur < e {
            out.push((cur, e));
        }
        out
    }

    /// Pieces overlapping `[s, e)`, clipped to it: (start, end, owner).
    fn owned(&self, s: u64, e: u64) -> Vec<(u64, u64, ConstraintId)> {
        if s >= e {
            return Vec::new();
        }
        let first = self
            .pieces
            .range(..s)
            .next_back()
            .filter(|(_, &(pe, _))| pe > s)
            .map(|(&ps, &v)| (ps, v));
        first
            .into_iter()
            .chain(self.pieces.range(s..e).map(|(&ps, &v)| (ps, v)))
            .map(|(ps, (pe, c))| (ps.max(s), pe.min(e), c))
            .filter(|(a, b, _)| a < b)
            .collect()
    }

    /// Gives `[a, b)`, inside one piece, to `to` (`None`: drops it).
    fn reassign(&mut self, a: u64, b: u64, to: Option<ConstraintId>) {
        let (&ps, &(pe, old)) = self
            .pieces
            .range(..=a)
            .next_back()
            .expect("reassign inside a piece");
        debug_assert!(ps <= a && b <= pe);
        self.pieces.remove(&ps);
        if ps < a {
            self.pieces.insert(ps, (a, old));
        }
        if let Some(c) = to {
            self.pieces.insert(a, (b, c));
        }
        if b < pe {
            self.pieces.insert(b, (pe, old));
        }
    }

    fn add_guaranteed(&mut self, id: ConstraintId, d: u64) {
        if let Some(c) = self.open.get_mut(&id) {
            c.guaranteed += Duration(d);
        }
    }

    fn sub_guaranteed(&mut self, id: ConstraintId, d: u64) {
        if let Some(c) = self.open.get_mut(&id) {
            c.guaranteed -= Duration(d);
        }
    }
}

impl<A: Copy + Ord + fmt::Debug, T: Copy + Ord + fmt::Debug> Constraints<A, T> {
    /// An empty book over `graph`; windows are cut at `now + horizon`.
    pub fn new(graph: Graph<A>, horizon: Duration) -> Self {
        Constraints {
            graph,
            horizon: horizon.0,
            book: Book {
                pieces: BTreeMap::new(),
                open: BTreeMap::new(),
                stacks: BTreeMap::new(),
            },
        }
    }

    /// The graph the walk follows.
    pub fn graph(&self) -> &Graph<A> {
        &self.graph
    }

    /// `BeginConstraint` for `thread` of `activity` at `now`: accepted with
    /// its time assigned, or rejected with nothing changed.
    pub fn begin(
        &mut self,
        now: Instant,
        activity: A,
        thread: T,
        id: ConstraintId,
        req: Request,
    ) -> Result<Accepted, Rejected> {
        if self.book.open.contains_key(&id) {
            return Err(Rejected::DuplicateId(id));
        }
        let outer = self
            .book
            .stacks
            .get(&thread)
            .and_then(|s| s.last())
            .map(|o| self.book.open[o]);
        let mut start = now.max(req.start);
        let mut deadline = req.deadline;
        let mut critical = req.critical;
        if let Some(o) = outer {
            start = start.max(o.start);
            deadline = deadline.min(o.deadline);
            critical |= o.critical;
        }
        let (s, e) = (start.0, deadline.0.min(now.0.saturating_add(self.horizon)));
        let backup = self.book.clone();
        // 1. The outer's pieces in the window.
        let mut inherited = 0;
        if let Some(o) = outer {
            for (a, b, c) in self.book.owned(s, e) {
                if c == o.id {
                    self.book.reassign(a, b, Some(id));
                    inherited += b - a;
                }
            }
            self.book.sub_guaranteed(o.id, inherited);
        }
        let estimate = req.estimate.0.max(inherited);
        let mut need = estimate - inherited;
        let switch = self.graph.params().switch_cost.0;
        let mut overhead = 0;
        // 2. Own reserved time, then 3. free time, earliest first.
        for want in [Some(activity), None] {
            if need == 0 {
                break;
            }
            let book = &mut self.book;
            walk(&self.graph, s, e, |a, b, act| {
                if act == want {
                    for (ga, gb) in book.gaps(a, b) {
                        // The thread may be switched in at the start of any
                        // piece: it pays that switch from the piece itself.
                        let cost = switch;
                        if gb - ga <= cost {
                            continue;
                        }
                        let take = need.min(gb - ga - cost);
                        book.pieces.insert(ga, (ga + cost + take, id));
                        need -= take;
                        overhead += cost;
                        if need == 0 {
                            break;
                        }
                    }
                }
                need > 0
            });
        }
        // 4. Critical: the same activity's non-critical constraints' time.
        let mut stolen: BTreeMap<ConstraintId, u64> = BTreeMap::new();
        if need > 0 && critical {
            for (a, b, c) in self.book.owned(s, e) {
                if need == 0 {
                    break;
                }
                let Some(v) = self.book.open.get(&c) else {
                    continue;
                };
                if v.activity != activity || v.critical {
                    continue;
                }
                let take = need.min(b - a);
                self.book.reassign(a, a + take, Some(id));
                self.book.sub_guaranteed(c, take);
                *stolen.entry(c).or_default() += take;
                need -= take;
            }
        }
        if need > 0 {
            self.book = backup;
            return Err(Rejected::Infeasible {
                needed: Duration(estimate),
                found: Duration(estimate - need),
            });
        }
        let info = ConstraintInfo {
            id,
            activity,
            thread,
            start,
            deadline,
            estimate: Duration(estimate),
            critical,
            guaranteed: Duration(estimate + overhead),
            overhead: Duration(overhead),
            outer: outer.map(|o| o.id),
        };
        self.book.open.insert(id, info);
        self.book.stacks.entry(thread).or_default().push(id);
        Ok(Accepted {
            start,
            deadline,
            estimate: Duration(estimate),
            critical,
            outer: info.outer,
            inherited: Duration(inherited),
            overhead: Duration(overhead),
            stolen: stolen.into_iter().map(|(c, d)| (c, Duration(d))).collect(),
        })
    }

    /// `EndConstraint` at `now` for the innermost constraint `id` of its
    /// thread, which ran `used`: its assigned time from `now` on goes back
    /// to the outer constraint, or to the activity / free pool.
    pub fn end(
        &mut self,
        id: ConstraintId,
        now: Instant,
        used: Duration,
    ) -> Result<Ended, EndError> {
        let info = *self.book.open.get(&id).ok_or(EndError::Unknown(id))?;
        let stack = self
            .book
            .stacks
            .get_mut(&info.thread)
            .expect("an open constraint is on its thread's stack");
        let innermost = *stack.last().expect("non-empty stack");
        if innermost != id {
            return Err(EndError::NotInnermost { innermost });
        }
        stack.pop();
        if stack.is_empty() {
            self.book.stacks.remove(&info.thread);
        }
        let mine: Vec<(u64, u64)> = self
            .book
            .pieces
            .iter()
            .filter(|(_, &(_, c))| c == id)
            .map(|(&a, &(b, _))| (a, b))
            .collect();
        let mut released = 0;
        for (a, b) in mine {
            self.book.reassign(a, b, None);
            let a = a.max(now.0);
            if a < b {
                released += b - a;
                if let Some(o) = info.outer {
                    self.book.pieces.insert(a, (b, o));
                }
            }
        }
        if let Some(o) = info.outer {
            self.book.add_guaranteed(o, released);
        }
        self.book.open.remove(&id);
        Ok(Ended {
            taken: used,
            released: Duration(released),
            donated_to: info.outer,
        })
    }

    /// Composite `EndConstraint`/`BeginConstraint`: ends `old` (which must
    /// be the innermost of its thread), then begins `id` for the same
    /// thread, which may use the time just given back. If the end is
    /// refused, nothing happens; the begin may still be rejected.
    pub fn end_begin(
        &mut self,
        old: ConstraintId,
        now: Instant,
        used: Duration,
        id: ConstraintId,
        req: Request,
    ) -> Result<(Ended, Result<Accepted, Rejected>), EndError> {
        let info = *self.book.open.get(&old).ok_or(EndError::Unknown(old))?;
        let ended = self.end(old, now, used)?;
        Ok((ended, self.begin(now, info.activity, info.thread, id, req)))
    }

    /// The open constraint `id`.
    pub fn get(&self, id: ConstraintId) -> Option<&ConstraintInfo<A, T>> {
        self.book.open.get(&id)
    }

    /// Every open constraint, by id.
    pub fn open(&self) -> impl Iterator<Item = &ConstraintInfo<A, T>> + '_ {
        self.book.open.values()
    }

    /// The constraint in effect for `thread` (its innermost open one).
    pub fn current(&self, thread: T) -> Option<ConstraintId> {
        self.book
            .stacks
            .get(&thread)
            .and_then(|s| s.last())
            .copied()
    }

    /// Every piece, in time order.
    pub fn pieces(&self) -> Vec<Piece> {
        self.book
            .pieces
            .iter()
            .map(|(&a, &(b, c))| Piece {
                start: Instant(a),
                end: Instant(b),
                constraint: c,
            })
            .collect()
    }

    /// Assigned time of `id` in `[from, to)`.
    pub fn assigned_between(&self, id: ConstraintId, from: Instant, to: Instant) -> Duration {
        Duration(
            self.book
                .owned(from.0, to.0)
                .iter()
                .filter(|(_, _, c)| *c == id)
                .map(|(a, b, _)| b - a)
                .sum(),
        )
    }

    /// For `[from, to)`: the constraints owning time in it with how much,
    /// in EDF order (effective deadline, then id).
    pub fn assigned_in(&self, from: Instant, to: Instant) -> Vec<(ConstraintId, Duration)> {
        let mut sum: BTreeMap<ConstraintId, u64> = BTreeMap::new();
        for (a, b, c) in self.book.owned(from.0, to.0) {
            *sum.entry(c).or_default() += b - a;
        }
        let mut out: Vec<(ConstraintId, Duration)> =
            sum.into_iter().map(|(c, d)| (c, Duration(d))).collect();
        out.sort_by_key(|(c, _)| (self.book.open[c].deadline, *c));
        out
    }

    /// The graph interval whose run part holds `t`: `[t, end of that run)`
    /// (`None` if `t` falls in a context switch).
    pub fn run_at(&self, t: Instant) -> Option<(Instant, Instant, Option<A>)> {
        let base = match self.graph.base_period() {
            Some(b) => b.0,
            None => return Some((t, Instant::NEVER, None)),
        };
        let from = t.0 - t.0 % base;
        let mut found = None;
        walk(&self.graph, from, from.saturating_add(base), |a, b, act| {
            if a <= t.0 && t.0 < b {
                found = Some((t, Instant(b), act));
                return false;
            }
            b <= t.0
        });
        found
    }

    /// The constraints owning time in the rest of the graph interval that
    /// holds `t` (from `t` to its end), with how much each owns there, in
    /// EDF order. Empty during a context switch or unassigned time.
    pub fn assigned_at(&self, t: Instant) -> Vec<(ConstraintId, Duration)> {
        match self.run_at(t) {
            Some((a, b, _)) => self.assigned_in(a, b),
            None => Vec::new(),
        }
    }

    /// Checks the book: pieces disjoint, each inside one run part that is
    /// free or its activity's, inside its constraint's window, adding up to
    /// each constraint's `guaranteed`; stacks match the open constraints.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut sums: BTreeMap<ConstraintId, u64> = BTreeMap::new();
        let mut last_end = 0;
        for (&a, &(b, c)) in &self.book.pieces {
            if a >= b || a < last_end {
                return Err(format!("piece [{a}, {b}) empty or overlapping"));
            }
            last_end = b;
            let info = self
                .book
                .open
                .get(&c)
                .ok_or(format!("piece of unknown {c}"))?;
            if a < info.start.0 || b > info.deadline.0 {
                return Err(format!("piece [{a}, {b}) outside the window of {c}"));
            }
            let mut ok = false;
            walk(&self.graph, a, b, |s, e, act| {
                ok = s == a && e == b && (act.is_none() || act == Some(info.activity));
                false
            });
            if !ok {
                return Err(format!("piece [{a}, {b}) of {c} not inside one usable run"));
            }
            *sums.entry(c).or_default() += b - a;
        }
        let mut stacked = 0;
        for (t, stack) in &self.book.stacks {
            for (k, id) in stack.iter().enumerate() {
                let info = self
                    .book
                    .open
                    .get(id)
                    .ok_or(format!("{id} stacked, not open"))?;
                if info.thread != *t || info.outer != k.checked_sub(1).map(|j| stack[j]) {
                    return Err(format!("{id}: stack mismatch"));
                }
                stacked += 1;
            }
        }
        if stacked != self.book.open.len() {
            return Err("open constraints missing from stacks".into());
        }
        for (id, info) in &self.book.open {
            let sum = sums.get(id).copied().unwrap_or(0);
            if sum != info.guaranteed.0 {
                return Err(format!(
                    "{id}: pieces add to {sum}, guaranteed {}",
                    info.guaranteed
                ));
            }
        }
        Ok(())
    }
}
