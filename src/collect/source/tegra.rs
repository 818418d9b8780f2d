//! An integrated GPU (Jetson) read without NVML: where the driver's NVML is absent, a Tegra
//! SoC still says in sysfs how busy its GPU is and how hot, and `/proc/meminfo` says the
//! memory it shares with the CPU. Found only when NVML cannot be loaded at all.
//!
//! The paths are the ones jetson-stats reads (`jtop/core/gpu.py`, `jtop/core/temperature.py`):
//! the GPU is the devfreq device under `/sys/class/devfreq/*` whose `device/of_node/name` is
//! one of [`GPU_NODES`]; `device/load` is its load in tenths of a percent; a thermal zone
//! whose `type` is `GPU-therm` (or `gpu-thermal`) holds its temperature in millidegrees. The
//! board is `/proc/device-tree/model`; its `compatible` (or the GPU node's) must name NVIDIA,
//! since other SoCs' GPUs are devfreq nodes named `gpu` too. Its memory is the system's: no GPU-held figure is
//! read here (no process list without NVML), so the device's own memory stays unknown and
//! [`crate::collect::unified`] adds the system's headroom, marked derived.

use std::path::{Path, PathBuf};

use super::{DeviceReader, Opened};
use crate::collect::unified::ROOT_ENV;
use crate::model::unified::{self, SocGpu};
use crate::model::Device;

/// The `of_node` names of Jetson's integrated GPUs, with the family each names: TX2 (gp10b),
/// Xavier (gv11b), Orin (ga10b), and the generic `gpu` of newer device trees.
pub const GPU_NODES: &[(&str, &str)] = &[
    ("gp10b", "TX2"),
    ("gv11b", "Xavier"),
    ("ga10b", "Orin"),
    ("gpu", ""),
];
/// Thermal zone types that hold the GPU's temperature (JetPack 5 and 6 spell them so), in any
/// case.
const GPU_THERMAL: &[&str] = &["GPU-therm", "gpu-thermal"];
/// The most entries of a sysfs class directory looked at.
const MAX_ENTRIES: usize = 256;
/// The most a sysfs file is read for (each is a line).
const MAX_FILE: u64 = 4096;
/// The longest board name kept.
const MAX_MODEL: usize = 128;

const NO_MEMORY: &str = "not reported: shared with the system";
/// Without NVML no process's GPU memory is known: said, so no view takes the list for empty.
const NO_PROCESSES: &str = "processes not listed (no NVML)";

/// The sysfs paths of an integrated GPU found under a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The devfreq directory (`/sys/class/devfreq/17000000.gpu`).
    pub devfreq: PathBuf,
    /// Its `of_node` name (`ga10b`).
    pub node: String,
    /// The board, from the device tree; `None` where it has none.
    pub model: Option<String>,
    /// The GPU's thermal zone directory, where one is named.
    pub thermal: Option<PathBuf>,
}

fn read(path: &Path) -> Option<String> {
    crate::files::read_text(path, MAX_FILE, "a sysfs file").ok()
}

/// A device-tree or sysfs string: NULs and surrounding blanks removed; `None` when empty.
pub fn clean(text: &str) -> Option<String> {
    let s: String = text
        .split('\0')
        .next()
        .unwrap_or_default()
        .trim()
        .chars()
        .take(MAX_MODEL)
        .collect();
    (!s.is_empty()).then_some(s)
}

/// The GPU's load in whole percent from devfreq's `load` (tenths of a percent, 0..=1000);
/// `None` for anything else.
pub fn load_percent(text: &str) -> Option<u32> {
    let tenths: u32 = text.trim().parse().ok()?;
    (tenths <= 1000).then(|| (tenths + 5) / 10)
}

/// A thermal zone's `temp` (millidegrees Celsius) in whole degrees; `None` below zero, above
/// 200 °C or not a number.
pub fn temp_celsius(text: &str) -> Option<u32> {
    let milli: i64 = text.trim().parse().ok()?;
    (0..=200_000)
        .contains(&milli)
        .then(|| u32::try_from((milli + 500) / 1000).ok())
        .flatten()
}

/// The device's name: the family the GPU's node names ("Jetson Orin (ga10b)"), else the
/// board with the node; always with a word ("Jetson", "Tegra") by which the memory model
/// knows the part shares the system's memory.
pub fn device_name(found: &Found) -> String {
    let family = GPU_NODES
        .iter()
        .find(|(n, f)| *n == found.node && !f.is_empty())
        .map(|(_, f)| *f);
    match (family, &found.model) {
        (Some(f), _) => format!("Jetson {f} ({})", found.node),
        (None, Some(m)) => format!("{m} (Tegra {})", found.node),
        (None, None) => format!("Tegra integrated GPU ({})", found.node),
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .take(MAX_ENTRIES)
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths
}

fn under(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// Whether a device-tree `compatible` list (NUL-separated) names an NVIDIA part: the SoC's
/// (`nvidia,tegra234`) or the GPU's own (`nvidia,ga10b`). A Mali or Adreno GPU's devfreq node
/// is named `gpu` too, and is not a Jetson.
pub fn names_nvidia(compatible: &str) -> bool {
    compatible
        .split('\0')
        .any(|c| c.trim().to_ascii_lowercase().starts_with("nvidia,"))
}

/// The integrated GPU under `root`, if the system is a Tegra SoC and has one.
pub fn find(root: &Path) -> Option<Found> {
    let tegra = [
        "/proc/device-tree/compatible",
        "/sys/firmware/devicetree/base/compatible",
    ]
    .iter()
    .filter_map(|p| read(&under(root, p)))
    .any(|c| names_nvidia(&c));
    let (devfreq, node) = sorted_entries(&under(root, "/sys/class/devfreq"))
        .into_iter()
        .find_map(|p| {
            let name = clean(&read(&p.join("device/of_node/name"))?)?;
            let nvidia = tegra
                || read(&p.join("device/of_node/compatible")).is_some_and(|c| names_nvidia(&c));
            (nvidia && GPU_NODES.iter().any(|(n, _)| *n == name)).then_some((p, name))
        })?;
    let model = [
        "/proc/device-tree/model",
        "/sys/firmware/devicetree/base/model",
    ]
    .iter()
    .find_map(|p| clean(&read(&under(root, p))?));
    let thermal = sorted_entries(&under(root, "/sys/class/thermal"))
        .into_iter()
        .find(|p| {
            read(&p.join("type"))
                .and_then(|t| clean(&t))
                .is_some_and(|t| GPU_THERMAL.iter().any(|g| g.eq_ignore_ascii_case(&t)))
        });
    Some(Found {
        devfreq,
        node,
        model,
        thermal,
    })
}

/// Opens the integrated GPU under the system root (`GPUMON_HOST_ROOT`, default `/`) as a
/// source of one device; `None` where there is none.
pub fn open() -> Option<Opened> {
    let root = crate::collect::unified::root();
    let found = find(&root)?;
    Some(Opened {
        kind: "tegra",
        driver_version: None,
        cuda_version: None,
        readers: vec![Box::new(TegraDevice { found })],
        error: None,
        // Real pids, were any listed; a stand-in root is not this machine's /proc.
        host_lookup: std::env::var_os(ROOT_ENV).is_none_or(|v| v.is_empty()),
        events: None,
        limits: false,
        host: None,
    })
}

/// Reads the integrated GPU's load and temperature each tick.
struct TegraDevice {
    found: Found,
}

impl DeviceReader for TegraDevice {
    fn read(&mut self) -> Device {
        read_device(&self.found)
    }
}

/// One reading of the integrated GPU `f`: its load and temperature; its memory unknown (the
/// system's figures are added by [`crate::collect::unified::Watch`]).
pub fn read_device(f: &Found) -> Device {
    let mut d = Device {
        index: 0,
        name: Some(device_name(f)),
        processes_error: Some(NO_PROCESSES.to_owned()),
        ..Device::default()
    };
    d.field_errors.insert("memory", NO_MEMORY.to_owned());
    match read(&f.devfreq.join("device/load")).and_then(|t| load_percent(&t)) {
        Some(p) => d.utilization.gpu_percent = Some(p),
        None => {
            d.field_errors
                .insert("utilization", "devfreq load unreadable".to_owned());
        }
    }
    d.temperature_c = f
        .thermal
        .as_ref()
        .and_then(|t| read(&t.join("temp")))
        .and_then(|t| temp_celsius(&t));
    // The clock and rail gating jetson-stats reads (`jtop/core/gpu.py`): devfreq's
    // `cur_freq` (Hz) and the GPU device's `railgate_enable`.
    d.soc_gpu = Some(SocGpu {
        clock_mhz: read(&f.devfreq.join("cur_freq")).and_then(|t| unified::clock_mhz(&t)),
        rail_gating: read(&f.devfreq.join("device/railgate_enable"))
            .and_then(|t| unified::sysfs_flag(&t)),
    });
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    #[test]
    fn load_is_tenths_of_a_percent_and_garbage_is_unknown() {
        assert_eq!(load_percent("0\n"), Some(0));
        assert_eq!(load_percent("994\n"), Some(99));
        assert_eq!(load_percent("1000"), Some(100));
        assert_eq!(load_percent("1001"), None);
        assert_eq!(load_percent("-3"), None);
        assert_eq!(load_percent("busy"), None);
    }

    #[test]
    fn temperature_is_millidegrees_within_reason() {
        assert_eq!(temp_celsius("45500\n"), Some(46));
        assert_eq!(temp_celsius("-256000"), None);
        assert_eq!(temp_celsius("999999999"), None);
        assert_eq!(temp_celsius(""), None);
    }

    #[test]
    fn a_mali_gpu_node_is_not_a_jetson() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(
            root,
            "proc/device-tree/compatible",
            "radxa,rock-5b\0rockchip,rk3588\0",
        );
        write(
            root,
            "sys/class/devfreq/fb000000.gpu/device/of_node/name",
            "gpu\0",
        );
        write(
            root,
            "sys/class/devfreq/fb000000.gpu/device/of_node/compatible",
            "rockchip,rk3588-mali\0arm,mali-valhall-csf\0",
        );
        assert_eq!(find(root), None);
        assert!(names_nvidia("nvidia,p3737-0000\0nvidia,tegra234\0"));
        assert!(!names_nvidia("arm,mali-bifrost\0"));
    }

    #[test]
    fn device_tree_strings_lose_their_nul_and_are_bounded() {
        assert_eq!(clean("ga10b\0").as_deref(), Some("ga10b"));
        assert_eq!(clean("\0"), None);
        assert_eq!(clean(&"x".repeat(10_000)).map(|s| s.len()), Some(MAX_MODEL));
    }

    #[test]
    fn the_gpu_is_the_devfreq_device_with_a_gpu_node_and_its_name_says_tegra() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        assert_eq!(find(root), None, "no devfreq: no GPU");
        write(
            root,
            "sys/class/devfreq/1-emc/device/of_node/name",
            "external-memory-controller\0",
        );
        assert_eq!(find(root), None, "a devfreq device that is not a GPU");
        write(
            root,
            "sys/class/devfreq/17000000.gpu/device/of_node/name",
            "ga10b\0",
        );
        assert_eq!(find(root), None, "a GPU node, but nothing says NVIDIA");
        write(
            root,
            "sys/class/devfreq/17000000.gpu/device/of_node/compatible",
            "nvidia,ga10b\0",
        );
        write(root, "sys/class/thermal/thermal_zone0/type", "CPU-therm\n");
        write(root, "sys/class/thermal/thermal_zone1/type", "GPU-therm\n");
        let found = find(root).expect("found");
        assert_eq!(found.node, "ga10b");
        assert_eq!(
            found.thermal,
            Some(root.join("sys/class/thermal/thermal_zone1"))
        );
        assert_eq!(device_name(&found), "Jetson Orin (ga10b)");
        // The generic node of newer device trees: the board names it.
        write(
            root,
            "sys/class/devfreq/17000000.gpu/device/of_node/name",
            "gpu\0",
        );
        let found = find(root).expect("found");
        assert_eq!(device_name(&found), "Tegra integrated GPU (gpu)");
        write(root, "proc/device-tree/model", "Some Carrier Board\0");
        let found = find(root).expect("found");
        assert_eq!(device_name(&found), "Some Carrier Board (Tegra gpu)");
        assert_eq!(
            crate::model::unified::part_kind(Some(&device_name(&found))),
            crate::model::unified::PartKind::Unified
        );
    }

    #[test]
    fn a_reading_says_memory_unknown_never_zero() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(
            root,
            "proc/device-tree/compatible",
            "nvidia,p2972-0000\0nvidia,tegra194\0",
        );
        write(root, "sys/class/devfreq/g/device/of_node/name", "gv11b");
        write(root, "sys/class/devfreq/g/device/load", "not a number");
        let d = read_device(&find(root).expect("found"));
        assert_eq!(d.memory.total_bytes, None);
        assert_eq!(d.memory.used_bytes, None);
        assert!(d.field_errors.contains_key("memory"));
        assert_eq!(d.utilization.gpu_percent, None);
        assert!(d.field_errors.contains_key("utilization"));
        assert_eq!(d.temperature_c, None);
        assert_eq!(
            d.soc_gpu,
            Some(SocGpu {
                clock_mhz: None,
                rail_gating: None
            }),
            "no cur_freq, no railgate_enable: unknown, never 0"
        );
        write(root, "sys/class/devfreq/g/cur_freq", "675000000\n");
        write(root, "sys/class/devfreq/g/device/railgate_enable", "0\n");
        let d = read_device(&find(root).expect("found"));
        assert_eq!(
            d.soc_gpu,
            Some(SocGpu {
                clock_mhz: Some(675),
                rail_gating: Some(false)
            })
        );
    }
}
