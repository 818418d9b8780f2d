//! Dashboard state and input handling, with no terminal in it: keys, paste, mouse and samples
//! go in, actions come out, so all of it is unit-testable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::Rect;

use super::signal::{Target, SIGNALS};
use super::theme;
use crate::model::history::History;
use crate::model::{Process, Sample};

/// Intervals that `+` and `-` step through.
pub const INTERVALS_MS: [u64; 9] = [10, 50, 100, 250, 500, 1000, 2000, 5000, 10000];
/// Largest OOM text the panel keeps (a paste of a whole log is cut to its tail).
pub use super::keys::MAX_PASTE;
/// What the estimate panel shows, greyed, while it is empty.
pub const ESTIMATE_HINT: &str =
    "e.g. --params 7B --layers 32 --hidden 4096 --heads 32 --batch 4 --seq-len 4096 --inference";
pub use super::panel::{EstimateInputs, MAX_FLAGS};
use super::panel::{EstimatePanel, OomPanel, Typed};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Filter,
    Help,
    Oom,
    Signal,
    Details,
    /// The estimate panel (`e`): flags typed in, the fit against the selected GPU.
    Estimate,
    /// The per-user (or per-owner) view (Tab), in place of the process table.
    Users,
    /// Replay: a time typed to go to (`g`).
    Goto,
}

/// The details view (Enter): a process, and its last figures for when it has left the GPU.
#[derive(Debug, Clone)]
pub struct Details {
    pub gpu: u32,
    pub pid: u32,
    pub last: Process,
    /// No longer listed on the GPU.
    pub gone: bool,
    /// Why it holds memory outside NVML's list, when it does.
    pub holder: Option<String>,
}

/// The signal dialog (`k`, F9): a process, the signal chosen, and what happened.
#[derive(Debug, Clone)]
pub struct SignalDialog {
    pub pid: u32,
    pub gpu: u32,
    pub user: Option<String>,
    pub command: Option<String>,
    /// The process pinned by its start time, or why it cannot be signalled from here.
    pub target: Result<Target, String>,
    /// Index into [`SIGNALS`]; SIGTERM first.
    pub choice: usize,
    /// After Enter: what was done, or why not.
    pub outcome: Option<Result<String, String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Pid,
    User,
    /// The process's pod, job, container or service.
    Owner,
    Gpu,
    Type,
    GpuMem,
    /// The driver's peak of the process (accounting mode); shown where accounting is on.
    Peak,
    /// The hard GPU memory limit of the process's cgroup; shown where some process has one.
    Limit,
    Sm,
    MemBw,
    Cpu,
    HostMem,
    Time,
    Command,
}

impl SortKey {
    /// In table order.
    pub const ALL: [SortKey; 14] = [
        SortKey::Pid,
        SortKey::User,
        SortKey::Owner,
        SortKey::Gpu,
        SortKey::Type,
        SortKey::GpuMem,
        SortKey::Peak,
        SortKey::Limit,
        SortKey::Sm,
        SortKey::MemBw,
        SortKey::Cpu,
        SortKey::HostMem,
        SortKey::Time,
        SortKey::Command,
    ];

    pub fn title(self) -> &'static str {
        match self {
            SortKey::Pid => "PID",
            SortKey::User => "USER",
            SortKey::Owner => "OWNER",
            SortKey::Gpu => "GPU",
            SortKey::Type => "TYPE",
            SortKey::GpuMem => "GPU MEM",
            SortKey::Peak => "PEAK",
            SortKey::Limit => "LIMIT",
            SortKey::Sm => "%SM",
            SortKey::MemBw => "%MEM BW",
            SortKey::Cpu => "%CPU",
            SortKey::HostMem => "HOST MEM",
            SortKey::Time => "TIME",
            SortKey::Command => "COMMAND",
        }
    }

    /// Whether the column has anything to show in `s`: PEAK where some GPU's accounting is
    /// on, LIMIT where some process's cgroup has a GPU memory limit; the rest always.
    pub fn shown(self, s: &Sample) -> bool {
        match self {
            SortKey::Peak => crate::model::accounting::any_on(&s.devices),
            SortKey::Limit => s
                .devices
                .iter()
                .any(|d| d.processes.iter().any(|p| p.gpu_limit.is_some())),
            _ => true,
        }
    }
}

/// The hard GPU memory limit of a process's cgroup (`None`: no limit, or none known).
pub fn limit_of(p: &Process) -> Option<u64> {
    p.gpu_limit.as_ref().and_then(|l| l.hard_bytes)
}

/// What the event loop must do after an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    None,
    Redraw,
    Quit,
    SetInterval(Duration),
    /// Ctrl-Z: give the terminal back and stop, as job control expects.
    Suspend,
    /// Replay: move the time cursor.
    Replay(crate::feed::replay::Command),
    /// Take the terminal again (continued after a stop from outside) and repaint it whole.
    Resume,
}

/// What the dashboard shows of a replay: where the cursor is and how it moves.
#[derive(Debug, Clone)]
pub struct ReplayView {
    /// The recording's name, for the header.
    pub file: String,
    pub playing: bool,
    pub speed: f64,
    /// The recording's first and last sample.
    pub span: (std::time::SystemTime, std::time::SystemTime),
    /// The time being typed after `g`.
    pub goto: String,
    /// Why the last typed time was not taken.
    pub goto_error: Option<String>,
}

impl ReplayView {
    /// Before the player's first playback: paused, at normal speed.
    pub fn new(file: &str) -> ReplayView {
        ReplayView {
            file: file.to_owned(),
            playing: false,
            speed: 1.0,
            span: (
                std::time::SystemTime::UNIX_EPOCH,
                std::time::SystemTime::UNIX_EPOCH,
            ),
            goto: String::new(),
            goto_error: None,
        }
    }
}

/// One row of the process table.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub gpu: u32,
    pub process: &'a Process,
    /// The GPU has stalled: the row is its last good reading, not a fresh one.
    pub stale: bool,
    /// The process holds memory outside NVML's list (a zombie, an unlisted worker, another
    /// namespace's pid): why.
    pub holder: Option<crate::model::HolderReason>,
}

pub struct App {
    /// The sample on screen (held while paused).
    pub sample: Option<Arc<Sample>>,
    /// The host's queue of `gpumon run --gpus` jobs, read with each live sample.
    pub queue: Vec<crate::model::queue::Entry>,
    pub history: History,
    pub paused: bool,
    pub interval: Duration,
    pub mode: Mode,
    /// The process table: its sort, filter, selection, and where it was drawn.
    pub table: Table,
    /// First GPU shown when they do not all fit.
    pub gpu_offset: usize,
    /// The OOM panel: the message and its report.
    pub oom: OomPanel,
    /// How long the driver has been initialising, while the dashboard waits for it.
    pub opening_for: Option<Duration>,
    pub signal: Option<SignalDialog>,
    pub details: Option<Details>,
    /// The estimate panel: the flags, what they give, and the GPU it was opened on.
    pub estimate: EstimatePanel,
    /// Lines the help is scrolled by (the view clamps it).
    pub help_scroll: u16,
    /// Palette slots of the largest processes (as many as there are colours), kept while a
    /// process stays among them, so that a colour keeps naming the same process.
    colours: HashMap<u32, usize>,
    /// GPU-hours, mean %SM and idle holds per user and owner, over every sample seen.
    pub usage: crate::model::rollup::Usage,
    /// The per-user view's state.
    pub users: UsersView,
    /// Set when the dashboard plays a recording.
    pub replay: Option<ReplayView>,
    /// Something the header must say (a recording that stopped).
    pub notice: Option<String>,
    /// The samples left to show the note on accounting mode, once said (see
    /// [`crate::model::accounting::short_note`]).
    accounting_note: Option<u32>,
    /// Set when the dashboard shows a fleet (`gpumon --remote`): its rows, and the node open.
    pub fleet: Option<super::fleet::View>,
}

/// The process table's state.
pub struct Table {
    pub sort: SortKey,
    pub descending: bool,
    pub filter: String,
    /// Selected row of the (filtered, sorted) process table.
    pub selected: usize,
    /// The selected pid, so the selection follows a process when rows move.
    pub selected_pid: Option<(u32, u32)>,
    /// Whether the user chose a row: then the view follows that process as the sort
    /// reshuffles; until then (and after Home, `g` or Esc) it shows the top of the sort.
    pub following: bool,
    /// Where the table's rows were drawn last (for mouse clicks).
    pub area: Rect,
    /// The first row drawn last.
    pub first: usize,
    /// The columns drawn last, as (key, x, width): header clicks and the number keys sort by
    /// what is on screen.
    pub columns: Vec<(SortKey, u16, u16)>,
    /// How far the COMMAND column is scrolled (← →), in characters.
    pub command_offset: usize,
    /// Table order as (device position, process position) into `sample`, recomputed only when
    /// the sample, the sort or the filter changes (drawing reads it several times a frame).
    order: Vec<(usize, usize)>,
    /// Per device position, the holders that NVML does not list, as table rows after the
    /// listed processes (a process position past the list indexes here).
    holder_rows: Vec<Vec<Process>>,
}

impl Default for Table {
    /// The largest GPU memory first, nothing selected or filtered.
    fn default() -> Table {
        Table {
            sort: SortKey::GpuMem,
            descending: true,
            filter: String::new(),
            selected: 0,
            selected_pid: None,
            following: false,
            area: Rect::default(),
            first: 0,
            columns: Vec::new(),
            command_offset: 0,
            order: Vec::new(),
            holder_rows: Vec::new(),
        }
    }
}

impl Table {
    /// Row `i` of the table over `s` (the sample it was ordered for), without building the
    /// whole list.
    pub fn row<'a>(&'a self, s: Option<&'a Sample>, i: usize) -> Option<Row<'a>> {
        let &(d, p) = self.order.get(i)?;
        self.row_at(s?, d, p)
    }

    /// The row of process position `p` on device position `d`: a listed process, or past
    /// the list one of the holders NVML does not list.
    fn row_at<'a>(&'a self, s: &'a Sample, d: usize, p: usize) -> Option<Row<'a>> {
        let dev = s.devices.get(d)?;
        let process = match dev.processes.get(p) {
            Some(p) => p,
            None => self
                .holder_rows
                .get(d)?
                .get(p.checked_sub(dev.processes.len())?)?,
        };
        Some(Row {
            gpu: dev.index,
            process,
            stale: dev.stale(),
            holder: dev
                .holders
                .iter()
                .find(|h| h.pid == Some(process.pid))
                .map(|h| h.reason),
        })
    }

    /// How many rows the table has.
    pub fn row_count(&self) -> usize {
        self.order.len()
    }

    /// A new sample: its holders become rows, and the order and the selection follow it.
    fn take(&mut self, s: &Sample) {
        self.holder_rows = holder_rows(s);
        self.follow_selection(Some(s));
    }

    /// Forgets the selection, the filter and the order (another source is about to feed the
    /// table).
    fn reset(&mut self) {
        self.filter.clear();
        self.selected = 0;
        self.selected_pid = None;
        self.following = false;
        self.order.clear();
        self.holder_rows.clear();
    }

    fn reorder(&mut self, s: Option<&Sample>) {
        let Some(s) = s else {
            self.order.clear();
            return;
        };
        let needle = self.filter.to_lowercase();
        let extra = |di: usize| self.holder_rows.get(di).map_or(0, Vec::len);
        let mut keyed: Vec<((usize, usize), u32, &Process)> = s
            .devices
            .iter()
            .enumerate()
            .flat_map(|(di, d)| (0..d.processes.len() + extra(di)).map(move |pi| (di, pi)))
            .filter_map(|(di, pi)| {
                let r = self.row_at(s, di, pi)?;
                (needle.is_empty() || matches_filter(&r, &needle)).then_some((
                    (di, pi),
                    r.gpu,
                    r.process,
                ))
            })
            .collect();
        let key = self.sort;
        let descending = self.descending;
        keyed.sort_by(|&(_, ga, pa), &(_, gb, pb)| {
            let ord = match key {
                SortKey::Pid => pa.pid.cmp(&pb.pid),
                SortKey::User => pa.user.cmp(&pb.user),
                SortKey::Owner => pa.owner_label().cmp(&pb.owner_label()),
                SortKey::Gpu => ga.cmp(&gb),
                SortKey::Type => pa.kind.letter().cmp(pb.kind.letter()),
                SortKey::Sm => pa.sm_percent.cmp(&pb.sm_percent),
                SortKey::MemBw => pa.mem_bw_percent.cmp(&pb.mem_bw_percent),
                SortKey::GpuMem => pa.gpu_memory_bytes.cmp(&pb.gpu_memory_bytes),
                SortKey::Peak => pa.peak_bytes.cmp(&pb.peak_bytes),
                SortKey::Limit => limit_of(pa).cmp(&limit_of(pb)),
                SortKey::Cpu => pa
                    .cpu_percent
                    .partial_cmp(&pb.cpu_percent)
                    .unwrap_or(std::cmp::Ordering::Equal),
                SortKey::HostMem => pa.host_memory_bytes.cmp(&pb.host_memory_bytes),
                // Older processes have earlier start times: longest running first when descending.
                SortKey::Time => pb.start_time.cmp(&pa.start_time),
                SortKey::Command => pa.command.cmp(&pb.command),
            };
            let ord = if descending { ord.reverse() } else { ord };
            ord.then(ga.cmp(&gb)).then(pa.pid.cmp(&pb.pid))
        });
        let order = keyed.into_iter().map(|(at, ..)| at).collect();
        self.order = order;
    }

    fn follow_selection(&mut self, s: Option<&Sample>) {
        self.reorder(s);
        if !self.following {
            self.selected = 0;
            self.remember_selection(s);
            return;
        }
        let index = self.selected_pid.and_then(|(gpu, pid)| {
            (0..self.row_count()).find(|&i| {
                self.row(s, i)
                    .is_some_and(|r| r.gpu == gpu && r.process.pid == pid)
            })
        });
        let len = self.row_count();
        self.selected = match index {
            Some(i) => i,
            None => self.selected.min(len.saturating_sub(1)),
        };
        self.remember_selection(s);
    }

    fn remember_selection(&mut self, s: Option<&Sample>) {
        self.selected_pid = self.row(s, self.selected).map(|r| (r.gpu, r.process.pid));
    }

    fn move_selection(&mut self, s: Option<&Sample>, delta: isize) -> Action {
        let len = self.row_count();
        if len == 0 {
            return Action::None;
        }
        let next = (self.selected as isize + delta).clamp(0, len as isize - 1) as usize;
        self.selected = next;
        self.following = true;
        self.remember_selection(s);
        Action::Redraw
    }

    /// Back to the top of the sort, which the view shows until the user moves again.
    fn go_to_top(&mut self, s: Option<&Sample>) -> Action {
        self.following = false;
        self.selected = 0;
        self.remember_selection(s);
        Action::Redraw
    }

    /// Sorts by `key`; choosing the current key again reverses the order.
    pub fn sort_by(&mut self, s: Option<&Sample>, key: SortKey) -> Action {
        if self.sort == key {
            self.descending = !self.descending;
        } else {
            self.sort = key;
            // Numbers and times read best largest first; names alphabetically.
            self.descending = !matches!(
                key,
                SortKey::User | SortKey::Command | SortKey::Type | SortKey::Owner
            );
        }
        self.follow_selection(s);
        Action::Redraw
    }

    /// The next (or, with `by = len - 1`, previous) sort column.
    fn step_sort(&mut self, s: Option<&Sample>, by: usize) -> Action {
        let n = SortKey::ALL.len();
        let i = SortKey::ALL
            .iter()
            .position(|k| *k == self.sort)
            .unwrap_or(0);
        // PEAK and LIMIT are columns only where some GPU's accounting is on, where some
        // process has a limit.
        let mut j = i;
        for _ in 0..n {
            j = (j + by) % n;
            let k = SortKey::ALL[j];
            if !matches!(k, SortKey::Peak | SortKey::Limit) || s.is_some_and(|s| k.shown(s)) {
                break;
            }
        }
        self.sort = SortKey::ALL[j];
        self.follow_selection(s);
        Action::Redraw
    }

    /// Shows only the rows whose user, owner, command, pid or GPU contain `filter` (the
    /// per-user view's Enter), from the top.
    fn filter_to(&mut self, s: Option<&Sample>, filter: String) {
        self.filter = filter;
        self.selected = 0;
        self.reorder(s);
        self.remember_selection(s);
    }

    /// The table's keys on the main screen: the sort (`s` `<` `>` `S` `r`, the number of a
    /// column on screen), the selection (the arrows, `j`, the pages, Home, End, `g`, `G`),
    /// the COMMAND column's scroll (← →) and Esc (the filter, else the selection).
    /// [`Action::None`] for a key that is not the table's.
    pub fn on_key(&mut self, s: Option<&Sample>, key: KeyEvent) -> Action {
        match key.code {
            // Esc clears an active filter, else the selection; it never quits, so a stray
            // Esc cannot end the session.
            KeyCode::Esc if !self.filter.is_empty() => {
                self.filter_to(s, String::new());
                Action::Redraw
            }
            KeyCode::Esc => self.go_to_top(s),
            KeyCode::Char('s') | KeyCode::Char('>') | KeyCode::Char('.') => self.step_sort(s, 1),
            KeyCode::Char('<') | KeyCode::Char(',') => self.step_sort(s, SortKey::ALL.len() - 1),
            KeyCode::Right => {
                self.command_offset = self.command_offset.saturating_add(8).min(4096);
                Action::Redraw
            }
            KeyCode::Left => {
                self.command_offset = self.command_offset.saturating_sub(8);
                Action::Redraw
            }
            KeyCode::Char('S') | KeyCode::Char('r') => {
                self.descending = !self.descending;
                self.follow_selection(s);
                Action::Redraw
            }
            // The n-th column on screen.
            KeyCode::Char(c @ '1'..='9') => {
                let n = (c as u8 - b'1') as usize;
                match self.columns.get(n).map(|c| c.0) {
                    Some(key) => self.sort_by(s, key),
                    None => Action::None,
                }
            }
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(s, 1),
            KeyCode::Up => self.move_selection(s, -1),
            KeyCode::PageDown => self.move_selection(s, 10),
            KeyCode::PageUp => self.move_selection(s, -10),
            KeyCode::Home | KeyCode::Char('g') => self.go_to_top(s),
            KeyCode::End | KeyCode::Char('G') => self.move_selection(s, isize::MAX / 2),
            _ => Action::None,
        }
    }

    /// A key while the filter is typed (`/`): Enter keeps it, Esc clears it (both close
    /// it), and the rows narrow as it changes.
    pub fn on_filter_key(&mut self, s: Option<&Sample>, key: KeyEvent) -> Typed {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let typed = match key.code {
            KeyCode::Esc => {
                self.filter.clear();
                Typed::Close
            }
            KeyCode::Enter => Typed::Close,
            KeyCode::Backspace => {
                self.filter.pop();
                Typed::Changed
            }
            KeyCode::Char(c) if !ctrl => {
                self.filter.push(c);
                Typed::Changed
            }
            _ => return Typed::Ignored,
        };
        self.selected = 0;
        self.reorder(s);
        self.remember_selection(s);
        typed
    }

    /// A paste while the filter is typed: its first line.
    pub fn paste_filter(&mut self, s: Option<&Sample>, text: &str) {
        self.filter.push_str(text.lines().next().unwrap_or(""));
        self.selected = 0;
        self.reorder(s);
    }

    /// The mouse over the table: the wheel moves the selection, a click on a row selects it
    /// and a click on a column's title sorts by it.
    pub fn on_mouse(&mut self, s: Option<&Sample>, m: MouseEvent) -> Action {
        match m.kind {
            MouseEventKind::ScrollDown => self.move_selection(s, 1),
            MouseEventKind::ScrollUp => self.move_selection(s, -1),
            MouseEventKind::Down(MouseButton::Left) => {
                let r = self.area;
                // A click on a column title sorts by that column.
                if r.y > 0 && m.row == r.y - 1 {
                    let hit = self
                        .columns
                        .iter()
                        .find(|(_, x, w)| m.column >= *x && m.column < x.saturating_add(*w))
                        .map(|c| c.0);
                    return match hit {
                        Some(key) => self.sort_by(s, key),
                        None => Action::None,
                    };
                }
                let inside = m.column >= r.x
                    && m.column < r.x + r.width
                    && m.row >= r.y
                    && m.row < r.y + r.height;
                if !inside {
                    return Action::None;
                }
                let index = self.first + (m.row - r.y) as usize;
                if index < self.row_count() {
                    self.selected = index;
                    self.following = true;
                    self.remember_selection(s);
                    return Action::Redraw;
                }
                Action::None
            }
            _ => Action::None,
        }
    }
}

/// The per-user view (Tab): what a row is, its sort and its selection.
#[derive(Debug, Clone)]
pub struct UsersView {
    pub by: crate::model::rollup::GroupBy,
    /// The column sorted by (0 the name … 6 idle holds), and the direction.
    pub sort: usize,
    pub descending: bool,
    pub selected: usize,
}

/// The per-user view's columns, as the sort keys name them.
pub const USER_COLUMNS: usize = 7;

impl App {
    pub fn new(settings: &super::Settings) -> Self {
        let super::Settings {
            interval,
            history,
            idle_after,
            estimate,
        } = *settings;
        App {
            sample: None,
            queue: Vec::new(),
            history: History::new(history),
            paused: false,
            interval,
            mode: Mode::Normal,
            table: Table::default(),
            gpu_offset: 0,
            oom: OomPanel::default(),
            opening_for: None,
            signal: None,
            details: None,
            estimate: EstimatePanel::new(estimate),
            help_scroll: 0,
            colours: HashMap::new(),
            usage: crate::model::rollup::Usage::new(idle_after, history),
            users: UsersView {
                by: crate::model::rollup::GroupBy::User,
                sort: 3,
                descending: true,
                selected: 0,
            },
            replay: None,
            notice: None,
            accounting_note: None,
            fleet: None,
        }
    }

    /// The fleet node open in the dashboard, if any.
    pub fn fleet_open(&self) -> Option<usize> {
        self.fleet.as_ref()?.open
    }

    /// A frame from the fleet's poller: the rows' summaries, and the open node's sample.
    pub fn on_fleet_frame(&mut self, frame: crate::feed::fleet::Round) -> Action {
        let Some(view) = self.fleet.as_mut() else {
            return Action::None;
        };
        view.take(frame.new_rows, frame.source_error);
        view.update(frame.updates);
        // The past first, then the present: history keeps readings in time order.
        if let Some((i, result)) = frame.history {
            if view.open == Some(i) {
                match result {
                    Ok(samples) => {
                        let span = match (samples.first(), samples.last()) {
                            (Some(a), Some(b)) => {
                                b.timestamp.duration_since(a.timestamp).unwrap_or_default()
                            }
                            _ => Duration::ZERO,
                        };
                        view.open_history = Some(Ok(span));
                        for s in &samples {
                            self.history.record(s);
                        }
                    }
                    Err(e) => view.open_history = Some(Err(e)),
                }
            }
        }
        if let Some((i, result)) = frame.opened {
            if view.open == Some(i) {
                match result {
                    Ok(s) => {
                        view.open_error = None;
                        view.open_read_at = Some(std::time::Instant::now());
                        self.on_sample(Arc::new(s));
                    }
                    // The last sample stays, said to be old.
                    Err(e) => view.open_error = Some(e),
                }
            }
        }
        Action::Redraw
    }

    /// Opens a fleet node in the dashboard: its history starts now.
    fn open_node(&mut self, i: usize) {
        self.reset_view();
        if let Some(v) = self.fleet.as_mut() {
            v.open = Some(i);
            v.open_error = None;
            v.open_read_at = None;
            v.open_history = None;
        }
    }

    /// Back from a node to the fleet's rows.
    fn close_node(&mut self) {
        self.reset_view();
        if let Some(v) = self.fleet.as_mut() {
            v.open = None;
        }
    }

    /// Forgets the sample shown and its history (another source is about to feed them).
    fn reset_view(&mut self) {
        self.sample = None;
        self.history = History::new(self.history.window);
        self.usage = crate::model::rollup::Usage::new(self.usage.idle_after(), self.history.window);
        self.mode = Mode::Normal;
        self.details = None;
        self.signal = None;
        self.table.reset();
        self.gpu_offset = 0;
        self.paused = false;
        self.colours.clear();
    }

    /// A new sample from the sampler. While paused, the screen keeps its snapshot.
    pub fn on_sample(&mut self, sample: Arc<Sample>) -> Action {
        if self.paused {
            return Action::None;
        }
        // What the screen shows of commands, users and GPU names goes through the one
        // escaping rule, once per sample (a no-op when nothing needs it).
        let sample = match sample.escaped() {
            std::borrow::Cow::Borrowed(_) => sample,
            std::borrow::Cow::Owned(s) => Arc::new(s),
        };
        self.history.record(&sample);
        self.usage.record(&sample);
        crate::model::accounting::say_once(&mut self.notice, &mut self.accounting_note, &sample);
        self.table.take(&sample);
        self.sample = Some(sample);
        self.assign_colours();
        self.update_details();
        self.track_processes();
        Action::Redraw
    }

    /// A replay's frame: the samples at the cursor (after a jump, the window before it too,
    /// which become the history), and how the cursor moves.
    pub fn on_replay_frame(&mut self, frame: crate::feed::replay::Playback) -> Action {
        if let Some(r) = self.replay.as_mut() {
            r.playing = frame.playing;
            r.speed = frame.speed;
            r.span = frame.span;
        }
        let Some((last, before)) = frame.samples.split_last() else {
            return Action::Redraw;
        };
        if frame.reset {
            self.history = History::new(self.history.window);
            self.usage =
                crate::model::rollup::Usage::new(self.usage.idle_after(), self.history.window);
            for s in before {
                self.history.record(s);
                self.usage.record(s);
            }
        }
        let paused = std::mem::replace(&mut self.paused, false);
        self.on_sample(Arc::clone(last));
        self.paused = paused;
        Action::Redraw
    }

    /// Keeps memory series for the processes a view may chart: the coloured (largest) ones,
    /// the selected one and the one in the details view.
    fn track_processes(&mut self) {
        let Some(s) = self.sample.clone() else { return };
        let mut wanted: Vec<(u32, u32)> = s
            .devices
            .iter()
            .flat_map(|d| {
                d.processes
                    .iter()
                    .filter(|p| self.colours.contains_key(&p.pid))
                    .map(move |p| (d.index, p.pid))
            })
            .collect();
        if self.table.following {
            wanted.extend(self.table.selected_pid);
        }
        wanted.extend(self.details.as_ref().map(|d| (d.gpu, d.pid)));
        wanted.sort_unstable();
        wanted.dedup();
        self.history.track(&s, &wanted);
    }

    /// What the GPU's holders say of `pid`, if it is one.
    fn holder_text(&self, gpu: u32, pid: u32) -> Option<String> {
        let s = self.sample.as_ref()?;
        let d = s.devices.iter().find(|d| d.index == gpu)?;
        Some(d.holders.iter().find(|h| h.pid == Some(pid))?.describe())
    }

    fn update_details(&mut self) {
        let holder = self
            .details
            .as_ref()
            .and_then(|d| self.holder_text(d.gpu, d.pid));
        let (Some(d), Some(s)) = (self.details.as_mut(), self.sample.as_ref()) else {
            return;
        };
        d.holder = holder;
        match s
            .devices
            .iter()
            .enumerate()
            .find(|(_, dev)| dev.index == d.gpu)
            .and_then(|(di, dev)| {
                dev.processes
                    .iter()
                    .chain(self.table.holder_rows.get(di).into_iter().flatten())
                    .find(|p| p.pid == d.pid)
            }) {
            Some(p) => {
                d.last = p.clone();
                d.gone = false;
            }
            None => d.gone = true,
        }
    }

    /// Opens the details of the selected process.
    fn open_details(&mut self) -> Action {
        let Some(row) = self.selected_row() else {
            return Action::None;
        };
        let holder = self.holder_text(row.gpu, row.process.pid);
        self.details = Some(Details {
            gpu: row.gpu,
            pid: row.process.pid,
            last: row.process.clone(),
            gone: false,
            holder,
        });
        self.mode = Mode::Details;
        self.track_processes();
        Action::Redraw
    }

    /// Gives the largest processes (across GPUs) a palette slot each; the rest share the
    /// gauge's "other processes" segment and no colour in the table.
    fn assign_colours(&mut self) {
        let Some(s) = &self.sample else { return };
        let slots = theme::PROCESS_COLORS.len();
        let mut all: Vec<(u64, u32)> = s
            .devices
            .iter()
            .flat_map(|d| d.processes.iter())
            .map(|p| (p.gpu_memory_bytes.unwrap_or(0), p.pid))
            .collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        let mut top: Vec<u32> = Vec::with_capacity(slots);
        for (_, pid) in all {
            if top.len() == slots {
                break;
            }
            if !top.contains(&pid) {
                top.push(pid);
            }
        }
        self.colours.retain(|pid, _| top.contains(pid));
        for pid in top {
            if self.colours.contains_key(&pid) {
                continue;
            }
            let taken: Vec<usize> = self.colours.values().copied().collect();
            if let Some(free) = (0..slots).find(|i| !taken.contains(i)) {
                self.colours.insert(pid, free);
            }
        }
    }

    /// The colour of a process with one of its own, the same in the gauge and the table.
    pub fn process_style(&self, pid: u32) -> Option<ratatui::style::Style> {
        self.colours.get(&pid).map(|&i| theme::slot(i))
    }

    /// Processes across GPUs, filtered and sorted (drawing uses [`App::row`]).
    #[cfg(test)]
    pub fn rows(&self) -> Vec<Row<'_>> {
        (0..self.row_count()).filter_map(|i| self.row(i)).collect()
    }

    /// The pids whose host facts must be fresh every second: the rows on screen, or every pid
    /// (`None`) when the table is sorted by a host fact that changes (CPU, host memory), since
    /// rows off screen then decide the order.
    pub fn host_focus(&self) -> Option<Vec<u32>> {
        match self.table.sort {
            SortKey::Cpu | SortKey::HostMem => None,
            _ => Some(self.visible_pids()),
        }
    }

    /// The pids of the table rows on screen (sorted).
    fn visible_pids(&self) -> Vec<u32> {
        let height = self.table.area.height as usize;
        let mut pids: Vec<u32> = (self.table.first..self.table.first + height.max(1))
            .filter_map(|i| self.row(i))
            .map(|r| r.process.pid)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Row `i` of the table, without building the whole list.
    pub fn row(&self, i: usize) -> Option<Row<'_>> {
        self.table.row(self.sample.as_deref(), i)
    }

    /// How many rows the table has.
    pub fn row_count(&self) -> usize {
        self.table.row_count()
    }

    pub fn selected_row(&self) -> Option<Row<'_>> {
        self.row(self.table.selected)
    }

    /// Sorts the table by `key`; choosing the current key again reverses the order.
    pub fn sort_by(&mut self, key: SortKey) -> Action {
        self.table.sort_by(self.sample.as_deref(), key)
    }

    fn step_interval(&mut self, up: bool) -> Action {
        let now = self.interval.as_millis() as u64;
        let next = if up {
            INTERVALS_MS.iter().copied().find(|&ms| ms > now)
        } else {
            INTERVALS_MS.iter().rev().copied().find(|&ms| ms < now)
        };
        match next {
            Some(ms) => {
                self.interval = Duration::from_millis(ms);
                Action::SetInterval(self.interval)
            }
            None => Action::None,
        }
    }

    /// Flags whose estimate reads files, for the event loop to work out off the UI thread.
    pub fn take_estimate_request(&mut self) -> Option<String> {
        self.estimate.take_request()
    }

    /// The estimate of `flags`, worked out off the UI thread; dropped if the flags have
    /// changed since (a newer request is on its way).
    pub fn on_estimate(&mut self, flags: &str, result: EstimateInputs) -> Action {
        if self.estimate.on_result(flags, result) {
            Action::Redraw
        } else {
            Action::None
        }
    }

    /// What a panel's key comes to: Esc closes it.
    fn typed(&mut self, typed: Typed) -> Action {
        match typed {
            Typed::Close => {
                self.mode = Mode::Normal;
                Action::Redraw
            }
            Typed::Changed => Action::Redraw,
            Typed::Ignored => Action::None,
        }
    }

    /// Bracketed paste (or a terminal that sends the text at once).
    pub fn on_paste(&mut self, text: &str) -> Action {
        if let Some(view) = self.fleet.as_mut().filter(|v| v.open.is_none()) {
            return if view.on_paste(text) {
                Action::Redraw
            } else {
                Action::None
            };
        }
        match self.mode {
            Mode::Oom => {
                self.oom.paste(text);
                Action::Redraw
            }
            Mode::Estimate => {
                self.estimate.paste(text);
                Action::Redraw
            }
            Mode::Filter => {
                self.table.paste_filter(self.sample.as_deref(), text);
                Action::Redraw
            }
            // A paste on the main screen is almost always an OOM message: open the panel.
            _ => {
                self.mode = Mode::Oom;
                self.on_paste(text)
            }
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        if ctrl && key.code == KeyCode::Char('z') {
            return Action::Suspend;
        }
        // Alt and a key is no shortcut here (Alt-q is not q) and types nothing.
        if key.modifiers.contains(KeyModifiers::ALT) {
            return Action::None;
        }
        if let Some(view) = self.fleet.as_mut().filter(|v| v.open.is_none()) {
            use super::fleet::Key;
            return match view.on_key(key) {
                Key::None => Action::None,
                Key::Redraw => Action::Redraw,
                Key::Quit => Action::Quit,
                Key::Open(i) => {
                    self.open_node(i);
                    Action::Redraw
                }
            };
        }
        match self.mode {
            Mode::Help => {
                // The arrows and pages scroll it (it does not fit a small terminal); any
                // other key closes it, and q quits.
                match key.code {
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.help_scroll = self.help_scroll.saturating_add(1)
                    }
                    KeyCode::Up | KeyCode::Char('k') => {
                        self.help_scroll = self.help_scroll.saturating_sub(1)
                    }
                    KeyCode::PageDown => self.help_scroll = self.help_scroll.saturating_add(10),
                    KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(10),
                    KeyCode::Char('q') | KeyCode::F(10) => return Action::Quit,
                    _ => self.mode = Mode::Normal,
                }
                Action::Redraw
            }
            Mode::Filter => {
                let typed = self.table.on_filter_key(self.sample.as_deref(), key);
                self.typed(typed)
            }
            Mode::Oom => {
                let typed = self.oom.on_key(key);
                self.typed(typed)
            }
            Mode::Signal => self.on_signal_key(key),
            Mode::Estimate => {
                let typed = self.estimate.on_key(key);
                self.typed(typed)
            }
            Mode::Details => match key.code {
                KeyCode::Esc | KeyCode::Enter | KeyCode::Backspace => {
                    self.details = None;
                    self.mode = Mode::Normal;
                    Action::Redraw
                }
                KeyCode::Char('q') | KeyCode::F(10) => Action::Quit,
                KeyCode::Char('k') | KeyCode::F(9) => self.open_signal(),
                _ => Action::None,
            },
            Mode::Users => self.on_users_key(key),
            Mode::Goto => self.on_goto_key(key),
            Mode::Normal => self.on_normal_key(key),
        }
    }

    /// The per-user view's rows, sorted as it shows them.
    pub fn user_rows(&self) -> Vec<crate::model::rollup::Row> {
        let Some(s) = &self.sample else {
            return Vec::new();
        };
        let mut rows = self.usage.rollup(s, self.users.by);
        let col = self.users.sort;
        rows.sort_by(|a, b| {
            let f = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
            let ord = match col {
                0 => a.key.cmp(&b.key),
                1 => a.gpus.len().cmp(&b.gpus.len()),
                2 => a.processes.cmp(&b.processes),
                3 => a.memory_bytes.cmp(&b.memory_bytes),
                4 => f(a.mean_sm_percent).total_cmp(&f(b.mean_sm_percent)),
                5 => f(a.gpu_hours).total_cmp(&f(b.gpu_hours)),
                _ => a.idle_bytes.cmp(&b.idle_bytes),
            };
            let ord = if self.users.descending {
                ord.reverse()
            } else {
                ord
            };
            ord.then_with(|| a.key.cmp(&b.key))
        });
        rows
    }

    fn on_users_key(&mut self, key: KeyEvent) -> Action {
        let len = self.user_rows().len();
        let v = &mut self.users;
        match key.code {
            KeyCode::Char('q') | KeyCode::F(10) => return Action::Quit,
            KeyCode::Tab | KeyCode::BackTab | KeyCode::Esc => self.mode = Mode::Normal,
            KeyCode::Char('b') | KeyCode::Char('u') => {
                v.by = v.by.other();
                v.selected = 0;
            }
            KeyCode::Char('s') | KeyCode::Char('>') | KeyCode::Char('.') => {
                v.sort = (v.sort + 1) % USER_COLUMNS;
                // Names read best A to Z, figures largest first.
                v.descending = v.sort != 0;
            }
            KeyCode::Char('<') | KeyCode::Char(',') => {
                v.sort = (v.sort + USER_COLUMNS - 1) % USER_COLUMNS;
                v.descending = v.sort != 0;
            }
            KeyCode::Char(c @ '1'..='7') => {
                let col = c as usize - '1' as usize;
                if v.sort == col {
                    v.descending = !v.descending;
                } else {
                    v.sort = col;
                    v.descending = col != 0;
                }
            }
            KeyCode::Char('S') | KeyCode::Char('r') => v.descending = !v.descending,
            KeyCode::Down | KeyCode::Char('j') => {
                v.selected = (v.selected + 1).min(len.saturating_sub(1));
            }
            KeyCode::Up | KeyCode::Char('k') => v.selected = v.selected.saturating_sub(1),
            KeyCode::Home | KeyCode::Char('g') => v.selected = 0,
            KeyCode::Enter => {
                // The process table, filtered to this row's user or owner.
                let Some(row) = self.user_rows().into_iter().nth(self.users.selected) else {
                    return Action::None;
                };
                self.table.filter_to(self.sample.as_deref(), row.key);
                self.mode = Mode::Normal;
            }
            KeyCode::Char('?') | KeyCode::F(1) => {
                self.mode = Mode::Help;
                self.help_scroll = 0;
            }
            KeyCode::Char(' ') => self.paused = !self.paused,
            _ => return Action::None,
        }
        Action::Redraw
    }

    /// Where a closed dialog returns: the details view it was opened from, or the table.
    fn back_mode(&self) -> Mode {
        if self.details.is_some() {
            Mode::Details
        } else {
            Mode::Normal
        }
    }

    /// Opens the signal dialog on the selected process (or the one in the details view).
    fn open_signal(&mut self) -> Action {
        let (gpu, p) = match (&self.details, self.selected_row()) {
            (Some(d), _) => (d.gpu, &d.last),
            (None, Some(row)) => (row.gpu, row.process),
            (None, None) => return Action::None,
        };
        self.signal = Some(SignalDialog {
            pid: p.pid,
            gpu,
            user: p.user.clone(),
            command: p.command.clone().or_else(|| p.name.clone()),
            target: self
                .signal_refused()
                .map_or_else(|| Target::pin(p.pid), Err),
            choice: 0,
            outcome: None,
        });
        self.mode = Mode::Signal;
        Action::Redraw
    }

    /// Why no process shown can be signalled from here: a fleet node's pids are another
    /// host's, and a recording's are the past's; either may name an unrelated process here.
    fn signal_refused(&self) -> Option<String> {
        if let Some(v) = &self.fleet {
            let node = v
                .open
                .and_then(|i| v.rows.get(i))
                .map_or("another node", |r| r.name.as_str());
            return Some(format!(
                "this process runs on {node}: its pid means another process here; signal it \
                 there"
            ));
        }
        self.replay.as_ref().map(|_| {
            "this is a recording: the pid may name another process now; signal it from the \
             live dashboard"
                .to_owned()
        })
    }

    fn on_signal_key(&mut self, key: KeyEvent) -> Action {
        let back = self.back_mode();
        let Some(d) = self.signal.as_mut() else {
            self.mode = back;
            return Action::Redraw;
        };
        match key.code {
            KeyCode::Esc => {
                self.signal = None;
                self.mode = self.back_mode();
            }
            KeyCode::Up | KeyCode::Char('k') => d.choice = d.choice.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => d.choice = (d.choice + 1).min(SIGNALS.len() - 1),
            KeyCode::Enter if d.outcome.is_some() => {
                self.signal = None;
                self.mode = self.back_mode();
            }
            KeyCode::Enter => {
                let (name, number) = SIGNALS[d.choice];
                d.outcome = Some(match &d.target {
                    Ok(t) => t
                        .send(number)
                        .map(|()| format!("sent {name} to pid {}", d.pid)),
                    Err(why) => Err(why.clone()),
                });
            }
            _ => return Action::None,
        }
        Action::Redraw
    }

    /// Typing the time to go to in a replay (`g`): Enter goes, Esc cancels.
    fn on_goto_key(&mut self, key: KeyEvent) -> Action {
        let Some(r) = self.replay.as_mut() else {
            self.mode = Mode::Normal;
            return Action::Redraw;
        };
        match key.code {
            KeyCode::Esc => {
                r.goto.clear();
                r.goto_error = None;
                self.mode = Mode::Normal;
            }
            KeyCode::Backspace => {
                r.goto.pop();
            }
            KeyCode::Enter => {
                match crate::store::recording::resolve_at(&r.goto, r.span.0, r.span.1) {
                    Ok(t) => {
                        r.goto.clear();
                        r.goto_error = None;
                        self.mode = Mode::Normal;
                        return Action::Replay(crate::feed::replay::Command::Goto(t));
                    }
                    Err(e) => r.goto_error = Some(e),
                }
            }
            KeyCode::Char(c) if r.goto.len() < 64 => r.goto.push(c),
            _ => return Action::None,
        }
        Action::Redraw
    }

    /// The keys that move a replay's cursor, in place of their live meaning (scrolling the
    /// command, the GPUs, the top, pausing, the interval).
    fn replay_key(&mut self, key: KeyEvent) -> Option<Action> {
        use crate::feed::replay::Command;
        self.replay.as_ref()?;
        Some(match key.code {
            KeyCode::Right => Action::Replay(Command::Step(1)),
            KeyCode::Left => Action::Replay(Command::Step(-1)),
            KeyCode::Char(']') => Action::Replay(Command::Jump(60)),
            KeyCode::Char('[') => Action::Replay(Command::Jump(-60)),
            KeyCode::Char(' ') => Action::Replay(Command::TogglePlay),
            KeyCode::Char('+') | KeyCode::Char('=') => Action::Replay(Command::Speed(true)),
            KeyCode::Char('-') | KeyCode::Char('_') => Action::Replay(Command::Speed(false)),
            KeyCode::Char('g') => {
                self.mode = Mode::Goto;
                Action::Redraw
            }
            _ => return None,
        })
    }

    fn on_normal_key(&mut self, key: KeyEvent) -> Action {
        if let Some(action) = self.replay_key(key) {
            return action;
        }
        // A fleet node open: Esc (once nothing is filtered) goes back to the fleet.
        if key.code == KeyCode::Esc && self.table.filter.is_empty() && self.fleet_open().is_some() {
            self.close_node();
            return Action::Redraw;
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::F(10) => Action::Quit,
            KeyCode::Char('?') | KeyCode::F(1) => {
                self.mode = Mode::Help;
                self.help_scroll = 0;
                Action::Redraw
            }
            KeyCode::Char(' ') => {
                self.paused = !self.paused;
                Action::Redraw
            }
            KeyCode::Char('+') | KeyCode::Char('=') => self.step_interval(true),
            KeyCode::Char('-') | KeyCode::Char('_') => self.step_interval(false),
            KeyCode::Char('/') => {
                self.mode = Mode::Filter;
                Action::Redraw
            }
            KeyCode::Char('o') => {
                self.mode = Mode::Oom;
                Action::Redraw
            }
            KeyCode::Tab | KeyCode::BackTab => {
                self.mode = Mode::Users;
                let len = self.user_rows().len();
                self.users.selected = self.users.selected.min(len.saturating_sub(1));
                Action::Redraw
            }
            KeyCode::Char('e') => {
                // The selected process's GPU, else the first.
                let gpu = self
                    .selected_row()
                    .map(|r| r.gpu)
                    .or_else(|| self.sample.as_ref()?.devices.first().map(|d| d.index));
                // It opens empty: an example shows greyed until the first key (see
                // ESTIMATE_HINT), so what is typed is never appended to a pre-fill.
                self.estimate.open(gpu);
                self.mode = Mode::Estimate;
                Action::Redraw
            }
            KeyCode::Char('k') | KeyCode::F(9) => self.open_signal(),
            KeyCode::Enter => self.open_details(),
            KeyCode::Char(']') => {
                let n = self.sample.as_ref().map_or(0, |s| s.devices.len());
                self.gpu_offset = (self.gpu_offset + 1).min(n.saturating_sub(1));
                Action::Redraw
            }
            KeyCode::Char('[') => {
                self.gpu_offset = self.gpu_offset.saturating_sub(1);
                Action::Redraw
            }
            // The rest are the process table's (its sort, selection, scroll, and Esc).
            _ => self.table.on_key(self.sample.as_deref(), key),
        }
    }

    pub fn on_mouse(&mut self, m: MouseEvent) -> Action {
        // The table is under an overlay: clicks and scrolls there are not for it.
        if self.mode != Mode::Normal {
            return Action::None;
        }
        self.table.on_mouse(self.sample.as_deref(), m)
    }
}

/// The holders of each device that NVML does not list, as processes the table can show: their
/// user, command and age, and no GPU figures (the device node says who, not how much).
fn holder_rows(s: &Sample) -> Vec<Vec<Process>> {
    let now = s
        .timestamp
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    s.devices
        .iter()
        .map(|d| {
            d.holders
                .iter()
                .filter_map(|h| {
                    let pid = h.pid?;
                    if d.processes.iter().any(|p| p.pid == pid) {
                        return None;
                    }
                    let mut p =
                        Process::from_nvml(pid, crate::model::ProcessKind::Compute, h.bytes);
                    p.user.clone_from(&h.user);
                    p.command.clone_from(&h.command);
                    p.start_time = h.age_s.map(|a| now.saturating_sub(a));
                    p.state = h.state.as_deref().and_then(|s| s.chars().next());
                    Some(p)
                })
                .collect()
        })
        .collect()
}

fn matches_filter(r: &Row, needle: &str) -> bool {
    let p = r.process;
    let hay = [
        p.pid.to_string(),
        p.user.clone().unwrap_or_default(),
        p.name.clone().unwrap_or_default(),
        p.command.clone().unwrap_or_default(),
        p.owner_label().unwrap_or_default(),
        p.container.clone().unwrap_or_default(),
        format!("gpu{}", r.gpu),
    ];
    hay.iter().any(|h| h.to_lowercase().contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Device, ProcessKind};
    use std::time::SystemTime;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn app_with(procs: &[(u32, u32, u64, &str)]) -> App {
        let mut app = App::new(&crate::tui::test_settings(
            Duration::from_secs(1),
            Duration::from_secs(600),
        ));
        let mut devices: Vec<Device> = (0..2)
            .map(|i| Device {
                index: i,
                ..Device::default()
            })
            .collect();
        for &(gpu, pid, mem, user) in procs {
            let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(mem));
            p.user = Some(user.into());
            p.command = Some(format!("python job{pid}.py"));
            devices[gpu as usize].processes.push(p);
        }
        app.on_sample(Arc::new(Sample {
            timestamp: SystemTime::UNIX_EPOCH,
            hostname: None,
            source: "simulated",
            driver_version: None,
            cuda_version: None,
            devices,
            error: None,
            host: None,
        }));
        app
    }

    #[test]
    fn quit_keys_and_esc_never_quits() {
        let mut app = app_with(&[(0, 10, 300, "a")]);
        assert_eq!(app.on_key(key(KeyCode::Char('q'))), Action::Quit);
        assert_eq!(app.on_key(key(KeyCode::F(10))), Action::Quit);
        assert_eq!(
            app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Action::Quit
        );
        // An unknown key, then Esc (the sequence that used to end the session).
        assert_eq!(app.on_key(key(KeyCode::Char('x'))), Action::None);
        assert_eq!(app.on_key(key(KeyCode::Esc)), Action::Redraw);
        assert_eq!(app.on_key(key(KeyCode::Esc)), Action::Redraw);
        assert_eq!(app.mode, Mode::Normal);
    }

    fn resample(app: &mut App, procs: &[(u32, u32, u64, &str)]) {
        let fresh = app_with(procs);
        app.on_sample(fresh.sample.expect("sample"));
    }

    #[test]
    fn the_view_shows_the_top_of_the_sort_until_the_user_moves() {
        let mut app = app_with(&[(0, 10, 300, "a"), (0, 11, 100, "b"), (1, 12, 200, "c")]);
        assert_eq!(app.selected_row().map(|r| r.process.pid), Some(10));
        // The sizes change: without a choice of the user's, the top of the sort is shown.
        resample(
            &mut app,
            &[(0, 10, 100, "a"), (0, 11, 900, "b"), (1, 12, 200, "c")],
        );
        assert_eq!(app.table.selected, 0);
        assert_eq!(app.selected_row().map(|r| r.process.pid), Some(11));
        // After a move, the selection follows its process through the reshuffles.
        app.on_key(key(KeyCode::Down));
        assert_eq!(app.selected_row().map(|r| r.process.pid), Some(12));
        resample(
            &mut app,
            &[(0, 10, 100, "a"), (0, 11, 50, "b"), (1, 12, 999, "c")],
        );
        assert_eq!(app.selected_row().map(|r| r.process.pid), Some(12));
        assert!(app.table.following);
        // Home (or g, or Esc) goes back to the top, and the view stays there.
        app.on_key(key(KeyCode::Home));
        resample(
            &mut app,
            &[(0, 10, 5000, "a"), (0, 11, 50, "b"), (1, 12, 999, "c")],
        );
        assert_eq!(app.selected_row().map(|r| r.process.pid), Some(10));
        app.on_key(key(KeyCode::Char('j')));
        app.on_key(key(KeyCode::Esc));
        assert!(!app.table.following);
        assert_eq!(app.table.selected, 0);
    }

    #[test]
    fn esc_closes_overlays_before_quitting() {
        let mut app = app_with(&[]);
        app.on_key(key(KeyCode::Char('o')));
        assert_eq!(app.mode, Mode::Oom);
        assert_eq!(app.on_key(key(KeyCode::Esc)), Action::Redraw);
        assert_eq!(app.mode, Mode::Normal);
        app.on_key(key(KeyCode::Char('?')));
        assert_eq!(app.on_key(key(KeyCode::Char('x'))), Action::Redraw);
        assert_eq!(app.mode, Mode::Normal);
        app.on_key(key(KeyCode::Char('?')));
        assert_eq!(
            app.on_key(key(KeyCode::Esc)),
            Action::Redraw,
            "Esc closes help"
        );
        assert_eq!(app.mode, Mode::Normal);
    }

    #[test]
    fn sorting_and_selection_follow_the_process() {
        let mut app = app_with(&[(0, 10, 300, "a"), (0, 11, 100, "b"), (1, 12, 200, "c")]);
        let pids: Vec<u32> = app.rows().iter().map(|r| r.process.pid).collect();
        assert_eq!(pids, vec![10, 12, 11], "GPU memory, largest first");
        app.on_key(key(KeyCode::Char('j')));
        assert_eq!(app.selected_row().map(|r| r.process.pid), Some(12));
        app.sort_by(SortKey::Pid);
        let pids: Vec<u32> = app.rows().iter().map(|r| r.process.pid).collect();
        assert_eq!(pids, vec![12, 11, 10], "PID, descending");
        assert_eq!(
            app.selected_row().map(|r| r.process.pid),
            Some(12),
            "selection kept"
        );
        app.on_key(key(KeyCode::Char('S')));
        assert_eq!(app.rows()[0].process.pid, 10);
        app.on_key(key(KeyCode::Up));
        app.on_key(key(KeyCode::Up));
        app.on_key(key(KeyCode::Up));
        assert_eq!(app.table.selected, 0, "selection stops at the top");
    }

    #[test]
    fn the_signal_dialog_opens_chooses_and_reports_without_crashing() {
        // A pid that cannot exist: the dialog says why it cannot be signalled.
        let mut app = app_with(&[(0, u32::MAX - 7, 300, "a")]);
        assert_eq!(app.on_key(key(KeyCode::Char('k'))), Action::Redraw);
        assert_eq!(app.mode, Mode::Signal);
        let d = app.signal.clone().expect("dialog");
        assert_eq!(SIGNALS[d.choice].0, "SIGTERM", "SIGTERM preselected");
        assert!(d.target.is_err());
        app.on_key(key(KeyCode::Down));
        app.on_key(key(KeyCode::Down));
        assert_eq!(
            app.signal.as_ref().map(|d| SIGNALS[d.choice].0),
            Some("SIGINT")
        );
        assert_eq!(app.on_key(key(KeyCode::Enter)), Action::Redraw);
        assert!(app
            .signal
            .as_ref()
            .and_then(|d| d.outcome.clone())
            .is_some_and(|o| o.is_err()));
        // Enter again closes; Esc would too, and neither quits.
        assert_eq!(app.on_key(key(KeyCode::Enter)), Action::Redraw);
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(app.on_key(key(KeyCode::F(9))), Action::Redraw);
        assert_eq!(app.on_key(key(KeyCode::Esc)), Action::Redraw);
        assert_eq!(app.mode, Mode::Normal);
        assert!(app.signal.is_none());
    }

    #[test]
    fn filter_narrows_rows() {
        let mut app = app_with(&[(0, 10, 300, "alice"), (0, 11, 100, "bob")]);
        app.on_key(key(KeyCode::Char('/')));
        for c in "bob".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(app.rows().len(), 1);
        app.on_key(key(KeyCode::Enter));
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(app.rows().len(), 1, "the filter stays after Enter");
        app.on_key(key(KeyCode::Char('/')));
        app.on_key(key(KeyCode::Esc));
        assert_eq!(app.rows().len(), 2, "Esc clears it");
    }

    #[test]
    fn interval_steps_and_pause() {
        let mut app = app_with(&[]);
        assert_eq!(
            app.on_key(key(KeyCode::Char('+'))),
            Action::SetInterval(Duration::from_secs(2))
        );
        app.on_key(key(KeyCode::Char('-')));
        assert_eq!(
            app.on_key(key(KeyCode::Char('-'))),
            Action::SetInterval(Duration::from_millis(500))
        );
        app.on_key(key(KeyCode::Char(' ')));
        assert!(app.paused);
        let before = app.sample.clone();
        let fresh = Arc::new(Sample {
            devices: vec![],
            ..(*app.sample.clone().expect("sample")).clone()
        });
        assert_eq!(app.on_sample(fresh), Action::None);
        assert!(Arc::ptr_eq(
            app.sample.as_ref().expect("held"),
            before.as_ref().expect("before")
        ));
    }

    #[test]
    fn paste_opens_the_oom_panel_and_analyses() {
        let mut app = app_with(&[]);
        app.on_paste("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)\r\n");
        assert_eq!(app.mode, Mode::Oom);
        let found = app
            .oom
            .analysis
            .as_ref()
            .and_then(|a| a.main())
            .map(|o| o.facts.total_bytes);
        assert!(found.flatten().is_some());
        app.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert!(app.oom.analysis.is_none());
        app.on_paste(&"x".repeat(MAX_PASTE + 10));
        assert!(app.oom.text.len() <= MAX_PASTE);
    }

    #[test]
    fn mouse_click_selects_a_row() {
        let mut app = app_with(&[(0, 10, 300, "a"), (0, 11, 100, "b")]);
        app.table.area = Rect::new(0, 5, 80, 10);
        let click = |row| MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 3,
            row,
            modifiers: KeyModifiers::NONE,
        };
        assert_eq!(app.on_mouse(click(6)), Action::Redraw);
        assert_eq!(app.table.selected, 1);
        assert_eq!(app.on_mouse(click(12)), Action::None, "below the last row");
        assert_eq!(app.on_mouse(click(2)), Action::None, "outside the table");
    }

    /// Draws `app` once at `w`×`h`, as the dashboard would (the table records its columns).
    fn draw(app: &mut App, w: u16, h: u16) {
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h))
            .expect("test terminal");
        t.draw(|f| super::super::ui::draw(f, app)).expect("draw");
    }

    #[test]
    fn the_jobs_waiting_for_gpus_get_a_line_of_their_own() {
        let text = |app: &mut App| {
            let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 24))
                .expect("test terminal");
            t.draw(|f| super::super::ui::draw(f, app)).expect("draw");
            let buf = t.backend().buffer().clone();
            (0..buf.area.height)
                .map(|y| {
                    (0..buf.area.width)
                        .map(|x| buf[(x, y)].symbol().to_owned())
                        .collect::<String>()
                })
                .collect::<Vec<_>>()
        };
        let mut app = app_with(&[(0, 10, 300, "b")]);
        let before = text(&mut app);
        assert!(!before.iter().any(|l| l.starts_with("queue ")));
        let mut waiting = crate::model::queue::example("ana", -30.0, Some(20));
        app.queue = vec![waiting.clone()];
        waiting.user = Some("bob".into());
        app.queue.push(waiting);
        let after = text(&mut app);
        let line = after
            .iter()
            .find(|l| l.starts_with("queue "))
            .expect("a queue line");
        assert!(
            line.starts_with(
                "queue 1. ana `python train.py` wants 1×20.0 GiB, waiting 30s │ 2. bob"
            ),
            "{line}"
        );
        // The line takes a row from the body, and the header stays on top.
        assert_eq!(after[0], before[0]);
    }

    #[test]
    fn number_keys_and_header_clicks_sort_by_the_columns_on_screen() {
        let mut app = app_with(&[(0, 10, 300, "b"), (0, 11, 100, "a"), (1, 12, 200, "c")]);
        if let Some(s) = app.sample.as_mut() {
            let s = Arc::make_mut(s);
            s.devices[0].processes[0].sm_percent = Some(5);
            s.devices[0].processes[1].sm_percent = Some(90);
            s.devices[1].processes[0].sm_percent = None;
        }
        draw(&mut app, 120, 30);
        let titles: Vec<SortKey> = app.table.columns.iter().map(|c| c.0).collect();
        let all_but_container: Vec<SortKey> = SortKey::ALL
            .into_iter()
            .filter(|k| ![SortKey::Owner, SortKey::Peak, SortKey::Limit].contains(k))
            .collect();
        assert_eq!(
            titles, all_but_container,
            "every column fits at 120 (no containers here)"
        );
        app.on_key(key(KeyCode::Char('1')));
        assert_eq!(app.table.sort, SortKey::Pid);
        app.on_key(key(KeyCode::Char('2')));
        assert_eq!(
            (app.table.sort, app.table.descending),
            (SortKey::User, false),
            "names A-Z"
        );
        let pids: Vec<u32> = app.rows().iter().map(|r| r.process.pid).collect();
        assert_eq!(pids, vec![11, 10, 12]);
        // Click the %SM title: largest first, unknown last; a second click reverses.
        let (_, x, _) = *app
            .table
            .columns
            .iter()
            .find(|c| c.0 == SortKey::Sm)
            .expect("%SM on screen");
        let click = MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: x + 1,
            row: app.table.area.y - 1,
            modifiers: KeyModifiers::NONE,
        };
        assert_eq!(app.on_mouse(click), Action::Redraw);
        assert_eq!((app.table.sort, app.table.descending), (SortKey::Sm, true));
        let pids: Vec<u32> = app.rows().iter().map(|r| r.process.pid).collect();
        assert_eq!(pids, vec![11, 10, 12]);
        app.on_mouse(click);
        assert!(!app.table.descending, "the same title again reverses");
        // At 60 columns %SM is not on screen, and 9 names no column.
        draw(&mut app, 60, 30);
        assert!(!app.table.columns.iter().any(|c| c.0 == SortKey::Sm));
        assert_eq!(app.on_key(key(KeyCode::Char('9'))), Action::None);
    }

    #[test]
    fn arrows_scroll_the_command_and_sort_keys_step() {
        let mut app = app_with(&[(0, 10, 300, "a")]);
        app.on_key(key(KeyCode::Right));
        app.on_key(key(KeyCode::Right));
        assert_eq!(app.table.command_offset, 16);
        assert_eq!(
            app.table.sort,
            SortKey::GpuMem,
            "arrows do not change the sort"
        );
        app.on_key(key(KeyCode::Left));
        assert_eq!(app.table.command_offset, 8);
        app.on_key(key(KeyCode::Char('>')));
        assert_eq!(app.table.sort, SortKey::Sm);
        app.on_key(key(KeyCode::Char('<')));
        app.on_key(key(KeyCode::Char('<')));
        assert_eq!(app.table.sort, SortKey::Type);
    }

    /// LIMIT is a sort step only where some process has a GPU memory limit, and sorts by the
    /// hard limit.
    #[test]
    fn the_limit_column_sorts_where_a_process_has_a_limit() {
        let mut app = app_with(&[(0, 10, 300, "a"), (0, 11, 200, "b"), (1, 12, 100, "c")]);
        if let Some(s) = app.sample.as_mut() {
            let s = Arc::make_mut(s);
            for (p, hard) in s.devices[0].processes.iter_mut().zip([4u64 << 30, 8 << 30]) {
                p.gpu_limit = Some(Arc::new(crate::model::unified::GpuLimit {
                    cgroup: "/kubepods/pod/c".into(),
                    source: crate::model::unified::LimitSource::Dmem,
                    hard_bytes: Some(hard),
                    soft_bytes: None,
                    used_bytes: None,
                }));
            }
        }
        assert_eq!(app.table.sort, SortKey::GpuMem);
        app.on_key(key(KeyCode::Char('>')));
        assert_eq!(app.table.sort, SortKey::Limit, "PEAK skipped, LIMIT shown");
        let order: Vec<u32> = (0..app.row_count())
            .filter_map(|i| app.row(i).map(|r| r.process.pid))
            .collect();
        assert_eq!(order, [11, 10, 12], "largest limit first; no limit last");
        app.on_key(key(KeyCode::Char('<')));
        assert_eq!(app.table.sort, SortKey::GpuMem);
    }

    #[test]
    fn host_facts_stay_fresh_for_rows_on_screen_or_all_when_they_decide_the_order() {
        let mut app = app_with(&[(0, 10, 300, "a"), (0, 11, 200, "b"), (1, 12, 100, "c")]);
        app.table.area = Rect::new(0, 5, 80, 2);
        // By GPU memory, two rows fit: the two largest.
        assert_eq!(app.host_focus(), Some(vec![10, 11]));
        for _ in 0..3 {
            app.on_key(key(KeyCode::Char('>')));
        }
        assert_eq!(app.table.sort, SortKey::Cpu);
        assert_eq!(app.host_focus(), None, "every pid's CPU decides the order");
        app.on_key(key(KeyCode::Char('>')));
        assert_eq!(app.table.sort, SortKey::HostMem);
        assert_eq!(app.host_focus(), None);
        app.on_key(key(KeyCode::Char('>')));
        assert_eq!(app.table.sort, SortKey::Time);
        assert_eq!(app.host_focus().map(|p| p.len()), Some(2));
    }

    #[test]
    fn details_open_on_enter_follow_the_process_and_close_on_esc() {
        let mut app = app_with(&[(0, 10, 300, "a"), (1, 12, 200, "c")]);
        app.on_key(key(KeyCode::Char('j')));
        assert_eq!(app.on_key(key(KeyCode::Enter)), Action::Redraw);
        assert_eq!(app.mode, Mode::Details);
        assert_eq!(app.details.as_ref().map(|d| (d.gpu, d.pid)), Some((1, 12)));
        assert!(app.history.process(1, 12).is_some(), "its series is kept");
        // A signal dialog opened from the details returns to them.
        app.on_key(key(KeyCode::Char('k')));
        assert_eq!(app.mode, Mode::Signal);
        assert_eq!(app.signal.as_ref().map(|s| s.pid), Some(12));
        app.on_key(key(KeyCode::Esc));
        assert_eq!(app.mode, Mode::Details);
        // The process leaves the GPU: its last figures stay, marked gone.
        let mut s = (**app.sample.as_ref().expect("sample")).clone();
        s.devices[1].processes.clear();
        s.timestamp += Duration::from_secs(1);
        app.on_sample(Arc::new(s));
        let d = app.details.as_ref().expect("still open");
        assert!(d.gone);
        assert_eq!(d.last.gpu_memory_bytes, Some(200));
        assert_eq!(app.on_key(key(KeyCode::Esc)), Action::Redraw);
        assert_eq!(app.mode, Mode::Normal);
        assert!(app.details.is_none());
    }
    #[test]
    fn a_prometheus_nodes_history_comes_before_its_first_reading_and_only_for_it() {
        let at = |secs: u64, used: u64| Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + secs),
            hostname: Some("node".into()),
            source: "prometheus",
            driver_version: None,
            cuda_version: None,
            devices: vec![Device {
                memory: crate::model::Memory {
                    used_bytes: Some(used),
                    ..Default::default()
                },
                ..Device::default()
            }],
            error: None,
            host: None,
        };
        let mut app = App::new(&crate::tui::test_settings(
            Duration::from_secs(2),
            Duration::from_secs(600),
        ));
        app.fleet = Some(super::super::fleet::View::default());
        app.on_fleet_frame(crate::feed::fleet::Round {
            new_rows: vec![("a".into(), "a:9400".into()), ("b".into(), "b:9400".into())],
            ..Default::default()
        });
        app.open_node(1);
        // Another node's history (opened, then left) is not this one's.
        app.on_fleet_frame(crate::feed::fleet::Round {
            history: Some((0, Ok(vec![at(0, 7)]))),
            ..Default::default()
        });
        assert!(app.history.device(0).is_none_or(|h| h.points.is_empty()));
        app.on_fleet_frame(crate::feed::fleet::Round {
            history: Some((1, Ok(vec![at(0, 1), at(2, 2), at(4, 3)]))),
            opened: Some((1, Ok(at(6, 4)))),
            ..Default::default()
        });
        let used: Vec<_> = app
            .history
            .device(0)
            .map(|h| h.points.iter().map(|p| p.used()).collect())
            .unwrap_or_default();
        assert_eq!(used, [Some(1), Some(2), Some(3), Some(4)]);
        let view = app.fleet.as_ref().expect("fleet");
        assert!(matches!(view.open_history, Some(Ok(d)) if d == Duration::from_secs(4)));
        // A failed range query is said; the node's readings go on.
        app.open_node(1);
        app.on_fleet_frame(crate::feed::fleet::Round {
            history: Some((1, Err("Prometheus: HTTP 503".into()))),
            ..Default::default()
        });
        let view = app.fleet.as_ref().expect("fleet");
        assert!(matches!(&view.open_history, Some(Err(e)) if e.contains("503")));
    }
}
