//! hsched's instrumented worker (see `hsched_live::worker`): executes one
//! scenario thread's workload program on a real CPU for `hsched live`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(hsched_live::worker::main_with_args(&args));
}
