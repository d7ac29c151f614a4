//! From the tree to a [`Scenario`]: the top-level keys, `[machine]`,
//! `[[scheduler]]`, `[[thread]]` and `[[script]]`, then the checks that need
//! the whole file (the default scheduler, message targets, and the script
//! replayed in time order against the hierarchy it changes).

use crate::domains;
use crate::error::{did_you_mean, Fail, Span};
use crate::hierarchy::{self, check_link_names, sched_decl, Child, LinkDecl, SchedDecl, World};
use crate::interrupts;
use crate::mutexes;
use crate::program::{self, NameRef, Refs};
use crate::sections::TOP_KEYS;
use crate::tree::{self, Node};
use crate::typed::{index_path, RawParam, Table};
use hsched_core::{Duration, Instant, Msg, Params, PolicyInfo};
use hsched_model::{Action, Machine, Program, Scenario, ScriptEvent, ThreadSpec};
use std::collections::BTreeSet;
use std::path::Path;

const MACHINE_KEYS: &[&str] = &["cpus", "context_switch", "tick", "watchdog"];
const THREAD_KEYS: &[&str] = &[
    "name", "parent", "at", "arrival", "count", "program", "needs", "domain", "command",
];
const ACTIONS: &[&str] = &[
    "load", "unload", "detach", "attach", "move", "msg", "kill", "create",
];

/// At most this many threads after `count` expansion: a bound that keeps a
/// typo like `count = 10000000000` from exhausting memory.
const MAX_THREADS: u64 = 100_000;
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
    let decls = list(&top, "scheduler", "[[scheduler]] tables")?
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

    let mut domain_decls = domains::domains(list(&top, "domain", "[[domain]] tables")?)?;
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
        list(&top, "interrupt", "[[interrupt]] tables")?,
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
        list(&top, "mutex", "[[mutex]] tables")?,
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

/// An array of tables (`[[key]]`), empty when absent.
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

fn list<'a>(top: &Table<'a>, key: &str, what: &str) -> Result<&'a [Node], Fail> {
    match top.get(key) {
        None => Ok(&[]),
        Some(n) => n
            .array(key, what)
            .map_err(|e| e.help(format!("write each entry under its own [[{key}]] header"))),
    }
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

/// A `[[thread]]` as written: replicas named, program read, its parent not
/// yet checked (that depends on when it arrives).
struct ThreadDecl {
    names: Vec<String>,
    link: LinkDecl,
    arrival: Instant,
    program: Program,
    refs: Refs,
    /// `needs`, checked to be a guarantee.
    needs: Option<String>,
    /// Its home domain (`domain`); none: a private one.
    domain: Option<NameRef>,
}

fn threads(top: &Table<'_>, default: &str, horizon: Duration) -> Result<Vec<ThreadDecl>, Fail> {
    let mut out: Vec<ThreadDecl> = Vec::new();
    let mut total: u64 = 0;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (i, n) in list(top, "thread", "[[thread]] tables")?.iter().enumerate() {
        let path = index_path("thread", i);
        let t = n.table(&path, "a [[thread]] table")?;
        t.only(THREAD_KEYS)?;
        let name_node = t.require("name", "the thread's name, e.g. name = \"video\"")?;
        let name = name_node.name(&t.key_path("name"), "a thread name")?;
        let count = match t.get("count") {
            Some(c) => {
                let k = c.count(&t.key_path("count"))?;
                total = total.saturating_add(k);
                if total > MAX_THREADS {
                    return Err(Fail::new(
                        &c.span,
                        &t.key_path("count"),
                        format!("too many threads: expected at most {MAX_THREADS} in all"),
                    ));
                }
                Some(k)
            }
            None => {
                total += 1;
                None
            }
        };
        let names: Vec<String> = match count {
            None => vec![name.to_string()],
            Some(k) => (0..k).map(|j| format!("{name}.{j}")).collect(),
        };
        for nm in &names {
            if !seen.insert(nm.clone()) {
                return Err(Fail::new(
                    &name_node.span,
                    &t.key_path("name"),
                    format!("thread name `{nm}` is used twice: expected unique names (`count = N` names copies `{name}.0`, `{name}.1`, ...)"),
                ));
            }
        }
        let arrival = match t.get("arrival") {
            Some(a) => {
                let at = a.instant(&t.key_path("arrival"))?;
                if at.as_nanos() >= horizon.as_nanos() {
                    return Err(Fail::new(
                        &a.span,
                        &t.key_path("arrival"),
                        format!("arrival {} is not before the horizon ({horizon}): the thread would never run", Duration(at.as_nanos())),
                    ));
                }
                at
            }
            None => Instant::ZERO,
        };
        let (parent, parent_span, parent_path) = match t.get("parent") {
            Some(p) => (
                p.name(&t.key_path("parent"), "a scheduler name")?
                    .to_string(),
                p.span.clone(),
                t.key_path("parent"),
            ),
            None => (
                default.to_string(),
                name_node.span.clone(),
                t.key_path("name"),
            ),
        };
        let (at, at_span, at_path) = match t.get("at") {
            Some(a) => {
                let ap = t.key_path("at");
                (
                    a.table(
                        &ap,
                        "a table of attachment parameters, e.g. at = { prio = 3 }",
                    )?
                    .params()?,
                    a.span.clone(),
                    ap,
                )
            }
            None => (Vec::new(), parent_span.clone(), parent_path.clone()),
        };
        let needs = match t.get("needs") {
            Some(nd) => {
                let path = t.key_path("needs");
                let text = nd.str(
                    &path,
                    "a guarantee as the HLS paper writes it, e.g. needs = \"RESBS 10, 33\"",
                )?;
                hsched_analysis::guarantee::Guarantee::parse(text).map_err(|e| {
                    Fail::new(&nd.span, &path, format!("`needs` = {text:?}: {e}")).help(
                        "a guarantee: ALL, NULL, RESBH/RESBS/RESCH/RESCS amount, period (ms), RESU rate, PSBE share, delta, or PS share; e.g. needs = \"RESBS 10, 33\"",
                    )
                })?;
                Some(text.to_string())
            }
            None => None,
        };
        let domain = match t.get("domain") {
            Some(d) => Some(name_ref(d, t.key_path("domain"), "a domain name")?),
            None => None,
        };
        let mut refs = Refs::default();
        let prog_node = t.require(
            "program",
            "what the thread does, e.g. program = [ { run = \"5ms\" } ]",
        )?;
        let ops = program::ops(prog_node, &t.key_path("program"), &mut refs)?;
        for u in &refs.unlocks {
            if !refs.locks.contains(&u.name) {
                return Err(Fail::new(
                    &u.span,
                    &u.path,
                    format!(
                        "thread `{name}` unlocks mutex `{}` but never locks it{}",
                        u.name,
                        did_you_mean(&u.name, refs.locks.iter().map(|s| s.as_str()))
                    ),
                )
                .help(
                    "a thread can only unlock a mutex it holds: add { lock = \"...\" } before it",
                ));
            }
        }
        out.push(ThreadDecl {
            names,
            link: LinkDecl {
                parent,
                parent_span,
                parent_path,
                vps: None,
                at,
                at_span,
                at_path,
            },
            arrival,
            program: Program {
                ops,
                command: command(&t)?,
            },
            refs,
            needs,
            domain,
        });
    }
    Ok(out)
}

struct ScriptDecl<'r> {
    at: Instant,
    action: ActionDecl<'r>,
}

enum ActionDecl<'r> {
    Load(SchedDecl<'r>),
    Unload(NameRef),
    Detach(NameRef),
    Attach {
        sched: NameRef,
        links: Vec<LinkDecl>,
        span: Span,
        path: String,
    },
    Move {
        thread: NameRef,
        to: NameRef,
        at: Vec<RawParam>,
        at_span: Span,
        at_path: String,
    },
    Msg {
        to: NameRef,
        msg: Msg,
    },
    /// Kill a domain (checked in `domains::resolve`).
    Kill(NameRef),
    /// Start a declared domain (checked in `domains::resolve`).
    Create(NameRef),
}

fn name_ref(n: &Node, path: String, what: &str) -> Result<NameRef, Fail> {
    Ok(NameRef {
        name: n.name(&path, what)?.to_string(),
        span: n.span.clone(),
        path,
    })
}

fn script<'r>(
    top: &Table<'_>,
    registry: &'r [PolicyInfo],
    cpus: u32,
    horizon: Duration,
) -> Result<Vec<ScriptDecl<'r>>, Fail> {
    let mut out = Vec::new();
    for (i, n) in list(top, "script", "[[script]] tables")?.iter().enumerate() {
        let path = index_path("script", i);
        let t = n.table(&path, "a [[script]] table")?;
        let mut allowed = vec!["at"];
        allowed.extend(ACTIONS);
        t.only(&allowed)?;
        let at_node = t.require("at", "when it happens, e.g. at = \"1s\"")?;
        let at = at_node.instant(&t.key_path("at"))?;
        if at.as_nanos() >= horizon.as_nanos() {
            return Err(Fail::new(
                &at_node.span,
                &t.key_path("at"),
                format!(
                    "{} is not before the horizon ({horizon}): expected a time the run reaches",
                    Duration(at.as_nanos())
                ),
            ));
        }
        let actions: Vec<&tree::Entry> = t.entries.iter().filter(|e| e.key != "at").collect();
        let e = match actions.as_slice() {
            [e] => *e,
            [] => {
                return Err(Fail::new(t.span, &path, "missing the action").help(format!(
                    "a [[script]] entry has `at` and one of: {}",
                    ACTIONS.join(", ")
                )))
            }
            [a, b, ..] => {
                return Err(Fail::new(
                    &b.key_span,
                    &t.key_path(&b.key),
                    format!(
                        "a [[script]] entry has one action, found `{}` and `{}`: write two entries",
                        a.key, b.key
                    ),
                ))
            }
        };
        let p = t.key_path(&e.key);
        let v = &e.value;
        let action = match e.key.as_str() {
            "load" => {
                let lt = v.table(
                    &p,
                    "a scheduler table: { name = \"x\", policy = \"rr\", parent = \"root\" }",
                )?;
                ActionDecl::Load(sched_decl(&lt, registry, cpus)?)
            }
            "unload" => ActionDecl::Unload(name_ref(v, p, "the name of a scheduler to unload")?),
            "detach" => ActionDecl::Detach(name_ref(v, p, "the name of a scheduler to detach")?),
            "attach" => {
                let at = v.table(
                    &p,
                    "a table: { scheduler = \"x\", parent = \"root\", at = { ... } }",
                )?;
                at.only(&["scheduler", "parent", "parents", "at", "vps"])?;
                let sched = name_ref(
                    at.require("scheduler", "the scheduler to attach")?,
                    at.key_path("scheduler"),
                    "a scheduler name",
                )?;
                let links = hierarchy::links(&at, cpus)?;
                if links.is_empty() {
                    return Err(Fail::new(
                        &v.span,
                        &p,
                        "missing key `parent` (or `parents`): where to attach it",
                    ));
                }
                ActionDecl::Attach {
                    sched,
                    links,
                    span: v.span.clone(),
                    path: p,
                }
            }
            "move" => {
                let mt = v.table(&p, "a table: { thread = \"t\", to = \"x\", at = { ... } }")?;
                mt.only(&["thread", "to", "at"])?;
                let thread = name_ref(
                    mt.require("thread", "the thread to move")?,
                    mt.key_path("thread"),
                    "a thread name",
                )?;
                let to_node = mt.require("to", "the scheduler to move it to")?;
                let to = name_ref(to_node, mt.key_path("to"), "a scheduler name")?;
                let (at, at_span, at_path) = match mt.get("at") {
                    Some(a) => {
                        let ap = mt.key_path("at");
                        (
                            a.table(&ap, "a table of attachment parameters")?.params()?,
                            a.span.clone(),
                            ap,
                        )
                    }
                    None => (Vec::new(), to.span.clone(), to.path.clone()),
                };
                ActionDecl::Move {
                    thread,
                    to,
                    at,
                    at_span,
                    at_path,
                }
            }
            "msg" => {
                let mt = v.table(
                    &p,
                    "a table: { to = \"x\", name = \"...\", args = { ... } }",
                )?;
                mt.only(&["to", "name", "args"])?;
                let to = name_ref(
                    mt.require("to", "the scheduler it goes to")?,
                    mt.key_path("to"),
                    "a scheduler name",
                )?;
                ActionDecl::Msg {
                    to,
                    msg: program::message(&mt)?,
                }
            }
            "kill" => ActionDecl::Kill(name_ref(v, p, "the name of a domain to kill")?),
            "create" => {
                ActionDecl::Create(name_ref(v, p, "the name of a declared domain to start")?)
            }
            _ => unreachable!("keys were checked against ACTIONS"),
        };
        out.push(ScriptDecl { at, action });
    }
    Ok(out)
}

/// Replays thread arrivals and the script in time order against the
/// hierarchy, so each reference is checked against what exists then. At one
/// instant, script entries go first, in file order; a thread may only join a
/// scheduler loaded strictly before it arrives, and only a thread that
/// arrived strictly before can be moved, so the outcome never depends on how
/// a platform orders simultaneous events.
fn replay<'r>(
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

/// A thread's `command`: the argv `hsched live` runs for it, e.g.
/// `command = ["stress-ng", "--cpu", "1"]`.
fn command(t: &Table<'_>) -> Result<Option<Vec<String>>, Fail> {
    let Some(node) = t.get("command") else {
        return Ok(None);
    };
    let path = t.key_path("command");
    let what = "the program and its arguments, e.g. command = [\"stress-ng\", \"--cpu\", \"1\"]";
    let items = node.array(&path, what)?;
    if items.is_empty() {
        return Err(Fail::new(
            &node.span,
            &path,
            format!("an empty command: expected {what}"),
        ));
    }
    let argv = items
        .iter()
        .enumerate()
        .map(|(i, n)| n.str(&index_path(&path, i), "a string").map(str::to_string))
        .collect::<Result<Vec<_>, _>>()?;
    if argv[0].is_empty() {
        return Err(Fail::new(&node.span, &path, "the program name is empty"));
    }
    Ok(Some(argv))
}
