//! Writing the imported scenario: the hierarchy mirroring Linux's classes
//! (only those the tasks use), then one `[[thread]]` per task with its
//! program, as commented TOML.

use super::json_like::Pos;
use super::members::{Cx, Fail};
use super::model::{Class, File};
use super::program::{programs, Op};
use crate::import::{toml_duration, toml_string};
use std::collections::BTreeSet;

/// The horizon when rt-app's `duration` is absent or -1 (run until every
/// thread ends or rt-app is stopped): hsched needs one.
pub const DEFAULT_HORIZON_S: u64 = 10;

/// The `sfq` quantum standing in for CFS's slice (the kernel's default base
/// slice on a small machine is of this order).
const OTHER_QUANTUM: &str = "\"3ms\"";
/// Linux's SCHED_RR time slice (`sched_rr_timeslice_ms`).
const RR_QUANTUM: &str = "\"100ms\"";
/// Where SCHED_DEADLINE's `res` attaches under the root: above every
/// real-time priority (1..99), as the deadline class is above the RT class.
const DEADLINE_PRIO: i64 = 100;
/// Where the time-sharing class attaches: below every real-time priority.
const OTHER_PRIO: i64 = 0;

/// One thread of the scenario, ready to write.
pub(super) struct ThreadOut {
    name: String,
    comment: String,
    parent: String,
    at: String,
    arrival_us: u64,
    count: u64,
    program: Vec<Op>,
}

pub(super) fn emit(
    file: &File,
    file_name: &str,
    cpus: Option<u32>,
    cx: &mut Cx,
) -> Result<String, Fail> {
    let max_horizon_s = hsched_model::MAX_HORIZON.as_nanos() / 1_000_000_000;
    let horizon_s = match file.duration_s {
        Some((d, pos)) if d > 0 && d as u64 > max_horizon_s => {
            return Err(Fail::at(
                pos,
                "global.duration",
                format!(
                    "{d}s is longer than the longest horizon hsched runs, {max_horizon_s}s \
                     (MAX_HORIZON)"
                ),
            ));
        }
        Some((d, _)) if d > 0 => d as u64,
        Some((d, pos)) => {
            cx.warn(pos, "global.duration", format!("{d}: rt-app runs until every thread ends or it is stopped; hsched needs a horizon: {DEFAULT_HORIZON_S}s (change it with `hsched sim --horizon`)"));
            DEFAULT_HORIZON_S
        }
        None => {
            cx.warn(Pos { line: 0, column: 0 }, "global.duration", format!("not given: rt-app runs until every thread ends or it is stopped; hsched needs a horizon: {DEFAULT_HORIZON_S}s (change it with `hsched sim --horizon`)"));
            DEFAULT_HORIZON_S
        }
    };
    let horizon_ns = horizon_s.saturating_mul(1_000_000_000);
    let cpus = cpus.unwrap_or_else(|| {
        file.tasks
            .iter()
            .filter_map(|t| t.max_cpu)
            .max()
            .map(|c| c + 1)
            .unwrap_or(1)
    });
    for t in &file.tasks {
        if let Some((list, pos, path)) = &t.cpus {
            let all: BTreeSet<u32> = (0..cpus).collect();
            let given: BTreeSet<u32> = list.iter().copied().collect();
            if !all.is_subset(&given) {
                cx.warn(*pos, path, format!("CPU affinity {list:?} is not modelled: the thread may run on any of the {cpus} CPU(s)"));
            }
        }
    }

    let threads_program = programs(&file.tasks, horizon_ns, cx);

    // The hierarchy: only the classes the tasks use, plus the fair class,
    // which is the default scheduler.
    let mut threads = Vec::new();
    let mut rr_prios = BTreeSet::new();
    let mut deadline_util: Vec<(String, Pos, u64, u64)> = Vec::new();
    let mut any_deadline = false;
    for (t, program) in file.tasks.iter().zip(threads_program) {
        let Some(program) = program else { continue };
        let (parent, at) = t.class.placement();
        let comment = match &t.class {
            Class::Fair(_) => "fair class".to_string(),
            Class::Fifo(p) => format!("SCHED_FIFO {p}"),
            Class::Rr(p) => format!("SCHED_RR {p}"),
            Class::Deadline(r, p) => format!("SCHED_DEADLINE {r}us every {p}us"),
        };
        if let Class::Deadline(r, p) = &t.class {
            // Each instance is a thread with its own reservation.
            deadline_util.push((t.path.clone(), t.pos, r.saturating_mul(t.instances), *p));
        }
        for c in std::iter::once(&t.class).chain(
            t.phases
                .iter()
                .filter_map(|p| p.class.as_ref().map(|(c, _)| c)),
        ) {
            match c {
                Class::Rr(p) => {
                    rr_prios.insert(*p);
                }
                Class::Deadline(..) => any_deadline = true,
                _ => {}
            }
        }
        threads.push(ThreadOut {
            name: t.name.clone(),
            comment,
            parent,
            at,
            arrival_us: t.delay_us,
            count: t.instances,
            program,
        });
    }
    if threads.is_empty() {
        return Err(Fail {
            pos: None,
            path: "tasks".into(),
            message: "no task creates a thread (every one has `instance: 0` or `loop: 0`): nothing to simulate".into(),
        });
    }
    // `res` admits reservations while their utilizations sum to at most 1.
    let mut sum = (0u128, 1u128);
    for (path, pos, r, p) in &deadline_util {
        let next = (sum.0 * *p as u128 + *r as u128 * sum.1, sum.1 * *p as u128);
        if next.0 > next.1 {
            cx.warn(*pos, path, "with this task the SCHED_DEADLINE reservations add up to more than one CPU: hsched's `res` admits at most one CPU's worth in all, so `hsched sim` refuses the hierarchy (as Linux's admission control refuses such a task)");
        }
        let g = gcd(next.0, next.1).max(1);
        sum = (next.0 / g, next.1 / g);
    }

    let stem = std::path::Path::new(file_name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rt-app".into());
    let mut out = String::new();
    out.push_str(&format!("name = {}\n", toml_string(&stem)));
    out.push_str(&format!(
        "description = {}\n",
        toml_string(&format!("rt-app workload {stem}, imported"))
    ));
    out.push_str(&format!("horizon = \"{horizon_s}s\"\n"));
    out.push_str("default = \"other\"\n\n");
    out.push_str(&format!("[machine]\ncpus = {cpus}\n\n"));
    out.push_str("# Linux's classes: deadline above real-time above fair.\n");
    out.push_str("[[scheduler]]\nname = \"root\"\npolicy = \"fp\"\n\n");
    if any_deadline {
        out.push_str(&format!(
            "# SCHED_DEADLINE: EDF hard reservations (dl-runtime every dl-period).\n[[scheduler]]\nname = \"deadline\"\npolicy = \"res\"\nparent = \"root\"\nat = {{ prio = {DEADLINE_PRIO} }}\n\n"
        ));
    }
    for p in &rr_prios {
        out.push_str(&format!(
            "# SCHED_RR at priority {p}: round robin with Linux's slice.\n[[scheduler]]\nname = \"rr_{p}\"\npolicy = \"rr\"\nquantum = {RR_QUANTUM}\nparent = \"root\"\nat = {{ prio = {p} }}\n\n"
        ));
    }
    out.push_str(&format!(
        "# SCHED_OTHER, SCHED_BATCH, SCHED_IDLE: weighted fair share (CFS's nice weights).\n[[scheduler]]\nname = \"other\"\npolicy = \"sfq\"\nquantum = {OTHER_QUANTUM}\nparent = \"root\"\nat = {{ prio = {OTHER_PRIO} }}\n\n"
    ));
    for t in &threads {
        out.push_str(&format!("# {}\n[[thread]]\n", t.comment));
        out.push_str(&format!("name = {}\n", toml_string(&t.name)));
        out.push_str(&format!("parent = {}\n", toml_string(&t.parent)));
        if !t.at.is_empty() {
            out.push_str(&format!("at = {}\n", t.at));
        }
        if t.arrival_us > 0 {
            out.push_str(&format!(
                "arrival = {}\n",
                toml_duration(
                    t.arrival_us
                        .saturating_mul(1000)
                        .min(horizon_ns.saturating_sub(1))
                )
            ));
        }
        if t.count != 1 {
            out.push_str(&format!("count = {}\n", t.count));
        }
        out.push_str("program = [\n");
        for op in &t.program {
            op.write(&mut out, 1);
        }
        out.push_str("]\n\n");
    }
    Ok(out)
}

pub(super) fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
