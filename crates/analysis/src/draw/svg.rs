//! The hierarchy as SVG, bounded in size: a scheduler with more than
//! [`THREADS_PER_SCHEDULER`] threads shows the first ones and one summary
//! leaf for the rest ("and 99,990 more threads", their total share), and a
//! drawing of more than [`LAYOUT_CRATE_MAX_NODES`] boxes is laid out here,
//! as a layered tree, instead of by the `layout-rs` crate, whose layout
//! time grows about cubically with the nodes (a thousand threads took
//! minutes). Either way the time and the output grow linearly, and the
//! [`canvas`] draws it.
//!
//! A node shows its policy's parameters under its name, an edge the
//! attachment's under its guarantee (`weight=4`, `prio=10`); parameters
//! left at nothing (`false`, `""`, `0ns`) are not shown.

use super::canvas::{self, Canvas};
use super::labels;
use crate::compose::Analysis;
use crate::guarantee::Kind;
use hsched_core::{Params, Value};
use hsched_model::Scenario;
use std::collections::{BTreeSet, HashMap, HashSet};
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
    /// The policy's parameters, a few to a line.
    details: Vec<String>,
    shape: Shape,
}

impl Node {
    fn lines(&self) -> Vec<&str> {
        std::iter::once(self.label.as_str())
            .chain(self.details.iter().map(String::as_str))
            .collect()
    }
}

struct Arrow {
    from: usize,
    to: usize,
    label: String,
    /// The attachment's parameters, a few to a line.
    details: Vec<String>,
    /// The guarantee's kind (none for a summary's total).
    kind: Option<Kind>,
    /// An error is about this edge (or, for a summary, about one it stands for).
    bad: bool,
}

impl Arrow {
    fn lines(&self) -> Vec<&str> {
        std::iter::once(self.label.as_str())
            .chain(self.details.iter().map(String::as_str))
            .collect()
    }
}

/// A detail line holds parameters up to about this many characters.
const DETAIL_LINE: usize = 26;

/// `quantum=10ms`, `prio=10`: the parameters worth showing, packed into
/// lines; strings unquoted, and none that is `false`, empty or zero time.
fn detail_lines(params: &Params) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for (key, value) in params.iter() {
        let shown = match value {
            Value::Bool(false) => continue,
            Value::Str(s) if s.is_empty() => continue,
            Value::Duration(d) if d.is_zero() => continue,
            Value::Str(s) => format!("{key}={s}"),
            v => format!("{key}={v}"),
        };
        match lines.last_mut() {
            Some(line) if line.len() + 2 + shown.len() <= DETAIL_LINE => {
                line.push_str(", ");
                line.push_str(&shown);
            }
            _ => lines.push(shown),
        }
    }
    lines
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
    let bad = labels::error_edges(a);
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
    let mut add = |nodes: &mut Vec<Node>, key: String, label: String, details, shape: Shape| {
        index.insert(key, nodes.len());
        nodes.push(Node {
            label,
            details,
            shape,
        });
    };
    add(
        &mut nodes,
        "machine".into(),
        labels::cpus_text(a),
        Vec::new(),
        Shape::Plain,
    );
    for s in &scn.schedulers {
        add(
            &mut nodes,
            format!("s:{}", s.name),
            labels::sched_label(&s.name, &s.policy),
            detail_lines(&s.params),
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
            Vec::new(),
            Shape::Ellipse,
        );
    }
    // What each child attached with, by (parent, child).
    let mut attached: HashMap<(&str, &str), &Params> = HashMap::new();
    for t in &scn.threads {
        attached.insert((t.parent.as_str(), t.name.as_str()), &t.params);
    }
    for s in &scn.schedulers {
        for link in &s.parents {
            attached.insert((link.parent.as_str(), s.name.as_str()), &link.params);
        }
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
        let details = e
            .from
            .as_deref()
            .and_then(|f| attached.get(&(f, e.to.as_str())))
            .map_or_else(Vec::new, |p| detail_lines(p));
        arrows.push(Arrow {
            from,
            to,
            label: labels::label_text(e),
            details,
            kind: Some(e.guarantee.kind()),
            bad: is_bad(e),
        });
    }
    for (parent, rest) in summaries {
        let from = index[&format!("s:{parent}")];
        let to = nodes.len();
        nodes.push(Node {
            label: format!("and {} more threads", grouped(rest.len())),
            details: Vec::new(),
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
            details: Vec::new(),
            kind: None,
            bad: rest.iter().any(|&i| is_bad(&a.edges[i])),
        });
    }
    Drawing { nodes, arrows }
}

/// The SVG of the labelled hierarchy.
pub(super) fn svg(scn: &Scenario, a: &Analysis) -> String {
    let d = drawing(scn, a);
    let canvas = if d.nodes.len() <= LAYOUT_CRATE_MAX_NODES {
        by_layout_crate(&d)
    } else {
        layered(&d)
    };
    // The legend lists the kinds drawn, strongest first.
    let drawn: BTreeSet<Kind> = d.arrows.iter().filter_map(|e| e.kind).collect();
    let kinds: Vec<Kind> = Kind::TABLE_ORDER
        .into_iter()
        .filter(|k| drawn.contains(k))
        .collect();
    canvas.finish(&kinds, d.arrows.iter().any(|e| e.bad))
}

fn by_layout_crate(d: &Drawing) -> Canvas {
    use layout::core::base::Orientation;
    use layout::core::color::Color;
    use layout::core::geometry::Point;
    use layout::core::style::{LineStyleKind, StyleAttr};
    use layout::std_shapes::render::get_shape_size;
    use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
    use layout::topo::layout::VisualGraph;

    let dir = Orientation::TopToBottom;
    // The crate sizes an edge's label by its longest line times the font
    // size.
    let (name_font, label_font) = (NAME_FONT_SIZE, LABEL_FONT_SIZE);
    let mut vg = VisualGraph::new(dir);
    let handles: Vec<_> = d
        .nodes
        .iter()
        .map(|n| {
            let text = n.lines().join("\n");
            let (shape, look) = match n.shape {
                Shape::Plain => (
                    ShapeKind::new_box(&text),
                    StyleAttr::new(Color::fast("white"), 0, None, 0, name_font),
                ),
                Shape::Box => (
                    ShapeKind::new_box(&text),
                    StyleAttr::new(Color::fast("black"), 2, None, 0, name_font),
                ),
                Shape::Ellipse => (
                    ShapeKind::new_circle(&text),
                    StyleAttr::new(Color::fast("black"), 2, None, 0, name_font),
                ),
            };
            // The crate's own size allows a full font size per character,
            // too wide for the small parameter lines.
            let crate_size = get_shape_size(dir, &shape, name_font, false);
            let lines = n.lines();
            let pad = match n.shape {
                Shape::Ellipse => 1.35,
                _ => 1.0,
            };
            let size = Point::new(
                (canvas::block_width(&lines) * pad + 24.0).min(crate_size.x),
                canvas::block_height(lines.len()) * pad + 12.0,
            );
            vg.add_node(Element::create(shape, look, dir, size))
        })
        .collect();
    for e in &d.arrows {
        let color = if e.bad { "red" } else { "black" };
        let look = StyleAttr::new(Color::fast(color), 2, None, 0, label_font);
        let arrow = Arrow::new(
            LineEndKind::None,
            LineEndKind::Arrow,
            LineStyleKind::Normal,
            &e.lines().join("\n"),
            &look,
            &None,
            &None,
        );
        vg.add_edge(arrow, handles[e.from], handles[e.to]);
    }
    let mut backend = Backend {
        canvas: Canvas::new(),
        node_text_next: false,
        bad_labels: d
            .arrows
            .iter()
            .filter(|e| e.bad)
            .map(|e| e.lines().join("\n"))
            .collect(),
        red: Color::fast("red").to_web_color(),
    };
    vg.do_it(false, false, false, &mut backend);
    backend.canvas
}

/// The font sizes the layout crate sizes names and labels with.
const NAME_FONT_SIZE: usize = 15;
const LABEL_FONT_SIZE: usize = 13;

/// Takes the layout crate's draw calls and hands them to the canvas.
struct Backend {
    canvas: Canvas,
    /// A node's shape was just drawn: the next text is its name. (Any other
    /// text is an edge's label; the crate may move a label onto a plain
    /// connector of a long edge, losing its style, so that cannot tell.)
    node_text_next: bool,
    /// The label texts of edges an error is about.
    bad_labels: HashSet<String>,
    /// How the crate writes the colour of an edge an error is about.
    red: String,
}

impl layout::core::format::RenderBackend for Backend {
    fn draw_rect(
        &mut self,
        xy: layout::core::geometry::Point,
        size: layout::core::geometry::Point,
        look: &layout::core::style::StyleAttr,
        _properties: Option<String>,
        _clip: Option<layout::core::format::ClipHandle>,
    ) {
        self.node_text_next = true;
        // The machine's text has no frame.
        if look.line_width > 0 {
            self.canvas.rect(xy.x, xy.y, size.x, size.y);
        }
    }

    fn draw_line(
        &mut self,
        start: layout::core::geometry::Point,
        stop: layout::core::geometry::Point,
        look: &layout::core::style::StyleAttr,
        _properties: Option<String>,
    ) {
        let bad = look.line_color.to_web_color() == self.red;
        self.canvas
            .edge_line((start.x, start.y), (stop.x, stop.y), bad);
    }

    fn draw_circle(
        &mut self,
        xy: layout::core::geometry::Point,
        size: layout::core::geometry::Point,
        _look: &layout::core::style::StyleAttr,
        _properties: Option<String>,
    ) {
        self.node_text_next = true;
        self.canvas.ellipse(xy.x, xy.y, size.x / 2.0, size.y / 2.0);
    }

    fn draw_text(
        &mut self,
        xy: layout::core::geometry::Point,
        text: &str,
        _look: &layout::core::style::StyleAttr,
    ) {
        let lines: Vec<&str> = text.lines().collect();
        if std::mem::take(&mut self.node_text_next) {
            self.canvas.node_text(xy.x, xy.y, &lines);
        } else {
            let bad = self.bad_labels.contains(text);
            self.canvas.label(xy.x, xy.y, &lines, bad);
        }
    }

    fn draw_arrow(
        &mut self,
        path: &[(layout::core::geometry::Point, layout::core::geometry::Point)],
        _dashed: bool,
        _head: (bool, bool),
        look: &layout::core::style::StyleAttr,
        _properties: Option<String>,
        _text: &str,
    ) {
        // The crate's form: the first pair is the exit point and its
        // control point, each later pair an entry point's control point
        // and the point (a cubic, then smooth cubics).
        if path.len() < 2 {
            return;
        }
        let mut d = format!(
            "M{:.1},{:.1} C{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
            path[0].0.x,
            path[0].0.y,
            path[0].1.x,
            path[0].1.y,
            path[1].0.x,
            path[1].0.y,
            path[1].1.x,
            path[1].1.y
        );
        for p in &path[2..] {
            let _ = write!(d, " S{:.1},{:.1} {:.1},{:.1}", p.0.x, p.0.y, p.1.x, p.1.y);
        }
        let bad = look.line_color.to_web_color() == self.red;
        self.canvas.edge_path(&d, bad);
    }

    fn create_clip(
        &mut self,
        _xy: layout::core::geometry::Point,
        _size: layout::core::geometry::Point,
        _rounded_px: usize,
    ) -> layout::core::format::ClipHandle {
        // Only records clip, and the drawing has none.
        0
    }
}

const NODE_HEIGHT: f64 = 36.0;
const ROW_HEIGHT: f64 = 110.0;
const GAP: f64 = 24.0;
const MARGIN: f64 = 20.0;

/// A layered tree: each node under the parent of its first edge, one row
/// per level, a parent centred over its children, each child's slot wide
/// enough for its box and the label of the edge into it. Edges from other
/// parents (joins) are drawn too, as straight lines.
fn layered(d: &Drawing) -> Canvas {
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
            label_into[e.to] = canvas::block_width(&e.lines());
        }
    }
    let node_width: Vec<f64> = d
        .nodes
        .iter()
        .map(|node| {
            let w = canvas::block_width(&node.lines()) + 24.0;
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
    let mut c = Canvas::new();
    for e in &d.arrows {
        let (x1, y1) = (x[e.from], y(e.from) + NODE_HEIGHT / 2.0);
        let (x2, y2) = (x[e.to], y(e.to) - NODE_HEIGHT / 2.0);
        c.edge_line((x1, y1), (x2, y2), e.bad);
        // Near the child, where siblings' slots keep the labels apart.
        let (lx, ly) = (x1 + (x2 - x1) * 0.7, y1 + (y2 - y1) * 0.7);
        c.label(lx, ly, &e.lines(), e.bad);
    }
    for (v, node) in d.nodes.iter().enumerate() {
        let (cx, cy, w) = (x[v], y(v), node_width[v]);
        match node.shape {
            Shape::Plain => {}
            Shape::Box => c.rect(cx - w / 2.0, cy - NODE_HEIGHT / 2.0, w, NODE_HEIGHT),
            Shape::Ellipse => c.ellipse(cx, cy, w / 2.0, NODE_HEIGHT / 2.0),
        }
        c.node_text(cx, cy, &node.lines());
    }
    // The canvas's size is what it drew; make room for the right margin.
    c.extend(next_root + MARGIN, MARGIN);
    c
}
