//! The sweep's CSV file: its columns, its rows, reading one back after an
//! interruption, and merging shard files.
//!
//! Columns: `index`, `seed`, `replicate` (when `replicates > 1`), one per
//! parameter (spec order; a duration's is `NAME_ns`, integer nanoseconds),
//! one per metric (spec order). One row per point,
//! in increasing `index`. Each row is written with one `write` call and the
//! file is never rewritten while points run, so a killed sweep leaves at
//! worst a partial last line; reading the file back drops it.

use crate::points::{self, Shard};
use crate::spec::Spec;
use std::io::Write;
use std::path::Path;

/// The header of a spec's file.
pub fn header(spec: &Spec) -> Vec<String> {
    let mut h = vec!["index".to_string(), "seed".to_string()];
    if spec.replicates > 1 {
        h.push("replicate".into());
    }
    h.extend(spec.params.iter().map(|p| p.column()));
    h.extend(spec.metrics.iter().map(|m| m.column().to_string()));
    h
}

/// The cells a point's row starts with (before its metrics).
pub fn point_cells(spec: &Spec, p: &points::Point) -> Vec<String> {
    let mut cells = vec![p.index.to_string(), p.seed.to_string()];
    if spec.replicates > 1 {
        cells.push(p.replicate.to_string());
    }
    cells.extend(p.values.iter().map(ToString::to_string));
    cells
}

/// One CSV line (quoted where needed), `\n`-terminated.
pub fn encode(cells: &[String]) -> Vec<u8> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(cells)
        .expect("writing to memory cannot fail");
    w.into_inner().expect("writing to memory cannot fail")
}

/// A row read back: its index and its cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub index: u64,
    pub cells: Vec<String>,
}

/// What an existing file holds.
#[derive(Debug)]
pub struct Existing {
    pub header: Vec<String>,
    pub rows: Vec<Row>,
    /// Bytes up to the end of the last complete row: a kill's partial
    /// line lies beyond.
    pub complete_len: u64,
}

/// Reads a sweep CSV. `None` if the file does not exist or is empty.
pub fn read(path: &Path) -> Result<Option<Existing>, String> {
    let shown = path.display();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{shown}: cannot read: {e}")),
    };
    // Only `\n`-terminated lines are complete.
    let Some(last_nl) = bytes.iter().rposition(|&b| b == b'\n') else {
        return Ok(None);
    };
    let mut complete = &bytes[..=last_nl];
    loop {
        match parse(complete) {
            Ok((header, rows)) => {
                return Ok(Some(Existing {
                    header,
                    rows,
                    complete_len: complete.len() as u64,
                }))
            }
            // A last record cut inside a quoted field that held a newline:
            // drop it too.
            Err(Parse::LastRecordCut(start)) if start > 0 => complete = &complete[..start],
            Err(Parse::LastRecordCut(_)) => return Ok(None),
            Err(Parse::Bad(line, why)) => return Err(format!("{shown}:{line}: {why}")),
        }
    }
}

enum Parse {
    LastRecordCut(usize),
    Bad(u64, String),
}

fn parse(bytes: &[u8]) -> Result<(Vec<String>, Vec<Row>), Parse> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes);
    let mut records = Vec::new();
    for rec in r.records() {
        let start = records.len();
        match rec {
            Ok(rec) => {
                let pos = rec.position().map_or(0, |p| p.byte() as usize);
                let line = rec.position().map_or(0, csv::Position::line);
                records.push((pos, line, rec));
            }
            Err(e) => {
                return Err(Parse::Bad(
                    e.position().map_or(start as u64, csv::Position::line),
                    format!("not a CSV line: {e}"),
                ))
            }
        }
    }
    let Some((_, _, first)) = records.first() else {
        return Err(Parse::LastRecordCut(0));
    };
    let header: Vec<String> = first.iter().map(str::to_string).collect();
    let last = records.len() - 1;
    let mut rows = Vec::with_capacity(last);
    for (n, (pos, line, rec)) in records.iter().enumerate().skip(1) {
        if rec.len() != header.len() {
            if n == last {
                return Err(Parse::LastRecordCut(*pos));
            }
            return Err(Parse::Bad(
                *line,
                format!("{} cells where the header has {}", rec.len(), header.len()),
            ));
        }
        let index = rec[0]
            .parse::<u64>()
            .map_err(|_| Parse::Bad(*line, format!("`{}` is not a point index", &rec[0])))?;
        rows.push(Row {
            index,
            cells: rec.iter().map(str::to_string).collect(),
        });
    }
    Ok((header, rows))
}

/// Checks that rows read back belong to this spec and shard: each index
/// once, in range, in the shard, with the seed and parameter values the
/// spec gives that point.
pub fn verify(spec: &Spec, shard: Shard, file: &Path, rows: &[Row]) -> Result<(), String> {
    let count = points::count(spec);
    let header = header(spec);
    let mut seen = std::collections::HashSet::new();
    let other =
        "the file was written for another spec (or edited): remove it or choose another output";
    for row in rows {
        let i = row.index;
        if i >= count {
            return Err(format!(
                "{}: point {i} is beyond the spec's {count} points: {other}",
                file.display()
            ));
        }
        if !shard.contains(i) {
            return Err(format!(
                "{}: point {i} is not in shard {shard}: {other}",
                file.display()
            ));
        }
        if !seen.insert(i) {
            return Err(format!("{}: point {i} is there twice", file.display()));
        }
        let expected = point_cells(spec, &points::point(spec, i));
        for (col, want) in expected.iter().enumerate() {
            if row.cells[col] != *want {
                return Err(format!(
                    "{}: point {i} has {}={} where the spec gives {want}: {other}",
                    file.display(),
                    header[col],
                    row.cells[col]
                ));
            }
        }
    }
    Ok(())
}

/// Reads back the output of a run being continued: `None` if there is
/// none. A file written before duration columns held integer nanoseconds
/// is brought up to date first (rewritten in place, see
/// [`durations_in_nanoseconds`]); then its header and rows must be this
/// spec's and shard's. The caller cuts it at `complete_len`.
pub fn resume(spec: &Spec, shard: Shard, out: &Path) -> Result<Option<Existing>, String> {
    let Some(mut existing) = read(out)? else {
        return Ok(None);
    };
    let header = header(spec);
    if let Some(mut rows) = durations_in_nanoseconds(spec, out, &existing)? {
        // Only a file this spec would continue is rewritten.
        verify(spec, shard, out, &rows)?;
        write_sorted(out, &header, &mut rows)?;
        existing = read(out)?.ok_or_else(|| format!("{}: vanished", out.display()))?;
    }
    if existing.header != header {
        return Err(format!(
            "{}: its columns ({}) are not this spec's ({}): the file was written for another spec; remove it or choose another output",
            out.display(),
            existing.header.join(","),
            header.join(",")
        ));
    }
    verify(spec, shard, out, &existing.rows)?;
    Ok(Some(existing))
}

/// The rows of a file written by an hsched that wrote a list of durations
/// as written (`500us`) in a column named as the parameter (`quantum`),
/// converted to what this one writes (`500000` in `quantum_ns`); `None`
/// when there is nothing to convert (or the columns are another spec's,
/// which the caller reports). A duration cell that does not read as one is
/// an error naming the file, the point and the column.
pub fn durations_in_nanoseconds(
    spec: &Spec,
    file: &Path,
    existing: &Existing,
) -> Result<Option<Vec<Row>>, String> {
    let header = header(spec);
    let first_param = if spec.replicates > 1 { 3 } else { 2 };
    let old = &existing.header;
    let durations: Vec<usize> = spec
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_duration())
        .map(|(i, _)| first_param + i)
        .collect();
    let renamed_only = old.len() == header.len()
        && old.iter().zip(&header).enumerate().all(|(col, (o, h))| {
            o == h || (durations.contains(&col) && *o == spec.params[col - first_param].name)
        });
    if !renamed_only {
        return Ok(None);
    }
    let mut changed = *old != header;
    let mut rows = existing.rows.clone();
    for row in &mut rows {
        for &col in &durations {
            let cell = &mut row.cells[col];
            if cell.parse::<u64>().is_ok() {
                continue;
            }
            let ns = hsched_core::Duration::parse(cell).map_err(|e| {
                format!(
                    "{}: point {}: column `{}`: {e}: expected a duration",
                    file.display(),
                    row.index,
                    old[col]
                )
            })?;
            *cell = ns.as_nanos().to_string();
            changed = true;
        }
    }
    Ok(changed.then_some(rows))
}

/// Writes `header` and `rows` sorted by index to `out`, through a
/// temporary file renamed into place.
pub fn write_sorted(out: &Path, header: &[String], rows: &mut [Row]) -> Result<(), String> {
    rows.sort_by_key(|r| r.index);
    let mut body = encode(header);
    for r in rows.iter() {
        body.extend(encode(&r.cells));
    }
    let tmp = out.with_extension("csv.tmp");
    let fail = |e: std::io::Error| format!("{}: cannot write: {e}", out.display());
    let mut f = std::fs::File::create(&tmp).map_err(fail)?;
    f.write_all(&body).map_err(fail)?;
    f.sync_all().map_err(fail)?;
    std::fs::rename(&tmp, out).map_err(fail)
}

/// What merging shard files found.
#[derive(Debug)]
pub struct Merged {
    pub rows: u64,
    /// With a spec: how many of its points no file had.
    pub missing: Option<u64>,
}

/// Merges sweep CSV files (shards, or runs of parts of a sweep) into one,
/// sorted by index. Their headers must agree; a point in two files must
/// have the same row in both. With `spec`, the header and every row are
/// checked against it and the points no file has are counted.
pub fn merge(inputs: &[&Path], out: &Path, spec: Option<&Spec>) -> Result<Merged, String> {
    let mut header: Option<(Vec<String>, &Path)> = spec.map(|s| (header(s), Path::new(&s.file)));
    let mut rows: std::collections::BTreeMap<u64, (Row, &Path)> = Default::default();
    for &input in inputs {
        let Some(mut existing) = read(input)? else {
            return Err(format!(
                "{}: no such sweep file, or it is empty",
                input.display()
            ));
        };
        if let Some(spec) = spec {
            if let Some(rows) = durations_in_nanoseconds(spec, input, &existing)? {
                existing.header = self::header(spec);
                existing.rows = rows;
            }
        }
        match &header {
            Some((h, from)) if *h != existing.header => {
                return Err(format!(
                    "{}: its columns ({}) differ from {}'s ({})",
                    input.display(),
                    existing.header.join(","),
                    from.display(),
                    h.join(",")
                ))
            }
            Some(_) => {}
            None => header = Some((existing.header.clone(), input)),
        }
        if let Some(spec) = spec {
            verify(spec, Shard::ALL, input, &existing.rows)?;
        }
        for row in existing.rows {
            if let Some((prev, from)) = rows.get(&row.index) {
                if prev.cells != row.cells {
                    return Err(format!(
                        "point {}: {} and {} have different rows for it",
                        row.index,
                        from.display(),
                        input.display()
                    ));
                }
                continue;
            }
            rows.insert(row.index, (row, input));
        }
    }
    let Some((header, _)) = header else {
        return Err("nothing to merge".into());
    };
    let mut all: Vec<Row> = rows.into_values().map(|(r, _)| r).collect();
    let missing = spec.map(|s| points::count(s) - all.len() as u64);
    write_sorted(out, &header, &mut all)?;
    Ok(Merged {
        rows: all.len() as u64,
        missing,
    })
}
