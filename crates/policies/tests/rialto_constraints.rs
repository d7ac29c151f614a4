//! Rialto time constraints (§3.2, §4.3, §4.4): exact accept/reject
//! boundaries, own time before free time, critical stealing only within the
//! activity, undo on refusal, end giving time back, nesting, the EDF view,
//! and a property test over random graphs and request sequences.

use std::collections::{BTreeMap, BTreeSet};

use hsched_core::{Duration, Instant};
use hsched_policies::rialto::constraints::{
    ConstraintId, Constraints, EndError, Ended, Piece, Rejected, Request,
};
use hsched_policies::rialto::graph::{Graph, GraphParams, Interval};
use proptest::prelude::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Instant {
    Instant(ms(n).0)
}

fn id(n: u64) -> ConstraintId {
    ConstraintId(n)
}

fn req(start: u64, estimate: Duration, deadline: u64, critical: bool) -> Request {
    Request {
        start: at(start),
        estimate,
        deadline: at(deadline),
        critical,
    }
}

/// Base 10 ms; every base period: A [0,4), B [4,7), free [7,10).
fn book() -> Constraints<char, u32> {
    let p = GraphParams {
        base_period: Some(ms(10)),
        ..GraphParams::default()
    };
    let mut g = Graph::new(p);
    g.reserve('A', ms(4), ms(10)).unwrap();
    g.reserve('B', ms(3), ms(10)).unwrap();
    let run = |a: Option<char>, r: u64| Interval {
        activity: a,
        switch: Duration::ZERO,
        run: ms(r),
    };
    assert_eq!(
        g.period(0),
        vec![run(Some('A'), 4), run(Some('B'), 3), run(None, 3)]
    );
    Constraints::new(g, Duration::from_secs(1))
}

/// Pieces as (start ms, end ms, constraint number).
fn pieces(c: &Constraints<char, u32>) -> Vec<(u64, u64, u64)> {
    c.pieces()
        .iter()
        .map(|p| (p.start.0 / 1_000_000, p.end.0 / 1_000_000, p.constraint.0))
        .collect()
}

#[test]
fn exact_boundaries() {
    // [0, 10): A's 4 ms plus 3 ms free.
    let mut c = book();
    assert!(c
        .begin(at(0), 'A', 1, id(1), req(0, ms(7), 10, false))
        .is_ok());
    c.check_invariants().unwrap();
    let mut c = book();
    assert_eq!(
        c.begin(at(0), 'A', 1, id(1), req(0, ms(7) + Duration(1), 10, false)),
        Err(Rejected::Infeasible {
            needed: ms(7) + Duration(1),
            found: ms(7)
        })
    );
    assert!(c.pieces().is_empty());
    // Deadline at 7 ms: the free time is out of the window.
    assert!(c
        .begin(at(0), 'A', 1, id(1), req(0, ms(4) + Duration(1), 7, false))
        .is_err());
    assert!(c
        .begin(at(0), 'A', 1, id(1), req(0, ms(4), 7, false))
        .is_ok());
    // Start clipped to now: at 2 ms only [2,4) + [7,10) remain.
    let mut c = book();
    assert!(c
        .begin(at(2), 'A', 1, id(1), req(0, ms(5) + Duration(1), 10, false))
        .is_err());
    let a = c
        .begin(at(2), 'A', 1, id(1), req(0, ms(5), 10, false))
        .unwrap();
    assert_eq!(a.start, at(2));
    assert_eq!(pieces(&c), vec![(2, 4, 1), (7, 10, 1)]);
    // A deadline already passed: nothing to find (a zero estimate is fine).
    let mut c = book();
    assert!(c
        .begin(at(20), 'A', 1, id(1), req(0, Duration(1), 10, false))
        .is_err());
    assert!(c
        .begin(at(20), 'A', 1, id(1), req(0, Duration::ZERO, 10, false))
        .is_ok());
}

#[test]
fn own_time_first_then_free_earliest_first() {
    let mut c = book();
    c.begin(at(0), 'A', 1, id(1), req(0, ms(5), 20, false))
        .unwrap();
    // Own [0,4) and [10,11) before the earlier free [7,10).
    assert_eq!(pieces(&c), vec![(0, 4, 1), (10, 11, 1)]);
    c.begin(at(0), 'A', 2, id(2), req(0, ms(6), 20, false))
        .unwrap();
    // Own [11,14) left, then free [7,10) earliest first.
    assert_eq!(
        pieces(&c),
        vec![(0, 4, 1), (7, 10, 2), (10, 11, 1), (11, 14, 2)]
    );
    // B never gets A's time: own [4,7), [14,17), free [17,20) = 9 ms.
    assert_eq!(
        c.begin(at(0), 'B', 3, id(3), req(0, ms(10), 20, false)),
        Err(Rejected::Infeasible {
            needed: ms(10),
            found: ms(9)
        })
    );
    c.begin(at(0), 'B', 3, id(3), req(0, ms(9), 20, false))
        .unwrap();
    c.check_invariants().unwrap();
}

#[test]
fn critical_steals_only_from_its_activitys_non_critical() {
    let mut c = book();
    c.begin(at(0), 'A', 1, id(1), req(0, ms(7), 10, false))
        .unwrap(); // A, non-critical
    c.begin(at(0), 'B', 2, id(2), req(0, ms(3), 10, true))
        .unwrap(); // B, critical
    assert_eq!(pieces(&c), vec![(0, 4, 1), (4, 7, 2), (7, 10, 1)]);
    // Non-critical A: nothing left.
    assert!(c
        .begin(at(0), 'A', 3, id(3), req(0, ms(1), 10, false))
        .is_err());
    // Critical A takes 2 ms from constraint 1, earliest first.
    let a = c
        .begin(at(0), 'A', 3, id(3), req(0, ms(2), 10, true))
        .unwrap();
    assert_eq!(a.stolen, vec![(id(1), ms(2))]);
    assert_eq!(c.get(id(1)).unwrap().guaranteed, ms(5));
    assert_eq!(
        pieces(&c),
        vec![(0, 2, 3), (2, 4, 1), (4, 7, 2), (7, 10, 1)]
    );
    // A critical constraint is not stolen from: 5 ms left to steal, not 7.
    let before = c.pieces();
    assert_eq!(
        c.begin(at(0), 'A', 4, id(4), req(0, ms(6), 10, true)),
        Err(Rejected::Infeasible {
            needed: ms(6),
            found: ms(5)
        })
    );
    assert_eq!(c.pieces(), before, "a refusal undoes the tentative steals");
    assert_eq!(c.get(id(1)).unwrap().guaranteed, ms(5));
    // Critical B never takes A's non-critical time (nor B's critical time).
    assert_eq!(
        c.begin(at(0), 'B', 5, id(5), req(0, ms(1), 10, true)),
        Err(Rejected::Infeasible {
            needed: ms(1),
            found: ms(0)
        })
    );
    c.check_invariants().unwrap();
}

#[test]
fn end_gives_unused_time_back() {
    let mut c = book();
    c.begin(at(0), 'A', 1, id(1), req(0, ms(7), 10, false))
        .unwrap();
    assert!(c
        .begin(at(5), 'B', 2, id(2), req(5, ms(4), 10, false))
        .is_err());
    let e = c.end(id(1), at(5), ms(3)).unwrap();
    assert_eq!(
        e,
        Ended {
            taken: ms(3),
            released: ms(3),
            donated_to: None
        }
    );
    assert!(c.pieces().is_empty());
    assert_eq!(c.end(id(1), at(5), ms(3)), Err(EndError::Unknown(id(1))));
    // B: own [5,7) + free [7,10) now available.
    c.begin(at(5), 'B', 2, id(2), req(5, ms(5), 10, false))
        .unwrap();
    assert_eq!(pieces(&c), vec![(5, 7, 2), (7, 10, 2)]);
    // Ending mid-piece splits it.
    let e = c.end(id(2), at(8), ms(1)).unwrap();
    assert_eq!(e.released, ms(2));
    c.check_invariants().unwrap();
}

#[test]
fn nesting_rules() {
    let mut c = book();
    // Outer: non-critical, 6 ms by 20 ms: own [0,4) and [10,12).
    c.begin(at(0), 'A', 1, id(1), req(0, ms(6), 20, false))
        .unwrap();
    assert_eq!(pieces(&c), vec![(0, 4, 1), (10, 12, 1)]);
    // Inner at 1 ms: start max(1, 0) = 1, deadline min(30, 20) = 20, the
    // estimate grows to the outer's 5 ms in [1,20), critical.
    let a = c
        .begin(at(1), 'A', 1, id(2), req(0, ms(1), 30, true))
        .unwrap();
    assert_eq!(
        (a.start, a.deadline, a.estimate, a.critical),
        (at(1), at(20), ms(5), true)
    );
    assert_eq!((a.outer, a.inherited), (Some(id(1)), ms(5)));
    assert_eq!(pieces(&c), vec![(0, 1, 1), (1, 4, 2), (10, 12, 2)]);
    assert_eq!(c.current(1), Some(id(2)));
    assert_eq!(
        c.end(id(1), at(2), ms(0)),
        Err(EndError::NotInnermost { innermost: id(2) })
    );
    // A refused third level (more than exists by 15 ms) changes nothing.
    let before = c.pieces();
    assert!(c
        .begin(at(2), 'A', 1, id(3), req(2, ms(20), 15, false))
        .is_err());
    assert_eq!(c.pieces(), before);
    assert_eq!(c.current(1), Some(id(2)));
    // A third level needing more than the inner holds in [2,15) (4 ms):
    // it inherits [2,4) and [10,12), then takes own [12,14) before free.
    let b = c
        .begin(at(2), 'A', 1, id(3), req(2, ms(6), 15, false))
        .unwrap();
    assert_eq!((b.estimate, b.inherited, b.critical), (ms(6), ms(4), true));
    assert_eq!(
        pieces(&c),
        vec![(0, 1, 1), (1, 2, 2), (2, 4, 3), (10, 12, 3), (12, 14, 3)]
    );
    c.check_invariants().unwrap();
    // Ending the innermost at 11 ms donates [11,14) to the middle one.
    let e = c.end(id(3), at(11), ms(4)).unwrap();
    assert_eq!((e.released, e.donated_to), (ms(3), Some(id(2))));
    assert_eq!(c.get(id(2)).unwrap().guaranteed, ms(4));
    assert_eq!(c.current(1), Some(id(2)));
    // ... and the middle one gives [11,14) back to the outer.
    let e = c.end(id(2), at(11), ms(5)).unwrap();
    assert_eq!((e.released, e.donated_to), (ms(3), Some(id(1))));
    assert_eq!(c.get(id(1)).unwrap().guaranteed, ms(4));
    assert_eq!(pieces(&c), vec![(0, 1, 1), (11, 12, 1), (12, 14, 1)]);
    c.check_invariants().unwrap();
    c.end(id(1), at(12), ms(6)).unwrap();
    assert_eq!(c.current(1), None);
    assert!(c.open().next().is_none());
}

#[test]
fn composite_end_begin_reuses_the_time() {
    let mut c = book();
    c.begin(at(0), 'A', 1, id(1), req(0, ms(7), 10, false))
        .unwrap();
    let (e, b) = c
        .end_begin(id(1), at(1), ms(1), id(2), req(1, ms(6), 10, false))
        .unwrap();
    assert_eq!((e.taken, e.released), (ms(1), ms(6)));
    assert_eq!(b.unwrap().estimate, ms(6));
    assert_eq!(pieces(&c), vec![(1, 4, 2), (7, 10, 2)]);
    assert_eq!(c.get(id(2)).unwrap().thread, 1);
    assert!(c
        .end_begin(id(9), at(1), ms(1), id(3), req(1, ms(1), 10, false))
        .is_err());
    assert_eq!(
        c.begin(at(1), 'A', 2, id(2), req(1, ms(1), 10, false)),
        Err(Rejected::DuplicateId(id(2)))
    );
}

#[test]
fn assigned_at_is_edf_ordered() {
    let mut c = book();
    c.begin(at(0), 'A', 1, id(1), req(0, ms(5), 10, false))
        .unwrap(); // [0,4) [7,8)
    c.begin(at(0), 'B', 2, id(2), req(0, ms(4), 9, false))
        .unwrap(); // [4,7) [8,9)
    assert_eq!(c.assigned_at(at(7)), vec![(id(2), ms(1)), (id(1), ms(1))]);
    assert_eq!(c.assigned_at(at(8)), vec![(id(2), ms(1))]);
    assert_eq!(c.assigned_at(at(2)), vec![(id(1), ms(2))]);
    assert_eq!(c.assigned_at(at(9)), vec![]);
    assert_eq!(
        c.assigned_in(at(0), at(10)),
        vec![(id(2), ms(4)), (id(1), ms(5))]
    );
    assert_eq!(c.assigned_between(id(1), at(3), at(8)), ms(2));
}

#[test]
fn switch_time_is_never_assigned() {
    let p = GraphParams {
        base_period: Some(ms(10)),
        switch_cost: ms(1),
        ..GraphParams::default()
    };
    let mut g = Graph::new(p);
    g.reserve('A', ms(4), ms(10)).unwrap(); // switch [0,1), A [1,5), free [5,10)
    let mut c: Constraints<char, u32> = Constraints::new(g, Duration::from_secs(1));
    assert!(c
        .begin(at(0), 'A', 1, id(1), req(0, ms(7) + Duration(1), 10, false))
        .is_err());
    c.begin(at(0), 'A', 1, id(1), req(0, ms(7), 10, false))
        .unwrap();
    assert_eq!(pieces(&c), vec![(1, 5, 1), (5, 10, 1)]);
    assert_eq!(c.assigned_at(Instant(500_000)), vec![]);
    c.check_invariants().unwrap();
}

/// Every piece pays the switch into it from its own length, on top of
/// the estimate.
#[test]
fn pieces_pay_for_the_switch_into_them() {
    let p = GraphParams {
        base_period: Some(ms(10)),
        switch_cost: ms(1),
        ..GraphParams::default()
    };
    let mut g = Graph::new(p);
    g.reserve('A', ms(4), ms(10)).unwrap(); // switch [0,1), A [1,5), free [5,10)
    let mut c: Constraints<char, u32> = Constraints::new(g, Duration::from_secs(1));
    // B has no reservation: free time only.
    let b = c
        .begin(at(0), 'B', 2, id(2), req(0, ms(3), 10, false))
        .unwrap();
    assert_eq!((b.estimate, b.overhead), (ms(3), ms(1)));
    assert_eq!(pieces(&c), vec![(5, 9, 2)]);
    // A: its own intervals first, then free time; a piece too short to
    // hold more than its switch ([9, 10)) is passed over.
    let a = c
        .begin(at(0), 'A', 1, id(1), req(0, ms(9), 20, false))
        .unwrap();
    assert_eq!(a.overhead, ms(3));
    assert_eq!(
        pieces(&c),
        vec![(1, 5, 1), (5, 9, 2), (11, 15, 1), (15, 19, 1)]
    );
    // [19, 20) is left: room for a switch, not for any work.
    assert!(c
        .begin(at(0), 'B', 3, id(3), req(15, Duration(1), 20, false))
        .is_err());
    c.check_invariants().unwrap();
}

// ---- property test -------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Begin {
        thread: u32,
        start: u64,
        estimate: u64,
        len: u64,
        critical: bool,
    },
    End {
        thread: u32,
        used: u64,
    },
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..6, 0u64..40, 0u64..12, 0u64..50, any::<bool>()).prop_map(
            |(thread, start, estimate, len, critical)| Op::Begin {
                thread,
                start,
                estimate,
                len,
                critical
            }
        ),
        2 => (0u32..6, 0u64..5).prop_map(|(thread, used)| Op::End { thread, used }),
        1 => (0u64..8).prop_map(Op::Advance),
    ]
}

/// Thread `t` belongs to activity `t % 4` (activity 3 holds no reservation).
fn activity(t: u32) -> u32 {
    t % 4
}

fn snapshot(c: &Constraints<u32, u32>) -> (Vec<Piece>, Vec<String>) {
    (c.pieces(), c.open().map(|i| format!("{i:?}")).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn assignments_stay_in_window_sum_up_and_never_overlap(
        switch in 0u64..2,
        res in proptest::collection::vec((1u64..5, 0u32..3), 0..3),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let p = GraphParams {
            base_period: Some(ms(10)),
            switch_cost: Duration(switch * 200_000),
            ..GraphParams::default()
        };
        let mut g = Graph::new(p);
        for (a, (amount, k)) in res.iter().enumerate() {
            let _ = g.reserve(a as u32, ms(*amount), ms(10 << k));
        }
        let mut c: Constraints<u32, u32> = Constraints::new(g, ms(100));
        let mut now = 0u64;
        let mut next = 0u64;
        // Constraints whose guarantee may legitimately differ from the estimate.
        let mut touched: BTreeSet<ConstraintId> = BTreeSet::new();
        for o in ops {
            match o {
                Op::Advance(d) => now += d,
                Op::Begin { thread, start, estimate, len, critical } => {
                    let act = activity(thread);
                    let before = snapshot(&c);
                    let others: Vec<Piece> = c.pieces().into_iter()
                        .filter(|p| c.get(p.constraint).unwrap().activity != act)
                        .collect();
                    let outer = c.current(thread);
                    next += 1;
                    let r = Request {
                        start: at(now + start),
                        estimate: ms(estimate),
                        deadline: at(now + start + len),
                        critical,
                    };
                    match c.begin(at(now), act, thread, ConstraintId(next), r) {
                        Ok(a) => {
                            let me = ConstraintId(next);
                            prop_assert_eq!(c.assigned_between(me, a.start, a.deadline), a.estimate + a.overhead);
                            prop_assert!(a.estimate >= r.estimate);
                            prop_assert!(a.start >= r.start && a.start >= at(now));
                            prop_assert!(a.deadline <= r.deadline);
                            prop_assert!(a.critical || a.stolen.is_empty());
                            for (v, _) in &a.stolen {
                                let vi = c.get(*v).unwrap();
                                prop_assert_eq!(vi.activity, act);
                                prop_assert!(!vi.critical);
                                touched.insert(*v);
                            }
                            if let Some(o) = outer {
                                touched.insert(o);
                            }
                            let after: Vec<Piece> = c.pieces().into_iter()
                                .filter(|p| c.get(p.constraint).unwrap().activity != act)
                                .collect();
                            prop_assert_eq!(others, after, "another activity's time moved");
                        }
                        Err(_) => prop_assert_eq!(before, snapshot(&c), "a refusal changed the book"),
                    }
                }
                Op::End { thread, used } => {
                    if let Some(cur) = c.current(thread) {
                        let g0 = c.get(cur).unwrap().guaranteed;
                        let e = c.end(cur, at(now), ms(used)).unwrap();
                        prop_assert_eq!(e.taken, ms(used));
                        prop_assert!(e.released <= g0);
                        prop_assert!(c.pieces().iter().all(|p| p.constraint != cur));
                    }
                }
            }
            c.check_invariants().map_err(TestCaseError::fail)?;
            // Independently: disjoint pieces, in window, summing right.
            let ps = c.pieces();
            let mut sums: BTreeMap<ConstraintId, u64> = BTreeMap::new();
            for w in ps.windows(2) {
                prop_assert!(w[0].end <= w[1].start, "time assigned twice");
            }
            for p in &ps {
                let i = c.get(p.constraint).unwrap();
                prop_assert!(p.start < p.end && p.start >= i.start && p.end <= i.deadline);
                *sums.entry(p.constraint).or_default() += (p.end - p.start).0;
            }
            for i in c.open() {
                let sum = sums.get(&i.id).copied().unwrap_or(0);
                prop_assert_eq!(sum, i.guaranteed.0);
                if !touched.contains(&i.id) {
                    prop_assert_eq!(sum, (i.estimate + i.overhead).0);
                }
            }
        }
    }
}
