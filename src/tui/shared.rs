//! The dashboard's part of shared memory and container limits ([`crate::model::unified`]):
//! a mark on the GPU's gauge where this container's limit falls, the figures of the shared
//! pool's gauge on a part whose memory is the system's, and the line under the gauge that
//! says "this container: 7.2 of 8.0 GiB" and, on unified or coherent parts, what is measured
//! and what is derived.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::theme;
use crate::model::unified::SharedSplit;
use crate::model::Device;

/// "╏" at the container's hard limit on a gauge of `total` bytes; nothing without a limit or
/// with one past the device's total.
pub fn draw_limit_mark(buf: &mut Buffer, area: Rect, d: &Device, total: u64) {
    let Some(hard) = d.container_limit.as_ref().and_then(|l| l.hard_bytes) else {
        return;
    };
    if hard >= total || area.width == 0 {
        return;
    }
    let share = hard as f64 / total.max(1) as f64;
    let x = ((share * area.width as f64).round() as u16).min(area.width - 1);
    if let Some(cell) = buf.cell_mut((area.x + x, area.y)) {
        let style = if d.stale() {
            theme::stale()
        } else {
            theme::error()
        };
        cell.set_symbol("╏").set_style(style);
    }
}

/// This container's hard limit for a compact GPU line ("limit 8.0 GiB"), the first field
/// dropped when the line is short; `None` without a hard limit. The bar marks it too.
pub fn compact_limit(d: &Device) -> Option<Span<'static>> {
    let hard = d.container_limit.as_ref()?.hard_bytes?;
    let style = if d.stale() {
        theme::stale()
    } else {
        theme::warning()
    };
    Some(Span::styled(
        format!("limit {}", crate::units::fmt_bytes(hard)),
        style,
    ))
}

/// The notes of [`crate::model::unified::notes`] on one line, cut to `width`; `None` for a
/// discrete GPU without a limit. Texts are escaped here: the dashboard draws raw samples.
pub fn notes_line(d: &Device, width: u16) -> Option<Line<'static>> {
    let notes = crate::model::unified::notes(d);
    if notes.is_empty() {
        return None;
    }
    let text = format!(" {}", notes.join(" · "));
    let text: String = crate::text::escape(&text)
        .chars()
        .take(usize::from(width))
        .collect();
    let style = if d.stale() {
        theme::stale()
    } else {
        theme::warning()
    };
    Some(Line::from(Span::styled(text, style)))
}

/// The figures of the shared pool's gauge ([`crate::model::unified::split_text`]), coloured
/// by how little the system can still give.
pub fn shared_figures(d: &Device, split: &SharedSplit, short: bool) -> Span<'static> {
    let style = if d.stale() {
        theme::stale()
    } else {
        theme::level(1.0 - split.free as f64 / split.total.max(1) as f64)
    };
    Span::styled(crate::model::unified::split_text(split, short), style)
}
