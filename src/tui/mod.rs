//! The live dashboard: terminal set-up and restore, and the event loop.
//!
//! One `tokio::select!` takes samples from the sampler, input from a reader thread, and
//! SIGTERM/SIGHUP. The screen opens at once, even while the driver is still initialising, and
//! quitting never waits for a driver call: blocked threads are left behind. The screen is redrawn only when a sample or an input changes something.
//! The terminal is restored on every way out: normal exit, error (a guard's `Drop`), panic (a
//! hook that restores before the message prints) and signals.

pub mod app;
pub mod details;
pub mod fleet;
pub mod gpu;
pub mod input;
pub mod keys;
pub mod replay;
pub mod shared;
pub mod signal;
pub mod theme;
pub mod ui;

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event,
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

/// Gives the terminal back (as on exit) and stops this process until it is continued: what
/// Ctrl-Z does to a program that does not take the terminal over.
fn suspend() {
    restore();
    // SAFETY: raise only sends a signal to this process; SIGSTOP cannot be caught, so the
    // process stops here and returns once continued.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}

/// Takes the terminal again after a stop (raw mode, the alternate screen, paste and mouse
/// reports) and has the next frame paint every cell. Not `Terminal::clear`: it asks the
/// terminal where its cursor is, and the answer would come through crossterm's input reader,
/// which the dashboard does not run (`read_terminal` reads the keys).
fn resume<B: Backend>(terminal: &mut Terminal<B>) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    if !ACTIVE.swap(true, Ordering::SeqCst) {
        enable_raw_mode()?;
        execute!(
            io::stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture,
            cursor::Hide
        )?;
    }
    execute!(
        io::stdout(),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    )?;
    // An empty frame: the screen is blank and ratatui knows it, so the next frame is drawn
    // whole rather than as a difference.
    terminal.draw(|_| {})?;
    Ok(())
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
        // A worker's panic (the fleet's poller, a reader) would leave a view that never
        // refreshes on a terminal already given back: end the program as the main thread's
        // panic does, with its status.
        if std::thread::current().name() != Some("main") {
            std::process::exit(101);
        }
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
    /// No terminal to read keys from (none could be opened): samples keep being shown.
    NoTerminal,
    /// The terminal went away (end of file or an error reading it: a closed pseudo-terminal
    /// that sent no SIGHUP): there is no one left to show anything to, so the dashboard quits.
    HungUp,
}

/// The terminal the dashboard reads keys from: standard input when it is one, else
/// `/dev/tty` (as crossterm picks it for raw mode).
fn tty_fd() -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::{AsFd, OwnedFd};
    if io::stdin().is_terminal() {
        return io::stdin().as_fd().try_clone_to_owned().ok();
    }
    std::fs::File::open("/dev/tty").ok().map(OwnedFd::from)
}

/// Reads the terminal's bytes and decodes them ([`keys::Decoder`]); a run of text keys
/// faster than typing is a paste without brackets and goes in as one paste
/// ([`input::coalesce`]). Ends when the terminal closes or nobody listens.
fn read_terminal(tx: mpsc::Sender<Input>) {
    use std::os::fd::AsRawFd;
    let Some(tty) = tty_fd() else {
        let _ = tx.blocking_send(Input::NoTerminal);
        return;
    };
    let fd = tty.as_raw_fd();
    let mut decoder = keys::Decoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    // Waits up to `limit` for bytes; decodes what came (or what timed out) into `out`.
    // `false`: the terminal is gone.
    let mut step = |limit: Option<Duration>, out: &mut Vec<Event>| -> Option<bool> {
        let now = std::time::Instant::now();
        let wait = match (decoder.deadline(), limit) {
            (Some(d), Some(l)) => Some(d.saturating_duration_since(now).min(l)),
            (Some(d), None) => Some(d.saturating_duration_since(now)),
            (None, l) => l,
        };
        let ms = wait.map_or(-1, |w| i32::try_from(w.as_millis()).unwrap_or(i32::MAX));
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
        if ready < 0 {
            return (io::Error::last_os_error().kind() == io::ErrorKind::Interrupted)
                .then_some(false);
        }
        if ready == 0 {
            decoder.timeout(std::time::Instant::now(), out);
            return Some(false);
        }
        // SAFETY: reads at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n == 0 {
            return None;
        }
        if n < 0 {
            let kind = io::Error::last_os_error().kind();
            return matches!(kind, io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock)
                .then_some(false);
        }
        decoder.feed(&buf[..n as usize], std::time::Instant::now(), out);
        Some(true)
    };
    let send = |ev: Event| tx.blocking_send(Input::Event(ev)).is_ok();
    loop {
        let mut events = Vec::new();
        if step(None, &mut events).is_none() {
            let _ = tx.blocking_send(Input::HungUp);
            return;
        }
        // Text keys that keep coming within BURST_GAP of each other form one run.
        let mut after = Vec::new();
        if !events.is_empty() && events.iter().all(|e| input::typed(e).is_some()) {
            loop {
                let mut more = Vec::new();
                match step(Some(input::BURST_GAP), &mut more) {
                    None => break,
                    Some(false) if more.is_empty() => break,
                    Some(_) => {}
                }
                match more.iter().position(|e| input::typed(e).is_none()) {
                    None => events.extend(more),
                    Some(i) => {
                        after = more.split_off(i);
                        events.extend(more);
                        break;
                    }
                }
            }
            events = input::coalesce(events);
        }
        for ev in events.into_iter().chain(after) {
            if !send(ev) {
                return;
            }
        }
    }
}

/// How the dashboard starts: with its sampler, or while the driver is still initialising
/// (NVML's init can block for seconds, or for good on a wedged driver).
pub enum Start {
    Ready(Box<Sampler>),
    /// A recording, from a time: the dashboard replays it.
    Replay(
        Box<crate::collect::recording::Reader>,
        std::time::SystemTime,
        String,
    ),
    /// The fleet: other nodes' `gpumon serve`, or a Prometheus's targets, each read within
    /// `deadline`.
    Fleet(fleet::Nodes, crate::collect::remote::Client, Duration),
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
    idle_after: Duration,
    record: Option<crate::collect::recording::Writer>,
) -> anyhow::Result<Option<OpenError>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()?;
    let mut terminal = setup()?;
    let guard = Guard;
    let result = runtime.block_on(event_loop(
        &mut terminal,
        start,
        interval,
        history,
        idle_after,
        record,
    ));
    // Quit promptly even while a tick waits on a hung GPU or NVML is still initialising:
    // blocked threads are left behind, never joined (the process exits around them).
    runtime.shutdown_background();
    let _ = terminal.show_cursor();
    drop(guard);
    result
}

/// Samples from the sampler, once it runs.
async fn next_frame(frames: &mut Option<mpsc::Receiver<replay::Frame>>) -> Option<replay::Frame> {
    match frames {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn next_fleet(frames: &mut Option<mpsc::Receiver<fleet::Frame>>) -> Option<fleet::Frame> {
    match frames {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

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
    idle_after: Duration,
    mut record: Option<crate::collect::recording::Writer>,
) -> anyhow::Result<Option<OpenError>>
where
    B::Error: Send + Sync + 'static,
{
    let queue_dir = crate::collect::queue::dir(None);
    let (interval_tx, interval_rx) = watch::channel(interval);
    let (focus_tx, focus_rx) = watch::channel(Arc::new(Some(Vec::new())));
    let mut samples = None;
    let mut task = None;
    let mut opening = None;
    let mut replay = None;
    let mut replaying = None;
    let mut fleet_frames = None;
    let mut fleet_view = None;
    let (open_tx, open_rx) = watch::channel(None);
    match start {
        Start::Fleet(nodes, client, deadline) => {
            fleet_view = Some(match &nodes {
                fleet::Nodes::Listed(eps) => fleet::View::new(eps),
                fleet::Nodes::Prometheus(source) => fleet::View {
                    prometheus: Some(format!("{}:{}", source.endpoint.host, source.endpoint.port)),
                    ..fleet::View::default()
                },
            });
            fleet_frames = Some(fleet::spawn(
                nodes,
                client,
                interval_rx.clone(),
                deadline,
                history,
                open_rx,
            ));
        }
        Start::Replay(reader, at, file) => {
            let (cmd_tx, rx) = replay::spawn(*reader, at, history);
            replay = Some(rx);
            replaying = Some((cmd_tx, file));
        }
        Start::Ready(sampler) => {
            let (rx, t) =
                sampler::spawn((*sampler).with_focus(focus_rx.clone()), interval_rx.clone());
            samples = Some(rx);
            task = Some(t);
        }
        Start::Opening(o, make) => opening = Some((o, make)),
    }
    // Estimates whose flags read files, worked out off this thread, one at a time: the
    // flags of the one running, and the newest ones asked meanwhile.
    let (estimate_tx, mut estimates) = mpsc::channel::<(String, app::EstimateInputs)>(1);
    let mut estimating = false;
    let mut next_estimate: Option<String> = None;
    let run_estimate = |flags: String, tx: mpsc::Sender<(String, app::EstimateInputs)>| {
        std::thread::spawn(move || {
            let result = crate::tracer::panel_estimate(&flags);
            let _ = tx.blocking_send((flags, result));
        });
    };
    let (input_tx, mut inputs) = mpsc::channel::<Input>(64);
    // The terminal is read on a thread of its own that ends with the process (see
    // `read_terminal`).
    std::thread::spawn(move || read_terminal(input_tx));
    let stop = crate::runtime::shutdown_signal();
    tokio::pin!(stop);
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangup = signal(SignalKind::hangup())?;
    // Signals whose default action ends the process without restoring the terminal: quit as
    // `q` does instead.
    let mut quit_signals = [
        signal(SignalKind::quit())?,
        signal(SignalKind::user_defined1())?,
        signal(SignalKind::user_defined2())?,
        signal(SignalKind::alarm())?,
    ];
    let mut resized = signal(SignalKind::window_change())?;
    let mut stop_signal = signal(SignalKind::from_raw(libc::SIGTSTP))?;
    let mut continued = signal(SignalKind::from_raw(libc::SIGCONT))?;
    // While the driver initialises: look for it, and count the wait on screen.
    let mut poll = tokio::time::interval(Duration::from_millis(100));
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let mut app = App::new(interval, history);
    app.usage = crate::model::rollup::Usage::new(idle_after, history);
    app.fleet = fleet_view;
    if let Some((_, file)) = &replaying {
        app.replay = Some(app::ReplayView {
            file: file.clone(),
            playing: false,
            speed: 1.0,
            span: (
                std::time::SystemTime::UNIX_EPOCH,
                std::time::SystemTime::UNIX_EPOCH,
            ),
            goto: String::new(),
            goto_error: None,
        });
    }

    app.opening_for = opening.as_ref().map(|(o, _)| o.elapsed());
    // Test hook: proves the panic hook restores the terminal (tests/integration/dashboard.rs).
    let debug_panic = std::env::var_os("GPUMON_DEBUG_PANIC");
    // `worker`: a thread other than the drawing one panics instead.
    let debug_panic = match debug_panic.as_deref().and_then(|v| v.to_str()) {
        Some("worker") => {
            let _ = std::thread::Builder::new()
                .name("gpumon-debug".into())
                .spawn(|| {
                    std::thread::sleep(std::time::Duration::from_millis(500));
                    panic!("GPUMON_DEBUG_PANIC=worker is set");
                });
            false
        }
        v => v.is_some(),
    };
    terminal.draw(|f| ui::draw(f, &mut app))?;
    let mut reading = true;
    let outcome = loop {
        let hup = hangup.recv();
        let [q1, q2, q3, q4] = &mut quit_signals;
        let quit = async {
            tokio::select! {
                _ = q1.recv() => {}
                _ = q2.recv() => {}
                _ = q3.recv() => {}
                _ = q4.recv() => {}
            }
        };
        let action = tokio::select! {
            sample = next_sample(&mut samples) => match sample {
                Some(_) if debug_panic => panic!("GPUMON_DEBUG_PANIC is set"),
                Some(s) => {
                    if let Some(w) = record.as_mut() {
                        if let Err(e) = w.append(&s) {
                            // Said in the header; the dashboard goes on without it.
                            app.notice = Some(format!("recording stopped: {e}"));
                            record = None;
                        }
                    }
                    if !app.paused {
                        app.queue = crate::collect::queue::read(&queue_dir);
                    }
                    app.on_sample(s)
                }
                None => Action::Quit,
            },
            frame = next_fleet(&mut fleet_frames) => match frame {
                Some(f) => app.on_fleet_frame(f),
                None => {
                    fleet_frames = None;
                    Action::None
                }
            },
            frame = next_frame(&mut replay) => match frame {
                Some(f) => app.on_replay_frame(f),
                // The player has ended (the recording could not be read on).
                None => {
                    replay = None;
                    Action::None
                }
            },
            input = inputs.recv(), if reading => match input {
                Some(Input::Event(ev)) => on_event(&mut app, ev),
                Some(Input::HungUp) => Action::Quit,
                // No terminal to read: keep showing samples, and stop asking (a closed
                // channel answers at once, every time).
                Some(Input::NoTerminal) | None => {
                    reading = false;
                    Action::None
                }
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
            _ = quit => Action::Quit,
            _ = resized.recv() => Action::Redraw,
            Some((flags, result)) = estimates.recv() => {
                estimating = false;
                if let Some(flags) = next_estimate.take() {
                    estimating = true;
                    run_estimate(flags, estimate_tx.clone());
                }
                app.on_estimate(&flags, result)
            }
            _ = stop_signal.recv() => Action::Suspend,
            // Continued after a stop we did not arrange (SIGSTOP from outside): the terminal
            // may have been changed meanwhile; take it again and repaint all of it.
            _ = continued.recv() => {
                resume(terminal)?;
                Action::Redraw
            }
        };
        match action {
            Action::None => continue,
            Action::Quit => break None,
            Action::SetInterval(d) => {
                let _ = interval_tx.send(d);
            }
            Action::Redraw => {}
            Action::Replay(c) => {
                if let Some((tx, _)) = &replaying {
                    let _ = tx.send(c);
                }
                continue;
            }
            Action::Suspend => {
                suspend();
                // Here again after `fg`: the terminal is ours again, to be repainted whole.
                resume(terminal)?;
            }
        }
        if let Some(flags) = app.take_estimate_request() {
            if estimating {
                next_estimate = Some(flags);
            } else {
                estimating = true;
                run_estimate(flags, estimate_tx.clone());
            }
        }
        terminal.draw(|f| ui::draw(f, &mut app))?;
        // Tell the fleet's poller which node is open.
        if *open_tx.borrow() != app.fleet_open() {
            let _ = open_tx.send(app.fleet_open());
        }
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
