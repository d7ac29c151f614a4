//! What crosses between Python and the pipeline: a Python dict written as
//! TOML (so a dict goes through the same parser and errors as a file), and
//! the pipeline's errors raised as the package's exceptions
//! (`hsched/_errors.py`), their fields as attributes.

use hsched_pipeline::PipelineError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDelta, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// The TOML text of a scenario given as a dict (keys: str; values: str,
/// int, float, bool, `datetime.timedelta` (written as whole nanoseconds,
/// `"1500000ns"`), lists, tuples and dicts of those). A value with no
/// TOML form raises `ScenarioError` naming its key; `name` is the name
/// the error gives the dict.
pub fn toml_of(py: Python<'_>, value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    let invalid = |key: &str, message: String| {
        let attrs = PyDict::new(py);
        let filled = (|| -> PyResult<()> {
            attrs.set_item("file", name)?;
            attrs.set_item("key", key)?;
            attrs.set_item("message", &message)?;
            Ok(())
        })();
        let text = match key {
            "" => format!("{name}: {message}"),
            key => format!("{name}: {key}: {message}"),
        };
        filled.map_or_else(|e| e, |()| raise(py, "ScenarioError", &text, &attrs))
    };
    let table = match to_toml(value, "") {
        Ok(toml::Value::Table(table)) => table,
        Ok(_) => {
            return Err(invalid(
                "",
                format!("a scenario dict must be a dict, not {}", type_name(value)),
            ))
        }
        Err(Invalid::Python(e)) => return Err(e),
        Err(Invalid::Value { key, message }) => return Err(invalid(&key, message)),
    };
    toml::to_string(&table).map_err(|e| invalid("", format!("the dict has no TOML form: {e}")))
}

/// Why a dict has no TOML form.
enum Invalid {
    /// A value at `key` that TOML cannot write.
    Value { key: String, message: String },
    /// Python failed while it was read.
    Python(PyErr),
}

impl From<PyErr> for Invalid {
    fn from(e: PyErr) -> Self {
        Invalid::Python(e)
    }
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn to_toml(value: &Bound<'_, PyAny>, key: &str) -> Result<toml::Value, Invalid> {
    let at = |message: String| Invalid::Value {
        key: key.to_string(),
        message,
    };
    // bool before int: a Python bool is an int.
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(toml::Value::Boolean(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        let n: i64 = value
            .extract()
            .map_err(|_| at(format!("{value} does not fit in 64 bits")))?;
        return Ok(toml::Value::Integer(n));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Ok(toml::Value::Float(f.value()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(toml::Value::String(s.to_cow()?.into_owned()));
    }
    if value.is_instance_of::<PyDelta>() {
        return Ok(toml::Value::String(format!("{}ns", delta_ns(value, &at)?)));
    }
    if let Ok(d) = value.cast::<PyDict>() {
        let mut table = toml::Table::new();
        for (k, v) in d.iter() {
            let Ok(name) = k.cast::<PyString>() else {
                return Err(at(format!("key {k} is not a string")));
            };
            let name = name.to_cow()?.into_owned();
            let path = if key.is_empty() {
                name.clone()
            } else {
                format!("{key}.{name}")
            };
            table.insert(name, to_toml(&v, &path)?);
        }
        return Ok(toml::Value::Table(table));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, v) in value.try_iter()?.enumerate() {
            items.push(to_toml(&v?, &format!("{key}[{i}]"))?);
        }
        return Ok(toml::Value::Array(items));
    }
    if value.is_none() {
        return Err(at("None has no TOML form (leave the key out)".into()));
    }
    Err(at(format!(
        "a {} has no TOML form (expected str, int, float, bool, timedelta, list or dict)",
        type_name(value)
    )))
}

/// A timedelta in whole nanoseconds (pandas' Timedelta keeps them in
/// `value`; the standard one has microseconds at most).
fn delta_ns(value: &Bound<'_, PyAny>, at: &dyn Fn(String) -> Invalid) -> Result<u64, Invalid> {
    let ns: i128 = match value.getattr("value").and_then(|v| v.extract::<i64>()) {
        Ok(ns) => i128::from(ns),
        Err(_) => {
            let days: i64 = value.getattr("days")?.extract()?;
            let secs: i64 = value.getattr("seconds")?.extract()?;
            let micros: i64 = value.getattr("microseconds")?.extract()?;
            (i128::from(days) * 86_400 + i128::from(secs)) * 1_000_000_000
                + i128::from(micros) * 1_000
        }
    };
    u64::try_from(ns).map_err(|_| at(format!("{value} is negative or too long for a duration")))
}

/// The package's exception `name` (`hsched._errors`) made from `args` and
/// keyword attributes.
fn raise(py: Python<'_>, name: &str, message: &str, attrs: &Bound<'_, PyDict>) -> PyErr {
    let made = py
        .import("hsched._errors")
        .and_then(|m| m.getattr(name))
        .and_then(|class| class.call((message,), Some(attrs)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// A pipeline error as the package's exception; `file` is the name the
/// scenario goes by, `analysis` makes an `Analysis` for a hierarchy that
/// does not compose.
pub fn error(
    py: Python<'_>,
    e: PipelineError,
    file: &str,
    analysis: impl FnOnce(hsched_analysis::compose::Analysis) -> PyResult<Py<PyAny>>,
) -> PyErr {
    let attrs = PyDict::new(py);
    let set = |k: &str, v: Bound<'_, PyAny>| attrs.set_item(k, v);
    let fill = || -> PyResult<PyErr> {
        Ok(match e {
            PipelineError::Scenario(e) => {
                set("file", e.file().into_pyobject(py)?.into_any())?;
                set("line", e.line().into_pyobject(py)?.into_any())?;
                set("column", e.column().into_pyobject(py)?.into_any())?;
                set("key", e.key().into_pyobject(py)?.into_any())?;
                set("message", e.message().into_pyobject(py)?.into_any())?;
                set("hint", e.hint().into_pyobject(py)?.into_any())?;
                raise(py, "ScenarioError", &e.to_string(), &attrs)
            }
            PipelineError::Input(m) => {
                let message = m
                    .strip_prefix(file)
                    .and_then(|rest| rest.strip_prefix(": "))
                    .unwrap_or(&m);
                set("file", file.into_pyobject(py)?.into_any())?;
                set("line", 0usize.into_pyobject(py)?.into_any())?;
                set("column", 0usize.into_pyobject(py)?.into_any())?;
                set("key", "".into_pyobject(py)?.into_any())?;
                set("message", message.into_pyobject(py)?.into_any())?;
                raise(py, "ScenarioError", &m, &attrs)
            }
            PipelineError::Uncomposed { file, analysis: a } => {
                let why = hsched_pipeline::uncomposed(&file, &a);
                let errors: Vec<String> = a.errors().map(|p| p.message.clone()).collect();
                set("file", file.as_str().into_pyobject(py)?.into_any())?;
                set("errors", errors.into_pyobject(py)?.into_any())?;
                set("analysis", analysis(*a)?.into_bound(py))?;
                let message = format!(
                    "{why}\n(hsched.check() shows the labelled hierarchy; \
                     allow_uncomposed=True runs it anyway)"
                );
                raise(py, "AnalysisError", &message, &attrs)
            }
            PipelineError::Failed(m) => raise(py, "RunError", &m, &attrs),
        })
    };
    fill().unwrap_or_else(|e| e)
}
