//! Drawing a workload duration from a scenario's [`Dist`]: the one place
//! both platforms (the simulator's threads, the live workers) take their
//! seeded draws from, so that a seed means the same durations on each.

use crate::Dist;
use hsched_core::Duration;
use rand::Rng;
use rand_distr::{Distribution, Exp, Normal};

/// Draws a duration. Continuous distributions are drawn in floating point
/// (this is the workload, not a decision) and rounded to whole nanoseconds.
pub fn draw<R: Rng + ?Sized>(dist: &Dist, rng: &mut R) -> Duration {
    match *dist {
        Dist::Fixed(d) => d,
        Dist::Uniform { min, max } => Duration(rng.gen_range(min.as_nanos()..=max.as_nanos())),
        Dist::Exponential { mean, max } => {
            let lambda = 1.0 / (mean.as_nanos().max(1) as f64);
            let x: f64 = Exp::new(lambda).map(|e| e.sample(rng)).unwrap_or(0.0);
            Duration((x.round() as u64).min(max.as_nanos()))
        }
        Dist::Normal { mean, sd, min, max } => {
            let x: f64 = Normal::new(mean.as_nanos() as f64, sd.as_nanos() as f64)
                .map(|n| n.sample(rng))
                .unwrap_or(mean.as_nanos() as f64);
            let x = x.round().max(0.0) as u64;
            Duration(x.clamp(min.as_nanos(), max.as_nanos().max(min.as_nanos())))
        }
    }
}
