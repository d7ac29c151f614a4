//! Rules for the schedulers that promise CPU time ahead: `res` (HLS's CPU
//! reservation scheduler), `dbs` (the BVT paper's deadline-based
//! reservations), `rialto` (Rialto's reservations and time constraints) and
//! `rtwake` (Vassal's sample real-time scheduler).
//!
//! **`res`** (HLS §5.1, "CPU Reservations"): `ALL -> RESBH+, RESU ->
//! RESBH+`. Its own parameter `rate` (default 1) is the speed of the
//! processor it schedules, below 1 when its parent gives it a uniformly
//! slower processor: it accepts ALL, or RESU r with r at least its `rate`.
//! A child attaching with `amount` and `period` gets RESBH amount, period in
//! that processor's time, i.e. RESBH rate·amount, period of the CPU; one
//! attaching with `rate` gets RESU (its rate times `res`'s); one attaching
//! with neither gets the policy's default reservation, RESBH 1, 10. (A
//! `reserve` message later replaces a child's reservation after the same
//! admission test, at run time: not analysed.) Admission: the
//! EDF utilisation test, Σ amount/period + Σ rate ≤ 1 (exact for EDF with
//! deadlines at the period ends; on several CPUs global EDF meets whatever
//! EDF meets on one). Reservations it cannot back — too many, or an input
//! that is not ALL or a fast enough RESU — are errors.
//!
//! On several VPs (`multiprocessor`, the policy's own parser; other modes
//! need `rate` 1 and ALL on each VP, i.e. one VP per CPU at the root or at
//! an `fp` top priority): `"one"` is the above (one CPU's worth, the other
//! VPs extra). `"partitioned"` replays placement in the order children
//! join (ties in child order; each VP of a child asks once): `fit =
//! "first"` the lowest VP whose utilizations stay ≤ 1, `"worst"` the least
//! loaded after it; each placed child keeps its uniprocessor label (its VP
//! is a uniprocessor `res` holding ALL). `"global"` replays global EDF's
//! admission by the Goossens–Funk–Baruah bound (Real-Time Systems 25(2–3),
//! 2003): a set with Σu ≤ m − (m−1)·u_max meets every deadline under
//! global EDF on m identical processors (u = C/min(D, T) in the density
//! form; a server's windows are jobs due at their end with u times their
//! length at most), so an admitted child keeps RESBH amount, period. A
//! child the test refuses is NULL (refused): a warning for a thread, an
//! error for a scheduler. The replay assumes no child leaves before the
//! last joins (a run re-analyses each change).
//!
//! **`dbs`** (Duda & Cheriton §5): `any -> NULL+`. Its reservations `(s,
//! t, d)` are asked by message and admitted at run time by an EDF demand
//! test for a whole processor; they are one-off windows, not standing HLS
//! guarantees, so every child's edge carries NULL. A `dbs` whose threads
//! ask for reservations (a `reserve` message, or `randres` with `reserve`)
//! promises them as soon as it admits them: it needs ALL, else an error.
//! `multiprocessor = "partitioned"` admits them per VP (the thread on one
//! VP): the same, on every VP; `"global"` is an error (no published test
//! for one-off windows).
//!
//! **`rialto`** (Jones et al.; Table 1's Rialto row): `ALL -> RESCS+`. A
//! `reserve { amount, period }` message gives the sender's activity RESCS
//! of what Rialto grants for it, which may be less than asked: the
//! requests are replayed, in thread then program order, through the
//! policy's own scheduling graph ([`hsched_policies::rialto::grants`]),
//! which scales a period down to a power-of-two multiple of its base
//! period and refuses what does not fit. A thread alone in its activity
//! gets the grant on its edge, threads sharing an activity share it
//! (their edges carry NULL and say so), a refused request leaves NULL and
//! a warning. Reservations and time constraints are promises: they need
//! ALL (this `rialto` has no rate parameter, so RESU is not used).
//! Reservations summing past the CPU are a warning too.
//! With `multiprocessor = "partitioned"` (a graph per VP) the replay runs
//! through one graph per VP with the policy's own placement rule
//! (`hsched_policies::rialto::place`, first or worst fit, an activity
//! placed at its first grant and kept there), and each grant's label names
//! its VP; it needs ALL on every input (one VP per CPU under the root or an
//! `fp` top priority), and the sum warning is against the node's VPs. It
//! assumes what the replay assumes on one CPU (requests in the order their
//! threads arrive, each thread's in program order; threads that leave are
//! not replayed) and that partitioned threads reserve before they open
//! constraints (the policy refuses a constraint of an activity without a
//! VP, so this is enforced, not assumed).
//!
//! **`rtwake`** (Vassal §5): `ALL -> NULL+`. It promises exact wake-ups,
//! which only a scheduler that holds the whole CPU can keep; shares, none.

use super::notation::on_slower_processor;
use super::{
    duration_param, rate_text, share_sum, str_param, ChildKind, Eval, Label, Node, Severity,
    Verdict,
};
use crate::guarantee::{Guarantee, Kind, Limit, Shape};
use crate::rewrite;
use hsched_core::{Duration, Instant, Share, ShareRange};
use hsched_policies::partition::{Fit, Mode};
use std::collections::BTreeMap;

/// What a `res` child attached with neither a reservation nor a rate gets:
/// the policy's default reservation (1ms every 10ms).
pub const RES_DEFAULT_AMOUNT: Duration = Duration::from_millis(1);
/// See [`RES_DEFAULT_AMOUNT`].
pub const RES_DEFAULT_PERIOD: Duration = Duration::from_millis(10);

/// (policy, Table 1 row, rule).
pub const RULES: &[(&str, &str, Eval)] = &[
    ("res", "ALL -> RESBH+, RESU -> RESBH+", res),
    ("dbs", "any -> NULL+", dbs),
    ("rialto", "ALL -> RESCS+", rialto),
    ("rtwake", "ALL -> NULL+", rtwake),
];

/// The speed of the processor `res` receives: 1 for ALL, r for RESU r.
fn processor_rate(input: &Guarantee) -> Option<Share> {
    match input {
        Guarantee::All => Some(Share::ONE),
        Guarantee::Resu(r) => Some(*r),
        other => match rewrite::strongest(other, Kind::Resu)?.result {
            Guarantee::Resu(r) => Some(r),
            _ => None,
        },
    }
}

/// `multiprocessor` and `fit` as the policy reads them (its own parser), or
/// the error it would build with.
fn mp_mode(node: &Node<'_>, modes: &[&str], why_not_global: &str) -> Result<Mode, String> {
    let mp = str_param(node.params, "multiprocessor")?.unwrap_or("one");
    let fit = str_param(node.params, "fit")?.unwrap_or("first");
    Mode::parse(node.policy, mp, fit, modes, why_not_global)
}

pub fn res(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    let rate = match str_param(node.params, "rate")
        .map(|s| Share::parse(s.unwrap_or("1"), ShareRange::Rate))
    {
        Ok(Ok(r)) => r,
        Ok(Err(e)) | Err(e) => {
            v.problems
                .push(node.problem(Severity::Error, format!("{}: its `rate`: {e}", node.who())));
            return v;
        }
    };
    let mode = match mp_mode(node, hsched_policies::res::MODES, "") {
        Ok(m) => m,
        Err(e) => {
            v.problems
                .push(node.problem(Severity::Error, format!("{}: {e}", node.who())));
            return v;
        }
    };
    if mode != Mode::One && rate != Share::ONE {
        v.problems.push(node.problem(
            Severity::Error,
            format!(
                "{}: `multiprocessor` other than \"one\" needs a whole CPU per VP (ALL), but its `rate` is {}",
                node.who(),
                rate_text(rate)
            ),
        ));
        return v;
    }
    // What each child asks for, in res's own time: `amount` and `period`
    // (0: not given), or `rate` (empty: not given), or neither: res's
    // default reservation.
    let mut asked: Vec<Option<Guarantee>> = Vec::with_capacity(node.children.len());
    let mut defaulted: Vec<bool> = Vec::with_capacity(node.children.len());
    for c in &node.children {
        let zero = Some(Duration::ZERO);
        let amount = duration_param(c.params, "amount", zero).map(Option::unwrap_or_default);
        let period = duration_param(c.params, "period", zero).map(Option::unwrap_or_default);
        let child_rate =
            str_param(c.params, "rate").map(|r| r.map(str::trim).filter(|r| !r.is_empty()));
        let mut default = false;
        let g = match (amount, period, child_rate) {
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e),
            (Ok(a), Ok(p), Ok(Some(r))) => {
                if a.is_zero() && p.is_zero() {
                    Share::parse(r, ShareRange::Rate).map(Guarantee::Resu)
                } else {
                    Err("give either `amount` and `period` (a reservation) or `rate` (a uniformly slower processor), not both".to_string())
                }
            }
            (Ok(a), Ok(p), Ok(None)) => {
                let (a, p) = if a.is_zero() && p.is_zero() {
                    default = true;
                    (RES_DEFAULT_AMOUNT, RES_DEFAULT_PERIOD)
                } else {
                    (a, p)
                };
                if a.is_zero() {
                    Err(format!(
                        "a reservation needs an `amount` longer than zero (got {a} per {p})"
                    ))
                } else {
                    Guarantee::reservation(Shape::Basic, Limit::Hard, a, p)
                }
            }
        };
        defaulted.push(default);
        match g {
            Ok(g) => asked.push(Some(g)),
            Err(e) => {
                v.problems.push(node.child_problem(
                    c,
                    Severity::Error,
                    format!("{} under {}: {e}", c.describe(), node.who()),
                ));
                asked.push(None);
            }
        }
    }
    let promised: Vec<&str> = node
        .children
        .iter()
        .zip(&asked)
        .filter(|(_, a)| a.is_some())
        .map(|(c, _)| c.name)
        .collect();
    let input = node.input();
    let speed = processor_rate(&input);
    let accepted = speed.is_some_and(|s| s >= rate);
    if !accepted {
        let severity = if promised.is_empty() {
            Severity::Warning
        } else {
            Severity::Error
        };
        let why = match speed {
            Some(s) => format!(
                "res runs as if on a processor of rate {} (its `rate`), but {}, a processor of rate {}",
                rate_text(rate),
                node.given(),
                rate_text(s)
            ),
            None => format!("res needs ALL or RESU, but {}", node.given()),
        };
        let tail = if promised.is_empty() {
            "; it has no reservations to keep".to_string()
        } else {
            format!(
                ": the reservations of {} cannot be kept",
                promised
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        v.problems
            .push(node.problem(severity, format!("{}: {why}{tail}", node.under())));
        return v;
    }
    if let Guarantee::Resu(_) = input {
    } else if input != Guarantee::All {
        v.taken_as = rewrite::strongest(&input, Kind::Resu);
    }
    for (i, a) in asked.iter().enumerate() {
        let Some(g) = *a else {
            continue;
        };
        let mut why = Vec::new();
        if defaulted[i] {
            why.push("res's default reservation".to_string());
        }
        let g = if rate == Share::ONE {
            g
        } else {
            why.push(format!("{g} on a processor of rate {}", rate_text(rate)));
            on_slower_processor(g, rate)
        };
        v.labels[i] = match why.is_empty() {
            true => Label::new(g),
            false => Label::because(g, why.join("; ")),
        };
    }
    if mode != Mode::One {
        multiprocessor_admission(node, mode, &asked, &mut v);
        return v;
    }
    match share_sum(asked.iter().flatten()) {
        Some(sum) if sum <= Share::ONE => {}
        sum => {
            let list: Vec<String> = node
                .children
                .iter()
                .zip(&asked)
                .filter_map(|(c, a)| a.map(|g| format!("{g} (`{}`)", c.name)))
                .collect();
            let total = sum.map_or("more than can be counted".into(), |s| s.percent_string());
            let of = if rate == Share::ONE {
                "the CPU".to_string()
            } else {
                format!("its processor of rate {}", rate_text(rate))
            };
            v.problems.push(node.problem(
                Severity::Error,
                format!(
                    "{}: its reservations sum to {total} of {of}, past 100% (EDF admission): {}",
                    node.who(),
                    list.join(" + ")
                ),
            ));
        }
    }
    v
}

/// Replays `res`'s admission on several VPs, in the order the children
/// join (ties in child order), assuming none leaves meanwhile: each VP a
/// child holds asks for its utilization. Partitioned: placed by `fit` on a
/// VP whose load stays at most 1 (uniprocessor EDF there); global: admitted
/// while `Σu + (m-1)·u_max <= m` (Goossens, Funk & Baruah 2003, global EDF
/// on m identical processors, implicit deadlines: a server's job is due at
/// its window's end). An admitted child keeps the label it was given; a
/// refused one gets `Label::refused`: an error for a scheduler (it cannot
/// attach), a warning for a thread (it runs under the default scheduler).
fn multiprocessor_admission(
    node: &Node<'_>,
    mode: Mode,
    asked: &[Option<Guarantee>],
    v: &mut Verdict,
) {
    let m = node.vps();
    let mut order: Vec<usize> = (0..node.children.len()).collect();
    order.sort_by_key(|&i| node.children[i].arrival);
    let mut loads = vec![Share::ZERO; m as usize];
    let (mut total, mut max) = (Share::ZERO, Share::ZERO);
    for i in order {
        let (c, Some(g)) = (&node.children[i], asked[i]) else {
            continue;
        };
        let u = g.share().unwrap_or(Share::ZERO);
        let mut placed = Vec::new();
        let mut refused = None;
        for _ in 0..c.vps.max(1) {
            match mode {
                Mode::Partitioned(fit) => {
                    let fits = |l: &Share| l.checked_add(u).filter(|a| *a <= Share::ONE);
                    let vp = match fit {
                        Fit::First => loads.iter().position(|l| fits(l).is_some()),
                        Fit::Worst => (0..loads.len())
                            .filter_map(|k| fits(&loads[k]).map(|a| (a, k)))
                            .min()
                            .map(|x| x.1),
                    };
                    match vp {
                        Some(k) => {
                            loads[k] = loads[k].checked_add(u).unwrap_or(Share::ONE);
                            placed.push(k);
                        }
                        None => {
                            let each: Vec<String> = loads
                                .iter()
                                .enumerate()
                                .map(|(k, l)| format!("VP {k} holds {}", l.percent_string()))
                                .collect();
                            refused = Some(format!(
                                "{} ({}) fits on none of the {m} VPs of {} (partitioned, {}): {}",
                                g,
                                u.percent_string(),
                                node.who(),
                                fit.name(),
                                each.join(", ")
                            ));
                            break;
                        }
                    }
                }
                Mode::Global | Mode::One => {
                    let new_max = max.max(u);
                    let t = total.checked_add(u);
                    let lhs = t.and_then(|t| {
                        new_max
                            .checked_mul(Share::integer(u64::from(m) - 1))
                            .and_then(|x| x.checked_add(t))
                    });
                    match lhs {
                        Some(l) if l <= Share::integer(u64::from(m)) => {
                            total = t.unwrap_or(total);
                            max = new_max;
                        }
                        _ => {
                            refused = Some(format!(
                                "{g} ({}) is refused by {} (global EDF on {m} VPs): with {} admitted, Σu + (m-1)·u_max = {} > {m} (Goossens, Funk & Baruah 2003)",
                                u.percent_string(),
                                node.who(),
                                total.percent_string(),
                                lhs.map_or("more than can be counted".into(), |l| l.percent_string())
                            ));
                            break;
                        }
                    }
                }
            }
        }
        match refused {
            None => {
                let how = match mode {
                    Mode::Partitioned(fit) => {
                        let vps: Vec<String> = placed.iter().map(|k| k.to_string()).collect();
                        format!(
                            "partitioned ({}): on VP {}, EDF on one CPU there",
                            fit.name(),
                            vps.join(", ")
                        )
                    }
                    _ => {
                        format!("global EDF on {m} VPs, admitted by the Goossens-Funk-Baruah bound")
                    }
                };
                let l = &mut v.labels[i];
                l.why = Some(match l.why.take() {
                    Some(w) => format!("{w}; {how}"),
                    None => how,
                });
            }
            Some(why) => {
                let (severity, then) = match c.kind {
                    ChildKind::Thread => (
                        Severity::Warning,
                        "it runs under the default scheduler (or below the hierarchy, when this is the default)",
                    ),
                    ChildKind::Scheduler { .. } => {
                        (Severity::Error, "the hierarchy cannot be built")
                    }
                };
                v.problems.push(node.child_problem(
                    c,
                    severity,
                    format!("{} under {}: {why}; {then}", c.describe(), node.who()),
                ));
                v.labels[i] = Label::refused(why);
            }
        }
    }
}

pub fn dbs(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    let mode = match mp_mode(
        node,
        hsched_policies::dbs::MODES,
        hsched_policies::dbs::NO_GLOBAL,
    ) {
        Ok(m) => m,
        Err(e) => {
            v.problems
                .push(node.problem(Severity::Error, format!("{}: {e}", node.who())));
            return v;
        }
    };
    let reservers: Vec<usize> = (0..node.children.len())
        .filter(|&i| {
            node.children[i]
                .messages
                .iter()
                .any(|m| m.name == "reserve")
        })
        .collect();
    if reservers.is_empty() {
        return v;
    }
    let why = match mode {
        Mode::Partitioned(fit) => format!(
            "reservations (s, t, d) by message: admitted at run time on the VP the thread is placed on ({}), met while dbs holds ALL on every VP",
            fit.name()
        ),
        _ => "reservations (s, t, d) by message: admitted at run time, met while dbs holds ALL"
            .to_string(),
    };
    for &i in &reservers {
        v.labels[i] = Label::because(Guarantee::Null, why.clone());
    }
    if node.input() != Guarantee::All {
        let names: Vec<String> = reservers
            .iter()
            .map(|&i| format!("`{}`", node.children[i].name))
            .collect();
        v.problems.push(node.problem(
            Severity::Error,
            format!(
                "{}: dbs admits reservations (s, t, d) by message (from {}) with an EDF test for a whole processor, so it needs ALL, but {}",
                node.under(),
                names.join(", "),
                node.given()
            ),
        ));
    }
    v
}

pub fn rialto(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    // Activity of each child, and the reservation each activity asks for
    // (the last `reserve` counts, in the order of the requests below).
    let mut activities: Vec<String> = Vec::with_capacity(node.children.len());
    let mut reserved: BTreeMap<String, Guarantee> = BTreeMap::new();
    let mut members: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut askers: Vec<&str> = Vec::new();
    // Every valid request, with when its thread arrives: sorted below into
    // the order the policy gets them, by arrival (ties in child order),
    // each thread's in program order. That is the order when threads ask
    // as they start, as reservations are asked; one asked later in a
    // program may in fact come after a later thread's.
    let mut requests: Vec<(Instant, String, Duration, Duration)> = Vec::new();
    for (i, c) in node.children.iter().enumerate() {
        let activity = match str_param(c.params, "activity") {
            Ok(Some(a)) if !a.is_empty() => a.to_string(),
            _ => format!("{} (its own)", c.name),
        };
        members.entry(activity.clone()).or_default().push(i);
        let mut asks = false;
        for m in &c.messages {
            match m.name.as_str() {
                "reserve" => {
                    asks = true;
                    let amount = duration_param(&m.args, "amount", None);
                    let period = duration_param(&m.args, "period", None);
                    match (amount, period) {
                        (Ok(Some(a)), Ok(Some(p))) => {
                            match Guarantee::reservation(Shape::Continuous, Limit::Soft, a, p) {
                                Ok(_) => requests.push((c.arrival, activity.clone(), a, p)),
                                Err(e) => v.problems.push(node.child_problem(
                                    c,
                                    Severity::Warning,
                                    format!(
                                        "{} asks {} for a reservation it will refuse: {e}",
                                        c.describe(),
                                        node.who()
                                    ),
                                )),
                            }
                        }
                        _ => v.problems.push(node.child_problem(
                            c,
                            Severity::Warning,
                            format!(
                                "{} sends `reserve` to {} without `amount` and `period`: it will be refused",
                                c.describe(),
                                node.who()
                            ),
                        )),
                    }
                }
                "begin_constraint" => asks = true,
                _ => {}
            }
        }
        if asks {
            askers.push(c.name);
        }
        activities.push(activity);
    }
    requests.sort_by_key(|r| r.0);
    for (_, act, a, p) in &requests {
        if let Ok(g) = Guarantee::reservation(Shape::Continuous, Limit::Soft, *a, *p) {
            reserved.insert(act.clone(), g);
        }
    }
    if askers.is_empty() {
        return v;
    }
    // Partitioned: a graph per VP, each a schedule of one whole CPU, so
    // every VP must receive ALL (one VP per CPU under the root or an `fp`
    // top priority); one: the first VP's graph, as on one CPU.
    let partitioned = matches!(
        str_param(node.params, "multiprocessor"),
        Ok(Some("partitioned"))
    );
    let all = if partitioned {
        !node.inputs.is_empty() && node.inputs.iter().all(|i| i.guarantee == Guarantee::All)
    } else {
        node.input() == Guarantee::All
    };
    if !all {
        let names: Vec<String> = askers.iter().map(|n| format!("`{n}`")).collect();
        let on = if partitioned {
            "one schedule of a whole processor per VP (partitioned), so it needs ALL on every VP"
        } else {
            "a schedule of the whole processor, so it needs ALL"
        };
        v.problems.push(node.problem(
            Severity::Error,
            format!(
                "{}: rialto keeps reservations and time constraints (asked by {}) on {on}, but {}",
                node.under(),
                names.join(", "),
                node.given()
            ),
        ));
        return v;
    }
    let vps = if partitioned { node.vps() } else { 1 };
    // What the policy's own graph grants, which may be less than asked.
    let asked: Vec<(&str, Duration, Duration)> = requests
        .iter()
        .map(|(_, a, x, y)| (a.as_str(), *x, *y))
        .collect();
    let granted: BTreeMap<String, Result<(Guarantee, usize), String>> =
        match hsched_policies::rialto::grants(node.params, vps, &asked) {
            Ok(grants) => grants
                .into_iter()
                .map(|(act, grant)| {
                    let grant = grant.and_then(|(a, p, vp)| {
                        Guarantee::reservation(Shape::Continuous, Limit::Soft, a, p)
                            .map(|g| (g, vp))
                    });
                    (act, grant)
                })
                .collect(),
            Err(e) => {
                v.problems
                    .push(node.problem(Severity::Error, format!("{}: {e}", node.who())));
                return v;
            }
        };
    for (i, c) in node.children.iter().enumerate() {
        let act = &activities[i];
        let (Some(asked), Some(grant)) = (reserved.get(act), granted.get(act)) else {
            continue;
        };
        let asker = askers.contains(&c.name);
        let (g, vp) = match grant {
            Ok(g) => *g,
            Err(why) if asker => {
                v.labels[i] = Label::refused(format!("its {asked} is refused: {why}"));
                v.problems.push(node.child_problem(
                    c,
                    Severity::Warning,
                    format!(
                        "{} asks {} for {asked}, which it refuses: {why}",
                        c.describe(),
                        node.who()
                    ),
                ));
                continue;
            }
            Err(why) => {
                v.labels[i] = Label::because(
                    Guarantee::Null,
                    format!("its activity `{act}`'s {asked} is refused: {why}"),
                );
                continue;
            }
        };
        // Members of one activity share its reservation round robin; one
        // that never uses the CPU (it reserved and left, or only sleeps)
        // takes nothing from the others.
        let others = members[act]
            .iter()
            .filter(|&&j| j != i && node.children[j].runs)
            .count();
        let mut whose = match asker {
            true => "reserved by message".to_string(),
            false => format!("activity `{act}`'s reservation; its other members use no CPU"),
        };
        if partitioned {
            whose = format!(
                "{whose}; placed on vp{vp}'s graph (partitioned, fit `{}`), its threads run on that CPU only",
                str_param(node.params, "fit").ok().flatten().unwrap_or("first")
            );
        }
        v.labels[i] = if others > 0 {
            Label::because(
                Guarantee::Null,
                format!(
                    "shares activity `{act}`'s {g} with {others} other member(s) that use the CPU"
                ),
            )
        } else if g == *asked {
            Label::because(g, whose)
        } else {
            Label::because(
                g,
                format!("{whose}, granted for the {asked} asked: rialto scales a period down to a power-of-two multiple of its base"),
            )
        };
    }
    let cpus = Share::new(vps as u64, 1).unwrap_or(Share::ONE);
    match share_sum(reserved.values()) {
        Some(s) if s <= cpus => {}
        s => {
            let list: Vec<String> = reserved
                .iter()
                .map(|(a, g)| format!("{g} (`{a}`)"))
                .collect();
            v.problems.push(node.problem(
                Severity::Warning,
                format!(
                    "{}: the reservations its threads ask for sum to {} of {}: rialto will refuse the ones that do not fit when they are asked: {}",
                    node.who(),
                    s.map_or("more than can be counted".into(), |s| s.percent_string()),
                    if vps > 1 { format!("its {vps} CPUs (one graph per VP)") } else { "the CPU".to_string() },
                    list.join(" + ")
                ),
            ));
        }
    }
    v
}

pub fn rtwake(node: &Node<'_>) -> Verdict {
    let mut v = Verdict::all_null(node);
    for l in &mut v.labels {
        l.why = Some("wake-ups at exact times while rtwake holds ALL".into());
    }
    if node.input() != Guarantee::All {
        let severity = if node.children.is_empty() {
            Severity::Warning
        } else {
            Severity::Error
        };
        v.problems.push(node.problem(
            severity,
            format!(
                "{}: rtwake promises wake-ups at exact times, which needs ALL, but {}",
                node.under(),
                node.given()
            ),
        ));
    }
    v
}
