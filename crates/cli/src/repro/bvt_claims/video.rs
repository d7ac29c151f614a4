//! BVT §4.1–4.2, Tables 1–3, in simulation: warped video players beside
//! grep and an interactive thread, their frames counted as the paper does.

use super::results::{end, jobs, ms, thread};
use crate::repro::{parse, scenario, simulate, simulate_with, Check, Entry};
use hsched_core::{Duration, Instant};
use hsched_model::{Dist, JobRecord, Op, RunResult, Scenario, SegmentKind};

/// A video player's frames as §4 counts them: released in the run, done,
/// late (done more than the deadline after the frame time), very late (not
/// done by the end of the test although due).
pub(super) struct Frames {
    released: f64,
    done: f64,
    late: f64,
    very_late: f64,
}

pub(super) fn frames(r: &RunResult, players: &[&str]) -> Result<Frames, String> {
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
pub(super) fn set_warp(scn: &mut Scenario, name: &str, warp: i64) {
    for t in scn
        .threads
        .iter_mut()
        .filter(|t| t.name == name || t.name.starts_with(&format!("{name}.")))
    {
        t.params.set("warp", hsched_core::Value::Int(warp));
    }
}

/// A thread's attachment parameter, as an integer.
pub(super) fn attach_int(scn: &Scenario, name: &str, key: &str) -> Result<i64, String> {
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
pub(super) fn max_job_run(scn: &Scenario, name: &str) -> Result<Duration, String> {
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

/// Of the times `who` waited while runnable (after a wakeup or a
/// preemption), the fraction that ended when one of `players`' frames
/// ended: 1 when the warped players are all it ever waited for.
pub(super) fn waits_end_at_frames(
    r: &RunResult,
    who: &str,
    players: &[&str],
) -> Result<f64, String> {
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

pub(super) fn table1() -> Entry {
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

pub(super) fn table2() -> Entry {
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

pub(super) fn table3() -> Entry {
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
