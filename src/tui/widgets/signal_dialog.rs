//! The signal dialog (`k`, F9): the process, the signals to choose from, what happened.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::super::app::App;
use super::super::theme;
use super::{panel_title, popup};

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let Some(d) = &app.signal else { return };
    let rect = popup(area, 60, 50);
    frame.render_widget(Clear, rect);
    let block = Block::default().borders(Borders::ALL).title(panel_title(
        rect.width,
        "Send a signal",
        " · ",
        " · ",
        &[(2, "↑↓ choose"), (1, "Enter send"), (0, "Esc cancel")],
    ));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("pid {}", d.pid), theme::header()),
            Span::raw(format!(
                "  on GPU {}  user {}",
                d.gpu,
                d.user.as_deref().unwrap_or("N/A")
            )),
        ]),
        Line::from(
            d.command
                .clone()
                .unwrap_or_else(|| "(command not visible)".into()),
        ),
        Line::from(""),
    ];
    for (i, (name, number)) in super::super::signal::SIGNALS.iter().enumerate() {
        let marker = if i == d.choice { "▶ " } else { "  " };
        let style = if i == d.choice {
            theme::selected()
        } else {
            Style::new()
        };
        lines.push(Line::from(Span::styled(
            format!("{marker}{name} ({number})"),
            style,
        )));
    }
    lines.push(Line::from(""));
    match (&d.outcome, &d.target) {
        (Some(Ok(done)), _) => lines.push(Line::from(Span::styled(
            format!("{done} · Enter closes"),
            theme::level(0.0),
        ))),
        (Some(Err(why)), _) | (None, Err(why)) => {
            lines.push(Line::from(Span::styled(why.clone(), theme::error())))
        }
        (None, Ok(_)) => {}
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
