//! `gpumon run -- CMD ARGS…`: runs CMD with the in-process probe loaded (the sitecustomize
//! pattern), samples the GPUs while it runs, watches its stderr for an OOM, and prints a
//! summary when it ends.
//!
//! CMD's stdin and stdout are its own; its stderr is relayed byte for byte (gpumon reads it to
//! find OOM messages). Its exit status becomes gpumon's (128 + N when killed by signal N).
//! SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are forwarded; SIGINT and SIGQUIT are forwarded unless
//! they came from the terminal, which already delivered them to CMD.

mod child;
mod dirs;
mod gpus;
mod trace;
mod watch;

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use crate::cli::{Common, RunArgs};
use crate::collect::probe;
use crate::collect::sampler::Sampler;
use crate::collect::{new_sampler, open_within_timeout, Needs};
use crate::console::{exit_on_usage, usage};
use crate::estimate::memory::Parts;
use crate::store::logfile::{Expect, LogFile};
use crate::text::Paint;
use crate::view::log::{Columns, LogWriter};
use crate::view::run::{self as summary, Ending, Held, Output, Placed};

use child::{exit_code, python_path, SiteDir, Stderr};
use trace::{Job, Trace};
use watch::Watch;

pub fn run(common: &Common, args: &RunArgs) -> anyhow::Result<ExitCode> {
    exit_on_usage(run_job(common, args))
}

/// Runs the job: checks the flags and opens what the run writes, waits for GPUs with
/// `--gpus`, starts CMD, watches it until it exits and says what happened.
fn run_job(common: &Common, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let Some((program, rest)) = args.command.split_first() else {
        return Err(usage("run needs a command: gpumon run -- python train.py"));
    };
    let estimated = estimated(args)?;
    let probe_dir = args.probe_dir.clone().unwrap_or_else(probe::default_dir);
    probe::ensure_dir(&probe_dir).map_err(usage)?;
    let site = SiteDir::create(&probe_dir).map_err(|e| {
        usage(format!(
            "cannot write the probe into {}: {e}",
            probe_dir.display()
        ))
    })?;
    let (log, utilization) = open_log(args)?;
    let stem = dirs::run_stem();
    let (recorder, recording) = dirs::open_recording(args, &stem).unzip();
    let snapshots = dirs::snapshot_dir(args)?;
    let mut sampler = open_sampler(common, args, utilization, &probe_dir)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()?;
    // --gpus: the GPUs chosen, after waiting in the queue for room.
    let launch = match (args.gpus, sampler.as_mut()) {
        (None, _) => None,
        (Some(_), None) => return Err(usage("--gpus needs the GPUs' readings")),
        (Some(count), Some(s)) => {
            match gpus::choose_and_wait(args, count, s, &rt, common.interval)? {
                gpus::Outcome::Launch(l) => Some(l),
                gpus::Outcome::Exit(code) => return Ok(code),
            }
        }
    };
    let started = Instant::now();
    let run_id = run_id();
    let env = child_env(
        common,
        args,
        &site,
        &probe_dir,
        &run_id,
        launch.as_deref(),
        snapshots.as_deref().map(|d| d.join(&stem)),
    );
    let mut child = match child::spawn(program, rest, &env) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let stderr = Stderr::relay(&mut child);
    let trace = Trace::new(Job::new(run_id, child.id()));
    let mut watch = Watch::new(args, &probe_dir, trace, log, recorder, launch);
    let status = rt.block_on(watch.until_exit(child, sampler, common.interval));
    // A tick may still be waiting on a hung GPU: never wait for it on the way out.
    rt.shutdown_background();
    watch.forget_site_requests();
    let status = status?;
    let relayed = stderr.finish();
    drop(site);
    let recording = recording.filter(|_| watch.close_recording());
    if !args.quiet {
        let paint = Paint::for_stderr();
        let trace = &watch.trace;
        let ending = Ending {
            command: &args.command,
            status,
            elapsed: started.elapsed(),
            held: Held {
                peaks: &trace.peaks,
                batches: &trace.batches,
                samples: &trace.samples,
                owns: &|p| trace.job.owns(p),
            },
            output: Output {
                analysis: &relayed.analysis,
                oom_at: relayed.oom_at,
            },
            batch: args.batch,
            estimated: estimated.as_ref(),
            launch: watch.launch.as_deref().map(|l| Placed {
                chosen: &l.chosen,
                ids: &l.ids,
                waited: l.waited,
            }),
            snapshots: snapshots.as_deref().map(|dir| {
                let mut text = String::new();
                dirs::snapshot_summaries(&mut text, dir, &stem, paint);
                text
            }),
            recording: recording.as_deref(),
            width: crate::console::terminal_width(),
        };
        let _ = io::stderr().write_all(summary::ending(&ending, paint).as_bytes());
    }
    Ok(ExitCode::from(exit_code(status)))
}

/// `--estimate`'s parts, beside what the steps measure with `--batch`; `--estimate` alone
/// (without `--gpus` or `--batch`) is a usage error.
fn estimated(args: &RunArgs) -> anyhow::Result<Option<Parts>> {
    if args.estimate.is_some() && args.gpus.is_none() && args.batch.is_none() {
        return Err(usage("run --estimate goes with --gpus (the memory to wait for) or --batch (measured against estimated)"));
    }
    match (&args.estimate, args.batch) {
        (Some(flags), Some(_)) => crate::cli::estimate_line(flags)
            .map(|(shape, _, run)| Some(crate::estimate::memory::estimate(&shape, &run)))
            .map_err(|e| usage(format!("--estimate: {e}"))),
        _ => Ok(None),
    }
}

/// `--log`'s writer, kept as `log --output` keeps its file (store::logfile), and whether its
/// columns want per-process utilisation.
fn open_log(args: &RunArgs) -> anyhow::Result<(Option<LogWriter<LogFile>>, bool)> {
    let Some(path) = &args.log else {
        return Ok((None, false));
    };
    let columns = Columns::parse(args.log_fields.as_deref().or(Some(RUN_LOG_FIELDS)), true)
        .map_err(anyhow::Error::msg)?;
    let utilization = columns.read_process_utilization();
    let expect = Expect::new(args.log_format, &columns.names());
    let (file, _) = LogFile::open(path, expect).map_err(anyhow::Error::new)?;
    let header = file.needs_header();
    let writer = LogWriter::new(file, args.log_format, columns, header);
    Ok((Some(writer), utilization))
}

/// The sampler, reading the probe's reports; `None` (said) where the GPUs cannot be read, so
/// the job runs unwatched.
fn open_sampler(
    common: &Common,
    args: &RunArgs,
    utilization: bool,
    probe_dir: &Path,
) -> anyhow::Result<Option<Sampler>> {
    let source = match open_within_timeout(&common.collect()) {
        Ok(source) => source,
        Err(e) => {
            eprintln!("gpumon: running without GPU sampling: {e}");
            return Ok(None);
        }
    };
    let needs = Needs {
        processes: true,
        host: true,
        // --gpus without a size wants an idle GPU: %SM tells.
        process_utilization: utilization
            || (args.gpus.is_some() && args.need.is_none() && args.estimate.is_none()),
        system: false,
    };
    let mut sampler =
        new_sampler(&common.collect(), source, needs).with_probe_dir(probe_dir.to_owned());
    crate::collect::check_gpus(&common.collect(), &mut sampler).map_err(usage)?;
    Ok(Some(sampler))
}

/// `<our pid>-<nanoseconds>`: what the probe tags the job's processes with.
fn run_id() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}

/// What CMD is started with: the probe on its Python path and its settings, the GPUs chosen,
/// and where a snapshot goes.
fn child_env(
    common: &Common,
    args: &RunArgs,
    site: &SiteDir,
    probe_dir: &Path,
    run_id: &str,
    launch: Option<&gpus::Launch>,
    snapshot: Option<std::path::PathBuf>,
) -> child::Env {
    let mut vars: Vec<(&'static str, OsString)> = vec![
        ("PYTHONPATH", python_path(&site.0)),
        ("GPUMON_PROBE_DIR", probe_dir.into()),
        (
            "GPUMON_PROBE_INTERVAL",
            common.interval.as_secs_f64().to_string().into(),
        ),
        ("GPUMON_RUN_ID", run_id.into()),
    ];
    if let Some(n) = args.batch {
        vars.push(("GPUMON_BATCH", n.to_string().into()));
    }
    vars.push(("GPUMON_STEP_MARKER", args.step_marker.clone().into()));
    if let Some(l) = launch {
        vars.push(("CUDA_DEVICE_ORDER", "PCI_BUS_ID".into()));
        vars.push(("CUDA_VISIBLE_DEVICES", l.ids.clone().into()));
    }
    if let Some(s) = snapshot {
        vars.push(("GPUMON_SNAPSHOT", s.into()));
    }
    child::Env { vars }
}

/// Process fields `--log` writes by default.
pub const RUN_LOG_FIELDS: &str = "timestamp,gpu_index,pid,used_memory,process.allocated,\
process.reserved,process.cached,process.non_framework,cpu_percent,host_memory";
