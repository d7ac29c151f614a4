//! An open plugin library: where it came from, its table, its ABI check,
//! and the policies' descriptions read from it; one handle per open file.

use crate::error::{LoadError, LoadErrorKind};
use hsched_plugin::abi::{
    EntryFn, PluginTable, PolicyVTable, Sink, Status, ABI_VERSION, ENTRY_SYMBOL,
};
use hsched_plugin::wire::PolicyDesc;
use std::fmt;
use std::path::PathBuf;
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
    pub(crate) fn count(&self) -> u32 {
        unsafe { (*self.table).policy_count }
    }

    pub(crate) fn vtable(&self, index: u32) -> *const PolicyVTable {
        debug_assert!(index < self.count());
        unsafe { (*self.table).policies.add(index as usize) }
    }

    pub(crate) fn sdk_version(&self) -> String {
        unsafe { (*self.table).sdk_version.to_string_lossy() }
    }

    /// Policy `index`'s own description.
    pub(crate) fn describe(&self, index: u32) -> Result<PolicyDesc, LoadError> {
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

    pub(crate) fn invalid(&self, why: String) -> LoadError {
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

impl fmt::Debug for Loaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}
