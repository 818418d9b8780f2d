//! `gpumon run -- CMD ARGS…`: runs CMD with the in-process probe loaded (the sitecustomize
//! pattern), samples the GPUs while it runs, watches its stderr for an OOM, and prints a
//! summary when it ends.
//!
//! CMD's stdin and stdout are its own; its stderr is relayed byte for byte (gpumon reads it to
//! find OOM messages). Its exit status becomes gpumon's (128 + N when killed by signal N).
//! SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are forwarded; SIGINT and SIGQUIT are forwarded unless
//! they came from the terminal, which already delivered them to CMD.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::{self, IsTerminal, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use crate::cli::{Common, RunArgs};
mod gpus;

use crate::collect::probe;
use crate::collect::sampler;
use crate::collect::{new_sampler, open_within_timeout, Needs};
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::{Device, Process, Sample};
use crate::oom::render::render_oom_repeated;
use crate::oom::scan::{LineSplitter, Scanner};
use crate::oom::Analysis;
use crate::runtime::EXIT_USAGE;
use crate::text::Paint;
use crate::units::fmt_age;
use crate::units::fmt_bytes;
use crate::view::log::{Columns, LogWriter};
use crate::view::logfile::{Expect, LogFile};

/// Samples kept for the summary's "how it grew" lines and the last minute's timeline: the
/// last 90 s of them, at most this many.
const KEEP: usize = 4096;
const KEEP_FOR: Duration = Duration::from_secs(90);
/// Samples shown in the growth line.
const GROWTH: usize = 10;

/// The GPU processes of this run: CMD itself, anything the probe tagged with our run id, and
/// any descendant of CMD (by its /proc parent chain).
struct Job {
    run_id: String,
    root: u32,
    /// Parentage cannot change for a live pid: walk /proc once per pid, not once per sample.
    descends: RefCell<HashMap<u32, bool>>,
}

impl Job {
    fn owns(&self, p: &Process) -> bool {
        p.pid == self.root
            || p.allocator.as_ref().and_then(|a| a.run_id.as_deref()) == Some(self.run_id.as_str())
            || *self
                .descends
                .borrow_mut()
                .entry(p.pid)
                .or_insert_with(|| descends_from(p.pid, self.root))
    }
}

fn descends_from(pid: u32, root: u32) -> bool {
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

/// Peaks per GPU over the whole run.
#[derive(Default)]
struct GpuPeak {
    name: Option<String>,
    process_bytes: u64,
    allocated: u64,
    reserved: u64,
    pids: BTreeSet<u32>,
    framework: Option<String>,
    /// `--batch`: the largest batch that fits, from the newest sample with the probe's measure.
    batch: Option<crate::estimate::batch::BatchFit>,
    /// Memory growing step after step, per pid: the newest fit, and what marked the steps.
    growth: BTreeMap<u32, (crate::model::StepGrowth, Option<String>)>,
    /// Where what is held across steps was allocated, per pid.
    sites: BTreeMap<u32, crate::model::HeldSites>,
    /// The driver's side: the highest used memory of the whole GPU read between samples while
    /// the run's processes were on it (`--peak-rate`; every process on the GPU, not only the
    /// run's); `None` where not measured.
    gpu_used_peak: Option<u64>,
}

/// The job's room on `d` for `--batch` (the MIG instance its processes run in, with MIG on),
/// and the probe's measure, from one sample; `None` until the probe has measured.
fn batch_fit(d: &Device, mine: &[&Process]) -> Option<crate::estimate::batch::BatchFit> {
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

struct Trace {
    job: Job,
    samples: VecDeque<Arc<Sample>>,
    peaks: BTreeMap<u32, GpuPeak>,
}

impl Trace {
    fn record(&mut self, sample: Arc<Sample>) {
        // Other users' commands reach the summary: the one escaping rule, once per sample.
        let sample = match sample.escaped() {
            std::borrow::Cow::Borrowed(_) => sample,
            std::borrow::Cow::Owned(s) => Arc::new(s),
        };
        for d in &sample.devices {
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
                peak.batch = Some(fit);
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
    fn only_job(&self, sample: &Sample) -> Sample {
        let mut s = sample.clone();
        for d in &mut s.devices {
            d.processes.retain(|p| self.job.owns(p));
        }
        s
    }
}

/// What the stderr relay found.
struct Relayed {
    analysis: Analysis,
    /// When the last OOM's first line went by.
    oom_at: Option<SystemTime>,
}

/// What the relay has read of CMD's stderr so far, shared with `run`: when CMD exits, `run`
/// takes it without waiting for the pipe's end, which a backgrounded grandchild may hold
/// open for as long as it lives.
#[derive(Default)]
struct Reading {
    scanner: Scanner,
    split: LineSplitter,
    oom_at: Option<SystemTime>,
}

impl Reading {
    fn feed(&mut self, bytes: &[u8]) {
        let Reading {
            scanner,
            split,
            oom_at,
        } = self;
        split.feed(bytes, |line| {
            if crate::oom::scan::is_trigger(line) {
                *oom_at = Some(SystemTime::now());
            }
            scanner.push_line(line);
        });
    }

    /// What was found, the last line included even without its newline.
    fn finish(self) -> Relayed {
        let Reading {
            mut scanner,
            mut split,
            mut oom_at,
        } = self;
        split.finish(|line| {
            if crate::oom::scan::is_trigger(line) {
                oom_at = Some(SystemTime::now());
            }
            scanner.push_line(line);
        });
        Relayed {
            analysis: scanner.finish(),
            oom_at,
        }
    }
}

/// How long `run` waits, once CMD has exited, for its stderr to be read to the end: what CMD
/// wrote is in the pipe already; only a process CMD left behind keeps the pipe open longer.
const DRAIN: Duration = Duration::from_millis(200);

/// Copies CMD's stderr to ours unchanged, feeding what it reads to `reading`; tells `done`
/// at the end of the pipe.
fn relay(
    mut from: impl Read,
    reading: Arc<std::sync::Mutex<Option<Reading>>>,
    done: std::sync::mpsc::Sender<()>,
) {
    let mut to = io::stderr();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // The user sees the bytes first; a closed stderr of ours must not stop the job.
        let _ = to.write_all(&chunk[..n]);
        let _ = to.flush();
        if let Some(r) = reading.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            r.feed(&chunk[..n]);
        }
    }
    let _ = done.send(());
}

/// The directory holding our sitecustomize.py, removed when dropped.
struct SiteDir(PathBuf);

impl SiteDir {
    fn create(runtime: &Path) -> io::Result<SiteDir> {
        let dir = runtime.join(format!("site-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join("sitecustomize.py"))?;
        f.write_all(probe::SITECUSTOMIZE.as_bytes())?;
        Ok(SiteDir(dir))
    }
}

impl Drop for SiteDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn python_path(site: &Path) -> OsString {
    let mut value = OsString::from(site.as_os_str());
    if let Some(prev) = std::env::var_os("PYTHONPATH").filter(|v| !v.is_empty()) {
        value.push(":");
        value.push(prev);
    }
    value
}

/// Whether a SIGINT/SIGQUIT we got was the terminal's, which the child got as well.
fn from_terminal() -> bool {
    if !io::stdin().is_terminal() {
        return false;
    }
    // SAFETY: plain queries of our own process group and the terminal's foreground group.
    unsafe { libc::tcgetpgrp(0) == libc::getpgrp() }
}

fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => (128 + sig) as u8,
        _ => 1,
    }
}

pub fn run(common: &Common, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let Some((program, rest)) = args.command.split_first() else {
        eprintln!("gpumon: run needs a command: gpumon run -- python train.py");
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    if args.estimate.is_some() && args.gpus.is_none() && args.batch.is_none() {
        eprintln!(
            "gpumon: run --estimate goes with --gpus (the memory to wait for) or --batch (measured against estimated)"
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    // --batch with --estimate: the estimate's parts, beside what the steps measure.
    let estimated = match (&args.estimate, args.batch) {
        (Some(flags), Some(_)) => match crate::cli::estimate_line(flags) {
            Ok((shape, _, run)) => Some(crate::estimate::model::estimate(&shape, &run)),
            Err(e) => {
                eprintln!("gpumon: --estimate: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        },
        _ => None,
    };
    let runtime = args.probe_dir.clone().unwrap_or_else(probe::default_dir);
    if let Err(e) = probe::ensure_dir(&runtime) {
        eprintln!("gpumon: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let site = match SiteDir::create(&runtime) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "gpumon: cannot write the probe into {}: {e}",
                runtime.display()
            );
            return Ok(ExitCode::from(EXIT_USAGE));
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
        let limits = crate::collect::recording::Limits {
            max_size: RUN_RECORDING_MAX,
            keep: RUNS_KEPT,
        };
        let opened = match &args.record {
            // The user's own file: continued as `record -o` continues one.
            Some(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    let _ = std::fs::create_dir_all(dir);
                }
                crate::collect::recording::Writer::open(path, limits)
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
                        crate::collect::recording::Writer::create_new(&path, limits)
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
            eprintln!(
                "gpumon: --snapshot: {}",
                crate::text::escape(&e.to_string())
            );
            return Ok(ExitCode::from(EXIT_USAGE));
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
            eprintln!("gpumon: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
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
            eprintln!("gpumon: --gpus needs the GPUs' readings");
            return Ok(ExitCode::from(EXIT_USAGE));
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
        let paint = Paint(io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none());
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

/// A run's own recording: at most this much.
const RUN_RECORDING_MAX: u64 = 256 << 20;
/// Runs' recordings older than this are removed when the next run starts.
const RUNS_KEPT: Duration = Duration::from_secs(7 * 86400);

/// `$XDG_STATE_HOME/gpumon/runs` (`~/.local/state` without it); with neither HOME nor
/// XDG_STATE_HOME (some services, `env -i`), `runs` in the probe's per-user directory
/// (`$XDG_RUNTIME_DIR/gpumon`, else `$TMPDIR/gpumon-<uid>`), never a directory other users
/// share: a shared `$TMPDIR/gpumon/runs` let anyone plant a symlink at the next run's name.
fn runs_dir() -> PathBuf {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })
        .map_or_else(
            || probe::default_dir().join("runs"),
            |b| b.join("gpumon/runs"),
        )
}

/// Creates (0700) and checks the runs directory and the one above it as the probe directory is
/// checked ([`probe::ensure_dir`]: a real directory, not a symlink, ours, not writable by group
/// or others); what is above those is the user's (their home) or the system's.
fn ensure_runs_dir(dir: &Path) -> Result<(), probe::DirError> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        probe::ensure_dir(parent)?;
    }
    probe::ensure_dir(dir)
}

/// `run-<date>-<pid>`: what this run's files in [`runs_dir`] start with.
fn run_stem() -> String {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "");
    format!("run-{stamp}-{}", std::process::id())
}

/// Removes runs' recordings and snapshots older than [`RUNS_KEPT`] from `dir`.
fn prune_runs(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let ours = [".rec.zst", ".snapshot.pickle", ".snapshot.json"]
            .iter()
            .any(|x| name.contains(x));
        if !name.starts_with("run-") || !ours {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > RUNS_KEPT);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The snapshots this run's processes saved, each summarised.
fn snapshot_summaries(out: &mut String, dir: &Path, stem: &str, paint: Paint) {
    use crate::oom::snapshot;
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid = name
                .to_str()?
                .strip_prefix(stem)?
                .strip_prefix('.')?
                .strip_suffix(".snapshot.pickle")?
                .parse()
                .ok()?;
            Some((pid, e.path()))
        })
        .collect();
    found.sort();
    if found.is_empty() {
        let _ = writeln!(
            out,
            "  no memory snapshot was saved: no process of the run hit an out-of-memory error in \
             PyTorch's allocator (or its PyTorch is older than 2.0)"
        );
        return;
    }
    for (pid, path) in found {
        let (sidecar, sidecar_error) = match snapshot::Sidecar::beside(&path) {
            Ok(s) => (s, None),
            Err(e) => (None, Some(e)),
        };
        let history_off = sidecar.as_ref().is_some_and(|m| m.history.is_none());
        let _ = writeln!(
            out,
            "{}",
            paint.bold(&format!("Memory snapshot at the OOM (pid {pid}):"))
        );
        let _ = writeln!(
            out,
            "  {} (open it in pytorch.org/memory_viz){}",
            crate::text::escape(&path.display().to_string()),
            match sidecar.as_ref().map(|m| (m.seconds, m.bytes)) {
                Some((Some(s), Some(b))) => format!("; taken in {s:.2} s, {}", fmt_bytes(b)),
                _ => String::new(),
            }
        );
        if history_off {
            let _ = writeln!(
                out,
                "  (PyTorch's memory history could not be turned on: no allocation stacks)"
            );
        }
        if let Some(e) = sidecar_error {
            let _ = writeln!(out, "  {}", crate::text::escape(&e));
        }
        match snapshot::read_file(&path, sidecar.as_ref()) {
            Ok(s) => out.push_str(&snapshot::render(
                &s,
                "  ",
                Some(crate::runtime::terminal_width()),
            )),
            Err(e) => {
                let _ = writeln!(out, "  {}", crate::text::escape(&e.to_string()));
            }
        }
    }
}

/// Process fields `--log` writes by default.
pub const RUN_LOG_FIELDS: &str = "timestamp,gpu_index,pid,used_memory,process.allocated,\
process.reserved,process.cached,process.non_framework,cpu_percent,host_memory";

/// One process's figures in one sample, for the growth line.
struct Figures {
    allocated: Option<u64>,
    reserved: Option<u64>,
    process: Option<u64>,
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => "exited successfully".into(),
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "ended".into(),
    }
}

/// The job's process on the GPU that matters most in `sample`: the one the OOM names (when
/// its index is the physical one), else the largest allocation.
fn focus<'a>(sample: &'a Sample, job: &Job, gpu: Option<u32>) -> Option<(&'a Device, &'a Process)> {
    let mut best: Option<(&Device, &Process)> = None;
    for d in &sample.devices {
        for p in d.processes.iter().filter(|p| job.owns(p)) {
            if gpu == Some(d.index) && p.allocator.is_some() {
                return Some((d, p));
            }
            let size = |p: &Process| {
                p.allocator
                    .as_ref()
                    .and_then(|a| a.allocated_bytes)
                    .or(p.gpu_memory_bytes)
                    .unwrap_or(0)
            };
            if best.is_none_or(|(_, b)| size(p) > size(b)) {
                best = Some((d, p));
            }
        }
    }
    best
}

fn split_line(d: &Device, p: &Process) -> String {
    let Some(b) = Breakdown::process(&d.memory, p.memory()) else {
        return format!("pid {} on GPU {}: memory N/A", p.pid, d.index);
    };
    let parts: Vec<String> = b
        .parts
        .iter()
        .filter(|x| x.kind != PartKind::Unaccounted)
        .filter_map(|x| {
            x.bytes
                .map(|v| format!("{} {}", x.kind.label(), fmt_bytes(v)))
        })
        .collect();
    format!("pid {} on GPU {}: {}", p.pid, d.index, parts.join(", "))
}

/// The growth as `run` says it, with what marked the steps.
fn growth_line(g: &crate::model::StepGrowth, marker: Option<&str>) -> String {
    let by = match marker {
        Some("optimizer") => " (steps marked by the optimizer's step)".to_owned(),
        Some("backward") => " (steps marked by backward())".to_owned(),
        Some(m) => format!(" (steps marked by {m})"),
        None => String::new(),
    };
    format!("{}{by}", g.describe())
}

/// Asks the probe of `pid` where memory held across steps comes from (`<dir>/<pid>.sites`,
/// holding the step the growth dates from); the probe answers in its report and removes it.
fn ask_sites(dir: &Path, pid: u32, since: u64) {
    let path = dir.join(format!("{pid}.sites"));
    let _ = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(since.to_string().as_bytes()));
}

/// "held from train.py:42 in train_loop (3,120 blocks, 11.9 MiB a step): <remedy>" per site,
/// then how it was found and what that cost.
fn sites_lines(out: &mut String, h: &crate::model::HeldSites, indent: &str) {
    if h.sites.is_empty() {
        let _ = writeln!(
            out,
            "{indent}no block allocated in step {} was still held {} steps later (the growth may \
             come from the cache, or from before the history began)",
            h.step, h.held_steps
        );
    }
    for s in &h.sites {
        let _ = writeln!(
            out,
            "{indent}held from {} ({} block{}, {} a step): {}",
            s.label(),
            group_digits(s.blocks),
            if s.blocks == 1 { "" } else { "s" },
            fmt_bytes(s.bytes),
            crate::model::growth::remedy(s)
        );
    }
    let _ = writeln!(
        out,
        "{indent}(blocks allocated in step {} and still live {} steps later, from PyTorch's memory \
         history{}; its 3 snapshots took {:.3} s)",
        h.step,
        h.held_steps,
        if h.own_history {
            ", turned on for those steps"
        } else {
            ""
        },
        h.snapshot_micros as f64 / 1e6
    );
}

/// 2900 as "2,900".
fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `--batch`: the largest batch that fits each GPU the job used, from the measured steps, and
/// with `--estimate` the measured figures beside the estimated ones.
fn batch_summary(
    out: &mut String,
    trace: &Trace,
    batch: u32,
    estimated: Option<&crate::estimate::model::Parts>,
) {
    // Inserted before an OOM's report, if any: after the per-GPU lines.
    let mut text = String::new();
    let fits: Vec<(u32, crate::estimate::batch::BatchFit)> = trace
        .peaks
        .iter()
        .filter_map(|(gpu, p)| Some((*gpu, p.batch?)))
        .collect();
    if fits.is_empty() {
        let _ = writeln!(
            text,
            "  --batch {batch}: not measured (the probe measures once the job has run 4 optimizer \
             steps, or 3 forward passes without gradients, with PyTorch 2.0 or later)"
        );
    }
    for (gpu, f) in &fits {
        let m = &f.measure;
        let what = if m.training {
            "optimizer steps"
        } else {
            "forward passes"
        };
        let margin = format!(
            "{:.0}% {}",
            f.margin * 100.0,
            if f.margin_measured {
                "(measured: peak reserved over peak allocated)"
            } else {
                "(not measured)"
            }
        );
        let largest = match f.largest {
            Some(n) => format!("about {n}"),
            None => "no figure (a step's peak did not exceed what it holds between steps)".into(),
        };
        let _ = writeln!(
            text,
            "  largest batch on GPU {gpu}: {largest}. Measured at batch {} over {} {what}: {} held \
             between steps, {} at a step's peak, {} a sample; {} for PyTorch on this GPU, less a \
             {margin} margin for fragmentation. An extrapolation from measured steps, linear in \
             the batch",
            m.batch,
            m.steps,
            fmt_bytes(m.held_bytes),
            fmt_bytes(m.peak_bytes),
            fmt_bytes(f.per_sample_bytes),
            fmt_bytes(f.room.for_allocator()),
        );
        if let Some(e) = estimated {
            let kept = e.weights_bytes + e.optimizer_bytes.unwrap_or(0);
            let step_est = e.activations_bytes.map_or("—".to_owned(), fmt_bytes);
            let _ = writeln!(
                text,
                "    measured against `estimate`: held {} vs weights + optimizer {} (gradients {} \
                 more while they live); a step adds {} vs activations {step_est}; peak {} vs {} \
                 (the estimate's total less its {} allowance for context and fragmentation)",
                fmt_bytes(m.held_bytes),
                fmt_bytes(kept),
                e.gradients_bytes.map_or("—".to_owned(), fmt_bytes),
                fmt_bytes(m.peak_bytes.saturating_sub(m.held_bytes)),
                fmt_bytes(m.peak_bytes),
                fmt_bytes(e.total_bytes.saturating_sub(e.overhead_bytes)),
                fmt_bytes(e.overhead_bytes),
            );
        }
    }
    // After the per-GPU lines, before any OOM report.
    let at = out
        .find("Out of memory in the output:")
        .and_then(|i| out[..i].rfind("\n\n"));
    match at {
        Some(i) => out.insert_str(i + 1, &text),
        None => out.push_str(&text),
    }
}

fn summary(
    command: &[OsString],
    status: ExitStatus,
    elapsed: Duration,
    trace: &Trace,
    relayed: &Relayed,
    paint: Paint,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} `{}` {} after {}",
        paint.bold("gpumon run:"),
        crate::text::shell_words(command),
        describe_status(status),
        fmt_age(elapsed.as_secs())
    );
    if trace.peaks.is_empty() {
        let _ = writeln!(
            out,
            "  no GPU process of this run was seen ({} samples taken)",
            trace.samples.len()
        );
    }
    for (gpu, peak) in &trace.peaks {
        let pids: Vec<String> = peak.pids.iter().map(u32::to_string).collect();
        let mut line = format!(
            "  GPU {gpu} {}: peak memory of the run {} (pid {})",
            peak.name.as_deref().unwrap_or(""),
            fmt_bytes(peak.process_bytes),
            pids.join(", ")
        );
        match &peak.framework {
            Some(fw) => {
                let _ = write!(
                    line,
                    "; {fw} peak allocated {}, peak reserved {}",
                    fmt_bytes(peak.allocated),
                    fmt_bytes(peak.reserved)
                );
            }
            None => line.push_str("; no allocator figures (the probe did not report)"),
        }
        // The driver's side, named as such: it counts every process on the GPU.
        if let Some(g) = peak.gpu_used_peak {
            let _ = write!(
                line,
                "; the whole GPU's used memory peaked at {} (NVML, read between samples, every \
                 process on it)",
                fmt_bytes(g)
            );
        }
        let _ = writeln!(out, "{line}");
        for (pid, (g, marker)) in &peak.growth {
            let _ = writeln!(
                out,
                "  pid {pid} on GPU {gpu}: {}",
                growth_line(g, marker.as_deref())
            );
            if let Some(h) = peak.sites.get(pid) {
                sites_lines(&mut out, h, "    ");
            }
        }
    }
    let Some(oom) = relayed.analysis.main() else {
        return out;
    };
    // Memory that grew step after step leads: the batch did not suddenly become too large.
    let grown: Vec<(u32, u32, &crate::model::StepGrowth)> = trace
        .peaks
        .iter()
        .flat_map(|(gpu, p)| p.growth.iter().map(move |(pid, (g, _))| (*gpu, *pid, g)))
        .collect();
    if !grown.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            paint.bold("Memory grew step after step before the OOM:")
        );
        for (gpu, pid, g) in grown {
            let _ = writeln!(
                out,
                "  pid {pid} on GPU {gpu}: {} had grown {} a step for {} steps (steps {} to {}). \
                 Something each step keeps alive is the likely cause, not the batch size: a \
                 loss summed as a tensor (`total_loss += loss` keeps every step's autograd \
                 history; sum `loss.item()` instead), or outputs, losses or hidden states kept \
                 in a list or dict (keep `t.item()`, or `t.detach().cpu()`: `.detach()` alone \
                 still holds the tensor on the GPU)",
                g.measure,
                fmt_bytes(g.bytes_per_step),
                group_digits(g.last_step.saturating_sub(g.since_step)),
                g.since_step,
                g.last_step,
            );
        }
    }
    let _ = writeln!(out, "\n{}", paint.bold("Out of memory in the output:"));
    let layout = crate::oom::render::Layout {
        width: Some(crate::runtime::terminal_width()),
        ..Default::default()
    };
    render_oom_repeated(
        &mut out,
        oom,
        relayed.analysis.total as usize,
        relayed.analysis.repeats(),
        paint,
        &layout,
    );
    // The live numbers sampled just before the error went by.
    let before: Vec<&Arc<Sample>> = trace
        .samples
        .iter()
        .filter(|s| relayed.oom_at.is_none_or(|t| s.timestamp <= t))
        .collect();
    // A process that exits right after its OOM takes its probe report with it, so the very
    // last sample may have only NVML's total: prefer the last one with the allocator split.
    let with_split = before.iter().rev().find(|s| {
        focus(s, &trace.job, oom.device_index).is_some_and(|(_, p)| p.allocator.is_some())
    });
    let Some(last) = with_split.or(before.last()) else {
        let _ = writeln!(out, "No sample was taken before the error.");
        return out;
    };
    let Some((d, p)) = focus(last, &trace.job, oom.device_index) else {
        let _ = writeln!(
            out,
            "The job had no GPU process in the last sample before the error."
        );
        return out;
    };
    let ago = relayed
        .oom_at
        .and_then(|t| t.duration_since(last.timestamp).ok())
        .map_or(String::new(), |d| {
            format!(", {:.1} s before the error", d.as_secs_f64())
        });
    let _ = writeln!(
        out,
        "{}",
        paint.bold(&format!("Live, in the last sample{ago}:"))
    );
    let _ = writeln!(out, "  {}", split_line(d, p));
    let (said, asked) = (oom.facts.total_bytes, oom.facts.requested_bytes);
    if let Some(v) = crate::model::unified::oom_at_limit(said, asked, d) {
        let width = crate::runtime::terminal_width();
        out.push_str(&crate::view::limit::render(&v, paint, width));
    }
    let series: Vec<Figures> = before
        .iter()
        .rev()
        .take(GROWTH)
        .rev()
        .filter_map(|s| {
            let dev = s.devices.iter().find(|x| x.index == d.index)?;
            let q = dev.processes.iter().find(|q| q.pid == p.pid)?;
            let a = q.allocator.as_ref();
            Some(Figures {
                allocated: a.and_then(|a| a.allocated_bytes),
                reserved: a.and_then(|a| a.reserved_bytes),
                process: q.gpu_memory_bytes,
            })
        })
        .collect();
    if series.len() >= 2 {
        // Each figure from its first known value to its last (the probe may start reporting
        // a few samples in).
        let change = |name: &str, pick: fn(&Figures) -> Option<u64>| {
            let a = series.iter().find_map(pick)?;
            let b = series.iter().rev().find_map(pick)?;
            let sign = if b >= a { "+" } else { "-" };
            Some(format!(
                "{name} {} → {} ({sign}{})",
                fmt_bytes(a),
                fmt_bytes(b),
                fmt_bytes(a.abs_diff(b))
            ))
        };
        let parts: Vec<String> = [
            change("allocated", |x| x.allocated),
            change("reserved", |x| x.reserved),
            change("process", |x| x.process),
        ]
        .into_iter()
        .flatten()
        .collect();
        let _ = writeln!(
            out,
            "  over the last {} samples: {}",
            series.len(),
            parts.join("; ")
        );
    }
    // The last minute on that GPU: the job's course, and what the others did.
    let until = relayed.oom_at.unwrap_or(last.timestamp);
    let minute: Vec<&Sample> = before.iter().map(|s| s.as_ref()).collect();
    let events =
        crate::model::timeline::neighbours(&minute, d.index, &|q| trace.job.owns(q), until);
    let job_course: Vec<u64> = minute
        .iter()
        .filter(|s| {
            until
                .duration_since(s.timestamp)
                .is_ok_and(|a| a <= crate::model::timeline::WINDOW)
        })
        .filter_map(|s| {
            let dev = s.devices.iter().find(|x| x.index == d.index)?;
            let q = dev.processes.iter().find(|q| q.pid == p.pid)?;
            // One measure for the whole curve: the allocator's reserved when the focus sample
            // has it (samples before the probe reported are left out), else NVML's figure.
            if p.allocator.is_some() {
                q.allocator.as_ref().and_then(|a| a.reserved_bytes)
            } else {
                q.gpu_memory_bytes
            }
        })
        .collect();
    let course = crate::model::timeline::course(&job_course, 6);
    if course.is_some() || !events.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            paint.bold(&format!("The last minute on GPU {}:", d.index))
        );
        if let Some(c) = course {
            let what = if p.allocator.is_some() {
                "reserved"
            } else {
                "memory"
            };
            let _ = writeln!(out, "  this job's {what}: {c}");
        }
        if events.is_empty() {
            let _ = writeln!(
                out,
                "  no other process grew, and no memory appeared without an owner"
            );
        }
        for e in &events {
            let _ = writeln!(out, "  {}", e.text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn step_counts_are_grouped_by_thousands() {
        for (n, s) in [
            (0, "0"),
            (999, "999"),
            (2900, "2,900"),
            (1_234_567, "1,234,567"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ] {
            assert_eq!(super::group_digits(n), s);
        }
    }
}
