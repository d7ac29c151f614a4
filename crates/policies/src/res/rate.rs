//! Exact rates and utilizations for `res` (HLS §4.2, §5.1): the speed of a
//! uniformly slower processor (RESU r) and sums of reservation
//! utilizations, as reduced integer fractions, so that admission ("the
//! utilizations sum to at most 1") is decided exactly, bit for bit, with no
//! floating point. Sums are kept in 128 bits; one that does not fit is
//! reported as such (the caller refuses it).

use hsched_core::Duration;
use std::fmt;

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A processor speed or a bandwidth: `num / den`, reduced, in `(0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    num: u64,
    den: u64,
}

impl Rate {
    pub const ONE: Rate = Rate { num: 1, den: 1 };

    /// `"1"`, `"0.5"`, `".25"` (at most 18 decimals) or `"1/3"`.
    pub fn parse(text: &str) -> Result<Rate, String> {
        let s = text.trim();
        let bad = || {
            format!("`{text}` is not a rate: expected a decimal in (0, 1] such as \"0.5\", or p/q such as \"1/3\"")
        };
        let (num, den) = if let Some((p, q)) = s.split_once('/') {
            let p: u64 = p.trim().parse().map_err(|_| bad())?;
            let q: u64 = q.trim().parse().map_err(|_| bad())?;
            (p, q)
        } else {
            let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
            if (whole.is_empty() && frac.is_empty())
                || frac.len() > 18
                || !whole
                    .chars()
                    .chain(frac.chars())
                    .all(|c| c.is_ascii_digit())
            {
                return Err(bad());
            }
            let den = 10u64.pow(frac.len() as u32);
            let whole: u64 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| bad())?
            };
            let frac: u64 = if frac.is_empty() {
                0
            } else {
                frac.parse().map_err(|_| bad())?
            };
            let num = whole
                .checked_mul(den)
                .and_then(|w| w.checked_add(frac))
                .ok_or_else(bad)?;
            (num, den)
        };
        if den == 0 || num == 0 || num > den {
            return Err(format!("`{text}` is not in (0, 1]"));
        }
        let g = gcd(num.into(), den.into()) as u64;
        Ok(Rate {
            num: num / g,
            den: den / g,
        })
    }

    pub fn num(self) -> u64 {
        self.num
    }
    pub fn den(self) -> u64 {
        self.den
    }
    pub fn is_one(self) -> bool {
        self.num == self.den
    }

    /// `floor(d * rate)`: the real CPU time `d` of this processor's time
    /// takes, or the share of a wall-clock span.
    pub fn of(self, d: Duration) -> Duration {
        let v = u128::from(d.as_nanos()) * u128::from(self.num) / u128::from(self.den);
        Duration(v as u64) // <= d
    }

    /// `ceil(real / rate)`: this processor's time that `real` CPU time is.
    pub fn charge(self, real: Duration) -> Duration {
        let v = (u128::from(real.as_nanos()) * u128::from(self.den)).div_ceil(u128::from(self.num));
        Duration(u64::try_from(v).unwrap_or(u64::MAX))
    }

    pub(super) fn util(self) -> Util {
        Util {
            num: self.num.into(),
            den: self.den.into(),
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

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
