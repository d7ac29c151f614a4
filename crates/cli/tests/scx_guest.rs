//! `hsched live --backend scx` in a sched_ext kernel under qemu (this
//! project's hosts have none of their own; see `hsched_testkit::guest`):
//! the scenario's hierarchy as hsched's BPF scheduler, asserted on shares,
//! order and safety, never on absolute latencies (emulation slows
//! everything many times over).
#![cfg(feature = "scx")]

use hsched_testkit::guest::{self, Guest, GuestOutput};
use hsched_testkit::require;
use std::time::Duration;

const HSCHED: &str = env!("CARGO_BIN_EXE_hsched");

/// One guest at a time: each is one host thread of emulation, and two on
/// this project's 2-CPU hosts beside the rest slow each other's decision
/// path (measured: rtwake's loop then missed most of its wakeups).
static ONE_GUEST_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Boots the guest with hsched at /bin/hsched and the scenario files
/// `files` (guest path, text), runs `script` there.
fn in_guest(files: &[(&str, &str)], script: &str) -> GuestOutput {
    let _turn = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut g = Guest::new().binary_at(HSCHED, "/bin/hsched");
    for (path, text) in files {
        g = g.file(*path, text.as_bytes().to_vec());
    }
    let out = g
        .script(script)
        .run(Duration::from_secs(400))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "guest: boot {:.1?}, whole run {:.1?}\n--- stdout\n{}\n--- stderr\n{}",
        out.boot, out.elapsed, out.stdout, out.stderr
    );
    out
}

/// The guest script's lines that check that the two processes whose pids
/// are in /tmp/pids both gain CPU time over a second (printing `both run`),
/// then kill them.
const BOTH_RUN: &str = "set -- $(cat /tmp/pids)\n\
    a0=$(cut -d' ' -f1 /proc/$1/schedstat); b0=$(cut -d' ' -f1 /proc/$2/schedstat)\n\
    sleep 1\n\
    a1=$(cut -d' ' -f1 /proc/$1/schedstat); b1=$(cut -d' ' -f1 /proc/$2/schedstat)\n\
    [ \"$a1\" -gt \"$a0\" ] && [ \"$b1\" -gt \"$b0\" ] && echo 'both run'\n\
    kill -9 $1 $2\n";

/// The scheduler `name` of a run's JSON.
fn scheduler<'a>(run: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    run["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scheduler `{name}` in {run}"))
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Each thread's share of the CPU time the run's threads received, in
/// percent, by name.
fn shares(run: &serde_json::Value) -> Vec<(String, f64)> {
    let threads = run["threads"].as_array().expect("threads");
    let cpu = |t: &serde_json::Value| t["cpu_time_ns"].as_f64().expect("cpu_time_ns");
    let total: f64 = threads.iter().map(cpu).sum();
    threads
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                cpu(t) / total * 100.0,
            )
        })
        .collect()
}

/// Two hogs under rr share their CPU within 5 points of half each, by the
/// kernel's own running and stopping times; the run writes the same
/// outputs as on the agent (JSON, trace, report, `--compare-sim`).
#[test]
fn two_hogs_under_rr_share_their_cpu_evenly() {
    require!("the sched_ext guest", guest::requirements());
    let scenario = include_str!("../../../scenarios/live/two-hogs-rr.toml");
    let out = in_guest(
        &[("/s/two-hogs-rr.toml", scenario)],
        "hsched live /s/two-hogs-rr.toml --backend scx --json /tmp/run.json \
           --trace /tmp/trace.json --report /tmp/report.html --compare-sim >/tmp/compare.txt \
         || echo \"exit $?\"\n\
         for f in trace.json report.html; do [ -s /tmp/$f ] && echo \"$f written\"; done\n\
         cat /tmp/compare.txt; echo '@@'; cat /tmp/run.json\n",
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let (said, run) = out.stdout.split_once("@@\n").expect("the run's output");
    assert!(
        said.starts_with("trace.json written\nreport.html written\n"),
        "{said}"
    );
    // The comparison names both platforms, thread by thread.
    assert!(
        said.contains("live-scx") && said.contains("hog.1"),
        "{said}"
    );
    let run = json(run);
    assert_eq!(run["global"]["platform"], "live-scx", "{run}");
    let shares = shares(&run);
    assert_eq!(shares.len(), 2, "{shares:?}");
    for (name, share) in &shares {
        assert!(
            (share - 50.0).abs() <= 5.0,
            "{name} got {share:.1}%: {shares:?}"
        );
    }
}

/// `hsched live --backend scx --partial`: the same sharing with only the
/// scenario's threads under the scheduler; and what a command starts is
/// scheduled with it (from its fork event): a shell that starts two busy
/// loops is three threads of rr against one loop, so its family gets two
/// thirds of the CPU (half if only the shell were managed).
#[test]
fn partial_mode_manages_what_a_command_starts() {
    require!("the sched_ext guest", guest::requirements());
    let scenario = r#"
name = "family"
horizon = "3s"
[machine]
cpus = 1
[[scheduler]]
name = "rr"
policy = "rr"
quantum = "10ms"
[[thread]]
name = "family"
parent = "rr"
command = ["sh", "-c", "sh -c 'while :; do :; done' & sh -c 'while :; do :; done' & wait"]
program = [ { run = "100s" } ]
[[thread]]
name = "single"
parent = "rr"
command = ["sh", "-c", "while :; do :; done"]
program = [ { run = "100s" } ]
"#;
    let out = in_guest(
        &[("/s/family.toml", scenario)],
        "hsched live /s/family.toml --backend scx --partial --json /tmp/run.json \
         || echo \"exit $?\"\ncat /tmp/run.json\n",
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let run = json(&out.stdout);
    let log = run["log"].to_string();
    assert!(log.contains("partial mode"), "{log}");
    let shares = shares(&run);
    let family = shares.iter().find(|(n, _)| n == "family").unwrap().1;
    // Two thirds: three threads of rr against one; within 5 points.
    assert!((family - 66.7).abs() <= 5.0, "{shares:?}");
}

/// Whole-machine mode: a thread with a 20% reservation (`res`, 400 ms every
/// 2 s) beside three busy loops the scenario does not name, which run as
/// `(others)` under the default scheduler on its CPU and freely on the
/// other: it gets at least 19% of its CPU. Why so coarse a grain: under
/// emulation a decision reaches the other virtual CPU milliseconds after
/// it is written (measured: most decisions of a 2 ms budget arrived past
/// their horizon; 3.6 ms lost per period of 50 ms every 250 ms), and each
/// period loses that much of its budget: the dispatcher counts a budget
/// from its decision, the kernel runs the thread from its dispatch. (At
/// 100 ms every 500 ms it got 18.99% beside `stress-ng --cpu 2` on the
/// host, whose load slows the emulated decision path further.)
#[test]
fn a_reservation_holds_beside_unmanaged_hogs_in_whole_machine_mode() {
    require!("the sched_ext guest", guest::requirements());
    let scenario = r#"
name = "res-beside-others"
horizon = "20s"
default = "ts"
[machine]
cpus = 1
watchdog = "off"
[[scheduler]]
name = "root"
policy = "fp"
[[scheduler]]
name = "res"
policy = "res"
parent = "root"
at = { prio = 1 }
[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = { prio = 0 }
[[thread]]
name = "reserved"
parent = "res"
at = { amount = "400ms", period = "2s" }
command = ["sh", "-c", "while :; do :; done"]
program = [ { loop = { body = [ { run = "1s" } ] } } ]
"#;
    let out = in_guest(
        &[("/s/res.toml", scenario)],
        "for i in 1 2 3; do sh -c 'while :; do :; done' & done\n\
         hsched live /s/res.toml --backend scx --json /tmp/run.json || echo \"exit $?\"\n\
         cat /tmp/run.json\n",
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let run = json(&out.stdout);
    let log = run["log"].to_string();
    assert!(log.contains("whole machine"), "{log}");
    let reserved = &run["threads"][0];
    assert_eq!(reserved["name"], "reserved");
    let share = reserved["share"].as_f64().unwrap();
    assert!(share >= 0.19, "{reserved}");
    // The unmanaged hogs ran on its CPU too, in the default scheduler's
    // time (as `(others)`).
    let ts = scheduler(&run, "ts");
    assert!(ts["received_ns"].as_u64().unwrap() > 0, "{ts}");
}

/// A warped BVT thread (a 3 ms job every 33 ms) beside two hogs, one CPU.
const BVT_WARP: &str = r#"
name = "bvt-warp"
horizon = "4s"
seed = 1
[machine]
cpus = 1
watchdog = "off"
[[scheduler]]
name = "bvt"
policy = "bvt"
mcu = "1ms"
allowance = "20ms"
[[thread]]
name = "video"
parent = "bvt"
at = { advance = 1, warp = 50000, warp_on = true }
program = [ { periodic = { period = "33ms", deadline = "33ms", run = "3ms" } } ]
[[thread]]
name = "hog"
count = 2
parent = "bvt"
at = { advance = 1 }
command = ["sh", "-c", "while :; do :; done"]
program = [ { loop = { body = [ { run = "1s" } ] } } ]
"#;

/// A warped BVT thread is dispatched ahead of the hogs at its wakeups: the
/// same scenario with and without its warp, in one guest, side by side.
/// Unwarped, a waking thread waits until the running hog's lead on it
/// passes the context-switch allowance (20 ms); warped, it runs at once.
#[test]
fn a_warped_bvt_thread_runs_ahead_of_hogs_at_its_wakeups() {
    require!("the sched_ext guest", guest::requirements());
    let warped = BVT_WARP;
    let unwarped = warped.replace("warp_on = true", "warp_on = false");
    let out = in_guest(
        &[("/s/warped.toml", warped), ("/s/unwarped.toml", &unwarped)],
        "for s in warped unwarped; do\n\
           hsched live /s/$s.toml --backend scx --json /tmp/$s.json || echo \"exit $?\"\n\
         done\n\
         cat /tmp/warped.json; echo '@@'; cat /tmp/unwarped.json\n",
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let (warped, unwarped) = out.stdout.split_once("@@").expect("two runs");
    let latency = |run: &serde_json::Value, q: &str| {
        let video = &run["threads"][0];
        assert_eq!(video["name"], "video");
        assert!(
            video["wakeup_latency"]["count"].as_u64().unwrap() >= 50,
            "{video}"
        );
        video["wakeup_latency"][q].as_u64().unwrap()
    };
    let (warped, unwarped) = (json(warped), json(unwarped));
    let (w50, u50) = (latency(&warped, "p50_ns"), latency(&unwarped, "p50_ns"));
    let (w99, u99) = (latency(&warped, "p99_ns"), latency(&unwarped, "p99_ns"));
    eprintln!(
        "video wakeup latency, warped p50 {w50} p99 {w99}, unwarped p50 {u50} p99 {u99} (ns)"
    );
    // Ahead of the hogs: its typical wait is the decision path's alone,
    // a fraction of the unwarped one, which waits out hogs' runs.
    assert!(
        w50 * 2 < u50,
        "warped p50 {w50} ns against unwarped {u50} ns"
    );
    assert!(w99 < u99, "warped p99 {w99} ns against unwarped {u99} ns");
}

/// rtwake (Vassal's sample scheduler, loaded under the root) never runs
/// its thread before the wakeup time it asked for: every job of the timer
/// thread starts at or after its release. Every 20 ms, not Table 2's 1 ms:
/// under emulation one turn of the timer's loop (its run, a `wait` through
/// the control socket) takes about 11 ms, and rtwake refuses a wakeup whose
/// time has passed.
#[test]
fn rtwake_never_wakes_a_thread_early() {
    require!("the sched_ext guest", guest::requirements());
    let scenario = include_str!("../../../scenarios/live/vassal-table2.toml")
        .replace(r#"period = "1ms""#, r#"period = "20ms""#);
    assert!(scenario.contains(r#"period = "20ms""#));
    let scenario = scenario.as_str();
    let out = in_guest(
        &[("/s/vassal.toml", scenario)],
        "hsched live /s/vassal.toml --backend scx --json /tmp/run.json --jobs-csv /tmp/jobs.csv \
         >/dev/null || echo \"exit $?\"\ncat /tmp/jobs.csv\n",
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let mut lines = out.stdout.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (thread, release, start) = (column("thread"), column("release_ns"), column("start_ns"));
    let mut started = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells[thread] != "timer" || cells[start].is_empty() {
            continue;
        }
        let (r, s): (u64, u64) = (
            cells[release].parse().unwrap(),
            cells[start].parse().unwrap(),
        );
        assert!(s >= r, "a job started {} ns early: {line}", r - s);
        started += 1;
    }
    eprintln!("rtwake: {started} jobs of the timer started, none early");
    // About 145 wakeups in the 2.95 s after the first at 50 ms.
    assert!(started >= 100, "only {started} jobs of the timer started");
}

/// The hierarchy of scenarios with a scheduler `fast` may be loaded into,
/// a busy loop `hog` under `ts`.
const CTL_SCENARIO: &str = r#"
name = "ctl"
horizon = "60s"
[machine]
cpus = 1
[[scheduler]]
name = "root"
policy = "fp"
[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = { prio = 0 }
[[thread]]
name = "hog"
parent = "ts"
command = ["sh", "-c", "while :; do :; done"]
program = [ { run = "100s" } ]
"#;

/// The guest script's lines that start `hsched live SCENARIO ARGS` in the
/// background (its pid in `$live`) and wait until it answers on
/// /tmp/c.sock.
fn start_live(scenario: &str, args: &str) -> String {
    format!(
        "hsched live {scenario} --backend scx --socket /tmp/c.sock {args} >/tmp/run.json 2>/tmp/err &\n\
         live=$!\n\
         i=0; until hsched ctl --socket /tmp/c.sock status >/dev/null 2>&1; do\n\
           sleep 0.2; i=$((i+1)); [ $i -gt 150 ] && {{ echo 'never answered'; cat /tmp/err; exit 1; }}\n\
         done\n"
    )
}

/// `hsched ctl` on the sched_ext backend while the hog runs: a scheduler
/// loaded, the hog moved under it and back, the scheduler unloaded; the
/// run then stopped with SIGTERM, in order.
#[test]
fn ctl_load_move_and_unload_work_on_the_sched_ext_backend() {
    require!("the sched_ext guest", guest::requirements());
    let script = start_live("/s/ctl.toml", "--json")
        + "c() { hsched ctl --socket /tmp/c.sock \"$@\" >/dev/null 2>>/tmp/ctl.err && echo \"$1 ok\"; }\n\
           c load fast rr --parent root --at prio=5 quantum=10ms\n\
           sleep 0.5\n\
           c move hog fast\n\
           sleep 1\n\
           c move hog ts\n\
           sleep 0.5\n\
           c unload fast\n\
           sleep 0.5\n\
           kill -TERM $live; wait $live; echo \"exit $?\"\n\
           cat /tmp/ctl.err /tmp/err >&2\n\
           echo '@@'; cat /tmp/run.json\n";
    let out = in_guest(&[("/s/ctl.toml", CTL_SCENARIO)], &script);
    let (said, run) = out.stdout.split_once("@@\n").expect("the run's output");
    assert_eq!(
        said, "load ok\nmove ok\nmove ok\nunload ok\nexit 143\n",
        "{out:#?}"
    );
    let run = json(run);
    let log = run["log"].to_string();
    for step in ["moved to `fast`", "moved to `ts`", "unloaded `fast`"] {
        assert!(log.contains(step), "no `{step}` in {log}");
    }
    let fast = scheduler(&run, "fast");
    // Under `fast` for a second: most of it.
    assert!(
        fast["received_ns"].as_u64().unwrap() > 500_000_000,
        "{fast}"
    );
    assert_eq!(run["threads"][0]["scheduler"], "ts");
}

/// A policy that starves a thread for good (fixed priorities: the low
/// one never runs), with the dispatcher's watchdog off: the kernel's
/// watchdog ejects the scheduler after its 30 s; hsched reports the
/// kernel's reason, writes its outputs, and the threads run on under the
/// fair class (kept running here to see it).
#[test]
fn a_stalling_policy_is_ejected_by_the_kernel_and_the_threads_run_on() {
    require!("the sched_ext guest", guest::requirements());
    let scenario = r#"
name = "stall"
horizon = "120s"
[machine]
cpus = 1
watchdog = "off"
[[scheduler]]
name = "root"
policy = "fp"
[[thread]]
name = "high"
parent = "root"
at = { prio = 2 }
command = ["sh", "-c", "echo $$ >>/tmp/pids; while :; do :; done"]
program = [ { run = "1000s" } ]
[[thread]]
name = "low"
parent = "root"
at = { prio = 1 }
command = ["sh", "-c", "echo $$ >>/tmp/pids; while :; do :; done"]
program = [ { run = "1000s" } ]
"#;
    let script =
        "hsched live /s/stall.toml --backend scx --keep-commands --json /tmp/run.json 2>/tmp/err\n\
         echo \"exit $?\"\n\
         echo \"state $(cat /sys/kernel/sched_ext/state)\"\n"
            .to_string()
            + BOTH_RUN
            + "cat /tmp/err >&2\necho '@@'; cat /tmp/run.json\n";
    let out = in_guest(&[("/s/stall.toml", scenario)], &script);
    let (said, run) = out.stdout.split_once("@@\n").expect("the run's output");
    assert_eq!(said, "exit 1\nstate disabled\nboth run\n", "{out:#?}");
    assert!(
        out.stderr
            .contains("the kernel ejected the sched_ext scheduler")
            && out.stderr.contains("runnable task stall"),
        "{}",
        out.stderr
    );
    let run = json(run);
    let log = run["log"].to_string();
    assert!(log.contains("runnable task stall"), "{log}");
    // Stopped at the ejection, 30 s (the kernel's timeout) after the low
    // thread last ran, give or take its 15 s check.
    let end = run["global"]["horizon_ns"].as_u64().unwrap();
    assert!(
        (30_000_000_000..=50_000_000_000).contains(&end),
        "ended at {end} ns"
    );
}

/// SIGKILL of hsched: the kernel unloads the scheduler (the state reads
/// `disabled`), and every task runs on under the fair class.
#[test]
fn sigkill_of_hsched_leaves_every_task_running_under_the_fair_class() {
    require!("the sched_ext guest", guest::requirements());
    let scenario = r#"
name = "killed"
horizon = "60s"
[machine]
cpus = 1
[[scheduler]]
name = "rr"
policy = "rr"
[[thread]]
name = "hog"
count = 2
parent = "rr"
command = ["sh", "-c", "echo $$ >>/tmp/pids; while :; do :; done"]
program = [ { run = "100s" } ]
"#;
    let script = start_live("/s/killed.toml", "")
        + "sleep 1\n\
           echo \"during $(cat /sys/kernel/sched_ext/state)\"\n\
           kill -9 $live\n\
           i=0; while [ \"$(cat /sys/kernel/sched_ext/state)\" != disabled ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n\
           echo \"after $(cat /sys/kernel/sched_ext/state)\"\n"
        + BOTH_RUN;
    let out = in_guest(&[("/s/killed.toml", scenario)], &script);
    assert_eq!(
        out.stdout, "during enabled\nafter disabled\nboth run\n",
        "{out:#?}"
    );
}

/// The fast path on wakeup (`--speculate`): the warped BVT thread of the
/// test above, predicted to win its CPU at each wakeup, is armed at each
/// block, and the BPF scheduler runs it at its wakeup before the agent
/// hears of it. Side by side with the same run without it: nearly every
/// wakeup takes the fast path, the hierarchy agrees with nearly every
/// prediction, and the thread's typical wait is shorter.
#[test]
fn the_fast_path_runs_a_predicted_thread_at_its_wakeup() {
    require!("the sched_ext guest", guest::requirements());
    let scenario = BVT_WARP;
    let out = in_guest(
        &[("/s/warp.toml", scenario)],
        "hsched live /s/warp.toml --backend scx --json /tmp/plain.json || echo \"exit $?\"\n\
         hsched live /s/warp.toml --backend scx --speculate --json /tmp/fast.json || echo \"exit $?\"\n\
         cat /tmp/plain.json; echo '@@'; cat /tmp/fast.json\n",
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let (plain, fast) = out.stdout.split_once("@@").expect("two runs");
    let (plain, fast) = (json(plain), json(fast));
    let p50 = |run: &serde_json::Value| {
        assert_eq!(run["threads"][0]["name"], "video");
        run["threads"][0]["wakeup_latency"]["p50_ns"]
            .as_u64()
            .unwrap()
    };
    let log = fast["log"].to_string();
    let counted = |after: &str| -> u64 {
        let at = log
            .find(after)
            .unwrap_or_else(|| panic!("no `{after}` in {log}"))
            + after.len();
        log[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (woke, wrong) = (counted("speculative wakeups: "), counted("of which "));
    let ran_fast: u64 = log[..log
        .find(" tasks run at their wakeup")
        .expect("the dispatch counts")]
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    eprintln!(
        "fast path: {woke} speculative wakeups, {wrong} against the hierarchy, {ran_fast} run at their wakeup; video p50 {} ns plain, {} ns fast",
        p50(&plain),
        p50(&fast)
    );
    // About 120 periods in 4 s; the first wakeups are not armed yet.
    assert!(woke >= 60, "{log}");
    assert!(wrong * 10 <= woke, "{log}");
    assert!(ran_fast * 10 >= woke * 9, "{log}");
    assert!(p50(&fast) < p50(&plain), "{log}");
    let plain_log = plain["log"].to_string();
    assert!(
        plain_log.contains(" 0 tasks run at their wakeup by the fast path"),
        "without --speculate nothing is armed: {plain_log}"
    );
}

/// Run by hand for the figures the issue asks for (`cargo test -p hsched
/// --features scx --test scx_guest figures_under_emulation -- --ignored
/// --nocapture`): the decision path's cost on both backends side by side
/// in one guest, two hogs under `rr` with a 1 ms quantum (1,000 decisions
/// a second): the agent's CPU time per decision, sampled from its
/// `/proc` stat over 3 s of the run against the decisions `hsched ctl
/// status` counts over the same 3 s, and under sched_ext the BPF
/// programs' own time (`kernel.bpf_stats_enabled`, read with bpftool);
/// then `hsched repro --live --backend scx` for the entries that need no
/// other program. Emulation slows all of it many times over: these are
/// functional figures, not timings of real hardware.
#[test]
#[ignore = "figures for the record, run by hand"]
fn figures_under_emulation() {
    require!("the sched_ext guest", guest::requirements());
    let bpftool = hsched_testkit::program("bpftool").unwrap();
    let scenario = r#"
name = "rr-1ms"
horizon = "6s"
[machine]
cpus = 1
[[scheduler]]
name = "rr"
policy = "rr"
quantum = "1ms"
[[thread]]
name = "hog"
count = 2
parent = "rr"
command = ["sh", "-c", "while :; do :; done"]
program = [ { loop = { body = [ { run = "1s" } ] } } ]
"#;
    let script = r#"
echo 1 > /proc/sys/kernel/bpf_stats_enabled
cpu() { set -- $(cut -d' ' -f14,15 /proc/$1/stat); echo $(($1 + $2)); }
decisions() { hsched ctl --socket /tmp/c.sock status | head -1 | sed 's/.*decisions //'; }
for b in agent scx; do
  hsched live /s/rr.toml --backend $b --socket /tmp/c.sock --json /tmp/$b.json 2>/tmp/$b.err &
  pid=$!
  i=0; until hsched ctl --socket /tmp/c.sock status >/dev/null 2>&1; do sleep 0.2; i=$((i+1)); [ $i -gt 150 ] && break; done
  sleep 1
  c0=$(cpu $pid); d0=$(decisions); [ $b = scx ] && bpftool prog show > /tmp/p0
  sleep 3
  c1=$(cpu $pid); d1=$(decisions); [ $b = scx ] && bpftool prog show > /tmp/p1
  wait $pid
  echo "$b: agent CPU $((c1 - c0)) ticks (10 ms) over $((d1 - d0)) decisions in 3 s"
  grep -o '"name": "hog[^"]*"\|"share": [0-9.]*' /tmp/$b.json | tr '\n' ' '; echo
  grep -o 'sched_ext dispatch[^"]*' /tmp/$b.json
  cat /tmp/$b.err
done
echo "BPF programs, at 1 s and 4 s of the run:"
grep -A1 'struct_ops' /tmp/p0 | grep -o 'name [a-z_]*\|run_time_ns [0-9]*\|run_cnt [0-9]*' | tr '\n' ' '; echo
grep -A1 'struct_ops' /tmp/p1 | grep -o 'name [a-z_]*\|run_time_ns [0-9]*\|run_cnt [0-9]*' | tr '\n' ' '; echo
for e in live-sim-shares live-hls-table5 live-vassal-table2; do
  hsched repro --live --backend scx $e 2>&1
done
"#;
    let out = Guest::new()
        .binary_at(HSCHED, "/bin/hsched")
        .binary_at(&bpftool, "/bin/bpftool")
        .file("/s/rr.toml", scenario.as_bytes().to_vec())
        .script(script)
        .run(Duration::from_secs(1500))
        .unwrap_or_else(|e| panic!("{e}"));
    println!("{}\n{}", out.stdout, out.stderr);
}
