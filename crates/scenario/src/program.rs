//! Workload programs: the operations a thread runs (`run`, `spin`, `sleep`,
//! `fault`, `periodic`, `lock`, `unlock`, `signal`, `wait`, `barrier`,
//! `sporadic`, `yield`, `msg`, `loop`, `randres`, `constraints`, `frames`,
//! and the cross-domain `call`, `serve`, `kill`, `create`, `exit`) and the
//! duration distributions they draw from.

use crate::error::{did_you_mean, Fail};
use crate::refs::{NameRef, Refs};
use crate::tree::{Kind, Node};
use crate::typed::{index_path, RawParam};
use hsched_core::{Duration, Msg, Params, Value};
use hsched_model::{ConstraintLoad, Dist, ErrorMode, Op, Randres, Target, Via};

pub(crate) const OP_KEYS: &[&str] = &[
    "run",
    "spin",
    "sleep",
    "fault",
    "periodic",
    "lock",
    "unlock",
    "signal",
    "wait",
    "barrier",
    "sporadic",
    "yield",
    "msg",
    "loop",
    "randres",
    "constraints",
    "frames",
    "call",
    "serve",
    "kill",
    "create",
    "exit",
];

const DIST_HELP: &str = "a distribution is one of: { uniform = [\"1ms\", \"3ms\"] }, { exponential = \"2ms\", max = \"20ms\" }, { normal = \"5ms\", sd = \"1ms\", min = \"1ms\", max = \"9ms\" }";

/// A non-empty list of operations.
pub(crate) fn ops(node: &Node, path: &str, refs: &mut Refs) -> Result<Vec<Op>, Fail> {
    let items = node.array(path, "an array of operations, e.g. [ { run = \"5ms\" } ]")?;
    if items.is_empty() {
        return Err(Fail::new(
            &node.span,
            path,
            "expected at least one operation, found an empty array",
        )
        .help(format!("operations: {}", OP_KEYS.join(", "))));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, n)| op(n, &index_path(path, i), refs))
        .collect()
}

fn op(node: &Node, path: &str, refs: &mut Refs) -> Result<Op, Fail> {
    let t = node.table(
        path,
        "an operation: a table with one key, e.g. { run = \"5ms\" }",
    )?;
    let entry = match t.entries {
        [e] => e,
        [] => {
            return Err(Fail::new(&node.span, path, "empty operation")
                .help(format!("an operation has one key: {}", OP_KEYS.join(", "))))
        }
        [a, b, ..] => {
            return Err(Fail::new(
                &b.key_span,
                path,
                format!(
                    "an operation has exactly one key, found `{}` and `{}`",
                    a.key, b.key
                ),
            )
            .help("write two operations: [ { run = \"5ms\" }, { sleep = \"10ms\" } ]"))
        }
    };
    let p = t.key_path(&entry.key);
    let v = &entry.value;
    Ok(match entry.key.as_str() {
        "run" => Op::Run(dist(v, &p)?),
        "spin" => Op::Spin(dist(v, &p)?),
        "sleep" => Op::Sleep(dist(v, &p)?),
        "fault" => Op::Fault(dist(v, &p)?),
        "randres" => Op::Randres(randres(v, &p)?),
        "constraints" => Op::Constraints(constraints(v, &p)?),
        "lock" => {
            let name = v.name(&p, "a mutex name")?;
            refs.locks.insert(name.to_string());
            Op::Lock(name.to_string())
        }
        "unlock" => {
            let name = v.name(&p, "a mutex name")?;
            refs.unlocks.push(NameRef {
                name: name.to_string(),
                span: v.span.clone(),
                path: p.clone(),
            });
            Op::Unlock(name.to_string())
        }
        "signal" => {
            let name = v.name(&p, "a semaphore name")?;
            refs.signals.insert(name.to_string());
            Op::Signal(name.to_string())
        }
        "wait" => {
            let name = v.name(&p, "a semaphore name")?;
            refs.waits.push(NameRef {
                name: name.to_string(),
                span: v.span.clone(),
                path: p.clone(),
            });
            Op::Wait(name.to_string())
        }
        "barrier" => {
            let name = v.name(&p, "a barrier name")?;
            refs.barriers.push(NameRef {
                name: name.to_string(),
                span: v.span.clone(),
                path: p.clone(),
            });
            Op::Barrier(name.to_string())
        }
        "sporadic" => sporadic(v, &p, refs)?,
        "yield" => {
            if !v.bool(&p)? {
                return Err(Fail::new(
                    &v.span,
                    &p,
                    "`yield = false` does nothing: expected `yield = true`",
                ));
            }
            Op::Yield
        }
        "call" => {
            let t = v.table(
                &p,
                "a table: { stop = \"server.compute\", via = \"train\" }",
            )?;
            t.only(&["stop", "via"])?;
            let stop_node = t.require("stop", "the stop to call, as \"domain.stop\"")?;
            let stop_path = t.key_path("stop");
            let full = stop_node.str(&stop_path, "a stop as \"domain.stop\"")?;
            let Some((domain, stop)) = full
                .split_once('.')
                .filter(|(d, s)| !d.is_empty() && !s.is_empty() && !s.contains('.'))
            else {
                return Err(Fail::new(
                    &stop_node.span,
                    &stop_path,
                    format!(
                        "`{full}` is not a stop: expected \"domain.stop\", e.g. \"server.compute\""
                    ),
                ));
            };
            let via = match t.get("via") {
                None => Via::Train,
                Some(n) => match n.str(&t.key_path("via"), "\"train\" or \"rpc\"")? {
                    "train" => Via::Train,
                    "rpc" => Via::Rpc,
                    other => {
                        return Err(Fail::new(
                            &n.span,
                            &t.key_path("via"),
                            format!(
                                "unknown call mechanism `{other}`: expected \"train\" or \"rpc\""
                            ),
                        ))
                    }
                },
            };
            refs.calls.push(NameRef {
                name: full.to_string(),
                span: stop_node.span.clone(),
                path: stop_path,
            });
            Op::Call {
                domain: domain.to_string(),
                stop: stop.to_string(),
                via,
            }
        }
        "serve" => {
            let name = v.name(&p, "the domain whose RPC requests this thread serves")?;
            refs.serves.push(NameRef {
                name: name.to_string(),
                span: v.span.clone(),
                path: p.clone(),
            });
            Op::Serve(name.to_string())
        }
        "kill" => {
            let name = v.name(&p, "the name of a domain to kill")?;
            refs.kills.push(NameRef {
                name: name.to_string(),
                span: v.span.clone(),
                path: p.clone(),
            });
            Op::Kill(name.to_string())
        }
        "create" => {
            let name = v.name(&p, "the name of a declared domain to start")?;
            refs.creates.push(NameRef {
                name: name.to_string(),
                span: v.span.clone(),
                path: p.clone(),
            });
            Op::Create(name.to_string())
        }
        "exit" => {
            if !v.bool(&p)? {
                return Err(Fail::new(
                    &v.span,
                    &p,
                    "`exit = false` does nothing: expected `exit = true`",
                ));
            }
            Op::Exit
        }
        "periodic" => periodic(v, &p, refs)?,
        "frames" => frames(v, &p, refs)?,
        "loop" => {
            let t = v.table(&p, "a table: { count = 10, body = [ ... ] }")?;
            t.only(&["count", "body"])?;
            let count = match t.get("count") {
                Some(n) => Some(n.count(&t.key_path("count"))?),
                None => None,
            };
            let body_node = t.require("body", "the operations to repeat")?;
            let body = ops(body_node, &t.key_path("body"), refs)?;
            if count.is_none() && !takes_time(&body) {
                return Err(Fail::new(
                    &body_node.span,
                    &t.key_path("body"),
                    "a loop without `count` repeats forever, so its body must take time: expected a `run`, `spin`, `sleep` or `fault` that can last more than zero, a `periodic`, or a `randres` or `constraints` that can take time",
                ));
            }
            Op::Loop { count, body }
        }
        "msg" => {
            let t = v.table(
                &p,
                "a table: { to = \"parent\", name = \"warp\", args = { ... } }",
            )?;
            t.only(&["to", "name", "args"])?;
            let to = match t.get("to") {
                None => Target::Parent,
                Some(n) => {
                    let path = t.key_path("to");
                    match n.name(&path, "\"parent\" or a scheduler name")? {
                        "parent" => Target::Parent,
                        other => {
                            refs.targets.push(NameRef {
                                name: other.to_string(),
                                span: n.span.clone(),
                                path,
                            });
                            Target::Named(other.to_string())
                        }
                    }
                }
            };
            Op::Msg {
                to,
                msg: message(&t)?,
            }
        }
        other => {
            return Err(Fail::new(
                &entry.key_span,
                &p,
                format!(
                    "unknown operation `{other}`{}",
                    did_you_mean(other, OP_KEYS.iter().copied())
                ),
            )
            .help(format!("operations: {}", OP_KEYS.join(", "))))
        }
    })
}

fn periodic(v: &Node, p: &str, refs: &mut Refs) -> Result<Op, Fail> {
    let t = v.table(
        p,
        "a table: { period = \"10ms\", deadline = \"10ms\", body = [ ... ] }",
    )?;
    t.only(&["period", "deadline", "offset", "jobs", "body", "run"])?;
    let period = t
        .require("period", "the time between releases, e.g. \"10ms\"")?
        .positive_duration(&t.key_path("period"))?;
    let deadline = match t.get("deadline") {
        Some(n) => n.positive_duration(&t.key_path("deadline"))?,
        None => period,
    };
    let offset = match t.get("offset") {
        Some(n) => n.duration(&t.key_path("offset"))?,
        None => Duration::ZERO,
    };
    let jobs = match t.get("jobs") {
        Some(n) => Some(n.count(&t.key_path("jobs"))?),
        None => None,
    };
    // `run` is shorthand for the classic periodic task: one job = one burst
    // of CPU time.
    let body = body_or_run(&t, p, refs, "each job", "2ms")?;
    Ok(Op::Periodic {
        period,
        deadline,
        offset,
        jobs,
        body,
    })
}

/// Jobs released by a semaphore's signals.
fn sporadic(v: &Node, p: &str, refs: &mut Refs) -> Result<Op, Fail> {
    let t = v.table(
        p,
        "a table: { on = \"go\", deadline = \"7ms\", run = \"2500us\" } or { on = \"go\", deadline = \"7ms\", body = [ ... ] }",
    )?;
    t.only(&["on", "deadline", "jobs", "body", "run"])?;
    let on_node = t.require("on", "the semaphore whose signals release the jobs")?;
    let on = on_node.name(&t.key_path("on"), "a semaphore name")?;
    refs.waits.push(NameRef {
        name: on.to_string(),
        span: on_node.span.clone(),
        path: t.key_path("on"),
    });
    let deadline = t
        .require(
            "deadline",
            "how long after its signal a job is due, e.g. \"7ms\"",
        )?
        .positive_duration(&t.key_path("deadline"))?;
    let jobs = match t.get("jobs") {
        Some(n) => Some(n.count(&t.key_path("jobs"))?),
        None => None,
    };
    let body = body_or_run(&t, p, refs, "each job", "2ms")?;
    if jobs.is_none() && !takes_time(&body) {
        return Err(Fail::new(
            t.span,
            p,
            "sporadic jobs without `jobs` repeat forever, so each job must take time: expected a `run`, `spin`, `sleep` or `fault` that can last more than zero",
        ));
    }
    Ok(Op::Sporadic {
        on: on.to_string(),
        deadline,
        jobs,
        body,
    })
}

/// What each repetition does: `body = [ ... ]`, or `run = D` as shorthand
/// for `body = [ { run = D } ]`.
fn body_or_run(
    t: &crate::typed::Table,
    p: &str,
    refs: &mut Refs,
    each: &str,
    example: &str,
) -> Result<Vec<Op>, Fail> {
    match (t.get("body"), t.get("run")) {
        (Some(b), None) => ops(b, &t.key_path("body"), refs),
        (None, Some(r)) => Ok(vec![Op::Run(dist(r, &t.key_path("run"))?)]),
        (Some(_), Some(r)) => Err(Fail::new(
            &r.span,
            &t.key_path("run"),
            "give either `body` or `run` (shorthand for body = [ { run = ... } ]), not both",
        )),
        (None, None) => Err(Fail::new(
            t.span,
            p,
            format!(
                "missing key `body` (what {each} does, e.g. [ {{ run = \"{example}\" }} ]) or `run` (its CPU time)"
            ),
        )),
    }
}

/// A free-running frame loop with a maximum gap between frames.
fn frames(v: &Node, p: &str, refs: &mut Refs) -> Result<Op, Fail> {
    let t = v.table(
        p,
        "a table: { max_gap = \"33ms\", run = \"10ms\" } or { max_gap = \"33ms\", body = [ ... ] }",
    )?;
    t.only(&["max_gap", "count", "body", "run"])?;
    let max_gap = t
        .require(
            "max_gap",
            "the longest gap allowed between frames, e.g. \"33ms\"",
        )?
        .positive_duration(&t.key_path("max_gap"))?;
    let count = match t.get("count") {
        Some(n) => Some(n.count(&t.key_path("count"))?),
        None => None,
    };
    let body = body_or_run(&t, p, refs, "each frame", "10ms")?;
    if count.is_none() && !takes_time(&body) {
        return Err(Fail::new(
            t.span,
            p,
            "frames without `count` repeat forever, so a frame must take time: expected a `run`, `spin`, `sleep` or `fault` that can last more than zero",
        ));
    }
    Ok(Op::Frames {
        max_gap,
        count,
        body,
    })
}

const RANDRES_KEYS: &[&str] = &[
    "spacing",
    "need",
    "error",
    "mode",
    "fussiness",
    "reserve",
    "count",
];

const RANDRES_HELP: &str = "e.g. { randres = { spacing = [\"260ms\", \"340ms\"], need = [\"60ms\", \"120ms\"], error = \"10ms\", mode = \"mixed\", fussiness = \"0.54\", reserve = true } }";

const MODES: &[&str] = &["over", "under", "mixed"];

/// The BVT paper's `randres` test program (§5.1).
fn randres(v: &Node, p: &str) -> Result<Randres, Fail> {
    let t = v
        .table(
            p,
            "a table: { spacing = [\"260ms\", \"340ms\"], need = [\"60ms\", \"120ms\"], ... }",
        )
        .map_err(|e| e.help(RANDRES_HELP))?;
    t.only(RANDRES_KEYS)?;
    let spacing_node = t
        .require(
            "spacing",
            "the time between deadlines, e.g. [\"260ms\", \"340ms\"]",
        )
        .map_err(|e| e.help(RANDRES_HELP))?;
    let spacing = range(spacing_node, &t.key_path("spacing"))?;
    if dist_max(&spacing).is_zero() {
        return Err(Fail::new(
            &spacing_node.span,
            &t.key_path("spacing"),
            "deadlines must move forward: expected a spacing that can be more than zero",
        ));
    }
    let need = range(
        t.require(
            "need",
            "the actual CPU need per deadline, e.g. [\"60ms\", \"120ms\"]",
        )
        .map_err(|e| e.help(RANDRES_HELP))?,
        &t.key_path("need"),
    )?;
    let error = match t.get("error") {
        Some(n) => n.duration(&t.key_path("error"))?,
        None => Duration::ZERO,
    };
    let mode = match t.get("mode") {
        None => ErrorMode::Mixed,
        Some(n) => {
            let path = t.key_path("mode");
            let what = "\"over\", \"under\" or \"mixed\"";
            match n.str(&path, what)? {
                "over" => ErrorMode::Over,
                "under" => ErrorMode::Under,
                "mixed" => ErrorMode::Mixed,
                other => {
                    return Err(Fail::new(
                        &n.span,
                        &path,
                        format!(
                            "unknown mode `{other}` (expected {what}){}",
                            did_you_mean(other, MODES.iter().copied())
                        ),
                    )
                    .help("over: the reservation asks for more than the need (e >= 0); under: less (e <= 0); mixed: either, by a fair coin"))
                }
            }
        }
    };
    let fussiness = match t.get("fussiness") {
        Some(n) => fussiness(n, &t.key_path("fussiness"))?,
        None => 0,
    };
    let reserve = match t.get("reserve") {
        Some(n) => n.bool(&t.key_path("reserve"))?,
        None => false,
    };
    let count = match t.get("count") {
        Some(n) => Some(n.count(&t.key_path("count"))?),
        None => None,
    };
    Ok(Randres {
        spacing,
        need,
        error,
        mode,
        fussiness,
        reserve,
        count,
    })
}

const CONSTRAINTS_KEYS: &[&str] = &["immediate", "start", "window", "work", "gap", "count"];

const CONSTRAINTS_HELP: &str = "every key has a default (the paper's test is { constraints = {} }), e.g. { constraints = { immediate = \"0.5\", start = [\"0s\", \"1s\"], window = [\"1ms\", \"1s\"], work = [\"0.5\", \"1\"], gap = \"0s\", count = 100 } }";

const IMMEDIATE: Decimal<'static> = Decimal {
    what: "a probability in [0, 1] as a string, e.g. \"0.5\"",
    help: "the fraction of constraints that start as soon as they are issued (paper: half); written as a string with at most 3 decimal places so that it is exact (no floats)",
    example: "immediate = \"0.5\"",
    max: ConstraintLoad::SCALE,
};

const WORK: Decimal<'static> = Decimal {
    what: "a fraction of the estimate as a string, at most \"100\", e.g. \"0.5\"",
    help: "the work done is the estimate times a fraction drawn from [lo, hi] (paper: [\"0.5\", \"1\"]); above 1 a constraint overruns its estimate; written as strings with at most 3 decimal places so that they are exact (no floats)",
    example: "work = [\"0.5\", \"1\"]",
    max: ConstraintLoad::WORK_MAX,
};

/// The Rialto paper's constraint stress test (§5.4).
fn constraints(v: &Node, p: &str) -> Result<ConstraintLoad, Fail> {
    let t = v
        .table(
            p,
            "a table: { immediate = \"0.5\", window = [\"1ms\", \"1s\"], ... }",
        )
        .map_err(|e| e.help(CONSTRAINTS_HELP))?;
    t.only(CONSTRAINTS_KEYS)?;
    let paper = ConstraintLoad::default();
    let immediate = match t.get("immediate") {
        Some(n) => thousandths(n, &t.key_path("immediate"), &IMMEDIATE)?,
        None => paper.immediate,
    };
    let start = match t.get("start") {
        Some(n) => range(n, &t.key_path("start"))?,
        None => paper.start,
    };
    let window = match t.get("window") {
        Some(n) => {
            let window = range(n, &t.key_path("window"))?;
            if dist_max(&window).is_zero() {
                return Err(Fail::new(
                    &n.span,
                    &t.key_path("window"),
                    "a deadline comes after its start: expected a window that can be more than zero",
                ));
            }
            window
        }
        None => paper.window,
    };
    let work = match t.get("work") {
        Some(n) => work(n, &t.key_path("work"))?,
        None => paper.work,
    };
    let gap = match t.get("gap") {
        Some(n) => range(n, &t.key_path("gap"))?,
        None => paper.gap,
    };
    let count = match t.get("count") {
        Some(n) => Some(n.count(&t.key_path("count"))?),
        None => None,
    };
    let c = ConstraintLoad {
        immediate,
        start,
        window,
        work,
        gap,
        count,
    };
    // Without `count` it repeats until the horizon, which it never reaches
    // if no iteration can take time.
    if count.is_none() && !constraint_takes_time(&c) {
        return Err(Fail::new(
            &v.span,
            p,
            "without `count` it repeats until the horizon, so a constraint must be able to take time: expected a `start` (with `immediate` below 1), a `work` or a `gap` that can be more than zero",
        )
        .help(CONSTRAINTS_HELP));
    }
    Ok(c)
}

/// `work`: a pair `[lo, hi]` of fractions of the estimate, or one fraction.
fn work(node: &Node, path: &str) -> Result<[u32; 2], Fail> {
    let Kind::Array(a) = &node.kind else {
        let f = thousandths(node, path, &WORK)?;
        return Ok([f, f]);
    };
    let what = "two fractions [lo, hi] of the estimate, e.g. [\"0.5\", \"1\"]";
    let [lo, hi] = a.as_slice() else {
        return Err(Fail::new(
            &node.span,
            path,
            format!("expected {what}, found {} element(s)", a.len()),
        )
        .help("or one fraction (\"0.75\"): every constraint then does that much"));
    };
    let min = thousandths(lo, &index_path(path, 0), &WORK)?;
    let max = thousandths(hi, &index_path(path, 1), &WORK)?;
    if min > max {
        return Err(Fail::new(
            &hi.span,
            &index_path(path, 1),
            format!(
                "max {} is below min {}: expected [min, max] with min <= max",
                decimal_text(max),
                decimal_text(min)
            ),
        ));
    }
    Ok([min, max])
}

/// Whether an iteration of `c` can make time pass: a start after the issue,
/// some work (the window drawn as 0 counts as 1ns), or a gap.
fn constraint_takes_time(c: &ConstraintLoad) -> bool {
    let start = c.immediate < ConstraintLoad::SCALE && !dist_max(&c.start).is_zero();
    let window = dist_max(&c.window).max(Duration(1));
    let work = !ConstraintLoad::work_for(window, c.work[1]).is_zero();
    start || work || !dist_max(&c.gap).is_zero()
}

/// A pair `[min, max]` (uniform, the paper's form), a fixed duration, or a
/// distribution table.
fn range(node: &Node, path: &str) -> Result<Dist, Fail> {
    let Kind::Array(a) = &node.kind else {
        return dist(node, path);
    };
    let what = "two durations [min, max], e.g. [\"260ms\", \"340ms\"]";
    let [lo, hi] = a.as_slice() else {
        return Err(Fail::new(
            &node.span,
            path,
            format!("expected {what}, found {} element(s)", a.len()),
        )
        .help("or one duration (\"300ms\"), or a distribution table"));
    };
    let min = lo.duration(&index_path(path, 0))?;
    let max = hi.duration(&index_path(path, 1))?;
    if min > max {
        return Err(Fail::new(
            &hi.span,
            &index_path(path, 1),
            format!("max {max} is below min {min}: expected [min, max] with min <= max"),
        ));
    }
    Ok(Dist::Uniform { min, max })
}

/// The paper's `f` in `[0, 1)` as thousandths: a string holding a decimal
/// with at most three places (`"0.54"` is 540), or the integer 0.
fn fussiness(node: &Node, path: &str) -> Result<u32, Fail> {
    thousandths(
        node,
        path,
        &Decimal {
            what: "a decimal in [0, 1) as a string, e.g. \"0.54\"",
            help: "the paper's f: 0 runs anywhere between deadlines, closer to 1 only just before the deadline; written as a string with at most 3 decimal places so that it is exact (no floats)",
            example: "fussiness = \"0.54\"",
            max: Randres::FUSSINESS_SCALE - 1,
        },
    )
}

/// How an exact decimal key is described in its errors, and its largest
/// value in thousandths.
struct Decimal<'a> {
    what: &'a str,
    help: &'a str,
    /// The key written right, for the no-floats hint.
    example: &'a str,
    max: u32,
}

/// A decimal kept exactly, as thousandths: a string with at most three
/// decimal places (`"0.54"` is 540) or a whole integer (`1` is 1000), at
/// most `d.max`. Floats are refused so that no value depends on rounding.
fn thousandths(node: &Node, path: &str, d: &Decimal<'_>) -> Result<u32, Fail> {
    let s = match &node.kind {
        Kind::Str(s) => s.trim(),
        Kind::Int(i) => {
            return u32::try_from(*i)
                .ok()
                .and_then(|i| i.checked_mul(1000))
                .filter(|v| *v <= d.max)
                .ok_or_else(|| {
                    Fail::new(
                        &node.span,
                        path,
                        format!("{i} is out of range: expected {}", d.what),
                    )
                    .help(d.help)
                })
        }
        Kind::Float(_) => {
            return Err(Fail::new(
                &node.span,
                path,
                format!("expected {}, found a float", d.what),
            )
            .help(format!(
                "no floats: write the number in quotes, e.g. {}",
                d.example
            )))
        }
        _ => {
            return Err(Fail::new(
                &node.span,
                path,
                format!("expected {}, found {}", d.what, node.type_name()),
            )
            .help(d.help))
        }
    };
    let bad = |msg: String| Fail::new(&node.span, path, msg).help(d.help);
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |x: &str| x.chars().all(|c| c.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return Err(bad(format!(
            "`{s}` is not a decimal number: expected {}",
            d.what
        )));
    }
    if frac.len() > 3 {
        return Err(bad(format!(
            "`{s}` has more than 3 decimal places: expected thousandths at most, e.g. \"0.545\""
        )));
    }
    // "0.54" -> 540: the fraction padded to three places.
    let frac = frac
        .bytes()
        .chain(*b"000")
        .take(3)
        .fold(0, |acc, c| acc * 10 + u32::from(c - b'0'));
    let whole = if int.is_empty() {
        Some(0)
    } else {
        int.parse::<u32>().ok()
    };
    whole
        .and_then(|w| w.checked_mul(1000))
        .and_then(|w| w.checked_add(frac))
        .filter(|v| *v <= d.max)
        .ok_or_else(|| bad(format!("`{s}` is out of range: expected {}", d.what)))
}

/// Thousandths written back as the shortest decimal (`500` is `0.5`).
fn decimal_text(v: u32) -> String {
    let (whole, frac) = (v / 1000, v % 1000);
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{frac:03}")
            .trim_end_matches('0')
            .to_string()
    }
}

/// `name` and `args` of a message (in a program or the script).
pub(crate) fn message(t: &crate::typed::Table<'_>) -> Result<Msg, Fail> {
    let name = t
        .require("name", "the message name, e.g. \"warp\"")?
        .name(&t.key_path("name"), "a message name")?;
    let mut msg = Msg::new(name);
    if let Some(a) = t.get("args") {
        let args = a.table(
            &t.key_path("args"),
            "a table of arguments, e.g. { on = true }",
        )?;
        msg.args = msg_args(args.params()?);
    }
    Ok(msg)
}

/// Message arguments have no declaration to resolve against, so a string
/// that reads as a duration with a unit is taken as a duration (what a policy
/// reading `args.duration(..)` expects); other strings stay strings.
fn msg_args(raw: Vec<RawParam>) -> Params {
    let mut out = Params::new();
    for p in raw {
        let v = match p.value {
            Value::Str(s) if s.chars().any(|c| c.is_alphabetic()) => match Duration::parse(&s) {
                Ok(d) => Value::Duration(d),
                Err(_) => Value::Str(s),
            },
            v => v,
        };
        out.set(&p.key, v);
    }
    out
}

/// A fixed duration or a distribution.
pub(crate) fn dist(node: &Node, path: &str) -> Result<Dist, Fail> {
    let t = match &node.kind {
        Kind::Table(_) => node.table(path, "")?,
        // A malformed duration string gets the units hint from `duration`.
        Kind::Str(_) | Kind::Int(_) => return Ok(Dist::Fixed(node.duration(path)?)),
        _ => {
            return Err(Fail::new(
                &node.span,
                path,
                format!(
                    "expected a duration (\"5ms\", or integer nanoseconds) or a distribution table, found {}",
                    node.type_name()
                ),
            )
            .help(DIST_HELP))
        }
    };
    let kinds: Vec<&str> = ["uniform", "exponential", "normal"]
        .into_iter()
        .filter(|k| t.get(k).is_some())
        .collect();
    let kind = match kinds.as_slice() {
        [k] => *k,
        [] => {
            let msg = match t.entries.first() {
                Some(e) => format!(
                    "unknown distribution `{}`{}",
                    e.key,
                    did_you_mean(&e.key, ["uniform", "exponential", "normal"])
                ),
                None => "empty distribution".to_string(),
            };
            let span = t.entries.first().map_or(&node.span, |e| &e.key_span);
            return Err(Fail::new(span, path, msg).help(DIST_HELP));
        }
        [a, b, ..] => {
            return Err(Fail::new(
                &node.span,
                path,
                format!("a distribution has one kind, found `{a}` and `{b}`"),
            )
            .help(DIST_HELP))
        }
    };
    let kp = |k: &str| t.key_path(k);
    let opt = |k: &str, default: Duration| -> Result<Duration, Fail> {
        t.get(k).map_or(Ok(default), |n| n.duration(&kp(k)))
    };
    let ordered = |lo: (Duration, &str), hi: (Duration, &str)| -> Result<(), Fail> {
        if lo.0 > hi.0 {
            let span = t.get(hi.1).map_or(&node.span, |n| &n.span);
            return Err(Fail::new(
                span,
                &kp(hi.1),
                format!(
                    "`{}` = {} is below `{}` = {}: expected {} <= {}",
                    hi.1, hi.0, lo.1, lo.0, lo.1, hi.1
                ),
            ));
        }
        Ok(())
    };
    match kind {
        "uniform" => {
            t.only(&["uniform"]).map_err(|e| e.help(DIST_HELP))?;
            let n = t.get("uniform").unwrap_or(node);
            let what = "two durations [min, max], e.g. [\"1ms\", \"3ms\"]";
            let a = n.array(&kp("uniform"), what)?;
            let [lo, hi] = a else {
                return Err(Fail::new(
                    &n.span,
                    &kp("uniform"),
                    format!("expected {what}, found {} element(s)", a.len()),
                ));
            };
            let (min, max) = (
                lo.duration(&index_path(&kp("uniform"), 0))?,
                hi.duration(&index_path(&kp("uniform"), 1))?,
            );
            if min > max {
                return Err(Fail::new(
                    &hi.span,
                    &index_path(&kp("uniform"), 1),
                    format!("max {max} is below min {min}: expected [min, max] with min <= max"),
                ));
            }
            Ok(Dist::Uniform { min, max })
        }
        "exponential" => {
            t.only(&["exponential", "max"])
                .map_err(|e| e.help(DIST_HELP))?;
            let mean = t
                .get("exponential")
                .unwrap_or(node)
                .positive_duration(&kp("exponential"))?;
            let max = opt("max", Duration::MAX)?;
            ordered((mean, "exponential"), (max, "max"))?;
            Ok(Dist::Exponential { mean, max })
        }
        _ => {
            t.only(&["normal", "sd", "min", "max"])
                .map_err(|e| e.help(DIST_HELP))?;
            let mean = t.get("normal").unwrap_or(node).duration(&kp("normal"))?;
            let sd = t
                .require("sd", "the standard deviation, e.g. sd = \"1ms\"")?
                .duration(&kp("sd"))?;
            let min = opt("min", Duration::ZERO)?;
            let max = opt("max", Duration::MAX)?;
            ordered((min, "min"), (mean, "normal"))?;
            ordered((mean, "normal"), (max, "max"))?;
            Ok(Dist::Normal { mean, sd, min, max })
        }
    }
}

/// Whether running `ops` can make time pass (so repeating it forever does
/// not freeze the clock).
pub(crate) fn takes_time(ops: &[Op]) -> bool {
    ops.iter().any(|op| match op {
        Op::Run(d) | Op::Spin(d) | Op::Sleep(d) | Op::Fault(d) => dist_max(d) > Duration::ZERO,
        // Between two releases a period passes; a single job waits only
        // for its offset, and no job at all for nothing.
        Op::Periodic {
            jobs, offset, body, ..
        } => match jobs {
            Some(0) => false,
            Some(1) => *offset > Duration::ZERO || takes_time(body),
            _ => true,
        },
        // Its spacing can be more than zero (checked), so deadlines advance.
        Op::Randres(r) => r.count != Some(0),
        Op::Constraints(c) => c.count != Some(0) && constraint_takes_time(c),
        Op::Loop { count, body } => *count != Some(0) && takes_time(body),
        Op::Frames { count, body, .. } => *count != Some(0) && takes_time(body),
        // A call to a dead domain returns at once; `serve` blocks but
        // never makes the clock pass by itself.
        Op::Sporadic { jobs, body, .. } => *jobs != Some(0) && takes_time(body),
        // A wait can be let through at once by a signal given at the same
        // instant.
        Op::Lock(_)
        | Op::Unlock(_)
        | Op::Signal(_)
        | Op::Wait(_)
        | Op::Barrier(_)
        | Op::Msg { .. }
        | Op::Yield
        | Op::Call { .. }
        | Op::Serve(_)
        | Op::Kill(_)
        | Op::Create(_)
        | Op::Exit => false,
    })
}

pub(crate) fn dist_max(d: &Dist) -> Duration {
    match d {
        Dist::Fixed(d) => *d,
        Dist::Uniform { max, .. } | Dist::Exponential { max, .. } | Dist::Normal { max, .. } => {
            *max
        }
    }
}
