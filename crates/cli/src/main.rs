//! The `hsched` binary. See `hsched --help`.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if !hsched_cli::talks_to_peers(&args) {
        // A command whose reader goes away (`hsched policies | head -1`)
        // ends as Unix tools do, killed by SIGPIPE, instead of panicking
        // on the failed write (Rust ignores SIGPIPE by default).
        // SAFETY: restoring a signal's default disposition before any
        // thread starts has no memory-safety effect.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    std::process::exit(hsched_cli::main_with_args(args));
}
