//! The deadline-based scheduler itself, on the VPs it holds (`dbs` with
//! `multiprocessor = "one"`, and each VP's scheduler when partitioned):
//! its three tiers (reserved amounts, overruns, the leftover round robin),
//! its reservations' windows and timer, slack stealing, and the messages
//! that add and drop reservations. The module documentation of `dbs` says
//! what it does and why.

use super::admission::{self, Job};
use super::messages::{cancel_params, window, ALL_RESERVATIONS};
use crate::preempt::{Better, RunningSlots};
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, Params, ParentVp, Reject,
    Reply, Scheduler, Sender, TimerKey, Value,
};
use std::collections::{BTreeMap, BTreeSet};

/// The default leftover round-robin quantum.
pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);

/// The one timer: the next window start or deadline.
const EVENT_TIMER: TimerKey = 0;

/// At one instant, deadlines are handled before window starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Deadline,
    Start,
}

#[derive(Clone, Copy, Debug)]
struct Reservation {
    child: ChildId,
    start: Instant,
    deadline: Instant,
    amount: Duration,
    /// Not yet charged; zero only while it overruns (else it is dropped).
    remaining: Duration,
    /// The window has started.
    active: bool,
}

/// The service tiers, best first: an active reservation with an amount
/// left, an active one already served (with `overrun`), the round robin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    /// An overrun run ahead of the reserved amounts, on the slack they
    /// leave (`steal`): only ever the rank of a run, never of a queue entry.
    Steal,
    Reserved,
    Overrun,
    Leftover,
}

/// Service order: tier, then EDF (deadline, reservation id).
type Prio = (Tier, Instant, u64);
const LEFTOVER: Prio = (Tier::Leftover, Instant::NEVER, u64::MAX);

/// The queue entry a run stands for: a stealing run is its overrun.
fn queued(p: Prio) -> Prio {
    match p.0 {
        Tier::Steal => (Tier::Overrun, p.1, p.2),
        _ => p,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// Waiting in `edf` under its best active reservation.
    Edf(Prio),
    /// Waiting in `rr` under this sequence number.
    Rr(u64),
    Running(ParentVp),
}

#[derive(Clone, Debug)]
struct Child {
    state: State,
    /// What is left of the current round-robin slice.
    slice_left: Duration,
    /// Active reservations, as their `Prio`: best first.
    active: BTreeSet<Prio>,
    /// All reservations in force (pending and active), by id.
    reservations: BTreeSet<u64>,
    /// When it was last granted or charged: it has run since then uncharged.
    since: Instant,
}

impl Child {
    /// How it should run now: its best active reservation, or leftover.
    fn prio(&self) -> Prio {
        self.active.first().copied().unwrap_or(LEFTOVER)
    }
}

/// The deadline-based scheduler. See the module documentation.
#[derive(Clone, Debug)]
pub struct Dbs {
    quantum: Duration,
    /// Served reservations are kept, as overruns, until their deadline.
    overrun: bool,
    /// Overruns may run ahead of reserved amounts on their slack.
    steal: bool,
    children: ChildMap<Child>,
    reservations: BTreeMap<u64, Reservation>,
    next_id: u64,
    /// Pending window starts and deadlines of the reservations in force.
    events: BTreeSet<(Instant, Event, u64)>,
    /// When `EVENT_TIMER` is armed for (the first event).
    armed: Option<Instant>,
    edf: BTreeSet<(Prio, ChildId)>,
    rr: BTreeMap<u64, ChildId>,
    /// Round-robin order: the back counts up from the middle, the head down.
    head_seq: u64,
    back_seq: u64,
    /// What runs on each VP, ranked by the reservation it runs on (or
    /// `LEFTOVER`); the run's horizon.
    running: RunningSlots<Prio, Instant>,
    runnable: u32,
    served: u64,
    expired: u64,
    refused: u64,
}

const MIDDLE: u64 = u64::MAX / 2;

impl Dbs {
    /// A DBS whose leftover round-robin slice is `quantum` (> 0).
    pub fn new(quantum: Duration) -> Result<Self, String> {
        if quantum.is_zero() {
            return Err("`quantum` must be longer than zero".into());
        }
        Ok(Dbs {
            quantum,
            overrun: true,
            steal: false,
            children: ChildMap::new(),
            reservations: BTreeMap::new(),
            next_id: 0,
            events: BTreeSet::new(),
            armed: None,
            edf: BTreeSet::new(),
            rr: BTreeMap::new(),
            head_seq: MIDDLE,
            back_seq: MIDDLE + 1,
            running: RunningSlots::new(Better::Lower),
            runnable: 0,
            served: 0,
            expired: 0,
            refused: 0,
        })
    }

    /// With `overrun` (default true), a served reservation's child runs on,
    /// EDF, until its deadline; without, it joins the round robin at once.
    pub fn with_overrun(mut self, overrun: bool) -> Self {
        self.overrun = overrun;
        self
    }

    /// With `steal` (default false; needs `overrun`), a waiting overrun runs
    /// ahead of the reserved amounts for as long as every reservation in
    /// force can still be met: the slack of [`Self::slack`].
    pub fn with_steal(mut self, steal: bool) -> Self {
        self.steal = steal;
        self
    }

    /// Reservations that received their whole amount (zero amounts included).
    pub fn served(&self) -> u64 {
        self.served
    }
    /// Reservations that reached their deadline with an amount left.
    pub fn expired(&self) -> u64 {
        self.expired
    }
    /// Requests refused as infeasible.
    pub fn refused(&self) -> u64 {
        self.refused
    }
    /// Reservations in force (accepted, not yet served or over).
    pub fn in_force(&self) -> usize {
        self.reservations.len() - self.overrunning()
    }
    /// Reservations served but overrunning (before their deadline).
    pub fn overrunning(&self) -> usize {
        let over = |r: &&Reservation| r.remaining.is_zero();
        self.reservations.values().filter(over).count()
    }
    /// The amount reservation `id` still has to receive, if it is in force
    /// (zero while it overruns).
    pub fn remaining(&self, id: u64) -> Option<Duration> {
        self.reservations.get(&id).map(|r| r.remaining)
    }

    fn enqueue(&mut self, child: ChildId, at_head: bool) {
        let c = &mut self.children[child];
        if let Some(&p) = c.active.first() {
            c.state = State::Edf(p);
            self.edf.insert((p, child));
        } else {
            let seq = if at_head {
                self.head_seq -= 1;
                self.head_seq + 1
            } else {
                self.back_seq += 1;
                self.back_seq - 1
            };
            c.state = State::Rr(seq);
            self.rr.insert(seq, child);
        }
    }

    /// Whether `child` is one of this scheduler's.
    pub(crate) fn has_child(&self, child: ChildId) -> bool {
        self.children.contains(child)
    }

    /// Whether `child` holds a reservation in force.
    pub(crate) fn holds_reservations(&self, child: ChildId) -> bool {
        self.children
            .get(child)
            .is_some_and(|c| !c.reservations.is_empty())
    }

    fn unqueue(&mut self, child: ChildId) {
        match self.children[child].state {
            State::Edf(p) => _ = self.edf.remove(&(p, child)),
            State::Rr(seq) => _ = self.rr.remove(&seq),
            _ => {}
        }
    }

    /// Whatever ran on `vp` stopped. A child still runnable waits again:
    /// under its best active reservation, or round-robin (at the head
    /// with the rest of its slice if a leftover run was cut short).
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        let Some(run) = self.running.clear(vp) else {
            return;
        };
        let quantum = self.quantum;
        let c = &mut self.children[run.child()];
        if c.state != State::Running(vp) {
            return;
        }
        let leftover = run.rank() == LEFTOVER;
        let cut_short = leftover && !c.slice_left.is_zero() && now < run.data;
        if !cut_short && (leftover || c.slice_left.is_zero()) {
            c.slice_left = quantum;
        }
        self.enqueue(run.child(), cut_short);
    }

    fn forget_runnable(&mut self, child: ChildId) {
        match self.children[child].state {
            State::Idle => return,
            State::Edf(_) | State::Rr(_) => self.unqueue(child),
            State::Running(vp) => _ = self.running.clear(vp),
        }
        self.children[child].state = State::Idle;
        self.runnable -= 1;
    }

    /// `child`'s active reservations changed: a waiting child moves to the
    /// queue it now belongs in; a running one that no longer runs on its
    /// best active reservation (or should now run on one) is re-decided.
    fn refresh(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(c) = self.children.get(child) else {
            return;
        };
        let want = c.prio();
        match c.state {
            State::Edf(p) if p != want => {
                self.unqueue(child);
                self.enqueue(child, false);
            }
            State::Rr(_) if want != LEFTOVER => {
                self.unqueue(child);
                self.enqueue(child, false);
            }
            State::Running(vp)
                if self
                    .running
                    .get(vp)
                    .is_some_and(|r| !r.preempting() && queued(r.rank()) != want) =>
            {
                self.running.revoke(cx, vp);
            }
            _ => {}
        }
    }

    /// Removes reservation `id` everywhere. The caller refreshes its child.
    fn drop_reservation(&mut self, id: u64) -> Option<Reservation> {
        let r = self.reservations.remove(&id)?;
        self.events.remove(&(r.deadline, Event::Deadline, id));
        self.events.remove(&(r.start, Event::Start, id));
        if let Some(c) = self.children.get_mut(r.child) {
            c.reservations.remove(&id);
            c.active.remove(&(Tier::Reserved, r.deadline, id));
            c.active.remove(&(Tier::Overrun, r.deadline, id));
        }
        Some(r)
    }

    /// What reservation `id` still needs, counting as served the time its
    /// child has run on it since the last charge.
    fn left_now(&self, id: u64, now: Instant) -> Duration {
        let Some(r) = self.reservations.get(&id) else {
            return Duration::ZERO;
        };
        let c = &self.children[r.child];
        if let State::Running(vp) = c.state {
            let on_it = (Tier::Reserved, r.deadline, id);
            if self.running.get(vp).is_some_and(|run| run.rank() == on_it) {
                return r.remaining.saturating_sub(now.saturating_since(c.since));
            }
        }
        r.remaining
    }

    /// Starts the windows and ends the reservations that are due (a timer
    /// may fire late, with a tick), then re-arms the timer.
    fn process_due(&mut self, cx: &mut Cx) {
        let now = cx.now();
        let mut changed = false;
        while let Some(&(at, event, id)) = self.events.first() {
            if at > now {
                break;
            }
            self.events.pop_first();
            changed = true;
            match event {
                Event::Start => {
                    let Some(r) = self.reservations.get_mut(&id) else {
                        continue;
                    };
                    r.active = true;
                    let (child, key) = (r.child, (Tier::Reserved, r.deadline, id));
                    self.children[child].active.insert(key);
                    self.refresh(cx, child);
                }
                Event::Deadline => {
                    let served = self.left_now(id, now).is_zero();
                    if let Some(r) = self.drop_reservation(id) {
                        // (An overrun was counted when it was served.)
                        let over = r.remaining.is_zero();
                        self.served += u64::from(!over && served);
                        self.expired += u64::from(!over && !served);
                        self.refresh(cx, r.child);
                    }
                }
            }
        }
        if changed {
            self.preempt_if_needed(cx);
        }
        self.rearm(cx);
    }

    fn rearm(&mut self, cx: &mut Cx) {
        let next = self.events.first().map(|e| e.0);
        if next != self.armed {
            match next {
                Some(at) => cx.set_timer(EVENT_TIMER, at),
                None => cx.cancel_timer(EVENT_TIMER),
            }
            self.armed = next;
        }
    }

    /// The slack of the reservations in force at `now`: the longest time the
    /// CPU can go to something else now with every amount still met by its
    /// deadline, `min over deadlines b of (b - now - what is due by b)`.
    /// Exact for EDF on one CPU: blocking `[now, now + x)` leaves every
    /// interval `[a, b]` with `a >= now + x` as it was, and those that start
    /// earlier lose at most `x`, the worst being `[now, b]`, which holds
    /// everything due by `b` (a window not yet started counts as released
    /// now, as the blocking pushes it no later than its own start).
    pub fn slack(&self, now: Instant) -> Duration {
        let due = self
            .reservations
            .iter()
            .map(|(&id, r)| (r.deadline, self.left_now(id, now)))
            .filter(|&(d, left)| d > now && !left.is_zero())
            .collect();
        admission::slack(now, due)
    }

    /// With `steal`, when a reserved amount heads the queue: the earliest
    /// waiting overrun, to run on the slack (to its deadline at most).
    fn steal_pick(&self, now: Instant) -> Option<(Prio, ChildId, Instant)> {
        if !self.steal || self.edf.first()?.0 .0 != Tier::Reserved {
            return None;
        }
        let &(p, child) = self.edf.iter().find(|(p, _)| p.0 == Tier::Overrun)?;
        let slack = self.slack(now);
        (!slack.is_zero()).then(|| (p, child, now.saturating_add(slack).min(p.1)))
    }

    /// A new reservation may need time a stealing run was given: every
    /// such run is re-decided.
    fn end_steals(&mut self, cx: &mut Cx) {
        let stealing: Vec<ParentVp> = self
            .running
            .iter()
            .filter(|(_, r)| r.rank().0 == Tier::Steal && !r.preempting())
            .map(|(vp, _)| vp)
            .collect();
        for vp in stealing {
            self.running.revoke(cx, vp);
        }
    }

    /// While the earliest waiting reservation outranks the worst running
    /// child (leftover, or a later deadline), preempt that one. Idle held
    /// CPUs and CPUs being re-decided take the best waiting children first.
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        let waiting = self.edf.iter().map(|&(p, _)| p);
        self.running.preempt_if_needed(cx, waiting);
    }

    /// The EDF demand-bound test of one CPU over the reservations in force
    /// plus `new` = (deadline, release, amount).
    fn feasible(&self, now: Instant, new: (Instant, Instant, Duration)) -> Result<(), String> {
        self.load_with(now, Some(new)).0
    }

    /// The demand-bound test over the reservations in force plus `new` =
    /// (deadline, release, amount), and the load it sees: the largest
    /// `demand / (b - a)` over the intervals `[a, b]` (as (demand, b - a);
    /// (0, 1) with nothing in force). The test passes iff that is at most 1.
    pub(crate) fn load_with(
        &self,
        now: Instant,
        new: Option<(Instant, Instant, Duration)>,
    ) -> (Result<(), String>, (u64, u64)) {
        let mut jobs: Vec<Job> = Vec::new();
        for (&id, r) in &self.reservations {
            let left = self.left_now(id, now);
            if r.deadline > now && !left.is_zero() {
                jobs.push((r.deadline, r.start.max(now), left));
            }
        }
        jobs.extend(new);
        admission::load(jobs)
    }

    fn reserve(&mut self, cx: &mut Cx, child: ChildId, args: &Params) -> Result<Params, String> {
        let now = cx.now();
        let (start, deadline, amount) = window(now, args)?;
        self.process_due(cx);
        if !amount.is_zero() {
            if let Err(why) = self.feasible(now, (deadline, start.max(now), amount)) {
                self.refused += 1;
                return Err(format!("infeasible: {why}"));
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        let echo = Params::new()
            .with("id", Value::Int(id as i64))
            .with("start", Value::Duration(Duration(start.as_nanos())))
            .with("amount", Value::Duration(amount))
            .with("deadline", Value::Duration(Duration(deadline.as_nanos())));
        if amount.is_zero() {
            self.served += 1;
            return Ok(echo);
        }
        let active = start <= now;
        self.reservations.insert(
            id,
            Reservation {
                child,
                start,
                deadline,
                amount,
                remaining: amount,
                active,
            },
        );
        if self.steal {
            self.end_steals(cx);
        }
        let c = &mut self.children[child];
        c.reservations.insert(id);
        self.events.insert((deadline, Event::Deadline, id));
        if active {
            c.active.insert((Tier::Reserved, deadline, id));
            self.refresh(cx, child);
            self.preempt_if_needed(cx);
        } else {
            self.events.insert((start, Event::Start, id));
        }
        self.rearm(cx);
        Ok(echo)
    }

    fn cancel(&mut self, cx: &mut Cx, child: ChildId, args: &Params) -> Result<Params, String> {
        let args = args.resolve(&cancel_params())?;
        let ids: Vec<u64> = match args.int("id") {
            ALL_RESERVATIONS => self.children[child].reservations.iter().copied().collect(),
            id if self.children[child].reservations.contains(&(id as u64)) => vec![id as u64],
            id => return Err(format!("no reservation {id} of the sender is in force")),
        };
        for &id in &ids {
            self.drop_reservation(id);
        }
        self.refresh(cx, child);
        self.rearm(cx);
        Ok(Params::new().with("dropped", Value::Int(ids.len() as i64)))
    }
}

impl Scheduler for Dbs {
    fn policy(&self) -> &'static str {
        "dbs"
    }

    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, _params: &Params) -> Result<(), Reject> {
        self.children.insert(
            child,
            Child {
                state: State::Idle,
                slice_left: self.quantum,
                active: BTreeSet::new(),
                reservations: BTreeSet::new(),
                since: cx.now(),
            },
        );
        Ok(())
    }

    /// A child leaves; its reservations go with it.
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(c) = self.children.get(child) else {
            return;
        };
        let ids: Vec<u64> = c.reservations.iter().copied().collect();
        if c.state != State::Idle {
            self.forget_runnable(child);
            cx.want_cpus(self.runnable);
        }
        for id in ids {
            self.drop_reservation(id);
        }
        self.children.remove(child);
        self.rearm(cx);
    }

    /// A waking child waits under its best active reservation (and may
    /// preempt) or at the back of the round robin with a fresh slice.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        self.process_due(cx);
        let quantum = self.quantum;
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        c.slice_left = quantum;
        self.enqueue(child, false);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        if matches!(self.children[child].state, State::Edf(_)) {
            self.preempt_if_needed(cx);
        }
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state != State::Idle {
            self.forget_runnable(child);
            cx.want_cpus(self.runnable);
        }
    }

    /// The best tier, earliest deadline first: an amount until served or the
    /// deadline, an overrun until the deadline; else the round robin's head.
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.stop(vp, now);
        self.process_due(cx);
        let (child, prio, until) = if let Some((p, child, until)) = self.steal_pick(now) {
            self.edf.remove(&(p, child));
            (child, (Tier::Steal, p.1, p.2), until)
        } else if let Some((p, child)) = self.edf.pop_first() {
            let left = self.reservations[&p.2].remaining;
            let until = match p.0 {
                Tier::Reserved => now.saturating_add(left).min(p.1),
                _ => p.1,
            };
            (child, p, until)
        } else if let Some((_, child)) = self.rr.pop_first() {
            let slice = self.children[child].slice_left;
            (child, LEFTOVER, now.saturating_add(slice))
        } else {
            return Dispatch::Release;
        };
        let c = &mut self.children[child];
        c.state = State::Running(vp);
        c.since = now;
        self.running.place(vp, child, prio, until);
        // The child that stopped here may outrank one running elsewhere.
        self.preempt_if_needed(cx);
        Dispatch::Run { child, until }
    }

    /// The parent took a CPU: its child waits again and may outrank a
    /// child running on another of our CPUs.
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
        self.preempt_if_needed(cx);
    }

    /// Reserved time is taken from the reservation run on (served, it is
    /// dropped or, with `overrun`, overruns; the child goes on in place under
    /// its best one); leftover time from the slice; overrun time from nothing.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        c.since = cx.now();
        let State::Running(vp) = c.state else {
            return;
        };
        let Some(prio) = self.running.get(vp).map(|run| run.rank()) else {
            return;
        };
        if prio.0 != Tier::Reserved {
            if prio == LEFTOVER {
                c.slice_left = c.slice_left.saturating_sub(ran);
            }
            return;
        }
        let id = prio.2;
        let Some(r) = self.reservations.get_mut(&id) else {
            return;
        };
        r.remaining = r.remaining.saturating_sub(ran);
        if !r.remaining.is_zero() {
            return;
        }
        self.served += 1;
        if self.overrun {
            let c = &mut self.children[child];
            c.active.remove(&prio);
            c.active.insert((Tier::Overrun, prio.1, id));
        } else {
            self.drop_reservation(id);
        }
        let want = self.children[child].prio();
        self.running.rerank(vp, want);
        self.rearm(cx);
    }

    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        if key == EVENT_TIMER {
            self.armed = None;
        }
        self.process_due(cx);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        let name = msg.name.as_str();
        if name != "reserve" && name != "cancel" {
            return Reply::unknown(self.policy(), msg);
        }
        let Some(child) = from.child.filter(|&c| self.children.contains(c)) else {
            return Reply::Err(format!(
                "dbs: `{name}` is for the sender's own reservations: it must come from a \
                 child of this scheduler"
            ));
        };
        let result = if name == "reserve" {
            self.reserve(cx, child, &msg.args)
        } else {
            self.cancel(cx, child, &msg.args)
        };
        match result {
            Ok(args) => Reply::Ok(args),
            Err(e) => Reply::Err(format!("dbs: `{name}` refused: {e}")),
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        for (&id, r) in &self.reservations {
            let Some(c) = self.children.get(r.child) else {
                return Err(format!("reservation {id} belongs to unknown {}", r.child));
            };
            let start_event = self.events.contains(&(r.start, Event::Start, id));
            let over = r.remaining.is_zero();
            if !c.reservations.contains(&id)
                || (over && !(self.overrun && r.active))
                || r.remaining > r.amount
                || r.start >= r.deadline
                || !self.events.contains(&(r.deadline, Event::Deadline, id))
                || r.active == start_event
                || (r.active && !over) != c.active.contains(&(Tier::Reserved, r.deadline, id))
                || over != c.active.contains(&(Tier::Overrun, r.deadline, id))
            {
                return Err(format!(
                    "reservation {id} {r:?} is inconsistent (start event: {start_event})"
                ));
            }
        }
        for &(at, event, id) in &self.events {
            let ok = self.reservations.get(&id).is_some_and(|r| match event {
                Event::Start => at == r.start && !r.active,
                Event::Deadline => at == r.deadline,
            });
            if !ok {
                return Err(format!(
                    "stale event {event:?} at {at} for reservation {id}"
                ));
            }
        }
        if self.armed != self.events.first().map(|e| e.0) {
            return Err(format!(
                "timer armed for {:?}, next event {:?}",
                self.armed,
                self.events.first()
            ));
        }
        let (mut waiting, mut runnable) = (0usize, 0u32);
        for (child, c) in self.children.iter() {
            // Each active reservation has its one entry in `active` (checked
            // above): any other entry would show in the count.
            let mine = |id: &u64| self.reservations.get(id).filter(|r| r.child == child);
            let active = c.reservations.iter().filter_map(mine).filter(|r| r.active);
            if c.reservations.iter().any(|id| mine(id).is_none())
                || c.active.len() != active.count()
            {
                return Err(format!("{child}'s reservation sets are inconsistent"));
            }
            if !self.steal && self.running.iter().any(|(_, r)| r.rank().0 == Tier::Steal) {
                return Err("a run steals slack without `steal`".into());
            }
            if c.slice_left > self.quantum {
                return Err(format!("{child} has a slice longer than the quantum"));
            }
            let ok = match c.state {
                State::Idle => true,
                State::Edf(p) => p == c.prio() && self.edf.contains(&(p, child)),
                State::Rr(seq) => c.active.is_empty() && self.rr.get(&seq) == Some(&child),
                State::Running(vp) => self.running.child_on(vp) == Some(child),
            };
            if !ok {
                return Err(format!(
                    "{child} in state {:?} is not where it says",
                    c.state
                ));
            }
            if matches!(c.state, State::Edf(_) | State::Rr(_)) {
                waiting += 1;
                if c.slice_left.is_zero() {
                    return Err(format!("{child} waits with an empty slice"));
                }
            }
            if c.state != State::Idle {
                runnable += 1;
            }
        }
        let queued_ok =
            self.edf.iter().all(|&(p, child)| {
                self.children.get(child).map(|c| c.state) == Some(State::Edf(p))
            }) && self.rr.iter().all(|(&seq, &child)| {
                self.children.get(child).map(|c| c.state) == Some(State::Rr(seq))
            });
        if !queued_ok || waiting != self.edf.len() + self.rr.len() || runnable != self.runnable {
            return Err(format!(
                "queues hold {} + {} / count says {} runnable; states say {waiting} waiting, \
                 {runnable} runnable",
                self.edf.len(),
                self.rr.len(),
                self.runnable
            ));
        }
        self.running.check_runs(
            |id| self.children.get(id),
            |c| match c.state {
                State::Running(vp) => Some(vp),
                _ => None,
            },
            |vp, run, c| {
                if !run.preempting() && queued(run.rank()) != c.prio() {
                    return Err(format!(
                        "{} runs on {vp} under {:?} but should under {:?}",
                        run.child(),
                        run.rank(),
                        c.prio()
                    ));
                }
                Ok(())
            },
        )?;
        self.running.check_invariants()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{strategy, Harness, Parent};
    use proptest::prelude::*;

    const Q: Duration = DEFAULT_QUANTUM;

    proptest! {
        #[test]
        fn random_protocol_runs_keep_the_rules(
            overrun in any::<bool>(),
            steal in any::<bool>(),
            vps in 1u32..4,
            parent in strategy::parent(),
            steps in proptest::collection::vec(strategy::step(), 1..150),
        ) {
            let dbs = Dbs::new(Q).unwrap().with_overrun(overrun).with_steal(overrun && steal);
            let mut h = Harness::new(Box::new(dbs), vps, parent);
            for step in steps {
                h.step(step, &[Params::new()]);
                if parent != Parent::Manual {
                    h.assert_work_conserving();
                }
            }
        }
    }

    /// The slack is what the reservations in force leave, deadline by
    /// deadline, pending windows included.
    #[test]
    fn slack_is_the_least_room_over_the_deadlines() {
        let mut dbs = Dbs::new(Q).unwrap().with_steal(true);
        dbs.children.insert(
            ChildId(0),
            Child {
                state: State::Idle,
                slice_left: Q,
                active: BTreeSet::new(),
                reservations: BTreeSet::new(),
                since: Instant(0),
            },
        );
        let mut add = |id, start, amount, deadline| {
            dbs.reservations.insert(
                id,
                Reservation {
                    child: ChildId(0),
                    start: Instant(start),
                    deadline: Instant(deadline),
                    amount: Duration(amount),
                    remaining: Duration(amount),
                    active: start == 0,
                },
            );
        };
        add(0, 0, 50, 100);
        add(1, 20, 30, 60);
        // At 0: by 60, 30 due in 60 (30 spare); by 100, 80 due in 100 (20).
        assert_eq!(dbs.slack(Instant(0)), Duration(20));
        // At 20: 30 due in 40 (10 spare), 80 in 80 (none).
        assert_eq!(dbs.slack(Instant(20)), Duration::ZERO);
        assert_eq!(Dbs::new(Q).unwrap().slack(Instant(5)), Duration::MAX);
    }
}
