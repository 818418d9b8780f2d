//! The table of message families ([`ALL`]): each entry names its messages and its reader, which
//! says what their figures *mean*. The families here read over the structural reader
//! ([`super::read`]), which recognises sizes, roles and devices; the long-established ones are
//! exact patterns in [`super::known`]. The forks of PyTorch's caching allocator are one family
//! with a device table.

use super::known::{self, oom, SIZE};
use super::libraries;
use super::read::{self, Reading, Role};
use super::{Facts, Framework, MemoryKind, Oom, OtherProcess};

/// One family: its name (for tests and docs) and its reader. `parse` returns `None` when the
/// text is not one of its messages.
pub struct Family {
    pub name: &'static str,
    pub parse: fn(&str) -> Option<Oom>,
}

/// Every family, in the order a message is tried: the first that reads it wins. The forks of
/// PyTorch's allocator come before PyTorch's own patterns (they share its tail, "Of the
/// allocated memory…"); the readers by role for wordings no exact pattern knows come last.
/// Adding a framework adds an entry here, its reader and its tests.
pub const ALL: &[Family] = &[
    Family {
        name: "npu-pinned-host",
        parse: npu_pinned_host,
    },
    Family {
        name: "pytorch-1eb",
        parse: pytorch_1eb,
    },
    Family {
        name: "pytorch-fork",
        parse: pytorch_fork,
    },
    Family {
        name: "ggml-cann",
        parse: ggml_cann,
    },
    Family {
        name: "ascend-el0004",
        parse: ascend_runtime,
    },
    Family {
        name: "hpu-pt-devmem",
        parse: gaudi_devmem,
    },
    Family {
        name: "hpu-synhelper",
        parse: gaudi_synhelper,
    },
    Family {
        name: "pytorch-cpu",
        parse: pytorch_cpu,
    },
    Family {
        name: "tensorflow-cpu",
        parse: tensorflow_cpu,
    },
    Family {
        name: "xla-tpu-memory-space",
        parse: xla_tpu_memory_space,
    },
    Family {
        name: "xla-tpu-reserve",
        parse: xla_tpu_reserve,
    },
    Family {
        name: "xla-tpu-exceed",
        parse: xla_tpu_exceed,
    },
    Family {
        name: "xla-tpu-on-chip",
        parse: xla_tpu_on_chip,
    },
    Family {
        name: "mlx",
        parse: mlx,
    },
    Family {
        name: "metal-buffer-validation",
        parse: metal_buffer_validation,
    },
    Family {
        name: "julia-gpu",
        parse: julia_gpu,
    },
    Family {
        name: "xgboost",
        parse: libraries::xgboost,
    },
    Family {
        name: "catboost",
        parse: libraries::catboost,
    },
    Family {
        name: "lightgbm",
        parse: libraries::lightgbm,
    },
    Family {
        name: "faiss",
        parse: libraries::faiss,
    },
    Family {
        name: "sophgo",
        parse: libraries::sophgo,
    },
    Family {
        name: "mindspore",
        parse: libraries::mindspore,
    },
    Family {
        name: "pinned-host",
        parse: known::pinned_host,
    },
    Family {
        name: "xla-cudamallocasync",
        parse: known::xla_cudamallocasync,
    },
    Family {
        name: "trtllm-executor",
        parse: known::trtllm_executor,
    },
    Family {
        name: "trtllm",
        parse: known::trtllm,
    },
    Family {
        name: "lmdeploy-turbomind",
        parse: known::turbomind,
    },
    Family {
        name: "exllamav2-autosplit",
        parse: known::exllamav2_autosplit,
    },
    Family {
        name: "tvm-storage",
        parse: known::tvm_storage,
    },
    Family {
        name: "mlc-llm-budget",
        parse: known::mlc_budget,
    },
    Family {
        name: "mxnet",
        parse: known::mxnet,
    },
    Family {
        name: "libcudf",
        parse: known::libcudf,
    },
    Family {
        name: "rmm",
        parse: known::rmm,
    },
    Family {
        name: "numba",
        parse: known::numba,
    },
    Family {
        name: "pytorch-2.x",
        parse: known::pytorch_2x,
    },
    Family {
        name: "pytorch-alloc-warning",
        parse: pytorch_alloc_warning,
    },
    Family {
        name: "pytorch-cudamallocasync",
        parse: known::pytorch_cudamallocasync,
    },
    Family {
        name: "pytorch-2.x-tail",
        parse: known::pytorch_2x_tail,
    },
    Family {
        name: "pytorch-1.5",
        parse: known::pytorch_15,
    },
    Family {
        name: "pytorch-1.0",
        parse: known::pytorch_10,
    },
    Family {
        name: "mps-buffer-size",
        parse: mps_buffer_size,
    },
    Family {
        name: "mps",
        parse: known::mps,
    },
    Family {
        name: "tensorflow-oom",
        parse: known::tensorflow_oom,
    },
    Family {
        name: "tensorflow-bfc",
        parse: known::tensorflow_bfc,
    },
    Family {
        name: "tensorflow-eigen",
        parse: tensorflow_eigen,
    },
    Family {
        name: "tensorflow-usage-report",
        parse: tensorflow_usage_report,
    },
    Family {
        name: "tgi",
        parse: tgi,
    },
    Family {
        name: "vllm-warmup",
        parse: vllm_warmup,
    },
    Family {
        name: "sglang",
        parse: sglang,
    },
    Family {
        name: "rtp-llm-kv-blocks",
        parse: rtp_llm_kv_blocks,
    },
    Family {
        name: "pytorch-nvml-assert",
        parse: pytorch_nvml_assert,
    },
    Family {
        name: "miopen",
        parse: miopen,
    },
    Family {
        name: "imaginairy",
        parse: imaginairy,
    },
    Family {
        name: "ggml-whisper",
        parse: ggml_whisper,
    },
    Family {
        name: "deepspeed-workspace",
        parse: deepspeed_workspace,
    },
    Family {
        name: "vllm-rs-kvcache",
        parse: known::vllm_rs_kvcache,
    },
    Family {
        name: "vllm-rs-request",
        parse: known::vllm_rs_request,
    },
    Family {
        name: "vllm-kv-tokens",
        parse: known::vllm_kv_tokens,
    },
    Family {
        name: "vllm-kv-cache",
        parse: known::vllm_kv_cache,
    },
    Family {
        name: "vllm-startup",
        parse: known::vllm_startup,
    },
    Family {
        name: "vllm-cache-blocks",
        parse: known::vllm_cache_blocks,
    },
    Family {
        name: "vllm-profile",
        parse: known::vllm_profile,
    },
    Family {
        name: "xla-tpu-hbm",
        parse: known::xla_tpu_hbm,
    },
    Family {
        name: "jax-request",
        parse: known::jax_request,
    },
    Family {
        name: "jax",
        parse: known::jax,
    },
    Family {
        name: "xla-stream-executor",
        parse: xla_stream_executor,
    },
    Family {
        name: "onnxruntime-bfcarena",
        parse: known::onnxruntime_bfcarena,
    },
    Family {
        name: "onnxruntime-arena-limit",
        parse: libraries::onnxruntime_arena_limit,
    },
    Family {
        name: "onnxruntime-dml",
        parse: libraries::onnxruntime_dml,
    },
    Family {
        name: "ggml",
        parse: known::ggml,
    },
    Family {
        name: "ggml-cpu-buffer",
        parse: known::ggml_cpu_buffer,
    },
    Family {
        name: "triton-shared-memory",
        parse: known::triton_shared_memory,
    },
    Family {
        name: "ggml-vulkan",
        parse: known::ggml_vulkan,
    },
    Family {
        name: "ggml-metal",
        parse: known::ggml_metal,
    },
    Family {
        name: "ggml-cuda",
        parse: known::ggml_cuda,
    },
    Family {
        name: "paddle",
        parse: known::paddle,
    },
    Family {
        name: "paddle-device",
        parse: libraries::paddle_device,
    },
    Family {
        name: "paddle-cuda",
        parse: libraries::paddle_cuda,
    },
    Family {
        name: "paddle-enforce",
        parse: known::paddle_enforce,
    },
    Family {
        name: "paddle-bad-alloc",
        parse: libraries::paddle_bad_alloc,
    },
    Family {
        name: "paddle-legacy",
        parse: libraries::paddle_legacy,
    },
    Family {
        name: "cupy",
        parse: known::cupy,
    },
    Family {
        name: "tensorrt",
        parse: known::tensorrt,
    },
    Family {
        name: "onnxruntime-cuda",
        parse: known::onnxruntime_cuda,
    },
    Family {
        name: "cuda-driver",
        parse: known::stream_executor,
    },
    Family {
        name: "rocm-thunk",
        parse: rocm_thunk,
    },
    Family {
        name: "neuron-runtime",
        parse: neuron_runtime,
    },
    Family {
        name: "neuron-nki-sbuf",
        parse: neuron_sbuf,
    },
    Family {
        name: "hami-core",
        parse: hami_core,
    },
    // Simulation, rendering, media and cracking programs in their own words (`api.rs`):
    // before the generic CUDA and API readers, which would read them nameless.
    Family {
        name: "gpu-programs",
        parse: super::api::gpu_programs,
    },
    Family {
        name: "cuda-thrust",
        parse: libraries::thrust,
    },
    Family {
        name: "cuda-programs",
        parse: super::api::cuda_programs,
    },
    Family {
        name: "cuda-code",
        parse: cuda_code,
    },
    Family {
        name: "ggml-cuda-check",
        parse: ggml_cuda_check,
    },
    Family {
        name: "ollama",
        parse: ollama,
    },
    Family {
        name: "cuda-library-check",
        parse: cuda_library_check,
    },
    Family {
        name: "wgpu",
        parse: wgpu,
    },
    Family {
        name: "dxvk",
        parse: dxvk,
    },
    Family {
        name: "openvino-gpu",
        parse: openvino_gpu,
    },
    Family {
        name: "cuda",
        parse: known::raw_cuda,
    },
    Family {
        name: "ggml-backend",
        parse: ggml_backend,
    },
    Family {
        name: "gpu-api",
        parse: super::api::gpu_api,
    },
    Family {
        name: "cuda-relay",
        parse: super::api::cuda_words,
    },
    Family {
        name: "tensorflow-eager",
        parse: tensorflow_eager,
    },
    Family {
        name: "tensorflow-gpu-init",
        parse: tensorflow_gpu_init,
    },
    Family {
        name: "pytorch-loose",
        parse: pytorch_loose,
    },
    Family {
        name: "pytorch-shaped",
        parse: pytorch_shaped,
    },
    Family {
        name: "oom-class-cut",
        parse: oom_class_cut,
    },
    Family {
        name: "pytorch-translated",
        parse: pytorch_translated,
    },
];

/// A fork of PyTorch's caching allocator for another accelerator: the same sentence with its
/// device word, and what is particular to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fork {
    /// The device word its messages print ("NPU").
    pub word: &'static str,
    pub framework: Framework,
    /// Its allocator-config variable, where the fork reads one.
    pub alloc_conf: Option<&'static str>,
    /// The vendor's tool that lists each device's memory and processes.
    pub tool: &'static str,
    /// The variable that picks the visible devices.
    pub visible: &'static str,
    /// The Python module of its memory calls (`torch.npu.memory_summary()`).
    pub module: &'static str,
    /// Whether it frees its cache and retries before raising, as PyTorch's CUDA allocator does
    /// (so `empty_cache()` cannot help and fragmentation remedies apply).
    pub caching_allocator: bool,
}

/// The forks. torch_npu's `NPUCachingAllocator` is PyTorch's allocator ported: it releases its
/// cached blocks (`free_cached_blocks`) and retries before it raises, reads
/// `PYTORCH_NPU_ALLOC_CONF` (`expandable_segments`, `max_split_size_mb`), and prints
/// "current active" (blocks in use, including those a stream has not yet released) beside
/// PyTorch's figures. Cambricon's torch_mlu (`MLUAllocatorConfig` reads
/// `PYTORCH_MLU_ALLOC_CONF`, then PyTorch's own variables) and Moore Threads' torch_musa
/// (`PYTORCH_MUSA_ALLOC_CONF`) port the same allocator. Enflame's GCU and Intel Gaudi's HPU
/// print the sentence from allocators of their own, so no allocator setting is suggested.
pub const FORKS: &[Fork] = &[
    Fork {
        word: "NPU",
        framework: Framework::Npu,
        alloc_conf: Some("PYTORCH_NPU_ALLOC_CONF"),
        tool: "npu-smi info",
        visible: "ASCEND_RT_VISIBLE_DEVICES",
        module: "torch.npu",
        caching_allocator: true,
    },
    Fork {
        word: "MLU",
        framework: Framework::Mlu,
        alloc_conf: Some("PYTORCH_MLU_ALLOC_CONF"),
        tool: "cnmon",
        visible: "MLU_VISIBLE_DEVICES",
        module: "torch.mlu",
        caching_allocator: true,
    },
    Fork {
        word: "MUSA",
        framework: Framework::Musa,
        alloc_conf: Some("PYTORCH_MUSA_ALLOC_CONF"),
        tool: "mthreads-gmi",
        visible: "MUSA_VISIBLE_DEVICES",
        module: "torch.musa",
        caching_allocator: true,
    },
    Fork {
        word: "GCU",
        framework: Framework::Gcu,
        alloc_conf: None,
        tool: "efsmi",
        visible: "TOPS_VISIBLE_DEVICES",
        module: "torch.gcu",
        caching_allocator: false,
    },
    Fork {
        word: "HPU",
        framework: Framework::Hpu,
        alloc_conf: None,
        tool: "hl-smi",
        visible: "HABANA_VISIBLE_MODULES",
        module: "torch.hpu",
        caching_allocator: false,
    },
];

/// The fork a framework is, if it is one.
pub fn fork(framework: Framework) -> Option<&'static Fork> {
    FORKS.iter().find(|f| f.framework == framework)
}

re!(
    fork_re,
    r"\b(NPU|MLU|MUSA|GCU|HPU) out of memory\b[^\n]{0,40}?(?:Tried to allocate|\.)"
);
re!(
    fork_device_id_re,
    r"^\S+ out of memory\. device id: (\d{1,3})\b"
);
re!(
    loose_re,
    r"(?i)\b(CUDA|HIP|XPU) out of memory\. (?:Tried|Attempt) to allocate"
);

/// The facts of a PyTorch-allocator sentence, 1.x form or 2.x, read by role.
fn pytorch_facts(r: &Reading) -> Facts {
    Facts {
        requested_bytes: r.first(Role::Request),
        total_bytes: r.first(Role::Total),
        free_bytes: r.first(Role::Free),
        allocated_bytes: r.first(Role::Allocated),
        reserved_bytes: r.first(Role::Reserved),
        // 1.0's "cached" and 2.x's "reserved by PyTorch but unallocated" are the same memory.
        reserved_unallocated_bytes: r.first(Role::Cached),
        private_pool_bytes: r.first(Role::PrivatePool),
        process_bytes: r.first(Role::ThisProcess),
        allowed_bytes: r.first(Role::Allowed),
        other_processes: r
            .others()
            .into_iter()
            .map(|(pid, bytes)| OtherProcess { pid, bytes })
            .collect(),
        ..Facts::default()
    }
}

/// The 2.x sentence or the 1.x one. PyTorch 2.1's `c10/cuda/CUDACachingAllocator.cpp`
/// printed "has a total capacty of" (fixed later; no other word of the sentence was
/// misspelt), and forks copied the sentence: the word is matched up to the letters both
/// spellings share.
fn pytorch_format(t: &str, two: &'static str, one: &'static str) -> &'static str {
    if t.contains("has a total capac") || t.contains("Of the allocated memory") {
        two
    } else {
        one
    }
}

/// A fork of PyTorch's caching allocator (torch_npu, torch_mlu, torch_musa, GCU, Gaudi).
fn pytorch_fork(t: &str) -> Option<Oom> {
    let c = fork_re().captures(t)?;
    let word = c.get(1)?.as_str();
    let fork = FORKS.iter().find(|f| f.word == word)?;
    let from = c.get(0)?.start();
    let r = read::read(&t[from..]);
    // Moore Threads' torch_musa names the device "GPU N" in both its sentences
    // (`MUSACachingAllocator.cpp`: v1.0.0's "(GPU 0; …", v2.1.1's ". GPU 0 has a total
    // capacity"), as PyTorch's own does; torch_npu, torch_mlu and torch_gcu print their word.
    let device = read::device_named(&t[from..], &[word, "GPU"])
        .and_then(|d| d.index)
        .or_else(|| {
            // torch_npu's failed graph load (`NpuUtils.cpp`, `IsOomError`): "NPU out of
            // memory. device id: N".
            let c = fork_device_id_re().captures(&t[from..])?;
            c.get(1)?.as_str().parse().ok()
        });
    let format = pytorch_format(t, "pytorch-fork-2.x", "pytorch-fork-1.x");
    Some(oom(fork.framework, format, device, pytorch_facts(&r)))
}

/// PyTorch's CUDA/ROCm/XPU sentence with a clause the exact patterns do not know: read by
/// role, so a figure is never lost to a word more.
fn pytorch_loose(t: &str) -> Option<Oom> {
    let c = loose_re().captures(t)?;
    let from = c.get(0)?.start();
    let r = read::read(&t[from..]);
    r.has_request().then_some(())?;
    let framework = match c.get(1)?.as_str().to_ascii_uppercase().as_str() {
        "HIP" => Framework::Hip,
        "XPU" => Framework::Xpu,
        _ => Framework::Pytorch,
    };
    let device = read::device_named(&t[from..], &["GPU", "DEVICE"]).and_then(|d| d.index);
    let format = pytorch_format(t, "pytorch-2.x", "pytorch-1.5");
    let mut f = pytorch_facts(&r);
    // The 1.x sentence puts the total capacity first in its parenthesis ("(GPU 0; 23.65 GiB
    // total capacity; …"): where a paste lost the words after it ("23.65 GiBry Management",
    // two lines run together), the figure at that place is still the total.
    if f.total_bytes.is_none() && format == "pytorch-1.5" {
        f.total_bytes = torch1_first_re()
            .captures(&t[from..])
            .and_then(|c| super::known::sz(&c, 1));
    }
    Some(oom(framework, format, device, f))
}

// The caching allocator's 1.x parenthesis after a request, whatever words head it: "… to
// allocate 386.00 MiB (NPU 1; total capacity 29.49 GiB; allocated 28.90 GiB; …)", as a fork's
// sentence reads when its reporter re-words or back-translates it.
re!(
    shaped_re,
    format!(
        r"(?i:\b(?:tried|attempting|attempt|trying) to allocate) {SIZE}\s*\((NPU|MLU|MUSA|GCU|HPU|GPU|CUDA|XPU) ?(\d{{1,3}});"
    )
);

/// The caching allocator's sentence by its shape alone: a request, then the parenthesis with
/// the device and at least two of the allocator's role clauses (total, free, allocated,
/// reserved, cached). The head words (another wording, a translation back into English) are
/// not needed; the figures mean what PyTorch's (or the fork's) mean.
fn pytorch_shaped(t: &str) -> Option<Oom> {
    let c = shaped_re().captures(t)?;
    let from = c.get(0)?.start();
    let r = read::read(&t[from..]);
    let roles = r.roles_given(&[
        Role::Total,
        Role::Free,
        Role::Allocated,
        Role::Reserved,
        Role::Cached,
    ]);
    (r.has_request() && roles >= 2).then_some(())?;
    let word = c.get(2)?.as_str().to_ascii_uppercase();
    let (framework, format) = match FORKS.iter().find(|f| f.word == word) {
        Some(fork) => (fork.framework, "pytorch-fork-1.x"),
        None if word == "XPU" => (Framework::Xpu, "pytorch-1.5"),
        None => (Framework::Pytorch, "pytorch-1.5"),
    };
    let device = c.get(3).and_then(|m| m.as_str().parse().ok());
    Some(oom(framework, format, device, pytorch_facts(&r)))
}

re!(
    torch1_first_re,
    r"^[^\n(]{0,80}\((?:GPU|Device)\s*\d{1,3}; (\d+(?:\.\d+)? ?[KMGT]i?B)"
);

// An exception class that by itself means a device out-of-memory, then ": " and the first
// words of that framework's own message, however little of it is left (a paste cut short, a
// sentence that runs the error into its words, in any language). Each class and message start
// from its source:
// - PyTorch's `torch.OutOfMemoryError` (`torch.cuda.OutOfMemoryError` before 2.3), raised by
//   `TORCH_CHECK_WITH(OutOfMemoryError, …)`: "CUDA out of memory." (the caching allocator,
//   `c10/cuda/CUDACachingAllocator.cpp`, v2.5.0; "HIP" in ROCm builds), "XPU out of memory."
//   (`c10/xpu/XPUCachingAllocator.cpp`), "Allocation on device N would exceed allowed memory."
//   (`c10/cuda/CUDAMallocAsyncAllocator.cpp`, v2.5.0).
// - CuPy's `cupy.cuda.memory.OutOfMemoryError` (`cupy/cuda/memory.pyx`, v13): "Out of memory
//   allocating {:,} bytes (allocated so far: {:,} bytes".
// - TensorFlow's `ResourceExhaustedError` only with its allocator's words, "OOM when allocating".
// - jaxlib's `XlaRuntimeError` only with "RESOURCE_EXHAUSTED: Out of memory".
// ComfyUI relays PyTorch's message without its class: its execution log's "!!! Exception
// during processing !!! Allocation on device" (`execution.py`, `logging.error(f"!!! Exception
// during processing !!! {ex}")`), its error report's "Exception Type: torch.OutOfMemoryError"
// over "Exception Message: …", and the message its UI showed before those reports ("Error
// occurred when executing KSampler:" then the exception's text on a line of its own), and its
// later banner under a node's name ("Allocation on device" / "This error means you ran out of
// memory on your GPU.").
// A class named alone ("how to avoid torch.cuda.OutOfMemoryError?") is talk, not a report.
re!(
    oom_class_re,
    concat!(
        r"(?:(?:\btorch\.(?:cuda\.|xpu\.)?)?\bOutOfMemoryError:\s*|!!! Exception during processing !!!\s*|\bError occurred when executing [\w .()-]{1,80}:\s*|Exception Type:\s*torch\.(?:cuda\.|xpu\.)?OutOfMemoryError\s*-?\s*Exception Message:\s*)(?:(CUDA|HIP|XPU) out of memory|Allocation on device(?: (\d{1,3}))?)",
        r"|\bcupy(?:_backends)?\.cuda\.memory\.OutOfMemoryError:\s*Out of memory allocating(?: (\d{1,3}(?:,\d{3})+|\d+) bytes)?",
        r"|\bResourceExhaustedError:\s*(?:[^\n]{0,120}?\s)?OOM when allocating",
        r"|\bAllocation on device\s{1,4}This error means you ran out of memory on your GPU\b",
        r"|\bXlaRuntimeError:\s*RESOURCE_EXHAUSTED:\s*Out of memory",
    )
);

/// A device out-of-memory told by its exception class and the start of its message, cut short
/// (see [`oom_class_re`]): what figures the rest still carries are read by role; the device
/// from "Allocation on device N" or the device the text names.
fn oom_class_cut(t: &str) -> Option<Oom> {
    let c = oom_class_re().captures(t)?;
    let whole = c.get(0)?;
    let rest = &t[whole.start()..];
    let r = read::read(rest);
    // A question that names the error ("How to fix torch.cuda.OutOfMemoryError: CUDA out of
    // memory?") asks about one; with no figure of its own it reports none.
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let asks = rest[..line_end].trim_end().ends_with(['?', '\u{ff1f}']);
    if asks && r.figures.is_empty() {
        return None;
    }
    let class = whole.as_str();
    let (framework, format) = if let Some(dev) = c.get(1) {
        let framework = match dev.as_str() {
            "HIP" => Framework::Hip,
            "XPU" => Framework::Xpu,
            _ => Framework::Pytorch,
        };
        (framework, "pytorch-cut")
    } else if class.contains("Allocation on device") {
        (Framework::Pytorch, "pytorch-cudamallocasync")
    } else if class.starts_with("cupy") {
        (Framework::Cupy, "cupy")
    } else if class.contains("OOM when allocating") {
        // A tensor placed on the CPU is the host's RAM ([`tensorflow_cpu`]).
        if rest.contains("/device:CPU:") {
            return None;
        }
        (Framework::Tensorflow, "tensorflow-oom")
    } else {
        (xla_framework(t), "jax")
    };
    let mut f = pytorch_facts(&r);
    if framework == Framework::Cupy {
        f = Facts {
            requested_bytes: c
                .get(3)
                .and_then(|m| m.as_str().replace(',', "").parse().ok()),
            ..Facts::default()
        };
    }
    let device = c
        .get(2)
        .and_then(|m| m.as_str().parse().ok())
        .or_else(|| known::tf_device_index(rest))
        .or_else(|| read::device_named(rest, &["GPU", "CUDA", "HIP", "XPU"]).and_then(|d| d.index));
    Some(oom(framework, format, device, f))
}

// PyTorch's exception class as a translated page leaves it (a class and a device word are not
// translated) with the translation's words for "out of memory" after it: "RuntimeError: CUDA
// 内存不足。", "torch.cuda.OutOfMemoryError: CUDA 内存不足。" (errorcanon.top's zh page),
// and the same sentence in Japanese, Korean and Russian.
re!(
    translated_head_re,
    concat!(
        r"(?:(?-u:\b)(?:torch\.(?:cuda\.|xpu\.)?)?OutOfMemoryError|(?-u:\b)RuntimeError)\s*[:：]\s*",
        r"(CUDA|HIP|XPU|NPU|MLU|MUSA|GCU|HPU)\s*(?:的|の)?\s*",
        r"(?:内存不足|显存不足|内存溢出|メモリ不足|メモリが不足|메모리 부족|메모리가 부족|(?i:недостаточно памяти|не хватает памяти|нехватка памяти))",
    )
);

/// Where a program's line starts: a class named inside a sentence has words of that
/// sentence's script just before it ("遇到 RuntimeError: CUDA 内存不足 时…" is a tip).
fn starts_a_report(t: &str, at: usize) -> bool {
    t[..at]
        .trim_end()
        .chars()
        .next_back()
        .is_none_or(|c| !c.is_alphanumeric() || c.is_ascii())
}

/// PyTorch's allocator sentence translated into another language, by a browser's page
/// translation or by hand (see `read::TRANSLATED` for the words): recognised only by its
/// structure, an allocation phrase with its size and a role clause or a device beside it, or
/// PyTorch's exception class at the head of a line with the translation's "out of memory".
/// Prose that only says 显存不足 or メモリ不足 has neither. The figures mean what PyTorch's
/// (or the fork's) mean; the format says the message was read from a translation.
pub(super) fn pytorch_translated(t: &str) -> Option<Oom> {
    // Either structure needs a figure or the class: a line of prose with neither is done.
    if t.is_ascii() || !(t.bytes().any(|b| b.is_ascii_digit()) || t.contains("Error")) {
        return None;
    }
    let head = translated_head_re()
        .captures(t)
        .filter(|c| c.get(0).is_some_and(|m| starts_a_report(t, m.start())));
    if head.is_none() && !read::translated_request_near_size(t) {
        return None;
    }
    let from = head
        .as_ref()
        .and_then(|c| c.get(0))
        .map_or(0, |m| m.start());
    let rest = &t[from..];
    let r = read::read(rest);
    let roles = r.roles_given(&[
        Role::Total,
        Role::Free,
        Role::Allocated,
        Role::Reserved,
        Role::Cached,
        Role::ThisProcess,
    ]);
    let words = [
        "GPU", "CUDA", "HIP", "XPU", "NPU", "MLU", "MUSA", "GCU", "HPU",
    ];
    let device = read::device_named(rest, &words);
    let structured = r.has_request() && (roles > 0 || device.is_some());
    if head.is_none() && !(structured && names_pytorch(rest, device.as_ref())) {
        return None;
    }
    let line_end = rest.find('\n').unwrap_or(rest.len());
    if head.is_some() && r.figures.is_empty() && rest[..line_end].trim_end().ends_with(['?', '？'])
    {
        return None;
    }
    let word = head
        .as_ref()
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_owned())
        .or_else(|| device.as_ref().map(|d| d.word.clone()))
        .unwrap_or_default();
    let (framework, format) = match FORKS.iter().find(|f| f.word == word) {
        Some(fork) => (fork.framework, "pytorch-fork-translated"),
        None => (
            match word.as_str() {
                "HIP" => Framework::Hip,
                "XPU" => Framework::Xpu,
                _ => Framework::Pytorch,
            },
            "pytorch-translated",
        ),
    };
    Some(oom(
        framework,
        format,
        device.and_then(|d| d.index),
        pytorch_facts(&r),
    ))
}

/// Whether a translated allocation failure is PyTorch's: its name, a CUDA device or a fork's
/// device word (its role words are the caching allocator's, as `read::TRANSLATED` says).
fn names_pytorch(t: &str, device: Option<&read::Device>) -> bool {
    t.contains("PyTorch") || t.contains("pytorch") || t.contains("CUDA") || device.is_some()
}

// PyTorch's caching allocator logs each failed cudaMalloc before it frees its cache and
// retries (`c10/cuda/CUDACachingAllocator.cpp`, `alloc_block`, added by pytorch/pytorch#180946
// in 2.13, v2.13.0 lines 3928-3947: `LOG(WARNING) << "memory allocation failed with OOM on
// device " << device << " while trying to allocate " << size << " bytes (free: " << free << ",
// total: " << total << ")."`), and the same for an expandable segment whose physical memory
// could not be mapped ("expandable_segments: memory mapping failed with OOM on device 0 while
// trying to map 20971520 bytes (free: …, total: …)"). pytorch/pytorch#193195: it fires on
// retries that then succeed; pytorch/pytorch#193391 later made it LOG(INFO). The size is the
// segment asked of the driver (`p.alloc_size`, what "Tried to allocate" prints), in bytes;
// free and total are cudaMemGetInfo's, read after the failure.
re!(
    torch_alloc_warning_re,
    r"memory (?:allocation|mapping) failed with OOM on device (\d+)\s+while trying to (?:allocate|map) (\d+) bytes(?:\s*\(free: (\d+), total: (\d+)\))?"
);

/// PyTorch's allocator warning that a cudaMalloc failed. It comes before the allocator frees
/// its cache and retries, and once more if the retry fails too; only then does it raise "CUDA
/// out of memory. Tried to allocate …" for the same size (one failure: the raise, which says
/// more, is the one explained). A warning with no raise after it was a retry that succeeded.
fn pytorch_alloc_warning(t: &str) -> Option<Oom> {
    let c = torch_alloc_warning_re().captures(t)?;
    let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let f = Facts {
        requested_bytes: num(2),
        free_bytes: num(3),
        total_bytes: num(4),
        ..Facts::default()
    };
    // ROCm's build hipifies the file to HIPCachingAllocator.cpp; the sentence is the same.
    let framework = if t.contains("HIPCachingAllocator") {
        Framework::Hip
    } else {
        Framework::Pytorch
    };
    let device = num(1).and_then(|d| u32::try_from(d).ok());
    Some(oom(framework, "pytorch-alloc-warning", device, f))
}

// Text Generation Inference's Python shard (`server/text_generation_server/models/
// flash_causal_lm.py`, `warmup`): since v1.1.1 (huggingface/text-generation-inference@96a982ad)
// a torch.cuda.OutOfMemoryError while it runs a prefill of `--max-batch-prefill-tokens`
// becomes "Not enough memory to handle N prefill tokens. You need to decrease
// `--max-batch-prefill-tokens`"; v0.9 said "N total tokens with M prefill tokens". The router
// (`backends/v3/src/lib.rs`, `V3Error::NotEnoughMemory`) refuses to start when the KV-cache
// blocks the warm-up left hold fewer tokens than `--max-total-tokens`: "Not enough memory to
// handle `max_total_tokens=N`".
re!(
    tgi_re,
    r"Not enough memory to handle (?:(\d+) (?:total tokens with (\d+) )?prefill tokens|`?max_total_tokens=(\d+)`?)"
);

/// Text Generation Inference: its warm-up prefill ran out of device memory, or the KV cache
/// left after it is smaller than the tokens asked for. Counts of tokens, not bytes: the
/// PyTorch message the warm-up caught (printed first, its cause) has the figures, and is read
/// with it as one failure.
fn tgi(t: &str) -> Option<Oom> {
    let c = tgi_re().captures(t)?;
    let format = if c.get(3).is_some() {
        "tgi-max-total-tokens"
    } else {
        "tgi-warmup"
    };
    Some(oom(Framework::Tgi, format, None, Facts::default()))
}

// vLLM's v1 GPU model runner (`vllm/v1/worker/gpu_model_runner.py`, `_dummy_sampler_run`,
// `_dummy_pooler_run`): an "out of memory" RuntimeError while it warms up the sampler (or the
// pooler) for max_num_seqs requests at once, after the KV cache took its share, is raised
// again as "CUDA out of memory occurred when warming up sampler with N dummy requests. Please
// try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine."
re!(
    vllm_warmup_re,
    r"out of memory occurred when warming up (?:sampler|pooler)\b[^\n]{0,80}? with (\d+) dummy requests"
);

/// vLLM's sampler (or pooler) warm-up ran out of device memory: what the PyTorch error before
/// it (its cause) said is read with it as one failure.
fn vllm_warmup(t: &str) -> Option<Oom> {
    vllm_warmup_re().is_match(t).then_some(())?;
    Some(oom(Framework::Vllm, "vllm-warmup", None, Facts::default()))
}

// SGLang (`python/sglang/srt/model_executor/model_runner.py`, `init_memory_pool`; later
// `pool_configurator.py`, `MemoryPoolConfig`): after the weights, the static pool
// (`--mem-fraction-static` of the memory free at start) leaves no room for KV-cache tokens:
// "Not enough memory. Please try to increase --mem-fraction-static." (newer builds add
// " Current value: mem_fraction_static=F"). At run time its KV pool has no slot left
// (`mem_cache/common.py`, `alloc_for_extend` / `alloc_for_decode`): "Prefill out of memory.
// Try to lower your batch size.\nTry to allocate N tokens." ("Decode out of memory" alike).
re!(
    sglang_re,
    r"Not enough memory\. Please try to increase --mem-fraction-static\.?(?:\s*Current value: mem_fraction_static=(\d*\.?\d+))?|(Prefill|Decode) out of memory\. Try to lower your batch size\.?(?:\s*Try to allocate (\d+) tokens)?"
);

// Its later wording of the same check (`scheduler.py`, 2026): "ValueError: Loaded weights leave
// no GPU memory for the KV cache under --mem-fraction-static=0.7. Raise --mem-fraction-static
// above 0.773 (minimum viable = 1 - available/pre = 0.7721)."
re!(
    sglang_weights_re,
    r"Loaded weights leave no GPU memory for the KV cache under\s+--mem-fraction-static=(\d*\.?\d+)"
);

/// SGLang's KV-cache pool: too small to start, or full at run time (counts of tokens).
fn sglang(t: &str) -> Option<Oom> {
    if let Some(c) = sglang_weights_re().captures(t) {
        let mut o = oom(Framework::Sglang, "sglang-kv-pool", None, Facts::default());
        o.kv_fraction = c.get(1).and_then(|m| m.as_str().parse().ok());
        return Some(o);
    }
    let c = sglang_re().captures(t)?;
    let format = match c.get(2).map(|m| m.as_str()) {
        Some("Prefill") => "sglang-prefill",
        Some(_) => "sglang-decode",
        None => "sglang-kv-pool",
    };
    let mut o = oom(Framework::Sglang, format, None, Facts::default());
    o.kv_fraction = c.get(1).and_then(|m| m.as_str().parse().ok());
    Some(o)
}

// PyTorch's allocators refuse a size of 1 EiB or more before asking for it
// (`CUDACachingAllocator.cpp` and `CUDAMallocAsyncAllocator.cpp`: `TORCH_CHECK_WITH(
// OutOfMemoryError, size < one_exa_bytes, "CUDA out of memory. Tried to allocate more than 1EB
// memory.")`; the forks copy it with their device word): the request is at least 2^60 bytes,
// a size computed from garbage, not a tensor anyone meant.
re!(
    pytorch_1eb_re,
    r"\b(CUDA|HIP|XPU|NPU|MLU|MUSA|GCU|HPU)? ?out of memory\. Tried to allocate more than 1EB memory"
);

fn pytorch_1eb(t: &str) -> Option<Oom> {
    let c = pytorch_1eb_re().captures(t)?;
    let framework = match c.get(1).map(|m| m.as_str()) {
        Some("HIP") => Framework::Hip,
        Some("XPU") => Framework::Xpu,
        Some(word) if word != "CUDA" => FORKS.iter().find(|f| f.word == word)?.framework,
        _ => Framework::Pytorch,
    };
    let f = Facts {
        requested_bytes: Some(1 << 60),
        ..Facts::default()
    };
    Some(oom(framework, "pytorch-1eb", None, f))
}

// MIOpen, ROCm's deep-learning kernels (`src/hip/handlehip.cpp`, `Handle::Create`/`Write`
// buffers): "MIOpen Error: <file>:<line>: Memory not available to allocate buffer: N" when
// hipMalloc for a kernel's buffer (a convolution's workspace while it tunes) fails; TensorFlow
// and PyTorch on ROCm print it before their own error. MIGraphX, ROCm's graph compiler
// (`src/targets/gpu/hip.cpp`, `allocate_gpu`), checks the same way and throws the same words
// after its function's name ("…/hip.cpp:109: allocate_gpu: Memory not available to allocate
// buffer: N"), under ONNX Runtime's MIGraphX provider and torch_migraphx. Both compare the
// request with hipMemGetInfo's free memory before any hipMalloc.
re!(
    miopen_re,
    r"MIOpen Error: [^\n]{0,200}?Memory not available to allocate buffer: (\d+)|\b(allocate_gpu): Memory not available to allocate buffer: (\d+)"
);

fn miopen(t: &str) -> Option<Oom> {
    let c = miopen_re().captures(t)?;
    let f = Facts {
        requested_bytes: c.get(1).or(c.get(3))?.as_str().parse().ok(),
        ..Facts::default()
    };
    let format = if c.get(2).is_some() {
        "migraphx"
    } else {
        "miopen"
    };
    Some(oom(Framework::Rocm, format, None, f))
}

// imaginAIry's model manager (`imaginairy/utils/model_manager.py`) unloads cached models to make
// room before loading one on the device, and gives up with "Unable to make X MB space on
// <device>" when it cannot free enough.
re!(
    imaginairy_re,
    r"Unable to make (\d+(?:\.\d+)?) MB space on (mps|cuda)(?::(\d{1,3}))?"
);

fn imaginairy(t: &str) -> Option<Oom> {
    let c = imaginairy_re().captures(t)?;
    let mb: f64 = c.get(1)?.as_str().parse().ok()?;
    let f = Facts {
        requested_bytes: Some((mb * (1u64 << 20) as f64).round() as u64),
        ..Facts::default()
    };
    let framework = if c.get(2)?.as_str() == "mps" {
        Framework::Mps
    } else {
        Framework::Pytorch
    };
    let device = c.get(3).and_then(|m| m.as_str().parse().ok());
    Some(oom(framework, "imaginairy", device, f))
}

// whisper.cpp (on ggml, `src/whisper.cpp`, `whisper_model_load`): "failed to allocate memory
// for the model" when the backend's buffer for the weights cannot be had; on the device its
// log names ("whisper_default_buffer_type: using device Vulkan0 (…)", "using CUDA0 backend"),
// a device allocation. With no GPU named it is not read here (the CPU backend's is host RAM).
re!(
    whisper_alloc_re,
    r"whisper_model_load: failed to allocate memory for the model"
);
re!(
    whisper_device_re,
    r"using (?:device )?(Vulkan|CUDA|ROCm|SYCL|Metal|MUSA|CANN)(\d*)\b"
);

fn ggml_whisper(t: &str) -> Option<Oom> {
    whisper_alloc_re().find(t)?;
    let c = whisper_device_re().captures(t)?;
    let device = c.get(2).and_then(|m| m.as_str().parse().ok());
    Some(oom(
        Framework::Ggml,
        "ggml-whisper",
        device,
        Facts::default(),
    ))
}

// PyTorch's caching allocator out of memory on a GPU whose NVML will not list its processes:
// `reportProcessMemoryInfo` (`c10/cuda/CUDACachingAllocator.cpp`, 2.1 and later), called only
// where `malloc` raises its out-of-memory error (`if (!block_found)`, after freeing its cache
// and retrying), asserts each NVML call (`TORCH_INTERNAL_ASSERT(NVML_SUCCESS == r)`, and on
// nvmlInit_v2 and nvmlDeviceGetHandleByPciBusId_v2): where NVML cannot answer (Jetson's Tegra
// GPUs, a MIG slice, a container without the query) the assertion replaces the message.
re!(
    nvml_assert_re,
    r"NVML_SUCCESS ==[^\n]{0,120}?INTERNAL ASSERT FAILED at\s*\x22?[^\n\x22]{0,200}CUDACachingAllocator\.cpp"
);

fn pytorch_nvml_assert(t: &str) -> Option<Oom> {
    nvml_assert_re().is_match(t).then(|| {
        oom(
            Framework::Pytorch,
            "pytorch-nvml-assert",
            None,
            Facts::default(),
        )
    })
}

// Alibaba's rtp-llm (maga_transformer) serving a request whose KV cache does not fit in its
// paged cache's free blocks: "failed to malloc 134 blocks, only 28 blocks left" (its server's
// error 514, relayed in the OpenAI-compatible API's HTTP 500 body; alibaba/rtp-llm#66). Counts
// of blocks, not bytes.
re!(
    rtp_blocks_re,
    r"failed to malloc (\d{1,12}) blocks, only (\d{1,12}) blocks left"
);

fn rtp_llm_kv_blocks(t: &str) -> Option<Oom> {
    let c = rtp_blocks_re().captures(t)?;
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let mut o = oom(
        Framework::RtpLlm,
        "rtp-llm-kv-blocks",
        None,
        Facts::default(),
    );
    o.kv_blocks = n(1).zip(n(2));
    Some(o)
}

// PyTorch's MPS allocator (`aten/src/ATen/mps/MPSAllocator.mm`, `alloc_buffer_block`):
// `TORCH_CHECK(size < m_max_buffer_size, "Invalid buffer size: ", format_size(size))`, where
// the limit is the Metal device's maxBufferLength: one tensor larger than a single Metal
// buffer may be, before any memory is asked for.
re!(
    mps_buffer_re,
    r"Invalid buffer size: (\d+(?:\.\d+)?\s?(?:[KMGT]i?B|bytes))"
);

/// PyTorch on Apple GPUs refused one tensor over Metal's largest buffer.
fn mps_buffer_size(t: &str) -> Option<Oom> {
    let c = mps_buffer_re().captures(t)?;
    let f = Facts {
        requested_bytes: c.get(1).and_then(|m| crate::units::parse_size(m.as_str())),
        ..Facts::default()
    };
    Some(oom(Framework::Mps, "mps-buffer-size", None, f))
}

// DeepSpeed's inference kernels (`csrc/transformer/inference/includes/inference_context.h`,
// `GenWorkSpace`): at the first forward they size one workspace from the free memory; when
// less than the minimum is free they print "Requested:\t%lu\nFree:\t%lu\nTotal:\t%lu\n"
// (bytes: the minimum, cudaMemGetInfo's free and total) and throw "Workspace can't be
// allocated, no enough memory."
re!(
    deepspeed_ws_re,
    r"Workspace can't be allocated, no enough memory"
);
re!(
    deepspeed_ws_figures_re,
    r"Requested:\s*(\d+)\s+Free:\s*(\d+)\s+Total:\s*(\d+)"
);

/// DeepSpeed's inference workspace did not fit in the free device memory.
fn deepspeed_workspace(t: &str) -> Option<Oom> {
    deepspeed_ws_re().is_match(t).then_some(())?;
    let c = deepspeed_ws_figures_re().captures(t);
    let num = |i: usize| c.as_ref()?.get(i)?.as_str().parse::<u64>().ok();
    let f = Facts {
        requested_bytes: num(1),
        free_bytes: num(2),
        total_bytes: num(3),
        ..Facts::default()
    };
    Some(oom(Framework::Deepspeed, "deepspeed-workspace", None, f))
}

// torch_npu's pinned host allocator (`torch_npu/csrc/core/npu/CachingHostAllocator.cpp`,
// master and v2.1.0 on): "Malloc pin memory failed, host out of memory, Rried to allocate
// size: N, total_allocated_memory: A, total_reserved_memory: R." (the typo is the source's).
// N is the request in bytes; A is the allocator's active bytes and R its allocated bytes.
re!(
    npu_pinned_re,
    r"Malloc pin memory failed, host out of memory,? \w+ to allocate size: (\d+)"
);

/// torch_npu could not allocate pinned host memory: the host's RAM, not the NPU's.
fn npu_pinned_host(t: &str) -> Option<Oom> {
    let c = npu_pinned_re().captures(t)?;
    let f = Facts {
        requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
        ..Facts::default()
    };
    let mut o = oom(Framework::Npu, "npu-pinned-host", None, f);
    o.memory = MemoryKind::PinnedHost;
    Some(o)
}

re!(
    ascend_el0004_re,
    r"EL0004\b\)?:?[^\n]{0,80}?Failed to allocate memory"
);
// The runtime's traceback lines that carry the size: GE's "Call rtMalloc fail, purpose: …,
// size:N, device_id:D", the driver's "DevMemAlloc huge page failed: deviceId=D, type=2,
// size=N" (`npu_driver.cc`), "alloc device memory failed … size=N": an allocation word, a few
// words, "fail", then the size within the line.
re!(
    ascend_rtmalloc_re,
    r"(?:rtMalloc|[Mm]alloc|[Aa]lloc(?:ate)?|allocation)(?: [\w ]{1,30}?)? fail(?:ed|ure)?\b[^\n]{0,200}?\bsize\s*[:=]\s*(\d+)(?:,\s*device_?id\s*[:=]\s*(\d+))?"
);
// The device where the trace names it elsewhere: torch_npu's error line ("(PID:28794,
// Device:2, RankID:2) ERR00100"), a runtime line's `device_id`, "open device 2 failed".
re!(
    ascend_device_re,
    r"\bDevice:\s*(\d+), RankID|\bdevice_?[iI]d\s*[:=]\s*(\d+)|\bopen device (\d+) failed"
);
// HCCL's communication buffers (MC2 operators) under the same failure: "Failed to allocate
// resource[DeviceMemory] with info [size:2147483648]. Reason: Memory resources are exhausted."
// Only its device memory: another resource (`resource[qp]`) is not memory of the device's.
re!(
    ascend_resource_re,
    r"\bFailed to allocate resource\[DeviceMemory\] with info \[size:(\d{1,20})\]"
);
// torchrun's rank prefixes left inside a line (a paste collapsed onto one line).
re!(ascend_rank_re, r"\[rank\d+\]:\s*");
// The driver's own line under the same failure, where a paste holds it without EL0004's
// (CANN's plog, `npu_driver.cc`): "halMemAlloc failed:size=32(Byte), type=17, …,
// drvRetCode=6, device_id=0!", CANN 5's "DevMemAllocHugePageManaged: … halMemAlloc failed:
// device_id=7, size=15069901824, type=2, env_type=3, drvRetCode=6!" (its keys in another
// order), drvRetCode 6 being DRV_ERROR_OUT_OF_MEMORY (`ascend_hal_error.h`); another code is
// another error.
re!(ascend_hal_re, r"\bhalMemAlloc failed:[^\n!]{0,300}");
re!(
    ascend_hal_key_re,
    r"\b(size|drvRetCode|device_id|deviceId)=(\d{1,20})\b"
);

/// CANN's driver refusing device memory with DRV_ERROR_OUT_OF_MEMORY, read as EL0004's failure.
fn ascend_hal(t: &str) -> Option<Oom> {
    let m = ascend_hal_re().find(t)?;
    let key = |name: &str| -> Option<u64> {
        ascend_hal_key_re()
            .captures_iter(m.as_str())
            .find(|c| &c[1] == name)?
            .get(2)?
            .as_str()
            .parse()
            .ok()
    };
    (key("drvRetCode")? == 6).then_some(())?;
    let f = Facts {
        requested_bytes: key("size"),
        ..Facts::default()
    };
    let device = key("device_id")
        .or_else(|| key("deviceId"))
        .and_then(|d| u32::try_from(d).ok());
    Some(oom(Framework::Npu, "ascend-el0004", device, f))
}

/// Huawei Ascend's CANN runtime (`EL0004`, "Memory_Allocation_Failure"): device memory that
/// the runtime itself, the graph engine (GE: "requested by GE module", `rtMalloc` for page
/// caching) or ACL's memory pool (`memory_pool_manager.cc`, at device open) could not get;
/// not torch_npu's caching allocator, whose sentence is [`pytorch_fork`]'s. The size is the
/// first failed `rtMalloc`'s, where the trace has one.
fn ascend_runtime(t: &str) -> Option<Oom> {
    let t = if t.contains("[rank") {
        ascend_rank_re().replace_all(t, "")
    } else {
        std::borrow::Cow::Borrowed(t)
    };
    let Some(m) = ascend_el0004_re().find(&t) else {
        return ascend_hal(&t);
    };
    let rest = &t[m.start()..];
    let c = ascend_rtmalloc_re().captures(rest);
    let f = Facts {
        requested_bytes: c
            .as_ref()
            .and_then(|c| c.get(1)?.as_str().parse().ok())
            .or_else(|| {
                let r = ascend_resource_re().captures(rest)?;
                r.get(1)?.as_str().parse().ok()
            }),
        ..Facts::default()
    };
    let device = c
        .as_ref()
        .and_then(|c| c.get(2)?.as_str().parse().ok())
        .or_else(|| {
            let c = ascend_device_re().captures(&t)?;
            (1..=3).find_map(|i| c.get(i)?.as_str().parse().ok())
        });
    Some(oom(Framework::Npu, "ascend-el0004", device, f))
}

re!(
    gaudi_devmem_re,
    r"MODULE:(?:PT_)?DEVMEM\s+Allocation failed for size::?\s*(\d+)"
);

re!(
    gaudi_synhelper_re,
    r"MODULE:(?:PT_)?SYNHELPER\s+(?:(\w+)\s+)?Allocation of size\s*::?\s*(\d+)\s+failed"
);

/// The same bridge's SynapseAI helper module (`SYNHELPER`, "SynapseAI helper" in the bridge's
/// log-module mask, PT_HPU_LOG_MOD_MASK 0x8, docs.habana.ai/en/v1.8.0/PyTorch/Runtime_Flags):
/// "FATAL ERROR :: MODULE:SYNHELPER workspace Allocation of size ::10737418240 failed". The
/// workspace is the scratch memory a compiled graph (a recipe) needs on the HPU when it is
/// launched; the size is in bytes. A host allocation named as such is not read.
fn gaudi_synhelper(t: &str) -> Option<Oom> {
    let c = gaudi_synhelper_re().captures(t)?;
    let what = c.get(1).map_or("", |m| m.as_str());
    if what.eq_ignore_ascii_case("host") || what.eq_ignore_ascii_case("pinned") {
        return None;
    }
    let f = Facts {
        requested_bytes: c.get(2)?.as_str().parse().ok(),
        ..Facts::default()
    };
    let format = if what.eq_ignore_ascii_case("workspace") {
        "hpu-synhelper-workspace"
    } else {
        "hpu-synhelper"
    };
    Some(oom(Framework::Hpu, format, None, f))
}

/// Intel Gaudi's PyTorch bridge (`habana_frameworks.torch`): its device-memory module
/// (`PT_DEVMEM`) could not allocate a block of the HPU's HBM: "FATAL ERROR :: MODULE:PT_DEVMEM
/// Allocation failed for size::3288334336 (3136)MB", the size in bytes, then MiB. Not the
/// torch sentence Gaudi also prints ([`pytorch_fork`]).
fn gaudi_devmem(t: &str) -> Option<Oom> {
    let c = gaudi_devmem_re().captures(t)?;
    let f = Facts {
        requested_bytes: c.get(1)?.as_str().parse().ok(),
        ..Facts::default()
    };
    Some(oom(Framework::Hpu, "hpu-pt-devmem", None, f))
}

re!(
    cpu_alloc_re,
    r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory): you tried to allocate (\d+) bytes"
);

/// PyTorch's CPU allocator (`c10/core/impl/alloc_cpu.cpp`): the host's RAM, not a device's.
fn pytorch_cpu(t: &str) -> Option<Oom> {
    let c = cpu_alloc_re().captures(t)?;
    let f = Facts {
        requested_bytes: c.get(1)?.as_str().parse().ok(),
        ..Facts::default()
    };
    let mut o = oom(Framework::Pytorch, "pytorch-cpu", None, f);
    o.memory = MemoryKind::Host;
    Some(o)
}

re!(
    tf_cpu_re,
    r"(?i)OOM when allocating tensor\b[^\n]{0,200}?(?:/device:CPU:\d+|\bby allocator (\w*(?:cpu|_host_bfc)\w*)\b)|\bAllocator \((\w*(?:cpu|_host_bfc)\w*)\) ran out of memory trying to allocate"
);

/// TensorFlow's CPU allocators: `cpu` (`core/framework/cpu_allocator_impl.cc`), oneDNN's
/// `mklcpu` (`core/common_runtime/mkl_cpu_allocator.h`) and any other named for the CPU, or a
/// tensor placed on `/device:CPU:N`. The same "OOM when allocating tensor" sentence as the
/// GPU's BFC allocator, but of the host's RAM. The figures are read as for the GPU's.
fn tensorflow_cpu(t: &str) -> Option<Oom> {
    let m = tf_cpu_re().find(t)?;
    let rest = &t[m.start()..];
    let mut o = known::tensorflow_oom(rest)
        .or_else(|| known::tensorflow_bfc(rest))
        .unwrap_or_else(|| {
            oom(
                Framework::Tensorflow,
                "tensorflow-cpu",
                None,
                Facts::default(),
            )
        });
    o.device_index = None;
    // `gpu_host_bfc` / `cuda_host_bfc` (`gpu_host_allocator.h`): the page-locked host memory
    // TensorFlow stages copies to and from the GPU through.
    if rest.contains("_host_bfc") {
        o.format = "tensorflow-pinned-host";
        o.memory = MemoryKind::PinnedHost;
    } else {
        o.format = "tensorflow-cpu";
        o.memory = MemoryKind::Host;
    }
    Some(o)
}

re!(
    xla_reserve_re,
    r"Attempting to (reserve|allocate) \S+(?: at the bottom of memory)?\.?\s*That was not possible"
);
re!(
    torch_xla_re,
    r"torch[_-]xla|PyTorch/XLA|\bptxla\b|xla_client/xla_util|XRTExecute|Bad StatusOr access"
);

/// The framework an XLA message came through: PyTorch/XLA, JAX (Keras 3 on JAX included) or
/// TensorFlow. Older jaxlib logs from `tensorflow/compiler/xla/…`, so JAX's own names win
/// over the path.
fn xla_framework(t: &str) -> Framework {
    if torch_xla_re().is_match(t) {
        Framework::PytorchXla
    } else if t.contains("jax") || t.contains("Jax") || t.contains("keras") {
        Framework::Jax
    } else if t.contains("Compilation failure") || t.contains("tensorflow") {
        Framework::Tensorflow
    } else {
        Framework::Jax
    }
}

/// The TPU runtime loading a compiled program (`Error loading program`): it reserves the
/// program's memory at the bottom of HBM and could not. "reservable" is what a reservation
/// could have had there (contiguous), "reserved" what earlier programs hold. Its sibling,
/// `Error allocating device buffer: Attempting to allocate X. That was not possible. There are
/// Y free.`, is one array that did not fit.
fn xla_tpu_reserve(t: &str) -> Option<Oom> {
    let c = xla_reserve_re().captures(t)?;
    let whole = c.get(0)?;
    let reserve = c.get(1)?.as_str() == "reserve";
    let r = read::read(&t[whole.start()..]);
    // Newer runtimes add a table ("HBM capacity 8.00G:", "Currently allocated: 6.08G (
    // 6,532,939,776 bytes)", "Program requirement: 3.95G ( 4,237,689,856 bytes)"): the
    // requirement is the same request as the sentence's rounded "reserve 3.95G", in exact
    // bytes, so the last request read wins.
    let mut f = Facts {
        requested_bytes: r
            .figures
            .iter()
            .rev()
            .find(|f| f.role == Some(Role::Request))
            .map(|f| f.bytes),
        total_bytes: r.first(Role::Total),
        allocated_bytes: r.first(Role::Allocated),
        free_bytes: r.first(Role::Free),
        reserved_bytes: r.first(Role::Reserved),
        reservable_bytes: r.first(Role::Reservable),
        ..Facts::default()
    };
    // "reserved" is what earlier programs hold at the bottom of HBM, not an allocator's pool
    // around the allocations: what the table leaves unexplained is capacity less allocated
    // and free, not capacity less free and that reservation.
    if let (Some(total), Some(a), Some(fr)) = (f.total_bytes, f.allocated_bytes, f.free_bytes) {
        f.unaccounted_bytes = Some(total.saturating_sub(a.saturating_add(fr)));
        f.derived.push("unaccounted_bytes");
    }
    let device = read::device_named(t, &["TPU"]).and_then(|d| d.index);
    let format = if reserve {
        "xla-tpu-reserve"
    } else {
        "xla-tpu-allocate"
    };
    Some(oom(xla_framework(t), format, device, f))
}

// The TPU runtime's allocator by memory space: "RESOURCE_EXHAUSTED: Could not allocate 10485760
// bytes in memory 0x0x0_HBM0; 4374528 bytes allocatable, 14942208 bytes available". "available"
// is what is free in that HBM; "allocatable" the most one buffer could have had there (its
// largest free range), so a request under the free memory but over that is memory in pieces.
re!(
    xla_memory_space_re,
    r"\bCould not allocate (\d{1,20}) bytes in memory \w{0,40}?HBM(\d{1,3})\b;?\s{0,3}(\d{1,20}) bytes allocatable,\s{0,3}(\d{1,20}) bytes available\b"
);

fn xla_tpu_memory_space(t: &str) -> Option<Oom> {
    let c = xla_memory_space_re().captures(t)?;
    let n = |i: usize| -> Option<u64> { c.get(i)?.as_str().parse().ok() };
    let f = Facts {
        requested_bytes: n(1),
        reservable_bytes: n(3),
        free_bytes: n(4),
        ..Facts::default()
    };
    Some(oom(xla_framework(t), "xla-tpu-allocate", None, f))
}

re!(
    xla_exceed_re,
    r"Allocation \(size=(\d+)\) would exceed memory \(size=(\d+)\)|TPU TensorCore Hbm usage: (\S+?), SparseCore Hbm usage:? (\S+?), exceeding available bytes: (\S+?)\b"
);

re!(
    xla_on_chip_re,
    r"Ran out of memory in memory space (vmem|smem)\b(?:[.\s]*Used (\d+(?:\.\d+)?[KMGT]?B?) of (\d+(?:\.\d+)?[KMGT]?B?) (?:vmem|smem)\b)?"
);

/// XLA's TPU compiler reporting another memory space than HBM, in the words of its HBM
/// report ("Ran out of memory in memory space vmem. Used 32.42M of 16.00M vmem. Exceeded vmem
/// capacity by 16.42M."): a core's on-chip VMEM or SMEM, whose limit is the compiler's, not
/// the HBM's. PyTorch/XLA surfaces it as "RuntimeError: Bad StatusOr access: …".
fn xla_tpu_on_chip(t: &str) -> Option<Oom> {
    let c = xla_on_chip_re().captures(t)?;
    let size = |i: usize| c.get(i).and_then(|m| crate::units::parse_size(m.as_str()));
    let f = Facts {
        requested_bytes: size(2),
        ..Facts::default()
    };
    let format = if &c[1] == "smem" {
        "xla-tpu-smem"
    } else {
        "xla-tpu-vmem"
    };
    let mut o = oom(xla_framework(t), format, None, f);
    o.memory = MemoryKind::TpuOnChip;
    o.memory_limit_bytes = size(3);
    Some(o)
}

/// The TPU runtime's other two HBM messages: one allocation over the memory there is, and the
/// TensorCore and SparseCore programs together over the HBM available.
fn xla_tpu_exceed(t: &str) -> Option<Oom> {
    let c = xla_exceed_re().captures(t)?;
    let f = if let (Some(n), Some(total)) = (c.get(1), c.get(2)) {
        Facts {
            requested_bytes: n.as_str().parse().ok(),
            total_bytes: total.as_str().parse().ok(),
            ..Facts::default()
        }
    } else {
        let size = |i: usize| c.get(i).and_then(|m| crate::units::parse_size(m.as_str()));
        Facts {
            requested_bytes: size(3).zip(size(4)).map(|(a, b)| a.saturating_add(b)),
            total_bytes: size(5),
            ..Facts::default()
        }
    };
    let device = read::device_named(t, &["TPU"]).and_then(|d| d.index);
    Some(oom(xla_framework(t), "xla-tpu-hbm", device, f))
}

re!(
    mlx_buffer_re,
    r"(?:\[metal::malloc\] )?Attempting to allocate (\d+) bytes which is greater than the maximum allowed buffer size of (\d+) bytes"
);
re!(
    mlx_resource_re,
    r"\[metal::malloc\] Resource limit \((\d+)\) exceeded"
);
re!(
    mlx_unable_re,
    r"\[(?:metal::)?malloc(?:_or_wait)?\] Unable to allocate (\d+) bytes"
);
re!(
    mlx_command_re,
    r"\[METAL\] Command buffer execution failed: Insufficient Memory"
);

/// MLX's Metal allocator (`mlx/backend/metal/allocator.cpp`): one buffer larger than the
/// device's `maxBufferLength`; more buffers than the resource limit (a count); and Metal
/// refusing a command buffer for memory.
fn mlx(t: &str) -> Option<Oom> {
    if let Some(c) = mlx_buffer_re().captures(t) {
        let f = Facts {
            requested_bytes: c.get(1)?.as_str().parse().ok(),
            total_bytes: c.get(2)?.as_str().parse().ok(),
            total_is_limit: true,
            ..Facts::default()
        };
        return Some(oom(Framework::Mlx, "mlx-buffer-size", None, f));
    }
    if let Some(c) = mlx_resource_re().captures(t) {
        let mut o = oom(Framework::Mlx, "mlx-resource-limit", None, Facts::default());
        o.memory = MemoryKind::Buffers;
        o.buffer_limit = c.get(1)?.as_str().parse().ok();
        return Some(o);
    }
    // Older MLX (`malloc_or_wait`): the allocator waited for memory to be freed and gave up.
    if let Some(c) = mlx_unable_re().captures(t) {
        let f = Facts {
            requested_bytes: c.get(1)?.as_str().parse().ok(),
            ..Facts::default()
        };
        return Some(oom(Framework::Mlx, "mlx-unable", None, f));
    }
    mlx_command_re()
        .is_match(t)
        .then(|| oom(Framework::Mlx, "mlx-command-buffer", None, Facts::default()))
}

// Metal's API validation layer (on in a debug run from Xcode) asserting on a buffer longer than
// the device's `maxBufferLength`: "failed assertion `Buffer Validation\nnewBufferWith*:length
// 0x%lx must not exceed %lu MB.`" (ggml-org/ggml#647, an iPhone's 1024 MB). The length is
// hexadecimal bytes; the limit whole MiB.
re!(
    metal_validation_re,
    r"newBufferWith\*:length (0x[0-9A-Fa-f]{1,16}|\d{1,20}) must not exceed (\d{1,9}) MB"
);

/// A Metal buffer over the device's largest (`maxBufferLength`): one buffer, before any memory
/// is asked for. Without the validation layer `newBuffer…` returns nil instead.
fn metal_buffer_validation(t: &str) -> Option<Oom> {
    let c = metal_validation_re().captures(t)?;
    let length = c.get(1)?.as_str();
    let requested = match length.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => length.parse().ok(),
    };
    let f = Facts {
        requested_bytes: requested,
        total_bytes: c.get(2)?.as_str().parse::<u64>().ok()?.checked_mul(1 << 20),
        total_is_limit: true,
        ..Facts::default()
    };
    Some(oom(Framework::Metal, "metal-buffer-validation", None, f))
}

// Julia's GPU packages: CUDA.jl's `OutOfGPUMemoryError` (`src/pool.jl`, `Base.showerror`:
// "Out of GPU memory", " trying to allocate $(Base.format_bytes(sz))" when the size is known,
// then `pool_status`), AMDGPU.jl's of the same name and status. `pool_status` prints "Effective
// GPU memory usage: %.2f%% (%s/%s)" (total − free, from cuMemGetInfo, over the total) and
// "Memory pool usage: %s (%s reserved)" (the pool's live allocations and what it holds);
// CuArrays (before CUDA.jl) "BinnedPool usage: %s (%s allocated, %s cached)".
// `Base.format_bytes` prints "1.863 GiB", "6.750 MiB", "512 bytes".
re!(
    julia_oom_re,
    format!(r"\bOut of GPU memory(?: trying to allocate {SIZE})?")
);
// A CUDA.jl build's warning as its pool starts to free memory and retry, where it logs one
// ("WARNING: CUDA memory allocation failed; attempting to free up memory..."): the status
// (`pool_status`) printed before it is read.
re!(
    julia_retry_re,
    r"\bCUDA memory allocation failed; attempting to free up memory\b"
);
re!(
    julia_usage_re,
    format!(r"Effective GPU memory usage: [\d.]+% \({SIZE}/{SIZE}\)")
);
re!(
    julia_pool_re,
    format!(
        r"Memory pool usage: {SIZE} \({SIZE} reserved\)|\w+ usage: {SIZE} \({SIZE} allocated, {SIZE} cached\)"
    )
);
// CuArrays (and CUDA.jl before 2.0): "CuArrays allocator usage: %s" / "CUDA allocator usage:
// %s", with " (capped at %s)" where a limit is set (`memory.jl`, `usage[]`: what the allocator
// got from CUDA, its cache included; `usage_limit`).
re!(
    julia_allocator_re,
    format!(r"(?:CuArrays|CUDA) allocator usage: {SIZE}(?: \(capped at {SIZE}\))?")
);
re!(
    amdgpu_jl_null_re,
    format!(r"\bhip\w{{0,30}}Malloc\w{{0,30}} resulted in C_NULL for {SIZE}")
);
re!(
    julia_words_re,
    r"(?i)OutOfGPUMemoryError|Effective GPU memory usage:|\bCUDA\.jl\b|\bAMDGPU\b|\bCuArrays?\b|\bjulia>|\.jl:\d+|\bStacktrace:|\bLoadError\b|\b(?:CUDA|AMDGPU)\.\w"
);

/// Julia's GPU packages (CUDA.jl, AMDGPU.jl): "Out of GPU memory trying to allocate X" with the
/// pool's status under it, read only beside Julia's own words (its stack trace, the package).
fn julia_gpu(t: &str) -> Option<Oom> {
    // AMDGPU.jl's `HIPBuffer` (`src/runtime/memory/hip.jl`) asserts that the stream-ordered
    // allocation gave memory: "hipMallocAsync resulted in C_NULL for 8.000 MiB" where the pool
    // had none (HIP returned success with a null pointer, ROCm/hip#3223).
    if let Some(c) = amdgpu_jl_null_re().captures(t) {
        let f = Facts {
            requested_bytes: known::sz(&c, 1),
            ..Facts::default()
        };
        return Some(oom(Framework::Rocm, "amdgpu-jl", None, f));
    }
    let c = julia_oom_re().captures(t);
    if c.is_none() && !julia_retry_re().is_match(t) {
        return None;
    }
    if !julia_words_re().is_match(t) {
        return None;
    }
    // The retry's warning follows the pool's status it printed (before, not after, it).
    let after = match &c {
        Some(c) => &t[c.get(0)?.start()..],
        None => t,
    };
    let mut f = Facts {
        requested_bytes: c.as_ref().and_then(|c| known::sz(c, 1)),
        ..Facts::default()
    };
    if let Some(u) = julia_usage_re().captures(after) {
        f.device_used_bytes = known::sz(&u, 1);
        f.total_bytes = known::sz(&u, 2);
    }
    if let Some(p) = julia_pool_re().captures(after) {
        if p.get(1).is_some() {
            f.allocated_bytes = known::sz(&p, 1);
            f.reserved_bytes = known::sz(&p, 2);
        } else {
            f.allocated_bytes = known::sz(&p, 4);
            f.reserved_unallocated_bytes = known::sz(&p, 5);
            f.reserved_bytes = known::sz(&p, 3);
        }
    }
    // The older allocator's own account: what it holds from CUDA (its cache included), and its
    // cap. Where the pool's line disagrees (its "Discrepancy … between memory pool and
    // allocator"), the allocator's holding stands, and the pool's cache is not derived from it.
    if let Some(a) = julia_allocator_re().captures(after) {
        let held = known::sz(&a, 1);
        if held != f.reserved_bytes {
            f.reserved_unallocated_bytes = None;
        }
        f.reserved_bytes = held;
        f.allowed_bytes = known::sz(&a, 2);
        if f.allocated_bytes.zip(held).is_some_and(|(a, h)| a > h) {
            f.allocated_bytes = None;
        }
    }
    if let (Some(t), Some(u)) = (f.total_bytes, f.device_used_bytes) {
        f.free_bytes = Some(t.saturating_sub(u));
        f.derived.push("free_bytes");
    }
    let (framework, format) = if c.is_none() {
        (Framework::Cuda, "cuda-jl-retry")
    } else if t.contains("AMDGPU") {
        (Framework::Rocm, "amdgpu-jl")
    } else {
        (Framework::Cuda, "cuda-jl")
    };
    Some(oom(framework, format, None, f))
}

re!(
    ggml_buffer_re,
    r"failed to allocate ([A-Za-z]+?)(\d*) buffer of size (\d+)|([a-z]+)_buffer_type_alloc_buffer: (?:can't allocate|error: failed to allocate buffer, size =) ([\d.]+ ?(?:Bytes|MiB|GiB|KiB|B))|can't allocate (\d+) Bytes of memory on device|unable to allocate ([A-Za-z]+?)(\d*) buffer\b"
);
re!(
    ggml_metal_max_re,
    r"ggml_metal_add_buffer: buffer '[^']*' size (\d+) is larger than buffer maximum of (\d+)"
);
// Vulkan's vk::Result, and the SYCL runtime's codes for device memory under Level Zero: Unified
// Runtime's UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (39), Level Zero's own
// ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, and the older Plugin Interface's PI_ERROR_OUT_OF_RESOURCES
// (-5), which the Level Zero plugin returned for ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (DPC++'s
// `pi_level_zero.cpp`, `ze2piResult`), and Unified Runtime's UR_RESULT_ERROR_OUT_OF_RESOURCES
// (40) that llama.cpp and stable-diffusion.cpp meet when a model does not fit (ggml-org/ggml#1072,
// intel/ipex-llm#12872); "Native API failed. Native API returns: N (CODE)" is SYCL's exception
// text around them. The two generic "resources" codes count only beside ggml's own words.
re!(
    ggml_vulkan_oom_re,
    r"ErrorOutOfDeviceMemory|(?:UR|ZE)_RESULT_ERROR_OUT_OF_DEVICE_MEMORY|(?:PI_ERROR|UR_RESULT_ERROR)_OUT_OF_RESOURCES"
);
// llama.cpp's own words (its functions, its programs, ollama's runner): SYCL alone is not
// llama.cpp (PyTorch's XPU, oneAPI programs).
re!(ggml_context_re, r"(?i)ggml|llama|whisper");
re!(ipex_llm_re, r"(?i)\bipex[_-]llm\b");

/// llama.cpp's backends other than CUDA's own line (ggml-alloc's "failed to allocate Vulkan0
/// buffer of size N", SYCL's "can't allocate N Bytes", Metal's "failed to allocate buffer,
/// size = X MiB", Vulkan's and Level Zero's out-of-device-memory errors with no size).
fn ggml_backend(t: &str) -> Option<Oom> {
    // Metal's per-buffer maximum (maxBufferLength), as 2023's ggml-metal checked it.
    if let Some(c) = ggml_metal_max_re().captures(t) {
        let f = Facts {
            requested_bytes: c.get(1)?.as_str().parse().ok(),
            total_bytes: c.get(2)?.as_str().parse().ok(),
            total_is_limit: true,
            ..Facts::default()
        };
        return Some(oom(Framework::Ggml, "ggml-metal-max-buffer", None, f));
    }
    if let Some(c) = ggml_buffer_re().captures(t) {
        // SYCL's "can't allocate N Bytes of memory on device" may come without its function.
        let backend = c
            .get(1)
            .or_else(|| c.get(4))
            .or_else(|| c.get(7))
            .map_or("sycl".to_owned(), |m| m.as_str().to_ascii_lowercase());
        if backend == "cpu" {
            return None;
        }
        let requested = match c.get(3).or_else(|| c.get(6)) {
            Some(n) => n.as_str().parse().ok(),
            None => c
                .get(5)
                .and_then(|m| crate::units::parse_size(&m.as_str().replace("Bytes", "bytes"))),
        };
        let device = c
            .get(2)
            .or_else(|| c.get(8))
            .and_then(|d| d.as_str().parse().ok());
        let format = match backend.as_str() {
            "vulkan" => "ggml-vulkan",
            "sycl" => "ggml-sycl",
            "metal" => "ggml-metal",
            "rocm" => "ggml-rocm",
            "cann" => "ggml-cann",
            _ => "ggml",
        };
        let f = Facts {
            requested_bytes: requested,
            ..Facts::default()
        };
        return Some(oom(Framework::Ggml, format, device, f));
    }
    let m = ggml_vulkan_oom_re().find(t)?;
    let sycl = !m.as_str().starts_with("Error");
    // IPEX-LLM's own PyTorch path names Llama models without being llama.cpp; its llama.cpp
    // builds print ggml's words.
    let ipex = ipex_llm_re().is_match(t) && !t.contains("ggml");
    if ipex || !ggml_context_re().is_match(t) {
        // A Level Zero device out of memory with no program's words around it: an Intel GPU
        // through SYCL, whose program the text does not say. PI_ERROR_OUT_OF_RESOURCES alone
        // is not enough (the plugin returned it for other resources too); beside IPEX-LLM's
        // words it is a model that does not fit, as beside llama.cpp's (intel/ipex-llm#12872).
        return (sycl && (m.as_str().contains("OUT_OF_DEVICE_MEMORY") || ipex))
            .then(|| oom(Framework::Unknown, "level-zero", None, Facts::default()));
    }
    let format = if sycl { "ggml-sycl" } else { "ggml-vulkan" };
    Some(oom(Framework::Ggml, format, None, Facts::default()))
}

// ggml's CANN backend (`ggml-cann/ggml-cann.cpp`, `ggml_backend_cann_buffer_type_alloc_buffer`,
// b3000 to b7000): "%s: allocating %.2f MiB on device %d: aclrtMalloc failed: %s" with CANN's
// recent error message (EL0004 for memory). It comes before the CANN runtime's own reader, which
// would read the EL0004 text without llama.cpp's request and device.
re!(
    ggml_cann_re,
    format!(
        r"allocating {} on device (\d+): aclrtMalloc failed",
        known::SIZE
    )
);

/// llama.cpp on Huawei Ascend (ggml's CANN backend): the buffer it asked for, and the NPU.
fn ggml_cann(t: &str) -> Option<Oom> {
    let c = ggml_cann_re().captures(t)?;
    let f = Facts {
        requested_bytes: known::sz(&c, 1),
        ..Facts::default()
    };
    let device = known::num(&c, 2).and_then(|d| u32::try_from(d).ok());
    Some(oom(Framework::Ggml, "ggml-cann", device, f))
}

// ggml's CUDA backend, also built for ROCm/HIP and MUSA (`ggml-cuda/common.cuh` and
// `ggml-cuda.cu`, `ggml_cuda_error`, b1500 to b7000): GGML_CUDA_NAME " error: %s\n  current
// device: %d, in function %s at %s:%d\n  %s\n", GGML_CUDA_NAME being "CUDA", "ROCm" or "MUSA".
re!(
    ggml_cuda_check_re,
    r"\b(CUDA|ROCm|MUSA) error: out of memory\s*current device: (\d+), in function \S+ at (\S+)"
);

/// llama.cpp's CUDA check on any of its CUDA-like backends: the device, no size. The function's
/// file names ggml (`ggml-cuda.cu`, `ggml-cuda/…`), or the paste does.
fn ggml_cuda_check(t: &str) -> Option<Oom> {
    let c = ggml_cuda_check_re().captures(t)?;
    let ours =
        c.get(3).is_some_and(|p| p.as_str().contains("ggml")) || ggml_context_re().is_match(t);
    if !ours {
        return None;
    }
    let device = known::num(&c, 2).and_then(|d| u32::try_from(d).ok());
    Some(oom(
        Framework::Ggml,
        "ggml-cuda-check",
        device,
        Facts::default(),
    ))
}

// Ollama's Go server before v0.30 made llama-server its only runner (`llm/server.go`, removed
// by ollama/ollama#16031; the layout error from v0.12's new engine, the system-memory check
// older): the layout of the model's layers over the GPUs and system memory that
// could not be allocated ("memory layout cannot be allocated", "… with num_gpu = N" where the
// user fixed the layer count, so it does not back off); the part of the model kept in system
// memory over what is free ("model requires more system memory (X) than is available (Y)",
// `format.HumanBytes2`, host RAM plus swap); and the runner's own failure relayed ("llama runner
// process has terminated: cudaMalloc failed: out of memory", `llm/status.go`'s error prefixes).
re!(
    ollama_re,
    r"memory layout cannot be allocated(?: with num_gpu = (\d+))?|model requires more system memory \(([^)]{1,32})\) than is available \(([^)]{1,32})\)|llama runner process has terminated: (?:error:? ?)?(?:cudaMalloc|hipMalloc) failed: out of memory"
);

/// Ollama's own words for a model that does not fit; its runner is llama.cpp's (framework ggml).
fn ollama(t: &str) -> Option<Oom> {
    let c = ollama_re().captures(t)?;
    if let Some(need) = c.get(2) {
        let f = Facts {
            requested_bytes: crate::units::parse_size(need.as_str()),
            free_bytes: c.get(3).and_then(|m| crate::units::parse_size(m.as_str())),
            ..Facts::default()
        };
        let mut o = oom(Framework::Ggml, "ollama-system-memory", None, f);
        o.memory = MemoryKind::Host;
        return Some(o);
    }
    let format = if c
        .get(0)
        .is_some_and(|m| m.as_str().starts_with("memory layout"))
    {
        "ollama-layout"
    } else {
        "ollama-runner"
    };
    // The runner's own log beside Ollama's line: ggml-alloc's "ggml_gallocr_reserve_n: failed to
    // allocate CUDA0 buffer of size N" (`ggml/src/ggml-alloc.c`) or ggml-backend's
    // "…_buffer_type_alloc_buffer: allocating N MiB on device D" names the request and the
    // device Ollama's line leaves out; the most specific figures win.
    let mut f = Facts::default();
    let mut device = None;
    if format == "ollama-runner" {
        if let Some(g) = ggml_backend(t).filter(|g| g.memory == MemoryKind::Device) {
            f.requested_bytes = g.facts.requested_bytes;
            device = g.device_index;
        }
    }
    Some(oom(Framework::Ggml, format, device, f))
}

// Libraries whose own CUDA check relays the runtime's error string: CTranslate2 (faster-whisper,
// WhisperX; `include/ctranslate2/cuda/utils.h`, v1 to v4: `THROW_RUNTIME_ERROR("CUDA failed with
// error " + cudaGetErrorString(status))`, in onmt's day with " at FILE:LINE"), and the
// `CUDA_CHECK_RETURN` macro of NVIDIA's samples that bitsandbytes kept (`csrc/ops.cuh`, 0.35 to
// 0.43: `fprintf(stderr, "Error %s at line %d in file %s\n", cudaGetErrorString(...), …)`).
re!(
    cuda_library_check_re,
    r"CUDA failed with error out of memory|\bError out of memory at line \d+ in file (\S+)"
);

/// CUDA's out-of-memory code as a library's own check words it: framework `cuda`, the relay in
/// the format. Neither names the call, so no size.
fn cuda_library_check(t: &str) -> Option<Oom> {
    let c = cuda_library_check_re().captures(t)?;
    let format = if c.get(1).is_some() {
        "cuda-check-return"
    } else {
        "cuda-ctranslate2"
    };
    Some(oom(Framework::Cuda, format, None, Facts::default()))
}

// wgpu-core's `DeviceError::OutOfMemory` (`wgpu-core/src/device/mod.rs`, 0.13 to 24:
// "Not enough memory left", with a full stop from 0.18; before 0.13 "not enough memory left"), which wgpu-hal returns when the back end
// answers out of memory (Vulkan's ERROR_OUT_OF_DEVICE_MEMORY or _HOST_MEMORY, Metal's and
// D3D12's), wrapped by wgpu's error sink as "wgpu error: Validation Error / Caused by: In
// Device::create_buffer / Not enough memory left." (the call that failed named). From wgpu 25
// the error sink's own `Error::OutOfMemory` prints "wgpu error: Out of Memory" (ruffle#21982);
// Bevy's renderer logs the same error through its own handler (`bevy_render::error_handler`,
// "Caught rendering error: Out of Memory", 0.17 on).
re!(
    wgpu_re,
    r"\b(?:[Ii]n )?(?:Device|Queue)::(\w+)[^\n]{0,200}?(?i:not enough memory left)|wgpu[^\n]{0,200}?(?i:not enough memory left)|\bwgpu error: Out of Memory\b|\bbevy_render::error_handler: Caught rendering error: Out of Memory\b"
);

// OpenVINO's GPU plugin (`src/plugins/intel_gpu/src/runtime/ocl/`): `ocl_engine.cpp` answers an
// OpenCL buffer that could not be allocated (CL_MEM_OBJECT_ALLOCATION_FAILURE,
// CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY, CL_INVALID_BUFFER_SIZE) with "[GPU] out of GPU
// resources"; `ocl_stream.cpp` a CL_OUT_OF_RESOURCES from a queued kernel with its own advice
// ("… Please try to update the driver or reduce memory consumption (use smaller batch size, less
// streams, lower precision, etc)to avoid CL_OUT_OF_RESOURCES exception").
// `force_exit` (`ocl_common.hpp`) prints "[GPU] force exit." before that advice, and is called
// only after a CL_OUT_OF_RESOURCES (a paste may keep the status a few lines above, from
// oneDNN's verbose log, and cut the advice). From 2025, `rethrow` raises "[GPU]
// CL_OUT_OF_RESOURCES exception." (then "Due to a driver bug, any subsequent OpenCL API call
// may cause the application to hang …") where the device is still there, and says itself that
// the status means "an actual lack of memory" or "an out-of-bounds access to GPU memory from a
// kernel".
re!(
    openvino_gpu_re,
    r"\[GPU\] out of GPU resources|\[GPU\] Exceeded max size of memory allocation\b|reduce memory consumption \(use smaller batch size, less streams, lower precision, etc\) ?to avoid CL_OUT_OF_RESOURCES|\[GPU\] CL_OUT_OF_RESOURCES exception\b|(?s:CL_OUT_OF_RESOURCES.{0,2000}?\[GPU\] force exit\.)"
);
// `ocl_engine.cpp`'s check before it allocates (`exceed_allocatable_mem_size`): "[GPU] Exceeded
// max size of memory object allocation: requested N bytes, but max alloc size supported by
// device is M bytes." M is CL_DEVICE_MAX_MEM_ALLOC_SIZE, the largest single buffer.
re!(
    openvino_max_alloc_re,
    r"\[GPU\] Exceeded max size of memory object allocation: requested (\d{1,20}) bytes, but max alloc size supported by device is (\d{1,20}) bytes"
);

/// OpenVINO on an Intel GPU (or through ONNX Runtime's OpenVINO provider): its OpenCL buffers
/// did not fit, or one buffer was larger than the device allows in one allocation. On an
/// integrated GPU that memory is a share of the system's RAM.
fn openvino_gpu(t: &str) -> Option<Oom> {
    let mut f = Facts::default();
    if let Some(c) = openvino_max_alloc_re().captures(t) {
        f.requested_bytes = c.get(1).and_then(|m| m.as_str().parse().ok());
        f.max_alloc_bytes = c.get(2).and_then(|m| m.as_str().parse().ok());
    } else {
        openvino_gpu_re().find(t)?;
    }
    Some(oom(Framework::OpenCl, "openvino-gpu", None, f))
}

// DXVK's allocator (doitsujin/dxvk, `src/dxvk/dxvk_memory.cpp`, `logMemoryError` and
// `logMemoryStats`; d9vk, its D3D9 fork, the same): "DxvkMemoryAllocator: Memory allocation
// failed", the request's "Size: N" (bytes), then one line per Vulkan memory heap, "Heap 0: A MB
// allocated, U MB used, D MB allocated (driver), B MB budget (driver), T MB total" (d9vk's "B MB
// available (driver)" is the same budget; without VK_EXT_memory_budget the driver's two are
// left out). "allocated" is what DXVK holds in its chunks, "used" its live resources, the
// driver's "allocated" the process's use of the heap and "budget" what VK_EXT_memory_budget
// says the process may use. Heap 0 is the card's memory on discrete GPUs (NVIDIA's, RADV's and
// AMD's drivers list the device-local heap first); the others are system memory or the small
// host-visible window of VRAM.
re!(
    dxvk_re,
    r"DxvkMemoryAllocator: Memory allocation failed\b(?:[^\n]{0,200}?\bSize:\s*(\d{1,20})\b)?"
);
re!(
    dxvk_heap0_re,
    r"\bHeap 0: (\d{1,9}) MB allocated, (\d{1,9}) MB used,(?: (\d{1,9}) MB allocated \(driver\), (\d{1,9}) MB (?:budget|available) \(driver\),)? (\d{1,9}) MB total\b"
);

/// DXVK (D3D9/10/11 on Vulkan: Wine, Proton, the Steam Deck) out of device memory, with the first
/// heap's figures.
fn dxvk(t: &str) -> Option<Oom> {
    let c = dxvk_re().captures(t)?;
    let mut f = Facts {
        requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
        ..Facts::default()
    };
    // A wrapped terminal splits the heap's line inside its words ("11670 MB\n budget"): read
    // with the spaces around the breaks made one.
    let after = &t[c.get(0)?.start()..];
    let joined = after.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(h) = dxvk_heap0_re().captures(&joined) {
        let mib = |i: usize| super::banner::mib(&h, i);
        f.reserved_bytes = mib(1);
        f.allocated_bytes = mib(2);
        f.process_bytes = mib(3);
        f.allowed_bytes = mib(4);
        f.total_bytes = mib(5);
    }
    Some(oom(Framework::Vulkan, "dxvk", None, f))
}

/// wgpu's device out of memory: Burn's and Candle's wgpu back ends, Bevy, other Rust programs.
fn wgpu(t: &str) -> Option<Oom> {
    // wgpu-core's check before it creates a buffer (`CreateBufferError::MaxBufferSize`): "Buffer
    // size N is greater than the maximum buffer size (M)", M the device's `max_buffer_size`
    // limit (256 MiB by default, what the adapter allows where the program asks for more).
    if let Some(c) = wgpu_max_buffer_re().captures(t) {
        let f = Facts {
            requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
            max_alloc_bytes: c.get(2).and_then(|m| m.as_str().parse().ok()),
            ..Facts::default()
        };
        return Some(oom(Framework::Wgpu, "wgpu-max-buffer", None, f));
    }
    // wgpu-core 0.12's own `DeviceError::OutOfMemory` unwrapped ("called `Result::unwrap()` on
    // an `Err` value: OutOfMemory', …/wgpu-core-0.12.2/src/command/mod.rs:78:49").
    if wgpu_core_oom_re().is_match(t) {
        return Some(oom(Framework::Wgpu, "wgpu-device", None, Facts::default()));
    }
    if let Some(c) = gfx_hal_re().captures_iter(t).last() {
        let mut o = oom(Framework::Wgpu, "wgpu-device", None, Facts::default());
        if &c[1] == "Host" {
            o.memory = MemoryKind::Host;
        }
        return Some(o);
    }
    wgpu_re().find(t)?;
    Some(oom(Framework::Wgpu, "wgpu-device", None, Facts::default()))
}

// wgpu before 0.7 ran on gfx-hal, whose `device::OutOfMemory` is `Host` or `Device`; wgpu-core
// unwrapped its memory allocator's errors, so a panic prints them by Debug
// ("`Err` value: AllocationError(OutOfMemory(Device))", gfx-rs/wgpu#548).
re!(gfx_hal_re, r"[(: ]OutOfMemory\((Device|Host)\)");
re!(
    wgpu_core_oom_re,
    r"\bErr`? value: OutOfMemory', [^\n]{0,200}?\bwgpu-(?:core|hal)-\d"
);

re!(
    wgpu_max_buffer_re,
    r"\bBuffer size (\d{1,20}) is greater than the maximum buffer size \((\d{1,20})\)"
);

re!(
    tf_eager_re,
    r"(?:ResourceExhaustedError|RESOURCE_EXHAUSTED)\b[^\n]{0,300}?failed to allocate memory|failed to allocate memory \[Op:\w+\]"
);

/// TensorFlow 2's eager error (`ResourceExhaustedError: … failed to allocate memory
/// [Op:AddV2]`): the op that failed, its device; the size is in the BFC line before it, when
/// the paste has it.
fn tensorflow_eager(t: &str) -> Option<Oom> {
    tf_eager_re().find(t)?;
    let device = known::tf_device_index(t);
    Some(oom(
        Framework::Tensorflow,
        "tensorflow-eager",
        device,
        Facts::default(),
    ))
}

re!(
    tf_eigen_re,
    r"EigenAllocator for GPU ran out of memory when allocating (\d+)|Ran out of GPU memory when allocating (\d+) bytes for\b"
);

// TensorFlow's report of the largest live tensors when an op runs out of memory with
// `report_tensor_allocations_upon_oom` (`StepStatsCollector::ReportAllocsOnResourceExhausted`,
// `core/common_runtime/step_stats_collector.cc`): "Current usage from device: DEVICE, allocator:
// NAME" and then "  SIZE from NODE" for each, printed only inside a ResourceExhaustedError.
re!(
    tf_usage_report_re,
    r"Current usage from device: ([^\s,]{1,200}), allocator: (\w{1,60})"
);

/// The report alone, where a paste starts there (the error's head, with the tensor that did not
/// fit, left out): TensorFlow's failure on that device's allocator, without its figures. The
/// sizes it lists are single tensors, not the allocator's totals, and are not summed.
fn tensorflow_usage_report(t: &str) -> Option<Oom> {
    let c = tf_usage_report_re().captures(t)?;
    let device = known::tf_device_index(c.get(1)?.as_str());
    let mut o = oom(
        Framework::Tensorflow,
        "tensorflow-usage-report",
        device,
        Facts::default(),
    );
    if let Some((format, memory)) = c
        .get(2)
        .and_then(|n| known::tf_host_allocator(n.as_str().trim_end_matches("_bfc")))
    {
        o.format = format;
        o.memory = memory;
        o.device_index = None;
    }
    Some(o)
}

/// TensorFlow's Eigen allocator on the GPU (`common_runtime/gpu/gpu_device.cc`,
/// `EigenGpuStreamDevice::allocate`): an Eigen kernel's scratch memory, asked of the device's
/// BFC allocator, did not come: "Ran out of GPU memory when allocating N bytes for OP" as the
/// op's error, or, outside an op, a fatal "EigenAllocator for GPU ran out of memory when
/// allocating N". The BFC allocator refuses a request of 0 bytes (`AllocateRawInternal`
/// returns null after "tried to allocate 0 bytes"), so N = 0 is an empty tensor, not memory
/// running out ([`super::diagnose`] says so).
fn tensorflow_eigen(t: &str) -> Option<Oom> {
    let c = tf_eigen_re().captures(t)?;
    let f = Facts {
        requested_bytes: c.get(1).or_else(|| c.get(2))?.as_str().parse().ok(),
        ..Facts::default()
    };
    // The message names no device; the failing node after it may ("…_device=\"/job:…/device:
    // GPU:0\"").
    let node = known::tf_failing_node(&t[c.get(0)?.end()..]);
    let o = oom(
        Framework::Tensorflow,
        "tensorflow-eigen",
        node.and_then(|n| n.device),
        f,
    );
    Some(o)
}

re!(
    rocm_thunk_re,
    r"\[hsaKmtAllocMemory(?:Align)?\] failed to allocate (\d+) bytes from (device|scratch|host)|hsa_amd_memory_pool_allocate failed[^\n]{0,40}?HSA_STATUS_ERROR_OUT_OF_RESOURCES"
);
re!(
    hip_log_re,
    r"\bAllocation failed : Device memory : required :(\d{1,20}) \| free :(\d{1,20}) \| total :(\d{1,20})"
);
re!(
    rocm_pool_size_re,
    format!(
        r"allocating {} on device (\d+): hsa_amd_memory_pool_allocate failed",
        known::SIZE
    )
);

/// ROCm below HIP: the kernel driver's thunk (`libhsakmt`, `hsaKmtAllocMemory` in ROCT's
/// `src/memory.c`, `hsaKmtAllocMemoryAlign` in later releases) prints "[hsaKmtAllocMemory] failed to allocate N bytes from device" when
/// the KFD cannot give VRAM (`HSAKMT_STATUS_NO_MEMORY`), "from scratch" for a queue's scratch
/// (device memory too), and "from host" for GPU-mapped system memory: host memory. ROCr's
/// `hsa_amd_memory_pool_allocate` returns `HSA_STATUS_ERROR_OUT_OF_RESOURCES` for the same
/// failure, which programs on HSA print with their request where they have one (ggml's HSA
/// backend: "allocating X MiB on device N: hsa_amd_memory_pool_allocate failed: …").
fn rocm_thunk(t: &str) -> Option<Oom> {
    // HIP's runtime log (AMD_LOG_LEVEL, `hip_memory.cpp`): "Allocation failed : Device memory :
    // required :N | free :F | total :T", in bytes, after ROCclr's "Video memory allocation
    // failed!".
    if let Some(c) = hip_log_re().captures(t) {
        let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse().ok());
        let f = Facts {
            requested_bytes: n(1),
            free_bytes: n(2),
            total_bytes: n(3),
            ..Facts::default()
        };
        return Some(oom(Framework::Rocm, "rocm-thunk", None, f));
    }
    let c = rocm_thunk_re().captures(t)?;
    let sized = rocm_pool_size_re().captures(t);
    let requested = match c.get(1) {
        Some(n) => n.as_str().parse().ok(),
        None => sized
            .as_ref()
            .and_then(|s| s.get(1))
            .and_then(|m| crate::units::parse_size(m.as_str())),
    };
    let device = sized.as_ref().and_then(|s| s.get(2)?.as_str().parse().ok());
    let f = Facts {
        requested_bytes: requested,
        ..Facts::default()
    };
    let mut o = oom(Framework::Rocm, "rocm-thunk", device, f);
    if c.get(2).is_some_and(|m| m.as_str() == "host") {
        o.memory = MemoryKind::PinnedHost;
    }
    Some(o)
}

re!(
    neuron_tensor_re,
    r"Failed to allocate (\d+) bytes on DEVICE for tensor"
);
re!(neuron_dmem_re, r"Failed to alloc DEVICE memory: (\d+)");
// Older runtimes (NRTD, 2020): a DMA buffer from a device's TDRAM, "[TDRV:dma_mp_allocate_dma_
// buffer_from_tdram] Could not satisfy request for N bytes from channel" then "TDRAM d/c has no
// free space", inside an NERR_RESOURCE response.
re!(
    neuron_tdram_re,
    r"\[TDRV:\w{1,60}\] Could not satisfy request for (\d{1,20}) bytes from channel|\[TDRV:\w{1,60}\] TDRAM \d{1,3}/\d{1,3} has no free space"
);
re!(
    neuron_dev_mem_re,
    format!(
        r"Failed to allocate {size} \(usage: [^)]*\) on ND (\d+):NC (\d+), current utilization:\s*(?:\*\s*)?total: {size}(?:\s*(?:\*\s*)?tensors: {size})?",
        size = known::SIZE
    )
);
re!(
    neuron_status_re,
    r#"nrt_\w+ status=4 message="Allocation Failure""#
);

/// The AWS Neuron runtime on Inferentia and Trainium (TDRV, the runtime's device layer): a
/// NeuronCore's share of HBM could not hold an allocation. `log_dev_mem` reports "Failed to
/// allocate X (usage: tensors) on ND d:NC c, current utilization:" and what is in use on that
/// core by category (total, tensors, runtime, DMA rings…); `tensor_allocate` the exact bytes;
/// the Python side raises `nrt_tensor_allocate status=4 message="Allocation Failure"` (status
/// 4, a resource). "total" there is what is in use, not the core's capacity. The categories are
/// those of Neuron's device-memory guide (tensors, model constants and code, scratchpad, DMA
/// rings, collectives).
fn neuron_runtime(t: &str) -> Option<Oom> {
    let report = neuron_dev_mem_re().captures(t);
    let exact = neuron_tensor_re()
        .captures(t)
        .or_else(|| neuron_dmem_re().captures(t))
        .or_else(|| neuron_tdram_re().captures(t))
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    if report.is_none()
        && exact.is_none()
        && !neuron_status_re().is_match(t)
        && !neuron_tdram_re().is_match(t)
    {
        return None;
    }
    let size = |i: usize| {
        report
            .as_ref()
            .and_then(|c| crate::units::parse_size(c.get(i)?.as_str()))
    };
    let f = Facts {
        requested_bytes: exact.or_else(|| size(1)),
        device_used_bytes: size(4),
        allocated_bytes: size(5),
        ..Facts::default()
    };
    let device = report
        .as_ref()
        .and_then(|c| c.get(2)?.as_str().parse().ok());
    Some(oom(Framework::Neuron, "neuron-runtime", device, f))
}

// The Neuron compiler (neuronx-cc) placing an NKI kernel's instruction: "[GCA035] Instruction:
// I-21-0 with opcode: TensorTensor couldn't be allocated in SB", then each operand's "N Bytes per
// Partition and total of: T Bytes in SB", "Total Accessed Bytes per partition by instruction: N"
// and "Total SB Partition Size: M". SB is the NeuronCore's state buffer (SBUF), on-chip memory in
// 128 partitions of M bytes each (192 KiB on Trainium and Inferentia2): the instruction's
// operands together need more of one partition than there is. A compile-time limit, not HBM.
re!(nki_sbuf_re, r"\bcouldn't be allocated in SB\b");
re!(
    nki_sbuf_need_re,
    r"\bTotal Accessed Bytes per partition by instruction: (\d{1,12})\b"
);
re!(nki_sbuf_size_re, r"\bTotal SB Partition Size: (\d{1,12})\b");

/// An NKI kernel's instruction over the NeuronCore's on-chip state buffer (see `nki_sbuf_re`).
fn neuron_sbuf(t: &str) -> Option<Oom> {
    nki_sbuf_re().is_match(t).then_some(())?;
    let figure = |c: Option<regex::Captures>| c.and_then(|c| c.get(1)?.as_str().parse().ok());
    let f = Facts {
        requested_bytes: figure(nki_sbuf_need_re().captures(t)),
        ..Facts::default()
    };
    let mut o = oom(Framework::Neuron, "neuron-nki-sbuf", None, f);
    o.memory = MemoryKind::SharedMemory;
    o.memory_limit_bytes = figure(nki_sbuf_size_re().captures(t));
    Some(o)
}

re!(
    hami_re,
    r"\[HAMI-core ERROR [^\]]*\]: Device (\d+) OOM (\d+) / (\d+)|vGPU ERROR [^\]]*\]: device OOM encountered: usage=(\d+) limit=(\d+)"
);

/// HAMi-core (`libvgpu.so`, preloaded in a Kubernetes pod that asks for `nvidia.com/gpumem`):
/// it checks every allocation against the container's GPU memory limit
/// (`CUDA_DEVICE_MEMORY_LIMIT`) and refuses one that would pass it. `allocator.c`'s `oom_check`
/// logs "Device N OOM A / L" with A = the container's use plus the request and L the limit;
/// its older monitor (`multiprocess_memory_limit.c`) "device OOM encountered: usage=U limit=L".
/// The limit is the container's, not the GPU's.
fn hami_core(t: &str) -> Option<Oom> {
    let c = hami_re().captures(t)?;
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let f = Facts {
        with_request_bytes: n(2).or_else(|| n(4)),
        total_bytes: n(3).or_else(|| n(5)),
        total_is_limit: true,
        ..Facts::default()
    };
    let device = n(1).and_then(|d| u32::try_from(d).ok());
    Some(oom(Framework::Cuda, "hami-core", device, f))
}

// XLA's stream executor for CUDA (`xla/stream_executor/cuda/cuda_driver.cc`, later
// `cuda_executor.cc`, and its `platform_util.cc` creating one per device; newer releases put
// the status's code and an empty message before the driver's, "from device: RESOURCE_EXHAUSTED:
// : CUDA_ERROR_OUT_OF_MEMORY"): a device allocation, a unified-memory one
// (XLA retries with it where it is asked to), and the primary context that could not be
// created, with the device's total that the driver reported.
re!(
    xla_se_device_re,
    format!(
        r"failed to allocate {} \((\d+) bytes\) from device: (?:\w+: )?(?:: )?CUDA_ERROR_OUT_OF_MEMORY",
        known::SIZE
    )
);
re!(
    xla_se_unified_re,
    r"failed to alloc (\d+) bytes unified memory; result: CUDA_ERROR_OUT_OF_MEMORY"
);
re!(
    xla_se_context_re,
    r"cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY[^;\n]{0,40}(?:; total memory reported: (\d+))?"
);
// The stream executor's cache of a compiled program's constants
// (`GpuExecutor::CreateOrShareConstant`, `xla/stream_executor/gpu/gpu_executor.cc` and
// `cuda_executor.cc`): "Failed to allocate %d bytes for new constant" when the device
// allocation (memory space 0) for one constant failed; an Internal status, not
// RESOURCE_EXHAUSTED.
re!(
    xla_se_constant_re,
    r"Failed to allocate (\d+) bytes for new constant"
);
// XLA's allocator for collectives' buffers (`stream_executor_allocator.cc`,
// `StreamExecutorAllocator::Allocate` for the collective memory space): "could not allocate
// collective of size: N", after NCCL's own CUDA check where NCCL allocated it.
re!(
    xla_se_collective_re,
    r"could not allocate collective of size: (\d+)"
);
re!(
    xla_se_ordinal_re,
    r"device ordinal (\d+)|StreamExecutor for CUDA:(\d+)"
);
// Where the text says JAX: jaxlib's bundled XLA (`external/org_tensorflow/…`, `external/xla/…`),
// jaxlib's or JAX's own modules in a traceback.
re!(
    xla_jax_re,
    r"external/org_tensorflow/|external/xla/|\bjaxlib\b|\bjax[./]|site-packages/jax/|XlaRuntimeError"
);

/// JAX (or PyTorch/XLA) through XLA's stream executor: the framework where the paths or the
/// traceback name it, the device where the message gives its ordinal, the request or the
/// device's total. TensorFlow's own build (`tensorflow/…`, `external/local_xla/…`) and a bare
/// driver line are left to the stream executor's other readers.
fn xla_stream_executor(t: &str) -> Option<Oom> {
    let framework = if torch_xla_re().is_match(t) {
        Framework::PytorchXla
    } else if xla_jax_re().is_match(t) {
        Framework::Jax
    } else {
        // The unified-memory retry is XLA's alone; without a name it is CUDA's driver that
        // refused.
        return xla_se_unified_re().captures(t).map(|c| {
            let f = Facts {
                requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
                ..Facts::default()
            };
            oom(Framework::Cuda, "xla-unified-memory", None, f)
        });
    };
    let ordinal = || {
        let c = xla_se_ordinal_re().captures(t)?;
        (1..=2).find_map(|i| c.get(i)?.as_str().parse().ok())
    };
    for (re, format) in [
        (xla_se_constant_re(), "xla-constant"),
        (xla_se_collective_re(), "xla-collective"),
    ] {
        if let Some(c) = re.captures(t) {
            let f = Facts {
                requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
                ..Facts::default()
            };
            return Some(oom(framework, format, ordinal(), f));
        }
    }
    if let Some(c) = xla_se_device_re().captures(t) {
        let n = c.len();
        let f = Facts {
            requested_bytes: c
                .get(n - 1)
                .and_then(|m| m.as_str().parse().ok())
                .or_else(|| known::sz(&c, 1)),
            ..Facts::default()
        };
        return Some(oom(framework, "xla-device-alloc", ordinal(), f));
    }
    if let Some(c) = xla_se_unified_re().captures(t) {
        let f = Facts {
            requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
            ..Facts::default()
        };
        return Some(oom(framework, "xla-unified-memory", ordinal(), f));
    }
    let c = xla_se_context_re().captures(t)?;
    let f = Facts {
        total_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
        ..Facts::default()
    };
    Some(oom(framework, "xla-context", ordinal(), f))
}

// CUDA's out-of-memory error as other libraries relay it. Its number is 2 in both APIs
// (`cudaErrorMemoryAllocation` in the runtime's `driver_types.h`, `CUDA_ERROR_OUT_OF_MEMORY`
// in the driver's `cuda.h`); any other number is another error.
re!(
    cuda_thrust_re,
    r"thrust::|\b(?:parallel_for|for_each|transform|reduce|scan|sort|merge_sort|radix_sort|copy_if|fill|get_temporary_buffer)\w*:? (?:failed|error)[^\n]{0,40}?: ?cudaErrorMemoryAllocation"
);
// Thrust's CUDA back end raises a failed call with its algorithm's name
// (`cuda_cub::throw_on_error(status, "parallel_for failed")`); its `system_error::what()`
// appends the CUDA category's message, which older releases gave as the runtime's words alone
// ("parallel_for failed: out of memory") and later ones with the error's name first (above).
re!(
    thrust_words_re,
    r"\b(?:parallel_for|for_each|transform|reduce|scan|merge_sort|radix_sort|copy_if|get_temporary_buffer):? failed(?: on \w{1,8} step)?: out of memory\b"
);
// NCCL's CUDACHECK (`src/include/checks.h`): "Cuda failure %d '%s'", older "Cuda failure '%s'".
re!(cuda_nccl_re, r"Cuda failure (?:(\d+) )?'([^']{1,80})'");
// NCCL's allocators after a failed CUDA call (`src/include/alloc.h`): `ncclCudaCalloc` and
// `ncclCudaMalloc` warn "Failed to CUDA calloc %ld bytes" / "Failed to CUDA malloc %ld bytes"
// (2.19 and later also "Failed to CUDA calloc async %ld bytes"), with the request; the host's
// `ncclCudaHostCalloc` "Failed to CUDA host alloc %ld bytes" is pinned host memory.
re!(
    nccl_alloc_re,
    r"Failed to CUDA (calloc|malloc|host alloc)(?: async)? (\d+) bytes"
);
// NCCL's log prefix (`src/debug.cc`): "%s:%d:%d [%d] " — host, pid, thread and the CUDA device
// the thread had current (its index after CUDA_VISIBLE_DEVICES) — before the warning.
re!(
    nccl_device_re,
    r"[\w.\-]+:\d+:\d+ \[(\d{1,3})\] \S+ NCCL WARN (?:Cuda failure|Failed to CUDA)"
);
// spconv 1.x and tensorview's TV_CHECK_CUDA_ERR: "<file> <line> cuda execution failed with error 2";
// spconv 2.x's tensorview (cumm, `include/tensorview/core/defs.h`, TV_CHECK_CUDA_ERR_V2 and
// TV_CUDART_RESULT_CHECK): "cuda failed with error 2 out of memory. use CUDA_LAUNCH_BLOCKING=1
// to get correct traceback."
re!(
    cuda_spconv_re,
    r"(?i)\bcuda (?:execution )?failed with error (\d+)\b"
);
// The CUDA math libraries' "could not allocate" statuses, as their headers name them
// (`cusolver_common.h` CUSOLVER_STATUS_ALLOC_FAILED = 3, `cufft.h` CUFFT_ALLOC_FAILED = 2,
// `cusparse.h` CUSPARSE_STATUS_ALLOC_FAILED = 3, `curand.h` CURAND_STATUS_ALLOCATION_FAILED =
// 102) and PyTorch relays them ("cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling
// `cusolverDnCreate(handle)`", "cuFFT error: CUFFT_ALLOC_FAILED"). cuBLAS's and cuDNN's are
// read with the raw CUDA errors. cuFFT's own description of its status, "cuFFT failed to
// allocate GPU or CPU memory" (`cufft.h`'s documentation), is what CUDA.jl's `CUFFTError(code
// 2, …)` prints.
re!(
    cuda_library_status_re,
    r"\b(?:CUSOLVER_STATUS_ALLOC_FAILED|CUFFT_ALLOC_FAILED|CUSPARSE_STATUS_ALLOC_FAILED|CURAND_STATUS_ALLOCATION_FAILED)\b|cuFFT failed to allocate GPU or CPU memory"
);
// torch_memory_saver (sglang's memory saver, `csrc/utils.h`): CURESULT_CHECK and
// CUDA_ERROR_CHECK print "[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=…"
// and "… cudaError error: 2 (…)" since July 2025 (commit 8935904), before it "CUresult error
// result=2 file=… func=cu_mem_create line=103"; its ROCm build "hipError_t error result=2"
// (hipErrorOutOfMemory is 2 as well).
re!(
    cuda_memory_saver_re,
    r"\[torch_memory_saver[^\]]{0,12}\] (CUresult|cudaError|hipError_t|hipError) error:? {0,2}(?:result=)?(\d+)\b"
);
// A bare number: `CUresult=2`, `CUDA error 2` (nvdiffrast's NVDR_CHECK_CUDA_ERROR: "Cuda error:
// 2[cudaMalloc(…);]"), `cudaError 2`, or a cuMemAlloc-family call's
// result (`cuMemoryAllocate failed res=2`, HAMi-core's allocator.c).
re!(
    cuda_number_re,
    r"\bCUresult\s*[=:]?\s*\(?(\d+)\b|\b(?:CUDA|Cuda) (?:error|Error|ERROR)(?: code)?\s*[=:#]?\s*\(?(\d+)\)?(?:[^\d.]|$)|\bcudaError(?:_t)?\s*[=:]?\s*(\d+)\b|\b(?:cuMem\w*Alloc\w*|cuMemoryAllocate|cuMemCreate|cudaMalloc\w*)\b[^\n]{0,80}?\b(?:res|ret|result|status|err|error|code|returned)\s*[=:]?\s*(\d+)\b"
);

/// CUDA's own out-of-memory error relayed by another library, which the format names: Thrust
/// (`thrust::system_error`, "parallel_for failed: cudaErrorMemoryAllocation: out of memory"),
/// NCCL ("Cuda failure 2 'out of memory'"), spconv/tensorview ("cuda execution failed with
/// error 2"), HAMi-core's hooked allocator ("cuMemoryAllocate failed res=2"), or a bare code
/// (`CUresult=2`, `CUDA error 2`), torch_memory_saver's checks ("CUresult error: 2"), or a CUDA
/// math library's allocation status (cuSOLVER, cuFFT, cuSPARSE, cuRAND). The driver or runtime
/// said it; the message has no figures. A number other than 2 is another error, never read as
/// memory.
fn cuda_code(t: &str) -> Option<Oom> {
    let found = |format| Some(oom(Framework::Cuda, format, None, Facts::default()));
    if let Some(m) = cuda_library_status_re().find(t) {
        return found(match m.as_str() {
            "CUSOLVER_STATUS_ALLOC_FAILED" => "cusolver",
            "CUFFT_ALLOC_FAILED" | "cuFFT failed to allocate GPU or CPU memory" => "cufft",
            "CUSPARSE_STATUS_ALLOC_FAILED" => "cusparse",
            _ => "curand",
        });
    }
    if (t.contains("cudaErrorMemoryAllocation") && cuda_thrust_re().is_match(t))
        || thrust_words_re().is_match(t)
    {
        return found("cuda-thrust");
    }
    let nccl_alloc = nccl_alloc_re().captures(t);
    let nccl_device = || {
        nccl_device_re()
            .captures(t)
            .and_then(|c| c.get(1)?.as_str().parse().ok())
    };
    if let Some(c) = cuda_nccl_re().captures(t) {
        let code = c.get(1).map(|m| m.as_str());
        if code == Some("2") || (code.is_none() && c.get(2)?.as_str() == "out of memory") {
            let mut o = oom(
                Framework::Cuda,
                "cuda-nccl",
                nccl_device(),
                Facts::default(),
            );
            if let Some(a) = &nccl_alloc {
                o.facts.requested_bytes = a.get(2)?.as_str().parse().ok();
                if a.get(1)?.as_str() == "host alloc" {
                    o.memory = MemoryKind::PinnedHost;
                }
            }
            return Some(o);
        }
        // Another CUDA error before NCCL's allocation warning: that failure, not memory.
        if nccl_alloc.is_some() {
            return None;
        }
    }
    // NCCL's allocation warning alone: a failed cudaMalloc of that size (its CUDA status line
    // cut from the paste).
    if let Some(a) = nccl_alloc {
        let mut o = oom(
            Framework::Cuda,
            "cuda-nccl",
            nccl_device(),
            Facts::default(),
        );
        o.facts.requested_bytes = a.get(2)?.as_str().parse().ok();
        if a.get(1)?.as_str() == "host alloc" {
            o.memory = MemoryKind::PinnedHost;
        }
        return Some(o);
    }
    if let Some(c) = cuda_memory_saver_re().captures(t) {
        if c.get(2)?.as_str() != "2" {
            return None;
        }
        let framework = if c.get(1)?.as_str().starts_with("hip") {
            Framework::Rocm
        } else {
            Framework::Cuda
        };
        return Some(oom(
            framework,
            "cuda-torch-memory-saver",
            None,
            Facts::default(),
        ));
    }
    if let Some(c) = cuda_spconv_re().captures(t) {
        return (c.get(1)?.as_str() == "2")
            .then_some(())
            .and_then(|()| found("cuda-spconv"));
    }
    let c = cuda_number_re().captures(t)?;
    let code = (1..=4).find_map(|i| c.get(i))?.as_str();
    (code == "2").then_some(())?;
    if t.contains("HAMI-core") || t.contains("4pdvGPU") {
        return found("cuda-hami-core");
    }
    let device = gunrock_device_re()
        .captures(t)
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    let mut o = oom(Framework::Cuda, "cuda-code", device, Facts::default());
    // The check names the call that failed on the code's line (dlib's "Error while calling
    // cudaMallocHost(&data, …) in file …gpu_data.cpp:181. code: 2, reason: out of memory"): a
    // page-locking call's out-of-memory is the host's pinned memory, not the device's.
    let whole = c.get(0)?;
    let start = t[..whole.start()].rfind('\n').map_or(0, |i| i + 1);
    let end = t[whole.end()..]
        .find('\n')
        .map_or(t.len(), |i| whole.end() + i);
    if super::clean::names_pinning_call(&t[start..end]) {
        o.memory = MemoryKind::PinnedHost;
    }
    // Or the size that failed, in bytes, on the code's line (Gigahorse's plotter: "failed to
    // allocate 536870912 bytes of MEM_TYPE_DEVICE: CUDA error 2: out of memory").
    // Faiss's "Failed to cudaMalloc 1610612736 bytes on device 0 (error 2 out of memory)"
    // names the device too.
    if let Some(c) = cuda_code_size_re().captures(&t[start..end]) {
        o.facts.requested_bytes = c.get(1).and_then(|m| m.as_str().parse().ok());
        o.device_index = o.device_index.or_else(|| c.get(2)?.as_str().parse().ok());
    }
    Some(o)
}

re!(
    cuda_code_size_re,
    r"(?i)\bfailed to (?:allocate|cudaMalloc) (\d{1,20}) bytes\b(?: on device (\d{1,3})\b)?"
);

// Gunrock's `GRError` (`gunrock/util/error_utils.cuh`): "[FILE, LINE @ gpu N] MESSAGE (CUDA
// error E: TEXT)", N the CUDA device the call ran on.
re!(
    gunrock_device_re,
    r"\[[^\]\n]{1,300}, \d{1,6} @ gpu (\d{1,3})\] [^\n]{0,200}?\(CUDA error 2: "
);

// TensorFlow's GPU device start-up (`tensorflow/core/common_runtime/gpu/gpu_device.cc`):
// "CUDA runtime implicit initialization on GPU:<n> failed. Status: <cudaGetErrorString>" when
// cudaSetDevice or cudaFree(nullptr) fails; only "out of memory" is memory (the same line says
// "device kernel image is invalid" for a build without the GPU's architecture).
re!(
    tf_gpu_init_re,
    r"CUDA runtime implicit initialization on GPU:(\d+) failed\. Status: out of memory"
);

/// TensorFlow could not create its CUDA context on a GPU: no room left for one.
fn tensorflow_gpu_init(t: &str) -> Option<Oom> {
    let c = tf_gpu_init_re().captures(t)?;
    let device = c.get(1)?.as_str().parse().ok();
    Some(oom(
        Framework::Tensorflow,
        "tensorflow-gpu-init",
        device,
        Facts::default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gib(x: f64) -> u64 {
        (x * (1u64 << 30) as f64).round() as u64
    }

    fn mib(x: f64) -> u64 {
        (x * (1u64 << 20) as f64).round() as u64
    }

    /// llama.cpp's backends, Ollama, CTranslate2 and bitsandbytes, each from its format string
    /// (the files and versions at each reader), read through the whole table so that its order
    /// is tested too: (text, framework, format, memory, device, request).
    #[test]
    fn llama_cpp_ollama_and_library_checks_from_their_format_strings() {
        use super::super::parse::parse_text;
        type Case = (
            &'static str,
            Framework,
            &'static str,
            MemoryKind,
            Option<u32>,
            Option<u64>,
        );
        let cases: &[Case] = &[
            ("ggml_backend_cann_buffer_type_alloc_buffer: allocating 2048.00 MiB on device 3: aclrtMalloc failed: EL0004: [PID: 1234] Failed to allocate memory.", Framework::Ggml, "ggml-cann", MemoryKind::Device, Some(3), Some(2 << 30)),
            ("CUDA error: out of memory   current device: 2, in function ggml_backend_cuda_synchronize at ggml/src/ggml-cuda/ggml-cuda.cu:2455   cudaStreamSynchronize(cuda_ctx->stream())", Framework::Ggml, "ggml-cuda-check", MemoryKind::Device, Some(2), None),
            ("ROCm error: out of memory   current device: 0, in function alloc at /src/ggml/src/ggml-cuda/ggml-cuda.cu:375   ggml_cuda_device_malloc(&ptr, look_ahead_size, device)", Framework::Ggml, "ggml-cuda-check", MemoryKind::Device, Some(0), None),
            ("MUSA error: out of memory   current device: 1, in function alloc at /ws/ggml/src/ggml-cuda/ggml-cuda.cu:375", Framework::Ggml, "ggml-cuda-check", MemoryKind::Device, Some(1), None),
            ("llama_model_load: error loading model: unable to allocate CUDA1 buffer", Framework::Ggml, "ggml", MemoryKind::Device, Some(1), None),
            ("llama_model_load: error loading model: unable to allocate ROCm0 buffer", Framework::Ggml, "ggml-rocm", MemoryKind::Device, Some(0), None),
            ("Error: 500 Internal Server Error: memory layout cannot be allocated", Framework::Ggml, "ollama-layout", MemoryKind::Device, None, None),
            ("Error: memory layout cannot be allocated with num_gpu = 99", Framework::Ggml, "ollama-layout", MemoryKind::Device, None, None),
            ("Error: llama runner process has terminated: cudaMalloc failed: out of memory", Framework::Ggml, "ollama-runner", MemoryKind::Device, None, None),
            // The runner's ggml-alloc line beside it gives the request and the device.
            ("Error: llama runner process has terminated: cudaMalloc failed: out of memory\nggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 838447104", Framework::Ggml, "ollama-runner", MemoryKind::Device, Some(0), Some(838_447_104)),
            // ggml's own line read first gives the same figures.
            ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1024.00 MiB on device 1: cudaMalloc failed: out of memory\nggml_gallocr_reserve_n: failed to allocate CUDA1 buffer of size 1073741824\nError: llama runner process has terminated: cudaMalloc failed: out of memory", Framework::Ggml, "ggml", MemoryKind::Device, Some(1), Some(1 << 30)),
            ("Error: model requires more system memory (12.3 GiB) than is available (8.0 GiB)", Framework::Ggml, "ollama-system-memory", MemoryKind::Host, None, Some(gib(12.3))),
            ("RuntimeError: CUDA failed with error out of memory", Framework::Cuda, "cuda-ctranslate2", MemoryKind::Device, None, None),
            ("Error out of memory at line 380 in file /src/csrc/ops.cu", Framework::Cuda, "cuda-check-return", MemoryKind::Device, None, None),
            ("wgpu error: Validation Error  Caused by:     In Device::create_buffer     Not enough memory left.", Framework::Wgpu, "wgpu-device", MemoryKind::Device, None, None),
            ("thread 'main' panicked at 'Error in Device::create_texture: Not enough memory left'", Framework::Wgpu, "wgpu-device", MemoryKind::Device, None, None),
            // immich-app/immich#13674, openvinotoolkit/openvino#25141.
            ("Exception from src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp:185:\n[GPU] out of GPU resources", Framework::OpenCl, "openvino-gpu", MemoryKind::Device, None, None),
            ("Check '!exceed_allocatable_mem_size' failed at src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp:115:\n[GPU] Exceeded max size of memory object allocation: requested 8589934592 bytes, but max alloc size supported by device is 4294959104 bytes.Please try to reduce batch size or use lower precision.", Framework::OpenCl, "openvino-gpu", MemoryKind::Device, None, Some(8_589_934_592)),
            ("\"Due to the driver bug any subsequent OpenCL API call will cause application hang, so GPU plugin can't finish correctly. Please try to update the driver or reduce memory consumption (use smaller batch size, less streams, lower precision, etc)to avoid CL_OUT_OF_RESOURCES exception\"", Framework::OpenCl, "openvino-gpu", MemoryKind::Device, None, None),
            ("09:43:20 !! [GPU] VLM generate error: Exception from src\\inference\\src\\cpp\\infer_request.cpp:224:\nException from src\\plugins\\intel_gpu\\src\\runtime\\ocl\\ocl_common.hpp:62:\n[GPU] CL_OUT_OF_RESOURCES exception.\n        Due to a driver bug, any subsequent OpenCL API call may cause the application to hang, so the GPU plugin may be unable to finish correctly.", Framework::OpenCl, "openvino-gpu", MemoryKind::Device, None, None),
            ("onednn_verbose,v1,primitive,error,ocl,errcode -5,CL_OUT_OF_RESOURCES,src/gpu/intel/ocl/ocl_gpu_kernel.cpp:250,src/gpu/intel/ocl/ocl_gpu_kernel.cpp:250\n[GPU] force exit.", Framework::OpenCl, "openvino-gpu", MemoryKind::Device, None, None),
            ("ERROR bevy_render::error_handler: Caught rendering error: Out of Memory", Framework::Wgpu, "wgpu-device", MemoryKind::Device, None, None),
            ("thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: AllocationError(OutOfMemory(Device))', wgpu-core/src/device/mod.rs:328:22", Framework::Wgpu, "wgpu-device", MemoryKind::Device, None, None),
            // wgpu-core 0.12's own error, as Debug prints it (bevyengine/bevy, wgpu-core-0.12.2).
            ("thread 'main' panicked at 'called Result::unwrap() on an Err value: OutOfMemory', /home/u/.cargo/registry/src/github.com-1ecc6299db9ec823/wgpu-core-0.12.2/src/command/mod.rs:78:49", Framework::Wgpu, "wgpu-device", MemoryKind::Device, None, None),
            ("thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: OutOfMemory(Host)', wgpu-core/src/device/mod.rs:1010:14", Framework::Wgpu, "wgpu-device", MemoryKind::Host, None, None),
            ("Error: panicked at /home/runner/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wgpu-26.0.1/src/backend/wgpu_core.rs:1436:18:\nwgpu error: Out of Memory", Framework::Wgpu, "wgpu-device", MemoryKind::Device, None, None),
            // ExLlamaV2's autosplit and ExLlamaV3's loader out of GPUs.
            ("RuntimeError: Insufficient VRAM for model and cache", Framework::Pytorch, "exllamav2-autosplit", MemoryKind::Device, None, None),
            ("RuntimeError: Insufficient VRAM in split for model and cache", Framework::Pytorch, "exllamav3-autosplit", MemoryKind::Device, None, None),
            // MLC LLM's start-up check (mlc-ai/mlc-llm, cpp/serve/config.cc): MiB to three decimals.
            ("TVMError: Check failed: (output_res.IsOk()) is false: Insufficient GPU memory error: The available single GPU memory is 6000.000 MB, which is less than the sum of model weight size (5000.500 MB) and temporary buffer size (1500.000 MB).", Framework::MlcLlm, "mlc-llm-budget", MemoryKind::Device, None, Some(6_816_268_288)),
            // pop-os/cosmic-files: one buffer over the device's max_buffer_size.
            ("wgpu error: Validation Error\n\nCaused by:\n    In Device::create_buffer\n      note: label = `image upload buffer`\n    Buffer size 360960000 is greater than the maximum buffer size (268435456)", Framework::Wgpu, "wgpu-max-buffer", MemoryKind::Device, None, Some(360_960_000)),
        ];
        for &(text, framework, format, memory, device, request) in cases {
            let o = parse_text(text).expect(text);
            assert_eq!(
                (
                    o.framework,
                    o.format,
                    o.memory,
                    o.device_index,
                    o.facts.requested_bytes
                ),
                (framework, format, memory, device, request),
                "{text}"
            );
        }
        // The CUDA check's words without ggml's: not llama.cpp's.
        let o = parse_text("ROCm error: out of memory current device: 0, in function foo at /src/mylib/kernel.cu:10");
        assert_ne!(o.map(|o| o.framework), Some(Framework::Ggml));
        // Ollama's system-memory check reads what is available beside the need.
        let o = ollama("model requires more system memory (12.3 GiB) than is available (8.0 GiB)")
            .expect("read");
        assert_eq!(o.facts.free_bytes, Some(8 << 30));
    }

    /// The Neuron compiler's state-buffer overflow is on-chip memory, its figures per partition
    /// (aws-neuron/aws-neuron-sdk#1060); the runtime's device memory stays the runtime's.
    #[test]
    fn an_nki_instruction_over_the_state_buffer_is_on_chip() {
        let o = neuron_sbuf("[GCA035] Instruction: I-21-0 with opcode: TensorTensor couldn't be allocated in SB\nTotal Accessed Bytes per partition by instruction: 198024\nTotal SB Partition Size: 196608").expect("read");
        assert_eq!(
            (o.framework, o.format, o.memory),
            (
                Framework::Neuron,
                "neuron-nki-sbuf",
                MemoryKind::SharedMemory
            )
        );
        assert_eq!(
            (o.facts.requested_bytes, o.memory_limit_bytes),
            (Some(198_024), Some(196_608))
        );
        assert!(neuron_sbuf("Total SB Partition Size: 196608").is_none());
    }

    #[test]
    fn hami_cores_container_limit() {
        let o = hami_core("[HAMI-core ERROR (pid:25 thread=139892685178688 allocator.c:53)]: Device 0 OOM 27147995136 / 25757220864").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Cuda, "hami-core", Some(0))
        );
        assert_eq!(o.facts.with_request_bytes, Some(27_147_995_136));
        assert_eq!(
            (o.facts.total_bytes, o.facts.total_is_limit),
            (Some(25_757_220_864), true)
        );
        assert_eq!(
            o.facts.requested_bytes, None,
            "the request is not told apart from the use"
        );
        let o = hami_core("[4pdvGPU ERROR (pid:99 thread=139987068696320 multiprocess_memory_limit.c:277)]: device OOM encountered: usage=9502195712 limit=8388608000").expect("found");
        assert_eq!(
            (o.facts.with_request_bytes, o.facts.total_bytes),
            (Some(9_502_195_712), Some(8_388_608_000))
        );
        assert!(
            hami_core("[HAMI-core Debug(25:1:allocator.c:60)]: Device 0 current memory 1 / 2")
                .is_none()
        );
    }

    #[test]
    fn neurons_device_memory_report() {
        let o = neuron_runtime("ERROR TDRV:log_dev_mem Failed to allocate 172.000MB (usage: tensors) on ND 0:NC 0, current utilization: total: 15.855GB tensors: 15.855GB runtime: 1.062KB dma rings: 32.000KB ERROR TDRV:tensor_allocate Failed to allocate 180355072 bytes on DEVICE for tensor UNKNOWN.").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Neuron, "neuron-runtime", Some(0))
        );
        assert_eq!(o.facts.requested_bytes, Some(180_355_072));
        assert_eq!(o.facts.device_used_bytes, Some(gib(15.855)));
        assert_eq!(o.facts.allocated_bytes, Some(gib(15.855)));
        assert_eq!(
            o.facts.total_bytes, None,
            "the report's total is what is in use"
        );
        let o = neuron_runtime(
            r#"RuntimeError: nrt_load_collectives status=4 message="Allocation Failure""#,
        )
        .expect("found");
        assert_eq!(o.facts, Facts::default());
        assert!(neuron_runtime("nrt_load status=2 message=\"Invalid\"").is_none());
    }

    #[test]
    fn tensorflow_eigen_reads_its_request_zero_included() {
        let o = tensorflow_eigen(": F tensorflow/core/common_runtime/gpu/gpu_device.cc:103] EigenAllocator for GPU ran out of memory when allocating 0. See error logs for more detailed info.").expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.requested_bytes),
            (Framework::Tensorflow, "tensorflow-eigen", Some(0))
        );
        let o = tensorflow_eigen("ResourceExhaustedError: Ran out of GPU memory when allocating 268435456 bytes for MatMul").expect("found");
        assert_eq!(o.facts.requested_bytes, Some(256 << 20));
        // The failing node's placement gives the device.
        let o = tensorflow_eigen("ResourceExhaustedError: Ran out of GPU memory when allocating 1294336000 bytes for \n [[{{node softmax}} = SoftmaxCrossEntropyWithLogits[T=DT_FLOAT, _device=\"/job:localhost/replica:0/task:0/device:GPU:1\"](a, b)]]").expect("found");
        assert_eq!(o.device_index, Some(1));
        assert!(tensorflow_eigen("EigenAllocator for GPU").is_none());
    }

    /// The thunk's three pools as ROCT's `hsaKmtAllocMemory` names them, and ROCr's status.
    #[test]
    fn rocm_thunk_reads_vram_scratch_and_host() {
        // HIP's runtime log with its figures (ROCm on an MI50).
        let o = rocm_thunk(":1:hip_memory.cpp :303 : 9616777863 us: 4277 : [tid:0x7f2accbfe6c0] Allocation failed : Device memory : required :4 | free :2314338304 | total :17163091968").expect("found");
        assert_eq!(
            (
                o.facts.requested_bytes,
                o.facts.free_bytes,
                o.facts.total_bytes
            ),
            (Some(4), Some(2_314_338_304), Some(17_163_091_968))
        );
        let o = rocm_thunk("[hsaKmtAllocMemory] failed to allocate 33554432 bytes from device")
            .expect("found");
        assert_eq!(
            (o.framework, o.format, o.memory),
            (Framework::Rocm, "rocm-thunk", MemoryKind::Device)
        );
        assert_eq!(o.facts.requested_bytes, Some(32 << 20));
        let o =
            rocm_thunk("[hsaKmtAllocMemoryAlign] failed to allocate 2097152 bytes from scratch")
                .expect("found");
        assert_eq!(o.memory, MemoryKind::Device);
        let o = rocm_thunk("[hsaKmtAllocMemory] failed to allocate 4096 bytes from host")
            .expect("found");
        assert_eq!(o.memory, MemoryKind::PinnedHost);
        let o = rocm_thunk("ggml_backend_hsa_buffer_type_alloc_buffer: allocating 144.00 MiB on device 1: hsa_amd_memory_pool_allocate failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.").expect("found");
        assert_eq!(
            (o.facts.requested_bytes, o.device_index),
            (Some(144 << 20), Some(1))
        );
        assert!(
            rocm_thunk(
                "[hsaKmtAllocMemoryAlign] node 1 address 0x3f81e00000 size 1052672 from host"
            )
            .is_none(),
            "a success is no failure"
        );
    }

    /// An exception class that means a device OOM, then the start of its framework's own
    /// message, cut short and run into prose: a report, with what figures are left; the class
    /// alone, a question with no figure, a host error of the same name, a CPU tensor: not.
    #[test]
    fn an_oom_class_with_its_message_cut_short() {
        let o = oom_class_cut("我用4090跑这个模型，还是一直出现torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Pytorch, "pytorch-cudamallocasync", Some(0))
        );
        let o =
            oom_class_cut("一直出现torch.OutOfMemoryError: Allocation on device").expect("found");
        assert_eq!(
            (o.format, o.device_index),
            ("pytorch-cudamallocasync", None)
        );
        let o = oom_class_cut("I keep getting torch.cuda.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 1 has a tot").expect("found");
        assert_eq!(
            (o.framework, o.device_index, o.facts.requested_bytes),
            (Framework::Hip, Some(1), Some(2 << 30))
        );
        let o = oom_class_cut("got cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes (allocated so").expect("found");
        assert_eq!(
            (o.framework, o.facts.requested_bytes),
            (Framework::Cupy, Some(1 << 30))
        );
        let o = oom_class_cut("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[8,1024] on /job:localhost/replica:0/task:0/device:DML:0 by").expect("found");
        assert_eq!(
            (o.framework, o.device_index),
            (Framework::Tensorflow, Some(0))
        );
        let o = oom_class_cut("运行时报错jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to").expect("found");
        assert_eq!(o.framework, Framework::Jax);
        for not in [
            "how to avoid torch.cuda.OutOfMemoryError?",
            "except torch.cuda.OutOfMemoryError:",
            "How to fix torch.cuda.OutOfMemoryError: CUDA out of memory?",
            "java.lang.OutOfMemoryError: Java heap space",
            "ResourceExhaustedError: OOM when allocating tensor on /job:localhost/replica:0/task:0/device:CPU:0",
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: failed to connect",
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: too many open files",
        ] {
            assert!(oom_class_cut(not).is_none(), "{not:?}");
        }
    }

    /// Gaudi's SynapseAI helper failing the workspace of a compiled graph: the size in bytes
    /// after "::". A host allocation in the same words is not the HPU's.
    #[test]
    fn gaudi_synhelper_workspace() {
        let o = gaudi_synhelper("RuntimeError: FATAL ERROR :: MODULE:SYNHELPER workspace Allocation of size ::10737418240 failed").expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.requested_bytes),
            (Framework::Hpu, "hpu-synhelper-workspace", Some(10 << 30))
        );
        assert!(gaudi_synhelper(
            "FATAL ERROR :: MODULE:SYNHELPER host Allocation of size ::4096 failed"
        )
        .is_none());
        assert!(gaudi_synhelper("FATAL ERROR :: MODULE:SYNHELPER synLaunch failed").is_none());
    }

    #[test]
    fn gaudi_pt_devmem_reads_its_size_in_bytes() {
        let o = gaudi_devmem("RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::234881024 (224)MB").expect("found");
        assert_eq!((o.framework, o.format), (Framework::Hpu, "hpu-pt-devmem"));
        assert_eq!(o.facts.requested_bytes, Some(224 << 20));
        assert!(gaudi_devmem("MODULE:PT_BRIDGE something failed").is_none());
    }

    #[test]
    fn ascend_el0004_is_the_runtimes_not_torch_npus() {
        let o = ascend_runtime("[PID: 210907] 2026-04-09-21:56:40.384.694 Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by GE module.\n        Possible Cause: Available memory is insufficient.\n        Call rtMalloc fail, purpose: page caching, type = 2, size:3221291008, device_id:0[FUNC:Alloc][FILE:device_allocator.cc][LINE:72]").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Npu, "ascend-el0004", Some(0))
        );
        assert_eq!(o.facts.requested_bytes, Some(3_221_291_008));
        let o = ascend_runtime(
            "EL0004: [PID: 14004] 2025-11-06-01:17:59.527.855 Failed to allocate memory.",
        )
        .expect("found");
        assert_eq!(o.facts.requested_bytes, None);
        assert!(ascend_runtime("EL0004 is the code for a memory failure").is_none());
        // torchrun's prefixes, left inside a paste collapsed onto one line; the device from
        // torch_npu's error line when no runtime line names it.
        let o = ascend_runtime("[rank1]: [ERROR] 2025-08-26-03:59:04 (PID:28794, Device:1, RankID:1) ERR00100 PTA call acl api failed [rank1]: EL0004: [PID: 28794] 2025-08-26-03:58:55.257.127 Failed to allocate memory. [rank1]:         Possible Cause: Available memory is insufficient. [rank1]:         TraceBack (most recent call last): [rank1]:         Call rtMalloc fail, purpose:feature map,used for op input and output., size:5368709120 [rank1]:         malloc physical memory failed, runtime result = 207001").expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (Some(1), Some(5 << 30))
        );
        let o = ascend_runtime("[rank3]: EL0004: [PID: 1] Failed to allocate memory. [rank3]: alloc device memory failed, size=1073741824, device_id=3").expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (Some(3), Some(1 << 30))
        );
        let o = ascend_runtime("EL0004: [PID: 1613532] Failed to allocate memory. allocate device memory failed.[FUNC:Init][FILE:memory_pool_manager.cc][LINE:50] open device 2 failed, runtime result = 507033.").expect("found");
        assert_eq!((o.device_index, o.facts.requested_bytes), (Some(2), None));
    }

    /// XLA's report for VMEM or SMEM is a core's on-chip memory against the compiler's
    /// limit, not HBM; without figures (TensorFlow 1.x) it is still that.
    #[test]
    fn a_tpu_on_chip_report_is_not_hbm() {
        let o = xla_tpu_on_chip("RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space vmem. Used 29.96M of 16.00M vmem. Exceeded vmem capacity by 13.96M.").expect("found");
        assert_eq!(
            (o.framework, o.format, o.memory),
            (Framework::PytorchXla, "xla-tpu-vmem", MemoryKind::TpuOnChip)
        );
        assert_eq!(o.facts.requested_bytes, Some(31_415_337));
        assert_eq!(o.memory_limit_bytes, Some(16 << 20));
        assert_eq!(o.facts.total_bytes, None);
        let o = xla_tpu_on_chip("Compilation failed: Compilation failure: Ran out of memory in memory space vmem. Please file a bug against XLA.").expect("found");
        assert_eq!(
            (o.framework, o.facts.requested_bytes),
            (Framework::Tensorflow, None)
        );
        let o = xla_tpu_on_chip("Ran out of memory in memory space smem. Used 1.00M of 1.00M smem. Exceeded smem capacity by 1.7K.").expect("found");
        assert_eq!(o.format, "xla-tpu-smem");
        assert!(
            xla_tpu_on_chip("Ran out of memory in memory space hbm. Used 9.08G of 7.48G hbm.")
                .is_none()
        );
    }

    /// Regression: the 2.x sentence with PyTorch 2.1's "capacty" and without its tail was
    /// taken for the 1.x form.
    #[test]
    fn the_capacty_typo_is_still_the_2x_sentence() {
        let o = pytorch_fork("NPU out of memory. Tried to allocate 1.70 GiB. NPU 0 has a total capacty of 6.00 GiB of which 0 bytes is free.").expect("found");
        assert_eq!(o.format, "pytorch-fork-2.x");
        assert_eq!(o.facts.total_bytes, Some(6 << 30));
        assert_eq!(o.facts.free_bytes, Some(0));
    }

    #[test]
    fn a_torch_npu_1x_message_with_current_active() {
        let o = pytorch_fork("RuntimeError: NPU out of memory. Tried to allocate 898.00 MiB (NPU 0; 60.97 GiB total capacity; 58.21 GiB already allocated; 58.21 GiB current active; 848.37 MiB free; 58.31 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Npu, "pytorch-fork-1.x", Some(0))
        );
        assert_eq!(o.facts.requested_bytes, Some(898 << 20));
        assert_eq!(o.facts.allocated_bytes, Some(gib(58.21)));
        assert_eq!(o.facts.reserved_bytes, Some(gib(58.31)));
        assert_eq!(
            o.facts.free_bytes,
            Some((848.37 * (1u64 << 20) as f64).round() as u64)
        );
    }

    /// PyTorch's allocator warning (`CUDACachingAllocator.cpp`, `alloc_block`'s LOG(WARNING)),
    /// in c10's log format with and without torchrun's prefix, with and without the
    /// cudaMemGetInfo figures; the raise that follows for the same size is the same failure.
    #[test]
    fn pytorchs_allocator_warning_of_a_failed_cuda_malloc() {
        let o = pytorch_alloc_warning("[W903 13:41:51.709566905 CUDACachingAllocator.cpp:3934] memory allocation failed with OOM on device 0 while trying to allocate 42949672960 bytes (free: 33136967680, total: 33668857856).").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Pytorch, "pytorch-alloc-warning", Some(0))
        );
        assert_eq!(o.facts.requested_bytes, Some(42_949_672_960));
        assert_eq!(o.facts.free_bytes, Some(33_136_967_680));
        assert_eq!(o.facts.total_bytes, Some(33_668_857_856));
        let a = crate::oom::analyze("[rank3]:[W914 03:50:36.437786958 CUDACachingAllocator.cpp:3933] memory allocation failed with OOM on device 3 while trying to allocate 3221225472 bytes.");
        let o = a.main().expect("found");
        assert_eq!(o.device_index, Some(3));
        assert_eq!(o.facts.requested_bytes, Some(3 << 30));
        assert_eq!(o.facts.free_bytes, None);
        // Wrapped by a log viewer between "while" and "trying".
        let a = crate::oom::analyze("[W CUDACachingAllocator.cpp:3933] memory allocation failed with OOM on device 0 while\n trying to allocate 31457280 bytes (free: 47579136, total: 16684941312).");
        assert_eq!(a.main().and_then(|o| o.facts.free_bytes), Some(47_579_136));
        // The warning, then the raise for the same 40 GiB: one failure, the raise explained.
        let a = crate::oom::analyze("[W903 13:41:51.709566905 CUDACachingAllocator.cpp:3934] memory allocation failed with OOM on device 0 while trying to allocate 42949672960 bytes (free: 33136967680, total: 33668857856).\nTraceback (most recent call last):\n  File \"train.py\", line 9, in <module>\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 GiB. GPU 0 has a total capacity of 31.36 GiB of which 30.86 GiB is free. Including non-PyTorch memory, this process has 512.00 MiB memory in use. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.");
        assert_eq!(a.repeats(), 2);
        assert_eq!(a.main().map(|o| o.format), Some("pytorch-2.x"));
        let o = pytorch_alloc_warning("[W HIPCachingAllocator.cpp:3933] memory allocation failed with OOM on device 1 while trying to allocate 2097152 bytes.").expect("found");
        assert_eq!(o.framework, Framework::Hip);
        // An expandable segment's physical memory that could not be mapped.
        let o = pytorch_alloc_warning("expandable_segments: memory mapping failed with OOM on device 0 while trying to map 20971520 bytes (free: 20250624, total: 51043958784)").expect("found");
        assert_eq!(
            (o.facts.requested_bytes, o.facts.free_bytes, o.device_index),
            (Some(20 << 20), Some(20_250_624), Some(0))
        );
    }

    /// torch_musa prints "GPU N" in both its sentences (`MUSACachingAllocator.cpp`, v1.0.0 and
    /// v2.1.1); torch_mlu runs "is" into the free figure (`caching_allocator.cpp`,
    /// r1.22_pt2.1.0); torch_gcu prints "GCU N".
    #[test]
    fn each_forks_device_word_and_spacing() {
        let o = pytorch_fork("MUSA out of memory. Tried to allocate 20.00 MiB (GPU 2; 79.99 GiB total capacity; 78.00 GiB already allocated; 10.00 MiB free; 70.00 GiB allowed; 78.50 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_MUSA_ALLOC_CONF").expect("found");
        assert_eq!((o.framework, o.device_index), (Framework::Musa, Some(2)));
        assert_eq!(o.facts.allowed_bytes, Some(70 << 30));
        assert_eq!(o.facts.reserved_bytes, Some(gib(78.5)));
        let o = pytorch_fork("MUSA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 47.99 GiB of which 1.19 GiB is free. 40.00 GiB allowed; Of the allocated memory 40.00 GiB is allocated by PyTorch, with 100.00 MiB allocated in private pools (e.g., MUSA Graphs), and 3.50 GiB is reserved by PyTorch but unallocated.").expect("found");
        assert_eq!((o.format, o.device_index), ("pytorch-fork-2.x", Some(1)));
        assert_eq!(o.facts.private_pool_bytes, Some(100 << 20));
        let o = pytorch_fork("MLU out of memory. Tried to allocate 2.00 GiB. MLU 1 has a total capacity of 79.10 GiB of which 1.19 GiBis free. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 3.50 GiB is reserved by PyTorch but unallocated.").expect("found");
        assert_eq!(o.facts.free_bytes, Some(gib(1.19)));
        assert_eq!(o.facts.total_bytes, Some(gib(79.10)));
        let o = pytorch_fork("GCU out of memory. Tried to allocate 2.00 GiB. GCU 3 has a total capacity of 63.98 GiB of which 1.19 GiB is free. Of the allocated memory 58.00 GiB is allocated by PyTorch, and 3.50 GiB is reserved by PyTorch but unallocated.").expect("found");
        assert_eq!((o.framework, o.device_index), (Framework::Gcu, Some(3)));
    }

    /// torch_npu's other sentences (`NPUCachingAllocator.cpp`, `NPUWorkspaceAllocator.cpp`,
    /// `NpuUtils.cpp` on master; v1.8.1's "cached" form).
    #[test]
    fn torch_npus_other_sentences() {
        let o = pytorch_fork("NPU out of memory. Allocation was preemptively rejected because it would exceed per_process_memory_fraction limit. Requested size: 2.00 GiB").expect("found");
        assert_eq!(o.facts.requested_bytes, Some(2 << 30));
        let o = pytorch_fork("NPU out of memory. NPUWorkspaceAllocator tried to allocate 3.00 GiB(NPU 5; 60.96 GiB total capacity; 1.25 GiB free). If you want to reduce memory usage, take a try to set the environment variable TASK_QUEUE_ENABLE=1.").expect("found");
        assert_eq!(o.device_index, Some(5));
        assert_eq!(
            (o.facts.requested_bytes, o.facts.free_bytes),
            (Some(3 << 30), Some(gib(1.25)))
        );
        let o = pytorch_fork("NPU out of memory. device id: 3").expect("found");
        assert_eq!(o.device_index, Some(3));
        let o = pytorch_fork("NPU out of memory. Tried to allocate 1.50 GiB (NPU 0; 30.21 GiB total capacity; 27.02 GiB already allocated; 3.00 MiB free; 27.97 GiB cached)").expect("found");
        assert_eq!(o.facts.reserved_unallocated_bytes, Some(gib(27.97)));
        assert_eq!(o.facts.free_bytes, Some(3 << 20));
    }

    /// torch_npu's pinned host allocator (`CachingHostAllocator.cpp`): the host's RAM.
    #[test]
    fn torch_npus_pinned_host_allocator_is_host_memory() {
        let a = crate::oom::analyze("RuntimeError: Malloc pin memory failed, host out of memory, Rried to allocate size: 2147483648, total_allocated_memory: 1073741824, total_reserved_memory: 1073741824. You might be able to retry after freeing up memory using torch_npu.npu.host_empty_cache().");
        let o = a.main().expect("found");
        assert_eq!(
            (o.framework, o.format, o.memory),
            (Framework::Npu, "npu-pinned-host", MemoryKind::PinnedHost)
        );
        assert_eq!(o.facts.requested_bytes, Some(2 << 30));
    }

    /// The runtime's traceback lines that give the size, under torchrun's prefixes: the driver's
    /// huge-page allocation, and an allocation "failed, size=N".
    /// CANN's driver line alone (DRV_ERROR_OUT_OF_MEMORY, 6) is the same failure; another
    /// driver code is not.
    #[test]
    fn the_ascend_drivers_own_line() {
        let t = "[ERROR] RUNTIME(29167,mindie):2025-04-27-07:23:17.709.105 [npu_driver.cc:1274]29953 DevMemAllocManaged:[INIT][DEFAULT][drv api] halMemAlloc failed:size=32(Byte), type=17, moduleId=3, drvFlag=216172782156776448, drvRetCode=6, device_id=0!";
        let o = ascend_runtime(t).expect("found");
        assert_eq!(
            (o.format, o.device_index, o.facts.requested_bytes),
            ("ascend-el0004", Some(0), Some(32))
        );
        assert!(ascend_runtime(&t.replace("drvRetCode=6", "drvRetCode=3")).is_none());
        // CANN 5's order of the keys (its TensorFlow migration guide's example).
        let t = "[ERROR] RUNTIME(41852,python3.7):2021-11-11-11:19:04.908.481 [npu_driver.cc:691]50983 DevMemAllocHugePageManaged:[LOAD][LOAD][driver interface] halMemAlloc failed: device_id=7, size=15069901824, type=2, env_type=3, drvRetCode=6!";
        let o = ascend_runtime(t).expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (Some(7), Some(15_069_901_824))
        );
        assert!(ascend_runtime(&t.replace("drvRetCode=6", "drvRetCode=4")).is_none());
        // MindSpore's plog spells the device deviceId.
        let o =
            ascend_runtime("halMemAlloc failed: size=1048576, deviceId=6, type=2, drvRetCode=6!")
                .expect("found");
        assert_eq!(o.device_index, Some(6));
    }

    #[test]
    fn ascend_el0004_reads_the_drivers_size_lines() {
        let a = crate::oom::analyze("[rank1]: [ERROR] 2024-11-20-10:23:19 (PID:3321, Device:1, RankID:1) ERR00100 PTA call acl api failed\n[rank1]: EL0004: [PID: 3321] 2024-11-20-10:23:19.551.392 Failed to allocate memory.\n[rank1]:         Possible Cause: Available memory is insufficient.\n[rank1]:         Solution: Close applications not in use.\n[rank1]:         TraceBack (most recent call last):\n[rank1]:         DevMemAlloc huge page failed: deviceId=1, type=2, size=2147483648, retCode=0x7020016[FUNC:DevMemAlloc][FILE:npu_driver.cc][LINE:1207]");
        let o = a.main().expect("found");
        assert_eq!(o.format, "ascend-el0004");
        assert_eq!(
            (o.facts.requested_bytes, o.device_index),
            (Some(2 << 30), Some(1))
        );
        let o = ascend_runtime("EL0004: Failed to allocate memory. TraceBack (most recent call last): The memory allocation failed, size=1073741824, memType=2").expect("found");
        assert_eq!(o.facts.requested_bytes, Some(1 << 30));
    }

    /// TGI's warm-up (`flash_causal_lm.py`, v1.1.1 on) after the PyTorch error it caught is one
    /// failure with PyTorch's figures; the router's Rust `{:?}` of the shard's error keeps the
    /// memory-fraction clause; the router's token check (`backends/v3/src/lib.rs`).
    #[test]
    fn text_generation_inference() {
        let a = crate::oom::analyze("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.33 GiB is free. Including non-PyTorch memory, this process has 77.80 GiB memory in use. 71.24 GiB allowed; Of the allocated memory 74.39 GiB is allocated by PyTorch, and 2.63 GiB is reserved by PyTorch but unallocated.\n\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n    raise RuntimeError(\nRuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`");
        assert_eq!(a.total, 1, "one failure");
        let o = a.main().expect("found");
        assert_eq!((o.framework, o.format), (Framework::Tgi, "tgi-warmup"));
        assert_eq!(o.facts.allowed_bytes, Some(gib(71.24)));
        assert_eq!(o.facts.requested_bytes, Some(gib(1.95)));
        assert_eq!(o.device_index, Some(0));
        let a = crate::oom::analyze("thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: Warmup(Generation(\"CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 22.19 GiB total capacity; 19.37 GiB already allocated; 1.53 GiB free; 22.19 GiB allowed; 19.50 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\"))', router/src/main.rs:216:18");
        let o = a.main().expect("found");
        assert_eq!(o.facts.allowed_bytes, Some(gib(22.19)));
        assert_eq!(o.facts.free_bytes, Some(gib(1.53)));
        let o = tgi("Error: Warmup(Generation(\"Not enough memory to handle 4096 total tokens with 4096 prefill tokens. You need to decrease `--max-batch-total-tokens` or `--max-batch-prefill-tokens`\"))").expect("found");
        assert_eq!(o.format, "tgi-warmup");
        let a = crate::oom::analyze(
            "ERROR text_generation_launcher: Not enough memory to handle `max_total_tokens=8192`",
        );
        assert_eq!(a.main().map(|o| o.format), Some("tgi-max-total-tokens"));
        let a = crate::oom::analyze(
            "Error: there is not enough memory to handle this request on the GPU",
        );
        assert!(
            a.main().is_none(),
            "TGI's words, not any sentence like them"
        );
    }

    /// vLLM's sampler warm-up (`v1/worker/gpu_model_runner.py`) after the PyTorch error it
    /// caught: one failure with PyTorch's figures.
    #[test]
    fn vllms_sampler_warm_up() {
        let a = crate::oom::analyze("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1002.00 MiB. GPU 0 has a total capacity of 23.54 GiB of which 771.44 MiB is free. Including non-PyTorch memory, this process has 22.78 GiB memory in use. Of the allocated memory 21.96 GiB is allocated by PyTorch, and 336.53 MiB is reserved by PyTorch but unallocated.\n\nThe above exception was the direct cause of the following exception:\n\nRuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.");
        assert_eq!(a.total, 1);
        let o = a.main().expect("found");
        assert_eq!((o.framework, o.format), (Framework::Vllm, "vllm-warmup"));
        assert_eq!(o.facts.requested_bytes, Some(1002 << 20));
        assert!(vllm_warmup("CUDA out of memory occurred when warming up pooler (task='embed') with 64 dummy requests. Please try lowering `max_num_seqs`").is_some());
    }

    /// DeepSpeed's inference workspace (`inference_context.h`): the figures it prints before
    /// the exception, in bytes, when the paste has them.
    #[test]
    fn deepspeeds_inference_workspace() {
        let a = crate::oom::analyze("Requested:\t4831838208\nFree:\t1073741824\nTotal:\t25769803776\nTraceback (most recent call last):\n  File \"run.py\", line 3, in <module>\nRuntimeError: Workspace can't be allocated, no enough memory.");
        let o = a.main().expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Deepspeed, "deepspeed-workspace")
        );
        assert_eq!(
            (
                o.facts.requested_bytes,
                o.facts.free_bytes,
                o.facts.total_bytes
            ),
            (Some(4_831_838_208), Some(1 << 30), Some(24 << 30))
        );
        let o =
            deepspeed_workspace("RuntimeError: Workspace can't be allocated, no enough memory.")
                .expect("found");
        assert_eq!(o.facts.requested_bytes, None);
    }

    /// PyTorch MPS's single-buffer check (`MPSAllocator.mm`), in both unit spellings.
    #[test]
    fn mps_invalid_buffer_size_is_one_tensor() {
        let o = mps_buffer_size("RuntimeError: Invalid buffer size: 37.25 GB").expect("found");
        assert_eq!((o.framework, o.format), (Framework::Mps, "mps-buffer-size"));
        assert_eq!(o.facts.requested_bytes, Some(gib(37.25)));
        let o = mps_buffer_size("Invalid buffer size: 372.53 GiB").expect("found");
        assert_eq!(o.facts.requested_bytes, Some(gib(372.53)));
        assert!(mps_buffer_size("Invalid buffer size: 0x12").is_none());
    }

    /// SGLang's KV pool (`model_runner.py` / `pool_configurator.py`, `mem_cache/common.py`);
    /// its CUDA-graph failure message names --mem-fraction-static without any memory failure.
    #[test]
    fn sglangs_kv_pool() {
        let o = sglang("ValueError: Loaded weights leave no GPU memory for the KV cache under\n--mem-fraction-static=0.95. Raise --mem-fraction-static above 0.923\n(minimum viable = 1 - available/pre = 0.9224).").expect("found");
        assert_eq!((o.format, o.kv_fraction), ("sglang-kv-pool", Some(0.95)));
        let o = sglang("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.6").expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Sglang, "sglang-kv-pool")
        );
        assert_eq!(o.kv_fraction, Some(0.6));
        let o = sglang(
            "Prefill out of memory. Try to lower your batch size.\nTry to allocate 2177 tokens.",
        )
        .expect("found");
        assert_eq!(o.format, "sglang-prefill");
        let a = crate::oom::analyze("Exception: Capture cuda graph failed: Ninja build failed.\nPossible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n2. set --cuda-graph-max-bs to a smaller value (e.g., 16)");
        assert!(a.main().is_none(), "not a memory failure");
    }

    #[test]
    fn every_fork_in_the_2x_form() {
        for f in FORKS {
            let text = format!("{} out of memory. Tried to allocate 20.00 MiB. {} 2 has a total capacity of 31.00 GiB of which 4.00 MiB is free. Of the allocated memory 30.00 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.", f.word, f.word);
            let o = pytorch_fork(&text).expect("found");
            assert_eq!(
                (o.framework, o.format, o.device_index),
                (f.framework, "pytorch-fork-2.x", Some(2))
            );
            assert_eq!(o.facts.total_bytes, Some(31 << 30));
            assert_eq!(o.facts.reserved_unallocated_bytes, Some(100 << 20));
        }
        assert!(pytorch_fork("CUDA out of memory. Tried to allocate 2 GiB").is_none());
    }

    #[test]
    fn the_tpu_runtime_buffer_and_pytorch_xla() {
        let o = xla_tpu_reserve("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 15.65G. That was not possible. There are 11.08G free.; (0x0x0_HBM0)").expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Jax, "xla-tpu-allocate")
        );
        assert_eq!(o.facts.requested_bytes, Some(gib(15.65)));
        assert_eq!(o.facts.free_bytes, Some(gib(11.08)));
        let o = xla_tpu_reserve("E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   (1) RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory. That was not possible. There are 6.78G free, 0B reserved, and 3.33G reservable.").expect("found");
        assert_eq!(o.framework, Framework::PytorchXla);
    }

    #[test]
    fn the_tpu_runtime_reservation() {
        let o = xla_tpu_reserve("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Error loading program 'jit__identity_fn': Attempting to reserve 13.50G at the bottom of memory. That was not possible. There are 7.48G free, 0B reserved, and 7.48G reservable.").expect("found");
        assert_eq!((o.framework, o.format), (Framework::Jax, "xla-tpu-reserve"));
        assert_eq!(o.facts.requested_bytes, Some(gib(13.5)));
        assert_eq!(o.facts.free_bytes, Some(gib(7.48)));
        assert_eq!(o.facts.reserved_bytes, Some(0));
        assert_eq!(o.facts.reservable_bytes, Some(gib(7.48)));
    }

    /// The table newer TPU runtimes print under the reserve failure (libtpu is closed; the
    /// wording of the task's paste): the exact bytes of "Program requirement" win over the
    /// sentence's rounded "reserve 3.95G", thousands separators and all.
    #[test]
    fn the_tpu_reservation_table_gives_exact_bytes() {
        let t = "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to reserve 3.95G at the bottom of memory. That was not possible. There are 1.92G free, 0B reserved, and 1.92G reservable.\nHBM capacity 8.00G:\nTop-of-Memory reserved: 529.00M ( 554,696,704 bytes)\nCurrently allocated: 6.08G ( 6,532,939,776 bytes)\nProgram requirement: 3.95G ( 4,237,689,856 bytes)\nAvailable after request: -2.55G ( -2,738,163,712 bytes)";
        let o = xla_tpu_reserve(t).expect("found");
        assert_eq!(o.format, "xla-tpu-reserve");
        assert_eq!(o.facts.requested_bytes, Some(4_237_689_856));
        assert_eq!(o.facts.allocated_bytes, Some(6_532_939_776));
        assert_eq!(o.facts.total_bytes, Some(8 << 30));
        assert_eq!(o.facts.free_bytes, Some(gib(1.92)));
        assert_eq!(o.facts.reserved_bytes, Some(0));
        assert_eq!(o.facts.reservable_bytes, Some(gib(1.92)));
        // 8.00G less 6,532,939,776 allocated and 1.92G free: the rounding, nothing outside.
        assert!(o.facts.unaccounted_bytes.is_some_and(|u| u < 64 << 20));
    }

    #[test]
    fn mlx_buffer_size_resource_count_and_command_buffer() {
        let o = metal_buffer_validation("-[MTLDebugDevice newBufferWithBytesNoCopy:length:options:deallocator:]:700: failed assertion `Buffer Validation\nnewBufferWith*:length 0x6692c000 must not exceed 1024 MB.").expect("found");
        assert_eq!(
            (o.framework, o.facts.requested_bytes, o.facts.total_bytes),
            (Framework::Metal, Some(0x6692_c000), Some(1 << 30))
        );
        assert!(o.facts.total_is_limit);
        assert!(metal_buffer_validation(
            "newBufferWith*:length 0xffffffffffffffffff must not exceed 1024 MB"
        )
        .is_none());
        let o = mlx("RuntimeError: [metal::malloc] Attempting to allocate 128849018880 bytes which is greater than the maximum allowed buffer size of 17179869184 bytes.").expect("found");
        assert_eq!(o.format, "mlx-buffer-size");
        assert_eq!(o.facts.requested_bytes, Some(128_849_018_880));
        assert_eq!(
            (o.facts.total_bytes, o.facts.total_is_limit),
            (Some(16 << 30), true)
        );
        let o =
            mlx("RuntimeError: [metal::malloc] Resource limit (499000) exceeded.").expect("found");
        assert_eq!(
            (o.format, o.memory, o.buffer_limit),
            ("mlx-resource-limit", MemoryKind::Buffers, Some(499_000))
        );
        assert_eq!(o.facts, Facts::default(), "a count, never read as bytes");
        let o = mlx("RuntimeError: [malloc_or_wait] Unable to allocate 4294967296 bytes.")
            .expect("found");
        assert_eq!(
            (o.format, o.facts.requested_bytes),
            ("mlx-unable", Some(4 << 30))
        );
    }

    #[test]
    fn llama_cpp_backends() {
        let cases = [
            ("alloc_tensor_range: failed to allocate Vulkan0 buffer of size 1056622080", "ggml-vulkan", Some(1_056_622_080), Some(0)),
            ("ggml_backend_sycl_buffer_type_alloc_buffer: can't allocate 3503030272 Bytes of memory on device", "ggml-sycl", Some(3_503_030_272), None),
            ("ggml_backend_metal_buffer_type_alloc_buffer: error: failed to allocate buffer, size = 13.00 MiB", "ggml-metal", Some(13 << 20), None),
            ("ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory", "ggml-vulkan", None, None),
        ];
        for (text, format, req, dev) in cases {
            let o = ggml_backend(text).expect(text);
            assert_eq!(
                (o.format, o.facts.requested_bytes, o.device_index),
                (format, req, dev),
                "{text}"
            );
        }
        assert!(ggml_backend("failed to allocate CPU buffer of size 100").is_none());
        assert!(
            ggml_backend("myapp: can't allocate 64 MiB for the log ring").is_none(),
            "SYCL's wording without its function needs its own end"
        );
    }

    #[test]
    fn the_cpu_allocator_is_host_memory() {
        let o = pytorch_cpu("RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes.").expect("found");
        assert_eq!(o.memory, MemoryKind::Host);
        assert_eq!(o.facts.requested_bytes, Some(1 << 30));
    }

    /// TensorFlow's CPU allocators print the GPU's sentence; the allocator or the device says
    /// it is the host's RAM. The GPU's BFC allocator is not taken for one.
    #[test]
    fn tensorflows_usage_report_alone_is_its_failure() {
        // discuss.tf.wiki/t/topic/171: the report pasted without the error's head.
        let t = "Current usage from device: /job:localhost/replica:0/task:0/device:GPU:0, allocator: GPU_0_bfc\n  450.14MiB from shared_model/unet_01/BiasAdd-0-1-TransposeNCHWToNHWC-LayoutOptimizer\n  450.00MiB from shared_model/unet_00/Conv2D";
        let o = tensorflow_usage_report(t).expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index, o.memory),
            (
                Framework::Tensorflow,
                "tensorflow-usage-report",
                Some(0),
                MemoryKind::Device
            )
        );
        assert_eq!(o.facts, Facts::default());
        let host = "Current usage from device: /job:localhost/replica:0/task:0/device:CPU:0, allocator: cpu";
        let o = tensorflow_usage_report(host).expect("found");
        assert_eq!((o.memory, o.device_index), (MemoryKind::Host, None));
        assert!(tensorflow_usage_report("current usage from device is low").is_none());
    }

    #[test]
    fn tensorflows_cpu_allocators_are_host_memory() {
        for text in [
            "OOM when allocating tensor with shape[24,1,2304,1152,3] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu",
            "ResourceExhaustedError: OOM when allocating tensor with shape[32,64,224,224] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator mklcpu",
            "OOM when allocating tensor with shape[1024,1024] and type float by allocator mklcpu",
            "Allocator (mklcpu) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)",
        ] {
            let o = tensorflow_cpu(text).expect(text);
            assert_eq!(
                (o.format, o.memory, o.device_index),
                ("tensorflow-cpu", MemoryKind::Host, None),
                "{text}"
            );
        }
        let o = tensorflow_cpu(
            "OOM when allocating tensor with shape[1024,1024,256] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu",
        )
        .expect("found");
        assert_eq!(o.facts.requested_bytes, Some(1 << 30));
        let o = tensorflow_cpu("Allocator (gpu_host_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)requested by op IteratorGetNext").expect("found");
        assert_eq!(
            (o.format, o.memory, o.facts.requested_bytes),
            (
                "tensorflow-pinned-host",
                MemoryKind::PinnedHost,
                Some(1 << 30)
            )
        );
        for text in [
            "OOM when allocating tensor with shape[3,3,512,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc [Op:Mul]",
            "Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.14GiB",
        ] {
            assert!(tensorflow_cpu(text).is_none(), "{text}");
        }
    }

    /// XLA's stream executor under JAX: the framework from jaxlib's paths or JAX's traceback,
    /// the device ordinal, the request or the driver's total; TensorFlow's own build is left
    /// to the stream executor's reader.
    #[test]
    fn jax_through_xlas_stream_executor() {
        let o = xla_stream_executor("W external/org_tensorflow/tensorflow/compiler/xla/service/platform_util.cc:200] unable to create StreamExecutor for CUDA:2: failed initializing StreamExecutor for CUDA device ordinal 2: INTERNAL: failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY: out of memory; total memory reported: 34089730048").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index, o.facts.total_bytes),
            (Framework::Jax, "xla-context", Some(2), Some(34_089_730_048))
        );
        let o = xla_stream_executor("E external/xla/xla/stream_executor/cuda/cuda_driver.cc:1010] failed to allocate 3.00GiB (3221225472 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory").expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.requested_bytes),
            (Framework::Jax, "xla-device-alloc", Some(3 << 30))
        );
        let o = xla_stream_executor("E0101 cuda_driver.cc:1050] failed to alloc 2147483648 bytes unified memory; result: CUDA_ERROR_OUT_OF_MEMORY: out of memory  File \"/x/site-packages/jax/_src/api.py\", line 1").expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.requested_bytes),
            (Framework::Jax, "xla-unified-memory", Some(2 << 30))
        );
        let o = xla_stream_executor("failed to alloc 2147483648 bytes unified memory; result: CUDA_ERROR_OUT_OF_MEMORY: out of memory").expect("found");
        assert_eq!(o.framework, Framework::Cuda);
        assert!(xla_stream_executor("E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:802] failed to allocate 14.75G (15837691904 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory").is_none());
        assert!(xla_stream_executor("E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:1] failed to allocate 1.00G (1073741824 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY").is_none());
    }

    /// PyTorch's 1 EiB check, with each allocator's device word; the NVML assertion that replaces
    /// an out-of-memory message; XLA's constant; ComfyUI's relays of cudaMallocAsync's message.
    #[test]
    fn messages_that_stand_in_for_pytorchs_and_xlas_own() {
        // ComfyUI's banner under a node's name.
        let o = oom_class_cut("why show :HeartMuLa_Generate\nAllocation on device\nThis error means you ran out of memory on your GPU.").expect("found");
        assert_eq!(o.format, "pytorch-cudamallocasync");
        let o = pytorch_1eb(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.",
        )
        .expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.requested_bytes),
            (Framework::Pytorch, "pytorch-1eb", Some(1 << 60))
        );
        let o =
            pytorch_1eb("RuntimeError: NPU out of memory. Tried to allocate more than 1EB memory")
                .expect("found");
        assert_eq!(o.framework, Framework::Npu);
        assert!(pytorch_1eb("Tried to allocate more than 1 GiB").is_none());
        let o = pytorch_nvml_assert("RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at \"/opt/pytorch/pytorch/c10/cuda/CUDACachingAllocator.cpp\":838").expect("found");
        assert_eq!(o.format, "pytorch-nvml-assert");
        // The same assertion elsewhere is not the allocator's out-of-memory path.
        assert!(pytorch_nvml_assert(
            "NVML_SUCCESS == r INTERNAL ASSERT FAILED at \"/x/torch/csrc/cuda/Module.cpp\":12"
        )
        .is_none());
        let o = xla_stream_executor("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to allocate 7077888 bytes for new constant").expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.requested_bytes),
            (Framework::Jax, "xla-constant", Some(7_077_888))
        );
        for text in [
            "2025-01-17T13:06:38 - !!! Exception during processing !!! Allocation on device ",
            "- Exception Type: torch.OutOfMemoryError - Exception Message: Allocation on device",
        ] {
            let o = oom_class_cut(text).expect(text);
            assert_eq!(o.format, "pytorch-cudamallocasync", "{text}");
        }
        assert!(oom_class_cut("!!! Exception during processing !!! 'NoneType' object").is_none());
    }

    /// NCCL's allocators' warnings (`alloc.h`): the request and the device of the log prefix,
    /// alone or after NCCL's CUDA check; the host's allocation is pinned host memory.
    #[test]
    fn nccls_allocation_warnings_give_the_request_and_device() {
        let o = cuda_code("ng1:30:31 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\nng1:30:31 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes").expect("found");
        assert_eq!(
            (o.format, o.device_index, o.facts.requested_bytes, o.memory),
            ("cuda-nccl", Some(3), Some(6_291_456), MemoryKind::Device)
        );
        for (text, bytes) in [
            ("NCCL WARN Failed to CUDA calloc async 2432 bytes", 2432),
            (
                "alloc.h:120 NCCL WARN Failed to CUDA malloc 536870912 bytes",
                536_870_912,
            ),
        ] {
            let o = cuda_code(text).expect(text);
            assert_eq!(
                (o.format, o.facts.requested_bytes, o.device_index),
                ("cuda-nccl", Some(bytes), None),
                "{text}"
            );
        }
        let o = cuda_code("NCCL WARN Failed to CUDA host alloc 1048576 bytes").expect("found");
        assert_eq!(
            (o.memory, o.facts.requested_bytes),
            (MemoryKind::PinnedHost, Some(1 << 20))
        );
        // A size in another wording is not NCCL's.
        assert!(cuda_code("Failed to CUDA calloc some bytes").is_none());
    }

    /// A CUDA.jl build's warning as its pool retries: the status printed before it is read.
    #[test]
    fn julias_retry_warning_reads_the_status_before_it() {
        let gib = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        let o = julia_gpu("julia> train()\nEffective GPU memory usage: 99.55% (11.688 GiB/11.741 GiB)\nMemory pool usage: 8.505 GiB (10.406 GiB reserved)\nWARNING: CUDA memory allocation failed; attempting to free up memory...\n... running a quick GC (freed 8.292 GiB)").expect("found");
        assert_eq!((o.framework, o.format), (Framework::Cuda, "cuda-jl-retry"));
        assert_eq!(o.facts.total_bytes, Some(gib(11.741)));
        assert_eq!(o.facts.allocated_bytes, Some(gib(8.505)));
        assert_eq!(o.facts.reserved_bytes, Some(gib(10.406)));
        // Without Julia's words, the sentence is no one's.
        assert!(julia_gpu(
            "WARNING: CUDA memory allocation failed; attempting to free up memory..."
        )
        .is_none());
    }

    /// Julia's GPU packages: CUDA.jl's OutOfGPUMemoryError with its pool's status, without a
    /// size, CuArrays' older pool line, AMDGPU.jl; the sentence without Julia's words is not.
    #[test]
    fn julias_out_of_gpu_memory_error_and_its_pool_status() {
        let gib = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        let o = julia_gpu("ERROR: LoadError: Out of GPU memory trying to allocate 1.863 GiB\nEffective GPU memory usage: 99.73% (7.772 GiB/7.793 GiB)\nMemory pool usage: 5.648 GiB (5.656 GiB reserved)\nStacktrace:").expect("found");
        assert_eq!((o.framework, o.format), (Framework::Cuda, "cuda-jl"));
        let f = &o.facts;
        assert_eq!(f.requested_bytes, Some(gib(1.863)));
        assert_eq!(
            (f.total_bytes, f.device_used_bytes),
            (Some(gib(7.793)), Some(gib(7.772)))
        );
        assert_eq!(
            (f.allocated_bytes, f.reserved_bytes),
            (Some(gib(5.648)), Some(gib(5.656)))
        );
        assert_eq!(f.free_bytes, Some(gib(7.793) - gib(7.772)));
        assert!(f.derived.contains(&"free_bytes"));
        let o = julia_gpu("ERROR: AssertionError: hipMallocAsync resulted in C_NULL for 8.000 MiB\nStacktrace:\n [1] #HIPBuffer#25").expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.requested_bytes),
            (Framework::Rocm, "amdgpu-jl", Some(8 << 20))
        );
        let o = julia_gpu("ERROR: Out of GPU memory\nStacktrace:\n  [1] throw_api_error(res::CUDA.cudaError_enum)").expect("found");
        assert_eq!((o.format, o.facts.known()), ("cuda-jl", 0));
        let o = julia_gpu("Out of GPU memory trying to allocate 512.000 MiB\nEffective GPU memory usage: 83.49% (10.019 GiB/12.000 GiB)\nCuArrays allocator usage: 7.917 GiB\nBinnedPool usage: 7.917 GiB (6.043 GiB allocated, 1.874 GiB cached)").expect("found");
        assert_eq!(
            (
                o.facts.allocated_bytes,
                o.facts.reserved_unallocated_bytes,
                o.facts.reserved_bytes
            ),
            (Some(gib(6.043)), Some(gib(1.874)), Some(gib(7.917)))
        );
        // CuArrays' allocator line: what it holds from CUDA, and its cap.
        let o = julia_gpu("Out of GPU memory trying to allocate 8.016 MiB\nEffective GPU memory usage: 91.54% (14.446 GiB/15.782 GiB)\nCUDA allocator usage: 13.984 GiB (capped at 14.000 GiB)\nbinned usage: 15.141 KiB (15.141 KiB allocated, 0 bytes cached)\nDiscrepancy of 13.984 GiB between memory pool and allocator!").expect("found");
        assert_eq!(
            (
                o.facts.reserved_bytes,
                o.facts.allowed_bytes,
                o.facts.allocated_bytes
            ),
            (Some(gib(13.984)), Some(gib(14.0)), Some(15_504))
        );
        assert_eq!(o.facts.reserved_unallocated_bytes, None);
        let o = julia_gpu("Out of GPU memory trying to allocate 2.000 GiB\n  @ AMDGPU ~/.julia/packages/AMDGPU/x/src/memory.jl:12").expect("found");
        assert_eq!((o.framework, o.format), (Framework::Rocm, "amdgpu-jl"));
        assert!(julia_gpu("The game says Out of GPU memory when I load the map").is_none());
    }

    /// CUDA's error 2 relayed by Thrust, NCCL, spconv, HAMi-core or as a bare number; any
    /// other number is not memory.
    #[test]
    fn cudas_error_2_as_other_libraries_print_it() {
        let cases = [
            ("terminate called after throwing an instance of 'thrust::system::system_error' what(): parallel_for failed: cudaErrorMemoryAllocation: out of memory", "cuda-thrust"),
            ("merge_sort: failed on 2nd step: cudaErrorMemoryAllocation: out of memory", "cuda-thrust"),
            // Older Thrust: the runtime's words alone (NVIDIA/thrust#1006).
            ("  what():  parallel_for failed: out of memory", "cuda-thrust"),
            ("reduce failed on 2nd step: out of memory", "cuda-thrust"),
            ("host:1:2 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'", "cuda-nccl"),
            ("enqueue.cc:123 NCCL WARN Cuda failure 2 'out of memory'", "cuda-nccl"),
            ("RuntimeError: src/spconv/indice.cu 125 cuda execution failed with error 2", "cuda-spconv"),
            ("[HAMI-core ERROR (pid:7 thread=1 allocator.c:115)]: cuMemoryAllocate failed res=2", "cuda-hami-core"),
            ("cuMemAlloc_v2 failed: CUresult=2", "cuda-code"),
            ("RuntimeError: CUDA error 2 in cuMemAlloc", "cuda-code"),
            ("CUDA error (2) at kernel.cu:40", "cuda-code"),
            ("RuntimeError: Cuda error: 2[cudaMalloc(&m_gpuPtr, bytes);]", "cuda-code"),
            ("cudaMalloc returned 2", "cuda-code"),
            ("[../gunrock/util/array_utils.cuh, 209 @ gpu 3] value__associate_outs[] cudaMalloc failed (CUDA error 2: out of memory)", "cuda-code"),
            ("RuntimeError: TensorStorage /io/include/tensorview/tensor.h 168 cuda failed with error 2 out of memory. use CUDA_LAUNCH_BLOCKING=1 to get correct traceback.", "cuda-spconv"),
            ("[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103 (5)", "cuda-torch-memory-saver"),
            ("[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/core.cpp func=resume line=185", "cuda-torch-memory-saver"),
            ("[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=csrc/core.cpp func=resume line=172", "cuda-torch-memory-saver"),
            ("RuntimeError: cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling `cusolverDnCreate(handle)`", "cusolver"),
            ("RuntimeError: cuFFT error: CUFFT_ALLOC_FAILED", "cufft"),
            // CUDA.jl (CuArrays) prints the status's description (ThreeDeconv.jl#2).
            ("`CUFFTError(code 2, cuFFT failed to allocate GPU or CPU memory)\n`", "cufft"),
            ("CUSPARSE_STATUS_ALLOC_FAILED", "cusparse"),
            ("curandGenerateNormal failed: CURAND_STATUS_ALLOCATION_FAILED", "curand"),
        ];
        for (text, format) in cases {
            let o = cuda_code(text).expect(text);
            assert_eq!((o.framework, o.format), (Framework::Cuda, format), "{text}");
            assert_eq!(o.facts, Facts::default(), "{text}");
        }
        // A size in bytes before the code, on its line (madMAx43v3r/chia-gigahorse#250).
        let o = cuda_code("  what():  failed to allocate 536870912 bytes of MEM_TYPE_DEVICE: CUDA error 2: out of memory").expect("found");
        assert_eq!(
            (o.format, o.facts.requested_bytes),
            ("cuda-code", Some(512 << 20))
        );
        let o =
            cuda_code("Failed to cudaMalloc 1610612736 bytes on device 0 (error 2 out of memory)")
                .expect("found");
        assert_eq!(
            (o.facts.requested_bytes, o.device_index),
            (Some(1_610_612_736), Some(0))
        );
        // Gunrock's GRError names the device the call ran on.
        let o = cuda_code("[util/array_utils.cuh, 209 @ gpu 3] labels cudaMalloc failed (CUDA error 2: out of memory)").expect("found");
        assert_eq!(o.device_index, Some(3));
        assert_eq!(
            cuda_code("CUDA error 2 at kernel.cu:40 on gpu 3")
                .expect("found")
                .device_index,
            None
        );
        for text in [
            "what(): parallel_for failed: cudaErrorIllegalAddress: an illegal memory access was encountered",
            "NCCL WARN Cuda failure 'invalid resource handle'",
            "NCCL WARN Cuda failure 700 'an illegal memory access was encountered'",
            "src/spconv/indice.cu 120 cuda execution failed with error 98",
            "cuda execution failed with error 700 an illegal memory access was encountered",
            "[HAMI-core ERROR (pid:27 allocator.c:166)]: remove_chunk a_list length is 0 res=0",
            "cuMemAlloc failed: CUresult=700",
            "CUDA error 209 at foo.cu:12",
            "CUDA error 2.5 seconds",
            "RuntimeError: Cuda error: 700[cudaMemcpy(&x, y, n, cudaMemcpyDeviceToHost);]",
            "cudaMalloc returned 20",
            "cuda failed with error 700 an illegal memory access was encountered. use CUDA_LAUNCH_BLOCKING=1 to get correct traceback.",
            "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp func=resume line=214",
            "[torch_memory_saver.cpp] cudaError error: 700 (an illegal memory access was encountered)  file=csrc/core.cpp func=resume line=172",
            "CUSOLVER_STATUS_EXECUTION_FAILED",
            // NCCL's allocation warning after another CUDA error: that error, not memory.
            "x.cc:1 NCCL WARN Cuda failure 'an illegal memory access was encountered'\nalloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes",
        ] {
            assert!(cuda_code(text).is_none(), "{text}");
        }
    }

    #[test]
    fn tensorflow_gpu_init_only_when_out_of_memory() {
        let o = tensorflow_gpu_init("tensorflow.python.framework.errors_impl.InternalError: CUDA runtime implicit initialization on GPU:1 failed. Status: out of memory").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Tensorflow, "tensorflow-gpu-init", Some(1))
        );
        assert!(tensorflow_gpu_init("InternalError: CUDA runtime implicit initialization on GPU:0 failed. Status: device kernel image is invalid").is_none());
    }

    /// torch_memory_saver's ROCm build: hipErrorOutOfMemory is 2 as well.
    #[test]
    fn torch_memory_saver_on_rocm() {
        let o = cuda_code("[torch_memory_saver.cpp] hipError_t error  result=2 file=csrc/torch_memory_saver_hip.cpp func=cu_mem_create line=103").expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Rocm, "cuda-torch-memory-saver")
        );
    }

    #[test]
    fn tensorflow_eager_names_its_device() {
        let o = tensorflow_eager("tensorflow.python.framework.errors_impl.ResourceExhaustedError: {{function_node __wrapped__AddV2_device_/job:localhost/replica:0/task:0/device:GPU:1}} failed to allocate memory [Op:AddV2]").expect("found");
        assert_eq!((o.format, o.device_index), ("tensorflow-eager", Some(1)));
    }

    /// A translated PyTorch sentence is found by its structure, in every spelling the reader
    /// knows, and keeps PyTorch's (or the fork's) meaning; the format says it was translated.
    #[test]
    fn a_translated_sentence_is_found_by_its_structure() {
        use super::super::parse::parse_text;
        for (text, framework, device, request) in [
            ("RuntimeError: CUDA 内存不足。尝试分配 20.00 MiB（GPU 0；总容量 7.79 GiB；已分配 6.03 GiB；空闲 3.56 MiB；PyTorch 总共保留 6.23 GiB）", Framework::Pytorch, Some(0), Some(20 << 20)),
            // The class and the translation's words alone: a report, with no figure.
            ("torch.cuda.OutOfMemoryError: CUDA 显存不足。", Framework::Pytorch, None, None),
            ("RuntimeError: NPU 内存不足。尝试分配 5.03 GiB（NPU 3；总容量 60.96 GiB；已分配 49.47 GiB；空闲 1.32 GiB）", Framework::Npu, Some(3), Some(gib(5.03))),
            ("RuntimeError: CUDA のメモリが不足しています。2.00 GiB を割り当てようとしました (GPU 1; 23.65 GiB 総容量; 2.00 GiB 空き)", Framework::Pytorch, Some(1), Some(2 << 30)),
            ("RuntimeError: CUDA 메모리 부족. 2.00 GiB를 할당하려고 했습니다 (GPU 2; 23.65 GiB 총 용량)", Framework::Pytorch, Some(2), Some(2 << 30)),
            ("RuntimeError: CUDA недостаточно памяти. Пытался выделить 2.00 GiB (GPU 0; 23.65 GiB общей емкости)", Framework::Pytorch, Some(0), Some(2 << 30)),
        ] {
            let o = parse_text(text).unwrap_or_else(|| panic!("not found: {text}"));
            assert_eq!(
                (o.framework, o.device_index, o.facts.requested_bytes),
                (framework, device, request),
                "{text}"
            );
            assert!(o.format.ends_with("translated"), "{text}: {}", o.format);
        }
    }

    /// The caching allocator's parenthesis read by its shape, whatever words head it: a fork's
    /// sentence re-worded into English, each role word before its size. A request with one
    /// role clause, or none, is not enough.
    #[test]
    fn the_allocator_sentence_is_found_by_its_shape() {
        use super::super::parse::parse_text;
        let o = parse_text("RuntimeError: NPU memory is insufficient. Attempting to allocate 386.00 MiB (NPU 1; total capacity 29.49 GiB; allocated 28.90 GiB; currently active 28.90 GiB; free 171.96 MiB; PyTorch has reserved a total of 28.95 GiB).").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Npu, "pytorch-fork-1.x", Some(1))
        );
        let f = &o.facts;
        assert_eq!(
            (
                f.requested_bytes,
                f.total_bytes,
                f.allocated_bytes,
                f.free_bytes,
                f.reserved_bytes
            ),
            (
                Some(386 << 20),
                Some(gib(29.49)),
                Some(gib(28.90)),
                Some(mib(171.96)),
                Some(gib(28.95))
            )
        );
        for text in [
            "Attempting to allocate 386.00 MiB (NPU 1; total capacity 29.49 GiB)",
            "Attempting to allocate 386.00 MiB (GPU 0; see the log)",
        ] {
            assert!(pytorch_shaped(text).is_none(), "{text}");
        }
    }

    /// Prose in those languages is not a message: a size asked for with no clause of the
    /// allocator's beside it, the error named in a sentence, a question, a tip.
    #[test]
    fn translated_prose_is_not_a_message() {
        for text in [
            "32 字节 .ckpt → 尝试分配 40GB（放大 ~12.5 亿倍）",
            "配置文件的 args 部分提供了容器启动时的参数。 \"--vm-bytes\", \"150M\" 参数告知容器尝试分配 150 MiB 内存。",
            "遇到 RuntimeError: CUDA 内存不足 时，可以减小 batch size",
            "为什么会出现 torch.cuda.OutOfMemoryError: CUDA 显存不足？",
            "模型太大，显存不足，メモリ不足",
            "44.35 GiB 已分配、仅约 27 MiB 可用",
        ] {
            assert!(pytorch_translated(text).is_none(), "{text}");
        }
    }

    /// MIOpen's buffer, imaginAIry's space on a device and whisper.cpp's model load, each from
    /// its source's format; whisper.cpp's on the CPU (no device named) is not read as a GPU's.
    #[test]
    fn miopen_imaginairy_and_whisper_cpp() {
        let o = miopen("MIOpen Error: /data/repo/MIOpen/src/hip/handlehip.cpp:70: Memory not available to allocate buffer: 655360000").expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.requested_bytes),
            (Framework::Rocm, "miopen", Some(655_360_000))
        );
        assert!(miopen("Memory not available to allocate buffer: 12").is_none());
        // MIGraphX's check, the same words after its function's name (ONNX Runtime's MIGraphX
        // provider, microsoft/onnxruntime).
        let o = miopen("MIGraphX Error: /code/migraphx/src/src/targets/gpu/hip.cpp:109: allocate_gpu: Memory not available to allocate buffer: 251658240").expect("found");
        assert_eq!(
            (o.format, o.facts.requested_bytes),
            ("migraphx", Some(251_658_240))
        );
        let o =
            imaginairy("RuntimeError: Unable to make 4067.4 MB space on mps:0.").expect("found");
        assert_eq!(
            (o.framework, o.device_index, o.facts.requested_bytes),
            (Framework::Mps, Some(0), Some(4_264_978_022))
        );
        let o = imaginairy("Unable to make 512.0 MB space on cuda:1").expect("found");
        assert_eq!(
            (o.framework, o.device_index, o.facts.requested_bytes),
            (Framework::Pytorch, Some(1), Some(512 << 20))
        );
        let load = "whisper_model_load: failed to allocate memory for the model";
        for (log, device) in [
            (
                "whisper_default_buffer_type: using device Vulkan0 (NVIDIA GeForce MX550)",
                Some(0),
            ),
            ("whisper_backend_init: using CUDA1 backend", Some(1)),
            ("whisper_backend_init: using Metal backend", None),
        ] {
            let o = ggml_whisper(&format!("{log}\n{load}")).expect(log);
            assert_eq!(
                (o.framework, o.format, o.device_index),
                (Framework::Ggml, "ggml-whisper", device),
                "{log}"
            );
        }
        assert!(ggml_whisper(load).is_none());
        assert!(
            ggml_whisper(&format!("whisper_backend_init: using CPU backend\n{load}")).is_none()
        );
    }
}
