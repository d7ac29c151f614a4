//! hsched policies: one policy per file, each a [`hsched_core::Scheduler`],
//! registered by name with typed parameters. The registry is what makes
//! policies "loadable": a hierarchy names a policy and its parameters, and
//! [`build`] makes an instance.
//!
//! Like `core`, this crate does no I/O, reads no clock and uses no floating
//! point in decisions.
//!
//! - [`fifo`]: first come, first served, run to block (the template policy;
//!   `docs/writing-a-policy.md` walks through it).
//! - [`rr`]: round-robin time sharing with a quantum.
//! - [`fp`]: preemptive fixed priority.
//! - [`join`]: HLS join (several parents, one child).
//! - [`limit`]: HLS limit (caps a child at a budget per period).
//! - [`sfq`]: start-time fair queuing with weights and a BVT-style warp.
//! - [`dbs`]: the BVT paper's deadline-based reservations (EDF + round robin).
//! - [`bvt`]: borrowed virtual time (weighted fair share, warp for latency).
//! - [`res`]: HLS's reservation scheduler (EDF basic hard reservations,
//!   uniformly slower processors).
//! - [`ts`]: priority time sharing modelled on Windows 2000.
//! - [`rtwake`]: Vassal's sample real-time scheduler (precise wakeups,
//!   refused at once when they cannot be honoured).
//! - [`frc`]: Yau & Lam's fair rate-controlled scheduling (reserved rate,
//!   work quantum) with differential admission control.
//! - [`rcsp`]: rate-controlled static precedence (FRC eligibility,
//!   precedence order).
//! - [`hfsc`]: hierarchical fair service curve (SCED deadlines on two-piece
//!   service curves, FRC link sharing through classes).
//! - [`edf`]: earliest deadline first, job by job (Liu & Layland).
//! - [`rm`]: rate monotonic (Liu & Layland).
//! - [`rialto`]: Rialto (CPU reservations on a precomputed scheduling
//!   graph, time constraints); the policy and its building blocks.
//!
//! Their tests drive each policy inside the real dispatcher, through
//! `hsched_dispatch::testkit` (a dev-dependency: the dispatcher does not
//! depend on this crate).

#![forbid(unsafe_code)]

use hsched_core::{Fallback, Params, PolicyInfo, Registry, Scheduler};

pub mod bvt;
pub mod dbs;
pub mod edf;
pub mod fifo;
pub mod fp;
pub mod frc;
pub mod hfsc;
pub mod inherit;
pub mod join;
pub mod limit;
mod params;
pub mod partition;
pub mod pi;
pub mod preempt;
pub mod ranked;
pub mod rcsp;
pub mod res;
pub mod rialto;
pub mod rm;
pub mod rr;
pub mod rtwake;
pub mod sfq;
pub mod sole;
#[cfg(test)]
mod testkit;
pub mod ts;

static REGISTRY: &[PolicyInfo] = &[
    fifo::INFO,
    rr::INFO,
    fp::INFO,
    join::INFO,
    limit::INFO,
    sfq::INFO,
    dbs::INFO,
    bvt::INFO,
    rialto::INFO,
    res::INFO,
    ts::INFO,
    rtwake::INFO,
    frc::INFO,
    rcsp::INFO,
    hfsc::INFO,
    edf::INFO,
    rm::INFO,
];

/// Every registered policy type, in the order `hsched policies` lists them.
pub fn registry() -> &'static [PolicyInfo] {
    REGISTRY
}

/// The policy type registered under `name`.
pub fn find(name: &str) -> Option<&'static PolicyInfo> {
    registry().iter().find(|p| p.name == name)
}

/// The built-in policies as a registry to hand a dispatcher: `rr` shares
/// the CPUs among threads the hierarchy cannot hold, under an `fp` machine
/// root when there is a hierarchy already.
pub fn builtins() -> Registry {
    let builtin = |name| find(name).expect("a built-in policy");
    Registry::new(
        registry(),
        Fallback {
            shared: builtin("rr"),
            machine: builtin("fp"),
        },
    )
}

/// Builds an instance of `policy` from unchecked parameters: resolves them
/// against the declaration (defaults, types, ranges) first. Errors name the
/// policy and the parameter.
pub fn build(policy: &str, params: &Params) -> Result<Box<dyn Scheduler>, String> {
    builtins()
        .get(policy)?
        .instantiate(params)
        .map_err(|e| format!("policy `{policy}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsched_core::{Duration, Value};

    #[test]
    fn registry_lists_the_policies_in_order() {
        let names: Vec<&str> = registry().iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "fifo", "rr", "fp", "join", "limit", "sfq", "dbs", "bvt", "rialto", "res", "ts",
                "rtwake", "frc", "rcsp", "hfsc", "edf", "rm"
            ]
        );
        for info in registry() {
            assert_eq!(find(info.name).map(|p| p.name), Some(info.name));
            assert!(
                !info.summary.contains('\n'),
                "{}: summary is one line",
                info.name
            );
            assert!(info.max_parents >= 1 && info.max_children >= 1);
        }
        let join = find("join").unwrap();
        assert_eq!(
            (join.max_parents, join.max_children),
            (join::MAX_PARENTS, 1)
        );
        assert_eq!(find("limit").unwrap().max_children, 1);
    }

    #[test]
    fn every_policy_builds_and_names_itself() {
        for info in registry() {
            let params = match info.name {
                "limit" => Params::new()
                    .with("budget", Value::Duration(Duration::from_millis(2)))
                    .with("period", Value::Duration(Duration::from_millis(10))),
                _ => Params::new(),
            };
            let sched = build(info.name, &params).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(sched.policy(), info.name);
            assert!(sched.check_invariants().is_ok());
        }
    }

    #[test]
    fn build_errors_name_the_policy_and_the_parameter() {
        let Err(e) = build("nope", &Params::new()) else {
            panic!("unknown policy built");
        };
        assert!(
            e.contains("unknown policy `nope`") && e.contains("fifo"),
            "{e}"
        );
        let Err(e) = build("rr", &Params::new().with("quantum", Value::Bool(true))) else {
            panic!("a bool quantum was accepted");
        };
        assert!(e.starts_with("policy `rr`") && e.contains("quantum"), "{e}");
    }
}
