//! One compared quantity of a reproduction ([`Check`]): the paper's value,
//! the measured one, the tolerance and why, and the verdict they give.

/// One compared quantity.
#[derive(Clone, Debug)]
pub struct Check {
    pub quantity: String,
    pub paper: f64,
    pub measured: f64,
    /// Allowed absolute difference.
    pub tolerance: f64,
    /// Why the tolerance is what it is.
    pub why: &'static str,
    /// Whether the paper's value is a target (within the tolerance either
    /// way) or an upper bound (the measured value may be anything below).
    pub bound: Bound,
    /// A disagreement with the paper that is understood: why hsched
    /// differs, as measured (see [`Check::differs`]).
    pub differs: Option<&'static str>,
}

/// What a check concludes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within the tolerance.
    Pass,
    /// Outside it, with no reason known: the suite fails.
    Fail,
    /// Outside it, for the reason given with [`Check::differs`].
    Differs,
    /// Marked as differing but within the tolerance: the stated reason no
    /// longer holds and must go (the suite fails until it does).
    Stale,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bound {
    /// |measured - paper| <= tolerance.
    #[default]
    Within,
    /// measured <= paper + tolerance.
    AtMost,
    /// measured >= paper - tolerance.
    AtLeast,
}

impl Check {
    /// A two-sided comparison: |measured − paper| ≤ tolerance, for `why`.
    pub fn new(
        quantity: impl Into<String>,
        paper: f64,
        measured: f64,
        tolerance: f64,
        why: &'static str,
    ) -> Self {
        Check {
            quantity: quantity.into(),
            paper,
            measured,
            tolerance,
            why,
            bound: Bound::Within,
            differs: None,
        }
    }

    /// Whether the measured value is within the tolerance.
    pub fn within(&self) -> bool {
        match self.bound {
            Bound::Within => (self.measured - self.paper).abs() <= self.tolerance,
            Bound::AtMost => self.measured <= self.paper + self.tolerance,
            Bound::AtLeast => self.measured >= self.paper - self.tolerance,
        }
    }

    pub fn verdict(&self) -> Verdict {
        match (self.within(), self.differs) {
            (true, None) => Verdict::Pass,
            (false, None) => Verdict::Fail,
            (false, Some(_)) => Verdict::Differs,
            (true, Some(_)) => Verdict::Stale,
        }
    }

    /// Whether the suite passes with this check.
    pub fn passed(&self) -> bool {
        matches!(self.verdict(), Verdict::Pass | Verdict::Differs)
    }

    /// Marks a disagreement with the paper whose cause is known and
    /// measured (the entry shows the measurement): the verdict says
    /// "differs" with `diagnosis`, and the suite still passes. Once the
    /// value comes within the tolerance the verdict turns "stale" and
    /// fails, so no stale excuse stays.
    pub fn differs(mut self, diagnosis: &'static str) -> Self {
        self.differs = Some(diagnosis);
        self
    }

    /// Makes the paper's value a lower bound.
    pub fn at_least(mut self) -> Self {
        self.bound = Bound::AtLeast;
        self
    }

    /// Makes the paper's value an upper bound.
    pub fn at_most(mut self) -> Self {
        self.bound = Bound::AtMost;
        self
    }

    pub(super) fn tolerance_text(&self) -> String {
        let t = compact(self.tolerance);
        match self.bound {
            Bound::Within => format!("±{t}"),
            Bound::AtMost if self.tolerance == 0.0 => "at most".into(),
            Bound::AtMost => format!("≤ +{t}"),
            Bound::AtLeast if self.tolerance == 0.0 => "at least".into(),
            Bound::AtLeast => format!("≥ -{t}"),
        }
    }
}

/// A number with at most four decimals, trailing zeros dropped.
fn compact(x: f64) -> String {
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_disagreement_passes_until_it_agrees() {
        let check = |measured| Check::new("x", 1.0, measured, 0.1, "test");
        assert_eq!(check(1.05).verdict(), Verdict::Pass);
        assert_eq!(check(1.2).verdict(), Verdict::Fail);
        assert!(!check(1.2).passed());
        assert_eq!(check(1.2).differs("known").verdict(), Verdict::Differs);
        assert!(check(1.2).differs("known").passed());
        assert_eq!(check(1.05).differs("known").verdict(), Verdict::Stale);
        assert!(!check(1.05).differs("known").passed());
        assert_eq!(check(0.95).at_least().verdict(), Verdict::Pass);
        assert_eq!(check(5.0).at_least().verdict(), Verdict::Pass);
        assert_eq!(check(0.85).at_least().verdict(), Verdict::Fail);
    }
}
