//! Scenarios, runs and analyses: `load`, `simulate`, `check`, `policies`,
//! `repro`.

use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
