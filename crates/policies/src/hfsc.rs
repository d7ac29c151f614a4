//! `hfsc`: hierarchical fair service curve scheduling for the CPU.
//!
//! **Source.** Yau & Lam, "Decoupled delay and rate guarantees" (the FRC /
//! RCSP / HFSC paper), §5 ("Hierarchical Fair Service Curve"): equations
//! (7)-(10), the best-effort class of §5.2; the algorithm it adapts is
//! Stoica, Zhang & Ng's H-FSC (SIGCOMM '97), whose real-time criterion is
//! SCED (Sariowan, Cruz & Polyzos) with eligibility curves.
//!
//! **Algorithm.** Each child (a thread or a child scheduler) has a
//! two-piece linear service curve `S = ⟨r1, x, r2⟩`: slope `r1` for the
//! first `x` after it becomes runnable, `r2` after that (concave when
//! `r1 > r2`, convex when `r1 < r2`).
//! - *Deadline curve* `D` (7): on the first wake-up `D = S` anchored at
//!   `(now, c)`; on later wake-ups `D := min(D, S(· - now) + c)`, where `c`
//!   is the CPU time the child received: all of it by default (the
//!   paper's `c_i`, "the amount of CPU time i has received"), or with
//!   `count_link_sharing = false` only what the real-time criterion gave
//!   (Stoica et al.'s choice, which does not make a child that received
//!   excess by link sharing wait for its curve). Fig. 11's 7ms delay
//!   needs the paper's: a greedy competitor then is not eligible while it
//!   is ahead of its curve.
//!   For concave curves the minimum is exact (it is again a two-piece curve
//!   anchored at the wake-up, whose first segment ends where it meets the
//!   old curve); for convex ones, as in Stoica et al., the new curve
//!   replaces the old one unless the old one is lower at the wake-up.
//! - *Eligibility curve* `E` (9): equal to `D` for concave curves, the line
//!   of slope `r2` from `D`'s anchor for convex ones (what (9) evaluates to
//!   for two-piece curves). A waiting child is *eligible* from
//!   `e = E⁻¹(c)` on: the curve has caught up with what it received.
//!   (The paper's text reads "eligible when `E(t) < c(t)`"; we follow
//!   Stoica et al., eligible when `E(t) >= c(t)`, which is what makes the
//!   real-time criterion serve the curve.)
//! - *Deadline* (8): `d = D⁻¹(c + δ̂)`, where `δ̂` is the immediate CPU
//!   demand estimate, updated when the child blocks by (10) with
//!   `α = 1/4`: `δ̂ := (δ̂ + 3δ) / 4` (integer, rounded to nearest), `δ`
//!   the time since it was last scheduled after blocking or preemption. It
//!   starts at `quantum`, the paper's conservative bound (the clock tick).
//! - *Selection*: the eligible waiting child with the earliest deadline
//!   runs (the real-time criterion). When none
//!   is eligible, link-sharing by FRC finish values (Fig. 1 with `w = 0`):
//!   from the root, the child node with the smallest finish value, down to
//!   a leaf. Every CPU time received, by either criterion, advances the
//!   finish value of the leaf (rate `r2`) and of every class above it (at
//!   each class's rate) by L6 (§5.1: "all nodes on the path from the thread
//!   to the root"); a node becoming runnable gets `f := max(f, v)` (L2-L3),
//!   `v` the smallest finish value among its runnable siblings (kept as a
//!   never-decreasing floor per level, taken when a node is selected).
//! - A decision lasts at most `quantum` (the paper's rescheduling points
//!   are clock ticks); wake-ups do not preempt.
//!
//! **Hierarchy.** Parameter `classes` declares the link-sharing tree, e.g.
//! `"media:0.6, media/audio:0.2, media/video:0.4, batch:0.4"`: `name:rate`
//! at the root, `parent/name:rate` inside a class declared earlier, to any
//! depth; the rates inside a class add up to at most its rate (at the root,
//! to at most 1). A child names its class with `class`, the last part of
//! the path (default: attached to the root). Classes are internal nodes:
//! they take part in link sharing only (their service curve is linear,
//! §5.1). Excess is shared down the tree: what `audio` leaves unused goes
//! first to `video`, its sibling inside `media`, and only then to `batch`. A child with `best_effort = true` is §5.2's
//! best-effort thread: `r1 = r2` required, never eligible for the real-time
//! criterion, not admission controlled; it progresses by link sharing
//! (put such children in a class with a non-zero rate to guarantee the
//! class that rate's share of the excess).
//!
//! **Admission.** A non-best-effort child is admitted only if the sum of
//! all admitted curves, all anchored at the same instant (the worst case),
//! stays at or below the CPU: `Σ S_i(t) <= t` for all `t`, checked exactly
//! at every breakpoint `x_i` and for the final slope `Σ r2 <= 1`. Refusals
//! say which bound would be exceeded.
//!
//! **Rates** are decimal strings in `[0, 1]` with at most six fractional
//! digits (`"0.35"`), held as parts per million; every decision uses
//! integer arithmetic (`u128` intermediates, finish values in
//! `ns * 10^6 / rate` with the division's remainder carried per node).
//!
//! **Guarantees.** On one CPU, an admitted child's real-time service keeps
//! up with its deadline curve to within one decision (`quantum`, plus the
//! tick of the platform) and the estimate error of `δ̂` (SCED's guarantee
//! with the packet length replaced by the run length); the excess is
//! shared in proportion to `r2` (and class rates) by FRC.
//!
//! **Several CPUs** (`multiprocessor`). `"one"` (the default): one
//! CPU's worth of curves is admitted and every VP is served from the same
//! sets (no guarantee claimed on several VPs). `"partitioned"`: each VP has
//! its own part (children, class tree, sets) and is a uniprocessor HFSC. A
//! child is placed once, at admission, and runs only on its VP (no
//! migration: nothing is proven for it): a curve on the lowest-index VP
//! whose admission test passes (`fit = "first"`), or on the one of those
//! with the lowest `Σ r2` after adding it, ties to the lowest index
//! (`fit = "worst"`); a best-effort child on the VP with the fewest
//! best-effort children, ties to the lowest. A refusal names each VP's
//! load. `classes` are per VP: each part has its own copy of the tree, the
//! rates sharing that VP's CPU. The placement code ([`place`]) is shared
//! with the analysis, which replays it. `"global"` is refused: we know no
//! published admission test for service curves under global SCED.
//!
//! **Limits.** No
//! preemption on wake-up: a waking child waits for the current decision
//! (at most `quantum`). Cost: O(log n) per decision, wake-up, block and
//! charge (times the depth of the class tree), plus O(log x) steps of a binary search in a concave curve
//! update; admission is O(1) while `Σ max(r1, r2) <= 1`, else O(n²) (the exact
//! breakpoint check); partitioned, O(n) to gather each VP's curves, then
//! the same test per VP tried.

use crate::params;
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Scheduler, ShareRange, Value, VpState,
};

mod curve;
mod part;
mod place;
pub use curve::{admissible, parse_classes, ClassSpec, Curve, ServiceCurve, PPM};
pub use part::Fin;
use part::{Child, Part, State};
pub use place::{
    child_curve, fits, parse_fit, parse_mode, parse_modes, place, place_best_effort, r2_sum, Fit,
    Mode, DEFAULT_RATE, MODES,
};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "hfsc",
    summary: "hierarchical fair service curve: SCED deadlines plus FRC link sharing",
    doc: "HFSC for the CPU (Yau & Lam, section 5, after Stoica et al.): each child has a \
          two-piece service curve <r1, x, r2> (child params `r1`, `x`, `r2`, rates as \
          decimal strings). Eligible children run earliest SCED deadline first (deadline \
          curves updated on wake-up, immediate CPU demand by exponential averaging, \
          alpha = 0.25); otherwise link sharing by FRC finish values through the classes \
          declared in `classes` (\"name:rate, parent/name:rate, ...\", nested to any depth; \
          child param `class`). `best_effort` \
          children are never eligible. Admission keeps the sum of curves under the CPU. \
          Decisions last at most `quantum`. On several VPs: `multiprocessor` \
          \"one\" (default, one CPU's worth served from every VP, no claim there) or \
          \"partitioned\" (each child placed on one VP at admission by `fit` \
          \"first\" or \"worst\", admitted against that VP's CPU, never migrating; \
          classes per VP); \"global\" is refused (no published test applies).",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// The default decision length: the paper's 1 ms clock tick.
pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(1);

fn params() -> Vec<ParamSpec> {
    vec![
        params::positive_duration(
            "quantum",
            DEFAULT_QUANTUM,
            "the longest a decision lasts (the rescheduling period)",
        ),
        params::optional_str(
            "classes",
            "link-sharing classes, \"name:rate, parent/name:rate, ...\" (rates decimal; those \
             inside a class add up to at most its rate, at the root to at most 1)",
        ),
        ParamSpec::new(
            "count_link_sharing",
            ParamKind::Bool,
            "whether CPU time given by link sharing counts in c (the paper's c_i, default) \
             or only real-time service does (Stoica et al.)",
        )
        .with_default(Value::Bool(true)),
        params::multiprocessor(
            "\"one\": one CPU's worth of curves served from every VP (no claim on several); \
             \"partitioned\": each child placed on one VP at admission, admitted against that \
             VP's CPU, never migrating (\"global\" is refused: no published test applies)",
        ),
        params::fit(
            "partitioned placement: \"first\" (the lowest VP whose admission test passes) or \
             \"worst\" (of those, the lowest Σ r2 after adding the child, ties to the lowest VP)",
        ),
    ]
}

/// A curve's slopes: fractions of the CPU in whole ppm (`r2` must also be
/// above 0, which [`child_curve`] says in its own words).
const RATE: ParamKind = ParamKind::Rate {
    range: ShareRange::AtMostOne,
    ppm: true,
};

fn child_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "r1",
            RATE,
            "slope of the service curve's first segment (decimal in [0, 1])",
        )
        .with_default(Value::Str(DEFAULT_RATE.into())),
        ParamSpec::new(
            "x",
            ParamKind::Duration {
                min: Duration::ZERO,
            },
            "length of the first segment",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "r2",
            RATE,
            "slope after the first segment: the long-term rate (decimal in (0, 1])",
        )
        .with_default(Value::Str(DEFAULT_RATE.into())),
        params::optional_str(
            "class",
            "the link-sharing class (a name from `classes`, its last path part; empty: the root)",
        ),
        ParamSpec::new(
            "best_effort",
            ParamKind::Bool,
            "never eligible for the real-time criterion; not admission controlled",
        )
        .with_default(Value::Bool(false)),
    ]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let classes = parse_classes(params.str("classes"))?;
    let (mode, fit) = parse_modes(params)?;
    let mut hfsc = Hfsc::with_mode(params.duration("quantum"), classes, mode, fit)?;
    hfsc.count_link_sharing = params.bool("count_link_sharing");
    Ok(Box::new(hfsc))
}

/// The HFSC scheduler. See the module documentation.
#[derive(Debug)]
pub struct Hfsc {
    quantum: Duration,
    class_specs: Vec<ClassSpec>,
    mode: Mode,
    fit: Fit,
    /// One part (`Mode::One`), or one per VP (`Mode::Partitioned`).
    parts: Vec<Part>,
    /// The part each registered child belongs to.
    home: ChildMap<u32>,
    on_vp: Vec<Option<ChildId>>,
    /// Whether link-sharing service counts in `c` (see the module docs).
    pub count_link_sharing: bool,
}

impl Hfsc {
    /// An HFSC scheduler with decisions of at most `quantum` and the given
    /// link-sharing classes (see [`parse_classes`]), on one CPU's worth
    /// (`multiprocessor = "one"`).
    pub fn new(quantum: Duration, classes: Vec<ClassSpec>) -> Result<Self, String> {
        Hfsc::with_mode(quantum, classes, Mode::One, Fit::First)
    }

    /// As [`Hfsc::new`], with a multiprocessor mode and, partitioned, a
    /// placement rule.
    pub fn with_mode(
        quantum: Duration,
        classes: Vec<ClassSpec>,
        mode: Mode,
        fit: Fit,
    ) -> Result<Self, String> {
        if quantum.is_zero() {
            return Err("`quantum` must be longer than zero".into());
        }
        let mut hfsc = Hfsc {
            quantum,
            class_specs: classes,
            mode,
            fit,
            parts: Vec::new(),
            home: ChildMap::new(),
            on_vp: Vec::new(),
            count_link_sharing: true,
        };
        hfsc.ensure_parts(1);
        Ok(hfsc)
    }

    /// Partitioned: one part per VP held (the VPs are fixed when the
    /// instance is created; this also covers harnesses that skip `init`).
    fn ensure_parts(&mut self, vps: u32) {
        let want = match self.mode {
            Mode::One => 1,
            Mode::Partitioned => vps.max(1) as usize,
        };
        while self.parts.len() < want {
            self.parts.push(Part::new(&self.class_specs));
        }
    }

    /// The part serving `vp`.
    fn part_of_vp(&self, vp: ParentVp) -> usize {
        match self.mode {
            Mode::One => 0,
            Mode::Partitioned => vp.index(),
        }
    }

    fn child(&self, child: ChildId) -> Option<&Child> {
        let k = *self.home.get(child)?;
        self.parts[k as usize].children.get(child)
    }

    /// The VP a partitioned `hfsc` placed `child` on (`None` in mode
    /// `"one"`, where every child may run on every VP, or if unknown).
    pub fn placed_on(&self, child: ChildId) -> Option<ParentVp> {
        match self.mode {
            Mode::One => None,
            Mode::Partitioned => self.home.get(child).map(|&k| ParentVp(k)),
        }
    }

    /// `child`'s deadline curve, real-time service and ICD estimate.
    pub fn rt_state(&self, child: ChildId) -> Option<(Option<Curve>, u64, u64)> {
        self.child(child)
            .map(|c| (c.deadline_curve, c.rt_service, c.icd))
    }

    /// `child`'s eligible time and deadline as last computed.
    pub fn eligible_and_deadline(&self, child: ChildId) -> Option<(u64, u64)> {
        self.child(child).map(|c| (c.eligible_at, c.deadline))
    }

    /// `child`'s link-sharing finish value.
    pub fn finish(&self, child: ChildId) -> Option<Fin> {
        self.child(child).map(|c| c.finish)
    }

    /// A class's finish value, by name (on the first VP's class tree when
    /// partitioned: each VP has its own).
    pub fn class_finish(&self, name: &str) -> Option<Fin> {
        self.parts[0]
            .classes
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.finish)
    }

    /// Asks for the CPUs part `k` needs: all runnable children's worth in
    /// mode `"one"`; partitioned, VP `k` while anything placed there is
    /// runnable (a VP holding a CPU with nothing to run gives it back at
    /// its next decision).
    fn want(&self, cx: &mut Cx, k: usize) {
        let runnable = self.parts[k].runnable;
        match self.mode {
            Mode::One => cx.want_cpus(runnable),
            Mode::Partitioned => {
                let vp = ParentVp(k as u32);
                if runnable > 0 {
                    cx.request(vp);
                } else if cx.vp_state(vp) == VpState::Requesting {
                    cx.release(vp);
                }
            }
        }
    }

    /// Whatever ran on `vp` stopped; a child still runnable waits again.
    fn stop(&mut self, vp: ParentVp) -> Option<ChildId> {
        let child = self.on_vp.get_mut(vp.index()).and_then(Option::take)?;
        let k = *self.home.get(child)? as usize;
        let part = &mut self.parts[k];
        if part.children.get(child)?.state != State::Running(vp) {
            return None;
        }
        part.insert_waiting(child);
        Some(child)
    }

    /// Where a new child goes: part 0 in mode `"one"`, else by the
    /// placement rule (see [`place`]).
    fn placement(&self, curve: ServiceCurve, best_effort: bool) -> Result<usize, String> {
        if best_effort {
            return Ok(match self.mode {
                Mode::One => 0,
                Mode::Partitioned => {
                    let counts: Vec<u32> = self.parts.iter().map(|p| p.best_effort).collect();
                    place_best_effort(&counts)
                }
            });
        }
        match self.mode {
            Mode::One => {
                let part = &self.parts[0];
                if part.peak_sum + u64::from(curve.r1.max(curve.r2)) > PPM {
                    fits(&part.curves(), curve)?;
                }
                Ok(0)
            }
            Mode::Partitioned => {
                let vps: Vec<Vec<ServiceCurve>> = self.parts.iter().map(Part::curves).collect();
                place(&vps, curve, self.fit)
            }
        }
    }
}

impl Scheduler for Hfsc {
    fn policy(&self) -> &'static str {
        "hfsc"
    }

    fn init(&mut self, cx: &mut Cx) {
        self.ensure_parts(cx.vp_count());
    }

    /// Reads the curve and class; admits a real-time child only if the sum
    /// of curves stays under the CPU (partitioned: under the CPU of the VP
    /// the placement rule picks).
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        self.ensure_parts(cx.vp_count());
        let (curve, best_effort) = child_curve(params).map_err(|e| Reject(format!("hfsc: {e}")))?;
        let class = match params.get("class") {
            Some(Value::Str(name)) if !name.is_empty() => {
                let Some(k) = self.class_specs.iter().position(|c| &c.name == name) else {
                    let known: Vec<&str> =
                        self.class_specs.iter().map(|c| c.name.as_str()).collect();
                    return Err(Reject(format!(
                        "hfsc: `class` = \"{name}\": no such class (declared: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    )));
                };
                Some(k as u32)
            }
            _ => None,
        };
        let k = self
            .placement(curve, best_effort)
            .map_err(|e| Reject(format!("hfsc: not admitted: {e}")))?;
        let icd = self.quantum.as_nanos();
        let part = &mut self.parts[k];
        if best_effort {
            part.best_effort += 1;
        } else {
            part.peak_sum += u64::from(curve.r1.max(curve.r2));
        }
        let floor = part.level_floor(class);
        part.children.insert(
            child,
            Child {
                curve,
                best_effort,
                class,
                state: State::Idle,
                deadline_curve: None,
                rt_service: 0,
                total_service: 0,
                icd,
                burst_start: Instant::ZERO,
                by_rt: false,
                finish: floor,
                rem: 0,
                eligible_at: 0,
                deadline: 0,
                in_eligible: false,
            },
        );
        self.home.insert(child, k as u32);
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(&k) = self.home.get(child) else {
            return;
        };
        let k = k as usize;
        let part = &mut self.parts[k];
        if part.children[child].state != State::Idle {
            if let Some(vp) = part.deactivate(child) {
                self.on_vp[vp.index()] = None;
            }
            self.want(cx, k);
        }
        let part = &mut self.parts[k];
        if let Some(c) = part.children.remove(child) {
            if c.best_effort {
                part.best_effort -= 1;
            } else {
                part.peak_sum -= u64::from(c.curve.r1.max(c.curve.r2));
            }
        }
        self.home.remove(child);
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(&k) = self.home.get(child) else {
            return;
        };
        let k = k as usize;
        let part = &mut self.parts[k];
        if part.children[child].state != State::Idle {
            return;
        }
        part.activate(child, cx.now().as_nanos());
        part.insert_waiting(child);
        self.want(cx, k);
    }

    /// A running child that blocks updates its ICD estimate by (10).
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(&k) = self.home.get(child) else {
            return;
        };
        let k = k as usize;
        let part = &mut self.parts[k];
        let c = &mut part.children[child];
        match c.state {
            State::Idle => return,
            State::Running(_) => {
                let burst = cx.now().saturating_since(c.burst_start).as_nanos();
                c.icd = (c.icd + 3 * burst + 2) / 4;
            }
            State::Waiting => {}
        }
        if let Some(vp) = part.deactivate(child) {
            self.on_vp[vp.index()] = None;
        }
        self.want(cx, k);
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
        }
        self.ensure_parts(cx.vp_count().max(vp.0 + 1));
        let previous = self.stop(vp);
        let now = cx.now();
        let k = self.part_of_vp(vp);
        let part = &mut self.parts[k];
        let (child, by_rt) = match part.pick_rt(now.as_nanos()) {
            Some(child) => (child, true),
            None => match part.pick_ls() {
                Some(child) => (child, false),
                None => return Dispatch::Release,
            },
        };
        part.remove_waiting(child);
        let c = &mut part.children[child];
        c.state = State::Running(vp);
        c.by_rt = by_rt;
        if previous != Some(child) {
            c.burst_start = now;
        }
        self.on_vp[vp.index()] = Some(child);
        Dispatch::Run {
            child,
            until: now.saturating_add(self.quantum),
        }
    }

    fn vp_revoke(&mut self, _cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp);
    }

    /// CPU time counts in `c` when the real-time criterion chose the child,
    /// and advances finish values up the path whatever chose it (L6).
    fn charge(&mut self, _cx: &mut Cx, child: ChildId, ran: Duration) {
        let Some(&k) = self.home.get(child) else {
            return;
        };
        let part = &mut self.parts[k as usize];
        let Some(c) = part.children.get_mut(child) else {
            return;
        };
        let ran = ran.as_nanos();
        c.total_service += ran;
        if c.by_rt || self.count_link_sharing {
            c.rt_service += ran;
        }
        part.advance_finishes(child, ran);
    }

    fn check_invariants(&self) -> Result<(), String> {
        let placed: usize = self.parts.iter().map(|p| p.children.len()).sum();
        if placed != self.home.len() {
            return Err(format!(
                "{placed} children in the parts, {} placed",
                self.home.len()
            ));
        }
        if self.mode == Mode::One && self.parts.len() != 1 {
            return Err(format!("mode one with {} parts", self.parts.len()));
        }
        for (child, &k) in self.home.iter() {
            if !self
                .parts
                .get(k as usize)
                .is_some_and(|p| p.children.contains(child))
            {
                return Err(format!(
                    "{child} placed on part {k}, which does not hold it"
                ));
            }
        }
        for (k, part) in self.parts.iter().enumerate() {
            let at = |e: String| match self.mode {
                Mode::One => e,
                Mode::Partitioned => format!("vp{k}: {e}"),
            };
            part.check(&self.on_vp).map_err(at)?;
            if self.mode == Mode::Partitioned {
                // Placement: a child runs only on the VP it was placed on,
                // and each VP's curves pass the per-VP admission test.
                for (child, c) in part.children.iter() {
                    if let State::Running(vp) = c.state {
                        if vp.index() != k {
                            return Err(format!("{child} placed on vp{k} runs on {vp}"));
                        }
                    }
                }
                if part.peak_sum > PPM {
                    admissible(&part.curves())
                        .map_err(|e| at(format!("the curves placed here exceed the CPU: {e}")))?;
                }
            }
        }
        for (i, slot) in self.on_vp.iter().enumerate() {
            if let Some(child) = slot {
                match self.child(*child) {
                    Some(c) if c.state == State::Running(ParentVp(i as u32)) => {}
                    other => return Err(format!("vp{i} holds {child} in state {other:?}")),
                }
            }
        }
        Ok(())
    }
}
