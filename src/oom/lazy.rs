//! A regex compiled only when a text could match it. `explain` reads one message with a table of
//! ~90 families and ~190 patterns, tried in order until one reads it; compiling the patterns of
//! every family before the right one cost most of a short paste's time (about 25 of 40 ms,
//! profiled). Nearly every pattern needs some literal text (`Tried to allocate`, `bm_alloc_gmem`,
//! one of an alternation's words), and a text without it cannot match, so the pattern is
//! compiled only once a text holds what it needs.
//!
//! What a pattern needs is worked out from its syntax tree (`regex-syntax`'s parser, without the
//! Unicode tables or the automata that make compiling slow), conservatively: a literal that every
//! match must contain, or for an alternation one literal per branch. A pattern with a branch that
//! needs nothing is always compiled. Debug builds (and so every test) compile every pattern and
//! check that a text the gate refuses is one the pattern does not match.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Captures, Match, Regex, Replacer};
use regex_syntax::ast::{self, Ast};

/// Literals of which a match must contain at least one; `None`: nothing is known to be needed.
#[derive(Debug, Clone)]
pub struct Needs {
    /// One of these (never empty).
    any_of: Vec<String>,
    /// Matched without case (the pattern sets `i` anywhere).
    caseless: bool,
    /// `any_of`'s searchers, built once: `memmem::find` builds one per call, which profiled as
    /// a fifth of the corpus tests' time.
    finders: Vec<memchr::memmem::Finder<'static>>,
    /// Without case: one automaton for every literal, ASCII case folded (`None` when a literal
    /// is not ASCII, which lets every text through).
    caseless_ac: Option<aho_corasick::AhoCorasick>,
}

impl Needs {
    /// What `pattern` needs, `None` when nothing (or it cannot be parsed: then the regex's own
    /// error says so when it is compiled).
    pub fn of(pattern: &str) -> Option<Needs> {
        let ast = ast::parse::Parser::new().parse(pattern).ok()?;
        let any_of = needs(&ast)?;
        let finders = any_of
            .iter()
            .map(|l| memchr::memmem::Finder::new(l.as_bytes()).into_owned())
            .collect();
        let caseless = sets_caseless(&ast);
        let caseless_ac = (caseless && any_of.iter().all(|l| l.is_ascii()))
            .then(|| {
                aho_corasick::AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(&any_of)
                    .ok()
            })
            .flatten();
        Some(Needs {
            any_of,
            caseless,
            finders,
            caseless_ac,
        })
    }

    /// Whether `text` holds one of the literals, so that the pattern could match it.
    pub fn may_match(&self, text: &str) -> bool {
        if !self.caseless {
            return self
                .finders
                .iter()
                .any(|f| f.find(text.as_bytes()).is_some());
        }
        // Unicode's case folding joins a few non-ASCII letters to ASCII ones (K, the Kelvin sign;
        // s, the long s): without case, only ASCII against ASCII is decided here.
        if !text.is_ascii() {
            return true;
        }
        self.caseless_ac.as_ref().is_none_or(|ac| ac.is_match(text))
    }
}

/// Whether the pattern turns case-insensitivity on anywhere (conservative: the literals are then
/// all compared without case, which lets more texts through, never fewer).
fn sets_caseless(ast: &Ast) -> bool {
    let flags_caseless = |f: &ast::Flags| {
        let mut negated = false;
        f.items.iter().any(|item| match item.kind {
            ast::FlagsItemKind::Negation => {
                negated = true;
                false
            }
            ast::FlagsItemKind::Flag(ast::Flag::CaseInsensitive) => !negated,
            ast::FlagsItemKind::Flag(_) => false,
        })
    };
    match ast {
        Ast::Flags(f) => flags_caseless(&f.flags),
        Ast::Group(g) => {
            matches!(&g.kind, ast::GroupKind::NonCapturing(f) if flags_caseless(f))
                || sets_caseless(&g.ast)
        }
        Ast::Repetition(r) => sets_caseless(&r.ast),
        Ast::Alternation(a) => a.asts.iter().any(sets_caseless),
        Ast::Concat(c) => c.asts.iter().any(sets_caseless),
        _ => false,
    }
}

/// The literals one of which every match of `ast` contains, or `None`.
fn needs(ast: &Ast) -> Option<Vec<String>> {
    match ast {
        Ast::Literal(l) => Some(vec![l.c.to_string()]),
        Ast::Group(g) => needs(&g.ast),
        Ast::Repetition(r) => {
            let min = match r.op.kind {
                ast::RepetitionKind::ZeroOrOne | ast::RepetitionKind::ZeroOrMore => 0,
                ast::RepetitionKind::OneOrMore => 1,
                ast::RepetitionKind::Range(ast::RepetitionRange::Exactly(n))
                | ast::RepetitionKind::Range(ast::RepetitionRange::AtLeast(n))
                | ast::RepetitionKind::Range(ast::RepetitionRange::Bounded(n, _)) => n,
            };
            (min >= 1).then(|| needs(&r.ast)).flatten()
        }
        Ast::Alternation(a) => {
            let mut all = Vec::new();
            for branch in &a.asts {
                all.extend(needs(branch)?);
            }
            Some(all)
        }
        Ast::Concat(c) => {
            // Each run of plain literals is needed whole; so is what any one part needs. The
            // most selective is kept: the longest shortest literal, then the fewest.
            let mut best: Option<Vec<String>> = None;
            let mut consider = |cand: Vec<String>| {
                let score = |v: &Vec<String>| {
                    (
                        v.iter().map(|s| s.chars().count()).min().unwrap_or(0),
                        usize::MAX - v.len(),
                    )
                };
                if best.as_ref().is_none_or(|b| score(&cand) > score(b)) {
                    best = Some(cand);
                }
            };
            let mut run = String::new();
            for part in &c.asts {
                match part {
                    Ast::Literal(l) => run.push(l.c),
                    // A flag changes no text; it does not break a run.
                    Ast::Flags(_) => {}
                    _ => {
                        if !run.is_empty() {
                            consider(vec![std::mem::take(&mut run)]);
                        }
                        if let Some(n) = needs(part) {
                            consider(n);
                        }
                    }
                }
            }
            if !run.is_empty() {
                consider(vec![run]);
            }
            best
        }
        Ast::Empty(_)
        | Ast::Flags(_)
        | Ast::Dot(_)
        | Ast::Assertion(_)
        | Ast::ClassUnicode(_)
        | Ast::ClassPerl(_)
        | Ast::ClassBracketed(_) => None,
    }
}

/// A regex that is compiled the first time a text could match it (the `re!` macro's).
pub struct LazyRegex {
    name: &'static str,
    pattern: fn() -> String,
    needs: OnceLock<Option<Needs>>,
    regex: OnceLock<Regex>,
}

impl LazyRegex {
    pub const fn new(name: &'static str, pattern: fn() -> String) -> Self {
        Self {
            name,
            pattern,
            needs: OnceLock::new(),
            regex: OnceLock::new(),
        }
    }

    /// The compiled regex (compiling it now, if not yet).
    pub fn regex(&self) -> &Regex {
        self.regex
            .get_or_init(|| Regex::new(&(self.pattern)()).expect(self.name))
    }

    fn needs(&self) -> Option<&Needs> {
        self.needs
            .get_or_init(|| Needs::of(&(self.pattern)()))
            .as_ref()
    }

    /// The regex, when `text` could match it.
    fn for_text(&self, text: &str) -> Option<&Regex> {
        let may = self.needs().is_none_or(|n| n.may_match(text));
        if cfg!(debug_assertions) {
            // Every test checks the gate: what it refuses, the pattern does not match.
            let re = self.regex();
            assert!(
                may || !re.is_match(text),
                "{}: refused a text it matches (it needs one of {:?})",
                self.name,
                self.needs().map(|n| &n.any_of)
            );
            return may.then_some(re);
        }
        may.then(|| self.regex())
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.for_text(text).is_some_and(|r| r.is_match(text))
    }

    pub fn find<'t>(&self, text: &'t str) -> Option<Match<'t>> {
        self.for_text(text)?.find(text)
    }

    pub fn find_iter<'s, 't>(
        &'s self,
        text: &'t str,
    ) -> impl Iterator<Item = Match<'t>> + use<'s, 't> {
        self.for_text(text)
            .into_iter()
            .flat_map(move |r| r.find_iter(text))
    }

    pub fn captures<'t>(&self, text: &'t str) -> Option<Captures<'t>> {
        self.for_text(text)?.captures(text)
    }

    pub fn captures_iter<'s, 't>(
        &'s self,
        text: &'t str,
    ) -> impl Iterator<Item = Captures<'t>> + use<'s, 't> {
        self.for_text(text)
            .into_iter()
            .flat_map(move |r| r.captures_iter(text))
    }

    pub fn replace<'t, R: Replacer>(&self, text: &'t str, rep: R) -> Cow<'t, str> {
        match self.for_text(text) {
            Some(r) => r.replace(text, rep),
            None => Cow::Borrowed(text),
        }
    }

    pub fn replace_all<'t, R: Replacer>(&self, text: &'t str, rep: R) -> Cow<'t, str> {
        match self.for_text(text) {
            Some(r) => r.replace_all(text, rep),
            None => Cow::Borrowed(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any_of(p: &str) -> Option<Vec<String>> {
        Needs::of(p).map(|n| n.any_of)
    }

    #[test]
    fn what_a_pattern_needs() {
        assert_eq!(
            any_of(r"Tried to allocate (\d+) bytes"),
            Some(vec!["Tried to allocate ".into()])
        );
        // An alternation needs one literal per branch; a branch needing nothing, nothing.
        assert_eq!(
            any_of(r"(?:cudaMalloc|hipMalloc)\(\S+\) failed"),
            Some(vec!["cudaMalloc".into(), "hipMalloc".into()])
        );
        assert_eq!(
            any_of(r"(?i)(?:out of memory|OOM) (\d+)"),
            Some(vec!["out of memory".into(), "OOM".into()])
        );
        assert_eq!(any_of(r"foo|\d+"), None);
        // Optional parts need nothing; one or more of a part needs it.
        assert_eq!(any_of(r"(?:abc)?\d+"), None);
        assert_eq!(any_of(r"(?:abc)+\d+"), Some(vec!["abc".into()]));
        assert_eq!(any_of(r"x{0,3}y"), Some(vec!["y".into()]));
        // Escapes are their characters; a class breaks a run.
        assert_eq!(any_of(r"a\.b[cd]ef"), Some(vec!["a.b".into()]));
        assert_eq!(any_of(r"\w+"), None);
        // Verbose mode's spaces are not text.
        assert_eq!(any_of(r"(?x) ab cd \d"), Some(vec!["abcd".into()]));
        assert!(Needs::of(r"(?i)abc").expect("needs").caseless);
        assert!(Needs::of(r"x(?i:abc)").expect("needs").caseless);
        assert!(!Needs::of(r"abc(?-i)d").expect("needs").caseless);
    }

    #[test]
    fn the_gate_lets_through_every_text_the_pattern_could_match() {
        let cases: &[(&str, &str, bool)] = &[
            (
                r"Tried to allocate (\d+)",
                "CUDA out of memory. Tried to allocate 20",
                true,
            ),
            (
                r"Tried to allocate (\d+)",
                "CUDA out of memory. tried to allocate 20",
                false,
            ),
            (r"(?i)Tried to allocate (\d+)", "TRIED TO ALLOCATE 20", true),
            (r"(?i)ran out", "no such words", false),
            // The Kelvin sign folds to k: without case, non-ASCII text is always let through.
            (r"(?i)kv cache", "the \u{212a}v cache", true),
            (r"显存不足", "CUDA 显存不足", true),
            (r"显存不足", "CUDA memory", false),
            (r"(?:abc)?\d+", "42", true),
        ];
        for (p, text, expected) in cases {
            let re = Regex::new(p).expect("regex");
            let may = Needs::of(p).is_none_or(|n| n.may_match(text));
            assert_eq!(may, *expected, "{p} on {text:?}");
            assert!(may || !re.is_match(text), "{p} on {text:?}");
        }
    }

    #[test]
    fn a_lazy_regex_answers_as_its_regex() {
        static RE: LazyRegex = LazyRegex::new("t", || r"(?i)size (\d+)".to_string());
        assert_eq!(
            RE.captures("Size 12").map(|c| c[1].to_string()),
            Some("12".into())
        );
        assert!(RE.captures("nothing").is_none());
        assert_eq!(RE.find_iter("size 1 size 2").count(), 2);
        assert_eq!(RE.replace_all("size 1, size 2", "x"), "x, x");
        assert!(matches!(RE.replace_all("none", "x"), Cow::Borrowed("none")));
        assert!(!RE.is_match("sizes"));
    }
}
