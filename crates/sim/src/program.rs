//! Workload programs compiled to a flat instruction list, and the seeded
//! draws of their durations.
//!
//! Loops and periodic timers become jump pairs so that a thread's position
//! is one index plus a small stack of counters: cheap to step, trivially
//! deterministic.

use hsched_core::{Duration, Instant, Msg};
// The draw lives beside `Dist` (live's workers draw the same way).
use hsched_model::draw;
use hsched_model::{ConstraintLoad, Dist, ErrorMode, Op, Randres, Target, Via};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Debug)]
pub(crate) enum Instr {
    Run(Dist),
    /// Use the CPU until this much wall time has passed.
    Spin(Dist),
    Sleep(Dist),
    Fault(Dist),
    Lock(usize),
    Unlock(usize),
    Signal(usize),
    Wait(usize),
    Barrier(usize),
    Msg(Target, Msg),
    Yield,
    /// Start of a loop; `end` is the index after the matching `LoopEnd`.
    LoopStart {
        count: Option<u64>,
        end: usize,
    },
    LoopEnd {
        start: usize,
    },
    /// Start of a periodic timer, or with `on` of jobs released by that
    /// semaphore's signals (`period` and `offset` then zero); `end` is the
    /// index after its `JobEnd`.
    PeriodicStart {
        period: Duration,
        deadline: Duration,
        offset: Duration,
        jobs: Option<u64>,
        on: Option<usize>,
        end: usize,
    },
    /// Wait for the next release of the innermost periodic timer (or
    /// signal), then start a job.
    AwaitRelease,
    JobEnd {
        start: usize,
    },
    /// The BVT paper's `randres`; the thread stays on this instruction
    /// (with its state in `Cursor::randres`) until its last deadline.
    Randres(Box<Randres>),
    /// The Rialto paper's constraint stress test; the thread stays on this
    /// instruction (with its state in `Cursor::constraints`) until its last
    /// constraint.
    Constraints(Box<ConstraintLoad>),
    /// Start of a free-running frame loop; `end` is the index after its
    /// `FrameEnd`.
    FramesStart {
        max_gap: Duration,
        count: Option<u64>,
        end: usize,
    },
    /// A frame is done: settle the deadlines up to now, then loop or leave.
    FrameEnd {
        start: usize,
    },
    /// A call to a domain's stop (see `trains`).
    Call {
        domain: String,
        stop: String,
        via: Via,
    },
    /// An RPC server's loop: the thread stays on it for ever.
    Serve(String),
    Kill(String),
    Create(String),
    Exit,
}

/// What a name in a program stands for, each kind in its own namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncKind {
    Mutex,
    Semaphore,
    Barrier,
}

/// Compiles a program; mutex, semaphore and barrier names are interned through
/// `intern`.
pub(crate) fn compile(ops: &[Op], intern: &mut impl FnMut(SyncKind, &str) -> usize) -> Vec<Instr> {
    let mut out = Vec::new();
    emit(ops, &mut out, intern);
    out
}

fn emit(ops: &[Op], out: &mut Vec<Instr>, intern: &mut impl FnMut(SyncKind, &str) -> usize) {
    for op in ops {
        match op {
            Op::Run(d) => out.push(Instr::Run(d.clone())),
            Op::Spin(d) => out.push(Instr::Spin(d.clone())),
            Op::Sleep(d) => out.push(Instr::Sleep(d.clone())),
            Op::Fault(d) => out.push(Instr::Fault(d.clone())),
            Op::Randres(r) => out.push(Instr::Randres(Box::new(r.clone()))),
            Op::Constraints(c) => out.push(Instr::Constraints(Box::new(c.clone()))),
            Op::Lock(m) => out.push(Instr::Lock(intern(SyncKind::Mutex, m))),
            Op::Unlock(m) => out.push(Instr::Unlock(intern(SyncKind::Mutex, m))),
            Op::Signal(m) => out.push(Instr::Signal(intern(SyncKind::Semaphore, m))),
            Op::Wait(m) => out.push(Instr::Wait(intern(SyncKind::Semaphore, m))),
            Op::Barrier(b) => out.push(Instr::Barrier(intern(SyncKind::Barrier, b))),
            Op::Msg { to, msg } => out.push(Instr::Msg(to.clone(), msg.clone())),
            Op::Yield => out.push(Instr::Yield),
            Op::Call { domain, stop, via } => out.push(Instr::Call {
                domain: domain.clone(),
                stop: stop.clone(),
                via: *via,
            }),
            Op::Serve(d) => out.push(Instr::Serve(d.clone())),
            Op::Kill(d) => out.push(Instr::Kill(d.clone())),
            Op::Create(d) => out.push(Instr::Create(d.clone())),
            Op::Exit => out.push(Instr::Exit),
            Op::Frames {
                max_gap,
                count,
                body,
            } => {
                let start = out.len();
                out.push(Instr::FrameEnd { start }); // placeholder, replaced below
                emit(body, out, intern);
                out.push(Instr::FrameEnd { start });
                out[start] = Instr::FramesStart {
                    max_gap: *max_gap,
                    count: *count,
                    end: out.len(),
                };
            }
            Op::Loop { count, body } => {
                let start = out.len();
                out.push(Instr::LoopStart {
                    count: *count,
                    end: 0,
                });
                emit(body, out, intern);
                out.push(Instr::LoopEnd { start });
                let end = out.len();
                out[start] = Instr::LoopStart { count: *count, end };
            }
            Op::Periodic {
                period,
                deadline,
                offset,
                jobs,
                body,
            } => emit_jobs(body, out, intern, |end| Instr::PeriodicStart {
                period: *period,
                deadline: *deadline,
                offset: *offset,
                jobs: *jobs,
                on: None,
                end,
            }),
            Op::Sporadic {
                on,
                deadline,
                jobs,
                body,
            } => {
                let on = intern(SyncKind::Semaphore, on);
                emit_jobs(body, out, intern, |end| Instr::PeriodicStart {
                    period: Duration::ZERO,
                    deadline: *deadline,
                    offset: Duration::ZERO,
                    jobs: *jobs,
                    on: Some(on),
                    end,
                });
            }
        }
    }
}

/// A job loop: `start(end)` (a `PeriodicStart`), `AwaitRelease`, the body,
/// `JobEnd`.
fn emit_jobs(
    body: &[Op],
    out: &mut Vec<Instr>,
    intern: &mut impl FnMut(SyncKind, &str) -> usize,
    start: impl FnOnce(usize) -> Instr,
) {
    let at = out.len();
    out.push(Instr::AwaitRelease); // placeholder, replaced below
    out.push(Instr::AwaitRelease);
    emit(body, out, intern);
    out.push(Instr::JobEnd { start: at });
    out[at] = start(out.len());
}

/// Where a thread is in its program.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cursor {
    pub pc: usize,
    /// Remaining iterations of enclosing finite loops (innermost last);
    /// `u64::MAX` for an infinite loop.
    pub loops: Vec<u64>,
    /// Enclosing periodic timers (innermost last).
    pub periodic: Vec<PeriodicState>,
    /// Enclosing frame loops (innermost last).
    pub frames: Vec<FramesState>,
    /// The `randres` in progress (it is a leaf: at most one at a time).
    pub randres: Option<RandresState>,
    /// The `constraints` in progress (a leaf too).
    pub constraints: Option<ConstraintsState>,
}

#[derive(Clone, Debug)]
pub(crate) struct PeriodicState {
    /// Index of the `PeriodicStart` instruction.
    pub start: usize,
    pub next_release: Instant,
    pub job: u64,
    /// Index into the run's job records of the job in progress.
    pub record: Option<usize>,
}

/// Where a frame loop is.
#[derive(Clone, Debug)]
pub(crate) struct FramesState {
    /// Index of the `FramesStart` instruction.
    pub start: usize,
    pub frames: u64,
    /// Index into the run's job records of the deadline now pending.
    pub record: usize,
}

/// Where a `randres` is: between deadlines `prev` (`d_{i-1}`) and the
/// current iteration's.
#[derive(Clone, Debug)]
pub(crate) struct RandresState {
    /// `d_{i-1}`: the previous deadline (the start of the operation at first).
    pub prev: Instant,
    /// Deadlines begun so far (the current one's job number is `done`
    /// while it is in progress, then this is bumped).
    pub done: u64,
    /// Prediction errors come from their own stream, seeded once from the
    /// thread's: the deadlines and needs a seed gives do not depend on
    /// `error` or `mode`, so runs that differ only in those compare the same
    /// deadlines.
    pub err_rng: ChaCha8Rng,
    pub phase: RandresPhase,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum RandresPhase {
    /// Draw the next iteration (or end the operation).
    Next,
    /// Drawn: wait for the release `s`, then reserve and run.
    Await(RandresJob),
    /// Released and running its need; abandoned at `deadline`.
    Running { job: RandresJob, record: usize },
    /// Its reservation was refused or it reached the deadline unfinished:
    /// do nothing until the deadline, then go on.
    Missed { deadline: Instant },
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct RandresJob {
    /// `s_i`.
    pub start: Instant,
    /// `d_i`.
    pub deadline: Instant,
    /// `a_i`: what it runs.
    pub need: Duration,
    /// `t_i = max(a_i + e_i, 0)`: what it reserves.
    pub request: Duration,
}

/// Draws iteration `done + 1` of a `randres` whose previous deadline is
/// `prev`: the spacing and need from the thread's stream, in that order,
/// then (with `error > 0`) the error magnitude and, in `mixed` mode, its
/// sign from the error stream.
pub(crate) fn draw_randres(
    spec: &Randres,
    prev: Instant,
    rng: &mut ChaCha8Rng,
    err_rng: &mut ChaCha8Rng,
) -> RandresJob {
    let spacing = draw(&spec.spacing, rng).max(Duration(1));
    let need = draw(&spec.need, rng);
    let deadline = prev.saturating_add(spacing);
    let request = if spec.error.is_zero() {
        need
    } else {
        let magnitude = Duration(err_rng.gen_range(0..=spec.error.as_nanos().saturating_mul(2)));
        let positive = match spec.mode {
            ErrorMode::Over => true,
            ErrorMode::Under => false,
            ErrorMode::Mixed => err_rng.gen::<bool>(),
        };
        Randres::request(need, magnitude, positive)
    };
    RandresJob {
        start: spec.start_between(prev, deadline),
        deadline,
        need,
        request,
    }
}

/// Where a `constraints` operation is.
#[derive(Clone, Debug)]
pub(crate) struct ConstraintsState {
    /// Constraints issued so far (the current one's job number is `done`
    /// while it is in progress, then this is bumped).
    pub done: u64,
    pub phase: ConstraintsPhase,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum ConstraintsPhase {
    /// Issue the next constraint (or end the operation).
    Next,
    /// Issued: wait for its start, then run its work.
    Await { job: ConstraintJob, record: usize },
    /// Running its work; the constraint ends when `remaining` is zero.
    Running { record: usize },
}

/// One drawn iteration of a `constraints`, relative to its issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConstraintJob {
    /// `s`: from the issue to the start.
    pub start: Duration,
    /// `w`: from the start to the deadline, at least 1ns.
    pub window: Duration,
    /// `e`: what the constraint asks for.
    pub estimate: Duration,
    /// `a`: what the thread runs.
    pub work: Duration,
}

/// Draws one iteration of a `constraints` from the thread's stream, in the
/// documented order (the coin, `s`, `w`, `e`, the work fraction): `s` is
/// drawn even for an immediate constraint so that the draws after it do
/// not depend on the coin.
pub(crate) fn draw_constraint(spec: &ConstraintLoad, rng: &mut ChaCha8Rng) -> ConstraintJob {
    let immediate = rng.gen_range(0..ConstraintLoad::SCALE) < spec.immediate;
    let start = draw(&spec.start, rng);
    let window = draw(&spec.window, rng).max(Duration(1));
    let estimate = Duration(rng.gen_range(0..=window.as_nanos()));
    let [lo, hi] = spec.work;
    let fraction = rng.gen_range(lo.min(hi)..=hi);
    ConstraintJob {
        start: if immediate { Duration::ZERO } else { start },
        window,
        estimate,
        work: ConstraintLoad::work_for(estimate, fraction),
    }
}
