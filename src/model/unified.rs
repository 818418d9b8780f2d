//! Memory told truly where the GPU shares it (DGX Spark, GH200/GB200, Jetson) and where a
//! container's cgroup limits it: what is measured, what is derived, and from what.
//!
//! The stated model (docs/data-sources.md, "Unified memory and container limits"):
//! - GPU-held memory is the driver's figure where NVML gives one; where it answers
//!   NOT_SUPPORTED (GB10), it is the sum of the processes' allocations NVML lists, marked
//!   derived. It is never MemTotal − MemAvailable: that is the host's own use (nvtop #511).
//! - Headroom on shared memory is what the system can still give (MemAvailable), within the
//!   cgroup's limit where one applies.
//! - A container's GPU memory limit (the `dmem` controller, or NVML R615's
//!   `nvmlDeviceGetMemoryLimits_v1`) is its room: the device's free memory beyond it is not.
//!
//! Pure: the files are read in `collect::unified`; this module parses their text and decides.

use serde::{Deserialize, Serialize};

/// How a device's GPU-held figure was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMethod {
    /// NVML's device memory (`nvmlDeviceGetMemoryInfo_v2`): measured.
    Nvml,
    /// NVML answered NOT_SUPPORTED for the device's memory (a unified-memory part): the sum of
    /// the processes' allocations NVML lists. Derived, and a lower bound: memory no listed
    /// process holds is not in it.
    ProcessSum,
}

impl MemoryMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryMethod::Nvml => "nvml",
            MemoryMethod::ProcessSum => "process_sum",
        }
    }
}

/// How the GPU's own memory (HBM) of a coherent part (GH200/GB200) is handed to the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoherentMode {
    /// The HBM is a NUMA node without CPUs: the kernel can place the host's pages there too.
    Numa,
    /// Coherent Driver Memory Management: the driver keeps the HBM; no NUMA node shows it.
    Cdmm,
}

/// Memory pressure from PSI (`/proc/pressure/memory`): the share of the last 10 s in which
/// some (or all) tasks waited for memory. Measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    pub some_avg10: f64,
    pub full_avg10: Option<f64>,
}

/// A NUMA node that holds memory and no CPUs: a coherent GPU's HBM in NUMA mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HbmNode {
    pub node: u32,
    /// The node's MemTotal and MemFree (its `meminfo`): measured.
    pub total_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    /// What the node holds beyond the GPU processes' allocations: pages the kernel placed
    /// there for the host. Derived (node used − GPU-held), so `None` where either is unknown.
    pub host_bytes: Option<u64>,
}

/// Memory the GPU shares with the host, beside the device's own figures: present only for a
/// part whose memory is unified or coherent, so a discrete GPU's sample is unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedMemory {
    /// How `gpu_held_bytes` was obtained.
    pub method: MemoryMethod,
    /// The GPU's processes' memory: NVML's used where it answers, else the listed processes'
    /// sum (`method`). Never includes the host's own use.
    pub gpu_held_bytes: Option<u64>,
    /// MemTotal and MemAvailable of the system (measured, `/proc/meminfo`).
    pub system_total_bytes: Option<u64>,
    pub system_available_bytes: Option<u64>,
    /// What can still be allocated: MemAvailable, within this container's limit where one
    /// applies. Derived.
    pub headroom_bytes: Option<u64>,
    pub pressure: Option<Pressure>,
    /// GH200/GB200: how the HBM is exposed; `None` for a part with no HBM of its own.
    pub coherent_mode: Option<CoherentMode>,
    pub hbm_node: Option<HbmNode>,
}

/// An integrated GPU's clock and rail gating, as its SoC's sysfs says them (a Jetson read
/// without NVML: devfreq's `cur_freq`, the GPU device's `railgate_enable`). Measured; each
/// `None` where unreadable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocGpu {
    /// The GPU's current clock, MHz.
    pub clock_mhz: Option<u32>,
    /// Whether rail gating is on: the SoC may cut the GPU's power rail while it is idle.
    pub rail_gating: Option<bool>,
}

/// devfreq's `cur_freq` (Hz) as whole MHz; `None` for anything that is not a clock a GPU
/// runs at (0, above 10 GHz, not a number).
pub fn clock_mhz(text: &str) -> Option<u32> {
    let hz: u64 = text.trim().parse().ok()?;
    (1..=10_000_000_000)
        .contains(&hz)
        .then(|| u32::try_from((hz + 500_000) / 1_000_000).ok())
        .flatten()
}

/// A sysfs flag (`0` or `1`); `None` for anything else.
pub fn sysfs_flag(text: &str) -> Option<bool> {
    match text.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// Where a container's GPU memory limit was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitSource {
    /// The kernel's `dmem` cgroup controller (`dmem.max`, `dmem.min`, `dmem.current`).
    Dmem,
    /// `nvmlDeviceGetMemoryLimits_v1` (R615 and later).
    Nvml,
}

/// A cgroup's GPU memory limit on one GPU. Unlimited is `None`, never a huge number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuLimit {
    /// The cgroup's path below the cgroup root (`/kubepods/…`), as `/proc/self/cgroup` names
    /// it.
    pub cgroup: String,
    pub source: LimitSource,
    /// Allocations above it fail with CUDA's out-of-memory error.
    pub hard_bytes: Option<u64>,
    /// Above it, the process is a candidate for eviction under pressure.
    pub soft_bytes: Option<u64>,
    /// What the cgroup holds on this GPU now.
    pub used_bytes: Option<u64>,
}

impl GpuLimit {
    /// Room left under the hard limit; `None` without a hard limit or a current figure.
    pub fn room_bytes(&self) -> Option<u64> {
        Some(self.hard_bytes?.saturating_sub(self.used_bytes?))
    }

    /// Whether the hard limit, not the device, bounds the room: less is left under the limit
    /// than the device has free (`device_free`; unknown counts as bound).
    pub fn binds(&self, device_free: Option<u64>) -> bool {
        match (self.room_bytes(), device_free) {
            (Some(room), Some(free)) => room < free,
            (Some(_), None) => true,
            _ => false,
        }
    }
}

/// The room a job has on a GPU: the device's free memory, within the container's limit.
pub fn room(device_free: Option<u64>, limit: Option<&GpuLimit>) -> Option<u64> {
    match (device_free, limit.and_then(GpuLimit::room_bytes)) {
        (Some(f), Some(r)) => Some(f.min(r)),
        (f, None) => f,
        (None, Some(r)) => Some(r),
    }
}

/// An out-of-memory error raised at a container's GPU memory limit while the device had room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitVerdict {
    pub gpu: u32,
    pub limit: GpuLimit,
    /// The device's free memory beyond the limit, when the error was read.
    pub device_free_bytes: u64,
    /// What to do about a limit, in order.
    pub remedies: Vec<String>,
}

impl LimitVerdict {
    /// One sentence: "The error was raised at this container's GPU memory limit (8.0 GiB,
    /// dmem, cgroup /kubepods/pod1) while GPU 0 had 40.0 GiB free".
    pub fn headline(&self) -> String {
        use crate::units::fmt_bytes;
        format!(
            "The error was raised at this container's GPU memory limit ({} hard, {} in use, cgroup {}) while GPU {} had {} free: the limit, not the GPU, ran out.",
            self.limit.hard_bytes.map_or_else(|| "N/A".to_owned(), fmt_bytes),
            self.limit.used_bytes.map_or_else(|| "N/A".to_owned(), fmt_bytes),
            self.limit.cgroup,
            self.gpu,
            fmt_bytes(self.device_free_bytes)
        )
    }
}

/// The remedies for a job that ran out at its container's limit, in order: a larger limit is
/// the cure when the device has room; a job that fits within the limit is the other.
/// `empty_cache()` is not one: PyTorch's allocator already frees its cache and retries before
/// it raises.
const LIMIT_REMEDIES: &[&str] = &[
    "Ask for a larger GPU memory limit: NVIDIA_GPU_MEMORY_LIMIT on the container (the NVIDIA Container Toolkit applies it), the pod's GPU memory request, or the cgroup's dmem.max from its administrator.",
    "Or shrink the job to fit within the limit: a smaller batch, activation checkpointing, lower precision or sharding.",
];

/// Whether an OOM that reports `said_total` as the GPU's capacity (CUDA reports the limit as
/// the capacity inside a limited cgroup) and asked for `requested` was raised at the
/// container's limit on `d`, while the device itself had room for the request.
pub fn oom_at_limit(
    said_total: Option<u64>,
    requested: Option<u64>,
    d: &super::Device,
) -> Option<LimitVerdict> {
    let limit = d.container_limit.as_ref()?;
    let hard = limit.hard_bytes?;
    let free = d.memory.free_bytes?;
    // CUDA prints the capacity to two decimals in GiB: within 1% of the limit is the limit.
    let capacity_is_limit = said_total.is_some_and(|t| t.abs_diff(hard) <= hard / 100 + (1 << 20));
    let over_room = match (requested, limit.room_bytes()) {
        (Some(r), Some(room)) => r > room,
        _ => false,
    };
    let device_had_room = requested.map_or(free > hard, |r| free >= r);
    (device_had_room && (capacity_is_limit || over_room) && limit.binds(Some(free))).then(|| {
        LimitVerdict {
            gpu: d.index,
            limit: limit.clone(),
            device_free_bytes: free,
            remedies: LIMIT_REMEDIES.iter().map(|r| (*r).to_owned()).collect(),
        }
    })
}

/// How a device's GPU-held figure is obtained: its shared memory's method, else NVML where
/// it reports `used`; `None` where nothing is known.
pub fn method_of(d: &super::Device) -> Option<MemoryMethod> {
    match &d.shared_memory {
        Some(s) => Some(s.method),
        None => d.memory.used_bytes.map(|_| MemoryMethod::Nvml),
    }
}

/// The GPU-held figure: the shared memory's, else NVML's `used`.
pub fn gpu_held_of(d: &super::Device) -> Option<u64> {
    match &d.shared_memory {
        Some(s) => s.gpu_held_bytes,
        None => d.memory.used_bytes,
    }
}

/// A device's room for a job: its free memory, or on a part that reports none, what the
/// system can still give; within the container's limit. What `pick` and `run --wait` count.
pub fn device_room(d: &super::Device) -> Option<u64> {
    let free = d
        .memory
        .free_bytes
        .or_else(|| d.shared_memory.as_ref()?.headroom_bytes);
    room(free, d.container_limit.as_ref())
}

/// The container's hard limit on a device when it, not the device, bounds the room.
pub fn binding_limit(d: &super::Device) -> Option<u64> {
    let l = d.container_limit.as_ref()?;
    l.binds(d.memory.free_bytes).then_some(l.hard_bytes?)
}

/// What can still be allocated on shared memory: MemAvailable, within the limit's room.
pub fn headroom(available: Option<u64>, limit: Option<&GpuLimit>) -> Option<u64> {
    room(available, limit)
}

/// The GPU-held figure and its method: NVML's `used` where the device reports its memory,
/// else the sum of the processes' allocations (`None` when none is known). The host's own use
/// is in neither.
pub fn gpu_held(nvml_used: Option<u64>, processes: &[Option<u64>]) -> (MemoryMethod, Option<u64>) {
    if let Some(u) = nvml_used {
        return (MemoryMethod::Nvml, Some(u));
    }
    let known: Vec<u64> = processes.iter().flatten().copied().collect();
    let sum = (!known.is_empty()).then(|| known.iter().fold(0u64, |a, b| a.saturating_add(*b)));
    (MemoryMethod::ProcessSum, sum)
}

/// Whether a GPU is a coherent part with HBM of its own beside a Grace CPU (GH200, GB200).
/// A table of name fragments, so a new part is a new entry.
const COHERENT: &[&str] = &["GH200", "GB200", "GB300"];
/// Parts whose memory is the system's own (no memory of their own): NVML answers NOT_SUPPORTED.
const UNIFIED: &[&str] = &["GB10", "Orin", "Thor", "Xavier", "Jetson", "Tegra"];

/// What kind of memory a GPU of this name has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    Discrete,
    Coherent,
    Unified,
}

pub fn part_kind(name: Option<&str>) -> PartKind {
    let Some(name) = name else {
        return PartKind::Discrete;
    };
    // Whole words: "GB10" is not "GB100".
    let has = |p: &&str| {
        name.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w.eq_ignore_ascii_case(p))
    };
    if COHERENT.iter().any(has) {
        PartKind::Coherent
    } else if UNIFIED.iter().any(has) {
        PartKind::Unified
    } else {
        PartKind::Discrete
    }
}

/// Bytes from a `meminfo` file (`/proc/meminfo`, or a NUMA node's, whose lines start with
/// `Node N`): the value of `key` in kB, as bytes. `None` when absent or not a number.
pub fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = match line.strip_prefix("Node ") {
            Some(r) => r.split_once(' ')?.1.trim_start(),
            None => line,
        };
        let value = rest.strip_prefix(key)?.strip_prefix(':')?;
        let mut parts = value.split_whitespace();
        let n: u64 = parts.next()?.parse().ok()?;
        match parts.next() {
            Some("kB") => n.checked_mul(1024),
            None => Some(n),
            Some(_) => None,
        }
    })
}

/// PSI's `some`/`full` `avg10` from `/proc/pressure/memory`; `None` when malformed or out of
/// 0–100.
pub fn parse_pressure(text: &str) -> Option<Pressure> {
    let avg10 = |kind: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        let v: f64 = line
            .split_whitespace()
            .find_map(|f| f.strip_prefix("avg10="))?
            .parse()
            .ok()?;
        (v.is_finite() && (0.0..=100.0).contains(&v)).then_some(v)
    };
    Some(Pressure {
        some_avg10: avg10("some ")?,
        full_avg10: avg10("full "),
    })
}

/// The cgroup v2 path of a process from its `/proc/PID/cgroup` (`0::/path`); `None` on
/// cgroup v1 only, or malformed text.
pub fn cgroup_v2_path(text: &str) -> Option<&str> {
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    (path.starts_with('/') && !path.split('/').any(|c| c == "..")).then_some(path)
}

/// A PCI address in one form (`0000:01:00.0`): NVML writes the domain with 8 digits
/// (`00000000:01:00.0`), the kernel with 4. `None` when not an address.
pub fn pci_key(addr: &str) -> Option<(u32, u8, u8, u8)> {
    let (domain, rest) = addr.trim().rsplit_once(':').and_then(|(head, func)| {
        let (domain, bus) = head.split_once(':')?;
        Some((domain, (bus, func)))
    })?;
    let (bus, devfn) = rest;
    let (dev, func) = devfn.split_once('.')?;
    Some((
        u32::from_str_radix(domain, 16).ok()?,
        u8::from_str_radix(bus, 16).ok()?,
        u8::from_str_radix(dev, 16).ok()?,
        u8::from_str_radix(func, 16).ok()?,
    ))
}

/// One value of a dmem file for one GPU: lines `REGION VALUE`, the region naming the device
/// by its PCI address (`drm/0000:01:00.0/vram0`). `Some(None)`: the line says `max` (no
/// limit); `None`: no line for this GPU, or a value that is not a number.
pub fn dmem_value(text: &str, pci: (u32, u8, u8, u8)) -> Option<Option<u64>> {
    text.lines().find_map(|line| {
        let (region, value) = line.trim().rsplit_once(char::is_whitespace)?;
        let ours = region
            .split('/')
            .any(|part| pci_key(part).is_some_and(|k| k == pci));
        if !ours {
            return None;
        }
        match value.trim() {
            "max" => Some(None),
            v => v.parse::<u64>().ok().map(Some),
        }
    })
}

/// The host pages on a coherent GPU's NUMA node: the node's used memory beyond what the GPU's
/// processes hold. `None` where either is unknown.
pub fn host_on_node(total: Option<u64>, free: Option<u64>, gpu_held: Option<u64>) -> Option<u64> {
    let used = total?.checked_sub(free?)?;
    Some(used.saturating_sub(gpu_held?))
}

/// A limit as the text views say it: "7.2 GiB of 8.0 GiB (dmem limit of cgroup /k/c1)". The
/// cgroup is as in the limit: a view escapes it.
pub fn limit_text(l: &GpuLimit) -> String {
    use crate::units::fmt_bytes;
    let na = |v: Option<u64>| v.map_or_else(|| "N/A".to_owned(), fmt_bytes);
    let source = match l.source {
        LimitSource::Dmem => "dmem",
        LimitSource::Nvml => "NVML",
    };
    format!(
        "{} of {} ({source} limit of cgroup {}{})",
        na(l.used_bytes),
        na(l.hard_bytes),
        l.cgroup,
        l.soft_bytes
            .map(|s| format!(", soft {}", fmt_bytes(s)))
            .unwrap_or_default()
    )
}

/// The lines a text view writes under a device: the container's limit, the shared memory and
/// what is measured or derived. Empty for a discrete GPU without a limit. Texts are as in the
/// device: a view escapes the sample first ([`super::Sample::escaped`]).
pub fn notes(d: &super::Device) -> Vec<String> {
    use crate::units::fmt_bytes;
    let na = |v: Option<u64>| v.map_or_else(|| "N/A".to_owned(), fmt_bytes);
    let mut out = Vec::new();
    if let Some(l) = &d.container_limit {
        out.push(format!("this container: {}", limit_text(l)));
    }
    if let Some(s) = &d.shared_memory {
        let held = match s.method {
            MemoryMethod::Nvml => format!("GPU holds {} (NVML)", na(s.gpu_held_bytes)),
            MemoryMethod::ProcessSum => match s.gpu_held_bytes {
                Some(b) => format!(
                    "GPU holds {} (derived: sum of its processes; NVML reports no device memory)",
                    fmt_bytes(b)
                ),
                // Nothing to sum: no process figures (none listed, or no NVML at all).
                None => "GPU holds N/A (no device or process figures)".to_owned(),
            },
        };
        let pressure = s
            .pressure
            .map(|p| format!(", memory pressure {:.1}%", p.some_avg10))
            .unwrap_or_default();
        out.push(format!("shared memory: {held}"));
        out.push(format!(
            "the system can still give {} of {}{pressure}",
            na(s.headroom_bytes),
            na(s.system_total_bytes)
        ));
        match (s.coherent_mode, &s.hbm_node) {
            (Some(CoherentMode::Numa), Some(n)) => out.push(format!(
                "HBM as NUMA node {}: {} free of {}, {} of it placed there for the host (derived)",
                n.node,
                na(n.free_bytes),
                na(n.total_bytes),
                na(n.host_bytes)
            )),
            (Some(CoherentMode::Cdmm), _) => {
                out.push("HBM kept by the driver (CDMM): no NUMA node shows it".to_owned())
            }
            _ => {}
        }
    }
    // After the memory: what the notes are first for.
    if let Some(g) = &d.soc_gpu {
        let clock = g
            .clock_mhz
            .map_or_else(|| "N/A".to_owned(), |m| format!("{m} MHz"));
        let gating = match g.rail_gating {
            Some(true) => "on",
            Some(false) => "off",
            None => "N/A",
        };
        out.push(format!("GPU clock {clock}, rail gating {gating} (sysfs)"));
    }
    out
}

/// The shared pool of a part whose memory is the system's (NVML reports none for the device:
/// GB10, a Jetson), split for the dashboard's gauge. The parts add up to `total` exactly.
/// The GPU's part is its processes' sum and nothing else: the host's own use is `host`, never
/// in `gpu` (the host's use rising leaves `gpu` as it was).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedSplit {
    /// The system's memory, MemTotal: measured.
    pub total: u64,
    /// What the GPU's processes hold: their sum (derived), cut to `total`. `None` where there
    /// is no such figure (a Jetson read without NVML lists no process): not invented.
    pub gpu: Option<u64>,
    /// In use by the rest of the system: MemTotal − MemAvailable − `gpu` (derived). Where
    /// `gpu` is unknown, everything in use, the GPU's unknown share with it.
    pub host: u64,
    /// What the system can still give within this container's limit: the headroom.
    pub free: u64,
    /// What the system could still give but this container's GPU memory limit does not allow.
    pub beyond_limit: u64,
}

impl SharedSplit {
    /// The split of `s`: `None` without MemTotal or MemAvailable (nothing to split). Figures
    /// that do not agree (processes holding more than the system has in use, a headroom past
    /// MemAvailable) are cut to fit, the GPU's part last; the text views give the figures
    /// themselves.
    pub fn of(s: &SharedMemory) -> Option<SharedSplit> {
        let total = s.system_total_bytes.filter(|t| *t > 0)?;
        let available = s.system_available_bytes?.min(total);
        let gpu = s.gpu_held_bytes.map(|g| g.min(total));
        let in_use = total - available;
        // At most `in_use`, so never past what the GPU leaves of the total.
        let host = in_use.saturating_sub(gpu.unwrap_or(0));
        let rest = total - gpu.unwrap_or(0) - host;
        let free = s.headroom_bytes.unwrap_or(available).min(rest);
        Some(SharedSplit {
            total,
            gpu,
            host,
            free,
            beyond_limit: rest - free,
        })
    }
}

impl SharedSplit {
    /// The pool as a process's decomposition reads a device's memory
    /// ([`super::breakdown::Breakdown::process`]): used is the GPU's part (derived), free what
    /// the system can still give; the host's part and what lies beyond the limit are no
    /// process's, so they stay outside every named part (unaccounted), never "other apps".
    pub fn as_memory(&self) -> super::Memory {
        super::Memory {
            total_bytes: Some(self.total),
            used_bytes: self.gpu,
            free_bytes: Some(self.free),
            reserved_bytes: None,
        }
    }
}

/// The shared pool's split where the gauge draws it: a device with shared memory whose own
/// memory NVML does not report (a coherent part's HBM is NVML's, and its gauge stays so),
/// and that has readings (a lost or failed device's gauge says why it has none).
pub fn shared_split(d: &super::Device) -> Option<SharedSplit> {
    if d.memory.total_bytes.is_some() || !d.has_readings() {
        return None;
    }
    SharedSplit::of(d.shared_memory.as_ref()?)
}

/// The shared pool's split as the views say it, shared and derived so that nobody takes it
/// for NVML's figure: "shared memory 120.0 GiB: GPU 63.0 GiB (derived) · host 14.0 GiB · free
/// 43.0 GiB", or in `short` "GPU 63.0 GiB derived / 120.0 GiB shared". Without a GPU figure
/// (a Jetson read without NVML) the GPU is N/A and what is in use is said as the host's and
/// the GPU's together.
pub fn split_text(split: &SharedSplit, short: bool) -> String {
    use crate::units::fmt_bytes;
    if short {
        let gpu = split
            .gpu
            .map_or_else(|| "N/A".to_owned(), |g| format!("{} derived", fmt_bytes(g)));
        return format!("GPU {gpu} / {} shared", fmt_bytes(split.total));
    }
    let gpu = split.gpu.map_or_else(
        || "GPU N/A".to_owned(),
        |g| format!("GPU {} (derived)", fmt_bytes(g)),
    );
    let host = match split.gpu {
        Some(_) => format!("host {}", fmt_bytes(split.host)),
        None => format!("in use {} (host and GPU)", fmt_bytes(split.host)),
    };
    let beyond = if split.beyond_limit > 0 {
        format!(" · beyond the limit {}", fmt_bytes(split.beyond_limit))
    } else {
        String::new()
    };
    format!(
        "shared memory {}: {gpu} · {host} · free {}{beyond}",
        fmt_bytes(split.total),
        fmt_bytes(split.free)
    )
}

/// What the system says about its memory, read by `collect::unified` (all measured).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemFacts {
    pub total_bytes: Option<u64>,
    pub available_bytes: Option<u64>,
    pub pressure: Option<Pressure>,
    /// The NUMA nodes (`/sys/devices/system/node/node*`).
    pub nodes: Vec<NodeFacts>,
}

/// One NUMA node: whether it has CPUs, and its memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub id: u32,
    pub has_cpus: bool,
    pub total_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
}

/// The shared memory of a device: `None` for a discrete GPU (its sample stays as it was,
/// even where its memory read fails: a discrete GPU whose memory answers an error is a
/// failing read, not a unified part). Parts are known by name ([`part_kind`]); a coherent
/// part says whether a CPU-less NUMA node shows its HBM.
pub fn describe(
    device: &crate::model::Device,
    facts: &SystemFacts,
    limit: Option<&GpuLimit>,
) -> Option<SharedMemory> {
    let kind = part_kind(device.name.as_deref());
    if kind == PartKind::Discrete {
        return None;
    }
    let procs: Vec<Option<u64>> = device
        .processes
        .iter()
        .map(|p| p.gpu_memory_bytes)
        .collect();
    let (method, held) = gpu_held(device.memory.used_bytes, &procs);
    let (mode, node) = if kind == PartKind::Coherent {
        match facts
            .nodes
            .iter()
            .find(|n| !n.has_cpus && n.total_bytes.is_some())
        {
            Some(n) => (
                Some(CoherentMode::Numa),
                Some(HbmNode {
                    node: n.id,
                    total_bytes: n.total_bytes,
                    free_bytes: n.free_bytes,
                    host_bytes: host_on_node(n.total_bytes, n.free_bytes, held),
                }),
            ),
            None => (Some(CoherentMode::Cdmm), None),
        }
    } else {
        (None, None)
    };
    Some(SharedMemory {
        method,
        gpu_held_bytes: held,
        system_total_bytes: facts.total_bytes,
        system_available_bytes: facts.available_bytes,
        headroom_bytes: headroom(facts.available_bytes, limit),
        pressure: facts.pressure,
        coherent_mode: mode,
        hbm_node: node,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn meminfo_reads_kb_as_bytes() {
        let text =
            "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   98304000 kB\n";
        assert_eq!(meminfo_bytes(text, "MemTotal"), Some(131072000 * 1024));
        assert_eq!(meminfo_bytes(text, "MemAvailable"), Some(98304000 * 1024));
        assert_eq!(meminfo_bytes(text, "Mem"), None);
        assert_eq!(meminfo_bytes("MemTotal: lots kB", "MemTotal"), None);
        assert_eq!(
            meminfo_bytes("MemTotal: 99999999999999999999 kB", "MemTotal"),
            None
        );
    }

    #[test]
    fn node_meminfo_lines_are_read() {
        let text = "Node 1 MemTotal:       100663296 kB\nNode 1 MemFree:        50331648 kB\n";
        assert_eq!(meminfo_bytes(text, "MemTotal"), Some(96 * GIB));
        assert_eq!(meminfo_bytes(text, "MemFree"), Some(48 * GIB));
    }

    #[test]
    fn pressure_is_parsed_and_checked() {
        let text = "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\nfull avg10=4.25 avg60=0.00 avg300=0.00 total=9\n";
        assert_eq!(
            parse_pressure(text),
            Some(Pressure {
                some_avg10: 12.5,
                full_avg10: Some(4.25)
            })
        );
        assert_eq!(parse_pressure("some avg10=400 avg60=0"), None);
        assert_eq!(parse_pressure("some avg10=NaN"), None);
        assert_eq!(parse_pressure(""), None);
    }

    #[test]
    fn cgroup_path_is_v2_only_and_never_climbs() {
        assert_eq!(
            cgroup_v2_path("0::/kubepods/pod1/c1\n"),
            Some("/kubepods/pod1/c1")
        );
        assert_eq!(cgroup_v2_path("12:memory:/docker/abc\n"), None);
        assert_eq!(cgroup_v2_path("0::/../../etc\n"), None);
        assert_eq!(cgroup_v2_path("0::relative\n"), None);
    }

    #[test]
    fn clocks_are_hz_in_reason_and_flags_are_zero_or_one() {
        assert_eq!(clock_mhz("1300500000\n"), Some(1301));
        assert_eq!(clock_mhz("306000000"), Some(306));
        assert_eq!(clock_mhz("0"), None);
        assert_eq!(clock_mhz("99999999999"), None);
        assert_eq!(clock_mhz("-1"), None);
        assert_eq!(clock_mhz("fast"), None);
        assert_eq!(sysfs_flag("1\n"), Some(true));
        assert_eq!(sysfs_flag("0"), Some(false));
        assert_eq!(sysfs_flag("2"), None);
    }

    #[test]
    fn pci_addresses_of_either_width_match() {
        assert_eq!(pci_key("00000000:01:00.0"), pci_key("0000:01:00.0"));
        assert_eq!(pci_key("0000:C1:00.0"), Some((0, 0xc1, 0, 0)));
        assert_eq!(pci_key("vram0"), None);
        assert_eq!(pci_key("drm"), None);
    }

    #[test]
    fn dmem_lines_are_keyed_by_the_gpu() {
        let text = "drm/0000:01:00.0/vram0 8589934592\ndrm/0000:02:00.0/vram0 max\n";
        let gpu0 = pci_key("00000000:01:00.0").expect("address");
        let gpu1 = pci_key("00000000:02:00.0").expect("address");
        let gpu2 = pci_key("00000000:03:00.0").expect("address");
        assert_eq!(dmem_value(text, gpu0), Some(Some(8 * GIB)));
        assert_eq!(dmem_value(text, gpu1), Some(None));
        assert_eq!(dmem_value(text, gpu2), None);
        assert_eq!(dmem_value("drm/0000:01:00.0/vram0 -5", gpu0), None);
    }

    #[test]
    fn the_limit_is_the_room_when_it_binds() {
        let limit = GpuLimit {
            cgroup: "/c".into(),
            source: LimitSource::Dmem,
            hard_bytes: Some(8 * GIB),
            soft_bytes: None,
            used_bytes: Some(7 * GIB),
        };
        assert_eq!(limit.room_bytes(), Some(GIB));
        assert_eq!(room(Some(40 * GIB), Some(&limit)), Some(GIB));
        assert!(limit.binds(Some(40 * GIB)));
        assert!(!limit.binds(Some(GIB / 2)));
        assert_eq!(room(Some(40 * GIB), None), Some(40 * GIB));
        let unlimited = GpuLimit {
            hard_bytes: None,
            ..limit
        };
        assert_eq!(room(Some(40 * GIB), Some(&unlimited)), Some(40 * GIB));
        assert!(!unlimited.binds(Some(40 * GIB)));
    }

    #[test]
    fn a_part_that_reports_nothing_sums_its_processes() {
        assert_eq!(
            gpu_held(Some(5), &[Some(1), Some(2)]),
            (MemoryMethod::Nvml, Some(5))
        );
        assert_eq!(
            gpu_held(None, &[Some(GIB), None, Some(2 * GIB)]),
            (MemoryMethod::ProcessSum, Some(3 * GIB))
        );
        assert_eq!(gpu_held(None, &[None]), (MemoryMethod::ProcessSum, None));
    }

    #[test]
    fn parts_are_told_apart_by_a_table() {
        assert_eq!(part_kind(Some("NVIDIA GB10")), PartKind::Unified);
        assert_eq!(part_kind(Some("NVIDIA GH200 480GB")), PartKind::Coherent);
        assert_eq!(part_kind(Some("NVIDIA A100-SXM4-40GB")), PartKind::Discrete);
        assert_eq!(part_kind(None), PartKind::Discrete);
        assert_eq!(part_kind(Some("NVIDIA GB100")), PartKind::Discrete);
    }

    #[test]
    fn host_pages_on_the_hbm_node_are_the_rest_of_its_use() {
        assert_eq!(
            host_on_node(Some(96 * GIB), Some(40 * GIB), Some(50 * GIB)),
            Some(6 * GIB)
        );
        assert_eq!(host_on_node(Some(96 * GIB), Some(40 * GIB), None), None);
        assert_eq!(host_on_node(Some(GIB), Some(2 * GIB), Some(0)), None);
    }

    fn device(name: &str, used: Option<u64>, procs: &[Option<u64>]) -> crate::model::Device {
        crate::model::Device {
            name: Some(name.into()),
            memory: crate::model::Memory {
                used_bytes: used,
                total_bytes: used.map(|u| u.saturating_mul(2)),
                ..Default::default()
            },
            processes: procs
                .iter()
                .enumerate()
                .map(|(i, m)| crate::model::Process {
                    pid: i as u32 + 1,
                    kind: crate::model::ProcessKind::Compute,
                    gpu_memory_bytes: *m,
                    name: None,
                    user: None,
                    command: None,
                    cpu_percent: None,
                    host_memory_bytes: None,
                    start_time: None,
                    container: None,
                    owner: None,
                    sm_percent: None,
                    mem_bw_percent: None,
                    allocator: None,
                    peak_bytes: None,
                    state: None,
                    parent_pid: None,
                    gpu_instance_id: None,
                    compute_instance_id: None,
                    cgroup: None,
                    gpu_limit: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_discrete_gpu_has_no_shared_memory() {
        let facts = SystemFacts {
            total_bytes: Some(64 * GIB),
            available_bytes: Some(32 * GIB),
            ..Default::default()
        };
        let d = device("NVIDIA A100-SXM4-40GB", Some(GIB), &[Some(GIB)]);
        assert_eq!(describe(&d, &facts, None), None);
    }

    #[test]
    fn a_gb10_is_told_by_its_processes_and_the_systems_room() {
        let facts = SystemFacts {
            total_bytes: Some(128 * GIB),
            available_bytes: Some(100 * GIB),
            pressure: Some(Pressure {
                some_avg10: 1.0,
                full_avg10: None,
            }),
            ..Default::default()
        };
        let d = device("NVIDIA GB10", None, &[Some(10 * GIB), Some(2 * GIB)]);
        let s = describe(&d, &facts, None).expect("unified");
        assert_eq!(s.method, MemoryMethod::ProcessSum);
        assert_eq!(s.gpu_held_bytes, Some(12 * GIB));
        assert_eq!(s.headroom_bytes, Some(100 * GIB));
        assert_eq!(s.coherent_mode, None);
    }

    #[test]
    fn a_gh200_says_its_mode() {
        let numa = SystemFacts {
            total_bytes: Some(576 * GIB),
            available_bytes: Some(400 * GIB),
            nodes: vec![
                NodeFacts {
                    id: 0,
                    has_cpus: true,
                    total_bytes: Some(480 * GIB),
                    free_bytes: Some(300 * GIB),
                },
                NodeFacts {
                    id: 1,
                    has_cpus: false,
                    total_bytes: Some(96 * GIB),
                    free_bytes: Some(40 * GIB),
                },
            ],
            ..Default::default()
        };
        let d = device("NVIDIA GH200 480GB", Some(50 * GIB), &[Some(50 * GIB)]);
        let s = describe(&d, &numa, None).expect("coherent");
        assert_eq!(s.method, MemoryMethod::Nvml);
        assert_eq!(s.coherent_mode, Some(CoherentMode::Numa));
        let node = s.hbm_node.expect("node");
        assert_eq!((node.node, node.host_bytes), (1, Some(6 * GIB)));
        let cdmm = SystemFacts {
            nodes: numa.nodes[..1].to_vec(),
            ..numa
        };
        let s = describe(&d, &cdmm, None).expect("coherent");
        assert_eq!(s.coherent_mode, Some(CoherentMode::Cdmm));
        assert_eq!(s.hbm_node, None);
    }

    #[test]
    fn an_oom_at_the_limit_with_the_device_half_free_is_the_limits() {
        let mut d = device("NVIDIA A100-SXM4-80GB", Some(47 * GIB), &[Some(7 * GIB)]);
        d.memory.free_bytes = Some(33 * GIB);
        d.container_limit = Some(GpuLimit {
            cgroup: "/kubepods/pod1".into(),
            source: LimitSource::Dmem,
            hard_bytes: Some(8 * GIB),
            soft_bytes: None,
            used_bytes: Some(7 * GIB + GIB / 2),
        });
        let v = oom_at_limit(Some(8 * GIB), Some(2 * GIB), &d).expect("at the limit");
        assert_eq!(v.device_free_bytes, 33 * GIB);
        assert!(v.headline().contains("8.0 GiB hard"), "{}", v.headline());
        assert!(v.remedies[0].contains("NVIDIA_GPU_MEMORY_LIMIT"));
        // The device itself was full: not the limit's doing alone.
        d.memory.free_bytes = Some(GIB);
        assert_eq!(oom_at_limit(Some(8 * GIB), Some(2 * GIB), &d), None);
        // No limit: nothing to say.
        d.memory.free_bytes = Some(33 * GIB);
        d.container_limit = None;
        assert_eq!(oom_at_limit(Some(8 * GIB), Some(2 * GIB), &d), None);
    }

    #[test]
    fn pick_counts_the_limit_as_the_room() {
        let mut d = device("NVIDIA A100-SXM4-80GB", Some(40 * GIB), &[]);
        d.memory.free_bytes = Some(40 * GIB);
        assert_eq!(device_room(&d), Some(40 * GIB));
        assert_eq!(binding_limit(&d), None);
        d.container_limit = Some(GpuLimit {
            cgroup: "/c".into(),
            source: LimitSource::Nvml,
            hard_bytes: Some(8 * GIB),
            soft_bytes: Some(4 * GIB),
            used_bytes: Some(6 * GIB),
        });
        assert_eq!(device_room(&d), Some(2 * GIB));
        assert_eq!(binding_limit(&d), Some(8 * GIB));
    }

    fn shared(gpu: Option<u64>, total: u64, available: u64, headroom: u64) -> SharedMemory {
        SharedMemory {
            method: MemoryMethod::ProcessSum,
            gpu_held_bytes: gpu,
            system_total_bytes: Some(total),
            system_available_bytes: Some(available),
            headroom_bytes: Some(headroom),
            pressure: None,
            coherent_mode: None,
            hbm_node: None,
        }
    }

    #[test]
    fn the_shared_gauge_splits_the_pool_into_gpu_host_and_free() {
        // The Spark demo: 120 GiB, 43 GiB available, the processes hold 63 GiB.
        let s = shared(Some(63 * GIB), 120 * GIB, 43 * GIB, 43 * GIB);
        let split = SharedSplit::of(&s).expect("split");
        assert_eq!(
            (split.gpu, split.host, split.free, split.beyond_limit),
            (Some(63 * GIB), 14 * GIB, 43 * GIB, 0)
        );
        // A container's limit leaves 5 GiB of the 43: the other 38 are beyond it.
        let split =
            SharedSplit::of(&shared(Some(63 * GIB), 120 * GIB, 43 * GIB, 5 * GIB)).expect("split");
        assert_eq!((split.free, split.beyond_limit), (5 * GIB, 38 * GIB));
        // A Jetson without NVML: no GPU figure, so everything in use is the host's and the
        // GPU's together, and none of it is drawn as the GPU's.
        let split = SharedSplit::of(&shared(None, 61 * GIB, 46 * GIB, 46 * GIB)).expect("split");
        assert_eq!(
            (split.gpu, split.host, split.free),
            (None, 15 * GIB, 46 * GIB)
        );
        // Figures that disagree (the processes hold more than is in use) fit the total, and
        // the GPU's part stays its figure.
        let split = SharedSplit::of(&shared(Some(100 * GIB), 120 * GIB, 43 * GIB, 43 * GIB))
            .expect("split");
        assert_eq!(
            (split.gpu, split.host, split.free),
            (Some(100 * GIB), 0, 20 * GIB)
        );
        // Nothing to split without the system's figures.
        let mut unknown = shared(Some(GIB), 120 * GIB, 43 * GIB, 43 * GIB);
        unknown.system_available_bytes = None;
        assert_eq!(SharedSplit::of(&unknown), None);
        unknown.system_available_bytes = Some(GIB);
        unknown.system_total_bytes = Some(0);
        assert_eq!(SharedSplit::of(&unknown), None);
    }

    #[test]
    fn a_process_on_the_shared_pool_sees_the_other_processes_not_the_host_as_other_apps() {
        use crate::model::breakdown::{Breakdown, PartKind, ProcessMemory};
        let split =
            SharedSplit::of(&shared(Some(63 * GIB), 120 * GIB, 43 * GIB, 43 * GIB)).expect("split");
        let this = ProcessMemory {
            total: Some(60 * GIB),
            ..Default::default()
        };
        let b = Breakdown::process(&split.as_memory(), this).expect("breakdown");
        assert_eq!(b.get(PartKind::ThisProcess), Some(60 * GIB));
        assert_eq!(b.get(PartKind::OtherApps), Some(3 * GIB));
        assert_eq!(b.get(PartKind::Free), Some(43 * GIB));
        // The host's 14 GiB: no process's.
        assert_eq!(b.get(PartKind::Unaccounted), Some(14 * GIB));
    }

    #[test]
    fn the_split_is_said_as_shared_and_derived() {
        let split =
            SharedSplit::of(&shared(Some(63 * GIB), 120 * GIB, 43 * GIB, 5 * GIB)).expect("split");
        assert_eq!(
            split_text(&split, false),
            "shared memory 120.0 GiB: GPU 63.0 GiB (derived) · host 14.0 GiB · free 5.0 GiB · beyond the limit 38.0 GiB"
        );
        assert_eq!(
            split_text(&split, true),
            "GPU 63.0 GiB derived / 120.0 GiB shared"
        );
        let jetson = SharedSplit::of(&shared(None, 61 * GIB, 46 * GIB, 46 * GIB)).expect("split");
        assert_eq!(
            split_text(&jetson, false),
            "shared memory 61.0 GiB: GPU N/A · in use 15.0 GiB (host and GPU) · free 46.0 GiB"
        );
        assert_eq!(split_text(&jetson, true), "GPU N/A / 61.0 GiB shared");
    }

    #[test]
    fn only_a_part_without_its_own_memory_figures_gets_the_shared_gauge() {
        let mut d = device("NVIDIA GB10", None, &[Some(GIB)]);
        d.shared_memory = Some(shared(Some(GIB), 120 * GIB, 43 * GIB, 43 * GIB));
        assert!(shared_split(&d).is_some());
        // Failed: no readings to draw; stalled: its last ones, greyed by the view.
        d.error = Some("GPU is lost".into());
        assert_eq!(shared_split(&d), None);
        d.stalled = true;
        assert!(shared_split(&d).is_some());
        // A GH200: NVML reports the HBM, and its gauge is NVML's.
        let mut d = device("NVIDIA GH200 480GB", Some(GIB), &[Some(GIB)]);
        d.shared_memory = Some(shared(Some(GIB), 576 * GIB, 400 * GIB, 400 * GIB));
        assert_eq!(shared_split(&d), None);
        let d = device("NVIDIA A100-SXM4-40GB", None, &[Some(GIB)]);
        assert_eq!(shared_split(&d), None);
    }

    proptest! {
        /// On any machine, no GPU figure counts memory the host uses for itself: the host's
        /// own use (MemTotal − MemAvailable, the common fallback) moves, the GPU-held figure
        /// does not; it is NVML's or the processes' sum, and the headroom never exceeds what
        /// the system can give or the limit's room.
        #[test]
        fn no_gpu_figure_counts_the_hosts_own_use(
            total in 1u64..(1 << 45),
            host_use_a in 0u64..(1 << 45),
            host_use_b in 0u64..(1 << 45),
            procs in proptest::collection::vec(proptest::option::of(0u64..(1 << 40)), 0..8),
            nvml in proptest::option::of(0u64..(1 << 45)),
            name in prop_oneof![Just("NVIDIA GB10"), Just("NVIDIA GH200 480GB"), Just("Orin")],
            hard in proptest::option::of(0u64..(1 << 45)),
            used in 0u64..(1 << 45),
        ) {
            let d = device(name, nvml, &procs);
            let limit = GpuLimit {
                cgroup: "/c".into(),
                source: LimitSource::Dmem,
                hard_bytes: hard,
                soft_bytes: None,
                used_bytes: Some(used),
            };
            let facts = |host_use: u64| SystemFacts {
                total_bytes: Some(total),
                available_bytes: Some(total.saturating_sub(host_use)),
                nodes: vec![NodeFacts {
                    id: 1,
                    has_cpus: false,
                    total_bytes: Some(total),
                    free_bytes: Some(total.saturating_sub(host_use)),
                }],
                ..Default::default()
            };
            let a = describe(&d, &facts(host_use_a), Some(&limit)).expect("shared");
            let b = describe(&d, &facts(host_use_b), Some(&limit)).expect("shared");
            prop_assert_eq!(a.gpu_held_bytes, b.gpu_held_bytes);
            let sum = procs.iter().flatten().fold(0u64, |x, y| x.saturating_add(*y));
            match a.method {
                MemoryMethod::Nvml => prop_assert_eq!(a.gpu_held_bytes, nvml),
                MemoryMethod::ProcessSum => {
                    prop_assert!(a.gpu_held_bytes.is_none_or(|h| h == sum));
                }
            }
            let available = total.saturating_sub(host_use_a);
            prop_assert!(a.headroom_bytes.is_some_and(|h| h <= available));
            if let Some(h) = hard {
                prop_assert!(a.headroom_bytes.is_some_and(|x| x <= h.saturating_sub(used)));
            }
        }

        /// The shared gauge's GPU part is the processes' figure alone: the host's own use
        /// rising moves the host's part and the free part, never the GPU's; the parts add up
        /// to the total.
        #[test]
        fn no_gpu_segment_counts_the_hosts_own_use(
            total in 1u64..(1 << 45),
            host_a in 0u64..(1 << 45),
            more in 0u64..(1 << 45),
            gpu in proptest::option::of(0u64..(1 << 45)),
            room in proptest::option::of(0u64..(1 << 45)),
        ) {
            let split = |host_use: u64| {
                let available = total.saturating_sub(gpu.unwrap_or(0)).saturating_sub(host_use);
                let headroom = room.map_or(available, |r| r.min(available));
                SharedSplit::of(&shared(gpu, total, available, headroom)).expect("split")
            };
            let (a, b) = (split(host_a), split(host_a.saturating_add(more)));
            prop_assert_eq!(a.gpu, b.gpu);
            prop_assert_eq!(a.gpu, gpu.map(|g| g.min(total)));
            prop_assert!(b.host >= a.host);
            for s in [a, b] {
                prop_assert_eq!(
                    s.gpu.unwrap_or(0) + s.host + s.free + s.beyond_limit,
                    s.total
                );
            }
        }
    }
}
