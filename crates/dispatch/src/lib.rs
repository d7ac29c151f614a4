//! hsched dispatch: the hierarchy and the dispatcher (Vassal's role).
//!
//! The [`Dispatcher`] holds the scheduler instances (a DAG: a `join` has
//! several parents), the threads (leaf VPs) and, per CPU, the *decision path*:
//! the chain of grants from the root down to the thread (or idle) on that CPU.
//! A platform ([`Platform`]: the simulator or the live agent) reports thread
//! events and the passing of time; the dispatcher delivers HLS notifications,
//! applies each callback's effects after it returns (never re-entrantly),
//! charges run time to every scheduler on the path, and tells the platform
//! which thread runs where.
//!
//! Protocol enforcement: a scheduler whose decision is invalid, whose
//! `check_invariants` fails, that panics, that livelocks asking for
//! reschedules, or that starves a thread past the watchdog bound is *ejected*:
//! cut out of the hierarchy, with every thread below it returned to the
//! default scheduler, runnable threads still runnable (nothing is lost).
//!
//! Determinism: the dispatcher's own timers are ordered by (time, sequence);
//! reschedules are processed by CPU number; nothing depends on addresses or
//! hash order.

#![forbid(unsafe_code)]

mod build;
mod checks;
mod decide;
mod dispatcher;
mod effects;
mod events;
mod hierarchy;
mod table;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
mod timers;

pub use build::{apply, build_hierarchy, links, load};
pub use dispatcher::{Config, Dispatcher, Platform};
pub use hierarchy::AttachLink;
