//! Two edges of periodic jobs that the SimSo cross-check found: a `run`
//! that ends at the very instant another thread wakes has finished (the
//! wake-up must not preempt it with nothing left), and jobs released while
//! their thread is still in a late job are recorded (unfinished) when the
//! run ends before the thread reaches them.

mod common;

use common::{fp_thread, go, tid, under_fp};
use hsched_core::{Duration, Instant};
use hsched_model::{Dist, Op};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
fn at(n: u64) -> Instant {
    Instant::ZERO + ms(n)
}

fn periodic(period: u64, run: u64, jobs: Option<u64>) -> Op {
    Op::Periodic {
        period: ms(period),
        deadline: ms(period),
        offset: Duration::ZERO,
        jobs,
        body: vec![Op::Run(Dist::Fixed(ms(run)))],
    }
}

#[test]
fn a_run_ending_as_a_higher_priority_thread_wakes_finishes_then() {
    // `high` goes to sleep first, so its wake-up at 5ms was queued before
    // `low`'s completion at 5ms was known.
    let scn = under_fp(
        "edge",
        ms(20),
        vec![
            fp_thread(
                "high",
                10,
                vec![Op::Sleep(Dist::Fixed(ms(5))), Op::Run(Dist::Fixed(ms(1)))],
            ),
            fp_thread("low", 1, vec![periodic(100, 5, Some(1))]),
        ],
        vec![],
    );
    let r = go(&scn);
    let low = tid(&r, "low");
    let job = r.jobs.iter().find(|j| j.thread == low).unwrap();
    assert_eq!(job.finish, Some(at(5)), "not at 6ms, after `high` ran");
}

#[test]
fn releases_a_late_thread_never_reached_are_recorded_unfinished() {
    // 15ms of work every 10ms: job k starts at 15k and is never done in
    // time; at the 45ms horizon job 2 runs, jobs 3 (due 40ms) and 4 (due
    // 50ms) were released and not started.
    let scn = under_fp(
        "late",
        ms(45),
        vec![fp_thread("late", 1, vec![periodic(10, 15, None)])],
        vec![],
    );
    let r = go(&scn);
    let jobs: Vec<_> = r
        .jobs
        .iter()
        .map(|j| (j.job, j.release, j.start, j.finish))
        .collect();
    assert_eq!(
        jobs,
        vec![
            (0, at(0), Some(at(0)), Some(at(15))),
            (1, at(10), Some(at(15)), Some(at(30))),
            (2, at(20), Some(at(30)), None),
            (3, at(30), None, None),
            (4, at(40), None, None),
        ]
    );
    let missed: Vec<u64> = r
        .jobs
        .iter()
        .filter(|j| j.missed(at(45)))
        .map(|j| j.job)
        .collect();
    assert_eq!(missed, vec![0, 1, 2, 3], "job 4 is not due yet");
    // A bounded timer records no release past its last job.
    let scn = under_fp(
        "late",
        ms(45),
        vec![fp_thread("late", 1, vec![periodic(10, 15, Some(3))])],
        vec![],
    );
    assert_eq!(go(&scn).jobs.len(), 3);
}
