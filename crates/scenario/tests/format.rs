//! The format, key by key: what parses into what, and what is refused with
//! which message.

mod common;

use common::{parse, BASE};
use hsched_core::{Duration, Instant, Value};
use hsched_model::{Action, Dist, Op, Target};

/// Parses `text` expecting an error; returns its one-line form.
fn err(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn with(extra: &str) -> String {
    format!("{BASE}\n{extra}")
}

#[test]
fn base_parses() {
    let s = parse(BASE).unwrap();
    assert_eq!(s.name, "base");
    assert_eq!(s.horizon, Duration::from_secs(1));
    assert_eq!(s.seed, 7);
    assert_eq!(s.machine.cpus, 2);
    assert_eq!(s.machine.context_switch, Duration::from_micros(5));
    assert_eq!(s.machine.watchdog, Some(Duration::from_secs(30)));
    assert_eq!(s.default_scheduler, "ts");
    assert_eq!(s.schedulers.len(), 2);
    let ts = &s.schedulers[1];
    assert_eq!(
        ts.params.get("quantum"),
        Some(&Value::Duration(Duration::from_millis(2)))
    );
    assert_eq!(ts.parents.len(), 1);
    assert_eq!(ts.parents[0].parent, "root");
    // Default vps: as many as the parent holds (the root: one per CPU).
    assert_eq!(ts.parents[0].vps, 2);
    assert_eq!(ts.parents[0].params.get("prio"), Some(&Value::Int(1)));
    let a = &s.threads[0];
    assert_eq!(a.parent, "ts");
    assert_eq!(a.arrival, Instant::ZERO);
    assert!(matches!(a.program.ops[0], Op::Run(Dist::Fixed(d)) if d == Duration::from_millis(5)));
    assert!(matches!(
        a.program.ops[1],
        Op::Sleep(Dist::Exponential { mean, max }) if mean == Duration::from_millis(2) && max == Duration::from_millis(20)
    ));
}

/// A scenario with `schedulers` (TOML) and nothing else required.
fn h(schedulers: &str) -> String {
    format!("horizon = \"1s\"\n[machine]\ncpus = 4\n{schedulers}")
}

const JOIN: &str = r#"
[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "res"
policy = "limit"
budget = "3ms"
period = 10_000_000
parent = "root"
at = { prio = 2 }

[[scheduler]]
name = "ts"
policy = "rr"
parent = "root"
at = { prio = 1 }
vps = 1

[[scheduler]]
name = "j"
policy = "join"
parents = [ "res", { parent = "ts", vps = 1 } ]
"#;

#[test]
fn machine_defaults_and_switches() {
    let s = parse("horizon = 5_000\n[[scheduler]]\nname = \"r\"\npolicy = \"fifo\"\n").unwrap();
    assert_eq!(s.horizon, Duration(5_000), "integers are nanoseconds");
    assert_eq!(s.machine.cpus, 1);
    assert_eq!(s.machine.context_switch, Duration::ZERO);
    assert_eq!(s.machine.tick, None);
    assert_eq!(s.machine.watchdog, Some(Duration::from_secs(30)));
    assert_eq!(s.seed, 0);
    assert_eq!(s.name, "test", "the file stem");
    assert_eq!(s.default_scheduler, "r", "the root");
    assert!(s.threads.is_empty() && s.script.is_empty());

    let s = parse(
        &h("[[scheduler]]\nname = \"r\"\npolicy = \"fifo\"\n")
            .replace("cpus = 4", "cpus = 4\ntick = \"1ms\"\nwatchdog = \"off\""),
    )
    .unwrap();
    assert_eq!(s.machine.tick, Some(Duration::from_millis(1)));
    assert_eq!(s.machine.watchdog, None);
}

#[test]
fn name_defaults_to_the_file_stem() {
    let text = "horizon = \"1s\"\n[[scheduler]]\nname = \"r\"\npolicy = \"fifo\"\n";
    let s = hsched_scenario::parse_with_registry(text, "some/dir/desk.top.toml", &common::REGISTRY)
        .unwrap();
    assert_eq!(s.name, "desk.top");
}

#[test]
fn default_scheduler_resolution() {
    let base = "[[scheduler]]\nname = \"root\"\npolicy = \"fifo\"\n[[scheduler]]\nname = \"default\"\npolicy = \"rr\"\nparent = \"root\"\n[[scheduler]]\nname = \"x\"\npolicy = \"rr\"\nparent = \"root\"\n";
    assert_eq!(parse(&h(base)).unwrap().default_scheduler, "default");
    let s = parse(&format!("default = \"x\"\n{}", h(base))).unwrap();
    assert_eq!(s.default_scheduler, "x");
    let e = err(&format!("default = \"y\"\n{}", h(base)));
    assert!(
        e.contains("test.toml:1:11: default: no scheduler `y`"),
        "{e}"
    );
}

#[test]
fn default_scheduler_must_take_threads_without_parameters() {
    let e = err(&h("[[scheduler]]\nname = \"root\"\npolicy = \"fp\"\n"));
    assert!(
        e.contains("scheduler[0].name: the default scheduler `root` (fp) cannot take a thread without attachment parameters: missing parameter `prio`"),
        "{e}"
    );
}

#[test]
fn hierarchy_with_a_join() {
    let s = parse(&format!("default = \"ts\"\n{}", h(JOIN))).unwrap();
    let res = &s.schedulers[1];
    assert_eq!(
        res.params.get("budget"),
        Some(&Value::Duration(Duration::from_millis(3)))
    );
    assert_eq!(
        res.params.get("period"),
        Some(&Value::Duration(Duration::from_millis(10)))
    );
    assert_eq!(res.parents[0].vps, 4, "inherits the root's four VPs");
    let j = &s.schedulers[3];
    assert_eq!(j.parents.len(), 2);
    assert_eq!((j.parents[0].parent.as_str(), j.parents[0].vps), ("res", 4));
    assert_eq!(
        (j.parents[1].parent.as_str(), j.parents[1].vps),
        ("ts", 1),
        "ts holds one VP"
    );
}

#[test]
fn schedulers_may_be_written_before_their_parents() {
    let s = parse(&h("[[scheduler]]\nname = \"c\"\npolicy = \"rr\"\nparent = \"r\"\n[[scheduler]]\nname = \"r\"\npolicy = \"fifo\"\n")).unwrap();
    assert_eq!(s.schedulers[0].name, "c", "file order is kept");
    assert_eq!(s.schedulers[0].parents[0].vps, 4);
}

#[test]
fn params_table_and_plain_keys() {
    let s = parse(&h(
        "[[scheduler]]\nname = \"r\"\npolicy = \"rr\"\nparams = { quantum = \"3ms\" }\n",
    ))
    .unwrap();
    assert_eq!(
        s.schedulers[0].params.get("quantum"),
        Some(&Value::Duration(Duration::from_millis(3)))
    );
    let s = parse(&h("[[scheduler]]\nname = \"r\"\npolicy = \"rr\"\n")).unwrap();
    assert_eq!(
        s.schedulers[0].params.get("quantum"),
        Some(&Value::Duration(Duration::from_millis(10))),
        "defaults are filled in"
    );
    let e = err(&h("[[scheduler]]\nname = \"r\"\npolicy = \"rr\"\nquantum = \"1ms\"\nparams = { quantum = \"3ms\" }\n"));
    assert!(
        e.contains("scheduler[0].params.quantum: parameter `quantum` is given twice"),
        "{e}"
    );
}

#[test]
fn threads_count_arrival_and_parents() {
    let s = parse(&with(
        "[[thread]]\nname = \"w\"\ncount = 3\narrival = \"100ms\"\nparent = \"root\"\nat = { prio = 9 }\nprogram = [ { run = \"1s\" } ]\n\n[[thread]]\nname = \"none\"\ncount = 0\nprogram = [ { run = \"1s\" } ]\n",
    ))
    .unwrap();
    let names: Vec<&str> = s.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "w.0", "w.1", "w.2"]);
    assert_eq!(s.threads[1].arrival, Instant(100_000_000));
    assert_eq!(s.threads[2].parent, "root");
    assert_eq!(s.threads[3].params.get("prio"), Some(&Value::Int(9)));
}

#[test]
fn every_op() {
    let s = parse(&with(
        r#"[[thread]]
name = "b"
program = [
  { lock = "m" },
  { run = { uniform = ["1ms", "3ms"] } },
  { unlock = "m" },
  { yield = true },
  { msg = { name = "warp", args = { on = true, by = "2ms", level = 3, tag = "x" } } },
  { msg = { to = "root", name = "hello" } },
  { sleep = { normal = "5ms", sd = "1ms" } },
  { loop = { count = 2, body = [ { run = 100 } ] } },
  { periodic = { period = "10ms", run = "2ms" } },
  { periodic = { period = "10ms", deadline = "8ms", offset = "1ms", jobs = 5, body = [ { run = "1ms" }, { sleep = "1ms" } ] } },
  { loop = { body = [ { sleep = { exponential = "1ms" } } ] } },
]
"#,
    ))
    .unwrap();
    let ops = &s.threads[1].program.ops;
    assert!(matches!(&ops[0], Op::Lock(m) if m == "m"));
    assert!(
        matches!(&ops[1], Op::Run(Dist::Uniform { min, max }) if *min == Duration::from_millis(1) && *max == Duration::from_millis(3))
    );
    assert!(matches!(&ops[2], Op::Unlock(m) if m == "m"));
    assert!(matches!(&ops[3], Op::Yield));
    match &ops[4] {
        Op::Msg {
            to: Target::Parent,
            msg,
        } => {
            assert_eq!(msg.name, "warp");
            assert_eq!(msg.args.get("on"), Some(&Value::Bool(true)));
            assert_eq!(
                msg.args.get("by"),
                Some(&Value::Duration(Duration::from_millis(2)))
            );
            assert_eq!(msg.args.get("level"), Some(&Value::Int(3)));
            assert_eq!(msg.args.get("tag"), Some(&Value::Str("x".into())));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&ops[5], Op::Msg { to: Target::Named(n), msg } if n == "root" && msg.args.is_empty())
    );
    assert!(matches!(
        &ops[6],
        Op::Sleep(Dist::Normal { mean, sd, min, max })
            if *mean == Duration::from_millis(5) && *sd == Duration::from_millis(1) && *min == Duration::ZERO && *max == Duration::MAX
    ));
    assert!(
        matches!(&ops[7], Op::Loop { count: Some(2), body } if matches!(body[0], Op::Run(Dist::Fixed(Duration(100)))))
    );
    match &ops[8] {
        Op::Periodic {
            period,
            deadline,
            offset,
            jobs,
            body,
        } => {
            assert_eq!(
                (*period, *deadline, *offset, *jobs),
                (
                    Duration::from_millis(10),
                    Duration::from_millis(10),
                    Duration::ZERO,
                    None
                )
            );
            assert!(matches!(body[..], [Op::Run(Dist::Fixed(d))] if d == Duration::from_millis(2)));
        }
        other => panic!("{other:?}"),
    }
    match &ops[9] {
        Op::Periodic {
            deadline,
            offset,
            jobs,
            body,
            ..
        } => {
            assert_eq!(
                (*deadline, *offset, *jobs),
                (Duration::from_millis(8), Duration::from_millis(1), Some(5))
            );
            assert_eq!(body.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&ops[10], Op::Loop { count: None, body } if matches!(body[0], Op::Sleep(Dist::Exponential { max: Duration::MAX, .. })))
    );
}

#[test]
fn program_as_array_of_tables() {
    let s = parse(&with("[[thread]]\nname = \"b\"\n[[thread.program]]\nrun = \"1ms\"\n[[thread.program]]\nsleep = \"2ms\"\n")).unwrap();
    assert_eq!(s.threads[1].program.ops.len(), 2);
}

#[test]
fn script_in_time_order() {
    let s = parse(&with(
        r#"[[script]]
at = "300ms"
unload = "x"

[[script]]
at = "100ms"
load = { name = "x", policy = "rr", quantum = "1ms", parent = "root", at = { prio = 5 } }

[[script]]
at = "200ms"
move = { thread = "a", to = "x" }

[[script]]
at = "200ms"
msg = { to = "x", name = "poke", args = { n = 1 } }

[[script]]
at = "250ms"
detach = "x"

[[script]]
at = "260ms"
attach = { scheduler = "x", parent = "root", at = { prio = 6 }, vps = 1 }
"#,
    ))
    .unwrap();
    let times: Vec<u64> = s
        .script
        .iter()
        .map(|e| e.at.as_nanos() / 1_000_000)
        .collect();
    assert_eq!(times, [100, 200, 200, 250, 260, 300]);
    match &s.script[0].action {
        Action::Load(spec) => {
            assert_eq!(spec.name, "x");
            assert_eq!(spec.parents[0].params.get("prio"), Some(&Value::Int(5)));
            assert_eq!(spec.parents[0].vps, 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&s.script[1].action, Action::Move { thread, to, .. } if thread == "a" && to == "x")
    );
    assert!(
        matches!(&s.script[2].action, Action::Msg { to, msg } if to == "x" && msg.name == "poke")
    );
    assert!(matches!(&s.script[3].action, Action::Detach(x) if x == "x"));
    assert!(
        matches!(&s.script[4].action, Action::Attach { scheduler, parents } if scheduler == "x" && parents[0].vps == 1)
    );
    assert!(matches!(&s.script[5].action, Action::Unload(x) if x == "x"));
}

#[test]
fn a_thread_may_join_a_scheduler_loaded_before_it_arrives() {
    let load = "[[script]]\nat = \"100ms\"\nload = { name = \"x\", policy = \"rr\", parent = \"root\", at = { prio = 5 } }\n";
    let s = parse(&with(&format!("{load}[[thread]]\nname = \"late\"\nparent = \"x\"\narrival = \"150ms\"\nprogram = [ {{ run = \"1ms\" }} ]\n"))).unwrap();
    assert_eq!(s.threads[1].parent, "x");
    let e = err(&with(&format!("{load}[[thread]]\nname = \"late\"\nparent = \"x\"\narrival = \"100ms\"\nprogram = [ {{ run = \"1ms\" }} ]\n")));
    assert!(
        e.contains("thread[1].parent: `x` is loaded at t=100ms, the instant this thread arrives"),
        "{e}"
    );
    let e = err(&with(&format!(
        "{load}[[thread]]\nname = \"late\"\nparent = \"x\"\nprogram = [ {{ run = \"1ms\" }} ]\n"
    )));
    assert!(
        e.contains("thread[1].parent: no scheduler `x` exists at t=0ns"),
        "{e}"
    );
}

/// Each case: a change to a valid file, and what the one-line error must say.
#[test]
fn errors_name_the_key_and_the_expectation() {
    let cases: Vec<(String, &str)> = vec![
        (BASE.replace("horizon = \"1s\"", "horizn = \"1s\""), "test.toml:3:1: horizn: unknown key `horizn`; did you mean `horizon`?"),
        (BASE.replace("horizon = \"1s\"", ""), ": missing key `horizon`"),
        (BASE.replace("horizon = \"1s\"", "horizon = 0"), "horizon: expected a duration greater than zero"),
        (BASE.replace("horizon = \"1s\"", "horizon = 1.5"), "horizon: expected a duration: a string with a unit"),
        (BASE.replace("horizon = \"1s\"", "horizon = -3"), "horizon: -3 is negative"),
        (BASE.replace("horizon = \"1s\"", "horizon = \"1 fortnight\""), "horizon: `1 fortnight` has unknown unit"),
        (BASE.replace("seed = 7", "seed = -1"), "seed: -1 is out of range: expected an integer >= 0"),
        (BASE.replace("cpus = 2", "cpus = 0"), "machine.cpus: 0 is out of range: expected an integer in 1..=4096"),
        (BASE.replace("cpus = 2", "cpus = 5000"), "machine.cpus: 5000 is out of range"),
        (BASE.replace("cpus = 2", "cpu = 2"), "machine.cpu: unknown key `cpu`; did you mean `cpus`?"),
        (BASE.replace("context_switch = \"5us\"", "watchdog = \"never\""), "machine.watchdog: `never` has unknown unit"),
        (BASE.replace("policy = \"rr\"", "policy = \"rrr\""), "scheduler[1].policy: unknown policy `rrr`; did you mean `rr`?"),
        (BASE.replace("quantum = \"2ms\"", "quantun = \"2ms\""), "scheduler[1].quantun: policy `rr` has no parameter `quantun`; did you mean `quantum`?"),
        (BASE.replace("quantum = \"2ms\"", "quantum = true"), "scheduler[1].quantum: `quantum` = true: expected duration"),
        (BASE.replace("quantum = \"2ms\"", "quantum = 0.5"), "scheduler[1].quantum: expected a parameter value"),
        (BASE.replace("at = { prio = 1 }", "at = { prio = 300 }"), "scheduler[1].at.prio: `prio` = 300 is out of range: expected integer in 0..=255"),
        (BASE.replace("at = { prio = 1 }", ""), "scheduler[1].parent: a child of `root` (fp): missing parameter `prio`"),
        (BASE.replace("at = { prio = 1 }", "at = { prio = 1, weight = 2 }"), "scheduler[1].at.weight: a child of `root` (fp) has no parameter `weight`"),
        (BASE.replace("parent = \"root\"", "parent = \"rot\""), "scheduler[1].parent: no scheduler `rot`; did you mean `root`?"),
        (BASE.replace("parent = \"root\"", "parent = \"ts\""), "scheduler[1].parent: `ts` cannot be its own parent"),
        (BASE.replace("parent = \"root\"", "parent = \"root\"\nparents = [\"root\"]"), "scheduler[1].parents: give either `parent` (one parent) or `parents` (a list), not both"),
        (BASE.replace("parent = \"root\"\nat = { prio = 1 }", "parents = []"), "scheduler[1].parents: expected at least one parent"),
        (BASE.replace("parent = \"root\"", "parents = [\"root\"]"), "scheduler[1].at: with `parents`, `at` goes in each entry"),
        (BASE.replace("parent = \"root\"", "parent = \"root\"\nvps = 3"), "scheduler[1].vps: 3 is out of range: expected an integer in 1..=2"),
        (BASE.replace("name = \"ts\"", "name = \"root\""), "scheduler[1].name: scheduler name `root` is already used by scheduler[0]"),
        (BASE.replace("name = \"ts\"", "name = \"parent\""), "scheduler[1].name: `parent` is reserved"),
        (BASE.replace("name = \"ts\"", "name = \"\""), "scheduler[1].name: expected a scheduler name, found an empty string"),
        (BASE.replace("[[thread]]\nname = \"a\"", "[[thread]]\nname = \"a\"\nprio = 3"), "thread[0].prio: unknown key `prio`"),
        (BASE.replace("program = [", "progam = ["), "thread[0].progam: unknown key `progam`; did you mean `program`?"),
        (BASE.replace("program = [ { run = \"5ms\" }, { sleep = { exponential = \"2ms\", max = \"20ms\" } } ]", "program = []"), "thread[0].program: expected at least one operation"),
        (BASE.replace("{ run = \"5ms\" }", "{ rnu = \"5ms\" }"), "thread[0].program[0].rnu: unknown operation `rnu`; did you mean `run`?"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = \"5ms\", sleep = \"1ms\" }"), "thread[0].program[0]: an operation has exactly one key, found `run` and `sleep`"),
        (BASE.replace("{ run = \"5ms\" }", "{}"), "thread[0].program[0]: empty operation"),
        (BASE.replace("{ run = \"5ms\" }", "\"run 5ms\""), "thread[0].program[0]: expected an operation: a table with one key"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = \"5 parsecs\" }"), "thread[0].program[0].run: `5 parsecs` has unknown unit `parsecs`"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = true }"), "thread[0].program[0].run: expected a duration (\"5ms\", or integer nanoseconds) or a distribution table, found a boolean"),
        (BASE.replace("{ run = \"5ms\" }", "{ yield = false }"), "thread[0].program[0].yield: `yield = false` does nothing"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = { uniform = [\"3ms\", \"1ms\"] } }"), "thread[0].program[0].run.uniform[1]: max 1ms is below min 3ms"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = { uniform = [\"3ms\"] } }"), "thread[0].program[0].run.uniform: expected two durations [min, max]"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = { gauss = \"3ms\" } }"), "thread[0].program[0].run: unknown distribution `gauss`"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = { uniform = [\"1ms\", \"2ms\"], normal = \"3ms\" } }"), "a distribution has one kind, found `uniform` and `normal`"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = { normal = \"3ms\" } }"), "thread[0].program[0].run: missing key `sd`"),
        (BASE.replace("{ run = \"5ms\" }", "{ run = { normal = \"3ms\", sd = \"1ms\", min = \"4ms\" } }"), "thread[0].program[0].run.normal: `normal` = 3ms is below `min` = 4ms: expected min <= normal"),
        (BASE.replace("max = \"20ms\"", "max = \"1ms\""), "thread[0].program[1].sleep.max: `max` = 1ms is below `exponential` = 2ms"),
        (BASE.replace("max = \"20ms\"", "mx = \"1ms\""), "thread[0].program[1].sleep.mx: unknown key `mx`; did you mean `max`?"),
        (BASE.replace("{ run = \"5ms\" }", "{ loop = { body = [ { yield = true } ] } }"), "thread[0].program[0].loop.body: a loop without `count` repeats forever, so its body must take time"),
        (BASE.replace("{ run = \"5ms\" }", "{ loop = { body = [ { run = 0 } ] } }"), "so its body must take time"),
        (BASE.replace("{ run = \"5ms\" }", "{ loop = { body = [ { periodic = { period = \"5ms\", jobs = 1, body = [ { yield = true } ] } } ] } }"), "so its body must take time"),
        (BASE.replace("{ run = \"5ms\" }", "{ loop = { count = 3 } }"), "thread[0].program[0].loop: missing key `body`"),
        (BASE.replace("{ run = \"5ms\" }", "{ periodic = { run = \"1ms\" } }"), "thread[0].program[0].periodic: missing key `period`"),
        (BASE.replace("{ run = \"5ms\" }", "{ periodic = { period = \"0ms\", run = \"1ms\" } }"), "thread[0].program[0].periodic.period: expected a duration greater than zero"),
        (BASE.replace("{ run = \"5ms\" }", "{ periodic = { period = \"5ms\" } }"), "thread[0].program[0].periodic: missing key `body`"),
        (BASE.replace("{ run = \"5ms\" }", "{ periodic = { period = \"5ms\", run = \"1ms\", body = [ { run = \"1ms\" } ] } }"), "thread[0].program[0].periodic.run: give either `body` or `run`"),
        (BASE.replace("{ run = \"5ms\" }", "{ periodic = { period = \"5ms\", run = \"1ms\", jobs = -1 } }"), "thread[0].program[0].periodic.jobs: -1 is out of range"),
        (BASE.replace("{ run = \"5ms\" }", "{ unlock = \"m\" }"), "thread[0].program[0].unlock: thread `a` unlocks mutex `m` but never locks it"),
        (BASE.replace("{ run = \"5ms\" }", "{ lock = \"\" }"), "thread[0].program[0].lock: expected a mutex name, found an empty string"),
        (BASE.replace("{ run = \"5ms\" }", "{ msg = { to = \"tss\", name = \"x\" } }"), "thread[0].program[0].msg.to: no scheduler `tss`; did you mean `ts`?"),
        (BASE.replace("{ run = \"5ms\" }", "{ msg = { to = \"ts\" } }"), "thread[0].program[0].msg: missing key `name`"),
        (BASE.replace("{ run = \"5ms\" }", "{ msg = { name = \"x\", args = { f = 1.5 } } }"), "thread[0].program[0].msg.args.f: expected a parameter value"),
        (with("[[thread]]\nname = \"a\"\nprogram = [ { run = 1 } ]"), "thread[1].name: thread name `a` is used twice"),
        (with("[[thread]]\nname = \"w\"\ncount = 2\nprogram = [ { run = 1 } ]\n[[thread]]\nname = \"w.1\"\nprogram = [ { run = 1 } ]"), "thread[2].name: thread name `w.1` is used twice"),
        (with("[[thread]]\nname = \"b\"\ncount = 100001\nprogram = [ { run = 1 } ]"), "thread[1].count: too many threads: expected at most 100000"),
        (with("[[thread]]\nname = \"b\"\narrival = \"1s\"\nprogram = [ { run = 1 } ]"), "thread[1].arrival: arrival 1s is not before the horizon (1s)"),
        (with("[[thread]]\nname = \"b\"\nparent = \"nope\"\nprogram = [ { run = 1 } ]"), "thread[1].parent: no scheduler `nope` exists at t=0ns"),
        (with("[[thread]]\nname = \"b\"\nparent = \"root\"\nprogram = [ { run = 1 } ]"), "thread[1].parent: a child of `root` (fp): missing parameter `prio`"),
        (with("[[thread]]\nname = \"b\"\nparent = \"root\"\nat = { prio = \"high\" }\nprogram = [ { run = 1 } ]"), "thread[1].at.prio: `prio` = \"high\": expected integer in 0..=255"),
        (with("[[thread]]\nname = \"b\"\n"), "thread[1]: missing key `program`"),
        (with("[[script]]\nat = \"2s\"\nunload = \"ts\""), "script[0].at: 2s is not before the horizon (1s)"),
        (with("[[script]]\nat = \"1ms\""), "script[0]: missing the action"),
        (with("[[script]]\nat = \"1ms\"\nunload = \"ts\"\ndetach = \"ts\""), "script[0].detach: a [[script]] entry has one action, found `unload` and `detach`"),
        (with("[[script]]\nat = \"1ms\"\nunlaod = \"ts\""), "script[0].unlaod: unknown key `unlaod`; did you mean `unload`?"),
        (with("[[script]]\nat = \"1ms\"\nunload = \"ts\""), "script[0].unload: `ts` is the default scheduler and cannot be unloaded"),
        (with("[[script]]\nat = \"1ms\"\nunload = \"root\""), "script[0].unload: `root` is the root and cannot be unloaded"),
        (with("[[script]]\nat = \"1ms\"\nunload = \"zz\""), "script[0].unload: no scheduler `zz` exists at t=1ms"),
        (with("[[script]]\nat = \"1ms\"\nmove = { thread = \"b\", to = \"ts\" }"), "script[0].move.thread: no thread `b`; did you mean `a`?"),
        (with("[[script]]\nat = \"1ms\"\nmove = { thread = \"a\", to = \"root\" }"), "script[0].move.to: a child of `root` (fp): missing parameter `prio`"),
        (with("[[script]]\nat = \"0ms\"\nmove = { thread = \"a\", to = \"root\", at = { prio = 1 } }"), "script[0].move.thread: thread `a` arrives at t=0ns, not before this move at t=0ns"),
        (with("[[script]]\nat = \"1ms\"\nload = { name = \"ts\", policy = \"rr\", parent = \"root\", at = { prio = 2 } }"), "script[0].load.name: a scheduler `ts` already exists at t=1ms"),
        (with("[[script]]\nat = \"1ms\"\nload = { name = \"x\", policy = \"rr\" }"), "script[0].load.name: a loaded scheduler needs a `parent`"),
        (with("[[script]]\nat = \"1ms\"\nload = { name = \"x\", policy = \"rr\", parent = \"zz\" }"), "script[0].load.parent: no scheduler `zz`"),
        (with("[[script]]\nat = \"1ms\"\nattach = { scheduler = \"ts\", parent = \"root\", at = { prio = 2 } }"), "script[0].attach.scheduler: `ts` is attached (under root) at t=1ms: detach it first"),
        (with("[[script]]\nat = \"1ms\"\nattach = { scheduler = \"ts\" }"), "script[0].attach: missing key `parent` (or `parents`)"),
        (with("[[script]]\nat = \"1ms\"\ndetach = \"ts\"\n[[script]]\nat = \"2ms\"\ndetach = \"ts\""), "script[1].detach: `ts` is already detached at t=2ms"),
        (with("[[script]]\nat = \"1ms\"\nmsg = { to = \"zz\", name = \"x\" }"), "script[0].msg.to: no scheduler `zz` exists at t=1ms"),
        (with("[[script]]\nat = \"1ms\"\nmsg = { name = \"x\" }"), "script[0].msg: missing key `to`"),
        (BASE.replace("horizon = \"1s\"", "horizon = 1s"), "test.toml:3:12: invalid TOML"),
        (BASE.replace("[[scheduler]]\nname = \"root\"", "[scheduler]\nname = \"root\""), "invalid TOML"),
        ("horizon = \"1s\"\nscheduler = { name = \"r\", policy = \"fifo\" }".to_string(), "scheduler: expected [[scheduler]] tables, found a table"),
        ("horizon = \"1s\"\n".to_string(), "scheduler: expected at least one [[scheduler]]"),
        (h("[[scheduler]]\nname = \"a\"\npolicy = \"fifo\"\n[[scheduler]]\nname = \"b\"\npolicy = \"fifo\"\n"), "scheduler[1].name: `b` has no parent, but `a` is already the root"),
        (h("[[scheduler]]\nname = \"a\"\npolicy = \"fifo\"\nparent = \"b\"\n[[scheduler]]\nname = \"b\"\npolicy = \"fifo\"\nparent = \"a\"\n"), "scheduler[0].parent: the hierarchy has a cycle: a -> b -> a"),
        (h("[[scheduler]]\nname = \"r\"\npolicy = \"fifo\"\n[[scheduler]]\nname = \"a\"\npolicy = \"fifo\"\nparent = \"c\"\n[[scheduler]]\nname = \"b\"\npolicy = \"fifo\"\nparent = \"a\"\n[[scheduler]]\nname = \"c\"\npolicy = \"fifo\"\nparent = \"b\"\n"), "the hierarchy has a cycle: a -> c -> b -> a"),
        (h("[[scheduler]]\nname = \"r\"\npolicy = \"fifo\"\n[[scheduler]]\nname = \"x\"\npolicy = \"rr\"\nparents = [\"r\", \"r\"]\n"), "scheduler[1].parents[1]: parent `r` is named twice"),
        (format!("default = \"ts\"\n{}", h(&JOIN.replace("budget = \"3ms\"", "budget = \"30ms\""))), "scheduler[1]: scheduler `res`: policy `limit` refuses these parameters: budget 30ms exceeds period 10ms"),
        (h(&JOIN.replace("parents = [ \"res\", { parent = \"ts\", vps = 1 } ]", "parents = [ \"res\", { parent = \"ts\", vps = 1, prio = 3 } ]")), "scheduler[3].parents[1].prio: unknown key `prio`"),
        (format!("default = \"ts\"\n{}", h(&JOIN.replace("policy = \"join\"", "policy = \"rr\""))), "scheduler[3].parents: policy `rr` takes at most 1 parent, found 2"),
        (format!("default = \"ts\"\n{}\n[[scheduler]]\nname = \"k\"\npolicy = \"rr\"\nparent = \"res\"\n", h(JOIN)), "scheduler[4].parent: `res` (limit) takes at most 1 child, and already has scheduler `j`"),
        (format!("default = \"ts\"\n{}\n[[thread]]\nname = \"t1\"\nparent = \"j\"\nprogram = [ {{ run = 1 }} ]\n[[thread]]\nname = \"t2\"\nparent = \"j\"\nprogram = [ {{ run = 1 }} ]\n", h(JOIN)), "thread[1].parent: `j` (join) takes at most 1 child, and already has thread `t1`"),
    ];
    let mut failures = Vec::new();
    for (text, want) in &cases {
        match parse(text) {
            Ok(_) => failures.push(format!("no error; wanted `{want}` for:\n{text}")),
            Err(e) if !e.to_string().contains(want) => {
                failures.push(format!("got  `{e}`\nwant `{want}`"))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_misplaced_top_level_key_gets_a_hint() {
    let e = parse(
        &BASE
            .replace("default = \"ts\"\n", "")
            .replace("quantum = \"2ms\"", "quantum = \"2ms\"\ndefault = \"ts\""),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("scheduler[1].default: policy `rr` has no parameter `default`"),
        "{e}"
    );
    assert!(e.hint().unwrap().contains("top-level key"), "{e:?}");
}

#[test]
fn moving_a_replicated_thread_by_its_base_name_says_how_it_is_named() {
    let e = parse(&with("[[thread]]\nname = \"w\"\ncount = 3\nprogram = [ { run = 1 } ]\n[[script]]\nat = \"1ms\"\nmove = { thread = \"w\", to = \"ts\" }\n")).unwrap_err();
    assert!(
        e.hint()
            .unwrap()
            .contains("`w` has count = 3: its threads are w.0 .. w.2"),
        "{e:?}"
    );
}

#[test]
fn unloading_sends_threads_to_the_default_and_the_name_can_be_reused() {
    let s = parse(&with(
        r#"[[script]]
at = "1ms"
load = { name = "x", policy = "rr", parent = "root", at = { prio = 3 } }
[[script]]
at = "2ms"
move = { thread = "a", to = "x" }
[[script]]
at = "3ms"
unload = "x"
[[script]]
at = "4ms"
load = { name = "x", policy = "fifo", parent = "root", at = { prio = 3 } }
[[script]]
at = "5ms"
move = { thread = "a", to = "x" }
"#,
    ))
    .unwrap();
    assert_eq!(s.script.len(), 5);
}

#[test]
fn attach_may_not_make_a_cycle() {
    let e = err(&with(
        r#"[[script]]
at = "1ms"
load = { name = "x", policy = "rr", parent = "ts" }
[[script]]
at = "2ms"
detach = "ts"
[[script]]
at = "3ms"
attach = { scheduler = "ts", parent = "x" }
"#,
    ));
    assert!(
        e.contains("script[2].attach.parent: attaching `ts` under `x` would make a cycle"),
        "{e}"
    );
}

#[test]
fn load_reports_an_unreadable_file() {
    let e = hsched_scenario::load(std::path::Path::new("no/such/file.toml")).unwrap_err();
    assert_eq!(e.line(), 0);
    assert!(
        e.to_string()
            .starts_with("no/such/file.toml: cannot read the scenario"),
        "{e}"
    );
}

#[test]
fn a_bare_duration_gets_a_hint() {
    let e = parse(&BASE.replace("horizon = \"1s\"", "horizon = 1s")).unwrap_err();
    assert_eq!(
        e.hint(),
        Some("durations are strings in TOML: write \"1s\" (or integer nanoseconds)")
    );
}

/// Large inputs stay quick: no step is quadratic in schedulers or threads.
#[test]
fn scale() {
    let mut text = String::from(
        "horizon = \"1s\"\n[machine]\ncpus = 64\n[[scheduler]]\nname = \"s0\"\npolicy = \"rr\"\n",
    );
    for i in 1..1000 {
        text.push_str(&format!(
            "[[scheduler]]\nname = \"s{i}\"\npolicy = \"rr\"\nparent = \"s{}\"\n",
            i - 1
        ));
    }
    text.push_str("[[thread]]\nname = \"t\"\ncount = 100000\nparent = \"s999\"\nprogram = [ { run = \"1ms\" } ]\n");
    text.push_str("[[script]]\nat = \"1ms\"\nunload = \"s999\"\n");
    let t0 = std::time::Instant::now();
    let s = parse(&text).unwrap();
    assert_eq!(s.threads.len(), 100_000);
    assert_eq!(s.schedulers[999].parents[0].vps, 64);
    // Generous: a debug build on a shared machine.
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t0.elapsed()
    );
}

#[test]
fn the_error_travels_across_threads_and_into_reports() {
    fn send_sync<T: Send + Sync + 'static + std::error::Error + miette::Diagnostic>() {}
    send_sync::<hsched_scenario::ScenarioError>();
    let e = parse(&BASE.replace("seed = 7", "seed = \"x\"")).unwrap_err();
    assert_eq!(
        (e.file(), e.line(), e.column(), e.key()),
        ("test.toml", 4, 8, "seed")
    );
    assert_eq!(e.message(), "expected an integer >= 0, found a string");
    let report = format!("{:?}", miette::Report::new(e));
    assert!(report.contains("seed = \"x\""), "{report}");
}
