//! The guardian process of `hsched live` (see `hsched_live::guardian`):
//! started by the agent, fed on standard input, restores every managed
//! thread when the agent is gone.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(hsched_live::guardian::main_with_args(&args));
}
