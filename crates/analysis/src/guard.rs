//! The analysis as a run's change guard ([`hsched_model::guard`]): it keeps
//! the hierarchy as the run has changed it, re-analyses it as each change
//! would leave it, and refuses a change that weakens a guarantee already
//! promised or adds an error (or lets it through with a warning, when the
//! run allows uncomposed hierarchies). It also remembers, per scheduler and
//! thread, what it was promised and from when, for the run's outputs.
//!
//! Cost: each change re-runs the whole composition ([`analyse`]) on the
//! hierarchy after it and compares it with what was promised, by lookups:
//! linear in schedulers, threads and links. `hsched bench` measures a
//! review beside the analysis of the same 10,000-node hierarchy.
//! Only the changes are analysed, never the passing of time, so a run pays
//! it once per script step, request, `join`/`leave` or new admission.

use crate::compose::{analyse, Analysis, Received};
use crate::guarantee::Guarantee;
use crate::rewrite;
use crate::rules::RuleBook;
use hsched_core::{Instant, Msg, Params};
use hsched_model::guard::{Change, ChangeGuard, Ruling};
use hsched_model::{Action, Op, Scenario, Target};
use std::collections::{HashMap, HashSet};

/// What a scheduler or thread was promised, from when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Promise {
    pub since: Instant,
    pub received: Received,
}

/// A thread's promise and the scheduler it was made under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadPromise {
    pub under: String,
    pub promise: Promise,
}

/// See the module documentation.
pub struct AnalysisGuard {
    /// The hierarchy as the run has changed it (a detached scheduler keeps
    /// no parent links; it is left out of what is analysed).
    hierarchy: Scenario,
    /// The root's name: the one scheduler without parents that is not
    /// detached.
    root: String,
    book: RuleBook,
    allow_uncomposed: bool,
    /// The analysis of `hierarchy`: what is promised now.
    current: Analysis,
    /// Per scheduler name, one promise per time it was loaded (the one at
    /// time 0 first), each the latest it was given.
    schedulers: HashMap<String, Vec<Promise>>,
    threads: HashMap<String, ThreadPromise>,
}

impl AnalysisGuard {
    /// A guard for a run of `scn`, whose hierarchy at time 0 was analysed
    /// with `book` into `analysis`; `allow_uncomposed`: a change that breaks
    /// a promise is let through with a warning instead of refused.
    pub fn new(scn: &Scenario, book: RuleBook, analysis: Analysis, allow_uncomposed: bool) -> Self {
        let mut hierarchy = scn.clone();
        // The steps are told to the guard as they happen.
        hierarchy.script.clear();
        let root = scn
            .schedulers
            .iter()
            .find(|s| s.parents.is_empty())
            .map_or_else(String::new, |s| s.name.clone());
        let mut guard = AnalysisGuard {
            hierarchy,
            root,
            book,
            allow_uncomposed,
            current: analysis,
            schedulers: HashMap::new(),
            threads: HashMap::new(),
        };
        guard.remember(Instant::ZERO, None);
        guard
    }

    /// What the hierarchy promises now.
    pub fn current(&self) -> &Analysis {
        &self.current
    }

    /// The promises made to scheduler `name`, one per time it was loaded.
    pub fn scheduler_promises(&self, name: &str) -> &[Promise] {
        self.schedulers.get(name).map_or(&[], Vec::as_slice)
    }

    /// The latest promise made to thread `name`, and under which scheduler.
    pub fn thread_promise(&self, name: &str) -> Option<&ThreadPromise> {
        self.threads.get(name)
    }

    /// The part of `hierarchy` that receives CPU: what is reachable from
    /// the root through parent links (a detached scheduler and what is
    /// below only it are left out, with the threads under them).
    fn attached(&self, hierarchy: &Scenario) -> Scenario {
        let mut reached: HashSet<&str> = HashSet::new();
        reached.insert(self.root.as_str());
        loop {
            let before = reached.len();
            for s in &hierarchy.schedulers {
                if !reached.contains(s.name.as_str())
                    && s.parents
                        .iter()
                        .any(|l| reached.contains(l.parent.as_str()))
                {
                    reached.insert(s.name.as_str());
                }
            }
            if reached.len() == before {
                break;
            }
        }
        let mut view = hierarchy.clone();
        view.schedulers
            .retain(|s| reached.contains(s.name.as_str()));
        for s in &mut view.schedulers {
            s.parents.retain(|l| reached.contains(l.parent.as_str()));
        }
        view.threads.retain(|t| reached.contains(t.parent.as_str()));
        view
    }

    /// Records what `self.current` promises from `now`; `loaded`: a
    /// scheduler that the change created (a new promise, not an update).
    fn remember(&mut self, now: Instant, loaded: Option<&str>) {
        let receipts = self.current.received_all();
        // In analysis order, so that the outcome does not depend on hash order.
        for node in &self.current.nodes {
            let Some(received) = receipts.schedulers.get(node.name.as_str()) else {
                continue;
            };
            let promise = Promise {
                since: now,
                received: *received,
            };
            let stays = self.schedulers.entry(node.name.clone()).or_default();
            match stays.last_mut() {
                Some(last) if loaded != Some(node.name.as_str()) => {
                    if last.received != *received {
                        *last = promise;
                    }
                }
                _ => stays.push(promise),
            }
        }
        for thread in &self.hierarchy.threads {
            let Some(received) = receipts.threads.get(thread.name.as_str()) else {
                continue;
            };
            let fresh = ThreadPromise {
                under: thread.parent.clone(),
                promise: Promise {
                    since: now,
                    received: *received,
                },
            };
            match self.threads.get(&thread.name) {
                Some(old) if old.under == fresh.under && old.promise.received == *received => {}
                _ => {
                    self.threads.insert(thread.name.clone(), fresh);
                }
            }
        }
    }

    /// The schedulers with a thread below them (through any chain of
    /// parents) that is promised more than NULL now: only their promises
    /// are relied on. A time-sharing scheduler promised ALL whose threads
    /// all get NULL may get less (a scheduler loaded above it at a higher
    /// priority, as Vassal loads one) without breaking a promise.
    fn relied_on(&self) -> HashSet<&str> {
        let promised = self.current.received_all().threads;
        let parents: HashMap<&str, Vec<&str>> = self
            .hierarchy
            .schedulers
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.parents.iter().map(|l| l.parent.as_str()).collect(),
                )
            })
            .collect();
        let mut relied: HashSet<&str> = HashSet::new();
        for t in &self.hierarchy.threads {
            if promised
                .get(t.name.as_str())
                .is_none_or(|r| r.guarantee == Guarantee::Null)
            {
                continue;
            }
            let mut todo = vec![t.parent.as_str()];
            while let Some(s) = todo.pop() {
                if relied.insert(s) {
                    todo.extend(parents.get(s).into_iter().flatten());
                }
            }
        }
        relied
    }

    /// What `after` (analysed into `analysis`) breaks of what
    /// `self.current` promises: each new error; each scheduler's incoming
    /// edge that still exists, that a thread below relies on
    /// ([`Self::relied_on`]), but carries less or nothing; each thread that
    /// would receive less, wherever it is (an unload sends threads to the
    /// default scheduler), unless `change` moves it on purpose.
    fn broken(&self, change: &Change, after: &Scenario, analysis: &Analysis) -> Vec<String> {
        let known: HashSet<&str> = self.current.errors().map(|p| p.message.as_str()).collect();
        let mut why: Vec<String> = analysis
            .errors()
            .filter(|p| !known.contains(p.message.as_str()))
            .map(|p| p.message.clone())
            .collect();
        let weaker = |had: &Guarantee, gets: &Guarantee| -> Option<String> {
            if had == gets {
                return None;
            }
            rewrite::implies(gets, had).err()
        };
        let relied = self.relied_on();
        // Looked up by (parent, child) rather than searched: a review must
        // stay linear in the hierarchy's size.
        let links: HashSet<(&str, &str)> = after
            .schedulers
            .iter()
            .flat_map(|s| {
                s.parents
                    .iter()
                    .map(|l| (l.parent.as_str(), s.name.as_str()))
            })
            .collect();
        let new_edges: HashMap<(&str, &str), &crate::compose::Edge> = analysis
            .edges
            .iter()
            .filter(|e| !e.to_thread)
            .filter_map(|e| Some(((e.from.as_deref()?, e.to.as_str()), e)))
            .collect();
        for old in self.current.edges.iter().filter(|e| !e.to_thread) {
            let Some(from) = old.from.as_deref() else {
                continue;
            };
            // An edge the change itself removes (an unload, a scheduler
            // attached elsewhere) is not a promise broken.
            let still_linked = links.contains(&(from, old.to.as_str()));
            if !still_linked || !relied.contains(old.to.as_str()) {
                continue;
            }
            let new = new_edges.get(&(from, old.to.as_str()));
            match new {
                None => why.push(format!(
                    "scheduler `{}` was promised {} by `{from}` and would receive nothing",
                    old.to, old.guarantee
                )),
                Some(new) => {
                    if let Some(e) = weaker(&old.guarantee, &new.guarantee) {
                        why.push(format!(
                            "scheduler `{}` was promised {} by `{from}` and would get {}: {e}",
                            old.to, old.guarantee, new.guarantee
                        ));
                    }
                }
            }
        }
        let moved = match change {
            Change::Hierarchy(Action::Move { thread, .. }) => Some(thread.as_str()),
            _ => None,
        };
        let had = self.current.received_all().threads;
        let gets = analysis.received_all().threads;
        for thread in &after.threads {
            let name = thread.name.as_str();
            let Some(had) = had.get(name) else { continue };
            if Some(name) == moved {
                continue;
            }
            match gets.get(name) {
                None if had.guarantee.share().is_some() => why.push(format!(
                    "thread `{name}` was promised {} and would receive nothing",
                    had.guarantee
                )),
                None => {}
                Some(now) => {
                    if let Some(e) = weaker(&had.guarantee, &now.guarantee) {
                        why.push(format!(
                            "thread `{name}` was promised {} and would get {} under `{}`: {e}",
                            had.guarantee, now.guarantee, thread.parent
                        ));
                    }
                }
            }
        }
        why
    }
}

/// The hierarchy `before` with `change` made, as the dispatcher makes it;
/// `None` when the change names what does not exist (the dispatcher
/// refuses it with its own reason) or changes nothing the analysis reads.
fn changed(before: &Scenario, change: &Change) -> Option<Scenario> {
    // Most accepted messages are ones the program sends, analysed already:
    // they are told apart before the hierarchy is copied.
    if let Change::Admitted { thread, to, msg } = change {
        let t = before.threads.iter().find(|t| t.name == *thread)?;
        // Only what a thread asks of its own scheduler is read by the rules.
        if t.parent != *to || sends(&t.program.ops, to, &msg.name) {
            return None;
        }
    }
    let mut after = before.clone();
    match change {
        Change::Hierarchy(Action::Load(spec)) => {
            if before.schedulers.iter().any(|s| s.name == spec.name) {
                return None;
            }
            after.schedulers.push(spec.clone());
        }
        Change::Hierarchy(Action::Unload(name)) => unload(&mut after, name)?,
        Change::Ejected { scheduler } => remove_tree(&mut after, scheduler)?,
        Change::Hierarchy(Action::Detach(name)) => {
            after
                .schedulers
                .iter_mut()
                .find(|s| s.name == *name)?
                .parents
                .clear();
        }
        Change::Hierarchy(Action::Attach { scheduler, parents }) => {
            after
                .schedulers
                .iter_mut()
                .find(|s| s.name == *scheduler)?
                .parents = parents.clone();
        }
        Change::Hierarchy(Action::Move { thread, to, params }) => {
            if !before.schedulers.iter().any(|s| s.name == *to) {
                return None;
            }
            let t = after.threads.iter_mut().find(|t| t.name == *thread)?;
            t.parent = to.clone();
            t.params = params.clone();
        }
        Change::Admitted { thread, to, msg } => {
            let t = after.threads.iter_mut().find(|t| t.name == *thread)?;
            t.program.ops.push(Op::Msg {
                to: Target::Named(to.to_string()),
                msg: Msg::clone(msg),
            });
        }
        Change::Hierarchy(_) | Change::PolicyAdded { .. } => return None,
    }
    Some(after)
}

/// Whether `ops` send a message named `name` to scheduler `to` (their
/// thread's scheduler), as the analysis reads a program.
fn sends(ops: &[Op], to: &str, name: &str) -> bool {
    let mut msgs = Vec::new();
    crate::compose::messages_to_parent(ops, to, &mut msgs);
    msgs.iter().any(|m| m.name == name)
}

/// `scn` after an unload of `name`, as the dispatcher does it: its
/// threads go to the default scheduler, its child schedulers lose it as a
/// parent, and one left with none is attached under the default scheduler
/// (under the root when the default is it or below it). `None` if there is
/// no such scheduler.
fn unload(scn: &mut Scenario, name: &str) -> Option<()> {
    scn.schedulers.iter().position(|s| s.name == name)?;
    let default = scn.default_scheduler.clone();
    let root = scn
        .schedulers
        .iter()
        .find(|s| s.parents.is_empty() && s.name != name)
        .map(|s| s.name.clone());
    scn.schedulers.retain(|s| s.name != name);
    let below = |scn: &Scenario, top: &str, x: &str| {
        // Whether `x` is `top` or under it.
        let mut todo = vec![x.to_string()];
        let mut seen = HashSet::new();
        while let Some(at) = todo.pop() {
            if at == top {
                return true;
            }
            if seen.insert(at.clone()) {
                if let Some(s) = scn.schedulers.iter().find(|s| s.name == at) {
                    todo.extend(s.parents.iter().map(|l| l.parent.clone()));
                }
            }
        }
        false
    };
    // Each with the VPs it held there, which it keeps.
    let adrift: Vec<(String, u32)> = scn
        .schedulers
        .iter()
        .filter(|s| !s.parents.is_empty() && s.parents.iter().all(|l| l.parent == name))
        .map(|s| (s.name.clone(), s.parents.iter().map(|l| l.vps).sum()))
        .collect();
    for s in &mut scn.schedulers {
        s.parents.retain(|l| l.parent != name);
    }
    for (c, vps) in adrift {
        let to = match below(scn, &c, &default) {
            false => Some(default.clone()),
            true => root.clone(),
        };
        if let (Some(to), Some(s)) = (to, scn.schedulers.iter_mut().find(|s| s.name == c)) {
            s.parents.push(hsched_model::ParentLink {
                parent: to,
                vps,
                params: Params::new(),
            });
        }
    }
    for t in &mut scn.threads {
        if t.parent == name {
            t.parent = default.clone();
            t.params = Params::new();
        }
    }
    Some(())
}

/// `scn` after `name` is removed with every scheduler left without a
/// parent because of it (an ejection); their threads go to the default.
/// `None` if there is no such scheduler.
fn remove_tree(scn: &mut Scenario, name: &str) -> Option<()> {
    scn.schedulers.iter().position(|s| s.name == name)?;
    let mut gone: Vec<String> = vec![name.to_string()];
    loop {
        let before = gone.len();
        for s in &scn.schedulers {
            let orphan = !s.parents.is_empty()
                && s.parents.iter().all(|l| gone.contains(&l.parent))
                && !gone.contains(&s.name);
            if orphan {
                gone.push(s.name.clone());
            }
        }
        if gone.len() == before {
            break;
        }
    }
    scn.schedulers.retain(|s| !gone.contains(&s.name));
    for s in &mut scn.schedulers {
        s.parents.retain(|l| !gone.contains(&l.parent));
    }
    for t in &mut scn.threads {
        if gone.contains(&t.parent) {
            t.parent = scn.default_scheduler.clone();
            t.params = Params::new();
        }
    }
    Some(())
}

/// How a change is named in a refusal or warning.
fn describe(change: &Change) -> String {
    match change {
        Change::Hierarchy(Action::Load(spec)) => {
            let under: Vec<String> = spec
                .parents
                .iter()
                .map(|l| format!("`{}`", l.parent))
                .collect();
            format!(
                "load `{}` ({}) under {}",
                spec.name,
                spec.policy,
                under.join(", ")
            )
        }
        Change::Hierarchy(Action::Unload(name)) => format!("unload `{name}`"),
        Change::Hierarchy(Action::Detach(name)) => format!("detach `{name}`"),
        Change::Hierarchy(Action::Attach { scheduler, .. }) => format!("attach `{scheduler}`"),
        Change::Hierarchy(Action::Move { thread, to, .. }) => {
            format!("move `{thread}` to `{to}`")
        }
        Change::Hierarchy(_) => "the change".to_string(),
        Change::PolicyAdded { policy, .. } => format!("adding policy `{policy}`"),
        Change::Admitted { thread, to, msg } => format!("`{thread}` -> `{to}` {msg}"),
        Change::Ejected { scheduler } => format!("ejecting `{scheduler}`"),
    }
}

impl ChangeGuard for AnalysisGuard {
    fn review(&mut self, _now: Instant, change: &Change) -> Ruling {
        if let Change::PolicyAdded {
            policy,
            rule: Some(rule),
        } = change
        {
            // A row that does not parse, or a name with a rule already,
            // would leave the policy's instances analysed by no rule or
            // another's.
            return match self.book.clone().add_row(policy, rule) {
                Ok(()) => Ruling::Accept,
                Err(e) => Ruling::Refuse(format!("its HLS rule: {e}")),
            };
        }
        let Some(after) = changed(&self.hierarchy, change) else {
            return Ruling::Accept;
        };
        let view = self.attached(&after);
        let analysis = analyse(&view, &self.book);
        let broken = self.broken(change, &after, &analysis);
        if broken.is_empty() {
            return Ruling::Accept;
        }
        let what = describe(change);
        let why = broken.join("; ");
        if self.allow_uncomposed {
            Ruling::Warn(format!(
                "{what} breaks what the hierarchy promised (let through: --allow-uncomposed): {why}"
            ))
        } else {
            Ruling::Refuse(format!(
                "{what}: refused, it would break what the hierarchy promised: {why}"
            ))
        }
    }

    fn applied(&mut self, now: Instant, change: &Change) {
        if let Change::PolicyAdded { policy, rule } = change {
            if let Some(rule) = rule {
                // Checked by `review`; a second plugin of the same name is
                // refused before it gets here.
                let _ = self.book.add_row(policy, rule);
            }
            return;
        }
        let Some(after) = changed(&self.hierarchy, change) else {
            return;
        };
        self.current = analyse(&self.attached(&after), &self.book);
        self.hierarchy = after;
        let loaded = match change {
            Change::Hierarchy(Action::Load(spec)) => Some(spec.name.clone()),
            _ => None,
        };
        self.remember(now, loaded.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compose::bench_hierarchy;
    use hsched_core::{Duration, Value};
    use hsched_model::{ParentLink, Program, SchedulerSpec, ThreadSpec};

    fn guard_of(scn: &Scenario) -> AnalysisGuard {
        let book = RuleBook::standard();
        let analysis = analyse(scn, &book);
        assert!(analysis.composes(), "{}", analysis.verdict());
        AnalysisGuard::new(scn, book, analysis, false)
    }

    fn at(ns: u64) -> Instant {
        Instant::ZERO.saturating_add(Duration::from_nanos(ns))
    }

    /// `fp` over a `rialto` (priority 1, so it holds ALL) and an `rr`; one
    /// thread under each, the rialto's asking nothing in its program.
    fn with_rialto() -> Scenario {
        let mut scn = bench_hierarchy(10);
        scn.schedulers.truncate(1);
        let link = |prio: i64| ParentLink {
            parent: "root".into(),
            vps: 1,
            params: Params::new().with("prio", Value::Int(prio)),
        };
        for (name, policy, prio) in [("rt", "rialto", 1), ("ts", "rr", 0)] {
            scn.schedulers.push(SchedulerSpec {
                name: name.into(),
                policy: policy.into(),
                params: Params::new(),
                parents: vec![link(prio)],
            });
        }
        scn.threads = ["rt", "ts"]
            .iter()
            .map(|parent| ThreadSpec {
                name: format!("under-{parent}"),
                parent: parent.to_string(),
                params: Params::new(),
                arrival: Instant::ZERO,
                program: Program::default(),
                needs: None,
            })
            .collect();
        scn
    }

    #[test]
    fn an_admission_by_message_is_promised_from_then() {
        let scn = with_rialto();
        let mut guard = guard_of(&scn);
        let before = guard.thread_promise("under-rt").unwrap().clone();
        assert_eq!(before.promise.received.guarantee.to_string(), "NULL");
        let ms = |n| Value::Duration(Duration::from_millis(n));
        let reserve = Msg::new("reserve")
            .arg("amount", ms(2))
            .arg("period", ms(10));
        let change = Change::Admitted {
            thread: "under-rt",
            to: "rt",
            msg: &reserve,
        };
        guard.applied(at(7), &change);
        let after = guard.thread_promise("under-rt").unwrap();
        assert_eq!(after.promise.received.guarantee.to_string(), "RESCS 2, 10");
        assert_eq!(after.promise.since, at(7));
        // The same request again is no news.
        guard.applied(at(9), &change);
        assert_eq!(
            guard.thread_promise("under-rt").unwrap().promise.since,
            at(7)
        );
        // A message to a scheduler other than the thread's own is not read.
        let elsewhere = Change::Admitted {
            thread: "under-ts",
            to: "rt",
            msg: &reserve,
        };
        guard.applied(at(11), &elsewhere);
        assert_eq!(
            guard.thread_promise("under-ts").unwrap().promise.since,
            Instant::ZERO
        );
    }

    #[test]
    fn an_ejected_scheduler_is_gone_and_its_threads_relabelled() {
        let scn = with_rialto();
        let mut guard = guard_of(&scn);
        guard.applied(at(5), &Change::Ejected { scheduler: "rt" });
        assert!(guard.current().nodes.iter().all(|n| n.name != "rt"));
        let moved = guard.thread_promise("under-rt").unwrap();
        assert_eq!((moved.under.as_str(), moved.promise.since), ("ts", at(5)));
    }

    #[test]
    fn a_load_on_a_thousand_nodes_is_reviewed_in_one_composition() {
        let scn = bench_hierarchy(1000);
        let mut guard = guard_of(&scn);
        let load = Action::Load(SchedulerSpec {
            name: "more".into(),
            policy: "rr".into(),
            params: Params::new(),
            parents: vec![ParentLink {
                parent: "ts".into(),
                vps: 1,
                params: Params::new(),
            }],
        });
        let ruling = guard.review(at(1), &Change::Hierarchy(&load));
        assert_eq!(ruling, Ruling::Accept);
    }

    /// A plugin's policy joins the rule book when it is added: a load of it
    /// is then analysed by its row (here `ALL -> RESBH+`: a child under it
    /// with `guarantee = "RESBH 2, 10"` is promised that, from the load);
    /// a row that does not parse refuses the plugin, naming the problem.
    #[test]
    fn a_plugin_policy_is_analysed_by_its_row_from_when_it_is_added() {
        let mut guard = guard_of(&with_rialto());
        let bad = Change::PolicyAdded {
            policy: "edf-plugin",
            rule: Some("ALL RESBH"),
        };
        match guard.review(at(5), &bad) {
            Ruling::Refuse(why) => assert!(why.contains("its HLS rule"), "{why}"),
            other => panic!("{other:?}"),
        }
        let good = Change::PolicyAdded {
            policy: "edf-plugin",
            rule: Some("ALL -> RESBH+"),
        };
        assert_eq!(guard.review(at(5), &good), Ruling::Accept);
        guard.applied(at(5), &good);
        let load = Action::Load(SchedulerSpec {
            name: "p".into(),
            policy: "edf-plugin".into(),
            params: Params::new(),
            parents: vec![ParentLink {
                parent: "root".into(),
                vps: 1,
                params: Params::new().with("prio", Value::Int(5)),
            }],
        });
        // Above `rt` (priority 1), whose thread is promised nothing: made.
        assert_eq!(
            guard.review(at(10), &Change::Hierarchy(&load)),
            Ruling::Accept
        );
        guard.applied(at(10), &Change::Hierarchy(&load));
        let join = Action::Move {
            thread: "under-ts".into(),
            to: "p".into(),
            params: Params::new().with("guarantee", Value::Str("RESBH 2, 10".into())),
        };
        assert_eq!(
            guard.review(at(20), &Change::Hierarchy(&join)),
            Ruling::Accept
        );
        guard.applied(at(20), &Change::Hierarchy(&join));
        let p = guard.thread_promise("under-ts").expect("labelled");
        assert_eq!(p.under, "p");
        assert_eq!(p.promise.received.to_string(), "RESBH 2, 10");
        assert_eq!(p.promise.since, at(20));
    }
}
