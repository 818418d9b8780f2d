//! The driver's per-process accounting (NVML accounting mode): each process's highest memory,
//! kept by the driver while it runs and after it exits, so a spike between two samples and a
//! job that died between them are still known.
//!
//! Accounting is off by default; root turns it on per GPU (`nvidia-smi -am 1`). NVML keeps
//! the figures in a circular buffer of a bounded number of processes
//! (`nvmlDeviceGetAccountingBufferSize`): the oldest are overwritten. A peak here is always
//! the driver's `maxMemoryUsage`; where accounting is off, unsupported or refused, there is
//! no peak (`None`, shown as N/A), never 0.

use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

/// The most exited processes a device carries in one sample, newest first: the buffer holds
/// thousands, and the views only need the recent ones.
pub const MAX_EXITED: usize = 16;

/// How long an exited process stays in the samples after it ended.
pub const KEEP_EXITED: Duration = Duration::from_secs(600);

/// What one GPU's accounting says in one sample.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounting {
    /// Whether accounting mode is on; `None` where it could not be asked (the reason in
    /// `error`).
    pub enabled: Option<bool>,
    /// How many processes the driver's buffer holds before it overwrites the oldest.
    pub buffer_size: Option<u32>,
    /// Why accounting could not be read ("not supported", "no permission", …).
    pub error: Option<String>,
    /// Processes that have exited, with their peaks: the newest [`MAX_EXITED`] that ended
    /// within [`KEEP_EXITED`].
    #[serde(default)]
    pub exited: Vec<ExitedProcess>,
}

/// A process the driver's accounting lists as ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitedProcess {
    pub pid: u32,
    /// The driver's `maxMemoryUsage` over its life; `None` where the driver could not say.
    pub peak_bytes: Option<u64>,
    /// The driver's start time (CPU clock).
    #[serde(default, with = "opt_rfc3339")]
    pub started_at: Option<SystemTime>,
    /// Derived, not read: its start time plus the time its GPU context was active.
    #[serde(default, with = "opt_rfc3339")]
    pub ended_at: Option<SystemTime>,
    /// Its user and name, as seen while it ran (`None`: gpumon never saw it run).
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

impl Accounting {
    /// Accounting that is on and read without error.
    pub fn is_on(&self) -> bool {
        self.enabled == Some(true) && self.error.is_none()
    }
}

/// The one note that says how to get per-process peaks, for the GPUs whose accounting is off
/// (`indices`); `None` when none is.
pub fn how_to_enable(indices: &[u32]) -> Option<String> {
    if indices.is_empty() {
        return None;
    }
    let list: Vec<String> = indices.iter().map(u32::to_string).collect();
    let gpus = if indices.len() == 1 { "GPU" } else { "GPUs" };
    Some(format!(
        "per-process peaks: NVML accounting mode is off on {gpus} {}; as root, \
         `nvidia-smi -i {} -am 1` turns it on (no cost to the GPU, per NVIDIA; it lasts until \
         the driver unloads: keep persistence mode on)",
        list.join(", "),
        list.join(",")
    ))
}

/// The dashboard's short form of [`how_to_enable`], for its header (the full one is in
/// `once` and the docs): short enough for a header at 120 columns.
pub fn short_note(indices: &[u32]) -> Option<String> {
    let list: Vec<String> = indices.iter().map(u32::to_string).collect();
    (!indices.is_empty())
        .then(|| format!("accounting off (nvidia-smi -i {} -am 1)", list.join(",")))
}

/// How many samples the dashboard shows its note on accounting for.
pub const NOTE_SAMPLES: u32 = 30;

/// Says the short note in `notice` once: from the first sample in which some GPU's accounting
/// is off, for [`NOTE_SAMPLES`] samples, never again (`left` counts them down). A notice
/// already there (a recording that stopped) is left alone.
pub fn say_once(notice: &mut Option<String>, left: &mut Option<u32>, sample: &super::Sample) {
    match left {
        None => {
            if let (None, Some(note)) = (&notice, short_note(&off_on(&sample.devices))) {
                *notice = Some(note);
                *left = Some(NOTE_SAMPLES);
            }
        }
        Some(0) => {}
        Some(n) => {
            *n -= 1;
            if *n == 0
                && notice
                    .as_deref()
                    .is_some_and(|t| t.starts_with("accounting off"))
            {
                *notice = None;
            }
        }
    }
}

/// The GPUs of `devices` whose accounting the driver says is off.
pub fn off_on<'a>(devices: impl IntoIterator<Item = &'a super::Device>) -> Vec<u32> {
    devices
        .into_iter()
        .filter(|d| {
            d.accounting
                .as_ref()
                .is_some_and(|a| a.enabled == Some(false))
        })
        .map(|d| d.index)
        .collect()
}

/// Whether some GPU of `devices` has accounting on (the dashboard then shows a PEAK column).
pub fn any_on(devices: &[super::Device]) -> bool {
    devices
        .iter()
        .any(|d| d.accounting.as_ref().is_some_and(Accounting::is_on))
}

/// Keeps the exited processes worth carrying at `now`: ended within [`KEEP_EXITED`], newest
/// first, at most [`MAX_EXITED`]. One with no end time is kept only while there is room.
pub fn prune(exited: &mut Vec<ExitedProcess>, now: SystemTime) {
    exited.retain(|e| {
        e.ended_at
            .is_none_or(|t| now.duration_since(t).map_or(true, |age| age <= KEEP_EXITED))
    });
    exited.sort_by(|a, b| b.ended_at.cmp(&a.ended_at).then(a.pid.cmp(&b.pid)));
    exited.dedup_by(|a, b| a.pid == b.pid && a.started_at == b.started_at);
    exited.truncate(MAX_EXITED);
}

/// What a device from elsewhere may claim about accounting: at most [`MAX_EXITED`] exited
/// processes, no peak above the GPU's memory (`limit`), no end in the future.
pub(crate) fn admit(a: &mut Accounting, limit: u64, now: SystemTime) {
    a.exited.truncate(MAX_EXITED);
    let later = now + Duration::from_secs(60);
    for e in &mut a.exited {
        if e.peak_bytes.is_some_and(|b| b > limit) {
            e.peak_bytes = None;
        }
        if e.ended_at.is_some_and(|t| t > later) || e.started_at.is_some_and(|t| t > later) {
            (e.started_at, e.ended_at) = (None, None);
        }
    }
}

/// Folds one sample of GPU `d` into a job's peaks from the driver's accounting, per pid of
/// `pids` (the job's): running processes' `peak_bytes` and exited ones' alike.
pub fn job_peaks(
    d: &super::Device,
    pids: &std::collections::BTreeSet<u32>,
    into: &mut std::collections::BTreeMap<u32, u64>,
) {
    let running = d.processes.iter().map(|p| (p.pid, p.peak_bytes));
    let exited = d
        .accounting
        .iter()
        .flat_map(|a| a.exited.iter().map(|e| (e.pid, e.peak_bytes)));
    for (pid, peak) in running.chain(exited) {
        if let (true, Some(b)) = (pids.contains(&pid), peak) {
            let slot = into.entry(pid).or_insert(0);
            *slot = (*slot).max(b);
        }
    }
}

/// "the driver's accounting: pid 4121 peaked at 31.0 GiB, pid 4122 at 2.0 GiB", for `run`'s
/// summary; `None` where accounting measured none of the job's processes.
pub fn job_peak_text(peaks: &std::collections::BTreeMap<u32, u64>) -> Option<String> {
    let mut parts = peaks
        .iter()
        .map(|(pid, b)| (pid, crate::units::fmt_bytes(*b)));
    let (pid, b) = parts.next()?;
    let mut text = format!("the driver's accounting: pid {pid} peaked at {b}");
    for (pid, b) in parts {
        text.push_str(&format!(", pid {pid} at {b}"));
    }
    Some(text)
}

mod opt_rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => super::super::rfc3339(t, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
        let raw = Option::<String>::deserialize(d)?;
        raw.map(|text| {
            humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
                .or_else(|_| humantime::parse_rfc3339(&text))
                .map_err(serde::de::Error::custom)
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(pid: u32, ago_s: u64, now: SystemTime) -> ExitedProcess {
        ExitedProcess {
            pid,
            peak_bytes: Some(u64::from(pid) << 20),
            started_at: None,
            ended_at: Some(now - Duration::from_secs(ago_s)),
            user: None,
            name: None,
        }
    }

    #[test]
    fn prune_keeps_the_newest_recent_ones_only() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut list: Vec<_> = (1..=40)
            .map(|pid| exited(pid, u64::from(pid) * 10, now))
            .collect();
        prune(&mut list, now);
        assert_eq!(list.len(), MAX_EXITED);
        assert_eq!(list[0].pid, 1, "newest first");
        let mut old = vec![exited(7, KEEP_EXITED.as_secs() + 1, now)];
        prune(&mut old, now);
        assert!(
            old.is_empty(),
            "an exit older than {KEEP_EXITED:?} is dropped"
        );
    }

    fn sample_at(secs: u64, accounting: Option<Accounting>) -> super::super::Sample {
        super::super::Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
            hostname: None,
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: vec![super::super::Device {
                accounting,
                ..Default::default()
            }],
            error: None,
            host: None,
        }
    }

    #[test]
    fn the_dashboard_says_it_once_for_a_while_and_never_again() {
        let off = sample_at(
            0,
            Some(Accounting {
                enabled: Some(false),
                ..Accounting::default()
            }),
        );
        let (mut notice, mut left) = (None, None);
        say_once(&mut notice, &mut left, &off);
        assert!(
            notice.as_deref().is_some_and(|n| n.contains("-i 0 -am 1")),
            "{notice:?}"
        );
        for _ in 0..NOTE_SAMPLES {
            say_once(&mut notice, &mut left, &off);
        }
        assert_eq!(notice, None, "gone after {NOTE_SAMPLES} samples");
        say_once(&mut notice, &mut left, &off);
        assert_eq!(notice, None, "and not said again");
        // A notice already there is not replaced.
        let (mut other, mut left) = (Some("recording stopped".to_owned()), None);
        say_once(&mut other, &mut left, &off);
        assert_eq!(other.as_deref(), Some("recording stopped"));
    }

    #[test]
    fn the_job_peak_names_each_of_its_processes_peak() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut e = exited(4121, 2, now);
        e.peak_bytes = Some(31 << 30);
        let after = sample_at(
            1_000_001,
            Some(Accounting {
                enabled: Some(true),
                exited: vec![e],
                ..Accounting::default()
            }),
        );
        let mut peaks = std::collections::BTreeMap::new();
        let pids = [4121].into_iter().collect();
        job_peaks(&after.devices[0], &pids, &mut peaks);
        assert_eq!(
            job_peak_text(&peaks).as_deref(),
            Some("the driver's accounting: pid 4121 peaked at 31.0 GiB")
        );
        assert_eq!(job_peak_text(&Default::default()), None);
    }

    #[test]
    fn the_note_names_each_gpu_and_the_command() {
        assert_eq!(how_to_enable(&[]), None);
        let one = how_to_enable(&[0]).unwrap_or_default();
        assert!(
            one.contains("GPU 0;") && one.contains("nvidia-smi -i 0 -am 1"),
            "{one}"
        );
        let two = how_to_enable(&[0, 3]).unwrap_or_default();
        assert!(
            two.contains("GPUs 0, 3") && two.contains("-i 0,3 -am 1"),
            "{two}"
        );
    }
}
