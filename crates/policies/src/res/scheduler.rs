//! The reservation scheduler itself: EDF over the children's current jobs
//! on the VPs it holds, throttling a child whose budget is spent until its
//! next job, and telling a parent its earliest deadline when it runs on a
//! uniformly slower processor.

use super::job::{Child, Kind, Rank, State};
use super::rate::Util;
use crate::preempt::{Better, RunningSlots};
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, Params, ParentVp, Reject,
    Reply, Scheduler, Sender, Share, TimerKey, Value,
};
use std::collections::BTreeSet;

/// The one timer: the next job change of a waiting child.
const EVENT_TIMER: TimerKey = 0;

/// The reservation scheduler. See the module documentation.
#[derive(Clone, Debug)]
pub struct Res {
    /// The speed of the processor this instance runs on.
    pub(super) rate: Share,
    pub(super) children: ChildMap<Child>,
    /// Sum of the children's utilizations.
    pub(super) reserved: Util,
    /// How many children are overrun partitions (they share the
    /// unreserved CPU when they wake late).
    pub(super) partitions: usize,
    /// Ready children by (rank, id): EDF order.
    pub(super) ready: BTreeSet<(Rank, ChildId)>,
    /// Waiting (ready or throttled) children by the time their job changes.
    pub(super) events: BTreeSet<(Instant, ChildId)>,
    pub(super) armed: Option<Instant>,
    /// What runs on each VP, ranked by its job's deadline; since when its
    /// run is not charged yet.
    pub(super) running: RunningSlots<Rank, Instant>,
    /// The earliest deadline last told to the parent.
    pub(super) announced: Option<Instant>,
    /// `multiprocessor = "global"`: admission by the Goossens-Funk-Baruah
    /// test on the VPs held, not by one CPU's worth.
    pub(super) global: bool,
}

impl Res {
    /// A reservation scheduler running on a processor of speed `rate`.
    pub fn new(rate: Share) -> Self {
        Res {
            rate,
            children: ChildMap::new(),
            reserved: Util::ZERO,
            partitions: 0,
            ready: BTreeSet::new(),
            events: BTreeSet::new(),
            armed: None,
            running: RunningSlots::new(Better::Lower),
            announced: None,
            global: false,
        }
    }

    /// Global EDF admitted by the Goossens-Funk-Baruah bound on the VPs it
    /// holds (see the module documentation).
    pub fn global(mut self) -> Self {
        self.global = true;
        self
    }

    /// The sum of the admitted utilizations.
    pub fn reserved(&self) -> Util {
        self.reserved
    }

    /// `child`'s current job: (release, deadline, budget left), as of the
    /// last event (a running child's budget is charged when its segment ends).
    pub fn job(&self, child: ChildId) -> Option<(Instant, Instant, Duration)> {
        let c = self.children.get(child)?;
        Some((c.release, c.deadline, c.budget))
    }

    /// Whether this instance tells its parent its deadlines (`rate` < 1).
    pub fn announces(&self) -> bool {
        !self.rate.is_one()
    }

    // ----- queues -------------------------------------------------------------

    fn set_event(&mut self, child: ChildId, at: Option<Instant>) {
        let c = &mut self.children[child];
        if let Some(old) = c.event.take() {
            self.events.remove(&(old, child));
        }
        if let Some(at) = at.filter(|t| !t.is_never()) {
            c.event = Some(at);
            self.events.insert((at, child));
        }
    }

    /// Takes a waiting child out of `ready` and `events`.
    fn unplace(&mut self, child: ChildId) {
        let c = &self.children[child];
        if c.state == State::Ready {
            self.ready.remove(&(c.rank(), child));
        }
        self.set_event(child, None);
    }

    /// Puts a runnable child that does not run where it belongs at `now`:
    /// ready if its job has budget it can use, else throttled until its
    /// job changes.
    fn place(&mut self, child: ChildId, now: Instant) {
        let rate = self.rate;
        let c = &mut self.children[child];
        c.advance(now);
        let usable = !c.deadline.is_never() && !rate.of(c.budget).is_zero();
        let (deadline, rank) = (c.deadline, c.rank());
        c.state = if usable {
            self.ready.insert((rank, child));
            State::Ready
        } else {
            State::Throttled
        };
        self.set_event(child, Some(deadline));
    }

    /// Whatever ran on `vp` stopped; a child still runnable waits again.
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        let Some(run) = self.running.clear(vp) else {
            return;
        };
        if self.children.get(run.child()).map(|c| c.state) == Some(State::Running(vp)) {
            self.place(run.child(), now);
        }
    }

    /// A child stopped wanting a CPU, or leaves.
    fn forget_runnable(&mut self, child: ChildId) {
        match self.children[child].state {
            State::Idle => return,
            State::Ready | State::Throttled => self.unplace(child),
            State::Running(vp) => {
                self.running.clear(vp);
            }
        }
        self.children[child].state = State::Idle;
    }

    /// Charges what `child` ran up to `now`, at most `ran`, and not what a
    /// message already charged of its current run.
    fn charge_running(&mut self, child: ChildId, ran: Duration, now: Instant) {
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        let mut ran = ran;
        if let State::Running(vp) = c.state {
            if let Some(since) = self.running.data_mut(vp) {
                ran = ran.min(now.saturating_since(*since));
                *since = now;
            }
        }
        let cost = self.rate.charge(ran);
        let paid = cost.min(c.budget);
        c.budget -= paid;
        c.debt = c.debt.saturating_add(cost - paid);
    }

    /// Changes a child's job outside `advance` (a message): a waiting child
    /// leaves its queues first and is placed again after; a running one
    /// has its CPU re-decided.
    pub(super) fn modify(&mut self, cx: &mut Cx, child: ChildId, change: impl FnOnce(&mut Child)) {
        let state = self.children[child].state;
        if matches!(state, State::Ready | State::Throttled) {
            self.unplace(child);
        }
        if let State::Running(_) = state {
            // What it ran so far belongs to the job it ran in.
            self.charge_running(child, Duration::MAX, cx.now());
        }
        change(&mut self.children[child]);
        match state {
            State::Ready | State::Throttled => self.place(child, cx.now()),
            State::Running(vp) => {
                self.running.revoke(cx, vp);
                self.running.rerank(vp, self.children[child].rank());
            }
            State::Idle => {}
        }
    }

    /// While the earliest ready deadline beats the latest running one,
    /// preempt that one (idle held CPUs and re-decisions take waiting
    /// children first).
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        let waiting = self.ready.iter().map(|&(r, _)| r);
        self.running.preempt_if_needed(cx, waiting);
    }

    /// Jobs that changed by now: move their children on.
    fn process_due(&mut self, now: Instant) {
        while let Some(&(at, child)) = self.events.first() {
            if at > now {
                break;
            }
            self.unplace(child);
            self.place(child, now);
        }
    }

    /// After every change: tell the parent the earliest deadline (before
    /// asking for CPUs, so a RESU parent has it when the request comes),
    /// ask for as many CPUs as children can run, re-arm the timer.
    fn sync(&mut self, cx: &mut Cx) {
        if self.announces() {
            let running = self.running.iter().map(|(_, run)| run.rank().0).min();
            let earliest = self
                .ready
                .first()
                .map(|e| e.0 .0)
                .into_iter()
                .chain(running)
                .min();
            if earliest.is_some() && earliest != self.announced {
                self.announced = earliest;
                let at = Duration(earliest.unwrap_or(Instant::NEVER).as_nanos());
                for vp in 0..cx.vp_count() {
                    cx.msg_parent(
                        ParentVp(vp),
                        Msg::new("deadline").arg("at", Value::Duration(at)),
                    );
                }
            }
        }
        let runnable = self.ready.len() + self.running.len();
        cx.want_cpus(runnable as u32);
        let next = self.events.first().map(|e| e.0);
        if next != self.armed {
            match next {
                Some(at) => cx.set_timer(EVENT_TIMER, at),
                None => cx.cancel_timer(EVENT_TIMER),
            }
            self.armed = next;
        }
    }
}

impl Scheduler for Res {
    fn policy(&self) -> &'static str {
        "res"
    }

    /// Admission: the child's utilization must fit beside the others'.
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let kind = Self::kind_from(params).map_err(Reject)?;
        let partition = params.get("overrun") == Some(&Value::Bool(true));
        if partition && !matches!(kind, Kind::Reserved { .. }) {
            return Err(Reject(
                "`overrun` makes a reservation an overrun partition: it needs `amount` and `period`, not `rate`".into(),
            ));
        }
        let what = match &kind {
            Kind::Reserved { amount, period, .. } => format!("RESBH {amount}, {period}"),
            Kind::Usp { rate, .. } => format!("RESU {rate}"),
            Kind::Nothing => String::new(),
        };
        if partition && self.global {
            return Err(Reject(
                "an overrun partition needs `multiprocessor` \"one\" or \"partitioned\": under global EDF the spare CPU it borrows when it wakes late is not one CPU's".into(),
            ));
        }
        let total = self
            .admit(None, kind.util(), &what, cx.vp_count())
            .map_err(Reject)?;
        let mut c = Child::new(kind);
        c.partition = partition;
        let now = cx.now();
        if let Kind::Reserved { origin, .. } = &mut c.kind {
            *origin = now;
        }
        self.reserved = total;
        self.partitions += usize::from(c.partition);
        c.deadline = match c.kind {
            Kind::Reserved { .. } => now, // the first `advance` starts window 0
            _ => Instant::NEVER,
        };
        self.children.insert(child, c);
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.children.contains(child) {
            return;
        }
        self.forget_runnable(child);
        let old = self.children[child].kind.util();
        self.reserved = self.reserved.checked_sub(old).unwrap_or(Util::ZERO);
        self.partitions -= usize::from(self.children[child].partition);
        self.children.remove(child);
        self.sync(cx);
    }

    /// A waking child keeps at most its share of the rest of its job (an
    /// overrun partition: with its part of the spare CPU added).
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let now = cx.now();
        let spare = match self.children[child].partition {
            true => self.spare_per_partition(),
            false => Util::ZERO,
        };
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        c.advance(now);
        let rest = match c.partition {
            false => c.share_of_rest(now),
            true => c.partition_share_of_rest(now, spare),
        };
        c.budget = c.budget.min(rest);
        self.place(child, now);
        self.preempt_if_needed(cx);
        self.sync(cx);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state == State::Idle {
            return;
        }
        self.forget_runnable(child);
        self.sync(cx);
    }

    /// The only place `res` chooses: the earliest deadline with budget runs
    /// until its budget or its job ends; with none, the CPU goes back.
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.stop(vp, now);
        self.process_due(now);
        let decision = match self.ready.pop_first() {
            Some((rank, child)) => {
                let c = &mut self.children[child];
                let until = now.saturating_add(self.rate.of(c.budget)).min(rank.0);
                c.state = State::Running(vp);
                self.set_event(child, None);
                self.running.place(vp, child, rank, now);
                Dispatch::Run { child, until }
            }
            None => Dispatch::Release,
        };
        self.preempt_if_needed(cx);
        self.sync(cx);
        decision
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
        self.preempt_if_needed(cx);
        self.sync(cx);
    }

    /// Budgets are in this processor's time: `ran` of CPU is `ran / rate`.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        self.charge_running(child, ran, cx.now());
    }

    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        if key != EVENT_TIMER {
            return;
        }
        self.armed = None;
        self.process_due(cx.now());
        self.preempt_if_needed(cx);
        self.sync(cx);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        let result = match msg.name.as_str() {
            "reserve" => self.reserve(cx, from, msg),
            "release" => self.release_reservation(cx, from, msg),
            "deadline" => self.deadline(cx, from, msg),
            "info" => return self.info(from, msg).map_or_else(Reply::Err, Reply::Ok),
            _ => return Reply::unknown(self.policy(), msg),
        };
        if result.is_ok() {
            self.preempt_if_needed(cx);
            self.sync(cx);
        }
        result.map_or_else(Reply::Err, Reply::Ok)
    }

    fn check_invariants(&self) -> Result<(), String> {
        let mut total = Util::ZERO;
        let mut ready = 0;
        let mut events = 0;
        for (child, c) in self.children.iter() {
            total = total
                .checked_add(c.kind.util())
                .ok_or("the utilization sum overflowed")?;
            if c.budget > c.full_budget() {
                return Err(format!(
                    "{child} has budget {} beyond its job's {}",
                    c.budget,
                    c.full_budget()
                ));
            }
            match &c.kind {
                Kind::Reserved { period, origin, .. } if c.deadline > *origin => {
                    let grid = c.release.saturating_since(*origin).as_nanos() % period.as_nanos();
                    if c.deadline.saturating_since(c.release) != *period || grid != 0 {
                        return Err(format!(
                            "{child}'s job [{}, {}) is not a window of its grid {} + k * {period}",
                            c.release, c.deadline, origin
                        ));
                    }
                }
                Kind::Usp { upcoming, .. }
                    if upcoming.first().is_some_and(|&u| u <= c.deadline) =>
                {
                    return Err(format!(
                        "{child} has an announced deadline before its job's"
                    ));
                }
                _ => {}
            }
            match c.state {
                State::Idle => {
                    if c.event.is_some() {
                        return Err(format!("{child} is idle but has an event"));
                    }
                }
                State::Ready => {
                    ready += 1;
                    if !self.ready.contains(&(c.rank(), child)) {
                        return Err(format!("{child} is ready but not queued"));
                    }
                    if self.rate.of(c.budget).is_zero() {
                        return Err(format!("{child} is ready without budget"));
                    }
                }
                State::Throttled => {
                    if !c.deadline.is_never() && !self.rate.of(c.budget).is_zero() {
                        return Err(format!("{child} is throttled with budget {}", c.budget));
                    }
                }
                State::Running(vp) => {
                    if self.running.child_on(vp) != Some(child) {
                        return Err(format!("{child} runs on {vp} but {vp} does not know it"));
                    }
                    if c.event.is_some() {
                        return Err(format!("{child} runs but has an event"));
                    }
                }
            }
            if let Some(at) = c.event {
                events += 1;
                if !self.events.contains(&(at, child)) {
                    return Err(format!("{child}'s event at {at} is not queued"));
                }
            }
        }
        if total != self.reserved || (!self.global && !total.at_most_one()) {
            return Err(format!(
                "reserved {} but the children sum to {total}",
                self.reserved
            ));
        }
        if ready != self.ready.len() || events != self.events.len() {
            return Err("a queue holds entries of children not in it".into());
        }
        let partitions = self.children.iter().filter(|(_, c)| c.partition).count();
        if partitions != self.partitions {
            return Err(format!(
                "{} overrun partitions counted, {partitions} among the children",
                self.partitions
            ));
        }
        for (vp, run) in self.running.iter() {
            let c = self
                .children
                .get(run.child())
                .ok_or_else(|| format!("{vp} runs {}, which is not registered", run.child()))?;
            if c.state != State::Running(vp) || c.rank() != run.rank() {
                return Err(format!("{vp} runs {} out of step with it", run.child()));
            }
        }
        self.running.check_invariants()
    }
}
