//! §6.1.1 CPU share: shares → small-integer mcu advances, the virtual
//! window `V` and the physical window `W`.

use super::clock::ConfigError;
use hsched_core::share::{gcd, lcm};
use hsched_core::Duration;
use hsched_core::Share;

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
/// use hsched_analysis::bvt_config::{advances_from_shares, Share};
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
    /// use hsched_analysis::bvt_config::{window_from_advances, Share};
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
/// use hsched_analysis::bvt_config::{window_from_shares, Share};
/// let w = window_from_shares(&[Share::percent(10), Share::percent(30), Share::percent(60)], 2).unwrap();
/// assert_eq!((w.advances.clone(), w.virtual_window, w.physical_window_mcu), (vec![6, 2, 1], 12, 20));
/// ```
pub fn window_from_shares(shares: &[Share], c_mcu: u64) -> Result<Window, ConfigError> {
    window_from_advances(&advances_from_shares(shares)?, c_mcu)
}
