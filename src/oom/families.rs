//! The table of message families ([`ALL`]): each entry names its messages and its reader, which
//! says what their figures *mean*. The families here read over the structural reader
//! ([`super::read`]), which recognises sizes, roles and devices; the long-established ones are
//! exact patterns in [`super::known`]. The forks of PyTorch's caching allocator are one family
//! with a device table.

use super::known::{self, oom};
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
        name: "pytorch-fork",
        parse: pytorch_fork,
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
        name: "pytorch-cpu",
        parse: pytorch_cpu,
    },
    Family {
        name: "tensorflow-cpu",
        parse: tensorflow_cpu,
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
        name: "paddle-enforce",
        parse: known::paddle_enforce,
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
        name: "hami-core",
        parse: hami_core,
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
        name: "pytorch-loose",
        parse: pytorch_loose,
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
    loose_re,
    r"(?i)\b(CUDA|HIP|XPU) out of memory\. Tried to allocate"
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
    let device = read::device_named(&t[from..], &[word]).and_then(|d| d.index);
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
    Some(oom(framework, format, device, pytorch_facts(&r)))
}

re!(
    ascend_el0004_re,
    r"EL0004\b\)?:?[^\n]{0,80}?Failed to allocate memory"
);
re!(
    ascend_rtmalloc_re,
    r"(?:rtMalloc|[Mm]alloc|[Aa]lloc(?:ate)?)(?: device memory| physical memory| memory)? fail(?:ed)?[^\n]{0,200}?\bsize\s*[:=]\s*(\d+)(?:,\s*device_?id\s*[:=]\s*(\d+))?"
);
// The device where the trace names it elsewhere: torch_npu's error line ("(PID:28794,
// Device:2, RankID:2) ERR00100"), a runtime line's `device_id`, "open device 2 failed".
re!(
    ascend_device_re,
    r"\bDevice:\s*(\d+), RankID|\bdevice_id\s*[:=]\s*(\d+)|\bopen device (\d+) failed"
);
// torchrun's rank prefixes left inside a line (a paste collapsed onto one line).
re!(ascend_rank_re, r"\[rank\d+\]:\s*");

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
    let m = ascend_el0004_re().find(&t)?;
    let rest = &t[m.start()..];
    let c = ascend_rtmalloc_re().captures(rest);
    let f = Facts {
        requested_bytes: c.as_ref().and_then(|c| c.get(1)?.as_str().parse().ok()),
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
    r"MODULE:PT_DEVMEM\s+Allocation failed for size::?\s*(\d+)"
);

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
    let f = Facts {
        requested_bytes: r.first(Role::Request),
        free_bytes: r.first(Role::Free),
        reserved_bytes: r.first(Role::Reserved),
        reservable_bytes: r.first(Role::Reservable),
        ..Facts::default()
    };
    let device = read::device_named(t, &["TPU"]).and_then(|d| d.index);
    let format = if reserve {
        "xla-tpu-reserve"
    } else {
        "xla-tpu-allocate"
    };
    Some(oom(xla_framework(t), format, device, f))
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
    r"\[metal::malloc\] Attempting to allocate (\d+) bytes which is greater than the maximum allowed buffer size of (\d+) bytes"
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

re!(
    ggml_buffer_re,
    r"failed to allocate ([A-Za-z]+?)(\d*) buffer of size (\d+)|([a-z]+)_buffer_type_alloc_buffer: (?:can't allocate|error: failed to allocate buffer, size =) ([\d.]+ ?(?:Bytes|MiB|GiB|KiB|B))|can't allocate (\d+) Bytes of memory on device"
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
        let device = c.get(2).and_then(|d| d.as_str().parse().ok());
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
    if !ggml_context_re().is_match(t) {
        // A Level Zero device out of memory with no program's words around it: an Intel GPU
        // through SYCL, whose program the text does not say. PI_ERROR_OUT_OF_RESOURCES alone
        // is not enough (the plugin returned it for other resources too).
        return (sycl && m.as_str().contains("OUT_OF_DEVICE_MEMORY"))
            .then(|| oom(Framework::Unknown, "level-zero", None, Facts::default()));
    }
    let format = if sycl { "ggml-sycl" } else { "ggml-vulkan" };
    Some(oom(Framework::Ggml, format, None, Facts::default()))
}

re!(
    tf_eager_re,
    r"(?:ResourceExhaustedError|RESOURCE_EXHAUSTED)\b[^\n]{0,300}?failed to allocate memory|failed to allocate memory \[Op:\w+\]"
);
re!(tf_device_re, r"device:GPU:(\d+)|/GPU:(\d+)");

/// TensorFlow 2's eager error (`ResourceExhaustedError: … failed to allocate memory
/// [Op:AddV2]`): the op that failed, its device; the size is in the BFC line before it, when
/// the paste has it.
fn tensorflow_eager(t: &str) -> Option<Oom> {
    tf_eager_re().find(t)?;
    let device = tf_device_re()
        .captures(t)
        .and_then(|c| c.get(1).or_else(|| c.get(2))?.as_str().parse().ok());
    Some(oom(
        Framework::Tensorflow,
        "tensorflow-eager",
        device,
        Facts::default(),
    ))
}

re!(
    tf_eigen_re,
    r"EigenAllocator for GPU ran out of memory when allocating (\d+)|Ran out of GPU memory when allocating (\d+) bytes for (\S+)"
);

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
    Some(oom(Framework::Tensorflow, "tensorflow-eigen", None, f))
}

re!(
    rocm_thunk_re,
    r"\[hsaKmtAllocMemory(?:Align)?\] failed to allocate (\d+) bytes from (device|scratch|host)|hsa_amd_memory_pool_allocate failed[^\n]{0,40}?HSA_STATUS_ERROR_OUT_OF_RESOURCES"
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
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    if report.is_none() && exact.is_none() && !neuron_status_re().is_match(t) {
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

// XLA's stream executor for CUDA (`xla/stream_executor/cuda/cuda_driver.cc`, and its
// `platform_util.cc` creating one per device): a device allocation, a unified-memory one
// (XLA retries with it where it is asked to), and the primary context that could not be
// created, with the device's total that the driver reported.
re!(
    xla_se_device_re,
    format!(
        r"failed to allocate {} \((\d+) bytes\) from device: (?:\w+: )?CUDA_ERROR_OUT_OF_MEMORY",
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
// NCCL's CUDACHECK (`src/include/checks.h`): "Cuda failure %d '%s'", older "Cuda failure '%s'".
re!(cuda_nccl_re, r"Cuda failure (?:(\d+) )?'([^']{1,80})'");
// spconv 1.x and tensorview's TV_CHECK_CUDA_ERR: "<file> <line> cuda execution failed with error 2".
re!(
    cuda_spconv_re,
    r"(?i)cuda execution failed with error (\d+)\b"
);
// A bare number: `CUresult=2`, `CUDA error 2`, `cudaError 2`, or a cuMemAlloc-family call's
// result (`cuMemoryAllocate failed res=2`, HAMi-core's allocator.c).
re!(
    cuda_number_re,
    r"\bCUresult\s*[=:]?\s*\(?(\d+)\b|\bCUDA (?:error|Error|ERROR)(?: code)?\s*[=:#]?\s*\(?(\d+)\)?(?:[^\d.]|$)|\bcudaError(?:_t)?\s*[=:]?\s*(\d+)\b|\b(?:cuMem\w*Alloc\w*|cuMemoryAllocate|cuMemCreate|cudaMalloc\w*)\b[^\n]{0,80}?\b(?:res|ret|result|status|err|error|code|returned)\s*[=:]?\s*(\d+)\b"
);

/// CUDA's own out-of-memory error relayed by another library, which the format names: Thrust
/// (`thrust::system_error`, "parallel_for failed: cudaErrorMemoryAllocation: out of memory"),
/// NCCL ("Cuda failure 2 'out of memory'"), spconv/tensorview ("cuda execution failed with
/// error 2"), HAMi-core's hooked allocator ("cuMemoryAllocate failed res=2"), or a bare code
/// (`CUresult=2`, `CUDA error 2`). The driver or runtime said it; the message has no figures.
/// A number other than 2 is another error, never read as memory.
fn cuda_code(t: &str) -> Option<Oom> {
    let found = |format| Some(oom(Framework::Cuda, format, None, Facts::default()));
    if t.contains("cudaErrorMemoryAllocation") && cuda_thrust_re().is_match(t) {
        return found("cuda-thrust");
    }
    if let Some(c) = cuda_nccl_re().captures(t) {
        let code = c.get(1).map(|m| m.as_str());
        if code == Some("2") || (code.is_none() && c.get(2)?.as_str() == "out of memory") {
            return found("cuda-nccl");
        }
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
    found("cuda-code")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gib(x: f64) -> u64 {
        (x * (1u64 << 30) as f64).round() as u64
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
        assert!(tensorflow_eigen("EigenAllocator for GPU").is_none());
    }

    /// The thunk's three pools as ROCT's `hsaKmtAllocMemory` names them, and ROCr's status.
    #[test]
    fn rocm_thunk_reads_vram_scratch_and_host() {
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

    #[test]
    fn mlx_buffer_size_resource_count_and_command_buffer() {
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

    /// CUDA's error 2 relayed by Thrust, NCCL, spconv, HAMi-core or as a bare number; any
    /// other number is not memory.
    #[test]
    fn cudas_error_2_as_other_libraries_print_it() {
        let cases = [
            ("terminate called after throwing an instance of 'thrust::system::system_error' what(): parallel_for failed: cudaErrorMemoryAllocation: out of memory", "cuda-thrust"),
            ("merge_sort: failed on 2nd step: cudaErrorMemoryAllocation: out of memory", "cuda-thrust"),
            ("host:1:2 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'", "cuda-nccl"),
            ("enqueue.cc:123 NCCL WARN Cuda failure 2 'out of memory'", "cuda-nccl"),
            ("RuntimeError: src/spconv/indice.cu 125 cuda execution failed with error 2", "cuda-spconv"),
            ("[HAMI-core ERROR (pid:7 thread=1 allocator.c:115)]: cuMemoryAllocate failed res=2", "cuda-hami-core"),
            ("cuMemAlloc_v2 failed: CUresult=2", "cuda-code"),
            ("RuntimeError: CUDA error 2 in cuMemAlloc", "cuda-code"),
            ("CUDA error (2) at kernel.cu:40", "cuda-code"),
            ("cudaMalloc returned 2", "cuda-code"),
        ];
        for (text, format) in cases {
            let o = cuda_code(text).expect(text);
            assert_eq!((o.framework, o.format), (Framework::Cuda, format), "{text}");
            assert_eq!(o.facts, Facts::default(), "{text}");
        }
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
            "cudaMalloc returned 20",
        ] {
            assert!(cuda_code(text).is_none(), "{text}");
        }
    }

    #[test]
    fn tensorflow_eager_names_its_device() {
        let o = tensorflow_eager("tensorflow.python.framework.errors_impl.ResourceExhaustedError: {{function_node __wrapped__AddV2_device_/job:localhost/replica:0/task:0/device:GPU:1}} failed to allocate memory [Op:AddV2]").expect("found");
        assert_eq!((o.format, o.device_index), ("tensorflow-eager", Some(1)));
    }
}
