//! The `hsched` command line: `sim`, `check`, `policies`, `repro`, `bench`.
//!
//! Exit codes: 0 success; 1 a run or a reproduction failed; 2 bad input
//! (scenario, arguments), with a message naming the file, key or line.

pub mod bench;
pub mod repro;

use clap::{Parser, Subcommand};
use hsched_core::Duration;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "hsched",
    version,
    about = "Hierarchical, loadable CPU scheduling: simulate, check and reproduce"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a scenario in the deterministic simulator and print a summary.
    Sim(SimArgs),
    /// Check a scenario file and print its hierarchy (nothing runs).
    Check {
        /// Scenario file (TOML).
        file: PathBuf,
    },
    /// List the registered policies with their parameters and documentation.
    Policies {
        /// Show one policy only.
        name: Option<String>,
    },
    /// Run paper reproductions: each prints paper value, measured value, tolerance and verdict.
    Repro {
        /// Entry to run (see --list).
        name: Option<String>,
        /// List the entries.
        #[arg(long)]
        list: bool,
        /// Run every entry; exits 1 if any verdict fails.
        #[arg(long)]
        all: bool,
    },
    /// Measure simulator throughput and decision cost per hierarchy level.
    Bench {
        /// Shorter runs (less precise), for a quick look.
        #[arg(long)]
        quick: bool,
    },
}

#[derive(clap::Args, Debug)]
struct SimArgs {
    /// Scenario file (TOML).
    file: PathBuf,
    /// Override the scenario's horizon (e.g. 10s, 500ms).
    #[arg(long, value_parser = parse_duration)]
    horizon: Option<Duration>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Print metrics as JSON (stable keys) instead of the summary; with a
    /// path, write them there.
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one CSV row per job to FILE.
    #[arg(long, value_name = "FILE")]
    jobs_csv: Option<PathBuf>,
    /// Write the timeline as Chrome/Perfetto trace JSON to FILE.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Check every policy's invariants after every callback (slower).
    #[arg(long)]
    check: bool,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    Duration::parse(s)
}

/// A failure of the command line: bad input (exit 2) or a failed run (exit 1).
#[derive(Debug)]
pub enum CliError {
    Input(String),
    Failed(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(m) | CliError::Failed(m) => f.write_str(m),
        }
    }
}

/// Runs the command line; returns the exit code.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(CliError::Input(m)) => {
            eprintln!("error: {m}");
            2
        }
        Err(CliError::Failed(m)) => {
            eprintln!("{m}");
            1
        }
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.cmd {
        Cmd::Sim(args) => sim(args),
        Cmd::Check { file } => check(&file),
        Cmd::Policies { name } => policies(name.as_deref()),
        Cmd::Repro { name, list, all } => repro::command(name.as_deref(), list, all),
        Cmd::Bench { quick } => bench::command(quick),
    }
}

/// Loads a scenario, rendering a parse error with its source snippet.
pub fn load_scenario(path: &Path) -> Result<hsched_model::Scenario, CliError> {
    hsched_scenario::load(path).map_err(|e| {
        let report = miette::Report::new(e);
        CliError::Input(format!("{report:?}"))
    })
}

fn write_file(
    path: &Path,
    what: &str,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), CliError> {
    let out = |e: std::io::Error| {
        CliError::Input(format!("cannot write {what} to {}: {e}", path.display()))
    };
    if path == Path::new("-") {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        return write(&mut lock).map_err(out);
    }
    let file = std::fs::File::create(path).map_err(out)?;
    let mut w = std::io::BufWriter::new(file);
    write(&mut w).map_err(out)?;
    std::io::Write::flush(&mut w).map_err(out)
}

fn sim(args: SimArgs) -> Result<(), CliError> {
    let scn = load_scenario(&args.file)?;
    let opts = hsched_sim::SimOptions {
        horizon: args.horizon,
        seed: args.seed,
        trace: args.trace.is_some(),
        check_invariants: args.check,
    };
    let result = hsched_sim::run(&scn, &opts)
        .map_err(|e| CliError::Input(format!("{}: {e}", args.file.display())))?;
    if let Some(path) = &args.jobs_csv {
        write_file(path, "the jobs CSV", |w| {
            hsched_report::jobs_csv(&result, w).map_err(|e| std::io::Error::other(e.to_string()))
        })?;
    }
    if let Some(path) = &args.trace {
        write_file(path, "the trace", |w| {
            hsched_report::perfetto_trace(&result, w)
                .map_err(|e| std::io::Error::other(e.to_string()))
        })?;
    }
    match &args.json {
        Some(path) => write_file(path, "the metrics", |w| {
            w.write_all(hsched_report::metrics_json(&result).as_bytes())?;
            w.write_all(b"\n")
        })?,
        None => print!("{}", hsched_report::summary(&result)),
    }
    Ok(())
}

fn check(file: &Path) -> Result<(), CliError> {
    let scn = load_scenario(file)?;
    println!(
        "{}: ok — {} CPU(s), horizon {}, seed {}",
        file.display(),
        scn.machine.cpus,
        scn.horizon,
        scn.seed
    );
    println!("hierarchy (default scheduler: {}):", scn.default_scheduler);
    let roots: Vec<&hsched_model::SchedulerSpec> = scn
        .schedulers
        .iter()
        .filter(|s| s.parents.is_empty())
        .collect();
    for root in roots {
        print_tree(&scn, &root.name, "", 0);
    }
    Ok(())
}

fn print_tree(scn: &hsched_model::Scenario, name: &str, at: &str, depth: usize) {
    let indent = "  ".repeat(depth + 1);
    let spec = scn.schedulers.iter().find(|s| s.name == name).unwrap();
    let params = if spec.params.is_empty() {
        String::new()
    } else {
        format!(" [{}]", spec.params)
    };
    println!("{indent}{name}: {}{params}{at}", spec.policy);
    // A `bvt` node gets its §6 configuration read back (shares, V, W,
    // warps, admission problems) between its line and its children.
    if let Some(report) = hsched_analysis::bvt_report(scn, name) {
        for line in report.lines() {
            println!("{indent}  {line}");
        }
    }
    for child in scn.schedulers.iter() {
        for link in child.parents.iter().filter(|l| l.parent == name) {
            let at = if link.params.is_empty() {
                String::new()
            } else {
                format!(" @ {}", link.params)
            };
            let vps = if link.vps > 1 {
                format!(" ×{} VPs", link.vps)
            } else {
                String::new()
            };
            print_tree(scn, &child.name, &format!("{at}{vps}"), depth + 1);
        }
    }
    for t in scn.threads.iter().filter(|t| t.parent == name) {
        let at = if t.params.is_empty() {
            String::new()
        } else {
            format!(" @ {}", t.params)
        };
        println!("{indent}  thread {}{at}", t.name);
    }
}

fn policies(name: Option<&str>) -> Result<(), CliError> {
    let reg = hsched_policies::registry();
    let list: Vec<_> = match name {
        Some(n) => vec![hsched_policies::find(n).ok_or_else(|| {
            let known: Vec<&str> = reg.iter().map(|p| p.name).collect();
            CliError::Input(format!(
                "unknown policy `{n}` (known: {})",
                known.join(", ")
            ))
        })?],
        None => reg.iter().collect(),
    };
    for info in list {
        println!("{} — {}", info.name, info.summary);
        for line in info.doc.lines() {
            println!("    {line}");
        }
        let show = |title: &str, specs: Vec<hsched_core::ParamSpec>| {
            if specs.is_empty() {
                return;
            }
            println!("  {title}:");
            for p in specs {
                let default = p
                    .default
                    .as_ref()
                    .map(|d| format!(" (default {d})"))
                    .unwrap_or_else(|| " (required)".into());
                println!("    {:<12} {}{default}: {}", p.name, p.kind, p.doc);
            }
        };
        show("parameters", (info.params)());
        show(
            "child parameters (set on each child's attachment)",
            (info.child_params)(),
        );
        let parents = if info.max_parents > 1 {
            format!("up to {} parents", info.max_parents)
        } else {
            "one parent".into()
        };
        let children = if info.max_children == u32::MAX {
            "any number of children".into()
        } else {
            format!("at most {} child(ren)", info.max_children)
        };
        println!("  shape: {parents}, {children}");
        println!();
    }
    Ok(())
}
