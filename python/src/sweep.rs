//! Sweeps: the points of a spec, one point run at a time (for an
//! executor), and the CSV the command line writes.
//!
//! `SweepSpec` is a parsed spec that carries its own inputs (the spec text
//! and the text of every base scenario it read), so that a worker process
//! on another machine rebuilds the same spec from [`SweepSpec::parts`]
//! without a shared file system: `hsched._sweep` ships those parts and a
//! batch of point indexes to each task. Points run through the sweep
//! crate's own `run_point`, cells come from its `csvfile`, and the file is
//! written through its `encode`, so rows equal `hsched sweep`'s byte for
//! byte.

use hsched_sweep::csvfile;
use hsched_sweep::points::{self, Shard};
use hsched_sweep::{Spec, SpecError, SweepError};
use pyo3::exceptions::{PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

pyo3::create_exception!(
    hsched,
    SweepSpecError,
    PyValueError,
    "A sweep spec that cannot be read: `file`, `line`, `column` (None for \
     the whole file), `key` (the spec key path, '' for the whole file) and \
     `message` say where and what."
);
pyo3::create_exception!(
    hsched,
    SweepPointError,
    PyValueError,
    "A sweep point that could not run (its scenario refused by the parser \
     or the simulator, or a crash): `index` is the point, `point` names it \
     with its parameter values and seed as `hsched sweep` does, `message` \
     is the whole message."
);

/// A base scenario the spec read: the path as the spec wrote it, the name
/// messages show, its text.
type ScenarioPart = (String, String, String);

/// A row's cells, as the CSV has them.
type Cells = Vec<String>;

/// A point that failed in [`run_many`], and the rows of those before it.
struct Failure {
    index: u64,
    error: SweepError,
    rows: Vec<Cells>,
}

fn spec_error(py: Python<'_>, e: &SpecError) -> PyErr {
    let err = SweepSpecError::new_err(e.to_string());
    let value = err.value(py);
    let (line, column) = e.at.unzip();
    let attrs = [
        value.setattr("file", &e.file),
        value.setattr("line", line),
        value.setattr("column", column),
        value.setattr("key", &e.key),
        value.setattr("message", &e.message),
    ];
    match attrs.into_iter().find_map(Result::err) {
        Some(failed) => failed,
        None => err,
    }
}

/// `rows`: the cells of the points run before the failing one (of those
/// asked for), for the file, which keeps them as the command line's does.
fn point_error(
    py: Python<'_>,
    spec: &Spec,
    index: u64,
    e: &SweepError,
    rows: Vec<Vec<String>>,
) -> PyErr {
    let err = SweepPointError::new_err(e.to_string());
    let value = err.value(py);
    let p = points::point(spec, index);
    let attrs = [
        value.setattr("index", index),
        value.setattr("seed", p.seed),
        value.setattr("point", points::describe(spec, &p)),
        value.setattr("message", e.to_string()),
        value.setattr("rows", rows),
    ];
    match attrs.into_iter().find_map(Result::err) {
        Some(failed) => failed,
        None => err,
    }
}

/// A parsed sweep spec and the inputs it was parsed from.
#[pyclass(frozen, module = "hsched._hsched")]
pub struct SweepSpec {
    spec: Spec,
    text: String,
    scenarios: Vec<ScenarioPart>,
}

impl SweepSpec {
    /// Parses `text`, reading base scenarios with `read` and keeping what
    /// it read.
    fn parse_recording(
        py: Python<'_>,
        text: String,
        file: &str,
        read: hsched_sweep::spec::ReadScenario<'_>,
    ) -> PyResult<SweepSpec> {
        let scenarios = RefCell::new(Vec::new());
        let recording = |rel: &str| {
            let (shown, body) = read(rel)?;
            scenarios
                .borrow_mut()
                .push((rel.to_string(), shown.clone(), body.clone()));
            Ok((shown, body))
        };
        let spec = hsched_sweep::parse(&text, file, &recording).map_err(|e| spec_error(py, &e))?;
        Ok(SweepSpec {
            spec,
            text,
            scenarios: scenarios.into_inner(),
        })
    }

    fn shard(text: &str) -> PyResult<Shard> {
        Shard::parse(text).map_err(|e| PyValueError::new_err(format!("shard {e}")))
    }

    fn io_error(path: &Path, e: impl std::fmt::Display) -> PyErr {
        PyOSError::new_err(format!("{}: {e}", path.display()))
    }
}

#[pymethods]
impl SweepSpec {
    /// Reads a spec file, and the base scenario it names relative to it,
    /// as `hsched sweep SPEC` does (messages name `path` as given).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<SweepSpec> {
        let file = path.display().to_string();
        let text = hsched_scenario::input::read_text(&path, "the sweep spec").map_err(|e| {
            spec_error(
                py,
                &SpecError {
                    file: file.clone(),
                    at: None,
                    key: String::new(),
                    message: e,
                },
            )
        })?;
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        Self::parse_recording(py, text, &file, &|rel| read_relative(&dir, rel))
    }

    /// Parses spec text named `file` in messages; a base scenario path is
    /// read relative to `base_dir`.
    #[staticmethod]
    fn parse(py: Python<'_>, text: String, file: &str, base_dir: PathBuf) -> PyResult<SweepSpec> {
        Self::parse_recording(py, text, file, &|rel| read_relative(&base_dir, rel))
    }

    /// Rebuilds a spec from [`SweepSpec::parts`] (in a worker): base
    /// scenarios come from the parts, not from files.
    #[staticmethod]
    fn from_parts(
        py: Python<'_>,
        text: String,
        file: &str,
        scenarios: Vec<ScenarioPart>,
    ) -> PyResult<SweepSpec> {
        let read = |rel: &str| {
            scenarios
                .iter()
                .find(|(r, _, _)| r == rel)
                .map(|(_, shown, body)| (shown.clone(), body.clone()))
                .ok_or_else(|| {
                    format!("`{rel}`: not among the base scenarios shipped with the spec")
                })
        };
        Self::parse_recording(py, text, file, &read)
    }

    /// `(text, file, scenarios)`: what [`SweepSpec::from_parts`] takes.
    fn parts(&self) -> (String, String, Vec<ScenarioPart>) {
        (
            self.text.clone(),
            self.spec.file.clone(),
            self.scenarios.clone(),
        )
    }

    /// The spec's name (its file name without extension).
    #[getter]
    fn name(&self) -> &str {
        &self.spec.name
    }

    /// The spec file as messages name it.
    #[getter]
    fn file(&self) -> &str {
        &self.spec.file
    }

    /// How many points the spec has.
    fn count(&self) -> u64 {
        points::count(&self.spec)
    }

    /// The CSV's columns.
    fn header(&self) -> Vec<String> {
        csvfile::header(&self.spec)
    }

    /// The indexes of shard `k/N` (as `--shard k/N`), in order.
    fn shard_indexes(&self, shard: &str) -> PyResult<Vec<u64>> {
        Ok(Self::shard(shard)?.indexes(self.count()).collect())
    }

    /// How `hsched sweep` names point `index` in messages.
    fn describe(&self, index: u64) -> PyResult<String> {
        self.check_index(index)?;
        Ok(points::describe(
            &self.spec,
            &points::point(&self.spec, index),
        ))
    }

    /// Point `index`'s scenario, as the simulator gets it (`--scenario N`).
    fn scenario(&self, py: Python<'_>, index: u64) -> PyResult<String> {
        self.check_index(index)?;
        let p = points::point(&self.spec, index);
        hsched_sweep::run::scenario_text(&self.spec, &p)
            .map(|(_, text)| text)
            .map_err(|e| {
                point_error(
                    py,
                    &self.spec,
                    index,
                    &SweepError::Input(format!("{}: {e}", points::describe(&self.spec, &p))),
                    Vec::new(),
                )
            })
    }

    /// Runs these points (on `threads` threads, default one per CPU, the
    /// GIL released) and returns their rows' cells, in the order given. Of
    /// several failing points, the first in that order is raised, as a
    /// `SweepPointError` whose `rows` are those of the points before it.
    #[pyo3(signature = (indexes, threads = None))]
    fn run_points(
        &self,
        py: Python<'_>,
        indexes: Vec<u64>,
        threads: Option<usize>,
    ) -> PyResult<Vec<Vec<String>>> {
        for &i in &indexes {
            self.check_index(i)?;
        }
        let mut opts = hsched_sweep::Options::new("");
        // Python policies registered in this process, as plugins are for
        // the command line.
        opts.registry = crate::policy::registry();
        opts.extra = crate::policy::extra_infos();
        hsched_pipeline::add_rules(&mut opts.rules, &crate::policy::hls_rules())
            .map_err(|e| PyValueError::new_err(hsched_cli::CliError::from(e).to_string()))?;
        if let Some(t) = threads {
            opts.threads = t.max(1);
        }
        let spec = &self.spec;
        py.detach(|| run_many(spec, &indexes, &opts))
            .map_err(|f| point_error(py, spec, f.index, &f.error, f.rows))
    }

    /// Opens `path` as the output of shard `shard`, as `hsched sweep`
    /// does: a new file gets the header; an existing one is read back,
    /// checked against the spec and shard, cut after its last complete
    /// row, and its rows' cells are returned (their points are done).
    fn open_output(&self, path: PathBuf, shard: &str) -> PyResult<Vec<Vec<String>>> {
        let shard = Self::shard(shard)?;
        let header = csvfile::header(&self.spec);
        let Some(existing) =
            csvfile::resume(&self.spec, shard, &path).map_err(PyValueError::new_err)?
        else {
            std::fs::write(&path, csvfile::encode(&header))
                .map_err(|e| Self::io_error(&path, e))?;
            return Ok(Vec::new());
        };
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(existing.complete_len))
            .map_err(|e| Self::io_error(&path, e))?;
        Ok(existing.rows.into_iter().map(|r| r.cells).collect())
    }

    /// Appends rows to `path`, one `write` per row (as the command line
    /// does, so that a kill leaves at worst a partial last line).
    fn append_rows(&self, path: PathBuf, rows: Vec<Vec<String>>) -> PyResult<()> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| Self::io_error(&path, e))?;
        for cells in &rows {
            f.write_all(&csvfile::encode(cells))
                .map_err(|e| Self::io_error(&path, e))?;
        }
        f.sync_data().map_err(|e| Self::io_error(&path, e))
    }

    /// Rewrites `path` with its rows sorted by index (after a run that
    /// filled a gap).
    fn sort_output(&self, path: PathBuf) -> PyResult<()> {
        let existing = csvfile::read(&path)
            .map_err(PyValueError::new_err)?
            .ok_or_else(|| Self::io_error(&path, "vanished"))?;
        let mut rows = existing.rows;
        csvfile::write_sorted(&path, &existing.header, &mut rows).map_err(PyOSError::new_err)
    }

    fn __repr__(&self) -> String {
        format!(
            "SweepSpec({:?}, {} points)",
            self.spec.file,
            points::count(&self.spec)
        )
    }
}

impl SweepSpec {
    fn check_index(&self, index: u64) -> PyResult<()> {
        let count = points::count(&self.spec);
        if index >= count {
            return Err(PyIndexError::new_err(format!(
                "point {index}: {} has {count} points (0..{count})",
                self.spec.file
            )));
        }
        Ok(())
    }
}

fn read_relative(dir: &Path, rel: &str) -> Result<(String, String), String> {
    let p = dir.join(rel);
    hsched_scenario::input::read_text(&p, &format!("`{}`", p.display()))
        .map(|t| (p.display().to_string(), t))
}

/// One CSV line per row, as `hsched sweep` writes them.
#[pyfunction]
fn sweep_encode(rows: Vec<Vec<String>>) -> String {
    let bytes: Vec<u8> = rows.iter().flat_map(|r| csvfile::encode(r)).collect();
    // The csv writer writes the UTF-8 cells it is given, and quotes.
    String::from_utf8(bytes).expect("CSV of UTF-8 cells is UTF-8")
}

/// Runs points on up to `opts.threads` threads; returns the rows in the
/// order of `indexes`, or the first failing point (in that order) and the
/// rows before it.
fn run_many(
    spec: &Spec,
    indexes: &[u64],
    opts: &hsched_sweep::Options,
) -> Result<Vec<Cells>, Failure> {
    let slots: Vec<Mutex<Option<Result<Cells, SweepError>>>> =
        indexes.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let workers = opts.threads.max(1).min(indexes.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let slot = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = indexes.get(slot) else {
                    return;
                };
                let result = hsched_sweep::run::point_row(spec, index, opts);
                if result.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                if let Ok(mut s) = slots[slot].lock() {
                    *s = Some(result);
                }
            });
        }
    });
    let mut rows = Vec::with_capacity(indexes.len());
    for (slot, index) in slots.into_iter().zip(indexes) {
        match slot.into_inner().ok().flatten() {
            Some(Ok(cells)) => rows.push(cells),
            Some(Err(error)) => {
                return Err(Failure {
                    index: *index,
                    error,
                    rows,
                })
            }
            // Not run: a point before it failed, and the loop returns at
            // that point's slot first.
            None => {
                return Err(Failure {
                    index: *index,
                    error: SweepError::Failed(format!(
                        "{}: not run (a worker thread died)",
                        points::describe(spec, &points::point(spec, *index))
                    )),
                    rows,
                })
            }
        }
    }
    Ok(rows)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<SweepSpec>()?;
    m.add_function(wrap_pyfunction!(sweep_encode, m)?)?;
    m.add("SweepSpecError", py.get_type::<SweepSpecError>())?;
    m.add("SweepPointError", py.get_type::<SweepPointError>())?;
    Ok(())
}
