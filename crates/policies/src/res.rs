//! `res`: EDF-based basic, hard CPU reservations (the HLS paper's RES).
//!
//! **Source.** Regehr & Stankovic, "HLS: A Framework for Composing Soft
//! Real-Time Schedulers", §4.2 (the guarantees RESBH x, y and RESU r), §5.1
//! ("CPU Reservations": "The CPU reservation scheduler that was implemented
//! for HLS must receive the guarantee ALL or RESU, and provides basic, hard
//! reservations. It is capable of making use of a uniformly slower processor
//! because it has information about deadlines available to it at run time")
//! and §5.4 (a soft reservation is a `res` plus a `join`). Budgets are
//! enforced as in Abeni & Buttazzo's constant bandwidth server (CBS), on a
//! fixed grid; children that are themselves uniformly slower processors
//! are served as in PShED / BSS-I (a budget per announced deadline).
//!
//! **Children.** Each child attaches with one of:
//! - `amount`, `period` (durations, `0 < amount <= period`): a *basic, hard
//!   reservation* RESBH amount, period. Its windows are the grid
//!   `[o + k*period, o + (k+1)*period)`, `o` being when the reservation was
//!   made (admission or `reserve`); each window is a job with budget
//!   `amount` and deadline the window's end.
//! - `rate` (a decimal such as `"0.5"`, or `"1/3"`, in `(0, 1]`): a
//!   *uniformly slower processor* RESU rate. The child (a scheduler, or a
//!   thread) announces deadlines with message `deadline { at }`; for
//!   consecutive deadlines `d_n < d_{n+1}` it gets a job released at `d_n`
//!   with deadline `d_{n+1}` and budget `rate * (d_{n+1} - d_n)`.
//! - nothing: the default reservation, 1ms every 10ms.
//!
//! With `amount`/`period`, `overrun = true` makes the child an *overrun
//! partition* (§5.4, CPU service classes: "an extra CPU reservation that
//! is statistically multiplexed among unpredictable applications", given
//! to an overrun scheduler OVR "which schedules threads that have
//! exhausted their reservation budgets"). Two things change for it, both
//! because it is only ever asked for the CPU after some thread has spent
//! its own budget, i.e. late in a window: (1) when it wakes late it keeps
//! its window's amount as far as its own utilization plus its part of the
//! CPU no child reserved allow over the rest of the window (a plain child
//! gets only its own utilization of the rest, CBS's wake rule), and (2)
//! on an EDF tie it goes after the other children, so a thread's own
//! reservation is used before the shared partition. With (1) the
//! bandwidths still add up to at most one CPU, so admission stays the sum
//! of utilizations and every reservation is kept; global mode refuses
//! partitions (the spare CPU there is not one CPU's).
//!
//! **Algorithm.** Each child has at most one current job (release,
//! deadline, budget). Children with budget left run earliest deadline
//! first (a `BTreeSet` by deadline; ties go to the lower child id, i.e.
//! the child that joined first), each until its budget is spent or its
//! deadline comes (the horizon), when its next job begins. A child whose
//! budget is spent is *throttled*: it waits for its next job even if the
//! CPU is idle (hard); the CPU is answered with `Release` when nobody has
//! budget, so that under a fixed-priority parent the CPU goes to a lower
//! sibling (the join-based soft reservation of §5.4 relies on that) and at
//! the root it idles. One timer follows the next job change of a waiting
//! child. A child that wakes in the middle of a job keeps at most its share
//! of the time left, `amount * (deadline - now) / period` (or
//! `rate * (deadline - now)`), as CBS does; that keeps every child's demand
//! in any interval below its utilization times the interval, which is what
//! EDF's guarantee needs.
//!
//! **Own rate.** Parameter `rate` (default `"1"`) is the speed of the
//! processor this instance runs on: under a parent that gives it RESU r,
//! set `rate = r`. Amounts are then in that slower processor's time
//! (§5.1: RESBH 10, 20 under RESU 0.5 is 25% of the CPU): a child that
//! runs `t` of real CPU time is charged `ceil(t / r)` of budget, and a
//! budget `b` lets it run `floor(b * r)`. With `rate` below 1 the instance
//! tells its parent its earliest pending deadline (`deadline { at }`
//! through `Cx::msg_parent`, on every VP, whenever it changes), which is
//! what a RESU parent (another `res`) serves it by.
//!
//! **Admission.** The sum of `amount / period` over the reservations and
//! of the `rate`s of RESU children stays at most 1, in exact integer
//! arithmetic (a sum whose exact fraction does not fit 128 bits is refused
//! too, saying so). A refusal names the request and the total it would make.
//!
//! **Messages.** `reserve { amount, period }` from a child (or the
//! operator, naming `child`): replaces the sender's reservation after the
//! same admission test, starting a new grid now; answers `amount`,
//! `period`, `utilization`, `reserved` (the new total). `release` (or the
//! operator with `child`) drops it: the child runs no more until it
//! reserves again. `deadline { at, relative }` from a RESU child: its next
//! deadline, as time since 0 (or from now with `relative = true`); answers
//! the budget of its current job. `info { child }`: a child's job.
//!
//! **Guarantees.** Holding one CPU throughout (the root, or the top of a
//! fixed-priority parent: ALL), a reservation's child that is runnable
//! through a window receives `amount` (in this processor's time) in it;
//! every child receives at most `amount` in every window of its grid (hard),
//! runnable or not. A RESU child runnable from `d_n` to `d_{n+1}` receives
//! `rate * (d_{n+1} - d_n)` in between. Under a RESU r parent that serves
//! the announced deadlines, the same holds in the slower processor's time.
//! Without a tick these are exact to the nanosecond.
//!
//! **Several VPs** (parameter `multiprocessor`, which needs `rate = 1`):
//! - `"one"` (default): global EDF, admission still one CPU's worth
//!   (safe: each child runs on one CPU at a time; what the other VPs bring
//!   is extra, not promised).
//! - `"partitioned"`: one uniprocessor `res` per VP, each child placed on
//!   one VP by `fit` (`"first"`: the lowest-index VP whose utilizations stay
//!   at most 1 with it; `"worst"`: the least loaded after it, ties to the
//!   lowest index), re-placed by a `reserve`, and running only there
//!   ([`partitioned`]). Holding ALL on every VP, each child gets its RESBH
//!   (or RESU) as on one CPU. No migration: nothing is proven for it.
//! - `"global"`: global EDF (the m earliest deadlines with budget run, m the
//!   VPs held), admitted by the Goossens-Funk-Baruah bound (Real-Time
//!   Systems 25(2-3), 2003): a set with `Σu <= m - (m-1) u_max` meets every
//!   deadline under global EDF on m identical processors (`u = C/min(D, T)`
//!   in the density form; here `amount/period` or a RESU `rate`). Each
//!   window of a child's server is a job due at the window's end with at
//!   most `u` times its length (a late wake-up gets only its share of the
//!   rest), so, holding ALL on every VP, each child gets its RESBH.
//!
//! **Limits.** With a platform tick a run may pass its budget by up to a
//! tick; the overrun is taken from the child's next jobs (so a window may
//! hold `amount + tick`, and the average stays right). A child that blocks and wakes within a
//! window gets only the share of the rest of it. A new `reserve` starts a
//! new grid: in the window it was made the child may get the old budget's
//! use plus the new one. Context-switch overhead is not charged to a
//! budget. Decisions, wake-ups and timer events cost O(log n) (plus O(vps)
//! when a preemption is considered); admission is O(1), `check_invariants`
//! O(n).

use crate::params;
use crate::partition::Mode;
use hsched_core::{
    Duration, ParamKind, ParamSpec, Params, PolicyInfo, Scheduler, Share, ShareRange, Value,
};

mod admission;
mod job;
mod messages;
pub mod partitioned;
mod rate;
mod scheduler;
pub use admission::{DEFAULT_AMOUNT, DEFAULT_PERIOD};
pub use rate::Util;
pub use scheduler::Res;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "res",
    summary: "EDF basic hard CPU reservations (amount per period) and uniformly slower processors",
    doc: "The HLS paper's reservation scheduler (Regehr & Stankovic, sections 4.2 and \
          5.1): a child attaches with `amount` and `period` and gets RESBH amount, period: \
          `amount` in every window of a grid, never more (when its budget is spent it \
          waits for the next window even if the CPU is idle, and the CPU is released to \
          the parent). A child may instead attach with `rate` (e.g. \"0.5\") and announce \
          deadlines with message `deadline { at }`: between consecutive deadlines it gets \
          rate times their distance (RESU). Admission: the utilizations sum to at most 1, \
          exactly. Own `rate`: the speed of the processor it runs on (under a RESU r \
          parent), in whose time amounts are counted; below 1 it announces its own \
          earliest deadline to its parent. Messages: reserve, release, deadline, info. \
          A soft reservation is a `res` plus a `join` (section 5.4). On several VPs, \
          `multiprocessor`: \"one\" (default; admits one CPU's worth), \"partitioned\" \
          (each child placed on one VP by `fit` = \"first\" or \"worst\", admitted there, \
          never migrated: RESBH per VP when each VP gets ALL) or \"global\" (global EDF \
          admitted by the Goossens-Funk-Baruah bound sum u <= m - (m-1) u_max).",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

/// `rate` parameters: a RESU rate, any exact fraction in `(0, 1]`.
const RATE: ParamKind = ParamKind::Rate {
    range: ShareRange::Rate,
    ppm: false,
};

fn params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "rate",
            RATE,
            "speed of the processor this runs on (its RESU rate), a decimal in (0, 1] or p/q",
        )
        .with_default(Value::Str("1".into())),
        params::multiprocessor("on several VPs: \"one\" (admit one CPU's worth), \"partitioned\" (each child on one VP, admitted there) or \"global\" (global EDF, Goossens-Funk-Baruah test)"),
        params::fit("partitioned placement: \"first\" (lowest VP that admits the child) or \"worst\" (VP with the most spare utilization after it)"),
    ]
}

fn child_params() -> Vec<ParamSpec> {
    let any = ParamKind::Duration {
        min: Duration::ZERO,
    };
    vec![
        ParamSpec::new("amount", any, "reserved time per period (0: not given)")
            .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new("period", any, "the reservation's period (0: not given)")
            .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new(
            "rate",
            RATE,
            "instead of amount/period: a uniformly slower processor of this rate (RESU); empty: not given",
        )
        .with_default(Value::Str(String::new())),
        ParamSpec::new(
            "overrun",
            ParamKind::Bool,
            "an overrun partition (HLS 5.4): when it wakes late, keeps its window's amount as far as its utilization plus the unreserved CPU allow, and goes after the other children on an EDF tie",
        )
        .with_default(Value::Bool(false)),
    ]
}

/// The modes `res` supports (`multiprocessor`).
pub const MODES: &[&str] = &["one", "partitioned", "global"];

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let rate =
        Share::parse(params.str("rate"), ShareRange::Rate).map_err(|e| format!("`rate`: {e}"))?;
    let mode = Mode::parse(
        "res",
        params.str("multiprocessor"),
        params.str("fit"),
        MODES,
        "",
    )?;
    if mode != Mode::One && !rate.is_one() {
        return Err(format!(
            "res: `multiprocessor` = {:?} needs a whole CPU per VP (ALL), but `rate` = {rate}: a uniformly slower processor is supported with \"one\" only",
            params.str("multiprocessor")
        ));
    }
    Ok(match mode {
        Mode::One => Box::new(Res::new(rate)),
        Mode::Global => Box::new(Res::new(rate).global()),
        Mode::Partitioned(fit) => Box::new(partitioned::ResParts::new(fit)),
    })
}
