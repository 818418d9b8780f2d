//! The per-user (or per-owner) view (Tab), in place of the process table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use super::super::app::App;
use super::super::theme;

/// The per-user (or per-owner) view in place of the process table: a title line, the heads
/// (the sorted one marked), and a row per user, the selected one highlighted.
pub fn draw(buf: &mut Buffer, title: Rect, area: Rect, app: &App) {
    let v = &app.users;
    let rows = app.user_rows();
    let idle = humantime::format_duration(app.usage.idle_after()).to_string();
    let head = format!(
        "per {} · %SM averaged over {} · idle holds: memory of processes at 0% SM for {idle} or more",
        v.by.as_str(),
        humantime::format_duration(app.history.window),
    );
    buf.set_stringn(title.x, title.y, head, title.width as usize, theme::dim());
    if area.height == 0 {
        return;
    }
    let heads = crate::view::by::heads(v.by);
    let cells: Vec<[String; 7]> = rows.iter().map(crate::view::by::cells).collect();
    // One more column for the sort mark.
    let w = crate::view::by::widths(&heads, 1, &cells, usize::from(area.width));
    let line = |cells: &[String]| crate::view::by::row(cells, &w);
    let marked: Vec<String> = heads
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == v.sort {
                format!("{h}{}", if v.descending { "▼" } else { "▲" })
            } else {
                (*h).to_owned()
            }
        })
        .collect();
    buf.set_stringn(
        area.x,
        area.y,
        line(&marked),
        area.width as usize,
        theme::header(),
    );
    if cells.is_empty() {
        if area.height > 1 {
            buf.set_stringn(
                area.x,
                area.y + 1,
                "no GPU processes",
                area.width as usize,
                theme::dim(),
            );
        }
        return;
    }
    let visible = usize::from(area.height - 1);
    let first = v.selected.saturating_sub(visible.saturating_sub(1));
    for (i, r) in cells.iter().enumerate().skip(first).take(visible) {
        let y = area.y + 1 + (i - first) as u16;
        let style = if i == v.selected {
            theme::selected()
        } else if rows[i].idle_bytes.is_some_and(|b| b > 0) {
            theme::warning()
        } else {
            Style::new()
        };
        let text = line(r);
        let padded = format!("{text:<width$}", width = area.width as usize);
        buf.set_stringn(area.x, y, padded, area.width as usize, style);
    }
}
