//! BVT §2.1, Fig. 1: the scheduling window two always-runnable threads
//! settle into, from the switching rule and as run.

use super::inputs::{allowance_units, bvt_attach, bvt_params};
use super::results::runs;
use crate::repro::{parse, scenario, simulate, Check, Entry};

/// §2.1's switching rule applied to two always-runnable threads with mcu
/// advances `m` and allowances `c` (virtual units), the first running
/// first: each runs whole mcus until it passes the other by its own
/// allowance. Returns the length, in mcu, of the cycle the alternation
/// settles into (the scheduling window) and the first thread's mcu in it.
pub(super) fn window_by_rule(m: [u64; 2], c: [u64; 2]) -> Option<(u64, u64)> {
    let (mut a, mut run) = ([0u64; 2], 0usize);
    let mut seen = std::collections::BTreeMap::new();
    let mut history: Vec<(usize, u64)> = Vec::new();
    for step in 0..10_000 {
        let o = 1 - run;
        // Normalised state: who runs, and how far the other is ahead.
        let key = (run, a[o] as i128 - a[run] as i128);
        if let Some(&first) = seen.get(&key) {
            let cycle = &history[first..step];
            let total = cycle.iter().map(|&(_, k)| k).sum();
            let first_thread = cycle
                .iter()
                .filter(|&&(t, _)| t == 0)
                .map(|&(_, k)| k)
                .sum();
            return Some((total, first_thread));
        }
        seen.insert(key, step);
        let need = (a[o] + c[run]).saturating_sub(a[run]);
        let k = need.div_ceil(m[run]).max(1);
        a[run] += k * m[run];
        history.push((run, k));
        run = o;
    }
    None
}

pub(super) fn fig1_window() -> Entry {
    Entry {
        name: "bvt-fig1-window",
        source: "BVT §2.1, Fig. 1: the 9-mcu scheduling window",
        claim: "weights 2:1 (advances 1 and 2) with C = 2 mcu: context switches occur when the running thread passes the waiting one by C; \"over a scheduling window of 9 mcu, each thread receives its fair share\"",
        scenarios: &["scenarios/papers/bvt-fig1.toml"],
        run: || fig1_window_checks(scenario!("bvt-fig1.toml")),
    }
}

/// Fig. 1's window on `file` (a variant may change the weights or C).
pub(super) fn fig1_window_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    {
        {
            let scn = parse(file)?;
            let p = bvt_params(&scn, "bvt")?;
            let (mcu, c) = (p.duration("mcu"), p.duration("allowance"));
            let m = [
                bvt_attach(&scn, "gcc")?.int("advance") as u64,
                bvt_attach(&scn, "bigsim")?.int("advance") as u64,
            ];
            let cu = [allowance_units(c, mcu, m[0]), allowance_units(c, mcu, m[1])];
            let (window, gcc_mcu) =
                window_by_rule(m, cu).ok_or("the rule's alternation does not settle")?;
            let r = simulate(file)?;
            // The measured alternation: (thread, mcu) of each run, skipping
            // the first runs (the start, where both are at 0) and the last
            // (cut by the horizon); then its period.
            let mut all: Vec<(u64, u8, u64)> = Vec::new();
            for (t, name) in [(0u8, "gcc"), (1, "bigsim")] {
                for (s, e) in runs(&r, name)? {
                    all.push((s.as_nanos(), t, (e - s).as_nanos() / mcu.as_nanos().max(1)));
                }
            }
            all.sort();
            let steady: Vec<(u8, u64)> = all[4..all.len() - 1]
                .iter()
                .map(|&(_, t, k)| (t, k))
                .collect();
            let period = (1..=steady.len() / 2)
                .find(|&p| steady.iter().zip(&steady[p..]).all(|(x, y)| x == y))
                .ok_or("the run's alternation is not periodic")?;
            let measured: u64 = steady[..period].iter().map(|&(_, k)| k).sum();
            let measured_gcc: u64 = steady[..period]
                .iter()
                .filter(|&&(t, _)| t == 0)
                .map(|&(_, k)| k)
                .sum();
            Ok(vec![
                Check::new(
                    format!("scheduling window (mcu); §2.1's rule on this file's inputs gives {window} (the paper's Fig. 1: 9)"),
                    window as f64,
                    measured as f64,
                    0.0,
                    "exact: whole-mcu charging makes the alternation periodic; the expected value is the switching rule (run until passing the other by C_i = C/w_i) applied to the scenario's advances and C",
                ),
                Check::new(
                    "gcc's share within one window",
                    gcc_mcu as f64 / window as f64,
                    measured_gcc as f64 / measured.max(1) as f64,
                    0.0,
                    "exact: over the window each receives its fair share (2/3 for weights 2:1), as Fig. 1 says",
                ),
                Check::new(
                    "gcc's fair share by weight (1/m over the sum of 1/m)",
                    m[1] as f64 / (m[0] + m[1]) as f64,
                    gcc_mcu as f64 / window as f64,
                    1e-12,
                    "the rule's cycle gives exactly the weighted share (float rounding only)",
                ),
            ])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::variants::{all_pass, variant};
    use super::*;

    #[test]
    fn fig1_window_follows_the_rule_for_other_weights_and_allowances() {
        let file = scenario!("bvt-fig1.toml");
        for (gcc, bigsim, c) in [
            ("1", "3", "30ms"),
            ("2", "3", "20ms"),
            ("1", "1", "30ms"),
            ("3", "5", "40ms"),
        ] {
            let text = variant(
                file,
                &[
                    ("advance = 1 }", &format!("advance = {gcc} }}")),
                    ("advance = 2 }", &format!("advance = {bigsim} }}")),
                    ("allowance = \"20ms\"", &format!("allowance = \"{c}\"")),
                ],
            );
            let checks = fig1_window_checks((file.0, &text)).unwrap();
            all_pass(&checks);
        }
    }
}
