//! Choosing among several guarantees: the one a join passes on, or the
//! input a node with several parents uses.

use crate::guarantee::{Guarantee, Kind};
use crate::rewrite;
use hsched_core::Share;

/// Index of the guarantee to pass on: for `needs`, the first that implies
/// it; else the one implying the most others (ties: rank, share, order).
pub fn pick_best(cands: &[Guarantee], needs: Option<&Guarantee>) -> usize {
    if let Some(want) = needs {
        if let Some(i) = cands.iter().position(|c| rewrite::implies(c, want).is_ok()) {
            return i;
        }
    }
    let score = |i: usize| -> usize {
        cands
            .iter()
            .enumerate()
            .filter(|&(j, o)| j != i && rewrite::implies(&cands[i], o).is_ok())
            .count()
    };
    let mut best = 0;
    let mut best_score = score(0);
    for i in 1..cands.len() {
        let s = score(i);
        let better = s > best_score
            || (s == best_score && {
                let (a, b) = (&cands[i], &cands[best]);
                let (ra, rb) = (kind_rank(a.kind()), kind_rank(b.kind()));
                ra < rb
                    || (ra == rb
                        && a.share().unwrap_or(Share::ZERO) > b.share().unwrap_or(Share::ZERO))
            });
        if better {
            best = i;
            best_score = s;
        }
    }
    best
}

/// Rank for choosing among incomparable guarantees: ALL first, NULL last.
fn kind_rank(k: Kind) -> usize {
    Kind::TABLE_ORDER
        .iter()
        .position(|&t| t == k)
        .unwrap_or(Kind::TABLE_ORDER.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(text: &str) -> Guarantee {
        Guarantee::parse(text).unwrap()
    }

    #[test]
    fn the_join_picks_what_a_thread_needs_then_the_strongest() {
        let cands = [g("NULL"), g("RESBS 40, 80")];
        assert_eq!(pick_best(&cands, None), 1);
        assert_eq!(pick_best(&[g("ALL"), g("RESBS 1, 2")], None), 0);
        assert_eq!(pick_best(&[g("PS 0.2"), g("PS 0.5")], None), 1);
        assert_eq!(pick_best(&cands, Some(&g("NULL"))), 0);
    }
}
