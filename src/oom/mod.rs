//! The OOM analyzer: find out-of-memory errors in pasted text, decompose the memory, and say
//! what to do. Pure: no tokio, ratatui or NVML here, so `explain`, the dashboard's paste panel
//! and `run` share it.
//!
//! `scan` (streaming, bounded memory) → `parse` (one family per framework) → `Facts`
//! (`derive` fills in what the message implies) → `diagnose` (ranked findings) → `render`.

pub mod diagnose;
pub mod parse;
pub mod render;
pub mod scan;

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
}

impl Framework {
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
        }
    }

    /// PyTorch's caching allocator (CUDA and its HIP port), which frees its cache and retries
    /// before it raises.
    pub fn caching_allocator(self) -> bool {
        matches!(self, Framework::Pytorch | Framework::Hip)
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
    /// PyTorch's per-process cap (`set_per_process_memory_fraction`).
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
}

impl Facts {
    fn mark(&mut self, name: &'static str) {
        if !self.derived.contains(&name) {
            self.derived.push(name);
        }
    }

    /// Fills in the values the message implies.
    pub fn derive(&mut self) {
        self.find_self_among_others();
        if self.reserved_unallocated_bytes.is_none() {
            if let (Some(r), Some(a)) = (self.reserved_bytes, self.allocated_bytes) {
                self.reserved_unallocated_bytes = Some(r.saturating_sub(a));
                self.mark("reserved_unallocated_bytes");
            }
        }
        if self.reserved_bytes.is_none() {
            if let (Some(a), Some(c)) = (self.allocated_bytes, self.reserved_unallocated_bytes) {
                self.reserved_bytes = Some(a + c);
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
            if let (Some(t), Some(f)) = (self.total_bytes, self.free_bytes) {
                // What the message's figures leave unexplained: with a process total, that is
                // used by someone not listed; without (1.x), everything outside PyTorch.
                let mine = self.process_bytes.or(self.reserved_bytes);
                if let Some(mine) = mine {
                    let others = self.other_processes_bytes.unwrap_or(0);
                    self.unaccounted_bytes = Some(t.saturating_sub(mine + others + f));
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
                self.free_bytes = Some(t.saturating_sub(mine + other));
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
        parts.push(part(PartKind::Free, self.free_bytes, "free_bytes"));
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
}

/// The most OOMs an analysis keeps: memory stays bounded whatever the input.
pub const MAX_KEPT: usize = 64;

impl Analysis {
    pub fn main(&self) -> Option<&Oom> {
        self.ooms.last()
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
