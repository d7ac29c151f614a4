//! BVT §2.5 and §6.3: two-level BVT, its threshold and direct modes.

use super::inputs::{bvt_attach, bvt_params};
use super::results::{ms, thread};
use crate::repro::{parse, scenario, simulate, simulate_with, Check, Entry};
use hsched_core::Duration;
use hsched_model::{RunResult, Scenario};

pub(super) fn worst_latency(r: &RunResult, name: &str) -> Result<Duration, String> {
    Ok(thread(r, name)?
        .wakeup_latencies
        .iter()
        .max()
        .copied()
        .unwrap_or_default())
}

pub(super) fn received(r: &RunResult, node_or_thread: &str) -> Result<f64, String> {
    let d = match r.nodes.iter().find(|n| n.name == node_or_thread) {
        Some(n) => n.received,
        None => thread(r, node_or_thread)?.cpu_time,
    };
    Ok(d.as_nanos() as f64 / r.horizon.as_nanos() as f64)
}

/// The threads attached to scheduler `parent` that ask for warp.
pub(super) fn warping_threads(scn: &Scenario, parent: &str) -> Result<Vec<(String, i64)>, String> {
    let mut out = Vec::new();
    for t in scn.threads.iter().filter(|t| t.parent == parent) {
        let at = bvt_attach(scn, &t.name)?;
        if at.bool("warp_on") && at.int("warp") > 0 {
            out.push((t.name.clone(), at.int("warp")));
        }
    }
    Ok(out)
}

pub(super) fn threshold() -> Entry {
    Entry {
        name: "bvt-2.5-threshold",
        source: "BVT §2.5 and §6.3: two-level BVT, threshold mode",
        claim: "in threshold mode a second-level thread runs with the second-level scheduler's warp at the first level if its warp is over the threshold (the MPEG player gets low latency even against first-level threads); below it, warp only gives preference among the second level's threads; the first level still shares by weight",
        scenarios: &["scenarios/papers/bvt-2.5-threshold.toml"],
        run: || threshold_checks(scenario!("bvt-2.5-threshold.toml")),
    }
}

/// §2.5's threshold mode on `file` (a variant may change the threshold or
/// the warps).
pub(super) fn threshold_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    let scn = parse(file)?;
    let limit = bvt_params(&scn, "be")?.int("threshold");
    let r = simulate(file)?;
    let mut checks = Vec::new();
    for (name, warp) in warping_threads(&scn, "be")? {
        let over = warp > limit;
        checks.push(Check::new(
            format!("{name} (warp {warp}, threshold {limit}) dispatched at once at every wakeup (1 = yes)"),
            f64::from(u8::from(over)),
            f64::from(u8::from(worst_latency(&r, &name)?.is_zero())),
            0.0,
            "exact, by the rule: over the threshold the level is warped at the first level and passes the batch thread there; at or under it the level competes unwarped, and the thread waits whenever the first level's batch thread holds the CPU",
        ));
    }
    let m_be = scn
        .schedulers
        .iter()
        .find(|s| s.name == "be")
        .and_then(|s| s.parents.first())
        .map(|l| {
            l.params
                .resolve(&(hsched_policies::bvt::INFO.child_params)())
        })
        .ok_or("`be` has no parent link")??
        .int("advance") as f64;
    let m_cont = bvt_attach(&scn, "cont")?.int("advance") as f64;
    checks.push(Check::new(
        "CPU of be over cont's (the first level's weights)",
        m_cont / m_be,
        received(&r, "be")? / received(&r, "cont")?,
        0.02,
        "weighted fair sharing within C + 1 mcu (11ms) over 4s, plus whole-mcu charging of the level's short warped runs (up to 1 mcu each)",
    ));
    Ok(checks)
}

pub(super) fn direct() -> Entry {
    Entry {
        name: "bvt-2.5-direct",
        source: "BVT §2.5: two-level BVT, direct mode",
        claim: "a system may allocate 30% of the CPU to network processing spread across many threads; in direct mode the second-level scheduler runs with the warp and warp time limit of the thread it executes, \"so the dispatch latency is not affected by running the network processing in this aggregate, assuming the aggregate CPU share is adequate\"",
        scenarios: &["scenarios/papers/bvt-2.5-direct.toml"],
        run: || direct_checks(scenario!("bvt-2.5-direct.toml")),
    }
}

/// §2.5's direct mode on `file`.
pub(super) fn direct_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    let scn = parse(file)?;
    let r = simulate(file)?;
    // The same threads directly under the first level.
    let flat = simulate_with(file, |s| {
        for t in s.threads.iter_mut().filter(|t| t.parent == "net") {
            t.parent = "root".into();
        }
    })?;
    // Threshold mode with the level's own warp (0): what direct mode avoids.
    let lent = simulate_with(file, |s| {
        for sch in s.schedulers.iter_mut().filter(|s| s.name == "net") {
            sch.params
                .set("mode", hsched_core::Value::Str("threshold".into()));
        }
    })?;
    let mut checks = Vec::new();
    for (name, warp) in warping_threads(&scn, "net")? {
        checks.push(Check::new(
            format!(
                "{name} (warp {warp}): worst dispatch latency in the aggregate (ms), against flat"
            ),
            ms(worst_latency(&flat, &name)?),
            ms(worst_latency(&r, &name)?),
            0.0,
            "exact: the aggregate carries the thread's own warp and limit to the first level",
        ));
    }
    let waited = warping_threads(&scn, "net")?
        .iter()
        .map(|(n, _)| worst_latency(&lent, n))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .max()
        .unwrap_or_default();
    checks.push(Check::new(
        format!("in threshold mode with the level's own warp instead, some thread waits (1 = holds; {:.1}ms)", ms(waited)),
        1.0,
        f64::from(u8::from(!waited.is_zero())),
        0.0,
        "the measurement behind the mode: without the thread's warp the aggregate waits behind the first level's batch thread",
    ));
    let m_net = scn
        .schedulers
        .iter()
        .find(|s| s.name == "net")
        .and_then(|s| s.parents.first())
        .map(|l| {
            l.params
                .resolve(&(hsched_policies::bvt::INFO.child_params)())
        })
        .ok_or("`net` has no parent link")??
        .int("advance") as f64;
    let m_cont = bvt_attach(&scn, "cont")?.int("advance") as f64;
    checks.push(Check::new(
        "the aggregate's CPU share (the paper's 30%; here 1/m over the sum)",
        (1.0 / m_net) / (1.0 / m_net + 1.0 / m_cont),
        received(&r, "net")?,
        0.015,
        "weighted fair sharing within C + 1 mcu (11ms of 4s), plus whole-mcu charging: each of the aggregate's runs that ends mid-mcu is charged the whole mcu (some 200 short runs a second here)",
    ));
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::super::variants::{all_pass, variant};
    use super::*;

    #[test]
    fn the_threshold_decides_which_threads_borrow_the_levels_warp() {
        let file = scenario!("bvt-2.5-threshold.toml");
        for t in ["threshold = 10", "threshold = 600"] {
            let text = variant(file, &[("threshold = 100", t)]);
            all_pass(&threshold_checks((file.0, &text)).unwrap());
        }
        let direct = scenario!("bvt-2.5-direct.toml");
        let text = variant(direct, &[("advance = 7 }", "advance = 4 }")]);
        all_pass(&direct_checks((direct.0, &text)).unwrap());
    }
}
