//! Warps (§6.1.1, §6.2.3): how far a warp lets a thread run ahead, `m =
//! W_i/V`, and the worst-case share of a thread whose warp is unbounded.

use super::clock::BvtClock;
use super::window::Window;
use hsched_core::Duration;
use hsched_core::Share;

/// How many mcu a thread with `warp` units runs before its effective virtual
/// time (EVT) climbs back to the SVT it woke at: `warp/advance` (it gains
/// `advance` units per mcu). `None` if `advance` is 0.
///
/// §6.2.3 (web server): "With 50 units of warp, thread 2 may run for up to
/// five quanta in a row while thread 1 waits", i.e. 10 units per quantum;
/// with a 1-mcu quantum that is an advance of 10:
///
/// ```
/// use hsched_analysis::bvt_config::{warp_lead_mcu, Share};
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
/// use hsched_analysis::bvt_config::{warp_windows, window_from_advances, Share};
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
/// use hsched_analysis::bvt_config::{worst_case_share, Share};
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
