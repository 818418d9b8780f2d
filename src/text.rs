//! Text that gpumon prints, whatever the view: ANSI paint for terminals and cutting at word
//! boundaries. Pure: no terminal, runtime or driver.

use std::io::{self, IsTerminal};

/// ANSI colour, only on a terminal and never with `NO_COLOR` set (no-color.org).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint(pub bool);

impl Paint {
    pub fn for_stdout() -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Paint(!no_color && io::stdout().is_terminal())
    }

    pub fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    pub fn bold(self, t: &str) -> String {
        self.wrap("1", t)
    }
    pub fn dim(self, t: &str) -> String {
        self.wrap("2", t)
    }
    pub fn red(self, t: &str) -> String {
        self.wrap("31", t)
    }
    pub fn green(self, t: &str) -> String {
        self.wrap("32", t)
    }
    pub fn yellow(self, t: &str) -> String {
        self.wrap("33", t)
    }
    pub fn cyan(self, t: &str) -> String {
        self.wrap("36", t)
    }

    /// Green, yellow or red by a share in `0.0..=1.0`.
    pub fn level(self, share: f64, t: &str) -> String {
        if share >= 0.9 {
            self.red(t)
        } else if share >= 0.6 {
            self.yellow(t)
        } else {
            self.green(t)
        }
    }
}

/// `text` cut to at most `max` characters at a word boundary, with an ellipsis when cut.
pub fn cut_at_word(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max.saturating_sub(1)).collect();
    let cut = match head.rfind(char::is_whitespace) {
        // Keep the cut near the limit: a word longer than a fifth of it is split instead.
        Some(i) if i >= head.len() * 4 / 5 => &head[..i],
        _ => head.as_str(),
    };
    format!(
        "{}…",
        cut.trim_end_matches(|c: char| c.is_whitespace() || c == ',')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quotes_are_cut_at_a_word_with_an_ellipsis() {
        assert_eq!(cut_at_word("short", 300), "short");
        let text = "CUDA out of memory. Tried to allocate 572.00 MiB. GPU 0 has a total capacity";
        let cut = cut_at_word(text, 40);
        assert_eq!(cut, "CUDA out of memory. Tried to allocate…");
        assert!(cut.chars().count() <= 40);
        // One huge word: cut inside it rather than dropping everything.
        let word = "x".repeat(100);
        assert_eq!(cut_at_word(&word, 10).chars().count(), 10);
        assert!(cut_at_word(&"é".repeat(50), 10).ends_with('…'));
    }
}
