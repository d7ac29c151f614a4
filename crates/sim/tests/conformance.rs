//! The conformance suite (`hsched_sim::conformance`, where the catalogue of
//! checks [C1]-[C7] is documented) run against every registered policy: a
//! policy added to the registry joins automatically.

use hsched_core::{Duration, Value};
use hsched_model::LogKind;
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

/// The catalogue again with the class structures the defaults leave out:
/// `hfsc` with a nested class tree and `frc`/`rcsp` with service classes,
/// the threads spread over every class (and the root).
#[test]
fn class_structures_conform() {
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            "hfsc",
            "a:0.6, a/b:0.3, a/b/c:0.1, d:0.3",
            &["", "a", "b", "c", "d"],
        ),
        (
            "frc",
            "GR:0.5:0, MID:0.3:1, FR:0.2:inf",
            &["GR", "MID", "FR"],
        ),
        ("rcsp", "GR:0.5:0, FR:0.5:inf", &["GR", "FR"]),
    ];
    for (policy, classes, names) in cases {
        let info = hsched_policies::registry()
            .iter()
            .find(|p| p.name == policy)
            .unwrap();
        for cpus in [1, 2] {
            let mut scn = as_root(info, cpus, &[]);
            let sched = &mut scn.schedulers[0];
            sched.params.set("classes", Value::Str(classes.into()));
            let parent = sched.name.clone();
            let mut placed = 0;
            for (i, t) in scn
                .threads
                .iter_mut()
                .filter(|t| t.parent == parent)
                .enumerate()
            {
                t.params
                    .set("class", Value::Str(names[i % names.len()].into()));
                // Nominal rates small enough for the guaranteed classes.
                if policy != "hfsc" {
                    t.params.set("rate", Value::Str("0.05".into()));
                }
                placed += 1;
            }
            assert!(
                placed >= names.len(),
                "{policy}: only {placed} threads placed"
            );
            let r = check(
                &scn,
                &[],
                &format!("{policy} with classes on {cpus} CPU(s)"),
            );
            let refused: Vec<_> = r
                .log
                .iter()
                .filter(|e| e.kind == LogKind::Refused)
                .collect();
            assert!(refused.is_empty(), "{policy}: {refused:?}");
        }
    }
}

/// The catalogue again for the multiprocessor modes the defaults leave
/// out: `res`, `dbs`, `rialto` and `hfsc` partitioned (first and worst
/// fit) and `res` global, as the root on 1 and 3 CPUs and in the middle of
/// a changing hierarchy on 2 (the instance the script loads in the same
/// mode).
#[test]
fn multiprocessor_modes_conform() {
    let modes: [(&str, &str, Option<&str>); 8] = [
        ("res", "partitioned", Some("first")),
        ("res", "partitioned", Some("worst")),
        ("res", "global", None),
        ("dbs", "partitioned", Some("first")),
        ("dbs", "partitioned", Some("worst")),
        ("rialto", "partitioned", Some("first")),
        ("rialto", "partitioned", Some("worst")),
        ("hfsc", "partitioned", Some("worst")),
    ];
    for (policy, mode, fit) in modes {
        let info = hsched_policies::registry()
            .iter()
            .find(|p| p.name == policy)
            .unwrap();
        let set = |params: &mut hsched_core::Params| {
            params.set("multiprocessor", Value::Str(mode.into()));
            if let Some(fit) = fit {
                params.set("fit", Value::Str(fit.into()));
            }
        };
        let tag = format!("{policy} {mode} {}", fit.unwrap_or(""));
        for cpus in [1, 3] {
            let mut scn = as_root(info, cpus, &[]);
            set(&mut scn.schedulers[0].params);
            check(&scn, &[], &format!("{tag} as root on {cpus} CPU(s)"));
        }
        let mut scn = in_middle(info, 2, &[]);
        for s in scn.schedulers.iter_mut().filter(|s| s.policy == policy) {
            set(&mut s.params);
        }
        for e in scn.script.iter_mut() {
            if let hsched_model::Action::Load(spec) = &mut e.action {
                set(&mut spec.params);
            }
        }
        check(&scn, &[], &format!("{tag} in the middle on 2 CPU(s)"));
    }
}
