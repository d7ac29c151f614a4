//! hsched live: the platform that schedules real Linux threads and
//! processes from user space, on a stock kernel (no sched_ext, no module).
//!
//! This crate holds the Linux side: [`sys`], the calls made on threads the
//! agent does not own (policy and priority, affinity, stop and continue,
//! `/proc`); [`events`], the kernel's block and wakeup events of the
//! managed threads (tracepoints read from a private ftrace instance); and
//! [`guardian`], the separate process that puts every managed thread back
//! as it was if the agent dies or hangs. The agent that drives the
//! dispatcher with real threads builds on these.

#![cfg(target_os = "linux")]

pub mod agent;
pub mod control;
pub mod events;
pub mod guardian;
pub mod observe;
pub mod run;
pub mod sys;
pub mod worker;
