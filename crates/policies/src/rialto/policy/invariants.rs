//! The `rialto` policy's consistency check (`check_invariants`): the
//! children against the VPs' slots and the counts, activities against
//! their threads, names and placements, each graph VP's reservations and
//! constraint book, the accounting, the inheritance book, the calls and
//! the queues.

use std::collections::BTreeMap;

use hsched_core::ParentVp;

use super::super::place::Multiprocessor;
use super::state::{Activity, Rialto, State, Tier};

impl Rialto {
    /// Everything `check_invariants` checks.
    pub(super) fn check_state(&self) -> Result<(), String> {
        let mut runnable = 0;
        let mut members: BTreeMap<Activity, u32> = BTreeMap::new();
        for (id, c) in self.children.iter() {
            *members.entry(c.activity).or_default() += 1;
            match c.state {
                State::Idle => {}
                State::Waiting => runnable += 1,
                State::Running(vp) => {
                    runnable += 1;
                    match self.on_vp.get(vp.index()).copied().flatten() {
                        Some(s) if s.child == id => {}
                        other => {
                            return Err(format!("{id} runs on {vp} but the slot holds {other:?}"))
                        }
                    }
                }
            }
        }
        if runnable != self.runnable {
            return Err(format!(
                "runnable count {} but {runnable} children are runnable",
                self.runnable
            ));
        }
        for (i, slot) in self.on_vp.iter().enumerate() {
            if let Some(s) = slot {
                let ok = self
                    .children
                    .get(s.child)
                    .is_some_and(|c| c.state == State::Running(ParentVp(i as u32)));
                if !ok {
                    return Err(format!(
                        "slot of vp{i} names {} which does not run there",
                        s.child
                    ));
                }
                if !self.follows_graph(i) && s.tier != Tier::Free {
                    return Err(format!("vp{i} follows no graph but runs {:?}", s.tier));
                }
            }
        }
        let counted: BTreeMap<Activity, u32> =
            self.acts.iter().map(|(&a, act)| (a, act.members)).collect();
        if members != counted {
            return Err(format!(
                "activity members {counted:?} do not match the children {members:?}"
            ));
        }
        if self.mode == Multiprocessor::One && self.cpus.len() != 1 {
            return Err(format!("{} graphs in mode one", self.cpus.len()));
        }
        for (v, cpu) in self.cpus.iter().enumerate() {
            for (a, _) in cpu.book.graph().grants() {
                match self.acts.get(&a) {
                    None => {
                        return Err(format!(
                            "activity {a} holds a reservation on vp{v} but has no thread"
                        ))
                    }
                    Some(act) if act.vp.unwrap_or(0) != v => {
                        return Err(format!(
                            "activity {a} holds a reservation on vp{v} but is placed on {:?}",
                            act.vp
                        ))
                    }
                    Some(_) => {}
                }
            }
            for info in cpu.book.open() {
                if self
                    .children
                    .get(info.thread)
                    .map(|c| self.home(c.activity))
                    != Some(v)
                {
                    return Err(format!(
                        "constraint {} is in vp{v}'s book but its thread's activity is not there",
                        info.id
                    ));
                }
            }
            cpu.book.graph().check_invariants()?;
            cpu.book.check_invariants()?;
        }
        for (&a, act) in &self.acts {
            match act.vp {
                Some(_) if self.mode == Multiprocessor::One => {
                    return Err(format!("activity {a} is placed in mode one"))
                }
                Some(v) if v >= self.cpus.len() => {
                    return Err(format!(
                        "activity {a} is placed on vp{v}, which has no graph"
                    ))
                }
                _ => {}
            }
        }
        for (name, a) in &self.names {
            if self.acts.get(a).and_then(|act| act.name.as_ref()) != Some(name) {
                return Err(format!("activity {name} ({a}) is named but has no thread"));
            }
        }
        if self.acts.values().filter(|act| act.name.is_some()).count() != self.names.len() {
            return Err("an activity's name is not indexed".into());
        }
        for info in self.cpus.iter().flat_map(|c| c.book.open()) {
            match self.children.get(info.thread) {
                Some(c) if c.activity == info.activity => {}
                _ => {
                    return Err(format!(
                        "constraint {} belongs to {} which is not attached with activity {}",
                        info.id, info.thread, info.activity
                    ))
                }
            }
            if !self.served.contains_key(&info.id) {
                return Err(format!("constraint {} has no accounting", info.id));
            }
        }
        for a in self.second.keys() {
            if !self.acts.contains_key(a) {
                return Err(format!("activity {a} is queued but has no thread"));
            }
        }
        for child in self.denied.keys() {
            if !self.children.contains(*child) {
                return Err(format!("{child} has denied constraints but left"));
            }
        }
        for (id, c) in self.children.iter() {
            if self.by_serial.get(&c.serial) != Some(&id) {
                return Err(format!("{id}'s serial {} is not indexed", c.serial));
            }
            for &m in &c.holds {
                if self.inherit.holder(m) != Some(c.serial) {
                    return Err(format!("{id} thinks it holds {m}"));
                }
            }
        }
        self.inherit.check()?;
        if self.by_serial.len() != self.children.iter().count() {
            return Err("serial index names threads that left".into());
        }
        self.check_calls()?;
        let open: usize = self.cpus.iter().map(|c| c.book.open().count()).sum();
        if self.served.len() != open {
            return Err("accounting kept for a closed constraint".into());
        }
        self.check_queues()
    }
}
