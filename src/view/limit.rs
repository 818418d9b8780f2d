//! The text of an out-of-memory error raised at a container's GPU memory limit, for `explain`
//! and `run`'s summary: the verdict, then its remedies, wrapped to the terminal.

use crate::model::unified::LimitVerdict;
use crate::text::Paint;

/// The verdict and its numbered remedies; the cgroup's name is escaped.
pub fn render(v: &LimitVerdict, paint: Paint, width: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("\n");
    let opts = textwrap::Options::new(width.max(20));
    let headline = crate::text::escape(&v.headline()).into_owned();
    for line in textwrap::wrap(&headline, opts) {
        let _ = writeln!(out, "{}", paint.bold(&line));
    }
    for (i, r) in v.remedies.iter().enumerate() {
        let opts = textwrap::Options::new(width.max(20))
            .initial_indent("  ")
            .subsequent_indent("     ");
        for line in textwrap::wrap(&format!("{}. {r}", i + 1), opts) {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}
