//! The §6 calculations of the BVT paper against the numbers it states, and
//! the edges of the exact arithmetic they rest on.

use hsched_analysis::bvt_config::*;
use hsched_core::Duration;

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
}
