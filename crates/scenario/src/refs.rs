//! Names a scenario part refers to outside itself (schedulers, mutexes,
//! domains, semaphores, barriers), kept with their place so they can be
//! checked once the whole file is read.

use crate::error::{Fail, Span};
use crate::tree::Node;
use std::collections::BTreeSet;

/// A name a program refers to, kept with its place for later checks.
#[derive(Debug, Clone)]
pub(crate) struct NameRef {
    pub name: String,
    pub span: Span,
    pub path: String,
}

impl NameRef {
    /// A non-empty name at `path`.
    pub(crate) fn read(n: &Node, path: String, what: &str) -> Result<NameRef, Fail> {
        Ok(NameRef {
            name: n.name(&path, what)?.to_string(),
            span: n.span.clone(),
            path,
        })
    }
}

/// What a program refers to outside itself, checked once the whole file is
/// read: schedulers it sends messages to, mutexes it takes and gives back.
#[derive(Debug, Default)]
pub(crate) struct Refs {
    pub targets: Vec<NameRef>,
    pub locks: BTreeSet<String>,
    pub unlocks: Vec<NameRef>,
    /// Stops called, as `domain.stop`.
    pub calls: Vec<NameRef>,
    /// Domains served (`serve`).
    pub serves: Vec<NameRef>,
    /// Domains killed (`kill`).
    pub kills: Vec<NameRef>,
    /// Domains started (`create`).
    pub creates: Vec<NameRef>,
    /// Semaphores signalled.
    pub signals: BTreeSet<String>,
    /// Semaphores waited on (`wait`, `sporadic`'s `on`).
    pub waits: Vec<NameRef>,
    /// Barriers waited at.
    pub barriers: Vec<NameRef>,
}
