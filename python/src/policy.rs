//! Policies written in Python: a subclass of `hsched.Policy` registered by
//! name runs in the simulator through the same dispatcher as the built-in
//! policies.

use hsched_core::PolicyInfo;
use pyo3::prelude::*;

/// The Python policies registered so far, for the simulator and the
/// dispatcher (beyond the built-in registry).
#[allow(dead_code)] // until the run API calls it
pub fn extra_infos() -> Vec<&'static PolicyInfo> {
    Vec::new()
}

/// The built-in registry followed by the Python policies, for the parser.
#[allow(dead_code)] // until the run API calls it
pub fn registry() -> Vec<PolicyInfo> {
    hsched_policies::registry()
        .iter()
        .copied()
        .chain(extra_infos().into_iter().copied())
        .collect()
}

/// The HLS Table 1 row each registered Python policy declares, if any.
#[allow(dead_code)] // until the run API calls it
pub fn hls_rules() -> Vec<(&'static str, String)> {
    Vec::new()
}

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
