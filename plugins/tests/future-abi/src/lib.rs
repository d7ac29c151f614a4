//! A library that claims the next plugin ABI version: `hsched` must refuse
//! it with a message naming the file and both versions, reading nothing
//! but the version.

use hsched_plugin::abi::{PluginTable, StaticStr};

static TABLE: PluginTable = PluginTable {
    abi_version: hsched_plugin::ABI_VERSION + 1,
    policy_count: 0,
    policies: std::ptr::null(),
    sdk_version: StaticStr::new("from the future"),
};

/// The plugin entry, with a table from a future ABI.
#[unsafe(no_mangle)]
pub extern "C" fn hsched_plugin_entry() -> *const PluginTable {
    &TABLE
}
