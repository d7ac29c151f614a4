//! The two places the rule tests put a scheduler under test: at the top
//! priority of an `fp` root (it receives ALL) and under a round robin (it
//! receives NULL).

#![allow(dead_code)] // each test file uses a different part

use crate::build_scenario::{int, scenario, Build};

/// A root `fp` with the scheduler under test at the top priority (ALL).
pub fn under_all(name: &str, policy: &str, own: &[(&str, hsched_core::Value)]) -> Build {
    scenario(1).sched("root", "fp", &[], &[]).sched(
        name,
        policy,
        own,
        &[("root", &[("prio", int(10))])],
    )
}

/// The scheduler under test under a round robin (NULL).
pub fn under_null(name: &str, policy: &str, own: &[(&str, hsched_core::Value)]) -> Build {
    scenario(1)
        .sched("ts", "rr", &[], &[])
        .sched(name, policy, own, &[("ts", &[])])
}
