//! The protection domains and calls of a run (see `trains.rs` for how
//! train calls and RPCs move threads between them): a domain's stops and
//! queues, an open call's invocation record, and the record of each call
//! for the run's result.

use crate::program::{Cursor, Instr};
use hsched_core::{Instant, ThreadId};
use hsched_model::Via;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;

pub(crate) struct Domain {
    pub name: String,
    /// The leg status: the process is still valid.
    pub alive: bool,
    pub stops: Vec<(String, Rc<[Instr]>)>,
    /// RPC requests not yet taken by a server thread, in arrival order.
    pub requests: VecDeque<Request>,
    /// Server threads blocked in `serve`, waiting for a request.
    pub idle: VecDeque<ThreadId>,
}

impl Domain {
    /// A domain with no requests and no idle server threads.
    pub(super) fn new(name: &str, alive: bool, stops: Vec<(String, Rc<[Instr]>)>) -> Domain {
        Domain {
            name: name.to_string(),
            alive,
            stops,
            requests: VecDeque::new(),
            idle: VecDeque::new(),
        }
    }
}

/// An RPC waiting for a server thread: who asked, which stop, its call.
pub(crate) struct Request {
    pub(super) client: ThreadId,
    pub(super) stop: usize,
    pub(super) call: usize,
}

/// A train invocation record: where to return to.
pub(crate) struct Record {
    pub(super) caller: usize,
    pub(super) code: Rc<[Instr]>,
    pub(super) cursor: Cursor,
    pub(super) call: usize,
    /// For a server thread serving an RPC: the client to answer.
    pub(super) serving: Option<ThreadId>,
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    /// Normal return with results.
    Ok,
    /// Returned to a valid caller with an error because a caller between
    /// them had died.
    BrokenPipe,
    /// Returned to a valid caller with an error because the server domain
    /// died (or was dead when called).
    ServerExit,
    /// Its caller's domain died: nobody to return to, the result dropped.
    CallerGone,
    /// The calling thread exited (`exit`) with the call open.
    Abandoned,
    /// Refused: the thread already had [`MAX_DEPTH`] calls open (a stop
    /// that calls itself before taking any time would nest for ever
    /// without the clock moving).
    TooDeep,
}

/// The most train calls a thread can have open at once.
pub const MAX_DEPTH: usize = 10_000;

impl fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallOutcome::Ok => "ok",
            CallOutcome::BrokenPipe => "broken pipe",
            CallOutcome::ServerExit => "server exit",
            CallOutcome::CallerGone => "caller gone",
            CallOutcome::Abandoned => "abandoned",
            CallOutcome::TooDeep => "too deep",
        })
    }
}

/// One call made during a run.
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// The calling thread (the client, for RPC).
    pub thread: ThreadId,
    pub domain: String,
    pub stop: String,
    pub via: Via,
    pub start: Instant,
    /// When it returned; `None` while open.
    pub end: Option<Instant>,
    pub outcome: Option<CallOutcome>,
}
