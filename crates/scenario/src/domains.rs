//! Protection domains (Yau, Tan & Lam, "Decoupled delay and rate" §6):
//! the `[[domain]]` tables, a thread's `domain` key, and the checks that
//! every `call`, `serve` and `kill` names a domain (and stop) that exists.
//!
//! ```toml
//! [[domain]]
//! name = "server"
//! start = false        # alive only once a `create = "server"` runs
//! stops = [ { name = "compute", body = [ { run = "5ms" } ] } ]
//! ```
//!
//! A thread without `domain` lives in a private domain named after it,
//! which a `kill` may name too. Stop bodies are operations like a
//! program's, without `serve` (a server loop belongs to a server thread),
//! and must take time (so that a loop of calls moves the clock).

use crate::error::{did_you_mean, Fail};
use crate::program::{self, takes_time};
use crate::refs::{NameRef, Refs};
use crate::tree::Node;
use crate::typed::{index_path, Table};
use hsched_model::{DomainSpec, StopSpec};
use std::collections::BTreeSet;

/// A parsed `[[domain]]` table, before its members are known.
pub(crate) struct DomainDecl {
    pub spec: DomainSpec,
    /// What its stops' bodies refer to.
    pub refs: Refs,
}

pub(crate) fn domains(list: &[Node]) -> Result<Vec<DomainDecl>, Fail> {
    let mut out: Vec<DomainDecl> = Vec::new();
    for (i, n) in list.iter().enumerate() {
        let path = index_path("domain", i);
        let t = n.table(&path, "a [[domain]] table")?;
        t.only(&["name", "stops", "start"])?;
        let name_node = t.require("name", "the domain's name, e.g. name = \"server\"")?;
        let name = name_node.name(&t.key_path("name"), "a domain name")?;
        if name.contains('.') {
            return Err(Fail::new(
                &name_node.span,
                &t.key_path("name"),
                format!("domain name `{name}` contains `.`: expected a name without one (calls write \"domain.stop\")"),
            ));
        }
        if out.iter().any(|d| d.spec.name == name) {
            return Err(Fail::new(
                &name_node.span,
                &t.key_path("name"),
                format!("domain `{name}` is declared twice: expected unique names"),
            ));
        }
        let mut refs = Refs::default();
        let stops = match t.get("stops") {
            None => Vec::new(),
            Some(s) => stops(s, &t, &mut refs)?,
        };
        let start = match t.get("start") {
            None => true,
            Some(v) => v.bool(&t.key_path("start"))?,
        };
        out.push(DomainDecl {
            spec: DomainSpec {
                name: name.to_string(),
                stops,
                members: Vec::new(),
                start,
            },
            refs,
        });
    }
    Ok(out)
}

fn stops(node: &Node, t: &Table<'_>, refs: &mut Refs) -> Result<Vec<StopSpec>, Fail> {
    let path = t.key_path("stops");
    let items = node.array(
        &path,
        "an array of stops, e.g. [ { name = \"compute\", body = [ { run = \"5ms\" } ] } ]",
    )?;
    let mut out: Vec<StopSpec> = Vec::new();
    for (i, n) in items.iter().enumerate() {
        let sp = index_path(&path, i);
        let st = n.table(&sp, "a stop: { name = \"compute\", body = [ ... ] }")?;
        st.only(&["name", "body"])?;
        let name_node = st.require("name", "the stop's name")?;
        let name = name_node.name(&st.key_path("name"), "a stop name")?;
        if out.iter().any(|s| s.name == name) {
            return Err(Fail::new(
                &name_node.span,
                &st.key_path("name"),
                format!("stop `{name}` is exported twice: expected unique names"),
            ));
        }
        let body_node = st.require("body", "the operations a call runs")?;
        let before = refs.serves.len();
        let body = program::ops(body_node, &st.key_path("body"), refs)?;
        if let Some(s) = refs.serves.get(before) {
            return Err(Fail::new(
                &s.span,
                &s.path,
                "`serve` inside a stop: expected it only in a server thread's program",
            ));
        }
        if !takes_time(&body) {
            return Err(Fail::new(
                &body_node.span,
                &st.key_path("body"),
                "a stop's body must take time: expected a `run`, `spin`, `sleep` or `fault` that can last more than zero",
            ));
        }
        out.push(StopSpec {
            name: name.to_string(),
            body,
        });
    }
    Ok(out)
}

/// Fills in the members (threads whose `domain` names it) and checks every
/// reference: thread `domain` keys, calls, serves, kills and creates (in
/// programs, stop bodies and the script). `threads`: each thread's
/// expanded names, its `domain` key, its refs; `script`: the script's kills
/// and creates.
pub(crate) fn resolve(
    decls: &mut [DomainDecl],
    threads: &[(&[String], Option<&NameRef>, &Refs)],
    script: &Refs,
) -> Result<(), Fail> {
    let declared: Vec<String> = decls.iter().map(|d| d.spec.name.clone()).collect();
    let mut private: BTreeSet<&str> = BTreeSet::new();
    for (names, domain, _) in threads {
        match domain {
            Some(r) => {
                let Some(d) = decls.iter_mut().find(|d| d.spec.name == r.name) else {
                    return Err(Fail::new(
                        &r.span,
                        &r.path,
                        format!(
                            "no domain `{}`{}",
                            r.name,
                            did_you_mean(&r.name, declared.iter().map(|s| s.as_str()))
                        ),
                    )
                    .help("declare it: [[domain]] name = \"...\""));
                };
                d.spec.members.extend(names.iter().cloned());
            }
            None => private.extend(names.iter().map(|s| s.as_str())),
        }
    }
    let no_domain = |r: &NameRef, name: &str, what: &str| {
        Fail::new(
            &r.span,
            &r.path,
            format!(
                "no domain `{name}`{}",
                did_you_mean(name, declared.iter().map(|s| s.as_str()))
            ),
        )
        .help(format!("{what} names a [[domain]]"))
    };
    let all_refs = threads
        .iter()
        .map(|(_, _, r)| *r)
        .chain(decls.iter().map(|d| &d.refs))
        .chain(std::iter::once(script));
    for refs in all_refs {
        for c in &refs.calls {
            let (dn, sn) = c.name.split_once('.').unwrap_or((&c.name, ""));
            let Some(d) = decls.iter().find(|d| d.spec.name == dn) else {
                return Err(no_domain(c, dn, "a call"));
            };
            if !d.spec.stops.iter().any(|s| s.name == sn) {
                return Err(Fail::new(
                    &c.span,
                    &c.path,
                    format!(
                        "domain `{dn}` exports no stop `{sn}`{}",
                        did_you_mean(sn, d.spec.stops.iter().map(|s| s.name.as_str()))
                    ),
                ));
            }
        }
        for s in &refs.serves {
            if !declared.contains(&s.name) {
                return Err(no_domain(s, &s.name, "`serve`"));
            }
        }
        for k in &refs.kills {
            if !declared.contains(&k.name) && !private.contains(k.name.as_str()) {
                return Err(no_domain(k, &k.name, "`kill`"));
            }
        }
        for c in &refs.creates {
            if !declared.contains(&c.name) {
                return Err(no_domain(c, &c.name, "`create`"));
            }
        }
    }
    Ok(())
}
