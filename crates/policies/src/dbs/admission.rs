//! `dbs`'s admission arithmetic: the EDF demand-bound test of one CPU over
//! a set of one-off jobs, the peak load it sees, and the slack the jobs
//! leave. Pure functions of the jobs; the scheduler gathers them (what its
//! reservations in force still need, as of now).

use hsched_core::{Duration, Instant};

/// A one-off job: (deadline, release, amount left).
pub type Job = (Instant, Instant, Duration);

/// The demand-bound test over `jobs`, and the load it sees: the largest
/// `demand / (b - a)` over the intervals `[a, b]` (as (demand, b - a);
/// (0, 1) with no job). The test passes iff that is at most 1; a failure
/// names the first interval that is overloaded.
pub fn load(mut jobs: Vec<Job>) -> (Result<(), String>, (u64, u64)) {
    jobs.sort_unstable();
    let mut releases: Vec<Instant> = jobs.iter().map(|j| j.1).collect();
    releases.sort_unstable();
    releases.dedup();
    let mut peak = (0u64, 1u64);
    let mut verdict = Ok(());
    for &a in &releases {
        let mut demand = Duration::ZERO;
        for &(b, release, amount) in &jobs {
            if release < a {
                continue;
            }
            demand = demand.saturating_add(amount);
            let room = b.saturating_since(a);
            let (d, r) = (demand.as_nanos(), room.as_nanos().max(1));
            if u128::from(d) * u128::from(peak.1) > u128::from(peak.0) * u128::from(r) {
                peak = (d, r);
            }
            if demand > room && verdict.is_ok() {
                verdict = Err(format!(
                    "the reservations due in [{a}, {b}] would need {demand} of CPU, \
                     but that interval holds only {room}"
                ));
            }
        }
    }
    (verdict, peak)
}

/// The slack at `now` of the amounts `due` (deadline, amount left, each
/// deadline after `now`): `min over deadlines b of (b - now - what is due
/// by b)`; `Duration::MAX` with nothing due.
pub fn slack(now: Instant, mut due: Vec<(Instant, Duration)>) -> Duration {
    due.sort_unstable();
    let (mut demand, mut slack) = (Duration::ZERO, Duration::MAX);
    for (b, left) in due {
        demand = demand.saturating_add(left);
        slack = slack.min(b.saturating_since(now).saturating_sub(demand));
    }
    slack
}
