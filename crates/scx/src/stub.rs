//! The scheduler's API where hsched was built without the `scx` feature:
//! nothing loads, and [`Scheduler::load`] says why, so that callers need no
//! feature gates of their own.

use crate::{Decision, Event, ExitInfo, Stats};
use std::time::Duration;

/// Never made: [`Scheduler::load`] always fails here.
pub struct Scheduler {
    never: std::convert::Infallible,
}

impl Scheduler {
    /// Fails with [`crate::available`]'s reason.
    pub fn load() -> Result<Scheduler, String> {
        Scheduler::load_with(&crate::Options::default())
    }

    /// Fails with [`crate::available`]'s reason.
    pub fn load_with(_options: &crate::Options) -> Result<Scheduler, String> {
        Err(crate::available().err().unwrap_or_default())
    }

    pub fn manage(&self, _tid: u32) -> Result<(), String> {
        match self.never {}
    }

    pub fn arm(&self, _tid: u32, _cpu: Option<u32>) -> Result<(), String> {
        match self.never {}
    }

    pub fn unmanage(&self, _tid: u32) -> Result<(), String> {
        match self.never {}
    }

    pub fn set_decision(&self, _cpu: u32, _decision: Decision) -> Result<(), String> {
        match self.never {}
    }

    pub fn kick(&self, _cpu: u32) -> Result<(), String> {
        match self.never {}
    }

    pub fn events_fd(&self) -> std::os::fd::RawFd {
        match self.never {}
    }

    pub fn take_events(&self, _out: &mut Vec<Event>) -> Result<(), String> {
        match self.never {}
    }

    pub fn poll_events(&self, _timeout: Duration) -> Result<Vec<Event>, String> {
        match self.never {}
    }

    pub fn unload(self) -> Result<ExitInfo, String> {
        match self.never {}
    }

    pub fn stats(&self) -> Result<Stats, String> {
        match self.never {}
    }

    pub fn exit_info(&self) -> Result<Option<ExitInfo>, String> {
        match self.never {}
    }
}
