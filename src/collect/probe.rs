//! Reports from the in-process probe (`gpumon run`): where they live, who may write them, and
//! how they join NVML's per-process figures.
//!
//! Each probed process publishes `<runtime dir>/<pid>.json`. The runtime directory is per user
//! and private (`$XDG_RUNTIME_DIR/gpumon`, else `<temp>/gpumon-<uid>`, mode 0700). A directory
//! that is not ours or is group/world-writable is refused; files that are not ours, too large,
//! malformed, stale or left by dead processes are ignored (and the dead ones removed).

use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Deserialize;

use crate::model::{AllocatorStats, Device};

/// The probe script, shipped inside the binary.
pub const SITECUSTOMIZE: &str = include_str!("../../assets/python/sitecustomize.py");
/// Largest report accepted (the probe keeps its reports under it: a per-step baseline is about
/// 5 KiB a device in use, its sites at most 4 KiB a device).
pub const MAX_REPORT: u64 = 256 * 1024;
/// Reports older than this (and older than 5 probe intervals) are not shown.
pub const STALE_AFTER: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("{path}: cannot create it: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a directory (or a symbolic link)")]
    NotDir { path: String },
    #[error("{path}: owned by uid {owner}, not by you (uid {me}); refusing to use it")]
    Owner { path: String, owner: u32, me: u32 },
    #[error("{path}: writable by group or others (mode {mode:o}); refusing to use it")]
    Mode { path: String, mode: u32 },
}

fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// The per-user directory probes publish into (not created).
pub fn default_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(base) => PathBuf::from(base).join("gpumon"),
        None => std::env::temp_dir().join(format!("gpumon-{}", uid())),
    }
}

/// Checks that `dir` is a real directory, ours, and not group/world-writable.
pub fn check_dir(dir: &Path) -> Result<(), DirError> {
    let path = dir.display().to_string();
    let meta = fs::symlink_metadata(dir).map_err(|source| DirError::Create {
        path: path.clone(),
        source,
    })?;
    if !meta.file_type().is_dir() {
        return Err(DirError::NotDir { path });
    }
    let me = uid();
    if meta.uid() != me {
        return Err(DirError::Owner {
            path,
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(DirError::Mode { path, mode });
    }
    Ok(())
}

/// Creates `dir` (0700) if needed, then checks it.
pub fn ensure_dir(dir: &Path) -> Result<(), DirError> {
    if fs::symlink_metadata(dir).is_err() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| DirError::Create {
                path: dir.display().to_string(),
                source,
            })?;
    }
    check_dir(dir)
}

/// One report, as the probe writes it (version 1).
#[derive(Debug, Clone, Deserialize)]
pub struct Report {
    pub version: u32,
    pub pid: u32,
    #[serde(default)]
    pub ppid: Option<u32>,
    #[serde(default)]
    pub run_id: String,
    pub time: f64,
    /// `time` checked: a moment that exists, not in the future ([`published`]).
    #[serde(skip, default = "epoch")]
    pub published: SystemTime,
    #[serde(default)]
    pub interval: Option<f64>,
    #[serde(default)]
    pub framework: Option<String>,
    #[serde(default)]
    pub torch_version: Option<String>,
    pub devices: Vec<ReportDevice>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReportDevice {
    /// The framework's device ordinal (after CUDA_VISIBLE_DEVICES).
    pub index: u32,
    #[serde(default)]
    pub uuid: Option<String>,
    /// The CUDA_VISIBLE_DEVICES entry for this ordinal: a physical index or a UUID.
    #[serde(default)]
    pub physical: Option<String>,
    pub allocated: Option<u64>,
    #[serde(default)]
    pub allocated_peak: Option<u64>,
    pub reserved: Option<u64>,
    #[serde(default)]
    pub reserved_peak: Option<u64>,
    #[serde(default)]
    pub active: Option<u64>,
    #[serde(default)]
    pub active_peak: Option<u64>,
    #[serde(default)]
    pub inactive_split: Option<u64>,
    #[serde(default)]
    pub num_alloc_retries: Option<u64>,
    #[serde(default)]
    pub num_ooms: Option<u64>,
    /// `gpumon run --batch N`: the first steps, once measured.
    #[serde(default)]
    pub steps: Option<ReportSteps>,
    /// The per-step baseline: allocated and reserved at the same point of every step. One
    /// that does not parse is dropped alone, not with the report.
    #[serde(default, deserialize_with = "lenient")]
    pub baseline: Option<ReportBaseline>,
    /// Where memory held across steps was allocated (asked by `run` when it finds growth).
    #[serde(default, deserialize_with = "lenient")]
    pub sites: Option<ReportSites>,
}

/// `T` if the value parses as one, else `None`.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

/// The probe's held-across-steps blocks by site (see [`crate::model::HeldSites`]).
#[derive(Debug, Clone, Deserialize)]
pub struct ReportSites {
    pub step: u64,
    pub held_steps: u64,
    pub seconds: f64,
    #[serde(default)]
    pub own_history: bool,
    pub sites: Vec<ReportSite>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReportSite {
    pub file: String,
    pub line: u64,
    pub name: String,
    pub blocks: u64,
    pub bytes: u64,
}

impl ReportSites {
    fn held(&self) -> crate::model::HeldSites {
        let cut = |s: &str, n: usize| s.chars().take(n).collect::<String>();
        crate::model::HeldSites {
            step: self.step,
            held_steps: self.held_steps,
            snapshot_micros: if self.seconds.is_finite() && self.seconds >= 0.0 {
                (self.seconds * 1e6).min(u64::MAX as f64) as u64
            } else {
                0
            },
            own_history: self.own_history,
            sites: self
                .sites
                .iter()
                .take(8)
                .map(|s| crate::model::HeldSite {
                    file: cut(&s.file, 300),
                    line: s.line,
                    function: cut(&s.name, 100),
                    blocks: s.blocks,
                    bytes: s.bytes,
                })
                .collect(),
        }
    }
}

/// One step's figures: the step's number, the probe's clock (seconds), allocated, reserved.
pub type StepPoint = (u64, f64, Option<u64>, Option<u64>);

/// The probe's per-step figures for one device: every step of the last few dozen, and every
/// k-th step since the job began (k doubling as the job runs, so that both stay bounded).
#[derive(Debug, Clone, Deserialize)]
pub struct ReportBaseline {
    /// "optimizer", "backward" or the `--step-marker` function.
    pub marker: String,
    /// Steps marked so far.
    pub step: u64,
    #[serde(default)]
    pub recent: Vec<StepPoint>,
    #[serde(default)]
    pub sparse: Vec<StepPoint>,
}

/// The longest marker name kept (a `MODULE:QUALNAME` the user chose).
const MAX_MARKER: usize = 200;
/// The most points of each kind read from a report (the probe keeps 64).
const MAX_POINTS: usize = 256;

impl ReportBaseline {
    /// The growth, if the baseline rises steadily: allocated first, else reserved (the cache
    /// alone growing). `free` is the GPU's free memory, for how soon it is full.
    pub fn growth(&self, free: Option<u64>) -> Option<crate::model::StepGrowth> {
        use crate::model::growth;
        let series = |pts: &[StepPoint], pick: fn(&StepPoint) -> Option<u64>| -> Vec<(u64, u64)> {
            pts.iter()
                .take(MAX_POINTS)
                .filter_map(|p| Some((p.0, pick(p)?)))
                .collect()
        };
        let recent = &self.recent[..self.recent.len().min(MAX_POINTS)];
        let last = recent.iter().max_by_key(|p| p.0)?;
        let (measure, trend) = [
            ("allocated", (|p| p.2) as fn(&StepPoint) -> Option<u64>),
            ("reserved", |p| p.3),
        ]
        .into_iter()
        .find_map(|(name, pick)| {
            Some((
                name,
                growth::growth(&series(recent, pick), &series(&self.sparse, pick))?,
            ))
        })?;
        let per_step = trend.bytes_per_step.round();
        if !(per_step >= 1.0 && per_step < u64::MAX as f64) {
            return None;
        }
        // The room left: free memory, and for allocated growth the cache's unallocated part.
        let cached = match measure {
            "allocated" => last.3.zip(last.2).map_or(0, |(r, a)| r.saturating_sub(a)),
            _ => 0,
        };
        let steps_to_full = free.map(|f| ((f.saturating_add(cached)) as f64 / per_step) as u64);
        let first = recent.iter().min_by_key(|p| p.0)?;
        let micros_per_step = (last.0 > first.0)
            .then(|| (last.1 - first.1) * 1e6 / (last.0 - first.0) as f64)
            .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e15)
            .map(|s| s.round() as u64);
        Some(crate::model::StepGrowth {
            measure: measure.into(),
            bytes_per_step: per_step as u64,
            since_step: trend.from_step,
            last_step: trend.to_step,
            micros_per_step,
            steps_to_full,
        })
    }
}

/// What the probe measured over a job's first steps (see [`crate::model::StepMeasure`]).
#[derive(Debug, Clone, Deserialize)]
pub struct ReportSteps {
    pub batch: u32,
    pub steps: u32,
    pub held: u64,
    pub peak: u64,
    #[serde(default)]
    pub reserved_peak: Option<u64>,
    #[serde(default)]
    pub training: bool,
}

impl ReportSteps {
    /// The measure, when it is possible: a batch, a step, and a peak no lower than what was
    /// held (another program's report is not trusted).
    fn measure(&self) -> Option<crate::model::StepMeasure> {
        (self.batch >= 1 && self.steps >= 1 && self.peak >= self.held).then_some(
            crate::model::StepMeasure {
                batch: self.batch,
                steps: self.steps,
                held_bytes: self.held,
                peak_bytes: self.peak,
                reserved_peak_bytes: self.reserved_peak.filter(|r| *r >= self.peak),
                training: self.training,
            },
        )
    }
}

fn epoch() -> SystemTime {
    SystemTime::UNIX_EPOCH
}

/// How far in the future a report's time may be (another clock, a little ahead).
pub const CLOCK_SKEW: Duration = Duration::from_secs(5);

/// When a report says it was published, if that is a moment at all: seconds since the epoch,
/// finite, not negative, representable, and not more than [`CLOCK_SKEW`] ahead of `now`. A
/// report whose time is 1e19, NaN or next year is not believed (it would otherwise never
/// age, or overflow the clock's arithmetic).
pub fn published(time: f64, now: SystemTime) -> Option<SystemTime> {
    if !time.is_finite() || time < 0.0 {
        return None;
    }
    let at = SystemTime::UNIX_EPOCH.checked_add(Duration::try_from_secs_f64(time).ok()?)?;
    (at <= now.checked_add(CLOCK_SKEW)?).then_some(at)
}

/// Whether process `pid` exists (EPERM means it does, but is someone else's).
fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Reads every acceptable report in `dir`, removing those of dead processes.
pub fn read_reports(dir: &Path) -> Vec<Report> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let me = uid();
    let now = SystemTime::now();
    let mut out = Vec::new();
    let mut buf = String::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_file() || meta.uid() != me || meta.len() > MAX_REPORT {
            continue;
        }
        if !alive(pid) {
            let _ = fs::remove_file(&path);
            continue;
        }
        buf.clear();
        let Ok(mut f) = fs::File::open(&path) else {
            continue;
        };
        if f.by_ref()
            .take(MAX_REPORT)
            .read_to_string(&mut buf)
            .is_err()
        {
            continue;
        }
        let Ok(mut report) = serde_json::from_str::<Report>(&buf) else {
            continue;
        };
        if report.version != 1 || report.pid != pid {
            continue;
        }
        let Some(at) = published(report.time, now) else {
            continue;
        };
        report.published = at;
        let age = now.duration_since(at).unwrap_or_default();
        // Five of the probe's intervals (at most an hour each), at least STALE_AFTER.
        let interval = report
            .interval
            .filter(|i| i.is_finite())
            .unwrap_or(1.0)
            .clamp(0.0, 3600.0);
        let limit = STALE_AFTER.max(Duration::from_secs_f64(interval * 5.0));
        if age > limit {
            continue;
        }
        out.push(report);
    }
    out
}

/// Reports kept between ticks: probes publish once per interval (by atomic rename, which
/// changes the directory's mtime), so a fast sampler need not re-read every file every tick.
#[derive(Debug, Default)]
pub struct ReportCache {
    dir_mtime: Option<SystemTime>,
    read_at: Option<std::time::Instant>,
    reports: Vec<Report>,
}

/// The longest cached reports are used without a fresh read (staleness and dead processes are
/// judged at read time).
const CACHE_FOR: Duration = Duration::from_secs(1);

impl ReportCache {
    /// The reports in `dir`, re-read only when the directory changed or the cache is old.
    pub fn get(&mut self, dir: &Path) -> &[Report] {
        let mtime = fs::metadata(dir).and_then(|m| m.modified()).ok();
        let fresh = self.read_at.is_some_and(|t| t.elapsed() < CACHE_FOR);
        if !(fresh && mtime.is_some() && mtime == self.dir_mtime) {
            self.reports = read_reports(dir);
            self.dir_mtime = mtime;
            self.read_at = Some(std::time::Instant::now());
        }
        &self.reports
    }
}

/// Whether a report's device entry is NVML device `d`.
fn same_gpu(entry: &ReportDevice, d: &Device) -> bool {
    let norm = |s: &str| s.trim().trim_start_matches("GPU-").to_ascii_lowercase();
    if let (Some(u), Some(du)) = (&entry.uuid, &d.uuid) {
        return norm(u) == norm(du);
    }
    match &entry.physical {
        Some(p) if p.parse::<u32>().is_ok() => p.parse::<u32>().ok() == Some(d.index),
        Some(p) => d
            .uuid
            .as_deref()
            .is_some_and(|du| norm(du).starts_with(&norm(p))),
        None => entry.index == d.index,
    }
}

/// Attaches each report's allocator figures to the matching NVML process rows.
pub fn merge(devices: &mut [Device], reports: &[Report]) {
    if reports.is_empty() {
        return;
    }
    let by_pid: HashMap<u32, &Report> = reports.iter().map(|r| (r.pid, r)).collect();
    let now = SystemTime::now();
    for d in devices.iter_mut() {
        let snapshot = Device {
            processes: Vec::new(),
            ..d.clone_identity()
        };
        let free = d.memory.free_bytes;
        for p in &mut d.processes {
            let Some(r) = by_pid.get(&p.pid) else {
                continue;
            };
            let Some(e) = r.devices.iter().find(|e| same_gpu(e, &snapshot)) else {
                continue;
            };
            let published = r.published;
            p.allocator = Some(Box::new(AllocatorStats {
                framework: r.framework.clone().unwrap_or_else(|| "pytorch".into()),
                framework_version: r.torch_version.clone().filter(|v| !v.is_empty()),
                allocated_bytes: e.allocated,
                allocated_peak_bytes: e.allocated_peak,
                reserved_bytes: e.reserved,
                reserved_peak_bytes: e.reserved_peak,
                active_bytes: e.active,
                inactive_split_bytes: e.inactive_split,
                num_alloc_retries: e.num_alloc_retries,
                num_ooms: e.num_ooms,
                age_ms: now
                    .duration_since(published)
                    .unwrap_or_default()
                    .as_millis() as u64,
                run_id: (!r.run_id.is_empty()).then(|| r.run_id.clone()),
                steps: e.steps.as_ref().and_then(ReportSteps::measure),
                step_growth: e.baseline.as_ref().and_then(|b| b.growth(free)),
                step_marker: e
                    .baseline
                    .as_ref()
                    .map(|b| b.marker.chars().take(MAX_MARKER).collect()),
                steps_marked: e.baseline.as_ref().map(|b| b.step),
                held_sites: e.sites.as_ref().map(ReportSites::held),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(index: u32, uuid: &str) -> Device {
        Device {
            index,
            uuid: Some(uuid.into()),
            ..Device::default()
        }
    }

    fn entry(index: u32, uuid: Option<&str>, physical: Option<&str>) -> ReportDevice {
        serde_json::from_value(serde_json::json!({
            "index": index, "uuid": uuid, "physical": physical,
            "allocated": 1, "reserved": 2
        }))
        .expect("entry")
    }

    #[test]
    fn a_baseline_that_rises_is_growth_and_a_bad_one_is_dropped_alone() {
        const MIB: u64 = 1 << 20;
        // 60 steps, 0.1 s each: allocated 4 GiB + 8 MiB a step, 512 MiB cached above it.
        let points: Vec<serde_json::Value> = (1..=60u64)
            .map(|s| {
                let a = (4 << 30) + s * 8 * MIB;
                serde_json::json!([s, s as f64 * 0.1, a, a + 512 * MIB])
            })
            .collect();
        let e: ReportDevice = serde_json::from_value(serde_json::json!({
            "index": 0, "allocated": 1, "reserved": 2,
            "baseline": {"marker": "optimizer", "step": 60, "recent": points, "sparse": []}
        }))
        .expect("entry");
        let b = e.baseline.expect("baseline");
        let g = b.growth(Some(1 << 30)).expect("growth");
        assert_eq!(g.measure, "allocated");
        assert_eq!(g.bytes_per_step, 8 * MIB);
        assert_eq!((g.since_step, g.last_step), (11, 60));
        assert_eq!(g.micros_per_step, Some(100_000));
        // 1 GiB free + 512 MiB cached, 8 MiB a step: 192 steps, 19.2 s.
        assert_eq!(g.steps_to_full, Some(192));
        assert_eq!(g.seconds_to_full().map(|s| s.round()), Some(19.0));
        assert_eq!(
            b.growth(None).and_then(|g| g.steps_to_full),
            None,
            "free unknown"
        );
        // A baseline that does not parse loses only itself.
        let e: ReportDevice = serde_json::from_value(serde_json::json!({
            "index": 0, "allocated": 1, "reserved": 2,
            "baseline": {"marker": 7, "recent": [["x"]]}
        }))
        .expect("the entry still parses");
        assert!(e.baseline.is_none());
        assert_eq!(e.allocated, Some(1));
    }

    #[test]
    fn a_report_time_that_is_no_moment_is_not_believed() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let secs = |t: f64| published(t, now);
        assert_eq!(
            secs(1_799_999_999.5),
            Some(now - Duration::from_millis(500))
        );
        assert_eq!(
            secs(1_800_000_003.0),
            Some(now + Duration::from_secs(3)),
            "clock skew"
        );
        for bad in [
            1e19,
            f64::NAN,
            f64::INFINITY,
            -1.0,
            1_800_000_060.0,
            f64::MAX,
        ] {
            assert_eq!(secs(bad), None, "{bad}");
        }
    }

    #[test]
    fn devices_match_by_uuid_then_visible_devices() {
        let d1 = dev(1, "GPU-abcd-1234");
        assert!(same_gpu(&entry(0, Some("GPU-ABCD-1234"), None), &d1));
        assert!(same_gpu(&entry(0, Some("abcd-1234"), None), &d1));
        assert!(!same_gpu(&entry(1, Some("GPU-other"), None), &d1));
        // CUDA_VISIBLE_DEVICES=1: torch ordinal 0 is physical GPU 1.
        assert!(same_gpu(&entry(0, None, Some("1")), &d1));
        assert!(!same_gpu(&entry(1, None, Some("0")), &d1));
        assert!(same_gpu(&entry(0, None, Some("GPU-abcd")), &d1));
        assert!(same_gpu(&entry(1, None, None), &d1));
    }

    #[test]
    fn the_cache_rereads_when_a_probe_publishes() {
        let base = tempfile::tempdir().expect("tempdir");
        ensure_dir(base.path()).expect("dir");
        let me = std::process::id();
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let publish = |allocated: u64| {
            let tmp = base.path().join(".tmp");
            let text = format!(
                r#"{{"version":1,"pid":{me},"time":{now},"devices":[{{"index":0,"allocated":{allocated},"reserved":9}}]}}"#
            );
            fs::write(&tmp, text).expect("write");
            fs::rename(&tmp, base.path().join(format!("{me}.json"))).expect("rename");
        };
        let mut cache = ReportCache::default();
        assert!(cache.get(base.path()).is_empty());
        publish(1);
        assert_eq!(cache.get(base.path())[0].devices[0].allocated, Some(1));
        publish(2);
        assert_eq!(cache.get(base.path())[0].devices[0].allocated, Some(2));
    }

    #[test]
    fn insecure_dirs_are_refused() {
        let base = tempfile::tempdir().expect("tempdir");
        let ok = base.path().join("ok");
        ensure_dir(&ok).expect("fresh dir");
        assert_eq!(
            fs::metadata(&ok)
                .map(|m| m.permissions().mode() & 0o777)
                .ok(),
            Some(0o700)
        );
        let open = base.path().join("open");
        fs::create_dir(&open).expect("mkdir");
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(matches!(check_dir(&open), Err(DirError::Mode { .. })));
        let file = base.path().join("file");
        fs::write(&file, b"x").expect("write");
        assert!(matches!(check_dir(&file), Err(DirError::NotDir { .. })));
    }
}
