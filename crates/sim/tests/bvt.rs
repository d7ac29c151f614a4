//! `bvt` end to end, through the real dispatcher with invariant checks:
//! two CPUs with a migration penalty (§2.4), two-level hierarchies in
//! threshold and direct mode (§2.5), and warp set by a message from a
//! scenario program (§2.2).

use hsched_core::{Duration, Instant, Msg, Params, Value};
use hsched_model::{
    Dist, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec, Target,
    ThreadResult, ThreadSpec,
};
use hsched_sim::{run, SimOptions};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A `bvt` instance with a 1ms mcu and a 5ms allowance.
fn bvt(name: &str, extra: &[(&str, Value)], parent: Option<(&str, Params)>) -> SchedulerSpec {
    let mut params = Params::new()
        .with("mcu", Value::Duration(ms(1)))
        .with("allowance", Value::Duration(ms(5)));
    for (k, v) in extra {
        params.set(k, v.clone());
    }
    SchedulerSpec {
        name: name.into(),
        policy: "bvt".into(),
        params,
        parents: parent
            .map(|(p, attach)| {
                vec![ParentLink {
                    parent: p.into(),
                    vps: 1,
                    params: attach,
                }]
            })
            .unwrap_or_default(),
    }
}

/// Attachment: mcu advance 1, warp `w`, limit `l`, warp on if `w > 0`.
fn attach(w: i64, l: Duration) -> Params {
    Params::new()
        .with("advance", Value::Int(1))
        .with("warp", Value::Int(w))
        .with("warp_limit", Value::Duration(l))
        .with("warp_on", Value::Bool(w > 0))
}

fn thread(name: &str, parent: &str, params: Params, ops: Vec<Op>) -> ThreadSpec {
    ThreadSpec {
        name: name.into(),
        parent: parent.into(),
        params,
        arrival: Instant::ZERO,
        program: Program::new(ops),
        needs: None,
    }
}

fn busy() -> Vec<Op> {
    vec![Op::Loop {
        count: None,
        body: vec![Op::Run(Dist::Fixed(Duration::from_secs(10)))],
    }]
}

/// A job of `run` every `period`, from `offset`.
fn periodic(period: u64, offset: u64, run: u64) -> Vec<Op> {
    vec![Op::Periodic {
        period: ms(period),
        deadline: ms(period),
        offset: ms(offset),
        jobs: None,
        body: vec![Op::Run(Dist::Fixed(ms(run)))],
    }]
}

fn scenario(cpus: u32, schedulers: Vec<SchedulerSpec>, threads: Vec<ThreadSpec>) -> Scenario {
    let default = schedulers[0].name.clone();
    Scenario {
        name: "bvt".into(),
        description: String::new(),
        machine: Machine {
            cpus,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: Some(Duration::from_secs(5)),
        },
        horizon: Duration::from_secs(1),
        seed: 7,
        schedulers,
        default_scheduler: default,
        threads,
        script: vec![],
    }
}

/// Runs with every check on; nothing may be ejected or refused.
fn run_checked(scn: &Scenario) -> RunResult {
    let opts = SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    };
    let r = run(scn, &opts).unwrap_or_else(|e| panic!("{e}"));
    let bad: Vec<_> = r
        .log
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                LogKind::Eject | LogKind::Refused | LogKind::Watchdog
            )
        })
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let used: u64 = r.threads.iter().map(|t| t.cpu_time.as_nanos()).sum();
    let busy: u64 = r.cpu_stats.iter().map(|c| c.busy.as_nanos()).sum();
    assert_eq!(used, busy);
    r
}

fn by_name<'a>(r: &'a RunResult, name: &str) -> &'a ThreadResult {
    r.threads.iter().find(|t| t.name == name).unwrap()
}

fn max_latency(r: &RunResult, name: &str) -> Duration {
    let t = by_name(r, name);
    assert!(!t.wakeup_latencies.is_empty(), "{name} never woke");
    t.wakeup_latencies.iter().copied().max().unwrap()
}

// ----- §2.4: two CPUs ----------------------------------------------------------------

fn two_cpus(penalty: i64) -> RunResult {
    let root = bvt("root", &[("migration_penalty", Value::Int(penalty))], None);
    let threads = (0..3)
        .map(|i| thread(&format!("t{i}"), "root", attach(0, Duration::ZERO), busy()))
        .collect();
    run_checked(&scenario(2, vec![root], threads))
}

#[test]
fn a_migration_penalty_keeps_cpu_bound_threads_where_they_ran() {
    let free = two_cpus(0);
    let moves: u64 = free.threads.iter().map(|t| t.migrations).sum();
    assert!(moves > 10, "without a penalty: {moves} migrations");
    let sticky = two_cpus(1_000_000);
    for t in &sticky.threads {
        assert_eq!(t.migrations, 0, "{}", t.name);
    }
    // Both CPUs stay busy either way (work conserving).
    for r in [&free, &sticky] {
        for c in &r.cpu_stats {
            assert_eq!(c.busy, Duration::from_secs(1));
        }
    }
    // A moderate penalty keeps shares within M + C + mcu of each other.
    let some = two_cpus(3);
    let times: Vec<u64> = some.threads.iter().map(|t| t.cpu_time.as_nanos()).collect();
    let (lo, hi) = (times.iter().min().unwrap(), times.iter().max().unwrap());
    assert!(hi - lo <= ms(3 + 5 + 1).as_nanos() * 2, "{times:?}");
}

#[test]
fn a_warped_thread_still_migrates_to_get_a_cpu_at_once() {
    // M = 5 virtual units is far below the warp of 100: the latency-sensitive
    // thread takes whichever CPU it can preempt (§2.4).
    let root = bvt("root", &[("migration_penalty", Value::Int(5))], None);
    let threads = vec![
        thread("a", "root", attach(0, Duration::ZERO), busy()),
        thread("b", "root", attach(0, Duration::ZERO), busy()),
        thread(
            "player",
            "root",
            attach(100, Duration::ZERO),
            periodic(10, 2, 1),
        ),
    ];
    let r = run_checked(&scenario(2, vec![root], threads));
    assert_eq!(max_latency(&r, "player"), Duration::ZERO);
}

// ----- §2.5: two levels -----------------------------------------------------------------

/// A first-level `re` with a real-time thread `rt` and a CPU-bound `cont`,
/// and a second-level `be` (attached with warp `be_warp`) holding `mpeg`
/// (warp 500), `low` (warp 50) and a CPU-bound `batch`.
fn two_level(mode: &str, be_warp: i64) -> RunResult {
    let re = bvt("re", &[], None);
    let be = bvt(
        "be",
        &[
            ("mode", Value::Str(mode.into())),
            ("threshold", Value::Int(100)),
        ],
        // Warp off at first: in threshold and direct mode `be` turns it on.
        Some((
            "re",
            attach(be_warp, Duration::ZERO).with("warp_on", Value::Bool(false)),
        )),
    );
    let threads = vec![
        thread("rt", "re", attach(10_000, ms(2)), periodic(20, 3, 1)),
        thread("cont", "re", attach(0, Duration::ZERO), busy()),
        thread(
            "mpeg",
            "be",
            attach(500, Duration::ZERO),
            periodic(10, 0, 1),
        ),
        thread("low", "be", attach(50, Duration::ZERO), periodic(10, 5, 1)),
        thread("batch", "be", attach(0, Duration::ZERO), busy()),
    ];
    run_checked(&scenario(1, vec![re, be], threads))
}

#[test]
fn threshold_mode_runs_the_second_level_warped_for_threads_over_the_threshold() {
    let r = two_level("threshold", 1_000);
    assert_eq!(
        max_latency(&r, "rt"),
        Duration::ZERO,
        "first-level real time"
    );
    assert_eq!(
        max_latency(&r, "mpeg"),
        Duration::ZERO,
        "warp 500 > threshold 100: the second level is warped at the first"
    );
    assert!(
        max_latency(&r, "low") > Duration::ZERO,
        "warp 50 only helps against the second level's own threads"
    );
    // Long term, the two first-level children still share evenly.
    let be = r.nodes.iter().find(|n| n.name == "be").unwrap().received;
    let cont = by_name(&r, "cont").cpu_time;
    let rt = by_name(&r, "rt").cpu_time;
    assert_eq!(rt, ms(50), "rt ran every job");
    let diff = be.as_nanos().abs_diff(cont.as_nanos());
    assert!(diff <= ms(60).as_nanos(), "be {be}, cont {cont}");
    // Without the threshold mode the player waits behind `cont`.
    let plain = two_level("none", 1_000);
    assert!(max_latency(&plain, "mpeg") > Duration::ZERO);
    assert_eq!(max_latency(&plain, "rt"), Duration::ZERO);
}

#[test]
fn direct_mode_runs_the_second_level_with_its_threads_warp() {
    // The second level has no warp of its own at the first level.
    let direct = two_level("direct", 0);
    assert_eq!(max_latency(&direct, "rt"), Duration::ZERO);
    assert_eq!(
        max_latency(&direct, "mpeg"),
        Duration::ZERO,
        "the player's warp 500 is forwarded"
    );
    let threshold = two_level("threshold", 0);
    assert!(
        max_latency(&threshold, "mpeg") > Duration::ZERO,
        "threshold mode lends the level's own warp, here 0"
    );
}

// ----- §2.2: warp by message -------------------------------------------------------------

fn player(with_msg: bool) -> RunResult {
    let root = bvt("root", &[], None);
    let mut ops = Vec::new();
    if with_msg {
        ops.push(Op::Msg {
            to: Target::Parent,
            msg: Msg::new("warp").arg("on", Value::Bool(true)),
        });
    }
    ops.extend(periodic(10, 10, 1));
    let warp_off = Params::new()
        .with("warp", Value::Int(100))
        .with("advance", Value::Int(1));
    let threads = vec![
        thread("a", "root", attach(0, Duration::ZERO), busy()),
        thread("b", "root", attach(0, Duration::ZERO), busy()),
        thread("player", "root", warp_off, ops),
    ];
    run_checked(&scenario(1, vec![root], threads))
}

#[test]
fn a_thread_warps_itself_with_a_message() {
    let r = player(true);
    let replies: Vec<_> = r
        .log
        .iter()
        .filter(|e| e.kind == LogKind::Reply && e.text.contains("warp"))
        .collect();
    assert_eq!(replies.len(), 1, "{:#?}", r.log);
    assert!(replies[0].text.contains("warped"), "{}", replies[0].text);
    let lat = &by_name(&r, "player").wakeup_latencies;
    assert!(lat.len() >= 90, "{}", lat.len());
    assert!(
        lat[1..].iter().all(|l| l.is_zero()),
        "every job after the message starts at once: {lat:?}"
    );
    let without = player(false);
    assert!(max_latency(&without, "player") > Duration::ZERO);
}
