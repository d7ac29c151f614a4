//! The `hsched` binary. See `hsched --help`.

fn main() {
    std::process::exit(hsched_cli::main_with_args(std::env::args_os()));
}
