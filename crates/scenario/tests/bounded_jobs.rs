//! The simulator's bound on job records: every bundled scenario run with
//! the smallest bound hands over, and ends with, exactly the records of
//! the same run without a bound, each once, and counts what it retired
//! the way the records would.

use hsched_core::Instant;
use hsched_model::{JobRecord, JobTally};
use hsched_sim::{SimOptions, Simulation, MIN_KEEP_JOBS};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

type Key = (u32, u64, u64, Option<u64>, Option<u64>, u64, Option<bool>);

fn key(j: &JobRecord) -> Key {
    (
        j.thread.0,
        j.job,
        j.release.as_nanos(),
        j.start.map(Instant::as_nanos),
        j.finish.map(Instant::as_nanos),
        j.deadline.as_nanos(),
        j.admitted,
    )
}

#[test]
fn a_bounded_run_hands_over_every_record_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut bounded_runs = 0;
    for dir in ["examples", "papers"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let scn = hsched_scenario::load(&path).unwrap();
            let opts = SimOptions {
                horizon: Some(scn.horizon.min(hsched_core::Duration::from_millis(2_000))),
                ..Default::default()
            };
            let whole = Simulation::new(&scn, &opts, &[]).unwrap().finish();
            let handed: Rc<RefCell<Vec<JobRecord>>> = Rc::default();
            let mut sim = Simulation::new(&scn, &opts, &[]).unwrap();
            sim.keep_jobs(0); // taken as MIN_KEEP_JOBS
            let sink = handed.clone();
            sim.set_job_sink(Box::new(move |j, _| sink.borrow_mut().push(j.clone())));
            let bounded = sim.finish();
            let handed = handed.take();
            let name = path.display();
            let mut want: Vec<Key> = whole.jobs.iter().map(key).collect();
            let mut got: Vec<Key> = handed.iter().chain(&bounded.jobs).map(key).collect();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(want, got, "{name}");
            if whole.jobs.len() <= MIN_KEEP_JOBS {
                assert!(handed.is_empty() && bounded.limits.is_empty(), "{name}");
                continue;
            }
            bounded_runs += 1;
            assert!(
                bounded.jobs.len() <= whole.jobs.len() - handed.len(),
                "{name}"
            );
            assert!(bounded.limits[0].contains("--keep-jobs"), "{name}");
            // The tallies count the handed-over jobs as the records say.
            let end = Instant::ZERO + (whole.horizon);
            let mut tallies: Vec<JobTally> = Vec::new();
            for j in &handed {
                let t = j.thread.index();
                if tallies.len() <= t {
                    tallies.resize_with(t + 1, JobTally::default);
                }
                tallies[t].add(j, end);
            }
            assert_eq!(tallies, bounded.retired_jobs, "{name}");
        }
    }
    assert!(
        bounded_runs >= 5,
        "only {bounded_runs} scenarios passed the bound"
    );
}
