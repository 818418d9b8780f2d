//! The dispatcher: runs the command the flags name. Only `main` imports it.

use std::io::{self, IsTerminal};
use std::process::ExitCode;

use crate::cli::{Cli, Command, Deferred, OnceArgs};
use crate::cmd;
use crate::console::is_broken_pipe;

/// Runs gpumon; errors that reach here are printed by `main`.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let result = match &cli.command {
        Some(Command::Once(Deferred(args))) => {
            cmd::once::run(&cli.common(Some(&args.source), None), args)
        }
        Some(Command::Log(Deferred(args))) => {
            cmd::log::run(&cli.common(Some(&args.source), Some(&args.sampling)), args)
        }
        Some(Command::Record(Deferred(args))) => {
            cmd::record::run(&cli.common(Some(&args.source), Some(&args.sampling)), args)
        }
        Some(Command::Replay(Deferred(args))) => cmd::replay::run(&cli.common(None, None), args),
        Some(Command::Explain(Deferred(args))) => {
            cmd::explain::run(&cli.common(Some(&args.source), None), args)
        }
        Some(Command::Run(Deferred(args))) => {
            cmd::run::run(&cli.common(Some(&args.source), Some(&args.sampling)), args)
        }
        Some(Command::Serve(Deferred(args))) => {
            cmd::serve::run(&cli.common(Some(&args.source), Some(&args.sampling)), args)
        }
        Some(Command::Estimate(Deferred(args))) => {
            cmd::estimate::run(&cli.common(Some(&args.source), None), &args.run)
        }
        Some(Command::Pick(Deferred(args))) => {
            cmd::pick::run(&cli.common(Some(&args.source), None), args)
        }
        Some(Command::Completions { shell }) => cmd::docs::completions(*shell),
        Some(Command::Man(args)) => cmd::docs::man(args),
        None if io::stdout().is_terminal()
            && io::stdin().is_terminal()
            && !crate::text::dumb_terminal() =>
        {
            if cli.remote.is_empty() && cli.remote_file.is_none() && cli.prometheus.is_none() {
                cmd::dashboard::run(&cli.common(None, None))
            } else {
                cmd::dashboard::fleet(&cli.common(None, None), &fleet_args(&cli))
            }
        }
        // Not a terminal, or one that cannot position the cursor (TERM=dumb: Emacs's shell,
        // some CI consoles): the plain report (of the fleet, with --remote).
        None => cmd::once::run(&cli.common(None, None), &fleet_args(&cli)),
    };
    match result {
        // `gpumon log | head`: the reader went away, which is how such a pipe ends.
        Err(e) if is_broken_pipe(&e) => Ok(ExitCode::SUCCESS),
        other => other,
    }
}

/// The top-level fleet flags as `once`'s (none: the plain report of the GPUs here).
fn fleet_args(cli: &Cli) -> OnceArgs {
    OnceArgs {
        remote: cli.remote.clone(),
        remote_file: cli.remote_file.clone(),
        remote_config: cli.remote_config.clone(),
        prometheus: cli.prometheus.clone(),
        selector: cli.selector.clone(),
        ..OnceArgs::default()
    }
}
