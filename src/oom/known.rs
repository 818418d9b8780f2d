//! The long-established message families, each an exact pattern of its framework's message
//! and the reader that maps its captures to [`Facts`]; [`super::families::ALL`] lists them in
//! the order they are tried. Every framework here formats sizes with powers of 1024, even
//! where it writes "GB" (PyTorch's MPS allocator before 2.1, PaddlePaddle's
//! `HumanReadableSize`, TensorFlow's "17.79G"), so all units are binary.

use super::lazy::LazyRegex;

use super::{Facts, Framework, Oom, OtherProcess};

/// A size as frameworks print it: "1.5 GiB", "2.20GiB", "0 bytes", "17.79G", "56.000000MB".
pub(super) const SIZE: &str = r"(\d+(?:\.\d+)?\s?(?:[Bb]ytes|[KMGTPE]i?B|kB|[KMGT]\b|B\b))";

use crate::units::{parse_int, parse_size};

re!(
    torch2_re,
    format!(
        r"(?i)\b(CUDA|HIP|XPU) out of memory\. Tried to allocate {SIZE}\. (?:GPU|Device) ?(\d+)? ?\s?has a total capaci?ty of {SIZE}(?: of which {SIZE} is free)?"
    )
);
re!(torch_allowed_re, format!(r"{SIZE} allowed;"));
// The allocated clause alone, for a message cut after it (a client that truncates the text),
// or inside it: "Of the allocated memory X" names X whatever is cut after it.
re!(
    torch_allocated_re,
    format!(
        r"Of the allocated memory {SIZE}(?: is allocated by PyTorch(?:, with {SIZE} allocated in private pools \(e\.g\., [^)]{{1,40}}\))?)?"
    )
);
// PyTorch's cudaMallocAsync backend (`c10/cuda/CUDAMallocAsyncAllocator.cpp`, chosen with
// PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, ComfyUI's --cuda-malloc): "Currently
// allocated" is `pytorch_used_bytes`, its live allocations; "Device limit" and "Free" come
// from cudaMemGetInfo; the "PyTorch limit" is the per-process memory fraction (2^64 bytes,
// printed 17179869184.00 GiB, when unset). CUDA's pool may keep freed memory, so the rest of
// the device is this pool, this process's context, and other processes together.
re!(
    torch_async_re,
    format!(
        r"Allocation on device (\d+) would exceed allowed memory\. \(out of memory\)\s*Currently allocated\s*:\s*{SIZE}\s*Requested\s*:\s*{SIZE}\s*Device limit\s*:\s*{SIZE}\s*Free \(according to CUDA\)\s*:\s*{SIZE}(?:\s*PyTorch limit \(set by user-supplied memory fraction\)\s*:\s*(\d+(?:\.\d+)?\s?[KMGT]i?B))?"
    )
);
re!(
    torch_process_re,
    format!(r"Process (\d+) has {SIZE} memory in use")
);
re!(
    torch_this_re,
    format!(r"this process has {SIZE} memory in use")
);
re!(
    torch_split_re,
    format!(
        r"Of the allocated memory {SIZE} is allocated by PyTorch, (?:with {SIZE} allocated in private pools \(e\.g\., [^)]{{1,40}}\), )?and {SIZE} is reserved by PyTorch but unallocated"
    )
);
re!(
    torch15_re,
    format!(
        r"(?i)(?:\b(CUDA|HIP|XPU) out of memory\. )?Tried to allocate {SIZE} \((?:GPU|Device)\s*(\d+); {SIZE} total capacity; {SIZE} already allocated;(?: {SIZE} free;)?(?: {SIZE} allowed;)? {SIZE} reserved in total by PyTorch\)?"
    )
);
re!(
    torch10_re,
    format!(
        r"(?i)(?:\b(CUDA|HIP) out of memory\. )?Tried to allocate {SIZE} \(GPU (\d+); {SIZE} total capacity; {SIZE} already allocated; {SIZE} free; {SIZE} cached\)?"
    )
);
// PyTorch `aten/src/ATen/mps/MPSAllocator.mm`, `alloc_buffer_block`: "MPS allocated" is
// `m_total_allocated_memory`, every heap the allocator holds (cached free buffers included:
// the reserved figure); "other allocations" is `current_allocated_size()` (the Metal device's
// `currentAllocatedSize`, this process only) minus that, so memory this process holds outside
// the allocator (MPSGraph, the driver), not other apps; "max allowed" is
// `m_max_total_allowed_size`, the high-watermark limit (ratio × recommendedMaxWorkingSetSize),
// printed only while the ratio is above 0. Before raising, the allocator released its cached
// buffers and retried.
re!(
    mps_re,
    format!(
        r"MPS backend out of memory \(MPS allocated: {SIZE}, other allocations: {SIZE}(?:, max allowed: {SIZE})?\)(?:\. Tried to allocate {SIZE} on (private|shared) pool)?"
    )
);
re!(
    tf_tensor_re,
    r"OOM when allocating tensor (?:with|of) shape ?\[([\d,\s]*)\](?: and type (\w+))?(?: on (\S+))?(?: by allocator (\w+))?"
);
// TensorFlow's device names (`tensorflow/core/util/device_name_utils.cc`, `ParseFullName`:
// "/job:J/replica:R/task:T/device:TYPE:ID", and the legacy "/gpu:0"): any device type, the
// GPU, tensorflow-directml's `DML`, a PluggableDevice's own (`XPU`, `APU`…), XLA's `XLA_GPU`.
re!(
    tf_device_name_re,
    r"/device:([A-Za-z][A-Za-z0-9_]{0,15}):(\d{1,3})\b|/((?i:gpu|xpu|tpu|dml)):(\d{1,3})\b"
);

/// The index of the first device a TensorFlow device name gives that is not a CPU: a tensor
/// on `/device:CPU:0` is in the host's memory ([`super::families`] reads that as host).
pub(super) fn tf_device_index(t: &str) -> Option<u32> {
    tf_device_name_re().captures_iter(t).find_map(|c| {
        let kind = c.get(1).or_else(|| c.get(3))?.as_str();
        if kind.to_ascii_uppercase().ends_with("CPU") {
            return None;
        }
        c.get(2).or_else(|| c.get(4))?.as_str().parse().ok()
    })
}
// The failing node's definition that TensorFlow 1.x's executor appended to the error
// (`core/framework/node_def_util.cc`, `AttachDef` with `SummarizeNodeDef`, which ends the
// attributes with `_device="…"`): "[[Node: NAME = Op[…, _device="/job:…/device:GPU:0"](…)]]",
// in 1.11-1.12 "[[{{node NAME}} = Op[…, _device="…"](…)]]". TF 2's `FormatNodeDefForError`
// gives the name alone ("[[{{node NAME}}]]"): no device to read there.
re!(
    tf_node_device_re,
    r#"\[\[(?:Node: |\{\{node )[^\n]{0,4000}?\b_device="([^"\n]{0,200})""#
);
re!(
    tf_bfc_re,
    format!(
        r"(?:Allocator(?: \((\w+?)(?:_bfc)?\))? ran|\bRan) out of memory trying to allocate {SIZE}(?: \(rounded to (\d+)(?: Bytes)?\))?"
    )
);
// TensorFlow/XLA stream executor, `cuda_driver.cc` and `rocm/rocm_driver.cc`: the size as
// `HumanReadableNumBytes` and the exact byte count; newer XLA (`cuda_executor.cc`) puts its
// status's code and an empty message before the driver's ("from device: RESOURCE_EXHAUSTED: :
// CUDA_ERROR_OUT_OF_MEMORY").
// ROCm's `ToString(hipError_t)` prints a code it has no name for as "hipError_t(N)": 1002 is
// the old HIP's hipErrorMemoryAllocation (TF 1.x on ROCm 1.x–2.x, "hipError_t(1002)").
re!(
    stream_exec_re,
    format!(
        r"failed to allocate {SIZE}(?: \((\d+) bytes\))? from device: (?:RESOURCE_EXHAUSTED: (?:: )?)?(CUDA_ERROR_OUT_OF_MEMORY|HIP_ERROR_OutOfMemory|hipErrorOutOfMemory|hipError_t\((?:2|1002)\))"
    )
);
// JAX: "… allocate 7406166528 bytes." (jaxlib up to 0.4), "… allocate 160.02GiB with allocator
// GPU_0_bfc on device 0." (JAX 0.11, seen on an H100).
re!(
    jax_bytes_re,
    format!(
        r"(?i:RESOURCE_EXHAUSTED|Resource exhausted): Out of memory (?:while trying to allocate|allocating) {SIZE}(?: with allocator \S+ on device (\d+))?"
    )
);
// The same sentence where the paste cut the status before it, kept only beside XLA's own next
// line ("BufferAssignment OOM Debugging.").
re!(
    xla_bare_bytes_re,
    format!(
        r"Out of memory (?:while trying to allocate|allocating) {SIZE}(?: with allocator \S+ on device (\d+))?\.?\s*BufferAssignment OOM Debugging"
    )
);
// TensorFlow's Python frames (an XLA-compiled `tf.function`, Keras 3 on its TensorFlow backend
// with `jit_compile`): XLA's failure raised inside TensorFlow, whose allocator is TensorFlow's.
re!(
    tensorflow_frames_re,
    r"tensorflow/python/|keras/src/backend/tensorflow/|\btensorflow\.python\."
);
re!(
    jax_request_re,
    format!(r"Failed to allocate request for {SIZE} \((\d+)B\) on device ordinal (\d+)")
);
re!(jax_total_re, format!(r"total allocation:\s+{SIZE}"));
// XLA's TPU compiler (JAX, TensorFlow on TPU): the compiled program's HBM requirement ("Used"),
// the HBM a core offers ("of"), and the difference, sizes as "21.95G" / "385.25M".
re!(
    xla_hbm_re,
    format!(
        r"Ran out of memory in memory space hbm\. Used {SIZE} of {SIZE} hbm\.\s*Exceeded hbm capacity by {SIZE}"
    )
);
// Its breakdown (`Total hbm usage >= 22.47G:` then `reserved 530.00M`, `program 21.95G`,
// `arguments 0B`, `Output size 0B; shares 0B with arguments.`), the words as XLA prints them.
re!(xla_usage_total_re, format!(r"Total hbm usage >= {SIZE}:"));
re!(
    xla_usage_reserved_re,
    format!(r"Total hbm usage >= \S+\s*reserved\s+{SIZE}")
);
re!(
    xla_usage_program_re,
    format!(r"Total hbm usage >= \S+\s*reserved\s+\S+\s+program\s+{SIZE}")
);
re!(
    xla_usage_arguments_re,
    format!(
        r"Total hbm usage >= \S+\s*reserved\s+\S+\s+program\s+(?:unknown size|\S+)\s+arguments\s+{SIZE}"
    )
);
re!(xla_usage_output_re, format!(r"Output size {SIZE}; shares"));
re!(
    ort_re,
    r"BFCArena::AllocateRawInternal.*?Failed to alloc(?:ate memory for requested buffer of size (\d+)|\b)"
);
re!(
    ggml_re,
    format!(r"allocating {SIZE} on device (\d+): cudaMalloc failed: out of memory")
);
// Triton (`triton/compiler/compiler.py`, `_init_handles`): `OutOfResources(self.metadata.shared,
// max_shared, "shared memory")` prints "out of resource: shared memory, Required: N, Hardware
// limit: M" (bytes of shared memory per block; "Hardware limitation" in some versions).
re!(
    triton_smem_re,
    r"out of resource: shared memory, Required: (\d+), Hardware limit(?:ation)?: (\d+)"
);
// ggml's CPU backend (`ggml-backend.c`, `ggml_backend_cpu_buffer_type_alloc_buffer`): an
// aligned malloc of host memory failed; ggml-alloc then says "failed to allocate CPU buffer".
re!(
    ggml_cpu_re,
    r"(?:ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size (\d+)|failed to allocate CPU buffer of size (\d+)|unable to allocate CPU buffer)"
);
// RMM (`rmm/detail/error.hpp`): `rmm::out_of_memory`/`rmm::bad_alloc` derive from
// std::bad_alloc, so Python shows "MemoryError: std::bad_alloc: out_of_memory: CUDA error at:
// …/rmm/mr/device/cuda_memory_resource.hpp…" (or "RMM failure at: …"); a pool at its maximum
// says "Maximum pool size exceeded".
re!(
    rmm_re,
    r"(?i)std::bad_alloc:.*?(?:rmm/|RMM failure|RMM_ERROR)|RMM_ERROR_OUT_OF_MEMORY|rmm::out_of_memory|(?-i:\[FAILURE maximum pool size exceeded: |Not enough room to grow, current/max/try size = )"
);
// The CUDA status after the file and line of RMM's message (`RMM_CUDA_TRY_ALLOC`, or before
// 21.12 `RMM_CUDA_TRY(call, rmm::bad_alloc)`: "CUDA error at: FILE:LINE: NAME STRING"; 0.13's
// put the line right after the file, with no colon: "….hpp66: NAME STRING").
re!(
    rmm_status_re,
    r"CUDA error(?: \([^)\n]{0,80}\))? at: ?[^\n]{0,400}?:?\d+: (cudaError\w{1,60})"
);
re!(
    rmm_size_re,
    r"RMM_ERROR_OUT_OF_MEMORY \(4\) Attempted to allocate: (\d+) bytes"
);
// RMM since rapidsai/rmm#1827 (25.04) names the request in its out_of_memory texts: the pool
// (`pool_memory_resource.hpp`, `try_to_expand`) and the arena say "Maximum pool size exceeded
// (failed to allocate X): REASON", X from `rmm::detail::format_bytes` ("1.000000 GiB").
re!(
    rmm_failed_re,
    format!(r"Maximum pool size exceeded \(failed to allocate {SIZE}\)")
);
// Its reason when the pool is at its maximum (`try_to_expand`), also in the error its logger
// writes first ("[A][Stream S][Upstream NB][FAILURE maximum pool size exceeded: REASON]"): the
// pool's size, its maximum (SIZE_MAX when none was set) and the request, each by `format_bytes`.
re!(
    rmm_grow_re,
    format!(r"Not enough room to grow, current/max/try size = {SIZE}, {SIZE}, {SIZE}")
);
// PaddlePaddle Fluid before 1.5 (`paddle/fluid/platform/gpu_info.cc`, `GpuMaxChunkSize`):
// `PADDLE_ENFORCE_LE(allocating, available)`, both in bytes. `allocating` is the chunk the
// buddy allocator takes at once, FLAGS_fraction_of_gpu_memory_to_use × (total − a 5% reserve);
// `available` is cudaMemGetInfo's free memory (less 256 bytes, at most total − the reserve).
// Paddle's enforce printed "enforce allocating <= available failed, A > B"; after
// PaddlePaddle/Paddle#12591 (August 2018), "Expected allocating <= available, but received
// allocating:A > available:B".
re!(
    paddle_enforce_re,
    r"enforce allocating <= available failed, (\d+) > (\d+)|Expected allocating(?:_memory)? <= available(?:_memory)?, but received allocating(?:_memory)?:(\d+) > available(?:_memory)?:(\d+)"
);
// libcudf's CUDA check (`cudf/utilities/error.hpp`, `CUDF_CUDA_TRY`): "CUDA error encountered
// at: FILE:LINE: 2 cudaErrorMemoryAllocation out of memory" (the error number, name and string);
// a direct CUDA call of libcudf (or of Thrust/CUB under it) failed, not RMM's allocator.
re!(
    libcudf_re,
    r"CUDA error encountered at: \S+:\d+: 2 cudaErrorMemoryAllocation"
);
// Numba's driver wrapper (`numba/cuda/cudadrv/driver.py`): "CudaAPIError: [2] Call to
// cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY"; cuInit's means no room for a context.
re!(
    numba_re,
    r"Call to (\w+) results in CUDA_ERROR_OUT_OF_MEMORY"
);
// Pinned (page-locked) host memory: TensorFlow's host allocator ("could not allocate pinned
// host memory of size: N", "failed to alloc N bytes on host: CUDA_ERROR_OUT_OF_MEMORY"), the
// driver's cuMemAllocHost and the runtime's cudaHostAlloc/cudaMallocHost. Its word classes are
// ASCII: Unicode's `\w`/`\W` without case took 2–4 ms to compile, for every paste that says
// "out of memory".
re!(
    pinned_re,
    r"(?i)could not allocate pinned host memory of size:? (\d+)|failed to alloc (\d+) bytes on host: CUDA_ERROR_OUT_OF_MEMORY|(?:cuMemAllocHost|cuMemHostAlloc|cudaHostAlloc|cudaMallocHost)[0-9A-Za-z_]*[^0-9A-Za-z_]{1,4}(?:CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|out of memory)"
);
// CuPy's staging buffer for an asynchronous copy to the GPU (`_alloc_async_transfer_buffer` in
// `cupy/_core/core.pyx`): `cudaHostAlloc` failed, CuPy warns (a `PerformanceWarning`) and copies
// synchronously instead. Pinned host memory, and the array still reaches the GPU.
re!(
    cupy_pinned_re,
    r"Using synchronous transfer as pinned memory \((\d+) bytes\) could not be allocated"
);
// XLA's cudaMallocAsync allocator (`gpu_cudamallocasync_allocator.cc`): the device in its
// name, the request in bytes, and CUDA's free/total on the next line.
re!(
    xla_async_re,
    r"gpu_async_(\d+) cuMemAllocAsync failed to allocate (\d+) bytes: .*?CUDA_ERROR_OUT_OF_MEMORY"
);
re!(xla_free_total_re, r"Free memory/Total memory: (\d+)/(\d+)");
// MXNet's GPU storage (`src/storage/pooled_storage_manager.h`, `gpu_device_storage.h`): the
// pool released what it caches and retried before "cudaMalloc retry failed". Python's
// `MXNetError: ` before the sentence names MXNet where the path was left out (a quote in prose).
re!(
    mxnet_re,
    r"(?:pooled_storage_manager\.h|gpu_device_storage\.h|storage_manager)\S*:\d*:?\s*(?:cudaMalloc(?: retry)? failed: out of memory|Memory allocation failed)|MXNetError: cudaMalloc(?: retry)? failed: out of memory"
);
// TensorRT-LLM's CUDA check (`tensorrt_llm/common/cudaUtils.h`): "[TensorRT-LLM][ERROR] CUDA
// runtime error in <call>: out of memory (<file>:<line>)"; the file says which buffer.
re!(
    trtllm_re,
    r"\[TensorRT-LLM\]\[ERROR\].*?CUDA runtime error in .*?: out of memory \(\S*?(\w+)\.(?:cpp|h|cu):\d+\)"
);
// LMDeploy's TurboMind engine (`src/turbomind/utils/cuda_utils.h`, `check`): "[TM][ERROR] CUDA
// runtime error: out of memory <file>:<line>", the file the allocation was in
// (`memory_utils.cu` for weights and buffers, `allocator.h` for its own allocator).
re!(
    turbomind_re,
    r"\[TM\]\[ERROR\] CUDA runtime error: out of memory\b"
);
// TensorRT-LLM's PyTorch backend (`_torch/pyexecutor/py_executor_creator.py`,
// `_ExecutorMemoryMonitor._maybe_explain_if_oom`): a component of the executor (the model, the
// sampler, the KV cache…) could not be created; the report gives the total, the free memory
// before the attempt, and each component created before it with the free memory (GiB) before
// and after.
re!(
    trtllm_executor_re,
    r"Executor creation failed due to insufficient GPU memory"
);
re!(
    trtllm_component_re,
    r"The following component could not be created: (.+?)\s*(?:Total GPU memory|$)"
);
re!(
    trtllm_total_re,
    r"Total GPU memory \(GiB\): (\d+(?:\.\d+)?)"
);
re!(
    trtllm_free_re,
    r"Free GPU memory before component creation attempt \(GiB\): (\d+(?:\.\d+)?)"
);
re!(
    trtllm_stage_re,
    r"\s*([^:]+?): (\d+(?:\.\d+)?) / (\d+(?:\.\d+)?)"
);
re!(
    ggml_buf_re,
    r"failed to allocate (CUDA(\d+)|\w+) buffer of size (\d+)"
);
// ggml's Vulkan backend (`ggml-vulkan.cpp`, `ggml_vk_create_buffer_device`): "ggml_vulkan: Device
// memory allocation of size N failed." then "ggml_vulkan: " and the vk exception's text; N is
// exact. Its builds of early 2024 said "Memory allocation of size N failed." for the host-visible
// memory a UMA device falls back to. Programs on llama.cpp (ollama, koboldcpp, LM Studio) pass
// the lines through, and an issue's title may keep the sentence without its tag. Its Metal
// backend reports the command buffer's error: "Insufficient Memory
// (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", no size. The 2023 CUDA backend:
// "CUDA error 2 at ggml-cuda.cu:LINE: out of memory" and "current device: N".
re!(
    ggml_vulkan_re,
    r"(?:ggml_vulkan: (?:Device )?[Mm]emory|\bDevice memory) allocation of size (\d+) failed"
);
// The buffer ggml-alloc wanted on the same device, which names it ("Vulkan0").
re!(
    ggml_vulkan_device_re,
    r"(?:failed|unable) to allocate Vulkan(\d+) buffer\b"
);
re!(
    ggml_words_re,
    r"(?i)ggml|llama|ollama|gguf|koboldcpp|whisper\.cpp|lm studio"
);
re!(
    ggml_metal_re,
    r"kIOGPUCommandBufferCallbackErrorOutOfMemory"
);
re!(
    ggml_cuda_old_re,
    r"CUDA error 2 at \S*ggml[\w.\-]*\.cu:\d+: out of memory"
);
// vLLM before v1 (`worker/worker.py`, `raise_if_cache_size_invalid`): the KV cache the memory
// budget leaves holds fewer tokens than one sequence of max_model_len.
re!(
    vllm_tokens_re,
    r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)"
);
re!(vllm_util_re, r"gpu_memory_utilization=(\d*\.\d+)");
// vllm.rs (`src/utils/kvcache_allocator.rs`, `KVCacheError::InsufficientGpuMemory`): the KV
// cache that max-num-seqs × max-model-len needs against the budget (kv_fraction of the
// memory free after the weights), in MB of 2^20 bytes; the GPU line before it gives the GPU's
// total and free in GB of 2^30.
re!(
    vllmrs_kv_re,
    r"Insufficient GPU memory for KVCache allocation\.\s*Available: (\d+(?:\.\d+)?) MB, Required: (\d+(?:\.\d+)?) MB"
);
re!(
    vllmrs_gpu_re,
    r"GPU (\d+): total (\d+(?:\.\d+)?) GB, free (\d+(?:\.\d+)?) GB, kv_fraction (\d+)%"
);
// vllm.rs's engine (`core/engine.rs`): a request whose prompt needs more KV-cache blocks than
// are free, after it released what prefix-cache blocks it could, is refused.
re!(
    vllmrs_request_re,
    r"Remaining (\d+) kvcache tokens, but your prompt requires (\d+) new tokens"
);
re!(
    vllm_kv_re,
    format!(
        r"\(?{SIZE} KV cache is needed, which is larger than the available KV cache memory \({SIZE}\)"
    )
);
// CuPy `cupy/cuda/memory.pyx`, after `free_all_blocks()` and a retry. Up to v6,
// "out of memory to allocate N bytes (total M bytes)" with `total = size + pool.total_bytes()`:
// the request plus what the pool holds. From v7 (cupy/cupy#2242, "allocated so far", and the
// pool's limit of cupy/cupy#2113) `_try_malloc` raises `OutOfMemoryError(size, total - size,
// limit)`: M is what the pool holds without the request (in use, and cached blocks it could
// not release), and "limit set to: L bytes" is the pool's cap (`set_limit`,
// `CUPY_GPU_MEMORY_LIMIT`), when one is set; without a figure (`total == -1`) the sentence ends
// after the request. Neither M nor L is the device's size.
// vLLM `v1/worker` (gpu_worker.py `init_device`, later utils.py `request_memory`): at start-up
// the engine wants `gpu_memory_utilization × total` of the device and refuses when less than
// that is free. Older builds print "Free memory on device (X/Y GiB)", newer ones name the
// device: "Free memory on device cuda:N (X/Y GiB)". X is free, Y the total; what is used is
// held by other processes (or a previous engine still alive), this one has only its context.
re!(
    vllm_startup_re,
    r"Free memory on device(?: (?:cuda|xpu|hip|rocm):(\d+))? \(([\d.]+)/([\d.]+) GiB\) on startup is less than desired GPU memory utilization \(([\d.]+), ([\d.]+) GiB\)"
);
re!(
    cupy_re,
    r"[Oo]ut of memory allocating ([\d,]+) bytes \(allocated so far: ([\d,]+) bytes(?:, limit set to: ([\d,]+) bytes)?\)"
);
// The sentence with no figure after the request (`total == -1`): only under CuPy's own class,
// as other programs say "out of memory allocating N bytes" too.
re!(
    cupy_bare_re,
    r"OutOfMemoryError: Out of memory allocating ([\d,]+) bytes\.(?:\s|$)"
);
re!(
    cupy_old_re,
    r"out of memory to allocate (\d+) bytes \(total (\d+) bytes\)"
);
// PaddlePaddle `memory/allocation/cuda_allocator.cc` (and system_allocator.cc): "X memory has
// been allocated" is `total - avail` from `RecordedGpuMemGetInfo`, the device-wide query, so it
// is everything in use on the GPU by every process, not Paddle's own allocations; the device
// total is X + available. With `FLAGS_gpu_memory_limit_mb` set, total is that limit and avail
// what this process may still take: X is then this process's own use.
re!(
    paddle_re,
    format!(
        r"Out of memory error on GPU (\d+)\. Cannot allocate {SIZE} (?:GPU )?memory(?: on GPU \d+)?, (?:{SIZE} memory has been allocated and )?available memory is(?: only)? {SIZE}"
    )
);
re!(
    trt_re,
    r"(?i)(DefaultAllocator::allocate|defaultAllocator\.cpp::.*allocate|rtSafe/safeRuntime\.cpp|Cuda Error in allocate: 2)"
);
re!(paddle_limit_re, r"`FLAGS_gpu_memory_limit_mb` is (\d+)");
re!(trt_size_re, r"Requested size was (\d+) bytes");
// TensorRT's builder when a tactic's scratch memory cannot be had, and its virtual-memory
// buffers: "Requested amount of [GPU ]memory (N bytes) could not be allocated",
// "allocating N-byte buffer", and any of its components' "[<file>.cpp::<function>::L] Error
// Code N: OutOfMemory" (its virtual-memory buffer's resizePhysical, the builder's
// HybridGlobWriter, …).
re!(
    trt_amount_re,
    r"Requested amount of (?:GPU )?memory \((\d+) bytes\) could not be allocated"
);
re!(trt_buffer_re, r"allocating (\d+)-byte buffer");
re!(
    trt_tactic_re,
    r"GPU memory allocation error during getBestTactic: ([^\s,]{1,200})"
);
re!(
    trt_vm_re,
    r"(?i)\.cpp::[^\]\n]{0,200}::\d+\] Error Code \d+: (?:OutOfMemory|out of memory)"
);
re!(
    raw_cuda_re,
    r"(CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|CUDA error: out of memory|error=2 : out of memory|cuda runtime error \(2\) : out of memory|CUDA failure 2: out of memory|CUDA driver error: out of memory)"
);
re!(gpu_index_re, r"(?:GPU|gpu|device|Device)[ :_=]?(\d+)");

pub(super) fn sz(c: &regex::Captures, i: usize) -> Option<u64> {
    c.get(i).and_then(|m| parse_size(m.as_str()))
}
pub(super) fn num(c: &regex::Captures, i: usize) -> Option<u64> {
    c.get(i).and_then(|m| parse_int(m.as_str()))
}

fn torch_framework(dev: &str) -> Framework {
    match dev.to_ascii_uppercase().as_str() {
        "HIP" => Framework::Hip,
        "XPU" => Framework::Xpu,
        _ => Framework::Pytorch,
    }
}

/// Bytes per element of a TensorFlow dtype name ("float", "half", "int64", …).
fn tf_dtype_size(name: &str) -> Option<u64> {
    Some(match name {
        "float" | "float32" | "int32" | "uint32" | "qint32" => 4,
        "half" | "float16" | "bfloat16" | "int16" | "uint16" => 2,
        "double" | "float64" | "int64" | "uint64" | "complex64" => 8,
        "complex128" => 16,
        "int8" | "uint8" | "bool" | "qint8" | "quint8" => 1,
        _ => return None,
    })
}

pub(crate) fn oom(
    framework: Framework,
    format: &'static str,
    device: Option<u32>,
    facts: Facts,
) -> Oom {
    Oom {
        framework,
        format,
        device_index: device,
        facts,
        hint: None,
        line: String::new(),
        missing: Vec::new(),
        memory: super::MemoryKind::Device,
        memory_limit_bytes: None,
        buffer_limit: None,
        kv_tokens: None,
        kv_fraction: None,
        kv_blocks: None,
    }
}

/// GiB as TensorRT-LLM prints them (two decimals) in bytes.
fn gib(s: &str) -> Option<u64> {
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * (1u64 << 30) as f64).round() as u64)
}

/// TensorRT-LLM's executor report: the component that failed, the total, the free memory
/// before the attempt, and the components created before it.
fn read_trtllm_executor(t: &str) -> Oom {
    let failed = trtllm_component_re()
        .captures(t)
        .map(|c| c[1].trim().to_owned());
    let total = trtllm_total_re().captures(t).and_then(|c| gib(&c[1]));
    let free = trtllm_free_re().captures(t).and_then(|c| gib(&c[1]));
    // The list runs from its heading to the options (or the end of what was pasted).
    let mut components: Vec<super::Component> = t
        .split_once("free GPU memory before/after creation (GiB):")
        .map(|(_, rest)| rest.split("Please refer").next().unwrap_or(rest))
        .map(|list| {
            trtllm_stage_re()
                .captures_iter(list)
                .filter_map(|c| {
                    Some(super::Component {
                        name: c[1].trim().to_owned(),
                        free_before_bytes: gib(&c[2])?,
                        free_after_bytes: Some(gib(&c[3])?),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if let (Some(name), Some(before)) = (failed, free) {
        components.push(super::Component {
            name,
            free_before_bytes: before,
            free_after_bytes: None,
        });
    }
    let f = Facts {
        total_bytes: total,
        free_bytes: free,
        components,
        ..Facts::default()
    };
    oom(Framework::TensorrtLlm, "trtllm-executor", None, f)
}

/// Pinned (page-locked) host memory: TensorFlow's host allocator, the stream executor's, the
/// driver's and the runtime's host allocations.
pub(super) fn pinned_host(t: &str) -> Option<Oom> {
    if let Some(c) = cupy_pinned_re().captures(t) {
        let f = Facts {
            requested_bytes: num(&c, 1),
            ..Facts::default()
        };
        let mut o = oom(Framework::Cupy, "cupy-pinned", None, f);
        o.memory = super::MemoryKind::PinnedHost;
        return Some(o);
    }
    let c = pinned_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 1).or_else(|| num(&c, 2)),
        ..Facts::default()
    };
    // The framework is the wording's own, never a path elsewhere in the paste (a wrap can
    // leave the log prefix on the line before): "could not allocate pinned host memory" is
    // TensorFlow's `device_host_allocator.h`; "failed to alloc N bytes on host" is the stream
    // executor's `GpuDriver::HostAllocate` (`stream_executor/cuda/cuda_driver.cc`), XLA's, so
    // JAX's where the paste names JAX; a bare cuMemAllocHost/cudaHostAlloc is CUDA's.
    let framework = if c.get(1).is_some() {
        Framework::Tensorflow
    } else if c.get(2).is_some() {
        if t.contains("jax") {
            Framework::Jax
        } else {
            Framework::Tensorflow
        }
    } else {
        Framework::Cuda
    };
    let mut o = oom(framework, "pinned-host", None, f);
    o.memory = super::MemoryKind::PinnedHost;
    Some(o)
}

/// XLA's cudaMallocAsync allocator: the request, and CUDA's free/total on the next line.
/// Whose build of XLA's (or TSL's) allocators logged a line: TensorFlow's own tree
/// (`tensorflow/core/…`, `tensorflow/tsl/…`, and from 2.16 `external/local_xla/…`) or jaxlib's
/// bundled copy (`external/xla/…`, `external/org_tensorflow/…`), or JAX's words elsewhere.
/// Whether `t` holds the source path `path` (written with `/`), with either separator: the
/// Windows builds' log lines print `T:\src\github\tensorflow\tensorflow\core\…`.
fn has_path(t: &str, path: &str) -> bool {
    t.contains(path) || (t.contains('\\') && t.contains(&path.replace('/', "\\")))
}

fn xla_build(t: &str, default: Framework) -> Framework {
    let jax = has_path(t, "external/xla/")
        || has_path(t, "external/org_tensorflow/")
        || t.contains("jaxlib")
        || has_path(t, "site-packages/jax/")
        || t.contains("XlaRuntimeError");
    let tensorflow = has_path(t, "external/local_xla/")
        || ((has_path(t, "tensorflow/core/") || has_path(t, "tensorflow/tsl/"))
            && !t.contains("org_tensorflow"));
    match (jax, tensorflow) {
        (true, false) => Framework::Jax,
        (false, true) => Framework::Tensorflow,
        _ => default,
    }
}

pub(super) fn xla_cudamallocasync(t: &str) -> Option<Oom> {
    let c = xla_async_re().captures(t)?;
    let (free, total) = xla_free_total_re()
        .captures(t)
        .map_or((None, None), |m| (num(&m, 1), num(&m, 2)));
    let f = Facts {
        requested_bytes: num(&c, 2),
        free_bytes: free,
        total_bytes: total,
        ..Facts::default()
    };
    Some(oom(
        xla_build(t, Framework::Jax),
        "xla-cudamallocasync",
        num(&c, 1).map(|d| d as u32),
        f,
    ))
}

/// TensorRT-LLM's PyTorch backend: an executor component could not be created.
pub(super) fn trtllm_executor(t: &str) -> Option<Oom> {
    if !trtllm_executor_re().is_match(t) {
        return None;
    }
    Some(read_trtllm_executor(t))
}

/// TensorRT-LLM's CUDA check: the file names the buffer (`ipcUtils` for the inter-GPU buffers).
pub(super) fn trtllm(t: &str) -> Option<Oom> {
    let c = trtllm_re().captures(t)?;
    let format = if c.get(1).is_some_and(|m| m.as_str() == "ipcUtils") {
        "trtllm-ipc"
    } else {
        "trtllm"
    };
    Some(oom(Framework::TensorrtLlm, format, None, Facts::default()))
}

/// LMDeploy's TurboMind: CUDA's out-of-memory status from its own check, no figures.
pub(super) fn turbomind(t: &str) -> Option<Oom> {
    turbomind_re().find(t)?;
    Some(oom(
        Framework::Cuda,
        "lmdeploy-turbomind",
        None,
        Facts::default(),
    ))
}

// ExLlamaV2's autosplit (turboderp-org/exllamav2, `exllamav2/model.py`,
// `load_autosplit_gen`): it loads the model's modules and the cache onto the GPUs in turn,
// moving to the next GPU when one is full, and raises when the last is: "Insufficient VRAM for
// model and cache". Its own planner's check, with no figure. ExLlamaV3's loader
// (turboderp-org/exllamav3, `exllamav3/model/model_ls.py`) does the same, module by module,
// and raises "Insufficient VRAM in split for model and cache" when a module fails to load with
// an out-of-memory error on the last device.
re!(
    exllamav2_autosplit_re,
    r"\bInsufficient VRAM (in split )?for model and cache\b"
);

/// ExLlamaV2's or ExLlamaV3's autosplit, out of GPUs to place the model and cache on.
pub(super) fn exllamav2_autosplit(t: &str) -> Option<Oom> {
    let c = exllamav2_autosplit_re().captures(t)?;
    let format = if c.get(1).is_some() {
        "exllamav3-autosplit"
    } else {
        "exllamav2-autosplit"
    };
    Some(oom(Framework::Pytorch, format, None, Facts::default()))
}

// Apache TVM's Relax VM (`src/runtime/relax_vm/memory_manager.cc`, `StorageObj::AllocNDArray`):
// a tensor placed in a storage region the compiler planned statically did not fit: "Check failed:
// (offset + needed_size <= this->buffer.size) is false: storage allocation failure, attempted to
// allocate N at offset O in region that is M bytes" (MLC-LLM and other TVM-compiled models).
re!(
    tvm_storage_re,
    r"storage allocation failure, attempted to allocate (\d{1,20}) at offset (\d{1,20}) in region that is (\d{1,20}) ?bytes"
);

/// TVM's planned storage region, too small for the tensor placed in it: not the device's memory.
pub(super) fn tvm_storage(t: &str) -> Option<Oom> {
    let c = tvm_storage_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 1),
        total_bytes: num(&c, 3),
        total_is_limit: true,
        ..Facts::default()
    };
    let mut o = oom(Framework::Tvm, "tvm-storage", None, f);
    o.memory = super::MemoryKind::PlannedRegion;
    Some(o)
}

// MLC-LLM's engine (`cpp/serve/config.cc`, `EstimateMemoryUsageOnMode`): before loading, it
// checks that the weights and its temporary buffers fit in its budget, the GPU's total memory
// (`TotalDetectGlobalMemory`) × `gpu_memory_utilization`: "Insufficient GPU memory error: The
// available single GPU memory is B MB, which is less than the sum of model weight size (W MB)
// and temporary buffer size (T MB)." Each figure is `bytes / 1024 / 1024` to three decimals
// (`BytesToMegabytesString`), so MiB. A check, not a failed allocation.
re!(
    mlc_budget_re,
    r"Insufficient GPU memory error: The available single GPU memory is (\d+(?:\.\d+)?) MB, which is less than the sum of model weight size \((\d+(?:\.\d+)?) MB\) and temporary buffer size \((\d+(?:\.\d+)?) MB\)"
);

/// MLC-LLM's start-up check, as printed: its budget, the weights' size and the temporary
/// buffers' size, in bytes.
pub(super) fn mlc_budget_parts(t: &str) -> Option<(u64, u64, u64)> {
    let c = mlc_budget_re().captures(t)?;
    let mib = |i: usize| parse_size(&format!("{} MiB", c.get(i)?.as_str()));
    Some((mib(1)?, mib(2)?, mib(3)?))
}

/// MLC-LLM's start-up check: its weights and temporary buffers (the request, their sum) more
/// than its share of the GPU (`allowed_bytes`).
pub(super) fn mlc_budget(t: &str) -> Option<Oom> {
    let (budget, weights, temp) = mlc_budget_parts(t)?;
    let f = Facts {
        allowed_bytes: Some(budget),
        requested_bytes: Some(weights.saturating_add(temp)),
        derived: vec!["requested_bytes"],
        ..Facts::default()
    };
    Some(oom(Framework::MlcLlm, "mlc-llm-budget", None, f))
}

/// MXNet's GPU storage pool: no figures.
pub(super) fn mxnet(t: &str) -> Option<Oom> {
    if !mxnet_re().is_match(t) {
        return None;
    }
    Some(oom(Framework::Mxnet, "mxnet", None, Facts::default()))
}

/// A CUDA call inside libcudf: no figures.
pub(super) fn libcudf(t: &str) -> Option<Oom> {
    if !libcudf_re().is_match(t) {
        return None;
    }
    Some(oom(Framework::Rmm, "libcudf", None, Facts::default()))
}

/// RAPIDS Memory Manager (and its pool at its maximum).
pub(super) fn rmm(t: &str) -> Option<Oom> {
    if !rmm_re().is_match(t) {
        return None;
    }
    // `rmm::bad_alloc` is thrown only where an allocation call failed (rapidsai/rmm,
    // `include/rmm/detail/error.hpp`: v0.15 to 21.10 wrap every status of cudaMalloc in it;
    // since 21.12 `RMM_CUDA_TRY_ALLOC` throws `out_of_memory` for cudaErrorMemoryAllocation
    // and `bad_alloc` for the rest), so a message cut short before its status is still a
    // device allocation that failed. A status that is there and is not about memory (a
    // sticky cudaErrorIllegalAddress from an earlier kernel) is no out-of-memory.
    if let Some(c) = rmm_status_re().captures(t) {
        let status = c.get(1).map_or("", |m| m.as_str());
        if status != "cudaErrorMemoryAllocation" {
            return None;
        }
    }
    let grow = rmm_grow_re().captures_iter(t).last();
    let format = if grow.is_some()
        || t.contains("Maximum pool size exceeded")
        || t.contains("maximum pool size exceeded")
    {
        "rmm-pool"
    } else {
        "rmm"
    };
    let grown = |i: usize| grow.as_ref().and_then(|c| sz(c, i));
    // No maximum set prints SIZE_MAX (16 EiB): no limit.
    let max = grown(2).filter(|&b| b < 1 << 60);
    // RMM before 0.10 (`rmm.h`'s RMM_ALLOC): "RMM call in line N of file F failed with
    // result RMM_ERROR_OUT_OF_MEMORY (4) Attempted to allocate: B bytes."
    let f = Facts {
        requested_bytes: rmm_size_re()
            .captures(t)
            .and_then(|c| c.get(1)?.as_str().parse().ok())
            .or_else(|| grown(3))
            .or_else(|| rmm_failed_re().captures(t).and_then(|c| sz(&c, 1))),
        reserved_bytes: grown(1),
        total_bytes: max,
        total_is_limit: max.is_some(),
        ..Facts::default()
    };
    let mut o = oom(Framework::Rmm, format, None, f);
    // RMM's host resources throw the same out_of_memory from RMM_CUDA_TRY_ALLOC around
    // cudaMallocHost / cudaHostAlloc (`mr/host/pinned_memory_resource.hpp`,
    // `mr/pinned_host_memory_resource.hpp`, `numa_region_pinned_host_memory_resource`), and
    // the error names the header it was raised in: page-locked host memory, not the GPU's.
    if t.contains("pinned_memory_resource") || t.contains("pinned_host_memory_resource") {
        o.format = "rmm-pinned";
        o.memory = super::MemoryKind::PinnedHost;
    }
    Some(o)
}

/// Numba's driver wrapper: cuMemAlloc, or a context that could not be created.
pub(super) fn numba(t: &str) -> Option<Oom> {
    let c = numba_re().captures(t)?;
    let call = c.get(1).map_or("", |m| m.as_str());
    let format = if call == "cuInit" || call.starts_with("cuCtxCreate") {
        "numba-context"
    } else {
        "numba"
    };
    Some(oom(Framework::Numba, format, None, Facts::default()))
}

/// PyTorch 2.x's caching-allocator sentence (CUDA, HIP, XPU).
pub(super) fn pytorch_2x(t: &str) -> Option<Oom> {
    let c = torch2_re().captures(t)?;
    let mut f = Facts {
        requested_bytes: sz(&c, 2),
        total_bytes: sz(&c, 4),
        free_bytes: sz(&c, 5),
        ..Facts::default()
    };
    if let Some(a) = torch_allowed_re().captures(t) {
        f.allowed_bytes = sz(&a, 1);
    }
    f.other_processes = torch_process_re()
        .captures_iter(t)
        .filter_map(|p| {
            Some(OtherProcess {
                pid: num(&p, 1)? as u32,
                bytes: sz(&p, 2)?,
            })
        })
        .collect();
    if let Some(p) = torch_this_re().captures(t) {
        f.process_bytes = sz(&p, 1);
    }
    if let Some(s) = torch_split_re().captures(t) {
        f.allocated_bytes = sz(&s, 1);
        f.private_pool_bytes = sz(&s, 2);
        f.reserved_unallocated_bytes = sz(&s, 3);
    } else if let Some(s) = torch_allocated_re().captures(t) {
        f.allocated_bytes = sz(&s, 1);
        f.private_pool_bytes = sz(&s, 2);
    }
    let dev = c.get(1).map_or("CUDA", |m| m.as_str());
    Some(oom(
        torch_framework(dev),
        "pytorch-2.x",
        num(&c, 3).map(|d| d as u32),
        f,
    ))
}

/// PyTorch's cudaMallocAsync backend.
pub(super) fn pytorch_cudamallocasync(t: &str) -> Option<Oom> {
    let c = torch_async_re().captures(t)?;
    let total = sz(&c, 4);
    let mut f = Facts {
        allocated_bytes: sz(&c, 2),
        requested_bytes: sz(&c, 3),
        total_bytes: total,
        free_bytes: sz(&c, 5),
        // Unset, the limit is 2^64 bytes (`UINT64_MAX`, "17179869184.00 GiB"): no cap. A
        // fraction of 1.0 prints the device's own size (Text Generation Inference sets
        // CUDA_MEMORY_FRACTION=1.0 by default): a cap, kept as printed.
        allowed_bytes: sz(&c, 6).filter(|l| *l < 1 << 60),
        ..Facts::default()
    };
    if let (Some(t), Some(a), Some(fr)) = (total, f.allocated_bytes, f.free_bytes) {
        f.unaccounted_bytes = Some(t.saturating_sub(a + fr));
        f.derived.push("unaccounted_bytes");
    }
    Some(oom(
        Framework::Pytorch,
        "pytorch-cudamallocasync",
        num(&c, 1).map(|d| d as u32),
        f,
    ))
}

/// PyTorch 2.x's allocator split with its head cut off.
pub(super) fn pytorch_2x_tail(t: &str) -> Option<Oom> {
    let s = torch_split_re().captures(t)?;
    // The head was cut off: only the allocator split (and perhaps the process) survived.
    let mut f = Facts {
        allocated_bytes: sz(&s, 1),
        private_pool_bytes: sz(&s, 2),
        reserved_unallocated_bytes: sz(&s, 3),
        ..Facts::default()
    };
    if let Some(p) = torch_this_re().captures(t) {
        f.process_bytes = sz(&p, 1);
    }
    Some(oom(Framework::Pytorch, "pytorch-2.x-tail", None, f))
}

/// PyTorch 1.5-1.13's sentence (and Intel XPU's 4 GiB block limit in it).
pub(super) fn pytorch_15(t: &str) -> Option<Oom> {
    let c = torch15_re().captures(t)?;
    let f = Facts {
        requested_bytes: sz(&c, 2),
        total_bytes: sz(&c, 4),
        allocated_bytes: sz(&c, 5),
        free_bytes: sz(&c, 6),
        allowed_bytes: sz(&c, 7),
        reserved_bytes: sz(&c, 8),
        ..Facts::default()
    };
    // Intel's XPU runtime on first-generation Xe (Arc A-series): one block may not exceed
    // 4 GiB, whatever is free (intel-extension-for-pytorch#325).
    if t.contains("can NOT allocate memory block with size larger than 4GB") {
        let f = Facts {
            max_alloc_bytes: Some(4 << 30),
            ..f
        };
        return Some(oom(
            Framework::Xpu,
            "xpu-4gb-limit",
            num(&c, 3).map(|d| d as u32),
            f,
        ));
    }
    let dev = c.get(1).map_or("CUDA", |m| m.as_str());
    Some(oom(
        torch_framework(dev),
        "pytorch-1.5",
        num(&c, 3).map(|d| d as u32),
        f,
    ))
}

/// PyTorch 1.0-1.4's sentence, with "cached".
pub(super) fn pytorch_10(t: &str) -> Option<Oom> {
    let c = torch10_re().captures(t)?;
    let f = Facts {
        requested_bytes: sz(&c, 2),
        total_bytes: sz(&c, 4),
        allocated_bytes: sz(&c, 5),
        free_bytes: sz(&c, 6),
        // 1.0–1.4 "cached" is reserved but unallocated.
        reserved_unallocated_bytes: sz(&c, 7),
        ..Facts::default()
    };
    let dev = c.get(1).map_or("CUDA", |m| m.as_str());
    Some(oom(
        torch_framework(dev),
        "pytorch-1.0",
        num(&c, 3).map(|d| d as u32),
        f,
    ))
}

/// PyTorch's MPS allocator (Apple silicon).
pub(super) fn mps(t: &str) -> Option<Oom> {
    // The last of several in one block: a re-wrapped paste can join two failures' lines.
    let c = mps_re().captures_iter(t).last()?;
    let reserved = sz(&c, 1);
    let outside = sz(&c, 2);
    let limit = sz(&c, 3);
    let mut f = Facts {
        reserved_bytes: reserved,
        non_framework_bytes: outside,
        total_bytes: limit,
        total_is_limit: limit.is_some(),
        requested_bytes: sz(&c, 4),
        ..Facts::default()
    };
    if let (Some(r), Some(o)) = (reserved, outside) {
        f.process_bytes = Some(r + o);
        f.derived.push("process_bytes");
    }
    Some(oom(Framework::Mps, "mps", None, f))
}

/// TensorFlow's "OOM when allocating tensor": the shape and dtype give the request.
pub(super) fn tensorflow_oom(t: &str) -> Option<Oom> {
    let c = tf_tensor_re().captures(t)?;
    let dims: Vec<u64> = c
        .get(1)
        .map(|m| {
            m.as_str()
                .split(',')
                .filter_map(|d| d.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let elements = dims.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d));
    let width = c.get(2).and_then(|m| tf_dtype_size(m.as_str()));
    let mut f = Facts {
        elements,
        requested_bytes: elements.zip(width).and_then(|(e, w)| e.checked_mul(w)),
        ..Facts::default()
    };
    // The BFC allocator's line beside it gives the size it rounded, where it is this tensor's:
    // with no dtype in the message (TF 1.0's "OOM when allocating tensor with shape[…]"), a
    // size that is no width of its elements is another tensor's failure in the same paste.
    let mut on_host = None;
    if let Some(b) = tf_bfc_re().captures(t) {
        let bfc = num(&b, 3).or(sz(&b, 2));
        let this = match (bfc, elements, width) {
            (Some(r), Some(e), None) => size_fits_elements(r, e),
            _ => true,
        };
        if this {
            f.requested_bytes = bfc.or(f.requested_bytes);
            // The allocator that failed says where the tensor was: `cuda_host_bfc` is the
            // page-locked host pool, not the GPU's `GPU_0_bfc`.
            on_host = b.get(1).and_then(|n| tf_host_allocator(n.as_str()));
        }
    }
    // Early TF 1.x named no device ("OOM when allocating tensor with shape[…]",
    // `OpKernelContext::allocate_tensor`): the failing node's `_device` after it does.
    let named = c.get(3).map(|m| m.as_str());
    let after = &t[c.get(0).map_or(0, |m| m.end())..];
    let node = named.is_none().then(|| tf_failing_node(after)).flatten();
    let device = named
        .and_then(tf_device_index)
        .or(node.and_then(|n| n.device));
    let mut o = oom(Framework::Tensorflow, "tensorflow-oom", device, f);
    if node.is_some_and(|n| n.on_cpu) {
        o.format = "tensorflow-cpu";
        o.memory = super::MemoryKind::Host;
    }
    if let Some((format, memory)) = on_host {
        o.format = format;
        o.memory = memory;
        o.device_index = None;
    }
    Some(o)
}

/// A TensorFlow allocator of host memory, by its name in "Allocator (NAME_bfc)" (the `_bfc`
/// taken off): `gpu_host`/`cuda_host` (`gpu_host_allocator.h`), the page-locked memory copies
/// to and from the GPU are staged through; `cpu`, `mklcpu`, any other named for the CPU, the
/// host's RAM.
pub(super) fn tf_host_allocator(name: &str) -> Option<(&'static str, super::MemoryKind)> {
    let name = name.to_ascii_lowercase();
    if name.ends_with("_host") || name.contains("_host_") {
        Some(("tensorflow-pinned-host", super::MemoryKind::PinnedHost))
    } else if name.contains("cpu") {
        Some(("tensorflow-cpu", super::MemoryKind::Host))
    } else {
        None
    }
}

/// Whether `bytes` (the BFC allocator's size, printed to two decimals or rounded up to 256
/// bytes) is `elements` of some dtype's width: the same tensor's allocation.
pub(super) fn size_fits_elements(bytes: u64, elements: u64) -> bool {
    [1u64, 2, 4, 8]
        .iter()
        .filter_map(|w| elements.checked_mul(*w))
        .any(|exact| bytes.abs_diff(exact) <= 256 + exact / 200)
}

/// Where the failing node of a TensorFlow error was placed (its `_device` after the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TfNode {
    /// The GPU's index, for a GPU node.
    pub device: Option<u32>,
    /// A node placed on the CPU ("/job:…/device:CPU:0", the legacy "/cpu:0") allocated from
    /// the host's allocator: the host's RAM.
    pub on_cpu: bool,
}

/// The failing node's placement in `after` (the text after a TensorFlow message that names no
/// device), if it gives one.
pub(super) fn tf_failing_node(after: &str) -> Option<TfNode> {
    let d = tf_node_device_re().captures(after)?.get(1)?.as_str();
    let lower = d.to_ascii_lowercase();
    Some(TfNode {
        device: tf_device_index(d),
        on_cpu: lower.contains("/device:cpu:") || lower.contains("/cpu:"),
    })
}

/// TensorFlow's BFC allocator ran out of memory.
pub(super) fn tensorflow_bfc(t: &str) -> Option<Oom> {
    let c = tf_bfc_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 3).or(sz(&c, 2)),
        ..Facts::default()
    };
    let device = c
        .get(1)
        .and_then(|m| m.as_str().rsplit('_').next()?.parse().ok());
    // The BFC allocator is TSL's, shared by TensorFlow and XLA: jaxlib's builds log it from
    // `external/xla/xla/tsl/framework/bfc_allocator.cc`.
    Some(oom(
        xla_build(t, Framework::Tensorflow),
        "tensorflow-bfc",
        device,
        f,
    ))
}

/// vllm.rs: the KV cache does not fit its budget.
pub(super) fn vllm_rs_kvcache(t: &str) -> Option<Oom> {
    let c = vllmrs_kv_re().captures(t)?;
    let mb = |i: usize| {
        c.get(i)
            .and_then(|m| m.as_str().parse::<f64>().ok())
            .map(|v| (v * (1u64 << 20) as f64).round() as u64)
    };
    let gpu = vllmrs_gpu_re().captures(t);
    let gb = |i: usize| {
        gpu.as_ref()?
            .get(i)
            .and_then(|m| m.as_str().parse::<f64>().ok())
            .map(|v| (v * (1u64 << 30) as f64).round() as u64)
    };
    let f = Facts {
        requested_bytes: mb(2),
        // The budget is a cap vllm.rs sets itself; the GPU line has the free memory.
        allowed_bytes: mb(1),
        free_bytes: gb(3),
        total_bytes: gb(2),
        device_used_bytes: gb(2).zip(gb(3)).map(|(t, fr)| t.saturating_sub(fr)),
        ..Facts::default()
    };
    let device = gpu.as_ref().and_then(|g| num(g, 1)).map(|d| d as u32);
    let mut o = oom(Framework::VllmRs, "vllm-rs-kvcache", device, f);
    o.kv_fraction = gpu
        .as_ref()
        .and_then(|g| g.get(4)?.as_str().parse::<f64>().ok())
        .map(|p| p / 100.0);
    Some(o)
}

/// vllm.rs: a prompt needs more KV-cache tokens than are free.
pub(super) fn vllm_rs_request(t: &str) -> Option<Oom> {
    let c = vllmrs_request_re().captures(t)?;
    let mut o = oom(Framework::VllmRs, "vllm-rs-request", None, Facts::default());
    // (tokens the prompt needs, tokens free): the same pair as vLLM's check.
    o.kv_tokens = num(&c, 2).zip(num(&c, 1));
    Some(o)
}

/// vLLM before v1: the KV cache holds fewer tokens than one sequence.
pub(super) fn vllm_kv_tokens(t: &str) -> Option<Oom> {
    let c = vllm_tokens_re().captures(t)?;
    let f = Facts {
        gpu_memory_utilization: vllm_util_re()
            .captures(t)
            .and_then(|u| u.get(1)?.as_str().parse().ok()),
        ..Facts::default()
    };
    let mut o = oom(Framework::Vllm, "vllm-kv-tokens", None, f);
    o.kv_tokens = num(&c, 1).zip(num(&c, 2));
    Some(o)
}

/// vLLM v1: the KV cache needed is larger than the memory left for it.
pub(super) fn vllm_kv_cache(t: &str) -> Option<Oom> {
    let c = vllm_kv_re().captures(t)?;
    let f = Facts {
        requested_bytes: sz(&c, 1),
        free_bytes: sz(&c, 2),
        ..Facts::default()
    };
    Some(oom(Framework::Vllm, "vllm-kv-cache", None, f))
}

/// vLLM's start-up guard: utilization × total is more than is free.
pub(super) fn vllm_startup(t: &str) -> Option<Oom> {
    let c = vllm_startup_re().captures(t)?;
    let gib = |i: usize| {
        c.get(i)
            .and_then(|m| m.as_str().parse::<f64>().ok())
            .map(|v| (v * (1u64 << 30) as f64).round() as u64)
    };
    let (free, total) = (gib(2), gib(3));
    let mut f = Facts {
        free_bytes: free,
        total_bytes: total,
        requested_bytes: gib(5),
        gpu_memory_utilization: c.get(4).and_then(|m| m.as_str().parse().ok()),
        ..Facts::default()
    };
    if let (Some(t), Some(fr)) = (total, free) {
        // At start-up the engine holds only its CUDA context: the rest is others'.
        f.other_processes_bytes = Some(t.saturating_sub(fr));
        f.derived.push("other_processes_bytes");
    }
    Some(oom(
        Framework::Vllm,
        "vllm-startup",
        num(&c, 1).map(|d| d as u32),
        f,
    ))
}

/// vLLM: no memory at all for the cache blocks; its start-up profile's figures where the
/// text holds them.
pub(super) fn vllm_cache_blocks(t: &str) -> Option<Oom> {
    // Before 0.6 the engine logs the count it made first ("# GPU blocks: 0, # CPU blocks: 256",
    // `llm_engine.py`/`worker.py`), then raises for a count at or below zero: the count alone,
    // where a paste ends before the raise, is that failure.
    if !t.contains("No available memory for the cache blocks") && !vllm_no_blocks_re().is_match(t) {
        return None;
    }
    Some(oom(
        Framework::Vllm,
        "vllm-cache-blocks",
        None,
        vllm_profile_facts(t),
    ))
}

re!(
    vllm_no_blocks_re,
    r"\bGPU blocks: 0,\s*(?:#\s?)?CPU blocks: \d"
);

// vLLM's start-up profile (0.6.5 to 0.9's V0 `worker.py`, `determine_num_available_blocks`,
// and V1's `gpu_worker.py` until 0.10): "the current vLLM instance can use total_gpu_memory
// (T GiB) x gpu_memory_utilization (u) = B GiB", then "model weights take W GiB;
// non_torch_memory takes N GiB; PyTorch activation peak memory takes A GiB; the rest of the
// memory reserved for KV Cache is K GiB", K = B − W − N − A. A K at or below zero leaves no
// cache block, and the engine raises "No available memory for the cache blocks" after it
// (V1's "Available KV cache memory: K GiB" the same). Each figure is `x / GiB_bytes` printed
// to two decimals.
re!(
    vllm_budget_re,
    r"total_gpu_memory \((\d+(?:\.\d+)?) ?GiB\) x gpu_memory_utilization \((\d(?:\.\d+)?)\) = (\d+(?:\.\d+)?) ?GiB"
);
re!(
    vllm_split_re,
    r"model weights take (-?\d+(?:\.\d+)?) ?GiB; non_torch_memory takes (-?\d+(?:\.\d+)?) ?GiB; PyTorch activation peak memory takes (-?\d+(?:\.\d+)?) ?GiB;? the rest of the memory reserved for KV Cache is (-?\d+(?:\.\d+)?) ?GiB"
);
re!(
    vllm_available_re,
    r"Available KV cache memory: (-\d+(?:\.\d+)?) ?GiB"
);

/// The figures of vLLM's start-up profile in `t`: the GPU's total, the instance's share of it
/// (`allowed_bytes`, with the utilization), what PyTorch held at the profile's peak (weights
/// and activations, `allocated_bytes`, derived as their sum) and the memory outside PyTorch
/// (`non_framework_bytes`).
fn vllm_profile_facts(t: &str) -> Facts {
    let gib = |c: &regex::Captures, i: usize| {
        c.get(i)
            .and_then(|m| m.as_str().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e6)
            .map(|v| (v * (1u64 << 30) as f64).round() as u64)
    };
    let mut f = Facts::default();
    if let Some(c) = vllm_budget_re().captures(t) {
        f.total_bytes = gib(&c, 1);
        f.gpu_memory_utilization = c.get(2).and_then(|m| m.as_str().parse().ok());
        f.allowed_bytes = gib(&c, 3);
    }
    if let Some(c) = vllm_split_re().captures(t) {
        if let (Some(w), Some(a)) = (gib(&c, 1), gib(&c, 3)) {
            f.allocated_bytes = Some(w + a);
            f.derived.push("allocated_bytes");
        }
        f.non_framework_bytes = gib(&c, 2);
    }
    f
}

/// vLLM's start-up profile leaving nothing for the KV cache, where the paste ends before the
/// error it raises (or the error is far below).
pub(super) fn vllm_profile(t: &str) -> Option<Oom> {
    let short = vllm_split_re()
        .captures(t)
        .and_then(|c| c.get(4)?.as_str().parse::<f64>().ok())
        .is_some_and(|k| k <= 0.0)
        || vllm_available_re().is_match(t);
    if !short {
        return None;
    }
    Some(oom(
        Framework::Vllm,
        "vllm-profile",
        None,
        vllm_profile_facts(t),
    ))
}

/// XLA's TPU compiler: the program needs more HBM than a core has.
pub(super) fn xla_tpu_hbm(t: &str) -> Option<Oom> {
    let Some(c) = xla_hbm_re().captures(t) else {
        return xla_tpu_breakdown(t);
    };
    // The breakdown that follows ("Total hbm usage >= X:" then reserved, program, arguments,
    // "Output size O; shares S with arguments."), read within the same report only. A part
    // XLA prints as "unknown size" stays unknown.
    let report = &t[c.get(0).map_or(0, |m| m.end())..];
    let report = report
        .find("Ran out of memory in memory space")
        .map_or(report, |end| &report[..end]);
    let part = |re: &LazyRegex| re.captures(report).and_then(|p| sz(&p, 1));
    let f = Facts {
        requested_bytes: sz(&c, 1),
        total_bytes: sz(&c, 2),
        runtime_reserved_bytes: part(xla_usage_reserved_re()),
        program_bytes: part(xla_usage_program_re()),
        arguments_bytes: part(xla_usage_arguments_re()),
        output_bytes: part(xla_usage_output_re()),
        ..Facts::default()
    };
    Some(oom(tpu_report_framework(t), "xla-tpu-hbm", None, f))
}

/// The framework a TPU compiler report came through: TensorFlow's TPU runtime says
/// "Compilation failure:"; JAX's is the default.
fn tpu_report_framework(t: &str) -> Framework {
    if t.contains("Compilation failure") || t.contains("tensorflow") {
        Framework::Tensorflow
    } else {
        Framework::Jax
    }
}

/// The same report pasted from its breakdown on ("Total hbm usage >= X:" then reserved,
/// program, arguments), its head left out: XLA prints that breakdown only under its
/// out-of-memory line (`memory_space_assignment` / the TPU compiler's HBM report), so it is
/// still that failure, with the program's use as the request and the capacity unknown.
fn xla_tpu_breakdown(t: &str) -> Option<Oom> {
    let c = xla_usage_total_re().captures(t)?;
    let report = &t[c.get(0).map_or(0, |m| m.start())..];
    let part = |re: &LazyRegex| re.captures(report).and_then(|p| sz(&p, 1));
    let program = part(xla_usage_program_re());
    let reserved = part(xla_usage_reserved_re());
    // The breakdown's own lines, not a sentence that happens to say "total hbm usage".
    program.or(reserved)?;
    let f = Facts {
        requested_bytes: sz(&c, 1),
        runtime_reserved_bytes: reserved,
        program_bytes: program,
        arguments_bytes: part(xla_usage_arguments_re()),
        output_bytes: part(xla_usage_output_re()),
        ..Facts::default()
    };
    Some(oom(tpu_report_framework(t), "xla-tpu-hbm", None, f))
}

/// JAX (PjRt): a request on a device ordinal, in bytes.
pub(super) fn jax_request(t: &str) -> Option<Oom> {
    let c = jax_request_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 2).or(sz(&c, 1)),
        ..Facts::default()
    };
    Some(oom(
        Framework::Jax,
        "jax-request",
        num(&c, 3).map(|d| d as u32),
        f,
    ))
}

/// JAX/XLA's RESOURCE_EXHAUSTED, with BufferAssignment's total where printed; TensorFlow's
/// where its frames raised it (an XLA-compiled step of TensorFlow or Keras on it).
pub(super) fn jax(t: &str) -> Option<Oom> {
    let c = jax_bytes_re()
        .captures(t)
        .or_else(|| xla_bare_bytes_re().captures(t))?;
    let mut f = Facts {
        requested_bytes: sz(&c, 1),
        ..Facts::default()
    };
    if let Some(tot) = jax_total_re().captures(t) {
        // BufferAssignment: the buffers the compiled program needs in all (its parameters,
        // outputs and temporaries), not what the process holds: the arrays of earlier steps
        // and other programs are outside it.
        f.program_bytes = sz(&tot, 1);
    }
    let device = num(&c, 2).map(|d| d as u32);
    if tensorflow_frames_re().is_match(t) && !t.contains("jax") {
        return Some(oom(Framework::Tensorflow, "tensorflow-xla", device, f));
    }
    Some(oom(Framework::Jax, "jax", device, f))
}

/// ONNX Runtime's BFC arena (its size may be cut off: an issue's title ends at "Failed to
/// alloc").
pub(super) fn onnxruntime_bfcarena(t: &str) -> Option<Oom> {
    let c = ort_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 1),
        ..Facts::default()
    };
    Some(oom(Framework::Onnxruntime, "onnxruntime-bfcarena", None, f))
}

/// ggml's CUDA buffer type: cudaMalloc failed.
pub(super) fn ggml(t: &str) -> Option<Oom> {
    let c = ggml_re().captures(t)?;
    let mut f = Facts {
        requested_bytes: sz(&c, 1),
        ..Facts::default()
    };
    if let Some(b) = ggml_buf_re().captures(t) {
        f.requested_bytes = num(&b, 3).or(f.requested_bytes);
    }
    Some(oom(
        Framework::Ggml,
        "ggml",
        num(&c, 2).map(|d| d as u32),
        f,
    ))
}

/// ggml's CPU backend: host memory.
pub(super) fn ggml_cpu_buffer(t: &str) -> Option<Oom> {
    let c = ggml_cpu_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 1).or_else(|| num(&c, 2)),
        ..Facts::default()
    };
    let mut o = oom(Framework::Ggml, "ggml-cpu-buffer", None, f);
    o.memory = super::MemoryKind::Host;
    Some(o)
}

/// Triton: a kernel's shared memory over the hardware's limit per block.
pub(super) fn triton_shared_memory(t: &str) -> Option<Oom> {
    let c = triton_smem_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 1),
        ..Facts::default()
    };
    let mut o = oom(Framework::Triton, "triton-shared-memory", None, f);
    o.memory = super::MemoryKind::SharedMemory;
    o.memory_limit_bytes = num(&c, 2);
    Some(o)
}

/// ggml's Vulkan backend: device memory allocation of an exact size failed.
pub(super) fn ggml_vulkan(t: &str) -> Option<Oom> {
    let c = ggml_vulkan_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 1),
        ..Facts::default()
    };
    let device = ggml_vulkan_device_re()
        .captures(t)
        .and_then(|d| num(&d, 1))
        .and_then(|d| u32::try_from(d).ok());
    Some(oom(Framework::Ggml, "ggml-vulkan", device, f))
}

/// ggml's Metal backend: a command buffer ran out of memory.
pub(super) fn ggml_metal(t: &str) -> Option<Oom> {
    // Metal's own error text: llama.cpp's only beside its words (any Metal program prints it,
    // and is then read as Metal's status).
    if ggml_metal_re().is_match(t) && ggml_words_re().is_match(t) {
        return Some(oom(Framework::Ggml, "ggml-metal", None, Facts::default()));
    }
    // For a day in April 2024 (ggml-org/llama.cpp#6987, then #7010) the failed command
    // buffer's status was followed by the error's name in ggml's words: "out of memory" for
    // MTLCommandBufferErrorOutOfMemory.
    if ggml_metal_named_re().is_match(t) {
        return Some(oom(Framework::Ggml, "ggml-metal", None, Facts::default()));
    }
    // llama.cpp's Metal backend of 2023 (`ggml-metal.m`, `ggml_metal_add_buffer`): each buffer
    // it maps is logged with the running total of Metal's allocated size over the device's
    // recommendedMaxWorkingSetSize, in MiB (printed "MB" before August 2023: "allocated 'kv'
    // buffer, size = 512.03 MiB, ( 4458.33 / 4096.00)"), with a warning once the total passes
    // it. Past it, a tensor whose buffer could not be had fails with "ggml_metal_get_buffer:
    // error: buffer is nil", or the GPU's work fails: "ggml_metal_graph_compute: command buffer
    // N failed with status 5" (MTLCommandBufferStatusError, whose error is the GPU running out
    // of memory when the warning precedes it). Every logged buffer was mapped: the last line
    // gives the running total and the working set, not the size that failed, which is not
    // printed.
    // A buffer it could not map at all (`newBufferWithBytesNoCopy` returned nil): "error:
    // failed to allocate 'data            ' buffer, size = 19283.21 MiB", its size in MiB
    // ("MB" before August 2023), beside the device's working set from the start-up log.
    if let Some(c) = ggml_metal_alloc_re().captures(t) {
        let mib = |m: Option<regex::Match>| {
            let v: f64 = m?.as_str().parse().ok()?;
            Some((v * f64::from(1u32 << 20)).round() as u64)
        };
        let set = mib(ggml_metal_set_re().captures(t).and_then(|s| s.get(1)));
        let f = Facts {
            requested_bytes: mib(c.get(1)),
            total_bytes: set,
            total_is_limit: set.is_some(),
            ..Facts::default()
        };
        return Some(oom(Framework::Ggml, "ggml-metal", None, f));
    }
    let failed = t.contains("ggml_metal_get_buffer: error: buffer is nil")
        || ggml_metal_status_re().is_match(t);
    if !(failed && t.contains("greater than the recommended max working set size")) {
        return None;
    }
    let c = ggml_metal_add_re().captures_iter(t).last();
    let mib = |i: usize| {
        let v: f64 = c.as_ref()?.get(i)?.as_str().parse().ok()?;
        Some((v * f64::from(1u32 << 20)).round() as u64)
    };
    let f = Facts {
        allocated_bytes: mib(2),
        total_bytes: mib(3),
        total_is_limit: mib(3).is_some(),
        ..Facts::default()
    };
    Some(oom(Framework::Ggml, "ggml-metal", None, f))
}

re!(
    ggml_metal_add_re,
    r"ggml_metal_add_buffer: allocated '[^']{1,40}' buffer, size = *(\d{1,9}(?:\.\d{1,3})?) Mi?B, \( *(\d{1,9}(?:\.\d{1,3})?) / *(\d{1,9}(?:\.\d{1,3})?)\)"
);
re!(
    ggml_metal_alloc_re,
    r"ggml_metal_add_buffer: error: failed to allocate '[^']{1,40}' buffer, size = *(\d{1,9}(?:\.\d{1,3})?) ?Mi?B\b"
);
re!(
    ggml_metal_set_re,
    r"recommendedMaxWorkingSetSize *= *(\d{1,9}(?:\.\d{1,3})?) ?Mi?B\b"
);
re!(
    ggml_metal_named_re,
    r"ggml_metal_graph_compute: command buffer \d{1,4} failed with status 5\s{1,4}out of memory\b"
);
re!(
    ggml_metal_status_re,
    r"ggml_metal_graph_compute: command buffer \d{1,4} failed with status 5\b"
);

/// ggml's 2023 CUDA backend.
pub(super) fn ggml_cuda(t: &str) -> Option<Oom> {
    if !ggml_cuda_old_re().is_match(t) {
        return None;
    }
    Some(oom(Framework::Ggml, "ggml-cuda", None, Facts::default()))
}

/// PaddlePaddle Fluid's first-chunk check (before 1.5): the chunk it takes at once against the
/// free memory, in bytes.
pub(super) fn paddle_enforce(t: &str) -> Option<Oom> {
    let c = paddle_enforce_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 1).or_else(|| num(&c, 3)),
        free_bytes: num(&c, 2).or_else(|| num(&c, 4)),
        ..Facts::default()
    };
    Some(oom(Framework::Paddle, "paddle-enforce", None, f))
}

// The same sentence translated into Chinese by a user or a page ("GPU 0上出现内存不足错误。
// 无法在GPU 0上分配50.000000MB内存，已分配11.999512 GB内存，可用内存仅为0.000000B。"): the
// device, the request, what "has been allocated" and what is available, in Paddle's order,
// each after its clause's words (内存 or 显存 for "memory").
re!(
    paddle_zh_re,
    format!(
        r"无法在\s*GPU\s*(\d+)\s*上分配\s*{SIZE}\s*的?[内显]存\s*[，,]\s*(?:已经?分配(?:了)?\s*{SIZE}\s*的?[内显]存\s*[，,]\s*)?(?:而|且)?\s*可用的?[内显]存(?:仅为|只有|仅有|为)\s*{SIZE}"
    )
);

/// PaddlePaddle's message translated into Chinese ([`paddle_zh_re`]): Paddle's figures, with
/// Paddle's meaning.
pub(super) fn paddle_translated(t: &str) -> Option<Oom> {
    let c = paddle_zh_re().captures(t)?;
    let mut o = paddle_from(&c, t);
    o.format = "paddle-translated";
    Some(o)
}

/// PaddlePaddle's CUDA allocator (device-wide use, or this process's under a limit).
pub(super) fn paddle(t: &str) -> Option<Oom> {
    let c = paddle_re().captures(t)?;
    Some(paddle_from(&c, t))
}

/// Paddle's figures from its sentence's captures: the device, the request, what "has been
/// allocated" and what is available.
fn paddle_from(c: &regex::Captures, t: &str) -> Oom {
    let used = sz(c, 3);
    let free = sz(c, 4);
    let limit = paddle_limit_re()
        .captures(t)
        .and_then(|l| num(&l, 1))
        .map(|mb| mb << 20);
    let mut f = Facts {
        requested_bytes: sz(c, 2),
        free_bytes: free,
        ..Facts::default()
    };
    match limit {
        // Under FLAGS_gpu_memory_limit_mb the figures are this process's, against the cap.
        Some(cap) => {
            f.total_bytes = Some(cap);
            f.total_is_limit = true;
            f.process_bytes = used;
        }
        None => {
            f.device_used_bytes = used;
            if let (Some(u), Some(fr)) = (used, free) {
                f.total_bytes = Some(u + fr);
                f.derived.push("total_bytes");
            }
        }
    }
    oom(Framework::Paddle, "paddle", num(c, 1).map(|d| d as u32), f)
}

/// CuPy's memory pool (both wordings).
pub(super) fn cupy(t: &str) -> Option<Oom> {
    let c = cupy_re().captures(t).or_else(|| cupy_bare_re().captures(t));
    if let Some(c) = c {
        let limit = num(&c, 3).filter(|l| *l > 0);
        let f = Facts {
            requested_bytes: num(&c, 1),
            // What the pool holds, the request not included.
            reserved_bytes: num(&c, 2),
            total_bytes: limit,
            total_is_limit: limit.is_some(),
            ..Facts::default()
        };
        return Some(oom(Framework::Cupy, "cupy", None, f));
    }
    let c = cupy_old_re().captures(t)?;
    let requested = num(&c, 1);
    let f = Facts {
        requested_bytes: requested,
        // The printed total includes the request itself.
        reserved_bytes: num(&c, 2).map(|total| total.saturating_sub(requested.unwrap_or(0))),
        ..Facts::default()
    };
    Some(oom(Framework::Cupy, "cupy-old", None, f))
}

/// TensorRT's allocator and virtual-memory buffers. A builder's skipped tactic is a warning
/// (`clean::is_skipped_tactic`), never read here as the failure.
pub(super) fn tensorrt(t: &str) -> Option<Oom> {
    // TensorRT 7's builder: a tactic skipped for want of GPU memory is no failure, but where no
    // tactic was left for that node the build failed for it ("GPU memory allocation error during
    // getBestTactic: N" then "Internal error: could not find any implementation for node N").
    let no_tactic = trt_tactic_re().captures_iter(t).any(|c| {
        c.get(0).zip(c.get(1)).is_some_and(|(all, node)| {
            let said = format!(
                "could not find any implementation for node {}",
                node.as_str()
            );
            // The same node, not one whose name goes on ("conv1" against "conv10").
            t[all.end()..].match_indices(&said).any(|(at, _)| {
                !t[all.end() + at + said.len()..]
                    .starts_with(|ch: char| ch.is_alphanumeric() || ch == '_')
            })
        })
    });
    if no_tactic {
        return Some(oom(Framework::Tensorrt, "tensorrt", None, Facts::default()));
    }
    let amount = trt_amount_re().captures(t).and_then(|c| num(&c, 1));
    let allocator = trt_re().is_match(t);
    let vm = trt_vm_re().is_match(t);
    // A paste cut inside the CUDA status's words ("Cuda Runtime (out of m") still says it.
    let lower = t.to_ascii_lowercase();
    let allocator_oom =
        allocator && (lower.contains("out of memory") || lower.contains("cuda runtime (out of m"));
    if !(allocator_oom || vm || amount.is_some()) {
        return None;
    }
    // The fatal resize first.
    let f = Facts {
        requested_bytes: trt_size_re()
            .captures(t)
            .and_then(|c| num(&c, 1))
            .or(amount)
            .or_else(|| trt_buffer_re().captures(t).and_then(|c| num(&c, 1))),
        ..Facts::default()
    };
    Some(oom(Framework::Tensorrt, "tensorrt", None, f))
}

/// ONNX Runtime's CUDA provider: no figures.
pub(super) fn onnxruntime_cuda(t: &str) -> Option<Oom> {
    if !(t.contains("onnxruntime") && t.contains("CUDA failure 2: out of memory")) {
        return None;
    }
    Some(oom(
        Framework::Onnxruntime,
        "onnxruntime-cuda",
        None,
        Facts::default(),
    ))
}

/// TensorFlow/XLA's stream executor (CUDA or ROCm driver).
pub(super) fn stream_executor(t: &str) -> Option<Oom> {
    let c = stream_exec_re().captures(t)?;
    let f = Facts {
        requested_bytes: num(&c, 2).or(sz(&c, 1)),
        ..Facts::default()
    };
    let hip = c
        .get(3)
        .is_some_and(|m| m.as_str().to_ascii_lowercase().starts_with("hip"));
    // The log line's own path names TensorFlow ("E tensorflow/stream_executor/rocm/
    // rocm_driver.cc:601]", "tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc"):
    // TensorFlow's BFC allocator asking the driver for a region. JAX's builds of the same file
    // print "external/org_tensorflow/…" or "external/xla/…", and stay the runtime's.
    let tensorflow = has_path(t, "tensorflow/") && !t.contains("org_tensorflow");
    let format = if hip { "rocm-driver" } else { "cuda-driver" };
    let framework = match (tensorflow, hip) {
        (true, _) => Framework::Tensorflow,
        (false, true) => Framework::Rocm,
        (false, false) => Framework::Cuda,
    };
    Some(oom(framework, format, None, f))
}

/// A CUDA, cuBLAS or cuDNN status with no framework's words around it.
pub(super) fn raw_cuda(t: &str) -> Option<Oom> {
    let m = raw_cuda_re().find(t)?;
    let format = match m.as_str() {
        "CUBLAS_STATUS_ALLOC_FAILED" => "cublas",
        "CUDNN_STATUS_ALLOC_FAILED" => "cudnn",
        s if s.starts_with("error=2") || s.starts_with("cuda runtime error") => "thcudacheck",
        _ => "cuda",
    };
    let device = gpu_index_re()
        .captures(t)
        .and_then(|c| num(&c, 1))
        .map(|d| d as u32);
    Some(oom(Framework::Cuda, format, device, Facts::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TensorFlow 1.0's BFC line ("Ran out of memory trying to allocate X.  See logs") gives
    /// the request of the OOM beside it when the size is a width of its elements, and not when
    /// it is another tensor's; the stream executor's line without its exact bytes (an issue's
    /// title) still reads.
    #[test]
    fn a_tensor_the_host_pool_failed_to_hold_is_pinned_host_memory() {
        // tensorflow/tensorflow#11915: TF 1.x, no dtype; the BFC line after it names the
        // page-locked pool, and its size is the tensor's (1e9 float32).
        let t = "W op_kernel.cc:1192] Resource exhausted: OOM when allocating tensor with shape[1000,1000,250,4]\nW bfc_allocator.cc:273] Allocator (cuda_host_bfc) ran out of memory trying to allocate 3.72GiB.  Current allocation summary follows.";
        let o = tensorflow_oom(t).expect("found");
        assert_eq!(o.memory, crate::oom::MemoryKind::PinnedHost);
        assert_eq!(o.format, "tensorflow-pinned-host");
        let gpu = t.replace("cuda_host_bfc", "GPU_0_bfc");
        let o = tensorflow_oom(&gpu).expect("found");
        assert_eq!(o.memory, crate::oom::MemoryKind::Device);
        assert_eq!(o.format, "tensorflow-oom");
        // Another tensor's failure in the same paste says nothing of this one's place.
        let other = t.replace("3.72GiB", "16.00MiB");
        assert_eq!(
            tensorflow_oom(&other).expect("found").memory,
            crate::oom::MemoryKind::Device
        );
    }

    #[test]
    fn tf_1_0_bfc_line_and_the_stream_executor_without_bytes() {
        let bfc = "W bfc_allocator.cc:275] Ran out of memory trying to allocate 24.38MiB.  See logs for memory state.\n";
        let same = format!("{bfc}W op_kernel.cc:975] Resource exhausted: OOM when allocating tensor with shape[48,8,8,2080]");
        let o = tensorflow_oom(&same).expect("same tensor");
        assert_eq!(o.facts.requested_bytes, Some(25_564_283));
        let other = format!("{bfc}W op_kernel.cc:975] Resource exhausted: OOM when allocating tensor with shape[48,17,17,1088]");
        let o = tensorflow_oom(&other).expect("another tensor");
        assert_eq!(
            (o.facts.requested_bytes, o.facts.elements),
            (None, Some(48 * 17 * 17 * 1088))
        );
        let o = tensorflow_bfc(bfc).expect("alone");
        assert_eq!(o.facts.requested_bytes, Some(25_564_283));
        let o = stream_executor("mnist.py: failed to allocate 8.00G from device: hipError_t(1002)")
            .expect("title");
        assert_eq!(
            (o.format, o.facts.requested_bytes),
            ("rocm-driver", Some(8 << 30))
        );
    }

    /// llama.cpp's 2023 Metal backend could not map a buffer: its size, beside the device's
    /// working set from the start-up log (ggml-org/llama.cpp#1870).
    #[test]
    fn ggml_metal_buffer_not_mapped() {
        let o = ggml_metal("llm_load_tensors: mem required  = 19282.65 MiB\nggml_metal_init: recommendedMaxWorkingSetSize  = 49152.00 MiB\nggml_metal_add_buffer: error: failed to allocate 'data            ' buffer, size = 19283.21 MiB").expect("found");
        let mib = |x: f64| (x * f64::from(1u32 << 20)).round() as u64;
        assert_eq!(
            (
                o.facts.requested_bytes,
                o.facts.total_bytes,
                o.facts.total_is_limit
            ),
            (Some(mib(19283.21)), Some(mib(49152.0)), true)
        );
    }

    /// vLLM's start-up profile: its share, what PyTorch held (weights and activation peak) and
    /// the memory outside it; a failure only where nothing is left for the KV cache.
    #[test]
    fn vllms_profile_with_no_room_for_the_cache() {
        let gib = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        let head = "INFO worker.py:267] the current vLLM instance can use total_gpu_memory (8.00GiB) x gpu_memory_utilization (0.70) = 5.60GiB\nINFO worker.py:267] model weights take 5.20GiB; non_torch_memory takes 0.03GiB; PyTorch activation peak memory takes 1.42GiB; the rest of the memory reserved for KV Cache is ";
        let o = vllm_profile(&format!("{head}-1.05GiB.")).expect("short");
        let f = &o.facts;
        assert_eq!(o.format, "vllm-profile");
        assert_eq!(
            (
                f.total_bytes,
                f.allowed_bytes,
                f.allocated_bytes,
                f.non_framework_bytes
            ),
            (
                Some(8 << 30),
                Some(gib(5.6)),
                Some(gib(5.2) + gib(1.42)),
                Some(gib(0.03))
            )
        );
        assert_eq!(f.gpu_memory_utilization, Some(0.7));
        assert!(vllm_profile(&format!("{head}2.18GiB.")).is_none());
        // A negative figure outside PyTorch is no memory: left unknown.
        let o = vllm_profile("model weights take 6.47GiB; non_torch_memory takes -0.05GiB; PyTorch activation peak memory takes 4.93GiB; the rest of the memory reserved for KV Cache is -7.83GiB.").expect("short");
        assert_eq!(o.facts.non_framework_bytes, None);
        assert!(vllm_profile("INFO gpu_worker.py] Available KV cache memory: -0.54 GiB").is_some());
        assert!(vllm_profile("INFO gpu_worker.py] Available KV cache memory: 10.50 GiB").is_none());
    }

    /// Paddle's sentence translated into Chinese keeps Paddle's figures and meaning.
    #[test]
    fn paddles_sentence_translated() {
        let o = paddle_translated("GPU 0上出现内存不足错误。无法在GPU 0上分配50.000000MB内存，已分配11.999512 GB内存，可用内存仅为0.000000B。").expect("found");
        assert_eq!(
            (
                o.format,
                o.device_index,
                o.facts.requested_bytes,
                o.facts.free_bytes
            ),
            ("paddle-translated", Some(0), Some(50 << 20), Some(0))
        );
        assert_eq!(
            o.facts.device_used_bytes,
            Some((11.999512 * (1u64 << 30) as f64).round() as u64)
        );
        assert!(paddle_translated("在GPU上分配内存时显存不足怎么办？").is_none());
    }

    /// The BFC allocator's line with its name (TensorFlow's) and without it (Intel's extension,
    /// whose sizes say "Bytes"); PyTorch 2.x's sentence with its device number left blank.
    #[test]
    fn bfc_without_its_name_and_pytorch_without_its_device() {
        let o = tensorflow_bfc("W bfc_allocator.cc:433] Allocator (GPU_1_bfc) ran out of memory trying to allocate 18.00MiB (rounded to 18874368)requested by op Mul").expect("named");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (Some(1), Some(18_874_368))
        );
        let o = tensorflow_bfc("E itex/core/devices/bfc_allocator.cc:101] Allocator ran out of memory trying to allocate 10529419660 Bytes (rounded to 10529419776 Bytes)").expect("unnamed");
        assert_eq!(
            (o.device_index, o.facts.requested_bytes),
            (None, Some(10_529_419_776))
        );
        let o = super::super::parse::parse_text("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU  has a total capacity of 15.77 GiB of which 1012.69 MiB is free.").expect("found");
        assert_eq!(
            (o.format, o.device_index, o.facts.free_bytes),
            ("pytorch-2.x", None, Some(1_061_882_429))
        );
    }

    /// The device of "OOM when allocating tensor … on <device>": any type TensorFlow names, not
    /// a CPU.
    #[test]
    fn tensorflow_devices_of_every_type() {
        for (dev, index) in [
            ("/job:localhost/replica:0/task:0/device:DML:1", Some(1)),
            ("/job:localhost/replica:0/task:0/device:GPU:2", Some(2)),
            ("/job:localhost/replica:0/task:0/device:XPU:3", Some(3)),
            ("/job:localhost/replica:0/task:0/device:APU:0", Some(0)),
            ("/job:localhost/replica:0/task:0/gpu:1", Some(1)),
            ("/job:localhost/replica:0/task:0/device:CPU:0", None),
        ] {
            let t = format!("ResourceExhaustedError: OOM when allocating tensor with shape[1024,1024] and type float on {dev} by allocator x_bfc");
            let o = tensorflow_oom(&t).expect("found");
            assert_eq!(o.device_index, index, "{dev}");
        }
    }

    #[test]
    fn rmms_pinned_host_resources_are_host_memory() {
        for t in [
            "MemoryError: std::bad_alloc: out_of_memory: CUDA error at: /opt/conda/include/rmm/mr/host/pinned_memory_resource.hpp:157: cudaErrorMemoryAllocation out of memory",
            "std::bad_alloc: out_of_memory: CUDA error (failed to allocate 4096 bytes) at: /rmm/cpp/src/mr/pinned_host_memory_resource.cpp:61: cudaErrorMemoryAllocation out of memory",
        ] {
            let o = rmm(t).expect(t);
            assert_eq!(
                (o.format, o.memory),
                ("rmm-pinned", super::super::MemoryKind::PinnedHost),
                "{t}"
            );
        }
        let o = rmm("MemoryError: std::bad_alloc: out_of_memory: CUDA error at: /opt/conda/include/rmm/mr/device/cuda_memory_resource.hpp:60: cudaErrorMemoryAllocation out of memory").expect("found");
        assert_eq!(o.memory, super::super::MemoryKind::Device);
    }

    /// A message that names no device takes the failing node's `_device` (TF 1.x's
    /// `SummarizeNodeDef`, in either bracket form); a CPU node is the host's RAM; TF 2's bare
    /// `{{node …}}` gives none; a device the message names wins.
    #[test]
    fn tensorflow_oom_takes_the_node_s_device() {
        let oom =
            "ResourceExhaustedError: OOM when allocating tensor with shape[32,64,224,224]\n\t ";
        for (node, index) in [
            (
                r#"[[Node: conv1/Conv2D = Conv2D[T=DT_FLOAT, data_format="NHWC", padding="SAME", strides=[1, 1, 1, 1], use_cudnn_on_gpu=true, _device="/job:localhost/replica:0/task:0/gpu:1"](Placeholder, conv1/w/read)]]"#,
                Some(1),
            ),
            (
                r#"[[Node: conv1/Conv2D = Conv2D[T=DT_FLOAT, _device="/job:localhost/replica:0/task:0/device:GPU:0"](Placeholder, conv1/w/read)]]"#,
                Some(0),
            ),
            (
                r#"[[{{node conv1/Conv2D}} = Conv2D[T=DT_FLOAT, _device="/job:localhost/replica:0/task:0/device:GPU:3"](Placeholder, conv1/w/read)]]"#,
                Some(3),
            ),
            ("[[{{node conv1/Conv2D}}]]", None),
        ] {
            let o = tensorflow_oom(&format!("{oom}{node}")).expect(node);
            assert_eq!(
                (o.device_index, o.memory, o.facts.elements),
                (
                    index,
                    super::super::MemoryKind::Device,
                    Some(32 * 64 * 224 * 224)
                ),
                "{node}"
            );
        }
        let o = tensorflow_oom(&format!(
            r#"{oom}[[Node: x = Mul[T=DT_FLOAT, _device="/job:localhost/replica:0/task:0/cpu:0"](a, b)]]"#
        ))
        .expect("found");
        assert_eq!(
            (o.format, o.memory, o.device_index),
            ("tensorflow-cpu", super::super::MemoryKind::Host, None)
        );
        // The device in the message itself is the allocation's.
        let o = tensorflow_oom(r#"OOM when allocating tensor with shape[10] and type float on /job:localhost/replica:0/task:0/device:GPU:2 by allocator GPU_2_bfc
	 [[{{node x}} = Mul[T=DT_FLOAT, _device="/job:localhost/replica:0/task:0/device:GPU:0"](a, b)]]"#).expect("found");
        assert_eq!(o.device_index, Some(2));
    }

    /// `rmm::bad_alloc` cut short inside RMM's path is a failed device allocation; with a
    /// status that is not about memory, or as `rmm::cuda_error` (no "std::bad_alloc"), not.
    #[test]
    fn rmms_bad_alloc_cut_short_is_a_failed_allocation() {
        for t in [
            "MemoryError: std::bad_alloc: CUDA error at: /opt/conda/envs/rapids/include/rmm/mr/",
            "MemoryError: std::bad_alloc: CUDA error at: /conda/include/rmm/mr/device/cuda_memory_resource.hpp:69: cudaErrorMemoryAllocation out of memory",
            "MemoryError: std::bad_alloc: CUDA error at: /conda/include/rmm/mr/device/cuda_memory_resource.hpp66: cudaErrorMemoryAllocation out of memory",
        ] {
            let o = rmm(t).expect(t);
            assert_eq!(
                (o.framework, o.format, o.memory),
                (Framework::Rmm, "rmm", super::super::MemoryKind::Device),
                "{t}"
            );
        }
        for t in [
            "MemoryError: std::bad_alloc: CUDA error at: /conda/include/rmm/mr/device/cuda_memory_resource.hpp:69: cudaErrorIllegalAddress an illegal memory access was encountered",
            "RuntimeError: CUDA error at: /conda/include/rmm/mr/device/cuda_memory_resource.hpp:70: cudaErrorIllegalAddress an illegal memory access was encountered",
            // RMM 0.13: the line number right after the file name.
            "MemoryError: std::bad_alloc: CUDA error at: /conda/include/rmm/mr/device/cuda_memory_resource.hpp66: cudaErrorIllegalAddress an illegal memory access was encountered",
        ] {
            assert!(rmm(t).is_none(), "{t}");
        }
    }

    /// TSL's BFC allocator and XLA's cudaMallocAsync allocator are shared by TensorFlow and
    /// jaxlib: the path in the log line says whose build printed it.
    #[test]
    fn the_shared_allocators_name_their_build() {
        let bfc = "Allocator (GPU_0_bfc) ran out of memory trying to allocate 16.00GiB (rounded to 17179869184)requested by op ";
        let o = tensorflow_bfc(&format!(
            "W external/xla/xla/tsl/framework/bfc_allocator.cc:482] {bfc}"
        ))
        .expect("found");
        assert_eq!(o.framework, Framework::Jax);
        let o = tensorflow_bfc(&format!(
            "W external/local_xla/xla/tsl/framework/bfc_allocator.cc:482] {bfc}"
        ))
        .expect("found");
        assert_eq!(o.framework, Framework::Tensorflow);
        assert_eq!(
            tensorflow_bfc(bfc).expect("found").framework,
            Framework::Tensorflow
        );
        let async_line = "gpu_async_0 cuMemAllocAsync failed to allocate 4294967296 bytes: CUDA error: out of memory (CUDA_ERROR_OUT_OF_MEMORY)\n Reported by CUDA: Free memory/Total memory: 1048576000/16945512448";
        let o = xla_cudamallocasync(&format!("E tensorflow/core/common_runtime/gpu/gpu_cudamallocasync_allocator.cc:288] {async_line}")).expect("found");
        assert_eq!(o.framework, Framework::Tensorflow);
        let o = xla_cudamallocasync(&format!("E external/xla/xla/stream_executor/gpu/gpu_cudamallocasync_allocator.cc:250] {async_line}")).expect("found");
        assert_eq!(o.framework, Framework::Jax);
        assert_eq!(
            xla_cudamallocasync(async_line).expect("found").framework,
            Framework::Jax
        );
    }

    /// A 2.x message cut after its allocated clause (a client truncating the text) keeps what
    /// is there: the allocated figure, and the private pools where the cut came after them.
    #[test]
    fn a_2x_message_cut_after_the_allocated_clause() {
        let head = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process has 22.13 GiB memory in use. ";
        let o = pytorch_2x(&format!(
            "{head}Of the allocated memory 20.00 GiB is allocated by PyTorch, and 1..."
        ))
        .expect("found");
        assert_eq!(o.facts.allocated_bytes, Some(20 << 30));
        assert_eq!(o.facts.reserved_unallocated_bytes, None);
        let o = pytorch_2x(&format!("{head}Of the allocated memory 20.00 GiB is allocated by PyTorch, with 1.00 GiB allocated in private pools (e.g., CUDA Graphs), and 2"))
            .expect("found");
        assert_eq!(
            (o.facts.allocated_bytes, o.facts.private_pool_bytes),
            (Some(20 << 30), Some(1 << 30))
        );
        let o = pytorch_2x(&format!("{head}Of the allocated memory 20.0")).expect("found");
        assert_eq!(o.facts.allocated_bytes, None, "a cut figure is not read");
    }

    /// ROCm's hipified allocator names its graphs "HIP Graphs" in the private-pool clause;
    /// the split must still be read, whatever the graph API's name.
    #[test]
    fn the_private_pool_clause_names_any_graph_api() {
        for graphs in ["CUDA Graphs", "HIP Graphs", "XPU Graphs"] {
            let text = format!("Of the allocated memory 1017.01 MiB is allocated by PyTorch, with 17.00 MiB allocated in private pools (e.g., {graphs}), and 54.99 MiB is reserved by PyTorch but unallocated.");
            let c = torch_split_re().captures(&text).expect(graphs);
            assert_eq!(sz(&c, 2), Some(17 << 20), "{graphs}");
        }
    }

    /// Regression: re-wrapped at 84 columns, the stream executor's line lost the log prefix
    /// that named TensorFlow and was read as CUDA's.
    #[test]
    fn pinned_host_framework_is_the_wordings_own() {
        let fw = |t: &str| pinned_host(t).map(|o| o.framework);
        assert_eq!(
            fw("failed to alloc 34359738368 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory"),
            Some(Framework::Tensorflow)
        );
        assert_eq!(
            fw("could not allocate pinned host memory of size: 34359738368"),
            Some(Framework::Tensorflow)
        );
        assert_eq!(
            fw("ERROR:  failed on cuMemAllocHost: CUDA_ERROR_OUT_OF_MEMORY - out of memory"),
            Some(Framework::Cuda)
        );
    }

    /// CuPy's three sentences as `memory.pyx` formats them: v6's total includes the request;
    /// v7's "allocated so far" does not; the pool's limit is a limit, not the device.
    #[test]
    fn cupy_figures_by_version() {
        let o = cupy("cupy.cuda.memory.OutOfMemoryError: out of memory to allocate 1073741824 bytes (total 12373894656 bytes)").expect("v6");
        assert_eq!(
            (o.format, o.facts.reserved_bytes),
            ("cupy-old", Some(11_300_152_832))
        );
        let o = cupy("OutOfMemoryError: Out of memory allocating 200,000,000,000 bytes (allocated so far: 4,096 bytes).").expect("v7");
        assert_eq!(o.facts.reserved_bytes, Some(4096));
        assert_eq!((o.facts.total_bytes, o.facts.total_is_limit), (None, false));
        let o = cupy("Out of memory allocating 805,306,368 bytes (allocated so far: 536,870,912 bytes, limit set to: 1,073,741,824 bytes).").expect("limit");
        assert_eq!(o.facts.requested_bytes, Some(805_306_368));
        assert_eq!(o.facts.reserved_bytes, Some(536_870_912));
        assert_eq!(
            (o.facts.total_bytes, o.facts.total_is_limit),
            (Some(1 << 30), true)
        );
        let o = cupy("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,024 bytes.")
            .expect("bare");
        assert_eq!(
            (o.facts.requested_bytes, o.facts.reserved_bytes),
            (Some(1024), None)
        );
        assert!(cupy("RESOURCE_EXHAUSTED: Out of memory allocating 7406166528 bytes.").is_none());
        let o = pinned_host("UserWarning: Using synchronous transfer as pinned memory (2147483648 bytes) could not be allocated. This generally occurs because of insufficient host memory.").expect("pinned");
        assert_eq!(
            (o.framework, o.format, o.memory),
            (
                Framework::Cupy,
                "cupy-pinned",
                super::super::MemoryKind::PinnedHost
            )
        );
        assert_eq!(o.facts.requested_bytes, Some(2 << 30));
    }

    #[test]
    fn ggml_vulkans_sentence_in_each_form() {
        for (text, device) in [
            ("ggml_vulkan: Device memory allocation of size 4199040000 failed.\nggml_gallocr_reserve_n: failed to allocate Vulkan1 buffer of size 4571325856", Some(1)),
            ("Bug: Device memory allocation of size 4199040000 failed.", None),
            ("ggml_vulkan: Memory allocation of size 4199040000 failed.", None),
        ] {
            let o = ggml_vulkan(text).expect(text);
            assert_eq!((o.facts.requested_bytes, o.device_index), (Some(4_199_040_000), device), "{text}");
        }
        assert!(
            ggml_vulkan("Memory allocation of size 4199040000 failed.").is_none(),
            "an untagged host malloc is not Vulkan's"
        );
    }

    #[test]
    fn xla_tpu_hbm_reads_its_breakdown() {
        let o = xla_tpu_hbm("XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 35.83G of 31.25G hbm. Exceeded hbm capacity by 4.59G.\n\nTotal hbm usage >= 36.09G:\n    reserved        260.00M \n    program          30.11G \n    arguments         5.72G \n\nOutput size 0B; shares 0B with arguments.").expect("found");
        let g = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        assert_eq!(o.facts.runtime_reserved_bytes, Some(260 << 20));
        assert_eq!(o.facts.program_bytes, Some(g(30.11)));
        assert_eq!(o.facts.arguments_bytes, Some(g(5.72)));
        assert_eq!(o.facts.output_bytes, Some(0));
        // One line, as XLA's error docs show it, with a part of unknown size.
        let o = xla_tpu_hbm("Ran out of memory in memory space hbm. Used 49.34G of 32.00G hbm. Exceeded hbm capacity by 17.34G. Total hbm usage >= 49.34G: reserved 3.12M program unknown size arguments 49.34G").expect("found");
        assert_eq!(o.facts.program_bytes, None);
        assert_eq!(o.facts.arguments_bytes, Some(g(49.34)));
        // Without the breakdown, nothing is made up.
        let o = xla_tpu_hbm("Ran out of memory in memory space hbm. Used 18.56G of 16.00G hbm. Exceeded hbm capacity by 2.56G.").expect("found");
        assert_eq!(
            (o.facts.program_bytes, o.facts.runtime_reserved_bytes),
            (None, None)
        );
        // Pasted from its breakdown on (erfanzar/EasyDeL#95): the program's use, no capacity.
        let o = xla_tpu_hbm("Total hbm usage >= 9.50G:\n    reserved        530.00M \n    program           8.98G \n    arguments            0B \n\nOutput size 0B; shares 0B with arguments.").expect("found");
        let g = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        assert_eq!(o.facts.requested_bytes, Some(g(9.5)));
        assert_eq!(o.facts.program_bytes, Some(g(8.98)));
        assert_eq!(o.facts.runtime_reserved_bytes, Some(530 << 20));
        assert_eq!(o.facts.total_bytes, None);
        assert!(xla_tpu_hbm("the total hbm usage >= 9.50G: is what I see").is_none());
    }

    #[test]
    fn lmdeploys_turbomind_check() {
        let o = turbomind("RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/memory_utils.cu:32").expect("found");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Cuda, "lmdeploy-turbomind")
        );
        assert!(turbomind(
            "[TM][ERROR] CUDA runtime error: an illegal memory access was encountered /x.cu:1"
        )
        .is_none());
        // Quoted whole in a question, after a full-width colon (OpenGVLab/InternVL#538).
        let a = crate::oom::analyze("I used lmdeploy to load the 40B model, but I encountered an error：`RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/memory_utils.cu:32`. My machine is an A100 80G. What could be the issue?");
        assert_eq!(a.main().map(|o| o.format), Some("lmdeploy-turbomind"));
    }

    #[test]
    fn tf_dtypes() {
        assert_eq!(tf_dtype_size("float"), Some(4));
        assert_eq!(tf_dtype_size("half"), Some(2));
        assert_eq!(tf_dtype_size("mystery"), None);
    }
}
