//! The OOM panel (a paste): the report on the message, and the live state of the GPU it names.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Text;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::super::app::App;
use super::super::theme;
use super::{panel_rect, panel_title};
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::{Device, Sample};
use crate::oom::render::{render_oom_repeated, LOOKED_FOR};
use crate::text::Paint;
use crate::units::fmt_opt_bytes;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, sample: &Sample) {
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
    let found = app
        .oom
        .analysis
        .as_ref()
        .and_then(|a| a.main().map(|m| (a, m)));
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
    let lines: Vec<&str> = app.oom.text.lines().collect();
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
        .style(if app.oom.text.is_empty() {
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
        None if app.oom.text.trim().is_empty() => "The report appears here.".into(),
        None => format!("No out-of-memory error found yet.\nLooked for: {LOOKED_FOR}."),
    };
    frame.render_widget(
        Paragraph::new(Text::raw(text))
            .wrap(Wrap { trim: false })
            .scroll((app.oom.scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" report (↑↓ PgUp PgDn scroll) "),
            ),
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
