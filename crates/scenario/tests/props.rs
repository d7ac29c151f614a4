//! Bad input never panics: arbitrary text, TOML-shaped noise, and random
//! mutations of valid scenarios all give a scenario or a clean error whose
//! place is inside the text and which renders.

mod common;

use proptest::prelude::*;

/// A program with the operations no shipped scenario uses, one key to a
/// line so that line mutations reach each of their keys.
const OPS_SEED: &str = r#"
name = "ops"
horizon = "1s"
default = "ts"

[[scheduler]]
name = "ts"
policy = "rr"

[[thread]]
name = "c"

[[thread.program]]
[thread.program.constraints]
immediate = "0.5"
start = ["0s", "1s"]
window = { uniform = ["1ms", "1s"] }
work = ["0.5", "1"]
gap = "1ms"
count = 5

[[thread.program]]
[thread.program.loop]
body = [ { constraints = { immediate = "1", work = ["1.5", "2"] } }, { fault = "1ms" } ]
"#;

/// The seed is itself valid, so its mutations start from a scenario.
#[test]
fn the_ops_seed_parses() {
    for r in [
        common::parse(OPS_SEED).map(|_| ()),
        hsched_scenario::parse(OPS_SEED, "ops.toml").map(|_| ()),
    ] {
        if let Err(e) = r {
            panic!("{e}");
        }
    }
}

/// Every shipped scenario (any depth under `scenarios/`) plus the test
/// base and `OPS_SEED`: the seeds for mutation.
fn seeds() -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
        &mut paths,
    );
    paths.sort();
    let mut out = vec![common::BASE.to_string(), OPS_SEED.to_string()];
    out.extend(
        paths
            .into_iter()
            .filter_map(|p| std::fs::read_to_string(p).ok()),
    );
    out
}

/// Values that probe the edges: zero, negative, huge, wrong type, names
/// that exist and names that do not.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "4097",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "nan",
    "true",
    "false",
    "\"\"",
    "\"0ms\"",
    "\"1ns\"",
    "\"18446744073709551615ns\"",
    "\"99999999999999s\"",
    "\"1.0000000001s\"",
    "\"5 parsecs\"",
    "\"off\"",
    "\"parent\"",
    "\"root\"",
    "\"ts\"",
    "\"x\"",
    "\"a\"",
    "\"rr\"",
    "\"fp\"",
    "\"join\"",
    "\"limit\"",
    "\"fifo\"",
    "[]",
    "{}",
    "[\"1ms\"]",
    "[\"2ms\", \"1ms\"]",
    "{ uniform = [\"2ms\", \"1ms\"] }",
    "{ exponential = \"0ms\" }",
    "{ normal = \"1ms\", sd = \"1ms\", max = \"0ms\" }",
    "[ { run = \"1ms\" } ]",
    "[ { loop = { body = [ { yield = true } ] } } ]",
    "[\"0.5\", \"1\"]",
    "\"0.5\"",
    "[ { constraints = {} } ]",
    "{ prio = 1 }",
    "{ prio = -5 }",
    "[ \"root\", \"root\" ]",
    "[ { parent = \"ts\" } ]",
    "1979-05-27T07:32:00Z",
];

/// TOML-ish tokens for noise that gets past the lexer more often than
/// arbitrary text.
const TOKENS: &[&str] = &[
    "\n",
    " ",
    "=",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    ",",
    "\"",
    "#",
    ".",
    "name",
    "policy",
    "parent",
    "parents",
    "at",
    "vps",
    "horizon",
    "machine",
    "cpus",
    "scheduler",
    "thread",
    "program",
    "script",
    "run",
    "sleep",
    "loop",
    "periodic",
    "randres",
    "constraints",
    "immediate",
    "window",
    "work",
    "gap",
    "count",
    "body",
    "load",
    "unload",
    "move",
    "msg",
    "default",
    "\"1s\"",
    "\"root\"",
    "\"rr\"",
    "\"fp\"",
    "1",
    "0",
    "-1",
    "true",
];

/// Applies one mutation, chosen and placed by `pick`, to `text`.
fn mutate(text: &str, kind: u8, pick: usize, pick2: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return text.to_string();
    }
    let n = lines.len();
    let (i, j) = (pick % n, pick2 % n);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    match kind % 6 {
        // Replace the value of a `key = value` line.
        0 => {
            if let Some(eq) = out[i].find(" = ") {
                let v = VALUES[pick2 % VALUES.len()];
                out[i] = format!("{}{v}", &out[i][..eq + 3]);
            }
        }
        // Delete a line.
        1 => {
            out.remove(i);
        }
        // Duplicate a line elsewhere.
        2 => {
            let l = out[i].clone();
            out.insert(j, l);
        }
        // Swap two lines.
        3 => out.swap(i, j),
        // Insert a token inside a line, at a char boundary.
        4 => {
            let l = &out[i];
            let cut = l
                .char_indices()
                .map(|(k, _)| k)
                .nth(pick2 % (l.chars().count() + 1))
                .unwrap_or(l.len());
            out[i] = format!("{}{}{}", &l[..cut], TOKENS[pick % TOKENS.len()], &l[cut..]);
        }
        // Cut a line short.
        _ => {
            let l = &out[i];
            let cut = l
                .char_indices()
                .map(|(k, _)| k)
                .nth(pick2 % (l.chars().count() + 1))
                .unwrap_or(l.len());
            out[i] = l[..cut].to_string();
        }
    }
    out.join("\n")
}

/// Parses with both registries; any error must be well formed.
fn check(text: &str) -> Result<(), TestCaseError> {
    let results = [
        common::parse(text).map(|_| ()),
        hsched_scenario::parse(text, "p.toml").map(|_| ()),
    ];
    for r in results {
        if let Err(e) = r {
            let lines = text.split('\n').count();
            prop_assert!(
                e.line() >= 1 && e.line() <= lines,
                "line {} of {lines}: {e}",
                e.line()
            );
            prop_assert!(e.column() >= 1);
            prop_assert!(!e.message().is_empty());
            let one = e.to_string();
            prop_assert!(!one.contains('\n') || e.message().contains('\n'), "{one}");
            let mut s = String::new();
            let rendered = miette::GraphicalReportHandler::new_themed(
                miette::GraphicalTheme::unicode_nocolor(),
            )
            .render_report(&mut s, &e);
            prop_assert!(rendered.is_ok(), "render failed for {one}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text(text in "\\PC{0,300}") {
        check(&text)?;
    }

    #[test]
    fn toml_shaped_noise(toks in prop::collection::vec(0..TOKENS.len(), 0..80)) {
        let text: String = toks.into_iter().map(|i| TOKENS[i]).collect();
        check(&text)?;
    }

    #[test]
    fn mutated_scenarios(
        seed in 0usize..64,
        steps in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..6),
    ) {
        let seeds = seeds();
        let mut text = seeds[seed % seeds.len()].clone();
        for (kind, a, b) in steps {
            text = mutate(&text, kind, a, b);
        }
        check(&text)?;
    }

    /// (A full sweep of every value in every line of every seed, about
    /// 7,000 parses, passed when this was written; sampling keeps the suite
    /// quick in debug builds.)
    #[test]
    fn every_value_in_every_place(seed in 0usize..64, line in any::<usize>(), value in 0..VALUES.len()) {
        let seeds = seeds();
        let text = mutate(&seeds[seed % seeds.len()], 0, line, value);
        check(&text)?;
    }
}
