//! The scenario's BVT inputs, defaults filled in: an instance's
//! parameters, a thread's attachment, and §2.1's allowance in a thread's
//! virtual units.

use hsched_core::Duration;
use hsched_model::Scenario;

/// The `bvt` instance `name`'s parameters, defaults filled in.
pub(super) fn bvt_params(scn: &Scenario, name: &str) -> Result<hsched_core::Params, String> {
    let s = scn
        .schedulers
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("the scenario has no scheduler `{name}`"))?;
    s.params.resolve(&(hsched_policies::bvt::INFO.params)())
}

/// Thread `name`'s `bvt` attachment, defaults filled in.
pub(super) fn bvt_attach(scn: &Scenario, name: &str) -> Result<hsched_core::Params, String> {
    let t = scn
        .threads
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("the scenario has no thread `{name}`"))?;
    t.params
        .resolve(&(hsched_policies::bvt::INFO.child_params)())
}

/// `C_i = ceil(C * m_i / mcu)`, the allowance in thread i's virtual units
/// (§2.1's `C/w_i`).
pub(super) fn allowance_units(c: Duration, mcu: Duration, m: u64) -> u64 {
    (c.as_nanos() as u128 * m as u128).div_ceil(mcu.as_nanos().max(1) as u128) as u64
}
