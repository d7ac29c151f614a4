//! Time as integer nanoseconds.
//!
//! Every decision in hsched is made on integers so that the same inputs give the
//! same decisions bit for bit, in the simulator and live. `Instant` counts from
//! the start of a run (0), `Duration` is a span. A `u64` of nanoseconds covers
//! 584 years, so overflow only happens on nonsense input; arithmetic is checked
//! (`checked_*`), saturating where a policy asks for it, and the operators panic
//! with a message on overflow instead of wrapping silently.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

/// A span of time in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Duration(pub u64);

/// A point in time: nanoseconds since the start of the run.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Instant(pub u64);

impl Duration {
    pub const ZERO: Duration = Duration(0);
    /// The largest span; used as "forever".
    pub const MAX: Duration = Duration(u64::MAX);

    #[inline]
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    #[inline]
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    #[inline]
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    #[inline]
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    #[inline]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    #[inline]
    pub fn checked_add(self, rhs: Duration) -> Option<Duration> {
        self.0.checked_add(rhs.0).map(Duration)
    }
    #[inline]
    pub fn checked_sub(self, rhs: Duration) -> Option<Duration> {
        self.0.checked_sub(rhs.0).map(Duration)
    }
    #[inline]
    pub fn checked_mul(self, k: u64) -> Option<Duration> {
        self.0.checked_mul(k).map(Duration)
    }
    #[inline]
    pub fn saturating_add(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_add(rhs.0))
    }
    #[inline]
    pub fn saturating_sub(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_sub(rhs.0))
    }
    /// Seconds as a float, for reports only (never in a decision).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Parses a human duration: an integer or decimal with a unit
    /// (`ns`, `us`, `µs`, `ms`, `s`), e.g. `"10ms"`, `"1.5s"`, `"250us"`.
    /// A bare integer is nanoseconds. The result must be a whole number of
    /// nanoseconds and fit in 64 bits.
    pub fn parse(text: &str) -> Result<Duration, String> {
        let s = text.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let unit = unit.trim();
        let scale: u64 = match unit {
            "" | "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "min" => 60_000_000_000,
            _ => {
                return Err(format!(
                    "`{text}` has unknown unit `{unit}` (expected ns, us, ms, s or min)"
                ))
            }
        };
        let num = num.replace('_', "");
        if num.is_empty() {
            return Err(format!("`{text}` is not a duration (expected e.g. 10ms)"));
        }
        let (int, frac) = match num.split_once('.') {
            Some((i, f)) => (i, f),
            None => (num.as_str(), ""),
        };
        let bad = || format!("`{text}` is not a duration (expected e.g. 10ms, 1.5s, 250us)");
        let int: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let too_big = || format!("`{text}` is too long (at most about 584 years)");
        let mut ns = int.checked_mul(scale).ok_or_else(too_big)?;
        if !frac.is_empty() {
            if !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let mut denom: u64 = 1;
            let mut value: u64 = 0;
            for b in frac.bytes() {
                denom = denom.checked_mul(10).ok_or_else(bad)?;
                value = value * 10 + u64::from(b - b'0');
            }
            let part = (value as u128) * (scale as u128);
            if part % (denom as u128) != 0 {
                return Err(format!("`{text}` is not a whole number of nanoseconds"));
            }
            ns = ns
                .checked_add((part / denom as u128) as u64)
                .ok_or_else(too_big)?;
        }
        Ok(Duration(ns))
    }
}

impl Instant {
    pub const ZERO: Instant = Instant(0);
    /// "Never": a horizon that does not expire, a timer that is not set.
    pub const NEVER: Instant = Instant(u64::MAX);

    #[inline]
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    #[inline]
    pub const fn is_never(self) -> bool {
        self.0 == u64::MAX
    }
    #[inline]
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        self.0.checked_add(d.0).map(Instant)
    }
    /// `self + d`, or `NEVER` if that does not fit: the right reading of
    /// "a very long time from now" for horizons and timers.
    #[inline]
    pub fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
    /// The span from `earlier` to `self`, or `None` if `earlier` is later.
    #[inline]
    pub fn checked_since(self, earlier: Instant) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration)
    }
    /// The span from `earlier` to `self`, zero if `earlier` is later.
    #[inline]
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Add for Duration {
    type Output = Duration;
    #[inline]
    fn add(self, rhs: Duration) -> Duration {
        self.checked_add(rhs).expect("Duration overflow")
    }
}
impl AddAssign for Duration {
    #[inline]
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}
impl Sub for Duration {
    type Output = Duration;
    #[inline]
    fn sub(self, rhs: Duration) -> Duration {
        self.checked_sub(rhs).expect("Duration underflow")
    }
}
impl SubAssign for Duration {
    #[inline]
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}
impl Add<Duration> for Instant {
    type Output = Instant;
    #[inline]
    fn add(self, rhs: Duration) -> Instant {
        self.checked_add(rhs).expect("Instant overflow")
    }
}
impl AddAssign<Duration> for Instant {
    #[inline]
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}
impl Sub<Duration> for Instant {
    type Output = Instant;
    #[inline]
    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0.checked_sub(rhs.0).expect("Instant underflow"))
    }
}
impl Sub for Instant {
    type Output = Duration;
    #[inline]
    fn sub(self, rhs: Instant) -> Duration {
        self.checked_since(rhs)
            .expect("Instant subtraction went negative")
    }
}

fn fmt_ns(ns: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    const UNITS: [(u64, &str, usize); 3] = [
        (1_000_000_000, "s", 9),
        (1_000_000, "ms", 6),
        (1_000, "us", 3),
    ];
    for (scale, unit, digits) in UNITS {
        if ns >= scale {
            let (whole, frac) = (ns / scale, ns % scale);
            if frac == 0 {
                return write!(f, "{whole}{unit}");
            }
            // Exact decimal: trailing zeros trimmed, never rounded.
            let frac = format!("{frac:0digits$}");
            return write!(f, "{whole}.{}{unit}", frac.trim_end_matches('0'));
        }
    }
    write!(f, "{ns}ns")
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Duration::MAX {
            return f.write_str("forever");
        }
        fmt_ns(self.0, f)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_never() {
            return f.write_str("never");
        }
        f.write_str("t=")?;
        fmt_ns(self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_units() {
        assert_eq!(Duration::parse("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(Duration::parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(Duration::parse("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(Duration::parse("42"), Ok(Duration(42)));
        assert_eq!(Duration::parse("1_000ns"), Ok(Duration(1000)));
        assert!(Duration::parse("1.0000000001s").is_err());
        assert!(Duration::parse("10 parsecs").is_err());
        assert!(Duration::parse("").is_err());
        assert!(Duration::parse("99999999999999999999s").is_err());
    }

    #[test]
    fn displays_exactly() {
        assert_eq!(Duration::from_millis(10).to_string(), "10ms");
        assert_eq!(Duration(1_500_000).to_string(), "1.5ms");
        assert_eq!(Duration(1_000_001).to_string(), "1.000001ms");
        assert_eq!(Duration(7).to_string(), "7ns");
        assert_eq!(Instant::NEVER.to_string(), "never");
    }

    #[test]
    fn checked_arithmetic() {
        assert_eq!(Instant(5).checked_add(Duration(u64::MAX)), None);
        assert_eq!(
            Instant(5).saturating_add(Duration(u64::MAX)),
            Instant::NEVER
        );
        assert_eq!(Instant(3).checked_since(Instant(5)), None);
        assert_eq!(Instant(5) - Instant(3), Duration(2));
    }

    proptest! {
        #[test]
        fn display_parse_roundtrip(ns in 0u64..u64::MAX) {
            let d = Duration(ns);
            prop_assert_eq!(Duration::parse(&d.to_string()), Ok(d));
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,24}") {
            let _ = Duration::parse(&s);
        }
    }
}
