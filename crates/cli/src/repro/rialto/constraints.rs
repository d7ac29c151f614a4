//! Rialto's time constraints, one rule at a time: interval assignment
//! (§3.2), criticality (§4.3), nesting (§4.4) and the second chance for
//! briefly blocked activities (§4.5).

use super::graph_rule::first_reserve;
use super::intervals::{overlap, ran_between, MS};
use super::replies::{
    assigned, begin_reply, begins, found, found_or_all, replies, reply_field, reply_ns, request,
};
use crate::repro::{parse, scenario, simulate, simulate_with, Bound, Check, Entry};
use hsched_core::{Duration, Instant};
use hsched_model::{LogKind, Op, RunResult, Scenario};

/// The paper's table in §3.2: each constraint's interval assignment, ms.
pub(super) const C1_PAPER: &[(u64, u64)] = &[(244, 248), (248, 250), (257, 258), (264, 268)];
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

pub(super) fn section_3_2() -> Entry {
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

/// The same scenario with `thread`'s constraints made non-critical.
pub(super) fn without_criticality(file: (&str, &str), thread: &str) -> Result<RunResult, String> {
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

pub(super) fn activity_of<'a>(scn: &'a Scenario, thread: &str) -> Option<&'a str> {
    let t = scn.threads.iter().find(|t| t.name == thread)?;
    match t.params.get("activity") {
        Some(hsched_core::Value::Str(a)) if !a.is_empty() => Some(a),
        _ => Some(&t.name),
    }
}

pub(super) fn section_4_3() -> Entry {
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

pub(super) fn section_4_4() -> Entry {
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
pub(super) fn second_chance_inputs(scn: &Scenario) -> Result<(u64, u64, u64, u64, u64), String> {
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
pub(super) fn set_job(scn: &mut Scenario, r1: u64, s: u64, r2: u64) {
    let t = scn.threads.iter_mut().find(|t| t.name == "S").expect("S");
    for op in t.program.ops.iter_mut() {
        if let Op::Periodic { body, .. } = op {
            let fixed = |n| hsched_model::Dist::Fixed(Duration::from_nanos(n));
            *body = vec![Op::Run(fixed(r1)), Op::Sleep(fixed(s)), Op::Run(fixed(r2))];
        }
    }
}

pub(super) fn section_4_5() -> Entry {
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
