//! The scenario model: the machine, the hierarchy, threads, programs, script.

use hsched_core::{Duration, Instant, Msg, Params};
use serde::Serialize;

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
#[derive(Clone, Debug, Serialize)]
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
#[derive(Clone, Debug, Serialize)]
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
}

/// A workload program: operations executed in order; the thread exits at
/// the end.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Program {
    pub ops: Vec<Op>,
}

/// One operation of a workload program (close to rt-app's events).
#[derive(Clone, Debug, Serialize)]
pub enum Op {
    /// Use the CPU for this long (CPU time, not wall time).
    Run(Dist),
    /// Block for this long.
    Sleep(Dist),
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
#[derive(Clone, Debug, PartialEq, Serialize)]
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
}
