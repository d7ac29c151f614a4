//! The hierarchy as SVG, bounded in size: a scheduler with more than
//! [`THREADS_PER_SCHEDULER`] threads shows the first ones and one summary
//! leaf for the rest ("and 99,990 more threads", their total share), and a
//! drawing of more than [`LAYOUT_CRATE_MAX_NODES`] boxes is laid out here,
//! as a layered tree, instead of by the `layout-rs` crate, whose layout
//! time grows about cubically with the nodes (a thousand threads took
//! minutes). Either way the time and the output grow linearly.

use crate::compose::Analysis;
use hsched_model::Scenario;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Threads drawn under one scheduler; past this, the first
/// `THREADS_PER_SCHEDULER - 1` (those with errors first) and a summary leaf.
pub const THREADS_PER_SCHEDULER: usize = 12;

/// The largest drawing (boxes and ellipses, the machine included) laid out
/// by the `layout-rs` crate; larger ones get the layered tree layout.
pub const LAYOUT_CRATE_MAX_NODES: usize = 40;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The machine: text without a frame.
    Plain,
    /// A scheduler.
    Box,
    /// A thread, or a summary of threads.
    Ellipse,
}

struct Node {
    label: String,
    shape: Shape,
}

struct Arrow {
    from: usize,
    to: usize,
    label: String,
    /// An error is about this edge (or, for a summary, about one it stands for).
    bad: bool,
}

/// What is drawn, in the order the `layout-rs` drawing always used: the
/// machine, the schedulers, the threads, then the edges in the analysis'
/// order; summaries come last.
struct Drawing {
    nodes: Vec<Node>,
    arrows: Vec<Arrow>,
}

/// 99990 as "99,990".
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn drawing(scn: &Scenario, a: &Analysis) -> Drawing {
    let bad = super::error_edges(a);
    let is_bad = |e: &crate::compose::Edge| bad.contains(&(e.from.as_deref(), e.to.as_str()));
    // Which threads each scheduler's summary stands for.
    let mut by_parent: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, e) in a.edges.iter().enumerate() {
        if let (true, Some(from)) = (e.to_thread, e.from.as_deref()) {
            by_parent.entry(from).or_default().push(i);
        }
    }
    let mut hidden: HashSet<usize> = HashSet::new();
    // (parent, hidden edges) in the scenario's scheduler order.
    let mut summaries: Vec<(&str, Vec<usize>)> = Vec::new();
    for s in &scn.schedulers {
        let Some(edges) = by_parent.get(s.name.as_str()) else {
            continue;
        };
        if edges.len() <= THREADS_PER_SCHEDULER {
            continue;
        }
        let mut shown: Vec<usize> = edges
            .iter()
            .copied()
            .filter(|&i| is_bad(&a.edges[i]))
            .take(THREADS_PER_SCHEDULER - 1)
            .collect();
        for &i in edges {
            if shown.len() == THREADS_PER_SCHEDULER - 1 {
                break;
            }
            if !shown.contains(&i) {
                shown.push(i);
            }
        }
        let rest: Vec<usize> = edges
            .iter()
            .copied()
            .filter(|i| !shown.contains(i))
            .collect();
        hidden.extend(&rest);
        summaries.push((&s.name, rest));
    }
    let hidden_threads: HashSet<&str> = hidden.iter().map(|&i| a.edges[i].to.as_str()).collect();

    let mut nodes = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut add = |nodes: &mut Vec<Node>, key: String, label: String, shape: Shape| {
        index.insert(key, nodes.len());
        nodes.push(Node { label, shape });
    };
    add(
        &mut nodes,
        "machine".into(),
        super::cpus_text(a),
        Shape::Plain,
    );
    for s in &scn.schedulers {
        add(
            &mut nodes,
            format!("s:{}", s.name),
            super::sched_label(&s.name, &s.policy),
            Shape::Box,
        );
    }
    for t in scn
        .threads
        .iter()
        .filter(|t| !hidden_threads.contains(t.name.as_str()))
    {
        add(
            &mut nodes,
            format!("t:{}", t.name),
            t.name.clone(),
            Shape::Ellipse,
        );
    }
    let mut arrows = Vec::new();
    for (i, e) in a.edges.iter().enumerate() {
        if hidden.contains(&i) {
            continue;
        }
        let from = match &e.from {
            Some(f) => format!("s:{f}"),
            None => "machine".to_string(),
        };
        let to = format!("{}:{}", if e.to_thread { "t" } else { "s" }, e.to);
        let (Some(&from), Some(&to)) = (index.get(&from), index.get(&to)) else {
            continue;
        };
        arrows.push(Arrow {
            from,
            to,
            label: super::label_text(e),
            bad: is_bad(e),
        });
    }
    for (parent, rest) in summaries {
        let from = index[&format!("s:{parent}")];
        let to = nodes.len();
        nodes.push(Node {
            label: format!("and {} more threads", grouped(rest.len())),
            shape: Shape::Ellipse,
        });
        let mut total = 0.0;
        let mut null = 0;
        for &i in &rest {
            let e = &a.edges[i];
            match e.guarantee.share() {
                Some(s) => total += s.as_f64() * f64::from(e.vps),
                None => null += 1,
            }
        }
        let label = match null {
            0 => format!("total {:.2}%", total * 100.0),
            n if n == rest.len() => "NULL each".to_string(),
            n => format!("total {:.2}% ({} NULL)", total * 100.0, grouped(n)),
        };
        arrows.push(Arrow {
            from,
            to,
            label,
            bad: rest.iter().any(|&i| is_bad(&a.edges[i])),
        });
    }
    Drawing { nodes, arrows }
}

/// The SVG of the labelled hierarchy.
pub(super) fn svg(scn: &Scenario, a: &Analysis) -> String {
    let d = drawing(scn, a);
    if d.nodes.len() <= LAYOUT_CRATE_MAX_NODES {
        by_layout_crate(&d)
    } else {
        layered(&d)
    }
}

fn by_layout_crate(d: &Drawing) -> String {
    use layout::backends::svg::SVGWriter;
    use layout::core::base::Orientation;
    use layout::core::color::Color;
    use layout::core::style::{LineStyleKind, StyleAttr};
    use layout::std_shapes::render::get_shape_size;
    use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
    use layout::topo::layout::VisualGraph;

    let dir = Orientation::TopToBottom;
    let font = 15;
    let mut vg = VisualGraph::new(dir);
    let handles: Vec<_> = d
        .nodes
        .iter()
        .map(|n| {
            let (shape, look) = match n.shape {
                Shape::Plain => (
                    ShapeKind::new_box(&n.label),
                    StyleAttr::new(Color::fast("white"), 0, None, 0, font),
                ),
                Shape::Box => (ShapeKind::new_box(&n.label), StyleAttr::simple()),
                Shape::Ellipse => (ShapeKind::new_circle(&n.label), StyleAttr::simple()),
            };
            let size = get_shape_size(dir, &shape, font, false);
            vg.add_node(Element::create(shape, look, dir, size))
        })
        .collect();
    for e in &d.arrows {
        let color = if e.bad { "red" } else { "black" };
        let look = StyleAttr::new(Color::fast(color), 2, None, 0, 13);
        let arrow = Arrow::new(
            LineEndKind::None,
            LineEndKind::Arrow,
            LineStyleKind::Normal,
            &e.label,
            &look,
            &None,
            &None,
        );
        vg.add_edge(arrow, handles[e.from], handles[e.to]);
    }
    let mut w = SVGWriter::new();
    vg.do_it(false, false, false, &mut w);
    sorted_style(&w.finalize())
}

/// The SVG writer lists its font classes from a hash map, in no fixed
/// order: sort the lines of the `<style>` block so the output is the same
/// on every run (and add the label halo).
fn sorted_style(svg: &str) -> String {
    let (Some(open), Some(close)) = (svg.find("<style>"), svg.find("</style>")) else {
        return svg.to_string();
    };
    if close < open {
        return svg.to_string();
    }
    let head = open + "<style>".len();
    let mut lines: Vec<&str> = svg[head..close].lines().filter(|l| !l.is_empty()).collect();
    lines.push(HALO);
    lines.sort_unstable();
    format!("{}\n{}\n{}", &svg[..head], lines.join("\n"), &svg[close..])
}

/// A white halo behind every text, so an edge's label reads where the edge
/// runs through it.
const HALO: &str =
    "text { paint-order: stroke; stroke: #ffffff; stroke-width: 4px; stroke-linejoin: round; }";

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Width of a text in the drawing's fonts, from its length (no font
/// metrics: a generous average character width).
fn text_width(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * 0.62
}

const NODE_FONT: f64 = 15.0;
const EDGE_FONT: f64 = 13.0;
const NODE_HEIGHT: f64 = 36.0;
const ROW_HEIGHT: f64 = 110.0;
const GAP: f64 = 24.0;
const MARGIN: f64 = 20.0;

/// A layered tree: each node under the parent of its first edge, one row
/// per level, a parent centred over its children, each child's slot wide
/// enough for its box and the label of the edge into it. Edges from other
/// parents (joins) are drawn too, as straight lines.
fn layered(d: &Drawing) -> String {
    let n = d.nodes.len();
    let mut first_parent: Vec<Option<usize>> = vec![None; n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut label_into: Vec<f64> = vec![0.0; n];
    for e in &d.arrows {
        // The hierarchy has no cycles (the scenario parser refuses them),
        // so first parents make a forest.
        if first_parent[e.to].is_none() && e.to != e.from {
            first_parent[e.to] = Some(e.from);
            children[e.from].push(e.to);
            label_into[e.to] = text_width(&e.label, EDGE_FONT);
        }
    }
    let node_width: Vec<f64> = d
        .nodes
        .iter()
        .map(|node| {
            let w = text_width(&node.label, NODE_FONT) + 24.0;
            if node.shape == Shape::Ellipse {
                w * 1.2
            } else {
                w
            }
        })
        .collect();
    // Depth-first preorder over the spanning tree, without recursion (a
    // chain of schedulers may be deep).
    let mut order = Vec::with_capacity(n);
    let mut depth = vec![0usize; n];
    let mut stack: Vec<usize> = (0..n)
        .filter(|&i| first_parent[i].is_none())
        .rev()
        .collect();
    while let Some(v) = stack.pop() {
        order.push(v);
        for &c in children[v].iter().rev() {
            depth[c] = depth[v] + 1;
            stack.push(c);
        }
    }
    // Each subtree's width, children before parents.
    let mut span = vec![0.0f64; n];
    for &v in order.iter().rev() {
        let own = node_width[v].max(label_into[v]) + GAP;
        let kids: f64 = children[v].iter().map(|&c| span[c]).sum();
        span[v] = own.max(kids);
    }
    // Left edge of each subtree, parents before children; then centres.
    let mut left = vec![0.0f64; n];
    let mut x = vec![0.0f64; n];
    let mut next_root = MARGIN;
    for &v in &order {
        if first_parent[v].is_none() {
            left[v] = next_root;
            next_root += span[v];
        }
        x[v] = left[v] + span[v] / 2.0;
        let kids: f64 = children[v].iter().map(|&c| span[c]).sum();
        let mut at = left[v] + (span[v] - kids) / 2.0;
        for &c in &children[v] {
            left[c] = at;
            at += span[c];
        }
    }
    let y = |v: usize| MARGIN + depth[v] as f64 * ROW_HEIGHT + NODE_HEIGHT / 2.0;
    let width = next_root + MARGIN;
    let height =
        MARGIN * 2.0 + (depth.iter().max().copied().unwrap_or(0) as f64) * ROW_HEIGHT + NODE_HEIGHT;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">"
    );
    let _ = writeln!(
        out,
        "<style>\n{HALO}\ntext {{ font-family: Helvetica, Arial, sans-serif; text-anchor: middle; dominant-baseline: central; }}\n.node {{ font-size: {NODE_FONT}px; }}\n.edge {{ font-size: {EDGE_FONT}px; }}\n</style>"
    );
    for color in ["black", "red"] {
        let _ = writeln!(
            out,
            "<defs><marker id=\"head-{color}\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{color}\"/></marker></defs>"
        );
    }
    for e in &d.arrows {
        let color = if e.bad { "red" } else { "black" };
        let (x1, y1) = (x[e.from], y(e.from) + NODE_HEIGHT / 2.0);
        let (x2, y2) = (x[e.to], y(e.to) - NODE_HEIGHT / 2.0);
        let _ = writeln!(
            out,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{color}\" stroke-width=\"2\" marker-end=\"url(#head-{color})\"/>"
        );
        // Near the child, where siblings' slots keep the labels apart.
        let (lx, ly) = (x1 + (x2 - x1) * 0.7, y1 + (y2 - y1) * 0.7);
        let _ = writeln!(
            out,
            "<text class=\"edge\" x=\"{lx:.1}\" y=\"{ly:.1}\" fill=\"{color}\">{}</text>",
            escape(&e.label)
        );
    }
    for (v, node) in d.nodes.iter().enumerate() {
        let (cx, cy, w) = (x[v], y(v), node_width[v]);
        match node.shape {
            Shape::Plain => {}
            Shape::Box => {
                let _ = writeln!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{NODE_HEIGHT}\" fill=\"white\" stroke=\"black\" stroke-width=\"2\"/>",
                    cx - w / 2.0,
                    cy - NODE_HEIGHT / 2.0
                );
            }
            Shape::Ellipse => {
                let _ = writeln!(
                    out,
                    "<ellipse cx=\"{cx:.1}\" cy=\"{cy:.1}\" rx=\"{:.1}\" ry=\"{:.1}\" fill=\"white\" stroke=\"black\" stroke-width=\"2\"/>",
                    w / 2.0,
                    NODE_HEIGHT / 2.0
                );
            }
        }
        let _ = writeln!(
            out,
            "<text class=\"node\" x=\"{cx:.1}\" y=\"{cy:.1}\">{}</text>",
            escape(&node.label)
        );
    }
    out.push_str("</svg>\n");
    out
}
