//! What an rt-app file says, read and checked: its tasks, their phases and
//! events, and the scheduling class each one runs in.

use super::event::Event;
use super::json_like::Pos;
use crate::import::toml_duration;

/// The longest rt-app duration (microseconds) whose nanoseconds fit the
/// 64-bit time hsched counts in (about 584 years): a longer one is refused
/// at import rather than written as a TOML value the scenario parser
/// would refuse.
pub const MAX_DURATION_US: u64 = u64::MAX / 1000;

/// rt-app's scheduling classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    Deadline,
}

impl Policy {
    pub(super) fn parse(s: &str) -> Option<Policy> {
        Some(match s {
            "SCHED_OTHER" => Policy::Other,
            "SCHED_BATCH" => Policy::Batch,
            "SCHED_IDLE" => Policy::Idle,
            "SCHED_FIFO" => Policy::Fifo,
            "SCHED_RR" => Policy::Rr,
            "SCHED_DEADLINE" => Policy::Deadline,
            _ => return None,
        })
    }
}

pub(super) const POLICIES: &str =
    "SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR or SCHED_DEADLINE";

/// What the file says, read and checked.
pub(super) struct File {
    pub duration_s: Option<(i64, Pos)>,
    pub tasks: Vec<Task>,
}

pub(super) struct Task {
    pub name: String,
    pub path: String,
    pub pos: Pos,
    pub instances: u64,
    pub delay_us: u64,
    /// `None`: for ever.
    pub loops: Option<u64>,
    pub class: Class,
    /// Highest CPU its affinity names.
    pub max_cpu: Option<u32>,
    pub cpus: Option<(Vec<u32>, Pos, String)>,
    pub phases: Vec<Phase>,
}

pub(super) struct Phase {
    pub path: String,
    /// The class its scheduling keys switch the thread to, if it has any.
    pub class: Option<(Class, Pos)>,
    /// `None`: for ever.
    pub loops: Option<u64>,
    pub events: Vec<Event>,
}

/// The scheduling class a task gets, from its keys.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Class {
    /// SCHED_OTHER / BATCH / IDLE: the `sfq` weight.
    Fair(u32),
    /// SCHED_FIFO at a real-time priority.
    Fifo(i64),
    /// SCHED_RR at a real-time priority.
    Rr(i64),
    /// SCHED_DEADLINE: runtime and period, in µs.
    Deadline(u64, u64),
}

impl Class {
    /// The scheduler a thread of this class attaches to, and its
    /// attachment parameters as an inline table (empty: none).
    pub(super) fn placement(&self) -> (String, String) {
        match self {
            Class::Fair(w) => ("other".into(), format!("{{ weight = {w} }}")),
            Class::Fifo(p) => ("root".into(), format!("{{ prio = {p} }}")),
            Class::Rr(p) => (format!("rr_{p}"), String::new()),
            Class::Deadline(r, p) => (
                "deadline".into(),
                format!(
                    "{{ amount = {}, period = {} }}",
                    toml_duration(r * 1000),
                    toml_duration(p * 1000)
                ),
            ),
        }
    }

    /// The policy a phase that names only a priority keeps.
    pub(super) fn policy(&self) -> Policy {
        match self {
            Class::Fair(_) => Policy::Other,
            Class::Fifo(_) => Policy::Fifo,
            Class::Rr(_) => Policy::Rr,
            Class::Deadline(..) => Policy::Deadline,
        }
    }
}
