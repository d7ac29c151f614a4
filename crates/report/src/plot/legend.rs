//! A figure's legend, in a strip beside its chart rather than over the
//! data: a key (line, block or marker) and a label per row.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What a legend row shows beside its label.
#[derive(Clone, Copy)]
pub(super) enum Key {
    /// A series drawn as a line.
    Line(RGBColor),
    /// A filled area (a timeline segment).
    Block(RGBColor),
    /// A marker (a deadline miss).
    Marker(RGBColor),
}

/// Legend rows' height and the key's width, px.
const ROW: i32 = 18;
const KEY: i32 = 18;
/// Where the first row starts: below the chart's caption.
const TOP: i32 = 40;

/// Draws `keys` in `font` as a legend in a strip at the right of `root` and
/// returns the rest of `root` for the chart. The strip is as wide as the
/// longest label, up to a third of the figure (longer labels are cut with
/// `…`); rows that do not fit the height end in "… and N more".
pub(super) fn beside<'a, DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    keys: &[(Key, String)],
    font: &TextStyle<'a>,
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    if keys.is_empty() {
        return Ok(root.clone());
    }
    let text_width = |t: &str| {
        root.estimate_text_size(t, font)
            .map(|(w, _)| w as i32)
            .unwrap_or(7 * t.chars().count() as i32)
    };
    let (width, height) = root.dim_in_pixel();
    let max_text = (width as i32 / 3 - KEY - 24).max(40);
    let widest = keys.iter().map(|(_, l)| text_width(l)).max().unwrap_or(0);
    let strip = widest.min(max_text) + KEY + 24;
    let (chart, legend) = root.split_horizontally(width as i32 - strip);
    let left = font.pos(Pos::new(HPos::Left, VPos::Center));
    let capacity = ((height as i32 - TOP - 12) / ROW).max(1) as usize;
    let shown = if keys.len() > capacity {
        capacity - 1
    } else {
        keys.len()
    };
    for (row, (key, label)) in keys[..shown].iter().enumerate() {
        let mid = TOP + row as i32 * ROW + ROW / 2;
        match *key {
            Key::Line(c) => legend.draw(&PathElement::new(
                vec![(6, mid), (6 + KEY, mid)],
                c.stroke_width(2),
            )),
            Key::Block(c) => legend.draw(&Rectangle::new(
                [(6, mid - 5), (6 + KEY, mid + 5)],
                c.filled(),
            )),
            Key::Marker(c) => legend.draw(&TriangleMarker::new((6 + KEY / 2, mid), 5, c.filled())),
        }?;
        let mut kept: Vec<char> = label.chars().collect();
        let mut text = label.clone();
        while text_width(&text) > max_text && kept.len() > 1 {
            kept.pop();
            text = kept.iter().chain(['…'].iter()).collect();
        }
        legend.draw(&Text::new(text, (KEY + 12, mid), left.clone()))?;
    }
    if shown < keys.len() {
        let mid = TOP + shown as i32 * ROW + ROW / 2;
        let more = format!("… and {} more", keys.len() - shown);
        legend.draw(&Text::new(more, (6, mid), left))?;
    }
    Ok(chart)
}
