//! The immutable snapshot that every view reads: a timestamp plus a list of devices.
//!
//! Unknown values are `None` (shown as N/A, serialised as `null`), never 0. A device whose reads
//! fail stays in the sample with its error, so that one lost GPU never hides the others.

pub mod accounting;
pub mod admit;
pub mod breakdown;
pub mod fleet;
pub mod growth;
pub mod health;
pub mod history;
pub mod owner;
pub mod queue;
pub mod rollup;
pub mod run;
pub mod timeline;
pub mod unified;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// Where a sample came from. An alias, not `&'static str` written out: serde would read the
/// field as borrowed from its input, and samples are read back from recordings.
pub type SourceName = &'static str;

/// One reading of every device. Cheap to share (`Arc<Sample>`) and never mutated once published.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sample {
    #[serde(serialize_with = "rfc3339", deserialize_with = "from_rfc3339")]
    pub timestamp: SystemTime,
    pub hostname: Option<String>,
    /// "nvml", "simulated", "tegra" (a Jetson read from sysfs) or "recording".
    #[serde(deserialize_with = "source_name")]
    pub source: SourceName,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    pub devices: Vec<Device>,
    /// A failure that prevented reading any device (for example the device count).
    pub error: Option<String>,
    /// The host's CPU, memory, swap, load and uptime, for views that show them (`None`: not
    /// read).
    pub host: Option<HostStats>,
}

/// The host beside its GPUs: host memory decides host OOM kills, pinned and offloaded memory
/// (ZeRO and FSDP CPU offload) live there, and a starved CPU starves the GPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HostStats {
    /// Share of all CPUs busy since the previous reading, 0–100; `None` on a first reading,
    /// which has no interval to measure over (`once`).
    pub cpu_percent: Option<f32>,
    /// CPUs the kernel counts (online).
    pub cpu_count: Option<u32>,
    pub memory_total_bytes: Option<u64>,
    /// Total less available: what programs hold, not counting reclaimable cache.
    pub memory_used_bytes: Option<u64>,
    pub memory_available_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_used_bytes: Option<u64>,
    /// Runnable and waiting tasks averaged over 1, 5 and 15 minutes.
    pub load_average: Option<[f64; 3]>,
    pub uptime_s: Option<u64>,
    /// gpumon read this host from a child PID namespace (a container without `--pid=host`):
    /// the pids NVML names are the host's and name nothing in its `/proc`. Carried in the
    /// sample (and written only when true) so a recording or a remote node's sample says what
    /// was true where it was taken, not where it is viewed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pids_hidden: bool,
}

impl Sample {
    /// Whether views should say that GPU processes' users and commands cannot be known here:
    /// NVML lists processes, and the host they were read on could not see their pids.
    pub fn pids_hidden(&self) -> bool {
        self.source == "nvml"
            && self.devices.iter().any(|d| !d.processes.is_empty())
            && self.host.is_some_and(|h| h.pids_hidden)
    }

    /// Every text in the sample that a process or the driver chose (commands, users, names,
    /// GPU names, errors that quote the driver), each visited mutably.
    fn texts_mut(&mut self, f: &mut impl FnMut(&mut String)) {
        let each = |o: &mut Option<String>, f: &mut dyn FnMut(&mut String)| {
            if let Some(s) = o.as_mut() {
                f(s);
            }
        };
        for o in [
            &mut self.hostname,
            &mut self.driver_version,
            &mut self.cuda_version,
            &mut self.error,
        ] {
            each(o, f);
        }
        for d in &mut self.devices {
            for o in [
                &mut d.uuid,
                &mut d.name,
                &mut d.pci_bus_id,
                &mut d.processes_error,
                &mut d.error,
            ] {
                each(o, f);
            }
            d.field_errors.values_mut().for_each(&mut *f);
            for p in &mut d.processes {
                for o in [&mut p.name, &mut p.user, &mut p.command, &mut p.container] {
                    each(o, f);
                }
                if let Some(owner) = p.owner.as_mut() {
                    // Shared by a pod's processes: copied only when one of its texts changes.
                    if owner.texts().any(|t| t.chars().any(crate::text::is_unsafe)) {
                        std::sync::Arc::make_mut(owner).texts_mut(f);
                    }
                }
                if let Some(l) = p.gpu_limit.as_mut() {
                    // Shared by a cgroup's processes: copied only when its name changes.
                    if l.cgroup.chars().any(crate::text::is_unsafe) {
                        f(&mut std::sync::Arc::make_mut(l).cgroup);
                    }
                }
                if let Some(a) = p.allocator.as_mut() {
                    f(&mut a.framework);
                    each(&mut a.framework_version, f);
                    each(&mut a.run_id, f);
                    each(&mut a.step_marker, f);
                    if let Some(g) = a.step_growth.as_mut() {
                        f(&mut g.measure);
                    }
                    for site in a.held_sites.iter_mut().flat_map(|h| h.sites.iter_mut()) {
                        f(&mut site.file);
                        f(&mut site.function);
                    }
                }
            }
            for h in &mut d.holders {
                each(&mut h.user, f);
                each(&mut h.command, f);
                each(&mut h.state, f);
            }
            for m in &mut d.mig {
                for o in [&mut m.uuid, &mut m.name, &mut m.profile] {
                    each(o, f);
                }
                m.field_errors.values_mut().for_each(&mut *f);
            }
            each(&mut d.health.events_error, f);
            if let Some(a) = d.accounting.as_mut() {
                each(&mut a.error, f);
                for e in &mut a.exited {
                    each(&mut e.user, f);
                    each(&mut e.name, f);
                }
            }
            if let Some(l) = d.container_limit.as_mut() {
                f(&mut l.cgroup);
            }
        }
    }

    /// The same texts as [`Sample::texts_mut`], read-only.
    fn texts(&self) -> impl Iterator<Item = &str> {
        let top = [
            &self.hostname,
            &self.driver_version,
            &self.cuda_version,
            &self.error,
        ]
        .into_iter()
        .flatten();
        let devices =
            self.devices.iter().flat_map(|d| {
                [
                    &d.uuid,
                    &d.name,
                    &d.pci_bus_id,
                    &d.processes_error,
                    &d.error,
                ]
                .into_iter()
                .flatten()
                .chain(d.field_errors.values())
                .map(String::as_str)
                .chain(d.processes.iter().flat_map(|p| {
                    [&p.name, &p.user, &p.command, &p.container]
                        .into_iter()
                        .flatten()
                        .chain(p.allocator.iter().flat_map(|a| {
                            std::iter::once(&a.framework)
                                .chain(a.framework_version.iter())
                                .chain(a.run_id.iter())
                                .chain(a.step_marker.iter())
                                .chain(a.step_growth.iter().map(|g| &g.measure))
                                .chain(a.held_sites.iter().flat_map(|h| {
                                    h.sites.iter().flat_map(|s| [&s.file, &s.function])
                                }))
                        }))
                        .map(String::as_str)
                        .chain(p.owner.iter().flat_map(|o| o.texts()))
                        .chain(p.gpu_limit.iter().map(|l| l.cgroup.as_str()))
                }))
                .chain(
                    d.holders
                        .iter()
                        .flat_map(|h| [&h.user, &h.command, &h.state].into_iter().flatten())
                        .map(String::as_str),
                )
                .chain(d.mig.iter().flat_map(|m| {
                    [&m.uuid, &m.name, &m.profile]
                        .into_iter()
                        .flatten()
                        .chain(m.field_errors.values())
                        .map(String::as_str)
                }))
                .chain(d.health.events_error.as_deref())
                .chain(d.accounting.iter().flat_map(|a| {
                    a.error
                        .iter()
                        .chain(
                            a.exited
                                .iter()
                                .flat_map(|e| [&e.user, &e.name].into_iter().flatten()),
                        )
                        .map(String::as_str)
                }))
                .chain(d.container_limit.as_ref().map(|l| l.cgroup.as_str()))
            });
        top.map(String::as_str).chain(devices)
    }

    /// The sample as text views print it: every text a process or the driver chose passed
    /// through the one escaping rule ([`crate::text::escape`]). Borrowed, at the cost of a
    /// scan, when nothing needs escaping.
    pub fn escaped(&self) -> std::borrow::Cow<'_, Sample> {
        if !self.texts().any(|s| s.chars().any(crate::text::is_unsafe)) {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut out = self.clone();
        out.texts_mut(&mut |s: &mut String| {
            if let std::borrow::Cow::Owned(e) = crate::text::escape(s) {
                *s = e;
            }
        });
        std::borrow::Cow::Owned(out)
    }
}

/// A time as the JSON outputs write it: RFC 3339 in UTC with milliseconds.
pub fn rfc3339<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_rfc3339_millis(*t))
}

pub(crate) fn from_rfc3339<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    let text = String::deserialize(d)?;
    humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
        .or_else(|_| humantime::parse_rfc3339(&text))
        .map_err(serde::de::Error::custom)
}

/// A sample's source, read back (a recording of NVML samples stays "nvml").
fn source_name<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let text = String::deserialize(d)?;
    Ok(match text.as_str() {
        "nvml" => "nvml",
        "simulated" => "simulated",
        "tegra" => "tegra",
        _ => "recording",
    })
}

/// The names of the fields a device reports errors for, read back as the code names them.
pub const FIELD_NAMES: &[&str] = &[
    "memory",
    "utilization",
    "temperature",
    "power",
    "power_limit",
    "fan",
    "processes",
    "process_utilization",
    "process_memory",
];

fn field_names<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<&'static str, String>, D::Error> {
    let raw = BTreeMap::<String, String>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| {
            let name = FIELD_NAMES
                .iter()
                .find(|n| **n == k)
                .copied()
                .unwrap_or("other");
            (name, v)
        })
        .collect())
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Device {
    pub index: u32,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub pci_bus_id: Option<String>,
    pub memory: Memory,
    pub utilization: Utilization,
    pub temperature_c: Option<u32>,
    pub power_draw_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub fan_percent: Option<u32>,
    /// The minor number of the GPU's device node (`/dev/nvidia<minor>`), from NVML: how the
    /// processes that hold this GPU open are found ([`Device::holders`]).
    pub minor_number: Option<u32>,
    pub processes: Vec<Process>,
    /// Who holds memory that the process list does not explain: zombies, live processes NVML
    /// does not list (orphaned workers), pids of another PID namespace, and processes gpumon
    /// may not inspect. Empty when nothing is unexplained, or nobody looked.
    pub holders: Vec<Holder>,
    /// Why the process list is missing or incomplete (no permission, malformed driver data).
    pub processes_error: Option<String>,
    /// Fields that could not be read, with the reason ("not supported", "no permission", …).
    #[serde(deserialize_with = "field_names")]
    pub field_errors: BTreeMap<&'static str, String>,
    /// The whole device failed (for example "GPU is lost"); the other fields are then `None`.
    /// For a stalled or late device it says for how long it has not answered.
    pub error: Option<String>,
    /// The device has not answered within its deadline (a hung driver call): a state of its
    /// own, distinct from lost (`GPU_IS_LOST`) and from a field error. The readings, if any,
    /// are the last good ones, `data_age_ms` old: never fresh.
    pub stalled: bool,
    /// The device has not answered in time for this sample, and is not past its deadline yet
    /// (the first moments of a hang, or a driver slower than the interval): the readings, if
    /// any, are the last good ones, `data_age_ms` old. Never fresh; not stalled. The sampler
    /// alone decides it, so no view can show a late reading as fresh.
    pub late: bool,
    /// How old the readings are at the sample's timestamp; `None` when there are none (a
    /// device that never answered).
    pub data_age_ms: Option<u64>,
    /// With MIG on, its MIG devices (empty when MIG is off or unsupported). The processes
    /// stay in [`Device::processes`], each with its instance ids; [`MigDevice::processes`]
    /// picks an instance's.
    #[serde(default)]
    pub mig: Vec<MigDevice>,
    /// Xid errors, ECC, remapped rows and throttling.
    #[serde(default)]
    pub health: health::Health,
    /// The highest used memory since the previous reading, from the memory-only reads between
    /// frames (`--peak-rate`). `None` where not measured: the peak-hold is off, the source has
    /// no memory-only read, or this reading is not fresh.
    #[serde(default)]
    pub peak: Option<MemoryPeak>,
    /// The driver's per-process accounting: on or off, and the processes that exited with
    /// their peaks; `None` where the source has none (a simulated GPU whose scenario has no
    /// `accounting`, an old recording).
    #[serde(default)]
    pub accounting: Option<accounting::Accounting>,
    /// Memory the GPU shares with the host (unified or coherent parts), and how its GPU-held
    /// figure was obtained; absent for a discrete GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_memory: Option<unified::SharedMemory>,
    /// The GPU memory limit of the container gpumon runs in, on this GPU; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_limit: Option<unified::GpuLimit>,
    /// An integrated GPU's clock and rail gating from its SoC's sysfs (a Jetson read without
    /// NVML); absent for any other GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_gpu: Option<unified::SocGpu>,
}

/// The highest used memory (NVML v2 `used`) a device reached between two readings: a spike of
/// tens of milliseconds (a backward pass, an optimizer step) that a reading once a second
/// misses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPeak {
    pub used_bytes: u64,
    /// When the highest read was taken.
    #[serde(serialize_with = "rfc3339", deserialize_with = "from_rfc3339")]
    pub at: SystemTime,
    /// How long the reads covered, from the previous reading to this one: the peak is of this
    /// window only (for `once`, the moment it ran).
    pub window_ms: u64,
    /// How many reads of the memory the window holds (the reading's own included).
    pub reads: u32,
}

/// One MIG (Multi-Instance GPU) device: a slice of its parent GPU with memory of its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MigDevice {
    /// Its slot on the parent (`nvmlDeviceGetMigDeviceHandleByIndex`).
    pub index: u32,
    /// `MIG-…`: what `CUDA_VISIBLE_DEVICES` takes to run on it.
    pub uuid: Option<String>,
    pub name: Option<String>,
    /// The profile, e.g. `3g.40gb` (from its name).
    pub profile: Option<String>,
    pub gpu_instance_id: Option<u32>,
    pub compute_instance_id: Option<u32>,
    pub memory: Memory,
    /// Real drivers answer NOT_SUPPORTED on MIG devices: then `None`, with the reason in
    /// `field_errors`.
    pub utilization: Utilization,
    #[serde(deserialize_with = "field_names", default)]
    pub field_errors: BTreeMap<&'static str, String>,
}

impl MigDevice {
    /// Its processes, among its parent's (matched by GPU instance, and by compute instance
    /// where both are known).
    pub fn processes<'a>(&self, parent: &'a Device) -> impl Iterator<Item = &'a Process> + 'a {
        let (gi, ci) = (self.gpu_instance_id, self.compute_instance_id);
        parent.processes.iter().filter(move |p| {
            gi.is_some()
                && p.gpu_instance_id == gi
                && (ci.is_none() || p.compute_instance_id.is_none() || p.compute_instance_id == ci)
        })
    }

    /// Where this instance's memory went: its processes, used but not attributed, free.
    pub fn breakdown(&self, parent: &Device) -> Option<breakdown::Breakdown> {
        let procs: Vec<(u32, Option<u64>)> = self
            .processes(parent)
            .map(|p| (p.pid, p.gpu_memory_bytes))
            .collect();
        breakdown::Breakdown::device(&self.memory, &procs)
    }

    /// The instance as a device of its own, for views that list devices (`log`): its identity,
    /// memory and processes, its parent's index, bus and state, and itself as its one
    /// `mig` entry ([`Device::as_mig`] tells such a device from a whole GPU).
    pub fn as_device(&self, parent: &Device) -> Device {
        Device {
            index: parent.index,
            uuid: self.uuid.clone(),
            name: self.name.clone(),
            pci_bus_id: parent.pci_bus_id.clone(),
            memory: self.memory,
            utilization: self.utilization,
            minor_number: parent.minor_number,
            processes: self.processes(parent).cloned().collect(),
            processes_error: parent.processes_error.clone(),
            field_errors: self.field_errors.clone(),
            error: parent.error.clone(),
            stalled: parent.stalled,
            late: parent.late,
            data_age_ms: parent.data_age_ms,
            mig: vec![self.clone()],
            ..Device::default()
        }
    }

    /// "3g.40gb" from "NVIDIA H100 80GB HBM3 MIG 3g.40gb".
    pub fn profile_from_name(name: &str) -> Option<String> {
        let (_, profile) = name.rsplit_once("MIG ")?;
        let profile = profile.trim();
        (!profile.is_empty()).then(|| profile.to_owned())
    }
}

/// Why a process is named as holding a GPU's memory outside the process list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HolderReason {
    /// Defunct, or its parent is: its parent must reap it (`parent_pid`).
    Zombie,
    /// A live process that holds the GPU's device node and the unified-memory node, but that
    /// NVML does not list: typically a worker that outlived the job that started it.
    NotListed,
    /// A pid NVML lists that does not exist in this PID namespace: another container's.
    OtherNamespace,
    /// Processes of other users whose open files gpumon may not read (root can name them).
    Unreadable,
}

impl HolderReason {
    pub fn as_str(self) -> &'static str {
        match self {
            HolderReason::Zombie => "zombie",
            HolderReason::NotListed => "not_listed",
            HolderReason::OtherNamespace => "other_namespace",
            HolderReason::Unreadable => "unreadable",
        }
    }
}

/// A process (or, for [`HolderReason::Unreadable`], several) that holds a GPU's memory outside
/// what NVML attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    /// `None` for the unreadable processes, counted in `count`.
    pub pid: Option<u32>,
    pub user: Option<String>,
    pub command: Option<String>,
    /// The kernel's one-letter state (`S` sleeping, `R` running, `Z` zombie, `D` waiting on
    /// the disk or a driver…).
    pub state: Option<String>,
    pub parent_pid: Option<u32>,
    pub reason: HolderReason,
    /// What it holds, where NVML says so (a listed pid); `None` when unknown: the device node
    /// says that a process holds the GPU, not how much.
    pub bytes: Option<u64>,
    /// How many processes this entry stands for (more than 1 only for `unreadable`).
    pub count: u32,
    /// Seconds since it started.
    pub age_s: Option<u64>,
}

impl Holder {
    /// One line that says who and what to do: "pid 4242 (python train.py, alice), not listed
    /// by NVML, parent 1, up 2 h".
    pub fn describe(&self) -> String {
        let who = match (self.pid, &self.command, &self.user) {
            (Some(pid), Some(c), Some(u)) => format!("pid {pid} ({c}, {u})"),
            (Some(pid), Some(c), None) => format!("pid {pid} ({c})"),
            (Some(pid), None, Some(u)) => format!("pid {pid} ({u})"),
            (Some(pid), None, None) => format!("pid {pid}"),
            (None, ..) => format!(
                "{} process{}",
                self.count,
                if self.count == 1 { "" } else { "es" }
            ),
        };
        let parent = self.parent_pid.map(|p| format!("parent {p}"));
        let age = self
            .age_s
            .map(|s| format!("up {}", crate::units::fmt_age(s)));
        let what = match self.reason {
            HolderReason::Zombie => match (self.state.as_deref(), self.parent_pid) {
                (Some("Z"), Some(p)) => format!("defunct: its parent {p} must reap it"),
                (_, Some(p)) => format!("its parent {p} is defunct: kill it, or reap {p}"),
                _ => "defunct".to_owned(),
            },
            HolderReason::NotListed => {
                let extra: Vec<String> = parent.into_iter().chain(age).collect();
                if extra.is_empty() {
                    "holds the GPU but NVML does not list it".to_owned()
                } else {
                    format!(
                        "holds the GPU but NVML does not list it ({})",
                        extra.join(", ")
                    )
                }
            }
            HolderReason::OtherNamespace => {
                "not in this PID namespace: another container's process".to_owned()
            }
            HolderReason::Unreadable => {
                "of other users, could not be inspected (root can name them)".to_owned()
            }
        };
        match self.bytes {
            Some(b) => format!("{who}, {}: {what}", crate::units::fmt_bytes(b)),
            None => format!("{who}: {what}"),
        }
    }
}

/// NVML memory v2 semantics: `total = used + free + reserved`, `used` excludes `reserved`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    pub total_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    /// Driver and firmware reservation (NVML v2 `reserved`).
    pub reserved_bytes: Option<u64>,
}

impl Memory {
    /// Used share of total in `0.0..=1.0`; `None` when unknown or the total is 0.
    pub fn used_fraction(&self) -> Option<f64> {
        let total = self.total_bytes.filter(|t| *t > 0)?;
        Some(self.used_bytes? as f64 / total as f64)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Utilization {
    pub gpu_percent: Option<u32>,
    pub memory_percent: Option<u32>,
}

/// How NVML lists a process: in the compute list, the graphics list, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    Compute,
    Graphics,
    Both,
}

impl ProcessKind {
    pub fn merge(self, other: ProcessKind) -> ProcessKind {
        if self == other {
            self
        } else {
            ProcessKind::Both
        }
    }

    pub fn letter(self) -> &'static str {
        match self {
            ProcessKind::Compute => "C",
            ProcessKind::Graphics => "G",
            ProcessKind::Both => "C+G",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    /// Host pid, as NVML reports it (it may not exist in this PID namespace).
    pub pid: u32,
    pub kind: ProcessKind,
    pub gpu_memory_bytes: Option<u64>,
    pub name: Option<String>,
    pub user: Option<String>,
    pub command: Option<String>,
    pub cpu_percent: Option<f32>,
    pub host_memory_bytes: Option<u64>,
    /// Unix seconds.
    pub start_time: Option<u64>,
    /// The container, pod or batch job holding the process, from its cgroup, in one string
    /// (`docker 3f4e5d6c7b8a`, `k8s pod UID (containerd ID)`, `slurm job 81234`); `None` for a
    /// host process or where it cannot be read. [`Process::owner`] has its parts.
    pub container: Option<String>,
    /// Who owns the process above itself: its pod (named by the kubelet where it can be), Slurm
    /// job and step, container or service. Shared: every process of a pod has the same one.
    pub owner: Option<std::sync::Arc<owner::Owner>>,
    /// Share of the last second's samples in which this process's kernels ran on the SMs
    /// (NVML's per-process utilisation). `None`: unsupported, or no sample yet; 0 when the
    /// driver is sampling and this process had no activity.
    pub sm_percent: Option<u32>,
    /// The same for memory bandwidth (frame-buffer reads and writes).
    pub mem_bw_percent: Option<u32>,
    /// The framework allocator's own figures, when the in-process probe reports them
    /// (`gpumon run`); `None` means NVML's per-process total is all that is known. Boxed:
    /// most processes have none, and every sample moves and clones each process.
    pub allocator: Option<Box<AllocatorStats>>,
    /// The kernel's one-letter state from /proc (`Z`: a zombie); `None` where not read.
    #[serde(skip)]
    pub state: Option<char>,
    /// Its parent (the one to reap it, when it is a zombie); `None` where not read.
    #[serde(skip)]
    pub parent_pid: Option<u32>,
    /// The MIG GPU instance it runs in (`None` with MIG off).
    #[serde(default)]
    pub gpu_instance_id: Option<u32>,
    /// The MIG compute instance it runs in.
    #[serde(default)]
    pub compute_instance_id: Option<u32>,
    /// The most memory the driver saw this process hold, from NVML's accounting
    /// (`maxMemoryUsage`); `None` where accounting is off or does not know the process.
    #[serde(default)]
    pub peak_bytes: Option<u64>,
    /// Its cgroup v2 path (`/kubepods/…`), from `/proc/PID/cgroup`; `None` where not read or
    /// on cgroup v1 only. Not serialised: the owner says who, [`Process::gpu_limit`] the limit.
    #[serde(skip)]
    pub cgroup: Option<std::sync::Arc<str>>,
    /// The GPU memory limit of the cgroup that holds it on this GPU, and that cgroup's use
    /// ([`unified::GpuLimit`]); `None`: no limit, or none read. Shared by the cgroup's
    /// processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_limit: Option<std::sync::Arc<unified::GpuLimit>>,
}

/// What a framework's caching allocator says about one process on one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocatorStats {
    /// "pytorch".
    pub framework: String,
    pub framework_version: Option<String>,
    pub allocated_bytes: Option<u64>,
    pub allocated_peak_bytes: Option<u64>,
    /// Allocated + cached.
    pub reserved_bytes: Option<u64>,
    pub reserved_peak_bytes: Option<u64>,
    pub active_bytes: Option<u64>,
    pub inactive_split_bytes: Option<u64>,
    pub num_alloc_retries: Option<u64>,
    pub num_ooms: Option<u64>,
    /// Milliseconds since the probe published these figures.
    pub age_ms: u64,
    /// The `gpumon run` that started the process, if any.
    pub run_id: Option<String>,
    /// `gpumon run --batch N`: what the first training (or inference) steps held and peaked at
    /// on this GPU, once measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepMeasure>,
    /// Memory that grows step after step on this GPU, once the probe's per-step baseline
    /// shows a steady rise ([`growth`]); absent for a flat job or before enough steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_growth: Option<StepGrowth>,
    /// What marks the per-step baseline's steps: "optimizer" (its step), "backward"
    /// (`loss.backward()`), or the function `run --step-marker` names; `None` before the first
    /// marked step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_marker: Option<String>,
    /// Steps marked so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_marked: Option<u64>,
    /// Where memory held across steps was allocated, once the probe has looked (`run` asks
    /// when it finds growth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_sites: Option<HeldSites>,
}

/// The blocks allocated in one step that were still live `held_steps` steps later, grouped by
/// allocation site, largest first: from PyTorch's memory history (three snapshots at step
/// boundaries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldSites {
    /// The step whose allocations were followed.
    pub step: u64,
    pub held_steps: u64,
    /// What the three snapshots cost the job, in microseconds.
    pub snapshot_micros: u64,
    /// Whether the probe turned the history on for these steps (without `--snapshot`).
    pub own_history: bool,
    pub sites: Vec<HeldSite>,
}

/// One allocation site: the innermost frame outside PyTorch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldSite {
    pub file: String,
    pub line: u64,
    pub function: String,
    pub blocks: u64,
    /// Bytes allocated at this site in the one step and still held.
    pub bytes: u64,
}

impl HeldSite {
    /// "train.py:42 in train_loop" (the last three path components).
    pub fn label(&self) -> String {
        let parts: Vec<&str> = self.file.rsplit('/').take(3).collect();
        let short: Vec<&str> = parts.into_iter().rev().collect();
        let mut file = short.join("/");
        if self.file.matches('/').count() >= 3 {
            file = format!(".../{file}");
        }
        format!("{file}:{} in {}", self.line, self.function)
    }
}

/// A steady rise of the allocator's figure at the same point of every training step
/// (`total_loss += loss`, outputs kept in a list): fitted by [`growth::growth`] from the
/// probe's per-step figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepGrowth {
    /// "allocated", or "reserved" when only the cache grows.
    pub measure: String,
    /// Bytes a step (Theil–Sen's slope).
    pub bytes_per_step: u64,
    /// The first and the latest step of the rise.
    pub since_step: u64,
    pub last_step: u64,
    /// Wall time a step in microseconds, from the probe's clock over the recent steps.
    pub micros_per_step: Option<u64>,
    /// At this rate, the steps until the GPU is full: its free memory, plus for allocated
    /// growth the cache's unallocated part. `None` when the free memory is unknown.
    pub steps_to_full: Option<u64>,
}

impl StepGrowth {
    /// Seconds until the GPU is full at this rate.
    pub fn seconds_to_full(&self) -> Option<f64> {
        let s = self.steps_to_full? as f64 * self.micros_per_step? as f64 / 1e6;
        s.is_finite().then_some(s)
    }

    /// "allocated grows 12.5 MiB a step since step 20; at this rate the GPU is full in ~310
    /// steps (~26 min)".
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} grows {} a step since step {}",
            self.measure,
            crate::units::fmt_bytes(self.bytes_per_step),
            self.since_step
        );
        if let Some(n) = self.steps_to_full {
            s.push_str(&format!("; at this rate the GPU is full in ~{n} steps"));
            if let Some(t) = self.seconds_to_full() {
                if t < 1.0 {
                    s.push_str(" (under a second)");
                } else {
                    s.push_str(&format!(" (~{})", crate::units::fmt_age(t.round() as u64)));
                }
            }
        }
        s
    }
}

/// The allocator over a job's first steps (`gpumon run --batch N`), for the largest batch that
/// fits: what was held between steps and the peak of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepMeasure {
    /// The batch size the job ran with (`--batch`).
    pub batch: u32,
    /// Steps measured (optimizer steps; forward passes for inference).
    pub steps: u32,
    /// Allocated at the start of a step once the optimizer holds its state, the least seen:
    /// weights, optimizer states, whatever lives across steps.
    pub held_bytes: u64,
    /// The allocator's peak allocated over those steps.
    pub peak_bytes: u64,
    /// Its peak reserved (allocated plus cache): the fragmentation margin, measured.
    pub reserved_peak_bytes: Option<u64>,
    /// Whether the steps were training steps (optimizer) or forward passes without gradients.
    pub training: bool,
}

impl AllocatorStats {
    /// The four figures every source of allocator stats has (allocated and reserved, now and
    /// at the peak), nothing else known.
    pub fn figures(
        framework: String,
        framework_version: Option<String>,
        allocated: [Option<u64>; 2],
        reserved: [Option<u64>; 2],
    ) -> AllocatorStats {
        AllocatorStats {
            framework,
            framework_version,
            allocated_bytes: allocated[0],
            allocated_peak_bytes: allocated[1],
            reserved_bytes: reserved[0],
            reserved_peak_bytes: reserved[1],
            active_bytes: None,
            inactive_split_bytes: None,
            num_alloc_retries: None,
            num_ooms: None,
            age_ms: 0,
            run_id: None,
            steps: None,
            step_growth: None,
            step_marker: None,
            steps_marked: None,
            held_sites: None,
        }
    }

    /// Reserved but unallocated: the cache.
    pub fn cached_bytes(&self) -> Option<u64> {
        Some(self.reserved_bytes?.saturating_sub(self.allocated_bytes?))
    }
}

impl Process {
    /// A process as NVML lists it, before any host lookup.
    pub fn from_nvml(pid: u32, kind: ProcessKind, gpu_memory_bytes: Option<u64>) -> Self {
        Process {
            pid,
            kind,
            gpu_memory_bytes,
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
            state: None,
            parent_pid: None,
            gpu_instance_id: None,
            compute_instance_id: None,
            peak_bytes: None,
            cgroup: None,
            gpu_limit: None,
        }
    }

    /// This process's memory as the breakdown model takes it: NVML's total, plus the
    /// allocator's split when the probe reports it.
    pub fn memory(&self) -> breakdown::ProcessMemory {
        breakdown::ProcessMemory {
            total: self.gpu_memory_bytes,
            allocated: self.allocator.as_ref().and_then(|a| a.allocated_bytes),
            reserved: self.allocator.as_ref().and_then(|a| a.reserved_bytes),
        }
    }

    /// Who owns the process, as the tables show it: its owner's label (`ml/trainer-0/pytorch`,
    /// `slurm 81234.0`), else its container string; `None` for a host process.
    pub fn owner_label(&self) -> Option<String> {
        match &self.owner {
            Some(o) => Some(o.label()),
            None => self.container.clone(),
        }
    }

    /// Seconds since the process started, at `now`.
    pub fn age_s(&self, now: SystemTime) -> Option<u64> {
        let now = now.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
        Some(now.saturating_sub(self.start_time?))
    }
}

/// Bounds no real GPU crosses: a reading beyond them is a driver answering garbage.
pub mod bounds {
    /// 16 TiB of memory on one device.
    pub const MAX_MEMORY: u64 = 1 << 44;
    /// GPUs shut down near 100 °C.
    pub const MAX_TEMPERATURE_C: u32 = 150;
    /// The largest board draws a few kW.
    pub const MAX_POWER_W: f64 = 10_000.0;
    /// NVML says fan speed "may exceed 100%"; not twice that.
    pub const MAX_FAN_PERCENT: u32 = 200;
    /// Used + free + reserved may exceed the total by this much (rounding in the driver).
    pub const MEMORY_SLACK: u64 = 1 << 20;
}

impl Device {
    /// Checks the readings a driver answered against what is possible: an impossible value
    /// becomes `None` with a field error saying what was reported, so that no view prints
    /// "util 4294967295%" or computes with a used figure above the total. Zero is impossible
    /// for a powered GPU's temperature and power draw, and for a total: an unreadable sensor
    /// that answered success. The sampler applies it to every reading.
    pub fn check_readings(&mut self) {
        use bounds::*;
        let errors = &mut self.field_errors;
        let mut bad = |field: &'static str, why: String| {
            errors.entry(field).or_insert(why);
        };
        let m = &mut self.memory;
        if let Some(t) = m.total_bytes.filter(|t| *t == 0 || *t > MAX_MEMORY) {
            bad(
                "memory",
                format!("the driver reported a total of {t} bytes"),
            );
            *m = Memory::default();
        }
        if let Some(total) = m.total_bytes {
            for (name, v) in [
                ("used", &mut m.used_bytes),
                ("free", &mut m.free_bytes),
                ("reserved", &mut m.reserved_bytes),
            ] {
                if let Some(x) = v.filter(|x| *x > total) {
                    bad(
                        "memory",
                        format!("the driver reported {name} {x} bytes of {total}"),
                    );
                    *v = None;
                }
            }
            let parts = [m.used_bytes, m.free_bytes, m.reserved_bytes.or(Some(0))];
            let sum = parts
                .iter()
                .try_fold(0u64, |acc, p| p.and_then(|p| acc.checked_add(p)));
            if sum.is_some_and(|s| s > total.saturating_add(MEMORY_SLACK)) {
                bad(
                    "memory",
                    format!(
                        "the driver reported used + free + reserved of {} bytes, above the \
                         total of {total}",
                        sum.unwrap_or(u64::MAX)
                    ),
                );
                m.used_bytes = None;
                m.free_bytes = None;
            }
        }
        let u = &mut self.utilization;
        for v in [&mut u.gpu_percent, &mut u.memory_percent] {
            if let Some(x) = v.filter(|x| *x > 100) {
                bad("utilization", format!("the driver reported {x}%"));
                *v = None;
            }
        }
        if let Some(t) = self
            .temperature_c
            .filter(|t| *t == 0 || *t > MAX_TEMPERATURE_C)
        {
            bad("temperature", format!("the driver reported {t} °C"));
            self.temperature_c = None;
        }
        for (name, v) in [
            ("power", &mut self.power_draw_w),
            ("power_limit", &mut self.power_limit_w),
        ] {
            if let Some(w) = v.filter(|w| !w.is_finite() || *w <= 0.0 || *w > MAX_POWER_W) {
                bad(name, format!("the driver reported {w} W"));
                *v = None;
            }
        }
        if let Some(f) = self.fan_percent.filter(|f| *f > MAX_FAN_PERCENT) {
            bad("fan", format!("the driver reported {f}%"));
            self.fan_percent = None;
        }
        let limit = self.memory.total_bytes.unwrap_or(MAX_MEMORY);
        for p in &mut self.processes {
            if let Some(b) = p.gpu_memory_bytes.filter(|b| *b > limit) {
                bad(
                    "process_memory",
                    format!("the driver reported {b} bytes for pid {}", p.pid),
                );
                p.gpu_memory_bytes = None;
            }
        }
    }

    /// The device's own split (`None` for a failed device or an unknown total). A stalled or
    /// late device's split is that of its last good readings, like the rest of its fields.
    pub fn breakdown(&self) -> Option<breakdown::Breakdown> {
        if !self.has_readings() {
            return None;
        }
        let procs: Vec<(u32, Option<u64>)> = self
            .processes
            .iter()
            .map(|p| (p.pid, p.gpu_memory_bytes))
            .collect();
        breakdown::Breakdown::device(&self.memory, &procs)
    }

    /// Memory in use beyond what the listed processes hold (other namespaces' processes,
    /// unlisted holders, the driver); `None` when a part is unknown.
    pub fn unattributed_bytes(&self) -> Option<u64> {
        if !self.has_readings() {
            return None;
        }
        let listed = self
            .processes
            .iter()
            .try_fold(0u64, |acc, p| Some(acc.saturating_add(p.gpu_memory_bytes?)))?;
        Some(self.memory.used_bytes?.saturating_sub(listed))
    }

    /// The MIG instance this device stands for, when it is one ([`MigDevice::as_device`]).
    pub fn as_mig(&self) -> Option<&MigDevice> {
        match self.mig.as_slice() {
            [m] if m.uuid.is_some() && m.uuid == self.uuid => Some(m),
            _ => None,
        }
    }

    /// The device's identity without its readings (for matching).
    pub fn clone_identity(&self) -> Device {
        Device {
            index: self.index,
            uuid: self.uuid.clone(),
            name: self.name.clone(),
            pci_bus_id: self.pci_bus_id.clone(),
            ..Device::default()
        }
    }

    /// A device that could not be read at all.
    pub fn failed(index: u32, error: String) -> Self {
        Device {
            index,
            error: Some(error),
            ..Device::default()
        }
    }

    /// Whether the readings are from this sample (not a failed, stalled or late device).
    pub fn fresh(&self) -> bool {
        self.error.is_none() && !self.stalled && !self.late
    }

    /// Whether the readings are the last good ones of a device that has not answered
    /// (stalled or late): shown greyed, with their age, never as fresh.
    pub fn stale(&self) -> bool {
        self.stalled || self.late
    }

    /// Whether the device has readings to show: fresh ones, or a stale device's last ones
    /// (a lost or failed device has none).
    pub fn has_readings(&self) -> bool {
        self.error.is_none() || self.stale()
    }

    /// When the readings were taken, given the sample's timestamp; `None` before 1970 (an
    /// age from elsewhere can be anything, and no clock shows such a time).
    pub fn data_time(&self, sample_time: SystemTime) -> Option<SystemTime> {
        sample_time
            .checked_sub(std::time::Duration::from_millis(self.data_age_ms?))
            .filter(|t| *t >= SystemTime::UNIX_EPOCH)
    }

    /// Whether `selector` (an index or a UUID, or a UUID prefix) names this device.
    pub fn matches(&self, selector: &str) -> bool {
        let selector = selector.trim();
        if let Ok(i) = selector.parse::<u32>() {
            return i == self.index;
        }
        self.uuid.as_deref().is_some_and(|u| {
            let u = u.to_ascii_lowercase();
            let s = selector.to_ascii_lowercase();
            u == s || (s.len() >= 8 && (u.starts_with(&s) || u.starts_with(&format!("gpu-{s}"))))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Processes hidden by a PID namespace are said from the sample's own flag (where it was
    /// read), only for NVML's lists, and only where there are processes to hide.
    #[test]
    fn pids_hidden_is_the_samples_own_fact() {
        let gpu = |procs: usize| Device {
            processes: (0..procs)
                .map(|i| Process::from_nvml(100 + i as u32, ProcessKind::Compute, Some(1 << 30)))
                .collect(),
            ..Device::default()
        };
        let sample = |source: SourceName, hidden: Option<bool>, procs: usize| Sample {
            timestamp: SystemTime::UNIX_EPOCH,
            hostname: None,
            source,
            driver_version: None,
            cuda_version: None,
            devices: vec![gpu(procs)],
            error: None,
            host: hidden.map(|pids_hidden| HostStats {
                pids_hidden,
                ..HostStats::default()
            }),
        };
        assert!(sample("nvml", Some(true), 1).pids_hidden());
        assert!(!sample("nvml", Some(false), 1).pids_hidden());
        // The host not read: nothing is known, nothing is said.
        assert!(!sample("nvml", None, 1).pids_hidden());
        assert!(!sample("nvml", Some(true), 0).pids_hidden());
        assert!(!sample("simulated", Some(true), 1).pids_hidden());
        // Written only when true, read back as written; older samples lack it.
        let json = serde_json::to_value(HostStats::default()).expect("json");
        assert!(json.get("pids_hidden").is_none(), "{json}");
        let back: HostStats = serde_json::from_value(
            serde_json::to_value(HostStats {
                pids_hidden: true,
                ..HostStats::default()
            })
            .expect("json"),
        )
        .expect("read back");
        assert!(back.pids_hidden);
    }

    #[test]
    fn used_fraction_never_divides_by_zero() {
        let m = Memory {
            total_bytes: Some(0),
            used_bytes: Some(5),
            ..Memory::default()
        };
        assert_eq!(m.used_fraction(), None);
        let m = Memory {
            total_bytes: Some(10),
            used_bytes: Some(5),
            ..Memory::default()
        };
        assert_eq!(m.used_fraction(), Some(0.5));
    }

    /// Every text field, hostile: after `escaped`, plain serde_json (which writes C1 and bidi
    /// characters raw) shows none of them anywhere, so no field was forgotten; a clean sample
    /// is borrowed, not copied.
    #[test]
    fn escaped_leaves_nothing_unsafe_in_any_text_field() {
        let bad = || Some("x\u{9b}2J\u{202e}\u{1b}]0;t\u{7}".to_owned());
        let mut p = Process::from_nvml(7, ProcessKind::Compute, Some(1));
        (p.name, p.user, p.command, p.container) = (bad(), bad(), bad(), bad());
        p.allocator = Some(Box::new(AllocatorStats {
            framework: "py\u{9b}torch".into(),
            framework_version: bad(),
            allocated_bytes: None,
            allocated_peak_bytes: None,
            reserved_bytes: None,
            reserved_peak_bytes: None,
            active_bytes: None,
            inactive_split_bytes: None,
            num_alloc_retries: None,
            num_ooms: None,
            age_ms: 0,
            run_id: bad(),
            steps: None,
            step_growth: None,
            step_marker: None,
            steps_marked: None,
            held_sites: None,
        }));
        let mut d = Device {
            uuid: bad(),
            name: bad(),
            pci_bus_id: bad(),
            processes_error: bad(),
            error: bad(),
            processes: vec![p],
            ..Device::default()
        };
        d.field_errors.insert("fan", "n\u{9b}o".into());
        let sample = Sample {
            timestamp: SystemTime::UNIX_EPOCH,
            hostname: bad(),
            source: "nvml",
            driver_version: bad(),
            cuda_version: bad(),
            devices: vec![d],
            error: bad(),
            host: None,
        };
        let raw = serde_json::to_string(&sample).expect("json");
        assert!(raw.contains('\u{9b}'), "the test's text is hostile");
        let escaped = sample.escaped();
        assert!(matches!(escaped, std::borrow::Cow::Owned(_)));
        let text = serde_json::to_string(&*escaped).expect("json");
        assert!(!text.chars().any(crate::text::is_unsafe), "{text}");
        let clean = Sample {
            devices: vec![Device::default()],
            hostname: Some("node".into()),
            ..sample.clone()
        };
        let clean = Sample {
            driver_version: None,
            cuda_version: None,
            error: None,
            ..clean
        };
        assert!(matches!(clean.escaped(), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn impossible_readings_become_unknown_with_what_was_reported() {
        let gib = 1u64 << 30;
        let good = Device {
            memory: Memory {
                total_bytes: Some(80 * gib),
                used_bytes: Some(30 * gib),
                free_bytes: Some(49 * gib),
                reserved_bytes: Some(gib),
            },
            utilization: Utilization {
                gpu_percent: Some(100),
                memory_percent: Some(0),
            },
            temperature_c: Some(85),
            power_draw_w: Some(700.0),
            power_limit_w: Some(700.0),
            fan_percent: Some(110),
            processes: vec![Process::from_nvml(1, ProcessKind::Compute, Some(30 * gib))],
            ..Device::default()
        };
        let mut d = good.clone();
        d.check_readings();
        assert_eq!(
            serde_json::to_value(&d).expect("json"),
            serde_json::to_value(&good).expect("json"),
            "possible values pass unchanged"
        );

        let mut d = good.clone();
        d.memory.used_bytes = Some(u64::MAX - 3);
        d.memory.free_bytes = Some(u64::MAX - 9);
        d.utilization.gpu_percent = Some(u32::MAX);
        d.temperature_c = Some(0);
        d.power_draw_w = Some(0.0);
        d.power_limit_w = Some(f64::NAN);
        d.fan_percent = Some(u32::MAX);
        d.processes[0].gpu_memory_bytes = Some(81 * gib);
        d.check_readings();
        assert_eq!(d.memory.total_bytes, Some(80 * gib));
        assert_eq!((d.memory.used_bytes, d.memory.free_bytes), (None, None));
        assert_eq!(d.memory.reserved_bytes, Some(gib));
        assert_eq!(d.utilization.gpu_percent, None);
        assert_eq!(d.utilization.memory_percent, Some(0), "0% is a reading");
        assert_eq!(
            (
                d.temperature_c,
                d.power_draw_w,
                d.power_limit_w,
                d.fan_percent
            ),
            (None, None, None, None)
        );
        assert_eq!(d.processes[0].gpu_memory_bytes, None);
        assert!(d.field_errors["utilization"].contains("4294967295%"));
        assert!(d.field_errors["temperature"].contains("0 °C"));
        assert!(d.field_errors["process_memory"].contains("pid 1"));

        // Each below the total, but together above it: used and free cannot both be right.
        let mut d = good.clone();
        d.memory.free_bytes = Some(70 * gib);
        d.check_readings();
        assert_eq!((d.memory.used_bytes, d.memory.free_bytes), (None, None));
        assert!(d.field_errors["memory"].contains("above the total"));
        // v1 (no reserved): used + free must fit the total.
        let mut d = good.clone();
        d.memory.reserved_bytes = None;
        d.check_readings();
        assert_eq!(d.memory.used_bytes, Some(30 * gib));
        // A total of 0 or of exabytes: nothing of the memory can be believed.
        let mut d = good.clone();
        d.memory.total_bytes = Some(0);
        d.check_readings();
        assert_eq!(d.memory, Memory::default());
        assert_eq!(
            d.processes[0].gpu_memory_bytes,
            Some(30 * gib),
            "no total to compare"
        );
    }

    #[test]
    fn selectors_match_index_and_uuid() {
        let d = Device {
            index: 2,
            uuid: Some("GPU-abcdef12-3456".into()),
            ..Device::default()
        };
        assert!(d.matches("2"));
        assert!(!d.matches("0"));
        assert!(d.matches("GPU-abcdef12-3456"));
        assert!(d.matches("abcdef12"));
        assert!(!d.matches("abc"));
    }
}
