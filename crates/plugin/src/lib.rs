//! hsched-plugin: the published API a scheduling policy is written against
//! when it lives in its own crate, outside the hsched workspace, and is
//! loaded into `hsched` at run time as a plugin (a C-ABI dynamic library),
//! without rebuilding `hsched`: Vassal's loadable scheduler drivers
//! (Candea & Jones, "Vassal: Loadable Scheduler Support for Multi-Policy
//! Scheduling", §3-§4), in user space.
//!
//! # Writing a plugin
//!
//! A plugin policy is written exactly like a built-in one
//! (`docs/writing-a-policy.md`): a type implementing [`Scheduler`] and a
//! [`PolicyInfo`] that names it, declares its parameters and builds it.
//! Everything it needs is re-exported here. Then one line makes the crate a
//! plugin:
//!
//! ```text
//! hsched_plugin::export_policy!(INFO, hls_rule = "ALL -> NULL+");
//! ```
//!
//! and its `Cargo.toml` asks for a dynamic library:
//!
//! ```toml
//! [lib]
//! crate-type = ["cdylib", "rlib"]
//! ```
//!
//! `hsched sim --plugin target/debug/libmy_policy.so FILE` (or a scenario's
//! `plugins = [...]`) loads it; a hierarchy then names its policy like any
//! other. `docs/plugins.md` covers building, loading, unloading, the
//! trade-offs of the mechanism and its safety.
//!
//! # The ABI and its version
//!
//! The policy's Rust code never crosses the library boundary: the library
//! exports one C function, [`abi::ENTRY_SYMBOL`], whose table ([`abi`])
//! carries each callback as bytes ([`wire`]). This is plugin ABI
//! [`ABI_VERSION`]; `hsched` refuses a library built for another version,
//! naming the file and both versions. Within one ABI version, a plugin built
//! against any release of this crate loads into any `hsched` that speaks it.
//!
//! # What the boundary guarantees
//!
//! A panic in the policy is caught in the library and reported to the
//! dispatcher, which ejects the instance and returns its threads to the
//! default scheduler, exactly as for a built-in policy; so does a decision
//! that breaks the protocol. A plugin is trusted code in the host's address
//! space (as Vassal's drivers were in the kernel's): memory corruption, an
//! abort or an endless loop in it is not contained.

pub mod abi;
mod export;
pub mod wire;

pub use abi::ABI_VERSION;
pub use export::Export;
pub use hsched_core::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Effect, Instant, Msg, ParamKind, ParamSpec,
    Params, ParentVp, PolicyInfo, Reject, Reply, SchedId, Scheduler, Sender, ThreadId, TimerKey,
    Value, VpState,
};

/// The whole of `hsched-core`, for anything the list above does not name.
pub use hsched_core as core;

#[doc(hidden)]
pub mod __private {
    use crate::abi::{PluginTable, PolicyVTable};
    use crate::Export;

    /// A library's table and the entries it points to, built once.
    pub struct Table {
        _vtables: Vec<PolicyVTable>,
        table: PluginTable,
    }

    // Immutable once built; the raw pointers point into `_vtables` and into
    // static data.
    unsafe impl Send for Table {}
    unsafe impl Sync for Table {}

    impl Table {
        pub fn new(exports: &'static [Export]) -> Self {
            let vtables: Vec<PolicyVTable> = exports.iter().map(PolicyVTable::of).collect();
            // The Vec's buffer does not move when the Vec does.
            let table = PluginTable::with_policies(vtables.as_ptr(), vtables.len() as u32);
            Table {
                _vtables: vtables,
                table,
            }
        }
        pub fn as_ptr(&self) -> *const PluginTable {
            &self.table
        }
    }
}

/// Makes this crate a plugin exporting the given policies: defines the
/// library's entry symbol ([`abi::ENTRY_SYMBOL`]) and its table.
///
/// ```text
/// // One policy:
/// hsched_plugin::export_policy!(INFO);
/// // One policy with its HLS conversion rule (Table 1 notation):
/// hsched_plugin::export_policy!(INFO, hls_rule = "ALL -> NULL+");
/// // Several policies from one library:
/// hsched_plugin::export_policy!(exports: [
///     hsched_plugin::Export::new(&edf::INFO),
///     hsched_plugin::Export::new(&lottery::INFO).hls_rule("ALL -> NULL+"),
/// ]);
/// // An entry function under another name, not exported from the library
/// // (to drive a policy through the ABI in-process: tests, benchmarks):
/// hsched_plugin::export_policy!(entry = rr_entry, exports: [hsched_plugin::Export::new(&RR)]);
/// ```
///
/// A `PolicyInfo` named here must be a `static` or a `const` item.
#[macro_export]
macro_rules! export_policy {
    ($info:path) => {
        $crate::export_policy!(exports: [$crate::Export::new(&$info)]);
    };
    ($info:path, hls_rule = $rule:expr) => {
        $crate::export_policy!(exports: [$crate::Export::new(&$info).hls_rule($rule)]);
    };
    (exports: [$($export:expr),+ $(,)?]) => {
        /// The plugin's entry point (hsched plugin ABI); see `hsched_plugin::abi`.
        #[unsafe(no_mangle)]
        pub extern "C" fn hsched_plugin_entry() -> *const $crate::abi::PluginTable {
            $crate::export_policy!(@body [$($export),+])
        }
    };
    (entry = $name:ident, exports: [$($export:expr),+ $(,)?]) => {
        /// An hsched plugin entry (not exported from the library).
        pub extern "C" fn $name() -> *const $crate::abi::PluginTable {
            $crate::export_policy!(@body [$($export),+])
        }
    };
    (@body [$($export:expr),+]) => {{
        static EXPORTS: &[$crate::Export] = &[$($export),+];
        static TABLE: ::std::sync::OnceLock<$crate::__private::Table> =
            ::std::sync::OnceLock::new();
        TABLE
            .get_or_init(|| $crate::__private::Table::new(EXPORTS))
            .as_ptr()
    }};
}
