//! From the tree to a [`Scenario`]: the top-level keys and `[machine]`,
//! then the parts read elsewhere (`[[scheduler]]` in `hierarchy`,
//! `[[thread]]` in `threads`, `[[script]]` in `script`, domains, mutexes,
//! interrupts), then the checks that need the whole file (the default
//! scheduler, message targets, semaphores, and the `replay` of the script
//! in time order against the hierarchy it changes).

use crate::domains;
use crate::error::{did_you_mean, Fail};
use crate::hierarchy::{sched_decl, SchedDecl, World};
use crate::interrupts;
use crate::mutexes;
use crate::refs::Refs;
use crate::replay::replay;
use crate::script::{script, ActionDecl};
use crate::sections::TOP_KEYS;
use crate::threads::threads;
use crate::tree::{self, Node};
use crate::typed::{index_path, Table};
use hsched_core::{Duration, Instant, Params, PolicyInfo};
use hsched_model::{Action, Machine, Scenario, ScriptEvent};
use std::collections::BTreeSet;
use std::path::Path;

const MACHINE_KEYS: &[&str] = &["cpus", "context_switch", "tick", "watchdog"];
const MAX_CPUS: i64 = 4096;

pub(crate) fn build(
    text: &str,
    file_name: &str,
    registry: &[PolicyInfo],
) -> Result<Scenario, Fail> {
    let root = tree::parse(text)?;
    let top = root.table("", "a table")?;
    top.only(TOP_KEYS)?;

    let name = match top.get("name") {
        Some(n) => n.name("name", "a scenario name")?.to_string(),
        None => Path::new(file_name)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "scenario".to_string()),
    };
    let description = match top.get("description") {
        Some(n) => n.str("description", "a string")?.to_string(),
        None => String::new(),
    };
    let horizon_node = top.require("horizon", "how long to run, e.g. horizon = \"2s\"")?;
    let horizon = horizon_node.positive_duration("horizon")?;
    if let Some(problem) = hsched_model::horizon_problem(horizon) {
        return Err(Fail::new(&horizon_node.span, "horizon", problem));
    }
    let seed = match top.get("seed") {
        Some(n) => n.count("seed")?,
        None => 0,
    };
    let machine = machine(top.get("machine"))?;
    let cpus = machine.cpus;
    // Loaded by the caller before parsing (`crate::plugins`); checked here too.
    plugin_paths(&top)?;

    let eof = text.len()..text.len();
    let decls = top
        .tables("scheduler", "[[scheduler]] tables")?
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let path = index_path("scheduler", i);
            sched_decl(&n.table(&path, "a [[scheduler]] table")?, registry, cpus)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let list_span = top.get("scheduler").map_or(eof, |n| n.span.clone());
    let (mut world, schedulers) = World::initial(&decls, cpus, &list_span)?;
    let default_scheduler = default_scheduler(&top, &decls, &world)?;

    let threads = threads(&top, &default_scheduler, horizon)?;
    let script = script(&top, registry, cpus, horizon)?;

    // Messages in programs run at times only the run knows, so a named
    // target only has to exist at some point.
    let ever: BTreeSet<&str> = decls
        .iter()
        .map(|d| d.name.as_str())
        .chain(script.iter().filter_map(|s| match &s.action {
            ActionDecl::Load(d) => Some(d.name.as_str()),
            _ => None,
        }))
        .collect();
    for t in &threads {
        for r in &t.refs.targets {
            if !ever.contains(r.name.as_str()) {
                return Err(Fail::new(
                    &r.span,
                    &r.path,
                    format!(
                        "no scheduler `{}`{}",
                        r.name,
                        did_you_mean(&r.name, ever.iter().copied())
                    ),
                )
                .help("a message goes to \"parent\" (the thread's own scheduler) or to a scheduler by name"));
            }
        }
    }

    let mut domain_decls = domains::domains(top.tables("domain", "[[domain]] tables")?)?;
    let mut script_refs = Refs::default();
    for s in &script {
        match &s.action {
            ActionDecl::Kill(r) => script_refs.kills.push(r.clone()),
            ActionDecl::Create(r) => script_refs.creates.push(r.clone()),
            _ => {}
        }
    }
    let thread_refs: Vec<_> = threads
        .iter()
        .map(|t| (t.names.as_slice(), t.domain.as_ref(), &t.refs))
        .collect();
    domains::resolve(&mut domain_decls, &thread_refs, &script_refs)?;
    // A barrier's parties are the threads whose programs name it; a stop's
    // body is run by whichever thread calls it, so it cannot be one.
    if let Some(b) = domain_decls.iter().flat_map(|d| &d.refs.barriers).next() {
        return Err(Fail::new(
            &b.span,
            &b.path,
            format!(
                "barrier `{}` in a stop's body: a barrier's parties are the threads whose own programs use it",
                b.name
            ),
        )
        .help("put the barrier in the calling threads' programs, around the call"));
    }
    let interrupt_specs = interrupts::interrupts(
        top.tables("interrupt", "[[interrupt]] tables")?,
        cpus,
        threads
            .iter()
            .map(|t| &t.refs)
            .chain(domain_decls.iter().map(|d| &d.refs)),
    )?;
    check_semaphores(
        threads
            .iter()
            .map(|t| &t.refs)
            .chain(domain_decls.iter().map(|d| &d.refs)),
        interrupt_specs.iter().filter_map(|s| s.signal.as_deref()),
    )?;

    let mutex_decls = mutexes::mutexes(
        top.tables("mutex", "[[mutex]] tables")?,
        threads
            .iter()
            .map(|t| &t.refs)
            .chain(domain_decls.iter().map(|d| &d.refs)),
    )?;

    let (thread_specs, events) = replay(&mut world, &default_scheduler, &threads, script)?;
    // Declared domains and mutexes exist from the start, before any thread
    // arrives.
    let events = domain_decls
        .into_iter()
        .map(|d| ScriptEvent {
            at: Instant::ZERO,
            action: Action::Domain(d.spec),
        })
        .chain(mutex_decls.into_iter().map(|m| ScriptEvent {
            at: Instant::ZERO,
            action: Action::Mutex(m),
        }))
        .chain(interrupt_specs.into_iter().map(|i| ScriptEvent {
            at: Instant::ZERO,
            action: Action::Interrupt(i),
        }))
        .chain(events)
        .collect();
    Ok(Scenario {
        name,
        description,
        machine,
        horizon,
        seed,
        schedulers,
        default_scheduler,
        threads: thread_specs,
        script: events,
    })
}

/// `plugins = ["path/to/libpolicy.so", ...]`: plugin libraries whose
/// policies the hierarchy may name, as written (relative to the scenario
/// file's directory).
pub(crate) fn plugin_paths(top: &Table<'_>) -> Result<Vec<String>, Fail> {
    let Some(node) = top.get("plugins") else {
        return Ok(Vec::new());
    };
    let what = "a list of plugin library paths, e.g. plugins = [\"target/debug/libedf.so\"]";
    let mut paths = Vec::new();
    for (i, n) in node.array("plugins", what)?.iter().enumerate() {
        let path = index_path("plugins", i);
        let p = n.str(&path, "a path to a plugin library")?;
        if p.trim().is_empty() {
            return Err(Fail::new(
                &n.span,
                &path,
                "an empty path: expected a path to a plugin library",
            ));
        }
        paths.push(p.to_string());
    }
    Ok(paths)
}

fn machine(node: Option<&Node>) -> Result<Machine, Fail> {
    let mut m = Machine {
        cpus: 1,
        context_switch: Duration::ZERO,
        tick: None,
        watchdog: Some(Duration::from_secs(30)),
    };
    let Some(node) = node else { return Ok(m) };
    let t = node.table("machine", "a [machine] table")?;
    t.only(MACHINE_KEYS)?;
    if let Some(n) = t.get("cpus") {
        m.cpus = n.int("machine.cpus", 1, MAX_CPUS)? as u32;
    }
    if let Some(n) = t.get("context_switch") {
        m.context_switch = n.duration("machine.context_switch")?;
    }
    if let Some(n) = t.get("tick") {
        m.tick = Some(n.positive_duration("machine.tick")?);
    }
    if let Some(n) = t.get("watchdog") {
        m.watchdog = match &n.kind {
            tree::Kind::Str(s) if s == "off" => None,
            _ => Some(n.positive_duration("machine.watchdog").map_err(|e| {
                e.help("a duration such as \"30s\", or \"off\" to disable the watchdog")
            })?),
        };
    }
    Ok(m)
}

/// `default = "x"`, else an instance named `default`, else the root. It
/// must take a thread with no attachment parameters: threads without
/// `parent` go there, and so do threads whose scheduler is unloaded.
fn default_scheduler(
    top: &Table<'_>,
    decls: &[SchedDecl<'_>],
    world: &World<'_>,
) -> Result<String, Fail> {
    let (name, span, path) = match top.get("default") {
        Some(n) => {
            let name = n.name("default", "a scheduler name")?;
            if !world.scheds.contains_key(name) {
                return Err(Fail::new(
                    &n.span,
                    "default",
                    format!(
                        "no scheduler `{name}`{}",
                        did_you_mean(name, decls.iter().map(|d| d.name.as_str()))
                    ),
                )
                .help("`default` names one of the [[scheduler]] instances"));
            }
            (name.to_string(), n.span.clone(), "default".to_string())
        }
        None => {
            let name = if world.scheds.contains_key("default") {
                "default".to_string()
            } else {
                world.root.clone()
            };
            let d = decls.iter().find(|d| d.name == name);
            let span = d.map_or(0..0, |d| d.name_span.clone());
            let path = d.map_or_else(String::new, |d| format!("{}.name", d.path));
            (name, span, path)
        }
    };
    let info = world.scheds[&name].info;
    if let Err(e) = Params::new().resolve(&(info.child_params)()) {
        return Err(Fail::new(
            &span,
            &path,
            format!(
                "the default scheduler `{name}` ({}) cannot take a thread without attachment parameters: {e}",
                info.name
            ),
        )
        .help("threads without `parent`, and threads whose scheduler is unloaded, go to the default scheduler with no parameters: name one whose child parameters all have defaults with a top-level `default = \"...\"` (before the first [table])"));
    }
    Ok(name)
}

/// Every semaphore waited on is signalled somewhere (a thread's program, a
/// stop's body, or an interrupt source: `by_interrupts`): a wait nothing
/// can end is almost always a misspelt name.
fn check_semaphores<'a>(
    all: impl Iterator<Item = &'a Refs> + Clone,
    by_interrupts: impl Iterator<Item = &'a str>,
) -> Result<(), Fail> {
    let signalled: BTreeSet<&str> = all
        .clone()
        .flat_map(|r| r.signals.iter().map(String::as_str))
        .chain(by_interrupts)
        .collect();
    for w in all.flat_map(|r| r.waits.iter()) {
        if !signalled.contains(w.name.as_str()) {
            return Err(Fail::new(
                &w.span,
                &w.path,
                format!(
                    "semaphore `{}` is waited on but nothing signals it{}",
                    w.name,
                    did_you_mean(&w.name, signalled.iter().copied())
                ),
            )
            .help("add { signal = \"...\" } to the program that releases the waiter, or `signal` to an [[interrupt]] source"));
        }
    }
    Ok(())
}
