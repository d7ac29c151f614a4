//! What hsched knows beyond one scenario: the policies (`hsched
//! policies`, with those registered from Python) and the paper
//! reproductions (`hsched repro`), as rows for DataFrames.

use hsched_cli::repro::{self, Bound as CheckBound, Verdict};
use hsched_core::{ParamSpec, PolicyInfo};
use pyo3::exceptions::{PyKeyError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn params<'py>(py: Python<'py>, specs: Vec<ParamSpec>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for p in specs {
        let d = PyDict::new(py);
        d.set_item("name", p.name)?;
        d.set_item("kind", p.kind.to_string())?;
        d.set_item("default", p.default.as_ref().map(|v| v.to_string()))?;
        d.set_item("required", p.default.is_none())?;
        d.set_item("doc", p.doc)?;
        out.append(d)?;
    }
    Ok(out)
}

/// One row per policy a scenario may name: the built-in ones, those
/// registered from Python, and the schedulers from the literature (analysed
/// by `check`, not run), as `hsched policies` lists them.
#[pyfunction]
pub fn policy_rows(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let book = hsched_pipeline::rule_book();
    let python_rules = crate::policy::hls_rules();
    let python = crate::policy::extra_infos();
    let all = hsched_policies::registry()
        .iter()
        .map(|i| ("built-in", i))
        .chain(python.iter().map(|i| ("python", *i)))
        .chain(
            hsched_analysis::rules::literature::infos()
                .iter()
                .map(|i| ("literature", i)),
        );
    let rows = PyList::empty(py);
    for (origin, info) in all {
        let info: &PolicyInfo = info;
        let rule = match origin {
            "python" => python_rules
                .iter()
                .find(|(n, _)| *n == info.name)
                .map(|(_, r)| r.clone()),
            _ => book.get(info.name).map(|r| r.row().to_string()),
        };
        let d = PyDict::new(py);
        d.set_item("name", info.name)?;
        d.set_item("summary", info.summary)?;
        d.set_item("origin", origin)?;
        d.set_item("runs", origin != "literature")?;
        d.set_item("hls_rule", rule)?;
        d.set_item("params", params(py, (info.params)())?)?;
        d.set_item("child_params", params(py, (info.child_params)())?)?;
        d.set_item("max_parents", info.max_parents)?;
        d.set_item(
            "max_children",
            (info.max_children != u32::MAX).then_some(info.max_children),
        )?;
        d.set_item("doc", info.doc)?;
        rows.append(d)?;
    }
    Ok(rows)
}

fn entries(timing: bool) -> Vec<repro::Entry> {
    match timing {
        true => repro::timing_entries(),
        false => repro::entries(),
    }
}

fn entry_row<'py>(py: Python<'py>, e: &repro::Entry) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", e.name)?;
    d.set_item("source", e.source)?;
    d.set_item("claim", e.claim)?;
    d.set_item("scenarios", e.scenarios.to_vec())?;
    Ok(d)
}

/// The reproduction entries (`hsched repro --list`; `timing`: `--timing
/// --list`).
#[pyfunction]
#[pyo3(signature = (timing = false))]
pub fn repro_entries(py: Python<'_>, timing: bool) -> PyResult<Bound<'_, PyList>> {
    let rows = PyList::empty(py);
    for e in entries(timing) {
        rows.append(entry_row(py, &e)?)?;
    }
    Ok(rows)
}

/// Runs entry `name` (the GIL released meanwhile); returns the entry and
/// its checks, one dict each.
#[pyfunction]
#[pyo3(signature = (name, timing = false))]
pub fn repro_run<'py>(
    py: Python<'py>,
    name: &str,
    timing: bool,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>)> {
    let all = entries(timing);
    let Some(entry) = all.iter().find(|e| e.name == name) else {
        let known: Vec<&str> = all.iter().map(|e| e.name).collect();
        return Err(PyKeyError::new_err(format!(
            "no reproduction named `{name}` (known: {})",
            known.join(", ")
        )));
    };
    let run = entry.run;
    let checks = py
        .detach(run)
        .map_err(|e| PyRuntimeError::new_err(format!("{name}: {e}")))?;
    let rows = PyList::empty(py);
    for c in &checks {
        let d = PyDict::new(py);
        d.set_item("quantity", &c.quantity)?;
        d.set_item("paper", c.paper)?;
        d.set_item("measured", c.measured)?;
        d.set_item("tolerance", c.tolerance)?;
        d.set_item(
            "bound",
            match c.bound {
                CheckBound::Within => "within",
                CheckBound::AtMost => "at_most",
                CheckBound::AtLeast => "at_least",
            },
        )?;
        d.set_item(
            "verdict",
            match c.verdict() {
                Verdict::Pass => "pass",
                Verdict::Fail => "fail",
                Verdict::Differs => "differs",
                Verdict::Stale => "stale",
            },
        )?;
        d.set_item("passed", c.passed())?;
        d.set_item("why", c.why)?;
        d.set_item("differs", c.differs)?;
        rows.append(d)?;
    }
    Ok((entry_row(py, entry)?, rows))
}
