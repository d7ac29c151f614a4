//! Configuring BVT: Duda & Cheriton, "Borrowed-Virtual-Time (BVT)
//! scheduling", SOSP '99, §6 ("Configuring BVT scheduling").
//!
//! What this module computes, each from the section that defines it:
//!
//! - §6.1.1 *CPU share*: shares → small-integer mcu advances `m_i`, the
//!   virtual window `V` and the physical window `W`
//!   ([`advances_from_shares`], [`window_from_advances`],
//!   [`window_from_shares`]); the worst-case share of a thread whose warp is
//!   not bounded by an unwarp time requirement, `m·w_i` with `m = W_i/V`
//!   ([`warp_windows`], [`worst_case_share`]).
//! - §6.1.3 *Response time*: priority levels → warp values
//!   ([`warps_from_priorities`], [`warps_for_advances`], [`warp_increment`]).
//! - §6.1.1 / §6.3 *admission control* for reserved-effort (RE) threads next
//!   to a best-effort (BE) aggregate share ([`admit`]).
//! - A configured node read back for display: advances, warps and limits →
//!   shares, `V`, `W`, warp lead times and the problems found ([`describe`]).
//! - §6.2.3: how long a warp lets a thread run ahead ([`warp_lead_mcu`]).
//! - [`paper_numbers`]: every number the paper states in these sections,
//!   next to the value computed here (for `hsched repro`).
//!
//! Units. Time is integer nanoseconds ([`Duration`]). Virtual time is in the
//! units the `bvt` policy uses: a thread with mcu advance `m_i` gains `m_i`
//! units of actual virtual time (AVT) per mcu it is charged (§2.1), and the
//! charge for running `t` is `ceil(t/mcu)` mcu. The paper's `L_i/w_i` ("the
//! amount the thread's AVT increases by running for the full `L_i`") is
//! therefore `ceil(L_i/mcu)·m_i` units here. Shares are exact fractions
//! ([`Share`]): nothing computed here goes through floating point.
//!
//! Limits. The paper states no approximation tolerance for the advances, so
//! they represent the shares *exactly* (the smallest such integers); shares
//! that are not simple fractions give large advances and windows, which is
//! what they cost. Admission follows the paper's accounting, which is a
//! worst case per thread (it assumes every unlimited warper takes its warp
//! in the same window); it is deliberately conservative.

use hsched_core::share::{gcd, lcm};
use hsched_core::{Duration, Share};
use std::fmt;

/// `d · r`, rounded down to whole nanoseconds; `None` on overflow.
fn scale_duration(d: Duration, r: Share) -> Option<Duration> {
    let ns = u128::from(d.as_nanos()) * u128::from(r.num()) / u128::from(r.den());
    u64::try_from(ns).ok().map(Duration::from_nanos)
}

// ---------------------------------------------------------------------------
// Errors and the node's clock
// ---------------------------------------------------------------------------

/// A configuration the §6 calculations cannot be applied to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// There is nothing to share among.
    NoThreads,
    /// A share of 0 has no reciprocal, hence no mcu advance.
    ZeroShare {
        who: String,
    },
    /// The shares add up to more than the whole CPU.
    SharesExceedCpu {
        total: Share,
    },
    /// An mcu advance of 0 would make a thread's virtual time stand still.
    ZeroAdvance {
        who: String,
    },
    /// §6.1.3 takes a maximum over the threads of each level.
    EmptyLevel {
        level: usize,
    },
    ZeroMcu,
    /// C = 0 mcu: `V = (C/mcu)·lcm(m_i)` would be 0.
    ZeroAllowance,
    /// §6.1.1 computes `V` with `C/mcu`, and §2 calls C "typically larger
    /// than, and a multiple of, mcu": a C that is not a whole number of mcu
    /// (or is zero) gives no window.
    AllowanceNotWholeMcu {
        allowance: Duration,
        mcu: Duration,
    },
    /// A window or warp does not fit in 64 bits.
    Overflow {
        what: &'static str,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NoThreads => f.write_str("no threads to share the CPU among"),
            ConfigError::ZeroShare { who } => {
                write!(f, "{who} has a share of 0 (it has no mcu advance)")
            }
            ConfigError::SharesExceedCpu { total } => write!(
                f,
                "the shares add up to {} of the CPU, more than 100%",
                total.percent_string()
            ),
            ConfigError::ZeroAdvance { who } => {
                write!(f, "{who} has an mcu advance of 0 (expected at least 1)")
            }
            ConfigError::EmptyLevel { level } => {
                write!(f, "priority level {level} has no threads")
            }
            ConfigError::ZeroMcu => f.write_str("the mcu is 0"),
            ConfigError::ZeroAllowance => {
                f.write_str("the context switch allowance C is 0 mcu (no window)")
            }
            ConfigError::AllowanceNotWholeMcu { allowance, mcu } => write!(
                f,
                "the context switch allowance C = {allowance} is not a positive whole number of mcu ({mcu})"
            ),
            ConfigError::Overflow { what } => write!(f, "{what} does not fit in 64 bits"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A BVT node's time base: the minimum charging unit (mcu) and the context
/// switch allowance C, a positive whole number of mcu (§2, §6.1.1).
///
/// ```
/// use hsched_analysis::bvt_config::BvtClock;
/// use hsched_core::Duration;
/// let clock = BvtClock::new(Duration::from_millis(10), Duration::from_millis(20)).unwrap();
/// assert_eq!(clock.c_mcu(), 2);
/// // §2: running 25ms is charged as 3 mcu.
/// assert_eq!(clock.charged_mcu(Duration::from_millis(25)), 3);
/// assert!(BvtClock::new(Duration::from_millis(10), Duration::from_millis(25)).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BvtClock {
    mcu: Duration,
    allowance: Duration,
}

impl BvtClock {
    pub fn new(mcu: Duration, allowance: Duration) -> Result<BvtClock, ConfigError> {
        if mcu.is_zero() {
            return Err(ConfigError::ZeroMcu);
        }
        if allowance.is_zero() || allowance.as_nanos() % mcu.as_nanos() != 0 {
            return Err(ConfigError::AllowanceNotWholeMcu { allowance, mcu });
        }
        Ok(BvtClock { mcu, allowance })
    }
    pub fn mcu(&self) -> Duration {
        self.mcu
    }
    /// C as time.
    pub fn allowance(&self) -> Duration {
        self.allowance
    }
    /// C in mcu.
    pub fn c_mcu(&self) -> u64 {
        self.allowance.as_nanos() / self.mcu.as_nanos()
    }
    /// `n` mcu as time; `None` on overflow.
    pub fn mcus(&self, n: u64) -> Option<Duration> {
        self.mcu.checked_mul(n)
    }
    /// How many mcu running for `t` is charged: §2 rounds up to the next
    /// multiple of mcu.
    pub fn charged_mcu(&self, t: Duration) -> u64 {
        t.as_nanos().div_ceil(self.mcu.as_nanos())
    }
}

// ---------------------------------------------------------------------------
// §6.1.1 CPU share: advances, V and W
// ---------------------------------------------------------------------------

/// §6.1.1: the smallest integer mcu advances that represent `shares`
/// exactly: "taking the reciprocals of the weights and then scaling so they
/// are small integers".
///
/// Each share `w_i = p_i/q_i` (reduced) has reciprocal `q_i/p_i`; multiplying
/// by `lcm(p_i)` makes them all integers, and dividing by their gcd makes
/// them the smallest integers in the same proportion. Shares may add up to
/// less than 100 % (e.g. when warp-limited threads are deducted, §6.1.1):
/// advances only fix the proportions.
///
/// The paper's example: 10 %, 30 %, 60 % → reciprocals 10, 10/3, 5/3 →
/// advances 6, 2, 1.
///
/// ```
/// use hsched_analysis::bvt_config::advances_from_shares;
/// use hsched_core::Share;
/// let shares = [Share::percent(10), Share::percent(30), Share::percent(60)];
/// assert_eq!(advances_from_shares(&shares).unwrap(), vec![6, 2, 1]);
/// ```
pub fn advances_from_shares(shares: &[Share]) -> Result<Vec<u64>, ConfigError> {
    if shares.is_empty() {
        return Err(ConfigError::NoThreads);
    }
    let mut total = Share::ZERO;
    let mut common = 1u64; // lcm of the shares' numerators
    for (i, s) in shares.iter().enumerate() {
        if s.is_zero() {
            return Err(ConfigError::ZeroShare {
                who: format!("thread #{}", i + 1),
            });
        }
        total = total.checked_add(*s).ok_or(ConfigError::Overflow {
            what: "the total share",
        })?;
        common = lcm(common, s.num()).ok_or(ConfigError::Overflow {
            what: "the advances' common multiple",
        })?;
    }
    if total > Share::ONE {
        return Err(ConfigError::SharesExceedCpu { total });
    }
    // reciprocal · lcm = q_i · (lcm / p_i): an integer by construction.
    let scaled: Vec<u128> = shares
        .iter()
        .map(|s| u128::from(s.den()) * u128::from(common / s.num()))
        .collect();
    let g = scaled.iter().fold(0u128, |g, &m| gcd(g, m));
    scaled
        .iter()
        .map(|&m| {
            u64::try_from(m / g).map_err(|_| ConfigError::Overflow {
                what: "an mcu advance",
            })
        })
        .collect()
}

/// The windows of a set of threads under one BVT node (§6.1.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// `m_i`, one per thread, in the order given.
    pub advances: Vec<u64>,
    /// C in mcu.
    pub c_mcu: u64,
    /// `V = (C/mcu) · lcm(m_i)`, in virtual time units.
    pub virtual_window: u64,
    /// `V/m_i`: the mcu thread `i` runs to consume `V` units.
    pub run_mcu: Vec<u64>,
    /// `W = Σ V/m_i`: the physical window, in mcu.
    pub physical_window_mcu: u64,
}

impl Window {
    /// Thread `i`'s share over `W`: `(V/m_i) / W`, exactly.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::window_from_advances;
    /// use hsched_core::Share;
    /// let w = window_from_advances(&[6, 2, 1], 2).unwrap();
    /// assert_eq!(w.share(1), Share::percent(30));
    /// ```
    pub fn share(&self, i: usize) -> Share {
        Share::new(self.run_mcu[i], self.physical_window_mcu).expect("W > 0")
    }
    /// `W` as time; `None` on overflow.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::window_from_advances;
    /// use hsched_core::Duration;
    /// let w = window_from_advances(&[6, 2, 1], 2).unwrap();
    /// assert_eq!(w.physical_window(Duration::from_millis(10)), Some(Duration::from_millis(200)));
    /// ```
    pub fn physical_window(&self, mcu: Duration) -> Option<Duration> {
        mcu.checked_mul(self.physical_window_mcu)
    }
}

/// §6.1.1: the virtual window `V` and physical window `W` of threads with
/// mcu advances `advances`, with C = `c_mcu` mcu.
///
/// The paper: "To calculate V, the designer computes the least common
/// multiple of the MCU advances times C/mcu"; "the physical window (W) …
/// is the amount of real time it takes for all threads to consume V units
/// of virtual time", i.e. `W = Σ V/m_i` mcu. (Why C/mcu: a dispatched thread
/// runs until it leads by C/w_i, that is `(C/mcu)·m_i` units, so a window
/// made of whole such steps for every thread is a common multiple of the
/// `(C/mcu)·m_i`.)
///
/// The paper's example: advances 6, 2, 1 with C = 2 mcu → `V = 2·lcm(6,2,1)
/// = 12`; the threads take 2, 6 and 12 mcu to consume 12 units, so `W = 20`
/// mcu, in which they receive exactly 10 %, 30 % and 60 %.
///
/// ```
/// use hsched_analysis::bvt_config::window_from_advances;
/// let w = window_from_advances(&[6, 2, 1], 2).unwrap();
/// assert_eq!(w.virtual_window, 12);
/// assert_eq!(w.run_mcu, vec![2, 6, 12]);
/// assert_eq!(w.physical_window_mcu, 20);
/// ```
pub fn window_from_advances(advances: &[u64], c_mcu: u64) -> Result<Window, ConfigError> {
    if advances.is_empty() {
        return Err(ConfigError::NoThreads);
    }
    let mut l = 1u64;
    for (i, &m) in advances.iter().enumerate() {
        if m == 0 {
            return Err(ConfigError::ZeroAdvance {
                who: format!("thread #{}", i + 1),
            });
        }
        l = lcm(l, m).ok_or(ConfigError::Overflow {
            what: "the virtual window V",
        })?;
    }
    let v = l.checked_mul(c_mcu).ok_or(ConfigError::Overflow {
        what: "the virtual window V",
    })?;
    if v == 0 {
        return Err(ConfigError::ZeroAllowance);
    }
    let run_mcu: Vec<u64> = advances.iter().map(|&m| v / m).collect();
    let w = run_mcu
        .iter()
        .try_fold(0u64, |acc, &r| acc.checked_add(r))
        .ok_or(ConfigError::Overflow {
            what: "the physical window W",
        })?;
    Ok(Window {
        advances: advances.to_vec(),
        c_mcu,
        virtual_window: v,
        run_mcu,
        physical_window_mcu: w,
    })
}

/// §6.1.1 end to end: shares → advances → `V`, `W`.
///
/// ```
/// use hsched_analysis::bvt_config::window_from_shares;
/// use hsched_core::Share;
/// let w = window_from_shares(&[Share::percent(10), Share::percent(30), Share::percent(60)], 2).unwrap();
/// assert_eq!((w.advances.clone(), w.virtual_window, w.physical_window_mcu), (vec![6, 2, 1], 12, 20));
/// ```
pub fn window_from_shares(shares: &[Share], c_mcu: u64) -> Result<Window, ConfigError> {
    window_from_advances(&advances_from_shares(shares)?, c_mcu)
}

// ---------------------------------------------------------------------------
// Warps: lead time, m = W_i/V, worst-case share (§6.1.1, §6.2.3)
// ---------------------------------------------------------------------------

/// How many mcu a thread with `warp` units runs before its effective virtual
/// time (EVT) climbs back to the SVT it woke at: `warp/advance` (it gains
/// `advance` units per mcu). `None` if `advance` is 0.
///
/// §6.2.3 (web server): "With 50 units of warp, thread 2 may run for up to
/// five quanta in a row while thread 1 waits", i.e. 10 units per quantum;
/// with a 1-mcu quantum that is an advance of 10:
///
/// ```
/// use hsched_analysis::bvt_config::warp_lead_mcu;
/// use hsched_core::Share;
/// assert_eq!(warp_lead_mcu(50, 10), Some(Share::integer(5)));
/// ```
///
/// The allowance C is not included: once level with the others, the thread
/// keeps the CPU up to C longer before a switch (§2.1), which the paper's
/// "up to five quanta" leaves out.
pub fn warp_lead_mcu(warp: u64, advance: u64) -> Option<Share> {
    Share::new(warp, advance)
}

/// The warp (virtual units, rounded up) that lets a thread with `advance`
/// run `lead` ahead, the inverse of [`warp_lead_mcu`]. `None` on overflow.
///
/// ```
/// use hsched_analysis::bvt_config::{warp_units, BvtClock};
/// use hsched_core::Duration;
/// let clock = BvtClock::new(Duration::from_millis(10), Duration::from_millis(10)).unwrap();
/// // §6.2.3: five 10ms quanta at 10 units per quantum.
/// assert_eq!(warp_units(Duration::from_millis(50), 10, &clock), Some(50));
/// ```
pub fn warp_units(lead: Duration, advance: u64, clock: &BvtClock) -> Option<u64> {
    let units = u128::from(lead.as_nanos()) * u128::from(advance);
    u64::try_from(units.div_ceil(u128::from(clock.mcu().as_nanos()))).ok()
}

/// §6.1.1: `m = W_i/V`, "the number of scheduling windows its warp allows it
/// to advance" (`W_i` is the warp, `V` the virtual window), exactly.
///
/// ```
/// use hsched_analysis::bvt_config::{warp_windows, window_from_advances};
/// use hsched_core::Share;
/// let w = window_from_advances(&[6, 2, 1], 2).unwrap(); // V = 12
/// assert_eq!(warp_windows(48, &w), Share::integer(4));
/// ```
pub fn warp_windows(warp: u64, window: &Window) -> Share {
    Share::new(warp, window.virtual_window).expect("V > 0")
}

/// §6.1.1: the worst-case share of a thread with share `share` whose warp
/// lets it advance `m` windows and is not bounded by an unwarp time
/// requirement, over an application window of `windows` minimal windows.
///
/// The paper: "one of these threads could unblock at SVT, warp and run for
/// m of its CPU shares … we can allow `m * w_i` as its worst-case share"
/// (one window), and "with an application scheduling window of 4 times the
/// minimal …, the above thread can use at most 7 times its CPU share over 4
/// scheduling windows" (m = 4). Both are `share · (k + m − 1)/k` with
/// `k = windows`: the borrowed `m − 1` extra shares are paid back over the
/// `k` windows. Never less than `share` (a warp under one window borrows
/// nothing here). `None` if `windows` is 0 or on overflow.
///
/// ```
/// use hsched_analysis::bvt_config::worst_case_share;
/// use hsched_core::Share;
/// let w = Share::percent(5);
/// assert_eq!(worst_case_share(w, Share::integer(4), 1), Some(Share::percent(20)));
/// // 7 shares over 4 windows: 7/4 · 5 % = 8.75 %, "less than twice its share".
/// assert_eq!(worst_case_share(w, Share::integer(4), 4), Share::new(7, 80));
/// ```
pub fn worst_case_share(share: Share, m: Share, windows: u64) -> Option<Share> {
    if windows == 0 {
        return None;
    }
    let k = Share::integer(windows);
    // k + m − 1, floored at k (m < 1 borrows less than a share).
    let shares_used = k.checked_add(m)?.checked_sub(Share::ONE)?.max(k);
    share.checked_mul(shares_used.checked_div(k)?)
}

/// The most CPU a thread can run *warped* within any `span` of real time
/// when each warped run lasts at most `limit` (`L_i`) and it may not warp
/// again until `unwarp` (`U_i`) after it unwarps (§2.2). `None` when the
/// warp is not bounded that way: `L_i = 0` means no warp time limit, and
/// with `U_i = 0` the thread may warp again at once.
///
/// The worst case starts the span with a full run: `n = ⌊span/(L+U)⌋`
/// whole periods, then `min(L, rest)`.
///
/// ```
/// use hsched_analysis::bvt_config::max_warped_time;
/// use hsched_core::Duration;
/// let ms = Duration::from_millis;
/// // §2.2's device thread: L = 1ms, U = 99ms: 2ms warped in any 200ms.
/// assert_eq!(max_warped_time(ms(1), ms(99), ms(200)), Some(ms(2)));
/// assert_eq!(max_warped_time(ms(10), ms(180), ms(400)), Some(ms(30)));
/// assert_eq!(max_warped_time(Duration::ZERO, ms(99), ms(200)), None);
/// ```
pub fn max_warped_time(limit: Duration, unwarp: Duration, span: Duration) -> Option<Duration> {
    if limit.is_zero() || unwarp.is_zero() {
        return None;
    }
    let (l, span) = (u128::from(limit.as_nanos()), u128::from(span.as_nanos()));
    let period = l + u128::from(unwarp.as_nanos());
    let n = span / period;
    let rest = span - n * period;
    u64::try_from(n * l + rest.min(l))
        .ok()
        .map(Duration::from_nanos)
}

// ---------------------------------------------------------------------------
// §6.1.3 Response time: priority levels → warps
// ---------------------------------------------------------------------------

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
/// use hsched_analysis::bvt_config::{warps_from_priorities, BvtClock, PrioThread};
/// use hsched_core::Share;
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

// ---------------------------------------------------------------------------
// Admission control for reserved-effort threads (§6.1.1, §6.3)
// ---------------------------------------------------------------------------

/// A reserved-effort thread as the admission module sees it.
///
/// Its warp is given as a *lead time* (how long it may run ahead of SVT,
/// see [`warp_lead_mcu`]) rather than in virtual units: admission
/// recomputes every advance when the set changes ("the system needs to
/// readjust the weights of the threads as new threads are created",
/// §6.1.1), and a warp in units would silently change meaning with them.
/// [`Admitted::warps`] gives the units to configure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReThread {
    pub name: String,
    /// The reserved fraction of the CPU.
    pub share: Share,
    /// Warp as lead time; zero for a thread that does not warp.
    pub warp_lead: Duration,
    /// `L_i` (0: no warp time limit).
    pub warp_limit: Duration,
    /// `U_i` (0: no unwarp time requirement).
    pub unwarp: Duration,
}

impl ReThread {
    /// A thread that does not warp.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::ReThread;
    /// use hsched_core::Share;
    /// let t = ReThread::new("review", Share::percent(10));
    /// assert!(t.warp_lead.is_zero());
    /// ```
    pub fn new(name: &str, share: Share) -> ReThread {
        ReThread {
            name: name.to_string(),
            share,
            warp_lead: Duration::ZERO,
            warp_limit: Duration::ZERO,
            unwarp: Duration::ZERO,
        }
    }
    /// The same thread, warping `lead` ahead with limits `L_i`, `U_i`.
    ///
    /// ```
    /// use hsched_analysis::bvt_config::ReThread;
    /// use hsched_core::Share;
    /// use hsched_core::Duration;
    /// let ms = Duration::from_millis;
    /// let t = ReThread::new("device", Share::percent(5)).warping(ms(50), ms(1), ms(99));
    /// assert_eq!(t.warp_limit, ms(1));
    /// ```
    pub fn warping(mut self, lead: Duration, warp_limit: Duration, unwarp: Duration) -> ReThread {
        self.warp_lead = lead;
        self.warp_limit = warp_limit;
        self.unwarp = unwarp;
        self
    }
}

/// The admitted RE threads of one first-level (RE) BVT node, its clock, and
/// the aggregate share reserved for best-effort threads (the second-level
/// BE scheduler, §6.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReSet {
    pub clock: BvtClock,
    pub be_share: Share,
    pub threads: Vec<ReThread>,
}

/// A successful admission: the configuration to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admitted {
    /// Advances and windows of the RE threads (the new one last), followed
    /// by the BE scheduler when `be_share > 0`.
    pub window: Window,
    /// Each RE thread's warp in virtual units under the new advances.
    pub warps: Vec<u64>,
    /// The share each RE thread is counted for: its own, or the §6.1.1
    /// worst case `m·w_i` for a warp unbounded by `U_i`.
    pub counted: Vec<Share>,
    /// Σ counted + BE share.
    pub reserved: Share,
    /// `1 − reserved`.
    pub unallocated: Share,
}

/// Why an RE thread was refused. The Display names the thread and the
/// numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Total RE share would exceed 100 % less the BE aggregate share.
    Overcommitted {
        thread: String,
        /// The share it is counted for.
        needs: Share,
        /// The share it asked for (differs when its warp is counted at the
        /// worst case).
        requested: Share,
        /// What the other RE threads are counted for.
        others: Share,
        be_share: Share,
        /// `1 − be_share − others` (0 if negative).
        available: Share,
        /// `Σ counted + be_share − 1`.
        short_by: Share,
        /// Whether unbounded warps were counted at `m·w_i`.
        worst_case: bool,
    },
    /// A warping thread whose `L_i`/`U_i` let it run warped longer within
    /// the scheduling window `W` than its share of `W` (§6.1.1: its share
    /// must be "more than the share provided by the warp limits").
    WarpLimitsExceedShare {
        /// The thread being admitted.
        admitting: String,
        /// The thread whose limits fail (the new one or, when the new one
        /// changes `W`, another).
        thread: String,
        warp_limit: Duration,
        unwarp: Duration,
        warped: Duration,
        allowed: Duration,
        window: Duration,
    },
    /// The set cannot be configured at all.
    Invalid { thread: String, error: ConfigError },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Overcommitted {
                thread,
                needs,
                requested,
                others,
                be_share,
                available,
                short_by,
                worst_case,
            } => {
                write!(f, "refused `{thread}`: ")?;
                if *worst_case {
                    f.write_str(
                        "counting warps without an unwarp time requirement at their worst case (§6.1.1, m·w_i), ",
                    )?;
                }
                write!(f, "it needs {}", needs.percent_string())?;
                if needs != requested {
                    write!(f, " (share {})", requested.percent_string())?;
                }
                write!(
                    f,
                    " of the CPU but only {} is unallocated (RE threads {} {}, best-effort {}): short by {}",
                    available.percent_string(),
                    if *worst_case { "count" } else { "hold" },
                    others.percent_string(),
                    be_share.percent_string(),
                    short_by.percent_string()
                )
            }
            Refusal::WarpLimitsExceedShare {
                admitting,
                thread,
                warp_limit,
                unwarp,
                warped,
                allowed,
                window,
            } => {
                write!(f, "refused `{admitting}`: ")?;
                if admitting != thread {
                    write!(f, "with it, ")?;
                }
                write!(
                    f,
                    "`{thread}`'s warp limits (L = {warp_limit}, U = {unwarp}) let it run warped {warped} in a {window} scheduling window, more than its share of it ({allowed}): over by {}",
                    warped.saturating_sub(*allowed)
                )
            }
            Refusal::Invalid { thread, error } => write!(f, "refused `{thread}`: {error}"),
        }
    }
}

impl std::error::Error for Refusal {}

/// How one thread's warp is accounted for in admission.
struct WarpAccount {
    counted: Share,
    /// For a warp bounded by `L_i`/`U_i`: (max warped time in W, share of W).
    bounded: Option<(Duration, Duration)>,
}

/// The §6.1.1 accounting of one thread: a non-warping thread or one whose
/// warp `L_i`/`U_i` bound counts its share (and must keep its warped time in
/// `W` under that share); any other warper counts `m·w_i`.
fn account(
    share: Share,
    warp: u64,
    limit: Duration,
    unwarp: Duration,
    window: &Window,
    clock: &BvtClock,
) -> Result<WarpAccount, ConfigError> {
    if warp == 0 {
        return Ok(WarpAccount {
            counted: share,
            bounded: None,
        });
    }
    let w_time = window
        .physical_window(clock.mcu())
        .ok_or(ConfigError::Overflow {
            what: "the physical window W",
        })?;
    if let Some(warped) = max_warped_time(limit, unwarp, w_time) {
        let allowed = scale_duration(w_time, share).ok_or(ConfigError::Overflow {
            what: "a share of W",
        })?;
        return Ok(WarpAccount {
            counted: share,
            bounded: Some((warped, allowed)),
        });
    }
    let counted =
        worst_case_share(share, warp_windows(warp, window), 1).ok_or(ConfigError::Overflow {
            what: "a worst-case share",
        })?;
    Ok(WarpAccount {
        counted,
        bounded: None,
    })
}

/// §6.1.1 / §6.3: admission control for a new reserved-effort thread.
///
/// `new` is admitted iff, with it,
/// 1. the RE shares add up to at most 100 % less the BE aggregate share
///    ("a new thread requiring 10 percent of the CPU when only 5 percent is
///    unallocated should be refused");
/// 2. every warping thread whose warp is bounded by a warp time limit and
///    an unwarp time requirement runs warped, within the scheduling window
///    `W`, no more than its share of `W` ("limited by the warp time limits
///    to using no more than this amount over a scheduling window");
/// 3. counting every other warping thread at its worst case `m·w_i`
///    (`m = W_i/V`), the total still fits.
///
/// The advances are recomputed for the whole set (RE threads, then the BE
/// scheduler), so `V`, `W` and the warps in units come out with it.
///
/// ```
/// use hsched_analysis::bvt_config::{admit, BvtClock, ReSet, ReThread};
/// use hsched_core::Share;
/// use hsched_core::Duration;
/// let ms = Duration::from_millis;
/// let set = ReSet {
///     clock: BvtClock::new(ms(10), ms(20)).unwrap(),
///     be_share: Share::ZERO,
///     threads: vec![
///         ReThread::new("a", Share::percent(10)),
///         ReThread::new("b", Share::percent(30)),
///         ReThread::new("c", Share::percent(55)),
///     ],
/// };
/// // 10 % when only 5 % is unallocated: refused, short by 5 %.
/// let refusal = admit(&set, &ReThread::new("d", Share::percent(10))).unwrap_err();
/// assert!(refusal.to_string().contains("only 5% is unallocated"));
/// assert!(refusal.to_string().ends_with("short by 5%"));
/// // 5 % fits exactly.
/// let ok = admit(&set, &ReThread::new("d", Share::percent(5))).unwrap();
/// assert_eq!(ok.unallocated, Share::ZERO);
/// ```
pub fn admit(set: &ReSet, new: &ReThread) -> Result<Admitted, Refusal> {
    let all: Vec<&ReThread> = set.threads.iter().chain(std::iter::once(new)).collect();
    let clock = &set.clock;
    let invalid = |thread: &str, error| Refusal::Invalid {
        thread: thread.to_string(),
        error,
    };
    let overflow = |what| invalid(&new.name, ConfigError::Overflow { what });
    for t in &all {
        if t.share.is_zero() {
            return Err(invalid(
                &t.name,
                ConfigError::ZeroShare {
                    who: format!("`{}`", t.name),
                },
            ));
        }
    }
    // 1. Plain shares.
    let sum = |it: &[Share]| {
        it.iter()
            .try_fold(Share::ZERO, |a, s| a.checked_add(*s))
            .ok_or(overflow("the total share"))
    };
    let others = sum(&set.threads.iter().map(|t| t.share).collect::<Vec<_>>())?;
    let total = sum(&[others, new.share, set.be_share])?;
    if total > Share::ONE {
        return Err(Refusal::Overcommitted {
            thread: new.name.clone(),
            needs: new.share,
            requested: new.share,
            others,
            be_share: set.be_share,
            available: Share::ONE
                .saturating_sub(set.be_share)
                .saturating_sub(others),
            short_by: total.saturating_sub(Share::ONE),
            worst_case: false,
        });
    }
    // The node's children: RE threads, then the BE scheduler.
    let mut shares: Vec<Share> = all.iter().map(|t| t.share).collect();
    if !set.be_share.is_zero() {
        shares.push(set.be_share);
    }
    let window = window_from_shares(&shares, clock.c_mcu()).map_err(|e| invalid(&new.name, e))?;
    let w_time = window
        .physical_window(clock.mcu())
        .ok_or(overflow("the physical window W"))?;
    // 2. Warps bounded by L_i/U_i; 3. the others at their worst case.
    let mut warps = Vec::with_capacity(all.len());
    let mut counted = Vec::with_capacity(all.len());
    for (t, &advance) in all.iter().zip(&window.advances) {
        let warp = if t.warp_lead.is_zero() {
            0
        } else {
            warp_units(t.warp_lead, advance, clock).ok_or(overflow("a warp"))?
        };
        let acc = account(t.share, warp, t.warp_limit, t.unwarp, &window, clock)
            .map_err(|e| invalid(&t.name, e))?;
        if let Some((warped, allowed)) = acc.bounded {
            if warped > allowed {
                return Err(Refusal::WarpLimitsExceedShare {
                    admitting: new.name.clone(),
                    thread: t.name.clone(),
                    warp_limit: t.warp_limit,
                    unwarp: t.unwarp,
                    warped,
                    allowed,
                    window: w_time,
                });
            }
        }
        warps.push(warp);
        counted.push(acc.counted);
    }
    let others = sum(&counted[..counted.len() - 1])?;
    let needs = *counted.last().expect("the new thread");
    let reserved = sum(&[others, needs, set.be_share])?;
    if reserved > Share::ONE {
        return Err(Refusal::Overcommitted {
            thread: new.name.clone(),
            needs,
            requested: new.share,
            others,
            be_share: set.be_share,
            available: Share::ONE
                .saturating_sub(set.be_share)
                .saturating_sub(others),
            short_by: reserved.saturating_sub(Share::ONE),
            worst_case: true,
        });
    }
    Ok(Admitted {
        window,
        warps,
        counted,
        reserved,
        unallocated: Share::ONE.saturating_sub(reserved),
    })
}

// ---------------------------------------------------------------------------
// Reading a configured node back (describe)
// ---------------------------------------------------------------------------

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
/// use hsched_analysis::bvt_config::{describe, BvtChild, BvtClock};
/// use hsched_core::Share;
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

// ---------------------------------------------------------------------------
// The paper's numbers
// ---------------------------------------------------------------------------

/// A number the paper states, next to the value computed here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaperNumber {
    /// Section of the BVT paper.
    pub section: &'static str,
    pub quantity: &'static str,
    pub paper: Share,
    pub computed: Share,
}

/// Every number §6 of the BVT paper states that this module computes, each
/// computed through the public functions above (for `hsched repro`).
///
/// ```
/// use hsched_analysis::bvt_config::paper_numbers;
/// let numbers = paper_numbers();
/// assert!(numbers.iter().all(|n| n.paper == n.computed));
/// let w = numbers.iter().find(|n| n.quantity == "physical window W (mcu)").unwrap();
/// assert_eq!(w.computed.to_string(), "20");
/// ```
pub fn paper_numbers() -> Vec<PaperNumber> {
    let mut out = Vec::new();
    let mut push = |section, quantity, paper: Share, computed: Share| {
        out.push(PaperNumber {
            section,
            quantity,
            paper,
            computed,
        })
    };
    let int = Share::integer;
    let pct = Share::percent;

    // §6.1.1: 10 %, 30 %, 60 %, C = 2 mcu.
    let w = window_from_shares(&[pct(10), pct(30), pct(60)], 2).expect("the paper's example");
    let s = "BVT §6.1.1";
    push(
        s,
        "mcu advance of the 10% thread",
        int(6),
        int(w.advances[0]),
    );
    push(
        s,
        "mcu advance of the 30% thread",
        int(2),
        int(w.advances[1]),
    );
    push(
        s,
        "mcu advance of the 60% thread",
        int(1),
        int(w.advances[2]),
    );
    push(s, "virtual window V", int(12), int(w.virtual_window));
    push(
        s,
        "mcu for the 10% thread to consume V",
        int(2),
        int(w.run_mcu[0]),
    );
    push(
        s,
        "mcu for the 30% thread to consume V",
        int(6),
        int(w.run_mcu[1]),
    );
    push(
        s,
        "mcu for the 60% thread to consume V",
        int(12),
        int(w.run_mcu[2]),
    );
    push(
        s,
        "physical window W (mcu)",
        int(20),
        int(w.physical_window_mcu),
    );
    for (i, q) in [
        "share of the 10% thread over W",
        "share of the 30% thread over W",
        "share of the 60% thread over W",
    ]
    .into_iter()
    .enumerate()
    {
        push(s, q, pct([10, 30, 60][i]), w.share(i));
    }

    // §6.1.1, warping threads: a 5 % thread whose warp is 4 windows (m = 4)
    // and has no unwarp time requirement, admitted beside 5 % + 10 % + 30 %.
    let clock = BvtClock::new(Duration::from_millis(10), Duration::from_millis(20))
        .expect("10ms, C = 2 mcu");
    let set = ReSet {
        clock,
        be_share: Share::ZERO,
        threads: vec![
            ReThread::new("rt2", pct(5)),
            ReThread::new("a", pct(10)),
            ReThread::new("b", pct(30)),
        ],
    };
    // A warp lead of 4× the thread's CPU per window is m = 4 (the new
    // thread comes last in the admitted set).
    let probe = window_from_shares(&[pct(5), pct(10), pct(30), pct(5)], 2).expect("valid");
    let lead = clock.mcus(4 * probe.run_mcu[3]).expect("small");
    let warper = ReThread::new("rt", pct(5)).warping(lead, Duration::ZERO, Duration::ZERO);
    let (m, counted) = match admit(&set, &warper) {
        Ok(a) => (warp_windows(a.warps[3], &a.window), a.counted[3]),
        Err(_) => (Share::ZERO, Share::ZERO),
    };
    push(s, "m = W_i/V of the warping 5% thread", int(4), m);
    push(
        s,
        "worst-case share of a 5% thread with m = 4",
        pct(20),
        counted,
    );
    let over4 = worst_case_share(pct(5), m, 4).unwrap_or(Share::ZERO);
    push(
        s,
        "shares used over 4 windows with m = 4",
        int(7),
        // over4 is the share per window; over 4 windows, in units of 5 %.
        over4
            .checked_mul(int(4))
            .and_then(|r| r.checked_div(pct(5)))
            .unwrap_or(Share::ZERO),
    );
    push(
        s,
        "application window of 4 minimal windows (mcu)",
        int(80),
        int(4 * w.physical_window_mcu),
    );

    // §6.1.1, admission: 10 % requested when 5 % is unallocated.
    let full = ReSet {
        clock,
        be_share: pct(10),
        threads: vec![
            ReThread::new("a", pct(10)),
            ReThread::new("b", pct(30)),
            ReThread::new("c", pct(45)),
        ],
    };
    let (available, short_by) = match admit(&full, &ReThread::new("new", pct(10))) {
        Err(Refusal::Overcommitted {
            available,
            short_by,
            ..
        }) => (available, short_by),
        _ => (Share::ONE, Share::ZERO),
    };
    push(s, "unallocated share when refusing 10%", pct(5), available);
    push(s, "refused 10% thread: short by", pct(5), short_by);

    // §6.2.3: 50 units of warp at 10 units per quantum (1 quantum = 1 mcu).
    push(
        "BVT §6.2.3",
        "quanta a 50-unit warp runs ahead (10 units/quantum)",
        int(5),
        warp_lead_mcu(50, 10).expect("advance > 0"),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }
    fn pct(p: u64) -> Share {
        Share::percent(p)
    }

    #[test]
    fn paper_6_1_1_shares_give_advances_6_2_1_v_12_w_20() {
        let shares = [pct(10), pct(30), pct(60)];
        // "the reciprocals are 10, 10/3, and 5/3"
        let recips: Vec<String> = shares
            .iter()
            .map(|s| Share::ONE.checked_div(*s).unwrap().to_string())
            .collect();
        assert_eq!(recips, ["10", "10/3", "5/3"]);
        let w = window_from_shares(&shares, 2).unwrap();
        assert_eq!(w.advances, [6, 2, 1]);
        // "V is 2*lcm(6,2,1) = 12"
        assert_eq!(w.virtual_window, 12);
        // "it takes the threads 2 mcu, 6 mcu, and 12 mcu respectively"
        assert_eq!(w.run_mcu, [2, 6, 12]);
        // "the physical window is 20"
        assert_eq!(w.physical_window_mcu, 20);
        // "each thread will receive exactly its weighted share"
        for (i, s) in shares.iter().enumerate() {
            assert_eq!(w.share(i), *s);
        }
    }

    #[test]
    fn advances_are_the_smallest_exact_integers() {
        let a = |s: &[Share]| advances_from_shares(s).unwrap();
        assert_eq!(a(&[pct(50), pct(50)]), [1, 1]);
        assert_eq!(
            a(&[Share::new(1, 3).unwrap(), Share::new(2, 3).unwrap()]),
            [2, 1]
        );
        // 33/33/34: 100/33 : 100/33 : 50/17 = 34 : 34 : 33, no smaller.
        assert_eq!(a(&[pct(33), pct(33), pct(34)]), [34, 34, 33]);
        // Only proportions matter: shares under 100 % are fine.
        assert_eq!(a(&[pct(10), pct(20)]), [2, 1]);
        assert_eq!(
            advances_from_shares(&[pct(60), pct(50)]),
            Err(ConfigError::SharesExceedCpu { total: pct(110) })
        );
        assert!(matches!(
            advances_from_shares(&[pct(10), Share::ZERO]),
            Err(ConfigError::ZeroShare { .. })
        ));
        assert_eq!(advances_from_shares(&[]), Err(ConfigError::NoThreads));
    }

    #[test]
    fn paper_6_1_1_two_warp_limited_5_percent_threads() {
        // "to allow for the 10 percent required by these two threads, we
        // reduce the CPU share of the last thread … with the shares of these
        // threads adding up to 90%": 10/30/50 (the last reduced *by* 10 %).
        let rest = window_from_shares(&[pct(10), pct(30), pct(50)], 2).unwrap();
        // 10, 10/3, 2 → ×3 = 30, 10, 6 → ÷2 = 15, 5, 3.
        assert_eq!(rest.advances, [15, 5, 3]);
        assert_eq!(rest.virtual_window, 2 * 15);
        // 30/15 + 30/5 + 30/3 = 2 + 6 + 10 = 18 mcu: 10:30:50 of 90.
        assert_eq!(rest.run_mcu, [2, 6, 10]);
        assert_eq!(rest.physical_window_mcu, 18);
        // The whole node, the two 5 % threads included.
        let all = window_from_shares(&[pct(5), pct(5), pct(10), pct(30), pct(50)], 2).unwrap();
        assert_eq!(all.advances, [30, 30, 15, 5, 3]);
        assert_eq!(all.virtual_window, 60);
        assert_eq!(all.physical_window_mcu, 40);
        assert_eq!(all.share(0), pct(5));
        assert_eq!(all.share(4), pct(50));
    }

    #[test]
    fn paper_6_1_1_unlimited_warp_counts_m_times_its_share() {
        // "if m = 4, it could run for 4 of its CPU shares … we would have to
        // allow for 20% … if the actual CPU share allocated was 5 percent."
        let w = window_from_shares(&[pct(5), pct(5), pct(10), pct(30), pct(50)], 2).unwrap();
        let m = warp_windows(4 * w.virtual_window, &w);
        assert_eq!(m, Share::integer(4));
        assert_eq!(worst_case_share(pct(5), m, 1), Some(pct(20)));
        // "with an application scheduling window of 4 times the minimal or
        // 80 mcu, the above thread can use at most 7 times its CPU share over
        // 4 scheduling windows or less than twice its share".
        let original = window_from_shares(&[pct(10), pct(30), pct(60)], 2).unwrap();
        assert_eq!(4 * original.physical_window_mcu, 80);
        let over4 = worst_case_share(pct(5), m, 4).unwrap();
        assert_eq!(over4.checked_mul(Share::integer(4)), Some(pct(5 * 7)));
        assert!(over4 < pct(10));
        // A warp under one window counts no more than the share.
        assert_eq!(
            worst_case_share(pct(5), Share::new(1, 2).unwrap(), 1),
            Some(pct(5))
        );
        assert_eq!(worst_case_share(pct(5), m, 0), None);
    }

    #[test]
    fn paper_6_1_3_warps_by_priority_level() {
        // No numeric example in §6.1.3; §6.2.2 sketches one: "a user priority
        // of 1 … MPEG display thread, providing it with a weight of 10
        // (versus 5 for normal threads), a warp time limit of 20
        // milliseconds, and a warp computable as above, relative to priority
        // 2 interactive threads". Hand computation with mcu = 1ms, C = 10ms,
        // weights 10 % / 5 % / 5 % (MPEG, interactive, batch):
        // - advances: 1/0.10 : 1/0.05 : 1/0.05 = 10 : 20 : 20 = 1 : 2 : 2;
        // - batch (lowest level): warp 0;
        // - interactive: L = 0 ("no limit"), so L = C = 10 mcu; AVT gain
        //   10 mcu × 2 = 20 → warp 20;
        // - MPEG: 20 + 20 mcu × 1 = 40.
        let clock = BvtClock::new(ms(1), ms(10)).unwrap();
        let t = |p, l| PrioThread {
            share: pct(p),
            warp_limit: l,
        };
        let plan = warps_from_priorities(
            &[
                vec![t(10, ms(20))],
                vec![t(5, Duration::ZERO)],
                vec![t(5, Duration::ZERO)],
            ],
            &clock,
        )
        .unwrap();
        assert_eq!(plan.advances, [vec![1], vec![2], vec![2]]);
        assert_eq!(plan.level_warps, [40, 20, 0]);
        // §6.2.2: "the warp is such that an interactive thread i's EVT E_i is
        // the same as SVT after executing C time": it woke at AVT = SVT, and
        // C of running raises AVT by exactly its warp.
        let avt_gain = clock.charged_mcu(clock.allowance()) * plan.advances[1][0];
        assert_eq!(avt_gain, plan.level_warps[1] - plan.level_warps[2]);
    }

    #[test]
    fn warp_increment_takes_the_largest_l_over_w_of_the_higher_level() {
        let clock = BvtClock::new(ms(10), ms(20)).unwrap();
        let lt = |advance, l| LevelThread {
            advance,
            warp_limit: l,
        };
        // Level 1: two threads, L/w = ceil(15/10)=2 mcu × 3 = 6 and
        // 1 mcu × 5 = 5 → 6. Level 2: ceil(25/10) = 3 mcu × 2 = 6.
        // Level 3 (lowest): 0. So warps 12, 6, 0.
        let warps = warps_for_advances(
            &[
                vec![lt(3, ms(15)), lt(5, ms(10))],
                vec![lt(2, ms(25))],
                vec![lt(7, Duration::ZERO)],
            ],
            &clock,
        )
        .unwrap();
        assert_eq!(warps, [12, 6, 0]);
        // The lowest level's own limit plays no part.
        assert_eq!(
            warps_for_advances(&[vec![lt(1, ms(90))]], &clock),
            Ok(vec![0])
        );
        assert_eq!(
            warps_for_advances(&[vec![], vec![lt(1, ms(1))]], &clock),
            Err(ConfigError::EmptyLevel { level: 1 })
        );
    }

    #[test]
    fn paper_6_2_3_fifty_units_of_warp_is_five_quanta() {
        // "With 50 units of warp, thread 2 may run for up to five quanta".
        assert_eq!(warp_lead_mcu(50, 10), Some(Share::integer(5)));
        let clock = BvtClock::new(ms(10), ms(10)).unwrap();
        assert_eq!(warp_units(ms(50), 10, &clock), Some(50));
        // Rounded up: a lead of 55ms needs 55 units, 54.5ms too.
        assert_eq!(
            warp_units(Duration::from_micros(54_500), 10, &clock),
            Some(55)
        );
    }

    #[test]
    fn paper_6_1_1_admission_refuses_10_percent_when_5_is_free() {
        let clock = BvtClock::new(ms(10), ms(20)).unwrap();
        let set = ReSet {
            clock,
            be_share: pct(10),
            threads: vec![
                ReThread::new("a", pct(10)),
                ReThread::new("b", pct(30)),
                ReThread::new("c", pct(45)),
            ],
        };
        let r = admit(&set, &ReThread::new("logger", pct(10))).unwrap_err();
        assert_eq!(
            r,
            Refusal::Overcommitted {
                thread: "logger".into(),
                needs: pct(10),
                requested: pct(10),
                others: pct(85),
                be_share: pct(10),
                available: pct(5),
                short_by: pct(5),
                worst_case: false,
            }
        );
        assert_eq!(
            r.to_string(),
            "refused `logger`: it needs 10% of the CPU but only 5% is unallocated \
             (RE threads hold 85%, best-effort 10%): short by 5%"
        );
        // 5 % fits: advances over a, b, c, logger, BE = 10:30:45:5:10 %.
        let ok = admit(&set, &ReThread::new("logger", pct(5))).unwrap();
        assert_eq!(ok.window.advances, [9, 3, 2, 18, 9]);
        assert_eq!(ok.reserved, Share::ONE);
        assert_eq!(ok.unallocated, Share::ZERO);
        assert_eq!(ok.warps, [0, 0, 0, 0]);
    }

    #[test]
    fn admission_checks_warp_limits_against_the_share_of_w() {
        // Two warp-limited 5 % threads beside 10/30/50 (§6.1.1): W = 40 mcu
        // = 400ms, so 5 % is 20ms of warped running per window.
        let clock = BvtClock::new(ms(10), ms(20)).unwrap();
        let rt1 = ReThread::new("rt1", pct(5)).warping(ms(100), ms(10), ms(190));
        let set = ReSet {
            clock,
            be_share: Share::ZERO,
            threads: vec![
                rt1,
                ReThread::new("a", pct(10)),
                ReThread::new("b", pct(30)),
                ReThread::new("c", pct(50)),
            ],
        };
        // L = 10ms every L + U = 200ms: 2 runs, 20ms in 400ms = its 5 %.
        let ok = admit(
            &set,
            &ReThread::new("rt2", pct(5)).warping(ms(100), ms(10), ms(190)),
        )
        .unwrap();
        assert_eq!(ok.window.physical_window_mcu, 40);
        // 100ms lead at advance 30 per 10ms = 300 units; counted at 5 %.
        assert_eq!(ok.warps[0], 300);
        assert_eq!(ok.counted[0], pct(5));
        // U = 180ms: periods of 190ms, 2 whole + min(10, 20) = 30ms > 20ms.
        let r = admit(
            &set,
            &ReThread::new("rt2", pct(5)).warping(ms(100), ms(10), ms(180)),
        )
        .unwrap_err();
        assert_eq!(
            r,
            Refusal::WarpLimitsExceedShare {
                admitting: "rt2".into(),
                thread: "rt2".into(),
                warp_limit: ms(10),
                unwarp: ms(180),
                warped: ms(30),
                allowed: ms(20),
                window: ms(400),
            }
        );
        assert!(r.to_string().contains("over by 10ms"), "{r}");
    }

    #[test]
    fn admission_counts_unbounded_warps_at_their_worst_case() {
        // A 5 % thread with m = 4 and U = 0 counts 20 %: with 10/30/50 %
        // beside it that is 110 %.
        let clock = BvtClock::new(ms(10), ms(20)).unwrap();
        let set = ReSet {
            clock,
            be_share: Share::ZERO,
            threads: vec![
                ReThread::new("a", pct(10)),
                ReThread::new("b", pct(30)),
                ReThread::new("c", pct(50)),
            ],
        };
        // Shares 10/30/50/5 → advances 15:5:3:30, V = 60, W = 38 mcu; the
        // new thread runs V/30 = 2 mcu per window: a lead of 4 × that is m = 4.
        let w = window_from_shares(&[pct(10), pct(30), pct(50), pct(5)], 2).unwrap();
        let lead = clock.mcus(4 * w.run_mcu[3]).unwrap();
        let r = admit(
            &set,
            &ReThread::new("net", pct(5)).warping(lead, ms(5), Duration::ZERO),
        )
        .unwrap_err();
        match &r {
            Refusal::Overcommitted {
                needs,
                requested,
                available,
                short_by,
                worst_case,
                ..
            } => {
                assert_eq!((*needs, *requested), (pct(20), pct(5)));
                assert_eq!(*available, pct(10));
                assert_eq!(*short_by, pct(10));
                assert!(worst_case);
            }
            other => panic!("{other:?}"),
        }
        assert!(r.to_string().contains("it needs 20% (share 5%)"), "{r}");
        // With m = 2 it counts 10 % and fits exactly.
        let lead2 = clock.mcus(2 * w.run_mcu[3]).unwrap();
        let ok = admit(
            &set,
            &ReThread::new("net", pct(5)).warping(lead2, Duration::ZERO, ms(50)),
        )
        .unwrap();
        assert_eq!(ok.counted[3], pct(10));
        assert_eq!(ok.unallocated, Share::ZERO);
    }

    #[test]
    fn describe_reads_a_configured_node_back() {
        let clock = BvtClock::new(ms(10), ms(20)).unwrap();
        let c = |name: &str, advance, warp, l, u| BvtChild {
            name: name.into(),
            advance,
            warp,
            warp_limit: l,
            unwarp: u,
        };
        // §6.1.1's five threads, the two real-time ones warped (60 units =
        // one V; lead = 60/30 = 2 mcu = 20ms), plus a bad gap: rt2 at 70
        // sits 10 above rt1 but its L = 20ms is 2 mcu × 30 = 60 units.
        let d = describe(
            &[
                c("rt1", 30, 60, ms(10), ms(190)),
                c("rt2", 30, 70, ms(20), ms(380)),
                c("a", 15, 0, Duration::ZERO, Duration::ZERO),
                c("b", 5, 0, Duration::ZERO, Duration::ZERO),
                c("c", 3, 0, Duration::ZERO, Duration::ZERO),
            ],
            clock,
        )
        .unwrap();
        assert_eq!(d.window.virtual_window, 60);
        assert_eq!(d.window.physical_window_mcu, 40);
        assert_eq!(d.children[0].share, pct(5));
        assert_eq!(d.children[0].warp_lead_mcu, Share::integer(2));
        assert_eq!(d.children[0].warp_windows, Share::ONE);
        assert_eq!(d.children[0].max_warped, Some(ms(20)));
        assert_eq!(
            d.problems,
            [Problem::WarpGapTooSmall {
                thread: "rt2".into(),
                warp: 70,
                lower_warp: 60,
                needed: 60,
            }]
        );
        let text = d.to_string();
        assert!(
            text.starts_with(
                "bvt: mcu = 10ms, C = 20ms (2 mcu); V = 60 virtual units; W = 40 mcu = 400ms\n"
            ),
            "{text}"
        );
        assert!(text.contains("preempt it 50 units early"), "{text}");
        assert!(text.contains("rt1"), "{text}");
    }

    #[test]
    fn describe_flags_worst_case_overcommit_and_warp_limits() {
        let clock = BvtClock::new(ms(10), ms(10)).unwrap();
        // §6.2.3: equal weights, warp 50, no limits. Advance 10, C = 1 mcu:
        // V = 10, m = 5 each, so two threads count 5 × 50 % each.
        let web = |n: &str| BvtChild {
            name: n.into(),
            advance: 10,
            warp: 50,
            warp_limit: Duration::ZERO,
            unwarp: Duration::ZERO,
        };
        let d = describe(&[web("t1"), web("t2")], clock).unwrap();
        assert_eq!(d.children[0].warp_lead_mcu, Share::integer(5));
        assert_eq!(
            d.problems,
            [Problem::WorstCaseOvercommitted {
                total: Share::integer(5),
                over_by: Share::integer(4),
                warpers: vec![
                    ("t1".into(), Share::integer(5), Share::new(5, 2).unwrap()),
                    ("t2".into(), Share::integer(5), Share::new(5, 2).unwrap()),
                ],
            }]
        );
        // A warp-limited child allowed more warped time than its share.
        let d = describe(
            &[
                BvtChild {
                    name: "dev".into(),
                    advance: 9,
                    warp: 90,
                    warp_limit: ms(20),
                    unwarp: ms(10),
                },
                BvtChild {
                    name: "bulk".into(),
                    advance: 1,
                    warp: 0,
                    warp_limit: Duration::ZERO,
                    unwarp: Duration::ZERO,
                },
            ],
            clock,
        )
        .unwrap();
        // V = 9, W = 1 + 9 = 10 mcu = 100ms; dev's 10 % is 10ms, but L/U
        // allow 20 + 20 + 20 + min(20, 10) = 70ms.
        assert_eq!(
            d.problems,
            [Problem::WarpLimitsExceedShare {
                thread: "dev".into(),
                warped: ms(70),
                allowed: ms(10),
                window: ms(100),
            }]
        );
    }

    #[test]
    fn describe_rejects_unusable_configurations() {
        let clock = BvtClock::new(ms(10), ms(20)).unwrap();
        let zero = BvtChild {
            name: "z".into(),
            advance: 0,
            warp: 0,
            warp_limit: Duration::ZERO,
            unwarp: Duration::ZERO,
        };
        assert_eq!(
            describe(std::slice::from_ref(&zero), clock),
            Err(ConfigError::ZeroAdvance { who: "`z`".into() })
        );
        assert_eq!(describe(&[], clock), Err(ConfigError::NoThreads));
        assert_eq!(
            BvtClock::new(ms(10), ms(15)),
            Err(ConfigError::AllowanceNotWholeMcu {
                allowance: ms(15),
                mcu: ms(10)
            })
        );
        assert!(BvtClock::new(ms(10), Duration::ZERO).is_err());
        assert_eq!(
            BvtClock::new(Duration::ZERO, ms(10)),
            Err(ConfigError::ZeroMcu)
        );
        assert_eq!(
            window_from_advances(&[1], 0),
            Err(ConfigError::ZeroAllowance)
        );
        // An lcm past 64 bits is an error, not a wrap.
        let primes = [1_000_003u64, 1_000_033, 1_000_037, 1_000_039];
        assert!(matches!(
            window_from_advances(&primes, 1),
            Err(ConfigError::Overflow { .. })
        ));
    }

    #[test]
    fn every_paper_number_is_reproduced() {
        let numbers = paper_numbers();
        assert_eq!(numbers.len(), 18);
        for n in &numbers {
            assert_eq!(n.paper, n.computed, "{} {}", n.section, n.quantity);
        }
    }

    #[test]
    fn ratio_arithmetic_is_exact() {
        let third = Share::new(1, 3).unwrap();
        assert_eq!(
            third.checked_add(third).unwrap().checked_add(third),
            Some(Share::ONE)
        );
        assert!(third < pct(34) && third > pct(33));
        assert_eq!(Share::new(0, 5), Some(Share::ZERO));
        assert_eq!(pct(5).percent_string(), "5%");
        assert_eq!(Share::new(2, 3).unwrap().percent_string(), "≈66.67%");
        assert_eq!(Share::new(1, 8).unwrap().percent_string(), "≈12.50%");
        assert_eq!(
            Share::integer(u64::MAX).checked_mul(Share::integer(2)),
            None
        );
        assert_eq!(scale_duration(ms(400), pct(5)), Some(ms(20)));
    }
}
