//! Rules that name the cause of an OOM with its numbers, ranked, each with remedies that are
//! correct for the framework that raised it.

use serde::Serialize;

use super::api;
use super::{Framework, MemoryKind, Oom};
use crate::units::fmt_bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    RequestExceedsTotal,
    ProcessCap,
    OtherProcesses,
    /// The device is full and the message gives only the device-wide figure (PaddlePaddle):
    /// whose the memory is, it cannot say.
    DeviceInUse,
    Fragmentation,
    FrameworkAllocations,
    OutsideFramework,
    FrameworkSettings,
    NoNumbers,
    /// Only the size of the failed request is known.
    RequestOnly,
    /// The message's figures do not account for the failure.
    Unexplained,
    /// A figure in the message cannot be true (it is left out of the analysis).
    ImplausibleFigures,
    /// Not the GPU's memory: a kernel asked for more on-chip shared memory per block than the
    /// GPU has (Triton's "out of resource: shared memory").
    SharedMemory,
    /// Not the GPU's memory: the host's RAM (a CPU buffer) could not be allocated.
    HostMemory,
    /// A GPU allocation failed in wording gpumon does not know: what the line says, no more.
    Unrecognised,
    /// Not the GPU's memory: page-locked (pinned) host memory could not be allocated.
    PinnedHostMemory,
    /// Not bytes: the process holds as many buffers as the driver allows (MLX on Metal).
    BufferCount,
    /// What the message says is held goes beyond the device: allocations spilled into shared
    /// system memory (Windows' sysmem fallback).
    SpilledToSystemMemory,
    /// Not HBM: a compiled program needs more of a TPU core's on-chip memory (VMEM or SMEM)
    /// than the compiler may give it.
    TpuOnChipMemory,
    /// An AMD APU: HIP's total is the VRAM pool the firmware sets aside, its free also counts
    /// the system memory the GPU maps through GTT, and no one allocation may exceed the pool.
    IntegratedGpu,
    /// Not memory running out: a request of 0 bytes, which TensorFlow's allocator refuses (an
    /// empty tensor reached an op).
    ZeroByteRequest,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Remedy {
    pub text: String,
    /// Expected saving, where the numbers allow an estimate.
    pub saves_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub cause: Cause,
    pub title: String,
    pub detail: String,
    pub remedies: Vec<Remedy>,
}

fn r(text: impl Into<String>) -> Remedy {
    Remedy {
        text: text.into(),
        saves_bytes: None,
    }
}

fn est(text: impl Into<String>, saves: Option<u64>) -> Remedy {
    Remedy {
        text: text.into(),
        saves_bytes: saves,
    }
}

/// The allocator-config variable this build of PyTorch reads, as its own message names it.
fn alloc_conf(oom: &Oom) -> &'static str {
    if let Some(conf) = super::families::fork(oom.framework).and_then(|f| f.alloc_conf) {
        return conf;
    }
    match (oom.framework, oom.hint.as_deref()) {
        (Framework::Hip, Some(h)) if h.contains("PYTORCH_HIP_ALLOC_CONF") => {
            "PYTORCH_HIP_ALLOC_CONF"
        }
        (_, Some(h)) if h.starts_with("PYTORCH_ALLOC_CONF") => "PYTORCH_ALLOC_CONF",
        _ => "PYTORCH_CUDA_ALLOC_CONF",
    }
}

/// The run the user described to `explain` (`--estimate`), to size the remedies with
/// `gpumon estimate`'s model instead of rules of thumb.
#[derive(Debug, Clone)]
pub struct Sizing {
    pub shape: crate::estimate::memory::Shape,
    pub run: crate::estimate::memory::Run,
}

/// Ranked findings for one OOM: the most likely cause first.
pub fn diagnose(oom: &Oom) -> Vec<Finding> {
    diagnose_with(oom, None)
}

/// A rule that alone explains its message: the first of [`ALONE`] that answers is the whole
/// diagnosis.
pub type Alone = fn(&Oom) -> Option<Finding>;

/// A rule that adds one finding to those before it (some look at them: a cause already found
/// makes theirs moot).
pub type Rule = fn(&Oom, Option<&Sizing>, &[Finding]) -> Option<Finding>;

/// The rules that each explain a message alone, by name, in the order they are tried.
pub const ALONE: &[(&str, Alone)] = &[
    ("gpu-api", gpu_api_finding),
    ("unrecognised", unrecognised_message),
    ("zero-byte-request", zero_byte_request),
    ("neuron-runtime", neuron_runtime),
    ("sophgo-bmlib", sophgo_bmlib),
    ("container-limit", container_limit),
    ("vllm-rs", vllm_rs_message),
    ("trtllm-executor", trtllm_executor_message),
    ("vllm-kv-tokens", kv_tokens),
    ("gpu-library", gpu_library),
    ("not-device-memory", not_device_memory),
    ("xla-tpu-hbm", xla_tpu_hbm),
    ("xpu-4gb-limit", xpu_4gb_limit),
    ("vllm-startup", vllm_startup_guard),
    ("vllm-profile", vllm_profile_budget),
    ("ascend-runtime", ascend_runtime),
    ("gaudi-device-memory", gaudi_device_memory),
    ("gaudi-graph-workspace", gaudi_graph_workspace),
];

/// The general rules, by name, in the order their findings are said (before ranking by size).
pub const RULES: &[(&str, Rule)] = &[
    ("integrated-gpu", integrated_gpu),
    ("request-exceeds-total", request_exceeds_total),
    ("process-cap", process_cap),
    ("other-processes", other_processes),
    ("device-in-use", device_in_use),
    ("fragmentation", fragmentation),
    ("framework-allocations", held_by_framework),
    ("one-large-allocation", one_large_allocation),
    ("xpu-block-limit", xpu_block_limit),
    ("mps-outside-allocator", mps_outside_allocator),
    ("outside-framework", outside_framework),
    ("no-numbers", no_numbers),
    ("request-only", request_only),
    ("unexplained", unexplained),
    ("spilled", spill),
    ("framework-settings", settings),
    ("allocator-warning", allocator_warning),
    ("implausible-figures", implausible_figures),
];

/// [`diagnose`], with the remedies' savings from the described run's model when there is one.
pub fn diagnose_with(oom: &Oom, sizing: Option<&Sizing>) -> Vec<Finding> {
    if let Some(finding) = ALONE.iter().find_map(|(_, rule)| rule(oom)) {
        return vec![finding];
    }
    // The stacks read over the structural reader, each with its own rule.
    if let Some(finding) = STACK_RULES.iter().find_map(|(_, rule)| rule(oom)) {
        // A size no device holds is the cause before the stack's own reading of it.
        return implausible_figures(oom, sizing, &[])
            .into_iter()
            .chain(std::iter::once(finding))
            .chain(spilled(oom))
            .collect();
    }
    let mut out = Vec::new();
    for (_, rule) in RULES {
        if let Some(finding) = rule(oom, sizing, &out) {
            out.push(finding);
        }
    }
    rank_by_memory(&mut out, oom);
    // PyTorch's allocator warning alone is first of all a retry, which may have succeeded.
    if oom.format == "pytorch-alloc-warning" {
        if let Some(i) = out.iter().position(|x| x.title.contains("it retries")) {
            let note = out.remove(i);
            out.insert(0, note);
        }
    }
    if let Some(fork) = super::families::fork(oom.framework) {
        for_the_fork(&mut out, fork);
    }
    // PyTorch's 1 EiB check refuses the size before any allocation: nothing of the allocator's
    // (its cache, its settings) bears on it.
    if oom.format == "pytorch-1eb" {
        out.retain(|x| x.cause == Cause::ImplausibleFigures);
    }
    // A device's size or use no GPU has: the message's memory query went wrong, and findings
    // sized from its other figures (its free memory) are read after that.
    if oom
        .facts
        .implausible
        .iter()
        .any(|i| matches!(i.field, "total_bytes" | "device_used_bytes"))
    {
        if let Some(i) = out
            .iter()
            .position(|x| x.cause == Cause::ImplausibleFigures)
        {
            let note = out.remove(i);
            out.insert(0, note);
        }
    }
    // A request no GPU could hold is the story: said first, and the findings that would size
    // the job to it (shrink or shard the tensor, another process holds memory) left out.
    if oom
        .facts
        .implausible
        .iter()
        .any(|i| i.field == "requested_bytes")
    {
        out.retain(|x| !matches!(x.cause, Cause::RequestExceedsTotal | Cause::RequestOnly));
        if let Some(i) = out
            .iter()
            .position(|x| x.cause == Cause::ImplausibleFigures)
        {
            let note = out.remove(i);
            out.insert(0, note);
        }
    }
    out
}

/// A line no family knows (the structural reader's fallback), or a Level Zero status whose
/// program the text does not say: what it says, no more. A family of no framework's with a
/// rule of its own (TVM's storage regions) is read by that rule.
fn unrecognised_message(oom: &Oom) -> Option<Finding> {
    matches!(oom.format, "unrecognised" | "level-zero").then(|| unrecognised(oom))
}

/// TensorFlow asked its GPU allocator for 0 bytes: the BFC allocator returns no memory for an
/// empty request (`BFCAllocator::AllocateRawInternal`, "tried to allocate 0 bytes"), and the
/// Eigen allocator above it reports that as running out (`gpu_device.cc`). No memory is short.
fn zero_byte_request(oom: &Oom) -> Option<Finding> {
    (oom.framework == Framework::Tensorflow && oom.facts.requested_bytes == Some(0)).then(|| {
        Finding {
            cause: Cause::ZeroByteRequest,
            title: "A request of 0 bytes: an empty tensor, not memory running out".into(),
            detail: "TensorFlow's BFC allocator returns no memory for a request of 0 bytes (it logs \
                     \"tried to allocate 0 bytes\"), and the Eigen allocator of the GPU device \
                     reports that as running out of memory. An op received an empty tensor: a \
                     batch, a set of boxes or regions, or a slice that came out with no elements. \
                     Freeing memory or a smaller batch will not help."
                .into(),
            remedies: vec![
                r("Find the op whose input is empty: the error's op name, or tf.debugging.assert_greater(tf.size(x), 0) before the suspects (Eigen reductions, gathers, ROI ops on zero proposals)."),
                r("Skip the step or pad the input when a batch can legitimately come out empty (no ground-truth boxes, every sample filtered out)."),
            ],
        }
    })
}

/// The AWS Neuron runtime could not place an allocation in a NeuronCore's HBM. Its report says
/// what the core holds, by category (Neuron's device-memory guide: tensors, model constants and
/// code, scratchpad, DMA rings, collectives); the tensors are the application's.
fn neuron_runtime(oom: &Oom) -> Option<Finding> {
    if oom.framework != Framework::Neuron || oom.memory != super::MemoryKind::Device {
        return None;
    }
    let f = &oom.facts;
    let core = oom.device_index.map_or_else(
        || "a NeuronCore".to_owned(),
        |d| format!("a NeuronCore of Neuron device {d}"),
    );
    let title = match (f.requested_bytes, f.device_used_bytes) {
        (Some(n), Some(used)) => format!(
            "{} did not fit on {core}: {} of its HBM was in use",
            fmt_bytes(n),
            fmt_bytes(used)
        ),
        (Some(n), None) => format!("{} did not fit in a NeuronCore's HBM", fmt_bytes(n)),
        _ => "The Neuron runtime could not allocate device memory (status 4, a resource)".into(),
    };
    let tensors = f
        .allocated_bytes
        .map(|t| format!(" Of what was in use, {} were tensors (inputs, outputs, weights the program holds).", fmt_bytes(t)))
        .unwrap_or_default();
    Some(Finding {
        cause: Cause::FrameworkAllocations,
        title,
        detail: format!(
            "Each NeuronCore has its share of the device's HBM for the program's tensors, its \
             compiled constants and code, scratchpad, DMA rings and collectives; the runtime's \
             \"current utilization\" is what that core held when the allocation failed, not its \
             capacity.{tensors}"
        ),
        remedies: vec![
            r("Spread the model over more NeuronCores (a higher tensor-parallel degree, tp_degree in transformers-neuronx and NxD), or use an instance with more of them."),
            r("Shrink what each core holds: a smaller batch, sequence length or context (n_positions), or a lower-precision checkpoint."),
            r("See each core's memory by category while it runs with neuron-top; the runtime's nrt_mem_log_device_*.csv, written at the failure, lists every allocation."),
        ],
    })
}

/// A Sophgo TPU's device memory (libsophon's bmlib, `bmlib/src/bmlib_memory.cpp`): the
/// request did not fit in the heap it was asked from (BM_ERR_NOMEM). The device memory is split
/// into heaps (the NPU's for tensors and models, the VPP's and VPU's for images and video);
/// Sophgo's SDK FAQ (its BMCV section, "bm_malloc_device_byte_heap error … bm_alloc_gmem
/// failed") names the heap asked for, usually the VPP heap (heap 1) for a bm_image, its usage
/// in `/sys/kernel/debug/ion/bm_vpp_heap_dump/summary`, and the fix: long-lived memory
/// allocated once at start, short-lived memory freed at once. The device tool is `bm-smi`,
/// not NVIDIA's, so gpumon's own views are not offered.
fn sophgo_bmlib(oom: &Oom) -> Option<Finding> {
    if oom.framework != Framework::Sophgo {
        return None;
    }
    let on = oom
        .device_index
        .map_or_else(String::new, |d| format!(" on TPU {d}"));
    let title = match oom.facts.requested_bytes {
        Some(n) => format!("libsophon could not allocate {}{on}", fmt_bytes(n)),
        None => format!("libsophon could not allocate device memory{on}"),
    };
    Some(Finding {
        cause: Cause::FrameworkAllocations,
        title,
        detail: "bmlib found no room for the request in the device-memory heap it was asked \
                 from (the NPU's for a model's tensors, the VPP's or VPU's for images and video \
                 frames): what this program and others on the same TPU hold left too little. The \
                 message gives no other figure."
            .into(),
        remedies: vec![
            r("See each device's memory while it runs with `bm-smi` (libsophon's tool)."),
            r("For an image (bm_image) the heap is usually the VPP's: watch its usage with `sudo cat /sys/kernel/debug/ion/bm_vpp_heap_dump/summary`."),
            r("Hold less at once on that device: allocate long-lived buffers once at start and free short-lived ones at once (bm_image_destroy, bm_free_device); fewer models or video streams per TPU."),
        ],
    })
}

/// HAMi-core refused an allocation that would take the container past its GPU memory limit:
/// the pod's share (`nvidia.com/gpumem`), not the GPU, is what ran out.
fn container_limit(oom: &Oom) -> Option<Finding> {
    if oom.format != "hami-core" {
        return None;
    }
    let f = &oom.facts;
    let (Some(with), Some(limit)) = (f.with_request_bytes, f.total_bytes) else {
        return None;
    };
    Some(Finding {
        cause: Cause::ProcessCap,
        title: format!(
            "The container's GPU memory limit, not the GPU: HAMi-core counted {} against its limit of {} ({} over)",
            fmt_bytes(with),
            fmt_bytes(limit),
            fmt_bytes(with.saturating_sub(limit))
        ),
        detail: "HAMi-core (preloaded in the pod) checks every allocation against the container's \
                 limit (CUDA_DEVICE_MEMORY_LIMIT, from the pod's nvidia.com/gpumem) and refuses one \
                 that would pass it, whatever the GPU has free. It counts the memory it saw \
                 allocated; allocations it does not intercept are not in its figure."
            .into(),
        remedies: vec![
            est(
                "Ask for more: raise the pod's nvidia.com/gpumem by at least the shortfall.",
                Some(with.saturating_sub(limit)),
            ),
            r("Or make the job fit its share: a smaller batch or model, as for any GPU this size."),
            r("If the job fits without HAMi-core (CUDA_DISABLE_CONTROL=true) but not with it, its count of the container's use is off: say so to HAMi with this line."),
        ],
    })
}

/// vllm.rs's KV-cache budget or a refused prompt.
fn vllm_rs_message(oom: &Oom) -> Option<Finding> {
    (oom.framework == Framework::VllmRs).then(|| vllm_rs(oom))
}

/// TensorRT-LLM's executor report: the component that did not fit.
fn trtllm_executor_message(oom: &Oom) -> Option<Finding> {
    (oom.format == "trtllm-executor").then(|| trtllm_executor(oom))
}

/// vLLM's KV cache holds fewer tokens than one sequence.
fn kv_tokens(oom: &Oom) -> Option<Finding> {
    let (max_len, tokens) = oom.kv_tokens?;
    Some(vllm_tokens(oom, max_len, tokens))
}

/// Not the device's memory: shared memory per block, the host's RAM, pinned host memory, a
/// count of buffers.
fn not_device_memory(oom: &Oom) -> Option<Finding> {
    Some(match oom.memory {
        super::MemoryKind::SharedMemory if oom.format == "neuron-nki-sbuf" => neuron_sbuf(oom),
        super::MemoryKind::SharedMemory => shared_memory(oom),
        super::MemoryKind::Host if oom.format == "pytorch-cpu" => cpu_allocator(oom),
        super::MemoryKind::Host if oom.format == "tensorflow-cpu" => tf_cpu_allocator(oom),
        super::MemoryKind::Host if oom.format == "ollama-system-memory" => {
            ollama_system_memory(oom)
        }
        super::MemoryKind::Host => host_memory(oom),
        super::MemoryKind::Buffers => buffer_count(oom),
        super::MemoryKind::PinnedHost => pinned_host_memory(oom),
        super::MemoryKind::TpuOnChip => tpu_on_chip(oom),
        super::MemoryKind::PlannedRegion => return tvm_storage(oom),
        super::MemoryKind::Device => return None,
    })
}

/// XLA's TPU compiler: the whole program does not fit in a core's HBM.
fn xla_tpu_hbm(oom: &Oom) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if oom.format == "xla-tpu-hbm" {
        let over = need.zip(f.total_bytes).map(|(n, t)| n.saturating_sub(t));
        let mut remedies = vec![
            est("Halve the per-core batch (and accumulate gradients over 2 steps to keep the effective batch).", over),
            r("Shard parameters and optimizer state across more cores (FSDP-style sharding with jax.sharding / pjit, or a larger TPU slice)."),
            r("Rematerialise activations: jax.checkpoint (jax.remat) on the repeated blocks, tf.recompute_grad in TensorFlow."),
            r("Compute in bfloat16 and use shorter sequences or smaller images."),
        ];
        // The report's own split says which lever is the larger: the arguments (parameters,
        // optimizer state) are sharded; the program's temporaries shrink with the batch and
        // rematerialisation.
        let args_first = f
            .arguments_bytes
            .zip(f.program_bytes)
            .is_some_and(|(a, p)| a > p);
        if args_first {
            remedies.swap(0, 1);
        }
        let split = match (f.program_bytes, f.arguments_bytes) {
            (Some(p), Some(a)) => format!(
                " Of it, the program itself (its temporaries: activations and gradients of the step) takes {}, its arguments (parameters, optimizer state, the batch) {}{}.",
                fmt_bytes(p),
                fmt_bytes(a),
                f.runtime_reserved_bytes
                    .map(|r| format!("; the runtime reserves {} besides", fmt_bytes(r)))
                    .unwrap_or_default()
            ),
            _ => String::new(),
        };
        return Some(Finding {
            cause: Cause::RequestExceedsTotal,
            title: format!(
                "The compiled program needs {} of HBM{}, more than the {} a TPU core has",
                need.map_or_else(|| "more".to_owned(), fmt_bytes),
                over.map(|o| format!(" ({} too much)", fmt_bytes(o))).unwrap_or_default(),
                f.total_bytes.map_or_else(|| "HBM".to_owned(), fmt_bytes)
            ),
            detail: format!("XLA sized the program at compile time: parameters, optimizer state and activations of one step, per TPU core. Nothing ran; no setting at run time frees this memory.{split}"),
            remedies,
        });
    }
    None
}

/// Intel XPU (first-generation Xe): no single block over 4 GiB.
fn xpu_4gb_limit(oom: &Oom) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if oom.format == "xpu-4gb-limit" {
        return Some(Finding {
            cause: Cause::RequestExceedsTotal,
            title: format!(
                "One allocation of {} is larger than the 4 GiB this XPU can allocate in one block",
                need.map_or_else(|| "over 4 GiB".to_owned(), fmt_bytes)
            ),
            detail: "Intel's runtime on first-generation Xe GPUs (Arc A-series) refuses any single buffer over 4 GiB, however much memory is free. No allocator setting changes that.".into(),
            remedies: vec![
                r("Make the largest tensor smaller than 4 GiB: a smaller batch or resolution, or process it in tiles (for example a tiled VAE decode)."),
                r("Split the operation across steps or devices so that no single buffer exceeds 4 GiB."),
            ],
        });
    }
    None
}

/// vLLM's start-up profile left nothing for the KV cache: its weights, activation peak and
/// the memory outside PyTorch take all of its share of the GPU (`gpu_memory_utilization ×
/// total`), each figure as its profile printed it.
fn vllm_profile_budget(oom: &Oom) -> Option<Finding> {
    if !matches!(oom.format, "vllm-profile" | "vllm-cache-blocks") {
        return None;
    }
    let f = &oom.facts;
    let share = f.allowed_bytes?;
    let torch = f.allocated_bytes?;
    let outside = f.non_framework_bytes.unwrap_or(0);
    let taken = torch + outside;
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
    let of = match (f.gpu_memory_utilization, f.total_bytes) {
        (Some(u), Some(t)) => format!(" ({u:.2} × {})", gib(t)),
        _ => String::new(),
    };
    let short = taken.saturating_sub(share);
    let title = if short > 0 {
        format!(
            "Weights, activations and memory outside PyTorch take {} of vLLM's {} share{of}: {} short, nothing left for the KV cache",
            gib(taken),
            gib(share),
            gib(short)
        )
    } else {
        format!(
            "Weights, activations and memory outside PyTorch take {} of vLLM's {} share{of}: too little is left for one KV-cache block",
            gib(taken),
            gib(share)
        )
    };
    let mut remedies = Vec::new();
    match f.total_bytes.filter(|t| *t > 0) {
        Some(t) if (taken as f64 / t as f64) < 0.95 => {
            let need = taken as f64 / t as f64;
            remedies.push(r(format!(
                "Raise --gpu-memory-utilization well above {need:.2}, the part of the GPU the weights, activations and other memory already take (the KV cache gets what is above it), if nothing else uses the GPU."
            )));
        }
        Some(_) => remedies.push(r(
            "The weights and activations alone take nearly the whole GPU: no gpu_memory_utilization leaves room for the KV cache, so the model must take less of it (below).",
        )),
        None => remedies.push(r(
            "Raise --gpu-memory-utilization if nothing else uses the GPU: the KV cache gets what is left of that share.",
        )),
    }
    remedies.push(r(
        "Lower --max-num-batched-tokens (and --max-num-seqs): the activation peak is profiled at that batch. Without chunked prefill it is at least --max-model-len, so a shorter --max-model-len lowers it too.",
    ));
    remedies.push(r(
        "A quantised model (AWQ, GPTQ, FP8) or --tensor-parallel-size N cuts the weights each GPU holds.",
    ));
    if outside > share / 10 && outside > 1 << 30 {
        remedies.insert(
            0,
            r(format!(
                "Memory outside PyTorch grew by {} while vLLM profiled: NCCL and cuBLAS take some, but another process allocating on the GPU at that moment is counted here too. Run vLLM alone on the GPU (`gpumon once` lists what holds it).",
                gib(outside)
            )),
        );
    }
    Some(Finding {
        cause: Cause::FrameworkAllocations,
        title,
        detail: "At start-up vLLM profiles one forward pass of the largest batch it will schedule and gives the KV cache what is left of gpu_memory_utilization × the GPU's total after the weights, that pass's activation peak and what memory outside PyTorch grew by. With nothing left it cannot make a single cache block, and the engine stops (\"No available memory for the cache blocks\"). The figures are vLLM's own, to two decimals of a GiB; what PyTorch held is the weights and the activation peak added.".into(),
        remedies,
    })
}

/// vLLM's start-up guard: it wants utilization × total and that much is not free.
fn vllm_startup_guard(oom: &Oom) -> Option<Finding> {
    if oom.format == "vllm-startup" {
        return Some(vllm_startup(oom));
    }
    None
}

/// The request alone exceeds the whole card (or the allocator's limit).
/// HIP on an AMD APU: a free figure above the total is system memory the GPU maps through GTT
/// (both figures true), and the total is the VRAM pool, which bounds any one allocation:
/// ROCclr's `ihipMalloc` refuses a size above the device's `maxMemAllocSize_`, the pool times
/// `GPU_SINGLE_ALLOC_PERCENT` (100 by default; `rocdevice.cpp`), whatever is free.
fn integrated_gpu(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    if !oom.framework.free_may_exceed_total() {
        return None;
    }
    let beyond = f.free_beyond_total()?;
    let (total, free) = (f.total_bytes?, f.free_bytes?);
    let over_pool = f.requested_bytes.filter(|n| *n > total);
    let title = match over_pool {
        Some(n) => format!(
            "One allocation of {} is over the {} HIP allows at once on this APU, though {} is free",
            fmt_bytes(n),
            fmt_bytes(total),
            fmt_bytes(free)
        ),
        None => format!(
            "An APU: {} of the {} free is system memory beyond HIP's {} VRAM pool",
            fmt_bytes(beyond),
            fmt_bytes(free),
            fmt_bytes(total)
        ),
    };
    let mut detail = "On an AMD APU (an integrated GPU: Ryzen AI Max \"Strix Halo\", other Ryzen APUs) HIP reports as the GPU's total the VRAM pool the firmware sets aside, while its free figure also counts the system memory the GPU maps through GTT: free can be larger than total, and both figures are true. HIP refuses any single allocation larger than that pool (hipMalloc checks it against the device's largest allocation, the pool times GPU_SINGLE_ALLOC_PERCENT, 100 by default), whatever is free.".to_owned();
    detail.push_str(if over_pool.is_some() {
        " That is this failure: the request is over the pool, and no allocator setting or cleanup changes the limit."
    } else {
        " This request was under the pool, so the limit on one allocation is not what failed; the system memory counted as free is shared with the host and bounded by the kernel's GTT size (amdgpu.gttsize, ttm.pages_limit)."
    });
    let mut remedies = Vec::new();
    if over_pool.is_some() {
        remedies.push(r(format!(
            "Keep each allocation under {}: a smaller batch or chunk, or the tensor split (a model's weights loaded layer by layer).",
            fmt_bytes(total)
        )));
    }
    remedies.push(r("Make HIP's pool larger: a larger VRAM carve-out in the firmware (UMA frame buffer size) raises the total and with it the largest allocation. amdgpu.gttsize and ttm.pages_limit raise GTT, which free counts, not the largest allocation; how an APU's total is counted also depends on the ROCm release (check torch.cuda.get_device_properties(0).total_memory after a change)."));
    Some(Finding {
        cause: Cause::IntegratedGpu,
        title,
        detail,
        remedies,
    })
}

fn request_exceeds_total(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    // An APU's request over its VRAM pool is said by `integrated_gpu`, with its own remedies.
    if oom.framework.free_may_exceed_total() && f.free_beyond_total().is_some() {
        return None;
    }
    let need = f.requested_bytes;
    if let (Some(n), Some(t)) = (need, f.total_bytes) {
        // A total printed with two decimals ("7.92GiB") is rounded by up to 5 MiB: a request
        // within that of it (TensorFlow asking for the whole card at start-up) is not larger.
        if n > t.saturating_add(8 << 20) {
            let (what, settings) = if f.total_is_limit {
                ("the allocator's limit", true)
            } else {
                ("the GPU's total capacity", false)
            };
            let mut remedies = vec![
                r("Shrink this tensor: a smaller batch, shorter sequences or a lower resolution."),
                r("Shard it across GPUs: FSDP or DeepSpeed ZeRO-3 for parameters and optimizer state, tensor or sequence parallelism for activations."),
                r("Offload to host memory (FSDP CPU offload, DeepSpeed ZeRO-Offload, accelerate's device_map=\"auto\")."),
            ];
            if settings && oom.framework == Framework::Mps {
                remedies.push(r("PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 lifts the limit, but the message itself warns it may cause system failure: prefer the options above."));
            }
            return Some(Finding {
                cause: Cause::RequestExceedsTotal,
                title: format!(
                    "One allocation of {} is larger than {what} ({})",
                    fmt_bytes(n),
                    fmt_bytes(t)
                ),
                detail: if settings {
                    "No amount of freeing memory makes this fit under the current limit.".into()
                } else {
                    "No allocator setting or cleanup can make this fit: the tensor itself must get smaller or be split.".into()
                },
                remedies,
            });
        }
    }
    None
}

/// PyTorch's own per-process cap, not the GPU, is the limit.
fn process_cap(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if let (Some(cap), Some(n)) = (f.allowed_bytes, need) {
        let reserved = f.reserved_bytes.unwrap_or(0);
        if reserved.saturating_add(n) > cap {
            return Some(Finding {
                cause: Cause::ProcessCap,
                title: format!(
                    "PyTorch is capped at {} for this process: {} reserved + {} requested is over it",
                    fmt_bytes(cap),
                    fmt_bytes(reserved),
                    fmt_bytes(n)
                ),
                detail: match f.free_bytes {
                    Some(free) => format!(
                        "The GPU still has {} free; the cap comes from torch.cuda.set_per_process_memory_fraction.",
                        fmt_bytes(free)
                    ),
                    None => "The cap comes from torch.cuda.set_per_process_memory_fraction.".into(),
                },
                remedies: vec![
                    r("Raise the fraction (or drop the call) if nothing else needs that GPU memory."),
                    r("Otherwise make the job smaller, as below."),
                ],
            });
        }
    }
    None
}

/// Other processes hold the memory that is missing.
fn other_processes(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if let Some(others) = f.other_processes_bytes.filter(|b| *b > 0) {
        let fits_without = need
            .zip(f.free_bytes)
            .is_some_and(|(n, fr)| n <= fr + others);
        let names: Vec<String> = f
            .other_processes
            .iter()
            .take(5)
            .map(|p| format!("pid {} ({})", p.pid, fmt_bytes(p.bytes)))
            .collect();
        let who = if names.is_empty() {
            "other allocations".to_owned()
        } else {
            format!(
                "{} other process{}: {}",
                f.other_processes.len(),
                if f.other_processes.len() == 1 {
                    ""
                } else {
                    "es"
                },
                names.join(", ")
            )
        };
        let mut remedies = vec![
            r("Run on another GPU: CUDA_VISIBLE_DEVICES=N (see which are free with `gpumon once`)."),
            r("Stop or move the other processes; `gpumon once` shows who they belong to."),
        ];
        if oom.framework == Framework::Mps {
            remedies = vec![r("Close other apps that use the GPU: on Apple silicon they share the same unified memory.")];
        }
        return Some(Finding {
            cause: Cause::OtherProcesses,
            title: format!("{} held by {who}", fmt_bytes(others)),
            detail: match (need, f.free_bytes) {
                (Some(n), Some(fr)) if fits_without => format!(
                    "Needs {}, {} free; without them the request would fit.",
                    fmt_bytes(n),
                    fmt_bytes(fr)
                ),
                (Some(n), Some(fr)) => format!(
                    "Needs {}, {} free; they hold memory, but the request would not fit even without them.",
                    fmt_bytes(n),
                    fmt_bytes(fr)
                ),
                _ => "They hold memory on the same GPU.".into(),
            },
            remedies,
        });
    }
    None
}

/// Only the device-wide use is known (PaddlePaddle): other processes first, as Paddle's
/// own message asks, then this job.
fn device_in_use(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    // Where the framework's own share is known too (CUDA.jl's pool), the findings on it and on
    // the memory outside it say more.
    if f.allocated_bytes.is_some() || f.reserved_bytes.is_some() {
        return None;
    }
    if let Some(used) = f.device_used_bytes {
        let gpu = oom
            .device_index
            .map_or_else(|| "the GPU".to_owned(), |i| format!("GPU {i}"));
        return Some(Finding {
            cause: Cause::DeviceInUse,
            title: format!(
                "{} is in use on {gpu} by all its processes together{}",
                fmt_bytes(used),
                f.free_bytes
                    .map(|fr| format!(", {} available", fmt_bytes(fr)))
                    .unwrap_or_default()
            ),
            detail: format!(
                "{}'s \"memory has been allocated\" is the device's total minus what is available: other processes are in it, and the message cannot say how much is this job's.",
                oom.framework.name()
            ),
            remedies: vec![
                r(format!("Look for other processes on {gpu}: `gpumon once` lists each with its memory. Stop them, or start this job on another GPU (CUDA_VISIBLE_DEVICES=N).")),
                r("If this job is alone on the GPU, make it smaller: a lower batch size, or shorter inputs."),
            ],
        });
    }
    None
}

/// Fragmentation: the cache alone could hold the request.
fn fragmentation(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if let (Some(cached), Some(n)) = (f.reserved_unallocated_bytes, need) {
        if cached >= n && n > 0 && oom.framework.caching_allocator() {
            let var = alloc_conf(oom);
            let old_hint = oom
                .hint
                .as_deref()
                .is_some_and(|h| h.contains("max_split_size_mb"));
            let mut remedies = vec![
                r(format!("{var}=expandable_segments:True lets the cache grow segments in place instead of leaving unusable gaps{}.",
                    if old_hint { " (PyTorch 2.1 or later; your message predates that hint)" } else { "" })),
                r(format!("{var}=max_split_size_mb:N (for example 128–512) stops large cached blocks from being split into pieces nothing else can use.")),
                r("torch.cuda.empty_cache() will not fix this: the allocator already released its unused cache and retried before it raised."),
            ];
            if old_hint {
                remedies.swap(0, 1);
            }
            return Some(Finding {
                cause: Cause::Fragmentation,
                title: format!(
                    "Fragmentation: {} is reserved but unallocated, more than the {} requested",
                    fmt_bytes(cached),
                    fmt_bytes(n)
                ),
                detail: "The cache holds enough memory in total, but in blocks too small or split to serve this request.".into(),
                remedies,
            });
        }
    }
    None
}

/// The framework's own allocations fill the card. MPS and CuPy print only what their
/// allocator holds (allocated and cached together); both released their cache and retried
/// before raising, so that is mostly live.
fn held_by_framework(oom: &Oom, sizing: Option<&Sizing>, out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    let shortfall = need.zip(f.free_bytes).map(|(n, fr)| n.saturating_sub(fr));
    let (held, live) = match f.allocated_bytes {
        Some(a) => (Some(a), true),
        None if matches!(oom.framework, Framework::Mps | Framework::Cupy) => {
            (f.reserved_bytes, false)
        }
        None => (None, true),
    };
    let heavy = match (held, f.total_bytes) {
        (Some(a), Some(t)) if t > 0 => a as f64 / t as f64 >= 0.5,
        (Some(_), None) => true,
        _ => false,
    };
    if heavy && !out.iter().any(|x| x.cause == Cause::RequestExceedsTotal) {
        if let Some(a) = held {
            return Some(framework_allocations(oom, a, live, shortfall, sizing));
        }
    }
    None
}

/// Nothing above applies, yet the request is more than is free (and than the cache could
/// add): one large allocation in a card that is not full. The job's tensors are the lever.
fn one_large_allocation(oom: &Oom, sizing: Option<&Sizing>, out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    let shortfall = need.zip(f.free_bytes).map(|(n, fr)| n.saturating_sub(fr));
    if out.is_empty() {
        if let (Some(n), Some(fr)) = (need, f.free_bytes) {
            if n > fr {
                let cached = f.reserved_unallocated_bytes.unwrap_or(0);
                let mut finding = framework_allocations(
                    oom,
                    f.allocated_bytes.or(f.reserved_bytes).unwrap_or(n),
                    true,
                    shortfall,
                    sizing,
                );
                finding.title = format!(
                    "One allocation of {} is more than the {} free{}",
                    fmt_bytes(n),
                    fmt_bytes(fr),
                    if cached > 0 {
                        format!(
                            " plus the {} cache the allocator released before raising",
                            fmt_bytes(cached)
                        )
                    } else {
                        String::new()
                    }
                );
                // Memory held outside the allocator, as large as the request, may be other
                // processes': the message cannot say, so it is not ruled out.
                let outside = f.unaccounted_bytes.filter(|u| *u >= n && n > 0).is_some();
                // Only the live tensors' figure (no reserve, no process total): what the rest of
                // the GPU holds, the allocator's cache or other processes, is not in the message.
                // With no figure of the allocator's reserve or the process's total: what the rest
                // of the GPU holds (the allocator's cache and pool, other processes) is not in
                // the message.
                let beyond = match (f.reserved_bytes, f.process_bytes) {
                    (None, None) if !f.total_is_limit => f
                        .total_bytes
                        .map(|t| {
                            t.saturating_sub(f.allocated_bytes.unwrap_or(0).saturating_add(fr))
                        })
                        .filter(|b| *b >= n && Some(b.saturating_mul(2)) >= f.total_bytes),
                    _ => None,
                };
                let said = match beyond {
                    Some(b) if !outside && f.allocated_bytes.is_some() => format!(
                        "Most of the GPU, {}, is held beyond the framework's live tensors: by its allocator's cache or by other processes, which the message does not tell apart (`gpumon once` shows the processes). Free that memory, or make this tensor smaller (the traceback's last frame creates it).",
                        fmt_bytes(b)
                    ),
                    Some(b) if !outside => format!(
                        "Most of the GPU, {}, was in use, and the message does not say by what: this program's own memory (its allocator's pool, its other buffers) or other processes (`gpumon once` shows them). Free that memory, or make this allocation smaller.",
                        fmt_bytes(b)
                    ),
                    _ => format!(
                        "{} this one tensor is too large for what the GPU has left. Make it smaller, or split the operation that creates it (the traceback's last frame).",
                        if outside {
                            "No fragmentation explains it, and most of the GPU is held outside the allocator (below):"
                        } else {
                            "No other process and no fragmentation explain it:"
                        }
                    ),
                };
                finding.detail = format!(
                    "{said}{}",
                    if sizing.is_some() {
                        " Savings below come from gpumon estimate's model of the run you described (--estimate)."
                    } else {
                        ""
                    }
                );
                return Some(finding);
            }
        }
    }
    None
}

/// Intel XPU: one allocation over 4 GiB can fail with memory free.
fn xpu_block_limit(oom: &Oom, _sizing: Option<&Sizing>, out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if oom.framework == Framework::Xpu && out.is_empty() {
        if let Some(n) = need.filter(|n| *n > 4 << 30) {
            return Some(Finding {
                cause: Cause::RequestExceedsTotal,
                title: format!(
                    "One allocation of {} is over the 4 GiB an Intel GPU may allocate in one block",
                    fmt_bytes(n)
                ),
                detail: "Intel's runtime limits a single buffer (Level Zero's maxMemAllocSize; 4 GiB on first-generation Arc), so this request can fail while memory is free.".into(),
                remedies: vec![
                    r("Make the largest tensor smaller than 4 GiB: a smaller batch or resolution, or process it in tiles or chunks."),
                ],
            });
        }
    }
    None
}

/// MPS: this process's memory outside the allocator counts against the same limit.
fn mps_outside_allocator(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if oom.framework == Framework::Mps {
        if let Some(o) = f.non_framework_bytes {
            let big =
                f.total_bytes.is_some_and(|t| o > t / 10) || need.is_some_and(|n| o >= n && n > 0);
            if big {
                return Some(Finding {
                    cause: Cause::OutsideFramework,
                    title: format!("{} of this process is outside PyTorch's MPS allocator", fmt_bytes(o)),
                    detail: "\"other allocations\" is what this process's Metal device holds beyond the allocator's heaps (MPSGraph, the Metal driver); it counts against the same limit. It is not other apps.".into(),
                    remedies: vec![r("Closing other apps frees none of it: it belongs to this process. Shrink the job as below, or see the limit.")],
                });
            }
        }
    }
    None
}

/// Memory outside the framework (1.x messages cannot tell whose).
fn outside_framework(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if let (Some(u), Some(t)) = (f.unaccounted_bytes, f.total_bytes) {
        let counted = f.other_processes_bytes.is_some();
        if u > t / 10 || need.is_some_and(|n| u >= n && n > 0) {
            return Some(Finding {
                cause: Cause::OutsideFramework,
                title: format!("{} is in use outside {}'s allocator", fmt_bytes(u), oom.framework.name()),
                detail: if counted {
                    "Used by something the message does not list: other containers or the driver.".into()
                } else if oom.format == "pytorch-cudamallocasync" {
                    "This message does not say whose: CUDA's memory pool (cudaMallocAsync keeps freed memory for reuse), this process's CUDA context and libraries (typically 0.3–1 GiB), or other processes.".into()
                } else {
                    "This message format does not say whose: this process's CUDA context and libraries (typically 0.3–1 GiB), or other processes.".into()
                },
                remedies: vec![r("See who holds it: `gpumon once` (or nvidia-smi) lists every process and its memory.")],
            });
        }
    }
    None
}

/// No numbers at all.
fn no_numbers(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if need.is_none() && f.total_bytes.is_none() && f.allocated_bytes.is_none() {
        return Some(Finding {
            cause: Cause::NoNumbers,
            title: "The message carries no memory figures".into(),
            detail: match oom.format {
                "cublas" | "cudnn" => "cuBLAS/cuDNN could not allocate its handle or workspace: the GPU was already full when the library initialised, usually with this program's own cached memory or another process.".into(),
                "ggml-metal" => "Metal ran out of memory executing a command buffer: llama.cpp's model, KV cache and compute buffers did not fit in what macOS lets the GPU use (its recommended working set, about two thirds to three quarters of the Mac's memory).".into(),
                "ggml-cuda" => "llama.cpp's CUDA backend (2023 builds) could not allocate; the message gives no size.".into(),
                "ggml-cuda-check" => "llama.cpp's CUDA backend (or its ROCm/HIP or MUSA build) got out of memory from a CUDA call: a weight, KV-cache or compute buffer, or its memory pool growing during a step, did not fit on the GPU it names. The message gives no size.".into(),
                "ollama-layout" => "Ollama could not allocate the layout it chose for the model's layers over the GPUs and system memory (with num_gpu set, it does not back off to fewer GPU layers). The message gives no size.".into(),
                "ollama-runner" => "Ollama's llama.cpp runner stopped because a device allocation (cudaMalloc) failed while loading the model or its context. The message gives no size.".into(),
                "cuda-ctranslate2" => "CTranslate2 (faster-whisper, WhisperX) relayed CUDA's out-of-memory error from its own check: the model, its beams or a batch did not fit on the GPU. The message gives no size.".into(),
                "wgpu-device" => "wgpu's device could not allocate memory for a buffer or a texture (wgpu-core's DeviceError::OutOfMemory, \"Not enough memory left\"): the GPU back end (Vulkan, Metal, D3D12) ran out of device memory; Vulkan's out-of-host-memory answer is reported the same way. The message gives no size.".into(),
                "cuda-check-return" => "A library's CUDA_CHECK_RETURN (bitsandbytes' ops.cu and NVIDIA's samples) printed CUDA's out-of-memory error with its source line and exited. The message gives no size.".into(),
                "trtllm" => "A TensorRT-LLM runtime buffer (its activations, the KV cache or a decoding buffer, sized by the engine's max_batch_size, max_num_tokens and max_seq_len) did not fit. The message gives no size.".into(),
                "openvino-gpu" => "OpenVINO's GPU plugin could not get memory for its OpenCL buffers (or a kernel ran out of resources): the model's weights and the inference's buffers did not fit on the Intel GPU; on an integrated GPU that memory is a share of the system's RAM. The message gives no size. OpenVINO's own advice: a smaller batch, fewer streams (NUM_STREAMS), lower precision (INFERENCE_PRECISION_HINT f16, or a compressed int8/int4 model).".into(),
                "lmdeploy-turbomind" => "LMDeploy's TurboMind engine got out of memory from a CUDA call (its weights, the KV cache or its runtime buffers): the model and the cache did not fit beside what the GPU already held. The message gives no size. TurboMind gives the KV cache a share of the memory left after the weights (--cache-max-entry-count, 0.8 by default); a smaller share, fewer concurrent sequences (--max-batch-size), a quantised model or more GPUs (--tp) leave more room.".into(),
                "trtllm-ipc" => "TensorRT-LLM could not allocate its inter-GPU (IPC) communication buffers, which tensor parallelism needs on every GPU: the GPUs were already full.".into(),
                "mxnet" => "MXNet's GPU memory pool could not get memory from cudaMalloc; it had already released its cached blocks and retried. The message gives no size.".into(),
                "rmm-pool" => "RMM's pool reached the maximum size it was given (maximum_pool_size, dask-cuda's --rmm-pool-size): the pool's limit, not necessarily the GPU's, was hit.".into(),
                "cuda-thrust" => "Thrust (or CUB under it) could not get device memory for an algorithm's temporary storage: CUDA's runtime answered cudaErrorMemoryAllocation and Thrust raised it as thrust::system_error. The GPU was full, usually with this program's own data (or a caching allocator's cache), or other processes. The message gives no size.".into(),
                "pytorch-nvml-assert" => "PyTorch's caching allocator ran out of device memory: it had already freed its cache and retried, and was writing its out-of-memory message, which lists the processes on the GPU through NVML. That NVML call failed (Jetson's Tegra GPUs, a MIG slice or a container refuse it), and the assertion took the message's place (reportProcessMemoryInfo, CUDACachingAllocator.cpp): the allocation failed, but its figures were never printed.".into(),
                "pytorch-cudamallocasync" => "PyTorch's cudaMallocAsync allocator (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, which ComfyUI turns on by default) could not allocate on the device: \"Allocation on device\" is its message, and this one carries no figures.".into(),
                "cuda-nccl" => "NCCL relayed CUDA's error 2 (out of memory): it could not allocate its communication buffers (NCCL_BUFFSIZE per channel and peer) or its kernels' memory on a GPU that was already full. The message gives no size.".into(),
                "cuda-spconv" => "spconv (through tensorview's CUDA checks, in spconv 1.x and 2.x) relayed CUDA's error 2, cudaErrorMemoryAllocation: a sparse convolution's index or feature buffers did not fit; they grow with the number of active voxels (a smaller voxel size or a larger point cloud needs more). The message gives no size.".into(),
                "cuda-torch-memory-saver" => "torch_memory_saver (the memory saver SGLang and verl use to release a paused engine's weights and KV cache) got CUDA's error 2 from cuMemCreate: the GPU had no room for the physical memory it maps. On a resume this means something took the memory released while paused (the training side of a co-located job, another process). The message gives no size.".into(),
                "cusolver" | "cufft" | "cusparse" | "curand" => format!("{} could not allocate its handle's or its work's device memory ({}): the GPU was already full, usually with this program's own memory (a caching allocator's cache) or another process. The message gives no size.", match oom.format { "cusolver" => "cuSOLVER", "cufft" => "cuFFT", "cusparse" => "cuSPARSE", _ => "cuRAND" }, match oom.format { "cusolver" => "CUSOLVER_STATUS_ALLOC_FAILED", "cufft" => "CUFFT_ALLOC_FAILED", "cusparse" => "CUSPARSE_STATUS_ALLOC_FAILED", _ => "CURAND_STATUS_ALLOCATION_FAILED" }),
                "paddle-cuda" => "A CUDA call in PaddlePaddle outside its allocator (a stream, a cuBLAS or cuDNN handle, a kernel's workspace; PADDLE_ENFORCE_GPU_SUCCESS) returned error 2, cudaErrorMemoryAllocation: the GPU was already full, usually with memory Paddle's allocator holds (it keeps freed blocks for reuse) or other processes. The message gives no size.".into(),
                "paddle-bad-alloc" => "PaddlePaddle's allocator could not allocate for an op (1.x names the op in its warning) and threw BadAlloc, after its retry allocator had waited for other frees (FLAGS_gpu_allocator_retry_time). The GPU was full with Paddle's own tensors and pool, or other processes. This part of the paste gives no size: Paddle's \"Error Message Summary\" below the C++ stack names it.".into(),
                "paddle-legacy" => "PaddlePaddle 1.x's buddy allocator could not serve the request from its pool, and the GPU had no room for another chunk (its available figure is the device's). Its pool takes a share of the GPU set by FLAGS_fraction_of_gpu_memory_to_use and grows by chunks (FLAGS_reallocate_gpu_memory_in_mb); a request larger than GpuMaxChunkSize is asked of the GPU on its own. Its \"GPU memory used\" counts only the blocks cut from the pool, not those large ones, so it is not what Paddle's tensors hold and is not read: the memory not free is Paddle's (its pool and its large tensors) or other processes'.".into(),
                "onnxruntime-dml" => "ONNX Runtime's DirectML execution provider got E_OUTOFMEMORY (0x8007000E) from Direct3D 12: a GPU buffer could not be allocated in the card's memory (on an integrated GPU, the share of system memory it may use). The message gives no size.".into(),
                "tensorflow-gpu-init" => "TensorFlow could not create its CUDA context on this GPU at start-up (gpu_device.cc: cudaSetDevice, then cudaFree(nullptr)): the card had no room left for a context, usually because other processes (another TensorFlow process maps most of the card by default) hold it.".into(),
                "cuda-hami-core" => "HAMi-core's hooked allocator passed the allocation to the driver, which answered 2 (CUDA_ERROR_OUT_OF_MEMORY): the GPU itself was full, not only the container's limit. The message gives no size.".into(),
                "cuda-code" => "CUDA's error 2 (cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY), printed as a bare number by the library that called it. The message gives no size.".into(),
                "libcudf" => "A CUDA call inside libcudf (cuDF's C++ library) could not allocate: device memory outside RMM's pool (Thrust or CUB scratch, a library's own buffer) while the GPU was full, usually with cuDF's own data. The message gives no size.".into(),
                "rmm" => "RAPIDS Memory Manager's device memory resource could not allocate: the GPU (or RMM's pool on it) was full. The message gives no size.".into(),
                "numba-context" => "Numba could not create a CUDA context (cuInit or cuCtxCreate): there was no room for one on the GPU (a context takes a few hundred MiB), usually because other processes fill it, or the GPU is in exclusive-process mode and taken.".into(),
                "numba" => "Numba's cuMemAlloc failed after Numba had already flushed its pending deallocations and retried (driver.py, _attempt_allocation): the memory is held by live device arrays, another library in this process (CuPy, PyTorch, RMM) or other processes.".into(),
                _ if !f.implausible.is_empty() => "The only figure in the message cannot be true (below); which allocation failed and how much was free are not in the text.".into(),
                _ => format!(
                    "The allocation failed in {}; which allocation and how much was free are not in the text.",
                    match oom.framework {
                        Framework::Cuda => "the CUDA runtime",
                        Framework::Rocm | Framework::Hip => "the ROCm (HIP) runtime",
                        other => other.name(),
                    }
                ),
            },
            remedies: if oom.framework == Framework::TensorrtLlm {
                vec![
                    r("Leave more room beside the KV cache: a lower kv_cache_free_gpu_mem_fraction (KvCacheConfig(free_gpu_memory_fraction=…), Triton's kv_cache_free_gpu_mem_fraction; default 0.9 of the memory free after the engine loads)."),
                    r("Rebuild the engine for less: smaller max_batch_size, max_num_tokens or max_seq_len size its runtime buffers."),
                    r("See what else holds the GPUs (`gpumon once`): other engines or a previous server still running."),
                ]
            } else if oom.framework == Framework::Mxnet {
                vec![
                    r("A smaller batch (or shorter sequences); `gpumon once` to see other processes on the GPU."),
                    r("MXNET_BACKWARD_DO_MIRROR=1 recomputes some activations in the backward pass instead of keeping them (30–50% less device memory at about 95% of the speed, by MXNet's own figures)."),
                    r("MXNET_GPU_MEM_POOL_TYPE=Round pools rounded sizes so blocks are reused more; MXNET_GPU_MEM_POOL_RESERVE (percent, default 5) is what the pool leaves to others."),
                ]
            } else if oom.framework == Framework::Rmm {
                rmm_remedies(oom)
            } else if oom.format == "cuda-nccl" {
                nccl_remedies()
            } else if oom.format == "pytorch-nvml-assert" {
                vec![
                    r("Make the job smaller (a smaller batch or model), or stop what else uses the GPU; on a Jetson the GPU's memory is the system's, so every other process counts."),
                    r("To read the figures the assertion hid: PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, whose out-of-memory message does not ask NVML (it reports what PyTorch holds, the request and the free memory)."),
                    r("See what holds the memory: `gpumon once` (on a Jetson, with its memory shared with the system)."),
                ]
            } else if oom.format == "pytorch-cudamallocasync" {
                vec![
                    r("A smaller batch, resolution or number of frames; `gpumon once` to see what else holds the GPU."),
                    r("PyTorch's native allocator (leave out backend:cudaMallocAsync; ComfyUI's --disable-cuda-malloc) frees its cache and retries before it fails, and its message gives the request, the free memory and what PyTorch holds."),
                    r("In ComfyUI: --lowvram (or --novram) keeps models in system memory and moves to the GPU only what each step needs."),
                ]
            } else if oom.framework == Framework::Numba {
                if oom.format == "numba-context" {
                    vec![
                        r("Free the GPU or pick another: `gpumon once` lists the processes on each; CUDA_VISIBLE_DEVICES=N."),
                        r("Check the compute mode: in exclusive-process mode a second process cannot create a context (nvidia-smi -q | grep 'Compute Mode')."),
                    ]
                } else {
                    vec![
                        r("del device arrays (cuda.to_device, device_array) that are no longer needed: Numba queues their frees and flushes the queue before its retry."),
                        r("Sharing the GPU with CuPy or cuDF in one process: route them all through RMM (NUMBA_CUDA_MEMORY_MANAGER=rmm.allocators.numba; cupy.cuda.set_allocator(rmm.allocators.cupy.rmm_cupy_allocator)) so there is one pool, not several."),
                        r("Smaller arrays or batches per kernel launch; `gpumon once` to see other processes on the GPU."),
                    ]
                }
            } else if oom.format == "ggml-metal" {
                vec![r("Add up the buffer sizes llama.cpp printed before the error (model, KV cache, compute) and compare them with recommendedMaxWorkingSetSize in its start-up log: that is how much less it needs.")]
            } else if oom.framework == Framework::Ggml {
                vec![
                    r("Read the buffer sizes llama.cpp printed before the error (model, KV cache, compute): together they are what the GPU had to hold."),
                    r("Check for other processes on the same GPU: `gpumon once`."),
                ]
            } else {
                let mut v = vec![r("Get numbers: run the job under `gpumon log --processes --interval 200ms` (or keep `gpumon` open) and look at the last samples before the crash.")];
                if matches!(oom.framework, Framework::Pytorch | Framework::Hip | Framework::Xpu | Framework::Cuda) {
                    v.push(r("In PyTorch, print torch.cuda.memory_summary() in an except torch.OutOfMemoryError handler."));
                }
                v.push(r("Check for other processes on the same GPU: `gpumon once`."));
                v
            },
        });
    }
    None
}

/// Only the request is known (stream executors): say so, and where to look.
fn request_only(oom: &Oom, _sizing: Option<&Sizing>, out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    // TensorFlow's region request with only the device's size beside it (from its start-up
    // lines): still a request alone, the region explained below.
    let tf_region = oom.framework == Framework::Tensorflow
        && matches!(oom.format, "cuda-driver" | "rocm-driver");
    // TensorFlow's allocator limit from its start-up line, nothing of what it held.
    let tf_limit = oom.framework == Framework::Tensorflow && f.total_is_limit;
    if out.is_empty()
        && need.is_some()
        && (f.total_bytes.is_none() || tf_region || tf_limit)
        && f.free_bytes.is_none()
        && f.allocated_bytes.is_none()
        && f.reserved_bytes.is_none()
    {
        return Some(Finding {
            cause: Cause::RequestOnly,
            title: match f.total_bytes {
                Some(t) => format!(
                    "{} could not be allocated on a GPU of {}; the message gives no other figure",
                    need.map(fmt_bytes).unwrap_or_default(),
                    fmt_bytes(t)
                ),
                None => format!(
                    "{} could not be allocated; the message gives no other figure",
                    need.map(fmt_bytes).unwrap_or_default()
                ),
            },
            detail: if tf_limit {
                format!(
                    "TensorFlow gave its allocator {} on this GPU when it created the device (its start-up line \"Created TensorFlow device … with N MB memory\": the memory free then, less what it leaves, or the fraction it was told to take), and this request did not fit in what its own tensors left of it. A small limit means little was free at start-up: another process, or on a board whose GPU shares the system's memory (Jetson), the system itself.",
                    f.total_bytes.map(fmt_bytes).unwrap_or_default()
                )
            } else if oom.format == "xla-collective" {
                "XLA could not allocate a buffer this large for a collective (an all-gather, all-reduce or reduce-scatter across devices, sized by the sharded arrays it moves). Such buffers come from a memory space of their own (NCCL's ncclMemAlloc, whose \"Cuda failure 2 'out of memory'\" from allocator.cc may come just before), beside what JAX's allocator already holds: the GPU had too little left for them.".into()
            } else if oom.format == "xla-constant" {
                "XLA's stream executor allocates a compiled program's constants straight from the device (CreateOrShareConstant), outside the allocator JAX preallocates its share of the GPU into (XLA_PYTHON_CLIENT_MEM_FRACTION, 75% by default): what was left of the GPU outside that pool was too little for this constant.".into()
            } else if oom.format == "cuda-nccl" {
                "NCCL could not allocate this much device memory for a communicator (its buffers, NCCL_BUFFSIZE per channel and peer, and its kernels' memory), which it allocates when a collective first runs on it, usually after the model is loaded: the GPU was already full, usually with the framework's own memory.".into()
            } else if oom.format == "rmm-pool" {
                "RMM's pool could not grow by this much without passing the maximum size it was given (maximum_pool_size, dask-cuda's --rmm-pool-size), or its upstream could not supply it: the pool's limit, not necessarily the GPU's. The message gives no other figure.".into()
            } else if oom.framework == Framework::Rmm {
                "RMM's device memory resource could not allocate this much: the GPU (or RMM's pool on it) was full. The message gives no other figure.".into()
            } else if oom.framework == Framework::Tensorflow
                && matches!(oom.format, "cuda-driver" | "rocm-driver")
            {
                "TensorFlow's BFC allocator asked the driver for a new region of this size, not for one tensor. When a region cannot be had it asks again for 90% of it (bfc_allocator.cc, Extend's backpedal), down to the size of the tensor that needed it, so a series of falling sizes is one attempt and the last line is the smallest it tried. If none succeeds TensorFlow reports the tensor's own out-of-memory error next; if the paste ends here, a later, smaller region may have been granted. At start-up it is TensorFlow reserving most of the GPU while another process holds part of it.".into()
            } else if matches!(
                oom.framework,
                Framework::Cuda | Framework::Rocm | Framework::Unknown
            ) {
                "A runtime's allocator line carries only the request. At start-up it is often TensorFlow or JAX reserving most of the GPU while another process already holds part of it; later it is the job's own growth.".into()
            } else {
                format!(
                    "{} could not allocate this much, and its message gives no other figure: whether its own memory or other processes filled the GPU is not in the text.",
                    oom.framework.name()
                )
            },
            remedies: if oom.framework == Framework::Rmm {
                rmm_remedies(oom)
            } else if oom.format == "cuda-nccl" {
                nccl_remedies()
            } else {
                let mut v = vec![r(
                    "See what holds the GPU now: `gpumon once` lists every process and its memory.",
                )];
                match oom.framework {
                    Framework::Ggml
                    | Framework::Mlx
                    | Framework::Npu
                    | Framework::Mlu
                    | Framework::Musa
                    | Framework::Gcu
                    | Framework::Hpu
                    | Framework::PytorchXla
                    | Framework::Neuron
                    | Framework::Wgpu => {}
                    Framework::Jax => v.extend(jax_lower_peak()),
                    Framework::Tensorflow => v.push(r("If another process needs the GPU: TF_FORCE_GPU_ALLOW_GROWTH=true, so TensorFlow does not map the whole card at start-up.")),
                    Framework::Rocm if oom.format == "rocm-thunk" => v.push(r("The kernel driver (KFD) had no VRAM left for this allocation: `rocm-smi --showmeminfo vram` (or `amd-smi monitor`) shows what the card holds, and a smaller batch or model is the lever in the program above ROCm.")),
                    // A named framework's own findings follow; another framework's settings
                    // are guesses there.
                    f if !matches!(f, Framework::Cuda | Framework::Rocm | Framework::Unknown) => {}
                    _ => {
                        v.push(r("TensorFlow sharing the GPU: TF_FORCE_GPU_ALLOW_GROWTH=true, so it does not map the whole card at start-up."));
                        v.push(r("JAX sharing the GPU: XLA_PYTHON_CLIENT_PREALLOCATE=false, or a lower XLA_PYTHON_CLIENT_MEM_FRACTION."));
                    }
                }
                v.push(r("Get numbers: run the job under `gpumon log --processes --interval 200ms` and read the last samples before the failure."));
                v
            },
        });
    }
    None
}

/// Figures that do not add up to a failure: say so rather than guess.
fn unexplained(oom: &Oom, _sizing: Option<&Sizing>, out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    let need = f.requested_bytes;
    if out.is_empty() && need.is_some() {
        return Some(Finding {
            cause: Cause::Unexplained,
            title: format!(
                "The message's figures do not explain the failure: {} requested{}",
                need.map(fmt_bytes).unwrap_or_default(),
                f.free_bytes
                    .map(|fr| format!(", {} free", fmt_bytes(fr)))
                    .unwrap_or_default()
            ),
            detail: "Neither the framework's own allocations nor other processes in the message account for it. The limit is elsewhere: the driver or the platform (WSL2 and some integrated GPUs cap single allocations), or memory the message does not count.".into(),
            remedies: vec![
                r("See what holds the GPU now: `gpumon once` lists every process and its memory."),
                r("Try a smaller request (batch, resolution, chunking) to find the size that works; a sharp limit points at a per-allocation cap."),
            ],
        });
    }
    None
}

/// Held beyond the card: spilled into system memory.
fn spill(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    spilled(oom)
}

/// The framework's own settings that bear on this message.
fn settings(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    framework_settings(oom)
}

/// PyTorch's allocator warning alone (`CUDACachingAllocator.cpp`, `alloc_block`): the driver
/// refused a segment, and the allocator frees its cache and retries before it raises. When the
/// raise follows, the two are one failure and the raise is explained instead.
fn allocator_warning(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    (oom.format == "pytorch-alloc-warning").then(|| Finding {
        cause: Cause::FrameworkSettings,
        title: "PyTorch's allocator warned that the driver refused a segment; it retries before it fails".into(),
        detail: "The caching allocator (PyTorch 2.13) logs this warning when the driver refuses a segment, or the physical memory of an expandable segment (the size it asked for, and the device's free and total memory just after), then frees every cached block it can and tries again; it logs the warning again if that fails too, and only then raises \"CUDA out of memory. Tried to allocate …\" for the same size. With no such error after the warnings, the retry succeeded: the job ran on, paying for a cache it had to rebuild.".into(),
        remedies: vec![
            r("If the job stopped, the error after these warnings is the failure: read it (or paste the two together) for what PyTorch itself held."),
            r("Warnings that keep coming without an error mean the device is nearly full and the cache is flushed each time: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or a little less work per step, stops the churn."),
        ],
    })
}

/// Figures that cannot be true: said after the causes (a note on the message, not a
/// cause of the failure).
fn implausible_figures(oom: &Oom, _sizing: Option<&Sizing>, _out: &[Finding]) -> Option<Finding> {
    let f = &oom.facts;
    if !f.implausible.is_empty() {
        let only_request = f.implausible.iter().all(|i| i.field == "requested_bytes");
        return Some(Finding {
            cause: Cause::ImplausibleFigures,
            title: if only_request {
                "The request is larger than any GPU: a size computed wrongly".to_owned()
            } else {
                format!(
                    "{} in the message cannot be true; left out",
                    if f.implausible.len() == 1 {
                        "A figure"
                    } else {
                        "Figures"
                    }
                )
            },
            detail: f
                .implausible
                .iter()
                .map(|i| i.why.clone())
                .collect::<Vec<_>>()
                .join(". "),
            remedies: if oom.format == "pytorch-1eb" {
                vec![
                    r("In a distributed job this is most often a collective reading garbage as a length: ranks that call all_gather_object, broadcast_object_list or a pipeline stage's metadata exchange in different orders or different numbers of times (one rank leaving a loop early on a shorter data loader). Make every rank take the same steps, then look at the shapes."),
                    r("Otherwise print the shapes going into the operation the traceback ends in: one dimension is far larger than meant, or negative before a cast to unsigned."),
                ]
            } else if f.implausible.iter().any(|i| i.field == "requested_bytes") {
                vec![
                    r("Print the shapes going into the operation the traceback ends in (or run it once on the CPU with a small input): one dimension will be far larger than meant, or negative before a cast to unsigned."),
                    r("If it is the allocator's first region at start-up (TensorFlow or XLA reserving memory before any operation ran), the runtime was told a wrong device size: compare what `gpumon once` (or nvidia-smi, rocm-smi) reports with the framework's start-up log, and match the driver to the framework's runtime version."),
                ]
            } else {
                Vec::new()
            },
        });
    }
    None
}

/// Among the causes whose size is known, moves the small ones (less than a tenth of the memory
/// the largest accounts for) after the others, so that 143 MiB of fragmentation never outranks
/// the 10.8 GiB of the model's tensors that fill the card, while 7 GiB of fragmentation beside
/// 70 GiB of tensors keeps its place before them. Findings without a size keep their places.
fn rank_by_memory(out: &mut [Finding], oom: &Oom) {
    let f = &oom.facts;
    let size = |c: Cause| match c {
        Cause::Fragmentation => f.reserved_unallocated_bytes,
        Cause::FrameworkAllocations => f.allocated_bytes.or(f.reserved_bytes),
        Cause::OtherProcesses => f.other_processes_bytes,
        Cause::OutsideFramework => f.unaccounted_bytes.or(f.non_framework_bytes),
        _ => None,
    };
    let slots: Vec<usize> = (0..out.len())
        .filter(|i| size(out[*i].cause).is_some())
        .collect();
    let largest = slots
        .iter()
        .filter_map(|i| size(out[*i].cause))
        .max()
        .unwrap_or(0);
    let small = |x: &Finding| size(x.cause).is_some_and(|b| b < largest / 10);
    let mut sized: Vec<Finding> = slots.iter().map(|i| out[*i].clone()).collect();
    // Stable: the usual order within each group.
    sized.sort_by_key(small);
    for (slot, finding) in slots.into_iter().zip(sized) {
        out[slot] = finding;
    }
}

/// vLLM refused to start: `gpu_memory_utilization × total` is more than is free.
fn vllm_startup(oom: &Oom) -> Finding {
    let f = &oom.facts;
    let gpu = oom
        .device_index
        .map_or_else(|| "the GPU".to_owned(), |i| format!("GPU {i}"));
    let util = f.gpu_memory_utilization;
    let held = f.other_processes_bytes;
    // In vLLM's own unit and precision: the gap is often a few hundredths of a GiB.
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
    let title = match (held, f.requested_bytes, f.free_bytes) {
        (Some(h), Some(want), Some(free)) => format!(
            "{} of {gpu} is already in use: vLLM wants {} ({} of {}) and only {} is free",
            gib(h),
            gib(want),
            util.map_or_else(|| "its share".to_owned(), |u| format!("{u}")),
            f.total_bytes.map_or_else(|| "the total".to_owned(), gib),
            gib(free)
        ),
        _ => "vLLM wants more of the GPU than is free".to_owned(),
    };
    // The largest share that fits what is free now, rounded down to the hundredth.
    let fits = f
        .free_bytes
        .zip(f.total_bytes)
        .filter(|(_, t)| *t > 0)
        .map(|(fr, t)| ((fr as f64 / t as f64) * 100.0).floor() / 100.0 - 0.01)
        .filter(|u| *u > 0.0);
    let mut remedies = Vec::new();
    if let Some(u) = fits {
        remedies.push(r(format!(
            "Lower gpu_memory_utilization to {u:.2} or less (--gpu-memory-utilization {u:.2}): vLLM then reserves what is free. The KV cache gets what is left after the weights, so a low value may leave it too small for max_model_len."
        )));
    } else {
        remedies.push(r("Lower gpu_memory_utilization (--gpu-memory-utilization) to what is free: the fraction is of the whole GPU, not of its free memory."));
    }
    remedies.push(r(format!(
        "Free {gpu}: stop the processes holding it, often a previous vLLM engine still alive (VLLM::EngineCore); `gpumon once` lists them with their memory."
    )));
    remedies.push(r(
        "Or run on a GPU with enough free memory: CUDA_VISIBLE_DEVICES=N.",
    ));
    Finding {
        cause: Cause::OtherProcesses,
        title,
        detail: "vLLM reserves gpu_memory_utilization × the GPU's total for weights, activations and the KV cache, and checks at start-up that this much is free. At that point this process holds only its CUDA context, so what is in use belongs to others.".into(),
        remedies,
    }
}

fn framework_allocations(
    oom: &Oom,
    allocated: u64,
    live: bool,
    shortfall: Option<u64>,
    sizing: Option<&Sizing>,
) -> Finding {
    use crate::estimate::Lever;
    let half = allocated / 2;
    let short = shortfall
        .map(|s| format!(" The request is {} short.", fmt_bytes(s)))
        .unwrap_or_default();
    let remedies = match oom.framework {
        Framework::Jax => vec![
            est("Halve the batch and accumulate gradients over 2 steps (optax.MultiSteps) to keep the effective batch size.", Some(half)),
            r("Rematerialise activations with jax.checkpoint (jax.remat) on the repeated blocks."),
            r("Compute in bfloat16 (params in float32, activations in bfloat16)."),
            r("Donate buffers a step replaces: jax.jit(step, donate_argnums=…) lets XLA write the new parameters and optimizer state over the old ones instead of holding both."),
            r("Shard across devices with jax.sharding (pjit/shard_map) when more GPUs are available."),
        ],
        Framework::Tensorflow => vec![
            est("Halve the batch size; accumulate gradients over steps to keep the effective batch size.", Some(half)),
            r("Mixed precision: tf.keras.mixed_precision.set_global_policy('mixed_float16') (or 'mixed_bfloat16')."),
            r("Recompute activations with tf.recompute_grad on large blocks."),
        ],
        Framework::Mps
        | Framework::Pytorch
        | Framework::Hip
        | Framework::Xpu
        | Framework::Npu
        | Framework::Mlu
        | Framework::Musa
        | Framework::Gcu
        | Framework::Hpu => vec![
            est("Activation checkpointing (torch.utils.checkpoint, or gradient_checkpointing_enable() in transformers): activations drop from O(n) to about O(√n) layers, at ~30% more compute.", Some(allocated * 2 / 5)),
            est("Halve the batch and accumulate gradients over 2 steps to keep the effective batch size (scale the loss by 1/steps; the learning rate can stay; BatchNorm then sees half the samples per step — use SyncBatchNorm/GroupNorm if that matters).", Some(half)),
            est("Mixed precision: torch.autocast(device_type, dtype=torch.bfloat16) roughly halves activation memory.", Some(allocated / 4)),
            r("A lighter optimizer: plain SGD keeps about 2× the parameters (weights + gradients), Adam about 4× (plus two moments); 8-bit optimizer states (bitsandbytes) shrink Adam's moments 4×."),
            r("Evaluate under torch.no_grad() or torch.inference_mode(), so no graph is kept."),
            r("Accumulate metrics as numbers: total_loss += loss.item(), not total_loss += loss (which keeps every step's graph alive)."),
            r("del large intermediates you no longer need (and their references) between phases, e.g. after evaluation."),
            r("Shorter sequences and less padding: bucket by length or pack sequences."),
        ],
        _ => vec![est("Process smaller batches or inputs.", Some(half))],
    };
    let mut remedies = remedies;
    // With the run described, each standard remedy is sized by the estimate's model, within
    // what the job holds; one the run already uses (or that cannot apply to it: checkpointing
    // in inference, halving a batch of 1, autocast on a bf16 run) is not offered.
    if let Some(z) = sizing {
        let modelled = crate::estimate::memory::estimate(&z.shape, &z.run).total_bytes;
        remedies.retain_mut(|rem| {
            let t = rem.text.to_ascii_lowercase();
            let lever = if t.contains("halve the batch") {
                Some(Lever::HalveBatch)
            } else if t.contains("checkpoint")
                || t.contains("rematerialise")
                || t.contains("recompute")
            {
                Some(Lever::FullCheckpointing)
            } else if t.contains("mixed precision") || t.contains("bfloat16") {
                Some(Lever::MixedPrecision)
            } else if t.contains("optimizer") {
                Some(Lever::EightBitAdam)
            } else {
                None
            };
            let Some(l) = lever else { return true };
            match crate::estimate::lever_saving(&z.shape, &z.run, l) {
                Some(saves) => {
                    rem.saves_bytes = Some(within_held(saves, modelled, allocated));
                    true
                }
                None => false,
            }
        });
    }
    // Ranked by expected saving; unestimated ones keep their order after.
    remedies.sort_by_key(|r| std::cmp::Reverse(r.saves_bytes.unwrap_or(0)));
    Finding {
        cause: Cause::FrameworkAllocations,
        title: if live {
            format!(
                "{} holds {} in live allocations",
                oom.framework.name(),
                fmt_bytes(allocated)
            )
        } else {
            format!(
                "{}'s allocator holds {} (allocated and cached together)",
                oom.framework.name(),
                fmt_bytes(allocated)
            )
        },
        detail: if sizing.is_some() {
            format!("Most of the memory belongs to this job's own tensors.{short} Savings below come from gpumon estimate's model of the run you described (--estimate).")
        } else {
            format!("Most of the memory belongs to this job's own tensors.{short} Savings below are estimates that assume activations dominate, as they do in training.")
        },
        remedies,
    }
}

/// A saving the estimate's model works out, as a share of what the job holds: where the model's
/// total is more than the job holds (the described run is not quite this one), its share of the
/// model's total applied to what is held; never more than is held.
fn within_held(saves: u64, modelled: u64, held: u64) -> u64 {
    let scaled = if modelled > held && modelled > 0 {
        (saves as u128 * held as u128 / modelled as u128) as u64
    } else {
        saves
    };
    scaled.min(held)
}

/// RAPIDS' ways out: who holds the GPU, smaller partitions, spilling, the pool's room.
/// NCCL's communicator memory (its environment variables, NCCL's documentation): room left
/// beside the framework, or smaller buffers.
fn nccl_remedies() -> Vec<Remedy> {
    vec![
        r("Leave NCCL room beside the framework: it allocates a communicator's buffers when the first collective runs, after the model is loaded. A smaller batch, or a lower memory fraction where the framework takes one (vLLM's gpu_memory_utilization, SGLang's mem_fraction_static), leaves it space."),
        r("Shrink what NCCL takes: NCCL_BUFFSIZE (bytes per channel and peer, default 4 MiB), fewer channels (NCCL_MAX_NCHANNELS; NCCL_MAX_CTAS in newer releases), and NCCL_NVLS_ENABLE=0 on NVSwitch systems, where NVLink SHARP takes buffers of its own."),
        r("See what else holds the GPU: `gpumon once`."),
    ]
}

fn rmm_remedies(oom: &Oom) -> Vec<Remedy> {
    vec![
        r("See what holds the GPU: `gpumon once` lists every process and its memory (dask-cuda workers each hold their own pool)."),
        r("Smaller pieces of work: more, smaller partitions (dask's npartitions, chunked reads), so each worker holds less at once."),
        r("Let RMM spill: dask-cuda's --device-memory-limit (or jit-unspill) moves data to host memory before the GPU fills; rmm.reinitialize(managed_memory=True) uses unified memory that pages to the host (slower)."),
        r(if oom.format == "rmm-pool" {
            "Raise the pool's maximum (rmm.reinitialize(pool_allocator=True, maximum_pool_size=…), dask-cuda's --rmm-pool-size) if the GPU has room beyond it, leaving room for other libraries' memory."
        } else {
            "With a pool (rmm.reinitialize(pool_allocator=True)), leave room for memory allocated outside RMM (CUDA contexts, cuBLAS/cuDNN workspaces, other libraries): a pool sized to the whole GPU starves them."
        }),
    ]
}

/// JAX's ways to lower a step's peak, for findings that cannot size them.
fn jax_lower_peak() -> Vec<Remedy> {
    vec![
        r("A smaller batch (accumulate gradients with optax.MultiSteps to keep the effective batch)."),
        r("jax.checkpoint (jax.remat) on the repeated blocks recomputes activations instead of keeping them."),
        r("bfloat16 activations (params in float32); and donate what a step replaces: jax.jit(step, donate_argnums=…)."),
    ]
}

fn framework_settings(oom: &Oom) -> Option<Finding> {
    let f = &oom.facts;
    // TensorFlow filling its own allocator's limit (the Stats block's InUse plus the request
    // over Limit): memory growth and a memory cap change how the card is shared, not what the
    // job may use, so they are not offered.
    if oom.framework == Framework::Tensorflow && f.total_is_limit {
        if let (Some(in_use), Some(limit), Some(need)) =
            (f.allocated_bytes, f.total_bytes, f.requested_bytes)
        {
            if in_use.saturating_add(need) > limit {
                return None;
            }
        }
    }
    // XLA's client memory settings and TensorFlow's memory growth are about GPUs; a TPU's
    // HBM is the runtime's.
    if oom.format.starts_with("xla-tpu") {
        return None;
    }
    if let Some(fork) = super::families::fork(oom.framework) {
        return fork_settings(oom, fork);
    }
    let (title, detail, remedies): (&str, &str, Vec<Remedy>) = match oom.framework {
        Framework::Jax => (
            "JAX preallocates GPU memory",
            "By default XLA reserves 75% of the GPU at start-up, so other processes (and a second JAX process) see little free memory.",
            vec![
                r("XLA_PYTHON_CLIENT_MEM_FRACTION=.90 lets JAX use more of the card (default .75) when nothing else needs it."),
                r("XLA_PYTHON_CLIENT_PREALLOCATE=false allocates on demand (more fragmentation, but shares the GPU with other processes)."),
                r("XLA_PYTHON_CLIENT_ALLOCATOR=platform frees memory when unused (slow; for debugging)."),
            ],
        ),
        Framework::Tensorflow => (
            "TensorFlow's memory settings",
            "TensorFlow maps nearly all GPU memory at start-up unless told otherwise.",
            vec![
                r("tf.config.experimental.set_memory_growth(gpu, True) (or TF_FORCE_GPU_ALLOW_GROWTH=true) allocates as needed."),
                r("tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=MB)]) caps it, to share the GPU."),
            ],
        ),
        Framework::Mps => (
            "The MPS high-watermark limit",
            "\"max allowed\" is PyTorch's limit, PYTORCH_MPS_HIGH_WATERMARK_RATIO (default 1.7) × the GPU's recommended working set, not the Mac's memory. The allocator already released its cached buffers and retried before it raised, so torch.mps.empty_cache() will not help.",
            vec![r("Raising the ratio (at most 2.0), torch.mps.set_per_process_memory_fraction(…), or 0.0 for no limit may let it fit — but, as the message warns, it may cause system failure: macOS swaps or kills processes. Prefer making the job smaller.")],
        ),
        // vllm-project/vllm `vllm/v1/worker/gpu_model_runner.py` (`_dummy_sampler_run`, run by
        // `profile_run` and again by `compile_or_warm_up_model` in `gpu_worker.py`, after the
        // KV cache is allocated).
        Framework::Vllm if oom.format == "vllm-warmup" => (
            "vLLM's sampler warm-up",
            "vLLM runs the sampler (or the pooler) on max_num_seqs dummy requests at once, while profiling memory and again in its warm-up after the KV cache has taken gpu_memory_utilization × the GPU less the weights: its logits and buffers, max_num_seqs × the vocabulary, did not fit in what was left.",
            vec![
                r("Lower max_num_seqs (--max-num-seqs): the sampler's buffers grow with it and with the vocabulary."),
                r("Or lower gpu_memory_utilization, which leaves more of the GPU outside vLLM's budget for the warm-up and CUDA graphs (as the message says)."),
                r("Another process on the GPU takes from the same remainder: `gpumon once` lists them."),
            ],
        ),
        Framework::Vllm => (
            "vLLM's memory budget",
            "vLLM takes gpu_memory_utilization × the GPU for weights, activations and the KV cache; the KV cache gets what is left.",
            vec![
                r("Raise gpu_memory_utilization (default 0.9) if no other process needs the GPU."),
                r("Lower max_model_len (and max_num_seqs) so fewer KV-cache blocks are needed."),
                r("Split the model: tensor_parallel_size=N; or a quantized model / kv_cache_dtype=\"fp8\"."),
                r("enforce_eager=True skips CUDA-graph capture memory."),
            ],
        ),
        // huggingface/text-generation-inference `launcher/src/main.rs` (its flags),
        // `flash_causal_lm.py` (`warmup`) and `backends/v3/src/lib.rs` (`NotEnoughMemory`).
        Framework::Tgi if oom.format == "tgi-max-total-tokens" => (
            "Text Generation Inference's token budget",
            "After its warm-up TGI gives the KV cache what is left of the GPU (--cuda-memory-fraction of it) and counts the tokens that fit; the router refuses to start when that is fewer than --max-total-tokens, the most one request may hold.",
            vec![
                r("Lower --max-total-tokens (and --max-input-tokens below it) to what the log says fits."),
                r("Leave the KV cache more room: shard the model over more GPUs (--num-shard), quantize it (--quantize), or store the cache in fp8 (--kv-cache-dtype fp8_e4m3fn / fp8_e5m2)."),
            ],
        ),
        Framework::Tgi => (
            "Text Generation Inference's warm-up",
            "At start-up TGI runs one prefill of --max-batch-prefill-tokens tokens, then sizes its KV cache from what is left: that prefill did not fit beside the weights. \"allowed\" in PyTorch's message, where it is printed, is --cuda-memory-fraction of the GPU.",
            vec![
                r("Lower --max-batch-prefill-tokens (at least --max-input-tokens, which may have to come down with it)."),
                r("Shard the model over more GPUs (--num-shard) or quantize it (--quantize) so the weights leave room."),
                r("Raise --cuda-memory-fraction (default 1.0) only if it was set below 1 and nothing else needs the GPU."),
            ],
        ),
        // sgl-project/sglang `python/sglang/srt/server_args.py` (--mem-fraction-static,
        // --max-running-requests, --chunked-prefill-size, --tp-size) and `model_runner.py`.
        Framework::Sglang if oom.format == "sglang-kv-pool" => (
            "SGLang's static memory pool",
            "SGLang reserves --mem-fraction-static of the GPU for the weights and the KV-cache pool; after the weights that share had no room for a single KV-cache token. The rest of the GPU is left for activations and CUDA graphs.",
            vec![
                r("Raise --mem-fraction-static (as the message says) when activations and CUDA graphs need less than the rest: a smaller --cuda-graph-max-bs or --chunked-prefill-size lets them."),
                r("Or make the weights smaller per GPU: shard with --tp-size N, or a quantized model (--quantization fp8)."),
            ],
        ),
        Framework::Sglang => (
            "SGLang's KV-cache pool is full",
            "The scheduler could not get KV-cache slots for this batch from its pool (sized by --mem-fraction-static at start), even after evicting the prefix cache: a count of tokens, not a failed device allocation.",
            vec![
                r("Admit less at once: lower --max-running-requests, or --chunked-prefill-size for long prompts."),
                r("Give the pool more: a higher --mem-fraction-static if the GPU has room, --kv-cache-dtype fp8_e4m3, or more GPUs (--tp-size)."),
            ],
        ),
        // microsoft/DeepSpeed `deepspeed/inference/config.py` (`max_out_tokens`, alias
        // `max_tokens`; `tensor_parallel.tp_size`) and `inference_context.h` (`GenWorkSpace`).
        Framework::Deepspeed => (
            "DeepSpeed's inference workspace",
            "DeepSpeed's inference kernels take one workspace at the first forward, sized from max_out_tokens and the batch (activations and the KV cache of that many tokens), and need at least that much, plus a margin, free beside the weights.",
            vec![
                r("Lower max_out_tokens (init_inference(..., max_out_tokens=N), alias max_tokens; default 1024) or the batch size."),
                r("Shard the model over more GPUs (tensor_parallel={\"tp_size\": N}) so each holds less, or free what else holds the GPU (`gpumon once`)."),
            ],
        ),
        Framework::Onnxruntime => (
            "ONNX Runtime's arena",
            "The CUDA execution provider grows a BFC arena that it does not shrink by default.",
            vec![
                r("arena_extend_strategy: kSameAsRequested, and gpu_mem_limit in the CUDA provider options."),
                r("cudnn_conv_algo_search: HEURISTIC avoids large workspace trials; limit input shapes."),
            ],
        ),
        Framework::Ggml => (
            "llama.cpp memory settings",
            if oom.format == "ggml-vulkan" {
                "Weights, KV cache and compute buffers all go to the GPU. Vulkan drivers also cap a single allocation (maxMemoryAllocationSize, often 2–4 GiB): a large -c, -b or -ub can make one compute buffer exceed it while memory is still free."
            } else {
                "Weights, KV cache and compute buffers all go to the GPU."
            },
            vec![
                r("Offload fewer layers: lower -ngl/--n-gpu-layers."),
                r("A smaller context (-c) or a quantized KV cache (--cache-type-k q8_0 --cache-type-v q8_0); a smaller -ub/--ubatch-size shrinks compute buffers."),
                r("Spread across GPUs with --tensor-split, or use a smaller quantization."),
            ],
        ),
        Framework::Paddle => (
            "PaddlePaddle's allocator",
            "Paddle can preallocate a fraction of the GPU.",
            vec![
                r("FLAGS_allocator_strategy=auto_growth allocates on demand."),
                r("FLAGS_fraction_of_gpu_memory_to_use sets the preallocated share."),
            ],
        ),
        Framework::Tensorrt => (
            "TensorRT build memory",
            "The builder tries tactics that need scratch memory (workspace) on top of the engine.",
            vec![
                r("Limit the workspace: config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, bytes) (or --memPoolSize with trtexec)."),
                r("Smaller optimization-profile shapes (max batch, resolution)."),
            ],
        ),
        // JuliaGPU/CUDA.jl `src/pool.jl` (`retry_reclaim`: synchronize, GC.gc(false), GC.gc(true),
        // trim the pool, before OutOfGPUMemoryError is thrown) and its memory documentation
        // (`CUDA.unsafe_free!`, JULIA_CUDA_HARD_MEMORY_LIMIT / JULIA_CUDA_SOFT_MEMORY_LIMIT);
        // AMDGPU.jl's pool works the same way.
        // The same pool's retry as it starts, where a build logs it ("CUDA memory allocation
        // failed; attempting to free up memory..." then "... running a quick GC (freed N)"):
        // not yet an error.
        Framework::Cuda if oom.format == "cuda-jl-retry" => (
            "Julia's GPU memory pool",
            "CUDA.jl's pool could not get memory for an allocation and began to free its own: it waits for pending frees, then runs Julia's garbage collector and tries again, and throws OutOfGPUMemoryError only where that still leaves too little. The lines after it say how much each step freed; where the job went on, the allocation fitted after a collection, at the cost of the collection's time. \"Memory pool usage\" is what live arrays held; \"reserved\" is what the pool kept from the GPU.",
            vec![
                r("Free large arrays as soon as they are done with, without waiting for the garbage collector: CUDA.unsafe_free!(x) returns their memory at once, and the pool then rarely needs to collect."),
                r("A smaller batch, or Float32 (or Float16) arrays in place of Float64."),
                r("Sharing the GPU with other processes: JULIA_CUDA_HARD_MEMORY_LIMIT (bytes or a percentage) caps what CUDA.jl takes, and JULIA_CUDA_SOFT_MEMORY_LIMIT makes it return memory sooner."),
            ],
        ),
        Framework::Cuda | Framework::Rocm if matches!(oom.format, "cuda-jl" | "amdgpu-jl") => (
            "Julia's GPU memory pool",
            "Before it throws OutOfGPUMemoryError the package already waited for pending frees, ran Julia's garbage collector (a quick and then a full collection) and trimmed its pool, and tried again: calling GC.gc() or CUDA.reclaim() yourself will not cure this error. \"Memory pool usage\" is what live arrays hold; \"reserved\" is what the pool keeps from the GPU.",
            vec![
                r("Free large arrays as soon as they are done with, without waiting for the garbage collector: CUDA.unsafe_free!(x) (AMDGPU.unsafe_free!(x)) returns their memory at once."),
                r("A smaller batch, or Float32 (or Float16) arrays in place of Float64."),
                r("Sharing the GPU with other processes: JULIA_CUDA_HARD_MEMORY_LIMIT (bytes or a percentage) caps what CUDA.jl takes, and JULIA_CUDA_SOFT_MEMORY_LIMIT makes it return memory sooner."),
            ],
        ),
        Framework::Cupy if oom.facts.total_is_limit => (
            "CuPy's memory pool limit",
            "The pool's own limit (set_limit, or CUPY_GPU_MEMORY_LIMIT) was reached, not necessarily the GPU: what the pool holds plus the request is over it.",
            vec![
                r("Raise the limit if the GPU has room (`gpumon once`): cupy.get_default_memory_pool().set_limit(size=…), or CUPY_GPU_MEMORY_LIMIT (bytes, or a percentage of the GPU)."),
                r("CuPy releases before cupy/cupy#7679 (July 2023) raised at the limit without first freeing the cached blocks the pool held: mempool.free_all_blocks() before the large allocation, or a newer CuPy."),
            ],
        ),
        Framework::Cupy => (
            "CuPy's memory pool",
            "CuPy keeps freed blocks in its pool, but before raising it already released the unused ones and retried: free_all_blocks() will not cure this error.",
            vec![
                r("When another library shares the GPU (PyTorch, cuDNN workspaces), cupy.get_default_memory_pool().set_limit(size=…) caps CuPy's pool so both fit."),
            ],
        ),
        _ => return None,
    };
    Some(Finding {
        cause: Cause::FrameworkSettings,
        title: title.into(),
        detail: detail.into(),
        remedies,
    })
}

/// The GPU generations behind Triton's "Hardware limit" (the opt-in shared memory per block,
/// cudaDevAttrMaxSharedMemoryPerBlockOptin, from NVIDIA's compute-capability tables).
fn smem_generation(limit: u64) -> Option<&'static str> {
    Some(match limit {
        49_152 => "48 KiB: Pascal and older (compute capability 6.x), or a kernel not opted in",
        65_536 => "64 KiB: Turing (T4, RTX 20, compute capability 7.5)",
        98_304 => "96 KiB: Volta (V100, compute capability 7.0)",
        101_376 => {
            "99 KiB: Ampere and Ada consumer and workstation GPUs (RTX 30/40, A10, \
                    L4, L40; compute capability 8.6/8.9)"
        }
        166_912 => "163 KiB: A100 and A30 (compute capability 8.0)",
        232_448 => "227 KiB: Hopper and Blackwell data-centre GPUs (H100, H200, B200)",
        _ => return None,
    })
}

/// An on-chip figure in words and bytes, or `word` where the message gives none.
fn bytes_or(b: Option<u64>, word: &str) -> String {
    b.map_or_else(|| word.into(), |b| format!("{} ({b} bytes)", fmt_bytes(b)))
}

/// " It is N over." where the need is over the limit.
fn over_by(need: Option<u64>, limit: Option<u64>) -> String {
    need.zip(limit)
        .filter(|(n, l)| n > l)
        .map(|(n, l)| format!(" It is {} over.", fmt_bytes(n - l)))
        .unwrap_or_default()
}

fn shared_memory(oom: &Oom) -> Finding {
    let f = &oom.facts;
    let need = f.requested_bytes;
    let limit = oom.memory_limit_bytes;
    let mut detail = format!(
        "This is not the GPU's memory. A Triton kernel was compiled to use {} of shared memory \
         per thread block, on the chip, and this GPU allows {} per block{}. Free GPU memory, a \
         smaller batch or another process's memory make no difference.",
        bytes_or(need, "more"),
        bytes_or(limit, "less"),
        limit
            .and_then(smem_generation)
            .map(|g| format!(" ({g})"))
            .unwrap_or_default(),
    );
    detail.push_str(&over_by(need, limit));
    Finding {
        cause: Cause::SharedMemory,
        title: "A kernel needs more on-chip shared memory than this GPU has per block".into(),
        detail,
        remedies: vec![
            r(
                "Lower the kernel's num_stages (each pipeline stage keeps its own copy of the \
               tiles in shared memory) or its BLOCK_M / BLOCK_N / BLOCK_K tile sizes, in its \
               triton.Config or autotune list.",
            ),
            r(
                "A library kernel (vLLM, FlashAttention's Triton path, mamba, lmdeploy, \
               Inductor): use its settings or a release with configs for this GPU generation, \
               or its non-Triton backend.",
            ),
            r(
                "Or run on a GPU with more shared memory per block (227 KiB on H100, 163 KiB on \
               A100, 99 KiB on RTX 30/40).",
            ),
        ],
    }
}

/// The Neuron compiler's NKI instruction whose operands do not fit in a partition of the
/// NeuronCore's state buffer (`families::neuron_sbuf`).
fn neuron_sbuf(oom: &Oom) -> Finding {
    let need = oom.facts.requested_bytes;
    let limit = oom.memory_limit_bytes;
    let mut detail = format!(
        "This is not the device's memory (HBM). The Neuron compiler could not place one \
         instruction in the NeuronCore's state buffer (SBUF), its on-chip memory of 128 \
         partitions: the instruction's operands, as the compiler lists them, together need {} of \
         each partition, and a partition holds {}.",
        bytes_or(need, "more"),
        bytes_or(limit, "less"),
    );
    detail.push_str(&over_by(need, limit));
    detail.push_str(
        " The tiles of the kernel or graph being compiled decide it, and the input's sizes that \
         set them (larger images made this one fail); free device memory makes no difference.",
    );
    Finding {
        cause: Cause::SharedMemory,
        title: "An instruction needs more of a state-buffer partition than the NeuronCore has"
            .into(),
        detail,
        remedies: vec![
            r(
                "Make the instruction's tiles smaller along their free dimension (the axes after \
               the partition axis: fewer elements in each partition), for instance by looping \
               over smaller slices of the input.",
            ),
            r(
                "Keep fewer tiles in SBUF at once: compute and store one slice before loading \
               the next, rather than holding whole inputs or outputs there. The compiler's list \
               of the instruction's operands above says which take the most.",
            ),
            r(
                "The compiler calls this an internal error and asks for a support ticket: where \
               the graph is not a kernel of yours, or its list counts one operand twice, report \
               it to AWS Neuron with this output.",
            ),
        ],
    }
}

fn host_memory(oom: &Oom) -> Finding {
    let need = oom.facts.requested_bytes;
    if oom.framework != Framework::Ggml {
        return Finding {
            cause: Cause::HostMemory,
            title: "The host's RAM ran out, not the GPU's memory".into(),
            detail: format!(
                "This is not the GPU's memory: {} could not allocate {} of the host's RAM (its \
                 message names a CPU allocation). The GPU's memory is not what ran out.",
                match oom.framework {
                    Framework::Unknown => "the program",
                    f => f.name(),
                },
                need.map_or_else(
                    || "a buffer".into(),
                    |b| format!("a buffer of {}", fmt_bytes(b))
                ),
            ),
            remedies: vec![
                r(
                    "See what the host has free (free -h) and what else holds it; a container's \
                   memory limit or ulimit -v counts too.",
                ),
                r("Lower what the job keeps in host memory at once (batch, data loaded ahead, buffers), or run it where the host has more RAM."),
            ],
        };
    }
    let detail = format!(
        "This is not the GPU's memory: llama.cpp's CPU backend could not allocate {} of host \
         RAM (an aligned malloc failed). The weights kept on the CPU, its KV cache and its \
         compute buffers live there; the size grows with the context (-c) and the batch.",
        need.map_or_else(
            || "a buffer".into(),
            |b| format!("a buffer of {}", fmt_bytes(b))
        ),
    );
    Finding {
        cause: Cause::HostMemory,
        title: "The host's RAM ran out (a CPU buffer), not the GPU's memory".into(),
        detail,
        remedies: vec![
            r(
                "See what the host has free (free -h) and what else holds it; a container's \
               memory limit or ulimit -v counts too.",
            ),
            r(
                "A smaller context (-c / --ctx-size) or batch (-b, -ub): the CPU KV cache and \
               compute buffers scale with them.",
            ),
            r(
                "Offload more layers to the GPU (-ngl) so fewer weights stay in host memory, or \
               use a smaller quantisation of the model.",
            ),
        ],
    }
}

/// Ollama's check before loading (`llm/server.go`, before v0.30): the part of the model that
/// would stay in system memory (the layers not offloaded, and the rest of the layout's CPU
/// share) against free RAM plus free swap. Nothing was allocated; Ollama refused to start.
fn ollama_system_memory(oom: &Oom) -> Finding {
    let f = &oom.facts;
    let sizes = match (f.requested_bytes, f.free_bytes) {
        (Some(n), Some(a)) => format!(
            " ({} against {} free RAM and swap)",
            fmt_bytes(n),
            fmt_bytes(a)
        ),
        _ => String::new(),
    };
    Finding {
        cause: Cause::HostMemory,
        title: "Ollama found too little system memory for the model, not GPU memory".into(),
        detail: format!(
            "This is not the GPU's memory: before loading, Ollama sums what the model would keep \
             in system memory (the layers it would not offload to the GPUs){sizes} and refuses when that exceeds free RAM plus free swap."
        ),
        remedies: vec![
            r("Free system memory (free -h; other loaded models: ollama ps, ollama stop) or add swap."),
            r("A smaller context (num_ctx / OLLAMA_CONTEXT_LENGTH) or a smaller quantisation of the model."),
            r("More of the model on the GPUs (num_gpu, or free VRAM) so less stays in system memory."),
        ],
    }
}

fn unrecognised(oom: &Oom) -> Finding {
    let f = &oom.facts;
    let mut read = Vec::new();
    if let Some(n) = f.requested_bytes {
        read.push(format!("a request of {}", fmt_bytes(n)));
    }
    if let Some(fr) = f.free_bytes {
        read.push(format!("{} free", fmt_bytes(fr)));
    }
    if let Some(t) = f.total_bytes {
        read.push(format!("{} in total", fmt_bytes(t)));
    }
    let mut detail = if read.is_empty() {
        "The line quoted above reports a failed GPU allocation in words no rule of gpumon's \
         knows, and gives no figure it can read unambiguously."
            .to_owned()
    } else {
        format!(
            "The line quoted above reports a failed GPU allocation in words no rule of gpumon's \
             knows; it reads {}.",
            read.join(", ")
        )
    };
    if let (Some(n), Some(fr)) = (f.requested_bytes, f.free_bytes) {
        if n > fr {
            detail.push_str(&format!(
                " The request is {} more than was free.",
                fmt_bytes(n - fr)
            ));
        }
    }
    detail.push_str(
        " What the program's own figures mean (allocated, cached, reserved) is not assumed.",
    );
    if oom.format == "level-zero" {
        return Finding {
            cause: Cause::Unrecognised,
            title: "An Intel GPU (SYCL on Level Zero) ran out of device memory".into(),
            detail: "The SYCL runtime reports Level Zero's out-of-device-memory code (Unified \
                     Runtime's UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, 39; ZE_RESULT_… from Level \
                     Zero itself): a device allocation on an Intel GPU failed. Which program \
                     asked, and for how much, the text does not say. On an integrated GPU \
                     device memory is a share of system RAM."
                .into(),
            remedies: vec![
                r("See what the GPU holds: `xpu-smi stats -d 0` (or `intel_gpu_top`); close other programs using it."),
                r("Ask for less at once: a smaller model, batch or context (llama.cpp: lower -ngl, a smaller -c, a quantised KV cache; PyTorch XPU: a smaller batch)."),
                r("One allocation over 4 GiB needs Level Zero's relaxed limit on Intel GPUs: UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1."),
            ],
        };
    }
    Finding {
        cause: Cause::Unrecognised,
        title: "A GPU allocation failed, in a message gpumon does not know".into(),
        detail,
        remedies: vec![
            r("See what holds the GPU now: `gpumon once` lists every process and its memory."),
            r("Get numbers: run the job under `gpumon log --processes --interval 200ms` (or `gpumon run`) and read the last samples before the failure."),
            r("Lower what the program asks for at once (batch, resolution, buffer or pool sizes), or run it on a GPU with more free memory (CUDA_VISIBLE_DEVICES=N)."),
        ],
    }
}

fn pinned_host_memory(oom: &Oom) -> Finding {
    let need = oom.facts.requested_bytes;
    let mut remedies = vec![
        r("Pin less at once: smaller staging buffers or batches; in PyTorch, DataLoader(pin_memory=False) or fewer workers and a smaller prefetch_factor."),
        r("Give the host room: free RAM (free -h), and raise the locked-memory limit (ulimit -l, a container's memory limit) where it is the cap."),
    ];
    if oom.framework == Framework::Tensorflow {
        remedies.insert(
            0,
            r("TensorFlow: TF_GPU_HOST_MEM_LIMIT_IN_MB caps its pinned host allocator; a size this large usually comes from a dataset or prefetch buffer staged through it."),
        );
    }
    // torch_npu's `CachingHostAllocator.cpp` suggests its own call in the message.
    if oom.format == "npu-pinned-host" {
        remedies.insert(
            0,
            r("torch_npu keeps freed pinned blocks cached: torch_npu.npu.host_empty_cache() returns them to the host (as its message suggests) before the large copy."),
        );
    }
    // A program whose remedies are for its own page-locked buffers (Bladebit's RAM modes).
    if oom.format == "program-bladebit" {
        remedies.insert(
            0,
            r("Bladebit page-locks all its host buffers at start: where the host's RAM is short of its Total Host RAM required, plot with --disk-128 or --disk-16 (with -t1/-t2 temporary directories), which need about 128 or 16 GiB of RAM."),
        );
    }
    if oom.format == "cupy-pinned" {
        remedies.insert(
            0,
            r("CuPy warned and copied synchronously instead (slower, not a failure): if the job stopped, the error after this warning is the one to read. Copying a large host array in pieces needs smaller staging buffers."),
        );
    }
    if oom.framework != Framework::Npu {
        remedies.push(r("On Windows (WDDM) pinned host memory is also mapped into the GPU and charged against it: free GPU memory helps there too."));
    }
    Finding {
        cause: Cause::PinnedHostMemory,
        title: "Pinned (page-locked) host memory ran out, not the GPU's memory".into(),
        detail: if oom.framework == Framework::Npu {
            format!(
                "This is not the NPU's memory: torch_npu's host allocator could not page-lock {} \
                 of host RAM for copies to and from the NPU (the runtime's \
                 ACL_ERROR_RT_MEMORY_ALLOCATION). The operating system must keep pinned pages \
                 resident, so the host's free RAM and its locked-memory limit bound it.",
                need.map_or_else(
                    || "a buffer".into(),
                    |b| format!("a buffer of {}", fmt_bytes(b))
                )
            )
        } else {
            format!(
                "This is not the GPU's memory: CUDA could not page-lock {} of host RAM for fast copies \
                 (CUDA_ERROR_OUT_OF_MEMORY is also what the driver returns for host allocations). The \
                 operating system must keep pinned pages resident, so the host's free RAM and its \
                 locked-memory limit bound it.",
                need.map_or_else(|| "a buffer".into(), |b| format!("a buffer of {}", fmt_bytes(b)))
            )
        },
        remedies,
    }
}

/// vLLM's start-up check: one sequence of max_model_len must fit in the KV cache.
/// vllm.rs (`src/utils/kvcache_allocator.rs`, `core/engine.rs`): its planner sizes the KV cache
/// after the weights are loaded, as `kv_fraction` of the memory then free (0.5 by default, 0.7
/// built with flash-attn, 0.95 when --max-model-len is given without --kv-fraction), and
/// needs `max-num-seqs × max-model-len` tokens in it; at run time the engine refuses a prompt
/// that needs more KV blocks than are free.
/// What TensorRT-LLM's own report suggests for a component (`py_executor_creator.py`'s tuning
/// suggestions), matched on the names its versions print ("KV cache", "_no_capture_init_kv_cache").
fn trtllm_knob(component: &str) -> &'static str {
    let c = component.to_ascii_lowercase();
    if c.contains("init") && c.contains("kv") || c.contains("temporary") && c.contains("kv") {
        "max_num_tokens: the temporary KV cache of the size estimate holds that many tokens"
    } else if c.contains("kv") {
        "KvCacheConfig(free_gpu_memory_fraction=…): the KV cache takes that share (default 0.9) of the memory free after the estimate, or cap it with max_tokens"
    } else if c.contains("draft") && c.contains("model") {
        "the draft model: a smaller one, or max_num_tokens"
    } else if c.contains("drafter") {
        "max_seq_len and/or max_draft_len"
    } else if c.contains("sampler") {
        "max_seq_len and/or max_attention_window_size (its buffers are sized by them)"
    } else if c.contains("model") {
        "the model's share of each GPU: tensor_parallel_size / pipeline_parallel_size across more GPUs, a quantised checkpoint (FP8, NVFP4), or a smaller max_num_tokens"
    } else {
        "max_num_tokens (and max_batch_size), which size the executor's runtime buffers"
    }
}

/// TensorRT-LLM's executor report: which component did not fit, what each before it took.
fn trtllm_executor(oom: &Oom) -> Finding {
    let f = &oom.facts;
    let failed = f.components.iter().find(|c| c.free_after_bytes.is_none());
    let created: Vec<&super::Component> = f
        .components
        .iter()
        .filter(|c| c.free_after_bytes.is_some())
        .collect();
    let name = failed.map_or("a component", |c| c.name.as_str());
    let mut detail = String::new();
    if let (Some(first), Some(t)) = (f.components.first(), f.total_bytes) {
        let before = t.saturating_sub(first.free_before_bytes);
        detail.push_str(&format!(
            "Before TensorRT-LLM created anything, {} of the {} were already in use (CUDA contexts, NCCL, other processes).",
            fmt_bytes(before),
            fmt_bytes(t)
        ));
    }
    let took: Vec<String> = created
        .iter()
        .filter_map(|c| {
            let t = c.took_bytes().filter(|t| *t > 0)?;
            Some(format!("{} took {}", c.name, fmt_bytes(t)))
        })
        .collect();
    if !took.is_empty() {
        detail.push_str(&format!(" Then: {}.", took.join(", ")));
    }
    // Memory gone between the last component listed and the one that failed: components
    // the paste does not show (a cut list), or another process meanwhile.
    let gap = created
        .last()
        .and_then(|c| c.free_after_bytes)
        .zip(failed)
        .map(|(after, c)| after.saturating_sub(c.free_before_bytes))
        .filter(|g| *g >= 512 << 20);
    if let Some(g) = gap {
        detail.push_str(&format!(
            " {} went after the last component listed: components the paste does not show, or another process.",
            fmt_bytes(g)
        ));
    }
    if let Some(c) = failed {
        detail.push_str(&format!(
            " {} found {} free and did not fit.",
            c.name,
            fmt_bytes(c.free_before_bytes)
        ));
    }
    // Much still free where it failed, and no size asked: the figures do not explain it.
    // TensorRT-LLM reports any error whose text says "out of memory" this way.
    let plenty = failed
        .zip(f.total_bytes)
        .is_some_and(|(c, t)| c.free_before_bytes >= t / 4)
        && f.requested_bytes.is_none();
    if plenty {
        return Finding {
            cause: Cause::Unexplained,
            title: format!(
                "TensorRT-LLM could not create its {name} with {} of {} free",
                fmt_bytes(failed.map_or(0, |c| c.free_before_bytes)),
                fmt_bytes(f.total_bytes.unwrap_or(0))
            ),
            detail: format!(
                "{} The report does not say what was asked: TensorRT-LLM words every error whose text says \"out of memory\" this way, pinned host memory and an allocation larger than the whole GPU included.",
                detail.trim()
            ),
            remedies: vec![
                r("Read the error printed above the report (\"The above exception was the direct cause\"): PyTorch's message there gives the size asked and what was free, and `gpumon explain` reads the two together."),
                r(format!("For the {name}: {}.", trtllm_knob(name))),
                r("Another server or rank on the same GPU can take memory between the estimate and the allocation: `gpumon once` shows every process on it."),
            ],
        };
    }
    let largest = created
        .iter()
        .filter_map(|c| Some((c.took_bytes()?, c.name.as_str())))
        .max();
    let mut remedies = vec![r(format!("For the {name}: {}.", trtllm_knob(name)))];
    // The KV cache is sized to what is free when it is created: whatever comes after it
    // (CUDA graphs, extra resources) gets the rest.
    let kv = |n: &str| {
        let n = n.to_ascii_lowercase();
        n.contains("kv") && !n.contains("init") && !n.contains("temporary")
    };
    // TensorRT-LLM creates the executor's extra resources (CUDA graphs, buffers) right after
    // the KV cache (`py_executor_creator.py`), so a cut list still says it came first.
    let extra = {
        let n = name.to_ascii_lowercase();
        (n.contains("extra") || n.contains("additional"))
            && !n.contains("init")
            && !n.contains("temporary")
    };
    if !kv(name) && (created.iter().any(|c| kv(&c.name)) || extra) {
        remedies.push(r(format!(
            "A lower KvCacheConfig(free_gpu_memory_fraction=…) (default 0.9): the KV cache, created before the {name}, takes that share of what is free and leaves the rest to what follows."
        )));
    }
    if let Some((bytes, big)) = largest.filter(|(_, n)| *n != name) {
        remedies.push(r(format!(
            "The {big} took the most ({}): {}.",
            fmt_bytes(bytes),
            trtllm_knob(big)
        )));
    }
    let held_before = f
        .components
        .first()
        .zip(f.total_bytes)
        .map(|(c, t)| t.saturating_sub(c.free_before_bytes));
    if held_before.is_some_and(|b| b > 2 << 30) || f.other_processes_bytes.is_some_and(|b| b > 0) {
        remedies.push(r("Other processes held memory before the executor started: `gpumon once` shows whose (a previous server still running, another engine on the GPU)."));
    }
    Finding {
        cause: if name.to_ascii_lowercase().contains("kv") {
            Cause::FrameworkSettings
        } else {
            Cause::FrameworkAllocations
        },
        title: format!(
            "TensorRT-LLM could not create its {name}{}",
            failed
                .map(|c| format!(
                    ": {} free{}",
                    fmt_bytes(c.free_before_bytes),
                    f.total_bytes
                        .map(|t| format!(" of {}", fmt_bytes(t)))
                        .unwrap_or_default()
                ))
                .unwrap_or_default()
        ),
        detail: detail.trim().to_owned(),
        remedies,
    }
}

fn vllm_rs(oom: &Oom) -> Finding {
    let f = &oom.facts;
    if let Some((needs, free)) = oom.kv_tokens {
        return Finding {
            cause: Cause::FrameworkSettings,
            title: format!(
                "The prompt needs {needs} KV-cache tokens and {free} are free: vllm.rs refused the request"
            ),
            detail: "vllm.rs gives a request the KV-cache blocks its prompt needs when it is admitted; when fewer are free, after it released the prefix-cache blocks it could, it refuses the request and keeps serving the others. No GPU allocation failed: the cache planned at start is shared by the running sequences (and the cached prefixes)."
                .into(),
            remedies: vec![
                r("Send it again once running requests finish, or send fewer at once (--max-num-seqs caps the sequences in flight)."),
                r("If the prompt is longer than the whole cache (the \"max usable kvcache tokens\" of the KVCache Allocation line at start), the cache must grow: a larger --kv-fraction, --fp8-kvcache (half the bytes per token), or more GPUs (--d 0,1)."),
                r("With --prefix-cache, cached prefixes hold blocks too: a smaller --prefix-cache-max-tokens leaves more for new prompts."),
            ],
        };
    }
    let need = f.requested_bytes;
    let budget = f.allowed_bytes;
    let share = need
        .zip(budget)
        .filter(|(n, _)| *n > 0)
        .map(|(n, b)| b as f64 / n as f64);
    let fraction = oom
        .kv_fraction
        .map(|k| format!(" (kv_fraction {:.0}%)", k * 100.0))
        .unwrap_or_default();
    let gpu = f
        .total_bytes
        .zip(f.device_used_bytes)
        .map(|(t, used)| {
            format!(
                " The GPU had {} of {} in use when it planned: the weights, and any other process.",
                fmt_bytes(used),
                fmt_bytes(t)
            )
        })
        .unwrap_or_default();
    let mut remedies = vec![est(
        match share {
            Some(s) if s < 1.0 => format!(
                "Lower --max-model-len or --max-num-seqs: the cache needs their product in tokens, and {:.0}% of it fits (a --max-model-len of at most {:.0}% of the one asked, for the same --max-num-seqs).",
                s * 100.0,
                (s * 100.0).floor()
            ),
            _ => "Lower --max-model-len or --max-num-seqs: the cache needs their product in tokens.".to_owned(),
        },
        need.zip(budget).map(|(n, b)| n.saturating_sub(b)),
    )];
    remedies.push(r("--fp8-kvcache stores the cache in 8 bits, half the bytes per token of bf16 (CUDA, Ampere or later; builds without flash-context)."));
    if oom.kv_fraction.is_none_or(|k| k < 0.95) {
        remedies.push(r("A larger --kv-fraction gives the cache more of the memory left after the weights (keep some for activations and CUDA graphs)."));
    }
    remedies.push(r("Free the GPU for it: quantise the weights in place (--isq q4k, q8_0…), spread the model over more GPUs (--d 0,1), or stop the other processes `gpumon` shows there."));
    Finding {
        cause: Cause::FrameworkSettings,
        title: format!(
            "vllm.rs's KV cache needs {}, more than the {} its budget leaves{fraction}",
            need.map_or_else(|| "more".to_owned(), fmt_bytes),
            budget.map_or_else(|| "memory".to_owned(), fmt_bytes),
        ),
        detail: format!(
            "vllm.rs plans its KV cache after loading the weights: its budget is kv_fraction of the GPU memory free then (0.5 by default, 0.7 with flash-attn, 0.95 when --max-model-len is given without --kv-fraction), and max-num-seqs sequences of max-model-len tokens must fit in it. Nothing was allocated: the planner refused to start.{gpu}"
        ),
        remedies,
    }
}

fn vllm_tokens(oom: &Oom, max_len: u64, tokens: u64) -> Finding {
    let util = oom
        .facts
        .gpu_memory_utilization
        .map(|u| format!(" (gpu_memory_utilization {u})"))
        .unwrap_or_default();
    Finding {
        cause: Cause::FrameworkSettings,
        title: format!(
            "vLLM's KV cache holds {tokens} tokens, fewer than one sequence of max_model_len {max_len}"
        ),
        detail: format!(
            "vLLM gives the KV cache what is left of its memory budget{util} after the weights \
             and the activations of a profiling run, and refuses to start when a single sequence \
             of max_model_len would not fit. No memory ran out yet: the budget is too small for \
             the length asked."
        ),
        remedies: vec![
            r(format!("--max-model-len {tokens} (or less): the longest sequence this cache can hold.")),
            r("Raise --gpu-memory-utilization (default 0.9) if no other process needs the GPU: the budget is that fraction of the whole GPU."),
            r("--kv-cache-dtype fp8 stores about twice the tokens; --tensor-parallel-size N splits the weights and the cache across GPUs; --enforce-eager frees the CUDA-graph memory."),
        ],
    }
}

/// A rule for one stack read over the structural reader: its finding, or `None` when the
/// message is not its own. Tried in order before the general rules.
type StackRule = fn(&Oom) -> Option<Finding>;

/// The stacks' own rules, by name.
const STACK_RULES: &[(&str, StackRule)] = &[
    ("rtp-llm-kv-blocks", rtp_llm_kv_blocks),
    ("paddle-enforce", paddle_enforce),
    ("xla-tpu-reserve", xla_tpu_reserve),
    ("mlx-buffer-size", mlx_buffer_size),
    ("metal-buffer-validation", metal_buffer_validation),
    ("mps-buffer-size", mps_buffer_size),
    ("mlx-command-buffer", mlx_command_buffer),
    ("ggml-metal-working-set", ggml_metal_working_set),
    ("tvm-storage", tvm_storage),
    ("mlc-llm-budget", mlc_llm_budget),
    ("exllamav2-autosplit", exllamav2_autosplit),
    ("max-alloc", over_max_alloc),
];

/// rtp-llm's paged KV cache had fewer free blocks than a request needed: the cache was sized at
/// start-up from the GPU memory left after the weights; a count of blocks, not a failed device
/// allocation.
fn rtp_llm_kv_blocks(oom: &Oom) -> Option<Finding> {
    let (need, left) = oom.kv_blocks?;
    Some(Finding {
        cause: Cause::FrameworkSettings,
        title: format!("rtp-llm's KV cache had {left} free blocks; the request needed {need}"),
        detail: "rtp-llm keeps each sequence's keys and values in a paged cache whose blocks it allocates once, at start-up, from the GPU memory left after the weights; a request (its prompt and the tokens it may generate) needed more blocks than the requests already running left free. No device allocation failed: the cache was full.".into(),
        remedies: vec![
            r("Admit less at once: fewer concurrent requests, shorter prompts, or a lower max_new_tokens per request."),
            r("Give the cache more blocks: a smaller or quantised model leaves more of the GPU for it, as does tensor parallelism over more GPUs."),
            r("See what else holds the GPU (`gpumon once`): memory another process takes at start-up is memory the cache did not get."),
        ],
    })
}

/// PaddlePaddle Fluid (before 1.5) takes its GPU memory as chunks of a fixed share of the card
/// (`gpu_info.cc`, `GpuMaxChunkSize`) and checks each against the free memory first: the
/// request is that chunk, not a tensor.
fn paddle_enforce(oom: &Oom) -> Option<Finding> {
    if oom.format != "paddle-enforce" {
        return None;
    }
    let f = &oom.facts;
    let na = || "N/A".to_owned();
    Some(Finding {
        cause: Cause::DeviceInUse,
        title: format!(
            "Paddle's allocator wanted a chunk of {}; {} of the GPU was free",
            f.requested_bytes.map_or_else(na, fmt_bytes),
            f.free_bytes.map_or_else(na, fmt_bytes)
        ),
        detail: "PaddlePaddle Fluid before 1.5 takes GPU memory in chunks of \
                 FLAGS_fraction_of_gpu_memory_to_use × (total − 5%) (gpu_info.cc, \
                 GpuMaxChunkSize) and checks each chunk against the memory the driver reports \
                 free. At start-up this fails when another process holds part of the card; \
                 later, when the job's own earlier chunks have taken the rest."
            .into(),
        remedies: vec![
            r("See what holds the GPU: `gpumon once`; run on a GPU nothing else uses (CUDA_VISIBLE_DEVICES=N)."),
            r("A smaller chunk: export FLAGS_fraction_of_gpu_memory_to_use below the share that is free (e.g. 0.5; the default was 0.92)."),
            r("If it fails after some steps, the job itself is growing: a smaller batch size."),
        ],
    })
}

/// A TPU's free HBM is in pieces: enough is free for the request, but less than it in one range
/// (`reservable_bytes`).
fn free_in_pieces(f: &super::Facts) -> bool {
    f.requested_bytes
        .zip(f.free_bytes)
        .zip(f.reservable_bytes)
        .is_some_and(|((n, free), one)| free >= n && one < n)
}

/// The TPU runtime could not reserve a compiled program's memory at the bottom of HBM. With
/// more free than the program needs but less of it reservable, the free memory is in pieces;
/// otherwise live arrays and earlier programs hold it.
fn xla_tpu_reserve(oom: &Oom) -> Option<Finding> {
    if oom.format == "xla-tpu-allocate" {
        return Some(xla_tpu_allocate(oom));
    }
    if oom.format != "xla-tpu-reserve" {
        return None;
    }
    let f = &oom.facts;
    let need = f.requested_bytes;
    let pieces = free_in_pieces(f);
    let got = |b: Option<u64>| b.map_or_else(|| "N/A".to_owned(), fmt_bytes);
    let torch = oom.framework == Framework::PytorchXla;
    let mut remedies = vec![
        r(if torch {
            "Hold fewer tensors on the TPU while the step's program loads: move what is only needed later to the CPU, and del what is no longer used; a smaller batch shrinks the program's buffers."
        } else {
            "Hold fewer arrays on the TPU while the program loads: donate what a step replaces (jax.jit(step, donate_argnums=…)), delete what is no longer needed (x.delete(), or drop the last reference), and keep what is only needed later on the host (jax.device_put to a CPU device)."
        }),
        r("Shard parameters and optimizer state across more cores (jax.sharding / pjit, FSDP-style), or use a larger slice."),
        r(if torch {
            "Shrink the program's own buffers: a smaller per-core batch, gradient checkpointing on the repeated blocks, bfloat16."
        } else {
            "Shrink the program's own buffers: a smaller per-core batch, jax.checkpoint (jax.remat) on the repeated blocks, bfloat16."
        }),
    ];
    if pieces {
        remedies.insert(0, r("Compile and load the large programs first, before the arrays that fill HBM around them (warm them up at start-up), so their reservation finds one contiguous range."));
    }
    Some(Finding {
        cause: if pieces {
            Cause::Fragmentation
        } else {
            Cause::FrameworkAllocations
        },
        title: if pieces {
            format!(
                "The program needs {} of HBM; {} is free but only {} of it in one range at the bottom",
                got(need),
                got(f.free_bytes),
                got(f.reservable_bytes)
            )
        } else {
            format!(
                "The program needs {} of HBM to load; the TPU has {} free",
                got(need),
                got(f.free_bytes)
            )
        },
        detail: format!(
            "The TPU runtime reserves a compiled program's memory (its code, constants and temporaries) at the bottom of HBM when it loads it. Live arrays{} and programs loaded before hold the rest{}. This is not the compile-time check: the program was compiled; it did not fit beside what was already on the device.",
            f.reserved_bytes
                .filter(|r| *r > 0)
                .map(|r| format!(", {} reserved by earlier programs,", fmt_bytes(r)))
                .unwrap_or_default(),
            if pieces {
                "; free memory above them is not one range the reservation can use"
            } else {
                ""
            }
        ),
        remedies,
    })
}

/// The TPU runtime could not place one array: more than the HBM left free beside what the
/// job already holds there.
fn xla_tpu_allocate(oom: &Oom) -> Finding {
    let f = &oom.facts;
    let got = |b: Option<u64>| b.map_or_else(|| "N/A".to_owned(), fmt_bytes);
    // The runtime's allocator by memory space says how much one buffer could have had
    // ("N bytes allocatable").
    if free_in_pieces(f) {
        return Finding {
            cause: Cause::Fragmentation,
            title: format!(
                "An array of {} does not fit in one piece: {} of HBM is free, but the runtime says at most {} is allocatable",
                got(f.requested_bytes),
                got(f.free_bytes),
                got(f.reservable_bytes)
            ),
            detail: "The TPU runtime places each buffer in one contiguous range of HBM, and its \"allocatable\" is read here as the most one buffer could have had (the runtime is not open source; its older words said so: \"the largest contiguous region of free memory\"). Enough is free in total, but between the buffers the job holds no range is as large as this one: the arrays allocated and freed before it (often of many sizes, in a loop or a notebook's earlier cells) left the free memory in pieces.".into(),
            remedies: vec![
                r("Free what is no longer needed and allocate the large arrays first (at start-up, before the many small ones); in a notebook, restart the runtime rather than run cells again over the old arrays."),
                r("Donate the buffers a step replaces (jax.jit(step, donate_argnums=…)), so the new ones reuse their ranges."),
                r("Split the array (a smaller batch, or sharded over the cores with jax.sharding): smaller buffers fit in the pieces."),
            ],
        };
    }
    Finding {
        cause: Cause::FrameworkAllocations,
        title: format!(
            "An array of {} does not fit in the {} of HBM left free",
            got(f.requested_bytes),
            got(f.free_bytes)
        ),
        detail: "The TPU runtime could not allocate a device buffer: the job's live arrays (weights, optimizer state, caches, earlier results) fill the rest of this core's HBM. Memory held by a previous run in the same process (a notebook) counts until its arrays are deleted.".into(),
        remedies: vec![
            r("Free what is no longer needed before this step: delete arrays (x.delete(), or drop the last reference) and, in a notebook, the previous run's model; jax.clear_caches() drops compiled programs."),
            r("Load the weights sharded across the cores (jax.sharding; Keras 3's keras.distribution), in bfloat16, or a smaller / quantised model."),
            r("A smaller batch or sequence length shrinks the arrays a step creates."),
        ],
    }
}

/// MLX asked Metal for one buffer larger than the device's `maxBufferLength`: no amount of
/// free memory makes one buffer larger; the tensor must be smaller or split.
fn mlx_buffer_size(oom: &Oom) -> Option<Finding> {
    if oom.format != "mlx-buffer-size" {
        return None;
    }
    let f = &oom.facts;
    let over = f
        .requested_bytes
        .zip(f.total_bytes)
        .map(|(n, t)| n as f64 / t.max(1) as f64);
    Some(Finding {
        cause: Cause::RequestExceedsTotal,
        title: format!(
            "One array of {} is larger than the {} Metal allows in one buffer{}",
            f.requested_bytes.map_or_else(|| "N/A".into(), fmt_bytes),
            f.total_bytes.map_or_else(|| "maximum".into(), fmt_bytes),
            over.map(|x| format!(" ({x:.1}×)")).unwrap_or_default()
        ),
        detail: "MLX refuses a buffer over the device's maxBufferLength (about 3/4 of the Mac's unified memory on recent chips) before it asks for memory: this is one array, not the total. In language models it is usually the KV cache of a long context or the logits over a long prompt (tokens × vocabulary × 4 bytes).".into(),
        remedies: vec![
            r("Bound the KV cache: mlx_lm's --max-kv-size (a rotating cache) or a shorter context / prompt; process a long prompt in chunks (prefill step size)."),
            r("Compute logits only for the tokens you need (the last one when generating), not the whole prompt."),
            r("A quantised model (4- or 8-bit) or a quantised KV cache (mlx_lm's --kv-bits) makes the large arrays smaller; a smaller batch or resolution does the same for other models."),
            r("mx.metal.set_memory_limit / set_wired_limit change how much MLX may use in all, not the size of one buffer: they do not help here."),
        ],
    })
}

/// Metal's validation layer stopped one buffer over the device's `maxBufferLength`: one buffer,
/// not the total; no memory was short.
fn metal_buffer_validation(oom: &Oom) -> Option<Finding> {
    if oom.format != "metal-buffer-validation" {
        return None;
    }
    let f = &oom.facts;
    Some(Finding {
        cause: Cause::RequestExceedsTotal,
        title: format!(
            "One Metal buffer of {} is longer than the {} this device allows in one buffer",
            f.requested_bytes.map_or_else(|| "N/A".into(), fmt_bytes),
            f.total_bytes.map_or_else(|| "maximum".into(), fmt_bytes),
        ),
        detail: "Metal's API validation layer (on when Xcode runs a debug build) asserts when a buffer is longer than the device's maxBufferLength, a fixed size per device and far below its memory on iPhones and iPads. This is one buffer, not the total: freeing memory does not help, and without the validation layer the same call returns no buffer.".into(),
        remedies: vec![
            r("Make that one allocation smaller: a smaller or quantised model, a smaller image, context or batch, or tiled processing where the program offers it."),
            r("Split the data over several buffers, each under the limit (MTLDevice.maxBufferLength gives it at run time)."),
        ],
    })
}

/// TVM's Relax VM placed a tensor in a storage region its compiler planned for smaller shapes:
/// the plan's limit, not the GPU's memory.
fn tvm_storage(oom: &Oom) -> Option<Finding> {
    if oom.format != "tvm-storage" {
        return None;
    }
    let f = &oom.facts;
    // A region of no bytes: no input's length explains it.
    let empty = f.total_bytes == Some(0);
    Some(Finding {
        cause: Cause::RequestExceedsTotal,
        title: format!(
            "A tensor of {} does not fit the {} storage region the compiled model planned for it",
            f.requested_bytes
                .map_or_else(|| "this size".into(), fmt_bytes),
            f.total_bytes.map_or_else(|| "planned".into(), fmt_bytes),
        ),
        detail: if empty {
            "TVM's Relax VM allocates tensors inside storage regions whose sizes the compiler planned ahead. This region has no bytes at all: no input size explains that; the plan itself is wrong (a model library built by another TVM or MLC version than the runtime, or a compiler fault for this target), not the device's memory.".into()
        } else {
            "TVM's Relax VM allocates tensors inside storage regions whose sizes the compiler planned ahead for the shapes it was told to expect. A larger input than planned (a prompt past the context or prefill length the model library was compiled for) overflows its region however much the GPU has free: this is the plan's limit, not the device's memory.".into()
        },
        remedies: if empty {
            vec![r("Compile the model library again with the same TVM and MLC build as the runtime that loads it; if the region is still empty, report it to the compiler's authors with the model and the target.")]
        } else {
            vec![
                r("Keep the input within what the model library was compiled for (its context window and prefill chunk)."),
                r("Or compile the model library again for longer inputs: MLC-LLM's `mlc_llm compile … --overrides \"context_window_size=…;prefill_chunk_size=…\"`."),
            ]
        },
    })
}

/// MLC-LLM's engine refused to start: the weights and its temporary buffers are more than its
/// share of the GPU (`gpu_memory_utilization` × the total), before any KV cache.
fn mlc_llm_budget(oom: &Oom) -> Option<Finding> {
    if oom.format != "mlc-llm-budget" {
        return None;
    }
    let parts = super::known::mlc_budget_parts(&oom.line);
    let title = match parts {
        Some((budget, weights, temp)) => format!(
            "MLC LLM's weights ({}) and temporary buffers ({}) are more than its {} share of the GPU",
            fmt_bytes(weights),
            fmt_bytes(temp),
            fmt_bytes(budget)
        ),
        None => "MLC LLM's weights and temporary buffers are more than its share of the GPU".into(),
    };
    let weights_alone = parts.is_some_and(|(budget, weights, _)| weights >= budget);
    let mut remedies = Vec::new();
    if weights_alone {
        remedies.push(r("The weights alone exceed the budget: split them over GPUs (`mlc_llm gen_config … --tensor-parallel-shards N`, then compile again) or use a quantisation with fewer bits (q4f16_1 rather than q0f16/q4f32)."));
    } else {
        remedies.push(r("Shrink the temporary buffers: a smaller prefill chunk (`mlc_llm gen_config … --prefill-chunk-size`, or `prefill_chunk_size` in the engine's overrides) or a smaller max batch size."));
    }
    remedies.push(r("Raise gpu_memory_utilization (`--overrides \"gpu_memory_utilization=…\"`) if nothing else uses the GPU; the KV cache also needs room from that same share."));
    if !weights_alone {
        remedies.push(r(
            "Or split the model over GPUs (--tensor-parallel-shards) or quantise it further.",
        ));
    }
    Some(Finding {
        cause: Cause::FrameworkSettings,
        title,
        detail: "Before loading, MLC LLM's engine adds the model's weights on one GPU and the temporary buffers its compiled functions need (doubled for safety, plus its KV-cache and logit workspaces), and checks the sum against the GPU's total memory × gpu_memory_utilization. Nothing was allocated: the sum did not fit its budget, so no room would remain for the KV cache. The request shown is that sum, derived from the two printed figures.".into(),
        remedies,
    })
}

/// ExLlamaV2's autosplit reached its last GPU with part of the model or the cache unplaced.
fn exllamav2_autosplit(oom: &Oom) -> Option<Finding> {
    if oom.format == "exllamav3-autosplit" {
        return Some(Finding {
            cause: Cause::NoNumbers,
            title: "ExLlamaV3 could not place the model and its cache on the GPUs".into(),
            detail: "ExLlamaV3's loader places the model's modules, each with its share of the cache, on each GPU of the split in turn and moves on when one runs out of memory; it raised this when a module did not fit on the last one: the weights and a cache of the size asked for did not fit in the GPUs' free memory together. The message gives no size.".into(),
            remedies: vec![
                r("Shrink the cache: a smaller cache size and context (TabbyAPI's cache_size and max_seq_len), or a quantised cache (TabbyAPI's cache_mode Q4, Q6 or Q8)."),
                r("Load a quantisation of the model with fewer bits per weight, or add a GPU to the split."),
                r("Free the GPUs first: `gpumon once` shows what else holds them."),
            ],
        });
    }
    if oom.format != "exllamav2-autosplit" {
        return None;
    }
    Some(Finding {
        cause: Cause::NoNumbers,
        title: "ExLlamaV2 could not place the model and its cache on the GPUs".into(),
        detail: "ExLlamaV2's autosplit (model.load_autosplit) loads the model's layers and the cache onto each GPU in turn and moves on when one is full; it raised this on the last one: the weights and a cache sized for max_seq_len did not fit in the GPUs' free memory together. The message gives no size.".into(),
        remedies: vec![
            r("Shrink the cache: a shorter context (config.max_seq_len before loading), or a quantised cache (ExLlamaV2Cache_Q4, _Q6 or _Q8 instead of ExLlamaV2Cache)."),
            r("Load a quantisation of the model with fewer bits per weight, or add a GPU."),
            r("Free the GPUs first: in a notebook, a model loaded earlier still holds its memory until it is deleted."),
        ],
    })
}

/// A request larger than the largest single allocation the device allows (OpenCL's
/// CL_DEVICE_MAX_MEM_ALLOC_SIZE from the program's start-up lines, IPEX's per-block cap): one
/// allocation too large, whatever is free.
fn over_max_alloc(oom: &Oom) -> Option<Finding> {
    let f = &oom.facts;
    let (need, max) = (f.requested_bytes?, f.max_alloc_bytes?);
    if need <= max || oom.format == "xpu-4gb-limit" {
        return None;
    }
    Some(Finding {
        cause: Cause::RequestExceedsTotal,
        title: format!(
            "One allocation of {} is larger than the {} the device allows in one allocation",
            fmt_bytes(need),
            fmt_bytes(max)
        ),
        detail: if oom.format == "wgpu-max-buffer" {
            "wgpu checks each buffer against the device's max_buffer_size limit before creating it (256 MiB unless the program asks the adapter for more when it requests the device): this one buffer cannot be created however much memory is free.".into()
        } else {
            "The device caps the size of each single allocation (OpenCL's CL_DEVICE_MAX_MEM_ALLOC_SIZE, often a quarter of its memory), below its total: this one buffer cannot be allocated however much is free.".into()
        },
        remedies: if oom.format == "wgpu-max-buffer" {
            vec![
                r("In the program: request the device with a higher max_buffer_size (up to the adapter's own limit, adapter.limits()), or split the data over several buffers; as a user, use a smaller image, texture or scene, and report it to the program's authors."),
            ]
        } else {
            vec![
                r("Make that one buffer smaller (a smaller work size, batch, tile or image), or split it over several buffers under the limit."),
            ]
        },
    })
}

/// PyTorch's MPS allocator refused one tensor over the Metal device's maxBufferLength
/// (`MPSAllocator.mm`, `alloc_buffer_block`): no memory was asked for, and the high-watermark
/// ratio does not enter into it.
fn mps_buffer_size(oom: &Oom) -> Option<Finding> {
    if oom.format != "mps-buffer-size" {
        return None;
    }
    Some(Finding {
        cause: Cause::RequestExceedsTotal,
        title: format!(
            "One tensor of {} is larger than the largest buffer Metal allows on this Mac",
            oom.facts
                .requested_bytes
                .map_or_else(|| "this size".into(), fmt_bytes)
        ),
        detail: "PyTorch's MPS allocator checks each tensor against the Metal device's maxBufferLength before it allocates anything: this is one tensor, not the total, and freeing memory or PYTORCH_MPS_HIGH_WATERMARK_RATIO does not change the limit.".into(),
        remedies: vec![
            r("Make that tensor smaller: a smaller batch, resolution or sequence; in diffusers, pipe.enable_attention_slicing() or a tiled VAE decode splits the largest ones."),
            r("Split the operation into chunks along the batch or sequence, or run that step on the CPU."),
        ],
    })
}

/// Metal refused a command buffer for memory under MLX: the working set is over what macOS
/// lets the GPU use.
fn mlx_command_buffer(oom: &Oom) -> Option<Finding> {
    if oom.format != "mlx-command-buffer" {
        return None;
    }
    Some(Finding {
        cause: Cause::NoNumbers,
        title: "Metal ran out of memory running MLX's command buffer".into(),
        detail: "The arrays a step needs did not fit in what macOS lets the GPU wire (its recommended working set, about 2/3 to 3/4 of unified memory). The message gives no size.".into(),
        remedies: vec![
            r("A quantised model (4- or 8-bit), a shorter context or a bounded KV cache (mlx_lm's --max-kv-size)."),
            r("mx.metal.set_memory_limit(…) makes MLX free its cache and wait before it exceeds a limit; raising the wired limit (sudo sysctl iogpu.wired_limit_mb=…, or mx.metal.set_wired_limit) lets the GPU keep more, at the cost of the rest of the system."),
            r("Close other apps: on Apple silicon they share the same memory."),
        ],
    })
}

/// llama.cpp's 2023 Metal backend mapped buffers past the Mac's recommended working set, then
/// a tensor's buffer or the GPU's work failed (`known::ggml_metal`).
fn ggml_metal_working_set(oom: &Oom) -> Option<Finding> {
    let f = &oom.facts;
    if oom.format != "ggml-metal" || !f.total_is_limit {
        return None;
    }
    let (held, set) = (f.allocated_bytes?, f.total_bytes?);
    if held <= set {
        return None;
    }
    Some(Finding {
        cause: Cause::FrameworkAllocations,
        title: format!(
            "llama.cpp's Metal buffers total {}, past the {} macOS lets the GPU use",
            fmt_bytes(held),
            fmt_bytes(set)
        ),
        detail: "The model's weights, the KV cache and the compute buffers were each mapped, but together they exceed the device's recommended working set (recommendedMaxWorkingSetSize, about 2/3 to 3/4 of unified memory); past it the GPU could not keep them resident and its work failed. The size that failed is not printed.".into(),
        remedies: vec![
            r("Offload fewer layers (-ngl/--n-gpu-layers) or use a smaller quantisation of the model, so that the buffers fit in the working set."),
            r("A smaller context (-c/--ctx-size): the KV cache grows with it."),
            r("On macOS 14 or later the wired limit can be raised (sudo sysctl iogpu.wired_limit_mb=…), at the cost of the memory left to the rest of the system; close other apps, which share the same memory."),
        ],
    })
}

/// MLX's Metal allocator holds as many buffers as the resource limit allows: a count, not
/// bytes, so memory can be free.
fn buffer_count(oom: &Oom) -> Finding {
    Finding {
        cause: Cause::BufferCount,
        title: format!(
            "MLX holds {} Metal buffers, the most one process may have",
            oom.buffer_limit
                .map_or_else(|| "as many".into(), |n| n.to_string())
        ),
        detail: "This limit is a count of buffers (Metal's resource limit), not bytes: memory may well be free. Every live array, and every freed buffer MLX keeps in its cache for reuse, counts. Many small arrays that live long (a growing KV cache kept as separate pieces, an evaluation graph that is never evaluated) reach it.".into(),
        remedies: vec![
            r("Evaluate often (mx.eval on the state each step) so intermediate arrays are released, and keep long-lived state in few large arrays rather than many small ones."),
            r("Cap MLX's buffer cache, mx.metal.set_cache_limit(…) (or mx.set_cache_limit), so freed buffers go back to Metal instead of counting against the limit."),
            r("Update mlx and mlx_lm: releases have cut the buffers a step allocates."),
        ],
    }
}

/// PyTorch's CPU allocator: the host's RAM, whatever device the job uses.
fn cpu_allocator(oom: &Oom) -> Finding {
    Finding {
        cause: Cause::HostMemory,
        title: format!(
            "The host's RAM ran out{}: PyTorch's CPU allocator, not a GPU",
            oom.facts
                .requested_bytes
                .map(|b| format!(" allocating {}", fmt_bytes(b)))
                .unwrap_or_default()
        ),
        detail: "DefaultCPUAllocator allocates tensors on the CPU: loading a checkpoint into RAM before moving it to the GPU, a DataLoader's batches, or a model kept on the CPU. The GPU's memory is not involved.".into(),
        remedies: vec![
            r("See what the host has free (free -h) and what else holds it; a container's memory limit counts too."),
            r("Load weights straight to the device or lazily: torch.load(..., mmap=True, map_location=\"cuda\"), safetensors, or from_pretrained(..., low_cpu_mem_usage=True, device_map=\"auto\")."),
            r("Fewer or lighter DataLoader workers, and a smaller batch, if the host fills during training."),
        ],
    }
}

/// TensorFlow's CPU allocator (`cpu`, oneDNN's `mklcpu`): a tensor placed on the host.
fn tf_cpu_allocator(oom: &Oom) -> Finding {
    Finding {
        cause: Cause::HostMemory,
        title: format!(
            "The host's RAM ran out{}: TensorFlow's CPU allocator, not a GPU",
            oom.facts
                .requested_bytes
                .map(|b| format!(" allocating {}", fmt_bytes(b)))
                .unwrap_or_default()
        ),
        detail: "The tensor was placed on /device:CPU:0 (no GPU visible to TensorFlow, an op with no GPU kernel, or a tf.device(\"/cpu:0\") scope) and the host allocator could not get it. The GPU's memory is not involved.".into(),
        remedies: vec![
            r("See what the host has free (free -h) and what else holds it; a container's memory limit counts too."),
            r("Check that TensorFlow sees the GPU (tf.config.list_physical_devices(\"GPU\")); if it does not, every tensor lands in host RAM."),
            r("A smaller batch, or a tf.data pipeline that streams instead of holding the dataset in memory."),
        ],
    }
}

/// Ascend's CANN runtime (`EL0004`) could not allocate device memory for itself, the graph
/// engine or ACL's memory pool. That memory is outside torch_npu's caching allocator, so its
/// figures ("reserved in total by PyTorch") and `PYTORCH_NPU_ALLOC_CONF` do not govern it;
/// what torch_npu holds in its cache is, for the runtime, memory in use, and `empty_cache()`
/// gives it back to the device (unlike for torch_npu's own failures, which free the cache and
/// retry before raising).
fn ascend_runtime(oom: &Oom) -> Option<Finding> {
    if oom.format != "ascend-el0004" {
        return None;
    }
    let npu = oom
        .device_index
        .map_or_else(|| "the NPU".to_owned(), |d| format!("NPU {d}"));
    let title = match oom.facts.requested_bytes {
        Some(n) => format!(
            "Ascend's runtime (CANN) could not allocate {} on {npu}",
            fmt_bytes(n)
        ),
        None => format!("Ascend's runtime (CANN) could not allocate device memory on {npu}"),
    };
    Some(Finding {
        cause: if oom.facts.requested_bytes.is_some() {
            Cause::RequestOnly
        } else {
            Cause::NoNumbers
        },
        title,
        detail: "EL0004 (with the driver's halMemAlloc under it) comes from CANN, not from torch_npu's allocator: the runtime, the graph engine (GE) or ACL's memory pool asked the device for memory (rtMalloc) and the NPU had none left. That memory is outside PyTorch's account, so PYTORCH_NPU_ALLOC_CONF does not govern it; torch_npu's own cache counts as memory in use. At device open (\"open device … failed\") the memory pool could not even start: other processes fill the NPU.".into(),
        remedies: vec![
            r("See what holds the NPU: `npu-smi info` lists each device's memory and processes; pick free devices with ASCEND_RT_VISIBLE_DEVICES."),
            r("Leave room beside the framework: in vLLM-Ascend a lower --gpu-memory-utilization; in training a smaller batch or shorter sequences."),
            r("torch.npu.empty_cache() before the step that fails gives torch_npu's unused cache back to the device, where CANN can use it."),
        ],
    })
}

/// Intel Gaudi's device-memory module (`PT_DEVMEM`) could not allocate a block of the HPU's
/// HBM. The message gives only the size; its own allocator, not a port of PyTorch's, so no
/// allocator setting is suggested.
fn gaudi_device_memory(oom: &Oom) -> Option<Finding> {
    if oom.format != "hpu-pt-devmem" {
        return None;
    }
    let size = oom
        .facts
        .requested_bytes
        .map_or_else(|| "A block".to_owned(), fmt_bytes);
    Some(Finding {
        cause: Cause::RequestOnly,
        title: format!("{size} of the HPU's memory could not be allocated (Gaudi's PT_DEVMEM)"),
        detail: "Gaudi's PyTorch bridge allocates the HPU's HBM through its own device-memory module; it found no room for this block. The message gives no other figure: what holds the memory (the model, the KV cache, HPU graphs' buffers, other processes) is not in the text.".into(),
        remedies: vec![
            r("See each HPU's memory and processes: `hl-smi`; pick free cards with HABANA_VISIBLE_MODULES."),
            r("Make the job fit one card: a smaller batch or shorter sequences (max_new_tokens, max input length), or shard the model across several HPUs (DeepSpeed) when the weights alone are too large."),
        ],
    })
}

/// Gaudi's SynapseAI helper (`SYNHELPER`) could not allocate the workspace of a compiled graph
/// (a recipe: lazy mode's accumulated ops or a torch.compile region, PT_HPU_LAZY_MODE in
/// docs.habana.ai/en/latest/PyTorch/Runtime_Flags), or another of its device allocations. Only
/// the size is given; remedies that Habana documents for the graph itself are not certain to
/// shrink its workspace, so none is suggested beyond finding room on the card.
fn gaudi_graph_workspace(oom: &Oom) -> Option<Finding> {
    let workspace = match oom.format {
        "hpu-synhelper-workspace" => true,
        "hpu-synhelper" => false,
        _ => return None,
    };
    let size = oom
        .facts
        .requested_bytes
        .map_or_else(|| "A block".to_owned(), fmt_bytes);
    let (title, detail) = if workspace {
        (
            format!("{size} of HPU memory for a compiled graph's workspace could not be allocated (Gaudi's SYNHELPER)"),
            "Gaudi runs a compiled graph (a recipe: the ops lazy mode accumulated, or a torch.compile region) with scratch memory of its own, its workspace, allocated on the HPU when the graph is launched; the card had no room for it beside the tensors and other graphs' memory. The message gives no other figure.",
        )
    } else {
        (
            format!("{size} of the HPU's memory could not be allocated (Gaudi's SYNHELPER)"),
            "Gaudi's SynapseAI helper, under the PyTorch bridge, found no room on the HPU for this allocation. The message gives no other figure.",
        )
    };
    Some(Finding {
        cause: Cause::RequestOnly,
        title,
        detail: detail.into(),
        remedies: vec![
            r("See each HPU's memory and processes: `hl-smi`; pick free cards with HABANA_VISIBLE_MODULES."),
            r("Make the job fit one card: a smaller batch or shorter sequences, or shard the model across several HPUs (DeepSpeed) when the weights alone are too large."),
        ],
    })
}

/// A TPU core's VMEM or SMEM: on-chip memory the compiler allots per program, so neither the
/// HBM remedies (sharding, rematerialisation) nor freeing memory apply. VMEM's limit is XLA's
/// scoped VMEM limit (`--xla_tpu_scoped_vmem_limit_kib`, a part of the physical VMEM; Pallas
/// kernels take `pltpu.CompilerParams(vmem_limit_bytes=…)`); SMEM holds the scalars and the
/// operands' addresses each op needs (pytorch/xla's maintainers in vllm-project/vllm#8318).
fn tpu_on_chip(oom: &Oom) -> Finding {
    let f = &oom.facts;
    let smem = oom.format == "xla-tpu-smem";
    let space = if smem { "SMEM" } else { "VMEM" };
    let title = match (f.requested_bytes, oom.memory_limit_bytes) {
        (Some(n), Some(cap)) => format!(
            "The compiled program needs {} of {space}, over the {} it may use on a TPU core",
            fmt_bytes(n),
            fmt_bytes(cap)
        ),
        _ => format!("The compiled program does not fit in a TPU core's {space}"),
    };
    let (detail, remedies) = if smem {
        (
            "SMEM is a TPU core's small scalar memory, where the compiler places scalars and the addresses of each op's operands. It is not HBM: sharding, rematerialisation and freeing memory do not touch it. A program with very many operands per op, or very long shapes unrolled, exceeds it.".to_owned(),
            vec![
                r("Compile a smaller program: shorter maximum shapes (in vLLM on TPU, a lower --max-model-len), fewer operands fused into one step."),
                r("Update jax/libtpu or torch_xla, and report it with the HLO (PyTorch/XLA: XLA_SAVE_TENSORS_FILE=/tmp/save.hlo XLA_SAVE_TENSORS_FMT=hlo): the compiler decides what goes to SMEM."),
            ],
        )
    } else {
        (
            "VMEM is a TPU core's on-chip vector memory, the scratch a kernel or a fused op works in. The limit here is the one XLA compiles against (its scoped VMEM limit, part of the core's physical VMEM), not the HBM: sharding, rematerialisation and a smaller batch over HBM do not address it.".to_owned(),
            vec![
                r("Raise the scoped VMEM limit XLA compiles against: LIBTPU_INIT_ARGS=\"--xla_tpu_scoped_vmem_limit_kib=N\" (KiB, at most the core's physical VMEM)."),
                r("For a Pallas kernel: smaller blocks (its BlockSpec block shapes, an attention kernel's block sizes), or pltpu.CompilerParams(vmem_limit_bytes=…) for that kernel."),
                r("With no custom kernel, one of the compiler's own fusions did not fit: try a newer jax/libtpu or torch_xla, and report it with the HLO dump, as the message may ask."),
            ],
        )
    };
    Finding {
        cause: Cause::TpuOnChipMemory,
        title,
        detail,
        remedies,
    }
}

/// What the message says is held beyond the card: true, and the diagnosis. Windows' driver
/// lets allocations spill into shared system memory (over PCIe) once the card is full.
fn spilled(oom: &Oom) -> Option<Finding> {
    let f = &oom.facts;
    let spill = f.spilled_bytes.filter(|s| *s > 0)?;
    let total = f.total_bytes?;
    Some(Finding {
        cause: Cause::SpilledToSystemMemory,
        title: format!(
            "{} beyond the card's {} spilled into shared system memory",
            fmt_bytes(spill),
            fmt_bytes(total)
        ),
        detail: "The allocator holds more than the device has: on Windows the driver's system-memory fallback moves allocations to the host's shared GPU memory once the card is full. The card was already full before this request; what spilled runs over PCIe, many times slower than the card's own memory, so the job slows sharply long before it fails.".into(),
        remedies: vec![
            r("Make the job fit the card itself (the remedies above): spilling hides the overflow until it fails or crawls."),
            r("To fail fast instead of slowing down, set NVIDIA Control Panel › Manage 3D settings › CUDA - Sysmem Fallback Policy to \"Prefer No Sysmem Fallback\" for this program's Python."),
        ],
    })
}

/// A fork's own allocator: what its figures mean and the settings it reads.
fn fork_settings(oom: &Oom, fork: &super::families::Fork) -> Option<Finding> {
    let name = oom.framework.name();
    let mut remedies = Vec::new();
    if let Some(conf) = fork.alloc_conf.filter(|_| fork.caching_allocator) {
        remedies.push(r(format!(
            "{conf}=expandable_segments:True lets the allocator grow segments in place instead of leaving gaps; {conf}=max_split_size_mb:N (for example 128–512) stops large cached blocks being split."
        )));
    }
    remedies.push(r(format!(
        "See every process on the device and its memory: `{}`; pick free devices with {}.",
        fork.tool, fork.visible
    )));
    remedies.push(r(format!(
        "Print {}.memory_summary() in the except handler to see the allocator's own account.",
        fork.module
    )));
    let detail = if fork.caching_allocator {
        format!(
            "{name} uses a port of PyTorch's caching allocator: \"reserved in total by PyTorch\" is what it holds from the device (its live tensors plus its cache){}. It released its cache and retried before it raised, so {}.empty_cache() will not help.",
            if oom.framework == Framework::Npu {
                "; \"current active\" is blocks in use, including freed ones a stream has not yet released"
            } else {
                ""
            },
            fork.module
        )
    } else {
        format!(
            "{name} prints PyTorch's sentence from its own allocator: the figures are its account of the device's memory."
        )
    };
    Some(Finding {
        cause: Cause::FrameworkSettings,
        title: format!("{name}'s allocator"),
        detail,
        remedies,
    })
}

/// The general rules' words, said for a fork: its tool, its visible-devices variable, its
/// Python module, its allocator variable.
fn for_the_fork(out: &mut [Finding], fork: &super::families::Fork) {
    let conf = fork.alloc_conf.unwrap_or("PYTORCH_ALLOC_CONF");
    let module = format!("{}.", fork.module);
    let tool = format!("`{}`", fork.tool);
    let say = |s: &str| {
        s.replace(" (or nvidia-smi)", "")
            .replace("`gpumon once`", &tool)
            .replace("nvidia-smi", fork.tool)
            .replace("CUDA_VISIBLE_DEVICES", fork.visible)
            .replace("torch.cuda.", &module)
            .replace("PYTORCH_CUDA_ALLOC_CONF", conf)
            .replace(
                "this process's CUDA context",
                "this process's device context",
            )
    };
    for f in out {
        f.title = say(&f.title);
        f.detail = say(&f.detail);
        for r in &mut f.remedies {
            r.text = say(&r.text);
        }
    }
}

/// The libraries with allocators of their own (XGBoost, CatBoost, LightGBM, FAISS, MindSpore):
/// what their figures are, from their sources (see `libraries.rs`), and their own levers, not a
/// framework's.
fn gpu_library(oom: &Oom) -> Option<Finding> {
    let f = &oom.facts;
    let req = f.requested_bytes.map(fmt_bytes);
    let see =
        || r("See what else holds the GPU: `gpumon once` lists every process and its memory.");
    let (cause, title, detail, remedies) = match oom.framework {
        Framework::Xgboost => {
            let title = match (req.as_deref(), f.free_bytes) {
                (Some(n), Some(free)) => format!("XGBoost could not allocate {n} on the GPU; {} was free", fmt_bytes(free)),
                (Some(n), None) => format!("XGBoost could not allocate {n} on the GPU"),
                _ => "XGBoost's GPU code ran out of device memory".into(),
            };
            let detail = if oom.format == "xgboost-thrust" {
                "A CUDA call in XGBoost's GPU code returned error 2 (out of memory) and was raised as a thrust::system_error. XGBoost keeps the training data on the GPU in its compressed ELLPACK form, with gradients and histograms beside it; the message gives no size."
            } else if f.free_bytes.zip(f.requested_bytes).is_some_and(|(free, n)| n <= free) {
                "XGBoost's allocator (dh::detail::ThrowOOMError) prints the device's free memory (cudaMemGetInfo) at the failure. It was larger than the request, so the free memory was split into pieces too small for it, or another allocation took it in between."
            } else {
                "XGBoost's allocator (dh::detail::ThrowOOMError) prints the device's free memory (cudaMemGetInfo) at the failure and the request: the GPU was full, with the training data in its compressed ELLPACK form, gradients, histograms and prediction caches, or other processes."
            };
            (
                if oom.format == "xgboost-thrust" { Cause::NoNumbers } else { Cause::FrameworkAllocations },
                title,
                detail.to_owned(),
                vec![
                    r("Build the training data with xgboost.QuantileDMatrix (from CuPy/cuDF arrays or a DataIter) instead of DMatrix: it is quantised as it is read, without a full copy of the raw data on the GPU."),
                    r("Data larger than the GPU: external memory (ExtMemQuantileDMatrix from XGBoost 3.0) keeps the pages in host memory and streams them; or spread it over more GPUs with xgboost.dask."),
                    r("A smaller max_bin shrinks the histograms and the quantised matrix."),
                    see(),
                ],
            )
        }
        Framework::Catboost => {
            let title = match (req.as_deref(), f.free_bytes) {
                (Some(n), Some(free)) => format!("CatBoost's GPU memory pool could not fit {n}; {} was left in the pool", fmt_bytes(free)),
                _ => "CatBoost's GPU code ran out of device memory".into(),
            };
            (
                if oom.format == "catboost-pool" { Cause::FrameworkAllocations } else { Cause::NoNumbers },
                title,
                "CatBoost takes one pool at start-up, gpu_ram_part (default 0.95) of the GPU's memory, and serves its buffers from it (stack_like_memory_pool.h); \"Free\" is what is left in that pool after defragmenting, not on the device.".into(),
                vec![
                    r("Keep categorical features' data in host memory: gpu_cat_features_storage='CpuPinnedMemory'."),
                    r("Run one GPU training at a time (a hyper-parameter search that trains several models in parallel shares the card), and free the GPU of other processes before training; gpu_ram_part up to 1.0 when nothing else needs the card."),
                    r("Train on a sample of the rows, or fewer features."),
                    see(),
                ],
            )
        }
        Framework::Lightgbm if oom.format == "lightgbm-opencl" => (
            Cause::NoNumbers,
            "LightGBM's OpenCL GPU learner could not allocate a device buffer".into(),
            "OpenCL answered CL_MEM_OBJECT_ALLOCATION_FAILURE through Boost.Compute (\"Memory Object Allocation Failure\") for a buffer of LightGBM's GPU learner (device_type='gpu'), which holds the binned feature data and histograms. OpenCL caps a single buffer at the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE, on NVIDIA's driver a quarter of the card, so this can fail with memory still free. The message gives no size.".into(),
            vec![
                r("A smaller max_bin, or fewer rows or features per training, shrinks the binned data on the GPU."),
                r("LightGBM 4's CUDA learner (device_type='cuda') allocates with cudaMalloc, without OpenCL's per-buffer cap."),
                see(),
            ],
        ),
        Framework::Lightgbm => (
            Cause::NoNumbers,
            "LightGBM's CUDA code ran out of device memory".into(),
            "A CUDA call in LightGBM's CUDA build (CUDASUCCESS_OR_FATAL, cuda_utils.h) returned error 2, out of memory. The message gives no size.".into(),
            vec![
                see(),
                r("Get numbers: run the job under `gpumon log --processes --interval 200ms` and read the last samples before the failure."),
            ],
        ),
        Framework::Faiss => {
            let n = req.unwrap_or_else(|| "memory".into());
            let (detail, remedies) = match oom.format {
                "faiss-temp-buffer" => (
                    "FAISS could not reserve its temporary-memory stack: StandardGpuResources takes it as one block (512 MiB on cards up to 4 GiB, 1 GiB up to 8 GiB, at most 1.5 GiB) when it first starts on a device (StackDeviceMemory.cpp), so the GPU was already nearly full before the index was used, often with another library's memory in the same process (a framework's cache) or other processes.",
                    vec![
                        r("Start FAISS's GPU resources before the other library fills the GPU, or free that memory first (a caching allocator's cache: torch.cuda.empty_cache())."),
                        r("StandardGpuResources.setTempMemory(bytes) reserves a smaller stack (noTempMemory() for none; larger needs are then allocated one by one)."),
                        see(),
                    ],
                ),
                "faiss-temp-overflow" => (
                    "One search's or add's scratch need was larger than FAISS's temporary-memory stack, so it was allocated alone (TemporaryMemoryOverflow), and that cudaMalloc failed. It grows with the number of queries and k in one call.",
                    vec![
                        r("Search (or add) in smaller batches of queries, or with a smaller k: the scratch need scales with both."),
                        see(),
                    ],
                ),
                _ => (
                    "FAISS could not allocate an index's own data (its vectors, codes or inverted lists) on the GPU: the index does not fit beside what the card already holds. The message gives no other figure.",
                    vec![
                        r("Shard the index over several GPUs (faiss.index_cpu_to_all_gpus with GpuMultipleClonerOptions.shard = True)."),
                        r("Store it smaller: float16 for a flat index (GpuIndexFlatConfig.useFloat16), or a compressed index (IVF-PQ) instead of a flat one."),
                        see(),
                    ],
                ),
            };
            (
                Cause::RequestOnly,
                format!("FAISS could not cudaMalloc {n} on the GPU"),
                detail.to_owned(),
                remedies,
            )
        }
        Framework::Mindspore if oom.memory == super::MemoryKind::Host => (
            Cause::HostMemory,
            format!(
                "The host's RAM ran out{}: MindSpore's CPU device, not an accelerator",
                req.map(|n| format!(" allocating {n}")).unwrap_or_default()
            ),
            "MindSpore prints \"Memory isn't enough and alloc failed\" without a Device(id:…) for its CPU device context: a kernel's output on the host could not be allocated.".into(),
            vec![
                r("See what the host has free (free -h) and what else holds it; a container's memory limit counts too."),
                r("A smaller batch_size, or check for an unexpectedly large shape in the kernel the message names."),
            ],
        ),
        Framework::Mindspore => {
            let limit = oom.format == "mindspore-pool";
            let title = match (req.as_deref(), f.total_bytes) {
                (Some(n), Some(t)) if limit => format!("MindSpore's memory pool could not fit {n}; its limit is {}", fmt_bytes(t)),
                (Some(n), Some(t)) => format!("MindSpore could not fit {n} of static memory on a device with {} of HBM", fmt_bytes(t)),
                (Some(n), None) => format!("MindSpore could not allocate {n} on the device"),
                _ => "MindSpore ran out of device memory".into(),
            };
            (
                Cause::FrameworkAllocations,
                title,
                "MindSpore takes the device's memory into its own pool at start-up, up to max_device_memory, and serves every kernel's outputs and the graph's static memory from it: when the pool is full, the allocation fails (the kernel named in the message is where, not necessarily why).".into(),
                vec![
                    r("Reduce batch_size, as MindSpore's own message says, or look for an unexpectedly large shape."),
                    r("Recompute activations instead of keeping them: cell.recompute() on the repeated blocks."),
                    r("If other processes do not need the device, a larger pool: mindspore.set_context(max_device_memory=\"…GB\") (mindspore.runtime.set_memory(max_size=…) in newer releases)."),
                    see(),
                ],
            )
        }
        Framework::Onnxruntime if oom.format == "onnxruntime-arena-limit" => (
            Cause::FrameworkSettings,
            match (req.as_deref(), f.free_bytes) {
                (Some(n), Some(left)) => format!("ONNX Runtime's arena reached its memory limit: {n} requested, {} left under the limit", fmt_bytes(left)),
                _ => "ONNX Runtime's arena reached its memory limit".into(),
            },
            "ONNX Runtime's BFC arena would not grow past its memory limit (the CUDA execution provider's gpu_mem_limit), so no cudaMalloc was tried: the limit, not necessarily the GPU, was reached. The arena keeps what it has allocated for reuse and does not give it back by default, so it only grows over a session's life.".into(),
            vec![
                r("Raise gpu_mem_limit in the CUDA execution provider's options, if the GPU has room (`gpumon once`)."),
                r("arena_extend_strategy='kSameAsRequested' grows the arena by what is asked instead of doubling it (kNextPowerOfTwo, the default)."),
                r("Smaller inputs or batches per run; or let the arena shrink after each run (RunOptions config 'memory.enable_memory_arena_shrinkage' = 'gpu:0'), or recreate the session to give its memory back."),
            ],
        ),
        _ => return None,
    };
    Some(Finding {
        cause,
        title,
        detail,
        remedies,
    })
}

// A GPU API's status as a program relays it (the table in `api.rs`).
/// The diagnosis of an OOM read here: which API said it, what its status means, and what
/// helps (a program's own remedy only where its source or documentation says it).
fn gpu_api_finding(o: &Oom) -> Option<Finding> {
    if let Some(p) = api::program_of(o) {
        return program_finding(o, p);
    }
    let status = api::status_of(o);
    let said = match (status, o.format) {
        (Some(s), _) => format!("{}'s {} ({})", s.api.name(), s.name, number_text(s)),
        (None, "caffe-check" | "glog-check") => {
            "CUDA's status 2, cudaErrorMemoryAllocation (\"out of memory\"), in a glog CHECK"
                .to_owned()
        }
        (None, "darknet-cuda" | "opencv-cuda" | "cuda-relay") => {
            "CUDA's status 2, cudaErrorMemoryAllocation (\"out of memory\")".to_owned()
        }
        _ => return None,
    };
    if o.memory == MemoryKind::PinnedHost {
        return None;
    }
    if o.memory == MemoryKind::Host {
        return Some(Finding {
            cause: Cause::HostMemory,
            title: "The host's RAM ran out, not the GPU's memory".into(),
            detail: format!(
                "The program relays {said}: an allocation of host memory (the driver's or \
                 runtime's own bookkeeping, a staging or mapped buffer) failed. The GPU's memory \
                 is not what ran out."
            ),
            remedies: vec![
                api_rm("See what the host has free (`free -h`) and what else holds it; a container's memory limit or `ulimit -v` counts too."),
                api_rm("Lower what the program keeps in host memory at once (batch, input size, the number of buffers or queues it creates)."),
            ],
        });
    }
    let program = match o.framework {
        Framework::Caffe | Framework::Darknet | Framework::OpenCv | Framework::Lightgbm => {
            format!("{} relays ", o.framework.name())
        }
        _ => "The program relays ".to_owned(),
    };
    let mut detail =
        format!("{program}{said}: a device allocation did not fit in the GPU's free memory.");
    let meaning = match status.map(|s| (s.api, s.kind)) {
        Some((api::Api::OpenCl, api::Kind::Resources)) => " CL_OUT_OF_RESOURCES means the implementation could not get resources on the device; beside an allocation that is most often memory (NVIDIA's OpenCL returns it for a buffer that does not fit), but the same code is what an out-of-bounds access in a kernel surfaces as, so check the kernel's indices if memory was free.",
        Some((api::Api::Windows, _)) => " E_OUTOFMEMORY is Windows' generic out-of-memory code: Direct3D (11 and 12) returns it when a resource or its heap cannot be made, which on a discrete GPU is its dedicated memory, on an integrated GPU (or once the driver spills) the shared system memory; a host allocation failing inside DirectML reads the same.",
        Some((api::Api::Synapse, _)) => " On Gaudi this is the HPU's HBM: a tensor, or the workspace the graph compiler needs for a compiled graph, did not fit.",
        Some((api::Api::Metal, _)) => " Metal refused the command buffer: what the work needs exceeds what macOS lets the GPU wire (its recommended working set, a share of the unified memory).",
        _ => "",
    };
    detail.push_str(meaning);
    detail.push_str(match o.facts.requested_bytes {
        Some(_) => " The size is the one the message prints; what held the rest of the memory is not in the text.",
        None => " The message gives no size, and what held the memory is not in the text.",
    });
    let mut remedies = vec![api_rm(match status.map(|s| s.api) {
        Some(api::Api::Synapse) => "See each HPU's memory and processes: `hl-smi`.",
        Some(api::Api::LevelZero) => "See what the GPU holds: `xpu-smi stats -d 0` (or `intel_gpu_top`); close other programs using it.",
        Some(api::Api::Windows) => "See what the GPU holds: Task Manager → Performance → GPU shows dedicated and shared GPU memory, and the Details tab's GPU memory columns each process's share; close other programs using it.",
        Some(api::Api::Metal) => "See what else uses the Mac's memory (Activity Monitor → Memory); close other GPU programs.",
        Some(api::Api::OpenGl) => "Release textures, framebuffers and buffers no longer drawn, and load textures at the size they are shown. On a phone or an integrated GPU this memory is the system's RAM: `adb shell dumpsys meminfo <package>` shows an Android app's graphics memory.",
        _ => "See what holds the GPU now: `gpumon once` lists every process and its memory; close other programs using it.",
    })];
    match o.framework {
        // AlexeyAB/darknet README ("if error Out of memory occurs then in .cfg-file you should
        // increase subdivisions=16, 32 or 64") and `dark_cuda.c`'s own hint.
        Framework::Darknet => remedies.push(api_rm("Raise `subdivisions` in the .cfg (16, 32 or 64): each forward pass then holds batch/subdivisions images, and the batch stays the same; or lower `width`/`height`.")),
        // Caffe's `solver.proto`: iter_size accumulates gradients over that many batches.
        Framework::Caffe => remedies.push(api_rm("Lower `batch_size` in the data layers of the train and test nets (the test net is on the GPU too), and raise the solver's `iter_size` by the same factor to keep the effective batch.")),
        // A game's or a graphics program's own API: its settings, not a batch.
        Framework::Direct3d | Framework::Vulkan | Framework::OpenGl => remedies.push(api_rm("Lower the resolution and texture quality (a game's or a renderer's settings), or the size of what the program creates at once; on a card with little memory, that is what makes it fit.")),
        _ => remedies.push(api_rm("Ask for less at once: a smaller batch, image or tile size, model or buffer; or run it on a GPU with more free memory.")),
    }
    remedies.push(get_numbers());
    Some(Finding {
        cause: request_or_nothing(o),
        // The program where the text names it, else the API.
        title: format!(
            "{} ran out of device memory",
            match status {
                Some(s) if o.framework == s.api.framework() => s.api.name(),
                _ => o.framework.name(),
            }
        ),
        detail,
        remedies,
    })
}

/// The last remedy when the text gives too few figures: measure the next run.
fn get_numbers() -> Remedy {
    api_rm("Get numbers: run the job under `gpumon log --processes --interval 200ms` (or `gpumon run`) and read the last samples before the failure.")
}

/// What a message that names no holder shows: its request, or nothing.
fn request_or_nothing(o: &Oom) -> Cause {
    let f = &o.facts;
    // The program's own limit, with what was free under it: its own allocations filled it.
    if f.total_is_limit && f.free_bytes.is_some() && f.requested_bytes.is_some() {
        Cause::FrameworkAllocations
    } else if f.requested_bytes.is_some() {
        Cause::RequestOnly
    } else {
        Cause::NoNumbers
    }
}

/// A program of `api.rs`'s table (Blender, FFmpeg, OpenMM, hashcat …) in its own words: its
/// meaning and its own remedies, between seeing what holds the GPU and getting numbers. Pinned
/// host memory is left to the rule for it.
fn program_finding(o: &Oom, p: &api::Program) -> Option<Finding> {
    match o.memory {
        MemoryKind::PinnedHost => return None,
        MemoryKind::Host => {
            return Some(Finding {
                cause: Cause::HostMemory,
                title: format!("{}: the host's RAM ran out, not the GPU's memory", p.name),
                detail: format!(
                    "{} failed to allocate host memory (its message names the host's, not the \
                     device's). The GPU's memory is not what ran out.",
                    p.name
                ),
                remedies: vec![
                    api_rm("See what the host has free (`free -h`) and what else holds it; a container's memory limit or `ulimit -v` counts too."),
                ],
            });
        }
        _ => {}
    }
    let mut detail = p.meaning.to_owned();
    let f = &o.facts;
    match (f.requested_bytes, f.free_bytes, f.total_bytes) {
        (Some(n), Some(free), Some(total)) => detail.push_str(&format!(
            " It asked for {} with {} free of {}{}.",
            fmt_bytes(n),
            fmt_bytes(free),
            fmt_bytes(total),
            if f.total_is_limit {
                " (the program's own limit)"
            } else {
                ""
            }
        )),
        // One buffer over the largest the device allows (nanominer's DAG on AMD's OpenCL,
        // sgminer's pad), whatever is free.
        (Some(n), _, _) if f.max_alloc_bytes.is_some_and(|m| n > m) => detail.push_str(&format!(
            " It asked for {} in one buffer, more than the {} the device allows in one allocation: that one buffer cannot be made however much is free.",
            fmt_bytes(n),
            fmt_bytes(f.max_alloc_bytes.unwrap_or_default())
        )),
        (Some(n), None, Some(total)) if n > total => detail.push_str(&format!(
            " It asked for {}, more than the whole device's {}: no amount of freeing makes it fit.",
            fmt_bytes(n),
            fmt_bytes(total)
        )),
        (Some(_), _, _) => detail.push_str(" The size is the one the message prints; what held the rest of the memory is not in the text."),
        (None, _, _) => detail.push_str(" The message gives no size, and what held the memory is not in the text."),
    }
    let mut remedies = vec![api_rm(p.device.see)];
    remedies.extend(p.remedies.iter().map(|r| api_rm(r)));
    // Sampling gets the numbers only on a device NVML sees (not a phone's GPU, an NPU or a
    // Tenstorrent card), and not inside a kernel's malloc heap.
    if p.device.sampled {
        remedies.push(get_numbers());
    }
    Some(Finding {
        cause: request_or_nothing(o),
        title: match o.facts.requested_bytes {
            Some(n) => format!(
                "{} could not allocate {} on the {}",
                p.name,
                fmt_bytes(n),
                p.device.name
            ),
            None => format!("{} ran out of {} memory", p.name, p.device.name),
        },
        detail,
        remedies,
    })
}

fn api_rm(text: &str) -> Remedy {
    Remedy {
        text: text.to_owned(),
        saves_bytes: None,
    }
}

/// A status's number as its header writes it: hex for HRESULTs and Level Zero's results.
fn number_text(s: &api::Status) -> String {
    match s.api {
        api::Api::Windows => format!("0x{:08X}", s.number as u32),
        api::Api::LevelZero => format!("0x{:08X}", s.number),
        _ => s.number.to_string(),
    }
}

#[cfg(test)]
mod tests {

    /// A program of `api.rs`'s table is named, with its own meaning and remedies; its host
    /// and pinned-host failures are said as such.
    #[test]
    fn programs_are_named_with_their_own_remedies() {
        let cases: &[(&str, &str, &str)] = &[
            ("[h264_nvenc @ 0x4] OpenEncodeSessionEx failed: out of memory (10): (no details)", "FFmpeg (NVENC)", "encoder.stats.sessionCount"),
            ("Error: System is out of GPU memory", "Blender Cycles", "Texture Limit"),
            ("openmm.OpenMMException: Error creating array interactingAtoms: CUDA_ERROR_OUT_OF_MEMORY (2)", "OpenMM", "ewaldErrorTolerance"),
            ("hashcat (v6.2.6) starting\ncuMemAlloc(): CUDA_ERROR_OUT_OF_MEMORY", "hashcat", "-O"),
            ("realesrgan-ncnn-vulkan -i a.png -o b.png\nvkAllocateMemory failed -2", "ncnn (Vulkan)", "-t 256"),
            ("Allocation of the device buffer failed. CUDA error #2 (cudaErrorMemoryAllocation): out of memory.", "GROMACS", "-ntmpi"),
        ];
        for (text, name, remedy) in cases {
            let a = crate::oom::analyze(text);
            let o = a.main().unwrap_or_else(|| panic!("not found: {text}"));
            let f = &diagnose(o)[0];
            assert!(f.title.starts_with(name), "{text}: {}", f.title);
            assert!(
                f.remedies.iter().any(|r| r.text.contains(remedy)),
                "{text}: {:?}",
                f.remedies
            );
        }
        let nvenc = crate::oom::analyze(
            "[h264_nvenc @ 0x4] OpenEncodeSessionEx failed: out of memory (10)",
        );
        let f = &diagnose(nvenc.main().expect("found"))[0];
        assert!(f.detail.contains("concurrent encodes"), "{}", f.detail);
        let host = crate::oom::analyze("Kokkos failed to allocate memory for label \"x\".  Allocation using MemorySpace named \"Host\" failed with the following error:  Allocation of size 12 G failed, likely due to insufficient memory.");
        assert_eq!(
            diagnose(host.main().expect("found"))[0].cause,
            Cause::HostMemory
        );
        let pinned = crate::oom::analyze("Kokkos failed to allocate memory for label \"b\".  Allocation using MemorySpace named \"CudaHostPinned\" failed with the following error:  Allocation of size 2 G failed, likely due to insufficient memory.");
        assert_ne!(
            diagnose(pinned.main().expect("found"))[0].cause,
            Cause::NoNumbers
        );
    }

    /// A GPU API's host status is said to be the host's RAM, and OpenCV's page-locked buffer
    /// pinned host memory (the statuses are read in `api.rs`).
    #[test]
    fn gpu_api_host_statuses_are_said_as_host_memory() {
        for text in [
            "vkCreateBuffer failed: VK_ERROR_OUT_OF_HOST_MEMORY",
            "clCreateCommandQueue failed: CL_OUT_OF_HOST_MEMORY",
            "synHostMalloc failed: synStatus 3 [Out of HOST memory (OOM)]",
            "DirectML: HRESULT 0x80070008",
        ] {
            let a = crate::oom::analyze(text);
            let o = a.main().unwrap_or_else(|| panic!("not found: {text}"));
            assert_eq!(diagnose(o)[0].cause, Cause::HostMemory, "{text}");
        }
        let a = crate::oom::analyze("opencv/modules/core/src/cuda_host_mem.cpp:95: error: (-217:Gpu API call) out of memory in function 'allocate'");
        let o = a.main().expect("found");
        assert_eq!(diagnose(o)[0].cause, Cause::PinnedHostMemory);
    }
    use super::*;
    use crate::oom::analyze;

    fn findings(text: &str) -> Vec<Finding> {
        diagnose(analyze(text).main().expect("an OOM"))
    }

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn message(framework: Framework, format: &'static str, facts: super::super::Facts) -> Oom {
        crate::oom::known::oom(framework, format, None, facts)
    }

    fn facts() -> super::super::Facts {
        super::super::Facts::default()
    }

    fn pytorch(facts: super::super::Facts) -> Oom {
        message(Framework::Pytorch, "pytorch-2.x", facts)
    }

    /// What a general rule says about a message, with no findings before it.
    fn cause(rule: Rule, oom: &Oom) -> Option<Cause> {
        rule(oom, None, &[]).map(|x| x.cause)
    }

    /// The libraries with allocators of their own get their own levers, never a framework's
    /// (no PyTorch, TensorFlow or JAX setting), and MindSpore's CPU device is host memory.
    #[test]
    fn gpu_libraries_get_their_own_levers() {
        let texts = [
            "Memory allocation error on worker 0: std::bad_alloc: cudaErrorMemoryAllocation: out of memory\n- Free memory: 8126464\n- Requested memory: 33554432",
            "(NCudaLib::TOutOfMemoryError) catboost/cuda/cuda_lib/memory_pool/stack_like_memory_pool.h:303: Error: Out of memory. Requested 8880 MB; Free 5902.061425 MB",
            "[LightGBM] [Fatal] [CUDA] out of memory /LightGBM/src/cuda/cuda_utils.cpp 26",
            "Error: 'err == cudaSuccess' failed: StandardGpuResources: alloc fail type TemporaryMemoryBuffer dev 0 space Device stream 0x1 size 1610612736 bytes (cudaMalloc error out of memory [2])",
            "RuntimeError: Memory not enough: Device(id:0) memory isn't enough and alloc failed, kernel name: Default/Conv2D-op1, alloc size: 536870912B.",
        ];
        for text in texts {
            let f = findings(text);
            assert_eq!(f.len(), 1, "{text}: {f:?}");
            let all: String = f[0].remedies.iter().map(|r| r.text.as_str()).collect();
            for framework_lever in ["PYTORCH_", "TF_FORCE", "XLA_PYTHON"] {
                assert!(!all.contains(framework_lever), "{text}: {all}");
            }
        }
        let f = findings("Error: 'err == cudaSuccess' failed: StandardGpuResources: alloc fail type TemporaryMemoryBuffer dev 0 space Device stream 0x1 size 1610612736 bytes (cudaMalloc error out of memory [2])");
        assert!(f[0]
            .remedies
            .iter()
            .any(|r| r.text.contains("setTempMemory")));
        let f = findings("StandardGpuResources: alloc fail type TemporaryMemoryOverflow dev 0 space Device stream 0x7effcc5f47a0 size 4513349632 bytes (cudaMalloc error out of memory [2])");
        assert!(f[0].remedies[0].text.contains("smaller batches"), "{f:?}");
        let f = findings("RuntimeError: Memory isn't enough and alloc failed, kernel name: Default/Add-op1, alloc size: 4096B.");
        assert_eq!(f[0].cause, Cause::HostMemory);
        let f = findings("Memory allocation error on worker 0: std::bad_alloc: cudaErrorMemoryAllocation: out of memory\n- Free memory: 11310923776\n- Requested memory: 47996");
        assert!(f[0].detail.contains("larger than the request"), "{f:?}");
    }

    #[test]
    fn rule_names_are_unique() {
        let mut names: Vec<&str> = ALONE
            .iter()
            .map(|(n, _)| *n)
            .chain(RULES.iter().map(|(n, _)| *n))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
    }

    #[test]
    fn unrecognised_message_only_for_unknown_wording() {
        let o = message(Framework::Unknown, "unrecognised", facts());
        assert_eq!(
            unrecognised_message(&o).map(|x| x.cause),
            Some(Cause::Unrecognised)
        );
        assert!(unrecognised_message(&pytorch(facts())).is_none());
    }

    #[test]
    fn vllm_rs_message_only_for_vllm_rs() {
        let o = message(Framework::VllmRs, "vllm-rs-request", facts());
        assert!(vllm_rs_message(&o).is_some());
        assert!(vllm_rs_message(&pytorch(facts())).is_none());
    }

    #[test]
    fn trtllm_executor_message_only_for_its_report() {
        let o = message(Framework::TensorrtLlm, "trtllm-executor", facts());
        assert!(trtllm_executor_message(&o).is_some());
        let o = message(Framework::TensorrtLlm, "trtllm", facts());
        assert!(trtllm_executor_message(&o).is_none());
    }

    #[test]
    fn kv_tokens_needs_both_counts() {
        let mut o = message(Framework::Vllm, "vllm-kv-tokens", facts());
        assert!(kv_tokens(&o).is_none());
        o.kv_tokens = Some((32768, 20000));
        assert!(kv_tokens(&o).is_some());
    }

    #[test]
    fn not_device_memory_says_which_memory() {
        use super::super::MemoryKind;
        let mut o = pytorch(facts());
        assert!(not_device_memory(&o).is_none());
        for (kind, cause) in [
            (MemoryKind::SharedMemory, Cause::SharedMemory),
            (MemoryKind::Host, Cause::HostMemory),
            (MemoryKind::PinnedHost, Cause::PinnedHostMemory),
            (MemoryKind::Buffers, Cause::BufferCount),
        ] {
            o.memory = kind;
            assert_eq!(
                not_device_memory(&o).map(|x| x.cause),
                Some(cause),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_zero_byte_request_is_an_empty_tensor() {
        let zero = super::super::Facts {
            requested_bytes: Some(0),
            ..facts()
        };
        let o = message(Framework::Tensorflow, "tensorflow-eigen", zero.clone());
        let f = diagnose(&o);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].cause, Cause::ZeroByteRequest);
        assert!(f[0].detail.contains("empty tensor"), "{:?}", f[0]);
        // A request of some bytes, or another framework's zero, is not this.
        let some = super::super::Facts {
            requested_bytes: Some(1 << 20),
            ..facts()
        };
        assert_ne!(
            diagnose(&message(Framework::Tensorflow, "tensorflow-eigen", some))[0].cause,
            Cause::ZeroByteRequest
        );
        assert_ne!(
            diagnose(&message(Framework::Cupy, "cupy", zero))[0].cause,
            Cause::ZeroByteRequest
        );
    }

    #[test]
    fn gaudi_device_memory_only_for_its_message() {
        let o = message(
            Framework::Hpu,
            "hpu-pt-devmem",
            super::super::Facts {
                requested_bytes: Some(224 * MIB),
                ..facts()
            },
        );
        let x = gaudi_device_memory(&o).expect("a finding");
        assert!(
            x.title.starts_with("224.0 MiB of the HPU's memory"),
            "{}",
            x.title
        );
        assert!(x.remedies[0].text.contains("hl-smi"));
        let o = message(Framework::Hpu, "pytorch-fork-2.x", facts());
        assert!(gaudi_device_memory(&o).is_none());
    }

    #[test]
    fn gaudi_graph_workspace_only_for_synhelper() {
        let o = message(
            Framework::Hpu,
            "hpu-synhelper-workspace",
            super::super::Facts {
                requested_bytes: Some(10 * GIB),
                ..facts()
            },
        );
        let x = gaudi_graph_workspace(&o).expect("a finding");
        assert!(x.title.contains("workspace"), "{}", x.title);
        assert!(x.remedies[0].text.contains("hl-smi"));
        let o = message(Framework::Hpu, "hpu-pt-devmem", facts());
        assert!(gaudi_graph_workspace(&o).is_none());
    }

    #[test]
    fn ascend_runtime_is_not_torch_npus_allocator() {
        let mut o = message(
            Framework::Npu,
            "ascend-el0004",
            super::super::Facts {
                requested_bytes: Some(3 * GIB),
                ..facts()
            },
        );
        o.device_index = Some(0);
        let x = ascend_runtime(&o).expect("a finding");
        assert_eq!(x.cause, Cause::RequestOnly);
        assert!(x.title.contains("3.0 GiB on NPU 0"), "{}", x.title);
        let all: String = x.remedies.iter().map(|r| r.text.clone()).collect();
        assert!(
            all.contains("npu-smi info") && !all.contains("gpumon once"),
            "{all}"
        );
        o.format = "pytorch-fork-2.x";
        assert!(ascend_runtime(&o).is_none());
    }

    #[test]
    fn host_memory_speaks_of_llama_cpp_only_for_llama_cpp() {
        let mut o = message(Framework::Paddle, "paddle-bad-alloc", facts());
        o.memory = super::super::MemoryKind::Host;
        let x = not_device_memory(&o).expect("a finding");
        assert_eq!(x.cause, Cause::HostMemory);
        let all = format!(
            "{} {}",
            x.detail,
            x.remedies
                .iter()
                .map(|r| r.text.clone())
                .collect::<String>()
        );
        assert!(!all.contains("llama.cpp") && !all.contains("-ngl"), "{all}");
        assert!(x.detail.contains("PaddlePaddle"), "{}", x.detail);
        let mut o = message(Framework::Ggml, "ggml-cpu-buffer", facts());
        o.memory = super::super::MemoryKind::Host;
        assert!(not_device_memory(&o)
            .expect("a finding")
            .detail
            .contains("llama.cpp"));
    }

    #[test]
    fn tpu_on_chip_memory_gets_its_own_remedies_not_hbms() {
        let mut o = message(
            Framework::Jax,
            "xla-tpu-vmem",
            super::super::Facts {
                requested_bytes: Some(32 * MIB),
                ..facts()
            },
        );
        o.memory = super::super::MemoryKind::TpuOnChip;
        o.memory_limit_bytes = Some(16 * MIB);
        let x = not_device_memory(&o).expect("a finding");
        assert_eq!(x.cause, Cause::TpuOnChipMemory);
        assert!(x.title.contains("32.0 MiB of VMEM"), "{}", x.title);
        let all: String = x.remedies.iter().map(|r| r.text.clone()).collect();
        assert!(all.contains("xla_tpu_scoped_vmem_limit_kib"), "{all}");
        assert!(
            !all.contains("jax.checkpoint") && !all.contains("Shard"),
            "{all}"
        );
        o.format = "xla-tpu-smem";
        let x = not_device_memory(&o).expect("a finding");
        assert!(x.title.contains("SMEM"), "{}", x.title);
    }

    #[test]
    fn xla_tpu_hbm_puts_the_larger_part_first() {
        let mut f = super::super::Facts {
            requested_bytes: Some(36 * GIB),
            total_bytes: Some(31 * GIB),
            program_bytes: Some(30 * GIB),
            arguments_bytes: Some(6 * GIB),
            ..facts()
        };
        let x = xla_tpu_hbm(&message(Framework::Jax, "xla-tpu-hbm", f.clone())).expect("a finding");
        assert!(x.detail.contains("takes 30.0 GiB"), "{}", x.detail);
        assert!(x.remedies[0].text.starts_with("Halve"), "{:?}", x.remedies);
        f.program_bytes = Some(2 * GIB);
        f.arguments_bytes = Some(34 * GIB);
        let x = xla_tpu_hbm(&message(Framework::Jax, "xla-tpu-hbm", f)).expect("a finding");
        assert!(x.remedies[0].text.starts_with("Shard"), "{:?}", x.remedies);
    }

    #[test]
    fn xla_tpu_hbm_says_how_much_too_much() {
        let o = message(
            Framework::Jax,
            "xla-tpu-hbm",
            super::super::Facts {
                requested_bytes: Some(20 * GIB),
                total_bytes: Some(16 * GIB),
                ..facts()
            },
        );
        let x = xla_tpu_hbm(&o).expect("its finding");
        assert_eq!(x.cause, Cause::RequestExceedsTotal);
        assert!(x.title.contains("(4.0 GiB too much)"), "{}", x.title);
        assert!(xla_tpu_hbm(&message(Framework::Jax, "jax", facts())).is_none());
    }

    #[test]
    fn xpu_4gb_limit_only_for_its_message() {
        let o = message(Framework::Xpu, "xpu-4gb-limit", facts());
        assert!(xpu_4gb_limit(&o).is_some());
        assert!(xpu_4gb_limit(&message(Framework::Xpu, "pytorch-1.5", facts())).is_none());
    }

    #[test]
    fn vllm_startup_guard_only_for_the_guard() {
        let o = message(Framework::Vllm, "vllm-startup", facts());
        assert!(vllm_startup_guard(&o).is_some());
        let o = message(Framework::Vllm, "vllm-kv-cache", facts());
        assert!(vllm_startup_guard(&o).is_none());
    }

    #[test]
    fn request_exceeds_total_only_when_larger_than_the_card() {
        let mut f = super::super::Facts {
            requested_bytes: Some(10 * GIB),
            total_bytes: Some(8 * GIB),
            ..facts()
        };
        assert_eq!(
            cause(request_exceeds_total, &pytorch(f.clone())),
            Some(Cause::RequestExceedsTotal)
        );
        f.requested_bytes = Some(GIB);
        assert_eq!(cause(request_exceeds_total, &pytorch(f)), None);
    }

    #[test]
    fn process_cap_when_reserved_and_request_pass_it() {
        let mut f = super::super::Facts {
            requested_bytes: Some(512 * MIB),
            reserved_bytes: Some(3 * GIB + 800 * MIB),
            allowed_bytes: Some(4 * GIB),
            ..facts()
        };
        assert_eq!(
            cause(process_cap, &pytorch(f.clone())),
            Some(Cause::ProcessCap)
        );
        f.allowed_bytes = Some(40 * GIB);
        assert_eq!(cause(process_cap, &pytorch(f)), None);
    }

    #[test]
    fn other_processes_when_they_hold_memory() {
        let mut f = super::super::Facts {
            requested_bytes: Some(GIB),
            free_bytes: Some(100 * MIB),
            other_processes_bytes: Some(5 * GIB),
            ..facts()
        };
        let x = other_processes(&pytorch(f.clone()), None, &[]).expect("a finding");
        assert_eq!(x.cause, Cause::OtherProcesses);
        assert!(x.detail.contains("would fit"), "{}", x.detail);
        f.other_processes_bytes = Some(0);
        assert_eq!(cause(other_processes, &pytorch(f)), None);
    }

    #[test]
    fn device_in_use_only_with_the_device_wide_figure() {
        let f = super::super::Facts {
            device_used_bytes: Some(7 * GIB),
            ..facts()
        };
        let o = message(Framework::Paddle, "paddle", f);
        assert_eq!(cause(device_in_use, &o), Some(Cause::DeviceInUse));
        assert_eq!(cause(device_in_use, &pytorch(facts())), None);
    }

    #[test]
    fn fragmentation_needs_a_cache_as_large_as_the_request_and_a_caching_allocator() {
        let f = super::super::Facts {
            requested_bytes: Some(GIB),
            reserved_unallocated_bytes: Some(2 * GIB),
            ..facts()
        };
        let x = fragmentation(&pytorch(f.clone()), None, &[]).expect("a finding");
        assert_eq!(x.cause, Cause::Fragmentation);
        assert!(x.remedies[2]
            .text
            .contains("empty_cache() will not fix this"));
        let tf = message(Framework::Tensorflow, "tensorflow-bfc", f.clone());
        assert_eq!(cause(fragmentation, &tf), None);
        let small = super::super::Facts {
            reserved_unallocated_bytes: Some(GIB / 2),
            ..f
        };
        assert_eq!(cause(fragmentation, &pytorch(small)), None);
    }

    #[test]
    fn held_by_framework_when_it_holds_half_the_card_and_the_request_fits_the_card() {
        let f = super::super::Facts {
            requested_bytes: Some(GIB),
            total_bytes: Some(8 * GIB),
            allocated_bytes: Some(7 * GIB),
            ..facts()
        };
        let o = pytorch(f);
        assert_eq!(
            cause(held_by_framework, &o),
            Some(Cause::FrameworkAllocations)
        );
        let before = request_exceeds_total(
            &pytorch(super::super::Facts {
                requested_bytes: Some(9 * GIB),
                total_bytes: Some(8 * GIB),
                ..facts()
            }),
            None,
            &[],
        )
        .expect("a finding");
        assert!(held_by_framework(&o, None, &[before]).is_none());
        let light = pytorch(super::super::Facts {
            allocated_bytes: Some(GIB),
            total_bytes: Some(8 * GIB),
            ..facts()
        });
        assert_eq!(cause(held_by_framework, &light), None);
    }

    #[test]
    fn one_large_allocation_only_when_nothing_else_explains_it() {
        let o = pytorch(super::super::Facts {
            requested_bytes: Some(4 * GIB),
            free_bytes: Some(GIB),
            allocated_bytes: Some(GIB),
            total_bytes: Some(24 * GIB),
            ..facts()
        });
        let x = one_large_allocation(&o, None, &[]).expect("a finding");
        assert!(
            x.title.starts_with("One allocation of 4.0 GiB"),
            "{}",
            x.title
        );
        // Only the live tensors' figure, and 22 of 24 GiB beyond them: the cache or other
        // processes, which the message does not tell apart (PaddlePaddle/Paddle#18819).
        assert!(
            x.detail.starts_with("Most of the GPU, 22.0 GiB, is held beyond the framework's live tensors: by its allocator's cache or by other processes"),
            "{}",
            x.detail
        );
        // No framework figure at all (PaddlePaddle 1.x's legacy allocator): the message does not
        // say what holds the rest.
        let x = one_large_allocation(
            &pytorch(super::super::Facts {
                allocated_bytes: None,
                ..o.facts.clone()
            }),
            None,
            &[],
        )
        .expect("a finding");
        assert!(
            x.detail.starts_with(
                "Most of the GPU, 23.0 GiB, was in use, and the message does not say by what"
            ),
            "{}",
            x.detail
        );
        // With the reserve known, or the tensors holding most of the GPU, not so.
        for f in [
            super::super::Facts {
                reserved_bytes: Some(22 * GIB),
                ..o.facts.clone()
            },
            super::super::Facts {
                allocated_bytes: Some(20 * GIB),
                free_bytes: Some(3 * GIB),
                ..o.facts.clone()
            },
        ] {
            let x = one_large_allocation(&pytorch(f), None, &[]).expect("a finding");
            assert!(!x.detail.contains("held beyond"), "{}", x.detail);
        }
        let before = held_by_framework(
            &pytorch(super::super::Facts {
                allocated_bytes: Some(7 * GIB),
                total_bytes: Some(8 * GIB),
                ..facts()
            }),
            None,
            &[],
        )
        .expect("a finding");
        assert!(one_large_allocation(&o, None, &[before]).is_none());
    }

    #[test]
    fn xpu_block_limit_over_4_gib_only() {
        let big = message(
            Framework::Xpu,
            "pytorch-2.x",
            super::super::Facts {
                requested_bytes: Some(5 * GIB),
                ..facts()
            },
        );
        assert_eq!(
            cause(xpu_block_limit, &big),
            Some(Cause::RequestExceedsTotal)
        );
        let small = message(
            Framework::Xpu,
            "pytorch-2.x",
            super::super::Facts {
                requested_bytes: Some(3 * GIB),
                ..facts()
            },
        );
        assert_eq!(cause(xpu_block_limit, &small), None);
    }

    #[test]
    fn mps_outside_allocator_only_for_mps() {
        let f = super::super::Facts {
            non_framework_bytes: Some(2 * GIB),
            total_bytes: Some(8 * GIB),
            ..facts()
        };
        let o = message(Framework::Mps, "mps", f.clone());
        assert_eq!(
            cause(mps_outside_allocator, &o),
            Some(Cause::OutsideFramework)
        );
        assert_eq!(cause(mps_outside_allocator, &pytorch(f)), None);
    }

    #[test]
    fn outside_framework_when_a_tenth_of_the_card_is_unaccounted() {
        let mut f = super::super::Facts {
            unaccounted_bytes: Some(2 * GIB),
            total_bytes: Some(8 * GIB),
            ..facts()
        };
        assert_eq!(
            cause(outside_framework, &pytorch(f.clone())),
            Some(Cause::OutsideFramework)
        );
        f.unaccounted_bytes = Some(100 * MIB);
        assert_eq!(cause(outside_framework, &pytorch(f)), None);
    }

    #[test]
    fn no_numbers_says_what_the_library_could_not_allocate() {
        let o = message(Framework::Cuda, "cublas", facts());
        let x = no_numbers(&o, None, &[]).expect("a finding");
        assert_eq!(x.cause, Cause::NoNumbers);
        assert!(x.detail.starts_with("cuBLAS/cuDNN"), "{}", x.detail);
        let o = message(
            Framework::Cuda,
            "cuda",
            super::super::Facts {
                requested_bytes: Some(GIB),
                ..facts()
            },
        );
        assert_eq!(cause(no_numbers, &o), None);
    }

    #[test]
    fn request_only_when_the_request_is_the_only_figure() {
        let mut o = message(
            Framework::Tensorflow,
            "cuda-driver",
            super::super::Facts {
                requested_bytes: Some(GIB),
                ..facts()
            },
        );
        let x = request_only(&o, None, &[]).expect("a finding");
        assert_eq!(x.cause, Cause::RequestOnly);
        assert!(x
            .remedies
            .iter()
            .any(|r| r.text.contains("TF_FORCE_GPU_ALLOW_GROWTH")));
        o.facts.free_bytes = Some(GIB);
        assert_eq!(cause(request_only, &o), None);
    }

    #[test]
    fn unexplained_only_when_no_rule_before_it_spoke() {
        let o = pytorch(super::super::Facts {
            requested_bytes: Some(GIB),
            free_bytes: Some(4 * GIB),
            total_bytes: Some(24 * GIB),
            ..facts()
        });
        assert_eq!(cause(unexplained, &o), Some(Cause::Unexplained));
        let before =
            no_numbers(&message(Framework::Cuda, "cuda", facts()), None, &[]).expect("a finding");
        assert!(unexplained(&o, None, &[before]).is_none());
    }

    #[test]
    fn spill_only_beyond_the_card() {
        let mut f = super::super::Facts {
            total_bytes: Some(8 * GIB),
            spilled_bytes: Some(GIB),
            ..facts()
        };
        assert_eq!(
            cause(spill, &pytorch(f.clone())),
            Some(Cause::SpilledToSystemMemory)
        );
        f.spilled_bytes = None;
        assert_eq!(cause(spill, &pytorch(f)), None);
    }

    /// The serving stacks' own flags (TGI's launcher, SGLang's server arguments, vLLM's engine
    /// arguments), each checked in its source, and none of another stack's.
    #[test]
    fn serving_stacks_get_their_own_flags() {
        let all = |text: &str| {
            findings(text)
                .iter()
                .flat_map(|f| {
                    std::iter::once(f.title.clone())
                        .chain(std::iter::once(f.detail.clone()))
                        .chain(f.remedies.iter().map(|r| r.text.clone()))
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let tgi = all("RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`");
        assert!(tgi.contains("--max-batch-prefill-tokens") && tgi.contains("--num-shard"));
        assert!(!tgi.contains("gpu_memory_utilization") && !tgi.contains("--mem-fraction-static"));
        let tgi = all("Not enough memory to handle `max_total_tokens=8192`");
        assert!(tgi.contains("--max-total-tokens"), "{tgi}");
        let sgl =
            all("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.");
        assert!(sgl.contains("Raise --mem-fraction-static") && sgl.contains("--tp-size"));
        assert!(!sgl.contains("gpu_memory_utilization"));
        let sgl = all("Decode out of memory. Try to lower your batch size.");
        assert!(sgl.contains("--max-running-requests"), "{sgl}");
        let vllm = all("RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.");
        assert!(vllm.contains("max_num_seqs") && vllm.contains("lower gpu_memory_utilization"));
        assert!(!vllm.contains("Raise gpu_memory_utilization"));
        // TVM's storage region: its own rule, not the fallback's "does not know"; an empty
        // region is the plan's fault, not the input's length.
        let tvm = |m: &str| {
            all(&format!("InternalError: Check failed: (offset + needed_size <= this->buffer.size) is false: storage allocation failure, attempted to allocate {m}"))
        };
        let over = tvm("16785408 at offset 0 in region that is 16777216bytes");
        assert!(
            over.contains("context_window_size") && !over.contains("does not know"),
            "{over}"
        );
        let empty = tvm("2048 at offset 0 in region that is 0bytes");
        assert!(
            empty.contains("same TVM and MLC build") && !empty.contains("context_window_size"),
            "{empty}"
        );
        // MLC LLM: the weights alone over its share, or the temporary buffers pushing them over.
        let mlc = |w: &str| {
            all(&format!("Insufficient GPU memory error: The available single GPU memory is 20000.000 MB, which is less than the sum of model weight size ({w} MB) and temporary buffer size (3000.000 MB)."))
        };
        let heavy = mlc("21000.000");
        assert!(
            heavy.contains("--tensor-parallel-shards") && heavy.contains("weights alone"),
            "{heavy}"
        );
        let light = mlc("18000.000");
        assert!(
            light.contains("--prefill-chunk-size") && !light.contains("weights alone"),
            "{light}"
        );
        assert!(!light.contains("--mem-fraction-static") && !light.contains("max_num_seqs"));
    }

    /// PyTorch's allocator warning alone says that the allocator retries, and that no error
    /// after it means the retry succeeded; torch_npu's pinned-host failure names its own call.
    #[test]
    fn the_allocator_warning_and_torch_npus_pinned_host_memory() {
        let f = findings("[W CUDACachingAllocator.cpp:3933] memory allocation failed with OOM on device 0 while trying to allocate 31457280 bytes (free: 47579136, total: 16684941312).");
        let w = f
            .iter()
            .find(|x| x.title.contains("retries"))
            .expect("the warning's finding");
        assert!(w.detail.contains("the retry succeeded"));
        let f = findings("RuntimeError: Malloc pin memory failed, host out of memory, Rried to allocate size: 2147483648, total_allocated_memory: 1073741824, total_reserved_memory: 1073741824.");
        assert_eq!(f[0].cause, Cause::PinnedHostMemory);
        assert!(f[0].detail.contains("not the NPU's memory"));
        assert!(f[0].remedies[0].text.contains("host_empty_cache"));
        assert!(!f[0].remedies.iter().any(|r| r.text.contains("WDDM")));
    }

    #[test]
    fn settings_are_the_frameworks_own_and_not_for_a_tpu() {
        let o = message(Framework::Jax, "jax", facts());
        let x = settings(&o, None, &[]).expect("a finding");
        assert!(x.title.contains("JAX"), "{}", x.title);
        let o = message(Framework::Jax, "xla-tpu-hbm", facts());
        assert_eq!(cause(settings, &o), None);
    }

    #[test]
    fn implausible_figures_are_noted_when_there_are_some() {
        let mut o = pytorch(facts());
        assert_eq!(cause(implausible_figures, &o), None);
        o.facts.implausible.push(super::super::Implausible {
            field: "requested_bytes",
            said_bytes: 1 << 47,
            why: "no GPU holds 128 TiB".into(),
        });
        let x = implausible_figures(&o, None, &[]).expect("a finding");
        assert_eq!(x.cause, Cause::ImplausibleFigures);
        assert!(x.detail.contains("128 TiB"));
    }

    #[test]
    fn xla_tpu_reserve_says_pieces_when_free_is_enough_but_not_in_one_range() {
        let f = findings("RESOURCE_EXHAUSTED: Error loading program 'jit_step': Attempting to reserve 9.62G at the bottom of memory. That was not possible. There are 12.00G free, 0B reserved, and 7.14G reservable.");
        assert_eq!(f[0].cause, Cause::Fragmentation, "{f:?}");
        let f = findings("RESOURCE_EXHAUSTED: Error loading program 'jit_step': Attempting to reserve 9.62G at the bottom of memory. That was not possible. There are 7.14G free, 0B reserved, and 7.14G reservable.");
        assert_eq!(f[0].cause, Cause::FrameworkAllocations);
        let all: String = f
            .iter()
            .flat_map(|x| x.remedies.iter().map(|r| r.text.clone()))
            .collect();
        assert!(
            !all.contains("XLA_PYTHON_CLIENT_MEM_FRACTION"),
            "GPU-only: {all}"
        );
    }

    #[test]
    fn mlx_buffer_size_is_one_array_and_the_count_is_a_count() {
        let f = findings("RuntimeError: [metal::malloc] Attempting to allocate 134767706112 bytes which is greater than the maximum allowed buffer size of 86586540032 bytes.");
        assert_eq!(f[0].cause, Cause::RequestExceedsTotal);
        assert!(f[0]
            .remedies
            .iter()
            .any(|r| r.text.contains("--max-kv-size")));
        let f = findings("RuntimeError: [metal::malloc] Resource limit (499000) exceeded.");
        assert_eq!(f[0].cause, Cause::BufferCount);
        assert!(f[0].title.contains("499000"), "{}", f[0].title);
        assert!(f[0].detail.contains("not bytes"));
        let f = findings("libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)");
        assert!(f[0].title.contains("MLX"), "{}", f[0].title);
        let f = findings("-[MTLDebugDevice newBufferWithBytesNoCopy:length:options:deallocator:]:700: failed assertion `Buffer Validation\nnewBufferWith*:length 0x6692c000 must not exceed 1024 MB.");
        assert_eq!(f[0].cause, Cause::RequestExceedsTotal);
        assert!(f[0].title.contains("1.0 GiB"), "{}", f[0].title);
        assert!(f[0].detail.contains("maxBufferLength"));
    }

    #[test]
    fn the_cpu_allocator_is_the_hosts_memory() {
        let f = findings("RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes.");
        assert_eq!(f[0].cause, Cause::HostMemory);
        assert!(f[0].title.contains("not a GPU"));
    }

    #[test]
    fn allocated_above_the_card_is_said_as_spill() {
        let f = findings("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 8.00 GiB total capacity; 9.50 GiB already allocated; 0 bytes free; 9.60 GiB reserved in total by PyTorch)");
        let spill = f
            .iter()
            .find(|x| x.cause == Cause::SpilledToSystemMemory)
            .expect("a spill finding");
        assert!(
            spill.title.contains("1.6 GiB beyond the card's 8.0 GiB"),
            "{}",
            spill.title
        );
        assert!(spill.remedies[1].text.contains("Sysmem Fallback"));
    }

    #[test]
    fn a_fork_is_told_in_its_own_words() {
        let f = findings("RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; 49.47 GiB already allocated; 49.47 GiB current active; 1.32 GiB free; 57.55 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.");
        assert_eq!(f[0].cause, Cause::Fragmentation, "{f:?}");
        let all: String = f
            .iter()
            .flat_map(|x| x.remedies.iter().map(|r| r.text.clone()))
            .collect();
        assert!(
            all.contains("PYTORCH_NPU_ALLOC_CONF=expandable_segments:True"),
            "{all}"
        );
        assert!(all.contains("npu-smi info"), "{all}");
        assert!(
            !all.contains("PYTORCH_CUDA_ALLOC_CONF") && !all.contains("gpumon once"),
            "{all}"
        );
    }

    /// A Sophgo TPU's bmlib failure is read as the TPU's heap, with libsophon's tools only:
    /// no NVIDIA view, no TensorFlow or JAX setting.
    #[test]
    fn a_sophgo_tpu_gets_libsophon_remedies() {
        let f = findings("[bmlib_memory][error] bm_alloc_gmem failed, dev_id = 2, size = 0x5eec00\nAlloc Device Memory Failed! Program Terminated.");
        let first = f.first().expect("a finding");
        assert!(first.title.contains("on TPU 2"), "{}", first.title);
        let all: String = f
            .iter()
            .flat_map(|x| x.remedies.iter().map(|r| r.text.clone()))
            .collect();
        assert!(all.contains("bm-smi"), "{all}");
        assert!(
            !all.contains("gpumon once") && !all.contains("TF_FORCE_GPU_ALLOW_GROWTH"),
            "{all}"
        );
    }
}
