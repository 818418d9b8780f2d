//! The live dashboard: the loop that draws what [`event::step`] makes of each [`event::Event`].
//!
//! The screen opens at once, even while the driver is still initialising, and quitting never
//! waits for a driver call: blocked threads are left behind. The screen is redrawn only when
//! an event changes something. The terminal is restored on every way out ([`terminal`]).

pub mod app;
pub mod event;
pub mod fleet;
pub mod input;
pub mod keys;
pub mod panel;
pub mod shared;
pub mod signal;
pub mod terminal;
pub mod theme;
pub mod ui;
pub mod widgets;

use std::sync::Arc;
use std::time::Duration;

use ratatui::backend::Backend;
use ratatui::Terminal;

use crate::collect::source::OpenError;
use crate::feed::{self, Feed, Source};
use crate::model::Sample;
use app::{Action, App, EstimateInputs};
use event::{Event, Events};
pub use terminal::restore;

/// What the dashboard runs with, as the command resolved it from its flags.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How often the feed is read (`+`/`-` change it).
    pub interval: Duration,
    /// How much history is kept and charted.
    pub history: Duration,
    /// How long a process must do nothing on its GPU for its memory to be an idle hold.
    pub idle_after: Duration,
    /// Works out the estimate panel's flags (the command line's own parser, given by the
    /// command: the dashboard parses no command line).
    pub estimate: fn(&str) -> EstimateInputs,
}

/// Runs the dashboard on `source` until the user quits or a signal arrives. `Ok(Some(e))`:
/// the source failed to open after the screen was up (the terminal is restored before the
/// caller prints it).
pub fn run(source: Source, settings: Settings) -> anyhow::Result<Option<OpenError>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()?;
    let mut terminal = terminal::setup()?;
    let guard = terminal::Guard;
    let result = runtime.block_on(event_loop(&mut terminal, source, settings));
    // Quit promptly even while a tick waits on a hung GPU or NVML is still initialising:
    // blocked threads are left behind, never joined (the process exits around them).
    runtime.shutdown_background();
    let _ = terminal.show_cursor();
    drop(guard);
    result
}

/// The state for `source` before its first event: the fleet's rows, the recording's name.
fn app_for(source: &Source, settings: &Settings) -> App {
    let mut app = App::new(settings);
    match source {
        Source::Fleet { nodes, .. } => app.fleet = Some(fleet::View::for_nodes(nodes)),
        Source::Replay { name, .. } => app.replay = Some(app::ReplayView::new(name)),
        Source::Live(..) => {}
    }
    app
}

/// Test hook: `GPUMON_DEBUG_PANIC` proves the panic hook restores the terminal
/// (tests/integration/dashboard.rs): set, the first sample panics; `worker`, a thread other
/// than the drawing one panics instead.
fn debug_panic() -> bool {
    match std::env::var_os("GPUMON_DEBUG_PANIC")
        .as_deref()
        .map(|v| v.to_str())
    {
        Some(Some("worker")) => {
            let _ = std::thread::Builder::new()
                .name("gpumon-debug".into())
                .spawn(|| {
                    std::thread::sleep(Duration::from_millis(500));
                    panic!("GPUMON_DEBUG_PANIC=worker is set");
                });
            false
        }
        v => v.is_some(),
    }
}

async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    source: Source,
    settings: Settings,
) -> anyhow::Result<Option<OpenError>>
where
    B::Error: Send + Sync + 'static,
{
    let mut app = app_for(&source, &settings);
    let feed = Feed::start(source, settings.interval, settings.history);
    app.opening_for = feed.opening_for();
    let mut events = Events::new(feed, settings.estimate)?;
    let debug_panic = debug_panic();
    terminal.draw(|f| ui::draw(f, &mut app))?;
    loop {
        let event = match events.next().await {
            Event::Feed(feed::Event::Failed(e)) => return Ok(Some(e)),
            Event::Feed(feed::Event::Sample { .. }) if debug_panic => {
                panic!("GPUMON_DEBUG_PANIC is set")
            }
            e => e,
        };
        match event::step(&mut app, event) {
            Action::None => continue,
            Action::Quit => return Ok(None),
            Action::SetInterval(d) => events.feed.set_interval(d),
            Action::Redraw => {}
            Action::Replay(c) => {
                events.feed.seek(c);
                continue;
            }
            Action::Suspend => {
                terminal::suspend();
                // Here again after `fg`: the terminal is ours again, to be repainted whole.
                terminal::resume(terminal)?;
            }
            Action::Resume => terminal::resume(terminal)?,
        }
        if let Some(flags) = app.take_estimate_request() {
            events.estimate(flags);
        }
        terminal.draw(|f| ui::draw(f, &mut app))?;
        // Tell the feed what is on screen: the fleet node open, the processes whose host
        // facts are shown.
        events.feed.open_node(app.fleet_open());
        events.feed.focus(app.host_focus());
    }
}

/// Settings for tests: `interval` and `history`, idle after 10 minutes, and the estimate
/// model's own flags parser (`key=value` words over a 7B shape): the command line's, which the
/// dashboard command hands over, is the command line's to test, and `tui` names no CLI.
#[cfg(test)]
pub(crate) fn test_settings(interval: Duration, history: Duration) -> Settings {
    Settings {
        interval,
        history,
        idle_after: Duration::from_secs(600),
        estimate: |line| {
            crate::estimate::testing::flags(line)
                .map(|f| crate::estimate::Estimated::Formula(Box::new(f)))
        },
    }
}

/// Draws one frame of `sample` on any backend (used by tests and screenshots).
pub fn render_once<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    sample: Arc<Sample>,
) -> Result<(), B::Error> {
    app.on_sample(sample);
    terminal.draw(|f| ui::draw(f, app)).map(|_| ())
}

#[cfg(test)]
mod tests {
    /// The two screen buffers hold a cell per character: 200x50 is 20,000 cells. Without
    /// ratatui's underline colours (which gpumon never draws) a cell is 40 bytes, not 48; a
    /// dependency that turns the feature back on (ratatui's "crossterm" feature does) fails here.
    #[test]
    fn screen_cells_carry_no_underline_colour() {
        assert_eq!(std::mem::size_of::<ratatui::buffer::Cell>(), 40);
    }
}
