//! Streaming detection: lines in, OOM messages out, in bounded memory.
//!
//! Each line is normalised (ANSI colour, CR, log prefixes such as `[rank0]: `, timestamps,
//! glog headers and comment-box borders removed). A line that looks like an OOM opens a block
//! that collects the following lines, because a message is often wrapped or split across lines
//! (by a terminal, a logger or a comment box); the block is parsed as one. Only the current
//! block and a few lines of context are kept, so the input can be hundreds of MB.

use super::clean::{ansi_re, cut, has_escapes, is_plain, is_quiet, may_continue_a_trigger};
pub use super::clean::{is_trigger, normalise, MAX_LINE};
use super::parse::{parse_block, parse_text, tf_stat};
use super::{Analysis, Framework};

/// ggml-alloc's and the loader's lines after a backend's failed allocation, for the same
/// buffer: "failed to allocate CUDA0 buffer of size N", "unable to allocate CUDA0 buffer".
fn ggml_follow_up(line: &str) -> bool {
    line.contains(" buffer of size ") || line.contains("unable to allocate")
}

/// A line that opens a dated log record: an ISO date (`2019-01-08 19:06:11.303639: E …`) or
/// glog's level and date (`E0108 19:06:11.303639 …`) at its start. Lines a program prints
/// inside one record (a traceback, a message's own lines) carry no date of their own.
fn starts_a_dated_record(raw: &str) -> bool {
    let b = raw.trim_start().as_bytes();
    let iso = b.len() > 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-';
    let glog = b.len() > 6
        && matches!(b[0], b'E' | b'W' | b'I' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' ';
    iso || glog
}

/// A line that starts a Python exception's message (`RuntimeError: …`,
/// `torch.OutOfMemoryError: …`).
fn exception_head(line: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r"^[A-Za-z_][\w.]*(?:Error|Exception): ").expect("exception regex")
    })
    .is_match(line)
}

/// Bytes of two lines' ends joined to find a trigger phrase split between them (the longest
/// phrase is under 64).
const JOIN: usize = 64;

/// Lines collected after a trigger line.
const BLOCK_LINES: usize = 12;
/// Characters collected after a trigger line, where more than [`BLOCK_LINES`] lines hold them:
/// a message re-wrapped narrow (a terminal or a page at 40 columns) spreads the same words over
/// more lines, and its last figures (a device named 11 lines on) stay in its block.
const BLOCK_CHARS: usize = 960;
/// Lines of context kept before a trigger line.
const BEFORE: usize = 8;
/// Bytes of context kept before a trigger line, where more than [`BEFORE`] lines hold
/// them: a log re-wrapped narrow (40 columns) spreads the same eight lines over twice as many,
/// and a figure or device they named (RPCS3's "Detected 8238 MB of device local memory") stays
/// in the failure's context. Never more than [`BEFORE_MAX`] lines.
const BEFORE_CHARS: usize = 640;
const BEFORE_MAX: usize = 24;
/// The most lines and bytes one block holds: a run of trigger lines that read as one message
/// (a retry logged every step, prose that names OOM on every line) would otherwise grow the
/// block without bound and have it joined and parsed again at each new line, a cost that grows
/// with the lines before. Past these the block's further lines are counted, not kept or read
/// again (every corpus message is well under both).
const MAX_BLOCK_LINES: usize = 64;
const MAX_BLOCK_BYTES: usize = 32 * 1024;

/// The text of a line's bytes: as it is when it is UTF-8 (checked a word at a time), else with
/// U+FFFD for what is not.
fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Cuts a byte stream into lines of at most [`MAX_LINE`] bytes, whatever the chunks it
/// arrives in, so memory stays bounded for inputs of any size or shape. A line ends at a
/// newline, a CR alone (progress bars, old logs) or a CRLF. A longer line (a JSON log record
/// with an escaped traceback, minified output) goes out in pieces, cut at an escaped `\n`
/// or else at a space near the limit: what is at its end is read too.
#[derive(Debug, Default)]
pub struct LineSplitter {
    line: Vec<u8>,
    /// The chunk being split, its ASCII letters in lower case, for the phrases' search.
    lower: Vec<u8>,
    /// The last byte seen was a CR: a LF right after it ends nothing more.
    after_cr: bool,
}

impl LineSplitter {
    /// Calls `f` with each line completed by `chunk` (without its line break).
    pub fn feed(&mut self, chunk: &[u8], mut f: impl FnMut(&str)) {
        self.feed_noted(chunk, |line, _| f(line));
    }

    /// As [`LineSplitter::feed`], with whether the line is known to hold none of the phrases
    /// the scanner looks for (`clean::is_quiet` on it would be true): one pass over the chunk
    /// (a vectorised search for pieces of the phrases) decides that for its whole lines, rather
    /// than the phrases' automaton on each line, most of the time a long log took. `false` says
    /// nothing: the scanner tests the line.
    pub fn feed_noted(&mut self, chunk: &[u8], mut f: impl FnMut(&str, bool)) {
        let mut rest = chunk;
        if self.after_cr && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        self.after_cr = false;
        // Where in `rest` a phrase may start: the lines before hold none (no phrase holds a
        // line break).
        let mut lower = std::mem::take(&mut self.lower);
        lower.clear();
        lower.extend(rest.iter().map(u8::to_ascii_lowercase));
        let noted_from =
            |rest: &[u8]| super::clean::maybe_noted_at(&lower[lower.len() - rest.len()..]);
        let mut noted = noted_from(rest);
        while let Some(i) = memchr::memchr2(b'\n', b'\r', rest) {
            if self.line.is_empty() && i <= MAX_LINE {
                // A whole line in this chunk: read where it lies, without a copy.
                let quiet = noted.is_none_or(|at| at > i);
                f(&lossy(&rest[..i]), quiet);
            } else {
                self.take(&rest[..i], &mut |l| f(l, false));
                f(&String::from_utf8_lossy(&self.line), false);
                self.line.clear();
            }
            let cr = rest[i] == b'\r';
            let mut step = i + 1;
            if cr {
                match rest.get(step) {
                    Some(b'\n') => step += 1,
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            rest = &rest[step..];
            noted = match noted {
                Some(at) if at >= step => Some(at - step),
                Some(_) => noted_from(rest),
                None => None,
            };
        }
        self.take(rest, &mut |l| f(l, false));
        self.lower = lower;
    }

    /// Calls `f` with the last line, if the stream did not end with a line break.
    pub fn finish(&mut self, mut f: impl FnMut(&str)) {
        if !self.line.is_empty() {
            f(&String::from_utf8_lossy(&self.line));
            self.line.clear();
        }
    }

    /// Adds `bytes` to the line, sending out a piece each time it reaches [`MAX_LINE`].
    fn take(&mut self, mut bytes: &[u8], f: &mut impl FnMut(&str)) {
        while self.line.len() + bytes.len() > MAX_LINE {
            let room = MAX_LINE - self.line.len();
            self.line.extend_from_slice(&bytes[..room]);
            bytes = &bytes[room..];
            // Cut in the last quarter: at an escaped newline (dropped), else after a space.
            let from = MAX_LINE * 3 / 4;
            let tail = &self.line[from..];
            let (cut, skip) = match tail.windows(2).rposition(|w| w == b"\\n") {
                Some(i) => (from + i, 2),
                None => match tail.iter().rposition(|b| *b == b' ') {
                    Some(i) => (from + i + 1, 0),
                    None => (MAX_LINE, 0),
                },
            };
            // Never in the middle of a character.
            let mut cut = cut;
            while cut < self.line.len() && (self.line[cut] & 0xc0) == 0x80 {
                cut += 1;
            }
            f(&String::from_utf8_lossy(&self.line[..cut]));
            let keep = (cut + skip).min(self.line.len());
            self.line.drain(..keep);
        }
        self.line.extend_from_slice(bytes);
    }
}

/// Text from UTF-16LE (what PowerShell 5's `>` writes), turned into UTF-8 chunk by chunk.
#[derive(Debug, Default)]
struct Utf16Le {
    odd: Option<u8>,
    high: Option<u16>,
}

impl Utf16Le {
    /// Whether the input's first bytes are UTF-16LE: a byte order mark, or ASCII text with a
    /// zero after every byte.
    fn detect(head: &[u8]) -> bool {
        if head.starts_with(&[0xff, 0xfe]) {
            return true;
        }
        let pairs: Vec<&[u8]> = head.chunks_exact(2).take(64).collect();
        pairs.len() >= 4
            && pairs.iter().filter(|p| p[1] == 0 && p[0] != 0).count() * 4 >= pairs.len() * 3
    }

    fn decode(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let mut units = Vec::with_capacity(bytes.len() / 2 + 1);
        let mut rest = bytes;
        if let Some(b) = self.odd.take() {
            if let Some((&next, r)) = rest.split_first() {
                units.push(u16::from_le_bytes([b, next]));
                rest = r;
            } else {
                self.odd = Some(b);
            }
        }
        let mut pairs = rest.chunks_exact(2);
        units.extend(pairs.by_ref().map(|p| u16::from_le_bytes([p[0], p[1]])));
        if let [b] = pairs.remainder() {
            self.odd = Some(*b);
        }
        if let Some(h) = self.high.take() {
            units.insert(0, h);
        }
        // A high surrogate at the end waits for its pair.
        if units.last().is_some_and(|u| (0xd800..0xdc00).contains(u)) {
            self.high = units.pop();
        }
        for c in char::decode_utf16(units) {
            let c = c.unwrap_or(char::REPLACEMENT_CHARACTER);
            if c != '\u{feff}' {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// Feeds lines; keeps only the current block and a little context.
pub struct Scanner {
    analysis: Analysis,
    /// The last raw lines (a ring of reused buffers), normalised only when a trigger needs them.
    before: [String; BEFORE_MAX],
    next: usize,
    block: Vec<String>,
    /// Bytes in `block`, bounded by [`MAX_BLOCK_BYTES`] (and one line).
    block_bytes: usize,
    /// The open block as parsed, kept until the block changes: a full block's further lines
    /// are compared with it without parsing it again.
    open: Option<Option<super::Oom>>,
    /// Lines of open blocks past [`MAX_BLOCK_LINES`] or [`MAX_BLOCK_BYTES`], counted, not kept.
    overflow: u64,
    /// Bytes handed to the parsers so far ([`Scanner::parsed_bytes`]).
    parsed: u64,
    /// Lines still to collect into the current block.
    pending: usize,
    /// Characters still to collect into it ([`BLOCK_CHARS`]): the last line of `pending` is
    /// not spent while some remain.
    pending_chars: usize,
    /// Where in the open block, after its last trigger line, the first line that opens a dated
    /// log record lies ([`starts_a_dated_record`]).
    record_at: Option<usize>,
    /// The open block's last trigger line opened a dated record itself.
    trigger_dated: bool,
    /// The end of the previous line, and a buffer for it joined to the next line's start: a
    /// message re-wrapped at some width splits its trigger phrase ("less than desired GPU" /
    /// "memory utilization") across two lines.
    tail: String,
    /// The line before, where it opened a device's start-up account and
    /// [`super::banner::Banners::note`] read nothing from it (its figures perhaps wrapped onto
    /// this line), and how many lines it joins ([`Scanner::note_banner`]).
    banner_head: Option<(String, u8)>,
    /// The line before's tail, once `tail` holds this line's.
    prev_tail: String,
    junction: String,
    /// The previous line was plain ([`is_plain`]) and held no trigger phrase: its tail alone
    /// holds none either, so only a phrase split at the line break could join it to this line.
    prev_plain: bool,
    /// Every trigger line of the open block is a sentence quoting a failure inline
    /// ([`is_prose_quote`]): what it finds is kept only if the quote carries figures.
    quoted: bool,
    /// That quoting sentence says the failure happened to its writer
    /// ([`super::clean::reports_a_failure`]).
    reported: bool,
    /// One of those sentences quotes a whole failure line, exception class and all
    /// ([`super::clean::quotes_a_whole_failure`]): a report of one, figures or not.
    whole: bool,
    /// One of those sentences ties the failure to pinned host memory
    /// ([`super::clean::names_pinned_host`]).
    pinned: bool,
    /// A line after the open block's trigger names one of CUDA's host-pinning calls
    /// ([`super::clean::names_pinning_call`]): where the message relays CUDA's code without its
    /// call, the call that failed.
    pinning_after: bool,
    /// Where the open block's own lines start (its first trigger line; the context is before),
    /// where it was split from a block before it that kept a failure
    /// ([`Scanner::starts_new_message`]).
    split_at: Option<usize>,
    /// Failures kept so far ([`Scanner::keep`]), merged ones included.
    kept: u64,
    /// The one-pass test for quiet lines is on (off only in a test that checks it changes
    /// nothing).
    quick: bool,
    /// How deep inside escaped strings the line being read lies.
    unescaped: u8,
    /// TensorFlow's start-up account of its GPUs ([`Scanner::note_tf_device`]): each device's
    /// total memory, the last [`TF_DEVICES`] of them, and the device whose lines follow.
    tf_totals: Vec<(u32, u64)>,
    tf_found: Option<u32>,
    /// The memory TensorFlow's allocator was given on each device as it created it, the last
    /// [`TF_DEVICES`].
    tf_limits: Vec<(u32, u64)>,
    /// A "Created TensorFlow device (…" line read so far, and how many more lines it may take
    /// (a paste wrapped at a narrow width splits it).
    tf_created: String,
    tf_created_lines: u8,
    /// The GPUs whose BFC allocator the log names ("Allocator (GPU_0_bfc)"), its retry warnings
    /// included, the last [`TF_DEVICES`].
    tf_allocators: Vec<u32>,
    /// Other programs' start-up accounts of their devices ([`super::banner`]).
    banners: super::banner::Banners,
}

/// How many of TensorFlow's device accounts a scan keeps.
const TF_DEVICES: usize = 16;

/// Notes `bytes` for device `d` in a bounded list of TensorFlow's start-up figures.
fn note_device(list: &mut Vec<(u32, u64)>, d: u32, bytes: u64) {
    list.retain(|(dev, _)| *dev != d);
    if list.len() >= TF_DEVICES {
        list.remove(0);
    }
    list.push((d, bytes));
}

// TensorFlow's `gpu_device.cc` as it finds each GPU: "Found device 0 with properties:", then
// the device's memory, by release: 1.0–1.4 "Total memory: 7.92GiB" (and "Free memory: …"),
// 1.5–1.15 "totalMemory: 10.91GiB freeMemory: 10.75GiB", 2.x "deviceMemorySize: 10.76GiB".
re!(tf_found_re, r"\bdevice (\d{1,3}) with properties");
// And as it creates its device on each: "Created TensorFlow device (/job:…/device:GPU:0 with
// 67 MB memory)", the memory its allocator may use there (the BFC allocator's limit, in MiB).
// Read by its parenthesis alone, which no other line prints (1.x says "Creating TensorFlow
// device (/device:GPU:0 with …"), so that a paste wrapped before it still gives it.
re!(
    tf_created_re,
    r"\(/[^)\s]{0,200}?device:GPU:(\d{1,3})\s+with\s+(\d+)\s+MB\s+memory\)"
);
re!(
    xla_pool_re,
    r"\bXLA backend allocating (\d{1,20}) bytes on device (\d{1,3}) for BFCAllocator\b"
);
// The BFC allocator's name in its lines: one per GPU, "GPU_N_bfc".
re!(tf_allocator_re, r"Allocator \(GPU_(\d{1,3})_bfc\)");
/// How many lines after its start a wrapped "Created TensorFlow device" line may take.
const TF_CREATED_LINES: u8 = 4;
/// The most of it kept.
const TF_CREATED_CHARS: usize = 320;
re!(
    tf_total_re,
    r"(?:Total memory|totalMemory|deviceMemorySize): ?(\d+(?:\.\d+)?\s?(?:[KMGT]i?B|bytes))"
);

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
            block_bytes: 0,
            open: None,
            overflow: 0,
            parsed: 0,
            pending: 0,
            pending_chars: 0,
            record_at: None,
            trigger_dated: false,
            tf_totals: Vec::new(),
            tf_found: None,
            tf_limits: Vec::new(),
            tf_created: String::new(),
            tf_created_lines: 0,
            tf_allocators: Vec::new(),
            banners: Default::default(),
            tail: String::new(),
            banner_head: None,
            prev_tail: String::new(),
            junction: String::new(),
            prev_plain: false,
            quoted: false,
            reported: false,
            whole: false,
            pinned: false,
            pinning_after: false,
            split_at: None,
            kept: 0,
            quick: true,
            unescaped: 0,
        }
    }

    /// Whether the previous line's end and this line's start together hold a trigger phrase.
    fn trigger_across(&mut self, raw: &str) -> bool {
        // A line that opens a log record (`[rank0]: …`, `2024-05-01 …`) is not the second
        // half of a phrase: no phrase's second half starts with a bracket or a date (the one
        // that starts with a bracket, `[metal::malloc]`, triggers on its own line).
        let b = raw.as_bytes();
        let record = b.first() == Some(&b'[')
            || (b.len() > 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-');
        if self.tail.is_empty() || raw.is_empty() || record {
            return false;
        }
        let mut head = raw.len().min(JOIN);
        while !raw.is_char_boundary(head) {
            head -= 1;
        }
        self.junction.clear();
        self.junction.push_str(&self.tail);
        self.junction.push(' ');
        self.junction.push_str(raw[..head].trim_start());
        // A phrase across the break, not one whole in the line before (its own trigger: a
        // wrapped record's next line, "> [date] [error]" after "VK_ERROR_OUT_OF_DEVICE_MEMORY!",
        // is no new message).
        is_trigger(&super::clean::unmark(&self.junction))
            && !is_trigger(&super::clean::unmark(&self.tail))
    }

    /// [`super::banner::Banners::note`] on `raw`, or on the line before that opened a device's
    /// account without its figures joined to `raw`: a paste re-wrapped narrower than a device
    /// list ("* Device #1: GeForce GT 630, 768/1024" / "MB (256 MB allocatable), 2MCU") reads
    /// as printed. Up to three lines joined.
    fn note_banner(&mut self, raw: &str, quiet: bool) -> Option<bool> {
        let head = self.banner_head.take();
        if let Some(noted) = self.banners.note(raw) {
            return Some(noted);
        }
        let joined = head.map(|(head, lines)| (format!("{head} {}", raw.trim()), lines));
        let noted = joined.as_ref().and_then(|(j, _)| self.banners.note(j));
        if noted.is_none() {
            // A new account's head starts afresh; else the joined lines wait for a third.
            if !quiet && super::banner::may_go_on(raw) {
                self.banner_head = Some((raw.trim_end().to_owned(), 1));
            } else if let Some((joined, lines)) = joined.filter(|(_, lines)| *lines < 2) {
                self.banner_head = Some((joined, lines + 1));
            }
        }
        noted
    }

    /// Keeps the end of `raw` for [`Scanner::trigger_across`].
    fn keep_tail(&mut self, raw: &str) {
        let mut from = raw.len().saturating_sub(JOIN);
        while !raw.is_char_boundary(from) {
            from += 1;
        }
        std::mem::swap(&mut self.tail, &mut self.prev_tail);
        self.tail.clear();
        self.tail.push_str(raw[from..].trim_end());
    }

    /// Whether a plain line ([`is_plain`]) outside a message holds nothing to act on: no trigger
    /// phrase, none split between it and the line before, nothing TensorFlow's allocator notes.
    /// What this passes is exactly what the full test below would pass (each part is a
    /// superset of what it stands for); it costs one pass over the line.
    fn is_quiet_line(&self, raw: &str, quiet: bool, prev_plain: bool) -> bool {
        if !quiet
            || self.pending > 0
            || !self.quick
            || self.tf_created_lines > 0
            || self.banner_head.is_some()
        {
            return false;
        }
        let b = raw.as_bytes();
        let record = b.first() == Some(&b'[')
            || (b.len() > 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-');
        // As in `trigger_across`: nothing to join, or a record's first line.
        if self.tail.is_empty() || raw.is_empty() || record {
            return true;
        }
        // The line before had no phrase in its tail, and this one has none in its head: a
        // phrase across them would continue at this line's start.
        prev_plain && !may_continue_a_trigger(raw.trim_start())
    }

    pub fn push_line(&mut self, raw: &str) {
        self.push_noted(raw, false);
    }

    /// [`Scanner::push_line`], told whether the line is known to hold none of the phrases it
    /// looks for (as [`for_each_line`] knows it); `false` says nothing.
    pub fn push_noted(&mut self, raw: &str, known_quiet: bool) {
        self.analysis.lines += 1;
        let raw = cut(raw);
        // The common case, a plain line with nothing in it, in one pass: remembered as
        // context. Anything else takes the full test below.
        let plain = is_plain(raw);
        let quiet = plain && (known_quiet || is_quiet(raw));
        let prev_plain = std::mem::replace(&mut self.prev_plain, quiet);
        if self.is_quiet_line(raw, quiet, prev_plain) {
            self.keep_tail(raw);
            self.remember(raw);
            return;
        }
        // A message inside an escaped string (a JSON body, a Rust `{:?}` panic): read as the
        // lines it stands for. Twice at most, for a string escaped inside another.
        if self.unescaped < 2 {
            if let Some(lines) = super::clean::unescape_string(raw) {
                let counted = self.analysis.lines;
                self.unescaped += 1;
                for l in lines {
                    self.push_line(&l);
                }
                self.unescaped -= 1;
                self.analysis.lines = counted;
                return;
            }
        }
        // A colour or a hyperlink inside the message ("out of\x1b[1m memory") hides it from
        // the trigger: test the line without its escapes.
        let stripped;
        let raw = if has_escapes(raw) {
            stripped = ansi_re().replace_all(raw, "");
            &*stripped
        } else {
            raw
        };
        if raw.contains("this is not a failure") {
            self.analysis.not_failures += 1;
        }
        if super::clean::is_skipped_tactic(raw) {
            self.analysis.skipped_tactics += 1;
        }
        if super::clean::is_reduced_scratch(raw) {
            self.analysis.reduced_scratch += 1;
        }
        let trigger = is_trigger(&super::clean::unmark(raw)) || self.trigger_across(raw);
        self.note_tf_device(raw);
        if trigger {
            self.banner_head = None;
        } else if self.note_banner(raw, quiet) == Some(true) {
            // A device list's header a few lines above its keys (lolMiner's "Device 0:").
            if let Some(d) = self.recent_device_header() {
                self.banners.name_last(d);
            }
        }
        self.keep_tail(raw);
        let stat = raw.contains("Limit:") || raw.contains("InUse:");
        if !trigger && !stat && self.pending == 0 {
            // Remember the line as context, nothing else.
            self.remember(raw);
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
                self.keep(super::parse::tf_stats_only());
            }
            if let Some(oom) = self.analysis.ooms.last_mut() {
                super::parse::apply_tf_stat(&mut oom.facts, key, value);
            }
            return;
        }
        if trigger {
            // The lines of the open block from the last log record it saw open, after its last
            // trigger: the start of the record this trigger continues (a header a narrow wrap
            // put on lines of its own), the new message's context rather than the old one's.
            let mut carried = Vec::new();
            // A dated record opened since the open block's last trigger: this trigger is in it,
            // so it starts another message, whole on its line or not.
            let new_record = self.record_at.is_some_and(|at| at < self.block.len());
            let split = self.pending > 0 && (new_record || self.starts_new_message(&line));
            // Whether the block split off kept a failure: only then is this one "after" it.
            let mut split_kept = false;
            if split {
                if let Some(at) = self.record_at.take().filter(|at| *at < self.block.len()) {
                    carried = self.block.split_off(at);
                    self.block_bytes = self.block.iter().map(String::len).sum();
                    self.open = None;
                }
                let kept = self.kept;
                self.flush();
                split_kept = self.kept > kept;
            }
            self.record_at = None;
            self.trigger_dated = starts_a_dated_record(raw);
            // The writer's words, not a log's prefix (a journal's "node01 python[4242]:" is no
            // prose around a quote).
            let raw = &*super::clean::without_log_prefix(raw);
            // A quote on the line after an exception's class ("…VulkanException:" / "Unexpected
            // API error "ErrorOutOfDeviceMemory"."), where a wrap put the class on a line of
            // its own, is the exception's message, not prose.
            let quote = super::clean::is_prose_quote(raw)
                && !super::clean::ends_with_exception_class(&self.prev_tail);
            if self.pending == 0 {
                // The line just before, where it opens the failure's sentence ("hipHostRegister
                // returns 2 which by definition appears to be:" / "hipErrorOutOfMemory"), may name
                // the host-pinning call that returned the code.
                let last = &self.before[(self.next + BEFORE_MAX - 1) % BEFORE_MAX];
                let pinning_before =
                    last.trim_end().ends_with(':') && super::clean::names_pinning_call(last);
                self.block = self.context();
                self.block.append(&mut carried);
                self.block_bytes = self.block.iter().map(String::len).sum();
                self.open = None;
                self.quoted = quote;
                self.reported = false;
                self.whole = false;
                self.pinned = false;
                self.pinning_after = pinning_before;
                self.split_at = split_kept.then_some(self.block.len());
            } else {
                self.quoted &= quote;
            }
            if quote {
                self.whole |= super::clean::quotes_a_whole_failure(raw);
                self.reported |= super::clean::reports_a_failure(raw);
                self.pinned |= super::clean::names_pinned_host(raw);
            }
            self.push_block(line);
            self.pending = BLOCK_LINES;
            self.pending_chars = BLOCK_CHARS;
            return;
        }
        if self.pending > 0 {
            self.pinning_after |= super::clean::names_pinning_call(raw);
            // Where the trigger's own line is dated, so is every line of the log (a prefix on
            // each): a date then says nothing of where a record starts.
            if self.record_at.is_none() && !self.trigger_dated && starts_a_dated_record(raw) {
                self.record_at = Some(self.block.len());
            }
            // A list of components with their free memory (TensorRT-LLM's executor report)
            // is read whole, however long.
            self.pending_chars = self.pending_chars.saturating_sub(line.len() + 1);
            if !super::parse::is_component_line(&line)
                && (self.pending > 1 || self.pending_chars == 0)
            {
                self.pending -= 1;
            }
            self.push_block(line);
            if self.pending == 0 {
                self.flush();
            }
        }
    }

    /// Adds `line` to the open block, or counts it where the block is full
    /// ([`MAX_BLOCK_LINES`], [`MAX_BLOCK_BYTES`]).
    fn push_block(&mut self, line: String) {
        if self.block.len() >= MAX_BLOCK_LINES || self.block_bytes >= MAX_BLOCK_BYTES {
            self.overflow += 1;
            return;
        }
        self.block_bytes += line.len();
        self.block.push(line);
        self.open = None;
    }

    /// [`parse_block`], its input counted in [`Scanner::parsed_bytes`].
    fn parse_counted(&mut self, block: &[String]) -> Option<super::Oom> {
        self.parsed += block.iter().map(|l| l.len() as u64 + 1).sum::<u64>();
        parse_block(block)
    }

    /// Bytes handed to the parsers so far: the work of the scan beyond its one pass, linear
    /// in the input because a block is bounded and parsed again only when it changes.
    pub fn parsed_bytes(&self) -> u64 {
        self.parsed
    }

    /// Lines that fell past a full block (64 lines or 32 KiB): counted, not read.
    pub fn overflow_lines(&self) -> u64 {
        self.overflow
    }

    /// Keeps `raw` in the ring of context lines.
    fn remember(&mut self, raw: &str) {
        let slot = &mut self.before[self.next];
        slot.clear();
        slot.push_str(raw);
        self.next = (self.next + 1) % BEFORE_MAX;
    }

    /// The device a header among the last [`BEFORE`] remembered lines names, the nearest first.
    fn recent_device_header(&self) -> Option<u32> {
        (1..=BEFORE)
            .map(|i| &self.before[(self.next + BEFORE_MAX - i) % BEFORE_MAX])
            .find_map(|l| super::banner::device_header(l))
    }

    /// The context, oldest first, normalised: the last [`BEFORE`] remembered lines, and more
    /// while those taken hold fewer than [`BEFORE_CHARS`] bytes (measured normalised, so that a
    /// log prefix does not change how far back it goes), up to a blank line. All the remembered
    /// lines are forgotten.
    fn context(&mut self) -> Vec<String> {
        let mut out = Vec::with_capacity(BEFORE_MAX + BLOCK_LINES + 1);
        let mut bytes = 0;
        for n in 0..BEFORE_MAX {
            let slot = &mut self.before[(self.next + BEFORE_MAX - 1 - n) % BEFORE_MAX];
            if n >= BEFORE && (bytes >= BEFORE_CHARS || slot.trim().is_empty()) {
                break;
            }
            let line = normalise(slot);
            bytes += line.len();
            if !line.is_empty() {
                out.push(line);
            }
        }
        for slot in &mut self.before {
            slot.clear();
        }
        out.reverse();
        out
    }

    /// A trigger line that is a complete OOM of its own while the open block already holds
    /// one: a repeated or second error, not the continuation of a wrapped message.
    fn starts_new_message(&mut self, line: &str) -> bool {
        // A traceback's source line (`raise ValueError("No available memory…")`) is not an error.
        if line.starts_with("raise ") {
            return false;
        }
        if self.open.is_none() {
            let block = std::mem::take(&mut self.block);
            self.open = Some(self.parse_counted(&block));
            self.block = block;
        }
        self.parsed += line.len() as u64;
        let Some(Some(old)) = &self.open else {
            return false;
        };
        let (old_known, old_format) = (old.facts.known(), old.format);
        let Some(new) = parse_text(line) else {
            // A line that is not a whole message alone (its end wrapped onto the next line)
            // but raises a new exception after a message with figures, or asks for another
            // size than the open message did: the next failure.
            if old.facts.known() > 0 && exception_head(line) {
                return true;
            }
            // The open message's head again, its figures wrapped onto the next lines (CatBoost's
            // "Error: Out of memory. Requested" / "27769.47852 MB; Free …" once per GPU worker):
            // the next failure, whose figures follow. The lines just before the first head that
            // the block ends with again (a wrapped record's start: "what() ->", a logger's
            // "E" and source line) are the new message's: carried over to it.
            if old_known > 0 {
                if let Some(at) = head_again(&self.block, line) {
                    self.record_at = at.or(self.record_at);
                    return true;
                }
            }
            let asked = super::read::read(line).first(super::read::Role::Request);
            return asked
                .zip(old.facts.requested_bytes)
                .is_some_and(|(a, o)| a.abs_diff(o) > o / 100 + (1 << 20));
        };
        // PyTorch's allocator split on a line of its own after a head that lacks it: the same
        // message, wrapped (by a logger, a terminal or whoever pasted it), not a second one.
        // The caching allocator prints the same sentence on ROCm, XPU and its forks
        // (torch_npu and the others), whose heads name their own device.
        if new.format == "pytorch-2.x-tail"
            && (old.framework == Framework::Pytorch
                || matches!(old.format, "pytorch-2.x" | "pytorch-fork-2.x"))
            && old.facts.allocated_bytes.is_none()
        {
            return false;
        }
        // The same figure-less error printed twice (THCudaCheck's warning, then the raise) is
        // one event; a repeat with figures (a retry) is another. TensorRT logs one failure as
        // several errors (the allocator, the skipped tactic, the buffer resize).
        // ggml's CPU backend likewise: the buffer type's failed malloc, then ggml-alloc's
        // "failed to allocate CPU buffer" for the same buffer.
        // llama.cpp likewise: the backend's allocation line, then ggml-alloc's "failed to
        // allocate CUDA0 buffer" and the loader's error, for one buffer. NCCL likewise: its
        // CUDA check's "Cuda failure 'out of memory'", then "Failed to CUDA calloc N bytes".
        // Neuron's runtime likewise: its device layer's lines for one allocation
        // (`dmem_alloc_internal`, `log_dev_mem`, `tensor_allocate`).
        let one_failure = (new.framework == Framework::Tensorrt
            && old.framework == Framework::Tensorrt)
            || (new.framework == Framework::Neuron
                && old.framework == Framework::Neuron
                && new
                    .facts
                    .requested_bytes
                    .zip(old.facts.requested_bytes)
                    .is_none_or(|(a, b)| a == b))
            || (new.format == "ggml-cpu-buffer" && old.format == "ggml-cpu-buffer")
            // NCCL's CUDA check, then its allocator's warning with the size, for one call;
            // or XLA's word on the collective's buffer NCCL could not allocate.
            || (matches!(new.format, "cuda-nccl" | "xla-collective")
                && old.format == "cuda-nccl"
                && old.facts.requested_bytes.is_none())
            || (new.framework == Framework::Ggml
                && old.framework == Framework::Ggml
                && ggml_follow_up(line)
                && !self.block.iter().any(|l| ggml_follow_up(l)));
        // A bare API status with no figure after a message of another kind is that message's
        // last words, wrapped onto a line of their own ("…failed to alloc N" / "bytes on host:
        // CUDA_ERROR_OUT_OF_MEMORY: out of memory"; ggml-vulkan's "…allocateMemory:" /
        // "ErrorOutOfDeviceMemory").
        let bare = new.facts == super::Facts::default();
        // A figure-less head that opened this message with figures, again (DXVK's "Memory
        // allocation failed" before each report's "Size:" and heap lines): the next failure.
        if bare && new.format == old_format && old_known > 0 {
            if let Some(at) = head_again(&self.block, line) {
                self.record_at = at.or(self.record_at);
                return true;
            }
        }
        let tail_words = bare
            && (new.framework == Framework::Cuda || new.format.starts_with("api-"))
            && old.format != new.format;
        !(one_failure || tail_words || (new.format == old.format && bare))
    }

    fn flush(&mut self) {
        self.pending = 0;
        self.record_at = None;
        if self.block.is_empty() {
            return;
        }
        let block = std::mem::take(&mut self.block);
        self.block_bytes = 0;
        self.open = None;
        let quoted = std::mem::take(&mut self.quoted);
        let reported = std::mem::take(&mut self.reported);
        let whole = std::mem::take(&mut self.whole);
        let pinned = std::mem::take(&mut self.pinned);
        let pinning_after = std::mem::take(&mut self.pinning_after);
        let split_at = self.split_at.take();
        // A sentence quoting a failure is a report of one when the quote carries its figures
        // or is the whole failure line as a known framework raised it, or a program's own
        // sentence (Blender's "System is out of GPU memory": read by its exact words, which
        // only that program prints), or one a known reader takes where the writer says it
        // happened to them ("it always crashes with `…`"); where the writer ties it to pinning
        // host memory, CUDA's out-of-memory code came from a host allocation.
        let report = |o: &super::Oom| {
            !quoted
                || has_figures(o)
                || ((whole || reported) && o.framework != Framework::Unknown)
                || o.format.starts_with("program-")
        };
        if let Some(mut oom) = self.parse_counted(&block).filter(report) {
            // A figure-less head again right after a failure of its kind with figures, with no
            // figure of its own (DXVK's thrown "DxvkMemoryAllocator: Memory allocation failed"
            // after the report it logged, figures read from that report above it): the same
            // failure, raised, as two figure-less lines are one.
            let after_its_report = self
                .analysis
                .ooms
                .last()
                .is_some_and(|l| l.format == oom.format && l.facts.known() > 0);
            let raised = after_its_report
                && split_at.is_some_and(|at| {
                    self.parse_counted(&block[at.min(block.len())..])
                        .is_some_and(|o| o.facts == super::Facts::default())
                });
            if raised {
                return;
            }
            // Or where what follows the message names the host-pinning call it came from
            // ("cudaAssert: cudaErrorMemoryAllocation out of memory" then "when calling
            // cudaHostRegister").
            if ((quoted && pinned) || pinning_after) && super::parse::relays_cuda_code(&oom) {
                oom.memory = super::MemoryKind::PinnedHost;
            }
            // A Stats block printed before its OOM line: one event, the stats' figures kept.
            // XLA's BFC allocator is TensorFlow's, and prints the same block before JAX's (or
            // EXLA's) "Out of memory while trying to allocate".
            if matches!(oom.framework, Framework::Tensorflow | Framework::Jax) {
                if let Some(stats) = self
                    .analysis
                    .ooms
                    .pop_if(|o| o.format == super::parse::TF_STATS_ONLY)
                {
                    self.analysis.total -= 1;
                    oom.facts.total_bytes = oom.facts.total_bytes.or(stats.facts.total_bytes);
                    oom.facts.total_is_limit |= stats.facts.total_is_limit;
                    oom.facts.allocated_bytes =
                        oom.facts.allocated_bytes.or(stats.facts.allocated_bytes);
                }
            }
            // TensorFlow's BFC line, then the op's "OOM when allocating tensor" for the same
            // allocation (its log prints both): one event, the BFC's request beside the
            // tensor's shape where the size is a width of its elements.
            if oom.format == "tensorflow-oom" && oom.facts.requested_bytes.is_none() {
                if let Some(elements) = oom.facts.elements {
                    let fits = |r: u64| super::known::size_fits_elements(r, elements);
                    if let Some(bfc) = self.analysis.ooms.pop_if(|o| {
                        o.format == "tensorflow-bfc"
                            && o.facts.known() == 1
                            && o.facts.requested_bytes.is_some_and(fits)
                    }) {
                        self.analysis.total -= 1;
                        oom.facts.requested_bytes = bfc.facts.requested_bytes;
                        oom.device_index = oom.device_index.or(bfc.device_index);
                    }
                }
            }
            // TensorRT-LLM's executor report follows the PyTorch OOM that caused it (Python
            // prints the cause first): one event, PyTorch's exact figures and the report's
            // account of what was created before.
            if oom.format == "trtllm-executor" {
                if let Some(cause) = self
                    .analysis
                    .ooms
                    .pop_if(|o| o.framework == Framework::Pytorch && o.facts.components.is_empty())
                {
                    self.analysis.total -= 1;
                    let components = std::mem::take(&mut oom.facts.components);
                    let (total, free) = (oom.facts.total_bytes, oom.facts.free_bytes);
                    oom.facts = super::Facts {
                        components,
                        total_bytes: cause.facts.total_bytes.or(total),
                        ..cause.facts
                    };
                    // The free memory when the allocation failed is PyTorch's; the report's
                    // is from before the component's attempt, kept in its list.
                    oom.facts.free_bytes = oom.facts.free_bytes.or(free);
                    oom.device_index = oom.device_index.or(cause.device_index);
                    oom.hint = cause.hint;
                }
            }
            // Text Generation Inference's and vLLM's warm-ups raise their own error from the
            // torch.cuda.OutOfMemoryError they caught (Python prints the cause first): one
            // event, PyTorch's figures with the server's meaning.
            if matches!(oom.format, "tgi-warmup" | "vllm-warmup") {
                if let Some(cause) = self.analysis.ooms.pop_if(|o| {
                    matches!(o.framework, Framework::Pytorch | Framework::Hip)
                        && o.memory == super::MemoryKind::Device
                }) {
                    self.analysis.total -= 1;
                    oom.facts = cause.facts;
                    oom.device_index = oom.device_index.or(cause.device_index);
                    oom.hint = cause.hint;
                }
            }
            // vLLM's error after the start-up profile that left no room for the cache (the
            // profile's line is read first, as a failure): one event, the profile's figures.
            if oom.format == "vllm-cache-blocks" {
                if let Some(profile) = self.analysis.ooms.pop_if(|o| o.format == "vllm-profile") {
                    self.analysis.total -= 1;
                    if oom.facts.known() == 0 {
                        oom.facts = profile.facts;
                    }
                }
            }
            self.keep(oom);
        }
    }

    /// Notes TensorFlow's account of a GPU as it starts: the device it found, then that device's
    /// total memory. A later failure that names no capacity takes it ([`Scanner::finish`]).
    fn note_tf_device(&mut self, raw: &str) {
        if let Some(d) = tf_allocator_re()
            .captures(raw)
            .and_then(|c| c.get(1)?.as_str().parse::<u32>().ok())
        {
            if !self.tf_allocators.contains(&d) {
                if self.tf_allocators.len() >= TF_DEVICES {
                    self.tf_allocators.remove(0);
                }
                self.tf_allocators.push(d);
            }
        }
        // XLA's GPU client as it starts its allocator (jaxlib, EXLA): "XLA backend allocating
        // 10251200102 bytes on device 0 for BFCAllocator." (`se_gpu_pjrt_client.cc`): the
        // allocator's pool, its limit, as TensorFlow's created device gives it.
        if let Some(c) = xla_pool_re().captures(raw) {
            let bytes = c.get(1).and_then(|m| m.as_str().parse::<u64>().ok());
            let d = c.get(2).and_then(|m| m.as_str().parse::<u32>().ok());
            if let (Some(bytes), Some(d)) = (bytes, d) {
                note_device(&mut self.tf_limits, d, bytes);
            }
            return;
        }
        // "Created TensorFlow device (/job:…/device:GPU:0 with 67 MB memory)": from its
        // parenthesis, joined with the lines after it where a narrow paste split it.
        let opens = raw.find("device:GPU:").and_then(|at| raw[..at].rfind("(/"));
        if let Some(open) = opens {
            self.tf_created.clear();
            let mut end = raw.len().min(open + TF_CREATED_CHARS);
            while !raw.is_char_boundary(end) {
                end -= 1;
            }
            self.tf_created.push_str(&raw[open..end]);
            self.tf_created_lines = TF_CREATED_LINES;
        } else if self.tf_created_lines > 0 {
            self.tf_created_lines -= 1;
            let room = TF_CREATED_CHARS.saturating_sub(self.tf_created.len());
            let mut end = raw.trim_start().len().min(room);
            let more = raw.trim_start();
            while !more.is_char_boundary(end) {
                end -= 1;
            }
            self.tf_created.push(' ');
            self.tf_created.push_str(&more[..end]);
        }
        if self.tf_created_lines > 0 {
            if let Some(c) = tf_created_re().captures(&self.tf_created) {
                let d = c.get(1).and_then(|m| m.as_str().parse::<u32>().ok());
                let mib = c.get(2).and_then(|m| m.as_str().parse::<u64>().ok());
                if let (Some(d), Some(bytes)) = (d, mib.and_then(|m| m.checked_mul(1 << 20))) {
                    note_device(&mut self.tf_limits, d, bytes);
                }
                self.tf_created_lines = 0;
                self.tf_created.clear();
                return;
            }
            if opens.is_some() {
                return;
            }
        }
        // "Found device 0 with properties:", whole or wrapped after "device" or its number (the
        // end of the line before joined to this one).
        let found = tf_found_re().captures(raw).or_else(|| {
            if !raw.contains("with properties") || self.tail.is_empty() {
                return None;
            }
            self.junction.clear();
            self.junction.push_str(&self.tail);
            self.junction.push(' ');
            self.junction.push_str(raw.trim_start());
            tf_found_re().captures(&self.junction)
        });
        if let Some(c) = found {
            self.tf_found = c.get(1).and_then(|m| m.as_str().parse().ok());
        } else if let (Some(d), Some(c)) = (self.tf_found, tf_total_re().captures(raw)) {
            let Some(total) = c.get(1).and_then(|m| crate::units::parse_size(m.as_str())) else {
                return;
            };
            note_device(&mut self.tf_totals, d, total);
        }
    }

    /// TensorFlow's start-up figure (a total or a limit, from `of`) for the device an OOM
    /// names, or for every device where they are all the same and the OOM names none.
    fn tf_figure(of: &[(u32, u64)], device: Option<u32>) -> Option<u64> {
        match device {
            Some(d) => of.iter().find(|(dev, _)| *dev == d).map(|t| t.1),
            None => {
                let (_, first) = *of.first()?;
                of.iter().all(|(_, t)| *t == first).then_some(first)
            }
        }
    }

    /// Keeps an OOM found: the last [`super::MAX_KEPT`], and the count of all.
    /// One dropped while every kept OOM is one failure with the new one counts as one of its
    /// repetitions ([`super::Analysis::repeats`]).
    fn keep(&mut self, oom: super::Oom) {
        self.kept += 1;
        let a = &mut self.analysis;
        a.total += 1;
        let full = a.ooms.len() >= super::MAX_KEPT;
        let was_one = full && a.last_group().len() == a.ooms.len();
        if full {
            a.ooms.remove(0);
        }
        a.ooms.push(oom);
        let is_one = a.last_group().len() == a.ooms.len();
        a.earlier_repeats = if was_one && is_one {
            a.earlier_repeats + 1
        } else {
            0
        };
    }

    pub fn finish(mut self) -> super::Analysis {
        self.flush();
        // A lone "Limit:" or "InUse:" line is not an allocator's Stats block.
        let before = self.analysis.ooms.len();
        self.analysis.ooms.retain(|o| {
            o.format != super::parse::TF_STATS_ONLY
                || (o.facts.total_bytes.is_some() && o.facts.allocated_bytes.is_some())
        });
        self.analysis.total -= (before - self.analysis.ooms.len()) as u64;
        // A TensorFlow failure that names no capacity takes it from TensorFlow's own start-up
        // lines (read, not derived): the allocator's limit where TensorFlow said it as it
        // created the device (its Stats' Limit in effect), else the device's size.
        let starts: Vec<(Option<u64>, Option<u64>)> = self
            .analysis
            .ooms
            .iter()
            .map(|o| {
                (
                    Self::tf_figure(&self.tf_limits, o.device_index),
                    Self::tf_figure(&self.tf_totals, o.device_index),
                )
            })
            .collect();
        // A failure that printed no size of the device's takes what the program said of it
        // (hashcat's, xmrig's device lists; an OpenCL program's device info; `hashcat -I`
        // pasted below the error): its size and largest allocation, and the memory free when
        // it started, kept apart.
        for oom in self.analysis.ooms.iter_mut() {
            if oom.memory == super::MemoryKind::Device
                && oom.framework != Framework::Tensorflow
                && oom.facts.total_bytes.is_none()
            {
                if let Some(b) = self.banners.for_device(oom.device_index) {
                    oom.facts.total_bytes = b.total;
                    // The free memory at start-up only beside a failure that printed none.
                    if oom.facts.free_bytes.is_none() {
                        oom.facts.startup_free_bytes = b.free;
                    }
                    oom.facts.max_alloc_bytes = oom.facts.max_alloc_bytes.or(b.max_alloc);
                    oom.device_index = oom.device_index.or(b.device);
                }
            }
        }
        for (oom, (limit, total)) in self.analysis.ooms.iter_mut().zip(starts) {
            // JAX's (and EXLA's) XLA allocator the same, from its own start-up line.
            if matches!(oom.framework, Framework::Tensorflow | Framework::Jax)
                && oom.memory == super::MemoryKind::Device
                && oom.facts.total_bytes.is_none()
            {
                // The allocator's limit bounds what its tensors may hold, not the stream
                // executor's own allocation of the region it grows into (the driver's failure).
                let region = matches!(oom.format, "cuda-driver" | "rocm-driver");
                let limit = limit.filter(|_| !region);
                oom.facts.total_bytes = limit.or(total);
                oom.facts.total_is_limit = limit.is_some();
                // The driver's failure names no device; the BFC allocator that asked for the
                // region does, where the log has only one.
                if region && oom.device_index.is_none() {
                    if let [d] = self.tf_allocators[..] {
                        oom.device_index = Some(d);
                    }
                }
            }
            oom.facts.derive(oom.framework.free_may_exceed_total());
        }
        self.analysis.fill_group_device();
        self.analysis
    }
}

/// Whether a message read gives a figure of its own: a size, a count, a limit. A sentence that
/// quotes a failure inline is a report of one only with them ([`is_prose_quote`]).
fn has_figures(o: &super::Oom) -> bool {
    o.facts.known() > 0
        || o.facts.elements.is_some()
        || !o.facts.implausible.is_empty()
        || o.memory_limit_bytes.is_some()
        || o.buffer_limit.is_some()
        || o.kv_tokens.is_some()
}

/// Where `line` is a line `block` already holds (its head, printed again for the next
/// failure): `Some`, with where the lines just before that head which the block ends with
/// again start (a wrapped record's start: "what() ->", a logger's "E" and source line), which
/// are then the next message's, carried over to it.
fn head_again(block: &[String], line: &str) -> Option<Option<usize>> {
    let k = block.iter().position(|l| l == line)?;
    let len = block.len();
    let again = (1..=k.min(len - k - 1))
        .take_while(|j| block[k - j] == block[len - j])
        .count();
    Some((again > 0).then_some(len - again))
}

/// Calls `f` with each line of `reader`, reading in fixed chunks: a line longer than
/// [`MAX_LINE`] bytes goes out in pieces ([`LineSplitter`]), so memory stays bounded whatever
/// the input. UTF-16LE input (PowerShell's) is read as text. With each line, whether it is
/// known to hold nothing the scanner looks for ([`LineSplitter::feed_noted`];
/// [`Scanner::push_noted`] takes both).
pub fn for_each_line(
    mut reader: impl std::io::Read,
    mut f: impl FnMut(&str, bool),
) -> std::io::Result<()> {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut split = LineSplitter::default();
    let mut utf16: Option<Utf16Le> = None;
    // The first bytes, gathered until there are enough to tell UTF-16 (or the input ends).
    let mut head: Option<Vec<u8>> = Some(Vec::new());
    let mut text = Vec::new();
    let mut feed =
        |bytes: &[u8], utf16: &mut Option<Utf16Le>, f: &mut dyn FnMut(&str, bool)| match utf16 {
            Some(u) => {
                text.clear();
                u.decode(bytes, &mut text);
                split.feed_noted(&text, f);
            }
            None => split.feed_noted(bytes, f),
        };
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(h) = head.as_mut() {
            h.extend_from_slice(&chunk[..n]);
            if h.len() < 64 && n > 0 {
                continue;
            }
            if Utf16Le::detect(h) {
                utf16 = Some(Utf16Le::default());
            }
            let h = head.take().unwrap_or_default();
            feed(&h, &mut utf16, &mut f);
        } else if n > 0 {
            feed(&chunk[..n], &mut utf16, &mut f);
        }
        if n == 0 {
            break;
        }
    }
    split.finish(|l| f(l, false));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the chunk's automaton says of a line is what the scanner's own test would say: the
    /// same analysis for every corpus text, look-alikes included, read whole, in chunks of a
    /// few bytes (lines split between chunks), and after a long log of quiet lines with
    /// phrases on some of them.
    #[test]
    fn lines_known_quiet_read_as_lines_tested_one_by_one() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/oom");
        let mut texts = Vec::new();
        for d in [dir.clone(), dir.join("lookalikes")] {
            for entry in std::fs::read_dir(&d).expect("corpus") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|e| e == "txt") {
                    texts.push(std::fs::read(&path).expect("read"));
                }
            }
        }
        let mut log = String::new();
        for i in 0..3000 {
            log.push_str(&format!(
                "2026-11-26 12:00:{:02} INFO step {i} loss 0.{i}\r\n",
                i % 60
            ));
            if i % 700 == 0 {
                log.push_str("W0101 Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.0GiB. The caller indicates that this is not a failure\n");
                log.push_str("Limit: 1234\nInUse: 99\n");
            }
        }
        log.push_str("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.14 GiB of which 1.23 GiB is free.\n");
        texts.push(log.into_bytes());
        assert!(texts.len() > 300, "{}", texts.len());
        for text in &texts {
            let mut one_by_one = Scanner::new();
            let mut split = LineSplitter::default();
            split.feed(text, |l| one_by_one.push_line(l));
            split.finish(|l| one_by_one.push_line(l));
            let expected = one_by_one.finish();
            for size in [3, 64, 4096, 1 << 20] {
                let mut noted = Scanner::new();
                let mut split = LineSplitter::default();
                for chunk in text.chunks(size) {
                    split.feed_noted(chunk, |l, q| noted.push_noted(l, q));
                }
                split.finish(|l| noted.push_line(l));
                assert_eq!(
                    noted.finish(),
                    expected,
                    "chunks of {size}: {}",
                    String::from_utf8_lossy(&text[..text.len().min(200)])
                );
            }
        }
    }

    /// The automaton's first phrase in a run of lines, and none where there is none.
    /// The same head again with its figures wrapped onto the next line is the next failure
    /// (catboost/catboost#1414, once per GPU worker, wrapped at 40 columns).
    #[test]
    fn a_wrapped_head_repeated_is_the_next_failure() {
        let one = |r: &str, f: &str| {
            format!("what() ->\n\"catboost/cuda/cuda_lib/memory_pool/stack_like_memory_pool.h:303:\nError: Out of memory. Requested\n{r} MB; Free {f} MB\"\ntype -> NCudaLib::TOutOfMemoryError\n")
        };
        let a = super::super::analyze(&format!(
            "{}{}",
            one("27891.06152", "7088.101953"),
            one("27769.47852", "7089.441796")
        ));
        assert_eq!(a.total, 2);
        let mib = |x: f64| (x * f64::from(1u32 << 20)).round() as u64;
        assert_eq!(
            a.main().and_then(|o| o.facts.free_bytes),
            Some(mib(7089.441796))
        );
    }

    #[test]
    fn a_line_known_quiet_holds_no_phrase() {
        let mut got = Vec::new();
        let mut split = LineSplitter::default();
        split.feed_noted(
            b"step 1\nRuntimeError: CUDA out of memory\nstep 2\r\nLimit: 3\rstep 3\nlast",
            |l, q| got.push((l.to_owned(), q)),
        );
        split.finish(|l| got.push((l.to_owned(), false)));
        let quiet: Vec<bool> = got.iter().map(|(_, q)| *q).collect();
        assert_eq!(quiet, [true, false, true, false, true, false], "{got:?}");
    }

    #[test]
    fn strips_prefixes_colour_and_boxes() {
        assert_eq!(
            normalise("[rank0]: torch.OutOfMemoryError: x"),
            "torch.OutOfMemoryError: x"
        );
        // Open MPI's --tag-output: the job and the rank, then the stream.
        assert_eq!(
            normalise("[1,11]<stdout>:WARNING: mallocMC out of memory"),
            "mallocMC out of memory"
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
            normalise("E0123 12:34:56.789012 1234 bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB"),
            "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB"
        );
        // Where the level is the line's only mark of an error, it stays; another level goes.
        assert_eq!(
            normalise("E0123 12:34:56.789012 1234 x.cc:485] Allocator ran"),
            "ERROR: Allocator ran"
        );
        assert_eq!(
            normalise("ERROR: Out of GPU memory"),
            "ERROR: Out of GPU memory"
        );
        assert_eq!(normalise("INFO: Out of GPU memory"), "Out of GPU memory");
        assert_eq!(
            normalise(
                "(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708] ValueError: x"
            ),
            "ValueError: x"
        );
    }

    /// TensorRT-LLM's executor report as `py_executor_creator.py` writes it (the component
    /// names of its releases before and after they became `ExecutorMemoryType`), after the
    /// PyTorch OOM that caused it, as Python prints a chained exception.
    const TRTLLM_REPORT: &str = "\
RuntimeError: Executor creation failed due to insufficient GPU memory.

The following component could not be created: KV cache
Total GPU memory (GiB): 79.19
Free GPU memory before component creation attempt (GiB): 9.87

Previously created components and free GPU memory before/after creation (GiB):
Model: 78.60 / 16.02
Sampler: 16.02 / 15.90
Guided decoder: 15.90 / 15.90
Drafter: 15.90 / 15.85
Initial KV cache (temporary for KV cache size estimation): 15.85 / 10.11
Additional executor resources (temporary for KV cache size estimation): 10.11 / 10.02
_no_capture_init_extra_resources: 10.02 / 9.98
Model resources created during usage: 9.98 / 9.90
_no_capture_model_extra: 9.90 / 9.87

Please refer to the TensorRT LLM documentation for information on how to control the memory usage through TensorRT LLM configuration options. Possible options include:
  Model: reduce max_num_tokens and/or shard the model weights across GPUs by enabling pipeline and/or tensor parallelism
  KV cache: reduce free_gpu_memory_fraction
";

    #[test]
    fn tensorrt_llm_executor_report_lists_every_component_and_the_one_that_failed() {
        let a = super::super::analyze(&format!("[TRT-LLM] [E] {TRTLLM_REPORT}"));
        assert_eq!(a.total, 1);
        let o = a.main().expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::TensorrtLlm, "trtllm-executor")
        );
        let gib = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        assert_eq!(o.facts.total_bytes, Some(gib(79.19)));
        assert_eq!(o.facts.free_bytes, Some(gib(9.87)));
        let c = &o.facts.components;
        assert_eq!(
            c.len(),
            10,
            "nine created, however long the list, and the failed one"
        );
        assert_eq!(c[0].name, "Model");
        assert_eq!(c[0].took_bytes(), Some(gib(78.60) - gib(16.02)));
        assert_eq!(
            c[4].name,
            "Initial KV cache (temporary for KV cache size estimation)"
        );
        assert_eq!(
            (c[9].name.as_str(), c[9].free_after_bytes),
            ("KV cache", None)
        );
        let f = &super::super::diagnose::diagnose(o)[0];
        assert!(
            f.title
                .contains("could not create its KV cache: 9.9 GiB free of 79.2 GiB"),
            "{}",
            f.title
        );
        assert!(f.detail.contains("Model took 62.6 GiB"), "{}", f.detail);
        assert!(f.remedies[0].text.contains("free_gpu_memory_fraction"));
        assert!(
            f.remedies[1].text.contains("The Model took the most")
                && f.remedies[1].text.contains("tensor_parallel_size")
        );
    }

    #[test]
    fn tensorrt_llm_executor_report_and_the_pytorch_oom_before_it_are_one_failure() {
        let text = format!(
            "Traceback (most recent call last):
  File \"/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/pyexecutor/py_executor_creator.py\", line 200, in observe_creation_stage
    yield
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 9.50 GiB is free. Including non-PyTorch memory, this process has 69.68 GiB memory in use. Of the allocated memory 68.10 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File \"/usr/local/lib/python3.12/dist-packages/tensorrt_llm/executor/worker.py\", line 300, in worker_main
    worker = worker_cls(
  File \"/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/pyexecutor/py_executor_creator.py\", line 210, in observe_creation_stage
    raise RuntimeError(explanation) from e
{}",
            TRTLLM_REPORT
        );
        let a = super::super::analyze(&text);
        assert_eq!(a.total, 1, "one failure, not two");
        let o = a.main().expect("found");
        assert_eq!(o.format, "trtllm-executor");
        assert_eq!(o.device_index, Some(0));
        assert_eq!(o.facts.requested_bytes, Some(12 << 30));
        assert_eq!(
            o.facts.allocated_bytes,
            Some((68.10 * (1u64 << 30) as f64).round() as u64)
        );
        assert_eq!(
            o.facts.free_bytes,
            Some((9.50 * (1u64 << 30) as f64).round() as u64),
            "PyTorch's, at the failure"
        );
        assert_eq!(o.facts.components.len(), 10);
    }

    #[test]
    fn pytorchs_split_on_a_line_of_its_own_is_the_same_message() {
        let a = super::super::analyze(
            "CUDA out of memory. Tried to allocate 3.47 GiB. GPU 7 has a total capacity of 178.35 GiB of which 3.28 GiB is free.
Including non-PyTorch memory, this process has 175.06 GiB memory in use.
139.09 GiB allowed; Of the allocated memory 132.21 GiB is allocated by PyTorch, with 113.88 MiB allocated in private pools (e.g., CUDA Graphs), and 3.57 GiB is reserved by PyTorch but unallocated.",
        );
        assert_eq!((a.total, a.repeats()), (1, 1));
        let o = a.main().expect("found");
        assert_eq!(o.format, "pytorch-2.x");
        let f = &o.facts;
        assert_eq!(
            f.requested_bytes,
            Some((3.47 * (1u64 << 30) as f64).round() as u64)
        );
        assert_eq!(
            f.allocated_bytes,
            Some((132.21 * (1u64 << 30) as f64).round() as u64)
        );
        assert_eq!(
            f.allowed_bytes,
            Some((139.09 * (1u64 << 30) as f64).round() as u64)
        );
        // Two failures, each whole, stay two.
        let one = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 7.79 GiB of which 3.06 MiB is free. Of the allocated memory 7.1 GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.";
        assert_eq!(super::super::analyze(&format!("{one}\n{one}")).total, 2);
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
    fn lines_split_across_chunks_and_long_ones_go_out_in_pieces() {
        let mut split = LineSplitter::default();
        let mut got = Vec::new();
        split.feed(b"ab", |l| got.push(l.to_owned()));
        split.feed(b"c\nde\n", |l| got.push(l.to_owned()));
        split.feed(&vec![b'x'; MAX_LINE + 10], |l| {
            got.push(l.len().to_string())
        });
        split.finish(|l| got.push(l.len().to_string()));
        assert_eq!(got, ["abc", "de", &MAX_LINE.to_string(), "10"]);
        // CR alone ends a line, CRLF is one break even across chunks.
        let mut got = Vec::new();
        split.feed(b"10%\r50%\r100%\r", |l| got.push(l.to_owned()));
        split.feed(b"\nnext\r\nlast", |l| got.push(l.to_owned()));
        split.finish(|l| got.push(l.to_owned()));
        assert_eq!(got, ["10%", "50%", "100%", "next", "last"]);
    }

    /// Finding 13: an OOM at the end of a JSON log record longer than 16 KiB, with its
    /// traceback's newlines escaped, is found; memory stays bounded.
    #[test]
    fn an_oom_at_the_end_of_a_very_long_line_is_found() {
        let mut record =
            String::from("{\"level\":\"error\",\"msg\":\"Traceback (most recent call last):");
        for i in 0..2000 {
            record.push_str(&format!(
                "\\n  File \\\"/app/train.py\\\", line {i}, in step"
            ));
        }
        record.push_str("\\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.19 GiB is free.\"}\n");
        assert!(record.len() > 4 * MAX_LINE);
        let mut s = Scanner::new();
        for_each_line(record.as_bytes(), |l, q| s.push_noted(l, q)).expect("read");
        let a = s.finish();
        let o = a.main().expect("the OOM at the end");
        assert_eq!(o.facts.requested_bytes, Some(2 << 30));
    }

    /// Finding 18: an OOM line carrying an OSC ended by ST (OSC 8 hyperlinks), an OSC and a
    /// CSI inside the message, or a C1 CSI, is read as the message.
    #[test]
    fn escapes_inside_a_message_do_not_hide_it() {
        for line in [
            "\x1b]8;;file:///app/train.py\x1b\\train.py\x1b]8;;\x1b\\: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
            "torch.OutOfMemoryError: CUDA out of\x1b[1;31m memory\x1b[0m. Tried to \x1b]0;t\x07allocate 20.00 MiB",
            "torch.OutOfMemoryError: CUDA \u{9b}1mout of memory\u{9b}0m. Tried to allocate 20.00 MiB",
        ] {
            let line = format!(
                "{line}. GPU 0 has a total capacity of 79.10 GiB of which 1.19 GiB is free. \
                 Of the allocated memory 75.50 GiB is allocated by PyTorch, and 1.50 GiB is \
                 reserved by PyTorch but unallocated."
            );
            let a = super::super::analyze(&line);
            let o = a.main().unwrap_or_else(|| panic!("missed {line:?}"));
            assert_eq!(o.facts.requested_bytes, Some(20 << 20), "{line:?}");
        }
    }

    /// Finding 18: a UTF-16LE log (PowerShell 5's `>`), with its byte order mark or without,
    /// split at odd bytes, reads as text.
    #[test]
    fn utf16le_logs_are_read_as_text() {
        let text = "step 3\r\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 1.19 GiB is free. 日本\r\n";
        for bom in [true, false] {
            let mut bytes: Vec<u8> = if bom { vec![0xff, 0xfe] } else { vec![] };
            bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            // Read in 7-byte chunks: every unit is split somewhere.
            struct Chunks<'a>(&'a [u8]);
            impl std::io::Read for Chunks<'_> {
                fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                    let n = self.0.len().min(7).min(buf.len());
                    buf[..n].copy_from_slice(&self.0[..n]);
                    self.0 = &self.0[n..];
                    Ok(n)
                }
            }
            let mut lines = Vec::new();
            for_each_line(Chunks(&bytes), |l, _| lines.push(l.to_owned())).expect("read");
            assert_eq!(lines[0], "step 3", "bom {bom}");
            assert!(lines[1].ends_with("free. 日本"), "{lines:?}");
            let mut s = Scanner::new();
            for l in &lines {
                s.push_line(l);
            }
            assert_eq!(
                s.finish().main().and_then(|o| o.facts.requested_bytes),
                Some(20 << 20)
            );
        }
    }

    /// Finding 12: memory stays bounded however many OOMs the input repeats: the last 64
    /// are kept, the count is of all.
    #[test]
    fn a_flood_of_ooms_is_counted_not_kept() {
        let mut s = Scanner::new();
        let line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. \
                    GPU 0 has a total capacity of 79.10 GiB of which 1.19 GiB is free.";
        for _ in 0..200 {
            s.push_line(line);
            s.push_line("");
        }
        let a = s.finish();
        assert_eq!(a.total, 200);
        assert_eq!(a.ooms.len(), super::super::MAX_KEPT);
        // W5: the true count of the repetitions, not the 64 kept.
        assert_eq!(a.repeats(), 200);
        // A different failure before the run: only the run is the last failure's.
        let mut s = Scanner::new();
        s.push_line(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. \
             GPU 1 has a total capacity of 79.10 GiB of which 1.19 GiB is free.",
        );
        s.push_line("");
        for _ in 0..100 {
            s.push_line(line);
            s.push_line("");
        }
        let a = s.finish();
        assert_eq!((a.total, a.repeats()), (101, 100));
        let text = super::super::render::render(&a, crate::text::Paint(false));
        assert!(
            text.contains("logged 100 times (the last 64 read)"),
            "{text}"
        );
    }

    /// A run of trigger lines that read as one message (a retry logged every step, prose that
    /// names OOM on every line): the parsers' work is linear in the run, not quadratic (each
    /// line used to have the whole run joined and parsed again), and the reading is the same
    /// however long the run.
    #[test]
    fn a_run_of_one_message_costs_the_same_per_line() {
        let runs: [fn(usize) -> String; 3] = [
            |i| format!("warning {i}: we are out of memory again"),
            |i| format!("step {i}: RuntimeError: CUDA error: out of memory"),
            // Long lines: the block's byte bound.
            |i| format!("step {i}: out of memory {}", "x ".repeat(4000)),
        ];
        for make in runs {
            let scan = |n: usize| {
                let mut s = Scanner::new();
                for i in 0..n {
                    s.push_line(&make(i));
                }
                let (work, overflow) = (s.parsed_bytes(), s.overflow_lines());
                let a = s.finish();
                (work, overflow, a.total, a.repeats())
            };
            let (w1, o1, t1, r1) = scan(300);
            let (w2, o2, t2, r2) = scan(600);
            let input: u64 = (300..600).map(|i| make(i).len() as u64).sum();
            // The second 300 lines cost what they hold, a few times over at most.
            assert!(w2 - w1 <= 4 * input, "{}: {w1} then {w2}", make(0));
            assert!(o2 > o1 && o1 > 0, "{}: the run fills a block", make(0));
            assert_eq!((t1, r1), (t2, r2), "{}", make(0));
        }
    }

    /// The one-pass test for quiet lines changes nothing: every corpus message, as pasted,
    /// re-wrapped at many widths and buried in a log, reads the same with it and without it.
    #[test]
    fn the_quick_path_reads_every_corpus_message_the_same() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/oom");
        let scan = |text: &str, quick: bool| {
            let mut s = Scanner::new();
            s.quick = quick;
            for line in text.split('\n') {
                s.push_line(line);
            }
            s.finish()
        };
        let mut paths = Vec::new();
        for dir in [dir.clone(), dir.join("lookalikes")] {
            for entry in std::fs::read_dir(&dir).expect("corpus") {
                let path = entry.expect("entry").path();
                if path.extension().and_then(|e| e.to_str()) == Some("txt") {
                    paths.push(path);
                }
            }
        }
        assert!(paths.len() > 200, "{} files", paths.len());
        let check = |path: &std::path::PathBuf| {
            let text = std::fs::read_to_string(path).expect("text");
            let log = format!(
                "{}{text}{}",
                "epoch 3 step 9 loss 0.1 memory allocated 2 GiB\n".repeat(20),
                "step 10 allocate the next batch\n".repeat(3)
            );
            let mut variants = vec![text.clone(), log];
            for width in [20, 33, 47, 61, 80, 101, 140] {
                let wrapped: Vec<String> = text
                    .lines()
                    .map(|l| textwrap::fill(l, textwrap::Options::new(width).break_words(false)))
                    .collect();
                variants.push(wrapped.join("\n"));
            }
            for v in variants {
                assert_eq!(scan(&v, true), scan(&v, false), "{path:?}:\n{v}");
            }
        };
        // Every core: most of the tests beside this one are quick.
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        std::thread::scope(|s| {
            for part in paths.chunks(paths.len().div_ceil(threads)) {
                let check = &check;
                s.spawn(move || part.iter().for_each(check));
            }
        });
    }

    /// The rule for quotes in prose, both ways: a quoted message with its figures, or the whole
    /// failure line with its exception class, is read (as pinned host memory where the sentence
    /// ties it to pinning), and so is one a known reader takes where the writer says it happened
    /// to them; a quote naming the error in a condition, advice or a question is talk about one;
    /// the same words as a log line are a message.
    #[test]
    fn a_quote_in_prose_is_read_with_its_figures_or_whole() {
        use super::super::MemoryKind;
        let found = |t: &str| super::super::analyze(t).main().cloned();
        let o = found("When trying to run llama-server it crashes with `ggml_vulkan: Device memory allocation of size 3959422976 failed.` with any model I try.").expect("read");
        assert_eq!(o.facts.requested_bytes, Some(3_959_422_976));
        for prose in [
            "After training some epochs, it runs into `the CUDA out of memory` error.",
            "the first kernel launch raises the same \"out of memory\" with 7.3 GB of VRAM free",
            "if it fails with `CUDA error: out of memory` on every run, lower the batch size",
            "Why does it fail with `CUDA error: out of memory` on every run?",
        ] {
            assert_eq!(found(prose), None, "{prose:?}");
        }
        // The writer met it: a report, read by the reader that knows it (GZDoom's words for
        // VkResult, in a reply on pa1nki113r/Project_Brutality#1248).
        let o = found("it fails with `CUDA error: out of memory` on every run").expect("read");
        assert_eq!(o.format, "cuda");
        let o = found("When I run it I get `CUDA error: out of memory` at once").expect("read");
        assert_eq!(o.format, "cuda");
        // Japanese corner brackets quote as other marks do: a description of the error.
        assert_eq!(found("Stable DiffusionのCLI実行時、GUI版では動作するのに「CUDA out of memory」が発生する問題は、メモリ最適化が欠けているためです。"), None);
        // A negation or a fix is not a failure met.
        for prose in [
            "it no longer crashes with `CUDA error: out of memory` since 2.1",
            "Fixed a crash where training failed with `CUDA error: out of memory`",
            "it doesn't fail with `CUDA error: out of memory` any more",
        ] {
            assert_eq!(found(prose), None, "{prose:?}");
        }
        let o = found("For me it always crashes with `Could not create vulkan image: out of device memory` message.").expect("read");
        assert_eq!(o.format, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY");
        // The whole failure line, exception class and all, quoted in a sentence: a report.
        let o = found(
            "the run died with `AcceleratorError: CUDA error: out of memory` inside the trainer",
        )
        .expect("read");
        assert_eq!((o.format, o.memory), ("cuda", MemoryKind::Device));
        // A program's own sentence, which only it prints, quoted in a question: a report.
        let o = found("I keep getting the error message \"System is out of GPU memory\" when going into Rendered View mode.").expect("read");
        assert_eq!(o.format, "program-blender");
        let o = found("使用单张GeForce GTX 750 Ti显卡，显存是2G，在训练RetinaFace时报`MXNetError: cudaMalloc retry failed: out of memory`错误").expect("read");
        assert_eq!(o.framework, Framework::Mxnet);
        // Tied to pinning host memory by the sentence around it: CUDA's code came from a
        // host allocation.
        for pinned in [
            "运行时出现错误：`RuntimeError: CUDA error: out of memory`，锁页内存不足",
            "printed \"could not page-lock the base\", and the run died with `AcceleratorError: CUDA error: out of memory` inside the trainer",
        ] {
            let o = found(pinned).expect("read");
            assert_eq!(o.memory, MemoryKind::PinnedHost, "{pinned:?}");
        }
        // Pinning turned off is no tie to it.
        let o = found("with pin_memory=False the run still dies with `AcceleratorError: CUDA error: out of memory` at once").expect("read");
        assert_eq!(o.memory, MemoryKind::Device);
        // A device allocation named in the quote stays the device's, whatever the sentence says.
        let o = found("with pin_memory=True it dies with `MXNetError: cudaMalloc retry failed: out of memory` at once").expect("read");
        assert_eq!(o.memory, MemoryKind::Device);
        let o = found("AcceleratorError: CUDA error: out of memory").expect("a message");
        assert_eq!(o.format, "cuda");
        // A quote, then the message itself: the message is read.
        let o = found("it fails with `CUDA error: out of memory` again:\nRuntimeError: CUDA error: out of memory").expect("read");
        assert_eq!(o.format, "cuda");
    }

    /// A log re-wrapped narrow: each record's dated header on a line of its own belongs to the
    /// failure after it (its path names the framework; a record is one failure, whole on its
    /// line or not), and a message spread over more lines keeps its last figures in its block.
    #[test]
    fn a_narrow_wrap_keeps_each_record_and_its_figures_together() {
        let analyze = super::super::analyze;
        let log = "2019-01-08 19:06:11.303639: E\ntensorflow/stream_executor/rocm/rocm_driver.cc:601] failed to allocate\n7.35G (7889485824 bytes) from device: hipError_t(1002)\n2019-01-08 19:06:11.303736: E\ntensorflow/stream_executor/rocm/rocm_driver.cc:601] failed to allocate\n6.61G (7100536832 bytes) from device: hipError_t(1002)";
        let a = analyze(log);
        assert_eq!(a.total, 2);
        let o = a.main().expect("found");
        assert_eq!(
            (o.framework, o.facts.requested_bytes),
            (Framework::Tensorflow, Some(7_100_536_832))
        );
        // Every line dated (a prefix on each): a date is no record's start, and a message's
        // own lines stay together.
        let dated = "2024-05-01 12:00:01.123 torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n2024-05-01 12:00:01.123 GPU 0 has a total capacity of 15.89 GiB of which 1.02 GiB is free.";
        let o = analyze(dated).main().cloned().expect("found");
        assert_eq!(
            o.facts.total_bytes,
            Some((15.89 * (1u64 << 30) as f64).round() as u64)
        );
        // The device, twelve short lines after the trigger: still in its block.
        let mut narrow = String::from(
            "[ERROR] RecentErrMsg: Memory_Allocation_Failure(EL0004): Failed to allocate memory.\n",
        );
        for _ in 0..13 {
            narrow.push_str("Check param failed,\ndev can not be NULL!\n");
        }
        narrow.push_str("open device 2 failed, runtime result = 507033.");
        let short = analyze(&narrow);
        assert_eq!(short.main().expect("found").device_index, Some(2));
    }

    /// TensorFlow's start-up lines give the device's total to a failure that names none, with
    /// "Found device N with properties" whole or wrapped after "device" or its number; devices
    /// of different sizes give none to a failure that names no device.
    #[test]
    fn tensorflows_start_up_gives_the_devices_total() {
        let failure = "E tensorflow/stream_executor/cuda/cuda_driver.cc:1002] failed to allocate 7.92G (8508145664 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY";
        let total = |t: &str| {
            super::super::analyze(t)
                .main()
                .and_then(|o| o.facts.total_bytes)
        };
        let gib = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        for head in [
            "I gpu_device.cc:885] Found device 0 with properties: \nname: GTX 1080\nTotal memory: 7.92GiB\n",
            "I gpu_device.cc:885] Found device\n0 with properties: \ntotalMemory: 7.92GiB freeMemory: 7.81GiB\n",
            "I gpu_device.cc:885] Found device 0\nwith properties: \npciBusID: 0000:01:00.0 deviceMemorySize: 7.92GiB\n",
        ] {
            assert_eq!(total(&format!("{head}{failure}")), Some(gib(7.92)), "{head:?}");
        }
        let two = "Found device 0 with properties:\nTotal memory: 7.92GiB\nFound device 1 with properties:\nTotal memory: 11.00GiB\n";
        assert_eq!(total(&format!("{two}{failure}")), None);
    }

    /// "Created TensorFlow device (… GPU:N with M MB memory)" gives the allocator's limit, for
    /// that device only, before the device's total; a failure with its own Stats keeps its Limit.
    #[test]
    fn tensorflows_created_device_gives_the_allocators_limit() {
        let created = "I gpu_device.cc:1432] Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 67 MB memory) -> physical GPU (device: 0, name: NVIDIA Tegra X1)\n";
        let found = "Found device 0 with properties:\nTotal memory: 3.87GiB\n";
        let failure = "W bfc_allocator.cc:433] Allocator (GPU_0_bfc) ran out of memory trying to allocate 18.00MiB (rounded to 18874368)requested by op Mul";
        let read = |t: &str| {
            let o = super::super::analyze(t).main().cloned().expect("found");
            (o.facts.total_bytes, o.facts.total_is_limit)
        };
        assert_eq!(
            read(&format!("{found}{created}{failure}")),
            (Some(67 << 20), true)
        );
        assert_eq!(
            read(&format!("{found}{failure}")),
            (Some((3.87 * (1u64 << 30) as f64).round() as u64), false)
        );
        let other = failure.replace("GPU_0_bfc", "GPU_1_bfc");
        assert_eq!(read(&format!("{created}{other}")), (None, false));
        let stats = format!("{created}{failure}\nStats:\nLimit: 1000000\nInUse: 990000\n");
        assert_eq!(read(&stats), (Some(1_000_000), true));
        // Wrapped at a narrow width, and TensorFlow 1.x's wording.
        let narrow = "I gpu_device.cc:1432] Created TensorFlow device\n(/job:localhost/replica:0/task:0/device:GPU:0\nwith 67\nMB memory) -> physical GPU\n";
        assert_eq!(read(&format!("{narrow}{failure}")), (Some(67 << 20), true));
        let old =
            "Creating TensorFlow device (/device:GPU:0 with 10764 MB memory) -> physical GPU\n";
        assert_eq!(read(&format!("{old}{failure}")), (Some(10764 << 20), true));
        // Not the limit of the region the stream executor could not allocate from the device.
        let region = "E cuda_driver.cc:1002] failed to allocate 7.35G (7889485824 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY";
        assert_eq!(read(&format!("{created}{region}")), (None, false));
    }

    /// TensorFlow's op error for a tensor, then its page-locked host pool's failure for it
    /// (tensorflow/tensorflow#11915): the host pool's is the failure explained, not the GPU's.
    #[test]
    fn a_host_pools_failure_is_not_grouped_with_the_gpus() {
        let t = "I bfc_allocator.cc:700] Sum Total of in-use chunks: 64.00GiB\nI bfc_allocator.cc:702] Stats: \nLimit:                 68719476736\nInUse:                 68719476736\n\nW op_kernel.cc:1192] Resource exhausted: OOM when allocating tensor with shape[1000,1000,250,4]\nW bfc_allocator.cc:273] Allocator (cuda_host_bfc) ran out of memory trying to allocate 3.72GiB.  Current allocation summary follows.\n";
        let a = super::super::analyze(t);
        let o = a.main().expect("found");
        assert_eq!(o.memory, super::super::MemoryKind::PinnedHost);
        assert_eq!(a.repeats(), 1);
    }

    /// XLA's BFC Stats block before JAX's (here EXLA's, through Elixir's Logger) failure line:
    /// one event, with the allocator's limit and what it holds (elixir-nx/xla#32).
    #[test]
    fn xlas_stats_before_its_failure_are_one_event() {
        let t = "[info] Sum Total of in-use chunks: 3.96GiB\n[info] Stats: \nLimit:                      4928097484\nInUse:                      4248542720\nMaxInUse:                   4248542720\n\n[warning] *****\n[error] Execution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 58982400 bytes.\nBufferAssignment OOM Debugging.\n";
        let a = super::super::analyze(t);
        assert_eq!(a.total, 1);
        let o = a.main().expect("found");
        assert_eq!(o.framework, Framework::Jax);
        assert_eq!(o.facts.requested_bytes, Some(58_982_400));
        assert_eq!(o.facts.total_bytes, Some(4_928_097_484));
        assert!(o.facts.total_is_limit);
        assert_eq!(o.facts.allocated_bytes, Some(4_248_542_720));
    }

    /// The stream executor's failure takes the device of the only BFC allocator the log names
    /// (its retry warnings included), and not where two are named; a Windows build's paths
    /// still say TensorFlow.
    #[test]
    fn the_driver_failure_takes_the_only_allocators_device() {
        let warn = |d: u32| {
            format!(" W T:\\src\\github\\tensorflow\\tensorflow\\core\\common_runtime\\bfc_allocator.cc:219] Allocator (GPU_{d}_bfc) ran out of memory trying to allocate 2.02GiB. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.\n")
        };
        let fail = " E T:\\src\\github\\tensorflow\\tensorflow\\stream_executor\\cuda\\cuda_driver.cc:936] failed to allocate 378.60M (396990720 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY\n";
        let read = |t: &str| {
            let o = super::super::analyze(t).main().cloned().expect("found");
            (o.framework, o.device_index)
        };
        assert_eq!(
            read(&format!("{}{fail}", warn(1))),
            (Framework::Tensorflow, Some(1))
        );
        assert_eq!(
            read(&format!("{}{}{fail}", warn(0), warn(1))),
            (Framework::Tensorflow, None)
        );
    }

    /// CUDA's out-of-memory code relayed without its call, and a line after it that names a
    /// host-pinning call: pinned host memory; a data loader's words there are not enough.
    #[test]
    fn a_pinning_call_named_after_a_relay_is_pinned_host_memory() {
        let memory = |t: &str| super::super::analyze(t).main().map(|o| o.memory);
        let relay = "```\ncudaAssert: cudaErrorMemoryAllocation out of memory, file MemManageCUDA.hpp, line 74\n```\n";
        assert_eq!(
            memory(&format!(
                "{relay}when calling cudaHostRegister. Host memory is far from full."
            )),
            Some(super::super::MemoryKind::PinnedHost)
        );
        assert_eq!(
            memory(&format!(
                "{relay}DataLoader(pin_memory=True, num_workers=4)"
            )),
            Some(super::super::MemoryKind::Device)
        );
        // HIP's status from AMDGPU.jl, its stack trace naming the page-locked buffer.
        assert_eq!(
            memory("ERROR: HIPError(code hipErrorOutOfMemory, out of memory)\nStacktrace:\n  [1] check\n  [3] AMDGPU.Runtime.Mem.HostBuffer(bytesize::Int64, flags::UInt8)"),
            Some(super::super::MemoryKind::PinnedHost)
        );
        // A message that names its device allocation stays the device's.
        assert_eq!(
            memory("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total capacity; 5.03 GiB already allocated)\nat CachingHostAllocator"),
            Some(super::super::MemoryKind::Device)
        );
    }

    #[test]
    fn tf_retry_warnings_are_not_ooms() {
        assert!(!is_trigger("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.02GiB with freed_by_count=0. The caller indicates that this is not a failure"));
        assert!(is_trigger("torch.OutOfMemoryError: CUDA out of memory."));
        assert!(!is_trigger("step 12 loss 0.31"));
    }

    /// A log whose every record carries a long prefix, re-wrapped narrower than the prefix:
    /// the record after a whole trigger line ("VK_ERROR_OUT_OF_DEVICE_MEMORY!" then "> [date]
    /// [error] [FFmpeg]") does not start another message by joining that phrase again, so the
    /// heap list below stays the failure's; and the failure's line cut by the wrap
    /// ("Allocation of" / "size 15M failed: …") gives its size from the line that goes on.
    #[test]
    fn a_wrapped_records_next_line_continues_its_message() {
        let t = "> [2025-12-01 10:01:37] [error] [FFmpeg]\n[libplacebo @ 000002396b591900]\n\
                 Allocation of size   15M failed:\nVK_ERROR_OUT_OF_DEVICE_MEMORY!\n\
                 > [2025-12-01 10:01:37] [error] [FFmpeg]\n[libplacebo @ 000002396b591900]     0:\n\
                 flags 0x1 size 8018M\n";
        let a = super::super::analyze(t);
        assert_eq!(a.total, 1);
        let o = a.main().expect("found");
        assert_eq!(o.facts.total_bytes, Some(8018 << 20));
        assert_eq!(o.facts.requested_bytes, Some(15 << 20));
        let t = "> [2025-12-01 10:01:37] [error] [FFmpeg] [libplacebo @ 000002396b591900] Allocation of\n\
                 size   15M failed: VK_ERROR_OUT_OF_DEVICE_MEMORY!\n";
        let o = super::super::analyze(t).main().cloned().expect("found");
        assert_eq!(o.facts.requested_bytes, Some(15 << 20));
    }

    /// An exception's message in quotes, on the line after its class where a wrap put the class
    /// (`…VulkanException:` / `Unexpected API error "ErrorOutOfDeviceMemory".`), is the
    /// program's failure, not a writer quoting one.
    #[test]
    fn a_quote_after_an_exceptions_class_is_its_message() {
        let class = "00:00:11.789 |E| GUI.RenderLoop Application : Unhandled exception caught: \
                     Ryujinx.Graphics.Vulkan.VulkanException:\n";
        let message = "Unexpected API error \"ErrorOutOfDeviceMemory\".\n";
        let a = super::super::analyze(&format!("{class}{message}at Ryujinx.Graphics.Vulkan.ResultExtensions.ThrowOnError(Result result) in\nD:\\a\\VulkanException.cs:line 20\n"));
        assert_eq!(
            a.main().map(|o| o.format),
            Some("api-VK_ERROR_OUT_OF_DEVICE_MEMORY")
        );
        // Without the class above it, the same quote in a question is talk about the error.
        let a = super::super::analyze(&format!("What does {message}mean, when the game boots?\n"));
        assert!(a.main().is_none());
    }

    /// A device list re-wrapped narrower than its lines ("* Device #1: GeForce GT 630," /
    /// "768/1024 MB (256 MB allocatable), 2MCU") reads as printed; so does one behind a log's
    /// prefix whose line reads in part as it is (a key after a comma).
    #[test]
    fn a_device_list_wrapped_or_prefixed_reads_as_printed() {
        let failure = "* Device #1: Not enough allocatable device memory for this attack.\n";
        for list in [
            "* Device #1: GeForce GT 630, 768/1024 MB (256 MB allocatable), 2MCU\n",
            "* Device #1: GeForce GT 630,\n768/1024 MB (256 MB allocatable), 2MCU\n",
            "* Device #1: GeForce GT\n630, 768/1024 MB (256\nMB allocatable), 2MCU\n",
        ] {
            let a = super::super::analyze(&format!("{list}\n{failure}"));
            let f = &a.main().expect("found").facts;
            assert_eq!(f.total_bytes, Some(1024 << 20), "{list}");
            assert_eq!(f.max_alloc_bytes, Some(256 << 20), "{list}");
            assert_eq!(f.startup_free_bytes, Some(768 << 20), "{list}");
        }
        let t = "gpu-node-07: device memory: 24217 MB, max_mem_alloc_size: 6054 MB, max_compute_units: 128\n\
                 gpu-node-07: Status error code: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)\n";
        let a = super::super::analyze(t);
        let f = &a.main().expect("found").facts;
        assert_eq!(f.total_bytes, Some(24217 << 20));
        assert_eq!(f.max_alloc_bytes, Some(6054 << 20));
    }
}
