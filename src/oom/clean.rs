//! What a pasted line is cleaned to before anything reads it, and the cheap test for a line
//! that may start an OOM message: shared by the scanner and the parsers (so neither imports the
//! other), and by `run`, which watches a child's output for the same lines.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::Regex;

/// Longest line kept (longer lines are cut: binary garbage, minified JSON).
pub const MAX_LINE: usize = 16 * 1024;

/// At most the first `n` bytes of `s`, cut at a character boundary.
pub(crate) fn head(s: &str, n: usize) -> &str {
    let mut end = s.len().min(n);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The log prefixes [`normalise`] takes off. Its classes are ASCII (`[0-9]`, `[0-9A-Za-z_]`,
/// not Unicode's `\d` and `\w`): every prefix it knows is written in ASCII, and compiled with
/// Unicode's classes this one pattern took 10 ms, a quarter of the time `explain` took on a short
/// paste. `\s` stays Unicode's (a web page's no-break space before a prefix).
fn prefix_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"^(?:",
            // Comment boxes, quotes, bullets; "--" only as a comment's mark, with a space
            // after it (a wrapped line may start with a flag, "--mem-fraction-static").
            r"\s*(?:[│|#>*]|//|--(?:\s|$))\s?",
            r"|\s*\[rank[0-9]+\]:\s*",                         // torchrun
            r"|\s*\[[0-9]+,[0-9]+\]<std(?:out|err|diag)>:\s?", // Open MPI's --tag-output
            r"|\s*\([0-9A-Za-z_]+(?:_[0-9A-Za-z_]+)* pid=[0-9]+\)\s*", // vLLM / Ray workers
            r"|\s*[0-9A-Za-z_.\-]+\s+\|\s",                    // docker compose service prefixes
            r"|\s*[0-9]{4}-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:[.,][0-9]+)?(?:Z|[+-][0-9][0-9]:?[0-9][0-9])?:?\s*", // ISO time
            r"|\s*\[[0-9]{4}-[0-9][0-9]-[0-9][0-9][^\]]*\]\s*", // [2024-01-01 12:00:00]
            r"|\s*[EWIF][0-9]{4} [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]+\s+[0-9]+\s+[0-9A-Za-z_.\-]+:[0-9]+\]\s*", // glog
            r"|\s*(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL)\s+[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\s+\[[^\]]+\]|\s+[0-9A-Za-z_.]+:[0-9]+\])?\s*", // vLLM
            r"|\s*(?:ERROR|WARNING|INFO|DEBUG|CRITICAL)(?::[0-9A-Za-z_.]+)*:\s*", // Python logging
            r"|\s*\[(?:ERROR|E|W|TRT|TensorRT)\]\s*",
            r"|\s*[A-Z][a-z]{2} [ 0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9] [0-9A-Za-z_.\-]+ [0-9A-Za-z_.\-/@]+(?:\[[0-9]+\])?:\s*", // journalctl
            r"|\s*[a-z][a-z0-9.\-]*[0-9][a-z0-9.\-]*:\s", // pdsh/clush: a host name with a digit
            r")+"
        ))
        .expect("prefix regex")
    })
}

/// `line` without the log prefixes [`normalise`] takes off (its marks kept): the text as its
/// writer or program wrote it.
pub(crate) fn without_log_prefix(line: &str) -> std::borrow::Cow<'_, str> {
    prefix_re().replace(line, "")
}

/// A log prefix's level that says an error: Python's logging and Julia's `ERROR:`, `[ERROR]`,
/// glog's `E0101 …`, `CRITICAL`, `FATAL`.
fn error_level_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\b(?:ERROR|CRITICAL|FATAL)\b|\[E\]|^\s*E\d{4} ").expect("level regex")
    })
}

/// Whether a line carries any mark of an error besides its log level: a word that says one, a
/// colon, quote or bracket that sets off a message, or a figure.
pub(super) fn has_error_mark(line: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)error|fail|exception|abort|fatal|warn|[:'\[]|\d").expect("mark regex")
    })
    .is_match(line)
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
            rest = decode_entity(rest, &mut out);
        } else {
            out.push('*');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out.into()
}

/// The HTML entities a page writes for what a message prints, with what they stand for.
const ENTITIES: &[(&str, &str)] = &[
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
];

/// `text` with its [`ENTITIES`] decoded, in one pass (`&amp;gt;` stays `&gt;`).
fn decode_entities(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('&') {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = decode_entity(&rest[i..], &mut out);
    }
    out.push_str(rest);
    out.into()
}

/// The entity `at` starts with (it starts with `&`) pushed decoded onto `out`, or the `&`
/// itself where it opens none of [`ENTITIES`]; what follows it.
fn decode_entity<'a>(at: &'a str, out: &mut String) -> &'a str {
    match ENTITIES.iter().find(|(e, _)| at.starts_with(e)) {
        Some((e, c)) => {
            out.push_str(c);
            &at[e.len()..]
        }
        None => {
            out.push('&');
            &at[1..]
        }
    }
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
    let level = prefix_re().find(&clean).map(|m| m.as_str().to_owned());
    let mut clean = prefix_re().replace(&clean, "");
    // A line whose only mark of an error is its log level (Julia's "ERROR: Out of GPU memory"):
    // the level stays, or the line would read as prose.
    if level.is_some_and(|l| error_level_re().is_match(&l)) && !has_error_mark(&clean) {
        clean = format!("ERROR: {clean}").into();
    }
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

/// The phrases that may start an OOM message, lower-case, each matched anywhere in a line
/// whatever its case. One list for both matchers below, so that they cannot disagree.
pub(crate) const TRIGGERS: &[&str] = &[
    "out of memory",
    "oom when allocating",
    // Its report of the largest live tensors (`report_tensor_allocations_upon_oom`).
    "current usage from device:",
    "resource_exhausted",
    "resource exhausted",
    "ran out of memory trying",
    "alloc_failed",
    "failed to allocate",
    "cudaerrormemoryallocation",
    "cuplaerrormemoryallocation",
    // FFmpeg's NVENC before 4.0, CUDA_ERROR_OUT_OF_MEMORY in hex
    "failed creating cuda context for nvenc: 0x2",
    // FluidX3D's own checks of its buffers against the device
    "would use a total of",
    "accepts a maximum buffer size of",
    // profanity's OpenCL status -4
    "(res = -4)",
    // MegEngine, Theano's gpuarray, tinygrad, HWUI, amdgpu, Kinetica, Roblox, Citra, Neuron
    "out of memory while requesting",
    "trying to preallocate",
    "can not enable cudnn as there is only",
    "no memory is available",
    "not enough memory for command submission",
    "failed to pin framebuffer with error -12",
    "exceeds tier capacity",
    "exceeds capacity, needed:",
    "outofmemorygraphics",
    "failed to allocate stream buffer of preferred size",
    "could not allocate pitched device memory",
    "could not satisfy request for",
    "exceeded max size of memory allocation",
    // HeavyDB's executor
    "couldn't keep the entire working set of columns in gpu memory",
    "error=2 :",
    "runtime error (2)",
    "outofmemoryerror",
    "no available memory for the cache blocks",
    // vLLM's start-up profile with nothing left for the KV cache ("… reserved for KV Cache
    // is -1.05GiB", V1's "Available KV cache memory: -0.54 GiB").
    "reserved for kv cache is -",
    "available kv cache memory: -",
    "kv cache is needed",
    // The same vLLM sentence's head: a terminal's wrap inside "KV cache" still finds it.
    "to serve at least one request",
    "cannot allocate",
    "tried to allocate",
    // The caching allocator's sentence re-worded ("Attempting to allocate X (NPU 1; …)").
    "attempting to allocate",
    "reserved by pytorch but unallocated",
    "less than desired gpu memory utilization",
    "hip_error_outof",
    "erroroutofdevicememory",
    "erroroutdevicememory",
    "device memory allocation of size",
    "ggml_vulkan: memory allocation of size",
    "kiogpucommandbuffercallbackerroroutofmemory",
    "error code 2: outofmemory",
    "cuda runtime (out of m",
    "could not be allocated",
    "out of resource: shared memory",
    "out of gpu memory",
    // A program's own check before it allocates ("Not enough GPU RAM free (… free, need …)").
    "not enough gpu",
    "not enough free gpu",
    "not enough vram",
    "not enough video memory",
    "not enough device memory",
    "failed to cuda calloc",
    "memory not available to allocate buffer",
    "mb space on",
    "could not allocate collective of size",
    "nvml_success ==",
    "!!! allocation on device",
    "exception message: allocation on device",
    // ComfyUI's UI before its error reports: "Error occurred when executing KSampler:", the
    // exception's text on the lines after (`families.rs`, `oom_class_re`).
    "error occurred when executing",
    "this error means you ran out of memory on your gpu",
    "failed; bytes:",
    "failed to cuda malloc",
    "failed to cuda host alloc",
    "out of device memory",
    "out of video memory",
    "could not allocate",
    "unable to allocate",
    "cuda_error_out_of_memory",
    "out_of_memory",
    "rmm_error",
    // RMM's `rmm::bad_alloc` from a failed allocation call (`rmm/detail/error.hpp`), which a
    // paste may cut short before the CUDA status.
    "std::bad_alloc: cuda error at:",
    "pinned host memory",
    "maximum number of tokens that can be stored in kv cache",
    "insufficient gpu memory for kvcache",
    "kvcache tokens, but your prompt requires",
    "executor creation failed due to insufficient gpu memory",
    "attempting to reserve",
    "[metal::malloc]",
    // The same allocator's sentence where a C++ runtime printed it without its tag
    // ("libc++abi: terminating due to uncaught exception of type std::runtime_error: …").
    "which is greater than the maximum allowed buffer size",
    "maximum allowed buffer size",
    // wgpu-core's limit on one buffer (`families.rs`).
    "is greater than the maximum buffer size",
    // PaddlePaddle 1.x's op warning (`libraries.rs`).
    "paddle::memory::allocation::badalloc",
    // TensorRT 7's builder left with no tactic for a node (`known.rs`).
    "allocation error during getbesttactic",
    // gpu-burn's check and NVIDIA Warp's allocator (`api.rs`).
    "low mem for result",
    "memory allocation failed on device:",
    // A program's own words for a failed device allocation (MiguelMonteiro/CRFasRNNLayer's
    // `DeviceMemoryAllocator.h`: "GPU memory allocation failed (might be due to insufficient
    // memory)"), read by the fallback.
    "gpu memory allocation failed",
    // vLLM before 0.6 logs its cache's block count before it raises for none (`known.rs`).
    "gpu blocks: 0,",
    // OpenGL's GL_OUT_OF_MEMORY by its number (RootEncoder's check, `api.rs`).
    "gl error: 1285",
    // An NPU runtime's words (Rebellions' RBLN runtime: "SYS_EBUSY: Lack of device memory.",
    // optimum-rbln's "Not enough NPU memory to load the model."), read by the fallback.
    "lack of device memory",
    "not enough npu memory",
    // Baidu's Kunlun XPU runtime through PaddlePaddle ("XPU API return wrong value[-705], no
    // enough memory").
    "no enough memory",
    "device memory not enough",
    // HIP's runtime log (`families.rs`, `rocm_thunk`).
    "allocation failed : device memory",
    // wgpu-core 0.12's `OutOfMemory` unwrapped (`families.rs`).
    "err value: outofmemory'",
    // T-Rex's DAG check (`api.rs`).
    "of memory, but device has",
    // lolMiner's DAG failure ("GPU 0: error when allocating memory for the DAG.", `api.rs`).
    "error when allocating memory for the dag",
    // Qiskit Aer's check before a circuit (`api.rs`).
    "insufficient memory to run circuit",
    // BzMiner's check before a DAG or lookup table (`api.rs`).
    "not enough available memory (",
    // Rockchip's NPU runtime (`api.rs`).
    "failed to malloc npu memory",
    // A CUDA.jl build's warning as its pool retries (`families.rs`).
    "cuda memory allocation failed; attempting to free up memory",
    // A check that prints glGetError's value by name: OpenTK's `ErrorCode` ("GL Error:
    // OutOfMemory"; OpenRA's words "Out Of Memory" are "out of memory" already).
    "gl error: outofmemory",
    "gl error: gl_out_of_memory",
    // gpu-allocator's `AllocationError::OutOfMemory` by Debug, after a program's words.
    "\": outofmemory",
    "allocationerror::outofmemory",
    // Newer Adreno drivers (`api.rs`).
    "kgsl_sharedmem_alloc() failed!",
    "(ioctl_kgsl_gpuobj_alloc) failed: errno 12",
    // Mali's allocation failure as MediaTek's drivers log it (`api.rs`).
    "bad alloc from gles_",
    // Unreal's Vulkan RHI from 4.25, the device's memory called "Local" (`api.rs`).
    "out of local memory, requested",
    "bytes on device 'cuda",
    // Jittor's device allocator falling back to unified memory (`api.rs`).
    "use unify memory instead",
    "unable to alloc cuda device memory",
    // RMM's pool at its maximum, in its reason (`known.rs`): one word no wrap splits.
    "current/max/try",
    // gfx-hal's `OutOfMemory` as Debug prints it, in wgpu before 0.7 (`families.rs`).
    "outofmemory(device)",
    "outofmemory(host)",
    "can't allocate",
    "out_of_device_memory",
    "insufficient memory",
    "exceeded hbm capacity",
    // The same report's breakdown, where a paste starts there.
    "total hbm usage >=",
    "larger than buffer maximum",
    "allocation failed for size",
    "hsa_amd_memory_pool_allocate failed",
    "failed to alloc device memory",
    "device oom encountered",
    "hami-core error",
    "message=\"allocation failure\"",
    // The same inside an escaped string (a JSON body's `message=\"Allocation Failure\"`).
    "status=4 message=",
    "allocating <= available",
    "allocating_memory <= available_memory",
    "maximum pool size exceeded",
    "pi_error_out_of_resources",
    "ur_result_error_out_of_resources",
    // NCCL's "Cuda failure 2 'out of memory'", ONNX Runtime's and CNTK's "CUDA failure 2: …"
    "cuda failure 2 '",
    "cuda failure 2:",
    "cuda execution failed with error 2",
    "curesult",
    "cuda error 2",
    "cudaerror 2",
    "failed res=2",
    // PyTorch's allocator warning of a failed cudaMalloc or segment mapping
    // (`CUDACachingAllocator.cpp`, 2.13).
    "failed with oom on device",
    // Text Generation Inference's warm-up and router (`flash_causal_lm.py`, `backends/v3`),
    // each in its own words (a sentence that only says "not enough memory" is no message).
    "prefill tokens. you need to decrease",
    "not enough memory to handle `max_total_tokens=",
    "not enough memory to handle max_total_tokens=",
    // DeepSpeed's inference workspace (`inference_context.h`).
    "workspace can't be allocated",
    // PyTorch MPS's one-buffer limit (`MPSAllocator.mm`).
    "invalid buffer size:",
    // Metal's validation layer on a buffer over `maxBufferLength`.
    "newbufferwith*:length",
    // SGLang's KV pool with no room after the weights (`model_runner.py`).
    "please try to increase --mem-fraction-static",
    "leave no gpu memory for the kv cache",
    // Arm's Mali GLES driver's GL_OUT_OF_MEMORY by its code (`api.rs`).
    "error code:0x505",
    "error code: 0x505",
    "memory layout cannot be allocated",
    "requires more system memory",
    "not enough memory left",
    // hashcat's own check (`backend.c`), COLMAP's SIFT matcher (`sift.cc`), darktable's OpenCL
    // modules with OpenCL's -4, Adreno's kgsl, Ethash miners' DAG (`api.rs`, `PROGRAMS`).
    "not enough allocatable device memory",
    "enough allocatable device-memory",
    "caused by insufficient gpu memory",
    "cl] failed: -4",
    "couldn't enqueue kernel! -4",
    // sgminer and cgminer's launch ("Error -4: Enqueueing kernel onto command queue.
    // (clEnqueueNDRangeKernel)").
    "error -4: enqueueing kernel",
    // Cambricon's driver status through CNRT ("Return value is 100100,
    // CN_MEMORY_ERROR_OUT_OF_MEMORY." then "cnrtMalloc: Malloc MLU device memory failed.").
    "cn_memory_error_out_of_memory",
    // The Neuron compiler's NKI instruction over the state buffer (`families::neuron_sbuf`).
    "couldn't be allocated in sb",
    "kgsl_sharedmem_alloc ioctl failed",
    "enough free memory to hold the dag",
    "error when allocating memory or building dag",
    "insufficient memory for dag",
    "to create dag. current epoch requires",
    "insufficient useable buffer size",
    "ioctl_kgsl_sharedmem_alloc: fatal error",
    "clcreatebuffer (padbuffer8)",
    "requested more gpu memory than",
    "halmemalloc failed",
    // "RMM allocation of 132.89 GiB failed", "Allocation of 4.00 GiB failed": the fallback
    // reads it only with its failure and a device's word.
    "allocation of",
    // PG-Strom's GPU service, HeavyDB's buffer pool (`api.rs`).
    "failed on gpumemalloc",
    "b throwing out of memory",
    // Guppy's memory manager, RPCS3's handler for exhausted video memory (`api.rs`).
    "reached memory limit while trying to allocate",
    "vkgsrender::on_vram_exhausted",
    "out of dynamic gpu memory",
    "couldn't allocate memory: heap=",
    "mining suspended on device",
    // ExLlamaV2's autosplit, TVM's Relax VM storage (`known.rs`).
    "egl_bad_alloc",
    "dml allocator out of memory",
    "vmacreateimage failed with error -",
    "vmacreatebuffer failed with error -",
    "outofmemorygraphics",
    "falling back to system memory",
    "ggml_metal_get_buffer: error: buffer is nil",
    "failed with status 5",
    "dxvkmemoryallocator: memory allocation failed",
    "dderr_outofvideomemory",
    // SDL's Direct3D 9 renderer names the HRESULT without its prefix (`D3D_SetError`).
    ": outofvideomemory",
    // cl.hpp's `cl::Error` as ethminer prints it: the call, then OpenCL's status by number.
    "opencl error: cl",
    // DALI's `CUDABadAlloc`, nnabla's allocator's retry, ViSUS's texture budget, PCSX2's
    // renderer (`api.rs`, `PROGRAMS`).
    "cuda allocation failed",
    "can't allocate",
    "failed to allocate again.",
    "reached its limit",
    "failed to acquire gpu memory",
    "gs: memory allocation failure",
    "not enough free memory [need",
    // Source 2's renderer, VulkanMod, Radeon ProRender and its image filters, the kernel's
    // DRM drivers on CMA (`api.rs`, `PROGRAMS`).
    "failed to allocate gpu memory for object",
    "failed to create buffer:",
    "failed to create image:",
    "_error_out_of_video_memory",
    "_error_out_of_system_memory",
    ") returned error code <",
    ") returned error core <",
    "failed to allocate from cma",
    "failed to allocate memory for tile binning",
    "failed to allocate buffer with size",
    // XMRig's OpenCL buffer over the device's single-buffer cap, rendy's allocator, djeZo's
    // Equihash worker (`api.rs`).
    "error cl_invalid_buffer_size when calling",
    "all suitable heaps are exhausted",
    "failed to alloc memory",
    "memory allocation on device failed",
    "bfcarena::allocaterawinternal",
    "thrust::system::detail::bad_alloc",
    "insufficient vram for model",
    "insufficient vram in split for model",
    // A program's words after catching the framework's error ("Insufficient GPU memory to load
    // model. Aborting", InvokeAI's model cache): the fallback's.
    "insufficient gpu memory to",
    // MLC LLM's start-up check
    "insufficient gpu memory error",
    "storage allocation failure, attempted to allocate",
    "cuda failed with error 2",
    "hiperror_t error",
    "curand_status_allocation_failed",
    "memory isn't enough and alloc failed",
    "malloc for kernel output failed",
    "blocks, only",
    "is more than total mem size",
    "is smaller than requested bytes of",
    "cuda error: 2",
    // Intel Gaudi's SynapseAI helper (`habana_frameworks.torch`): "MODULE:SYNHELPER workspace
    // Allocation of size ::N failed".
    "module:synhelper",
    // GPU APIs' memory statuses as programs relay them (`api.rs`): names and API-specific
    // words only. A bare "error code -2" is no trigger: such lines can fill a log, and every
    // triggered line costs a parse.
    "mem_object_allocation_failure",
    "memory object allocation failure",
    "mem object allocation failure",
    "out_of_resources",
    "out_of_host_memory",
    "out of host memory",
    "outofhostmemory",
    "hiperrormemoryallocation",
    "mtlcommandbuffererror",
    "8007000e",
    "2147024882",
    "2147942414",
    "80070008",
    "2147024888",
    "2147942408",
    "8876017c",
    "2005532292",
    "2289435004",
    "d3derr_outofvideomemory",
    // Windows' text for E_OUTOFMEMORY, from "enough" on (a paste may garble its first word).
    "enough memory resources",
    "没有足够的内存资源",
    "npp_memory_allocation_err",
    // ManagedCuda's words for it (`NPPException`), read as NPP's only beside NPP's names.
    "device allocation error",
    "npp_no_memory_error",
    "nppstatus",
    "synfailedtoallocatedevicememory",
    "synstatus",
    "0x70000001",
    "0x70000002",
    "1879048193",
    "1879048194",
    "vkresult",
    "opencl error",
    "errcode=-2",
    "outofdevicememory",
    "== cudasuccess (",
    // Other CUDA libraries' and HIP's glog checks (`api.rs`, `GLOG_ALLOC_CODES`).
    "== cuda_success (",
    "_status_success: cusparse error:",
    "_status_success: cublas error:",
    "== hipsuccess (",
    "== cufft_success (",
    "== cusparse_status_success (",
    "== cusolver_status_success (",
    "== curand_status_success (",
    // TT-Metalium's bank allocator, where a paste cut its "Out of Memory:" head.
    "not enough space to allocate",
    "cuda malloc failed",
    "try to set subdivisions",
    // FAISS up to 1.5.0 (`FAISS_ASSERT_FMT` in `gpu/utils/MemorySpace.cpp`): no status words.
    "failed to cudamalloc",
    // Sophgo's libsophon (`bmlib_memory.cpp`) and BMRuntime.
    "bm_alloc_gmem failed",
    "device mem alloc failed",
    // CUDA.jl's allocator (`OutOfGPUMemoryError`), and ManagedCuda's and cudafy's name of
    // CUDA_ERROR_OUT_OF_MEMORY (`CUResult.ErrorOutOfMemory`).
    "outofgpumemoryerror",
    // OpenVINO's GPU plugin ("[GPU] out of GPU resources").
    "out of gpu resources",
    "exceeded max size of memory object allocation",
    // PhysX's GPU allocator ("PxgCudaDeviceMemoryAllocator fail to allocate memory N bytes").
    "fail to allocate memory",
    // AMDGPU.jl's assertion on a null stream-ordered allocation.
    "resulted in c_null",
    "erroroutofmemory",
    // ncnn's Vulkan allocator (`allocator.cpp`: "vkAllocateMemory failed %d"), as the
    // ncnn-vulkan upscalers print it.
    "vkallocatememory failed",
    // Blender's Cycles when the mapped host memory is full too, and OpenMM's arrays
    // (`OpenCLArray.cpp`: "Error creating array <name>: clCreateBuffer (-4)").
    "out of gpu and shared host memory",
    "error creating array",
    // PyTorch's sentence translated (`families::pytorch_translated`, `read::TRANSLATED`): its
    // allocation phrase, or its device word before the translation's "out of memory" (the
    // automaton matches their UTF-8 bytes as they are).
    "尝试分配",
    "试图分配",
    // Paddle's sentence translated ("无法在GPU 0上分配 …内存", `known::paddle_translated`).
    "上分配",
    "cuda 内存不足",
    "cuda内存不足",
    "cuda 显存不足",
    "cuda显存不足",
    "割り当てようとしました",
    "cuda メモリ不足",
    "cuda のメモリが不足",
    "할당하려고",
    "cuda 메모리 부족",
    "пытался выделить",
    "попытка выделить",
    "недостаточно памяти",
    "не хватает памяти",
];

/// [`TRIGGERS`] as one case-insensitive regex, with Unicode's case folding: what
/// [`has_trigger`] must say on any line (the tests compare them).
#[cfg(test)]
fn trigger_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let alternatives: Vec<String> = TRIGGERS.iter().map(|t| regex::escape(t)).collect();
        Regex::new(&format!("(?i){}", alternatives.join("|"))).expect("trigger regex")
    })
}

/// Whether an ASCII line holds one of [`TRIGGERS`]: [`noted_ac`]'s automaton (which holds them
/// and [`NOTED`]) in one pass, by the patterns it finds. One automaton, not two: building each
/// was a tenth of a short paste's time.
fn ascii_trigger(line: &str) -> bool {
    noted_ac()
        .find_overlapping_iter(line)
        .any(|m| m.pattern().as_usize() < TRIGGERS.len())
}

/// Whether a line holds a trigger phrase, before the exceptions of [`is_not_a_failure`]: as
/// [`trigger_re`] would say, with Unicode's case folding, in one automaton's pass. The phrases'
/// ASCII bytes never occur inside another character's UTF-8, so the automaton is exact on any
/// text but for the two characters that fold to an ASCII letter (the long s, the Kelvin sign),
/// which are read as their letters.
fn has_trigger(line: &str) -> bool {
    ascii_trigger(line) || matches!(folded(line), std::borrow::Cow::Owned(l) if ascii_trigger(&l))
}

/// `line` with the two characters Unicode's case folding takes to ASCII letters (the long s,
/// the Kelvin sign) as those letters, for the automaton, which folds ASCII only; borrowed when
/// it has neither.
fn folded(line: &str) -> std::borrow::Cow<'_, str> {
    if line.is_ascii() || !line.contains(['\u{17f}', '\u{212a}']) {
        return std::borrow::Cow::Borrowed(line);
    }
    std::borrow::Cow::Owned(line.replace('\u{17f}', "s").replace('\u{212a}', "k"))
}

/// Whether every trigger phrase of a line is a translation's ([`TRIGGERS`]' phrases that are
/// not ASCII): such a line can only be a translated sentence, which one family reads
/// (`families::pytorch_translated`), so prose that happens to hold 尝试分配 costs one reader,
/// not the whole table.
pub(crate) fn only_translated_trigger(line: &str) -> bool {
    if line.is_ascii() {
        return false;
    }
    noted_ac()
        .find_overlapping_iter(&*folded(line))
        .filter_map(|m| TRIGGERS.get(m.pattern().as_usize()))
        .all(|t| is_translation_phrase(t))
}

/// Whether a phrase of [`TRIGGERS`] is one only a translation of PyTorch's sentence holds: the
/// phrases that are not ASCII, but for GPU APIs' own localised statuses (DirectML's
/// "没有足够的内存资源", read in `api.rs`).
fn is_translation_phrase(phrase: &str) -> bool {
    const LOCALISED_STATUSES: &[&str] = &["没有足够的内存资源"];
    !phrase.is_ascii() && !LOCALISED_STATUSES.contains(&phrase)
}

/// Cheap test for a line that may start an OOM message.
pub fn is_trigger(line: &str) -> bool {
    has_trigger(line) && !is_not_a_failure(line)
}

/// What the scanner looks for in a line besides the trigger phrases: TensorFlow's "not a
/// failure" warnings it counts, its allocator statistics (`Limit:`, `InUse:`), its account
/// of each GPU at start-up (the device's total memory, the memory its allocator is given) and
/// other programs' ([`super::banner`]), matched here without their case (a superset: the
/// scanner then checks them exactly).
const NOTED: &[&str] = &[
    "this is not a failure",
    "limit:",
    "inuse:",
    "with properties",
    "total memory:",
    "totalmemory:",
    "devicememorysize:",
    "device:gpu:",
    // TensorFlow's allocator by name ("Allocator (GPU_0_bfc)"), the device its failure is on,
    // on a line of its own where a wrap cut "ran" from "out of memory".
    "_bfc)",
    // Programs' start-up accounts of their devices (`banner.rs`): hashcat's and xmrig's device
    // lists, OpenCL and CUDA device-info keys, `clinfo`.
    "device #",
    "cuda gpu",
    "global mem",
    "global_mem",
    "globalmem",
    "device memory",
    "device_memory",
    "memory.total",
    "mem_alloc",
    "max mem alloc",
    "max memory alloc",
    "maximum memory alloc",
    "free mem",
    "free_mem",
    "free vram",
    "memory.free",
    "mbyte",
    "gbyte",
    "mb allocatable",
    "using pci id",
    "backend allocating",
    // profanity's device list ("GPU0: GeForce GTX 1060 3GB, 3157000192 bytes available").
    "bytes available",
    // Genoil's ethminer ("… with 2147483648 bytes of GPU memory"), VanitySearch's device list
    // ("GPU #0 GRID A100D-8C (108x64 cores) (Cap 8.0) (8187.9 MB)").
    "bytes of gpu memory",
    "cores) (cap",
    // The heads of those two lines' accounts, where a wrap put their figures on the next
    // line: Genoil's "Found suitable CUDA device [GeForce GTX 750 Ti] with", NoncerPro's
    // "GPU#0, Name: GeForce GT 740M, Detected" / "total memory: 2048 MB".
    "found suitable cuda device",
    "gpu#",
    // ROCm's lowered occupancy ("Failed to map requested scratch (N) - reducing queue
    // occupancy.", `is_reduced_scratch`), counted.
    "reducing queue occupancy",
];

/// How many lines [`noted_ac`] tests with its quick-to-build automaton before it builds the
/// quick-to-run one: a DFA runs over a line several times faster than a contiguous NFA, but
/// building it over the ~170 phrases took 8–10 ms against the NFA's 2, a fifth of `explain`'s
/// time on a short paste. A log whose lines keep reaching the automaton (each holds a piece of
/// some phrase, [`maybe_noted_at`]) soon repays the DFA.
const NOTED_NFA_LINES: u32 = 4096;

/// [`TRIGGERS`] and [`NOTED`] in one case-insensitive automaton: a contiguous NFA for the first
/// [`NOTED_NFA_LINES`] tests, then a DFA. Both hold the phrases in the same order, so a match's
/// pattern number means the same phrase whichever answers.
fn noted_ac() -> &'static AhoCorasick {
    static NFA: OnceLock<AhoCorasick> = OnceLock::new();
    static DFA: OnceLock<AhoCorasick> = OnceLock::new();
    static TESTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    if let Some(dfa) = DFA.get() {
        return dfa;
    }
    let build = |kind| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(kind))
            .build(TRIGGERS.iter().chain(NOTED))
            .expect("noted automaton")
    };
    if TESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < NOTED_NFA_LINES {
        NFA.get_or_init(|| build(AhoCorasickKind::ContiguousNFA))
    } else {
        DFA.get_or_init(|| build(AhoCorasickKind::DFA))
    }
}

/// A plain line: ASCII, with no escape or control character to strip (a tab or a CR aside, which
/// stay) and no markup for [`unmark`] to undo (no `&`, backtick or `*`). The scanner tests such
/// a line as it is, so its quick tests on it are exact.
pub(crate) fn is_plain(line: &str) -> bool {
    // No early exit: a fold over the bytes compiles to a loop without branches.
    line.bytes().fold(true, |ok, b| {
        ok & (((0x20..0x7f).contains(&b) && b != b'&' && b != b'`' && b != b'*')
            || b == b'\t'
            || b == b'\r')
    })
}

/// Where, in `lower` (any number of lines, ASCII letters already in lower case), one of the
/// phrases [`is_quiet`] looks for may start: no line before the one this falls in holds any (no
/// phrase holds a line break). A vectorised search for short pieces of the phrases, one in each
/// ([`ANCHOR`] bytes long, chosen by [`anchors`]), scans a log several times faster than the
/// phrases' own automaton; where the CPU has no such search, the automaton itself.
pub(crate) fn maybe_noted_at(lower: &[u8]) -> Option<usize> {
    match anchor_searcher() {
        Some(s) => s.find(lower).map(|m| m.start()),
        None => noted_ac().find(lower).map(|m| m.start()),
    }
}

/// The length of the pieces [`anchors`] chooses: short enough that few cover every phrase (the
/// vectorised search takes at most 64), long enough to be rare in a log.
const ANCHOR: usize = 4;

fn anchor_searcher() -> Option<&'static aho_corasick::packed::Searcher> {
    static S: OnceLock<Option<aho_corasick::packed::Searcher>> = OnceLock::new();
    S.get_or_init(|| {
        let phrases: Vec<Vec<u8>> = TRIGGERS
            .iter()
            .chain(NOTED)
            .map(|p| p.as_bytes().to_ascii_lowercase())
            .collect();
        aho_corasick::packed::Searcher::new(anchors(&phrases, ANCHOR).iter())
    })
    .as_ref()
}

/// Pieces of `n` bytes (a whole phrase when shorter) such that every phrase holds one: each
/// time the piece the most phrases still uncovered hold, the least in byte order among equals
/// (a greedy set cover). The counts are kept and lowered as phrases are covered, not counted
/// again each round: counted again, the cover took 3 ms of every `explain`'s start.
fn anchors(phrases: &[Vec<u8>], n: usize) -> Vec<Vec<u8>> {
    let pieces_of = |p: &[u8]| -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = if p.len() <= n {
            vec![p.to_vec()]
        } else {
            p.windows(n).map(<[u8]>::to_vec).collect()
        };
        v.sort_unstable();
        v.dedup();
        v
    };
    let mut count: std::collections::HashMap<Vec<u8>, usize> = Default::default();
    let mut left: Vec<(&[u8], Vec<Vec<u8>>)> = phrases
        .iter()
        .map(|p| (p.as_slice(), pieces_of(p)))
        .collect();
    for (_, pieces) in &left {
        for piece in pieces {
            *count.entry(piece.clone()).or_default() += 1;
        }
    }
    let mut chosen = Vec::new();
    while !left.is_empty() {
        let Some(best) = count
            .iter()
            .filter(|(_, c)| **c > 0)
            .max_by(|(a, ca), (b, cb)| ca.cmp(cb).then_with(|| b.cmp(a)))
            .map(|(piece, _)| piece.clone())
        else {
            break;
        };
        left.retain(|(p, pieces)| {
            let covered = memchr::memmem::find(p, &best).is_some();
            if covered {
                for piece in pieces {
                    if let Some(c) = count.get_mut(piece) {
                        *c -= 1;
                    }
                }
            }
            !covered
        });
        chosen.push(best);
    }
    chosen
}

/// For a plain line ([`is_plain`]): whether it holds nothing the scanner acts on, neither a
/// trigger phrase nor what [`NOTED`] lists. A superset test: `false` may still be nothing.
pub(crate) fn is_quiet(plain_line: &str) -> bool {
    !noted_ac().is_match(plain_line)
}

/// Whether `head` (a line's start, its leading spaces taken off) could be the second half of a
/// trigger phrase split between two lines at one of its spaces: it starts with what follows a
/// space in some phrase. The scanner joins two lines with one space, so a phrase found across
/// them is split there; a head that continues no phrase cannot complete one.
pub(crate) fn may_continue_a_trigger(head: &str) -> bool {
    static BY_FIRST: OnceLock<Vec<Vec<&'static str>>> = OnceLock::new();
    let by_first = BY_FIRST.get_or_init(|| {
        let mut by_first = vec![Vec::new(); 256];
        for t in TRIGGERS {
            for (i, _) in t.match_indices(' ') {
                let rest = &t[i + 1..];
                if let Some(b) = rest.bytes().next() {
                    by_first[usize::from(b)].push(rest);
                }
            }
        }
        by_first
    });
    let Some(first) = head.bytes().next() else {
        return false;
    };
    let h = head.as_bytes();
    by_first[usize::from(first.to_ascii_lowercase())]
        .iter()
        .any(|rest| h.len() >= rest.len() && h[..rest.len()].eq_ignore_ascii_case(rest.as_bytes()))
}

/// A line of running text that quotes a failure: its trigger phrases lie only inside quotes (`…`
/// code spans, or "…" outside them), and the text around the quotes is prose (three words or
/// more, or a phrase in a script without spaces). A quote in a sentence is a report of a
/// failure only when it carries the message's own figures (the scanner checks that); a quote
/// that names the error, `CUDA out of memory` or "RuntimeError: CUDA error: out of memory", is
/// talk about one. A line wrapped whole in backticks has no text around them and is not a
/// quote; nor is one with a code fence or a quote left open (a span cut by a wrap).
pub(crate) fn is_prose_quote(raw: &str) -> bool {
    prose_quotes(raw).is_some()
}

/// Whether `tail` (a line's end) is an exception's class and its colon
/// (`Ryujinx.Graphics.Vulkan.VulkanException:`): the next line is its message.
pub(crate) fn ends_with_exception_class(tail: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(r"(?:^|[\s(]){EXCEPTION_CLASS}\s*:\s*$")).expect("class regex")
    })
    .is_match(tail)
}

/// An exception's class, with its module path (`torch.OutOfMemoryError`,
/// `Ryujinx.Graphics.Vulkan.VulkanException`).
const EXCEPTION_CLASS: &str = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)";

/// A sentence that quotes a whole failure line as the program raised it: a quote holding a
/// trigger phrase opens with its exception class (`MXNetError: cudaMalloc retry failed: out of
/// memory`, `AcceleratorError: CUDA error: out of memory`, `AcceleratorError("…")`). That is a
/// report of a failure, figures or not, where a quote of the error's name (`the CUDA out of
/// memory`, "out of memory") is talk about one. So does a quote ending in an API's status
/// constant, or naming the source file and line the program failed at.
pub(crate) fn quotes_a_whole_failure(raw: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let class = RE.get_or_init(|| {
        Regex::new(&format!(r"^\s*{EXCEPTION_CLASS}\s*[:(]")).expect("class regex")
    });
    // Or a log line's words ending in an API's status constant ("failed to create cublas
    // handle: CUBLAS_STATUS_ALLOC_FAILED"): a program's message copied, not the error's name.
    static STATUS: OnceLock<Regex> = OnceLock::new();
    let status = STATUS.get_or_init(|| {
        Regex::new(r"\w\s*: ?[A-Z][A-Z0-9]{1,15}(?:_[A-Z0-9]{1,20}){2,8}\s*[.!]?\s*$")
            .expect("status regex")
    });
    // Or a line that names where in the program's source it failed ("out of memory in
    // …/cuda_mem_utils.h at line 572 (error-code 2)", "… (kernel.cu:42)", xmrig-cuda's
    // "<randomx_prepare>:45"), or the allocation call that failed ("cudaMalloc dev_pos failed:
    // out of memory"): a message copied whole, not the error's name.
    static AT: OnceLock<Regex> = OnceLock::new();
    let at = AT.get_or_init(|| {
        Regex::new(r"\w\.(?:cu|cuh|h|hpp|cpp|cc|c|py)(?::\d{1,6}\b| at line \d{1,6}\b)|<\w{1,80}>:\d{1,6}\b|\b(?:cuda|hip|cuMem)(?:Malloc|Alloc)\w{0,20} \w{1,60} failed\b")
            .expect("source location regex")
    });
    // Or a driver's or library's own sentence, which no writer words that way (NVIDIA's GL
    // driver's "The NVIDIA OpenGL driver has encountered an out of memory error. This
    // application might behave inconsistently and fail."; Thrust's "parallel_for failed: out of
    // memory"; TensorRT's "Cuda Error in allocate: 2 (out of memory)"): quoted, it is the
    // message.
    static DRIVER: OnceLock<Regex> = OnceLock::new();
    let driver = DRIVER.get_or_init(|| {
        Regex::new(r"\bThe NVIDIA OpenGL driver has encountered\s{1,4}an out of memory error\b|\b(?:parallel_for|for_each|transform|reduce|scan|merge_sort|radix_sort|copy_if|get_temporary_buffer):? failed(?: on \w{1,8} step)?: (?:cudaErrorMemoryAllocation: )?out of memory\b|\bCuda Error in \w{1,40}: 2 \(out of memory\)")
            .expect("driver sentence regex")
    });
    // A question about such a line asks about the error; one led by its class reports it,
    // unless the question mark follows the quote itself ("…which is "RuntimeError: CUDA
    // error: out of memory"? I want to get this answer.").
    let asks = raw.trim_end().ends_with('?');
    if raw.contains("\"?") || raw.contains("\u{201d}?") || raw.contains("`?") {
        return false;
    }
    prose_quotes(raw).is_some_and(|(inside, _)| {
        inside.iter().any(|q| {
            has_trigger(q)
                && (class.is_match(q)
                    || (!asks && (status.is_match(q) || at.is_match(q) || driver.is_match(q))))
        })
    })
}

/// Words that tie a failure to pinned (page-locked) host memory: CUDA's host allocations
/// (`cudaHostAlloc`, `cudaMallocHost`, `cudaHostRegister`, the driver's `cuMemHostAlloc`,
/// `cuMemAllocHost`, `cuMemHostRegister`; HIP's `hipHostMalloc` and `hipHostRegister`) fail with
/// the same out-of-memory code as a device allocation (`cudaErrorMemoryAllocation`, runtime
/// API's error 2; `hipErrorOutOfMemory`), and PyTorch's `pin_memory`
/// goes through them (`aten/src/ATen/cuda/CachingHostAllocator.cpp` calls
/// `C10_CUDA_CHECK(cudaHostAlloc(ptr, size, cudaHostAllocDefault))`, v2.1 to v2.9).
pub(crate) fn names_pinned_host(text: &str) -> bool {
    // Pinning turned off ("with pin_memory=False it still fails") rules it out, not in.
    static OFF: OnceLock<Regex> = OnceLock::new();
    let off =
        OFF.get_or_init(|| Regex::new(r"(?i)pin_memory\s*=\s*false").expect("pinning off regex"));
    let text = off.replace_all(text, "");
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)cuda(?:HostAlloc|MallocHost|HostRegister)|cuMem(?:HostAlloc|AllocHost|HostRegister)",
            r"|hip(?:HostMalloc|HostAlloc|MallocHost|HostRegister)",
            r"|CachingHostAllocator|\bpin_memory\b|\bpin(?:ned)? memory\b|\bpinned host\b",
            r"|\bpage[- ]?lock|锁页|页锁定",
        ))
        .expect("pinned regex")
    })
    .is_match(&text)
}

/// CUDA's and HIP's host-pinning calls by their names alone (`cudaHostAlloc`, `cudaMallocHost`,
/// `cudaHostRegister`, the driver's `cuMemHostAlloc`, `cuMemAllocHost`, `cuMemHostRegister`,
/// `hipHostMalloc`, `hipHostAlloc`, `hipMallocHost`, `hipHostRegister`), PyTorch's
/// `CachingHostAllocator` and the Julia packages' `Mem.HostBuffer` (CUDA.jl's and AMDGPU.jl's
/// page-locked buffers), which make them: a line after a message that relays the runtime's
/// out-of-memory code without its call, naming one of them, names the call that failed.
/// Looser words ("pin_memory", "pinned") are not enough there: a data loader's settings print
/// them beside device failures.
pub(crate) fn names_pinning_call(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"\b(?:cuda|hip)(?:HostAlloc|MallocHost|HostMalloc|HostRegister)\b|\bcuMem(?:HostAlloc|AllocHost|HostRegister)(?:_v2)?\b|\bCachingHostAllocator\b|\bMem\.HostBuffer\b",
        )
        .expect("pinning call regex")
    })
    .is_match(text)
}

/// The quotes of a line of running text that quotes a failure ([`is_prose_quote`]), each one's
/// text, and the writer's words around them; `None` when the line is not one.
fn prose_quotes(raw: &str) -> Option<(Vec<String>, String)> {
    if !raw.contains([
        '`', '"', '\u{201c}', '\u{201d}', '&', '\u{300c}', '\u{300e}',
    ]) || raw.contains("```")
    {
        return None;
    }
    // A page's escaped quotes read as quotes.
    let raw = decode_entities(raw);
    let mut outside = String::new();
    let mut inside: Vec<String> = Vec::new();
    // Quotes that are data, not a writer's: a JSON value or a call's argument, opened right
    // after `:`, `(`, `[` or `=` (`{"msg":"KoboldAI ran out of memory: …"}`, `Err("…")`), or
    // after a comma inside an open parenthesis (a later argument, a Debug tuple's second field:
    // cudarc's `DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")`).
    let mut data: Vec<bool> = Vec::new();
    let mut prev = ' ';
    // The last character before the current run of spaces, and the parentheses open outside
    // quotes.
    let mut before_spaces = ' ';
    let mut depth = 0usize;
    // The open quote, if any: a backtick span holds any other quote mark as text.
    let mut open: Option<char> = None;
    for c in raw.chars() {
        let before = std::mem::replace(&mut prev, c);
        if before != ' ' {
            before_spaces = before;
        }
        match (open, c) {
            (None, '`') => {
                open = Some('`');
                inside.push(String::new());
                data.push(false);
            }
            (None, '"' | '\u{201c}' | '\u{201d}') => {
                open = Some('"');
                inside.push(String::new());
                // Or after a source location ("<cryptonight_extra_cpu_init>:379 "out of
                // memory"", xmrig-cuda's worker): a program's log, not a writer's.
                let located = {
                    let head = outside.trim_end();
                    let digits = head.trim_end_matches(|c: char| c.is_ascii_digit());
                    digits.len() < head.len() && digits.ends_with(':')
                };
                data.push(
                    matches!(before, ':' | '(' | '[' | '=')
                        || (before_spaces == ',' && depth > 0)
                        || located,
                );
            }
            // Japanese corner brackets, a writer's quotes (「CUDA out of memory」が発生する).
            (None, '\u{300c}' | '\u{300e}') => {
                open = Some('\u{300c}');
                inside.push(String::new());
                data.push(false);
            }
            (Some('`'), '`')
            | (Some('"'), '"' | '\u{201c}' | '\u{201d}')
            | (Some('\u{300c}'), '\u{300d}' | '\u{300f}') => {
                open = None;
                outside.push(' ');
            }
            (None, c) => {
                match c {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                outside.push(c)
            }
            (Some(_), c) => {
                if let Some(q) = inside.last_mut() {
                    q.push(c);
                }
            }
        }
    }
    if open.is_some() || has_trigger(&outside) || !inside.iter().any(|q| has_trigger(q)) {
        return None;
    }
    if inside.iter().zip(&data).any(|(q, d)| *d && has_trigger(q)) {
        return None;
    }
    // A test runner's own sentence around the exception it caught, not a writer's: GoogleTest's
    // "C++ exception with description "…" thrown in the test body."
    if outside.contains("exception with description") {
        return None;
    }
    // An exception's own message that quotes its status (Ryujinx's "VulkanException: Unexpected
    // API error "ErrorOutOfDeviceMemory"."): the program's words after its class, not a writer's.
    static CLASS: OnceLock<Regex> = OnceLock::new();
    let class = CLASS.get_or_init(|| {
        Regex::new(r"\b[A-Z]\w*(?:Exception|Error): \S").expect("exception class regex")
    });
    if class.is_match(&outside) {
        return None;
    }
    // Or its place in the program's source, outside the quote (BEAGLE's `CUDA error: "Out of
    // memory" from file <GPUInterfaceCUDA.cpp>, line 645.`): a program's message, not a writer's.
    static PLACE: OnceLock<Regex> = OnceLock::new();
    let place = PLACE.get_or_init(|| {
        Regex::new(r"\w\.(?:cu|cuh|c|cc|cpp|h|hpp)>?(?:,? line \d{1,6}\b|:\d{1,6}\b)")
            .expect("source place regex")
    });
    if place.is_match(&outside) {
        return None;
    }
    let words = outside
        .split_whitespace()
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2)
        .count();
    let unspaced_phrase = outside.split_whitespace().any(|w| {
        w.chars()
            .filter(|c| c.is_alphabetic() && !c.is_ascii())
            .count()
            >= 4
    });
    (words >= 3 || unspaced_phrase).then_some((inside, outside))
}

/// Whether the writer's words around a quoted failure ([`is_prose_quote`]) say it happened to
/// them ("For me it always crashes with `…` message", "When I run it I get `…`"), not talk
/// about one ("if you get `…`, lower the batch", "`…` means …", "it no longer crashes with
/// `…`"): a verb of a failure met, and no word of a condition, advice, an explanation, a
/// negation or a fix. The line that holds the quote is judged, as the scanner sees it.
pub(crate) fn reports_a_failure(raw: &str) -> bool {
    static MET: OnceLock<Regex> = OnceLock::new();
    static TALK: OnceLock<Regex> = OnceLock::new();
    let met = MET.get_or_init(|| {
        Regex::new(r"(?i)\b(?:crash(?:es|ed)|fail(?:s|ed)|got|getting|gives me|gave me|threw|throws|occurred|i get|we get|i see|i'm seeing|i am seeing|r[au]n into|hit|hits|encounter(?:s|ed)|errors out|errored out)\b").expect("met regex")
    });
    let talk = TALK.get_or_init(|| {
        Regex::new(r"(?i)\b(?:if|whenever|when you|avoid|prevent|may|might|could|should|would|means?|meaning|how|why|what|docs?|instead|unless|until|try|not|never|no longer|anymore|without|fix|fixe[sd]|resolved?|got rid)\b|n't\b").expect("talk regex")
    });
    prose_quotes(raw).is_some_and(|(_, outside)| met.is_match(&outside) && !talk.is_match(&outside))
}

/// A message carried inside an escaped string, as a Rust `{:?}` panic (text-generation-inference's
/// router: `Err(Generation("CUDA out of memory. …"))`) or an HTTP JSON body (`{"error": "…\n…"}`)
/// prints it: the first double-quoted string on the line that holds a trigger phrase and whose
/// escapes are clearly there (`\n`, `\"`, `\\`, `\t`, `\uXXXX`), decoded into the lines it
/// stood for (or TensorFlow's allocator statistics). The text before the string and after it are lines of their own (context, not the
/// message). `None` when the line has no such string: nothing is unescaped on a guess (a Windows
/// path's `\new` is not a line break). One pass over the line, which [`cut`] bounds.
pub(crate) fn unescape_string(line: &str) -> Option<Vec<String>> {
    if !line.contains('\\') || !line.contains('"') {
        return None;
    }
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        // A string literal from here to its closing quote (or the line's end, for a cut one).
        let open = i;
        let mut j = i + 1;
        let mut escapes = false;
        while j < b.len() && b[j] != b'"' {
            if b[j] == b'\\' && j + 1 < b.len() {
                escapes |= matches!(b[j + 1], b'n' | b'"' | b'\\' | b't' | b'r' | b'u');
                j += 2;
            } else {
                j += 1;
            }
        }
        let close = j.min(b.len());
        let body = &line[open + 1..close];
        // A trigger phrase, or what the scanner notes besides (TensorFlow's Stats block).
        if escapes && (has_trigger(body) || noted_ac().is_match(body)) {
            let mut out = Vec::new();
            let before = line[..open].trim();
            if !before.is_empty() {
                out.push(before.to_owned());
            }
            out.extend(decode(body).split('\n').map(str::to_owned));
            let after = line.get(close + 1..).unwrap_or("").trim();
            if !after.is_empty() {
                out.push(after.to_owned());
            }
            return Some(out);
        }
        i = close + 1;
    }
    None
}

/// A string literal's escapes decoded (JSON's and Rust's `{:?}`'s): `\n` a line break, `\t` a
/// space, `\r` nothing, `\uXXXX` its character, `\"`, `\\`, `\/` and `\'` themselves; any
/// other backslash is kept as it was.
fn decode(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push(' '),
            Some('r') => {}
            Some('u') => {
                let hex: String = chars.clone().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) if hex.len() == 4 => {
                        out.push(ch);
                        for _ in 0..4 {
                            chars.next();
                        }
                    }
                    _ => out.push_str("\\u"),
                }
            }
            Some(q @ ('"' | '\\' | '/' | '\'')) => out.push(q),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Lines that name an allocation that did not fail the job: TensorFlow's BFC warning that the
/// caller will retry (`freed_by_count`, "not a failure"), however it is wrapped, a failed
/// `mlock` of a host buffer (llama.cpp pins the model in RAM if it can and runs on if not), and
/// TensorRT's builder skipping a tactic ([`is_skipped_tactic`]).
pub fn is_not_a_failure(line: &str) -> bool {
    is_skipped_tactic(line)
        || line.contains("not a failure")
        || line.contains("freed_by_count")
        || line.contains("performance gains if more memory")
        || line.contains("mlock")
        || line.contains("(may not be an issue e.g. torch allocator")
}

/// TensorRT's builder warning that it skipped a tactic (one way to run a layer) whose scratch
/// memory did not fit, and went on with the others: 8.6 and later "\[W\] UNSUPPORTED_STATE:
/// Skipping tactic N due to insufficient memory on requested size of N detected for tactic …",
/// 8.0–8.5 "Tactic Device request: 4360MB Available: 2304MB. Device memory is insufficient to
/// use tactic." The build fails only where no tactic of a layer fits, with an error of its own.
pub fn is_skipped_tactic(line: &str) -> bool {
    line.contains("insufficient to use tactic")
        || (line.contains("kipping tactic") && line.contains("insufficient memory"))
}

/// ROCm's runtime (ROCr) warning that the scratch memory a dispatch asked for could not be
/// allocated or mapped, printed as it retries with fewer waves per compute unit: "Failed to map
/// requested scratch (N) - reducing queue occupancy." (older: without the size), then "N scratch
/// mapped, P% occupancy." The dispatch runs, slower; it fails only where no number of waves fits.
pub fn is_reduced_scratch(line: &str) -> bool {
    line.contains("Failed to map requested scratch")
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

    /// A comment's "--" is a prefix; a flag at a wrapped line's start is the message's.
    #[test]
    fn a_flag_at_a_lines_start_is_kept() {
        assert_eq!(
            normalise("-- RuntimeError: CUDA out of memory."),
            "RuntimeError: CUDA out of memory."
        );
        assert_eq!(
            normalise("--mem-fraction-static."),
            "--mem-fraction-static."
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

    /// Every phrase the scanner looks for holds one of the pieces the fast search looks for,
    /// in lower case; they are few enough for it; and it finds them.
    #[test]
    fn every_phrase_holds_an_anchor() {
        let phrases: Vec<Vec<u8>> = TRIGGERS
            .iter()
            .chain(NOTED)
            .map(|p| p.as_bytes().to_ascii_lowercase())
            .collect();
        let anchors = anchors(&phrases, ANCHOR);
        assert!(anchors.len() <= 64, "{}", anchors.len());
        // A phrase shorter than the pieces is a piece of its own, and a short piece slows the
        // vectorised search on every line: "m|" (a miner's device table, tried and removed)
        // took `explain` on the 10.5 MB prefixed log from 33 to 73 ms.
        assert!(anchors.iter().all(|a| a.len() == ANCHOR), "{anchors:?}");
        for p in &phrases {
            assert!(
                anchors.iter().any(|a| memchr::memmem::find(p, a).is_some()),
                "{}",
                String::from_utf8_lossy(p)
            );
            let line = [b"step 3 loss 0.2\n".as_slice(), p, b" 2 gib"].concat();
            assert!(maybe_noted_at(&line).is_some_and(|at| at >= 16), "{line:?}");
        }
        assert_eq!(maybe_noted_at(b"step 3 loss 0.2 lr 3e-4\nstep 4"), None);
    }

    /// The cover counted down chooses what the plain greedy cover, counted again each round,
    /// chooses: the same pieces in the same order.
    #[test]
    fn the_counted_down_cover_is_the_greedy_cover() {
        fn plain(phrases: &[Vec<u8>], n: usize) -> Vec<Vec<u8>> {
            let mut left: Vec<&[u8]> = phrases.iter().map(Vec::as_slice).collect();
            let mut chosen = Vec::new();
            while !left.is_empty() {
                let mut count: std::collections::BTreeMap<&[u8], usize> = Default::default();
                for p in &left {
                    let pieces: std::collections::BTreeSet<&[u8]> = if p.len() <= n {
                        [*p].into()
                    } else {
                        p.windows(n).collect()
                    };
                    for piece in pieces {
                        *count.entry(piece).or_default() += 1;
                    }
                }
                let best = count
                    .iter()
                    .max_by_key(|(piece, c)| (**c, std::cmp::Reverse(**piece)))
                    .map(|(piece, _)| piece.to_vec())
                    .expect("a piece");
                left.retain(|p| memchr::memmem::find(p, &best).is_none());
                chosen.push(best);
            }
            chosen
        }
        let phrases: Vec<Vec<u8>> = TRIGGERS
            .iter()
            .chain(NOTED)
            .map(|p| p.as_bytes().to_ascii_lowercase())
            .collect();
        for n in [2, 3, 4, 6] {
            assert_eq!(anchors(&phrases, n), plain(&phrases, n), "n = {n}");
        }
        let short = [b"oom".to_vec(), b"out of memory".to_vec(), b"room".to_vec()];
        assert_eq!(anchors(&short, 4), plain(&short, 4));
    }

    /// The automaton and the regex are built from one list, and they must agree line for line:
    /// checked on every line of the corpus, as pasted, in other cases, and with the letters
    /// that Unicode folds from other characters (the long s, the Kelvin sign) in their place.
    #[test]
    fn the_automaton_and_the_regex_agree_on_every_line() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/oom");
        let mut lines = 0;
        let mut hits = 0;
        let mut foreign = 0;
        for entry in std::fs::read_dir(&dir).expect("corpus") {
            let path = entry.expect("entry").path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for line in text.lines() {
                foreign += usize::from(!line.is_ascii());
                for l in [
                    line.to_owned(),
                    line.to_ascii_uppercase(),
                    line.to_ascii_lowercase(),
                    line.replace('s', "\u{17f}"),
                    line.replace(['k', 'K'], "\u{212a}"),
                ] {
                    let re = trigger_re().is_match(&l);
                    assert_eq!(re, has_trigger(&l), "{l:?}");
                    lines += 1;
                    hits += usize::from(re);
                }
            }
        }
        assert!(
            lines > 1000 && hits > 300 && foreign >= 10,
            "{lines} lines, {hits} with a trigger, {foreign} not ASCII"
        );
        // The Kelvin sign is a K to the regex, not to the automaton alone.
        assert!(has_trigger("the \u{212a}v cache is needed: 2 GiB"));
        for l in [
            "│ RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB │",
            "错误：没有足够的内存资源 (0x8007000E)",
            "显存不足，怎么办？",
            "ＣＵＤＡ out of memory",
        ] {
            assert_eq!(trigger_re().is_match(l), has_trigger(l), "{l:?}");
        }
        assert!(!ascii_trigger("the \u{212a}v cache is needed: 2 GiB"));
    }

    #[test]
    fn plain_lines_are_ascii_without_controls_or_markup() {
        assert!(is_plain("step 12 loss 0.31\tlr 3e-4\r"));
        for line in [
            "caf\u{e9}",
            "a\u{1b}[1m",
            "**bold**",
            "`code`",
            "&gt; quote",
            "a\u{7f}",
        ] {
            assert!(!is_plain(line), "{line:?}");
        }
        assert!(is_quiet("step 12 loss 0.31"));
        assert!(!is_quiet("InUse: 3846144"));
        assert!(!is_quiet("... CUDA OUT OF MEMORY ..."));
    }

    /// What a line must start with to finish a phrase begun on the line before: the words
    /// after one of a phrase's spaces.
    #[test]
    fn a_head_continues_a_phrase_only_after_a_space_in_it() {
        for head in [
            "memory. Tried to allocate",
            "Allocate 2 GiB",
            "of memory",
            "KV cache (4096)",
        ] {
            assert!(may_continue_a_trigger(head), "{head:?}");
        }
        for head in ["epoch 3 step 9", "outofmem", "[rank0]: x", "", "emory"] {
            assert!(!may_continue_a_trigger(head), "{head:?}");
        }
    }

    /// A sentence quoting a failure is told from a message: the phrase inside quotes only, and
    /// prose around them.
    #[test]
    fn quotes_in_prose_are_told_from_messages() {
        for line in [
            "After training some epochs, it runs into `the CUDA out of memory` error.",
            "I was trying jaxline with 2 local GPUs, but I receive ` RESOURCE_EXHAUSTED: Out of memory while trying to allocate 285212672 bytes.` errors.",
            "the first launch raises the same \"out of memory\" with 7.3 GB of VRAM free",
            "运行时出现错误：`RuntimeError: CUDA error: out of memory`，锁页内存不足",
            "the run died with &quot;CUDA error: out of memory&quot; at the second step",
            // A comma outside any parenthesis is the writer's.
            "it fails at the second step, \"out of memory\" again and again",
        ] {
            assert!(is_prose_quote(line), "{line:?}");
        }
        for line in [
            // A message, whole, in backticks: no prose around it.
            "`RuntimeError: CUDA error: out of memory`",
            // A list of quoted messages, no sentence.
            "- `can't allocate 3503030272 Bytes of memory on device`, or `failed to allocate SYCL0 buffer`",
            // The phrase outside the quotes.
            "RuntimeError: CUDA out of memory. See `torch.cuda.memory_summary()` for the details",
            // A span cut by a wrap, and a code fence.
            "I receive ` RESOURCE_EXHAUSTED: Out of memory while trying",
            "```CUDA out of memory``` when I run the demo script",
            // Quotes with no failure inside.
            "set `pin_memory=False` in the loader to make it work",
            // An HTTP body's JSON value and a Rust error's argument: data, not a writer's quote.
            r#"Kobold returned error: 507 INSUFFICIENT STORAGE {"detail":{"msg":"KoboldAI ran out of memory: CUDA error: out of memory","type":"out_of_memory.unknown.unknown"}}"#,
            r#"the router panicked with an error value Generation("CUDA error: out of memory") at startup"#,
            // A Debug tuple's later field (cudarc's DriverError, its name broken by a wrap).
            r#"Error: DriverError(CUDA_ERROR_OUT_O F_MEMORY, "out of memory") when loading"#,
            // GoogleTest's report of the exception a test threw (rapidsai/rmm#1486).
            r#"C++ exception with description "std::bad_alloc: out_of_memory: CUDA error at: /x/rmm/mr/device/cuda_memory_resource.hpp:60: cudaErrorMemoryAllocation out of memory" thrown in the test body."#,
            // BEAGLE's relay, HTML-escaped as a page shows it: the same as the line itself.
            r#"CUDA error: "Out of memory" from file <GPUInterfaceCUDA.cpp>, line 645."#,
            "CUDA error: &quot;Out of memory&quot; from file &lt;GPUInterfaceCUDA.cpp&gt;, line 645.",
        ] {
            assert!(!is_prose_quote(line), "{line:?}");
        }
    }

    /// A quote of the whole failure line, exception class first, is a report; a quote of the
    /// error's name is not.
    #[test]
    fn a_quoted_whole_failure_line_is_told_from_the_errors_name() {
        for line in [
            "使用单张GeForce GTX 750 Ti显卡，显存是2G，在训练RetinaFace时报`MXNetError: cudaMalloc retry failed: out of memory`错误",
            "the run died with `AcceleratorError: CUDA error: out of memory` inside the trainer",
            "past what `cuMemHostAlloc` will give raises `AcceleratorError(\"CUDA error: out of memory\")` and leaves the error set",
            "it crashed with `torch.OutOfMemoryError: CUDA out of memory.` on the second step",
            // xmrig-cuda's worker, at its function and line (xmrig/xmrig-cuda).
            "When using xmrig with CUDA on a RTX 2080 Super error ` thread #0 failed with error <randomx_prepare>:45 \"out of memory\"` occur",
            // The allocation call that failed, named (a CUDA course's ICP scan matcher).
            "with \"#define MODEL true\", it always reports \"Cuda error: cudaMalloc dev_pos failed: out of memory.\" I have tried",
            // A driver's and a library's own sentences (Asek3/Oculus#774, NVIDIA/thrust#1006).
            "the game just freezes and then crashes, always with `The NVIDIA OpenGL driver has encountered an out of memory error. This application might behave inconsistently and fail`.",
            "it threw the \"parallel_for failed: out of memory\" at \"H.resize(2000 * 1024 * 1024, 0);\"",
        ] {
            assert!(quotes_a_whole_failure(line), "{line:?}");
        }
        for line in [
            "After training some epochs, it runs into `the CUDA out of memory` error.",
            "the first launch raises the same \"out of memory\" with 7.3 GB of VRAM free",
            "it fails with `CUDA error: out of memory` on every run",
            // A message, not a quote in prose.
            "`RuntimeError: CUDA error: out of memory`",
        ] {
            assert!(!quotes_a_whole_failure(line), "{line:?}");
        }
    }

    /// CUDA's host allocations and PyTorch's pinning are named; a device allocation is not.
    #[test]
    fn words_for_pinned_host_memory() {
        for text in [
            "could not page-lock the base, falling back to pageable RAM",
            "DataLoader(pin_memory=True)",
            "cudaHostAlloc failed",
            "cuMemHostAlloc will give",
            "锁页内存不足",
            "Caught RuntimeError in pin memory thread for device 0.",
            "hipHostRegister returns 2",
            "hipHostMalloc failed",
        ] {
            assert!(names_pinned_host(text), "{text:?}");
        }
        for text in [
            "cudaMalloc failed: out of memory",
            "pinpoint the memory leak",
            "CUDA out of memory",
            "with pin_memory=False it still fails",
        ] {
            assert!(!names_pinned_host(text), "{text:?}");
        }
    }

    /// A JSON body's or a Rust panic's string is decoded into its lines, the wrapper kept
    /// apart; a line with no escaped string holding a trigger is left alone.
    #[test]
    fn an_escaped_string_is_decoded_into_its_lines() {
        assert_eq!(
            unescape_string(
                r#"{"error":"CUDA out of memory. Tried to allocate 2.00 GiB.\nGPU 0 has a \"total\" capacity\u0021","error_type":"generation"}"#
            ),
            Some(vec![
                "{\"error\":".to_owned(),
                "CUDA out of memory. Tried to allocate 2.00 GiB.".to_owned(),
                "GPU 0 has a \"total\" capacity!".to_owned(),
                ",\"error_type\":\"generation\"}".to_owned(),
            ])
        );
        let v = unescape_string(r#"thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: Generation("Request failed: CUDA out of memory.\nTraceback (most recent call last):\n  File \"x.py\"")', router/src/main.rs:10:5"#).expect("decoded");
        assert_eq!(v[1], "Request failed: CUDA out of memory.");
        assert_eq!(v[3], "  File \"x.py\"");
        assert_eq!(v[4], ")', router/src/main.rs:10:5");
        for line in [
            r#"RuntimeError: CUDA out of memory. See "C:\new\nvidia" for more"#,
            r#"{"error":"CUDA out of memory. Tried to allocate 2.00 GiB."}"#,
            r#"{"log":"step 12\nloss 0.3"}"#,
            "no quotes \\n here: out of memory",
        ] {
            assert_eq!(unescape_string(line), None, "{line}");
        }
        // A cut string (no closing quote) and a bad \u escape are read as far as they go.
        let v = unescape_string(r#"{"error":"out of memory\nGPU 0 \uZZ"#).expect("decoded");
        assert_eq!(v[2], "GPU 0 \\uZZ");
    }

    /// The translation's phrases are the trigger phrases that are not ASCII, but for a GPU
    /// API's localised status, and a line that holds one of them with an English phrase is not
    /// a translation's alone.
    #[test]
    fn translation_phrases_are_triggers() {
        let translated: Vec<&str> = TRIGGERS
            .iter()
            .copied()
            .filter(|t| is_translation_phrase(t))
            .collect();
        assert_eq!(translated.len(), 16, "{translated:?}");
        assert!(translated.contains(&"尝试分配") && translated.contains(&"недостаточно памяти"));
        assert!(translated.contains(&"上分配"));
        assert!(only_translated_trigger(
            "RuntimeError: CUDA 内存不足。尝试分配 20.00 MiB"
        ));
        assert!(only_translated_trigger("CUDA НЕДОСТАТОЧНО ПАМЯТИ"));
        assert!(!only_translated_trigger(
            "RuntimeError: CUDA out of memory. 尝试分配 20.00 MiB"
        ));
        assert!(!only_translated_trigger(
            "DmlExecutionProvider: 没有足够的内存资源，无法完成此操作。"
        ));
        assert!(!only_translated_trigger("CUDA out of memory"));
    }

    /// A phrase split between two lines at a space is found only if the second line starts
    /// with what follows that space ([`may_continue_a_trigger`]): a phrase ending in a space
    /// would be complete before the next line, and the quick path would pass over the join.
    #[test]
    fn no_trigger_ends_or_starts_with_a_space() {
        for t in TRIGGERS {
            assert_eq!(t.trim(), *t, "{t:?}");
            assert!(!t.contains("  "), "{t:?}");
        }
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
