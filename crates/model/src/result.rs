//! What a run produces, whichever platform ran it. Reports (JSON, CSV,
//! Perfetto, plots) are computed from this.

use crate::Sketch;
use hsched_core::{CpuId, Duration, Instant, Share, ThreadId};
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct RunResult {
    pub scenario: String,
    pub platform: String,
    pub seed: u64,
    pub cpus: u32,
    /// The simulated (or real) span covered.
    pub horizon: Duration,
    pub threads: Vec<ThreadResult>,
    pub nodes: Vec<NodeResult>,
    pub cpu_stats: Vec<CpuStats>,
    /// Scheduling decisions made (root-to-leaf descents).
    pub decisions: u64,
    /// Events processed (platform events: wakeups, completions, timers, ...).
    pub events: u64,
    /// Wall-clock time the run took, in nanoseconds (not deterministic; kept
    /// out of traces).
    pub wall_ns: u64,
    /// One row per job: of periodic timers, `randres` deadlines and
    /// `constraints` time constraints. All of them, unless the run kept
    /// more than its bound on job records in memory: then the ones still
    /// held at the end, the others counted in `retired_jobs`.
    pub jobs: Vec<JobRecord>,
    /// The jobs the run no longer holds (see `jobs`), counted per thread
    /// (index: thread id); empty when every job is in `jobs`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retired_jobs: Vec<JobTally>,
    /// The bounds on what a run holds in memory that this run reached,
    /// each said for a person: the bound, its value, what was kept and
    /// where the rest went. Empty for a run that fits.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
    /// Notable things that happened: ejections, watchdog, refusals, script steps, replies.
    pub log: Vec<LogEntry>,
    /// The full timeline, when asked for.
    pub trace: Option<Trace>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ThreadResult {
    pub id: ThreadId,
    pub name: String,
    /// Scheduler it ended under (name): at the horizon, or when it exited.
    pub scheduler: String,
    /// Every scheduler it was attached to, from when, in order: its first
    /// at its arrival, then one per move (script, `join`/`leave`, its
    /// scheduler going away). Empty where the platform does not know.
    pub homes: Vec<Home>,
    /// CPU time used by the thread (context-switch overhead excluded).
    pub cpu_time: Duration,
    /// Wakeup-to-dispatch latencies, one per wakeup, in order: all of
    /// them, or the first ones when there were more than the run keeps
    /// one by one (then `wakeup_sketch` counts them all).
    pub wakeup_latencies: Vec<Duration>,
    /// Every wakeup latency, in a bounded histogram, when there were more
    /// than `wakeup_latencies` keeps; `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wakeup_sketch: Option<Sketch>,
    /// Longest span the thread was runnable without running.
    pub max_runnable_gap: Duration,
    /// Times it was put on a CPU after someone else (or nothing) ran there.
    pub context_switches: u64,
    /// Times it was put on a different CPU than the one it last ran on.
    pub migrations: u64,
    pub arrival: Instant,
    pub exit: Option<Instant>,
    /// The guarantee the HLS analysis labelled its edge with, as the paper
    /// writes it (`RESBH 5, 33`); `None` when no analysis ran (the library
    /// API, repro) or the analysis did not cover it (it ended under another
    /// scheduler than the one it started under).
    pub guarantee: Option<String>,
    /// The long-run fraction of one CPU that guarantee promises, exact;
    /// `None` without a guarantee or when it promises none (NULL).
    pub guaranteed_share: Option<Share>,
    /// From when that guarantee holds, when not from the start: the thread
    /// moved, or a change of the hierarchy re-labelled it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guaranteed_from: Option<Instant>,
    /// The cross-domain calls it made (Yau et al. §6), by how they ended.
    pub calls: CallCounts,
}

/// One stay of a thread under a scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Home {
    pub since: Instant,
    pub scheduler: String,
}

/// A thread's cross-domain calls (train or RPC) by outcome. `made` counts
/// every call; the others the calls that have ended, so `made` minus their
/// sum is how many were still open at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CallCounts {
    pub made: u64,
    /// Returned with results.
    pub ok: u64,
    /// Returned with an error: a caller between it and the server died.
    pub broken_pipe: u64,
    /// Returned with an error: the server domain died or was not alive.
    pub server_exit: u64,
    /// The caller's own domain died: nobody to return to.
    pub caller_gone: u64,
    /// The thread exited with the call open.
    pub abandoned: u64,
    /// Refused: too many calls open on the thread.
    pub too_deep: u64,
}

impl CallCounts {
    /// Calls that ended with an error of any kind.
    pub fn errors(&self) -> u64 {
        self.broken_pipe + self.server_exit + self.caller_gone + self.abandoned + self.too_deep
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct NodeResult {
    pub name: String,
    pub policy: String,
    /// CPU time charged through this node (what it received from its parents).
    pub received: Duration,
    /// Whether it was still in the hierarchy at the end.
    pub alive: bool,
    /// What the HLS analysis says it receives, as the paper writes it
    /// (`RESBS 40, 80`; `ALL ×2` for two VPs each given ALL); `None` when no
    /// analysis ran.
    pub guarantee: Option<String>,
    /// The long-run fraction of one CPU that promises (over all its VPs, so
    /// `ALL ×2` is 2), exact; `None` without a guarantee or for NULL.
    pub guaranteed_share: Option<Share>,
    /// From when that guarantee holds, when not from the start: the script
    /// or an operator loaded it, or a change re-labelled it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guaranteed_from: Option<Instant>,
}

/// One CPU's time over a run. Live (`hsched live`), busy is the managed
/// threads' time on the CPU (from the kernel's switch events) and idle the
/// kernel's idle time (`/proc/stat`, to a clock tick); overhead and
/// interrupt are not measured (0), and what the agent, other processes
/// and interrupts took is in neither: busy + idle is at most the length.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CpuStats {
    pub cpu: CpuId,
    /// Time a thread made progress on this CPU.
    pub busy: Duration,
    /// Time spent switching between threads.
    pub overhead: Duration,
    pub idle: Duration,
    /// Time spent in interrupt handlers (`[[interrupt]]`): unscheduled,
    /// no thread's progress. busy + overhead + interrupt + idle is the
    /// run's length. Left out of the JSON when zero.
    #[serde(skip_serializing_if = "is_zero")]
    pub interrupt: Duration,
    /// Interrupts that arrived on this CPU.
    #[serde(skip_serializing_if = "is_zero_count")]
    pub interrupts: u64,
}

fn is_zero(d: &Duration) -> bool {
    d.is_zero()
}

fn is_zero_count(n: &u64) -> bool {
    *n == 0
}

/// A thread's jobs that a run no longer holds one by one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JobTally {
    /// Jobs counted.
    pub count: u64,
    /// Of those, jobs that missed their deadline ([`JobRecord::missed`]
    /// at the horizon).
    pub missed: u64,
    /// Response times of those that finished.
    pub response: Sketch,
}

impl JobTally {
    /// Counts `job`, judged at the end of the run `end`.
    pub fn add(&mut self, job: &JobRecord, end: Instant) {
        self.count += 1;
        self.missed += u64::from(job.missed(end));
        if let Some(r) = job.response() {
            self.response.add(r.as_nanos());
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct JobRecord {
    pub thread: ThreadId,
    /// 0-based job number within the thread.
    pub job: u64,
    pub release: Instant,
    /// First time the thread ran after the release (None: never).
    pub start: Option<Instant>,
    /// Completion (None: unfinished at the horizon).
    pub finish: Option<Instant>,
    pub deadline: Instant,
    /// What the job's scheduler answered when the job asked it for time
    /// (a `randres` reservation, a `constraints` time constraint): `true`
    /// accepted, `false` refused; `None` for a job that asked nothing.
    pub admitted: Option<bool>,
}

impl JobRecord {
    pub fn response(&self) -> Option<Duration> {
        self.finish.map(|f| f.saturating_since(self.release))
    }
    /// Finished after its deadline, or unfinished with the deadline passed by `end`.
    pub fn missed(&self, end: Instant) -> bool {
        match self.finish {
            Some(f) => f > self.deadline,
            None => self.deadline < end,
        }
    }
    /// finish - deadline (negative: early). None if unfinished.
    pub fn lateness_ns(&self) -> Option<i128> {
        self.finish
            .map(|f| f.as_nanos() as i128 - self.deadline.as_nanos() as i128)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LogEntry {
    pub at: Instant,
    pub kind: LogKind,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogKind {
    /// A scheduler was ejected for breaking the protocol.
    Eject,
    /// The starvation watchdog fired.
    Watchdog,
    /// An admission or message was refused.
    Refused,
    /// A scripted hierarchy change happened.
    Script,
    /// A thread moved to another scheduler.
    Moved,
    /// A message was answered.
    Reply,
    /// What a platform did beside the hierarchy's decisions (live: its
    /// speculative wakeups).
    Platform,
    /// A change that breaks a guarantee already promised, carried out
    /// anyway (`--allow-uncomposed`): what it breaks.
    Uncomposed,
}

/// The timeline of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Trace {
    /// What each CPU did, in time order per CPU, covering `[0, horizon)` exactly.
    pub segments: Vec<Segment>,
    /// Point events (wakeups, deadline misses, ejections).
    pub marks: Vec<Mark>,
    /// Thread names by id, scheduler names, for labels.
    pub thread_names: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub cpu: CpuId,
    pub start: Instant,
    pub end: Instant,
    pub what: SegmentKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    Idle,
    /// Context-switch overhead before `thread` runs.
    Switch(ThreadId),
    Run(ThreadId),
    /// Interrupt handlers (`[[interrupt]]`): the CPU is taken from
    /// whatever was on it.
    Interrupt,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mark {
    pub at: Instant,
    pub thread: Option<ThreadId>,
    pub kind: MarkKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkKind {
    Wakeup,
    Release { job: u64 },
    DeadlineMiss { job: u64 },
    Eject { scheduler: String },
}
