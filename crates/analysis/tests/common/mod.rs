//! Random schedules that meet a guarantee, for the property tests of the
//! rewrite rules: busy intervals `[start, end)` in integer nanoseconds,
//! drawn from a seeded generator so that every case replays.

#![allow(dead_code)] // each test file uses a different part

use rand::Rng;
use rand_chacha::ChaCha8Rng;

pub use rand::SeedableRng;
pub type Rng8 = ChaCha8Rng;

pub fn rng(seed: u64) -> Rng8 {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Splits `total` into `parts` non-negative integers, at random.
fn split(rng: &mut Rng8, total: u64, parts: usize) -> Vec<u64> {
    let mut cuts: Vec<u64> = (1..parts).map(|_| rng.gen_range(0..=total)).collect();
    cuts.push(0);
    cuts.push(total);
    cuts.sort_unstable();
    cuts.windows(2).map(|w| w[1] - w[0]).collect()
}

/// `amount` of run time placed in `[start, start + len)`: all at the start,
/// all at the end (the two extremes the bounds are tight on), or cut into
/// up to four pieces at random places. Returns the busy pieces.
pub fn place(rng: &mut Rng8, start: u64, len: u64, amount: u64) -> Vec<(u64, u64)> {
    let idle = len - amount;
    match rng.gen_range(0..4) {
        0 => vec![(start, start + amount)],
        1 => vec![(start + idle, start + len)],
        _ => {
            let pieces = rng.gen_range(1..=4usize);
            let runs = split(rng, amount, pieces);
            let gaps = split(rng, idle, pieces + 1);
            let mut t = start;
            let mut out = Vec::new();
            for (i, run) in runs.iter().enumerate() {
                t += gaps[i];
                out.push((t, t + run));
                t += run;
            }
            out
        }
    }
}

/// Extra run time a soft guarantee may receive: random parts of the idle
/// gaps between `busy` (sorted, disjoint) inside `[from, to)`.
pub fn add_extra(rng: &mut Rng8, busy: &mut Vec<(u64, u64)>, from: u64, to: u64) {
    busy.sort_unstable();
    let mut gaps = Vec::new();
    let mut t = from;
    for &(s, e) in busy.iter() {
        if s > t {
            gaps.push((t, s));
        }
        t = t.max(e);
    }
    if to > t {
        gaps.push((t, to));
    }
    for (s, e) in gaps {
        if rng.gen_bool(0.3) {
            let a = rng.gen_range(s..e);
            let b = rng.gen_range(a + 1..=e);
            busy.push((a, b));
        }
    }
}

/// A schedule meeting a basic reservation `x, y` with grid offset `offset`
/// for `windows` windows: each window gets exactly `x` (plus, when `soft`,
/// some extra in its idle time).
pub fn basic(
    rng: &mut Rng8,
    x: u64,
    y: u64,
    offset: u64,
    windows: u64,
    soft: bool,
) -> Vec<(u64, u64)> {
    let mut busy = Vec::new();
    for i in 0..windows {
        busy.extend(place(rng, offset + i * y, y, x));
    }
    if soft {
        add_extra(rng, &mut busy, offset, offset + windows * y);
    }
    busy
}

/// A schedule meeting a continuous reservation `x, y` from `offset` for
/// `windows` periods: one random pattern of `x` per period, repeated (a
/// static schedule, as Rialto gives), plus extra when `soft`.
pub fn continuous(
    rng: &mut Rng8,
    x: u64,
    y: u64,
    offset: u64,
    windows: u64,
    soft: bool,
) -> Vec<(u64, u64)> {
    let pattern = place(rng, 0, y, x);
    let mut busy = Vec::new();
    for i in 0..windows {
        let base = offset + i * y;
        busy.extend(pattern.iter().map(|&(s, e)| (base + s, base + e)));
    }
    if soft {
        add_extra(rng, &mut busy, offset, offset + windows * y);
    }
    busy
}

/// A proportional-share schedule of share `num/den` over `[0, horizon)`:
/// in steps of `quantum` the VP runs when its service has fallen behind
/// `share·t` by more than a random threshold (up to `slack`), for a random
/// part of the quantum. It stays within a bounded distance of the fluid
/// share; the tests measure that distance and use it as δ.
pub fn fluid(
    rng: &mut Rng8,
    num: u64,
    den: u64,
    quantum: u64,
    slack: u64,
    horizon: u64,
) -> Vec<(u64, u64)> {
    let mut busy = Vec::new();
    let mut served: u128 = 0;
    let mut t = 0u64;
    while t < horizon {
        let fluid = u128::from(t) * u128::from(num) / u128::from(den);
        let threshold = u128::from(rng.gen_range(0..=slack));
        let step = quantum.min(horizon - t);
        if served + threshold < fluid {
            let run = rng.gen_range(1..=step);
            busy.push((t, t + run));
            served += u128::from(run);
        }
        t += step;
    }
    busy
}
