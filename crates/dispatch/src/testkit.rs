//! Drives one policy inside the real dispatcher, for the policy's tests
//! (feature `testkit`).
//!
//! - [`Host`] makes a [`Cx`] for one callback and hands back the effects
//!   the policy asked for, not applied: to check exactly what one callback
//!   does.
//! - [`Harness`] builds a one-policy hierarchy in a [`Dispatcher`] (the
//!   policy as the root, or under a parent the test plays: [`Parent`]),
//!   feeds it events (children join, wake, block and leave; messages;
//!   time passes) and reads back what the policy decided: which child runs
//!   on which VP and until when, the run segments charged, the effects it
//!   asked for, the timers it armed. Every child is a thread, and VP `i`
//!   is CPU `i`. Whatever the dispatcher ejects the policy for (an invalid
//!   answer or effect, a panic, a broken invariant, a livelock) fails the
//!   test with the dispatcher's reason.
//!
//! Two things reach the policy as the test gives them rather than through
//! the dispatcher: a child's attachment parameters (the dispatcher is told
//! the policy takes none, so nothing is resolved twice), and a message's
//! sender (the message goes as the operator's, so `join` and `leave` reach
//! the policy like any other message).

mod host;
mod probe;
mod stand;

pub use host::Host;
pub use probe::{Decision, Segment};

use crate::dispatcher::{Config, Dispatcher};
use crate::hierarchy::AttachLink;
use hsched_core::{
    ChildId, Dispatch, Duration, Effect, Fallback, Instant, Msg, Params, ParentVp, PolicyInfo,
    Registry, Reject, Reply, SchedId, Scheduler, Sender, ThreadId, TimerKey, Value, VpState,
};
use hsched_model::LogKind;
use probe::{Probe, Record};
use stand::{info, Screen, Sink, Stand, SINK_INFO, STAND_INFO};
use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;

/// Who the policy under test holds its VPs from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    /// The policy is the root: VP `i` is CPU `i` and always held. A
    /// `Release` answer leaves the CPU idle until `want_cpus`/`request`
    /// wakes it; `Idle { until }` idles it until `until`.
    Root,
    /// A parent that grants a requesting VP only when the test calls
    /// [`Harness::grant`] and takes it back on [`Harness::revoke`].
    Manual,
    /// A parent that grants every requesting VP at once. It still revokes
    /// when told.
    Eager,
}
#[derive(Clone, Copy)]
struct Child {
    thread: ThreadId,
    requesting: bool,
}

/// Runs one policy in a dispatcher. See the module documentation.
pub struct Harness<S: Scheduler + ?Sized + 'static> {
    policy: Rc<RefCell<Box<S>>>,
    record: Rc<RefCell<Record>>,
    disp: Dispatcher,
    screen: Screen,
    tested: SchedId,
    stand: Option<SchedId>,
    sink: SchedId,
    parent: Parent,
    vp_count: u32,
    start: Instant,
    /// Per child id: the thread it is, while registered.
    children: Vec<Option<Child>>,
    /// Per thread: the child id it had.
    threads: Vec<ChildId>,
    segments: Vec<Segment>,
    decisions: Vec<Decision>,
    blocks_involuntary: bool,
    /// Whether anything happened since the harness was made.
    touched: bool,
}

impl<S: Scheduler + ?Sized + 'static> Harness<S> {
    /// Wraps `sched` with `vp_count` VPs under `parent`, and calls `init` at
    /// time zero.
    pub fn new(sched: Box<S>, vp_count: u32, parent: Parent) -> Self {
        Self::new_at(sched, vp_count, parent, Instant::ZERO)
    }

    /// Like [`Harness::new`], with the instance created (and `init` called)
    /// at `start`.
    pub fn new_at(sched: Box<S>, vp_count: u32, parent: Parent, start: Instant) -> Self {
        assert!(vp_count >= 1, "a scheduler holds at least one VP");
        let record = Record {
            checking: true,
            runs: vec![None; vp_count as usize],
            ..Record::default()
        };
        let policy = Rc::new(RefCell::new(sched));
        let record = Rc::new(RefCell::new(record));
        let (disp, screen, tested, stand, sink) =
            Self::build(&policy, &record, vp_count, parent, start);
        let mut h = Harness {
            policy,
            record,
            disp,
            screen,
            tested,
            stand,
            sink,
            parent,
            vp_count,
            start,
            children: Vec::new(),
            threads: Vec::new(),
            segments: Vec::new(),
            decisions: Vec::new(),
            blocks_involuntary: false,
            touched: false,
        };
        h.check_ejections();
        h
    }

    /// A dispatcher holding the policy (and the test's parent, and the
    /// sink), its hierarchy settled at `start`.
    fn build(
        policy: &Rc<RefCell<Box<S>>>,
        record: &Rc<RefCell<Record>>,
        vp_count: u32,
        parent: Parent,
        start: Instant,
    ) -> (Dispatcher, Screen, SchedId, Option<SchedId>, SchedId) {
        let (tick, checking) = {
            let r = record.borrow();
            (r.tick, r.checking)
        };
        let cfg = Config {
            cpus: vp_count,
            tick,
            watchdog: None,
            check_invariants: checking,
        };
        let fallback = Fallback {
            shared: &SINK_INFO,
            machine: &SINK_INFO,
        };
        let mut disp = Dispatcher::new(cfg, Registry::new([], fallback));
        let mut screen = Screen {
            on_cpu: vec![None; vp_count as usize],
        };
        disp.advance(&mut screen, start);
        let name = policy.borrow().policy();
        let info: &'static PolicyInfo = Box::leak(Box::new(info(name, 1)));
        let probe = Box::new(Probe {
            policy: Rc::clone(policy),
            record: Rc::clone(record),
        });
        let made = |r: Result<SchedId, String>| r.expect("the harness builds its hierarchy");
        let (tested, stand) = match parent {
            Parent::Root => (made(disp.create_root_with(name, info, probe)), None),
            Parent::Manual | Parent::Eager => {
                let stand = Stand {
                    eager: parent == Parent::Eager,
                    requesting: vec![false; vp_count as usize],
                    granted: vec![false; vp_count as usize],
                };
                let stand = made(disp.create_root_with("parent", &STAND_INFO, Box::new(stand)));
                let tested = made(disp.create_with(name, info, probe, vp_count));
                let link = AttachLink {
                    parent: stand,
                    vps: vp_count,
                    params: Params::new(),
                };
                made(
                    disp.attach(&mut screen, start, tested, &[link])
                        .map(|()| tested),
                );
                (tested, Some(stand))
            }
        };
        let sink = made(disp.create_with("sink", &SINK_INFO, Box::new(Sink), 1));
        disp.set_default(sink);
        Self::settle(&mut disp, &mut screen, sink);
        // Not the test's: the dispatcher asks a new root on every CPU.
        record.borrow_mut().decisions.clear();
        (disp, screen, tested, stand, sink)
    }

    /// Lets the dispatcher finish what the last change started (a message
    /// to the sink: every message ends with the dispatcher settling).
    fn settle(disp: &mut Dispatcher, screen: &mut Screen, sink: SchedId) {
        let now = disp.now();
        disp.message(screen, now, None, sink, &Msg::new("settle"));
    }

    /// Builds the dispatcher again with the record's tick and checking
    /// mode; only before the first event (`init` is not called again: its
    /// effects are asked for again).
    fn rebuild(&mut self, what: &str) {
        assert!(!self.touched, "{what} before the first event");
        {
            let mut r = self.record.borrow_mut();
            r.effects.clear();
            r.decisions.clear();
            r.timers.clear();
            self.decisions.clear();
            r.runs = vec![None; self.vp_count as usize];
        }
        let (disp, screen, tested, stand, sink) = Self::build(
            &self.policy,
            &self.record,
            self.vp_count,
            self.parent,
            self.start,
        );
        (self.disp, self.screen) = (disp, screen);
        (self.tested, self.stand, self.sink) = (tested, stand, sink);
        self.check_ejections();
    }

    /// Collects what the probe recorded, and fails the test if the
    /// dispatcher ejected the policy.
    fn check_ejections(&mut self) {
        {
            let mut r = self.record.borrow_mut();
            self.segments.append(&mut r.segments);
            self.decisions.append(&mut r.decisions);
        }
        for entry in self.disp.take_log() {
            if entry.kind == LogKind::Eject {
                panic!("at {}: {}", entry.at, entry.text);
            }
        }
    }

    fn event(&mut self) -> (&mut Dispatcher, &mut Screen, Instant) {
        self.touched = true;
        let now = self.disp.now();
        (&mut self.disp, &mut self.screen, now)
    }

    // ----- views ----------------------------------------------------------------

    pub fn now(&self) -> Instant {
        self.disp.now()
    }
    pub fn sched(&self) -> Ref<'_, S> {
        Ref::map(self.policy.borrow(), |s| &**s)
    }
    pub fn sched_mut(&mut self) -> RefMut<'_, S> {
        RefMut::map(self.policy.borrow_mut(), |s| &mut **s)
    }
    pub fn vp_count(&self) -> u32 {
        self.vp_count
    }
    pub fn vp_state(&self, vp: ParentVp) -> VpState {
        self.disp.vp_states(self.tested)[vp.index()]
    }
    /// The child running on `vp`, if any.
    pub fn running_on(&self, vp: ParentVp) -> Option<ChildId> {
        let t = self.screen.on_cpu[vp.index()]?;
        let c = self.threads[t.index()];
        self.children[c.index()]
            .is_some_and(|k| k.thread == t)
            .then_some(c)
    }
    /// The horizon of what runs on `vp`.
    pub fn horizon(&self, vp: ParentVp) -> Option<Instant> {
        let child = self.running_on(vp)?;
        match self.record.borrow().runs[vp.index()] {
            Some((c, until)) if c == child => Some(until),
            _ => None,
        }
    }
    /// The VP `child` runs on, if it runs.
    pub fn where_runs(&self, child: ChildId) -> Option<ParentVp> {
        (0..self.vp_count())
            .map(ParentVp)
            .find(|&vp| self.running_on(vp) == Some(child))
    }
    pub fn is_registered(&self, child: ChildId) -> bool {
        matches!(self.children.get(child.index()), Some(Some(_)))
    }
    pub fn is_requesting(&self, child: ChildId) -> bool {
        matches!(self.children.get(child.index()), Some(Some(k)) if k.requesting)
    }
    /// Registered children, in id order.
    pub fn children(&self) -> Vec<ChildId> {
        (0..self.children.len() as u32)
            .map(ChildId)
            .filter(|&c| self.is_registered(c))
            .collect()
    }
    /// Children that are requesting a CPU (running or waiting).
    pub fn requesting(&self) -> Vec<ChildId> {
        (0..self.children.len() as u32)
            .map(ChildId)
            .filter(|&c| self.is_requesting(c))
            .collect()
    }
    /// How many children run now.
    pub fn running_count(&self) -> usize {
        (0..self.vp_count())
            .filter(|&vp| self.running_on(ParentVp(vp)).is_some())
            .count()
    }
    /// CPU time `child` received so far (finished segments only).
    pub fn cpu_time(&self, child: ChildId) -> Duration {
        self.record
            .borrow()
            .cpu_time
            .get(child.index())
            .copied()
            .unwrap_or(Duration::ZERO)
    }
    /// Every finished run segment, in the order they ended.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
    /// Every answer to a grant since the harness was made, in order.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }
    /// (time, child, horizon) of every `Run` answer, in order.
    pub fn runs(&self) -> Vec<(Instant, ChildId, Instant)> {
        self.decisions
            .iter()
            .filter_map(|d| match d.dispatch {
                Dispatch::Run { child, until } => Some((d.at, child, until)),
                _ => None,
            })
            .collect()
    }
    /// The time timer `key` is armed for.
    pub fn timer(&self, key: TimerKey) -> Option<Instant> {
        self.record.borrow().timers.get(&key).copied()
    }
    /// Every effect the policy asked for since the last call, in order.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.record.borrow_mut().effects)
    }
    /// Forgets the decisions recorded so far.
    pub fn clear_decisions(&mut self) {
        self.decisions.clear();
    }

    /// Gives the platform a clock tick (`None`: exact timers, the default):
    /// timers and horizons take effect at the first tick at or after their
    /// time, except a `Dispatch::Spin` horizon. Only before the first event.
    pub fn set_tick(&mut self, tick: Option<Duration>) {
        self.record.borrow_mut().tick = tick.filter(|t| !t.is_zero());
        self.rebuild("set the tick");
    }

    /// Turns the `check_invariants` call after every callback on or off (on
    /// by default). Off is for runs with very many children, where an O(n)
    /// check per callback would dominate; call [`Harness::check`] instead.
    /// Before the first event it also turns the dispatcher's own structural
    /// checks off.
    pub fn set_checking(&mut self, on: bool) {
        self.record.borrow_mut().checking = on;
        if !self.touched {
            self.rebuild("set the checking");
        }
    }

    /// Runs the policy's `check_invariants` now, panicking on an error.
    pub fn check(&self) {
        let s = self.sched();
        if let Err(e) = s.check_invariants() {
            panic!("{} broke its invariants at {}: {e}", s.policy(), self.now());
        }
    }

    // ----- events -----------------------------------------------------------------

    /// A child joins with `params` (given to the policy as they are). The
    /// id is the lowest free one, as the dispatcher hands out.
    pub fn register(&mut self, params: &Params) -> Result<ChildId, Reject> {
        self.record.borrow_mut().params = params.clone();
        self.record.borrow_mut().registered = None;
        let tested = self.tested;
        let sink = self.sink;
        let name = format!("child-{}", self.threads.len());
        let (disp, screen, now) = self.event();
        let (t, _) = disp.add_thread(now, &name, tested, &Params::new());
        Self::settle(disp, screen, sink);
        self.check_ejections();
        let (child, answer) = self
            .record
            .borrow_mut()
            .registered
            .take()
            .expect("the policy was asked to register the child");
        debug_assert_eq!(t.index(), self.threads.len());
        self.threads.push(child);
        answer?;
        if self.children.len() <= child.index() {
            self.children.resize(child.index() + 1, None);
        }
        self.children[child.index()] = Some(Child {
            thread: t,
            requesting: false,
        });
        let mut record = self.record.borrow_mut();
        if record.cpu_time.len() <= child.index() {
            record.cpu_time.resize(child.index() + 1, Duration::ZERO);
        }
        record.cpu_time[child.index()] = Duration::ZERO;
        Ok(child)
    }

    fn thread(&self, child: ChildId, what: &str) -> ThreadId {
        match self.children.get(child.index()) {
            Some(Some(k)) => k.thread,
            _ => panic!("{what}: {child} is not registered"),
        }
    }

    /// A child leaves (moved out of the policy, which hears
    /// `unregister_vp`). If it ran, its segment is charged first and its
    /// CPU is re-decided afterwards.
    pub fn unregister(&mut self, child: ChildId) {
        let t = self.thread(child, "unregister");
        self.children[child.index()] = None;
        let sink = self.sink;
        let (disp, screen, now) = self.event();
        disp.move_thread(screen, now, t, sink, &Params::new())
            .expect("the sink takes every thread");
        self.check_ejections();
    }

    /// A child asks for a CPU (a thread wakes).
    pub fn wake(&mut self, child: ChildId) {
        let t = self.thread(child, "wake");
        assert!(!self.is_requesting(child), "wake: {child} already requests");
        self.set_requesting(child, true);
        let (disp, screen, now) = self.event();
        disp.thread_ready(screen, now, t);
        self.check_ejections();
    }

    fn set_requesting(&mut self, child: ChildId, on: bool) {
        if let Some(Some(k)) = self.children.get_mut(child.index()) {
            k.requesting = on;
        }
    }

    /// A child stops asking (a thread blocks). If it ran, its segment is
    /// charged, then `vp_release`, then its CPU is re-decided.
    pub fn block(&mut self, child: ChildId) {
        self.block_as(child, self.blocks_involuntary);
    }

    /// From now on, every [`Harness::block`] (also the ones random
    /// [`Step`]s make) is involuntary, or voluntary again.
    pub fn set_blocks_involuntary(&mut self, on: bool) {
        self.blocks_involuntary = on;
    }

    /// Like [`Harness::block`], for an involuntary block (a page fault):
    /// `Cx::involuntary()` is set in the `vp_release`.
    pub fn block_involuntary(&mut self, child: ChildId) {
        self.block_as(child, true);
    }

    fn block_as(&mut self, child: ChildId, involuntary: bool) {
        let t = self.thread(child, "block");
        assert!(self.is_requesting(child), "block: {child} does not request");
        self.set_requesting(child, false);
        let (disp, screen, now) = self.event();
        match involuntary {
            true => disp.thread_fault(screen, now, t),
            false => disp.thread_block(screen, now, t),
        }
        self.check_ejections();
    }

    /// A message to the policy, answered at once, its effects applied by
    /// the dispatcher. `from`: the sending child (a thread, whose
    /// `ThreadId` the policy sees as the child's index, or a child
    /// scheduler with `thread: None` — see [`Harness::message_from`]);
    /// `None`: the operator.
    pub fn message(&mut self, from: Option<ChildId>, msg: &Msg) -> Reply {
        let sender = Sender {
            thread: from.map(|c| ThreadId(c.0)),
            child: from,
        };
        self.message_from(sender, msg)
    }

    /// A message with an explicit sender.
    pub fn message_from(&mut self, sender: Sender, msg: &Msg) -> Reply {
        self.record.borrow_mut().sender = Some(sender);
        let tested = self.tested;
        let (disp, screen, now) = self.event();
        let reply = disp.message(screen, now, None, tested, msg);
        self.record.borrow_mut().sender = None;
        self.check_ejections();
        reply
    }

    /// Tells the test's parent to do `what` (`grant`, `revoke`) to `vp`.
    fn tell_parent(&mut self, what: &str, vp: ParentVp) {
        let stand = self.stand.expect("the test plays the parent");
        let msg = Msg::new(what).arg("vp", Value::Int(i64::from(vp.0)));
        let (disp, screen, now) = self.event();
        disp.message(screen, now, None, stand, &msg);
        self.check_ejections();
    }

    /// The parent grants the CPU on a requesting `vp` (not at the root).
    pub fn grant(&mut self, vp: ParentVp) {
        assert!(
            self.parent != Parent::Root,
            "the root's CPUs are always held"
        );
        assert_eq!(
            self.vp_state(vp),
            VpState::Requesting,
            "grant: {vp} does not request"
        );
        self.tell_parent("grant", vp);
    }

    /// The parent takes back the CPU held on `vp` (not at the root): what ran
    /// there is charged, the VP goes back to requesting, `vp_revoke` follows.
    pub fn revoke(&mut self, vp: ParentVp) {
        assert!(
            self.parent != Parent::Root,
            "nobody revokes the root's CPUs"
        );
        assert!(
            matches!(self.vp_state(vp), VpState::Held(_)),
            "revoke: {vp} is not held"
        );
        self.tell_parent("revoke", vp);
    }

    /// Advances virtual time to `t`, handling every horizon, idle wake-up and
    /// timer due on the way, in the dispatcher's order.
    pub fn advance_to(&mut self, t: Instant) {
        assert!(t >= self.now(), "time goes forward");
        let (disp, screen, _) = self.event();
        // As a platform does: each timer at its own time.
        while let Some(at) = disp.next_deadline().filter(|&at| at <= t) {
            disp.advance(screen, at);
        }
        disp.advance(screen, t);
        self.check_ejections();
    }

    /// Advances virtual time by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.advance_to(self.now() + d);
    }

    /// The next time something is due, if anything is.
    pub fn next_due(&self) -> Option<Instant> {
        let horizons = (0..self.vp_count).filter_map(|vp| self.horizon(ParentVp(vp)));
        let timers = self.record.borrow().timers.values().copied().min();
        horizons
            .chain(timers)
            .chain(self.disp.next_deadline())
            .filter(|at| !at.is_never() && *at >= self.now())
            .min()
    }

    /// Checks the answer a work-conserving policy owes: as many children run
    /// as there are requesting children, up to the CPUs it could get. Only
    /// meaningful with a parent that grants (`Root`, `Eager`).
    pub fn assert_work_conserving(&self) {
        let want = self.requesting().len().min(self.vp_count() as usize);
        assert_eq!(
            self.running_count(),
            want,
            "{}: at {} {} children request a CPU and {} VPs exist, but {} run",
            self.sched().policy(),
            self.now(),
            self.requesting().len(),
            self.vp_count(),
            self.running_count()
        );
    }
}

/// A random step for property tests, decoded against the harness state by
/// [`Harness::step`]: indices are taken modulo whatever they pick from, and
/// a step that does not apply (waking a child that already requests, ...)
/// does nothing.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Register a child with the parameter set `n` of the test's list.
    Register(u8),
    Unregister(u8),
    Wake(u8),
    Block(u8),
    /// Grant the `n`-th requesting VP (not at the root).
    Grant(u8),
    /// Revoke the `n`-th held VP (not at the root).
    Revoke(u8),
    /// Advance time by this many microseconds.
    Advance(u32),
}

impl<S: Scheduler + ?Sized + 'static> Harness<S> {
    /// Applies one random [`Step`]; `params` are the parameter sets a
    /// `Register` step picks from (at least one).
    pub fn step(&mut self, step: Step, params: &[Params]) {
        let pick =
            |list: Vec<ChildId>, n: u8| (!list.is_empty()).then(|| list[n as usize % list.len()]);
        match step {
            Step::Register(n) => {
                let _ = self.register(&params[n as usize % params.len()]);
            }
            Step::Unregister(n) => {
                if let Some(c) = pick(self.children(), n) {
                    self.unregister(c);
                }
            }
            Step::Wake(n) => {
                let idle: Vec<ChildId> = self
                    .children()
                    .into_iter()
                    .filter(|&c| !self.is_requesting(c))
                    .collect();
                if let Some(c) = pick(idle, n) {
                    self.wake(c);
                }
            }
            Step::Block(n) => {
                if let Some(c) = pick(self.requesting(), n) {
                    self.block(c);
                }
            }
            Step::Grant(n) => {
                if self.parent == Parent::Root {
                    return;
                }
                let vps: Vec<ParentVp> = (0..self.vp_count())
                    .map(ParentVp)
                    .filter(|&v| self.vp_state(v) == VpState::Requesting)
                    .collect();
                if !vps.is_empty() {
                    self.grant(vps[n as usize % vps.len()]);
                }
            }
            Step::Revoke(n) => {
                if self.parent == Parent::Root {
                    return;
                }
                let vps: Vec<ParentVp> = (0..self.vp_count())
                    .map(ParentVp)
                    .filter(|&v| matches!(self.vp_state(v), VpState::Held(_)))
                    .collect();
                if !vps.is_empty() {
                    self.revoke(vps[n as usize % vps.len()]);
                }
            }
            Step::Advance(us) => self.advance(Duration::from_micros(u64::from(us))),
        }
    }
}

/// CPU time per period `[origin + k*period, ...)` from the segments, in
/// nanoseconds (a budget's or a reservation's test).
pub fn usage_per_period(segments: &[Segment], origin: Instant, period: Duration) -> Vec<u64> {
    let p = period.as_nanos();
    let mut usage: Vec<u64> = Vec::new();
    for s in segments {
        let (mut t, end) = (
            s.start.as_nanos() - origin.as_nanos(),
            s.end.as_nanos() - origin.as_nanos(),
        );
        while t < end {
            let k = (t / p) as usize;
            let stop = end.min((k as u64 + 1) * p);
            if usage.len() <= k {
                usage.resize(k + 1, 0);
            }
            usage[k] += stop - t;
            t = stop;
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsched_core::{CpuId, Cx, Dispatch};

    /// The smallest possible policy, to test the harness itself: runs child 0
    /// whenever it requests, on any VP, and rejects nothing.
    struct One {
        requesting: bool,
        running: Option<ParentVp>,
    }

    impl Scheduler for One {
        fn policy(&self) -> &'static str {
            "one"
        }
        /// Any message asks for a CPU (whether or not a child wants one).
        fn msg(&mut self, cx: &mut Cx, _: Sender, _: &Msg) -> Reply {
            cx.want_cpus(1);
            Reply::ok()
        }
        fn register_vp(&mut self, _: &mut Cx, _: ChildId, _: &Params) -> Result<(), Reject> {
            Ok(())
        }
        fn unregister_vp(&mut self, _: &mut Cx, _: ChildId) {}
        fn vp_request(&mut self, cx: &mut Cx, _: ChildId) {
            self.requesting = true;
            cx.want_cpus(1);
        }
        fn vp_release(&mut self, cx: &mut Cx, _: ChildId) {
            self.requesting = false;
            self.running = None;
            cx.want_cpus(0);
        }
        fn vp_grant(&mut self, _: &mut Cx, vp: ParentVp, _: CpuId) -> Dispatch {
            if self.running == Some(vp) {
                self.running = None;
            }
            if self.requesting && self.running.is_none() {
                self.running = Some(vp);
                Dispatch::Run {
                    child: ChildId(0),
                    until: Instant::NEVER,
                }
            } else {
                Dispatch::Release
            }
        }
    }

    #[test]
    fn host_collects_effects() {
        let host = Host::new(2);
        let mut one = One {
            requesting: false,
            running: None,
        };
        let ((), effects) = host.call(&mut one, |s, cx| s.vp_request(cx, ChildId(0)));
        assert_eq!(effects, vec![Effect::WantCpus(1)]);
    }

    #[test]
    fn eager_parent_grants_and_charges() {
        let one = One {
            requesting: false,
            running: None,
        };
        let mut h = Harness::new(Box::new(one), 1, Parent::Eager);
        let c = h.register(&Params::new()).unwrap();
        h.wake(c);
        assert_eq!(h.running_on(ParentVp(0)), Some(c));
        h.advance(Duration::from_millis(3));
        h.block(c);
        assert_eq!(h.cpu_time(c), Duration::from_millis(3));
        assert_eq!(h.vp_state(ParentVp(0)), VpState::Idle);
    }

    #[test]
    #[should_panic(expected = "did not request")]
    fn rejects_a_run_of_a_child_that_does_not_request() {
        let one = One {
            requesting: false,
            running: None,
        };
        let mut h = Harness::new(Box::new(one), 1, Parent::Root);
        h.register(&Params::new()).unwrap();
        // The policy believes child 0 requests; the dispatcher knows it
        // does not, and ejects it for running it.
        h.sched_mut().requesting = true;
        h.message(None, &Msg::new("poke"));
    }
}
