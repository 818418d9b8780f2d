//! Text that gpumon prints, whatever the view: the one escaping rule for text that comes from
//! a process or the driver, ANSI paint for terminals, and cutting at word boundaries. Pure: no
//! terminal, runtime or driver.
//!
//! Any local user controls their own process's command line, and a driver's strings are not
//! ours either: printed raw, an escape sequence in them would retitle the window, clear the
//! screen or rewrite what the reader sees (bidirectional overrides reorder it). So every such
//! text goes out through [`escape`] (text, CSV, tables, the dashboard, metric labels), or, in
//! JSON, through [`SafeJson`], which writes the same characters as `\uXXXX` escapes: the value
//! is unchanged for a JSON reader, and the bytes carry no control character.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io::{self, IsTerminal};

/// Whether `c` must never reach an output raw: the C0 and C1 control characters and DEL
/// (escape sequences start with ESC or CSI), and the formatting characters that reorder or
/// hide text (bidirectional marks, embeddings, overrides and isolates; the line and paragraph
/// separators).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// The one escaping rule: each unsafe character ([`is_unsafe`]) becomes its escape (`\n`,
/// `\t`, `\u{1b}`, `\u{9b}`, `\u{202e}`), everything else stays. Borrowed when there is
/// nothing to escape, the common case.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`escape`] of an optional text, owned (for the views that keep what they show).
pub fn escaped(s: Option<&str>) -> Option<String> {
    s.map(|s| escape(s).into_owned())
}

/// A command line as a shell would take it back (`python train.py --name 'a b'`), with the
/// one escaping rule applied: arguments that need quoting are quoted for POSIX shells
/// (shlex), and what is unsafe in them shows escaped.
pub fn shell_words(args: &[std::ffi::OsString]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| {
            let a = a.to_string_lossy();
            // shlex refuses only a NUL, which no argument can hold; keep it visible anyway.
            let quoted = shlex::try_quote(&a).unwrap_or_else(|_| a.clone());
            escape(&quoted).into_owned()
        })
        .collect();
    words.join(" ")
}

/// A serde_json formatter that writes every unsafe character ([`is_unsafe`]) in a string as
/// a `\uXXXX` escape. serde_json escapes C0 controls itself; DEL, C1 controls (CSI is
/// U+009B) and the bidirectional formatting characters it writes raw.
pub struct SafeJson<F>(pub F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for SafeJson<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_unsafe(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                // Every unsafe character is in the Basic Multilingual Plane: one \u escape.
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    // Everything else as the wrapped formatter writes it.
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `value` as pretty JSON (two-space indents, as `serde_json::to_writer_pretty`), with every
/// unsafe character escaped ([`SafeJson`]).
pub fn write_json_pretty<W: io::Write, T: ?Sized + serde::Serialize>(
    writer: W,
    value: &T,
) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(
        writer,
        SafeJson(serde_json::ser::PrettyFormatter::new()),
    );
    value.serialize(&mut ser)
}

/// `value` as compact JSON, with every unsafe character escaped ([`SafeJson`]).
pub fn write_json<W: io::Write, T: ?Sized + serde::Serialize>(
    writer: W,
    value: &T,
) -> serde_json::Result<()> {
    let mut ser =
        serde_json::Serializer::with_formatter(writer, SafeJson(serde_json::ser::CompactFormatter));
    value.serialize(&mut ser)
}

/// [`write_json`] into a new buffer.
pub fn to_json_vec<T: ?Sized + serde::Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    write_json(&mut out, value)?;
    Ok(out)
}

/// Whether the terminal says it understands no escape sequence (`TERM=dumb`): plain text
/// only, no colour, no full-screen dashboard.
pub fn dumb_terminal() -> bool {
    std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

/// ANSI colour, only on a terminal and never with `NO_COLOR` set (no-color.org).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint(pub bool);

/// The one colour rule, for every output: colour only on a terminal, never with `NO_COLOR`
/// set to a non-empty value (no-color.org: an empty one is as if unset), never on
/// `TERM=dumb`.
fn colour_allowed(terminal: bool, no_color: Option<&OsStr>, term: Option<&OsStr>) -> bool {
    let no_color = no_color.is_some_and(|v| !v.is_empty());
    let dumb = term.is_some_and(|t| t == "dumb");
    terminal && !no_color && !dumb
}

impl Paint {
    /// Colour for what goes to stdout: on a terminal, without a non-empty `NO_COLOR`, not on
    /// `TERM=dumb`.
    pub fn for_stdout() -> Paint {
        Paint::on_terminal(io::stdout().is_terminal())
    }

    /// Colour for what goes to stderr (`gpumon run`'s summary), by the same rule.
    pub fn for_stderr() -> Paint {
        Paint::on_terminal(io::stderr().is_terminal())
    }

    fn on_terminal(terminal: bool) -> Paint {
        Paint(colour_allowed(
            terminal,
            std::env::var_os("NO_COLOR").as_deref(),
            std::env::var_os("TERM").as_deref(),
        ))
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
    use proptest::prelude::*;

    #[test]
    fn colour_follows_no_color_org_and_term_dumb() {
        let os = |s: &'static str| Some(OsStr::new(s));
        assert!(colour_allowed(true, None, os("xterm-256color")));
        assert!(!colour_allowed(false, None, None), "not a terminal");
        assert!(!colour_allowed(true, os("1"), None), "NO_COLOR set");
        assert!(
            colour_allowed(true, os(""), None),
            "an empty NO_COLOR is as if unset (no-color.org)"
        );
        assert!(!colour_allowed(true, None, os("dumb")), "TERM=dumb");
    }

    #[test]
    fn escape_makes_control_and_reordering_characters_visible() {
        assert!(matches!(
            escape("python train.py --lr 3e-4"),
            Cow::Borrowed(_)
        ));
        assert_eq!(escape("a\u{1b}]0;pwned\u{7}b"), "a\\u{1b}]0;pwned\\u{7}b");
        assert_eq!(escape("x\u{9b}2Jy"), "x\\u{9b}2Jy");
        assert_eq!(escape("line\nnext\ttab\r"), "line\\nnext\\ttab\\r");
        assert_eq!(escape("del\u{7f}"), "del\\u{7f}");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(escape("naïve µs 日本 🎉"), "naïve µs 日本 🎉");
    }

    #[test]
    fn safe_json_escapes_what_serde_json_leaves_raw_and_reads_back_the_same() {
        let v = serde_json::json!({"cmd": "a\u{9b}2J\u{7f}\u{202e}\u{1b}[31m é"});
        let bytes = to_json_vec(&v).expect("json");
        let text = String::from_utf8(bytes).expect("utf-8");
        assert!(!text.chars().any(is_unsafe), "{text:?}");
        assert!(text.contains("\\u009b") && text.contains("\\u007f") && text.contains("\\u202e"));
        let back: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back, v);
        let mut pretty = Vec::new();
        write_json_pretty(&mut pretty, &v).expect("pretty");
        let plain = serde_json::to_string_pretty(&serde_json::json!({"cmd": "x"})).expect("plain");
        let mut mine = Vec::new();
        write_json_pretty(&mut mine, &serde_json::json!({"cmd": "x"})).expect("mine");
        assert_eq!(
            String::from_utf8(mine).expect("utf-8"),
            plain,
            "same layout as serde_json's"
        );
    }

    #[test]
    fn command_lines_keep_their_quoting_and_lose_their_escapes() {
        let args: Vec<std::ffi::OsString> = [
            "python",
            "train.py",
            "--name",
            "a b",
            "it's",
            "\u{1b}[2J",
            "",
        ]
        .iter()
        .map(Into::into)
        .collect();
        assert_eq!(
            shell_words(&args),
            "python train.py --name 'a b' \"it's\" '\\u{1b}[2J' ''"
        );
    }

    proptest! {
        /// Whatever a command line holds: nothing unsafe comes out, safe text comes out
        /// unchanged, and JSON reads back the original.
        #[test]
        fn nothing_unsafe_gets_through(s in "\\PC*|[\\x00-\\x{ff}\\u{2028}-\\u{206f}a-z]{0,64}") {
            let e = escape(&s);
            prop_assert!(!e.chars().any(is_unsafe), "{:?} -> {:?}", s, e);
            if !s.chars().any(is_unsafe) {
                prop_assert_eq!(e.as_ref(), s.as_str());
            }
            let json = String::from_utf8(to_json_vec(&s).expect("json")).expect("utf-8");
            prop_assert!(!json.chars().any(is_unsafe), "{:?}", json);
            let back: String = serde_json::from_str(&json).expect("valid JSON");
            prop_assert_eq!(back, s);
        }
    }

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
