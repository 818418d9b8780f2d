//! One GPU on screen: its line of fields, its memory gauge, and its history charts.
//!
//! Fields have priorities and drop whole as the width shrinks (fan, power, temperature, util,
//! name, in that order), the memory figures last, so no field ever overwrites another. The
//! gauge stacks the processes that have a colour of their own (the largest), split into
//! allocated, cached and outside-the-framework shades when the allocator's split is known, then
//! the other processes together, memory used by no listed process, the driver's reservation
//! and free memory. The charts put memory on a 0–total axis in GiB and utilisation on 0–100%,
//! over the history window, with gaps where reads failed or the GPU stalled.

use std::time::{Duration, SystemTime};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Widget};

use super::super::app::App;
use super::super::theme;
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::history::{Column, DeviceHistory, Peak};
use crate::model::Device;
use crate::units::fmt_age;
use crate::units::{fmt_bytes, GIB};

/// Rows a history chart needs to be worth drawing (header, plot, time axis).
pub const MIN_CHART: u16 = 4;

pub fn clock(t: SystemTime) -> String {
    // humantime panics on a time before 1970 or after 9999: clamped into them.
    let last = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(253_402_300_799);
    let s = humantime::format_rfc3339_seconds(t.clamp(SystemTime::UNIX_EPOCH, last)).to_string();
    s.get(11..19).map_or(s.clone(), |hms| format!("{hms} UTC"))
}

/// "not responding for 12 s (last data 03:14:18 UTC)": a failed device's error, with when its
/// readings are from if it has stalled.
pub fn device_error(d: &Device, now: SystemTime) -> Option<String> {
    let e = d.error.as_ref()?;
    if !d.stalled {
        return Some(e.clone());
    }
    Some(match d.data_time(now) {
        Some(t) => format!("{e} (last data {})", clock(t)),
        None => format!("{e} (no data yet)"),
    })
}

/// "peak 71.2 GiB 0.4 s ago": the highest memory since the previous reading, read between
/// frames (`--peak-rate`), when it rose above the reading; `None` otherwise, and where it was
/// not measured.
pub fn peak_text(d: &Device, now: SystemTime) -> Option<String> {
    let p = d.peak?;
    if p.used_bytes <= d.memory.used_bytes? {
        return None;
    }
    let ago = now.duration_since(p.at).unwrap_or_default();
    let ago = if ago < Duration::from_secs(10) {
        format!("{:.1} s", ago.as_secs_f64())
    } else {
        fmt_age(ago.as_secs())
    };
    Some(format!("peak {} {ago} ago", fmt_bytes(p.used_bytes)))
}

/// "24.4 GiB / 79.6 GiB (31%)", the shared pool's figures in short where the GPU's memory
/// is the system's, or why there are no figures.
pub fn memory_figures(d: &Device) -> Span<'static> {
    memory_figures_in(d, true)
}

/// [`memory_figures`], the shared pool's in full unless `short`.
fn memory_figures_in(d: &Device, short: bool) -> Span<'static> {
    if let Some(split) = crate::model::unified::shared_split(d) {
        return crate::tui::shared::shared_figures(d, &split, short);
    }
    let m = &d.memory;
    match (m.used_bytes, m.total_bytes, m.used_fraction()) {
        (Some(u), Some(t), Some(share)) => Span::styled(
            format!(
                "{} / {} ({:.0}%)",
                fmt_bytes(u),
                fmt_bytes(t),
                share * 100.0
            ),
            if d.stale() {
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

/// A field of a GPU's line, dropped whole when it does not fit: lowest `priority` first.
struct Field {
    span: Span<'static>,
    priority: u8,
}

/// What fits of a line: the left fields, two spaces apart, and the right-aligned one.
struct Fitted {
    left: Vec<Span<'static>>,
    right: Option<Span<'static>>,
}

impl Fitted {
    /// Cells the left fields take, separators included.
    fn left_width(&self) -> usize {
        self.left
            .iter()
            .enumerate()
            .map(|(i, s)| s.width() + sep(i))
            .sum()
    }

    fn right_width(&self) -> usize {
        self.right.as_ref().map_or(0, Span::width)
    }

    /// The line in `width` cells, the right field flush right.
    fn line(self, width: usize) -> Line<'static> {
        let pad = width
            .saturating_sub(self.left_width() + self.right_width())
            .max(2);
        let mut spans = Vec::with_capacity(self.left.len() * 2 + 2);
        for (i, s) in self.left.into_iter().enumerate() {
            if i > 0 {
                spans.push(Span::raw(" ".repeat(sep(i))));
            }
            spans.push(s);
        }
        if let Some(r) = self.right {
            spans.push(Span::raw(" ".repeat(pad)));
            spans.push(r);
        }
        Line::from(spans)
    }
}

/// Cells before left field `i`: one after the index ("[0] NVIDIA…"), two between the others.
fn sep(i: usize) -> usize {
    match i {
        0 => 0,
        1 => 1,
        _ => 2,
    }
}

/// Keeps what fits in `width` cells of the `left` fields (two spaces apart) and the `right`
/// one (at least two spaces away), dropping the lowest priority first (the rightmost on a
/// tie). The first left field (the index) always stays.
fn fit(mut left: Vec<Field>, mut right: Option<Field>, width: usize) -> Fitted {
    loop {
        let used = left
            .iter()
            .enumerate()
            .map(|(i, f)| f.span.width() + sep(i))
            .sum::<usize>()
            + right.as_ref().map_or(0, |r| r.span.width() + 2);
        if used <= width {
            break;
        }
        let lowest = left
            .iter()
            .enumerate()
            .skip(1)
            .min_by_key(|(i, f)| (f.priority, usize::MAX - i))
            .map(|(i, f)| (i, f.priority));
        match (lowest, &right) {
            (Some((_, p)), Some(r)) if r.priority < p => right = None,
            (Some((i, _)), _) => {
                left.remove(i);
            }
            (None, Some(_)) => right = None,
            (None, None) => break,
        }
    }
    Fitted {
        left: left.into_iter().map(|f| f.span).collect(),
        right: right.map(|r| r.span),
    }
}

/// The GPU's line: index, name, temperature, util, power, fan (or its error), and the memory
/// figures on the right.
pub fn title_line(d: &Device, now: SystemTime, width: u16) -> Line<'static> {
    let field = |text: String, style: Style, priority: u8| Field {
        span: Span::styled(text, style),
        priority,
    };
    let mut left = vec![
        field(format!("[{}]", d.index), theme::header(), u8::MAX),
        field(
            d.name.clone().unwrap_or_else(|| "N/A".into()),
            Style::new(),
            5,
        ),
    ];
    let figures = |priority| Field {
        span: memory_figures_in(d, false),
        priority,
    };
    if let Some(e) = device_error(d, now) {
        left.push(field(e, theme::error(), 7));
        let right = d.stale().then(|| figures(4));
        return fit(left, right, width as usize).line(width as usize);
    }
    let temp_style = d
        .temperature_c
        .map_or(theme::dim(), |t| theme::level((t as f64 - 30.0) / 60.0));
    left.push(field(
        d.temperature_c.map_or("N/A".into(), |t| format!("{t}°C")),
        temp_style,
        3,
    ));
    left.push(field(
        format!(
            "util {}",
            d.utilization
                .gpu_percent
                .map_or("N/A".into(), |u| format!("{u}%"))
        ),
        Style::new(),
        4,
    ));
    if let Some(peak) = peak_text(d, now) {
        left.push(field(peak, theme::warning(), 5));
    }
    left.push(match (d.power_draw_w, d.power_limit_w) {
        (Some(p), Some(l)) => field(format!("{p:.0}/{l:.0} W"), Style::new(), 2),
        (Some(p), None) => field(format!("{p:.0} W"), Style::new(), 2),
        _ => field("power N/A".into(), theme::dim(), 2),
    });
    if let Some(f) = d.fan_percent {
        left.push(field(format!("fan {f}%"), Style::new(), 1));
    }
    if let Some(e) = &d.processes_error {
        left.push(field(e.clone(), theme::warning(), 1));
    }
    fit(left, Some(figures(6)), width as usize).line(width as usize)
}

/// One segment of a gauge.
struct Segment {
    bytes: u64,
    symbol: &'static str,
    style: Style,
}

/// Draws segments stacked over `total` in exactly `area.width` cells (cumulative rounding).
fn draw_segments(buf: &mut Buffer, area: Rect, total: u64, segments: &[Segment], stale: bool) {
    let w = area.width as f64;
    let total = total.max(1) as f64;
    let mut cum = 0u64;
    for s in segments {
        let start = ((cum as f64 / total) * w).round() as u16;
        cum += s.bytes;
        let end = (((cum as f64 / total) * w).round() as u16).min(area.width);
        let style = if stale { theme::stale() } else { s.style };
        for x in start..end {
            if let Some(cell) = buf.cell_mut((area.x + x, area.y)) {
                cell.set_symbol(s.symbol).set_style(style);
            }
        }
    }
}

/// The symbol and style of a breakdown part outside the device gauge's processes.
fn part_look(kind: &PartKind, process: Style) -> (&'static str, Style) {
    match kind {
        PartKind::Process { .. } | PartKind::ThisProcess | PartKind::Allocated => ("█", process),
        PartKind::Cached | PartKind::Reserved => ("▓", process),
        PartKind::NonFramework => ("▒", process),
        PartKind::OtherApps | PartKind::Unattributed | PartKind::Used => {
            ("▓", theme::unattributed())
        }
        PartKind::DriverReserved => ("▒", theme::reserved()),
        PartKind::Free => ("░", theme::free()),
        PartKind::Unaccounted => (" ", Style::new()),
    }
}

/// A stacked bar of any breakdown (the selected process's view), in `style` for its own
/// parts.
/// The line under a GPU's gauge that names who holds the memory its process list does not
/// explain: "unattributed 7.8 GiB held by: pids 4242, 4243 not listed (python, alice) · pid
/// 977 zombie (parent 311 must reap) · 3 unreadable (root can name them)".
pub fn holders_line(d: &Device, width: u16) -> Line<'static> {
    use crate::model::HolderReason;
    let head = match d.unattributed_bytes().filter(|u| *u > 0) {
        Some(u) => format!(" unattributed {} held by: ", fmt_bytes(u)),
        None => " holders: ".to_owned(),
    };
    let who = |h: &crate::model::Holder| {
        let what = h.command.as_deref().map(|c| {
            let c = c.split_whitespace().next().unwrap_or(c);
            c.rsplit('/').next().unwrap_or(c).to_owned()
        });
        match (what, &h.user) {
            (Some(c), Some(u)) => format!(" ({c}, {u})"),
            (Some(c), None) => format!(" ({c})"),
            (None, Some(u)) => format!(" ({u})"),
            (None, None) => String::new(),
        }
    };
    // Holders alike (the same reason, command and user: a job's workers) share one part.
    let mut groups: Vec<(HolderReason, String, Vec<String>)> = Vec::new();
    for h in &d.holders {
        let pid = h.pid.map_or_else(String::new, |p| p.to_string());
        let (label, pid) = match h.reason {
            HolderReason::Zombie => match (h.state.as_deref(), h.parent_pid) {
                (Some("Z"), Some(p)) => (format!("zombie{} (parent {p} must reap)", who(h)), pid),
                (_, Some(p)) => (format!("orphan of zombie {p}{}", who(h)), pid),
                _ => (format!("zombie{}", who(h)), pid),
            },
            HolderReason::NotListed => (format!("not listed{}", who(h)), pid),
            HolderReason::OtherNamespace => (
                "in another container".to_owned(),
                match h.bytes {
                    Some(b) => format!("{pid} ({})", fmt_bytes(b)),
                    None => pid,
                },
            ),
            HolderReason::Unreadable => (
                format!("{} unreadable (root can name them)", h.count),
                String::new(),
            ),
        };
        match groups
            .iter_mut()
            .find(|(r, l, _)| *r == h.reason && *l == label)
        {
            Some((_, _, pids)) => pids.push(pid),
            None => groups.push((h.reason, label, vec![pid])),
        }
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(_, label, pids)| {
            let pids: Vec<String> = pids.into_iter().filter(|p| !p.is_empty()).collect();
            match pids.len() {
                0 => label,
                1 => format!("pid {} {label}", pids[0]),
                _ => format!("pids {} {label}", pids.join(", ")),
            }
        })
        .collect();
    let mut text = head;
    let room = usize::from(width);
    let total = parts.len();
    for (i, p) in parts.iter().enumerate() {
        let sep = if i == 0 { "" } else { " · " };
        let rest = total - i - 1;
        let more = if rest > 0 {
            format!(" · +{rest} more")
        } else {
            String::new()
        };
        if text.chars().count() + sep.len() + p.chars().count() + more.chars().count() > room
            && i > 0
        {
            text.push_str(&format!(" · +{} more", total - i));
            break;
        }
        text.push_str(sep);
        text.push_str(p);
    }
    let style = if d.stale() {
        theme::stale()
    } else {
        theme::warning()
    };
    Line::from(Span::styled(text, style))
}

/// The line that says why a GPU may be sick, when something says so: the last Xid with its
/// age, meaning and the catalogue's action; a remapping pending or failed; uncorrected ECC
/// errors; the slowdowns in force. `None` for a healthy GPU.
pub fn health_line(d: &Device, now: SystemTime, width: u16) -> Option<Line<'static>> {
    let notes = d.health.notes(now);
    if notes.is_empty() {
        return None;
    }
    let stale = d.stale();
    let mut used = 0usize;
    let mut spans = Vec::new();
    for (i, n) in notes.into_iter().enumerate() {
        let text = format!("{}{}", if i == 0 { " " } else { " · " }, n.text);
        let w = text.chars().count();
        if used + w > usize::from(width) && i > 0 {
            break;
        }
        used += w;
        let style = match (stale, n.critical) {
            (true, _) => theme::stale(),
            (false, true) => theme::error(),
            (false, false) => theme::warning(),
        };
        spans.push(Span::styled(text, style));
    }
    Some(Line::from(spans))
}

/// The parent's gauge with MIG on: each MIG instance side by side, as wide as its share of
/// the GPU, with its own breakdown; memory in no instance (driver reserved, unpartitioned)
/// after them.
pub fn draw_mig_gauge(buf: &mut Buffer, area: Rect, d: &Device, app: &App, selected: Option<u32>) {
    let Some(total) = d.memory.total_bytes.filter(|t| *t > 0) else {
        draw_gauge(buf, area, d, app, selected);
        return;
    };
    let w = f64::from(area.width);
    let mut cum = 0u64;
    for m in &d.mig {
        let start = ((cum as f64 / total as f64) * w).round() as u16;
        cum = cum.saturating_add(m.memory.total_bytes.unwrap_or(0));
        let end = (((cum as f64 / total as f64) * w).round() as u16).min(area.width);
        if end <= start {
            continue;
        }
        let inst = m.as_device(d);
        draw_gauge(
            buf,
            Rect::new(area.x + start, area.y, end - start, 1),
            &inst,
            app,
            selected,
        );
        // A boundary between instances.
        if start > 0 {
            if let Some(cell) = buf.cell_mut((area.x + start, area.y)) {
                cell.set_symbol("▕");
            }
        }
    }
    let start = ((cum as f64 / total as f64) * w).round() as u16;
    let style = if d.stale() {
        theme::stale()
    } else {
        theme::reserved()
    };
    for x in start..area.width {
        if let Some(cell) = buf.cell_mut((area.x + x, area.y)) {
            cell.set_symbol("▒").set_style(style);
        }
    }
}

/// One MIG instance under its parent: "└ MIG 3g.40gb GI 1 · 14.8 GiB / 39.5 GiB (38%)" and
/// its breakdown gauge in the rest of the line.
pub fn draw_mig_line(
    buf: &mut Buffer,
    area: Rect,
    d: &Device,
    m: &crate::model::MigDevice,
    last: bool,
    app: &App,
    selected: Option<u32>,
) {
    let inst = m.as_device(d);
    let label = format!(
        " {} MIG {} GI {}{} ",
        if last { "└" } else { "├" },
        m.profile.as_deref().unwrap_or("?"),
        m.gpu_instance_id.map_or("?".into(), |g| g.to_string()),
        m.utilization
            .gpu_percent
            .map_or(String::new(), |u| format!(" util {u}%")),
    );
    let figures = format!("{} ", memory_figures(&inst).content);
    let width = usize::from(area.width);
    let used = label.chars().count() + figures.chars().count();
    buf.set_stringn(area.x, area.y, &label, width, theme::header());
    let room = width.saturating_sub(used);
    let fx = area.x + label.chars().count().min(width) as u16;
    buf.set_stringn(
        fx,
        area.y,
        &figures,
        width.saturating_sub(label.chars().count()),
        Style::new(),
    );
    if room >= 8 {
        let gx = fx + figures.chars().count() as u16;
        draw_gauge(
            buf,
            Rect::new(gx, area.y, room as u16, 1),
            &inst,
            app,
            selected,
        );
    }
}

pub fn draw_breakdown(buf: &mut Buffer, area: Rect, b: &Breakdown, style: Style, stale: bool) {
    let segments: Vec<Segment> = b
        .parts
        .iter()
        .filter_map(|p| {
            let (symbol, style) = part_look(&p.kind, style);
            Some(Segment {
                bytes: p.bytes?,
                symbol,
                style,
            })
        })
        .collect();
    draw_segments(buf, area, b.total, &segments, stale);
}

/// The allocator split of one process on `d`, when its allocator reported one that accounts
/// for all of its memory: allocated, cached, outside the framework.
fn split(d: &Device, pid: u32) -> Option<[u64; 3]> {
    let p = d.processes.iter().find(|p| p.pid == pid)?;
    p.allocator.as_ref()?;
    let b = Breakdown::process(&d.memory, p.memory())?;
    Some([
        b.get(PartKind::Allocated)?,
        b.get(PartKind::Cached)?,
        b.get(PartKind::NonFramework)?,
    ])
}

/// Whether any process on `d` has a known allocator split (its gauge then shows shades).
pub fn has_split(d: &Device) -> bool {
    d.processes.iter().any(|p| split(d, p.pid).is_some())
}

/// The device's memory gauge: coloured processes (in shades when split), the others together,
/// then used-but-unattributed, driver reserved and free.
pub fn draw_gauge(buf: &mut Buffer, area: Rect, d: &Device, app: &App, selected: Option<u32>) {
    let Some(b) = d.breakdown() else {
        if let Some(split) = crate::model::unified::shared_split(d) {
            draw_shared_gauge(buf, area, d, &split);
            return;
        }
        let why = d.error.as_deref().unwrap_or("memory N/A");
        buf.set_stringn(
            area.x,
            area.y,
            format!("── {why}: no data ──"),
            area.width as usize,
            theme::dim(),
        );
        return;
    };
    let mut segments = Vec::with_capacity(b.parts.len() + 8);
    let mut others = 0u64;
    let mut rest = Vec::new();
    for part in &b.parts {
        let Some(bytes) = part.bytes else { continue };
        match part.kind {
            PartKind::Process { pid } => {
                let Some(mut style) = app.process_style(pid) else {
                    others += bytes;
                    continue;
                };
                if Some(pid) == selected {
                    style = style.add_modifier(Modifier::BOLD);
                }
                match split(d, pid) {
                    Some([a, c, n]) if a + c + n == bytes => {
                        for (bytes, symbol) in [(a, "█"), (c, "▓"), (n, "▒")] {
                            segments.push(Segment {
                                bytes,
                                symbol,
                                style,
                            });
                        }
                    }
                    _ => segments.push(Segment {
                        bytes,
                        symbol: "█",
                        style,
                    }),
                }
            }
            kind => {
                let (symbol, style) = part_look(&kind, Style::new());
                rest.push(Segment {
                    bytes,
                    symbol,
                    style,
                });
            }
        }
    }
    segments.push(Segment {
        bytes: others,
        symbol: "█",
        style: theme::other_processes(),
    });
    segments.extend(rest);
    draw_segments(buf, area, b.total, &segments, d.stale());
    draw_peak_mark(buf, area, d, b.total);
    crate::tui::shared::draw_limit_mark(buf, area, d, b.total);
}

/// The gauge of a part whose memory is the system's (GB10, a Jetson): the system's memory,
/// split into what the GPU's processes hold (derived, in the charts' colour), what the rest of
/// the system uses (the host's, never counted as the GPU's), what the container's limit keeps
/// out of reach and what the system can still give. No peak mark: no peak is measured there.
fn draw_shared_gauge(
    buf: &mut Buffer,
    area: Rect,
    d: &Device,
    split: &crate::model::unified::SharedSplit,
) {
    let segments = [
        (split.gpu.unwrap_or(0), "█", theme::history()),
        (split.host, "▓", theme::unattributed()),
        (split.beyond_limit, "▒", theme::reserved()),
        (split.free, "░", theme::free()),
    ]
    .map(|(bytes, symbol, style)| Segment {
        bytes,
        symbol,
        style,
    });
    draw_segments(buf, area, split.total, &segments, d.stale());
    crate::tui::shared::draw_limit_mark(buf, area, d, split.total);
}

/// A mark on the gauge where used memory reached between frames, when that was above the
/// reading (a spike the bar itself does not show).
fn draw_peak_mark(buf: &mut Buffer, area: Rect, d: &Device, total: u64) {
    let (Some(p), Some(used)) = (d.peak, d.memory.used_bytes) else {
        return;
    };
    if p.used_bytes <= used || d.stale() || area.width == 0 {
        return;
    }
    let share = p.used_bytes.min(total) as f64 / total.max(1) as f64;
    let x = ((share * area.width as f64).ceil() as u16)
        .saturating_sub(1)
        .min(area.width - 1);
    if let Some(cell) = buf.cell_mut((area.x + x, area.y)) {
        cell.set_symbol("┃").set_style(theme::warning());
    }
}

/// A compact one-line GPU: index, memory figures, then util, temperature, name and a bar as
/// room allows.
pub fn draw_compact(
    buf: &mut Buffer,
    area: Rect,
    d: &Device,
    app: &App,
    index_width: usize,
    now: SystemTime,
) {
    let head = format!("[{:>index_width$}]", d.index);
    let name: String = d
        .name
        .as_deref()
        .unwrap_or("N/A")
        .trim_start_matches("NVIDIA ")
        .chars()
        .take(18)
        .collect();
    let header = |text: String| Field {
        span: Span::styled(text, theme::header()),
        priority: u8::MAX,
    };
    let plain = |text: String, priority| Field {
        span: Span::raw(text),
        priority,
    };
    let width = area.width as usize;
    if let Some(e) = device_error(d, now) {
        let fields = vec![
            header(head),
            plain(name, 5),
            Field {
                span: Span::styled(e, theme::error()),
                priority: 7,
            },
        ];
        buf.set_line(
            area.x,
            area.y,
            &fit(fields, None, width).line(width),
            area.width,
        );
        return;
    }
    let temp = d.temperature_c.map_or("N/A".into(), |t| format!("{t}°C"));
    let util = d
        .utilization
        .gpu_percent
        .map_or("N/A".into(), |u| format!("{u}%"));
    let mut fields = vec![
        header(head),
        plain(format!("{name:<18}"), 5),
        plain(format!("{temp:>5}"), 3),
        plain(format!("{util:>4}"), 4),
    ];
    if let Some((flag, critical)) = d.health.flag() {
        let style = if critical {
            theme::error()
        } else {
            theme::warning()
        };
        fields.push(Field {
            span: Span::styled(flag, style),
            priority: 6,
        });
    }
    if let Some(span) = crate::tui::shared::compact_limit(d) {
        fields.push(Field { span, priority: 2 });
    }
    // Figures right-aligned in a fixed width, so that the bars of all rows line up.
    let figures = memory_figures(d);
    let figures = Span::styled(format!("{:>26}", figures.content), figures.style);
    let fitted = fit(
        fields,
        Some(Field {
            span: figures,
            priority: 6,
        }),
        width,
    );
    // The bar takes the room between the fields and the figures, if that is 6 cells or more.
    let (left_w, right_w) = (fitted.left_width(), fitted.right_width());
    buf.set_line(area.x, area.y, &fitted.line(width), area.width);
    let free = width.saturating_sub(left_w + right_w + 3);
    if free >= 6 && right_w > 0 {
        let x = area.x + left_w as u16 + 1;
        let bar = Rect::new(x, area.y, free as u16, 1);
        if d.mig.is_empty() {
            draw_gauge(buf, bar, d, app, None);
        } else {
            draw_mig_gauge(buf, bar, d, app, None);
        }
    }
}

/// Points of a history series over `[-window, 0]` seconds, split where reads failed.
pub fn segments(cols: &[Column<u64>], window: Duration, scale: f64) -> Vec<Vec<(f64, f64)>> {
    let n = cols.len().max(1) as f64;
    let span = window.as_secs_f64();
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (i, c) in cols.iter().enumerate() {
        let x = -span + (i as f64 + 0.5) * span / n;
        match c {
            Column::Value(v) => {
                if let Some(s) = out.last_mut() {
                    s.push((x, *v as f64 / scale));
                }
            }
            // Before the first sample or a failed read: the line stops.
            Column::Empty | Column::Gap => {
                if out.last().is_some_and(|s| !s.is_empty()) {
                    out.push(Vec::new());
                }
            }
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// The x axis of a history chart: `-window` to now, with a middle tick.
pub fn time_axis(window: Duration) -> Axis<'static> {
    Axis::default()
        .bounds([-window.as_secs_f64(), 0.0])
        .labels(time_labels(window))
        .style(theme::dim())
}

fn time_labels(window: Duration) -> Vec<Line<'static>> {
    let half = Duration::from_secs(window.as_secs() / 2);
    vec![
        Line::from(format!("-{}", humantime::format_duration(window))),
        Line::from(format!("-{}", humantime::format_duration(half))),
        Line::from("now"),
    ]
}

/// What a history chart's memory series is: the GPU-held figure ([`History::record`]
/// records [`crate::model::unified::gpu_held_of`]), said as derived where it is the
/// processes' sum, and as unknown where there is no such figure now (a Jetson read without
/// NVML lists no process).
///
/// [`History::record`]: crate::model::history::History::record
fn history_subject(d: &Device) -> &'static str {
    use crate::model::unified::{gpu_held_of, method_of, MemoryMethod};
    match (method_of(d), gpu_held_of(d)) {
        (Some(MemoryMethod::ProcessSum), Some(_)) => "GPU-held memory (derived)",
        (Some(MemoryMethod::ProcessSum), None) => "GPU-held memory (N/A: no process figures)",
        _ => "memory",
    }
}

/// The top of a history chart's memory axis: the GPU's total, or the shared pool's where the
/// GPU's memory is the system's.
fn history_total(d: &Device) -> Option<u64> {
    d.memory
        .total_bytes
        .or_else(|| crate::model::unified::shared_split(d).map(|s| s.total))
}

/// On the shared pool's chart ([`history_total`]), the most the GPU could hold at each time:
/// what it held plus what the system could still give (the headroom), a line over the
/// GPU-held area; the gap between them is the headroom, and the host's use taking memory
/// brings the line down, never the area up. Empty elsewhere (a discrete or coherent GPU's
/// chart is of its own memory), and where either figure is unknown.
fn ceiling_series(d: &Device, app: &App, now: SystemTime, width: u16) -> Vec<Vec<(f64, f64)>> {
    let Some(h) = app.history.device(d.index) else {
        return Vec::new();
    };
    if crate::model::unified::shared_split(d).is_none() {
        return Vec::new();
    }
    let window = app.history.window;
    let points = (width as usize).saturating_sub(8) * 2;
    let cols = h.columns(now, window, points.max(1), |p| {
        Some(p.used()?.saturating_add(p.headroom()?))
    });
    segments(&cols, window, GIB as f64)
}

/// The history of `d` in `area` (at least [`MIN_CHART`] rows): a header with the window's
/// peak (and the gauge's legend when an allocator split is shown), memory as an area on a
/// 0–total GiB axis on the left, utilisation on a 0–100% axis on the right.
pub fn draw_history(
    buf: &mut Buffer,
    area: Rect,
    d: &Device,
    app: &App,
    now: SystemTime,
    named: bool,
) {
    if area.height < MIN_CHART || area.width < 20 {
        return;
    }
    let chart = HistoryChart {
        d,
        hist: app.history.device(d.index),
        window: app.history.window,
        now,
    };
    let mem_w = area.width * 7 / 10;
    let mem = Rect::new(area.x, area.y + 1, mem_w, area.height - 1);
    let util = Rect::new(
        area.x + mem_w + 1,
        area.y + 1,
        area.width.saturating_sub(mem_w + 1),
        area.height - 1,
    );
    // Header: what the chart shows and its peak; the gauge's legend on the right.
    let peak = chart.hist.and_then(|h| h.peak_used());
    let ceiling = ceiling_series(d, app, now, mem.width);
    let title = if named {
        format!("[{}] {}", d.index, history_subject(d))
    } else {
        history_subject(d).to_owned()
    };
    let header = history_header(
        &title,
        !ceiling.is_empty(),
        peak,
        chart.window,
        now,
        mem_w as usize,
    );
    buf.set_stringn(area.x, area.y, &header, mem_w as usize, theme::dim());
    let legend = legend(has_split(d), util.width);
    buf.set_stringn(util.x, area.y, legend, util.width as usize, theme::dim());
    chart.draw_memory(buf, mem, peak, &ceiling);
    if util.width >= 12 {
        chart.draw_util(buf, util);
    }
}

/// What both history charts of one GPU draw from.
struct HistoryChart<'a> {
    d: &'a Device,
    hist: Option<&'a DeviceHistory>,
    window: Duration,
    now: SystemTime,
}

/// The header says what it can in `width`: what the chart shows (`title`) over the window, the
/// key of the shared pool's ceiling line (`ceiling`), the peak, when, how long ago.
fn history_header(
    title: &str,
    ceiling: bool,
    peak: Option<Peak>,
    window: Duration,
    now: SystemTime,
    width: usize,
) -> String {
    let mut parts = vec![format!(
        "{title} over {}",
        humantime::format_duration(window)
    )];
    if ceiling {
        parts.push(" · ⠤ + what the system can still give".to_owned());
    }
    if let Some(p) = peak {
        let ago = now.duration_since(p.at).map(|d| d.as_secs()).unwrap_or(0);
        parts.push(format!(" · peak {}", fmt_bytes(p.value)));
        parts.push(format!(" at {}", clock(p.at)));
        parts.push(format!(" ({} ago)", fmt_age(ago)));
    }
    while parts.len() > 1 && parts.concat().chars().count() > width {
        parts.pop();
    }
    parts.concat()
}

/// The gauge's legend above the utilisation chart when the allocator's split is shown, as
/// long as `width` allows; else the chart's name.
fn legend(split: bool, width: u16) -> &'static str {
    match (split, width) {
        (true, 40..) => "█ allocated ▓ cached ▒ outside framework",
        (true, 30..) => "█ allocated ▓ cached ▒ outside",
        (true, _) => "█alloc ▓cache ▒outside",
        (false, _) => "util",
    }
}

/// The window's peak as a point on the memory chart (GiB, seconds before now); `None` when it
/// is outside the window or in the future.
fn peak_point(peak: Option<Peak>, now: SystemTime, window: Duration) -> Option<(f64, f64)> {
    let p = peak?;
    let ago = now.duration_since(p.at).ok()?.as_secs_f64();
    (ago <= window.as_secs_f64()).then(|| (-ago, p.value as f64 / GIB as f64))
}

/// The memory chart's y labels: 0, the middle when there is room, the total in GiB.
fn gib_labels(total_gib: f64, height: u16) -> Vec<Line<'static>> {
    if height >= 6 {
        vec![
            Line::from("0"),
            Line::from(format!("{:.0}", total_gib / 2.0)),
            Line::from(format!("{total_gib:.0} GiB")),
        ]
    } else {
        vec![Line::from("0"), Line::from(format!("{total_gib:.0} GiB"))]
    }
}

impl HistoryChart<'_> {
    fn style(&self, live: Style) -> Style {
        if self.d.stale() {
            theme::stale()
        } else {
            live
        }
    }

    /// Memory, in GiB from 0 to the GPU's total (the shared pool's on a part whose memory is
    /// the system's, with its `ceiling` line), with the window's peak as a dot.
    fn draw_memory(
        &self,
        buf: &mut Buffer,
        mem: Rect,
        peak: Option<Peak>,
        ceiling: &[Vec<(f64, f64)>],
    ) {
        let total = history_total(self.d)
            .or(peak.map(|p| p.value))
            .unwrap_or(GIB)
            .max(1);
        let points = (mem.width as usize).saturating_sub(8) * 2;
        let cols = self.hist.map_or_else(Vec::new, |h| {
            // Each column is the highest of its readings and the peaks between them.
            h.columns(self.now, self.window, points.max(1), |p| p.top())
        });
        let mem_series = segments(&cols, self.window, GIB as f64);
        let total_gib = total as f64 / GIB as f64;
        let style = self.style(theme::history());
        let mut datasets: Vec<Dataset> = mem_series
            .iter()
            .map(|s| {
                Dataset::default()
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Area)
                    .fill_to_y(0.0)
                    .style(style)
                    .data(s)
            })
            .collect();
        let ceiling_style = self.style(theme::free());
        datasets.extend(ceiling.iter().map(|s| {
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(ceiling_style)
                .data(s)
        }));
        let peak_point: Vec<(f64, f64)> = peak_point(peak, self.now, self.window)
            .into_iter()
            .collect();
        datasets.push(
            Dataset::default()
                .marker(Marker::Dot)
                .graph_type(GraphType::Scatter)
                .style(theme::peak())
                .data(&peak_point),
        );
        Chart::new(datasets)
            .x_axis(time_axis(self.window))
            .y_axis(
                Axis::default()
                    .bounds([0.0, total_gib])
                    .labels(gib_labels(total_gib, mem.height))
                    .style(theme::dim()),
            )
            .render(mem, buf);
    }

    /// Utilisation, 0–100%.
    fn draw_util(&self, buf: &mut Buffer, util: Rect) {
        let points = (util.width as usize).saturating_sub(5) * 2;
        let cols = self.hist.map_or_else(Vec::new, |h| {
            h.columns(self.now, self.window, points.max(1), |p| {
                p.util().map(u64::from)
            })
        });
        let util_series = segments(&cols, self.window, 1.0);
        let style = self.style(theme::level(0.0));
        let datasets: Vec<Dataset> = util_series
            .iter()
            .map(|s| {
                Dataset::default()
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Line)
                    .style(style)
                    .data(s)
            })
            .collect();
        Chart::new(datasets)
            .x_axis(
                Axis::default()
                    .bounds([-self.window.as_secs_f64(), 0.0])
                    .labels([Line::from(""), Line::from("now")])
                    .style(theme::dim()),
            )
            .y_axis(
                Axis::default()
                    .bounds([0.0, 100.0])
                    .labels([Line::from("0"), Line::from("100%")])
                    .style(theme::dim()),
            )
            .render(util, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn the_history_header_drops_whole_parts_to_fit() {
        let peak = Some(Peak {
            value: 3 * GIB,
            at: at(T0),
        });
        let window = Duration::from_secs(300);
        let now = at(T0 + 90);
        let full = history_header("[2] memory", false, peak, window, now, 200);
        assert_eq!(
            full,
            format!(
                "[2] memory over 5m · peak 3.0 GiB at {} ({} ago)",
                clock(at(T0)),
                fmt_age(90)
            )
        );
        let cut = history_header(
            "[2] memory",
            false,
            peak,
            window,
            now,
            full.chars().count() - 1,
        );
        assert_eq!(
            cut,
            format!("[2] memory over 5m · peak 3.0 GiB at {}", clock(at(T0)))
        );
        // The first part stays whatever the width; unnamed, no index.
        assert_eq!(
            history_header("memory", false, peak, window, now, 3),
            "memory over 5m"
        );
        assert_eq!(
            history_header("memory", false, None, window, now, 200),
            "memory over 5m"
        );
        // A shared pool's chart keys its ceiling line before the peak, and drops it first.
        let shared = history_header("GPU-held memory (derived)", true, None, window, now, 200);
        assert_eq!(
            shared,
            "GPU-held memory (derived) over 5m · ⠤ + what the system can still give"
        );
        assert_eq!(
            history_header("GPU-held memory (derived)", true, None, window, now, 40),
            "GPU-held memory (derived) over 5m"
        );
    }

    #[test]
    fn the_legend_shortens_with_the_width() {
        assert_eq!(legend(true, 40), "█ allocated ▓ cached ▒ outside framework");
        assert_eq!(legend(true, 39), "█ allocated ▓ cached ▒ outside");
        assert_eq!(legend(true, 29), "█alloc ▓cache ▒outside");
        assert_eq!(legend(false, 80), "util");
    }

    #[test]
    fn the_peak_is_a_point_only_inside_the_window() {
        let window = Duration::from_secs(60);
        let peak = |secs| {
            Some(Peak {
                value: 2 * GIB,
                at: at(secs),
            })
        };
        assert_eq!(
            peak_point(peak(T0 - 30), at(T0), window),
            Some((-30.0, 2.0))
        );
        assert_eq!(peak_point(peak(T0 - 61), at(T0), window), None);
        assert_eq!(peak_point(peak(T0 + 1), at(T0), window), None);
        assert_eq!(peak_point(None, at(T0), window), None);
    }

    #[test]
    fn the_gib_axis_has_a_middle_label_from_six_rows() {
        let texts =
            |h| -> Vec<String> { gib_labels(80.0, h).iter().map(|l| l.to_string()).collect() };
        assert_eq!(texts(6), ["0", "40", "80 GiB"]);
        assert_eq!(texts(5), ["0", "80 GiB"]);
    }
}
