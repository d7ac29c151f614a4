//! Why a plugin could not be loaded, and how to build one that is missing.

use std::fmt;
use std::path::Path;

/// Why a plugin could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The path as given.
    pub path: String,
    pub kind: LoadErrorKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadErrorKind {
    /// No such file (or it cannot be read).
    Missing,
    /// The file is not a dynamic library the system can load.
    NotALibrary,
    /// A library without the plugin entry symbol.
    NotAPlugin,
    /// Built for another plugin ABI.
    AbiMismatch { found: u32, expected: u32 },
    /// The library's table or descriptions are not valid.
    Invalid,
    /// The process has loaded [`MAX_POLICIES`](crate::MAX_POLICIES) distinct plugin policies.
    TooMany,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "plugin `{}`: {}", self.path, self.message)
    }
}

impl std::error::Error for LoadError {}

/// How to make a plugin library that is not there: a path inside a crate's
/// `target/debug` or `target/release` names the crate to build; any other
/// path gets the general rule.
pub(crate) fn build_hint(path: &Path) -> String {
    let parts: Vec<_> = path.components().collect();
    let built = parts.windows(2).position(|w| {
        w[0].as_os_str() == "target"
            && (w[1].as_os_str() == "debug" || w[1].as_os_str() == "release")
    });
    match built {
        Some(at) => {
            let krate: std::path::PathBuf = parts[..at].iter().collect();
            let release = if parts[at + 1].as_os_str() == "release" {
                " --release"
            } else {
                ""
            };
            let manifest = krate.join("Cargo.toml");
            format!(
                " (build it: `cargo build{release} --manifest-path {}`; docs/plugins.md)",
                manifest.display()
            )
        }
        None => " (a plugin is the library `cargo build` makes from a crate built against \
                  hsched-plugin, under its target/debug or target/release; docs/plugins.md)"
            .to_string(),
    }
}
