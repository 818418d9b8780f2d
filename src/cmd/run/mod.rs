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
mod summary;
mod trace;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use crate::cli::{Common, RunArgs};
use crate::collect::probe;
use crate::collect::sampler;
use crate::collect::{new_sampler, open_within_timeout, Needs};
use crate::console::usage_error;
use crate::oom::Analysis;
use crate::store::logfile::{Expect, LogFile};
use crate::text::Paint;
use crate::units::fmt_bytes;
use crate::view::log::{Columns, LogWriter};

use child::{exit_code, from_terminal, python_path, relay, Reading, Relayed, SiteDir, DRAIN};
use dirs::{ensure_runs_dir, prune_runs, run_stem, runs_dir, RUNS_KEPT, RUN_RECORDING_MAX};
use summary::{batch_summary, growth_line, sites_lines, snapshot_summaries, summary};
use trace::{ask_sites, Job, Trace, KEEP};

pub fn run(common: &Common, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let Some((program, rest)) = args.command.split_first() else {
        return Ok(usage_error(
            "run needs a command: gpumon run -- python train.py",
        ));
    };
    if args.estimate.is_some() && args.gpus.is_none() && args.batch.is_none() {
        return Ok(usage_error("run --estimate goes with --gpus (the memory to wait for) or --batch (measured against estimated)"));
    }
    // --batch with --estimate: the estimate's parts, beside what the steps measure.
    let estimated = match (&args.estimate, args.batch) {
        (Some(flags), Some(_)) => match crate::cli::estimate_line(flags) {
            Ok((shape, _, run)) => Some(crate::estimate::memory::estimate(&shape, &run)),
            Err(e) => {
                return Ok(usage_error(format!("--estimate: {e}")));
            }
        },
        _ => None,
    };
    let runtime = args.probe_dir.clone().unwrap_or_else(probe::default_dir);
    if let Err(e) = probe::ensure_dir(&runtime) {
        return Ok(usage_error(e));
    }
    let site = match SiteDir::create(&runtime) {
        Ok(s) => s,
        Err(e) => {
            return Ok(usage_error(format!(
                "cannot write the probe into {}: {e}",
                runtime.display()
            )));
        }
    };
    // Per-process utilisation only for a log that has its columns.
    let mut utilization = false;
    let mut log = match &args.log {
        Some(path) => {
            let columns = Columns::parse(args.log_fields.as_deref().or(Some(RUN_LOG_FIELDS)), true)
                .map_err(anyhow::Error::msg)?;
            utilization = columns.read_process_utilization();
            // Kept as `log --output` keeps its file (view::logfile).
            let expect = Expect::new(args.log_format, &columns.names());
            let (file, _) = LogFile::open(path, expect).map_err(anyhow::Error::new)?;
            let header = file.needs_header();
            Some(LogWriter::new(file, args.log_format, columns, header))
        }
        None => None,
    };
    let stem = run_stem();
    // The run's recording, for `gpumon replay` and the post-mortem of a night's OOM.
    let (mut recorder, recording) = if args.no_record {
        (None, None)
    } else {
        let limits = crate::store::recording::Limits {
            max_size: RUN_RECORDING_MAX,
            keep: RUNS_KEPT,
        };
        let opened = match &args.record {
            // The user's own file: continued as `record -o` continues one.
            Some(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    let _ = std::fs::create_dir_all(dir);
                }
                crate::store::recording::Writer::open(path, limits)
                    .map(|w| (w, path.clone()))
                    .map_err(|e| e.to_string())
            }
            // The runs directory: checked as the probe's is, and the file created new (its
            // name is predictable, so nothing already there is followed or appended to).
            None => {
                let dir = runs_dir();
                let path = dir.join(format!("{stem}.rec.zst"));
                ensure_runs_dir(&dir)
                    .map_err(|e| e.to_string())
                    .and_then(|()| {
                        prune_runs(&dir);
                        crate::store::recording::Writer::create_new(&path, limits)
                            .map_err(|e| format!("{}: {e}", path.display()))
                    })
                    .map(|w| (w, path))
            }
        };
        match opened {
            Ok((w, path)) => (Some(w), Some(path)),
            Err(e) => {
                eprintln!(
                    "gpumon: not recording the run ({})",
                    crate::text::escape(&e)
                );
                (None, None)
            }
        }
    };
    // --snapshot: the probe saves `<dir>/<stem>.<pid>.snapshot.{pickle,json}` at an OOM.
    let snapshots = if args.snapshot {
        let dir = args.snapshot_dir.clone().unwrap_or_else(runs_dir);
        // The probe writes the snapshots here: the probe directory's checks.
        let checked = match args.snapshot_dir {
            Some(_) => probe::ensure_dir(&dir),
            None => ensure_runs_dir(&dir),
        };
        if let Err(e) = checked {
            return Ok(usage_error(format!(
                "--snapshot: {}",
                crate::text::escape(&e.to_string())
            )));
        }
        if args.snapshot_dir.is_none() {
            prune_runs(&dir);
        }
        Some(dir)
    } else {
        None
    };
    let sampler = match open_within_timeout(&common.collect()) {
        Ok(source) => Some(
            new_sampler(
                &common.collect(),
                source,
                Needs {
                    processes: true,
                    host: true,
                    // --gpus without a size wants an idle GPU: %SM tells.
                    process_utilization: utilization
                        || (args.gpus.is_some() && args.need.is_none() && args.estimate.is_none()),
                    system: false,
                },
            )
            .with_probe_dir(runtime.clone()),
        ),
        Err(e) => {
            eprintln!("gpumon: running without GPU sampling: {e}");
            None
        }
    };
    let mut sampler = sampler;
    if let Some(s) = sampler.as_mut() {
        if let Err(e) = crate::collect::check_gpus(&common.collect(), s) {
            return Ok(usage_error(e));
        }
    }
    let runtime_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()?;
    // --gpus: the GPUs chosen, after waiting in the queue for room.
    let mut launch = match (args.gpus, sampler.as_mut()) {
        (None, _) => None,
        (Some(_), None) => {
            return Ok(usage_error("--gpus needs the GPUs' readings"));
        }
        (Some(count), Some(s)) => {
            match gpus::choose_and_wait(args, count, s, &runtime_rt, common.interval)? {
                gpus::Outcome::Launch(l) => Some(l),
                gpus::Outcome::Exit(code) => return Ok(code),
            }
        }
    };
    let started = Instant::now();
    let run_id = format!(
        "{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let mut child = match Command::new(program)
        .args(rest)
        .env("PYTHONPATH", python_path(&site.0))
        .env("GPUMON_PROBE_DIR", &runtime)
        .env(
            "GPUMON_PROBE_INTERVAL",
            common.interval.as_secs_f64().to_string(),
        )
        .env("GPUMON_RUN_ID", &run_id)
        .envs(args.batch.map(|n| ("GPUMON_BATCH", n.to_string())))
        .env("GPUMON_STEP_MARKER", &args.step_marker)
        .envs(launch.as_ref().into_iter().flat_map(|l| {
            [
                ("CUDA_DEVICE_ORDER", "PCI_BUS_ID".to_owned()),
                ("CUDA_VISIBLE_DEVICES", l.ids.clone()),
            ]
        }))
        .envs(
            snapshots
                .as_ref()
                .map(|dir| ("GPUMON_SNAPSHOT", dir.join(&stem))),
        )
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gpumon: cannot run '{}': {e}", program.to_string_lossy());
            let code = if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Ok(ExitCode::from(code));
        }
    };
    let child_pid = child.id();
    let reading = Arc::new(std::sync::Mutex::new(Some(Reading::default())));
    let (relayed_tx, relay_done) = std::sync::mpsc::channel();
    if let Some(e) = child.stderr.take() {
        let reading = Arc::clone(&reading);
        std::thread::spawn(move || relay(e, reading, relayed_tx));
    }
    let mut announced = false;
    let mut told: BTreeSet<(u32, u32)> = BTreeSet::new();
    let mut sited: BTreeSet<(u32, u32)> = BTreeSet::new();
    let mut trace = Trace {
        job: Job {
            run_id,
            root: child_pid,
            descends: RefCell::new(HashMap::new()),
        },
        samples: VecDeque::with_capacity(KEEP),
        peaks: BTreeMap::new(),
    };

    let status = runtime_rt.block_on(async {
        let (_interval_tx, interval_rx) = watch::channel(common.interval);
        let (mut samples, task) = match sampler {
            Some(s) => {
                let (rx, task) = sampler::spawn(s, interval_rx);
                (Some(rx), Some(task))
            }
            None => (None, None),
        };
        let mut waiter = tokio::task::spawn_blocking(move || child.wait());
        let mut int = signal(SignalKind::interrupt())?;
        let mut quit = signal(SignalKind::quit())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut hup = signal(SignalKind::hangup())?;
        let mut usr1 = signal(SignalKind::user_defined1())?;
        let mut usr2 = signal(SignalKind::user_defined2())?;
        let forward = |sig: i32| {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(child_pid as i32, sig) };
        };
        loop {
            tokio::select! {
                status = &mut waiter => {
                    if let Some(t) = task { t.abort(); }
                    return anyhow::Ok(status??);
                }
                Some(sample) = async { match samples.as_mut() { Some(rx) => rx.recv().await, None => std::future::pending().await } } => {
                    if let Some(w) = log.as_mut() {
                        let _ = w.write(&trace.only_job(&sample));
                    }
                    if let Some(r) = recorder.as_mut() {
                        if let Err(e) = r.append(&sample) {
                            eprintln!("gpumon: recording stopped: {e}");
                            recorder = None;
                        }
                    }
                    if let Some(l) = launch.as_mut() {
                        l.update(&sample, |p| trace.job.owns(p));
                    }
                    trace.record(sample);
                    // Growth step after step: said once per process and GPU as soon as found.
                    for (gpu, peak) in &trace.peaks {
                        for (pid, (g, marker)) in &peak.growth {
                            if told.insert((*gpu, *pid)) {
                                // Ask the probe where it comes from.
                                ask_sites(&runtime, *pid, g.since_step);
                                if !args.quiet {
                                    eprintln!("gpumon: pid {pid} on GPU {gpu}: {}", growth_line(g, marker.as_deref()));
                                }
                            }
                            if let Some(h) = peak.sites.get(pid) {
                                if sited.insert((*gpu, *pid)) && !args.quiet {
                                    let mut text = String::new();
                                    sites_lines(&mut text, h, "gpumon:   ");
                                    eprint!("{text}");
                                }
                            }
                        }
                    }
                    // --batch: said once as soon as it is measured, and again in the summary.
                    if args.batch.is_some() && !announced {
                        if let Some((gpu, f)) = trace.peaks.iter().find_map(|(g, p)| Some((g, p.batch?))) {
                            announced = true;
                            if !args.quiet {
                                eprintln!(
                                    "gpumon: batch {} measured on GPU {gpu}: {} a sample, largest batch that fits {} (an extrapolation from measured steps)",
                                    f.measure.batch,
                                    fmt_bytes(f.per_sample_bytes),
                                    f.largest.map_or("unknown".to_owned(), |n| format!("about {n}"))
                                );
                            }
                        }
                    }
                }
                _ = int.recv() => if !from_terminal() { forward(libc::SIGINT) },
                _ = quit.recv() => if !from_terminal() { forward(libc::SIGQUIT) },
                _ = term.recv() => forward(libc::SIGTERM),
                _ = hup.recv() => forward(libc::SIGHUP),
                _ = usr1.recv() => forward(libc::SIGUSR1),
                _ = usr2.recv() => forward(libc::SIGUSR2),
            }
        }
    });
    // A tick may still be waiting on a hung GPU: never wait for it on the way out.
    runtime_rt.shutdown_background();
    // Requests for sites a probe did not live to answer.
    for (_, pid) in &told {
        let _ = fs::remove_file(runtime.join(format!("{pid}.sites")));
    }
    let status = status?;
    // CMD has exited: what it wrote is read within DRAIN; a process it left behind that
    // still holds the pipe does not keep `run` waiting (what it writes later is relayed until
    // gpumon exits, and not read for an OOM).
    let _ = relay_done.recv_timeout(DRAIN);
    let relayed = reading
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .map_or(
            Relayed {
                analysis: Analysis::default(),
                oom_at: None,
            },
            Reading::finish,
        );
    drop(site);
    // The recording ends whole (its last segment closed) before the summary names it.
    let recording = recording.filter(|_| {
        recorder
            .take()
            .is_some_and(|mut r| r.close_segment().is_ok())
    });
    if !args.quiet {
        let paint = Paint::for_stderr();
        let mut text = summary(
            &args.command,
            status,
            started.elapsed(),
            &trace,
            &relayed,
            paint,
        );
        if let Some(n) = args.batch {
            batch_summary(&mut text, &trace, n, estimated.as_ref());
        }
        if let Some(l) = &launch {
            // After the first line: where it ran and how long it waited for room.
            let head = text.len() - text.trim_start_matches('\n').len();
            let at = text[head..].find('\n').map_or(text.len(), |i| head + i + 1);
            text.insert_str(
                at,
                &format!(
                    "  ran on {} (CUDA_VISIBLE_DEVICES={}), {}\n",
                    l.chosen
                        .iter()
                        .map(crate::estimate::pick::Candidate::label)
                        .collect::<Vec<_>>()
                        .join(", "),
                    l.ids,
                    if l.waited < Duration::from_millis(100) {
                        "chosen at once".to_owned()
                    } else {
                        format!("chosen after {} in the queue", gpus::took(l.waited))
                    }
                ),
            );
        }
        if let Some(dir) = &snapshots {
            snapshot_summaries(&mut text, dir, &stem, paint);
        }
        if let Some(path) = &recording {
            let _ = writeln!(
                text,
                "  the run's recording: {} (gpumon replay {})",
                path.display(),
                crate::text::shell_words(&[path.as_os_str().to_owned()])
            );
        }
        let _ = io::stderr().write_all(text.as_bytes());
    }
    Ok(ExitCode::from(exit_code(status)))
}

/// Process fields `--log` writes by default.
pub const RUN_LOG_FIELDS: &str = "timestamp,gpu_index,pid,used_memory,process.allocated,\
process.reserved,process.cached,process.non_framework,cpu_percent,host_memory";
