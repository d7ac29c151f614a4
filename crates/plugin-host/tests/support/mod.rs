//! Building the plugin crates under `plugins/` once per test binary, with
//! cargo, into the target directory's scratch space (`CARGO_TARGET_TMPDIR`,
//! not the directory the running `cargo test` holds locked).

#![allow(dead_code)]

use hsched_core::PolicyInfo;
use hsched_plugin_host::{cargo, Plugin};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn build(dir: &str) -> Vec<PathBuf> {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugins");
    cargo::build(&repo().join(dir), &target).unwrap_or_else(|e| panic!("{e}"))
}

/// The example plugin, `plugins/example-edf`.
pub fn example_edf() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let libs = build("plugins/example-edf");
        cargo::find(&libs, "example-edf")
            .unwrap_or_else(|| panic!("no libexample_edf among {libs:?}"))
            .to_path_buf()
    })
}

/// One of the test plugins under `plugins/tests` (by crate name).
pub fn test_plugin(name: &str) -> PathBuf {
    static LIBS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    let libs = LIBS.get_or_init(|| build("plugins/tests"));
    cargo::find(libs, name)
        .unwrap_or_else(|| panic!("no {name} among {libs:?}"))
        .to_path_buf()
}

/// Loads a plugin that must load.
pub fn load(path: &Path) -> Plugin {
    Plugin::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// The built-in registry plus the plugin's policies, for the parser.
pub fn registry_with(plugin: &Plugin) -> Vec<PolicyInfo> {
    hsched_policies::registry()
        .iter()
        .copied()
        .chain(plugin.policies().iter().map(|p| *p.info))
        .collect()
}
