//! Rialto constraint inheritance (§4.2): chains of length 1..4, the most
//! urgent constraint wins, FIFO hand-off, path compression invalidated on
//! release and reply, deadlock refusal, RPC activity, and a property test
//! against a naive model that walks every chain on every query.

use std::collections::{BTreeMap, VecDeque};

use hsched_policies::rialto::inherit::{InheritError, Inheritance, Wait};
use proptest::prelude::*;

/// Threads are chars, mutexes small numbers, constraints deadlines (u64).
type Inh = Inheritance<char, u8, u64>;

/// `threads[0]` holds mutex 0; `threads[i]` holds mutex `i` and blocks on
/// mutex `i - 1`: a chain of `threads.len() - 1` edges ending at
/// `threads[0]`.
fn chain(threads: &[char]) -> Inh {
    let mut s = Inh::new();
    for (i, &t) in threads.iter().enumerate() {
        s.acquire(t, i as u8).unwrap();
    }
    for (i, &t) in threads.iter().enumerate().skip(1) {
        s.block_on(t, i as u8 - 1).unwrap();
    }
    s
}

#[test]
fn chains_of_length_one_to_four_end_at_the_root() {
    let names = ['a', 'b', 'c', 'd', 'e'];
    for len in 1..=4 {
        let ts = &names[..=len];
        let mut s = chain(ts);
        for &t in ts {
            assert_eq!(s.runs_for(t), 'a', "chain of {len}, from {t}");
            // Twice: the second time through the compressed path.
            assert_eq!(s.runs_for(t), 'a');
        }
        // The deepest thread's deadline reaches every thread on its chain.
        let last = ts[len];
        s.set_constraint(last, Some(7));
        for &t in ts {
            assert_eq!(s.effective(t), Some(7));
        }
        assert_eq!(s.dependents('a').len(), len);
    }
}

#[test]
fn the_most_urgent_constraint_is_inherited() {
    // b and c blocked on a's mutex 0; d blocked on c's mutex 1.
    let mut s = Inh::new();
    s.acquire('a', 0).unwrap();
    s.acquire('c', 1).unwrap();
    s.block_on('b', 0).unwrap();
    s.block_on('c', 0).unwrap();
    s.block_on('d', 1).unwrap();
    s.set_constraint('a', Some(50));
    s.set_constraint('b', Some(40));
    s.set_constraint('c', Some(60));
    s.set_constraint('d', Some(30));
    assert_eq!(s.effective('a'), Some(30));
    assert_eq!(s.effective('c'), Some(30));
    assert_eq!(s.effective('b'), Some(40));
    assert_eq!(s.effective('d'), Some(30));
    s.set_constraint('d', None);
    assert_eq!(s.effective('a'), Some(40));
    assert_eq!(s.effective('c'), Some(60));
    assert_eq!(s.effective('e'), None);
    assert_eq!(s.runs_for('d'), 'a');
}

#[test]
fn a_custom_comparator_decides_urgency() {
    // Larger is more urgent (a priority, not a deadline).
    let mut s: Inheritance<u32, u32, u32> = Inheritance::with_comparator(|a, b| b.cmp(a));
    s.acquire(1, 0).unwrap();
    s.block_on(2, 0).unwrap();
    s.set_constraint(1, Some(3));
    s.set_constraint(2, Some(9));
    assert_eq!(s.effective(1), Some(9));
}

#[test]
fn release_hands_off_in_fifo_order() {
    let mut s = Inh::new();
    s.acquire('a', 0).unwrap();
    for t in ['b', 'c', 'd'] {
        s.block_on(t, 0).unwrap();
    }
    assert_eq!(s.waiters(0), vec!['b', 'c', 'd']);
    assert_eq!(s.release('a', 0), Ok(Some('b')));
    assert_eq!(s.holder(0), Some('b'));
    assert!(!s.is_blocked('b'));
    assert_eq!(s.runs_for('d'), 'b');
    assert_eq!(s.release('b', 0), Ok(Some('c')));
    assert_eq!(s.release('c', 0), Ok(Some('d')));
    assert_eq!(s.release('d', 0), Ok(None));
    assert_eq!(s.holder(0), None);
    assert_eq!(s.release('d', 0), Err(InheritError::NotHolder));
}

#[test]
fn compression_is_invalidated_on_release() {
    // c -> (m2) a -> (m1) b
    let mut s = Inh::new();
    s.acquire('b', 1).unwrap();
    s.acquire('a', 2).unwrap();
    s.block_on('a', 1).unwrap();
    s.block_on('c', 2).unwrap();
    s.set_constraint('c', Some(5));
    assert_eq!(s.runs_for('c'), 'b'); // c's hint now names b
    assert_eq!(s.effective('b'), Some(5));
    assert_eq!(s.release('b', 1), Ok(Some('a')));
    // The hint naming b is gone: the chain now ends at a.
    assert_eq!(s.runs_for('c'), 'a');
    assert_eq!(s.effective('b'), None);
    assert_eq!(s.effective('a'), Some(5));
    // A hint naming a root that then blocks is short, not wrong.
    s.acquire('d', 3).unwrap();
    s.block_on('a', 3).unwrap();
    assert_eq!(s.runs_for('c'), 'd');
    assert_eq!(s.effective('d'), Some(5));
    // Released again: both c and a behind a's new mutex end at a.
    assert_eq!(s.release('d', 3), Ok(Some('a')));
    assert_eq!(s.runs_for('c'), 'a');
    assert_eq!(s.runs_for('a'), 'a');
}

#[test]
fn compression_is_invalidated_on_reply() {
    // x -> (m0) c -> (call) s
    let mut s = Inh::new();
    s.acquire('c', 0).unwrap();
    s.block_on('x', 0).unwrap();
    s.call('c', 's').unwrap();
    assert_eq!(s.runs_for('x'), 's');
    assert_eq!(s.reply('s'), Ok('c'));
    assert_eq!(s.runs_for('x'), 'c');
    assert_eq!(s.runs_for('c'), 'c');
}

#[test]
fn deadlock_cycles_are_refused() {
    let mut s = Inh::new();
    s.acquire('a', 0).unwrap();
    // Self-deadlock: blocking on a mutex one holds.
    assert_eq!(s.block_on('a', 0), Err(InheritError::Deadlock));
    assert_eq!(s.acquire('a', 0), Err(InheritError::Busy));
    // a -> b -> c -> back to a.
    s.acquire('b', 1).unwrap();
    s.acquire('c', 2).unwrap();
    s.block_on('a', 1).unwrap();
    s.block_on('b', 2).unwrap();
    assert_eq!(s.block_on('c', 0), Err(InheritError::Deadlock));
    assert!(!s.is_blocked('c'));
    assert_eq!(s.waiters(0), Vec::<char>::new());
    // Through an RPC: c calls s, s blocks on a mutex c's chain holds.
    s.call('c', 's').unwrap();
    assert_eq!(s.block_on('s', 0), Err(InheritError::Deadlock));
    assert_eq!(s.block_on('s', 2), Err(InheritError::Deadlock));
    // Blocked threads cannot act.
    assert_eq!(s.block_on('a', 2), Err(InheritError::Blocked));
    assert_eq!(s.release('c', 2), Err(InheritError::Blocked));
    assert_eq!(s.block_on('z', 9), Err(InheritError::NotHeld));
    assert_eq!(s.runs_for('a'), 's');
}

#[test]
fn rpc_servers_run_under_the_callers_activity() {
    let mut s = Inh::new();
    s.set_constraint('c', Some(10));
    s.set_constraint('s', Some(99));
    assert_eq!(s.activity_of('s'), 's');
    s.call('c', 's').unwrap();
    assert_eq!(s.waiting_for('c'), Some(Wait::Reply('s')));
    assert_eq!(s.activity_of('s'), 'c');
    assert_eq!(s.activity_of('c'), 'c');
    assert_eq!(s.effective('s'), Some(10));
    assert_eq!(s.runs_for('c'), 's');
    // Nested: s calls t; t runs for c's activity too.
    s.call('s', 't').unwrap();
    assert_eq!(s.activity_of('t'), 'c');
    assert_eq!(s.effective('t'), Some(10));
    assert_eq!(s.runs_for('c'), 't');
    assert_eq!(s.call('x', 't'), Err(InheritError::ServerBusy));
    assert_eq!(s.call('x', 's'), Err(InheritError::ServerBusy));
    assert_eq!(s.call('x', 'x'), Err(InheritError::SelfCall));
    assert_eq!(s.reply('s'), Err(InheritError::Blocked));
    assert_eq!(s.reply('t'), Ok('s'));
    assert_eq!(s.activity_of('t'), 't');
    assert_eq!(s.reply('s'), Ok('c'));
    assert_eq!(s.activity_of('s'), 's');
    assert_eq!(s.effective('s'), Some(99));
    assert_eq!(s.reply('s'), Err(InheritError::NotServing));
}

// ---------------------------------------------------------------------------
// Property test against a naive model.

/// Recomputes everything by walking chains; no caches.
#[derive(Default)]
struct Model {
    own: BTreeMap<u8, u8>,
    holder: BTreeMap<u8, u8>,
    waiters: BTreeMap<u8, VecDeque<u8>>,
    wait: BTreeMap<u8, Wait<u8, u8>>,
    client: BTreeMap<u8, u8>,
}

impl Model {
    fn next(&self, t: u8) -> Option<u8> {
        match *self.wait.get(&t)? {
            Wait::Mutex(m) => Some(self.holder[&m]),
            Wait::Reply(s) => Some(s),
        }
    }

    fn chain(&self, t: u8) -> Vec<u8> {
        let mut out = vec![t];
        let mut x = t;
        while let Some(n) = self.next(x) {
            assert!(out.len() <= 64, "cycle in the model");
            out.push(n);
            x = n;
        }
        out
    }

    fn runs_for(&self, t: u8) -> u8 {
        *self.chain(t).last().unwrap()
    }

    fn effective(&self, t: u8) -> Option<u8> {
        (0..THREADS)
            .filter(|&u| self.chain(u).contains(&t))
            .filter_map(|u| self.own.get(&u).copied())
            .min()
    }

    fn activity_of(&self, t: u8) -> u8 {
        let mut x = t;
        while let Some(&c) = self.client.get(&x) {
            x = c;
        }
        x
    }

    fn apply(&mut self, op: Op) -> Result<Option<u8>, InheritError> {
        let blocked = |m: &Model, t: u8| m.wait.contains_key(&t);
        match op {
            Op::Set(t, c) => {
                match c {
                    Some(c) => self.own.insert(t, c),
                    None => self.own.remove(&t),
                };
                Ok(None)
            }
            Op::Acquire(t, m) => {
                if blocked(self, t) {
                    return Err(InheritError::Blocked);
                }
                if self.holder.contains_key(&m) {
                    return Err(InheritError::Busy);
                }
                self.holder.insert(m, t);
                Ok(None)
            }
            Op::Block(t, m) => {
                if blocked(self, t) {
                    return Err(InheritError::Blocked);
                }
                let Some(&h) = self.holder.get(&m) else {
                    return Err(InheritError::NotHeld);
                };
                if self.chain(h).contains(&t) {
                    return Err(InheritError::Deadlock);
                }
                self.waiters.entry(m).or_default().push_back(t);
                self.wait.insert(t, Wait::Mutex(m));
                Ok(None)
            }
            Op::Release(t, m) => {
                if blocked(self, t) {
                    return Err(InheritError::Blocked);
                }
                if self.holder.get(&m) != Some(&t) {
                    return Err(InheritError::NotHolder);
                }
                match self.waiters.entry(m).or_default().pop_front() {
                    None => {
                        self.holder.remove(&m);
                        Ok(None)
                    }
                    Some(w) => {
                        self.holder.insert(m, w);
                        self.wait.remove(&w);
                        Ok(Some(w))
                    }
                }
            }
            Op::Call(c, s) => {
                if c == s {
                    return Err(InheritError::SelfCall);
                }
                if blocked(self, c) {
                    return Err(InheritError::Blocked);
                }
                if blocked(self, s) || self.client.contains_key(&s) {
                    return Err(InheritError::ServerBusy);
                }
                self.client.insert(s, c);
                self.wait.insert(c, Wait::Reply(s));
                Ok(None)
            }
            Op::Reply(s) => {
                let Some(&c) = self.client.get(&s) else {
                    return Err(InheritError::NotServing);
                };
                if blocked(self, s) {
                    return Err(InheritError::Blocked);
                }
                self.client.remove(&s);
                self.wait.remove(&c);
                Ok(Some(c))
            }
            Op::ReleaseTo(t, m, to) => {
                if blocked(self, t) {
                    return Err(InheritError::Blocked);
                }
                if self.holder.get(&m) != Some(&t) {
                    return Err(InheritError::NotHolder);
                }
                let q = self.waiters.entry(m).or_default();
                match q.iter().position(|&w| w == to) {
                    Some(i) => {
                        q.remove(i);
                        self.holder.insert(m, to);
                        self.wait.remove(&to);
                        Ok(Some(to))
                    }
                    None => {
                        for w in std::mem::take(q) {
                            self.wait.remove(&w);
                        }
                        self.holder.remove(&m);
                        Ok(None)
                    }
                }
            }
            Op::Remove(t) => {
                match self.wait.remove(&t) {
                    Some(Wait::Mutex(m)) => self.waiters.entry(m).or_default().retain(|&w| w != t),
                    Some(Wait::Reply(s)) => {
                        self.client.remove(&s);
                    }
                    None => {}
                }
                let held: Vec<u8> = self
                    .holder
                    .iter()
                    .filter(|&(_, &h)| h == t)
                    .map(|(&m, _)| m)
                    .collect();
                for m in held {
                    self.holder.remove(&m);
                    for w in self.waiters.remove(&m).unwrap_or_default() {
                        self.wait.remove(&w);
                    }
                }
                if let Some(c) = self.client.remove(&t) {
                    self.wait.remove(&c);
                }
                self.own.remove(&t);
                Ok(None)
            }
            Op::Query(t) => Ok(Some(self.runs_for(t))),
        }
    }
}

const THREADS: u8 = 6;
const MUTEXES: u8 = 4;

#[derive(Clone, Copy, Debug)]
enum Op {
    Set(u8, Option<u8>),
    Acquire(u8, u8),
    Block(u8, u8),
    Release(u8, u8),
    Call(u8, u8),
    Reply(u8),
    /// `release_to`: the platform hands the mutex to a thread of its choice.
    ReleaseTo(u8, u8, u8),
    /// The thread leaves.
    Remove(u8),
    /// `runs_for` on one thread only: leaves partial compressed paths.
    Query(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let t = || 0..THREADS;
    let m = || 0..MUTEXES;
    prop_oneof![
        2 => (t(), proptest::option::of(0u8..20)).prop_map(|(t, c)| Op::Set(t, c)),
        3 => (t(), m()).prop_map(|(t, m)| Op::Acquire(t, m)),
        4 => (t(), m()).prop_map(|(t, m)| Op::Block(t, m)),
        3 => (t(), m()).prop_map(|(t, m)| Op::Release(t, m)),
        1 => (t(), t()).prop_map(|(c, s)| Op::Call(c, s)),
        1 => t().prop_map(Op::Reply),
        2 => (t(), m(), t()).prop_map(|(t, m, to)| Op::ReleaseTo(t, m, to)),
        1 => t().prop_map(Op::Remove),
        3 => t().prop_map(Op::Query),
    ]
}

fn apply(s: &mut Inheritance<u8, u8, u8>, op: Op) -> Result<Option<u8>, InheritError> {
    match op {
        Op::Set(t, c) => {
            s.set_constraint(t, c);
            Ok(None)
        }
        Op::Acquire(t, m) => s.acquire(t, m).map(|()| None),
        Op::Block(t, m) => s.block_on(t, m).map(|()| None),
        Op::Release(t, m) => s.release(t, m),
        Op::Call(c, srv) => s.call(c, srv).map(|()| None),
        Op::Reply(srv) => s.reply(srv).map(Some),
        Op::ReleaseTo(t, m, to) => s.release_to(t, m, Some(to)),
        Op::Remove(t) => {
            s.remove(t);
            Ok(None)
        }
        Op::Query(t) => Ok(Some(s.runs_for(t))),
    }
}

/// Runs `ops` on both; compares every answer, and either every thread's
/// state after every operation (`check_all`) or only at the end (so that
/// stale partial compressions survive across many mutations).
fn run(ops: &[Op], check_all: bool) -> Result<(), TestCaseError> {
    let mut s: Inheritance<u8, u8, u8> = Inheritance::new();
    let mut model = Model::default();
    for (i, &op) in ops.iter().enumerate() {
        let got = apply(&mut s, op);
        let want = model.apply(op);
        prop_assert_eq!(got, want, "op {} {:?}", i, op);
        prop_assert_eq!(s.check(), Ok(()), "op {} {:?}", i, op);
        if check_all || i + 1 == ops.len() {
            for t in 0..THREADS {
                prop_assert_eq!(s.effective(t), model.effective(t), "effective {}", t);
                prop_assert_eq!(s.runs_for(t), model.runs_for(t), "runs_for {}", t);
                prop_assert_eq!(s.activity_of(t), model.activity_of(t));
                prop_assert_eq!(s.waiting_for(t), model.wait.get(&t).copied());
            }
            for m in 0..MUTEXES {
                prop_assert_eq!(s.holder(m), model.holder.get(&m).copied());
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn matches_the_naive_model_after_every_op(
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        run(&ops, true)?;
    }

    #[test]
    fn matches_the_naive_model_with_partial_queries(
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        run(&ops, false)?;
    }
}
