//! Next-thread selection on the graph VP, §4.6 of the Rialto paper, and
//! the helpers it needs (the second-chance queue of §4.5, the inheritance
//! chain of §4.2), and what a constraint may still run in its node. A child
//! module of `policy` over the state of `state.rs`; it reads the queues of `queues.rs` and scans no thread or activity.

use hsched_core::{ChildId, Cx, Duration, Instant, VpState};

use super::super::constraints::ConstraintId;
use super::super::inherit::Wait;
use hsched_core::ParentVp;

use super::state::{Activity, Rialto, SecondChance, State, Tier};

/// A choice: who runs, why, until when, and the node it was chosen in.
pub(super) struct Pick {
    pub child: ChildId,
    pub tier: Tier,
    pub until: Instant,
    pub node: Instant,
}

impl Rialto {
    /// Rule 1: "If the time remaining in the current node is below a minimum
    /// threshold, select the next node." The node of graph VP `v` holding
    /// `now`, or the next one when less than `threshold` of it is left:
    /// `(start, end, activity)`.
    pub(super) fn node(&self, v: usize, now: Instant) -> (Instant, Instant, Option<Activity>) {
        debug_assert!(
            self.cpus.get(v).is_none_or(|c| c
                .book
                .graph()
                .base_period()
                .is_none_or(|b| c.walk.as_ref().is_some_and(|w| w.covers(b.0, now)))),
            "selection without the walk of {now}'s base period"
        );
        let (s, e, a) = self.interval_on(v, now);
        if !self.threshold.is_zero() && e != Instant::NEVER && e - now < self.threshold {
            let (_, e2, a2) = self.interval_on(v, e);
            // The next node starts now: its start names it.
            return (e, e2, a2);
        }
        (s, e, a)
    }

    /// The thread at the end of `thread`'s inheritance chain (§4.2: "a
    /// thread that must be run in order for the target thread to eventually
    /// run"), or `thread` itself when it is not blocked on anything.
    pub(super) fn chain_end(&self, thread: ChildId) -> Option<ChildId> {
        let mut s = self.children.get(thread)?.serial;
        for _ in 0..=self.by_serial.len() {
            s = match self.inherit.waiting_for(s) {
                Some(Wait::Mutex(m)) => self.inherit.holder(m)?,
                Some(Wait::Reply(server)) => server,
                None => return self.by_serial.get(&s).copied(),
            };
        }
        None
    }

    /// Rule 2: "If the node has an active interval assignment, execute the
    /// constraint with the earliest deadline." The earliest-deadline
    /// constraint of graph VP `v` with assigned time left in the node whose
    /// thread (or, if it is blocked on a mutex or in a call, the end of its
    /// inheritance chain) waits and may run on `v` (a thread scheduled in an
    /// activity placed on another VP never runs here, inherited time
    /// included). `assigned_in` hands over the node's constraints in EDF
    /// order with what each owns there, so nothing is looked up twice.
    pub(super) fn best_constraint(
        &self,
        v: usize,
        now: Instant,
        start: Instant,
        end: Instant,
    ) -> Option<(ChildId, ConstraintId, Duration)> {
        let book = &self.cpus.get(v)?.book;
        book.assigned_in(start, end)
            .into_iter()
            .find_map(|(c, assigned)| {
                let thread = book.get(c)?.thread;
                let runner = match self.children.get(thread)?.state {
                    State::Waiting => thread,
                    State::Idle => self.chain_end(thread).filter(|&r| r != thread)?,
                    State::Running(_) => return None,
                };
                if self.children.get(runner)?.state != State::Waiting || !self.may_run_on(runner, v)
                {
                    return None;
                }
                let left = self.available(v, c, now, start, assigned);
                (!left.is_zero()).then_some((runner, c, left))
            })
    }

    /// Rule 3's order within activity `a`: "(1) threads with pending denied
    /// constraints, (2) threads with late constraints, (3) round-robin among
    /// runnable threads." Denied and late ones go earliest deadline first.
    /// `O((k + 1) log n)` for `k` marked threads (waiting ones with a
    /// pending denied or an open constraint) in the activity.
    pub(super) fn pick_in(&self, a: Activity, now: Instant) -> Option<ChildId> {
        let act = self.acts.get(&a)?;
        let denied = act
            .marked
            .iter()
            .filter_map(|&id| {
                let d = self
                    .denied
                    .get(&id)?
                    .iter()
                    .map(|d| d.deadline)
                    .filter(|&d| d > now)
                    .min()?;
                Some((d, id))
            })
            .min();
        if let Some((_, id)) = denied {
            return Some(id);
        }
        let late = act
            .marked
            .iter()
            .filter_map(|&id| {
                let book = self.book_of(id);
                let c = book.current(id)?;
                let info = book.get(c)?;
                let served = self.served.get(&c).copied().unwrap_or_default();
                (served.since_admitted >= info.guaranteed || info.deadline <= now)
                    .then_some((info.deadline, id))
            })
            .min();
        if let Some((_, id)) = late {
            return Some(id);
        }
        act.waiting.first().map(|&(_, id)| id)
    }

    /// Rule 4's candidate on graph VP `v`: an activity of the second-chance
    /// queue whose graph is `v`'s, that has a waiting thread, has not
    /// reached its next node yet and has time to make up (the oldest entry
    /// first), with the time left to make up.
    pub(super) fn second_chance(
        &self,
        v: usize,
        now: Instant,
    ) -> Option<(Activity, ChildId, Duration)> {
        let mut queue: Vec<_> = self
            .second
            .iter()
            .filter(|(&a, e)| now < e.expires && !e.lost.is_zero() && self.home(a) == v)
            .map(|(&a, e)| (e.since, a, e.lost))
            .collect();
        queue.sort();
        queue
            .into_iter()
            .find_map(|(_, a, lost)| Some((a, self.pick_in(a, now)?, lost)))
    }

    /// Rule 5's activity on VP `v`: the one first in the round-robin queue
    /// of activities among those with a waiting thread that may run on `v`
    /// (not placed, or placed on `v`): the earlier turn of the heads of the
    /// two lanes.
    pub(super) fn next_activity(&self, v: usize) -> Option<Activity> {
        let head = |lane| self.ready.get(&lane).and_then(|q| q.first()).copied();
        match (head(None), head(Some(v))) {
            (Some(x), Some(y)) => Some(x.min(y).1),
            (x, y) => x.or(y).map(|(_, a)| a),
        }
    }

    /// §4.6 on graph VP `v`: the first rule that yields a thread.
    pub(super) fn pick_graph(&self, v: usize, now: Instant) -> Option<Pick> {
        let (node, end, act) = self.node(v, now);
        let pick = |child, tier, until| Pick {
            child,
            tier,
            until,
            node,
        };
        if let Some((child, c, left)) = self.best_constraint(v, now, node, end) {
            return Some(pick(
                child,
                Tier::Constraint(c),
                now.saturating_add(left).min(end),
            ));
        }
        let slice = now.saturating_add(self.quantum).min(end);
        // Rule 3: "Else if the node is reserved for an activity, select a
        // runnable thread of the activity, if any".
        if let Some(child) = act.and_then(|a| self.pick_in(a, now)) {
            return Some(pick(child, Tier::Activity, slice));
        }
        // Rule 4: "Else if a briefly blocked activity has become runnable,
        // chose a thread within it to run in the manner of the previous step."
        if let Some((a, child, lost)) = self.second_chance(v, now) {
            let until = now.saturating_add(lost).min(slice);
            return Some(pick(child, Tier::SecondChance(a), until));
        }
        // Rule 5: "Else use the CPU interval for the round-robin queue of
        // activities, choosing a thread as previously described."
        let a = self.next_activity(v)?;
        Some(pick(self.pick_in(a, now)?, Tier::Free, slice))
    }

    /// Rule 5 alone, for the VPs that follow no graph (mode `one`).
    pub(super) fn pick_free(&self, v: usize, now: Instant) -> Option<Pick> {
        let a = self.next_activity(v)?;
        Some(Pick {
            child: self.pick_in(a, now)?,
            tier: Tier::Free,
            until: now.saturating_add(self.quantum),
            node: Instant::ZERO,
        })
    }

    /// How urgent a choice on graph VP `v` is, smaller first: its rule,
    /// then, among constraints, the earlier deadline (EDF, §3.3).
    pub(super) fn urgency(&self, v: usize, tier: Tier) -> (u8, Instant) {
        let deadline = match tier {
            Tier::Constraint(c) => self
                .cpus
                .get(v)
                .and_then(|cpu| cpu.book.get(c))
                .map_or(Instant::NEVER, |i| i.deadline),
            _ => Instant::NEVER,
        };
        (tier.rank(), deadline)
    }

    /// Whether a waiting child would now be chosen on graph VP `v` ahead
    /// of `running`: by a better rule, or by an earlier constraint deadline.
    pub(super) fn waiting_outranks(&self, v: usize, now: Instant, running: Tier) -> bool {
        self.pick_graph(v, now)
            .is_some_and(|p| self.urgency(v, p.tier) < self.urgency(v, running))
    }
}

/// What blocking leaves for selection: the second-chance queue (§4.5).
impl Rialto {
    /// §4.5: an activity whose last runnable thread blocked during a node
    /// reserved for it enters the second-chance queue with the rest of the
    /// node, until its next node starts.
    pub(super) fn note_blocked(&mut self, cx: &mut Cx, a: Activity) {
        let v = self.home(a);
        if !matches!(cx.vp_state(ParentVp(v as u32)), VpState::Held(_)) {
            return;
        }
        if self.acts.get(&a).is_some_and(|act| act.runnable > 0) {
            return;
        }
        let now = cx.now();
        self.prepare_walk(now);
        let (_, end, act) = self.interval_on(v, now);
        if act != Some(a) || end <= now {
            return;
        }
        let expires = self.next_node_of(v, a, end);
        let e = self.second.entry(a).or_insert(SecondChance {
            lost: Duration::ZERO,
            expires,
            since: now,
        });
        if e.expires != expires {
            *e = SecondChance {
                lost: Duration::ZERO,
                expires,
                since: now,
            };
        }
        e.lost += end - now;
    }

    /// The start of the first node of `a` at or after `from` in graph VP
    /// `v`'s graph: in the walk kept for decisions when it holds one (a
    /// reservation of the base period always does), else by walking up to
    /// a hyperperiod.
    fn next_node_of(&self, v: usize, a: Activity, from: Instant) -> Instant {
        let Some(cpu) = self.cpus.get(v) else {
            return Instant::NEVER;
        };
        let graph = cpu.book.graph();
        let Some(base) = graph.base_period().map(|b| b.0) else {
            return Instant::NEVER;
        };
        if let Some(t) = cpu.walk.as_ref().and_then(|w| w.next_of(base, a, from)) {
            return t;
        }
        let periods = graph.hyperperiod().map_or(1, |h| h.0 / base) + 1;
        let first = from.0 / base;
        for i in first..=first.saturating_add(periods) {
            let mut t = i * base;
            for iv in graph.period(i) {
                if iv.activity == Some(a) && t >= from.0 {
                    return Instant(t);
                }
                t += iv.len().0;
            }
        }
        Instant::NEVER
    }
}

impl Rialto {
    /// What constraint `c`, which owns `assigned` of the interval starting
    /// at `start`, may still run there.
    fn available(
        &self,
        v: usize,
        c: ConstraintId,
        now: Instant,
        start: Instant,
        assigned: Duration,
    ) -> Duration {
        let cpu = &self.cpus[v];
        let Some(info) = cpu.book.get(c) else {
            return Duration::ZERO;
        };
        if info.start > now || cpu.book.current(info.thread) != Some(c) {
            return Duration::ZERO;
        }
        let served = self.served.get(&c).copied().unwrap_or_default();
        let used = if cpu.used_in.0 == start {
            cpu.used_in.1.get(&c).copied().unwrap_or_default()
        } else {
            Duration::ZERO
        };
        let share = assigned.saturating_sub(used);
        share.min(info.guaranteed.saturating_sub(served.since_admitted))
    }
}
