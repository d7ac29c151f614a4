//! Admission control for reserved-effort threads beside a best-effort
//! aggregate share (§6.1.1, §6.3).

use super::clock::{scale_duration, BvtClock, ConfigError};
use super::warp::{max_warped_time, warp_units, warp_windows, worst_case_share};
use super::window::{window_from_shares, Window};
use hsched_core::Duration;
use hsched_core::Share;
use std::fmt;

/// A reserved-effort thread as the admission module sees it.
///
/// Its warp is given as a *lead time* (how long it may run ahead of SVT,
/// see [`warp_lead_mcu`](crate::bvt_config::warp_lead_mcu)) rather than in virtual units: admission
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
    /// use hsched_analysis::bvt_config::{ReThread, Share};
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
    /// use hsched_analysis::bvt_config::{ReThread, Share};
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
pub(super) struct WarpAccount {
    pub(super) counted: Share,
    /// For a warp bounded by `L_i`/`U_i`: (max warped time in W, share of W).
    pub(super) bounded: Option<(Duration, Duration)>,
}

/// The §6.1.1 accounting of one thread: a non-warping thread or one whose
/// warp `L_i`/`U_i` bound counts its share (and must keep its warped time in
/// `W` under that share); any other warper counts `m·w_i`.
pub(super) fn account(
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
/// use hsched_analysis::bvt_config::{admit, BvtClock, ReSet, ReThread, Share};
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
