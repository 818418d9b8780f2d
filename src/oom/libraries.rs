//! Libraries that allocate device memory on their own, outside any framework's caching
//! allocator, and print their own out-of-memory messages: XGBoost, CatBoost and LightGBM on
//! GPUs, FAISS's GPU indexes and MindSpore's device memory pool. Each reader follows the
//! library's own format string (cited at the reader); the figures are read by the words the
//! library prints beside them, and a message that names host memory is said to be host memory.

use super::clean::head;
use super::known::{oom, sz, SIZE};
use super::{Facts, Framework, MemoryKind, Oom};

/// A size as XGBoost's `HumanMemUnit` prints it (`src/common/common.cc`: the value over
/// 1024^n with the unit "GB", "MB", "KB" or "B", no space), or a bare count of bytes as
/// releases before 2.1 printed it.
fn xgb_size(num: &str, unit: Option<&str>) -> Option<u64> {
    let v: f64 = num.parse().ok()?;
    let scale = match unit {
        Some("GB") => (1u64 << 30) as f64,
        Some("MB") => (1u64 << 20) as f64,
        Some("KB") => 1024.0,
        _ => 1.0,
    };
    let b = v * scale;
    (b.is_finite() && b >= 0.0 && b < u64::MAX as f64).then(|| b.round() as u64)
}

// XGBoost's `dh::detail::ThrowOOMError` (`src/common/device_helpers.cuh` 1.x,
// `src/common/device_helpers.cu` 2.x, `cuda_dr_utils`-era 3.x): "Memory allocation error on
// worker <rank>: <what>\n- Free memory: <n>\n- Requested memory: <n>", and from 3.1 "- Reserved
// by the pool: <n>" and "- Used by the pool: <n>" (the CUDA default memory pool's
// cudaMemPoolAttrReservedMemCurrent / UsedMemCurrent).
re!(xgb_head_re, r"Memory allocation error on worker \d+: ");
re!(
    xgb_figure_re,
    r"- ?(Free memory|Requested memory|Reserved by the pool|Used by the pool): ?(\d+(?:\.\d+)?) ?(GB|MB|KB|B)?\b"
);
// A CUDA status relayed as a `thrust::system_error` (or its `bad_alloc`): Thrust's own
// algorithms ("parallel_for failed: out of memory", and since CUDA 11's Thrust with the
// enum's name, "…: cudaErrorMemoryAllocation: out of memory"), or XGBoost's `dh::safe_cuda`
// (`ThrowOnCudaError` throws `thrust::system_error(code, thrust::cuda_category(),
// file + "(" + line + ")")`: "…/device_helpers.cuh(456): out of memory").
re!(
    thrust_what_re,
    r"thrust::system::(?:system_error|detail::bad_alloc)'?[^\n]{0,40}?what\(\): {0,4}[^\n]{0,300}?(?:cudaErrorMemoryAllocation: ?)?out of memory"
);

/// XGBoost's GPU allocator: its own message with the device's free memory and the request
/// (and, from 3.1, the CUDA memory pool's reserved and used figures), or a CUDA error 2 that
/// XGBoost's code relayed through Thrust. The worker number is the Rabit/collective rank, not
/// a device.
pub(super) fn xgboost(t: &str) -> Option<Oom> {
    if let Some(start) = xgb_head_re().find(t) {
        let rest = &t[start.end()..];
        // The `what` of the failure: only CUDA's error 2 or RMM's out_of_memory is device
        // memory; XGBoost prints the same head for whatever its allocator threw.
        let what = head(rest, 300);
        if !(what.contains("out of memory")
            || what.contains("out_of_memory")
            || what.contains("cudaErrorMemoryAllocation"))
        {
            return None;
        }
        let mut f = Facts::default();
        for c in xgb_figure_re().captures_iter(head(rest, 2000)) {
            let (Some(key), Some(num)) = (c.get(1), c.get(2)) else {
                continue;
            };
            let bytes = xgb_size(num.as_str(), c.get(3).map(|m| m.as_str()));
            let slot = match key.as_str() {
                "Free memory" => &mut f.free_bytes,
                "Requested memory" => &mut f.requested_bytes,
                "Reserved by the pool" => &mut f.reserved_bytes,
                _ => &mut f.allocated_bytes,
            };
            if slot.is_none() {
                *slot = bytes;
            }
        }
        return Some(oom(Framework::Xgboost, "xgboost-alloc", None, f));
    }
    let xgb = t.contains("xgboost") || t.contains("XGBoost");
    (xgb && t.contains("thrust::system") && thrust_what_re().is_match(t))
        .then(|| oom(Framework::Xgboost, "xgboost-thrust", None, Facts::default()))
}

/// A `thrust::system_error` whose `what()` is CUDA's out-of-memory, from any program (the
/// XGBoost reader comes first and names its own).
/// Thrust's own `thrust::system::detail::bad_alloc` (`thrust/system/detail/bad_alloc.h`),
/// which its CUDA back end throws when a temporary buffer's cudaMalloc fails, is CUDA's
/// out-of-memory by its class alone (its `what()` may be cut off).
pub(super) fn thrust(t: &str) -> Option<Oom> {
    ((t.contains("thrust::system") && thrust_what_re().is_match(t))
        || t.contains("thrust::system::detail::bad_alloc"))
    .then(|| oom(Framework::Cuda, "cuda-thrust", None, Facts::default()))
}

// CatBoost's `TStackLikeMemoryPool::Create` (`catboost/cuda/cuda_lib/memory_pool/
// stack_like_memory_pool.h`): "Error: Out of memory. Requested <MB> MB; Free <MB> MB", sizes
// over `MB = 1024.0 * 1024.0` (releases before 0.9 printed them without " MB"). Its
// `CUDA_SAFE_CALL` (`cuda_lib/cuda_base.h`): "CUDA error <n>: <cudaGetErrorString>".
re!(
    catboost_pool_re,
    r"Out of memory\. Requested (\d+(?:\.\d+)?)(?: ?MB)?; Free (\d+(?:\.\d+)?)(?: ?MB)?"
);
re!(
    catboost_cuda_re,
    r"catboost/cuda/\S*:\d+: CUDA error (\d+): "
);

/// CatBoost on GPU: its memory pool could not fit a request (the pool is the `gpu_ram_part`
/// of the GPU that CatBoost took at start-up, so "Free" is what is left in the pool, not on
/// the device), or a CUDA call returned error 2.
pub(super) fn catboost(t: &str) -> Option<Oom> {
    let catboost = t.contains("TOutOfMemoryError") || t.contains("catboost");
    if !catboost {
        return None;
    }
    if let Some(c) = catboost_pool_re().captures(t) {
        let mib = |i: usize| {
            let v: f64 = c.get(i)?.as_str().parse().ok()?;
            let b = v * (1u64 << 20) as f64;
            (b.is_finite() && b < u64::MAX as f64).then(|| b.round() as u64)
        };
        let f = Facts {
            requested_bytes: mib(1),
            free_bytes: mib(2),
            ..Facts::default()
        };
        return Some(oom(Framework::Catboost, "catboost-pool", None, f));
    }
    let c = catboost_cuda_re().captures(t)?;
    (c.get(1)?.as_str() == "2")
        .then(|| oom(Framework::Catboost, "catboost-cuda", None, Facts::default()))
}

// LightGBM's CUDA checks (`include/LightGBM/cuda/cuda_utils.h`, `CUDASUCCESS_OR_FATAL`):
// "[CUDA] <cudaGetErrorString> <file> <line>", in 3.x "CUDA_RUNTIME: <…> <file> <line>",
// through `Log::Fatal` ("[LightGBM] [Fatal] …"). Error 2's string is "out of memory".
re!(
    lightgbm_cuda_re,
    r"\[LightGBM\] \[Fatal\] (?:\[CUDA\]|CUDA_RUNTIME:) out of memory\b"
);

// LightGBM's OpenCL GPU learner (`device_type='gpu'`) allocates through Boost.Compute, whose
// `opencl_error::what()` is the OpenCL status's text (`boost/compute/exception/opencl_error.hpp`):
// CL_MEM_OBJECT_ALLOCATION_FAILURE is "Memory Object Allocation Failure", a device buffer; its
// "Out of Host Memory" is the host's.
re!(
    opencl_alloc_re,
    r"(?:boost::compute::opencl_error|LightGBMError)[^\n]{0,80}?(?:what\(\): {0,4}|: )Memory Object Allocation Failure"
);

/// LightGBM on a GPU: its CUDA build's CUDA error 2, or its OpenCL learner's failed buffer.
pub(super) fn lightgbm(t: &str) -> Option<Oom> {
    if lightgbm_cuda_re().is_match(t) {
        return Some(oom(
            Framework::Lightgbm,
            "lightgbm-cuda",
            None,
            Facts::default(),
        ));
    }
    // Boost.Compute's words alone are any OpenCL program's (the GPU-API table reads them);
    // LightGBM's only where the text names it.
    (opencl_alloc_re().is_match(t) && t.to_ascii_lowercase().contains("lightgbm")).then(|| {
        oom(
            Framework::Lightgbm,
            "lightgbm-opencl",
            None,
            Facts::default(),
        )
    })
}

// FAISS's `StandardGpuResourcesImpl::allocMemory` (`faiss/gpu/StandardGpuResources.cpp`,
// 1.7–1.9): "StandardGpuResources: alloc fail type <AllocType> dev <n> space <Device|Unified>
// stream <ptr> size <n> bytes (cudaMalloc error <string> [<code>])" ("… failed
// (cudaMallocManaged error …" for unified memory); 1.6's "Failed to cudaMalloc <n> bytes on
// device <n> (error <code> <string>" and 1.5's `allocMemorySpaceV` (`gpu/utils/
// MemorySpace.cpp`) "failed to cudaMalloc <n> bytes (error <code> <string>)".
re!(
    faiss_alloc_re,
    r"StandardGpuResources: alloc fail type (\w+) dev (\d+) space (\w+) stream \S+ size (\d+) bytes(?: failed)? \(cudaMalloc(?:Managed)? error [^\[\n]{0,60}\[(\d+)\]"
);
re!(
    faiss_old_re,
    r"(?i)failed to cudaMalloc (\d+) bytes(?: on device (\d+))? \(error (\d+)\b"
);
// FAISS up to 1.5.0 (`gpu/utils/MemorySpace.cpp`, v1.2.1 to v1.5.0, `allocMemorySpace`; 1.5.1
// switched to the "(error N …)" form above):
// `FAISS_ASSERT_FMT(cudaMalloc(p, size) == cudaSuccess, "Failed to cudaMalloc %zu bytes",
// size)` (and "Failed to cudaMallocManaged %zu bytes" for unified memory), which `FaissAssert.h`
// prints as "Faiss assertion '<expr>' failed in <function> at <file>:<line>; details: <msg>"
// and aborts. No status is printed: a failed cudaMalloc of the index's own data, which is the
// device being full (the only other failures, a bad device or context, fail earlier calls).
re!(
    faiss_assert_re,
    r"Faiss assertion '[^'\n]{0,80}cudaMalloc(?:Managed)?\([^'\n]{0,60}== ?cudaSuccess' failed[^\n]{0,400}?Failed to cudaMalloc(?:Managed)? (\d+) bytes"
);

/// FAISS's GPU resources: a `cudaMalloc` for an index's data or its temporary memory failed.
/// Only CUDA's error 2 is memory.
pub(super) fn faiss(t: &str) -> Option<Oom> {
    if let Some(c) = faiss_alloc_re().captures(t) {
        if c.get(5)?.as_str() != "2" {
            return None;
        }
        let f = Facts {
            requested_bytes: c.get(4)?.as_str().parse().ok(),
            ..Facts::default()
        };
        let device = c.get(2)?.as_str().parse().ok();
        // StackDeviceMemory reserves its whole stack as one TemporaryMemoryBuffer when the
        // resources first start on a device (`StackDeviceMemory.cpp`); a single need larger
        // than the stack is allocated alone as TemporaryMemoryOverflow.
        let format = match c.get(1)?.as_str() {
            "TemporaryMemoryBuffer" => "faiss-temp-buffer",
            "TemporaryMemoryOverflow" => "faiss-temp-overflow",
            _ => "faiss-alloc",
        };
        return Some(oom(Framework::Faiss, format, device, f));
    }
    if let Some(c) = faiss_assert_re().captures(t) {
        let f = Facts {
            requested_bytes: c.get(1)?.as_str().parse().ok(),
            ..Facts::default()
        };
        return Some(oom(Framework::Faiss, "faiss-alloc", None, f));
    }
    let c = faiss_old_re().captures(t)?;
    if c.get(3)?.as_str() != "2" || !(t.contains("faiss") || t.contains("Faiss")) {
        return None;
    }
    let f = Facts {
        requested_bytes: c.get(1)?.as_str().parse().ok(),
        ..Facts::default()
    };
    let device = c.get(2).and_then(|m| m.as_str().parse().ok());
    Some(oom(Framework::Faiss, "faiss-alloc", device, f))
}

// Sophgo's libsophon (BM1684/BM1684X/BM1688 TPUs), `bmlib/src/bmlib_memory.cpp`
// (`bm_malloc_device_mem` and its heap-mask variants, libsophon 0.4 to 0.5): "bm_alloc_gmem
// failed, dev_id = %d, size = 0x%x" through `bmlib_log` with the tag `bmlib_memory`
// ("[bmlib_memory][error] …"), returning BM_ERR_NOMEM; in its memory-pool mode "No memory in
// device mem". BMRuntime (`bmrt`) then reports the same request in decimal: "[BMRT]
// [must_alloc_device_mem:N] FATAL:device mem alloc failed: size=4759552[0x48a000] …", and
// sophon-stream's STREAM_CHECK "Alloc Device Memory Failed! Program Terminated.".
re!(
    bmlib_re,
    r"bm_alloc_gmem failed, dev_id ?= ?(\d{1,3}), size ?= ?0x([0-9a-fA-F]{1,16})\b|\bdevice mem alloc failed: size=(\d{1,20})\b"
);
re!(
    bmlib_words_re,
    r"\[bmlib_memory\]|\[BMRT\]|\bbm_[a-z_]+|bmrt|sophon|BM_CHECK"
);

/// A Sophgo TPU's device memory (libsophon's bmlib): the request, read from bmlib's hex size
/// or BMRuntime's decimal one, and the device (`dev_id`).
pub(super) fn sophgo(t: &str) -> Option<Oom> {
    if !bmlib_words_re().is_match(t) {
        return None;
    }
    let mut f = Facts::default();
    let mut device = None;
    for c in bmlib_re().captures_iter(head(t, 20_000)) {
        if let Some(hex) = c.get(2) {
            if device.is_none() {
                device = c.get(1).and_then(|d| d.as_str().parse().ok());
            }
            f.requested_bytes = f
                .requested_bytes
                .or_else(|| u64::from_str_radix(hex.as_str(), 16).ok());
        } else if let Some(dec) = c.get(3) {
            f.requested_bytes = f.requested_bytes.or_else(|| dec.as_str().parse().ok());
        }
        if f.requested_bytes.is_some() && device.is_some() {
            break;
        }
    }
    f.requested_bytes?;
    Some(oom(Framework::Sophgo, "sophgo-bmlib", device, f))
}

// MindSpore's runtime (`mindspore/ccsrc/runtime/graph_scheduler/actor/…`, the
// `SET_OPCONTEXT_MEMORY_ALLOC_FAIL_BY_STRATEGY` macro of `actor_common.h`, 1.6–2.x):
// "Device(id:<n>) memory isn't enough and alloc failed, kernel name: <k>, alloc size: <n>B."
// (the same for the CPU device without "Device(id:…)": host memory); 1.x's "Device memory
// isn't enough and alloc failed, (actor|kernel) name: <k>, alloc size: <n>"; Ascend's
// `AscendMemAdapter` "Out of Memory!!! Request memory size: <n>B, Memory Statistic:\nDevice HBM
// memory size: <MiB>M\nMindSpore Used memory size: <MiB>M…" (`ascend_memory_adapter.cc`,
// `DevMemStatistics`, `/ kMBToByte`); and the dynamic pool's "TotalUsedMemStatistics : <n>
// plus TotalUsedByEventMemStatistics : <n> and plus alloc size : <n> is more than total mem
// size : <n>." (`mem_dynamic_allocator.cc`).
re!(
    ms_alloc_re,
    r"(?:Device\(id: ?(\d+)\) memory|(Device memory)|\b(Memory)) isn't enough and alloc failed[^\n]{0,300}?alloc size: ?(\d+)"
);
re!(
    ms_static_re,
    r"Out of Memory!!! Request memory size: (\d+)B?"
);
re!(ms_hbm_re, r"Device HBM memory size: (\d+)M\b");
// PyNative mode's kernel launch (`mindspore/ccsrc/runtime/pynative/op_runner.cc`, 2.x): "Malloc
// for kernel output failed, Memory isn't enough, node:<scope>" (earlier without "Memory isn't
// enough") when the device context could not allocate the kernel's outputs. No size.
re!(
    ms_kernel_output_re,
    r"Malloc for kernel output failed,(?: Memory isn't enough,)? node: ?(\S+)"
);
re!(ms_used_re, r"MindSpore Used memory size: (\d+)M\b");
re!(
    ms_pool_re,
    r"TotalUsedMemStatistics ?: ?(\d+) plus TotalUsedByEventMemStatistics ?: ?(\d+) and plus alloc size ?: ?(\d+) is more than total mem size ?: ?(\d+)"
);

/// MindSpore on Ascend or GPU: its device memory pool could not serve a kernel's output or a
/// graph's static memory.
pub(super) fn mindspore(t: &str) -> Option<Oom> {
    if let Some(c) = ms_pool_re().captures(t) {
        let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
        let f = Facts {
            requested_bytes: n(3),
            total_bytes: n(4),
            total_is_limit: true,
            allocated_bytes: n(1).zip(n(2)).and_then(|(a, b)| a.checked_add(b)),
            ..Facts::default()
        };
        return Some(oom(Framework::Mindspore, "mindspore-pool", None, f));
    }
    if let Some(c) = ms_static_re().captures(t) {
        let mib = |re: &super::lazy::LazyRegex| {
            re.captures(t)?
                .get(1)?
                .as_str()
                .parse::<u64>()
                .ok()?
                .checked_mul(1 << 20)
        };
        let f = Facts {
            requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
            total_bytes: mib(ms_hbm_re()),
            reserved_bytes: mib(ms_used_re()),
            ..Facts::default()
        };
        return Some(oom(Framework::Mindspore, "mindspore-static", None, f));
    }
    if ms_kernel_output_re().is_match(t) {
        return Some(oom(
            Framework::Mindspore,
            "mindspore-kernel-output",
            None,
            Facts::default(),
        ));
    }
    let c = ms_alloc_re().captures(t)?;
    let f = Facts {
        requested_bytes: c.get(4).and_then(|m| m.as_str().parse().ok()),
        ..Facts::default()
    };
    let device = c.get(1).and_then(|m| m.as_str().parse().ok());
    let mut o = oom(Framework::Mindspore, "mindspore-alloc", device, f);
    if c.get(3).is_some() {
        o.format = "mindspore-cpu";
        o.memory = MemoryKind::Host;
    }
    Some(o)
}

// PaddlePaddle's allocators for devices other than CUDA GPUs: Kunlun XPUs
// (`paddle/phi/core/memory/allocation/xpu_allocator.cc`: "Out of memory error on XPU %d. Cannot
// allocate %s memory on XPU %d."; 2.x kernels' XPU_MALLOC "Out of memory error on XPU, Cannot
// allocate %s memory on XPU.") and plug-in custom devices (`custom_allocator.cc` /
// `buddy_allocator.cc`: "Out of memory error on %s %d. total memory is %s, used memory is %s,
// available memory is only %s." with the device type, e.g. npu, mlu, iluvatar_gpu). Sizes are
// `HumanReadableSize` ("56.000000MB", 1024-based).
re!(
    paddle_device_re,
    format!(
        r"Out of memory error on (\w+)(?: (\d+))?[.,] ?(?:Cannot ?allocate {SIZE} memory on \w+|total memory is {SIZE}, used memory is {SIZE}, available memory is only {SIZE})"
    )
);

/// PaddlePaddle on an XPU or a custom device (the CUDA GPU's message is read by its own
/// family).
pub(super) fn paddle_device(t: &str) -> Option<Oom> {
    let c = paddle_device_re().captures(t)?;
    let word = c.get(1)?.as_str();
    if word == "GPU" {
        return None;
    }
    let device = c.get(2).and_then(|m| m.as_str().parse().ok());
    let f = Facts {
        requested_bytes: sz(&c, 3),
        total_bytes: sz(&c, 4),
        device_used_bytes: sz(&c, 5),
        free_bytes: sz(&c, 6),
        ..Facts::default()
    };
    let format = if word == "XPU" {
        "paddle-xpu"
    } else {
        "paddle-custom-device"
    };
    Some(oom(Framework::Paddle, format, device, f))
}

// ONNX Runtime's BFC arena at its limit (`onnxruntime/core/framework/bfc_arena.cc`, Extend):
// "Available memory of <limit - allocated> is smaller than requested bytes of <rounded>", when
// growing the arena would pass its memory limit (the CUDA EP's `gpu_mem_limit`), before any
// cudaMalloc is tried.
re!(
    ort_arena_limit_re,
    r"Available memory of (\d+) is smaller than requested bytes of (\d+)"
);

/// ONNX Runtime's arena refused to grow past its limit: the request and what was left under
/// the limit.
pub(super) fn onnxruntime_arena_limit(t: &str) -> Option<Oom> {
    let c = ort_arena_limit_re().captures(t)?;
    let f = Facts {
        requested_bytes: c.get(2)?.as_str().parse().ok(),
        free_bytes: c.get(1)?.as_str().parse().ok(),
        ..Facts::default()
    };
    Some(oom(
        Framework::Onnxruntime,
        "onnxruntime-arena-limit",
        None,
        f,
    ))
}

// ONNX Runtime's DirectML execution provider relays Direct3D 12's HRESULT through WIL's
// exception text ("…\DmlExecutionProvider\src\BucketizedBufferAllocator.cpp(122)\…: (caller: …)
// Exception(1) tid(…) 8007000E Not enough memory resources are available to complete this
// operation."): 0x8007000E is E_OUTOFMEMORY, the allocation of a GPU buffer, read by its code or
// by Windows' text for it.
re!(
    ort_dml_re,
    r"(?i)DmlExecutionProvider[^\n]{0,400}?(?:\b8007000E\b|\benough memory resources\b)"
);

/// ONNX Runtime on DirectML: D3D12 could not allocate a buffer (E_OUTOFMEMORY).
pub(super) fn onnxruntime_dml(t: &str) -> Option<Oom> {
    ort_dml_re().is_match(t).then(|| {
        oom(
            Framework::Onnxruntime,
            "onnxruntime-dml",
            None,
            Facts::default(),
        )
    })
}

// PaddlePaddle relaying a CUDA status from a call outside its allocator: 2.x's
// PADDLE_ENFORCE_GPU_SUCCESS ("(External) CUDA error(2), out of memory." with its "[Hint:
// 'cudaErrorMemoryAllocation'…]", `paddle/phi/core/enforce.h`), 1.6's PADDLE_ENFORCE_CUDA_SUCCESS
// ("PaddleCheckError: out of memory at [<file>]"); and glog's CHECK_EQ(cudaSuccess, …) on a
// CUDA status as Paddle v1 and others print it ("Check failed: cudaSuccess == cudaStat (0 vs.
// 2)").
re!(
    paddle_cuda_re,
    r"\(External\) (?:CUDA|Cuda) error\((\d+)\), |PaddleCheckError: out of memory at \["
);
re!(
    glog_cuda_check_re,
    r"Check failed: cudaSuccess == \w+ \(0 vs\. (\d+)\)"
);

/// A CUDA call's error 2 relayed by PaddlePaddle's checks (or glog's CHECK on a CUDA status).
pub(super) fn paddle_cuda(t: &str) -> Option<Oom> {
    if let Some(c) = paddle_cuda_re().captures(t) {
        return (c.get(1).is_none_or(|m| m.as_str() == "2"))
            .then(|| oom(Framework::Paddle, "paddle-cuda", None, Facts::default()));
    }
    let c = glog_cuda_check_re().captures(t)?;
    (c.get(1)?.as_str() == "2").then(|| oom(Framework::Cuda, "cuda-code", None, Facts::default()))
}

// PaddlePaddle 1.x's operator warning when an op throws (`framework/operator.cc`, `Run`):
// "<op> raises an exception paddle::memory::allocation::BadAlloc, <what>", and 2.x's uncaught
// "terminate called after throwing an instance of 'paddle::memory::allocation::BadAlloc'".
// `BadAlloc` is what Paddle's allocators throw when an allocation fails
// (`memory/allocation/allocator.h`); the allocator in its C++ call stack says which memory:
// `CUDAAllocator` the GPU's, `CUDAPinnedAllocator` page-locked host memory, `CPUAllocator` the
// host's; in 2.x's a phi kernel's device context allocating its output (`phi::GPUContext`, or
// `phi::CPUContext`). Its summary with the figures ("Out of memory error on GPU 0. Cannot
// allocate …") is read first where the paste has it.
re!(
    paddle_bad_alloc_re,
    r"\braises an exception paddle::memory::allocation::BadAlloc\b|\bthrowing an instance of 'paddle::memory::allocation::BadAlloc'"
);
re!(
    paddle_allocator_re,
    r"\bpaddle::memory::allocation::(CUDAPinnedAllocator|CUDAAllocator|CPUAllocator)::|\bphi::(GPUContext|CPUContext)\b"
);

/// PaddlePaddle's `BadAlloc` (1.x's op warning, 2.x's uncaught throw), its memory from the
/// innermost allocator or device context on its stack.
pub(super) fn paddle_bad_alloc(t: &str) -> Option<Oom> {
    let head = paddle_bad_alloc_re().find(t)?;
    let mut frames = paddle_allocator_re().captures_iter(&t[head.end()..]);
    // 1.x's "C++ Call Stacks" start at the innermost frame; 2.x's "C++ Traceback (most recent
    // call last)" end at it.
    let allocator = if head.as_str().starts_with("throwing") {
        frames.last()?
    } else {
        frames.next()?
    };
    let mut o = oom(
        Framework::Paddle,
        "paddle-bad-alloc",
        None,
        Facts::default(),
    );
    o.memory = match allocator.get(1).or(allocator.get(2)).map(|m| m.as_str()) {
        Some("CUDAAllocator" | "GPUContext") => MemoryKind::Device,
        Some("CUDAPinnedAllocator") => MemoryKind::PinnedHost,
        _ => MemoryKind::Host,
    };
    Some(o)
}

// PaddlePaddle 1.x's legacy allocator (`paddle/fluid/memory/detail/…`,
// `memory/allocation/legacy_allocator.cc`, `Alloc<CUDAPlace>`): when its buddy allocator cannot
// serve a request it logs the request, the device's available memory and its total (from
// cudaMemGetInfo), its chunk sizes and "GPU memory used", what the buddy allocator has handed
// out. 1.5's LOG(FATAL) runs them together ("…available 5.937500MBtotal 7981694976GpuMinChunk…",
// the total in bytes); later 1.x separate them with commas and give the total a unit; older ones
// log each as its own LOG(WARNING) line. Sizes are `HumanReadableSize` ("324.750000kB", 1024-based).
// "GPU memory used" is the buddy allocator's `Used()`, only the blocks it cut from its pool: a
// request over GpuMaxChunkSize goes to the system allocator on its own and is not counted, so
// it is not the live tensors' total and is not read. A paste cut after the first line still
// gives the request, the device and its free memory.
re!(
    paddle_legacy_re,
    format!(
        r"Cannot allocate {SIZE} in GPU (\d{{1,3}}), available {SIZE}(?:(?s:.{{0,300}}?)total,? ?(?:{SIZE}|(\d{{1,20}})))?"
    )
);

/// PaddlePaddle 1.x's legacy (buddy) allocator out of GPU memory: the request and the device's
/// free and total memory.
pub(super) fn paddle_legacy(t: &str) -> Option<Oom> {
    let c = paddle_legacy_re().captures_iter(t).last()?;
    let f = Facts {
        requested_bytes: sz(&c, 1),
        free_bytes: sz(&c, 3),
        total_bytes: sz(&c, 4).or_else(|| c.get(5)?.as_str().parse().ok()),
        ..Facts::default()
    };
    let device = c.get(2).and_then(|m| m.as_str().parse().ok());
    Some(oom(Framework::Paddle, "paddle-legacy", device, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn paddles_legacy_allocator_in_each_of_its_wordings() {
        // PaddlePaddle/Paddle#18819 (1.5.1): the FATAL line run together, the total in bytes.
        let o = paddle_legacy("F0725 17:13:27.698644 175955 legacy_allocator.cc:201] Cannot allocate 195.800781MB in GPU 0, available 5.937500MBtotal 7981694976GpuMinChunkSize 256.000000BGpuMaxChunkSize 21.694021MBGPU memory used: 324.750000kB").expect("read");
        assert_eq!((o.format, o.device_index), ("paddle-legacy", Some(0)));
        assert_eq!(o.facts.requested_bytes, Some(205_312_000));
        assert_eq!(o.facts.free_bytes, Some(6_225_920));
        assert_eq!(o.facts.total_bytes, Some(7_981_694_976));
        // Its pool's count, which leaves out every block over GpuMaxChunkSize: not read.
        assert_eq!(o.facts.allocated_bytes, None);
        // Later 1.x: commas, the total with its unit.
        let o = paddle_legacy("Cannot allocate 1.000000GB in GPU 1, available 512.000000MB, total 15.750000GB, GpuMinChunkSize 256.000000B, GpuMaxChunkSize 14.000000GB, GPU memory used: 14.500000GB").expect("read");
        assert_eq!(o.device_index, Some(1));
        assert_eq!(o.facts.total_bytes, Some(16_128 * MIB));
        // Older: one warning line each.
        let o = paddle_legacy("W0101 legacy_allocator.cc:100] Cannot allocate 2.000000MB in GPU 0, available 1.000000MB\nW0101 legacy_allocator.cc:101] total 8589934592\nW0101 legacy_allocator.cc:102] GpuMinChunkSize 256.000000B\nW0101 legacy_allocator.cc:103] GpuMaxChunkSize 7.000000GB\nW0101 legacy_allocator.cc:104] GPU memory used: 7.500000GB").expect("read");
        assert_eq!(o.facts.total_bytes, Some(8 << 30));
        assert_eq!(o.facts.free_bytes, Some(MIB));
        // Cut after its chunk sizes (PaddlePaddle/models#2046), or after its first line.
        let o = paddle_legacy("W0413 legacy_allocator.cc:191] Cannot allocate 196.000000MB in GPU 0, available 1.214539GB\nW0413 legacy_allocator.cc:194] total 11996954624\nW0413 legacy_allocator.cc:195] GpuMinChunkSize 256.000000B").expect("read");
        assert_eq!(o.facts.total_bytes, Some(11_996_954_624));
        assert_eq!(o.facts.requested_bytes, Some(196 * MIB));
        let o = paddle_legacy("Cannot allocate 196.000000MB in GPU 1, available 1.214539GB")
            .expect("read");
        assert_eq!((o.device_index, o.facts.total_bytes), (Some(1), None));
    }

    #[test]
    fn paddles_bad_alloc_is_the_allocators_memory() {
        // PaddlePaddle/PaddleSeg#622.
        let t = "W1125 20:59:23.948345 21299 operator.cc:187] batch_norm raises an exception paddle::memory::allocation::BadAlloc,\n\n--------------------------------------------\nC++ Call Stacks (More useful to developers):\n--------------------------------------------\n0   std::string paddle::platform::GetTraceBackString<std::string>(std::string&&, char const*, int)\n1   paddle::memory::allocation::CUDAAllocator::AllocateImpl(unsigned long)\n2   paddle::memory::allocation::AlignedAllocator::AllocateImpl(unsigned long)";
        let o = paddle_bad_alloc(t).expect("found");
        assert_eq!(
            (o.format, o.memory),
            ("paddle-bad-alloc", MemoryKind::Device)
        );
        let o = paddle_bad_alloc(&t.replace("CUDAAllocator", "CPUAllocator")).expect("found");
        assert_eq!(o.memory, MemoryKind::Host);
        let o =
            paddle_bad_alloc(&t.replace("CUDAAllocator", "CUDAPinnedAllocator")).expect("found");
        assert_eq!(o.memory, MemoryKind::PinnedHost);
        // 2.x's uncaught BadAlloc, a GPU kernel's output (PaddleSpeech's conformer).
        let t2 = "terminate called after throwing an instance of 'paddle::memory::allocation::BadAlloc'\n  what():\n\n--------------------------------------\nC++ Traceback (most recent call last):\n--------------------------------------\n2   void phi::ScaleKernel<float, phi::GPUContext>(phi::GPUContext const&, phi::DenseTensor const&, float, bool, phi::DenseTensor*)\n3   float* phi::DeviceContext::Alloc<float>(phi::TensorBase*, unsigned long, bool) const";
        let o = paddle_bad_alloc(t2).expect("found");
        assert_eq!(o.memory, MemoryKind::Device);
        // Its innermost frame is the last: a pinned allocator under the GPU kernel's context.
        let o = paddle_bad_alloc(&format!(
            "{t2}\n4   paddle::memory::allocation::CUDAPinnedAllocator::AllocateImpl(unsigned long)"
        ))
        .expect("found");
        assert_eq!(o.memory, MemoryKind::PinnedHost);
        // No allocator named: which memory is unknown.
        assert!(paddle_bad_alloc(&t.replace("CUDAAllocator", "RetryAllocator")).is_none());
    }

    #[test]
    fn paddle_relays_cudas_error_2() {
        for t in [
            "OSError: (External) CUDA error(2), out of memory.   [Hint: 'cudaErrorMemoryAllocation'. The API call failed because it was unable to allocate enough memory to perform the requested operation. ] (at ..\\paddle\\fluid\\platform\\stream\\cuda_stream.cc:45)",
            "PaddleCheckError: out of memory at [/paddle/paddle/fluid/platform/device_context.cc:219]",
        ] {
            let o = paddle_cuda(t).expect(t);
            assert_eq!((o.framework, o.format), (Framework::Paddle, "paddle-cuda"), "{t}");
        }
        let o = paddle_cuda(
            "F0310 Check failed: cudaSuccess == cudaStat (0 vs. 2) Cuda Error: out of memory",
        )
        .expect("found");
        assert_eq!((o.framework, o.format), (Framework::Cuda, "cuda-code"));
        assert!(paddle_cuda(
            "OSError: (External) CUDA error(700), an illegal memory access was encountered."
        )
        .is_none());
        assert!(paddle_cuda("Check failed: cudaSuccess == cudaStat (0 vs. 77) Cuda Error: an illegal memory access was encountered").is_none());
    }

    #[test]
    fn onnxruntime_on_directml() {
        let o = onnxruntime_dml("Status Message: D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\dml\\DmlExecutionProvider\\src\\MLOperatorAuthorImpl.cpp(1978)\\onnxruntime_pybind11_state.pyd!00007FFBDC8EBB9F: (caller: 00007FFBDCFFDEFF) Exception(3) tid(4304) 8007000E Not enough memory resources are available to complete this operation.").expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Onnxruntime, "onnxruntime-dml")
        );
        assert!(onnxruntime_dml("DmlExecutionProvider\\src\\x.cpp(1): Exception(1) tid(1) 887A0005 The GPU device instance has been suspended.").is_none());
    }

    #[test]
    fn onnxruntime_arena_at_its_limit() {
        let o = onnxruntime_arena_limit("Non-zero status code returned while running Cast node 'graph_output_cast0' ... BFCArena::AllocateRawInternal Available memory of 34699008 is smaller than requested bytes of 945041920").expect("found");
        assert_eq!(
            (
                o.framework,
                o.format,
                o.facts.requested_bytes,
                o.facts.free_bytes
            ),
            (
                Framework::Onnxruntime,
                "onnxruntime-arena-limit",
                Some(945_041_920),
                Some(34_699_008)
            )
        );
    }

    #[test]
    fn paddle_on_xpus_and_custom_devices() {
        let o = paddle_device("ResourceExhaustedError: Out of memory error on XPU 1. Cannot allocate 2.000000GB memory on XPU 1.").expect("found");
        assert_eq!(
            (
                o.framework,
                o.format,
                o.device_index,
                o.facts.requested_bytes
            ),
            (Framework::Paddle, "paddle-xpu", Some(1), Some(2 << 30))
        );
        let o =
            paddle_device("Out of memory error on XPU, Cannot allocate 64.000000MB memory on XPU.")
                .expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (None, Some(64 * MIB))
        );
        let o = paddle_device("ResourceExhaustedError: Out of memory error on npu 3. total memory is 32.000000GB, used memory is 31.500000GB, available memory is only 512.000000MB.").expect("found");
        assert_eq!(
            (o.format, o.device_index),
            ("paddle-custom-device", Some(3))
        );
        assert_eq!(o.facts.total_bytes, Some(32 << 30));
        assert_eq!(o.facts.device_used_bytes, Some(63 << 29));
        assert_eq!(o.facts.free_bytes, Some(512 * MIB));
        assert!(paddle_device("Out of memory error on GPU 0. Cannot allocate 56.000000MB memory on GPU 0, 7.782776GB memory has been allocated and available memory is only 12.750000MB.").is_none());
    }

    #[test]
    fn xgboost_own_message_in_bytes_and_in_units() {
        let o = xgboost("xgboost.core.XGBoostError: [13:55:26] /workspace/xgboost/src/c_api/../data/../common/device_helpers.cuh:414: Memory allocation error on worker 0: std::bad_alloc: cudaErrorMemoryAllocation: out of memory - Free memory: 11310923776 - Requested memory: 47996  Stack trace:").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Xgboost, "xgboost-alloc", None),
            "the worker is a rank, not a device"
        );
        assert_eq!(
            (o.facts.free_bytes, o.facts.requested_bytes),
            (Some(11_310_923_776), Some(47_996))
        );
        // 3.1's HumanMemUnit figures and the pool's lines.
        let o = xgboost("Memory allocation error on worker 1: std::bad_alloc: cudaErrorMemoryAllocation: out of memory - Free memory: 1.5GB - Requested memory: 512MB - Reserved by the pool: 20GB - Used by the pool: 19.5GB").expect("found");
        assert_eq!(o.facts.free_bytes, Some(3 << 29));
        assert_eq!(o.facts.requested_bytes, Some(512 * MIB));
        assert_eq!(o.facts.reserved_bytes, Some(20 << 30));
        assert_eq!(o.facts.allocated_bytes, Some(39 << 29));
        assert!(xgboost(
            "Memory allocation error on worker 0: std::bad_alloc: invalid device ordinal"
        )
        .is_none());
    }

    #[test]
    fn a_thrust_relay_from_xgboost_or_anywhere() {
        let o = xgboost("terminate called after throwing an instance of 'thrust::system::system_error'  what():  /home/ubuntu/src/xgboost/src/tree/../common/device_helpers.cuh(456): out of memory").expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Xgboost, "xgboost-thrust")
        );
        let t = "terminate called after throwing an instance of 'thrust::system::system_error' what(): parallel_for failed: out of memory";
        assert!(xgboost(t).is_none());
        let o = thrust(t).expect("found");
        assert_eq!((o.framework, o.format), (Framework::Cuda, "cuda-thrust"));
        assert!(thrust("terminate called after throwing an instance of 'thrust::system::system_error' what(): device free failed: cudaErrorIllegalAddress: an illegal memory access was encountered").is_none());
        assert!(thrust("terminate called after throwing an instance of 'thrust::system::system_error'  what():  /home/chris/Downloads/xgboost/src/predictor/gpu_predictor.cu(322): unspecified launch failure").is_none());
    }

    #[test]
    fn catboost_pool_and_cuda() {
        let o = catboost("(NCudaLib::TOutOfMemoryError) /src/catboost/catboost/cuda/cuda_lib/memory_pool/stack_like_memory_pool.h:303: Error: Out of memory. Requested 8880 MB; Free 5902.061425 MB").expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Catboost, "catboost-pool")
        );
        assert_eq!(o.facts.requested_bytes, Some(8880 * MIB));
        assert_eq!(
            o.facts.free_bytes,
            Some((5902.061425 * MIB as f64).round() as u64)
        );
        let o = catboost("Application terminated with error: (NCudaLib::TOutOfMemoryError) catboost/cuda/cuda_lib/memory_pool/stack_like_memory_pool.h:294: Error: Out of memory. Requested 1070.546387; Free 1010.952393").expect("found");
        assert_eq!(
            o.facts.requested_bytes,
            Some((1070.546387 * MIB as f64).round() as u64)
        );
        let o = catboost("(TCatBoostException) catboost/cuda/cuda_lib/cuda_base.h:243: CUDA error 2: out of memory").expect("found");
        assert_eq!(o.format, "catboost-cuda");
        assert!(catboost("(TCatBoostException) catboost/cuda/cuda_lib/cuda_base.h:243: CUDA error 700: an illegal memory access was encountered").is_none());
        assert!(catboost("Error: Out of memory. Requested 10 MB; Free 5 MB").is_none());
    }

    #[test]
    fn lightgbm_cuda() {
        for t in [
            "[LightGBM] [Fatal] [CUDA] out of memory /LightGBM/src/cuda/cuda_utils.cpp 26",
            "[LightGBM] [Fatal] CUDA_RUNTIME: out of memory /LightGBM/src/treelearner/cuda_tree_learner.cpp 414",
        ] {
            let o = lightgbm(t).expect(t);
            assert_eq!((o.framework, o.format), (Framework::Lightgbm, "lightgbm-cuda"));
        }
        assert!(lightgbm(
            "[LightGBM] [Fatal] [CUDA] an illegal memory access was encountered /x.cu 1"
        )
        .is_none());
    }

    #[test]
    fn faiss_forms() {
        let o = faiss("RuntimeError: Error in virtual void* faiss::gpu::StandardGpuResourcesImpl::allocMemory(const faiss::gpu::AllocRequest&) at /project/faiss/faiss/gpu/StandardGpuResources.cpp:452: Error: 'err == cudaSuccess' failed: StandardGpuResources: alloc fail type TemporaryMemoryBuffer dev 0 space Device stream 0x55fdc14ecbc0 size 1610612736 bytes (cudaMalloc error out of memory [2])").expect("found");
        assert_eq!(
            (
                o.framework,
                o.format,
                o.device_index,
                o.facts.requested_bytes
            ),
            (
                Framework::Faiss,
                "faiss-temp-buffer",
                Some(0),
                Some(1_610_612_736)
            )
        );
        let o = faiss("Error: 'err == cudaSuccess' failed: StandardGpuResources: alloc fail type FlatData dev 2 space Device stream 0 size 2764800000 bytes (cudaMalloc error out of memory [2])").expect("found");
        assert_eq!(
            (o.format, o.device_index, o.facts.requested_bytes),
            ("faiss-alloc", Some(2), Some(2_764_800_000))
        );
        let o = faiss("RuntimeError: Error in virtual void* faiss::gpu::StandardGpuResourcesImpl::allocMemory(const faiss::gpu::AllocRequest&) at /x/faiss/gpu/StandardGpuResources.cpp:443: Error: 'err == cudaSuccess' failed: Failed to cudaMalloc 536870912 bytes on device 1 (error 2 out of memory Outstanding allocations:").expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (Some(1), Some(512 * MIB))
        );
        let o = faiss("RuntimeError: Error in void faiss::gpu::allocMemorySpaceV(faiss::gpu::MemorySpace, void**, size_t) at gpu/utils/MemorySpace.cpp:26: Error: 'err == cudaSuccess' failed: failed to cudaMalloc 47064032 bytes (error 2 out of memory)").expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (None, Some(47_064_032))
        );
        // Up to 1.5.0: FAISS_ASSERT_FMT's "Faiss assertion … details:" (`FaissAssert.h`, v1.4.0).
        let o = faiss("Faiss assertion 'cudaMalloc(p, size) == cudaSuccess' failed in void faiss::gpu::allocMemorySpace(faiss::gpu::MemorySpace, void**, size_t) at utils/MemorySpace.cpp:18; details: Failed to cudaMalloc 838860800 bytes\nAborted (core dumped)").expect("found");
        assert_eq!(
            (o.framework, o.format, o.memory, o.facts.requested_bytes),
            (
                Framework::Faiss,
                "faiss-alloc",
                MemoryKind::Device,
                Some(800 * MIB)
            )
        );
        // Another assertion's details are not an allocation.
        assert!(faiss("Faiss assertion 'err == cudaSuccess' failed in void faiss::gpu::runL2Norm at Distance.cu:10; details: CUDA error 700").is_none());
        assert!(faiss("StandardGpuResources: alloc fail type FlatData dev 0 space Device stream 0 size 1024 bytes (cudaMalloc error an illegal memory access was encountered [700])").is_none());
        assert!(faiss("StandardGpuResources: alloc fail type TemporaryMemoryBuffer dev 0 space Temporary stream 0x1 size 1024 bytes (no temp space); retrying as MemorySpace::Device").is_none());
    }

    #[test]
    fn sophgo_forms() {
        // libsophon's format string (`bmlib_memory.cpp`), then BMRuntime's line.
        let o = sophgo("[bmlib_memory][error] bm_alloc_gmem failed, dev_id = 1, size = 0x639c00\nAlloc Device Memory Failed! Program Terminated.").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index, o.memory),
            (
                Framework::Sophgo,
                "sophgo-bmlib",
                Some(1),
                MemoryKind::Device
            )
        );
        assert_eq!(o.facts.requested_bytes, Some(0x639c00));
        let o = sophgo("[BMRT][must_alloc_device_mem:2682] FATAL:device mem alloc failed: size=4759552[0x48a000] type_len=1 status=5 desc=io_mem").expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (None, Some(4_759_552))
        );
        // Without libsophon's words, and without a size, nothing.
        assert!(sophgo("device mem alloc failed: size=100").is_none());
        assert!(sophgo("[bmlib_memory][error] bm_alloc_gmem failed").is_none());
        assert!(
            sophgo("[bmlib_memory][error] bm_alloc_gmem failed, dev_id = 0, size = 0xZZ").is_none()
        );
    }

    #[test]
    fn mindspore_forms() {
        let o = mindspore("RuntimeError: Malloc for kernel output failed, Memory isn't enough, node:Default/Cast-op446").expect("found");
        assert_eq!(
            (o.framework, o.format, o.facts.known()),
            (Framework::Mindspore, "mindspore-kernel-output", 0)
        );
        let o = mindspore("RuntimeError: Memory not enough: Device(id:3) memory isn't enough and alloc failed, kernel name: Default/network-WithLossCell/_backbone-Net/Conv2D-op1, alloc size: 536870912B.").expect("found");
        assert_eq!(
            (o.framework, o.format, o.device_index, o.memory),
            (
                Framework::Mindspore,
                "mindspore-alloc",
                Some(3),
                MemoryKind::Device
            )
        );
        assert_eq!(o.facts.requested_bytes, Some(512 * MIB));
        let o = mindspore("Device memory isn't enough and alloc failed, actor name: Default/Add-op1, alloc size: 1024").expect("found");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (None, Some(1024))
        );
        let o = mindspore("RuntimeError: Memory isn't enough and alloc failed, kernel name: Default/Add-op1, alloc size: 4096B.").expect("found");
        assert_eq!((o.format, o.memory), ("mindspore-cpu", MemoryKind::Host));
        let o = mindspore("Out of Memory!!! Request memory size: 33100113920B, Memory Statistic: Device HBM memory size: 32768M MindSpore Used memory size: 30684M MindSpore memory base address: 0x124140000000 Total Static Memory size: 496M").expect("found");
        assert_eq!(o.format, "mindspore-static");
        assert_eq!(o.facts.requested_bytes, Some(33_100_113_920));
        assert_eq!(o.facts.total_bytes, Some(32768 * MIB));
        assert_eq!(o.facts.reserved_bytes, Some(30684 * MIB));
        let o = mindspore("[mindspore/ccsrc/backend/common/mem_reuse/mem_dynamic_allocator.cc:392] AddMemBlockAndMemBufByEagerFree] TotalUsedMemStatistics : 29356337664 plus TotalUsedByEventMemStatistics : 0 and plus alloc size : 301990400 is more than total mem size : 29464985600.").expect("found");
        assert_eq!(o.format, "mindspore-pool");
        assert_eq!(o.facts.requested_bytes, Some(301_990_400));
        assert_eq!(o.facts.total_bytes, Some(29_464_985_600));
        assert_eq!(o.facts.allocated_bytes, Some(29_356_337_664));
    }
}
