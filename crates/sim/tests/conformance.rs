//! The conformance suite (`hsched_sim::conformance`, where the catalogue of
//! checks [C1]-[C7] is documented) run against every registered policy: a
//! policy added to the registry joins automatically.

use hsched_core::Duration;
use hsched_sim::conformance::{as_root, check, conforms_in_the_middle, in_middle};

#[test]
fn every_policy_conforms_as_root() {
    for info in hsched_policies::registry() {
        for cpus in [1, 3] {
            check(
                &as_root(info, cpus, &[]),
                &[],
                &format!("{} as root on {cpus} CPU(s)", info.name),
            );
        }
    }
}

#[test]
fn every_policy_conforms_in_the_middle_with_hierarchy_changes() {
    for info in hsched_policies::registry() {
        for cpus in [1, 2] {
            conforms_in_the_middle(info, cpus, &[]);
        }
    }
}

#[test]
fn every_policy_conforms_with_a_tick() {
    for info in hsched_policies::registry() {
        let mut scn = in_middle(info, 2, &[]);
        scn.machine.tick = Some(Duration::from_millis(1));
        check(&scn, &[], &format!("{} with a 1ms tick", info.name));
    }
}
