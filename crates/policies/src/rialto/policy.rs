//! `rialto`: the Rialto scheduler as a policy — CPU reservations on a
//! precomputed scheduling graph plus time constraints, over the building
//! blocks [`super::graph`] and [`super::constraints`].
//!
//! **Source.** Jones, Roşu & Roşu, "CPU Reservations and Time Constraints"
//! (SOSP '97): §2.3 (reservations per activity), §2.4 (time constraints),
//! §3 (the scheduling graph, interval assignment, EDF in assigned time,
//! round robin within an activity and among activities for the rest), §4.2
//! (constraint inheritance across mutexes and RPCs), §4.5 (the
//! second-chance queue) and §4.6 (next-thread selection, rules 1–5).
//! The messages are handled in `requests.rs`, selection is in `select.rs`
//! over the queues of `queues.rs`.
//!
//! **Children and messages.** A child (a thread) attaches with `activity`
//! (a string; empty or absent: the thread is an activity of its own).
//! Threads of one activity share its reservation. The `placement`
//! parameter (`"B@0.0 A@1.0"`) pins named activities' reservations to graph
//! nodes (`DEPTH.NODE`), to reproduce a given layout such as the paper's
//! Figure 3-1. A thread sends:
//! - `reserve { amount, period }`: reserve for its activity; replies
//!   `Ok { amount, period, rebuilt }` with the grant (the period scaled down
//!   to `base * 2^k`, the amount scaled with it, rounded up), or `Err` with
//!   the graph's refusal (over capacity, period too short, ...);
//! - `release`: drops its activity's reservation (`Ok { amount, period }`);
//! - `begin_constraint { start, estimate, deadline, critical, relative }`:
//!   `start` and `deadline` are instants (time since 0; with `relative =
//!   true`, from now), `start` defaults to now; replies `Ok { id, start,
//!   deadline, estimate, critical, inherited, stolen, assigned }` (the
//!   effective values, §4.4; `inherited`: time taken over from the
//!   enclosing constraint when nested; `stolen`: time a critical constraint
//!   took from its activity's non-critical ones, §4.3; `assigned`: the
//!   interval assignment, e.g. `"244ms-248ms 257ms-258ms"`) or `Err` saying
//!   how much could be found;
//! - `end_constraint`: ends the thread's innermost constraint; replies
//!   `Ok { taken, released }` (`taken`: the CPU time the thread received
//!   while the constraint was in effect). A refused (infeasible)
//!   `begin_constraint` stays *pending as denied* until the thread's next
//!   `end_constraint`, which then answers `Ok { taken, released: 0,
//!   denied: true }`;
//! - `lock { mutex }` (an integer): takes a free mutex (`Err` if held: the
//!   thread should then send `block_on` and block); `block_on { mutex }`:
//!   the thread waits for the mutex's holder (`Err` on a free mutex or a
//!   wait-for cycle); `unlock { mutex }`: releases it, handing it to the
//!   first waiter (`Ok { handed_over }`). These are for mutexes the
//!   platform does not report: the simulator's own mutexes and RPC calls
//!   reach the policy without messages, through `Scheduler::sync` (see
//!   below);
//! - `rpc_serve { port }` (an integer): the thread becomes the server of
//!   the port (`Err` if the port has one);
//! - `rpc_call { port }`: the thread calls the port's server and should
//!   block next (sleep, or wait for a mutex) until the server replies.
//!   From the call to the reply the server is scheduled as a member of the
//!   caller's activity (the outermost caller's, for nested calls; §4.2:
//!   "RPC service threads ... belong to the caller's activity and inherit
//!   all of the caller's scheduling attributes"): it runs in that
//!   activity's reserved intervals, second chance and round-robin turns,
//!   and while the caller is blocked it inherits the caller's constraint
//!   as a mutex holder does. Its CPU time is charged where its run was
//!   chosen: the caller's activity's intervals and turns, its second-chance
//!   debt, or the inherited constraint's share of the node (its own
//!   constraint, if any, counts what it runs as always). `Err` if the port
//!   has no server, the server serves another call or is blocked, the call
//!   would close a cycle (the sender serves the port, or the server waits
//!   for the sender), or the sender is itself waiting (after a `block_on`
//!   or an `rpc_call` of its own);
//! - `rpc_reply`: the server ends the call it serves and goes back to its
//!   own activity (`Err` if it serves none); the graph VP re-decides if it
//!   ran there for the caller.
//!
//! **The platform's mutexes and RPCs** (`Scheduler::sync`, `requests.rs`):
//! a child taking, blocking on or releasing a platform mutex, and a child
//! server taking or ending a child client's call, drive the same
//! inheritance book as the messages, in a separate name space, whatever
//! the mutex's declared protocol; the platform chooses who gets a released
//! mutex and the book follows. Events naming a thread of another scheduler
//! are not delivered (a holder there is lent nothing).
//!
//! A thread that leaves ends the call it makes (its server goes back to its
//! own activity), the call it serves (its caller waits no more) and closes
//! its ports. A server's `reserve`, `release` and constraints are its own
//! activity's, in a call too.
//!
//! When the graph changes (`reserve`, `release`, the last thread of a
//! reserved activity leaving) the constraint book is rebuilt over the new
//! graph and the open constraints are carried over by re-admitting each
//! (in id order, so outer before inner) with what it has not yet received
//! and its remaining window. Accepted constraints are promises, so a
//! `reserve` that would leave one of them without its time is refused
//! (the reply names the constraint); after a `release` (which only frees
//! time) one that no longer fits, which can only be the releasing
//! activity's, is dropped (its `end_constraint` then answers `Err`).
//!
//! **Decisions (§4.6).** Base period `i` starts at the absolute instant
//! `i * base`; a *node* is the graph interval (switch + run) of
//! [`Graph::period`]`(now / base)` that holds `now` (without a base period
//! everything is one free node). On the *graph VP* (`ParentVp(0)`), the
//! paper's rules in order:
//! 1. with less than `threshold` left in the node, the next node is used;
//! 2. among the constraints owning assigned time in the node, earliest
//!    deadline first, one whose effective start has come, that has not
//!    received its guaranteed time and not yet used its share of the node,
//!    and whose thread waits — or is blocked on a mutex or in a call and the
//!    thread at the end of its inheritance chain waits (§4.2): that thread
//!    runs until the share is used, the node ends, or it unlocks or replies;
//! 3. in a node reserved for an activity, a waiting thread of it: threads
//!    with pending denied constraints, then threads with late constraints
//!    (guaranteed time used, or past the deadline; both earliest deadline
//!    first), then round robin; for at most `quantum`;
//! 4. an activity of the second-chance queue with a waiting thread, chosen
//!    the same way, for at most what it has left to make up;
//! 5. the round-robin queue of activities (the first with a waiting thread
//!    goes to the back), a thread chosen the same way, for `quantum`.
//!
//! *Round robin* (§3.4, §3.5). Threads wait in their activity's line, and
//! activities in the activities' line, by turn. A thread picked in steps
//! 3–5 goes to the back of its activity's line when it is picked (assigned
//! time in step 2 does not cost it its place); an activity picked in step 5
//! goes to the back of the activities' line. A thread that wakes takes a
//! fresh turn at the back of its activity's line; an activity none of
//! whose threads was waiting or running takes a fresh turn at the back of
//! the activities' line when one wakes (or an RPC server joins it). So a
//! briefly sleeping thread or activity queues behind those that kept
//! running, the one running at its wake-up included (it went to the back
//! when it was picked): free time is plain round robin, and 50ms of work
//! waking among `N` CPU-bound activities with a 10ms quantum takes about
//! `50 + 50N` ms after the rest of the quantum running at its wake-up (the
//! paper's Fig. 5-5).
//!
//! The second-chance queue (§4.5): when an activity's last runnable thread
//! releases during a node reserved for it (graph VP held), or its RPC
//! server replies then and leaves it with none, the rest of the node is
//! recorded as lost, valid until the activity's next node starts; waking
//! inside the same node takes back what is left of it; time run in step 4
//! pays it off.
//!
//! Every horizon is cut at the end of the current node, so each node
//! boundary re-decides. A waking child that outranks (by rule) what the
//! graph VP runs preempts it; a timer at a constraint's future start does
//! too; `block_on`, `rpc_call` and `rpc_reply` re-decide when they change
//! the answer. Other VPs use rule 5 alone with `quantum`. The policy is
//! work conserving: it answers `Release` only when nothing waits.
//!
//! **Cost of a decision.** With `n` threads, `A` activities and `C` open
//! constraints, `vp_grant`, `vp_request` and `vp_release` (with their
//! preemption checks) and `charge` cost `O(log n + log A)` plus, where they
//! apply: `O(k log k)` for the `k` constraints owning assigned time in the
//! node (rule 2 takes them in EDF order until one can run, walking its
//! chain of waits, `O(log n)` a step); `O(m log n)` for the `m` waiting
//! threads of the chosen activity with a pending denied or an open
//! constraint (rule 3's first two classes); `O(R log R)` for the `R`
//! entries of the second-chance queue (reserved activities only). The node
//! holding `now` is a binary search in the kept walk of the current and the
//! next base period (`O(log p)` for `p` intervals on a path), rebuilt with
//! [`Graph::period`] once per base period and at each graph change; an
//! activity blocking in its own node finds its next node in that walk, or
//! else walks up to a hyperperiod (reservations of more than two base
//! periods). Nothing scans the threads or the activities: the queues of
//! `queues.rs` change in `O(log n)` with each thread. So with CPU-bound
//! threads in many activities and a few reservations and constraints, a
//! decision is `O(log n)` (the paper's §4.6 gets `O(1)` with intrusive
//! lists; ordered maps keep this deterministic and simple). Without a base
//! period the one node holds every open constraint's pieces (`k = C`).
//! Messages cost more (`reserve` rebuilds the graph and re-admits every
//! open constraint; `begin_constraint` walks its window).
//!
//! **Several CPUs: `multiprocessor`.** `"one"` (the default, the
//! behaviour above): one graph, followed by `ParentVp(0)`; the other VPs
//! run rule 5 alone. `"partitioned"`: one graph (and constraint book,
//! walk, second-chance records) per VP the instance holds, each built as
//! on one CPU, and `ParentVp(v)` follows graph `v` by the same rules 1–5.
//! An activity is *placed* on a VP by its first granted `reserve`
//! (`place.rs`: `fit = "first"`, the lowest VP whose graph grants it, or
//! `"worst"`, the VP left with the largest free share of its hyperperiod,
//! ties to the lowest; the reply adds `vp`); a refusal names each VP's
//! load. The placement lasts until the activity's last thread leaves: a
//! later `reserve` is admitted on that VP only (refused, not moved, if it
//! does not fit there), `release` keeps it there. Its threads run on that
//! VP only (its intervals, constraints, second chance and round-robin
//! turns there): nothing is proven for a migrating activity, so none
//! migrates. An RPC server runs where the activity it is scheduled in
//! runs (its caller's, during a call); inherited constraint time (§4.2) goes
//! only to a chain end that may run on the constraint's VP. Activities
//! without a VP are promised nothing and run round robin in any VP's free
//! time (rule 5 takes the earlier turn of the unplaced lane and the VP's
//! own lane); they cannot open a time constraint (refused: "reserve
//! first"), since a constraint is admitted on its activity's VP and
//! placing the activity then could send its `reserve` where the analysis's
//! replay does not. The VPs asked of the parent: each VP whose placed
//! activities have a runnable thread, plus one more per runnable unplaced
//! thread, lowest first. `placement` pins take an optional VP prefix
//! (`A@1:0.0`; VP 0 without one, and only VP 0 in mode `"one"`); a pinned
//! activity is placed on its pin's VP. `"global"` is refused at build time:
//! no published multiprocessor test exists for Rialto's graph.
//!
//! **Guarantee.** Holding one CPU through `ParentVp(0)` without a platform
//! tick: an activity granted `(X', Y')` one of whose threads is waiting or
//! running on that CPU at every instant of its intervals receives, in every
//! window `[T, T + Y')`, at least `X'` of CPU time minus the real context
//! switch cost in excess of the configured `switch_cost` at the start of each
//! of its intervals (the graph reserves `switch_cost + run` per interval and
//! the whole interval goes to the activity's threads, the constraints of the
//! same activity included, since assigned pieces in an activity's interval
//! are that activity's, and an RPC server during a call). An accepted constraint whose thread stays runnable
//! from its effective start to its deadline receives its guaranteed time by
//! its deadline: in each interval where it owns `p` of assigned time it
//! runs `p` ahead of anything else there (the pieces in one interval fit in
//! its run part), and its pieces add up to the guaranteed time inside its
//! window. Both hold with `threshold = 0` (the default); a positive
//! `threshold` may give up to `threshold` of each node to the next node's
//! choice (rule 1). Inherited runs (§4.2) use only the waiter's constraint's
//! own pieces. With a tick, each interval may start up to one tick late (a
//! horizon takes effect at the next tick).
//! Partitioned, the same holds on each VP for the activities placed there,
//! provided the parent gives every VP a whole CPU (ALL on each: one VP per
//! CPU under the root or an `fp` top priority): the graphs are independent
//! and a placed activity's time comes from its own VP's graph only.
//!
//! **Implemented.** §3 graph and interval assignment, §4.3 criticality,
//! §4.4 nesting (in [`super::constraints`]); §4.6 rules 1–5; §4.5 second
//! chance; §4.2 inheritance across mutexes and RPCs, reported by the platform or by
//! message.
//!
//! **Limits.** In mode `"one"` only `ParentVp(0)` follows the graph: on
//! several CPUs the other VPs use free-time round robin (a reserved thread
//! gets at least its guarantee, possibly more), and if the parent never
//! grants `ParentVp(0)` nothing is guaranteed. Partitioned: no migration,
//! so no re-placement when a VP fills up; an activity's placement is not
//! revisited after a `release`; a mutex holder placed on another VP than
//! its constrained waiter inherits nothing (priority inversion across CPUs
//! is not handled); graphs are added as VPs appear and never removed. A server stands for Rialto's per-call service
//! thread: it serves one call at a time (a busy server refuses), and the
//! caller must block by itself after `rpc_call` (a message cannot block a
//! thread); from the call to the reply the caller counts as waiting in the
//! inheritance book, so it cannot `lock`, `block_on` or call meanwhile.
//! Not done: inheritance for a thread blocked on a mutex *without* a
//! constraint whose activity has nothing else runnable (only constrained
//! waiters pass their time on; an RPC caller's activity does go to its
//! server, which is in it); the chain is walked on every decision without
//! path compression (the building block's `runs_for` needs `&mut`); a thread that leaves while blocked keeps the
//! mutexes it holds in the inheritance book (others it holds are handed
//! on); rule 3's preference for denied/late threads acts at decisions and
//! does not preempt; the second-chance record is the rest of the node at
//! the block, not time actually displaced; `activity` cannot be an integer
//! (a child parameter has one kind; use a string), no admission control at
//! `register_vp`.

use std::collections::{BTreeMap, BTreeSet};

use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Reply, Scheduler, Sender, SyncEvent, TimerKey, Value, VpState,
};

use super::constraints::{ConstraintId, Constraints};
use super::graph::{Graph, GraphParams};
use super::inherit::Inheritance;
use super::place::{self, Fit, Multiprocessor, VpPin};
pub(super) use requests::MutexKey;

mod queues;
mod requests;
mod select;

use queues::{Act, Entry, Walk};

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

fn dur(min: Duration) -> ParamKind {
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
        ParamSpec::new(
            "quantum",
            dur(Duration::from_nanos(1)),
            "round-robin slice within an activity and for free time",
        )
        .with_default(Value::Duration(DEFAULT_QUANTUM)),
        ParamSpec::new(
            "horizon",
            dur(Duration::from_nanos(1)),
            "constraint windows are judged up to now + horizon",
        )
        .with_default(Value::Duration(Duration::from_secs(1))),
        ParamSpec::new(
            "threshold",
            dur(Duration::ZERO),
            "§4.6 rule 1: with less than this left in a node, select the next node",
        )
        .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "placement",
            ParamKind::Str,
            "pins activities' reservations to graph nodes, e.g. \"B@0.0 A@1.0 C@1:2.1\" \
             ([VP:]DEPTH.NODE, VP 0 unless given, another VP only when partitioned; \
             use with a fixed base_period)",
        )
        .with_default(Value::Str(String::new())),
        ParamSpec::new(
            "multiprocessor",
            ParamKind::Str,
            "\"one\": the first VP follows the graph, the others round robin; \
             \"partitioned\": a graph per VP, each activity placed on one when it first \
             reserves and run there only (\"global\" is refused: no published test)",
        )
        .with_default(Value::Str("one".into())),
        ParamSpec::new(
            "fit",
            ParamKind::Str,
            "partitioned placement: \"first\" (lowest VP whose graph grants it) or \
             \"worst\" (the VP left with the largest free share, ties to the lowest)",
        )
        .with_default(Value::Str("first".into())),
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
    vec![ParamSpec::new(
        "activity",
        ParamKind::Str,
        "the activity whose reservation the thread shares (empty: its own)",
    )
    .with_default(Value::Str(String::new()))]
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
    let fit = super::place::parse_fit(params.str("fit"))?;
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

/// An activity: an index into the policy's table.
pub type Activity = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Waiting,
    Running(ParentVp),
}

#[derive(Clone, Debug)]
struct Child {
    state: State,
    /// The activity it was attached with: its reservation, its constraints.
    activity: Activity,
    /// The activity it is scheduled in: `activity`, or while it serves an
    /// RPC the (outermost) caller's (§4.2).
    sched: Activity,
    /// Round-robin order: the smallest waiting turn goes first.
    turn: u64,
    /// Start of its current run segment (or its last charge).
    since: Instant,
    /// Part of the current segment already counted by `end_constraint`.
    flushed: Duration,
    /// Its name in the inheritance graph (child ids are reused, serials not).
    serial: u64,
    /// Mutexes it holds (§4.2).
    holds: BTreeSet<MutexKey>,
    /// RPC ports it serves.
    ports: BTreeSet<i64>,
    /// Where the selection queues hold it (see `queues.rs`).
    entry: Option<Entry>,
}

/// A refused `begin_constraint` still pending (§4.6 rule 3 (1)).
#[derive(Clone, Copy, Debug)]
struct Denied {
    id: ConstraintId,
    deadline: Instant,
    taken: Duration,
}

/// An entry of the second-chance queue (§4.5).
#[derive(Clone, Copy, Debug)]
struct SecondChance {
    /// Reserved time it failed to run by blocking, not made up yet.
    lost: Duration,
    /// The start of its next node: the entry is void from then on.
    expires: Instant,
    /// When it was queued (the queue's order).
    since: Instant,
}

/// Why a child runs, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    Constraint(ConstraintId),
    Activity,
    SecondChance(Activity),
    Free,
}

impl Tier {
    fn rank(self) -> u8 {
        match self {
            Tier::Constraint(_) => 0,
            Tier::Activity => 1,
            Tier::SecondChance(_) => 2,
            Tier::Free => 3,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    child: ChildId,
    tier: Tier,
    /// Start of the graph interval it was chosen in.
    interval: Instant,
    /// When it was granted.
    granted: Instant,
    /// Its round-robin turn and its activity's before this grant.
    turns_before: (u64, Option<u64>),
}

/// CPU time of an open constraint.
#[derive(Clone, Copy, Debug, Default)]
struct Served {
    /// Since its `begin_constraint` (the `taken` of `end_constraint`).
    taken: Duration,
    /// Since it was last admitted (compared with its guaranteed time).
    since_admitted: Duration,
}

/// What each graph VP keeps: the graph inside its constraint book, the walk
/// of its current base period and the constraint time used in its current
/// interval. One in mode `one`, one per VP in mode `partitioned`.
struct Cpu {
    book: Constraints<Activity, ChildId>,
    /// The walk of the current and the next base period.
    walk: Option<Walk>,
    /// Constraint time used in the interval that starts at `.0`.
    used_in: (Instant, BTreeMap<ConstraintId, Duration>),
}

impl Cpu {
    fn new(graph: GraphParams, horizon: Duration) -> Self {
        Cpu {
            book: Constraints::new(Graph::new(graph), horizon),
            walk: None,
            used_in: (Instant::ZERO, BTreeMap::new()),
        }
    }
}

/// A round-robin lane of rule 5: activities that may run on any VP
/// (`None`: not placed) or only on VP `Some(v)` (placed, partitioned mode).
type Lane = Option<usize>;

/// The Rialto policy. See the module documentation.
pub struct Rialto {
    quantum: Duration,
    horizon: Duration,
    /// The graph parameters every graph is built with.
    gp: GraphParams,
    /// The graph VPs: `cpus[v]` is followed by `ParentVp(v)`.
    cpus: Vec<Cpu>,
    mode: Multiprocessor,
    fit: Fit,
    children: ChildMap<Child>,
    on_vp: Vec<Option<Slot>>,
    runnable: u32,
    seq: u64,
    names: BTreeMap<String, Activity>,
    /// Activities with at least one thread (the others are forgotten).
    acts: BTreeMap<Activity, Act>,
    /// Rule 5's round-robin queues: the activities with a waiting thread,
    /// by (turn, activity), per lane (no empty lane is kept).
    ready: BTreeMap<Lane, BTreeSet<(u64, Activity)>>,
    /// Runnable threads per lane (by the activity they are scheduled in),
    /// for the VPs partitioned mode asks for; no zero count is kept.
    lane_runnable: BTreeMap<Lane, u32>,
    next_activity: Activity,
    next_constraint: u64,
    served: BTreeMap<ConstraintId, Served>,
    /// §4.6 rule 1's minimum threshold.
    threshold: Duration,
    /// Pending denied constraints per thread, oldest first.
    denied: BTreeMap<ChildId, Vec<Denied>>,
    /// The second-chance queue (§4.5).
    second: BTreeMap<Activity, SecondChance>,
    /// Mutexes, RPCs and who waits for whom (§4.2), by thread serial.
    inherit: Inheritance<u64, MutexKey, ()>,
    by_serial: BTreeMap<u64, ChildId>,
    next_serial: u64,
    /// RPC port -> the serial of its server thread.
    ports: BTreeMap<i64, u64>,
    /// Graph nodes pinned for named activities (the `placement` parameter).
    pins: BTreeMap<String, VpPin>,
}

impl Rialto {
    /// An empty instance.
    pub fn new(graph: GraphParams, quantum: Duration, horizon: Duration) -> Self {
        Rialto {
            quantum,
            horizon,
            gp: graph,
            cpus: vec![Cpu::new(graph, horizon)],
            mode: Multiprocessor::One,
            fit: Fit::First,
            children: ChildMap::new(),
            on_vp: Vec::new(),
            runnable: 0,
            seq: 0,
            names: BTreeMap::new(),
            acts: BTreeMap::new(),
            ready: BTreeMap::new(),
            lane_runnable: BTreeMap::new(),
            next_activity: 0,
            next_constraint: 0,
            served: BTreeMap::new(),
            threshold: Duration::ZERO,
            denied: BTreeMap::new(),
            second: BTreeMap::new(),
            inherit: Inheritance::new(),
            by_serial: BTreeMap::new(),
            next_serial: 0,
            ports: BTreeMap::new(),
            pins: BTreeMap::new(),
        }
    }

    /// Sets §4.6 rule 1's threshold.
    pub fn with_threshold(mut self, threshold: Duration) -> Self {
        self.threshold = threshold;
        self
    }

    /// The second-chance queue: activity -> reserved time still to make up.
    pub fn second_chance_queue(&self) -> Vec<(Activity, Duration)> {
        self.second.iter().map(|(&a, e)| (a, e.lost)).collect()
    }

    /// The graph the first VP follows.
    pub fn graph(&self) -> &Graph<Activity> {
        self.cpus[0].book.graph()
    }

    /// The constraint book of the first VP.
    pub fn constraints(&self) -> &Constraints<Activity, ChildId> {
        &self.cpus[0].book
    }

    /// The VP activity `a` is placed on (partitioned mode), if any.
    pub fn placed_on(&self, a: Activity) -> Option<usize> {
        self.acts.get(&a).and_then(|act| act.vp)
    }

    /// The graph VP holding `a`'s reservation and constraints: its VP when
    /// placed, else the first.
    fn home(&self, a: Activity) -> usize {
        self.placed_on(a).unwrap_or(0)
    }

    /// The constraint book of `child`'s own activity.
    fn book_of(&self, child: ChildId) -> &Constraints<Activity, ChildId> {
        let a = self.children.get(child).map_or(0, |c| c.activity);
        &self.cpus[self.home(a)].book
    }

    /// Whether `vp` follows a graph (all of them when partitioned).
    fn follows_graph(&self, vp: usize) -> bool {
        vp < self.cpus.len()
    }

    /// Partitioned mode: one graph per VP held, added as VPs appear (never
    /// removed: a placed activity keeps its graph).
    fn grow(&mut self, cx: &Cx) {
        if self.mode == Multiprocessor::Partitioned {
            while self.cpus.len() < cx.vp_count() as usize {
                self.cpus.push(Cpu::new(self.gp, self.horizon));
            }
        }
    }

    /// Asks the parent for the VPs with something to run. Mode `one`: as
    /// many as there are runnable children. Partitioned: each VP whose lane
    /// has a runnable thread, and for the runnable threads of activities
    /// without a VP as many of the other VPs, lowest first (they may run on
    /// any VP, so each gets a CPU of its own while there are VPs to spare);
    /// a requesting VP no longer wanted is released (a held one answers
    /// `Release` at its next decision if nothing may run there). `O(N)`.
    fn want_cpus(&self, cx: &mut Cx) {
        if self.mode == Multiprocessor::One {
            cx.want_cpus(self.runnable);
            return;
        }
        let mut spare = self.lane_runnable.get(&None).copied().unwrap_or(0);
        for v in 0..cx.vp_count() as usize {
            let vp = ParentVp(v as u32);
            let own = self.lane_runnable.get(&Some(v)).is_some_and(|&n| n > 0);
            let wanted = own || spare > 0;
            if !own && spare > 0 {
                spare -= 1;
            }
            match cx.vp_state(vp) {
                VpState::Requesting if !wanted => cx.release(vp),
                // At the root, a request also wakes a CPU the root declined.
                _ if wanted => cx.request(vp),
                _ => {}
            }
        }
    }

    /// Whether `child` may run on `vp`: the activity it is scheduled in is
    /// not placed, or placed there.
    fn may_run_on(&self, child: ChildId, vp: usize) -> bool {
        self.children
            .get(child)
            .is_some_and(|c| self.placed_on(c.sched).is_none_or(|v| v == vp))
    }

    /// The activity of `child`.
    pub fn activity_of(&self, child: ChildId) -> Option<Activity> {
        self.children.get(child).map(|c| c.activity)
    }

    /// The activity `child` is scheduled in: its own, or while it serves an
    /// RPC its caller's.
    pub fn scheduled_in(&self, child: ChildId) -> Option<Activity> {
        self.children.get(child).map(|c| c.sched)
    }

    /// The interval of the first VP's graph holding `now`.
    pub fn interval_at(&self, now: Instant) -> (Instant, Instant, Option<Activity>) {
        self.interval_on(0, now)
    }

    /// The interval of graph VP `v`'s graph holding `now`: `(start, end,
    /// activity)`. `O(log m)` for `m` intervals on a path when the walk
    /// kept for decisions holds `now`'s base period, a walk of the graph
    /// otherwise.
    pub fn interval_on(&self, v: usize, now: Instant) -> (Instant, Instant, Option<Activity>) {
        let Some(cpu) = self.cpus.get(v) else {
            return (Instant::ZERO, Instant::NEVER, None);
        };
        let Some(base) = cpu.book.graph().base_period().map(|b| b.0) else {
            return (Instant::ZERO, Instant::NEVER, None);
        };
        match &cpu.walk {
            Some(w) if w.covers(base, now) => w.at(now),
            _ => Walk::new(cpu.book.graph(), base, now.0 / base).at(now),
        }
    }

    /// What constraint `c`, which owns `assigned` of the interval starting
    /// at `start`, may still run there.
    fn available(
        &self,
        v: usize,
        c: ConstraintId,
        now: Instant,
        start: Instant,
        assigned: Duration,
    ) -> Duration {
        let cpu = &self.cpus[v];
        let Some(info) = cpu.book.get(c) else {
            return Duration::ZERO;
        };
        if info.start > now || cpu.book.current(info.thread) != Some(c) {
            return Duration::ZERO;
        }
        let served = self.served.get(&c).copied().unwrap_or_default();
        let used = if cpu.used_in.0 == start {
            cpu.used_in.1.get(&c).copied().unwrap_or_default()
        } else {
            Duration::ZERO
        };
        let share = assigned.saturating_sub(used);
        share.min(info.guaranteed.saturating_sub(served.since_admitted))
    }

    /// Re-decide each graph VP where a waiting child outranks what runs.
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        let now = cx.now();
        let mut walked = false;
        for v in 0..self.cpus.len() {
            let vp = ParentVp(v as u32);
            if !matches!(cx.vp_state(vp), VpState::Held(_)) {
                continue;
            }
            if !walked {
                self.prepare_walk(now);
                walked = true;
            }
            let Some(Some(slot)) = self.on_vp.get(v) else {
                continue;
            };
            let (start, _, _) = self.node(v, now);
            // A slot chosen in an earlier interval is re-decided by its horizon.
            if slot.interval != start {
                continue;
            }
            if self.waiting_outranks(v, now, slot.tier) {
                cx.reschedule(vp);
            }
        }
    }

    /// Whatever ran on `vp` stopped.
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        if let Some(slot) = self.on_vp.get_mut(vp.index()).and_then(Option::take) {
            // Preempted before it ran more than the switch into it (a
            // constraint's start came, say): it keeps its place in line,
            // or round robin could pass it over for ever.
            if now.saturating_since(slot.granted) <= self.gp.switch_cost {
                self.restore_turns(&slot);
            }
            if let Some(c) = self.children.get_mut(slot.child) {
                if c.state == State::Running(vp) {
                    c.state = State::Waiting;
                    self.reindex(slot.child);
                }
            }
        }
    }

    /// Puts the turns a grant took back as they were before it.
    fn restore_turns(&mut self, slot: &Slot) {
        if matches!(slot.tier, Tier::Constraint(_)) {
            return;
        }
        let Some(c) = self.children.get_mut(slot.child) else {
            return;
        };
        c.turn = slot.turns_before.0;
        let activity = c.sched;
        self.reindex(slot.child);
        if let (Tier::Free, Some(turn)) = (slot.tier, slot.turns_before.1) {
            self.set_turn(activity, turn);
        }
    }

    /// The child leaves the runnable set.
    fn forget_runnable(&mut self, child: ChildId) {
        let c = &mut self.children[child];
        if let State::Running(vp) = c.state {
            self.on_vp[vp.index()] = None;
        }
        if c.state != State::Idle {
            c.state = State::Idle;
            self.runnable -= 1;
            self.reindex(child);
        }
    }
}

fn activity_name(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::Str(s)) if !s.is_empty() => Some(format!("s:{s}")),
        Some(Value::Int(i)) => Some(format!("i:{i}")),
        _ => None,
    }
}

impl Scheduler for Rialto {
    fn policy(&self) -> &'static str {
        "rialto"
    }

    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        self.grow(cx);
        let name = activity_name(params.get("activity"));
        let activity = match name.as_ref().and_then(|n| self.names.get(n)) {
            Some(&a) => a,
            None => {
                let a = self.next_activity;
                self.next_activity += 1;
                if let Some(n) = &name {
                    self.names.insert(n.clone(), a);
                }
                self.acts.insert(
                    a,
                    Act {
                        name,
                        ..Act::default()
                    },
                );
                a
            }
        };
        self.acts.get_mut(&activity).expect("just made").members += 1;
        let serial = self.next_serial;
        self.next_serial += 1;
        self.by_serial.insert(serial, child);
        self.children.insert(
            child,
            Child {
                state: State::Idle,
                activity,
                sched: activity,
                turn: 0,
                since: Instant::ZERO,
                flushed: Duration::ZERO,
                serial,
                holds: BTreeSet::new(),
                ports: BTreeSet::new(),
                entry: None,
            },
        );
        Ok(())
    }

    /// A child leaves: its constraints and the RPCs it makes or serves end;
    /// the last thread of an activity takes the activity's reservation with
    /// it.
    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        let Some(c) = self.children.get(child) else {
            return;
        };
        let activity = c.activity;
        if c.state != State::Idle {
            self.forget_runnable(child);
            self.want_cpus(cx);
        }
        // Before its activity may be forgotten: a server may be scheduled in it.
        self.hang_up(cx, child);
        self.end_all(cx, child);
        self.denied.remove(&child);
        let c = self.children.remove(child).expect("registered");
        self.by_serial.remove(&c.serial);
        for m in c.holds {
            match m {
                MutexKey::Named(_) => {
                    self.unlock_as(c.serial, m);
                }
                // The platform still counts it the holder: the waiters now
                // wait for a thread outside this scheduler.
                MutexKey::Platform(_) => {
                    let _ = self.inherit.release_to(c.serial, m, None);
                }
            }
        }
        let act = self.acts.get_mut(&activity).expect("registered");
        act.members -= 1;
        if act.members == 0 {
            let act = self.acts.remove(&activity).expect("registered");
            debug_assert!(act.runnable == 0 && act.queued.is_none());
            if let Some(name) = act.name {
                self.names.remove(&name);
            }
            self.second.remove(&activity);
            let v = act.vp.unwrap_or(0);
            if self.cpus[v].book.graph().granted(activity).is_some() {
                let mut graph = self.cpus[v].book.graph().clone();
                graph.release(activity);
                let _ = self.set_graph(cx, v, graph, false);
            }
        }
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        c.state = State::Waiting;
        self.seq += 1;
        c.turn = self.seq;
        let a = c.sched;
        self.reindex(child);
        self.runnable += 1;
        self.want_cpus(cx);
        // Woken inside the node it blocked in: what is left of the node is
        // not lost after all.
        let now = cx.now();
        self.prepare_walk(now);
        let (_, end, act) = self.interval_on(self.home(a), now);
        if act == Some(a) {
            if let Some(e) = self.second.get_mut(&a) {
                e.lost = e.lost.saturating_sub(end - now);
                if e.lost.is_zero() {
                    self.second.remove(&a);
                }
            }
        }
        self.preempt_if_needed(cx);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state != State::Idle {
            self.forget_runnable(child);
            self.want_cpus(cx);
            let a = self.children[child].sched;
            self.note_blocked(cx, a);
            // A constrained thread blocking on a mutex or in a call hands its
            // rank to the holder or the server (§4.2), which may outrank
            // what runs.
            self.preempt_if_needed(cx);
        }
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.grow(cx);
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
        }
        self.stop(vp, now);
        self.prepare_walk(now);
        self.second
            .retain(|_, e| now < e.expires && !e.lost.is_zero());
        let graph_vp = self.follows_graph(vp.index());
        let pick = if graph_vp {
            self.pick_graph(vp.index(), now)
        } else {
            self.pick_free(vp.index(), now)
        };
        let Some(select::Pick {
            child,
            tier,
            until,
            node,
        }) = pick
        else {
            return Dispatch::Release;
        };
        let c = &mut self.children[child];
        c.state = State::Running(vp);
        c.since = now;
        c.flushed = Duration::ZERO;
        let activity = c.sched;
        let turns_before = (c.turn, self.acts.get(&activity).map(|a| a.turn));
        // A thread picked by round robin goes to the back of its activity's
        // line (assigned time does not cost it its place); an activity given
        // a turn of free time goes to the back of the activities' line.
        if !matches!(tier, Tier::Constraint(_)) {
            self.seq += 1;
            c.turn = self.seq;
        }
        self.reindex(child);
        if tier == Tier::Free {
            self.seq += 1;
            self.set_turn(activity, self.seq);
        }
        self.on_vp[vp.index()] = Some(Slot {
            child,
            tier,
            interval: node,
            granted: now,
            turns_before,
        });
        if !graph_vp {
            self.preempt_if_needed(cx);
        }
        Dispatch::Run { child, until }
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
        self.preempt_if_needed(cx);
    }

    /// Time goes to the thread's constraint in effect (for `taken` and the
    /// guaranteed time) and, on the graph VP, to its share of the interval.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        let fresh = ran.saturating_sub(c.flushed);
        c.flushed = Duration::ZERO;
        c.since = cx.now();
        let c = &self.children[child];
        if let Some(id) = self.book_of(child).current(child) {
            let s = self.served.entry(id).or_default();
            s.taken += fresh;
            s.since_admitted += fresh;
        }
        for d in self.denied.get_mut(&child).into_iter().flatten() {
            d.taken += fresh;
        }
        let State::Running(vp) = c.state else {
            return;
        };
        if let Some(Some(slot)) = self.on_vp.get(vp.index()) {
            match slot.tier {
                Tier::Constraint(id) => {
                    // Only graph VPs run constraints.
                    if let Some(cpu) = self.cpus.get_mut(vp.index()) {
                        if cpu.used_in.0 != slot.interval {
                            cpu.used_in = (slot.interval, BTreeMap::new());
                        }
                        *cpu.used_in.1.entry(id).or_default() += ran;
                    }
                }
                Tier::SecondChance(a) => {
                    if let Some(e) = self.second.get_mut(&a) {
                        e.lost = e.lost.saturating_sub(ran);
                        if e.lost.is_zero() {
                            self.second.remove(&a);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn timer(&mut self, cx: &mut Cx, _key: TimerKey) {
        self.preempt_if_needed(cx);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        self.grow(cx);
        let reply = self.request(cx, from, msg);
        // A placement or an RPC may move runnable threads between lanes.
        if self.mode == Multiprocessor::Partitioned {
            self.want_cpus(cx);
        }
        reply
    }

    fn sync(&mut self, cx: &mut Cx, event: &SyncEvent<ChildId>) {
        self.platform_sync(cx, event);
        if self.mode == Multiprocessor::Partitioned {
            self.want_cpus(cx);
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        let mut runnable = 0;
        let mut members: BTreeMap<Activity, u32> = BTreeMap::new();
        for (id, c) in self.children.iter() {
            *members.entry(c.activity).or_default() += 1;
            match c.state {
                State::Idle => {}
                State::Waiting => runnable += 1,
                State::Running(vp) => {
                    runnable += 1;
                    match self.on_vp.get(vp.index()).copied().flatten() {
                        Some(s) if s.child == id => {}
                        other => {
                            return Err(format!("{id} runs on {vp} but the slot holds {other:?}"))
                        }
                    }
                }
            }
        }
        if runnable != self.runnable {
            return Err(format!(
                "runnable count {} but {runnable} children are runnable",
                self.runnable
            ));
        }
        for (i, slot) in self.on_vp.iter().enumerate() {
            if let Some(s) = slot {
                let ok = self
                    .children
                    .get(s.child)
                    .is_some_and(|c| c.state == State::Running(ParentVp(i as u32)));
                if !ok {
                    return Err(format!(
                        "slot of vp{i} names {} which does not run there",
                        s.child
                    ));
                }
                if !self.follows_graph(i) && s.tier != Tier::Free {
                    return Err(format!("vp{i} follows no graph but runs {:?}", s.tier));
                }
            }
        }
        let counted: BTreeMap<Activity, u32> =
            self.acts.iter().map(|(&a, act)| (a, act.members)).collect();
        if members != counted {
            return Err(format!(
                "activity members {counted:?} do not match the children {members:?}"
            ));
        }
        if self.mode == Multiprocessor::One && self.cpus.len() != 1 {
            return Err(format!("{} graphs in mode one", self.cpus.len()));
        }
        for (v, cpu) in self.cpus.iter().enumerate() {
            for (a, _) in cpu.book.graph().grants() {
                match self.acts.get(&a) {
                    None => {
                        return Err(format!(
                            "activity {a} holds a reservation on vp{v} but has no thread"
                        ))
                    }
                    Some(act) if act.vp.unwrap_or(0) != v => {
                        return Err(format!(
                            "activity {a} holds a reservation on vp{v} but is placed on {:?}",
                            act.vp
                        ))
                    }
                    Some(_) => {}
                }
            }
            for info in cpu.book.open() {
                if self
                    .children
                    .get(info.thread)
                    .map(|c| self.home(c.activity))
                    != Some(v)
                {
                    return Err(format!(
                        "constraint {} is in vp{v}'s book but its thread's activity is not there",
                        info.id
                    ));
                }
            }
            cpu.book.graph().check_invariants()?;
            cpu.book.check_invariants()?;
        }
        for (&a, act) in &self.acts {
            match act.vp {
                Some(_) if self.mode == Multiprocessor::One => {
                    return Err(format!("activity {a} is placed in mode one"))
                }
                Some(v) if v >= self.cpus.len() => {
                    return Err(format!(
                        "activity {a} is placed on vp{v}, which has no graph"
                    ))
                }
                _ => {}
            }
        }
        for (name, a) in &self.names {
            if self.acts.get(a).and_then(|act| act.name.as_ref()) != Some(name) {
                return Err(format!("activity {name} ({a}) is named but has no thread"));
            }
        }
        if self.acts.values().filter(|act| act.name.is_some()).count() != self.names.len() {
            return Err("an activity's name is not indexed".into());
        }
        for info in self.cpus.iter().flat_map(|c| c.book.open()) {
            match self.children.get(info.thread) {
                Some(c) if c.activity == info.activity => {}
                _ => {
                    return Err(format!(
                        "constraint {} belongs to {} which is not attached with activity {}",
                        info.id, info.thread, info.activity
                    ))
                }
            }
            if !self.served.contains_key(&info.id) {
                return Err(format!("constraint {} has no accounting", info.id));
            }
        }
        for a in self.second.keys() {
            if !self.acts.contains_key(a) {
                return Err(format!("activity {a} is queued but has no thread"));
            }
        }
        for child in self.denied.keys() {
            if !self.children.contains(*child) {
                return Err(format!("{child} has denied constraints but left"));
            }
        }
        for (id, c) in self.children.iter() {
            if self.by_serial.get(&c.serial) != Some(&id) {
                return Err(format!("{id}'s serial {} is not indexed", c.serial));
            }
            for &m in &c.holds {
                if self.inherit.holder(m) != Some(c.serial) {
                    return Err(format!("{id} thinks it holds {m}"));
                }
            }
        }
        self.inherit.check()?;
        if self.by_serial.len() != self.children.iter().count() {
            return Err("serial index names threads that left".into());
        }
        self.check_calls()?;
        let open: usize = self.cpus.iter().map(|c| c.book.open().count()).sum();
        if self.served.len() != open {
            return Err("accounting kept for a closed constraint".into());
        }
        self.check_queues()
    }
}
