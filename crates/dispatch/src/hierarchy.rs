//! Changing the hierarchy while threads run: create, attach, detach,
//! destroy, eject; threads join, move and leave.
//!
//! The rule that keeps this safe: no thread is ever lost. A thread whose
//! scheduler goes away (destroyed, or ejected, or cut off from the root by
//! an ejection) returns to the default scheduler, keeping its state: a
//! runnable thread is runnable there at once. A scheduler an unload leaves
//! with no parent is attached, with everything below it, under the default
//! scheduler (the root, when the default is below it). If the default scheduler itself goes
//! away, a fresh `rr` (the registry's [`Fallback`] `shared` policy) takes
//! its place under a fixed-priority `machine` root (`Fallback::machine`,
//! `fp`) that gives the old hierarchy precedence, as Vassal lets the native
//! scheduler run whatever the loaded one leaves. A thread the default
//! scheduler refuses (an admission test, e.g. `frc`'s classes) goes to an
//! `rr` named `fallback`, placed the same way below the hierarchy: it runs
//! on what the hierarchy leaves, and the log says so.
//!
//! [`Fallback`]: hsched_core::Fallback

use crate::dispatcher::{Dispatcher, Platform};
use crate::table::{ChildRef, Hop, Inst, Link, Thr};
use hsched_core::{
    ChildId, Cx, Instant, Params, ParentVp, PolicyInfo, SchedId, Scheduler, ThreadId, Value,
    VpState,
};
use hsched_model::guard::Change;
use hsched_model::{LogKind, NodeResult};
use std::collections::{BinaryHeap, HashMap};

/// One attachment of an instance under a parent.
#[derive(Clone, Debug)]
pub struct AttachLink {
    pub parent: SchedId,
    /// VPs registered with that parent.
    pub vps: u32,
    /// Attachment parameters, checked against the parent's child parameters.
    pub params: Params,
}

impl Dispatcher {
    /// Creates an instance of `policy` with `vps` virtual processors,
    /// detached. Calls `init`.
    pub fn create(
        &mut self,
        name: &str,
        policy: &str,
        params: &Params,
        vps: u32,
    ) -> Result<SchedId, String> {
        let info = self.registry.get(policy)?;
        self.create_from(name, info, params, vps)
    }

    /// Creates an instance of `info` (see [`Dispatcher::create`]).
    fn create_from(
        &mut self,
        name: &str,
        info: &'static PolicyInfo,
        params: &Params,
        vps: u32,
    ) -> Result<SchedId, String> {
        let instance = info
            .instantiate(params)
            .map_err(|e| format!("scheduler `{name}` ({}): {e}", info.name))?;
        self.create_with(name, info, instance, vps)
    }

    /// Makes a policy that is not in the registry the dispatcher was given
    /// available to `create` by name (a plugin loaded while running). The
    /// names already there win.
    pub fn add_policy(&mut self, info: &'static PolicyInfo) {
        self.registry.add(info);
    }

    /// Creates an instance from a policy object built elsewhere (a policy
    /// that is not in the registry: a plugin, a test double). `info`
    /// describes it.
    pub fn create_with(
        &mut self,
        name: &str,
        info: &'static PolicyInfo,
        instance: Box<dyn Scheduler>,
        vps: u32,
    ) -> Result<SchedId, String> {
        if self.sched_by_name(name).is_some() {
            return Err(format!("a scheduler named `{name}` already exists"));
        }
        if vps == 0 {
            return Err(format!("scheduler `{name}` needs at least one VP"));
        }
        let id = SchedId(self.scheds.len() as u32);
        self.scheds.push(Some(Inst {
            name: name.to_string(),
            policy: instance,
            info,
            child_specs: (info.child_params)(),
            vps: vec![VpState::Idle; vps as usize],
            links: vec![None; vps as usize],
            children: Vec::new(),
            free_children: BinaryHeap::new(),
            live_children: 0,
            timers: HashMap::new(),
            reschedules: 0,
            reschedules_event: 0,
        }));
        self.nodes.push(NodeResult {
            name: name.to_string(),
            policy: info.name.to_string(),
            received: Default::default(),
            alive: true,
            // The analysis's label, if any, is the caller's to fill in.
            ..Default::default()
        });
        self.call(id, |s, cx| s.init(cx));
        Ok(id)
    }

    /// Creates the root: an instance holding one VP per physical CPU.
    pub fn create_root(
        &mut self,
        name: &str,
        policy: &str,
        params: &Params,
    ) -> Result<SchedId, String> {
        self.no_root_yet()?;
        let s = self.create(name, policy, params, self.cfg.cpus)?;
        self.install_root(s);
        Ok(s)
    }

    fn no_root_yet(&self) -> Result<(), String> {
        match self.root {
            Some(r) => Err(format!("there is already a root, `{}`", self.sched_name(r))),
            None => Ok(()),
        }
    }

    /// Creates the root from a policy object built elsewhere (see
    /// [`Dispatcher::create_with`]).
    pub fn create_root_with(
        &mut self,
        name: &str,
        info: &'static PolicyInfo,
        instance: Box<dyn Scheduler>,
    ) -> Result<SchedId, String> {
        self.no_root_yet()?;
        let s = self.create_with(name, info, instance, self.cfg.cpus)?;
        self.install_root(s);
        Ok(s)
    }

    fn install_root(&mut self, s: SchedId) {
        self.root = Some(s);
        let cpus = self.cfg.cpus;
        let inst = self.inst_mut(s).unwrap();
        inst.vps = (0..cpus)
            .map(|c| VpState::Held(hsched_core::CpuId(c)))
            .collect();
        inst.links = vec![None; cpus as usize];
        for cpu in 0..cpus as usize {
            self.cpus[cpu].path.clear();
            self.cpus[cpu].path.push(Hop {
                sched: s,
                vp: ParentVp(cpu as u32),
                child: None,
                until: Instant::NEVER,
            });
            self.mark_dirty(cpu, 0);
        }
    }

    /// Names the scheduler threads return to.
    pub fn set_default(&mut self, s: SchedId) {
        self.default = Some(s);
    }

    /// Attaches a detached instance under its parents. Admission happens at
    /// each parent (`register_vp`); if any refuses, nothing is attached and
    /// the refusal is returned. VPs that want a CPU are requested at once.
    pub fn attach(
        &mut self,
        p: &mut dyn Platform,
        now: Instant,
        s: SchedId,
        links: &[AttachLink],
    ) -> Result<(), String> {
        self.set_now(now);
        let r = self.attach_inner(s, links);
        self.settle(p);
        r
    }

    pub(crate) fn attach_inner(&mut self, s: SchedId, links: &[AttachLink]) -> Result<(), String> {
        let inst = self.inst(s).ok_or_else(|| format!("no scheduler {s}"))?;
        let name = inst.name.clone();
        if Some(s) == self.root {
            return Err(format!("`{name}` is the root; it has no parents"));
        }
        if inst.links.iter().any(|l| l.is_some()) {
            return Err(format!("`{name}` is already attached; detach it first"));
        }
        let total: u32 = links.iter().map(|l| l.vps).sum();
        if total as usize != inst.vps.len() {
            return Err(format!(
                "`{name}` has {} VPs but the links give {total}",
                inst.vps.len()
            ));
        }
        if links.len() as u32 > inst.info.max_parents {
            return Err(format!(
                "`{name}` ({}) takes at most {} parent(s), got {}",
                inst.info.name,
                inst.info.max_parents,
                links.len()
            ));
        }
        // Check everything before registering anything.
        let mut resolved = Vec::new();
        for l in links {
            let parent = self
                .inst(l.parent)
                .ok_or_else(|| format!("parent {} does not exist", l.parent))?;
            if l.parent == s || self.is_descendant(l.parent, s) {
                return Err(format!(
                    "attaching `{name}` under `{}` would make a cycle",
                    parent.name
                ));
            }
            let params = l
                .params
                .resolve(&parent.child_specs)
                .map_err(|e| format!("attaching `{name}` under `{}`: {e}", parent.name))?;
            resolved.push(params);
        }
        let mut done: Vec<Link> = Vec::new();
        let mut vp = 0u32;
        for (l, params) in links.iter().zip(&resolved) {
            for _ in 0..l.vps {
                match self.register(l.parent, ChildRef::Vp(s, ParentVp(vp)), params) {
                    Ok(child) => {
                        let link = Link {
                            parent: l.parent,
                            child,
                        };
                        self.inst_mut(s).unwrap().links[vp as usize] = Some(link);
                        done.push(link);
                    }
                    Err(e) => {
                        for (i, link) in done.iter().enumerate() {
                            self.unregister(*link);
                            self.inst_mut(s).unwrap().links[i] = None;
                        }
                        return Err(format!(
                            "`{}` refused `{name}`: {e}",
                            self.sched_name(l.parent)
                        ));
                    }
                }
                vp += 1;
            }
        }
        // VPs that already wanted a CPU ask their new parents now.
        let inst = self.inst(s).unwrap();
        let wanting: Vec<Link> = inst
            .vps
            .iter()
            .zip(&inst.links)
            .filter(|(v, _)| **v == VpState::Requesting)
            .filter_map(|(_, l)| *l)
            .collect();
        for link in wanting {
            self.deliver_request(link);
        }
        Ok(())
    }

    /// Whether `x` is below `ancestor` in the hierarchy.
    fn is_descendant(&self, x: SchedId, ancestor: SchedId) -> bool {
        let mut stack = vec![x];
        let mut seen = vec![false; self.scheds.len()];
        while let Some(s) = stack.pop() {
            if s == ancestor {
                return true;
            }
            if std::mem::replace(&mut seen[s.index()], true) {
                continue;
            }
            if let Some(inst) = self.inst(s) {
                stack.extend(inst.links.iter().flatten().map(|l| l.parent));
            }
        }
        false
    }

    /// Registers a child at `parent` (admission). Attachment parameters must
    /// be resolved already.
    fn register(
        &mut self,
        parent: SchedId,
        what: ChildRef,
        params: &Params,
    ) -> Result<ChildId, String> {
        let inst = self.inst_mut(parent).ok_or("the parent is gone")?;
        if inst.live_children >= inst.info.max_children {
            return Err(format!(
                "{} takes at most {} child(ren)",
                inst.info.name, inst.info.max_children
            ));
        }
        let child = inst.alloc_child(what);
        match self.call(parent, |s, cx| s.register_vp(cx, child, params)) {
            Some(Ok(())) => Ok(child),
            Some(Err(reject)) => {
                if let Some(inst) = self.inst_mut(parent) {
                    inst.free_child(child);
                }
                Err(reject.0)
            }
            None => Err("the parent was ejected".into()),
        }
    }

    /// Removes a child from its parent (`unregister_vp`), re-deciding the CPU
    /// it was running on.
    fn unregister(&mut self, link: Link) {
        let Some(kid) = self
            .inst(link.parent)
            .and_then(|i| i.kid(link.child))
            .copied()
        else {
            return;
        };
        if let Some(cpu) = kid.running {
            self.end_segment(cpu.index());
            let depth = self.cpus[cpu.index()]
                .path
                .iter()
                .position(|h| h.sched == link.parent)
                .expect("a running child's parent is on the CPU path");
            self.unwind_below(cpu.index(), depth);
            self.mark_dirty(cpu.index(), depth);
        }
        self.inst_mut(link.parent).unwrap().free_child(link.child);
        self.call(link.parent, |s, cx| s.unregister_vp(cx, link.child));
    }

    /// Detaches an instance from all its parents. It keeps its children and
    /// their state but receives no CPU until attached again.
    pub fn detach(&mut self, p: &mut dyn Platform, now: Instant, s: SchedId) -> Result<(), String> {
        self.set_now(now);
        if Some(s) == self.root {
            return Err("the root cannot be detached".into());
        }
        let inst = self.inst(s).ok_or_else(|| format!("no scheduler {s}"))?;
        let links: Vec<(usize, Link)> = inst
            .links
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.map(|l| (i, l)))
            .collect();
        for (vp, link) in links {
            if let VpState::Held(cpu) = self.inst(s).unwrap().vps[vp] {
                // Take the CPU back below the parent's grant first.
                self.end_segment(cpu.index());
                if let Some(depth) = self.cpus[cpu.index()]
                    .path
                    .iter()
                    .position(|h| h.sched == s)
                {
                    self.unwind_below(cpu.index(), depth - 1);
                    self.mark_dirty(cpu.index(), depth - 1);
                }
            }
            let inst = self.inst_mut(s).unwrap();
            inst.links[vp] = None;
            if inst.vps[vp] != VpState::Idle {
                inst.vps[vp] = VpState::Requesting;
            }
            self.unregister(link);
        }
        self.settle(p);
        Ok(())
    }

    /// Destroys an instance in an orderly way (`deinit` is called). Its
    /// threads return to the default scheduler; child schedulers lose this
    /// parent, and one left with none is attached, with its children, under
    /// the default scheduler (the root, when the default is below it).
    pub fn destroy(
        &mut self,
        p: &mut dyn Platform,
        now: Instant,
        s: SchedId,
    ) -> Result<(), String> {
        self.set_now(now);
        if self.inst(s).is_none() {
            return Err(format!("no scheduler {s}"));
        }
        self.remove_tree(s, true);
        self.settle(p);
        Ok(())
    }

    /// Ejects a scheduler that broke the protocol: logged with the reason,
    /// removed without further calls to it, its threads sent to the default.
    pub(crate) fn eject(&mut self, s: SchedId, why: String) {
        let Some(inst) = self.inst(s) else { return };
        if self.removing.contains(&s) {
            return;
        }
        let name = inst.name.clone();
        let text = format!("ejected `{name}` ({}): {why}", inst.info.name);
        self.record(LogKind::Eject, text);
        self.remove_tree(s, false);
        self.applied(self.now, &Change::Ejected { scheduler: &name });
    }

    /// Removes `s` and every instance left without a parent because of it;
    /// re-homes their threads afterwards.
    fn remove_tree(&mut self, s: SchedId, orderly: bool) {
        let mut orphans = Vec::new();
        let mut adrift = Vec::new();
        let gone = self.nodes[s.index()].name.clone();
        self.remove_one(s, orderly, &mut orphans, &mut adrift);
        if !orderly {
            self.ejected_threads.extend_from_slice(&orphans);
        }
        self.ensure_default();
        for c in adrift {
            let place = self.home_scheduler_in_default(c);
            let name = self.sched_name(c).to_string();
            self.record(
                LogKind::Moved,
                format!("scheduler `{name}` lost its last parent with `{gone}`: {place}"),
            );
        }
        for t in orphans {
            let name = self.threads[t.index()].name.clone();
            let place = self.home_in_default(t);
            self.record(
                LogKind::Moved,
                format!("thread `{name}` returned to {place}"),
            );
        }
    }

    /// Attaches a thread that has no scheduler to the default one, or to
    /// the fallback when the default refuses it (see the module
    /// documentation), runnable there at once if it was. Says where it went
    /// (and why, for the fallback), for the log.
    fn home_in_default(&mut self, t: ThreadId) -> String {
        self.ensure_default();
        let default = self.default.expect("ensure_default made one");
        let refused = match self.register(default, ChildRef::Thread(t), &self.default_params()) {
            Ok(child) => {
                self.rehome_runnable(
                    t,
                    Link {
                        parent: default,
                        child,
                    },
                );
                return "the default scheduler".to_string();
            }
            Err(e) => e,
        };
        format!(
            "{}, since the default scheduler `{}` refused it: {refused}",
            self.home_in_fallback(t),
            self.sched_name(default)
        )
    }

    /// Attaches a thread the default scheduler refused to the fallback
    /// (made the first time it is needed); says where it went.
    fn home_in_fallback(&mut self, t: ThreadId) -> String {
        let fallback = match self.fallback.filter(|&f| self.inst(f).is_some()) {
            Some(f) => f,
            None => {
                let f = self.add_below_hierarchy("fallback");
                self.fallback = Some(f);
                f
            }
        };
        let child = self
            .register(fallback, ChildRef::Thread(t), &Params::new())
            .expect("the fallback policy admits every thread");
        self.rehome_runnable(
            t,
            Link {
                parent: fallback,
                child,
            },
        );
        format!(
            "`{}` ({}, below the hierarchy: it runs on the time the hierarchy leaves)",
            self.sched_name(fallback),
            self.registry.fallback().shared.name
        )
    }

    /// Attaches a scheduler an unload left with no parent, with its
    /// children and threads, as a thread would go: under the default
    /// scheduler, or under the root when the default is below it (or is
    /// it). Says where it went, for the log; one that can go nowhere stays
    /// detached, and that is said.
    fn home_scheduler_in_default(&mut self, c: SchedId) -> String {
        let vps = self.inst(c).map_or(1, |i| i.vps.len() as u32);
        let mut why = Vec::new();
        for (target, what) in [
            (self.default, "the default scheduler"),
            (self.root, "the root"),
        ] {
            let Some(target) = target else { continue };
            let link = AttachLink {
                parent: target,
                vps,
                params: Params::new(),
            };
            match self.attach_inner(c, &[link]) {
                Ok(()) => return format!("attached under {what} `{}`", self.sched_name(target)),
                Err(e) => why.push(e),
            }
        }
        format!(
            "detached, with its children, until it is attached again ({})",
            why.join("; ")
        )
    }

    /// [`Self::rehome`], then a runnable thread asks its new parent at once.
    fn rehome_runnable(&mut self, t: ThreadId, link: Link) {
        self.rehome(t, link);
        if self.threads[t.index()].runnable {
            self.deliver_request(link);
        }
    }

    fn default_params(&self) -> Params {
        Params::new()
            .resolve(&self.inst(self.default.unwrap()).unwrap().child_specs)
            .unwrap_or_default()
    }

    /// Removes `s`: its threads are added to `orphans`; its child
    /// schedulers left with no parent are removed too (an ejection), or
    /// added to `adrift` (an unload), to be attached again.
    fn remove_one(
        &mut self,
        s: SchedId,
        orderly: bool,
        orphans: &mut Vec<ThreadId>,
        adrift: &mut Vec<SchedId>,
    ) {
        if self.inst(s).is_none() {
            return;
        }
        self.removing.push(s);
        // 1. Cut it out of every CPU path.
        for cpu in 0..self.cpus.len() {
            let Some(depth) = self.cpus[cpu].path.iter().position(|h| h.sched == s) else {
                continue;
            };
            self.end_segment(cpu);
            // end_segment may have ejected something on this path.
            let Some(depth2) = self.cpus[cpu].path.iter().position(|h| h.sched == s) else {
                continue;
            };
            debug_assert!(depth2 <= depth);
            self.unwind_below(cpu, depth2);
            self.cpus[cpu].path.pop();
            if depth2 > 0 {
                let parent = self.cpus[cpu].path[depth2 - 1];
                if let Some(kid) = parent
                    .child
                    .and_then(|c| self.inst_mut(parent.sched).and_then(|i| i.kid_mut(c)))
                {
                    kid.running = None;
                }
                self.cpus[cpu].path[depth2 - 1].child = None;
                self.mark_dirty(cpu, depth2 - 1);
            } else {
                self.cpus[cpu].dirty = None;
            }
        }
        // 2. Leave the parents.
        let inst = self
            .inst(s)
            .expect("`removing` keeps it from being ejected meanwhile");
        let links: Vec<Link> = inst.links.iter().flatten().copied().collect();
        let children: Vec<ChildRef> = inst.children.iter().flatten().map(|k| k.what).collect();
        for link in links {
            if let Some(kid) = self
                .inst_mut(link.parent)
                .and_then(|i| i.kid_mut(link.child))
            {
                kid.runnable = false;
                kid.running = None;
            }
            self.unregister(link);
        }
        // 3. Children: threads are re-homed, schedulers lose this parent.
        // One left with no parent goes, with everything below it, where
        // threads go after an unload, but is removed with an ejected one
        // (the dispatcher no longer trusts what it built).
        let mut lost = Vec::new();
        for what in children {
            match what {
                ChildRef::Thread(t) => {
                    self.threads[t.index()].parent = None;
                    orphans.push(t);
                }
                ChildRef::Vp(c, vp) => {
                    if let Some(ci) = self.inst_mut(c) {
                        ci.links[vp.index()] = None;
                        if ci.vps[vp.index()] != VpState::Idle {
                            ci.vps[vp.index()] = VpState::Requesting;
                        }
                        if ci.links.iter().all(|l| l.is_none()) {
                            lost.push(c);
                        }
                    }
                }
            }
        }
        // 4. Say goodbye (orderly only), then drop it.
        if orderly {
            self.call(s, |p, cx: &mut Cx| p.deinit(cx));
        }
        if let Some(inst) = self.scheds[s.index()].take() {
            drop(inst);
        }
        self.removing.retain(|&r| r != s);
        self.nodes[s.index()].alive = false;
        if self.root == Some(s) {
            self.root = None;
        }
        if self.default == Some(s) {
            self.default = None;
        }
        lost.dedup();
        for c in lost {
            if orderly {
                adrift.push(c);
            } else {
                self.remove_one(c, orderly, orphans, adrift);
            }
        }
    }

    /// Makes sure there is a root and a default scheduler (see the module
    /// documentation for the fallback).
    fn ensure_default(&mut self) {
        if self.default.is_some() && self.root.is_some() {
            return;
        }
        let rr = self.add_below_hierarchy("default");
        self.default = Some(rr);
        self.record(
            LogKind::Moved,
            format!(
                "`{}` ({}) is now the default scheduler",
                self.sched_name(rr),
                self.registry.fallback().shared.name
            ),
        );
    }

    /// A fresh instance of the registry's shared fallback policy (`rr` for
    /// the built-ins) named after `base` (`base-1`... when taken), holding
    /// every CPU: the root when there is none, else below the hierarchy
    /// under a new `machine` root (`fp`) that gives the old root precedence
    /// (so every guarantee the old root had, it keeps).
    fn add_below_hierarchy(&mut self, base: &str) -> SchedId {
        let fresh_name = |d: &Dispatcher, base: &str| {
            (0..)
                .map(|i| match i {
                    0 => base.to_string(),
                    i => format!("{base}-{i}"),
                })
                .find(|n| d.sched_by_name(n).is_none())
                .unwrap()
        };
        let cpus = self.cfg.cpus;
        let rr_name = fresh_name(self, base);
        let fallback = self.registry.fallback();
        let rr = self
            .create_from(&rr_name, fallback.shared, &Params::new(), cpus)
            .expect("the shared fallback policy builds with defaults");
        match self.root {
            None => {
                self.install_root(rr);
            }
            Some(old_root) => {
                let machine_name = fresh_name(self, "machine");
                let machine = self
                    .create_from(&machine_name, fallback.machine, &Params::new(), cpus)
                    .expect("the machine fallback policy builds with defaults");
                self.promote_root(old_root, machine);
                let hi = Params::new().with("prio", Value::Int(1));
                let lo = Params::new().with("prio", Value::Int(0));
                for (child, params) in [(old_root, hi), (rr, lo)] {
                    let link = AttachLink {
                        parent: machine,
                        vps: cpus,
                        params,
                    };
                    if let Err(e) = self.attach_inner(child, &[link]) {
                        self.record(
                            LogKind::Refused,
                            format!("placing `{rr_name}` below the hierarchy: {e}"),
                        );
                    }
                }
            }
        }
        rr
    }

    /// Puts `new_root` above `old_root`: the old root's CPU grants become
    /// requests towards the new one.
    fn promote_root(&mut self, old_root: SchedId, new_root: SchedId) {
        for cpu in 0..self.cpus.len() {
            self.end_segment(cpu);
            self.unwind_below(cpu, 0);
            self.cpus[cpu].path.clear();
        }
        let inst = self.inst_mut(old_root).unwrap();
        for v in inst.vps.iter_mut() {
            *v = VpState::Requesting;
        }
        self.root = None;
        self.install_root(new_root);
    }

    // ----- threads -----------------------------------------------------------

    /// Adds a thread under `parent` with attachment `params` at `now`. If
    /// `parent` refuses it (admission), the thread goes to the default
    /// scheduler (or the fallback, when the default refuses it too) and the
    /// refusal is logged and returned with the id.
    pub fn add_thread(
        &mut self,
        now: Instant,
        name: &str,
        parent: SchedId,
        params: &Params,
    ) -> (ThreadId, Result<(), String>) {
        self.set_now(now);
        let t = ThreadId(self.threads.len() as u32);
        self.threads.push(Thr {
            name: name.to_string(),
            parent: None,
            runnable: false,
            running: None,
            alive: true,
            waiting_since: self.now,
            starving_reported: false,
            homes: Vec::new(),
        });
        let result = self.attach_thread(t, parent, params);
        if let Err(e) = &result {
            let place = match self.default == Some(parent) {
                true => self.home_in_fallback(t),
                false => self.home_in_default(t),
            };
            self.record(
                LogKind::Refused,
                format!("thread `{name}`: {e}; it runs under {place}"),
            );
        }
        (t, result)
    }

    fn attach_thread(
        &mut self,
        t: ThreadId,
        parent: SchedId,
        params: &Params,
    ) -> Result<(), String> {
        let inst = self
            .inst(parent)
            .ok_or_else(|| format!("no scheduler {parent}"))?;
        let pname = inst.name.clone();
        let params = params
            .resolve(&inst.child_specs)
            .map_err(|e| format!("under `{pname}`: {e}"))?;
        let child = self
            .register(parent, ChildRef::Thread(t), &params)
            .map_err(|e| format!("`{pname}` refused it: {e}"))?;
        self.rehome(t, Link { parent, child });
        Ok(())
    }

    /// Records a thread's new place; its wait (for the watchdog) starts over
    /// there, since the new scheduler has only just heard of it.
    fn rehome(&mut self, t: ThreadId, link: Link) {
        let now = self.now;
        let thr = &mut self.threads[t.index()];
        thr.parent = Some(link);
        thr.waiting_since = now;
        thr.starving_reported = false;
        thr.homes.push((now, link.parent));
    }

    /// Moves a thread to another scheduler. Admission at the new one comes
    /// first: if refused, the thread stays where it was.
    pub fn move_thread(
        &mut self,
        p: &mut dyn Platform,
        now: Instant,
        t: ThreadId,
        to: SchedId,
        params: &Params,
    ) -> Result<(), String> {
        self.set_now(now);
        let r = self.move_thread_inner(t, to, params);
        self.settle(p);
        r
    }

    pub(crate) fn move_thread_inner(
        &mut self,
        t: ThreadId,
        to: SchedId,
        params: &Params,
    ) -> Result<(), String> {
        if !self.threads[t.index()].alive {
            return Err("the thread has exited".into());
        }
        let old = self.threads[t.index()].parent;
        self.attach_thread(t, to, params)?;
        if let Some(old) = old {
            if let Some(kid) = self.inst_mut(old.parent).and_then(|i| i.kid_mut(old.child)) {
                kid.runnable = false;
            }
            self.unregister(old);
        }
        let name = self.threads[t.index()].name.clone();
        self.record(
            LogKind::Moved,
            format!("thread `{name}` moved to `{}`", self.sched_name(to)),
        );
        let link = self.threads[t.index()].parent.unwrap();
        if self.threads[t.index()].runnable {
            self.deliver_request(link);
        }
        Ok(())
    }

    /// Removes an exited thread from its scheduler.
    pub(crate) fn detach_thread(&mut self, t: ThreadId) {
        if let Some(link) = self.threads[t.index()].parent.take() {
            self.unregister(link);
        }
    }
}
