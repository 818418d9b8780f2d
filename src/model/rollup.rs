//! Who uses the GPUs: one row per user, or per owner (pod, Slurm job, container, service),
//! with the GPUs and memory they hold now, their mean %SM over a window, the GPU-hours they
//! have held since gpumon started watching, and their **idle holds**: memory held by processes
//! that have done nothing on the GPU for at least `idle_after` (the notebook that keeps 20 GiB
//! over lunch).
//!
//! A process is idle while its own %SM (NVML's per-process utilisation) is 0, or, where the
//! driver gives no per-process figure, while its GPU's utilisation is 0. An unknown figure is
//! not idle. Idle holds are unknown (`None`) until gpumon has watched for `idle_after`: one
//! sample cannot tell a pause from an idle afternoon.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::{Process, Sample};

/// What a row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    User,
    Owner,
}

impl GroupBy {
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::User => "user",
            GroupBy::Owner => "owner",
        }
    }

    /// The other grouping (the dashboard's switch).
    pub fn other(self) -> GroupBy {
        match self {
            GroupBy::User => GroupBy::Owner,
            GroupBy::Owner => GroupBy::User,
        }
    }
}

/// The row a process counts in: its user (`N/A` where it cannot be read, another PID
/// namespace's), or its owner: one row per pod (its containers together), per Slurm job (its
/// steps together), per container or service, and `host` for a process in none of them.
pub fn key(p: &Process, by: GroupBy) -> String {
    let visible = p.user.is_some() || p.start_time.is_some();
    match by {
        GroupBy::User => p.user.clone().unwrap_or_else(|| "N/A".into()),
        GroupBy::Owner => match (&p.owner, &p.container) {
            (Some(o), _) => o.group_key(),
            (None, Some(c)) => c.clone(),
            (None, None) if visible => "host".into(),
            (None, None) => "N/A".into(),
        },
    }
}

/// One user's or owner's use of the GPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub key: String,
    /// The GPUs (NVML indices) it has processes on now.
    pub gpus: Vec<u32>,
    pub processes: u32,
    /// GPU memory its processes hold now (those NVML gives a figure for).
    pub memory_bytes: u64,
    /// Its %SM averaged over the window: per sample, for each GPU it is on, its processes'
    /// %SM summed (at most 100), averaged over those GPUs. `None` with no figure in the window.
    pub mean_sm_percent: Option<f64>,
    /// GPUs held × hours, since gpumon started watching; `None` before a second sample.
    pub gpu_hours: Option<f64>,
    /// Memory held by processes idle for at least `idle_after`; `None` until gpumon has
    /// watched that long.
    pub idle_bytes: Option<u64>,
    /// The GPU memory limits of the cgroups its processes are in, one per cgroup and GPU,
    /// in GPU then cgroup order; empty where none is set or read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<OwnerLimit>,
}

/// A limit that bounds some of a row's processes on one GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OwnerLimit {
    pub gpu: u32,
    #[serde(flatten)]
    pub limit: super::unified::GpuLimit,
}

/// A process, as the tracker tells it from another with the same pid: GPU, pid, start time.
type ProcId = (u32, u32, Option<u64>);

/// The state the rollup needs across samples.
#[derive(Debug, Clone)]
pub struct Usage {
    idle_after: Duration,
    window: Duration,
    started: Option<SystemTime>,
    last: Option<SystemTime>,
    idle_since: HashMap<ProcId, SystemTime>,
    gpu_seconds: HashMap<(GroupBy, String), f64>,
    sm: HashMap<(GroupBy, String), VecDeque<(SystemTime, f64)>>,
}

/// A gap between samples longer than this (a paused dashboard, a suspended laptop) counts
/// only this much towards GPU-hours.
const MAX_STEP: Duration = Duration::from_secs(60);

impl Usage {
    pub fn new(idle_after: Duration, window: Duration) -> Usage {
        Usage {
            idle_after,
            window,
            started: None,
            last: None,
            idle_since: HashMap::new(),
            gpu_seconds: HashMap::new(),
            sm: HashMap::new(),
        }
    }

    pub fn idle_after(&self) -> Duration {
        self.idle_after
    }

    /// Takes in one sample (samples in time order; an older one is ignored).
    pub fn record(&mut self, s: &Sample) {
        let now = s.timestamp;
        if self.last.is_some_and(|l| now < l) {
            return;
        }
        let step = self
            .last
            .and_then(|l| now.duration_since(l).ok())
            .map_or(0.0, |d| d.min(MAX_STEP).as_secs_f64());
        self.started.get_or_insert(now);
        self.last = Some(now);
        let mut seen: HashSet<ProcId> = HashSet::new();
        for d in s.devices.iter().filter(|d| d.fresh()) {
            for p in &d.processes {
                let id = (d.index, p.pid, p.start_time);
                seen.insert(id);
                let sm = p.sm_percent.or(d.utilization.gpu_percent);
                if sm == Some(0) {
                    self.idle_since.entry(id).or_insert(now);
                } else {
                    self.idle_since.remove(&id);
                }
            }
        }
        self.idle_since.retain(|id, _| seen.contains(id));
        for by in [GroupBy::User, GroupBy::Owner] {
            for (key, (gpus, sm)) in per_key(s, by) {
                *self.gpu_seconds.entry((by, key.clone())).or_insert(0.0) += step * gpus as f64;
                if let Some(sm) = sm {
                    self.sm.entry((by, key)).or_default().push_back((now, sm));
                }
            }
        }
        let window = self.window;
        self.sm.retain(|_, q| {
            while q
                .front()
                .is_some_and(|(t, _)| now.duration_since(*t).is_ok_and(|a| a > window))
            {
                q.pop_front();
            }
            !q.is_empty()
        });
    }

    /// Whether `p` on GPU `gpu` has been idle for at least `idle_after` at `now`.
    pub fn idle(&self, gpu: u32, p: &Process, now: SystemTime) -> bool {
        self.idle_since
            .get(&(gpu, p.pid, p.start_time))
            .and_then(|since| now.duration_since(*since).ok())
            .is_some_and(|d| d >= self.idle_after)
    }

    /// Whether gpumon has watched long enough to call a hold idle.
    fn knows_idle(&self, now: SystemTime) -> bool {
        self.started
            .and_then(|s| now.duration_since(s).ok())
            .is_some_and(|d| d >= self.idle_after)
    }

    /// The rows of `s` (the last sample recorded), largest memory first.
    pub fn rollup(&self, s: &Sample, by: GroupBy) -> Vec<Row> {
        let now = s.timestamp;
        let knows_idle = self.knows_idle(now);
        let two_samples = self.started.is_some_and(|st| st < now);
        let mut rows: HashMap<String, Row> = HashMap::new();
        for d in &s.devices {
            for p in &d.processes {
                let k = key(p, by);
                let row = rows.entry(k.clone()).or_insert_with(|| Row {
                    key: k.clone(),
                    gpus: Vec::new(),
                    processes: 0,
                    memory_bytes: 0,
                    mean_sm_percent: None,
                    gpu_hours: None,
                    idle_bytes: knows_idle.then_some(0),
                    limits: Vec::new(),
                });
                if let Some(l) = &p.gpu_limit {
                    if !row
                        .limits
                        .iter()
                        .any(|o| o.gpu == d.index && o.limit.cgroup == l.cgroup)
                    {
                        row.limits.push(OwnerLimit {
                            gpu: d.index,
                            limit: l.as_ref().clone(),
                        });
                    }
                }
                if !row.gpus.contains(&d.index) {
                    row.gpus.push(d.index);
                }
                row.processes += 1;
                let bytes = p.gpu_memory_bytes.unwrap_or(0);
                row.memory_bytes = row.memory_bytes.saturating_add(bytes);
                if let Some(idle) = row.idle_bytes.as_mut() {
                    if self.idle(d.index, p, now) {
                        *idle = idle.saturating_add(bytes);
                    }
                }
            }
        }
        let mut rows: Vec<Row> = rows
            .into_values()
            .map(|mut r| {
                r.gpus.sort_unstable();
                r.limits
                    .sort_by(|a, b| (a.gpu, &a.limit.cgroup).cmp(&(b.gpu, &b.limit.cgroup)));
                let k = (by, r.key.clone());
                r.mean_sm_percent = self
                    .sm
                    .get(&k)
                    .filter(|q| !q.is_empty())
                    .map(|q| q.iter().map(|(_, v)| v).sum::<f64>() / q.len() as f64);
                r.gpu_hours =
                    two_samples.then(|| self.gpu_seconds.get(&k).copied().unwrap_or(0.0) / 3600.0);
                r
            })
            .collect();
        rows.sort_by(|a, b| {
            b.memory_bytes
                .cmp(&a.memory_bytes)
                .then_with(|| a.key.cmp(&b.key))
        });
        rows
    }

    /// Memory held by idle processes, GPU by GPU (`None` until gpumon has watched for
    /// `idle_after`).
    pub fn idle_held(&self, s: &Sample) -> Vec<(u32, Option<u64>)> {
        let knows = self.knows_idle(s.timestamp);
        s.devices
            .iter()
            .map(|d| {
                let held = knows.then(|| {
                    d.processes
                        .iter()
                        .filter(|p| self.idle(d.index, p, s.timestamp))
                        .filter_map(|p| p.gpu_memory_bytes)
                        .sum()
                });
                (d.index, held)
            })
            .collect()
    }
}

/// Per key in one sample: the number of GPUs it is on, and its %SM (per GPU its processes'
/// %SM summed, at most 100, averaged over its GPUs; `None` where no process has a figure).
fn per_key(s: &Sample, by: GroupBy) -> HashMap<String, (usize, Option<f64>)> {
    let mut per_gpu: HashMap<(String, u32), Option<u32>> = HashMap::new();
    for d in s.devices.iter().filter(|d| d.fresh()) {
        for p in &d.processes {
            let e = per_gpu.entry((key(p, by), d.index)).or_insert(None);
            if let Some(sm) = p.sm_percent {
                *e = Some(e.unwrap_or(0).saturating_add(sm).min(100));
            }
        }
    }
    let mut out: HashMap<String, (usize, Vec<u32>)> = HashMap::new();
    for ((k, _), sm) in per_gpu {
        let e = out.entry(k).or_default();
        e.0 += 1;
        if let Some(sm) = sm {
            e.1.push(sm);
        }
    }
    out.into_iter()
        .map(|(k, (gpus, sms))| {
            let mean = (!sms.is_empty())
                .then(|| sms.iter().map(|v| f64::from(*v)).sum::<f64>() / sms.len() as f64);
            (k, (gpus, mean))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Device, ProcessKind, Utilization};

    const GIB: u64 = 1 << 30;

    fn proc(pid: u32, user: &str, gib: u64, sm: u32) -> Process {
        let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(gib * GIB));
        p.user = Some(user.into());
        p.start_time = Some(1_000);
        p.sm_percent = Some(sm);
        p
    }

    fn sample(t: u64, devices: Vec<Device>) -> Sample {
        Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(10_000 + t),
            hostname: None,
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices,
            error: None,
            host: None,
        }
    }

    fn gpu(index: u32, util: u32, processes: Vec<Process>) -> Device {
        Device {
            index,
            utilization: Utilization {
                gpu_percent: Some(util),
                memory_percent: Some(0),
            },
            processes,
            ..Device::default()
        }
    }

    /// Bob's notebook holds 20 GiB at 0% SM for 15 minutes; alice trains on two GPUs.
    fn lab(t: u64) -> Sample {
        sample(
            t,
            vec![
                gpu(
                    0,
                    90,
                    vec![proc(10, "alice", 40, 90), proc(30, "bob", 20, 0)],
                ),
                gpu(1, 80, vec![proc(11, "alice", 40, 70)]),
            ],
        )
    }

    #[test]
    fn a_user_holding_memory_at_zero_sm_for_idle_after_has_an_idle_hold() {
        let mut u = Usage::new(Duration::from_secs(600), Duration::from_secs(600));
        u.record(&lab(0));
        let rows = u.rollup(&lab(0), GroupBy::User);
        assert_eq!(rows[0].idle_bytes, None, "not watched for 10 minutes yet");
        assert_eq!(rows[0].gpu_hours, None, "one sample");
        for t in (10..=900).step_by(10) {
            u.record(&lab(t));
        }
        let s = lab(900);
        let rows = u.rollup(&s, GroupBy::User);
        let alice = &rows[0];
        assert_eq!(alice.key, "alice");
        assert_eq!(alice.gpus, vec![0, 1]);
        assert_eq!(alice.memory_bytes, 80 * GIB);
        assert_eq!(alice.idle_bytes, Some(0));
        assert_eq!(alice.mean_sm_percent, Some(80.0));
        // Two GPUs for 900 s.
        assert!((alice.gpu_hours.expect("hours") - 0.5).abs() < 1e-9);
        let bob = &rows[1];
        assert_eq!(bob.idle_bytes, Some(20 * GIB));
        assert_eq!(bob.mean_sm_percent, Some(0.0));
        assert_eq!(u.idle_held(&s), vec![(0, Some(20 * GIB)), (1, Some(0))]);
    }

    #[test]
    fn a_moment_of_work_resets_the_idle_clock_and_a_new_process_starts_its_own() {
        let mut u = Usage::new(Duration::from_secs(60), Duration::from_secs(600));
        let busy_at = |t: u64, sm: u32| sample(t, vec![gpu(0, 0, vec![proc(30, "bob", 20, sm)])]);
        u.record(&busy_at(0, 0));
        u.record(&busy_at(50, 5));
        u.record(&busy_at(100, 0));
        let s = busy_at(150, 0);
        u.record(&s);
        assert_eq!(
            u.rollup(&s, GroupBy::User)[0].idle_bytes,
            Some(0),
            "idle 50 s"
        );
        let s = busy_at(160, 0);
        u.record(&s);
        assert_eq!(u.rollup(&s, GroupBy::User)[0].idle_bytes, Some(20 * GIB));
        // The same pid, started again: a new process, not yet idle for long.
        let mut again = busy_at(170, 0);
        again.devices[0].processes[0].start_time = Some(2_000);
        u.record(&again);
        assert_eq!(u.rollup(&again, GroupBy::User)[0].idle_bytes, Some(0));
    }

    #[test]
    fn without_per_process_figures_the_gpus_utilisation_decides_and_unknown_is_not_idle() {
        let mut u = Usage::new(Duration::from_secs(60), Duration::from_secs(600));
        let at = |t: u64, util: Option<u32>| {
            let mut p = proc(30, "bob", 20, 0);
            p.sm_percent = None;
            let mut d = gpu(0, 0, vec![p]);
            d.utilization.gpu_percent = util;
            sample(t, vec![d])
        };
        for t in [0, 30, 61] {
            u.record(&at(t, Some(0)));
        }
        assert_eq!(
            u.rollup(&at(61, Some(0)), GroupBy::User)[0].idle_bytes,
            Some(20 * GIB)
        );
        u.record(&at(62, None));
        assert_eq!(
            u.rollup(&at(62, None), GroupBy::User)[0].idle_bytes,
            Some(0)
        );
        assert_eq!(
            u.rollup(&at(62, None), GroupBy::User)[0].mean_sm_percent,
            None
        );
    }

    #[test]
    fn owners_group_a_jobs_processes_and_unknown_users_are_na() {
        let mut u = Usage::new(Duration::from_secs(60), Duration::from_secs(600));
        let step = |s: &str| {
            let mut o =
                crate::model::owner::Owner::new(crate::model::owner::OwnerKind::Slurm, "81234");
            o.job = Some(format!("81234.{s}"));
            Some(std::sync::Arc::new(o))
        };
        let mut a = proc(10, "alice", 10, 50);
        a.owner = step("0");
        let mut b = proc(11, "alice", 10, 50);
        b.owner = step("1");
        let hidden = Process::from_nvml(99, ProcessKind::Compute, Some(GIB));
        let host = proc(12, "carol", 1, 0);
        let s = sample(0, vec![gpu(0, 50, vec![a, b, hidden, host])]);
        u.record(&s);
        let rows = u.rollup(&s, GroupBy::Owner);
        let keys: Vec<(&str, u32)> = rows.iter().map(|r| (r.key.as_str(), r.processes)).collect();
        assert_eq!(keys, vec![("slurm 81234", 2), ("N/A", 1), ("host", 1)]);
        let users = u.rollup(&s, GroupBy::User);
        assert_eq!(users[1].key, "N/A");
    }
}
