//! `rcsp`: rate-controlled static precedence.
//!
//! **Source.** Yau & Lam, "Decoupled delay and rate guarantees..." §4,
//! Definition 1 (RCSP-eligibility) and §4.1 (Figures 5 and 6).
//!
//! **Algorithm.** Finish values are FRC's (the shared [`crate::frc`]
//! ledger: L1–L8, the same rates, quanta, minimum quantum and service
//! classes). A child `i` is *eligible* iff `f_i ≤ min{f_j : j ∈ Δ} +
//! w_i/r_i`. At a decision the eligible waiting child with the highest
//! precedence runs, i.e. the smallest `precedence` value as in the paper
//! (100 before 101 before 102); among equal precedence the one with the
//! smallest `f_i - w_i/r_i` (the most eligible), then the earliest queued.
//! A decision lasts the child's work quantum `w`. A waking eligible child
//! preempts the running child of lowest precedence if its own precedence is
//! strictly higher; equal or lower precedence never preempts (§4.1: no
//! eager preemption, hence little context switch overhead). If no waiting
//! child is eligible (possible only on several CPUs, where the minimum may
//! be running) the most eligible one runs, to stay work conserving.
//!
//! **Guarantees.** §4 states that Theorem 1 holds whatever order the
//! eligible threads are chosen in. With quanta as long as FRC's it holds
//! here with `q_j = 2 w_j` (+ tick), not `w_j`: an eligible child may lead
//! the slowest by `w/r` and is then dispatched for a whole quantum (two
//! threads at rate 0.01, `w` = 1ms: the lower precedence one waits 3ms at
//! the start, where bound (3) with `q = w` promises 0.5ms of service); the
//! property test in `crates/sim/tests/frc.rs` checks (3) and (4) with
//! `2 w`. Low rate
//! threads of high precedence wait at most for a charge to end, not a
//! competitor's work quantum (Figure 6). **Limits.** One CPU for the
//! bounds. Cost: O(p log n) per decision with `p` distinct precedence
//! values among the waiting children (few in practice); a join or leave in
//! a service class re-keys the class's waiting members.

use crate::frc::{common_child_params, common_params, Ledger, State};
use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params, ParentVp,
    PolicyInfo, Reject, Scheduler, Value,
};
use std::collections::{BTreeMap, BTreeSet};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "rcsp",
    summary: "rate-controlled static precedence: FRC eligibility, then precedence",
    doc: "Yau & Lam's RCSP (section 4): FRC finish values (child `rate`, `quantum`, \
          optional service `classes`) decide only eligibility, f <= min f + w/r; the \
          eligible child with the smallest `precedence` runs for its quantum, and a \
          waking eligible child preempts strictly lower precedence at once. Keeps \
          FRC's throughput bound; gives low-rate, high-precedence threads low delay.",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

pub const DEFAULT_PRECEDENCE: i64 = 100;

fn params() -> Vec<ParamSpec> {
    common_params()
}

fn child_params() -> Vec<ParamSpec> {
    let mut v = common_child_params();
    v.push(
        ParamSpec::new(
            "precedence",
            ParamKind::Int {
                min: 0,
                max: i64::from(u32::MAX),
            },
            "static precedence: smaller runs first among eligible children",
        )
        .with_default(Value::Int(DEFAULT_PRECEDENCE)),
    );
    v
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(Rcsp::new(Ledger::from_params(params)?)))
}

/// Eligibility key `f - w/r` (may be below zero).
type Key = i128;

/// The RCSP scheduler. See the module documentation.
#[derive(Debug)]
pub struct Rcsp {
    ledger: Ledger,
    /// Waiting children per precedence, by (eligibility key, queue order).
    ready: BTreeMap<i64, BTreeSet<(Key, u64, ChildId)>>,
    /// What runs on each VP, and since when (its last charge).
    running: BTreeMap<ParentVp, (ChildId, Instant)>,
    runnable: u32,
}

impl Rcsp {
    /// An RCSP scheduler from unchecked policy parameters (`min_quantum`,
    /// `classes`), resolved against the declaration.
    pub fn with_params(params: &Params) -> Result<Self, String> {
        Ok(Rcsp::new(Ledger::from_unchecked(params)?))
    }

    fn new(ledger: Ledger) -> Self {
        Rcsp {
            ledger,
            ready: BTreeMap::new(),
            running: BTreeMap::new(),
            runnable: 0,
        }
    }

    /// `child`'s finish value.
    pub fn finish(&self, child: ChildId) -> Option<u128> {
        self.ledger.accounts.get(child).map(|a| a.finish)
    }

    /// `child`'s precedence (smaller runs first).
    pub fn precedence(&self, child: ChildId) -> Option<i64> {
        self.ledger.accounts.get(child).map(|a| a.precedence)
    }

    /// Whether `child` is RCSP-eligible now (Definition 1).
    pub fn eligible(&self, child: ChildId) -> bool {
        self.key(child) <= self.ledger.min_finish() as Key
    }

    fn key(&self, child: ChildId) -> Key {
        let a = &self.ledger.accounts[child];
        a.finish as Key - a.lead() as Key
    }

    fn enqueue(&mut self, child: ChildId) {
        let seq = self.ledger.seq();
        let key = self.key(child);
        let a = &mut self.ledger.accounts[child];
        a.state = State::Waiting { seq };
        self.ready
            .entry(a.precedence)
            .or_default()
            .insert((key, seq, child));
    }

    fn dequeue(&mut self, child: ChildId) {
        let a = &self.ledger.accounts[child];
        if let State::Waiting { seq } = a.state {
            let (prec, key) = (a.precedence, self.key(child));
            if let Some(level) = self.ready.get_mut(&prec) {
                level.remove(&(key, seq, child));
                if level.is_empty() {
                    self.ready.remove(&prec);
                }
            }
        }
    }

    fn stop(&mut self, vp: ParentVp) {
        if let Some((child, _)) = self.running.remove(&vp) {
            if self.ledger.accounts.get(child).map(|a| a.state) == Some(State::Running(vp)) {
                self.enqueue(child);
            }
        }
    }

    /// The highest-precedence eligible waiting child, else the most
    /// eligible one.
    fn pick(&self) -> Option<ChildId> {
        let min = self.ledger.min_finish() as Key;
        let mut fallback: Option<(Key, u64, ChildId)> = None;
        for level in self.ready.values() {
            let &first = level.first()?;
            if first.0 <= min {
                return Some(first.2);
            }
            if fallback.is_none_or(|f| first < f) {
                fallback = Some(first);
            }
        }
        fallback.map(|f| f.2)
    }

    /// The members of a service class changed rate: their keys moved.
    fn rekey_waiting(&mut self) {
        let waiting: Vec<ChildId> = self
            .ready
            .values()
            .flat_map(|l| l.iter().map(|e| e.2))
            .collect();
        self.ready.clear();
        for child in waiting {
            if let State::Waiting { seq } = self.ledger.accounts[child].state {
                let key = self.key(child);
                let prec = self.ledger.accounts[child].precedence;
                self.ready
                    .entry(prec)
                    .or_default()
                    .insert((key, seq, child));
            }
        }
    }

    fn remove_runnable(&mut self, child: ChildId) {
        match self.ledger.accounts[child].state {
            State::Idle => return,
            State::Waiting { .. } => self.dequeue(child),
            State::Running(vp) => {
                self.running.remove(&vp);
            }
        }
        self.ledger.block(child);
        self.runnable -= 1;
    }
}

impl Scheduler for Rcsp {
    fn policy(&self) -> &'static str {
        "rcsp"
    }

    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        self.ledger.admit("rcsp", child, params)?;
        if !self.ledger.classes.is_empty() {
            self.rekey_waiting();
        }
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.ledger.accounts.contains(child) {
            return;
        }
        if self.ledger.accounts[child].state != State::Idle {
            self.remove_runnable(child);
            cx.want_cpus(self.runnable);
        }
        self.ledger.leave(child);
        if !self.ledger.classes.is_empty() {
            self.rekey_waiting();
        }
    }

    /// L1–L4; an eligible wakeup preempts the running child of lowest
    /// precedence if that is strictly lower than its own.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if self.ledger.accounts[child].state != State::Idle {
            return;
        }
        let now = cx.now();
        let running: Vec<(ChildId, Duration)> = self
            .running
            .values()
            .map(|&(c, since)| (c, now.saturating_since(since)))
            .collect();
        let min = self.ledger.min_now(&running);
        self.ledger.wake(child, min);
        self.enqueue(child);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        let eligible = self.key(child) <= min as Key;
        if (self.running.len() as u32) < cx.vp_count() || !eligible {
            return;
        }
        let mine = self.ledger.accounts[child].precedence;
        let victim = self
            .running
            .iter()
            .map(|(&vp, &(c, _))| (self.ledger.accounts[c].precedence, vp))
            .max();
        if let Some((theirs, vp)) = victim {
            if theirs > mine {
                cx.reschedule(vp);
            }
        }
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.ledger.accounts[child].state != State::Idle {
            self.remove_runnable(child);
            cx.want_cpus(self.runnable);
        }
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        self.stop(vp);
        let Some(child) = self.pick() else {
            return Dispatch::Release;
        };
        self.dequeue(child);
        let a = &mut self.ledger.accounts[child];
        a.state = State::Running(vp);
        let until = cx.now().saturating_add(a.quantum);
        self.running.insert(vp, (child, cx.now()));
        Dispatch::Run { child, until }
    }

    fn vp_revoke(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp);
    }

    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        if !self.ledger.accounts.contains(child) {
            return;
        }
        if let State::Running(vp) = self.ledger.accounts[child].state {
            if let Some(r) = self.running.get_mut(&vp) {
                r.1 = cx.now();
            }
        }
        let waiting = matches!(self.ledger.accounts[child].state, State::Waiting { .. });
        if waiting {
            self.dequeue(child);
        }
        self.ledger.charge(child, ran);
        if waiting {
            let seq = self.ledger.accounts[child].state;
            let State::Waiting { seq } = seq else {
                unreachable!()
            };
            let key = self.key(child);
            let prec = self.ledger.accounts[child].precedence;
            self.ready
                .entry(prec)
                .or_default()
                .insert((key, seq, child));
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.ledger.check()?;
        let mut waiting = 0;
        for (&prec, level) in &self.ready {
            if level.is_empty() {
                return Err(format!("empty precedence level {prec}"));
            }
            for &(key, seq, child) in level {
                waiting += 1;
                match self.ledger.accounts.get(child) {
                    Some(a)
                        if a.precedence == prec
                            && a.state == (State::Waiting { seq })
                            && self.key(child) == key => {}
                    other => return Err(format!("ready ({key}, {seq}) -> {child} vs {other:?}")),
                }
            }
        }
        for (&vp, &(child, _)) in &self.running {
            match self.ledger.accounts.get(child) {
                Some(a) if a.state == State::Running(vp) => {}
                other => return Err(format!("{vp} runs {child} but it is {other:?}")),
            }
        }
        let runnable = waiting + self.running.len();
        if runnable != self.ledger.delta.len() || runnable != self.runnable as usize {
            return Err(format!(
                "{waiting} waiting + {} running vs |Δ| = {} and count {}",
                self.running.len(),
                self.ledger.delta.len(),
                self.runnable
            ));
        }
        Ok(())
    }
}
