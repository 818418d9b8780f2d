//! The details of one process (Enter): its whole command, who and where it runs, its host
//! figures, and its GPU memory over time with the allocator's split when the probe reports it.
//!
//! The series come from [`History::track`](crate::model::history::History::track), which keeps
//! one for each of the largest processes and the selected one, so a process chosen after it
//! started shows what was recorded since it was first tracked, and says from when.

use std::time::{Duration, SystemTime};

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Clear, Dataset, GraphType, Paragraph, Wrap};
use ratatui::Frame;

use super::super::app::{App, Details};
use super::super::theme;
use super::gpu::{clock, segments, time_axis};
use crate::model::Process;
use crate::units::fmt_age;
use crate::units::{fmt_bytes, fmt_opt_bytes, GIB, MIB};

/// Lines of facts above the chart (the command wraps into as many as it needs, up to this).
const MAX_COMMAND_LINES: usize = 6;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let Some(d) = &app.details else { return };
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(super::panel_title(
            area.width,
            &format!("pid {} on GPU {}", d.pid, d.gpu),
            " · ",
            " · ",
            &[(1, "k signal"), (0, "Esc closes")],
        ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let now = app
        .sample
        .as_ref()
        .map_or(SystemTime::UNIX_EPOCH, |s| s.timestamp);
    let facts = facts(d, now);
    // The facts' wrapped height (the command bounded), so the chart takes the rest.
    let width = inner.width.max(1) as usize;
    let height: usize = facts
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            let h = wrapped_height(&text, width);
            if i == 0 {
                h.min(MAX_COMMAND_LINES)
            } else {
                h
            }
        })
        .sum();
    let [top, chart] =
        Layout::vertical([Constraint::Length(height as u16), Constraint::Min(0)]).areas(inner);
    frame.render_widget(Paragraph::new(facts).wrap(Wrap { trim: false }), top);
    draw_chart(frame, chart, app, d, now);
}

/// Lines `text` takes when word-wrapped at `width` (words longer than a line are split).
fn wrapped_height(text: &str, width: usize) -> usize {
    textwrap::wrap(text, width.max(1)).len().max(1)
}

fn label(s: &str) -> Span<'static> {
    Span::styled(format!("{s} "), theme::dim())
}

fn facts(d: &Details, now: SystemTime) -> Vec<Line<'static>> {
    let p: &Process = &d.last;
    let na = || "N/A".to_owned();
    let mut lines = vec![Line::from(vec![Span::styled(
        p.command
            .clone()
            .or_else(|| p.name.clone())
            .unwrap_or_else(|| "(command not visible from here: another PID namespace?)".into()),
        theme::header(),
    )])];
    let mut who = vec![
        label("user"),
        Span::raw(p.user.clone().unwrap_or_else(na)),
        label(" · type"),
        Span::raw(match p.kind {
            crate::model::ProcessKind::Compute => "compute",
            crate::model::ProcessKind::Graphics => "graphics",
            crate::model::ProcessKind::Both => "compute + graphics",
        }),
        label(" · owner"),
        Span::raw(p.owner_label().unwrap_or_else(|| {
            if p.start_time.is_some() {
                "none (host)".into()
            } else {
                na()
            }
        })),
    ];
    if d.gone {
        who.push(Span::styled(
            "  · no longer on this GPU (last figures shown)",
            theme::warning(),
        ));
    }
    lines.push(Line::from(who));
    if let Some(h) = &d.holder {
        lines.push(Line::from(vec![
            label("holds memory outside NVML's list:"),
            Span::styled(h.clone(), theme::warning()),
        ]));
    }
    let started = p.start_time.map_or_else(na, |t| {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(t);
        let ago = p.age_s(now).map(fmt_age).unwrap_or_default();
        format!("{} ({ago} ago)", clock(at))
    });
    lines.push(Line::from(vec![
        label("started"),
        Span::raw(started),
        label(" · host CPU"),
        Span::raw(p.cpu_percent.map_or_else(na, |c| format!("{c:.0}%"))),
        label(" · host memory"),
        Span::raw(fmt_opt_bytes(p.host_memory_bytes)),
    ]));
    lines.push(Line::from(vec![
        label("GPU memory"),
        Span::raw(fmt_opt_bytes(p.gpu_memory_bytes)),
        label(" · %SM"),
        Span::raw(p.sm_percent.map_or_else(na, |v| v.to_string())),
        label(" · %MEM BW"),
        Span::raw(p.mem_bw_percent.map_or_else(na, |v| v.to_string())),
    ]));
    match &p.allocator {
        Some(a) => {
            let peak = |v: Option<u64>| v.map(|b| format!(" (peak {})", fmt_bytes(b)));
            let mut spans = vec![
                label(&format!(
                    "{}{} allocator:",
                    if a.framework == "pytorch" {
                        "PyTorch"
                    } else {
                        a.framework.as_str()
                    },
                    a.framework_version
                        .as_deref()
                        .map(|v| format!(" {v}"))
                        .unwrap_or_default()
                )),
                Span::styled("allocated ", theme::slot(0)),
                Span::raw(fmt_opt_bytes(a.allocated_bytes)),
                Span::raw(peak(a.allocated_peak_bytes).unwrap_or_default()),
                label(" · reserved"),
                Span::raw(fmt_opt_bytes(a.reserved_bytes)),
                Span::raw(peak(a.reserved_peak_bytes).unwrap_or_default()),
                label(" · cached"),
                Span::raw(fmt_opt_bytes(a.cached_bytes())),
            ];
            if let Some(n) = a.num_alloc_retries.filter(|n| *n > 0) {
                spans.push(label(" · retries"));
                spans.push(Span::styled(n.to_string(), theme::warning()));
            }
            if let Some(n) = a.num_ooms.filter(|n| *n > 0) {
                spans.push(label(" · OOMs"));
                spans.push(Span::styled(n.to_string(), theme::error()));
            }
            lines.push(Line::from(spans));
        }
        None => lines.push(Line::from(vec![label(
            "allocator split: unknown (start the job under `gpumon run` to see it)",
        )])),
    }
    lines
}

/// The y axis: a round top above the series' maximum, in MiB or GiB.
fn axis_top(max: u64) -> (f64, u64, &'static str) {
    let (unit, name) = if max >= 2 * GIB {
        (GIB, "GiB")
    } else {
        (MIB, "MiB")
    };
    let top = (max as f64 * 1.1 / unit as f64).ceil().max(1.0);
    (top, unit, name)
}

fn draw_chart(frame: &mut Frame, area: Rect, app: &App, d: &Details, now: SystemTime) {
    if area.height < 4 || area.width < 20 {
        return;
    }
    let window = app.history.window;
    let hist = app.history.process(d.gpu, d.pid);
    let since = hist.and_then(|h| h.since());
    let max = hist
        .and_then(|h| h.max(|p| p.gpu().max(p.reserved())))
        .or(d.last.gpu_memory_bytes)
        .unwrap_or(0);
    let (top, unit, unit_name) = axis_top(max);
    let mut header = format!(
        "GPU memory of pid {} over {}",
        d.pid,
        humantime::format_duration(window)
    );
    if let Some(t) = since {
        header.push_str(&format!(" · recorded since {}", clock(t)));
    }
    let colour = app.process_style(d.pid).unwrap_or_else(theme::history);
    let split = d.last.allocator.is_some();
    let legend: Vec<(&str, Style)> = if split {
        vec![
            ("── on the GPU (NVML)  ", colour),
            ("── reserved  ", theme::warning()),
            ("── allocated", Style::new()),
        ]
    } else {
        vec![("── on the GPU (NVML)", colour)]
    };
    let legend_w: usize = legend.iter().map(|(t, _)| t.chars().count()).sum();
    let [head, plot] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    frame
        .buffer_mut()
        .set_stringn(head.x, head.y, &header, head.width as usize, theme::dim());
    let lx = head.right().saturating_sub(legend_w as u16);
    if lx > head.x + header.chars().count() as u16 + 1 {
        let spans: Vec<Span> = legend
            .into_iter()
            .map(|(t, st)| Span::styled(t, st))
            .collect();
        frame
            .buffer_mut()
            .set_line(lx, head.y, &Line::from(spans), legend_w as u16);
    }
    let points = (plot.width as usize).saturating_sub(8) * 2;
    let series = |get: fn(&crate::model::history::ProcessPoint) -> Option<u64>| {
        hist.map_or_else(Vec::new, |h| {
            segments(
                &h.columns(now, window, points.max(1), get),
                window,
                unit as f64,
            )
        })
    };
    // NVML's total in the process's colour; the allocator's lines when it reports them.
    let mut lines = vec![(series(|p| p.gpu()), colour)];
    if split {
        lines.push((series(|p| p.reserved()), theme::warning()));
        lines.push((series(|p| p.allocated()), Style::new()));
    }
    let datasets: Vec<Dataset> = lines
        .iter()
        .flat_map(|(segments, style)| {
            segments.iter().map(|s| {
                Dataset::default()
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Line)
                    .style(*style)
                    .data(s)
            })
        })
        .collect();
    frame.render_widget(
        Chart::new(datasets).x_axis(time_axis(window)).y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(vec![
                    Line::from("0"),
                    Line::from(format!("{:.0}", top / 2.0)),
                    Line::from(format!("{top:.0} {unit_name}")),
                ])
                .style(theme::dim()),
        ),
        plot,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_counts_lines_as_a_word_wrap_does() {
        assert_eq!(wrapped_height("", 10), 1);
        assert_eq!(wrapped_height("aaaa bbbb", 9), 1);
        assert_eq!(wrapped_height("aaaa bbbbb", 9), 2);
        assert_eq!(wrapped_height("a 0123456789abcdefghij", 10), 3);
    }

    #[test]
    fn the_axis_rounds_up_in_the_right_unit() {
        assert_eq!(axis_top(30 * GIB), (33.0, GIB, "GiB"));
        assert_eq!(axis_top(500 * MIB), (550.0, MIB, "MiB"));
        assert_eq!(axis_top(0), (1.0, MIB, "MiB"));
    }
}
