//! Thread names by id, for outputs that refer to threads by name (the job
//! CSV, trace labels).
//!
//! A name comes from `RunResult::threads` first, then from the trace's
//! `thread_names` (which also knows threads that exited early or were never
//! summarized), and otherwise is the id's own display (`thread7`), so every
//! row gets a label even from a partial result.

use hsched_core::ThreadId;
use hsched_model::RunResult;
use std::collections::BTreeMap;

/// Looks thread names up by id. Built once per output; ordered map, so
/// iterating it (see [`ThreadNames::ids`]) is in id order.
pub struct ThreadNames<'a> {
    by_id: BTreeMap<ThreadId, &'a str>,
}

impl<'a> ThreadNames<'a> {
    pub fn new(result: &'a RunResult) -> Self {
        let mut by_id = BTreeMap::new();
        if let Some(trace) = &result.trace {
            for (i, name) in trace.thread_names.iter().enumerate() {
                by_id.insert(ThreadId(i as u32), name.as_str());
            }
        }
        // The per-thread results win over the trace's labels: they are what
        // the metrics JSON reports, and the two outputs should agree.
        for t in &result.threads {
            by_id.insert(t.id, t.name.as_str());
        }
        ThreadNames { by_id }
    }

    /// The name of `id`, or `thread<N>` when no name is known.
    pub fn name(&self, id: ThreadId) -> String {
        match self.by_id.get(&id) {
            Some(name) => (*name).to_string(),
            None => id.to_string(),
        }
    }

    /// Every thread id with a known name, ascending.
    pub fn ids(&self) -> impl Iterator<Item = ThreadId> + '_ {
        self.by_id.keys().copied()
    }
}
