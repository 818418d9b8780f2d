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
    let area = exited(buf, area, cells.len(), app);
    // GPU LIMIT only where some row's processes are under a GPU memory limit.
    if rows.iter().any(|r| !r.limits.is_empty()) {
        let [a, b, c, d, e, f, g] = heads;
        let cells = rows
            .iter()
            .zip(cells)
            .map(|(r, [a, b, c, d, e, f, g])| [a, b, c, d, e, f, g, crate::view::by::limit_cell(r)])
            .collect();
        table(
            buf,
            area,
            app,
            &rows,
            [a, b, c, d, e, f, g, "GPU LIMIT"],
            cells,
        );
    } else {
        table(buf, area, app, &rows, heads, cells);
    }
}

/// The heads (the sorted one marked) and a row per user in `area`, the selected one
/// highlighted.
fn table<const N: usize>(
    buf: &mut Buffer,
    area: Rect,
    app: &App,
    rows: &[crate::model::rollup::Row],
    heads: [&str; N],
    cells: Vec<[String; N]>,
) {
    let v = &app.users;
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
    if area.height == 0 {
        return;
    }
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
        } else if rows
            .get(i)
            .is_some_and(|r| r.idle_bytes.is_some_and(|b| b > 0))
        {
            theme::warning()
        } else {
            Style::new()
        };
        let text = line(r);
        let padded = format!("{text:<width$}", width = area.width as usize);
        buf.set_stringn(area.x, y, padded, area.width as usize, style);
    }
}

/// The rows the table's area should offer (besides its heads): the process table's, or in
/// the per-user view, where that is more, its rows and the exited processes' section.
pub fn wanted(app: &App) -> usize {
    let table = app.row_count();
    if app.mode != super::super::app::Mode::Users {
        return table;
    }
    let section = app
        .sample
        .as_ref()
        .map(|s| crate::view::accounting::user_lines(s).len())
        .map_or(0, |n| if n == 0 { 0 } else { n + 1 });
    table.max(app.user_rows().len().max(1) + section)
}

/// Draws the exited processes' peaks per user ([`crate::view::accounting::user_lines`]) below
/// the rows, or at the foot of `area` where the rows fill it: never more than half of it
/// while there are rows to show, a line "… N more" where not all fit, nothing where fewer
/// than two lines are left. Returns the area left for the rows.
fn exited(buf: &mut Buffer, area: Rect, rows: usize, app: &App) -> Rect {
    let Some(sample) = &app.sample else {
        return area;
    };
    let lines = crate::view::accounting::user_lines(sample);
    if lines.is_empty() {
        return area;
    }
    let h = usize::from(area.height);
    // The heads and the rows (or the line that says there are none), then a blank line.
    let rows_h = 1 + rows.max(1);
    let room = h.saturating_sub(rows_h + 1).max((h / 2).saturating_sub(1));
    if room < 2 {
        return area;
    }
    let shown = lines.len().min(room);
    let top = area.y + (h - shown).min(rows_h + 1) as u16;
    let width = usize::from(area.width);
    for (i, line) in lines.iter().take(shown).enumerate() {
        let (text, style) = if i + 1 == shown && shown < lines.len() {
            (format!("… {} more", lines.len() - i), theme::dim())
        } else if i == 0 {
            (line.clone(), theme::header())
        } else {
            (line.clone(), Style::new())
        };
        buf.set_stringn(area.x, top + i as u16, text, width, style);
    }
    Rect {
        height: top.saturating_sub(area.y).saturating_sub(1),
        ..area
    }
}
