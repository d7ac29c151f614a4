//! The change guard: what a platform (the simulator, the live agent) asks
//! before it changes a running hierarchy, so that a change which would break
//! a guarantee already promised is refused (or let through with a warning)
//! the same way on both. The HLS analysis implements it (`hsched-analysis`);
//! the dispatcher, which carries the changes out, sees only this trait, so
//! it need not depend on the analysis.

use crate::Action;
use hsched_core::{Instant, Msg};
use std::sync::{Arc, Mutex};

/// A change to the running hierarchy, as the guard is told of it.
#[derive(Clone, Copy, Debug)]
pub enum Change<'a> {
    /// A script step or an operator's request: load, unload, detach,
    /// attach, move a thread (`join` and `leave` are moves too).
    Hierarchy(&'a Action),
    /// Thread `thread` sent `msg` to scheduler `to` and it was accepted (an
    /// admission such as `reserve`): the labels may change from now on.
    Admitted {
        thread: &'a str,
        to: &'a str,
        msg: &'a Msg,
    },
    /// Scheduler `scheduler` was ejected for breaking the protocol: it is
    /// gone, as if unloaded.
    Ejected { scheduler: &'a str },
    /// A plugin made policy `policy` available while the run goes on, with
    /// its row of HLS Table 1 if it declares one: instances of it are
    /// analysed by that row from then on.
    PolicyAdded {
        policy: &'a str,
        rule: Option<&'a str>,
    },
}

/// What the guard rules on a change before it is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ruling {
    /// It keeps every promise: go ahead.
    Accept,
    /// It breaks a promise, but the run was told to let such changes
    /// through: go ahead, and say so (the text is why).
    Warn(String),
    /// It breaks a promise: refuse it, with this reason.
    Refuse(String),
}

/// Re-analyses the hierarchy as each change would leave it.
pub trait ChangeGuard {
    /// Whether `change` may be applied at `now`. Asked of hierarchy changes
    /// only, before they are carried out.
    fn review(&mut self, now: Instant, change: &Change) -> Ruling;
    /// `change` was carried out at `now`: it is the hierarchy from now on.
    fn applied(&mut self, now: Instant, change: &Change);
}

/// A guard shared between whoever built it (who reads its labels after the
/// run) and the dispatcher that consults it during the run.
#[derive(Clone)]
pub struct SharedGuard(pub Arc<Mutex<dyn ChangeGuard + Send>>);

impl SharedGuard {
    /// Runs `f` on the guard. A guard that panicked once still holds the
    /// last hierarchy it accepted: using it again is sound.
    pub fn with<R>(&self, f: impl FnOnce(&mut dyn ChangeGuard) -> R) -> R {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut *guard)
    }
}

impl std::fmt::Debug for SharedGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedGuard")
    }
}
