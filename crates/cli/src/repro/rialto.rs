//! Reproductions from the Rialto paper (Jones, Roşu & Roşu, SOSP '97).

use super::{scenario, share, simulate, simulate_with, Bound, Check, Entry};
use crate::repro::parse;
use hsched_core::{Duration, Instant};
use hsched_model::{LogEntry, LogKind, Op, RunResult, Scenario, SegmentKind};

/// The Rialto entries.
pub fn entries() -> Vec<Entry> {
    vec![
        fig_3_1(),
        section_3_2(),
        fig_5_3(),
        section_5_4(),
        fig_5_5(),
        fig_5_6(),
        fig_5_7(),
        fig_5_8(),
        fig_5_1(),
        timesharing_minimum(),
        section_4_3(),
        section_4_4(),
        section_4_5(),
    ]
}

fn fig_3_1() -> Entry {
    Entry {
        name: "rialto-3.1",
        source: "Rialto §3.1, Fig. 3-1",
        claim: "six reservations (A 6ms/30ms granted as 4ms/20ms, B 3/10, C 2/40, D 1/20, E 1/10, F 5/40) on a 10ms-base graph: each activity gets its amount in every window of its period, not only in aligned ones",
        scenarios: &["scenarios/papers/rialto-3.1.toml"],
        run: || {
            let r = simulate(scenario!("rialto-3.1.toml"))?;
            // After one 40ms hyperperiod, once every reservation is in place.
            let from = Instant::ZERO + Duration::from_millis(40);
            let granted = [("A", 4, 20), ("B", 3, 10), ("C", 2, 40), ("D", 1, 20), ("E", 1, 10), ("F", 5, 40)];
            Ok(granted
                .into_iter()
                .map(|(name, amount, period)| Check {
                    quantity: format!("least CPU of {name} in any {period}ms window (ms)"),
                    paper: amount as f64,
                    measured: least_in_window(&r, name, Duration::from_millis(period), from) as f64 / 1e6,
                    tolerance: 0.0,
                    why: "the continuous guarantee is exact: a lower bound, checked over every window of the run",
                    bound: Bound::Within,
                    differs: None,
                }
                .at_least())
                .collect())
        },
    }
}

/// The paper's table in §3.2: each constraint's interval assignment, ms.
const C1_PAPER: &[(u64, u64)] = &[(244, 248), (248, 250), (257, 258), (264, 268)];
const C2_PAPER: &[(u64, u64)] = &[
    (217, 220),
    (223, 224),
    (228, 230),
    (233, 234),
    (243, 244),
    (253, 254),
    (258, 259),
    (263, 264),
];

fn section_3_2() -> Entry {
    Entry {
        name: "rialto-3.2",
        source: "Rialto §3.2, time interval assignment",
        claim: "on the Fig. 3-1 graph, C1 (A, issued 205ms, 11ms in [230, 270]) and C2 (E, issued 213ms, 11ms in [215, 265]) are accepted with exactly the paper's interval assignments (own intervals first, then free ones, earliest first); C3 (A, issued 225ms, 10ms in [225, 270]) is refused, only 6ms being left",
        scenarios: &["scenarios/papers/rialto-3.2.toml"],
        run: || {
            let r = simulate(scenario!("rialto-3.2.toml"))?;
            let exact = "interval assignment is exact integer arithmetic on a fixed graph: no tolerance";
            let mut checks = Vec::new();
            for (thread, paper) in [("C1", C1_PAPER), ("C2", C2_PAPER)] {
                let reply = begin_reply(&r, thread)?;
                if reply.kind != LogKind::Reply {
                    return Err(format!("{thread} was refused: {}", reply.text));
                }
                let got = assigned(&reply.text)?;
                let paper: Vec<(u64, u64)> = paper.iter().map(|&(a, b)| (a * MS, b * MS)).collect();
                let total = |v: &[(u64, u64)]| v.iter().map(|(a, b)| b - a).sum::<u64>();
                checks.push(Check {
                    quantity: format!("{thread}: assigned where the paper assigns (ms)"),
                    paper: total(&paper) as f64 / 1e6,
                    measured: overlap(&got, &paper) as f64 / 1e6,
                    tolerance: 0.0,
                    why: exact,
                    bound: Bound::Within,
                    differs: None,
                });
                checks.push(Check {
                    quantity: format!("{thread}: assigned elsewhere (ms)"),
                    paper: 0.0,
                    measured: (total(&got) - overlap(&got, &paper)) as f64 / 1e6,
                    tolerance: 0.0,
                    why: exact,
                    bound: Bound::Within,
                    differs: None,
                });
            }
            let c3 = begin_reply(&r, "C3")?;
            checks.push(Check {
                quantity: "C3: accepted (1) or refused (0)".into(),
                paper: 0.0,
                measured: f64::from(u8::from(c3.kind == LogKind::Reply)),
                tolerance: 0.0,
                why: exact,
                bound: Bound::Within,
                differs: None,
            });
            checks.push(Check {
                quantity: "C3: time it could be assigned (ms)".into(),
                paper: 6.0,
                measured: found(&c3.text)? as f64 / 1e6,
                tolerance: 0.0,
                why: exact,
                bound: Bound::Within,
                differs: None,
            });
            Ok(checks)
        },
    }
}

fn fig_5_3() -> Entry {
    Entry {
        name: "rialto-fig5-3",
        source: "Rialto §5.2, Figs. 5-3 and 5-4",
        claim: "reservations of 1ms/10ms, 4ms/20ms and 16ms/40ms, with a 20us context switch, are honoured: each activity gets its amount in every window of its period",
        scenarios: &["scenarios/papers/rialto-fig5-3.toml"],
        run: || {
            let r = simulate(scenario!("rialto-fig5-3.toml"))?;
            let from = Instant::ZERO + Duration::from_millis(40);
            Ok([("r10", 1, 10), ("r20", 4, 20), ("r40", 16, 40)]
                .into_iter()
                .map(|(name, amount, period)| {
                    Check {
                        quantity: format!("least CPU of {name} in any {period}ms window (ms)"),
                        paper: amount as f64,
                        measured: least_in_window(&r, name, Duration::from_millis(period), from)
                            as f64
                            / 1e6,
                        tolerance: 0.0,
                        why: "the graph reserves the 20us switch in front of every interval, so the whole amount is run time: a lower bound, checked over every window",
                        bound: Bound::Within,
                        differs: None,
                    }
                    .at_least()
                })
                .collect())
        },
    }
}

/// The worker's mean response (ms) and deadline misses with `n` copies of
/// the competitor thread `{prefix}1`, with or without its time constraint,
/// optionally holding a reservation of its own.
fn sporadic(
    file: (&str, &str),
    prefix: &str,
    n: usize,
    constraint: bool,
    reserve: Option<Op>,
) -> Result<(f64, usize), String> {
    sporadic_with(file, prefix, n, constraint, reserve, |_| {})
}

/// [`sporadic`], after `edit` changes the scenario.
fn sporadic_with(
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
fn competitors(scn: &mut Scenario, prefix: &str, n: usize) {
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
fn strip_messages(ops: &mut Vec<Op>) {
    ops.retain(|op| !matches!(op, Op::Msg { .. }));
    for op in ops {
        match op {
            Op::Loop { body, .. } | Op::Periodic { body, .. } => strip_messages(body),
            _ => {}
        }
    }
}

fn fig_5_5() -> Entry {
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

fn fig_5_6() -> Entry {
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
struct KneeRule {
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

/// The paper's graph on `reservations` (amount, period), ns: base period
/// the smallest period; each scaled to the next smaller power-of-two
/// multiple of it at the same percentage (§3.1, rounded up); a switch in
/// front of every interval (§4.8). Returns (hyperperiod, free time per
/// hyperperiod), the latter negative when they do not fit.
fn free_per_hyperperiod(reservations: &[(u64, u64)], switch: u64) -> (u64, i128) {
    let Some(base) = reservations.iter().map(|r| r.1).min() else {
        return (1, 1);
    };
    let scaled: Vec<(u64, u64)> = reservations
        .iter()
        .map(|&(x, y)| {
            let mut p = base;
            while p * 2 <= y {
                p *= 2;
            }
            ((x as u128 * p as u128).div_ceil(y as u128) as u64, p)
        })
        .collect();
    let hyper = scaled.iter().map(|r| r.1).max().unwrap_or(base);
    let used: u128 = scaled
        .iter()
        .map(|&(x, p)| (x + switch) as u128 * (hyper / p) as u128)
        .sum();
    (hyper, hyper as i128 - used as i128)
}

/// A program's first `reserve` (amount, period), ns.
fn first_reserve(ops: &[Op]) -> Option<(u64, u64)> {
    let msg = find_msg(ops, "reserve")?;
    match (msg.args.get("amount"), msg.args.get("period")) {
        (Some(hsched_core::Value::Duration(a)), Some(hsched_core::Value::Duration(p))) => {
            Some((a.as_nanos(), p.as_nanos()))
        }
        _ => None,
    }
}

/// Every thread's first reservation (amount, period, ns) and the root
/// `rialto`'s switch cost (ns): the inputs the rules below work from.
fn reservations_and_switch(scn: &Scenario) -> (Vec<(u64, u64)>, u64) {
    let reservations = scn
        .threads
        .iter()
        .filter_map(|t| first_reserve(&t.program.ops))
        .collect();
    let switch = match scn.schedulers[0].params.get("switch_cost") {
        Some(hsched_core::Value::Duration(d)) => d.as_nanos(),
        _ => 0,
    };
    (reservations, switch)
}

/// The first message named `name` a program sends, looking into loops.
fn find_msg<'a>(ops: &'a [Op], name: &str) -> Option<&'a hsched_core::Msg> {
    ops.iter().find_map(|op| match op {
        Op::Msg { msg, .. } if msg.name == name => Some(msg),
        Op::Loop { body, .. } | Op::Periodic { body, .. } => find_msg(body, name),
        _ => None,
    })
}

/// With `n` competitors, how much time the worker's first refused
/// constraint could be assigned (ns), from its reply in the log.
fn refused_found(file: (&str, &str), n: usize) -> Result<u64, String> {
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
fn stress_counts(r: &RunResult) -> (usize, usize, usize) {
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

/// The share of the CPU a thread's constraint can be assigned, §3.2: its
/// activity's reserved fraction plus the free fraction of the graph built
/// from `reservations` (each interval and its switch taken out), less the
/// switch each assigned piece pays (one piece per base period).
fn assignable(reservations: &[(u64, u64)], own: Option<(u64, u64)>, switch: u64) -> f64 {
    let (hyper, free) = free_per_hyperperiod(reservations, switch);
    let base = reservations.iter().map(|r| r.1).min().unwrap_or(hyper);
    let pieces = (hyper / base) as i128;
    let own = own.map_or(0.0, |(x, y)| x as f64 / y as f64);
    ((free - pieces * switch as i128) as f64 / hyper as f64 + own).min(1.0)
}

fn section_5_4() -> Entry {
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

/// Percentage shares of `{activity}-1..3` and their sum.
fn activity_shares(r: &RunResult, activity: &str) -> ([f64; 3], f64) {
    let t = [1, 2, 3].map(|i| 100.0 * share(r, &format!("{activity}-{i}")));
    (t, t.iter().sum())
}

fn fig_5_7() -> Entry {
    Entry {
        name: "rialto-fig5-7",
        source: "Rialto §5.5, Fig. 5-7",
        claim: "activities reserving 10%, 20% and 40%, three spinning threads each: the threads of an activity receive nearly indistinguishable amounts, and each activity also gets a share of the free time (19%, 29%, 49% in all)",
        scenarios: &["scenarios/papers/rialto-fig5-7.toml"],
        run: || {
            let r = simulate(scenario!("rialto-fig5-7.toml"))?;
            let mut checks = Vec::new();
            for (activity, paper) in [("a10", 19.0), ("a20", 29.0), ("a40", 49.0)] {
                let (threads, total) = activity_shares(&r, activity);
                checks.push(Check {
                    quantity: format!("CPU share of activity {activity} (%)"),
                    paper,
                    measured: total,
                    tolerance: 2.0,
                    why: "free time goes round robin among the three activities, 10 points each here; the paper lost about 1 point per activity to kernel activities and interrupts it did not show",
                    bound: Bound::Within,
                    differs: None,
                });
                let spread = threads.iter().copied().fold(f64::MIN, f64::max)
                    - threads.iter().copied().fold(f64::MAX, f64::min);
                checks.push(Check {
                    quantity: format!("largest minus smallest thread share in {activity} (points)"),
                    paper: 0.0,
                    measured: spread,
                    tolerance: 0.5,
                    why: "\"nearly indistinguishable\": round robin within the activity, up to one 10ms quantum apart over the 10s run",
                    bound: Bound::AtMost,
                    differs: None,
                });
            }
            Ok(checks)
        },
    }
}

fn fig_5_8() -> Entry {
    Entry {
        name: "rialto-fig5-8",
        source: "Rialto §5.5, Fig. 5-8",
        claim: "as Fig. 5-7, with the first thread of each activity repeatedly using time constraints (0.5ms, 1ms, 2ms within 11ms): it receives more than the other two, which receive comparable amounts; activity shares 20%, 30%, 46%",
        scenarios: &["scenarios/papers/rialto-fig5-8.toml"],
        run: || {
            let r = simulate(scenario!("rialto-fig5-8.toml"))?;
            let mut checks = Vec::new();
            for (activity, paper) in [("a10", 20.0), ("a20", 30.0), ("a40", 46.0)] {
                let ([first, second, third], total) = activity_shares(&r, activity);
                checks.push(Check {
                    quantity: format!("CPU share of activity {activity} (%)"),
                    paper,
                    measured: total,
                    tolerance: 4.0,
                    why: "free time goes round robin among activities (10 points each here); the paper's third activity got 6 points, from \"the same threads systematically receiving the same free time intervals of different lengths\"",
                    bound: Bound::Within,
                    differs: None,
                });
                checks.push(Check {
                    quantity: format!("{activity}: first thread minus the larger other (points)"),
                    paper: 0.0,
                    measured: first - second.max(third),
                    tolerance: 0.0,
                    why: "the paper gives no number, only that the first thread \"receives more time than the other two\": a lower bound",
                    bound: Bound::AtLeast,
                    differs: None,
                });
                checks.push(Check {
                    quantity: format!("{activity}: difference between the other two (points)"),
                    paper: 0.0,
                    measured: (second - third).abs(),
                    tolerance: 1.0,
                    why: "\"roughly comparable amounts of CPU time, although not as close as in the previous experiment\"",
                    bound: Bound::AtMost,
                    differs: None,
                });
            }
            Ok(checks)
        },
    }
}

const MS: u64 = 1_000_000;

/// The reply to `thread`'s first `begin_constraint`.
fn begin_reply<'a>(r: &'a RunResult, thread: &str) -> Result<&'a LogEntry, String> {
    let prefix = format!("`{thread}` -> ");
    r.log
        .iter()
        .find(|e| e.text.starts_with(&prefix) && e.text.contains(" begin_constraint("))
        .ok_or_else(|| format!("no begin_constraint reply for {thread} in the log"))
}

/// The `assigned="244ms-248ms 257ms-258ms"` of an accepted constraint, ns.
fn assigned(text: &str) -> Result<Vec<(u64, u64)>, String> {
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
fn found(text: &str) -> Result<u64, String> {
    let x = text
        .split_once("only ")
        .and_then(|(_, rest)| rest.split_once(" of "))
        .map(|(x, _)| x)
        .ok_or_else(|| format!("no `only X of Y` in `{text}`"))?;
    Ok(Duration::parse(x)?.as_nanos())
}

/// Length of the intersection of two sets of disjoint intervals.
fn overlap(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    a.iter()
        .flat_map(|&(s, e)| {
            b.iter()
                .map(move |&(t, f)| e.min(f).saturating_sub(s.max(t)))
        })
        .sum()
}

/// The least CPU time `name` received in any window of length `len`
/// starting at or after `from` and ending by the horizon. The received time
/// is piecewise linear in the window's start, so its minimum lies where the
/// start or the end meets a segment boundary.
fn least_in_window(r: &RunResult, name: &str, len: Duration, from: Instant) -> u64 {
    let trace = r.trace.as_ref().expect("repro runs record the trace");
    let runs = run_segments(r, name);
    let end = r.horizon.as_nanos();
    let (from, len) = (from.as_nanos(), len.as_nanos());
    let received = |a: u64, b: u64| -> u64 {
        runs.iter()
            .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
            .sum()
    };
    let mut starts: Vec<u64> = trace
        .segments
        .iter()
        .flat_map(|s| [s.start.as_nanos(), s.end.as_nanos()])
        .flat_map(|p| [p, p.saturating_sub(len)])
        .filter(|&p| p >= from && p + len <= end)
        .collect();
    starts.push(from);
    starts.sort_unstable();
    starts.dedup();
    starts
        .into_iter()
        .map(|a| received(a, a + len))
        .min()
        .unwrap_or(0)
}

fn fig_5_1() -> Entry {
    Entry {
        name: "rialto-fig5-1",
        source: "Rialto §5.1, Fig. 5-1 (and the 58 activities of Fig. 5-2)",
        claim: "an intentionally complex cumulative sequence of 400us reservations, periods 1s, 1s, 500ms, 1s, 500ms, 250ms, 1s, ... (58 of them, the 58 activities of Fig. 5-2), with a 20us switch: all are granted; full recalculations come \"from decreases in the minimum reservation period and from failing to find adequate free time of the right period for an incremental reservation\", the rest are incremental",
        scenarios: &[],
        run: || {
            let steps = crate::bench::graph_construction().map_err(|e| e.to_string())?;
            // The paper's rule: a period below every earlier one changes the
            // base period, so the graph must be recomputed.
            let mut least = u64::MAX;
            let (mut decreases, mut rebuilt_there, mut rebuilt) = (0, 0, 0);
            for (period, was_rebuilt, _) in &steps {
                if *was_rebuilt {
                    rebuilt += 1;
                }
                if period.as_nanos() < least {
                    if least != u64::MAX {
                        decreases += 1;
                        rebuilt_there += usize::from(*was_rebuilt);
                    }
                    least = period.as_nanos();
                }
            }
            Ok(vec![
                Check::new(
                    "reservations of the sequence granted",
                    58.0,
                    steps.len() as f64,
                    0.0,
                    "the paper's Fig. 5-2 runs on this graph with its 58 activities: every reservation was granted (a count: exact)",
                ),
                Check::new(
                    format!("recalculations where the smallest period decreases (of {decreases})"),
                    decreases as f64,
                    rebuilt_there as f64,
                    0.0,
                    "the paper's rule (§4.1: incremental only when the new period is no smaller than the base): every decrease rebuilds; the decreases are counted from the sequence itself",
                ),
                Check::new(
                    format!("incremental changes (of {})", steps.len()),
                    0.0,
                    (steps.len() - rebuilt) as f64,
                    0.0,
                    "the paper: \"both incremental reservations and full graph recalculations are visible\": some are incremental (a lower bound, no count given)",
                )
                .at_least(),
            ])
        },
    }
}

fn timesharing_minimum() -> Entry {
    Entry {
        name: "rialto-15pct-timesharing",
        source: "Rialto §7 (and §4.7, §4.8: the kernel's reservations)",
        claim: "\"Even if no application is blocked, one or both kernel activities will usually be, giving a typical minimum 'timesharing' share of 15%\": the kernel's 10% and 5% (§4.8), unused while it blocks, go round robin to every runnable activity (§3.5), even when applications have reserved all the rest",
        scenarios: &["scenarios/papers/rialto-15pct.toml"],
        run: || {
            let file = scenario!("rialto-15pct.toml");
            let r = simulate(file)?;
            let scn = parse(file)?;
            // Time run beyond each thread's own reservation: the time shared.
            let (reservations, switch) = reservations_and_switch(&scn);
            let (hyper, free) = free_per_hyperperiod(&reservations, switch);
            let mut shared = 0.0;
            let mut kernel = free as f64 / hyper as f64;
            for t in &scn.threads {
                let reserved = first_reserve(&t.program.ops)
                    .map_or(0.0, |(x, y)| x as f64 / y as f64);
                if t.name.starts_with("kernel") {
                    kernel += reserved;
                    continue;
                }
                shared += share(&r, &t.name) - reserved;
            }
            let ts = 100.0 * share(&r, "timeshare");
            Ok(vec![
                Check::new(
                    "CPU time-shared, beyond the applications' reservations (%) (paper: 15)",
                    100.0 * kernel,
                    100.0 * shared,
                    0.5,
                    "the paper's rule on the scenario's inputs: the blocked kernel's reserved share (15% for the paper's 10% + 5%) plus the graph's free time; the round robin's own switches (20us per 10ms turn) cost up to half a point",
                ),
                Check::new(
                    "share of the one unreserved application (%)",
                    100.0 * kernel / (scn.threads.iter().filter(|t| !t.name.starts_with("kernel")).count() as f64),
                    ts,
                    0.5,
                    "the time-shared part goes round robin among every runnable activity (§3.5): an equal part each; switches cost up to half a point",
                ),
            ])
        },
    }
}

/// Every reply of `thread` to a message `name` (`begin_constraint`,
/// `end_constraint`), accepted or refused, in the order sent.
fn replies<'a>(r: &'a RunResult, thread: &str, name: &str) -> Vec<&'a LogEntry> {
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
fn reply_field<'a>(entry: &'a LogEntry, key: &str) -> Result<&'a str, String> {
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
fn reply_ns(entry: &LogEntry, key: &str) -> Result<u64, String> {
    Ok(Duration::parse(reply_field(entry, key)?)?.as_nanos())
}

/// The `begin_constraint` messages `thread` sends, in program order.
fn begins<'a>(scn: &'a Scenario, thread: &str) -> Result<Vec<&'a hsched_core::Msg>, String> {
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
fn request(msg: &hsched_core::Msg) -> Result<(Option<u64>, u64, u64, bool), String> {
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

/// Time `name` ran (its run segments, switches apart) in `[a, b)`, ns.
fn ran_between(r: &RunResult, name: &str, a: u64, b: u64) -> u64 {
    run_segments(r, name)
        .iter()
        .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
        .sum()
}

/// `name`'s run segments (switches apart) as (start, end), ns.
fn run_segments(r: &RunResult, name: &str) -> Vec<(u64, u64)> {
    let t = r
        .threads
        .iter()
        .find(|t| t.name == name)
        .expect("the thread exists")
        .id;
    let trace = r.trace.as_ref().expect("repro runs record the trace");
    trace
        .segments
        .iter()
        .filter(|s| s.what == SegmentKind::Run(t))
        .map(|s| (s.start.as_nanos(), s.end.as_nanos()))
        .collect()
}

/// Time a request could be assigned: all of it if accepted, else what the
/// refusal says it found, ns.
fn found_or_all(entry: &LogEntry, estimate: u64) -> Result<u64, String> {
    if entry.kind == LogKind::Reply {
        Ok(estimate)
    } else {
        found(&entry.text)
    }
}

/// The same scenario with `thread`'s constraints made non-critical.
fn without_criticality(file: (&str, &str), thread: &str) -> Result<RunResult, String> {
    fn clear(ops: &mut [Op]) {
        for op in ops {
            match op {
                Op::Msg { msg, .. } if msg.name == "begin_constraint" => {
                    msg.args.set("critical", hsched_core::Value::Bool(false));
                }
                Op::Loop { body, .. } | Op::Periodic { body, .. } => clear(body),
                _ => {}
            }
        }
    }
    simulate_with(file, |scn| {
        for t in scn.threads.iter_mut().filter(|t| t.name == thread) {
            clear(&mut t.program.ops);
        }
    })
}

fn activity_of<'a>(scn: &'a Scenario, thread: &str) -> Option<&'a str> {
    let t = scn.threads.iter().find(|t| t.name == thread)?;
    match t.params.get("activity") {
        Some(hsched_core::Value::Str(a)) if !a.is_empty() => Some(a),
        _ => Some(&t.name),
    }
}

fn section_4_3() -> Entry {
    Entry {
        name: "rialto-4.3-critical",
        source: "Rialto §4.3 (and §2.4: criticality)",
        claim: "a CRITICAL constraint found infeasible is analysed again with the intervals of its own activity's NON-CRITICAL constraints fair game: if that succeeds it is accepted at their expense (\"their guaranteed execution amounts reduced accordingly\"); \"a constraint of one activity can not steal time from constraints of other activities\"",
        scenarios: &["scenarios/papers/rialto-4.3-critical.toml"],
        run: || {
            let file = scenario!("rialto-4.3-critical.toml");
            let scn = parse(file)?;
            let r = simulate(file)?;
            let exact = "the paper's rule on the scenario's requests, over a fixed graph: integer arithmetic, no tolerance";
            let mut checks = Vec::new();
            // C3 (critical, activity A), against the same run with it
            // non-critical: the "normal feasibility analysis".
            let (_, est, deadline, _) = request(begins(&scn, "C3")?[0])?;
            let c3 = begin_reply(&r, "C3")?;
            let plain = without_criticality(file, "C3")?;
            let normal = found_or_all(begin_reply(&plain, "C3")?, est)?;
            let issued = c3.at.as_nanos();
            let (start, _, _, _) = request(begins(&scn, "C3")?[0])?;
            let window = [(start.unwrap_or(issued).max(issued), deadline)];
            // Time its activity's non-critical constraints, accepted before
            // it, hold in its window: what the second analysis may take.
            let activity = activity_of(&scn, "C3");
            let mut fair_game = 0;
            let mut victims = Vec::new();
            for t in scn.threads.iter().filter(|t| t.name != "C3") {
                if activity_of(&scn, &t.name) != activity {
                    continue;
                }
                for reply in replies(&r, &t.name, "begin_constraint") {
                    if reply.kind == LogKind::Reply
                        && reply.at <= c3.at
                        && reply_field(reply, "critical")? == "false"
                    {
                        let pieces = assigned(&reply.text)?;
                        fair_game += overlap(&pieces, &window);
                        victims.extend(pieces);
                    }
                }
            }
            let accepted = normal >= est || normal + fair_game >= est;
            let stolen = if accepted { est - normal.min(est) } else { 0 };
            checks.push(Check::new(
                format!("C3 (critical) accepted (1) or refused (0); normal analysis found {} ms", normal as f64 / 1e6),
                f64::from(u8::from(accepted)),
                f64::from(u8::from(c3.kind == LogKind::Reply)),
                0.0,
                exact,
            ));
            if c3.kind == LogKind::Reply {
                checks.push(Check::new(
                    "C3: time taken from its activity's non-critical constraints (ms)",
                    stolen as f64 / 1e6,
                    reply_ns(c3, "stolen")? as f64 / 1e6,
                    0.0,
                    "the rule: the estimate less what the normal analysis found (a run with C3 non-critical); exact",
                ));
                checks.push(Check::new(
                    "C3: its assignment lying in those constraints' intervals (ms)",
                    stolen as f64 / 1e6,
                    overlap(&assigned(&c3.text)?, &victims) as f64 / 1e6,
                    0.0,
                    "the stolen time is the non-critical constraints' own assigned intervals (from their replies); exact",
                ));
                checks.push(
                    Check::new(
                        format!("C3: ran by its deadline (ms; estimate {})", est as f64 / 1e6),
                        est as f64 / 1e6,
                        ran_between(&r, "C3", window[0].0, deadline) as f64 / 1e6,
                        0.0,
                        "an accepted constraint is guaranteed its estimate by its deadline (§3.3): a lower bound",
                    )
                    .at_least(),
                );
                let c1 = begin_reply(&r, "C1")?;
                let (s1, e1, d1, _) = request(begins(&scn, "C1")?[0])?;
                let from = s1.unwrap_or(c1.at.as_nanos());
                checks.push(
                    Check::new(
                        format!("C1: ran by its deadline (ms; estimate {} less the stolen)", e1 as f64 / 1e6),
                        (e1 - stolen.min(e1)) as f64 / 1e6,
                        ran_between(&r, "C1", from, d1) as f64 / 1e6,
                        0.0,
                        "\"guaranteed execution amounts reduced accordingly\": what is left is still guaranteed, a lower bound",
                    )
                    .at_least(),
                );
            }
            // G: critical, of an activity of its own. The rule: only its own
            // activity's time is fair game, so it fares as a non-critical
            // request would (the same run with G non-critical).
            let (_, est_g, _, _) = request(begins(&scn, "G")?[0])?;
            let g = begin_reply(&r, "G")?;
            let plain_g = without_criticality(file, "G")?;
            let g_plain = begin_reply(&plain_g, "G")?;
            checks.push(Check::new(
                "G (critical, another activity) accepted (1) or refused (0)",
                f64::from(u8::from(g_plain.kind == LogKind::Reply)),
                f64::from(u8::from(g.kind == LogKind::Reply)),
                0.0,
                "\"a constraint of one activity can not steal time from constraints of other activities\": as the same request non-critical; exact",
            ));
            checks.push(Check::new(
                "G: time it could be assigned (ms)",
                found_or_all(g_plain, est_g)? as f64 / 1e6,
                found_or_all(g, est_g)? as f64 / 1e6,
                0.0,
                "as the same request non-critical: other activities' constraints keep their time; exact",
            ));
            Ok(checks)
        },
    }
}

fn section_4_4() -> Entry {
    Entry {
        name: "rialto-4.4-nested",
        source: "Rialto §4.4 (and §2.4: nesting)",
        claim: "a constraint begun inside another takes effective values: deadline the sooner of the two, start the later of the present time and the new start, estimate the larger of the new estimate and what remains of the current constraint's interval assignments before the new effective deadline (which it may use), CRITICAL if either is; EndConstraint pops it and donates the remaining guaranteed time back to the enclosing constraint",
        scenarios: &["scenarios/papers/rialto-4.4-nested.toml"],
        run: || {
            let file = scenario!("rialto-4.4-nested.toml");
            let scn = parse(file)?;
            let r = simulate(file)?;
            let asks = begins(&scn, "N")?;
            let got = replies(&r, "N", "begin_constraint");
            let ended = replies(&r, "N", "end_constraint");
            if asks.len() < 3 || got.len() < 3 || ended.len() < 3 {
                return Err("N should open O, then nest I and I2 in turn".into());
            }
            if got[0].kind != LogKind::Reply {
                return Err(format!("O was refused: {}", got[0].text));
            }
            let exact = "the paper's rule on the requests and O's own assignment (its reply): integer arithmetic on a fixed graph, no tolerance";
            let ms = |ns: u64| ns as f64 / 1e6;
            let outer = &got[0];
            let (_, o_est, _, o_crit) = request(asks[0])?;
            let o_deadline = reply_ns(outer, "deadline")?;
            let o_pieces = assigned(&outer.text)?;
            let mut checks = Vec::new();
            for (k, label) in [(1, "I"), (2, "I2")] {
                let (start, est, deadline, crit) = request(asks[k])?;
                let now = got[k].at.as_nanos();
                let eff_start = start.unwrap_or(now).max(now);
                let eff_deadline = deadline.min(o_deadline);
                // O's intervals from the effective start to the effective
                // deadline; for I2 those I gave back at its end are O's
                // again, so O's original assignment is what counts.
                let held = overlap(&o_pieces, &[(eff_start, eff_deadline)]);
                if got[k].kind != LogKind::Reply {
                    // Refused: more than O holds there, and no more to be
                    // found. The refusal still names the effective estimate.
                    let needed = got[k]
                        .text
                        .split_once(" of ")
                        .and_then(|(_, rest)| rest.split_whitespace().next())
                        .ok_or_else(|| format!("no `of Y` in `{}`", got[k].text))?;
                    checks.push(Check::new(
                        format!("{label} (refused): effective estimate (ms)"),
                        ms(est.max(held)),
                        ms(Duration::parse(needed)?.as_nanos()),
                        0.0,
                        exact,
                    ));
                    checks.push(Check::new(
                        format!("{label} (refused): accepted (1) although O's intervals covered it"),
                        0.0,
                        f64::from(u8::from(est.max(held) <= held)),
                        0.0,
                        "the rule: a nested request within what the outer constraint holds in its window is always feasible",
                    ));
                    continue;
                }
                let rows = [
                    ("effective start (ms)", ms(eff_start), ms(reply_ns(got[k], "start")?)),
                    ("effective deadline (ms)", ms(eff_deadline), ms(reply_ns(got[k], "deadline")?)),
                    ("effective estimate (ms)", ms(est.max(held)), ms(reply_ns(got[k], "estimate")?)),
                    ("time taken over from O (ms)", ms(held), ms(reply_ns(got[k], "inherited")?)),
                    (
                        "effective criticality (1 critical)",
                        f64::from(u8::from(crit || o_crit)),
                        f64::from(u8::from(reply_field(got[k], "critical")? == "true")),
                    ),
                ];
                for (q, paper, measured) in rows {
                    checks.push(Check::new(format!("{label}: {q}"), paper, measured, 0.0, exact));
                }
                // Its end gives O what it holds from then on.
                let end = ended[k - 1].at.as_nanos();
                let left = overlap(&assigned(&got[k].text)?, &[(end, u64::MAX)]);
                checks.push(Check::new(
                    format!("{label}: time donated back to O at its end (ms)"),
                    ms(left),
                    ms(reply_ns(ended[k - 1], "released")?),
                    0.0,
                    "the rule: its remaining assigned intervals, from its end on; exact",
                ));
            }
            checks.push(
                Check::new(
                    format!("O: N ran by O's deadline (ms; estimate {})", ms(o_est)),
                    ms(o_est),
                    ms(ran_between(&r, "N", reply_ns(outer, "start")?, o_deadline)),
                    0.0,
                    "O's guarantee survives the nesting (what the nested ones took came back): a lower bound",
                )
                .at_least(),
            );
            Ok(checks)
        },
    }
}

/// The second-chance scenario's inputs, ns: S's reservation amount, its
/// job's first run, block and second run, and the machine's switch.
fn second_chance_inputs(scn: &Scenario) -> Result<(u64, u64, u64, u64, u64), String> {
    let s = scn
        .threads
        .iter()
        .find(|t| t.name == "S")
        .ok_or("no thread S")?;
    let (x, _) = first_reserve(&s.program.ops).ok_or("S reserves nothing")?;
    let body = s
        .program
        .ops
        .iter()
        .find_map(|op| match op {
            Op::Periodic { body, .. } => Some(body),
            _ => None,
        })
        .ok_or("S has no periodic job")?;
    let fixed = |op: &Op| match op {
        Op::Run(hsched_model::Dist::Fixed(d)) | Op::Sleep(hsched_model::Dist::Fixed(d)) => {
            Some(d.as_nanos())
        }
        _ => None,
    };
    match body.as_slice() {
        [a @ Op::Run(_), b @ Op::Sleep(_), c @ Op::Run(_)] => Ok((
            x,
            fixed(a).ok_or("S's runs must be fixed")?,
            fixed(b).ok_or("S's block must be fixed")?,
            fixed(c).ok_or("S's runs must be fixed")?,
            scn.machine.context_switch.as_nanos(),
        )),
        _ => Err("S's job must be run, sleep, run".into()),
    }
}

/// Sets S's job to run `r1`, block `s`, run `r2` (ns).
fn set_job(scn: &mut Scenario, r1: u64, s: u64, r2: u64) {
    let t = scn.threads.iter_mut().find(|t| t.name == "S").expect("S");
    for op in t.program.ops.iter_mut() {
        if let Op::Periodic { body, .. } = op {
            let fixed = |n| hsched_model::Dist::Fixed(Duration::from_nanos(n));
            *body = vec![Op::Run(fixed(r1)), Op::Sleep(fixed(s)), Op::Run(fixed(r2))];
        }
    }
}

fn section_4_5() -> Entry {
    Entry {
        name: "rialto-4.5-second-chance",
        source: "Rialto §4.5, compensating for briefly blocked activities",
        claim: "an activity that blocks during a node reserved for it goes on a \"second chance\" queue with the time it failed to run; if runnable again before its next node, it is scheduled in free time (ahead of the round robin, §4.6 rule 4) \"giving it a second chance to obtain its CPU reservation\"; once it has made up as much time as it missed, it leaves the queue",
        scenarios: &["scenarios/papers/rialto-4.5-second-chance.toml"],
        run: || {
            let file = scenario!("rialto-4.5-second-chance.toml");
            let scn = parse(file)?;
            let (x, r1, s, r2, sw) = second_chance_inputs(&scn)?;
            if r1 + sw + r2 > x || r1 >= x {
                return Err("S's job (with the switch its wake-up costs) must fit its reservation, and it must block inside its node".into());
            }
            let ms = |ns: u64| ns as f64 / 1e6;
            let mut checks = Vec::new();
            // Blocking inside its node (the scenario), and past its end:
            // either way S loses nothing, so each job takes its work, its
            // block and two switches (into its node, and at its wake-up).
            for (label, block) in [("blocking inside its node", s), ("blocking past its node's end", x)] {
                let r = simulate_with(file, |scn| set_job(scn, r1, block, r2))?;
                let id = r.threads.iter().find(|t| t.name == "S").expect("S").id;
                let end = Instant::ZERO + r.horizon;
                let jobs: Vec<_> = r.jobs.iter().filter(|j| j.thread == id).collect();
                let done: Vec<u64> = jobs.iter().filter_map(|j| j.response()).map(|d| d.as_nanos()).collect();
                let worst = done.iter().copied().max().ok_or("S finished no job")?;
                checks.push(Check::new(
                    format!("S's slowest job, {label} {} ms (ms)", ms(block)),
                    ms(r1 + block + r2 + 2 * sw),
                    ms(worst),
                    0.001,
                    "the rule on the scenario's inputs: work + block + the switch into its node and the one at its wake-up (the made-up time comes at once, ahead of the round robin); exact but for a nanosecond's rounding",
                ));
                checks.push(Check::new(
                    format!("S's missed deadlines, {label} (of {})", jobs.len()),
                    0.0,
                    jobs.iter().filter(|j| j.missed(end)).count() as f64,
                    0.0,
                    "the reservation covers the job, so with its second chance none is late",
                ));
            }
            // More work than its reservation: it makes up only what it
            // missed, then waits its round-robin turn behind the spinners.
            let more = r2 + x;
            let r = simulate_with(file, |scn| set_job(scn, r1, s, more))?;
            let window = sw + x + s + sw + Duration::from_millis(5).as_nanos();
            checks.push(Check::new(
                format!("S's run time in the first {} ms, with {} ms more work than reserved (ms)", ms(window), ms(r1 + more - x)),
                ms(x - sw),
                ms(ran_between(&r, "S", 0, window)),
                0.001,
                "the rule: its reservation and no more (made up \"as much time as it missed\"), less the switch at its wake-up, which it pays; then a spinner's 10ms quantum (past the 5ms margin)",
            ));
            Ok(checks)
        },
    }
}

/// Timing entries (`hsched repro --timing`).
pub fn timing_entries() -> Vec<Entry> {
    vec![section_5_1_timing()]
}

fn section_5_1_timing() -> Entry {
    Entry {
        name: "rialto-5.1-timing",
        source: "Rialto §3.1, §4.6, §5.1, Figs. 5-1 and 5-2",
        claim: "the scheduling decision is \"bounded by a constant and is independent of the number of threads, activities, and time constraints\"; full graph recalculations cost more than incremental changes (Fig. 5-1); feasibility analysis out of a single free node grows linearly with the constraints already accepted, and on the 58-activity graph of Fig. 5-1 it is \"significantly faster\" (Fig. 5-2)",
        scenarios: &[],
        run: || section_5_1_checks(false),
    }
}

/// The §5.1 timing checks; `quick` (for tests) measures less, once, with
/// 100 threads instead of 1,000: numbers, not a verdict.
fn section_5_1_checks(quick: bool) -> Result<Vec<Check>, String> {
    let (rounds, quanta, threads, count) = if quick {
        (1, 50, 100, 24)
    } else {
        (5, 2_000, 1_000, 232)
    };
    let fail = |e: crate::CliError| e.to_string();
    // Warm-up, then the best of several rounds, side by side.
    crate::bench::measure_rialto(10, quanta / 4).map_err(fail)?;
    let (mut few, mut many) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        few.push(crate::bench::measure_rialto(10, quanta).map_err(fail)?);
        many.push(crate::bench::measure_rialto(threads, quanta).map_err(fail)?);
    }
    let decision = crate::bench::best(&many) / crate::bench::best(&few);
    let mut builds = Vec::new();
    for _ in 0..rounds {
        builds.push(crate::bench::graph_construction().map_err(fail)?);
    }
    let walls: Vec<Vec<f64>> = builds
        .iter()
        .map(|b| b.iter().map(|s| s.2).collect())
        .collect();
    let walls = crate::bench::best_series(&walls);
    let mean = |rebuilt: bool| {
        let v: Vec<f64> = builds[0]
            .iter()
            .zip(&walls)
            .filter(|(s, _)| s.1 == rebuilt)
            .map(|(_, w)| *w)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let series = |with: bool| {
        let runs: Vec<Vec<f64>> = (0..rounds)
            .map(|_| crate::bench::feasibility(with, count))
            .collect();
        crate::bench::best_series(&runs)
    };
    let free_only = series(false);
    let on_graph = series(true);
    // Averages over 10 analyses around each point, to damp noise.
    let around = |v: &[f64], k: usize| {
        let lo = k.saturating_sub(5);
        let hi = (k + 5).min(v.len());
        v[lo..hi].iter().sum::<f64>() / (hi - lo) as f64
    };
    // The cause of the gap above, counted (deterministic): graph intervals
    // each analysis walks.
    let free_walks = crate::bench::feasibility_walks(false, count);
    let graph_walks = crate::bench::feasibility_walks(true, count);
    let per_activity = count.min(58);
    let mean_walk = |w: &[(u64, u64)], r: std::ops::Range<usize>| {
        w[r.clone()].iter().map(|x| x.0 as f64).sum::<f64>() / r.len().max(1) as f64
    };
    let (a, b, c) = (
        around(&free_only, 5),
        around(&free_only, count / 2),
        around(&free_only, count - 5),
    );
    Ok(vec![
        Check::new(
            format!("decision cost, {threads} threads over 10 threads"),
            1.0,
            decision,
            0.5,
            "\"independent of the number of threads\": a ratio of 1; hsched's decision is O(log n) (ordered maps), and 100 times the threads also means colder caches, worth up to half again",
        ),
        Check::new(
            "Fig. 5-1: mean full recalculation over mean incremental change",
            1.0,
            mean(true) / mean(false),
            0.0,
            "the paper's figure shows recalculations above incremental changes (no ratio given): a lower bound",
        )
        .at_least(),
        Check::new(
            "Fig. 5-2: second-half over first-half growth, no reservations",
            1.0,
            (c - b) / (b - a),
            0.5,
            "\"resulting in the linear increase in time\": equal growth over equal numbers of constraints; timer noise on microsecond analyses allows half again either way",
        ),
        Check::new(
            format!(
                "Fig. 5-2: no reservations over the Fig. 5-1 graph, at {count} constraints \
                 (graph intervals walked per analysis, mean: {:.0} with no reservations, \
                 {:.0} on the graph; {:.0} then {:.0} for an activity's first and last constraints)",
                mean_walk(&free_walks, 0..count),
                mean_walk(&graph_walks, 0..count),
                mean_walk(&graph_walks, 0..per_activity),
                mean_walk(&graph_walks, count - per_activity..count),
            ),
            1.0,
            c / around(&on_graph, count - 5),
            0.0,
            "\"significantly faster\" on the graph (no ratio given): a lower bound",
        )
        .at_least()
        .differs("hsched's analysis looks for the activity's own time by walking the graph from the window's start, base period by base period (each period's interval list rebuilt), until enough of it is unassigned, and walks the whole 3s window twice (own, then free) once that is used up; Rialto keeps assignment lists per node. The activities' own intervals are sparse (400us per period of up to 1s) and each constraint takes its activity's earliest, so the walk grows with the constraints each activity already holds: counted (the quantity's figures), 372, 1,241, 2,109 and 2,733 intervals on average for the first to fourth constraint of the 58 activities, up to 7,702, against 2 walk steps (one scan of the book, at most 231 pieces) with no reservations"),
    ])
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

    /// The §5.1 timing entry runs (small) and gives numbers; its timed
    /// verdict is not asserted (the machine's noise decides it).
    #[test]
    fn the_timing_checks_run_and_yield_finite_numbers() {
        let checks = section_5_1_checks(true).unwrap();
        assert_eq!(checks.len(), 4);
        for c in &checks {
            assert!(c.measured.is_finite(), "{}: {}", c.quantity, c.measured);
            assert!(c.paper.is_finite() && c.tolerance.is_finite());
        }
    }

    /// The §5.1 differs diagnosis, counted: without reservations every
    /// analysis is 2 walk steps; on the Fig. 5-1 graph an activity's later
    /// constraints walk further (its earlier own intervals are taken), and
    /// the book it copies holds more pieces (split across intervals).
    #[test]
    fn the_analysis_walk_grows_with_each_activitys_constraints_on_the_graph() {
        let free = crate::bench::feasibility_walks(false, 232);
        assert!(free.iter().all(|w| w.0 == 2), "{free:?}");
        let graph = crate::bench::feasibility_walks(true, 232);
        let round = |k: usize| graph[58 * k..58 * (k + 1)].iter().map(|w| w.0).sum::<u64>() / 58;
        let rounds: Vec<u64> = (0..4).map(round).collect();
        assert_eq!(rounds, vec![371, 1241, 2109, 2733]);
        assert!(
            graph[231].1 > free[231].1,
            "{:?} {:?}",
            graph[231],
            free[231]
        );
    }

    /// 10ms/40ms and 2ms/10ms with 20us switches leave 54.75% free, less a
    /// 20us piece switch per 10ms base period.
    #[test]
    fn assignable_share_follows_the_graph() {
        let r = [(10 * MS, 40 * MS), (2 * MS, 10 * MS)];
        let p = assignable(&r, None, 20_000);
        assert!((p - (0.5475 - 0.002)).abs() < 1e-9, "{p}");
    }
}
