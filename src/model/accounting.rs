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
