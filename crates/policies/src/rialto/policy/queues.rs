//! The queues selection reads, kept in step with the children so that one
//! decision costs `O(log n)` rather than a scan (§3.1: "a small number of
//! pointer indirections ... independent of the number of threads,
//! activities, and time constraints"). A child module of `policy`; the
//! queued records themselves (`Act`, `Entry`) are part of `state.rs`.
//!
//! - Per activity (`Act`): its waiting threads ordered by round-robin
//!   turn, the waiting ones among them with a pending denied or an open
//!   constraint (rule 3's first two classes, few, scanned only there), and
//!   a count of its waiting and running threads.
//! - `ready`: the activities with a waiting thread, by (turn, activity):
//!   rule 5's round-robin queue. An activity that gets its first waiting or
//!   running thread takes a fresh turn at the back (see "Round robin" in
//!   `policy`).
//! - `Walk` (`walk.rs`): the intervals of the current and the next base period, so
//!   that finding the node holding `now` is a binary search rather than a
//!   walk of the graph; rebuilt when the base-period index or the graph
//!   changes.
//!
//! Each child remembers its `Entry`, where the queues hold it, and
//! `reindex` moves it after anything its entry depends on has changed (its
//! state, turn, scheduling activity, denied or open constraints), in
//! `O(log n)`. `check_invariants` rebuilds all of it from the children and
//! the graph and compares.

use std::collections::{BTreeMap, BTreeSet};

use hsched_core::{ChildId, Instant};

use super::state::{Act, Activity, Entry, Lane, Rialto, State};
use super::walk::Walk;

impl Rialto {
    /// Makes each graph VP's `walk` hold the base period of `now` (call on
    /// the `&mut` paths before selection, which reads it through
    /// `interval_on`).
    pub(super) fn prepare_walk(&mut self, now: Instant) {
        for cpu in &mut self.cpus {
            let Some(base) = cpu.book.graph().base_period().map(|b| b.0) else {
                cpu.walk = None;
                continue;
            };
            let i = now.0 / base;
            match cpu.walk.take() {
                Some(mut w) => {
                    w.advance(cpu.book.graph(), base, i);
                    cpu.walk = Some(w);
                }
                None => cpu.walk = Some(Walk::new(cpu.book.graph(), base, i)),
            }
        }
    }

    /// The entry `child` should have now.
    fn entry_for(&self, child: ChildId) -> Option<Entry> {
        let c = self.children.get(child)?;
        if c.state == State::Idle {
            return None;
        }
        let waiting = c.state == State::Waiting;
        Some(Entry {
            activity: c.sched,
            waiting: waiting.then_some(c.turn),
            marked: waiting
                && (self.denied.contains_key(&child)
                    || self.book_of(child).current(child).is_some()),
        })
    }

    /// Moves `child` to where the queues should hold it, after its state,
    /// turn, activity or constraints changed. `O(log n)`.
    pub(super) fn reindex(&mut self, child: ChildId) {
        let want = self.entry_for(child);
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        let had = c.entry;
        if had == want {
            return;
        }
        c.entry = want;
        if let Some(e) = had {
            let act = self.acts.get_mut(&e.activity).expect("indexed activity");
            act.runnable -= 1;
            let lane = act.vp;
            Self::count(&mut self.lane_runnable, lane, 0, 1);
            if let Some(t) = e.waiting {
                act.waiting.remove(&(t, child));
            }
            if e.marked {
                act.marked.remove(&child);
            }
            self.requeue(e.activity);
        }
        if let Some(e) = want {
            let joins = had.map(|h| h.activity) != Some(e.activity);
            let act = self.acts.get_mut(&e.activity).expect("indexed activity");
            // An activity none of whose threads waited or ran goes to the
            // back of the round robin when one does (§3.5: activities take
            // turns), so a briefly sleeping one does not jump the CPU-bound
            // ones; a thread changing state within it does not count.
            if joins && act.runnable == 0 {
                self.seq += 1;
                act.turn = self.seq;
            }
            act.runnable += 1;
            let lane = act.vp;
            if let Some(t) = e.waiting {
                act.waiting.insert((t, child));
            }
            Self::count(&mut self.lane_runnable, lane, 1, 0);
            if e.marked {
                act.marked.insert(child);
            }
            self.requeue(e.activity);
        }
    }

    /// Adds `add` to and takes `sub` from `lane`'s runnable count, keeping
    /// no zero.
    pub(super) fn count(counts: &mut BTreeMap<Lane, u32>, lane: Lane, add: u32, sub: u32) {
        let n = counts.entry(lane).or_default();
        *n = (*n + add).saturating_sub(sub);
        if *n == 0 {
            counts.remove(&lane);
        }
    }

    /// Gives activity `a` the round-robin turn `turn`.
    pub(super) fn set_turn(&mut self, a: Activity, turn: u64) {
        if let Some(act) = self.acts.get_mut(&a) {
            act.turn = turn;
            self.requeue(a);
        }
    }

    /// Puts `a` in its lane of `ready` under its turn if it has a waiting
    /// thread, and takes it out otherwise (after its turn, its waiting
    /// threads or its placement changed).
    pub(super) fn requeue(&mut self, a: Activity) {
        let Some(act) = self.acts.get_mut(&a) else {
            return;
        };
        let want = (!act.waiting.is_empty()).then_some((act.vp, act.turn));
        if want != act.queued {
            if let Some((lane, t)) = act.queued {
                if let Some(q) = self.ready.get_mut(&lane) {
                    q.remove(&(t, a));
                    if q.is_empty() {
                        self.ready.remove(&lane);
                    }
                }
            }
            if let Some((lane, t)) = want {
                self.ready.entry(lane).or_default().insert((t, a));
            }
            act.queued = want;
        }
    }

    /// Checks the queues against the children: exactly what `reindex`
    /// would have built. Linear in the children (times a log).
    pub(super) fn check_queues(&self) -> Result<(), String> {
        let mut want: BTreeMap<Activity, Act> = BTreeMap::new();
        for (id, c) in self.children.iter() {
            let entry = self.entry_for(id);
            if c.entry != entry {
                return Err(format!("{id} is queued as {:?}, not {entry:?}", c.entry));
            }
            if let Some(e) = entry {
                let act = want.entry(e.activity).or_default();
                act.runnable += 1;
                if let Some(t) = e.waiting {
                    act.waiting.insert((t, id));
                }
                if e.marked {
                    act.marked.insert(id);
                }
            }
        }
        let mut ready: BTreeMap<Lane, BTreeSet<(u64, Activity)>> = BTreeMap::new();
        let mut lanes: BTreeMap<Lane, u32> = BTreeMap::new();
        for (&a, act) in &self.acts {
            if act.runnable > 0 {
                *lanes.entry(act.vp).or_default() += act.runnable;
            }
            let w = want.remove(&a).unwrap_or_default();
            if act.runnable != w.runnable || act.waiting != w.waiting || act.marked != w.marked {
                return Err(format!(
                    "activity {a} holds {} runnable, waiting {:?}, marked {:?}; its threads say {}, {:?}, {:?}",
                    act.runnable, act.waiting, act.marked, w.runnable, w.waiting, w.marked
                ));
            }
            let q = (!w.waiting.is_empty()).then_some((act.vp, act.turn));
            if act.queued != q {
                return Err(format!("activity {a} is queued as {:?}", act.queued));
            }
            if let Some((lane, t)) = q {
                ready.entry(lane).or_default().insert((t, a));
            }
        }
        if !want.is_empty() {
            return Err("a thread is scheduled in a forgotten activity".into());
        }
        if lanes != self.lane_runnable {
            return Err(format!(
                "runnable per lane {:?}, not {lanes:?}",
                self.lane_runnable
            ));
        }
        if ready != self.ready {
            return Err(format!(
                "the ready queue is {:?}, not {ready:?}",
                self.ready
            ));
        }
        for (v, cpu) in self.cpus.iter().enumerate() {
            if let Some(w) = &cpu.walk {
                let base = cpu
                    .book
                    .graph()
                    .base_period()
                    .ok_or_else(|| format!("vp{v}: a walk is kept without a base period"))?
                    .0;
                if *w != Walk::new(cpu.book.graph(), base, w.first) {
                    return Err(format!(
                        "vp{v}: the walk of base period {} is stale",
                        w.first
                    ));
                }
            }
        }
        Ok(())
    }
}
