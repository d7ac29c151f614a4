//! Sweeps run end to end through the real parser and simulator: the file
//! is the same however the sweep is run (threads, restarts after a limit or
//! a kill's partial line, shards merged), parameters reach the scenario,
//! and the acceptance-ratio curve of rate-monotonic `fp` agrees with
//! response-time analysis on every generated task set.

use hsched_sweep::csvfile;
use hsched_sweep::points::{self, Shard};
use hsched_sweep::{Options, Silent, Spec};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

fn spec_of(text: &str, name: &str) -> Spec {
    let path = scratch(name);
    std::fs::write(&path, text).unwrap();
    hsched_sweep::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn run(
    spec: &Spec,
    out: &Path,
    threads: usize,
    limit: Option<u64>,
    shard: Shard,
) -> hsched_sweep::Outcome {
    let mut opts = Options::new(out);
    opts.threads = threads;
    opts.limit = limit;
    opts.shard = shard;
    hsched_sweep::run(spec, &opts, &Silent).unwrap_or_else(|e| panic!("{e}"))
}

/// A small acceptance sweep: 4 utilisations x 6 task sets of 5 tasks.
const RM: &str = r#"
seed = 11
replicates = 6
metrics = ["schedulable", "global.deadline_misses", "global.jobs", "max(threads[*].job_response.max_ns)"]
[grid]
u = { from = 0.7, to = 1.0, step = 0.1 }
[taskset]
tasks = 5
utilisation = "${u}"
period = { log_uniform = ["10ms", "300ms"] }
granularity = "1ms"
policy = "fp"
attach = { prio = "${task.rm}" }
"#;

#[test]
fn the_file_does_not_depend_on_the_number_of_threads() {
    let spec = spec_of(RM, "threads.toml");
    let one = scratch("threads-1.csv");
    let three = scratch("threads-3.csv");
    let o = run(&spec, &one, 1, None, Shard::ALL);
    assert_eq!((o.total, o.ran, o.remaining), (24, 24, 0));
    run(&spec, &three, 3, None, Shard::ALL);
    let a = std::fs::read(&one).unwrap();
    assert_eq!(a, std::fs::read(&three).unwrap());
    // One row per point, in index order, after the header.
    let text = String::from_utf8(a).unwrap();
    let indexes: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(indexes, (0..24).collect::<Vec<_>>());
    // The same spec loaded again gives the same file.
    let again = scratch("threads-again.csv");
    run(
        &spec_of(RM, "threads-again.toml"),
        &again,
        2,
        None,
        Shard::ALL,
    );
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn a_sweep_stopped_and_restarted_writes_the_same_file_as_one_run() {
    let spec = spec_of(RM, "restart.toml");
    let straight = scratch("restart-straight.csv");
    run(&spec, &straight, 2, None, Shard::ALL);
    let expected = std::fs::read(&straight).unwrap();

    // Stopped by --limit twice, then finished.
    let pieces = scratch("restart-pieces.csv");
    let o = run(&spec, &pieces, 2, Some(5), Shard::ALL);
    assert_eq!((o.ran, o.remaining), (5, 19));
    let o = run(&spec, &pieces, 3, Some(7), Shard::ALL);
    assert_eq!((o.done_before, o.ran, o.remaining), (5, 7, 12));
    let o = run(&spec, &pieces, 1, None, Shard::ALL);
    assert_eq!((o.done_before, o.ran, o.remaining), (12, 12, 0));
    assert_eq!(std::fs::read(&pieces).unwrap(), expected);

    // Killed while writing a row: the file ends in a partial line.
    let killed = scratch("restart-killed.csv");
    run(&spec, &killed, 2, Some(9), Shard::ALL);
    let mut bytes = std::fs::read(&killed).unwrap();
    let next_row = &expected[bytes.len()..];
    let cut = next_row.iter().position(|&b| b == b',').unwrap() + 3;
    bytes.extend_from_slice(&next_row[..cut]);
    std::fs::write(&killed, &bytes).unwrap();
    let o = run(&spec, &killed, 2, None, Shard::ALL);
    assert_eq!((o.done_before, o.ran), (9, 15));
    assert_eq!(std::fs::read(&killed).unwrap(), expected);

    // Run again on a finished file: nothing to do, nothing changes.
    let o = run(&spec, &killed, 2, None, Shard::ALL);
    assert_eq!((o.done_before, o.ran), (24, 0));
    assert_eq!(std::fs::read(&killed).unwrap(), expected);

    // A row removed by hand is run again and put back in its place.
    let text = String::from_utf8(expected.clone()).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("3,"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&killed, without).unwrap();
    let o = run(&spec, &killed, 2, None, Shard::ALL);
    assert_eq!(o.ran, 1);
    assert_eq!(std::fs::read(&killed).unwrap(), expected);
}

#[test]
fn a_file_from_another_spec_is_refused_not_continued() {
    let spec = spec_of(RM, "other-a.toml");
    let out = scratch("other.csv");
    run(&spec, &out, 2, Some(4), Shard::ALL);
    let other = spec_of(&RM.replace("seed = 11", "seed = 12"), "other-b.toml");
    let e = hsched_sweep::run(&other, &Options::new(&out), &Silent).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, hsched_sweep::SweepError::Input(_)), "{msg}");
    assert!(
        msg.contains("point 0 has seed=") && msg.contains("another spec"),
        "{msg}"
    );
    let fewer = spec_of(&RM.replace(", \"global.jobs\"", ""), "other-c.toml");
    let msg = hsched_sweep::run(&fewer, &Options::new(&out), &Silent)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("columns"), "{msg}");
}

#[test]
fn shards_partition_the_points_and_merge_into_the_unsharded_file() {
    let spec = spec_of(RM, "shards.toml");
    let whole = scratch("shards-whole.csv");
    run(&spec, &whole, 2, None, Shard::ALL);
    let mut files = Vec::new();
    let mut seen = Vec::new();
    for k in 1..=3 {
        let f = scratch(&format!("shards-{k}.csv"));
        let o = run(&spec, &f, 1, None, Shard { k, n: 3 });
        assert_eq!(o.total, 8);
        let rows = csvfile::read(&f).unwrap().unwrap().rows;
        for r in &rows {
            assert_eq!(r.index % 3, k - 1, "shard {k} ran point {}", r.index);
        }
        seen.extend(rows.iter().map(|r| r.index));
        files.push(f);
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..24).collect::<Vec<_>>());
    let merged = scratch("shards-merged.csv");
    let inputs: Vec<&Path> = files.iter().rev().map(PathBuf::as_path).collect();
    let m = csvfile::merge(&inputs, &merged, Some(&spec)).unwrap();
    assert_eq!((m.rows, m.missing), (24, Some(0)));
    assert_eq!(
        std::fs::read(&merged).unwrap(),
        std::fs::read(&whole).unwrap()
    );
    // Two shards only: the third's points are missing.
    let partial = scratch("shards-partial.csv");
    let m = csvfile::merge(&inputs[..2], &partial, Some(&spec)).unwrap();
    assert_eq!(m.missing, Some(8));
    // A shard file is not continued as another shard.
    let e = hsched_sweep::run(
        &spec,
        &{
            let mut o = Options::new(&files[0]);
            o.shard = Shard { k: 2, n: 3 };
            o
        },
        &Silent,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not in shard 2/3"), "{e}");
}

/// Exact response-time analysis of fixed priorities on one CPU
/// (Joseph & Pandya; Audsley et al.): every task's worst response, from the
/// synchronous release, within its deadline.
fn rta_schedulable(
    tasks: &[hsched_sweep::generator::Task],
    prio: fn(&hsched_sweep::generator::Task) -> i64,
) -> bool {
    tasks.iter().all(|t| {
        let higher: Vec<_> = tasks.iter().filter(|o| prio(o) > prio(t)).collect();
        let mut r = t.wcet;
        loop {
            let next = t.wcet
                + higher
                    .iter()
                    .map(|h| r.div_ceil(h.period) * h.wcet)
                    .sum::<u64>();
            if next > t.deadline {
                return false;
            }
            if next == r {
                return true;
            }
            r = next;
        }
    })
}

#[test]
fn rm_acceptance_agrees_with_response_time_analysis_and_falls_with_utilisation() {
    let spec = hsched_sweep::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/sweeps/acceptance-fp.toml"),
    )
    .unwrap();
    // The shipped example's grid at a third of its task sets per point.
    let spec = Spec {
        replicates: 7,
        ..spec
    };
    let out = scratch("acceptance.csv");
    run(&spec, &out, 2, None, Shard::ALL);
    let rows = csvfile::read(&out).unwrap().unwrap().rows;
    let header = csvfile::header(&spec);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (u_col, ok_col) = (col("u"), col("schedulable"));
    let n = 8.0f64;
    let liu_layland = n * (2f64.powf(1.0 / n) - 1.0);
    let mut by_u: Vec<(f64, u32, u32)> = Vec::new();
    for row in &rows {
        let p = points::point(&spec, row.index);
        let tasks = hsched_sweep::run::taskset_of(&spec, &p).unwrap().unwrap();
        let simulated = &row.cells[ok_col] == "1";
        assert_eq!(
            simulated,
            rta_schedulable(&tasks, |t| t.rm),
            "point {}: the simulation and response-time analysis disagree on {tasks:?}",
            row.index
        );
        let u: f64 = row.cells[u_col].parse().unwrap();
        if u <= liu_layland {
            assert!(
                simulated,
                "point {}: U = {u} is within Liu & Layland's bound",
                row.index
            );
        }
        match by_u.last_mut() {
            Some((last, ok, all)) if *last == u => {
                *ok += u32::from(simulated);
                *all += 1;
            }
            _ => by_u.push((u, u32::from(simulated), 1)),
        }
    }
    let ratios: Vec<f64> = by_u
        .iter()
        .map(|(_, ok, all)| f64::from(*ok) / f64::from(*all))
        .collect();
    assert_eq!(ratios[0], 1.0, "{ratios:?}");
    // Falls with utilisation, give or take the noise of 7 sets a point.
    for w in ratios.windows(2) {
        assert!(w[1] <= w[0] + 0.3, "{ratios:?}");
    }
    assert!(ratios.last() < ratios.first(), "{ratios:?}");
}

#[test]
fn deadline_monotonic_with_constrained_deadlines_agrees_with_response_time_analysis() {
    let spec = spec_of(
        r#"
seed = 21
replicates = 8
metrics = ["schedulable"]
[grid]
u = [0.5, 0.7, 0.9]
[taskset]
tasks = 6
utilisation = "${u}"
period = { uniform = ["5ms", "100ms"] }
granularity = "1ms"
deadline = [0.4, 1]
policy = "fp"
attach = { prio = "${task.dm}" }
"#,
        "dm.toml",
    );
    let out = scratch("dm.csv");
    run(&spec, &out, 2, None, Shard::ALL);
    let rows = csvfile::read(&out).unwrap().unwrap().rows;
    let (mut met, mut missed) = (0, 0);
    for row in &rows {
        let p = points::point(&spec, row.index);
        let tasks = hsched_sweep::run::taskset_of(&spec, &p).unwrap().unwrap();
        assert!(tasks.iter().any(|t| t.deadline < t.period), "{tasks:?}");
        let simulated = row.cells[4] == "1";
        assert_eq!(
            simulated,
            rta_schedulable(&tasks, |t| t.dm),
            "point {}: {tasks:?}",
            row.index
        );
        if simulated {
            met += 1;
        } else {
            missed += 1;
        }
    }
    // Both verdicts occur, so the agreement is not vacuous.
    assert!(met > 0 && missed > 0, "{met} met, {missed} missed");
}

#[test]
fn res_reservations_of_each_task_s_wcet_meet_every_deadline_up_to_full_utilisation() {
    // The generator names any policy: EDF-scheduled hard reservations
    // (`res`) of (wcet, period) are schedulable up to U = 1.
    let spec = spec_of(
        r#"
seed = 5
replicates = 4
metrics = ["schedulable", "global.jobs"]
[grid]
u = [0.6, 0.9, 1.0]
[taskset]
tasks = 6
utilisation = "${u}"
period = { log_uniform = ["10ms", "100ms"] }
granularity = "1ms"
policy = "res"
attach = { amount = "${task.wcet}", period = "${task.period}" }
horizon = { longest_periods = 3 }
"#,
        "res.toml",
    );
    let out = scratch("res.csv");
    run(&spec, &out, 2, None, Shard::ALL);
    let rows = csvfile::read(&out).unwrap().unwrap().rows;
    assert_eq!(rows.len(), 12);
    for r in rows {
        // index, seed, replicate, u, schedulable, global.jobs
        assert_eq!(
            r.cells[4], "1",
            "point {} missed a deadline: {:?}",
            r.index, r.cells
        );
        assert!(r.cells[5].parse::<u64>().unwrap() > 6, "{:?}", r.cells);
    }
}

const BASE: &str = r#"
# A periodic task and a CPU hog under fixed priority.
name = "base"
horizon = "1s"

[[scheduler]]
name = "root"
policy = "fp"

[[thread]]
name = "video"
at = { prio = ${prio} }
program = [
  { periodic = { period = "10ms", run = "1ms" } },
]

[[thread]]
name = "hog"
at = { prio = 5 }
program = [ { run = "10s" } ]
"#;

#[test]
fn parameters_reach_the_scenario_by_key_path_and_by_substitution() {
    let base = scratch("base.toml");
    std::fs::write(&base, BASE).unwrap();
    let spec = spec_of(
        r#"
metrics = ["threads[video].cpu_time_ns", "threads[video].deadline_misses", "threads[hog].share"]
scenario = "base.toml"
[grid]
prio = [1, 9]
run = { from = "1ms", to = "3ms", step = "1ms", set = "thread[0].program[0].periodic.run" }
"#,
        "keypath.toml",
    );
    assert_eq!(points::count(&spec), 6);
    let out = scratch("keypath.csv");
    run(&spec, &out, 2, None, Shard::ALL);
    let rows = csvfile::read(&out).unwrap().unwrap().rows;
    for r in &rows {
        let prio: i64 = r.cells[2].parse().unwrap();
        let run_ns: u64 = r.cells[3].parse().unwrap();
        let cpu: u64 = r.cells[4].parse().unwrap();
        let misses: u64 = r.cells[5].parse().unwrap();
        if prio == 9 {
            // Above the hog: every one of its 100 jobs runs in full.
            assert_eq!(cpu, 100 * run_ns, "{:?}", r.cells);
            assert_eq!(misses, 0);
        } else {
            // Below a hog that never blocks: nothing at all. Its first
            // job never ends, and each of the 100 releases on its grid is
            // a job that misses once its deadline passes: all but the last,
            // which falls due at the horizon itself.
            assert_eq!(cpu, 0, "{:?}", r.cells);
            assert_eq!(misses, 99, "{:?}", r.cells);
        }
    }
    // The first parameter varies slowest.
    let order: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.cells[2].as_str(), r.cells[3].as_str()))
        .collect();
    assert_eq!(
        order,
        [
            ("1", "1000000"),
            ("1", "2000000"),
            ("1", "3000000"),
            ("9", "1000000"),
            ("9", "2000000"),
            ("9", "3000000")
        ]
    );
}

#[test]
fn a_point_whose_scenario_is_bad_is_reported_with_its_parameters() {
    let base = scratch("bad-base.toml");
    std::fs::write(&base, BASE).unwrap();
    let spec = spec_of(
        r#"
scenario = "bad-base.toml"
[grid]
prio = [3, 2000000]
"#,
        "badpoint.toml",
    );
    let out = scratch("badpoint.csv");
    let e = hsched_sweep::run(&spec, &Options::new(&out), &Silent).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, hsched_sweep::SweepError::Input(_)), "{msg}");
    assert!(msg.contains("point 1 (prio=2000000"), "{msg}");
    assert!(
        msg.contains("bad-base.toml") && msg.contains("prio"),
        "{msg}"
    );
    // The good point before it was kept.
    let rows = csvfile::read(&out).unwrap().unwrap().rows;
    assert_eq!(rows.iter().map(|r| r.index).collect::<Vec<_>>(), [0]);
}

#[test]
fn a_random_design_draws_the_same_values_for_every_replicate_of_a_sample() {
    let base = scratch("random-base.toml");
    std::fs::write(&base, BASE).unwrap();
    let spec = spec_of(
        r#"
seed = 9
replicates = 3
scenario = "random-base.toml"
metrics = ["threads[video].cpu_time_ns"]
[random]
samples = 5
prio = { int_uniform = [6, 9] }
run = { uniform = ["500us", "2ms"], set = "thread[0].program[0].periodic.run" }
"#,
        "random.toml",
    );
    let ps: Vec<_> = (0..points::count(&spec))
        .map(|i| points::point(&spec, i))
        .collect();
    assert_eq!(ps.len(), 15);
    for group in ps.chunks(3) {
        assert!(group.iter().all(|p| p.values == group[0].values));
        assert_ne!(group[0].seed, group[1].seed);
    }
    let distinct: std::collections::BTreeSet<String> =
        ps.iter().map(|p| p.values[1].to_string()).collect();
    assert_eq!(distinct.len(), 5, "{distinct:?}");
    for p in &ps {
        let prio: i64 = p.values[0].to_string().parse().unwrap();
        let run: i64 = p.values[1].to_string().parse().unwrap();
        assert!(
            (6..=9).contains(&prio) && (500_000..=2_000_000).contains(&run),
            "{p:?}"
        );
    }
}

#[test]
fn an_inline_scenario_is_edited_like_a_file() {
    // Round robin among a periodic thread and two hogs: the thread waits at
    // most the two hogs' quanta for the CPU, so its latency grows with the
    // quantum, while its share (what it asks for) does not change.
    let spec = spec_of(
        r#"
metrics = ["threads[video].share", "threads[video].wakeup_latency.max_ns"]
[grid]
quantum = { values = ["1ms", "2ms", "4ms"], set = "scheduler[0].quantum" }

[scenario]
horizon = "1s"
[[scenario.scheduler]]
name = "root"
policy = "rr"
[[scenario.thread]]
name = "video"
program = [ { periodic = { period = "20ms", run = "1ms" } } ]
[[scenario.thread]]
name = "hog"
count = 2
program = [ { run = "10s" } ]
"#,
        "inline.toml",
    );
    let out = scratch("inline.csv");
    run(&spec, &out, 2, None, Shard::ALL);
    let rows = csvfile::read(&out).unwrap().unwrap().rows;
    let mut last = 0;
    for (r, quantum_ms) in rows.iter().zip([1u64, 2, 4]) {
        assert_eq!(r.cells[3], "0.05", "{:?}", r.cells);
        let latency: u64 = r.cells[4].parse().unwrap();
        assert!(latency <= 2 * quantum_ms * 1_000_000, "{:?}", r.cells);
        assert!(latency > last, "{:?}", r.cells);
        last = latency;
    }
}

#[test]
fn on_several_cpus_a_set_may_exceed_one_cpu_but_no_task_does() {
    let text = r#"
replicates = 4
metrics = ["schedulable", "global.busy_ns"]
[grid]
u = [1.5]
[taskset]
tasks = 4
utilisation = "${u}"
period = { log_uniform = ["10ms", "100ms"] }
policy = "fp"
cpus = 2
attach = { prio = "${task.rm}" }
"#;
    let spec = spec_of(text, "two-cpus.toml");
    for i in 0..points::count(&spec) {
        let p = points::point(&spec, i);
        let tasks = hsched_sweep::run::taskset_of(&spec, &p).unwrap().unwrap();
        let total: f64 = tasks.iter().map(|t| t.wcet as f64 / t.period as f64).sum();
        assert!((total - 1.5).abs() < 1e-3, "{total}: {tasks:?}");
        assert!(tasks.iter().all(|t| t.wcet <= t.period), "{tasks:?}");
    }
    let out = scratch("two-cpus.csv");
    run(&spec, &out, 2, None, Shard::ALL);
    // Both CPUs are used: more CPU time than one CPU has in the run.
    let rows = csvfile::read(&out).unwrap().unwrap().rows;
    let scn = hsched_sweep::run::scenario_text(&spec, &points::point(&spec, 0))
        .unwrap()
        .1;
    let horizon: u64 = scn
        .lines()
        .find_map(|l| l.strip_prefix("horizon = "))
        .unwrap()
        .parse()
        .unwrap();
    let busy: u64 = rows[0].cells[5].parse().unwrap();
    assert!(
        busy > horizon,
        "busy {busy} ns in a horizon of {horizon} ns"
    );

    let too_much = spec_of(&text.replace("u = [1.5]", "u = [2.5]"), "too-much.toml");
    let e =
        hsched_sweep::run(&too_much, &Options::new(scratch("too-much.csv")), &Silent).unwrap_err();
    assert!(
        e.to_string()
            .contains("taskset.utilisation: 2.5 is more than 2"),
        "{e}"
    );
}

#[test]
fn durations_are_nanoseconds_and_older_files_continue() {
    let text = r#"
metrics = ["threads[video].wakeup_latency.max_ns"]
[grid]
quantum = { values = ["1ms", "2ms", "4ms"], set = "scheduler[0].quantum" }
run = { from = "1ms", to = "2ms", step = "1ms", set = "thread[0].program[0].periodic.run" }

[scenario]
horizon = "200ms"
[[scenario.scheduler]]
name = "root"
policy = "rr"
[[scenario.thread]]
name = "video"
program = [ { periodic = { period = "20ms", run = "1ms" } } ]
[[scenario.thread]]
name = "hog"
program = [ { run = "10s" } ]
"#;
    let spec = spec_of(text, "durations.toml");
    let straight = scratch("durations.csv");
    run(&spec, &straight, 2, None, Shard::ALL);
    let whole = std::fs::read_to_string(&straight).unwrap();
    let mut lines = whole.lines();
    assert_eq!(
        lines.next(),
        Some("index,seed,quantum_ns,run_ns,threads[video].wakeup_latency.max_ns")
    );
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(first[2..4], ["1000000", "1000000"]);

    // A file an older hsched left: the list's durations as written, and
    // the columns named as the parameters.
    let older = |rows: usize| {
        let mut out = String::from("index,seed,quantum,run,threads[video].wakeup_latency.max_ns\n");
        for line in whole.lines().skip(1).take(rows) {
            let mut cells: Vec<String> = line.split(',').map(str::to_string).collect();
            cells[2] = format!("{}ms", cells[2].parse::<u64>().unwrap() / 1_000_000);
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    };
    let continued = scratch("durations-older.csv");
    std::fs::write(&continued, older(3)).unwrap();
    let outcome = run(&spec, &continued, 2, None, Shard::ALL);
    assert_eq!((outcome.done_before, outcome.ran), (3, 3));
    assert_eq!(std::fs::read_to_string(&continued).unwrap(), whole);

    let bad = scratch("durations-bad.csv");
    std::fs::write(&bad, older(3).replace(",2ms,", ",fast,")).unwrap();
    let mut opts = Options::new(&bad);
    opts.threads = 1;
    let e = hsched_sweep::run(&spec, &opts, &Silent)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("durations-bad.csv") && e.contains("column `quantum`") && e.contains("point 2"),
        "{e}"
    );
}
