//! §6.1.3 Response time: priority levels → warp values.

use super::clock::{BvtClock, ConfigError};
use super::window::{window_from_shares, Window};
use hsched_core::Duration;
use hsched_core::Share;

/// One thread of a priority level, by its mcu advance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelThread {
    pub advance: u64,
    /// `L_i`; 0 means no warp time limit.
    pub warp_limit: Duration,
}

/// §6.1.3: `L_i/w_i`, "the amount the thread's AVT increases by running for
/// the full `L_i` time period", in virtual units: `ceil(L_i/mcu) · m_i` (the
/// charge is rounded up to whole mcu, §2). "Low priority interactive threads
/// may operate with a warp time limit of 0 (i.e. no limit) … we assume a
/// value of `L_i = C` for the purposes of the above calculation." `None` on
/// overflow.
///
/// ```
/// use hsched_analysis::bvt_config::{warp_increment, BvtClock};
/// use hsched_core::Duration;
/// let clock = BvtClock::new(Duration::from_millis(1), Duration::from_millis(10)).unwrap();
/// assert_eq!(warp_increment(1, Duration::from_millis(20), &clock), Some(20));
/// // No limit: L = C = 10 mcu, at 2 units per mcu.
/// assert_eq!(warp_increment(2, Duration::ZERO, &clock), Some(20));
/// // 2.5 mcu is charged as 3.
/// assert_eq!(warp_increment(2, Duration::from_micros(2500), &clock), Some(6));
/// ```
pub fn warp_increment(advance: u64, warp_limit: Duration, clock: &BvtClock) -> Option<u64> {
    let limit = if warp_limit.is_zero() {
        clock.allowance()
    } else {
        warp_limit
    };
    clock.charged_mcu(limit).checked_mul(advance)
}

/// §6.1.3, on threads given by their advances: the warp of each priority
/// level. `levels[0]` is the highest priority (the paper's priority 1), the
/// last is the lowest.
///
/// The paper's algorithm: "Set the current warp value to 0 and consider the
/// lowest priority level p. Set the warp value `W_i` for all threads i at
/// priority p to the current warp value. Go to the next priority level,
/// p−1. Increment the current warp value by `L_i/w_i`, where `L_i/w_i` is
/// the maximum value across all threads at priority p−1. If more threads,
/// go to step 2, else terminate." The increment is [`warp_increment`].
///
/// ```
/// use hsched_analysis::bvt_config::{warps_for_advances, BvtClock, LevelThread};
/// use hsched_core::Duration;
/// let ms = Duration::from_millis;
/// let clock = BvtClock::new(ms(1), ms(10)).unwrap();
/// let levels = [
///     vec![LevelThread { advance: 1, warp_limit: ms(20) }],    // MPEG display
///     vec![LevelThread { advance: 2, warp_limit: Duration::ZERO }], // interactive
///     vec![LevelThread { advance: 2, warp_limit: Duration::ZERO }], // batch
/// ];
/// assert_eq!(warps_for_advances(&levels, &clock).unwrap(), vec![40, 20, 0]);
/// ```
pub fn warps_for_advances(
    levels: &[Vec<LevelThread>],
    clock: &BvtClock,
) -> Result<Vec<u64>, ConfigError> {
    if levels.is_empty() {
        return Err(ConfigError::NoThreads);
    }
    let mut warps = vec![0u64; levels.len()];
    let mut current = 0u64;
    // Walk from the lowest level (last) up; the lowest keeps warp 0.
    for p in (0..levels.len()).rev() {
        let level = &levels[p];
        if level.is_empty() {
            return Err(ConfigError::EmptyLevel { level: p + 1 });
        }
        if p + 1 < levels.len() {
            let mut inc = 0u64;
            for t in level {
                if t.advance == 0 {
                    return Err(ConfigError::ZeroAdvance {
                        who: format!("a thread at priority level {}", p + 1),
                    });
                }
                inc = inc.max(warp_increment(t.advance, t.warp_limit, clock).ok_or(
                    ConfigError::Overflow {
                        what: "a warp increment",
                    },
                )?);
            }
            current = current.checked_add(inc).ok_or(ConfigError::Overflow {
                what: "a warp value",
            })?;
        }
        warps[p] = current;
    }
    Ok(warps)
}

/// One RE thread of a priority level, by its share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrioThread {
    pub share: Share,
    /// `L_i`; 0 means no warp time limit.
    pub warp_limit: Duration,
}

/// The result of [`warps_from_priorities`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarpPlan {
    /// The window of all the threads, flattened level by level (highest
    /// level first, threads in the order given).
    pub window: Window,
    /// Each thread's mcu advance, by level.
    pub advances: Vec<Vec<u64>>,
    /// The warp of each level (every thread of a level gets it).
    pub level_warps: Vec<u64>,
}

/// §6.1.1 + §6.1.3: shares per priority level (highest first) → advances,
/// windows and the warp of each level.
///
/// ```
/// use hsched_analysis::bvt_config::{warps_from_priorities, BvtClock, PrioThread, Share};
/// use hsched_core::Duration;
/// let ms = Duration::from_millis;
/// let clock = BvtClock::new(ms(1), ms(10)).unwrap();
/// let t = |pct, l| PrioThread { share: Share::percent(pct), warp_limit: l };
/// // §6.2.2: MPEG weight 10 (vs 5), L = 20ms, above interactive threads.
/// let plan = warps_from_priorities(
///     &[vec![t(10, ms(20))], vec![t(5, Duration::ZERO)], vec![t(5, Duration::ZERO)]],
///     &clock,
/// ).unwrap();
/// assert_eq!(plan.advances, vec![vec![1], vec![2], vec![2]]);
/// assert_eq!(plan.level_warps, vec![40, 20, 0]);
/// ```
pub fn warps_from_priorities(
    levels: &[Vec<PrioThread>],
    clock: &BvtClock,
) -> Result<WarpPlan, ConfigError> {
    let shares: Vec<Share> = levels.iter().flatten().map(|t| t.share).collect();
    let window = window_from_shares(&shares, clock.c_mcu())?;
    let mut flat = window.advances.iter();
    let advances: Vec<Vec<u64>> = levels
        .iter()
        .map(|l| {
            l.iter()
                .map(|_| *flat.next().expect("one per thread"))
                .collect()
        })
        .collect();
    let by_advance: Vec<Vec<LevelThread>> = levels
        .iter()
        .zip(&advances)
        .map(|(l, a)| {
            l.iter()
                .zip(a)
                .map(|(t, &advance)| LevelThread {
                    advance,
                    warp_limit: t.warp_limit,
                })
                .collect()
        })
        .collect();
    let level_warps = warps_for_advances(&by_advance, clock)?;
    Ok(WarpPlan {
        window,
        advances,
        level_warps,
    })
}
