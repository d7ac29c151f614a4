//! Service curves for `hfsc`: the exact integer arithmetic of Yau & Lam
//! §5.1's two-piece linear curves `<r1, x, r2>` (values, inverses, the
//! deadline-curve update of equation (7)), admission (the sum of curves
//! stays under the CPU), and the parser for classes.
//!
//! Rates are parts per million; times and service are nanoseconds; values
//! round down and inverses round up, so a deadline is never early.

use hsched_core::{Duration, Share, ShareRange};

/// Rates are parts per million of one CPU.
pub const PPM: u64 = 1_000_000;

/// A curve's or class's rate in ppm: a fraction of the CPU in `[0, 1]`,
/// a whole number of ppm (read by the one share parser).
pub(super) fn rate_ppm(text: &str) -> Result<u32, String> {
    // At most 1, so at most a million: it fits.
    Share::parse_ppm(text, ShareRange::AtMostOne).map(|ppm| ppm as u32)
}

/// Parts per million as a decimal, for messages (`0.35`).
pub(super) fn ppm_text(ppm: u64) -> String {
    Share::from_ppm(ppm).decimal(6)
}

/// A link-sharing class as declared: its name, its linear rate (ppm) and
/// the class it is nested in (the index of an earlier class; `None`: the
/// root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassSpec {
    pub name: String,
    pub rate: u32,
    pub parent: Option<u32>,
}

/// Parses `"media:0.6, media/audio:0.2, media/video:0.4, batch:0.4"`: each
/// class is `name:rate` at the root or `parent/name:rate` inside a class
/// declared before it (any depth: `a/b/c:0.1` names `c` in `b`, itself in
/// `a`). Names are unique across the tree, so a child's `class` names the
/// last part alone. The rates of the classes directly inside a class add
/// up to at most its rate, and at the root to at most 1.
pub fn parse_classes(text: &str) -> Result<Vec<ClassSpec>, String> {
    let mut out: Vec<ClassSpec> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((path, rate)) = item.rsplit_once(':') else {
            return Err(format!(
                "`classes`: `{item}`: expected `name:rate` or `parent/name:rate`, e.g. `batch:0.2`"
            ));
        };
        let mut parts: Vec<&str> = path.split('/').map(str::trim).collect();
        let name = parts.pop().unwrap_or_default();
        if name.is_empty() || parts.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "`classes`: `{item}`: a class and each parent needs a name"
            ));
        }
        if out.iter().any(|c| c.name == name) {
            return Err(format!("`classes`: class `{name}` is declared twice"));
        }
        let mut parent: Option<u32> = None;
        for p in &parts {
            let Some(k) = out.iter().position(|c| c.name == *p) else {
                return Err(format!(
                    "`classes`: `{item}`: no class `{p}` declared before it"
                ));
            };
            if out[k].parent != parent {
                let mut full = vec![out[k].name.as_str()];
                let mut up = out[k].parent;
                while let Some(q) = up {
                    full.push(out[q as usize].name.as_str());
                    up = out[q as usize].parent;
                }
                full.reverse();
                return Err(format!(
                    "`classes`: `{item}`: `{p}` is at `{}`: write the whole path from the root",
                    full.join("/")
                ));
            }
            parent = Some(k as u32);
        }
        let rate = rate_ppm(rate).map_err(|e| format!("`classes`: class `{name}`: {e}"))?;
        if rate == 0 {
            return Err(format!(
                "`classes`: class `{name}`: the rate must be above 0"
            ));
        }
        out.push(ClassSpec {
            name: name.to_string(),
            rate,
            parent,
        });
    }
    for parent in std::iter::once(None).chain((0..out.len() as u32).map(Some)) {
        let total: u64 = out
            .iter()
            .filter(|c| c.parent == parent)
            .map(|c| u64::from(c.rate))
            .sum();
        let (limit, whose) = match parent {
            None => (PPM, "1 (the CPU)".to_string()),
            Some(k) => {
                let c = &out[k as usize];
                (
                    u64::from(c.rate),
                    format!("`{}`'s rate {}", c.name, ppm_text(c.rate.into())),
                )
            }
        };
        if total > limit {
            let inside = match parent {
                None => "at the root".to_string(),
                Some(k) => format!("inside `{}`", out[k as usize].name),
            };
            return Err(format!(
                "`classes`: the class rates {inside} add up to {}, more than {whose}",
                ppm_text(total)
            ));
        }
    }
    Ok(out)
}

/// `rate * d`, rounded down: service (ns) at `rate` ppm over `d` ns.
pub(super) fn service(rate: u32, d: u64) -> u64 {
    (u128::from(rate) * u128::from(d) / u128::from(PPM)) as u64
}

/// A service curve `⟨r1, x, r2⟩` (rates in ppm, `x` in ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceCurve {
    pub r1: u32,
    pub x: u64,
    pub r2: u32,
}

impl ServiceCurve {
    pub fn is_concave(&self) -> bool {
        self.r1 > self.r2
    }

    /// `S(t)`, rounded down.
    pub fn at(&self, t: u64) -> u64 {
        if t <= self.x {
            service(self.r1, t)
        } else {
            service(self.r1, self.x) + service(self.r2, t - self.x)
        }
    }

    /// `S(t) * 10^6` exactly (for admission, which must not round).
    fn at_scaled(&self, t: u64) -> u128 {
        let (r1, r2) = (u128::from(self.r1), u128::from(self.r2));
        if t <= self.x {
            r1 * u128::from(t)
        } else {
            r1 * u128::from(self.x) + r2 * u128::from(t - self.x)
        }
    }

    /// `S` anchored at `(x, y)`.
    pub fn anchored(&self, x: u64, y: u64) -> Curve {
        Curve {
            x,
            y,
            dx: self.x,
            r1: self.r1,
            r2: self.r2,
        }
    }
}

/// A two-piece linear curve anchored at `(x, y)` (ns of time, ns of
/// service): `y` up to `x`, then slope `r1` for `dx`, then `r2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Curve {
    pub x: u64,
    pub y: u64,
    pub dx: u64,
    pub r1: u32,
    pub r2: u32,
}

impl Curve {
    /// The curve's value at `t`, rounded down.
    pub fn at(&self, t: u64) -> u64 {
        if t <= self.x {
            return self.y;
        }
        let d = t - self.x;
        if d <= self.dx {
            self.y + service(self.r1, d)
        } else {
            self.y + service(self.r1, self.dx) + service(self.r2, d - self.dx)
        }
    }

    /// The curve's value at `t` times `10^6`, exact.
    fn at_scaled(&self, t: u64) -> u128 {
        let y = u128::from(self.y) * u128::from(PPM);
        if t <= self.x {
            return y;
        }
        let d = t - self.x;
        let (r1, r2) = (u128::from(self.r1), u128::from(self.r2));
        if d <= self.dx {
            y + r1 * u128::from(d)
        } else {
            y + r1 * u128::from(self.dx) + r2 * u128::from(d - self.dx)
        }
    }

    /// The first `t` at which the curve reaches `v` (`u64::MAX`: never).
    pub fn inverse(&self, v: u64) -> u64 {
        if v <= self.y {
            return self.x;
        }
        let need = v - self.y;
        let dy = service(self.r1, self.dx);
        let ceil_div = |a: u128, b: u128| a.div_ceil(b);
        let d = if need <= dy {
            // r1 > 0 here, since dy >= need > 0.
            ceil_div(u128::from(need) * u128::from(PPM), u128::from(self.r1))
        } else if self.r2 == 0 {
            return u64::MAX;
        } else {
            u128::from(self.dx)
                + ceil_div(u128::from(need - dy) * u128::from(PPM), u128::from(self.r2))
        };
        u64::try_from(u128::from(self.x) + d).unwrap_or(u64::MAX)
    }

    /// Equation (7): `self := min(self, S(· - x) + y)` for `t >= x`.
    pub fn min_with(&mut self, s: &ServiceCurve, x: u64, y: u64) {
        let new = s.anchored(x, y);
        let old_at_x = self.at_scaled(x);
        let y_scaled = u128::from(y) * u128::from(PPM);
        if !s.is_concave() {
            // Convex or linear: Stoica et al.'s rule (exact for linear).
            if old_at_x >= y_scaled {
                *self = new;
            }
            return;
        }
        if old_at_x <= y_scaled {
            return; // the old curve is below from x on (it rises no faster)
        }
        let end = x.saturating_add(s.x);
        if self.at_scaled(end) >= new.at_scaled(end) {
            *self = new;
            return;
        }
        // They cross inside the first segment: the new curve up to the
        // crossing, then slope r2 (where the old curve is by then).
        let (mut lo, mut hi) = (0u64, s.x);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if new.at_scaled(x.saturating_add(mid)) >= self.at_scaled(x.saturating_add(mid)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        *self = Curve { dx: lo, ..new };
    }
}

/// Whether the curves, all anchored at zero, stay under the CPU:
/// `Σ S_i(t) <= t` for all `t`. Exact: the sum is piecewise linear, so it
/// is checked at every breakpoint and for the final slope. O(n²) in the
/// worst case; callers try the O(1) sufficient test `Σ max(r1, r2) <= 1`
/// first.
pub fn admissible(curves: &[ServiceCurve]) -> Result<(), String> {
    let total_r2: u64 = curves.iter().map(|s| u64::from(s.r2)).sum();
    if total_r2 > PPM {
        return Err(format!(
            "the long-term rates r2 would add up to {}, more than the CPU",
            ppm_text(total_r2)
        ));
    }
    for s in curves {
        let t = s.x;
        let sum: u128 = curves.iter().map(|c| c.at_scaled(t)).sum();
        if sum > u128::from(t) * u128::from(PPM) {
            return Err(format!(
                "the service curves would add up to more than the CPU at {}",
                Duration(t)
            ));
        }
    }
    Ok(())
}
