//! The hierarchy: scheduler declarations (`[[scheduler]]` and a script's
//! `load`), their parameters checked against the policy registry, and the
//! hierarchy's state as the script changes it, so that every reference is
//! checked against what exists at that moment.

use crate::error::{did_you_mean, Fail, Span};
use crate::tree::Kind;
use crate::typed::{index_path, RawParam, Table};
use hsched_core::{Instant, ParamSpec, Params, PolicyInfo};
use hsched_model::{ParentLink, SchedulerSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The keys of a scheduler table that are not policy parameters.
pub(crate) const SCHED_KEYS: &[&str] =
    &["name", "policy", "parent", "parents", "at", "vps", "params"];

/// A scheduler as written: its own parameters are resolved, its links still
/// name their parents (checked once the parents are known).
pub(crate) struct SchedDecl<'r> {
    pub name: String,
    pub name_span: Span,
    pub info: &'r PolicyInfo,
    pub params: Params,
    pub links: Vec<LinkDecl>,
    /// Where the parents are written (or the table, for a root).
    pub links_span: Span,
    pub links_path: String,
    pub path: String,
}

/// One `parent` (with its `at` and `vps`) as written.
pub(crate) struct LinkDecl {
    pub parent: String,
    pub parent_span: Span,
    pub parent_path: String,
    pub vps: Option<u32>,
    pub at: Vec<RawParam>,
    /// Where a missing attachment parameter is reported.
    pub at_span: Span,
    pub at_path: String,
}

/// Reads a scheduler table (a `[[scheduler]]` entry or a script's `load`).
pub(crate) fn sched_decl<'r>(
    t: &Table<'_>,
    registry: &'r [PolicyInfo],
    cpus: u32,
) -> Result<SchedDecl<'r>, Fail> {
    let name_node = t.require("name", "the instance's name, e.g. name = \"media\"")?;
    let name = name_node.name(&t.key_path("name"), "a scheduler name")?;
    crate::rules::sched_name(name)
        .map_err(|e| Fail::new(&name_node.span, &t.key_path("name"), e))?;
    let info = policy(t, registry)?;

    // Policy parameters: plain keys, or a `params` table for a parameter
    // whose name is one of SCHED_KEYS.
    let mut raw: Vec<RawParam> = Vec::new();
    for e in t.entries {
        if !SCHED_KEYS.contains(&e.key.as_str()) {
            let path = t.key_path(&e.key);
            raw.push(RawParam {
                value: e.value.param_value(&path)?,
                key: e.key.clone(),
                key_span: e.key_span.clone(),
                value_span: e.value.span.clone(),
                path,
            });
        }
    }
    if let Some(p) = t.get("params") {
        let pt = p.table(&t.key_path("params"), "a table of policy parameters")?;
        for rp in pt.params()? {
            if raw.iter().any(|r| r.key == rp.key) {
                return Err(Fail::new(
                    &rp.key_span,
                    &rp.path,
                    format!(
                        "parameter `{}` is given twice (as a key and in `params`)",
                        rp.key
                    ),
                ));
            }
            raw.push(rp);
        }
    }
    let whose = format!("policy `{}`", info.name);
    let params = resolve(&raw, &(info.params)(), t.span, &t.path, &whose, true)?;
    // Building an instance (pure: policies do no I/O) lets the policy check
    // what one parameter alone cannot, such as budget <= period. A
    // scheduler from the literature cannot be built: the analysis alone
    // knows it (`hsched sim` refuses it).
    let analysis_only = hsched_analysis::rules::literature::find(info.name)
        .is_some_and(|lit| std::ptr::eq(lit, info));
    let built = if analysis_only {
        Ok(())
    } else {
        (info.build)(&params).map(|_| ())
    };
    if let Err(e) = built {
        return Err(Fail::new(
            t.span,
            &t.path,
            format!(
                "scheduler `{name}`: policy `{}` refuses these parameters: {e}",
                info.name
            ),
        )
        .help(describe(&whose, &(info.params)())));
    }

    let links = links(t, cpus)?;
    let (links_span, links_path) = match (t.entry("parents"), t.entry("parent")) {
        (Some(e), _) | (None, Some(e)) => (e.key_span.clone(), t.key_path(&e.key)),
        (None, None) => (name_node.span.clone(), t.key_path("name")),
    };
    Ok(SchedDecl {
        name: name.to_string(),
        name_span: name_node.span.clone(),
        info,
        params,
        links,
        links_span,
        links_path,
        path: t.path.clone(),
    })
}

fn policy<'r>(t: &Table<'_>, registry: &'r [PolicyInfo]) -> Result<&'r PolicyInfo, Fail> {
    let n = t.require("policy", "a registered policy name, e.g. policy = \"rr\"")?;
    let path = t.key_path("policy");
    let name = n.name(&path, "a policy name")?;
    let known: Vec<&str> = registry.iter().map(|p| p.name).collect();
    // A scheduler from the literature (HLS Table 1) is known to the
    // analysis only: accepted here, refused by `hsched sim`.
    let found = registry.iter().find(|p| p.name == name);
    let found = found.or_else(|| hsched_analysis::rules::literature::find(name));
    found.ok_or_else(|| {
        let help = if known.is_empty() {
            "no policies are registered in this build".to_string()
        } else {
            format!("known policies: {}", known.join(", "))
        };
        Fail::new(
            &n.span,
            &path,
            format!(
                "unknown policy `{name}`{}",
                did_you_mean(name, known.iter().copied())
            ),
        )
        .help(help)
    })
}

/// `parent = "x"` (with `at`, `vps`) or `parents = [ "x", { parent = "y", at = {..}, vps = 1 } ]`.
pub(crate) fn links(t: &Table<'_>, cpus: u32) -> Result<Vec<LinkDecl>, Fail> {
    match (t.get("parent"), t.get("parents")) {
        (Some(_), Some(ps)) => Err(Fail::new(
            &ps.span,
            &t.key_path("parents"),
            "give either `parent` (one parent) or `parents` (a list), not both",
        )),
        (Some(_), None) => Ok(vec![link(t, cpus)?]),
        (None, Some(ps)) => {
            for k in ["at", "vps"] {
                if let Some(e) = t.entry(k) {
                    return Err(Fail::new(
                        &e.key_span,
                        &t.key_path(k),
                        format!("with `parents`, `{k}` goes in each entry: parents = [ {{ parent = \"x\", {k} = ... }} ]"),
                    ));
                }
            }
            let path = t.key_path("parents");
            let items = ps.array(
                &path,
                "a list of parents: [ \"a\", { parent = \"b\", at = { ... } } ]",
            )?;
            if items.is_empty() {
                return Err(Fail::new(
                    &ps.span,
                    &path,
                    "expected at least one parent (a scheduler without parents is the root: leave `parents` out)",
                ));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let p = index_path(&path, i);
                    match &n.kind {
                        Kind::Str(_) => Ok(LinkDecl {
                            parent: n.name(&p, "a scheduler name")?.to_string(),
                            parent_span: n.span.clone(),
                            parent_path: p.clone(),
                            vps: None,
                            at: Vec::new(),
                            at_span: n.span.clone(),
                            at_path: p,
                        }),
                        _ => {
                            let lt = n.table(
                                &p,
                                "a parent name or { parent = \"x\", at = { ... }, vps = 1 }",
                            )?;
                            lt.only(&["parent", "at", "vps"])?;
                            link(&lt, cpus)
                        }
                    }
                })
                .collect()
        }
        (None, None) => {
            for k in ["at", "vps"] {
                if let Some(e) = t.entry(k) {
                    return Err(Fail::new(
                        &e.key_span,
                        &t.key_path(k),
                        format!("`{k}` describes the attachment under a parent, but no `parent` is given"),
                    ));
                }
            }
            Ok(Vec::new())
        }
    }
}

/// One link from a table holding `parent`, and optionally `at` and `vps`.
fn link(t: &Table<'_>, cpus: u32) -> Result<LinkDecl, Fail> {
    let pn = t.require("parent", "the parent scheduler's name")?;
    let parent_path = t.key_path("parent");
    let parent = pn.name(&parent_path, "a scheduler name")?.to_string();
    let vps = match t.get("vps") {
        Some(n) => {
            let path = t.key_path("vps");
            let v = n.int(&path, 1, i64::MAX)?;
            crate::rules::vps(v, cpus).map_err(|e| Fail::new(&n.span, &path, e))?;
            Some(v as u32)
        }
        None => None,
    };
    let (at, at_span, at_path) = match t.get("at") {
        Some(n) => {
            let at_path = t.key_path("at");
            let at = n.table(
                &at_path,
                "a table of attachment parameters, e.g. at = { prio = 3 }",
            )?;
            (at.params()?, n.span.clone(), at_path)
        }
        None => (Vec::new(), pn.span.clone(), parent_path.clone()),
    };
    Ok(LinkDecl {
        parent,
        parent_span: pn.span.clone(),
        parent_path,
        vps,
        at,
        at_span,
        at_path,
    })
}

/// Checks written parameters against declarations, key by key so an error
/// points at the key, then fills in defaults. `whose` names what declares
/// them ("policy `rr`", "a child of `root` (fp)"). `in_sched_table`: the
/// parameters are the plain keys of a scheduler table, where a typo may be
/// meant for one of its own keys or be a misplaced top-level key.
pub(crate) fn resolve(
    raw: &[RawParam],
    specs: &[ParamSpec],
    owner_span: &Span,
    owner_path: &str,
    whose: &str,
    in_sched_table: bool,
) -> Result<Params, Fail> {
    for rp in raw {
        let Some(spec) = specs.iter().find(|s| s.name == rp.key) else {
            let mut names: Vec<&str> = specs.iter().map(|s| s.name).collect();
            if in_sched_table {
                names.extend(SCHED_KEYS);
            }
            let mut f = Fail::new(
                &rp.key_span,
                &rp.path,
                format!(
                    "{whose} has no parameter `{}`{}",
                    rp.key,
                    did_you_mean(&rp.key, names.iter().copied())
                ),
            )
            .help(describe(whose, specs));
            if in_sched_table && crate::sections::TOP_KEYS.contains(&rp.key.as_str()) {
                f = f.help(format!(
                    "`{}` is a top-level key: in TOML, keys after a [table] header belong to that table, so put top-level keys before the first header",
                    rp.key
                ));
            }
            return Err(f);
        };
        Params::new()
            .with(&rp.key, rp.value.clone())
            .resolve(std::slice::from_ref(spec))
            .map_err(|e| Fail::new(&rp.value_span, &rp.path, e).help(describe(whose, specs)))?;
    }
    let written = Params(
        raw.iter()
            .map(|r| (r.key.clone(), r.value.clone()))
            .collect(),
    );
    written.resolve(specs).map_err(|e| {
        Fail::new(owner_span, owner_path, format!("{whose}: {e}")).help(describe(whose, specs))
    })
}

/// "policy `rr` takes: quantum (duration, default 10ms): the time slice".
fn describe(whose: &str, specs: &[ParamSpec]) -> String {
    if specs.is_empty() {
        return format!("{whose} takes no parameters");
    }
    let list: Vec<String> = specs
        .iter()
        .map(|s| {
            let default = match &s.default {
                Some(d) => format!(", default {d}"),
                None => ", required".to_string(),
            };
            format!("`{}` ({}{default}): {}", s.name, s.kind, s.doc)
        })
        .collect();
    format!("{whose} takes: {}", list.join("; "))
}

/// A child of a scheduler, for counting against `max_children` and saying
/// which one is already there.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Child {
    Sched(String),
    Thread(String),
}

impl fmt::Display for Child {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Child::Sched(n) => write!(f, "scheduler `{n}`"),
            Child::Thread(n) => write!(f, "thread `{n}`"),
        }
    }
}

/// A scheduler instance as it stands at some moment.
pub(crate) struct Inst<'r> {
    pub info: &'r PolicyInfo,
    /// Parent name and VPs held from it; empty for the root or when detached.
    pub parents: Vec<(String, u32)>,
    /// A set: a scheduler may hold many thousands of threads.
    pub children: BTreeSet<Child>,
    /// `None` for the initial hierarchy.
    pub loaded_at: Option<Instant>,
}

/// The hierarchy and the threads at one moment of the script.
pub(crate) struct World<'r> {
    pub cpus: u32,
    pub root: String,
    pub scheds: BTreeMap<String, Inst<'r>>,
    /// Threads that have arrived, and their scheduler.
    pub threads: BTreeMap<String, String>,
    /// Schedulers unloaded so far, and when: "no scheduler `x`" then says
    /// why.
    pub gone: BTreeMap<String, Instant>,
}

impl<'r> World<'r> {
    /// The initial hierarchy from the `[[scheduler]]` tables: names unique
    /// and known, exactly one root, no cycles, limits respected. Returns the
    /// specs in file order.
    pub fn initial(
        decls: &[SchedDecl<'r>],
        cpus: u32,
        list_span: &Span,
    ) -> Result<(World<'r>, Vec<SchedulerSpec>), Fail> {
        let Some(first) = decls.first() else {
            return Err(Fail::new(
                list_span,
                "scheduler",
                "expected at least one [[scheduler]] (the root of the hierarchy)",
            )
            .help("e.g. [[scheduler]]\nname = \"root\"\npolicy = \"fp\""));
        };
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, d) in decls.iter().enumerate() {
            if let Some(&j) = index.get(d.name.as_str()) {
                return Err(Fail::new(
                    &d.name_span,
                    &format!("{}.name", d.path),
                    format!(
                        "scheduler name `{}` is already used by scheduler[{j}]: expected unique names",
                        d.name
                    ),
                ));
            }
            index.insert(&d.name, i);
        }
        for d in decls {
            check_link_names(d, |p| index.contains_key(p), index.keys().copied())?;
        }
        let mut roots = decls.iter().filter(|d| d.links.is_empty());
        let root = roots.next();
        if let (Some(r), Some(second)) = (root, roots.next()) {
            return Err(Fail::new(
                &second.name_span,
                &format!("{}.name", second.path),
                format!(
                    "`{}` has no parent, but `{}` is already the root: a hierarchy has exactly one root",
                    second.name, r.name
                ),
            )
            .help(format!("attach it with parent = \"{}\" (or another scheduler)", r.name)));
        }

        // Kahn's algorithm, lowest file index first: parents before
        // children, so a link's default `vps` can be computed from its
        // parent's.
        let mut waiting: Vec<usize> = decls.iter().map(|d| d.links.len()).collect();
        let mut below: Vec<Vec<usize>> = vec![Vec::new(); decls.len()];
        for (i, d) in decls.iter().enumerate() {
            for l in &d.links {
                below[index[l.parent.as_str()]].push(i);
            }
        }
        let mut ready: BTreeSet<usize> = (0..decls.len()).filter(|&i| waiting[i] == 0).collect();
        let mut order: Vec<usize> = Vec::with_capacity(decls.len());
        while let Some(i) = ready.pop_first() {
            order.push(i);
            for &c in &below[i] {
                waiting[c] -= 1;
                if waiting[c] == 0 {
                    ready.insert(c);
                }
            }
        }
        if order.len() < decls.len() {
            let done: Vec<bool> = waiting.iter().map(|&w| w == 0).collect();
            return Err(cycle(decls, &index, &done));
        }
        let root = root.unwrap_or(first).name.clone();
        let mut world = World {
            cpus,
            root,
            scheds: BTreeMap::new(),
            threads: BTreeMap::new(),
            gone: BTreeMap::new(),
        };
        let mut specs: Vec<Option<SchedulerSpec>> = (0..decls.len()).map(|_| None).collect();
        for i in order {
            specs[i] = Some(world.add_sched(&decls[i], None)?);
        }
        Ok((world, specs.into_iter().flatten().collect()))
    }

    /// Adds a scheduler and attaches it under its parents (which exist).
    pub fn add_sched(
        &mut self,
        d: &SchedDecl<'r>,
        at: Option<Instant>,
    ) -> Result<SchedulerSpec, Fail> {
        if d.links.len() > d.info.max_parents as usize {
            let n = d.info.max_parents;
            return Err(Fail::new(
                &d.links_span,
                &d.links_path,
                format!(
                    "policy `{}` takes at most {n} parent{}, found {}",
                    d.info.name,
                    if n == 1 { "" } else { "s" },
                    d.links.len()
                ),
            ));
        }
        self.scheds.insert(
            d.name.clone(),
            Inst {
                info: d.info,
                parents: Vec::new(),
                children: BTreeSet::new(),
                loaded_at: at,
            },
        );
        let mut parents = Vec::new();
        for l in &d.links {
            let link = self.attach(Child::Sched(d.name.clone()), l)?;
            parents.push(link);
        }
        Ok(SchedulerSpec {
            name: d.name.clone(),
            policy: d.info.name.to_string(),
            params: d.params.clone(),
            parents,
        })
    }

    /// How many VPs `name` holds: one per CPU for the root, else the sum over
    /// its parents. A child's default `vps` is this (capped at the CPUs): it
    /// can use as many CPUs at once as the scheduler it sits under.
    fn vps_of(&self, name: &str) -> u32 {
        if name == self.root {
            return self.cpus;
        }
        let held: u64 = self
            .scheds
            .get(name)
            .map_or(0, |i| i.parents.iter().map(|(_, v)| u64::from(*v)).sum());
        held.clamp(1, u64::from(self.cpus)) as u32
    }

    /// Attaches a scheduler or a thread under `l.parent` (which exists):
    /// attachment parameters checked against the parent's child parameters,
    /// and the parent's `max_children`.
    pub fn attach(&mut self, child: Child, l: &LinkDecl) -> Result<ParentLink, Fail> {
        let vps = match child {
            Child::Thread(_) => 1,
            Child::Sched(_) => l.vps.unwrap_or_else(|| self.vps_of(&l.parent)),
        };
        let Some(parent) = self.scheds.get_mut(&l.parent) else {
            // Callers check names first; this keeps a slip from panicking.
            return Err(Fail::new(
                &l.parent_span,
                &l.parent_path,
                format!("no scheduler `{}`", l.parent),
            ));
        };
        let whose = format!("a child of `{}` ({})", l.parent, parent.info.name);
        let params = resolve(
            &l.at,
            &(parent.info.child_params)(),
            &l.at_span,
            &l.at_path,
            &whose,
            false,
        )?;
        let max = parent.info.max_children as usize;
        if parent.children.len() >= max && !parent.children.contains(&child) {
            let have: Vec<String> = parent.children.iter().map(|c| c.to_string()).collect();
            return Err(Fail::new(
                &l.parent_span,
                &l.parent_path,
                format!(
                    "`{}` ({}) takes at most {max} child{}, and already has {}",
                    l.parent,
                    parent.info.name,
                    if max == 1 { "" } else { "ren" },
                    have.join(", ")
                ),
            ));
        }
        parent.children.insert(child.clone());
        if let Child::Sched(name) = &child {
            if let Some(c) = self.scheds.get_mut(name) {
                c.parents.push((l.parent.clone(), vps));
            }
        }
        Ok(ParentLink {
            parent: l.parent.clone(),
            vps,
            params,
        })
    }

    /// Takes `child` off `parent`'s list of children.
    pub fn forget_child(&mut self, parent: &str, child: &Child) {
        if let Some(p) = self.scheds.get_mut(parent) {
            p.children.remove(child);
        }
    }

    /// Whether `candidate` is `name` or below it.
    pub fn is_under(&self, candidate: &str, name: &str) -> bool {
        let mut stack = vec![name.to_string()];
        let mut seen = BTreeSet::new();
        while let Some(n) = stack.pop() {
            if n == candidate {
                return true;
            }
            if !seen.insert(n.clone()) {
                continue;
            }
            if let Some(i) = self.scheds.get(&n) {
                for c in &i.children {
                    if let Child::Sched(s) = c {
                        stack.push(s.clone());
                    }
                }
            }
        }
        false
    }

    /// Checks that `name` exists now; the error suggests the closest.
    pub fn present(
        &self,
        name: &str,
        span: &Span,
        path: &str,
        when: Instant,
    ) -> Result<&Inst<'r>, Fail> {
        self.scheds.get(name).ok_or_else(|| {
            let why = match self.gone.get(name) {
                Some(t) => format!(" (it was unloaded at {t})"),
                None => did_you_mean(name, self.scheds.keys().map(|s| s.as_str())),
            };
            Fail::new(
                span,
                path,
                format!("no scheduler `{name}` exists at {when}{why}"),
            )
            .help(format!(
                "schedulers at that time: {}",
                self.scheds.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }
}

/// Every parent a declaration names must exist (per `exists`), differ from
/// itself and appear once.
pub(crate) fn check_link_names<'a>(
    d: &SchedDecl<'_>,
    exists: impl Fn(&str) -> bool,
    names: impl Iterator<Item = &'a str> + Clone,
) -> Result<(), Fail> {
    for (i, l) in d.links.iter().enumerate() {
        if l.parent == d.name {
            return Err(Fail::new(
                &l.parent_span,
                &l.parent_path,
                format!("`{}` cannot be its own parent", d.name),
            ));
        }
        if !exists(&l.parent) {
            return Err(Fail::new(
                &l.parent_span,
                &l.parent_path,
                format!(
                    "no scheduler `{}`{}",
                    l.parent,
                    did_you_mean(&l.parent, names.clone())
                ),
            )
            .help(format!(
                "schedulers: {}",
                names.clone().collect::<Vec<_>>().join(", ")
            )));
        }
        if d.links[..i].iter().any(|o| o.parent == l.parent) {
            return Err(Fail::new(
                &l.parent_span,
                &l.parent_path,
                format!(
                    "parent `{}` is named twice: use `vps` for more CPUs from one parent",
                    l.parent
                ),
            ));
        }
    }
    Ok(())
}

/// The error for a cycle among the schedulers not yet ordered: walks up
/// parent links from one of them until a name repeats.
fn cycle(decls: &[SchedDecl<'_>], index: &BTreeMap<&str, usize>, done: &[bool]) -> Fail {
    let idx = |name: &str| index.get(name).copied();
    let start = done.iter().position(|d| !d).unwrap_or(0);
    let mut path = vec![start];
    let mut cur = start;
    loop {
        // Every remaining node has a remaining parent, or it would be done.
        let next = decls[cur]
            .links
            .iter()
            .filter_map(|l| idx(&l.parent))
            .find(|&p| !done[p]);
        let Some(next) = next else { break };
        if let Some(pos) = path.iter().position(|&p| p == next) {
            path.drain(..pos);
            path.push(next);
            break;
        }
        path.push(next);
        cur = next;
    }
    let d = &decls[path[0]];
    let chain: Vec<&str> = path.iter().map(|&i| decls[i].name.as_str()).collect();
    Fail::new(
        &d.links_span,
        &d.links_path,
        format!(
            "the hierarchy has a cycle: {} (each is the parent of the one before): expected a DAG with one root",
            chain.join(" -> ")
        ),
    )
}
