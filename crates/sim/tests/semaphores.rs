//! Binary semaphores end to end (`signal`, `wait`, and `sporadic` jobs
//! released by signals, as Yau & Lam Fig. 11's driver and worker use them):
//! who wakes when, signals that do not count up, the release time of a
//! sporadic job, and a killed waiter leaving no trace.

use hsched_core::{Duration, Instant};
use hsched_model::{Action, Dist, Op, RunResult, Scenario, ScriptEvent, ThreadSpec};

mod common;
use common::{fp_thread as thread, go, tid, under_fp};

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

fn scenario(threads: Vec<ThreadSpec>, script: Vec<ScriptEvent>) -> Scenario {
    under_fp("semaphores", ms(100), threads, script)
}

fn exit_of(r: &RunResult, name: &str) -> Option<Instant> {
    r.threads.iter().find(|t| t.name == name).unwrap().exit
}

#[test]
fn a_wait_ends_at_the_signal_and_the_longest_waiter_goes_first() {
    let scn = scenario(
        vec![
            thread("first", 5, vec![Op::Wait("go".into()), run(1)]),
            thread("second", 5, vec![sleep(1), Op::Wait("go".into()), run(1)]),
            thread(
                "driver",
                1,
                vec![
                    sleep(5),
                    Op::Signal("go".into()),
                    sleep(5),
                    Op::Signal("go".into()),
                ],
            ),
        ],
        vec![],
    );
    let r = go(&scn);
    // One signal, one waiter: `first` waited longest; `second` needs the
    // next signal.
    assert_eq!(exit_of(&r, "first"), Some(at(6)));
    assert_eq!(exit_of(&r, "second"), Some(at(11)));
}

#[test]
fn signals_to_a_set_semaphore_are_lost() {
    // Two signals before anyone waits set the semaphore once: the first
    // wait passes at once, the second blocks for ever.
    let scn = scenario(
        vec![
            thread(
                "driver",
                1,
                vec![Op::Signal("go".into()), Op::Signal("go".into())],
            ),
            thread(
                "waiter",
                5,
                vec![
                    sleep(2),
                    Op::Wait("go".into()),
                    run(1),
                    Op::Wait("go".into()),
                    run(1),
                ],
            ),
        ],
        vec![],
    );
    let r = go(&scn);
    let waiter = r.threads.iter().find(|t| t.name == "waiter").unwrap();
    assert_eq!(waiter.cpu_time, ms(1));
    assert_eq!(waiter.exit, None);
}

#[test]
fn a_sporadic_job_is_released_at_its_signal_even_when_taken_later() {
    // The worker is busy with its first job (4ms) when the second signal
    // comes at 3ms: the semaphore is set then, and that job's release is
    // 3ms although the worker reaches its wait at 5ms.
    let scn = scenario(
        vec![
            thread(
                "driver",
                1,
                vec![
                    sleep(1),
                    Op::Signal("go".into()),
                    sleep(2),
                    Op::Signal("go".into()),
                ],
            ),
            thread(
                "worker",
                5,
                vec![Op::Sporadic {
                    on: "go".into(),
                    deadline: ms(5),
                    jobs: Some(2),
                    body: vec![run(4)],
                }],
            ),
        ],
        vec![],
    );
    let r = go(&scn);
    let worker = tid(&r, "worker");
    let jobs: Vec<_> = r.jobs.iter().filter(|j| j.thread == worker).collect();
    assert_eq!(jobs.len(), 2);
    assert_eq!((jobs[0].release, jobs[0].finish), (at(1), Some(at(5))));
    assert_eq!((jobs[1].release, jobs[1].finish), (at(3), Some(at(9))));
    assert_eq!(jobs[1].deadline, at(8));
    assert!(jobs[1].missed(at(100)));
    assert_eq!(exit_of(&r, "worker"), Some(at(9)));
}

#[test]
fn a_waiter_killed_with_its_domain_leaves_the_queue() {
    // `victim` waits first but its (private) domain is killed at 2ms: the
    // signal at 5ms goes to `other`, and `victim` is gone.
    let scn = scenario(
        vec![
            thread("victim", 5, vec![Op::Wait("go".into()), run(1)]),
            thread("other", 5, vec![sleep(1), Op::Wait("go".into()), run(1)]),
            thread("driver", 1, vec![sleep(5), Op::Signal("go".into())]),
        ],
        vec![ScriptEvent {
            at: at(2),
            action: Action::Kill("victim".into()),
        }],
    );
    let r = go(&scn);
    assert_eq!(exit_of(&r, "victim"), Some(at(2)));
    assert_eq!(exit_of(&r, "other"), Some(at(6)));
}
