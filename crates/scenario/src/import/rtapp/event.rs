//! rt-app's events: which keys are events (by prefix, as rt-app matches
//! them) and each event read from its member, its value's type checked as
//! rt-app checks it.

use super::json_like::{Kind, Member, Pos};
use super::members::{get, int, string, value, Fail};

/// rt-app's event key prefixes, in the order it tries them (`runtime`
/// before `run`, `memrun` before `mem`): a key is an event if it starts
/// with one of them.
pub(super) const EVENT_PREFIXES: &[&str] = &[
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer",
    "suspend", "resume", "memrun", "mem", "iorun", "yield", "barrier", "fork", "sem_post",
    "sem_wait",
];

/// The event a key names, by prefix, as rt-app matches it.
pub(super) fn event_kind(key: &str) -> Option<&'static str> {
    EVENT_PREFIXES.iter().copied().find(|p| key.starts_with(p))
}

/// One event of a phase, where it is written.
#[derive(Clone, Debug)]
pub(super) struct Event {
    pub path: String,
    pub pos: Pos,
    pub kind: EventKind,
}

#[derive(Clone, Debug)]
pub(super) enum EventKind {
    Run(i64),
    Runtime(i64),
    Sleep(i64),
    Timer {
        reference: String,
        period: i64,
        absolute: bool,
    },
    Lock(String),
    Unlock(String),
    Wait {
        cond: String,
        mutex: String,
    },
    Signal(String),
    Broad(String),
    Sync {
        cond: String,
        mutex: String,
    },
    /// The name waited on; `None`: the task's own.
    Suspend(Option<String>),
    Resume(String),
    Yield,
    Barrier(String),
    Fork(String),
    /// `mem`, `iorun`, `memrun`: memory and I/O load.
    Load(&'static str),
    SemPost(String),
    SemWait(String),
}

fn object_str(members: &[Member], key: &str, path: &str) -> Result<Option<String>, Fail> {
    get(members, key)
        .map(|m| string(m, &format!("{path}.{key}"), "a string").map(|(s, _)| s))
        .transpose()
}

/// Reads one event member; the value's type is checked as rt-app checks it.
pub(super) fn read_event(m: &Member, path: &str) -> Result<Event, Fail> {
    let kind = event_kind(&m.key).expect("read_event is called on events");
    let name = |what: &str| string(m, path, what).map(|(s, _)| s);
    let obj = || -> Result<&[Member], Fail> {
        let v = value(m, path, "an object")?;
        match &v.kind {
            Kind::Object(o) => Ok(o),
            k => Err(Fail::at(
                v.pos,
                path,
                format!("expected an object for `{kind}`, found {}", k.describe()),
            )),
        }
    };
    let micros = || int(m, path, "an integer number of microseconds").map(|(i, _)| i);
    let ek = match kind {
        "run" => EventKind::Run(micros()?),
        "runtime" => EventKind::Runtime(micros()?),
        "sleep" => EventKind::Sleep(micros()?),
        "timer" => {
            let o = obj()?;
            let period = match get(o, "period") {
                Some(p) => {
                    int(
                        p,
                        &format!("{path}.period"),
                        "an integer number of microseconds",
                    )?
                    .0
                }
                None => 0,
            };
            let mode = object_str(o, "mode", path)?.unwrap_or_else(|| "relative".into());
            EventKind::Timer {
                reference: object_str(o, "ref", path)?.unwrap_or_else(|| "unknown".into()),
                period,
                absolute: mode.starts_with("absolute"),
            }
        }
        "lock" => EventKind::Lock(name("a mutex name")?),
        "unlock" => EventKind::Unlock(name("a mutex name")?),
        "signal" => EventKind::Signal(name("a condition name")?),
        "broad" => EventKind::Broad(name("a condition name")?),
        "wait" | "sync" => {
            let o = obj()?;
            let cond = object_str(o, "ref", path)?.unwrap_or_else(|| "unknown".into());
            let mutex = object_str(o, "mutex", path)?.unwrap_or_else(|| "unknown".into());
            if kind == "wait" {
                EventKind::Wait { cond, mutex }
            } else {
                EventKind::Sync { cond, mutex }
            }
        }
        "suspend" => EventKind::Suspend(match m.value.as_ref().map(|v| &v.kind) {
            Some(Kind::Str(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        }),
        "resume" => EventKind::Resume(name("a thread name")?),
        "yield" => EventKind::Yield,
        "barrier" => EventKind::Barrier(name("a barrier name")?),
        "fork" => EventKind::Fork(name("a task name")?),
        "mem" | "iorun" => {
            int(m, path, "an integer (bytes)")?;
            EventKind::Load(kind)
        }
        "memrun" => {
            obj()?;
            EventKind::Load(kind)
        }
        "sem_post" => EventKind::SemPost(name("a semaphore name")?),
        _ => EventKind::SemWait(name("a semaphore name")?),
    };
    Ok(Event {
        path: path.to_string(),
        pos: m.key_pos,
        kind: ek,
    })
}
