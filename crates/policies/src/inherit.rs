//! Inheritance across mutexes and RPCs: who waits for whom, and the most
//! urgent scheduling state a thread is lent. Rialto's constraint
//! inheritance is the source; `fp` and `rm` use the same book for priority
//! inheritance (the "constraint" is then the priority).
//!
//! **Source.** Jones, Roşu & Roşu, "CPU Reservations and Time Constraints"
//! (SOSP '97): §4.2 (a thread blocked on a synchronization object held by
//! another thread passes its time constraint to the holder, following the
//! chain of holders "to a thread that must be run in order for the target
//! thread to eventually run", caching the result; RPC service threads belong
//! to the caller's activity and inherit all of the caller's scheduling
//! attributes) and §4.6 step 3 (a path-compression algorithm reduces the
//! traversal of the inheritance list to about two steps).
//!
//! **Model.** Threads `T` and mutexes `M` are opaque ids; a thread's own
//! time constraint is an opaque `C`, ordered by a comparator where
//! [`Ordering::Less`] means "more urgent" ([`Inheritance::new`] uses `C`'s
//! own order: put the deadline first and the earliest deadline wins). A
//! thread is *blocked* when it waits for exactly one thing ([`Wait`]):
//! - a mutex ([`Inheritance::block_on`]): it waits for the mutex's holder;
//!   [`Inheritance::release`] hands the mutex to the first waiter (FIFO),
//!   the other waiters now wait for the new holder;
//! - the reply to an RPC ([`Inheritance::call`]): the client waits for the
//!   server until [`Inheritance::reply`] (or [`Inheritance::end_call`],
//!   which also ends the call of a blocked server, for when the client or
//!   the server goes away). While serving, the server runs under the
//!   client's activity ([`Inheritance::activity_of`]: the
//!   outermost client of a nest of calls) and, since the client is blocked
//!   on it, inherits the client's constraints like a mutex holder would.
//!
//! "Waits for" edges form a forest (every thread waits for at most one
//! thread; cycles are refused), rooted at the unblocked threads. The
//! *chain* of a thread follows its edges to a root: [`Inheritance::runs_for`]
//! returns that root, the thread that must run. [`Inheritance::effective`]
//! is the most urgent constraint in the thread's subtree: its own and those
//! of every thread blocked on it directly or transitively.
//!
//! **Path compression.** Each blocked thread may carry a *hint*: a thread
//! strictly further along its current chain. `runs_for` jumps from hint to
//! hint (or follows the real edge when there is none) and then points the
//! hint of every thread it visited at the root it found. The invariant
//! "a hint is further along the current chain" is kept as follows:
//! - `acquire` of a free mutex and `set_constraint` change no edge;
//! - `block_on` and `call` add an edge out of a root: chains only grow at
//!   their end, every hint stays on its chain (a hint naming the old root
//!   is merely short: the next query continues from it and compresses);
//! - `release` with waiters, `reply` and `end_call` remove the edge out of
//!   the new root for a whole subtree (the new holder and the threads
//!   behind it, the client whose call ended and the threads behind it):
//!   every hint in that subtree is cleared, eagerly, before the call
//!   returns. Hints outside it are untouched, since no chain outside it
//!   changed.
//!
//! **Deadlock.** A thread that is not blocked is a root, so blocking it on
//! a mutex closes a cycle exactly when the holder's chain ends at it
//! (`runs_for(holder) == thread`, including holding the mutex itself):
//! [`InheritError::Deadlock`] is returned and nothing changes. A call can
//! never close a cycle: its server must be unblocked and idle (Rialto
//! creates a fresh service thread per call), so nothing waits for the
//! client through it yet.
//!
//! **Complexity** (`n` threads, `k` threads in the affected subtree; maps
//! are `BTreeMap`s, so each step costs `O(log n)`): `runs_for` is amortized
//! `O(log n)` steps (path compression without union by rank), `O(1)` steps
//! when the hint is fresh, which is the common case the paper describes;
//! `block_on` is one `runs_for`; `effective`, `release` with waiters,
//! `reply` and `end_call` walk the subtree, `O(k log n)`; `activity_of` is
//! `O(log n)` per level of nested calls; the rest is `O(log n)`.
//!
//! **Following a platform.** A policy that hears of the platform's mutexes
//! ([`hsched_core::SyncEvent`]) does not choose who gets a released mutex:
//! [`Inheritance::release_to`] hands it to the waiter the platform chose,
//! or frees it (its remaining waiters then wait for a thread this book
//! does not know, and are unblocked here). [`Inheritance::remove`] forgets
//! a thread that left, for books keyed by reusable ids.
//!
//! **Limits.** No recursive mutexes (acquiring a mutex one holds is
//! [`InheritError::Busy`]); a blocked thread cannot act (acquire, block,
//! release, call, reply; `end_call` is done to it, not by it); threads are never removed (a thread is created on
//! first mention and is unblocked, constraint-less, idle); `effective` is
//! recomputed on each query rather than cached; the paper's rule of not
//! inheriting when the blocked thread has no constraint and its activity has
//! other runnable threads is a scheduling choice left to the policy.
//! No I/O, no clock, no floating point.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

/// What a blocked thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait<T, M> {
    /// The holder of this mutex.
    Mutex(M),
    /// This server's reply to an RPC.
    Reply(T),
}

/// Why an operation was refused; a refused operation changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InheritError {
    /// The acting thread is blocked, so it cannot run to do this.
    Blocked,
    /// `acquire`: the mutex is already held (by anyone, including the caller).
    Busy,
    /// `block_on`: the mutex is free; acquire it instead.
    NotHeld,
    /// `release`: the thread does not hold the mutex.
    NotHolder,
    /// `block_on`: the holder's chain leads back to the blocking thread.
    Deadlock,
    /// `call`: a thread cannot call itself.
    SelfCall,
    /// `call`: the server is blocked or already serving a call.
    ServerBusy,
    /// `reply`: the thread is not serving a call.
    NotServing,
}

impl fmt::Display for InheritError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InheritError::Blocked => "the acting thread is blocked",
            InheritError::Busy => "the mutex is already held",
            InheritError::NotHeld => "the mutex is free",
            InheritError::NotHolder => "the thread does not hold the mutex",
            InheritError::Deadlock => "blocking would close a wait-for cycle",
            InheritError::SelfCall => "a thread cannot call itself",
            InheritError::ServerBusy => "the server is blocked or already serving",
            InheritError::NotServing => "the thread is not serving a call",
        })
    }
}

impl std::error::Error for InheritError {}

#[derive(Clone, Debug)]
struct Thread<T, M, C> {
    own: Option<C>,
    wait: Option<Wait<T, M>>,
    holds: BTreeSet<M>,
    /// The client whose call this thread is serving.
    client: Option<T>,
    /// Path-compression hint: a thread strictly further along the chain.
    hint: Option<T>,
}

impl<T, M, C> Default for Thread<T, M, C> {
    fn default() -> Self {
        Thread {
            own: None,
            wait: None,
            holds: BTreeSet::new(),
            client: None,
            hint: None,
        }
    }
}

#[derive(Clone, Debug)]
struct Mutex<T> {
    holder: T,
    waiters: VecDeque<T>,
}

/// Mutex ownership, blocking, RPC nesting and the constraints they pass on.
#[derive(Clone, Debug)]
pub struct Inheritance<T, M, C> {
    threads: BTreeMap<T, Thread<T, M, C>>,
    /// Present only while held.
    mutexes: BTreeMap<M, Mutex<T>>,
    more_urgent: fn(&C, &C) -> Ordering,
}

impl<T: Copy + Ord, M: Copy + Ord, C: Copy + Ord> Inheritance<T, M, C> {
    /// Smaller `C` is more urgent (e.g. `C` starts with the deadline).
    pub fn new() -> Self {
        Self::with_comparator(C::cmp)
    }
}

impl<T: Copy + Ord, M: Copy + Ord, C: Copy + Ord> Default for Inheritance<T, M, C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Ord, M: Copy + Ord, C: Copy> Inheritance<T, M, C> {
    /// `more_urgent(a, b) == Less` means `a` is more urgent than `b`. Among
    /// equally urgent constraints, `effective` keeps the thread's own, then
    /// the first met in a deterministic walk.
    pub fn with_comparator(more_urgent: fn(&C, &C) -> Ordering) -> Self {
        Inheritance {
            threads: BTreeMap::new(),
            mutexes: BTreeMap::new(),
            more_urgent,
        }
    }

    fn thread(&mut self, t: T) -> &mut Thread<T, M, C> {
        self.threads.entry(t).or_default()
    }

    /// What `t` is blocked on, if anything.
    pub fn waiting_for(&self, t: T) -> Option<Wait<T, M>> {
        self.threads.get(&t).and_then(|th| th.wait)
    }

    /// Whether `t` is blocked.
    pub fn is_blocked(&self, t: T) -> bool {
        self.waiting_for(t).is_some()
    }

    /// The holder of `m`, if held.
    pub fn holder(&self, m: M) -> Option<T> {
        self.mutexes.get(&m).map(|mx| mx.holder)
    }

    /// The threads blocked on `m`, in hand-off (FIFO) order.
    pub fn waiters(&self, m: M) -> Vec<T> {
        self.mutexes
            .get(&m)
            .map(|mx| mx.waiters.iter().copied().collect())
            .unwrap_or_default()
    }

    /// `t`'s own constraint.
    pub fn constraint(&self, t: T) -> Option<C> {
        self.threads.get(&t).and_then(|th| th.own)
    }

    /// Sets (or clears) `t`'s own constraint.
    pub fn set_constraint(&mut self, t: T, c: Option<C>) {
        self.thread(t).own = c;
    }

    /// `t` takes the free mutex `m`.
    pub fn acquire(&mut self, t: T, m: M) -> Result<(), InheritError> {
        if self.is_blocked(t) {
            return Err(InheritError::Blocked);
        }
        if self.mutexes.contains_key(&m) {
            return Err(InheritError::Busy);
        }
        self.mutexes.insert(
            m,
            Mutex {
                holder: t,
                waiters: VecDeque::new(),
            },
        );
        self.thread(t).holds.insert(m);
        Ok(())
    }

    /// `t` blocks on the held mutex `m`, behind its other waiters.
    pub fn block_on(&mut self, t: T, m: M) -> Result<(), InheritError> {
        if self.is_blocked(t) {
            return Err(InheritError::Blocked);
        }
        let holder = self.holder(m).ok_or(InheritError::NotHeld)?;
        if self.runs_for(holder) == t {
            return Err(InheritError::Deadlock);
        }
        if let Some(mx) = self.mutexes.get_mut(&m) {
            mx.waiters.push_back(t);
        }
        let th = self.thread(t);
        th.wait = Some(Wait::Mutex(m));
        th.hint = None;
        Ok(())
    }

    /// `t` releases `m`; the first waiter, if any, becomes the holder, is
    /// unblocked and is returned.
    pub fn release(&mut self, t: T, m: M) -> Result<Option<T>, InheritError> {
        if self.is_blocked(t) {
            return Err(InheritError::Blocked);
        }
        if self.holder(m) != Some(t) {
            return Err(InheritError::NotHolder);
        }
        self.thread(t).holds.remove(&m);
        let next = self
            .mutexes
            .get_mut(&m)
            .and_then(|mx| mx.waiters.pop_front());
        match next {
            None => {
                self.mutexes.remove(&m);
                Ok(None)
            }
            Some(w) => {
                if let Some(mx) = self.mutexes.get_mut(&m) {
                    mx.holder = w;
                }
                let th = self.thread(w);
                th.wait = None;
                th.holds.insert(m);
                // Every chain through `m` ended at `t` and now ends at `w`.
                self.clear_hints(w);
                Ok(Some(w))
            }
        }
    }

    /// `t` releases `m` and the platform hands it to `to`: if `to` is one
    /// of `m`'s waiters it becomes the holder (the others now wait for it);
    /// otherwise `m` is free here and its waiters are unblocked (they wait
    /// for a thread outside this book). Returns the new holder.
    pub fn release_to(&mut self, t: T, m: M, to: Option<T>) -> Result<Option<T>, InheritError> {
        if self.is_blocked(t) {
            return Err(InheritError::Blocked);
        }
        if self.holder(m) != Some(t) {
            return Err(InheritError::NotHolder);
        }
        self.thread(t).holds.remove(&m);
        let mx = self.mutexes.get_mut(&m).expect("held");
        let picked = to.and_then(|w| mx.waiters.iter().position(|&x| x == w));
        match picked {
            Some(i) => {
                let w = mx.waiters.remove(i).expect("present");
                mx.holder = w;
                let th = self.thread(w);
                th.wait = None;
                th.holds.insert(m);
                // Every chain through `m` ended at `t` and now ends at `w`.
                self.clear_hints(w);
                Ok(Some(w))
            }
            None => {
                let mx = self.mutexes.remove(&m).expect("held");
                for w in mx.waiters {
                    self.thread(w).wait = None;
                    // Chains through `w` ended at `t` and now end at `w`.
                    self.clear_hints(w);
                }
                Ok(None)
            }
        }
    }

    /// Forgets `t` (it left): the mutexes it holds are freed (their waiters
    /// unblocked), it leaves the queue it waits in, and the calls it makes
    /// or serves end.
    pub fn remove(&mut self, t: T) {
        let Some(th) = self.threads.get(&t) else {
            return;
        };
        let (wait, holds, client) = (th.wait, th.holds.clone(), th.client);
        // Every chain through `t` changes; the others do not.
        for d in self.dependents(t) {
            self.thread(d).hint = None;
        }
        match wait {
            Some(Wait::Mutex(m)) => {
                if let Some(mx) = self.mutexes.get_mut(&m) {
                    mx.waiters.retain(|&w| w != t);
                }
            }
            Some(Wait::Reply(s)) => self.thread(s).client = None,
            None => {}
        }
        for m in holds {
            if let Some(mx) = self.mutexes.remove(&m) {
                for w in mx.waiters {
                    self.thread(w).wait = None;
                }
            }
        }
        if let Some(c) = client {
            self.thread(c).wait = None;
        }
        self.threads.remove(&t);
    }

    /// The threads the book knows, in order.
    pub fn threads(&self) -> impl Iterator<Item = T> + '_ {
        self.threads.keys().copied()
    }

    /// Checks the book against itself: holders and waiters agree with what
    /// each thread says it holds and waits for, calls pair a client with
    /// its server, hints lie on their thread's chain, and no chain loops.
    pub fn check(&self) -> Result<(), String>
    where
        T: fmt::Debug,
        M: fmt::Debug,
    {
        for (m, mx) in &self.mutexes {
            if !self
                .threads
                .get(&mx.holder)
                .is_some_and(|h| h.holds.contains(m))
            {
                return Err(format!("{m:?}'s holder {:?} does not hold it", mx.holder));
            }
            for w in &mx.waiters {
                if self.waiting_for(*w) != Some(Wait::Mutex(*m)) {
                    return Err(format!("{w:?} is queued on {m:?} but does not wait for it"));
                }
            }
        }
        for (t, th) in &self.threads {
            for m in &th.holds {
                if self.holder(*m) != Some(*t) {
                    return Err(format!("{t:?} thinks it holds {m:?}"));
                }
            }
            match th.wait {
                Some(Wait::Mutex(m)) if !self.waiters(m).contains(t) => {
                    return Err(format!("{t:?} waits for {m:?} but is not queued on it"));
                }
                Some(Wait::Reply(s)) if self.client_of(s) != Some(*t) => {
                    return Err(format!(
                        "{t:?} waits for {s:?}'s reply but {s:?} serves {:?}",
                        self.client_of(s)
                    ));
                }
                _ => {}
            }
            if let Some(c) = th.client {
                if self.waiting_for(c) != Some(Wait::Reply(*t)) {
                    return Err(format!("{t:?} serves {c:?}, which does not wait for it"));
                }
            }
            // The real chain, bounded by the number of threads: longer loops.
            let mut chain = Vec::new();
            let mut x = *t;
            while let Some(next) = self.threads.get(&x).and_then(|th| self.next(th)) {
                if chain.len() > self.threads.len() {
                    return Err(format!("{t:?}'s chain of waits loops"));
                }
                chain.push(next);
                x = next;
            }
            if let Some(h) = th.hint {
                if !chain.contains(&h) {
                    return Err(format!("{t:?}'s hint {h:?} is not on its chain"));
                }
            }
        }
        Ok(())
    }

    /// `client` calls `server` and blocks until `reply(server)`; meanwhile
    /// `server` runs under `client`'s activity and inherits its constraints.
    pub fn call(&mut self, client: T, server: T) -> Result<(), InheritError> {
        if client == server {
            return Err(InheritError::SelfCall);
        }
        if self.is_blocked(client) {
            return Err(InheritError::Blocked);
        }
        let busy = self
            .threads
            .get(&server)
            .is_some_and(|s| s.wait.is_some() || s.client.is_some());
        if busy {
            return Err(InheritError::ServerBusy);
        }
        self.thread(server).client = Some(client);
        let th = self.thread(client);
        th.wait = Some(Wait::Reply(server));
        th.hint = None;
        Ok(())
    }

    /// `server` returns from the call it serves; its client is unblocked and
    /// returned.
    pub fn reply(&mut self, server: T) -> Result<T, InheritError> {
        let th = self.threads.get(&server).ok_or(InheritError::NotServing)?;
        let client = th.client.ok_or(InheritError::NotServing)?;
        if th.wait.is_some() {
            return Err(InheritError::Blocked);
        }
        self.thread(server).client = None;
        self.thread(client).wait = None;
        // Every chain through `client` ended at `server` and now ends at it.
        self.clear_hints(client);
        Ok(client)
    }

    /// Ends the call `server` serves even if `server` is blocked (on a
    /// mutex or a nested call of its own): for when the client or the
    /// server goes away. The client is unblocked and returned; a nested
    /// call `server` made stays open.
    pub fn end_call(&mut self, server: T) -> Result<T, InheritError> {
        let th = self.threads.get(&server).ok_or(InheritError::NotServing)?;
        let client = th.client.ok_or(InheritError::NotServing)?;
        self.thread(server).client = None;
        self.thread(client).wait = None;
        // As in `reply`: chains through `client` now end at it.
        self.clear_hints(client);
        Ok(client)
    }

    /// The client whose call `server` is serving, if any.
    pub fn client_of(&self, server: T) -> Option<T> {
        self.threads.get(&server).and_then(|th| th.client)
    }

    /// The thread whose activity `t` runs under: the outermost client of the
    /// calls `t` is serving, or `t` itself.
    pub fn activity_of(&self, t: T) -> T {
        let mut x = t;
        while let Some(c) = self.threads.get(&x).and_then(|th| th.client) {
            x = c;
        }
        x
    }

    /// The thread `t` waits for directly.
    fn next(&self, th: &Thread<T, M, C>) -> Option<T> {
        match th.wait? {
            Wait::Mutex(m) => self.holder(m),
            Wait::Reply(s) => Some(s),
        }
    }

    /// The thread that must run for `t` to progress: the end of `t`'s chain
    /// (`t` itself when not blocked). Compresses the path it follows.
    pub fn runs_for(&mut self, t: T) -> T {
        let mut path = Vec::new();
        let mut x = t;
        while let Some(th) = self.threads.get(&x) {
            let Some(step) = th.hint.or_else(|| self.next(th)) else {
                break;
            };
            path.push(x);
            x = step;
        }
        // The last visited thread already points at `x` (its hint or edge).
        path.pop();
        for p in path {
            self.thread(p).hint = Some(x);
        }
        x
    }

    /// The threads blocked on `t`, directly or transitively (not `t`),
    /// in a deterministic order.
    pub fn dependents(&self, t: T) -> Vec<T> {
        let mut out = Vec::new();
        let mut stack = vec![t];
        while let Some(x) = stack.pop() {
            let Some(th) = self.threads.get(&x) else {
                continue;
            };
            let before = out.len();
            for m in &th.holds {
                if let Some(mx) = self.mutexes.get(m) {
                    out.extend(mx.waiters.iter().copied());
                }
            }
            out.extend(th.client);
            stack.extend(out[before..].iter().rev().copied());
        }
        out
    }

    fn clear_hints(&mut self, root: T) {
        self.thread(root).hint = None;
        for d in self.dependents(root) {
            self.thread(d).hint = None;
        }
    }

    /// The most urgent constraint among `t`'s own and those of every thread
    /// blocked on `t`, directly or transitively (§4.2 inheritance).
    pub fn effective(&self, t: T) -> Option<C> {
        let mut best = self.constraint(t);
        for d in self.dependents(t) {
            if let Some(c) = self.constraint(d) {
                best = match best {
                    Some(b) if (self.more_urgent)(&b, &c) != Ordering::Greater => Some(b),
                    _ => Some(c),
                };
            }
        }
        best
    }
}
