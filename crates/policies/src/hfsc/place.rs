//! `hfsc` on several VPs: the `multiprocessor` and `fit` parameters, the
//! reading of a child's curve, and partitioned placement (which VP a child
//! is admitted on). The policy and the analysis (`hsched-analysis`'s `hfsc`
//! rule, which replays placement to label the children) both call these,
//! so the two cannot disagree about who is admitted where.
//!
//! **Why partitioned only.** On one VP, SCED meets every deadline of an
//! admitted set of curves (the sum stays under the CPU). Partitioned, each
//! VP is exactly that uniprocessor case: its children never run elsewhere
//! and the per-VP test is the uniprocessor one. A global HFSC would need a
//! multiprocessor test for service curves served by global SCED, and none
//! is published that we can state (global EDF's density tests concern
//! sporadic tasks, not curves with link sharing), so `"global"` is refused.

use super::curve::{admissible, ppm_text, rate_ppm, ServiceCurve, PPM};
use hsched_core::{Duration, Params, Value};

/// A child's default slopes `r1` and `r2`.
pub const DEFAULT_RATE: &str = "0.05";

/// The values `multiprocessor` accepts, for messages.
pub const MODES: &str = "\"one\" (the default) or \"partitioned\"";

/// How an `hfsc` instance uses the VPs it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Today's behaviour: one set of curves admitted against one CPU,
    /// served from every VP (on several VPs nothing is claimed).
    One,
    /// Each child is placed on one VP at admission and runs only there;
    /// each VP admits curves against its own CPU.
    Partitioned,
}

/// Parses `multiprocessor`. `"global"` is refused with the reason.
pub fn parse_mode(text: &str) -> Result<Mode, String> {
    match text.trim() {
        "one" | "" => Ok(Mode::One),
        "partitioned" => Ok(Mode::Partitioned),
        "global" => Err(format!(
            "`multiprocessor` = \"global\": there is no published multiprocessor admission test for HFSC's service curves under global SCED, so hfsc offers no global mode; use {MODES}"
        )),
        other => Err(format!(
            "`multiprocessor` = \"{other}\": expected {MODES}"
        )),
    }
}

/// Which VP a partitioned `hfsc` places a child with a curve on, shared
/// with the other partitioned policies: first, the lowest-index VP whose
/// admission test passes with the child; worst, of those, the one with the
/// lowest `Σ r2` after adding it (ties: the lowest index).
pub use crate::partition::Fit;

/// Parses `fit`.
pub fn parse_fit(text: &str) -> Result<Fit, String> {
    match text.trim() {
        "first" | "" => Ok(Fit::First),
        "worst" => Ok(Fit::Worst),
        other => Err(format!(
            "`fit` = \"{other}\": expected \"first\" (the default) or \"worst\""
        )),
    }
}

/// Reads `multiprocessor` and `fit` from a scheduler's parameters (absent:
/// the defaults). `fit` other than `"first"` needs `"partitioned"`: it
/// would otherwise be silently ignored.
pub fn parse_modes(params: &Params) -> Result<(Mode, Fit), String> {
    let text = |key: &str| match params.get(key) {
        None => Ok(""),
        Some(Value::Str(s)) => Ok(s.as_str()),
        Some(other) => Err(format!("`{key}` = {other:?}: expected a string")),
    };
    let mode = parse_mode(text("multiprocessor")?)?;
    let fit = parse_fit(text("fit")?)?;
    if mode == Mode::One && fit != Fit::First {
        return Err(
            "`fit` = \"worst\" places children on VPs: it needs `multiprocessor` = \"partitioned\""
                .into(),
        );
    }
    Ok((mode, fit))
}

/// A child's service curve and whether it is best effort, from its
/// attachment parameters (absent ones take the policy's defaults). Errors
/// name the parameter.
pub fn child_curve(params: &Params) -> Result<(ServiceCurve, bool), String> {
    let rate = |key: &str| -> Result<u32, String> {
        match params.get(key) {
            None => rate_ppm(DEFAULT_RATE),
            Some(Value::Str(s)) => rate_ppm(s),
            Some(other) => Err(format!(
                "{other:?}: expected a decimal rate string such as \"0.35\""
            )),
        }
        .map_err(|e| format!("`{key}`: {e}"))
    };
    let r1 = rate("r1")?;
    let r2 = rate("r2")?;
    if r2 == 0 {
        return Err("`r2` must be above 0 (it is the link-sharing rate)".into());
    }
    let x = match params.get("x") {
        None => 0,
        Some(Value::Duration(d)) => d.as_nanos(),
        Some(other) => return Err(format!("`x` = {other:?}: expected a duration")),
    };
    let best_effort = match params.get("best_effort") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("`best_effort` = {other:?}: expected true or false")),
    };
    if best_effort && r1 != r2 {
        return Err("a best-effort child needs `r1` = `r2` (section 5.2)".into());
    }
    Ok((ServiceCurve { r1, x, r2 }, best_effort))
}

/// The per-VP (and one-CPU) admission test: `new` with the curves already
/// admitted there, all anchored at the same instant, stays under the CPU.
/// O(n) when `Σ max(r1, r2) <= 1` (sufficient: each curve is below its peak
/// slope times t), else the exact O(n²) breakpoint check.
pub fn fits(admitted: &[ServiceCurve], new: ServiceCurve) -> Result<(), String> {
    let peak = |s: &ServiceCurve| u64::from(s.r1.max(s.r2));
    if admitted.iter().map(peak).sum::<u64>() + peak(&new) <= PPM {
        return Ok(());
    }
    let mut all = admitted.to_vec();
    all.push(new);
    admissible(&all)
}

/// `Σ r2` of some curves, in ppm.
pub fn r2_sum(curves: &[ServiceCurve]) -> u64 {
    curves.iter().map(|s| u64::from(s.r2)).sum()
}

/// Partitioned placement of a child with the curve `new`: `vps[k]` holds
/// the curves admitted on VP `k`. Returns the VP, or why none admits it,
/// naming each VP's load.
pub fn place(vps: &[Vec<ServiceCurve>], new: ServiceCurve, fit: Fit) -> Result<usize, String> {
    let mut best: Option<(u64, usize)> = None;
    let mut why = Vec::with_capacity(vps.len());
    for (k, on) in vps.iter().enumerate() {
        match fits(on, new) {
            Ok(()) => {
                let load = r2_sum(on) + u64::from(new.r2);
                match fit {
                    Fit::First => return Ok(k),
                    Fit::Worst => {
                        if best.is_none_or(|(b, _)| load < b) {
                            best = Some((load, k));
                        }
                    }
                }
            }
            Err(e) => why.push(format!("vp{k} (Σ r2 = {}): {e}", ppm_text(r2_sum(on)))),
        }
    }
    match best {
        Some((_, k)) => Ok(k),
        None if vps.is_empty() => Err("it holds no VP".into()),
        None => Err(format!(
            "no VP admits <{}, {}, {}>: {}",
            ppm_text(new.r1.into()),
            Duration(new.x),
            ppm_text(new.r2.into()),
            why.join("; ")
        )),
    }
}

/// Partitioned placement of a best-effort child (promised nothing, not
/// admission controlled): the VP with the fewest best-effort children,
/// ties to the lowest index, so they spread over the VPs' leftover time.
pub fn place_best_effort(best_effort_counts: &[u32]) -> usize {
    best_effort_counts
        .iter()
        .enumerate()
        .min_by_key(|&(k, &n)| (n, k))
        .map_or(0, |(k, _)| k)
}
