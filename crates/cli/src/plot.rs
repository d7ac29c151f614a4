//! `hsched plot FIGURE SCENARIO -o OUT.svg|OUT.png`: simulates the scenario
//! (deterministic: its seed, or `--seed`) and draws one figure of the run,
//! so that a paper's figure is regenerated from its scenario file. The
//! figures are those of the HTML report (`--report`), drawn by
//! `hsched_report::plot`; the hierarchy is `hsched check --svg`.

use crate::output::write_file;
use crate::CliError;
use hsched_core::Duration;
use hsched_report::plot::{Figure, Format, PlotOptions};
use std::path::PathBuf;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FigureArg {
    /// What every CPU and every thread did over time.
    Timeline,
    /// Each thread's share of a CPU over time.
    Share,
    /// Each scheduler node's share over time (its threads' time summed).
    NodeShare,
    /// Wakeup-to-dispatch latency CDF, per thread.
    Latency,
    /// Job response-time histograms with the deadline marked, per thread.
    Response,
}

impl FigureArg {
    fn figure(self) -> Figure {
        match self {
            FigureArg::Timeline => Figure::Timeline,
            FigureArg::Share => Figure::Share,
            FigureArg::NodeShare => Figure::NodeShare,
            FigureArg::Latency => Figure::Latency,
            FigureArg::Response => Figure::Response,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct PlotArgs {
    /// The figure to draw.
    #[arg(value_enum)]
    figure: FigureArg,
    /// Scenario file (TOML).
    file: PathBuf,
    /// Where to write it; `.svg` or `.png` chooses the format.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// Load a policy plugin (a library built with hsched-plugin); repeatable.
    #[arg(long = "plugin", value_name = "PATH")]
    plugins: Vec<PathBuf>,
    /// Override the scenario's horizon (e.g. 10s, 500ms; at most 1 day).
    #[arg(long, value_parser = crate::values::parse_horizon)]
    horizon: Option<Duration>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Start of the time window (timeline and share figures), e.g. 100ms.
    #[arg(long, value_parser = crate::values::parse_duration)]
    from: Option<Duration>,
    /// End of the time window (timeline and share figures), e.g. 200ms.
    #[arg(long, value_parser = crate::values::parse_duration)]
    to: Option<Duration>,
    /// Only this thread (by name); repeatable. Default: every thread.
    #[arg(long = "thread", value_name = "NAME")]
    threads: Vec<String>,
    /// Width of the figure in pixels.
    #[arg(long, default_value_t = 1000)]
    width: u32,
    /// Height of the figure in pixels.
    #[arg(long, default_value_t = 500)]
    height: u32,
    /// Run a hierarchy that does not compose anyway, with a warning.
    #[arg(long)]
    allow_uncomposed: bool,
}

pub fn command(args: &PlotArgs) -> Result<(), CliError> {
    let ext = args
        .output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let format = match ext.as_deref() {
        Some("svg") => Format::Svg,
        Some("png") => Format::Png,
        _ => {
            return Err(CliError::Input(format!(
                "{}: the output must end in .svg or .png (that chooses the format)",
                args.output.display()
            )))
        }
    };
    if !(16..=20_000).contains(&args.width) || !(16..=20_000).contains(&args.height) {
        return Err(CliError::Input(format!(
            "--width and --height must be 16 to 20000 pixels (got {}x{})",
            args.width, args.height
        )));
    }
    let (mut loaded, guard) =
        crate::to_run::load_to_run(&args.file, &args.plugins, args.allow_uncomposed)?;
    let opts = hsched_pipeline::RunOptions {
        horizon: args.horizon,
        seed: args.seed,
        trace: true,
        ..Default::default()
    };
    let (file, infos) = (loaded.file(), loaded.infos());
    let plugins = std::mem::take(&mut loaded.plugins);
    let scn = &loaded.scenario;
    let mut sim = hsched_pipeline::simulation(&file, scn, &opts, &guard, &infos)?;
    drop(plugins);
    sim.run_until(sim.horizon());
    if let Some(cut) = sim.cut_at() {
        return Err(CliError::Input(format!(
            "{}: the run needs more than {} events (hsched_sim::DEFAULT_MAX_EVENTS): \
             it reached them at {}; shorten --horizon",
            args.file.display(),
            hsched_sim::DEFAULT_MAX_EVENTS,
            cut - hsched_core::Instant::ZERO
        )));
    }
    let mut result = sim.finish();
    if result.trace.is_none() {
        return Err(CliError::Input(format!(
            "{}: the timeline needs more than {} segments and marks \
             (hsched_sim::DEFAULT_TRACE_LIMIT): shorten --horizon",
            args.file.display(),
            hsched_sim::DEFAULT_TRACE_LIMIT
        )));
    }
    guard.label(&mut result);
    let plot_opts = PlotOptions {
        width: args.width,
        height: args.height,
        from: args.from.map(Duration::as_nanos),
        to: args.to.map(Duration::as_nanos),
        threads: args.threads.clone(),
        ..PlotOptions::default()
    };
    let bytes =
        hsched_report::plot::plot(args.figure.figure(), &result, Some(scn), format, &plot_opts)
            .map_err(|e| CliError::Input(format!("{}: {e}", args.file.display())))?;
    write_file(&args.output, "the plot", |w| w.write_all(&bytes))
}
