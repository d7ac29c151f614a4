//! The `rialto` policy's parameters and registry entry: reading them
//! (`placement` pins, the multiprocessor mode and fit, the graph's
//! parameters), building an instance, and [`grants`], which replays what a
//! configured instance grants for the analysis.

use std::collections::BTreeMap;

use crate::params;
use hsched_core::{Duration, ParamKind, ParamSpec, Params, PolicyInfo, Scheduler, Value};

use super::super::graph::{Graph, GraphParams};
use super::super::place::{self, Fit, Multiprocessor, VpPin};
use super::state::Rialto;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "rialto",
    summary: "Rialto: CPU reservations on a precomputed graph, time constraints EDF, round robin",
    doc: "Jones, Rosu & Rosu (SOSP '97). Threads attach with `activity`; message \
          `reserve { amount, period }` reserves for the activity on a precomputed \
          scheduling graph (refused with the reason if it does not fit), `release` drops \
          it, `begin_constraint { start, estimate, deadline, critical }` / \
          `end_constraint` run time constraints EDF in assigned time; the simulator's mutexes and \
          `call via rpc` lend a blocked thread's constraint to the holder or server by \
          themselves (`lock`, `unlock`, `block_on { mutex }` report other mutexes); \
          `rpc_serve { port }`, `rpc_call { port }` (then block), `rpc_reply` run an RPC \
          server in its caller's activity (reservation, round robin, the blocked \
          caller's constraint) until it replies. The first VP follows the graph by the \
          paper's §4.6 rules (next node under `threshold`, EDF constraint, the node's \
          activity, the second-chance queue, round robin of activities with `quantum`; \
          a waking thread or activity goes to the back of its line); other VPs are \
          activity round robin. `multiprocessor = \"partitioned\"`: a graph per VP, each \
          activity placed on one by its first granted `reserve` (`fit` = first or worst) \
          and run there only, constraints only in a placed activity, unplaced activities \
          round robin on every VP's free time; `\"global\"` is refused (no published test). \
          Limits: in mode one only the first VP follows the graph; partitioned, nothing \
          migrates; a server takes one call at a time.",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// The default round-robin quantum.
pub const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);

pub(super) fn dur(min: Duration) -> ParamKind {
    ParamKind::Duration { min }
}

fn params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "base_period",
            dur(Duration::ZERO),
            "fixed base period of the graph (0: the smallest requested period)",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "switch_cost",
            dur(Duration::ZERO),
            "context-switch cost reserved in front of every interval",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "min_interval",
            dur(Duration::ZERO),
            "shortest interval (and granted amount)",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "regrant",
            ParamKind::Str,
            "how a rebuild on a smaller base period regrants earlier reservations: \
             \"keep\" (each grant still holds in every window of its period) or \
             \"request\" (each original request scaled afresh, same percentage, §3.1)",
        )
        .with_default(Value::Str("keep".into())),
        params::positive_duration(
            "quantum",
            DEFAULT_QUANTUM,
            "round-robin slice within an activity and for free time",
        ),
        params::positive_duration(
            "horizon",
            Duration::from_secs(1),
            "constraint windows are judged up to now + horizon",
        ),
        ParamSpec::new(
            "threshold",
            dur(Duration::ZERO),
            "§4.6 rule 1: with less than this left in a node, select the next node",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        params::optional_str(
            "placement",
            "pins activities' reservations to graph nodes, e.g. \"B@0.0 A@1.0 C@1:2.1\" \
             ([VP:]DEPTH.NODE, VP 0 unless given, another VP only when partitioned; \
             use with a fixed base_period)",
        ),
        params::multiprocessor(
            "\"one\": the first VP follows the graph, the others round robin; \
             \"partitioned\": a graph per VP, each activity placed on one when it first \
             reserves and run there only (\"global\" is refused: no published test)",
        ),
        params::fit(
            "partitioned placement: \"first\" (lowest VP whose graph grants it) or \
             \"worst\" (the VP left with the largest free share, ties to the lowest)",
        ),
    ]
}

/// Parses `placement`: `ACTIVITY@[VP:]DEPTH.NODE` entries separated by
/// spaces or commas (VP 0 unless given).
fn placement(text: &str) -> Result<BTreeMap<String, VpPin>, String> {
    let mut pins = BTreeMap::new();
    for entry in text.split([' ', ',']).filter(|e| !e.is_empty()) {
        let (name, node) = entry.split_once('@').ok_or_else(|| {
            format!("`placement`: `{entry}` is not ACTIVITY@DEPTH.NODE (e.g. `A@1.0`)")
        })?;
        if name.is_empty() {
            return Err(format!("`placement`: `{entry}` names no activity"));
        }
        let (vp, node) = match node.split_once(':') {
            Some((vp, node)) => (
                vp.parse::<usize>().map_err(|_| {
                    format!("`placement`: `{entry}`: `{vp}` is not a VP index (e.g. `A@1:0.0`)")
                })?,
                node,
            ),
            None => (0, node),
        };
        let pin = VpPin {
            vp,
            pin: node.parse().map_err(|e| format!("`placement`: {e}"))?,
        };
        if pins.insert(name.to_string(), pin).is_some() {
            return Err(format!("`placement`: activity `{name}` is pinned twice"));
        }
    }
    Ok(pins)
}

fn child_params() -> Vec<ParamSpec> {
    vec![params::optional_str(
        "activity",
        "the activity whose reservation the thread shares (empty: its own)",
    )]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let mut r = Rialto::new(
        graph_params(params)?,
        params.duration("quantum"),
        params.duration("horizon"),
    );
    r.threshold = params.duration("threshold");
    r.pins = placement(params.str("placement"))?;
    (r.mode, r.fit) = modes(params)?;
    if r.mode == Multiprocessor::One {
        if let Some((name, p)) = r.pins.iter().find(|(_, p)| p.vp != 0) {
            return Err(format!(
                "`placement`: `{name}` is pinned to vp{}, but with multiprocessor = \"one\" only vp0 follows a graph",
                p.vp
            ));
        }
    }
    Ok(Box::new(r))
}

/// The `multiprocessor` and `fit` parameters (resolved), checked together.
fn modes(params: &Params) -> Result<(Multiprocessor, Fit), String> {
    let mode = Multiprocessor::parse(params.str("multiprocessor"))?;
    let fit = place::parse_fit(params.str("fit"))?;
    if mode == Multiprocessor::One && fit != Fit::First {
        return Err(
            "`fit` places activities on VPs, so it needs multiprocessor = \"partitioned\"".into(),
        );
    }
    Ok((mode, fit))
}

/// The scheduling graph's parameters a `rialto` with `params` (resolved)
/// builds its graph with.
fn graph_params(params: &Params) -> Result<GraphParams, String> {
    let base = params.duration("base_period");
    let mut gp = GraphParams::paper(params.duration("switch_cost"));
    gp.base_period = (!base.is_zero()).then_some(base);
    gp.min_interval = params.duration("min_interval");
    gp.regrant_from_request = match params.str("regrant") {
        "keep" => false,
        "request" => true,
        other => {
            return Err(format!(
                "`regrant` is \"keep\" or \"request\", not \"{other}\""
            ))
        }
    };
    Ok(gp)
}

/// An activity's grant as (amount, period, the VP whose graph holds it),
/// or why its request is refused.
pub type Grant = Result<(Duration, Duration, usize), String>;

/// What a `rialto` with `params` (as a scenario gives them: defaults are
/// filled in here) holding `vps` VPs grants when its activities ask, in
/// this order, for the reservations `requests` (activity, amount, period;
/// a named activity as its `activity` parameter has it): each activity's
/// grant at the end, as (amount, period, VP), or why its request is
/// refused. The same graph code as the running policy: Rialto may grant
/// less than asked, scaling a period down to a power-of-two multiple of
/// its base period (§3.1: 6 ms every 30 ms is 4 ms every 20 ms on a 10 ms
/// base), and a later request may rebuild the graph and change an earlier
/// grant. With `multiprocessor = "one"` everything is on VP 0's graph
/// (`vps` is not used); with `"partitioned"` there is a graph per VP and
/// [`place::place`] places each activity at its first request, as the
/// policy does (a later request of the activity stays on its VP).
pub fn grants(
    params: &Params,
    vps: u32,
    requests: &[(&str, Duration, Duration)],
) -> Result<Vec<(String, Grant)>, String> {
    let params = params.resolve(&self::params())?;
    let pins = placement(params.str("placement"))?;
    let (mode, fit) = modes(&params)?;
    let n = match mode {
        Multiprocessor::One => 1,
        Multiprocessor::Partitioned => vps.max(1) as usize,
    };
    let mut graphs: Vec<Graph<usize>> = vec![Graph::new(graph_params(&params)?); n];
    let mut home: BTreeMap<usize, usize> = BTreeMap::new();
    let mut names: Vec<&str> = Vec::new();
    let mut refused: BTreeMap<usize, String> = BTreeMap::new();
    for &(name, amount, period) in requests {
        let activity = match names.iter().position(|n| *n == name) {
            Some(a) => a,
            None => {
                names.push(name);
                names.len() - 1
            }
        };
        let pin = pins.get(name).copied();
        // A refused request leaves the graphs as they were: an activity
        // that held a grant keeps it.
        match mode {
            Multiprocessor::One => {
                if let Err(why) =
                    graphs[0].reserve_pinned(activity, amount, period, pin.map(|p| p.pin))
                {
                    refused.insert(activity, why.to_string());
                }
            }
            Multiprocessor::Partitioned => {
                let only = match (home.get(&activity), pin) {
                    (Some(&v), _) => Some((v, "placed on")),
                    (None, Some(p)) => Some((p.vp, "pinned to")),
                    (None, None) => None,
                };
                match place::place(
                    &graphs,
                    fit,
                    only,
                    activity,
                    amount,
                    period,
                    pin.map(|p| p.pin),
                ) {
                    Ok((v, g, _)) => {
                        graphs[v] = g;
                        home.insert(activity, v);
                    }
                    Err(why) => {
                        refused.insert(activity, why);
                    }
                }
            }
        }
    }
    Ok(names
        .iter()
        .enumerate()
        .map(|(a, name)| {
            let v = home.get(&a).copied().unwrap_or(0);
            let grant = match graphs[v].granted(a) {
                Some(g) => Ok((g.amount, g.period, v)),
                None => Err(refused.remove(&a).unwrap_or_default()),
            };
            (name.to_string(), grant)
        })
        .collect())
}
