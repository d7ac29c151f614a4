//! The SimSo cross-check: for seeded periodic task sets on one CPU under
//! EDF and RM, at utilisations from 50% to 130% (the overloaded ones miss
//! deadlines), SimSo (installed from PyPI by this test, reading the XML
//! with its own parser) and hsched (importing the same XML with
//! `hsched import simso`) must agree on every job's release, deadline,
//! completion time and deadline miss. The task sets and what they avoid
//! (EDF ties, events on the horizon) are described in
//! `hsched_cli::simso`.
//!
//! SimSo is looked for in `target/simso-py`, where `.ci/run` installs it
//! (pip --target); this test installs nothing (see `hsched-testkit` for
//! what happens when it is missing).

use hsched_cli::simso::{self, cross_check_sets};
use std::path::PathBuf;

fn site() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/simso-py"
    ))
}

#[test]
fn hsched_and_simso_agree_on_every_job_under_edf_and_rm() {
    let python = hsched_testkit::require!("SimSo", simso::find_simso(&site()));
    let sets = cross_check_sets();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("simso-cross-check");
    let xml = simso::write_sets(&dir, &sets).unwrap();
    let simso_runs = simso::run_simso(&python, &dir, &xml).unwrap();
    assert_eq!(simso_runs.len(), sets.len());
    let (mut jobs, mut missed, mut disagreements) = (0, 0, Vec::new());
    for ((set, path), s) in sets.iter().zip(&xml).zip(&simso_runs) {
        let h = simso::run_hsched(path).unwrap();
        disagreements.extend(simso::compare(set, s, &h));
        jobs += s.jobs();
        missed += simso::misses(set, s);
        // The overloaded sets must miss (else the check would not cover
        // misses); the light ones under EDF must not (Liu & Layland).
        if set.actual_permille() > 1000 {
            assert!(
                simso::misses(set, &h) > 0,
                "{}: no miss at {}‰",
                set.name,
                set.actual_permille()
            );
        }
        if set.sched == simso::Sched::Edf && set.actual_permille() <= 1000 {
            assert_eq!(
                simso::misses(set, &h),
                0,
                "{}: EDF missed at {}‰",
                set.name,
                set.actual_permille()
            );
        }
    }
    println!(
        "{} task sets, {jobs} jobs compared ({missed} deadline misses), {} disagreements",
        sets.len(),
        disagreements.len()
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreements, the first ones:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(20)].join("\n")
    );
    assert!(jobs > 10_000, "only {jobs} jobs compared");
}
