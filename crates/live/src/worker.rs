//! hsched's instrumented worker: a process that executes a scenario
//! thread's workload program on a real CPU, so that `hsched live` can run
//! the same scenarios as `hsched sim` without a real command behind every
//! thread.
//!
//! `run` burns the thread's own CPU clock (`CLOCK_THREAD_CPUTIME_ID`), so
//! it takes as long as the hierarchy makes it take; `spin` burns wall
//! time; `sleep` blocks; `periodic` and `frames` release jobs on
//! CLOCK_MONOTONIC, the agent's clock. Durations are drawn from the same
//! seeded stream the simulator gives the thread (seed, stream = thread
//! index + 1), so both worlds draw the same numbers.
//!
//! Jobs are reported as they happen, one `write` per line to standard
//! output (a file the agent reads at the end: nothing is lost when the
//! worker is killed at the horizon):
//!
//! ```text
//! R <record> <job> <release> <deadline>   a job released
//! S <record> <at>                          it started (first ran)
//! F <record> <at>                          it finished
//! ```
//!
//! Times are ns since the run's time zero. A `msg` goes to the agent
//! through the run's control socket, as the thread itself. A reply that
//! promises a wakeup (`wakeup = W`, as `rtwake`'s do) is a job released
//! at W with W as its deadline, started and finished when the worker next
//! runs, as the simulator records it: its lateness is how late (negative:
//! how early) the wakeup came. Operations
//! that need other threads (locks, semaphores, calls) are refused by
//! [`plan`] before anything starts.

use hsched_core::{Duration, Instant, ThreadId};
use hsched_model::{Dist, JobRecord, Op};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::io::Write;

/// One operation the worker executes (the subset of [`Op`] a lone
/// process can carry out; see [`Op`] for each one's meaning).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Run(Dist),
    Spin(Dist),
    Sleep(Dist),
    Yield,
    /// A message to a scheduler (`None`: the thread's own), through the
    /// run's control socket.
    Msg {
        to: Option<String>,
        msg: hsched_core::Msg,
    },
    Loop {
        count: Option<u64>,
        body: Vec<Step>,
    },
    Periodic {
        period: Duration,
        deadline: Duration,
        offset: Duration,
        jobs: Option<u64>,
        body: Vec<Step>,
    },
    Frames {
        max_gap: Duration,
        count: Option<u64>,
        body: Vec<Step>,
    },
    Exit,
}

/// What a worker is told: its program and where its clock and random
/// draws start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// CLOCK_MONOTONIC at the run's time zero, ns.
    pub zero_ns: u64,
    pub seed: u64,
    /// The random stream (the simulator's: thread index + 1).
    pub stream: u64,
    /// The run's control socket, for `msg`.
    #[serde(default)]
    pub control: Option<std::path::PathBuf>,
    pub steps: Vec<Step>,
}

impl WorkerSpec {
    /// The spec as the worker program's argument.
    pub fn to_arg(&self) -> String {
        serde_json::to_string(self).expect("a worker spec is plain data")
    }
}

/// The worker's program for workload `ops`, or why the worker cannot run
/// it (naming the operation). A `msg` needs the run's control socket.
pub fn plan(ops: &[Op]) -> Result<Vec<Step>, String> {
    ops.iter()
        .map(|op| {
            Ok(match op {
                Op::Run(d) => Step::Run(d.clone()),
                Op::Spin(d) => Step::Spin(d.clone()),
                Op::Sleep(d) => Step::Sleep(d.clone()),
                Op::Yield => Step::Yield,
                Op::Msg { to, msg } => Step::Msg {
                    to: match to {
                        hsched_model::Target::Parent => None,
                        hsched_model::Target::Named(n) => Some(n.clone()),
                    },
                    msg: msg.clone(),
                },
                Op::Exit => Step::Exit,
                Op::Loop { count, body } => Step::Loop {
                    count: *count,
                    body: plan(body)?,
                },
                Op::Periodic {
                    period,
                    deadline,
                    offset,
                    jobs,
                    body,
                } => Step::Periodic {
                    period: *period,
                    deadline: *deadline,
                    offset: *offset,
                    jobs: *jobs,
                    body: plan(body)?,
                },
                Op::Frames {
                    max_gap,
                    count,
                    body,
                } => Step::Frames {
                    max_gap: *max_gap,
                    count: *count,
                    body: plan(body)?,
                },
                other => {
                    return Err(format!(
                        "`{}` is not run by the live worker (it runs run, spin, sleep, yield, msg, loop, periodic, frames and exit); give the thread a `command`, or run the scenario in `hsched sim`",
                        op_name(other)
                    ))
                }
            })
        })
        .collect()
}

/// Whether a program sends messages (and so needs the control socket).
pub fn sends_messages(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::Msg { .. } => true,
        Step::Loop { body, .. } | Step::Periodic { body, .. } | Step::Frames { body, .. } => {
            sends_messages(body)
        }
        _ => false,
    })
}

/// The scenario key of an operation, for messages.
fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Run(_) => "run",
        Op::Spin(_) => "spin",
        Op::Sleep(_) => "sleep",
        Op::Fault(_) => "fault",
        Op::Periodic { .. } => "periodic",
        Op::Lock(_) => "lock",
        Op::Unlock(_) => "unlock",
        Op::Signal(_) => "signal",
        Op::Wait(_) => "wait",
        Op::Barrier(_) => "barrier",
        Op::Sporadic { .. } => "sporadic",
        Op::Msg { .. } => "msg",
        Op::Loop { .. } => "loop",
        Op::Yield => "yield",
        Op::Randres(_) => "randres",
        Op::Constraints(_) => "constraints",
        Op::Frames { .. } => "frames",
        Op::Call { .. } => "call",
        Op::Serve(_) => "serve",
        Op::Kill(_) => "kill",
        Op::Create(_) => "create",
        Op::Exit => "exit",
    }
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reads `ns`.
fn sleep_until(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; no remainder is asked for.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// Whether the program goes on after a step.
#[derive(PartialEq)]
enum Flow {
    Next,
    Exit,
}

/// A worker executing its steps, reporting jobs to `out`.
struct Worker<W: Write> {
    zero_ns: u64,
    rng: ChaCha8Rng,
    out: W,
    records: u64,
    control: Option<std::path::PathBuf>,
    /// Connected at the first `msg`.
    client: Option<crate::control::Client>,
    /// Wakeups promised so far.
    wakeups: u64,
}

impl<W: Write> Worker<W> {
    /// Now, ns since time zero.
    fn now(&self) -> u64 {
        clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(self.zero_ns)
    }

    fn report(&mut self, line: std::fmt::Arguments) {
        // One write per line: a line is never split by a kill.
        let line = format!("{line}\n");
        let _ = self.out.write_all(line.as_bytes());
    }

    /// Reports a job released at `release`; returns its record number.
    fn release(&mut self, job: u64, release: u64, deadline: u64) -> u64 {
        let record = self.records;
        self.records += 1;
        self.report(format_args!("R {record} {job} {release} {deadline}"));
        record
    }

    /// Sends a message for this thread through the control socket; the
    /// answer.
    fn send(
        &mut self,
        to: Option<String>,
        msg: &hsched_core::Msg,
    ) -> std::io::Result<crate::control::Response> {
        if self.client.is_none() {
            let path = self.control.as_deref().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no control socket given")
            })?;
            self.client = Some(crate::control::Client::connect(path)?);
        }
        let client = self.client.as_mut().expect("connected above");
        client.request(&crate::control::Request::Msg {
            thread: None,
            to,
            name: msg.name.clone(),
            args: msg.args.clone(),
        })
    }

    fn steps(&mut self, steps: &[Step]) -> Flow {
        for s in steps {
            if self.step(s) == Flow::Exit {
                return Flow::Exit;
            }
        }
        Flow::Next
    }

    fn step(&mut self, step: &Step) -> Flow {
        match step {
            Step::Run(d) => {
                let want = hsched_model::draw(d, &mut self.rng).as_nanos();
                let start = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
                while clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - start < want {
                    std::hint::spin_loop();
                }
            }
            Step::Spin(d) => {
                let until = self.now() + hsched_model::draw(d, &mut self.rng).as_nanos();
                while self.now() < until {
                    std::hint::spin_loop();
                }
            }
            Step::Sleep(d) => {
                let until = self.now() + hsched_model::draw(d, &mut self.rng).as_nanos();
                sleep_until(self.zero_ns + until);
            }
            // SAFETY: no arguments.
            Step::Yield => unsafe {
                libc::sched_yield();
            },
            Step::Msg { to, msg } => {
                // The agent logs the answer; the program goes on either way
                // (the socket is gone only once the run is over).
                if let Ok(reply) = self.send(to.clone(), msg) {
                    // A duration crosses the socket as a bare number of ns
                    // (values are untagged there): it comes back an `Int`.
                    let at = match reply.reply.get("wakeup") {
                        Some(hsched_core::Value::Duration(d)) => Some(d.as_nanos()),
                        Some(&hsched_core::Value::Int(ns)) => u64::try_from(ns).ok(),
                        _ => None,
                    };
                    if let Some(at) = at {
                        // Read when this process next runs: the scheduler
                        // holds it off its CPU until then.
                        let ran = self.now();
                        let job = self.wakeups;
                        self.wakeups += 1;
                        let record = self.release(job, at, at);
                        self.report(format_args!("S {record} {ran}"));
                        self.report(format_args!("F {record} {ran}"));
                    }
                }
            }
            Step::Exit => return Flow::Exit,
            Step::Loop { count, body } => {
                let mut done = 0;
                while count.is_none_or(|c| done < c) {
                    if self.steps(body) == Flow::Exit {
                        return Flow::Exit;
                    }
                    done += 1;
                }
            }
            Step::Periodic {
                period,
                deadline,
                offset,
                jobs,
                body,
            } => {
                // The nominal grid from where the operation starts: an
                // overrun makes the next start late, never shifts it.
                let mut next = self.now() + offset.as_nanos();
                let mut job = 0;
                while jobs.is_none_or(|j| job < j) {
                    if self.now() < next {
                        sleep_until(self.zero_ns + next);
                    }
                    let record = self.release(job, next, next + deadline.as_nanos());
                    let started = self.now();
                    self.report(format_args!("S {record} {started}"));
                    if self.steps(body) == Flow::Exit {
                        return Flow::Exit;
                    }
                    let finished = self.now();
                    self.report(format_args!("F {record} {finished}"));
                    job += 1;
                    next += period.as_nanos();
                }
            }
            Step::Frames {
                max_gap,
                count,
                body,
            } => {
                let gap = max_gap.as_nanos();
                if *count == Some(0) {
                    return Flow::Next;
                }
                let mut job = 0;
                let mut released = self.now();
                let mut record = self.release(job, released, released + gap);
                self.report(format_args!("S {record} {released}"));
                let mut started = true;
                let mut frames = 0;
                loop {
                    if self.steps(body) == Flow::Exit {
                        return Flow::Exit;
                    }
                    let now = self.now();
                    // Each deadline that passed without a frame is missed
                    // and followed by the next, `max_gap` later.
                    while released + gap < now {
                        job += 1;
                        released += gap;
                        record = self.release(job, released, released + gap);
                        started = false;
                    }
                    if !started {
                        self.report(format_args!("S {record} {now}"));
                    }
                    self.report(format_args!("F {record} {now}"));
                    frames += 1;
                    if count.is_some_and(|c| frames >= c) {
                        break;
                    }
                    job += 1;
                    released = now;
                    record = self.release(job, released, released + gap);
                    self.report(format_args!("S {record} {now}"));
                    started = true;
                }
            }
        }
        Flow::Next
    }
}

/// Runs `spec`'s program to its end, reporting jobs to `out`.
pub fn run(spec: &WorkerSpec, out: impl Write) {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    rng.set_stream(spec.stream);
    let mut worker = Worker {
        zero_ns: spec.zero_ns,
        rng,
        out,
        records: 0,
        wakeups: 0,
        control: spec.control.clone(),
        client: None,
    };
    worker.steps(&spec.steps);
}

/// The worker program's entry: its spec as JSON in the one argument, job
/// lines to standard output. Exit code 2 for a bad argument.
pub fn main_with_args(args: &[String]) -> i32 {
    let [json] = args else {
        eprintln!("hsched worker: expected one argument, the worker spec as JSON");
        return 2;
    };
    match serde_json::from_str::<WorkerSpec>(json) {
        Ok(spec) => {
            run(&spec, std::io::stdout().lock());
            0
        }
        Err(e) => {
            eprintln!("hsched worker: bad spec: {e}");
            2
        }
    }
}

/// The job records of thread `thread` from a worker's report (lines it
/// could not read are skipped: a worker killed mid-write leaves at most
/// a partial last line).
pub fn jobs_from_report(thread: ThreadId, report: &str) -> Vec<JobRecord> {
    let mut jobs: Vec<JobRecord> = Vec::new();
    let mut index: std::collections::HashMap<u64, usize> = Default::default();
    for line in report.lines() {
        let words: Vec<u64> = line
            .split(' ')
            .skip(1)
            .map_while(|w| w.parse().ok())
            .collect();
        match (line.split(' ').next(), words.as_slice()) {
            (Some("R"), &[record, job, release, deadline]) => {
                index.insert(record, jobs.len());
                jobs.push(JobRecord {
                    thread,
                    job,
                    release: Instant(release),
                    start: None,
                    finish: None,
                    deadline: Instant(deadline),
                    admitted: None,
                });
            }
            (Some("S"), &[record, at]) => {
                if let Some(&i) = index.get(&record) {
                    jobs[i].start = Some(Instant(at));
                }
            }
            (Some("F"), &[record, at]) => {
                if let Some(&i) = index.get(&record) {
                    jobs[i].finish = Some(Instant(at));
                }
            }
            _ => {}
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed_ms(ms: u64) -> Dist {
        Dist::Fixed(Duration::from_millis(ms))
    }

    #[test]
    fn operations_it_cannot_run_are_refused_by_name() {
        let ops = vec![Op::Loop {
            count: None,
            body: vec![Op::Lock("m".into())],
        }];
        let err = plan(&ops).unwrap_err();
        assert!(err.contains("`lock`"), "{err}");
    }

    #[test]
    fn a_spec_survives_its_json() {
        let spec = WorkerSpec {
            zero_ns: 7,
            seed: 3,
            stream: 2,
            control: None,
            steps: plan(&[Op::Periodic {
                period: Duration::from_millis(10),
                deadline: Duration::from_millis(10),
                offset: Duration::ZERO,
                jobs: Some(3),
                body: vec![Op::Run(fixed_ms(1))],
            }])
            .unwrap(),
        };
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(serde_json::from_str::<WorkerSpec>(&json).unwrap(), spec);
    }

    #[test]
    fn periodic_jobs_are_released_on_the_grid_and_reported() {
        let spec = WorkerSpec {
            zero_ns: clock_ns(libc::CLOCK_MONOTONIC),
            seed: 1,
            stream: 1,
            control: None,
            steps: vec![Step::Periodic {
                period: Duration::from_millis(5),
                deadline: Duration::from_millis(5),
                offset: Duration::from_millis(2),
                jobs: Some(4),
                body: vec![Step::Run(fixed_ms(1))],
            }],
        };
        let mut out = Vec::new();
        run(&spec, &mut out);
        let jobs = jobs_from_report(ThreadId(0), std::str::from_utf8(&out).unwrap());
        assert_eq!(jobs.len(), 4);
        let first = jobs[0].release.0;
        for (k, j) in jobs.iter().enumerate() {
            assert_eq!(j.job, k as u64);
            assert_eq!(j.release.0, first + k as u64 * 5_000_000, "on the grid");
            assert_eq!(j.deadline.0, j.release.0 + 5_000_000);
            let (start, finish) = (j.start.unwrap(), j.finish.unwrap());
            assert!(start >= j.release, "never early");
            // A millisecond of CPU takes at least a millisecond.
            assert!(finish.0 - start.0 >= 1_000_000, "{j:?}");
        }
    }

    #[test]
    fn a_frame_loop_slower_than_its_gap_misses_deadlines() {
        // Frames of at least 2.5 ms wall time against a 1 ms gap: a frame
        // that took d misses ceil(d / max_gap) - 1 deadlines, at least two
        // (the first frame's included). How long past 2.5 ms each frame
        // took depends on the machine's load, so the misses are checked
        // against each frame's measured length.
        let spec = WorkerSpec {
            zero_ns: clock_ns(libc::CLOCK_MONOTONIC),
            seed: 1,
            stream: 1,
            control: None,
            steps: vec![Step::Frames {
                max_gap: Duration::from_millis(1),
                count: Some(3),
                body: vec![Step::Sleep(Dist::Fixed(Duration::from_micros(2_500)))],
            }],
        };
        let mut out = Vec::new();
        run(&spec, &mut out);
        let jobs = jobs_from_report(ThreadId(0), std::str::from_utf8(&out).unwrap());
        let finishes: Vec<u64> = jobs.iter().filter_map(|j| j.finish).map(|f| f.0).collect();
        assert_eq!(finishes.len(), 3, "one finished deadline per frame");
        let missed = jobs.iter().filter(|j| j.finish.is_none()).count() as u64;
        let gap = 1_000_000;
        let mut start = jobs[0].release.0;
        let mut expected = 0;
        for finish in finishes {
            let took = finish - start;
            assert!(took >= 2_500_000, "a frame of {took}ns: {jobs:?}");
            expected += took.div_ceil(gap) - 1;
            start = finish;
        }
        assert!(missed >= 6, "{missed} missed: {jobs:?}");
        assert_eq!(missed, expected, "{jobs:?}");
        assert!(jobs
            .iter()
            .all(|j| j.finish.is_none_or(|f| f <= j.deadline)));
    }

    #[test]
    fn a_partial_or_foreign_line_is_skipped() {
        let jobs = jobs_from_report(
            ThreadId(1),
            "R 0 0 10 20\nS 0 12\nF 0 1\nS 9 3\ngarbage\nR 1 1 3",
        );
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].start, Some(Instant(12)));
        assert_eq!(jobs[0].finish, Some(Instant(1)));
    }
}
