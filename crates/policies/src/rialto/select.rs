//! Next-thread selection on the graph VP, §4.6 of the Rialto paper, and
//! the helpers it needs (the second-chance queue of §4.5, the inheritance
//! chain of §4.2). A child module of `policy`, so it sees its private state.

use hsched_core::{ChildId, Cx, Duration, Instant, Params, Value, VpState};

use super::super::constraints::ConstraintId;
use super::super::inherit::Wait;
use super::{mutex_params, Activity, Rialto, SecondChance, State, Tier, GRAPH_VP};

/// A choice: who runs, why, until when, and the node it was chosen in.
pub(super) struct Pick {
    pub child: ChildId,
    pub tier: Tier,
    pub until: Instant,
    pub node: Instant,
}

impl Rialto {
    /// Rule 1: "If the time remaining in the current node is below a minimum
    /// threshold, select the next node." The node holding `now`, or the next
    /// one when less than `threshold` of it is left: `(start, end, activity)`.
    pub(super) fn node(&self, now: Instant) -> (Instant, Instant, Option<Activity>) {
        let (s, e, a) = self.interval_at(now);
        if !self.threshold.is_zero() && e != Instant::NEVER && e - now < self.threshold {
            let (_, e2, a2) = self.interval_at(e);
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
    /// constraint with assigned time left in the node whose thread (or, if
    /// it is blocked on a mutex, the end of its inheritance chain) waits.
    pub(super) fn best_constraint(
        &self,
        now: Instant,
        start: Instant,
        end: Instant,
    ) -> Option<(ChildId, ConstraintId, Duration)> {
        self.book
            .assigned_in(start, end)
            .into_iter()
            .find_map(|(c, _)| {
                let thread = self.book.get(c)?.thread;
                let runner = match self.children.get(thread)?.state {
                    State::Waiting => thread,
                    State::Idle => self.chain_end(thread).filter(|&r| r != thread)?,
                    State::Running(_) => return None,
                };
                if self.children.get(runner)?.state != State::Waiting {
                    return None;
                }
                let left = self.available(c, now, start, end);
                (!left.is_zero()).then_some((runner, c, left))
            })
    }

    /// Rule 3's order within activity `a`: "(1) threads with pending denied
    /// constraints, (2) threads with late constraints, (3) round-robin among
    /// runnable threads." Denied and late ones go earliest deadline first.
    pub(super) fn pick_in(&self, a: Activity, now: Instant) -> Option<ChildId> {
        let waiting = || {
            self.children
                .iter()
                .filter(move |(_, c)| c.state == State::Waiting && c.activity == a)
        };
        let denied = waiting()
            .filter_map(|(id, _)| {
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
        let late = waiting()
            .filter_map(|(id, _)| {
                let c = self.book.current(id)?;
                let info = self.book.get(c)?;
                let served = self.served.get(&c).copied().unwrap_or_default();
                (served.since_admitted >= info.guaranteed || info.deadline <= now)
                    .then_some((info.deadline, id))
            })
            .min();
        if let Some((_, id)) = late {
            return Some(id);
        }
        waiting().min_by_key(|(_, c)| c.turn).map(|(id, _)| id)
    }

    /// Rule 4's candidate: an activity of the second-chance queue that has
    /// a waiting thread, has not reached its next node yet and has time to
    /// make up (the oldest entry first), with the time left to make up.
    pub(super) fn second_chance(&self, now: Instant) -> Option<(Activity, ChildId, Duration)> {
        let mut queue: Vec<_> = self
            .second
            .iter()
            .filter(|(_, e)| now < e.expires && !e.lost.is_zero())
            .map(|(&a, e)| (e.since, a, e.lost))
            .collect();
        queue.sort();
        queue
            .into_iter()
            .find_map(|(_, a, lost)| Some((a, self.pick_in(a, now)?, lost)))
    }

    /// Rule 5's activity: the one first in the round-robin queue of
    /// activities among those with a waiting thread.
    pub(super) fn next_activity(&self) -> Option<Activity> {
        self.children
            .iter()
            .filter(|(_, c)| c.state == State::Waiting)
            .map(|(_, c)| c.activity)
            .min_by_key(|a| (self.act_turn.get(a).copied().unwrap_or(0), *a))
    }

    /// §4.6 on the graph VP: the first rule that yields a thread.
    pub(super) fn pick_graph(&self, now: Instant) -> Option<Pick> {
        let (node, end, act) = self.node(now);
        let pick = |child, tier, until| Pick {
            child,
            tier,
            until,
            node,
        };
        if let Some((child, c, left)) = self.best_constraint(now, node, end) {
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
        if let Some((a, child, lost)) = self.second_chance(now) {
            let until = now.saturating_add(lost).min(slice);
            return Some(pick(child, Tier::SecondChance(a), until));
        }
        // Rule 5: "Else use the CPU interval for the round-robin queue of
        // activities, choosing a thread as previously described."
        let a = self.next_activity()?;
        Some(pick(self.pick_in(a, now)?, Tier::Free, slice))
    }

    /// Rule 5 alone, for the other VPs (they do not follow the graph).
    pub(super) fn pick_free(&self, now: Instant) -> Option<Pick> {
        let a = self.next_activity()?;
        Some(Pick {
            child: self.pick_in(a, now)?,
            tier: Tier::Free,
            until: now.saturating_add(self.quantum),
            node: Instant::ZERO,
        })
    }

    /// The best tier any waiting child could get on the graph VP now.
    pub(super) fn best_waiting_rank(&self, now: Instant) -> Option<u8> {
        self.pick_graph(now).map(|p| p.tier.rank())
    }
}

/// The inputs of selection: blocking (§4.5) and mutex events (§4.2).
impl Rialto {
    /// §4.5: an activity whose last runnable thread blocked during a node
    /// reserved for it enters the second-chance queue with the rest of the
    /// node, until its next node starts.
    pub(super) fn note_blocked(&mut self, cx: &mut Cx, a: Activity) {
        if !matches!(cx.vp_state(GRAPH_VP), VpState::Held(_)) {
            return;
        }
        if self
            .children
            .iter()
            .any(|(_, c)| c.activity == a && c.state != State::Idle)
        {
            return;
        }
        let now = cx.now();
        let (_, end, act) = self.interval_at(now);
        if act != Some(a) || end <= now {
            return;
        }
        let expires = self.next_node_of(a, end);
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

    /// The start of the first node of `a` at or after `from`.
    fn next_node_of(&self, a: Activity, from: Instant) -> Instant {
        let Some(base) = self.graph().base_period().map(|b| b.0) else {
            return Instant::NEVER;
        };
        let periods = self.graph().hyperperiod().map_or(1, |h| h.0 / base) + 1;
        let first = from.0 / base;
        for i in first..=first.saturating_add(periods) {
            let mut t = i * base;
            for iv in self.graph().period(i) {
                if iv.activity == Some(a) && t >= from.0 {
                    return Instant(t);
                }
                t += iv.len().0;
            }
        }
        Instant::NEVER
    }

    /// `lock`, `unlock`, `block_on { mutex }`: the mutex events of §4.2.
    pub(super) fn mutex_msg(
        &mut self,
        cx: &mut Cx,
        child: ChildId,
        name: &str,
        args: &Params,
    ) -> Result<Params, String> {
        let args = args.resolve(&mutex_params())?;
        let m = args.int("mutex");
        let serial = self.children[child].serial;
        match name {
            "lock" => {
                self.inherit
                    .acquire(serial, m)
                    .map_err(|e| format!("{e} (send `block_on` and block)"))?;
                self.children[child].holds.insert(m);
                Ok(Params::new())
            }
            "block_on" => {
                self.inherit
                    .block_on(serial, m)
                    .map_err(|e| e.to_string())?;
                self.preempt_if_needed(cx);
                Ok(Params::new())
            }
            _ => {
                if !self.children[child].holds.contains(&m) {
                    return Err("the sender does not hold the mutex".into());
                }
                self.children[child].holds.remove(&m);
                let next = self.unlock_as(serial, m);
                // §4.2: the holder runs with the waiter's constraint "until
                // it releases ownership of the last synchronization object in
                // the chain": re-decide if it ran for someone else's.
                if let Some(Some(slot)) = self.on_vp.get(GRAPH_VP.index()) {
                    let inherited = match slot.tier {
                        Tier::Constraint(c) => {
                            self.book.get(c).is_some_and(|i| i.thread != slot.child)
                        }
                        _ => false,
                    };
                    if slot.child == child
                        && inherited
                        && matches!(cx.vp_state(GRAPH_VP), VpState::Held(_))
                    {
                        cx.reschedule(GRAPH_VP);
                    }
                }
                Ok(Params::new().with("handed_over", Value::Bool(next.is_some())))
            }
        }
    }

    /// Releases `m` held by `serial`; the mutex goes to its first waiter
    /// still attached (returned), skipping threads that left.
    pub(super) fn unlock_as(&mut self, serial: u64, m: i64) -> Option<ChildId> {
        let mut holder = serial;
        loop {
            match self.inherit.release(holder, m) {
                Ok(Some(next)) => match self.by_serial.get(&next) {
                    Some(&c) => {
                        self.children[c].holds.insert(m);
                        return Some(c);
                    }
                    None => holder = next,
                },
                _ => return None,
            }
        }
    }
}
