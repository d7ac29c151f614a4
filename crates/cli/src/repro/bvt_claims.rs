//! Reproductions of the BVT paper's (Duda & Cheriton, SOSP '99) claims
//! beyond its figures and §5: the video-player tables of §4.1–4.2 in
//! simulation, Fig. 1's scheduling window, §2.2's device thread, §2.5's
//! two-level threshold and direct modes, §6.1.3's warp assignment, and (a
//! timing entry) §4's scheduler overhead.
//!
//! Where the paper's number follows from BVT's rules, the expected value is
//! computed from those rules and the scenario's own inputs (so a scenario
//! run with other parameters is judged by the same rule), and the paper's
//! number is checked beside it.

use super::{scenario, simulate, simulate_with, Check, Entry};
use crate::repro::parse;
use hsched_core::{Duration, Instant};
use hsched_model::{Dist, JobRecord, Op, RunResult, Scenario, SegmentKind, ThreadResult};

/// The entries run by `hsched repro --all`.
pub fn entries() -> Vec<Entry> {
    vec![
        table1(),
        table2(),
        table3(),
        fig1_window(),
        device(),
        warps(),
        threshold(),
        direct(),
    ]
}

/// The timing entries (`hsched repro --timing`).
pub fn timing_entries() -> Vec<Entry> {
    vec![overhead()]
}

// ----- helpers ----------------------------------------------------------------------

fn thread<'a>(r: &'a RunResult, name: &str) -> Result<&'a ThreadResult, String> {
    r.threads
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("the scenario has no thread `{name}`"))
}

fn end(r: &RunResult) -> Instant {
    Instant::ZERO + r.horizon
}

fn ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// The jobs of the threads named `names`.
fn jobs<'a>(r: &'a RunResult, names: &[&str]) -> Result<Vec<&'a JobRecord>, String> {
    let ids = names
        .iter()
        .map(|n| thread(r, n).map(|t| t.id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(r.jobs.iter().filter(|j| ids.contains(&j.thread)).collect())
}

/// A video player's frames as §4 counts them: released in the run, done,
/// late (done more than the deadline after the frame time), very late (not
/// done by the end of the test although due).
struct Frames {
    released: f64,
    done: f64,
    late: f64,
    very_late: f64,
}

fn frames(r: &RunResult, players: &[&str]) -> Result<Frames, String> {
    let end = end(r);
    let all = jobs(r, players)?;
    let count = |f: &dyn Fn(&&JobRecord) -> bool| all.iter().filter(|j| f(j)).count() as f64;
    Ok(Frames {
        released: count(&|_| true),
        done: count(&|j| j.finish.is_some()),
        late: count(&|j| j.finish.is_some_and(|f| f > j.deadline)),
        very_late: count(&|j| j.finish.is_none() && j.deadline < end),
    })
}

/// Sets the warp a thread attaches with.
fn set_warp(scn: &mut Scenario, name: &str, warp: i64) {
    for t in scn
        .threads
        .iter_mut()
        .filter(|t| t.name == name || t.name.starts_with(&format!("{name}.")))
    {
        t.params.set("warp", hsched_core::Value::Int(warp));
    }
}

/// A thread's attachment parameter, as an integer.
fn attach_int(scn: &Scenario, name: &str, key: &str) -> Result<i64, String> {
    let t = scn
        .threads
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("the scenario has no thread `{name}`"))?;
    match t.params.get(key) {
        Some(hsched_core::Value::Int(i)) => Ok(*i),
        _ => Err(format!("thread `{name}` has no integer `{key}`")),
    }
}

/// The largest CPU time one job of a `periodic` program can ask for (the
/// upper end of its `run`).
fn max_job_run(scn: &Scenario, name: &str) -> Result<Duration, String> {
    let t = scn
        .threads
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("the scenario has no thread `{name}`"))?;
    for op in &t.program.ops {
        if let Op::Periodic { body, .. } = op {
            if let [Op::Run(d)] = body.as_slice() {
                return Ok(match *d {
                    Dist::Fixed(x) => x,
                    Dist::Uniform { max, .. }
                    | Dist::Exponential { max, .. }
                    | Dist::Normal { max, .. } => max,
                });
            }
        }
    }
    Err(format!(
        "thread `{name}` is not a periodic player with one `run`"
    ))
}

// ----- §4.1–4.2, Tables 1–3 ------------------------------------------------------------

/// Of the times `who` waited while runnable (after a wakeup or a
/// preemption), the fraction that ended when one of `players`' frames
/// ended: 1 when the warped players are all it ever waited for.
fn waits_end_at_frames(r: &RunResult, who: &str, players: &[&str]) -> Result<f64, String> {
    let t = thread(r, who)?;
    let trace = r.trace.as_ref().ok_or("repro runs record the trace")?;
    let ends: std::collections::BTreeSet<Instant> =
        jobs(r, players)?.iter().filter_map(|j| j.finish).collect();
    let mut segs: Vec<(Instant, Instant)> = trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t.id))
        .map(|s| (s.start, s.end))
        .collect();
    segs.sort();
    // Starts of runs (segments cut and resumed at one instant are one run).
    let mut starts = Vec::new();
    let mut last_end = None;
    for (s, e) in segs {
        if last_end != Some(s) {
            starts.push(s);
        }
        last_end = Some(e);
    }
    // Every start is a dispatch at the wakeup (no wait) or the end of a
    // wait; a wait ends at a frame's end if a frame finished within the
    // context switch before it.
    let switch = Duration::from_micros(50);
    let immediate = t.wakeup_latencies.iter().filter(|d| d.is_zero()).count();
    let waits = starts.len().saturating_sub(immediate);
    let at_frame = starts
        .iter()
        .filter(|s| {
            ends.range(Instant(s.0.saturating_sub(switch.as_nanos()))..=**s)
                .next()
                .is_some()
        })
        .count();
    Ok(if waits == 0 {
        1.0
    } else {
        at_frame as f64 / waits as f64
    })
}

fn table1() -> Entry {
    Entry {
        name: "bvt-table1",
        source: "BVT §4.1, Table 1 (BVT column), in simulation",
        claim: "a video player warped by 50000 beside a 4-way grep (warp 100) makes 553 frames at 29.78 frames/s of its 30 with 8 late (\"likely due to I/O conflicts\"): basically glitch-free; without warp it would be delayed at frame time by threads with the same AVT (§2.2). Linux's column (284 frames, 113 late) is not reproduced: hsched has no model of Linux 2.3's scheduler",
        scenarios: &["scenarios/papers/bvt-4.1-table1.toml"],
        run: || {
            let file = scenario!("bvt-4.1-table1.toml");
            let r = simulate(file)?;
            let f = frames(&r, &["mpeg"])?;
            let worst = thread(&r, "mpeg")?.wakeup_latencies.iter().max().copied().unwrap_or_default();
            let scn = parse(file)?;
            let grep_warp = attach_int(&scn, "grep.0", "warp")?;
            // The control: the player warped no more than grep.
            let plain = simulate_with(file, |s| set_warp(s, "mpeg", grep_warp))?;
            let p = frames(&plain, &["mpeg"])?;
            Ok(vec![
                Check::new(
                    "frames done / frames released",
                    29.78 / 30.0,
                    f.done / f.released,
                    0.015,
                    "the paper's 8 late frames of 553 (1.4%), \"likely due to I/O conflicts\", slowed its player; hsched models no I/O conflict, and the frame cut at the end is one of 557",
                ),
                Check::new(
                    "late frames / frames released",
                    8.0 / 553.0,
                    f.late / f.released,
                    0.0145,
                    "BVT's rule: warp 50000 dispatches each frame at once and no frame's work (at most 9ms) reaches the 30ms limit, so 0; the paper's 1.4% it blames on I/O conflicts, which hsched does not model",
                ),
                Check::new(
                    "worst dispatch latency of the player (ms)",
                    0.005,
                    ms(worst),
                    0.005,
                    "§2.2: warp cuts the jitter \"to microseconds or less, depending on the time for a context switch\" (5us here, §4.3's 0.005ms); hsched counts the latency up to the switch",
                ),
                Check::new(
                    format!(
                        "late frames without the player's warp (warp {grep_warp}, as grep) exceed those with it (1 = holds; {} against {})",
                        p.late + p.very_late,
                        f.late + f.very_late
                    ),
                    1.0,
                    f64::from(u8::from(p.late + p.very_late > f.late + f.very_late)),
                    0.0,
                    "an ordering (§2.2: without warp the player is delayed at frame time by threads with the same AVT, up to C = 200ms)",
                ),
            ])
        },
    }
}

fn table2() -> Entry {
    Entry {
        name: "bvt-table2",
        source: "BVT §4.2, Table 2 (BVT column), in simulation",
        claim: "a 60 frames/s player warped by 50000 with int (125ms bursts, 30% of the CPU, warp 500): 1198 frames of the 1200 in the 20s test, 0 very late, 0 late; int's worst latency 15.7ms, larger than Linux's 13.0 only because MPEG is preferred. Linux's column (904 frames, 273 very late, 41 late) is not reproduced: hsched has no model of Linux 2.3's scheduler",
        scenarios: &["scenarios/papers/bvt-4.2-table2.toml"],
        run: || {
            let file = scenario!("bvt-4.2-table2.toml");
            let r = simulate(file)?;
            let f = frames(&r, &["mpeg"])?;
            let int = &thread(&r, "int")?.wakeup_latencies;
            let max = int.iter().max().copied().unwrap_or_default();
            let scn = parse(file)?;
            let frame = max_job_run(&scn, "mpeg")?;
            let plain = simulate_with(file, |s| set_warp(s, "mpeg", 0))?;
            let p = frames(&plain, &["mpeg"])?;
            Ok(vec![
                Check::new(
                    "frames done / frames released",
                    1198.0 / 1200.0,
                    f.done / f.released,
                    0.002,
                    "the paper's 20s test at 60 frames/s released 1200 and showed 1198: two frames of 1200 for where the test's cut falls",
                ),
                Check::new("very late frames (not done by the end)", 0.0, f.very_late, 0.0, "exact: BVT's rule dispatches the warped player at each frame time and its frames fit (at most 9ms per 16.7ms)"),
                Check::new("late frames (over 30ms)", 0.0, f.late, 0.0, "exact, as above"),
                Check::new(
                    "int's waits that end when a frame ends (fraction)",
                    1.0,
                    waits_end_at_frames(&r, "int", &["mpeg"])?,
                    0.0,
                    "exact: int (warp 500) waits only while the player (warp 50000) runs, which is the paper's explanation of its larger latency",
                ),
                Check::new(
                    format!("int's worst latency (ms); this scenario's longest frame is {:.1}ms", ms(frame)),
                    15.7,
                    ms(max),
                    1.0,
                    "one player frame's work plus a switch; 1ms for the frame work's spread",
                )
                .differs("int waits only for the player's frame in progress (the check above: every wait ends at a frame's end), so its worst latency is the frame work, at most this scenario's longest frame; the paper does not state its frame work (its 15.7ms implies frames plus the X server's blit near 15ms)"),
                Check::new(
                    format!("late frames without the player's warp exceed those with it (1 = holds; {} against {})", p.late + p.very_late, f.late + f.very_late),
                    1.0,
                    f64::from(u8::from(p.late + p.very_late > f.late + f.very_late)),
                    0.0,
                    "an ordering: with warp 0 int's 125ms bursts (warp 500) hold the player past its 30ms, as Linux did in the paper (273 very late, 41 late)",
                ),
            ])
        },
    }
}

fn table3() -> Entry {
    Entry {
        name: "bvt-table3",
        source: "BVT §4.2, Table 3, in simulation",
        claim: "two 60 frames/s players warped by 50000 with int: 662 frames, 1 late (\"BVT is able to handle multiple simultaneous latency sensitive tasks\"); int's latency at most 68.0ms, mean 19.0ms, larger than with one player",
        scenarios: &["scenarios/papers/bvt-4.2-table3.toml"],
        run: || {
            let file = scenario!("bvt-4.2-table3.toml");
            let r = simulate(file)?;
            let f = frames(&r, &["mpeg", "mpeg2"])?;
            let lat = |r: &RunResult| -> Result<(f64, f64), String> {
                let int = &thread(r, "int")?.wakeup_latencies;
                let max = int.iter().max().copied().unwrap_or_default();
                let mean = int.iter().map(|d| ms(*d)).sum::<f64>() / int.len().max(1) as f64;
                Ok((ms(max), mean))
            };
            let (max, mean) = lat(&r)?;
            // Table 2's workload: the same player and int, one player.
            let (max1, _) = lat(&simulate(scenario!("bvt-4.2-table2.toml"))?)?;
            let diagnosis = "int waits only for the players' frames in progress (the check above: every wait ends at a frame's end), so its latency is the players' frame work, which the paper does not state; this scenario's frames take 1-9ms";
            Ok(vec![
                Check::new(
                    "late or very late frames / frames released",
                    1.0 / 662.0,
                    (f.late + f.very_late) / f.released,
                    1.0 / 662.0,
                    "one late frame in the paper's 662: 0 to 2 of 662; BVT's rule gives 0 (both players warped, 60% of the CPU with int's 30%)",
                ),
                Check::new(
                    "int's waits that end when a frame ends (fraction)",
                    1.0,
                    waits_end_at_frames(&r, "int", &["mpeg", "mpeg2"])?,
                    0.0,
                    "exact: int (warp 500) waits only while a player (warp 50000) runs",
                ),
                Check::new(
                    format!("int's worst latency with two players over with one (paper 68.0 / 15.7; here {max:.1} / {max1:.1} ms)"),
                    68.0 / 15.7,
                    max / max1.max(1e-9),
                    1.0,
                    "the ratio the paper draws (\"running two MPEG players does increase the maximum interactive response\"); 1 for the spread of the worst of some 30 wakeups",
                )
                .differs(diagnosis),
                Check::new("int's mean latency (ms)", 19.0, mean, 3.0, "3ms: the spread of a mean of some 30 wakeups").differs(diagnosis),
            ])
        },
    }
}

// ----- the scenario's BVT inputs --------------------------------------------------------

/// The `bvt` instance `name`'s parameters, defaults filled in.
fn bvt_params(scn: &Scenario, name: &str) -> Result<hsched_core::Params, String> {
    let s = scn
        .schedulers
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("the scenario has no scheduler `{name}`"))?;
    s.params.resolve(&(hsched_policies::bvt::INFO.params)())
}

/// Thread `name`'s `bvt` attachment, defaults filled in.
fn bvt_attach(scn: &Scenario, name: &str) -> Result<hsched_core::Params, String> {
    let t = scn
        .threads
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("the scenario has no thread `{name}`"))?;
    t.params
        .resolve(&(hsched_policies::bvt::INFO.child_params)())
}

/// `C_i = ceil(C * m_i / mcu)`, the allowance in thread i's virtual units
/// (§2.1's `C/w_i`).
fn allowance_units(c: Duration, mcu: Duration, m: u64) -> u64 {
    (c.as_nanos() as u128 * m as u128).div_ceil(mcu.as_nanos().max(1) as u128) as u64
}

/// (start, end) of every run of `name` (segments cut and resumed at one
/// instant merged), in time order.
fn runs(r: &RunResult, name: &str) -> Result<Vec<(Instant, Instant)>, String> {
    let id = thread(r, name)?.id;
    let trace = r.trace.as_ref().ok_or("repro runs record the trace")?;
    let mut segs: Vec<(Instant, Instant)> = trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(id))
        .map(|s| (s.start, s.end))
        .collect();
    segs.sort();
    let mut out: Vec<(Instant, Instant)> = Vec::new();
    for (s, e) in segs {
        match out.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    Ok(out)
}

// ----- §2.1, Fig. 1: the scheduling window -----------------------------------------------

/// §2.1's switching rule applied to two always-runnable threads with mcu
/// advances `m` and allowances `c` (virtual units), the first running
/// first: each runs whole mcus until it passes the other by its own
/// allowance. Returns the length, in mcu, of the cycle the alternation
/// settles into (the scheduling window) and the first thread's mcu in it.
fn window_by_rule(m: [u64; 2], c: [u64; 2]) -> Option<(u64, u64)> {
    let (mut a, mut run) = ([0u64; 2], 0usize);
    let mut seen = std::collections::BTreeMap::new();
    let mut history: Vec<(usize, u64)> = Vec::new();
    for step in 0..10_000 {
        let o = 1 - run;
        // Normalised state: who runs, and how far the other is ahead.
        let key = (run, a[o] as i128 - a[run] as i128);
        if let Some(&first) = seen.get(&key) {
            let cycle = &history[first..step];
            let total = cycle.iter().map(|&(_, k)| k).sum();
            let first_thread = cycle
                .iter()
                .filter(|&&(t, _)| t == 0)
                .map(|&(_, k)| k)
                .sum();
            return Some((total, first_thread));
        }
        seen.insert(key, step);
        let need = (a[o] + c[run]).saturating_sub(a[run]);
        let k = need.div_ceil(m[run]).max(1);
        a[run] += k * m[run];
        history.push((run, k));
        run = o;
    }
    None
}

fn fig1_window() -> Entry {
    Entry {
        name: "bvt-fig1-window",
        source: "BVT §2.1, Fig. 1: the 9-mcu scheduling window",
        claim: "weights 2:1 (advances 1 and 2) with C = 2 mcu: context switches occur when the running thread passes the waiting one by C; \"over a scheduling window of 9 mcu, each thread receives its fair share\"",
        scenarios: &["scenarios/papers/bvt-fig1.toml"],
        run: || fig1_window_checks(scenario!("bvt-fig1.toml")),
    }
}

/// Fig. 1's window on `file` (a variant may change the weights or C).
fn fig1_window_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    {
        {
            let scn = parse(file)?;
            let p = bvt_params(&scn, "bvt")?;
            let (mcu, c) = (p.duration("mcu"), p.duration("allowance"));
            let m = [
                bvt_attach(&scn, "gcc")?.int("advance") as u64,
                bvt_attach(&scn, "bigsim")?.int("advance") as u64,
            ];
            let cu = [allowance_units(c, mcu, m[0]), allowance_units(c, mcu, m[1])];
            let (window, gcc_mcu) =
                window_by_rule(m, cu).ok_or("the rule's alternation does not settle")?;
            let r = simulate(file)?;
            // The measured alternation: (thread, mcu) of each run, skipping
            // the first runs (the start, where both are at 0) and the last
            // (cut by the horizon); then its period.
            let mut all: Vec<(u64, u8, u64)> = Vec::new();
            for (t, name) in [(0u8, "gcc"), (1, "bigsim")] {
                for (s, e) in runs(&r, name)? {
                    all.push((s.as_nanos(), t, (e - s).as_nanos() / mcu.as_nanos().max(1)));
                }
            }
            all.sort();
            let steady: Vec<(u8, u64)> = all[4..all.len() - 1]
                .iter()
                .map(|&(_, t, k)| (t, k))
                .collect();
            let period = (1..=steady.len() / 2)
                .find(|&p| steady.iter().zip(&steady[p..]).all(|(x, y)| x == y))
                .ok_or("the run's alternation is not periodic")?;
            let measured: u64 = steady[..period].iter().map(|&(_, k)| k).sum();
            let measured_gcc: u64 = steady[..period]
                .iter()
                .filter(|&&(t, _)| t == 0)
                .map(|&(_, k)| k)
                .sum();
            Ok(vec![
                Check::new(
                    format!("scheduling window (mcu); §2.1's rule on this file's inputs gives {window} (the paper's Fig. 1: 9)"),
                    window as f64,
                    measured as f64,
                    0.0,
                    "exact: whole-mcu charging makes the alternation periodic; the expected value is the switching rule (run until passing the other by C_i = C/w_i) applied to the scenario's advances and C",
                ),
                Check::new(
                    "gcc's share within one window",
                    gcc_mcu as f64 / window as f64,
                    measured_gcc as f64 / measured.max(1) as f64,
                    0.0,
                    "exact: over the window each receives its fair share (2/3 for weights 2:1), as Fig. 1 says",
                ),
                Check::new(
                    "gcc's fair share by weight (1/m over the sum of 1/m)",
                    m[1] as f64 / (m[0] + m[1]) as f64,
                    gcc_mcu as f64 / window as f64,
                    1e-12,
                    "the rule's cycle gives exactly the weighted share (float rounding only)",
                ),
            ])
        }
    }
}

// ----- §2.2: the device thread -------------------------------------------------------------

fn device() -> Entry {
    Entry {
        name: "bvt-2.2-device",
        source: "BVT §2.2: a device thread with L = 1ms, U = 99ms",
        claim: "a device thread needing well under 1ms every 100ms, with a large warp, L = 1ms and U = 99ms, is dispatched at once; when it fails, the scheduler stops it warping and using excessive CPU within the window; without the limits a failed device thread with a large warp could run for 200ms or more before being preempted",
        scenarios: &["scenarios/papers/bvt-2.2-device.toml"],
        run: || device_checks(scenario!("bvt-2.2-device.toml")),
    }
}

/// §2.2's device thread on `file` (a variant may change W, m, L, U, C).
fn device_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    {
        {
            let scn = parse(file)?;
            let p = bvt_params(&scn, "bvt")?;
            let (mcu, c) = (p.duration("mcu"), p.duration("allowance"));
            let at = bvt_attach(&scn, "device")?;
            let (m, w) = (at.int("advance") as u64, at.int("warp") as u64);
            let (limit, unwarp) = (at.duration("warp_limit"), at.duration("unwarp"));
            let app_m = bvt_attach(&scn, "app")?.int("advance") as u64;
            let failed_at = failure_start(&scn, "device")?;
            let r = simulate(file)?;
            let free = simulate_with(file, |s| {
                for t in s.threads.iter_mut().filter(|t| t.name == "device") {
                    t.params
                        .set("warp_limit", hsched_core::Value::Duration(Duration::ZERO));
                    t.params
                        .set("unwarp", hsched_core::Value::Duration(Duration::ZERO));
                }
            })?;
            let dev = thread(&r, "device")?;
            let healthy = dev
                .wakeup_latencies
                .iter()
                .max()
                .copied()
                .unwrap_or_default();
            let longest = |r: &RunResult| -> Result<Duration, String> {
                Ok(runs(r, "device")?
                    .into_iter()
                    .filter(|(_, e)| *e > failed_at)
                    .map(|(s, e)| e - s.max(failed_at))
                    .max()
                    .unwrap_or_default())
            };
            // The rule without limits: the failed thread, woken at SVT with
            // warp W, keeps the CPU until E = A - W passes the app's E by
            // its allowance C_i: (W + C_i)/m mcu, plus at most one mcu for
            // where the app's A stood in its current mcu.
            let hold_mcu = (w + allowance_units(c, mcu, m)).div_ceil(m);
            let hold = mcu.as_nanos() as f64 * hold_mcu as f64 / 1e6;
            // With the limits: at most L warped, then §2.1's fair
            // alternation, each holding the CPU until it passes the other by
            // its allowance: (C_dev + C_app)/m_dev mcu, plus L.
            let fair_mcu =
                (allowance_units(c, mcu, m) + allowance_units(c, mcu, app_m)).div_ceil(m);
            let limited = ms(limit) + mcu.as_nanos() as f64 * fair_mcu as f64 / 1e6;
            // The failed thread's CPU in the failure: its weighted share;
            // warp adds at most L per L + U (§2.2) and no long-term share.
            let span = end(&r) - failed_at;
            let got = runs(&r, "device")?
                .into_iter()
                .map(|(s, e)| {
                    e.min(end(&r))
                        .as_nanos()
                        .saturating_sub(s.max(failed_at).as_nanos())
                })
                .sum::<u64>() as f64
                / span.as_nanos() as f64;
            let weighted = app_m as f64 / (m + app_m) as f64;
            let warped_max = hsched_analysis::bvt_config::max_warped_time(limit, unwarp, span)
                .map_or(0.0, |d| d.as_nanos() as f64 / span.as_nanos() as f64);
            let mut checks = vec![
                Check::new(
                    "healthy: worst dispatch latency of the device (ms)",
                    0.0,
                    ms(healthy),
                    0.0,
                    "exact: \"a large W_i to get immediate dispatch when it unblocks\" (no switch cost in this scenario)",
                ),
                Check::new(
                    format!("failed, no limits (L = U = 0): longest run (ms); the rule: (W + C_i)/m = {hold_mcu} mcu"),
                    hold,
                    ms(longest(&free)?),
                    mcu.as_nanos() as f64 / 1e6,
                    "one mcu: where the app's A stood within its mcu when the device failed",
                ),
                Check::new(
                    format!("failed, L = {}ms, U = {}ms: longest run (ms); at most L + (C_dev + C_app)/m", ms(limit), ms(unwarp)),
                    limited,
                    ms(longest(&r)?),
                    mcu.as_nanos() as f64 / 1e6,
                    "a bound, as the paper states it (the limits \"limit the short-term CPU consumption\"): L warped, then at most one turn of §2.1's fair alternation (a rewarp U later may cut the app's turn short); one mcu for where the thread's A stood within its mcu",
                )
                .at_most(),
                Check::new(
                    "failed, with limits: the device's CPU share",
                    weighted,
                    got,
                    warped_max + (c.as_nanos() + mcu.as_nanos()) as f64 / span.as_nanos() as f64,
                    "its weighted share; warp may add at most L per L + U (max_warped_time over the failure) and fair sharing errs by at most C + 1 mcu (§2.1) over the span",
                ),
            ];
            // The paper's bound is for "a large warp": one worth 200ms or
            // more of lead, as this file's.
            if hold >= 200.0 {
                checks.push(
                    Check::new(
                        "failed, no limits: longest run (ms), the paper's bound",
                        200.0,
                        ms(longest(&free)?),
                        0.0,
                        "the paper: \"could run for 200 milliseconds or more\" (a lower bound, stated for a large warp)",
                    )
                    .at_least(),
                );
            }
            Ok(checks)
        }
    }
}

/// The release of the last job of `name`'s finite `periodic` phase: the
/// program goes on to its failure straight from that job.
fn failure_start(scn: &Scenario, name: &str) -> Result<Instant, String> {
    let t = scn
        .threads
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("the scenario has no thread `{name}`"))?;
    match t.program.ops.first() {
        Some(Op::Periodic {
            period,
            offset,
            jobs: Some(n),
            ..
        }) => Ok(Instant::ZERO + *offset + Duration(period.as_nanos() * n.saturating_sub(1))),
        _ => Err(format!(
            "`{name}` does not start with a finite periodic phase"
        )),
    }
}

// ----- §6.1.3: warps from priorities ------------------------------------------------------

/// The priority levels of `bvt-6.1.3-warps.toml`, highest first; the last
/// (warp 0) is the batch level.
const LEVELS: &[&[&str]] = &[&["ctl"], &["net"], &["ui"], &["cont"]];

/// §6.1.3's warps for `LEVELS` from the file's advances and limits
/// (`scale` multiplies each increment: 1 is the paper's rule).
fn level_warps(scn: &Scenario, scale: (u64, u64)) -> Result<Vec<u64>, String> {
    use hsched_analysis::bvt_config::{warps_for_advances, BvtClock, LevelThread};
    let p = bvt_params(scn, "bvt")?;
    let clock =
        BvtClock::new(p.duration("mcu"), p.duration("allowance")).map_err(|e| e.to_string())?;
    let levels = LEVELS
        .iter()
        .map(|names| {
            names
                .iter()
                .map(|n| {
                    let at = bvt_attach(scn, n)?;
                    Ok(LevelThread {
                        advance: at.int("advance") as u64,
                        warp_limit: at.duration("warp_limit"),
                    })
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .collect::<Result<Vec<_>, String>>()?;
    let warps = warps_for_advances(&levels, &clock).map_err(|e| e.to_string())?;
    Ok(warps.into_iter().map(|w| w * scale.0 / scale.1).collect())
}

fn with_warps(scn: &mut Scenario, warps: &[u64]) {
    for (names, w) in LEVELS.iter().zip(warps) {
        for t in scn
            .threads
            .iter_mut()
            .filter(|t| names.contains(&t.name.as_str()))
        {
            t.params.set("warp", hsched_core::Value::Int(*w as i64));
        }
    }
}

/// The same threads under `fp`, in `LEVELS`' order.
fn as_fixed_priority(scn: &mut Scenario) {
    for s in scn.schedulers.iter_mut().filter(|s| s.name == "bvt") {
        s.policy = "fp".into();
        s.params = hsched_core::Params::new();
    }
    let n = LEVELS.len() as i64;
    for (i, names) in LEVELS.iter().enumerate() {
        for t in scn
            .threads
            .iter_mut()
            .filter(|t| names.contains(&t.name.as_str()))
        {
            t.params =
                hsched_core::Params::new().with("prio", hsched_core::Value::Int(n - i as i64));
        }
    }
}

fn worst_response(r: &RunResult, name: &str) -> Result<f64, String> {
    Ok(jobs(r, &[name])?
        .iter()
        .filter_map(|j| j.response())
        .max()
        .map_or(f64::INFINITY, ms))
}

fn warps() -> Entry {
    Entry {
        name: "bvt-6.1.3-warps",
        source: "BVT §6.1.3: warp assignment from priorities",
        claim: "warps picked level by level (each level's warp the next lower one's plus the largest L_i/w_i of its threads, L_i = C where there is no limit) \"mimic the behavior of a conventional priority scheduler\": the highest thread responds in t + c, the others as under priorities",
        scenarios: &["scenarios/papers/bvt-6.1.3-warps.toml"],
        run: || warps_checks(scenario!("bvt-6.1.3-warps.toml")),
    }
}

/// §6.1.3 on `file` (a variant may change runs, periods, advances, limits).
fn warps_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    let scn = parse(file)?;
    let w = level_warps(&scn, (1, 1))?;
    let bvt = simulate_with(file, |s| with_warps(s, &w))?;
    let fp = simulate_with(file, as_fixed_priority)?;
    let switch = scn.machine.context_switch;
    let top = LEVELS[0][0];
    let top_run = match scn
        .threads
        .iter()
        .find(|t| t.name == top)
        .and_then(|t| t.program.ops.first())
    {
        Some(Op::Periodic { body, .. }) => match body.as_slice() {
            [Op::Run(Dist::Fixed(d))] => *d,
            _ => return Err(format!("`{top}` runs a fixed time per job")),
        },
        _ => return Err(format!("`{top}` is periodic")),
    };
    let mut checks = vec![Check::new(
        format!("{top}: worst response (ms), t + c (warps {w:?})"),
        ms(top_run + switch),
        worst_response(&bvt, top)?,
        0.0,
        "exact: \"its response time is t + c where c is the context switch time\"",
    )];
    let names: Vec<&str> = LEVELS[..LEVELS.len() - 1]
        .iter()
        .flat_map(|l| l.iter().copied())
        .collect();
    for name in &names {
        checks.push(Check::new(
            format!("{name}: worst response under BVT (ms), against fp's"),
            worst_response(&fp, name)?,
            worst_response(&bvt, name)?,
            ms(switch) * LEVELS.len() as f64,
            "a context switch per level above it: BVT's equivalence \"to a conventional priority scheduler\" holds up to switch costs",
        ));
    }
    Ok(checks)
}

// ----- §2.5: multi-level, threshold and direct modes -----------------------------------

fn worst_latency(r: &RunResult, name: &str) -> Result<Duration, String> {
    Ok(thread(r, name)?
        .wakeup_latencies
        .iter()
        .max()
        .copied()
        .unwrap_or_default())
}

fn received(r: &RunResult, node_or_thread: &str) -> Result<f64, String> {
    let d = match r.nodes.iter().find(|n| n.name == node_or_thread) {
        Some(n) => n.received,
        None => thread(r, node_or_thread)?.cpu_time,
    };
    Ok(d.as_nanos() as f64 / r.horizon.as_nanos() as f64)
}

/// The threads attached to scheduler `parent` that ask for warp.
fn warping_threads(scn: &Scenario, parent: &str) -> Result<Vec<(String, i64)>, String> {
    let mut out = Vec::new();
    for t in scn.threads.iter().filter(|t| t.parent == parent) {
        let at = bvt_attach(scn, &t.name)?;
        if at.bool("warp_on") && at.int("warp") > 0 {
            out.push((t.name.clone(), at.int("warp")));
        }
    }
    Ok(out)
}

fn threshold() -> Entry {
    Entry {
        name: "bvt-2.5-threshold",
        source: "BVT §2.5 and §6.3: two-level BVT, threshold mode",
        claim: "in threshold mode a second-level thread runs with the second-level scheduler's warp at the first level if its warp is over the threshold (the MPEG player gets low latency even against first-level threads); below it, warp only gives preference among the second level's threads; the first level still shares by weight",
        scenarios: &["scenarios/papers/bvt-2.5-threshold.toml"],
        run: || threshold_checks(scenario!("bvt-2.5-threshold.toml")),
    }
}

/// §2.5's threshold mode on `file` (a variant may change the threshold or
/// the warps).
fn threshold_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    let scn = parse(file)?;
    let limit = bvt_params(&scn, "be")?.int("threshold");
    let r = simulate(file)?;
    let mut checks = Vec::new();
    for (name, warp) in warping_threads(&scn, "be")? {
        let over = warp > limit;
        checks.push(Check::new(
            format!("{name} (warp {warp}, threshold {limit}) dispatched at once at every wakeup (1 = yes)"),
            f64::from(u8::from(over)),
            f64::from(u8::from(worst_latency(&r, &name)?.is_zero())),
            0.0,
            "exact, by the rule: over the threshold the level is warped at the first level and passes the batch thread there; at or under it the level competes unwarped, and the thread waits whenever the first level's batch thread holds the CPU",
        ));
    }
    let m_be = scn
        .schedulers
        .iter()
        .find(|s| s.name == "be")
        .and_then(|s| s.parents.first())
        .map(|l| {
            l.params
                .resolve(&(hsched_policies::bvt::INFO.child_params)())
        })
        .ok_or("`be` has no parent link")??
        .int("advance") as f64;
    let m_cont = bvt_attach(&scn, "cont")?.int("advance") as f64;
    checks.push(Check::new(
        "CPU of be over cont's (the first level's weights)",
        m_cont / m_be,
        received(&r, "be")? / received(&r, "cont")?,
        0.02,
        "weighted fair sharing within C + 1 mcu (11ms) over 4s, plus whole-mcu charging of the level's short warped runs (up to 1 mcu each)",
    ));
    Ok(checks)
}

fn direct() -> Entry {
    Entry {
        name: "bvt-2.5-direct",
        source: "BVT §2.5: two-level BVT, direct mode",
        claim: "a system may allocate 30% of the CPU to network processing spread across many threads; in direct mode the second-level scheduler runs with the warp and warp time limit of the thread it executes, \"so the dispatch latency is not affected by running the network processing in this aggregate, assuming the aggregate CPU share is adequate\"",
        scenarios: &["scenarios/papers/bvt-2.5-direct.toml"],
        run: || direct_checks(scenario!("bvt-2.5-direct.toml")),
    }
}

/// §2.5's direct mode on `file`.
fn direct_checks(file: (&str, &str)) -> Result<Vec<Check>, String> {
    let scn = parse(file)?;
    let r = simulate(file)?;
    // The same threads directly under the first level.
    let flat = simulate_with(file, |s| {
        for t in s.threads.iter_mut().filter(|t| t.parent == "net") {
            t.parent = "root".into();
        }
    })?;
    // Threshold mode with the level's own warp (0): what direct mode avoids.
    let lent = simulate_with(file, |s| {
        for sch in s.schedulers.iter_mut().filter(|s| s.name == "net") {
            sch.params
                .set("mode", hsched_core::Value::Str("threshold".into()));
        }
    })?;
    let mut checks = Vec::new();
    for (name, warp) in warping_threads(&scn, "net")? {
        checks.push(Check::new(
            format!(
                "{name} (warp {warp}): worst dispatch latency in the aggregate (ms), against flat"
            ),
            ms(worst_latency(&flat, &name)?),
            ms(worst_latency(&r, &name)?),
            0.0,
            "exact: the aggregate carries the thread's own warp and limit to the first level",
        ));
    }
    let waited = warping_threads(&scn, "net")?
        .iter()
        .map(|(n, _)| worst_latency(&lent, n))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .max()
        .unwrap_or_default();
    checks.push(Check::new(
        format!("in threshold mode with the level's own warp instead, some thread waits (1 = holds; {:.1}ms)", ms(waited)),
        1.0,
        f64::from(u8::from(!waited.is_zero())),
        0.0,
        "the measurement behind the mode: without the thread's warp the aggregate waits behind the first level's batch thread",
    ));
    let m_net = scn
        .schedulers
        .iter()
        .find(|s| s.name == "net")
        .and_then(|s| s.parents.first())
        .map(|l| {
            l.params
                .resolve(&(hsched_policies::bvt::INFO.child_params)())
        })
        .ok_or("`net` has no parent link")??
        .int("advance") as f64;
    let m_cont = bvt_attach(&scn, "cont")?.int("advance") as f64;
    checks.push(Check::new(
        "the aggregate's CPU share (the paper's 30%; here 1/m over the sum)",
        (1.0 / m_net) / (1.0 / m_net + 1.0 / m_cont),
        received(&r, "net")?,
        0.015,
        "weighted fair sharing within C + 1 mcu (11ms of 4s), plus whole-mcu charging: each of the aggregate's runs that ends mid-mcu is charged the whole mcu (some 200 short runs a second here)",
    ));
    Ok(checks)
}

// ----- §4: scheduler overhead (timing) ---------------------------------------------------

/// The best (least) wall time of `rounds` simulations of `file`, after a
/// warm-up, over the simulated time: the CPU one second of this schedule
/// costs to decide, simulator included.
fn cost_fraction(file: (&str, &str), rounds: usize) -> Result<(f64, u64), String> {
    let scn = parse(file)?;
    let opts = hsched_sim::SimOptions::default();
    let mut best = u128::MAX;
    let mut decisions = 0;
    for round in 0..=rounds {
        let t0 = std::time::Instant::now();
        let r = hsched_sim::run(&scn, &opts).map_err(|e| e.to_string())?;
        let took = t0.elapsed().as_nanos();
        decisions = r.decisions;
        if round > 0 {
            best = best.min(took);
        }
    }
    Ok((best as f64 / scn.horizon.as_nanos() as f64, decisions))
}

fn overhead() -> Entry {
    Entry {
        name: "bvt-overhead",
        source: "BVT §4: scheduler overhead",
        claim: "\"the scheduler overhead is less than 0.3% for all runs, even with two-level scheduling\" (measured in the kernel, log generation included: a slight overestimate)",
        scenarios: &[
            "scenarios/papers/bvt-4.2-table3.toml",
            "scenarios/papers/bvt-2.5-threshold.toml",
        ],
        run: || {
            // A timing: the CPU spent deciding over the time decided. Here
            // the whole simulator's work (events, accounting, the policy)
            // per simulated second, an overestimate as the paper's was.
            let (flat, n1) = cost_fraction(scenario!("bvt-4.2-table3.toml"), 5)?;
            let (two, n2) = cost_fraction(scenario!("bvt-2.5-threshold.toml"), 5)?;
            Ok(vec![
                Check::new(
                    format!("one level (Table 3's players and int): simulator time per simulated time ({n1} decisions)"),
                    0.003,
                    flat,
                    0.0,
                    "the paper's bound (\"less than 0.3%\"); best of 5 rounds after a warm-up",
                )
                .at_most(),
                Check::new(
                    format!("two levels (threshold mode): simulator time per simulated time ({n2} decisions)"),
                    0.003,
                    two,
                    0.0,
                    "as above, \"even with two-level scheduling\"",
                )
                .at_most(),
            ])
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_pass(checks: &[Check]) {
        for c in checks {
            assert!(
                c.passed(),
                "{}: paper {} measured {}",
                c.quantity,
                c.paper,
                c.measured
            );
        }
    }

    fn variant(file: (&str, &str), edits: &[(&str, &str)]) -> String {
        let mut text = file.1.to_string();
        for (from, to) in edits {
            assert!(text.contains(from), "{from}");
            text = text.replace(from, to);
        }
        text
    }

    #[test]
    fn fig1_window_follows_the_rule_for_other_weights_and_allowances() {
        let file = scenario!("bvt-fig1.toml");
        for (gcc, bigsim, c) in [
            ("1", "3", "30ms"),
            ("2", "3", "20ms"),
            ("1", "1", "30ms"),
            ("3", "5", "40ms"),
        ] {
            let text = variant(
                file,
                &[
                    ("advance = 1 }", &format!("advance = {gcc} }}")),
                    ("advance = 2 }", &format!("advance = {bigsim} }}")),
                    ("allowance = \"20ms\"", &format!("allowance = \"{c}\"")),
                ],
            );
            let checks = fig1_window_checks((file.0, &text)).unwrap();
            all_pass(&checks);
        }
    }

    #[test]
    fn the_device_thread_follows_the_rule_for_other_parameters() {
        let file = scenario!("bvt-2.2-device.toml");
        for edits in [
            vec![
                ("warp = 200", "warp = 300"),
                ("advance = 10, warp", "advance = 5, warp"),
            ],
            vec![(
                "warp_limit = \"1ms\", unwarp = \"99ms\"",
                "warp_limit = \"2ms\", unwarp = \"48ms\"",
            )],
            vec![
                ("allowance = \"20ms\"", "allowance = \"30ms\""),
                ("warp = 200", "warp = 120"),
            ],
        ] {
            let text = variant(file, &edits);
            all_pass(&device_checks((file.0, &text)).unwrap());
        }
    }

    #[test]
    fn warps_from_priorities_mimic_fp_for_other_parameters() {
        let file = scenario!("bvt-6.1.3-warps.toml");
        for edits in [
            vec![
                ("run = \"2ms\"", "run = \"1ms\""),
                (
                    "advance = 1, warp = 0, warp_on",
                    "advance = 3, warp = 0, warp_on",
                ),
            ],
            vec![
                ("warp_limit = \"5ms\"", "warp_limit = \"8ms\""),
                ("run = \"4ms\"", "run = \"7ms\""),
            ],
            vec![
                ("allowance = \"10ms\"", "allowance = \"20ms\""),
                ("period = \"50ms\"", "period = \"70ms\""),
            ],
        ] {
            let text = variant(file, &edits);
            all_pass(&warps_checks((file.0, &text)).unwrap());
        }
    }

    #[test]
    fn smaller_warp_increments_break_the_priority_order() {
        // The control for §6.1.3: with a third of the rule's increments a
        // higher thread is preempted by a lower one within its L_i.
        let file = scenario!("bvt-6.1.3-warps.toml");
        let scn = parse(file).unwrap();
        let w3 = level_warps(&scn, (1, 3)).unwrap();
        let short = simulate_with(file, |s| with_warps(s, &w3)).unwrap();
        let fp = simulate_with(file, as_fixed_priority).unwrap();
        let later = ["ctl", "net", "ui"]
            .iter()
            .any(|n| worst_response(&short, n).unwrap() > worst_response(&fp, n).unwrap() + 1.0);
        assert!(later, "warps {w3:?} kept the priority order");
    }

    #[test]
    fn the_threshold_decides_which_threads_borrow_the_levels_warp() {
        let file = scenario!("bvt-2.5-threshold.toml");
        for t in ["threshold = 10", "threshold = 600"] {
            let text = variant(file, &[("threshold = 100", t)]);
            all_pass(&threshold_checks((file.0, &text)).unwrap());
        }
        let direct = scenario!("bvt-2.5-direct.toml");
        let text = variant(direct, &[("advance = 7 }", "advance = 4 }")]);
        all_pass(&direct_checks((direct.0, &text)).unwrap());
    }

    #[test]
    fn the_overhead_entry_runs_and_yields_finite_numbers() {
        let checks = (overhead().run)().unwrap();
        assert!(checks
            .iter()
            .all(|c| c.measured.is_finite() && c.measured > 0.0));
    }
}
