//! `[[script]]` entries as written: the instant (before the horizon) and
//! the one action (`load`, `unload`, `detach`, `attach`, `move`, `msg`,
//! `kill`, `create`) with its arguments. Whether the names exist at that
//! instant is checked later, by the replay.

use crate::error::{Fail, Span};
use crate::hierarchy::{self, sched_decl, LinkDecl, SchedDecl};
use crate::program;
use crate::refs::NameRef;
use crate::tree::Entry;
use crate::typed::{index_path, RawParam, Table};
use hsched_core::{Duration, Instant, Msg, PolicyInfo};

const ACTIONS: &[&str] = &[
    "load", "unload", "detach", "attach", "move", "msg", "kill", "create",
];

/// A `[[script]]` entry as written: when, and its one action.
pub(crate) struct ScriptDecl<'r> {
    pub at: Instant,
    pub action: ActionDecl<'r>,
}

pub(crate) enum ActionDecl<'r> {
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

pub(crate) fn script<'r>(
    top: &Table<'_>,
    registry: &'r [PolicyInfo],
    cpus: u32,
    horizon: Duration,
) -> Result<Vec<ScriptDecl<'r>>, Fail> {
    let mut out = Vec::new();
    for (i, n) in top
        .tables("script", "[[script]] tables")?
        .iter()
        .enumerate()
    {
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
        let actions: Vec<&Entry> = t.entries.iter().filter(|e| e.key != "at").collect();
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
            "unload" => {
                ActionDecl::Unload(NameRef::read(v, p, "the name of a scheduler to unload")?)
            }
            "detach" => {
                ActionDecl::Detach(NameRef::read(v, p, "the name of a scheduler to detach")?)
            }
            "attach" => {
                let at = v.table(
                    &p,
                    "a table: { scheduler = \"x\", parent = \"root\", at = { ... } }",
                )?;
                at.only(&["scheduler", "parent", "parents", "at", "vps"])?;
                let sched = NameRef::read(
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
                let thread = NameRef::read(
                    mt.require("thread", "the thread to move")?,
                    mt.key_path("thread"),
                    "a thread name",
                )?;
                let to_node = mt.require("to", "the scheduler to move it to")?;
                let to = NameRef::read(to_node, mt.key_path("to"), "a scheduler name")?;
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
                let to = NameRef::read(
                    mt.require("to", "the scheduler it goes to")?,
                    mt.key_path("to"),
                    "a scheduler name",
                )?;
                ActionDecl::Msg {
                    to,
                    msg: program::message(&mt)?,
                }
            }
            "kill" => ActionDecl::Kill(NameRef::read(v, p, "the name of a domain to kill")?),
            "create" => ActionDecl::Create(NameRef::read(
                v,
                p,
                "the name of a declared domain to start",
            )?),
            _ => unreachable!("keys were checked against ACTIONS"),
        };
        out.push(ScriptDecl { at, action });
    }
    Ok(out)
}
