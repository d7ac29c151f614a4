//! End-to-end tests of every output on the hand-built run in `fixture`, whose
//! answers are worked out by hand there.

mod fixture;

use hsched_core::{CpuId, Duration, Instant, ThreadId};
use hsched_model::{CallCounts, Mark, MarkKind, RunResult, Segment, SegmentKind, Trace};
use hsched_report::{jobs_csv, metrics, metrics_json, perfetto_trace, summary, ReportError};
use proptest::prelude::*;
use serde_json::Value;

fn csv_of(r: &RunResult) -> String {
    let mut out = Vec::new();
    jobs_csv(r, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn trace_of(r: &RunResult) -> String {
    let mut out = Vec::new();
    perfetto_trace(r, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn events(text: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(text).expect("trace is JSON");
    v["traceEvents"]
        .as_array()
        .expect("traceEvents array")
        .clone()
}

// ---- metrics ----

#[test]
fn thread_metrics_have_the_hand_computed_values() {
    let m = metrics(&fixture::result());
    let video = &m.threads[0];
    assert_eq!(video.name, "video");
    assert_eq!(video.scheduler, "rt");
    assert_eq!(video.cpu_time_ns, 3_990_000);
    assert_eq!(video.share, Some(0.399));
    // Latencies 10000, 500, 3000, 7000: sorted 500 3000 7000 10000;
    // p50 = 2nd (ceil 2.0), p99 = 4th (ceil 3.96).
    assert_eq!(video.wakeup_latency.count, 4);
    assert_eq!(video.wakeup_latency.p50_ns, Some(3_000));
    assert_eq!(video.wakeup_latency.p99_ns, Some(10_000));
    assert_eq!(video.wakeup_latency.max_ns, Some(10_000));
    assert_eq!(video.jobs, 3);
    // Two finished jobs: responses 2ms and 3.0005ms.
    assert_eq!(video.job_response.count, 2);
    assert_eq!(video.job_response.p50_ns, Some(2_000_000));
    assert_eq!(video.job_response.p99_ns, Some(3_000_500));
    assert_eq!(video.job_response.max_ns, Some(3_000_500));
    // Job 1 finished late, job 2 is unfinished past its deadline.
    assert_eq!(video.deadline_misses, 2);
    assert_eq!(video.max_gap_ns, 10_000);
    assert_eq!(video.context_switches, 2);

    let audio = &m.threads[1];
    assert_eq!(audio.share, Some(0.1));
    assert_eq!(audio.wakeup_latency.p50_ns, Some(250));
    assert_eq!(audio.jobs, 3);
    assert_eq!(audio.job_response.p50_ns, Some(500_250));
    assert_eq!(audio.job_response.max_ns, Some(500_250));
    // Job 2's deadline (11ms) is after the horizon: not a miss.
    assert_eq!(audio.deadline_misses, 0);

    let batch = &m.threads[2];
    assert_eq!(batch.share, Some(0.548975));
    assert_eq!(batch.wakeup_latency.count, 0);
    assert_eq!(batch.wakeup_latency.p50_ns, None);
    assert_eq!(batch.jobs, 0);
    assert_eq!(batch.job_response.max_ns, None);
    assert_eq!(batch.migrations, 1);
}

#[test]
fn scheduler_and_global_metrics() {
    let m = metrics(&fixture::result());
    let names: Vec<_> = m.schedulers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["root", "rt", "ts", "rogue"]);
    // The root is fed by two CPUs: more than one CPU's worth.
    assert_eq!(m.schedulers[0].share, Some(1.047975));
    assert_eq!(m.schedulers[1].received_ns, 4_990_000);
    assert_eq!(m.schedulers[1].share, Some(0.499));
    assert!(!m.schedulers[3].alive);
    assert_eq!(m.schedulers[3].share, Some(0.0));

    let g = &m.global;
    assert_eq!(
        (g.scenario.as_str(), g.platform.as_str(), g.seed),
        ("demo", "sim", 7)
    );
    assert_eq!(
        (g.cpus, g.horizon_ns, g.decisions, g.events),
        (2, 10_000_000, 42, 100)
    );
    assert_eq!(g.busy_ns, 10_479_750);
    assert_eq!(g.overhead_ns, 21_000);
    assert_eq!(g.idle_ns, 9_499_250);
    assert_eq!(g.busy_ns + g.overhead_ns + g.idle_ns, 2 * g.horizon_ns);
    assert_eq!(g.idle_fraction, Some(0.4749625));
    // 100 events in 2ms of wall time.
    assert_eq!(g.events_per_wall_second, Some(50_000.0));
    assert_eq!((g.jobs, g.deadline_misses), (6, 2));
    assert_eq!(m.log.len(), 3);
}

#[test]
fn undefined_values_are_null_not_nan() {
    let mut r = fixture::result();
    r.wall_ns = 0;
    r.horizon = Duration::ZERO;
    let json: Value = serde_json::from_str(&metrics_json(&r)).unwrap();
    assert_eq!(json["global"]["events_per_wall_second"], Value::Null);
    assert_eq!(json["global"]["idle_fraction"], Value::Null);
    assert_eq!(json["threads"][0]["share"], Value::Null);
    assert_eq!(json["schedulers"][0]["share"], Value::Null);
    assert_eq!(json["threads"][2]["wakeup_latency"]["p99_ns"], Value::Null);
    // An empty result still gives valid JSON.
    let empty: Value = serde_json::from_str(&metrics_json(&RunResult::default())).unwrap();
    assert_eq!(empty["threads"], Value::Array(vec![]));
}

/// Keys of one JSON object, in the order they appear in `text` (serde_json's
/// `Value` sorts keys, so order is checked on the text).
fn assert_key_order(text: &str, keys: &[&str]) {
    let mut from = 0;
    for k in keys {
        let needle = format!("\"{k}\":");
        let at = text[from..]
            .find(&needle)
            .unwrap_or_else(|| panic!("key {k} missing or out of order"));
        from += at + needle.len();
    }
}

#[test]
fn json_keys_are_present_and_in_documented_order() {
    let text = metrics_json(&fixture::result());
    assert!(text.ends_with("}\n"));
    assert_key_order(
        &text,
        &[
            "format_version",
            "global",
            "scenario",
            "platform",
            "seed",
            "cpus",
            "horizon_ns",
            "decisions",
            "events",
            "wall_ns",
            "events_per_wall_second",
            "busy_ns",
            "overhead_ns",
            "idle_ns",
            "idle_fraction",
            "jobs",
            "deadline_misses",
            "threads",
            "id",
            "name",
            "scheduler",
            "cpu_time_ns",
            "share",
            "guarantee",
            "guaranteed_share",
            "wakeup_latency",
            "count",
            "p50_ns",
            "p99_ns",
            "max_ns",
            "jobs",
            "job_response",
            "count",
            "p50_ns",
            "p99_ns",
            "max_ns",
            "deadline_misses",
            "max_gap_ns",
            "context_switches",
            "migrations",
            "calls",
            "made",
            "ok",
            "broken_pipe",
            "server_exit",
            "caller_gone",
            "abandoned",
            "too_deep",
        ],
    );
    let sched_at = text.find("\"schedulers\":").unwrap();
    assert_key_order(
        &text[sched_at..],
        &[
            "schedulers",
            "name",
            "policy",
            "alive",
            "received_ns",
            "share",
            "guarantee",
            "guaranteed_share",
            "log",
            "at_ns",
            "kind",
            "text",
        ],
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["log"][2]["kind"], "eject");
    assert_eq!(v["log"][2]["at_ns"], 3_000_000);
    // Same input, same bytes.
    assert_eq!(text, metrics_json(&fixture::result()));
}

#[test]
fn guarantees_are_null_without_an_analysis_and_exact_with_one() {
    let v: Value = serde_json::from_str(&metrics_json(&fixture::result())).unwrap();
    for list in ["threads", "schedulers"] {
        for row in v[list].as_array().unwrap() {
            // Stable keys: present, null.
            assert_eq!(row.get("guarantee"), Some(&Value::Null), "{row}");
            assert_eq!(row.get("guaranteed_share"), Some(&Value::Null), "{row}");
        }
    }
    let v: Value = serde_json::from_str(&metrics_json(&fixture::labelled())).unwrap();
    let (threads, nodes) = (&v["threads"], &v["schedulers"]);
    assert_eq!(threads[0]["guarantee"], "RESBH 2, 5");
    assert_eq!(threads[0]["guaranteed_share"], 0.4);
    // NULL promises no share; `batch` has no label at all.
    assert_eq!(threads[1]["guarantee"], "NULL");
    assert_eq!(threads[1]["guaranteed_share"], Value::Null);
    assert_eq!(threads[2]["guarantee"], Value::Null);
    // Two VPs given ALL: two CPUs' worth, as `share` counts.
    assert_eq!(nodes[0]["guarantee"], "ALL ×2");
    assert_eq!(nodes[0]["guaranteed_share"], 2.0);
    assert_eq!(nodes[1]["guaranteed_share"], 0.5);
    assert_eq!(nodes[2]["guaranteed_share"], Value::Null);
    assert_eq!(nodes[3]["guarantee"], Value::Null);
}

#[test]
fn metrics_json_snapshot() {
    insta::assert_snapshot!("metrics_json", metrics_json(&fixture::result()));
}

// ---- CSV ----

#[test]
fn jobs_csv_rows_are_exact() {
    let expected = "\
thread,job,release_ns,start_ns,finish_ns,response_ns,deadline_ns,missed,lateness_ns,admitted
video,0,0,10000,2000000,2000000,5000000,false,-3000000,
audio,0,1000000,1000250,1500250,500250,3000000,false,-1499750,
video,1,5000000,6000500,8000500,3000500,8000000,true,500,
audio,1,5000000,5000250,5500250,500250,7000000,false,-1499750,
video,2,9500000,,,,9900000,true,,
audio,2,9000000,,,,11000000,false,,
";
    assert_eq!(csv_of(&fixture::result()), expected);
}

#[test]
fn jobs_csv_admitted_is_the_last_column() {
    let mut r = fixture::result();
    // Periodic jobs ask nothing (empty); a job whose request was accepted,
    // and one whose request was refused.
    r.jobs[1].admitted = Some(true);
    r.jobs[4].admitted = Some(false);
    let text = csv_of(&r);
    let lines: Vec<_> = text.lines().collect();
    assert!(lines[0].ends_with(",lateness_ns,admitted"), "{}", lines[0]);
    assert_eq!(
        lines[2],
        "audio,0,1000000,1000250,1500250,500250,3000000,false,-1499750,true"
    );
    assert_eq!(lines[5], "video,2,9500000,,,,9900000,true,,false");
    assert!(lines[1].ends_with(",-3000000,"), "{}", lines[1]);
    // Every row has as many cells as the header.
    let cells = |l: &str| l.split(',').count();
    assert!(lines
        .iter()
        .all(|l| cells(l) == hsched_report::csv_out::JOBS_CSV_HEADER.len()));
}

#[test]
fn jobs_csv_names_and_quoting() {
    let mut r = fixture::result();
    // A name with a comma is quoted; a thread missing from `threads` is
    // named from the trace; one unknown everywhere gets its id.
    r.threads[0].name = "video, hd".into();
    r.threads.remove(1);
    r.trace.as_mut().unwrap().thread_names[1] = "audio-from-trace".into();
    r.jobs[2].thread = ThreadId(9);
    let text = csv_of(&r);
    let lines: Vec<_> = text.lines().collect();
    assert!(lines[1].starts_with("\"video, hd\",0,"), "{}", lines[1]);
    assert!(lines[2].starts_with("audio-from-trace,0,"), "{}", lines[2]);
    assert!(lines[3].starts_with("thread9,1,"), "{}", lines[3]);
    // Only the header when there are no jobs.
    assert_eq!(csv_of(&RunResult::default()).lines().count(), 1);
}

// ---- Perfetto ----

#[test]
fn perfetto_has_one_complete_event_per_busy_segment() {
    let r = fixture::result();
    let text = trace_of(&r);
    let evs = events(&text);
    let xs: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "X").collect();
    let segs = fixture::segments();
    let busy: Vec<&Segment> = segs
        .iter()
        .filter(|s| s.what != SegmentKind::Idle)
        .collect();
    assert_eq!(xs.len(), 11);
    assert_eq!(xs.len(), busy.len());
    // Each busy segment has its event on its CPU's track, with ts/dur in µs.
    for s in busy {
        let name = match s.what {
            SegmentKind::Run(t) => ["video", "audio", "batch"][t.index()],
            SegmentKind::Switch(_) => "switch",
            SegmentKind::Idle | SegmentKind::Interrupt => unreachable!(),
        };
        let ts = s.start.as_nanos() as f64 / 1e3;
        let dur = (s.end.as_nanos() - s.start.as_nanos()) as f64 / 1e3;
        let found = xs.iter().any(|e| {
            e["name"] == name
                && e["pid"] == 1
                && e["tid"] == u64::from(s.cpu.0) + 1
                && e["ts"].as_f64() == Some(ts)
                && e["dur"].as_f64() == Some(dur)
        });
        assert!(found, "no X event for {s:?}");
    }
    // Exact decimals in the text, not float renderings.
    assert!(text.contains(
        r#""name":"audio","cat":"run","ph":"X","pid":1,"tid":2,"ts":1000.25,"dur":500,"#
    ));
    assert!(text.contains(r#""name":"switch","cat":"switch","ph":"X","pid":1,"tid":1,"ts":6000,"dur":0.5,"args":{"next":"video""#));
    assert!(text.contains(r#""ts":2010,"dur":3990,"#));
}

fn meta_names(evs: &[Value], kind: &str, pid: u64) -> Vec<String> {
    evs.iter()
        .filter(|e| e["ph"] == "M" && e["name"] == kind && e["pid"] == pid)
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn perfetto_labels_tracks() {
    let evs = events(&trace_of(&fixture::result()));
    assert_eq!(meta_names(&evs, "process_name", 1), ["CPUs"]);
    assert_eq!(meta_names(&evs, "process_name", 2), ["Threads"]);
    assert_eq!(meta_names(&evs, "thread_name", 1), ["cpu0", "cpu1"]);
    assert_eq!(
        meta_names(&evs, "thread_name", 2),
        ["video", "audio", "batch"]
    );
    // Thread tracks never reuse a CPU track's tid.
    let tids: Vec<u64> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    assert_eq!(tids, [1, 2, 3, 4, 5]);
    // Metadata comes first, then events in time order.
    let first_timed = evs.iter().position(|e| e["ph"] != "M").unwrap();
    assert!(evs[first_timed..].iter().all(|e| e["ph"] != "M"));
    let ts: Vec<f64> = evs[first_timed..]
        .iter()
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn perfetto_marks_misses_ejections_and_wakeups() {
    let evs = events(&trace_of(&fixture::result()));
    let instant = |name: &str| -> Vec<&Value> {
        evs.iter()
            .filter(|e| e["ph"] == "i" && e["name"] == name)
            .collect()
    };
    let miss = instant("deadline miss video job 1");
    assert_eq!(miss.len(), 1);
    assert_eq!(miss[0]["ts"], 8000);
    assert_eq!(miss[0]["s"], "t");
    assert_eq!(
        (miss[0]["pid"].as_u64(), miss[0]["tid"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(miss[0]["args"]["job"], 1);
    assert_eq!(instant("deadline miss video job 2")[0]["ts"], 9900);
    let eject = instant("eject rogue");
    assert_eq!(eject.len(), 1);
    assert_eq!(eject[0]["s"], "g");
    assert_eq!(eject[0]["ts"], 3000);
    let wakeups = instant("wakeup");
    assert_eq!(wakeups.len(), 2);
    assert_eq!(wakeups[1]["tid"], 4); // audio's track
    assert_eq!(instant("release job 2").len(), 2);
}

#[test]
fn perfetto_counters() {
    let evs = events(&trace_of(&fixture::result()));
    let counter = |name: &str, key: &str| -> Vec<(f64, f64)> {
        evs.iter()
            .filter(|e| e["ph"] == "C" && e["name"] == name)
            .map(|e| (e["ts"].as_f64().unwrap(), e["args"][key].as_f64().unwrap()))
            .collect()
    };
    // cpu1: idle, busy from 1ms, idle from 1.50025ms, busy 5ms..7ms (audio
    // then batch: no sample in between), idle from 7ms.
    assert_eq!(
        counter("cpu1", "busy"),
        [
            (0.0, 0.0),
            (1000.0, 1.0),
            (1500.25, 0.0),
            (5000.0, 1.0),
            (7000.0, 0.0)
        ]
    );
    assert_eq!(counter("cpu0", "busy"), [(0.0, 1.0), (8000.5, 0.0)]);
    // batch's cumulative CPU time: 3.99ms at 6ms, plus 1.49975ms at 7ms.
    assert_eq!(
        counter("batch", "cpu_ms"),
        [(0.0, 0.0), (6000.0, 3.99), (7000.0, 5.48975)]
    );
    assert_eq!(counter("video", "cpu_ms").last(), Some(&(8000.5, 3.99)));
}

#[test]
fn perfetto_cpu_time_samples_are_bounded() {
    let mut r = fixture::result();
    let n = 5_000u64;
    let segs = (0..n)
        .map(|i| Segment {
            cpu: CpuId(0),
            start: Instant::from_nanos(i * 10),
            end: Instant::from_nanos(i * 10 + 10),
            what: SegmentKind::Run(ThreadId(0)),
        })
        .collect();
    r.trace.as_mut().unwrap().segments = segs;
    let evs = events(&trace_of(&r));
    let samples: Vec<&Value> = evs
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "video")
        .collect();
    assert!(samples.len() <= hsched_report::perfetto::MAX_CPU_TIME_SAMPLES + 1);
    // The last sample is the exact total: 5000 * 10ns = 0.05ms.
    assert_eq!(samples.last().unwrap()["args"]["cpu_ms"], 0.05);
    assert_eq!(evs.iter().filter(|e| e["ph"] == "X").count(), n as usize);
}

#[test]
fn perfetto_is_deterministic_and_snapshotted() {
    let a = trace_of(&fixture::result());
    assert_eq!(a, trace_of(&fixture::result()));
    insta::assert_snapshot!("perfetto_trace", a);
}

#[test]
fn perfetto_without_a_trace_is_a_clear_error() {
    let mut r = fixture::result();
    r.trace = None;
    let err = perfetto_trace(&r, Vec::new()).unwrap_err();
    assert!(matches!(err, ReportError::NoTrace));
    assert!(err.to_string().contains("no trace"), "{err}");
}

// ---- summary ----

#[test]
fn summary_shows_the_numbers() {
    let s = summary(&fixture::result());
    assert!(s.starts_with("scenario demo  platform sim  cpus 2  horizon 10ms  seed 7\n"));
    let row = |name: &str| -> Vec<String> {
        s.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name} in\n{s}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        row("video"),
        ["video", "rt", "3.99ms", "39.9%", "10us", "3", "2", "2"]
    );
    assert_eq!(
        row("batch"),
        ["batch", "ts", "5.49ms", "54.9%", "-", "0", "0", "2"]
    );
    assert_eq!(row("root"), ["root", "fixed_priority", "10.5ms", "104.8%"]);
    assert_eq!(row("rogue"), ["rogue", "(gone)", "rialto", "0", "0.0%"]);
    assert!(s.contains("idle 47.5%"), "{s}");
    assert!(s.contains("events 100 (50.0k/s wall)"), "{s}");
    assert!(s.contains("deadline misses 2/6"), "{s}");
    assert!(s.contains("t=3ms  eject"), "{s}");
    assert!(s.contains("refused  admission of batch2"), "{s}");
    // Replies stay out of the terminal.
    assert!(!s.contains("reserve 0.5ms"), "{s}");
    // Columns line up: every row of the thread table is as wide as its header
    // up to the last column's right edge.
    let table: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("threads"))
        .skip(1)
        .take(4)
        .collect();
    let width = table[0].len();
    assert!(table.iter().all(|l| l.len() == width), "{table:#?}");
}

#[test]
fn summary_in_colour_is_the_plain_summary_with_escape_codes_added() {
    let r = fixture::result();
    let coloured = hsched_report::summary_styled(&r, true);
    assert!(coloured.contains('\x1b'), "{coloured}");
    // Strip each `ESC [ ... m`: what remains is the plain text, columns and all.
    let mut plain = String::new();
    let mut chars = coloured.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            plain.push(c);
        }
    }
    assert_eq!(plain, summary(&r));
    assert_eq!(hsched_report::summary_styled(&r, false), summary(&r));
}

#[test]
fn summary_snapshot() {
    insta::assert_snapshot!("summary", summary(&fixture::result()));
}

#[test]
fn summary_shows_guarantees_only_when_there_are_some() {
    assert!(!summary(&fixture::result()).contains("guarantee"));
    let s = summary(&fixture::labelled());
    let line = |start: &str| -> &str {
        s.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no line {start} in\n{s}"))
    };
    assert_eq!(
        line("name   scheduler")
            .split_whitespace()
            .collect::<Vec<_>>(),
        [
            "name",
            "scheduler",
            "cpu",
            "time",
            "share",
            "guarantee",
            "wakeup",
            "p99",
            "jobs",
            "misses",
            "ctx",
            "sw"
        ]
    );
    // Next to the share received: 39.9% of the 40% promised.
    assert!(
        line("video ").contains("  39.9%  RESBH 2, 5 (40.0%)  "),
        "{s}"
    );
    assert!(line("audio ").contains("  10.0%  NULL  "), "{s}");
    assert!(line("batch ").contains("  54.9%  -  "), "{s}");
    assert!(line("root ").ends_with("104.8%  ALL ×2 (200.0%)"), "{s}");
    assert!(line("rt ").ends_with("49.9%  RESBH 5, 10 (50.0%)"), "{s}");
    assert!(line("ts ").ends_with("54.9%  NULL"), "{s}");
    assert!(line("rogue ").ends_with("0.0%  -"), "{s}");
    // The columns still line up (in characters: `×` is one).
    let table: Vec<usize> = s
        .lines()
        .skip_while(|l| !l.starts_with("threads"))
        .skip(1)
        .take(4)
        .map(|l| l.chars().count())
        .collect();
    assert!(table.iter().all(|&w| w == table[0]), "{table:?}\n{s}");
    insta::assert_snapshot!("summary_with_guarantees", s);
}

#[test]
fn summary_counts_calls_only_for_threads_that_made_some() {
    assert!(!summary(&fixture::result()).contains("calls"));
    let mut r = fixture::result();
    r.threads[0].calls = CallCounts {
        made: 9,
        ok: 5,
        broken_pipe: 1,
        server_exit: 2,
        ..CallCounts::default()
    };
    let s = summary(&r);
    let table = &s[s.find("calls (train and RPC").expect("a calls table")..];
    let row = table.lines().nth(2).unwrap();
    let name = &r.threads[0].name;
    let cells: Vec<&str> = row.split_whitespace().collect();
    // made, ok, broken pipe, server exit, caller gone, abandoned, too deep,
    // and 1 still open.
    assert_eq!(
        cells,
        [name.as_str(), "9", "5", "1", "2", "0", "0", "0", "1"]
    );
    assert_eq!(table.lines().nth(3), Some(""), "one row only:\n{table}");
    let v: Value = serde_json::from_str(&metrics_json(&r)).unwrap();
    assert_eq!(v["threads"][0]["calls"]["server_exit"], 2);
    assert_eq!(v["threads"][1]["calls"]["made"], 0);
}

#[test]
fn summary_of_an_empty_run() {
    let s = summary(&RunResult::default());
    assert!(s.contains("(none)"));
    assert!(s.contains("(-/s wall)"));
    assert!(!s.contains("\nlog"));
}

// ---- properties ----

fn arb_name() -> impl Strategy<Value = String> {
    // Printable text plus quotes, backslashes and control characters, the
    // things that break hand-written JSON.
    prop::collection::vec(
        prop_oneof![
            any::<char>().prop_map(|c| c.to_string()),
            Just("\"".to_string()),
            Just("\\".to_string()),
            Just("\n".to_string()),
            Just("\u{1}".to_string()),
        ],
        0..8,
    )
    .prop_map(|v| v.concat())
}

fn arb_result() -> impl Strategy<Value = RunResult> {
    (
        1u32..4,
        prop::collection::vec(arb_name(), 0..4),
        prop::collection::vec(
            (0u32..5, 0u64..1_000_000, 0u64..5_000, 0u8..3, 0u32..5),
            0..60,
        ),
        prop::collection::vec(
            (
                any::<u64>(),
                prop::option::of(0u32..5),
                0u8..4,
                0u64..10,
                arb_name(),
            ),
            0..20,
        ),
        arb_name(),
    )
        .prop_map(|(cpus, names, segs, marks, scenario)| {
            let segments = segs
                .into_iter()
                .map(|(cpu, start, len, kind, t)| Segment {
                    cpu: CpuId(cpu),
                    start: Instant::from_nanos(start),
                    end: Instant::from_nanos(start + len),
                    what: match kind {
                        0 => SegmentKind::Idle,
                        1 => SegmentKind::Switch(ThreadId(t)),
                        _ => SegmentKind::Run(ThreadId(t)),
                    },
                })
                .collect();
            let marks = marks
                .into_iter()
                .map(|(at, t, kind, job, sched)| Mark {
                    at: Instant::from_nanos(at),
                    thread: t.map(ThreadId),
                    kind: match kind {
                        0 => MarkKind::Wakeup,
                        1 => MarkKind::Release { job },
                        2 => MarkKind::DeadlineMiss { job },
                        _ => MarkKind::Eject { scheduler: sched },
                    },
                })
                .collect();
            RunResult {
                scenario,
                cpus,
                trace: Some(Trace {
                    segments,
                    marks,
                    thread_names: names,
                }),
                ..RunResult::default()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn perfetto_always_parses(r in arb_result()) {
        let text = trace_of(&r);
        let evs = events(&text);
        let busy = r.trace.as_ref().unwrap().segments.iter().filter(|s| s.what != SegmentKind::Idle).count();
        prop_assert_eq!(evs.iter().filter(|e| e["ph"] == "X").count(), busy);
        // No \u escapes: older Perfetto readers reject them.
        prop_assert!(!text.replace("\\\\", "").contains("\\u"));
        prop_assert_eq!(text, trace_of(&r));
    }

    #[test]
    fn metrics_json_always_parses(r in arb_result()) {
        let v: Value = serde_json::from_str(&metrics_json(&r)).unwrap();
        prop_assert_eq!(&v["global"]["cpus"], &Value::from(r.cpus));
        let _ = summary(&r);
    }
}
