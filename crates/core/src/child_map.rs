//! [`ChildMap`]: a policy's per-child state, keyed by [`ChildId`].
//!
//! Child ids are local to a scheduler instance and dense (the dispatcher hands
//! out the lowest free index at `register_vp`), so the state is best kept in a
//! `Vec` indexed by the id. `ChildMap` is that `Vec<Option<T>>` with a map's
//! interface, so that a policy does not repeat the bookkeeping (growing it at
//! `register_vp`, clearing a slot at `unregister_vp`, unwrapping on lookup):
//!
//! ```
//! use hsched_core::{ChildId, ChildMap};
//!
//! let mut children = ChildMap::new();
//! children.insert(ChildId(2), "idle"); // register_vp
//! children[ChildId(2)] = "waiting"; // panics if child2 has no entry
//! assert_eq!(children.get(ChildId(0)), None);
//! assert_eq!(children.remove(ChildId(2)), Some("waiting")); // unregister_vp
//! assert!(children.is_empty());
//! ```
//!
//! Lookups, inserts and removes are O(1) (an insert may grow the `Vec`);
//! memory is proportional to the highest id ever inserted, which with dense
//! ids is the most children registered at once. Iteration is in id order,
//! so it is deterministic.

use crate::ids::ChildId;
use std::fmt;
use std::ops::{Index, IndexMut};

/// Dense storage of one `T` per registered child, keyed by [`ChildId`]. See
/// the [module documentation](self).
///
/// Indexing (`map[child]`) panics, naming the child, if it has no entry: use
/// it where the protocol guarantees the child is registered, and
/// [`get`](ChildMap::get) where it may not be.
#[derive(Clone)]
pub struct ChildMap<T> {
    /// Slot `i` holds the value of `ChildId(i)`, `None` if there is none.
    slots: Vec<Option<T>>,
    /// The number of `Some` slots.
    len: usize,
}

impl<T> ChildMap<T> {
    /// An empty map. Does not allocate until the first insert.
    #[inline]
    pub const fn new() -> Self {
        ChildMap {
            slots: Vec::new(),
            len: 0,
        }
    }

    /// Stores `value` for `child`, growing the storage if needed. Returns
    /// the value it replaces, if `child` had one.
    #[inline]
    pub fn insert(&mut self, child: ChildId, value: T) -> Option<T> {
        let i = child.index();
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        let old = self.slots[i].replace(value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Removes `child`'s entry and returns its value, `None` if it had none.
    /// The storage keeps its size, ready for the id to be reused.
    #[inline]
    pub fn remove(&mut self, child: ChildId) -> Option<T> {
        let old = self.slots.get_mut(child.index())?.take();
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    /// `child`'s value, if it has one.
    #[inline]
    pub fn get(&self, child: ChildId) -> Option<&T> {
        self.slots.get(child.index())?.as_ref()
    }

    /// `child`'s value, mutably, if it has one.
    #[inline]
    pub fn get_mut(&mut self, child: ChildId) -> Option<&mut T> {
        self.slots.get_mut(child.index())?.as_mut()
    }

    /// Whether `child` has an entry.
    #[inline]
    pub fn contains(&self, child: ChildId) -> bool {
        self.get(child).is_some()
    }

    /// How many children have an entry (not the size of the storage). O(1).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no child has an entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries in `ChildId` order. O(highest id), not O(len).
    pub fn iter(&self) -> impl Iterator<Item = (ChildId, &T)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| Some((ChildId(i as u32), slot.as_ref()?)))
    }

    /// The entries in `ChildId` order, values mutable. O(highest id).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ChildId, &mut T)> + '_ {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, slot)| Some((ChildId(i as u32), slot.as_mut()?)))
    }
}

/// Not derived: that would require `T: Default`.
impl<T> Default for ChildMap<T> {
    #[inline]
    fn default() -> Self {
        ChildMap::new()
    }
}

/// Prints the entries as a map, `{ChildId(0): .., ChildId(3): ..}`.
impl<T: fmt::Debug> fmt::Debug for ChildMap<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<T> Index<ChildId> for ChildMap<T> {
    type Output = T;

    /// `child`'s value. Panics, naming `child`, if it has none.
    #[inline]
    #[track_caller]
    fn index(&self, child: ChildId) -> &T {
        match self.get(child) {
            Some(value) => value,
            None => absent(child),
        }
    }
}

impl<T> IndexMut<ChildId> for ChildMap<T> {
    /// `child`'s value, mutably. Panics, naming `child`, if it has none.
    #[inline]
    #[track_caller]
    fn index_mut(&mut self, child: ChildId) -> &mut T {
        match self.get_mut(child) {
            Some(value) => value,
            None => absent(child),
        }
    }
}

/// The panic of a failed index, kept out of line so the lookup stays small.
#[cold]
#[inline(never)]
#[track_caller]
fn absent(child: ChildId) -> ! {
    panic!("{child} has no entry in this ChildMap (not registered, or already unregistered)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn insert_get_remove() {
        let mut m = ChildMap::new();
        assert!(m.is_empty());
        assert_eq!(m.insert(ChildId(3), 'a'), None);
        assert_eq!(m.len(), 1);
        assert_eq!(m.get(ChildId(3)), Some(&'a'));
        assert_eq!(m.get(ChildId(0)), None, "below the highest id");
        assert_eq!(m.get(ChildId(9)), None, "past the storage");
        assert!(m.contains(ChildId(3)) && !m.contains(ChildId(2)));
        assert_eq!(m.insert(ChildId(3), 'b'), Some('a'), "replaces");
        assert_eq!(m.len(), 1);
        *m.get_mut(ChildId(3)).unwrap() = 'c';
        m[ChildId(3)] = 'd';
        assert_eq!(m[ChildId(3)], 'd');
        assert_eq!(m.remove(ChildId(3)), Some('d'));
        assert_eq!(m.remove(ChildId(3)), None, "already gone");
        assert_eq!(m.remove(ChildId(1_000)), None, "never there");
        assert!(m.is_empty());
        assert_eq!(m.insert(ChildId(3), 'e'), None, "the id is reused");
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn iterates_in_id_order() {
        let mut m = ChildMap::default();
        for i in [5, 0, 2] {
            m.insert(ChildId(i), i * 10);
        }
        m.remove(ChildId(2));
        let all: Vec<_> = m.iter().map(|(c, &v)| (c, v)).collect();
        assert_eq!(all, vec![(ChildId(0), 0), (ChildId(5), 50)]);
        for (c, v) in m.iter_mut() {
            *v += c.0;
        }
        assert_eq!(m[ChildId(5)], 55);
        assert_eq!(format!("{m:?}"), "{ChildId(0): 0, ChildId(5): 55}");
    }

    #[test]
    #[should_panic(expected = "child7 has no entry")]
    fn indexing_an_absent_child_names_it() {
        let mut m = ChildMap::new();
        m.insert(ChildId(9), ());
        let _ = &m[ChildId(7)];
    }

    #[test]
    #[should_panic(expected = "child4 has no entry")]
    fn indexing_mutably_past_the_storage_names_the_child() {
        let mut m: ChildMap<u8> = ChildMap::new();
        m[ChildId(4)] = 1;
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u32, u16),
        Remove(u32),
        Modify(u32, u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct ids, so that inserts, replaces and removes collide.
        let id = 0u32..40;
        prop_oneof![
            (id.clone(), any::<u16>()).prop_map(|(c, v)| Op::Insert(c, v)),
            id.clone().prop_map(Op::Remove),
            (id, any::<u16>()).prop_map(|(c, v)| Op::Modify(c, v)),
        ]
    }

    proptest! {
        #[test]
        fn behaves_like_a_btreemap(ops in proptest::collection::vec(op(), 0..200)) {
            let mut map = ChildMap::new();
            let mut model: BTreeMap<u32, u16> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(c, v) => {
                        prop_assert_eq!(map.insert(ChildId(c), v), model.insert(c, v));
                    }
                    Op::Remove(c) => {
                        prop_assert_eq!(map.remove(ChildId(c)), model.remove(&c));
                    }
                    Op::Modify(c, v) => {
                        prop_assert_eq!(map.get_mut(ChildId(c)).is_some(), model.contains_key(&c));
                        if let Some(x) = map.get_mut(ChildId(c)) {
                            *x = v;
                            model.insert(c, v);
                        }
                    }
                }
                prop_assert_eq!(map.len(), model.len());
                prop_assert_eq!(map.is_empty(), model.is_empty());
                for c in 0..45 {
                    prop_assert_eq!(map.get(ChildId(c)), model.get(&c));
                    prop_assert_eq!(map.contains(ChildId(c)), model.contains_key(&c));
                }
                for (&c, v) in &model {
                    prop_assert_eq!(&map[ChildId(c)], v);
                }
                let listed: Vec<(u32, u16)> = map.iter().map(|(c, &v)| (c.0, v)).collect();
                let expected: Vec<(u32, u16)> = model.iter().map(|(&c, &v)| (c, v)).collect();
                prop_assert_eq!(listed, expected);
            }
            // iter_mut visits the same entries, in the same order.
            let keys: Vec<u32> = map.iter_mut().map(|(c, v)| { *v = v.wrapping_add(1); c.0 }).collect();
            prop_assert_eq!(keys, model.keys().copied().collect::<Vec<_>>());
            for (&c, &v) in &model {
                prop_assert_eq!(map[ChildId(c)], v.wrapping_add(1));
            }
        }
    }
}
