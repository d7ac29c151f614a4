//! Sweeps: the points of a spec, one point run at a time (for an
//! executor), and the CSV the command line writes.

use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
