//! `dbs`: the deadline-based scheduler of the BVT paper.
//!
//! **Source.** Duda & Cheriton, "Borrowed-Virtual-Time (BVT) scheduling",
//! SOSP '99, §5 ("Deadlines"): "a thread requests a reservation in the form
//! (s, t, d), requesting t units of CPU between times s and d. The
//! scheduler accepts the request if and only if it is feasible to satisfy
//! it and all previous requests accepted at that point. It then runs the
//! accepted reservations, earliest-deadline-first, distributing any
//! leftover cycles round-robin to threads without reservations."
//!
//! **Message `reserve`.** Sent by a child (a thread attached here) for
//! itself; arguments (durations; an integer is nanoseconds):
//! - `start`: `s`, as time since 0 (an absolute instant; default 0, i.e. now);
//! - `amount`: `t`, the CPU time wanted;
//! - `deadline`: `d`, as time since 0;
//! - `relative` (bool, default false): `start` and `deadline` count from
//!   the moment the message arrives instead of from time 0.
//!
//! Answered at once: `Ok { id, start, amount, deadline }` (the id and the
//! absolute window), or `Err` naming why (a window that is empty or over,
//! or the interval `[a, b]` whose reserved demand would exceed its length).
//! An `amount` of zero is accepted and needs nothing. **Message `cancel`**
//! (optional argument `id`) drops the sender's reservations (or that one):
//! `Ok { dropped }`.
//!
//! **Admission.** A request is accepted iff the reservations in force (not
//! past their deadline, amount not fully served) together with it pass the
//! EDF demand-bound test of one CPU: for every release `a` and deadline
//! `b`, the remaining amounts of the reservations with release `>= a` and
//! deadline `<= b` sum to at most `b - a` (releases of started windows
//! count from now; the time the running child has used since its last
//! charge is counted as served). The test is exact for EDF on one CPU; it
//! counts amounts only (not overruns, below). Cost: O(n²) in the
//! reservations in force, at admission only.
//!
//! **Algorithm.** A reservation is *active* from its start to its deadline,
//! where it ends, served or not. A CPU serves three tiers, each preempting
//! the ones after it:
//! 1. *reserved*: children with an active reservation that has an amount
//!    left, earliest deadline first (a child with several by its
//!    earliest), each until that amount is served (horizon
//!    `min(now + left, deadline)`) or the deadline passes;
//! 2. *overrun* (parameter `overrun`, default true): children with an
//!    active reservation already served, earliest deadline first, until the
//!    deadline: only in time no reserved amount needs right now;
//! 3. *leftover*: the other runnable children, round-robin with `quantum`
//!    (default 10ms; one preempted mid-slice keeps its turn at the head).
//!
//! With `steal` (default false; needs `overrun`), slack stealing: when an
//! amount heads the queue and an overrun waits, the earliest-deadline
//! overrun runs first, on the *slack* of the reservations in force,
//! `min over their deadlines b of (b - now - the amounts left due by b)`
//! (exact for EDF on one CPU; [`Dbs::slack`]), until its deadline or the
//! slack is spent, without being preempted by the amounts. A newly
//! admitted reservation (which may need that time) ends every steal at
//! once; the CPU is then decided again.
//!
//! A child that becomes eligible for a better tier or an earlier deadline
//! (a window starts, it wakes) preempts the worst running child. One timer
//! follows the next window start or deadline.
//!
//! **Why `overrun`.** §5 only says leftover cycles go "round-robin to
//! threads without reservations". Read literally, a thread whose amount is
//! served but which is not done (it predicted too little) gets just its
//! round-robin turns, shared with the batch thread, until its deadline:
//! `overrun = false`, exactly. But in §5.3 (Figs. 6-8) DBS absorbs
//! mixed-sign prediction errors of several percent, BVT overtaking it only
//! at 7-15% error: that suggests an under-predicting thread runs on, EDF,
//! in time no reservation needs, ahead of `cont` (which "receives only
//! unreserved quanta"). That is the default; no reservation loses by it.
//!
//! **Why `steal`.** Measured on §5's workload (`hsched repro
//! bvt-5-deadlines`): with overruns after every reserved amount, a job one
//! millisecond short waits for the other randres's whole reservation and
//! misses, and DBS falls below BVT at about 1% best-guess error under
//! medium contention, where the paper has 7.4-13.3%. Running the overrun on
//! the reservations' slack instead puts the crossings at the paper's
//! error levels (high, medium and low). The paper's DBS "only runs a task
//! if the task can make its deadline"; it does not say more, so `steal` is
//! an option, set in the §5 scenarios.
//!
//! **Guarantees.** Work conserving. If this scheduler holds a CPU at every
//! instant (e.g. it is the root), every accepted reservation of a child
//! that stays runnable through its window receives its amount by its
//! deadline (DBS's guarantee; EDF is optimal on one CPU), with `overrun` on
//! or off: overruns rank below every amount left, as the leftover does.
//! With several VPs the admission test still counts one CPU, and the
//! guarantee still holds: reserved work of deadline `<= D` is served at
//! rate at least 1 whenever some is left (the earliest-deadline reserved
//! child always runs), so it is never behind the one-CPU EDF schedule,
//! which meets `D`. Extra CPUs serve reservations sooner and run the rest.
//!
//! **Several VPs** (parameter `multiprocessor`): `"one"` (default) is the
//! above, admitting one CPU's worth. `"partitioned"`: one uniprocessor
//! `dbs` per VP ([`partitioned`]); a thread is placed on one VP by `fit`
//! (`"first"`: the lowest-index VP whose demand-bound test passes with its
//! window; `"worst"`: the one whose peak demand/interval after it is lowest)
//! when it asks for a reservation holding none, and runs only there; each
//! VP holding ALL meets its reservations as one CPU does. `"global"` is
//! refused: the reservations are one-off windows, the Goossens-Funk-Baruah
//! bound is proven for periodic tasks, and no published global-EDF test for
//! such job sets is implemented.
//!
//! **Limits.** Admission counts a single CPU's capacity (conservative with
//! several VPs) and trusts the parent to provide it: under a parent that
//! withholds the CPU, reservations can miss. A reservation's amount is
//! charged time, so context-switch overhead is taken from it. With a
//! platform tick, window starts, deadlines and horizons act at the next
//! tick: up to a tick late. Nothing is carried over a deadline. With
//! `overrun`, a served child that never blocks (a CPU hog that reserves)
//! keeps the overrun tier to its deadline, starving the round robin that
//! long. Without `steal`, an overrun waits for every amount left, even one
//! with slack to spare. Slack counts one CPU. A steal is decided when a CPU
//! is granted: slack that grows while an amount runs (a reservation
//! dropped) is used at the next decision. Decisions, wake-ups and timers
//! cost O(log n) (plus O(vps) when a preemption is considered; with
//! `steal`, a decision that may steal sorts the reservations in force to
//! find their slack, O(n log n)).

use crate::params;
use crate::partition::Mode;
use hsched_core::{ParamKind, ParamSpec, Params, PolicyInfo, Scheduler, Value};

mod admission;
mod messages;
pub mod partitioned;
mod scheduler;

pub use scheduler::{Dbs, DEFAULT_QUANTUM};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "dbs",
    summary: "deadline-based reservations (s, t, d) run EDF, then overruns EDF, then round-robin",
    doc: "The BVT paper's deadline-based scheduler (Duda & Cheriton, section 5): a \
          thread asks for `t` of CPU between `s` and `d` with message `reserve { start, \
          amount, deadline }` (times since 0; `relative = true` for times from now); it is \
          accepted iff all reservations in force stay EDF-feasible on one CPU, else \
          refused naming the overloaded interval. Active reservations run earliest \
          deadline first until served or past their deadline; then (`overrun`, default \
          true) served ones whose thread goes on, EDF until their deadline (with `steal`, \
          ahead of the amounts while every reservation can still be met: slack \
          stealing); leftover time \
          goes round-robin (`quantum`). `cancel` drops the sender's reservations. Holding \
          one CPU throughout, every accepted reservation of a runnable thread is met. On \
          several VPs, `multiprocessor`: \"one\" (default; one CPU's worth) or \
          \"partitioned\" (a thread placed on one VP by `fit` = \"first\" or \"worst\" at \
          its first reservation, admitted and run there only); \"global\" is refused: no \
          published test for one-off windows.",
    params,
    child_params: Vec::new,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

fn params() -> Vec<ParamSpec> {
    vec![
        params::positive_duration("quantum", DEFAULT_QUANTUM, "round-robin slice of the leftover time"),
        ParamSpec::new(
            "overrun",
            ParamKind::Bool,
            "a served reservation's thread runs on, EDF, to its deadline, before the round robin",
        )
        .with_default(Value::Bool(true)),
        ParamSpec::new(
            "steal",
            ParamKind::Bool,
            "slack stealing: an overrun runs ahead of reserved amounts while every reservation in force can still be met (needs `overrun`)",
        )
        .with_default(Value::Bool(false)),
        params::multiprocessor("on several VPs: \"one\" (admit one CPU's worth) or \"partitioned\" (each reserving child on one VP, admitted there); \"global\" is refused: no published test for one-off windows"),
        params::fit("partitioned placement of a reservation: \"first\" (lowest VP that admits it) or \"worst\" (VP with the lowest peak load after it)"),
    ]
}

/// The modes `dbs` supports (`multiprocessor`).
pub const MODES: &[&str] = &["one", "partitioned"];

/// Why `dbs` has no global mode.
pub const NO_GLOBAL: &str = "dbs's reservations (s, t, d) are one-off jobs with arbitrary windows; the Goossens-Funk-Baruah bound is proven for periodic tasks, and no published global-EDF test for such job sets is implemented";

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let mode = Mode::parse(
        "dbs",
        params.str("multiprocessor"),
        params.str("fit"),
        MODES,
        NO_GLOBAL,
    )?;
    let (quantum, overrun) = (params.duration("quantum"), params.bool("overrun"));
    let steal = params.bool("steal");
    if steal && !overrun {
        return Err("`steal = true` needs `overrun = true` (slack stealing runs overruns)".into());
    }
    let one = Dbs::new(quantum)?.with_overrun(overrun).with_steal(steal);
    Ok(match mode {
        Mode::Partitioned(fit) => Box::new(partitioned::DbsParts::new(fit, one)),
        _ => Box::new(one),
    })
}
