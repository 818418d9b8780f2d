//! The host's own line under the header: CPU, memory, swap, load and uptime.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::super::theme;
use super::RenderInto;

/// CPU, memory, swap, load and uptime, the lowest-ranked dropped on a narrow screen.
pub fn draw(buf: &mut Buffer, area: Rect, h: &crate::model::HostStats) {
    let label = "host ";
    let width = usize::from(area.width).saturating_sub(label.len());
    let Some(line) = crate::view::once::host_line(h, width, " │ ") else {
        return;
    };
    let mut spans = vec![Span::styled(label, theme::dim())];
    for (i, part) in line.split(" │ ").enumerate() {
        if i > 0 {
            spans.push(Span::styled(" │ ", theme::dim()));
        }
        // Memory in the colour of its share, as the GPUs' are.
        let style = match (
            part.starts_with("mem "),
            h.memory_used_bytes,
            h.memory_total_bytes,
        ) {
            (true, Some(u), Some(t)) if t > 0 => theme::level(u as f64 / t as f64),
            _ => Style::default(),
        };
        spans.push(Span::styled(part.to_owned(), style));
    }
    Line::from(spans).render_into(area, buf);
}
