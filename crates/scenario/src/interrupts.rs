//! The `[[interrupt]]` tables: interrupt sources, unscheduled work that
//! preempts whatever runs on a CPU (see [`hsched_model::InterruptSpec`]).
//!
//! ```toml
//! [[interrupt]]
//! name = "disk"
//! every = { exponential = "30ms" }     # a Poisson source; "1ms": periodic
//! duration = { uniform = ["10us", "500us"] }
//! cpus = [0]                           # default: every CPU, each its own
//! offset = "0ns"                       # before the first arrival
//! signal = "disk-done"                 # optional: deferred work, a thread
//!                                      # waiting on this semaphore
//! ```

use crate::error::{did_you_mean, Fail};
use crate::program::{dist, dist_max};
use crate::refs::Refs;
use crate::tree::Node;
use crate::typed::index_path;
use hsched_core::Duration;
use hsched_model::{Dist, InterruptSpec};
use std::collections::BTreeSet;

const KEYS: &[&str] = &["name", "cpus", "every", "offset", "duration", "signal"];

pub(crate) fn interrupts<'a>(
    list: &[Node],
    cpus: u32,
    refs: impl Iterator<Item = &'a Refs>,
) -> Result<Vec<InterruptSpec>, Fail> {
    let waited: BTreeSet<&str> = refs
        .flat_map(|r| r.waits.iter().map(|w| w.name.as_str()))
        .collect();
    let mut out: Vec<InterruptSpec> = Vec::new();
    for (i, n) in list.iter().enumerate() {
        let path = index_path("interrupt", i);
        let t = n.table(&path, "an [[interrupt]] table")?;
        t.only(KEYS)?;
        let name_node = t.require("name", "the source's name, e.g. name = \"disk\"")?;
        let name = name_node.name(&t.key_path("name"), "an interrupt source name")?;
        if out.iter().any(|s| s.name == name) {
            return Err(Fail::new(
                &name_node.span,
                &t.key_path("name"),
                format!("interrupt source `{name}` is declared twice: expected unique names"),
            ));
        }
        let every_node = t.require(
            "every",
            "the time between arrivals on a CPU, e.g. every = \"1ms\" (periodic) or \
             every = { exponential = \"10ms\" } (Poisson)",
        )?;
        let every = dist(every_node, &t.key_path("every"))?;
        if dist_max(&every).is_zero() {
            return Err(Fail::new(
                &every_node.span,
                &t.key_path("every"),
                "arrivals 0ns apart would never let time pass: expected a time between \
                 arrivals that can be greater than zero",
            ));
        }
        let duration_node = t.require(
            "duration",
            "how long each handler holds the CPU, e.g. duration = \"20us\" or \
             duration = { uniform = [\"10us\", \"500us\"] }",
        )?;
        let duration = dist(duration_node, &t.key_path("duration"))?;
        // A periodic handler as long as its period would take the CPU for
        // ever: nothing else could run, and handlers would queue up.
        if let (Dist::Fixed(p), Dist::Fixed(d)) = (&every, &duration) {
            if d >= p {
                return Err(Fail::new(
                    &duration_node.span,
                    &t.key_path("duration"),
                    format!(
                        "a handler of {d} every {p} leaves the CPU no time: expected a \
                         duration shorter than `every`"
                    ),
                ));
            }
        }
        let offset = match t.get("offset") {
            Some(o) => o.duration(&t.key_path("offset"))?,
            None => Duration::ZERO,
        };
        let on = match t.get("cpus") {
            None => (0..cpus).collect(),
            Some(c) => cpu_list(c, &t.key_path("cpus"), cpus)?,
        };
        let signal = match t.get("signal") {
            None => None,
            Some(s) => {
                let spath = t.key_path("signal");
                let sem = s.name(&spath, "a semaphore name")?;
                if !waited.contains(sem) {
                    return Err(Fail::new(
                        &s.span,
                        &spath,
                        format!(
                            "interrupt source `{name}` signals semaphore `{sem}`, which no \
                             program waits on{}",
                            did_you_mean(sem, waited.iter().copied())
                        ),
                    )
                    .help(
                        "the deferred work is a thread whose program waits on the semaphore, \
                         e.g. { loop = { body = [ { wait = \"nic\" }, { run = \"50us\" } ] } }",
                    ));
                }
                Some(sem.to_string())
            }
        };
        out.push(InterruptSpec {
            name: name.to_string(),
            cpus: on,
            every,
            offset,
            duration,
            signal,
        });
    }
    Ok(out)
}

/// `cpus = [0, 2]`: distinct CPU indices below the machine's count.
fn cpu_list(node: &Node, path: &str, cpus: u32) -> Result<Vec<u32>, Fail> {
    let what = "a list of CPU indices, e.g. cpus = [0]";
    let items = node.array(path, what)?;
    if items.is_empty() {
        return Err(Fail::new(
            &node.span,
            path,
            format!("an empty list: expected {what} (leave `cpus` out for every CPU)"),
        ));
    }
    let mut out: Vec<u32> = Vec::new();
    for (i, n) in items.iter().enumerate() {
        let ipath = index_path(path, i);
        let c = n
            .int(&ipath, 0, i64::from(cpus) - 1)
            .map_err(|e| e.help(format!("the machine has {cpus} CPU(s), numbered from 0")))?
            as u32;
        if out.contains(&c) {
            return Err(Fail::new(
                &n.span,
                &ipath,
                format!("CPU {c} is listed twice: expected distinct CPUs"),
            ));
        }
        out.push(c);
    }
    Ok(out)
}
