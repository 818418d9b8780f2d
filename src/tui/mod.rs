//! The live dashboard: terminal set-up and restore, and the event loop.
//!
//! One `tokio::select!` takes samples from the sampler, input from a reader thread, and
//! SIGTERM/SIGHUP. The screen opens at once, even while the driver is still initialising, and
//! quitting never waits for a driver call: blocked threads are left behind. The screen is redrawn only when a sample or an input changes something.
//! The terminal is restored on every way out: normal exit, error (a guard's `Drop`), panic (a
//! hook that restores before the message prints) and signals.

pub mod app;
pub mod details;
pub mod gpu;
pub mod input;
pub mod signal;
pub mod theme;
pub mod ui;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use ratatui::backend::Backend;
use ratatui::Terminal;
use ratatui_crossterm::CrosstermBackend;
use tokio::sync::{mpsc, watch};

use crate::collect::sampler::{self, Sampler};
use crate::collect::source::{OpenError, Opened, Opening};
use crate::model::Sample;
use app::{Action, App};

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back: idempotent, safe from a panic hook.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let mut out = io::stdout();
        let _ = execute!(
            out,
            DisableMouseCapture,
            DisableBracketedPaste,
            LeaveAlternateScreen,
            cursor::Show
        );
        let _ = disable_raw_mode();
        let _ = out.flush();
    }
}

struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

fn setup() -> io::Result<Terminal<CrosstermBackend<io::Stdout>>> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    execute!(
        io::stdout(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture,
        cursor::Hide
    )?;
    Terminal::new(CrosstermBackend::new(io::stdout()))
}

enum Input {
    Event(Event),
    Closed,
}

/// How the dashboard starts: with its sampler, or while the driver is still initialising
/// (NVML's init can block for seconds, or for good on a wedged driver).
pub enum Start {
    Ready(Box<Sampler>),
    /// The source is opening; the function makes the sampler once it is open.
    Opening(Opening, Box<dyn FnOnce(Opened) -> Sampler + Send>),
}

/// Runs the dashboard until the user quits or a signal arrives. `Ok(Some(e))`: the source
/// failed to open after the screen was up (the terminal is restored before the caller prints
/// it).
pub fn run(
    start: Start,
    interval: Duration,
    history: Duration,
) -> anyhow::Result<Option<OpenError>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()?;
    let mut terminal = setup()?;
    let guard = Guard;
    let result = runtime.block_on(event_loop(&mut terminal, start, interval, history));
    // Quit promptly even while a tick waits on a hung GPU or NVML is still initialising:
    // blocked threads are left behind, never joined (the process exits around them).
    runtime.shutdown_background();
    let _ = terminal.show_cursor();
    drop(guard);
    result
}

/// Samples from the sampler, once it runs.
async fn next_sample(samples: &mut Option<mpsc::Receiver<Arc<Sample>>>) -> Option<Arc<Sample>> {
    match samples {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    start: Start,
    interval: Duration,
    history: Duration,
) -> anyhow::Result<Option<OpenError>>
where
    B::Error: Send + Sync + 'static,
{
    let (interval_tx, interval_rx) = watch::channel(interval);
    let (focus_tx, focus_rx) = watch::channel(Arc::new(Some(Vec::new())));
    let mut samples = None;
    let mut task = None;
    let mut opening = None;
    match start {
        Start::Ready(sampler) => {
            let (rx, t) =
                sampler::spawn((*sampler).with_focus(focus_rx.clone()), interval_rx.clone());
            samples = Some(rx);
            task = Some(t);
        }
        Start::Opening(o, make) => opening = Some((o, make)),
    }
    let (input_tx, mut inputs) = mpsc::channel::<Input>(64);
    // crossterm's reader blocks; it lives on its own thread and ends with the process. A run
    // of text keys faster than typing is a paste without brackets: it goes in as one paste.
    std::thread::spawn(move || {
        let send = |msg: Input| input_tx.blocking_send(msg).is_ok();
        loop {
            let Ok(ev) = event::read() else {
                let _ = send(Input::Closed);
                return;
            };
            if input::typed(&ev).is_none() {
                if !send(Input::Event(ev)) {
                    return;
                }
                continue;
            }
            let mut run = vec![ev];
            let mut after = None;
            while event::poll(input::BURST_GAP).unwrap_or(false) {
                match event::read() {
                    Ok(next) if input::typed(&next).is_some() => run.push(next),
                    Ok(next) => {
                        after = Some(next);
                        break;
                    }
                    Err(_) => break,
                }
            }
            for ev in input::coalesce(run).into_iter().chain(after) {
                if !send(Input::Event(ev)) {
                    return;
                }
            }
        }
    });
    let stop = crate::runtime::shutdown_signal();
    tokio::pin!(stop);
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    // While the driver initialises: look for it, and count the wait on screen.
    let mut poll = tokio::time::interval(Duration::from_millis(100));
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let mut app = App::new(interval, history);
    app.opening_for = opening.as_ref().map(|(o, _)| o.elapsed());
    // Test hook: proves the panic hook restores the terminal (tests/integration/dashboard.rs).
    let debug_panic = std::env::var_os("GPUMON_DEBUG_PANIC").is_some();
    terminal.draw(|f| ui::draw(f, &mut app))?;
    let outcome = loop {
        #[cfg(unix)]
        let hup = hangup.recv();
        #[cfg(not(unix))]
        let hup = std::future::pending::<Option<()>>();
        let action = tokio::select! {
            sample = next_sample(&mut samples) => match sample {
                Some(_) if debug_panic => panic!("GPUMON_DEBUG_PANIC is set"),
                Some(s) => app.on_sample(s),
                None => Action::Quit,
            },
            input = inputs.recv() => match input {
                Some(Input::Event(ev)) => on_event(&mut app, ev),
                // No terminal input any more (stdin closed): keep showing samples.
                Some(Input::Closed) | None => Action::None,
            },
            _ = poll.tick(), if opening.is_some() => {
                let Some((o, _)) = &opening else { continue };
                match o.poll() {
                    None => {
                        let shown = app.opening_for.map(|d| d.as_secs());
                        app.opening_for = Some(o.elapsed());
                        if shown == Some(o.elapsed().as_secs()) { Action::None } else { Action::Redraw }
                    }
                    Some(Err(e)) => break Some(e),
                    Some(Ok(source)) => {
                        let Some((_, make)) = opening.take() else { continue };
                        app.opening_for = None;
                        let sampler = make(source).with_focus(focus_rx.clone());
                        let (rx, t) = sampler::spawn(sampler, interval_rx.clone());
                        samples = Some(rx);
                        task = Some(t);
                        Action::Redraw
                    }
                }
            }
            _ = &mut stop => Action::Quit,
            _ = hup => Action::Quit,
        };
        match action {
            Action::None => continue,
            Action::Quit => break None,
            Action::SetInterval(d) => {
                let _ = interval_tx.send(d);
            }
            Action::Redraw => {}
        }
        terminal.draw(|f| ui::draw(f, &mut app))?;
        // Tell the sampler which processes need fresh host facts.
        let focus = app.host_focus();
        if **focus_tx.borrow() != focus {
            let _ = focus_tx.send(Arc::new(focus));
        }
    };
    drop(samples);
    if let Some(t) = task {
        t.abort();
    }
    Ok(outcome)
}

fn on_event(app: &mut App, ev: Event) -> Action {
    match ev {
        Event::Key(k) => app.on_key(k),
        Event::Paste(text) => app.on_paste(&text),
        Event::Mouse(m) => app.on_mouse(m),
        Event::Resize(_, _) => Action::Redraw,
        _ => Action::None,
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
