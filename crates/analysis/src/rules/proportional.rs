//! Rules for the proportional-share schedulers: `sfq` and `bvt`.
//!
//! **`sfq`** (HLS §5.1, "Proportional Share"; Goyal, Guo & Vin): `PS ->
//! PS+, PSBE -> PSBE+`. Under PSBE s, δ (a fluctuation-constrained server),
//! a child with weight fraction r = w / Σw gets PSBE s·r, r·δ + r·T·q + q,
//! T the number of children, q the longest run segment: the `quantum`,
//! plus one platform tick when there is one (a horizon takes effect at the
//! first tick at or after it). A reservation or ALL is first rewritten into
//! the strongest PSBE it implies (Theorems 3 and 4; ALL is PSBE 1, 0); what
//! only rewrites to PS gives PS s·r. Limits, each a warning (its children
//! are then best effort or get less): NULL in gives NULL out; a child with a
//! `warp` borrows ahead of the others, so with any warp no error bound is
//! claimed, shares only (PS); on several VPs nothing is claimed (global SFQ
//! has no bound). Table 1 also lists RESU -> PSBE+ for the paper's PS
//! scheduler, which the paper "believes (but has not proved)"; this `sfq`
//! has no deadlines to announce to a slower processor, so RESU is not used.
//!
//! **`bvt`** (Duda & Cheriton, SOSP '99, §2): `PS -> PS+`. A child with mcu
//! advance m gets the weight 1/m, so PS s·(1/m)/Σ(1/m_j): BVT's weighted
//! fair share (§2.1), which warp does not raise in the long run (§2.2).
//! No bounded error (PSBE) is claimed, and why: a run is charged in whole
//! mcus, and the unused rest of the last mcu is forfeit when the run ends
//! (§3). A child preempted early again and again (by waking or warped
//! children) is charged an mcu for each short run, so how far it falls
//! behind its share depends on how often others wake, not on mcu and C
//! alone: no constant δ bounds it. (Without such preemptions each child's
//! actual virtual time stays within C + mcu of SVT, which would give an
//! SFQ-like bound with q = C + 2 mcu; the workload decides whether that
//! holds.) Under NULL or on several VPs, as `sfq`.

use super::{duration_param, int_param, Eval, Label, Node, Severity, Verdict};
use crate::guarantee::{Guarantee, Kind};
use crate::rewrite::{self, Derivation};
use hsched_core::{Duration, Share};

/// (policy, Table 1 row, rule).
pub const RULES: &[(&str, &str, Eval)] = &[
    ("sfq", "PS -> PS+, PSBE -> PSBE+", sfq),
    ("bvt", "PS -> PS+", bvt),
];

/// The default quantum of the `sfq` policy.
pub const SFQ_DEFAULT_QUANTUM: Duration = Duration::from_millis(10);
/// The default mcu advance of the `bvt` policy.
pub const BVT_DEFAULT_ADVANCE: i64 = 10;

/// The checks both share the front of: children to label, one VP, not NULL.
pub(super) fn usable(node: &Node<'_>, v: &mut Verdict) -> bool {
    if node.children.is_empty() {
        return false;
    }
    let input = node.input();
    if input == Guarantee::Null {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: a proportional-share scheduler receiving NULL gives NULL ({}): its children are best effort",
                node.under(),
                node.given()
            ),
        ));
        return false;
    }
    if node.vps() > 1 {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: {} claims no share or bound on several CPUs (it holds {} VPs): its children get NULL",
                node.under(),
                node.policy,
                node.vps()
            ),
        ));
        return false;
    }
    true
}

/// The input as PS (for shares), or `None`.
pub(super) fn as_ps(input: &Guarantee) -> Option<Derivation> {
    if let Guarantee::Ps(_) = input {
        return Some(Derivation {
            result: *input,
            steps: Vec::new(),
        });
    }
    rewrite::strongest(input, Kind::Ps)
}

/// `w / total` exactly.
fn fraction(w: u64, total: u64) -> Option<Share> {
    Share::new(w, total)
}

pub fn sfq(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    if !usable(node, &mut v) {
        return v;
    }
    let quantum = match duration_param(node.params, "quantum", Some(SFQ_DEFAULT_QUANTUM)) {
        Ok(q) => q.unwrap_or(SFQ_DEFAULT_QUANTUM),
        Err(e) => {
            v.problems
                .push(node.problem(Severity::Error, format!("{}: {e}", node.who())));
            return v;
        }
    };
    let segment = quantum.saturating_add(node.machine.tick.unwrap_or(Duration::ZERO));
    let mut weights = Vec::with_capacity(node.children.len());
    let mut warped: Option<&str> = None;
    for c in &node.children {
        let w = match int_param(c.params, "weight", 1) {
            Ok(w) if w >= 1 => w as u64,
            Ok(w) => {
                v.problems.push(node.child_problem(
                    c,
                    Severity::Error,
                    format!(
                        "{} under {}: weight {w}: expected at least 1",
                        c.describe(),
                        node.who()
                    ),
                ));
                return v;
            }
            Err(e) => {
                v.problems.push(node.child_problem(
                    c,
                    Severity::Error,
                    format!("{} under {}: {e}", c.describe(), node.who()),
                ));
                return v;
            }
        };
        weights.push(w);
        if warped.is_none()
            && duration_param(c.params, "warp", None)
                .ok()
                .flatten()
                .is_some_and(|d| !d.is_zero())
        {
            warped = Some(c.name);
        }
    }
    let total: u64 = weights.iter().fold(0u64, |a, &w| a.saturating_add(w));
    let threads = node.children.len() as u64;
    let input = node.input();
    let psbe = match input {
        Guarantee::Psbe { .. } => Some(Derivation {
            result: input,
            steps: Vec::new(),
        }),
        _ => rewrite::strongest(&input, Kind::Psbe),
    };
    if let (Some(d), None) = (&psbe, warped) {
        if let Guarantee::Psbe { share, delta } = d.result {
            if d.result != input {
                v.taken_as = Some(d.clone());
            }
            for (i, &w) in weights.iter().enumerate() {
                let Some(r) = fraction(w, total) else {
                    continue;
                };
                let g = rewrite::sfq_child(share, delta, segment, threads, r);
                let tick = if node.machine.tick.is_some() {
                    " + 1 tick"
                } else {
                    ""
                };
                v.labels[i] = Label::because(
                    g,
                    format!("weight {w} of {total}; T = {threads}, q = {quantum}{tick}"),
                );
            }
            return v;
        }
    }
    let Some(d) = as_ps(&input) else {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: sfq needs PS or PSBE (or a guarantee that rewrites into one), but {}: its children get NULL",
                node.under(),
                node.given()
            ),
        ));
        return v;
    };
    if let Some(name) = warped {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: child `{name}` has a warp, which lets it run ahead of its share: no error bound is claimed, shares only (PS)",
                node.who()
            ),
        ));
    }
    let Guarantee::Ps(share) = d.result else {
        return v;
    };
    if d.result != input {
        v.taken_as = Some(d.clone());
    }
    for (i, &w) in weights.iter().enumerate() {
        if let Some(r) = fraction(w, total).and_then(|r| r.checked_mul(share)) {
            v.labels[i] = Label::because(Guarantee::Ps(r), format!("weight {w} of {total}"));
        }
    }
    v
}

pub fn bvt(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    if !usable(node, &mut v) {
        return v;
    }
    let mut advances = Vec::with_capacity(node.children.len());
    for c in &node.children {
        match int_param(c.params, "advance", BVT_DEFAULT_ADVANCE) {
            Ok(m) if m >= 1 => advances.push(m as u64),
            Ok(m) => {
                v.problems.push(node.child_problem(
                    c,
                    Severity::Error,
                    format!(
                        "{} under {}: advance {m}: expected at least 1",
                        c.describe(),
                        node.who()
                    ),
                ));
                return v;
            }
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
    let input = node.input();
    let Some(d) = as_ps(&input) else {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: bvt needs PS (or a guarantee that rewrites into it), but {}: its children get NULL",
                node.under(),
                node.given()
            ),
        ));
        return v;
    };
    let Guarantee::Ps(share) = d.result else {
        return v;
    };
    if d.result != input {
        v.taken_as = Some(d.clone());
    }
    let total = advances
        .iter()
        .try_fold(Share::ZERO, |acc, &m| acc.checked_add(Share::new(1, m)?));
    let Some(total) = total else {
        v.problems.push(node.problem(
            Severity::Warning,
            format!(
                "{}: the weights 1/advance are too fine to add up exactly: its children get NULL",
                node.who()
            ),
        ));
        return v;
    };
    for (i, &m) in advances.iter().enumerate() {
        let r = Share::new(1, m)
            .and_then(|w| w.checked_div(total))
            .and_then(|r| r.checked_mul(share));
        if let Some(r) = r {
            v.labels[i] = Label::because(Guarantee::Ps(r), format!("advance {m}: weight 1/{m}"));
        }
    }
    v
}
