//! The `[[mutex]]` tables: how a mutex lends scheduling state to its
//! holder while threads wait for it.
//!
//! ```toml
//! [[mutex]]
//! name = "m"
//! protocol = "inherit"   # priority inheritance in fp and rm; "none" (default)
//! ```
//!
//! A mutex is created by the programs that lock it; a table only sets its
//! protocol, so it must name a mutex some program (or stop body) locks.

use crate::error::{did_you_mean, Fail};
use crate::refs::Refs;
use crate::tree::Node;
use crate::typed::index_path;
use hsched_core::MutexProtocol;
use hsched_model::MutexSpec;
use std::collections::BTreeSet;

pub(crate) fn mutexes<'a>(
    list: &[Node],
    refs: impl Iterator<Item = &'a Refs>,
) -> Result<Vec<MutexSpec>, Fail> {
    let locked: BTreeSet<&str> = refs
        .flat_map(|r| r.locks.iter().map(String::as_str))
        .collect();
    let mut out: Vec<MutexSpec> = Vec::new();
    for (i, n) in list.iter().enumerate() {
        let path = index_path("mutex", i);
        let t = n.table(&path, "a [[mutex]] table")?;
        t.only(&["name", "protocol"])?;
        let name_node = t.require("name", "the mutex's name, e.g. name = \"m\"")?;
        let name = name_node.name(&t.key_path("name"), "a mutex name")?;
        if out.iter().any(|m| m.name == name) {
            return Err(Fail::new(
                &name_node.span,
                &t.key_path("name"),
                format!("mutex `{name}` is declared twice: expected unique names"),
            ));
        }
        if !locked.contains(name) {
            return Err(Fail::new(
                &name_node.span,
                &t.key_path("name"),
                format!(
                    "mutex `{name}` is declared but no program locks it{}",
                    did_you_mean(name, locked.iter().copied())
                ),
            )
            .help("a [[mutex]] table sets the protocol of a mutex the programs `lock`"));
        }
        let protocol = match t.get("protocol") {
            None => MutexProtocol::default(),
            Some(p) => {
                let ppath = t.key_path("protocol");
                let text = p.str(&ppath, "a protocol name: \"none\" or \"inherit\"")?;
                MutexProtocol::from_name(text).ok_or_else(|| {
                    Fail::new(
                        &p.span,
                        &ppath,
                        format!(
                            "unknown protocol `{text}`: expected \"none\" or \"inherit\"{}",
                            did_you_mean(text, MutexProtocol::NAMES.iter().copied())
                        ),
                    )
                })?
            }
        };
        out.push(MutexSpec {
            name: name.to_string(),
            protocol,
        });
    }
    Ok(out)
}
