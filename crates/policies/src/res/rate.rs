//! Exact utilizations for `res` (HLS §4.2, §5.1): sums of reservation
//! utilizations and RESU rates (a rate itself is a [`Share`]), as reduced
//! 128-bit fractions, so that admission ("the utilizations sum to at most
//! 1") is decided exactly, bit for bit, with no floating point. A sum that
//! does not fit is reported as such (the caller refuses it).

use hsched_core::share::gcd;
use hsched_core::{Duration, Share};
use std::fmt;

/// An exact non-negative fraction, reduced: a sum of utilizations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Util {
    num: u128,
    den: u128,
}

impl Util {
    pub const ZERO: Util = Util { num: 0, den: 1 };
    pub const ONE: Util = Util { num: 1, den: 1 };

    fn new(num: u128, den: u128) -> Util {
        let g = gcd(num, den).max(1);
        Util {
            num: num / g,
            den: den / g,
        }
    }

    /// A RESU rate's utilization: the rate itself.
    pub fn of_share(rate: Share) -> Util {
        Util::new(rate.num().into(), rate.den().into())
    }

    /// `amount / period`.
    pub fn of(amount: Duration, period: Duration) -> Util {
        Util::new(amount.as_nanos().into(), period.as_nanos().max(1).into())
    }

    /// The exact sum, `None` if it does not fit 128 bits.
    pub fn checked_add(self, o: Util) -> Option<Util> {
        let g = gcd(self.den, o.den);
        let den = (self.den / g).checked_mul(o.den)?;
        let num = self
            .num
            .checked_mul(o.den / g)?
            .checked_add(o.num.checked_mul(self.den / g)?)?;
        Some(Util::new(num, den))
    }

    /// The exact difference (`None` if negative or too wide).
    pub fn checked_sub(self, o: Util) -> Option<Util> {
        let g = gcd(self.den, o.den);
        let den = (self.den / g).checked_mul(o.den)?;
        let num = self
            .num
            .checked_mul(o.den / g)?
            .checked_sub(o.num.checked_mul(self.den / g)?)?;
        Some(Util::new(num, den))
    }

    pub fn at_most_one(self) -> bool {
        self.num <= self.den
    }

    /// `self * k`, `None` if it does not fit 128 bits.
    pub fn checked_mul_int(self, k: u128) -> Option<Util> {
        Some(Util::new(self.num.checked_mul(k)?, self.den))
    }

    /// `self / k` (k > 0), rounded down to what 128 bits hold.
    pub fn div_int(self, k: u128) -> Util {
        match self.den.checked_mul(k) {
            Some(den) => Util::new(self.num, den),
            None => Util::new(self.num / k, self.den),
        }
    }

    /// The whole part, rounded down.
    pub fn floor(self) -> u128 {
        self.num / self.den
    }

    /// `self <= k`, `None` if `k * den` does not fit 128 bits.
    pub fn at_most_int(self, k: u128) -> Option<bool> {
        Some(self.num <= self.den.checked_mul(k)?)
    }

    /// The exact order, `None` if the cross products do not fit 128 bits
    /// (never for single utilizations, whose terms fit 64 bits).
    pub fn checked_cmp(self, o: Util) -> Option<std::cmp::Ordering> {
        Some(
            self.num
                .checked_mul(o.den)?
                .cmp(&o.num.checked_mul(self.den)?),
        )
    }
}

/// `3/10 (30.00%)`, in integer arithmetic.
impl fmt::Display for Util {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bp = self.num.saturating_mul(10_000) / self.den; // basis points, rounded down
        write!(
            f,
            "{}/{} ({}.{:02}%)",
            self.num,
            self.den,
            bp / 100,
            bp % 100
        )
    }
}
