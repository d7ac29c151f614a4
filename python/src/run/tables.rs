//! A run's tables as columns: one typed array per column, handed to Python
//! as raw native-endian bytes (or, for names that repeat, category codes and
//! the categories), which `hsched/_run.py` wraps in numpy arrays without a
//! per-row Python object. A run of millions of segments stays a few
//! copies of memory, not millions of calls.

use hsched_core::ThreadId;
use hsched_model::{MarkKind, RunResult, SegmentKind};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyList, PyTuple};
use std::collections::HashMap;

/// One column's values.
pub enum Col {
    Int(Vec<i64>),
    /// Values and a mask (true: missing).
    OptInt(Vec<i64>, Vec<bool>),
    /// Missing values are NaN (shares and rates).
    Float(Vec<f64>),
    Bool(Vec<bool>),
    OptBool(Vec<bool>, Vec<bool>),
    Str(Vec<String>),
    OptStr(Vec<Option<String>>),
    /// Codes into the categories (-1: missing), for names that repeat.
    Cat(Vec<i32>, Vec<String>),
}

/// Named columns in order.
#[derive(Default)]
pub struct Table(Vec<(&'static str, Col)>);

impl Table {
    fn add(&mut self, name: &'static str, col: Col) -> &mut Self {
        self.0.push((name, col));
        self
    }

    /// `[(name, kind, data, extra)]`: kind `i8` (data: int64 bytes),
    /// `i8?` (data, extra: mask bytes), `f8`, `b1`, `b1?`, `str` (a list),
    /// `str?` (a list with None), `cat` (data: int32 codes, extra: the
    /// categories).
    pub fn into_py<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for (name, col) in self.0 {
            let none = py.None().into_bound(py);
            let (kind, data, extra): (&str, Bound<'py, PyAny>, Bound<'py, PyAny>) = match col {
                Col::Int(v) => ("i8", bytes(py, &v, |x| x.to_ne_bytes()), none),
                Col::OptInt(v, m) => (
                    "i8?",
                    bytes(py, &v, |x| x.to_ne_bytes()),
                    bytes(py, &m, |b| [u8::from(*b)]),
                ),
                Col::Float(v) => ("f8", bytes(py, &v, |x| x.to_ne_bytes()), none),
                Col::Bool(v) => ("b1", bytes(py, &v, |b| [u8::from(*b)]), none),
                Col::OptBool(v, m) => (
                    "b1?",
                    bytes(py, &v, |b| [u8::from(*b)]),
                    bytes(py, &m, |b| [u8::from(*b)]),
                ),
                Col::Str(v) => ("str", PyList::new(py, v)?.into_any(), none),
                Col::OptStr(v) => ("str?", PyList::new(py, v)?.into_any(), none),
                Col::Cat(codes, cats) => (
                    "cat",
                    bytes(py, &codes, |x| x.to_ne_bytes()),
                    PyList::new(py, cats)?.into_any(),
                ),
            };
            out.append(PyTuple::new(
                py,
                [
                    name.into_pyobject(py)?.into_any(),
                    kind.into_pyobject(py)?.into_any(),
                    data,
                    extra,
                ],
            )?)?;
        }
        Ok(out)
    }
}

/// The values' bytes, one `encode` each, in a bytearray (writable, so
/// numpy can wrap it without a copy).
fn bytes<'py, T, const N: usize>(
    py: Python<'py>,
    values: &[T],
    encode: impl Fn(&T) -> [u8; N],
) -> Bound<'py, PyAny> {
    let mut raw = Vec::with_capacity(values.len() * N);
    for v in values {
        raw.extend_from_slice(&encode(v));
    }
    PyByteArray::new(py, &raw).into_any()
}

fn ns(d: hsched_core::Duration) -> i64 {
    d.as_nanos() as i64
}

fn at(i: hsched_core::Instant) -> i64 {
    i.as_nanos() as i64
}

fn opt_int(values: impl Iterator<Item = Option<i64>>) -> Col {
    let (v, m) = values.map(|x| (x.unwrap_or(0), x.is_none())).unzip();
    Col::OptInt(v, m)
}

fn float(values: impl Iterator<Item = Option<f64>>) -> Col {
    Col::Float(values.map(|x| x.unwrap_or(f64::NAN)).collect())
}

/// Thread names as categories: the code of each thread id, and the
/// distinct names (a name given to two threads is one category).
struct ThreadNames {
    code_of_id: Vec<i32>,
    names: Vec<String>,
}

impl ThreadNames {
    fn of<'a>(result: &'a RunResult) -> Self {
        // The result's threads first; the timeline's names fill the rest.
        let mut by_id: Vec<Option<&str>> = Vec::new();
        let mut name = |i: usize, n: &'a str| {
            if by_id.len() <= i {
                by_id.resize(i + 1, None);
            }
            by_id[i].get_or_insert(n);
        };
        for t in &result.threads {
            name(t.id.index(), &t.name);
        }
        for (i, n) in result
            .trace
            .iter()
            .flat_map(|t| t.thread_names.iter().enumerate())
        {
            name(i, n);
        }
        let mut names: Vec<String> = Vec::new();
        let mut codes: HashMap<&str, i32> = HashMap::new();
        let code_of_id = by_id
            .iter()
            .map(|n| match n {
                None => -1,
                Some(n) => *codes.entry(n).or_insert_with(|| {
                    names.push(n.to_string());
                    names.len() as i32 - 1
                }),
            })
            .collect();
        ThreadNames { code_of_id, names }
    }

    fn code(&self, id: Option<ThreadId>) -> i32 {
        id.and_then(|t| self.code_of_id.get(t.index()).copied())
            .unwrap_or(-1)
    }

    fn column(self, ids: impl Iterator<Item = Option<ThreadId>>) -> Col {
        let codes = ids.map(|t| self.code(t)).collect();
        Col::Cat(codes, self.names)
    }
}

/// One row per thread: the metrics' numbers (`hsched sim --json`'s
/// `threads`), with when it arrived and exited.
pub fn threads(result: &RunResult) -> Table {
    let m = hsched_report::metrics(result);
    let rows = &m.threads;
    let mut t = Table::default();
    let int = |f: &dyn Fn(&hsched_report::metrics::ThreadMetrics) -> u64| {
        Col::Int(rows.iter().map(|r| f(r) as i64).collect())
    };
    t.add("id", int(&|r| u64::from(r.id)))
        .add(
            "name",
            Col::Str(rows.iter().map(|r| r.name.clone()).collect()),
        )
        .add(
            "scheduler",
            Col::Str(rows.iter().map(|r| r.scheduler.clone()).collect()),
        )
        .add("cpu_time_ns", int(&|r| r.cpu_time_ns))
        .add("share", float(rows.iter().map(|r| r.share)))
        .add(
            "guarantee",
            Col::OptStr(rows.iter().map(|r| r.guarantee.clone()).collect()),
        )
        .add(
            "guaranteed_share",
            float(rows.iter().map(|r| r.guaranteed_share)),
        )
        .add(
            "guaranteed_from_ns",
            opt_int(rows.iter().map(|r| r.guaranteed_from_ns.map(|x| x as i64))),
        )
        .add("wakeups", int(&|r| r.wakeup_latency.count))
        .add(
            "wakeup_p50_ns",
            opt_int(
                rows.iter()
                    .map(|r| r.wakeup_latency.p50_ns.map(|x| x as i64)),
            ),
        )
        .add(
            "wakeup_p99_ns",
            opt_int(
                rows.iter()
                    .map(|r| r.wakeup_latency.p99_ns.map(|x| x as i64)),
            ),
        )
        .add(
            "wakeup_max_ns",
            opt_int(
                rows.iter()
                    .map(|r| r.wakeup_latency.max_ns.map(|x| x as i64)),
            ),
        )
        .add("jobs", int(&|r| r.jobs))
        .add("jobs_finished", int(&|r| r.job_response.count))
        .add(
            "response_p50_ns",
            opt_int(rows.iter().map(|r| r.job_response.p50_ns.map(|x| x as i64))),
        )
        .add(
            "response_p99_ns",
            opt_int(rows.iter().map(|r| r.job_response.p99_ns.map(|x| x as i64))),
        )
        .add(
            "response_max_ns",
            opt_int(rows.iter().map(|r| r.job_response.max_ns.map(|x| x as i64))),
        )
        .add("deadline_misses", int(&|r| r.deadline_misses))
        .add("max_gap_ns", int(&|r| r.max_gap_ns))
        .add("context_switches", int(&|r| r.context_switches))
        .add("migrations", int(&|r| r.migrations))
        .add("calls_made", int(&|r| r.calls.made))
        .add("calls_ok", int(&|r| r.calls.ok))
        .add("call_errors", int(&|r| r.calls.errors()))
        .add(
            "arrival_ns",
            Col::Int(result.threads.iter().map(|t| at(t.arrival)).collect()),
        )
        .add(
            "exit_ns",
            opt_int(result.threads.iter().map(|t| t.exit.map(at))),
        );
    t
}

/// One row per scheduler instance (a name loaded twice is two rows).
pub fn schedulers(result: &RunResult) -> Table {
    let m = hsched_report::metrics(result);
    let rows = &m.schedulers;
    let mut t = Table::default();
    t.add(
        "name",
        Col::Str(rows.iter().map(|r| r.name.clone()).collect()),
    )
    .add(
        "policy",
        Col::Str(rows.iter().map(|r| r.policy.clone()).collect()),
    )
    .add("alive", Col::Bool(rows.iter().map(|r| r.alive).collect()))
    .add(
        "received_ns",
        Col::Int(rows.iter().map(|r| r.received_ns as i64).collect()),
    )
    .add("share", float(rows.iter().map(|r| r.share)))
    .add(
        "guarantee",
        Col::OptStr(rows.iter().map(|r| r.guarantee.clone()).collect()),
    )
    .add(
        "guaranteed_share",
        float(rows.iter().map(|r| r.guaranteed_share)),
    )
    .add(
        "guaranteed_from_ns",
        opt_int(rows.iter().map(|r| r.guaranteed_from_ns.map(|x| x as i64))),
    );
    t
}

/// One row per job the run holds (see `Run.limits` for those it counted
/// only).
pub fn jobs(result: &RunResult) -> Table {
    let names = ThreadNames::of(result);
    let end = hsched_core::Instant::ZERO + result.horizon;
    let jobs = &result.jobs;
    let mut t = Table::default();
    t.add(
        "thread",
        Col::Int(jobs.iter().map(|j| i64::from(j.thread.0)).collect()),
    )
    .add(
        "thread_name",
        names.column(jobs.iter().map(|j| Some(j.thread))),
    )
    .add("job", Col::Int(jobs.iter().map(|j| j.job as i64).collect()))
    .add(
        "release_ns",
        Col::Int(jobs.iter().map(|j| at(j.release)).collect()),
    )
    .add("start_ns", opt_int(jobs.iter().map(|j| j.start.map(at))))
    .add("finish_ns", opt_int(jobs.iter().map(|j| j.finish.map(at))))
    .add(
        "deadline_ns",
        Col::Int(jobs.iter().map(|j| at(j.deadline)).collect()),
    )
    .add(
        "response_ns",
        opt_int(jobs.iter().map(|j| j.response().map(ns))),
    )
    .add(
        "lateness_ns",
        opt_int(jobs.iter().map(|j| j.lateness_ns().map(|x| x as i64))),
    )
    .add(
        "missed",
        Col::Bool(jobs.iter().map(|j| j.missed(end)).collect()),
    );
    let (admitted, unasked) = jobs
        .iter()
        .map(|j| (j.admitted.unwrap_or(false), j.admitted.is_none()))
        .unzip();
    t.add("admitted", Col::OptBool(admitted, unasked));
    t
}

/// The timeline: what each CPU did from when to when; `None` when the run
/// kept no timeline.
pub fn segments(result: &RunResult) -> Option<Table> {
    let trace = result.trace.as_ref()?;
    let names = ThreadNames::of(result);
    let segs = &trace.segments;
    let kinds = ["idle", "switch", "run", "interrupt"]
        .map(String::from)
        .to_vec();
    let (kind, thread): (Vec<i32>, Vec<Option<ThreadId>>) = segs
        .iter()
        .map(|s| match s.what {
            SegmentKind::Idle => (0, None),
            SegmentKind::Switch(t) => (1, Some(t)),
            SegmentKind::Run(t) => (2, Some(t)),
            SegmentKind::Interrupt => (3, None),
        })
        .unzip();
    let mut t = Table::default();
    t.add(
        "cpu",
        Col::Int(segs.iter().map(|s| i64::from(s.cpu.0)).collect()),
    )
    .add(
        "start_ns",
        Col::Int(segs.iter().map(|s| at(s.start)).collect()),
    )
    .add("end_ns", Col::Int(segs.iter().map(|s| at(s.end)).collect()))
    .add(
        "duration_ns",
        Col::Int(segs.iter().map(|s| at(s.end) - at(s.start)).collect()),
    )
    .add("kind", Col::Cat(kind, kinds))
    .add(
        "thread",
        opt_int(thread.iter().map(|t| t.map(|t| i64::from(t.0)))),
    )
    .add("thread_name", names.column(thread.into_iter()));
    Some(t)
}

/// The timeline's point events (wakeups, releases, deadline misses,
/// ejections); `None` without a timeline.
pub fn marks(result: &RunResult) -> Option<Table> {
    let trace = result.trace.as_ref()?;
    let names = ThreadNames::of(result);
    let marks = &trace.marks;
    let kinds = ["wakeup", "release", "deadline_miss", "eject"]
        .map(String::from)
        .to_vec();
    let mut t = Table::default();
    t.add("at_ns", Col::Int(marks.iter().map(|m| at(m.at)).collect()))
        .add(
            "kind",
            Col::Cat(
                marks
                    .iter()
                    .map(|m| match m.kind {
                        MarkKind::Wakeup => 0,
                        MarkKind::Release { .. } => 1,
                        MarkKind::DeadlineMiss { .. } => 2,
                        MarkKind::Eject { .. } => 3,
                    })
                    .collect(),
                kinds,
            ),
        )
        .add(
            "thread",
            opt_int(marks.iter().map(|m| m.thread.map(|t| i64::from(t.0)))),
        )
        .add("thread_name", names.column(marks.iter().map(|m| m.thread)))
        .add(
            "job",
            opt_int(marks.iter().map(|m| match m.kind {
                MarkKind::Release { job } | MarkKind::DeadlineMiss { job } => Some(job as i64),
                _ => None,
            })),
        )
        .add(
            "scheduler",
            Col::OptStr(
                marks
                    .iter()
                    .map(|m| match &m.kind {
                        MarkKind::Eject { scheduler } => Some(scheduler.clone()),
                        _ => None,
                    })
                    .collect(),
            ),
        );
    Some(t)
}

/// One row per CPU: where its time went.
pub fn cpus(result: &RunResult) -> Table {
    let c = &result.cpu_stats;
    let mut t = Table::default();
    t.add(
        "cpu",
        Col::Int(c.iter().map(|s| i64::from(s.cpu.0)).collect()),
    )
    .add("busy_ns", Col::Int(c.iter().map(|s| ns(s.busy)).collect()))
    .add(
        "overhead_ns",
        Col::Int(c.iter().map(|s| ns(s.overhead)).collect()),
    )
    .add(
        "interrupt_ns",
        Col::Int(c.iter().map(|s| ns(s.interrupt)).collect()),
    )
    .add("idle_ns", Col::Int(c.iter().map(|s| ns(s.idle)).collect()))
    .add(
        "interrupts",
        Col::Int(c.iter().map(|s| s.interrupts as i64).collect()),
    );
    t
}

/// The run's log: ejections, refusals, script steps, replies...
pub fn log(result: &RunResult) -> Table {
    let log = &result.log;
    let mut kinds: Vec<String> = Vec::new();
    let mut codes: HashMap<String, i32> = HashMap::new();
    let kind = log
        .iter()
        .map(|e| {
            let name = serde_json::to_value(e.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            *codes.entry(name.clone()).or_insert_with(|| {
                kinds.push(name);
                kinds.len() as i32 - 1
            })
        })
        .collect();
    let mut t = Table::default();
    t.add("at_ns", Col::Int(log.iter().map(|e| at(e.at)).collect()))
        .add("kind", Col::Cat(kind, kinds))
        .add(
            "text",
            Col::Str(log.iter().map(|e| e.text.clone()).collect()),
        );
    t
}
