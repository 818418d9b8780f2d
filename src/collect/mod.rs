//! Collection: everything between the driver and a [`Sample`](crate::model::Sample).
//!
//! `source` (NVML or simulated GPUs) → `readers` (a blocking worker per device, at most one
//! call outstanding on each) → `sampler` (assembles on time, marks stalled devices) → `host`
//! (user, command, CPU and container of each GPU process, from /proc) and `probe` (allocator
//! figures published from inside `gpumon run`'s jobs). What every view needs to get there
//! (opening the source within a deadline, a sampler that reads no more than the view shows)
//! is here, below the commands.

pub mod exited;
pub mod holders;
pub mod host;
pub mod kubelet;
pub mod owner;
pub mod probe;
pub mod readers;
pub mod sampler;
pub mod source;
pub mod system;
pub mod unified;

use std::path::PathBuf;
use std::time::Duration;

use sampler::{Filter, Sampler};
use source::nvml::NvmlSource;
use source::simulated::Simulated;
use source::{OpenError, Opened, Opening};

/// How long once, log and run wait for NVML to initialise without a timeout: a driver
/// without persistence mode can take seconds to start, which is slow, not broken.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where readings come from and how they are taken: the global flags, as collection needs
/// them.
#[derive(Debug, Clone)]
pub struct Config {
    /// The built-in demo scenario.
    pub demo: bool,
    /// Which built-in machine the demo shows.
    pub demo_machine: source::simulated::DemoMachine,
    /// A scenario file.
    pub scenario: Option<PathBuf>,
    /// The NVML library to load instead of the driver's.
    pub nvml_lib: Option<String>,
    /// Only these GPUs, by index or UUID; empty means all.
    pub gpus: Vec<String>,
    /// How long a device may take to answer (and NVML to initialise).
    pub timeout: Option<Duration>,
    pub interval: Duration,
    /// Memory-only reads per second per GPU between samples (0: none).
    pub peak_rate: f64,
    /// The kubelet's pod-resources socket, asked for pod names where it exists.
    pub kubelet_socket: PathBuf,
}

/// Opens the source `config` names. This can block for as long as the driver does: see
/// [`start_opening`].
pub fn open_source(config: &Config) -> Result<Opened, OpenError> {
    if config.demo {
        return Ok(Simulated::demo_machine(config.demo_machine)?.open());
    }
    if let Some(path) = &config.scenario {
        return Ok(Simulated::from_file(&path.to_string_lossy())?.open());
    }
    // No NVML at all: an integrated GPU (Jetson) may still be read from sysfs.
    NvmlSource::open(config.nvml_lib.as_deref()).or_else(|e| match e {
        OpenError::NoDriver { .. } => source::tegra::open().ok_or(e),
        other => Err(other),
    })
}

/// Opens the source on a thread of its own, so a view can wait for it with a deadline.
pub fn start_opening(config: &Config) -> Opening {
    let config = config.clone();
    Opening::start(move || open_source(&config))
}

/// Opens the source, waiting no longer than the timeout (or [`INIT_TIMEOUT`]).
pub fn open_within_timeout(config: &Config) -> Result<Opened, OpenError> {
    start_opening(config).wait(config.timeout.unwrap_or(INIT_TIMEOUT))
}

/// What a view shows of each GPU's processes, so that the sampler reads nothing more.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    /// The process lists (rows, or only a count and the unattributed memory).
    pub processes: bool,
    /// Their host facts (user, command, CPU…) and probe reports.
    pub host: bool,
    /// Per-process SM and memory-bandwidth shares.
    pub process_utilization: bool,
    /// The host's CPU, memory, swap, load and uptime.
    pub system: bool,
}

impl Needs {
    /// Everything about the GPUs and their processes (`serve`); the dashboard and `once` add
    /// the host's own figures.
    pub const ALL: Needs = Needs {
        processes: true,
        host: true,
        process_utilization: true,
        system: false,
    };
    /// The devices' own figures only.
    pub const DEVICES: Needs = Needs {
        processes: false,
        host: false,
        process_utilization: false,
        system: false,
    };
}

/// A sampler over `source` with the deadline and GPUs `config` gives, reading what `needs`
/// says. A warning about probe reports is printed once, here.
pub fn new_sampler(config: &Config, source: Opened, needs: Needs) -> Sampler {
    let sampler = Sampler::new(
        source,
        Filter {
            gpus: config.gpus.clone(),
            processes: needs.processes,
            host: needs.host,
            process_utilization: needs.process_utilization,
            system: needs.system,
        },
    )
    .with_timeout(config.timeout)
    .with_interval(config.interval)
    .with_peak_rate(config.peak_rate)
    .with_kubelet(&config.kubelet_socket);
    if let Some(w) = &sampler.probe_warning {
        eprintln!("gpumon: {w}");
    }
    sampler
}

/// With `--gpu` given, one tick to learn the GPUs' identities, and the selectors that name
/// none of them as an error ([`Sampler::unmatched_gpus`]); without, nothing to check.
pub fn check_gpus(config: &Config, sampler: &mut Sampler) -> Result<(), String> {
    if config.gpus.is_empty() {
        return Ok(());
    }
    sampler.tick();
    sampler.unmatched_gpus().map_or(Ok(()), Err)
}

/// [`open_within_timeout`], then [`new_sampler`].
pub fn open_sampler(config: &Config, needs: Needs) -> Result<Sampler, OpenError> {
    Ok(new_sampler(config, open_within_timeout(config)?, needs))
}
