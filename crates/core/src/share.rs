//! A fraction of a CPU, exact: the one type for shares, rates, reservation
//! bandwidths and processor speeds, and the one parser of their text.
//!
//! Decisions never use floating point, so the same configuration always
//! gives the same verdict, bit for bit: a share is a reduced fraction of
//! two 64-bit integers, and arithmetic that would not fit says so (`None`)
//! rather than rounding. Policies that keep rates in parts per million
//! (`frc`, `hfsc`) convert at the edge with [`Share::parse_ppm`] and
//! [`Share::from_ppm`].
//!
//! Text: a decimal (`0.25`, `.5`, `1`, at most 18 places), a fraction of
//! two decimals (`1/3`) or a percentage (`25%`). Which values a parameter
//! accepts is a [`ShareRange`].

use crate::time::Duration;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// A non-negative exact fraction, always reduced (`num/den`, `den > 0`).
/// More than 1 where a sum or several CPUs are meant.
///
/// ```
/// use hsched_core::Share;
/// let r = Share::new(30, 100).unwrap();
/// assert_eq!((r.num(), r.den()), (3, 10));
/// assert_eq!(r, Share::percent(30));
/// assert_eq!(r.to_string(), "3/10");
/// assert_eq!(r.percent_string(), "30%");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Share {
    num: u64,
    den: u64,
}

/// The values a share in text may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShareRange {
    /// Any non-negative value (an overbooking fraction, a sum).
    Any,
    /// `[0, 1]`: a fraction of one CPU.
    AtMostOne,
    /// `(0, 1]`: a rate, which 0 would make meaningless.
    Rate,
}

impl fmt::Display for ShareRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShareRange::Any => "fraction >= 0",
            ShareRange::AtMostOne => "fraction in [0, 1]",
            ShareRange::Rate => "rate in (0, 1]",
        })
    }
}

/// Greatest common divisor (`gcd(0, b) = b`).
pub fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Least common multiple; `None` if it does not fit 64 bits.
pub fn lcm(a: u64, b: u64) -> Option<u64> {
    (a / gcd(a.into(), b.into()) as u64).checked_mul(b)
}

/// Parts per million in one CPU.
const PPM: u64 = 1_000_000;

impl Share {
    pub const ZERO: Share = Share { num: 0, den: 1 };
    pub const ONE: Share = Share { num: 1, den: 1 };

    /// `num/den`, reduced; `None` when `den` is 0.
    ///
    /// ```
    /// use hsched_core::Share;
    /// assert_eq!(Share::new(10, 3).unwrap().to_string(), "10/3");
    /// assert!(Share::new(1, 0).is_none());
    /// ```
    pub fn new(num: u64, den: u64) -> Option<Share> {
        Share::from_u128(num.into(), den.into())
    }

    /// Reduces a wide fraction; `None` if `den` is 0 or the reduced fraction
    /// does not fit in 64 bits.
    pub fn from_u128(num: u128, den: u128) -> Option<Share> {
        if den == 0 {
            return None;
        }
        if num == 0 {
            return Some(Share::ZERO);
        }
        let g = gcd(num, den);
        Some(Share {
            num: u64::try_from(num / g).ok()?,
            den: u64::try_from(den / g).ok()?,
        })
    }

    /// The whole number `n`.
    pub const fn integer(n: u64) -> Share {
        Share { num: n, den: 1 }
    }

    /// `p` percent, i.e. `p/100`.
    ///
    /// ```
    /// use hsched_core::Share;
    /// assert_eq!(Share::percent(60), Share::new(3, 5).unwrap());
    /// ```
    pub fn percent(p: u64) -> Share {
        Share::new(p, 100).expect("100 is not zero")
    }

    /// `ppm` parts per million.
    pub fn from_ppm(ppm: u64) -> Share {
        Share::new(ppm, PPM).expect("a million is not zero")
    }

    pub const fn num(self) -> u64 {
        self.num
    }
    pub const fn den(self) -> u64 {
        self.den
    }
    pub const fn is_zero(self) -> bool {
        self.num == 0
    }
    pub const fn is_one(self) -> bool {
        self.num == self.den
    }

    /// The value in parts per million, when it is a whole number of them.
    pub fn to_ppm(self) -> Option<u64> {
        let scaled = u128::from(self.num) * u128::from(PPM);
        let den = u128::from(self.den);
        (scaled % den == 0)
            .then(|| u64::try_from(scaled / den).ok())
            .flatten()
    }

    /// `self + rhs`; `None` on overflow.
    pub fn checked_add(self, rhs: Share) -> Option<Share> {
        let a = u128::from(self.num) * u128::from(rhs.den);
        let b = u128::from(rhs.num) * u128::from(self.den);
        Share::from_u128(
            a.checked_add(b)?,
            u128::from(self.den) * u128::from(rhs.den),
        )
    }

    /// `self - rhs`; `None` if negative.
    ///
    /// ```
    /// use hsched_core::Share;
    /// assert_eq!(Share::ONE.checked_sub(Share::percent(95)), Some(Share::percent(5)));
    /// assert_eq!(Share::percent(5).checked_sub(Share::ONE), None);
    /// ```
    pub fn checked_sub(self, rhs: Share) -> Option<Share> {
        let a = u128::from(self.num) * u128::from(rhs.den);
        let b = u128::from(rhs.num) * u128::from(self.den);
        Share::from_u128(
            a.checked_sub(b)?,
            u128::from(self.den) * u128::from(rhs.den),
        )
    }

    /// `max(self - rhs, 0)`.
    pub fn saturating_sub(self, rhs: Share) -> Share {
        self.checked_sub(rhs).unwrap_or(Share::ZERO)
    }

    /// `self · rhs`; `None` if the reduced result does not fit.
    pub fn checked_mul(self, rhs: Share) -> Option<Share> {
        Share::from_u128(
            u128::from(self.num) * u128::from(rhs.num),
            u128::from(self.den) * u128::from(rhs.den),
        )
    }

    /// `self / rhs`; `None` if `rhs` is 0 or on overflow.
    ///
    /// ```
    /// use hsched_core::Share;
    /// assert_eq!(Share::ONE.checked_div(Share::percent(30)).unwrap().to_string(), "10/3");
    /// ```
    pub fn checked_div(self, rhs: Share) -> Option<Share> {
        Share::from_u128(
            u128::from(self.num) * u128::from(rhs.den),
            u128::from(self.den) * u128::from(rhs.num),
        )
    }

    /// The largest integer `<= self`.
    pub const fn floor(self) -> u64 {
        self.num / self.den
    }

    /// The smallest integer `>= self`.
    pub const fn ceil(self) -> u64 {
        self.num.div_ceil(self.den)
    }

    /// `floor(d · self)`: the part of `d` this share is (the real CPU time
    /// a processor of this speed gives in `d`). Saturates above the largest
    /// duration.
    ///
    /// ```
    /// use hsched_core::{Duration, Share};
    /// let third = Share::new(1, 3).unwrap();
    /// assert_eq!(third.of(Duration(10)), Duration(3));
    /// ```
    pub fn of(self, d: Duration) -> Duration {
        let v = u128::from(d.as_nanos()) * u128::from(self.num) / u128::from(self.den);
        Duration(u64::try_from(v).unwrap_or(u64::MAX))
    }

    /// `ceil(real / self)`: how much of this processor's time `real` CPU
    /// time is (saturating; a zero share saturates).
    ///
    /// ```
    /// use hsched_core::{Duration, Share};
    /// let third = Share::new(1, 3).unwrap();
    /// assert_eq!(third.charge(Duration(3)), Duration(9));
    /// ```
    pub fn charge(self, real: Duration) -> Duration {
        if self.num == 0 {
            return Duration::MAX;
        }
        let v = (u128::from(real.as_nanos()) * u128::from(self.den)).div_ceil(u128::from(self.num));
        Duration(u64::try_from(v).unwrap_or(u64::MAX))
    }

    /// The value as a float, for reports only (never in a decision).
    pub fn as_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// A decimal rounded down to `places` places, trailing zeros trimmed
    /// (`decimal(4)` of 1/3 is `0.3333`; of 1 is `1`). Exact for a whole
    /// number of ppm at 6 places.
    ///
    /// ```
    /// use hsched_core::Share;
    /// assert_eq!(Share::new(1, 3).unwrap().decimal(4), "0.3333");
    /// assert_eq!(Share::from_ppm(350_000).decimal(6), "0.35");
    /// assert_eq!(Share::from_ppm(2_500_000).decimal(6), "2.5");
    /// ```
    pub fn decimal(self, places: u32) -> String {
        let scale = 10u128.pow(places);
        let units = u128::from(self.num) * scale / u128::from(self.den);
        let (whole, frac) = (units / scale, units % scale);
        if frac == 0 {
            return whole.to_string();
        }
        let frac = format!("{frac:0width$}", width = places as usize);
        format!("{whole}.{}", frac.trim_end_matches('0'))
    }

    /// A percentage for people: exact when it is a whole number of percent
    /// (`"10%"`), otherwise rounded to hundredths and marked (`"≈33.33%"`).
    /// Integer arithmetic only.
    ///
    /// ```
    /// use hsched_core::Share;
    /// assert_eq!(Share::new(1, 3).unwrap().percent_string(), "≈33.33%");
    /// assert_eq!(Share::new(7, 80).unwrap().percent_string(), "≈8.75%");
    /// assert_eq!(Share::integer(2).percent_string(), "200%");
    /// ```
    pub fn percent_string(self) -> String {
        let hundred = u128::from(self.num) * 100;
        let den = u128::from(self.den);
        if hundred % den == 0 {
            return format!("{}%", hundred / den);
        }
        // Round half up to hundredths of a percent.
        let hundredths = (u128::from(self.num) * 10_000 * 2 + den) / (2 * den);
        format!("≈{}.{:02}%", hundredths / 100, hundredths % 100)
    }

    /// Reads a share written as a decimal, a fraction or a percentage
    /// (`0.25`, `1/3`, `25%`) and checks it is in `range`. The message
    /// quotes the text and says what was expected.
    ///
    /// ```
    /// use hsched_core::{Share, ShareRange};
    /// assert_eq!(Share::parse(" 2/6 ", ShareRange::Rate).unwrap().to_string(), "1/3");
    /// assert_eq!(Share::parse("50%", ShareRange::Rate), Ok(Share::new(1, 2).unwrap()));
    /// assert_eq!(Share::parse(".25", ShareRange::AtMostOne), Ok(Share::percent(25)));
    /// assert!(Share::parse("0", ShareRange::Rate).unwrap_err().contains("(0, 1]"));
    /// assert!(Share::parse("1.5", ShareRange::AtMostOne).unwrap_err().contains("more than 1"));
    /// assert!(Share::parse("2", ShareRange::Any).is_ok());
    /// assert!(Share::parse("1e-3", ShareRange::Any).is_err());
    /// ```
    pub fn parse(text: &str, range: ShareRange) -> Result<Share, String> {
        let s = text.trim();
        let value = if let Some(pct) = s.strip_suffix('%') {
            parse_decimal(pct.trim()).and_then(|p| p.checked_div(Share::integer(100)))
        } else if let Some((num, den)) = s.split_once('/') {
            match (parse_decimal(num.trim()), parse_decimal(den.trim())) {
                (Some(n), Some(d)) if !d.is_zero() => n.checked_div(d),
                _ => None,
            }
        } else {
            parse_decimal(s)
        };
        let value = value.ok_or_else(|| {
            format!("`{s}` is not a share (expected a decimal like 0.25, a fraction like 1/3, or a percentage like 25%)")
        })?;
        match range {
            ShareRange::Any => {}
            ShareRange::AtMostOne if value > Share::ONE => {
                return Err(format!(
                    "`{s}` is more than 1 (a share is a fraction of one CPU)"
                ))
            }
            ShareRange::AtMostOne => {}
            ShareRange::Rate if value.is_zero() => {
                return Err(format!("`{s}` is 0: expected a rate in (0, 1]"))
            }
            ShareRange::Rate if value > Share::ONE => {
                return Err(format!("`{s}` is more than 1: expected a rate in (0, 1]"))
            }
            ShareRange::Rate => {}
        }
        Ok(value)
    }

    /// [`Share::parse`], for a policy that counts in parts per million: the
    /// value must be a whole number of them (at most 6 decimal places).
    ///
    /// ```
    /// use hsched_core::{Share, ShareRange};
    /// assert_eq!(Share::parse_ppm("0.35", ShareRange::AtMostOne), Ok(350_000));
    /// assert_eq!(Share::parse_ppm("1/4", ShareRange::Rate), Ok(250_000));
    /// assert!(Share::parse_ppm("0.0000001", ShareRange::Any).unwrap_err().contains("6 decimal"));
    /// ```
    pub fn parse_ppm(text: &str, range: ShareRange) -> Result<u64, String> {
        Share::parse(text, range)?.to_ppm().ok_or_else(|| {
            format!(
                "`{}`: at most 6 decimal places (a whole number of parts per million)",
                text.trim()
            )
        })
    }
}

/// A non-negative decimal with at most 18 places (`0.125`, `.5`, `3`).
fn parse_decimal(text: &str) -> Option<Share> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 18
    {
        return None;
    }
    let int: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let scale = 10u64.pow(frac.len() as u32);
    let frac: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let num = u128::from(int) * u128::from(scale) + u128::from(frac);
    Share::from_u128(num, u128::from(scale))
}

impl PartialOrd for Share {
    fn partial_cmp(&self, other: &Share) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Share {
    fn cmp(&self, other: &Share) -> Ordering {
        // Both products are below 2^128: no overflow.
        (u128::from(self.num) * u128::from(other.den))
            .cmp(&(u128::from(other.num) * u128::from(self.den)))
    }
}

/// `3/10`, or `12` for a whole number.
impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_exactly() {
        let p = |t| Share::parse(t, ShareRange::Any);
        assert_eq!(p("0.5"), Ok(Share::new(1, 2).unwrap()));
        assert_eq!(p(".05"), Ok(Share::new(1, 20).unwrap()));
        assert_eq!(p("1.000000"), Ok(Share::ONE));
        assert_eq!(p("1/3"), Ok(Share::new(1, 3).unwrap()));
        assert_eq!(p("0.5/2"), Ok(Share::new(1, 4).unwrap()));
        assert_eq!(p("12.5%"), Ok(Share::new(1, 8).unwrap()));
        assert_eq!(p("3"), Ok(Share::integer(3)));
        for bad in [
            "",
            ".",
            "x",
            "-0.5",
            "1/0",
            "0.5.1",
            "1e-3",
            "0.1234567890123456789",
        ] {
            assert!(p(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn ranges_refuse_with_the_reason() {
        assert!(Share::parse("0", ShareRange::AtMostOne).is_ok());
        assert!(Share::parse("0", ShareRange::Rate)
            .unwrap_err()
            .contains("is 0"));
        let e = Share::parse("3/2", ShareRange::Rate).unwrap_err();
        assert!(e.contains("more than 1") && e.contains("(0, 1]"), "{e}");
        assert!(Share::parse("150%", ShareRange::AtMostOne).is_err());
    }

    #[test]
    fn ppm_is_exact_or_refused() {
        assert_eq!(Share::parse_ppm("0.000001", ShareRange::Rate), Ok(1));
        assert_eq!(Share::parse_ppm(" 0 ", ShareRange::AtMostOne), Ok(0));
        assert_eq!(Share::parse_ppm("2", ShareRange::Any), Ok(2_000_000));
        assert!(Share::parse_ppm("1/3", ShareRange::Rate).is_err());
        assert_eq!(Share::from_ppm(250_000), Share::percent(25));
        assert_eq!(Share::from_ppm(1).to_ppm(), Some(1));
    }

    #[test]
    fn budgets_round_toward_the_processor() {
        let third = Share::new(1, 3).unwrap();
        assert_eq!(third.charge(Duration(1)), Duration(3));
        assert_eq!(Share::ONE.of(Duration(7)), Duration(7));
    }
}
