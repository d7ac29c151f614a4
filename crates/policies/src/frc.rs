//! `frc`: fair rate-controlled scheduling, with differential admission
//! control.
//!
//! **Source.** Yau & Lam, "Decoupled delay and rate guarantees..." (the
//! "trains" paper): §3, Figure 1 (FRC, lines L1–L8), Theorem 1 and
//! Corollary 1.1; §3.1 (differential admission control). This file also
//! holds the finish-value machinery `Ledger` that `rcsp` (§4) shares.
//!
//! **Algorithm.** Each child `i` has a reserved rate `r_i` and a work
//! quantum `w_i`, and a finish value `f_i`. `Δ` is the runnable set.
//! - Wakeup (L1–L4): `vtime = min{f_j : j ∈ Δ} + w_i/r_i`,
//!   `f_i = max(f_i, vtime)`, `i` joins `Δ`. With `Δ` empty the minimum is
//!   the last one `Δ` had (it never decreases; a new child starts there).
//! - Block and tick (L5–L8): `f_i += runtime/r_i` (every `charge`, i.e. at
//!   the end of every run segment: a block, a preemption, a decision's
//!   horizon or a platform tick); a block removes `i` from `Δ`.
//! - The waiting child with the smallest finish value runs (ties: the
//!   earliest to queue). A running child is not preempted before it has run
//!   `w_i` since it was dispatched after a wakeup or a preemption (the
//!   no-preemption-before-w rule); after that its decision ends exactly when
//!   its finish value passes the smallest waiting one (the ideal tick). A
//!   wakeup whose finish value the running child would pass before its
//!   decision ends has that decision made again: the child keeps what is
//!   left of its quantum, then stops at the woken child's finish value.
//!   Without this a child dispatched ahead of a far-off waiter runs past
//!   every later, nearer waker, and Theorem 1 fails. A running child's
//!   finish value is projected to now when a wakeup reads the minimum
//!   (`Ledger::min_now`), the paper's per-tick update made exact.
//!
//! **Exact arithmetic.** Rates are exact fractions `num/den` (a `rate`
//! parameter is a decimal with at most six places, i.e. ppm; with service
//! classes the effective rate `r̂·R/max(R, Σr̂)` is kept as a fraction).
//! Finish values are `u128` in picoseconds of virtual time
//! ([`FINISH_SCALE`] units per ns). `runtime/r` is exact up to a remainder
//! kept per child and carried into the next charge (dropped when the rate
//! changes or the child is brought forward at a wakeup), so the error stays
//! below one unit. `w/r` at a wakeup is rounded down (< 1 ps). Overflow:
//! a finish value grows by at most `runtime/r`; with the smallest possible
//! rate (1 ppm × 1 ppm class share = 1e-12) one second of service is 1e24
//! ps, so `u128` (3.4e38) lasts for more than 1e14 s of CPU time.
//!
//! **Parameters.** `min_quantum` (default 1ms): the smallest work quantum
//! (§3.3 recommends enforcing one; a smaller child `quantum` is raised to
//! it). `classes` (default empty: no admission control): service classes
//! as `"NAME:RATE:OVERBOOK, ..."`, e.g. `"GR:0.6:0, FR:0.4:inf"`, rates and
//! overbook fractions decimals (`inf` for FR), class rates summing to at
//! most 1. **Child parameters.** `rate` (decimal string in `(0, 1]`, default
//! `"0.1"`): the reserved rate, or with classes the nominal rate `r̂`;
//! `quantum` (default 10ms): `w`; `class` (default: the first class).
//!
//! **Admission (§3.1).** Without classes every child is admitted at its
//! rate. With classes a child joins class `k` iff
//! `Σ r̂ (already admitted) + r̂_i ≤ R_k (1 + b_k)`; a refusal names the
//! class and the numbers. Effective rates `r̂·R_k/max(R_k, Σr̂)` are
//! recomputed for the whole class whenever a child joins or leaves (O(size
//! of the class)).
//!
//! **Guarantees.** Theorem 1: a child continuously runnable over `[t, t']`
//! gets at least bound (3) with `q_j = w_j + tick`; with `Σ r ≤ 1` (GR
//! classes, or rates admitted by hand) Corollary 1.1's bound (4), both
//! checked over every interval of random workloads, with and without a
//! tick, by the property test in `crates/sim/tests/frc.rs`. Work
//! conserving. **Limits.** The bounds are for one CPU; on several CPUs the
//! smallest finish values run (global FRC), no bound claimed. Cost:
//! O(log n) per decision, wakeup, block and charge; a wakeup also scans
//! the running slots (O(vps)).

use crate::params;
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Scheduler, Share, ShareRange, Value,
};
use std::collections::{BTreeMap, BTreeSet};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "frc",
    summary: "fair rate-controlled scheduling (reserved rate and work quantum per child)",
    doc: "Yau & Lam's FRC (section 3, Figure 1): each child has a reserved `rate` and a \
          work `quantum`; finish values advance by runtime/rate and a waking child starts \
          at most quantum/rate ahead of the slowest runnable one; the smallest finish value \
          runs, never preempted before it has run its quantum. Optional differential \
          admission control (section 3.1): `classes = \"GR:0.6:0, FR:0.4:inf\"` and child \
          `class`. A continuously runnable child gets Theorem 1's bound; with total rate \
          at most 1, Corollary 1.1's.",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// Finish-value units per nanosecond of virtual time (picoseconds).
pub const FINISH_SCALE: u128 = 1_000;
/// Parts per million: the unit of a `rate` parameter.
pub const PPM: u128 = 1_000_000;
pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);
pub const DEFAULT_MIN_QUANTUM: Duration = Duration::from_millis(1);
pub const DEFAULT_RATE: &str = "0.1";

pub(crate) fn common_params() -> Vec<ParamSpec> {
    vec![
        params::positive_duration(
            "min_quantum",
            DEFAULT_MIN_QUANTUM,
            "the smallest work quantum; a child's smaller `quantum` is raised to it",
        ),
        params::optional_str(
            "classes",
            "service classes \"NAME:RATE:OVERBOOK, ...\" (overbook `inf` for FR); empty: none",
        ),
    ]
}

fn params() -> Vec<ParamSpec> {
    common_params()
}

pub(crate) fn common_child_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "rate",
            RATE,
            "reserved (or, with classes, nominal) rate: a decimal in (0, 1], at most 6 places",
        )
        .with_default(Value::Str(DEFAULT_RATE.into())),
        params::positive_duration(
            "quantum",
            DEFAULT_QUANTUM,
            "work quantum w: how long the child runs before it may be preempted",
        ),
        params::optional_str(
            "class",
            "service class to join (default: the first declared)",
        ),
    ]
}

fn child_params() -> Vec<ParamSpec> {
    common_child_params()
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let ledger = Ledger::from_params(params)?;
    Ok(Box::new(Frc::new(ledger)))
}

/// `rate` parameters: a fraction of the CPU in `(0, 1]`, whole ppm.
const RATE: ParamKind = ParamKind::Rate {
    range: ShareRange::Rate,
    ppm: true,
};

/// A child's attachment as FRC (and RCSP) read it: what admission, the
/// finish values and the analysis's bounds all start from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildTerms {
    /// The reserved (with classes, nominal) rate `r̂`, ppm.
    pub rate: u64,
    /// The work quantum `w`, raised to `min_quantum`.
    pub quantum: Duration,
    /// The class it asks for (`None`: the first, or none without classes).
    pub class: Option<String>,
}

impl ChildTerms {
    /// Reads `rate`, `quantum` and `class` (absent ones take the defaults);
    /// errors name the parameter.
    pub fn from_params(params: &Params, min_quantum: Duration) -> Result<ChildTerms, String> {
        let rate = match params.get("rate") {
            None => DEFAULT_RATE,
            Some(Value::Str(s)) => s.as_str(),
            Some(v) => return Err(format!("`rate` = {v}: expected a decimal string")),
        };
        let rate = Share::parse_ppm(rate, ShareRange::Rate).map_err(|e| format!("`rate`: {e}"))?;
        let quantum = match params.get("quantum") {
            None => DEFAULT_QUANTUM,
            Some(Value::Duration(d)) => *d,
            Some(v) => return Err(format!("`quantum` = {v}: expected a duration")),
        };
        let class = match params.get("class") {
            Some(Value::Str(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        };
        Ok(ChildTerms {
            rate,
            quantum: quantum.max(min_quantum),
            class,
        })
    }
}

/// One service class of §3.1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceClass {
    pub name: String,
    /// `R_k`, ppm.
    pub rate: u64,
    /// `b_k`, ppm; `None` is infinite (FR).
    pub overbook: Option<u64>,
    /// `Σ r̂` of the admitted children, ppm.
    pub admitted: u64,
}

impl ServiceClass {
    /// `R_k (1 + b_k)`, the most its admission lets in at once (`None`:
    /// FR, no limit; or too large to count).
    pub fn limit(&self) -> Option<Share> {
        let b = self.overbook?;
        Share::from_ppm(self.rate).checked_mul(Share::from_ppm(PPM as u64 + b))
    }

    /// Whether `Σ r̂ + extra ≤ R (1 + b)`, exactly.
    pub fn admits(&self, extra: u64) -> bool {
        match self.overbook {
            None => true,
            Some(b) => {
                u128::from(self.admitted + extra) * PPM
                    <= u128::from(self.rate) * (PPM + u128::from(b))
            }
        }
    }
}

/// Parses `"GR:0.6:0, FR:0.4:inf"`.
pub fn parse_classes(text: &str) -> Result<Vec<ServiceClass>, String> {
    let mut out: Vec<ServiceClass> = Vec::new();
    if text.trim().is_empty() {
        return Ok(out);
    }
    for part in text.split(',') {
        let fields: Vec<&str> = part.split(':').map(str::trim).collect();
        let [name, rate, overbook] = fields[..] else {
            return Err(format!(
                "`classes`: `{}`: expected NAME:RATE:OVERBOOK, e.g. GR:0.6:0",
                part.trim()
            ));
        };
        if name.is_empty() || out.iter().any(|c| c.name == name) {
            return Err(format!("`classes`: class name `{name}` empty or repeated"));
        }
        let rate = Share::parse_ppm(rate, ShareRange::Rate)
            .map_err(|e| format!("`classes`: {name} rate {e}"))?;
        let overbook = if overbook.eq_ignore_ascii_case("inf") {
            None
        } else {
            Some(
                Share::parse_ppm(overbook, ShareRange::Any)
                    .map_err(|e| format!("`classes`: {name} overbook {e}"))?,
            )
        };
        out.push(ServiceClass {
            name: name.to_string(),
            rate,
            overbook,
            admitted: 0,
        });
    }
    let total: u64 = out.iter().map(|c| c.rate).sum();
    if total > 1_000_000 {
        return Err(format!(
            "`classes`: class rates sum to {}, more than 1",
            Share::from_ppm(total).decimal(6)
        ));
    }
    Ok(out)
}

/// A runnable child's place: waiting (queued with a sequence number) or
/// running on a VP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Idle,
    Waiting { seq: u64 },
    Running(ParentVp),
}

/// FRC's per-child state.
#[derive(Clone, Debug)]
pub(crate) struct Account {
    /// Nominal (or reserved) rate, ppm.
    pub nominal: u64,
    /// Effective rate `num/den`.
    pub num: u128,
    pub den: u128,
    pub quantum: Duration,
    pub class: Option<usize>,
    pub finish: u128,
    /// `(runtime · FINISH_SCALE · den) mod num` not yet in `finish`.
    pub rem: u128,
    pub state: State,
    pub precedence: i64,
}

impl Account {
    /// `w/r` in finish units (rounded down).
    pub fn lead(&self) -> u128 {
        u128::from(self.quantum.as_nanos()) * FINISH_SCALE * self.den / self.num
    }
    /// The service time (ns, rounded up, at least 1) for `finish` to grow
    /// by `delta` units.
    pub fn time_for(&self, delta: u128) -> Duration {
        let ns = (delta * self.num).div_ceil(FINISH_SCALE * self.den);
        Duration(u64::try_from(ns.max(1)).unwrap_or(u64::MAX))
    }
    /// `finish` after `ran` more service, without the carried remainder.
    pub fn projected(&self, ran: Duration) -> u128 {
        self.finish + u128::from(ran.as_nanos()) * FINISH_SCALE * self.den / self.num
    }
}

/// The finish-value bookkeeping FRC and RCSP share: accounts, `Δ` ordered
/// by finish value, the floor used when `Δ` is empty, and admission.
#[derive(Debug)]
pub(crate) struct Ledger {
    pub min_quantum: Duration,
    pub classes: Vec<ServiceClass>,
    pub accounts: ChildMap<Account>,
    /// `Δ` by finish value.
    pub delta: BTreeSet<(u128, ChildId)>,
    /// The last `min{f_j : j ∈ Δ}` (never decreases).
    pub floor: u128,
    pub next_seq: u64,
}

impl Ledger {
    /// The ledger of FRC or RCSP from unchecked policy parameters
    /// (`min_quantum`, `classes`), resolved against their declaration.
    pub fn from_unchecked(params: &Params) -> Result<Self, String> {
        Ledger::from_params(&params.resolve(&common_params())?)
    }

    pub fn from_params(params: &Params) -> Result<Self, String> {
        let classes = parse_classes(params.str("classes"))?;
        Ok(Ledger {
            min_quantum: params.duration("min_quantum"),
            classes,
            accounts: ChildMap::new(),
            delta: BTreeSet::new(),
            floor: 0,
            next_seq: 0,
        })
    }

    pub fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// `min{f_j : j ∈ Δ}`, or the floor when `Δ` is empty.
    pub fn min_finish(&self) -> u128 {
        self.delta.first().map_or(self.floor, |&(f, _)| f)
    }

    fn refresh_floor(&mut self) {
        self.floor = self.floor.max(self.min_finish());
    }

    /// Admission: checks and records a new child. `policy` names the
    /// refuser.
    pub fn admit(&mut self, policy: &str, child: ChildId, params: &Params) -> Result<(), Reject> {
        let ChildTerms {
            rate: nominal,
            quantum,
            class,
        } = ChildTerms::from_params(params, self.min_quantum)
            .map_err(|e| Reject(format!("{policy}: child {e}")))?;
        let precedence = params.opt_int("precedence").unwrap_or(0);
        let class = if self.classes.is_empty() {
            if let Some(name) = class {
                return Err(Reject(format!(
                    "{policy}: child asks for class `{name}` but no `classes` are declared"
                )));
            }
            None
        } else {
            let k = match &class {
                None => 0,
                Some(name) => self
                    .classes
                    .iter()
                    .position(|c| &c.name == name)
                    .ok_or_else(|| {
                        let known: Vec<&str> =
                            self.classes.iter().map(|c| c.name.as_str()).collect();
                        Reject(format!(
                            "{policy}: unknown class `{name}` (declared: {})",
                            known.join(", ")
                        ))
                    })?,
            };
            let c = &self.classes[k];
            if !c.admits(nominal) {
                let b = c.overbook.unwrap_or(0);
                let ppm = |x: u64| Share::from_ppm(x).decimal(6);
                let limit = c.limit().map_or_else(String::new, |l| l.decimal(12));
                return Err(Reject(format!(
                    "{policy}: class `{}` refuses rate {}: admitted {} + {} > R (1 + b) = {} × (1 + {}) = {limit}",
                    c.name,
                    ppm(nominal),
                    ppm(c.admitted),
                    ppm(nominal),
                    ppm(c.rate),
                    ppm(b),
                )));
            }
            Some(k)
        };
        let floor = self.min_finish().max(self.floor);
        self.accounts.insert(
            child,
            Account {
                nominal,
                num: u128::from(nominal),
                den: PPM,
                quantum,
                class,
                finish: floor,
                rem: 0,
                state: State::Idle,
                precedence,
            },
        );
        if let Some(k) = class {
            self.classes[k].admitted += nominal;
            self.recompute_class(k);
        }
        Ok(())
    }

    /// A child leaves: its rate goes back to its class.
    pub fn leave(&mut self, child: ChildId) {
        if let Some(a) = self.accounts.remove(child) {
            if let Some(k) = a.class {
                self.classes[k].admitted -= a.nominal;
                self.recompute_class(k);
            }
        }
    }

    /// Effective rates `r̂ R / max(R, Σ r̂)` for every member of class `k`.
    fn recompute_class(&mut self, k: usize) {
        let c = &self.classes[k];
        let (rate, sum) = (u128::from(c.rate), u128::from(c.admitted.max(c.rate)));
        for (_, a) in self.accounts.iter_mut() {
            if a.class == Some(k) {
                let (num, den) = (u128::from(a.nominal) * rate, PPM * sum);
                if (num, den) != (a.num, a.den) {
                    a.num = num;
                    a.den = den;
                    a.rem = 0;
                }
            }
        }
    }

    /// `min{f_j : j ∈ Δ}` as of now: a running child's finish value is
    /// projected to its service so far (`running` gives how long each has
    /// run since its last charge). The paper's kernel updates it at every
    /// clock tick; projecting it is that tick made exact, so a waking
    /// thread is never placed behind a long-running thread's stale value.
    pub fn min_now(&self, running: &[(ChildId, Duration)]) -> u128 {
        let still = self
            .delta
            .iter()
            .find(|(_, c)| !matches!(self.accounts[*c].state, State::Running(_)))
            .map(|&(f, _)| f);
        let moving = running
            .iter()
            .filter_map(|&(c, ran)| self.accounts.get(c).map(|a| a.projected(ran)))
            .min();
        match (still, moving) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => self.floor,
        }
    }

    /// L1–L4: the wakeup update against `min` (see [`Ledger::min_now`]);
    /// `i` joins `Δ`.
    pub fn wake(&mut self, child: ChildId, min: u128) {
        let vtime = min + self.accounts[child].lead();
        let a = &mut self.accounts[child];
        if vtime > a.finish {
            a.finish = vtime;
            a.rem = 0;
        }
        self.delta.insert((a.finish, child));
        self.refresh_floor();
    }

    /// L5–L6: `f += runtime/r`, exactly (remainder carried).
    pub fn charge(&mut self, child: ChildId, ran: Duration) {
        let Some(a) = self.accounts.get_mut(child) else {
            return;
        };
        let in_delta = self.delta.remove(&(a.finish, child));
        let scaled = u128::from(ran.as_nanos()) * FINISH_SCALE * a.den + a.rem;
        a.finish += scaled / a.num;
        a.rem = scaled % a.num;
        if in_delta {
            self.delta.insert((a.finish, child));
        }
        self.refresh_floor();
    }

    /// L8: `i` leaves `Δ`.
    pub fn block(&mut self, child: ChildId) {
        let f = self.accounts[child].finish;
        self.delta.remove(&(f, child));
        self.refresh_floor();
        self.accounts[child].state = State::Idle;
    }

    pub fn check(&self) -> Result<(), String> {
        for &(f, child) in &self.delta {
            match self.accounts.get(child) {
                Some(a) if a.finish == f && a.state != State::Idle => {}
                other => return Err(format!("Δ entry {f} -> {child} does not match {other:?}")),
            }
        }
        let mut runnable = 0;
        for (child, a) in self.accounts.iter() {
            if a.rem >= a.num {
                return Err(format!("{child}: remainder {} >= {}", a.rem, a.num));
            }
            if a.quantum < self.min_quantum {
                return Err(format!("{child}: quantum below the minimum"));
            }
            if a.state != State::Idle {
                runnable += 1;
            }
        }
        if runnable != self.delta.len() {
            return Err(format!(
                "{runnable} runnable children but |Δ| = {}",
                self.delta.len()
            ));
        }
        if let Some(&(f, _)) = self.delta.first() {
            if f < self.floor {
                return Err(format!("min f {f} below the floor {}", self.floor));
            }
        }
        for (k, c) in self.classes.iter().enumerate() {
            let sum: u64 = self
                .accounts
                .iter()
                .filter(|(_, a)| a.class == Some(k))
                .map(|(_, a)| a.nominal)
                .sum();
            if sum != c.admitted || !c.admits(0) {
                return Err(format!(
                    "class {}: admitted {} (members sum to {sum}) against R(1+b)",
                    c.name, c.admitted
                ));
            }
        }
        Ok(())
    }
}

/// A child running on a VP: since its last charge, and the end of its
/// decision.
#[derive(Clone, Copy, Debug)]
struct Run {
    child: ChildId,
    since: Instant,
    until: Instant,
}

/// The FRC scheduler. See the module documentation.
#[derive(Debug)]
pub struct Frc {
    ledger: Ledger,
    /// Waiting children by (finish value, queue order).
    ready: BTreeSet<(u128, u64, ChildId)>,
    running: BTreeMap<ParentVp, Run>,
    /// How much of its work quantum each runnable child still has before
    /// it may be preempted.
    protect: ChildMap<Duration>,
    runnable: u32,
}

impl Frc {
    /// An FRC scheduler from unchecked policy parameters (`min_quantum`,
    /// `classes`), resolved against the declaration.
    pub fn with_params(params: &Params) -> Result<Self, String> {
        Ok(Frc::new(Ledger::from_unchecked(params)?))
    }

    fn new(ledger: Ledger) -> Self {
        Frc {
            ledger,
            ready: BTreeSet::new(),
            running: BTreeMap::new(),
            protect: ChildMap::new(),
            runnable: 0,
        }
    }

    /// `child`'s finish value, in [`FINISH_SCALE`] units per ns.
    pub fn finish(&self, child: ChildId) -> Option<u128> {
        self.ledger.accounts.get(child).map(|a| a.finish)
    }

    /// `child`'s effective rate as a fraction `(num, den)`.
    pub fn effective_rate(&self, child: ChildId) -> Option<(u128, u128)> {
        self.ledger.accounts.get(child).map(|a| (a.num, a.den))
    }

    /// The service classes with what each has admitted.
    pub fn classes(&self) -> &[ServiceClass] {
        &self.ledger.classes
    }

    fn enqueue(&mut self, child: ChildId) {
        let seq = self.ledger.seq();
        let a = &mut self.ledger.accounts[child];
        a.state = State::Waiting { seq };
        self.ready.insert((a.finish, seq, child));
    }

    /// Whatever ran on `vp` stopped; a still runnable child waits again.
    fn stop(&mut self, vp: ParentVp) -> Option<ChildId> {
        let run = self.running.remove(&vp)?;
        if self.ledger.accounts.get(run.child)?.state != State::Running(vp) {
            return None;
        }
        self.enqueue(run.child);
        Some(run.child)
    }

    fn remove_runnable(&mut self, child: ChildId) {
        match self.ledger.accounts[child].state {
            State::Idle => return,
            State::Waiting { seq } => {
                let f = self.ledger.accounts[child].finish;
                self.ready.remove(&(f, seq, child));
            }
            State::Running(vp) => {
                self.running.remove(&vp);
            }
        }
        self.ledger.block(child);
        self.protect.remove(child);
        self.runnable -= 1;
    }

    /// A wakeup with finish value `f` shortens the decision of a running
    /// child that would otherwise pass `f` before its decision ends: that
    /// decision was timed against the waiting children of its dispatch, so
    /// without this it would overrun the woken child by up to its whole
    /// lead and break Theorem 1. The VP is decided again at once;
    /// [`Frc::vp_grant`] keeps a protected child running with a new end. Of
    /// several such VPs the one whose child is furthest ahead goes, unless
    /// a VP is free anyway.
    fn preempt_for(&mut self, cx: &mut Cx, woken: ChildId) {
        if (self.running.len() as u32) < cx.vp_count() {
            return;
        }
        let f = self.ledger.accounts[woken].finish;
        let now = cx.now();
        let victim = self
            .running
            .iter()
            .filter(|(_, r)| {
                let a = &self.ledger.accounts[r.child];
                r.until == Instant::NEVER || a.projected(r.until.saturating_since(r.since)) > f
            })
            .map(|(&vp, r)| {
                let a = &self.ledger.accounts[r.child];
                (a.projected(now.saturating_since(r.since)), vp)
            })
            .max();
        if let Some((_, vp)) = victim {
            cx.reschedule(vp);
        }
    }
}

impl Scheduler for Frc {
    fn policy(&self) -> &'static str {
        "frc"
    }

    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        self.ledger.admit("frc", child, params)
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
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if self.ledger.accounts[child].state != State::Idle {
            return;
        }
        let now = cx.now();
        let running: Vec<(ChildId, Duration)> = self
            .running
            .values()
            .map(|r| (r.child, now.saturating_since(r.since)))
            .collect();
        let min = self.ledger.min_now(&running);
        self.ledger.wake(child, min);
        self.enqueue(child);
        let w = self.ledger.accounts[child].quantum;
        self.protect.insert(child, w);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        self.preempt_for(cx, child);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.ledger.accounts[child].state != State::Idle {
            self.remove_runnable(child);
            cx.want_cpus(self.runnable);
        }
    }

    /// Runs the smallest finish value, except that a child still inside
    /// its protected work quantum keeps the VP (the no-preemption-before-w
    /// rule). The decision lasts until the child has used its protection
    /// and its finish value passes the smallest waiting one.
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let previous = self.stop(vp);
        let protected = previous.filter(|&p| self.protect.get(p).is_some_and(|d| !d.is_zero()));
        let picked = match protected {
            Some(p) => {
                let a = &self.ledger.accounts[p];
                let State::Waiting { seq } = a.state else {
                    unreachable!("a stopped child waits")
                };
                self.ready.take(&(a.finish, seq, p))
            }
            None => self.ready.pop_first(),
        };
        let Some((f, _, child)) = picked else {
            return Dispatch::Release;
        };
        if let Some(p) = previous.filter(|&p| p != child) {
            // Preempted: its work quantum starts afresh when it runs again.
            let w = self.ledger.accounts[p].quantum;
            self.protect.insert(p, w);
        }
        let now = cx.now();
        let a = &mut self.ledger.accounts[child];
        a.state = State::Running(vp);
        let protect = self.protect.get(child).copied().unwrap_or(Duration::ZERO);
        let until = match self.ready.first() {
            Some(&(next, _, _)) => {
                let cross = a.time_for(next.saturating_sub(f));
                now.saturating_add(protect.max(cross))
            }
            None if protect.is_zero() => Instant::NEVER,
            None => now.saturating_add(protect),
        };
        self.running.insert(
            vp,
            Run {
                child,
                since: now,
                until,
            },
        );
        Dispatch::Run { child, until }
    }

    fn vp_revoke(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        if let Some(p) = self.stop(vp) {
            let w = self.ledger.accounts[p].quantum;
            self.protect.insert(p, w);
        }
    }

    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        if !self.ledger.accounts.contains(child) {
            return;
        }
        let state = self.ledger.accounts[child].state;
        if let State::Running(vp) = state {
            if let Some(r) = self.running.get_mut(&vp) {
                r.since = cx.now();
            }
        }
        if let State::Waiting { seq } = state {
            let f = self.ledger.accounts[child].finish;
            self.ready.remove(&(f, seq, child));
        }
        self.ledger.charge(child, ran);
        if let State::Waiting { seq } = state {
            let f = self.ledger.accounts[child].finish;
            self.ready.insert((f, seq, child));
        }
        if let Some(p) = self.protect.get_mut(child) {
            *p = p.saturating_sub(ran);
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.ledger.check()?;
        for &(f, seq, child) in &self.ready {
            match self.ledger.accounts.get(child) {
                Some(a) if a.finish == f && a.state == (State::Waiting { seq }) => {}
                other => return Err(format!("ready ({f}, {seq}) -> {child} vs {other:?}")),
            }
        }
        for (&vp, r) in &self.running {
            match self.ledger.accounts.get(r.child) {
                Some(a) if a.state == State::Running(vp) => {}
                other => return Err(format!("{vp} runs {} but it is {other:?}", r.child)),
            }
        }
        let runnable = self.ready.len() + self.running.len();
        if runnable != self.ledger.delta.len() || runnable != self.runnable as usize {
            return Err(format!(
                "{} waiting + {} running vs |Δ| = {} and count {}",
                self.ready.len(),
                self.running.len(),
                self.ledger.delta.len(),
                self.runnable
            ));
        }
        Ok(())
    }
}
