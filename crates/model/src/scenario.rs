//! The scenario model: the machine, the hierarchy, threads, programs, script.

use hsched_core::{Duration, Instant, Msg, Params};
use serde::{Deserialize, Serialize};

/// The longest horizon a run accepts (a scenario's `horizon`, `--horizon`):
/// one day. A day of simulated time at a 1 ms tick is already 86.4 million
/// timer events per CPU, minutes of simulation; a longer horizon is almost
/// always a slip of the unit (or `u64::MAX` meant as "for ever") and would
/// not end in any useful time.
pub const MAX_HORIZON: Duration = Duration(86_400 * 1_000_000_000);

/// Why `horizon` cannot be a run's horizon (zero, or above
/// [`MAX_HORIZON`]), or `None` when it can.
pub fn horizon_problem(horizon: Duration) -> Option<String> {
    if horizon.is_zero() {
        Some("a horizon of zero runs nothing: expected a duration greater than zero".into())
    } else if horizon > MAX_HORIZON {
        Some(format!(
            "{horizon} is longer than the longest horizon a run accepts, {MAX_HORIZON} \
             (MAX_HORIZON)"
        ))
    } else {
        None
    }
}

/// A whole scenario, as parsed and validated from a file.
#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    /// A human name (defaults to the file stem).
    pub name: String,
    pub description: String,
    pub machine: Machine,
    /// How long to run.
    pub horizon: Duration,
    /// Seed for every random draw of the run.
    pub seed: u64,
    /// Scheduler instances. Parents are named; the hierarchy is a DAG with
    /// exactly one root (an instance without parents).
    pub schedulers: Vec<SchedulerSpec>,
    /// The instance threads return to when their scheduler goes away, and
    /// where threads without an explicit parent go.
    pub default_scheduler: String,
    pub threads: Vec<ThreadSpec>,
    /// Hierarchy changes at given times.
    pub script: Vec<ScriptEvent>,
}

/// The platform: CPUs and overheads.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub cpus: u32,
    /// Time lost on every switch from one thread to another on a CPU.
    pub context_switch: Duration,
    /// With a tick (the papers' mcu / clock interrupt), timers and decision
    /// horizons take effect at the first tick boundary at or after their time.
    pub tick: Option<Duration>,
    /// Starvation watchdog: a thread requesting a CPU for longer than this
    /// without running gets its scheduler ejected. `None`: off.
    pub watchdog: Option<Duration>,
}

/// One scheduler instance.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchedulerSpec {
    pub name: String,
    /// Registered policy name (`rr`, `fp`, ...).
    pub policy: String,
    /// The policy's own parameters (checked against its declaration).
    pub params: Params,
    /// Where it attaches: none for the root, several for a `join`.
    pub parents: Vec<ParentLink>,
}

/// One attachment of a scheduler under a parent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ParentLink {
    pub parent: String,
    /// How many VPs it registers with that parent (CPUs it may use at once
    /// through it).
    pub vps: u32,
    /// Attachment parameters, checked against the parent policy's child
    /// parameters (e.g. `prio` under `fp`).
    pub params: Params,
}

/// A thread: where it attaches and what it does.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadSpec {
    pub name: String,
    /// Scheduler it attaches to (the default scheduler if the file names none).
    pub parent: String,
    /// Attachment parameters under that scheduler.
    pub params: Params,
    /// When it is created (becomes known and starts its program).
    pub arrival: Instant,
    pub program: Program,
    /// What it needs from its scheduler, as the HLS paper writes a guarantee
    /// (`"RESBS 10, 33"`): `hsched check` reports an error when its edge
    /// does not imply it. `None`: nothing stated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
}

/// What a thread does: the workload program `hsched sim` executes
/// (operations in order; the thread exits at the end) and, for `hsched
/// live`, the real command it runs, if any (argv; the program then models
/// it in simulation).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Program {
    pub ops: Vec<Op>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

impl Program {
    /// A program of `ops` with no real command.
    pub fn new(ops: Vec<Op>) -> Self {
        Program { ops, command: None }
    }
}

/// One operation of a workload program (close to rt-app's events).
#[derive(Clone, Debug, Serialize)]
pub enum Op {
    /// Use the CPU for this long (CPU time, not wall time).
    Run(Dist),
    /// Use the CPU whenever scheduled until this much wall time has
    /// passed (rt-app's `runtime`): a thread that busy-waits on the clock,
    /// so what it gets depends on its scheduler, not on a fixed amount.
    Spin(Dist),
    /// Block for this long.
    Sleep(Dist),
    /// Block involuntarily for this long (a page fault): like `Sleep`, but
    /// the platform reports it as an involuntary block, so the thread's
    /// scheduler sees `Cx::involuntary()` in `vp_release`.
    Fault(Dist),
    /// A periodic timer: each period releases a job that executes `body`;
    /// the job's deadline is `release + deadline`. Releases stay on the
    /// nominal grid `offset + k*period` (absolute, as rt-app's timer): a job
    /// that overruns makes the next start late, never shifts the grid.
    /// `jobs`: how many (`None`: until the horizon).
    Periodic {
        period: Duration,
        deadline: Duration,
        offset: Duration,
        jobs: Option<u64>,
        body: Vec<Op>,
    },
    /// Take a mutex by name (blocks while another thread holds it; FIFO hand-off).
    Lock(String),
    Unlock(String),
    /// Signal a binary semaphore by name: wake the thread that has waited
    /// on it longest, or with none waiting, set it (a signal to a set
    /// semaphore is lost: signals do not count up).
    Signal(String),
    /// Wait on a binary semaphore: take it if set (clearing it), else block
    /// until a signal.
    Wait(String),
    /// Wait at a barrier by name until every thread whose program uses it
    /// has arrived; the last to arrive lets them all through (in arrival
    /// order) and the barrier starts its next round. Its parties are the
    /// scenario's threads whose programs name it (rt-app's `barrier`).
    Barrier(String),
    /// Sporadic jobs released by a semaphore (Yau Fig. 11's worker): wait
    /// on `on`, then run `body` as a job released at the time of the signal
    /// that let it through, due `deadline` later; again for ever or `jobs`
    /// times.
    Sporadic {
        on: String,
        deadline: Duration,
        jobs: Option<u64>,
        body: Vec<Op>,
    },
    /// Send a message to a scheduler, answered at once; the reply is logged.
    Msg {
        to: Target,
        msg: Msg,
    },
    /// Repeat `body` (`None`: forever).
    Loop {
        count: Option<u64>,
        body: Vec<Op>,
    },
    /// Give up the CPU but stay runnable (release then request at once).
    Yield,
    /// The BVT paper's real-time test program: a sequence of deadlines, each
    /// a job (see [`Randres`]).
    Randres(Randres),
    /// The Rialto paper's constraint stress test program: a sequence of
    /// time constraints asked of the thread's scheduler, each a job (see
    /// [`ConstraintLoad`]).
    Constraints(ConstraintLoad),
    /// A free-running job loop (the HLS paper's §7.2 test application, a
    /// frame loop that renders as fast as it can): `body` runs back to
    /// back, each completion a frame. The thread wants a frame at most
    /// `max_gap` after the previous one (or after the loop starts); every
    /// `max_gap` that passes without one is a missed deadline. Each such
    /// deadline is a job: released at the last frame (or the last missed
    /// deadline), due `max_gap` later, finished by the first frame in
    /// time, else missed; so a gap `g` between frames misses
    /// `ceil(g / max_gap) - 1` deadlines. `count`: how many frames
    /// (`None`: until the horizon).
    Frames {
        max_gap: Duration,
        count: Option<u64>,
        body: Vec<Op>,
    },
    /// Call stop `stop` exported by protection domain `domain` (Yau et
    /// al. §6), by a train (the thread itself enters the domain, keeping
    /// its scheduler and parameters, no rescheduling point) or by RPC (a
    /// server thread of the domain serves it while the caller blocks).
    /// A call into a dead domain returns at once with a `server exit` error.
    Call {
        domain: String,
        stop: String,
        via: Via,
    },
    /// Serve RPC requests to this domain forever (an RPC server thread's
    /// loop): block while there is none, run the stop's body, reply.
    Serve(String),
    /// Kill a protection domain (the process dies): see [`DomainSpec`].
    Kill(String),
    /// Start a declared protection domain that is not alive: one declared
    /// with `start = false`, or a new incarnation of one that was killed
    /// (the old one's leg status stays invalid). See [`DomainSpec`].
    Create(String),
    /// The thread ends here, wherever it is (its invocation records are
    /// dropped).
    Exit,
}

/// How an [`Op::Call`] reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    Train,
    Rpc,
}

/// A protection domain (a process, Yau et al. §6): the stops it exports
/// and the threads whose home it is. A thread in no declared domain is
/// the only member of a private one named after it. A domain is declared
/// by an [`Action::Domain`], alive from then on if `start`; it is started
/// (again) by an [`Op::Create`] or [`Action::Create`], and dies by an
/// [`Op::Kill`] or [`Action::Kill`]: the threads in it at that moment
/// return to their first valid caller with a `server exit` error, or end;
/// a call whose caller domain died returns with `broken pipe` to the next
/// valid caller. A thread whose home domain is not alive when it arrives
/// ends at once.
#[derive(Clone, Debug, Serialize)]
pub struct DomainSpec {
    pub name: String,
    pub stops: Vec<StopSpec>,
    /// Threads whose home domain this is.
    pub members: Vec<String>,
    /// Whether it is alive as soon as it is declared (else it waits for a
    /// `create`).
    pub start: bool,
}

/// A declared mutex: how it lends scheduling state to its holder.
#[derive(Clone, Debug, Serialize)]
pub struct MutexSpec {
    pub name: String,
    pub protocol: hsched_core::MutexProtocol,
}

/// An interrupt source (a `[[interrupt]]` table): unscheduled work that
/// preempts whatever runs on a CPU, as interrupt handlers and Windows NT's
/// DPCs do (Vassal §2: "time spent in interrupt handling is unscheduled";
/// §6 blames them for Table 2's late tail).
///
/// On each of its CPUs it fires at `offset + e1`, `offset + e1 + e2`, ...,
/// each `e` a draw of `every` from that CPU's own random stream (seeded
/// from the run's seed): a fixed `every` is a periodic source, an
/// exponential one a Poisson source. Each handler holds the CPU for a
/// draw of `duration`: the thread on it makes no progress meanwhile (its
/// `cpu_time` and its work do not count the handler), a dispatch to the
/// CPU waits for the handler to return (the dispatch interrupt is below
/// device interrupts), and handlers on one CPU do not nest: one that
/// arrives during another runs after it. The schedulers are not told:
/// they see wall time, as NT's quantum accounting did, so a thread's
/// scheduler charges it for the handlers that preempted it.
///
/// Deferred work as a thread (BVT §2.3: an interrupt routine handled by
/// a thread, "accounted for as cycles used by this thread"): with
/// `signal`, the handler's return signals that semaphore, so a thread
/// waiting on it becomes runnable and is scheduled by the hierarchy like
/// any other, and charged for the work it does.
#[derive(Clone, Debug, Serialize)]
pub struct InterruptSpec {
    pub name: String,
    /// The CPUs it fires on, each with its own arrivals.
    pub cpus: Vec<u32>,
    /// Time from one arrival to the next on a CPU.
    pub every: Dist,
    /// Added before the first arrival.
    pub offset: Duration,
    /// How long each handler holds the CPU.
    pub duration: Dist,
    /// The semaphore its handler signals on returning (deferred work).
    pub signal: Option<String>,
}

/// An exported entry point of a domain: the code a call runs there.
#[derive(Clone, Debug, Serialize)]
pub struct StopSpec {
    pub name: String,
    pub body: Vec<Op>,
}

/// The `randres` test program of the BVT paper (Duda & Cheriton, SOSP '99,
/// §5.1): a real-time task that meets a sequence of deadlines
/// `d_1, d_2, ...`, each with an actual CPU need `a_i` to be received in
/// `[s_i, d_i]`, optionally reserving `t_i = a_i + e_i` (a prediction with
/// error `e_i`) from its scheduler first.
///
/// Iteration `i` (from 1; `d_0` is when the operation starts):
/// - `d_i = d_{i-1} + max(spacing draw, 1ns)`;
/// - `a_i` = a `need` draw;
/// - `e_i`: magnitude `m` uniform on the integer nanoseconds `[0, 2*error]`
///   (mean `error`), sign by `mode`; `t_i = max(a_i + e_i, 0)`;
/// - `s_i = d_{i-1} + (d_i - d_{i-1}) * fussiness / 1000` (rounded down):
///   the paper's `(1-f) d_{i-1} + f d_i` with `f = fussiness / 1000`.
///
/// At `s_i` the job is released; with `reserve` the thread first sends
/// `reserve { start = s_i, amount = t_i, deadline = d_i }` to its
/// scheduler, and a refusal misses the deadline without running. The job
/// then runs `a_i`; at `d_i` an unfinished job is abandoned (missed).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Randres {
    /// Time between consecutive deadlines, `d_i - d_{i-1}` (paper: uniform
    /// on 26..34 mcu).
    pub spacing: Dist,
    /// Actual CPU need `a_i` of each deadline (paper: uniform on 6..12 mcu).
    pub need: Dist,
    /// Mean magnitude of the prediction error `e_i` (paper: 0..3 mcu).
    pub error: Duration,
    /// The sign of `e_i`.
    pub mode: ErrorMode,
    /// How fussy the thread is about when it runs: the paper's `f` in
    /// `[0, 1)`, in thousandths (`540` for 0.54), `0..=999`.
    pub fussiness: u32,
    /// Ask the scheduler for a reservation before each deadline (DBS);
    /// without, the thread just runs (BVT, FP, WRR).
    pub reserve: bool,
    /// How many deadlines (`None`: until the horizon).
    pub count: Option<u64>,
}

impl Randres {
    /// `fussiness` is in thousandths.
    pub const FUSSINESS_SCALE: u32 = 1000;

    /// `s_i` from `d_{i-1}` and `d_i`: `prev + (deadline - prev) * f / 1000`,
    /// rounded down (integer arithmetic, no overflow).
    pub fn start_between(&self, prev: Instant, deadline: Instant) -> Instant {
        let gap = deadline.saturating_since(prev).as_nanos() as u128;
        let f = u128::from(self.fussiness.min(Self::FUSSINESS_SCALE - 1));
        let offset = gap * f / u128::from(Self::FUSSINESS_SCALE);
        prev.saturating_add(Duration(offset as u64))
    }

    /// `t_i = max(a_i + e_i, 0)` for a need and an error magnitude.
    pub fn request(need: Duration, magnitude: Duration, positive: bool) -> Duration {
        if positive {
            need.saturating_add(magnitude)
        } else {
            need.saturating_sub(magnitude)
        }
    }
}

/// The `constraints` test program: the constraint stress test of the Rialto
/// paper (Jones, Roşu & Roşu, SOSP '97, §5.4), a thread that keeps issuing
/// time constraints (§2.4, `BeginConstraint` / `EndConstraint`) with random
/// parameters to its scheduler and doing the work each one covers.
///
/// Iteration `i` begins at the instant `issue` (the operation's start, then
/// the end of the previous iteration's gap). Drawn from the thread's stream,
/// in this order:
/// - a coin, an integer uniform on `0..1000`: the constraint is immediate
///   when it is below `immediate`;
/// - `s`: a `start` draw, replaced by 0 for an immediate constraint (drawn
///   either way, so that `immediate` does not shift the later draws);
/// - `w = max(window draw, 1ns)`: deadline minus start;
/// - `e`: the estimate, uniform on the integer nanoseconds `[0, w]`;
/// - `f`: uniform on the integers `[work[0], work[1]]`, thousandths; the
///   actual work is `a = e * f / 1000`, rounded down ([`Self::work_for`]).
///
/// At `issue` the thread sends `begin_constraint { start = s, estimate = e,
/// deadline = s + w, relative = true }` to its scheduler and its job is
/// released, with deadline `issue + s + w`. It sleeps until `issue + s`,
/// runs `a` of CPU time whether or not the constraint was granted (the
/// paper's program does its work either way), sends `end_constraint`, and
/// the job is finished. A `gap` draw later the next iteration begins.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConstraintLoad {
    /// Probability that a constraint starts at once, in thousandths,
    /// `0..=1000` (paper: half are immediate, 500).
    pub immediate: u32,
    /// The start `s`, from when the constraint is issued, of one that is not
    /// immediate (paper: uniform on 0..1s).
    pub start: Dist,
    /// The window `w`, deadline minus start (paper: uniform on 1ms..1s).
    pub window: Dist,
    /// `[lo, hi]`: the actual work as a fraction of the estimate, in
    /// thousandths, `lo <= hi <= WORK_MAX` (paper: 50% to 100%, `[500,
    /// 1000]`). Above 1000 a constraint overruns its estimate.
    pub work: [u32; 2],
    /// Time between the end of one constraint and the issue of the next.
    pub gap: Dist,
    /// How many constraints (`None`: until the horizon).
    pub count: Option<u64>,
}

impl ConstraintLoad {
    /// `immediate` and `work` are in thousandths.
    pub const SCALE: u32 = 1000;
    /// The largest `work` fraction: 100 times the estimate.
    pub const WORK_MAX: u32 = 100 * Self::SCALE;

    /// `a = e * f / 1000`, rounded down, for an estimate and a fraction in
    /// thousandths (integer arithmetic, saturating).
    pub fn work_for(estimate: Duration, permille: u32) -> Duration {
        let a = u128::from(estimate.as_nanos()) * u128::from(permille) / u128::from(Self::SCALE);
        Duration(u64::try_from(a).unwrap_or(u64::MAX))
    }
}

impl Default for ConstraintLoad {
    /// The paper's test: half immediate, the others starting uniformly in
    /// 0..1s; windows of 1ms..1s; work of 50% to 100% of the estimate; no
    /// gap; until the horizon.
    fn default() -> Self {
        ConstraintLoad {
            immediate: 500,
            start: Dist::Uniform {
                min: Duration::ZERO,
                max: Duration::from_secs(1),
            },
            window: Dist::Uniform {
                min: Duration::from_millis(1),
                max: Duration::from_secs(1),
            },
            work: [500, 1000],
            gap: Dist::Fixed(Duration::ZERO),
            count: None,
        }
    }
}

/// The sign of `randres`'s prediction errors (the paper's three modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorMode {
    /// Overpredict: `e_i >= 0`.
    Over,
    /// Underpredict: `e_i <= 0`.
    Under,
    /// Best guess: each `e_i`'s sign is a fair coin.
    Mixed,
}

/// Which scheduler a message goes to.
#[derive(Clone, Debug, Serialize)]
pub enum Target {
    /// The thread's current parent scheduler.
    Parent,
    /// A scheduler instance by name.
    Named(String),
}

/// A duration, fixed or drawn from a seeded distribution. Draws are integer
/// nanoseconds; the truncated ones are clamped to `[min, max]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Dist {
    Fixed(Duration),
    Uniform {
        min: Duration,
        max: Duration,
    },
    Exponential {
        mean: Duration,
        max: Duration,
    },
    Normal {
        mean: Duration,
        sd: Duration,
        min: Duration,
        max: Duration,
    },
}

/// A scripted hierarchy change.
#[derive(Clone, Debug, Serialize)]
pub struct ScriptEvent {
    pub at: Instant,
    pub action: Action,
}

#[derive(Clone, Debug, Serialize)]
pub enum Action {
    /// Create a scheduler instance and attach it to its parents (load).
    Load(SchedulerSpec),
    /// Remove an instance; its threads return to the default scheduler (unload).
    Unload(String),
    /// Detach an instance from its parents (it keeps its children, gets no CPU).
    Detach(String),
    /// Attach a detached instance under parents.
    Attach {
        scheduler: String,
        parents: Vec<ParentLink>,
    },
    /// Move a thread to another scheduler (refused admission keeps it where it is).
    Move {
        thread: String,
        to: String,
        params: Params,
    },
    /// An operator message to a scheduler.
    Msg { to: String, msg: Msg },
    /// Create a protection domain (the file's `[[domain]]` tables are
    /// these, at time zero).
    Domain(DomainSpec),
    /// Declare a mutex with its protocol (the file's `[[mutex]]` tables are
    /// these, at time zero). A mutex a program names without one is
    /// declared with the default protocol.
    Mutex(MutexSpec),
    /// Kill a protection domain.
    Kill(String),
    /// Start a declared domain that is not alive (see [`Op::Create`]).
    Create(String),
    /// An interrupt source (the file's `[[interrupt]]` tables are these,
    /// at time zero: part of the machine, declared before anything runs).
    Interrupt(InterruptSpec),
}
