//! The fleet view: one row per node (from [`crate::feed::fleet`]'s poller), its keys and its
//! drawing; a node opened (Enter) is shown in the ordinary dashboard, Esc goes back.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::theme;
use crate::feed::fleet::Nodes;
use crate::feed::remote::Endpoint;
use crate::model::fleet::{Filter, GpuState, GpuSummary, NodeSummary, RowRef, SortBy};
use crate::units::fmt_bytes;

/// The longest filter kept, in bytes.
const MAX_FILTER: usize = 200;

/// One node's row: its last good summary, and why it could not be read this time.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub address: String,
    pub summary: Option<NodeSummary>,
    pub error: Option<String>,
    /// When it last answered.
    pub read_at: Option<Instant>,
}

/// The fleet view's state.
#[derive(Debug, Default)]
pub struct View {
    pub rows: Vec<Row>,
    /// The place of the selected row among those shown.
    pub selected: usize,
    pub first: usize,
    pub sort: SortBy,
    pub filter_text: String,
    pub filter: Filter,
    pub filter_error: Option<String>,
    /// The filter is being typed.
    pub typing: bool,
    /// The node open in the dashboard (its place in `rows`).
    pub open: Option<usize>,
    /// Why the open node's last sample could not be read.
    pub open_error: Option<String>,
    /// When the open node's last sample came.
    pub open_read_at: Option<Instant>,
    /// The open node's history from a Prometheus: the time it spans, or why it could not be
    /// read (`None`: not asked for, or not come yet).
    pub open_history: Option<Result<Duration, String>>,
    /// Where the rows come from, for the header: `None` for listed nodes, else the
    /// Prometheus's address.
    pub prometheus: Option<String>,
    /// Why the Prometheus could not be read last time.
    pub source_error: Option<String>,
}

/// What a key in the fleet view does.
#[derive(Debug, PartialEq, Eq)]
pub enum Key {
    None,
    Redraw,
    Quit,
    /// Open this row's node.
    Open(usize),
}

impl View {
    /// The view of the rows `nodes` will give: listed nodes' rows at once, a Prometheus's
    /// as its targets come.
    pub fn for_nodes(nodes: &Nodes) -> View {
        match nodes {
            Nodes::Listed(eps) => View::new(eps),
            Nodes::Prometheus(source) => View {
                prometheus: Some(format!("{}:{}", source.endpoint.host, source.endpoint.port)),
                ..View::default()
            },
        }
    }

    pub fn new(endpoints: &[Endpoint]) -> View {
        View {
            rows: endpoints
                .iter()
                .map(|e| Row {
                    name: e.name.clone(),
                    address: format!("{}:{}", e.host, e.port),
                    summary: None,
                    error: None,
                    read_at: None,
                })
                .collect(),
            ..View::default()
        }
    }

    /// Takes a frame's rows and summaries; the open node's sample is the caller's.
    pub fn take(&mut self, frame_rows: Vec<(String, String)>, source_error: Option<String>) {
        for (name, address) in frame_rows {
            self.rows.push(Row {
                name,
                address,
                summary: None,
                error: None,
                read_at: None,
            });
        }
        if self.prometheus.is_some() {
            self.source_error = source_error;
        }
    }

    /// Takes a frame's summaries.
    pub fn update(&mut self, updates: Vec<(usize, Result<NodeSummary, String>, Duration)>) {
        let now = Instant::now();
        for (i, r, _) in updates {
            let Some(row) = self.rows.get_mut(i) else {
                continue;
            };
            match r {
                Ok(s) => {
                    row.summary = Some(s);
                    row.error = None;
                    row.read_at = Some(now);
                }
                // The last good figures stay, marked with their age.
                Err(e) => row.error = Some(e),
            }
        }
    }

    /// The rows shown, in order: places in `rows`.
    pub fn shown(&self) -> Vec<usize> {
        let refs: Vec<RowRef<'_>> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| RowRef {
                name: &r.name,
                given: i,
                summary: r.summary.as_ref(),
                unreadable: r.error.is_some(),
            })
            .collect();
        crate::model::fleet::order(&refs, self.sort)
            .into_iter()
            .filter(|&i| self.filter.matches(&refs[i]))
            .collect()
    }

    /// Text pasted (or typed faster than keys: a terminal without bracketed paste) into the
    /// filter while it is being typed; its first line, bounded. `false`: not taken.
    pub fn on_paste(&mut self, text: &str) -> bool {
        // `/` and what follows it, come together as one burst.
        let text = match (self.typing, text.strip_prefix('/')) {
            (true, _) => text,
            (false, Some(rest)) => {
                self.typing = true;
                rest
            }
            (false, None) => return false,
        };
        let mut lines = text.split(['\r', '\n']);
        for c in lines.next().unwrap_or("").chars() {
            if self.filter_text.len() + c.len_utf8() > MAX_FILTER {
                break;
            }
            self.filter_text.push(c);
        }
        // A line end in the burst is Enter: the filter is kept.
        if lines.next().is_some() {
            self.typing = false;
        }
        self.parse_filter();
        true
    }

    fn parse_filter(&mut self) {
        match Filter::parse(&self.filter_text) {
            Ok(f) => {
                self.filter = f;
                self.filter_error = None;
            }
            // The last filter that made sense stays while the new one is typed.
            Err(e) => self.filter_error = Some(e),
        }
        if self.filter_text.is_empty() {
            self.filter = Filter::default();
            self.filter_error = None;
        }
        self.selected = 0;
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Key {
        if self.typing {
            match key.code {
                KeyCode::Esc => {
                    self.filter_text.clear();
                    self.typing = false;
                }
                KeyCode::Enter => self.typing = false,
                KeyCode::Backspace => {
                    self.filter_text.pop();
                }
                KeyCode::Char(c) if self.filter_text.len() < MAX_FILTER => self.filter_text.push(c),
                _ => return Key::None,
            }
            self.parse_filter();
            return Key::Redraw;
        }
        let n = self.shown().len();
        match key.code {
            KeyCode::Char('q') | KeyCode::F(10) => return Key::Quit,
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(n.saturating_sub(1))
            }
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::PageDown => self.selected = (self.selected + 10).min(n.saturating_sub(1)),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::Home | KeyCode::Char('g') => self.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.selected = n.saturating_sub(1),
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                self.selected = 0;
            }
            KeyCode::Char('/') => self.typing = true,
            KeyCode::Esc if !self.filter_text.is_empty() => {
                self.filter_text.clear();
                self.filter = Filter::default();
                self.filter_error = None;
                self.selected = 0;
            }
            KeyCode::Enter => {
                return match self.shown().get(self.selected) {
                    Some(&i) => Key::Open(i),
                    None => Key::None,
                }
            }
            _ => return Key::None,
        }
        Key::Redraw
    }
}

/// The fleet's totals over the rows read: nodes, GPUs, memory, idle GPUs and idle holds.
fn totals(view: &View) -> String {
    let (mut gpus, mut idle, mut used, mut total, mut held, mut down) = (0, 0, 0u64, 0u64, 0u64, 0);
    for r in &view.rows {
        if r.error.is_some() || r.summary.is_none() {
            down += 1;
        }
        let Some(s) = &r.summary else { continue };
        gpus += s.gpus.len();
        idle += s.gpus.iter().filter(|g| g.idle()).count();
        let (u, t) = s.memory();
        used += u;
        total += t;
        held += s.gpus.iter().filter_map(|g| g.idle_bytes).sum::<u64>();
    }
    format!(
        "{} node{}{} · {gpus} GPUs, {idle} idle · {} used of {}, {} free · {} held at 0% SM",
        view.rows.len(),
        if view.rows.len() == 1 { "" } else { "s" },
        if down > 0 {
            format!(" ({down} not read)")
        } else {
            String::new()
        },
        fmt_bytes(used),
        fmt_bytes(total),
        fmt_bytes(total.saturating_sub(used)),
        fmt_bytes(held),
    )
}

/// The width of one GPU's bar in a row.
const BAR: u16 = 6;

/// One GPU as a small bar in the breakdown's colours: busy processes, idle holds, used by no
/// listed process, driver reserve; free is the rest.
fn gpu_bar(g: &GpuSummary) -> Vec<Span<'static>> {
    let w = usize::from(BAR);
    let total = match (g.total_bytes, g.state) {
        (_, GpuState::Failed) => {
            return vec![
                Span::styled(format!("{:^w$}", "lost"), theme::error()),
                Span::raw(" "),
            ]
        }
        (Some(t), _) => t,
        // Stalled before it ever answered.
        (None, _) => {
            return vec![
                Span::styled(format!("{:^w$}", "hung"), theme::warning()),
                Span::raw(" "),
            ]
        }
    };
    let cells = |b: Option<u64>| -> usize {
        match (b, total) {
            (Some(b), t) if t > 0 => ((b as f64 / t as f64) * w as f64).round() as usize,
            _ => 0,
        }
    };
    let stale = g.state != GpuState::Ok;
    let parts = [
        (cells(g.busy_bytes), theme::slot(0)),
        (cells(g.idle_bytes), theme::warning()),
        (cells(g.unattributed_bytes), theme::unattributed()),
        (cells(g.reserved_bytes), theme::reserved()),
    ];
    let mut spans = Vec::new();
    let mut left = w;
    for (n, style) in parts {
        let n = n.min(left);
        if n > 0 {
            let style = if stale { theme::stale() } else { style };
            spans.push(Span::styled("█".repeat(n), style));
            left -= n;
        }
    }
    // Used but unsplit (no per-process figures): the used share as a whole.
    let used_cells = cells(g.used_bytes).min(w);
    if left + used_cells > w {
        let n = used_cells - (w - left);
        spans.push(Span::styled("█".repeat(n), theme::other_processes()));
        left -= n;
    }
    spans.push(Span::styled("░".repeat(left), theme::free()));
    spans.push(Span::raw(" "));
    spans
}

fn age(d: Duration) -> String {
    crate::units::fmt_age(d.as_secs())
}

/// Draws the fleet: totals, a header, the rows that fit, and the filter or the keys.
pub fn draw(buf: &mut Buffer, area: Rect, view: &mut View, interval: Duration) {
    let line = |buf: &mut Buffer, y: u16, l: Line<'_>| {
        if y < area.y + area.height {
            l.render(Rect::new(area.x, y, area.width, 1), buf);
        }
    };
    line(buf, area.y, title_line(view, interval));
    let shown = view.shown();
    view.selected = view.selected.min(shown.len().saturating_sub(1));
    let name_w = name_width(&view.rows);
    let head = format!(
        "{:<name_w$}  {:<9} {:>4} {:>17}  {:<20} GPUs (busy · idle-held · other · free)",
        "NODE", "STATE", "UTIL", "MEMORY", "TOP USER"
    );
    line(buf, area.y + 1, Line::styled(head, theme::dim()));
    let rows_h = area.height.saturating_sub(3) as usize;
    view.scroll_to_selected(rows_h);
    let now = Instant::now();
    for (k, &i) in shown.iter().skip(view.first).take(rows_h).enumerate() {
        let mut l = row_line(&view.rows[i], name_w, now);
        if k + view.first == view.selected {
            l = l.patch_style(theme::selected());
        }
        line(buf, area.y + 2 + k as u16, l);
    }
    if shown.is_empty() {
        line(buf, area.y + 2, no_row_line(view));
    }
    let footer = area.y + area.height.saturating_sub(1);
    line(buf, footer, footer_line(view));
}

impl View {
    /// Moves the first row shown so that the selected one is among the `rows_h` that fit.
    fn scroll_to_selected(&mut self, rows_h: usize) {
        if self.selected < self.first {
            self.first = self.selected;
        } else if rows_h > 0 && self.selected >= self.first + rows_h {
            self.first = self.selected + 1 - rows_h;
        }
    }
}

/// The top line: the source (and its error), the fleet's totals, the polling interval.
fn title_line(view: &View, interval: Duration) -> Line<'static> {
    Line::from(vec![
        Span::styled("gpumon fleet", theme::header()),
        Span::styled(" │ ", theme::dim()),
        match (&view.prometheus, &view.source_error) {
            (Some(p), Some(e)) => Span::styled(format!("{p}: {e} │ "), theme::error()),
            (Some(p), None) => Span::styled(format!("from {p} │ "), theme::dim()),
            (None, _) => Span::raw(""),
        },
        Span::raw(totals(view)),
        Span::styled(" │ ", theme::dim()),
        Span::raw(format!("every {}", humantime::format_duration(interval))),
    ])
}

/// The name column's width: the longest name, from 4 to 24 characters.
fn name_width(rows: &[Row]) -> usize {
    rows.iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 24)
}

/// A node's state word and its style: down (and for how long), not read yet, no driver, GPUs
/// lost or stalled, an Xid, or ok.
fn node_state(r: &Row, now: Instant) -> (String, Style) {
    match (&r.error, &r.summary) {
        (Some(_), _) => (
            match r.read_at {
                Some(t) => format!("down {}", age(now - t)),
                None => "down".to_owned(),
            },
            theme::error(),
        ),
        (None, None) => ("…".to_owned(), theme::dim()),
        (None, Some(s)) if s.error.is_some() => ("no driver".to_owned(), theme::error()),
        (None, Some(s)) if s.failed() > 0 => (format!("{} lost", s.failed()), theme::error()),
        (None, Some(s)) if s.stalled() > 0 => {
            (format!("{} stalled", s.stalled()), theme::warning())
        }
        (None, Some(s)) if s.gpus.iter().any(|g| g.last_xid.is_some()) => {
            ("xid".to_owned(), theme::warning())
        }
        (None, Some(_)) => ("ok".to_owned(), Style::new()),
    }
}

/// One node's row: name, state, mean utilisation, memory, top user, then a bar per GPU and
/// why it could not be read.
fn row_line(r: &Row, name_w: usize, now: Instant) -> Line<'static> {
    let name: String = r.name.chars().take(name_w).collect();
    let (state, state_style) = node_state(r, now);
    let s = r.summary.as_ref();
    let util = s
        .and_then(NodeSummary::mean_util)
        .map_or_else(|| "N/A".to_owned(), |u| format!("{u}%"));
    let mem = s.map_or_else(String::new, |s| {
        let (u, t) = s.memory();
        format!("{}/{}", fmt_bytes(u), fmt_bytes(t))
    });
    let top = s
        .and_then(|s| s.top_user.as_ref())
        .map_or_else(String::new, |t| {
            let u: String = t.user.chars().take(10).collect();
            format!("{u} {}", fmt_bytes(t.bytes))
        });
    let body_style = if r.error.is_some() {
        theme::stale()
    } else {
        Style::new()
    };
    let mut spans = vec![
        Span::styled(format!("{name:<name_w$}  "), body_style),
        Span::styled(format!("{state:<9} "), state_style),
        Span::styled(format!("{util:>4} {mem:>17}  {top:<20} "), body_style),
    ];
    if let Some(s) = s {
        for g in &s.gpus {
            spans.extend(gpu_bar(g));
        }
    }
    if let Some(e) = &r.error {
        spans.push(Span::styled(e.clone(), theme::error()));
    }
    Line::from(spans)
}

/// No row at all is not a filter's doing: say why (the source's error), or that the first
/// answers are awaited.
fn no_row_line(view: &View) -> Line<'static> {
    match (&view.source_error, view.rows.is_empty()) {
        (Some(e), true) => Line::styled(format!("no node: {e}"), theme::error()),
        (None, true) => Line::styled("no node yet", theme::dim()),
        (_, false) => Line::styled("no node matches the filter", theme::dim()),
    }
}

/// The bottom line: the filter while it is typed or kept, else the keys.
fn footer_line(view: &View) -> Line<'static> {
    if view.typing || !view.filter_text.is_empty() {
        let mut spans = vec![
            Span::styled("filter: ", theme::header()),
            Span::raw(view.filter_text.clone()),
            Span::styled(
                if view.typing {
                    "▏  free>=40G · idle · down · user:NAME · a name · Enter keep · Esc clear"
                } else {
                    "  (Esc clears)"
                },
                theme::dim(),
            ),
        ];
        if let Some(e) = &view.filter_error {
            spans.push(Span::styled(format!("  {e}"), theme::error()));
        }
        Line::from(spans)
    } else {
        Line::from(vec![
            Span::styled("q", theme::header()),
            Span::raw(" quit  "),
            Span::styled("↑↓", theme::header()),
            Span::raw(" select  "),
            Span::styled("Enter", theme::header()),
            Span::raw(" open the node  "),
            Span::styled("s", theme::header()),
            Span::raw(format!(" sort ({})  ", view.sort.label())),
            Span::styled("/", theme::header()),
            Span::raw(" filter"),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fleet::TopUser;
    use crossterm::event::KeyModifiers;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    const GIB: u64 = 1 << 30;

    fn gpu(index: u32, used: u64, idle: u64, state: GpuState) -> GpuSummary {
        GpuSummary {
            index,
            total_bytes: Some(80 * GIB),
            used_bytes: Some(used * GIB),
            free_bytes: Some((80 - used) * GIB),
            reserved_bytes: Some(GIB / 2),
            busy_bytes: Some((used - idle) * GIB),
            idle_bytes: Some(idle * GIB),
            unattributed_bytes: Some(0),
            util_percent: Some(if used > idle { 90 } else { 0 }),
            processes: u32::from(used > 0),
            state,
            ..GpuSummary::default()
        }
    }

    fn view() -> View {
        let eps: Vec<Endpoint> = ["gpu-a:9400", "gpu-b:9400", "gpu-c:9400", "gpu-d:9400"]
            .iter()
            .map(|e| Endpoint::parse(e).expect("endpoint"))
            .collect();
        let mut v = View::new(&eps);
        let node = |gpus: Vec<GpuSummary>, user: Option<(&str, u64)>| NodeSummary {
            schema_version: 1,
            gpus,
            top_user: user.map(|(u, b)| TopUser {
                user: u.into(),
                bytes: b * GIB,
            }),
            ..NodeSummary::default()
        };
        v.update(vec![
            (
                0,
                Ok(node(
                    vec![gpu(0, 70, 0, GpuState::Ok), gpu(1, 20, 20, GpuState::Ok)],
                    Some(("ana", 70)),
                )),
                Duration::ZERO,
            ),
            (
                1,
                Ok(node(
                    vec![
                        gpu(0, 0, 0, GpuState::Ok),
                        GpuSummary {
                            index: 1,
                            state: GpuState::Failed,
                            ..GpuSummary::default()
                        },
                    ],
                    None,
                )),
                Duration::ZERO,
            ),
            (2, Err("cannot connect: refused".into()), Duration::ZERO),
            (
                3,
                Ok(node(
                    vec![gpu(0, 40, 0, GpuState::Stalled)],
                    Some(("bob", 40)),
                )),
                Duration::ZERO,
            ),
        ]);
        v
    }

    fn screen(v: &mut View, w: u16, h: u16) -> Terminal<TestBackend> {
        let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        t.draw(|f| {
            let area = f.area();
            draw(f.buffer_mut(), area, v, Duration::from_secs(2))
        })
        .expect("draw");
        t
    }

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn each_nodes_state_says_its_worst() {
        let mut v = view();
        let now = Instant::now();
        let words: Vec<String> = v.rows.iter().map(|r| node_state(r, now).0).collect();
        assert_eq!(words, ["ok", "1 lost", "down", "1 stalled"]);
        v.rows[2].read_at = now.checked_sub(Duration::from_secs(75));
        assert_eq!(node_state(&v.rows[2], now).0, "down 1m15s");
        v.rows[0].summary.as_mut().expect("read").gpus[0].last_xid = Some(79);
        assert_eq!(node_state(&v.rows[0], now).0, "xid");
        v.rows[0].summary = None;
        assert_eq!(node_state(&v.rows[0], now).0, "…");
    }

    #[test]
    fn the_name_column_fits_the_longest_name_within_4_to_24() {
        let mut v = view();
        assert_eq!(name_width(&v.rows), "gpu-a:9400".len());
        v.rows[1].name = "n".repeat(40);
        assert_eq!(name_width(&v.rows), 24);
        assert_eq!(name_width(&[]), 4);
    }

    #[test]
    fn the_footer_shows_the_filter_while_it_is_typed_or_kept() {
        let mut v = view();
        assert!(footer_line(&v).to_string().starts_with("q quit"));
        v.typing = true;
        v.filter_text = "free>=".into();
        v.filter_error = Some("a size is missing".into());
        let typed = footer_line(&v).to_string();
        assert!(typed.starts_with("filter: free>=▏  free>=40G"), "{typed}");
        assert!(typed.ends_with("Esc clear  a size is missing"), "{typed}");
        v.typing = false;
        v.filter_error = None;
        assert_eq!(footer_line(&v).to_string(), "filter: free>=  (Esc clears)");
    }

    #[test]
    fn scrolling_keeps_the_selected_row_in_sight() {
        let mut v = view();
        v.selected = 3;
        v.scroll_to_selected(2);
        assert_eq!(v.first, 2);
        v.selected = 1;
        v.scroll_to_selected(2);
        assert_eq!(v.first, 1);
        // No room for a row: nothing to keep in sight.
        v.selected = 3;
        v.scroll_to_selected(0);
        assert_eq!(v.first, 1);
    }

    #[test]
    fn snapshot_the_fleet_rows() {
        let mut v = view();
        insta::assert_snapshot!(screen(&mut v, 120, 10).backend());
    }

    #[test]
    fn keys_sort_filter_and_open_the_row_shown() {
        let mut v = view();
        assert_eq!(v.shown(), [0, 1, 2, 3]);
        // Sorted by the largest free GPU: gpu-b (80 GiB) first, the unread one last.
        v.on_key(key(KeyCode::Char('s')));
        v.on_key(key(KeyCode::Char('s')));
        assert_eq!(v.sort, SortBy::Free);
        assert_eq!(v.shown(), [1, 0, 3, 2]);
        assert_eq!(v.on_key(key(KeyCode::Enter)), Key::Open(1));
        // A filter typed, then pasted in one burst with its `/` and Enter.
        v.on_key(key(KeyCode::Char('/')));
        for c in "down".chars() {
            v.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(v.shown(), [1, 3, 2], "a lost GPU, a stalled one, unread");
        v.on_key(key(KeyCode::Esc));
        assert!(v.filter.is_empty() && !v.typing);
        assert!(v.on_paste("/free>=60G\nmore"));
        assert!(!v.typing);
        assert_eq!(v.shown(), [1, 0]);
        v.on_key(key(KeyCode::Down));
        assert_eq!(v.on_key(key(KeyCode::Enter)), Key::Open(0));
        // A paste that is not a filter is not taken; a bad size is said, the last filter kept.
        assert!(!v.on_paste("python train.py"));
        v.on_key(key(KeyCode::Char('/')));
        assert!(v.on_paste(" free>=lots"));
        assert!(v
            .filter_error
            .as_deref()
            .is_some_and(|e| e.contains("free>=lots")));
        assert_eq!(v.shown(), [1, 0]);
        assert_eq!(v.on_key(key(KeyCode::Char('q'))), Key::Redraw, "q is typed");
        v.on_key(key(KeyCode::Enter));
        assert_eq!(v.on_key(key(KeyCode::Char('q'))), Key::Quit);
    }

    #[test]
    fn a_node_that_fails_keeps_its_last_figures_and_tiny_screens_never_panic() {
        let mut v = view();
        v.update(vec![(0, Err("no answer within 2s".into()), Duration::ZERO)]);
        assert!(v.rows[0].summary.is_some() && v.rows[0].error.is_some());
        let t = screen(&mut v, 120, 10);
        let row = (0..120)
            .map(|x| t.backend().buffer()[(x, 2)].symbol().to_owned())
            .collect::<String>();
        assert!(
            row.contains("down 0s") && row.contains("no answer"),
            "{row}"
        );
        for (w, h) in [(1, 1), (10, 2), (40, 3), (0, 0)] {
            screen(&mut v, w, h);
        }
    }

    /// C4: a Prometheus that answers an error, with no node yet, is shown as that error, not
    /// as a filter that matches nothing.
    #[test]
    fn a_source_error_with_no_node_is_shown_as_the_error() {
        let mut v = View::new(&[]);
        v.prometheus = Some("http://prom:9090".into());
        v.take(Vec::new(), Some("Prometheus: parse error".into()));
        let t = screen(&mut v, 100, 6);
        let row = (0..100)
            .map(|x| t.backend().buffer()[(x, 2)].symbol().to_owned())
            .collect::<String>();
        assert!(row.contains("no node: Prometheus: parse error"), "{row}");
        assert!(!row.contains("filter"), "{row}");
    }
}
