//! Building a scenario's hierarchy in a dispatcher: the same for every
//! platform (the simulator, the live agent).

use crate::{AttachLink, Dispatcher, Platform};
use hsched_core::{Instant, SchedId};
use hsched_model::guard::{Change, Ruling};
use hsched_model::{Action, LogKind, Scenario, SchedulerSpec};

/// Creates the scenario's scheduler instances and attaches them, parents first.
pub fn build_hierarchy(
    disp: &mut Dispatcher,
    platform: &mut dyn Platform,
    scn: &Scenario,
) -> Result<(), String> {
    let mut created = vec![false; scn.schedulers.len()];
    let mut order = Vec::new();
    // Topological order: an instance after all of its parents.
    while order.len() < scn.schedulers.len() {
        let before = order.len();
        for (i, s) in scn.schedulers.iter().enumerate() {
            if created[i] {
                continue;
            }
            let ready = s.parents.iter().all(|l| {
                scn.schedulers
                    .iter()
                    .position(|p| p.name == l.parent)
                    .is_some_and(|p| created[p])
            });
            if ready {
                created[i] = true;
                order.push(i);
            }
        }
        if order.len() == before {
            return Err("the hierarchy has a cycle or names a parent that does not exist".into());
        }
    }
    for i in order {
        let spec = &scn.schedulers[i];
        if spec.parents.is_empty() {
            disp.create_root(&spec.name, &spec.policy, &spec.params)?;
        } else {
            load(disp, platform, Instant::ZERO, spec)?;
        }
    }
    let default = disp.sched_by_name(&scn.default_scheduler).ok_or_else(|| {
        format!(
            "default scheduler `{}` does not exist",
            scn.default_scheduler
        )
    })?;
    disp.set_default(default);
    Ok(())
}

/// Resolves a scheduler spec's parent links by name.
pub fn links(
    disp: &Dispatcher,
    spec_links: &[hsched_model::ParentLink],
) -> Result<Vec<AttachLink>, String> {
    spec_links
        .iter()
        .map(|l| {
            Ok(AttachLink {
                parent: disp
                    .sched_by_name(&l.parent)
                    .ok_or_else(|| format!("no scheduler named `{}`", l.parent))?,
                vps: l.vps,
                params: l.params.clone(),
            })
        })
        .collect()
}

/// Creates an instance from its spec and attaches it (destroyed again if
/// the attachment is refused).
pub fn load(
    disp: &mut Dispatcher,
    platform: &mut dyn Platform,
    now: Instant,
    spec: &SchedulerSpec,
) -> Result<SchedId, String> {
    let vps = spec.parents.iter().map(|l| l.vps).sum();
    let links = links(disp, &spec.parents)?;
    let s = disp.create(&spec.name, &spec.policy, &spec.params, vps)?;
    if let Err(e) = disp.attach(platform, now, s, &links) {
        let _ = disp.destroy(platform, now, s);
        return Err(e);
    }
    Ok(s)
}

/// Carries out a change of the hierarchy, from a scenario's script or an
/// operator (load, unload, detach, attach, move a thread, message a
/// scheduler) at `now`: what was done, or why it was refused (nothing
/// changed). A change of the hierarchy's shape is put to the dispatcher's
/// guard first ([`Dispatcher::set_guard`]): one it refuses is refused with
/// its reason; one it lets through with a warning is done, the warning
/// logged after the step. `None` for an action that is not the hierarchy's (protection
/// domains, which belong to the platform).
pub fn apply(
    disp: &mut Dispatcher,
    platform: &mut dyn Platform,
    now: Instant,
    action: &Action,
) -> Option<Result<String, String>> {
    let guarded = matches!(
        action,
        Action::Load(_)
            | Action::Unload(_)
            | Action::Detach(_)
            | Action::Attach { .. }
            | Action::Move { .. }
    );
    let change = Change::Hierarchy(action);
    let mut warning = None;
    if guarded {
        match disp.review(now, &change) {
            Ruling::Accept => {}
            Ruling::Warn(why) => warning = Some(why),
            Ruling::Refuse(why) => return Some(Err(why)),
        }
    }
    let result = apply_unguarded(disp, platform, now, action)?;
    if guarded && result.is_ok() {
        disp.applied(now, &change);
        if let Some(why) = warning {
            disp.record(LogKind::Uncomposed, why);
        }
    }
    Some(result)
}

/// [`apply`] without asking the guard.
fn apply_unguarded(
    disp: &mut Dispatcher,
    platform: &mut dyn Platform,
    now: Instant,
    action: &Action,
) -> Option<Result<String, String>> {
    let by_name = |disp: &Dispatcher, verb: &str, name: &str| {
        disp.sched_by_name(name)
            .ok_or_else(|| format!("{verb}: no scheduler `{name}`"))
    };
    Some(match action {
        Action::Load(spec) => load(disp, platform, now, spec)
            .map(|_| format!("loaded `{}` ({})", spec.name, spec.policy)),
        Action::Unload(name) => by_name(disp, "unload", name).and_then(|s| {
            disp.destroy(platform, now, s)
                .map(|_| format!("unloaded `{name}`"))
        }),
        Action::Detach(name) => by_name(disp, "detach", name).and_then(|s| {
            disp.detach(platform, now, s)
                .map(|_| format!("detached `{name}`"))
        }),
        Action::Attach { scheduler, parents } => by_name(disp, "attach", scheduler).and_then(|s| {
            let l = links(disp, parents).map_err(|e| format!("attach `{scheduler}`: {e}"))?;
            disp.attach(platform, now, s, &l)
                .map(|_| format!("attached `{scheduler}`"))
        }),
        Action::Move { thread, to, params } => match disp.thread_by_name(thread) {
            None => Err(format!("move: thread `{thread}` has not arrived")),
            Some(t) => by_name(disp, "move", to).and_then(|s| {
                disp.move_thread(platform, now, t, s, params)
                    .map(|_| format!("moved `{thread}` to `{to}`"))
            }),
        },
        Action::Msg { to, msg } => {
            by_name(disp, "msg", to).and_then(|s| match disp.message(platform, now, None, s, msg) {
                hsched_core::Reply::Ok(p) => Ok(format!("`{to}` accepted {msg}: {p}")),
                hsched_core::Reply::Err(e) => Err(format!("`{to}` refused {msg}: {e}")),
            })
        }
        Action::Domain(_)
        | Action::Mutex(_)
        | Action::Kill(_)
        | Action::Create(_)
        | Action::Interrupt(_) => return None,
    })
}
