//! The top-level `plugins` key: a list of plugin library paths, read by
//! `hsched_scenario::plugins` before the full parse (which checks it too),
//! errors naming `plugins` or `plugins[i]`; any value never panics.

use proptest::prelude::*;

const BASE: &str = r#"
horizon = "1s"

[[scheduler]]
name = "ts"
policy = "rr"
"#;

fn with_plugins(value: &str) -> String {
    format!("plugins = {value}\n{BASE}")
}

#[test]
fn the_paths_come_back_as_written() {
    let text = with_plugins(r#"["target/debug/libedf.so", "/abs/libx.so"]"#);
    assert_eq!(
        hsched_scenario::plugins(&text, "s.toml").unwrap(),
        ["target/debug/libedf.so", "/abs/libx.so"]
    );
    // The full parse accepts the key (the caller has loaded the plugins).
    hsched_scenario::parse(&text, "s.toml").unwrap();
    assert!(hsched_scenario::plugins(BASE, "s.toml").unwrap().is_empty());
}

#[test]
fn a_wrong_value_is_named_by_its_key() {
    for (value, key, what) in [
        (
            r#""libedf.so""#,
            "plugins",
            "a list of plugin library paths",
        ),
        ("[3]", "plugins[0]", "a path to a plugin library"),
        (r#"["a.so", ""]"#, "plugins[1]", "an empty path"),
    ] {
        let text = with_plugins(value);
        for e in [
            hsched_scenario::plugins(&text, "s.toml").unwrap_err(),
            hsched_scenario::parse(&text, "s.toml").unwrap_err(),
        ] {
            assert_eq!(e.key(), key, "{e}");
            assert!(e.message().contains(what), "{e}");
            assert_eq!(e.line(), 1);
        }
    }
}

const VALUES: &[&str] = &[
    "[]",
    "3",
    "true",
    "\"x\"",
    "[\"\"]",
    "[\" \"]",
    "[1, \"a\"]",
    "[[\"a\"]]",
    "{ a = 1 }",
    "[\"a.so\", \"b.so\"]",
    "\"\"",
    "[{}]",
];

proptest! {
    #[test]
    fn any_value_gives_paths_or_a_clean_error(
        v in prop::collection::vec(0..VALUES.len(), 1..3),
        noise in "\\PC{0,40}",
    ) {
        let value = if v.len() == 1 {
            VALUES[v[0]].to_string()
        } else {
            format!("[{}]", v.iter().map(|&i| VALUES[i]).collect::<Vec<_>>().join(", "))
        };
        for text in [with_plugins(&value), format!("plugins = {value}{noise}\n{BASE}")] {
            let lines = text.split('\n').count();
            for r in [
                hsched_scenario::plugins(&text, "p.toml").map(|_| ()),
                hsched_scenario::parse(&text, "p.toml").map(|_| ()),
            ] {
                if let Err(e) = r {
                    prop_assert!(e.line() >= 1 && e.line() <= lines, "{e}");
                    prop_assert!(!e.message().is_empty());
                }
            }
        }
    }
}
