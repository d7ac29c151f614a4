//! Small statistics used by every output: nearest-rank percentiles and
//! shares.
//!
//! Percentiles use the **nearest-rank** definition: for `n` samples sorted
//! ascending `x[1] <= ... <= x[n]`, the p-th percentile (0 < p <= 100) is
//! `x[ceil(p/100 * n)]`, i.e. the smallest sample such that at least p % of the
//! samples are less than or equal to it; p = 0 gives the minimum. It is always
//! one of the samples (no interpolation), so a reported p99 latency is a
//! latency that really happened, and it is computed in integers (no rounding
//! differences between machines).

use serde::Serialize;

/// The nearest-rank `pct`-th percentile of `sorted` (ascending), or `None` if
/// there are no samples. `pct` above 100 is read as 100.
pub fn percentile(sorted: &[u64], pct: u32) -> Option<u64> {
    debug_assert!(
        sorted.windows(2).all(|w| w[0] <= w[1]),
        "percentile needs sorted samples"
    );
    let n = sorted.len() as u128;
    if n == 0 {
        return None;
    }
    let pct = u128::from(pct.min(100));
    // rank = ceil(pct * n / 100), at least 1; u128 so that no sample count
    // can overflow the product.
    let rank = (pct * n).div_ceil(100).max(1);
    Some(sorted[(rank - 1) as usize])
}

/// Count, p50, p99 and max of a set of durations, in nanoseconds. The three
/// statistics are `null` in JSON when there are no samples.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

impl Percentiles {
    /// Summarizes samples given in any order.
    pub fn from_samples(samples: impl IntoIterator<Item = u64>) -> Self {
        let mut sorted: Vec<u64> = samples.into_iter().collect();
        sorted.sort_unstable();
        Percentiles {
            count: sorted.len() as u64,
            p50_ns: percentile(&sorted, 50),
            p99_ns: percentile(&sorted, 99),
            max_ns: sorted.last().copied(),
        }
    }
}

/// `part / whole` as a float, `None` when `whole` is zero (the share of an
/// empty span is undefined, and JSON says so with `null` rather than NaN).
pub fn ratio(part: u64, whole: u128) -> Option<f64> {
    if whole == 0 {
        None
    } else {
        Some(part as f64 / whole as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nearest_rank_on_known_samples() {
        let s = [500, 3_000, 7_000, 10_000];
        // ceil(0.5 * 4) = 2nd, ceil(0.99 * 4) = 4th.
        assert_eq!(percentile(&s, 50), Some(3_000));
        assert_eq!(percentile(&s, 99), Some(10_000));
        assert_eq!(percentile(&s, 25), Some(500));
        assert_eq!(percentile(&s, 26), Some(3_000));
        assert_eq!(percentile(&s, 0), Some(500));
        assert_eq!(percentile(&s, 100), Some(10_000));
        assert_eq!(percentile(&s, 1_000), Some(10_000));
        assert_eq!(percentile(&[], 50), None);

        // 1..=100: the p-th percentile is p itself.
        let hundred: Vec<u64> = (1..=100).collect();
        for p in 1..=100 {
            assert_eq!(percentile(&hundred, p), Some(u64::from(p)));
        }
        // 1..=1000: p99 is the 990th sample, not an interpolation.
        let thousand: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&thousand, 99), Some(990));
        assert_eq!(percentile(&thousand, 50), Some(500));
    }

    #[test]
    fn percentiles_of_unsorted_samples() {
        let p = Percentiles::from_samples([10_000, 500, 3_000, 7_000]);
        assert_eq!(
            p,
            Percentiles {
                count: 4,
                p50_ns: Some(3_000),
                p99_ns: Some(10_000),
                max_ns: Some(10_000)
            }
        );
        assert_eq!(Percentiles::from_samples([]), Percentiles::default());
    }

    #[test]
    fn ratio_of_nothing_is_undefined() {
        assert_eq!(ratio(1, 0), None);
        assert_eq!(ratio(1, 4), Some(0.25));
    }

    /// The reference: the smallest sample `v` with at least `pct` % of the
    /// samples `<= v`, found by scanning a sorted copy (a different route to
    /// the same definition than the rank formula above).
    fn reference(samples: &[u64], pct: u32) -> Option<u64> {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let n = sorted.len() as u128;
        let pct = u128::from(pct.min(100));
        sorted
            .iter()
            .copied()
            .find(|&v| {
                let at_or_below = sorted.iter().filter(|&&x| x <= v).count() as u128;
                at_or_below * 100 >= pct * n
            })
            .or_else(|| sorted.first().copied())
    }

    proptest! {
        #[test]
        fn matches_sort_based_reference(
            samples in prop::collection::vec(0u64..1_000, 0..200),
            pct in 0u32..=110,
        ) {
            let mut sorted = samples.clone();
            sorted.sort_unstable();
            prop_assert_eq!(percentile(&sorted, pct), reference(&samples, pct));
        }

        #[test]
        fn percentile_is_a_sample_and_monotone(
            samples in prop::collection::vec(any::<u64>(), 1..100),
            a in 0u32..=100,
            b in 0u32..=100,
        ) {
            let mut sorted = samples.clone();
            sorted.sort_unstable();
            let (lo, hi) = (a.min(b), a.max(b));
            let (plo, phi) = (percentile(&sorted, lo).unwrap(), percentile(&sorted, hi).unwrap());
            prop_assert!(samples.contains(&plo));
            prop_assert!(plo <= phi);
        }
    }
}
