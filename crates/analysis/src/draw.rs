//! The labelled hierarchy of [`crate::compose`], for people and for tools:
//! the text tree `hsched check` prints, Graphviz DOT, an SVG drawn like the
//! HLS paper's Fig. 3 (schedulers as boxes, threads as ellipses, each arrow
//! labelled with its guarantee; the `svg` module says how its size is
//! bounded), and JSON with stable keys.
//!
//! All four are deterministic: they follow the scenario's order and the
//! analysis' order, never a hash order. Floating point appears only in the
//! SVG's coordinates.

use crate::compose::{Analysis, Edge, NodeInfo};
use crate::rewrite::Derivation;
use hsched_model::Scenario;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;

mod canvas;
mod labels;
mod svg;
use labels::{cpus_text, error_edges, label_text, sched_label};
pub use svg::{LAYOUT_CRATE_MAX_NODES, THREADS_PER_SCHEDULER};

/// "RESBS 40, 80 -> PSBE 0.5, 40 (Th. 4); ..." for a derivation's steps.
pub fn steps_text(d: &Derivation) -> String {
    d.steps
        .iter()
        .map(|s| format!("{} -> {} ({})", s.from, s.to, s.rule))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Edges by (parent, child) for the tree walks.
fn edge_index(a: &Analysis) -> HashMap<(Option<&str>, &str), &Edge> {
    a.edges
        .iter()
        .map(|e| ((e.from.as_deref(), e.to.as_str()), e))
        .collect()
}

/// The hierarchy as `hsched check` prints it: each scheduler and thread on
/// its edge, with the guarantee the edge carries (`⇐ RESBH 5, 33`) and why,
/// the rewrites used, the `bvt` configuration report under `bvt` nodes;
/// then the notes, the problems and the verdict. A join's subtree is shown
/// under its first parent; later parents show the edge only.
pub fn text(scn: &Scenario, a: &Analysis) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hierarchy (default scheduler: {}):",
        scn.default_scheduler
    );
    let edges = edge_index(a);
    let index: HashMap<&str, usize> = scn
        .schedulers
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let mut sched_children: Vec<Vec<(usize, usize)>> = vec![Vec::new(); scn.schedulers.len()];
    for (c, s) in scn.schedulers.iter().enumerate() {
        for (l, link) in s.parents.iter().enumerate() {
            if let Some(&p) = index.get(link.parent.as_str()) {
                sched_children[p].push((c, l));
            }
        }
    }
    let mut thread_children: Vec<Vec<usize>> = vec![Vec::new(); scn.schedulers.len()];
    for (t, th) in scn.threads.iter().enumerate() {
        if let Some(&p) = index.get(th.parent.as_str()) {
            thread_children[p].push(t);
        }
    }
    let walk = Walk {
        scn,
        nodes: a.nodes.iter().map(|n| (n.name.as_str(), n)).collect(),
        edges,
        sched_children,
        thread_children,
    };
    let mut shown = vec![false; scn.schedulers.len()];
    for (i, s) in scn.schedulers.iter().enumerate() {
        if s.parents.is_empty() {
            walk.sched(&mut out, i, None, 0, &mut shown);
        }
    }
    for n in &a.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(out, "guarantees: {}", summary(a));
    for p in &a.problems {
        let _ = writeln!(out, "  {p}");
    }
    out
}

/// "the hierarchy composes (2 warnings)" or "the hierarchy does not
/// compose (1 error, 1 warning)".
pub fn summary(a: &Analysis) -> String {
    let (e, w) = (a.errors().count(), a.warnings().count());
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match (e, w) {
        (0, 0) => "the hierarchy composes".into(),
        (0, w) => format!("the hierarchy composes ({})", plural(w, "warning")),
        (e, 0) => format!("the hierarchy does not compose ({})", plural(e, "error")),
        (e, w) => format!(
            "the hierarchy does not compose ({}, {})",
            plural(e, "error"),
            plural(w, "warning")
        ),
    }
}

struct Walk<'a> {
    scn: &'a Scenario,
    nodes: HashMap<&'a str, &'a NodeInfo>,
    edges: HashMap<(Option<&'a str>, &'a str), &'a Edge>,
    sched_children: Vec<Vec<(usize, usize)>>,
    thread_children: Vec<Vec<usize>>,
}

impl Walk<'_> {
    fn sched(
        &self,
        out: &mut String,
        i: usize,
        link: Option<(usize, &str)>,
        depth: usize,
        shown: &mut [bool],
    ) {
        let spec = &self.scn.schedulers[i];
        let indent = "  ".repeat(depth + 1);
        let params = if spec.params.is_empty() {
            String::new()
        } else {
            format!(" [{}]", spec.params)
        };
        let (at, parent) = match link {
            Some((l, parent)) => {
                let pl = &spec.parents[l];
                let mut at = if pl.params.is_empty() {
                    String::new()
                } else {
                    format!(" @ {}", pl.params)
                };
                if pl.vps > 1 {
                    let _ = write!(at, " ×{} VPs", pl.vps);
                }
                (at, Some(parent))
            }
            None => (String::new(), None),
        };
        let edge = self.edges.get(&(parent, spec.name.as_str()));
        let label = edge.map_or(String::new(), |e| {
            let why = e
                .why
                .as_deref()
                .map_or(String::new(), |w| format!(" ({w})"));
            format!("  ⇐ {}{why}", e.guarantee)
        });
        let again = shown[i];
        let tail = if again { "  [joined: shown above]" } else { "" };
        let _ = writeln!(
            out,
            "{indent}{}: {}{params}{at}{label}{tail}",
            spec.name, spec.policy
        );
        if again {
            return;
        }
        shown[i] = true;
        if let Some(node) = self.nodes.get(spec.name.as_str()) {
            if let Some(d) = &node.taken_as {
                let _ = writeln!(out, "{indent}    taken as {}: {}", d.result, steps_text(d));
            }
        }
        // (The report looks the node up by name: only ask for `bvt` nodes.)
        let bvt = spec.policy == crate::bvt_report::BVT_POLICY;
        if let Some(report) = bvt
            .then(|| crate::bvt_report(self.scn, &spec.name))
            .flatten()
        {
            for line in report.lines() {
                let _ = writeln!(out, "{indent}  {line}");
            }
        }
        for &(c, l) in &self.sched_children[i] {
            self.sched(out, c, Some((l, &spec.name)), depth + 1, shown);
        }
        for &t in &self.thread_children[i] {
            let th = &self.scn.threads[t];
            let at = if th.params.is_empty() {
                String::new()
            } else {
                format!(" @ {}", th.params)
            };
            let edge = self
                .edges
                .get(&(Some(spec.name.as_str()), th.name.as_str()));
            let label = edge.map_or(String::new(), |e| {
                let why = e
                    .why
                    .as_deref()
                    .map_or(String::new(), |w| format!(" ({w})"));
                format!("  ⇐ {}{why}", e.guarantee)
            });
            let _ = writeln!(out, "{indent}  thread {}{at}{label}", th.name);
            if let (Some(needs), Some(e)) = (&th.needs, edge) {
                let met = match &e.taken_as {
                    Some(d) if d.steps.is_empty() => "met".to_string(),
                    Some(d) => format!("met: {}", steps_text(d)),
                    None => "NOT met (see the errors)".to_string(),
                };
                let _ = writeln!(out, "{indent}      needs {needs}: {met}");
            }
        }
    }
}

/// Quotes a DOT identifier or label.
fn dot_quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// Graphviz DOT: schedulers as boxes, threads as ellipses, the machine as
/// plain text, each edge labelled with its guarantee; edges an error is
/// about are red.
pub fn dot(scn: &Scenario, a: &Analysis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", dot_quote(&scn.name));
    let _ = writeln!(out, "  rankdir=TB;");
    let _ = writeln!(out, "  node [fontname=\"Helvetica\"];");
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(
        out,
        "  \"machine\" [shape=plaintext, label={}];",
        dot_quote(&cpus_text(a))
    );
    for s in &scn.schedulers {
        let _ = writeln!(
            out,
            "  {} [shape=box, label={}];",
            dot_quote(&format!("s:{}", s.name)),
            dot_quote(&sched_label(&s.name, &s.policy))
        );
    }
    for t in &scn.threads {
        let _ = writeln!(
            out,
            "  {} [shape=ellipse, label={}];",
            dot_quote(&format!("t:{}", t.name)),
            dot_quote(&t.name)
        );
    }
    let bad = error_edges(a);
    for e in &a.edges {
        let from = match &e.from {
            Some(f) => format!("s:{f}"),
            None => "machine".to_string(),
        };
        let to = format!("{}:{}", if e.to_thread { "t" } else { "s" }, e.to);
        let red = if bad.contains(&(e.from.as_deref(), e.to.as_str())) {
            ", color=red, fontcolor=red"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {} -> {} [label={}{red}];",
            dot_quote(&from),
            dot_quote(&to),
            dot_quote(&label_text(e))
        );
    }
    let _ = writeln!(out, "}}");
    out
}

/// An SVG drawing of the labelled hierarchy, like the paper's Fig. 3
/// (bounded in size: see the `svg` module).
pub fn svg(scn: &Scenario, a: &Analysis) -> String {
    svg::svg(scn, a)
}

#[derive(Serialize)]
struct JsonStep {
    rule: String,
    from: String,
    to: String,
}

#[derive(Serialize)]
struct JsonDerivation {
    result: String,
    steps: Vec<JsonStep>,
}

impl JsonDerivation {
    fn of(d: &Derivation) -> JsonDerivation {
        JsonDerivation {
            result: d.result.to_string(),
            steps: d
                .steps
                .iter()
                .map(|s| JsonStep {
                    rule: s.rule.to_string(),
                    from: s.from.to_string(),
                    to: s.to.to_string(),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct JsonNode<'a> {
    name: &'a str,
    policy: &'a str,
    row: Option<&'a str>,
    literature: bool,
    taken_as: Option<JsonDerivation>,
}

#[derive(Serialize)]
struct JsonEdge<'a> {
    from: Option<&'a str>,
    to: &'a str,
    child: &'static str,
    vps: u32,
    guarantee: String,
    kind: &'static str,
    /// The exact long-run share, as a fraction (`"1/10"`); none for NULL.
    share: Option<String>,
    why: Option<&'a str>,
    taken_as: Option<JsonDerivation>,
}

#[derive(Serialize)]
struct JsonProblem<'a> {
    severity: String,
    node: &'a str,
    edge_from: Option<&'a str>,
    edge_to: Option<&'a str>,
    message: &'a str,
}

#[derive(Serialize)]
struct JsonAnalysis<'a> {
    scenario: &'a str,
    cpus: u32,
    composes: bool,
    nodes: Vec<JsonNode<'a>>,
    edges: Vec<JsonEdge<'a>>,
    problems: Vec<JsonProblem<'a>>,
    notes: &'a [String],
}

/// The analysis as JSON, keys stable: `scenario`, `cpus`, `composes`,
/// `nodes` (`name`, `policy`, `row`, `literature`, `taken_as`), `edges`
/// (`from` — null for the machine —, `to`, `child` "scheduler" or
/// "thread", `vps`, `guarantee` as the paper writes it, `kind`, `share` as
/// an exact fraction, `why`, `taken_as` {`result`, `steps` [{`rule`,
/// `from`, `to`}]}), `problems` (`severity`, `node`, `edge_from`,
/// `edge_to`, `message`), `notes`.
pub fn json(a: &Analysis) -> String {
    let doc = JsonAnalysis {
        scenario: &a.scenario,
        cpus: a.cpus,
        composes: a.composes(),
        nodes: a
            .nodes
            .iter()
            .map(|n| JsonNode {
                name: &n.name,
                policy: &n.policy,
                row: n.row.as_deref(),
                literature: n.literature,
                taken_as: n.taken_as.as_ref().map(JsonDerivation::of),
            })
            .collect(),
        edges: a
            .edges
            .iter()
            .map(|e| JsonEdge {
                from: e.from.as_deref(),
                to: &e.to,
                child: if e.to_thread { "thread" } else { "scheduler" },
                vps: e.vps,
                guarantee: e.guarantee.to_string(),
                kind: e.guarantee.kind().name(),
                share: e.guarantee.share().map(|s| s.to_string()),
                why: e.why.as_deref(),
                taken_as: e.taken_as.as_ref().map(JsonDerivation::of),
            })
            .collect(),
        problems: a
            .problems
            .iter()
            .map(|p| JsonProblem {
                severity: p.severity.to_string(),
                node: &p.node,
                edge_from: p.edge.as_ref().and_then(|(f, _)| f.as_deref()),
                edge_to: p.edge.as_ref().map(|(_, t)| t.as_str()),
                message: &p.message,
            })
            .collect(),
        notes: &a.notes,
    };
    serde_json::to_string_pretty(&doc).expect("plain data serialises")
}
