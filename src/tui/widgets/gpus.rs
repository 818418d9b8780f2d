//! The GPUs' part of the screen: each GPU's line, gauge, health and history chart, or a
//! line each and one chart for the selected GPU when they do not all fit.

use ratatui::layout::Rect;
use ratatui::Frame;

use super::super::app::App;
use super::super::theme;
use super::gpu::{self, MIN_CHART};
use crate::model::{Device, Sample};

pub fn draw(
    frame: &mut Frame,
    area: Rect,
    app: &mut App,
    sample: &Sample,
    layout: &super::GpuLayout,
) {
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
        app.table
            .selected_pid
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
            if let Some(line) = crate::tui::shared::notes_line(d, area.width).filter(|_| room > 0) {
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
            .table
            .selected_pid
            .and_then(|(gpu, _)| devices.iter().find(|d| d.index == gpu))
            .or_else(|| devices.get(app.gpu_offset));
        if let Some(d) = focus {
            let chart = Rect::new(area.x, area.y + lines, area.width, layout.chart);
            gpu::draw_history(buf, chart, d, app, now, true);
        }
    }
}
