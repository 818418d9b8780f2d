//! The dashboard's panels, one file each, drawn by [`super::ui`]'s layout; and what several
//! panels share (a popup's place, a panel's title).

pub mod details;
pub mod estimate;
pub mod footer;
pub mod gpu;
pub mod gpus;
pub mod header;
pub mod help;
pub mod host;
pub mod oom;
pub mod queue;
pub mod signal_dialog;
pub mod table;
pub mod users;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

/// Smallest terminal the dashboard draws into.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;

/// How the GPUs are laid out: `full` gives each its line, its gauge and a chart of `chart`
/// rows; otherwise one line each, and one chart of `chart` rows for the selected GPU.
pub struct GpuLayout {
    pub full: bool,
    pub chart: u16,
    /// Rows the GPUs take in all.
    pub rows: u16,
}

pub trait RenderInto {
    fn render_into(self, area: Rect, buf: &mut Buffer);
}

impl RenderInto for Line<'_> {
    fn render_into(self, area: Rect, buf: &mut Buffer) {
        use ratatui::widgets::Widget;
        self.render(area, buf);
    }
}

pub fn popup(area: Rect, w_pct: u16, h_pct: u16) -> Rect {
    let w = (area.width * w_pct / 100).max(MIN_WIDTH.min(area.width));
    let h = (area.height * h_pct / 100).max(MIN_HEIGHT.min(area.height));
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
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
pub fn panel_rect(area: Rect, percent_x: u16) -> Rect {
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
}
