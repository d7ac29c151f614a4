//! Checking a guarantee against a schedule: what a VP actually received,
//! as busy intervals in integer nanoseconds, measured against the promises
//! of §4.2 (Regehr & Stankovic). The rewrite rules' property tests use it,
//! and anything holding a trace (the simulator) can use it to confirm that
//! an edge labelled with a guarantee really got it.
//!
//! Every check is exact and looks only where an extreme can be:
//!
//! - the least (or most) supply over windows of a fixed length `L`:
//!   `a ↦ supply(a, a + L)` is piecewise linear and bends only where `a` or
//!   `a + L` meets a busy-interval boundary, so its extremes are at such an
//!   `a` or at the ends of the range;
//! - the worst PSBE deficit `s·(b − a) − supply(a, b)`: it grows as `a`
//!   moves back through idle time or forward through busy time, so the worst
//!   `a` is the end of a busy interval (or the range start); symmetrically
//!   the worst `b` is the start of one (or the range end). One sweep over
//!   those points finds it.
//!
//! Limits: a finite schedule over a finite range; a guarantee is about all
//! time, so a check says "not violated within the range".

use hsched_core::Share;
use std::cmp::Ordering;

/// A schedule: disjoint busy intervals `[start, end)`, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    busy: Vec<(u64, u64)>,
    /// `before[i]`: busy time in the intervals before `busy[i]`.
    before: Vec<u64>,
}

/// The worst window found by a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: u64,
    pub end: u64,
    /// Busy time in `[start, end)`.
    pub supply: u64,
}

impl Schedule {
    /// Builds a schedule from intervals in any order; touching intervals are
    /// merged, empty ones dropped. Overlapping or reversed intervals are an
    /// error (a VP cannot run twice at once).
    pub fn new(intervals: impl IntoIterator<Item = (u64, u64)>) -> Result<Schedule, String> {
        let mut spans: Vec<(u64, u64)> = intervals.into_iter().collect();
        if let Some(&(s, e)) = spans.iter().find(|(s, e)| s > e) {
            return Err(format!("busy interval [{s}, {e}) ends before it starts"));
        }
        spans.retain(|(s, e)| s < e);
        spans.sort_unstable();
        let mut busy: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
        for (s, e) in spans {
            match busy.last_mut() {
                Some(last) if s < last.1 => {
                    return Err(format!(
                        "busy intervals [{}, {}) and [{s}, {e}) overlap",
                        last.0, last.1
                    ))
                }
                Some(last) if s == last.1 => last.1 = e,
                _ => busy.push((s, e)),
            }
        }
        let mut before = Vec::with_capacity(busy.len());
        let mut total = 0u64;
        for &(s, e) in &busy {
            before.push(total);
            total += e - s;
        }
        Ok(Schedule { busy, before })
    }

    /// The merged busy intervals.
    pub fn intervals(&self) -> &[(u64, u64)] {
        &self.busy
    }

    /// Busy time in `[0, t)`.
    fn cumulative(&self, t: u64) -> u64 {
        // The first interval starting at or after t is not counted.
        let i = self.busy.partition_point(|&(s, _)| s < t);
        if i == 0 {
            return 0;
        }
        let (s, e) = self.busy[i - 1];
        self.before[i - 1] + (e.min(t) - s)
    }

    /// Busy time in `[a, b)`.
    pub fn supply(&self, a: u64, b: u64) -> u64 {
        if b <= a {
            return 0;
        }
        self.cumulative(b) - self.cumulative(a)
    }

    /// Starts `a` of the windows `[a, a + len)` inside `[from, to)` where
    /// the supply can be least or most.
    fn window_starts(&self, len: u64, from: u64, to: u64) -> Vec<u64> {
        let Some(last) = to.checked_sub(len).filter(|&last| last >= from) else {
            return Vec::new();
        };
        let mut starts = vec![from, last];
        for &(s, e) in &self.busy {
            for edge in [s, e] {
                starts.push(edge);
                starts.extend(edge.checked_sub(len));
            }
        }
        starts.retain(|&a| (from..=last).contains(&a));
        starts
    }

    /// The window `[a, a + len)` inside `[from, to)` with the least supply;
    /// `None` if no such window fits.
    pub fn least_window(&self, len: u64, from: u64, to: u64) -> Option<Window> {
        self.window_starts(len, from, to)
            .into_iter()
            .map(|a| Window {
                start: a,
                end: a + len,
                supply: self.supply(a, a + len),
            })
            .min_by_key(|w| (w.supply, w.start))
    }

    /// The window `[a, a + len)` inside `[from, to)` with the most supply.
    pub fn most_window(&self, len: u64, from: u64, to: u64) -> Option<Window> {
        self.window_starts(len, from, to)
            .into_iter()
            .map(|a| Window {
                start: a,
                end: a + len,
                supply: self.supply(a, a + len),
            })
            .max_by_key(|w| (w.supply, std::cmp::Reverse(w.start)))
    }

    /// The interval `[a, b)` inside `[from, to)` where the VP falls furthest
    /// behind share `share`, i.e. with the largest `share·(b − a) − supply`,
    /// and that deficit, exact, as the fraction `numerator / share.den()`
    /// nanoseconds (0 when it never falls behind). Exact in 128-bit
    /// arithmetic while `share.den() · to` stays below 2^127 (any share with
    /// a denominator up to 10^18 over a run of up to 10^20 ns).
    pub fn worst_psbe_deficit(&self, share: Share, from: u64, to: u64) -> (Window, u128) {
        // F(t) = den·busy[0, t) − num·t; the deficit of [a, b) is
        // (F(a) − F(b)) / den. Points in time order; a ≤ b.
        let none = Window {
            start: from,
            end: from,
            supply: 0,
        };
        if to < from {
            return (none, 0);
        }
        let (num, den) = (i128::from(share.num()), i128::from(share.den()));
        let f = |t: u64| den * i128::from(self.cumulative(t)) - num * i128::from(t);
        let mut points: Vec<(u64, bool, bool)> = vec![(from, true, false), (to, false, true)];
        for &(s, e) in &self.busy {
            if (from..=to).contains(&s) {
                points.push((s, false, true));
            }
            if (from..=to).contains(&e) {
                points.push((e, true, false));
            }
        }
        // At equal times, starts (`a`) before ends (`b`), so a = b is tried.
        points.sort_unstable_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
        let mut best_a: Option<(i128, u64)> = None;
        let mut worst = (0i128, from, from);
        for (t, can_start, can_end) in points {
            let value = f(t);
            if can_start && best_a.is_none_or(|(v, _)| value > v) {
                best_a = Some((value, t));
            }
            if can_end {
                if let Some((v, a)) = best_a {
                    if v - value > worst.0 {
                        worst = (v - value, a, t);
                    }
                }
            }
        }
        let (deficit, a, b) = worst;
        (
            Window {
                start: a,
                end: b,
                supply: self.supply(a, b),
            },
            deficit as u128,
        )
    }

    /// Does the schedule meet PSBE `share, delta_ns` over every interval
    /// inside `[from, to)`? `Err` names the worst interval.
    pub fn check_psbe(
        &self,
        share: Share,
        delta_ns: u64,
        from: u64,
        to: u64,
    ) -> Result<(), String> {
        let (w, deficit) = self.worst_psbe_deficit(share, from, to);
        let allowed = u128::from(delta_ns) * u128::from(share.den());
        if deficit.cmp(&allowed) == Ordering::Greater {
            return Err(format!(
                "over [{}, {}) the VP received {} ns, {}/{} ns less than share {} promises minus δ = {delta_ns} ns",
                w.start,
                w.end,
                w.supply,
                deficit - allowed,
                share.den(),
                share,
            ));
        }
        Ok(())
    }

    /// Does every window of length `len` inside `[from, to)` hold at least
    /// `amount` (a continuous reservation, or any window bound)?
    pub fn check_least(&self, amount: u64, len: u64, from: u64, to: u64) -> Result<(), String> {
        match self.least_window(len, from, to) {
            Some(w) if w.supply < amount => Err(format!(
                "window [{}, {}) holds {} ns, less than {amount} ns",
                w.start, w.end, w.supply
            )),
            _ => Ok(()),
        }
    }

    /// Does every window of length `len` inside `[from, to)` hold at most
    /// `amount` (the cap of a hard continuous reservation)?
    pub fn check_most(&self, amount: u64, len: u64, from: u64, to: u64) -> Result<(), String> {
        match self.most_window(len, from, to) {
            Some(w) if w.supply > amount => Err(format!(
                "window [{}, {}) holds {} ns, more than {amount} ns",
                w.start, w.end, w.supply
            )),
            _ => Ok(()),
        }
    }

    /// Does the grid `[offset + i·period, offset + (i+1)·period)`, for the
    /// `count` windows from `offset`, give at least `amount` in each (and at
    /// most `amount` when `hard`)? A basic reservation with that grid.
    pub fn check_basic(
        &self,
        amount: u64,
        period: u64,
        offset: u64,
        count: u64,
        hard: bool,
    ) -> Result<(), String> {
        for i in 0..count {
            let start = offset + i * period;
            let got = self.supply(start, start + period);
            if got < amount || (hard && got > amount) {
                return Err(format!(
                    "grid window [{start}, {}) holds {got} ns, not {}{amount} ns",
                    start + period,
                    if hard { "exactly " } else { "at least " }
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_least(s: &Schedule, len: u64, from: u64, to: u64) -> u64 {
        (from..=to - len)
            .map(|a| s.supply(a, a + len))
            .min()
            .unwrap()
    }

    #[test]
    fn supply_counts_busy_time() {
        let s = Schedule::new([(10, 20), (30, 35), (20, 25)]).unwrap();
        assert_eq!(s.intervals(), &[(10, 25), (30, 35)]);
        assert_eq!(s.supply(0, 100), 20);
        assert_eq!(s.supply(12, 32), 15);
        assert_eq!(s.supply(25, 30), 0);
        assert!(Schedule::new([(0, 10), (5, 6)]).is_err());
        assert!(Schedule::new([(5, 4)]).is_err());
    }

    #[test]
    fn extremes_match_brute_force() {
        let s = Schedule::new([(3, 7), (9, 10), (15, 22), (30, 31)]).unwrap();
        for len in 1..30 {
            let w = s.least_window(len, 0, 40).unwrap();
            assert_eq!(w.supply, brute_least(&s, len, 0, 40), "len {len}");
            let most = (0..=40 - len).map(|a| s.supply(a, a + len)).max().unwrap();
            assert_eq!(s.most_window(len, 0, 40).unwrap().supply, most);
        }
    }

    #[test]
    fn psbe_deficit_matches_brute_force() {
        let s = Schedule::new([(3, 7), (9, 10), (15, 22), (30, 31)]).unwrap();
        for (n, d) in [(1u64, 2u64), (1, 3), (2, 5), (1, 1), (0, 1)] {
            let share = Share::new(n, d).unwrap();
            let mut brute = 0i128;
            for a in 0..=40u64 {
                for b in a..=40u64 {
                    let deficit = i128::from(n) * i128::from(b - a)
                        - i128::from(d) * i128::from(s.supply(a, b));
                    brute = brute.max(deficit);
                }
            }
            let (w, deficit) = s.worst_psbe_deficit(share, 0, 40);
            assert_eq!(
                deficit as i128 * i128::from(d / share.den()),
                brute,
                "share {n}/{d}"
            );
            let again = i128::from(share.num()) * i128::from(w.end - w.start)
                - i128::from(share.den()) * i128::from(w.supply);
            assert_eq!(again.max(0) as u128, deficit);
        }
    }
}
