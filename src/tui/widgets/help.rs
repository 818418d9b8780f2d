//! The help (`?`): every key of the dashboard.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::super::app::App;
use super::super::theme;
use super::{panel_rect, panel_title};

/// Every key of the dashboard, as the help shows them (and the README's keys table, which a
/// test compares with this list).
pub const KEYS: &[(&str, &str)] = &[
    ("q, F10, Ctrl-C", "quit"),
    (
        "Esc",
        "close a panel; clear the filter, else the selection (never quits)",
    ),
    ("?, F1", "this help (↑↓ PgUp PgDn scroll it)"),
    ("space", "pause / resume the view"),
    ("+ / -", "slower / faster sampling"),
    (
        "↑↓, j, mouse",
        "select a process (the view then follows it)",
    ),
    ("PgUp/PgDn, G", "page, last"),
    ("Home, g", "back to the top of the sort"),
    ("Enter", "details of the selected process: command, charts"),
    ("k, F9", "send a signal to the selected process"),
    (
        "s, < >, 1-9, click",
        "sort by a column (1-9: the n-th on screen; again reverses)",
    ),
    ("S, r", "reverse the sort"),
    ("← →", "scroll the COMMAND column"),
    (
        "/",
        "filter processes (pid, user, command, gpuN); Enter keeps it, Esc clears it",
    ),
    ("[ ]", "scroll GPUs when they do not all fit"),
    (
        "o, or paste",
        "OOM panel: paste an out-of-memory error to explain it; ↑↓ scroll",
    ),
    (
        "e",
        "estimate a run against the selected GPU (gpumon estimate's flags)",
    ),
    (
        "Tab",
        "per-user view: GPUs, memory, mean %SM, GPU-hours and idle holds per user; b per owner (pod, job, container), s sort, Enter filters the processes to that row",
    ),
    ("Ctrl-Z", "suspend (the shell's fg brings it back)"),
];

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let rect = panel_rect(area, 70);
    let inner_width = usize::from(rect.width.saturating_sub(2));
    let inner_height = rect.height.saturating_sub(2);
    // Keys right-aligned in their column, descriptions wrapped under their own column.
    const KEY_COLUMN: usize = 18;
    let text_width = inner_width.saturating_sub(KEY_COLUMN + 2).max(10);
    let mut lines: Vec<Line> = Vec::new();
    for (k, what) in KEYS {
        for (i, part) in textwrap::wrap(what, text_width).into_iter().enumerate() {
            let key = if i == 0 { *k } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("{key:>KEY_COLUMN$}  "), theme::header()),
                Span::raw(part.into_owned()),
            ]));
        }
    }
    lines.push(Line::raw(""));
    for part in textwrap::wrap(
        "Gauge: █ a process (same colour in the table) ▓ used, not attributed ▒ driver \
         reserved ░ free",
        inner_width.max(10),
    ) {
        lines.push(Line::styled(part.into_owned(), theme::dim()));
    }
    lines.push(Line::styled("Press any other key to close.", theme::dim()));
    let total = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    let max_scroll = total.saturating_sub(inner_height);
    let scroll = app.help_scroll.min(max_scroll);
    let title = if max_scroll > 0 {
        let at = format!(
            "{}–{} of {} lines",
            scroll + 1,
            (scroll + inner_height).min(total),
            total
        );
        panel_title(
            rect.width,
            "gpumon help",
            " — ",
            " · ",
            &[(0, "↑↓ PgUp PgDn scroll"), (1, &at)],
        )
    } else {
        " gpumon help ".to_owned()
    };
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((scroll, 0))
            .block(Block::default().borders(Borders::ALL).title(title)),
        rect,
    );
}
