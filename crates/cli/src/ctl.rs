//! `hsched ctl`: requests to a running `hsched live` through its control
//! socket (see `hsched_live::control`): messages to schedulers on a
//! thread's behalf or the operator's, moves, loading and unloading
//! schedulers, and the run's status.

use crate::CliError;
use hsched_core::{Params, Value};
use hsched_live::control::{Client, Request};
use hsched_model::{ParentLink, SchedulerSpec};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CtlArgs {
    /// The run's control socket (default: the one run's under /run/hsched).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// The managed threads, their schedulers and what each scheduler received.
    Status,
    /// A message to a scheduler: `hsched ctl msg --to res reserve amount=8ms period=20ms`.
    Msg {
        /// Send it as this thread (default: as the operator).
        #[arg(long)]
        thread: Option<String>,
        /// The scheduler (default: the thread's own).
        #[arg(long)]
        to: Option<String>,
        /// The message (reserve, begin_constraint, warp, join, ...).
        name: String,
        /// Its arguments, KEY=VALUE (durations as 10ms).
        #[arg(value_parser = parse_arg)]
        args: Vec<(String, Value)>,
    },
    /// Move a thread to another scheduler, with attachment parameters.
    Move {
        thread: String,
        to: String,
        #[arg(value_parser = parse_arg)]
        params: Vec<(String, Value)>,
    },
    /// Load a scheduler instance under a parent.
    Load {
        name: String,
        policy: String,
        /// The parent scheduler.
        #[arg(long)]
        parent: String,
        /// Virtual processors registered with the parent.
        #[arg(long, default_value_t = 1)]
        vps: u32,
        /// An attachment parameter under the parent, KEY=VALUE; repeatable.
        #[arg(long = "at", value_parser = parse_arg)]
        at: Vec<(String, Value)>,
        /// The policy's own parameters, KEY=VALUE.
        #[arg(value_parser = parse_arg)]
        params: Vec<(String, Value)>,
    },
    /// Unload a scheduler instance (its threads go to the default).
    Unload { name: String },
    /// Load a policy plugin library into the run (a path the run can
    /// open): its policies can be loaded from then on.
    Plugin { path: PathBuf },
}

/// `KEY=VALUE` as a scenario file would read the value: `true`/`false`,
/// an integer, else a string (`10ms` becomes a duration where the
/// parameter is one).
fn parse_arg(text: &str) -> Result<(String, Value), String> {
    let (k, v) = text
        .split_once('=')
        .filter(|(k, _)| !k.trim().is_empty())
        .ok_or_else(|| format!("`{text}`: expected KEY=VALUE, e.g. amount=8ms"))?;
    let v = v.trim();
    let value = match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => v
            .parse::<i64>()
            .map_or_else(|_| Value::Str(v.to_string()), Value::Int),
    };
    Ok((k.trim().to_string(), value))
}

fn params(pairs: Vec<(String, Value)>) -> Params {
    Params(pairs)
}

pub fn command(args: CtlArgs) -> Result<(), CliError> {
    let socket = match args.socket {
        Some(p) => p,
        None => hsched_live::control::find_socket().map_err(CliError::Input)?,
    };
    let request = match args.what {
        What::Status => Request::Status,
        What::Msg {
            thread,
            to,
            name,
            args,
        } => Request::Msg {
            thread,
            to,
            name,
            args: params(args),
        },
        What::Move {
            thread,
            to,
            params: p,
        } => Request::Move {
            thread,
            to,
            params: params(p),
        },
        What::Load {
            name,
            policy,
            parent,
            vps,
            at,
            params: p,
        } => Request::Load {
            scheduler: SchedulerSpec {
                name,
                policy,
                params: params(p),
                parents: vec![ParentLink {
                    parent,
                    vps,
                    params: params(at),
                }],
            },
        },
        What::Unload { name } => Request::Unload { scheduler: name },
        What::Plugin { path } => Request::Plugin {
            path: std::path::absolute(&path).unwrap_or(path),
        },
    };
    let mut client = Client::connect(&socket)
        .map_err(|e| CliError::Input(format!("{}: {e}", socket.display())))?;
    let response = client
        .request(&request)
        .map_err(|e| CliError::Failed(format!("{}: {e}", socket.display())))?;
    if response.ok {
        crate::output::print_stdout(&format!("{}\n", response.text.trim_end()))?;
        Ok(())
    } else {
        Err(CliError::Input(format!("refused: {}", response.text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_read_as_in_a_scenario_file() {
        assert_eq!(parse_arg("on=true"), Ok(("on".into(), Value::Bool(true))));
        assert_eq!(parse_arg("prio=-3"), Ok(("prio".into(), Value::Int(-3))));
        assert_eq!(
            parse_arg("amount = 8ms"),
            Ok(("amount".into(), Value::Str("8ms".into())))
        );
        assert!(parse_arg("=3").is_err());
        assert!(parse_arg("amount").is_err());
    }
}
