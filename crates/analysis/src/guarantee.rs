//! The HLS guarantee language (Regehr & Stankovic, "HLS: A Framework for
//! Composing Soft Real-Time Schedulers", §4): the kinds of CPU service a
//! scheduler promises a virtual processor (VP), written as the paper writes
//! them (`RESBH 5, 33`, `PSBE 0.1, 22`, `ALL`).
//!
//! What each guarantee means (§4.2). "Receives" is about a VP that always
//! wants the CPU: a guarantee bounds what such a VP is given.
//!
//! - `ALL`: the whole processor, all the time (what the root receives).
//! - `NULL`: nothing (strictly best effort; what time sharing gives).
//! - `RESBH x, y` / `RESBS x, y` (*basic* reservation): there is a time `t`,
//!   chosen by the scheduler and not told to the VP, such that for every
//!   integer `i` the VP receives `x` units of CPU time during
//!   `[t + iy, t + (i+1)y]`.
//! - `RESCH x, y` / `RESCS x, y` (*continuous* reservation): for *every* `t`,
//!   the VP receives `x` units during `[t, t + y]`.
//! - The trailing `H` (*hard*) adds a cap: the VP receives *at most* `x` in
//!   each of those windows; `S` (*soft*) may receive more, best effort.
//! - `RESU r` (*uniformly slower processor*): for any two consecutive
//!   deadlines `d_n`, `d_{n+1}` that the consumer of the VP announces, it
//!   receives `r·(d_{n+1} − d_n)` during `[d_n, d_{n+1}]`. `r` is the only
//!   relative quantity (§4.1); everything else is absolute.
//! - `PSBE s, δ` (proportional share, bounded error): during any interval of
//!   length `t` the VP receives at least `s·t − δ`.
//! - `PS s`: a share `s` asymptotically, with no bound on the error.
//!
//! Representation. Amounts, periods and error terms are integer nanoseconds
//! ([`Duration`]); shares are exact fractions ([`Share`]), absolute (a
//! fraction of the whole CPU), except RESU's rate (§4.1).
//!
//! Text form. `KIND p1, p2`, the kind in any case. A bare time is in
//! milliseconds, as in the paper (`33`, `1.5`); a unit may be given
//! (`500us`, `2s`, `1.5ms`). A share is a decimal (`0.1`), a fraction
//! (`1/3`) or a percentage (`10%`), at most 1. A reservation's amount may not
//! exceed its period, and its period is not 0.
//!
//! Printing is conservative: the printed text parses back to a guarantee
//! that is never *stronger* than the value printed, and to the same value
//! whenever its numbers are exact at the printed precision. Times print in
//! milliseconds with at most 3 decimals (whole microseconds): an amount of a
//! soft reservation rounds *down*, an error term δ and the period of a soft
//! continuous reservation round *up*. Where no rounding is sound (the period
//! of a basic reservation, whose window grid cannot move; both numbers of a
//! hard reservation, whose cap would otherwise be broken), the exact value is
//! printed, with up to 6 decimals (whole nanoseconds). Shares print as
//! decimals with at most 4 places, rounded *down*: `1/3` prints `0.3333`.
//!
//! Conversions between guarantees (Table 2, Theorems 1–6, the SFQ rule of
//! §5.1) are in [`crate::rewrite`].

use hsched_core::{Duration, Share, ShareRange};
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Basic (the scheduler picks one window grid) or continuous (every window).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Shape {
    /// "there exists a time t such that for every integer i the VP will
    /// receive x units of CPU time during [t + iy, t + (i+1)y]".
    Basic,
    /// "for any time t, the thread will be scheduled for x time units during
    /// the time interval [t, t + y]".
    Continuous,
}

/// Whether the reservation also caps what the VP receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Limit {
    /// At most the reserved amount, as well as at least.
    Hard,
    /// At least the reserved amount; more on a best-effort basis.
    Soft,
}

/// A CPU reservation: `amount` in every `period` window (see [`Shape`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reservation {
    pub shape: Shape,
    pub limit: Limit,
    pub amount: Duration,
    pub period: Duration,
}

impl Reservation {
    /// The reservation's kind (`RESBH` …).
    pub fn kind(&self) -> Kind {
        Kind::reservation(self.shape, self.limit)
    }

    /// A reservation of the whole period (`x = y`) gives the VP everything,
    /// all the time: it is `ALL`, whatever its shape and limit.
    pub fn is_full(&self) -> bool {
        self.amount == self.period
    }
}

/// A guarantee: what a VP is promised for as long as it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Guarantee {
    /// The whole CPU (what the root receives for each processor).
    All,
    /// Nothing (best effort; what time sharing gives).
    Null,
    /// RESBH / RESBS / RESCH / RESCS x, y.
    Res(Reservation),
    /// RESU r: a uniformly slower processor running at rate `r` of the CPU;
    /// between consecutive deadlines d_n, d_{n+1} the child announces, it
    /// receives r·(d_{n+1} − d_n).
    Resu(Share),
    /// PSBE s, δ: over every interval of length t, at least s·t − δ.
    Psbe { share: Share, delta: Duration },
    /// PS s: share s asymptotically, no bound on the error.
    Ps(Share),
}

/// The kind of a guarantee, without its parameters (the rows and columns of
/// the paper's Table 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    All,
    Null,
    Resbh,
    Resbs,
    Resch,
    Rescs,
    Resu,
    Psbe,
    Ps,
}

impl Kind {
    /// Every kind, in the order of the paper's Table 2 (strongest first).
    pub const TABLE_ORDER: [Kind; 9] = [
        Kind::All,
        Kind::Resbh,
        Kind::Resbs,
        Kind::Resch,
        Kind::Rescs,
        Kind::Resu,
        Kind::Psbe,
        Kind::Ps,
        Kind::Null,
    ];

    /// The name as the paper writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::All => "ALL",
            Kind::Null => "NULL",
            Kind::Resbh => "RESBH",
            Kind::Resbs => "RESBS",
            Kind::Resch => "RESCH",
            Kind::Rescs => "RESCS",
            Kind::Resu => "RESU",
            Kind::Psbe => "PSBE",
            Kind::Ps => "PS",
        }
    }

    /// Parses a kind name, in any case (`RESBH`, `psbe`).
    pub fn parse(text: &str) -> Result<Kind, String> {
        let name = text.trim();
        Kind::TABLE_ORDER
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                format!(
                    "unknown guarantee `{name}` (expected ALL, NULL, RESBH, RESBS, RESCH, \
                     RESCS, RESU, PSBE or PS)"
                )
            })
    }

    /// The reservation kind with this shape and limit.
    pub const fn reservation(shape: Shape, limit: Limit) -> Kind {
        match (shape, limit) {
            (Shape::Basic, Limit::Hard) => Kind::Resbh,
            (Shape::Basic, Limit::Soft) => Kind::Resbs,
            (Shape::Continuous, Limit::Hard) => Kind::Resch,
            (Shape::Continuous, Limit::Soft) => Kind::Rescs,
        }
    }

    /// Shape and limit, for the four reservation kinds.
    pub const fn as_reservation(self) -> Option<(Shape, Limit)> {
        match self {
            Kind::Resbh => Some((Shape::Basic, Limit::Hard)),
            Kind::Resbs => Some((Shape::Basic, Limit::Soft)),
            Kind::Resch => Some((Shape::Continuous, Limit::Hard)),
            Kind::Rescs => Some((Shape::Continuous, Limit::Soft)),
            _ => None,
        }
    }

    /// What the parameters are called, in order (for messages).
    pub const fn parameters(self) -> &'static [&'static str] {
        match self {
            Kind::All | Kind::Null => &[],
            Kind::Resbh | Kind::Resbs | Kind::Resch | Kind::Rescs => &["amount", "period"],
            Kind::Resu => &["rate"],
            Kind::Psbe => &["share", "delta"],
            Kind::Ps => &["share"],
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(text: &str) -> Result<Kind, String> {
        Kind::parse(text)
    }
}

impl Guarantee {
    /// A reservation, checked: the period is not 0 and the amount does not
    /// exceed it.
    pub fn reservation(
        shape: Shape,
        limit: Limit,
        amount: Duration,
        period: Duration,
    ) -> Result<Guarantee, String> {
        let kind = Kind::reservation(shape, limit);
        if period.is_zero() {
            return Err(format!("{kind} period must be more than 0"));
        }
        if amount > period {
            return Err(format!(
                "{kind} amount {} exceeds its period {}",
                ms_exact(amount),
                ms_exact(period)
            ));
        }
        Ok(Guarantee::Res(Reservation {
            shape,
            limit,
            amount,
            period,
        }))
    }

    /// Parses the paper's text form: `RESBH 5, 33`, `psbe 0.1, 22`, `ALL`,
    /// `RESU 0.5`, `PS 25%`, `RESBS 500us, 2s`. Errors say what was expected.
    ///
    /// ```
    /// use hsched_analysis::guarantee::Guarantee;
    /// let g = Guarantee::parse("RESBH 5, 33").unwrap();
    /// assert_eq!(g.to_string(), "RESBH 5, 33");
    /// assert_eq!(Guarantee::parse("psbe 1/10, 22ms").unwrap().to_string(), "PSBE 0.1, 22");
    /// let err = Guarantee::parse("RESBH 5").unwrap_err();
    /// assert!(err.contains("RESBH takes two parameters: amount, period"), "{err}");
    /// ```
    pub fn parse(text: &str) -> Result<Guarantee, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(
                "empty guarantee (expected e.g. `RESBH 5, 33`, `PSBE 0.1, 22` or `ALL`)".into(),
            );
        }
        let (name, rest) = trimmed
            .split_once(char::is_whitespace)
            .unwrap_or((trimmed, ""));
        let kind = Kind::parse(name)?;
        let rest = rest.trim();
        let params: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(',').map(str::trim).collect()
        };
        let expected = kind.parameters();
        if params.len() != expected.len() || params.iter().any(|p| p.is_empty()) {
            let takes = match expected.len() {
                0 => "no parameters".to_string(),
                1 => format!("one parameter: {}", expected[0]),
                _ => format!(
                    "two parameters: {}, separated by a comma",
                    expected.join(", ")
                ),
            };
            return Err(format!("{kind} takes {takes} (in `{trimmed}`)"));
        }
        match kind {
            Kind::All => Ok(Guarantee::All),
            Kind::Null => Ok(Guarantee::Null),
            Kind::Resbh | Kind::Resbs | Kind::Resch | Kind::Rescs => {
                let (shape, limit) = kind.as_reservation().expect("a reservation kind");
                let amount = parse_time(kind, "amount", params[0])?;
                let period = parse_time(kind, "period", params[1])?;
                Guarantee::reservation(shape, limit, amount, period)
            }
            Kind::Resu => Ok(Guarantee::Resu(parse_share(kind, "rate", params[0])?)),
            Kind::Psbe => Ok(Guarantee::Psbe {
                share: parse_share(kind, "share", params[0])?,
                delta: parse_time(kind, "delta", params[1])?,
            }),
            Kind::Ps => Ok(Guarantee::Ps(parse_share(kind, "share", params[0])?)),
        }
    }

    /// The guarantee's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Guarantee::All => Kind::All,
            Guarantee::Null => Kind::Null,
            Guarantee::Res(r) => r.kind(),
            Guarantee::Resu(_) => Kind::Resu,
            Guarantee::Psbe { .. } => Kind::Psbe,
            Guarantee::Ps(_) => Kind::Ps,
        }
    }

    /// True for the hard reservations (RESBH, RESCH): those that also cap
    /// what the VP receives, so that a join above them must [`soften`] them.
    /// `ALL` is not called hard: it carries no cap anything could break.
    ///
    /// [`soften`]: Guarantee::soften
    pub fn is_hard(&self) -> bool {
        matches!(self, Guarantee::Res(r) if r.limit == Limit::Hard)
    }

    /// The soft form: RESBH → RESBS, RESCH → RESCS, anything else unchanged.
    /// This is what a join does to the guarantee it passes on (§5.1: it may
    /// give its child extra time, so it cannot keep an upper bound).
    pub fn soften(self) -> Guarantee {
        match self {
            Guarantee::Res(r) => Guarantee::Res(Reservation {
                limit: Limit::Soft,
                ..r
            }),
            other => other,
        }
    }

    /// The long-run fraction of the CPU promised: ALL 1, a reservation x/y,
    /// PSBE and PS their share, RESU its rate; NULL promises none.
    pub fn share(&self) -> Option<Share> {
        match *self {
            Guarantee::All => Some(Share::ONE),
            Guarantee::Null => None,
            Guarantee::Res(r) => Share::new(r.amount.as_nanos(), r.period.as_nanos()),
            Guarantee::Resu(r) => Some(r),
            Guarantee::Psbe { share, .. } | Guarantee::Ps(share) => Some(share),
        }
    }
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Guarantee::All => f.write_str("ALL"),
            Guarantee::Null => f.write_str("NULL"),
            Guarantee::Res(r) => {
                let amount = match r.limit {
                    Limit::Hard => ms_exact(r.amount),
                    Limit::Soft => ms_down(r.amount),
                };
                let period = match (r.shape, r.limit) {
                    (Shape::Continuous, Limit::Soft) => ms_up(r.period),
                    _ => ms_exact(r.period),
                };
                write!(f, "{} {amount}, {period}", r.kind())
            }
            Guarantee::Resu(rate) => write!(f, "RESU {}", share_down(rate)),
            Guarantee::Psbe { share, delta } => {
                write!(f, "PSBE {}, {}", share_down(share), ms_up(delta))
            }
            Guarantee::Ps(share) => write!(f, "PS {}", share_down(share)),
        }
    }
}

impl FromStr for Guarantee {
    type Err = String;
    fn from_str(text: &str) -> Result<Guarantee, String> {
        Guarantee::parse(text)
    }
}

// ---------------------------------------------------------------------------
// Text: times and shares
// ---------------------------------------------------------------------------

fn parse_time(kind: Kind, what: &str, text: &str) -> Result<Duration, String> {
    let s = text.trim();
    let bare = s
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == '_');
    let parsed = if bare {
        Duration::parse(&format!("{s}ms"))
    } else {
        Duration::parse(s)
    };
    parsed.map_err(|e| {
        format!(
            "{kind} {what}: {e}; expected a time (a bare number is milliseconds, \
             or give a unit: 500us, 1.5ms, 2s)"
        )
    })
}

/// A share of one CPU, read by the one share parser ([`Share::parse`]).
fn parse_share(kind: Kind, what: &str, text: &str) -> Result<Share, String> {
    Share::parse(text, ShareRange::AtMostOne).map_err(|e| format!("{kind} {what}: {e}"))
}

const NS_PER_US: u64 = 1_000;

/// Milliseconds with the fraction trimmed: `digits` decimals of `units`,
/// where `units` counts 10^-digits ms.
fn ms_units(units: u128, digits: u32) -> String {
    let scale = 10u128.pow(digits);
    let (whole, frac) = (units / scale, units % scale);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:0width$}", width = digits as usize);
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// The exact value in milliseconds (up to 6 decimals: whole nanoseconds).
pub(crate) fn ms_exact(d: Duration) -> String {
    ms_units(d.as_nanos().into(), 6)
}

/// Milliseconds rounded down to whole microseconds (for amounts).
pub(crate) fn ms_down(d: Duration) -> String {
    ms_units((d.as_nanos() / NS_PER_US).into(), 3)
}

/// Milliseconds rounded up to whole microseconds (for error terms and soft
/// continuous periods); exact if rounding up would not fit in 64 bits.
pub(crate) fn ms_up(d: Duration) -> String {
    let us = d.as_nanos().div_ceil(NS_PER_US);
    if us.checked_mul(NS_PER_US).is_none() {
        return ms_exact(d);
    }
    ms_units(us.into(), 3)
}

/// A share as a decimal, rounded down to 4 places, trimmed (`0.3333`, `1`).
pub(crate) fn share_down(r: Share) -> String {
    r.decimal(4)
}

// ---------------------------------------------------------------------------
// Exact arithmetic shared with `rewrite` (conservative rounding)
// ---------------------------------------------------------------------------

/// `num / den` nanoseconds rounded up, saturating at the largest duration
/// (a saturated error term is weaker than the truth, never stronger).
pub(crate) fn ns_ceil(num: u128, den: u128) -> Duration {
    Duration::from_nanos(u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX))
}

/// `a · b`, exact when it fits in 64-bit terms, otherwise rounded down to a
/// multiple of 2^-40 (a share is never rounded up).
pub(crate) fn mul_share_down(a: Share, b: Share) -> Share {
    if let Some(exact) = a.checked_mul(b) {
        return exact;
    }
    const DEN: u128 = 1 << 40;
    let num = u128::from(a.num()) * u128::from(b.num());
    let den = u128::from(a.den()) * u128::from(b.den());
    let scaled = num / den * DEN + (num % den) * DEN / den;
    Share::from_u128(scaled, DEN).unwrap_or(Share::ONE)
}

/// Compares `a/b` with `c/d` exactly for any 128-bit terms (`b, d > 0`), by
/// comparing integer parts and then the reciprocals of the remainders.
pub(crate) fn cmp_fractions(mut a: u128, mut b: u128, mut c: u128, mut d: u128) -> Ordering {
    let mut flipped = false;
    loop {
        let (qa, qc) = (a / b, c / d);
        if qa != qc {
            let order = qa.cmp(&qc);
            return if flipped { order.reverse() } else { order };
        }
        let (ra, rc) = (a % b, c % d);
        let order = match (ra == 0, rc == 0) {
            (true, true) => return Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => {
                // a/b = q + ra/b, c/d = q + rc/d: ra/b against rc/d is
                // b/ra against d/rc the other way round.
                (a, b, c, d) = (b, ra, d, rc);
                flipped = !flipped;
                continue;
            }
        };
        return if flipped { order.reverse() } else { order };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_compare_exactly() {
        assert_eq!(cmp_fractions(1, 3, 1, 3), Ordering::Equal);
        assert_eq!(cmp_fractions(1, 3, 333, 1000), Ordering::Greater);
        assert_eq!(cmp_fractions(2, 6, 1, 3), Ordering::Equal);
        assert_eq!(cmp_fractions(7, 2, 10, 3), Ordering::Greater);
        assert_eq!(cmp_fractions(0, 5, 1, u128::MAX), Ordering::Less);
        let big = u128::MAX;
        assert_eq!(
            cmp_fractions(big - 1, big, big - 2, big - 1),
            Ordering::Greater
        );
        assert_eq!(
            cmp_fractions(big, big - 1, big - 1, big - 2),
            Ordering::Less
        );
    }

    #[test]
    fn printing_rounds_the_safe_way() {
        assert_eq!(ms_down(Duration::from_nanos(1_999)), "0.001");
        assert_eq!(ms_up(Duration::from_nanos(1_001)), "0.002");
        assert_eq!(ms_exact(Duration::from_nanos(120_000_001)), "120.000001");
        assert_eq!(share_down(Share::new(2, 3).unwrap()), "0.6666");
        assert_eq!(share_down(Share::ONE), "1");
        assert_eq!(share_down(Share::ZERO), "0");
    }

    #[test]
    fn shares_multiply_down_when_they_do_not_fit() {
        let a = Share::new(u64::MAX - 1, u64::MAX).unwrap();
        let b = Share::new(u64::MAX - 2, u64::MAX - 1).unwrap();
        let p = mul_share_down(a, b);
        let exact = (
            u128::from(a.num()) * u128::from(b.num()),
            u128::from(a.den()) * u128::from(b.den()),
        );
        assert_ne!(
            cmp_fractions(u128::from(p.num()), u128::from(p.den()), exact.0, exact.1),
            Ordering::Greater
        );
        assert!(p > Share::new(999_999, 1_000_000).unwrap());
    }
}
