//! What every command shares at run time, on the console: exit codes and usage errors, the
//! signals that end a view, broken pipes, and the terminal's width. Below the commands, above nothing but the standard library
//! and tokio.

use std::io::{self, IsTerminal};
use std::process::ExitCode;

/// Exit code for usage errors and a missing driver.
pub const EXIT_USAGE: u8 = 2;

/// Prints `gpumon: {e}` and returns [`EXIT_USAGE`]: a usage error or a missing driver.
pub fn usage_error(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("gpumon: {e}");
    ExitCode::from(EXIT_USAGE)
}

/// A usage error carried up through `?`: [`exit_on_usage`] turns it into [`usage_error`]'s
/// message and exit code, so a command's helpers need not return exit codes themselves.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// `e` as a [`UsageError`], for `?`.
pub fn usage(e: impl std::fmt::Display) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

/// A command's result with its [`UsageError`]s printed and given [`EXIT_USAGE`]; any other
/// error is passed on (main prints it, exit 1).
pub fn exit_on_usage(result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    match result {
        Err(e) if e.is::<UsageError>() => Ok(usage_error(e)),
        other => other,
    }
}

/// Columns a text report fits: `COLUMNS` when set, else the terminal's width when stdout is
/// one, else `default` (at least `min`).
pub fn text_width(default: usize, min: usize) -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .or_else(|| {
            io::stdout()
                .is_terminal()
                .then(|| crossterm::terminal::size().ok())
                .flatten()
                .map(|(w, _)| w as usize)
        })
        .filter(|w| *w >= min)
        .unwrap_or(default)
}

/// Columns a report is wrapped to: `COLUMNS` when set, else the terminal's width when
/// stdout is one, else 100.
pub fn terminal_width() -> usize {
    text_width(100, 20)
}

/// Whether an I/O error means the reader went away (`gpumon log | head`): not a failure.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|e| e.io_error_kind() == Some(io::ErrorKind::BrokenPipe))
            || c.downcast_ref::<csv::Error>().is_some_and(|e| {
                matches!(e.kind(), csv::ErrorKind::Io(io) if io.kind() == io::ErrorKind::BrokenPipe)
            })
    })
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
