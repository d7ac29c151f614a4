//! Barriers end to end: every thread whose program names a barrier waits
//! there until the last of them arrives; then all pass, and the barrier
//! starts its next round (a thread back at it early waits for that round).

use hsched_core::{Duration, Instant};
use hsched_model::{Dist, Op, RunResult, Scenario, ThreadSpec};

mod common;
use common::{fp_thread as thread, go, under_fp};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Instant {
    Instant::ZERO + ms(x)
}

fn run(x: u64) -> Op {
    Op::Run(Dist::Fixed(ms(x)))
}

fn sleep(x: u64) -> Op {
    Op::Sleep(Dist::Fixed(ms(x)))
}

fn barrier() -> Op {
    Op::Barrier("b".into())
}

fn scenario(threads: Vec<ThreadSpec>) -> Scenario {
    under_fp("barriers", ms(100), threads, vec![])
}

/// Each thread's exit, by name order of `names`.
fn exits(r: &RunResult, names: &[&str]) -> Vec<Option<Instant>> {
    names
        .iter()
        .map(|n| r.threads.iter().find(|t| t.name == *n).unwrap().exit)
        .collect()
}

#[test]
fn nobody_passes_until_the_last_party_arrives() {
    let scn = scenario(vec![
        thread("a", 1, vec![run(1), barrier(), run(1)]),
        thread("b", 2, vec![sleep(5), barrier(), run(1)]),
        thread("c", 3, vec![sleep(10), barrier(), run(1)]),
        // Not a party: it never names the barrier.
        thread("d", 4, vec![sleep(20), run(1)]),
    ]);
    let r = go(&scn);
    // `c` arrives last, at 10ms; the three then run 1ms each on the one CPU.
    let mut e = exits(&r, &["a", "b", "c"]);
    e.sort();
    assert_eq!(e, vec![Some(at(11)), Some(at(12)), Some(at(13))]);
    assert_eq!(exits(&r, &["d"]), vec![Some(at(21))]);
}

#[test]
fn rounds_follow_the_slowest_party() {
    let scn = scenario(vec![
        thread(
            "fast",
            1,
            vec![Op::Loop {
                count: Some(3),
                body: vec![run(1), barrier()],
            }],
        ),
        thread(
            "slow",
            2,
            vec![Op::Loop {
                count: Some(3),
                body: vec![sleep(4), barrier()],
            }],
        ),
    ]);
    let r = go(&scn);
    // Rounds close when `slow` arrives: at 4, 8 and 12ms.
    assert_eq!(
        exits(&r, &["fast", "slow"]),
        vec![Some(at(12)), Some(at(12))]
    );
}

#[test]
fn a_party_back_before_the_others_ran_waits_for_the_next_round() {
    // `y` closes the first round at 5ms and is at the barrier again at
    // once, before `x` has run: it must wait for `x`'s second arrival,
    // not pass on the first round's release.
    let scn = scenario(vec![
        thread(
            "x",
            2,
            vec![Op::Loop {
                count: Some(2),
                body: vec![barrier(), run(1)],
            }],
        ),
        thread("y", 1, vec![sleep(5), barrier(), barrier(), run(1)]),
    ]);
    let r = go(&scn);
    let mut e = exits(&r, &["x", "y"]);
    e.sort();
    // x runs 5..6, arrives again and closes the second round; then x and y
    // each run 1ms.
    assert_eq!(e, vec![Some(at(7)), Some(at(8))]);
}

#[test]
fn thousands_of_parties_are_released_at_once() {
    let n = 5000;
    let threads = (0..n)
        .map(|i| thread(&format!("t{i}"), 1, vec![sleep(i % 7), barrier(), sleep(1)]))
        .collect();
    let r = go(&scenario(threads));
    // The last arrives at 6ms; everyone sleeps 1ms after the barrier.
    assert!(r.threads.iter().all(|t| t.exit == Some(at(7))));
}
