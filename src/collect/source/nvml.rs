//! NVML through nvml-wrapper, with the traps of `NVML-NOTES.md` handled:
//! - memory v2 (`used` excludes `reserved`), falling back to v1 where `_v2` is missing;
//! - the 32-byte `_v3` process entries of drivers 535.43–535.86 (we read `_v2` there, and drop
//!   pid-0 rows anywhere);
//! - count-then-fill races (retried), unavailable per-process memory (`None`);
//! - NOT_SUPPORTED / NO_PERMISSION / missing symbols per field (`None`, reason kept);
//! - GPU_IS_LOST per device (the device stays, with its error);
//! - the panic in `Nvml`'s `Drop` when `nvmlShutdown` is missing (we shut down ourselves);
//! - calls that hang: each device has its own reader (the sampler gives each a thread), and
//!   `nvmlShutdown` waits for the last reader, so it never runs under an outstanding call.

use std::collections::BTreeMap;
use std::ffi::{c_uint, OsStr};
use std::sync::Arc;

use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

use super::describe;
use nvml_wrapper::{Device as NvDevice, Nvml};
use nvml_wrapper_sys::bindings::{nvmlProcessInfo_t, nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE};

use super::{DeviceReader, OpenError, Opened, Wants};
use crate::model::{Device, Memory, MigDevice, Process, ProcessKind, Utilization};

/// The driver's library name; the unversioned `.so` only exists with development packages.
pub const DEFAULT_LIB: &str = "libnvidia-ml.so.1";

/// How many times a process list is re-read when it grows between count and fill.
const LIST_RETRIES: usize = 4;

/// Facts about a device that do not change while it is attached.
#[derive(Clone, Default)]
struct Identity {
    name: Option<String>,
    uuid: Option<String>,
    pci_bus_id: Option<String>,
    minor_number: Option<u32>,
}

/// The library handle, shared by the per-device readers. The last reader to let go shuts
/// NVML down; a reader blocked in a driver call holds its reference for as long as the call
/// lasts, so `nvmlShutdown` is never called while a call is outstanding (the process may exit
/// first: then the driver cleans up, which is safe, whereas shutting down under a running call
/// is not).
struct Shared {
    nvml: Option<Nvml>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let Some(nvml) = self.nvml.take() else {
            return;
        };
        // `Nvml`'s own Drop calls nvmlShutdown through `.expect()`: with the symbol missing
        // that panics at exit. Shut down explicitly, and leak the handle when we cannot.
        if nvml.lib().nvmlShutdown.is_ok() {
            let _ = nvml.shutdown();
        } else {
            std::mem::forget(nvml);
        }
    }
}

/// Opens NVML; see [`NvmlSource::open`].
pub struct NvmlSource;

/// Reads one GPU through NVML.
pub struct NvmlDevice {
    shared: Arc<Shared>,
    index: u32,
    /// Drivers 535.43–535.86 misreport `_v3` process lists.
    v3_broken: bool,
    identity: Option<Identity>,
    /// The driver has given per-process utilisation samples for this GPU (see
    /// [`super::apply_utilization`]).
    util_seen: bool,
    wants: Wants,
    lists: ListBuffers,
    util: UtilCache,
    /// ECC counts and remapped rows, and when they were read: they change rarely, so they
    /// are read every [`SLOW_HEALTH_EVERY`].
    slow_health: Option<(std::time::Instant, crate::model::health::Health)>,
    /// Whether MIG was on when last asked (`None`: the GPU has no MIG).
    mig_mode: Option<(std::time::Instant, Option<bool>)>,
    /// The device's handle as an address, once looked up, for the memory-only reads: NVML's
    /// handles stay valid until `nvmlShutdown`, and looking one up is a driver call.
    handle: Option<usize>,
    /// Per-process peaks from accounting mode.
    accounting: super::accounting::AccountingReader,
    /// The limits of the processes' cgroups, as last asked.
    limits: super::LimitCache,
}

/// How often per-process utilisation is asked of the driver: on an H100 the call costs about
/// 1.8 ms of CPU per GPU, more than every other read of the GPU together. Between asks the
/// last window's averages are shown.
pub const PROCESS_UTILIZATION_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
/// How often ECC counts and remapped rows are read.
pub const SLOW_HEALTH_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// The per-process utilisation of the last ask.
#[derive(Default)]
struct UtilCache {
    /// When it was asked, and the CPU timestamp (µs) it asked up to.
    asked: Option<(std::time::Instant, u64)>,
    /// Each pid's mean over the window.
    samples: Vec<super::UtilSample>,
    /// The pids listed when it was asked: a pid listed since has no figure yet.
    pids: Vec<u32>,
}

/// "12.4" from NVML's 12040.
pub fn cuda_version_string(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Whether a driver version has the 32-byte `_v3` process-entry bug (gpustat#161).
pub fn has_v3_stride_bug(driver: &str) -> bool {
    let mut parts = driver.split('.').map(|p| p.trim().parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(535), Some(minor)) => (43..=86).contains(&minor),
        _ => false,
    }
}

impl NvmlSource {
    /// Loads NVML from `lib` (default: the driver's `libnvidia-ml.so.1`), initialises it once
    /// and lists the devices. This can block for as long as the driver does: see
    /// [`Opening`](super::Opening).
    pub fn open(lib: Option<&str>) -> Result<Opened, OpenError> {
        let path = lib.unwrap_or(DEFAULT_LIB);
        let nvml = Nvml::builder()
            .lib_path(OsStr::new(path))
            .init()
            .map_err(|e| match e {
                NvmlError::LibloadingError(err) => OpenError::NoDriver {
                    lib: path.to_owned(),
                    reason: err.to_string(),
                },
                NvmlError::DriverNotLoaded | NvmlError::LibraryNotFound => OpenError::NoDriver {
                    lib: path.to_owned(),
                    reason: "the NVIDIA kernel driver is not loaded".into(),
                },
                other => OpenError::Init(other.to_string()),
            })?;
        super::nvml_limits::load(path);
        let driver_version = nvml.sys_driver_version().ok();
        let cuda_version = nvml.sys_cuda_driver_version().ok().map(cuda_version_string);
        let v3_broken = driver_version.as_deref().is_some_and(has_v3_stride_bug);
        let count = nvml.device_count();
        let shared = Arc::new(Shared { nvml: Some(nvml) });
        let (readers, error) = match &count {
            Ok(n) => (
                (0..*n)
                    .map(|index| {
                        Box::new(NvmlDevice {
                            shared: Arc::clone(&shared),
                            index,
                            v3_broken,
                            identity: None,
                            util_seen: false,
                            // Everything, until the sampler says what its view shows.
                            wants: Wants {
                                processes: true,
                                process_utilization: true,
                            },
                            lists: ListBuffers::default(),
                            util: UtilCache::default(),
                            slow_health: None,
                            mig_mode: None,
                            handle: None,
                            accounting: Default::default(),
                            limits: Default::default(),
                        }) as Box<dyn DeviceReader>
                    })
                    .collect(),
                None,
            ),
            Err(e) => (
                Vec::new(),
                Some(format!("cannot count GPUs: {}", describe(e))),
            ),
        };
        let limits = super::nvml_limits::available();
        Ok(Opened {
            limits,
            host: None,
            kind: "nvml",
            driver_version,
            cuda_version,
            readers,
            error,
            host_lookup: true,
            events: Some(Box::new(NvmlEvents {
                shared: Arc::clone(&shared),
                count: count.unwrap_or(0),
            })),
        })
    }
}

impl DeviceReader for NvmlDevice {
    fn read(&mut self) -> Device {
        let shared = Arc::clone(&self.shared);
        match &shared.nvml {
            Some(nvml) => self.read_device(nvml),
            None => Device::failed(self.index, "NVML is shut down".into()),
        }
    }

    fn want(&mut self, wants: Wants) {
        self.wants = wants;
    }

    /// One `nvmlDeviceGetMemoryInfo_v2` on the handle looked up once. v2 only: on a driver
    /// without it the memory-only reads give nothing, and no peak is shown.
    fn read_memory(&mut self) -> Option<super::MemoryNow> {
        let shared = Arc::clone(&self.shared);
        let nvml = shared.nvml.as_ref()?;
        let m = self.device(nvml)?.memory_info().ok()?;
        Some(super::MemoryNow {
            used: m.used,
            total: m.total,
        })
    }

    /// `nvmlDeviceGetMemoryLimits_v1` for each cgroup (its directory under the cgroup root
    /// as `nameSpace`), through [`super::LimitCache`]: a cgroup is asked again at most every
    /// 5 s. Nothing where the driver lacks the call.
    fn read_limits(&mut self, cgroups: &[Arc<str>]) -> super::CgroupLimits {
        if cgroups.is_empty() || !super::nvml_limits::available() {
            return Vec::new();
        }
        let shared = Arc::clone(&self.shared);
        let Some(nvml) = shared.nvml.as_ref() else {
            return Vec::new();
        };
        let Some(dev) = self.device(nvml) else {
            return Vec::new();
        };
        let now = std::time::Instant::now();
        self.limits.get(cgroups, now, |cgroup| {
            let dir = crate::collect::unified::cgroup_dir(cgroup);
            super::nvml_limits::read(&dev, &dir, cgroup)
        })
    }
}

impl NvmlDevice {
    /// The device, on its handle looked up once: NVML's handles stay valid until
    /// `nvmlShutdown`, and looking one up is a driver call.
    fn device<'n>(&mut self, nvml: &'n Nvml) -> Option<NvDevice<'n>> {
        let handle = match self.handle {
            Some(h) => h,
            None => {
                // SAFETY: the handle is only read; it stays valid for `nvml`'s lifetime.
                let h = unsafe { nvml.device_by_index(self.index).ok()?.handle() } as usize;
                self.handle = Some(h);
                h
            }
        };
        // SAFETY: a handle NVML gave for this `nvml`, which `shared` keeps alive.
        Some(unsafe {
            nvml_wrapper::Device::new(handle as nvml_wrapper_sys::bindings::nvmlDevice_t, nvml)
        })
    }
}

impl NvmlDevice {
    fn read_device(&mut self, nvml: &Nvml) -> Device {
        let index = self.index;
        let dev = match nvml.device_by_index(index) {
            Ok(d) => d,
            Err(e) => {
                // Keep what we knew of a GPU that fell off the bus, so views can still name it.
                let known = self.identity.clone().unwrap_or_default();
                return Device {
                    name: known.name,
                    uuid: known.uuid,
                    pci_bus_id: known.pci_bus_id,
                    minor_number: known.minor_number,
                    ..Device::failed(index, describe(&e))
                };
            }
        };
        let identity = match &self.identity {
            Some(id) => id.clone(),
            None => {
                let id = Identity {
                    name: dev.name().ok(),
                    uuid: dev.uuid().ok(),
                    pci_bus_id: dev.pci_info().ok().map(|p| p.bus_id),
                    // Linux only; NOT_SUPPORTED elsewhere: then no holders can be found.
                    minor_number: dev.minor_number().ok(),
                };
                // Only cache a complete identity, so a transient failure is retried.
                if id.name.is_some() && id.uuid.is_some() {
                    self.identity = Some(id.clone());
                }
                id
            }
        };
        let mut errors = BTreeMap::new();
        let mut out = Device {
            index,
            uuid: identity.uuid,
            name: identity.name,
            pci_bus_id: identity.pci_bus_id,
            minor_number: identity.minor_number,
            ..Device::default()
        };

        // Memory first: a GPU that has fallen off the bus says so here.
        match read_memory(nvml, &dev) {
            Ok(m) => out.memory = m,
            Err(NvmlError::GpuLost) => {
                return Device {
                    error: Some("GPU is lost".into()),
                    ..out
                };
            }
            Err(e) => {
                errors.insert("memory", describe(&e));
            }
        }
        match dev.utilization_rates() {
            Ok(u) => {
                out.utilization = Utilization {
                    gpu_percent: Some(u.gpu),
                    memory_percent: Some(u.memory),
                }
            }
            Err(e) => {
                errors.insert("utilization", describe(&e));
            }
        }
        out.temperature_c = field(
            dev.temperature(TemperatureSensor::Gpu),
            "temperature",
            &mut errors,
        );
        out.power_draw_w =
            field(dev.power_usage(), "power", &mut errors).map(|mw| mw as f64 / 1000.0);
        out.power_limit_w = field(dev.enforced_power_limit(), "power_limit", &mut errors)
            .map(|mw| mw as f64 / 1000.0);
        out.fan_percent = field(dev.fan_speed(0), "fan", &mut errors);
        out.health = self.health(nvml, &dev);
        out.container_limit = super::nvml_limits::own_limit(&dev);
        if self.mig_on(&dev) {
            out.mig = read_mig(nvml, &dev);
            // An unprivileged caller (in a container) may not read a MIG GPU's aggregates:
            // its memory is then its MIG devices' sum.
            if errors.contains_key("memory") && !out.mig.is_empty() {
                let sum = |f: fn(&Memory) -> Option<u64>| {
                    out.mig
                        .iter()
                        .try_fold(0u64, |a, m| Some(a.saturating_add(f(&m.memory)?)))
                };
                let summed = Memory {
                    total_bytes: sum(|m| m.total_bytes),
                    used_bytes: sum(|m| m.used_bytes),
                    free_bytes: sum(|m| m.free_bytes),
                    reserved_bytes: None,
                };
                if summed.total_bytes.is_some() {
                    out.memory = summed;
                    errors.remove("memory");
                }
            }
        }
        if errors.values().any(|e| e == "GPU is lost") {
            return Device {
                name: out.name,
                uuid: out.uuid,
                pci_bus_id: out.pci_bus_id,
                ..Device::failed(index, "GPU is lost".into())
            };
        }
        if !self.wants.processes {
            out.field_errors = errors;
            return out;
        }
        let listed = match self.processes(nvml, &dev) {
            // The same for the process lists: each MIG device's, with its instance ids.
            Err(_) if !out.mig.is_empty() => self.mig_processes(nvml, &dev, &out.mig),
            other => other,
        };
        match listed {
            Ok((mut procs, warning)) => {
                if !procs.is_empty() && self.wants.process_utilization {
                    self.utilization(&dev, &mut procs, &mut errors);
                }
                out.processes = procs;
                out.processes_error = warning;
            }
            Err(e) => {
                out.processes_error = Some(format!("cannot list processes: {}", describe(&e)))
            }
        }
        out.accounting = Some(self.accounting.read(nvml, &dev, &mut out.processes));
        out.field_errors = errors;
        out
    }

    /// The processes of each MIG device, read on its own handle, for a caller that may not
    /// read the GPU's lists; each carries its instance's ids.
    fn mig_processes(
        &mut self,
        nvml: &Nvml,
        dev: &NvDevice,
        mig: &[MigDevice],
    ) -> Result<(Vec<Process>, Option<String>), NvmlError> {
        let mut all = Vec::new();
        let mut warnings = Vec::new();
        for m in mig {
            let handle = dev.mig_device_by_index(m.index)?;
            let (mut procs, warning) = self.processes(nvml, &handle)?;
            for p in &mut procs {
                p.gpu_instance_id = p.gpu_instance_id.or(m.gpu_instance_id);
                p.compute_instance_id = p.compute_instance_id.or(m.compute_instance_id);
            }
            all.extend(procs);
            warnings.extend(warning);
        }
        // Fresh buffers next time for the GPU's own lists.
        self.lists = ListBuffers::default();
        Ok((all, warnings.into_iter().next()))
    }

    /// Whether MIG is on, asked every [`SLOW_HEALTH_EVERY`] (turning it on or off takes a
    /// GPU reset), and never again on a GPU that does not support it.
    fn mig_on(&mut self, dev: &NvDevice) -> bool {
        match self.mig_mode {
            Some((_, None)) => return false,
            Some((at, Some(on))) if at.elapsed() < SLOW_HEALTH_EVERY => return on,
            _ => {}
        }
        let on = match dev.mig_mode() {
            Ok(mode) => Some(mode.current == nvml_wrapper_sys::bindings::NVML_DEVICE_MIG_ENABLE),
            Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => None,
            // Another failure (a GPU going away): ask again next time.
            Err(_) => Some(false),
        };
        self.mig_mode = Some((std::time::Instant::now(), on));
        on.unwrap_or(false)
    }

    /// ECC counts and remapped rows (every [`SLOW_HEALTH_EVERY`]) and the clock event
    /// reasons (every read). Unsupported parts stay `None`, without a field error: most GPUs
    /// outside datacenters have neither ECC nor row remapping.
    fn health(&mut self, nvml: &Nvml, dev: &NvDevice) -> crate::model::health::Health {
        use crate::model::health::{EccCounts, Health, RemappedRows};
        use nvml_wrapper_sys::bindings::*;
        let lib = nvml.lib();
        let due = self
            .slow_health
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= SLOW_HEALTH_EVERY);
        if due {
            let ecc_sym = lib.nvmlDeviceGetTotalEccErrors.as_ref().ok();
            let ecc = |kind, counter| {
                let sym = ecc_sym?;
                let mut n: u64 = 0;
                // SAFETY: a valid handle and an out-pointer to a u64.
                let rc = unsafe { sym(dev.handle(), kind, counter, &mut n) };
                (rc == nvmlReturn_enum_NVML_SUCCESS).then_some(n)
            };
            let counts = EccCounts {
                volatile_corrected: ecc(
                    nvmlMemoryErrorType_enum_NVML_MEMORY_ERROR_TYPE_CORRECTED,
                    nvmlEccCounterType_enum_NVML_VOLATILE_ECC,
                ),
                volatile_uncorrected: ecc(
                    nvmlMemoryErrorType_enum_NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                    nvmlEccCounterType_enum_NVML_VOLATILE_ECC,
                ),
                aggregate_corrected: ecc(
                    nvmlMemoryErrorType_enum_NVML_MEMORY_ERROR_TYPE_CORRECTED,
                    nvmlEccCounterType_enum_NVML_AGGREGATE_ECC,
                ),
                aggregate_uncorrected: ecc(
                    nvmlMemoryErrorType_enum_NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                    nvmlEccCounterType_enum_NVML_AGGREGATE_ECC,
                ),
            };
            let remapped = lib.nvmlDeviceGetRemappedRows.as_ref().ok().and_then(|sym| {
                let (mut c, mut u, mut p, mut f) = (0, 0, 0, 0);
                // SAFETY: a valid handle and four out-pointers to c_uint.
                let rc = unsafe { sym(dev.handle(), &mut c, &mut u, &mut p, &mut f) };
                (rc == nvmlReturn_enum_NVML_SUCCESS).then_some(RemappedRows {
                    corrected: c,
                    uncorrected: u,
                    pending: p != 0,
                    failed: f != 0,
                })
            });
            let slow = Health {
                ecc: (counts != EccCounts::default()).then_some(counts),
                remapped_rows: remapped,
                ..Health::default()
            };
            self.slow_health = Some((std::time::Instant::now(), slow));
        }
        let reasons = lib
            .nvmlDeviceGetCurrentClocksEventReasons
            .as_ref()
            .or(lib.nvmlDeviceGetCurrentClocksThrottleReasons.as_ref())
            .ok()
            .and_then(|sym| {
                let mut mask: u64 = 0;
                // SAFETY: a valid handle and an out-pointer to a u64.
                let rc = unsafe { sym(dev.handle(), &mut mask) };
                (rc == nvmlReturn_enum_NVML_SUCCESS).then_some(mask)
            });
        let mut h = self
            .slow_health
            .as_ref()
            .map(|(_, h)| h.clone())
            .unwrap_or_default();
        h.clock_event_reasons = reasons;
        h
    }

    /// Per-process SM and memory-bandwidth utilisation, asked every
    /// [`PROCESS_UTILIZATION_EVERY`]: NVML keeps a buffer of samples with CPU timestamps (µs),
    /// so one ask covers the whole window since the last (each pid's mean over it), and
    /// NOT_FOUND means none in the window. Between asks the last window's figures stand.
    fn utilization(
        &mut self,
        dev: &NvDevice,
        procs: &mut [Process],
        errors: &mut BTreeMap<&'static str, String>,
    ) {
        let cache = &mut self.util;
        let fresh = cache
            .asked
            .is_some_and(|(at, _)| at.elapsed() < PROCESS_UTILIZATION_EVERY);
        if !fresh {
            let now_us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64);
            let since = cache
                .asked
                .map_or(now_us.saturating_sub(1_000_000), |(_, us)| us);
            let samples = match dev.process_utilization_stats(since) {
                Ok(list) => list
                    .into_iter()
                    .map(|s| super::UtilSample {
                        pid: s.pid,
                        timestamp: s.timestamp,
                        sm: s.sm_util,
                        mem: s.mem_util,
                    })
                    .collect(),
                Err(NvmlError::NotFound) => Vec::new(),
                Err(e) => {
                    errors.insert("process_utilization", describe(&e));
                    return;
                }
            };
            cache.asked = Some((std::time::Instant::now(), now_us));
            cache.samples = super::mean_by_pid(&samples);
            cache.pids = procs.iter().map(|p| p.pid).collect();
        }
        super::apply_utilization(procs, &cache.samples, &mut self.util_seen);
        // A process that appeared since the last ask has no figure yet: unknown, not idle.
        for p in procs.iter_mut() {
            if !cache.pids.contains(&p.pid) {
                p.sm_percent = None;
                p.mem_bw_percent = None;
            }
        }
    }

    /// Compute and graphics lists merged by pid.
    fn processes(
        &mut self,
        nvml: &Nvml,
        dev: &NvDevice,
    ) -> Result<(Vec<Process>, Option<String>), NvmlError> {
        let v2 = self.v3_broken;
        let ListBuffers { compute, graphics } = &mut self.lists;
        let compute = read_list(nvml, dev, List::Compute, v2, compute)?;
        // Graphics lists are unsupported on many datacenter GPUs: not an error for the row.
        let graphics = read_list(nvml, dev, List::Graphics, v2, graphics).unwrap_or_default();
        let mut merged: Vec<Process> = Vec::with_capacity(compute.len() + graphics.len());
        let mut garbled = 0usize;
        let lists = [
            (compute, ProcessKind::Compute),
            (graphics, ProcessKind::Graphics),
        ];
        for (list, kind) in lists {
            for p in list {
                // pid 0 is never a GPU process: it is a misread entry (535.43–535.86 layout).
                if p.pid == 0 {
                    garbled += 1;
                    continue;
                }
                let mem = match UsedGpuMemory::from(p.usedGpuMemory) {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                };
                let mut process = Process::from_nvml(p.pid, kind, mem);
                // 0xFFFFFFFF with MIG off.
                process.gpu_instance_id = Some(p.gpuInstanceId).filter(|&id| id != u32::MAX);
                process.compute_instance_id =
                    Some(p.computeInstanceId).filter(|&id| id != u32::MAX);
                merged.push(process);
            }
        }
        // A process in both lists is one row: both kinds, the larger figure.
        merged.sort_unstable_by_key(|p| p.pid);
        merged.dedup_by(|dup, kept| {
            if dup.pid != kept.pid {
                return false;
            }
            kept.kind = kept.kind.merge(dup.kind);
            kept.gpu_memory_bytes = match (kept.gpu_memory_bytes, dup.gpu_memory_bytes) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            true
        });
        let warning = (garbled > 0).then(|| {
            format!("dropped {garbled} malformed process entries from the driver (pid 0)")
        });
        Ok((merged, warning))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Compute,
    Graphics,
}

/// Each process list's entries, kept between reads of one device.
#[derive(Default)]
struct ListBuffers {
    compute: Vec<nvmlProcessInfo_t>,
    graphics: Vec<nvmlProcessInfo_t>,
}

/// Entries allowed over the last answer, for processes that start before the next read.
const LIST_HEADROOM: usize = 5;
/// More processes on one GPU than any driver allows (MPS: 48 or 60 clients).
const MAX_LIST: usize = 1 << 16;

const NO_ENTRY: nvmlProcessInfo_t = nvmlProcessInfo_t {
    pid: 0,
    usedGpuMemory: 0,
    gpuInstanceId: 0,
    computeInstanceId: 0,
};

/// One process list, into `buf`: a single call while the list fits the room the last answer
/// left (nvml-wrapper asks for the count and then fills, two calls on every read), and a
/// larger buffer and another call when it has grown (INSUFFICIENT_SIZE carries the count).
/// `_v2` on the drivers whose `_v3` writes 32-byte entries.
fn read_list<'b>(
    nvml: &Nvml,
    dev: &NvDevice,
    list: List,
    v2: bool,
    buf: &'b mut Vec<nvmlProcessInfo_t>,
) -> Result<&'b [nvmlProcessInfo_t], NvmlError> {
    let lib = nvml.lib();
    let (sym, name) = match (list, v2) {
        (List::Compute, false) => (
            lib.nvmlDeviceGetComputeRunningProcesses_v3.as_ref(),
            "nvmlDeviceGetComputeRunningProcesses_v3",
        ),
        (List::Compute, true) => (
            lib.nvmlDeviceGetComputeRunningProcesses_v2.as_ref(),
            "nvmlDeviceGetComputeRunningProcesses_v2",
        ),
        (List::Graphics, false) => (
            lib.nvmlDeviceGetGraphicsRunningProcesses_v3.as_ref(),
            "nvmlDeviceGetGraphicsRunningProcesses_v3",
        ),
        (List::Graphics, true) => (
            lib.nvmlDeviceGetGraphicsRunningProcesses_v2.as_ref(),
            "nvmlDeviceGetGraphicsRunningProcesses_v2",
        ),
    };
    let Ok(sym) = sym else {
        return Err(NvmlError::FailedToLoadSymbol(name.into()));
    };
    let mut needed = None;
    for _ in 0..LIST_RETRIES {
        let mut count = buf.len() as c_uint;
        let entries = if buf.is_empty() {
            std::ptr::null_mut()
        } else {
            buf.as_mut_ptr()
        };
        // SAFETY: `entries` is null with a count of 0, or `count` initialised entries of the
        // 24-byte layout `_v2` and (on drivers without the stride bug) `_v3` write; the
        // handle is valid for `nvml`'s lifetime.
        let rc = unsafe { sym(dev.handle(), &mut count, entries) };
        if rc == nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE {
            needed = Some(count);
            if count as usize > MAX_LIST {
                // A count no GPU has: a driver answering garbage. Never allocate on its word.
                break;
            }
            buf.resize(count as usize + LIST_HEADROOM, NO_ENTRY);
            continue;
        }
        nvml_wrapper::error::nvml_try(rc)?;
        let n = (count as usize).min(buf.len());
        return Ok(&buf[..n]);
    }
    Err(NvmlError::InsufficientSize(needed.map(|n| n as usize)))
}

/// The MIG devices of a GPU with MIG on: each slot up to the driver's maximum, empty slots
/// (NOT_FOUND) skipped. Name, UUID, memory and instance ids answer per MIG device;
/// utilisation usually does not (NOT_SUPPORTED: kept as a field error, shown as N/A).
fn read_mig(nvml: &Nvml, dev: &NvDevice) -> Vec<MigDevice> {
    let Ok(max) = dev.mig_device_count() else {
        return Vec::new();
    };
    let lib = nvml.lib();
    let id = |sym: Result<&unsafe extern "C" fn(_, *mut c_uint) -> _, _>, m: &NvDevice| {
        let sym = sym.ok()?;
        let mut v: c_uint = 0;
        // SAFETY: a valid MIG handle and an out-pointer to a c_uint.
        let rc = unsafe { sym(m.handle(), &mut v) };
        (rc == nvml_wrapper_sys::bindings::nvmlReturn_enum_NVML_SUCCESS).then_some(v)
    };
    let mut out = Vec::new();
    for slot in 0..max.min(64) {
        let m = match dev.mig_device_by_index(slot) {
            Ok(m) => m,
            Err(_) => continue,
        };
        let mut field_errors = BTreeMap::new();
        let name = m.name().ok();
        let memory = match m.memory_info() {
            Ok(mem) => Memory {
                total_bytes: Some(mem.total),
                used_bytes: Some(mem.used),
                free_bytes: Some(mem.free),
                reserved_bytes: Some(mem.reserved),
            },
            Err(e) => {
                field_errors.insert("memory", describe(&e));
                Memory::default()
            }
        };
        let utilization = match m.utilization_rates() {
            Ok(u) => Utilization {
                gpu_percent: Some(u.gpu),
                memory_percent: Some(u.memory),
            },
            Err(e) => {
                field_errors.insert("utilization", describe(&e));
                Utilization::default()
            }
        };
        out.push(MigDevice {
            index: slot,
            uuid: m.uuid().ok(),
            profile: name.as_deref().and_then(MigDevice::profile_from_name),
            name,
            gpu_instance_id: id(lib.nvmlDeviceGetGpuInstanceId.as_ref(), &m),
            compute_instance_id: id(lib.nvmlDeviceGetComputeInstanceId.as_ref(), &m),
            memory,
            utilization,
            field_errors,
        });
    }
    out
}

/// Watches Xid critical errors through NVML's event API: one event set for every GPU that
/// supports it, waited on a second at a time on the watcher's own thread.
struct NvmlEvents {
    shared: Arc<Shared>,
    count: u32,
}

/// How long one wait on the event set lasts; the stop flag is checked between waits.
const EVENT_WAIT_MS: c_uint = 1000;

impl super::EventWatcher for NvmlEvents {
    fn run(
        self: Box<Self>,
        tx: std::sync::mpsc::Sender<super::HealthEvent>,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) {
        use super::HealthEvent;
        use nvml_wrapper_sys::bindings::*;
        use std::sync::atomic::Ordering;
        let Some(nvml) = &self.shared.nvml else {
            return;
        };
        let lib = nvml.lib();
        let unwatched = |why: String| HealthEvent::Unwatched { index: None, why };
        let (Ok(create), Ok(register), Ok(wait), Ok(free)) = (
            lib.nvmlEventSetCreate.as_ref(),
            lib.nvmlDeviceRegisterEvents.as_ref(),
            lib.nvmlEventSetWait_v2.as_ref(),
            lib.nvmlEventSetFree.as_ref(),
        ) else {
            let _ = tx.send(unwatched("not available in this driver".into()));
            return;
        };
        let mut set: nvmlEventSet_t = std::ptr::null_mut();
        // SAFETY: an out-pointer to the set handle.
        let rc = unsafe { create(&mut set) };
        if let Err(e) = nvml_wrapper::error::nvml_try(rc) {
            let _ = tx.send(unwatched(describe(&e)));
            return;
        }
        let xid = nvmlEventTypeXidCriticalError as u64;
        let mut handles: Vec<(nvmlDevice_t, u32)> = Vec::new();
        for index in 0..self.count {
            let registered = nvml.device_by_index(index).and_then(|d| {
                let supported = d.supported_event_types().map(|t| t.bits()).unwrap_or(xid);
                if supported & xid == 0 {
                    return Err(NvmlError::NotSupported);
                }
                // SAFETY: a valid device handle and the set created above.
                nvml_wrapper::error::nvml_try(unsafe { register(d.handle(), xid, set) })?;
                // SAFETY: the handle stays valid for `nvml`'s lifetime.
                Ok(unsafe { d.handle() })
            });
            let event = match registered {
                Ok(handle) => {
                    handles.push((handle, index));
                    HealthEvent::Watched { index }
                }
                Err(e) => HealthEvent::Unwatched {
                    index: Some(index),
                    why: describe(&e),
                },
            };
            if tx.send(event).is_err() {
                break;
            }
        }
        while !handles.is_empty() && !stop.load(Ordering::Relaxed) {
            // SAFETY: all-zero is a valid nvmlEventData_t (a null handle and integers).
            let mut data: nvmlEventData_t = unsafe { std::mem::zeroed() };
            // SAFETY: the set is live and `data` is caller-owned.
            let rc = unsafe { wait(set, &mut data, EVENT_WAIT_MS) };
            match nvml_wrapper::error::nvml_try(rc) {
                Ok(()) if data.eventType & xid != 0 => {
                    let index = handles
                        .iter()
                        .find(|(h, _)| *h == data.device)
                        .map(|(_, i)| *i);
                    let Some(index) = index else { continue };
                    let event = HealthEvent::Xid {
                        index,
                        xid: data.eventData as u32,
                        gpu_instance_id: Some(data.gpuInstanceId).filter(|&id| id != u32::MAX),
                        at: std::time::SystemTime::now(),
                    };
                    if tx.send(event).is_err() {
                        break;
                    }
                }
                Ok(()) | Err(NvmlError::Timeout) => {}
                // A lost GPU makes every wait return at once: back off, or spin a core.
                Err(_) => {
                    std::thread::sleep(std::time::Duration::from_millis(EVENT_WAIT_MS.into()))
                }
            }
        }
        // SAFETY: the set was created above and is no longer waited on.
        unsafe { free(set) };
    }
}

fn field<T>(
    r: Result<T, NvmlError>,
    name: &'static str,
    errors: &mut BTreeMap<&'static str, String>,
) -> Option<T> {
    r.map_err(|e| errors.insert(name, describe(&e))).ok()
}

/// Memory v2; on drivers without `_v2`, v1 through the same library (then `used` includes the
/// driver reservation, which stays unknown).
fn read_memory(nvml: &Nvml, dev: &NvDevice) -> Result<Memory, NvmlError> {
    match dev.memory_info() {
        Ok(m) => Ok(Memory {
            total_bytes: Some(m.total),
            used_bytes: Some(m.used),
            free_bytes: Some(m.free),
            reserved_bytes: Some(m.reserved),
        }),
        // No `_v2` in this driver: the symbol is missing, or (R510 and older) it answers
        // FUNCTION_NOT_FOUND.
        Err(NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound) => {
            let Ok(sym) = nvml.lib().nvmlDeviceGetMemoryInfo.as_ref() else {
                return Err(NvmlError::FailedToLoadSymbol(
                    "nvmlDeviceGetMemoryInfo".into(),
                ));
            };
            // SAFETY: nvmlMemory_t is plain integers; the handle is valid for `nvml`'s lifetime.
            let mut m: nvml_wrapper_sys::bindings::nvmlMemory_t = unsafe { std::mem::zeroed() };
            let rc = unsafe { sym(dev.handle(), &mut m) };
            nvml_wrapper::error::nvml_try(rc)?;
            Ok(Memory {
                total_bytes: Some(m.total),
                used_bytes: Some(m.used),
                free_bytes: Some(m.free),
                reserved_bytes: None,
            })
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_stride_bug_range() {
        assert!(has_v3_stride_bug("535.43.02"));
        assert!(has_v3_stride_bug("535.86.10"));
        assert!(!has_v3_stride_bug("535.104.05"));
        assert!(!has_v3_stride_bug("535.42"));
        assert!(!has_v3_stride_bug("550.54.15"));
        assert!(!has_v3_stride_bug("garbage"));
    }

    #[test]
    fn cuda_versions() {
        assert_eq!(cuda_version_string(12040), "12.4");
        assert_eq!(cuda_version_string(11080), "11.8");
    }
}
