//! The terminal's input, decoded here into crossterm's own event types.
//!
//! crossterm's reader keeps the bytes of a bracketed paste until the paste's end marker
//! arrives: a start marker without an end (a terminal or multiplexer that died mid-paste, or
//! `ESC [ 200 ~` typed into the tty by something else) swallowed every later key, `q` and
//! Ctrl-C included, and a 27 MB paste was held whole. It exposes neither its parser nor its
//! buffer, so the dashboard reads the terminal's bytes itself and decodes the keys it uses:
//! UTF-8 text, control keys, Alt as an ESC prefix, CSI and SS3 keys with modifiers (arrows,
//! Home/End, PageUp/PageDown, Insert/Delete, F1–F12, Shift-Tab), SGR and X10 mouse reports,
//! and bracketed pastes that end at their end marker *or* after [`PASTE_IDLE`] without a byte,
//! keeping at most their last [`MAX_PASTE`] bytes. Anything else is dropped.

use std::time::{Duration, Instant};

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

/// The most of a paste kept: its last bytes (an error is at the end of a pasted log).
pub const MAX_PASTE: usize = 1 << 20;
/// A paste with no byte for this long has ended, end marker or not.
pub const PASTE_IDLE: Duration = Duration::from_millis(500);
/// A lone ESC is the Esc key once nothing follows it this soon (terminals send a key's
/// escape sequence in one write).
pub const ESC_WAIT: Duration = Duration::from_millis(30);

#[cfg(test)]
const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// A paste being received.
struct Paste {
    bytes: Vec<u8>,
    /// Bytes dropped from its start to keep it within [`MAX_PASTE`].
    dropped: bool,
    last: Instant,
}

/// Bytes in, events out.
#[derive(Default)]
pub struct Decoder {
    /// Bytes of an event not yet complete.
    pending: Vec<u8>,
    /// When the pending bytes arrived (for a lone ESC).
    pending_since: Option<Instant>,
    paste: Option<Paste>,
}

fn key(code: KeyCode, modifiers: KeyModifiers) -> Event {
    Event::Key(KeyEvent::new(code, modifiers))
}

/// What one decoding step found at the start of the pending bytes.
enum Step {
    /// An event, and how many bytes it took.
    Event(Event, usize),
    /// Bytes that mean nothing here, dropped.
    Skip(usize),
    /// A paste starts after this many bytes.
    PasteStart(usize),
    /// More bytes are needed.
    Incomplete,
}

impl Decoder {
    /// Decodes `bytes` (read at `now`) into `out`.
    pub fn feed(&mut self, bytes: &[u8], now: Instant, out: &mut Vec<Event>) {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.paste.is_some() {
                rest = self.feed_paste(rest, now, out);
                continue;
            }
            if self.pending.is_empty() {
                self.pending_since = Some(now);
            }
            // Decode byte by byte until the paste starts, so that what follows a start
            // marker goes to the paste.
            self.pending.push(rest[0]);
            rest = &rest[1..];
            let more = !rest.is_empty();
            self.drain(more, now, out);
        }
    }

    /// Decodes what can be from the pending bytes; `more`: further bytes are on their way
    /// in this same read.
    fn drain(&mut self, more: bool, now: Instant, out: &mut Vec<Event>) {
        loop {
            if self.pending.is_empty() || self.paste.is_some() {
                return;
            }
            match decode(&self.pending, more) {
                Step::Event(ev, n) => {
                    out.push(ev);
                    self.pending.drain(..n);
                }
                Step::Skip(n) => {
                    self.pending.drain(..n.max(1));
                }
                Step::PasteStart(n) => {
                    self.pending.drain(..n);
                    let rest = std::mem::take(&mut self.pending);
                    self.paste = Some(Paste {
                        bytes: Vec::new(),
                        dropped: false,
                        last: now,
                    });
                    let _ = self.feed_paste(&rest, now, out);
                }
                Step::Incomplete => return,
            }
        }
    }

    /// Adds bytes to the paste in progress; returns what follows its end marker.
    fn feed_paste<'a>(&mut self, bytes: &'a [u8], now: Instant, out: &mut Vec<Event>) -> &'a [u8] {
        let Some(p) = self.paste.as_mut() else {
            return bytes;
        };
        p.last = now;
        // The end marker may straddle two reads: look for it from a little before.
        let start = p.bytes.len().saturating_sub(PASTE_END.len() - 1);
        p.bytes.extend_from_slice(bytes);
        let found = p.bytes[start..]
            .windows(PASTE_END.len())
            .position(|w| w == PASTE_END)
            .map(|i| start + i);
        let after = match found {
            Some(end) => {
                let consumed_here = end + PASTE_END.len() - (p.bytes.len() - bytes.len());
                p.bytes.truncate(end);
                let rest = &bytes[consumed_here.min(bytes.len())..];
                self.finish_paste(out);
                return rest;
            }
            None => &[][..],
        };
        // Keep the tail: the last MAX_PASTE bytes, plus what may be the start of the marker.
        if p.bytes.len() > MAX_PASTE + PASTE_END.len() {
            let cut = p.bytes.len() - MAX_PASTE;
            p.bytes.drain(..cut);
            p.dropped = true;
        }
        after
    }

    fn finish_paste(&mut self, out: &mut Vec<Event>) {
        let Some(mut p) = self.paste.take() else {
            return;
        };
        if p.bytes.len() > MAX_PASTE {
            let cut = p.bytes.len() - MAX_PASTE;
            p.bytes.drain(..cut);
            p.dropped = true;
        }
        let mut text = String::from_utf8_lossy(&p.bytes).into_owned();
        if p.dropped {
            // Cut at a character boundary the lossy decoding may have produced: drop a
            // replacement character left at the start by a split code point.
            text = text.trim_start_matches('\u{fffd}').to_owned();
        }
        // Terminals send line breaks in a paste as CR.
        out.push(Event::Paste(text.replace("\r\n", "\n").replace('\r', "\n")));
        // The allocation goes with it: a large paste's memory is not kept.
        drop(p.bytes);
    }

    /// When [`Decoder::timeout`] has something to do: a paste idle for [`PASTE_IDLE`], or a
    /// lone ESC waiting [`ESC_WAIT`].
    pub fn deadline(&self) -> Option<Instant> {
        if let Some(p) = &self.paste {
            return Some(p.last + PASTE_IDLE);
        }
        (!self.pending.is_empty())
            .then(|| self.pending_since.map(|t| t + ESC_WAIT))
            .flatten()
    }

    /// No byte has arrived since the deadline: a paste without its end marker ends here, and
    /// a lone ESC (or an escape sequence cut short) is the Esc key.
    pub fn timeout(&mut self, now: Instant, out: &mut Vec<Event>) {
        if self
            .paste
            .as_ref()
            .is_some_and(|p| now >= p.last + PASTE_IDLE)
        {
            self.finish_paste(out);
            return;
        }
        if self.deadline().is_some_and(|d| now >= d) {
            // Nothing more is coming: decode what is there as complete.
            self.drain(false, now, out);
            if !self.pending.is_empty() {
                if self.pending[0] == 0x1b {
                    out.push(key(KeyCode::Esc, KeyModifiers::NONE));
                }
                self.pending.clear();
            }
        }
    }
}

/// Modifiers from a CSI parameter (1 + a bit mask: 1 shift, 2 alt, 4 ctrl).
fn modifiers(param: Option<u16>) -> KeyModifiers {
    let bits = param.unwrap_or(1).saturating_sub(1);
    let mut m = KeyModifiers::NONE;
    if bits & 1 != 0 {
        m |= KeyModifiers::SHIFT;
    }
    if bits & 2 != 0 {
        m |= KeyModifiers::ALT;
    }
    if bits & 4 != 0 {
        m |= KeyModifiers::CONTROL;
    }
    m
}

/// One event from the start of `b`; `more`: further bytes follow in this read, so a lone
/// ESC is not yet the Esc key.
fn decode(b: &[u8], more: bool) -> Step {
    match b[0] {
        0x1b => decode_escape(b, more),
        b'\r' | b'\n' => Step::Event(key(KeyCode::Enter, KeyModifiers::NONE), 1),
        b'\t' => Step::Event(key(KeyCode::Tab, KeyModifiers::NONE), 1),
        0x7f | 0x08 => Step::Event(key(KeyCode::Backspace, KeyModifiers::NONE), 1),
        0x00 => Step::Event(key(KeyCode::Char(' '), KeyModifiers::CONTROL), 1),
        c @ 0x01..=0x1a => Step::Event(
            key(KeyCode::Char((b'a' + c - 1) as char), KeyModifiers::CONTROL),
            1,
        ),
        c @ 0x1c..=0x1f => Step::Event(
            key(
                KeyCode::Char((b'4' + c - 0x1c) as char),
                KeyModifiers::CONTROL,
            ),
            1,
        ),
        _ => decode_char(b).map_or(Step::Incomplete, |(c, n)| match c {
            Some(c) => Step::Event(key(KeyCode::Char(c), KeyModifiers::NONE), n),
            None => Step::Skip(n),
        }),
    }
}

/// A UTF-8 character at the start of `b`: `None` when incomplete, `Some((None, n))` for `n`
/// invalid bytes.
fn decode_char(b: &[u8]) -> Option<(Option<char>, usize)> {
    let len = match b[0] {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Some((None, 1)),
    };
    if b.len() < len {
        // A continuation byte that is not one means the character never comes.
        if b[1..].iter().any(|x| x & 0xc0 != 0x80) {
            return Some((None, 1));
        }
        return None;
    }
    match std::str::from_utf8(&b[..len]) {
        Ok(s) => Some((s.chars().next(), len)),
        Err(_) => Some((None, 1)),
    }
}

fn decode_escape(b: &[u8], more: bool) -> Step {
    // A lone ESC may be the start of a sequence split over two reads: the Esc key only once
    // ESC_WAIT passes without more (Decoder::timeout).
    let Some(&next) = b.get(1) else {
        return Step::Incomplete;
    };
    match next {
        b'[' => decode_csi(b),
        b'O' => match b.get(2) {
            None => Step::Incomplete,
            Some(&c) => {
                let code = match c {
                    b'P' => KeyCode::F(1),
                    b'Q' => KeyCode::F(2),
                    b'R' => KeyCode::F(3),
                    b'S' => KeyCode::F(4),
                    b'A' => KeyCode::Up,
                    b'B' => KeyCode::Down,
                    b'C' => KeyCode::Right,
                    b'D' => KeyCode::Left,
                    b'H' => KeyCode::Home,
                    b'F' => KeyCode::End,
                    _ => return Step::Skip(3),
                };
                Step::Event(key(code, KeyModifiers::NONE), 3)
            }
        },
        // ESC ESC: the first is the Esc key.
        0x1b => Step::Event(key(KeyCode::Esc, KeyModifiers::NONE), 1),
        // ESC and a key: Alt and that key.
        _ => match decode(&b[1..], more) {
            Step::Event(Event::Key(k), n) => {
                Step::Event(key(k.code, k.modifiers | KeyModifiers::ALT), n + 1)
            }
            Step::Incomplete => Step::Incomplete,
            _ => Step::Skip(2),
        },
    }
}

/// `ESC [ params final`: a key, a mouse report, or the start of a paste.
fn decode_csi(b: &[u8]) -> Step {
    // X10 mouse: ESC [ M and three bytes, each 32 more than its value.
    if b.get(2) == Some(&b'M') {
        if b.len() < 6 {
            return Step::Incomplete;
        }
        let (cb, x, y) = (
            b[3].wrapping_sub(32),
            b[4].wrapping_sub(33),
            b[5].wrapping_sub(33),
        );
        return match mouse(u16::from(cb), u16::from(x), u16::from(y), true) {
            Some(ev) => Step::Event(ev, 6),
            None => Step::Skip(6),
        };
    }
    // Parameters and intermediates, then a final byte in 0x40..=0x7e.
    let Some(end) = b[2..].iter().position(|c| (0x40..=0x7e).contains(c)) else {
        // A sequence longer than any key's is no key.
        return if b.len() > 32 {
            Step::Skip(b.len())
        } else {
            Step::Incomplete
        };
    };
    let end = end + 2;
    let body = &b[2..end];
    let n = end + 1;
    let fin = b[end];
    let sgr = body.first() == Some(&b'<');
    let params: Vec<Option<u16>> = body
        .strip_prefix(b"<")
        .unwrap_or(body)
        .split(|c| *c == b';')
        .map(|p| std::str::from_utf8(p).ok()?.parse().ok())
        .collect();
    let p = |i: usize| params.get(i).copied().flatten();
    if sgr && (fin == b'M' || fin == b'm') {
        let (Some(cb), Some(x), Some(y)) = (p(0), p(1), p(2)) else {
            return Step::Skip(n);
        };
        return match mouse(cb, x.saturating_sub(1), y.saturating_sub(1), fin == b'M') {
            Some(ev) => Step::Event(ev, n),
            None => Step::Skip(n),
        };
    }
    let code = match fin {
        b'A' => KeyCode::Up,
        b'B' => KeyCode::Down,
        b'C' => KeyCode::Right,
        b'D' => KeyCode::Left,
        b'H' => KeyCode::Home,
        b'F' => KeyCode::End,
        b'Z' => return Step::Event(key(KeyCode::BackTab, KeyModifiers::SHIFT), n),
        b'P' => KeyCode::F(1),
        b'Q' => KeyCode::F(2),
        b'R' => KeyCode::F(3),
        b'S' => KeyCode::F(4),
        b'~' => match p(0) {
            Some(200) => return Step::PasteStart(n),
            Some(1 | 7) => KeyCode::Home,
            Some(2) => KeyCode::Insert,
            Some(3) => KeyCode::Delete,
            Some(4 | 8) => KeyCode::End,
            Some(5) => KeyCode::PageUp,
            Some(6) => KeyCode::PageDown,
            Some(f @ 11..=15) => KeyCode::F((f - 10) as u8),
            Some(f @ 17..=21) => KeyCode::F((f - 11) as u8),
            Some(f @ 23..=24) => KeyCode::F((f - 12) as u8),
            // A stray paste end, focus reports and the rest: nothing to do.
            _ => return Step::Skip(n),
        },
        _ => return Step::Skip(n),
    };
    Step::Event(key(code, modifiers(p(1))), n)
}

/// A mouse report: button code `cb`, zero-based cell, pressed or released.
fn mouse(cb: u16, column: u16, row: u16, pressed: bool) -> Option<Event> {
    let mut modifiers = KeyModifiers::NONE;
    if cb & 4 != 0 {
        modifiers |= KeyModifiers::SHIFT;
    }
    if cb & 8 != 0 {
        modifiers |= KeyModifiers::ALT;
    }
    if cb & 16 != 0 {
        modifiers |= KeyModifiers::CONTROL;
    }
    let button = match cb & 3 {
        0 => MouseButton::Left,
        1 => MouseButton::Middle,
        2 => MouseButton::Right,
        _ => MouseButton::Left,
    };
    let kind = if cb & 64 != 0 {
        match cb & 3 {
            0 => MouseEventKind::ScrollUp,
            1 => MouseEventKind::ScrollDown,
            2 => MouseEventKind::ScrollLeft,
            _ => MouseEventKind::ScrollRight,
        }
    } else if cb & 32 != 0 {
        if cb & 3 == 3 {
            MouseEventKind::Moved
        } else {
            MouseEventKind::Drag(button)
        }
    } else if !pressed || cb & 3 == 3 {
        MouseEventKind::Up(button)
    } else {
        MouseEventKind::Down(button)
    };
    Some(Event::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<Event> {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        let t = Instant::now();
        for c in chunks {
            d.feed(c, t, &mut out);
        }
        d.timeout(t + Duration::from_secs(5), &mut out);
        out
    }

    fn k(code: KeyCode) -> Event {
        key(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_as_terminals_send_them() {
        use KeyCode::*;
        assert_eq!(
            decode_all(&[b"q\r\x7f\tA\xc3\xa9\xe6\x97\xa5"]),
            [
                k(Char('q')),
                k(Enter),
                k(Backspace),
                k(Tab),
                k(Char('A')),
                k(Char('é')),
                k(Char('日'))
            ]
        );
        assert_eq!(
            decode_all(&[b"\x1b[A\x1b[B\x1bOC\x1b[D\x1b[H\x1b[4~\x1b[5~\x1b[6~\x1b[3~\x1b[Z"]),
            [
                k(Up),
                k(Down),
                k(Right),
                k(Left),
                k(Home),
                k(End),
                k(PageUp),
                k(PageDown),
                k(Delete),
                key(BackTab, KeyModifiers::SHIFT)
            ]
        );
        assert_eq!(
            decode_all(&[b"\x1bOP\x1b[21~\x1b[20~\x1b[1;5A"]),
            [k(F(1)), k(F(10)), k(F(9)), key(Up, KeyModifiers::CONTROL)]
        );
        assert_eq!(
            decode_all(&[b"\x03\x15\x1aq"]),
            [
                key(Char('c'), KeyModifiers::CONTROL),
                key(Char('u'), KeyModifiers::CONTROL),
                key(Char('z'), KeyModifiers::CONTROL),
                k(Char('q'))
            ]
        );
        // Alt-q is ESC q: not q.
        assert_eq!(decode_all(&[b"\x1bq"]), [key(Char('q'), KeyModifiers::ALT)]);
        // A lone ESC, in a read of its own, is the Esc key once nothing follows.
        assert_eq!(decode_all(&[b"\x1b"]), [k(Esc)]);
        // A sequence split over reads is one key.
        assert_eq!(
            decode_all(&[b"\x1b[", b"1;2", b"B"]),
            [key(Down, KeyModifiers::SHIFT)]
        );
    }

    #[test]
    fn mouse_reports() {
        let ev = decode_all(&[b"\x1b[<0;12;4M\x1b[<0;12;4m\x1b[<65;3;9M\x1b[M\x20\x2a\x24"]);
        let m = |kind, column, row| {
            Event::Mouse(MouseEvent {
                kind,
                column,
                row,
                modifiers: KeyModifiers::NONE,
            })
        };
        assert_eq!(
            ev,
            [
                m(MouseEventKind::Down(MouseButton::Left), 11, 3),
                m(MouseEventKind::Up(MouseButton::Left), 11, 3),
                m(MouseEventKind::ScrollDown, 2, 8),
                m(MouseEventKind::Down(MouseButton::Left), 9, 3),
            ]
        );
    }

    #[test]
    fn a_paste_is_text_and_keys_after_it_are_keys() {
        let ev = decode_all(&[b"x\x1b[200~q line\r\nnext\x1b[2", b"01~q"]);
        assert_eq!(
            ev,
            [
                k(KeyCode::Char('x')),
                Event::Paste("q line\nnext".into()),
                k(KeyCode::Char('q'))
            ]
        );
    }

    /// A paste whose end marker never comes ends after PASTE_IDLE without a byte: the keys
    /// after it (q, Ctrl-C) are keys again.
    #[test]
    fn an_unterminated_paste_ends_when_the_input_goes_quiet() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        let t = Instant::now();
        d.feed(b"\x1b[200~half a paste", t, &mut out);
        assert!(out.is_empty());
        assert_eq!(d.deadline(), Some(t + PASTE_IDLE));
        d.timeout(t + PASTE_IDLE / 2, &mut out);
        assert!(out.is_empty(), "not yet");
        d.timeout(t + PASTE_IDLE, &mut out);
        assert_eq!(out, [Event::Paste("half a paste".into())]);
        out.clear();
        d.feed(b"q\x03", t + PASTE_IDLE * 2, &mut out);
        assert_eq!(
            out,
            [
                k(KeyCode::Char('q')),
                key(KeyCode::Char('c'), KeyModifiers::CONTROL)
            ]
        );
    }

    /// A paste larger than MAX_PASTE keeps its last MAX_PASTE bytes, and never holds much
    /// more than that while it arrives.
    #[test]
    fn a_huge_paste_keeps_its_tail_in_bounded_memory() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        let t = Instant::now();
        d.feed(PASTE_START, t, &mut out);
        let chunk = vec![b'a'; 64 * 1024];
        let mut most = 0;
        for _ in 0..(27 * 16) {
            d.feed(&chunk, t, &mut out);
            most = most.max(d.paste.as_ref().map_or(0, |p| p.bytes.capacity()));
        }
        d.feed(b"the error at the end", t, &mut out);
        d.feed(PASTE_END, t, &mut out);
        let [Event::Paste(text)] = out.as_slice() else {
            panic!("one paste: {} events", out.len());
        };
        assert_eq!(text.len(), MAX_PASTE);
        assert!(text.ends_with("the error at the end"));
        assert!(most <= 3 * MAX_PASTE, "held {most} bytes at most");
        assert!(d.paste.is_none());
    }

    #[test]
    fn garbage_is_dropped_and_never_stalls_the_keys_after_it() {
        let ev = decode_all(&[b"\xff\xfe\x1b[999;999;999X\x1b]0;title\x07q"]);
        assert!(ev.contains(&k(KeyCode::Char('q'))), "{ev:?}");
        let long = [b"\x1b[".as_slice(), &[b'1'; 100], b"q"].concat();
        assert_eq!(decode_all(&[&long]).last(), Some(&k(KeyCode::Char('q'))));
    }
}
