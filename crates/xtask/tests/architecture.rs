//! docs/architecture.md's crate graph is the workspace's: its `crate-graph`
//! block lists, for every workspace crate, the workspace crates it depends
//! on (normal dependencies), exactly as `cargo metadata` reports them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The graph from `cargo metadata`.
fn metadata_graph() -> Graph {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("its JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("a name").to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(*d))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().expect("a name").to_string(), deps)
        })
        .collect()
}

/// The graph the document draws.
fn documented_graph(doc: &str) -> Graph {
    let block = doc
        .split("```text crate-graph\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md has a ```text crate-graph block");
    block
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (name, deps) = line
                .split_once("->")
                .unwrap_or_else(|| panic!("`{line}`: expected `crate -> dep, dep`"));
            let deps = deps
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_string)
                .collect();
            (name.trim().to_string(), deps)
        })
        .collect()
}

fn render(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(name, deps)| {
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            format!("{name} -> {}", deps.join(", "))
                .trim_end()
                .to_string()
                + "\n"
        })
        .collect()
}

#[test]
fn the_documented_crate_graph_is_cargo_metadata_s() {
    let doc =
        std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let real = metadata_graph();
    assert_eq!(
        render(&documented_graph(&doc)),
        render(&real),
        "docs/architecture.md's crate-graph block differs from cargo metadata; the real graph:\n{}",
        render(&real)
    );
}
