//! What `gpumon run` does while its job runs: each sample goes to the trace, the log and the
//! recording; growth and the batch that fits are said as soon as found; signals are forwarded.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::cli::RunArgs;
use crate::collect::sampler::{self, Sampler};
use crate::model::Sample;
use crate::store::logfile::LogFile;
use crate::store::recording::Writer;
use crate::units::fmt_bytes;
use crate::view::log::LogWriter;
use crate::view::run::{growth_line, sites_lines};

use super::child::Signals;
use super::gpus::Launch;
use super::trace::{ask_sites, Trace};

/// The job's state while it runs, and where its samples go.
pub(super) struct Watch<'a> {
    args: &'a RunArgs,
    /// The probe's directory, where requests for allocation sites are left.
    probe_dir: &'a Path,
    pub(super) trace: Trace,
    log: Option<LogWriter<LogFile>>,
    recorder: Option<Writer>,
    pub(super) launch: Option<Box<Launch>>,
    /// (GPU, pid) whose growth was said, and whose sites were.
    told: BTreeSet<(u32, u32)>,
    sited: BTreeSet<(u32, u32)>,
    /// Whether `--batch`'s measure was said.
    announced: bool,
}

impl<'a> Watch<'a> {
    pub(super) fn new(
        args: &'a RunArgs,
        probe_dir: &'a Path,
        trace: Trace,
        log: Option<LogWriter<LogFile>>,
        recorder: Option<Writer>,
        launch: Option<Box<Launch>>,
    ) -> Watch<'a> {
        Watch {
            args,
            probe_dir,
            trace,
            log,
            recorder,
            launch,
            told: BTreeSet::new(),
            sited: BTreeSet::new(),
            announced: false,
        }
    }

    /// Ends the recording whole (its last segment closed), so the summary may name it; whether
    /// it did.
    pub(super) fn close_recording(&mut self) -> bool {
        self.recorder
            .take()
            .is_some_and(|mut r| r.close_segment().is_ok())
    }

    /// Samples until `child` exits, forwarding signals to it; its exit status.
    pub(super) async fn until_exit(
        &mut self,
        child: Child,
        sampler: Option<Sampler>,
        interval: Duration,
    ) -> anyhow::Result<ExitStatus> {
        let (_interval_tx, interval_rx) = watch::channel(interval);
        let (mut samples, task) = match sampler {
            Some(s) => {
                let (rx, task) = sampler::spawn(s, interval_rx);
                (Some(rx), Some(task))
            }
            None => (None, None),
        };
        let pid = child.id();
        let mut child = child;
        let mut waiter = tokio::task::spawn_blocking(move || child.wait());
        let mut signals = Signals::new()?;
        loop {
            tokio::select! {
                status = &mut waiter => {
                    if let Some(t) = task { t.abort(); }
                    return Ok(status??);
                }
                Some(sample) = async { match samples.as_mut() { Some(rx) => rx.recv().await, None => std::future::pending().await } } => {
                    self.on_sample(sample);
                }
                _ = signals.forward_to(pid) => {}
            }
        }
    }

    fn on_sample(&mut self, sample: Arc<Sample>) {
        if let Some(w) = self.log.as_mut() {
            let _ = w.write(&self.trace.only_job(&sample));
        }
        if let Some(r) = self.recorder.as_mut() {
            if let Err(e) = r.append(&sample) {
                eprintln!("gpumon: recording stopped: {e}");
                self.recorder = None;
            }
        }
        if let Some(l) = self.launch.as_mut() {
            l.update(&sample, |p| self.trace.job.owns(p));
        }
        self.trace.record(sample);
        self.say_growth();
        self.say_batch();
    }

    /// Growth step after step: said once per process and GPU as soon as found, and the probe
    /// asked where it comes from.
    fn say_growth(&mut self) {
        for (gpu, peak) in &self.trace.peaks {
            for (pid, (g, marker)) in &peak.growth {
                if self.told.insert((*gpu, *pid)) {
                    ask_sites(self.probe_dir, *pid, g.since_step);
                    if !self.args.quiet {
                        eprintln!(
                            "gpumon: pid {pid} on GPU {gpu}: {}",
                            growth_line(g, marker.as_deref())
                        );
                    }
                }
                if let Some(h) = peak.sites.get(pid) {
                    if self.sited.insert((*gpu, *pid)) && !self.args.quiet {
                        let mut text = String::new();
                        sites_lines(&mut text, h, "gpumon:   ");
                        eprint!("{text}");
                    }
                }
            }
        }
    }

    /// `--batch`: said once as soon as it is measured, and again in the summary.
    fn say_batch(&mut self) {
        if self.args.batch.is_none() || self.announced {
            return;
        }
        let Some((gpu, f)) = self.trace.batches.iter().next() else {
            return;
        };
        self.announced = true;
        if !self.args.quiet {
            eprintln!(
                "gpumon: batch {} measured on GPU {gpu}: {} a sample, largest batch that fits {} (an extrapolation from measured steps)",
                f.measure.batch,
                fmt_bytes(f.per_sample_bytes),
                f.largest.map_or("unknown".to_owned(), |n| format!("about {n}"))
            );
        }
    }

    /// Removes requests for sites a probe did not live to answer.
    pub(super) fn forget_site_requests(&self) {
        for (_, pid) in &self.told {
            let _ = std::fs::remove_file(self.probe_dir.join(format!("{pid}.sites")));
        }
    }
}
