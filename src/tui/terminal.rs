//! The terminal the dashboard takes over: set-up, restore on every way out (a guard's `Drop`,
//! a panic hook that restores before the message prints, signals), job control (Ctrl-Z, `fg`),
//! and the thread that reads its keys.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
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
use tokio::sync::mpsc;

use super::{input, keys};

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
pub fn suspend() {
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
pub fn resume<B: Backend>(terminal: &mut Terminal<B>) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    if !ACTIVE.swap(true, Ordering::SeqCst) {
        take()?;
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

pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

pub fn setup() -> io::Result<Terminal<CrosstermBackend<io::Stdout>>> {
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
    ACTIVE.store(true, Ordering::SeqCst);
    take()?;
    Terminal::new(CrosstermBackend::new(io::stdout()))
}

/// Takes the terminal over: raw mode, the alternate screen, paste and mouse reports, no cursor
/// (what [`restore`] gives back).
fn take() -> io::Result<()> {
    enable_raw_mode()?;
    execute!(
        io::stdout(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture,
        cursor::Hide
    )
}

/// What the terminal's reader hands over.
pub enum Input {
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
pub fn read_terminal(tx: mpsc::Sender<Input>) {
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
