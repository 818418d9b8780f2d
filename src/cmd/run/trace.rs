//! The probe's trace of a `gpumon run` job: which processes are the job's, and what it held on
//! each GPU over the run (peaks, the batch that fits, growth step after step).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::estimate::batch::BatchFit;
use crate::model::run::GpuPeak;
use crate::model::{Device, Process, Sample};

/// Samples kept for the summary's "how it grew" lines and the last minute's timeline: the
/// last 90 s of them, at most this many.
pub(super) const KEEP: usize = 4096;

pub(super) const KEEP_FOR: Duration = Duration::from_secs(90);

/// The GPU processes of this run: CMD itself, anything the probe tagged with our run id, and
/// any descendant of CMD (by its /proc parent chain).
pub(super) struct Job {
    pub(super) run_id: String,
    pub(super) root: u32,
    /// Parentage cannot change for a live pid: walk /proc once per pid, not once per sample.
    pub(super) descends: RefCell<HashMap<u32, bool>>,
}

impl Job {
    /// The job of the run tagged `run_id` whose command is `root`.
    pub(super) fn new(run_id: String, root: u32) -> Job {
        Job {
            run_id,
            root,
            descends: RefCell::new(HashMap::new()),
        }
    }

    pub(super) fn owns(&self, p: &Process) -> bool {
        p.pid == self.root
            || p.allocator.as_ref().and_then(|a| a.run_id.as_deref()) == Some(self.run_id.as_str())
            || *self
                .descends
                .borrow_mut()
                .entry(p.pid)
                .or_insert_with(|| descends_from(p.pid, self.root))
    }
}

pub(super) fn descends_from(pid: u32, root: u32) -> bool {
    let mut buf = Vec::with_capacity(512);
    let mut cur = pid;
    for _ in 0..32 {
        let Some(stat) = crate::collect::host::read_stat(cur, &mut buf) else {
            return false;
        };
        if stat.ppid == root {
            return true;
        }
        if stat.ppid <= 1 {
            return false;
        }
        cur = stat.ppid;
    }
    false
}

/// The job's room on `d` for `--batch` (the MIG instance its processes run in, with MIG on),
/// and the probe's measure, from one sample; `None` until the probe has measured.
pub(super) fn batch_fit(d: &Device, mine: &[&Process]) -> Option<BatchFit> {
    use crate::estimate::batch::{largest_batch, Room};
    let measure = mine
        .iter()
        .filter_map(|p| p.allocator.as_ref()?.steps)
        .max_by_key(|m| m.peak_bytes)?;
    let memory = match d
        .mig
        .iter()
        .find(|m| m.processes(d).any(|p| mine.iter().any(|q| q.pid == p.pid)))
    {
        Some(m) => &m.memory,
        None => &d.memory,
    };
    let job: u64 = mine.iter().filter_map(|p| p.gpu_memory_bytes).sum();
    let job_reserved: u64 = mine
        .iter()
        .filter_map(|p| p.allocator.as_ref()?.reserved_bytes)
        .sum();
    let room = Room {
        total_bytes: memory.total_bytes?,
        driver_reserved_bytes: memory.reserved_bytes.unwrap_or(0),
        others_bytes: memory.used_bytes?.saturating_sub(job),
        job_outside_bytes: job.saturating_sub(job_reserved),
    };
    Some(largest_batch(&measure, room))
}

pub(super) struct Trace {
    pub(super) job: Job,
    pub(super) samples: VecDeque<Arc<Sample>>,
    pub(super) peaks: BTreeMap<u32, GpuPeak>,
    /// `--batch`: the largest batch that fits each GPU, from the newest sample with the
    /// probe's measure.
    pub(super) batches: BTreeMap<u32, BatchFit>,
}

impl Trace {
    pub(super) fn new(job: Job) -> Trace {
        Trace {
            job,
            samples: VecDeque::with_capacity(KEEP),
            peaks: BTreeMap::new(),
            batches: BTreeMap::new(),
        }
    }

    pub(super) fn record(&mut self, sample: Arc<Sample>) {
        // Other users' commands reach the summary: the one escaping rule, once per sample.
        let sample = match sample.escaped() {
            std::borrow::Cow::Borrowed(_) => sample,
            std::borrow::Cow::Owned(s) => Arc::new(s),
        };
        for d in &sample.devices {
            // Before the job's processes are looked for: an exited one is listed after it left.
            if let Some(peak) = self.peaks.get_mut(&d.index) {
                crate::model::accounting::job_peaks(d, &peak.pids, &mut peak.accounting);
            }
            let mine: Vec<&Process> = d.processes.iter().filter(|p| self.job.owns(p)).collect();
            if mine.is_empty() {
                continue;
            }
            let peak = self.peaks.entry(d.index).or_default();
            peak.name.clone_from(&d.name);
            // The run's footprint on this GPU: all its processes together, in one sample.
            let sum =
                |f: &dyn Fn(&Process) -> Option<u64>| mine.iter().filter_map(|p| f(p)).sum::<u64>();
            peak.process_bytes = peak.process_bytes.max(sum(&|p| p.gpu_memory_bytes));
            peak.allocated = peak
                .allocated
                .max(sum(&|p| p.allocator.as_ref()?.allocated_bytes));
            peak.reserved = peak
                .reserved
                .max(sum(&|p| p.allocator.as_ref()?.reserved_bytes));
            if let Some(fit) = batch_fit(d, &mine) {
                self.batches.insert(d.index, fit);
            }
            if let Some(p) = d.peak {
                peak.gpu_used_peak = Some(peak.gpu_used_peak.unwrap_or(0).max(p.used_bytes));
            }
            for p in mine {
                peak.pids.insert(p.pid);
                let Some(a) = &p.allocator else { continue };
                if let Some(g) = &a.step_growth {
                    peak.growth
                        .insert(p.pid, (g.clone(), a.step_marker.clone()));
                }
                if let Some(h) = &a.held_sites {
                    peak.sites.insert(p.pid, h.clone());
                }
                peak.framework = Some(match &a.framework_version {
                    Some(v) => format!("{} {v}", a.framework),
                    None => a.framework.clone(),
                });
                // The allocator's own peaks catch what fell between samples.
                peak.allocated = peak.allocated.max(a.allocated_peak_bytes.unwrap_or(0));
                peak.reserved = peak.reserved.max(a.reserved_peak_bytes.unwrap_or(0));
            }
        }
        let newest = sample.timestamp;
        while self.samples.len() >= KEEP
            || self.samples.front().is_some_and(|s| {
                newest
                    .duration_since(s.timestamp)
                    .is_ok_and(|age| age > KEEP_FOR)
            })
        {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }

    /// A copy of `sample` with only this job's processes (for `--log`).
    pub(super) fn only_job(&self, sample: &Sample) -> Sample {
        let mut s = sample.clone();
        for d in &mut s.devices {
            d.processes.retain(|p| self.job.owns(p));
        }
        s
    }
}

/// Asks the probe of `pid` where memory held across steps comes from (`<dir>/<pid>.sites`,
/// holding the step the growth dates from); the probe answers in its report and removes it.
pub(super) fn ask_sites(dir: &Path, pid: u32, since: u64) {
    let path = dir.join(format!("{pid}.sites"));
    let _ = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(since.to_string().as_bytes()));
}
