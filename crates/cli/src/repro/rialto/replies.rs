//! The time constraints a scenario's threads ask for (`begin_constraint`)
//! and the replies the run logs: what was assigned, found or refused.

use hsched_core::Duration;
use hsched_model::{LogEntry, LogKind, Op, RunResult, Scenario};

/// The reply to `thread`'s first `begin_constraint`.
pub(super) fn begin_reply<'a>(r: &'a RunResult, thread: &str) -> Result<&'a LogEntry, String> {
    let prefix = format!("`{thread}` -> ");
    r.log
        .iter()
        .find(|e| e.text.starts_with(&prefix) && e.text.contains(" begin_constraint("))
        .ok_or_else(|| format!("no begin_constraint reply for {thread} in the log"))
}

/// The `assigned="244ms-248ms 257ms-258ms"` of an accepted constraint, ns.
pub(super) fn assigned(text: &str) -> Result<Vec<(u64, u64)>, String> {
    let list = text
        .split_once("assigned=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(list, _)| list)
        .ok_or_else(|| format!("no `assigned` in `{text}`"))?;
    list.split_whitespace()
        .map(|piece| {
            let (a, b) = piece
                .split_once('-')
                .ok_or_else(|| format!("`{piece}` is not START-END"))?;
            Ok((
                Duration::parse(a)?.as_nanos(),
                Duration::parse(b)?.as_nanos(),
            ))
        })
        .collect()
}

/// The `only X of Y` of a refused constraint, ns.
pub(super) fn found(text: &str) -> Result<u64, String> {
    let x = text
        .split_once("only ")
        .and_then(|(_, rest)| rest.split_once(" of "))
        .map(|(x, _)| x)
        .ok_or_else(|| format!("no `only X of Y` in `{text}`"))?;
    Ok(Duration::parse(x)?.as_nanos())
}

/// Every reply of `thread` to a message `name` (`begin_constraint`,
/// `end_constraint`), accepted or refused, in the order sent.
pub(super) fn replies<'a>(r: &'a RunResult, thread: &str, name: &str) -> Vec<&'a LogEntry> {
    let prefix = format!("`{thread}` -> ");
    let call = format!(" {name}");
    r.log
        .iter()
        .filter(|e| {
            matches!(e.kind, LogKind::Reply | LogKind::Refused)
                && e.text.starts_with(&prefix)
                && e.text.contains(&call)
        })
        .collect()
}

/// The value of `key` in an accepted reply (`ok: id=0, start=230ms, ...`).
pub(super) fn reply_field<'a>(entry: &'a LogEntry, key: &str) -> Result<&'a str, String> {
    let text = &entry.text;
    let body = text
        .split_once(": ok: ")
        .map(|(_, b)| b)
        .ok_or_else(|| format!("`{text}` is not an accepted reply"))?;
    body.split(", ")
        .find_map(|part| part.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .map(|v| v.trim_matches('"'))
        .ok_or_else(|| format!("no `{key}` in `{text}`"))
}

/// A duration field of an accepted reply, ns.
pub(super) fn reply_ns(entry: &LogEntry, key: &str) -> Result<u64, String> {
    Ok(Duration::parse(reply_field(entry, key)?)?.as_nanos())
}

/// The `begin_constraint` messages `thread` sends, in program order.
pub(super) fn begins<'a>(
    scn: &'a Scenario,
    thread: &str,
) -> Result<Vec<&'a hsched_core::Msg>, String> {
    fn walk<'a>(ops: &'a [Op], out: &mut Vec<&'a hsched_core::Msg>) {
        for op in ops {
            match op {
                Op::Msg { msg, .. } if msg.name == "begin_constraint" => out.push(msg),
                Op::Loop { body, .. } | Op::Periodic { body, .. } => walk(body, out),
                _ => {}
            }
        }
    }
    let t = scn
        .threads
        .iter()
        .find(|t| t.name == thread)
        .ok_or_else(|| format!("the scenario has no thread `{thread}`"))?;
    let mut out = Vec::new();
    walk(&t.program.ops, &mut out);
    Ok(out)
}

/// What a `begin_constraint` asks: (start, estimate, deadline, critical),
/// ns; `start` is `None` when left to default to the present time.
pub(super) fn request(msg: &hsched_core::Msg) -> Result<(Option<u64>, u64, u64, bool), String> {
    let d = |k: &str| match msg.args.get(k) {
        Some(hsched_core::Value::Duration(d)) => Ok(Some(d.as_nanos())),
        None => Ok(None),
        _ => Err(format!("begin_constraint's `{k}` is not a duration")),
    };
    if matches!(
        msg.args.get("relative"),
        Some(hsched_core::Value::Bool(true))
    ) {
        return Err("the rule is applied to absolute start and deadline".into());
    }
    let critical = matches!(
        msg.args.get("critical"),
        Some(hsched_core::Value::Bool(true))
    );
    Ok((
        d("start")?,
        d("estimate")?.ok_or("begin_constraint without an estimate")?,
        d("deadline")?.ok_or("begin_constraint without a deadline")?,
        critical,
    ))
}

/// Time a request could be assigned: all of it if accepted, else what the
/// refusal says it found, ns.
pub(super) fn found_or_all(entry: &LogEntry, estimate: u64) -> Result<u64, String> {
    if entry.kind == LogKind::Reply {
        Ok(estimate)
    } else {
        found(&entry.text)
    }
}
