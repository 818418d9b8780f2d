//! The estimate panel (`e`): the flags as typed, and the fit against the GPU it was opened on.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Text;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::super::app::App;
use super::super::theme;
use super::{panel_rect, panel_title};
use crate::model::Sample;

/// The estimate panel (`e`): the flags as typed, and the report against the GPU it was
/// opened on, with that GPU's free memory as it is now.
pub fn draw(frame: &mut Frame, area: Rect, app: &App, sample: &Sample) {
    let rect = panel_rect(area, 90);
    frame.render_widget(Clear, rect);
    let gpu = app.estimate.gpu;
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
    let typed = if app.estimate.text.is_empty() {
        Text::styled(super::super::app::ESTIMATE_HINT, theme::dim())
    } else {
        Text::raw(app.estimate.text.as_str())
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
    let text = match &app.estimate.inputs {
        _ if app.estimate.reading && app.estimate.text.contains("--torch") => {
            "tracing the model (one training step on fake tensors, in your Python)…".to_owned()
        }
        _ if app.estimate.reading => "reading the model's files…".to_owned(),
        None => "Type the run's flags above, as for `gpumon estimate`.".to_owned(),
        Some(Err(e)) => e.clone(),
        Some(Ok(estimated)) => {
            let gpus = crate::estimate::GpuFree::candidates(&sample.devices)
                .into_iter()
                .filter(|d| gpu.is_none_or(|g| d.index == g))
                .collect();
            crate::view::estimate::render(&estimated.report(Ok(gpus)))
        }
    };
    frame.render_widget(
        Paragraph::new(Text::raw(text))
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" report ")),
        report,
    );
}
