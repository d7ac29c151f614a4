//! The C ABI between `hsched` and a plugin library, version [`ABI_VERSION`].
//!
//! Rust trait objects have no stable layout across compilers, so a policy
//! never crosses the library boundary as a `dyn Scheduler`. What crosses is
//! this: one exported function, [`ENTRY_SYMBOL`], returning a static
//! [`PluginTable`]; per policy a [`PolicyVTable`] of `extern "C"` functions;
//! and every structured value (parameters, messages, the context of a
//! callback and the effects it asked for) as bytes in the postcard encoding
//! of the types in [`crate::wire`].
//!
//! # Rules both sides keep
//!
//! - [`PluginTable::abi_version`] is the first field and never moves: a host
//!   reads it before anything else and refuses a library whose version is
//!   not its own. Any change to this module or to [`crate::wire`] (a field,
//!   a variant, their order, a status code) bumps [`ABI_VERSION`].
//! - No panic unwinds across the boundary: every plugin entry catches it and
//!   returns [`Status::PANICKED`] with the message.
//! - Each side frees only what it allocated. Bytes a plugin returns go
//!   through the host's [`Sink`], which copies them before the call returns;
//!   an instance is freed by `destroy`, in the plugin.
//! - Pointers into the library (the tables, the opaque `policy` and
//!   instance pointers) are valid while the library stays loaded; the host
//!   keeps it loaded while any instance made from it exists.

use std::ffi::c_void;

/// The version of this ABI. A host loads only libraries built with the same.
pub const ABI_VERSION: u32 = 1;

/// The one symbol a plugin library exports (an [`EntryFn`]).
pub const ENTRY_SYMBOL: &str = "hsched_plugin_entry";

/// The type of [`ENTRY_SYMBOL`]: returns the library's table (static data;
/// the function does nothing else and may be called any number of times).
pub type EntryFn = unsafe extern "C" fn() -> *const PluginTable;

/// What a plugin library offers.
#[repr(C)]
pub struct PluginTable {
    /// [`ABI_VERSION`] of the library. First field, at offset 0, forever.
    pub abi_version: u32,
    /// How many entries `policies` points to (at least one).
    pub policy_count: u32,
    pub policies: *const PolicyVTable,
    /// The `hsched-plugin` version the library was built with (UTF-8, for
    /// messages only).
    pub sdk_version: StaticStr,
}

// The table is immutable static data.
unsafe impl Sync for PluginTable {}

/// A UTF-8 string in static memory of the library.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct StaticStr {
    pub ptr: *const u8,
    pub len: usize,
}

impl StaticStr {
    pub const fn new(s: &'static str) -> Self {
        StaticStr {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// # Safety
    /// `self` must point to `len` readable bytes for the lifetime chosen.
    pub unsafe fn to_string_lossy(&self) -> String {
        if self.ptr.is_null() {
            return String::new();
        }
        // SAFETY: the caller promises `len` readable bytes at `ptr`.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// One policy of a plugin library: its description and how to make, drive
/// and destroy instances of it.
///
/// Every function returns a [`Status`] and writes its result (or the error
/// message) to `out`. `policy` is this table's opaque pointer, passed back.
#[repr(C)]
pub struct PolicyVTable {
    /// Opaque to the host; passed back to `describe` and `create`.
    pub policy: *const c_void,
    /// Writes the postcard encoding of [`crate::wire::PolicyDesc`].
    pub describe: unsafe extern "C" fn(policy: *const c_void, out: *mut Sink) -> Status,
    /// Builds an instance from parameters (postcard [`crate::wire::WParams`],
    /// already resolved by the host against the declared parameters). On
    /// [`Status::OK`] stores the instance in `*instance`; on
    /// [`Status::REFUSED`] writes the reason.
    pub create: unsafe extern "C" fn(
        policy: *const c_void,
        params: *const u8,
        params_len: usize,
        instance: *mut *mut c_void,
        out: *mut Sink,
    ) -> Status,
    /// Runs one callback: `request` is a postcard [`crate::wire::Request`];
    /// on [`Status::OK`] writes a postcard [`crate::wire::Response`].
    pub call: unsafe extern "C" fn(
        instance: *mut c_void,
        request: *const u8,
        request_len: usize,
        out: *mut Sink,
    ) -> Status,
    /// The policy's `check_invariants`: [`Status::OK`], or
    /// [`Status::REFUSED`] with what is broken.
    pub check_invariants: unsafe extern "C" fn(instance: *mut c_void, out: *mut Sink) -> Status,
    /// Frees an instance. Never fails (a panic in a destructor is swallowed).
    pub destroy: unsafe extern "C" fn(instance: *mut c_void),
}

unsafe impl Sync for PolicyVTable {}

/// Where a plugin writes the bytes it returns: the host's buffer and the
/// host function that appends to it. A plugin calls `write` at most once
/// per entry, just before returning.
#[repr(C)]
pub struct Sink {
    pub ctx: *mut c_void,
    pub write: unsafe extern "C" fn(ctx: *mut c_void, data: *const u8, len: usize),
}

impl Sink {
    /// A sink that appends to `buf` (the host's side).
    pub fn to_vec(buf: &mut Vec<u8>) -> Sink {
        unsafe extern "C" fn append(ctx: *mut c_void, data: *const u8, len: usize) {
            // SAFETY: `ctx` is the `Vec` this sink was made from, alive for
            // the entry being run, and the plugin passes `len` readable bytes.
            unsafe {
                let buf = &mut *(ctx as *mut Vec<u8>);
                if !data.is_null() && len > 0 {
                    buf.extend_from_slice(std::slice::from_raw_parts(data, len));
                }
            }
        }
        Sink {
            ctx: buf as *mut Vec<u8> as *mut c_void,
            write: append,
        }
    }

    /// Hands `data` to the host (the plugin's side).
    ///
    /// # Safety
    /// `sink` must be the pointer the host passed to the entry being run.
    pub unsafe fn put(sink: *mut Sink, data: &[u8]) {
        // SAFETY: the caller passes the host's live sink (or null).
        unsafe {
            if let Some(s) = sink.as_ref() {
                (s.write)(s.ctx, data.as_ptr(), data.len());
            }
        }
    }
}

/// The outcome of a plugin entry.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub u32);

impl Status {
    /// Done; the result (if any) is in the sink.
    pub const OK: Status = Status(0);
    /// The policy said no (a build error, a broken invariant); the reason,
    /// UTF-8, is in the sink.
    pub const REFUSED: Status = Status(1);
    /// The policy panicked; the panic message, UTF-8, is in the sink.
    pub const PANICKED: Status = Status(2);
    /// The plugin could not decode what the host sent (a host/plugin
    /// mismatch the version check did not catch); the error is in the sink.
    pub const BAD_REQUEST: Status = Status(3);
}
