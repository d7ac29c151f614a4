//! A dynamic library with no hsched plugin entry: `hsched` must refuse it,
//! naming the file.

/// Something to export, so that the library is not empty.
#[unsafe(no_mangle)]
pub extern "C" fn not_a_plugin_add(a: i32, b: i32) -> i32 {
    a.wrapping_add(b)
}
