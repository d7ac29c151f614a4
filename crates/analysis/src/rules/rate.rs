//! Rules for the rate-based schedulers of Yau & Lam ("Decoupled delay and
//! rate guarantees..."): `frc` (§3), `rcsp` (§4) and `hfsc` (§5), in the
//! HLS guarantee language (Regehr & Stankovic §4).
//!
//! **`frc`**: `ALL -> PSBE+, PS -> PS+`. Each child has a rate `r_i`
//! (`rate`, or with service `classes` the effective rate
//! `r̂_i·R_k / max(R_k, Σ r̂)` of its class) and `q_i = w_i + tick` (`w_i`
//! the child's `quantum`, at least the node's `min_quantum`). Under ALL,
//! with `Σ r ≤ 1` over all children, Corollary 1.1 (bound (4)) gives
//! `r_i (t − Σ_{j≠i} q_j) − q_i`, i.e. PSBE `r_i, r_i·Σ_{j≠i} q_j + q_i`;
//! with `Σ r > 1` Theorem 1 (bound (3)) gives PSBE `r_i/Σr,
//! (r_i·Σ_{j≠i} q_j + q_i·(Σr − r_i)) / Σr`. `Δ`, the threads ever runnable
//! in the interval, is taken as every child: a superset only lowers both
//! bounds, so the label holds however the children come and go. Under any
//! other input that rewrites to PS s: PS `s·r_i/Σr` (FRC's finish values
//! advance by the service the node receives, so Theorem 1's argument gives
//! the share of what it receives, without a bound on the error since the
//! input has none). δ is rounded up, shares down.
//!
//! **`rcsp`**: the same with `q_i = 2 (w_i + tick)`: an eligible child may
//! lead the slowest by `w/r` and is then dispatched for a whole quantum, so
//! Theorem 1 holds with the quanta doubled, not as the paper says with
//! `w` (see the `rcsp` policy's header and the property test of both in
//! the simulator's `frc` tests). Doubling the tick too is conservative.
//!
//! **`hfsc`**: `ALL -> PS+`. A child with the service curve `⟨r1, x, r2⟩`,
//! admitted (the curves of the non-best-effort children, anchored at the
//! same instant, sum to at most `t` for every `t`: the policy's admission
//! test, [`hsched_policies::hfsc::admissible`], called here), receives at
//! least its curve from the start of each backlogged period, less a quantum
//! (§5: the real-time criterion meets every deadline of admitted curves):
//! in the long run the slope `r2`, so PS `r2`. No PSBE is claimed: link
//! sharing serves a child in advance and may then hold it below any rate
//! for a while (Fig. 10: `y` drops below `r2` after being served early), so
//! no bound holds over *every* interval. Best-effort children (and, when
//! the curves exceed the CPU, every child: some will be refused, an error)
//! get NULL. Service curves are in real time: under anything but ALL
//! nothing is claimed.
//!
//! **`hfsc` on several VPs.** With `multiprocessor = "one"` (the default)
//! nothing is claimed on several VPs (one set of curves served from every
//! VP: the paper's bound is uniprocessor). With `"partitioned"` each child
//! is placed on one VP at admission and runs only there, so each VP is a
//! uniprocessor HFSC: placement is replayed in the order the children join
//! through the policy's own placement code
//! ([`hsched_policies::hfsc::place`], first or worst fit), a child placed
//! gets PS `r2` when the node receives ALL on every VP it holds (one whole
//! CPU per VP), and one no VP admits is refused (a thread: a warning, it
//! runs elsewhere; a scheduler: an error). A placement that could differ
//! because an earlier child may have left is promised only when it fits
//! whatever left (see `hfsc_partitioned`). `"global"` is refused at build
//! time: no published multiprocessor test for service curves applies.
//!
//! **Limits.** One CPU for `frc` and `rcsp`, and for `hfsc` unless
//! partitioned: on several VPs they claim nothing (the papers' bounds are
//! uniprocessor). Children of an `hfsc` class tree (`class`) are analysed
//! by their own curves only; the classes' shares of the excess are not
//! claimed (partitioned, each VP has its own copy of the class tree).

use super::proportional::{as_ps, usable};
use super::{duration_param, rate_text, str_param, Eval, Label, Node, Severity};
use super::{Child, ChildKind, Verdict};
use crate::guarantee::Guarantee;
use hsched_core::{Duration, Instant, Share};
use hsched_policies::frc::{self as frc_policy, ServiceClass};
use hsched_policies::hfsc::{self as hfsc_policy, Fit as HfscFit, Mode as HfscMode, ServiceCurve};

/// (policy, Table 1 row, rule).
pub const RULES: &[(&str, &str, Eval)] = &[
    ("frc", "ALL -> PSBE+, PS -> PS+", frc),
    ("rcsp", "ALL -> PSBE+, PS -> PS+", rcsp),
    ("hfsc", "ALL -> PS+", hfsc),
];

pub fn frc(node: &Node<'_>) -> Verdict {
    rate_controlled(node, 1)
}

pub fn rcsp(node: &Node<'_>) -> Verdict {
    rate_controlled(node, 2)
}

/// A child's rate and quantum as the policy reads them
/// ([`frc_policy::ChildTerms`]), the rate exact.
fn frc_child(c: &Child<'_>, min_quantum: Duration) -> Result<(u64, Duration, String), String> {
    let terms = frc_policy::ChildTerms::from_params(c.params, min_quantum)?;
    Ok((terms.rate, terms.quantum, terms.class.unwrap_or_default()))
}

/// `classes = "GR:0.6:0, FR:0.4:inf"`, read by the policy's own parser;
/// each class's limit `R_k (1 + b_k)` is the policy's too.
fn frc_classes(text: &str) -> Result<Vec<ServiceClass>, String> {
    let classes = frc_policy::parse_classes(text)?;
    for c in &classes {
        if c.overbook.is_some() && c.limit().is_none() {
            return Err(format!(
                "`classes`: class `{}`: an overbooking limit too large to count",
                c.name
            ));
        }
    }
    Ok(classes)
}

/// What differential admission (§3.1) does with a child.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Admission {
    /// Admitted whatever children leave meanwhile: every child of its
    /// class that joins no later than it, admitted or not, fits with it.
    Sure,
    /// Admitted when no child leaves, but not for sure: had a child left,
    /// one refused before it could have taken the room (why).
    Unsure(String),
    /// Refused unless some child left before it joined (why).
    Refused(String),
}

/// Replays admission over `children` in the order they join, `nominal`
/// giving each one's `r̂` (ppm) and class, through the policy's own test
/// ([`ServiceClass::admits`]).
fn admission(
    children: &[Child<'_>],
    nominal: &[(u64, usize)],
    classes: &[ServiceClass],
) -> Vec<Admission> {
    let mut order: Vec<usize> = (0..children.len()).collect();
    order.sort_by_key(|&i| children[i].arrival);
    let mut out = vec![Admission::Sure; children.len()];
    // Σ r̂ so far per class: every child that joined (the worst case) and
    // those the policy admits when none leaves.
    let mut all: Vec<ServiceClass> = classes.to_vec();
    let mut kept: Vec<ServiceClass> = classes.to_vec();
    for i in order {
        let (r, k) = nominal[i];
        let class = &classes[k];
        let (Some(worst), Some(with_kept)) = (
            all[k].admitted.checked_add(r),
            kept[k].admitted.checked_add(r),
        ) else {
            out[i] = Admission::Unsure("more rate than can be counted".into());
            continue;
        };
        let Some(limit) = class.limit() else {
            all[k].admitted = worst;
            continue;
        };
        if !kept[k].admits(r) {
            out[i] = Admission::Refused(format!(
                "class `{}` refuses it at admission: {} admitted + {} > R (1 + b) = {}",
                class.name,
                rate_text_any(Share::from_ppm(kept[k].admitted)),
                rate_text(Share::from_ppm(r)),
                rate_text_any(limit)
            ));
        } else {
            kept[k].admitted = with_kept;
            if !all[k].admits(r) {
                out[i] = Admission::Unsure(format!(
                    "class `{}` may refuse it at admission: with every child that joins before it, {} > R (1 + b) = {} (one refused before it gets in if another has left)",
                    class.name,
                    rate_text_any(Share::from_ppm(worst)),
                    rate_text_any(limit)
                ));
            }
        }
        all[k].admitted = worst;
    }
    out
}

/// `frc` (`factor` 1) and `rcsp` (`factor` 2: the quanta doubled).
fn rate_controlled(node: &Node<'_>, factor: u64) -> Verdict {
    let mut v = Verdict::all_null(node);
    if node.children.is_empty() {
        return v;
    }
    let fail = |v: &mut Verdict, e: String| {
        v.problems
            .push(node.problem(Severity::Error, format!("{}: {e}", node.who())));
    };
    let min_quantum = match duration_param(node.params, "min_quantum", None) {
        Ok(q) => q.unwrap_or(frc_policy::DEFAULT_MIN_QUANTUM),
        Err(e) => {
            fail(&mut v, e);
            return v;
        }
    };
    let classes = match str_param(node.params, "classes").and_then(|t| frc_classes(t.unwrap_or("")))
    {
        Ok(c) => c,
        Err(e) => {
            fail(&mut v, e);
            return v;
        }
    };
    let mut children = Vec::with_capacity(node.children.len());
    for c in &node.children {
        match frc_child(c, min_quantum) {
            Ok(x) => children.push(x),
            Err(e) => {
                v.problems.push(node.child_problem(
                    c,
                    Severity::Error,
                    format!("{} under {}: {e}", c.describe(), node.who()),
                ));
                return v;
            }
        }
    }
    // Effective rates (§3.1): a child of class k (the first when it names
    // none) gets r̂·R_k / max(R_k, Σ r̂ of the admitted children of k), at
    // least r̂·R_k / max(R_k, min(Σ r̂ of every child of k, R_k (1 + b_k))),
    // since admission never lets the sum past R_k (1 + b_k). The admitted
    // children of a class share at most R_k between them.
    let mut rates = vec![Share::ZERO; children.len()];
    let mut admitted = vec![Admission::Sure; children.len()];
    let mut total = Share::ZERO;
    if classes.is_empty() {
        for (i, (r, ..)) in children.iter().enumerate() {
            rates[i] = Share::from_ppm(*r);
            match total.checked_add(rates[i]) {
                Some(t) => total = t,
                None => return v,
            }
        }
    } else {
        let mut nominal = Vec::with_capacity(children.len());
        for (rate, _, class) in &children {
            let k = classes
                .iter()
                .position(|c| &c.name == class)
                .or(class.is_empty().then_some(0));
            let Some(k) = k else {
                fail(&mut v, format!("no service class `{class}`"));
                return v;
            };
            nominal.push((*rate, k));
        }
        admitted = admission(&node.children, &nominal, &classes);
        for (k, class) in classes.iter().enumerate() {
            let mine = || nominal.iter().enumerate().filter(move |(_, n)| n.1 == k);
            let class_rate = Share::from_ppm(class.rate);
            let Some(sum) = mine().try_fold(Share::ZERO, |a, (_, (r, _))| {
                a.checked_add(Share::from_ppm(*r))
            }) else {
                return v;
            };
            let most = class.limit().map_or(sum, |l| sum.min(l)).max(class_rate);
            for (i, (r, _)) in mine() {
                let r = Share::from_ppm(*r);
                match r.checked_mul(class_rate).and_then(|x| x.checked_div(most)) {
                    Some(e) => rates[i] = e,
                    None => return v,
                }
            }
            // Σ R_k ≤ 1 (the policy checks it), so this cannot overflow.
            total = total.checked_add(sum.min(class_rate)).unwrap_or(Share::ONE);
        }
    }
    let tick = node.machine.tick.unwrap_or(Duration::ZERO);
    let quanta: Vec<u128> = children
        .iter()
        .map(|(_, w, _)| u128::from(factor) * u128::from(w.saturating_add(tick).as_nanos()))
        .collect();
    let all_quanta: u128 = quanta.iter().sum();
    let input = node.input();
    // Admission refuses whatever it receives; shares and bounds need ALL
    // or PS, on one CPU.
    let promising = usable(node, &mut v);
    let why = |i: usize| {
        format!(
            "rate {} of {}; q = {}{}{}",
            rate_text(rates[i]),
            rate_text_any(total),
            if factor == 2 { "2 x " } else { "" },
            children[i].1,
            if node.machine.tick.is_some() {
                " + 1 tick"
            } else {
                ""
            }
        )
    };
    if !promising {
    } else if input == Guarantee::All {
        for (i, &r) in rates.iter().enumerate() {
            let others = all_quanta - quanta[i];
            let g = if total <= Share::ONE {
                // Corollary 1.1: PSBE r, r·Σ_{j≠i} q_j + q_i.
                Some(Guarantee::Psbe {
                    share: r,
                    delta: ceil_ns(others, r).saturating_add(ns(quanta[i])),
                })
            } else {
                // Theorem 1: PSBE r/Σr, (r·Σ_{j≠i} q_j + q_i·(Σr − r)) / Σr.
                let share = r.checked_div(total);
                let rest = total.checked_sub(r).and_then(|x| x.checked_div(total));
                share.zip(rest).map(|(s, rest)| Guarantee::Psbe {
                    share: s,
                    delta: ceil_ns(others, s).saturating_add(ceil_ns(quanta[i], rest)),
                })
            };
            if let Some(g) = g {
                v.labels[i] = Label::because(g, why(i));
            }
        }
    } else if let Some(d) = as_ps(&input) {
        if let Guarantee::Ps(share) = d.result {
            if d.result != input {
                v.taken_as = Some(d.clone());
            }
            for (i, &r) in rates.iter().enumerate() {
                if let Some(s) = r.checked_div(total).and_then(|x| x.checked_mul(share)) {
                    v.labels[i] = Label::because(Guarantee::Ps(s), why(i));
                }
            }
        }
    } else {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: {} needs ALL or PS (or a guarantee that rewrites into PS), but {}: its children get NULL",
                node.under(),
                node.policy,
                node.given()
            ),
        ));
    }
    // A child admission may refuse is promised nothing; one it refuses
    // whatever happens runs elsewhere (the default scheduler), said once.
    for (i, a) in admitted.into_iter().enumerate() {
        let c = &node.children[i];
        let (why, refused) = match a {
            Admission::Sure => continue,
            Admission::Unsure(why) => (why, false),
            Admission::Refused(why) => {
                // A thread goes elsewhere; a scheduler cannot attach at all.
                let (severity, then) = match c.kind {
                    ChildKind::Thread => (
                        Severity::Warning,
                        format!("it runs under the default scheduler (or below the hierarchy, when {} is the default)", node.who()),
                    ),
                    ChildKind::Scheduler { .. } => {
                        (Severity::Error, "the hierarchy cannot be built".to_string())
                    }
                };
                v.problems.push(node.child_problem(
                    c,
                    severity,
                    format!("{} under {}: {why}; {then}", c.describe(), node.who()),
                ));
                (why, true)
            }
        };
        v.labels[i] = match refused {
            true => Label::refused(why),
            false => Label::because(Guarantee::Null, why),
        };
    }
    v
}

/// A sum of rates may exceed 1, which `rate_text` (a RESU rate) cannot
/// print.
fn rate_text_any(r: Share) -> String {
    if r <= Share::ONE {
        rate_text(r)
    } else {
        format!("{:.4}", r.as_f64())
    }
}

fn ns(x: u128) -> Duration {
    Duration(u64::try_from(x).unwrap_or(u64::MAX))
}

/// `⌈x·r⌉` ns; saturating is weaker, never stronger.
fn ceil_ns(x: u128, r: Share) -> Duration {
    let num = x.checked_mul(u128::from(r.num()));
    num.map_or(Duration::MAX, |n| ns(n.div_ceil(u128::from(r.den()))))
}

/// A rate in ppm (the policy's unit) as a share, exactly.
fn ppm_ratio(ppm: u32) -> Share {
    Share::from_ppm(ppm.into())
}

/// A curve as the labels print it: `<0.5, 10ms, 0.1>`.
fn curve_text(s: &ServiceCurve) -> String {
    format!(
        "<{}, {}, {}>",
        rate_text_any(ppm_ratio(s.r1)),
        Duration(s.x),
        rate_text(ppm_ratio(s.r2))
    )
}

pub fn hfsc(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    if node.children.is_empty() {
        return v;
    }
    // The policy's own readers: a value it refuses at build time is an
    // error here.
    let (mode, fit) = match hfsc_policy::parse_modes(node.params) {
        Ok(m) => m,
        Err(e) => {
            v.problems
                .push(node.problem(Severity::Error, format!("{}: {e}", node.who())));
            return v;
        }
    };
    let mut curves = Vec::with_capacity(node.children.len());
    for c in &node.children {
        match hfsc_policy::child_curve(c.params) {
            Ok(x) => curves.push(x),
            Err(e) => {
                v.problems.push(node.child_problem(
                    c,
                    Severity::Error,
                    format!("{} under {}: {e}", c.describe(), node.who()),
                ));
                return v;
            }
        }
    }
    match mode {
        HfscMode::One => hfsc_one(node, &curves, v),
        HfscMode::Partitioned => hfsc_partitioned(node, &curves, fit, v),
    }
}

/// `multiprocessor = "one"`: all the curves against one CPU, on one VP.
fn hfsc_one(node: &Node<'_>, curves: &[(ServiceCurve, bool)], mut v: Verdict) -> Verdict {
    if !usable(node, &mut v) {
        return v;
    }
    let input = node.input();
    if input != Guarantee::All {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: hfsc's service curves are in real time and hold only on a whole CPU, but {}: its children get NULL",
                node.under(),
                node.given()
            ),
        ));
        return v;
    }
    let real_time: Vec<ServiceCurve> = curves.iter().filter(|c| !c.1).map(|c| c.0).collect();
    if hfsc_policy::admissible(&real_time).is_err() {
        v.problems.push(node.problem(
            Severity::Error,
            format!(
                "{}: the service curves of its children, anchored together, exceed the CPU (Σ S_i(t) > t at some breakpoint, or Σ r2 > 1): some will be refused, so none is promised anything",
                node.who()
            ),
        ));
        return v;
    }
    for (i, (s, best_effort)) in curves.iter().enumerate() {
        if !best_effort {
            v.labels[i] = Label::because(
                Guarantee::Ps(ppm_ratio(s.r2)),
                format!(
                    "service curve <{}, x, {}>: long-term slope r2",
                    rate_text_any(ppm_ratio(s.r1)),
                    rate_text(ppm_ratio(s.r2))
                ),
            );
        }
    }
    v
}

/// `multiprocessor = "partitioned"`: placement replayed in the order the
/// children join (by arrival, ties in child order) through the policy's own
/// [`hfsc_policy::place`], each VP a uniprocessor HFSC.
///
/// A child placed in the replay is promised PS r2 when its placement does
/// not depend on who left before it joined: either no earlier child can
/// have left (the policy then sees exactly the replay's state), or it fits
/// whatever left, because some VP's peak load is at most the average
/// `P/N` of the peaks `P` of every earlier child (admitted or not), and
/// `P/N + max(r1, r2) <= 1` passes that VP's test. A thread joining
/// before it may have left when it joined strictly earlier or does not use
/// the CPU (it may finish at once); a scheduler stays.
fn hfsc_partitioned(
    node: &Node<'_>,
    curves: &[(ServiceCurve, bool)],
    fit: HfscFit,
    mut v: Verdict,
) -> Verdict {
    let n = node.vps();
    // Labels need ALL on every VP: each VP is then a whole CPU of its own.
    let promising = if node.input() == Guarantee::Null {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: hfsc receiving NULL gives NULL ({}): its children are best effort",
                node.under(),
                node.given()
            ),
        ));
        false
    } else if node.inputs.iter().any(|i| i.guarantee != Guarantee::All) {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: partitioned hfsc's service curves are in real time and hold only when each VP is a whole CPU (ALL), but {}: its children get NULL",
                node.under(),
                node.given()
            ),
        ));
        false
    } else {
        true
    };
    let fit_name = match fit {
        HfscFit::First => "first fit",
        HfscFit::Worst => "worst fit",
    };
    let mut order: Vec<usize> = (0..node.children.len()).collect();
    order.sort_by_key(|&i| node.children[i].arrival);
    let mut placed: Vec<Vec<ServiceCurve>> = vec![Vec::new(); n as usize];
    // Over the earlier children with curves: Σ max(r1, r2), and whether
    // one may have left (see above).
    let (mut peaks, mut earlier): (u64, usize) = (0, 0);
    let mut first_thread: Option<Instant> = None;
    let mut idle_thread = false;
    for i in order {
        let (s, best_effort) = curves[i];
        let c = &node.children[i];
        if best_effort {
            v.labels[i] = Label::because(
                Guarantee::Null,
                "best effort: no curve, placed on the VP with the fewest best-effort children",
            );
            continue;
        }
        let peak = u64::from(s.r1.max(s.r2));
        let may_have_left = idle_thread || first_thread.is_some_and(|t| t < c.arrival);
        match hfsc_policy::place(&placed, s, fit) {
            Ok(k) => {
                placed[k].push(s);
                let load = hfsc_policy::r2_sum(&placed[k]);
                let fits_anyway = u128::from(n) * u128::from(peak) + u128::from(peaks)
                    <= u128::from(n) * 1_000_000;
                if may_have_left && !fits_anyway {
                    v.labels[i] = Label::because(
                        Guarantee::Null,
                        format!(
                            "placed on vp{k} only if no earlier child left: one may have, and then placement can differ; the peaks of the {earlier} earlier curves ({}) leave no VP sure to fit max(r1, r2) = {}",
                            rate_text_any(Share::from_ppm(peaks)),
                            rate_text(ppm_ratio(s.r1.max(s.r2)))
                        ),
                    );
                } else if promising {
                    v.labels[i] = Label::because(
                        Guarantee::Ps(ppm_ratio(s.r2)),
                        format!(
                            "service curve {} on vp{k} of {n} ({fit_name}; Σ r2 there {}): long-term slope r2",
                            curve_text(&s),
                            rate_text_any(Share::from_ppm(load))
                        ),
                    );
                }
            }
            Err(e) => {
                // A thread goes elsewhere; a scheduler cannot attach at all.
                let (severity, then) = match c.kind {
                    ChildKind::Thread => (
                        Severity::Warning,
                        format!("it runs under the default scheduler (or below the hierarchy, when {} is the default)", node.who()),
                    ),
                    ChildKind::Scheduler { .. } => {
                        (Severity::Error, "the hierarchy cannot be built".to_string())
                    }
                };
                let why = format!("partitioned hfsc ({fit_name}) refuses it: {e}");
                v.problems.push(node.child_problem(
                    c,
                    severity,
                    format!("{} under {}: {why}; {then}", c.describe(), node.who()),
                ));
                v.labels[i] = Label::refused(why);
            }
        }
        peaks += peak;
        earlier += 1;
        if c.kind == ChildKind::Thread {
            idle_thread |= !c.runs;
            first_thread = Some(first_thread.map_or(c.arrival, |t| t.min(c.arrival)));
        }
    }
    v
}
