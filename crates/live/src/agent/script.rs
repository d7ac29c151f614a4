//! A scenario's script on the agent: its steps, changes of the hierarchy
//! carried out at their times, and the log of what the steps, the
//! dispatcher and control requests did.

use super::Agent;
use crate::events::monotonic_ns;
use hsched_model::{Action, LogEntry, LogKind};

impl Agent {
    /// Carries out a change of the hierarchy now, logged as the simulator
    /// logs a script step. Protection-domain actions are not the
    /// hierarchy's and are refused.
    pub fn script(&mut self, action: &Action) {
        self.now = self.clock(monotonic_ns());
        let result = hsched_dispatch::apply(&mut self.disp, &mut self.platform, self.now, action)
            .unwrap_or_else(|| Err("protection domains are not run live".into()));
        let (kind, text) = match result {
            Ok(text) => (LogKind::Script, text),
            Err(text) => (LogKind::Refused, text),
        };
        self.log.push(LogEntry {
            at: self.now,
            kind,
            text,
        });
    }

    /// What happened (the dispatcher's refusals and ejections, the
    /// script's steps, control requests), in time order; taken.
    pub fn take_log(&mut self) -> Vec<LogEntry> {
        let mut log = std::mem::take(&mut self.log);
        log.extend(self.disp.take_log());
        log.sort_by_key(|e| e.at);
        log
    }
}
