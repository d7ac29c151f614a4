//! The report's figures as SVG and PNG files (`hsched plot`), drawn with
//! the `plotters` crate, so that a paper's figure can be regenerated from a
//! scenario: the timeline per CPU and per thread, CPU share over time per
//! thread and per scheduler node, wakeup-latency CDFs and job response-time
//! histograms with the deadline marked. (The hierarchy is `hsched check
//! --svg`.) The data are those of [`crate::figures`].
//!
//! Every figure is drawn as SVG; a PNG is that SVG rasterised by `resvg`
//! (pure Rust), so the two formats show the same figure. Text uses DejaVu
//! Sans, shipped in this crate (`assets/fonts/`, under the Bitstream Vera
//! license in `assets/fonts/LICENSE-DejaVu.txt`): plotters measures labels
//! with it (its `ab_glyph` backend) and resvg draws them with it, so a PNG
//! renders the same on a machine without any system font or font library.
//! An SVG names the `sans-serif` family and leaves drawing text to its
//! viewer. (plotters' own bitmap backend is not used: its `ab_glyph` text
//! drawing misplaces glyphs vertically.)
//!
//! Legends sit in a strip beside the chart, never over its data; the
//! timeline's names each thread's colour, switches, interrupts and misses.
//! The latency axis is focused as in the HTML report (see
//! `latency_focus`), and says what it cuts.
//!
//! The timeline draws a segment at least a pixel wide as it is and merges
//! narrower ones into one pixel column coloured by the thread that held most
//! of it, so a long run gives a file of bounded size.

mod legend;

use crate::figures::{self, Figures, Slot, Span};
use crate::ReportError;
use hsched_model::{RunResult, Scenario};
use legend::Key;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeSet;
use std::sync::Once;

const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
const FONT_FAMILY: &str = "sans-serif";
/// The family name inside the font file.
const FONT_NAME: &str = "DejaVu Sans";

/// The colours of the first ten threads (Tableau 10, as the HTML report);
/// later ones go round the colour wheel by the golden angle.
const PALETTE: [(u8, u8, u8); 10] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0x59, 0xa1, 0x4f),
    (0xed, 0xc9, 0x48),
    (0xb0, 0x7a, 0xa1),
    (0xff, 0x9d, 0xa7),
    (0x9c, 0x75, 0x5f),
    (0x86, 0xbc, 0xb6),
];
const SWITCH: RGBColor = RGBColor(0x8a, 0x8f, 0x96);
/// Interrupt handlers (the HTML report's colour too).
const INTERRUPT: RGBColor = RGBColor(0xc0, 0x39, 0x2b);
const DEADLINE: RGBColor = RGBColor(0xc6, 0x28, 0x28);

/// Which figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// What every CPU and every thread did, over time.
    Timeline,
    /// Each thread's share of a CPU over time.
    Share,
    /// Each scheduler node's share over time (its threads' time summed).
    NodeShare,
    /// Wakeup-to-dispatch latency CDF per thread.
    Latency,
    /// Job response-time histogram per thread, deadline marked.
    Response,
}

impl Figure {
    pub const ALL: [(&'static str, Figure); 5] = [
        ("timeline", Figure::Timeline),
        ("share", Figure::Share),
        ("node-share", Figure::NodeShare),
        ("latency", Figure::Latency),
        ("response", Figure::Response),
    ];
}

/// The file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

/// How to draw a figure.
#[derive(Clone, Debug)]
pub struct PlotOptions {
    pub width: u32,
    pub height: u32,
    /// The time window of the timeline and share figures, ns (default: the
    /// whole run).
    pub from: Option<u64>,
    pub to: Option<u64>,
    /// Only these threads (by name); empty: all.
    pub threads: Vec<String>,
    /// Bins of the share figures over the whole run.
    pub share_bins: u64,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            width: 1000,
            height: 500,
            from: None,
            to: None,
            threads: Vec::new(),
            share_bins: 200,
        }
    }
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is part of this crate: a failure is a broken build.
        let _ = plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT);
    });
}

/// Draws `figure` of `result` in `format`; the bytes of the file.
pub fn plot(
    figure: Figure,
    result: &RunResult,
    scenario: Option<&Scenario>,
    format: Format,
    opts: &PlotOptions,
) -> Result<Vec<u8>, ReportError> {
    register_font();
    let figs = figures::figures(result, scenario, opts.share_bins)?;
    let selected: Vec<u32> = figs
        .threads
        .iter()
        .filter(|t| opts.threads.is_empty() || opts.threads.contains(&t.name))
        .map(|t| t.id)
        .collect();
    if let Some(missing) = opts
        .threads
        .iter()
        .find(|n| !figs.threads.iter().any(|t| &t.name == *n))
    {
        let known: Vec<&str> = figs.threads.iter().map(|t| t.name.as_str()).collect();
        return Err(ReportError::Plot(format!(
            "no thread `{missing}` in this run (threads: {})",
            known.join(", ")
        )));
    }
    let horizon = figs.horizon_ns;
    let from = opts.from.unwrap_or(0).min(horizon);
    let to = opts.to.unwrap_or(horizon).min(horizon);
    if from >= to {
        return Err(ReportError::Plot(format!(
            "the time window is empty: from {} to {} (the run covers 0 to {})",
            hsched_core::Duration::from_nanos(from),
            hsched_core::Duration::from_nanos(to),
            hsched_core::Duration::from_nanos(horizon)
        )));
    }
    let job = Job {
        figs: &figs,
        result,
        selected: &selected,
        from,
        to,
        width: opts.width,
    };
    let size = (opts.width.max(200), opts.height.max(150));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        job.draw(figure, &root)?;
        root.present().map_err(plot_error)?;
    }
    match format {
        Format::Svg => Ok(svg.into_bytes()),
        Format::Png => rasterise(&svg, size),
    }
}

/// The SVG drawn as a PNG of `size` pixels, its text set in the shipped
/// font (the SVG names `sans-serif`; any other family falls back to it).
fn rasterise(svg: &str, (w, h): (u32, u32)) -> Result<Vec<u8>, ReportError> {
    use resvg::{tiny_skia, usvg};
    let mut options = usvg::Options {
        font_family: FONT_NAME.to_string(),
        ..usvg::Options::default()
    };
    let fonts = options.fontdb_mut();
    fonts.load_font_data(FONT.to_vec());
    fonts.set_sans_serif_family(FONT_NAME);
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| ReportError::Plot(e.to_string()))?;
    let mut pixmap = tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| ReportError::Plot(format!("cannot make a {w}x{h} image")))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
        .encode_png()
        .map_err(|e| ReportError::Plot(e.to_string()))
}

fn plot_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> ReportError {
    ReportError::Plot(e.to_string())
}

/// The colour of the thread at position `i` of the figures' thread list.
fn colour_at(i: usize) -> RGBColor {
    match PALETTE.get(i) {
        Some(&(r, g, b)) => RGBColor(r, g, b),
        None => {
            let hue = (i as f64 * 137.508) % 360.0 / 360.0;
            let (r, g, b) = HSLColor(hue, 0.55, 0.52).rgb();
            RGBColor(r, g, b)
        }
    }
}

/// An axis number: at most three decimals, trailing zeros dropped.
fn axis_number(v: &f64) -> String {
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.to_string()
    }
}

/// A time unit for an axis spanning `span_ns`: (ns per unit, name).
fn unit(span_ns: u64) -> (f64, &'static str) {
    match span_ns {
        s if s >= 10_000_000_000 => (1e9, "s"),
        s if s >= 10_000_000 => (1e6, "ms"),
        s if s >= 10_000 => (1e3, "µs"),
        _ => (1.0, "ns"),
    }
}

struct Job<'a> {
    figs: &'a Figures,
    result: &'a RunResult,
    selected: &'a [u32],
    from: u64,
    to: u64,
    width: u32,
}

type Area<'b, DB> = DrawingArea<DB, Shift>;

impl Job<'_> {
    fn colour(&self, thread: u32) -> RGBColor {
        let i = self.figs.threads.iter().position(|t| t.id == thread);
        colour_at(i.unwrap_or(thread as usize))
    }

    fn name(&self, thread: u32) -> String {
        self.figs
            .threads
            .iter()
            .find(|t| t.id == thread)
            .map_or_else(|| format!("thread{thread}"), |t| t.name.clone())
    }

    fn title(&self, what: &str) -> String {
        format!("{} — {what}", self.result.scenario)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        figure: Figure,
        root: &Area<'_, DB>,
    ) -> Result<(), ReportError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(plot_error)?;
        match figure {
            Figure::Timeline => self.timeline(root),
            Figure::Share => {
                let series: Vec<(String, RGBColor, &[u64])> = self
                    .figs
                    .shares
                    .threads
                    .iter()
                    .filter(|(t, _)| self.selected.contains(t))
                    .map(|(t, ns)| (self.name(*t), self.colour(*t), ns.as_slice()))
                    .collect();
                self.share_chart(root, "CPU share per thread", &series)
            }
            Figure::NodeShare => {
                let series: Vec<(String, RGBColor, &[u64])> = self
                    .figs
                    .shares
                    .nodes
                    .iter()
                    .enumerate()
                    .map(|(i, (n, ns))| (n.clone(), colour_at(i), ns.as_slice()))
                    .collect();
                self.share_chart(root, "CPU share per scheduler node", &series)
            }
            Figure::Latency => self.latency(root),
            Figure::Response => self.response(root),
        }
    }

    /// Rows: every CPU, then every selected thread.
    fn timeline<DB: DrawingBackend>(&self, root: &Area<'_, DB>) -> Result<(), ReportError>
    where
        DB::ErrorType: 'static,
    {
        let (div, unit_name) = unit(self.to - self.from);
        let cpus = self.figs.timeline.cpus.len();
        let mut labels: Vec<String> = (0..cpus).map(|c| format!("cpu{c}")).collect();
        labels.extend(self.selected.iter().map(|&t| self.name(t)));
        let rows = labels.len();
        let (x0, x1) = (self.from as f64 / div, self.to as f64 / div);
        let plot_area = with_legend(root, &self.timeline_keys())?;
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(self.title("timeline"), (FONT_FAMILY, 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(90)
            .build_cartesian_2d(x0..x1, 0f64..rows as f64)
            .map_err(plot_error)?;
        let label_of = |y: &f64| -> String {
            // Labels sit at row centres; other ticks stay blank.
            let row = (rows as f64 - y - 0.5).round();
            if (rows as f64 - y - 0.5 - row).abs() < 1e-6 && row >= 0.0 && (row as usize) < rows {
                labels[row as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.08))
            .x_label_formatter(&axis_number)
            .disable_y_mesh()
            .y_labels(rows * 2 + 1)
            .y_label_formatter(&label_of)
            .x_desc(format!("time ({unit_name})"))
            .label_style((FONT_FAMILY, 13))
            .draw()
            .map_err(plot_error)?;
        // A pixel of the plot, in ns, for merging narrow segments.
        let px_ns = ((self.to - self.from) / u64::from(self.width.max(1))).max(1);
        let row_y = |row: usize| rows as f64 - row as f64 - 1.0;
        let mut rects: Vec<Rectangle<(f64, f64)>> = Vec::new();
        let mut push = |row: usize, start: u64, end: u64, colour: RGBAColor| {
            let y = row_y(row);
            rects.push(Rectangle::new(
                [(start as f64 / div, y + 0.1), (end as f64 / div, y + 0.9)],
                colour.filled(),
            ));
        };
        let colour_of = |slot: Slot| match slot {
            Slot::Run(t) => Some(self.colour(t)),
            Slot::Switch(_) => Some(SWITCH),
            Slot::Interrupt => Some(INTERRUPT),
            Slot::Idle => None,
        };
        for (c, spans) in self.figs.timeline.cpus.iter().enumerate() {
            for (s, e, slot, cover) in decimate(spans, self.from, self.to, px_ns) {
                if let Some(col) = colour_of(slot) {
                    push(c, s, e, col.mix(cover));
                }
            }
        }
        for (i, &t) in self.selected.iter().enumerate() {
            let mut runs: Vec<Span> = Vec::new();
            for spans in &self.figs.timeline.cpus {
                runs.extend(spans.iter().filter(|s| s.slot == Slot::Run(t)));
            }
            runs.sort_by_key(|s| s.start);
            let filled = fill_idle(&runs, self.figs.horizon_ns);
            for (s, e, slot, cover) in decimate(&filled, self.from, self.to, px_ns) {
                if let Some(col) = colour_of(slot) {
                    push(cpus + i, s, e, col.mix(cover));
                }
            }
        }
        chart.draw_series(rects).map_err(plot_error)?;
        // Deadline misses: a red triangle under the thread's row.
        let mut misses = Vec::new();
        for m in &self.figs.marks {
            if m.kind != "miss" || m.at < self.from || m.at > self.to {
                continue;
            }
            let Some(row) = m
                .thread
                .and_then(|t| self.selected.iter().position(|&s| s == t))
            else {
                continue;
            };
            let y = row_y(cpus + row);
            misses.push(TriangleMarker::new(
                (m.at as f64 / div, y + 0.2),
                5,
                DEADLINE.filled(),
            ));
        }
        chart.draw_series(misses).map_err(plot_error)?;
        Ok(())
    }

    /// The timeline's colours: every thread that runs in the window or
    /// has a row, then switches, interrupts and deadline misses where the
    /// window holds any.
    fn timeline_keys(&self) -> Vec<(Key, String)> {
        // One pass over the window's spans: a long run has millions.
        let (mut ran, mut switched, mut interrupted) = (BTreeSet::new(), false, false);
        for s in self.figs.timeline.cpus.iter().flatten() {
            if s.end <= self.from || s.start >= self.to {
                continue;
            }
            match s.slot {
                Slot::Run(t) => {
                    ran.insert(t);
                }
                Slot::Switch(_) => switched = true,
                Slot::Interrupt => interrupted = true,
                Slot::Idle => {}
            }
        }
        let mut keys: Vec<(Key, String)> = self
            .figs
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| self.selected.contains(&t.id) || ran.contains(&t.id))
            .map(|(i, t)| (Key::Block(colour_at(i)), t.name.clone()))
            .collect();
        if switched {
            keys.push((Key::Block(SWITCH), "context switch".into()));
        }
        if interrupted {
            keys.push((Key::Block(INTERRUPT), "interrupt".into()));
        }
        let missed = self.figs.marks.iter().any(|m| {
            m.kind == "miss"
                && (self.from..=self.to).contains(&m.at)
                && m.thread.is_some_and(|t| self.selected.contains(&t))
        });
        if missed {
            keys.push((Key::Marker(DEADLINE), "deadline miss".into()));
        }
        keys
    }

    fn share_chart<DB: DrawingBackend>(
        &self,
        root: &Area<'_, DB>,
        what: &str,
        series: &[(String, RGBColor, &[u64])],
    ) -> Result<(), ReportError>
    where
        DB::ErrorType: 'static,
    {
        let shares = &self.figs.shares;
        let horizon = self.figs.horizon_ns;
        let (div, unit_name) = unit(self.to - self.from);
        let value = |ns: &[u64], i: usize| ns[i] as f64 / shares.bin_len(i, horizon).max(1) as f64;
        let ymax = series
            .iter()
            .flat_map(|(_, _, ns)| (0..ns.len()).map(move |i| (ns, i)))
            .map(|(ns, i)| value(ns, i))
            .fold(1.0f64, f64::max);
        let keys: Vec<(Key, String)> = series
            .iter()
            .map(|(name, colour, _)| (Key::Line(*colour), name.clone()))
            .collect();
        let plot_area = with_legend(root, &keys)?;
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(
                self.title(&format!(
                    "{what} (bins of {})",
                    hsched_core::Duration::from_nanos(shares.bin_ns)
                )),
                (FONT_FAMILY, 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(
                self.from as f64 / div..self.to as f64 / div,
                0f64..ymax * 1.05,
            )
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.08))
            .x_label_formatter(&axis_number)
            .x_desc(format!("time ({unit_name})"))
            .y_desc("share of one CPU")
            .y_label_formatter(&axis_number)
            .label_style((FONT_FAMILY, 13))
            .draw()
            .map_err(plot_error)?;
        for (_, colour, ns) in series {
            let mut points = Vec::with_capacity(ns.len() * 2);
            for i in 0..ns.len() {
                let start = shares.bin_ns * i as u64;
                let end = start + shares.bin_len(i, horizon);
                if end <= self.from || start >= self.to {
                    continue;
                }
                let v = value(ns, i);
                points.push((start.max(self.from) as f64 / div, v));
                points.push((end.min(self.to) as f64 / div, v));
            }
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(plot_error)?;
        }
        Ok(())
    }

    fn latency<DB: DrawingBackend>(&self, root: &Area<'_, DB>) -> Result<(), ReportError>
    where
        DB::ErrorType: 'static,
    {
        let cdfs: Vec<&figures::Cdf> = self
            .figs
            .latency
            .iter()
            .filter(|c| self.selected.contains(&c.thread))
            .collect();
        let full = cdfs
            .iter()
            .filter_map(|c| c.points.last().map(|p| p.0))
            .max()
            .unwrap_or(1)
            .max(1);
        let (xmax, note) = match latency_focus(&cdfs, full) {
            Some((cut, beyond)) => (
                cut,
                format!(
                    " (axis cut at {}: {beyond} wakeup{} up to {} beyond)",
                    crate::readable::duration(cut),
                    if beyond == 1 { "" } else { "s" },
                    crate::readable::duration(full)
                ),
            ),
            None => (full, String::new()),
        };
        let (div, unit_name) = unit(xmax);
        let keys: Vec<(Key, String)> = cdfs
            .iter()
            .map(|c| {
                let label = format!("{} ({} wakeups)", self.name(c.thread), c.samples);
                (Key::Line(self.colour(c.thread)), label)
            })
            .collect();
        let plot_area = with_legend(root, &keys)?;
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(
                self.title(&format!("wakeup-to-dispatch latency CDF{note}")),
                (FONT_FAMILY, 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..xmax as f64 * 1.02 / div, 0f64..1.02)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.08))
            .x_label_formatter(&axis_number)
            .x_desc(format!("latency ({unit_name})"))
            .y_desc("fraction of wakeups")
            .y_label_formatter(&axis_number)
            .label_style((FONT_FAMILY, 13))
            .draw()
            .map_err(plot_error)?;
        for c in cdfs {
            let n = c.samples as f64;
            let mut points = Vec::with_capacity(c.points.len() * 2 + 2);
            let mut prev = 0.0;
            if let Some(first) = c.points.first().filter(|p| p.0 <= xmax) {
                points.push((first.0 as f64 / div, 0.0));
            }
            // What lies beyond a cut axis is left out, not drawn at its edge.
            for &(v, count) in c.points.iter().take_while(|&&(v, _)| v <= xmax) {
                let x = v as f64 / div;
                points.push((x, prev));
                prev = count as f64 / n;
                points.push((x, prev));
            }
            points.push((xmax as f64 * 1.02 / div, prev));
            let colour = self.colour(c.thread);
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(plot_error)?;
        }
        Ok(())
    }

    /// One panel per thread with jobs, in a grid.
    fn response<DB: DrawingBackend>(&self, root: &Area<'_, DB>) -> Result<(), ReportError>
    where
        DB::ErrorType: 'static,
    {
        let hists: Vec<&figures::Histogram> = self
            .figs
            .response
            .iter()
            .filter(|h| self.selected.contains(&h.thread))
            .collect();
        if hists.is_empty() {
            root.draw(&Text::new(
                "No jobs were recorded in this run.",
                (20, 40),
                (FONT_FAMILY, 16),
            ))
            .map_err(plot_error)?;
            return Ok(());
        }
        let body = root
            .titled(&self.title("job response times"), (FONT_FAMILY, 18))
            .map_err(plot_error)?;
        let cols = hists.len().min(2);
        let rows = hists.len().div_ceil(cols);
        let panels = body.split_evenly((rows, cols));
        for (h, panel) in hists.iter().zip(panels.iter()) {
            let upper = h.counts.len() as u64 * h.bin_ns;
            let (div, unit_name) = unit(upper);
            let ymax = h.counts.iter().copied().max().unwrap_or(0).max(1);
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!(
                        "{}: {} jobs, {} missed, {} unfinished",
                        self.name(h.thread),
                        h.jobs,
                        h.missed,
                        h.unfinished
                    ),
                    (FONT_FAMILY, 14),
                )
                .margin(8)
                .x_label_area_size(32)
                .y_label_area_size(44)
                .build_cartesian_2d(0f64..upper as f64 / div, 0f64..ymax as f64 * 1.1)
                .map_err(plot_error)?;
            chart
                .configure_mesh()
                .max_light_lines(0)
                .bold_line_style(BLACK.mix(0.08))
                .x_label_formatter(&axis_number)
                .x_desc(format!("response time ({unit_name})"))
                .y_desc("jobs")
                .y_label_formatter(&|v| {
                    if v.fract() == 0.0 {
                        format!("{v}")
                    } else {
                        String::new()
                    }
                })
                .label_style((FONT_FAMILY, 12))
                .draw()
                .map_err(plot_error)?;
            let colour = self.colour(h.thread);
            chart
                .draw_series(
                    h.counts
                        .iter()
                        .enumerate()
                        .filter(|(_, &n)| n > 0)
                        .map(|(i, &n)| {
                            let x0 = (i as u64 * h.bin_ns) as f64 / div;
                            let x1 = ((i as u64 + 1) * h.bin_ns) as f64 / div;
                            Rectangle::new([(x0, 0.0), (x1, n as f64)], colour.filled())
                        }),
                )
                .map_err(plot_error)?;
            if h.deadline_max_ns > h.deadline_min_ns {
                chart
                    .draw_series([Rectangle::new(
                        [
                            (h.deadline_min_ns as f64 / div, 0.0),
                            (h.deadline_max_ns as f64 / div, ymax as f64 * 1.1),
                        ],
                        DEADLINE.mix(0.2).filled(),
                    )])
                    .map_err(plot_error)?;
            }
            let d = h.deadline_min_ns as f64 / div;
            chart
                .draw_series(LineSeries::new(
                    [(d, 0.0), (d, ymax as f64 * 1.1)],
                    DEADLINE.stroke_width(2),
                ))
                .map_err(plot_error)?;
            // Named beside its line, left of it, under the top: a legend
            // box would sit over the bars.
            chart
                .draw_series([Text::new(
                    format!(
                        "deadline {} ",
                        hsched_core::Duration::from_nanos(h.deadline_min_ns)
                    ),
                    (d, ymax as f64 * 1.05),
                    TextStyle::from((FONT_FAMILY, 12))
                        .color(&DEADLINE)
                        .pos(Pos::new(HPos::Right, VPos::Center)),
                )])
                .map_err(plot_error)?;
        }
        Ok(())
    }
}

/// Threads woken at least this often have a 99th percentile worth
/// focusing the latency axis on.
const OFTEN_WOKEN: u64 = 20;

/// Where the latency axis ends, as in the HTML report: a thread woken once
/// or twice late would stretch it until every other curve is a wall at 0,
/// so it ends at 1.25 times the highest 99th percentile of the threads
/// woken [`OFTEN_WOKEN`] times or more, when that cuts anything. Returns
/// the cut and how many wakeups lie beyond it; `None` for the whole range.
fn latency_focus(cdfs: &[&figures::Cdf], full: u64) -> Option<(u64, u64)> {
    let focus = cdfs
        .iter()
        .filter(|c| c.samples >= OFTEN_WOKEN)
        .filter_map(|c| {
            // The first value with 99% of the wakeups at or below it.
            c.points
                .iter()
                .find(|&&(_, count)| count * 100 >= c.samples * 99)
                .map(|&(v, _)| v)
        })
        .max()?;
    let cut = focus + focus / 4;
    if focus == 0 || cut >= full {
        return None;
    }
    let beyond = cdfs
        .iter()
        .map(|c| {
            let within = c
                .points
                .iter()
                .take_while(|&&(v, _)| v <= cut)
                .last()
                .map_or(0, |&(_, count)| count);
            c.samples - within
        })
        .sum();
    Some((cut, beyond))
}

/// `root` less a legend of `keys` drawn beside the chart, in the figures'
/// font.
fn with_legend<'a, DB: DrawingBackend>(
    root: &Area<'a, DB>,
    keys: &[(Key, String)],
) -> Result<Area<'a, DB>, ReportError>
where
    DB::ErrorType: 'static,
{
    legend::beside(root, keys, &(FONT_FAMILY, 13).into()).map_err(plot_error)
}

/// `spans` (sorted, not overlapping) with the gaps in `[0, horizon)`
/// filled as idle, so that [`decimate`] sees the whole time.
fn fill_idle(spans: &[Span], horizon: u64) -> Vec<Span> {
    let mut out = Vec::with_capacity(spans.len() * 2 + 1);
    let mut at = 0;
    for s in spans {
        if s.start > at {
            out.push(Span {
                start: at,
                end: s.start,
                slot: Slot::Idle,
            });
        }
        out.push(*s);
        at = at.max(s.end);
    }
    if at < horizon {
        out.push(Span {
            start: at,
            end: horizon,
            slot: Slot::Idle,
        });
    }
    out
}

/// What to draw of `spans` (covering their time without gaps) in
/// `[from, to)` at `px_ns` ns a pixel: spans a pixel wide or more as they
/// are (fully opaque), and narrower ones merged per pixel column into one
/// drawn in the colour of what held most of the column but idle, as opaque
/// as the column was busy (at least 0.35, so a short burst stays visible).
pub fn decimate(spans: &[Span], from: u64, to: u64, px_ns: u64) -> Vec<(u64, u64, Slot, f64)> {
    let mut out = Vec::new();
    let mut column: Option<(u64, std::collections::BTreeMap<Slot, u64>)> = None;
    let flush =
        |out: &mut Vec<(u64, u64, Slot, f64)>,
         column: &mut Option<(u64, std::collections::BTreeMap<Slot, u64>)>| {
            if let Some((col, held)) = column.take() {
                let busy: u64 = held
                    .iter()
                    .filter(|(s, _)| **s != Slot::Idle)
                    .map(|(_, v)| v)
                    .sum();
                let top = held
                    .iter()
                    .filter(|(s, _)| **s != Slot::Idle)
                    .rev()
                    .max_by_key(|(_, &v)| v);
                if let Some((&slot, _)) = top {
                    let start = from + col * px_ns;
                    let cover = (busy as f64 / px_ns as f64).clamp(0.35, 1.0);
                    out.push((start, (start + px_ns).min(to), slot, cover));
                }
            }
        };
    let first = spans.partition_point(|s| s.end <= from);
    for s in &spans[first..] {
        if s.start >= to {
            break;
        }
        let (a, b) = (s.start.max(from), s.end.min(to));
        if b - a >= px_ns {
            flush(&mut out, &mut column);
            if s.slot != Slot::Idle {
                out.push((a, b, s.slot, 1.0));
            }
            continue;
        }
        let col = (a - from) / px_ns;
        if column.as_ref().is_some_and(|(c, _)| *c != col) {
            flush(&mut out, &mut column);
        }
        let entry = column.get_or_insert_with(|| (col, Default::default()));
        *entry.1.entry(s.slot).or_default() += b - a;
    }
    flush(&mut out, &mut column);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: u64, end: u64, slot: Slot) -> Span {
        Span { start, end, slot }
    }

    #[test]
    fn narrow_segments_merge_into_columns() {
        // A pixel is 10 ns: [0,10) holds three short runs, 2 + 5 + 2 ns.
        let spans = [
            span(0, 2, Slot::Run(1)),
            span(2, 7, Slot::Run(2)),
            span(7, 9, Slot::Run(1)),
            span(9, 10, Slot::Idle),
            span(10, 40, Slot::Run(3)),
            span(40, 100, Slot::Idle),
        ];
        let out = decimate(&spans, 0, 100, 10);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].0, out[0].1, out[0].2), (0, 10, Slot::Run(2)));
        assert!((out[0].3 - 0.9).abs() < 1e-9);
        assert_eq!(out[1], (10, 40, Slot::Run(3), 1.0));
    }

    #[test]
    fn the_latency_axis_ends_past_the_often_woken_threads_99th_percentile() {
        // 100 wakeups within 1..=100 us; one late wakeup at 50 ms.
        let often = figures::Cdf {
            thread: 0,
            samples: 100,
            points: (1..=100).map(|i| (i * 1_000, i)).collect(),
        };
        let once = figures::Cdf {
            thread: 1,
            samples: 1,
            points: vec![(50_000_000, 1)],
        };
        // p99 is 99 us; the axis ends at 1.25 times that, and the one late
        // wakeup lies beyond.
        assert_eq!(
            latency_focus(&[&often, &once], 50_000_000),
            Some((123_750, 1))
        );
        // Nothing to cut: the whole range.
        assert_eq!(latency_focus(&[&often], 100_000), None);
        // No thread woken often enough: the whole range.
        assert_eq!(latency_focus(&[&once], 50_000_000), None);
    }

    #[test]
    fn idle_is_filled_between_runs() {
        let runs = [span(5, 10, Slot::Run(0)), span(20, 30, Slot::Run(0))];
        let filled = fill_idle(&runs, 40);
        let covered: u64 = filled.iter().map(|s| s.end - s.start).sum();
        assert_eq!(covered, 40);
        assert_eq!(filled.len(), 5);
    }
}
