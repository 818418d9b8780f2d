//! What a `gpumon run` job held on each GPU over its run, as figures: kept by the run while it
//! watches (from the samples and the probe's reports) and read by its summary.

use std::collections::{BTreeMap, BTreeSet};

/// What a `gpumon run` job held on one GPU over the whole run: its peaks, its pids and
/// framework, and its memory growing step after step.
#[derive(Default)]
pub struct GpuPeak {
    pub name: Option<String>,
    pub process_bytes: u64,
    pub allocated: u64,
    pub reserved: u64,
    pub pids: BTreeSet<u32>,
    pub framework: Option<String>,
    /// Memory growing step after step, per pid: the newest fit, and what marked the steps.
    pub growth: BTreeMap<u32, (super::StepGrowth, Option<String>)>,
    /// Where what is held across steps was allocated, per pid.
    pub sites: BTreeMap<u32, super::HeldSites>,
    /// The driver's side: the highest used memory of the whole GPU read between samples while
    /// the run's processes were on it (`--peak-rate`; every process on the GPU, not only the
    /// run's); `None` where not measured.
    pub gpu_used_peak: Option<u64>,
    /// The driver's accounting: each of the run's processes' own peak, where accounting is on.
    pub accounting: BTreeMap<u32, u64>,
}
