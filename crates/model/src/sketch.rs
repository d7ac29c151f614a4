//! A bounded histogram of durations: what a run keeps of a set of samples
//! (wakeup latencies, job response times) that has grown past what it
//! keeps one by one, so that a long run's memory stays bounded per thread.
//!
//! Values are counted in log-linear buckets: exact below 128 ns, above
//! that 128 buckets per power of two, so a bucket spans at most 1/128 of
//! its lower bound. A quantile read from it is the lower bound of the
//! bucket holding the nearest-rank sample (clamped to the exact minimum and
//! maximum, which are tracked): at most 0.8 % below the exact nearest-rank
//! value, never above it. At most 64 × 128 buckets exist; only those hit
//! are stored.

use serde::Serialize;
use std::collections::BTreeMap;

/// Significant bits kept of a value (7: 128 buckets per power of two).
const BITS: u32 = 7;

/// Counts of durations (nanoseconds) by log-linear bucket, with the exact
/// count, minimum and maximum.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sketch {
    count: u64,
    min: u64,
    max: u64,
    buckets: BTreeMap<u32, u64>,
}

impl Sketch {
    /// Counts one value.
    pub fn add(&mut self, ns: u64) {
        if self.count == 0 {
            (self.min, self.max) = (ns, ns);
        } else {
            self.min = self.min.min(ns);
            self.max = self.max.max(ns);
        }
        self.count += 1;
        *self.buckets.entry(bucket(ns)).or_default() += 1;
    }

    /// Counts every value `other` counted (the two runs' samples as one).
    pub fn merge(&mut self, other: &Sketch) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            (self.min, self.max) = (other.min, other.max);
        } else {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
        self.count += other.count;
        for (&b, &n) in &other.buckets {
            *self.buckets.entry(b).or_default() += n;
        }
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest value counted (exact); `None` when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The nearest-rank `pct`-th percentile as the lower bound of its
    /// bucket (see the module text); `None` when empty. `pct` above 100 is
    /// read as 100, which gives the exact maximum.
    pub fn percentile(&self, pct: u32) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let pct = u128::from(pct.min(100));
        if pct == 100 {
            return Some(self.max);
        }
        let rank = (pct * u128::from(self.count)).div_ceil(100).max(1);
        let mut seen = 0u128;
        for (&b, &n) in &self.buckets {
            seen += u128::from(n);
            if seen >= rank {
                return Some(lower_bound(b).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// How many wakeup latencies a thread keeps one by one (8 bytes each:
/// 800 kB a thread); past that, all of them are counted in a bounded
/// histogram ([`Sketch`]) and the first ones stay for the plots.
pub const MAX_KEPT_LATENCIES: usize = 100_000;

/// Records one latency of a thread: one by one in `kept` up to
/// [`MAX_KEPT_LATENCIES`]; past that, every one (those kept too) in
/// `sketch`.
pub fn record_latency(
    kept: &mut Vec<hsched_core::Duration>,
    sketch: &mut Option<Sketch>,
    latency: hsched_core::Duration,
) {
    let ns = latency.as_nanos();
    if let Some(sketch) = sketch {
        sketch.add(ns);
    } else if kept.len() < MAX_KEPT_LATENCIES {
        kept.push(latency);
    } else {
        let mut all = Sketch::default();
        for l in kept.iter() {
            all.add(l.as_nanos());
        }
        all.add(ns);
        *sketch = Some(all);
    }
}

/// The `limits` note of a run whose threads (some of them) had more
/// wakeup latencies than they keep one by one; `None` when none had.
pub fn sketched_latencies_note(threads: &[crate::ThreadResult]) -> Option<String> {
    let sketched: Vec<&str> = threads
        .iter()
        .filter(|t| t.wakeup_sketch.is_some())
        .map(|t| t.name.as_str())
        .collect();
    if sketched.is_empty() {
        return None;
    }
    let named = if sketched.len() > 5 {
        format!(
            "{} threads ({}, ...)",
            sketched.len(),
            sketched[..5].join(", ")
        )
    } else {
        sketched.join(", ")
    };
    Some(format!(
        "wakeup latencies: more than {MAX_KEPT_LATENCIES} of a thread (MAX_KEPT_LATENCIES) \
         for {named}: their percentiles come from a histogram (within 0.8 %), the plots \
         show the first {MAX_KEPT_LATENCIES}"
    ))
}

/// The bucket of `ns`: the value itself below 2^BITS, else its power of
/// two and its next BITS bits.
fn bucket(ns: u64) -> u32 {
    if ns < 1 << BITS {
        return ns as u32;
    }
    let exp = 63 - ns.leading_zeros(); // >= BITS
    let mantissa = (ns >> (exp - BITS)) as u32 & ((1 << BITS) - 1);
    ((exp - BITS + 1) << BITS) | mantissa
}

/// The smallest value of bucket `b`.
fn lower_bound(b: u32) -> u64 {
    if b < 1 << BITS {
        return u64::from(b);
    }
    let exp = (b >> BITS) + BITS - 1;
    let mantissa = u64::from(b & ((1 << BITS) - 1));
    (1u64 << exp) | (mantissa << (exp - BITS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The exact nearest-rank percentile of the samples.
    fn exact(samples: &[u64], pct: u32) -> u64 {
        let mut s = samples.to_vec();
        s.sort_unstable();
        let rank = (u128::from(pct.min(100)) * s.len() as u128)
            .div_ceil(100)
            .max(1);
        s[rank as usize - 1]
    }

    #[test]
    fn small_values_are_exact_and_buckets_cover_u64() {
        let mut s = Sketch::default();
        for v in [5, 3, 120, 7] {
            s.add(v);
        }
        assert_eq!(s.percentile(50), Some(5));
        assert_eq!(s.percentile(99), Some(120));
        assert_eq!(s.max(), Some(120));
        assert_eq!(Sketch::default().percentile(50), None);
        for v in [128, 129, 255, 256, 1_000_000_007, u64::MAX] {
            let b = bucket(v);
            assert!(lower_bound(b) <= v, "{v}");
            assert!(v - lower_bound(b) <= v >> BITS, "{v}");
            assert!(b < 64 << BITS);
        }
    }

    proptest! {
        #[test]
        fn percentile_is_at_most_one_bucket_below_the_exact_one(
            samples in prop::collection::vec(any::<u64>(), 1..300),
            pct in 0u32..=100,
        ) {
            let mut s = Sketch::default();
            for &v in &samples {
                s.add(v);
            }
            let want = exact(&samples, pct);
            let got = s.percentile(pct).unwrap();
            prop_assert!(got <= want, "{} > {}", got, want);
            prop_assert!(want - got <= want >> BITS, "{} too far below {}", got, want);
            prop_assert_eq!(s.count(), samples.len() as u64);
        }
    }
}
