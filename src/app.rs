//! The dispatcher: runs the command the flags name. Only `main` imports it.

use std::io::{self, IsTerminal};
use std::process::ExitCode;

use crate::cli::{Cli, Command, Deferred, OnceArgs};
use crate::cmd;
use crate::runtime::is_broken_pipe;

/// Runs gpumon; errors that reach here are printed by `main`.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let common = &cli.common;
    let result = match cli.command {
        Some(Command::Once(Deferred(args))) => cmd::once::run(common, &args),
        Some(Command::Log(Deferred(args))) => cmd::log::run(common, &args),
        Some(Command::Explain(Deferred(args))) => cmd::explain::run(&args),
        Some(Command::Run(Deferred(args))) => cmd::run::run(common, &args),
        Some(Command::Serve(Deferred(args))) => cmd::serve::run(common, &args),
        Some(Command::Estimate(Deferred(args))) => cmd::estimate::run(common, &args),
        Some(Command::Completions { shell }) => cmd::docs::completions(shell),
        Some(Command::Man) => cmd::docs::man(),
        None if io::stdout().is_terminal()
            && io::stdin().is_terminal()
            && !crate::text::dumb_terminal() =>
        {
            cmd::dashboard::run(common)
        }
        // Not a terminal, or one that cannot position the cursor (TERM=dumb: Emacs's shell,
        // some CI consoles): the plain report.
        None => cmd::once::run(common, &OnceArgs::default()),
    };
    match result {
        // `gpumon log | head`: the reader went away, which is how such a pipe ends.
        Err(e) if is_broken_pipe(&e) => Ok(ExitCode::SUCCESS),
        other => other,
    }
}
