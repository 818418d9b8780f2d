//! Reads what the system says about memory the GPU shares with it, and the GPU memory limit of
//! the container gpumon runs in: `/proc/meminfo`, `/proc/pressure/memory`, the NUMA nodes, and
//! the cgroup's `dmem` files, all under one root (`GPUMON_HOST_ROOT`, default `/`) so tests
//! point it at stand-in trees. What the figures mean is decided in [`crate::model::unified`].
//!
//! On a discrete GPU without a limit this costs one read of `/proc/self/cgroup` at start and a
//! failed open of a `dmem.max` per cgroup level each tick: the memory files are read only where
//! a device's memory is shared.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::model::unified::{self, GpuLimit, LimitSource, NodeFacts, SystemFacts};
use crate::model::Device;

/// The environment variable naming the root under which `/proc` and `/sys` are read.
/// Not `GPUMON_DEVICE_DIR`: that one names the directory of the device nodes (`/dev`).
pub const ROOT_ENV: &str = "GPUMON_HOST_ROOT";
/// The most a proc or sysfs file is read for: meminfo is ~1.5 KiB, a dmem file a line a GPU.
const MAX_FILE: u64 = 64 * 1024;
/// The most NUMA nodes read (Linux's MAX_NUMNODES is 1024).
const MAX_NODES: usize = 1024;
/// The deepest cgroup walked up from gpumon's own.
const MAX_DEPTH: usize = 64;
/// How often the limit files of a cgroup holding GPU processes are read again: a limit is
/// set when a container starts, and its use is shown beside the processes' own figures.
const OWNER_REFRESH: Duration = Duration::from_secs(5);
/// The most (cgroup, GPU) pairs whose limits are kept: a node's containers, with room.
const MAX_OWNER_CGROUPS: usize = 4096;

/// The root under which the system's files are read.
pub fn root() -> PathBuf {
    std::env::var_os(ROOT_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

fn read(path: &Path) -> Option<String> {
    crate::files::read_text(path, MAX_FILE, "a system memory file").ok()
}

/// `root` joined with an absolute path.
fn under(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// The system's memory, pressure and NUMA nodes, as read now.
pub fn read_facts(root: &Path) -> SystemFacts {
    let meminfo = read(&under(root, "/proc/meminfo")).unwrap_or_default();
    SystemFacts {
        total_bytes: unified::meminfo_bytes(&meminfo, "MemTotal"),
        available_bytes: unified::meminfo_bytes(&meminfo, "MemAvailable"),
        pressure: read(&under(root, "/proc/pressure/memory"))
            .and_then(|t| unified::parse_pressure(&t)),
        nodes: read_nodes(&under(root, "/sys/devices/system/node")),
    }
}

fn read_nodes(dir: &Path) -> Vec<NodeFacts> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut nodes: Vec<NodeFacts> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let id: u32 = name.to_str()?.strip_prefix("node")?.parse().ok()?;
            Some((id, e.path()))
        })
        .take(MAX_NODES)
        .map(|(id, path)| {
            let meminfo = read(&path.join("meminfo")).unwrap_or_default();
            NodeFacts {
                id,
                has_cpus: read(&path.join("cpulist")).is_some_and(|c| !c.trim().is_empty()),
                total_bytes: unified::meminfo_bytes(&meminfo, "MemTotal"),
                free_bytes: unified::meminfo_bytes(&meminfo, "MemFree"),
            }
        })
        .collect();
    nodes.sort_by_key(|n| n.id);
    nodes
}

/// The GPU memory limit of the cgroup at `cgroup` (below the cgroup root) on the GPU at
/// `pci`: the nearest level, from the cgroup up, whose `dmem.max` names this GPU decides (a
/// number is the limit; `max` is none, and shadows its ancestors' limits).
pub fn dmem_limit(root: &Path, cgroup: &str, pci: (u32, u8, u8, u8)) -> Option<GpuLimit> {
    let base = under(root, "/sys/fs/cgroup");
    let mut path = cgroup.trim_end_matches('/').to_owned();
    for _ in 0..MAX_DEPTH {
        let dir = under(&base, &path);
        if let Some(value) = read(&dir.join("dmem.max")).and_then(|t| unified::dmem_value(&t, pci))
        {
            let hard = value?;
            let at = |file: &str| {
                read(&dir.join(file))
                    .and_then(|t| unified::dmem_value(&t, pci))
                    .flatten()
            };
            return Some(GpuLimit {
                cgroup: if path.is_empty() { "/".into() } else { path },
                source: LimitSource::Dmem,
                hard_bytes: Some(hard),
                soft_bytes: at("dmem.min").filter(|s| *s > 0),
                used_bytes: at("dmem.current"),
            });
        }
        match path.rsplit_once('/') {
            Some((parent, _)) if !path.is_empty() => path = parent.to_owned(),
            _ => return None,
        }
    }
    None
}

/// The directory of the cgroup at `cgroup` (below the cgroup root), under [`root`]: what
/// `nvmlDeviceGetMemoryLimits_v1` takes as its `nameSpace`.
pub fn cgroup_dir(cgroup: &str) -> String {
    under(&under(&root(), "/sys/fs/cgroup"), cgroup)
        .to_string_lossy()
        .into_owned()
}

/// gpumon's own cgroup v2 path and its directory, read once (a process does not change
/// containers).
pub fn own_cgroup() -> Option<&'static (String, String)> {
    static OWN: std::sync::OnceLock<Option<(String, String)>> = std::sync::OnceLock::new();
    OWN.get_or_init(|| {
        let root = root();
        let text = read(&under(&root, "/proc/self/cgroup"))?;
        let path = unified::cgroup_v2_path(&text)?.to_owned();
        let dir = under(&under(&root, "/sys/fs/cgroup"), &path);
        Some((path, dir.to_string_lossy().into_owned()))
    })
    .as_ref()
}

/// A simulated machine's own memory (its scenario's `host`), read in place of this machine's
/// `/proc` and `/sys`.
pub type HostFacts = Arc<dyn Fn() -> SystemFacts + Send + Sync>;

/// What the sampler keeps between ticks: the root and gpumon's own cgroup.
pub struct Watch {
    root: PathBuf,
    /// A simulated machine's own memory (its scenario's `host`), read instead of the files
    /// under `root`.
    facts: Option<HostFacts>,
    /// gpumon's cgroup v2 path, read once (a process does not change containers); `None`
    /// also where the kernel has no `dmem` controller (`cgroup.controllers` at the root does
    /// not list it), so nothing is looked for each tick.
    cgroup: Option<String>,
    /// Whether anything is read at all ([`Watch::for_source`]).
    enabled: bool,
    /// Whether the kernel has the `dmem` controller: without it no process's cgroup is read.
    dmem: bool,
    /// The limits of the cgroups that hold GPU processes, per GPU, and when each was read.
    owners: HashMap<(Arc<str>, PciKey), Cached>,
}

type PciKey = (u32, u8, u8, u8);

/// One cgroup's limit on one GPU, as last read.
struct Cached {
    limit: Option<Arc<GpuLimit>>,
    read_at: Instant,
    seen: bool,
}

impl Watch {
    /// For the driver's source (or a Jetson read from sysfs), reading the system under
    /// [`root`]. A simulated source (`--demo`, `--scenario`) reads nothing of this machine
    /// unless `GPUMON_HOST_ROOT` names a tree to read: a simulated GPU beside the real host's
    /// memory and cgroup limit would mix two machines.
    ///
    /// A simulated machine that carries its own host side (`facts`: its scenario's `host`)
    /// is shown beside that and nothing of this machine, `GPUMON_HOST_ROOT` or not.
    pub fn for_source(kind: &str, facts: Option<HostFacts>) -> Self {
        if let Some(facts) = facts {
            return Watch {
                facts: Some(facts),
                ..Self::disabled()
            };
        }
        if kind == "nvml"
            || kind == "tegra"
            || std::env::var_os(ROOT_ENV).is_some_and(|v| !v.is_empty())
        {
            Self::new(root())
        } else {
            Self::disabled()
        }
    }

    /// Reads nothing.
    fn disabled() -> Self {
        Watch {
            root: PathBuf::new(),
            facts: None,
            cgroup: None,
            enabled: false,
            dmem: false,
            owners: HashMap::new(),
        }
    }

    pub fn new(root: PathBuf) -> Self {
        let dmem = read(&under(&root, "/sys/fs/cgroup/cgroup.controllers"))
            .is_some_and(|c| c.split_whitespace().any(|w| w == "dmem"));
        let cgroup = read(&under(&root, "/proc/self/cgroup"))
            .and_then(|t| unified::cgroup_v2_path(&t).map(str::to_owned))
            .filter(|_| dmem);
        Watch {
            root,
            facts: None,
            cgroup,
            enabled: true,
            dmem,
            owners: HashMap::new(),
        }
    }

    /// Adds each device's container limit and, for shared memory, the system's figures.
    pub fn update(&self, devices: &mut [Device]) {
        if let Some(facts) = &self.facts {
            if devices.iter().any(shared) {
                describe_shared(devices, &facts());
            }
            return;
        }
        if !self.enabled {
            return;
        }
        if let Some(cgroup) = &self.cgroup {
            for d in devices.iter_mut() {
                let Some(pci) = d.pci_bus_id.as_deref().and_then(unified::pci_key) else {
                    continue;
                };
                if let Some(l) = dmem_limit(&self.root, cgroup, pci) {
                    d.container_limit = Some(l);
                }
            }
        }
        if !devices.iter().any(shared) {
            return;
        }
        describe_shared(devices, &read_facts(&self.root));
    }
}

impl Watch {
    /// A simulated machine's host line: its scenario's memory; the rest (CPU, swap, load,
    /// uptime) unknown, never this machine's. `None` unless the source carries its host.
    pub fn simulated_host(&self) -> Option<crate::model::HostStats> {
        let f = (self.facts.as_ref()?)();
        Some(crate::model::HostStats {
            memory_total_bytes: f.total_bytes,
            memory_available_bytes: f.available_bytes,
            memory_used_bytes: f
                .total_bytes
                .zip(f.available_bytes)
                .map(|(t, a)| t.saturating_sub(a)),
            ..Default::default()
        })
    }
}

/// Whether a device's memory is shared with the system (a unified or coherent part that
/// answered).
fn shared(d: &Device) -> bool {
    d.error.is_none() && unified::part_kind(d.name.as_deref()) != unified::PartKind::Discrete
}

/// Adds to each device whose memory is shared what the system says of it (`facts`).
pub fn describe_shared(devices: &mut [Device], facts: &SystemFacts) {
    for d in devices.iter_mut().filter(|d| shared(d)) {
        d.shared_memory = unified::describe(d, facts, d.container_limit.as_ref());
    }
}

/// The limit the driver gave for a cgroup on a device (by index), if any: what the device's
/// reader read through `nvmlDeviceGetMemoryLimits_v1` ([`crate::collect::readers`]).
pub type DriverLimit<'a> = &'a dyn Fn(u32, &str) -> Option<Arc<GpuLimit>>;

impl Watch {
    /// Adds to each process the GPU memory limit of the cgroup that holds it: from its
    /// cgroup's `dmem` files (the nearest level naming the GPU, as for gpumon's own), else
    /// the driver's answer for that cgroup (`driver`, read by the device's reader). Called
    /// after the host's lookup, which reads each process's cgroup once, at first sight; the
    /// limit files are read per cgroup, not per process, and again every 5 s
    /// (`OWNER_REFRESH`). Cgroups no process is in any more are forgotten.
    pub fn update_owners(&mut self, devices: &mut [Device], driver: DriverLimit) {
        self.update_owners_at(devices, driver, Instant::now());
    }

    fn update_owners_at(&mut self, devices: &mut [Device], driver: DriverLimit, now: Instant) {
        let dmem = self.enabled && self.dmem;
        for c in self.owners.values_mut() {
            c.seen = false;
        }
        for d in devices.iter_mut() {
            let pci = d.pci_bus_id.as_deref().and_then(unified::pci_key);
            let index = d.index;
            for p in &mut d.processes {
                let Some(cgroup) = p.cgroup.clone() else {
                    continue;
                };
                let from_dmem = match pci {
                    Some(pci) if dmem => self.owner_limit(Arc::clone(&cgroup), pci, now),
                    _ => None,
                };
                p.gpu_limit = from_dmem.or_else(|| driver(index, &cgroup));
            }
        }
        self.owners.retain(|_, c| c.seen);
    }

    fn owner_limit(
        &mut self,
        cgroup: Arc<str>,
        pci: PciKey,
        now: Instant,
    ) -> Option<Arc<GpuLimit>> {
        let full = self.owners.len() >= MAX_OWNER_CGROUPS;
        let root = &self.root;
        let read = || dmem_limit(root, &cgroup, pci).map(Arc::new);
        match self.owners.entry((cgroup.clone(), pci)) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let c = e.get_mut();
                if now.saturating_duration_since(c.read_at) >= OWNER_REFRESH {
                    c.limit = read();
                    c.read_at = now;
                }
                c.seen = true;
                c.limit.clone()
            }
            std::collections::hash_map::Entry::Vacant(_) if full => None,
            std::collections::hash_map::Entry::Vacant(e) => {
                let limit = read();
                e.insert(Cached {
                    limit: limit.clone(),
                    read_at: now,
                    seen: true,
                });
                limit
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = under(root, rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    #[test]
    fn the_nearest_level_naming_the_gpu_decides() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let pci = unified::pci_key("00000000:01:00.0").expect("address");
        write(
            root,
            "/sys/fs/cgroup/kubepods/dmem.max",
            "drm/0000:01:00.0/vram0 8589934592\n",
        );
        write(
            root,
            "/sys/fs/cgroup/kubepods/dmem.current",
            "drm/0000:01:00.0/vram0 7516192768\n",
        );
        std::fs::create_dir_all(under(root, "/sys/fs/cgroup/kubepods/pod/c")).expect("mkdir");
        let l = dmem_limit(root, "/kubepods/pod/c", pci).expect("inherited");
        assert_eq!(l.cgroup, "/kubepods");
        assert_eq!((l.hard_bytes, l.used_bytes), (Some(8 * GIB), Some(7 * GIB)));
        // The container's own `max` shadows the ancestor's limit.
        write(
            root,
            "/sys/fs/cgroup/kubepods/pod/c/dmem.max",
            "drm/0000:01:00.0/vram0 max\n",
        );
        assert_eq!(dmem_limit(root, "/kubepods/pod/c", pci), None);
        // Another GPU's line is not ours.
        let other = unified::pci_key("0000:02:00.0").expect("address");
        assert_eq!(dmem_limit(root, "/kubepods", other), None);
    }

    /// Each process gets its own cgroup's limit, read once per cgroup and again only after
    /// [`OWNER_REFRESH`]; a process in no limited cgroup gets none, and cgroups no process is
    /// in any more are forgotten.
    #[test]
    fn each_process_gets_its_cgroups_limit_read_once_per_cgroup() {
        use crate::model::{Process, ProcessKind};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(
            root,
            "/sys/fs/cgroup/cgroup.controllers",
            "cpu memory dmem\n",
        );
        write(root, "/proc/self/cgroup", "0::/\n");
        let line = |b: u64| format!("drm/0000:01:00.0/vram0 {b}\n");
        write(root, "/sys/fs/cgroup/k/a/dmem.max", &line(8 * GIB));
        write(root, "/sys/fs/cgroup/k/a/dmem.current", &line(5 * GIB));
        write(root, "/sys/fs/cgroup/k/b/dmem.max", &line(4 * GIB));
        std::fs::create_dir_all(under(root, "/sys/fs/cgroup/host")).expect("mkdir");
        let mut w = Watch::new(root.to_path_buf());
        let proc_in = |pid: u32, cgroup: &str| {
            let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(GIB));
            p.cgroup = Some(Arc::from(cgroup));
            p
        };
        let mut devices = vec![Device {
            pci_bus_id: Some("00000000:01:00.0".into()),
            processes: vec![
                proc_in(1, "/k/a"),
                proc_in(2, "/k/a"),
                proc_in(3, "/k/b"),
                proc_in(4, "/host"),
                Process::from_nvml(5, ProcessKind::Compute, Some(GIB)),
            ],
            ..Device::default()
        }];
        let t0 = Instant::now();
        w.update_owners_at(&mut devices, &|_, _| None, t0);
        let limits: Vec<_> = devices[0]
            .processes
            .iter()
            .map(|p| {
                p.gpu_limit
                    .as_ref()
                    .map(|l| (l.cgroup.clone(), l.hard_bytes, l.used_bytes))
            })
            .collect();
        let a = Some(("/k/a".to_owned(), Some(8 * GIB), Some(5 * GIB)));
        let b = Some(("/k/b".to_owned(), Some(4 * GIB), None));
        assert_eq!(limits, [a.clone(), a, b, None, None]);
        let (p1, p2) = (&devices[0].processes[0], &devices[0].processes[1]);
        let shared = p1.gpu_limit.as_ref().zip(p2.gpu_limit.as_ref());
        assert!(
            shared.is_some_and(|(x, y)| Arc::ptr_eq(x, y)),
            "one read per cgroup"
        );

        // Its use grows: the old figure until the refresh is due, then the new one.
        write(root, "/sys/fs/cgroup/k/a/dmem.current", &line(7 * GIB));
        let used = |w: &mut Watch, at: Instant| {
            let mut d = devices.clone();
            w.update_owners_at(&mut d, &|_, _| None, at);
            d[0].processes[0]
                .gpu_limit
                .as_ref()
                .and_then(|l| l.used_bytes)
        };
        assert_eq!(used(&mut w, t0), Some(5 * GIB));
        assert_eq!(used(&mut w, t0 + OWNER_REFRESH), Some(7 * GIB));

        // Only /host's process is left: the limited cgroups are forgotten.
        devices[0].processes.drain(..3);
        w.update_owners_at(&mut devices, &|_, _| None, t0 + OWNER_REFRESH);
        assert_eq!(w.owners.len(), 1);
    }

    /// Without the dmem controller, no process's cgroup is looked at.
    #[test]
    fn no_dmem_controller_no_owner_limits() {
        use crate::model::{Process, ProcessKind};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "/sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
        write(
            root,
            "/sys/fs/cgroup/k/a/dmem.max",
            "drm/0000:01:00.0/vram0 1024\n",
        );
        let mut p = Process::from_nvml(1, ProcessKind::Compute, None);
        p.cgroup = Some(Arc::from("/k/a"));
        let mut devices = vec![Device {
            pci_bus_id: Some("0000:01:00.0".into()),
            processes: vec![p],
            ..Device::default()
        }];
        Watch::new(root.to_path_buf()).update_owners(&mut devices, &|_, _| None);
        assert_eq!(devices[0].processes[0].gpu_limit, None);
    }

    /// The driver's answer (`nvmlDeviceGetMemoryLimits_v1`, read by the device's reader) is a
    /// process's limit where `dmem` has none; a `dmem` limit replaces it; each figure says
    /// its source.
    #[test]
    fn the_drivers_limit_serves_where_dmem_has_none() {
        use crate::model::{Process, ProcessKind};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "/sys/fs/cgroup/cgroup.controllers", "dmem\n");
        write(
            root,
            "/sys/fs/cgroup/k/a/dmem.max",
            "drm/0000:01:00.0/vram0 1024\n",
        );
        std::fs::create_dir_all(under(root, "/sys/fs/cgroup/k/b")).expect("mkdir");
        let in_cgroup = |pid, c: &str| {
            let mut p = Process::from_nvml(pid, ProcessKind::Compute, None);
            p.cgroup = Some(Arc::from(c));
            p
        };
        let mut devices = vec![Device {
            index: 3,
            pci_bus_id: Some("0000:01:00.0".into()),
            processes: vec![
                in_cgroup(1, "/k/a"),
                in_cgroup(2, "/k/b"),
                in_cgroup(3, "/k/c"),
            ],
            ..Device::default()
        }];
        let driver = |index: u32, c: &str| {
            (index == 3 && c != "/k/c").then(|| {
                Arc::new(GpuLimit {
                    cgroup: c.to_owned(),
                    source: LimitSource::Nvml,
                    hard_bytes: Some(2048),
                    soft_bytes: None,
                    used_bytes: Some(0),
                })
            })
        };
        for w in [Watch::new(root.to_path_buf()), Watch::disabled()] {
            let dmem = w.dmem;
            let mut w = w;
            w.update_owners(&mut devices, &driver);
            let got: Vec<_> = devices[0]
                .processes
                .iter()
                .map(|p| p.gpu_limit.as_ref().map(|l| (l.source, l.hard_bytes)))
                .collect();
            let first = if dmem {
                (LimitSource::Dmem, Some(1024))
            } else {
                (LimitSource::Nvml, Some(2048))
            };
            assert_eq!(
                got,
                [Some(first), Some((LimitSource::Nvml, Some(2048))), None],
                "dmem: {dmem}"
            );
        }
    }

    #[test]
    fn garbage_files_give_nothing_and_never_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(
            root,
            "/proc/meminfo",
            "MemTotal: \u{1b}[31m kB\nMemAvailable: -1 kB\n",
        );
        write(root, "/proc/pressure/memory", "some avg10=1e400\n");
        write(root, "/sys/devices/system/node/nodeX/meminfo", "junk");
        let facts = read_facts(root);
        assert_eq!(facts, SystemFacts::default());
        write(root, "/proc/self/cgroup", "0::/../../etc\n");
        assert_eq!(Watch::new(root.to_path_buf()).cgroup, None);
    }
}
