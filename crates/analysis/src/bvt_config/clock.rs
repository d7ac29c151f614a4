//! The errors of the §6 calculations and a BVT node's clock (mcu and the
//! context switch allowance C).

use hsched_core::Duration;
use hsched_core::Share;
use std::fmt;

/// `d · r`, rounded down to whole nanoseconds; `None` on overflow.
pub(super) fn scale_duration(d: Duration, r: Share) -> Option<Duration> {
    let ns = u128::from(d.as_nanos()) * u128::from(r.num()) / u128::from(r.den());
    u64::try_from(ns).ok().map(Duration::from_nanos)
}

/// A configuration the §6 calculations cannot be applied to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// There is nothing to share among.
    NoThreads,
    /// A share of 0 has no reciprocal, hence no mcu advance.
    ZeroShare {
        who: String,
    },
    /// The shares add up to more than the whole CPU.
    SharesExceedCpu {
        total: Share,
    },
    /// An mcu advance of 0 would make a thread's virtual time stand still.
    ZeroAdvance {
        who: String,
    },
    /// §6.1.3 takes a maximum over the threads of each level.
    EmptyLevel {
        level: usize,
    },
    ZeroMcu,
    /// C = 0 mcu: `V = (C/mcu)·lcm(m_i)` would be 0.
    ZeroAllowance,
    /// §6.1.1 computes `V` with `C/mcu`, and §2 calls C "typically larger
    /// than, and a multiple of, mcu": a C that is not a whole number of mcu
    /// (or is zero) gives no window.
    AllowanceNotWholeMcu {
        allowance: Duration,
        mcu: Duration,
    },
    /// A window or warp does not fit in 64 bits.
    Overflow {
        what: &'static str,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NoThreads => f.write_str("no threads to share the CPU among"),
            ConfigError::ZeroShare { who } => {
                write!(f, "{who} has a share of 0 (it has no mcu advance)")
            }
            ConfigError::SharesExceedCpu { total } => write!(
                f,
                "the shares add up to {} of the CPU, more than 100%",
                total.percent_string()
            ),
            ConfigError::ZeroAdvance { who } => {
                write!(f, "{who} has an mcu advance of 0 (expected at least 1)")
            }
            ConfigError::EmptyLevel { level } => {
                write!(f, "priority level {level} has no threads")
            }
            ConfigError::ZeroMcu => f.write_str("the mcu is 0"),
            ConfigError::ZeroAllowance => {
                f.write_str("the context switch allowance C is 0 mcu (no window)")
            }
            ConfigError::AllowanceNotWholeMcu { allowance, mcu } => write!(
                f,
                "the context switch allowance C = {allowance} is not a positive whole number of mcu ({mcu})"
            ),
            ConfigError::Overflow { what } => write!(f, "{what} does not fit in 64 bits"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A BVT node's time base: the minimum charging unit (mcu) and the context
/// switch allowance C, a positive whole number of mcu (§2, §6.1.1).
///
/// ```
/// use hsched_analysis::bvt_config::BvtClock;
/// use hsched_core::Duration;
/// let clock = BvtClock::new(Duration::from_millis(10), Duration::from_millis(20)).unwrap();
/// assert_eq!(clock.c_mcu(), 2);
/// // §2: running 25ms is charged as 3 mcu.
/// assert_eq!(clock.charged_mcu(Duration::from_millis(25)), 3);
/// assert!(BvtClock::new(Duration::from_millis(10), Duration::from_millis(25)).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BvtClock {
    mcu: Duration,
    allowance: Duration,
}

impl BvtClock {
    pub fn new(mcu: Duration, allowance: Duration) -> Result<BvtClock, ConfigError> {
        if mcu.is_zero() {
            return Err(ConfigError::ZeroMcu);
        }
        if allowance.is_zero() || allowance.as_nanos() % mcu.as_nanos() != 0 {
            return Err(ConfigError::AllowanceNotWholeMcu { allowance, mcu });
        }
        Ok(BvtClock { mcu, allowance })
    }
    pub fn mcu(&self) -> Duration {
        self.mcu
    }
    /// C as time.
    pub fn allowance(&self) -> Duration {
        self.allowance
    }
    /// C in mcu.
    pub fn c_mcu(&self) -> u64 {
        self.allowance.as_nanos() / self.mcu.as_nanos()
    }
    /// `n` mcu as time; `None` on overflow.
    pub fn mcus(&self, n: u64) -> Option<Duration> {
        self.mcu.checked_mul(n)
    }
    /// How many mcu running for `t` is charged: §2 rounds up to the next
    /// multiple of mcu.
    pub fn charged_mcu(&self, t: Duration) -> u64 {
        t.as_nanos().div_ceil(self.mcu.as_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_a_duration_rounds_down_exactly() {
        let ms = Duration::from_millis;
        assert_eq!(scale_duration(ms(400), Share::percent(5)), Some(ms(20)));
    }
}
