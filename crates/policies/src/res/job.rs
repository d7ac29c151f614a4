//! One `res` child's reservation and its jobs: what it holds (RESBH
//! amount and period, a RESU rate, or nothing), its state, and how its
//! budget, deadline and debt move from job to job.

use super::rate::Util;
use hsched_core::{Duration, Instant, ParentVp, Share};
use std::collections::BTreeSet;

/// What a child holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
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
    pub(super) fn util(&self) -> Util {
        match self {
            Kind::Reserved { amount, period, .. } => Util::of(*amount, *period),
            Kind::Usp { rate, .. } => Util::of_share(*rate),
            Kind::Nothing => Util::ZERO,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Does not want a CPU.
    Idle,
    /// Runnable with budget: in `ready` under its deadline.
    Ready,
    /// Runnable, budget spent (or no job): waits for its next job.
    Throttled,
    Running(ParentVp),
}

#[derive(Clone, Debug)]
pub(super) struct Child {
    pub(super) kind: Kind,
    /// The current job: budget (this processor's time) usable in
    /// `[release, deadline)`. `deadline` is `NEVER` when there is no job.
    pub(super) release: Instant,
    pub(super) deadline: Instant,
    pub(super) budget: Duration,
    /// Charged beyond a budget (with a tick), taken from the next jobs.
    pub(super) debt: Duration,
    pub(super) state: State,
    /// Its entry in `events`, if any.
    pub(super) event: Option<Instant>,
    /// An overrun partition (`overrun = true`): keeps its budget on a late
    /// wake-up, and goes after the others on an EDF tie.
    pub(super) partition: bool,
}

impl Child {
    pub(super) fn new(kind: Kind) -> Child {
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
    pub(super) fn rank(&self) -> Rank {
        (self.deadline, self.partition)
    }

    /// The most a job `[release, deadline)` may hold.
    pub(super) fn full_budget(&self) -> Duration {
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
    pub(super) fn share_of_rest(&self, now: Instant) -> Duration {
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
    pub(super) fn partition_share_of_rest(&self, now: Instant, spare: Util) -> Duration {
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
    pub(super) fn start_job(&mut self, release: Instant, deadline: Instant, full: Duration) {
        let paid = self.debt.min(full);
        self.debt -= paid;
        self.release = release;
        self.deadline = deadline;
        self.budget = full - paid;
    }

    /// Moves to the job that contains `now` (none for a RESU child past its
    /// last deadline). Debt is forgiven one job's budget per job skipped.
    pub(super) fn advance(&mut self, now: Instant) {
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
pub(super) type Rank = (Instant, bool);
