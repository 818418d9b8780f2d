//! Drawing: a pure function of [`App`] (it only records where the table landed, for mouse
//! clicks). Readable from 80×24 up; with more GPUs than fit, one line per GPU.

use std::time::SystemTime;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::app::{App, Mode, SortKey};
use super::gpu::{self, clock, MIN_CHART};
use super::theme;
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::{Device, Sample};
use crate::oom::render::{render_oom_repeated, LOOKED_FOR};
use crate::text::Paint;
use crate::units::fmt_age;
use crate::units::{fmt_bytes, fmt_opt_bytes};

/// Smallest terminal the dashboard draws into.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;
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
    if let Some(view) = app.fleet.as_mut().filter(|v| v.open.is_none()) {
        super::fleet::draw(frame.buffer_mut(), area, view, app.interval);
        return;
    }
    // The host's own line under the header, once a sample carries it.
    let host = app.sample.as_ref().and_then(|s| s.host);
    // The jobs waiting for GPUs (`gpumon run --gpus … --wait`), when there are any.
    let queue = !app.queue.is_empty() && app.replay.is_none();
    let [header, host_area, queue_area, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(u16::from(host.is_some())),
        Constraint::Length(u16::from(queue)),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame.buffer_mut(), header, app);
    if let Some(h) = &host {
        draw_host(frame.buffer_mut(), host_area, h);
    }
    if queue {
        draw_queue(frame.buffer_mut(), queue_area, app);
    }
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
    let layout = gpu_layout(sample.devices.len() as u16, body.height, app.row_count());
    let [gpus, selection, table] = Layout::vertical([
        Constraint::Length(layout.rows),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(body);
    draw_gpus(frame, gpus, app, &sample, &layout);
    if app.mode == Mode::Users {
        draw_users(frame.buffer_mut(), selection, table, app);
    } else {
        draw_selection(frame.buffer_mut(), selection, app, &sample);
        draw_table(frame.buffer_mut(), table, app);
    }

    match app.mode {
        Mode::Help => draw_help(frame, area, app),
        Mode::Oom => draw_oom(frame, area, app, &sample),
        Mode::Estimate => draw_estimate(frame, area, app, &sample),
        Mode::Signal => {
            if app.details.is_some() {
                super::details::draw(frame, body, app);
            }
            draw_signal(frame, area, app)
        }
        Mode::Details => super::details::draw(frame, body, app),
        _ => {}
    }
}

/// "4", "0.5", "0.25": a replay's speed.
fn fmt_speed(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
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
    // A fleet node open: which, how to go back, and whether its figures are current.
    if let Some(v) = &app.fleet {
        if let Some(row) = v.open.and_then(|i| v.rows.get(i)) {
            spans.push(Span::styled(" │ ", theme::dim()));
            spans.push(Span::styled(format!(" {} ", row.name), theme::paused()));
            spans.push(Span::styled(" Esc: the fleet", theme::dim()));
            match &v.open_history {
                Some(Ok(span)) if !span.is_zero() => spans.push(Span::styled(
                    format!(
                        " │ {} of history from Prometheus",
                        crate::units::fmt_age(span.as_secs())
                    ),
                    theme::dim(),
                )),
                Some(Err(e)) => {
                    spans.push(Span::styled(" │ ", theme::dim()));
                    spans.push(Span::styled(format!("no history: {e}"), theme::error()));
                }
                _ => {}
            }
            if let Some(e) = &v.open_error {
                let age = v
                    .open_read_at
                    .map(|t| {
                        format!(
                            " (figures {} old)",
                            crate::units::fmt_age(t.elapsed().as_secs())
                        )
                    })
                    .unwrap_or_default();
                spans.push(Span::styled(" │ ", theme::dim()));
                spans.push(Span::styled(format!("not read: {e}{age}"), theme::error()));
            }
        }
    }
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
        if crate::collect::host::pids_hidden(s) {
            spans.push(sep());
            spans.push(Span::styled(
                crate::collect::host::PIDS_HIDDEN,
                theme::warning(),
            ));
        }
    }
    spans.push(Span::styled(" │ ", theme::dim()));
    if let Some(r) = &app.replay {
        spans.push(Span::styled(" REPLAY ", theme::paused()));
        spans.push(Span::raw(if r.playing {
            format!(" ▶ {}× ", fmt_speed(r.speed))
        } else {
            " ❚❚ ".to_owned()
        }));
        spans.push(Span::styled(
            format!("{} {}–{}", r.file, clock(r.span.0), clock(r.span.1)),
            theme::dim(),
        ));
    } else {
        spans.push(Span::raw(format!("every {}", fmt_interval(app.interval))));
    }
    if let Some(n) = &app.notice {
        spans.push(Span::styled(" │ ", theme::dim()));
        spans.push(Span::styled(n.clone(), theme::error()));
    }
    if app.paused {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(" PAUSED ", theme::paused()));
    }
    Line::from(spans).render_into(area, buf);
}

/// CPU, memory, swap, load and uptime, the lowest-ranked dropped on a narrow screen.
fn draw_host(buf: &mut Buffer, area: Rect, h: &crate::model::HostStats) {
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

/// "queue 1. ana `python train.py` wants 1×20.0 GiB, waiting 3m12s │ …", cut at the edge.
fn draw_queue(buf: &mut Buffer, area: Rect, app: &App) {
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
            if !app.filter.is_empty() {
                let at = 2.min(hints.len());
                hints.insert(
                    at,
                    vec![
                        Span::styled(format!("filter: {}", app.filter), theme::warning()),
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

/// How the GPUs are laid out: `full` gives each its line, its gauge and a chart of `chart`
/// rows; otherwise one line each, and one chart of `chart` rows for the selected GPU.
struct GpuLayout {
    full: bool,
    chart: u16,
    /// Rows the GPUs take in all.
    rows: u16,
}

/// Spare rows go to history: the table keeps what its rows need (at least [`TABLE_MIN`], at
/// most half the body when it is long), the GPUs take the rest.
fn gpu_layout(n: u16, body: u16, table_rows: usize) -> GpuLayout {
    let free = body.saturating_sub(1); // the selection line
    let table = (table_rows as u16 + 1)
        .max(TABLE_MIN)
        .min((free / 2).max(TABLE_MIN))
        .min(free);
    let gpus = free.saturating_sub(table);
    let n = n.max(1);
    let per = gpus / n;
    if per >= 2 + MIN_CHART {
        return GpuLayout {
            full: true,
            chart: per - 2,
            rows: per * n,
        };
    }
    let lines = n.min(gpus.max(1));
    let chart = gpus.saturating_sub(lines);
    GpuLayout {
        full: false,
        chart: if chart >= MIN_CHART { chart } else { 0 },
        rows: if chart >= MIN_CHART { gpus } else { lines },
    }
}

fn draw_gpus(frame: &mut Frame, area: Rect, app: &mut App, sample: &Sample, layout: &GpuLayout) {
    let devices = &sample.devices;
    let buf = frame.buffer_mut();
    if devices.is_empty() {
        let msg = if sample.error.is_some() {
            "no GPU could be read"
        } else {
            "no GPUs found"
        };
        buf.set_stringn(area.x, area.y, msg, area.width as usize, theme::warning());
        return;
    }
    let now = sample.timestamp;
    let selected = |d: &Device| {
        app.selected_pid
            .filter(|(gpu, _)| *gpu == d.index)
            .map(|(_, pid)| pid)
    };
    if layout.full {
        let per = layout.chart + 2;
        for (slot, d) in devices.iter().enumerate() {
            let y = area.y + slot as u16 * per;
            if y + per > area.bottom() {
                break;
            }
            let line = gpu::title_line(d, now, area.width);
            buf.set_line(area.x, y, &line, area.width);
            let gauge = Rect::new(area.x, y + 1, area.width, 1);
            if d.mig.is_empty() {
                gpu::draw_gauge(buf, gauge, d, app, selected(d));
            } else {
                gpu::draw_mig_gauge(buf, gauge, d, app, selected(d));
            }
            // Under the gauge, taken from the chart: why the GPU may be sick, its MIG
            // instances, who holds the memory the process list does not explain.
            let mut row = y + 2;
            let mut room = layout.chart;
            if let Some(line) = gpu::health_line(d, now, area.width).filter(|_| room > 0) {
                buf.set_line(area.x, row, &line, area.width);
                row += 1;
                room -= 1;
            }
            if let Some(line) = super::shared::notes_line(d, area.width).filter(|_| room > 0) {
                buf.set_line(area.x, row, &line, area.width);
                row += 1;
                room -= 1;
            }
            for (i, m) in d.mig.iter().enumerate() {
                if room == 0 {
                    break;
                }
                let last = i + 1 == d.mig.len();
                let line = Rect::new(area.x, row, area.width, 1);
                gpu::draw_mig_line(buf, line, d, m, last, app, selected(d));
                row += 1;
                room -= 1;
            }
            if !d.holders.is_empty() && room > MIN_CHART {
                let line = gpu::holders_line(d, area.width);
                buf.set_line(area.x, row, &line, area.width);
                row += 1;
                room -= 1;
            }
            if room >= MIN_CHART {
                let chart = Rect::new(area.x, row, area.width, room);
                gpu::draw_history(buf, chart, d, app, now, false);
            }
        }
        return;
    }
    let lines = area.height.saturating_sub(layout.chart).max(1);
    // When some GPUs do not fit, the last line says so (never over a GPU's figures).
    let fits = if devices.len() > lines as usize {
        (lines as usize).saturating_sub(1).max(1)
    } else {
        lines as usize
    };
    app.gpu_offset = app.gpu_offset.min(devices.len().saturating_sub(fits));
    let hidden = devices.len().saturating_sub(fits);
    let index_width = devices
        .iter()
        .map(|d| d.index.to_string().len())
        .max()
        .unwrap_or(1);
    for (slot, d) in devices.iter().skip(app.gpu_offset).take(fits).enumerate() {
        let y = area.y + slot as u16;
        gpu::draw_compact(
            buf,
            Rect::new(area.x, y, area.width, 1),
            d,
            app,
            index_width,
            now,
        );
    }
    if hidden > 0 && lines > 1 {
        let note = format!(
            "GPUs {}–{} of {} ([ ] scroll)",
            app.gpu_offset,
            app.gpu_offset + fits - 1,
            devices.len()
        );
        buf.set_stringn(
            area.x,
            area.y + lines - 1,
            note,
            area.width as usize,
            theme::warning(),
        );
    }
    // One chart: the selected process's GPU, else the first GPU shown.
    if layout.chart >= MIN_CHART {
        let focus = app
            .selected_pid
            .and_then(|(gpu, _)| devices.iter().find(|d| d.index == gpu))
            .or_else(|| devices.get(app.gpu_offset));
        if let Some(d) = focus {
            let chart = Rect::new(area.x, area.y + lines, area.width, layout.chart);
            gpu::draw_history(buf, chart, d, app, now, true);
        }
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
    // The source first, then the process's parts: whole fields, the least important
    // dropped first when the line is narrow (never a word cut at the edge).
    let source = match &p.allocator {
        Some(a) if a.framework == "pytorch" => "PyTorch".to_owned(),
        Some(a) => a.framework.clone(),
        None => "NVML".to_owned(),
    };
    let head = format!("▶ pid {} GPU {} {source} ", p.pid, row.gpu);
    let colour = app
        .process_style(p.pid)
        .unwrap_or_else(theme::other_processes);
    buf.set_stringn(area.x, area.y, &head, area.width as usize, colour);
    let x = area.x + head.chars().count() as u16;
    let Some(b) = Breakdown::process(&d.memory, p.memory()) else {
        return;
    };
    let bar_w = (area.width / 10).clamp(6, 20);
    if area.right() <= x + bar_w + 2 {
        return;
    }
    gpu::draw_breakdown(buf, Rect::new(x, area.y, bar_w, 1), &b, colour, d.stale());
    // What matters most for this process: its own allocation, then free, then its cache,
    // then the other processes, then its memory outside the framework.
    let rank = |k: &PartKind| match k {
        PartKind::Allocated | PartKind::ThisProcess | PartKind::Reserved => 0,
        PartKind::Free => 1,
        PartKind::Cached => 2,
        PartKind::OtherApps => 3,
        _ => 4,
    };
    let mut fields: Vec<(u8, String)> = b
        .parts
        .iter()
        // The driver's reservation is on the GPU's own gauge already.
        .filter(|part| !matches!(part.kind, PartKind::Unaccounted | PartKind::DriverReserved))
        .filter_map(|part| {
            let bytes = part.bytes.filter(|b| *b > 0)?;
            Some((
                rank(&part.kind),
                format!("{} {}", part.kind.short_label(), fmt_bytes(bytes)),
            ))
        })
        .collect();
    let tx = x + bar_w + 1;
    let room = usize::from(area.right().saturating_sub(tx));
    let joined = |f: &[(u8, String)]| {
        f.iter()
            .map(|(_, t)| format!(" {t}"))
            .collect::<Vec<_>>()
            .join(" ·")
    };
    while !fields.is_empty() && joined(&fields).chars().count() > room {
        let Some(worst) = fields
            .iter()
            .enumerate()
            .max_by_key(|(i, (r, _))| (*r, *i))
            .map(|(i, _)| i)
        else {
            break;
        };
        fields.remove(worst);
    }
    buf.set_stringn(tx, area.y, joined(&fields), room, Style::new());
}

/// Which columns fit at a width. OWNER shows only when some process has one (a pod, a job, a
/// container, a service).
fn columns(width: u16, containers: bool) -> Vec<(SortKey, u16)> {
    let min = |k: SortKey| -> u16 {
        match k {
            SortKey::Owner if !containers => u16::MAX,
            SortKey::Owner => 120,
            SortKey::User | SortKey::Cpu => 60,
            SortKey::Sm => 70,
            SortKey::Time => 80,
            SortKey::HostMem | SortKey::Type => 90,
            SortKey::MemBw => 110,
            _ => 0,
        }
    };
    let w = |k: SortKey| -> u16 {
        match k {
            SortKey::Pid => 8,
            SortKey::User | SortKey::GpuMem | SortKey::HostMem => 10,
            SortKey::Gpu => 4,
            SortKey::Type | SortKey::Sm => 5,
            SortKey::MemBw => 8,
            SortKey::Owner => 20,
            SortKey::Cpu => 6,
            SortKey::Time => 7,
            SortKey::Command => 0,
        }
    };
    SortKey::ALL
        .iter()
        .filter(|k| width >= min(**k))
        .map(|k| (*k, w(*k)))
        .collect()
}

fn cell(key: SortKey, row: &super::app::Row, now: SystemTime) -> String {
    let p = row.process;
    let na = || "N/A".to_owned();
    match key {
        SortKey::Pid => p.pid.to_string(),
        SortKey::User => p.user.clone().unwrap_or_else(na),
        // Blank for a host process.
        SortKey::Owner => p.owner_label().unwrap_or_default(),
        // A process in a MIG instance: GPU:GI, when that fits the column.
        SortKey::Gpu => match p.gpu_instance_id {
            Some(gi) if format!("{}:{gi}", row.gpu).len() <= 4 => format!("{}:{gi}", row.gpu),
            _ => row.gpu.to_string(),
        },
        SortKey::Type => p.kind.letter().to_owned(),
        SortKey::Sm => p.sm_percent.map_or_else(na, |v| v.to_string()),
        SortKey::MemBw => p.mem_bw_percent.map_or_else(na, |v| v.to_string()),
        SortKey::GpuMem => fmt_opt_bytes(p.gpu_memory_bytes),
        SortKey::Cpu => p.cpu_percent.map_or_else(na, |c| format!("{c:.0}")),
        SortKey::HostMem => fmt_opt_bytes(p.host_memory_bytes),
        SortKey::Time => p.age_s(now).map_or_else(na, fmt_age),
        SortKey::Command => {
            let command = p
                .command
                .clone()
                .or_else(|| p.name.clone())
                .unwrap_or_else(|| "(not visible from here)".into());
            // Memory growing step after step leads the command: it is the job's news.
            let command = match p.allocator.as_ref().and_then(|a| a.step_growth.as_ref()) {
                Some(g) => format!("[{}] {command}", growth_tag(g)),
                None => command,
            };
            match row.holder {
                Some(r) => format!("[{}] {command}", holder_tag(r)),
                None => command,
            }
        }
    }
}

/// The per-user (or per-owner) view in place of the process table: a title line, the heads
/// (the sorted one marked), and a row per user, the selected one highlighted.
fn draw_users(buf: &mut Buffer, title: Rect, area: Rect, app: &App) {
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

/// How a process row's command starts when its memory grows step after step: "allocated
/// +12.5 MiB/step".
pub fn growth_tag(g: &crate::model::StepGrowth) -> String {
    format!("{} +{}/step", g.measure, fmt_bytes(g.bytes_per_step))
}

/// How a holder row's command starts: why it holds memory outside NVML's list.
pub fn holder_tag(r: crate::model::HolderReason) -> &'static str {
    match r {
        crate::model::HolderReason::Zombie => "zombie",
        crate::model::HolderReason::NotListed => "not listed",
        crate::model::HolderReason::OtherNamespace => "other namespace",
        crate::model::HolderReason::Unreadable => "unreadable",
    }
}

fn draw_table(buf: &mut Buffer, area: Rect, app: &mut App) {
    if area.height == 0 {
        return;
    }
    let containers = app.sample.as_ref().is_some_and(|s| {
        s.devices.iter().any(|d| {
            d.processes
                .iter()
                .any(|p| p.owner.is_some() || p.container.is_some())
        })
    });
    let cols = columns(area.width, containers);
    let right_aligned = |k: SortKey| {
        matches!(
            k,
            SortKey::Pid
                | SortKey::GpuMem
                | SortKey::Sm
                | SortKey::MemBw
                | SortKey::Cpu
                | SortKey::HostMem
                | SortKey::Time
                | SortKey::Gpu
        )
    };
    let mut x = area.x;
    let mut x_titles_end = area.x;
    app.table_columns.clear();
    for (key, w) in &cols {
        let mut title = key.title().to_owned();
        if *key == app.sort {
            title.push(if app.descending { '▼' } else { '▲' });
        }
        if *key == SortKey::Command && app.command_offset > 0 {
            title.push_str(&format!(" (from character {}, ←)", app.command_offset + 1));
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
        x_titles_end = x + (text.chars().count() as u16).min(w);
        app.table_columns.push((*key, x, w));
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
    // Where the view is, when not every row fits: "12–24 of 320".
    let n = app.row_count();
    if n > visible && visible > 0 {
        let counter = format!(" {}–{} of {n} ", first + 1, (first + visible).min(n));
        let w = counter.chars().count() as u16;
        // Only where it leaves the column titles whole.
        if area.right() > x_titles_end + w {
            buf.set_string(area.right() - w, area.y, counter, theme::warning());
        }
    }
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
            let mut value = cell(*key, &row, now);
            if *key == SortKey::Command && app.command_offset > 0 {
                value = value.chars().skip(app.command_offset).collect();
            }
            let text = if right_aligned(*key) {
                format!("{value:>width$} ", width = w.saturating_sub(1) as usize)
            } else {
                format!("{value} ")
            };
            let mut style = if row.stale {
                theme::stale()
            } else if *key == SortKey::Pid {
                app.process_style(row.process.pid).unwrap_or_default()
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

fn draw_signal(frame: &mut Frame, area: Rect, app: &App) {
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
    for (i, (name, number)) in super::signal::SIGNALS.iter().enumerate() {
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

fn draw_help(frame: &mut Frame, area: Rect, app: &App) {
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

/// A panel's title for a block `width` cells wide: `head`, then as many of `hints` as fit,
/// whole, the lowest rank first, shown in their order (" head — a · b "). A title is never
/// cut inside a word; only a head wider than the block is shortened, with "…".
pub fn panel_title(width: u16, head: &str, lead: &str, sep: &str, hints: &[(u8, &str)]) -> String {
    let room = usize::from(width.saturating_sub(2));
    let render = |kept: &[usize]| {
        let mut kept = kept.to_vec();
        kept.sort_unstable();
        let mut s = format!(" {head}");
        for (n, &i) in kept.iter().enumerate() {
            s.push_str(if n == 0 { lead } else { sep });
            s.push_str(hints[i].1);
        }
        s.push(' ');
        s
    };
    let cells = |s: &str| Line::from(s).width();
    let mut order: Vec<usize> = (0..hints.len()).collect();
    order.sort_by_key(|&i| hints[i].0);
    let mut kept = Vec::new();
    for i in order {
        kept.push(i);
        if cells(&render(&kept)) > room {
            kept.pop();
        }
    }
    let title = render(&kept);
    if cells(&title) <= room {
        return title;
    }
    let mut short = String::from(" ");
    for c in head.chars() {
        if cells(&short) + 3 > room {
            break;
        }
        short.push(c);
    }
    short.push_str("… ");
    short
}

/// Where a panel goes: all of the body on a small terminal; on a large one, a popup with the
/// GPUs around it.
fn panel_rect(area: Rect, percent_x: u16) -> Rect {
    if area.width < 100 || area.height < 30 {
        Rect::new(
            area.x,
            area.y + 1,
            area.width,
            area.height.saturating_sub(2),
        )
    } else {
        popup(area, percent_x, 90)
    }
}

fn draw_oom(frame: &mut Frame, area: Rect, app: &App, sample: &Sample) {
    let rect = panel_rect(area, 94);
    frame.render_widget(Clear, rect);
    let block = Block::default().borders(Borders::ALL).title(panel_title(
        rect.width,
        "OOM analyzer",
        " — ",
        " · ",
        &[
            (1, "paste an error"),
            (2, "Ctrl-U clears"),
            (0, "Esc closes"),
        ],
    ));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let found = app.oom.as_ref().and_then(|a| a.main().map(|m| (a, m)));
    let wide = inner.width >= 110;
    let [input, report] = if wide {
        Layout::horizontal([Constraint::Percentage(35), Constraint::Percentage(65)]).areas(inner)
    } else if found.is_some() {
        // Once the message is understood, the report gets the room; the input keeps its tail.
        Layout::vertical([Constraint::Length(4), Constraint::Min(0)]).areas(inner)
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
    let width = report.width.saturating_sub(2) as usize;
    let text = match found {
        Some((analysis, oom)) => {
            // The GPU the message is about as it is now, beside the message: the one a
            // process it names is on, else the one its number names, else the only one.
            let by_pid = sample.devices.iter().find(|d| {
                d.processes
                    .iter()
                    .any(|p| oom.facts.other_processes.iter().any(|o| o.pid == p.pid))
            });
            let live_device = by_pid
                .or_else(|| {
                    oom.device_index
                        .and_then(|i| sample.devices.iter().find(|d| d.index == i))
                })
                .or_else(|| (sample.devices.len() == 1).then(|| &sample.devices[0]));
            let live = live_device
                .and_then(|d| live_breakdown(d).map(|b| (format!("GPU {} now", d.index), b)));
            let layout = crate::oom::render::Layout {
                width: Some(width),
                no_quote: true,
                live,
                findings_first: true,
                sizing: None,
            };
            let mut out = String::new();
            render_oom_repeated(
                &mut out,
                oom,
                analysis.total as usize,
                analysis.repeats(),
                Paint(false),
                &layout,
            );
            if let Some(d) = live_device {
                out.push_str(&live_line(d));
            }
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

/// The estimate panel (`e`): the flags as typed, and the report against the GPU it was
/// opened on, with that GPU's free memory as it is now.
fn draw_estimate(frame: &mut Frame, area: Rect, app: &App, sample: &Sample) {
    let rect = panel_rect(area, 90);
    frame.render_widget(Clear, rect);
    let gpu = app.estimate_gpu;
    let head = match gpu {
        Some(i) => format!("Estimate against GPU {i}"),
        None => "Estimate".to_owned(),
    };
    let title = panel_title(
        rect.width,
        &head,
        " — ",
        " · ",
        &[
            (2, "type gpumon estimate's flags"),
            (1, "Ctrl-U clears"),
            (0, "Esc closes"),
        ],
    );
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let [input, report] =
        Layout::vertical([Constraint::Length(4), Constraint::Min(0)]).areas(inner);
    let typed = if app.estimate_text.is_empty() {
        Text::styled(super::app::ESTIMATE_HINT, theme::dim())
    } else {
        Text::raw(app.estimate_text.as_str())
    };
    frame.render_widget(
        Paragraph::new(typed).wrap(Wrap { trim: false }).block(
            Block::default().borders(Borders::ALL).title(panel_title(
                input.width,
                "flags:",
                " ",
                ", ",
                &[
                    (0, "--model PATH or --params 7B"),
                    (1, "--batch"),
                    (2, "--seq-len"),
                    (3, "--inference"),
                    (4, "--mixed-precision…"),
                ],
            )),
        ),
        input,
    );
    let text = match &app.estimate {
        _ if app.estimate_reading && app.estimate_text.contains("--torch") => {
            "tracing the model (one training step on fake tensors, in your Python)…".to_owned()
        }
        _ if app.estimate_reading => "reading the model's files…".to_owned(),
        None => "Type the run's flags above, as for `gpumon estimate`.".to_owned(),
        Some(Err(e)) => e.clone(),
        Some(Ok(estimated)) => {
            let gpus = crate::estimate::GpuFree::candidates(&sample.devices)
                .into_iter()
                .filter(|d| gpu.is_none_or(|g| d.index == g))
                .collect();
            crate::estimate::render(&estimated.report(Ok(gpus)))
        }
    };
    frame.render_widget(
        Paragraph::new(Text::raw(text))
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" report ")),
        report,
    );
}

/// A GPU's memory now, in the message's parts where it can be: the split of the process
/// whose allocator reports it (`gpumon run`), else everything in use as one part.
fn live_breakdown(d: &Device) -> Option<Breakdown> {
    if d.error.is_some() {
        return None;
    }
    let probed = d
        .processes
        .iter()
        .filter(|p| p.allocator.is_some())
        .max_by_key(|p| p.gpu_memory_bytes);
    match probed {
        Some(p) => Breakdown::process(&d.memory, p.memory()),
        None => {
            let total = d.memory.total_bytes?;
            Some(Breakdown::from_parts(
                total,
                vec![
                    crate::model::breakdown::Part::read(PartKind::Used, d.memory.used_bytes),
                    crate::model::breakdown::Part::read(
                        PartKind::DriverReserved,
                        d.memory.reserved_bytes,
                    ),
                    crate::model::breakdown::Part::read(PartKind::Free, d.memory.free_bytes),
                ],
            ))
        }
    }
}

/// The live state of the GPU an OOM names, shown above its report.
fn live_line(d: &Device) -> String {
    if let Some(e) = &d.error {
        return format!("Live GPU {}: {e}\n", d.index);
    }
    let m = &d.memory;
    let mut out = format!(
        "Live GPU {} now: {} used of {}, {} free, {} process{}\n",
        d.index,
        fmt_opt_bytes(m.used_bytes),
        fmt_opt_bytes(m.total_bytes),
        fmt_opt_bytes(m.free_bytes),
        d.processes.len(),
        if d.processes.len() == 1 { "" } else { "es" }
    );
    // Who holds what the process list does not explain: what the error could not attribute.
    if !d.holders.is_empty() {
        out.push_str("Held outside NVML's process list now:\n");
        for h in &d.holders {
            out.push_str(&format!("  - {}\n", h.describe()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::panel_title;

    const HINTS: &[(u8, &str)] = &[(2, "type flags"), (1, "Ctrl-U clears"), (0, "Esc closes")];

    #[test]
    fn a_panel_title_keeps_whole_hints_the_most_important_first() {
        let all = panel_title(80, "Estimate", " — ", " · ", HINTS);
        assert_eq!(all, " Estimate — type flags · Ctrl-U clears · Esc closes ");
        // One cell short of all: the least important hint goes, the others keep their order.
        let w = u16::try_from(all.chars().count() + 1).expect("width");
        assert_eq!(
            panel_title(w, "Estimate", " — ", " · ", HINTS),
            " Estimate — Ctrl-U clears · Esc closes "
        );
        assert_eq!(
            panel_title(30, "Estimate", " — ", " · ", HINTS),
            " Estimate — Esc closes "
        );
        assert_eq!(
            panel_title(14, "Estimate", " — ", " · ", HINTS),
            " Estimate "
        );
        // Only a head wider than the block is shortened.
        assert_eq!(panel_title(8, "Estimate", " — ", " · ", HINTS), " Est… ");
        assert_eq!(panel_title(0, "Estimate", " — ", " · ", HINTS), " … ");
    }

    #[test]
    fn a_process_whose_memory_grows_says_so_in_its_row() {
        use crate::model::{AllocatorStats, Process, ProcessKind, StepGrowth};
        let mut p = Process::from_nvml(4242, ProcessKind::Compute, Some(8 << 30));
        p.command = Some("python train.py".into());
        let row = |p: &Process| {
            let r = crate::tui::app::Row {
                gpu: 0,
                process: p,
                stale: false,
                holder: None,
            };
            super::cell(
                super::SortKey::Command,
                &r,
                std::time::SystemTime::UNIX_EPOCH,
            )
        };
        p.allocator = Some(Box::new(AllocatorStats {
            framework: "pytorch".into(),
            framework_version: None,
            allocated_bytes: Some(6 << 30),
            allocated_peak_bytes: None,
            reserved_bytes: Some(7 << 30),
            reserved_peak_bytes: None,
            active_bytes: None,
            inactive_split_bytes: None,
            num_alloc_retries: None,
            num_ooms: None,
            age_ms: 0,
            run_id: None,
            steps: None,
            step_growth: None,
            step_marker: Some("optimizer".into()),
            steps_marked: Some(60),
            held_sites: None,
        }));
        assert_eq!(row(&p), "python train.py", "a flat job says nothing");
        if let Some(a) = p.allocator.as_mut() {
            a.step_growth = Some(StepGrowth {
                measure: "allocated".into(),
                bytes_per_step: 25 << 19,
                since_step: 11,
                last_step: 60,
                micros_per_step: None,
                steps_to_full: None,
            });
        }
        assert_eq!(row(&p), "[allocated +12.5 MiB/step] python train.py");
    }
}
