//! Scenario files: simulated GPUs over time, faults included.
//!
//! One format drives both `gpumon --demo` (the simulated source) and the fake
//! `libnvidia-ml.so.1` used by the tests, so both see exactly the same numbers at the same
//! scenario time. This file depends on serde alone because the fake library compiles it too
//! (`#[path]`-included), which keeps that test equipment small. The format is documented in
//! `assets/scenarios/README.md`; bump [`FORMAT_VERSION`] on any incompatible change.

use serde::Deserialize;

#[path = "scenario_accounting.rs"]
pub mod accounting;

/// The scenario format version this build understands.
pub const FORMAT_VERSION: u32 = 1;
/// The most MIG devices one GPU has (A100, H100: 7), as `nvmlDeviceGetMaxMigDeviceCount`
/// answers.
pub const MAX_MIG: u32 = 7;
const MIB: f64 = 1048576.0;

/// A whole scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub version: u32,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "default_driver")]
    pub driver_version: String,
    /// CUDA driver version as NVML encodes it: 12040 means 12.4.
    #[serde(default = "default_cuda")]
    pub cuda_driver_version: i32,
    /// When set, scenario time wraps around after this many seconds.
    #[serde(default)]
    pub loop_s: Option<f64>,
    pub devices: Vec<DeviceSpec>,
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// The machine's own memory as `/proc` and `/sys` would say it (MemTotal, MemAvailable,
    /// PSI, NUMA nodes): what a unified or coherent part is shown beside. Used by the
    /// simulated source only, in place of this machine's files; absent, a simulated GPU is
    /// shown beside none (or the tree `GPUMON_HOST_ROOT` names).
    #[serde(default)]
    pub host: Option<HostSpec>,
}

/// The host side of a simulated machine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// `/proc/meminfo`'s MemTotal.
    pub mem_total_mib: u64,
    /// `/proc/meminfo`'s MemAvailable (capped at MemTotal).
    pub mem_available_mib: Curve,
    /// `/proc/pressure/memory`; absent: the kernel has no PSI.
    #[serde(default)]
    pub pressure: Option<PressureSpec>,
    /// `/sys/devices/system/node/node*` (at most [`MAX_NODES`]).
    #[serde(default)]
    pub numa_nodes: Vec<NumaNodeSpec>,
}

/// PSI's `avg10` shares, in percent (capped at 100).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PressureSpec {
    pub some_avg10: Curve,
    #[serde(default)]
    pub full_avg10: Option<Curve>,
}

/// One NUMA node: whether it has CPUs (a coherent GPU's HBM in NUMA mode has none), its
/// MemTotal and MemFree.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaNodeSpec {
    pub id: u32,
    #[serde(default)]
    pub cpus: bool,
    pub total_mib: u64,
    pub free_mib: Curve,
}

/// The most NUMA nodes a scenario may have (Linux's MAX_NUMNODES).
pub const MAX_NODES: usize = 1024;
/// The most cgroup limits one device may have in a scenario.
pub const MAX_LIMITS: usize = 4096;

/// The host side at one moment: bytes, percentages within 0–100.
#[derive(Debug, Clone, PartialEq)]
pub struct HostState {
    pub total: u64,
    pub available: u64,
    /// `some` and `full` avg10.
    pub pressure: Option<(f64, Option<f64>)>,
    /// id, has CPUs, total, free.
    pub nodes: Vec<(u32, bool, u64, u64)>,
}

fn default_driver() -> String {
    "550.54.15".to_owned()
}
fn default_cuda() -> i32 {
    12040
}

/// One simulated GPU.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    pub name: String,
    #[serde(default)]
    pub uuid: Option<String>,
    #[serde(default)]
    pub pci_bus_id: Option<String>,
    /// The minor number of its device node (`/dev/nvidia<minor>`); the index when absent.
    #[serde(default)]
    pub minor_number: Option<u32>,
    pub memory_total_mib: u64,
    /// NVML v2 `reserved`: driver and firmware memory, outside `used`.
    #[serde(default)]
    pub memory_reserved_mib: u64,
    /// Memory in use that belongs to no listed process (other containers, the driver).
    #[serde(default)]
    pub unattributed_mib: Curve,
    #[serde(default)]
    pub utilization_gpu: Curve,
    #[serde(default)]
    pub utilization_memory: Curve,
    #[serde(default = "default_temp")]
    pub temperature_c: Curve,
    #[serde(default = "default_power")]
    pub power_draw_w: Curve,
    #[serde(default)]
    pub power_limit_w: Option<f64>,
    #[serde(default)]
    pub fan_percent: Option<Curve>,
    #[serde(default)]
    pub processes: Vec<ProcessSpec>,
    /// MIG instances: present means MIG mode is on (`[]`: on, with no instance created yet);
    /// absent, the GPU has no MIG (NVML answers NOT_SUPPORTED).
    #[serde(default)]
    pub mig: Option<Vec<MigSpec>>,
    /// ECC error counts; absent: NOT_SUPPORTED (a GPU without ECC, or with it off).
    #[serde(default)]
    pub ecc: Option<EccSpec>,
    /// Row remapping (A100 and later); absent: NOT_SUPPORTED.
    #[serde(default)]
    pub remapped_rows: Option<RemapSpec>,
    /// Clock event (throttle) reasons in force, by time window; none in force: 0.
    #[serde(default)]
    pub clock_event_reasons: Vec<ReasonWindow>,
    /// NVML accounting mode (per-process peaks); absent: NOT_SUPPORTED.
    #[serde(default)]
    pub accounting: Option<accounting::AccountingSpec>,
    /// A cgroup's GPU memory limit on this GPU, as `nvmlDeviceGetMemoryLimits_v1` (R615)
    /// answers it; absent: the call answers NOT_SUPPORTED (no limit set). The simulated
    /// source shows it as the limit of the container gpumon runs in.
    #[serde(default)]
    pub memory_limit: Option<MemoryLimitSpec>,
    /// The limits of other cgroups on this GPU (the containers of its processes), answered
    /// by the same call for their own `nameSpace`.
    #[serde(default)]
    pub memory_limits: Vec<MemoryLimitSpec>,
}

/// A cgroup's GPU memory limit (R615, "MPS v3 memory partitioning").
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryLimitSpec {
    /// The cgroup's path below the cgroup root (`/kubepods/pod1`): the call answers for a
    /// `nameSpace` that ends with it, NOT_SUPPORTED for any other.
    pub cgroup: String,
    /// Absent: no hard limit (NVML's `ULLONG_MAX`).
    #[serde(default)]
    pub hard_mib: Option<u64>,
    /// Absent: no soft limit (0).
    #[serde(default)]
    pub soft_mib: Option<u64>,
    /// What the cgroup holds on the GPU.
    #[serde(default)]
    pub used_mib: Curve,
}

impl MemoryLimitSpec {
    /// Its cgroup, soft (0: none), hard (`u64::MAX`: none) and used bytes at time `t`.
    fn at(&self, t: f64) -> (String, u64, u64, u64) {
        (
            self.cgroup.clone(),
            self.soft_mib.map_or(0, |m| mib_to_bytes(m as f64)),
            self.hard_mib.map_or(u64::MAX, |m| mib_to_bytes(m as f64)),
            mib_to_bytes(self.used_mib.at(t).max(0.0)),
        )
    }
}

/// One MIG device: a GPU instance with its compute instance.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigSpec {
    /// The profile, e.g. `3g.40gb`; the device's name is the parent's plus ` MIG <profile>`.
    pub profile: String,
    /// Default: its position + 1.
    #[serde(default)]
    pub gpu_instance_id: Option<u32>,
    #[serde(default)]
    pub compute_instance_id: u32,
    #[serde(default)]
    pub uuid: Option<String>,
    pub memory_total_mib: u64,
    #[serde(default)]
    pub unattributed_mib: Curve,
    #[serde(default)]
    pub utilization_gpu: Option<Curve>,
    #[serde(default)]
    pub processes: Vec<ProcessSpec>,
}

/// ECC error counts over time (`nvmlDeviceGetTotalEccErrors`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EccSpec {
    #[serde(default)]
    pub volatile_corrected: Curve,
    #[serde(default)]
    pub volatile_uncorrected: Curve,
    #[serde(default)]
    pub aggregate_corrected: Curve,
    #[serde(default)]
    pub aggregate_uncorrected: Curve,
}

/// Remapped rows over time (`nvmlDeviceGetRemappedRows`); `pending` and `failed` are true
/// where their curve is at least 1.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemapSpec {
    #[serde(default)]
    pub corrected: Curve,
    #[serde(default)]
    pub uncorrected: Curve,
    #[serde(default)]
    pub pending: Curve,
    #[serde(default)]
    pub failed: Curve,
}

/// Clock event reasons in force over `[at_s, until_s)`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasonWindow {
    pub reasons: Vec<ClockReason>,
    #[serde(default)]
    pub at_s: f64,
    #[serde(default)]
    pub until_s: Option<f64>,
}

/// NVML's clock event reasons (`nvmlClocksEventReason*`), by their bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockReason {
    GpuIdle,
    ApplicationsClocksSetting,
    SwPowerCap,
    HwSlowdown,
    SyncBoost,
    SwThermalSlowdown,
    HwThermalSlowdown,
    HwPowerBrakeSlowdown,
    DisplayClockSetting,
}

impl ClockReason {
    pub fn bit(self) -> u64 {
        match self {
            ClockReason::GpuIdle => 0x1,
            ClockReason::ApplicationsClocksSetting => 0x2,
            ClockReason::SwPowerCap => 0x4,
            ClockReason::HwSlowdown => 0x8,
            ClockReason::SyncBoost => 0x10,
            ClockReason::SwThermalSlowdown => 0x20,
            ClockReason::HwThermalSlowdown => 0x40,
            ClockReason::HwPowerBrakeSlowdown => 0x80,
            ClockReason::DisplayClockSetting => 0x100,
        }
    }
}

fn default_temp() -> Curve {
    Curve::Const(40.0)
}

/// An idle board: no powered GPU draws 0 W, and gpumon takes a 0 for an unread sensor.
fn default_power() -> Curve {
    Curve::Const(60.0)
}

/// How NVML lists a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProcKind {
    #[default]
    Compute,
    Graphics,
    Both,
}

/// One simulated process on a GPU.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    /// The pid; or, with `pid_file`, read at run time from that file (for tests and demos
    /// whose process starts later: the process is listed once the file holds a number).
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub pid_file: Option<String>,
    #[serde(default)]
    pub kind: ProcKind,
    pub memory_mib: Curve,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default)]
    pub end_s: Option<f64>,
    // Host-side facts, used by the simulated source only: the fake NVML library cannot fake
    // /proc, so on that path gpumon looks the pid up for real.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub cpu_percent: Option<Curve>,
    #[serde(default)]
    pub host_memory_mib: Option<Curve>,
    /// The container, pod or job holding the process, as gpumon would name it.
    #[serde(default)]
    pub container: Option<String>,
    /// The process's `/proc/PID/cgroup`, from which the simulated source derives its owner
    /// (and its container, when `container` is not given).
    #[serde(default)]
    pub cgroup: Option<String>,
    /// Per-process utilisation samples (`nvmlDeviceGetProcessUtilization`): % of time its
    /// kernels ran, and % of memory bandwidth. Without them the process has no samples.
    #[serde(default)]
    pub sm_percent: Option<Curve>,
    #[serde(default)]
    pub mem_bw_percent: Option<Curve>,
    /// What the framework's allocator reports, as `gpumon run`'s probe would (simulated source
    /// only: through the fake NVML library, reports come from real probes).
    #[serde(default)]
    pub allocator: Option<AllocatorSpec>,
}

/// A process's allocator figures over its lifetime (time starts at its `start_s`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllocatorSpec {
    #[serde(default = "pytorch")]
    pub framework: String,
    #[serde(default)]
    pub version: Option<String>,
    /// Handed out by the allocator: at most `reserved_mib`.
    pub allocated_mib: Curve,
    /// Held by the caching allocator (allocated + cached): at most the process's memory.
    pub reserved_mib: Curve,
}

fn pytorch() -> String {
    "pytorch".to_owned()
}

/// What the allocator reports at one moment, capped so that allocated ≤ reserved ≤ the
/// process's memory, as a real allocator's figures are.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocatorState {
    pub framework: String,
    pub version: Option<String>,
    pub allocated: u64,
    pub reserved: u64,
    pub allocated_peak: u64,
    pub reserved_peak: u64,
}

impl AllocatorSpec {
    fn at(&self, local: f64, memory: u64) -> AllocatorState {
        let at = |t: f64| {
            let reserved = mib_to_bytes(self.reserved_mib.at(t)).min(memory);
            (
                mib_to_bytes(self.allocated_mib.at(t)).min(reserved),
                reserved,
            )
        };
        let (allocated, reserved) = at(local);
        // Peaks since the process started: the curves sampled at most 500 times.
        let step = (local / 500.0).max(0.25);
        let mut peaks = (allocated, reserved);
        let mut t = 0.0;
        while t < local {
            let (a, r) = at(t);
            peaks = (peaks.0.max(a), peaks.1.max(r));
            t += step;
        }
        AllocatorState {
            framework: self.framework.clone(),
            version: self.version.clone(),
            allocated,
            reserved,
            allocated_peak: peaks.0,
            reserved_peak: peaks.1,
        }
    }
}

/// A value over scenario time: a constant, or keyframes plus a sawtooth and spikes.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Curve {
    Const(f64),
    Shape(Shape),
}

impl Default for Curve {
    fn default() -> Self {
        Curve::Const(0.0)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    /// `[time_s, value]` keyframes, linearly interpolated and held flat outside.
    #[serde(default)]
    pub points: Vec<(f64, f64)>,
    #[serde(default)]
    pub sawtooth: Option<Sawtooth>,
    #[serde(default)]
    pub spikes: Vec<Spike>,
}

/// A repeating rise-and-drop, like activations within each training step.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sawtooth {
    pub period_s: f64,
    pub amplitude: f64,
    #[serde(default)]
    pub from_s: f64,
    #[serde(default)]
    pub until_s: Option<f64>,
}

/// A flat bump added over `[at_s, at_s + len_s)`, like an evaluation pass.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spike {
    pub at_s: f64,
    pub len_s: f64,
    pub value: f64,
}

impl Curve {
    pub fn at(&self, t: f64) -> f64 {
        match self {
            Curve::Const(v) => *v,
            Curve::Shape(s) => {
                let mut v = interpolate(&s.points, t);
                if let Some(saw) = &s.sawtooth {
                    let active = t >= saw.from_s && saw.until_s.is_none_or(|u| t < u);
                    if active && saw.period_s > 0.0 {
                        let phase = ((t - saw.from_s) % saw.period_s) / saw.period_s;
                        v += saw.amplitude * phase;
                    }
                }
                for spike in &s.spikes {
                    if t >= spike.at_s && t < spike.at_s + spike.len_s {
                        v += spike.value;
                    }
                }
                v.max(0.0)
            }
        }
    }
}

fn interpolate(points: &[(f64, f64)], t: f64) -> f64 {
    let Some(first) = points.first() else {
        return 0.0;
    };
    if t <= first.0 {
        return first.1;
    }
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if t <= b.0 {
            let span = b.0 - a.0;
            if span <= 0.0 {
                return b.1;
            }
            return a.1 + (b.1 - a.1) * (t - a.0) / span;
        }
    }
    points.last().map_or(0.0, |p| p.1)
}

/// Which NVML answer a fault changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Name,
    Uuid,
    Pci,
    Memory,
    Utilization,
    Temperature,
    Power,
    PowerLimit,
    Fan,
    Processes,
    /// Per-process utilisation samples.
    ProcessUtilization,
    /// Event registration and waits (Xid events).
    Events,
    Ecc,
    RemappedRows,
    ClockReasons,
    /// The MIG queries (mode, instances).
    Mig,
    /// A MIG GPU's own memory and process lists, the aggregates of its instances: a caller
    /// without privilege (in a container) gets NO_PERMISSION there and must read each MIG
    /// device.
    MigAggregates,
    /// The accounting queries (mode, buffer size, pids, per-process stats).
    Accounting,
    /// `nvmlDeviceGetMemoryLimits_v1`, a cgroup's GPU memory limits.
    MemoryLimits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Every query on the device answers GPU_IS_LOST.
    DeviceLost,
    /// `field` answers NOT_SUPPORTED.
    NotSupported,
    /// `field` answers NO_PERMISSION.
    NoPermission,
    /// Process `pid` has exited: NVML no longer lists it.
    ProcessExit,
    /// Process `pid` is listed with usedGpuMemory = NVML_VALUE_NOT_AVAILABLE.
    ProcessMemoryUnavailable,
    /// The process list grows between the count call and the fill call, every other fill.
    ProcessListRace,
    /// The process lists answer INSUFFICIENT_SIZE with a count of 4,294,967,295: a driver
    /// answering garbage.
    ProcessListGarbage,
    /// `nvmlDeviceGetMemoryInfo_v2` answers FUNCTION_NOT_FOUND, as on drivers before R510.
    MemoryV2Missing,
    /// Every call on the device (or only on `field`) blocks for `block_s` seconds before it
    /// answers, as on a GPU that is falling off the bus or wedged after an Xid.
    Hang,
    /// `nvmlInit` blocks for `block_s` seconds (a driver without persistence mode, or a wedged
    /// one). Only `at_s = 0` windows matter: initialisation happens at scenario time 0.
    InitHang,
    /// `field` answers SUCCESS with an impossible value (`value`, or a default garbage), as a
    /// failing driver or sensor can.
    Garbage,
    /// An Xid critical error on `device` at `at_s` (with `gpu_instance_id` when it is tied to
    /// a MIG instance), delivered through the event API to sets registered before it.
    Xid,
}

/// A fault event, active over `[at_s, until_s)`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    pub kind: FaultKind,
    #[serde(default)]
    pub device: Option<u32>,
    #[serde(default)]
    pub field: Option<Field>,
    #[serde(default)]
    pub pid: Option<u32>,
    /// How long each call blocks, for `hang` and `init_hang`.
    #[serde(default)]
    pub block_s: Option<f64>,
    /// The value a `garbage` field answers.
    #[serde(default)]
    pub value: Option<u64>,
    /// The Xid number of an `xid` fault.
    #[serde(default)]
    pub xid: Option<u32>,
    /// The MIG GPU instance an `xid` fault is tied to.
    #[serde(default)]
    pub gpu_instance_id: Option<u32>,
    #[serde(default)]
    pub at_s: f64,
    #[serde(default)]
    pub until_s: Option<f64>,
}

impl Fault {
    fn active(&self, t: f64) -> bool {
        t >= self.at_s && self.until_s.is_none_or(|u| t < u)
    }
    fn on_device(&self, index: u32) -> bool {
        self.device.is_none_or(|d| d == index)
    }
}

/// Everything a device reports at one scenario time, faults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceState {
    pub index: u32,
    pub minor_number: u32,
    pub name: String,
    pub uuid: String,
    pub pci_bus_id: String,
    pub lost: bool,
    pub total: u64,
    pub reserved: u64,
    pub used: u64,
    pub free: u64,
    pub utilization_gpu: u32,
    pub utilization_memory: u32,
    pub temperature_c: u32,
    pub power_draw_mw: u32,
    pub power_limit_mw: Option<u32>,
    pub fan_percent: Option<u32>,
    pub processes: Vec<ProcessState>,
    /// Fields that answer an error instead of a value.
    pub denied: Vec<(Field, FaultKind)>,
    pub list_race: bool,
    pub list_garbage: bool,
    pub memory_v2_missing: bool,
    /// Hang faults in force: which calls (`None`: all) block, and for how long.
    pub hangs: Vec<(Option<Field>, f64)>,
    /// MIG mode on, with its devices; `None`: no MIG on this GPU.
    pub mig: Option<Vec<MigState>>,
    /// Volatile corrected, volatile uncorrected, aggregate corrected, aggregate uncorrected;
    /// `None`: no ECC.
    pub ecc: Option<[u64; 4]>,
    /// Corrected rows, uncorrected rows, pending, failed; `None`: no row remapping.
    pub remapped_rows: Option<(u32, u32, bool, bool)>,
    /// The clock event reasons in force, as NVML's bit mask.
    pub clock_reasons: u64,
    /// The cgroup limit on this GPU: its cgroup, soft, hard (`u64::MAX`: none) and used bytes.
    pub memory_limit: Option<(String, u64, u64, u64)>,
    /// Other cgroups' limits on this GPU, the same way.
    pub memory_limits: Vec<(String, u64, u64, u64)>,
}

/// One MIG device at a moment.
#[derive(Debug, Clone, PartialEq)]
pub struct MigState {
    pub slot: u32,
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
    pub profile: String,
    pub name: String,
    pub uuid: String,
    pub total: u64,
    pub used: u64,
    pub free: u64,
    pub utilization_gpu: Option<u32>,
    /// Its processes (also listed on the parent, with the instance ids).
    pub processes: Vec<ProcessState>,
}

/// One delivery of an `xid` fault.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XidOccurrence {
    /// Scenario time (not wrapped by `loop_s`).
    pub at: f64,
    /// The fault's position in the file: with `at`, the order of deliveries.
    pub seq: usize,
    pub device: u32,
    pub xid: u32,
    pub gpu_instance_id: Option<u32>,
}

impl DeviceState {
    /// What a driver answering garbage for `field` reports: `value`, or an impossible default.
    fn garbage(&mut self, field: Option<Field>, value: Option<u64>) {
        let word = |default: u32| value.map_or(default, |v| u32::try_from(v).unwrap_or(u32::MAX));
        match field {
            Some(Field::Memory) => {
                self.used = value.unwrap_or(u64::MAX);
                self.free = self
                    .total
                    .wrapping_sub(self.used)
                    .wrapping_sub(self.reserved);
            }
            Some(Field::Utilization) => {
                self.utilization_gpu = word(u32::MAX);
                self.utilization_memory = word(u32::MAX);
            }
            Some(Field::Temperature) => self.temperature_c = word(0),
            Some(Field::Power) => self.power_draw_mw = word(0),
            Some(Field::PowerLimit) => self.power_limit_mw = Some(word(u32::MAX)),
            Some(Field::Fan) => self.fan_percent = Some(word(u32::MAX)),
            Some(Field::Processes) => {
                for p in &mut self.processes {
                    p.memory = Some(value.unwrap_or(u64::MAX - 1));
                }
            }
            _ => {}
        }
    }

    /// How long a call on `field` (`None`: a call that reads no field, like getting the
    /// handle) blocks before answering, if a hang fault is in force.
    pub fn hang(&self, field: Option<Field>) -> Option<f64> {
        self.hangs
            .iter()
            .filter(|(f, _)| f.is_none() || *f == field)
            .map(|(_, s)| *s)
            .reduce(f64::max)
    }

    /// The limit `nvmlDeviceGetMemoryLimits_v1` answers for `name_space` (a cgroup
    /// directory's full path): the one whose cgroup path it ends with, component by component,
    /// the longest such; `None` (NOT_SUPPORTED) for a cgroup with no limit.
    pub fn limit_for(&self, name_space: &str) -> Option<&(String, u64, u64, u64)> {
        let ns = name_space.trim_end_matches('/');
        self.memory_limit
            .iter()
            .chain(&self.memory_limits)
            .filter(|(cgroup, ..)| {
                let c = cgroup.trim_end_matches('/');
                // "/" (the root) is every path's end; "/a/b" must not match "/xa/b".
                c.is_empty()
                    || ns.strip_suffix(c).is_some_and(|head| {
                        c.starts_with('/') || head.is_empty() || head.ends_with('/')
                    })
            })
            .max_by_key(|(cgroup, ..)| cgroup.trim_end_matches('/').len())
    }

    /// The fault on `field`, if any (NOT_SUPPORTED or NO_PERMISSION).
    pub fn fault(&self, field: Field) -> Option<FaultKind> {
        self.denied
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, k)| *k)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProcessState {
    pub pid: u32,
    pub kind: ProcKind,
    /// `None` when the fault says NVML cannot tell.
    pub memory: Option<u64>,
    pub name: Option<String>,
    pub user: Option<String>,
    pub command: Option<String>,
    pub cpu_percent: Option<f64>,
    pub host_memory: Option<u64>,
    pub container: Option<String>,
    pub cgroup: Option<String>,
    /// Utilisation sample, if the process has one.
    pub sm_percent: Option<u32>,
    pub mem_bw_percent: Option<u32>,
    pub start_s: f64,
    pub allocator: Option<AllocatorState>,
    /// The MIG GPU and compute instance it runs in.
    pub instance: Option<(u32, u32)>,
}

/// Why a scenario could not be used.
#[derive(Debug)]
pub enum ScenarioError {
    Parse(serde_json::Error),
    Version(u32),
    Invalid(String),
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScenarioError::Parse(e) => write!(f, "not a valid scenario: {e}"),
            ScenarioError::Version(v) => write!(
                f,
                "scenario format version {v} is not supported (this build reads version {FORMAT_VERSION})"
            ),
            ScenarioError::Invalid(why) => write!(f, "invalid scenario: {why}"),
        }
    }
}

impl std::error::Error for ScenarioError {}

fn mib_to_bytes(mib: f64) -> u64 {
    (mib.max(0.0) * MIB).round() as u64
}

fn clamp_u32(v: f64) -> u32 {
    v.round().clamp(0.0, u32::MAX as f64) as u32
}

impl Scenario {
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        let scenario: Scenario = serde_json::from_str(text).map_err(ScenarioError::Parse)?;
        if scenario.version != FORMAT_VERSION {
            return Err(ScenarioError::Version(scenario.version));
        }
        if scenario.devices.is_empty() {
            return Err(ScenarioError::Invalid("it lists no devices".into()));
        }
        for (i, d) in scenario.devices.iter().enumerate() {
            if d.memory_total_mib == 0 {
                return Err(ScenarioError::Invalid(format!(
                    "device {i} has memory_total_mib = 0"
                )));
            }
            if d.processes
                .iter()
                .any(|p| p.pid.is_none() == p.pid_file.is_none())
            {
                return Err(ScenarioError::Invalid(format!(
                    "device {i}: each process needs exactly one of pid and pid_file"
                )));
            }
        }
        for (i, d) in scenario.devices.iter().enumerate() {
            let Some(mig) = &d.mig else { continue };
            if !d.processes.is_empty() {
                return Err(ScenarioError::Invalid(format!(
                    "device {i} has MIG on: its processes belong in its MIG instances"
                )));
            }
            let sum: u64 = mig.iter().map(|m| m.memory_total_mib).sum();
            if sum + d.memory_reserved_mib > d.memory_total_mib {
                return Err(ScenarioError::Invalid(format!(
                    "device {i}: its MIG instances hold {sum} MiB, more than the GPU has"
                )));
            }
            if mig.len() > MAX_MIG as usize {
                return Err(ScenarioError::Invalid(format!(
                    "device {i}: a GPU has at most {MAX_MIG} MIG devices"
                )));
            }
            if mig.iter().any(|m| {
                m.processes
                    .iter()
                    .any(|p| p.pid.is_none() == p.pid_file.is_none())
            }) {
                return Err(ScenarioError::Invalid(format!(
                    "device {i}: each process needs exactly one of pid and pid_file"
                )));
            }
        }
        if let Some(i) = scenario
            .devices
            .iter()
            .position(|d| d.memory_limits.len() > MAX_LIMITS)
        {
            return Err(ScenarioError::Invalid(format!(
                "device {i} has more than {MAX_LIMITS} memory_limits"
            )));
        }
        if let Some(h) = &scenario.host {
            if h.mem_total_mib == 0 {
                return Err(ScenarioError::Invalid("host.mem_total_mib is 0".into()));
            }
            if h.numa_nodes.len() > MAX_NODES {
                return Err(ScenarioError::Invalid(format!(
                    "host has more than {MAX_NODES} numa_nodes"
                )));
            }
        }
        if let Some(f) = scenario.faults.iter().find(|f| {
            f.kind == FaultKind::Xid
                && (f.xid.is_none()
                    || f.device
                        .is_none_or(|d| (d as usize) >= scenario.devices.len()))
        }) {
            return Err(ScenarioError::Invalid(format!(
                "an xid fault needs `xid` and the index of an existing `device` (at {} s)",
                f.at_s
            )));
        }
        if let Some(f) = scenario.faults.iter().find(|f| {
            matches!(f.kind, FaultKind::Hang | FaultKind::InitHang)
                && !f.block_s.is_some_and(|s| s.is_finite() && s > 0.0)
        }) {
            return Err(ScenarioError::Invalid(format!(
                "a {:?} fault needs block_s, a number of seconds above 0",
                f.kind
            )));
        }
        Ok(scenario)
    }

    /// Scenario time after `elapsed_s` seconds of wall time, looping if the scenario loops.
    pub fn time(&self, elapsed_s: f64) -> f64 {
        match self.loop_s {
            Some(len) if len > 0.0 => elapsed_s.rem_euclid(len),
            _ => elapsed_s.max(0.0),
        }
    }

    /// The state of every device at scenario time `t`.
    pub fn state_at(&self, t: f64) -> Vec<DeviceState> {
        (0..self.devices.len())
            .map(|i| self.device_at(i as u32, t))
            .collect()
    }

    pub fn device_at(&self, index: u32, t: f64) -> DeviceState {
        let spec = &self.devices[index as usize];
        let faults: Vec<&Fault> = self
            .faults
            .iter()
            .filter(|f| f.on_device(index) && f.active(t))
            .collect();
        let exited = |pid: u32| {
            faults
                .iter()
                .any(|f| f.kind == FaultKind::ProcessExit && f.pid == Some(pid))
        };
        let mem_unavailable = |pid: u32| {
            faults
                .iter()
                .any(|f| f.kind == FaultKind::ProcessMemoryUnavailable && f.pid == Some(pid))
        };

        let total = mib_to_bytes(spec.memory_total_mib as f64);
        let reserved = mib_to_bytes(spec.memory_reserved_mib as f64).min(total);
        let capacity = total - reserved;

        let run = |specs: &[ProcessSpec], used: &mut u64, capacity: u64, instance| {
            let mut out = Vec::new();
            for p in specs {
                let Some(pid) = p.pid.or_else(|| {
                    let file = p.pid_file.as_ref()?;
                    std::fs::read_to_string(file).ok()?.trim().parse().ok()
                }) else {
                    continue;
                };
                let alive = t >= p.start_s && p.end_s.is_none_or(|e| t < e) && !exited(pid);
                if !alive {
                    continue;
                }
                let local = t - p.start_s;
                let bytes = mib_to_bytes(p.memory_mib.at(local)).min(capacity - *used);
                *used += bytes;
                out.push(ProcessState {
                    pid,
                    kind: p.kind,
                    memory: (!mem_unavailable(pid)).then_some(bytes),
                    name: p.name.clone(),
                    user: p.user.clone(),
                    command: p.command.clone(),
                    cpu_percent: p.cpu_percent.as_ref().map(|c| c.at(local)),
                    host_memory: p
                        .host_memory_mib
                        .as_ref()
                        .map(|c| mib_to_bytes(c.at(local))),
                    container: p.container.clone(),
                    cgroup: p.cgroup.clone(),
                    sm_percent: p
                        .sm_percent
                        .as_ref()
                        .map(|c| clamp_u32(c.at(local)).min(100)),
                    mem_bw_percent: p
                        .mem_bw_percent
                        .as_ref()
                        .map(|c| clamp_u32(c.at(local)).min(100)),
                    start_s: p.start_s,
                    allocator: p.allocator.as_ref().map(|a| a.at(local, bytes)),
                    instance,
                });
            }
            out
        };

        let uuid = spec.uuid.clone().unwrap_or_else(|| default_uuid(index));
        let mut used = 0;
        let mut processes = Vec::new();
        let mig = spec.mig.as_ref().map(|instances| {
            instances
                .iter()
                .enumerate()
                .map(|(slot, m)| {
                    let gi = m.gpu_instance_id.unwrap_or(slot as u32 + 1);
                    let ci = m.compute_instance_id;
                    let total = mib_to_bytes(m.memory_total_mib as f64);
                    let mut mig_used = mib_to_bytes(m.unattributed_mib.at(t)).min(total);
                    let procs = run(&m.processes, &mut mig_used, total, Some((gi, ci)));
                    used += mig_used;
                    processes.extend(procs.iter().cloned());
                    MigState {
                        slot: slot as u32,
                        gpu_instance_id: gi,
                        compute_instance_id: ci,
                        profile: m.profile.clone(),
                        name: format!("{} MIG {}", spec.name, m.profile),
                        uuid: m
                            .uuid
                            .clone()
                            .unwrap_or_else(|| default_mig_uuid(index, slot as u32)),
                        total,
                        used: mig_used,
                        free: total - mig_used,
                        utilization_gpu: m
                            .utilization_gpu
                            .as_ref()
                            .map(|c| clamp_u32(c.at(t)).min(100)),
                        processes: procs,
                    }
                })
                .collect::<Vec<_>>()
        });
        if mig.is_none() {
            used = mib_to_bytes(spec.unattributed_mib.at(t)).min(capacity);
            processes = run(&spec.processes, &mut used, capacity, None);
        }
        let used = used.min(capacity);

        let denied = faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::NotSupported | FaultKind::NoPermission))
            .filter_map(|f| f.field.map(|field| (field, f.kind)))
            .collect();

        let mut state = DeviceState {
            index,
            minor_number: spec.minor_number.unwrap_or(index),
            name: spec.name.clone(),
            uuid,
            pci_bus_id: spec
                .pci_bus_id
                .clone()
                .unwrap_or_else(|| format!("00000000:{:02X}:00.0", index + 1)),
            lost: faults.iter().any(|f| f.kind == FaultKind::DeviceLost),
            total,
            reserved,
            used,
            free: capacity - used,
            utilization_gpu: clamp_u32(spec.utilization_gpu.at(t)).min(100),
            utilization_memory: clamp_u32(spec.utilization_memory.at(t)).min(100),
            temperature_c: clamp_u32(spec.temperature_c.at(t)),
            power_draw_mw: clamp_u32(spec.power_draw_w.at(t) * 1000.0),
            power_limit_mw: spec.power_limit_w.map(|w| clamp_u32(w * 1000.0)),
            fan_percent: spec
                .fan_percent
                .as_ref()
                .map(|c| clamp_u32(c.at(t)).min(100)),
            processes,
            denied,
            list_race: faults.iter().any(|f| f.kind == FaultKind::ProcessListRace),
            list_garbage: faults
                .iter()
                .any(|f| f.kind == FaultKind::ProcessListGarbage),
            memory_v2_missing: faults.iter().any(|f| f.kind == FaultKind::MemoryV2Missing),
            hangs: faults
                .iter()
                .filter(|f| f.kind == FaultKind::Hang)
                .filter_map(|f| Some((f.field, f.block_s.filter(|s| *s > 0.0)?)))
                .collect(),
            mig,
            ecc: spec.ecc.as_ref().map(|e| {
                [
                    &e.volatile_corrected,
                    &e.volatile_uncorrected,
                    &e.aggregate_corrected,
                    &e.aggregate_uncorrected,
                ]
                .map(|c| c.at(t).round() as u64)
            }),
            remapped_rows: spec.remapped_rows.as_ref().map(|r| {
                (
                    clamp_u32(r.corrected.at(t)),
                    clamp_u32(r.uncorrected.at(t)),
                    r.pending.at(t) >= 1.0,
                    r.failed.at(t) >= 1.0,
                )
            }),
            clock_reasons: spec
                .clock_event_reasons
                .iter()
                .filter(|w| t >= w.at_s && w.until_s.is_none_or(|u| t < u))
                .flat_map(|w| w.reasons.iter().map(|r| r.bit()))
                .fold(0, |a, b| a | b),
            memory_limit: spec.memory_limit.as_ref().map(|l| l.at(t)),
            memory_limits: spec.memory_limits.iter().map(|l| l.at(t)).collect(),
        };
        for f in faults.iter().filter(|f| f.kind == FaultKind::Garbage) {
            state.garbage(f.field, f.value);
        }
        state
    }

    /// The host side at scenario time `t` (`None`: the scenario has none). Available memory
    /// and node free memory are capped at their totals, pressures at 0–100.
    pub fn host_at(&self, t: f64) -> Option<HostState> {
        let h = self.host.as_ref()?;
        let total = mib_to_bytes(h.mem_total_mib as f64);
        let pct = |c: &Curve| {
            let v = c.at(t);
            if v.is_finite() {
                v.clamp(0.0, 100.0)
            } else {
                0.0
            }
        };
        Some(HostState {
            total,
            available: mib_to_bytes(h.mem_available_mib.at(t)).min(total),
            pressure: h
                .pressure
                .as_ref()
                .map(|p| (pct(&p.some_avg10), p.full_avg10.as_ref().map(pct))),
            nodes: h
                .numa_nodes
                .iter()
                .map(|n| {
                    let total = mib_to_bytes(n.total_mib as f64);
                    (
                        n.id,
                        n.cpus,
                        total,
                        mib_to_bytes(n.free_mib.at(t)).min(total),
                    )
                })
                .collect(),
        })
    }

    /// How long `nvmlInit` blocks at scenario time `t`, if an `init_hang` fault says so.
    pub fn init_hang(&self, t: f64) -> Option<f64> {
        self.faults
            .iter()
            .filter(|f| f.kind == FaultKind::InitHang && f.active(t))
            .filter_map(|f| f.block_s.filter(|s| *s > 0.0))
            .reduce(f64::max)
    }

    /// The first Xid delivery after `after` (a time and a fault position, in delivery order)
    /// on a device `registered` says is watched: scenario time here is not wrapped, and an
    /// `xid` fault of a looping scenario recurs every `loop_s`.
    pub fn next_xid(
        &self,
        registered: impl Fn(u32) -> bool,
        after: (f64, usize),
    ) -> Option<XidOccurrence> {
        let period = self.loop_s.filter(|l| *l > 0.0);
        self.faults
            .iter()
            .enumerate()
            .filter(|(_, f)| f.kind == FaultKind::Xid)
            .filter_map(|(seq, f)| {
                let device = f.device?;
                if !registered(device) {
                    return None;
                }
                let first = |k: f64| f.at_s + k * period.unwrap_or(0.0);
                let at = match period {
                    None => Some(f.at_s).filter(|&a| (a, seq) > after)?,
                    Some(p) => {
                        let k = ((after.0 - f.at_s) / p).floor().max(0.0);
                        [k, k + 1.0, k + 2.0]
                            .into_iter()
                            .map(first)
                            .find(|&a| (a, seq) > after)?
                    }
                };
                Some(XidOccurrence {
                    at,
                    seq,
                    device,
                    xid: f.xid?,
                    gpu_instance_id: f.gpu_instance_id,
                })
            })
            .min_by(|a, b| {
                (a.at, a.seq)
                    .partial_cmp(&(b.at, b.seq))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
    }
}

/// A stable, UUID-shaped identifier for a simulated MIG device that names none.
pub fn default_mig_uuid(parent: u32, slot: u32) -> String {
    format!("MIG-5ca1ab1e-{parent:04x}-4000-8000-{slot:012x}")
}

/// A stable, UUID-shaped identifier for a simulated GPU that names none.
pub fn default_uuid(index: u32) -> String {
    format!("GPU-5ca1ab1e-0000-4000-8000-{:012x}", index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_gpu(extra: &str) -> Scenario {
        let text = format!(
            r#"{{"version":1,"devices":[{{"name":"T","memory_total_mib":1000,"memory_reserved_mib":10,
            "unattributed_mib":5,
            "processes":[{{"pid":7,"memory_mib":{{"points":[[0,0],[10,100]]}}}},
                         {{"pid":8,"memory_mib":50,"start_s":5,"end_s":8}}]}}]{extra}}}"#
        );
        match Scenario::from_json(&text) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_host_side_is_capped_and_checked() {
        let s = one_gpu(
            r#","host":{"mem_total_mib":1024,"mem_available_mib":{"points":[[0,512],[10,4096]]},
                "pressure":{"some_avg10":250,"full_avg10":1.5},
                "numa_nodes":[{"id":1,"total_mib":100,"free_mib":400},{"id":0,"cpus":true,"total_mib":900,"free_mib":10}]}"#,
        );
        let h = s.host_at(0.0).expect("host");
        assert_eq!((h.total, h.available), (1024 * 1048576, 512 * 1048576));
        assert_eq!(s.host_at(10.0).map(|h| h.available), Some(1024 * 1048576));
        assert_eq!(h.pressure, Some((100.0, Some(1.5))));
        assert_eq!(h.nodes[0], (1, false, 100 * 1048576, 100 * 1048576));
        assert_eq!(one_gpu("").host_at(0.0), None);
        let zero = r#"{"version":1,"devices":[{"name":"T","memory_total_mib":1}],
            "host":{"mem_total_mib":0,"mem_available_mib":0}}"#;
        assert!(Scenario::from_json(zero).is_err());
    }

    #[test]
    fn a_limit_answers_for_its_own_cgroup_and_the_longest_wins() {
        let s = Scenario::from_json(
            r#"{"version":1,"devices":[{"name":"T","memory_total_mib":1000,
            "memory_limit":{"cgroup":"/k/a","hard_mib":8},
            "memory_limits":[{"cgroup":"/k/b","hard_mib":4},{"cgroup":"/k","hard_mib":16}]}]}"#,
        )
        .expect("scenario");
        let d = s.device_at(0, 0.0);
        let hard = |ns: &str| d.limit_for(ns).map(|l| l.2 / 1048576);
        assert_eq!(hard("/sys/fs/cgroup/k/a"), Some(8));
        assert_eq!(hard("/sys/fs/cgroup/k/b/"), Some(4));
        assert_eq!(hard("/sys/fs/cgroup/k"), Some(16));
        assert_eq!(
            hard("/sys/fs/cgroup/xk/b"),
            None,
            "not at a component boundary"
        );
        assert_eq!(hard("/sys/fs/cgroup/other"), None);
    }

    #[test]
    fn curves_interpolate_and_add_shapes() {
        let c: Curve = serde_json::from_str(
            r#"{"points":[[0,0],[10,100]],"sawtooth":{"period_s":2,"amplitude":10,"from_s":10},
                "spikes":[{"at_s":20,"len_s":1,"value":50}]}"#,
        )
        .expect("curve");
        assert_eq!(c.at(-1.0), 0.0);
        assert_eq!(c.at(5.0), 50.0);
        assert_eq!(c.at(11.0), 105.0);
        assert_eq!(c.at(20.5), 100.0 + 2.5 + 50.0);
    }

    #[test]
    fn a_30_ms_spike_is_served_for_30_ms_of_each_loop() {
        let s = Scenario::from_json(
            r#"{"version":1,"loop_s":1,"devices":[{"name":"G","memory_total_mib":81920,
                "unattributed_mib":{"points":[[0,20480]],
                                    "spikes":[{"at_s":0.5,"len_s":0.03,"value":59392}]}}]}"#,
        )
        .expect("scenario");
        let used_gib = |elapsed: f64| s.device_at(0, s.time(elapsed)).used >> 30;
        for (elapsed, gib) in [
            (0.499, 20),
            (0.5, 78),
            (0.529, 78),
            (0.531, 20),
            (7.515, 78),
            (7.54, 20),
        ] {
            assert_eq!(used_gib(elapsed), gib, "at {elapsed} s");
        }
    }

    #[test]
    fn memory_adds_up_and_processes_come_and_go() {
        let s = one_gpu("");
        let d = s.device_at(0, 6.0);
        assert_eq!(d.total, 1000 * 1048576);
        assert_eq!(d.reserved, 10 * 1048576);
        assert_eq!(d.processes.len(), 2);
        assert_eq!(d.used, (5 + 60 + 50) * 1048576);
        assert_eq!(d.total, d.used + d.free + d.reserved);
        assert_eq!(s.device_at(0, 9.0).processes.len(), 1);
    }

    #[test]
    fn faults_apply_in_their_window() {
        let s = one_gpu(
            r#","faults":[{"kind":"device_lost","device":0,"at_s":3,"until_s":4},
                {"kind":"not_supported","field":"fan"},
                {"kind":"process_exit","pid":7,"at_s":2},
                {"kind":"process_memory_unavailable","pid":8}]"#,
        );
        assert!(!s.device_at(0, 1.0).lost);
        assert!(s.device_at(0, 3.5).lost);
        assert_eq!(
            s.device_at(0, 0.0).fault(Field::Fan),
            Some(FaultKind::NotSupported)
        );
        let d = s.device_at(0, 6.0);
        assert_eq!(d.processes.len(), 1);
        assert_eq!(d.processes[0].memory, None);
    }

    #[test]
    fn rejects_other_versions_and_empty_files() {
        assert!(matches!(
            Scenario::from_json(r#"{"version":2,"devices":[]}"#),
            Err(ScenarioError::Version(2))
        ));
        assert!(Scenario::from_json(r#"{"version":1,"devices":[]}"#).is_err());
        assert!(Scenario::from_json("garbage").is_err());
    }

    #[test]
    fn pids_can_come_from_a_file() {
        let dir = std::env::temp_dir().join(format!("gpumon-scn-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join("pid");
        let text = format!(
            r#"{{"version":1,"devices":[{{"name":"G","memory_total_mib":10,
               "processes":[{{"pid_file":"{}","memory_mib":1}}]}}]}}"#,
            file.display()
        );
        let s = Scenario::from_json(&text).expect("valid");
        assert!(s.device_at(0, 0.0).processes.is_empty(), "no file yet");
        std::fs::write(&file, "4242\n").expect("write");
        assert_eq!(s.device_at(0, 0.0).processes[0].pid, 4242);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(Scenario::from_json(
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":10,"processes":[{"memory_mib":1}]}]}"#
        )
        .is_err());
    }

    #[test]
    fn hangs_apply_to_their_device_field_and_window() {
        let s = one_gpu(
            r#","faults":[{"kind":"hang","device":0,"block_s":6,"at_s":2,"until_s":4},
                {"kind":"hang","device":0,"field":"fan","block_s":1},
                {"kind":"init_hang","block_s":3}]"#,
        );
        assert_eq!(s.device_at(0, 1.0).hang(None), None);
        assert_eq!(s.device_at(0, 1.0).hang(Some(Field::Fan)), Some(1.0));
        assert_eq!(s.device_at(0, 3.0).hang(None), Some(6.0));
        assert_eq!(s.device_at(0, 3.0).hang(Some(Field::Memory)), Some(6.0));
        assert_eq!(s.device_at(0, 5.0).hang(Some(Field::Memory)), None);
        assert_eq!(s.init_hang(0.0), Some(3.0));
        assert!(Scenario::from_json(
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":10}],"faults":[{"kind":"hang"}]}"#
        )
        .is_err(), "a hang needs its duration");
    }

    #[test]
    fn allocator_figures_are_capped_and_peaks_kept() {
        let s = one_gpu("");
        let mut s2 = s.clone();
        s2.devices[0].processes[0].allocator = Some(AllocatorSpec {
            framework: pytorch(),
            version: None,
            allocated_mib: Curve::Shape(Shape {
                points: vec![(0.0, 0.0), (5.0, 80.0), (10.0, 20.0)],
                sawtooth: None,
                spikes: vec![],
            }),
            reserved_mib: Curve::Const(70.0),
        });
        // At 10 s pid 7 holds 100 MiB; reserved 70, allocated 20, its peak capped at 70.
        let a = s2.device_at(0, 10.0).processes[0]
            .allocator
            .clone()
            .expect("allocator");
        assert_eq!(a.reserved, 70 * 1048576);
        assert_eq!(a.allocated, 20 * 1048576);
        assert_eq!(
            a.allocated_peak,
            70 * 1048576,
            "capped at reserved at its peak"
        );
        assert!(s.device_at(0, 10.0).processes[0].allocator.is_none());
    }

    #[test]
    fn mig_instances_hold_their_processes_and_the_gpu_their_sum() {
        let s = Scenario::from_json(
            r#"{"version":1,"devices":[{"name":"A100","memory_total_mib":81920,"memory_reserved_mib":500,
                "mig":[{"profile":"3g.40gb","memory_total_mib":40000,"unattributed_mib":100,
                        "processes":[{"pid":7,"memory_mib":1000}]},
                       {"profile":"1g.10gb","gpu_instance_id":13,"compute_instance_id":2,"memory_total_mib":10000,
                        "processes":[{"pid":8,"memory_mib":20000}]}]}]}"#,
        )
        .expect("valid");
        let d = s.device_at(0, 0.0);
        let mig = d.mig.as_ref().expect("MIG on");
        assert_eq!((mig[0].gpu_instance_id, mig[0].compute_instance_id), (1, 0));
        assert_eq!(
            (mig[1].gpu_instance_id, mig[1].compute_instance_id),
            (13, 2)
        );
        assert_eq!(mig[0].name, "A100 MIG 3g.40gb");
        assert_eq!(mig[0].used, 1100 * 1048576);
        // A process cannot hold more than its instance.
        assert_eq!(mig[1].used, 10000 * 1048576);
        assert_eq!(mig[1].free, 0);
        assert_eq!(d.used, (1100 + 10000) * 1048576);
        assert_eq!(d.total, d.used + d.free + d.reserved);
        let ids: Vec<_> = d.processes.iter().map(|p| (p.pid, p.instance)).collect();
        assert_eq!(ids, vec![(7, Some((1, 0))), (8, Some((13, 2)))]);
    }

    #[test]
    fn bad_mig_and_xid_specs_are_refused() {
        for bad in [
            // Processes on a MIG GPU itself.
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":100,"processes":[{"pid":1,"memory_mib":1}],"mig":[]}]}"#,
            // Instances larger than the GPU.
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":100,"mig":[{"profile":"a","memory_total_mib":60},{"profile":"b","memory_total_mib":60}]}]}"#,
            // An Xid without its number, or on no device.
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":100}],"faults":[{"kind":"xid","device":0}]}"#,
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":100}],"faults":[{"kind":"xid","xid":79}]}"#,
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":100}],"faults":[{"kind":"xid","xid":79,"device":3}]}"#,
        ] {
            assert!(Scenario::from_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn xids_are_delivered_once_in_order_and_again_each_loop() {
        let text = r#"{"version":1,"devices":[{"name":"G","memory_total_mib":100},{"name":"H","memory_total_mib":100}],
            "faults":[{"kind":"xid","device":1,"xid":79,"at_s":5},
                      {"kind":"xid","device":0,"xid":13,"at_s":5},
                      {"kind":"xid","device":0,"xid":94,"at_s":2,"gpu_instance_id":1}]}"#;
        let s = Scenario::from_json(text).expect("valid");
        let all = |_| true;
        let mut cursor = (0.0, usize::MAX);
        let mut got = Vec::new();
        while let Some(x) = s.next_xid(all, cursor) {
            got.push((x.at, x.device, x.xid, x.gpu_instance_id));
            cursor = (x.at, x.seq);
        }
        assert_eq!(
            got,
            vec![
                (2.0, 0, 94, Some(1)),
                (5.0, 1, 79, None),
                (5.0, 0, 13, None)
            ]
        );
        // Only the devices registered; nothing before the registration.
        assert_eq!(
            s.next_xid(|d| d == 1, (0.0, usize::MAX)).map(|x| x.xid),
            Some(79)
        );
        assert_eq!(s.next_xid(all, (6.0, usize::MAX)), None);
        // A looping scenario delivers each again every loop.
        let mut looping = s.clone();
        looping.loop_s = Some(10.0);
        let next = looping
            .next_xid(|d| d == 1, (6.0, usize::MAX))
            .expect("next loop");
        assert_eq!((next.at, next.xid), (15.0, 79));
    }

    #[test]
    fn health_curves_and_reason_windows() {
        let s = Scenario::from_json(
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":100,
                "ecc":{"aggregate_uncorrected":{"points":[[0,0],[10,4]]}},
                "remapped_rows":{"pending":{"points":[[0,0],[5,0],[5.1,1]]}},
                "clock_event_reasons":[{"reasons":["hw_slowdown"],"at_s":3,"until_s":6},
                                       {"reasons":["sw_power_cap"],"at_s":4}]}]}"#,
        )
        .expect("valid");
        let d = s.device_at(0, 4.5);
        assert_eq!(d.ecc, Some([0, 0, 0, 2]));
        assert_eq!(d.remapped_rows, Some((0, 0, false, false)));
        assert_eq!(d.clock_reasons, 0x8 | 0x4);
        let later = s.device_at(0, 7.0);
        assert_eq!(later.remapped_rows, Some((0, 0, true, false)));
        assert_eq!(later.clock_reasons, 0x4);
        assert_eq!(
            one_gpu("").device_at(0, 0.0).ecc,
            None,
            "no ECC: unsupported"
        );
    }

    #[test]
    fn time_loops() {
        let mut s = one_gpu("");
        s.loop_s = Some(10.0);
        assert_eq!(s.time(25.0), 5.0);
    }
}
