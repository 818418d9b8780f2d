//! `gpumon record`: every sample, appended to a bounded recording until stopped.

use std::process::ExitCode;

use tokio::sync::watch;

use crate::cli::{Common, RecordArgs};
use crate::collect::{check_gpus, open_sampler, sampler, Needs};
use crate::console::{shutdown_signal, usage_error};
use crate::store::recording::{Limits, Writer};

/// What a recording holds of each sample: everything the dashboard shows.
pub const NEEDS: Needs = Needs {
    processes: true,
    host: true,
    process_utilization: true,
    system: true,
};

pub fn run(common: &Common, args: &RecordArgs) -> anyhow::Result<ExitCode> {
    let limits = Limits {
        max_size: args.max_size,
        keep: args.keep,
    };
    let mut writer = match Writer::open(&args.output, limits) {
        Ok(w) => w,
        Err(e) => {
            return Ok(usage_error(format!(
                "cannot record to {}: {e}",
                args.output.display()
            )))
        }
    };
    // No view shows a row: every process's CPU and host memory are refreshed every 30 s
    // (BACKGROUND_REFRESH), not every second (3 ms a second for 320 processes, most of what
    // recording costs); GPU figures are every sample's.
    let (_focus_tx, focus_rx) = watch::channel(std::sync::Arc::new(Some(Vec::new())));
    let mut sampler = match open_sampler(&common.collect(), NEEDS) {
        Ok(s) => s.with_focus(focus_rx),
        Err(e) => return Ok(usage_error(e)),
    };
    if let Err(e) = check_gpus(&common.collect(), &mut sampler) {
        return Ok(usage_error(e));
    }
    eprintln!(
        "gpumon: recording to {} every {} (at most {}, rotated files kept {}); Ctrl-C stops",
        args.output.display(),
        humantime::format_duration(common.interval),
        crate::units::fmt_bytes(args.max_size),
        humantime::format_duration(args.keep),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()?;
    let result = runtime.block_on(async move {
        let (_interval_tx, interval_rx) = watch::channel(common.interval);
        let (mut samples, task) = sampler::spawn(sampler, interval_rx);
        let stop = shutdown_signal();
        tokio::pin!(stop);
        let mut failed = None;
        loop {
            tokio::select! {
                sample = samples.recv() => {
                    let Some(sample) = sample else { break };
                    if let Err(e) = writer.append(&sample) {
                        failed = Some(e);
                        break;
                    }
                }
                _ = &mut stop => break,
            }
        }
        drop(samples);
        task.abort();
        // The open segment gets its trailer: the file ends whole.
        let closed = writer.close_segment();
        match failed.map(Err).unwrap_or(closed) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) => {
                eprintln!("gpumon: cannot write {}: {e}", args.output.display());
                Ok(ExitCode::FAILURE)
            }
        }
    });
    runtime.shutdown_background();
    result
}
