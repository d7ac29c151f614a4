//! The rules a change of the hierarchy must keep, wherever it comes from:
//! the parser checks a scenario's script with them (pointing at the key
//! that breaks one), and a live run checks a control request with them
//! (`hsched ctl load`, `unload`, ...) before anything changes. One text per
//! rule, so a request is refused as its script step would be.

use hsched_model::Action;

/// A scheduler's name: not empty, not the reserved `parent`.
pub fn sched_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("expected a scheduler name, found an empty string".into());
    }
    if name == "parent" {
        return Err("`parent` is reserved (a message `to = \"parent\"` means the thread's own scheduler): expected another name".into());
    }
    Ok(())
}

/// How many VPs a scheduler registers with one parent: at least one, at
/// most the machine's CPUs.
pub fn vps(n: i64, cpus: u32) -> Result<(), String> {
    if (1..=i64::from(cpus)).contains(&n) {
        Ok(())
    } else {
        Err(format!(
            "{n} is out of range: expected an integer in 1..={cpus} (how many CPUs it may use at once through this parent; the machine has {cpus})"
        ))
    }
}

/// Whether scheduler `name` may be unloaded, detached or attached (`verb`):
/// not the root.
pub fn not_root(name: &str, root: &str, verb: &str) -> Result<(), String> {
    if name == root {
        return Err(format!("`{name}` is the root and cannot be {verb}"));
    }
    Ok(())
}

/// Whether scheduler `name` may be unloaded: neither the root nor the
/// default scheduler (where threads go when theirs is unloaded).
pub fn unloadable(name: &str, root: &str, default: &str) -> Result<(), String> {
    not_root(name, root, "unloaded")?;
    if name == default {
        return Err(format!(
            "`{name}` is the default scheduler and cannot be unloaded: threads return to it"
        ));
    }
    Ok(())
}

/// What an action is checked against: the hierarchy as it is when it
/// would be carried out.
pub struct Hierarchy<'a> {
    pub root: &'a str,
    pub default: &'a str,
    pub cpus: u32,
    /// Whether a scheduler of that name exists now.
    pub exists: &'a dyn Fn(&str) -> bool,
}

/// Checks `action` against the rules above and the hierarchy `h`; why
/// not, if it breaks one. (What the dispatcher itself refuses, such as a
/// policy's own parameters, it refuses when carrying it out.)
pub fn check_action(action: &Action, h: &Hierarchy<'_>) -> Result<(), String> {
    match action {
        Action::Load(spec) => {
            sched_name(&spec.name)?;
            if (h.exists)(&spec.name) {
                return Err(format!(
                    "a scheduler `{}` already exists: expected a new name",
                    spec.name
                ));
            }
            if spec.parents.is_empty() {
                return Err(format!(
                    "a loaded scheduler needs a `parent`: the hierarchy already has its root `{}`",
                    h.root
                ));
            }
            spec.parents
                .iter()
                .try_for_each(|l| vps(i64::from(l.vps), h.cpus).map_err(|e| format!("vps: {e}")))
        }
        Action::Unload(name) => unloadable(name, h.root, h.default),
        Action::Detach(name) => not_root(name, h.root, "detached"),
        Action::Attach { scheduler, parents } => {
            not_root(scheduler, h.root, "attached")?;
            parents
                .iter()
                .try_for_each(|l| vps(i64::from(l.vps), h.cpus).map_err(|e| format!("vps: {e}")))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsched_core::Params;
    use hsched_model::{ParentLink, SchedulerSpec};

    fn load(name: &str, vps: u32) -> Action {
        Action::Load(SchedulerSpec {
            name: name.into(),
            policy: "rr".into(),
            params: Params::new(),
            parents: vec![ParentLink {
                parent: "root".into(),
                vps,
                params: Params::new(),
            }],
        })
    }

    #[test]
    fn what_the_parser_refuses_a_request_is_refused_for() {
        let exists = |n: &str| ["root", "ts"].contains(&n);
        let h = Hierarchy {
            root: "root",
            default: "ts",
            cpus: 1,
            exists: &exists,
        };
        let refused = |a: Action| check_action(&a, &h).unwrap_err();
        assert!(refused(Action::Unload("root".into())).contains("is the root"));
        assert!(refused(Action::Unload("ts".into())).contains("default scheduler"));
        assert!(refused(load("fast", 100_000)).contains("1..=1"));
        assert!(refused(load("", 1)).contains("empty"));
        assert!(refused(load("ts", 1)).contains("already exists"));
        assert!(refused(Action::Detach("root".into())).contains("cannot be detached"));
        assert_eq!(check_action(&load("fast", 1), &h), Ok(()));
        assert_eq!(check_action(&Action::Unload("fast".into()), &h), Ok(()));
    }
}
