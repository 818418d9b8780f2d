//! The dashboard's layout: where each panel ([`super::widgets`]) goes, a pure function of
//! [`App`] (drawing only records where the table landed, for mouse clicks). Readable from
//! 80×24 up; with more GPUs than fit, one line per GPU.

use ratatui::layout::{Constraint, Layout};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::app::{App, Mode};
use super::theme;
use super::widgets::gpu::MIN_CHART;
use super::widgets::{
    details, estimate, footer, gpus, header, help, host, oom, queue, signal_dialog, table, users,
};

/// Every key of the dashboard, as the help shows them.
pub use super::widgets::help::KEYS;

pub use super::widgets::{GpuLayout, MIN_HEIGHT, MIN_WIDTH};
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
    header::draw(frame.buffer_mut(), header, app);
    if let Some(h) = &host {
        host::draw(frame.buffer_mut(), host_area, h);
    }
    if queue {
        queue::draw(frame.buffer_mut(), queue_area, app);
    }
    footer::draw(frame.buffer_mut(), footer, app);

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
    let layout = gpu_layout(sample.devices.len() as u16, body.height, users::wanted(app));
    let [gpus, selection, table] = Layout::vertical([
        Constraint::Length(layout.rows),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(body);
    gpus::draw(frame, gpus, app, &sample, &layout);
    if app.mode == Mode::Users {
        users::draw(frame.buffer_mut(), selection, table, app);
    } else {
        table::draw_selection(frame.buffer_mut(), selection, app, &sample);
        table::draw(frame.buffer_mut(), table, app);
    }

    match app.mode {
        Mode::Help => help::draw(frame, area, app),
        Mode::Oom => oom::draw(frame, area, app, &sample),
        Mode::Estimate => estimate::draw(frame, area, app, &sample),
        Mode::Signal => {
            if app.details.is_some() {
                details::draw(frame, body, app);
            }
            signal_dialog::draw(frame, area, app)
        }
        Mode::Details => details::draw(frame, body, app),
        _ => {}
    }
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
