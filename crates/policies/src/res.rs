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

use crate::partition::Mode;
use crate::preempt::{Better, RunningSlots};
use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Reply, Scheduler, Sender, Share, ShareRange, TimerKey, Value,
};
use std::collections::BTreeSet;

mod messages;
pub mod partitioned;
mod rate;
pub use rate::Util;

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

/// The reservation of a child that names none.
pub const DEFAULT_AMOUNT: Duration = Duration::from_millis(1);
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(10);

/// The one timer: the next job change of a waiting child.
const EVENT_TIMER: TimerKey = 0;

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
        ParamSpec::new(
            "multiprocessor",
            ParamKind::Str,
            "on several VPs: \"one\" (admit one CPU's worth), \"partitioned\" (each child on one VP, admitted there) or \"global\" (global EDF, Goossens-Funk-Baruah test)",
        )
        .with_default(Value::Str("one".into())),
        ParamSpec::new(
            "fit",
            ParamKind::Str,
            "partitioned placement: \"first\" (lowest VP that admits the child) or \"worst\" (VP with the most spare utilization after it)",
        )
        .with_default(Value::Str("first".into())),
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

// ----- the scheduler ----------------------------------------------------------

/// What a child holds.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// RESBH amount, period on the grid `origin + k * period`.
    Reserved {
        amount: Duration,
        period: Duration,
        origin: Instant,
    },
    /// RESU rate; the deadlines it announced beyond its current job's.
    Usp {
        rate: Share,
        upcoming: BTreeSet<Instant>,
    },
    /// Nothing (after `release`): never runs.
    Nothing,
}

impl Kind {
    fn util(&self) -> Util {
        match self {
            Kind::Reserved { amount, period, .. } => Util::of(*amount, *period),
            Kind::Usp { rate, .. } => Util::of_share(*rate),
            Kind::Nothing => Util::ZERO,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Does not want a CPU.
    Idle,
    /// Runnable with budget: in `ready` under its deadline.
    Ready,
    /// Runnable, budget spent (or no job): waits for its next job.
    Throttled,
    Running(ParentVp),
}

#[derive(Clone, Debug)]
struct Child {
    kind: Kind,
    /// The current job: budget (this processor's time) usable in
    /// `[release, deadline)`. `deadline` is `NEVER` when there is no job.
    release: Instant,
    deadline: Instant,
    budget: Duration,
    /// Charged beyond a budget (with a tick), taken from the next jobs.
    debt: Duration,
    state: State,
    /// Its entry in `events`, if any.
    event: Option<Instant>,
    /// An overrun partition (`overrun = true`): keeps its budget on a late
    /// wake-up, and goes after the others on an EDF tie.
    partition: bool,
}

impl Child {
    fn new(kind: Kind) -> Child {
        Child {
            kind,
            release: Instant::ZERO,
            deadline: Instant::ZERO,
            budget: Duration::ZERO,
            debt: Duration::ZERO,
            state: State::Idle,
            event: None,
            partition: false,
        }
    }

    /// Its place in EDF order: by deadline, and on a tie the reservations
    /// before an overrun partition (the child id breaks what is left).
    fn rank(&self) -> Rank {
        (self.deadline, self.partition)
    }

    /// The most a job `[release, deadline)` may hold.
    fn full_budget(&self) -> Duration {
        match &self.kind {
            Kind::Reserved { amount, .. } => *amount,
            Kind::Usp { rate, .. } if !self.deadline.is_never() => {
                rate.of(self.deadline.saturating_since(self.release))
            }
            _ => Duration::ZERO,
        }
    }

    /// The share of `[now, deadline)` this child may still use: CBS's
    /// bound on a job that (re)starts late.
    fn share_of_rest(&self, now: Instant) -> Duration {
        let rest = self.deadline.saturating_since(now);
        match &self.kind {
            Kind::Reserved { amount, period, .. } => {
                let v = u128::from(amount.as_nanos()) * u128::from(rest.as_nanos())
                    / u128::from(period.as_nanos().max(1));
                Duration(v as u64)
            }
            Kind::Usp { rate, .. } if !self.deadline.is_never() => rate.of(rest),
            _ => Duration::ZERO,
        }
    }

    /// [`Child::share_of_rest`] for an overrun partition: its own
    /// utilization plus `spare` (its part of what no child reserved) of
    /// the rest of its window. The whole amount when it wakes early enough;
    /// never more than the bandwidths, its own and the spare, add up to,
    /// so with the others' it stays within one CPU and EDF keeps every
    /// reservation (as CBS keeps them).
    fn partition_share_of_rest(&self, now: Instant, spare: Util) -> Duration {
        let rest = u128::from(self.deadline.saturating_since(now).as_nanos());
        self.kind
            .util()
            .checked_add(spare)
            .and_then(|bandwidth| bandwidth.checked_mul_int(rest))
            .map_or_else(
                || self.share_of_rest(now),
                |d| Duration(d.floor().min(u64::MAX as u128) as u64),
            )
    }

    /// A new job of `full` budget, less what is owed.
    fn start_job(&mut self, release: Instant, deadline: Instant, full: Duration) {
        let paid = self.debt.min(full);
        self.debt -= paid;
        self.release = release;
        self.deadline = deadline;
        self.budget = full - paid;
    }

    /// Moves to the job that contains `now` (none for a RESU child past its
    /// last deadline). Debt is forgiven one job's budget per job skipped.
    fn advance(&mut self, now: Instant) {
        if now < self.deadline && !self.deadline.is_never() {
            return;
        }
        match &mut self.kind {
            Kind::Reserved {
                amount,
                period,
                origin,
            } => {
                let (amount, p) = (*amount, period.as_nanos().max(1));
                let k = now.saturating_since(*origin).as_nanos() / p;
                let release = origin.saturating_add(Duration(k.saturating_mul(p)));
                if self.deadline <= *origin || self.deadline.is_never() {
                    self.debt = Duration::ZERO;
                } else {
                    let skipped = release.saturating_since(self.deadline).as_nanos() / p;
                    let forgiven = amount.as_nanos().saturating_mul(skipped);
                    self.debt = self.debt.saturating_sub(Duration(forgiven));
                }
                self.start_job(release, release.saturating_add(Duration(p)), amount);
            }
            Kind::Usp { rate, upcoming } => {
                let rate = *rate;
                if self.deadline.is_never() {
                    return; // no job until a deadline is announced
                }
                let mut release = self.deadline;
                while let Some(&next) = upcoming.first() {
                    if next > now {
                        break;
                    }
                    upcoming.pop_first();
                    release = next;
                }
                match upcoming.pop_first() {
                    Some(next) => self.start_job(release, next, rate.of(next - release)),
                    None => {
                        self.release = release;
                        self.deadline = Instant::NEVER;
                        self.budget = Duration::ZERO;
                        self.debt = Duration::ZERO;
                    }
                }
            }
            Kind::Nothing => {
                self.deadline = Instant::NEVER;
                self.budget = Duration::ZERO;
            }
        }
    }
}

/// EDF rank: a job's deadline, then whether it is an overrun partition.
type Rank = (Instant, bool);

/// The reservation scheduler. See the module documentation.
#[derive(Clone, Debug)]
pub struct Res {
    /// The speed of the processor this instance runs on.
    rate: Share,
    children: ChildMap<Child>,
    /// Sum of the children's utilizations.
    reserved: Util,
    /// How many children are overrun partitions (they share the
    /// unreserved CPU when they wake late).
    partitions: usize,
    /// Ready children by (rank, id): EDF order.
    ready: BTreeSet<(Rank, ChildId)>,
    /// Waiting (ready or throttled) children by the time their job changes.
    events: BTreeSet<(Instant, ChildId)>,
    armed: Option<Instant>,
    /// What runs on each VP, ranked by its job's deadline; since when its
    /// run is not charged yet.
    running: RunningSlots<Rank, Instant>,
    /// The earliest deadline last told to the parent.
    announced: Option<Instant>,
    /// `multiprocessor = "global"`: admission by the Goossens-Funk-Baruah
    /// test on the VPs held, not by one CPU's worth.
    global: bool,
}

impl Res {
    /// A reservation scheduler running on a processor of speed `rate`.
    pub fn new(rate: Share) -> Self {
        Res {
            rate,
            children: ChildMap::new(),
            reserved: Util::ZERO,
            partitions: 0,
            ready: BTreeSet::new(),
            events: BTreeSet::new(),
            armed: None,
            running: RunningSlots::new(Better::Lower),
            announced: None,
            global: false,
        }
    }

    /// Global EDF admitted by the Goossens-Funk-Baruah bound on the VPs it
    /// holds (see the module documentation).
    pub fn global(mut self) -> Self {
        self.global = true;
        self
    }

    /// The sum of the admitted utilizations.
    pub fn reserved(&self) -> Util {
        self.reserved
    }

    /// `child`'s current job: (release, deadline, budget left), as of the
    /// last event (a running child's budget is charged when its segment ends).
    pub fn job(&self, child: ChildId) -> Option<(Instant, Instant, Duration)> {
        let c = self.children.get(child)?;
        Some((c.release, c.deadline, c.budget))
    }

    /// Whether this instance tells its parent its deadlines (`rate` < 1).
    pub fn announces(&self) -> bool {
        !self.rate.is_one()
    }

    /// Each overrun partition's part of the CPU no child has reserved.
    fn spare_per_partition(&self) -> Util {
        Util::ONE
            .checked_sub(self.reserved)
            .map_or(Util::ZERO, |spare| {
                spare.div_int(self.partitions.max(1) as u128)
            })
    }

    /// Admits a child of utilization `new` (replacing `replacing`'s): the
    /// sum stays at most 1, or, in global mode on `vps` VPs, within the
    /// Goossens-Funk-Baruah bound `Σu <= m - (m-1) u_max`.
    fn admit(
        &self,
        replacing: Option<ChildId>,
        new: Util,
        what: &str,
        vps: u32,
    ) -> Result<Util, String> {
        let wide = || {
            format!(
                "{what}: the exact sum of the utilizations does not fit 128-bit arithmetic \
                 (choose periods with common factors)"
            )
        };
        let old = replacing.map_or(Util::ZERO, |c| self.children[c].kind.util());
        let others = self.reserved.checked_sub(old).unwrap_or(self.reserved);
        let total = others.checked_add(new).ok_or_else(wide)?;
        if !self.global {
            if !total.at_most_one() {
                return Err(format!(
                    "{what} needs {new}, but {others} is already reserved: the total {total} would exceed 1"
                ));
            }
            return Ok(total);
        }
        let m = u128::from(vps.max(1));
        let mut max = new;
        for (c, child) in self.children.iter() {
            let u = child.kind.util();
            if Some(c) != replacing && u.checked_cmp(max).ok_or_else(wide)?.is_gt() {
                max = u;
            }
        }
        // Σu + (m-1) u_max <= m, exactly.
        let lhs = max
            .checked_mul_int(m - 1)
            .and_then(|x| x.checked_add(total))
            .ok_or_else(wide)?;
        if !lhs.at_most_int(m).ok_or_else(wide)? {
            return Err(format!(
                "{what} needs {new}, but {others} is already reserved: global EDF on {m} VPs admits \
                 Σu <= m - (m-1) u_max (Goossens, Funk & Baruah 2003) with u_max = {max}, and the \
                 total {total} would exceed it"
            ));
        }
        Ok(total)
    }

    fn kind_from(params: &Params) -> Result<Kind, String> {
        let dur = |k: &str| match params.get(k) {
            Some(Value::Duration(d)) => *d,
            _ => Duration::ZERO,
        };
        let (amount, period) = (dur("amount"), dur("period"));
        let rate = match params.get("rate") {
            Some(Value::Str(s)) if !s.trim().is_empty() => Some(s.as_str()),
            _ => None,
        };
        match rate {
            Some(_) if !amount.is_zero() || !period.is_zero() => Err(
                "give either `amount` and `period` (a reservation) or `rate` (a uniformly slower processor), not both".into(),
            ),
            Some(r) => Ok(Kind::Usp {
                rate: Share::parse(r, ShareRange::Rate).map_err(|e| format!("`rate`: {e}"))?,
                upcoming: BTreeSet::new(),
            }),
            None => {
                let (amount, period) = if amount.is_zero() && period.is_zero() {
                    (DEFAULT_AMOUNT, DEFAULT_PERIOD)
                } else {
                    (amount, period)
                };
                Self::check_reservation(amount, period)?;
                Ok(Kind::Reserved {
                    amount,
                    period,
                    origin: Instant::ZERO,
                })
            }
        }
    }

    fn check_reservation(amount: Duration, period: Duration) -> Result<(), String> {
        if amount.is_zero() || period.is_zero() {
            return Err(format!(
                "a reservation needs `amount` and `period` longer than zero (got {amount} per {period})"
            ));
        }
        if amount > period {
            return Err(format!(
                "`amount` ({amount}) exceeds `period` ({period}): a child cannot use more than one CPU"
            ));
        }
        Ok(())
    }

    // ----- queues -------------------------------------------------------------

    fn set_event(&mut self, child: ChildId, at: Option<Instant>) {
        let c = &mut self.children[child];
        if let Some(old) = c.event.take() {
            self.events.remove(&(old, child));
        }
        if let Some(at) = at.filter(|t| !t.is_never()) {
            c.event = Some(at);
            self.events.insert((at, child));
        }
    }

    /// Takes a waiting child out of `ready` and `events`.
    fn unplace(&mut self, child: ChildId) {
        let c = &self.children[child];
        if c.state == State::Ready {
            self.ready.remove(&(c.rank(), child));
        }
        self.set_event(child, None);
    }

    /// Puts a runnable child that does not run where it belongs at `now`:
    /// ready if its job has budget it can use, else throttled until its
    /// job changes.
    fn place(&mut self, child: ChildId, now: Instant) {
        let rate = self.rate;
        let c = &mut self.children[child];
        c.advance(now);
        let usable = !c.deadline.is_never() && !rate.of(c.budget).is_zero();
        let (deadline, rank) = (c.deadline, c.rank());
        c.state = if usable {
            self.ready.insert((rank, child));
            State::Ready
        } else {
            State::Throttled
        };
        self.set_event(child, Some(deadline));
    }

    /// Whatever ran on `vp` stopped; a child still runnable waits again.
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        let Some(run) = self.running.clear(vp) else {
            return;
        };
        if self.children.get(run.child()).map(|c| c.state) == Some(State::Running(vp)) {
            self.place(run.child(), now);
        }
    }

    /// A child stopped wanting a CPU, or leaves.
    fn forget_runnable(&mut self, child: ChildId) {
        match self.children[child].state {
            State::Idle => return,
            State::Ready | State::Throttled => self.unplace(child),
            State::Running(vp) => {
                self.running.clear(vp);
            }
        }
        self.children[child].state = State::Idle;
    }

    /// Charges what `child` ran up to `now`, at most `ran`, and not what a
    /// message already charged of its current run.
    fn charge_running(&mut self, child: ChildId, ran: Duration, now: Instant) {
        let Some(c) = self.children.get_mut(child) else {
            return;
        };
        let mut ran = ran;
        if let State::Running(vp) = c.state {
            if let Some(since) = self.running.data_mut(vp) {
                ran = ran.min(now.saturating_since(*since));
                *since = now;
            }
        }
        let cost = self.rate.charge(ran);
        let paid = cost.min(c.budget);
        c.budget -= paid;
        c.debt = c.debt.saturating_add(cost - paid);
    }

    /// Changes a child's job outside `advance` (a message): a waiting child
    /// leaves its queues first and is placed again after; a running one
    /// has its CPU re-decided.
    fn modify(&mut self, cx: &mut Cx, child: ChildId, change: impl FnOnce(&mut Child)) {
        let state = self.children[child].state;
        if matches!(state, State::Ready | State::Throttled) {
            self.unplace(child);
        }
        if let State::Running(_) = state {
            // What it ran so far belongs to the job it ran in.
            self.charge_running(child, Duration::MAX, cx.now());
        }
        change(&mut self.children[child]);
        match state {
            State::Ready | State::Throttled => self.place(child, cx.now()),
            State::Running(vp) => {
                self.running.revoke(cx, vp);
                self.running.rerank(vp, self.children[child].rank());
            }
            State::Idle => {}
        }
    }

    /// While the earliest ready deadline beats the latest running one,
    /// preempt that one (idle held CPUs and re-decisions take waiting
    /// children first).
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        let waiting = self.ready.iter().map(|&(r, _)| r);
        self.running.preempt_if_needed(cx, waiting);
    }

    /// Jobs that changed by now: move their children on.
    fn process_due(&mut self, now: Instant) {
        while let Some(&(at, child)) = self.events.first() {
            if at > now {
                break;
            }
            self.unplace(child);
            self.place(child, now);
        }
    }

    /// After every change: tell the parent the earliest deadline (before
    /// asking for CPUs, so a RESU parent has it when the request comes),
    /// ask for as many CPUs as children can run, re-arm the timer.
    fn sync(&mut self, cx: &mut Cx) {
        if self.announces() {
            let running = self.running.iter().map(|(_, run)| run.rank().0).min();
            let earliest = self
                .ready
                .first()
                .map(|e| e.0 .0)
                .into_iter()
                .chain(running)
                .min();
            if earliest.is_some() && earliest != self.announced {
                self.announced = earliest;
                let at = Duration(earliest.unwrap_or(Instant::NEVER).as_nanos());
                for vp in 0..cx.vp_count() {
                    cx.msg_parent(
                        ParentVp(vp),
                        Msg::new("deadline").arg("at", Value::Duration(at)),
                    );
                }
            }
        }
        let runnable = self.ready.len() + self.running.len();
        cx.want_cpus(runnable as u32);
        let next = self.events.first().map(|e| e.0);
        if next != self.armed {
            match next {
                Some(at) => cx.set_timer(EVENT_TIMER, at),
                None => cx.cancel_timer(EVENT_TIMER),
            }
            self.armed = next;
        }
    }
}

impl Scheduler for Res {
    fn policy(&self) -> &'static str {
        "res"
    }

    /// Admission: the child's utilization must fit beside the others'.
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let kind = Self::kind_from(params).map_err(Reject)?;
        let partition = params.get("overrun") == Some(&Value::Bool(true));
        if partition && !matches!(kind, Kind::Reserved { .. }) {
            return Err(Reject(
                "`overrun` makes a reservation an overrun partition: it needs `amount` and `period`, not `rate`".into(),
            ));
        }
        let what = match &kind {
            Kind::Reserved { amount, period, .. } => format!("RESBH {amount}, {period}"),
            Kind::Usp { rate, .. } => format!("RESU {rate}"),
            Kind::Nothing => String::new(),
        };
        if partition && self.global {
            return Err(Reject(
                "an overrun partition needs `multiprocessor` \"one\" or \"partitioned\": under global EDF the spare CPU it borrows when it wakes late is not one CPU's".into(),
            ));
        }
        let total = self
            .admit(None, kind.util(), &what, cx.vp_count())
            .map_err(Reject)?;
        let mut c = Child::new(kind);
        c.partition = partition;
        let now = cx.now();
        if let Kind::Reserved { origin, .. } = &mut c.kind {
            *origin = now;
        }
        self.reserved = total;
        self.partitions += usize::from(c.partition);
        c.deadline = match c.kind {
            Kind::Reserved { .. } => now, // the first `advance` starts window 0
            _ => Instant::NEVER,
        };
        self.children.insert(child, c);
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if !self.children.contains(child) {
            return;
        }
        self.forget_runnable(child);
        let old = self.children[child].kind.util();
        self.reserved = self.reserved.checked_sub(old).unwrap_or(Util::ZERO);
        self.partitions -= usize::from(self.children[child].partition);
        self.children.remove(child);
        self.sync(cx);
    }

    /// A waking child keeps at most its share of the rest of its job (an
    /// overrun partition: with its part of the spare CPU added).
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        let now = cx.now();
        let spare = match self.children[child].partition {
            true => self.spare_per_partition(),
            false => Util::ZERO,
        };
        let c = &mut self.children[child];
        if c.state != State::Idle {
            return;
        }
        c.advance(now);
        let rest = match c.partition {
            false => c.share_of_rest(now),
            true => c.partition_share_of_rest(now, spare),
        };
        c.budget = c.budget.min(rest);
        self.place(child, now);
        self.preempt_if_needed(cx);
        self.sync(cx);
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        if self.children[child].state == State::Idle {
            return;
        }
        self.forget_runnable(child);
        self.sync(cx);
    }

    /// The only place `res` chooses: the earliest deadline with budget runs
    /// until its budget or its job ends; with none, the CPU goes back.
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        let now = cx.now();
        self.stop(vp, now);
        self.process_due(now);
        let decision = match self.ready.pop_first() {
            Some((rank, child)) => {
                let c = &mut self.children[child];
                let until = now.saturating_add(self.rate.of(c.budget)).min(rank.0);
                c.state = State::Running(vp);
                self.set_event(child, None);
                self.running.place(vp, child, rank, now);
                Dispatch::Run { child, until }
            }
            None => Dispatch::Release,
        };
        self.preempt_if_needed(cx);
        self.sync(cx);
        decision
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.stop(vp, cx.now());
        self.preempt_if_needed(cx);
        self.sync(cx);
    }

    /// Budgets are in this processor's time: `ran` of CPU is `ran / rate`.
    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        self.charge_running(child, ran, cx.now());
    }

    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        if key != EVENT_TIMER {
            return;
        }
        self.armed = None;
        self.process_due(cx.now());
        self.preempt_if_needed(cx);
        self.sync(cx);
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        let result = match msg.name.as_str() {
            "reserve" => self.reserve(cx, from, msg),
            "release" => self.release_reservation(cx, from, msg),
            "deadline" => self.deadline(cx, from, msg),
            "info" => return self.info(from, msg).map_or_else(Reply::Err, Reply::Ok),
            _ => return Reply::unknown(self.policy(), msg),
        };
        if result.is_ok() {
            self.preempt_if_needed(cx);
            self.sync(cx);
        }
        result.map_or_else(Reply::Err, Reply::Ok)
    }

    fn check_invariants(&self) -> Result<(), String> {
        let mut total = Util::ZERO;
        let mut ready = 0;
        let mut events = 0;
        for (child, c) in self.children.iter() {
            total = total
                .checked_add(c.kind.util())
                .ok_or("the utilization sum overflowed")?;
            if c.budget > c.full_budget() {
                return Err(format!(
                    "{child} has budget {} beyond its job's {}",
                    c.budget,
                    c.full_budget()
                ));
            }
            match &c.kind {
                Kind::Reserved { period, origin, .. } if c.deadline > *origin => {
                    let grid = c.release.saturating_since(*origin).as_nanos() % period.as_nanos();
                    if c.deadline.saturating_since(c.release) != *period || grid != 0 {
                        return Err(format!(
                            "{child}'s job [{}, {}) is not a window of its grid {} + k * {period}",
                            c.release, c.deadline, origin
                        ));
                    }
                }
                Kind::Usp { upcoming, .. }
                    if upcoming.first().is_some_and(|&u| u <= c.deadline) =>
                {
                    return Err(format!(
                        "{child} has an announced deadline before its job's"
                    ));
                }
                _ => {}
            }
            match c.state {
                State::Idle => {
                    if c.event.is_some() {
                        return Err(format!("{child} is idle but has an event"));
                    }
                }
                State::Ready => {
                    ready += 1;
                    if !self.ready.contains(&(c.rank(), child)) {
                        return Err(format!("{child} is ready but not queued"));
                    }
                    if self.rate.of(c.budget).is_zero() {
                        return Err(format!("{child} is ready without budget"));
                    }
                }
                State::Throttled => {
                    if !c.deadline.is_never() && !self.rate.of(c.budget).is_zero() {
                        return Err(format!("{child} is throttled with budget {}", c.budget));
                    }
                }
                State::Running(vp) => {
                    if self.running.child_on(vp) != Some(child) {
                        return Err(format!("{child} runs on {vp} but {vp} does not know it"));
                    }
                    if c.event.is_some() {
                        return Err(format!("{child} runs but has an event"));
                    }
                }
            }
            if let Some(at) = c.event {
                events += 1;
                if !self.events.contains(&(at, child)) {
                    return Err(format!("{child}'s event at {at} is not queued"));
                }
            }
        }
        if total != self.reserved || (!self.global && !total.at_most_one()) {
            return Err(format!(
                "reserved {} but the children sum to {total}",
                self.reserved
            ));
        }
        if ready != self.ready.len() || events != self.events.len() {
            return Err("a queue holds entries of children not in it".into());
        }
        let partitions = self.children.iter().filter(|(_, c)| c.partition).count();
        if partitions != self.partitions {
            return Err(format!(
                "{} overrun partitions counted, {partitions} among the children",
                self.partitions
            ));
        }
        for (vp, run) in self.running.iter() {
            let c = self
                .children
                .get(run.child())
                .ok_or_else(|| format!("{vp} runs {}, which is not registered", run.child()))?;
            if c.state != State::Running(vp) || c.rank() != run.rank() {
                return Err(format!("{vp} runs {} out of step with it", run.child()));
            }
        }
        self.running.check_invariants()
    }
}
