//! The sampler: one reader thread per device, assembled on time into immutable [`Sample`]s.
//!
//! NVML calls can block for seconds or for good on a GPU that is falling off the bus, so the
//! devices are read by blocking workers ([`crate::collect::readers`]) with at most one read outstanding
//! per device: a hung call never piles up more calls, and never holds up the other GPUs.
//! [`Sampler::tick`] asks for a reading of every device that has none outstanding, waits for
//! those answers no longer than its budget, and assembles the sample from what arrived. A device whose read has been outstanding past the deadline is reported as
//! **stalled**, with its last good readings marked by their age; it resumes by itself once the
//! call returns. [`spawn`] runs ticks on tokio at an adjustable interval.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{mpsc as tmpsc, watch};

use crate::collect::host::HostLookup;
use crate::collect::probe;
use crate::collect::readers::{Readers, Reading, Waiter};
use crate::collect::source::{HealthEvent, Opened, Wants};
use crate::collect::system::SystemStats;
use crate::model::{Device, Sample};

/// The fastest interval gpumon accepts.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The shortest default deadline: a healthy driver answers well within it.
pub const MIN_DEADLINE: Duration = Duration::from_secs(2);

/// The deadline a device has to answer before it is reported as stalled: `timeout` when
/// given, else the larger of 2 s and twice the interval.
pub fn deadline(interval: Duration, timeout: Option<Duration>) -> Duration {
    timeout.unwrap_or_else(|| MIN_DEADLINE.max(interval.saturating_mul(2)))
}

/// The pids whose host facts a view shows and needs fresh every second (sorted); the others
/// are refreshed every [`crate::collect::host::BACKGROUND_REFRESH`]. `None`: every pid, every second
/// (the dashboard sorted by CPU or host memory, where off-screen rows decide the order).
pub type Focus = Arc<Option<Vec<u32>>>;

/// Where one tick's time went.
#[derive(Debug, Clone, Copy, Default)]
pub struct TickTimings {
    /// Waiting for the device readers.
    pub source: Duration,
    pub host: Duration,
    pub probe: Duration,
    pub assembly: Duration,
}

/// What a view wants read.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Devices by index or UUID; empty means all.
    pub gpus: Vec<String>,
    /// The process lists.
    pub processes: bool,
    /// Host facts (user, command, CPU, container…) and probe reports for those processes: a
    /// view that prints none of them (`log` per GPU) reads no `/proc` at all.
    pub host: bool,
    /// Per-process SM and memory-bandwidth utilisation, for a view that shows them.
    pub process_utilization: bool,
    /// The host's CPU, memory, swap, load and uptime ([`Sample::host`]).
    pub system: bool,
}

/// What the sampler knows of one device between ticks.
struct DeviceState {
    index: u32,
    /// When the reading in progress was asked for.
    outstanding: Option<Instant>,
    /// The last reading and when it arrived.
    last: Option<(Device, Instant)>,
    /// Whether `last` arrived since the previous sample: a reading shown again (late,
    /// stalled) carries no peak, since its window was reported already.
    fresh: bool,
    /// The cgroups of its processes, as last handed to its reader.
    cgroups: Arc<[Arc<str>]>,
    /// Their GPU memory limits as its reader last read them from the driver.
    limits: crate::collect::source::CgroupLimits,
}

pub struct Sampler {
    kind: &'static str,
    driver_version: Option<String>,
    cuda_version: Option<String>,
    hostname: Option<String>,
    error: Option<String>,
    readers: Readers,
    devices: Vec<DeviceState>,
    /// Wakes [`Sampler::tick_async`] when the readings are in.
    notify: Arc<tokio::sync::Notify>,
    timeout: Option<Duration>,
    /// The sampling interval, when sampling periodically.
    interval: Option<Duration>,
    /// How long a tick waits for the readings it asked for.
    budget: Duration,
    host: Option<HostLookup>,
    /// Who holds memory the process list does not explain (with the host lookup).
    holders: Option<super::holders::Watch>,
    system: Option<SystemStats>,
    filter: Filter,
    /// The pids a view shows (the dashboard's visible rows): their host facts stay fresh,
    /// the others are refreshed less often.
    focus: Option<watch::Receiver<Focus>>,
    /// Where in-process probes publish (`gpumon run`), when it is safe to read.
    probe_dir: Option<PathBuf>,
    probe_cache: probe::ReportCache,
    /// Who the processes that accounting lists as exited were.
    exited: super::exited::ExitedNames,
    /// Why probe reports are not read, to show once.
    pub probe_warning: Option<String>,
    /// Names pods from the kubelet, on a Kubernetes node.
    kubelet: Option<super::kubelet::Watcher>,
    pub last: TickTimings,
    /// The source's event watcher, until [`Sampler::watch_events`] starts it.
    events: Option<Box<dyn crate::collect::source::EventWatcher>>,
    /// Its reports, once started, and the flag that stops it when the sampler goes.
    watching: Option<(std::sync::mpsc::Receiver<HealthEvent>, StopOnDrop)>,
    /// Xid counts and watch state, per device index.
    xids: Vec<crate::model::health::Health>,
    /// Shared memory and the container's GPU memory limit ([`super::unified`]).
    unified: super::unified::Watch,
    /// Whether the readers read the limits of their processes' cgroups
    /// ([`crate::collect::source::DeviceReader::read_limits`]).
    limits: bool,
}

/// Sets its flag when dropped: the event watcher's thread then ends within a wait.
struct StopOnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Sampler {
    /// Starts one reader thread per device of `source`. Ticks wait for readings up to the
    /// deadline ([`deadline`] of a 1 s interval) until [`Sampler::set_interval`] or
    /// [`Sampler::with_timeout`] says otherwise.
    pub fn new(mut source: Opened, filter: Filter) -> Self {
        let host = (source.host_lookup && filter.processes && filter.host).then(HostLookup::new);
        let mut probe_dir = None;
        let mut probe_warning = None;
        if host.is_some() {
            let dir = probe::default_dir();
            match probe::check_dir(&dir) {
                Ok(()) => probe_dir = Some(dir),
                // Not created yet: no `gpumon run` has published; look again each tick.
                Err(probe::DirError::Create { .. }) => probe_dir = Some(dir),
                Err(e) => probe_warning = Some(format!("ignoring probe reports: {e}")),
            }
        }
        let count = source.readers.len();
        let devices = (0..source.readers.len() as u32)
            .map(|index| DeviceState {
                index,
                outstanding: None,
                last: None,
                fresh: false,
                cgroups: Arc::from(Vec::new()),
                limits: Vec::new(),
            })
            .collect();
        let wants = Wants {
            processes: filter.processes,
            process_utilization: filter.processes && filter.process_utilization,
        };
        for reader in &mut source.readers {
            reader.want(wants);
        }
        let readers = Readers::start(source.readers);
        Sampler {
            kind: source.kind,
            driver_version: source.driver_version,
            cuda_version: source.cuda_version,
            hostname: crate::collect::host::hostname(),
            error: source.error,
            readers,
            devices,
            notify: Arc::new(tokio::sync::Notify::new()),
            timeout: None,
            interval: None,
            budget: deadline(Duration::from_secs(1), None),
            holders: host.is_some().then(super::holders::Watch::default),
            host,
            system: filter.system.then(SystemStats::new),
            filter,
            focus: None,
            probe_dir,
            probe_cache: probe::ReportCache::default(),
            exited: Default::default(),
            probe_warning,
            kubelet: None,
            last: TickTimings::default(),
            xids: vec![crate::model::health::Health::default(); count],
            unified: super::unified::Watch::for_source(source.kind, source.host),
            limits: source.limits,
            events: source.events,
            watching: None,
        }
    }

    /// Starts watching Xid errors on a thread of its own, for views that sample over time
    /// (an Xid that happened before the watch began is not reported: NVML records events for
    /// registered sets only). Idempotent; a source without events does nothing.
    pub fn watch_events(&mut self) {
        let Some(watcher) = self.events.take() else {
            return;
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let started = std::thread::Builder::new()
            .name("gpumon-events".into())
            .spawn(move || watcher.run(tx, flag));
        match started {
            Ok(_) => self.watching = Some((rx, StopOnDrop(stop))),
            Err(e) => {
                for h in &mut self.xids {
                    h.events_error = Some(format!("cannot start the event thread: {e}"));
                }
            }
        }
    }

    /// Takes the watcher's reports into the per-device Xid state.
    fn take_events(&mut self) {
        let Some((rx, _)) = &self.watching else {
            return;
        };
        while let Ok(event) = rx.try_recv() {
            match event {
                HealthEvent::Xid {
                    index,
                    xid,
                    gpu_instance_id,
                    at,
                } => {
                    if let Some(h) = self.xids.get_mut(index as usize) {
                        h.add_xid(xid, at, gpu_instance_id);
                    }
                }
                HealthEvent::Watched { index } => {
                    if let Some(h) = self.xids.get_mut(index as usize) {
                        h.events_error = None;
                        h.xids_watched = true;
                    }
                }
                HealthEvent::Unwatched { index, why } => {
                    for (i, h) in self.xids.iter_mut().enumerate() {
                        if index.is_none_or(|x| x as usize == i) {
                            h.events_error = Some(why.clone());
                            h.xids_watched = false;
                        }
                    }
                }
            }
        }
    }

    /// Asks the kubelet at `socket` for pod names, when this sampler looks processes up on the
    /// host (the driver's GPUs, not simulated ones) and the socket exists.
    pub fn with_kubelet(mut self, socket: &std::path::Path) -> Self {
        if self.host.is_some() && self.kind == "nvml" {
            self.kubelet = super::kubelet::Watcher::start(socket.to_path_buf());
        }
        self
    }

    /// Waits up to `limit` for the kubelet's first answer, when there is a kubelet to ask (a
    /// view that samples once).
    pub fn wait_for_kubelet(&self, limit: Duration) {
        if let Some(k) = &self.kubelet {
            k.wait_first(limit);
        }
    }

    /// Sets the deadline (`None`: the default of [`deadline`]).
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self.budget = self.deadline();
        self
    }

    /// The interval the default deadline derives from, for single ticks (`once`), which wait
    /// for their readings up to the deadline.
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = Some(interval);
        self.budget = self.deadline();
        self
    }

    /// Sampling every `interval`: a tick waits for its readings no longer than one interval
    /// (nor the deadline), so the healthy devices keep their cadence when one hangs.
    pub fn set_interval(&mut self, interval: Duration) {
        self.budget = self.deadline_for(interval).min(interval);
        self.interval = Some(interval);
    }

    fn deadline_for(&self, interval: Duration) -> Duration {
        deadline(interval, self.timeout)
    }

    /// The deadline a device has to answer before it is reported as stalled.
    pub fn deadline(&self) -> Duration {
        self.deadline_for(self.interval.unwrap_or(Duration::from_secs(1)))
    }

    /// The `--gpu` selectors that name no GPU here, with the GPUs there are, as an error to
    /// show: `once --gpu 5` on a two-GPU host printed "no GPUs found" and exited 0, where
    /// `nvidia-smi -i 5` is an error. Meaningful after a tick (UUIDs come with readings); a
    /// UUID is judged only once every device has answered.
    pub fn unmatched_gpus(&self) -> Option<String> {
        if self.filter.gpus.is_empty() {
            return None;
        }
        let known: Vec<Device> = self
            .devices
            .iter()
            .map(|d| match &d.last {
                Some((dev, _)) => dev.clone_identity(),
                None => Device {
                    index: d.index,
                    ..Device::default()
                },
            })
            .collect();
        let all_named = known.iter().all(|d| d.uuid.is_some());
        let unmatched: Vec<&str> = self
            .filter
            .gpus
            .iter()
            .map(String::as_str)
            .filter(|sel| !known.iter().any(|d| d.matches(sel)))
            .filter(|sel| sel.trim().parse::<u32>().is_ok() || all_named)
            .collect();
        if unmatched.is_empty() {
            return None;
        }
        let here = if known.is_empty() {
            "this host has no GPU".to_owned()
        } else {
            let list: Vec<String> = known
                .iter()
                .map(|d| {
                    let mut s = d.index.to_string();
                    if let Some(n) = &d.name {
                        s.push_str(&format!(" {}", crate::text::escape(n)));
                    }
                    if let Some(u) = &d.uuid {
                        s.push_str(&format!(" ({})", crate::text::escape(u)));
                    }
                    s
                })
                .collect();
            format!("the GPUs here are {}", list.join(", "))
        };
        Some(format!(
            "--gpu {} names no GPU: {here}",
            unmatched.join(",")
        ))
    }

    /// Whether a device read is still outstanding (a call that has not returned).
    #[cfg(test)]
    pub fn busy(&self) -> bool {
        self.devices.iter().any(|d| d.outstanding.is_some())
    }

    /// Ends the device reader threads without waiting for them (see [`Readers::dismiss`]):
    /// the sampler reads nothing more.
    pub fn dismiss_readers(&mut self) {
        self.readers.dismiss();
    }

    /// Reads each device's memory alone `rate` times a second between samples (0: not at
    /// all), so that each sample carries the highest memory since the previous one.
    pub fn with_peak_rate(self, rate: f64) -> Self {
        self.readers.set_peak_interval(peak_interval(rate));
        self
    }

    /// Reads probe reports from `dir` instead of the default runtime directory.
    pub fn with_probe_dir(mut self, dir: PathBuf) -> Self {
        self.probe_dir = Some(dir);
        self.probe_warning = None;
        self
    }

    /// Limits the per-tick host refresh to the pids `focus` names (sorted).
    pub fn with_focus(mut self, focus: watch::Receiver<Focus>) -> Self {
        self.focus = Some(focus);
        self
    }

    /// Keeps a reading that has arrived, its impossible values taken out
    /// ([`Device::check_readings`]): every view sees the same checked figures.
    fn store(devices: &mut [DeviceState], r: Reading) {
        if let Some(d) = devices.get_mut(r.slot) {
            let mut device = r.device;
            device.check_readings();
            d.outstanding = None;
            d.last = Some((device, r.at));
            d.fresh = true;
        }
    }

    /// Takes the readings that have arrived (answers that came in after an earlier tick
    /// stopped waiting included) and returns the devices to ask now: those with no read
    /// outstanding, never a second call to a device whose first has not returned.
    fn idle(&mut self) -> Vec<usize> {
        let devices = &mut self.devices;
        self.readers.take(|r| Self::store(devices, r));
        let asked_at = Instant::now();
        let idle: Vec<usize> = (0..devices.len())
            .filter(|&i| devices[i].outstanding.is_none())
            .collect();
        for &i in &idle {
            devices[i].outstanding = Some(asked_at);
        }
        idle
    }

    /// Collects what arrived and assembles the sample: the end of a tick begun at `t0`.
    fn finish(&mut self, t0: Instant, wait: bool) -> Sample {
        let devices = &mut self.devices;
        self.readers.take(|r| Self::store(devices, r));
        let t1 = Instant::now();
        let timestamp = SystemTime::now();
        let deadline = self.deadline();
        self.take_events();
        let mut devices: Vec<Device> = self
            .devices
            .iter()
            .map(|d| self.assemble(d, t1, deadline))
            .collect();
        for d in &mut self.devices {
            d.fresh = false;
        }
        for d in &mut devices {
            if let Some(h) = self.xids.get(d.index as usize) {
                d.health.xids.clone_from(&h.xids);
                d.health.xids_watched = h.xids_watched;
                d.health.events_error.clone_from(&h.events_error);
            }
        }
        if !self.filter.gpus.is_empty() {
            let gpus = &self.filter.gpus;
            devices.retain(|d| gpus.iter().any(|g| d.matches(g)));
        }
        if !self.filter.processes {
            for d in &mut devices {
                d.processes.clear();
            }
        }
        let mut sample = Sample {
            timestamp,
            hostname: self.hostname.clone(),
            source: self.kind,
            driver_version: self.driver_version.clone(),
            cuda_version: self.cuda_version.clone(),
            devices,
            error: self.error.clone(),
            // A simulated machine with a host side of its own is shown beside that, never
            // beside this machine's CPU and memory.
            host: match self.system.as_mut() {
                Some(system) => self
                    .unified
                    .simulated_host()
                    .or_else(|| Some(system.read())),
                None => None,
            },
        };
        self.unified.update(&mut sample.devices);
        let t2 = Instant::now();
        if let Some(host) = self.host.as_mut() {
            let focus = self.focus.as_ref().map(|f| Arc::clone(&f.borrow()));
            // No receiver, or a view that needs every pid fresh: all of them.
            let pids = focus.as_deref().and_then(Option::as_deref);
            host.enrich(&mut sample.devices, pids);
            if let Some(pods) = self.kubelet.as_ref().and_then(|k| k.pods()) {
                super::kubelet::name_pods(&mut sample.devices, &pods);
            }
            if let Some(w) = self.holders.as_mut() {
                w.update(&mut sample.devices, &|pid| host.unresolved(pid), wait);
            }
        }
        self.exited.name(&mut sample.devices);
        let new = self.hand_cgroups(&sample.devices);
        if wait && !new.is_empty() {
            // A view that samples once (`once`): the processes' cgroups are known only now,
            // so their limits are asked alone, of the devices that answered (bounded as a
            // reading is; a device that hangs now holds up only this wait).
            let until = (t0 + self.budget).max(Instant::now() + super::readers::GRACE_MIN);
            self.readers.read_limits(&new, until);
        }
        let states = &mut self.devices;
        self.readers.take_limits(|slot, limits| {
            if let Some(d) = states.get_mut(slot) {
                d.limits = limits;
            }
        });
        let states = &self.devices;
        let driver = |index: u32, cgroup: &str| {
            let d = states.get(index as usize)?;
            let (_, limit) = d.limits.iter().find(|(c, _)| **c == *cgroup)?;
            limit.clone()
        };
        self.unified.update_owners(&mut sample.devices, &driver);
        let t3 = Instant::now();
        if let Some(dir) = &self.probe_dir {
            probe::merge(&mut sample.devices, self.probe_cache.get(dir));
        }
        let t4 = Instant::now();
        self.last = TickTimings {
            source: t1 - t0,
            host: t3 - t2,
            probe: t4 - t3,
            assembly: t2 - t1,
        };
        sample
    }

    /// Hands each device's reader the cgroups of its processes (from the host's lookup, or a
    /// simulated process's own), whose limits its next reading then reads from the driver.
    /// The devices with a cgroup whose limit was never read, and no call outstanding.
    fn hand_cgroups(&mut self, devices: &[Device]) -> Vec<usize> {
        if !self.limits {
            return Vec::new();
        }
        let mut new = Vec::new();
        for d in devices.iter().filter(|d| d.error.is_none()) {
            let slot = d.index as usize;
            let Some(state) = self.devices.get_mut(slot) else {
                continue;
            };
            let mut cgroups: Vec<Arc<str>> = d
                .processes
                .iter()
                .filter_map(|p| p.cgroup.clone())
                .collect();
            cgroups.sort_unstable();
            cgroups.dedup();
            if *state.cgroups == *cgroups {
                continue;
            }
            let unread = cgroups
                .iter()
                .any(|c| !state.limits.iter().any(|(known, _)| known == c));
            state.cgroups = Arc::from(cgroups);
            self.readers.set_cgroups(slot, Arc::clone(&state.cgroups));
            if unread && state.outstanding.is_none() {
                new.push(slot);
            }
        }
        new
    }

    /// The device as this tick reports it: its reading, or its last one marked by age (late or
    /// stalled), or only its failure.
    fn assemble(&self, d: &DeviceState, now: Instant, deadline: Duration) -> Device {
        if let Some(why) = self.readers.broken() {
            return Device::failed(d.index, why.to_owned());
        }
        let age_ms = |at: Instant| now.saturating_duration_since(at).as_millis() as u64;
        let mut device = match &d.last {
            Some((last, at)) => Device {
                data_age_ms: Some(age_ms(*at)),
                peak: last.peak.filter(|_| d.fresh),
                ..last.clone()
            },
            None => Device {
                index: d.index,
                ..Device::default()
            },
        };
        match d.outstanding {
            Some(since) if now.saturating_duration_since(since) >= deadline => {
                let waited = now.saturating_duration_since(since);
                device.stalled = true;
                device.error = Some(format!("not responding for {}", fmt_wait(waited)));
            }
            // Not past the deadline yet, and never answered: nothing to show but that.
            Some(_) if d.last.is_none() => {
                device.error = Some("waiting for the driver's first answer".into());
            }
            // Asked and not answered in time for this sample: the readings are the last good
            // ones. Late, not fresh (stalled once the deadline has passed).
            Some(since) => {
                let waited = now.saturating_duration_since(since);
                device.late = true;
                device.error = Some(format!(
                    "no answer for {} (last data {} old)",
                    fmt_wait(waited),
                    fmt_wait(Duration::from_millis(device.data_age_ms.unwrap_or(0)))
                ));
            }
            None => {}
        }
        device
    }

    /// One sample, waiting on this thread for the devices' readings up to the budget (the
    /// deadline, unless [`Sampler::set_interval`] made it shorter).
    pub fn tick(&mut self) -> Sample {
        let t0 = Instant::now();
        let idle = self.idle();
        self.readers.read(&idle, t0 + self.budget);
        self.finish(t0, true)
    }

    /// [`Sampler::tick`] for an async loop: the wait is a tokio timer and a notification,
    /// so no thread blocks and the runtime keeps handling input while devices are read.
    pub async fn tick_async(&mut self) -> Sample {
        let t0 = Instant::now();
        // Sampling on an interval, a device that has not answered after ten healthy rounds
        // (at least 100 ms) is reported late rather than holding up the others' sample: its
        // reading, if it comes, goes into the next one.
        let until = tokio::time::Instant::from_std(t0 + self.readers.grace().min(self.budget));
        let notify = Arc::clone(&self.notify);
        let idle = self.idle();
        if self.readers.ask(&idle, Waiter::Notify(Arc::clone(&notify))) {
            let relay = self.readers.relay_delay();
            let mut relay_at = tokio::time::Instant::from_std(t0 + relay);
            loop {
                if self.readers.done() {
                    self.readers.completed(t0);
                    break;
                }
                if tokio::time::Instant::now() >= until {
                    break;
                }
                tokio::select! {
                    _ = notify.notified() => {}
                    _ = tokio::time::sleep_until(relay_at.min(until)) => {
                        if tokio::time::Instant::now() >= relay_at {
                            self.readers.relay();
                            relay_at = tokio::time::Instant::now() + relay;
                        }
                    }
                }
            }
        }
        self.finish(t0, false)
    }
}

/// The default `--peak-rate`: memory-only reads per second per GPU (see
/// docs/performance.md for what they cost). At 50 Hz a spike of 20 ms or more is always read
/// once, with a margin for the scheduler's lateness.
pub const DEFAULT_PEAK_RATE: f64 = 50.0;
/// The highest `--peak-rate`: beyond it the reads would cost more than the rest of gpumon.
pub const MAX_PEAK_RATE: f64 = 1000.0;

/// The time between memory-only reads at `rate` per second (`None`: off).
pub fn peak_interval(rate: f64) -> Option<Duration> {
    (rate.is_finite() && rate > 0.0).then(|| Duration::from_secs_f64(1.0 / rate.min(MAX_PEAK_RATE)))
}

/// "500 ms", "2 s", "12 s", "3 min 5 s": how long a device has not answered.
fn fmt_wait(d: Duration) -> String {
    let s = d.as_secs();
    if s == 0 {
        format!("{} ms", d.as_millis())
    } else if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    }
}

/// Runs `sampler` every `interval` (read live, so a view can change it) and sends each sample
/// on the returned channel. The task ends when the receiver is dropped.
pub fn spawn(
    sampler: Sampler,
    interval: watch::Receiver<Duration>,
) -> (tmpsc::Receiver<Arc<Sample>>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = tmpsc::channel(4);
    let mut sampler = sampler;
    sampler.watch_events();
    let handle = tokio::spawn(run(sampler, interval, tx));
    (rx, handle)
}

async fn run(
    mut sampler: Sampler,
    mut interval: watch::Receiver<Duration>,
    tx: tmpsc::Sender<Arc<Sample>>,
) {
    // Each tick is due one period after the previous one was due, not one period after it
    // started: waking up costs the timer's rounding up to its next millisecond and the
    // scheduler's delay, which would otherwise add to every period (at 10 ms the samples came
    // 11.2 ms apart, 89 a second where 100 were asked for).
    let mut due = tokio::time::Instant::now();
    loop {
        let period = (*interval.borrow_and_update()).max(MIN_INTERVAL);
        sampler.set_interval(period);
        let sample = sampler.tick_async().await;
        if tx.send(Arc::new(sample)).await.is_err() {
            return;
        }
        due = next_due(due, period, tokio::time::Instant::now());
        tokio::select! {
            _ = tokio::time::sleep_until(due) => {}
            changed = interval.changed() => {
                if changed.is_err() {
                    return;
                }
                // A new interval: sample at once and count its periods from now.
                due = tokio::time::Instant::now();
            }
            _ = tx.closed() => return,
        }
    }
}

/// When the tick after one due at `due` is due: a period later, or `now` when that is already
/// past (a tick that overran its period, on a stalled GPU or a busy machine, is followed by
/// one at once, not by a burst of the ticks it missed).
pub(crate) fn next_due(
    due: tokio::time::Instant,
    period: Duration,
    now: tokio::time::Instant,
) -> tokio::time::Instant {
    (due + period).max(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::source::DeviceReader;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::sync::Mutex;

    /// Answers at once with a device named after its index.
    struct Healthy(u32);
    impl DeviceReader for Healthy {
        fn read(&mut self) -> Device {
            Device {
                index: self.0,
                name: Some(format!("GPU {}", self.0)),
                ..Device::default()
            }
        }
    }

    /// Blocks its first read until the test lets it go (never, if it does not), then answers
    /// at once, as a GPU that recovers does; counts the calls it receives.
    struct Hung {
        index: u32,
        release: Arc<Mutex<mpsc::Receiver<()>>>,
        calls: Arc<AtomicUsize>,
    }
    impl DeviceReader for Hung {
        fn read(&mut self) -> Device {
            if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
                let _ = self.release.lock().map(|rx| rx.recv());
            }
            Device {
                index: self.index,
                name: Some("recovered".into()),
                ..Device::default()
            }
        }
    }

    fn sampler(readers: Vec<Box<dyn DeviceReader>>, timeout: Duration) -> Sampler {
        Sampler::new(
            Opened {
                kind: "simulated",
                driver_version: None,
                cuda_version: None,
                readers,
                error: None,
                host_lookup: false,
                events: None,
                limits: false,
                host: None,
            },
            Filter {
                gpus: vec![],
                processes: true,
                host: true,
                process_utilization: true,
                system: false,
            },
        )
        .with_timeout(Some(timeout))
    }

    #[test]
    fn a_device_that_never_answers_is_stalled_and_the_others_are_fresh() {
        let (release, rx) = mpsc::channel();
        let calls = Arc::new(AtomicUsize::new(0));
        let hung = Hung {
            index: 1,
            release: Arc::new(Mutex::new(rx)),
            calls: Arc::clone(&calls),
        };
        let mut s = sampler(
            vec![Box::new(Healthy(0)), Box::new(hung)],
            Duration::from_millis(100),
        );

        // A single tick waits up to the deadline, then reports what it has.
        let started = Instant::now();
        let sample = s.tick();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "bounded by the deadline"
        );
        assert_eq!(sample.devices.len(), 2);
        let (ok, stuck) = (&sample.devices[0], &sample.devices[1]);
        assert!(ok.fresh() && ok.name.as_deref() == Some("GPU 0"));
        assert!(stuck.stalled, "{stuck:?}");
        assert_eq!(stuck.index, 1);
        assert_eq!(stuck.data_age_ms, None, "it never answered");
        assert!(stuck
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("not responding for")));

        // Sampling on: the healthy device keeps its cadence, and the hung one is never asked
        // a second time while its first call is outstanding.
        s.set_interval(Duration::from_millis(20));
        for _ in 0..5 {
            let t = Instant::now();
            let sample = s.tick();
            assert!(t.elapsed() < Duration::from_millis(500));
            assert!(sample.devices[0].fresh());
            assert!(sample.devices[1].stalled);
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "one outstanding call at most"
        );
        assert!(s.busy());

        // The call returns: the device resumes by itself.
        release.send(()).expect("release");
        let mut resumed = None;
        for _ in 0..50 {
            let sample = s.tick();
            if !sample.devices[1].stalled {
                resumed = Some(sample);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let sample = resumed.expect("the device resumed");
        assert_eq!(sample.devices[1].name.as_deref(), Some("recovered"));
        assert!(sample.devices[1].error.is_none());
        // Dropping a sampler with a blocked reader returns at once (it is not joined).
        drop(release);
    }

    #[test]
    fn a_stalled_device_keeps_its_last_good_readings_marked_by_age() {
        let (release, rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(Mutex::new(rx));
        /// Answers the first read, then hangs.
        struct Once {
            done: bool,
            release: Arc<Mutex<mpsc::Receiver<()>>>,
        }
        impl DeviceReader for Once {
            fn read(&mut self) -> Device {
                if self.done {
                    let _ = self.release.lock().map(|rx| rx.recv());
                }
                self.done = true;
                Device {
                    index: 0,
                    temperature_c: Some(50),
                    ..Device::default()
                }
            }
        }
        let mut s = sampler(
            vec![Box::new(Once {
                done: false,
                release: Arc::clone(&release_rx),
            })],
            Duration::from_millis(60),
        );
        assert!(s.tick().devices[0].fresh());
        s.set_interval(Duration::from_millis(10));
        let mut stalled = None;
        for _ in 0..100 {
            let d = s.tick().devices.remove(0);
            if d.stalled {
                stalled = Some(d);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let d = stalled.expect("stalled after the deadline");
        assert_eq!(d.temperature_c, Some(50), "last good value kept");
        assert!(
            d.data_age_ms.is_some_and(|ms| ms >= 60),
            "{:?}",
            d.data_age_ms
        );
        assert!(!d.fresh());
        drop(release);
    }

    #[test]
    fn a_reading_shown_again_carries_no_peak() {
        let (release, rx) = mpsc::channel::<()>();
        /// Answers its first reading, then hangs in the next; its memory alone answers.
        struct Once {
            done: bool,
            release: Mutex<mpsc::Receiver<()>>,
        }
        impl DeviceReader for Once {
            fn read(&mut self) -> Device {
                if self.done {
                    let _ = self.release.lock().map(|rx| rx.recv());
                }
                self.done = true;
                let mut d = Device::default();
                d.memory.total_bytes = Some(80 << 30);
                d.memory.used_bytes = Some(20 << 30);
                d
            }
            fn read_memory(&mut self) -> Option<crate::collect::source::MemoryNow> {
                Some(crate::collect::source::MemoryNow {
                    used: 30 << 30,
                    total: 80 << 30,
                })
            }
        }
        let mut s = sampler(
            vec![Box::new(Once {
                done: false,
                release: Mutex::new(rx),
            })],
            Duration::from_secs(60),
        )
        .with_peak_rate(1000.0);
        let first = s.tick().devices.remove(0);
        assert!(first.fresh());
        assert!(first.peak.is_some(), "measured: {first:?}");
        s.set_interval(Duration::from_millis(10));
        let again = s.tick().devices.remove(0);
        assert!(again.late, "the second reading hangs: {again:?}");
        assert_eq!(again.memory.used_bytes, Some(20 << 30), "the last reading");
        assert_eq!(again.peak, None, "its window was reported already");
        drop(release);
    }

    /// A GPU whose one process is this test process, so /proc has real facts about it.
    struct Me;
    impl DeviceReader for Me {
        fn read(&mut self) -> Device {
            Device {
                processes: vec![crate::model::Process::from_nvml(
                    std::process::id(),
                    crate::model::ProcessKind::Compute,
                    Some(1 << 20),
                )],
                ..Device::default()
            }
        }
    }

    #[test]
    fn host_facts_are_read_only_for_views_that_print_them() {
        let tick = |host| {
            let mut sampler = Sampler::new(
                Opened {
                    kind: "nvml",
                    driver_version: None,
                    cuda_version: None,
                    readers: vec![Box::new(Me)],
                    error: None,
                    host_lookup: true,
                    events: None,
                    limits: false,
                    host: None,
                },
                Filter {
                    gpus: vec![],
                    processes: true,
                    host,
                    process_utilization: false,
                    system: false,
                },
            );
            sampler.tick().devices[0].processes[0].clone()
        };
        let with = tick(true);
        assert!(with.name.is_some() && with.start_time.is_some(), "{with:?}");
        assert!(with.host_memory_bytes.is_some_and(|b| b > 0), "{with:?}");
        // `log` per GPU: the process is counted, /proc is not read.
        let without = tick(false);
        assert_eq!(without.gpu_memory_bytes, Some(1 << 20));
        assert_eq!(
            (
                without.name,
                without.user,
                without.start_time,
                without.host_memory_bytes
            ),
            (None, None, None, None)
        );
    }

    #[test]
    fn default_deadline_is_two_seconds_or_two_intervals() {
        assert_eq!(
            deadline(Duration::from_secs(1), None),
            Duration::from_secs(2)
        );
        assert_eq!(
            deadline(Duration::from_secs(5), None),
            Duration::from_secs(10)
        );
        assert_eq!(
            deadline(Duration::from_secs(5), Some(Duration::from_millis(300))),
            Duration::from_millis(300)
        );
        assert_eq!(fmt_wait(Duration::from_millis(12_400)), "12 s");
        assert_eq!(fmt_wait(Duration::from_millis(503)), "503 ms");
        assert_eq!(fmt_wait(Duration::from_secs(125)), "2 min 5 s");
    }

    #[test]
    fn ticks_are_due_a_period_after_the_last_was_due_not_after_it_ended() {
        let t0 = tokio::time::Instant::now();
        let ms = Duration::from_millis;
        // The tick due at t0 woke 1.2 ms late and took 0.3 ms: the next is still due at 10 ms.
        assert_eq!(next_due(t0, ms(10), t0 + ms(2)), t0 + ms(10));
        // Late wake-ups do not add up over many ticks.
        let mut due = t0;
        for k in 1..=100 {
            due = next_due(due, ms(10), due + Duration::from_micros(1500));
            assert_eq!(due, t0 + ms(10 * k));
        }
        // A tick that overran its period (a GPU that answered after 25 ms): the next at once.
        assert_eq!(next_due(t0, ms(10), t0 + ms(25)), t0 + ms(25));
    }
}
