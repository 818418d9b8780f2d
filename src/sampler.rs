//! The sampler: reads a source, adds host facts, and publishes immutable [`Sample`]s.
//!
//! [`Sampler::tick`] is synchronous and timed per phase (for the benchmark); [`spawn`] runs it
//! on tokio at an adjustable interval and publishes each sample on a channel.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::host::HostLookup;
use crate::model::Sample;
use crate::probe;
use crate::source::Source;

/// The fastest interval gpumon accepts.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// Where one tick's time went.
#[derive(Debug, Clone, Copy, Default)]
pub struct TickTimings {
    pub source: Duration,
    pub host: Duration,
    pub probe: Duration,
    pub assembly: Duration,
}

/// Which devices a view wants (by index or UUID); empty means all.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub gpus: Vec<String>,
    pub processes: bool,
}

pub struct Sampler {
    source: Box<dyn Source>,
    host: Option<HostLookup>,
    filter: Filter,
    /// The pids a view shows (the dashboard's visible rows): their host facts stay fresh,
    /// the others are refreshed less often.
    focus: Option<watch::Receiver<Arc<Vec<u32>>>>,
    /// Where in-process probes publish (`gpumon run`), when it is safe to read.
    probe_dir: Option<PathBuf>,
    probe_cache: probe::ReportCache,
    /// Why probe reports are not read, to show once.
    pub probe_warning: Option<String>,
    pub last: TickTimings,
}

impl Sampler {
    pub fn new(source: Box<dyn Source>, filter: Filter) -> Self {
        let host = (source.host_lookup() && filter.processes).then(HostLookup::new);
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
        Sampler {
            source,
            host,
            filter,
            focus: None,
            probe_dir,
            probe_cache: probe::ReportCache::default(),
            probe_warning,
            last: TickTimings::default(),
        }
    }

    /// Reads probe reports from `dir` instead of the default runtime directory.
    pub fn with_probe_dir(mut self, dir: PathBuf) -> Self {
        self.probe_dir = Some(dir);
        self.probe_warning = None;
        self
    }

    /// Limits the per-tick host refresh to the pids `focus` names (sorted).
    pub fn with_focus(mut self, focus: watch::Receiver<Arc<Vec<u32>>>) -> Self {
        self.focus = Some(focus);
        self
    }

    pub fn tick(&mut self) -> Sample {
        let t0 = Instant::now();
        let mut sample = self.source.read();
        let t1 = Instant::now();
        if !self.filter.gpus.is_empty() {
            let gpus = &self.filter.gpus;
            sample.devices.retain(|d| gpus.iter().any(|g| d.matches(g)));
        }
        if !self.filter.processes {
            for d in &mut sample.devices {
                d.processes.clear();
            }
        }
        let t2 = Instant::now();
        if let Some(host) = self.host.as_mut() {
            let focus = self.focus.as_ref().map(|f| Arc::clone(&f.borrow()));
            host.enrich(&mut sample.devices, focus.as_deref().map(Vec::as_slice));
        }
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
}

/// Runs `sampler` every `interval` (read live, so a view can change it) and sends each sample
/// on the returned channel. The task ends when the receiver is dropped.
pub fn spawn(
    sampler: Sampler,
    interval: watch::Receiver<Duration>,
) -> (mpsc::Receiver<Arc<Sample>>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel(4);
    let handle = tokio::spawn(run(sampler, interval, tx));
    (rx, handle)
}

async fn run(
    mut sampler: Sampler,
    mut interval: watch::Receiver<Duration>,
    tx: mpsc::Sender<Arc<Sample>>,
) {
    loop {
        let started = tokio::time::Instant::now();
        // NVML calls block (ioctls on real drivers): keep them off the async thread.
        let Ok((s, sample)) = tokio::task::spawn_blocking(move || {
            let sample = sampler.tick();
            (sampler, sample)
        })
        .await
        else {
            return;
        };
        sampler = s;
        if tx.send(Arc::new(sample)).await.is_err() {
            return;
        }
        let period = (*interval.borrow_and_update()).max(MIN_INTERVAL);
        tokio::select! {
            _ = tokio::time::sleep_until(started + period) => {}
            changed = interval.changed() => if changed.is_err() { return },
            _ = tx.closed() => return,
        }
    }
}
