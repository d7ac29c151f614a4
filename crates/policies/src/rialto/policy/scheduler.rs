//! The `rialto` policy's scheduler callbacks (`Scheduler for Rialto`) and
//! the moves they share with the messages: asking the parent for VPs, a
//! thread leaving the runnable set, whatever ran on a VP stopping, and
//! re-deciding a graph VP where a waiting thread outranks what runs.

use std::collections::{BTreeMap, BTreeSet};

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Instant, Msg, Params, ParentVp, Reject, Reply,
    Scheduler, Sender, SyncEvent, TimerKey, Value, VpState,
};

use super::super::place::Multiprocessor;
use super::select::Pick;
use super::state::{Act, Child, Cpu, MutexKey, Rialto, Slot, State, Tier};

impl Rialto {
    /// Partitioned mode: one graph per VP held, added as VPs appear (never
    /// removed: a placed activity keeps its graph).
    pub(super) fn grow(&mut self, cx: &Cx) {
        if self.mode == Multiprocessor::Partitioned {
            while self.cpus.len() < cx.vp_count() as usize {
                self.cpus.push(Cpu::new(self.gp, self.horizon));
            }
        }
    }

    /// Asks the parent for the VPs with something to run. Mode `one`: as
    /// many as there are runnable children. Partitioned: each VP whose lane
    /// has a runnable thread, and for the runnable threads of activities
    /// without a VP as many of the other VPs, lowest first (they may run on
    /// any VP, so each gets a CPU of its own while there are VPs to spare);
    /// a requesting VP no longer wanted is released (a held one answers
    /// `Release` at its next decision if nothing may run there). `O(N)`.
    pub(super) fn want_cpus(&self, cx: &mut Cx) {
        if self.mode == Multiprocessor::One {
            cx.want_cpus(self.runnable);
            return;
        }
        let mut spare = self.lane_runnable.get(&None).copied().unwrap_or(0);
        for v in 0..cx.vp_count() as usize {
            let vp = ParentVp(v as u32);
            let own = self.lane_runnable.get(&Some(v)).is_some_and(|&n| n > 0);
            let wanted = own || spare > 0;
            if !own && spare > 0 {
                spare -= 1;
            }
            match cx.vp_state(vp) {
                VpState::Requesting if !wanted => cx.release(vp),
                // At the root, a request also wakes a CPU the root declined.
                _ if wanted => cx.request(vp),
                _ => {}
            }
        }
    }

    /// Re-decide each graph VP where a waiting child outranks what runs.
    pub(super) fn preempt_if_needed(&mut self, cx: &mut Cx) {
        let now = cx.now();
        let mut walked = false;
        for v in 0..self.cpus.len() {
            let vp = ParentVp(v as u32);
            if !matches!(cx.vp_state(vp), VpState::Held(_)) {
                continue;
            }
            if !walked {
                self.prepare_walk(now);
                walked = true;
            }
            let Some(Some(slot)) = self.on_vp.get(v) else {
                continue;
            };
            let (start, _, _) = self.node(v, now);
            // A slot chosen in an earlier interval is re-decided by its horizon.
            if slot.interval != start {
                continue;
            }
            if self.waiting_outranks(v, now, slot.tier) {
                cx.reschedule(vp);
            }
        }
    }

    /// Whatever ran on `vp` stopped.
    pub(super) fn stop(&mut self, vp: ParentVp, now: Instant) {
        if let Some(slot) = self.on_vp.get_mut(vp.index()).and_then(Option::take) {
            // Preempted before it ran more than the switch into it (a
            // constraint's start came, say): it keeps its place in line,
            // or round robin could pass it over for ever.
            if now.saturating_since(slot.granted) <= self.gp.switch_cost {
                self.restore_turns(&slot);
            }
            if let Some(c) = self.children.get_mut(slot.child) {
                if c.state == State::Running(vp) {
                    c.state = State::Waiting;
                    self.reindex(slot.child);
                }
            }
        }
    }

    /// Puts the turns a grant took back as they were before it.
    pub(super) fn restore_turns(&mut self, slot: &Slot) {
        if matches!(slot.tier, Tier::Constraint(_)) {
            return;
        }
        let Some(c) = self.children.get_mut(slot.child) else {
            return;
        };
        c.turn = slot.turns_before.0;
        let activity = c.sched;
        self.reindex(slot.child);
        if let (Tier::Free, Some(turn)) = (slot.tier, slot.turns_before.1) {
            self.set_turn(activity, turn);
        }
    }

    /// The child leaves the runnable set.
    pub(super) fn forget_runnable(&mut self, child: ChildId) {
        let c = &mut self.children[child];
        if let State::Running(vp) = c.state {
            self.on_vp[vp.index()] = None;
        }
        if c.state != State::Idle {
            c.state = State::Idle;
            self.runnable -= 1;
            self.reindex(child);
        }
    }
}

fn activity_name(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::Str(s)) if !s.is_empty() => Some(format!("s:{s}")),
        Some(Value::Int(i)) => Some(format!("i:{i}")),
        _ => None,
    }
}

impl Scheduler for Rialto {
    fn policy(&self) -> &'static str {
        "rialto"
    }

    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        self.grow(cx);
        let name = activity_name(params.get("activity"));
        let activity = match name.as_ref().and_then(|n| self.names.get(n)) {
            Some(&a) => a,
            None => {
                let a = self.next_activity;
                self.next_activity += 1;
                if let Some(n) = &name {
                    self.names.insert(n.clone(), a);
                }
                self.acts.insert(
                    a,
                    Act {
                        name,
                        ..Act::default()
                    },
                );
                a
            }
        };
        self.acts.get_mut(&activity).expect("just made").members += 1;
        let serial = self.next_serial;
        self.next_serial += 1;
        self.by_serial.insert(serial, child);
        self.children.insert(
            child,
            Child {
                state: State::Idle,
                activity,
                sched: activity,
                turn: 0,
                since: Instant::ZERO,
                flushed: Duration::ZERO,
                serial,
                holds: BTreeSet::new(),
                ports: BTreeSet::new(),
                entry: None,
            },
        );
        Ok(())
    }

    /// A child leaves: its constraints and the RPCs it makes or serves end;
    /// the last thread of an activity takes the activity's reservation with
    /// it.
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(c) = self.children.get(child) else {
            return;
        };
        let activity = c.activity;
        if c.state != State::Idle {
            self.forget_runnable(child);
            self.want_cpus(cx);
        }
        // Before its activity may be forgotten: a server may be scheduled in it.
        self.hang_up(cx, child);
        self.end_all(cx, child);
        self.denied.remove(&child);
        let c = self.children.remove(child).expect("registered");
        self.by_serial.remove(&c.serial);
        for m in c.holds {
            match m {
                MutexKey::Named(_) => {
                    self.unlock_as(c.serial, m);
                }
                // The platform still counts it the holder: the waiters now
                // wait for a thread outside this scheduler.
                MutexKey::Platform(_) => {
                    let _ = self.inherit.release_to(c.serial, m, None);
                }
            }
        }
        let act = self.acts.get_mut(&activity).expect("registered");
        act.members -= 1;
        if act.members == 0 {
            let act = self.acts.remove(&activity).expect("registered");
            debug_assert!(act.runnable == 0 && act.queued.is_none());
            if let Some(name) = act.name {
                self.names.remove(&name);
            }
            self.second.remove(&activity);
            let v = act.vp.unwrap_or(0);
            if self.cpus[v].book.graph().granted(activity).is_some() {
                let mut graph = self.cpus[v].book.graph().clone();
                graph.release(activity);
                let _ = self.set_graph(cx, v, graph, false);
            }
        }
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        c.state = State::Waiting;
        self.seq += 1;
        c.turn = self.seq;
        let a = c.sched;
        self.reindex(child);
        self.runnable += 1;
        self.want_cpus(cx);
        // Woken inside the node it blocked in: what is left of the node is
        // not lost after all.
        let now = cx.now();
        self.prepare_walk(now);
        let (_, end, act) = self.interval_on(self.home(a), now);
        if act == Some(a) {
            if let Some(e) = self.second.get_mut(&a) {
                e.lost = e.lost.saturating_sub(end - now);
                if e.lost.is_zero() {
                    self.second.remove(&a);
                }
            }
        }
        self.preempt_if_needed(cx);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state != State::Idle {
            self.forget_runnable(child);
            self.want_cpus(cx);
            let a = self.children[child].sched;
            self.note_blocked(cx, a);
            // A constrained thread blocking on a mutex or in a call hands its
            // rank to the holder or the server (§4.2), which may outrank
            // what runs.
            self.preempt_if_needed(cx);
        }
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.grow(cx);
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
        }
        self.stop(vp, now);
        self.prepare_walk(now);
        self.second
            .retain(|_, e| now < e.expires && !e.lost.is_zero());
        let graph_vp = self.follows_graph(vp.index());
        let pick = if graph_vp {
            self.pick_graph(vp.index(), now)
        } else {
            self.pick_free(vp.index(), now)
        };
        let Some(Pick {
            child,
            tier,
            until,
            node,
        }) = pick
        else {
            return Dispatch::Release;
        };
        let c = &mut self.children[child];
        c.state = State::Running(vp);
        c.since = now;
        c.flushed = Duration::ZERO;
        let activity = c.sched;
        let turns_before = (c.turn, self.acts.get(&activity).map(|a| a.turn));
        // A thread picked by round robin goes to the back of its activity's
        // line (assigned time does not cost it its place); an activity given
        // a turn of free time goes to the back of the activities' line.
        if !matches!(tier, Tier::Constraint(_)) {
            self.seq += 1;
            c.turn = self.seq;
        }
        self.reindex(child);
        if tier == Tier::Free {
            self.seq += 1;
            self.set_turn(activity, self.seq);
        }
        self.on_vp[vp.index()] = Some(Slot {
            child,
            tier,
            interval: node,
            granted: now,
            turns_before,
        });
        if !graph_vp {
            self.preempt_if_needed(cx);
        }
        Dispatch::Run { child, until }
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
        self.preempt_if_needed(cx);
    }

    /// Time goes to the thread's constraint in effect (for `taken` and the
    /// guaranteed time) and, on the graph VP, to its share of the interval.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        let fresh = ran.saturating_sub(c.flushed);
        c.flushed = Duration::ZERO;
        c.since = cx.now();
        let c = &self.children[child];
        if let Some(id) = self.book_of(child).current(child) {
            let s = self.served.entry(id).or_default();
            s.taken += fresh;
            s.since_admitted += fresh;
        }
        for d in self.denied.get_mut(&child).into_iter().flatten() {
            d.taken += fresh;
        }
        let State::Running(vp) = c.state else {
            return;
        };
        if let Some(Some(slot)) = self.on_vp.get(vp.index()) {
            match slot.tier {
                Tier::Constraint(id) => {
                    // Only graph VPs run constraints.
                    if let Some(cpu) = self.cpus.get_mut(vp.index()) {
                        if cpu.used_in.0 != slot.interval {
                            cpu.used_in = (slot.interval, BTreeMap::new());
                        }
                        *cpu.used_in.1.entry(id).or_default() += ran;
                    }
                }
                Tier::SecondChance(a) => {
                    if let Some(e) = self.second.get_mut(&a) {
                        e.lost = e.lost.saturating_sub(ran);
                        if e.lost.is_zero() {
                            self.second.remove(&a);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn timer(&mut self, cx: &mut Cx, _key: TimerKey) {
        self.preempt_if_needed(cx);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        self.grow(cx);
        let reply = self.request(cx, from, msg);
        // A placement or an RPC may move runnable threads between lanes.
        if self.mode == Multiprocessor::Partitioned {
            self.want_cpus(cx);
        }
        reply
    }

    fn sync(&mut self, cx: &mut Cx, event: &SyncEvent<ChildId>) {
        self.platform_sync(cx, event);
        if self.mode == Multiprocessor::Partitioned {
            self.want_cpus(cx);
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.check_state()
    }
}
