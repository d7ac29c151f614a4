//! Reproductions from the Vassal paper (Candea & Jones, "Vassal: Loadable
//! Scheduler Support for Multi-Policy Scheduling", USENIX Windows NT
//! Symposium 1998).
//!
//! Table 2: periodic 1ms wakeups through the loaded sample scheduler
//! (`rtwake`, loaded over the default `rr` under an `fp` root) against the
//! same wakeups through the default scheduler's clock tick, both beside a
//! CPU-bound thread, on a machine whose tick is NT's finest, 1/1024s
//! (976.5625us, rounded down to 976562ns: the simulator's time is whole
//! nanoseconds). The intervals between consecutive wakeups (dispatch to
//! dispatch) are compared with the paper's in microseconds.
//!
//! Both scenarios carry the unscheduled activity §6 blames for the late
//! tail ("interrupts, DPCs, and other non-scheduled system activities"):
//! an `[[interrupt]]` source whose handlers take the CPU from whatever is
//! on it and delay a dispatch they span. Its handlers last up to 500us (the
//! paper's "~0.5ms late"); its rate is the one at which the first-order
//! rule below puts the sample scheduler's mean 2us above the period (the
//! paper's 1002), so that mean is a calibration, said as such; the spread
//! (std) and the tail (max) are then predictions.
//!
//! The first-order rule (one handler at a time; the scenario's handlers
//! take under 1% of the CPU): the sample scheduler's loop asks for its next
//! wakeup `period - work` after its work ends (the paper's `SET, 300 -
//! estimate`), so an interval is the period plus the handler time that
//! fell in its way: a handler of length D arriving at `a` before the
//! wakeup W delays the dispatch by `a + D - W` when it spans W, and one
//! arriving during the `w` of switch and work after it delays the request
//! by D. With Poisson arrivals at rate λ the excess X over the period has
//! E[X] = λ(E[D²]/2 + w·E[D]) and E[X²] = λ(E[D³]/3 + w·E[D²]), computed
//! here from the scenario's own parameters (the moments of D by drawing
//! from its distribution): the entry follows a scenario whose interrupts
//! are changed.

use super::{scenario, simulate, simulate_with, Check, Entry};
use crate::repro::parse;
use hsched_model::{Action, Dist, Op, RunResult, Scenario};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The period asked for, in microseconds.
const PERIOD_US: f64 = 1000.0;

const RTWAKE: (&str, &str) = scenario!("vassal-table2-rtwake.toml");
const TICK: (&str, &str) = scenario!("vassal-table2-tick.toml");

/// The Vassal entries.
pub fn entries() -> Vec<Entry> {
    vec![Entry {
        name: "vassal-table2",
        source: "Vassal §5-§6, Table 2 (periodic 1ms wakeups)",
        claim: "wakeups through the loaded sample scheduler are never early and tightly spread \
                (paper, µs: min 996, max 1485, avg 1002, std 21); through the multimedia timers \
                (the clock tick) they are early by up to 925µs (min 75, max 1566, avg 996, std \
                82); with both, some samples are up to ~0.5ms late, which §6 puts down to \
                interrupts, DPCs and other unscheduled activity",
        scenarios: &[
            "scenarios/papers/vassal-table2-rtwake.toml",
            "scenarios/papers/vassal-table2-tick.toml",
        ],
        run: table_2,
    }]
}

/// min, max, mean and population standard deviation of the intervals
/// between consecutive wakeups of `timer`, in µs, how many there were,
/// and how many of its wakeups were dispatched before the time asked for.
struct Intervals {
    min: f64,
    max: f64,
    mean: f64,
    std: f64,
    n: usize,
    early: usize,
}

fn stats(iv: &[f64]) -> (f64, f64, f64, f64) {
    let n = iv.len() as f64;
    let mean = iv.iter().sum::<f64>() / n;
    let var = iv.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (
        iv.iter().copied().fold(f64::INFINITY, f64::min),
        iv.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mean,
        var.sqrt(),
    )
}

fn intervals(r: &RunResult) -> Result<Intervals, String> {
    let t = r
        .threads
        .iter()
        .find(|t| t.name == "timer")
        .ok_or("the scenario has no thread `timer`")?
        .id;
    let jobs: Vec<_> = r.jobs.iter().filter(|j| j.thread == t).collect();
    let starts: Vec<u64> = jobs
        .iter()
        .filter_map(|j| j.start.map(|s| s.as_nanos()))
        .collect();
    if starts.len() < 1000 {
        return Err(format!("only {} wakeups were dispatched", starts.len()));
    }
    let iv: Vec<f64> = starts
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e3)
        .collect();
    let (min, max, mean, std) = stats(&iv);
    Ok(Intervals {
        min,
        max,
        mean,
        std,
        n: iv.len(),
        early: jobs
            .iter()
            .filter(|j| j.start.is_some_and(|s| s < j.release))
            .count(),
    })
}

/// E[D^k] for k = 1..=5 of a duration distribution, in µs^k, from 200,000
/// draws of a fixed stream (the simulator's own `draw`).
fn moments(d: &Dist) -> [f64; 5] {
    let mut rng = ChaCha8Rng::seed_from_u64(0x007a_55a1);
    let n = 200_000;
    let mut m = [0.0; 5];
    for _ in 0..n {
        let x = hsched_model::draw(d, &mut rng).as_nanos() as f64 / 1e3;
        let mut p = 1.0;
        for mk in &mut m {
            p *= x;
            *mk += p;
        }
    }
    m.map(|s| s / n as f64)
}

/// The first-order rule's prediction for the sample scheduler: E[X],
/// E[X²] and E[X⁴] of the excess over the period, in µs.
struct Rule {
    ex: f64,
    ex2: f64,
    ex4: f64,
}

fn rule(scn: &Scenario) -> Result<Rule, String> {
    let timer = scn
        .threads
        .iter()
        .find(|t| t.name == "timer")
        .ok_or("no thread `timer`")?;
    // The timer's work per wakeup: the fixed `run` in its loop.
    let work = timer
        .program
        .ops
        .iter()
        .find_map(|op| match op {
            Op::Loop { body, .. } => body.iter().find_map(|o| match o {
                Op::Run(Dist::Fixed(d)) => Some(*d),
                _ => None,
            }),
            _ => None,
        })
        .ok_or("the timer's loop has no fixed `run`")?;
    let w = (work + scn.machine.context_switch).as_nanos() as f64 / 1e3;
    let (mut ex, mut ex2, mut ex4) = (0.0, 0.0, 0.0);
    for e in &scn.script {
        let Action::Interrupt(spec) = &e.action else {
            continue;
        };
        if !spec.cpus.contains(&0) {
            continue;
        }
        let lambda = 1.0 / moments(&spec.every)[0];
        let d = moments(&spec.duration);
        ex += lambda * (d[1] / 2.0 + w * d[0]);
        ex2 += lambda * (d[2] / 3.0 + w * d[1]);
        ex4 += lambda * (d[4] / 5.0 + w * d[3]);
    }
    Ok(Rule { ex, ex2, ex4 })
}

/// The tick's own arithmetic, without interrupts: each release on the
/// period's grid is dispatched at the first tick at or after it, or at
/// once if the previous wakeup is still on the CPU; intervals in µs.
fn tick_rule(scn: &Scenario) -> Result<Vec<f64>, String> {
    let tick = scn.machine.tick.ok_or("no tick")?.as_nanos();
    let timer = scn
        .threads
        .iter()
        .find(|t| t.name == "timer")
        .ok_or("no thread `timer`")?;
    let Some(Op::Periodic {
        period,
        offset,
        body,
        ..
    }) = timer.program.ops.first()
    else {
        return Err("the timer is not periodic".into());
    };
    let work = match body.as_slice() {
        [Op::Run(Dist::Fixed(d))] => d.as_nanos(),
        _ => return Err("the timer's job is not one fixed `run`".into()),
    };
    let cs = scn.machine.context_switch.as_nanos();
    let (p, horizon) = (period.as_nanos(), scn.horizon.as_nanos());
    let mut starts = Vec::new();
    let mut finish = 0u64;
    let mut r = offset.as_nanos();
    while r < horizon {
        let (start, end) = if r <= finish && !starts.is_empty() {
            (finish, finish + work)
        } else {
            let s = r.div_ceil(tick) * tick;
            (s, s + cs + work)
        };
        if start >= horizon {
            break;
        }
        starts.push(start);
        finish = end;
        r += p;
    }
    Ok(starts
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e3)
        .collect())
}

fn without_interrupts(scn: &mut Scenario) {
    scn.script
        .retain(|e| !matches!(e.action, Action::Interrupt(_)));
}

fn table_2() -> Result<Vec<Check>, String> {
    let rt_scn = parse(RTWAKE)?;
    let tick_scn = parse(TICK)?;
    let rt = intervals(&simulate(RTWAKE)?)?;
    let rt_quiet = intervals(&simulate_with(RTWAKE, without_interrupts)?)?;
    let tick = intervals(&simulate(TICK)?)?;
    let tick_quiet = intervals(&simulate_with(TICK, without_interrupts)?)?;
    let rule = rule(&rt_scn)?;
    let n = rt.n as f64;
    let rule_std = (rule.ex2 - rule.ex * rule.ex).max(0.0).sqrt();
    // Standard errors of the mean and of the std over n intervals, from the
    // rule's moments (the tail is heavy: the std's error is large).
    let se_mean = (rule.ex2 / n).sqrt();
    let se_std = (rule.ex4 / n).sqrt() / (2.0 * rule_std.max(1e-9));
    let predicted = tick_rule(&tick_scn)?;
    let (p_min, p_max, _, p_std) = stats(&predicted);
    Ok(vec![
        // The sample scheduler.
        Check::new(
            "sample scheduler: min interval (µs)",
            996.0,
            rt.min,
            5.0,
            "never early and never short: a late wakeup is not caught up, the next is asked for \
             from it; the paper's 4µs early is its clock's jitter, which the simulator has not",
        ),
        Check::new(
            "sample scheduler: wakeups dispatched before their time",
            0.0,
            rt.early as f64,
            0.0,
            "rtwake's guarantee: it never runs a thread before its wakeup",
        ),
        Check::new(
            "sample scheduler: max interval (µs)",
            1485.0,
            rt.max,
            30.0,
            "the tail is the longest handler, 500µs, the paper's '~0.5ms late' (its two rows \
             give 485 and 566): ±30µs, 6% of it",
        ),
        Check::new(
            "sample scheduler: mean interval (µs)",
            1002.0,
            rt.mean,
            0.5,
            "calibrated: the handlers' rate is the one the rule puts at +2µs; ±0.5µs is three \
             standard errors of a mean over the run's 20,000 intervals",
        ),
        Check::new(
            "sample scheduler: std of intervals (µs)",
            21.0,
            rt.std,
            4.0,
            "a prediction: the paper does not say how many intervals it took; ±4µs is two \
             standard errors of a std over 10,000 intervals of this heavy tail (from the rule's \
             fourth moment: ~2µs)",
        ),
        Check::new(
            "sample scheduler: std without interrupts (µs)",
            21.0,
            rt_quiet.std,
            4.0,
            "the same wakeups with the [[interrupt]] source removed",
        )
        .differs(
            "measured: without the interrupt source every interval is exactly the period (std \
             0, max 1000): the spread is the interrupts', as §6 says",
        ),
        Check::new(
            "sample scheduler: mean excess, rule (µs)",
            rule.ex,
            rt.mean - PERIOD_US,
            4.0 * se_mean + 0.05 * rule.ex,
            "the first-order rule from the scenario's interrupt parameters, λ(E[D²]/2 + \
             w·E[D]); four standard errors of the mean, plus 5% for two handlers in one window, \
             which the rule leaves out",
        ),
        Check::new(
            "sample scheduler: std of intervals, rule (µs)",
            rule_std,
            rt.std,
            3.0 * se_std + 0.05 * rule_std,
            "the rule's sqrt(λ(E[D³]/3 + w·E[D²]) - E[X]²); three standard errors of the std \
             over the run's intervals (from the rule's fourth moment), plus 5% for what a first-order \
             rule leaves out",
        ),
        // The tick.
        Check::new(
            "timer tick: most early, 1000 - min interval (µs)",
            PERIOD_US - 75.0,
            PERIOD_US - tick.min,
            10.0,
            "a wakeup late by most of a tick is followed at once by the next one, which was \
             due: the shortest interval is one wakeup's switch and work (20µs + 50µs here); the \
             paper does not give its callback's work, ±10µs",
        ),
        Check::new(
            "timer tick: mean interval (µs)",
            996.0,
            tick.mean,
            5.0,
            "a periodic timer keeps its period on average however the tick falls; the paper's \
             mean is 4µs under the period, so ±5µs around it holds the period itself",
        ),
        Check::new(
            "timer tick: most late, max interval - 1000 (µs)",
            1566.0 - PERIOD_US,
            tick.max - PERIOD_US,
            30.0,
            "one period plus the ~0.5ms tail of unscheduled activity (§6: 'with both methods'): \
             ±30µs, as for the sample scheduler",
        )
        .differs(
            "measured: hsched's tick dispatches a release at the first tick at or after it, so \
             with a 976.562µs tick against the 1ms grid a tick goes by with no release every \
             ~42 wakeups and the interval is two ticks (1953µs; without interrupts max - 1000 is \
             953µs, the tick rule's own arithmetic); the handlers add their tail to that. NT's \
             multimedia timers evidently did not skip ticks so (the paper's max is 1000µs plus \
             the tail); the paper does not say how they were timed",
        ),
        Check::new(
            "timer tick: std of intervals (µs)",
            82.0,
            tick.std,
            10.0,
            "twice the sample scheduler's tolerance: the tick row's spread is four times larger",
        )
        .differs(
            "measured: the one-or-two-tick beat sets it; without interrupts the std is already \
             that of the tick rule's arithmetic (about 250µs: one interval in 42 of two ticks, \
             and the catch-up after the latest wakeups), see the next checks",
        ),
        Check::new(
            "timer tick without interrupts: std, tick rule (µs)",
            p_std,
            tick_quiet.std,
            0.5,
            "the first-tick-at-or-after rule computed from the scenario's tick, period, switch \
             and work; ±0.5µs for rounding to whole nanoseconds",
        ),
        Check::new(
            "timer tick without interrupts: max interval, tick rule (µs)",
            p_max,
            tick_quiet.max,
            0.01,
            "the same rule: two ticks; exact to the nanosecond",
        ),
        Check::new(
            "timer tick without interrupts: min interval, tick rule (µs)",
            p_min,
            tick_quiet.min,
            0.01,
            "the same rule: a catch-up, one wakeup's switch and work; exact",
        ),
    ])
}

/// Timing entries (`hsched repro --timing`).
pub fn timing_entries() -> Vec<Entry> {
    vec![Entry {
        name: "vassal-table1",
        source: "Vassal §6, Table 1 (context switch time with a loaded scheduler)",
        claim: "loading the sample scheduler raises the context switch time, observed by 10 \
                threads, by about 8% (Pentium-133, µs: median 19.71 -> 21.32, mean 19.71 -> \
                21.17) over the same kernel with the built-in scheduler",
        scenarios: &[],
        run: table_1,
    }]
}

/// The paper's ratio of loaded to built-in context switch time: the
/// medians, 21.32 / 19.71 (the means give 1.074).
const TABLE_1_RATIO: f64 = 21.32 / 19.71;

/// One decision (a quantum expiry, hsched's context switch) of `rr` built
/// in against the same `rr` loaded through the plugin ABI, 10 CPU-bound
/// threads on one CPU as in the paper's program, measured side by side:
/// a warm-up round first, then the best of 5 rounds of each, interleaved.
fn table_1() -> Result<Vec<Check>, String> {
    use crate::bench::plugin::{measure, rr_plugin};
    let plugin = rr_plugin().map_err(|e| e.to_string())?;
    let extra = [plugin.policies()[0].info];
    let quanta = 20_000;
    let err = |e: crate::CliError| e.to_string();
    measure("rr", &[], 10, quanta / 4).map_err(err)?;
    measure("rr-abi", &extra, 10, quanta / 4).map_err(err)?;
    let (mut built_in, mut loaded, mut callbacks) = (f64::INFINITY, f64::INFINITY, 0.0);
    for _ in 0..5 {
        built_in = built_in.min(measure("rr", &[], 10, quanta).map_err(err)?.0);
        let (ns, calls) = measure("rr-abi", &extra, 10, quanta).map_err(err)?;
        loaded = loaded.min(ns);
        callbacks = calls;
    }
    let added = (loaded - built_in) / callbacks.max(1.0);
    // The quantity names what one switch cost here, so a ratio off the
    // paper's can be read as callbacks × the cost of one crossing.
    Ok(vec![Check::new(
        format!(
            "loaded / built-in time per context switch ({built_in:.0} -> {loaded:.0} ns; \
             {callbacks:.1} plugin callbacks of {added:.0} ns each)"
        ),
        TABLE_1_RATIO,
        loaded / built_in,
        0.05,
        "the paper's medians give 1.082 and its means 1.074; its standard deviations are \
         6-8% of the times: ±0.05",
    )
    .differs(
        "measured (the figures in the quantity): a decision crosses the plugin boundary twice, \
         and each crossing costs about as much as a whole built-in decision or more, because \
         hsched's boundary encodes every callback and a snapshot of its context into a message and \
         decodes the answer (plugin-host's adapter), where Vassal calls a driver in the same \
         kernel through a function pointer ('a small number of memory reads', §3) and its \
         19.7us context switch is mostly NT's own path",
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_2_has_the_papers_shape() {
        let rt = intervals(&simulate(RTWAKE).unwrap()).unwrap();
        assert!(rt.min >= PERIOD_US, "{}", rt.min);
        assert_eq!(rt.early, 0);
        let quiet = intervals(&simulate_with(RTWAKE, without_interrupts).unwrap()).unwrap();
        assert_eq!((quiet.min, quiet.max, quiet.std), (1000.0, 1000.0, 0.0));
        let checks = table_2().unwrap();
        let failed: Vec<_> = checks
            .iter()
            .filter(|c| {
                matches!(
                    c.verdict(),
                    super::super::Verdict::Fail | super::super::Verdict::Stale
                )
            })
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
    }

    /// The timing entry runs and gives a finite ratio; its verdict is not
    /// asserted (it depends on the machine and the build).
    #[test]
    fn table_1_runs() {
        let checks = table_1().unwrap();
        assert!(checks
            .iter()
            .all(|c| c.measured.is_finite() && c.measured > 0.0));
    }

    /// A variant with twice the interrupt rate and shorter handlers: the
    /// rule's checks follow it (the paper's numbers then need not hold).
    #[test]
    fn the_rule_follows_other_interrupt_parameters() {
        let (path, text) = RTWAKE;
        let text = text
            .replace("exponential = \"28ms\"", "exponential = \"14ms\"")
            .replace("[\"10us\", \"500us\"]", "[\"50us\", \"200us\"]");
        let scn = hsched_scenario::parse(&text, path).unwrap();
        let r = rule(&scn).unwrap();
        let got = intervals(&simulate((path, Box::leak(text.into_boxed_str()))).unwrap()).unwrap();
        let n = got.n as f64;
        let std = (r.ex2 - r.ex * r.ex).sqrt();
        let se_std = (r.ex4 / n).sqrt() / (2.0 * std);
        assert!(
            (got.mean - PERIOD_US - r.ex).abs() <= 4.0 * (r.ex2 / n).sqrt() + 0.05 * r.ex,
            "mean {} rule {}",
            got.mean - PERIOD_US,
            r.ex
        );
        assert!(
            (got.std - std).abs() <= 3.0 * se_std + 0.05 * std,
            "std {} rule {std}",
            got.std
        );
        assert!(got.max <= PERIOD_US + 2.0 * 200.0 + 1.0, "{}", got.max);
    }
}
