//! The footer: the keys of the mode shown, or the line being typed (a filter, a time).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::app::{App, Mode};
use super::super::theme;
use super::RenderInto;

pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let line = match app.mode {
        Mode::Filter => Line::from(vec![
            Span::styled("filter: ", theme::header()),
            Span::raw(app.table.filter.clone()),
            Span::styled("▏  Enter keep · Esc clear", theme::dim()),
        ]),
        Mode::Goto => {
            let r = app.replay.as_ref();
            let mut spans = vec![
                Span::styled("go to: ", theme::header()),
                Span::raw(r.map(|r| r.goto.clone()).unwrap_or_default()),
                Span::styled(
                    "▏  03:12, 2026-11-23 03:12, -10m, +5m (UTC) · Enter go · Esc cancel",
                    theme::dim(),
                ),
            ];
            if let Some(e) = r.and_then(|r| r.goto_error.as_ref()) {
                spans.push(Span::styled(format!("  {e}"), theme::error()));
            }
            Line::from(spans)
        }
        _ => {
            // Most used first; on a narrow terminal whole hints drop from the end, never a
            // word cut at the edge. An active filter and how to clear it come right after
            // quit and help.
            let keys: &[(&str, &str)] = if app.mode == Mode::Details {
                &[("Esc", "back"), ("k", "signal"), ("q", "quit")]
            } else if app.replay.is_some() && app.mode == Mode::Normal {
                &[
                    ("q", "quit"),
                    ("← →", "step"),
                    ("space", "play/pause"),
                    ("[ ]", "±1 min"),
                    ("g", "go to"),
                    ("+/-", "speed"),
                    ("Tab", "per user"),
                    ("?", "help"),
                    ("Enter", "details"),
                ]
            } else if app.mode == Mode::Users {
                &[
                    ("q", "quit"),
                    ("Tab", "processes"),
                    ("b", "by user/owner"),
                    ("Enter", "filter processes"),
                    ("s", "sort"),
                    ("?", "help"),
                ]
            } else {
                &[
                    ("q", "quit"),
                    ("?", "help"),
                    ("Enter", "details"),
                    ("k", "signal"),
                    ("/", "filter"),
                    ("s", "sort"),
                    ("o", "OOM panel"),
                    ("space", "pause"),
                    ("+/-", "interval"),
                    ("e", "estimate"),
                    ("Tab", "per user"),
                ]
            };
            let mut hints: Vec<Vec<Span>> = keys
                .iter()
                .map(|(k, what)| {
                    vec![
                        Span::styled(*k, theme::header()),
                        Span::styled(format!(" {what}  "), theme::dim()),
                    ]
                })
                .collect();
            if !app.table.filter.is_empty() {
                let at = 2.min(hints.len());
                hints.insert(
                    at,
                    vec![
                        Span::styled(format!("filter: {}", app.table.filter), theme::warning()),
                        Span::styled(" (Esc clears)  ", theme::dim()),
                    ],
                );
            }
            let width = usize::from(area.width);
            let cells = |h: &[Span]| h.iter().map(Span::width).sum::<usize>();
            while hints.len() > 1 && hints.iter().map(|h| cells(h)).sum::<usize>() > width {
                hints.pop();
            }
            Line::from(hints.into_iter().flatten().collect::<Vec<_>>())
        }
    };
    line.render_into(area, buf);
}
