//! A dynamic library whose constructor takes 3 s, and no hsched plugin
//! entry: a live run loading it (`hsched ctl plugin`) must go on
//! scheduling and answering meanwhile, then refuse it, naming the file.

/// Run by the loader when the library is opened, before `dlopen` returns.
#[used]
#[unsafe(link_section = ".init_array")]
static SLOW_START: extern "C" fn() = slow_start;

extern "C" fn slow_start() {
    std::thread::sleep(std::time::Duration::from_secs(3));
}

/// Something to export, so that the library is not empty.
#[unsafe(no_mangle)]
pub extern "C" fn slow_start_add(a: i32, b: i32) -> i32 {
    a.wrapping_add(b)
}
