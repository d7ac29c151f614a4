//! hsched-plugin-host: loads scheduling policies from plugin libraries at
//! run time, as Vassal loads scheduler drivers (Candea & Jones, §3-§4:
//! `RegisterScheduler` / `UnregisterScheduler`), and hands them to the
//! dispatcher as ordinary policies.
//!
//! [`Plugin::load`] opens a C-ABI dynamic library built with
//! `hsched-plugin` (`docs/plugins.md`), checks its ABI version before
//! reading anything else, reads each policy's description, and returns for
//! each a leaked `&'static PolicyInfo` that the dispatcher, the scenario
//! parser and the conformance suite use like a built-in one. Building an
//! instance through that `PolicyInfo` creates it in the library and wraps it
//! in a [`PluginScheduler`] (`Box<dyn Scheduler>`).
//!
//! # Lifetime of a library
//!
//! Every instance holds the library open (an `Arc`); so does the [`Plugin`]
//! handle. The library is closed when the handle and the last instance are
//! gone: a hierarchy that unloads a plugin's last instance while its threads
//! run (they return to the default scheduler) closes the library. Building
//! another instance later opens it again from the same file, checking the
//! ABI version and that the policy still describes itself the same way
//! (Vassal's "on-demand loading of schedulers").
//!
//! # Why the `PolicyInfo` can be `'static`
//!
//! `PolicyInfo` holds plain `fn` pointers (`params`, `child_params`,
//! `build`), which cannot capture which library they belong to. The host
//! keeps a table of [`MAX_POLICIES`] slots; slot `n`'s functions are
//! monomorphised on `n` and look their policy up there. A policy loaded
//! again from the same file reuses its slot, so what is leaked (the
//! descriptions' text and the `PolicyInfo`s) is bounded by the slot count.
//!
//! # Safety
//!
//! A plugin is trusted code running in the host's address space: loading a
//! library runs its initialisers, and a policy that corrupts memory, aborts
//! or loops forever takes the host with it. What the boundary does contain
//! is a panic (caught in the library, ejected here) and a protocol breach
//! (ejected by the dispatcher), as for built-in policies.

mod adapter;
pub mod cargo;
mod slots;

pub use adapter::{calls, PluginScheduler};
pub use slots::MAX_POLICIES;

use hsched_core::PolicyInfo;
use hsched_plugin::abi::{
    EntryFn, PluginTable, PolicyVTable, Sink, Status, ABI_VERSION, ENTRY_SYMBOL,
};
use hsched_plugin::wire::PolicyDesc;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// Where a library came from, so that it can be opened again.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// A library file (canonical path).
    File(PathBuf),
    /// An entry function linked into this program (tests, benchmarks).
    Entry(EntryFn),
}

impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Source::File(a), Source::File(b)) => a == b,
            (Source::Entry(a), Source::Entry(b)) => std::ptr::fn_addr_eq(*a, *b),
            _ => false,
        }
    }
}

/// An open library and its table.
pub(crate) struct Loaded {
    /// The path as the user gave it (or the in-process label), for messages.
    pub label: String,
    table: *const PluginTable,
    /// `None` for an in-process entry. Dropping it closes the library.
    _library: Option<libloading::Library>,
}

// The table is immutable static data of the library, and the library
// handle is thread-safe.
unsafe impl Send for Loaded {}
unsafe impl Sync for Loaded {}

impl Loaded {
    fn count(&self) -> u32 {
        unsafe { (*self.table).policy_count }
    }

    pub(crate) fn vtable(&self, index: u32) -> *const PolicyVTable {
        debug_assert!(index < self.count());
        unsafe { (*self.table).policies.add(index as usize) }
    }

    fn sdk_version(&self) -> String {
        unsafe { (*self.table).sdk_version.to_string_lossy() }
    }

    /// Policy `index`'s own description.
    fn describe(&self, index: u32) -> Result<PolicyDesc, LoadError> {
        let mut out = Vec::new();
        let status = unsafe {
            let vt = &*self.vtable(index);
            (vt.describe)(vt.policy, &mut Sink::to_vec(&mut out))
        };
        if status != Status::OK {
            return Err(self.invalid(format!(
                "policy #{index} could not describe itself ({status:?}): {}",
                String::from_utf8_lossy(&out)
            )));
        }
        let desc: PolicyDesc = postcard::from_bytes(&out).map_err(|e| {
            self.invalid(format!(
                "policy #{index}'s description does not decode: {e}"
            ))
        })?;
        check_desc(&desc).map_err(|e| self.invalid(format!("policy `{}`: {e}", desc.name)))?;
        Ok(desc)
    }

    fn invalid(&self, why: String) -> LoadError {
        LoadError {
            path: self.label.clone(),
            kind: LoadErrorKind::Invalid,
            message: why,
        }
    }
}

/// The libraries open now, one `Loaded` per source: opening a library that
/// is already open shares it, so "open while an instance exists" is about
/// one handle per file.
static OPEN: Mutex<Vec<(Source, Weak<Loaded>)>> = Mutex::new(Vec::new());

/// Opens a library (or calls an in-process entry) and checks its ABI; an
/// already open one is shared.
pub(crate) fn open(source: &Source, label: &str) -> Result<Arc<Loaded>, LoadError> {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|(_, w)| w.strong_count() > 0);
    if let Some(loaded) = open
        .iter()
        .find(|(s, _)| s == source)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(loaded);
    }
    let loaded = open_new(source, label)?;
    open.push((source.clone(), Arc::downgrade(&loaded)));
    Ok(loaded)
}

fn open_new(source: &Source, label: &str) -> Result<Arc<Loaded>, LoadError> {
    let err = |kind, message: String| LoadError {
        path: label.to_string(),
        kind,
        message,
    };
    let (library, entry) = match source {
        Source::File(path) => {
            let library = unsafe { libloading::Library::new(path) }
                .map_err(|e| err(LoadErrorKind::NotALibrary, format!("cannot load it: {e}")))?;
            let entry = unsafe {
                library
                    .get::<EntryFn>(ENTRY_SYMBOL.as_bytes())
                    .map(|sym| *sym)
                    .map_err(|_| {
                        err(
                            LoadErrorKind::NotAPlugin,
                            format!(
                                "not an hsched plugin: it exports no `{ENTRY_SYMBOL}` \
                                 (build it with hsched_plugin::export_policy!)"
                            ),
                        )
                    })?
            };
            (Some(library), entry)
        }
        Source::Entry(entry) => (None, *entry),
    };
    let table = unsafe { entry() };
    if table.is_null() {
        return Err(err(
            LoadErrorKind::Invalid,
            format!("`{ENTRY_SYMBOL}` returned no table"),
        ));
    }
    // The version is the first field of every ABI's table: read it alone.
    let version = unsafe { std::ptr::read(table as *const u32) };
    if version != ABI_VERSION {
        return Err(err(
            LoadErrorKind::AbiMismatch {
                found: version,
                expected: ABI_VERSION,
            },
            format!(
                "built for plugin ABI version {version}, but this hsched loads ABI version \
                 {ABI_VERSION}: rebuild it against hsched-plugin {}",
                env!("CARGO_PKG_VERSION")
            ),
        ));
    }
    let loaded = Loaded {
        label: label.to_string(),
        table,
        _library: library,
    };
    if loaded.count() == 0 || unsafe { (*table).policies.is_null() } {
        return Err(loaded.invalid("it exports no policy".into()));
    }
    Ok(Arc::new(loaded))
}

/// What a description must satisfy before the host relies on it.
fn check_desc(d: &PolicyDesc) -> Result<(), String> {
    let name_ok = !d.name.is_empty()
        && d.name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !name_ok {
        return Err("a policy name is letters, digits, `-` and `_`".into());
    }
    if d.max_parents == 0 || d.max_children == 0 {
        return Err("max_parents and max_children must be at least 1".into());
    }
    for (what, specs) in [
        ("parameter", &d.params),
        ("child parameter", &d.child_params),
    ] {
        for (i, s) in specs.iter().enumerate() {
            if specs[..i].iter().any(|o| o.name == s.name) {
                return Err(format!("{what} `{}` is declared twice", s.name));
            }
            if let Some(default) = &s.default {
                hsched_core::ParamSpec::new("default", s.kind.into(), "")
                    .check(&default.clone().into())
                    .map_err(|e| format!("{what} `{}`: {e}", s.name))?;
            }
        }
    }
    Ok(())
}

/// One policy a plugin provides.
#[derive(Clone)]
pub struct PluginPolicy {
    /// Use it like a built-in policy's (`Dispatcher::add_policy`, the
    /// scenario parser's registry, `hsched_sim::run_with_policies`).
    pub info: &'static PolicyInfo,
    /// Its row of HLS Table 1, if the plugin declares one.
    pub hls_rule: Option<String>,
}

/// A loaded plugin library: its policies, and a handle that keeps it open.
pub struct Plugin {
    loaded: Arc<Loaded>,
    policies: Vec<PluginPolicy>,
}

impl fmt::Debug for PluginPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginPolicy")
            .field("name", &self.info.name)
            .field("hls_rule", &self.hls_rule)
            .finish()
    }
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin")
            .field("label", &self.loaded.label)
            .field("policies", &self.policies)
            .finish()
    }
}

impl Plugin {
    /// Loads the plugin library at `path`. Errors name the path and say
    /// what is wrong: no such file, not a loadable library, not an hsched
    /// plugin, another ABI version (with both), an invalid description.
    pub fn load(path: impl AsRef<Path>) -> Result<Plugin, LoadError> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let canonical = std::fs::canonicalize(path).map_err(|e| LoadError {
            path: label.clone(),
            kind: LoadErrorKind::Missing,
            message: format!("cannot open it: {e}{}", build_hint(path)),
        })?;
        Self::from_source(Source::File(canonical), &label)
    }

    /// A plugin whose entry function is linked into this program, driven
    /// through the same ABI as a library (benchmarks, tests). `label` names
    /// it in messages.
    pub fn from_entry(label: &str, entry: EntryFn) -> Result<Plugin, LoadError> {
        Self::from_source(Source::Entry(entry), label)
    }

    fn from_source(source: Source, label: &str) -> Result<Plugin, LoadError> {
        let loaded = open(&source, label)?;
        let mut policies = Vec::new();
        for index in 0..loaded.count() {
            let desc = loaded.describe(index)?;
            if policies
                .iter()
                .any(|p: &PluginPolicy| p.info.name == desc.name)
            {
                return Err(loaded.invalid(format!("it exports `{}` twice", desc.name)));
            }
            let hls_rule = desc.hls_rule.clone();
            let info = slots::register(&source, index, desc, &loaded)?;
            policies.push(PluginPolicy { info, hls_rule });
        }
        Ok(Plugin { loaded, policies })
    }

    /// The path as given to [`Plugin::load`] (or the in-process label).
    pub fn label(&self) -> &str {
        &self.loaded.label
    }

    /// The policies it provides, in the library's order.
    pub fn policies(&self) -> &[PluginPolicy] {
        &self.policies
    }

    /// The `hsched-plugin` version the library was built with.
    pub fn sdk_version(&self) -> String {
        self.loaded.sdk_version()
    }

    /// Watches whether this load of the library is still open after the
    /// handle is dropped (it stays open while an instance exists).
    pub fn watch(&self) -> LibraryWatch {
        LibraryWatch(Arc::downgrade(&self.loaded))
    }
}

/// See [`Plugin::watch`].
#[derive(Clone, Debug)]
pub struct LibraryWatch(Weak<Loaded>);

impl fmt::Debug for Loaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

impl LibraryWatch {
    /// Whether the library is still open (the handle or an instance made
    /// from this load of it still exists).
    pub fn is_open(&self) -> bool {
        self.0.strong_count() > 0
    }
}

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
    /// The process has loaded [`MAX_POLICIES`] distinct plugin policies.
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
fn build_hint(path: &Path) -> String {
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
