//! Where readings come from: NVML through nvml-wrapper, or simulated GPUs from a scenario file.
//!
//! Opening a source yields one [`DeviceReader`] per GPU. The sampler runs each on its own
//! thread, so a driver call that hangs on one GPU never holds up the others; everything
//! downstream is source-agnostic.

pub mod accounting;
pub mod nvml;
pub mod nvml_limits;
pub mod scenario;
pub mod simulated;
pub mod tegra;

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::model::unified::GpuLimit;
use crate::model::Device;

/// The GPU memory limits of cgroups on one device as the driver answered them: each cgroup's
/// path (as `/proc/PID/cgroup` names it) with its limit, `None` where it has none (or the
/// driver would not say).
pub type CgroupLimits = Vec<(Arc<str>, Option<Arc<GpuLimit>>)>;

pub use super::unified::HostFacts;

/// Reads one device. It runs on a thread of its own and may block for as long as the driver
/// does; failures become part of the [`Device`], never a panic.
pub trait DeviceReader: Send + 'static {
    fn read(&mut self) -> Device;

    /// Says what the view needs beyond the device's own figures, before the first read: a
    /// driver call not made is time saved on every tick (on a real GPU each is an ioctl).
    fn want(&mut self, _wants: Wants) {}

    /// A memory-only read (one driver call: `nvmlDeviceGetMemoryInfo_v2`) for the peak-hold
    /// between readings ([`crate::collect::readers`]); `None` where it failed or the source
    /// has none, which leaves the peak unmeasured rather than low.
    fn read_memory(&mut self) -> Option<MemoryNow> {
        None
    }

    /// The GPU memory limits of these cgroups on this device (`nvmlDeviceGetMemoryLimits_v1`,
    /// one call a cgroup), for the processes' owners. Runs on the reader's thread like
    /// [`DeviceReader::read`], so a hung device holds up only itself. Bounded by the reader:
    /// each cgroup asked again at most every [`LIMITS_REFRESH`], at most [`MAX_CGROUPS`] of
    /// them. Empty where the source has no such call.
    fn read_limits(&mut self, _cgroups: &[Arc<str>]) -> CgroupLimits {
        Vec::new()
    }
}

/// How often the driver is asked again for one cgroup's limits: a limit is set when a
/// container starts, and its use is shown beside the processes' own figures.
pub const LIMITS_REFRESH: Duration = Duration::from_secs(5);
/// The most cgroups whose limits are asked of one device: the containers on a GPU (MPS
/// serves at most 48 or 60 clients), with room. Past it, a cgroup's limit is not asked
/// (`None`, never 0).
pub const MAX_CGROUPS: usize = 128;

/// A cache of cgroups' limits on one device, asked again after [`LIMITS_REFRESH`]; the
/// cgroups not asked for are forgotten. What the readers of [`DeviceReader::read_limits`]
/// keep.
#[derive(Default)]
pub struct LimitCache {
    known: std::collections::HashMap<Arc<str>, (Instant, Option<Arc<GpuLimit>>)>,
}

impl LimitCache {
    /// Each of the first [`MAX_CGROUPS`] of `cgroups` with its limit, `ask` called for those
    /// never asked or asked [`LIMITS_REFRESH`] ago.
    pub fn get(
        &mut self,
        cgroups: &[Arc<str>],
        now: Instant,
        mut ask: impl FnMut(&str) -> Option<GpuLimit>,
    ) -> CgroupLimits {
        let cgroups = &cgroups[..cgroups.len().min(MAX_CGROUPS)];
        self.known.retain(|c, _| cgroups.contains(c));
        cgroups
            .iter()
            .map(|c| {
                let due = self
                    .known
                    .get(c)
                    .is_none_or(|(at, _)| now.saturating_duration_since(*at) >= LIMITS_REFRESH);
                if due {
                    let limit = ask(c).map(Arc::new);
                    self.known.insert(Arc::clone(c), (now, limit));
                }
                let limit = self.known.get(c).and_then(|(_, l)| l.clone());
                (Arc::clone(c), limit)
            })
            .collect()
    }
}

/// What a memory-only read gives: used (NVML v2, driver reservation excluded) and total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryNow {
    pub used: u64,
    pub total: u64,
}

/// What a view needs read from each device beyond its own figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wants {
    /// The process lists (for rows, or only for a count and the unattributed memory).
    pub processes: bool,
    /// Per-process SM and memory-bandwidth utilisation (a count call and a fill call per
    /// device).
    pub process_utilization: bool,
}

/// A health event from the driver, as the event watcher reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum HealthEvent {
    /// An Xid critical error on the device at `index` (its position in the source).
    Xid {
        index: u32,
        xid: u32,
        gpu_instance_id: Option<u32>,
        at: std::time::SystemTime,
    },
    /// Xid errors are watched on this device.
    Watched { index: u32 },
    /// Xid errors cannot be watched on this device (`None`: on any device), and why.
    Unwatched { index: Option<u32>, why: String },
}

/// Watches for health events (Xid errors) on a thread of its own: the driver's wait can block
/// as long as the driver does, so it never runs on a reader's or the sampler's thread.
pub trait EventWatcher: Send + 'static {
    /// Registers for events and reports them on `tx` until `stop` is set (checked at least
    /// once a second) or `tx` is closed.
    fn run(
        self: Box<Self>,
        tx: mpsc::Sender<HealthEvent>,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    );
}

/// What opening a source found: facts about the system and one reader per device.
pub struct Opened {
    /// "nvml", "simulated" or "tegra".
    pub kind: &'static str,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    /// One per device, in index order.
    pub readers: Vec<Box<dyn DeviceReader>>,
    /// Why no device could be listed (the device count failed).
    pub error: Option<String>,
    /// Whether the pids are real host pids worth looking up in /proc (false for simulated
    /// GPUs, whose processes carry their own host facts).
    pub host_lookup: bool,
    /// Watches Xid errors, for views that sample over time ([`crate::collect::sampler::Sampler::watch_events`]).
    pub events: Option<Box<dyn EventWatcher>>,
    /// Whether the readers answer [`DeviceReader::read_limits`]: the sampler hands them the
    /// cgroups of their processes only then.
    pub limits: bool,
    /// A simulated machine's own memory, in place of this machine's files.
    pub host: Option<HostFacts>,
}

/// Why no source could be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "no NVIDIA driver found: could not load {lib} ({reason}).\n\
         Is the NVIDIA driver installed? Point gpumon at the library with --nvml-lib PATH or \
         GPUMON_NVML_LIB, or try `gpumon --demo` to see simulated GPUs."
    )]
    NoDriver { lib: String, reason: String },
    #[error("NVML failed to initialise: {0}")]
    Init(String),
    #[error("{path}: {reason}")]
    Scenario { path: String, reason: String },
    #[error(
        "the NVIDIA driver did not answer within {} (NVML initialisation is still blocked).\n\
         The driver may be wedged (see `dmesg` for Xid errors), or slow to start without \
         nvidia-persistenced; allow it longer with --timeout.",
        humantime::format_duration(*.0)
    )]
    Timeout(Duration),
}

/// A source being opened on a thread of its own: NVML's initialisation can block for
/// seconds (no persistence mode) or for good (a wedged driver), and no view may wait on it
/// blindly.
pub struct Opening {
    rx: mpsc::Receiver<Result<Opened, OpenError>>,
    started: Instant,
}

impl Opening {
    pub fn start(open: impl FnOnce() -> Result<Opened, OpenError> + Send + 'static) -> Self {
        let (tx, rx) = mpsc::sync_channel(1);
        let spawned = std::thread::Builder::new()
            .name("gpumon-open".into())
            .spawn(move || {
                let _ = tx.send(open());
            });
        if let Err(e) = spawned {
            // No thread to spare: say so through the same channel.
            let (tx, rx2) = mpsc::sync_channel(1);
            let _ = tx.send(Err(OpenError::Init(format!(
                "cannot start a thread to open NVML: {e}"
            ))));
            return Opening {
                rx: rx2,
                started: Instant::now(),
            };
        }
        Opening {
            rx,
            started: Instant::now(),
        }
    }

    /// Waits at most `timeout` (counted from the start) for the source.
    pub fn wait(self, timeout: Duration) -> Result<Opened, OpenError> {
        let left = timeout.saturating_sub(self.started.elapsed());
        match self.rx.recv_timeout(left) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(OpenError::Timeout(timeout)),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(OpenError::Init("the thread opening NVML panicked".into()))
            }
        }
    }

    /// Waits at most `d` more: `Ok(None)` when the source is still opening.
    pub fn wait_a_little(&self, d: Duration) -> Result<Option<Opened>, OpenError> {
        match self.rx.recv_timeout(d) {
            Ok(result) => result.map(Some),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(OpenError::Init("the thread opening NVML panicked".into()))
            }
        }
    }

    /// The source, if it is open by now (`None`: still waiting).
    pub fn poll(&self) -> Option<Result<Opened, OpenError>> {
        match self.rx.try_recv() {
            Ok(result) => Some(result),
            Err(mpsc::TryRecvError::Empty) => None,
            Err(mpsc::TryRecvError::Disconnected) => Some(Err(OpenError::Init(
                "the thread opening NVML panicked".into(),
            ))),
        }
    }

    /// How long the source has been opening.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// Per-process utilisation for one device, as `nvmlDeviceGetProcessUtilization` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtilSample {
    pub pid: u32,
    /// CPU timestamp in µs; of several samples for a pid, the latest wins.
    pub timestamp: u64,
    pub sm: u32,
    pub mem: u32,
}

/// Applies utilisation samples to a device's processes. NVML answers NOT_FOUND when it has
/// no sample in the window asked for, which says nothing until the driver has been seen to
/// sample at all (`seen`: any sample ever on this device). Once it has, a process without a
/// sample in the window was idle (0%), as `nvidia-smi pmon` shows "-" for it; before that
/// every process stays unknown.
pub fn apply_utilization(
    processes: &mut [crate::model::Process],
    samples: &[UtilSample],
    seen: &mut bool,
) {
    *seen |= !samples.is_empty();
    let idle = (*seen).then_some(0);
    for p in processes.iter_mut() {
        let latest = samples
            .iter()
            .filter(|s| s.pid == p.pid)
            .max_by_key(|s| s.timestamp);
        match latest {
            Some(s) => {
                p.sm_percent = Some(s.sm.min(100));
                p.mem_bw_percent = Some(s.mem.min(100));
            }
            None => {
                p.sm_percent = idle;
                p.mem_bw_percent = idle;
            }
        }
    }
}

/// Each pid's mean over several samples (NVML buffers one every ~1/6 s), stamped with its
/// latest sample's time.
pub fn mean_by_pid(samples: &[UtilSample]) -> Vec<UtilSample> {
    let mut out: Vec<(UtilSample, u32)> = Vec::new();
    for s in samples {
        match out.iter_mut().find(|(o, _)| o.pid == s.pid) {
            Some((o, n)) => {
                o.sm += s.sm.min(100);
                o.mem += s.mem.min(100);
                o.timestamp = o.timestamp.max(s.timestamp);
                *n += 1;
            }
            None => out.push((
                UtilSample {
                    sm: s.sm.min(100),
                    mem: s.mem.min(100),
                    ..*s
                },
                1,
            )),
        }
    }
    out.into_iter()
        .map(|(s, n)| UtilSample {
            sm: (s.sm + n / 2) / n,
            mem: (s.mem + n / 2) / n,
            ..s
        })
        .collect()
}

/// A short, user-facing reason for an NVML error, for every reader of the driver.
pub fn describe(e: &nvml_wrapper::error::NvmlError) -> String {
    match e {
        nvml_wrapper::error::NvmlError::NotSupported => "not supported".into(),
        nvml_wrapper::error::NvmlError::NoPermission => "no permission".into(),
        nvml_wrapper::error::NvmlError::GpuLost => "GPU is lost".into(),
        nvml_wrapper::error::NvmlError::FailedToLoadSymbol(_) => {
            "not available in this driver".into()
        }
        nvml_wrapper::error::NvmlError::Timeout => "timed out".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilisation_is_unknown_until_the_driver_samples_then_idle_is_zero() {
        use crate::model::{Process, ProcessKind};
        let mut procs = vec![
            Process::from_nvml(10, ProcessKind::Compute, Some(1)),
            Process::from_nvml(11, ProcessKind::Compute, Some(1)),
        ];
        let mut seen = false;
        apply_utilization(&mut procs, &[], &mut seen);
        assert_eq!(
            procs[0].sm_percent, None,
            "NOT_FOUND before any sample: unknown"
        );
        let s = |pid, timestamp, sm| UtilSample {
            pid,
            timestamp,
            sm,
            mem: 7,
        };
        apply_utilization(
            &mut procs,
            &[s(10, 1, 20), s(10, 5, 90), s(10, 3, 40)],
            &mut seen,
        );
        assert_eq!(procs[0].sm_percent, Some(90), "the latest sample wins");
        assert_eq!(procs[0].mem_bw_percent, Some(7));
        assert_eq!(
            procs[1].sm_percent,
            Some(0),
            "no sample while sampling: idle"
        );
        apply_utilization(&mut procs, &[s(11, 9, 250)], &mut seen);
        assert_eq!(procs[1].sm_percent, Some(100), "clamped");
        assert_eq!(procs[0].sm_percent, Some(0));
    }

    #[test]
    fn a_window_of_samples_becomes_each_pids_mean() {
        let s = |pid, timestamp, sm, mem| UtilSample {
            pid,
            timestamp,
            sm,
            mem,
        };
        let got = mean_by_pid(&[
            s(1, 10, 90, 40),
            s(2, 11, 0, 0),
            s(1, 20, 60, 200),
            s(1, 15, 31, 0),
        ]);
        // pid 1: (90 + 60 + 31) / 3 = 60.3, memory (40 + 100 clamped + 0) / 3 = 46.7.
        assert_eq!(got, vec![s(1, 20, 60, 47), s(2, 11, 0, 0)]);
        assert!(mean_by_pid(&[]).is_empty());
    }

    fn empty() -> Result<Opened, OpenError> {
        Ok(Opened {
            kind: "simulated",
            driver_version: None,
            cuda_version: None,
            readers: Vec::new(),
            error: None,
            host_lookup: false,
            events: None,
            limits: false,
            host: None,
        })
    }

    /// A cgroup is asked once, then again only after the refresh; cgroups no longer asked
    /// for are forgotten; past the cap none is asked.
    #[test]
    fn limits_are_asked_once_per_cgroup_and_refresh_and_bounded() {
        let mut cache = LimitCache::default();
        let asked = std::cell::RefCell::new(Vec::new());
        let ask = |c: &str| {
            asked.borrow_mut().push(c.to_owned());
            (c == "/a").then(|| GpuLimit {
                cgroup: c.to_owned(),
                source: crate::model::unified::LimitSource::Nvml,
                hard_bytes: Some(8),
                soft_bytes: None,
                used_bytes: Some(1),
            })
        };
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("/a"), Arc::from("/b"));
        let t0 = Instant::now();
        let got = cache.get(&[Arc::clone(&a), Arc::clone(&b)], t0, ask);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1.as_ref().and_then(|l| l.hard_bytes), Some(8));
        assert_eq!(got[1].1, None);
        cache.get(
            &[Arc::clone(&a), Arc::clone(&b)],
            t0 + Duration::from_secs(1),
            ask,
        );
        assert_eq!(asked.borrow().len(), 2, "not again within the refresh");
        cache.get(&[Arc::clone(&a)], t0 + LIMITS_REFRESH, ask);
        assert_eq!(*asked.borrow(), ["/a", "/b", "/a"]);
        assert_eq!(cache.known.len(), 1, "/b forgotten");
        let many: Vec<Arc<str>> = (0..MAX_CGROUPS + 10)
            .map(|i| Arc::from(format!("/c{i}")))
            .collect();
        let got = cache.get(&many, t0, ask);
        assert_eq!(got.len(), MAX_CGROUPS);
        assert_eq!(asked.borrow().len(), 3 + MAX_CGROUPS);
    }

    #[test]
    fn an_opening_that_blocks_times_out_and_a_quick_one_does_not() {
        let slow = Opening::start(|| {
            std::thread::sleep(Duration::from_secs(5));
            empty()
        });
        assert!(slow.poll().is_none());
        let t = Instant::now();
        assert!(matches!(
            slow.wait(Duration::from_millis(50)),
            Err(OpenError::Timeout(_))
        ));
        assert!(
            t.elapsed() < Duration::from_secs(4),
            "gave up at the deadline"
        );
        let quick = Opening::start(empty);
        assert!(quick.wait(Duration::from_secs(5)).is_ok());
    }
}
