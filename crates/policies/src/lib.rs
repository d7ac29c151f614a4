//! hsched policies: one policy per file, each a [`hsched_core::Scheduler`],
//! registered by name with typed parameters. The registry is what makes
//! policies "loadable": a hierarchy names a policy and its parameters, and
//! [`build`] makes an instance.
//!
//! Like `core`, this crate does no I/O, reads no clock and uses no floating
//! point in decisions.

use hsched_core::{Params, PolicyInfo, Scheduler};

/// Every registered policy type, in the order `hsched policies` lists them.
pub fn registry() -> &'static [PolicyInfo] {
    &[]
}

/// The policy type registered under `name`.
pub fn find(name: &str) -> Option<&'static PolicyInfo> {
    registry().iter().find(|p| p.name == name)
}

/// Builds an instance of `policy` from unchecked parameters: resolves them
/// against the declaration (defaults, types, ranges) first. Errors name the
/// policy and the parameter.
pub fn build(policy: &str, params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let info = find(policy).ok_or_else(|| {
        let known: Vec<&str> = registry().iter().map(|p| p.name).collect();
        format!("unknown policy `{policy}` (known: {})", known.join(", "))
    })?;
    let resolved = params
        .resolve(&(info.params)())
        .map_err(|e| format!("policy `{policy}`: {e}"))?;
    (info.build)(&resolved).map_err(|e| format!("policy `{policy}`: {e}"))
}
