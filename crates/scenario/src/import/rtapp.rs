//! rt-app workload files (scheduler-tools/rt-app, `doc/tutorial.txt`)
//! imported as hsched scenarios.
//!
//! The whole rt-app grammar is read: `global`, `tasks` with `instance`,
//! `delay`, `loop`, `phases`, the scheduling keys (`policy`, `priority`,
//! `dl-runtime`, `dl-period`, `dl-deadline`) and the events, matched by
//! prefix as rt-app does (`run0`, `timer1`, `runtime2`). What hsched can
//! express is mapped (docs/guide.md, "Importing rt-app workloads", has the
//! table); everything else is a [`Warning`] naming its key path and what
//! was done instead. A file rt-app itself would refuse (an event with a
//! value of the wrong type, an unknown policy, a phase without events) is an
//! [`ImportError`].
//!
//! The hierarchy mirrors Linux's classes: an `fp` root; SCHED_DEADLINE
//! threads under a `res` (EDF hard reservations) at the top; SCHED_FIFO
//! threads on the root at their real-time priority, SCHED_RR ones in an
//! `rr` per priority; SCHED_OTHER, SCHED_BATCH and SCHED_IDLE under an
//! `sfq` (weighted fair queuing, CFS's nice weights) at the bottom.

mod json_like;
mod program;

pub use json_like::{parse as parse_json_like, Kind, Member, Pos, SyntaxError, Value};

use super::{toml_comment, toml_duration, toml_string, ImportError, Imported, Warning};
use program::{Event, Op};
use std::collections::BTreeSet;

/// The horizon when rt-app's `duration` is absent or -1 (run until every
/// thread ends or rt-app is stopped): hsched needs one.
pub const DEFAULT_HORIZON_S: u64 = 10;

/// The longest rt-app duration (microseconds) whose nanoseconds fit the
/// 64-bit time hsched counts in (about 584 years): a longer one is refused
/// at import rather than written as a TOML value the scenario parser
/// would refuse.
pub const MAX_DURATION_US: u64 = u64::MAX / 1000;

/// The `sfq` quantum standing in for CFS's slice (the kernel's default base
/// slice on a small machine is of this order).
const OTHER_QUANTUM: &str = "\"3ms\"";
/// Linux's SCHED_RR time slice (`sched_rr_timeslice_ms`).
const RR_QUANTUM: &str = "\"100ms\"";
/// Where SCHED_DEADLINE's `res` attaches under the root: above every
/// real-time priority (1..99), as the deadline class is above the RT class.
const DEADLINE_PRIO: i64 = 100;
/// Where the time-sharing class attaches: below every real-time priority.
const OTHER_PRIO: i64 = 0;

/// CFS's weight of each nice level, -20..=19 (the kernel's
/// `sched_prio_to_weight`): the `sfq` weight of a SCHED_OTHER thread.
const NICE_WEIGHTS: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];
/// CFS's weight of a SCHED_IDLE thread.
const IDLE_WEIGHT: u32 = 3;

/// Import options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// CPUs of the machine; by default one more than the highest CPU a
    /// task's `cpus` names, or 1.
    pub cpus: Option<u32>,
}

/// Imports rt-app text; `file_name` is used in errors and as the
/// scenario's name (its stem).
pub fn import(text: &str, file_name: &str, opts: &Options) -> Result<Imported, ImportError> {
    let root = json_like::parse(text).map_err(|e| ImportError {
        file: file_name.to_string(),
        line: e.pos.line,
        column: e.pos.column,
        path: String::new(),
        message: e.message,
    })?;
    let mut cx = Cx {
        warnings: Vec::new(),
        out_of_range: None,
    };
    let file = read_file(&root, &mut cx).map_err(|f| f.into_error(file_name))?;
    let toml = emit(&file, file_name, opts, &mut cx).map_err(|f| f.into_error(file_name))?;
    if let Some(fail) = cx.out_of_range {
        return Err(fail.into_error(file_name));
    }
    // In file order (those about no place first), whatever pass found them.
    cx.warnings.sort_by_key(|w| (w.line, w.column));
    let mut header = format!(
        "# Imported from {} by `hsched import rt-app` (rt-app's durations are microseconds).\n",
        toml_string(
            std::path::Path::new(file_name)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
                .as_str()
        )
    );
    if cx.warnings.is_empty() {
        header.push_str("# Everything in it is expressed exactly.\n");
    } else {
        header.push_str(&format!(
            "# {} thing(s) hsched cannot express exactly:\n",
            cx.warnings.len()
        ));
        for w in &cx.warnings {
            header.push_str(&toml_comment(&format!("  {w}")));
        }
    }
    header.push('\n');
    Ok(Imported {
        toml: header + &toml,
        warnings: cx.warnings,
    })
}

/// An error before it knows the file name.
struct Fail {
    pos: Option<Pos>,
    path: String,
    message: String,
}

impl Fail {
    fn at(pos: Pos, path: &str, message: impl Into<String>) -> Fail {
        Fail {
            pos: Some(pos),
            path: path.to_string(),
            message: message.into(),
        }
    }

    fn into_error(self, file: &str) -> ImportError {
        let (line, column) = self.pos.map(|p| (p.line, p.column)).unwrap_or((0, 0));
        ImportError {
            file: file.to_string(),
            line,
            column,
            path: self.path,
            message: self.message,
        }
    }
}

/// Collects the warnings.
struct Cx {
    warnings: Vec<Warning>,
    out_of_range: Option<Fail>,
}

impl Cx {
    /// Refuses the file (after the pass that found it) for a value hsched
    /// cannot represent; the first one found is reported.
    fn out_of_range(&mut self, pos: Pos, path: &str, message: impl Into<String>) {
        self.out_of_range
            .get_or_insert_with(|| Fail::at(pos, path, message));
    }

    fn warn(&mut self, pos: Pos, path: &str, message: impl Into<String>) {
        self.warnings.push(Warning {
            path: path.to_string(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
        });
    }
}

/// rt-app's scheduling classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    Deadline,
}

impl Policy {
    fn parse(s: &str) -> Option<Policy> {
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

const POLICIES: &str =
    "SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR or SCHED_DEADLINE";

/// What the file says, read and checked.
struct File {
    duration_s: Option<(i64, Pos)>,
    tasks: Vec<Task>,
}

struct Task {
    name: String,
    path: String,
    pos: Pos,
    instances: u64,
    delay_us: u64,
    /// `None`: for ever.
    loops: Option<u64>,
    class: Class,
    /// Highest CPU its affinity names.
    max_cpu: Option<u32>,
    cpus: Option<(Vec<u32>, Pos, String)>,
    phases: Vec<Phase>,
}

struct Phase {
    path: String,
    /// The class its scheduling keys switch the thread to, if it has any.
    class: Option<(Class, Pos)>,
    /// `None`: for ever.
    loops: Option<u64>,
    events: Vec<Event>,
}

/// The scheduling class a task gets, from its keys.
#[derive(Clone, Debug, PartialEq)]
enum Class {
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
    fn placement(&self) -> (String, String) {
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
    fn policy(&self) -> Policy {
        match self {
            Class::Fair(_) => Policy::Other,
            Class::Fifo(_) => Policy::Fifo,
            Class::Rr(_) => Policy::Rr,
            Class::Deadline(..) => Policy::Deadline,
        }
    }
}

fn get<'a>(members: &'a [Member], key: &str) -> Option<&'a Member> {
    members.iter().rev().find(|m| m.key == key)
}

fn object<'a>(v: &'a Value, path: &str, what: &str) -> Result<&'a [Member], Fail> {
    match &v.kind {
        Kind::Object(m) => Ok(m),
        k => Err(Fail::at(
            v.pos,
            path,
            format!("expected {what} (an object), found {}", k.describe()),
        )),
    }
}

fn value<'a>(m: &'a Member, path: &str, what: &str) -> Result<&'a Value, Fail> {
    m.value
        .as_ref()
        .ok_or_else(|| Fail::at(m.key_pos, path, format!("expected `:` and {what}")))
}

fn int(m: &Member, path: &str, what: &str) -> Result<(i64, Pos), Fail> {
    let v = value(m, path, what)?;
    match &v.kind {
        Kind::Int(i) => Ok((*i, v.pos)),
        k => Err(Fail::at(
            v.pos,
            path,
            format!("expected {what}, found {}", k.describe()),
        )),
    }
}

fn string(m: &Member, path: &str, what: &str) -> Result<(String, Pos), Fail> {
    let v = value(m, path, what)?;
    match &v.kind {
        Kind::Str(s) => Ok((s.clone(), v.pos)),
        k => Err(Fail::at(
            v.pos,
            path,
            format!("expected {what}, found {}", k.describe()),
        )),
    }
}

/// Warns about a key given more than once where only the last counts.
fn warn_duplicates(members: &[Member], path: &str, keys: &[&str], cx: &mut Cx) {
    for key in keys {
        let all: Vec<&Member> = members.iter().filter(|m| m.key == *key).collect();
        if all.len() > 1 {
            let first = all[0];
            cx.warn(
                first.key_pos,
                &format!("{path}.{key}"),
                format!(
                    "given {} times: the last one counts (as in rt-app)",
                    all.len()
                ),
            );
        }
    }
}

fn read_file(root: &Value, cx: &mut Cx) -> Result<File, Fail> {
    let top = object(root, "", "the rt-app document")?;
    let mut duration_s = None;
    let mut default_policy = Policy::Other;
    warn_duplicates(top, "", &["tasks", "global"], cx);
    if let Some(g) = get(top, "global") {
        let members = object(value(g, "global", "an object")?, "global", "`global`")?;
        warn_duplicates(
            members,
            "global",
            &["duration", "default_policy", "pi_enabled"],
            cx,
        );
        for m in members {
            let path = format!("global.{}", m.key);
            match m.key.as_str() {
                "duration" => duration_s = Some(int(m, &path, "an integer (seconds)")?),
                "default_policy" => {
                    let (s, pos) = string(m, &path, "a policy name")?;
                    default_policy = Policy::parse(&s).ok_or_else(|| {
                        Fail::at(
                            pos,
                            &path,
                            format!("unknown policy `{s}`: expected {POLICIES}"),
                        )
                    })?;
                }
                "pi_enabled" => {
                    if m.value.as_ref().map(|v| &v.kind) == Some(&Kind::Bool(true)) {
                        cx.warn(m.key_pos, &path, "the imported mutexes are declared without priority inheritance: add [[mutex]] tables with protocol = \"inherit\" (fp and rm honour it)");
                    }
                }
                // How rt-app turns `run` durations into loops of work:
                // hsched runs them as that much CPU time. The others are
                // logging, tracing and host settings: nothing to simulate.
                "calibration" | "lock_pages" | "logdir" | "log_basename" | "log_size"
                | "ftrace" | "gnuplot" | "io_device" | "mem_buffer_size" | "cumulative_slack"
                | "frag" | "spacing" => {}
                other => cx.warn(
                    m.key_pos,
                    &path,
                    format!("unknown key `{other}` of `global`: ignored"),
                ),
            }
        }
    }
    let tasks_member = get(top, "tasks").ok_or_else(|| {
        Fail::at(
            root.pos,
            "tasks",
            "expected a `tasks` object (rt-app needs one), found none",
        )
    })?;
    for m in top {
        match m.key.as_str() {
            "tasks" | "global" => {}
            // Kept by rt-app for old files; resources are created as used.
            "resources" => {}
            other => cx.warn(
                m.key_pos,
                other,
                "unknown top-level key (expected `tasks`, `global` or `resources`): ignored",
            ),
        }
    }
    let tasks_obj = object(
        value(tasks_member, "tasks", "an object")?,
        "tasks",
        "`tasks`",
    )?;
    let mut tasks: Vec<Task> = Vec::new();
    for m in tasks_obj {
        let path = format!("tasks.{}", m.key);
        if let Some(prev) = tasks.iter().find(|t| t.name == m.key) {
            return Err(Fail::at(
                m.key_pos,
                &path,
                format!(
                    "task `{}` is defined twice (first at {}): task names must be unique",
                    m.key, prev.pos
                ),
            ));
        }
        let v = value(m, &path, "a task object")?;
        let task = read_task(&m.key, v, &path, default_policy, cx)?;
        tasks.push(task);
    }
    if tasks.is_empty() {
        return Err(Fail::at(
            tasks_member.key_pos,
            "tasks",
            "expected at least one task in `tasks`",
        ));
    }
    Ok(File { duration_s, tasks })
}

/// Keys of a task or phase that are not events.
const SCHED_KEYS: [&str; 8] = [
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "cpus",
    "util_min",
    "util_max",
];

fn read_task(
    name: &str,
    v: &Value,
    path: &str,
    default_policy: Policy,
    cx: &mut Cx,
) -> Result<Task, Fail> {
    let members = object(v, path, "a task")?;
    warn_duplicates(
        members,
        path,
        &[
            "instance",
            "delay",
            "loop",
            "phases",
            "policy",
            "priority",
            "dl-runtime",
            "dl-period",
            "dl-deadline",
            "cpus",
        ],
        cx,
    );
    let nonneg = |key: &str, default: u64, cx: &mut Cx| -> Result<u64, Fail> {
        match get(members, key) {
            None => Ok(default),
            Some(m) => {
                let p = format!("{path}.{key}");
                let (i, pos) = int(m, &p, "an integer")?;
                if i < 0 {
                    cx.warn(pos, &p, format!("{i} is negative: taken as 0"));
                }
                Ok(i.max(0) as u64)
            }
        }
    };
    let instances = nonneg("instance", 1, cx)?;
    let delay_us = nonneg("delay", 0, cx)?;
    let class = read_class(members, path, default_policy, cx)?;
    let cpus = read_cpus(members, path)?;
    let max_cpu = cpus.as_ref().and_then(|(c, _, _)| c.iter().max().copied());
    let phases_member = get(members, "phases");
    let (phases, loops, has_phases) = match phases_member {
        Some(pm) => {
            let ppath = format!("{path}.phases");
            let pobj = object(value(pm, &ppath, "an object")?, &ppath, "`phases`")?;
            let mut phases = Vec::new();
            let mut current = class.policy();
            for p in pobj {
                let phpath = format!("{ppath}.{}", p.key);
                let pv = value(p, &phpath, "a phase object")?;
                let pmembers = object(pv, &phpath, "a phase")?;
                let phase = read_phase(pmembers, &phpath, pv.pos, current, cx)?;
                if let Some((c, _)) = &phase.class {
                    current = c.policy();
                }
                phases.push(phase);
            }
            if phases.is_empty() {
                return Err(Fail::at(
                    pm.key_pos,
                    &ppath,
                    "expected at least one phase in `phases`",
                ));
            }
            for m in members {
                let key = m.key.as_str();
                if program::event_kind(key).is_some() {
                    cx.warn(
                        m.key_pos,
                        &format!("{path}.{key}"),
                        "an event beside `phases`: rt-app ignores it, and so does hsched",
                    );
                }
            }
            let loops = match get(members, "loop") {
                None => None,
                Some(m) => loop_count(m, &format!("{path}.loop"), cx)?,
            };
            (phases, loops, true)
        }
        None => {
            // The task is its own single phase: its `loop` is the phase's,
            // and the task then runs once; without `loop`, for ever.
            let phase = read_phase(members, path, v.pos, class.policy(), cx)?;
            let loops = if get(members, "loop").is_some() {
                Some(1)
            } else {
                None
            };
            (vec![phase], loops, false)
        }
    };
    for m in members {
        let key = m.key.as_str();
        let kpath = format!("{path}.{key}");
        match key {
            "instance" | "delay" | "loop" | "phases" => {}
            k if SCHED_KEYS.contains(&k) || program::event_kind(k).is_some() => {}
            // The legacy spellings of the deadline parameters.
            "period" | "deadline" => {}
            _ => {
                if !has_phases {
                    continue; // read_phase warned already
                }
                warn_other_key(m, &kpath, cx);
            }
        }
    }
    Ok(Task {
        name: name.to_string(),
        path: path.to_string(),
        pos: v.pos,
        instances,
        delay_us,
        loops,
        class,
        max_cpu,
        cpus,
        phases,
    })
}

fn warn_other_key(m: &Member, path: &str, cx: &mut Cx) {
    let msg = match m.key.as_str() {
        "taskgroup" => "cgroup task groups are not modelled: ignored (the thread is scheduled as if in the root group)".to_string(),
        "nodes_membind" | "membind_nodes" => "NUMA memory binding is not modelled: ignored".to_string(),
        "util_min" | "util_max" => "utilization clamping is not modelled: ignored".to_string(),
        "dl-reclaim" => "SCHED_DEADLINE bandwidth reclaiming is not modelled: `res` reservations are hard (a thread gets its dl-runtime per dl-period, never more)".to_string(),
        k => format!("unknown key `{k}`: ignored (it is not an rt-app event or property)"),
    };
    cx.warn(m.key_pos, path, msg);
}

/// A `loop` value: `None` for ever (rt-app loops for ever on -1, and on 0
/// or below, whose count it never reaches).
fn loop_count(m: &Member, path: &str, cx: &mut Cx) -> Result<Option<u64>, Fail> {
    let (i, pos) = int(m, path, "an integer (a count, or -1 for ever)")?;
    if i == -1 {
        Ok(None)
    } else if i <= 0 {
        cx.warn(
            pos,
            path,
            format!("loop {i}: rt-app never reaches this count and loops for ever; so does hsched"),
        );
        Ok(None)
    } else {
        Ok(Some(i as u64))
    }
}

fn read_cpus(members: &[Member], path: &str) -> Result<Option<(Vec<u32>, Pos, String)>, Fail> {
    let Some(m) = get(members, "cpus") else {
        return Ok(None);
    };
    let p = format!("{path}.cpus");
    let v = value(m, &p, "an array of CPU numbers")?;
    let Kind::Array(items) = &v.kind else {
        return Err(Fail::at(
            v.pos,
            &p,
            format!(
                "expected an array of CPU numbers, found {}",
                v.kind.describe()
            ),
        ));
    };
    let mut cpus = Vec::new();
    for it in items {
        match it.kind {
            Kind::Int(i) if (0..4096).contains(&i) => cpus.push(i as u32),
            ref k => {
                return Err(Fail::at(
                    it.pos,
                    &p,
                    format!("expected a CPU number in 0..4096, found {}", k.describe()),
                ))
            }
        }
    }
    Ok(Some((cpus, m.key_pos, p)))
}

/// The scheduling class of a task from its keys (task level: the default
/// policy applies; rt-app's defaults for the priority).
fn read_class(
    members: &[Member],
    path: &str,
    default_policy: Policy,
    cx: &mut Cx,
) -> Result<Class, Fail> {
    let policy = match get(members, "policy") {
        None => default_policy,
        Some(m) => {
            let p = format!("{path}.policy");
            let (s, pos) = string(m, &p, "a policy name")?;
            Policy::parse(&s).ok_or_else(|| {
                Fail::at(
                    pos,
                    &p,
                    format!("unknown policy `{s}`: expected {POLICIES}"),
                )
            })?
        }
    };
    let int_key = |key: &str| -> Result<Option<(i64, Pos)>, Fail> {
        get(members, key)
            .map(|m| int(m, &format!("{path}.{key}"), "an integer"))
            .transpose()
    };
    let priority = int_key("priority")?;
    let prio_path = format!("{path}.priority");
    let us = |key: &str, cx: &mut Cx| -> Result<Option<u64>, Fail> {
        Ok(match int_key(key)? {
            None => None,
            Some((i, pos)) => {
                if i < 0 {
                    cx.warn(
                        pos,
                        &format!("{path}.{key}"),
                        format!("{i} is negative: taken as 0"),
                    );
                }
                if i > 0 && i as u64 > MAX_DURATION_US {
                    return Err(Fail::at(
                        pos,
                        &format!("{path}.{key}"),
                        format!("{i}us is out of range: at most {MAX_DURATION_US}us (MAX_DURATION_US, 64-bit nanoseconds)"),
                    ));
                }
                Some(i.max(0) as u64)
            }
        })
    };
    Ok(match policy {
        Policy::Other | Policy::Batch => {
            let nice = priority.map(|(p, _)| p).unwrap_or(0);
            if let Some((p, pos)) = priority {
                if !(-20..=19).contains(&p) {
                    cx.warn(
                        pos,
                        &prio_path,
                        format!("nice {p} is outside -20..19: clamped"),
                    );
                }
            }
            if policy == Policy::Batch {
                cx.warn(
                    get(members, "policy").map(|m| m.key_pos).unwrap_or(Pos { line: 0, column: 0 }),
                    &format!("{path}.policy"),
                    "SCHED_BATCH is mapped as SCHED_OTHER (hsched's fair share has no separate no-wakeup-preemption class)",
                );
            }
            if let Some(m) = get(members, "dl-runtime") {
                cx.warn(
                    m.key_pos,
                    &format!("{path}.dl-runtime"),
                    "a custom time slice for a fair-class thread is not modelled: every fair thread gets the `other` scheduler's quantum",
                );
            }
            Class::Fair(NICE_WEIGHTS[(nice.clamp(-20, 19) + 20) as usize])
        }
        Policy::Idle => Class::Fair(IDLE_WEIGHT),
        Policy::Fifo | Policy::Rr => {
            let prio = priority.map(|(p, _)| p).unwrap_or(10);
            if let Some((p, pos)) = priority {
                if !(1..=99).contains(&p) {
                    cx.warn(
                        pos,
                        &prio_path,
                        format!("real-time priority {p} is outside 1..99: clamped"),
                    );
                }
            }
            let prio = prio.clamp(1, 99);
            if policy == Policy::Fifo {
                Class::Fifo(prio)
            } else {
                Class::Rr(prio)
            }
        }
        Policy::Deadline => {
            let runtime = us("dl-runtime", cx)?
                .filter(|r| *r > 0)
                .or(us("runtime", cx)?.filter(|_| get(members, "phases").is_some()))
                .unwrap_or(0);
            let period = us("dl-period", cx)?
                .or(us("period", cx)?)
                .filter(|p| *p > 0)
                .unwrap_or(runtime);
            let deadline = us("dl-deadline", cx)?
                .or(us("deadline", cx)?)
                .filter(|d| *d > 0)
                .unwrap_or(period);
            let ppath = format!("{path}.policy");
            let ppos = get(members, "policy")
                .map(|m| m.key_pos)
                .unwrap_or(Pos { line: 0, column: 0 });
            if runtime == 0 {
                cx.warn(
                    ppos,
                    &ppath,
                    "SCHED_DEADLINE without `dl-runtime`: Linux refuses it; mapped as SCHED_OTHER",
                );
                Class::Fair(NICE_WEIGHTS[20])
            } else if period < runtime {
                cx.warn(ppos, &ppath, format!("dl-period {period}us is shorter than dl-runtime {runtime}us: Linux refuses it; mapped as a reservation of the whole CPU every {runtime}us"));
                Class::Deadline(runtime, runtime)
            } else {
                if deadline != period {
                    let dpos = get(members, "dl-deadline")
                        .map(|m| m.key_pos)
                        .unwrap_or(ppos);
                    cx.warn(dpos, &format!("{path}.dl-deadline"), format!("a deadline ({deadline}us) other than the period ({period}us): hsched's `res` reserves dl-runtime every dl-period with the period as deadline"));
                }
                Class::Deadline(runtime, period)
            }
        }
    })
}

fn read_phase(
    members: &[Member],
    path: &str,
    pos: Pos,
    current: Policy,
    cx: &mut Cx,
) -> Result<Phase, Fail> {
    let is_task = !path.contains(".phases.");
    // A phase's scheduling keys change the thread's policy at its start
    // (a priority alone keeps the policy in effect).
    let sched_key = members.iter().find(|m| {
        [
            "policy",
            "priority",
            "dl-runtime",
            "dl-period",
            "dl-deadline",
        ]
        .contains(&m.key.as_str())
    });
    let class = match sched_key {
        Some(m) if !is_task => Some((read_class(members, path, current, cx)?, m.key_pos)),
        _ => None,
    };
    let loops = match get(members, "loop") {
        None => Some(1),
        Some(m) => loop_count(m, &format!("{path}.loop"), cx)?,
    };
    let mut events = Vec::new();
    for m in members {
        let kpath = format!("{path}.{}", m.key);
        if program::event_kind(&m.key).is_some() {
            events.push(program::read_event(m, &kpath)?);
            continue;
        }
        if is_task {
            // Task-level keys are read by read_task; warn here only about
            // what neither reads.
            match m.key.as_str() {
                "instance" | "delay" | "loop" | "phases" | "period" | "deadline" => {}
                k if SCHED_KEYS.contains(&k) => {}
                _ => warn_other_key(m, &kpath, cx),
            }
            continue;
        }
        match m.key.as_str() {
            "loop" => {}
            "policy" | "priority" | "dl-runtime" | "dl-period" | "dl-deadline" => {}
            "cpus" => cx.warn(
                m.key_pos,
                &kpath,
                "a per-phase CPU affinity is not modelled: the thread may run on any CPU",
            ),
            _ => warn_other_key(m, &kpath, cx),
        }
    }
    if events.is_empty() {
        return Err(Fail::at(
            pos,
            path,
            "no events: rt-app refuses a phase without events (run, runtime, sleep, timer, lock, unlock, wait, signal, broad, sync, barrier, suspend, resume, yield, fork, mem, iorun, memrun, sem_post, sem_wait)",
        ));
    }
    Ok(Phase {
        path: path.to_string(),
        class,
        loops,
        events,
    })
}

/// One thread of the scenario, ready to write.
struct ThreadOut {
    name: String,
    comment: String,
    parent: String,
    at: String,
    arrival_us: u64,
    count: u64,
    program: Vec<Op>,
}

fn emit(file: &File, file_name: &str, opts: &Options, cx: &mut Cx) -> Result<String, Fail> {
    let max_horizon_s = hsched_model::MAX_HORIZON.as_nanos() / 1_000_000_000;
    let horizon_s = match file.duration_s {
        Some((d, pos)) if d > 0 && d as u64 > max_horizon_s => {
            return Err(Fail::at(
                pos,
                "global.duration",
                format!(
                    "{d}s is longer than the longest horizon hsched runs, {max_horizon_s}s \
                     (MAX_HORIZON)"
                ),
            ));
        }
        Some((d, _)) if d > 0 => d as u64,
        Some((d, pos)) => {
            cx.warn(pos, "global.duration", format!("{d}: rt-app runs until every thread ends or it is stopped; hsched needs a horizon: {DEFAULT_HORIZON_S}s (change it with `hsched sim --horizon`)"));
            DEFAULT_HORIZON_S
        }
        None => {
            cx.warn(Pos { line: 0, column: 0 }, "global.duration", format!("not given: rt-app runs until every thread ends or it is stopped; hsched needs a horizon: {DEFAULT_HORIZON_S}s (change it with `hsched sim --horizon`)"));
            DEFAULT_HORIZON_S
        }
    };
    let horizon_ns = horizon_s.saturating_mul(1_000_000_000);
    let cpus = opts.cpus.unwrap_or_else(|| {
        file.tasks
            .iter()
            .filter_map(|t| t.max_cpu)
            .max()
            .map(|c| c + 1)
            .unwrap_or(1)
    });
    for t in &file.tasks {
        if let Some((list, pos, path)) = &t.cpus {
            let all: BTreeSet<u32> = (0..cpus).collect();
            let given: BTreeSet<u32> = list.iter().copied().collect();
            if !all.is_subset(&given) {
                cx.warn(*pos, path, format!("CPU affinity {list:?} is not modelled: the thread may run on any of the {cpus} CPU(s)"));
            }
        }
    }

    let threads_program = program::programs(&file.tasks, horizon_ns, cx);

    // The hierarchy: only the classes the tasks use, plus the fair class,
    // which is the default scheduler.
    let mut threads = Vec::new();
    let mut rr_prios = BTreeSet::new();
    let mut deadline_util: Vec<(String, Pos, u64, u64)> = Vec::new();
    let mut any_deadline = false;
    for (t, program) in file.tasks.iter().zip(threads_program) {
        let Some(program) = program else { continue };
        let (parent, at) = t.class.placement();
        let comment = match &t.class {
            Class::Fair(_) => "fair class".to_string(),
            Class::Fifo(p) => format!("SCHED_FIFO {p}"),
            Class::Rr(p) => format!("SCHED_RR {p}"),
            Class::Deadline(r, p) => format!("SCHED_DEADLINE {r}us every {p}us"),
        };
        if let Class::Deadline(r, p) = &t.class {
            // Each instance is a thread with its own reservation.
            deadline_util.push((t.path.clone(), t.pos, r.saturating_mul(t.instances), *p));
        }
        for c in std::iter::once(&t.class).chain(
            t.phases
                .iter()
                .filter_map(|p| p.class.as_ref().map(|(c, _)| c)),
        ) {
            match c {
                Class::Rr(p) => {
                    rr_prios.insert(*p);
                }
                Class::Deadline(..) => any_deadline = true,
                _ => {}
            }
        }
        threads.push(ThreadOut {
            name: t.name.clone(),
            comment,
            parent,
            at,
            arrival_us: t.delay_us,
            count: t.instances,
            program,
        });
    }
    if threads.is_empty() {
        return Err(Fail {
            pos: None,
            path: "tasks".into(),
            message: "no task creates a thread (every one has `instance: 0` or `loop: 0`): nothing to simulate".into(),
        });
    }
    // `res` admits reservations while their utilizations sum to at most 1.
    let mut sum = (0u128, 1u128);
    for (path, pos, r, p) in &deadline_util {
        let next = (sum.0 * *p as u128 + *r as u128 * sum.1, sum.1 * *p as u128);
        if next.0 > next.1 {
            cx.warn(*pos, path, "with this task the SCHED_DEADLINE reservations add up to more than one CPU: hsched's `res` admits at most one CPU's worth in all, so `hsched sim` refuses the hierarchy (as Linux's admission control refuses such a task)");
        }
        let g = gcd(next.0, next.1).max(1);
        sum = (next.0 / g, next.1 / g);
    }

    let stem = std::path::Path::new(file_name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rt-app".into());
    let mut out = String::new();
    out.push_str(&format!("name = {}\n", toml_string(&stem)));
    out.push_str(&format!(
        "description = {}\n",
        toml_string(&format!("rt-app workload {stem}, imported"))
    ));
    out.push_str(&format!("horizon = \"{horizon_s}s\"\n"));
    out.push_str("default = \"other\"\n\n");
    out.push_str(&format!("[machine]\ncpus = {cpus}\n\n"));
    out.push_str("# Linux's classes: deadline above real-time above fair.\n");
    out.push_str("[[scheduler]]\nname = \"root\"\npolicy = \"fp\"\n\n");
    if any_deadline {
        out.push_str(&format!(
            "# SCHED_DEADLINE: EDF hard reservations (dl-runtime every dl-period).\n[[scheduler]]\nname = \"deadline\"\npolicy = \"res\"\nparent = \"root\"\nat = {{ prio = {DEADLINE_PRIO} }}\n\n"
        ));
    }
    for p in &rr_prios {
        out.push_str(&format!(
            "# SCHED_RR at priority {p}: round robin with Linux's slice.\n[[scheduler]]\nname = \"rr_{p}\"\npolicy = \"rr\"\nquantum = {RR_QUANTUM}\nparent = \"root\"\nat = {{ prio = {p} }}\n\n"
        ));
    }
    out.push_str(&format!(
        "# SCHED_OTHER, SCHED_BATCH, SCHED_IDLE: weighted fair share (CFS's nice weights).\n[[scheduler]]\nname = \"other\"\npolicy = \"sfq\"\nquantum = {OTHER_QUANTUM}\nparent = \"root\"\nat = {{ prio = {OTHER_PRIO} }}\n\n"
    ));
    for t in &threads {
        out.push_str(&format!("# {}\n[[thread]]\n", t.comment));
        out.push_str(&format!("name = {}\n", toml_string(&t.name)));
        out.push_str(&format!("parent = {}\n", toml_string(&t.parent)));
        if !t.at.is_empty() {
            out.push_str(&format!("at = {}\n", t.at));
        }
        if t.arrival_us > 0 {
            out.push_str(&format!(
                "arrival = {}\n",
                toml_duration(
                    t.arrival_us
                        .saturating_mul(1000)
                        .min(horizon_ns.saturating_sub(1))
                )
            ));
        }
        if t.count != 1 {
            out.push_str(&format!("count = {}\n", t.count));
        }
        out.push_str("program = [\n");
        for op in &t.program {
            op.write(&mut out, 1);
        }
        out.push_str("]\n\n");
    }
    Ok(out)
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
