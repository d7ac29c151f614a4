//! The `frames` operation end to end: a free-running frame loop counts one
//! missed deadline per `max_gap` that passes without a frame
//! (`ceil(gap / max_gap) - 1` per gap), to the horizon; `count` ends it.

use hsched_core::{Duration, Instant};
use hsched_model::{Dist, Op, RunResult, Scenario, ThreadSpec};

mod common;
use common::{fp_thread, go, tid, under_fp};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Instant {
    Instant::ZERO + ms(x)
}

fn frames(count: Option<u64>) -> Op {
    Op::Frames {
        max_gap: ms(33),
        count,
        body: vec![Op::Run(Dist::Fixed(ms(10)))],
    }
}

fn thread(name: &str, prio: i64, ops: Vec<Op>) -> ThreadSpec {
    fp_thread(name, prio, ops)
}

fn scenario(horizon: Duration, threads: Vec<ThreadSpec>) -> Scenario {
    under_fp("frames", horizon, threads, vec![])
}

fn jobs_of<'a>(r: &'a RunResult, name: &str) -> Vec<&'a hsched_model::JobRecord> {
    let t = tid(r, name);
    r.jobs.iter().filter(|j| j.thread == t).collect()
}

fn misses(r: &RunResult, name: &str) -> Vec<Instant> {
    let end = Instant::ZERO + r.horizon;
    jobs_of(r, name)
        .into_iter()
        .filter(|j| j.missed(end))
        .map(|j| j.deadline)
        .collect()
}

#[test]
fn each_max_gap_without_a_frame_is_one_miss() {
    // A higher priority takes the CPU for 50ms at 105ms and for 100ms at
    // 355ms, in the middle of frames: gaps of 60ms (one miss) and 110ms
    // (three).
    let blocker = vec![
        Op::Sleep(Dist::Fixed(ms(105))),
        Op::Run(Dist::Fixed(ms(50))),
        Op::Sleep(Dist::Fixed(ms(200))),
        Op::Run(Dist::Fixed(ms(100))),
    ];
    let r = go(&scenario(
        ms(995),
        vec![
            thread("app", 1, vec![frames(None)]),
            thread("b", 2, blocker),
        ],
    ));
    assert_eq!(
        misses(&r, "app"),
        vec![at(133), at(383), at(416), at(449)],
        "deadlines every 33ms after the last frame (100ms, then 350ms)"
    );
    let jobs = jobs_of(&r, "app");
    // One met deadline per frame (84 frames in the 845ms the app ran),
    // the misses, and the one pending at the horizon.
    assert_eq!(jobs.len(), 84 + 4 + 1);
    let met: Vec<_> = jobs.iter().filter(|j| j.finish.is_some()).collect();
    assert_eq!(met.len(), 84);
    assert!(met.iter().all(|j| j.finish.unwrap() <= j.deadline));
    // The deadline after a miss is released at the missed deadline.
    let after = jobs.iter().find(|j| j.release == at(383)).unwrap();
    assert_eq!(after.deadline, at(416));
    assert_eq!(r.threads[0].cpu_time, ms(845));
}

#[test]
fn a_starved_loop_misses_every_max_gap_to_the_horizon() {
    let hog = vec![
        Op::Sleep(Dist::Fixed(ms(105))),
        Op::Run(Dist::Fixed(Duration::from_secs(10))),
    ];
    let r = go(&scenario(
        ms(1_000),
        vec![thread("app", 1, vec![frames(None)]), thread("hog", 2, hog)],
    ));
    let missed = misses(&r, "app");
    // The last frame at 100ms; deadlines 133, 166, ..., 991 all missed.
    assert_eq!(missed.len(), 27);
    assert_eq!(missed.first(), Some(&at(133)));
    assert_eq!(missed.last(), Some(&at(991)));
}

#[test]
fn count_ends_the_loop_and_the_program_goes_on() {
    let r = go(&scenario(
        ms(200),
        vec![thread(
            "app",
            1,
            vec![
                frames(Some(3)),
                Op::Sleep(Dist::Fixed(ms(20))),
                frames(Some(2)),
            ],
        )],
    ));
    let jobs = jobs_of(&r, "app");
    assert_eq!(jobs.len(), 5, "one deadline per frame, none left pending");
    assert!(jobs.iter().all(|j| j.finish.is_some()));
    assert_eq!(
        jobs[3].release,
        at(50),
        "the second loop starts after the sleep"
    );
    assert_eq!(r.threads[0].exit, Some(at(70)));
    assert!(misses(&r, "app").is_empty());
    let zero = go(&scenario(
        ms(50),
        vec![thread(
            "app",
            1,
            vec![frames(Some(0)), Op::Run(Dist::Fixed(ms(1)))],
        )],
    ));
    assert!(zero.jobs.is_empty());
    assert_eq!(zero.threads[0].exit, Some(at(1)));
}
