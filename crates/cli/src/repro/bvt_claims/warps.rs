//! BVT §6.1.3: warps assigned from priorities, level by level, against
//! the same threads under fixed priorities.

use super::inputs::{bvt_attach, bvt_params};
use super::results::{jobs, ms};
use crate::repro::{parse, scenario, simulate_with, Check, Entry};
use hsched_model::{Dist, Op, RunResult, Scenario};

/// The priority levels of `bvt-6.1.3-warps.toml`, highest first; the last
/// (warp 0) is the batch level.
pub(super) const LEVELS: &[&[&str]] = &[&["ctl"], &["net"], &["ui"], &["cont"]];

/// §6.1.3's warps for `LEVELS` from the file's advances and limits
/// (`scale` multiplies each increment: 1 is the paper's rule).
pub(super) fn level_warps(scn: &Scenario, scale: (u64, u64)) -> Result<Vec<u64>, String> {
    use hsched_analysis::bvt_config::{warps_for_advances, BvtClock, LevelThread};
    let p = bvt_params(scn, "bvt")?;
    let clock =
        BvtClock::new(p.duration("mcu"), p.duration("allowance")).map_err(|e| e.to_string())?;
    let levels = LEVELS
        .iter()
        .map(|names| {
            names
                .iter()
                .map(|n| {
                    let at = bvt_attach(scn, n)?;
                    Ok(LevelThread {
                        advance: at.int("advance") as u64,
                        warp_limit: at.duration("warp_limit"),
                    })
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .collect::<Result<Vec<_>, String>>()?;
    let warps = warps_for_advances(&levels, &clock).map_err(|e| e.to_string())?;
    Ok(warps.into_iter().map(|w| w * scale.0 / scale.1).collect())
}

pub(super) fn with_warps(scn: &mut Scenario, warps: &[u64]) {
    for (names, w) in LEVELS.iter().zip(warps) {
        for t in scn
            .threads
            .iter_mut()
            .filter(|t| names.contains(&t.name.as_str()))
        {
            t.params.set("warp", hsched_core::Value::Int(*w as i64));
        }
    }
}

/// The same threads under `fp`, in `LEVELS`' order.
pub(super) fn as_fixed_priority(scn: &mut Scenario) {
    for s in scn.schedulers.iter_mut().filter(|s| s.name == "bvt") {
        s.policy = "fp".into();
        s.params = hsched_core::Params::new();
    }
    let n = LEVELS.len() as i64;
    for (i, names) in LEVELS.iter().enumerate() {
        for t in scn
            .threads
            .iter_mut()
            .filter(|t| names.contains(&t.name.as_str()))
        {
            t.params =
                hsched_core::Params::new().with("prio", hsched_core::Value::Int(n - i as i64));
        }
    }
}

pub(super) fn worst_response(r: &RunResult, name: &str) -> Result<f64, String> {
    Ok(jobs(r, &[name])?
        .iter()
        .filter_map(|j| j.response())
        .max()
        .map_or(f64::INFINITY, ms))
}

pub(super) fn warps() -> Entry {
    Entry {
        name: "bvt-6.1.3-warps",
        source: "BVT §6.1.3: warp assignment from priorities",
        claim: "warps picked level by level (each level's warp the next lower one's plus the largest L_i/w_i of its threads, L_i = C where there is no limit) \"mimic the behavior of a conventional priority scheduler\": the highest thread responds in t + c, the others as under priorities",
        scenarios: &["scenarios/papers/bvt-6.1.3-warps.toml"],
        run: || warps_checks(scenario!("bvt-6.1.3-warps.toml")),
    }
}

/// §6.1.3 on `file` (a variant may change runs, periods, advances, limits).
pub(super) fn warps_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    let scn = parse(file)?;
    let w = level_warps(&scn, (1, 1))?;
    let bvt = simulate_with(file, |s| with_warps(s, &w))?;
    let fp = simulate_with(file, as_fixed_priority)?;
    let switch = scn.machine.context_switch;
    let top = LEVELS[0][0];
    let top_run = match scn
        .threads
        .iter()
        .find(|t| t.name == top)
        .and_then(|t| t.program.ops.first())
    {
        Some(Op::Periodic { body, .. }) => match body.as_slice() {
            [Op::Run(Dist::Fixed(d))] => *d,
            _ => return Err(format!("`{top}` runs a fixed time per job")),
        },
        _ => return Err(format!("`{top}` is periodic")),
    };
    let mut checks = vec![Check::new(
        format!("{top}: worst response (ms), t + c (warps {w:?})"),
        ms(top_run + switch),
        worst_response(&bvt, top)?,
        0.0,
        "exact: \"its response time is t + c where c is the context switch time\"",
    )];
    let names: Vec<&str> = LEVELS[..LEVELS.len() - 1]
        .iter()
        .flat_map(|l| l.iter().copied())
        .collect();
    for name in &names {
        checks.push(Check::new(
            format!("{name}: worst response under BVT (ms), against fp's"),
            worst_response(&fp, name)?,
            worst_response(&bvt, name)?,
            ms(switch) * LEVELS.len() as f64,
            "a context switch per level above it: BVT's equivalence \"to a conventional priority scheduler\" holds up to switch costs",
        ));
    }
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::super::variants::{all_pass, variant};
    use super::*;

    #[test]
    fn warps_from_priorities_mimic_fp_for_other_parameters() {
        let file = scenario!("bvt-6.1.3-warps.toml");
        for edits in [
            vec![
                ("run = \"2ms\"", "run = \"1ms\""),
                (
                    "advance = 1, warp = 0, warp_on",
                    "advance = 3, warp = 0, warp_on",
                ),
            ],
            vec![
                ("warp_limit = \"5ms\"", "warp_limit = \"8ms\""),
                ("run = \"4ms\"", "run = \"7ms\""),
            ],
            vec![
                ("allowance = \"10ms\"", "allowance = \"20ms\""),
                ("period = \"50ms\"", "period = \"70ms\""),
            ],
        ] {
            let text = variant(file, &edits);
            all_pass(&warps_checks((file.0, &text)).unwrap());
        }
    }

    #[test]
    fn smaller_warp_increments_break_the_priority_order() {
        // The control for §6.1.3: with a third of the rule's increments a
        // higher thread is preempted by a lower one within its L_i.
        let file = scenario!("bvt-6.1.3-warps.toml");
        let scn = parse(file).unwrap();
        let w3 = level_warps(&scn, (1, 3)).unwrap();
        let short = simulate_with(file, |s| with_warps(s, &w3)).unwrap();
        let fp = simulate_with(file, as_fixed_priority).unwrap();
        let later = ["ctl", "net", "ui"]
            .iter()
            .any(|n| worst_response(&short, n).unwrap() > worst_response(&fp, n).unwrap() + 1.0);
        assert!(later, "warps {w3:?} kept the priority order");
    }
}
