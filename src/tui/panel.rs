//! The state of the dashboard's two panels that are typed into, each with its own keys and
//! pastes: the OOM panel (a message pasted or typed, and its report) and the estimate panel
//! (`estimate`'s flags, and what they give).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keys::MAX_PASTE;
use crate::oom::{analyze, Analysis};

/// The longest line of flags the estimate panel keeps.
pub const MAX_FLAGS: usize = 1024;

/// What the estimate panel's flags give: the model and the run (or a trace of the model), or
/// why not.
pub type EstimateInputs = Result<crate::estimate::Estimated, String>;

/// What a key did to a panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typed {
    /// Esc: the panel closes.
    Close,
    /// The panel changed.
    Changed,
    /// Not a key of the panel's.
    Ignored,
}

/// The OOM panel: the message and its report.
#[derive(Debug, Default)]
pub struct OomPanel {
    pub text: String,
    pub analysis: Option<Analysis>,
    /// Lines the report is scrolled by.
    pub scroll: u16,
}

impl OomPanel {
    /// Takes `text` (cut to its last [`MAX_PASTE`] bytes: a paste of a whole log keeps its
    /// tail) and analyses it.
    fn set_text(&mut self, text: String) {
        let mut text = text;
        if text.len() > MAX_PASTE {
            let mut cut = text.len() - MAX_PASTE;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text = text[cut..].to_owned();
        }
        self.analysis = (!text.trim().is_empty()).then(|| analyze(&text));
        self.text = text;
        self.scroll = 0;
    }

    pub fn paste(&mut self, text: &str) {
        let mut t = std::mem::take(&mut self.text);
        t.push_str(&text.replace("\r\n", "\n").replace('\r', "\n"));
        self.set_text(t);
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Typed {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return Typed::Close,
            KeyCode::Char('u') if ctrl => self.set_text(String::new()),
            KeyCode::Down => self.scroll = self.scroll.saturating_add(1),
            KeyCode::Up => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(10),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::Enter => {
                let t = format!("{}\n", self.text);
                self.set_text(t);
            }
            KeyCode::Backspace => {
                let mut t = std::mem::take(&mut self.text);
                t.pop();
                self.set_text(t);
            }
            KeyCode::Char(c) if !ctrl => {
                let mut t = std::mem::take(&mut self.text);
                t.push(c);
                self.set_text(t);
            }
            _ => return Typed::Ignored,
        }
        Typed::Changed
    }
}

/// The estimate panel: the flags typed, what they give, and the GPU it was opened on.
#[derive(Debug)]
pub struct EstimatePanel {
    pub text: String,
    pub inputs: Option<EstimateInputs>,
    /// The estimate of the flags shown is being worked out (they read files).
    pub reading: bool,
    /// Flags waiting to be worked out off the UI thread.
    request: Option<String>,
    pub gpu: Option<u32>,
    /// Works out the flags ([`super::Settings::estimate`]).
    estimator: fn(&str) -> EstimateInputs,
}

impl EstimatePanel {
    pub fn new(estimator: fn(&str) -> EstimateInputs) -> EstimatePanel {
        EstimatePanel {
            text: String::new(),
            inputs: None,
            reading: false,
            request: None,
            gpu: None,
            estimator,
        }
    }

    /// Opens the panel on `gpu`, with the flags it holds worked out again.
    pub fn open(&mut self, gpu: Option<u32>) {
        self.gpu = gpu;
        self.parse();
    }

    /// Parses the flags. Flags that read files (`--model`, `--torch`) are read off the UI
    /// thread: the panel asks ([`EstimatePanel::take_request`]) and shows "reading…" until
    /// the event loop hands the result back ([`EstimatePanel::on_result`]); a file on a
    /// stalled mount never freezes the dashboard.
    fn parse(&mut self) {
        let flags = self.text.trim();
        if flags.is_empty() {
            self.inputs = None;
            self.reading = false;
            self.request = None;
        } else if flags.split_whitespace().any(|w| {
            w == "--model"
                || w.starts_with("--model=")
                || w == "--torch"
                || w.starts_with("--torch=")
        }) {
            self.reading = true;
            self.request = Some(self.text.clone());
        } else {
            self.inputs = Some((self.estimator)(&self.text));
            self.reading = false;
            self.request = None;
        }
    }

    /// Flags whose estimate reads files, for the event loop to work out off the UI thread.
    pub fn take_request(&mut self) -> Option<String> {
        self.request.take()
    }

    /// The estimate of `flags`, worked out off the UI thread; dropped (false) if the flags
    /// have changed since (a newer request is on its way).
    pub fn on_result(&mut self, flags: &str, result: EstimateInputs) -> bool {
        if flags != self.text {
            return false;
        }
        self.inputs = Some(result);
        self.reading = false;
        true
    }

    /// Flags fit a line: at most [`MAX_FLAGS`] bytes are kept, never a copy of more.
    pub fn paste(&mut self, text: &str) {
        for c in text.chars() {
            if self.text.len() + c.len_utf8() > MAX_FLAGS {
                break;
            }
            self.text.push(if c == '\r' || c == '\n' { ' ' } else { c });
        }
        self.parse();
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Typed {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return Typed::Close,
            // A new string: the memory of whatever was there goes with it.
            KeyCode::Char('u') if ctrl => self.text = String::new(),
            KeyCode::Backspace => {
                self.text.pop();
            }
            KeyCode::Char(c) if !ctrl && self.text.len() < MAX_FLAGS => self.text.push(c),
            KeyCode::Enter => {}
            _ => return Typed::Ignored,
        }
        self.parse();
        Typed::Changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn refuse(_: &str) -> EstimateInputs {
        Err("parsed".into())
    }

    #[test]
    fn the_oom_panel_keeps_the_tail_of_a_paste_too_long_and_analyses_it() {
        let mut p = OomPanel::default();
        let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
        p.paste(&format!("{}\r\n{msg}", "x".repeat(MAX_PASTE)));
        assert_eq!(p.text.len(), MAX_PASTE);
        assert!(p.text.ends_with(msg) && !p.text.contains('\r'));
        assert!(p.analysis.is_some());
        assert_eq!(p.on_key(key(KeyCode::Down)), Typed::Changed);
        assert_eq!(p.scroll, 1);
        let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(p.on_key(ctrl_u), Typed::Changed);
        assert!(p.text.is_empty() && p.analysis.is_none());
        assert_eq!(p.on_key(key(KeyCode::Esc)), Typed::Close);
        assert_eq!(p.on_key(key(KeyCode::F(5))), Typed::Ignored);
    }

    #[test]
    fn the_estimate_panel_reads_files_off_the_ui_thread_and_takes_only_the_current_answer() {
        let mut p = EstimatePanel::new(refuse);
        p.paste("--params 7B");
        assert!(
            matches!(&p.inputs, Some(Err(e)) if e == "parsed"),
            "parsed at once"
        );
        assert!(p.take_request().is_none());
        p.text.clear();
        p.paste("--model ./m\n--batch 2");
        assert_eq!(p.text, "--model ./m --batch 2");
        assert!(p.reading);
        assert_eq!(p.take_request().as_deref(), Some("--model ./m --batch 2"));
        assert!(!p.on_result("--model ./old", Err("late".into())));
        assert!(p.reading, "an answer for other flags is dropped");
        assert!(p.on_result("--model ./m --batch 2", Err("no such file".into())));
        assert!(!p.reading);
        p.paste(&"y".repeat(2 * MAX_FLAGS));
        assert_eq!(p.text.len(), MAX_FLAGS);
    }
}
