//! Drawing: a pure function of [`App`] (it only records where the table landed, for mouse
//! clicks). Readable from 80×24 up; with more GPUs than fit, one line per GPU.

use std::time::SystemTime;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Sparkline, Wrap};
use ratatui::Frame;

use super::app::{App, Mode, SortKey};
use super::theme;
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::history::Column;
use crate::model::{Device, Sample};
use crate::oom::render::{render_oom, LOOKED_FOR};
use crate::output::once::fmt_age;
use crate::output::Paint;
use crate::units::{fmt_bytes, fmt_opt_bytes};

/// Smallest terminal the dashboard draws into.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;
/// Lines per GPU in the full layout.
const FULL_LINES: u16 = 4;
/// Lines kept for the process table (header included) before GPUs go compact.
const TABLE_MIN: u16 = 6;

pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "terminal too small ({}×{}); gpumon needs {MIN_WIDTH}×{MIN_HEIGHT}",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return;
    }
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame.buffer_mut(), header, app);
    draw_footer(frame.buffer_mut(), footer, app);

    let Some(sample) = app.sample.clone() else {
        let msg = match app.opening_for {
            Some(d) => format!(
                "waiting for the NVIDIA driver… ({} s)\n\nNVML's initialisation has not \
                 returned yet: slow without nvidia-persistenced, or a wedged driver (see dmesg \
                 for Xid errors). q quits.",
                d.as_secs()
            ),
            None => "waiting for the first sample…".into(),
        };
        frame.render_widget(
            Paragraph::new(msg)
                .style(theme::dim())
                .wrap(Wrap { trim: true }),
            body,
        );
        return;
    };
    let n = sample.devices.len() as u16;
    let room = body.height.saturating_sub(TABLE_MIN + 1);
    let full = n > 0 && n * FULL_LINES <= room;
    let gpu_lines = if full {
        n * FULL_LINES
    } else {
        n.max(1).min(room.max(1))
    };
    let [gpus, selection, table] = Layout::vertical([
        Constraint::Length(gpu_lines),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(body);
    draw_gpus(frame, gpus, app, &sample, full);
    draw_selection(frame.buffer_mut(), selection, app, &sample);
    draw_table(frame.buffer_mut(), table, app);

    match app.mode {
        Mode::Help => draw_help(frame, area),
        Mode::Oom => draw_oom(frame, area, app, &sample),
        _ => {}
    }
}

fn clock(t: SystemTime) -> String {
    let s = humantime::format_rfc3339_seconds(t).to_string();
    s.get(11..19).map_or(s.clone(), |hms| format!("{hms} UTC"))
}

fn fmt_interval(d: std::time::Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else {
        humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
    }
}

fn draw_header(buf: &mut Buffer, area: Rect, app: &App) {
    let mut spans = vec![Span::styled("gpumon", theme::header())];
    if let Some(s) = &app.sample {
        let sep = || Span::styled(" │ ", theme::dim());
        spans.push(sep());
        spans.push(Span::raw(
            s.hostname.clone().unwrap_or_else(|| "localhost".into()),
        ));
        spans.push(sep());
        spans.push(Span::raw(format!(
            "driver {}",
            s.driver_version.as_deref().unwrap_or("N/A")
        )));
        spans.push(sep());
        spans.push(Span::raw(format!(
            "CUDA {}",
            s.cuda_version.as_deref().unwrap_or("N/A")
        )));
        spans.push(sep());
        spans.push(Span::raw(clock(s.timestamp)));
        if s.source == "simulated" {
            spans.push(Span::styled(" (simulated)", theme::dim()));
        }
        if let Some(e) = &s.error {
            spans.push(sep());
            spans.push(Span::styled(e.clone(), theme::error()));
        }
    }
    spans.push(Span::styled(" │ ", theme::dim()));
    spans.push(Span::raw(format!("every {}", fmt_interval(app.interval))));
    if app.paused {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(" PAUSED ", theme::paused()));
    }
    Line::from(spans).render_into(area, buf);
}

trait RenderInto {
    fn render_into(self, area: Rect, buf: &mut Buffer);
}

impl RenderInto for Line<'_> {
    fn render_into(self, area: Rect, buf: &mut Buffer) {
        use ratatui::widgets::Widget;
        self.render(area, buf);
    }
}

fn draw_footer(buf: &mut Buffer, area: Rect, app: &App) {
    let line = match app.mode {
        Mode::Filter => Line::from(vec![
            Span::styled("filter: ", theme::header()),
            Span::raw(app.filter.clone()),
            Span::styled("▏  Enter keep · Esc clear", theme::dim()),
        ]),
        _ => {
            let mut spans = Vec::new();
            for (k, what) in [
                ("q", "quit"),
                ("?", "help"),
                ("space", "pause"),
                ("+/-", "interval"),
                ("s", "sort"),
                ("/", "filter"),
                ("o", "OOM panel"),
            ] {
                spans.push(Span::styled(k, theme::header()));
                spans.push(Span::styled(format!(" {what}  "), theme::dim()));
            }
            if !app.filter.is_empty() {
                spans.push(Span::styled(
                    format!("filter: {}", app.filter),
                    theme::warning(),
                ));
            }
            Line::from(spans)
        }
    };
    line.render_into(area, buf);
}

fn draw_gpus(frame: &mut Frame, area: Rect, app: &mut App, sample: &Sample, full: bool) {
    let devices = &sample.devices;
    if devices.is_empty() {
        let msg = if sample.error.is_some() {
            "no GPU could be read"
        } else {
            "no GPUs found"
        };
        frame.render_widget(Paragraph::new(msg).style(theme::warning()), area);
        return;
    }
    let per = if full { FULL_LINES } else { 1 };
    let fits = (area.height / per).max(1) as usize;
    app.gpu_offset = app.gpu_offset.min(devices.len().saturating_sub(fits));
    let hidden = devices.len().saturating_sub(fits);
    let index_width = devices
        .iter()
        .map(|d| d.index.to_string().len())
        .max()
        .unwrap_or(1);
    for (slot, d) in devices.iter().skip(app.gpu_offset).take(fits).enumerate() {
        let y = area.y + slot as u16 * per;
        let rect = Rect::new(
            area.x,
            y,
            area.width,
            per.min(area.bottom().saturating_sub(y)),
        );
        if full {
            draw_gpu_full(frame, rect, app, d, sample.timestamp);
        } else {
            draw_gpu_compact(frame.buffer_mut(), rect, d, index_width, sample.timestamp);
        }
    }
    if hidden > 0 && area.height > 0 {
        let note = format!(" +{hidden} more GPUs ([ ] scroll) ");
        let w = note.chars().count() as u16;
        let x = area.right().saturating_sub(w);
        let y = area.bottom() - 1;
        frame.buffer_mut().set_string(x, y, note, theme::warning());
    }
}

/// "not responding for 12 s (last data 03:14:18 UTC)": a failed device's error, with when its
/// readings are from if it has stalled.
fn device_error(d: &Device, now: SystemTime) -> Option<String> {
    let e = d.error.as_ref()?;
    if !d.stalled {
        return Some(e.clone());
    }
    Some(match d.data_time(now) {
        Some(t) => format!("{e} (last data {})", clock(t)),
        None => format!("{e} (no data yet)"),
    })
}

fn gpu_title(d: &Device, now: SystemTime) -> Vec<Span<'static>> {
    let mut spans = vec![
        Span::styled(format!("[{}] ", d.index), theme::header()),
        Span::raw(d.name.clone().unwrap_or_else(|| "N/A".into())),
    ];
    if let Some(e) = device_error(d, now) {
        spans.push(Span::styled(format!("  {e}"), theme::error()));
        return spans;
    }
    let temp = d.temperature_c.map_or("N/A".into(), |t| format!("{t}°C"));
    let temp_style = d
        .temperature_c
        .map_or(theme::dim(), |t| theme::level((t as f64 - 30.0) / 60.0));
    spans.push(Span::raw("  "));
    spans.push(Span::styled(temp, temp_style));
    let util = d
        .utilization
        .gpu_percent
        .map_or("N/A".into(), |u| format!("{u}%"));
    spans.push(Span::raw(format!("  util {util}")));
    match (d.power_draw_w, d.power_limit_w) {
        (Some(p), Some(l)) => spans.push(Span::raw(format!("  {p:.0}/{l:.0} W"))),
        (Some(p), None) => spans.push(Span::raw(format!("  {p:.0} W"))),
        _ => spans.push(Span::styled("  power N/A", theme::dim())),
    }
    if let Some(f) = d.fan_percent {
        spans.push(Span::raw(format!("  fan {f}%")));
    }
    if let Some(e) = &d.processes_error {
        spans.push(Span::styled(format!("  {e}"), theme::warning()));
    }
    spans
}

fn memory_figures(d: &Device) -> Span<'static> {
    let m = &d.memory;
    match (m.used_bytes, m.total_bytes, m.used_fraction()) {
        (Some(u), Some(t), Some(share)) => Span::styled(
            format!(
                "{} / {} ({:.0}%)",
                fmt_bytes(u),
                fmt_bytes(t),
                share * 100.0
            ),
            if d.stalled {
                theme::stale()
            } else {
                theme::level(share)
            },
        ),
        _ => Span::styled(
            format!(
                "memory {}",
                d.field_errors.get("memory").map_or("N/A", String::as_str)
            ),
            theme::dim(),
        ),
    }
}

fn part_style(kind: &PartKind, selected_pid: Option<u32>) -> (&'static str, Style) {
    match kind {
        PartKind::Process { pid } => {
            let mut s = theme::process(*pid);
            if Some(*pid) == selected_pid {
                s = s.add_modifier(Modifier::BOLD);
            }
            ("█", s)
        }
        PartKind::ThisProcess => ("█", theme::process(selected_pid.unwrap_or(0))),
        PartKind::Allocated => ("█", theme::allocated()),
        PartKind::Cached => ("▓", theme::cached()),
        PartKind::NonFramework => ("▒", theme::process(selected_pid.unwrap_or(0))),
        PartKind::OtherApps | PartKind::Unattributed => ("▓", theme::unattributed()),
        PartKind::DriverReserved => ("▒", theme::reserved()),
        PartKind::Free => ("░", theme::free()),
        PartKind::Unaccounted => (" ", Style::new()),
    }
}

/// A stacked bar of a breakdown, each part in its own style; widths by cumulative rounding so
/// the parts always fill exactly `area.width` cells.
fn draw_breakdown(
    buf: &mut Buffer,
    area: Rect,
    b: &Breakdown,
    selected_pid: Option<u32>,
    stale: bool,
) {
    let w = area.width as f64;
    let total = b.total.max(1) as f64;
    let mut cum = 0u64;
    for p in &b.parts {
        let Some(bytes) = p.bytes else { continue };
        let start = ((cum as f64 / total) * w).round() as u16;
        cum += bytes;
        let end = (((cum as f64 / total) * w).round() as u16).min(area.width);
        let (symbol, mut style) = part_style(&p.kind, selected_pid);
        if stale {
            style = theme::stale();
        }
        for x in start..end {
            if let Some(cell) = buf.cell_mut((area.x + x, area.y)) {
                cell.set_symbol(symbol).set_style(style);
            }
        }
    }
}

use crate::output::once::device_breakdown;

fn draw_gpu_full(frame: &mut Frame, area: Rect, app: &App, d: &Device, now: SystemTime) {
    // Fixed one-line rows: plain arithmetic, no layout solver (this runs for every GPU).
    let row = |i: u16| Rect::new(area.x, area.y + i, area.width, u16::from(i < area.height));
    let rows = [row(0), row(1), row(2), row(3)];
    let buf = frame.buffer_mut();
    let figures = memory_figures(d);
    let fw = figures.width() as u16;
    let title = Line::from(gpu_title(d, now));
    // Figures only where they leave the title whole (a stalled GPU's title is long).
    let title_w = if d.stalled { title.width() as u16 } else { 0 };
    title.render_into(rows[0], buf);
    if (d.error.is_none() || d.stalled) && rows[0].width > fw + 2 + title_w {
        let x = rows[0].right() - fw;
        buf.set_span(x, rows[0].y, &figures, fw);
    }
    // The selection's (gpu, pid) is kept by the app: no need to sort the table again here.
    let selected_pid = app
        .selected_pid
        .filter(|(gpu, _)| *gpu == d.index)
        .map(|(_, pid)| pid);
    match device_breakdown(d) {
        Some(b) => draw_breakdown(buf, rows[1], &b, selected_pid, d.stalled),
        None => {
            let why = d.error.as_deref().unwrap_or("memory N/A");
            buf.set_string(
                rows[1].x,
                rows[1].y,
                format!("── {why}: no data ──"),
                theme::dim(),
            );
        }
    }
    // History: memory on the left, utilisation on the right, gaps where reads failed.
    let mem_w = rows[2].width * 7 / 10;
    let mem_area = Rect {
        width: mem_w,
        ..rows[2]
    };
    let util_area = Rect {
        x: rows[2].x + mem_w,
        width: rows[2].width - mem_w,
        ..rows[2]
    };
    let window = app.history.window;
    let hist = app.history.device(d.index);
    let peak_used = hist.and_then(|h| h.peak_used());
    let mem_cols: Vec<Option<u64>> = hist.map_or_else(Vec::new, |h| {
        h.columns(
            now,
            window,
            mem_area.width.saturating_sub(1) as usize,
            |p| p.used,
        )
        .into_iter()
        .map(Column::bar)
        .collect()
    });
    let util_cols: Vec<Option<u64>> = hist.map_or_else(Vec::new, |h| {
        h.columns(
            now,
            window,
            util_area.width.saturating_sub(1) as usize,
            |p| p.util.map(u64::from),
        )
        .into_iter()
        .map(Column::bar)
        .collect()
    });
    // Scaled to the window's peak (which the axis names): one text line has only 8 levels, and
    // against the whole card a modest job would draw nothing.
    let max = peak_used
        .map(|p| p.value)
        .or(d.memory.total_bytes)
        .unwrap_or(1);
    frame.render_widget(
        Sparkline::default()
            .data(mem_cols)
            .max(max.max(1))
            .style(if d.stalled {
                theme::stale()
            } else {
                theme::process(d.index.wrapping_add(7))
            })
            .absent_value_symbol("·")
            .absent_value_style(theme::error()),
        Rect {
            width: mem_area.width.saturating_sub(1),
            ..mem_area
        },
    );
    frame.render_widget(
        Sparkline::default()
            .data(util_cols)
            .max(100)
            .style(if d.stalled {
                theme::stale()
            } else {
                theme::level(0.0)
            })
            .absent_value_symbol("·")
            .absent_value_style(theme::error()),
        util_area,
    );
    // Time axis with the peak.
    let buf = frame.buffer_mut();
    let span = humantime::format_duration(window).to_string();
    let peak = peak_used.map_or(String::new(), |p| {
        let ago = now.duration_since(p.at).map(|d| d.as_secs()).unwrap_or(0);
        format!(
            " peak {} at {} ({} ago) ",
            fmt_bytes(p.value),
            clock(p.at),
            fmt_age(ago)
        )
    });
    let axis_w = mem_area.width.saturating_sub(1) as usize;
    let left = format!("-{span} ");
    let right = " now";
    let fill = axis_w.saturating_sub(left.chars().count() + right.len() + peak.chars().count());
    let axis = format!(
        "{left}{}{peak}{}{right}",
        "─".repeat(fill / 2),
        "─".repeat(fill - fill / 2)
    );
    buf.set_stringn(mem_area.x, rows[3].y, axis, axis_w, theme::dim());
    let util_peak = hist
        .and_then(|h| h.points.iter().filter_map(|p| p.util).max())
        .map_or(String::new(), |u| format!(" peak {u}%"));
    buf.set_stringn(
        util_area.x,
        rows[3].y,
        format!("util{util_peak}"),
        util_area.width as usize,
        theme::dim(),
    );
}

fn draw_gpu_compact(buf: &mut Buffer, area: Rect, d: &Device, index_width: usize, now: SystemTime) {
    let name = d.name.clone().unwrap_or_else(|| "N/A".into());
    let short: String = name
        .trim_start_matches("NVIDIA ")
        .chars()
        .take(18)
        .collect();
    let head = format!("[{:>index_width$}] {short:<18} ", d.index);
    buf.set_stringn(area.x, area.y, &head, area.width as usize, theme::header());
    let x = area.x + head.chars().count() as u16;
    if let Some(e) = device_error(d, now) {
        buf.set_stringn(
            x,
            area.y,
            e,
            area.right().saturating_sub(x) as usize,
            theme::error(),
        );
        return;
    }
    let temp = d.temperature_c.map_or("N/A".into(), |t| format!("{t}°C"));
    let util = d
        .utilization
        .gpu_percent
        .map_or("N/A".into(), |u| format!("{u}%"));
    let stats = format!("{temp:>5} {util:>4} ");
    buf.set_stringn(
        x,
        area.y,
        &stats,
        area.right().saturating_sub(x) as usize,
        Style::new(),
    );
    let x = x + stats.chars().count() as u16;
    let figures = memory_figures(d);
    let fw = figures.width() as u16 + 1;
    let bar_w = area.right().saturating_sub(x + fw);
    if bar_w >= 4 {
        if let Some(b) = device_breakdown(d) {
            draw_breakdown(buf, Rect::new(x, area.y, bar_w, 1), &b, None, false);
        }
        buf.set_span(x + bar_w + 1, area.y, &figures, fw);
    }
}

fn draw_selection(buf: &mut Buffer, area: Rect, app: &App, sample: &Sample) {
    let Some(row) = app.selected_row() else {
        let msg = if app.filter.is_empty() {
            "no GPU processes"
        } else {
            "no process matches the filter"
        };
        buf.set_stringn(area.x, area.y, msg, area.width as usize, theme::dim());
        return;
    };
    let p = row.process;
    let Some(d) = sample.devices.iter().find(|d| d.index == row.gpu) else {
        return;
    };
    // The source first, so a narrow terminal cuts the least important figures.
    let source = match &p.allocator {
        Some(a) => a.framework.as_str(),
        None => "NVML",
    };
    let head = format!("▶ pid {} GPU {} {source} ", p.pid, row.gpu);
    buf.set_stringn(
        area.x,
        area.y,
        &head,
        area.width as usize,
        theme::process(p.pid),
    );
    let x = area.x + head.chars().count() as u16;
    let Some(b) = Breakdown::process(&d.memory, p.memory()) else {
        return;
    };
    let bar_w = (area.width / 6).min(20);
    if area.right() > x + bar_w + 2 {
        draw_breakdown(
            buf,
            Rect::new(x, area.y, bar_w, 1),
            &b,
            Some(p.pid),
            d.stalled,
        );
        let mut text = String::new();
        for part in &b.parts {
            let Some(bytes) = part.bytes.filter(|b| *b > 0) else {
                continue;
            };
            // The driver's reservation is on the GPU's own gauge already.
            if matches!(part.kind, PartKind::Unaccounted | PartKind::DriverReserved) {
                continue;
            }
            text.push_str(&format!(
                " {} {} ·",
                part.kind.short_label(),
                fmt_bytes(bytes)
            ));
        }
        text.pop();
        let tx = x + bar_w + 1;
        buf.set_stringn(
            tx,
            area.y,
            text,
            area.right().saturating_sub(tx) as usize,
            Style::new(),
        );
    }
}

/// Which columns fit at a width, narrowest first out.
fn columns(width: u16) -> Vec<(SortKey, u16)> {
    let mut cols = vec![(SortKey::Pid, 8), (SortKey::Gpu, 4), (SortKey::GpuMem, 10)];
    if width >= 60 {
        cols.insert(1, (SortKey::User, 10));
        cols.push((SortKey::Cpu, 6));
    }
    if width >= 90 {
        cols.push((SortKey::HostMem, 10));
    }
    if width >= 80 {
        cols.push((SortKey::Time, 7));
    }
    cols.push((SortKey::Command, 0));
    cols
}

fn cell(key: SortKey, row: &super::app::Row, now: SystemTime) -> String {
    let p = row.process;
    let na = || "N/A".to_owned();
    match key {
        SortKey::Pid => p.pid.to_string(),
        SortKey::User => p.user.clone().unwrap_or_else(na),
        SortKey::Gpu => row.gpu.to_string(),
        SortKey::GpuMem => fmt_opt_bytes(p.gpu_memory_bytes),
        SortKey::Cpu => p.cpu_percent.map_or_else(na, |c| format!("{c:.0}")),
        SortKey::HostMem => fmt_opt_bytes(p.host_memory_bytes),
        SortKey::Time => p.age_s(now).map_or_else(na, fmt_age),
        SortKey::Command => p
            .command
            .clone()
            .or_else(|| p.name.clone())
            .unwrap_or_else(|| "(not visible from here)".into()),
    }
}

fn draw_table(buf: &mut Buffer, area: Rect, app: &mut App) {
    if area.height == 0 {
        return;
    }
    let cols = columns(area.width);
    let right_aligned = |k: SortKey| {
        matches!(
            k,
            SortKey::Pid
                | SortKey::GpuMem
                | SortKey::Cpu
                | SortKey::HostMem
                | SortKey::Time
                | SortKey::Gpu
        )
    };
    let mut x = area.x;
    for (key, w) in &cols {
        let mut title = key.title().to_owned();
        if *key == app.sort {
            title.push(if app.descending { '▼' } else { '▲' });
        }
        let w = if *w == 0 {
            area.right().saturating_sub(x)
        } else {
            *w
        };
        let text = if right_aligned(*key) {
            format!("{title:>width$}", width = w.saturating_sub(1) as usize)
        } else {
            title
        };
        buf.set_stringn(
            x,
            area.y,
            text,
            w as usize,
            theme::header().add_modifier(Modifier::UNDERLINED),
        );
        x = x.saturating_add(w);
    }
    let body = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
    let now = app
        .sample
        .as_ref()
        .map_or(SystemTime::UNIX_EPOCH, |s| s.timestamp);
    let visible = body.height as usize;
    let first = if app.selected >= visible {
        app.selected + 1 - visible
    } else {
        0
    };
    // Only the rows on screen are looked at.
    for i in first..(first + visible).min(app.row_count()) {
        let Some(row) = app.row(i) else { break };
        let y = body.y + (i - first) as u16;
        let mut x = body.x;
        for (key, w) in &cols {
            let w = if *w == 0 {
                body.right().saturating_sub(x)
            } else {
                *w
            };
            let value = cell(*key, &row, now);
            let text = if right_aligned(*key) {
                format!("{value:>width$} ", width = w.saturating_sub(1) as usize)
            } else {
                format!("{value} ")
            };
            let mut style = if row.stale {
                theme::stale()
            } else if *key == SortKey::Pid {
                theme::process(row.process.pid)
            } else {
                Style::new()
            };
            if i == app.selected {
                style = style.patch(theme::selected());
            }
            buf.set_stringn(x, y, text, w as usize, style);
            x = x.saturating_add(w);
        }
    }
    app.table_rows = body;
    app.table_first = first;
}

fn popup(area: Rect, w_pct: u16, h_pct: u16) -> Rect {
    let w = (area.width * w_pct / 100).max(MIN_WIDTH.min(area.width));
    let h = (area.height * h_pct / 100).max(MIN_HEIGHT.min(area.height));
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

fn draw_help(frame: &mut Frame, area: Rect) {
    let rect = popup(area, 70, 80);
    let keys = [
        ("q, Esc, Ctrl-C", "quit (Esc closes a panel first)"),
        ("?, F1", "this help"),
        ("space", "pause / resume the view"),
        ("+ / -", "slower / faster sampling"),
        ("↑↓, j/k, mouse", "select a process"),
        ("PgUp/PgDn, g/G", "page, first, last"),
        (
            "s, ←/→, 1-8",
            "sort column (PID USER GPU GPU-MEM %CPU HOST-MEM TIME COMMAND)",
        ),
        ("S, r", "reverse the sort"),
        ("/", "filter processes (pid, user, command, gpuN)"),
        ("[ ]", "scroll GPUs when they do not all fit"),
        (
            "o, or paste",
            "OOM panel: paste an out-of-memory error to explain it; ↑↓ scroll",
        ),
    ];
    let mut lines: Vec<Line> = keys
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:>16}  "), theme::header()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Gauge: █ a process (same colour in the table) ▓ used, not attributed ▒ driver reserved ░ free",
        theme::dim(),
    ));
    lines.push(Line::styled("Press any key to close.", theme::dim()));
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" gpumon help "),
        ),
        rect,
    );
}

fn draw_oom(frame: &mut Frame, area: Rect, app: &App, sample: &Sample) {
    let rect = popup(area, 94, 90);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" OOM analyzer — paste an error · Ctrl-U clears · Esc closes ");
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let wide = inner.width >= 110;
    let [input, report] = if wide {
        Layout::horizontal([Constraint::Percentage(35), Constraint::Percentage(65)]).areas(inner)
    } else {
        Layout::vertical([Constraint::Percentage(30), Constraint::Percentage(70)]).areas(inner)
    };
    // The input's tail, so the latest paste is visible.
    let lines: Vec<&str> = app.oom_text.lines().collect();
    let keep = input.height.saturating_sub(2) as usize;
    let tail = lines[lines.len().saturating_sub(keep)..].join("\n");
    let placeholder =
        "Paste an out-of-memory error or a whole traceback here (bracketed paste works).";
    frame.render_widget(
        Paragraph::new(if tail.is_empty() {
            placeholder.to_owned()
        } else {
            tail
        })
        .style(if app.oom_text.is_empty() {
            theme::dim()
        } else {
            Style::new()
        })
        .wrap(Wrap { trim: false })
        .block(Block::default().borders(Borders::ALL).title(" input ")),
        input,
    );
    let text = match app.oom.as_ref().and_then(|a| a.main().map(|m| (a, m))) {
        Some((analysis, oom)) => {
            let mut out = String::new();
            if let Some(d) = oom
                .device_index
                .and_then(|i| sample.devices.iter().find(|d| d.index == i))
            {
                out.push_str(&live_line(d));
            }
            render_oom(&mut out, oom, analysis.ooms.len(), Paint(false));
            out
        }
        None if app.oom_text.trim().is_empty() => "The report appears here.".into(),
        None => format!("No out-of-memory error found yet.\nLooked for: {LOOKED_FOR}."),
    };
    frame.render_widget(
        Paragraph::new(Text::raw(text))
            .wrap(Wrap { trim: false })
            .scroll((app.oom_scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" report (↑↓ PgUp PgDn scroll) "),
            ),
        report,
    );
}

/// The live state of the GPU an OOM names, shown above its report.
fn live_line(d: &Device) -> String {
    if let Some(e) = &d.error {
        return format!("Live GPU {}: {e}\n\n", d.index);
    }
    let m = &d.memory;
    format!(
        "Live GPU {} now: {} used of {}, {} free, {} process{}\n\n",
        d.index,
        fmt_opt_bytes(m.used_bytes),
        fmt_opt_bytes(m.total_bytes),
        fmt_opt_bytes(m.free_bytes),
        d.processes.len(),
        if d.processes.len() == 1 { "" } else { "es" }
    )
}
