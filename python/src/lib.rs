//! `hsched._hsched`: the extension module behind the `hsched` Python
//! package. It binds the workspace's crates (the scenario parser, the
//! simulator, the analysis, the sweep runner) and adapts policies written
//! in Python to the scheduler protocol; the package's Python code
//! (`python/hsched/`) turns what it returns into DataFrames.

use pyo3::prelude::*;

mod policy;
mod run;
mod sweep;

#[pymodule]
fn _hsched(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    run::register(m)?;
    run::live::register(m)?;
    policy::register(m)?;
    sweep::register(m)?;
    Ok(())
}
