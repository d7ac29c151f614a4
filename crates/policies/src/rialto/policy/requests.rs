//! The `rialto` policy's messages: reservations (`reserve`, `release`),
//! time constraints (`begin_constraint`, `end_constraint`), the mutex
//! events inheritance follows (`lock`, `unlock`, `block_on`) and RPCs
//! (`rpc_serve`, `rpc_call`, `rpc_reply`). A child module of `policy`; the
//! module documentation there lists the messages and what they answer.

use hsched_core::{
    ChildId, Cx, Duration, Instant, Msg, ParamKind, ParamSpec, Params, ParentVp, Reply, Scheduler,
    Sender, SyncEvent, TimerKey, Value, VpState,
};

use super::super::constraints::{ConstraintId, ConstraintInfo, Constraints, Rejected, Request};
use super::super::graph::Graph;
use super::super::inherit::{InheritError, Wait};
use super::super::place::{self, Multiprocessor};
use super::params::dur;
use super::state::{Activity, Denied, MutexKey, Rialto, Served, State, Tier};

fn reserve_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new("amount", dur(Duration::ZERO), "CPU time per period"),
        ParamSpec::new("period", dur(Duration::ZERO), "the period"),
    ]
}

fn begin_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new("start", dur(Duration::ZERO), "earliest start (default now)")
            .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new("estimate", dur(Duration::ZERO), "CPU time needed"),
        ParamSpec::new("deadline", dur(Duration::ZERO), "deadline"),
        ParamSpec::new("critical", ParamKind::Bool, "critical constraint (§4.3)")
            .with_default(Value::Bool(false)),
        ParamSpec::new(
            "relative",
            ParamKind::Bool,
            "start and deadline count from now",
        )
        .with_default(Value::Bool(false)),
    ]
}

fn mutex_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "mutex",
        ParamKind::Int {
            min: i64::MIN,
            max: i64::MAX,
        },
        "the mutex (any integer naming it among the scheduler's threads)",
    )]
}

fn port_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "port",
        ParamKind::Int {
            min: i64::MIN,
            max: i64::MAX,
        },
        "the RPC port (any integer naming it among the scheduler's threads)",
    )]
}

impl Rialto {
    /// Answers a message (see the module documentation of `policy`).
    pub(super) fn request(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        let name = msg.name.as_str();
        if !matches!(
            name,
            "reserve"
                | "release"
                | "begin_constraint"
                | "end_constraint"
                | "lock"
                | "unlock"
                | "block_on"
                | "rpc_serve"
                | "rpc_call"
                | "rpc_reply"
        ) {
            return Reply::unknown(self.policy(), msg);
        }
        let Some(child) = from.child.filter(|&c| self.children.contains(c)) else {
            return Reply::Err(format!(
                "rialto: `{name}` must come from a thread attached to this scheduler"
            ));
        };
        let result = match name {
            "reserve" => self.reserve(cx, child, &msg.args),
            "release" => self.release(cx, self.children[child].activity),
            "begin_constraint" => self.begin(cx, child, &msg.args),
            "end_constraint" => self.end(cx, child),
            "rpc_serve" | "rpc_call" | "rpc_reply" => self.rpc_msg(cx, child, name, &msg.args),
            _ => self.mutex_msg(cx, child, name, &msg.args),
        };
        match result {
            Ok(args) => Reply::Ok(args),
            Err(e) => Reply::Err(format!("rialto: `{name}` refused: {e}")),
        }
    }

    /// Replaces graph VP `v`'s graph: a new book, with its open constraints
    /// re-admitted in id order (outer before inner), each with what it has
    /// not received yet and what is left of its window. With `keep_promises`
    /// nothing changes if one of them no longer fits, and the error names
    /// it; otherwise such a constraint is dropped (its `end_constraint` then
    /// answers `Err`).
    pub(super) fn set_graph(
        &mut self,
        cx: &mut Cx,
        v: usize,
        graph: Graph<Activity>,
        keep_promises: bool,
    ) -> Result<(), String> {
        let now = cx.now();
        let mut book = Constraints::new(graph, self.horizon);
        let mut open: Vec<ConstraintInfo<Activity, ChildId>> =
            self.cpus[v].book.open().copied().collect();
        open.sort_by_key(|i| i.id);
        let mut dropped = Vec::new();
        for info in &open {
            let served = self.served.get(&info.id).copied().unwrap_or_default();
            let req = Request {
                start: info.start.max(now),
                estimate: (info.guaranteed.saturating_sub(info.overhead))
                    .saturating_sub(served.since_admitted),
                deadline: info.deadline,
                critical: info.critical,
            };
            if book
                .begin(now, info.activity, info.thread, info.id, req)
                .is_err()
            {
                if keep_promises {
                    return Err(format!(
                        "it would take time promised to the accepted {} (due at {}); try again once it has ended",
                        info.id, info.deadline
                    ));
                }
                dropped.push(info.id);
            }
        }
        let cpu = &mut self.cpus[v];
        cpu.book = book;
        cpu.walk = None;
        cpu.used_in.1.clear();
        for info in &open {
            if dropped.contains(&info.id) {
                self.served.remove(&info.id);
                cx.cancel_timer(timer_key(info.id));
            } else if let Some(s) = self.served.get_mut(&info.id) {
                s.since_admitted = Duration::ZERO;
            }
        }
        for info in open {
            self.reindex(info.thread);
        }
        let vp = ParentVp(v as u32);
        if matches!(cx.vp_state(vp), VpState::Held(_)) {
            cx.reschedule(vp);
        }
        Ok(())
    }

    fn reserve(&mut self, cx: &mut Cx, child: ChildId, args: &Params) -> Result<Params, String> {
        let args = args.resolve(&reserve_params())?;
        let activity = self.children[child].activity;
        let pin = self
            .acts
            .get(&activity)
            .and_then(|act| act.name.as_deref())
            .and_then(|name| self.pins.get(name.strip_prefix("s:")?))
            .copied();
        let (amount, period) = (args.duration("amount"), args.duration("period"));
        let (v, graph, g) = match self.mode {
            Multiprocessor::One => {
                let mut graph = self.cpus[0].book.graph().clone();
                let g = graph
                    .reserve_pinned(activity, amount, period, pin.map(|p| p.pin))
                    .map_err(|r| r.to_string())?;
                (0, graph, g)
            }
            // The placement rule's one owner, shared with the analysis.
            Multiprocessor::Partitioned => {
                let graphs: Vec<Graph<Activity>> =
                    self.cpus.iter().map(|c| c.book.graph().clone()).collect();
                let only = match (self.placed_on(activity), pin) {
                    (Some(v), _) => Some((v, "placed on")),
                    (None, Some(p)) => Some((p.vp, "pinned to")),
                    (None, None) => None,
                };
                place::place(
                    &graphs,
                    self.fit,
                    only,
                    activity,
                    amount,
                    period,
                    pin.map(|p| p.pin),
                )?
            }
        };
        // Accepted constraints are promises (Rialto's independence of
        // applications): a reservation may not take their time.
        self.set_graph(cx, v, graph, true)?;
        let mut reply = Params::new()
            .with("amount", Value::Duration(g.reservation.amount))
            .with("period", Value::Duration(g.reservation.period))
            .with("rebuilt", Value::Bool(g.rebuilt));
        if self.mode == Multiprocessor::Partitioned {
            self.place_activity(cx, activity, v);
            reply = reply.with("vp", Value::Int(v as i64));
        }
        Ok(reply)
    }

    /// Places `activity` on graph VP `v` (its first grant): its round-robin
    /// lane becomes `v`'s, and its threads running elsewhere are re-decided
    /// so that from now on they run on `v` only. Its constraints need no
    /// move: an activity without a VP has none (they are refused).
    fn place_activity(&mut self, cx: &mut Cx, activity: Activity, v: usize) {
        let Some(act) = self.acts.get_mut(&activity) else {
            return;
        };
        if act.vp == Some(v) {
            return;
        }
        act.vp = Some(v);
        let n = act.runnable;
        Self::count(&mut self.lane_runnable, None, 0, n);
        Self::count(&mut self.lane_runnable, Some(v), n, 0);
        self.requeue(activity);
        self.want_cpus(cx);
        for (i, slot) in self.on_vp.iter().enumerate() {
            if let Some(s) = slot {
                if i != v && !self.may_run_on(s.child, i) {
                    cx.reschedule(ParentVp(i as u32));
                }
            }
        }
    }

    fn release(&mut self, cx: &mut Cx, activity: Activity) -> Result<Params, String> {
        // A released activity stays on its VP (a placement is for life).
        let v = self.home(activity);
        let mut graph = self.cpus[v].book.graph().clone();
        let r = graph
            .release(activity)
            .ok_or_else(|| "the sender's activity holds no reservation".to_string())?;
        // Releasing only frees time; a constraint of the releasing activity
        // that relied on it may be dropped: its own choice.
        let _ = self.set_graph(cx, v, graph, false);
        Ok(Params::new()
            .with("amount", Value::Duration(r.amount))
            .with("period", Value::Duration(r.period)))
    }

    fn begin(&mut self, cx: &mut Cx, child: ChildId, args: &Params) -> Result<Params, String> {
        let args = args.resolve(&begin_params())?;
        let now = cx.now();
        let (s, d) = (args.duration("start"), args.duration("deadline"));
        let (start, deadline) = if args.bool("relative") {
            (now.saturating_add(s), now.saturating_add(d))
        } else {
            (Instant(s.0), Instant(d.0))
        };
        if deadline <= now.max(start) {
            return Err(format!(
                "the deadline ({deadline}) is not after the start ({})",
                now.max(start)
            ));
        }
        let id = ConstraintId(self.next_constraint);
        let activity = self.children[child].activity;
        // A constraint is a promise on one CPU's schedule: partitioned, it
        // is admitted on its activity's VP, and an activity has a VP only
        // from its first grant (placing it here instead could send its
        // later `reserve` elsewhere than the analysis's replay foresees).
        if self.mode == Multiprocessor::Partitioned && self.placed_on(activity).is_none() {
            return Err(
                "the sender's activity has no VP yet (multiprocessor = \"partitioned\" admits a \
                 constraint on its activity's VP, placed by its first granted `reserve`): reserve first"
                    .into(),
            );
        }
        let v = self.home(activity);
        // What the thread ran before this call belongs to what it ran under
        // then, not to the new constraint.
        self.settle(child, now);
        let req = Request {
            start,
            estimate: args.duration("estimate"),
            deadline,
            critical: args.bool("critical"),
        };
        let acc = match self.cpus[v].book.begin(now, activity, child, id, req) {
            Ok(acc) => acc,
            Err(e) => {
                // A denied constraint stays pending until `end_constraint`:
                // its thread is preferred in its activity's time (§4.6 rule 3).
                if matches!(e, Rejected::Infeasible { .. }) {
                    self.next_constraint += 1;
                    self.denied.entry(child).or_default().push(Denied {
                        id,
                        deadline,
                        taken: Duration::ZERO,
                    });
                    self.reindex(child);
                }
                return Err(format!("{e} (pending as denied until `end_constraint`)"));
            }
        };
        self.next_constraint += 1;
        self.served.insert(id, Served::default());
        self.reindex(child);
        if acc.start > now {
            cx.set_timer(timer_key(id), acc.start);
        }
        self.preempt_if_needed(cx);
        // What a critical constraint took from its activity's non-critical
        // ones (§4.3), in all.
        let stolen = Duration(acc.stolen.iter().map(|(_, d)| d.0).sum());
        // The interval assignment (§3.2), e.g. "244ms-248ms 257ms-258ms":
        // what the feasibility analysis set aside, for people to read.
        let assigned: Vec<String> = self.cpus[v]
            .book
            .pieces()
            .into_iter()
            .filter(|p| p.constraint == id)
            .map(|p| format!("{}-{}", Duration(p.start.0), Duration(p.end.0)))
            .collect();
        Ok(Params::new()
            .with("id", Value::Int(id.0 as i64))
            .with("start", Value::Duration(Duration(acc.start.0)))
            .with("deadline", Value::Duration(Duration(acc.deadline.0)))
            .with("estimate", Value::Duration(acc.estimate))
            .with("critical", Value::Bool(acc.critical))
            .with("inherited", Value::Duration(acc.inherited))
            .with("stolen", Value::Duration(stolen))
            .with("assigned", Value::Str(assigned.join(" "))))
    }

    fn end(&mut self, cx: &mut Cx, child: ChildId) -> Result<Params, String> {
        let now = cx.now();
        self.settle(child, now);
        let last_denied = self.denied.get(&child).and_then(|v| v.last()).map(|d| d.id);
        let home = self.home(self.children[child].activity);
        if last_denied.is_some_and(|d| self.cpus[home].book.current(child).is_none_or(|c| c < d)) {
            let v = self.denied.get_mut(&child).expect("present");
            let d = v.pop().expect("present");
            if v.is_empty() {
                self.denied.remove(&child);
                self.reindex(child);
            }
            return Ok(Params::new()
                .with("taken", Value::Duration(d.taken))
                .with("released", Value::Duration(Duration::ZERO))
                .with("denied", Value::Bool(true)));
        }
        let id = self.cpus[home]
            .book
            .current(child)
            .ok_or_else(|| "the sender has no open constraint".to_string())?;
        let taken = self.served.remove(&id).unwrap_or_default().taken;
        let ended = self.cpus[home]
            .book
            .end(id, cx.now(), taken)
            .map_err(|e| format!("{e:?}"))?;
        cx.cancel_timer(timer_key(id));
        self.reindex(child);
        // Its book is its activity's graph VP's: that VP ran it.
        let vp = ParentVp(home as u32);
        if let Some(Some(slot)) = self.on_vp.get(home) {
            if slot.tier == Tier::Constraint(id) && matches!(cx.vp_state(vp), VpState::Held(_)) {
                cx.reschedule(vp);
            }
        }
        Ok(Params::new()
            .with("taken", Value::Duration(ended.taken))
            .with("released", Value::Duration(ended.released)))
    }

    /// Counts the part of `child`'s current run up to `now` that no charge
    /// has counted yet, for what it runs under now (its innermost
    /// constraint, its pending denied ones), so that a constraint begun or
    /// ended now starts or stops counting exactly at `now`.
    fn settle(&mut self, child: ChildId, now: Instant) {
        let c = &mut self.children[child];
        if !matches!(c.state, State::Running(_)) {
            return;
        }
        let extra = (now - c.since).saturating_sub(c.flushed);
        c.flushed += extra;
        let home = self.home(self.children[child].activity);
        if let Some(s) = self.cpus[home]
            .book
            .current(child)
            .and_then(|id| self.served.get_mut(&id))
        {
            s.taken += extra;
            s.since_admitted += extra;
        }
        for d in self.denied.get_mut(&child).into_iter().flatten() {
            d.taken += extra;
        }
    }

    /// Ends every open constraint of `child`, innermost first.
    pub(super) fn end_all(&mut self, cx: &mut Cx, child: ChildId) {
        let home = self.home(self.children[child].activity);
        while let Some(id) = self.cpus[home].book.current(child) {
            let taken = self.served.remove(&id).unwrap_or_default().taken;
            let _ = self.cpus[home].book.end(id, cx.now(), taken);
            cx.cancel_timer(timer_key(id));
        }
        self.reindex(child);
    }

    /// `lock`, `unlock`, `block_on { mutex }`: the mutex events of §4.2.
    fn mutex_msg(
        &mut self,
        cx: &mut Cx,
        child: ChildId,
        name: &str,
        args: &Params,
    ) -> Result<Params, String> {
        let args = args.resolve(&mutex_params())?;
        let m = MutexKey::Named(args.int("mutex"));
        let serial = self.children[child].serial;
        match name {
            "lock" => {
                self.inherit.acquire(serial, m).map_err(|e| match e {
                    InheritError::Busy => format!("{e} (send `block_on` and block)"),
                    e => e.to_string(),
                })?;
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
                self.end_inherited_run(cx, child);
                Ok(Params::new().with("handed_over", Value::Bool(next.is_some())))
            }
        }
    }

    /// §4.2: the holder runs with the waiter's constraint "until it
    /// releases ownership of the last synchronization object in the
    /// chain": re-decides the graph VP if `child` ran there for someone
    /// else's constraint.
    fn end_inherited_run(&mut self, cx: &mut Cx, child: ChildId) {
        let State::Running(vp) = self.children[child].state else {
            return;
        };
        let (Some(Some(slot)), Some(cpu)) = (self.on_vp.get(vp.index()), self.cpus.get(vp.index()))
        else {
            return;
        };
        let inherited = match slot.tier {
            Tier::Constraint(c) => cpu.book.get(c).is_some_and(|i| i.thread != slot.child),
            _ => false,
        };
        if slot.child == child && inherited && matches!(cx.vp_state(vp), VpState::Held(_)) {
            cx.reschedule(vp);
        }
    }

    /// The platform's mutexes and RPCs (§4.2), without any message: a
    /// thread blocked on a mutex lends its constraint to the holder, a
    /// served RPC runs in the caller's activity with the caller's
    /// constraint, exactly as the `lock` / `block_on` / `unlock` and
    /// `rpc_call` / `rpc_reply` messages would have it, whatever the
    /// mutex's declared protocol. The book follows the platform: the
    /// platform, not the book, chooses who gets a released mutex.
    pub(super) fn platform_sync(&mut self, cx: &mut Cx, event: &SyncEvent<ChildId>) {
        let serial_of = |r: &Self, c: ChildId| r.children.get(c).map(|c| c.serial);
        match *event {
            SyncEvent::Acquired { thread, mutex, .. } => {
                let (Some(s), m) = (serial_of(self, thread), MutexKey::Platform(mutex)) else {
                    return;
                };
                if self.inherit.acquire(s, m).is_ok() {
                    self.children[thread].holds.insert(m);
                }
            }
            SyncEvent::Blocked { thread, mutex, .. } => {
                let Some(s) = serial_of(self, thread) else {
                    return;
                };
                // Held by a thread of another scheduler: nobody here to lend to.
                if self.inherit.block_on(s, MutexKey::Platform(mutex)).is_ok() {
                    self.preempt_if_needed(cx);
                }
            }
            SyncEvent::Released {
                thread, mutex, to, ..
            } => {
                let (Some(s), m) = (serial_of(self, thread), MutexKey::Platform(mutex)) else {
                    return;
                };
                if !self.children[thread].holds.remove(&m) {
                    return;
                }
                let to = to.and_then(|w| serial_of(self, w));
                if let Ok(Some(next)) = self.inherit.release_to(s, m, to) {
                    let c = self.by_serial[&next];
                    self.children[c].holds.insert(m);
                }
                self.end_inherited_run(cx, thread);
            }
            SyncEvent::CallServed { client, server } => {
                let (Some(c), Some(s)) = (serial_of(self, client), serial_of(self, server)) else {
                    return;
                };
                if self.inherit.call(c, s).is_ok() {
                    self.rehome(s);
                    self.recheck_graph_vp(cx, server);
                    self.preempt_if_needed(cx);
                }
            }
            SyncEvent::CallEnded { client, server } => {
                let (Some(c), Some(s)) = (serial_of(self, client), serial_of(self, server)) else {
                    return;
                };
                if self.inherit.client_of(s) != Some(c) || self.inherit.end_call(s).is_err() {
                    return;
                }
                self.rehome(s);
                let a = self.children[client].sched;
                self.note_blocked(cx, a);
                self.recheck_graph_vp(cx, server);
                self.preempt_if_needed(cx);
            }
        }
    }

    /// Releases `m` held by `serial`; the mutex goes to its first waiter
    /// still attached (returned), skipping threads that left.
    pub(super) fn unlock_as(&mut self, serial: u64, m: MutexKey) -> Option<ChildId> {
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

/// RPCs (§4.2): "RPC service threads ... belong to the caller's activity
/// and inherit all of the caller's scheduling attributes". Rialto creates a
/// service thread per call; here a thread that serves a port stands for it,
/// and is moved into the caller's activity for the duration of the call.
impl Rialto {
    /// `rpc_serve { port }`, `rpc_call { port }`, `rpc_reply`.
    fn rpc_msg(
        &mut self,
        cx: &mut Cx,
        child: ChildId,
        name: &str,
        args: &Params,
    ) -> Result<Params, String> {
        let serial = self.children[child].serial;
        if name == "rpc_reply" {
            let client = self.inherit.reply(serial).map_err(|e| match e {
                InheritError::NotServing => "the sender serves no call".to_string(),
                e => e.to_string(),
            })?;
            self.rehome(serial);
            // The caller's activity may be left with nothing runnable in its
            // own node, as if it had blocked (§4.5).
            if let Some(&c) = self.by_serial.get(&client) {
                let a = self.children[c].sched;
                self.note_blocked(cx, a);
            }
            self.recheck_graph_vp(cx, child);
            self.preempt_if_needed(cx);
            return Ok(Params::new());
        }
        let port = args.resolve(&port_params())?.int("port");
        if name == "rpc_serve" {
            if let Some(s) = self.ports.get(&port) {
                return Err(format!(
                    "port {port} already has a server ({})",
                    self.by_serial[s]
                ));
            }
            self.ports.insert(port, serial);
            self.children[child].ports.insert(port);
            return Ok(Params::new());
        }
        let server = *self
            .ports
            .get(&port)
            .ok_or_else(|| format!("port {port} has no server"))?;
        self.inherit.call(serial, server).map_err(|e| match e {
            InheritError::SelfCall => format!("the sender serves port {port} itself (a cycle)"),
            InheritError::Blocked => {
                "the sender itself waits (after `block_on` or an unanswered `rpc_call`)".into()
            }
            InheritError::ServerBusy if self.waits_for(server, serial) => {
                "the server waits for the sender (a cycle)".into()
            }
            InheritError::ServerBusy => "the server is busy with another call or blocked".into(),
            e => e.to_string(),
        })?;
        self.rehome(server);
        let s = self.by_serial[&server];
        self.recheck_graph_vp(cx, s);
        self.preempt_if_needed(cx);
        Ok(Params::new())
    }

    /// Whether `from`'s chain of waits leads to `to`.
    fn waits_for(&self, from: u64, to: u64) -> bool {
        let mut s = from;
        for _ in 0..=self.by_serial.len() {
            s = match self.inherit.waiting_for(s) {
                Some(Wait::Mutex(m)) => match self.inherit.holder(m) {
                    Some(h) => h,
                    None => return false,
                },
                Some(Wait::Reply(server)) => server,
                None => return false,
            };
            if s == to {
                return true;
            }
        }
        false
    }

    /// The activity the thread `serial` is scheduled in: that of the
    /// outermost caller of the calls it serves, else its own.
    pub(super) fn sched_of(&self, serial: u64) -> Option<Activity> {
        let top = self.inherit.activity_of(serial);
        Some(self.children[*self.by_serial.get(&top)?].activity)
    }

    /// Moves the thread `serial`, and the servers of the nested calls it
    /// makes, to the activity they are now scheduled in, after a call began
    /// or ended.
    fn rehome(&mut self, serial: u64) {
        let mut s = serial;
        for _ in 0..=self.by_serial.len() {
            let Some(&c) = self.by_serial.get(&s) else {
                return;
            };
            let own = self.children[c].activity;
            self.children[c].sched = self.sched_of(s).unwrap_or(own);
            self.reindex(c);
            match self.inherit.waiting_for(s) {
                Some(Wait::Reply(next)) => s = next,
                _ => return,
            }
        }
    }

    /// Re-decides the graph VP if `child` runs there for a reason that a
    /// call or a reply just ended: it left the activity of a rule-3 or
    /// rule-4 pick, or the constraint it inherited no longer leads to it.
    ///
    /// On any VP: re-decides it if `child` is now scheduled in an activity
    /// placed on another VP (an RPC server joining or leaving a placed
    /// caller's activity), so that it runs on that VP only.
    fn recheck_graph_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let State::Running(vp) = self.children[child].state else {
            return;
        };
        let v = vp.index();
        if !matches!(cx.vp_state(vp), VpState::Held(_)) {
            return;
        }
        let Some(Some(slot)) = self.on_vp.get(v).copied() else {
            return;
        };
        if slot.child != child {
            return;
        }
        if !self.may_run_on(child, v) {
            cx.reschedule(vp);
            return;
        }
        if !self.follows_graph(v) {
            return;
        }
        let now = cx.now();
        self.prepare_walk(now);
        let sched = self.children[child].sched;
        let stale = match slot.tier {
            Tier::Activity => self.node(v, now).2 != Some(sched),
            Tier::SecondChance(a) => a != sched,
            Tier::Constraint(c) => self.cpus[v]
                .book
                .get(c)
                .is_none_or(|i| i.thread != child && self.chain_end(i.thread) != Some(child)),
            Tier::Free => false,
        };
        if stale {
            cx.reschedule(vp);
        }
    }

    /// Checks the RPC state against the threads: each is scheduled in the
    /// activity its calls say, is in calls only with attached threads, and
    /// the ports name their servers.
    pub(super) fn check_calls(&self) -> Result<(), String> {
        let mut ports = 0;
        for (id, c) in self.children.iter() {
            if self.sched_of(c.serial) != Some(c.sched) {
                return Err(format!(
                    "{id} is scheduled in activity {} but its calls say {:?}",
                    c.sched,
                    self.sched_of(c.serial)
                ));
            }
            let peers = [
                self.inherit.client_of(c.serial),
                match self.inherit.waiting_for(c.serial) {
                    Some(Wait::Reply(s)) => Some(s),
                    _ => None,
                },
            ];
            if peers
                .into_iter()
                .flatten()
                .any(|s| !self.by_serial.contains_key(&s))
            {
                return Err(format!("{id} is in a call with a thread that left"));
            }
            for p in &c.ports {
                if self.ports.get(p) != Some(&c.serial) {
                    return Err(format!("{id} thinks it serves port {p}"));
                }
            }
            ports += c.ports.len();
        }
        if ports != self.ports.len() {
            return Err("a port's server left".into());
        }
        Ok(())
    }

    /// `child` leaves: its ports close, the call it makes ends (its server
    /// goes back to its own activity) and so does the call it serves (its
    /// caller waits no more).
    pub(super) fn hang_up(&mut self, cx: &mut Cx, child: ChildId) {
        let serial = self.children[child].serial;
        for port in std::mem::take(&mut self.children[child].ports) {
            self.ports.remove(&port);
        }
        if let Some(Wait::Reply(server)) = self.inherit.waiting_for(serial) {
            if self.inherit.end_call(server).is_ok() {
                self.rehome(server);
                if let Some(&s) = self.by_serial.get(&server) {
                    self.recheck_graph_vp(cx, s);
                }
            }
        }
        if self.inherit.end_call(serial).is_ok() {
            self.rehome(serial);
        }
    }
}

fn timer_key(id: ConstraintId) -> TimerKey {
    id.0 + 1
}
