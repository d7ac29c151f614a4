//! The sweep spec reader: every mistake is an error naming the file, line
//! and key, and no text makes it (or the points of a spec it accepts)
//! panic.

use hsched_sweep::{parse, points, SpecError};
use proptest::prelude::*;

const BASE: &str = r#"
name = "base"
horizon = "100ms"
[[scheduler]]
name = "root"
policy = "fp"
[[thread]]
name = "video"
at = { prio = 3 }
program = [ { periodic = { period = "10ms", run = "${run}" } } ]
"#;

fn read(rel: &str) -> Result<(String, String), String> {
    match rel {
        "base.toml" => Ok(("base.toml".into(), BASE.into())),
        _ => Err(format!("cannot read `{rel}`: no such file")),
    }
}

fn parse_spec(text: &str) -> Result<hsched_sweep::Spec, SpecError> {
    parse(text, "s.toml", &read)
}

const GOOD: &str = r#"
seed = 3
replicates = 2
scenario = "base.toml"
metrics = ["schedulable", "threads[video].share"]
[grid]
run = ["1ms", "2ms"]
prio = { from = 1, to = 5, step = 2, set = "thread[0].at.prio" }
"#;

#[test]
fn a_good_spec_reads() {
    let spec = parse_spec(GOOD).unwrap();
    assert_eq!(points::count(&spec), 2 * 3 * 2);
    assert_eq!(spec.metrics.len(), 2);
    let values: Vec<String> = points::values_of(&spec, 5)
        .iter()
        .map(ToString::to_string)
        .collect();
    // A list of durations is durations, in integer nanoseconds.
    assert_eq!(values, ["1000000", "5"]);
}

#[test]
fn mistakes_name_the_line_and_key() {
    // (spec, line, key, part of the message)
    let cases: &[(&str, usize, &str, &str)] = &[
        ("seed = -1\nscenario = \"base.toml\"\n", 1, "seed", "integer >= 0"),
        ("scenario = \"base.toml\"\nreplicates = 0\n", 2, "replicates", ">= 1"),
        ("scenarios = \"base.toml\"\n", 1, "scenarios", "unknown key"),
        ("scenario = \"nope.toml\"\n", 1, "scenario", "cannot read `nope.toml`"),
        ("seed = 1\n", 1, "", "no scenario"),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = [\"1ms\"]\nx = { from = 1, to = 0, step = 1 }\n",
            4,
            "grid.x.to",
            "`to` >= `from`",
        ),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = { from = 0.1, to = 1, step = 0 }\n",
            3,
            "grid.run.step",
            "step > 0",
        ),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = { uniform = [1, 2] }\n",
            3,
            "grid.run.uniform",
            "[random]",
        ),
        (
            "scenario = \"base.toml\"\n[random]\nsamples = 3\nrun = { from = 1, to = 2, step = 1 }\n",
            4,
            "random.run.from",
            "[grid]",
        ),
        ("scenario = \"base.toml\"\n[random]\nrun = [1]\n", 2, "random", "samples"),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = [\"1ms\"]\nx = [1, 2]\n",
            4,
            "grid.x",
            "changes nothing",
        ),
        ("scenario = \"base.toml\"\n[grid]\nrn = [\"1ms\"]\n", 10, "", "`${run}` names no parameter"),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = [\"1ms\"]\np = { values = [1], set = \"thread[3].at.prio\" }\n",
            4,
            "grid.p.set",
            "has 1 entries, no [3]",
        ),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = [\"1ms\"]\np = { values = [1], set = \"thread[0].att.prio\" }\n",
            4,
            "grid.p.set",
            "no key `thread[0].att`",
        ),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = [\"1ms\"]\np = { values = [1], set = \"thread[0.at\" }\n",
            4,
            "grid.p.set",
            "expected `[index]`",
        ),
        (
            "scenario = \"base.toml\"\nmetrics = [\"schedulable\", \"global.wall_ns\"]\n[grid]\nrun = [\"1ms\"]\n",
            2,
            "metrics[1]",
            "wall-clock",
        ),
        (
            "scenario = \"base.toml\"\nmetrics = [\"threads[video].latency\"]\n[grid]\nrun = [\"1ms\"]\n",
            2,
            "metrics[0]",
            "no key `latency`",
        ),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = [\"1ms\"]\nseed = [1]\n",
            4,
            "grid.seed",
            "column of its own",
        ),
        (
            "[taskset]\ntasks = 4\nutilisation = \"${u}\"\nperiod = [\"10ms\"]\npolicy = \"fp\"\n",
            3,
            "taskset.utilisation",
            "names no parameter",
        ),
        (
            "[taskset]\ntasks = 4\nutilisation = 0.5\nperiod = { log_uniform = [\"1s\", \"10ms\"] }\npolicy = \"fp\"\n",
            4,
            "taskset.period.log_uniform",
            "low <= high",
        ),
        (
            "[taskset]\ntasks = 4\nutilisation = 0.5\nperiod = [\"10ms\"]\n",
            1,
            "taskset",
            "missing key `policy`",
        ),
        (
            "scenario = \"base.toml\"\n[grid]\nrun = [\"1ms\"]\n[taskset]\ntasks = 4\nutilisation = 0.5\nperiod = [\"10ms\"]\npolicy = \"fp\"\n",
            8,
            "taskset.policy",
            "parent",
        ),
        (
            "[taskset]\ntasks = 4\nutilisation = 0.5\nperiod = [\"10 parsecs\"]\npolicy = \"fp\"\n",
            4,
            "taskset.period[0]",
            "unknown unit",
        ),
        ("seed = 3\nseed = 4\n", 2, "", "invalid TOML"),
    ];
    for (text, line, key, says) in cases {
        let e = parse_spec(text).expect_err(text);
        // A placeholder is named where it is: in the base scenario.
        let file = if says.contains("${run}") {
            "base.toml"
        } else {
            "s.toml"
        };
        assert_eq!(e.file, file, "{text}\n=> {e}");
        assert_eq!(&e.key, key, "{text}\n=> {e}");
        assert_eq!(e.at.map(|a| a.0), Some(*line), "{text}\n=> {e}");
        assert!(e.message.contains(says), "{text}\n=> {e}");
        let shown = e.to_string();
        assert!(shown.starts_with(&format!("{}:{line}:", e.file)), "{shown}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,300}") {
        let _ = parse_spec(&text);
    }

    #[test]
    fn mutated_specs_never_panic_and_their_points_build(
        at in 0usize..1000,
        cut in 0usize..8,
        insert in prop::sample::select(vec![
            "", "\"", "[", "]", "{", "}", "=", ",", "\n", "-1", "0", "1e9", "${", "${run}",
            "[grid]", "[random]\nsamples = 2\n", "from = ", "step = 0", "uniform = [",
            "set = \"thread\"", "tasks = 0", "\"1e400\"", "99999999999999999999",
        ]),
        which in 0usize..2,
    ) {
        let good = [GOOD, TASKSET][which];
        let at = at % (good.len() + 1);
        let end = (at + cut).min(good.len());
        if !good.is_char_boundary(at) || !good.is_char_boundary(end) {
            return Ok(());
        }
        let text = format!("{}{insert}{}", &good[..at], &good[end..]);
        if let Ok(spec) = parse_spec(&text) {
            let count = points::count(&spec);
            for i in [0, count / 2, count.saturating_sub(1)] {
                if i < count {
                    let p = points::point(&spec, i);
                    let _ = hsched_sweep::run::scenario_text(&spec, &p);
                }
            }
        }
    }
}

const TASKSET: &str = r#"
seed = 1
replicates = 2
[grid]
u = { from = 0.5, to = 0.9, step = 0.2 }
n = [2, 4]
[taskset]
tasks = "${n}"
utilisation = "${u}"
period = { log_uniform = ["10ms", "1s"] }
granularity = "1ms"
deadline = [0.5, 1]
policy = "fp"
attach = { prio = "${task.dm}" }
"#;
