//! Reads one block of cleaned lines as one message: the families of [`super::families::ALL`]
//! in order, over the text joined with spaces and without, then the honest fallback for a GPU
//! allocation failure in wording no family knows.

use super::lazy::LazyRegex;
use regex::Regex;

use super::known::{num, oom, sz, SIZE};
use super::{Facts, Framework, Oom};

use crate::units::parse_int;
pub use crate::units::parse_size;

re!(
    hint_re,
    r"(PYTORCH_(?:CUDA_|HIP_)?ALLOC_CONF=expandable_segments:True|max_split_size_mb|PYTORCH_MPS_HIGH_WATERMARK_RATIO=0\.0|empty_cache)"
);
re!(
    tf_stat_re,
    r"^(Limit|InUse|MaxInUse|NumAllocs|MaxAllocSize):\s+(\d+(?:\.\d+)?)\s?([KMGT]i?B|B)?\s*$"
);
// Where a message names its device outside its own pattern: ggml's "current device: N", ONNX
// Runtime's (and CNTK's) CudaCall "; GPU=N ;" (between its fields, not a sentence's "per
// GPU=1"), TensorFlow's allocator name GPU_N_bfc, a torch device string.
re!(
    device_hint_re,
    r"current device: (\d+)|; ?GPU=(\d+) ?;|\bGPU_(\d+)_bfc|\b(?:cuda|hip|xpu):(\d+)\b"
);

/// A TensorFlow allocator statistic line ("InUse: 3846144"; newer XLA's BFC allocator prints
/// the same keys with binary units, "InUse: 81.00GiB", "Reserved: 0B").
pub fn tf_stat(line: &str) -> Option<(&str, u64)> {
    let c = tf_stat_re().captures(line.trim())?;
    let n = c.get(2)?.as_str();
    let value = match c.get(3) {
        Some(unit) => crate::units::parse_size(&format!("{n} {}", unit.as_str()))?,
        None => parse_int(n)?,
    };
    Some((c.get(1)?.as_str(), value))
}

/// The format of an OOM known only from TensorFlow's (or XLA's) allocator Stats block.
pub const TF_STATS_ONLY: &str = "tensorflow-bfc-stats";

/// An OOM that a Stats block stands for, before (or without) its "ran out of memory" line.
pub fn tf_stats_only() -> Oom {
    let mut o = oom(Framework::Tensorflow, TF_STATS_ONLY, None, Facts::default());
    o.missing = vec!["the \"ran out of memory\" line: which allocation failed, and how large"];
    o
}

pub fn apply_tf_stat(f: &mut Facts, key: &str, value: u64) {
    match key {
        "Limit" => {
            f.total_bytes = Some(value);
            f.total_is_limit = true;
        }
        "InUse" => f.allocated_bytes = Some(value),
        _ => {}
    }
}

/// What a recognised message would say in full but this paste does not.
fn missing_parts(o: &Oom) -> Vec<&'static str> {
    let f = &o.facts;
    let mut out = Vec::new();
    match o.format {
        "pytorch-2.x-tail" => {
            out.push("the head of the message: the request, the GPU and its total capacity")
        }
        "mps" if f.requested_bytes.is_none() => {
            out.push("the request (\"Tried to allocate … on … pool\")")
        }
        // 2.x always ends with its split of what PyTorch holds; a paste cut before it (a
        // client truncating the text, a log line cut) lacks those figures.
        "pytorch-2.x" if f.reserved_unallocated_bytes.is_none() => {
            out.push(if f.allocated_bytes.is_some() {
                "the end of the message: what PyTorch reserved but left unallocated"
            } else {
                "the end of the message: what PyTorch allocated and reserved"
            })
        }
        "tensorflow-usage-report" => out.push(
            "the error's head (\"OOM when allocating tensor with shape[…]\"): which tensor did not fit",
        ),
        // The TPU compiler's report pasted from its breakdown on.
        "xla-tpu-hbm" if f.total_bytes.is_none() && f.program_bytes.is_some() => {
            out.push("the report's head (\"Used X of Y hbm\"): the HBM's capacity")
        }
        "tensorflow-oom" if f.requested_bytes.is_none() && f.elements.is_some() => {
            out.push("the tensor's dtype (\"and type …\"), so its size in bytes")
        }
        _ => {}
    }
    out
}

// The same allocations that did not fail, cut wherever a wrap put them: TensorFlow's BFC
// warning with `freed_by_count` (2.x) or, before it had one, followed at once by "The caller
// indicates that this is not a failure" (1.x, `bfc_allocator.cc`); ggml-vulkan's pinned host
// buffer (`ggml_backend_vk_host_buffer_type_alloc_buffer` catches the `vk::SystemError`, logs
// it, in parentheses or, in older builds, on the next line as "ggml_vulkan: <what>", and falls
// back to a plain CPU buffer): host memory, whatever Vulkan's error code says, and the run
// goes on; a device failure after it is read as usual. torch_memory_saver's cuMemCreate warning
// (`csrc/utils.h`: "(may not be an issue e.g. torch allocator will free cache and retry)")
// hands the failure back to PyTorch's allocator, which retries; its own error follows if not.
// PPSSPP's emulated PSP kernel (`BlockAllocator.cpp`, `sceKernelMemory.cpp`): "Block Allocator
// (08800000-0c000000) failed to allocate N (HEX) bytes of contiguous memory" and
// "sceKernelAllocPartitionMemory(…): allocation failed" are the game's memory inside the
// emulated console, neither the GPU's nor the host's.
re!(
    not_a_failure_re,
    r"Allocator \([^)]*\) ran out of memory trying to allocate \S+? ?(?:with ?freed_by_count=\d+|\.? ?The ?caller ?indicates)|failed to mlock \S+ buffer[^:]*: Cannot allocate memory|\[torch_memory_saver\.cpp\] (?:cu|hip)MemCreate \w+ \(may not be an issue[^)]{0,80}\)|ggml_vulkan: Failed to allocate pinned memory(?: ?\([^)]*\)|\. ?ggml_vulkan: [^\n]{0,160}?: ?Error\w+)|Block Allocator \([0-9a-fA-F]{8}-[0-9a-fA-F]{8}\) failed to allocate \d{1,12} \([0-9a-fA-F]{1,16}\) bytes of contiguous memory|sceKernelAllocPartitionMemory\([^\n]{0,160}?\): allocation failed"
);

// PyTorch's DataLoader pins each batch in a thread of its own
// (`torch/utils/data/_utils/pin_memory.py`, v1.0 to v2.9): only the `pin_memory(data, device)`
// call is wrapped, `ExceptionWrapper(where=f"in pin memory thread for device {device_id}")`, and
// the main process re-raises it as "Caught RuntimeError in pin memory thread for device N."
// with the thread's traceback, whose frames lie in that file; a traceback through a
// `pin_memory` frame (`torch/storage.py`'s `UntypedStorage.pin_memory`) the same.
// `Tensor.pin_memory` allocates from the CachingHostAllocator (`cudaHostAlloc`): page-locked
// host memory.
re!(
    pin_thread_re,
    r#"in pin memory thread for device (\d+)|_utils[/\\]pin_memory\.py"?, line \d+|, line \d+, in pin_memory\b"#
);

/// A message that relays CUDA's out-of-memory code without naming the call that failed
/// (`CUDA error: out of memory`): the code a host allocation returns as well (`cudaHostAlloc`,
/// `cudaHostRegister`, `cudaErrorMemoryAllocation` in `driver_types.h`), so the text around it
/// decides which memory it was. A message that names its allocator (PyTorch's caching
/// allocator, `cudaMalloc`, `cuMemAlloc`) is the device's.
pub(super) fn relays_cuda_code(o: &Oom) -> bool {
    // The runtime's status read alone (`api.rs`), CUDA's or HIP's: hipErrorOutOfMemory is what
    // hipHostMalloc returns too.
    let status = matches!(
        o.format,
        "api-cudaErrorMemoryAllocation"
            | "api-CUDA_ERROR_OUT_OF_MEMORY"
            | "api-hipErrorOutOfMemory"
    );
    o.memory == super::MemoryKind::Device
        && matches!(
            o.framework,
            Framework::Cuda | Framework::Pytorch | Framework::Rocm | Framework::Hip
        )
        && (o.format == "cuda" || status)
        && o.facts.known() == 0
}

/// PyTorch's pin-memory thread failing with CUDA's out-of-memory code: pinned host memory
/// (`pytorch-pin-memory`), with the device the thread serves. A traceback that reaches
/// `torch.cuda.set_device` failed creating a context on the GPU instead, and is left as read.
fn pin_memory_thread(found: &mut Oom, text: &str) {
    let Some(c) = pin_thread_re().captures(text) else {
        return;
    };
    if !relays_cuda_code(found) || text.contains("set_device") {
        return;
    }
    found.framework = Framework::Pytorch;
    found.format = "pytorch-pin-memory";
    found.memory = super::MemoryKind::PinnedHost;
    if let Some(d) = num(&c, 1).and_then(|d| u32::try_from(d).ok()) {
        found.device_index = Some(d);
    }
}

/// Parses one block of normalised lines; `None` when it is not an OOM after all.
pub fn parse_block(lines: &[String]) -> Option<Oom> {
    // Allocations that did not fail (TensorFlow's retried BFC warnings, a failed mlock) are
    // cut out of the joined text, however they were wrapped: a series of them before the
    // failure is not it.
    let spaced = not_a_failure_re()
        .replace_all(&lines.join(" "), "")
        .into_owned();
    // The line that says what failed; where a wrap split its phrase over two lines (the
    // scanner found it across them), those two lines joined.
    let trigger = lines
        .iter()
        .find(|l| super::clean::is_trigger(l))
        .cloned()
        .or_else(|| {
            lines
                .windows(2)
                .map(|w| format!("{} {}", w[0], w[1]))
                .find(|l| super::clean::is_trigger(l))
        })
        .unwrap_or_default();
    // A block that only a translation's phrases triggered is a translated sentence or prose:
    // its one reader decides.
    let translated_only = !trigger.is_empty()
        && lines
            .iter()
            .filter(|l| super::clean::is_trigger(l))
            .all(|l| super::clean::only_translated_trigger(l))
        && super::clean::only_translated_trigger(&trigger);
    if translated_only {
        let mut found = super::known::paddle_translated(&spaced)
            .or_else(|| super::families::pytorch_translated(&spaced))?;
        found.line = crate::text::cut_at_word(&trigger, 300);
        found.missing = missing_parts(&found);
        return Some(found);
    }
    // A terminal wrap can split a word; try the block joined without spaces as well; then the
    // honest fallback on the trigger line.
    // An escaped string re-wrapped across lines (a panic's `{:?}`, a JSON body) cannot be
    // unescaped line by line: its `\n` escapes read as the breaks they stand for.
    let unescaped = || {
        spaced
            .contains("\\n")
            .then(|| parse_text(&spaced.replace("\\n", " ").replace("\\\"", "\"")))
            .flatten()
    };
    let joined = || parse_text(&not_a_failure_re().replace_all(&lines.concat(), ""));
    // The honest fallback reads the first trigger line it accepts: a writer's sentence that
    // opens the block ("I'm getting an out of memory error from ggml-cuda.cu,") is not the
    // program's line below it.
    let mut said = trigger.clone();
    // The text around a line that the fallback reads for a GPU's word: the eight lines before
    // it and every line after, not the whole context a long run of short lines keeps (a host's
    // "Unable to allocate 5.15 GiB for an array" a dozen lines after "Using CUDA device 0").
    let near = |t: &str| -> String {
        let at = lines.iter().position(|l| l == t).unwrap_or(0);
        lines[at.saturating_sub(8)..].join(" ")
    };
    let mut fall_back = || {
        // Not a line that says an allocation did not fail, or was not the GPU's.
        let (mut o, t) = std::iter::once(&trigger)
            .chain(lines.iter().filter(|l| super::clean::is_trigger(l)))
            .filter(|t| !not_a_failure_re().is_match(t))
            .find_map(|t| Some((fallback(t, &near(t))?, t.clone())))?;
        said = t;
        let at = lines.iter().position(|l| *l == said);
        // A wrap that left the failure's head on the line before ("ds4: CUDA q8 fp16 cache
        // alloc failed" / "(64.00 MiB): out of memory"): a line that ends mid-sentence, before
        // one that goes on, read together for what the tail does not give.
        let before = at
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| lines.get(i))
            .map(|b| b.trim_end())
            .filter(|b| ends_open(b) && failure_head_re().is_match(b));
        let tail = said
            .trim_start()
            .starts_with(|c: char| c.is_ascii_lowercase() || c == '(');
        if let Some(b) = before.filter(|_| tail) {
            if let Some(n) = fallback(&format!("{b} {said}"), &near(&said)) {
                fill_gaps(&mut o, &n);
            }
        }
        // A failure said over two lines ("Could not allocate 3D device memory." then "Device 0
        // alloc 256x256x1500x1 = 98304000 bytes (93 MB) failed in …, out of memory"): the line
        // after, itself a failure's, gives what the first does not.
        let next = at.and_then(|i| lines.get(i + 1));
        if let Some((next, n)) = next.and_then(|l| Some((l, fallback(l, &near(l))?))) {
            fill_gaps(&mut o, &n);
            said = format!("{said} {next}");
        } else if let Some(i) = at {
            // A wrap that split the failure's own line ("GPU-0: Failed to allocate 16.00 GB GPU"
            // / "memory (0.00 GB available)"): its sentence, carried on over the lines that read
            // as its rest, gives the figures the head does not. Only what the whole sentence
            // states once is taken. Not a line that opens a record of its own: a function's or
            // a file's label ("whisper_model_load: model size = 1533.14 MB", "main.cpp:120 …"),
            // a key's value ("retrying with size=512 MiB").
            let own_record = |l: &str| l.contains('=') || record_label_re().is_match(l);
            let whole = carried_on(&said, &lines[i + 1..], |_, l| goes_on(l) && !own_record(l));
            if let Some(n) = whole.last().and_then(|w| fallback(w, &near(&said))) {
                fill_gaps(&mut o, &n);
            }
        }
        Some(o)
    };
    let mut found = match parse_text(&spaced) {
        // A terminal's wrap inside a number ("Of the allocated memory 4" / "0.30 GiB is
        // allocated"): the lines joined as they were printed read the figure the spaced join
        // splits; the reading with more figures wins.
        Some(o) if splits_a_number(lines) => match joined() {
            Some(j) if j.facts.known() > o.facts.known() => j,
            _ => o,
        },
        Some(o) => o,
        None => joined().or_else(unescaped).or_else(&mut fall_back)?,
    };
    pin_memory_thread(&mut found, &spaced);
    super::api::figures_on_line(&mut found, &said);
    let at = lines.iter().position(|l| *l == said);
    // A wrap that split the failure's own line ("Allocation of" / "size 15M failed: …"): the
    // sentence goes on in the next lines (up to three: a 40-column wrap of a 130-column line),
    // which give what the cut does not. Past the first, each must read as the sentence's rest.
    if let Some(i) = at {
        for sentence in carried_on(&said, &lines[i + 1..], |k, l| k == 0 || goes_on(l)) {
            if found.facts.requested_bytes.is_some() {
                break;
            }
            super::api::figures_on_line(&mut found, &sentence);
        }
    }
    // The same for its device where the wrap left it on the line before ("…miner on" / "GPU0:
    // EVGA GeForce RTX 2080 8GB" / "[0000:2d:00.0]: out of memory"): a line that ends
    // mid-sentence, before one that does not start one.
    if found.device_index.is_none() {
        if let Some(before) = at.and_then(|i| i.checked_sub(1)).and_then(|i| lines.get(i)) {
            // A line ending in a colon that names an error is its head ("[CUDA] Error gpu 1:"
            // / "<cryptonight_extra_cpu_init>:193 …"), not a list's.
            let before = before.trim_end();
            let open =
                ends_open(before) || (before.ends_with(':') && error_word_re().is_match(before));
            let goes_on = said.trim_start().starts_with(|c: char| {
                c.is_ascii_lowercase() || matches!(c, '[' | '(' | '"' | '<')
            });
            if open && goes_on {
                super::api::figures_on_line(&mut found, &format!("{before} {said}"));
            }
        }
    }
    if found.device_index.is_none() {
        found.device_index = device_hint_re().captures(&spaced).and_then(|c| {
            (1..=4)
                .find_map(|i| num(&c, i))
                .and_then(|d| u32::try_from(d).ok())
        });
    }
    if let Some(h) = hint_re().find(&spaced) {
        found.hint = Some(h.as_str().to_owned());
    }
    found.line = crate::text::cut_at_word(&said, 300);
    found.missing = missing_parts(&found);
    Some(found)
}

/// A failure's line carried on over the lines after it (three at most: a 40-column wrap of a
/// 130-column line) while it has not ended its sentence and `accept` takes the next line (its
/// place among them, the line): the whole sentence at each step.
fn carried_on(said: &str, after: &[String], accept: impl Fn(usize, &str) -> bool) -> Vec<String> {
    let mut steps: Vec<String> = Vec::new();
    for (k, next) in after.iter().take(3).enumerate() {
        let sentence = steps.last().map_or(said, String::as_str);
        if sentence.trim_end().ends_with(['.', '!', '?']) || !accept(k, next) {
            break;
        }
        steps.push(format!("{sentence} {next}"));
    }
    steps
}

/// `o`'s unknown sizes and device, from another reading of the same failure.
fn fill_gaps(o: &mut Oom, n: &Oom) {
    let (f, g) = (&mut o.facts, &n.facts);
    f.requested_bytes = f.requested_bytes.or(g.requested_bytes);
    f.free_bytes = f.free_bytes.or(g.free_bytes);
    f.total_bytes = f.total_bytes.or(g.total_bytes);
    o.device_index = o.device_index.or(n.device_index);
}

re!(error_word_re, r"(?i)\b(?:error|failed|failure|exception)\b");
// A failed allocation's head, where a wrap put its size or cause on the next line ("ds4: CUDA
// q8 fp16 cache alloc failed" / "(64.00 MiB): out of memory", "cudaMalloc( bytes = N ) failed"
// / "with error: out of memory"): words of an allocation or of its failure, not another record's.
re!(failure_head_re, r"(?i)alloc|\bfail");
re!(record_label_re, r"^\s*[\w./-]{1,80}:\d{0,6}\s");

/// Whether a line (its end's spaces taken off) ends mid-sentence: not on a full stop, a colon or
/// the close of a bracket or a quote.
fn ends_open(line: &str) -> bool {
    !line.ends_with(['.', '!', '?', ':', ';', ')', ']', '"'])
}

/// A line that reads as the rest of a sentence a wrap cut: it starts in lower case or with a
/// figure, not with a capital, a bracket or a mark that opens a record of its own.
fn goes_on(line: &str) -> bool {
    let line = line.trim_start();
    // A figure, not a time or a date ("13:10:38", "2024-01-01") that opens a log record.
    let figure = line.starts_with(|c: char| c.is_ascii_digit())
        && line
            .split(|c: char| c.is_whitespace() || c == ')')
            .next()
            .is_some_and(|w| {
                w.bytes()
                    .all(|b| b.is_ascii_digit() || b == b'.' || b == b',')
            });
    line.starts_with(|c: char| c.is_ascii_lowercase()) || figure
}

/// Whether a line break in `lines` falls inside a number: a line that ends in a digit before one
/// that starts with a digit or a decimal point.
fn splits_a_number(lines: &[String]) -> bool {
    lines.windows(2).any(|w| {
        w[0].ends_with(|c: char| c.is_ascii_digit())
            && w[1].starts_with(|c: char| c.is_ascii_digit() || c == '.')
    })
}

/// A line of TensorRT-LLM's list of components: `Model: 78.60 / 16.02`.
pub fn is_component_line(line: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[^:]{1,120}: \d+\.\d+ / \d+\.\d+$").expect("regex"))
        .is_match(line)
}

/// Reads one message: the first family of [`super::families::ALL`] that knows it.
pub fn parse_text(t: &str) -> Option<Oom> {
    super::families::ALL.iter().find_map(|f| (f.parse)(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's failure a dozen short lines after a GPU's word is not the GPU's; a host's
    /// "Error: Insufficient memory" is not a GPU's, one that names its GPU is; a batch size is
    /// no request; a wrapped failure line goes on over lines that read as its sentence, not over
    /// a log record's time.
    #[test]
    fn the_fallback_keeps_to_its_lines_words() {
        let device = |t: &str| {
            crate::oom::analyze(t)
                .main()
                .filter(|o| o.memory == crate::oom::MemoryKind::Device)
                .map(|o| (o.device_index, o.facts.requested_bytes))
        };
        let mut t = String::from("Using CUDA device 0\n");
        for i in 0..12 {
            t.push_str(&format!("step {i}\n"));
        }
        t.push_str("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 5.15 GiB for an array with shape (10, 10) and data type float64\n");
        assert_eq!(device(&t), None);
        assert_eq!(device("found 1 GPU\nError: Insufficient memory"), None);
        // Kunlun's XPU driver (PaddlePaddle/PaddleDetection).
        assert_eq!(
            device("ioctl() fail, (705) Device memory not enough"),
            Some((None, None))
        );
        assert_eq!(
            device("[2023-06-18 13:10:38] GPU#3 error: insufficient memory"),
            Some((Some(3), None))
        );
        assert_eq!(
            device(
                "GPU 0: failed to allocate tensor, out of memory, batch size: 1048576, retrying"
            ),
            Some((Some(0), None))
        );
        assert_eq!(
            device("E app: failed to allocate gpu memory!, size: 6421360, flags: 0xa"),
            Some((None, Some(6_421_360)))
        );
        // Not a later record's figure.
        assert_eq!(
            device("whisper_init: failed to allocate memory for the GPU model\nwhisper_model_load: model size = 1533.14 MB"),
            Some((None, None))
        );
        assert_eq!(
            device("GPU 0: failed to allocate workspace\nretrying with size=512 MiB"),
            Some((Some(0), None))
        );
        // A failure line a wrap cut: its sentence's rest gives what its head does not.
        let o = crate::oom::analyze(
            "GPU-0: Failed to allocate 16.00 GB GPU\nmemory (1.50 GB available)",
        );
        let o = o.main().expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes, o.facts.free_bytes),
            (Some(0), Some(16 << 30), Some(3 << 29))
        );
        assert!(goes_on("2181038080"));
        assert!(goes_on("size 2181038080"));
        assert!(!goes_on("13:10:38 opencl use profile"));
        assert!(!goes_on("2024-05-01 12:00:01 step 3"));
    }

    /// The allocator's Stats lines in bytes, and with binary units as newer XLA prints them.
    #[test]
    fn allocator_stat_lines_in_bytes_and_in_units() {
        assert_eq!(tf_stat("InUse:  3846144"), Some(("InUse", 3_846_144)));
        assert_eq!(
            tf_stat("Limit:                        89.77GiB"),
            Some(("Limit", 96_389_803_540))
        );
        // Not a key the reading keeps.
        assert!(tf_stat("Reserved:   0B").is_none());
        assert_eq!(tf_stat("InUse: 81.00GiB"), Some(("InUse", 81 << 30)));
        assert!(tf_stat("InUse: 81.5").is_none());
    }

    #[test]
    fn sizes_are_binary() {
        assert_eq!(parse_size("1 GiB"), Some(1 << 30));
        assert_eq!(
            parse_size("2.20GiB"),
            Some((2.2 * (1u64 << 30) as f64).round() as u64)
        );
        assert_eq!(parse_size("1.5 GB"), Some(3 << 29));
        assert_eq!(parse_size("0 bytes"), Some(0));
        assert_eq!(
            parse_size("17.79G"),
            Some((17.79 * (1u64 << 30) as f64).round() as u64)
        );
        assert_eq!(parse_size("56.000000MB"), Some(56 << 20));
        // Paddle's "2.250000kB" and Intel's TensorFlow extension's "10529419660 Bytes".
        assert_eq!(parse_size("2.250000kB"), Some(2304));
        assert_eq!(parse_size("10529419660 Bytes"), Some(10_529_419_660));
        assert_eq!(parse_size("12 parsecs"), None);
        assert_eq!(parse_size("1e400 GiB"), None);
        assert_eq!(parse_size("99999999999999999999999 TiB"), None);
    }

    fn one(text: &str) -> Oom {
        let lines: Vec<String> = text.lines().map(super::super::clean::normalise).collect();
        match parse_block(&lines) {
            Some(o) => o,
            None => panic!("no OOM in {text:?}"),
        }
    }

    const GIB: u64 = 1 << 30;

    /// DataLoader's pin-memory thread (`torch/utils/data/_utils/pin_memory.py`: the message
    /// from `ExceptionWrapper(where=f"in pin memory thread for device {device_id}")`, 2.8's
    /// `AcceleratorError` as well as `RuntimeError`) is pinned host memory, with its device;
    /// the same error elsewhere stays the device's.
    #[test]
    fn the_pin_memory_thread_is_pinned_host_memory() {
        let o = one(concat!(
            "RuntimeError: Caught RuntimeError in pin memory thread for device 1.\n",
            "Original Traceback (most recent call last):\n",
            "  File \"/usr/lib/python3.11/site-packages/torch/utils/data/_utils/pin_memory.py\", line 37, in do_one_step\n",
            "    data = pin_memory(data, device)\n",
            "RuntimeError: CUDA error: out of memory",
        ));
        assert_eq!(
            (o.framework, o.format, o.memory, o.device_index),
            (
                Framework::Pytorch,
                "pytorch-pin-memory",
                super::super::MemoryKind::PinnedHost,
                Some(1)
            )
        );
        let o = one("torch.AcceleratorError: Caught AcceleratorError in pin memory thread for device 0.\ntorch.AcceleratorError: CUDA error: out of memory");
        assert_eq!(o.memory, super::super::MemoryKind::PinnedHost);
        let o = one("RuntimeError: CUDA error: out of memory");
        assert_eq!(o.memory, super::super::MemoryKind::Device);
        // The caching allocator's own message names the device: never pinned.
        let o = one(concat!(
            "  File \"/x/torch/utils/data/_utils/pin_memory.py\", line 55, in pin_memory\n",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.50 GiB is free.",
        ));
        assert_eq!(o.memory, super::super::MemoryKind::Device);
    }

    /// A 2.x message cut short says which of its figures the cut took; a whole one says none.
    #[test]
    fn a_cut_2x_message_says_what_it_lacks() {
        let head = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.50 GiB is free. ";
        let o = one(&format!(
            "{head}Of the allocated memory 70.00 GiB is allocated by PyTorch, and 6.00 GiB"
        ));
        assert_eq!(o.facts.allocated_bytes, Some(70 * GIB));
        assert_eq!(
            o.missing,
            vec!["the end of the message: what PyTorch reserved but left unallocated"]
        );
        let o = one(&format!("{head}Including non-PyTorch memory, this"));
        assert_eq!(
            o.missing,
            vec!["the end of the message: what PyTorch allocated and reserved"]
        );
        let o = one(&format!("{head}Of the allocated memory 70.00 GiB is allocated by PyTorch, and 6.00 GiB is reserved by PyTorch but unallocated."));
        assert!(o.missing.is_empty());
    }
    const MIB: u64 = 1 << 20;

    /// One case per family (the corpus in assets/oom holds the real-world variants).
    #[test]
    fn each_family_parses() {
        let cases: &[(&str, Framework, &str)] = &[
            ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.10 GiB of which 1.00 GiB is free. Including non-PyTorch memory, this process has 78.00 GiB memory in use. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 7.00 GiB is reserved by PyTorch but unallocated.", Framework::Pytorch, "pytorch-2.x"),
            ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)", Framework::Pytorch, "pytorch-1.5"),
            ("RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)", Framework::Pytorch, "pytorch-1.0"),
            ("HIP out of memory. Tried to allocate 432.00 MiB. GPU 0 has a total capacity of 15.92 GiB of which 7.12 GiB is free. Of the allocated memory 8.08 GiB is allocated by PyTorch, and 321.96 MiB is reserved by PyTorch but unallocated.", Framework::Hip, "pytorch-2.x"),
            ("XPU out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 15.11 GiB. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.", Framework::Xpu, "pytorch-2.x"),
            ("MPS backend out of memory (MPS allocated: 5.56 GB, other allocations: 1.10 GB, max allowed: 6.80 GB). Tried to allocate 768.00 MB on private pool.", Framework::Mps, "mps"),
            ("OOM when allocating tensor with shape[16,112,112,147] and type half on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc", Framework::Tensorflow, "tensorflow-oom"),
            ("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.17GiB (rounded to 1258291200).", Framework::Tensorflow, "tensorflow-bfc"),
            ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.", Framework::Jax, "jax"),
            ("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 160.02GiB with allocator GPU_0_bfc on device 0. [tf-allocator-allocation-error='']", Framework::Jax, "jax"),
            ("XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 2.99GiB (3206250496B) on device ordinal 0", Framework::Jax, "jax-request"),
            ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", Framework::Cuda, "cublas"),
            ("Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED", Framework::Cuda, "cudnn"),
            ("THCudaCheck FAIL file=/x/THCTensorRandom.cu line=20 error=2 : out of memory", Framework::Cuda, "thcudacheck"),
            ("RuntimeError: CUDA error: out of memory", Framework::Cuda, "cuda"),
            ("onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested buffer of size 939524096", Framework::Onnxruntime, "onnxruntime-bfcarena"),
            ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144.00 MiB on device 4: cudaMalloc failed: out of memory", Framework::Ggml, "ggml"),
            ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.", Framework::Vllm, "vllm-cache-blocks"),
            // netease-youdao/QAnything#302: the count before the raise, the paste cut after it.
            ("INFO 04-27 10:13:05 llm_engine.py:275] # GPU blocks: 0, # CPU blocks: 256\n2024-04-27 10:13:05 | ERROR | stderr | Traceback (most recent call last):", Framework::Vllm, "vllm-cache-blocks"),
            ("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 25,600,000 bytes (allocated so far: 3,635,267,072 bytes).", Framework::Cupy, "cupy"),
            ("Out of memory error on GPU 0. Cannot allocate 56.000000MB memory on GPU 0, 7.782776GB memory has been allocated and available memory is only 12.750000MB.", Framework::Paddle, "paddle"),
            ("[E] [TRT] safeRuntime.cpp (25) - Cuda Error in nvinfer1::internal::DefaultAllocator::allocate: 2 (out of memory)", Framework::Tensorrt, "tensorrt"),
        ];
        for (text, fw, format) in cases {
            let o = one(text);
            assert_eq!((o.framework, o.format), (*fw, *format), "{text}");
        }
    }

    #[test]
    fn half_precision_tensors_are_two_bytes_per_element() {
        let o = one("OOM when allocating tensor with shape[16,112,112,147] and type half on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc");
        assert_eq!(o.facts.requested_bytes, Some(16 * 112 * 112 * 147 * 2));
        assert_eq!(o.device_index, Some(0));
    }

    /// The per-process cap (`set_per_process_memory_fraction`) as PyTorch formats it: after
    /// "free;" in 1.x, before "Of the allocated memory" in 2.x.
    #[test]
    fn allowed_clause_in_both_formats() {
        let o = one("CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 14.76 GiB total capacity; 4.50 GiB already allocated; 9.00 GiB free; 4.77 GiB allowed; 4.74 GiB reserved in total by PyTorch)");
        assert_eq!(
            o.facts.allowed_bytes,
            Some((4.77 * GIB as f64).round() as u64)
        );
        assert_eq!(
            o.facts.reserved_bytes,
            Some((4.74 * GIB as f64).round() as u64)
        );
        assert_eq!(o.facts.free_bytes, Some(9 * GIB));
        let findings = super::super::diagnose::diagnose(&o);
        assert_eq!(
            findings[0].cause,
            super::super::diagnose::Cause::ProcessCap,
            "{findings:?}"
        );
        let o = one("CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 14.76 GiB of which 9.00 GiB is free. Including non-PyTorch memory, this process has 5.20 GiB memory in use. 4.77 GiB allowed; Of the allocated memory 4.50 GiB is allocated by PyTorch, and 240.00 MiB is reserved by PyTorch but unallocated.");
        assert_eq!(
            o.facts.allowed_bytes,
            Some((4.77 * GIB as f64).round() as u64)
        );
        assert_eq!(o.facts.reserved_unallocated_bytes, Some(240 * MIB));
    }

    /// ggml-vulkan's pinned host buffer that fell back to a CPU buffer is not a failure, with
    /// its exception on the same line or the next; a device failure after it is still read.
    #[test]
    fn ppsspps_emulated_psp_memory_is_not_the_gpus() {
        // PPSSPP's log (hrydgard/ppsspp#14771): the game's memory inside the emulator.
        let t = "39:29:869 user_main    E[SCEKERNEL]: util\\blockallocator.cpp:142 Block Allocator (08800000-0c000000) failed to allocate 1048832 (00100100) bytes of contiguous memory\n39:29:869 user_main    E[SCEKERNEL]: hle\\scekernelmemory.cpp:1032 sceKernelAllocPartitionMemory(partition = 5, , type= 0, size= 1048584, addr= 00000000): allocation failed";
        assert!(crate::oom::analyze(t).main().is_none());
    }

    #[test]
    fn ggml_vulkan_pinned_fallback_is_not_a_failure() {
        let block = |ls: &[&str]| {
            let lines: Vec<String> = ls
                .iter()
                .map(|l| super::super::clean::normalise(l))
                .collect();
            parse_block(&lines)
        };
        assert!(block(&[
            "ggml_vulkan: Failed to allocate pinned memory.",
            "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory",
            "llama_context:    Vulkan0 compute buffer size =   616.06 MiB",
        ])
        .is_none());
        assert!(block(&["ggml_vulkan: Failed to allocate pinned memory (Requested buffer size exceeds device buffer size limit: ErrorOutOfDeviceMemory)"]).is_none());
        let o = block(&[
            "ggml_vulkan: Failed to allocate pinned memory.",
            "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory",
            "ggml_vulkan: Device memory allocation of size 4757131264 failed.",
            "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory",
            "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 4757131264",
        ])
        .expect("the device failure");
        assert_eq!(o.facts.requested_bytes, Some(4757131264));
    }

    /// TensorFlow 1.x's BFC warning had no `freed_by_count`; re-wrapped, its "not a failure"
    /// sentence may fall on the next line, and the warning is still not a failure.
    #[test]
    fn tensorflow_1_not_a_failure_warning_wrapped_is_not_a_failure() {
        let lines: Vec<String> = [
            "W tensorflow/core/common_runtime/bfc_allocator.cc:211] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.96GiB.",
            "The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.",
        ]
        .iter()
        .map(|l| super::super::clean::normalise(l))
        .collect();
        assert!(parse_block(&lines).is_none());
        // The failure itself ("rounded to", no such sentence) is read.
        let lines = vec!["Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.17GiB (rounded to 1258291200).  Current allocation summary follows.".to_owned()];
        assert_eq!(
            parse_block(&lines).and_then(|o| o.facts.requested_bytes),
            Some(1258291200)
        );
    }

    /// PyTorch 2.x's sentence as `CUDACachingAllocator.cpp` builds it with every optional
    /// clause: the other process, "this process", the cap (`allowed_info`, after `proc_info`)
    /// and the private pools; each figure lands in its own field, on ROCm as on CUDA.
    #[test]
    fn every_optional_clause_of_the_2x_sentence_keeps_its_figure() {
        let o = one("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 63.98 GiB of which 1.50 GiB is free. Process 4242 has 10.00 GiB memory in use. Including non-PyTorch memory, this process has 52.00 GiB memory in use. 51.00 GiB allowed; Of the allocated memory 48.00 GiB is allocated by PyTorch, with 6.00 GiB allocated in private pools (e.g., CUDA Graphs), and 3.00 GiB is reserved by PyTorch but unallocated.");
        let f = &o.facts;
        assert_eq!((o.framework, o.device_index), (Framework::Hip, Some(1)));
        assert_eq!(f.requested_bytes, Some(2 * GIB));
        assert_eq!(f.total_bytes, Some((63.98 * GIB as f64).round() as u64));
        assert_eq!(f.free_bytes, Some(3 * GIB / 2));
        assert_eq!(f.process_bytes, Some(52 * GIB));
        assert_eq!(f.allowed_bytes, Some(51 * GIB));
        assert_eq!(f.allocated_bytes, Some(48 * GIB));
        assert_eq!(f.private_pool_bytes, Some(6 * GIB));
        assert_eq!(f.reserved_unallocated_bytes, Some(3 * GIB));
        assert_eq!(f.other_processes.len(), 1);
        assert_eq!(f.other_processes[0].bytes, 10 * GIB);
    }

    #[test]
    fn garbage_is_not_an_oom() {
        assert!(parse_text("out of memory: sort of, but no numbers and no known format").is_none());
        assert!(parse_text("").is_none());
    }

    #[test]
    fn a_terminal_wrap_in_the_middle_of_a_word_still_parses() {
        // ROCm's stream-executor line cut at the terminal's edge inside "OutOfMemory", as
        // the scanner sees it (the wrapped trigger word included).
        let found = |t: &str| super::super::analyze(t).main().cloned().expect("an OOM");
        let o = found(
            "E tensorflow/compiler/xla/stream_executor/rocm/rocm_driver.cc:606] failed to alloc\n\
             ate 127.99TiB (140729850295296 bytes) from device: HIP_ERROR_OutOf\nMemory",
        );
        // The log's own path names TensorFlow.
        assert_eq!(
            (o.framework, o.format),
            (Framework::Tensorflow, "rocm-driver")
        );
        // Read exactly, and flagged: no GPU holds 128 TiB (kept: it is what was asked for).
        assert_eq!(o.facts.requested_bytes, Some(140_729_850_295_296));
        assert_eq!(o.facts.implausible[0].said_bytes, 140_729_850_295_296);
        // vLLM's guard cut inside a number.
        let o = found(
            "ValueError: Free memory on device cuda:3 (12.1\n8/23.56 GiB) on startup is less than desired GPU memory utilization (0.92, 21.67 GiB).",
        );
        assert_eq!((o.format, o.device_index), ("vllm-startup", Some(3)));
        assert_eq!(
            o.facts.free_bytes,
            Some((12.18 * GIB as f64).round() as u64)
        );
    }

    /// A terminal's wrap inside a number: the figure is read whole.
    #[test]
    fn a_wrap_inside_a_number_reads_the_whole_number() {
        let text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.36 GiB. GPU 1 has a total capacity of 47.50 GiB of which 1.52 GiB is free. Including non-PyTorch memory, this process has 45.97 GiB memory in use. Of the allocated memory 4\n0.30 GiB is allocated by PyTorch, and 4.91 GiB is reserved by PyTorch but unallocated.";
        let o = super::super::analyze(text).main().cloned().expect("an OOM");
        assert_eq!(
            o.facts.allocated_bytes,
            Some((40.30 * GIB as f64).round() as u64)
        );
    }

    /// A panic's `{:?}` string re-wrapped at 40 columns: its `\n` escapes, split from the
    /// string's quotes, still read as breaks.
    #[test]
    fn an_escaped_string_rewrapped_across_lines_still_reads() {
        let text = "thread 'main' panicked at 'Unable to\nwarmup model: Generation(\"Allocation on\ndevice 0 would exceed allowed memory.\n(out of memory)\\nCurrently allocated    \n: 16.08 GiB\\nRequested               :\n4.83 GiB\\nDevice limit            :\n22.20 GiB\\nFree (according to CUDA):\n11.12 MiB\\nPyTorch limit (set by\nuser-supplied memory fraction)\\n        \n: 22.20 GiB\")',";
        let o = super::super::analyze(text).main().cloned().expect("an OOM");
        assert_eq!(o.format, "pytorch-cudamallocasync");
        assert_eq!(
            o.facts.allocated_bytes,
            Some((16.08 * GIB as f64).round() as u64)
        );
    }

    /// The fallback knows the other accelerators' words: an Ascend runtime failure in wording
    /// no rule knows is found (unknown, its line quoted), a sentence about it is not.
    #[test]
    fn the_fallback_knows_other_accelerators_but_not_prose() {
        let o = one("[ERROR] RUNTIME(1234,python):2024-06-01-12:00:00.000.000 [npu_driver.cc:211] rtMalloc failed: NPU device memory out of memory, size=2147483648");
        assert_eq!(o.framework, Framework::Unknown);
        let lines: Vec<String> = ["Out of memory issues on both gpu and cpu".to_owned()].to_vec();
        assert!(parse_block(&lines).is_none());
        let lines = vec!["I keep running out of memory on my GPU, any idea?".to_owned()];
        assert!(parse_block(&lines).is_none());
        // Cambricon's driver status through CNRT, its card by number (DeepLink-org/DIPU).
        let lines = vec![
            "[cnrtError] [50200] [Card: 0] Error occurred during calling 'cnMalloc' in CNDrv interface.".to_owned(),
            "[cnrtError] [50200] [Card: 0] Return value is 100100, CN_MEMORY_ERROR_OUT_OF_MEMORY.".to_owned(),
            "[cnrtError] [50200] [Card: 0] cnrtMalloc: Malloc MLU device memory failed.".to_owned(),
        ];
        let o = parse_block(&lines).expect("found");
        assert_eq!((o.framework, o.device_index), (Framework::Unknown, Some(0)));
    }

    /// A program's exception that addresses its user is its message, not a writer's; a
    /// cluster's node named "gpu…" and Slurm's cgroup out-of-memory are not a GPU's.
    #[test]
    fn the_fallback_reads_an_exception_to_its_user_but_not_slurm() {
        let o = one("Engine.Rendering.GpuException: Your video card ran out of memory! Please close other programs and lower the texture quality.");
        assert_eq!(o.format, "unrecognised");
        for line in [
            "Your graphics card ran out of memory, what should I do?",
            "srun: error: gpu20-15: task 0: Out Of Memory",
        ] {
            assert!(parse_block(&[line.to_owned()]).is_none(), "{line}");
        }
        // A GPU named with its number and a colon is a GPU (GMiner's "on GPU0: …").
        assert!(parse_block(&["14:49:11 Failed to initialize miner on GPU0: EVGA GeForce RTX 2080 8GB [0000:2d:00.0]: out of memory".to_owned()]).is_some());
    }

    /// A program's own sizes in the shapes C++ code prints them: "size = N bytes", a call with
    /// its size argument, a volume's dimensions multiplied out; and a failure said over two
    /// lines, read from both (alicevision/Meshroom#1973, hypre-space/hypre#1435).
    #[test]
    fn the_fallback_reads_a_programs_sizes() {
        let o = one("Error allocating storage in void gridtools::hybrid_pointer<double>::allocate_it(::gridtools::uint_t) [T = double] : size = 1048576 bytes   out of memory (CUDA backend)");
        assert_eq!(o.facts.requested_bytes, Some(1 << 20));
        let o = one("what():  ! Umpire runtime_error [src/umpire/alloc/CudaMallocAllocator.hpp:38]: cudaMalloc( bytes = 4294967312 ) failed with error: out of memory");
        assert_eq!(o.facts.requested_bytes, Some(4_294_967_312));
        let lines = vec![
            "Could not allocate 3D device memory.".to_owned(),
            "Device 0 alloc 256x256x1500x1 = 98304000 bytes (93 MB) failed in /src/depthMap/cuda/host/memory.hpp:562, out of memory".to_owned(),
        ];
        let o = parse_block(&lines).expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (Some(0), Some(98_304_000))
        );
        assert!(o.line.starts_with("Could not allocate") && o.line.contains("98304000"));
        // HSA's status where no memory call returned it: rocminfo's start, not memory
        // (ROCm/rocminfo).
        let t = "hsa api call failure at: /data/jenkins_workspace/compute-rocm-rel-2.9/rocminfo/rocminfo.cc:1102\nCall returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events.";
        assert!(super::super::analyze(t).main().is_none());
        // What is allocated already, or other allocations, is no request (a cut MPS message).
        let o = one(
            "RuntimeError: GPU out of memory (allocated: 6.38 GB, other allocations: 454.09 MB)",
        );
        assert_eq!(o.facts.requested_bytes, None);
        // A call's name that goes on in CamelCase is still its allocation's word.
        assert_eq!(
            only_size(
                fallback_request_re(),
                "pAllocateInfo->allocationSize (17353937024 bytes) is larger than the heap"
            ),
            Some(17_353_937_024)
        );
        // Only a line that ends on a failed allocation's head lends the tail its size: not a
        // record above it.
        let lines = vec![
            "whisper_model_load: model size = 1533.14 MB".to_owned(),
            "cudaMalloc failed: out of memory".to_owned(),
        ];
        assert_eq!(
            parse_block(&lines).and_then(|o| o.facts.requested_bytes),
            None
        );
        // The size in parentheses after a short "alloc failed" (antirez/ds4#78).
        let o = one("ds4: CUDA q8 fp16 cache alloc failed (64.00 MiB): out of memory");
        assert_eq!(o.facts.requested_bytes, Some(64 << 20));
    }

    /// An allocation that failed with another status than memory's is no OOM, whatever the
    /// words around it.
    #[test]
    fn the_fallback_leaves_failures_with_another_status() {
        let lines = vec!["what():  Kokkos failed to allocate memory for label \"x\". Allocation using MemorySpace named \"Cuda\" failed: Allocation of size 64.12 K failed because of an unknown error.  (The allocation mechanism was cudaMalloc().  The Cuda allocation returned the error code \"cudaErrorNotSupported\".)".to_owned()];
        assert!(parse_block(&lines).is_none());
        let lines = vec![
            "MyLib failed to allocate 64 KiB on the GPU: cudaErrorMemoryAllocation".to_owned(),
        ];
        assert!(parse_block(&lines).is_some());
    }

    /// A program's own check before it allocates, in its words: read by structure, the free
    /// memory and what it needs (NCAR/VAPOR#3236).
    #[test]
    fn the_fallback_reads_a_programs_own_check() {
        let o = one("Not enough GPU RAM free (3686MB free, need at least 4122MB)");
        assert_eq!(o.framework, Framework::Unknown);
        assert_eq!(o.facts.free_bytes, Some(3686 << 20));
        assert_eq!(o.facts.requested_bytes, Some(4122 << 20));
        let lines = vec!["Not enough RAM free (3686MB free, need at least 4122MB)".to_owned()];
        assert!(parse_block(&lines).is_none());
        // A program's own words for a failed device allocation (MiguelMonteiro/CRFasRNNLayer#18).
        let o = one("permutohedral_lattice/src/DeviceMemoryAllocator.h:68] GPU memory allocation failed (might be due to insufficient memory)");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Unknown, "unrecognised")
        );
        // The host's words are still read as the host's (yuzu-emu/yuzu#9865).
        let lines = vec![
            "Debug <Critical> common/host_memory.cpp:operator():450: Assertion Failed! GPU"
                .to_owned(),
            "mprotect failed: Cannot allocate memory".to_owned(),
        ];
        assert!(parse_block(&lines).is_none());
    }

    /// A host allocator named as the call that failed is the host's memory, whatever device the
    /// model was loading for (SYSTRAN/faster-whisper#797: Intel MKL's `mkl_malloc` while
    /// CTranslate2 loads a model with `device="cuda"`).
    #[test]
    fn a_host_allocator_failing_is_not_a_gpu_oom() {
        for line in [
            "mkl_malloc: failed to allocate memory",
            "posix_memalign failed: cannot allocate 4096 bytes for the CUDA staging buffer",
        ] {
            let lines = vec![
                r#"model = WhisperModel("large-v3", device="cuda")"#.to_owned(),
                line.to_owned(),
            ];
            assert!(parse_block(&lines).is_none(), "{line}");
        }
        let lines = vec!["cuda_malloc(): failed to allocate 2.00 GiB of CUDA memory".to_owned()];
        assert!(parse_block(&lines).is_some());
    }
}

re!(
    fallback_fail_re,
    r"(?i)out of (?:gpu |device |video )?memory|failed to allocate|cannot allocate|could not allocate|unable to allocate|\ballocation of (?:size )?\d[\d.,]{0,20}\s?[A-Za-z]{0,5}\s(?:bytes\s)?failed\b|not enough (?:free )?(?:gpu|vram|video|device|npu)\b|\black of device memory\b|\bno enough memory\b|\bdevice memory not enough\b|\binsufficient (?:gpu|vram|video|device) memory\b|\ballocation on (?:the )?device failed\b|\bgpu memory allocation failed\b|\bgpu ?#?\d{1,2}\b[^\n]{0,20}?\berror:? insufficient memory\b|\bCN_MEMORY_ERROR_OUT_OF_MEMORY\b"
);
re!(
    fallback_gpu_re,
    r"(?i)\b(?:gpu|gpus|graphics card|video card|graphics memory|cuda|cudamalloc|cumemalloc|cumemcreate|vram|hip|rocm|nccl|cudnn|cublas|vulkan|opencl|metal|device memory|video memory|npu|ascend|aclrtmalloc|hccl|xpu|mlu|musa|tpu|hbm|rmm|qnn|htp|hexagon|nvptx\w{0,20}|allocation on (?:the )?device|geforce|radeon|quadro)\b|\bgpu\d{1,2}:"
);
// The host's OOM killer and host-memory wordings: not the GPU's.
re!(
    fallback_host_re,
    r"(?i)killed process|oom-killer|oom_reaper|out of memory: kill|host memory|cpu memory|system memory|\bram\b|swap|mlock|pinned|page-locked|cpu_?allocator|cpu buffer|\berrno 12\b|(?-i:Cannot allocate memory)|mkl_malloc|posix_memalign|\b(?:je|tc)malloc\b|\bmi_malloc|\brandomx\b|huge ?pages|\bLLVM ERROR\b|oom-kill|\bcgroup\b|\btask \d+: out of memory\b|for an array with shape|_ArrayMemoryError"
);
// Sentences about memory rather than a program's report of it: a person writing (first or
// second person, a question), or a line with no mark of an error at all.
re!(
    prose_re,
    r"(?i)\b(?:i|i'm|i've|i'd|me|my|we|we're|our|you|your)\b|\?\s*$"
);
re!(
    exception_head_re,
    r"^\s*(?:[A-Za-z_]\w*\.){0,6}[A-Z]\w*(?:Exception|Error)\s*:"
);
re!(
    fallback_request_re,
    format!(
        r"(?i)(?:allocat(?:e|es|ing|ion)(?:\b|(?-i:[A-Z])\w*)|request\w*|need\w*)\D{{0,24}}?{SIZE}|\ballocat\w*\D{{0,40}}?\b(?:of|with) size:?\s*(\d{{4,}})\b(?:\s*[^\sKMGTkmgtB\d]|\s*$)|\bsize\s?[:=]\s?{SIZE}|\b\w{{0,20}}alloc\w{{0,20}}\(\s?(?:(?:bytes|size)\s?=\s?)?(\d{{4,20}})\s?\)|\balloc\w{{0,12}}\s[\dx ]{{1,40}}=\s?{SIZE}|\b(?:requirements?|required)\s?[:(=]\s?(\d{{6,}})\)?(?:\s*[^\sKMGTkmgtB\d]|\s*$)|\b(?:memory|buffer|alloc\w{{0,10}})\W{{1,4}}size\s?[:=]\s?(\d{{6,20}})\s*(?:[,;)]|$)|\balloc\w{{0,8}}size\s?[:=]\s?{SIZE}|\({SIZE} (?:chunk|buffer|block)\)|\balloc (?:failed|error)\s?\({SIZE}\)"
    )
);
re!(
    fallback_free_re,
    format!(
        r"(?i){SIZE}\s*(?:is\s+|are\s+)?(?:free|available)\b|\b(?:free|available)(?: memory)?\s*[:=]?\s*{SIZE}"
    )
);
re!(
    fallback_total_re,
    format!(
        r"(?i){SIZE}\s*total|\btotal(?: capacity| memory)?\s*[:=]?\s*{SIZE}|\b(?:free|available) of {SIZE}|\btotal memory\s?[:(=]\s?(\d{{6,}})\)?(?:\s*[^\sKMGTkmgtB\d]|\s*$)"
    )
);
re!(
    fallback_device_re,
    r"(?i)\b(?:gpu|device|cuda:|card:)\s*[#-]?(\d{1,3})\b"
);

/// A sentence in another script that names the error inside it ("…最常见的问题是 RuntimeError:
/// CUDA out of memory 错误", "Твоя программа падает с криком RuntimeError: CUDA out of
/// memory."): the words just before the error's English run are that script's. A label that
/// introduces a paste ends with a colon ("报错：RuntimeError: CUDA error: out of memory").
fn named_in_foreign_sentence(line: &str) -> bool {
    let Some(m) = fallback_fail_re().find(line) else {
        return false;
    };
    line[..m.start()]
        .trim_end_matches(|c: char| c.is_ascii())
        .chars()
        .next_back()
        .is_some_and(|c| c.is_alphanumeric() && !c.is_ascii())
}

/// The one value a pattern's size captures take in `line`; `None` when it has none or several
/// different ones (an ambiguous figure is not read).
fn only_size(re: &LazyRegex, line: &str) -> Option<u64> {
    let mut found: Option<u64> = None;
    for c in re.captures_iter(line) {
        // A count of bytes with no unit where the pattern says so ("of size 9289728").
        let v = (1..c.len()).find_map(|i| sz(&c, i).or_else(|| c.get(i)?.as_str().parse().ok()))?;
        match found {
            Some(prev) if prev != v => return None,
            _ => found = Some(v),
        }
    }
    found
}

re!(gpu_ram_re, r"(?i)\b(?:gpu|video) ram\b");
re!(
    hsa_memory_call_re,
    r"\bhsa_amd_memory_pool_allocate\b|\bhsa_memory_allocate\b|\bhsaKmtAllocMemory|\bscratch\b"
);
// CUDA's and HIP's statuses by name.
re!(
    gpu_status_re,
    r"\b(?:cudaError[A-Z]\w{0,60}|CUDA_ERROR_[A-Z_]{1,60}|hipError[A-Z]\w{0,60})"
);

/// Whether a line names CUDA's or HIP's status and none of them is running out of memory: the
/// allocation failed for another reason (Kokkos' "Allocation of size 64.12 K failed because of
/// an unknown error. (… returned the error code "cudaErrorNotSupported".)" on a MIG slice); or
/// it prints an API's success as its result ([`success_status_re`]).
fn names_another_status(line: &str) -> bool {
    let mut named = gpu_status_re().find_iter(line).peekable();
    (named.peek().is_some() && named.all(|m| !super::api::is_gpu_memory_status(m.as_str())))
        || success_status_re().is_match(line)
}

// CUDA's error by number with its string, as a program's check prints it before its own failure
// ("Error: CUDA error 222: the provided PTX was compiled with an unsupported toolchain.." then
// "Error: Failed to allocate 512x512 GPU buffer", ASTRA's `checkCuda`).
re!(cuda_error_number_re, r"(?i)\bCUDA error:? (\d{1,3}):");

/// Whether the block's CUDA errors by number are all another than out-of-memory (2), with no
/// words of running out of memory: the allocation failed because of that error.
fn follows_another_cuda_error(block: &str) -> bool {
    let mut codes = cuda_error_number_re().captures_iter(block).peekable();
    codes.peek().is_some()
        && codes.all(|c| c.get(1).is_some_and(|m| m.as_str() != "2"))
        && !block.to_ascii_lowercase().contains("out of memory")
}

// A GPU API's success status printed as the failure's result ("could not allocate oversize
// buffer on device '…' id=0: CL_SUCCESS", darktable's own size check before any call): no
// allocation failed in the API.
re!(
    success_status_re,
    r"[:=]\s*(?:CL_SUCCESS|VK_SUCCESS|CUDA_SUCCESS|cudaSuccess|hipSuccess)\b\s*[.)\]]?\s*$"
);

/// A line that clearly reports a GPU allocation failure in wording no rule knows: found, with
/// framework "unknown", the request, free and total memory and the device only where the line
/// gives each once, and the line itself quoted. A framework's meaning is never guessed.
pub fn fallback(trigger: &str, block: &str) -> Option<Oom> {
    if trigger.is_empty()
        || trigger.starts_with("raise ")
        || !fallback_fail_re().is_match(trigger)
        // "GPU RAM" is the GPU's memory, not the host's RAM.
        || fallback_host_re().is_match(&gpu_ram_re().replace_all(trigger, "VRAM"))
        // A program's exception may address its user ("System.OutOfMemoryException: Your
        // graphics card ran out of memory!"): the class says it is the program's message.
        || (prose_re().is_match(trigger) && !exception_head_re().is_match(trigger))
        || named_in_foreign_sentence(trigger)
        || names_another_status(trigger)
        || follows_another_cuda_error(block)
        // HSA's status for any resource its runtime could not get (threads, OS events, queues:
        // rocminfo's start on an unsupported APU), not memory unless a memory call returned it
        // or ROCr's scratch words come with it (a queue aborted when no wave's scratch fits).
        || (trigger.contains("HSA_STATUS_ERROR_OUT_OF_RESOURCES") && !hsa_memory_call_re().is_match(block))
        || !super::clean::has_error_mark(trigger)
        || !(fallback_gpu_re().is_match(trigger) || fallback_gpu_re().is_match(block))
    {
        return None;
    }
    let f = Facts {
        requested_bytes: only_size(fallback_request_re(), trigger),
        free_bytes: only_size(fallback_free_re(), trigger),
        total_bytes: only_size(fallback_total_re(), trigger),
        ..Facts::default()
    };
    let mut devices = fallback_device_re()
        .captures_iter(trigger)
        .filter_map(|c| num(&c, 1));
    let device = devices.next();
    let device = device
        .filter(|d| devices.all(|o| o == *d))
        .map(|d| d as u32);
    Some(oom(Framework::Unknown, "unrecognised", device, f))
}
