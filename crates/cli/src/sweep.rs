//! `hsched sweep SPEC`: a parameter sweep (crate `hsched-sweep`,
//! `docs/sweep.md`) with a progress bar, restart, shards and merging.

use crate::CliError;
use hsched_sweep::{Progress, Shard, SweepError};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// The sweep spec (TOML, docs/sweep.md). With --merge, optional: the
    /// merged files are then checked against it.
    spec: Option<PathBuf>,
    /// The CSV file to write or continue [default: the spec's name with
    /// `.csv`, in the current directory; with --shard k/N,
    /// NAME.shard-k-of-N.csv].
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Run only the points whose index is k-1 modulo N (a cluster job
    /// array's task k of N); merge the shard files with --merge.
    #[arg(long, value_name = "k/N", value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Worker threads [default: one per CPU].
    #[arg(long, short, value_name = "N")]
    jobs: Option<usize>,
    /// Run at most N points now; the same command later continues.
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// No progress bar and no summary table.
    #[arg(long, short)]
    quiet: bool,
    /// Print point N's scenario (TOML, as the simulator gets it) and exit.
    #[arg(long, value_name = "N", conflicts_with = "merge")]
    scenario: Option<u64>,
    /// Load a policy plugin (a library built with hsched-plugin); repeatable.
    #[arg(long = "plugin", value_name = "PATH")]
    plugins: Vec<PathBuf>,
    /// Merge these sweep CSV files (shards) into --out, sorted by point.
    #[arg(long, num_args = 1.., value_name = "CSV", requires = "out")]
    merge: Vec<PathBuf>,
}

fn sweep_error(e: SweepError) -> CliError {
    match e {
        SweepError::Input(m) => CliError::Input(m),
        SweepError::Failed(m) => CliError::Failed(m),
    }
}

fn load_spec(path: &Path) -> Result<hsched_sweep::Spec, CliError> {
    hsched_sweep::load(path).map_err(|e| CliError::Input(e.to_string()))
}

pub fn command(args: SweepArgs) -> Result<(), CliError> {
    if !args.merge.is_empty() {
        return merge(&args);
    }
    let Some(spec_path) = &args.spec else {
        return Err(CliError::Input(
            "hsched sweep: give a sweep spec (SPEC), or --merge CSV... --out FILE".into(),
        ));
    };
    let spec = load_spec(spec_path)?;
    let plugins = hsched_pipeline::plugins::load(&args.plugins)?;
    let count = hsched_sweep::points::count(&spec);
    if let Some(n) = args.scenario {
        if n >= count {
            return Err(CliError::Input(format!(
                "--scenario {n}: the sweep has {count} points (0..{count})"
            )));
        }
        let p = hsched_sweep::points::point(&spec, n);
        let (_, text) = hsched_sweep::run::scenario_text(&spec, &p).map_err(|e| {
            CliError::Input(format!(
                "{}: {e}",
                hsched_sweep::points::describe(&spec, &p)
            ))
        })?;
        println!("# {}", hsched_sweep::points::describe(&spec, &p));
        println!(
            "# the sweep runs it with its seed: hsched sim FILE --seed {}",
            p.seed
        );
        print!("{text}");
        return Ok(());
    }
    let shard = args.shard.unwrap_or(Shard::ALL);
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(if shard.is_all() {
            format!("{}.csv", spec.name)
        } else {
            format!("{}.shard-{}-of-{}.csv", spec.name, shard.k, shard.n)
        })
    });
    let mut opts = hsched_sweep::Options::new(&out);
    opts.shard = shard;
    if let Some(j) = args.jobs {
        if j == 0 {
            return Err(CliError::Input("--jobs 0: at least one worker".into()));
        }
        opts.threads = j;
    }
    opts.limit = args.limit;
    opts.registry = plugins.registry();
    opts.extra = plugins.infos();
    opts.rules = plugins.rule_book()?;

    let bar = Bar::new(args.quiet || !std::io::stderr().is_terminal());
    let outcome = hsched_sweep::run(&spec, &opts, &bar).map_err(sweep_error);
    bar.finish();
    let outcome = outcome?;
    drop(plugins);
    if args.quiet {
        return Ok(());
    }
    let shown = out.display();
    let of_shard = if shard.is_all() {
        String::new()
    } else {
        format!(" of shard {shard}")
    };
    eprintln!(
        "{shown}: {} of {} points{of_shard} ({} run now, {} there before)",
        outcome.done_before + outcome.ran,
        outcome.total,
        outcome.ran,
        outcome.done_before
    );
    if outcome.remaining > 0 {
        eprintln!(
            "{} points to go: run the same command again to continue",
            outcome.remaining
        );
    }
    let rows = hsched_sweep::csvfile::read(&out)
        .map_err(CliError::Failed)?
        .map(|e| e.rows)
        .unwrap_or_default();
    print!("{}", hsched_sweep::summary::summary(&spec, &rows));
    Ok(())
}

fn merge(args: &SweepArgs) -> Result<(), CliError> {
    let out = args
        .out
        .as_deref()
        .expect("clap requires --out with --merge");
    let spec = args.spec.as_deref().map(load_spec).transpose()?;
    let inputs: Vec<&Path> = args.merge.iter().map(PathBuf::as_path).collect();
    let merged =
        hsched_sweep::csvfile::merge(&inputs, out, spec.as_ref()).map_err(CliError::Input)?;
    if !args.quiet {
        eprintln!(
            "{}: {} rows from {} file(s)",
            out.display(),
            merged.rows,
            inputs.len()
        );
        if let Some(missing) = merged.missing.filter(|&m| m > 0) {
            eprintln!("{missing} points of the spec are in none of them");
        }
    }
    Ok(())
}

/// The progress bar: on stderr when it is a terminal, else nothing.
struct Bar {
    bar: ProgressBar,
}

impl Bar {
    fn new(hidden: bool) -> Bar {
        let bar = if hidden {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} points  {elapsed_precise} (eta {eta})",
                )
                .expect("the template is valid"),
            );
            b
        };
        Bar { bar }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn start(&self, todo: u64, _total: u64) {
        self.bar.set_length(todo);
    }

    fn point_done(&self) {
        self.bar.inc(1);
    }
}
