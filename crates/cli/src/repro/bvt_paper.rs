//! The numbers §6 of the BVT paper states (Duda & Cheriton, SOSP '99),
//! next to the values `hsched_analysis::bvt_config` computes for them: the
//! `bvt-6.1.1` entry of `hsched repro`.

use hsched_analysis::bvt_config::{
    admit, warp_lead_mcu, warp_windows, window_from_shares, worst_case_share, BvtClock, ReSet,
    ReThread, Refusal, Share,
};
use hsched_core::Duration;

/// A number the paper states, next to the value computed here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaperNumber {
    /// Section of the BVT paper.
    pub section: &'static str,
    pub quantity: &'static str,
    pub paper: Share,
    pub computed: Share,
}

/// Every number §6 of the BVT paper states that `bvt_config` computes, each
/// computed through its public functions.
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

    #[test]
    fn every_paper_number_is_reproduced() {
        let numbers = paper_numbers();
        assert_eq!(numbers.len(), 18);
        for n in &numbers {
            assert_eq!(n.paper, n.computed, "{} {}", n.section, n.quantity);
        }
        let w = numbers
            .iter()
            .find(|n| n.quantity == "physical window W (mcu)")
            .unwrap();
        assert_eq!(w.computed.to_string(), "20");
    }
}
