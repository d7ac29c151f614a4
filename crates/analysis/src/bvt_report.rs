//! `hsched check` for BVT nodes: reads a `bvt` scheduler's configuration out
//! of a scenario and reports it with the BVT paper's §6 rules (Duda &
//! Cheriton, SOSP '99, §6.1.1 shares and windows, §6.1.3 warps by priority;
//! the calculations are in [`crate::bvt_config`]).
//!
//! The `bvt` policy's parameters: on the node `mcu` (Duration, default
//! 10ms) and `allowance` (C, Duration); on each child's attachment
//! `advance` (integer mcu advance), `warp` (integer virtual units),
//! `warp_limit` and `unwarp` (Durations, 0 = none, the paper's defaults).
//! The scenario loader has already resolved them against the policy's
//! declaration; this module still reads them defensively (a scenario built
//! in code may leave them out), and says what is missing instead of
//! panicking.
//!
//! Only the hierarchy as it stands at time 0 is read: scripted loads and
//! moves are not analysed.

use crate::bvt_config::{describe, BvtChild, BvtClock};
use hsched_core::{Duration, Params, Value};
use hsched_model::Scenario;

/// The policy name this report applies to.
pub const BVT_POLICY: &str = "bvt";

/// The default mcu of the `bvt` policy, used when a node leaves it out.
pub const DEFAULT_MCU: Duration = Duration::from_millis(10);

/// The report printed under scheduler `node` if its policy is `bvt`
/// (`None` otherwise): each child's advance → share, warp, lead and limits;
/// `V` and `W` in mcu and time; and the admission problems found. Lines end
/// with `\n`; the caller indents them.
///
/// ```
/// use hsched_analysis::bvt_report::bvt_report;
/// use hsched_core::{Duration, Instant, Params, Value};
/// use hsched_model::*;
///
/// let ms = |n| Value::Duration(Duration::from_millis(n));
/// let thread = |name: &str, advance| ThreadSpec {
///     name: name.into(),
///     parent: "root".into(),
///     params: Params::new().with("advance", Value::Int(advance)),
///     arrival: Instant::ZERO,
///     program: Program::default(),
///     needs: None,
/// };
/// let scn = Scenario {
///     name: "bvt".into(),
///     description: String::new(),
///     machine: Machine { cpus: 1, context_switch: Duration::ZERO, tick: None, watchdog: None },
///     horizon: Duration::from_secs(1),
///     seed: 1,
///     schedulers: vec![SchedulerSpec {
///         name: "root".into(),
///         policy: "bvt".into(),
///         params: Params::new().with("mcu", ms(10)).with("allowance", ms(20)),
///         parents: vec![],
///     }],
///     default_scheduler: "root".into(),
///     threads: vec![thread("a", 6), thread("b", 2), thread("c", 1)],
///     script: vec![],
/// };
/// let report = bvt_report(&scn, "root").unwrap();
/// assert!(report.contains("V = 12 virtual units; W = 20 mcu = 200ms"));
/// ```
pub fn bvt_report(scn: &Scenario, node: &str) -> Option<String> {
    let spec = scn
        .schedulers
        .iter()
        .find(|s| s.name == node && s.policy == BVT_POLICY)?;
    let children = children_of(scn, node);
    if children.is_empty() {
        return Some("bvt: no children at start (nothing to analyse)\n".into());
    }
    let analysed = node_clock(&spec.params).and_then(|clock| {
        let children = children
            .iter()
            .map(|(name, params)| read_child(name, params))
            .collect::<Result<Vec<_>, _>>()?;
        describe(&children, clock).map_err(|e| e.to_string())
    });
    Some(match analysed {
        Ok(d) => d.to_string(),
        Err(e) => format!("bvt: cannot analyse this node: {e}\n"),
    })
}

/// The node's children with their attachment parameters, in the order
/// `hsched check` prints them: child schedulers, then threads.
fn children_of<'a>(scn: &'a Scenario, node: &str) -> Vec<(String, &'a Params)> {
    let mut out = Vec::new();
    for s in &scn.schedulers {
        for link in s.parents.iter().filter(|l| l.parent == node) {
            out.push((format!("{} (scheduler)", s.name), &link.params));
        }
    }
    for t in scn.threads.iter().filter(|t| t.parent == node) {
        out.push((t.name.clone(), &t.params));
    }
    out
}

fn node_clock(params: &Params) -> Result<BvtClock, String> {
    let mcu = duration(params, "mcu", "the node")?.unwrap_or(DEFAULT_MCU);
    let allowance = duration(params, "allowance", "the node")?
        .ok_or("the node has no `allowance` (the context switch allowance C)")?;
    BvtClock::new(mcu, allowance).map_err(|e| e.to_string())
}

fn read_child(name: &str, params: &Params) -> Result<BvtChild, String> {
    let who = format!("child `{name}`");
    let advance = match params.get("advance") {
        None => return Err(format!("{who} has no `advance` (its mcu advance)")),
        Some(Value::Int(i)) if *i >= 1 => *i as u64,
        Some(v) => return Err(format!("{who}: `advance` = {v}: expected an integer >= 1")),
    };
    let warp = match params.get("warp") {
        None => 0,
        Some(Value::Int(i)) if *i >= 0 => *i as u64,
        Some(v) => return Err(format!("{who}: `warp` = {v}: expected an integer >= 0")),
    };
    Ok(BvtChild {
        name: name.to_string(),
        advance,
        warp,
        warp_limit: duration(params, "warp_limit", &who)?.unwrap_or(Duration::ZERO),
        unwarp: duration(params, "unwarp", &who)?.unwrap_or(Duration::ZERO),
    })
}

/// A duration parameter as the registry resolves it: a duration, a
/// non-negative integer of nanoseconds, or a string such as `"10ms"`.
fn duration(params: &Params, key: &str, who: &str) -> Result<Option<Duration>, String> {
    match params.get(key) {
        None => Ok(None),
        Some(Value::Duration(d)) => Ok(Some(*d)),
        Some(Value::Int(i)) if *i >= 0 => Ok(Some(Duration::from_nanos(*i as u64))),
        Some(Value::Str(s)) => Duration::parse(s)
            .map(Some)
            .map_err(|e| format!("{who}: `{key}`: {e}")),
        Some(v) => Err(format!("{who}: `{key}` = {v}: expected a duration")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsched_core::Instant;
    use hsched_model::{Machine, ParentLink, Program, SchedulerSpec, ThreadSpec};

    fn ms(n: u64) -> Value {
        Value::Duration(Duration::from_millis(n))
    }

    fn thread(name: &str, parent: &str, params: Params) -> ThreadSpec {
        ThreadSpec {
            name: name.into(),
            parent: parent.into(),
            params,
            arrival: Instant::ZERO,
            program: Program::default(),
            needs: None,
        }
    }

    fn sched(name: &str, policy: &str, params: Params, parents: Vec<ParentLink>) -> SchedulerSpec {
        SchedulerSpec {
            name: name.into(),
            policy: policy.into(),
            params,
            parents,
        }
    }

    fn scenario(schedulers: Vec<SchedulerSpec>, threads: Vec<ThreadSpec>) -> Scenario {
        Scenario {
            name: "bvt-test".into(),
            description: String::new(),
            machine: Machine {
                cpus: 1,
                context_switch: Duration::ZERO,
                tick: None,
                watchdog: None,
            },
            horizon: Duration::from_secs(1),
            seed: 1,
            schedulers,
            default_scheduler: "re".into(),
            threads,
            script: vec![],
        }
    }

    fn adv(advance: i64) -> Params {
        Params::new().with("advance", Value::Int(advance))
    }

    /// §6.3's two-level arrangement on §6.1.1's numbers: an RE node with
    /// two threads (advances 6 and 2: 10 % and 30 %) and the BE scheduler
    /// (advance 1: 60 %), C = 2 mcu; the BE node is itself `bvt`; an `rr`
    /// node gets no report.
    fn two_level() -> Scenario {
        scenario(
            vec![
                sched(
                    "re",
                    "bvt",
                    Params::new().with("mcu", ms(10)).with("allowance", ms(20)),
                    vec![],
                ),
                sched(
                    "be",
                    "bvt",
                    Params::new().with("allowance", ms(10)),
                    vec![ParentLink {
                        parent: "re".into(),
                        vps: 1,
                        params: adv(1),
                    }],
                ),
                sched("other", "rr", Params::new(), vec![]),
            ],
            vec![
                thread(
                    "video",
                    "re",
                    adv(6)
                        .with("warp", Value::Int(12))
                        .with("warp_limit", ms(10))
                        .with("unwarp", ms(90)),
                ),
                thread("review", "re", adv(2)),
                thread("editor", "be", adv(1).with("warp", Value::Int(50))),
                thread("make", "be", adv(1)),
            ],
        )
    }

    #[test]
    fn reports_shares_windows_and_warps_of_a_bvt_node() {
        let scn = two_level();
        let r = bvt_report(&scn, "re").unwrap();
        let expected = "\
bvt: mcu = 10ms, C = 20ms (2 mcu); V = 12 virtual units; W = 20 mcu = 200ms
  child           advance  share  runs/W  warp  lead  limit L  unwarp U
  be (scheduler)        1    60%   120ms     0     -        -         -
  video                 6    10%    20ms    12  20ms     10ms      90ms
  review                2    30%    60ms     0     -        -         -
  admission: ok
";
        assert_eq!(r, expected);
    }

    #[test]
    fn reports_problems_of_the_be_node() {
        // BE node: mcu defaults to 10ms, C = 1 mcu; two threads of advance
        // 1 → V = 1, W = 2 mcu; the editor's warp 50 is m = 50 windows, so
        // §6.1.1 counts it at 50 × 50 %.
        let r = bvt_report(&two_level(), "be").unwrap();
        assert!(
            r.starts_with(
                "bvt: mcu = 10ms, C = 10ms (1 mcu); V = 1 virtual units; W = 2 mcu = 20ms\n"
            ),
            "{r}"
        );
        assert!(
            r.contains("\n  editor        1    50%    10ms    50  500ms     none         0\n"),
            "{r}"
        );
        assert!(
            r.contains("problem: §6.1.1 worst case: warps with no unwarp time requirement, counted at m·w_i, add up to 2550% of the CPU within one window (over by 2450%): `editor` (m = 50, counted 2500%)"),
            "{r}"
        );
    }

    #[test]
    fn other_policies_and_unknown_nodes_get_no_report() {
        let scn = two_level();
        assert_eq!(bvt_report(&scn, "other"), None);
        assert_eq!(bvt_report(&scn, "nope"), None);
    }

    #[test]
    fn says_what_is_missing_instead_of_panicking() {
        let node = |params| sched("n", "bvt", params, vec![]);
        let with_c = Params::new().with("allowance", ms(20));
        let r = |scn: &Scenario| bvt_report(scn, "n").unwrap();
        assert_eq!(
            r(&scenario(vec![node(with_c.clone())], vec![])),
            "bvt: no children at start (nothing to analyse)\n"
        );
        assert_eq!(
            r(&scenario(
                vec![node(Params::new())],
                vec![thread("t", "n", adv(1))]
            )),
            "bvt: cannot analyse this node: the node has no `allowance` (the context switch allowance C)\n"
        );
        assert_eq!(
            r(&scenario(
                vec![node(with_c.clone())],
                vec![thread("t", "n", Params::new())]
            )),
            "bvt: cannot analyse this node: child `t` has no `advance` (its mcu advance)\n"
        );
        assert_eq!(
            r(&scenario(
                vec![node(with_c.clone())],
                vec![thread("t", "n", adv(0))]
            )),
            "bvt: cannot analyse this node: child `t`: `advance` = 0: expected an integer >= 1\n"
        );
        assert_eq!(
            r(&scenario(
                vec![node(Params::new().with("allowance", ms(15)))],
                vec![thread("t", "n", adv(1))]
            )),
            "bvt: cannot analyse this node: the context switch allowance C = 15ms is not a positive whole number of mcu (10ms)\n"
        );
        // Durations written as strings or integer nanoseconds are read too.
        let strs = Params::new()
            .with("mcu", Value::Str("1ms".into()))
            .with("allowance", Value::Int(2_000_000));
        assert!(
            r(&scenario(vec![node(strs)], vec![thread("t", "n", adv(3))])).starts_with(
                "bvt: mcu = 1ms, C = 2ms (2 mcu); V = 6 virtual units; W = 2 mcu = 2ms\n"
            )
        );
    }
}
