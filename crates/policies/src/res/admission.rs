//! `res`'s admission: what a child's parameters reserve, and whether the
//! exact sum of the utilizations still fits (one CPU's worth, or the
//! Goossens-Funk-Baruah bound in global mode).

use super::job::Kind;
use super::rate::Util;
use super::scheduler::Res;
use hsched_core::{ChildId, Duration, Instant, Params, Share, ShareRange, Value};
use std::collections::BTreeSet;

/// The reservation of a child that names none.
pub const DEFAULT_AMOUNT: Duration = Duration::from_millis(1);
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(10);

impl Res {
    /// Each overrun partition's part of the CPU no child has reserved.
    pub(super) fn spare_per_partition(&self) -> Util {
        Util::ONE
            .checked_sub(self.reserved)
            .map_or(Util::ZERO, |spare| {
                spare.div_int(self.partitions.max(1) as u128)
            })
    }

    /// Admits a child of utilization `new` (replacing `replacing`'s): the
    /// sum stays at most 1, or, in global mode on `vps` VPs, within the
    /// Goossens-Funk-Baruah bound `Σu <= m - (m-1) u_max`.
    pub(super) fn admit(
        &self,
        replacing: Option<ChildId>,
        new: Util,
        what: &str,
        vps: u32,
    ) -> Result<Util, String> {
        let wide = || {
            format!(
                "{what}: the exact sum of the utilizations does not fit 128-bit arithmetic \
                 (choose periods with common factors)"
            )
        };
        let old = replacing.map_or(Util::ZERO, |c| self.children[c].kind.util());
        let others = self.reserved.checked_sub(old).unwrap_or(self.reserved);
        let total = others.checked_add(new).ok_or_else(wide)?;
        if !self.global {
            if !total.at_most_one() {
                return Err(format!(
                    "{what} needs {new}, but {others} is already reserved: the total {total} would exceed 1"
                ));
            }
            return Ok(total);
        }
        let m = u128::from(vps.max(1));
        let mut max = new;
        for (c, child) in self.children.iter() {
            let u = child.kind.util();
            if Some(c) != replacing && u.checked_cmp(max).ok_or_else(wide)?.is_gt() {
                max = u;
            }
        }
        // Σu + (m-1) u_max <= m, exactly.
        let lhs = max
            .checked_mul_int(m - 1)
            .and_then(|x| x.checked_add(total))
            .ok_or_else(wide)?;
        if !lhs.at_most_int(m).ok_or_else(wide)? {
            return Err(format!(
                "{what} needs {new}, but {others} is already reserved: global EDF on {m} VPs admits \
                 Σu <= m - (m-1) u_max (Goossens, Funk & Baruah 2003) with u_max = {max}, and the \
                 total {total} would exceed it"
            ));
        }
        Ok(total)
    }

    pub(super) fn kind_from(params: &Params) -> Result<Kind, String> {
        let dur = |k: &str| match params.get(k) {
            Some(Value::Duration(d)) => *d,
            _ => Duration::ZERO,
        };
        let (amount, period) = (dur("amount"), dur("period"));
        let rate = match params.get("rate") {
            Some(Value::Str(s)) if !s.trim().is_empty() => Some(s.as_str()),
            _ => None,
        };
        match rate {
            Some(_) if !amount.is_zero() || !period.is_zero() => Err(
                "give either `amount` and `period` (a reservation) or `rate` (a uniformly slower processor), not both".into(),
            ),
            Some(r) => Ok(Kind::Usp {
                rate: Share::parse(r, ShareRange::Rate).map_err(|e| format!("`rate`: {e}"))?,
                upcoming: BTreeSet::new(),
            }),
            None => {
                let (amount, period) = if amount.is_zero() && period.is_zero() {
                    (DEFAULT_AMOUNT, DEFAULT_PERIOD)
                } else {
                    (amount, period)
                };
                Self::check_reservation(amount, period)?;
                Ok(Kind::Reserved {
                    amount,
                    period,
                    origin: Instant::ZERO,
                })
            }
        }
    }

    pub(super) fn check_reservation(amount: Duration, period: Duration) -> Result<(), String> {
        if amount.is_zero() || period.is_zero() {
            return Err(format!(
                "a reservation needs `amount` and `period` longer than zero (got {amount} per {period})"
            ));
        }
        if amount > period {
            return Err(format!(
                "`amount` ({amount}) exceeds `period` ({period}): a child cannot use more than one CPU"
            ));
        }
        Ok(())
    }
}
