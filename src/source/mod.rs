//! Where samples come from: NVML through nvml-wrapper, or simulated GPUs from a scenario file.
//!
//! Both produce the same [`Sample`]; everything downstream is source-agnostic.

pub mod nvml;
pub mod simulated;

use crate::model::Sample;

pub trait Source: Send {
    /// Reads every device once. Failures become part of the sample, never a panic.
    fn read(&mut self) -> Sample;

    /// Whether the pids are real host pids worth looking up in /proc (false for simulated
    /// GPUs, whose processes carry their own host facts).
    fn host_lookup(&self) -> bool;
}

/// Why no source could be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "no NVIDIA driver found: could not load {lib} ({reason}).\n\
         Is the NVIDIA driver installed? Point gpumon at the library with --nvml-lib PATH or \
         GPUMON_NVML_LIB, or try `gpumon --demo` to see simulated GPUs."
    )]
    NoDriver { lib: String, reason: String },
    #[error("NVML failed to initialise: {0}")]
    Init(String),
    #[error("{path}: {reason}")]
    Scenario { path: String, reason: String },
}
