//! The line of jobs waiting for GPUs (`gpumon run --gpus … --wait`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::super::app::App;
use super::super::theme;
use super::RenderInto;

/// "queue 1. ana `python train.py` wants 1×20.0 GiB, waiting 3m12s │ …", cut at the edge.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let now = app
        .sample
        .as_ref()
        .and_then(|s| s.timestamp.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64());
    let mut spans = vec![Span::styled("queue ", theme::dim())];
    for (i, part) in crate::view::once::queue_parts(&app.queue, now)
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            spans.push(Span::styled(" │ ", theme::dim()));
        }
        spans.push(Span::styled(
            part,
            if app.queue[i].state == crate::model::queue::State::Waiting {
                theme::warning()
            } else {
                Style::default()
            },
        ));
    }
    Line::from(spans).render_into(area, buf);
}
