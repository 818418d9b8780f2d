//! Headless views of a [`crate::model::Sample`]: the `once` report and the `log` sinks.

pub mod log;
pub mod once;

use std::io::{self, IsTerminal};

/// Columns a text report fits: `COLUMNS` when set, else the terminal's width when stdout is
/// one, else `default` (at least `min`).
pub fn text_width(default: usize, min: usize) -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .or_else(|| {
            io::stdout()
                .is_terminal()
                .then(|| ratatui_crossterm::crossterm::terminal::size().ok())
                .flatten()
                .map(|(w, _)| w as usize)
        })
        .filter(|w| *w >= min)
        .unwrap_or(default)
}

/// ANSI colour, only on a terminal and never with `NO_COLOR` set (no-color.org).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint(pub bool);

impl Paint {
    pub fn for_stdout() -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Paint(!no_color && io::stdout().is_terminal())
    }

    pub fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    pub fn bold(self, t: &str) -> String {
        self.wrap("1", t)
    }
    pub fn dim(self, t: &str) -> String {
        self.wrap("2", t)
    }
    pub fn red(self, t: &str) -> String {
        self.wrap("31", t)
    }
    pub fn green(self, t: &str) -> String {
        self.wrap("32", t)
    }
    pub fn yellow(self, t: &str) -> String {
        self.wrap("33", t)
    }
    pub fn cyan(self, t: &str) -> String {
        self.wrap("36", t)
    }

    /// Green, yellow or red by a share in `0.0..=1.0`.
    pub fn level(self, share: f64, t: &str) -> String {
        if share >= 0.9 {
            self.red(t)
        } else if share >= 0.6 {
            self.yellow(t)
        } else {
            self.green(t)
        }
    }
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
