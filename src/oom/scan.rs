//! Streaming detection: lines in, OOM messages out, in bounded memory.
//!
//! Each line is normalised (ANSI colour, CR, log prefixes such as `[rank0]: `, timestamps,
//! glog headers and comment-box borders removed). A line that looks like an OOM opens a block
//! that collects the following lines, because a message is often wrapped or split across lines
//! (by a terminal, a logger or a comment box); the block is parsed as one. Only the current
//! block and a few lines of context are kept, so the input can be hundreds of MB.

use std::sync::OnceLock;

use regex::Regex;

use super::parse::{parse_block, parse_text, tf_stat};
use super::{Analysis, Framework};

/// Longest line kept (longer lines are cut: binary garbage, minified JSON).
pub const MAX_LINE: usize = 16 * 1024;
/// Lines collected after a trigger line.
const BLOCK_LINES: usize = 12;
/// Lines of context kept before a trigger line.
const BEFORE: usize = 4;

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
            r")+"
        ))
        .expect("prefix regex")
    })
}

fn ansi_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07").expect("ansi"))
}

/// `line` cut to [`MAX_LINE`] bytes on a character boundary.
fn cut(line: &str) -> &str {
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
    let clean = if line.contains('\x1b') {
        ansi_re().replace_all(line, "")
    } else {
        line.into()
    };
    let clean = prefix_re().replace(&clean, "");
    let clean = clean.trim().trim_end_matches(['│', '|']).trim_end();
    // Text that went through a chat or a web page: tabs, no-break and thin spaces become
    // spaces, typographic quotes plain ones, so the messages' own patterns still match.
    clean
        .chars()
        .map(|c| match c {
            '\t' | '\u{a0}' | '\u{2007}' | '\u{2009}' | '\u{202f}' => ' ',
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            c => c,
        })
        .collect()
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
            r"|error code 2: outofmemory|could not be allocated",
        ))
        .expect("trigger regex")
    })
}

/// Cheap test for a line that may start an OOM message (one literal-optimised regex).
pub fn is_trigger(line: &str) -> bool {
    // TensorFlow's BFC warning that the caller will retry is not an OOM.
    trigger_re().is_match(line) && !line.contains("not a failure")
}

/// Cuts a byte stream into lines of at most [`MAX_LINE`] bytes, whatever the chunks it
/// arrives in, so memory stays bounded for inputs of any size or shape.
#[derive(Debug, Default)]
pub struct LineSplitter {
    line: Vec<u8>,
}

impl LineSplitter {
    /// Calls `f` with each line completed by `chunk` (without its newline).
    pub fn feed(&mut self, chunk: &[u8], mut f: impl FnMut(&str)) {
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            self.take(&rest[..i]);
            f(&String::from_utf8_lossy(&self.line));
            self.line.clear();
            rest = &rest[i + 1..];
        }
        self.take(rest);
    }

    /// Calls `f` with the last line, if the stream did not end with a newline.
    pub fn finish(&mut self, mut f: impl FnMut(&str)) {
        if !self.line.is_empty() {
            f(&String::from_utf8_lossy(&self.line));
            self.line.clear();
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// Feeds lines; keeps only the current block and a little context.
pub struct Scanner {
    analysis: Analysis,
    /// The last raw lines (a ring of reused buffers), normalised only when a trigger needs them.
    before: [String; BEFORE],
    next: usize,
    block: Vec<String>,
    /// Lines still to collect into the current block.
    pending: usize,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

impl Scanner {
    pub fn new() -> Self {
        Scanner {
            analysis: Analysis::default(),
            before: Default::default(),
            next: 0,
            block: Vec::new(),
            pending: 0,
        }
    }

    pub fn push_line(&mut self, raw: &str) {
        self.analysis.lines += 1;
        let raw = cut(raw);
        let trigger = is_trigger(raw);
        let stat = raw.contains("Limit:") || raw.contains("InUse:");
        if !trigger && !stat && self.pending == 0 {
            // The common case: remember the line as context, nothing else.
            let slot = &mut self.before[self.next];
            slot.clear();
            slot.push_str(raw);
            self.next = (self.next + 1) % BEFORE;
            return;
        }
        let line = normalise(raw);
        if line.is_empty() {
            return;
        }
        // TensorFlow prints its allocator stats long after the OOM line; a paste may also hold
        // the Stats block alone (or before the OOM line): it then stands for the OOM until one
        // arrives.
        if let Some((key, value)) = tf_stat(&line) {
            if self.pending > 0 {
                self.flush();
            }
            let last_is_tf = self
                .analysis
                .ooms
                .last()
                .is_some_and(|o| o.framework == Framework::Tensorflow);
            if !last_is_tf {
                self.analysis.ooms.push(super::parse::tf_stats_only());
            }
            if let Some(oom) = self.analysis.ooms.last_mut() {
                super::parse::apply_tf_stat(&mut oom.facts, key, value);
            }
            return;
        }
        if trigger {
            if self.pending > 0 && self.starts_new_message(&line) {
                self.flush();
            }
            if self.pending == 0 {
                self.block = self.context();
            }
            self.block.push(line);
            self.pending = BLOCK_LINES;
            return;
        }
        if self.pending > 0 {
            self.block.push(line);
            self.pending -= 1;
            if self.pending == 0 {
                self.flush();
            }
        }
    }

    /// The remembered context lines, oldest first, normalised.
    fn context(&mut self) -> Vec<String> {
        let mut out = Vec::with_capacity(BEFORE + BLOCK_LINES + 1);
        for i in 0..BEFORE {
            let slot = &mut self.before[(self.next + i) % BEFORE];
            let line = normalise(slot);
            slot.clear();
            if !line.is_empty() {
                out.push(line);
            }
        }
        out
    }

    /// A trigger line that is a complete OOM of its own while the open block already holds
    /// one: a repeated or second error, not the continuation of a wrapped message.
    fn starts_new_message(&self, line: &str) -> bool {
        // A traceback's source line (`raise ValueError("No available memory…")`) is not an error.
        if line.starts_with("raise ") {
            return false;
        }
        let (Some(new), Some(old)) = (parse_text(line), parse_block(&self.block)) else {
            return false;
        };
        // The same figure-less error printed twice (THCudaCheck's warning, then the raise) is
        // one event; a repeat with figures (a retry) is another. TensorRT logs one failure as
        // several errors (the allocator, the skipped tactic, the buffer resize).
        let one_failure =
            new.framework == Framework::Tensorrt && old.framework == Framework::Tensorrt;
        !(one_failure || (new.format == old.format && new.facts == super::Facts::default()))
    }

    fn flush(&mut self) {
        self.pending = 0;
        if self.block.is_empty() {
            return;
        }
        let block = std::mem::take(&mut self.block);
        if let Some(mut oom) = parse_block(&block) {
            // A Stats block printed before its OOM line: one event, the stats' figures kept.
            if oom.framework == Framework::Tensorflow {
                if let Some(stats) = self
                    .analysis
                    .ooms
                    .pop_if(|o| o.format == super::parse::TF_STATS_ONLY)
                {
                    oom.facts.total_bytes = oom.facts.total_bytes.or(stats.facts.total_bytes);
                    oom.facts.total_is_limit |= stats.facts.total_is_limit;
                    oom.facts.allocated_bytes =
                        oom.facts.allocated_bytes.or(stats.facts.allocated_bytes);
                }
            }
            self.analysis.ooms.push(oom);
        }
    }

    pub fn finish(mut self) -> super::Analysis {
        self.flush();
        // A lone "Limit:" or "InUse:" line is not an allocator's Stats block.
        self.analysis.ooms.retain(|o| {
            o.format != super::parse::TF_STATS_ONLY
                || (o.facts.total_bytes.is_some() && o.facts.allocated_bytes.is_some())
        });
        for oom in &mut self.analysis.ooms {
            oom.facts.derive();
        }
        self.analysis
    }
}

/// Calls `f` with each line of `reader`, reading in fixed chunks: a line longer than
/// [`MAX_LINE`] bytes is cut there, so memory stays bounded
/// whatever the input.
pub fn for_each_line(
    mut reader: impl std::io::Read,
    mut f: impl FnMut(&str),
) -> std::io::Result<()> {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut split = LineSplitter::default();
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => split.feed(&chunk[..n], &mut f),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    split.finish(f);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_prefixes_colour_and_boxes() {
        assert_eq!(
            normalise("[rank0]: torch.OutOfMemoryError: x"),
            "torch.OutOfMemoryError: x"
        );
        assert_eq!(
            normalise("\x1b[31mRuntimeError\x1b[0m: CUDA\r"),
            "RuntimeError: CUDA"
        );
        assert_eq!(
            normalise("│ CUDA out of memory.   │"),
            "CUDA out of memory."
        );
        assert_eq!(
            normalise("2024-03-01 12:00:01.123: E tensorflow"),
            "E tensorflow"
        );
        assert_eq!(
            normalise("E0123 12:34:56.789012 1234 bfc_allocator.cc:485] Allocator ran"),
            "Allocator ran"
        );
        assert_eq!(
            normalise(
                "(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708] ValueError: x"
            ),
            "ValueError: x"
        );
    }

    #[test]
    fn pasted_through_a_chat() {
        assert_eq!(
            normalise("Tried\u{a0}to allocate 2.00\u{202f}GiB \u{201c}x\u{201d} it\u{2019}s\tok"),
            "Tried to allocate 2.00 GiB \"x\" it's ok"
        );
        let a = super::super::analyze(
            "torch.OutOfMemoryError: CUDA out of memory.\u{a0}Tried to allocate 20.00\u{a0}MiB. GPU\u{a0}0 has a total capacity of 7.79 GiB of which 3.06 MiB is free.",
        );
        let o = a.main().expect("found through no-break spaces");
        assert_eq!(o.facts.requested_bytes, Some(20 << 20));
    }

    #[test]
    fn long_lines_are_cut_on_a_char_boundary() {
        let s = "é".repeat(MAX_LINE);
        assert!(normalise(&s).len() <= MAX_LINE);
    }

    #[test]
    fn lines_split_across_chunks_and_are_capped() {
        let mut split = LineSplitter::default();
        let mut got = Vec::new();
        split.feed(b"ab", |l| got.push(l.to_owned()));
        split.feed(b"c\nde\n", |l| got.push(l.to_owned()));
        split.feed(&vec![b'x'; MAX_LINE + 10], |l| got.push(l.to_owned()));
        split.finish(|l| got.push(l.len().to_string()));
        assert_eq!(
            got,
            vec!["abc".to_owned(), "de".to_owned(), MAX_LINE.to_string()]
        );
    }

    #[test]
    fn tf_retry_warnings_are_not_ooms() {
        assert!(!is_trigger("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.02GiB with freed_by_count=0. The caller indicates that this is not a failure"));
        assert!(is_trigger("torch.OutOfMemoryError: CUDA out of memory."));
        assert!(!is_trigger("step 12 loss 0.31"));
    }
}
