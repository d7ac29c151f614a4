//! The top-down analysis of a scheduling hierarchy (Regehr & Stankovic,
//! HLS, §3.3): label every edge with the guarantee it carries, or say
//! exactly which scheduler or thread cannot receive an acceptable guarantee
//! and why.
//!
//! The algorithm, as §3.3 gives it: the root receives ALL (one per CPU);
//! then, parents before children (a topological order of the DAG, so a
//! join is reached once all its parents are labelled), each scheduler's
//! rule ([`crate::rules`]) turns the guarantee(s) on its incoming edges
//! into the labels of its outgoing edges, rewriting guarantees (§5.2,
//! [`crate::rewrite`]) where the rule accepts a weaker kind. A thread's
//! edge is checked against what the thread says it needs (`needs`). The
//! hierarchy composes when no problem is an error.
//!
//! [`analyse`] takes one hierarchy, the one at time 0; a run re-analyses
//! each change as it happens ([`crate::guard`]).
//!
//! Cost: O(schedulers + threads + links) hash look-ups, plus what the rules
//! do (each is linear in its children, but `fp` sorts them and `join`
//! compares its parents' guarantees pairwise: at most 64). The output
//! depends only on the scenario and the rule book: edges come in the order
//! the walk makes them, problems in the order found.

use crate::guarantee::{mul_share_down, Guarantee};
use crate::rewrite::{self, Derivation};
use crate::rules::{self, Child, ChildKind, Input, Label, Node, Problem, RuleBook, Severity};
use hsched_core::{Instant, Msg, Share};
use hsched_model::{Op, Scenario, Target};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// One labelled edge: a parent scheduler (or the machine) to a child
/// scheduler or thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The parent; `None` for the machine's edge into the root.
    pub from: Option<String>,
    pub to: String,
    /// Whether `to` is a thread.
    pub to_thread: bool,
    /// VPs on this edge.
    pub vps: u32,
    /// What the edge carries (per VP).
    pub guarantee: Guarantee,
    /// Why the parent's rule gave this.
    pub why: Option<String>,
    /// The parent refuses what the child asked for (see
    /// [`rules::Label::refused`]).
    pub refused: bool,
    /// How the child used it, when a rewrite was needed: for a scheduler,
    /// what its rule took the input as (e.g. PSBE 0.5, 40 by Theorem 4);
    /// for a thread with `needs`, how the label implies the need.
    pub taken_as: Option<Derivation>,
}

/// One scheduler, as analysed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub name: String,
    pub policy: String,
    /// Its Table 1 row, if the rule book has one.
    pub row: Option<String>,
    /// A scheduler from the literature (it cannot run).
    pub literature: bool,
    /// How it used its input, when a rewrite was needed.
    pub taken_as: Option<Derivation>,
}

/// The labelled hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    pub scenario: String,
    pub cpus: u32,
    /// Schedulers, parents before children.
    pub nodes: Vec<NodeInfo>,
    /// The machine's edge first, then each scheduler's outgoing edges in
    /// the order of `nodes` (child schedulers, then threads).
    pub edges: Vec<Edge>,
    pub problems: Vec<Problem>,
    /// What was not analysed, and the assumptions that apply.
    pub notes: Vec<String>,
}

impl Analysis {
    /// True when no problem is an error.
    pub fn composes(&self) -> bool {
        self.errors().next().is_none()
    }

    pub fn errors(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Warning)
    }

    /// The edge from `from` (`None`: the machine) to `to`.
    pub fn edge(&self, from: Option<&str>, to: &str) -> Option<&Edge> {
        self.edges
            .iter()
            .find(|e| e.from.as_deref() == from && e.to == to)
    }

    /// What scheduler `name` (or, if there is none, thread `name`)
    /// receives, as labelled (see [`Analysis::received_all`]); `None` when
    /// no edge reaches it.
    pub fn received(&self, name: &str) -> Option<Received> {
        let mut all = self.received_all();
        all.schedulers
            .remove(name)
            .or_else(|| all.threads.remove(name))
    }

    /// What every labelled scheduler and thread receives, by name, in one
    /// pass over the edges:
    /// - one incoming edge: its label, on as many VPs as the edge has;
    /// - a `join` (several incoming edges): the label of its edge to its
    ///   child, which is the pick among its parents' guarantees made soft
    ///   (§5.1), the one its child's `needs` asks for if any;
    /// - any other node with several parents (`rtwake` over the default
    ///   scheduler), or a join without a child: the best of its parents'
    ///   guarantees, made soft, on one VP, as its rule takes its input
    ///   ([`Node::input`]): the others may add time, but promise none.
    pub fn received_all(&self) -> Receipts<'_> {
        let mut into: HashMap<&str, Vec<&Edge>> = HashMap::new();
        let mut out_of: HashMap<&str, Vec<&Edge>> = HashMap::new();
        let mut threads = HashMap::new();
        for e in &self.edges {
            if e.to_thread {
                // A thread has one parent.
                threads.insert(
                    e.to.as_str(),
                    Received {
                        guarantee: e.guarantee,
                        vps: e.vps,
                        refused: e.refused,
                    },
                );
            } else {
                into.entry(e.to.as_str()).or_default().push(e);
            }
            if let Some(from) = &e.from {
                out_of.entry(from.as_str()).or_default().push(e);
            }
        }
        let joins: HashSet<&str> = self
            .nodes
            .iter()
            .filter(|n| n.policy == "join")
            .map(|n| n.name.as_str())
            .collect();
        let schedulers = into
            .into_iter()
            .map(|(name, ins)| {
                let got = match (ins.as_slice(), out_of.get(name).map(Vec::as_slice)) {
                    ([one], _) => Received {
                        guarantee: one.guarantee,
                        vps: one.vps,
                        refused: false,
                    },
                    (_, Some([child])) if joins.contains(name) => Received {
                        guarantee: child.guarantee,
                        vps: child.vps,
                        refused: false,
                    },
                    (many, _) => {
                        let cands: Vec<Guarantee> =
                            many.iter().map(|e| e.guarantee.soften()).collect();
                        Received {
                            guarantee: cands[rules::pick::pick_best(&cands, None)],
                            vps: 1,
                            refused: false,
                        }
                    }
                };
                (name, got)
            })
            .collect();
        Receipts {
            schedulers,
            threads,
        }
    }

    /// The one-paragraph verdict: "composes" or the errors, one a line.
    pub fn verdict(&self) -> String {
        let errors: Vec<String> = self.errors().map(|p| p.message.clone()).collect();
        if errors.is_empty() {
            let w = self.warnings().count();
            match w {
                0 => "the hierarchy composes".to_string(),
                1 => "the hierarchy composes (1 warning)".to_string(),
                n => format!("the hierarchy composes ({n} warnings)"),
            }
        } else {
            format!(
                "the hierarchy does not compose:\n{}",
                errors
                    .iter()
                    .map(|e| format!("  error: {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        }
    }
}

/// What each scheduler and each thread receives, by name (a thread may have
/// the name of a scheduler).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Receipts<'a> {
    pub schedulers: HashMap<&'a str, Received>,
    pub threads: HashMap<&'a str, Received>,
}

/// What a scheduler or thread receives, as the analysis labelled it: a
/// guarantee per VP, on `vps` VPs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    pub guarantee: Guarantee,
    pub vps: u32,
    /// What it asked for was refused (a thread's edge only).
    pub refused: bool,
}

impl Received {
    /// The long-run fraction of one CPU promised over all the VPs (`ALL` on
    /// two VPs: 2); `None` for NULL. Exact when it fits in 64-bit terms,
    /// else rounded down.
    pub fn share(&self) -> Option<Share> {
        let per_vp = self.guarantee.share()?;
        Some(mul_share_down(per_vp, Share::new(u64::from(self.vps), 1)?))
    }
}

/// As `hsched check` labels an edge: `RESBH 5, 33`, `ALL ×2` for two VPs.
impl fmt::Display for Received {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.guarantee)?;
        if self.vps > 1 {
            write!(f, " ×{}", self.vps)?;
        }
        if self.refused {
            f.write_str(" (refused)")?;
        }
        Ok(())
    }
}

/// Messages a thread sends to its own scheduler, as the rules read them:
/// `msg` operations addressed to `parent` or to it by name, and the
/// reservations or constraints the `randres` and `constraints` programs
/// ask for.
pub(crate) fn messages_to_parent(ops: &[Op], parent: &str, out: &mut Vec<Msg>) {
    for op in ops {
        match op {
            Op::Msg { to, msg } => {
                let mine = match to {
                    Target::Parent => true,
                    Target::Named(n) => n == parent,
                };
                if mine {
                    out.push(msg.clone());
                }
            }
            Op::Periodic { body, .. } | Op::Loop { body, .. } | Op::Frames { body, .. } => {
                messages_to_parent(body, parent, out)
            }
            Op::Randres(r) if r.reserve => out.push(Msg::new("reserve")),
            Op::Constraints(_) => out.push(Msg::new("begin_constraint")),
            _ => {}
        }
    }
}

/// Whether a program can use the CPU: anything but messages, sleeps,
/// synchronisation and domain operations, which take no CPU time.
fn uses_cpu(ops: &[Op]) -> bool {
    ops.iter().any(|op| match op {
        Op::Msg { .. }
        | Op::Sleep(_)
        | Op::Fault(_)
        | Op::Lock(_)
        | Op::Unlock(_)
        | Op::Signal(_)
        | Op::Wait(_)
        | Op::Barrier(_)
        | Op::Kill(_)
        | Op::Create(_)
        | Op::Exit => false,
        Op::Loop { body, .. } => uses_cpu(body),
        _ => true,
    })
}

/// Analyses `scn` with the rules of `book`.
///
/// A thread its scheduler refuses (admission, a placement) runs under the
/// default scheduler instead, and takes its share there: the default's
/// children are labelled with it counted (a second pass over the hierarchy
/// with those threads added there), while the refused thread keeps its
/// refusal, on the edge from the scheduler that refused it.
pub fn analyse(scn: &Scenario, book: &RuleBook) -> Analysis {
    let first = analyse_once(scn, book);
    let default = scn.default_scheduler.as_str();
    let moved: HashSet<&str> = first
        .edges
        .iter()
        .filter(|e| e.to_thread && e.refused && e.from.as_deref() != Some(default))
        .map(|e| e.to.as_str())
        .collect();
    if moved.is_empty() || !scn.schedulers.iter().any(|s| s.name == default) {
        return first;
    }
    // Each refused thread also under the default, and still where it was
    // placed: it is refused there only while no earlier child has left (see
    // the rules), so both places count it, a superset in each.
    let mut there = scn.clone();
    let copies: Vec<_> = scn
        .threads
        .iter()
        .filter(|t| moved.contains(t.name.as_str()))
        .map(|t| {
            let mut t = t.clone();
            t.parent = default.to_string();
            t.params = hsched_core::Params::new();
            t
        })
        .collect();
    there.threads.extend(copies);
    let second = analyse_once(&there, book);
    // Looked up, not searched: the guard runs this on every change.
    let second_edges: HashMap<(Option<&str>, &str, bool), &Edge> = second
        .edges
        .iter()
        .map(|e| ((e.from.as_deref(), e.to.as_str(), e.to_thread), e))
        .collect();
    let second_nodes: HashMap<&str, &NodeInfo> =
        second.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut merged = first.clone();
    for e in merged.edges.iter_mut() {
        if e.to_thread && moved.contains(e.to.as_str()) {
            continue;
        }
        if let Some(&e2) = second_edges.get(&(e.from.as_deref(), e.to.as_str(), e.to_thread)) {
            *e = e2.clone();
        }
    }
    for n in merged.nodes.iter_mut() {
        if let Some(n2) = second_nodes.get(n.name.as_str()) {
            n.taken_as = n2.taken_as.clone();
        }
    }
    // The refused threads' own problems from where they were placed; the
    // rest as the hierarchy runs.
    let mut problems: Vec<Problem> = first
        .problems
        .iter()
        .filter(|p| moved.contains(p.node.as_str()))
        .cloned()
        .collect();
    for p in second.problems {
        if !moved.contains(p.node.as_str()) && !problems.contains(&p) {
            problems.push(p);
        }
    }
    merged.problems = problems;
    // In file order, whatever the set's hash order.
    let names: Vec<String> = scn
        .threads
        .iter()
        .filter(|t| moved.contains(t.name.as_str()))
        .map(|t| format!("`{}`", t.name))
        .collect();
    merged.notes.push(format!(
        "refused where they are placed, {} run under the default scheduler `{default}` and are counted there",
        names.join(", ")
    ));
    merged
}

/// One top-down pass over the hierarchy as the scenario places it.
fn analyse_once(scn: &Scenario, book: &RuleBook) -> Analysis {
    let n = scn.schedulers.len();
    let mut problems: Vec<Problem> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let index: HashMap<&str, usize> = scn
        .schedulers
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();

    // Children by parent, built once: (child, link) for schedulers.
    let mut sched_children: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = vec![0; n];
    for (c, s) in scn.schedulers.iter().enumerate() {
        for (l, link) in s.parents.iter().enumerate() {
            match index.get(link.parent.as_str()) {
                Some(&p) => {
                    sched_children[p].push((c, l));
                    waiting[c] += 1;
                }
                None => problems.push(Problem {
                    severity: Severity::Error,
                    node: s.name.clone(),
                    edge: Some((Some(link.parent.clone()), s.name.clone())),
                    message: format!(
                        "scheduler `{}`: its parent `{}` does not exist",
                        s.name, link.parent
                    ),
                }),
            }
        }
    }
    let mut thread_children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut thread_msgs: Vec<Vec<Msg>> = Vec::with_capacity(scn.threads.len());
    let mut thread_needs: Vec<Option<Guarantee>> = Vec::with_capacity(scn.threads.len());
    for (t, th) in scn.threads.iter().enumerate() {
        match index.get(th.parent.as_str()) {
            Some(&p) => thread_children[p].push(t),
            None => problems.push(Problem {
                severity: Severity::Error,
                node: th.name.clone(),
                edge: Some((Some(th.parent.clone()), th.name.clone())),
                message: format!(
                    "thread `{}`: its scheduler `{}` does not exist",
                    th.name, th.parent
                ),
            }),
        }
        let mut msgs = Vec::new();
        messages_to_parent(&th.program.ops, &th.parent, &mut msgs);
        thread_msgs.push(msgs);
        thread_needs.push(match &th.needs {
            None => None,
            Some(text) => match Guarantee::parse(text) {
                Ok(g) => Some(g),
                Err(e) => {
                    problems.push(Problem {
                        severity: Severity::Error,
                        node: th.name.clone(),
                        edge: None,
                        message: format!("thread `{}`: `needs` = {text:?}: {e}", th.name),
                    });
                    None
                }
            },
        });
    }

    // Kahn's algorithm, lowest file index first among the ready ones.
    let mut order: Vec<usize> = Vec::with_capacity(n);
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
        .filter(|&i| waiting[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for &(c, _) in &sched_children[i] {
            waiting[c] -= 1;
            if waiting[c] == 0 {
                ready.push(std::cmp::Reverse(c));
            }
        }
    }
    if order.len() < n {
        let stuck: Vec<String> = (0..n)
            .filter(|&i| waiting[i] > 0)
            .map(|i| format!("`{}`", scn.schedulers[i].name))
            .collect();
        problems.push(Problem {
            severity: Severity::Error,
            node: scn.schedulers[(0..n).find(|&i| waiting[i] > 0).unwrap_or(0)]
                .name
                .clone(),
            edge: None,
            message: format!(
                "the hierarchy has a cycle through {}: not analysed",
                stuck.join(", ")
            ),
        });
    }

    let cpus = scn.machine.cpus.max(1);
    if cpus > 1 {
        notes.push(format!(
            "{cpus} CPUs: the root receives ALL on each of its {cpus} VPs; `fp` passes ALL to every child VP that never waits (no more VPs at or above its priority than CPUs); every other scheduler is analysed on one of the VPs it holds (what the others bring is extra, not promised)"
        ));
    }
    // Handlers take time no scheduler is told of: what they take is not
    // in any guarantee below, so say how much it may be.
    let handlers: Vec<&hsched_model::InterruptSpec> = scn
        .script
        .iter()
        .filter_map(|e| match &e.action {
            hsched_model::Action::Interrupt(s) => Some(s),
            _ => None,
        })
        .collect();
    if !handlers.is_empty() {
        let names: Vec<&str> = handlers.iter().map(|s| s.name.as_str()).collect();
        notes.push(format!(
            "interrupt sources ({}): their handlers take CPU time no scheduler is told of; the guarantees below assume CPUs free of them, so each can be short by the handlers' share of its CPU (mean duration over mean interval) and a latency by the longest handler, or several back to back",
            names.join(", ")
        ));
    }
    if !scn.script.is_empty() {
        notes.push(
            "the script changes the hierarchy while it runs: this is the hierarchy at time 0 (a run re-analyses each change before it is made)"
                .to_string(),
        );
    }

    let mut edges: Vec<Edge> = Vec::with_capacity(1 + n + scn.threads.len());
    // The edge carrying each scheduler link, once its parent is done.
    let mut link_edge: Vec<Vec<Option<usize>>> = scn
        .schedulers
        .iter()
        .map(|s| vec![None; s.parents.len()])
        .collect();
    let mut nodes: Vec<NodeInfo> = Vec::with_capacity(n);

    for &i in &order {
        let spec = &scn.schedulers[i];
        let mut inputs: Vec<Input<'_>> = Vec::with_capacity(spec.parents.len().max(1));
        let mut in_edges: Vec<usize> = Vec::new();
        if spec.parents.is_empty() {
            edges.push(Edge {
                from: None,
                to: spec.name.clone(),
                to_thread: false,
                vps: cpus,
                guarantee: Guarantee::All,
                why: Some(if cpus == 1 {
                    "the processor".to_string()
                } else {
                    format!("the {cpus} processors, one per VP")
                }),
                refused: false,
                taken_as: None,
            });
            in_edges.push(edges.len() - 1);
        } else {
            for e in link_edge[i].iter().flatten() {
                in_edges.push(*e);
            }
        }
        // Owned copies: the edges grow while this node is labelled.
        let received: Vec<(Option<String>, Guarantee, u32, Option<String>)> = in_edges
            .iter()
            .map(|&e| {
                let edge = &edges[e];
                (
                    edge.from.clone(),
                    edge.guarantee,
                    edge.vps,
                    edge.why.clone(),
                )
            })
            .collect();
        for (from, guarantee, vps, why) in &received {
            inputs.push(Input {
                parent: from.as_deref(),
                parent_policy: from
                    .as_deref()
                    .and_then(|p| index.get(p))
                    .map_or("", |&p| scn.schedulers[p].policy.as_str()),
                guarantee: *guarantee,
                vps: *vps,
                why: why.as_deref(),
            });
        }
        let mut children: Vec<Child<'_>> =
            Vec::with_capacity(sched_children[i].len() + thread_children[i].len());
        for &(c, l) in &sched_children[i] {
            let cs = &scn.schedulers[c];
            children.push(Child {
                name: &cs.name,
                kind: ChildKind::Scheduler { policy: &cs.policy },
                params: &cs.parents[l].params,
                vps: cs.parents[l].vps.max(1),
                messages: Vec::new(),
                needs: None,
                arrival: Instant::ZERO,
                runs: true,
            });
        }
        for &t in &thread_children[i] {
            let th = &scn.threads[t];
            children.push(Child {
                name: &th.name,
                kind: ChildKind::Thread,
                params: &th.params,
                vps: 1,
                messages: thread_msgs[t].iter().collect(),
                needs: thread_needs[t],
                arrival: th.arrival,
                runs: uses_cpu(&th.program.ops),
            });
        }
        let node = Node {
            name: &spec.name,
            policy: &spec.policy,
            params: &spec.params,
            inputs,
            children,
            machine: &scn.machine,
        };
        let rule = book.get(&spec.policy);
        let mut verdict = match rule {
            Some(r) => r.eval(&node),
            None => {
                let mut v = rules::Verdict::all_null(&node);
                if !node.children.is_empty() {
                    v.problems.push(node.problem(
                        Severity::Warning,
                        format!(
                            "{}: no guarantee rule is known for policy `{}`: its children get NULL",
                            node.who(),
                            spec.policy
                        ),
                    ));
                }
                v
            }
        };
        verdict.labels.resize(node.children.len(), Label::null());
        problems.append(&mut verdict.problems);
        if in_edges.len() == 1 {
            edges[in_edges[0]].taken_as = verdict.taken_as.clone();
        }
        nodes.push(NodeInfo {
            name: spec.name.clone(),
            policy: spec.policy.clone(),
            row: rule.map(|r| r.row().to_string()),
            literature: rules::literature::find(&spec.policy).is_some(),
            taken_as: verdict.taken_as,
        });

        let sched_count = sched_children[i].len();
        for (k, (child, label)) in node.children.iter().zip(verdict.labels).enumerate() {
            let mut edge = Edge {
                from: Some(spec.name.clone()),
                to: child.name.to_string(),
                to_thread: child.kind == ChildKind::Thread,
                vps: child.vps,
                guarantee: label.guarantee,
                why: label.why,
                refused: label.refused,
                taken_as: None,
            };
            if let Some(want) = &child.needs {
                match rewrite::implies(&edge.guarantee, want) {
                    Ok(d) => edge.taken_as = Some(d),
                    Err(e) => {
                        let why = edge
                            .why
                            .as_deref()
                            .map_or(String::new(), |w| format!(" ({w})"));
                        problems.push(Problem {
                            severity: Severity::Error,
                            node: child.name.to_string(),
                            edge: Some((Some(spec.name.clone()), child.name.to_string())),
                            message: format!(
                                "thread `{}` needs {want}, but {} gives it {}{why}: {e}",
                                child.name,
                                node.who(),
                                edge.guarantee
                            ),
                        });
                    }
                }
            }
            edges.push(edge);
            if k < sched_count {
                let (c, l) = sched_children[i][k];
                link_edge[c][l] = Some(edges.len() - 1);
            }
        }
    }

    Analysis {
        scenario: scn.name.clone(),
        cpus,
        nodes,
        edges,
        problems,
        notes,
    }
}

/// A hierarchy of about `nodes` schedulers and threads, built in code for
/// `hsched bench` and the tests: an `fp` root over a `res` (priority 1) and
/// an `rr` (priority 0); units of a `join` (reserved by `res`, and under
/// `rr`), an `sfq` under it and four weighted threads, one of which states
/// what it needs. It composes.
pub fn bench_hierarchy(nodes: usize) -> Scenario {
    use hsched_core::{Duration, Instant, Params, Value};
    use hsched_model::{Machine, ParentLink, Program, SchedulerSpec, ThreadSpec};
    let units = (nodes.saturating_sub(3) / 6).max(1);
    let ms = |n: u64| Value::Duration(Duration::from_millis(n));
    let link = |parent: &str, params: Params| ParentLink {
        parent: parent.to_string(),
        vps: 1,
        params,
    };
    let sched =
        |name: String, policy: &str, params: Params, parents: Vec<ParentLink>| SchedulerSpec {
            name,
            policy: policy.to_string(),
            params,
            parents,
        };
    let mut schedulers = vec![
        sched("root".into(), "fp", Params::new(), vec![]),
        sched(
            "res".into(),
            "res",
            Params::new(),
            vec![link("root", Params::new().with("prio", Value::Int(1)))],
        ),
        sched(
            "ts".into(),
            "rr",
            Params::new(),
            vec![link("root", Params::new().with("prio", Value::Int(0)))],
        ),
    ];
    // Half the CPU reserved in all, in equal parts.
    let period = Duration::from_secs(10);
    let amount = Duration(period.as_nanos() / (2 * units as u64));
    let mut threads = Vec::with_capacity(4 * units);
    for u in 0..units {
        let j = format!("j{u}");
        let ps = format!("ps{u}");
        schedulers.push(sched(
            j.clone(),
            "join",
            Params::new(),
            vec![
                link(
                    "res",
                    Params::new()
                        .with("amount", Value::Duration(amount))
                        .with("period", Value::Duration(period)),
                ),
                link("ts", Params::new()),
            ],
        ));
        schedulers.push(sched(
            ps.clone(),
            "sfq",
            Params::new().with("quantum", ms(10)),
            vec![link(&j, Params::new())],
        ));
        for w in 1..=4 {
            threads.push(ThreadSpec {
                name: format!("t{u}.{w}"),
                parent: ps.clone(),
                params: Params::new().with("weight", Value::Int(w)),
                arrival: Instant::ZERO,
                program: Program::default(),
                needs: (w == 1).then(|| "PS 0.000001".to_string()),
            });
        }
    }
    // Time-sharing threads make up the count exactly.
    for k in (schedulers.len() + threads.len())..nodes {
        threads.push(ThreadSpec {
            name: format!("b{k}"),
            parent: "ts".to_string(),
            params: Params::new(),
            arrival: Instant::ZERO,
            program: Program::default(),
            needs: None,
        });
    }
    Scenario {
        name: format!("bench-{nodes}"),
        description: "generated: fp over res and rr, joins, sfq, weighted threads".into(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon: Duration::from_secs(1),
        seed: 1,
        schedulers,
        default_scheduler: "ts".into(),
        threads,
        script: vec![],
    }
}
