//! The paper's scheduling graph as arithmetic on a scenario's inputs
//! (§3.1 scaling, §3.2 free time, §4.8 a switch in front of every
//! interval): what the rules the entries check against are computed from.

use hsched_model::{Op, Scenario};

/// The paper's graph on `reservations` (amount, period), ns: base period
/// the smallest period; each scaled to the next smaller power-of-two
/// multiple of it at the same percentage (§3.1, rounded up); a switch in
/// front of every interval (§4.8). Returns (hyperperiod, free time per
/// hyperperiod), the latter negative when they do not fit.
pub(super) fn free_per_hyperperiod(reservations: &[(u64, u64)], switch: u64) -> (u64, i128) {
    let Some(base) = reservations.iter().map(|r| r.1).min() else {
        return (1, 1);
    };
    let scaled: Vec<(u64, u64)> = reservations
        .iter()
        .map(|&(x, y)| {
            let mut p = base;
            while p * 2 <= y {
                p *= 2;
            }
            ((x as u128 * p as u128).div_ceil(y as u128) as u64, p)
        })
        .collect();
    let hyper = scaled.iter().map(|r| r.1).max().unwrap_or(base);
    let used: u128 = scaled
        .iter()
        .map(|&(x, p)| (x + switch) as u128 * (hyper / p) as u128)
        .sum();
    (hyper, hyper as i128 - used as i128)
}

/// A program's first `reserve` (amount, period), ns.
pub(super) fn first_reserve(ops: &[Op]) -> Option<(u64, u64)> {
    let msg = find_msg(ops, "reserve")?;
    match (msg.args.get("amount"), msg.args.get("period")) {
        (Some(hsched_core::Value::Duration(a)), Some(hsched_core::Value::Duration(p))) => {
            Some((a.as_nanos(), p.as_nanos()))
        }
        _ => None,
    }
}

/// Every thread's first reservation (amount, period, ns) and the root
/// `rialto`'s switch cost (ns): the inputs the rules below work from.
pub(super) fn reservations_and_switch(scn: &Scenario) -> (Vec<(u64, u64)>, u64) {
    let reservations = scn
        .threads
        .iter()
        .filter_map(|t| first_reserve(&t.program.ops))
        .collect();
    let switch = match scn.schedulers[0].params.get("switch_cost") {
        Some(hsched_core::Value::Duration(d)) => d.as_nanos(),
        _ => 0,
    };
    (reservations, switch)
}

/// The first message named `name` a program sends, looking into loops.
pub(super) fn find_msg<'a>(ops: &'a [Op], name: &str) -> Option<&'a hsched_core::Msg> {
    ops.iter().find_map(|op| match op {
        Op::Msg { msg, .. } if msg.name == name => Some(msg),
        Op::Loop { body, .. } | Op::Periodic { body, .. } => find_msg(body, name),
        _ => None,
    })
}

/// The share of the CPU a thread's constraint can be assigned, §3.2: its
/// activity's reserved fraction plus the free fraction of the graph built
/// from `reservations` (each interval and its switch taken out), less the
/// switch each assigned piece pays (one piece per base period).
pub(super) fn assignable(reservations: &[(u64, u64)], own: Option<(u64, u64)>, switch: u64) -> f64 {
    let (hyper, free) = free_per_hyperperiod(reservations, switch);
    let base = reservations.iter().map(|r| r.1).min().unwrap_or(hyper);
    let pieces = (hyper / base) as i128;
    let own = own.map_or(0.0, |(x, y)| x as f64 / y as f64);
    ((free - pieces * switch as i128) as f64 / hyper as f64 + own).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repro::rialto::intervals::MS;

    /// 10ms/40ms and 2ms/10ms with 20us switches leave 54.75% free, less a
    /// 20us piece switch per 10ms base period.
    #[test]
    fn assignable_share_follows_the_graph() {
        let r = [(10 * MS, 40 * MS), (2 * MS, 10 * MS)];
        let p = assignable(&r, None, 20_000);
        assert!((p - (0.5475 - 0.002)).abs() < 1e-9, "{p}");
    }
}
