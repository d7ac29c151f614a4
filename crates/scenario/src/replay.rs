//! The replay that checks a scenario over time: thread arrivals and script
//! actions in time order against the hierarchy they change, each name
//! checked against what exists at that instant, giving the threads' specs
//! and the script's events.

use crate::error::{did_you_mean, Fail};
use crate::hierarchy::{check_link_names, Child, LinkDecl, World};
use crate::refs::NameRef;
use crate::script::{ActionDecl, ScriptDecl};
use crate::threads::ThreadDecl;
use hsched_core::Instant;
use hsched_model::{Action, ScriptEvent, ThreadSpec};

/// Replays thread arrivals and the script in time order against the
/// hierarchy, so each reference is checked against what exists then. At one
/// instant, script entries go first, in file order; a thread may only join a
/// scheduler loaded strictly before it arrives, and only a thread that
/// arrived strictly before can be moved, so the outcome never depends on how
/// a platform orders simultaneous events.
pub(crate) fn replay<'r>(
    world: &mut World<'r>,
    default: &str,
    threads: &[ThreadDecl],
    script: Vec<ScriptDecl<'r>>,
) -> Result<(Vec<ThreadSpec>, Vec<ScriptEvent>), Fail> {
    enum Ev<'a, 'r> {
        Script(ScriptDecl<'r>),
        Arrive(usize, &'a ThreadDecl),
    }
    let mut evs: Vec<(Instant, u8, Ev<'_, '_>)> = script
        .into_iter()
        .map(|s| (s.at, 0, Ev::Script(s)))
        .chain(
            threads
                .iter()
                .enumerate()
                .map(|(i, t)| (t.arrival, 1, Ev::Arrive(i, t))),
        )
        .collect();
    // Stable: file order within a kind at one instant.
    evs.sort_by_key(|(t, k, _)| (*t, *k));

    let mut specs: Vec<(usize, ThreadSpec)> = Vec::new();
    let mut events = Vec::new();
    for (t, _, ev) in evs {
        match ev {
            Ev::Arrive(order, td) => {
                let l = &td.link;
                let inst = world.present(&l.parent, &l.parent_span, &l.parent_path, t)?;
                if inst.loaded_at == Some(t) {
                    return Err(Fail::new(
                        &l.parent_span,
                        &l.parent_path,
                        format!("`{}` is loaded at {t}, the instant this thread arrives: expected it to arrive later", l.parent),
                    ));
                }
                for name in &td.names {
                    let link = world.attach(Child::Thread(name.clone()), l)?;
                    world.threads.insert(name.clone(), l.parent.clone());
                    specs.push((
                        order,
                        ThreadSpec {
                            name: name.clone(),
                            parent: l.parent.clone(),
                            params: link.params,
                            arrival: td.arrival,
                            program: td.program.clone(),
                            needs: td.needs.clone(),
                        },
                    ));
                }
            }
            Ev::Script(s) => {
                let action = apply(world, default, threads, t, s.action)?;
                events.push(ScriptEvent { at: t, action });
            }
        }
    }
    // Threads in file order, whatever their arrival.
    specs.sort_by_key(|(i, _)| *i);
    Ok((specs.into_iter().map(|(_, s)| s).collect(), events))
}

fn apply<'r>(
    world: &mut World<'r>,
    default: &str,
    threads: &[ThreadDecl],
    t: Instant,
    action: ActionDecl<'r>,
) -> Result<Action, Fail> {
    let names: Vec<String> = world.scheds.keys().cloned().collect();
    Ok(match action {
        ActionDecl::Load(d) => {
            if world.scheds.contains_key(&d.name) {
                return Err(Fail::new(
                    &d.name_span,
                    &format!("{}.name", d.path),
                    format!(
                        "a scheduler `{}` already exists at {t}: expected a new name",
                        d.name
                    ),
                ));
            }
            check_link_names(
                &d,
                |p| world.scheds.contains_key(p),
                names.iter().map(|s| s.as_str()),
            )?;
            if d.links.is_empty() {
                return Err(Fail::new(
                    &d.name_span,
                    &format!("{}.name", d.path),
                    format!("a loaded scheduler needs a `parent`: the hierarchy already has its root `{}`", world.root),
                ));
            }
            world.gone.remove(&d.name);
            Action::Load(world.add_sched(&d, Some(t))?)
        }
        ActionDecl::Unload(r) => {
            world.present(&r.name, &r.span, &r.path, t)?;
            crate::rules::unloadable(&r.name, &world.root, default)
                .map_err(|e| Fail::new(&r.span, &r.path, e))?;
            let name = r.name.clone();
            let inst = world.scheds.remove(&name).expect("checked present");
            world.gone.insert(name.clone(), t);
            for (p, _) in &inst.parents {
                world.forget_child(p, &Child::Sched(name.clone()));
            }
            for c in &inst.children {
                match c {
                    Child::Sched(s) => {
                        // One left with no parent goes under the default
                        // scheduler (the root when the default is below
                        // it), as the dispatcher sends it.
                        let Some(ci) = world.scheds.get_mut(s) else {
                            continue;
                        };
                        let vps: u32 = ci
                            .parents
                            .iter()
                            .filter(|(p, _)| *p == name)
                            .map(|(_, v)| v)
                            .sum();
                        ci.parents.retain(|(p, _)| *p != name);
                        if !ci.parents.is_empty() {
                            continue;
                        }
                        let to = match world.is_under(default, s) {
                            false => default.to_string(),
                            true => world.root.clone(),
                        };
                        if let Some(ci) = world.scheds.get_mut(s) {
                            ci.parents.push((to.clone(), vps));
                        }
                        if let Some(p) = world.scheds.get_mut(&to) {
                            p.children.insert(c.clone());
                        }
                    }
                    Child::Thread(th) => {
                        world.threads.insert(th.clone(), default.to_string());
                        if let Some(d) = world.scheds.get_mut(default) {
                            d.children.insert(c.clone());
                        }
                    }
                }
            }
            Action::Unload(name)
        }
        ActionDecl::Detach(r) => {
            let name = removable(world, &r, t, "detached")?;
            let parents = std::mem::take(
                &mut world
                    .scheds
                    .get_mut(&name)
                    .expect("checked present")
                    .parents,
            );
            if parents.is_empty() {
                return Err(Fail::new(
                    &r.span,
                    &r.path,
                    format!("`{name}` is already detached at {t}"),
                ));
            }
            for (p, _) in &parents {
                world.forget_child(p, &Child::Sched(name.clone()));
            }
            Action::Detach(name)
        }
        ActionDecl::Attach {
            sched,
            links,
            span,
            path: apath,
        } => {
            let name = removable(world, &sched, t, "attached")?;
            let inst = &world.scheds[&name];
            if !inst.parents.is_empty() {
                let ps: Vec<&str> = inst.parents.iter().map(|(p, _)| p.as_str()).collect();
                return Err(Fail::new(
                    &sched.span,
                    &sched.path,
                    format!(
                        "`{name}` is attached (under {}) at {t}: detach it first",
                        ps.join(", ")
                    ),
                ));
            }
            let info = inst.info;
            if links.len() > info.max_parents as usize {
                return Err(Fail::new(
                    &span,
                    &apath,
                    format!(
                        "policy `{}` takes at most {} parent(s), found {}",
                        info.name,
                        info.max_parents,
                        links.len()
                    ),
                ));
            }
            let decl_names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            for (i, l) in links.iter().enumerate() {
                if !world.scheds.contains_key(&l.parent) {
                    world.present(&l.parent, &l.parent_span, &l.parent_path, t)?;
                }
                if links[..i].iter().any(|o| o.parent == l.parent) {
                    return Err(Fail::new(
                        &l.parent_span,
                        &l.parent_path,
                        format!("parent `{}` is named twice", l.parent),
                    ));
                }
                if world.is_under(&l.parent, &name) {
                    return Err(Fail::new(
                        &l.parent_span,
                        &l.parent_path,
                        format!("attaching `{name}` under `{}` would make a cycle: `{}` is `{name}` or below it", l.parent, l.parent),
                    )
                    .help(format!("schedulers: {}", decl_names.join(", "))));
                }
            }
            let mut parents = Vec::new();
            for l in &links {
                parents.push(world.attach(Child::Sched(name.clone()), l)?);
            }
            Action::Attach {
                scheduler: name,
                parents,
            }
        }
        ActionDecl::Move {
            thread,
            to,
            at,
            at_span,
            at_path,
        } => {
            let Some(old) = world.threads.get(&thread.name).cloned() else {
                let decl = threads.iter().find(|d| d.names.contains(&thread.name));
                let msg = match decl {
                    Some(d) => format!(
                        "thread `{}` arrives at {}, not before this move at {t}",
                        thread.name, d.arrival
                    ),
                    None => format!(
                        "no thread `{}`{}",
                        thread.name,
                        did_you_mean(
                            &thread.name,
                            threads
                                .iter()
                                .flat_map(|d| d.names.iter().map(|s| s.as_str()))
                        )
                    ),
                };
                let help = threads
                    .iter()
                    .find(|d| {
                        d.names.len() > 1
                            && d.names[0].strip_suffix(".0") == Some(thread.name.as_str())
                    })
                    .map(|d| {
                        format!(
                            "`{}` has count = {}: its threads are {} .. {}",
                            thread.name,
                            d.names.len(),
                            d.names[0],
                            d.names[d.names.len() - 1]
                        )
                    });
                return Err(Fail::new(&thread.span, &thread.path, msg).maybe_help(help));
            };
            world.present(&to.name, &to.span, &to.path, t)?;
            world.forget_child(&old, &Child::Thread(thread.name.clone()));
            let link = LinkDecl {
                parent: to.name.clone(),
                parent_span: to.span.clone(),
                parent_path: to.path.clone(),
                vps: None,
                at,
                at_span,
                at_path,
            };
            let pl = world.attach(Child::Thread(thread.name.clone()), &link)?;
            world.threads.insert(thread.name.clone(), to.name.clone());
            Action::Move {
                thread: thread.name,
                to: to.name,
                params: pl.params,
            }
        }
        ActionDecl::Msg { to, msg } => {
            world.present(&to.name, &to.span, &to.path, t)?;
            Action::Msg { to: to.name, msg }
        }
        ActionDecl::Kill(r) => Action::Kill(r.name),
        ActionDecl::Create(r) => Action::Create(r.name),
    })
}

/// A scheduler that exists now and is not the root (which can be neither
/// unloaded, detached nor attached).
fn removable(world: &World<'_>, r: &NameRef, t: Instant, verb: &str) -> Result<String, Fail> {
    world.present(&r.name, &r.span, &r.path, t)?;
    crate::rules::not_root(&r.name, &world.root, verb)
        .map_err(|e| Fail::new(&r.span, &r.path, e))?;
    Ok(r.name.clone())
}
