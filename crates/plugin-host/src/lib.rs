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
mod error;
mod library;
mod slots;

pub use adapter::{calls, PluginScheduler};
pub use error::{LoadError, LoadErrorKind};
pub use slots::MAX_POLICIES;

use error::build_hint;
use hsched_core::PolicyInfo;
use hsched_plugin::abi::EntryFn;
use library::{open, Loaded, Source};
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Weak};

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

impl LibraryWatch {
    /// Whether the library is still open (the handle or an instance made
    /// from this load of it still exists).
    pub fn is_open(&self) -> bool {
        self.0.strong_count() > 0
    }
}
