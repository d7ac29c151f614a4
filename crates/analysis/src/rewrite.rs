//! Converting guarantees without a scheduler: the rewrite rules of Regehr &
//! Stankovic §5.2 (Table 2, Theorems 1–6), the supply bounds behind them,
//! and the SFQ rule of §5.1 (equation (1)).
//!
//! A rewrite `A → B` is sound when every allocation of CPU time that meets
//! `A` also meets `B` (§5.2). [`implies`] decides whether a guarantee can be
//! rewritten into one at least as strong as a wanted one and returns the
//! chain of [`Step`]s; [`strongest`] and [`to_reservation`] give the best
//! guarantee of a kind (or of a reservation period) that can be derived;
//! [`rewritable`] is Table 2 as data.
//!
//! Notation: a reservation has amount `x` and period `y` (`0 < y`,
//! `0 ≤ x ≤ y`); "supply" in an interval is the CPU time the VP receives in
//! it, for a VP that always wants the CPU.
//!
//! # Supply bounds
//!
//! **Lemma B (basic).** Under a basic reservation `x, y` every interval of
//! length `L` holds at least
//! `sbf_b(L) = min over m ∈ {⌊L/y⌋ − 1, ⌊L/y⌋}, m ≥ 0, of m·x + max(0, L − m·y − 2(y − x))`.
//!
//! *Proof.* Let `I` have length `L` and let `m` be the number of whole
//! grid windows `[t+iy, t+(i+1)y]` inside it. The rest of `I` is at most
//! two pieces, each inside a single grid window: a head of length `a₁` and
//! a tail of length `a₂` (either may be empty; if `I` lies inside one
//! window, `a₁ = L`, `a₂ = 0`), with `a₁, a₂ < y`. So `R = a₁ + a₂ =
//! L − m·y < 2y`, and `m` is `⌊L/y⌋` or `⌊L/y⌋ − 1`. Each whole window
//! gives `x`. A piece of length `a` of a grid window gives at least
//! `g(a) = max(0, a − (y − x))`: the window holds `x`, and at most `y − a` of
//! it lies outside the piece. `g` is convex, so
//! `g(a₁) + g(a₂) ≥ 2·g(R/2) = max(0, R − 2(y − x))`. ∎ The bound is tight:
//! the VP runs at the start of one window and at the end of the next (a
//! unit test checks it against that schedule for every `L`).
//!
//! **Lemma C (continuous).** Under a continuous reservation `x, y` every
//! interval of length `L = k·y + ρ` (`0 ≤ ρ < y`) holds at least
//! `sbf_c(L) = k·x + max(0, ρ − (y − x))`.
//!
//! *Proof.* `I` splits into `k` consecutive windows of length `y`, each with
//! at least `x`, and a remainder of length `ρ`. The `y`-window ending where
//! `I` ends holds at least `x`, of which at most `y − ρ` lies before the
//! remainder; so the remainder holds at least `x − (y − ρ)`. ∎ Tight for a
//! static schedule that runs `x` at the same offset every period.
//!
//! # The theorems (the forms that reproduce the paper's numbers)
//!
//! **Th. 1.** RESBS/RESBH `x, y` → RESCS `x, 2y − x + ε`, `ε > 0`.
//! *Proof.* Every window of length `L ≥ 2y − x` holds at least `x`: in
//! Lemma B each candidate with `m ≥ 1` is at least `x`, and the one with
//! `m = 0` is `max(0, L − 2(y − x)) ≥ 2y − x − 2y + 2x = x`. ∎ Here `ε` =
//! [`EPSILON`] = 1 ns, as the theorem asks for `ε > 0`; the proof shows
//! `ε = 0` would do too, and [`to_reservation`] uses Lemma B at any window
//! ("basic supply bound"), of which Th. 1 is one instance.
//!
//! **Th. 2.** No basic reservation `x, y` with `x < y` can be rewritten into
//! a continuous hard one. *Proof.* A hard continuous `x', y'` makes every
//! `y'`-window hold exactly `x'`, so `supply(t, t + y')` is constant in `t`
//! and the schedule is `y'`-periodic. A basic schedule that runs at offset 0
//! of every grid window except one, where it runs at offset `y − x > 0`,
//! meets RESBH `x, y` yet is periodic with no period when `0 < x < y` (its
//! tail forces the period to be a multiple of `y`, which the odd window
//! breaks). With `x = y` the reservation is ALL, which is RESCH `y, y`. ∎
//! (`implies` refuses with "Th. 2". A hard reservation of `x = 0`, which
//! never runs, is trivially RESCH `0, y` too; the rules do not use that.)
//!
//! **Th. 3.** RESCH/RESCS `x, y` → PSBE `x/y, (x/y)(y − x)`. *Proof.* With
//! `L = k·y + ρ`: `(x/y)(L − (y − x)) = k·x + (x/y)(ρ − (y − x))`, which is at
//! most `sbf_c(L)`: if `ρ ≤ y − x` the last term is `≤ 0`, otherwise it is
//! `(x/y)` times a positive number, at most that number. ∎
//!
//! **Th. 4.** RESBH/RESBS `x, y` → PSBE `x/y, 2(x/y)(y − x)`. *Proof.* For
//! each `m` of Lemma B, `(x/y)(L − 2(y − x)) = m·x + (x/y)(R − 2(y − x))`,
//! at most `m·x + max(0, R − 2(y − x))`; so at most `sbf_b(L)`. ∎
//! (RESBS 40, 80 → PSBE 0.5, 40, as in §5.3.)
//!
//! **Th. 5.** Any reservation `x, y` → PS `x/y`. *Proof.* By Th. 3 or Th. 4
//! the VP receives at least `(x/y)·L − δ` in any interval of length `L`, so
//! its share over long intervals tends to at least `x/y`. ∎
//!
//! **Th. 6.** PSBE `s, δ` → RESCS or RESBS `(y·s − δ), y`, any `y > δ/s`.
//! *Proof.* Every interval of length `y` holds at least `s·y − δ > 0`: that
//! is the continuous reservation, and a continuous reservation is basic
//! (any grid will do). ∎
//!
//! # The trivial rewrites (and what is not allowed)
//!
//! - **ALL** is every guarantee: RESCH `y, y` for any `y` (so any reservation
//!   of amount `y` and period `y`), PSBE `1, 0`, RESU `1`, PS `1`. ALL is not
//!   a hard reservation `x < y`: a rewrite cannot add a cap (the `res`
//!   scheduler does that, Table 1). Conversely a full reservation (`x = y`)
//!   and PSBE `1, 0` *are* ALL (every interval is wholly supplied).
//! - **Anything is NULL**, and anything is what promises nothing: a soft
//!   reservation of amount 0, a PSBE, PS or RESU of share 0 ("promises nothing").
//! - **Hard is soft** (drop the cap), **continuous is basic** (any grid).
//! - **weaken** within a kind:
//!   - basic soft `x, y` → `x', k·y` with `x' ≤ k·x` (same grid, `k` windows
//!     at a time); any other window via Lemma B.
//!   - hard `x, y` → `k·x, k·y` only: `k` consecutive windows hold exactly
//!     `k·x`; a shorter amount or another period would break the cap.
//!   - continuous soft `x, y` → `x', L` with `x' ≤ sbf_c(L)` (Lemma C).
//!   - PSBE `s, δ` → PSBE `s', δ'` when `s' ≤ s` and `δ' ≥ (s'/s)·δ`.
//!     *Proof.* Supply is never negative, so the VP gets at least
//!     `max(0, s·t − δ)`; for `t ≤ δ/s`, `s'·t − δ' ≤ (s'/s)δ − δ' ≤ 0`, and
//!     beyond, `s'·t − δ'` grows no faster than `s·t − δ` from a point below
//!     it. ∎ (This is more than the usual `δ' ≥ δ`; it is what makes Th. 4 at
//!     a smaller share exact: `2·s'·(y − x)` is Lemma B's tightest line.)
//!   - RESU `r` → RESU `r' ≤ r`; PS `s` → PS `s' ≤ s`.
//! - **PSBE is PS.**
//! - **RESU** becomes only RESU (weaker) and NULL. RESU promises service
//!   only between deadlines its consumer announces (§4.2); a thread, or a
//!   scheduler without deadlines, announces none and is promised nothing,
//!   so no window, share or error bound follows from RESU alone. The schedulers
//!   that use it do so by announcing deadlines (Table 1's `RESU →` entries),
//!   which is a scheduler conversion, not a rewrite. (This departs from any
//!   reading of Table 2 that lets RESU `r` become PS `r`.)
//! - **PS** becomes only PS (weaker) and NULL: it bounds no finite window.
//!
//! # Rounding
//!
//! Derived quantities round so that a derived guarantee is never stronger
//! than the truth: an error term δ rounds *up* to whole nanoseconds, an
//! amount or a share rounds *down* (a share only when an exact fraction does
//! not fit in 64 bits). Supply bounds are exact in integer nanoseconds.

use crate::guarantee::{cmp_fractions, ms_exact, mul_share_down, ns_ceil, Guarantee, Kind, Limit};
use crate::guarantee::{Reservation, Shape};
use hsched_core::{Duration, Share};
use std::cmp::Ordering;
use std::fmt;

/// The `ε` of Theorem 1: the smallest time there is, 1 ns.
pub const EPSILON: Duration = Duration::from_nanos(1);

/// The period [`strongest`] picks where any period would do (from ALL, or
/// from PSBE `s, 0`): 1 ms, the paper's unit.
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(1);

/// The names of the rules, as they appear in a [`Step`].
pub mod rule {
    pub const TH1: &str = "Th. 1";
    pub const TH3: &str = "Th. 3";
    pub const TH4: &str = "Th. 4";
    pub const TH5: &str = "Th. 5";
    pub const TH6: &str = "Th. 6";
    /// Lemma B at a window other than Th. 1's.
    pub const BASIC_SUPPLY: &str = "basic supply bound";
    pub const WEAKEN: &str = "weaken";
    pub const HARD_IS_SOFT: &str = "hard is soft";
    pub const CONTINUOUS_IS_BASIC: &str = "continuous is basic";
    pub const ALL_IS_RESERVATION: &str = "ALL is any reservation";
    pub const ALL_IS_RESU: &str = "ALL is RESU 1";
    pub const ALL_IS_PSBE: &str = "ALL is PSBE 1, 0";
    pub const ALL_IS_PS: &str = "ALL is PS 1";
    pub const FULL_IS_ALL: &str = "a full reservation is ALL";
    pub const PSBE_FULL_IS_ALL: &str = "PSBE 1, 0 is ALL";
    pub const PSBE_IS_PS: &str = "PSBE is PS";
    pub const TO_NULL: &str = "anything is NULL";
    /// A soft reservation of amount 0, or a share of 0: as empty as NULL.
    pub const NOTHING: &str = "promises nothing";
    pub const SAME: &str = "same kind";
    /// §5.1 equation (1), for callers that label an SFQ edge.
    pub const SFQ: &str = "SFQ rule (1)";
}

/// One rewrite: `from` becomes `to` by `rule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub rule: &'static str,
    pub from: Guarantee,
    pub to: Guarantee,
}

/// A chain of rewrites ending in `result` (no steps: `result` is what you
/// started with).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivation {
    pub result: Guarantee,
    pub steps: Vec<Step>,
}

impl Derivation {
    fn start(have: Guarantee) -> Derivation {
        Derivation {
            result: have,
            steps: Vec::new(),
        }
    }

    fn push(&mut self, rule: &'static str, to: Guarantee) {
        if to != self.result {
            self.steps.push(Step {
                rule,
                from: self.result,
                to,
            });
            self.result = to;
        }
    }

    /// Ends the chain at exactly `want`, which the caller has checked is
    /// implied by the current result.
    fn finish(mut self, want: Guarantee) -> Derivation {
        self.push(rule::WEAKEN, want);
        self
    }
}

/// `RESBS 40, 80 → PSBE 0.5, 40 [Th. 4] → PSBE 0.4, 50 [weaken]`.
impl fmt::Display for Derivation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.steps.first() {
            None => write!(f, "{}", self.result),
            Some(first) => {
                write!(f, "{}", first.from)?;
                for step in &self.steps {
                    write!(f, " → {} [{}]", step.to, step.rule)?;
                }
                Ok(())
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Supply bounds (Lemmas B and C)
// ---------------------------------------------------------------------------

/// Lemma B: the least CPU time a basic reservation `amount, period` gives in
/// any interval of length `window`.
///
/// ```
/// use hsched_analysis::rewrite::basic_supply;
/// use hsched_core::Duration;
/// let ms = Duration::from_millis;
/// assert_eq!(basic_supply(ms(40), ms(80), ms(120)), ms(40)); // Th. 1 (ε = 0)
/// assert_eq!(basic_supply(ms(40), ms(80), ms(80)), ms(0)); // 2(y − x) idle
/// assert_eq!(basic_supply(ms(3), ms(8), ms(19)), ms(4));
/// ```
pub fn basic_supply(amount: Duration, period: Duration, window: Duration) -> Duration {
    let (x, y, l) = (
        u128::from(amount.as_nanos()),
        u128::from(period.as_nanos()),
        u128::from(window.as_nanos()),
    );
    if y == 0 {
        return Duration::ZERO;
    }
    let x = x.min(y);
    let blackout = 2 * (y - x);
    let whole = l / y;
    let least = [whole.checked_sub(1), Some(whole)]
        .into_iter()
        .flatten()
        .map(|m| m * x + (l - m * y).saturating_sub(blackout))
        .min()
        .unwrap_or(0);
    // At most the window, which fits.
    Duration::from_nanos(u64::try_from(least).unwrap_or(u64::MAX))
}

/// Lemma C: the least CPU time a continuous reservation `amount, period`
/// gives in any interval of length `window`.
///
/// ```
/// use hsched_analysis::rewrite::continuous_supply;
/// use hsched_core::Duration;
/// let ms = Duration::from_millis;
/// assert_eq!(continuous_supply(ms(3), ms(8), ms(16)), ms(6));
/// assert_eq!(continuous_supply(ms(3), ms(8), ms(7)), ms(2));
/// assert_eq!(continuous_supply(ms(3), ms(8), ms(5)), ms(0));
/// ```
pub fn continuous_supply(amount: Duration, period: Duration, window: Duration) -> Duration {
    let (x, y, l) = (
        u128::from(amount.as_nanos()),
        u128::from(period.as_nanos()),
        u128::from(window.as_nanos()),
    );
    if y == 0 {
        return Duration::ZERO;
    }
    let x = x.min(y);
    let least = (l / y) * x + (l % y).saturating_sub(y - x);
    Duration::from_nanos(u64::try_from(least).unwrap_or(u64::MAX))
}

// ---------------------------------------------------------------------------
// Table 2
// ---------------------------------------------------------------------------

/// Table 2 as data: `Ok(rule)` when every guarantee of kind `from` can be
/// rewritten into one of kind `to`, `Err(reason)` when not (in general: a
/// full reservation `x = y` and PSBE `1, 0` are ALL, so they become anything).
pub fn table2(from: Kind, to: Kind) -> Result<&'static str, &'static str> {
    use Kind::*;
    const NOT_ALL: &str =
        "only ALL itself, a full reservation (x = y) or PSBE 1, 0 is ALL: anything else leaves the CPU idle at times";
    const NO_CAP: &str =
        "a soft guarantee has no upper bound, and a rewrite cannot add one (a limit scheduler can, Table 1)";
    const TH2: &str = "Th. 2: a basic reservation (x < y) is never a continuous hard one: its time may fall anywhere in each window of the scheduler's grid";
    const NO_WINDOW_RES: &str = "a reservation serves fixed windows, not the deadlines a RESU consumer announces (a USP scheduler provides RESU, Table 1)";
    const RESU_ALONE: &str = "RESU promises service only between deadlines its consumer announces; alone it bounds no window and no share (a deadline-based scheduler can use it, Table 1)";
    const PS_ALONE: &str =
        "PS promises a share only in the long run: it bounds no window and no error";
    const PSBE_NO_RESU: &str =
        "PSBE allows a deficit δ over every interval; RESU allows none between deadlines";
    const NULL_ALONE: &str = "NULL promises nothing";
    if from == to {
        return Ok(match from {
            All | Null => rule::SAME,
            _ => rule::WEAKEN,
        });
    }
    if to == Null {
        return Ok(rule::TO_NULL);
    }
    match (from, to) {
        (All, Resbh | Resbs | Resch | Rescs) => Ok(rule::ALL_IS_RESERVATION),
        (All, Resu) => Ok(rule::ALL_IS_RESU),
        (All, Psbe) => Ok(rule::ALL_IS_PSBE),
        (All, Ps) => Ok(rule::ALL_IS_PS),
        (_, All) => Err(NOT_ALL),

        (Resbh, Resbs) | (Resch, Rescs) => Ok(rule::HARD_IS_SOFT),
        (Resch, Resbh | Resbs) | (Rescs, Resbs) => Ok(rule::CONTINUOUS_IS_BASIC),
        (Resbh | Resbs, Rescs) => Ok(rule::TH1),
        (Resbh | Resbs, Resch) => Err(TH2),
        (Resbs | Rescs, Resbh | Resch) => Err(NO_CAP),
        (Resbh | Resbs, Psbe) => Ok(rule::TH4),
        (Resch | Rescs, Psbe) => Ok(rule::TH3),
        (Resbh | Resbs | Resch | Rescs, Ps) => Ok(rule::TH5),
        (Resbh | Resbs | Resch | Rescs, Resu) => Err(NO_WINDOW_RES),

        (Resu, _) => Err(RESU_ALONE),

        (Psbe, Resbs | Rescs) => Ok(rule::TH6),
        (Psbe, Resbh | Resch) => Err(NO_CAP),
        (Psbe, Ps) => Ok(rule::PSBE_IS_PS),
        (Psbe, Resu) => Err(PSBE_NO_RESU),

        (Ps, _) => Err(PS_ALONE),
        (Null, _) => Err(NULL_ALONE),
        // Every pair is listed above; this arm only satisfies the compiler.
        _ => Err("no rewrite"),
    }
}

/// Table 2 as data: `Some(rule)` when the conversion is feasible (for every
/// guarantee of kind `from`), `None` when it is not; [`why_not`] says why.
///
/// ```
/// use hsched_analysis::guarantee::Kind;
/// use hsched_analysis::rewrite::{rewritable, why_not};
/// assert_eq!(rewritable(Kind::Resbs, Kind::Psbe), Some("Th. 4"));
/// assert_eq!(rewritable(Kind::Resbh, Kind::Resch), None);
/// assert!(why_not(Kind::Resbh, Kind::Resch).unwrap().starts_with("Th. 2"));
/// ```
pub fn rewritable(from: Kind, to: Kind) -> Option<&'static str> {
    table2(from, to).ok()
}

/// Why [`rewritable`]`(from, to)` is `None` (naming the theorem where there
/// is one); `None` when the conversion is feasible.
pub fn why_not(from: Kind, to: Kind) -> Option<&'static str> {
    table2(from, to).err()
}

// ---------------------------------------------------------------------------
// Derivations
// ---------------------------------------------------------------------------

fn res(shape: Shape, limit: Limit, amount: Duration, period: Duration) -> Guarantee {
    Guarantee::Res(Reservation {
        shape,
        limit,
        amount,
        period,
    })
}

/// A reservation built by hand (not by [`Guarantee::reservation`] or the
/// parser) may have period 0 or an amount above it: such a thing promises
/// nothing the rules can use.
fn well_formed(g: &Guarantee) -> bool {
    !matches!(g, Guarantee::Res(r) if r.period.is_zero() || r.amount > r.period)
}

/// A guarantee that is NULL in all but name: a soft reservation of amount
/// 0, or a share of 0 (a hard reservation of 0 still caps).
fn promises_nothing(g: &Guarantee) -> bool {
    match *g {
        Guarantee::Null => true,
        Guarantee::Res(r) => r.limit == Limit::Soft && r.amount.is_zero() && !r.period.is_zero(),
        Guarantee::Resu(share) | Guarantee::Ps(share) | Guarantee::Psbe { share, .. } => {
            share.is_zero()
        }
        Guarantee::All => false,
    }
}

/// `have` rewritten to ALL, if it is ALL in disguise.
fn to_all(have: &Guarantee) -> Option<Derivation> {
    let mut d = Derivation::start(*have);
    match *have {
        Guarantee::All => {}
        Guarantee::Res(r) if r.is_full() => d.push(rule::FULL_IS_ALL, Guarantee::All),
        Guarantee::Psbe { share, delta } if share == Share::ONE && delta.is_zero() => {
            d.push(rule::PSBE_FULL_IS_ALL, Guarantee::All)
        }
        _ => return None,
    }
    Some(d)
}

/// Th. 3 (continuous) or Th. 4 (basic): the PSBE of a reservation.
fn reservation_psbe(r: Reservation) -> Guarantee {
    let (x, y) = (
        r.amount.as_nanos().min(r.period.as_nanos()),
        r.period.as_nanos(),
    );
    let share = Share::new(x, y).expect("a reservation's period is not 0");
    let lag = u128::from(x) * u128::from(y - x);
    let lag = match r.shape {
        Shape::Continuous => lag,
        Shape::Basic => 2 * lag,
    };
    Guarantee::Psbe {
        share,
        delta: ns_ceil(lag, u128::from(y)),
    }
}

/// Does PSBE `s, δ` imply PSBE `s2, δ2` (`s2 ≤ s`, `δ2·s ≥ s2·δ`)?
fn psbe_covers(s: Share, delta: Duration, s2: Share, delta2: Duration) -> bool {
    s2 <= s
        && cmp_fractions(
            u128::from(delta2.as_nanos()) * u128::from(s.num()),
            u128::from(s.den()),
            u128::from(s2.num()) * u128::from(delta.as_nanos()),
            u128::from(s2.den()),
        ) != Ordering::Less
}

/// The best reservation of the given shape, limit and period derivable
/// from `have`: the largest amount for a soft one, and for a hard one the
/// only amount that keeps the cap. `None` when none can be derived, or
/// (for a soft one) only one of amount 0.
///
/// - from ALL (or ALL in disguise): `period, period`;
/// - from a hard reservation, to a hard one: a period that is a multiple
///   `k·y` of its own, amount `k·x` (basic from basic or continuous,
///   continuous only from continuous: Th. 2);
/// - from a reservation to a soft one: Lemma C for a continuous one; for a
///   basic one `k·x` at a multiple `k·y` of the period (same grid) when
///   asking for a basic reservation, otherwise Lemma B (Th. 1 at `2y − x + ε`);
/// - from PSBE `s, δ` to a soft one: Th. 6, `period·s − δ` (rounded down).
///
/// ```
/// use hsched_analysis::guarantee::{Guarantee, Limit, Shape};
/// use hsched_analysis::rewrite::to_reservation;
/// use hsched_core::Duration;
/// let psbe: Guarantee = "PSBE 0.5, 40".parse().unwrap();
/// let d = to_reservation(&psbe, Shape::Basic, Limit::Soft, Duration::from_millis(100)).unwrap();
/// assert_eq!(d.result.to_string(), "RESBS 10, 100");
/// assert_eq!(d.steps[0].rule, "Th. 6");
/// ```
pub fn to_reservation(
    have: &Guarantee,
    shape: Shape,
    limit: Limit,
    period: Duration,
) -> Option<Derivation> {
    if period.is_zero() || !well_formed(have) {
        return None;
    }
    let mut d = to_all(have).unwrap_or_else(|| Derivation::start(*have));
    match d.result {
        Guarantee::All => {
            d.push(rule::ALL_IS_RESERVATION, res(shape, limit, period, period));
            Some(d)
        }
        Guarantee::Res(r) => {
            let (x, y, l) = (r.amount, r.period, period);
            let multiple = (l.as_nanos() % y.as_nanos() == 0).then(|| l.as_nanos() / y.as_nanos());
            if limit == Limit::Hard {
                let k = multiple?;
                if r.limit != Limit::Hard || (shape == Shape::Continuous && r.shape == Shape::Basic)
                {
                    return None;
                }
                if shape != r.shape {
                    d.push(rule::CONTINUOUS_IS_BASIC, res(shape, Limit::Hard, x, y));
                }
                d.push(rule::WEAKEN, res(shape, Limit::Hard, x.checked_mul(k)?, l));
                return Some(d);
            }
            d.push(rule::HARD_IS_SOFT, res(r.shape, Limit::Soft, x, y));
            match (r.shape, shape, multiple) {
                (Shape::Basic, Shape::Basic, Some(k)) => {
                    d.push(
                        rule::WEAKEN,
                        res(Shape::Basic, Limit::Soft, x.checked_mul(k)?, l),
                    );
                }
                (Shape::Basic, _, _) => {
                    let amount = basic_supply(x, y, l);
                    if amount.is_zero() {
                        return None;
                    }
                    let th1 = y.checked_mul(2).map(|two_y| two_y - x + EPSILON) == Some(l);
                    let name = if th1 { rule::TH1 } else { rule::BASIC_SUPPLY };
                    d.push(name, res(Shape::Continuous, Limit::Soft, amount, l));
                    d.push(
                        rule::CONTINUOUS_IS_BASIC,
                        res(shape, Limit::Soft, amount, l),
                    );
                }
                (Shape::Continuous, _, _) => {
                    let amount = continuous_supply(x, y, l);
                    if amount.is_zero() {
                        return None;
                    }
                    d.push(rule::WEAKEN, res(Shape::Continuous, Limit::Soft, amount, l));
                    d.push(
                        rule::CONTINUOUS_IS_BASIC,
                        res(shape, Limit::Soft, amount, l),
                    );
                }
            }
            Some(d)
        }
        Guarantee::Psbe { share, delta } => {
            if limit == Limit::Hard {
                return None;
            }
            // Th. 6: ⌊period·s⌋ − δ = ⌊period·s − δ⌋, positive iff period > δ/s
            // in whole nanoseconds.
            let supplied =
                u128::from(period.as_nanos()) * u128::from(share.num()) / u128::from(share.den());
            let amount = supplied.checked_sub(u128::from(delta.as_nanos()))?;
            if amount == 0 {
                return None;
            }
            let amount = Duration::from_nanos(u64::try_from(amount).ok()?);
            d.push(rule::TH6, res(shape, Limit::Soft, amount, period));
            Some(d)
        }
        _ => None,
    }
}

/// The period [`strongest`] uses for a reservation of `shape` from `have`:
/// a reservation keeps its own period, except that a basic one asked to be
/// continuous takes Th. 1's `2y − x + ε`; PSBE `s, δ` takes `2δ/s`
/// (rounded up: Th. 6 then gives amount `δ`, half the share); ALL and
/// PSBE `s, 0` take [`DEFAULT_PERIOD`].
fn natural_period(have: &Guarantee, shape: Shape) -> Option<Duration> {
    match *have {
        Guarantee::All => Some(DEFAULT_PERIOD),
        Guarantee::Res(r) if r.is_full() => Some(r.period),
        Guarantee::Res(r) => match (r.shape, shape) {
            (Shape::Basic, Shape::Continuous) => {
                r.period.checked_mul(2).map(|p| p - r.amount + EPSILON)
            }
            _ => Some(r.period),
        },
        Guarantee::Psbe { share, delta } => {
            if share.is_zero() {
                None
            } else if delta.is_zero() {
                Some(DEFAULT_PERIOD)
            } else {
                let num = 2 * u128::from(delta.as_nanos()) * u128::from(share.den());
                let period = ns_ceil(num, u128::from(share.num()));
                (period != Duration::MAX).then_some(period)
            }
        }
        _ => None,
    }
}

/// The strongest guarantee of `kind` derivable from `have`, with its steps;
/// `None` when there is none (see [`why_not`]).
///
/// For PSBE, PS and RESU the answer is the strongest outright (for PSBE the
/// derivable set is every `s' ≤ s`, `δ' ≥ (s'/s)·δ`, so one guarantee tops
/// it). A reservation's period is free, so this picks the natural one (see
/// [`to_reservation`] for a given period): a reservation keeps its period;
/// a basic one made continuous takes Th. 1's `2y − x + ε`; from PSBE `s, δ`
/// the period is `2δ/s` (Th. 6 amount `δ`, half the share); from ALL,
/// [`DEFAULT_PERIOD`].
///
/// ```
/// use hsched_analysis::guarantee::{Guarantee, Kind};
/// use hsched_analysis::rewrite::strongest;
/// let g: Guarantee = "RESBS 40, 80".parse().unwrap();
/// assert_eq!(strongest(&g, Kind::Psbe).unwrap().result.to_string(), "PSBE 0.5, 40");
/// assert_eq!(strongest(&g, Kind::Rescs).unwrap().result.to_string(), "RESCS 40, 120.001");
/// assert!(strongest(&g, Kind::Resch).is_none()); // Th. 2
/// ```
pub fn strongest(have: &Guarantee, kind: Kind) -> Option<Derivation> {
    if !well_formed(have) {
        return (kind == Kind::Null).then(|| Derivation {
            result: Guarantee::Null,
            steps: vec![Step {
                rule: rule::TO_NULL,
                from: *have,
                to: Guarantee::Null,
            }],
        });
    }
    let mut d = Derivation::start(*have);
    match kind {
        Kind::Null => {
            d.push(rule::TO_NULL, Guarantee::Null);
            Some(d)
        }
        Kind::All => to_all(have),
        Kind::Resu => {
            if let Guarantee::Resu(_) = have {
                return Some(d);
            }
            let mut d = to_all(have)?;
            d.push(rule::ALL_IS_RESU, Guarantee::Resu(Share::ONE));
            Some(d)
        }
        Kind::Ps => {
            match *have {
                Guarantee::All => d.push(rule::ALL_IS_PS, Guarantee::Ps(Share::ONE)),
                Guarantee::Res(_) => d.push(rule::TH5, Guarantee::Ps(have.share()?)),
                Guarantee::Psbe { share, .. } => d.push(rule::PSBE_IS_PS, Guarantee::Ps(share)),
                Guarantee::Ps(_) => {}
                Guarantee::Resu(_) | Guarantee::Null => return None,
            }
            Some(d)
        }
        Kind::Psbe => {
            match *have {
                Guarantee::All => d.push(
                    rule::ALL_IS_PSBE,
                    Guarantee::Psbe {
                        share: Share::ONE,
                        delta: Duration::ZERO,
                    },
                ),
                Guarantee::Res(r) => {
                    let theorem = match r.shape {
                        Shape::Continuous => rule::TH3,
                        Shape::Basic => rule::TH4,
                    };
                    d.push(theorem, reservation_psbe(r));
                }
                Guarantee::Psbe { .. } => {}
                _ => return None,
            }
            Some(d)
        }
        Kind::Resbh | Kind::Resbs | Kind::Resch | Kind::Rescs => {
            let (shape, limit) = kind.as_reservation()?;
            to_reservation(have, shape, limit, natural_period(have, shape)?)
        }
    }
}

/// Can `have` be rewritten into something at least as strong as `want`?
/// `Ok` carries the steps, ending at exactly `want` (the last step is
/// "weaken" when `want` is weaker than what the rules give); `Err` says why
/// not, naming the theorem where one applies (e.g. "Th. 2").
///
/// ```
/// use hsched_analysis::guarantee::Guarantee;
/// use hsched_analysis::rewrite::implies;
/// let g = |s: &str| s.parse::<Guarantee>().unwrap();
/// let d = implies(&g("RESBH 40, 80"), &g("PSBE 0.4, 50")).unwrap();
/// assert_eq!(
///     d.to_string(),
///     "RESBH 40, 80 → PSBE 0.5, 40 [Th. 4] → PSBE 0.4, 50 [weaken]"
/// );
/// assert!(implies(&g("RESBS 40, 80"), &g("RESCH 40, 80")).unwrap_err().contains("Th. 2"));
/// ```
pub fn implies(have: &Guarantee, want: &Guarantee) -> Result<Derivation, String> {
    if have == want {
        return Ok(Derivation::start(*have));
    }
    if promises_nothing(want) {
        let mut d = Derivation::start(*have);
        d.push(rule::NOTHING, *want);
        return Ok(d);
    }
    let refuse = |detail: String| Err(format!("{have} does not give {want}: {detail}"));
    let kind_reason = || {
        why_not(have.kind(), want.kind())
            .unwrap_or("no rule applies")
            .to_string()
    };
    match *want {
        Guarantee::Null => Ok(strongest(have, Kind::Null).expect("anything is NULL")),
        Guarantee::All => to_all(have).map_or_else(|| refuse(kind_reason()), Ok),
        Guarantee::Ps(wanted) => {
            let Some(d) = strongest(have, Kind::Ps) else {
                return refuse(kind_reason());
            };
            match d.result {
                Guarantee::Ps(share) if wanted <= share => Ok(d.finish(*want)),
                best => refuse(format!("the most it gives is {best}")),
            }
        }
        Guarantee::Resu(wanted) => {
            let Some(d) = strongest(have, Kind::Resu) else {
                return refuse(kind_reason());
            };
            match d.result {
                Guarantee::Resu(rate) if wanted <= rate => Ok(d.finish(*want)),
                best => refuse(format!("the most it gives is {best}")),
            }
        }
        Guarantee::Psbe { share, delta } => {
            let Some(d) = strongest(have, Kind::Psbe) else {
                return refuse(kind_reason());
            };
            match d.result {
                Guarantee::Psbe {
                    share: s,
                    delta: lag,
                } if psbe_covers(s, lag, share, delta) => Ok(d.finish(*want)),
                best => refuse(format!(
                    "the most it gives is {best}{}, which covers PSBE s', δ' only for s' ≤ s and δ' ≥ (s'/s)·δ",
                    d.steps.last().map(|s| format!(" ({})", s.rule)).unwrap_or_default()
                )),
            }
        }
        Guarantee::Res(w) => {
            if !well_formed(want) {
                return refuse(
                    "a reservation needs a period above 0 and an amount within it".into(),
                );
            }
            if let Some(d) = to_reservation(have, w.shape, w.limit, w.period) {
                let Guarantee::Res(got) = d.result else {
                    unreachable!("to_reservation gives a reservation")
                };
                let enough = match w.limit {
                    Limit::Hard => got.amount == w.amount,
                    Limit::Soft => got.amount >= w.amount,
                };
                if enough {
                    return Ok(d.finish(*want));
                }
                let how = match (w.limit, got.is_full()) {
                    (Limit::Hard, true) => {
                        "a rewrite cannot cap the whole CPU below itself (a reservation scheduler such as res does that, Table 1)"
                    }
                    (Limit::Hard, false) => {
                        "a hard reservation keeps its cap only at exactly that amount"
                    }
                    (Limit::Soft, _) => "that is less than asked",
                };
                return refuse(format!(
                    "over a period of {} ms it gives {}{}; {how}",
                    ms_exact(w.period),
                    d.result,
                    d.steps
                        .last()
                        .map(|s| format!(" ({})", s.rule))
                        .unwrap_or_default()
                ));
            }
            match (*have, w.limit) {
                (Guarantee::Res(r), _) if r.shape == Shape::Basic && w.kind() == Kind::Resch => {
                    refuse(kind_reason())
                }
                (Guarantee::Res(r), Limit::Hard) if r.limit == Limit::Hard => refuse(format!(
                    "a hard reservation keeps its cap only over whole multiples of its period ({} ms)",
                    ms_exact(r.period)
                )),
                (Guarantee::Res(r), Limit::Soft) => refuse(format!(
                    "a window of {} ms may hold none of it (a basic reservation can leave 2(y − x) = {} ms idle, a continuous one y − x)",
                    ms_exact(w.period),
                    ms_exact(r.period.saturating_sub(r.amount).checked_mul(2).unwrap_or(Duration::MAX))
                )),
                (Guarantee::Psbe { share, delta }, Limit::Soft) => refuse(format!(
                    "Th. 6 needs a period longer than δ/s = {} ms",
                    if share.is_zero() {
                        "∞".to_string()
                    } else {
                        ms_exact(ns_ceil(
                            u128::from(delta.as_nanos()) * u128::from(share.den()),
                            u128::from(share.num()),
                        ))
                    }
                )),
                _ => refuse(kind_reason()),
            }
        }
    }
}

/// The SFQ rule (§5.1, equation (1), after Goyal et al.): an SFQ scheduler
/// with quantum `quantum` and `threads` threads in all, itself receiving
/// PSBE `parent_share, parent_delta`, gives a thread whose weight is the
/// fraction `weight` of all weights PSBE `s·r, r·δ + r·T·q + q`.
///
/// Goyal et al. show that under a fluctuation-constrained server `(s, δ)`
/// each SFQ flow `f` is one too, with share `r_f·s` and error
/// `r_f·δ + r_f·Σₙ lₙ + l_f` where `lₙ` is flow `n`'s largest quantum; with
/// one quantum size `q` for all `T` threads the sum is `T·q` (the paper's
/// simplification). The result is rounded the safe way: the share down
/// (only if it does not fit exactly), δ up.
///
/// ```
/// use hsched_core::Share;
/// use hsched_analysis::rewrite::sfq_child;
/// use hsched_core::Duration;
/// let ms = Duration::from_millis;
/// // Fig. 3: PS under PSBE 0.5, 40 with q = 10 ms and two threads.
/// let g = sfq_child(Share::new(1, 2).unwrap(), ms(40), ms(10), 2, Share::new(1, 5).unwrap());
/// assert_eq!(g.to_string(), "PSBE 0.1, 22");
/// ```
pub fn sfq_child(
    parent_share: Share,
    parent_delta: Duration,
    quantum: Duration,
    threads: u64,
    weight: Share,
) -> Guarantee {
    let share = mul_share_down(parent_share, weight);
    let q = u128::from(quantum.as_nanos());
    // r·(δ + T·q) + q, rounded up; saturating is weaker, never stronger.
    let lag = u128::from(parent_delta.as_nanos()) + u128::from(threads) * q;
    let delta = lag
        .checked_mul(u128::from(weight.num()))
        .map(|num| ns_ceil(num, u128::from(weight.den())))
        .unwrap_or(Duration::MAX)
        .saturating_add(quantum);
    Guarantee::Psbe { share, delta }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Lemma B against a brute force over every window start, on the worst
    /// schedule (run at the start of one window, at the end of the next).
    #[test]
    fn basic_supply_is_tight() {
        for (x, y) in [(3u64, 8u64), (1, 10), (5, 6), (4, 8), (0, 5), (7, 7)] {
            // Busy: [0, x), then [2y − x, 2y), then every later window at its end.
            let busy = |t: u64| {
                let (w, off) = (t / y, t % y);
                if w == 0 {
                    off < x
                } else {
                    off >= y - x
                }
            };
            for l in 0..5 * y {
                let least = (0..3 * y)
                    .map(|a| (a..a + l).filter(|&t| busy(t)).count() as u64)
                    .min()
                    .unwrap();
                assert_eq!(
                    basic_supply(ms(x), ms(y), ms(l)),
                    ms(least),
                    "x={x} y={y} L={l}"
                );
            }
        }
    }

    #[test]
    fn continuous_supply_is_tight() {
        for (x, y) in [(3u64, 8u64), (1, 10), (5, 6), (0, 5), (7, 7)] {
            let busy = |t: u64| t % y < x;
            for l in 0..4 * y {
                let least = (0..2 * y)
                    .map(|a| (a..a + l).filter(|&t| busy(t)).count() as u64)
                    .min()
                    .unwrap();
                assert_eq!(
                    continuous_supply(ms(x), ms(y), ms(l)),
                    ms(least),
                    "x={x} y={y} L={l}"
                );
            }
        }
    }

    #[test]
    fn psbe_weakening_is_proportional() {
        let half = Share::new(1, 2).unwrap();
        let two_fifths = Share::new(2, 5).unwrap();
        assert!(psbe_covers(half, ms(40), two_fifths, ms(32)));
        assert!(!psbe_covers(half, ms(40), two_fifths, ms(32) - EPSILON));
        assert!(!psbe_covers(two_fifths, ms(0), half, ms(100)));
        assert!(psbe_covers(Share::ZERO, ms(5), Share::ZERO, ms(0)));
    }
}
