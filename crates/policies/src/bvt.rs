//! `bvt`: Borrowed-Virtual-Time scheduling.
//!
//! **Source.** K. J. Duda, D. R. Cheriton, "Borrowed-Virtual-Time (BVT)
//! scheduling: supporting latency-sensitive threads in a general-purpose
//! scheduler", SOSP '99: §2 (virtual time; §2.1 fair share; §2.2 warp; §2.4
//! multiprocessors; §2.5 multi-level), §3 (mcu charging, countdown), §6.
//!
//! **Units.** Real time is integer ns; virtual time is integer *virtual
//! units*: one `mcu` (minimum charging unit) of CPU advances a child's actual
//! virtual time `A` by its `advance` `m` (the paper's mcu advance, `1/w` for
//! weight `w`). Warp `W`, migration penalty `M` and `threshold` are virtual
//! units; allowance `C`, warp limit `L` and unwarp time `U` are real time.
//! `C` is worth `C_i = ceil(C * m_i / mcu)` to child `i` (§2.1's `C/w_i`).
//!
//! **Algorithm.** `E_i = A_i - (warped ? W_i : 0)`; a CPU runs the waiting
//! child with the least `E` (ties: longest waiting). *Charging* (§2, §3): a
//! *run* is the time a child holds a CPU without a break (segments cut and
//! resumed at one instant on one CPU are one run); `charge(ran)` uses the
//! prepaid rest of the last mcu, then adds `k = ceil(rest / mcu)` mcus
//! (`A += k * m`) and keeps `k * mcu - rest` prepaid, forfeit when the run
//! ends: a run of `t` costs exactly `ceil(t / mcu)` mcus, as in the paper.
//! *SVT* is the least `A` of runnable children (and, with
//! `svt_counts_involuntary`, involuntarily blocked ones); it never decreases.
//! A waking child gets `A = max(A, SVT)` (§2.1), running children's `A`
//! brought up to date first (§3). *Countdown* (§3): child `i` dispatched on
//! CPU `c` with best waiting `j` gets the horizon `now + prepaid + k * mcu`,
//! `k = max(1, ceil((E_j + M_jc + C_i - E_i) / m_i))`: the first whole mcu at
//! which `E_i >= E_j + M_jc + C_i` (§2.1: switch when `A_j <= A_i - C/w_i`).
//! At any re-decision the incumbent keeps the CPU while `E_i < E_j + M_jc +
//! C_i`. A child that wakes, or whose `E` drops while it waits, below a
//! running child's `E` (plus `M_jc`) preempts the one with the largest `E` at
//! once (§3); else countdowns made against a worse waiting child are re-made.
//!
//! **Warp** (§2.2). `want` is `warpBack` (attachment `warp_on`, or `warp`).
//! A runnable child that wants warp runs warped (an *episode*) unless its
//! last episode ended (block, unwarp, or `L` used up) less than `U` ago;
//! then a timer warps it when `U` has passed. An episode runs at most `L` of
//! CPU (a timer set at dispatch). As written: `L = 0`, no limit; `U = 0`, no
//! wait, and a child that used up `L` stays unwarped until it sends `warp on`
//! again (with `U > 0` it warps again `U` later).
//!
//! **Multiprocessor** (§2.4): a child that last ran on another CPU counts
//! `E + M` there; sets per last CPU keep this O(log n), on any number of VPs.
//!
//! **Multi-level** (§2.5). With `mode` `threshold` or `direct`, an instance
//! tells its parent per VP (`cx.msg_parent`, on change only) whether to run
//! the VP warped, judging by the child the VP runs or would run now.
//! Threshold: `warp { on }`, on while that child runs warped with
//! `W > threshold`: the parent uses the VP's own attachment `W`, `L`, `U`.
//! Direct: `warp { on, warp = W, limit = L }` of that child (on while warped
//! with `W > 0`): the parent uses them (a change restarts `L`). A parent
//! handles `warp` from a child scheduler as from a thread.
//!
//! **Messages.** `warp { on }` from a child (a thread, or a child scheduler
//! with optional `warp`, `limit`); a warped signal handler is `on`/`off`
//! around it; answers `warped`. `set { advance, warp, warp_limit, unwarp,
//! warp_on }` (any of them), from the child or the operator with `child`.
//! `info { child? }`: `svt`, `avt`, `evt`, `warped`, `want`. Else unknown.
//!
//! **Guarantees.** Work conserving. On one CPU with all children runnable
//! and unwarped, each `A_i` stays in `[SVT, SVT + C_i + m_i)`: over any
//! window a child's CPU time is within `C + mcu` (real time, strictly) of its
//! weighted fair share `ΔSVT * mcu / m_i`. Warp gives immediate dispatch, but
//! `A_i` still advances with use: an always-warped child stays below
//! `SVT + W + C_i + m_i`, a constant gain, never a larger long-term share.
//!
//! **Limits.** No cascade: a child displaced by a waker waits even if it
//! could displace one on another CPU. The multi-level guess for an idle VP
//! ignores `M`. No admission control (§6). With a tick, limits act on ticks.
//!
//! **Overflow.** `i128` virtual times. A charge adds at most
//! `m * (ran/mcu + 1) <= 2^33 * ran_ns` (mcu >= 1µs), the wakeup rule never
//! passes the largest `A`, and an instance gets at most `cpus * 2^64` ns, so
//! with at most 2^16 CPUs `A < 2^113`; `W, M < 2^62`, `C_i < 2^86`: no sum
//! nears 2^127. Arithmetic saturates anyway.
//!
//! **Cost.** O(log n) per decision, wake-up, block and charge (`BTreeSet`s
//! by `(E, seq, child)` and `(A, child)`), O(vps) to consider preemption,
//! O(vps²) per callback to tell the parent when a `mode` is set.

use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Reply, Scheduler, Sender, TimerKey, Value, VpState,
};
use std::collections::BTreeSet;

mod messages;
mod warp;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "bvt",
    summary: "borrowed virtual time: weighted fair share with warp for low latency",
    doc: "Duda & Cheriton, SOSP '99, sections 2-3. Runs the child with the earliest \
          effective virtual time E = A - warp; A advances by `advance` per mcu used \
          (whole mcus), a waking child starts at max(A, SVT), a running child keeps \
          the CPU until it passes the best waiting one by the allowance C. Warp, with \
          limit L and unwarp time U, gives low-latency dispatch without raising \
          long-term share. Migration penalty on several CPUs; threshold and direct \
          multi-level modes. O(log n). Fair within C + 1 mcu while runnable.",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

pub const DEFAULT_MCU: Duration = Duration::from_millis(10);
/// The paper's experiments (§4) on its 10ms-mcu implementation (§3).
pub const DEFAULT_ALLOWANCE: Duration = Duration::from_millis(200);
/// The paper's initial thread (§3).
pub const DEFAULT_ADVANCE: i64 = 10;
pub const ADVANCE_MAX: i64 = 1 << 32;
pub const WARP_MAX: i64 = 1 << 62;

fn int(name: &'static str, min: i64, max: i64, default: i64, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, ParamKind::Int { min, max }, doc).with_default(Value::Int(default))
}
fn dur(name: &'static str, min: Duration, default: Duration, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, ParamKind::Duration { min }, doc).with_default(Value::Duration(default))
}
fn flag(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, ParamKind::Bool, doc).with_default(Value::Bool(false))
}

fn params() -> Vec<ParamSpec> {
    let (us, z, w) = (Duration::from_micros(1), Duration::ZERO, WARP_MAX);
    let none = Value::Str("none".into());
    vec![
        dur("mcu", us, DEFAULT_MCU, "minimum charging unit"),
        dur("allowance", z, DEFAULT_ALLOWANCE, "allowance C"),
        flag("svt_counts_involuntary", "faulted children hold SVT"),
        int("migration_penalty", 0, w, 0, "M: E + M elsewhere"),
        ParamSpec::new("mode", ParamKind::Str, "none, threshold, direct").with_default(none),
        int("threshold", 0, w, 0, "threshold mode: warp over it"),
    ]
}

fn child_params() -> Vec<ParamSpec> {
    let (z, a, w) = (Duration::ZERO, ADVANCE_MAX, WARP_MAX);
    vec![
        int("advance", 1, a, DEFAULT_ADVANCE, "mcu advance m (1/weight)"),
        int("warp", 0, w, 0, "warp W (virtual units)"),
        dur("warp_limit", z, z, "warp time limit L; 0 = none"),
        dur("unwarp", z, z, "unwarp time requirement U; 0 = none"),
        flag("warp_on", "start with warp enabled"),
    ]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(Bvt::new(Config::from_params(params)?)))
}

/// Multi-level mode (§2.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    None,
    Threshold,
    Direct,
}

/// The instance parameters.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub mcu: Duration,
    pub allowance: Duration,
    pub svt_counts_involuntary: bool,
    pub migration_penalty: i64,
    pub mode: Mode,
    pub threshold: i64,
}

impl Config {
    /// From parameters resolved against the declaration.
    pub fn from_params(p: &Params) -> Result<Config, String> {
        let mode = match p.str("mode") {
            "none" => Mode::None,
            "threshold" => Mode::Threshold,
            "direct" => Mode::Direct,
            other => return Err(format!("`mode` {other:?}: not none, threshold, direct")),
        };
        let (mcu, allowance) = (p.duration("mcu"), p.duration("allowance"));
        let (migration_penalty, threshold) = (p.int("migration_penalty"), p.int("threshold"));
        let svt_counts_involuntary = p.bool("svt_counts_involuntary");
        Ok(Config {
            mcu,
            allowance,
            svt_counts_involuntary,
            migration_penalty,
            mode,
            threshold,
        })
    }
}

impl Default for Config {
    fn default() -> Self {
        let p = Params::new().resolve(&params()).expect("all have defaults");
        Config::from_params(&p).expect("the defaults are valid")
    }
}

/// Waiting order: effective virtual time, then arrival sequence.
type Key = (i128, u64, ChildId);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Idle,
    Waiting(Key),
    Running(ParentVp),
}

#[derive(Clone, Debug, Default)]
struct Child {
    advance: u64,
    warp: i64,
    limit: Duration,
    unwarp: Duration,
    avt: i128,
    /// Charged but unused CPU time of the current run (< mcu).
    prepaid: Duration,
    /// When and where its last run ended (a run resumed there then goes on).
    stopped: Option<(Instant, CpuId)>,
    last_cpu: Option<CpuId>,
    state: State,
    /// The `A` it is filed under in `by_avt`, if it counts for SVT.
    in_svt: Option<i128>,
    /// Blocked involuntarily and still counted for SVT.
    involuntary: bool,
    /// The paper's `warpBack`.
    want: bool,
    /// In a warp episode.
    warped: bool,
    /// Warped CPU time left in the episode (`None`: no limit).
    warp_left: Option<Duration>,
    /// The end of the last episode, for `U`.
    last_unwarp: Option<Instant>,
    /// Waiting out `U` until then (its timer is armed).
    rewarp_at: Option<Instant>,
    /// Direct mode, at the parent: `(W, L)` forwarded by a child scheduler.
    direct: Option<(i64, Duration)>,
    /// The warp-limit timer is armed.
    limit_timer: bool,
}

impl Child {
    fn warp_value(&self) -> i64 {
        self.direct.map_or(self.warp, |d| d.0)
    }
    fn limit_value(&self) -> Duration {
        self.direct.map_or(self.limit, |d| d.1)
    }
    fn evt(&self) -> i128 {
        let w = if self.warped { self.warp_value() } else { 0 };
        self.avt.saturating_sub(i128::from(w))
    }
    fn runnable(&self) -> bool {
        self.state != State::Idle
    }
    fn waiting(&self) -> bool {
        matches!(self.state, State::Waiting(_))
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    child: ChildId,
    cpu: CpuId,
    /// Start of the part of the run not charged yet.
    since: Instant,
    /// `E + M` of the best waiting child the countdown was computed against.
    basis: Option<i128>,
    /// A preemption (revoke) of this child is pending.
    preempting: bool,
}

/// What this instance last told its parent about a VP: `(on, W, L)`.
type Told = (bool, i64, Duration);
const OFF: Told = (false, 0, Duration::ZERO);

#[derive(Clone, Copy, Debug, Default)]
struct VpSlot {
    run: Option<Slot>,
    /// The child the parent took this CPU from: it keeps its turn here.
    incumbent: Option<ChildId>,
    told: Option<Told>,
}

/// The BVT scheduler. See the module documentation.
#[derive(Debug, Default)]
pub struct Bvt {
    cfg: Config,
    children: ChildMap<Child>,
    /// Waiting children by `(E, seq, child)`.
    global: BTreeSet<Key>,
    /// With a migration penalty: waiting children by the CPU they last ran
    /// on, and those that never ran.
    by_cpu: Vec<BTreeSet<Key>>,
    fresh: BTreeSet<Key>,
    /// Children counted for SVT, by `(A, child)`.
    by_avt: BTreeSet<(i128, ChildId)>,
    svt: i128,
    vps: Vec<VpSlot>,
    runnable: u32,
    preempting: usize,
    seq: u64,
}

fn limit_key(c: ChildId) -> TimerKey {
    u64::from(c.0) << 1
}
fn unwarp_key(c: ChildId) -> TimerKey {
    (u64::from(c.0) << 1) | 1
}

impl Bvt {
    pub fn new(cfg: Config) -> Self {
        Bvt {
            cfg,
            ..Bvt::default()
        }
    }

    /// Scheduler virtual time (as of the last charge).
    pub fn svt(&self) -> i128 {
        self.svt
    }
    /// `child`'s actual virtual time.
    pub fn avt(&self, child: ChildId) -> Option<i128> {
        self.children.get(child).map(|c| c.avt)
    }
    /// `child`'s effective virtual time.
    pub fn evt(&self, child: ChildId) -> Option<i128> {
        self.children.get(child).map(Child::evt)
    }
    /// Whether `child` runs warped now.
    pub fn is_warped(&self, child: ChildId) -> Option<bool> {
        self.children.get(child).map(|c| c.warped)
    }
    /// Whether `child` asks to run warped (the paper's `warpBack`).
    pub fn wants_warp(&self, child: ChildId) -> Option<bool> {
        self.children.get(child).map(|c| c.want)
    }

    fn mcu(&self) -> u128 {
        u128::from(self.cfg.mcu.as_nanos().max(1))
    }

    /// `C_i = ceil(C * m / mcu)`.
    fn allowance_v(&self, advance: u64) -> i128 {
        let num = u128::from(self.cfg.allowance.as_nanos()) * u128::from(advance);
        num.div_ceil(self.mcu()) as i128
    }

    fn penalty(&self, child: ChildId, cpu: CpuId) -> i128 {
        let moved = self.children[child].last_cpu.is_some_and(|l| l != cpu);
        i128::from(self.cfg.migration_penalty) * i128::from(moved)
    }

    fn ensure_vp(&mut self, vp: ParentVp) {
        if vp.index() >= self.vps.len() {
            self.vps.resize(vp.index() + 1, VpSlot::default());
        }
    }

    // ----- the ordered sets ------------------------------------------------------

    /// Files (`insert`) or unfiles a waiting key in every set it belongs to.
    fn file(&mut self, key: Key, last: Option<CpuId>, insert: bool) {
        let apply = |set: &mut BTreeSet<Key>| {
            if insert {
                set.insert(key);
            } else {
                set.remove(&key);
            }
        };
        apply(&mut self.global);
        if self.cfg.migration_penalty > 0 {
            apply(match last {
                Some(cpu) => {
                    if cpu.index() >= self.by_cpu.len() {
                        self.by_cpu.resize(cpu.index() + 1, BTreeSet::new());
                    }
                    &mut self.by_cpu[cpu.index()]
                }
                None => &mut self.fresh,
            });
        }
    }

    /// Makes a child that does not wait wait, behind equal `E`s.
    fn enqueue(&mut self, child: ChildId) {
        self.seq += 1;
        let c = &mut self.children[child];
        let key = (c.evt(), self.seq, child);
        c.state = State::Waiting(key);
        let last = c.last_cpu;
        self.file(key, last, true);
    }

    /// Takes a waiting child out of the sets (the caller sets its state).
    fn dequeue(&mut self, child: ChildId) {
        let c = &self.children[child];
        if let State::Waiting(key) = c.state {
            self.file(key, c.last_cpu, false);
        }
    }

    /// Re-files a waiting child after its `E` changed, keeping its turn.
    fn rekey(&mut self, child: ChildId) {
        let c = &self.children[child];
        if let State::Waiting(key) = c.state {
            let (last, new) = (c.last_cpu, (c.evt(), key.1, child));
            self.file(key, last, false);
            self.file(new, last, true);
            self.children[child].state = State::Waiting(new);
        }
    }

    /// (Re)files `child` under its current `A` for SVT, or takes it out.
    fn svt_file(&mut self, child: ChildId, counted: bool) {
        let c = &mut self.children[child];
        if let Some(old) = c.in_svt.take() {
            self.by_avt.remove(&(old, child));
        }
        if counted {
            c.in_svt = Some(c.avt);
            self.by_avt.insert((c.avt, child));
        }
        if let Some(&(a, _)) = self.by_avt.first() {
            self.svt = a;
        }
    }

    /// `A` of a running child as if its run were charged now.
    fn avt_now(&self, slot: &Slot, now: Instant) -> i128 {
        let c = &self.children[slot.child];
        let over = now.saturating_since(slot.since).saturating_sub(c.prepaid);
        let k = u128::from(over.as_nanos()).div_ceil(self.mcu()) as i128;
        c.avt
            .saturating_add(k.saturating_mul(i128::from(c.advance)))
    }

    fn evt_now(&self, slot: &Slot, now: Instant) -> i128 {
        let c = &self.children[slot.child];
        self.avt_now(slot, now).saturating_sub(c.avt - c.evt())
    }

    /// SVT with the running children's `A` brought up to date: past the
    /// first entry not running, nothing can be smaller.
    fn svt_now(&self, now: Instant) -> i128 {
        let mut best: Option<i128> = None;
        for &(a, child) in &self.by_avt {
            if best.is_some_and(|b| a >= b) {
                break;
            }
            let slot = match self.children[child].state {
                State::Running(vp) => self.vps.get(vp.index()).and_then(|v| v.run),
                _ => None,
            };
            let v = slot.map_or(a, |s| self.avt_now(&s, now));
            best = Some(best.map_or(v, |b| b.min(v)));
            if slot.is_none() {
                break;
            }
        }
        best.unwrap_or(self.svt)
    }

    /// The best waiting child for `cpu` by `(E + penalty, seq, child)`,
    /// leaving out `exclude`.
    fn best_for(&self, cpu: CpuId, exclude: Option<ChildId>) -> Option<Key> {
        let skip = |k: &&Key| Some(k.2) != exclude;
        let global = self.global.iter().find(skip);
        let global = global.map(|&(e, s, c)| (e.saturating_add(self.penalty(c, cpu)), s, c));
        if self.cfg.migration_penalty == 0 {
            return global;
        }
        let local = self
            .by_cpu
            .get(cpu.index())
            .and_then(|s| s.iter().find(skip));
        let fresh = self.fresh.iter().find(skip);
        let all = [global, local.copied(), fresh.copied()];
        all.into_iter().flatten().min()
    }

    /// The decision rule: the incumbent keeps the CPU while its `E` (plus
    /// its penalty `pen` on this CPU) is below the best other's plus `C_i`.
    fn choose(&self, inc: Option<ChildId>, best: Option<Key>, pen: i128) -> Option<ChildId> {
        match (inc, best) {
            (Some(i), Some(j)) => {
                let c = &self.children[i];
                let cv = self.allowance_v(c.advance);
                let keep = c.evt().saturating_add(pen) < j.0.saturating_add(cv);
                Some(if keep { i } else { j.2 })
            }
            (Some(i), None) => Some(i),
            (None, j) => j.map(|k| k.2),
        }
    }

    /// The countdown: the end of the first whole mcu of `child`'s run at
    /// which its `E` reaches `basis + C_i`.
    fn horizon(&self, child: ChildId, basis: Option<i128>, now: Instant) -> Instant {
        let Some(basis) = basis else {
            return Instant::NEVER;
        };
        let c = &self.children[child];
        let cv = self.allowance_v(c.advance);
        let need = basis.saturating_sub(c.evt()).saturating_add(cv).max(1);
        let m = i128::from(c.advance);
        let k = need.saturating_add(m - 1) as u128 / m as u128;
        k.checked_mul(self.mcu())
            .and_then(|d| d.checked_add(u128::from(c.prepaid.as_nanos())))
            .and_then(|d| u64::try_from(d).ok())
            .map_or(Instant::NEVER, |d| now.saturating_add(Duration(d)))
    }

    // ----- running and stopping ----------------------------------------------------

    fn set_limit_timer(&mut self, cx: &mut Cx, child: ChildId, now: Instant, arm: bool) {
        let c = &mut self.children[child];
        if c.limit_timer {
            c.limit_timer = false;
            cx.cancel_timer(limit_key(child));
        }
        if let (true, true, Some(left)) = (arm, c.warped, c.warp_left) {
            c.limit_timer = true;
            cx.set_timer(limit_key(child), now.saturating_add(left));
        }
    }

    /// Empties `vp`'s slot; a child still running there goes back to wait.
    fn stop(&mut self, cx: &mut Cx, vp: ParentVp, now: Instant) -> Option<Slot> {
        let slot = self.vps.get_mut(vp.index())?.run.take()?;
        self.preempting -= usize::from(slot.preempting);
        if self.children.get(slot.child).map(|c| c.state) == Some(State::Running(vp)) {
            self.set_limit_timer(cx, slot.child, now, false);
            self.children[slot.child].stopped = Some((now, slot.cpu));
            self.enqueue(slot.child);
        }
        Some(slot)
    }

    fn dispatch(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId, child: ChildId) -> Dispatch {
        let now = cx.now();
        self.dequeue(child);
        let c = &mut self.children[child];
        if c.stopped.take() != Some((now, cpu)) {
            c.prepaid = Duration::ZERO;
        }
        c.last_cpu = Some(cpu);
        c.state = State::Running(vp);
        self.set_limit_timer(cx, child, now, true);
        let basis = self.best_for(cpu, None).map(|k| k.0);
        let until = self.horizon(child, basis, now);
        let preempting = false;
        self.vps[vp.index()].run = Some(Slot {
            child,
            cpu,
            since: now,
            basis,
            preempting,
        });
        Dispatch::Run { child, until }
    }

    /// A waiting child is newly runnable or its `E` dropped: preempt the
    /// running child with the largest `E` it beats (§3), or re-make the
    /// countdowns computed against a worse waiting child.
    fn on_better_waiting(&mut self, cx: &mut Cx, child: ChildId, now: Instant) {
        let State::Waiting(key) = self.children[child].state else {
            return;
        };
        let idle_held = (0..cx.vp_count()).map(ParentVp).filter(|&vp| {
            matches!(cx.vp_state(vp), VpState::Held(_))
                && self.vps.get(vp.index()).is_none_or(|v| v.run.is_none())
        });
        // CPUs being decided take the best waiting children first.
        let absorbed = idle_held.count() + self.preempting;
        let absorbed_here = self.global.iter().take(absorbed).any(|k| k.2 == child);
        let mut victim: Option<(i128, usize)> = None;
        let mut shorten = Vec::new();
        for (v, slot) in self.vps.iter().enumerate() {
            let Some(slot) = slot.run.filter(|s| !s.preempting) else {
                continue;
            };
            let eff = key.0.saturating_add(self.penalty(child, slot.cpu));
            let running = self.evt_now(&slot, now);
            if !absorbed_here && eff < running && victim.is_none_or(|(e, _)| running > e) {
                victim = Some((running, v));
            }
            if slot.basis.is_none_or(|b| eff < b) {
                shorten.push(v);
            }
        }
        if let Some((_, v)) = victim {
            let slot = self.vps[v].run.as_mut().expect("the victim runs");
            slot.preempting = true;
            self.preempting += 1;
            cx.revoke(slot.child);
        }
        for v in shorten
            .into_iter()
            .filter(|&v| victim.is_none_or(|(_, x)| x != v))
        {
            cx.reschedule(ParentVp(v as u32));
        }
    }

    /// `child`'s `E` changed from `old`: re-file it; a drop counts as a
    /// wake-up, a rise re-decides its CPU.
    fn evt_changed(&mut self, cx: &mut Cx, child: ChildId, old: i128, now: Instant) {
        let c = &self.children[child];
        let new = c.evt();
        match c.state {
            State::Waiting(_) => {
                self.rekey(child);
                if new < old {
                    self.on_better_waiting(cx, child, now);
                }
            }
            State::Running(vp) if new > old => cx.reschedule(vp),
            _ => {}
        }
    }

    /// Whatever `child`'s state, it no longer waits or runs here.
    fn leave(&mut self, child: ChildId, now: Instant) -> bool {
        match self.children[child].state {
            State::Idle => return false,
            State::Waiting(_) => self.dequeue(child),
            State::Running(vp) => {
                if let Some(slot) = self.vps.get_mut(vp.index()).and_then(|v| v.run.take()) {
                    self.preempting -= usize::from(slot.preempting);
                    self.children[child].stopped = Some((now, slot.cpu));
                }
            }
        }
        self.children[child].state = State::Idle;
        self.runnable -= 1;
        true
    }
}

impl Scheduler for Bvt {
    fn policy(&self) -> &'static str {
        "bvt"
    }

    /// Admits every child (admission control is a separate module, §6), at
    /// the current SVT.
    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let p = params.resolve(&child_params()).map_err(Reject)?;
        let c = Child {
            advance: p.int("advance") as u64,
            warp: p.int("warp"),
            limit: p.duration("warp_limit"),
            unwarp: p.duration("unwarp"),
            avt: self.svt,
            want: p.bool("warp_on"),
            ..Child::default()
        };
        self.children.insert(child, c);
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.children.contains(child) {
            return;
        }
        let now = cx.now();
        let was_runnable = self.leave(child, now);
        self.set_limit_timer(cx, child, now, false);
        self.cancel_rewarp(cx, child);
        self.svt_file(child, false);
        for v in self.vps.iter_mut().filter(|v| v.incumbent == Some(child)) {
            v.incumbent = None;
        }
        self.children.remove(child);
        if was_runnable {
            cx.want_cpus(self.runnable);
        }
        self.advertise(cx);
    }

    /// A child wakes: `A = max(A, SVT)`, warp if it may, ask for a CPU, and
    /// preempt a running child with a larger `E`.
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].runnable() {
            return;
        }
        let now = cx.now();
        let svt = self.svt_now(now);
        let c = &mut self.children[child];
        c.involuntary = false;
        c.avt = c.avt.max(svt);
        self.begin_warp(cx, child, now);
        self.enqueue(child);
        self.svt_file(child, true);
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        self.on_better_waiting(cx, child, now);
        self.advertise(cx);
    }

    /// A child blocks: its warp episode ends (`U` counts from here); it
    /// leaves SVT unless the block is involuntary and those count.
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        let now = cx.now();
        if !self.leave(child, now) {
            return;
        }
        self.unwarp(cx, child, now, false); // blocked: nothing to re-file
        self.cancel_rewarp(cx, child);
        let counted = cx.involuntary() && self.cfg.svt_counts_involuntary;
        self.children[child].involuntary = counted;
        self.svt_file(child, counted);
        cx.want_cpus(self.runnable);
        self.advertise(cx);
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.ensure_vp(vp);
        let previous = self.vps[vp.index()].incumbent.take();
        let incumbent = match self.stop(cx, vp, now) {
            Some(slot) => Some(slot.child).filter(|_| !slot.preempting),
            None => previous,
        };
        let incumbent = incumbent.filter(|&c| self.children.get(c).is_some_and(Child::waiting));
        let best = self.best_for(cpu, incumbent);
        let pen = incumbent.map_or(0, |i| self.penalty(i, cpu));
        let answer = match self.choose(incumbent, best, pen) {
            Some(child) => self.dispatch(cx, vp, cpu, child),
            None => Dispatch::Release,
        };
        self.advertise(cx);
        answer
    }

    /// The parent took the CPU: its child waits and keeps its turn on `vp`.
    /// (No `advertise`: the incumbent is still what the VP would run.)
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        let now = cx.now();
        if let Some(slot) = self.stop(cx, vp, now) {
            self.vps[vp.index()].incumbent = Some(slot.child).filter(|_| !slot.preempting);
        }
    }

    /// Charges whole mcus (module documentation) and warped time against `L`.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        let (now, mcu) = (cx.now(), self.mcu());
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        if ran <= c.prepaid {
            c.prepaid -= ran;
        } else {
            let need = u128::from((ran - c.prepaid).as_nanos());
            let k = need.div_ceil(mcu);
            let add = (k as i128).saturating_mul(i128::from(c.advance));
            c.avt = c.avt.saturating_add(add);
            c.prepaid = Duration((k * mcu - need) as u64);
        }
        if let (true, Some(left)) = (c.warped, c.warp_left.as_mut()) {
            *left = left.saturating_sub(ran);
        }
        let expired = c.warped && c.warp_left.is_some_and(|l| l.is_zero());
        match c.state {
            State::Running(vp) => {
                if let Some(slot) = self.vps.get_mut(vp.index()).and_then(|v| v.run.as_mut()) {
                    slot.since = now;
                }
            }
            State::Waiting(_) => self.rekey(child),
            State::Idle => {}
        }
        let counted = self.children[child].in_svt.is_some();
        self.svt_file(child, counted);
        if expired {
            let old = self.unwarp(cx, child, now, true);
            self.evt_changed(cx, child, old, now);
            self.advertise(cx);
        }
    }

    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        let (now, child) = (cx.now(), ChildId((key >> 1) as u32));
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        if key & 1 == 0 && c.limit_timer {
            c.limit_timer = false;
            let old = self.unwarp(cx, child, now, true);
            self.evt_changed(cx, child, old, now);
        } else if key & 1 == 1 && c.rewarp_at.is_some_and(|at| at <= now) {
            c.rewarp_at = None;
            self.try_warp(cx, child, now);
        }
        self.advertise(cx);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        let r = match msg.name.as_str() {
            "warp" => self.msg_warp(cx, from, msg),
            "set" => self.msg_set(cx, from, msg),
            "info" => self.msg_info(from, msg),
            _ => return Reply::unknown(self.policy(), msg),
        };
        self.advertise(cx);
        r.map_or_else(|e| Reply::Err(format!("bvt: {e}")), Reply::Ok)
    }

    fn check_invariants(&self) -> Result<(), String> {
        let (mut waiting, mut runnable, mut counted, mut side) = (0, 0, 0, 0);
        let penalised = self.cfg.migration_penalty > 0;
        for (id, c) in self.children.iter() {
            match c.state {
                State::Idle => {}
                State::Waiting(key) => {
                    waiting += 1;
                    side += usize::from(penalised);
                    let set = match c.last_cpu {
                        Some(cpu) => self.by_cpu.get(cpu.index()),
                        None => Some(&self.fresh),
                    };
                    let local = !penalised || set.is_some_and(|s| s.contains(&key));
                    let filed = local && self.global.contains(&key);
                    if key.0 != c.evt() || key.2 != id || !filed {
                        return Err(format!("{id} waits under {key:?}, E = {}", c.evt()));
                    }
                }
                State::Running(vp) => {
                    let slot = self.vps.get(vp.index()).and_then(|v| v.run);
                    if slot.map(|s| s.child) != Some(id) {
                        return Err(format!("{id} runs on {vp}, which has {slot:?}"));
                    }
                }
            }
            runnable += u32::from(c.runnable());
            if c.runnable() || c.involuntary {
                counted += 1;
                let filed = c.in_svt == Some(c.avt) && self.by_avt.contains(&(c.avt, id));
                if !filed || c.avt < self.svt {
                    return Err(format!("{id}: A {} not in SVT {}", c.avt, self.svt));
                }
            }
            let timed = c.warped && c.warp_left.is_some() && matches!(c.state, State::Running(_));
            let no_cause = !c.want || c.warped || !c.runnable() || c.unwarp.is_zero();
            let bad = [
                (c.involuntary && c.runnable(), "runnable but blocked"),
                (c.prepaid >= self.cfg.mcu.max(Duration(1)), "mcu prepaid"),
                (c.warped && !c.want, "warped unasked"),
                (c.warp_left.is_some() && !c.warped, "budget unwarped"),
                (c.limit_timer != timed, "limit timer out of step"),
                (c.rewarp_at.is_some() && no_cause, "rewarp without cause"),
            ];
            if let Some((_, what)) = bad.iter().find(|b| b.0) {
                return Err(format!("{id}: {what}: {c:?}"));
            }
        }
        let mut preempting = 0;
        for (v, slot) in self.vps.iter().enumerate() {
            let Some(slot) = slot.run else { continue };
            preempting += usize::from(slot.preempting);
            let state = self.children.get(slot.child).map(|c| c.state);
            if state != Some(State::Running(ParentVp(v as u32))) {
                return Err(format!("vp{v} runs {}: {state:?}", slot.child));
            }
        }
        let side_filed = self.by_cpu.iter().map(BTreeSet::len).sum::<usize>() + self.fresh.len();
        let have = (
            self.global.len(),
            self.by_avt.len(),
            self.preempting,
            side_filed,
        );
        if have != (waiting, counted, preempting, side) || runnable != self.runnable {
            let want = (waiting, counted, preempting, side, runnable);
            return Err(format!(
                "(waiting, in SVT, preempting, by CPU): {have:?} {want:?}"
            ));
        }
        match self.by_avt.first() {
            Some(&(a, _)) if a != self.svt => Err(format!("SVT {}, least A {a}", self.svt)),
            _ => Ok(()),
        }
    }
}
