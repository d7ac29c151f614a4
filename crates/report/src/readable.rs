//! Measured numbers as people read them: three significant digits and a
//! unit (`99.7ms`, `1.55s`, `250ns`, `0`), for the terminal tables.
//!
//! The rounding is on integer nanoseconds, so it is exact and the same on
//! every machine; what is printed is then core's lossless `Duration`
//! display of the rounded value (trailing zeros trimmed: `1ms`, `1.5s`).
//! Times people wrote (a horizon, a script's `at`) are not rounded.

use hsched_core::Duration;

/// Significant digits a measured duration keeps.
const DIGITS: u32 = 3;

/// `ns` rounded (half up) to three significant digits, with its unit;
/// zero is `0`.
pub fn duration(ns: u64) -> String {
    if ns == 0 {
        return "0".to_string();
    }
    let digits = ns.ilog10() + 1;
    let rounded = match digits.checked_sub(DIGITS) {
        None | Some(0) => ns,
        Some(drop) => {
            let step = 10u64.pow(drop);
            let (q, r) = (ns / step, ns % step);
            // Half up; saturating near u64::MAX.
            (q + u64::from(r >= step / 2)).saturating_mul(step)
        }
    };
    Duration::from_nanos(rounded).to_string()
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn three_significant_digits_and_a_unit() {
        assert_eq!(duration(0), "0");
        assert_eq!(duration(7), "7ns");
        assert_eq!(duration(250), "250ns");
        assert_eq!(duration(1_234), "1.23us");
        assert_eq!(duration(99_704_772), "99.7ms");
        assert_eq!(duration(1_547_929_061), "1.55s");
        assert_eq!(duration(5_489_750), "5.49ms");
        assert_eq!(duration(1_000_000), "1ms");
        assert_eq!(duration(10_479_750), "10.5ms");
        // Rounding up crosses into the next unit.
        assert_eq!(duration(999_600), "1ms");
        assert_eq!(duration(1_234_000_000_000), "1230s");
        assert!(!duration(u64::MAX).is_empty());
    }
}
