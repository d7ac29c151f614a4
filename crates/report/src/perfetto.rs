//! The timeline as Chrome trace-event JSON, for the Perfetto UI
//! (ui.perfetto.dev) and chrome://tracing.
//!
//! Layout of the trace:
//! - process **CPUs** (pid 1): one track per CPU, labelled `cpu0`, `cpu1`, ...
//!   (tid = CPU index + 1). Each run segment is a complete event (`"ph":"X"`)
//!   named after the thread; each context-switch segment is one named
//!   `switch` (its `args.next` names the thread switched to). Idle time is
//!   left empty. A counter `cpuN busy` is 1 while the CPU runs or switches and
//!   0 while it idles, sampled only when it changes.
//! - process **Threads** (pid 2): one track per thread (tid = number of CPU
//!   tracks + 1 + thread id, so no tid is shared with a CPU track; Perfetto
//!   keys threads by tid). Instant events mark wakeups, job releases and
//!   deadline misses (`deadline miss <thread> job N`). A counter
//!   `<thread> cpu_ms` is the thread's cumulative CPU time in milliseconds,
//!   sampled at the ends of its run segments, at most
//!   [`MAX_CPU_TIME_SAMPLES`] samples per thread.
//! - scheduler ejections are global instants (`"s":"g"`), drawn across all
//!   tracks, named `eject <scheduler>`.
//!
//! Times: the format counts microseconds, so `ts` and `dur` are written as
//! exact decimals of the integer nanoseconds (`12.345` for 12 345 ns), never
//! through a float. One event per line, in time order (ties keep the order of
//! the input), metadata first: identical input gives identical bytes.
//!
//! Compatibility choices: no `displayTimeUnit` (Perfetto reads `"ns"` there as
//! a change of the unit of `ts`); `traceEvents` is the first key (Perfetto's
//! streaming reader stops at a key it does not know); strings never contain
//! `\u` escapes (older Perfetto readers reject them), so control characters in
//! names are written as U+FFFD.

use crate::names::ThreadNames;
use crate::ReportError;
use hsched_core::{CpuId, ThreadId};
use hsched_model::{MarkKind, RunResult, Segment, SegmentKind};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

/// Upper bound on cumulative-CPU-time counter samples per thread, so a long
/// run gives a trace the UI can still load; beyond it every k-th segment end
/// is sampled (and always the last).
pub const MAX_CPU_TIME_SAMPLES: usize = 1_000;

const CPUS_PID: u64 = 1;
const THREADS_PID: u64 = 2;

/// Writes the Perfetto/Chrome trace of `result` to `writer`. Fails with
/// [`ReportError::NoTrace`] if the run did not record its timeline.
pub fn perfetto_trace<W: Write>(result: &RunResult, mut writer: W) -> Result<(), ReportError> {
    let trace = result.trace.as_ref().ok_or(ReportError::NoTrace)?;
    let names = ThreadNames::new(result);

    // Tracks: every CPU of the machine, plus any CPU a segment names (a
    // defensive union, so a segment is never dropped for want of a track).
    let cpu_tracks: u64 = trace
        .segments
        .iter()
        .map(|s| u64::from(s.cpu.0) + 1)
        .chain([u64::from(result.cpus)])
        .max()
        .unwrap_or(0);
    let cpu_tid = |cpu: CpuId| u64::from(cpu.0) + 1;
    let thread_tid = |t: ThreadId| cpu_tracks + 1 + u64::from(t.0);

    let mut threads: BTreeSet<ThreadId> = names.ids().collect();
    for s in &trace.segments {
        if let SegmentKind::Run(t) | SegmentKind::Switch(t) = s.what {
            threads.insert(t);
        }
    }
    threads.extend(trace.marks.iter().filter_map(|m| m.thread));

    let mut meta: Vec<String> = Vec::new();
    let process = |pid: u64, tid: u64, name: &str, sort: u64| {
        [
            format!(
                r#"{{"name":"process_name","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":{}}}}}"#,
                json_str(name)
            ),
            format!(
                r#"{{"name":"process_sort_index","ph":"M","pid":{pid},"tid":{tid},"args":{{"sort_index":{sort}}}}}"#
            ),
        ]
    };
    let track = |pid: u64, tid: u64, name: &str, sort: u64| {
        [
            format!(
                r#"{{"name":"thread_name","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":{}}}}}"#,
                json_str(name)
            ),
            format!(
                r#"{{"name":"thread_sort_index","ph":"M","pid":{pid},"tid":{tid},"args":{{"sort_index":{sort}}}}}"#
            ),
        ]
    };
    // Process metadata is attached to the first track of the process so it
    // does not create a stray track of its own.
    meta.extend(process(CPUS_PID, 1, "CPUs", 0));
    for cpu in 0..cpu_tracks {
        meta.extend(track(CPUS_PID, cpu + 1, &format!("cpu{cpu}"), cpu));
    }
    let first_thread_tid = threads.first().map_or(cpu_tracks + 1, |&t| thread_tid(t));
    meta.extend(process(THREADS_PID, first_thread_tid, "Threads", 1));
    for &t in &threads {
        meta.extend(track(
            THREADS_PID,
            thread_tid(t),
            &names.name(t),
            u64::from(t.0),
        ));
    }

    // Timed events, collected with their time in ns and stably sorted by it.
    let mut timed: Vec<(u64, String)> = Vec::new();

    // Segments by CPU, each CPU's in time order (stable: ties keep input
    // order), for the busy counter.
    let mut by_cpu: BTreeMap<CpuId, Vec<&Segment>> = BTreeMap::new();
    for s in &trace.segments {
        by_cpu.entry(s.cpu).or_default().push(s);
    }
    for segs in by_cpu.values_mut() {
        segs.sort_by_key(|s| s.start);
    }

    for s in &trace.segments {
        let start = s.start.as_nanos();
        let dur = s.end.as_nanos().saturating_sub(start);
        let (name, cat, args) = match s.what {
            SegmentKind::Idle => continue,
            SegmentKind::Run(t) => (names.name(t), "run", format!(r#"{{"thread_id":{}}}"#, t.0)),
            SegmentKind::Interrupt => ("interrupt".to_string(), "interrupt", "{}".to_string()),
            SegmentKind::Switch(t) => (
                "switch".to_string(),
                "switch",
                format!(
                    r#"{{"next":{},"thread_id":{}}}"#,
                    json_str(&names.name(t)),
                    t.0
                ),
            ),
        };
        timed.push((
            start,
            format!(
                r#"{{"name":{},"cat":"{cat}","ph":"X","pid":{CPUS_PID},"tid":{},"ts":{},"dur":{},"args":{args}}}"#,
                json_str(&name),
                cpu_tid(s.cpu),
                micros(start),
                micros(dur),
            ),
        ));
    }

    // Busy counters: one sample per change of state.
    for (&cpu, segs) in &by_cpu {
        let mut last: Option<u8> = None;
        for s in segs {
            let busy = u8::from(s.what != SegmentKind::Idle);
            if last != Some(busy) {
                let ts = s.start.as_nanos();
                timed.push((
                    ts,
                    format!(
                        r#"{{"name":"{cpu}","ph":"C","pid":{CPUS_PID},"tid":{},"ts":{},"args":{{"busy":{busy}}}}}"#,
                        cpu_tid(cpu),
                        micros(ts)
                    ),
                ));
                last = Some(busy);
            }
        }
    }

    // Cumulative CPU time per thread, sampled at run-segment ends.
    let mut runs: BTreeMap<ThreadId, Vec<&Segment>> = BTreeMap::new();
    for s in &trace.segments {
        if let SegmentKind::Run(t) = s.what {
            runs.entry(t).or_default().push(s);
        }
    }
    for (&t, segs) in runs.iter_mut() {
        segs.sort_by_key(|s| s.end);
        let counter = |ts: u64, total_ns: u64| {
            format!(
                r#"{{"name":{},"ph":"C","pid":{THREADS_PID},"tid":{},"ts":{},"args":{{"cpu_ms":{}}}}}"#,
                json_str(&names.name(t)),
                thread_tid(t),
                micros(ts),
                decimal(total_ns, 6)
            )
        };
        // Start the line at zero so the plot rises from the origin.
        timed.push((0, counter(0, 0)));
        let every = segs.len().div_ceil(MAX_CPU_TIME_SAMPLES).max(1);
        let mut total: u64 = 0;
        for (i, s) in segs.iter().enumerate() {
            total = total.saturating_add(s.end.as_nanos().saturating_sub(s.start.as_nanos()));
            if (i + 1) % every == 0 || i + 1 == segs.len() {
                let ts = s.end.as_nanos();
                timed.push((ts, counter(ts, total)));
            }
        }
    }

    // Point events.
    for m in &trace.marks {
        let ts = m.at.as_nanos();
        let (name, args) = match (&m.kind, m.thread) {
            (MarkKind::Wakeup, _) => ("wakeup".to_string(), String::from("{}")),
            (MarkKind::Release { job }, _) => {
                (format!("release job {job}"), format!(r#"{{"job":{job}}}"#))
            }
            (MarkKind::DeadlineMiss { job }, Some(t)) => (
                format!("deadline miss {} job {job}", names.name(t)),
                format!(r#"{{"job":{job}}}"#),
            ),
            (MarkKind::DeadlineMiss { job }, None) => (
                format!("deadline miss job {job}"),
                format!(r#"{{"job":{job}}}"#),
            ),
            (MarkKind::Eject { scheduler }, _) => (
                format!("eject {scheduler}"),
                format!(r#"{{"scheduler":{}}}"#, json_str(scheduler)),
            ),
        };
        // Thread-scoped on the thread's track when the mark has one; an
        // ejection concerns the whole hierarchy, so it is global.
        let (pid, tid, scope) = match (&m.kind, m.thread) {
            (MarkKind::Eject { .. }, _) | (_, None) => (CPUS_PID, 1, "g"),
            (_, Some(t)) => (THREADS_PID, thread_tid(t), "t"),
        };
        timed.push((
            ts,
            format!(
                r#"{{"name":{},"ph":"i","s":"{scope}","pid":{pid},"tid":{tid},"ts":{},"args":{args}}}"#,
                json_str(&name),
                micros(ts)
            ),
        ));
    }

    timed.sort_by_key(|(ts, _)| *ts);

    writer.write_all(b"{\"traceEvents\":[\n")?;
    let mut first = true;
    for line in meta.iter().chain(timed.iter().map(|(_, l)| l)) {
        if !first {
            writer.write_all(b",\n")?;
        }
        first = false;
        writer.write_all(line.as_bytes())?;
    }
    // Run identity for whoever opens the file; wall time is left out so the
    // trace stays deterministic.
    write!(
        writer,
        "\n],\n\"otherData\":{{\"scenario\":{},\"platform\":{},\"seed\":\"{}\",\"cpus\":{},\"horizon_ns\":\"{}\"}}}}\n",
        json_str(&result.scenario),
        json_str(&result.platform),
        result.seed,
        result.cpus,
        result.horizon.as_nanos()
    )?;
    writer.flush()?;
    Ok(())
}

/// `ns` as microseconds, an exact decimal: `12345` -> `12.345`, `1000` -> `1`.
pub fn micros(ns: u64) -> String {
    decimal(ns, 3)
}

/// `value / 10^digits` written exactly, trailing zeros trimmed.
fn decimal(value: u64, digits: u32) -> String {
    let scale = 10u64.pow(digits);
    let (whole, frac) = (value / scale, value % scale);
    if frac == 0 {
        whole.to_string()
    } else {
        let frac = format!("{frac:0width$}", width = digits as usize);
        format!("{whole}.{}", frac.trim_end_matches('0'))
    }
}

/// A JSON string literal. Control characters become U+FFFD rather than
/// `\u` escapes (see the module comment); `"` and `\` are escaped.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_microseconds() {
        assert_eq!(micros(0), "0");
        assert_eq!(micros(1_000), "1");
        assert_eq!(micros(12_345), "12.345");
        assert_eq!(micros(1_000_250), "1000.25");
        assert_eq!(micros(7), "0.007");
        assert_eq!(micros(u64::MAX), "18446744073709551.615");
        assert_eq!(decimal(3_990_000, 6), "3.99");
    }

    #[test]
    fn strings_escape_without_unicode_escapes() {
        assert_eq!(json_str(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(json_str("x\ny\u{1}"), "\"x\u{FFFD}y\u{FFFD}\"");
        assert_eq!(json_str("µs"), "\"µs\"");
    }
}
