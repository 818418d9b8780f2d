//! gpumon: shows where GPU memory goes and explains why a job ran out of it.
//!
//! Data path: `source` (NVML | simulated) → `readers` (a blocking worker per device) →
//! `sampler` (assembles on time, marks stalled devices) → `model::Sample` →
//! `model::breakdown` → `model::history` → `output` (once, log) | `tui` (dashboard);
//! pasted text → `oom` (explain, the dashboard's OOM panel).

pub mod app;
pub mod cli;
pub mod estimate;
pub mod host;
pub mod model;
pub mod oom;
pub mod output;
pub mod probe;
pub mod readers;
pub mod resident;
pub mod run;
pub mod sampler;
pub mod scenario;
pub mod serve;
pub mod source;
pub mod tui;
pub mod units;
