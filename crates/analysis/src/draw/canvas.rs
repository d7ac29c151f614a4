//! How the hierarchy drawing looks, whichever layout placed it: the HTML
//! report's font, schedulers as boxes and threads as ellipses with their
//! parameters under the name, each edge's label on a white plate drawn
//! after every edge (so no line runs through a label), and a legend of the
//! guarantee kinds the drawing uses.

use crate::guarantee::Kind;
use std::fmt::Write as _;

/// The report's font stack (report.css), so the drawing and the page match.
const FONT_FAMILY: &str =
    "system-ui, -apple-system, &quot;Segoe UI&quot;, &quot;DejaVu Sans&quot;, sans-serif";
/// Text, lines and frames (the report's `--fg`).
pub(super) const INK: &str = "#1d232b";
/// An edge an error is about (the report's `--bad`).
pub(super) const BAD: &str = "#c62828";
/// Parameters and the legend (the report's `--muted`).
const MUTED: &str = "#5b6570";

pub(super) const NAME_FONT: f64 = 15.0;
pub(super) const LABEL_FONT: f64 = 13.0;
pub(super) const DETAIL_FONT: f64 = 11.0;
const LEGEND_FONT: f64 = 12.0;
const LINE: f64 = 1.25;
const MARGIN: f64 = 20.0;

/// Width of a text in the drawing's font, from its length (no font
/// metrics: a generous average character width).
pub(super) fn text_width(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * 0.62
}

/// Height of a name and its detail lines.
pub(super) fn block_height(lines: usize) -> f64 {
    NAME_FONT * LINE + lines.saturating_sub(1) as f64 * DETAIL_FONT * LINE
}

/// Width of a name and its detail lines.
pub(super) fn block_width(lines: &[&str]) -> f64 {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| text_width(l, if i == 0 { NAME_FONT } else { DETAIL_FONT }))
        .fold(0.0, f64::max)
}

pub(super) fn escape(s: &str) -> String {
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

/// What each guarantee kind promises, for the legend (times in ms, as the
/// labels write them).
fn meaning(kind: Kind) -> &'static str {
    match kind {
        Kind::All => "ALL: the whole CPU",
        Kind::Resbh => "RESBH x, y: exactly x in each y-long window of a fixed grid (hard)",
        Kind::Resbs => {
            "RESBS x, y: at least x in each y-long window of a fixed grid (soft: more when spare)"
        }
        Kind::Resch => "RESCH x, y: exactly x in every y-long window (hard)",
        Kind::Rescs => "RESCS x, y: at least x in every y-long window (soft)",
        Kind::Resu => "RESU r: a processor r times as fast as the CPU",
        Kind::Psbe => "PSBE s, δ: at least s·t − δ of every interval t",
        Kind::Ps => "PS s: share s in the long run, no bound on the lag",
        Kind::Null => "NULL: no promise (best effort)",
    }
}

/// An SVG being drawn: shapes first, then the edge labels over them.
pub(super) struct Canvas {
    shapes: String,
    labels: String,
    width: f64,
    height: f64,
}

impl Canvas {
    pub(super) fn new() -> Self {
        Canvas {
            shapes: String::new(),
            labels: String::new(),
            width: 0.0,
            height: 0.0,
        }
    }

    /// Makes the drawing at least `width` wide and `height` tall.
    pub(super) fn extend(&mut self, width: f64, height: f64) {
        self.grow(width, height);
    }

    fn grow(&mut self, x: f64, y: f64) {
        self.width = self.width.max(x);
        self.height = self.height.max(y);
    }

    /// A scheduler's box, top-left at (`x`, `y`).
    pub(super) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64) {
        self.grow(x + w, y + h);
        let _ = writeln!(
            self.shapes,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" rx=\"4\" fill=\"#f4f6f8\" stroke=\"{INK}\" stroke-width=\"1.5\"/>"
        );
    }

    /// A thread's ellipse around (`cx`, `cy`).
    pub(super) fn ellipse(&mut self, cx: f64, cy: f64, rx: f64, ry: f64) {
        self.grow(cx + rx, cy + ry);
        let _ = writeln!(
            self.shapes,
            "<ellipse cx=\"{cx:.1}\" cy=\"{cy:.1}\" rx=\"{rx:.1}\" ry=\"{ry:.1}\" fill=\"white\" stroke=\"{INK}\" stroke-width=\"1.5\"/>"
        );
    }

    /// An edge: an SVG path (`d`) or a straight line, with an arrow head.
    pub(super) fn edge_path(&mut self, d: &str, bad: bool) {
        let (colour, head) = if bad { (BAD, "bad") } else { (INK, "ink") };
        let _ = writeln!(
            self.shapes,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" marker-end=\"url(#hs-head-{head})\"/>"
        );
    }

    pub(super) fn edge_line(&mut self, from: (f64, f64), to: (f64, f64), bad: bool) {
        let (colour, head) = if bad { (BAD, "bad") } else { (INK, "ink") };
        self.grow(from.0.max(to.0), from.1.max(to.1));
        let _ = writeln!(
            self.shapes,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"1.5\" marker-end=\"url(#hs-head-{head})\"/>",
            from.0, from.1, to.0, to.1
        );
    }

    /// A node's name, and its parameters under it in small grey type, each
    /// line its own `<text>`, the block centred on (`cx`, `cy`).
    pub(super) fn node_text(&mut self, cx: f64, cy: f64, lines: &[&str]) {
        let mut y = cy - block_height(lines.len()) / 2.0;
        for (i, line) in lines.iter().enumerate() {
            let (class, font) = if i == 0 {
                ("hs-node", NAME_FONT)
            } else {
                ("hs-detail", DETAIL_FONT)
            };
            let mid = y + font * LINE / 2.0;
            y += font * LINE;
            let _ = writeln!(
                self.shapes,
                "<text class=\"{class}\" x=\"{cx:.1}\" y=\"{mid:.1}\">{}</text>",
                escape(line)
            );
        }
    }

    /// An edge's label (the guarantee, then the attachment's parameters) on
    /// a white plate centred on (`cx`, `cy`), over every line.
    pub(super) fn label(&mut self, cx: f64, cy: f64, lines: &[&str], bad: bool) {
        let fonts: Vec<f64> = (0..lines.len())
            .map(|i| if i == 0 { LABEL_FONT } else { DETAIL_FONT })
            .collect();
        let w = lines
            .iter()
            .zip(&fonts)
            .map(|(l, &f)| text_width(l, f))
            .fold(0.0, f64::max)
            + 8.0;
        let h: f64 = fonts.iter().map(|f| f * LINE).sum::<f64>() + 4.0;
        let (x, top) = (cx - w / 2.0, cy - h / 2.0);
        self.grow(x + w, top + h);
        // A path, not a rect: the rects and ellipses are the nodes.
        let _ = writeln!(
            self.labels,
            "<path d=\"M{x:.1},{top:.1}h{w:.1}v{h:.1}h{:.1}z\" fill=\"white\" fill-opacity=\"0.94\"/>",
            -w
        );
        let mut y = top + 2.0;
        for (i, (line, font)) in lines.iter().zip(&fonts).enumerate() {
            let class = match (i, bad) {
                (0, false) => "hs-edge",
                (0, true) => "hs-edge hs-bad",
                _ => "hs-detail",
            };
            let mid = y + font * LINE / 2.0;
            y += font * LINE;
            let _ = writeln!(
                self.labels,
                "<text class=\"{class}\" x=\"{cx:.1}\" y=\"{mid:.1}\">{}</text>",
                escape(line)
            );
        }
    }

    /// The SVG: the drawing, then under it a legend of `kinds` (and of the
    /// red edges, when there are any).
    pub(super) fn finish(self, kinds: &[Kind], any_bad: bool) -> String {
        let mut legend: Vec<(&str, &str)> = vec![(
            "on each edge: the guarantee the parent gives (times in ms), then what the child attached with",
            "hs-legend",
        )];
        legend.extend(kinds.iter().map(|&k| (meaning(k), "hs-legend")));
        if any_bad {
            legend.push((
                "red: an edge a problem is about (see `hsched check`)",
                "hs-legend hs-bad",
            ));
        }
        let line_height = LEGEND_FONT * 1.4;
        let top = self.height + MARGIN;
        let legend_width = legend
            .iter()
            .map(|(l, _)| text_width(l, LEGEND_FONT))
            .fold(0.0, f64::max);
        let width = (self.width + MARGIN).max(MARGIN + legend_width + MARGIN);
        let height = top + legend.len() as f64 * line_height + MARGIN / 2.0;

        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" class=\"hs-drawing\" style=\"background: white\">"
        );
        let _ = writeln!(
            out,
            "<style>\n.hs-drawing text {{ font-family: {FONT_FAMILY}; fill: {INK}; text-anchor: middle; dominant-baseline: central; }}\n.hs-drawing .hs-node {{ font-size: {NAME_FONT}px; }}\n.hs-drawing .hs-edge {{ font-size: {LABEL_FONT}px; }}\n.hs-drawing .hs-detail {{ font-size: {DETAIL_FONT}px; fill: {MUTED}; }}\n.hs-drawing .hs-legend {{ font-size: {LEGEND_FONT}px; fill: {MUTED}; text-anchor: start; }}\n.hs-drawing .hs-bad {{ fill: {BAD}; }}\n</style>"
        );
        for (name, colour) in [("ink", INK), ("bad", BAD)] {
            let _ = writeln!(
                out,
                "<defs><marker id=\"hs-head-{name}\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{colour}\"/></marker></defs>"
            );
        }
        out.push_str(&self.shapes);
        out.push_str(&self.labels);
        for (i, (line, class)) in legend.iter().enumerate() {
            let y = top + (i as f64 + 0.5) * line_height;
            let _ = writeln!(
                out,
                "<text class=\"{class}\" x=\"{MARGIN:.0}\" y=\"{y:.1}\">{}</text>",
                escape(line)
            );
        }
        out.push_str("</svg>\n");
        out
    }
}
