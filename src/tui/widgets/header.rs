//! The header line: what is shown (the host, the time, a replay's place and speed, a fleet node), the interval, and what the header must say.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::app::App;
use super::super::theme;
use super::gpu::clock;
use super::RenderInto;

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

pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
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
        if s.pids_hidden() {
            spans.push(sep());
            spans.push(Span::styled(
                crate::view::once::PIDS_HIDDEN,
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
