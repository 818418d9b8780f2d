//! Telling a paste from typing when the terminal does not bracket pastes.
//!
//! Without bracketed paste, pasted text arrives as key events, which would trigger shortcuts
//! (a traceback holds `q`, spaces and digits). Typed keys come one at a time, tens of
//! milliseconds apart even from a fast typist or key repeat; a paste comes all at once. So a
//! run of text keys that arrive within [`BURST_GAP`] of each other, and at least
//! [`BURST_MIN`] long, is taken as one paste.

use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Keys closer together than this belong to one burst.
pub const BURST_GAP: Duration = Duration::from_millis(3);
/// Shortest burst taken as a paste: shorter ones are keys (two quick keys are not a paste).
pub const BURST_MIN: usize = 4;

/// The text a key event types, if it types text.
pub fn typed(ev: &Event) -> Option<char> {
    let Event::Key(KeyEvent {
        code,
        modifiers,
        kind,
        ..
    }) = ev
    else {
        return None;
    };
    if *kind == KeyEventKind::Release || !(*modifiers - KeyModifiers::SHIFT).is_empty() {
        return None;
    }
    match code {
        KeyCode::Char(c) => Some(*c),
        KeyCode::Enter => Some('\n'),
        KeyCode::Tab => Some('\t'),
        _ => None,
    }
}

/// A run of text keys that arrived in one burst: one paste when it is long enough, otherwise
/// the keys as they came.
pub fn coalesce(run: Vec<Event>) -> Vec<Event> {
    if run.len() < BURST_MIN {
        return run;
    }
    let text: String = run.iter().filter_map(typed).collect();
    vec![Event::Paste(text)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> Event {
        Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
    }

    #[test]
    fn a_burst_is_a_paste_and_a_few_keys_are_keys() {
        let pasted: Vec<Event> = "q sj\n"
            .chars()
            .map(|c| match c {
                '\n' => key(KeyCode::Enter),
                c => key(KeyCode::Char(c)),
            })
            .collect();
        assert_eq!(coalesce(pasted), vec![Event::Paste("q sj\n".into())]);
        let two = vec![key(KeyCode::Char('g')), key(KeyCode::Char('g'))];
        assert_eq!(coalesce(two.clone()), two);
        assert_eq!(typed(&key(KeyCode::Esc)), None);
        assert_eq!(
            typed(&Event::Key(KeyEvent::new(
                KeyCode::Char('c'),
                KeyModifiers::CONTROL
            ))),
            None,
            "Ctrl-C is never text"
        );
        assert_eq!(
            typed(&Event::Key(KeyEvent::new(
                KeyCode::Char('A'),
                KeyModifiers::SHIFT
            ))),
            Some('A')
        );
    }
}
