//! Exact non-negative fractions for the analysis layer: shares, windows
//! and derived percentages are computed without floating point so that the
//! same configuration always gives the same verdict, bit for bit (DESIGN.md:
//! "use no floating point in a decision"). Used by [`crate::bvt_config`]
//! (BVT paper §6).

use std::cmp::Ordering;
use std::fmt;

/// A non-negative exact fraction, always reduced (`num/den`, `den > 0`).
///
/// Shares, the paper's `m = W_i/V`, and derived percentages are `Ratio`s so
/// that the same configuration always gives the same verdict, bit for bit.
///
/// ```
/// use hsched_analysis::bvt_config::Ratio;
/// let r = Ratio::new(30, 100).unwrap();
/// assert_eq!((r.num(), r.den()), (3, 10));
/// assert_eq!(r, Ratio::percent(30));
/// assert_eq!(r.to_string(), "3/10");
/// assert_eq!(r.percent_string(), "30%");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ratio {
    num: u64,
    den: u64,
}

pub(crate) fn gcd_u128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    gcd_u128(a.into(), b.into()) as u64
}

pub(crate) fn lcm(a: u64, b: u64) -> Option<u64> {
    (a / gcd(a, b)).checked_mul(b)
}

impl Ratio {
    pub const ZERO: Ratio = Ratio { num: 0, den: 1 };
    pub const ONE: Ratio = Ratio { num: 1, den: 1 };

    /// `num/den`, reduced; `None` when `den` is 0.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// assert_eq!(Ratio::new(10, 3).unwrap().to_string(), "10/3");
    /// assert!(Ratio::new(1, 0).is_none());
    /// ```
    pub fn new(num: u64, den: u64) -> Option<Ratio> {
        Ratio::from_u128(num.into(), den.into())
    }

    /// Reduces a wide fraction; `None` if `den` is 0 or the reduced fraction
    /// does not fit in 64 bits.
    pub(crate) fn from_u128(num: u128, den: u128) -> Option<Ratio> {
        if den == 0 {
            return None;
        }
        if num == 0 {
            return Some(Ratio::ZERO);
        }
        let g = gcd_u128(num, den);
        Some(Ratio {
            num: u64::try_from(num / g).ok()?,
            den: u64::try_from(den / g).ok()?,
        })
    }

    /// The whole number `n`.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// assert_eq!(Ratio::integer(12).to_string(), "12");
    /// ```
    pub const fn integer(n: u64) -> Ratio {
        Ratio { num: n, den: 1 }
    }

    /// `p` percent, i.e. `p/100`.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// assert_eq!(Ratio::percent(60), Ratio::new(3, 5).unwrap());
    /// ```
    pub fn percent(p: u64) -> Ratio {
        Ratio::new(p, 100).expect("100 is not zero")
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

    /// `self + rhs`; `None` on overflow.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// let sum = Ratio::percent(10).checked_add(Ratio::percent(30)).unwrap();
    /// assert_eq!(sum, Ratio::percent(40));
    /// ```
    pub fn checked_add(self, rhs: Ratio) -> Option<Ratio> {
        let a = u128::from(self.num) * u128::from(rhs.den);
        let b = u128::from(rhs.num) * u128::from(self.den);
        Ratio::from_u128(
            a.checked_add(b)?,
            u128::from(self.den) * u128::from(rhs.den),
        )
    }

    /// `self - rhs`; `None` if negative.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// assert_eq!(Ratio::ONE.checked_sub(Ratio::percent(95)), Some(Ratio::percent(5)));
    /// assert_eq!(Ratio::percent(5).checked_sub(Ratio::ONE), None);
    /// ```
    pub fn checked_sub(self, rhs: Ratio) -> Option<Ratio> {
        let a = u128::from(self.num) * u128::from(rhs.den);
        let b = u128::from(rhs.num) * u128::from(self.den);
        Ratio::from_u128(
            a.checked_sub(b)?,
            u128::from(self.den) * u128::from(rhs.den),
        )
    }

    /// `max(self - rhs, 0)`.
    pub fn saturating_sub(self, rhs: Ratio) -> Ratio {
        self.checked_sub(rhs).unwrap_or(Ratio::ZERO)
    }

    /// `self · rhs`; `None` if the reduced result does not fit.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// // §6.1.1: 4 × 5 % = 20 %.
    /// assert_eq!(Ratio::integer(4).checked_mul(Ratio::percent(5)), Some(Ratio::percent(20)));
    /// ```
    pub fn checked_mul(self, rhs: Ratio) -> Option<Ratio> {
        Ratio::from_u128(
            u128::from(self.num) * u128::from(rhs.num),
            u128::from(self.den) * u128::from(rhs.den),
        )
    }

    /// `self / rhs`; `None` if `rhs` is 0 or on overflow.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// // §6.1.1: the reciprocal of the weight 0.3 is 10/3.
    /// assert_eq!(Ratio::ONE.checked_div(Ratio::percent(30)).unwrap().to_string(), "10/3");
    /// ```
    pub fn checked_div(self, rhs: Ratio) -> Option<Ratio> {
        Ratio::from_u128(
            u128::from(self.num) * u128::from(rhs.den),
            u128::from(self.den) * u128::from(rhs.num),
        )
    }

    /// The largest integer `<= self`.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// assert_eq!(Ratio::new(7, 2).unwrap().floor(), 3);
    /// ```
    pub const fn floor(self) -> u64 {
        self.num / self.den
    }

    /// The smallest integer `>= self`.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// assert_eq!(Ratio::new(7, 2).unwrap().ceil(), 4);
    /// ```
    pub const fn ceil(self) -> u64 {
        self.num.div_ceil(self.den)
    }

    /// The value as a float, for reports only (never in a decision).
    pub fn as_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// A percentage for people: exact when it is a whole number of percent
    /// (`"10%"`), otherwise rounded to hundredths and marked (`"≈33.33%"`).
    /// Integer arithmetic only.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::Ratio;
    /// assert_eq!(Ratio::new(1, 3).unwrap().percent_string(), "≈33.33%");
    /// assert_eq!(Ratio::new(7, 80).unwrap().percent_string(), "≈8.75%");
    /// assert_eq!(Ratio::integer(2).percent_string(), "200%");
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
}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, other: &Ratio) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ratio {
    fn cmp(&self, other: &Ratio) -> Ordering {
        // Both products are below 2^128: no overflow.
        (u128::from(self.num) * u128::from(other.den))
            .cmp(&(u128::from(other.num) * u128::from(self.den)))
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}
