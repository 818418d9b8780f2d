//! The dashboard's one event type, the one place that owns what produces events (the feed,
//! the terminal's reader, the estimate worker, the signals), and [`step`], which applies an
//! event to the state: the loop draws and carries out the [`Action`], and tests drive
//! [`step`] with no terminal and no runtime.

use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;

use super::app::{Action, App, EstimateInputs};
use super::terminal::{read_terminal, Input};
use crate::feed::{self, Feed};

/// Everything that can change what the dashboard shows or does.
#[derive(Debug)]
pub enum Event {
    /// A key, a paste, a mouse report or a new size, from the terminal.
    Input(crossterm::event::Event),
    /// The terminal went away (end of file, an error reading it): nobody is left to see.
    HungUp,
    /// What the feed hands over.
    Feed(feed::Event),
    /// The estimate of the panel's flags, worked out off this thread.
    Estimate(String, EstimateInputs),
    Signal(Caught),
}

/// A signal the dashboard acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caught {
    /// SIGTERM, SIGINT, SIGHUP, and those whose default action would end the process without
    /// restoring the terminal (SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM): quit as `q` does.
    Quit,
    /// SIGWINCH.
    Resized,
    /// SIGTSTP: give the terminal back and stop.
    Stop,
    /// SIGCONT after a stop we did not arrange (SIGSTOP from outside): the terminal may have
    /// been changed meanwhile.
    Continued,
}

/// Applies `event` to the dashboard's state; what the loop must do comes back.
pub fn step(app: &mut App, event: Event) -> Action {
    use crossterm::event::Event as Term;
    match event {
        Event::Input(Term::Key(k)) => app.on_key(k),
        Event::Input(Term::Paste(text)) => app.on_paste(&text),
        Event::Input(Term::Mouse(m)) => app.on_mouse(m),
        Event::Input(Term::Resize(_, _)) => Action::Redraw,
        Event::Input(_) => Action::None,
        Event::HungUp => Action::Quit,
        Event::Feed(e) => on_feed(app, e),
        Event::Estimate(flags, result) => app.on_estimate(&flags, result),
        Event::Signal(Caught::Quit) => Action::Quit,
        Event::Signal(Caught::Resized) => Action::Redraw,
        Event::Signal(Caught::Stop) => Action::Suspend,
        Event::Signal(Caught::Continued) => Action::Resume,
    }
}

fn on_feed(app: &mut App, event: feed::Event) -> Action {
    match event {
        feed::Event::Sample {
            sample,
            queue,
            notice,
        } => {
            if notice.is_some() {
                app.notice = notice;
            }
            if !app.paused {
                app.queue = queue;
            }
            app.on_sample(sample)
        }
        feed::Event::Replay(p) => app.on_replay_frame(p),
        feed::Event::Fleet(r) => app.on_fleet_frame(*r),
        feed::Event::Opening(d) => {
            // The screen counts whole seconds: redrawn when the count changes.
            let shown = app.opening_for.map(|d| d.as_secs());
            app.opening_for = Some(d);
            if shown == Some(d.as_secs()) {
                Action::None
            } else {
                Action::Redraw
            }
        }
        feed::Event::Opened => {
            app.opening_for = None;
            Action::Redraw
        }
        // The loop ends on a failed open before it steps (it returns the error); a feed that
        // ends has nothing more to show.
        feed::Event::Failed(_) | feed::Event::Ended => Action::Quit,
    }
}

/// Works out the estimate panel's flags that read files off the UI thread, one at a time:
/// the flags of the one running, and the newest asked meanwhile.
struct Estimator {
    estimate: fn(&str) -> EstimateInputs,
    tx: mpsc::Sender<(String, EstimateInputs)>,
    rx: mpsc::Receiver<(String, EstimateInputs)>,
    running: bool,
    waiting: Option<String>,
}

impl Estimator {
    fn ask(&mut self, flags: String) {
        if self.running {
            self.waiting = Some(flags);
            return;
        }
        self.running = true;
        let (tx, estimate) = (self.tx.clone(), self.estimate);
        std::thread::spawn(move || {
            let result = estimate(&flags);
            let _ = tx.blocking_send((flags, result));
        });
    }

    fn done(&mut self) {
        self.running = false;
        if let Some(flags) = self.waiting.take() {
            self.ask(flags);
        }
    }
}

/// The signals the dashboard catches.
struct Signals {
    stop: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
    quit: [Signal; 5],
    resized: Signal,
    stopped: Signal,
    continued: Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            stop: Box::pin(crate::console::shutdown_signal()),
            quit: [
                signal(SignalKind::hangup())?,
                signal(SignalKind::quit())?,
                signal(SignalKind::user_defined1())?,
                signal(SignalKind::user_defined2())?,
                signal(SignalKind::alarm())?,
            ],
            resized: signal(SignalKind::window_change())?,
            stopped: signal(SignalKind::from_raw(libc::SIGTSTP))?,
            continued: signal(SignalKind::from_raw(libc::SIGCONT))?,
        })
    }

    async fn next(&mut self) -> Caught {
        let [q1, q2, q3, q4, q5] = &mut self.quit;
        tokio::select! {
            _ = &mut self.stop => Caught::Quit,
            _ = q1.recv() => Caught::Quit,
            _ = q2.recv() => Caught::Quit,
            _ = q3.recv() => Caught::Quit,
            _ = q4.recv() => Caught::Quit,
            _ = q5.recv() => Caught::Quit,
            _ = self.resized.recv() => Caught::Resized,
            _ = self.stopped.recv() => Caught::Stop,
            _ = self.continued.recv() => Caught::Continued,
        }
    }
}

/// Owns every source of events: one `select!` over them.
pub struct Events {
    pub feed: Feed,
    inputs: mpsc::Receiver<Input>,
    /// Whether there is a terminal to read keys from.
    reading: bool,
    estimator: Estimator,
    signals: Signals,
}

impl Events {
    /// Starts the terminal's reader and catches the signals (inside a tokio runtime).
    pub fn new(feed: Feed, estimate: fn(&str) -> EstimateInputs) -> std::io::Result<Events> {
        let (input_tx, inputs) = mpsc::channel(64);
        // The terminal is read on a thread of its own that ends with the process (see
        // `read_terminal`).
        std::thread::spawn(move || read_terminal(input_tx));
        let (tx, rx) = mpsc::channel(1);
        Ok(Events {
            feed,
            inputs,
            reading: true,
            estimator: Estimator {
                estimate,
                tx,
                rx,
                running: false,
                waiting: None,
            },
            signals: Signals::new()?,
        })
    }

    /// The next event.
    pub async fn next(&mut self) -> Event {
        loop {
            let event = tokio::select! {
                e = self.feed.next() => Event::Feed(e),
                input = self.inputs.recv(), if self.reading => match input {
                    Some(Input::Event(ev)) => Event::Input(ev),
                    Some(Input::HungUp) => Event::HungUp,
                    // No terminal to read: keep showing samples, and stop asking (a closed
                    // channel answers at once, every time).
                    Some(Input::NoTerminal) | None => {
                        self.reading = false;
                        continue;
                    }
                },
                Some((flags, result)) = self.estimator.rx.recv() => {
                    self.estimator.done();
                    Event::Estimate(flags, result)
                }
                s = self.signals.next() => Event::Signal(s),
            };
            return event;
        }
    }

    /// Works out the estimate of `flags` off this thread; it comes back as
    /// [`Event::Estimate`].
    pub fn estimate(&mut self, flags: String) {
        self.estimator.ask(flags);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use crossterm::event::{Event as Term, KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::feed::replay::{Command, Playback};
    use crate::model::{Device, Memory, Process, ProcessKind, Sample};
    use crate::tui::app::{Mode, SortKey};

    const GIB: u64 = 1 << 30;

    fn app() -> App {
        App::new(&crate::tui::test_settings(
            Duration::from_secs(1),
            Duration::from_secs(600),
        ))
    }

    fn key(c: KeyCode) -> Event {
        Event::Input(Term::Key(KeyEvent::new(c, KeyModifiers::NONE)))
    }

    fn sample(secs: u64, used_gib: u64) -> Arc<Sample> {
        Arc::new(Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + secs),
            hostname: Some("node".into()),
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: vec![Device {
                memory: Memory {
                    used_bytes: Some(used_gib * GIB),
                    total_bytes: Some(80 * GIB),
                    ..Default::default()
                },
                ..Device::default()
            }],
            error: None,
            host: None,
        })
    }

    fn live(s: Arc<Sample>, queue: Vec<crate::model::queue::Entry>) -> Event {
        Event::Feed(feed::Event::Sample {
            sample: s,
            queue,
            notice: None,
        })
    }

    fn used(app: &App) -> Option<u64> {
        app.sample.as_ref()?.devices.first()?.memory.used_bytes
    }

    #[test]
    fn a_key_changes_the_state_and_says_what_to_do() {
        let mut app = app();
        assert_eq!(step(&mut app, key(KeyCode::Char('?'))), Action::Redraw);
        assert_eq!(app.mode, Mode::Help);
        assert_eq!(step(&mut app, key(KeyCode::Esc)), Action::Redraw);
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(
            step(&mut app, key(KeyCode::Char('+'))),
            Action::SetInterval(Duration::from_secs(2))
        );
        assert_eq!(step(&mut app, key(KeyCode::Char('q'))), Action::Quit);
    }

    #[test]
    fn a_paste_on_the_main_screen_opens_the_oom_panel_with_it() {
        let mut app = app();
        let text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
        assert_eq!(
            step(&mut app, Event::Input(Term::Paste(text.into()))),
            Action::Redraw
        );
        assert_eq!(app.mode, Mode::Oom);
        assert_eq!(app.oom.text, text);
        assert!(app.oom.analysis.is_some());
    }

    #[test]
    fn a_live_sample_is_shown_with_its_queue_and_held_while_paused() {
        let mut app = app();
        let waiting = vec![crate::model::queue::example("ana", 1.0, Some(10))];
        assert_eq!(
            step(&mut app, live(sample(0, 10), waiting.clone())),
            Action::Redraw
        );
        assert_eq!(used(&app), Some(10 * GIB));
        assert_eq!(app.queue, waiting);
        // Paused: the screen keeps its snapshot, the queue too.
        step(&mut app, key(KeyCode::Char(' ')));
        assert_eq!(
            step(&mut app, live(sample(1, 20), Vec::new())),
            Action::None
        );
        assert_eq!(used(&app), Some(10 * GIB));
        assert_eq!(app.queue, waiting);
        // A recording that stopped is said, whatever the pause.
        let stopped = Event::Feed(feed::Event::Sample {
            sample: sample(2, 30),
            queue: Vec::new(),
            notice: Some("recording stopped: disk full".into()),
        });
        step(&mut app, stopped);
        assert_eq!(app.notice.as_deref(), Some("recording stopped: disk full"));
    }

    #[test]
    fn the_live_feed_ending_quits_and_the_opening_wait_redraws_once_a_second() {
        let mut app = app();
        let opening = |ms| Event::Feed(feed::Event::Opening(Duration::from_millis(ms)));
        assert_eq!(step(&mut app, opening(100)), Action::Redraw);
        assert_eq!(step(&mut app, opening(200)), Action::None, "still 0 s");
        assert_eq!(step(&mut app, opening(1_100)), Action::Redraw);
        assert_eq!(app.opening_for, Some(Duration::from_millis(1_100)));
        assert_eq!(
            step(&mut app, Event::Feed(feed::Event::Opened)),
            Action::Redraw
        );
        assert_eq!(app.opening_for, None);
        assert_eq!(
            step(&mut app, Event::Feed(feed::Event::Ended)),
            Action::Quit
        );
    }

    #[test]
    fn replay_keys_seek_and_the_players_samples_become_the_history() {
        let mut app = app();
        app.replay = Some(crate::tui::app::ReplayView::new("run.gpumon"));
        assert_eq!(
            step(&mut app, key(KeyCode::Right)),
            Action::Replay(Command::Step(1))
        );
        assert_eq!(
            step(&mut app, key(KeyCode::Char('['))),
            Action::Replay(Command::Jump(-60))
        );
        let span = (
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_000),
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_100),
        );
        let playback = Playback {
            reset: true,
            samples: vec![sample(0, 5), sample(1, 6), sample(2, 7)],
            playing: true,
            speed: 2.0,
            span,
        };
        assert_eq!(
            step(&mut app, Event::Feed(feed::Event::Replay(playback))),
            Action::Redraw
        );
        assert_eq!(used(&app), Some(7 * GIB), "the sample at the cursor");
        let r = app.replay.as_ref().expect("replay");
        assert!(r.playing);
        assert_eq!((r.speed, r.span), (2.0, span));
        let points = app.history.device(0).map(|d| d.points.len());
        assert_eq!(
            points,
            Some(3),
            "the window before the cursor is the history"
        );
    }

    #[test]
    fn a_fleet_answer_fills_its_rows() {
        let mut app = app();
        app.fleet = Some(crate::tui::fleet::View::default());
        let round = crate::feed::fleet::Round {
            new_rows: vec![("a".into(), "a:9400".into())],
            updates: vec![(
                0,
                Ok(crate::model::fleet::NodeSummary::default()),
                Duration::from_millis(5),
            )],
            ..Default::default()
        };
        assert_eq!(
            step(&mut app, Event::Feed(feed::Event::Fleet(Box::new(round)))),
            Action::Redraw
        );
        let view = app.fleet.as_ref().expect("fleet");
        assert_eq!(view.rows.len(), 1);
        assert!(view.rows[0].summary.is_some());
        assert!(view.rows[0].error.is_none());
    }

    #[test]
    fn a_resize_redraws_from_the_terminal_or_the_signal() {
        let mut app = app();
        assert_eq!(
            step(&mut app, Event::Input(Term::Resize(100, 30))),
            Action::Redraw
        );
        assert_eq!(
            step(&mut app, Event::Signal(Caught::Resized)),
            Action::Redraw
        );
    }

    #[test]
    fn signals_quit_stop_and_resume() {
        let mut app = app();
        assert_eq!(step(&mut app, Event::Signal(Caught::Quit)), Action::Quit);
        assert_eq!(step(&mut app, Event::Signal(Caught::Stop)), Action::Suspend);
        assert_eq!(
            step(&mut app, Event::Signal(Caught::Continued)),
            Action::Resume
        );
        assert_eq!(step(&mut app, Event::HungUp), Action::Quit);
    }

    #[test]
    fn an_estimate_for_flags_since_changed_is_dropped() {
        let mut app = app();
        let result = Err::<crate::estimate::Estimated, String>("no such file".into());
        assert_eq!(
            step(&mut app, Event::Estimate("--model m".into(), result)),
            Action::None,
            "the panel holds other flags"
        );
        assert!(app.estimate.inputs.is_none());
    }

    /// GPU 0: pids 10 (ana, 30 GiB) and 11 (bob, 10 GiB); GPU 1: pids 20 (bob, 20 GiB) and
    /// 21 (cy, 5 GiB).
    fn four_processes() -> Event {
        let mut devices: Vec<Device> = (0..2)
            .map(|i| Device {
                index: i,
                ..Device::default()
            })
            .collect();
        for (gpu, pid, gib, user) in [
            (0, 10, 30, "ana"),
            (0, 11, 10, "bob"),
            (1, 20, 20, "bob"),
            (1, 21, 5, "cy"),
        ] {
            let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(gib * GIB));
            p.user = Some(user.into());
            p.command = Some(format!("python job{pid}.py"));
            devices[gpu].processes.push(p);
        }
        live(
            Arc::new(Sample {
                devices,
                ..(*sample(0, 0)).clone()
            }),
            Vec::new(),
        )
    }

    /// The table's rows, top first, by pid.
    fn pids(app: &App) -> Vec<u32> {
        (0..app.row_count())
            .filter_map(|i| app.row(i))
            .map(|r| r.process.pid)
            .collect()
    }

    fn selected(app: &App) -> Option<u32> {
        app.selected_row().map(|r| r.process.pid)
    }

    #[test]
    fn the_tables_keys_sort_it() {
        let mut app = app();
        step(&mut app, four_processes());
        assert_eq!(pids(&app), [10, 20, 11, 21], "GPU memory, largest first");
        assert_eq!(step(&mut app, key(KeyCode::Char('S'))), Action::Redraw);
        assert_eq!(pids(&app), [21, 11, 20, 10], "S reverses");
        step(&mut app, key(KeyCode::Char('r')));
        assert_eq!(pids(&app), [10, 20, 11, 21], "and r");
        // `s` steps to the next column shown: no GPU has accounting on and no process a
        // limit, so PEAK and LIMIT are skipped.
        assert_eq!(step(&mut app, key(KeyCode::Char('s'))), Action::Redraw);
        assert_eq!(app.table.sort, SortKey::Sm);
        step(&mut app, key(KeyCode::Char('<')));
        assert_eq!(app.table.sort, SortKey::GpuMem, "< steps back");
        step(&mut app, key(KeyCode::Char('>')));
        assert_eq!(app.table.sort, SortKey::Sm, "> as s");
        // A number sorts by that column on screen; again, it reverses.
        app.table.columns = vec![(SortKey::Pid, 0, 6), (SortKey::User, 7, 8)];
        step(&mut app, key(KeyCode::Char('1')));
        assert_eq!(pids(&app), [21, 20, 11, 10], "PID, largest first");
        step(&mut app, key(KeyCode::Char('1')));
        assert_eq!(pids(&app), [10, 11, 20, 21]);
        step(&mut app, key(KeyCode::Char('2')));
        assert_eq!(app.table.sort, SortKey::User);
        assert!(!app.table.descending, "names A to Z");
        assert_eq!(
            step(&mut app, key(KeyCode::Char('9'))),
            Action::None,
            "no ninth column on screen"
        );
    }

    #[test]
    fn the_tables_keys_move_the_selection_and_esc_goes_back_to_the_top() {
        let mut app = app();
        step(&mut app, four_processes());
        assert_eq!(selected(&app), Some(10));
        assert_eq!(step(&mut app, key(KeyCode::Down)), Action::Redraw);
        assert_eq!(selected(&app), Some(20));
        assert!(app.table.following, "a row chosen is followed");
        step(&mut app, key(KeyCode::Char('j')));
        assert_eq!(selected(&app), Some(11));
        step(&mut app, key(KeyCode::Up));
        assert_eq!(selected(&app), Some(20));
        step(&mut app, key(KeyCode::End));
        assert_eq!(selected(&app), Some(21));
        step(&mut app, key(KeyCode::Home));
        assert_eq!(selected(&app), Some(10));
        assert!(!app.table.following, "the top of the sort again");
        step(&mut app, key(KeyCode::PageDown));
        assert_eq!(selected(&app), Some(21), "a page, within the rows");
        step(&mut app, key(KeyCode::Char('g')));
        assert_eq!(selected(&app), Some(10));
        step(&mut app, key(KeyCode::Char('G')));
        assert_eq!(selected(&app), Some(21));
        step(&mut app, key(KeyCode::PageUp));
        assert_eq!(selected(&app), Some(10));
        step(&mut app, key(KeyCode::Down));
        assert_eq!(step(&mut app, key(KeyCode::Esc)), Action::Redraw);
        assert_eq!(selected(&app), Some(10), "Esc: back to the top");
        assert_eq!(app.mode, Mode::Normal);
        // ← → scroll the COMMAND column.
        step(&mut app, key(KeyCode::Right));
        assert_eq!(app.table.command_offset, 8);
        step(&mut app, key(KeyCode::Left));
        assert_eq!(app.table.command_offset, 0);
    }

    #[test]
    fn the_filter_is_typed_after_a_slash_and_esc_clears_it() {
        let mut app = app();
        step(&mut app, four_processes());
        step(&mut app, key(KeyCode::Char('/')));
        assert_eq!(app.mode, Mode::Filter);
        for c in "bob".chars() {
            assert_eq!(step(&mut app, key(KeyCode::Char(c))), Action::Redraw);
        }
        assert_eq!(pids(&app), [20, 11]);
        // While typing, the main screen's keys are letters of the filter.
        assert_eq!(step(&mut app, key(KeyCode::Char('q'))), Action::Redraw);
        assert_eq!(app.table.filter, "bobq");
        assert!(pids(&app).is_empty());
        step(&mut app, key(KeyCode::Backspace));
        assert_eq!(pids(&app), [20, 11]);
        assert_eq!(step(&mut app, key(KeyCode::F(5))), Action::None);
        step(&mut app, key(KeyCode::Enter));
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(app.table.filter, "bob", "Enter keeps it");
        // On the main screen, Esc clears it before anything else.
        step(&mut app, key(KeyCode::Down));
        assert_eq!(selected(&app), Some(11));
        step(&mut app, key(KeyCode::Esc));
        assert_eq!(app.table.filter, "");
        assert_eq!(pids(&app), [10, 20, 11, 21]);
        // A paste while typing: its first line; Esc there clears it and closes.
        step(&mut app, key(KeyCode::Char('/')));
        step(&mut app, Event::Input(Term::Paste("gpu1\nana".into())));
        assert_eq!(pids(&app), [20, 21]);
        step(&mut app, key(KeyCode::Esc));
        assert_eq!((app.mode, app.table.filter.as_str()), (Mode::Normal, ""));
        assert_eq!(pids(&app).len(), 4);
    }

    /// The table's keys reach it from the main screen only: the help, the per-user view and
    /// a replay's cursor keep theirs.
    #[test]
    fn the_tables_keys_go_to_it_only_from_the_main_screen() {
        let mut app = app();
        step(&mut app, four_processes());
        step(&mut app, key(KeyCode::Char('?')));
        step(&mut app, key(KeyCode::Char('j')));
        assert_eq!((app.mode, app.help_scroll), (Mode::Help, 1));
        assert_eq!(selected(&app), Some(10), "j scrolled the help");
        step(&mut app, key(KeyCode::Esc));
        step(&mut app, key(KeyCode::Tab));
        assert_eq!(app.mode, Mode::Users);
        let users_sort = app.users.sort;
        step(&mut app, key(KeyCode::Char('s')));
        assert_ne!(app.users.sort, users_sort);
        assert_eq!(
            app.table.sort,
            SortKey::GpuMem,
            "s sorted the users, not the table"
        );
        step(&mut app, key(KeyCode::Esc));
        app.replay = Some(crate::tui::app::ReplayView::new("run.gpumon"));
        assert_eq!(
            step(&mut app, key(KeyCode::Right)),
            Action::Replay(Command::Step(1))
        );
        assert_eq!(
            app.table.command_offset, 0,
            "→ moved the recording's cursor"
        );
        assert_eq!(step(&mut app, key(KeyCode::Down)), Action::Redraw);
        assert_eq!(selected(&app), Some(20), "↓ is the table's in a replay too");
    }

    #[test]
    fn the_mouse_selects_a_row_and_sorts_by_a_title() {
        use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
        let mut app = app();
        step(&mut app, four_processes());
        app.table.area = ratatui::layout::Rect::new(0, 5, 80, 10);
        app.table.columns = vec![(SortKey::Pid, 0, 6), (SortKey::User, 7, 8)];
        let at = |kind, column, row| {
            Event::Input(Term::Mouse(MouseEvent {
                kind,
                column,
                row,
                modifiers: KeyModifiers::NONE,
            }))
        };
        let click = MouseEventKind::Down(MouseButton::Left);
        assert_eq!(step(&mut app, at(click, 3, 7)), Action::Redraw);
        assert_eq!(selected(&app), Some(11));
        step(&mut app, at(MouseEventKind::ScrollDown, 3, 7));
        assert_eq!(selected(&app), Some(21));
        assert_eq!(step(&mut app, at(click, 8, 4)), Action::Redraw);
        assert_eq!(app.table.sort, SortKey::User, "a click on USER's title");
        // Under an overlay, the table takes no click.
        step(&mut app, key(KeyCode::Char('?')));
        assert_eq!(step(&mut app, at(click, 3, 5)), Action::None);
    }
}
