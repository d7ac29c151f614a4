//! What a platform tells a scheduler about its threads' synchronization:
//! who takes, waits for and gives up a mutex, and which thread serves whose
//! RPC. A policy that lends scheduling state across them (Rialto's
//! constraint inheritance, §4.2; priority inheritance) follows these
//! through [`Scheduler::sync`](crate::Scheduler::sync); the others ignore
//! them.

use crate::ids::MutexId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How a mutex lends scheduling state to its holder, as declared with it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum MutexProtocol {
    /// Priority policies lend nothing (Rialto still lends a waiter's time
    /// constraint: the paper's inheritance is not optional).
    #[default]
    None,
    /// Priority inheritance: the holder runs at the highest priority of the
    /// threads blocked on it, transitively, until it unlocks.
    Inherit,
}

impl MutexProtocol {
    /// The names a scenario writes.
    pub const NAMES: &'static [&'static str] = &["none", "inherit"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(MutexProtocol::None),
            "inherit" => Some(MutexProtocol::Inherit),
            _ => None,
        }
    }
}

impl fmt::Display for MutexProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MutexProtocol::None => "none",
            MutexProtocol::Inherit => "inherit",
        })
    }
}

/// One synchronization step, naming threads by `T`: `ThreadId` from the
/// platform to the dispatcher, `ChildId` from the dispatcher to the
/// scheduler of the threads it names. The dispatcher delivers an event to
/// the scheduler the acting thread is a direct child of; another thread it
/// names is given only if it is a child of that same scheduler (inheritance
/// does not cross schedulers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncEvent<T> {
    /// `thread` took `mutex`, which was free (or was handed to it by a
    /// holder under another scheduler).
    Acquired {
        thread: T,
        mutex: MutexId,
        protocol: MutexProtocol,
    },
    /// `thread` blocks on `mutex`, held by another thread; it is still
    /// runnable when this arrives and releases its CPU right after.
    Blocked {
        thread: T,
        mutex: MutexId,
        protocol: MutexProtocol,
    },
    /// `thread` released `mutex`; `to` is the waiter it was handed to, if
    /// any (to the scheduler: if that waiter is its child too; a waiter
    /// under another scheduler gets an `Acquired` there).
    Released {
        thread: T,
        mutex: MutexId,
        to: Option<T>,
        protocol: MutexProtocol,
    },
    /// `server` took `client`'s RPC: `client` waits for it until
    /// `CallEnded`, and lends it its scheduling state meanwhile.
    CallServed { client: T, server: T },
    /// The RPC `server` served for `client` ended (a reply, or either side
    /// went away).
    CallEnded { client: T, server: T },
}

impl<T: Copy> SyncEvent<T> {
    /// The thread whose scheduler hears of the event.
    pub fn actor(&self) -> T {
        match *self {
            SyncEvent::Acquired { thread, .. }
            | SyncEvent::Blocked { thread, .. }
            | SyncEvent::Released { thread, .. } => thread,
            SyncEvent::CallServed { client, .. } | SyncEvent::CallEnded { client, .. } => client,
        }
    }
}
