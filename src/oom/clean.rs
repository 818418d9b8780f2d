//! What a pasted line is cleaned to before anything reads it, and the cheap test for a line
//! that may start an OOM message: shared by the scanner and the parsers (so neither imports the
//! other), and by `run`, which watches a child's output for the same lines.

use std::sync::OnceLock;

use regex::Regex;

/// Longest line kept (longer lines are cut: binary garbage, minified JSON).
pub const MAX_LINE: usize = 16 * 1024;

fn prefix_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"^(?:",
            r"\s*(?:[│|#>*]|//|--)\s?", // comment boxes, quotes, bullets
            r"|\s*\[rank\d+\]:\s*",     // torchrun
            r"|\s*\(\w+(?:_\w+)* pid=\d+\)\s*", // vLLM / Ray workers
            r"|\s*[\w.\-]+\s+\|\s",     // docker compose service prefixes
            r"|\s*\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?:?\s*", // ISO time
            r"|\s*\[\d{4}-\d\d-\d\d[^\]]*\]\s*", // [2024-01-01 12:00:00]
            r"|\s*[EWIF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w.\-]+:\d+\]\s*", // glog
            r"|\s*(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\s+\[[^\]]+\]|\s+[\w.]+:\d+\])?\s*", // vLLM
            r"|\s*(?:ERROR|WARNING|INFO|DEBUG|CRITICAL)(?::[\w.]+)*:\s*", // Python logging
            r"|\s*\[(?:ERROR|E|W|TRT|TensorRT)\]\s*",
            r"|\s*[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.\-]+ [\w.\-/@]+(?:\[\d+\])?:\s*", // journalctl
            r"|\s*[a-z][a-z0-9.\-]*\d[a-z0-9.\-]*:\s", // pdsh/clush: a host name with a digit
            r")+"
        ))
        .expect("prefix regex")
    })
}

/// Terminal escapes a log may carry: CSI (colours, cursor), OSC (titles, OSC 8 hyperlinks)
/// ended by BEL or by ST (`ESC \\`), DCS/SOS/PM/APC strings, two-byte escapes, their 8-bit
/// C1 forms, and stray control characters.
pub(crate) fn ansi_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"\x1b\[[0-?]*[ -/]*[@-~]",
            r"|\x{9b}[0-?]*[ -/]*[@-~]",
            r"|(?:\x1b\]|\x{9d})[^\x07\x1b\x{9c}]*(?:\x07|\x1b\\|\x{9c})?",
            r"|(?:\x1b[P^_X]|[\x{90}\x{98}\x{9e}\x{9f}])[^\x1b\x{9c}]*(?:\x1b\\|\x{9c})?",
            r"|\x1b[ -/]*[0-~]",
            r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x{80}-\x{9f}]",
        ))
        .expect("ansi")
    })
}

/// Whether a line holds escape sequences or control characters to strip.
/// A NUL or another control byte inside a message (a log cut mid-write, a terminal's
/// bell) counts: it would split a word the patterns read.
pub(crate) fn has_escapes(line: &str) -> bool {
    line.bytes()
        .any(|b| (b < 0x20 && b != b'\t' && b != b'\r' && b != b'\n') || b == 0x7f)
        || line.contains(|c: char| ('\u{80}'..='\u{9f}').contains(&c))
}

/// Whether a line carries what a web page or a chat adds around a message: HTML entities
/// (`&gt;` for a quote), markdown bold or code marks.
fn has_markup(line: &str) -> bool {
    line.contains('&') || line.contains("**") || line.contains('`')
}

/// The entities a page's text is escaped with, and markdown's bold and code marks, undone:
/// `&gt; **RuntimeError**: \`CUDA out of memory\`` reads as `> RuntimeError: CUDA out of
/// memory`. Underscores stay (`GPU_0_bfc`, `PYTORCH_CUDA_ALLOC_CONF`).
pub(crate) fn unmark(line: &str) -> std::borrow::Cow<'_, str> {
    if !has_markup(line) {
        return line.into();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find(['&', '*', '`']) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(r) = rest.strip_prefix("**") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix('`') {
            rest = r;
        } else if rest.starts_with('&') {
            let entity = [
                ("&gt;", ">"),
                ("&lt;", "<"),
                ("&amp;", "&"),
                ("&quot;", "\""),
                ("&#39;", "'"),
                ("&#x27;", "'"),
                ("&apos;", "'"),
                ("&nbsp;", " "),
                ("&#34;", "\""),
                ("&#62;", ">"),
                ("&#60;", "<"),
            ]
            .into_iter()
            .find(|(e, _)| rest.starts_with(e));
            match entity {
                Some((e, c)) => {
                    out.push_str(c);
                    rest = &rest[e.len()..];
                }
                None => {
                    out.push('&');
                    rest = &rest[1..];
                }
            }
        } else {
            out.push('*');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out.into()
}

/// `line` cut to [`MAX_LINE`] bytes on a character boundary.
pub(crate) fn cut(line: &str) -> &str {
    let mut end = line.len().min(MAX_LINE);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// One line, stripped of everything that is not the message.
pub fn normalise(line: &str) -> String {
    let line = cut(line);
    let line = line.trim_end_matches(['\r', '\n']);
    let clean = if has_escapes(line) {
        ansi_re().replace_all(line, "")
    } else {
        line.into()
    };
    let clean = unmark(&clean);
    let clean = prefix_re().replace(&clean, "");
    let clean = clean.trim().trim_end_matches(['│', '|']).trim_end();
    // Text that went through a chat or a web page: tabs, no-break and thin spaces become
    // spaces, typographic quotes plain ones, so the messages' own patterns still match.
    // Runs of spaces (text pasted from a spreadsheet or aligned columns) become one.
    let mut out = String::with_capacity(clean.len());
    for c in clean.chars() {
        let c = match c {
            '\t' | '\u{a0}' | '\u{2007}' | '\u{2009}' | '\u{202f}' => ' ',
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            c => c,
        };
        if c == ' ' && out.ends_with(' ') {
            continue;
        }
        out.push(c);
    }
    out
}

fn trigger_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)out of memory|oom when allocating|resource_exhausted|resource exhausted",
            r"|ran out of memory trying|alloc_failed|failed to allocate|cudaerrormemoryallocation",
            r"|error=2 :|runtime error \(2\)|outofmemoryerror|no available memory for the cache blocks",
            r"|kv cache is needed|cannot allocate|tried to allocate|reserved by pytorch but unallocated",
            r"|less than desired gpu memory utilization|hip_error_outof",
            r"|errorout(?:of)?devicememory|device memory allocation of size|kiogpucommandbuffercallbackerroroutofmemory",
            r"|error code 2: outofmemory|could not be allocated|out of resource: shared memory",
            r"|out of (?:gpu|device|video) memory|could not allocate|unable to allocate",
            r"|cuda_error_out_of_memory|out_of_memory|rmm_error|pinned host memory",
            r"|maximum number of tokens that can be stored in kv cache",
            r"|insufficient gpu memory for kvcache|kvcache tokens, but your prompt requires",
            r"|executor creation failed due to insufficient gpu memory",
            r"|attempting to reserve|\[metal::malloc\]|maximum allowed buffer size|can't allocate",
            r"|out_of_device_memory|insufficient memory|exceeded hbm capacity|larger than buffer maximum",
            r"|allocation failed for size",
        ))
        .expect("trigger regex")
    })
}

/// Cheap test for a line that may start an OOM message (one literal-optimised regex).
pub fn is_trigger(line: &str) -> bool {
    trigger_re().is_match(line) && !is_not_a_failure(line)
}

/// Lines that name an allocation that did not fail the job: TensorFlow's BFC warning that the
/// caller will retry (`freed_by_count`, "not a failure"), however it is wrapped, and a failed
/// `mlock` of a host buffer (llama.cpp pins the model in RAM if it can and runs on if not).
pub fn is_not_a_failure(line: &str) -> bool {
    line.contains("not a failure")
        || line.contains("freed_by_count")
        || line.contains("performance gains if more memory")
        || line.contains("mlock")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_a_page_or_a_chat_is_undone() {
        assert_eq!(
            unmark("&gt; **RuntimeError**: `CUDA out of memory` &amp; more &lt;3 &quot;x&quot;"),
            "> RuntimeError: CUDA out of memory & more <3 \"x\""
        );
        assert_eq!(
            unmark("GPU_0_bfc PYTORCH_CUDA_ALLOC_CONF"),
            "GPU_0_bfc PYTORCH_CUDA_ALLOC_CONF"
        );
        assert_eq!(unmark("a & b *c*"), "a & b *c*");
        assert_eq!(
            normalise("&gt; &gt; RuntimeError: NPU out of memory."),
            "RuntimeError: NPU out of memory."
        );
    }

    #[test]
    fn a_nul_or_control_byte_inside_a_word_is_taken_out() {
        assert_eq!(
            normalise("CUDA out of mem\u{0}ory. Tried to\u{7f} allocate"),
            "CUDA out of memory. Tried to allocate"
        );
        assert!(has_escapes("a\u{1}b"));
        assert!(!has_escapes("a\tb"));
    }

    #[test]
    fn allocations_that_did_not_fail_are_not_triggers() {
        assert!(!is_trigger("Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.14GiB with freed_by_count=0. The caller"));
        assert!(!is_trigger(
            "warning: failed to mlock 139264000-byte buffer (after previously locking 0 bytes): Cannot allocate memory"
        ));
        assert!(is_trigger(
            "RuntimeError: [metal::malloc] Resource limit (499000) exceeded."
        ));
        assert!(is_trigger(
            "RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory."
        ));
    }
}
