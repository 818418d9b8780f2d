//! The live dashboard: terminal set-up and restore, and the event loop.
//!
//! One `tokio::select!` takes samples from the sampler, input from a reader thread, and
//! SIGTERM/SIGHUP. The screen is redrawn only when a sample or an input changes something.
//! The terminal is restored on every way out: normal exit, error (a guard's `Drop`), panic (a
//! hook that restores before the message prints) and signals.

pub mod app;
pub mod theme;
pub mod ui;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event,
};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;
use tokio::sync::{mpsc, watch};

use crate::model::Sample;
use crate::sampler::{self, Sampler};
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

/// Runs the dashboard until the user quits or a signal arrives.
pub fn run(sampler: Sampler, interval: Duration, history: Duration) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()?;
    let mut terminal = setup()?;
    let _guard = Guard;
    runtime.block_on(event_loop(&mut terminal, sampler, interval, history))?;
    terminal.show_cursor()?;
    Ok(())
}

async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    sampler: Sampler,
    interval: Duration,
    history: Duration,
) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let (interval_tx, interval_rx) = watch::channel(interval);
    let (focus_tx, focus_rx) = watch::channel(Arc::new(Vec::new()));
    let (mut samples, task) = sampler::spawn(sampler.with_focus(focus_rx), interval_rx);
    let (input_tx, mut inputs) = mpsc::channel::<Input>(64);
    // crossterm's reader blocks; it lives on its own thread and ends with the process.
    std::thread::spawn(move || loop {
        let msg = match event::read() {
            Ok(ev) => Input::Event(ev),
            Err(_) => Input::Closed,
        };
        let closed = matches!(msg, Input::Closed);
        if input_tx.blocking_send(msg).is_err() || closed {
            return;
        }
    });
    let stop = crate::app::shutdown_signal();
    tokio::pin!(stop);
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;

    let mut app = App::new(interval, history);
    // Test hook: proves the panic hook restores the terminal (tests/integration/dashboard.rs).
    let debug_panic = std::env::var_os("GPUMON_DEBUG_PANIC").is_some();
    terminal.draw(|f| ui::draw(f, &mut app))?;
    loop {
        #[cfg(unix)]
        let hup = hangup.recv();
        #[cfg(not(unix))]
        let hup = std::future::pending::<Option<()>>();
        let action = tokio::select! {
            sample = samples.recv() => match sample {
                Some(_) if debug_panic => panic!("GPUMON_DEBUG_PANIC is set"),
                Some(s) => app.on_sample(s),
                None => Action::Quit,
            },
            input = inputs.recv() => match input {
                Some(Input::Event(ev)) => on_event(&mut app, ev),
                // No terminal input any more (stdin closed): keep showing samples.
                Some(Input::Closed) | None => Action::None,
            },
            _ = &mut stop => Action::Quit,
            _ = hup => Action::Quit,
        };
        match action {
            Action::None => continue,
            Action::Quit => break,
            Action::SetInterval(d) => {
                let _ = interval_tx.send(d);
            }
            Action::Redraw => {}
        }
        terminal.draw(|f| ui::draw(f, &mut app))?;
        // Tell the sampler which processes are on screen, so their host facts stay fresh.
        let visible = app.visible_pids();
        if **focus_tx.borrow() != visible {
            let _ = focus_tx.send(Arc::new(visible));
        }
    }
    drop(samples);
    task.abort();
    Ok(())
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
