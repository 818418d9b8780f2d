//! A recording as a feed: a player thread that reads the recording around a time cursor and
//! hands the views the samples they would have had live, and the commands that move the
//! cursor. The views draw what they are given, as they draw a live sample: the recording is
//! one more source.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use crate::model::Sample;
use crate::store::recording::Reader;

/// What moves the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Samples forward (positive) or back.
    Step(i64),
    /// Seconds forward or back.
    Jump(i64),
    Goto(SystemTime),
    TogglePlay,
    /// Speed × 2 (true) or ÷ 2.
    Speed(bool),
}

/// What the player hands over: the samples at the cursor, and how the cursor moves.
#[derive(Debug, Clone)]
pub struct Playback {
    /// The cursor moved other than one sample forward: the view forgets its history and
    /// takes `samples` (the window before the cursor) as its history.
    pub reset: bool,
    /// In time order; the last is the sample at the cursor.
    pub samples: Vec<Arc<Sample>>,
    pub playing: bool,
    pub speed: f64,
    /// The recording's first and last sample.
    pub span: (SystemTime, SystemTime),
}

/// Samples decoded beyond the cursor, so that stepping forward reads no file (two segments).
const AHEAD: usize = 120;
const MAX_SPEED: f64 = 256.0;
const MIN_SPEED: f64 = 0.25;

/// Starts the player at `start`, keeping `window` of samples before the cursor (the
/// view's history). The first playback comes at once.
pub fn spawn(
    reader: Reader,
    start: SystemTime,
    window: Duration,
) -> (std::sync::mpsc::Sender<Command>, mpsc::Receiver<Playback>) {
    let (cmd_tx, cmd_rx) = std::sync::mpsc::channel();
    let (tx, rx) = mpsc::channel(4);
    std::thread::Builder::new()
        .name("gpumon-replay".into())
        .spawn(move || Player::new(reader, window).run(start, cmd_rx, tx))
        .ok();
    (cmd_tx, rx)
}

struct Player {
    reader: Reader,
    window: Duration,
    span: (SystemTime, SystemTime),
    /// Decoded samples around the cursor, in time order.
    buf: Vec<Arc<Sample>>,
    pos: usize,
    playing: bool,
    speed: f64,
}

impl Player {
    fn new(reader: Reader, window: Duration) -> Player {
        let span = reader
            .span()
            .unwrap_or((SystemTime::UNIX_EPOCH, SystemTime::UNIX_EPOCH));
        Player {
            reader,
            window,
            span,
            buf: Vec::new(),
            pos: 0,
            playing: false,
            speed: 1.0,
        }
    }

    /// Reads the window before `t` and some samples after it; the cursor on the last sample
    /// at or before `t`.
    fn load(&mut self, t: SystemTime) {
        let t = t.clamp(self.span.0, self.span.1);
        let from = t.checked_sub(self.window).unwrap_or(self.span.0);
        let mut buf = Vec::new();
        let mut after = 0;
        for s in self.reader.samples_from(from).flatten() {
            if s.timestamp > t {
                after += 1;
                if after > AHEAD {
                    break;
                }
            }
            buf.push(Arc::new(s));
        }
        if buf.is_empty() {
            // Nothing from there on: the last sample.
            if let Some(s) = self.reader.at(self.span.1) {
                buf.push(Arc::new(s));
            }
        }
        self.pos = buf.iter().rposition(|s| s.timestamp <= t).unwrap_or(0);
        self.buf = buf;
    }

    /// More samples after the buffer's last, and the ones long before the cursor let go.
    fn extend(&mut self) {
        let Some(last) = self.buf.last().map(|s| s.timestamp) else {
            return;
        };
        let more: Vec<Arc<Sample>> = self
            .reader
            .samples_from(last + Duration::from_millis(1))
            .flatten()
            .take(AHEAD)
            .map(Arc::new)
            .collect();
        self.buf.extend(more);
        let cursor = self.buf[self.pos].timestamp;
        let keep_from = self
            .buf
            .iter()
            .position(|s| s.timestamp + self.window >= cursor)
            .unwrap_or(0);
        if keep_from > 0 {
            self.buf.drain(..keep_from);
            self.pos -= keep_from;
        }
    }

    fn playback(&self, reset: bool) -> Playback {
        let samples = if reset {
            let at = self.buf[self.pos].timestamp;
            let start = self
                .buf
                .iter()
                .position(|s| s.timestamp + self.window >= at)
                .unwrap_or(self.pos);
            self.buf[start..=self.pos].to_vec()
        } else {
            vec![Arc::clone(&self.buf[self.pos])]
        };
        Playback {
            reset,
            samples,
            playing: self.playing,
            speed: self.speed,
            span: self.span,
        }
    }

    /// One sample forward; false at the end of the recording.
    fn forward(&mut self) -> bool {
        if self.pos + 1 >= self.buf.len() {
            self.extend();
        }
        if self.pos + 1 < self.buf.len() {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// How long until the next sample plays, at the speed chosen (a gap in the recording
    /// plays as a second).
    fn delay(&self) -> Duration {
        let gap = self
            .buf
            .get(self.pos + 1)
            .and_then(|n| {
                n.timestamp
                    .duration_since(self.buf[self.pos].timestamp)
                    .ok()
            })
            .unwrap_or(Duration::from_secs(1));
        let gap = if gap > Duration::from_secs(10) {
            Duration::from_secs(1)
        } else {
            gap
        };
        gap.div_f64(self.speed).max(Duration::from_millis(10))
    }

    fn run(
        mut self,
        start: SystemTime,
        commands: std::sync::mpsc::Receiver<Command>,
        tx: mpsc::Sender<Playback>,
    ) {
        self.load(start);
        if self.buf.is_empty() || tx.blocking_send(self.playback(true)).is_err() {
            return;
        }
        let mut due = Instant::now() + self.delay();
        loop {
            let wait = if self.playing {
                due.saturating_duration_since(Instant::now())
            } else {
                Duration::from_secs(3600)
            };
            let reset = match commands.recv_timeout(wait) {
                Ok(c) => match c {
                    Command::Step(n) if n > 0 => {
                        let mut moved = false;
                        for _ in 0..n {
                            moved |= self.forward();
                        }
                        if !moved {
                            continue;
                        }
                        // One step is what a live dashboard gets; more is a jump.
                        n > 1
                    }
                    Command::Step(n) => {
                        let back = n.unsigned_abs() as usize;
                        if self.pos >= back {
                            self.pos -= back;
                        } else {
                            let t = self.buf[self.pos].timestamp;
                            let d = Duration::from_millis(1);
                            self.load(t.checked_sub(d).unwrap_or(t));
                            // Still earlier samples than the buffer held: the one before.
                            self.pos = self
                                .pos
                                .saturating_sub(back.saturating_sub(1).min(self.pos));
                        }
                        true
                    }
                    Command::Jump(s) => {
                        let t = self.buf[self.pos].timestamp;
                        let to = if s >= 0 {
                            t + Duration::from_secs(s as u64)
                        } else {
                            t.checked_sub(Duration::from_secs(s.unsigned_abs()))
                                .unwrap_or(self.span.0)
                        };
                        self.load(to);
                        true
                    }
                    Command::Goto(t) => {
                        self.load(t);
                        true
                    }
                    Command::TogglePlay => {
                        self.playing = !self.playing;
                        due = Instant::now() + self.delay();
                        false
                    }
                    Command::Speed(up) => {
                        self.speed = if up {
                            (self.speed * 2.0).min(MAX_SPEED)
                        } else {
                            (self.speed / 2.0).max(MIN_SPEED)
                        };
                        false
                    }
                },
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if !self.forward() {
                        // The end: stop there.
                        self.playing = false;
                    }
                    due = Instant::now() + self.delay();
                    false
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
            };
            if self.buf.is_empty() {
                return;
            }
            if tx.blocking_send(self.playback(reset)).is_err() {
                return;
            }
        }
    }
}
