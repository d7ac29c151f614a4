//! The BVT paper's `randres` test program (§5.1) and the `fault` operation.

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Instant, Msg, Params, ParentVp, PolicyInfo, Reject,
    Reply, Scheduler, Sender, TimerKey,
};
use hsched_model::{
    Dist, ErrorMode, JobRecord, LogKind, Machine, Op, Program, Randres, RunResult, Scenario,
    SchedulerSpec, SegmentKind, ThreadSpec,
};
use hsched_sim::{run, run_with_policies, SimOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::RefCell;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Instant {
    Instant::ZERO + ms(x)
}

/// The paper's parameters with a 10ms mcu: deadlines 26..34 mcu apart,
/// needs of 6..12 mcu.
fn paper(fussiness: u32, reserve: bool) -> Randres {
    Randres {
        spacing: Dist::Uniform {
            min: ms(260),
            max: ms(340),
        },
        need: Dist::Uniform {
            min: ms(60),
            max: ms(120),
        },
        error: Duration::ZERO,
        mode: ErrorMode::Mixed,
        fussiness,
        reserve,
        count: None,
    }
}

fn thread(name: &str, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: "root".into(),
        params: Params::new(),
        arrival: Instant::ZERO,
        program: Program::new(ops),
        needs: None,
    }
}

fn busy(name: &str) -> ThreadSpec {
    thread(
        name,
        vec![Op::Loop {
            count: None,
            body: vec![Op::Run(Dist::Fixed(Duration::from_secs(10)))],
        }],
    )
}

/// One CPU, a single scheduler `root` of `policy`.
fn scenario(policy: &str, horizon: Duration, seed: u64, threads: Vec<ThreadSpec>) -> Scenario {
    Scenario {
        name: "randres".into(),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon,
        seed,
        schedulers: vec![SchedulerSpec {
            name: "root".into(),
            policy: policy.into(),
            params: Params::new(),
            parents: vec![],
        }],
        default_scheduler: "root".into(),
        threads,
        script: vec![],
    }
}

fn opts() -> SimOptions {
    SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    }
}

fn jobs_of(r: &RunResult, name: &str) -> Vec<JobRecord> {
    let id = r.threads.iter().find(|t| t.name == name).unwrap().id;
    r.jobs.iter().filter(|j| j.thread == id).cloned().collect()
}

fn horizon_of(r: &RunResult) -> Instant {
    Instant::ZERO + r.horizon
}

/// Alone on the CPU with f = 0, every job is released at the previous
/// deadline, runs at once for its need and makes its deadline; the records
/// are exactly the draws of the thread's stream (spacing then need, per
/// deadline, after one draw that seeds the error stream).
#[test]
fn alone_with_f0_every_deadline_is_made_and_the_records_are_the_draws() {
    for policy in ["fifo", "rr"] {
        let scn = scenario(
            policy,
            Duration::from_secs(10),
            11,
            vec![thread("rt", vec![Op::Randres(paper(0, false))])],
        );
        let r = run(&scn, &opts()).unwrap();
        assert!(r.log.is_empty(), "{policy}: {:?}", r.log);
        let jobs = jobs_of(&r, "rt");
        assert!(jobs.len() >= 29, "{policy}: {} jobs", jobs.len());

        // Thread 0's stream, as the simulator seeds it.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        rng.set_stream(1);
        let _err_seed: u64 = rng.gen();
        let mut prev = Instant::ZERO;
        let mut cpu = Duration::ZERO;
        for (i, j) in jobs.iter().enumerate() {
            let spacing = Duration(rng.gen_range(ms(260).as_nanos()..=ms(340).as_nanos()));
            let need = Duration(rng.gen_range(ms(60).as_nanos()..=ms(120).as_nanos()));
            assert_eq!(j.job, i as u64);
            assert_eq!(
                j.release, prev,
                "{policy} job {i}: f = 0 releases at d_(i-1)"
            );
            assert_eq!(j.deadline, prev.saturating_add(spacing), "{policy} job {i}");
            assert_eq!(j.start, Some(j.release), "{policy} job {i}: no contention");
            if let Some(f) = j.finish {
                assert_eq!(f, j.release.saturating_add(need), "{policy} job {i}");
                cpu += need;
            } else {
                // Only the last one can be cut by the horizon.
                assert_eq!(i, jobs.len() - 1, "{policy}: job {i} unfinished");
                cpu += horizon_of(&r).saturating_since(j.release);
            }
            assert!(!j.missed(horizon_of(&r)), "{policy} job {i}: {j:?}");
            prev = j.deadline;
        }
        // It never runs outside its jobs.
        assert_eq!(r.threads[0].cpu_time, cpu, "{policy}");
        // The next deadline would be past the horizon.
        assert!(prev.saturating_add(ms(340)) >= horizon_of(&r), "{policy}");
    }
}

/// With f > 0 each job is released at s_i = d_(i-1) + (d_i - d_(i-1)) * f,
/// in integer arithmetic; `count` bounds the deadlines, then the program
/// goes on (here: it exits).
#[test]
fn fussiness_moves_the_release_towards_the_deadline() {
    let mut rr = paper(540, false);
    rr.count = Some(5);
    let scn = scenario(
        "rr",
        Duration::from_secs(5),
        3,
        vec![thread("rt", vec![Op::Randres(rr.clone())])],
    );
    let r = run(&scn, &opts()).unwrap();
    let jobs = jobs_of(&r, "rt");
    assert_eq!(jobs.len(), 5);
    let mut prev = Instant::ZERO;
    for j in &jobs {
        let gap = j.deadline.saturating_since(prev);
        assert!(gap >= ms(260) && gap <= ms(340), "{j:?}");
        let offset = gap.as_nanos() as u128 * 540 / 1000;
        assert_eq!(j.release, prev.saturating_add(Duration(offset as u64)));
        assert_eq!(j.release, rr.start_between(prev, j.deadline));
        let ran = j.finish.unwrap().saturating_since(j.start.unwrap());
        assert!(ran >= ms(60) && ran <= ms(120), "{j:?}");
        assert!(!j.missed(horizon_of(&r)));
        prev = j.deadline;
    }
    // The operation ends with its last job.
    assert_eq!(r.threads[0].exit, jobs[4].finish);
}

fn contended(seed: u64) -> RunResult {
    let scn = scenario(
        "rr",
        Duration::from_secs(20),
        seed,
        vec![
            thread("rt1", vec![Op::Randres(paper(540, false))]),
            thread("rt2", vec![Op::Randres(paper(540, false))]),
            busy("cont"),
        ],
    );
    run(&scn, &opts()).unwrap()
}

/// Two randres and a CPU-bound thread under round robin: some deadlines are
/// missed; a missed job is abandoned at its deadline (no finish), never
/// finished late, and the thread runs only inside its jobs' windows.
#[test]
fn under_contention_deadlines_are_missed_and_abandoned() {
    let r = contended(5);
    let end = horizon_of(&r);
    let trace = r.trace.as_ref().unwrap();
    let mut missed = 0;
    let mut made = 0;
    for name in ["rt1", "rt2"] {
        let id = r.threads.iter().find(|t| t.name == name).unwrap().id;
        let jobs = jobs_of(&r, name);
        for j in &jobs {
            if let Some(f) = j.finish {
                assert!(f <= j.deadline, "finished late: {j:?}");
                made += 1;
            } else if j.deadline < end {
                assert!(j.missed(end));
                missed += 1;
            }
        }
        for s in &trace.segments {
            if s.what == SegmentKind::Run(id) {
                let inside = jobs.iter().any(|j| {
                    s.start >= j.release && s.end <= j.finish.unwrap_or(j.deadline).min(end)
                });
                assert!(inside, "{name} ran outside its jobs: {s:?}");
            }
        }
    }
    assert!(missed > 0, "no deadline missed");
    assert!(made > 0, "no deadline made");
    // What the randres threads abandon goes to the CPU-bound one.
    let total: Duration = r.threads.iter().fold(Duration::ZERO, |a, t| a + t.cpu_time);
    assert_eq!(total, r.horizon);
}

#[test]
fn the_seed_decides_the_jobs() {
    let a = format!("{:?}", contended(5).jobs);
    let b = format!("{:?}", contended(5).jobs);
    let c = format!("{:?}", contended(6).jobs);
    assert_eq!(a, b, "same seed, same job records");
    assert_ne!(a, c, "another seed, other job records");
}

/// A scheduler that does not understand `reserve` refuses every request:
/// each deadline is missed and the thread never runs (the paper's rule).
#[test]
fn refused_reservations_miss_every_deadline_without_running() {
    let scn = scenario(
        "rr",
        Duration::from_secs(3),
        1,
        vec![
            thread("rt", vec![Op::Randres(paper(0, true))]),
            busy("cont"),
        ],
    );
    let r = run(&scn, &opts()).unwrap();
    let jobs = jobs_of(&r, "rt");
    assert!(jobs.len() >= 8, "{}", jobs.len());
    for j in &jobs {
        assert_eq!((j.start, j.finish), (None, None), "{j:?}");
    }
    let end = horizon_of(&r);
    assert!(jobs
        .iter()
        .filter(|j| j.deadline < end)
        .all(|j| j.missed(end)));
    assert_eq!(r.threads[0].cpu_time, Duration::ZERO);
    assert_eq!(r.threads[1].cpu_time, r.horizon);
    let refused = r
        .log
        .iter()
        .filter(|e| e.kind == LogKind::Refused && e.text.contains("reserve"))
        .count();
    assert_eq!(refused, jobs.len(), "{:?}", r.log);
}

// A test double: `fifo`, plus a spy. It records the `involuntary` flag of
// every `vp_release` and accepts and records every `reserve` request.

thread_local! {
    static RELEASES: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
    static RESERVES: RefCell<Vec<(Duration, Duration, Duration)>> = const { RefCell::new(Vec::new()) };
}

struct Spy(Box<dyn Scheduler>);

impl Scheduler for Spy {
    fn policy(&self) -> &'static str {
        "spy"
    }
    fn init(&mut self, cx: &mut Cx) {
        self.0.init(cx)
    }
    fn deinit(&mut self, cx: &mut Cx) {
        self.0.deinit(cx)
    }
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        self.0.register_vp(cx, child, params)
    }
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        self.0.unregister_vp(cx, child)
    }
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        self.0.vp_request(cx, child)
    }
    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        RELEASES.with(|r| r.borrow_mut().push(cx.involuntary()));
        self.0.vp_release(cx, child)
    }
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) -> Dispatch {
        self.0.vp_grant(cx, vp, cpu)
    }
    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) {
        self.0.vp_revoke(cx, vp, cpu)
    }
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        self.0.charge(cx, child, ran)
    }
    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        self.0.timer(cx, key)
    }
    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        if msg.name == "reserve" {
            let a = &msg.args;
            RESERVES.with(|r| {
                r.borrow_mut().push((
                    a.duration("start"),
                    a.duration("amount"),
                    a.duration("deadline"),
                ))
            });
            return Reply::ok();
        }
        self.0.msg(cx, from, msg)
    }
    fn check_invariants(&self) -> Result<(), String> {
        self.0.check_invariants()
    }
}

static SPY: PolicyInfo = PolicyInfo {
    name: "spy",
    summary: "fifo that records releases and accepts reservations",
    doc: "",
    params: Vec::new,
    child_params: Vec::new,
    build: |p| {
        let fifo = hsched_policies::find("fifo").unwrap();
        Ok(Box::new(Spy((fifo.build)(p)?)))
    },
    max_parents: 1,
    max_children: u32::MAX,
};

/// `fault` blocks like `sleep`, but the scheduler sees it as involuntary.
#[test]
fn a_fault_is_an_involuntary_release_and_a_sleep_is_not() {
    RELEASES.with(|r| r.borrow_mut().clear());
    let scn = scenario(
        "spy",
        ms(100),
        1,
        vec![thread(
            "t",
            vec![
                Op::Run(Dist::Fixed(ms(1))),
                Op::Fault(Dist::Fixed(ms(5))),
                Op::Run(Dist::Fixed(ms(1))),
                Op::Sleep(Dist::Fixed(ms(5))),
                Op::Run(Dist::Fixed(ms(1))),
                Op::Fault(Dist::Uniform {
                    min: ms(1),
                    max: ms(3),
                }),
                Op::Run(Dist::Fixed(ms(50))),
            ],
        )],
    );
    let r = run_with_policies(&scn, &opts(), &[&SPY]).unwrap();
    assert!(r.log.is_empty(), "{:?}", r.log);
    let releases = RELEASES.with(|r| r.borrow().clone());
    // fault, sleep, fault, then the exit (voluntary).
    assert_eq!(releases, vec![true, false, true, false]);
    // The fault lasted its 5ms like a sleep would: the second run started at 6ms.
    let wakeups = &r.threads[0].wakeup_latencies;
    assert_eq!(wakeups.len(), 4);
    assert_eq!(r.threads[0].cpu_time, ms(53));
    let exit = r.threads[0].exit.unwrap();
    assert!(exit >= at(1 + 5 + 1 + 5 + 1 + 1 + 50) && exit <= at(1 + 5 + 1 + 5 + 1 + 3 + 50));
}

/// With a scheduler that accepts them, each job is preceded by a
/// reservation (s_i, t_i, d_i) with t_i = a_i + e_i, |e_i| in [0, 2*error]
/// with the sign of the mode.
#[test]
fn reservations_carry_the_release_the_prediction_and_the_deadline() {
    for mode in [ErrorMode::Over, ErrorMode::Under, ErrorMode::Mixed] {
        RESERVES.with(|r| r.borrow_mut().clear());
        let mut spec = paper(400, true);
        spec.error = ms(20);
        spec.mode = mode;
        let scn = scenario(
            "spy",
            Duration::from_secs(30),
            9,
            vec![thread("rt", vec![Op::Randres(spec)])],
        );
        let r = run_with_policies(&scn, &opts(), &[&SPY]).unwrap();
        let reserves = RESERVES.with(|r| r.borrow().clone());
        let jobs = jobs_of(&r, "rt");
        assert_eq!(reserves.len(), jobs.len(), "{mode:?}");
        let (mut over, mut under, mut sum) = (0, 0, 0u64);
        for ((start, amount, deadline), j) in reserves.iter().zip(&jobs) {
            assert_eq!(Instant::ZERO.saturating_add(*start), j.release);
            assert_eq!(Instant::ZERO.saturating_add(*deadline), j.deadline);
            let Some(finish) = j.finish else { continue };
            // Alone on the CPU: it ran its actual need from its release.
            assert_eq!(j.start, Some(j.release));
            let need = finish.saturating_since(j.release);
            let e = amount.as_nanos() as i64 - need.as_nanos() as i64;
            assert!(e.unsigned_abs() <= ms(40).as_nanos(), "{mode:?}: e = {e}");
            over += usize::from(e > 0);
            under += usize::from(e < 0);
            sum += e.unsigned_abs();
        }
        let n = jobs.iter().filter(|j| j.finish.is_some()).count() as u64;
        assert!(n >= 80, "{mode:?}: {n}");
        match mode {
            ErrorMode::Over => assert_eq!(under, 0),
            ErrorMode::Under => assert_eq!(over, 0),
            ErrorMode::Mixed => assert!(over > n as usize / 4 && under > n as usize / 4),
        }
        // The mean magnitude is `error` (loosely: a hundred-odd draws).
        let mean = sum / n;
        assert!(
            mean > ms(15).as_nanos() && mean < ms(25).as_nanos(),
            "{mode:?}: mean |e| = {mean}"
        );
    }
}

/// Deadlines and needs do not depend on the prediction error: runs that
/// differ only in `error` and `mode` see the same deadlines.
#[test]
fn errors_do_not_change_the_deadlines() {
    let deadlines = |error: Duration, mode: ErrorMode| {
        let mut spec = paper(540, false);
        spec.error = error;
        spec.mode = mode;
        let scn = scenario(
            "rr",
            Duration::from_secs(5),
            4,
            vec![thread("rt", vec![Op::Randres(spec)])],
        );
        let r = run(&scn, &opts()).unwrap();
        r.jobs
            .iter()
            .map(|j| (j.release, j.deadline, j.finish))
            .collect::<Vec<_>>()
    };
    let base = deadlines(Duration::ZERO, ErrorMode::Mixed);
    assert_eq!(base, deadlines(ms(30), ErrorMode::Over));
    assert_eq!(base, deadlines(ms(10), ErrorMode::Mixed));
}
