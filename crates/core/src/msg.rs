//! Messages from threads to schedulers (Vassal's MessageToScheduler, HLS's
//! HLSCtl): a name and named arguments, answered at once with a [`Reply`].
//!
//! Messages are open-ended on purpose: a loadable policy defines the messages
//! it understands (reserve, begin_constraint, warp, ...) and documents them; a
//! policy that does not understand one answers `Reply::Err`.

use crate::params::{Params, Value};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Msg {
    pub name: String,
    pub args: Params,
}

impl Msg {
    pub fn new(name: &str) -> Self {
        Msg {
            name: name.to_string(),
            args: Params::new(),
        }
    }
    pub fn arg(mut self, key: &str, v: Value) -> Self {
        self.args.set(key, v);
        self
    }
}

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.args.is_empty() {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{}({})", self.name, self.args)
        }
    }
}

/// The answer to a message, given before the sender continues (Vassal: "if it
/// is unable to satisfy the thread's request, it informs it right away").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// Accepted, with any results (e.g. the reservation actually granted).
    Ok(Params),
    /// Refused, with the reason.
    Err(String),
}

/// `ok` or `ok: amount=4ms, period=20ms`; `refused: why`.
impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Ok(p) if p.is_empty() => f.write_str("ok"),
            Reply::Ok(p) => write!(f, "ok: {p}"),
            Reply::Err(e) => write!(f, "refused: {e}"),
        }
    }
}

impl Reply {
    pub fn ok() -> Self {
        Reply::Ok(Params::new())
    }
    pub fn unknown(policy: &str, msg: &Msg) -> Self {
        Reply::Err(format!(
            "{policy} does not understand message `{}`",
            msg.name
        ))
    }
    pub fn is_ok(&self) -> bool {
        matches!(self, Reply::Ok(_))
    }
}
