//! The figures' data (shares over time, CDFs, histograms, the timeline), the
//! HTML report and the plots, on the hand-built run of `fixture` and on real
//! simulations of the example scenarios.

mod fixture;

use hsched_core::{CpuId, Duration, Instant, ThreadId};
use hsched_model::{RunResult, Scenario, Segment, SegmentKind, Trace};
use hsched_report::figures::{self, Figures, Slot, MAX_TIMELINE_SEGMENTS};
use hsched_report::html::{html_report, report_data_json, ReportInput};
use hsched_report::plot::{plot, Figure, Format, PlotOptions};
use proptest::prelude::*;
use resvg::tiny_skia::Pixmap;
use std::collections::BTreeSet;
use std::path::Path;

fn example(name: &str) -> (Scenario, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/examples")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    (hsched_scenario::parse(&text, name).unwrap(), text)
}

fn simulate(scn: &Scenario) -> RunResult {
    let opts = hsched_sim::SimOptions {
        trace: true,
        ..Default::default()
    };
    hsched_sim::run(scn, &opts).unwrap()
}

/// Checks every invariant the figures promise, against the run itself.
fn check_invariants(r: &RunResult, scn: Option<&Scenario>, f: &Figures) {
    let horizon = r.horizon.as_nanos();
    let s = &f.shares;
    assert_eq!(s.bins as u64, horizon.div_ceil(s.bin_ns));
    // Each bin: the threads' time is the CPUs' busy time, and no CPU is
    // busy longer than the bin.
    for i in 0..s.bins {
        let threads: u64 = s.threads.iter().map(|(_, row)| row[i]).sum();
        let cpus: u64 = s.cpus.iter().map(|row| row[i]).sum();
        assert_eq!(threads, cpus, "bin {i}");
        for row in &s.cpus {
            assert!(row[i] <= s.bin_len(i, horizon));
        }
    }
    // Each CPU's total is its busy time.
    for (cpu, row) in s.cpus.iter().enumerate() {
        let busy = r.cpu_stats[cpu].busy.as_nanos();
        assert_eq!(row.iter().sum::<u64>(), busy, "cpu{cpu}");
    }
    // Each thread's total is its CPU time.
    for t in &r.threads {
        let row = &s.threads.iter().find(|(id, _)| *id == t.id.0).unwrap().1;
        assert_eq!(row.iter().sum::<u64>(), t.cpu_time.as_nanos(), "{}", t.name);
    }
    // The root node receives every thread's time, bin by bin, and the
    // switches to them.
    if let Some(scn) = scn {
        let root = scn
            .schedulers
            .iter()
            .find(|s| s.parents.is_empty())
            .unwrap();
        let row = &s.nodes.iter().find(|(n, _)| *n == root.name).unwrap().1;
        for (i, &root_ns) in row.iter().enumerate() {
            let threads: u64 = s.threads.iter().map(|(_, row)| row[i]).sum();
            assert!(root_ns >= threads, "root, bin {i}: {root_ns} < {threads}");
        }
        // Its total: the threads' run time and the switches to them.
        let busy: u64 = r.cpu_stats.iter().map(|c| c.busy.as_nanos()).sum();
        let overhead: u64 = r.cpu_stats.iter().map(|c| c.overhead.as_nanos()).sum();
        assert_eq!(row.iter().sum::<u64>(), busy + overhead);
    }
    // The timeline covers every CPU's [0, horizon) once.
    for spans in &f.timeline.cpus {
        assert_eq!(spans.first().unwrap().start, 0);
        assert_eq!(spans.last().unwrap().end, horizon);
        assert!(spans.windows(2).all(|w| w[0].end == w[1].start));
    }
    // CDFs: monotone in both coordinates, ending at every sample.
    for c in &f.latency {
        let t = r.threads.iter().find(|t| t.id.0 == c.thread).unwrap();
        assert_eq!(c.samples as usize, t.wakeup_latencies.len());
        assert!(c
            .points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        let max = t.wakeup_latencies.iter().max().unwrap().as_nanos();
        assert_eq!(c.points.last(), Some(&(max, c.samples)));
    }
    // Histograms: every job counted once, as finished in a bin or unfinished.
    let jobs_total: u64 = f.response.iter().map(|h| h.jobs).sum();
    assert_eq!(jobs_total as usize, r.jobs.len());
    for h in &f.response {
        let jobs = r.jobs.iter().filter(|j| j.thread.0 == h.thread).count() as u64;
        assert_eq!(h.jobs, jobs);
        assert_eq!(h.counts.iter().sum::<u64>() + h.unfinished, jobs);
        for j in r.jobs.iter().filter(|j| j.thread.0 == h.thread) {
            if let Some(resp) = j.response() {
                assert!(h.counts[(resp.as_nanos() / h.bin_ns) as usize] > 0);
            }
        }
    }
}

#[test]
fn fixture_figures_have_the_hand_computed_values() {
    let r = fixture::result();
    let f = figures::figures(&r, None, 10).unwrap();
    check_invariants(&r, None, &f);
    // 10 ms in 10 bins of 1 ms. CPU 0 runs video [10us,2ms): 990us in bin
    // 0, 1ms in bin 1.
    assert_eq!(f.shares.bin_ns, 1_000_000);
    let video = &f.shares.threads[0].1;
    assert_eq!(&video[..3], &[990_000, 1_000_000, 0]);
    // Without a scenario a thread's time goes to the scheduler it ended under.
    let rt = &f.shares.nodes.iter().find(|(n, _)| n == "rt").unwrap().1;
    // Its threads ran 3.99 ms and 1 ms, and their switches took 11 us.
    assert_eq!(rt.iter().sum::<u64>(), 3_990_000 + 1_000_000 + 11_000);
    // Latency CDF of video: 500, 3000, 7000, 10000.
    assert_eq!(
        f.latency[0].points,
        vec![(500, 1), (3_000, 2), (7_000, 3), (10_000, 4)]
    );
    // Video: 3 jobs, 2 finished (2ms, 3.0005ms), 1 unfinished, 2 missed.
    let h = &f.response[0];
    assert_eq!((h.jobs, h.unfinished, h.missed), (3, 1, 2));
}

#[test]
fn simulated_examples_keep_every_invariant() {
    for name in ["desktop.toml", "multiprocessor.toml", "join.toml"] {
        let (scn, _) = example(name);
        let r = simulate(&scn);
        let f = figures::figures(&r, Some(&scn), 200).unwrap();
        check_invariants(&r, Some(&scn), &f);
        // The nodes' totals are what the dispatcher charged them.
        for n in &r.nodes {
            let row = &f.shares.nodes.iter().find(|(x, _)| *x == n.name).unwrap().1;
            let charged = row.iter().sum::<u64>();
            if !scn.schedulers.iter().any(|s| s.parents.len() > 1) {
                assert_eq!(charged, n.received.as_nanos(), "{name}: {}", n.name);
            }
        }
    }
}

#[test]
fn a_long_trace_is_binned_with_what_held_each_bin() {
    // 1 CPU, 300 000 alternating 1us segments of two threads, then 1ms of
    // thread 2 alone.
    let mut r = fixture::result();
    r.cpus = 1;
    let n = 300_000u64;
    let mut segments: Vec<Segment> = (0..n)
        .map(|i| Segment {
            cpu: CpuId(0),
            start: Instant::from_nanos(i * 1_000),
            end: Instant::from_nanos((i + 1) * 1_000),
            what: SegmentKind::Run(ThreadId((i % 2) as u32)),
        })
        .collect();
    segments.push(Segment {
        cpu: CpuId(0),
        start: Instant::from_nanos(n * 1_000),
        end: Instant::from_nanos(n * 1_000 + 1_000_000),
        what: SegmentKind::Run(ThreadId(1)),
    });
    r.horizon = Duration::from_nanos(n * 1_000 + 1_000_000);
    r.trace = Some(Trace {
        segments,
        marks: Vec::new(),
        thread_names: vec!["a".into(), "b".into()],
    });
    let f = figures::figures(&r, None, 100).unwrap();
    assert_eq!(f.timeline.source_segments, n as usize + 1);
    assert!(f.timeline.bin_ns > 0);
    let spans = &f.timeline.cpus[0];
    assert!(spans.len() <= MAX_TIMELINE_SEGMENTS);
    // The last millisecond is thread 1's alone: binned, it still is.
    let last = spans.last().unwrap();
    assert_eq!(last.slot, Slot::Run(1));
    assert!(last.end - last.start >= 1_000_000 - f.timeline.bin_ns);
}

#[test]
fn the_report_is_deterministic_and_embeds_its_data() {
    let (scn, text) = example("desktop.toml");
    let mut r1 = simulate(&scn);
    let mut r2 = simulate(&scn);
    // Wall-clock time differs between runs; the report must not show it.
    r1.wall_ns = 1;
    r2.wall_ns = 2;
    let input = ReportInput {
        scenario: Some(&scn),
        source: Some(("desktop.toml", &text)),
        hierarchy_svg: Some("<?xml version=\"1.0\"?><svg id=\"hier\"></svg>"),
    };
    let a = html_report(&r1, &input).unwrap();
    let b = html_report(&r2, &input).unwrap();
    assert!(a == b, "same run, different reports");
    // The hierarchy drawing inlined without its XML prolog; the scenario
    // text escaped.
    assert!(a.contains("<svg id=\"hier\"></svg>") && !a.contains("<?xml"));
    assert!(a.contains("program = [ { run = &quot;10s&quot; } ]"));
    // No network: nothing is loaded from elsewhere.
    for needle in ["http://", "https://", "src=", "<link"] {
        assert!(!a.contains(needle), "report refers to {needle}");
    }
    // The embedded data is the JSON report_data_json gives.
    let open = "<script type=\"application/json\" id=\"report-data\">";
    let start = a.find(open).unwrap() + open.len();
    let end = start + a[start..].find("</script>").unwrap();
    let embedded: serde_json::Value = serde_json::from_str(&a[start..end]).unwrap();
    let direct: serde_json::Value =
        serde_json::from_str(&report_data_json(&r1, &input).unwrap()).unwrap();
    assert_eq!(embedded, direct);
    assert_eq!(embedded["metrics"]["global"]["wall_ns"], 0);
    let jobs: u64 = embedded["response"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["jobs"].as_u64().unwrap())
        .sum();
    assert_eq!(jobs as usize, r1.jobs.len());
}

#[test]
fn a_run_without_a_trace_has_no_report() {
    let mut r = fixture::result();
    r.trace = None;
    let err = html_report(&r, &ReportInput::default()).unwrap_err();
    assert!(err.to_string().contains("no trace"));
}

#[test]
fn report_data_snapshot() {
    let r = fixture::labelled();
    let json = report_data_json(&r, &ReportInput::default()).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut text = String::new();
    compact_pretty(&value, 0, &mut text);
    insta::assert_snapshot!(text);
}

/// JSON one key a line, but an array of scalars (a row of numbers) or of
/// such arrays (points) on one line, so the snapshot stays readable.
fn compact_pretty(v: &serde_json::Value, depth: usize, out: &mut String) {
    use serde_json::Value;
    let flat = |v: &Value| match v {
        Value::Array(a) => a.iter().all(|x| !x.is_array() && !x.is_object()),
        Value::Object(_) => false,
        _ => true,
    };
    let pad = "  ".repeat(depth + 1);
    match v {
        Value::Array(a) if a.iter().all(flat) => out.push_str(&serde_json::to_string(v).unwrap()),
        Value::Array(a) => {
            out.push_str("[\n");
            for (i, x) in a.iter().enumerate() {
                out.push_str(&pad);
                compact_pretty(x, depth + 1, out);
                out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
            }
            out.push_str(&"  ".repeat(depth));
            out.push(']');
        }
        Value::Object(o) => {
            out.push_str("{\n");
            for (i, (k, x)) in o.iter().enumerate() {
                out.push_str(&format!("{pad}{}: ", serde_json::to_string(k).unwrap()));
                compact_pretty(x, depth + 1, out);
                out.push_str(if i + 1 < o.len() { ",\n" } else { "\n" });
            }
            out.push_str(&"  ".repeat(depth));
            out.push('}');
        }
        _ => out.push_str(&serde_json::to_string(v).unwrap()),
    }
}

fn options() -> PlotOptions {
    PlotOptions {
        width: 640,
        height: 360,
        ..PlotOptions::default()
    }
}

#[test]
fn svg_plots_parse_and_show_every_series() {
    let (scn, _) = example("desktop.toml");
    let r = simulate(&scn);
    let names: Vec<&str> = r.threads.iter().map(|t| t.name.as_str()).collect();
    for (label, figure) in Figure::ALL {
        let bytes = plot(figure, &r, Some(&scn), Format::Svg, &options()).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{label}: {e}"));
        let texts: BTreeSet<String> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect();
        let expect: Vec<String> = match figure {
            Figure::Timeline | Figure::Share => names.iter().map(|n| n.to_string()).collect(),
            Figure::NodeShare => scn.schedulers.iter().map(|s| s.name.clone()).collect(),
            Figure::Latency => r
                .threads
                .iter()
                .map(|t| format!("{} ({} wakeups)", t.name, t.wakeup_latencies.len()))
                .collect(),
            Figure::Response => ["video", "audio"]
                .iter()
                .map(|n| {
                    let id = r.threads.iter().find(|t| t.name == *n).unwrap().id;
                    let jobs = r.jobs.iter().filter(|j| j.thread == id).count();
                    format!("{n}: {jobs} jobs, 0 missed, 0 unfinished")
                })
                .collect(),
        };
        for e in expect {
            assert!(texts.contains(&e), "{label}: no `{e}` in {texts:?}");
        }
        // Something is drawn: the timeline's rectangles, the others' lines
        // or bars.
        let shapes = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect") || n.has_tag_name("polyline"))
            .count();
        assert!(shapes > 5, "{label}: {shapes} shapes");
    }
}

#[test]
fn png_plots_have_the_size_asked_and_are_not_blank() {
    let (scn, _) = example("desktop.toml");
    let r = simulate(&scn);
    for (label, figure) in Figure::ALL {
        let bytes = plot(figure, &r, Some(&scn), Format::Png, &options()).unwrap();
        let image = Pixmap::decode_png(&bytes).unwrap();
        assert_eq!((image.width(), image.height()), (640, 360), "{label}");
        let colours: BTreeSet<[u8; 4]> = image
            .pixels()
            .iter()
            .map(|p| [p.red(), p.green(), p.blue(), p.alpha()])
            .collect();
        assert!(colours.len() > 20, "{label}: {} colours", colours.len());
        // Deterministic: the same figure twice is the same file.
        let again = plot(figure, &r, Some(&scn), Format::Png, &options()).unwrap();
        assert!(bytes == again, "{label}: PNG differs between two draws");
    }
}

#[test]
fn plot_refuses_unknown_threads_and_empty_windows() {
    let r = fixture::result();
    let opts = PlotOptions {
        threads: vec!["nobody".into()],
        ..options()
    };
    let err = plot(Figure::Timeline, &r, None, Format::Svg, &opts).unwrap_err();
    assert!(err.to_string().contains("no thread `nobody`"), "{err}");
    let opts = PlotOptions {
        from: Some(5_000_000),
        to: Some(5_000_000),
        ..options()
    };
    let err = plot(Figure::Share, &r, None, Format::Svg, &opts).unwrap_err();
    assert!(err.to_string().contains("time window is empty"), "{err}");
}

/// A random run on `cpus` CPUs: per CPU, consecutive segments of random
/// length and kind (idle, a switch, a run of one of four threads).
fn random_run(cpus: u32, segs: Vec<Vec<(u64, u8)>>) -> RunResult {
    let mut r = fixture::result();
    r.cpus = cpus;
    let mut segments = Vec::new();
    let mut horizon = 1;
    let mut busy = vec![0u64; cpus as usize];
    let mut thread_time = [0u64; 4];
    for (c, list) in segs.iter().enumerate().take(cpus as usize) {
        let mut at = 0;
        for &(len, kind) in list {
            let what = match kind % 6 {
                0 => SegmentKind::Idle,
                1 => SegmentKind::Switch(ThreadId(u32::from(kind % 4))),
                k => SegmentKind::Run(ThreadId(u32::from(k - 2))),
            };
            if let SegmentKind::Run(t) = what {
                busy[c] += len;
                thread_time[t.0 as usize] += len;
            }
            segments.push(Segment {
                cpu: CpuId(c as u32),
                start: Instant::from_nanos(at),
                end: Instant::from_nanos(at + len),
                what,
            });
            at += len;
        }
        horizon = horizon.max(at);
    }
    r.horizon = Duration::from_nanos(horizon);
    r.cpu_stats = (0..cpus)
        .map(|c| hsched_model::CpuStats {
            cpu: CpuId(c),
            busy: Duration::from_nanos(busy[c as usize]),
            ..Default::default()
        })
        .collect();
    r.threads.truncate(0);
    r.jobs.clear();
    r.trace = Some(Trace {
        segments,
        marks: Vec::new(),
        thread_names: vec!["a".into(), "b".into(), "c".into(), "d".into()],
    });
    for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
        let mut t = fixture::result().threads[0].clone();
        t.id = ThreadId(i as u32);
        t.name = (*name).into();
        t.cpu_time = Duration::from_nanos(thread_time[i]);
        t.wakeup_latencies.clear();
        r.threads.push(t);
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn shares_sum_to_busy_time_on_random_runs(
        cpus in 1u32..4,
        segs in prop::collection::vec(prop::collection::vec((1u64..50_000, any::<u8>()), 1..60), 4),
        bins in 1u64..300,
    ) {
        let r = random_run(cpus, segs);
        let f = figures::figures(&r, None, bins).unwrap();
        check_invariants(&r, None, &f);
    }

    #[test]
    fn cdfs_are_monotone_and_end_at_one(samples in prop::collection::vec(0u64..1_000_000, 1..2_000)) {
        let c = figures::cdf(0, samples.iter().copied());
        prop_assert!(c.points.len() <= figures::MAX_CDF_POINTS);
        prop_assert!(c.points.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        let last = *c.points.last().unwrap();
        prop_assert_eq!(last, (*samples.iter().max().unwrap(), samples.len() as u64));
        for &(v, count) in &c.points {
            prop_assert_eq!(count as usize, samples.iter().filter(|&&x| x <= v).count());
        }
    }
}
