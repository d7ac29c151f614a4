//! Priority inheritance for the priority policies (`fp`, `rm`): the
//! classic protocol (Sha, Rajkumar & Lehoczky, "Priority Inheritance
//! Protocols", IEEE ToC 1990, the basic protocol) over the platform's
//! mutexes declared with `protocol = "inherit"`. While it holds such a
//! mutex, a thread runs at the highest priority among its own and those of
//! the threads blocked on it, directly or through a chain of holders
//! (transitive); it gets its own back when it unlocks. Mutexes with the
//! default protocol lend nothing. An RPC always lends: the server of a
//! call runs at least at its caller's rank until it replies (the call is
//! the caller's work, as a train runs it at the caller's own rank).
//!
//! The bookkeeping is [`crate::inherit::Inheritance`], with the child's
//! rank as the "constraint": a policy keeps every child's own rank in it
//! and asks [`Lending::rank`] for the rank it schedules by. Children that
//! never touch such a mutex are not in the book and cost nothing. After an
//! event, [`Lending::apply`] returns the children whose rank may have
//! changed (every child the book knows: few, the threads that share such
//! mutexes), for the policy to re-rank. Inheritance stays within one
//! scheduler: a holder under another scheduler is lent nothing.

use crate::inherit::Inheritance;
use hsched_core::{ChildId, ChildMap, MutexId, MutexProtocol, SyncEvent};
use std::cmp::Ordering;

/// Who holds and waits for which inheriting mutex, and the ranks lent.
#[derive(Clone, Debug)]
pub struct Lending<R> {
    book: Inheritance<ChildId, MutexId, R>,
}

impl<R: Copy + Ord + std::fmt::Debug> Lending<R> {
    /// `more_urgent(a, b) == Less`: rank `a` runs before rank `b`.
    pub fn new(more_urgent: fn(&R, &R) -> Ordering) -> Self {
        Lending {
            book: Inheritance::with_comparator(more_urgent),
        }
    }

    /// The rank `child` is scheduled by: its own, or a more urgent one lent
    /// by a thread blocked on it.
    pub fn rank(&self, child: ChildId, own: R) -> R {
        match self.book.constraint(child) {
            Some(_) => self.book.effective(child).unwrap_or(own),
            None => own,
        }
    }

    /// Follows `event` if it is about an inheriting mutex; `own` gives a
    /// child's own rank (the book learns it on the child's first event).
    /// Returns the children whose rank may have changed.
    pub fn apply(
        &mut self,
        event: &SyncEvent<ChildId>,
        own: impl Fn(ChildId) -> R,
    ) -> Vec<ChildId> {
        let inherit = |p: MutexProtocol| p == MutexProtocol::Inherit;
        let note = |book: &mut Inheritance<ChildId, MutexId, R>, c: ChildId| {
            if book.constraint(c).is_none() {
                book.set_constraint(c, Some(own(c)));
            }
        };
        match *event {
            SyncEvent::Acquired {
                thread,
                mutex,
                protocol,
            } if inherit(protocol) => {
                note(&mut self.book, thread);
                let _ = self.book.acquire(thread, mutex);
            }
            SyncEvent::Blocked {
                thread,
                mutex,
                protocol,
            } if inherit(protocol) => {
                note(&mut self.book, thread);
                // A holder under another scheduler: nobody here to lend to.
                let _ = self.book.block_on(thread, mutex);
            }
            SyncEvent::Released {
                thread,
                mutex,
                to,
                protocol,
            } if inherit(protocol) => {
                let _ = self.book.release_to(thread, mutex, to);
            }
            // A call lends the caller's rank to the server until it ends,
            // as a train would run the call at the caller's own rank.
            SyncEvent::CallServed { client, server } => {
                note(&mut self.book, client);
                note(&mut self.book, server);
                let _ = self.book.call(client, server);
            }
            SyncEvent::CallEnded { server, .. } => {
                let _ = self.book.reply(server);
            }
            _ => return Vec::new(),
        }
        self.book.threads().collect()
    }

    /// `child` left: what it held is free here, what it waited for
    /// forgotten. Returns the children whose rank may have changed.
    pub fn remove(&mut self, child: ChildId) -> Vec<ChildId> {
        if self.book.constraint(child).is_none() {
            return Vec::new();
        }
        self.book.remove(child);
        self.book.threads().collect()
    }

    /// Checks the book against `children` (as [`check`](Self::check), with
    /// each child's `own` rank), then that each child is scheduled by the
    /// `rank` that its own rank and what it is lent make; `Ok(Some(..))`
    /// names the first that is not: the child, its rank, its own rank and
    /// the rank it should have.
    pub fn check_ranks<C>(
        &self,
        children: &ChildMap<C>,
        own: impl Fn(&C) -> R,
        rank: impl Fn(&C) -> R,
    ) -> Result<Option<(ChildId, R, R, R)>, String> {
        self.check(|child| children.get(child).map(&own))?;
        Ok(children.iter().find_map(|(child, c)| {
            let lent = self.rank(child, own(c));
            (rank(c) != lent).then_some((child, rank(c), own(c), lent))
        }))
    }

    /// Checks the book, and that it knows only `registered` children with
    /// the own rank each has (`own`).
    pub fn check(&self, registered: impl Fn(ChildId) -> Option<R>) -> Result<(), String> {
        self.book.check()?;
        for c in self.book.threads() {
            match registered(c) {
                None => return Err(format!("the inheritance book names {c}, which left")),
                Some(own) if self.book.constraint(c) != Some(own) => {
                    return Err(format!(
                        "the inheritance book has {c} at {:?}, its own rank is {own:?}",
                        self.book.constraint(c)
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}
