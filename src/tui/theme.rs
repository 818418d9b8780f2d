//! One style per meaning; colour thresholds live here, not in the model.

use ratatui::style::{Color, Modifier, Style};

pub const PROCESS_COLORS: [Color; 8] = [
    Color::Cyan,
    Color::Magenta,
    Color::Yellow,
    Color::Blue,
    Color::LightRed,
    Color::LightGreen,
    Color::LightMagenta,
    Color::LightBlue,
];

/// The colour of palette slot `i` (the app gives the largest processes a slot each).
pub fn slot(i: usize) -> Style {
    Style::new().fg(PROCESS_COLORS[i % PROCESS_COLORS.len()])
}

/// The processes without a colour of their own, together in the gauge.
pub fn other_processes() -> Style {
    Style::new().fg(Color::Gray)
}

/// History charts.
pub fn history() -> Style {
    Style::new().fg(Color::Cyan)
}

/// The window's peak on a chart.
pub fn peak() -> Style {
    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
}

pub fn header() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}
pub fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}
pub fn error() -> Style {
    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
}
/// Readings that are not fresh (a stalled GPU's last good values).
pub fn stale() -> Style {
    Style::new().fg(Color::DarkGray).add_modifier(Modifier::DIM)
}
pub fn warning() -> Style {
    Style::new().fg(Color::Yellow)
}
pub fn unattributed() -> Style {
    Style::new().fg(Color::Gray)
}
pub fn reserved() -> Style {
    Style::new().fg(Color::DarkGray)
}
pub fn free() -> Style {
    Style::new().fg(Color::DarkGray)
}
pub fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}
pub fn paused() -> Style {
    Style::new().fg(Color::Black).bg(Color::Yellow)
}

/// Green, yellow, red by a share in `0.0..=1.0`.
pub fn level(share: f64) -> Style {
    let c = if share >= 0.9 {
        Color::Red
    } else if share >= 0.6 {
        Color::Yellow
    } else {
        Color::Green
    };
    Style::new().fg(c)
}
