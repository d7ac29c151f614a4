//! The values a sweep parameter takes: integers, exact decimals and text.
//!
//! Grid ranges such as `0.5..1.0 step 0.05` are computed in exact decimal
//! arithmetic, so that the tenth point is `0.95`, not `0.9500000000000002`,
//! and the CSV holds the numbers as the spec wrote them.

use std::cmp::Ordering;
use std::fmt;

/// A decimal number `mantissa / 10^scale`, exact.
#[derive(Clone, Copy, Debug)]
pub struct Decimal {
    mantissa: i128,
    scale: u32,
}

/// More decimal places than this are refused (they would not survive the
/// arithmetic in 128 bits for long ranges, and no sweep needs them).
pub const MAX_SCALE: u32 = 18;

impl Decimal {
    /// Parses `-12.345`, `0.05`, `1e-3` (the forms a TOML float's shortest
    /// text takes); `None` if it is not such a number.
    pub fn parse(text: &str) -> Option<Decimal> {
        let t = text.trim().replace('_', "");
        let (num, exp) = match t.split_once(['e', 'E']) {
            Some((n, e)) => (n.to_string(), e.parse::<i32>().ok()?),
            None => (t.clone(), 0),
        };
        let (neg, digits) = match num.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, num.strip_prefix('+').unwrap_or(&num)),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut mantissa: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            mantissa = mantissa
                .checked_mul(10)?
                .checked_add(i128::from(b - b'0'))?;
        }
        let mut scale = i64::try_from(frac.len()).ok()? - i64::from(exp);
        while scale < 0 {
            mantissa = mantissa.checked_mul(10)?;
            scale += 1;
        }
        let scale = u32::try_from(scale).ok()?;
        let mut d = Decimal { mantissa, scale };
        d.normalise();
        if d.scale > MAX_SCALE {
            return None;
        }
        if neg {
            d.mantissa = -d.mantissa;
        }
        Some(d)
    }

    pub fn from_int(i: i64) -> Decimal {
        Decimal {
            mantissa: i128::from(i),
            scale: 0,
        }
    }

    /// Drops trailing zero decimals: `0.50` is `0.5`.
    fn normalise(&mut self) {
        while self.scale > 0 && self.mantissa % 10 == 0 {
            self.mantissa /= 10;
            self.scale -= 1;
        }
    }

    fn rescaled(self, scale: u32) -> Option<i128> {
        self.mantissa
            .checked_mul(10i128.checked_pow(scale - self.scale)?)
    }

    /// `self + k * step`, exactly; `None` on overflow.
    pub fn add_times(self, step: Decimal, k: u64) -> Option<Decimal> {
        let scale = self.scale.max(step.scale);
        let m = self
            .rescaled(scale)?
            .checked_add(step.rescaled(scale)?.checked_mul(i128::from(k))?)?;
        let mut d = Decimal { mantissa: m, scale };
        d.normalise();
        Some(d)
    }

    /// How many of `self, self + step, ...` are at most `to` (`step > 0`,
    /// `to >= self`); `None` if that does not fit.
    pub fn steps_to(self, to: Decimal, step: Decimal) -> Option<u64> {
        let scale = self.scale.max(to.scale).max(step.scale);
        let span = to.rescaled(scale)?.checked_sub(self.rescaled(scale)?)?;
        let n = span.checked_div(step.rescaled(scale)?)?;
        u64::try_from(n).ok()?.checked_add(1)
    }

    pub fn is_positive(self) -> bool {
        self.mantissa > 0
    }

    /// The whole number, if it is one and fits.
    pub fn as_integer(self) -> Option<i64> {
        (self.scale == 0).then(|| i64::try_from(self.mantissa).ok())?
    }

    /// The nearest float (for the task-set generator's arithmetic).
    pub fn to_f64(self) -> f64 {
        // 10^scale (scale <= 18) is exact as a float: one rounding in all.
        self.mantissa as f64 / 10u64.pow(self.scale) as f64
    }

    /// `x` rounded half away from zero to `digits` decimal places.
    pub fn from_f64_rounded(x: f64, digits: u32) -> Option<Decimal> {
        let scaled = libm::round(x * 10u64.pow(digits) as f64);
        if !scaled.is_finite() || scaled.abs() > 1e30 {
            return None;
        }
        let mut d = Decimal {
            mantissa: scaled as i128,
            scale: digits,
        };
        d.normalise();
        Some(d)
    }
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Decimal {}
impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let scale = self.scale.max(other.scale);
        match (self.rescaled(scale), other.rescaled(scale)) {
            (Some(a), Some(b)) => a.cmp(&b),
            // Only astronomically large mantissas overflow: compare as floats.
            _ => self.to_f64().total_cmp(&other.to_f64()),
        }
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.mantissa < 0 { "-" } else { "" };
        let abs = self.mantissa.unsigned_abs();
        if self.scale == 0 {
            return write!(f, "{sign}{abs}");
        }
        let den = 10u128.pow(self.scale);
        let width = self.scale as usize;
        write!(f, "{sign}{}.{:0width$}", abs / den, abs % den)
    }
}

/// One parameter's value at one point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Decimal(Decimal),
    Text(String),
}

impl Value {
    /// The value as a number, if it is one (a text is one if it parses).
    pub fn as_decimal(&self) -> Option<Decimal> {
        match self {
            Value::Int(i) => Some(Decimal::from_int(*i)),
            Value::Decimal(d) => Some(*d),
            Value::Text(t) => Decimal::parse(t),
        }
    }

    /// The value as it goes into a TOML document edited by key path: an
    /// integer as an integer, a decimal or text as a string (scenario files
    /// write exact decimals as strings, `rate = "0.5"`, and durations as
    /// strings with a unit).
    pub fn to_toml(&self) -> toml_edit::Value {
        match self {
            Value::Int(i) => toml_edit::Value::from(*i),
            Value::Decimal(d) => toml_edit::Value::from(d.to_string()),
            Value::Text(t) => toml_edit::Value::from(t.as_str()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Text(t) => f.write_str(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_parse_and_print_exactly() {
        for (text, shown) in [
            ("0.05", "0.05"),
            ("0.50", "0.5"),
            ("-1.25", "-1.25"),
            ("3", "3"),
            ("1e-3", "0.001"),
            ("2.5e2", "250"),
        ] {
            assert_eq!(Decimal::parse(text).unwrap().to_string(), shown, "{text}");
        }
        for bad in ["", ".", "1.2.3", "abc", "1e", "--1"] {
            assert!(Decimal::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn ranges_add_without_drift() {
        let from = Decimal::parse("0.5").unwrap();
        let step = Decimal::parse("0.05").unwrap();
        let values: Vec<String> = (0..=10)
            .map(|k| from.add_times(step, k).unwrap().to_string())
            .collect();
        assert_eq!(values[9], "0.95");
        assert_eq!(values[10], "1");
        assert!(from.add_times(step, 10).unwrap() == Decimal::parse("1.0").unwrap());
    }
}
