//! `[[thread]]` tables as written: each one's names (`count` copies named
//! `name.0`, `name.1`, ...), arrival, parent and attachment parameters,
//! program and `command`. Where a thread goes is checked later, by the
//! replay, against the hierarchy at its arrival.

use crate::error::{did_you_mean, Fail};
use crate::hierarchy::LinkDecl;
use crate::program;
use crate::refs::{NameRef, Refs};
use crate::typed::{index_path, Table};
use hsched_core::{Duration, Instant};
use hsched_model::Program;
use std::collections::BTreeSet;

const THREAD_KEYS: &[&str] = &[
    "name", "parent", "at", "arrival", "count", "program", "needs", "domain", "command",
];

/// At most this many threads after `count` expansion: a bound that keeps a
/// typo like `count = 10000000000` from exhausting memory.
const MAX_THREADS: u64 = 100_000;

/// A `[[thread]]` as written: replicas named, program read, its parent not
/// yet checked (that depends on when it arrives).
pub(crate) struct ThreadDecl {
    pub names: Vec<String>,
    pub link: LinkDecl,
    pub arrival: Instant,
    pub program: Program,
    pub refs: Refs,
    /// `needs`, checked to be a guarantee.
    pub needs: Option<String>,
    /// Its home domain (`domain`); none: a private one.
    pub domain: Option<NameRef>,
}

pub(crate) fn threads(
    top: &Table<'_>,
    default: &str,
    horizon: Duration,
) -> Result<Vec<ThreadDecl>, Fail> {
    let mut out: Vec<ThreadDecl> = Vec::new();
    let mut total: u64 = 0;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (i, n) in top
        .tables("thread", "[[thread]] tables")?
        .iter()
        .enumerate()
    {
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
            Some(d) => Some(NameRef::read(d, t.key_path("domain"), "a domain name")?),
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
