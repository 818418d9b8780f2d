//! The OOM analyzer: find out-of-memory errors in pasted text, decompose the memory, and say
//! what to do. Pure: no tokio, ratatui or NVML here, so `explain`, the dashboard's paste panel
//! and `run` share it.
//!
//! `scan` (streaming, bounded memory) → `parse` (the first of `families::ALL`, a table of
//! families over `read`'s structural reader and `known`'s exact patterns) → `Facts`
//! (`derive` fills in what the message implies) → `diagnose` (ranked findings) → `render`.

/// A regex compiled once, the first time a text could match it ([`lazy::LazyRegex`]):
/// `re!(name, pattern)` defines `fn name() -> &'static LazyRegex` (a pattern the tests compile;
/// one that does not is a bug, said by its name).
macro_rules! re {
    ($name:ident, $pattern:expr) => {
        fn $name() -> &'static $crate::oom::lazy::LazyRegex {
            static RE: $crate::oom::lazy::LazyRegex =
                $crate::oom::lazy::LazyRegex::new(stringify!($name), || {
                    ::std::string::ToString::to_string(&$pattern)
                });
            &RE
        }
    };
}

pub mod api;
pub mod banner;
pub mod clean;
pub mod diagnose;
pub mod families;
pub mod known;
pub mod lazy;
pub mod libraries;
pub mod parse;
pub mod pickle;
pub mod read;
pub mod render;
pub mod scan;
pub mod snapshot;

use serde::Serialize;

use crate::model::breakdown::{Breakdown, Part, PartKind};

/// Which framework or library raised the error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// PyTorch on CUDA.
    Pytorch,
    /// PyTorch on ROCm (HIP).
    Hip,
    /// PyTorch on Intel GPUs (XPU).
    Xpu,
    /// PyTorch on Apple GPUs (MPS).
    Mps,
    Tensorflow,
    Jax,
    /// The CUDA runtime or a CUDA library (cuBLAS, cuDNN) without framework figures.
    Cuda,
    Onnxruntime,
    /// llama.cpp and other ggml programs.
    Ggml,
    Vllm,
    Cupy,
    Paddle,
    Tensorrt,
    /// The ROCm (HIP) runtime or a library on it, without framework figures.
    Rocm,
    /// Triton's kernels (and the libraries built on them: vLLM, FlashAttention's Triton
    /// kernels, mamba, torch.compile's Inductor).
    Triton,
    /// RAPIDS Memory Manager (cuDF, cuML, dask-cuda, RMM as another library's allocator).
    Rmm,
    /// Numba's CUDA driver wrapper (numba.cuda, and the libraries on it).
    Numba,
    /// Apache MXNet's GPU storage managers.
    Mxnet,
    /// TensorRT-LLM's runtime (its CUDA checks, `[TensorRT-LLM][ERROR]`).
    #[serde(rename = "tensorrt_llm")]
    TensorrtLlm,
    /// vllm.rs, the Rust inference engine on candle (its KV-cache planner and scheduler).
    #[serde(rename = "vllm_rs")]
    VllmRs,
    /// PyTorch on Huawei Ascend (torch_npu, a fork of PyTorch's caching allocator).
    Npu,
    /// PyTorch on Cambricon MLUs (torch_mlu).
    Mlu,
    /// PyTorch on Moore Threads GPUs (torch_musa).
    Musa,
    /// PyTorch on Enflame GCUs (torch_gcu).
    Gcu,
    /// PyTorch on Intel Gaudi (HPU).
    Hpu,
    /// Apple's MLX on Metal.
    Mlx,
    /// PyTorch/XLA (torch_xla), on TPUs.
    #[serde(rename = "pytorch_xla")]
    PytorchXla,
    /// AWS Neuron on Inferentia and Trainium: its runtime's device-memory failures (torch-neuronx,
    /// transformers-neuronx, vLLM on Neuron).
    Neuron,
    /// Hugging Face Text Generation Inference: its warm-up and the router's token budget.
    Tgi,
    /// SGLang's memory pools (the KV cache it sizes from `--mem-fraction-static`).
    Sglang,
    /// MLC LLM's engine (TVM-compiled models): its start-up check of the weights against its
    /// share of the GPU.
    #[serde(rename = "mlc_llm")]
    MlcLlm,
    /// Apache TVM's runtime (the Relax VM that runs TVM-compiled models, MLC LLM's among them).
    Tvm,
    /// Alibaba's rtp-llm (maga_transformer): its paged KV cache's blocks.
    #[serde(rename = "rtp_llm")]
    RtpLlm,
    /// DeepSpeed's inference kernels (their workspace, sized at the first forward).
    Deepspeed,
    /// wgpu's device (WebGPU in Rust: Burn's and Candle's wgpu back ends, other programs on
    /// wgpu): its out-of-memory error for a buffer or a texture.
    Wgpu,
    /// XGBoost's GPU algorithms (its own allocator's message, or CUDA errors it relays).
    Xgboost,
    /// CatBoost's GPU training (its stack-like device memory pool).
    Catboost,
    /// LightGBM's GPU builds (CUDA, and OpenCL through Boost.Compute).
    Lightgbm,
    /// FAISS's GPU indexes (StandardGpuResources).
    Faiss,
    /// Sophgo's TPUs (BM1684, BM1684X, BM1688) through libsophon's bmlib and BMRuntime.
    Sophgo,
    /// MindSpore on Ascend or GPU (its device memory pool).
    Mindspore,
    /// An OpenCL program's device allocation (`CL_MEM_OBJECT_ALLOCATION_FAILURE`), no program named.
    #[serde(rename = "opencl")]
    OpenCl,
    /// A Vulkan program's device allocation (`VK_ERROR_OUT_OF_DEVICE_MEMORY`), no program named.
    Vulkan,
    /// DirectML's `E_OUTOFMEMORY` (ONNX Runtime's DirectML provider, WinML, torch-directml).
    #[serde(rename = "directml")]
    DirectMl,
    /// Direct3D's (9 to 12, DXGI, DirectDraw) out-of-memory HRESULTs from a game or a
    /// graphics program, no DirectML named.
    #[serde(rename = "direct3d")]
    Direct3d,
    /// Metal's `MTLCommandBufferErrorOutOfMemory`, no program named.
    Metal,
    /// OpenGL's `GL_OUT_OF_MEMORY` (or EGL's `EGL_BAD_ALLOC`), no program named: games, Android's
    /// renderers.
    #[serde(rename = "opengl")]
    OpenGl,
    /// Darknet (pjreddie's and AlexeyAB's YOLO), relaying CUDA's status.
    Darknet,
    /// BVLC Caffe and its forks, relaying CUDA's status through glog's CHECK.
    Caffe,
    /// OpenCV's CUDA modules (`cv::cuda`), relaying CUDA's status.
    #[serde(rename = "opencv")]
    OpenCv,
    /// A GPU allocation failure in wording no rule knows ([`parse::fallback`]): the figures
    /// that are unambiguous, and no framework's meaning assumed.
    Unknown,
}

/// Which memory ran out. Not every "out of memory" is the GPU's: a kernel's on-chip shared
/// memory and the host's RAM fail with messages that look alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// The GPU's memory (what every breakdown here is about).
    #[default]
    Device,
    /// A kernel's on-chip memory, fixed by the chip's generation: a GPU's shared memory per
    /// thread block (Triton), a NeuronCore's state buffer per partition (the Neuron compiler).
    SharedMemory,
    /// The host's RAM (a CPU buffer).
    Host,
    /// Not bytes: the number of buffers one process may hold (Metal's resource limit, which
    /// MLX reports as "Resource limit (N) exceeded").
    Buffers,
    /// Page-locked (pinned) host memory, which CUDA maps for fast copies.
    PinnedHost,
    /// A TPU core's on-chip memory, not its HBM: VMEM (the vector unit's scratch, which
    /// kernels and fusions use) or SMEM (the scalar unit's), allotted per compiled program.
    TpuOnChip,
    /// A storage region a compiler planned ahead inside the device's memory (TVM's Relax VM,
    /// MLC LLM): its size is the plan's, whatever the device has free.
    PlannedRegion,
}

impl Framework {
    /// Whether the runtime's free figure may exceed its total, truly: HIP on an AMD APU
    /// (Ryzen AI Max "Strix Halo", gfx1151, and other integrated GPUs) reports as its total the
    /// VRAM pool the firmware sets aside (ROCclr's `globalMemSize_`, the GPU VM segment), while
    /// its free figure also counts the system memory the GPU maps through GTT
    /// (ROCm/hip#3892, ROCm/rocm-systems#5596).
    pub fn free_may_exceed_total(self) -> bool {
        matches!(self, Framework::Hip | Framework::Rocm)
    }

    pub fn name(self) -> &'static str {
        match self {
            Framework::Pytorch => "PyTorch (CUDA)",
            Framework::Hip => "PyTorch (ROCm/HIP)",
            Framework::Xpu => "PyTorch (XPU)",
            Framework::Mps => "PyTorch (MPS)",
            Framework::Tensorflow => "TensorFlow",
            Framework::Jax => "JAX/XLA",
            Framework::Cuda => "CUDA",
            Framework::Onnxruntime => "ONNX Runtime",
            Framework::Ggml => "llama.cpp/ggml",
            Framework::Vllm => "vLLM",
            Framework::Cupy => "CuPy",
            Framework::Paddle => "PaddlePaddle",
            Framework::Tensorrt => "TensorRT",
            Framework::Rocm => "ROCm",
            Framework::Triton => "Triton",
            Framework::Rmm => "RAPIDS (RMM)",
            Framework::Numba => "Numba (CUDA)",
            Framework::Mxnet => "MXNet",
            Framework::TensorrtLlm => "TensorRT-LLM",
            Framework::VllmRs => "vllm.rs",
            Framework::Npu => "PyTorch (Ascend NPU)",
            Framework::Mlu => "PyTorch (Cambricon MLU)",
            Framework::Musa => "PyTorch (Moore Threads MUSA)",
            Framework::Gcu => "PyTorch (Enflame GCU)",
            Framework::Hpu => "PyTorch (Intel Gaudi HPU)",
            Framework::Mlx => "MLX",
            Framework::PytorchXla => "PyTorch/XLA",
            Framework::Neuron => "AWS Neuron",
            Framework::Tgi => "Text Generation Inference",
            Framework::Sglang => "SGLang",
            Framework::MlcLlm => "MLC LLM",
            Framework::Tvm => "Apache TVM",
            Framework::RtpLlm => "rtp-llm",
            Framework::Deepspeed => "DeepSpeed",
            Framework::Wgpu => "wgpu",
            Framework::Xgboost => "XGBoost (GPU)",
            Framework::Catboost => "CatBoost (GPU)",
            Framework::Lightgbm => "LightGBM (GPU)",
            Framework::Faiss => "FAISS (GPU)",
            Framework::Sophgo => "Sophgo TPU (libsophon)",
            Framework::Mindspore => "MindSpore",
            Framework::OpenCl => "OpenCL",
            Framework::Vulkan => "Vulkan",
            Framework::DirectMl => "DirectML (Direct3D 12)",
            Framework::Direct3d => "Direct3D",
            Framework::Metal => "Metal",
            Framework::OpenGl => "OpenGL",
            Framework::Darknet => "Darknet",
            Framework::Caffe => "Caffe",
            Framework::OpenCv => "OpenCV (CUDA)",
            Framework::Unknown => "An unrecognised program",
        }
    }

    /// PyTorch's caching allocator (CUDA and its HIP port), which frees its cache and retries
    /// before it raises.
    pub fn caching_allocator(self) -> bool {
        matches!(self, Framework::Pytorch | Framework::Hip)
            || families::fork(self).is_some_and(|f| f.caching_allocator)
    }
}

/// What one message says, plus what it implies (`derived` names the implied fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Facts {
    pub requested_bytes: Option<u64>,
    /// Device capacity, or the allocator's limit when `total_is_limit`.
    pub total_bytes: Option<u64>,
    pub total_is_limit: bool,
    pub free_bytes: Option<u64>,
    /// Allocated by the framework (live tensors).
    pub allocated_bytes: Option<u64>,
    /// Reserved by the framework: allocated + cached.
    pub reserved_bytes: Option<u64>,
    /// Reserved but unallocated (the cache).
    pub reserved_unallocated_bytes: Option<u64>,
    /// Allocated in private pools (CUDA Graphs), included in `allocated_bytes`.
    pub private_pool_bytes: Option<u64>,
    /// This process, framework and non-framework memory together.
    pub process_bytes: Option<u64>,
    /// This process's memory outside the framework: context, cuBLAS/cuDNN, NCCL.
    pub non_framework_bytes: Option<u64>,
    /// A cap the framework sets on its own memory: PyTorch's per-process cap
    /// (`set_per_process_memory_fraction`); vllm.rs's KV-cache budget (kv_fraction of the
    /// memory free after the weights).
    pub allowed_bytes: Option<u64>,
    pub other_processes: Vec<OtherProcess>,
    pub other_processes_bytes: Option<u64>,
    /// Everything in use on the device, by every process together, where the message gives
    /// only that (PaddlePaddle's "memory has been allocated").
    pub device_used_bytes: Option<u64>,
    /// The fraction of the device vLLM was told to take (`gpu_memory_utilization`).
    pub gpu_memory_utilization: Option<f64>,
    /// Used memory that no figure explains (1.x: other processes and this process's context).
    pub unaccounted_bytes: Option<u64>,
    /// Elements of the tensor when its byte size is unknown (TensorFlow without a dtype).
    pub elements: Option<u64>,
    /// A `Process N has …` line that is most likely this very process: inside a container
    /// PyTorch cannot match NVML's host pid to its own, so it lists itself as another process
    /// and prints no "this process" clause.
    pub likely_self_pid: Option<u32>,
    pub derived: Vec<&'static str>,
    /// Figures the message states that cannot be true, with what they likely mean: each taken
    /// out (its field is `None`), never believed, never summed; except a request, which is
    /// what the program asked for and stays as printed.
    pub implausible: Vec<Implausible>,
    /// XLA's "reservable": the most a reservation at the bottom of a TPU's HBM could have
    /// had (contiguous free memory), beside its free total; for the TPU runtime's allocator by
    /// memory space ("N bytes allocatable"), the most one buffer could have had.
    pub reservable_bytes: Option<u64>,
    /// XLA's TPU compile-time report ("Total hbm usage >= …"): what the compiled program needs
    /// for itself, its temporaries (activations, gradients) and globals; on a GPU, its
    /// BufferAssignment's "total allocation" (parameters, outputs and temporaries). Not what
    /// the process holds.
    pub program_bytes: Option<u64>,
    /// The same report: the program's arguments, held in HBM while it runs (parameters,
    /// optimizer state, the batch).
    pub arguments_bytes: Option<u64>,
    /// The same report: the outputs it returns ("Output size"; part may share the arguments'
    /// buffers).
    pub output_bytes: Option<u64>,
    /// The same report: HBM the TPU runtime keeps for itself ("reserved").
    pub runtime_reserved_bytes: Option<u64>,
    /// How far what the message says is held (allocated, reserved, the process) goes beyond
    /// the device's capacity: memory that spilled into shared system memory (Windows' sysmem
    /// fallback), derived.
    pub spilled_bytes: Option<u64>,
    /// What a start-up created before it failed, in order, with the GPU's free memory before
    /// and after each (TensorRT-LLM's executor: the model, the sampler, the KV cache…); the
    /// one that failed last, with no "after". Empty where the message has no such account.
    pub components: Vec<Component>,
    /// What a limit enforcer counted against its limit (then `total_bytes`), where it gives only
    /// that: HAMi-core's "Device N OOM A / L" in a container with a GPU memory limit, the use
    /// with the request (not told apart), or its older monitor's "usage=U limit=L".
    pub with_request_bytes: Option<u64>,
    /// The memory free on the device when the program started, as its start-up lines said
    /// (hashcat's and xmrig's device lists): not the free memory when it failed, which the
    /// failure did not print ([`banner`]).
    pub startup_free_bytes: Option<u64>,
    /// The largest single allocation the device allows, as the program's start-up lines said
    /// (OpenCL's `CL_DEVICE_MAX_MEM_ALLOC_SIZE`: hashcat's "allocatable", `clinfo`'s "Max memory
    /// allocation"), where the failure printed no figure of its own ([`banner`]).
    pub max_alloc_bytes: Option<u64>,
}

/// How far a figure may pass the total by rounding alone: messages print two decimals.
fn rounding_slack(total: u64) -> u64 {
    total / 100 + (1 << 20)
}

/// One component a start-up created (or failed to), and the free memory around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Component {
    /// As the program names it ("Model", "KV cache", "Sampler").
    pub name: String,
    pub free_before_bytes: u64,
    /// `None` for the component that could not be created.
    pub free_after_bytes: Option<u64>,
}

impl Component {
    /// What creating it took: the free memory it used.
    pub fn took_bytes(&self) -> Option<u64> {
        Some(
            self.free_before_bytes
                .saturating_sub(self.free_after_bytes?),
        )
    }
}

/// A figure the message states that cannot be true. It is left out (its field is unknown),
/// except a request, which is what the program asked for and is kept as printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Implausible {
    /// The field it would have filled (`allocated_bytes`, …).
    pub field: &'static str,
    /// What the message says, in bytes.
    pub said_bytes: u64,
    /// Why it cannot be, and what it likely means.
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherProcess {
    pub pid: u32,
    pub bytes: u64,
}

/// One out-of-memory error found in the text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Oom {
    pub framework: Framework,
    /// Which message format matched (for example "pytorch-2.x").
    pub format: &'static str,
    pub device_index: Option<u32>,
    pub facts: Facts,
    /// The allocator hint the message printed, if any.
    pub hint: Option<String>,
    /// The line that triggered detection (normalised).
    pub line: String,
    /// Parts of the full message that the paste lacks (a cut head, a title cut short), so
    /// their figures are unknown.
    pub missing: Vec<&'static str>,
    /// Which memory ran out: the GPU's, or a kind that only looks like it.
    pub memory: MemoryKind,
    /// For memory that is not the GPU's: its limit, as the message gives it (Triton's
    /// "Hardware limit", shared memory per block).
    pub memory_limit_bytes: Option<u64>,
    /// A limit on a count, not on bytes: the buffers one process may hold (MLX's Metal
    /// "Resource limit (N)").
    pub buffer_limit: Option<u64>,
    /// vLLM's token check: the model's max sequence length and the tokens its KV cache holds
    /// (vllm.rs's refused request: the tokens its prompt needs and those free).
    #[serde(skip)]
    pub kv_tokens: Option<(u64, u64)>,
    /// vllm.rs's kv_fraction: the share of the memory free after the weights that its KV
    /// cache may take; SGLang's mem_fraction_static where its message prints it.
    #[serde(skip)]
    pub kv_fraction: Option<f64>,
    /// A paged KV cache's blocks: those a request needed and those left (rtp-llm's "failed to
    /// malloc N blocks, only M blocks left"): counts, not bytes.
    #[serde(skip)]
    pub kv_blocks: Option<(u64, u64)>,
}

impl Facts {
    /// How many of the message's figures are known (derived ones included): how much a
    /// repetition of one failure says.
    pub fn known(&self) -> usize {
        [
            self.requested_bytes,
            self.total_bytes,
            self.free_bytes,
            self.allocated_bytes,
            self.reserved_bytes,
            self.process_bytes,
            self.non_framework_bytes,
            self.allowed_bytes,
            self.other_processes_bytes,
            self.device_used_bytes,
        ]
        .iter()
        .filter(|x| x.is_some())
        .count()
            + usize::from(!self.other_processes.is_empty())
    }

    fn mark(&mut self, name: &'static str) {
        if !self.derived.contains(&name) {
            self.derived.push(name);
        }
    }

    /// Fills in the values the message implies.
    /// Takes out the figures that cannot be true ([`Facts::implausible`]) before anything is
    /// derived from them: memory held on a device above its total capacity.
    /// Free memory above the device's total, beyond the rounding of printed figures: true only
    /// where the runtime's free counts memory outside its total (an APU's GTT,
    /// [`Framework::free_may_exceed_total`]); elsewhere such a figure is left out as
    /// implausible before this can see it.
    pub fn free_beyond_total(&self) -> Option<u64> {
        let total = self
            .total_bytes
            .filter(|t| *t > 0 && !self.total_is_limit)?;
        let free = self.free_bytes?;
        (free > total.saturating_add(rounding_slack(total))).then(|| free - total)
    }

    /// `free_may_exceed_total`: the runtime's free figure may count memory beyond its total
    /// ([`Framework::free_may_exceed_total`]), so a free figure above the total is kept.
    fn drop_implausible(&mut self, free_may_exceed_total: bool) {
        let unit = |b: u64| crate::units::fmt_bytes(b);
        // A request no GPU could hold (the largest hold under 300 GiB): a size computed from a
        // bad shape, not a tensor anyone meant. Noted, and kept as printed: it is what the
        // program asked for, and the figure is the diagnosis (a misread total, free or in-use
        // figure below is a parse error instead, and is left out).
        if let Some(n) = self.requested_bytes.filter(|n| *n >= IMPLAUSIBLE_REQUEST) {
            self.implausible.push(Implausible {
                field: "requested_bytes",
                said_bytes: n,
                why: format!(
                    "a request of {}: no GPU holds that. A size like this comes from a shape \
                     computed wrongly (a negative or uninitialised dimension, an overflow) or from \
                     a device size misreported to the framework; look at the shapes in the \
                     operation the traceback ends in",
                    unit(n)
                ),
            });
        }
        // "This process has 0 bytes" beside gigabytes the framework holds: the driver could not
        // attribute memory to processes (Windows' WDDM, WSL, some containers), so the figure is
        // unknown, not zero.
        if self.process_bytes == Some(0) && self.allocated_bytes.is_some_and(|a| a >= 1 << 30) {
            self.implausible.push(Implausible {
                field: "process_bytes",
                said_bytes: 0,
                why: format!(
                    "this process 0 B while the framework holds {}: the driver does not \
                     attribute memory to processes here (Windows WDDM, WSL, some containers), \
                     so the process's figure is unknown, not zero",
                    unit(self.allocated_bytes.unwrap_or(0))
                ),
            });
            self.process_bytes = None;
        }
        // A capacity no GPU has (Paddle's "127.994262TB memory has been allocated", its total
        // derived from it): a figure gone wrong, left out before anything is weighed against it.
        if let Some(t) = self
            .total_bytes
            .filter(|t| *t >= IMPLAUSIBLE_REQUEST && !self.total_is_limit)
        {
            self.implausible.push(Implausible {
                field: "total_bytes",
                said_bytes: t,
                why: format!(
                    "a device of {}: no GPU has that; the figure is misprinted or computed from \
                     one that is, so it is left out",
                    unit(t)
                ),
            });
            self.total_bytes = None;
        }
        // Held figures no GPU could hold, where the message gives no capacity to weigh them
        // against (CuPy's "allocated so far: 7,250,273,780,736 bytes"): a counter gone wrong, not
        // memory; left out, as a misread figure would be.
        if self.total_bytes.is_none() {
            let fields: [(&'static str, &mut Option<u64>); 4] = [
                ("allocated_bytes", &mut self.allocated_bytes),
                ("reserved_bytes", &mut self.reserved_bytes),
                ("process_bytes", &mut self.process_bytes),
                ("device_used_bytes", &mut self.device_used_bytes),
            ];
            for (field, value) in fields {
                let Some(v) = value.filter(|v| *v >= IMPLAUSIBLE_REQUEST) else {
                    continue;
                };
                self.implausible.push(Implausible {
                    field,
                    said_bytes: v,
                    why: format!(
                        "{} {}: no GPU holds that; the figure is a counter gone wrong or \
                         misprinted, so it is left out",
                        field.trim_end_matches("_bytes").replace('_', " "),
                        unit(v)
                    ),
                });
                *value = None;
            }
        }
        // A device's capacity; an allocator's limit (MPS's "max allowed") can be exceeded.
        let Some(total) = self.total_bytes.filter(|t| *t > 0 && !self.total_is_limit) else {
            return;
        };
        let over = |v: &u64| *v > total.saturating_add(rounding_slack(total));
        // Held above the card, up to eight times it: true, and the diagnosis. Windows' driver
        // (sysmem fallback) lets allocations spill into shared system memory once the card is
        // full; the figures are kept and the spill is said.
        let held = [
            self.allocated_bytes,
            self.reserved_bytes,
            self.process_bytes,
            self.device_used_bytes,
        ];
        let spill = held
            .iter()
            .flatten()
            .filter(|v| over(v) && **v <= total.saturating_mul(8))
            .max()
            .map(|v| v - total);
        if spill.is_some() {
            self.spilled_bytes = spill;
            self.mark("spilled_bytes");
        }
        let fields: [(&'static str, &mut Option<u64>); 5] = [
            ("allocated_bytes", &mut self.allocated_bytes),
            ("reserved_bytes", &mut self.reserved_bytes),
            ("process_bytes", &mut self.process_bytes),
            ("device_used_bytes", &mut self.device_used_bytes),
            ("free_bytes", &mut self.free_bytes),
        ];
        for (field, value) in fields {
            let Some(v) = value.filter(over) else {
                continue;
            };
            let what = field.trim_end_matches("_bytes").replace('_', " ");
            if field != "free_bytes" && v <= total.saturating_mul(8) {
                continue;
            }
            if field == "free_bytes" && free_may_exceed_total {
                continue;
            }
            let why = format!(
                "{what} {} on a device of {}: no device holds that; the figure is misprinted \
                 or the message was edited, so it is left out",
                unit(v),
                unit(total)
            );
            self.implausible.push(Implausible {
                field,
                said_bytes: v,
                why,
            });
            *value = None;
        }
    }

    /// `free_may_exceed_total`: whether the runtime's free figure may count memory beyond its total
    /// ([`Framework::free_may_exceed_total`]): a free figure above the total is then kept.
    pub fn derive(&mut self, free_may_exceed_total: bool) {
        self.drop_implausible(free_may_exceed_total);
        self.find_self_among_others();
        if self.reserved_unallocated_bytes.is_none() {
            if let (Some(r), Some(a)) = (self.reserved_bytes, self.allocated_bytes) {
                self.reserved_unallocated_bytes = Some(r.saturating_sub(a));
                self.mark("reserved_unallocated_bytes");
            }
        }
        if self.reserved_bytes.is_none() {
            if let (Some(a), Some(c)) = (self.allocated_bytes, self.reserved_unallocated_bytes) {
                self.reserved_bytes = Some(a.saturating_add(c));
                self.mark("reserved_bytes");
            }
        }
        if !self.other_processes.is_empty() && self.other_processes_bytes.is_none() {
            self.other_processes_bytes = Some(self.other_processes.iter().map(|p| p.bytes).sum());
            self.mark("other_processes_bytes");
        }
        if self.non_framework_bytes.is_none() {
            if let (Some(p), Some(r)) = (self.process_bytes, self.reserved_bytes) {
                self.non_framework_bytes = Some(p.saturating_sub(r));
                self.mark("non_framework_bytes");
            }
        }
        if self.unaccounted_bytes.is_none() && !self.total_is_limit {
            // Free above the total (an APU's GTT) leaves nothing to account for in the total.
            if let (Some(t), Some(f)) = (
                self.total_bytes,
                self.free_bytes.filter(|f| Some(*f) <= self.total_bytes),
            ) {
                // What the message's figures leave unexplained: with a process total, that is
                // used by someone not listed; without (1.x), everything outside PyTorch.
                let mine = self.process_bytes.or(self.reserved_bytes);
                if let Some(mine) = mine {
                    let others = self.other_processes_bytes.unwrap_or(0);
                    self.unaccounted_bytes =
                        Some(t.saturating_sub(mine.saturating_add(others).saturating_add(f)));
                    self.mark("unaccounted_bytes");
                }
            }
        }
        if self.free_bytes.is_none() && self.total_is_limit {
            let mine = self
                .process_bytes
                .or(self.reserved_bytes)
                .or(self.allocated_bytes);
            if let (Some(t), Some(mine)) = (self.total_bytes, mine) {
                let other = self.other_processes_bytes.unwrap_or(0);
                self.free_bytes = Some(t.saturating_sub(mine.saturating_add(other)));
                self.mark("free_bytes");
            }
        }
    }

    /// With no "this process" clause, a listed process holding at least everything PyTorch
    /// reserved is this process seen from inside a container: counting it as another process
    /// would blame the wrong party.
    fn find_self_among_others(&mut self) {
        if self.process_bytes.is_some() || self.other_processes.is_empty() {
            return;
        }
        let reserved = self
            .reserved_bytes
            .or_else(|| Some(self.allocated_bytes? + self.reserved_unallocated_bytes?));
        let Some(reserved) = reserved.filter(|r| *r > 0) else {
            return;
        };
        let Some(i) = self
            .other_processes
            .iter()
            .enumerate()
            .filter(|(_, p)| p.bytes >= reserved)
            .min_by_key(|(_, p)| p.bytes)
            .map(|(i, _)| i)
        else {
            return;
        };
        let me = self.other_processes.remove(i);
        self.process_bytes = Some(me.bytes);
        self.likely_self_pid = Some(me.pid);
        self.mark("process_bytes");
    }

    /// The same decomposition the dashboard shows, when the total is known.
    pub fn breakdown(&self) -> Option<Breakdown> {
        let total = self.total_bytes?;
        let derived = |name: &str| self.derived.contains(&name);
        let part = |kind, bytes: Option<u64>, name: &str| Part {
            kind,
            bytes,
            derived: derived(name),
        };
        let split_known =
            self.allocated_bytes.is_some() || self.reserved_unallocated_bytes.is_some();
        let mut parts = if let Some(used) = self.device_used_bytes.filter(|_| !split_known) {
            // Only the device-wide figure: whose it is, the message does not say.
            vec![part(PartKind::Used, Some(used), "device_used_bytes")]
        } else if self.reserved_bytes.is_some() && !split_known {
            vec![part(
                PartKind::Reserved,
                self.reserved_bytes,
                "reserved_bytes",
            )]
        } else if self.process_bytes.is_some() && !split_known {
            vec![part(
                PartKind::ThisProcess,
                self.process_bytes,
                "process_bytes",
            )]
        } else {
            vec![
                part(PartKind::Allocated, self.allocated_bytes, "allocated_bytes"),
                part(
                    PartKind::Cached,
                    self.reserved_unallocated_bytes,
                    "reserved_unallocated_bytes",
                ),
            ]
        };
        if self.non_framework_bytes.is_some() {
            parts.push(part(
                PartKind::NonFramework,
                self.non_framework_bytes,
                "non_framework_bytes",
            ));
        }
        for p in &self.other_processes {
            parts.push(Part::read(PartKind::Process { pid: p.pid }, Some(p.bytes)));
        }
        if self.other_processes.is_empty() && self.other_processes_bytes.is_some() {
            parts.push(part(
                PartKind::OtherApps,
                self.other_processes_bytes,
                "other_processes_bytes",
            ));
        }
        if let Some(u) = self.unaccounted_bytes.filter(|u| *u > 0) {
            parts.push(Part::derived(PartKind::Unattributed, Some(u)));
        }
        // Free beyond the total (an APU's GTT) is not in the pool the bar draws.
        let free = self
            .free_bytes
            .filter(|_| self.free_beyond_total().is_none());
        parts.push(part(PartKind::Free, free, "free_bytes"));
        Some(Breakdown::from_parts(total, parts))
    }
}

/// Everything found in one text.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Analysis {
    /// The OOMs found, in order, the last [`MAX_KEPT`] of them; the last is the main one.
    pub ooms: Vec<Oom>,
    /// How many OOMs were found in all (`yes OOM | gpumon explain` finds millions, and keeps
    /// 64).
    pub total: u64,
    /// Lines read.
    pub lines: u64,
    /// Repetitions of the last failure that were no longer kept: OOMs dropped past
    /// [`MAX_KEPT`] while every kept one was that same failure ([`Analysis::repeats`]).
    #[serde(skip)]
    pub earlier_repeats: u64,
    /// TensorFlow's BFC warnings that an allocation did not fit but "the caller indicates
    /// that this is not a failure" (a scratch allocation, such as a convolution's workspace
    /// while cuDNN picks an algorithm, that falls back to one needing less): counted, never
    /// taken for a failure.
    pub not_failures: u64,
    /// TensorRT's builder warnings that it skipped a tactic for want of scratch memory and went
    /// on with the others ([`clean::is_skipped_tactic`]): counted, never taken for a failure.
    pub skipped_tactics: u64,
    /// ROCm runtime warnings that the scratch memory a dispatch asked for could not be mapped,
    /// so it runs with fewer waves at once ([`clean::is_reduced_scratch`]): counted, never
    /// taken for a failure.
    pub reduced_scratch: u64,
}

/// A single request this large is not believed: 1 TiB, more than three times the largest GPU
/// memory there is (288 GiB).
pub const IMPLAUSIBLE_REQUEST: u64 = 1 << 40;

/// The most OOMs an analysis keeps: memory stays bounded whatever the input.
pub const MAX_KEPT: usize = 64;

impl Analysis {
    /// The failure explained: of the last failure's repetitions at the end of the input
    /// ([`Analysis::repeats`]), the one whose message says the most (frameworks log one
    /// failure several times: a warning, the error, a traceback's last line, and the last is
    /// often the barest); the latest of equals.
    pub fn main(&self) -> Option<&Oom> {
        let group = self.last_group();
        group
            .iter()
            .enumerate()
            .max_by_key(|(i, o)| (o.facts.known(), *i))
            .map(|(_, o)| o)
    }

    /// How many times the explained failure appears at the end of the input: the run of OOMs
    /// that name the same framework, device and request as the last one (a figure a message
    /// does not print does not tell them apart).
    /// Counted past [`MAX_KEPT`]: 100,000 repeats are 100,000, not the 64 kept.
    pub fn repeats(&self) -> usize {
        let group = self.last_group().len();
        if group == self.ooms.len() {
            group.saturating_add(usize::try_from(self.earlier_repeats).unwrap_or(usize::MAX))
        } else {
            group
        }
    }

    /// Gives the last failure's repetitions the device one of them names (a JAX error line
    /// does not say it; the allocator's line before it, `GPU_1_bfc`, does).
    pub(crate) fn fill_group_device(&mut self) {
        let n = self.last_group().len();
        let start = self.ooms.len() - n;
        let mut named = self.ooms[start..].iter().filter_map(|o| o.device_index);
        let Some(d) = named.next() else {
            return;
        };
        if named.any(|o| o != d) {
            return;
        }
        for o in &mut self.ooms[start..] {
            o.device_index.get_or_insert(d);
        }
    }

    pub(crate) fn last_group(&self) -> &[Oom] {
        let Some(last) = self.ooms.last() else {
            return &[];
        };
        let same = |o: &Oom| {
            // The BFC allocator prints a request rounded up to its 256-byte unit ("rounded to
            // 29995136256"), the error above it the request itself (29995136128): one size.
            let same_size = |a: u64, b: u64| a.div_ceil(256) == b.div_ceil(256);
            let agree = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (Some(a), Some(b)) => same_size(a, b),
                _ => true,
            };
            // XLA's BFC allocator line (shared with TensorFlow, so read as TensorFlow's) before
            // JAX's own error for the same request is one failure.
            let xla = |f: Framework| matches!(f, Framework::Tensorflow | Framework::Jax);
            let same_request = o
                .facts
                .requested_bytes
                .zip(last.facts.requested_bytes)
                .is_some_and(|(a, b)| same_size(a, b));
            // A runtime's bare status (Level Zero's ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, an
            // API's out-of-memory code, no figure) beside the failure of the program above
            // it is that failure's status, said again: llama.cpp's SYCL backend logs its
            // failed buffer, then Level Zero's code.
            let bare_status = |x: &Oom| {
                (x.format == "level-zero" || x.format.starts_with("api-")) && x.facts.known() == 0
            };
            // Memory of another kind (TensorFlow's page-locked host pool beside its GPU
            // allocator) is another failure, whatever the framework.
            o.memory == last.memory
                && (o.framework == last.framework
                    || (same_request && xla(o.framework) && xla(last.framework))
                    || ((bare_status(o) || bare_status(last)) && last.memory == MemoryKind::Device))
                && (o.device_index.is_none()
                    || last.device_index.is_none()
                    || o.device_index == last.device_index)
                && agree(o.facts.requested_bytes, last.facts.requested_bytes)
        };
        let start = self
            .ooms
            .iter()
            .rposition(|o| !same(o))
            .map_or(0, |i| i + 1);
        &self.ooms[start..]
    }
}

/// Analyses a whole text at once (the streaming [`scan::Scanner`] underneath).
pub fn analyze(text: &str) -> Analysis {
    let mut s = scan::Scanner::new();
    for line in text.split('\n') {
        s.push_line(line);
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device size no GPU has (Paddle's "127.994262TB memory has been allocated", the total
    /// derived from it) is left out and said first; an allocator's limit that large (PyTorch's
    /// "no limit") is not a device's size and stays.
    #[test]
    fn a_device_no_gpu_has_is_left_out_and_said_first() {
        let a = analyze("Out of memory error on GPU 0. Cannot allocate 2.250000kB memory on GPU 0, 127.994262TB memory has been allocated and available memory is only 0.000000B.");
        let o = a.main().expect("found");
        assert_eq!(o.facts.total_bytes, None);
        assert_eq!(o.facts.requested_bytes, Some(2304));
        assert!(o.facts.implausible.iter().any(|i| i.field == "total_bytes"));
        assert_eq!(
            diagnose::diagnose(o)[0].cause,
            diagnose::Cause::ImplausibleFigures
        );
        let mut f = Facts {
            total_bytes: Some(16 << 40),
            total_is_limit: true,
            ..Facts::default()
        };
        f.drop_implausible(false);
        assert_eq!(f.total_bytes, Some(16 << 40));
        assert!(f.implausible.is_empty());
    }

    /// A request no GPU holds, and "this process has 0 bytes" beside gigabytes allocated, are
    /// flagged and left out, with what they likely mean.
    #[test]
    fn absurd_requests_and_a_zero_process_figure_are_flagged() {
        let a = analyze(
            "E rocm_driver.cc:606] failed to allocate 83.98TiB (92332837830656 bytes) from \
             device: HIP_ERROR_OutOfMemory",
        );
        let f = &a.main().expect("found").facts;
        // Kept as printed: the figure is the diagnosis.
        assert_eq!(f.requested_bytes, Some(92332837830656));
        assert_eq!(f.implausible[0].field, "requested_bytes");
        assert_eq!(f.implausible[0].said_bytes, 92332837830656);
        assert!(f.implausible[0].why.contains("no GPU holds that"));
        // The request is the story; nothing sizes the job to it.
        let d = diagnose::diagnose(a.main().expect("found"));
        assert_eq!(d[0].cause, diagnose::Cause::ImplausibleFigures);
        assert!(d[0].remedies.iter().any(|r| r.text.contains("shapes")));
        let big = analyze("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13535.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free.");
        let o = big.main().expect("found");
        assert_eq!(o.facts.requested_bytes, Some(13535 << 30));
        let d = diagnose::diagnose(o);
        assert_eq!(d[0].cause, diagnose::Cause::ImplausibleFigures);
        assert!(d.iter().all(|x| !matches!(
            x.cause,
            diagnose::Cause::RequestExceedsTotal | diagnose::Cause::RequestOnly
        )));

        let a = analyze(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a \
             total capacity of 8.00 GiB of which 0 bytes is free. Including non-PyTorch memory, \
             this process has 0 bytes memory in use. Of the allocated memory 6.50 GiB is \
             allocated by PyTorch, and 500.00 MiB is reserved by PyTorch but unallocated.",
        );
        let f = &a.main().expect("found").facts;
        assert_eq!(f.process_bytes, None);
        assert!(f
            .implausible
            .iter()
            .any(|i| i.field == "process_bytes" && i.why.contains("unknown, not zero")));
        // A request of hundreds of GiB on a large GPU is believed.
        let a = analyze(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 300.00 GiB. GPU 0 has \
             a total capacity of 79.10 GiB of which 1.19 GiB is free.",
        );
        assert_eq!(
            a.main().and_then(|o| o.facts.requested_bytes),
            Some(300 << 30)
        );
    }

    /// One failure logged twice (the full message, then a bare repetition further down a
    /// log) is explained from the full one and counted as one failure twice; a different
    /// request after it is a failure of its own.
    #[test]
    fn repetitions_are_grouped_and_the_fullest_explained() {
        let full = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 \
            has a total capacity of 79.10 GiB of which 1.19 GiB is free. Including non-PyTorch \
            memory, this process has 77.90 GiB memory in use. Of the allocated memory 70.00 GiB \
            is allocated by PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated.";
        let bare = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 \
            has a total capacity of 79.10 GiB of which 1.19 GiB is free.";
        let filler = "step 12 loss 1.234\n".repeat(40);
        let a = analyze(&format!("{full}\n{filler}{bare}\n"));
        assert_eq!(a.total, 2);
        assert_eq!(a.repeats(), 2);
        let main = a.main().expect("an OOM");
        assert_eq!(main.facts.allocated_bytes, Some(70 << 30));
        let text = render::render(&a, crate::text::Paint(false));
        assert!(text.contains("One failure, logged 2 times"), "{text}");

        let other = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. \
            GPU 0 has a total capacity of 79.10 GiB of which 1.19 GiB is free.";
        let b = analyze(&format!("{full}\n{filler}{other}\n"));
        assert_eq!((b.total, b.repeats()), (2, 1));
        assert_eq!(
            b.main().and_then(|o| o.facts.requested_bytes),
            Some(512 << 20)
        );
        let text = render::render(&b, crate::text::Paint(false));
        assert!(
            text.contains("2 OOM errors in the input; this is the last one."),
            "{text}"
        );
    }

    /// Finding 19: "99999.96 GiB already allocated" on a 15.9 GiB GPU is not believed (it was
    /// reported as 97.7 TiB held); a little over the card is true, memory that spilled into
    /// shared system memory (Windows' sysmem fallback), kept and said; an allocator's limit
    /// (MPS) may be exceeded.
    #[test]
    fn figures_above_the_device_are_flagged_and_left_out() {
        let a = analyze("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.90 GiB total capacity; 99999.96 GiB already allocated; 0 bytes free; 14.50 GiB reserved in total by PyTorch)");
        let f = &a.main().expect("found").facts;
        assert_eq!(f.allocated_bytes, None);
        assert!(f.reserved_bytes.is_some());
        assert_eq!(f.implausible.len(), 1);
        assert!(
            f.implausible[0].why.contains("misprinted"),
            "{:?}",
            f.implausible
        );
        let a = analyze("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 27.12 GiB. GPU 0 has a total capacty of 11.99 GiB of which 0 bytes is free. Of the allocated memory 16.16 GiB is allocated by PyTorch, and 144.59 MiB is reserved by PyTorch but unallocated.");
        let f = &a.main().expect("found").facts;
        let gib = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        assert_eq!(f.allocated_bytes, Some(gib(16.16)), "kept: it is true");
        assert!(f.implausible.is_empty(), "{:?}", f.implausible);
        assert_eq!(f.spilled_bytes, Some(gib(16.16) - gib(11.99)));
        assert!(f.derived.contains(&"spilled_bytes"));
        let a = analyze("RuntimeError: MPS backend out of memory (MPS allocated: 7.08 GB, other allocations: 3.36 MB, max allowed: 7.16 GB). Tried to allocate 96.00 MB on private pool.");
        assert!(a.main().expect("found").facts.implausible.is_empty());
    }

    /// A held figure no GPU holds, with no capacity beside it, is left out and said.
    #[test]
    fn held_figures_beyond_any_gpu_are_left_out_without_a_total() {
        let a = analyze("OutOfMemoryError: Out of memory allocating 478,456,320 bytes (allocated so far: 7,250,273,780,736 bytes).");
        let f = &a.main().expect("found").facts;
        assert_eq!(f.requested_bytes, Some(478_456_320));
        assert_eq!(f.reserved_bytes, None);
        assert_eq!(f.implausible[0].field, "reserved_bytes");
        assert_eq!(f.implausible[0].said_bytes, 7_250_273_780_736);
        // Below the bound it stands.
        let a = analyze("OutOfMemoryError: Out of memory allocating 478,456,320 bytes (allocated so far: 7,250,273,780 bytes).");
        assert!(a.main().expect("found").facts.implausible.is_empty());
    }

    /// HIP on an AMD APU: free above the total is the system memory the GPU maps through GTT,
    /// kept as printed and explained; the same free figure from CUDA is still left out.
    #[test]
    fn an_apus_free_above_its_total_is_kept_for_hip_only() {
        let hip = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total capacity of 15.49 GiB of which 84.98 GiB is free. Of the allocated memory 1.67 GiB is allocated by PyTorch, and 8.08 GiB is reserved by PyTorch but unallocated.";
        let gib = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
        let a = analyze(hip);
        let o = a.main().expect("found");
        assert_eq!(o.framework, Framework::Hip);
        assert_eq!(o.facts.free_bytes, Some(gib(84.98)));
        assert!(o.facts.implausible.is_empty(), "{:?}", o.facts.implausible);
        assert_eq!(o.facts.free_beyond_total(), Some(gib(84.98) - gib(15.49)));
        assert_eq!(o.facts.unaccounted_bytes, None, "nothing is unaccounted");
        // The bar draws the VRAM pool: no free part beyond it.
        let b = o.facts.breakdown().expect("a total");
        assert!(b
            .parts
            .iter()
            .all(|p| p.kind != PartKind::Free || p.bytes.is_none()));
        let d = diagnose::diagnose(o);
        assert_eq!(d[0].cause, diagnose::Cause::IntegratedGpu);
        assert!(d[0].title.contains("16.0 GiB"), "{}", d[0].title);
        assert!(d
            .iter()
            .all(|x| x.cause != diagnose::Cause::RequestExceedsTotal));
        assert!(d[0].remedies.iter().any(|r| r.text.contains("carve-out")));
        // Under the pool: the limit on one allocation is not the failure.
        let a = analyze(&hip.replace("16.00 GiB.", "2.00 GiB."));
        let d = diagnose::diagnose(a.main().expect("found"));
        assert_eq!(d[0].cause, diagnose::Cause::IntegratedGpu);
        assert!(d[0].detail.contains("under the pool"), "{}", d[0].detail);
        // CUDA's free above its total cannot be true: left out as before.
        let a = analyze(&hip.replace("HIP", "CUDA"));
        let o = a.main().expect("found");
        assert_eq!(o.facts.free_bytes, None);
        assert_eq!(o.facts.implausible[0].field, "free_bytes");
        assert!(diagnose::diagnose(o)
            .iter()
            .all(|x| x.cause != diagnose::Cause::IntegratedGpu));
    }

    /// Issue 42's last gaps: Paddle Fluid's chunk check, RMM's pool limit with and without its
    /// size, TensorFlow's stream executor on old HIP, and Level Zero's code without llama.cpp.
    #[test]
    fn paddle_enforce_rmm_pool_hip_codes_and_level_zero_are_read() {
        let main = |t: &str| analyze(t).main().cloned().expect("an OOM");
        let o = main("paddle.fluid.core.EnforceNotMet: enforce allocating <= available failed, 10513462067 > 1369702144\n at [/paddle/paddle/fluid/platform/gpu_info.cc:89]");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Paddle, "paddle-enforce")
        );
        assert_eq!(o.facts.requested_bytes, Some(10_513_462_067));
        assert_eq!(o.facts.free_bytes, Some(1_369_702_144));
        let o = main("EnforceNotMet: Data check failed. Expected allocating_memory <= available_memory, but received allocating_memory:20998685852 > available_memory:1645149952.");
        assert_eq!(
            (o.format, o.facts.requested_bytes, o.facts.free_bytes),
            ("paddle-enforce", Some(20_998_685_852), Some(1_645_149_952))
        );
        // A number in the wrong order is not this check.
        assert!(analyze("enforce allocating <= available failed")
            .main()
            .is_none());

        let o = main("MemoryError: std::bad_alloc: RMM failure at:/x/rmm/include/rmm/mr/device/pool_memory_resource.hpp:179: Maximum pool size exceeded");
        assert_eq!((o.framework, o.format), (Framework::Rmm, "rmm-pool"));
        assert_eq!(o.facts.requested_bytes, None);
        let o = main("MemoryError: std::bad_alloc: out_of_memory: RMM failure at:/x/rmm/mr/pool_memory_resource.hpp:257: Maximum pool size exceeded (failed to allocate 1.500000 GiB): Maximum pool size exceeded");
        assert_eq!(o.facts.requested_bytes, Some(3 << 29));
        // The pool's size, its maximum and the request, from the reason (NVIDIA/cudf-spark
        // #12984: RMM's logger writes it first).
        let o = main("[3482078][14:24:54:629030][error ] [A][Stream 0x1][Upstream 256B][FAILURE maximum pool size exceeded: Not enough room to grow, current/max/try size = 4.000000 KiB, 4.000000 KiB, 256.000000 B]");
        assert_eq!(o.format, "rmm-pool");
        assert_eq!(o.facts.requested_bytes, Some(256));
        assert_eq!(o.facts.reserved_bytes, Some(4096));
        assert_eq!(
            (o.facts.total_bytes, o.facts.total_is_limit),
            (Some(4096), true)
        );
        let o = main("MemoryError: std::bad_alloc: out_of_memory: RMM failure at:/x/pool_memory_resource_impl.cpp:73: Maximum pool size exceeded (failed to allocate 10.371208 GiB): Not enough room to grow, current/max/try size = 78.000000 GiB, 16.000000 EiB, 10.371208 GiB");
        assert_eq!(o.facts.reserved_bytes, Some(78 << 30));
        assert_eq!((o.facts.total_bytes, o.facts.total_is_limit), (None, false));
        // Another library's pool at its size is not a GPU's.
        assert!(analyze("Error: Maximum pool size exceeded: 64")
            .main()
            .is_none());

        let o = main("E tensorflow/stream_executor/rocm/rocm_driver.cc:601] failed to allocate 7.35G (7889485824 bytes) from device: hipError_t(1002)");
        assert_eq!(
            (o.framework, o.format),
            (Framework::Tensorflow, "rocm-driver")
        );
        assert_eq!(o.facts.requested_bytes, Some(7_889_485_824));
        // JAX's build of the same file (jaxlib's Bazel path) is JAX's, not TensorFlow's.
        let o = main("E external/org_tensorflow/tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:802] failed to allocate 1.00G (1073741824 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory");
        assert_eq!(o.framework, Framework::Jax);

        let o = main("  what():  Native API failed. Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)");
        assert_eq!((o.framework, o.format), (Framework::Unknown, "level-zero"));
        let d = diagnose::diagnose(&o);
        assert!(d[0].title.contains("Intel GPU"), "{}", d[0].title);
        let o = main("llama_model_load: error loading model: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES) -5 (PI_ERROR_OUT_OF_RESOURCES)");
        assert_eq!((o.framework, o.format), (Framework::Ggml, "ggml-sycl"));
        // PI's generic code with no program's words is not read as memory.
        assert!(
            analyze("Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)")
                .main()
                .is_none()
        );
        // Beside IPEX-LLM's words (a model's weights moved to the XPU), memory.
        let o = main("  File \"/home/llm/venv/lib/python3.11/site-packages/ipex_llm/transformers/low_bit_linear.py\", line 492, in to\nRuntimeError: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES) -5 (PI_ERROR_OUT_OF_RESOURCES)");
        assert_eq!(o.format, "level-zero");
        assert!(
            analyze("Native API returns: 40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)")
                .main()
                .is_none()
        );
    }

    /// A runtime's bare status code after a program's failure with figures is that failure's
    /// status (intel/compute-runtime#984: llama.cpp's SYCL buffer, then Level Zero's code):
    /// one failure, explained with the program's request. After a failure of the host's
    /// memory, or with a figure of its own, it is another.
    #[test]
    fn tensorrts_builder_with_no_tactic_left_for_want_of_memory() {
        let t = "[08/18/2020-19:07:36] [W] [TRT] GPU memory allocation error during getBestTactic: 9_full_with_bias\n[08/18/2020-19:07:36] [E] [TRT] Internal error: could not find any implementation for node 9_full_with_bias, try increasing the workspace size with IBuilder::setMaxWorkspaceSize()";
        let o = analyze(t).main().cloned().expect("an OOM");
        assert_eq!((o.framework, o.format), (Framework::Tensorrt, "tensorrt"));
        // Another node with no implementation is not this one's.
        assert!(
            analyze(&t.replace("for node 9_full_with_bias,", "for node 9_full_with_bias2,"))
                .main()
                .is_none()
        );
        // The warning alone: another tactic may have been chosen.
        let warning = t.lines().next().unwrap_or_default();
        assert!(analyze(warning).main().is_none());
    }

    #[test]
    fn llama_cpps_metal_status_named_in_its_words() {
        // ggml-org/llama.cpp#6987's build: the error's name on the line after the status.
        let o = analyze("ggml_metal_graph_compute: command buffer 6 failed with status 5\nout of memory\nllama_decode: failed to decode, ret = -3\n")
            .main()
            .cloned()
            .expect("an OOM");
        assert_eq!((o.framework, o.format), (Framework::Ggml, "ggml-metal"));
        // The status alone is any error.
        assert!(
            analyze("ggml_metal_graph_compute: command buffer 6 failed with status 5\n")
                .main()
                .is_none()
        );
    }

    #[test]
    fn a_bare_status_after_a_failure_is_the_same_failure() {
        let t = "ggml_backend_sycl_buffer_type_alloc_buffer: can't allocate 21583194624 Bytes of memory on device\nalloc_tensor_range: failed to allocate SYCL0 buffer of size 21583194624\n\nzeMemAllocDevice returned 0x70000003 (ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)";
        let a = analyze(t);
        let o = a.main().expect("an OOM");
        assert_eq!(o.framework, Framework::Ggml);
        assert_eq!(o.facts.requested_bytes, Some(21_583_194_624));
        assert_eq!(a.repeats(), a.ooms.len());
        // The code alone is still read.
        let o =
            analyze("zeMemAllocDevice returned 0x70000003 (ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)")
                .main()
                .cloned()
                .expect("an OOM");
        assert_eq!(o.format, "level-zero");
    }

    /// Issue 42, h42s: RMM's `bad_alloc` cut short inside its path, and TensorFlow's failing
    /// node's device, read from whole pastes (the trigger phrases and the message's extent).
    #[test]
    fn rmm_cut_short_and_tensorflow_node_device_are_read() {
        let main = |t: &str| analyze(t).main().cloned().expect("an OOM");
        let o = main("Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\nMemoryError: std::bad_alloc: CUDA error at: /opt/conda/envs/rapids/include/rmm/mr/");
        assert_eq!(
            (o.framework, o.format, o.memory),
            (Framework::Rmm, "rmm", MemoryKind::Device)
        );
        for t in [
            "RuntimeError: CUDA error at: /opt/conda/include/rmm/mr/device/cuda_memory_resource.hpp:70: cudaErrorIllegalAddress an illegal memory access was encountered",
            "MemoryError: std::bad_alloc: CUDA error at: /opt/conda/include/rmm/mr/device/cuda_memory_resource.hpp:69: cudaErrorIllegalAddress an illegal memory access was encountered",
        ] {
            assert!(analyze(t).main().is_none(), "{t}");
        }

        let o = main("W tensorflow/core/framework/op_kernel.cc:993] Resource exhausted: OOM when allocating tensor with shape[256,128,56,56]\nTraceback (most recent call last):\ntensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[256,128,56,56]\n\t [[Node: conv2/Conv2D = Conv2D[T=DT_FLOAT, data_format=\"NHWC\", padding=\"SAME\", strides=[1, 1, 1, 1], use_cudnn_on_gpu=true, _device=\"/job:localhost/replica:0/task:0/gpu:1\"](pool1/MaxPool, conv2/weights/read)]]");
        assert_eq!(
            (o.framework, o.format, o.device_index),
            (Framework::Tensorflow, "tensorflow-oom", Some(1))
        );
        assert_eq!(o.facts.requested_bytes, None);
    }
}
