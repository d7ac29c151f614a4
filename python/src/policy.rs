//! Policies written in Python: a subclass of `hsched.Policy` registered by
//! name runs in the simulator through the same dispatcher as the built-in
//! policies.
//!
//! - `objects`: what a callback receives and returns (`Cx`, `Dispatch`, ...).
//! - `adapter`: an instance of a Python policy as a `Box<dyn Scheduler>`;
//!   failures become ejections with the Python traceback in the run log.
//! - `slots`: a registered class as a `&'static PolicyInfo`.
//! - `bench`: the cost of a Python policy against a built-in one
//!   (`python -m hsched.bench`).
//!
//! The Python side (`hsched/_policy.py`) checks the class (required
//! callbacks, which optional ones it defines) and calls
//! `_register_policy`; this side checks what the simulator relies on
//! (names, typed parameter declarations, the HLS rule row).

mod adapter;
mod bench;
mod objects;
mod slots;

use hsched_core::{Duration, ParamKind, ParamSpec, PolicyInfo, Value};
use pyo3::exceptions::{PyAssertionError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The Python policies registered so far, for the simulator and the
/// dispatcher (beyond the built-in registry).
pub fn extra_infos() -> Vec<&'static PolicyInfo> {
    slots::infos()
}

/// The built-in registry followed by the Python policies, for the parser.
pub fn registry() -> Vec<PolicyInfo> {
    hsched_policies::registry()
        .iter()
        .copied()
        .chain(extra_infos().into_iter().copied())
        .collect()
}

/// The HLS Table 1 row each registered Python policy declares, if any.
pub fn hls_rules() -> Vec<(&'static str, String)> {
    slots::hls_rules()
}

/// One `hsched.Param` as a declaration. `what` names it in errors.
fn param_spec(p: &Bound<'_, PyAny>, what: &str) -> PyResult<ParamSpec> {
    let attr = |k: &str| p.getattr(k);
    let name: String = attr("name")
        .and_then(|v| v.extract())
        .map_err(|_| PyTypeError::new_err(format!("{what}: expected an hsched.Param")))?;
    let what = format!("{what} `{name}`");
    let kind_name: String = attr("kind")?.extract()?;
    let doc: String = attr("doc")?.extract()?;
    let (min, max, default) = (attr("min")?, attr("max")?, attr("default")?);
    let opt_int = |v: &Bound<'_, PyAny>, bound: &str, or: i64| -> PyResult<i64> {
        if v.is_none() {
            Ok(or)
        } else {
            v.extract::<i64>().map_err(|_| {
                PyTypeError::new_err(format!("{what}: `{bound}` must be an int, got {v}"))
            })
        }
    };
    let kind = match kind_name.as_str() {
        "bool" => ParamKind::Bool,
        "int" => ParamKind::Int {
            min: opt_int(&min, "min", i64::MIN)?,
            max: opt_int(&max, "max", i64::MAX)?,
        },
        "duration" => ParamKind::Duration {
            min: if min.is_none() {
                Duration::ZERO
            } else {
                objects::duration_from_py(&min, &format!("{what}: min"))?
            },
        },
        "str" => ParamKind::Str,
        other => {
            return Err(PyValueError::new_err(format!(
                "{what}: unknown kind {other:?} (expected bool, int, duration or str)"
            )))
        }
    };
    let default = if default.is_none() {
        None
    } else {
        let v = match kind {
            ParamKind::Duration { .. } => Value::Duration(objects::duration_from_py(
                &default,
                &format!("{what}: default"),
            )?),
            _ => objects::value_from_py(&default, &format!("{what}: default"))?,
        };
        Some(v)
    };
    let spec = ParamSpec {
        name: slots::intern(&name),
        kind,
        default,
        doc: slots::intern(&doc),
    };
    if let Some(d) = &spec.default {
        spec.check(d)
            .map_err(|e| PyValueError::new_err(format!("{what}: default: {e}")))?;
    }
    Ok(spec)
}

fn param_specs(list: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<ParamSpec>> {
    let mut out: Vec<ParamSpec> = Vec::new();
    for (i, p) in list.try_iter()?.enumerate() {
        let spec = param_spec(&p?, &format!("{what}[{i}]"))?;
        if out.iter().any(|s| s.name == spec.name) {
            return Err(PyValueError::new_err(format!(
                "{what}: `{}` is declared twice",
                spec.name
            )));
        }
        out.push(spec);
    }
    Ok(out)
}

/// Registers `cls` under `name` (see `hsched.register`, which checks the
/// class and calls this).
#[pyfunction]
#[pyo3(signature = (cls, name, summary, doc, params, child_params, max_parents, max_children, hls_rule, overridden))]
#[allow(clippy::too_many_arguments)] // one call, from hsched.register
fn _register_policy(
    cls: &Bound<'_, PyAny>,
    name: &str,
    summary: &str,
    doc: &str,
    params: &Bound<'_, PyAny>,
    child_params: &Bound<'_, PyAny>,
    max_parents: u32,
    max_children: u32,
    hls_rule: Option<String>,
    overridden: Vec<String>,
) -> PyResult<()> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(PyValueError::new_err(format!(
            "policy name {name:?}: expected a non-empty name without spaces"
        )));
    }
    if hsched_policies::find(name).is_some() {
        return Err(PyValueError::new_err(format!(
            "policy `{name}` is built in; a Python policy cannot replace it (choose another name)"
        )));
    }
    if max_parents == 0 || max_children == 0 {
        return Err(PyValueError::new_err(format!(
            "policy `{name}`: max_parents and max_children must be at least 1"
        )));
    }
    if let Some(rule) = &hls_rule {
        hsched_pipeline::rule_book()
            .add_row(name, rule)
            .map_err(|e| PyValueError::new_err(format!("policy `{name}`: hls_rule: {e}")))?;
    }
    let decl = slots::Declaration {
        name: name.to_string(),
        summary: summary.to_string(),
        doc: doc.to_string(),
        params: param_specs(params, &format!("policy `{name}`: params"))?,
        child_params: param_specs(child_params, &format!("policy `{name}`: child_params"))?,
        max_parents,
        max_children,
        hls_rule,
        overrides: adapter::Overrides::from_names(&overridden).map_err(PyValueError::new_err)?,
    };
    slots::register(cls.clone().unbind(), decl).map_err(PyRuntimeError::new_err)?;
    Ok(())
}

/// The class registered under `name`, or `None`.
#[pyfunction]
fn _registered_class(py: Python<'_>, name: &str) -> Option<Py<PyAny>> {
    slots::class_of(name).map(|c| c.clone_ref(py))
}

/// The names of the registered Python policies, in registration order.
#[pyfunction]
fn _registered_names() -> Vec<&'static str> {
    slots::infos().iter().map(|i| i.name).collect()
}

/// Runs the conformance suite (`hsched_sim::conformance::conforms`) on
/// the registered policy `name`; a failure raises `AssertionError` with
/// the message of the check that failed (its tag first, e.g. `[C6]`).
#[pyfunction]
fn _conformance(name: &str) -> PyResult<()> {
    let info = slots::find(name).ok_or_else(|| {
        PyValueError::new_err(format!("no Python policy named `{name}` is registered"))
    })?;
    let extra = extra_infos();
    let outcome = adapter::quietly(|| {
        std::panic::catch_unwind(|| hsched_sim::conformance::conforms(info, &extra))
    });
    outcome.map_err(|panic| {
        let text = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the conformance suite failed".into());
        PyAssertionError::new_err(tagged(&text))
    })
}

/// A conformance failure as the check's tagged message: without the
/// `assertion ... failed: ` prefix `assert_eq!` puts first, and without its
/// `left`/`right` dumps when they are whole timelines.
fn tagged(text: &str) -> String {
    let text = match text.find("failed: [C") {
        Some(at) if text.starts_with("assertion") => &text[at + "failed: ".len()..],
        _ => text,
    };
    const LONGEST: usize = 4000;
    match text.find("\n  left: ") {
        Some(at) if text.len() > LONGEST => format!(
            "{} (the compared values, {} characters, are left out)",
            &text[..at],
            text.len() - at
        ),
        _ => text.to_string(),
    }
}

/// Test helper until `hsched.simulate` lands: parses `toml` with the
/// Python policies registered, simulates it (`seed`, `horizon_ns` override
/// the scenario's; `check_invariants` as the conformance suite runs) and
/// returns the metrics JSON the CLI writes with `--json`. `detach`: run
/// with the GIL released (each callback takes it again), so that other
/// Python threads run meanwhile.
#[pyfunction]
#[pyo3(signature = (toml, seed=None, horizon_ns=None, check_invariants=false, detach=false))]
fn _simulate_json(
    py: Python<'_>,
    toml: &str,
    seed: Option<u64>,
    horizon_ns: Option<u64>,
    check_invariants: bool,
    detach: bool,
) -> PyResult<String> {
    let scn = hsched_scenario::parse_with_registry(toml, "<python>", &registry())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let opts = hsched_sim::SimOptions {
        seed,
        horizon: horizon_ns.map(Duration),
        check_invariants,
        ..Default::default()
    };
    let run = move || {
        hsched_sim::run_with_policies(&scn, &opts, &extra_infos())
            .map(|r| hsched_report::metrics_json(&r))
    };
    let result = if detach { py.detach(run) } else { run() };
    result.map_err(PyRuntimeError::new_err)
}

/// `hls_rules()`, for the tests.
#[pyfunction]
fn _hls_rules() -> Vec<(&'static str, String)> {
    hls_rules()
}

/// How many callbacks this process has made into Python policies.
#[pyfunction]
fn _python_callbacks() -> u64 {
    adapter::calls()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    adapter::install_quiet_hook();
    let py = m.py();
    m.add("Reject", py.get_type::<objects::Reject>())?;
    m.add_class::<objects::Dispatch>()?;
    m.add_class::<objects::PyCx>()?;
    m.add_class::<objects::PyVpState>()?;
    m.add_class::<objects::PySender>()?;
    m.add_class::<objects::PyMsg>()?;
    m.add_function(wrap_pyfunction!(_register_policy, m)?)?;
    m.add_function(wrap_pyfunction!(_registered_class, m)?)?;
    m.add_function(wrap_pyfunction!(_registered_names, m)?)?;
    m.add_function(wrap_pyfunction!(_conformance, m)?)?;
    m.add_function(wrap_pyfunction!(_simulate_json, m)?)?;
    m.add_function(wrap_pyfunction!(_python_callbacks, m)?)?;
    m.add_function(wrap_pyfunction!(_hls_rules, m)?)?;
    bench::register(m)?;
    Ok(())
}
