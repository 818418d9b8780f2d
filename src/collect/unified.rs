//! Reads what the system says about memory the GPU shares with it, and the GPU memory limit of
//! the container gpumon runs in: `/proc/meminfo`, `/proc/pressure/memory`, the NUMA nodes, and
//! the cgroup's `dmem` files, all under one root (`GPUMON_HOST_ROOT`, default `/`) so tests
//! point it at stand-in trees. What the figures mean is decided in [`crate::model::unified`].
//!
//! On a discrete GPU without a limit this costs one read of `/proc/self/cgroup` at start and a
//! failed open of a `dmem.max` per cgroup level each tick: the memory files are read only where
//! a device's memory is shared.

use std::path::{Path, PathBuf};

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

/// gpumon's own cgroup v2 path and its directory, read once (a process does not change
/// containers).
fn own_cgroup() -> Option<&'static (String, String)> {
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

/// This container's limit on a GPU as NVML R615 reads it
/// ([`super::source::nvml_limits`]), called by the NVML reader on its own thread; `None`
/// where the driver lacks the call or sets no limit. A `dmem` limit read by [`Watch`]
/// replaces it.
pub fn nvml_limit(device: &nvml_wrapper::Device) -> Option<GpuLimit> {
    if !super::source::nvml_limits::available() {
        return None;
    }
    let (path, dir) = own_cgroup()?;
    super::source::nvml_limits::read(device, dir, path)
}

/// What the sampler keeps between ticks: the root and gpumon's own cgroup.
pub struct Watch {
    root: PathBuf,
    /// gpumon's cgroup v2 path, read once (a process does not change containers); `None`
    /// also where the kernel has no `dmem` controller (`cgroup.controllers` at the root does
    /// not list it), so nothing is looked for each tick.
    cgroup: Option<String>,
    /// Whether anything is read at all ([`Watch::for_source`]).
    enabled: bool,
}

impl Watch {
    /// For the driver's source, reading the system under [`root`]. A simulated source
    /// (`--demo`, `--scenario`) reads nothing of this machine unless `GPUMON_HOST_ROOT` names
    /// a tree to read: a simulated GPU beside the real host's memory and cgroup limit would
    /// mix two machines.
    pub fn for_source(kind: &str) -> Self {
        if kind == "nvml" || std::env::var_os(ROOT_ENV).is_some_and(|v| !v.is_empty()) {
            Self::new(root())
        } else {
            Watch {
                root: PathBuf::new(),
                cgroup: None,
                enabled: false,
            }
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
            cgroup,
            enabled: true,
        }
    }

    /// Adds each device's container limit and, for shared memory, the system's figures.
    pub fn update(&self, devices: &mut [Device]) {
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
        let shared = |d: &Device| {
            d.error.is_none()
                && unified::part_kind(d.name.as_deref()) != unified::PartKind::Discrete
        };
        if !devices.iter().any(shared) {
            return;
        }
        let facts = read_facts(&self.root);
        for d in devices.iter_mut().filter(|d| shared(d)) {
            d.shared_memory = unified::describe(d, &facts, d.container_limit.as_ref());
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
