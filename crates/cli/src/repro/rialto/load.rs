//! Rialto's time constraints under load: sporadic constrained work against
//! spinning and reserving competitors (§5.3, Figs. 5-5 and 5-6) and the
//! random constraint stress test (§5.4).

use super::graph_rule::{
    assignable, find_msg, first_reserve, free_per_hyperperiod, reservations_and_switch,
};
use super::intervals::MS;
use super::replies::found;
use crate::repro::{parse, scenario, simulate, simulate_with, Bound, Check, Entry};
use hsched_core::{Duration, Instant};
use hsched_model::{LogKind, Op, RunResult, Scenario};

/// The worker's mean response (ms) and deadline misses with `n` copies of
/// the competitor thread `{prefix}1`, with or without its time constraint,
/// optionally holding a reservation of its own.
pub(super) fn sporadic(
    file: (&str, &str),
    prefix: &str,
    n: usize,
    constraint: bool,
    reserve: Option<Op>,
) -> Result<(f64, usize), String> {
    sporadic_with(file, prefix, n, constraint, reserve, |_| {})
}

/// [`sporadic`], after `edit` changes the scenario.
pub(super) fn sporadic_with(
    file: (&str, &str),
    prefix: &str,
    n: usize,
    constraint: bool,
    reserve: Option<Op>,
    edit: impl FnOnce(&mut Scenario),
) -> Result<(f64, usize), String> {
    let r = simulate_with(file, |scn| {
        edit(scn);
        competitors(scn, prefix, n);
        let worker = scn.threads.iter_mut().find(|t| t.name == "worker");
        let worker = worker.expect("the scenario has a worker");
        if !constraint {
            strip_messages(&mut worker.program.ops);
        }
        if let Some(op) = reserve {
            worker.program.ops.insert(0, op);
        }
    })?;
    let id = r
        .threads
        .iter()
        .find(|t| t.name == "worker")
        .expect("worker")
        .id;
    let end = Instant::ZERO + r.horizon;
    let jobs: Vec<_> = r.jobs.iter().filter(|j| j.thread == id).collect();
    let done: Vec<f64> = jobs
        .iter()
        .filter_map(|j| j.response())
        .map(|d| d.as_nanos() as f64 / 1e6)
        .collect();
    if done.is_empty() {
        return Err(format!("{}: the worker finished no job", file.0));
    }
    let misses = jobs.iter().filter(|j| j.missed(end)).count();
    Ok((done.iter().sum::<f64>() / done.len() as f64, misses))
}

/// Keeps `n` copies of the thread `{prefix}1`, named `{prefix}1..n`.
pub(super) fn competitors(scn: &mut Scenario, prefix: &str, n: usize) {
    let first = format!("{prefix}1");
    let template = scn
        .threads
        .iter()
        .find(|t| t.name == first)
        .cloned()
        .expect("the scenario has the competitor");
    scn.threads.retain(|t| !t.name.starts_with(prefix));
    scn.threads.extend((1..=n).map(|i| {
        let mut t = template.clone();
        t.name = format!("{prefix}{i}");
        t
    }));
}

/// Removes every message from a program (the worker without constraints).
pub(super) fn strip_messages(ops: &mut Vec<Op>) {
    ops.retain(|op| !matches!(op, Op::Msg { .. }));
    for op in ops {
        match op {
            Op::Loop { body, .. } | Op::Periodic { body, .. } => strip_messages(body),
            _ => {}
        }
    }
}

pub(super) fn fig_5_5() -> Entry {
    Entry {
        name: "rialto-fig5-5",
        source: "Rialto §5.3, Fig. 5-5",
        claim: "50ms of sporadic work due within 200ms, against 1 to 6 spinning activities and no reservations: with a time constraint the response is essentially constant, just above 50ms; without, it rises linearly, crossing 200ms at three competitors",
        scenarios: &["scenarios/papers/rialto-fig5-5.toml"],
        run: || {
            let file = scenario!("rialto-fig5-5.toml");
            let mut checks = Vec::new();
            for n in 1..=6 {
                let (mean, _) = sporadic(file, "spin", n, true, None)?;
                checks.push(Check {
                    quantity: format!("mean response, constraint, {n} competitors (ms)"),
                    paper: 50.0,
                    measured: mean,
                    tolerance: 5.0,
                    why: "the paper's line sits just above 50ms (kernel overheads); here only the 20us switch adds to the 50ms of work",
                    bound: Bound::Within,
                    differs: None,
                });
            }
            // The first count of competitors at which the mean response
            // exceeds the 200ms the worker aims at.
            let mut crossing = None;
            for n in 1..=6 {
                let (mean, _) = sporadic(file, "spin", n, false, None)?;
                if mean > 200.0 {
                    crossing = Some(n);
                    break;
                }
            }
            checks.push(Check {
                quantity: "fewest competitors for an unconstrained mean response over 200ms".into(),
                paper: 3.0,
                measured: crossing.unwrap_or(0) as f64,
                tolerance: 0.0,
                why: "the paper: \"crossing the 200ms threshold at three competing tasks\"; round robin of 10ms quanta (each including the 20us switch) gives about 50 + 60N ms here",
                bound: Bound::Within,
                differs: None,
            });
            Ok(checks)
        },
    }
}

pub(super) fn fig_5_6() -> Entry {
    Entry {
        name: "rialto-fig5-6",
        source: "Rialto §5.3, Fig. 5-6",
        claim: "50ms of sporadic constrained work due within 200ms against activities holding 20ms/200ms reservations, beside the kernel's own 10% and 5% (§4.8): unreserved, the response grows with the load but stays within the deadline through five competitors, then shoots up as the free time left is too small for the constraint; with a 20ms/200ms reservation of its own, it stays near 500ms even with no free time left",
        scenarios: &["scenarios/papers/rialto-fig5-6.toml"],
        run: || {
            let file = scenario!("rialto-fig5-6.toml");
            let scn = parse(file)?;
            let rule = KneeRule::of(&scn)?;
            let knee = rule.knee(false);
            let mut checks = Vec::new();
            let mut last_ok = 0;
            let mut responses = Vec::new();
            for n in 1..=knee + 2 {
                let (mean, misses) = sporadic(file, "rsv", n, true, None)?;
                responses.push(mean);
                if n <= knee {
                    checks.push(Check::new(
                        format!("missed deadlines, unreserved, {n} competitors"),
                        0.0,
                        misses as f64,
                        0.0,
                        "\"stays within the 200ms deadline through five opposing activities\": every accepted constraint is guaranteed",
                    ));
                    checks.push(
                        Check::new(
                            format!("mean response, unreserved, {n} competitors (ms)"),
                            rule.deadline as f64 / 1e6,
                            mean,
                            0.0,
                            "the paper's bound: within the deadline",
                        )
                        .at_most(),
                    );
                }
                if n == knee + 1 {
                    checks.push(
                        Check::new(
                            format!("mean response, unreserved, {n} competitors (past the knee) (ms)"),
                            rule.deadline as f64 / 1e6,
                            mean,
                            0.0,
                            "the paper's bound the other way: \"after this, the time shoots up\" past the deadline",
                        )
                        .at_least(),
                    );
                    checks.push(Check::new(
                        format!("free time the constraint found, {n} competitors (ms)"),
                        rule.free_in_window(n, false) as f64 / 1e6,
                        refused_found(file, n)? as f64 / 1e6,
                        0.02,
                        "the paper's rule on the scenario's inputs: free per hyperperiod = hyperperiod - every scaled reservation and its switch, less the switch into the one free piece; one more switch when the window starts inside a free interval (two pieces)",
                    ));
                }
                if misses == 0 && last_ok == n - 1 {
                    last_ok = n;
                }
            }
            checks.push(
                Check::new(
                    "mean response rises from 1 competitor to the knee (ms)",
                    0.0,
                    responses[knee.max(1) - 1] - responses[0],
                    0.0,
                    "the paper: \"the response time increases linearly with load\" (no slope given): a lower bound",
                )
                .at_least(),
            );
            checks.push(Check::new(
                format!("competitors through which no deadline is missed, unreserved (paper: 5; rule: {knee})"),
                knee as f64,
                last_ok as f64,
                0.0,
                "the paper's rule on the scenario's inputs (5 for the paper's): the constraint is feasible while the free time in its 200ms window, 200 - 30 (kernel) - 20N ms less a 20us switch per interval, covers its 50ms; whole competitors, so no tolerance",
            ));
            let reserve = Op::Msg {
                to: hsched_model::Target::Parent,
                msg: hsched_core::Msg::new("reserve")
                    .arg("amount", hsched_core::Value::Duration(Duration::from_millis(20)))
                    .arg("period", hsched_core::Value::Duration(Duration::from_millis(200))),
            };
            let full = rule.full();
            let (mean, _) = sporadic(file, "rsv", full, true, Some(reserve.clone()))?;
            let why = "the paper says \"approximately 500ms (50ms of work with a 10% reservation)\"; 20ms in one interval per 200ms, arriving at a uniform phase, finishes 410ms later in the interval's first tenth and 610ms - phase otherwise: 491ms on average; about 45 jobs leave about 8ms of sampling error, and round-robin turns in free time shorten it by some 10ms quanta";
            let blocked = Check::new(
                format!("mean response, reserved 20ms/200ms, {full} competitors (graph full), kernel blocked (ms)"),
                500.0,
                mean,
                50.0,
                why,
            );
            let (busy, _) = sporadic_with(file, "rsv", full, true, Some(reserve), |scn| {
                for t in scn.threads.iter_mut().filter(|t| t.name.starts_with("kernel")) {
                    for op in t.program.ops.iter_mut().filter(|op| matches!(op, Op::Sleep(_))) {
                        *op = Op::Loop {
                            count: None,
                            body: vec![Op::Run(hsched_model::Dist::Fixed(Duration::from_secs(10)))],
                        };
                    }
                }
            })?;
            let busy = Check::new(
                format!("mean response, reserved 20ms/200ms, {full} competitors, kernel busy (ms)"),
                500.0,
                busy,
                50.0,
                why,
            );
            // The cause is measured here, not assumed: it is named only when
            // the run with the kernel busy agrees and the blocked one not.
            checks.push(if !blocked.within() && busy.within() {
                blocked.differs("the kernel activities block (§7), so their reserved time goes round robin to the worker too, which then runs faster than its 10%; the next check, the same run with the kernel threads busy in their reservations, comes back to the paper's 500ms")
            } else {
                blocked
            });
            checks.push(busy);
            Ok(checks)
        },
    }
}

/// The paper's rules (§3.1 scaling, §3.2 assignment from the caller's own
/// and free intervals, §4.8 switch in front of every interval) applied to
/// the Fig. 5-6 scenario's inputs: its reservations (every thread's first
/// `reserve` but the competitors'), the competitor's, the worker's
/// constraint and the graph's switch cost.
pub(super) struct KneeRule {
    /// Reservations other than the competitors' (ns): the kernel's.
    fixed: Vec<(u64, u64)>,
    competitor: (u64, u64),
    /// The worker's own (Fig. 5-6's lower line).
    worker: (u64, u64),
    switch: u64,
    estimate: u64,
    deadline: u64,
}

impl KneeRule {
    fn of(scn: &Scenario) -> Result<Self, String> {
        let mut fixed = Vec::new();
        let mut competitor = None;
        for t in &scn.threads {
            let Some(r) = first_reserve(&t.program.ops) else {
                continue;
            };
            if t.name == "rsv1" {
                competitor = Some(r);
            } else if !t.name.starts_with("rsv") {
                fixed.push(r);
            }
        }
        let worker = scn.threads.iter().find(|t| t.name == "worker");
        let begin = worker
            .and_then(|w| find_msg(&w.program.ops, "begin_constraint"))
            .ok_or("the worker sends no begin_constraint")?;
        let arg = |k: &str| match begin.args.get(k) {
            Some(hsched_core::Value::Duration(d)) => Ok(d.as_nanos()),
            _ => Err(format!("begin_constraint has no duration `{k}`")),
        };
        let switch = match scn.schedulers[0].params.get("switch_cost") {
            Some(hsched_core::Value::Duration(d)) => d.as_nanos(),
            _ => 0,
        };
        Ok(KneeRule {
            fixed,
            competitor: competitor.ok_or("no competitor rsv1 reserves")?,
            worker: (20 * MS, 200 * MS),
            switch,
            estimate: arg("estimate")?,
            deadline: arg("deadline")?,
        })
    }

    fn set(&self, n: usize, reserved: bool) -> Vec<(u64, u64)> {
        let mut all = self.fixed.clone();
        if reserved {
            all.push(self.worker);
        }
        all.extend(std::iter::repeat_n(self.competitor, n));
        all
    }

    /// Free time the worker's constraint can be assigned in its window with
    /// `n` competitors (negative: the graph cannot hold them), counting
    /// whole hyperperiods only, the least any window of that length holds.
    /// Each hyperperiod's free interval is one assigned piece, and a piece
    /// pays the switch into the constraint's thread out of itself (hsched's
    /// reading of §4.8: the switch is in front of every interval run).
    fn free_in_window(&self, n: usize, reserved: bool) -> i128 {
        let (hyper, free) = free_per_hyperperiod(&self.set(n, reserved), self.switch);
        (free - self.switch as i128) * (self.deadline / hyper) as i128
    }

    /// The most competitors through which every constraint is feasible
    /// (the worker's own reserved time counts too, when it holds one).
    fn knee(&self, reserved: bool) -> usize {
        let own = if reserved { self.worker.0 as i128 } else { 0 };
        (1..)
            .take_while(|&n| self.free_in_window(n, reserved) + own >= self.estimate as i128)
            .last()
            .unwrap_or(0)
    }

    /// The most competitors the graph holds beside the reserved worker.
    fn full(&self) -> usize {
        (1..)
            .take_while(|&n| free_per_hyperperiod(&self.set(n, true), self.switch).1 >= 0)
            .last()
            .unwrap_or(0)
    }
}

/// With `n` competitors, how much time the worker's first refused
/// constraint could be assigned (ns), from its reply in the log.
pub(super) fn refused_found(file: (&str, &str), n: usize) -> Result<u64, String> {
    let r = simulate_with(file, |scn| competitors(scn, "rsv", n))?;
    let reply = r
        .log
        .iter()
        .find(|e| {
            e.kind == LogKind::Refused
                && e.text.starts_with("`worker` -> ")
                && e.text.contains(" begin_constraint(")
        })
        .ok_or_else(|| format!("with {n} competitors no constraint of the worker was refused"))?;
    found(&reply.text)
}

/// Granted and judged constraints of a run: those whose deadline is by the
/// horizon (later ones are not judged), as (granted, judged, granted that
/// missed).
pub(super) fn stress_counts(r: &RunResult) -> (usize, usize, usize) {
    let end = Instant::ZERO + r.horizon;
    let judged: Vec<_> = r
        .jobs
        .iter()
        .filter(|j| j.admitted.is_some() && j.deadline <= end)
        .collect();
    let granted: Vec<_> = judged.iter().filter(|j| j.admitted == Some(true)).collect();
    let missed = granted.iter().filter(|j| j.missed(end)).count();
    (granted.len(), judged.len(), missed)
}

pub(super) fn section_5_4() -> Entry {
    Entry {
        name: "rialto-5.4-stress",
        source: "Rialto §5.4, the constraint stress test",
        claim: "threads issue random time constraints (start half immediate, half in 0..1s; deadline 1ms..1s after it; estimate up to the window; work 50-100% of the estimate): \"During the test, 1721 constraint requests were granted (out of 4563 requests issued). Of those granted, all finished on time.\"",
        scenarios: &["scenarios/papers/rialto-5.4-stress.toml"],
        run: || {
            let file = scenario!("rialto-5.4-stress.toml");
            let r = simulate(file)?;
            let (granted, judged, missed) = stress_counts(&r);
            if granted == 0 {
                return Err("no constraint was granted".into());
            }
            let mut checks = vec![Check::new(
                format!("granted constraints that missed (of {granted} granted)"),
                0.0,
                missed as f64,
                0.0,
                "\"Of those granted, all finished on time\": the guarantee for work within its estimate",
            )];
            // The rule: the estimate is uniform on [0, window], so a lone
            // thread's constraint is granted when estimate / window is at
            // most the share of its window it can be assigned (own reserved
            // plus free time, §3.2), which averaged over where the window
            // falls is the assignable share of the CPU: P(grant) = that
            // share. One unreserved issuing thread, the others only spin.
            let scn = parse(file)?;
            let (reservations, switch) = reservations_and_switch(&scn);
            let lone = scn
                .threads
                .iter()
                .find(|t| {
                    first_reserve(&t.program.ops).is_none()
                        && t.program.ops.iter().any(|op| matches!(op, Op::Constraints(_)))
                })
                .map(|t| t.name.clone())
                .ok_or("no unreserved thread issues constraints")?;
            let alone = simulate_with(file, |scn| {
                // Ten times as long: one thread issues a tenth as many.
                scn.horizon = Duration::from_nanos(scn.horizon.as_nanos() * 10);
                for t in scn.threads.iter_mut().filter(|t| t.name != lone) {
                    for op in t.program.ops.iter_mut() {
                        if matches!(op, Op::Constraints(_)) {
                            *op = Op::Loop {
                                count: None,
                                body: vec![Op::Run(hsched_model::Dist::Fixed(Duration::from_secs(10)))],
                            };
                        }
                    }
                }
            })?;
            let (g1, n1, _) = stress_counts(&alone);
            let p = assignable(&reservations, None, switch);
            checks.push(Check {
                tolerance: 2.5 * (p * (1.0 - p) / n1.max(1) as f64).sqrt(),
                ..Check::new(
                    format!("fraction granted, {lone} issuing alone (of {n1})"),
                    p,
                    g1 as f64 / n1.max(1) as f64,
                    0.0,
                    "the paper's rule on the scenario's reservations: the free share of the graph; 2.5 binomial standard deviations of the count judged",
                )
            });
            let lone_agrees = checks[1].within();
            let measured = granted as f64 / judged as f64;
            let paper = 1721.0 / 4563.0;
            let all = Check::new(
                    format!("fraction granted, all threads (of {judged} issued; paper 1721 of 4563)"),
                    paper,
                    measured,
                    0.03,
                    "2 binomial standard deviations of the paper's 4563 draws (0.014) and of ours (about 0.027 for 1300)",
                );
            // Named only when measured: the lone thread follows the rule.
            checks.push(if !all.within() && lone_agrees {
                all.differs("the fraction follows the share of the CPU the issuing threads can be assigned (the lone-thread check: it matches the graph's free share), and the paper does not give its activities, reservations or other load; its 37.7% says about 38% of the CPU was assignable to its threads, against 55% free here plus the media and audio reservations")
            } else {
                all
            });
            Ok(checks)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's rule on the paper's own inputs gives the paper's knee,
    /// and without the kernel's reservations the knee the entry measured
    /// before they were added (7).
    #[test]
    fn the_knee_rule_gives_five_with_the_kernel_and_seven_without() {
        let file = scenario!("rialto-fig5-6.toml");
        let scn = parse(file).unwrap();
        let mut rule = KneeRule::of(&scn).unwrap();
        assert_eq!(rule.fixed, vec![(30 * MS, 300 * MS), (15 * MS, 300 * MS)]);
        assert_eq!(rule.knee(false), 5);
        assert_eq!(rule.full(), 7);
        rule.fixed.clear();
        assert_eq!(rule.knee(false), 7);
    }
}
