//! Reproductions from the HLS paper (Regehr & Stankovic) and the
//! time-sharing baseline the papers compare against.

use super::{node_share, scenario, share, simulate, Bound, Check, Entry};

/// The HLS entries.
pub fn entries() -> Vec<Entry> {
    vec![
        Entry {
            name: "hls-timesharing-equal",
            source: "HLS §5.4 / Rialto §5: the time-sharing baseline",
            claim: "identical CPU-bound threads under round robin share the CPU equally (4 threads: 1/4 each)",
            scenarios: &["scenarios/papers/hls-timesharing-equal.toml"],
            run: || {
                let r = &simulate(scenario!("hls-timesharing-equal.toml"))?;
                Ok({
                r.threads
                    .iter()
                    .map(|t| Check {
                        quantity: format!("share of {}", t.name),
                        paper: 0.25,
                        measured: share(r, &t.name),
                        tolerance: 0.001,
                        why: "one 10ms quantum over the 10s horizon: the last rotation may be cut short",
                        bound: Bound::Within,
                    })
                    .collect()
                })
            },
        },
        Entry {
            name: "hls-5.4-join-slack",
            source: "HLS §4 (join) and §5.4 (schedulers as components)",
            claim: "a join lets a reservation's slack flow to a second scheduler: a 3ms/10ms hard reservation joined with time sharing against one batch thread gives 0.3 + 0.7/2 = 0.65",
            scenarios: &["scenarios/papers/hls-5.4-join-slack.toml"],
            run: || {
                let r = &simulate(scenario!("hls-5.4-join-slack.toml"))?;
                Ok({
                vec![
                    Check {
                        quantity: "share of t (reservation + slack)".into(),
                        paper: 0.65,
                        measured: share(r, "t"),
                        tolerance: 0.01,
                        why: "rr hands out 10ms quanta inside 7ms windows between reservation periods, so who gets a window alternates; the imbalance stays under one quantum per 100 windows",
                        bound: Bound::Within,
                    },
                    Check {
                        quantity: "share of b (the rest)".into(),
                        paper: 0.35,
                        measured: share(r, "b"),
                        tolerance: 0.01,
                        why: "the complement of t's share (no idle time, no switch cost)",
                        bound: Bound::Within,
                    },
                    Check {
                        quantity: "CPU received by the reservation".into(),
                        paper: 0.30,
                        measured: node_share(r, "res"),
                        tolerance: 0.001,
                        why: "the limit is exact to the nanosecond; one period may be cut by the horizon",
                        bound: Bound::Within,
                    },
                ]
                })
            },
        },
        Entry {
            name: "hls-5.4-reservation-only",
            source: "HLS §4 (limit) and §5.4, the contrast case",
            claim: "without the join the same hard reservation caps the thread at exactly 3ms/10ms = 0.30",
            scenarios: &["scenarios/papers/hls-5.4-reservation-only.toml"],
            run: || {
                let r = &simulate(scenario!("hls-5.4-reservation-only.toml"))?;
                Ok({
                vec![
                    Check {
                        quantity: "share of t (hard reservation only)".into(),
                        paper: 0.30,
                        measured: share(r, "t"),
                        tolerance: 0.001,
                        why: "the limit is exact to the nanosecond; one period may be cut by the horizon",
                        bound: Bound::Within,
                    },
                    Check {
                        quantity: "share of b".into(),
                        paper: 0.70,
                        measured: share(r, "b"),
                        tolerance: 0.001,
                        why: "the complement of t's share",
                        bound: Bound::Within,
                    },
                ]
                })
            },
        },
        Entry {
            name: "hls-fp-null",
            source: "HLS §4, fixed priority",
            claim: "a fixed-priority scheduler passes its guarantee (ALL) to its highest-priority child; the others get NULL, since that child may be CPU bound",
            scenarios: &["scenarios/papers/hls-fp-null.toml"],
            run: || {
                let r = &simulate(scenario!("hls-fp-null.toml"))?;
                Ok({
                vec![
                    Check {
                        quantity: "share of high (ALL)".into(),
                        paper: 1.0,
                        measured: share(r, "high"),
                        tolerance: 0.0,
                        why: "exact: nothing else can run while it is runnable",
                        bound: Bound::Within,
                    },
                    Check {
                        quantity: "share of low (NULL)".into(),
                        paper: 0.0,
                        measured: share(r, "low"),
                        tolerance: 0.0,
                        why: "exact",
                        bound: Bound::Within,
                    },
                ]
                })
            },
        },
    ]
}
