//! A configured `bvt` node read back for display: advances, warps and
//! limits → shares, `V`, `W`, warp lead times and the problems found.

use super::admission::account;
use super::clock::{BvtClock, ConfigError};
use super::priorities::warp_increment;
use super::warp::warp_windows;
use super::window::{window_from_advances, Window};
use hsched_core::Duration;
use hsched_core::Share;
use std::fmt;

/// One child of a configured `bvt` node, as its attachment parameters say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BvtChild {
    pub name: String,
    /// `m_i`.
    pub advance: u64,
    /// `W_i`, virtual units.
    pub warp: u64,
    /// `L_i` (0: no limit).
    pub warp_limit: Duration,
    /// `U_i` (0: none).
    pub unwarp: Duration,
}

/// What [`describe`] derives for one child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildView {
    pub child: BvtChild,
    /// Its share over `W`: `(V/m_i)/W`.
    pub share: Share,
    /// `V/m_i`: the mcu it runs per window.
    pub run_mcu: u64,
    /// `W_i/m_i`: how many mcu its warp lets it run ahead (§6.2.3).
    pub warp_lead_mcu: Share,
    /// `m = W_i/V` (§6.1.1).
    pub warp_windows: Share,
    /// Its share, or `m·w_i` for a warp unbounded by `U_i` (§6.1.1).
    pub counted_share: Share,
    /// For a warp bounded by `L_i`/`U_i`: the most it runs warped in `W`.
    pub max_warped: Option<Duration>,
}

/// A problem [`describe`] found with a configured node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// §6.1.1: warps without an unwarp time requirement, counted at `m·w_i`,
    /// take more than the CPU within one window.
    WorstCaseOvercommitted {
        total: Share,
        over_by: Share,
        /// The children counted above their share, with `m` and the count.
        warpers: Vec<(String, Share, Share)>,
    },
    /// §6.1.1: `L_i`/`U_i` let the child run warped longer in `W` than its
    /// share of `W`.
    WarpLimitsExceedShare {
        thread: String,
        warped: Duration,
        allowed: Duration,
        window: Duration,
    },
    /// §6.1.3: a warp level sits less than `L_i/w_i` above the next lower
    /// one, so its thread can be preempted by the lower level before it has
    /// run its warp time limit.
    WarpGapTooSmall {
        thread: String,
        warp: u64,
        lower_warp: u64,
        needed: u64,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::WorstCaseOvercommitted {
                total,
                over_by,
                warpers,
            } => {
                let list: Vec<String> = warpers
                    .iter()
                    .map(|(n, m, c)| format!("`{n}` (m = {m}, counted {})", c.percent_string()))
                    .collect();
                write!(
                    f,
                    "§6.1.1 worst case: warps with no unwarp time requirement, counted at m·w_i, add up to {} of the CPU within one window (over by {}): {}; the shares then hold only over longer windows",
                    total.percent_string(),
                    over_by.percent_string(),
                    list.join(", ")
                )
            }
            Problem::WarpLimitsExceedShare {
                thread,
                warped,
                allowed,
                window,
            } => write!(
                f,
                "§6.1.1: `{thread}`'s warp limits let it run warped {warped} in the {window} window, more than its share of it ({allowed}): over by {}",
                warped.saturating_sub(*allowed)
            ),
            Problem::WarpGapTooSmall {
                thread,
                warp,
                lower_warp,
                needed,
            } => write!(
                f,
                "§6.1.3: `{thread}`'s warp {warp} is only {} above the next lower level ({lower_warp}); running its warp time limit takes {needed} units, so a lower-priority warped thread can preempt it {} units early",
                warp - lower_warp,
                needed - (warp - lower_warp)
            ),
        }
    }
}

/// A configured `bvt` node read back: see [`describe`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    pub clock: BvtClock,
    pub window: Window,
    pub children: Vec<ChildView>,
    pub problems: Vec<Problem>,
}

/// A configured BVT node's children (advances, warps, limits) and clock →
/// shares, `V`, `W`, warp lead times and the problems the §6 rules find.
///
/// ```
/// use hsched_analysis::bvt_config::{describe, BvtChild, BvtClock, Share};
/// use hsched_core::Duration;
/// let ms = Duration::from_millis;
/// let child = |name: &str, advance| BvtChild {
///     name: name.into(), advance, warp: 0, warp_limit: Duration::ZERO, unwarp: Duration::ZERO,
/// };
/// // §6.1.1: advances 6, 2, 1, mcu = 10ms, C = 2 mcu.
/// let d = describe(
///     &[child("a", 6), child("b", 2), child("c", 1)],
///     BvtClock::new(ms(10), ms(20)).unwrap(),
/// ).unwrap();
/// let shares: Vec<Share> = d.children.iter().map(|c| c.share).collect();
/// assert_eq!(shares, [Share::percent(10), Share::percent(30), Share::percent(60)]);
/// assert_eq!((d.window.virtual_window, d.window.physical_window_mcu), (12, 20));
/// assert!(d.problems.is_empty());
/// assert!(d.to_string().contains("W = 20 mcu = 200ms"));
/// ```
pub fn describe(children: &[BvtChild], clock: BvtClock) -> Result<Description, ConfigError> {
    if let Some(c) = children.iter().find(|c| c.advance == 0) {
        return Err(ConfigError::ZeroAdvance {
            who: format!("`{}`", c.name),
        });
    }
    let advances: Vec<u64> = children.iter().map(|c| c.advance).collect();
    let window = window_from_advances(&advances, clock.c_mcu())?;
    let w_time = window
        .physical_window(clock.mcu())
        .ok_or(ConfigError::Overflow {
            what: "the physical window W",
        })?;
    let mut views = Vec::with_capacity(children.len());
    let mut problems = Vec::new();
    for (i, c) in children.iter().enumerate() {
        let share = window.share(i);
        let acc = account(share, c.warp, c.warp_limit, c.unwarp, &window, &clock)?;
        if let Some((warped, allowed)) = acc.bounded {
            if warped > allowed {
                problems.push(Problem::WarpLimitsExceedShare {
                    thread: c.name.clone(),
                    warped,
                    allowed,
                    window: w_time,
                });
            }
        }
        views.push(ChildView {
            child: c.clone(),
            share,
            run_mcu: window.run_mcu[i],
            warp_lead_mcu: Share::new(c.warp, c.advance).expect("advance > 0"),
            warp_windows: warp_windows(c.warp, &window),
            counted_share: acc.counted,
            max_warped: acc.bounded.map(|(w, _)| w),
        });
    }
    let total = views
        .iter()
        .try_fold(Share::ZERO, |a, v| a.checked_add(v.counted_share))
        .ok_or(ConfigError::Overflow {
            what: "the total worst-case share",
        })?;
    if total > Share::ONE {
        problems.push(Problem::WorstCaseOvercommitted {
            total,
            over_by: total.saturating_sub(Share::ONE),
            warpers: views
                .iter()
                .filter(|v| v.counted_share > v.share)
                .map(|v| (v.child.name.clone(), v.warp_windows, v.counted_share))
                .collect(),
        });
    }
    // §6.1.3: the configured warps, read as priority levels (distinct
    // values, highest first), must each clear the next lower level by the
    // largest L_i/w_i of their threads.
    let mut levels: Vec<u64> = children.iter().map(|c| c.warp).collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    levels.dedup();
    for pair in levels.windows(2) {
        let (warp, lower_warp) = (pair[0], pair[1]);
        let mut worst: Option<(u64, &BvtChild)> = None;
        for c in children.iter().filter(|c| c.warp == warp) {
            let inc =
                warp_increment(c.advance, c.warp_limit, &clock).ok_or(ConfigError::Overflow {
                    what: "a warp increment",
                })?;
            if worst.is_none_or(|(w, _)| inc > w) {
                worst = Some((inc, c));
            }
        }
        if let Some((needed, c)) = worst {
            if warp - lower_warp < needed {
                problems.push(Problem::WarpGapTooSmall {
                    thread: c.name.clone(),
                    warp,
                    lower_warp,
                    needed,
                });
            }
        }
    }
    Ok(Description {
        clock,
        window,
        children: views,
        problems,
    })
}

/// `mcu · r` as a readable time: exact when whole nanoseconds, else `≈`.
fn mcu_time(clock: &BvtClock, r: Share) -> String {
    let ns = u128::from(clock.mcu().as_nanos()) * u128::from(r.num());
    let den = u128::from(r.den());
    match u64::try_from(ns / den) {
        Ok(whole) if ns % den == 0 => Duration::from_nanos(whole).to_string(),
        Ok(whole) => format!("≈{}", Duration::from_nanos(whole)),
        Err(_) => "forever".into(),
    }
}

impl fmt::Display for Description {
    /// A header with C, V and W, one row per child, then the problems.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.window;
        let w_time = w
            .physical_window(self.clock.mcu())
            .map(|d| d.to_string())
            .unwrap_or_else(|| "forever".into());
        writeln!(
            f,
            "bvt: mcu = {}, C = {} ({} mcu); V = {} virtual units; W = {} mcu = {}",
            self.clock.mcu(),
            self.clock.allowance(),
            w.c_mcu,
            w.virtual_window,
            w.physical_window_mcu,
            w_time
        )?;
        let none = |d: Duration, word: &str| {
            if d.is_zero() {
                word.to_string()
            } else {
                d.to_string()
            }
        };
        let mut rows = vec![[
            "child".to_string(),
            "advance".into(),
            "share".into(),
            "runs/W".into(),
            "warp".into(),
            "lead".into(),
            "limit L".into(),
            "unwarp U".into(),
        ]];
        for v in &self.children {
            let c = &v.child;
            let warping = c.warp > 0;
            rows.push([
                c.name.clone(),
                c.advance.to_string(),
                v.share.percent_string(),
                mcu_time(&self.clock, Share::integer(v.run_mcu)),
                c.warp.to_string(),
                if warping {
                    mcu_time(&self.clock, v.warp_lead_mcu)
                } else {
                    "-".into()
                },
                if warping {
                    none(c.warp_limit, "none")
                } else {
                    "-".into()
                },
                if warping {
                    none(c.unwarp, "0")
                } else {
                    "-".into()
                },
            ]);
        }
        let mut widths = [0usize; 8];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in &rows {
            let mut line = String::from(" ");
            for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
                let pad = w - cell.chars().count();
                if i == 0 {
                    line.push(' ');
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            writeln!(f, "{}", line.trim_end())?;
        }
        if self.problems.is_empty() {
            writeln!(f, "  admission: ok")?;
        }
        for p in &self.problems {
            writeln!(f, "  problem: {p}")?;
        }
        Ok(())
    }
}
