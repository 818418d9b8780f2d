//! Top level: opens the source and runs the chosen view. `main` only maps the result to an
//! exit code.

use std::fs::OpenOptions;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::CommandFactory;
use tokio::sync::watch;

use crate::cli::{Cli, Command, Common, Deferred, EstimateArgs, ExplainArgs, LogArgs, OnceArgs};
use crate::output::log::{Columns, Format, LogWriter};
use crate::output::{is_broken_pipe, once, Paint};
use crate::sampler::{self, Filter, Sampler};
use crate::source::nvml::NvmlSource;
use crate::source::simulated::Simulated;
use crate::source::{OpenError, Opened, Opening};
use crate::tui::Start;

/// Exit code for usage errors and a missing driver.
pub const EXIT_USAGE: u8 = 2;

/// How long once, log and run wait for NVML to initialise without --timeout: a driver
/// without persistence mode can take seconds to start, which is slow, not broken.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens the source the flags name. This can block for as long as the driver does: see
/// [`start_opening`].
pub fn open_source(common: &Common) -> Result<Opened, OpenError> {
    if common.demo {
        return Ok(Simulated::demo()?.open());
    }
    if let Some(path) = &common.scenario {
        return Ok(Simulated::from_file(&path.to_string_lossy())?.open());
    }
    NvmlSource::open(common.nvml_lib.as_deref())
}

/// Opens the source on a thread of its own, so a view can wait for it with a deadline.
pub fn start_opening(common: &Common) -> Opening {
    let common = common.clone();
    Opening::start(move || open_source(&common))
}

/// Opens the source, waiting no longer than --timeout (or [`INIT_TIMEOUT`]).
pub fn open_within_timeout(common: &Common) -> Result<Opened, OpenError> {
    start_opening(common).wait(common.timeout.unwrap_or(INIT_TIMEOUT))
}

/// A sampler over `source` with the deadline the flags give, for a view that shows
/// `processes`, their `host` facts and their `process_utilization` (SM and memory-bandwidth
/// shares); it reads nothing more.
pub fn new_sampler(
    common: &Common,
    source: Opened,
    processes: bool,
    host: bool,
    process_utilization: bool,
) -> Sampler {
    let sampler = Sampler::new(
        source,
        Filter {
            gpus: common.gpu.clone(),
            processes,
            host,
            process_utilization,
        },
    )
    .with_timeout(common.timeout)
    .with_interval(common.interval);
    if let Some(w) = &sampler.probe_warning {
        eprintln!("gpumon: {w}");
    }
    sampler
}

/// Runs gpumon; errors that reach here are printed by `main`.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let result = match cli.command {
        Some(Command::Once(Deferred(args))) => run_once(&cli.common, &args),
        Some(Command::Log(Deferred(args))) => run_log(&cli.common, &args),
        Some(Command::Explain(Deferred(args))) => run_explain(&args),
        Some(Command::Run(Deferred(args))) => crate::run::run(&cli.common, &args),
        Some(Command::Serve(Deferred(args))) => crate::serve::run(&cli.common, &args),
        Some(Command::Estimate(Deferred(args))) => run_estimate(&cli.common, &args),
        Some(Command::Completions { shell }) => print_completions(shell),
        Some(Command::Man) => print_man(),
        None if io::stdout().is_terminal() && io::stdin().is_terminal() => {
            run_dashboard(&cli.common)
        }
        None => run_once(&cli.common, &OnceArgs::default()),
    };
    match result {
        Err(e) if is_broken_pipe(&e) => Ok(ExitCode::SUCCESS),
        other => other,
    }
}

/// `gpumon estimate`: the model, the run, each GPU's live free memory, the plan.
fn run_estimate(common: &Common, args: &EstimateArgs) -> anyhow::Result<ExitCode> {
    let (shape, on_disk, run) = match crate::estimate::inputs(args) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("gpumon: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    // The GPUs as they are now: free memory from one sample, no process lists.
    let gpus = match open_within_timeout(common) {
        Ok(source) => {
            let mut sampler = new_sampler(common, source, false, false, false);
            let sample = sampler.tick();
            drop(sampler);
            Ok(sample
                .devices
                .into_iter()
                .map(|d| crate::estimate::GpuFree {
                    index: d.index,
                    uuid: d.uuid,
                    name: d.name,
                    free_bytes: d.memory.free_bytes,
                })
                .collect())
        }
        Err(e) => Err(e.to_string()),
    };
    let report = crate::estimate::report(shape, on_disk, run, gpus);
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(crate::estimate::render(&report).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The shell's completion script, generated from the command-line definitions.
fn print_completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    // Generated into memory first: clap_complete panics on a write error (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gpumon", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The man page (roff), generated from the command-line definitions.
fn print_man() -> anyhow::Result<ExitCode> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    let mut out = io::stdout().lock();
    out.write_all(&page)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn sampler(
    common: &Common,
    processes: bool,
    host: bool,
    utilization: bool,
) -> anyhow::Result<Result<Sampler, ExitCode>> {
    match open_within_timeout(common) {
        Ok(source) => Ok(Ok(new_sampler(
            common,
            source,
            processes,
            host,
            utilization,
        ))),
        Err(e) => {
            eprintln!("gpumon: {e}");
            Ok(Err(ExitCode::from(EXIT_USAGE)))
        }
    }
}

/// How long the dashboard waits for the driver before it opens its screen: a missing driver
/// fails at once and is better said on the plain terminal.
const DASHBOARD_OPEN_WAIT: Duration = Duration::from_millis(300);

fn run_dashboard(common: &Common) -> anyhow::Result<ExitCode> {
    let opening = start_opening(common);
    let start = match opening.wait_a_little(DASHBOARD_OPEN_WAIT) {
        Ok(Some(source)) => {
            crate::resident::release_start_up_pages();
            Start::Ready(Box::new(new_sampler(common, source, true, true, true)))
        }
        Ok(None) => {
            let common = common.clone();
            Start::Opening(
                opening,
                Box::new(move |source| new_sampler(&common, source, true, true, true)),
            )
        }
        Err(e) => {
            eprintln!("gpumon: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    match crate::tui::run(start, common.interval, common.history)? {
        Some(e) => {
            eprintln!("gpumon: {e}");
            Ok(ExitCode::from(EXIT_USAGE))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

fn run_once(common: &Common, args: &OnceArgs) -> anyhow::Result<ExitCode> {
    let processes = !args.no_processes;
    let mut sampler = match sampler(common, processes, processes, processes)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    // One reading per device, within the deadline: a hung GPU is reported as stalled.
    let sample = sampler.tick();
    // The process ends once the sample is written. Its idle device reader ends meanwhile
    // (left to the exit, it would make the exit longer); joining it and shutting the library
    // down (0.3-0.5 ms of a 10 ms run) would change nothing the kernel does not do at exit
    // anyway, and a reader stuck in the driver is never joined.
    sampler.dismiss_readers();
    std::mem::forget(sampler);
    // One write per 64 KiB, not one per line.
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &once::to_json(&sample))?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(once::render(&sample, Paint::for_stdout()).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn run_log(common: &Common, args: &LogArgs) -> anyhow::Result<ExitCode> {
    let columns = match Columns::parse(args.fields.as_deref(), args.processes) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gpumon: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let format = args
        .format
        .unwrap_or(if io::stdout().is_terminal() && args.output.is_none() {
            Format::Table
        } else {
            Format::Csv
        });
    // Unbuffered here: the log writer gathers each tick's records and writes them at once.
    let out: Box<dyn Write + Send> = match &args.output {
        Some(path) => Box::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open {} for appending", path.display()))?,
        ),
        None => Box::new(io::stdout()),
    };
    let header = match &args.output {
        Some(path) => std::fs::metadata(path)
            .map(|m| m.len() == 0)
            .unwrap_or(true),
        None => true,
    };
    let utilization = columns.read_process_utilization();
    let mut writer = LogWriter::new(out, format, columns, header);
    // Per GPU, the process lists give processes.count and memory.unattributed; the host
    // facts and probe reports only feed per-process records, the per-process utilisation
    // only its two fields.
    let sampler = match sampler(common, true, args.processes, utilization)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    crate::resident::release_start_up_pages();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()?;
    let result = runtime.block_on(async move {
        let (_interval_tx, interval_rx) = watch::channel(common.interval);
        let (mut samples, task) = sampler::spawn(sampler, interval_rx);
        let mut written = 0u64;
        let stop = shutdown_signal();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                sample = samples.recv() => {
                    let Some(sample) = sample else { break };
                    writer.write(&sample)?;
                    written += 1;
                    if args.count.is_some_and(|n| written >= n) {
                        break;
                    }
                }
                _ = &mut stop => break,
            }
        }
        drop(samples);
        task.abort();
        Ok(ExitCode::SUCCESS)
    });
    // A tick may still be waiting on a hung GPU: never wait for it on the way out.
    runtime.shutdown_background();
    result
}

/// Calls `f` with each line of `reader`, reading in fixed chunks: a line longer than
/// [`MAX_LINE`](crate::oom::scan::MAX_LINE) bytes is cut there, so memory stays bounded
/// whatever the input.
pub fn for_each_line(mut reader: impl std::io::Read, mut f: impl FnMut(&str)) -> io::Result<()> {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut split = crate::oom::scan::LineSplitter::default();
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => split.feed(&chunk[..n], &mut f),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    split.finish(f);
    Ok(())
}

fn run_explain(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    use crate::oom::{render, scan::Scanner};
    let sizing = match args
        .estimate
        .as_deref()
        .map(crate::estimate::inputs_from_line)
    {
        None => None,
        Some(Ok((shape, _, run))) => Some(crate::oom::diagnose::Sizing { shape, run }),
        Some(Err(e)) => {
            eprintln!("gpumon: --estimate: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let mut scanner = Scanner::new();
    let read = match args.file.as_deref() {
        Some(p) if p != std::path::Path::new("-") => match std::fs::File::open(p) {
            Ok(file) => for_each_line(file, |l| scanner.push_line(l)),
            Err(e) => {
                eprintln!("gpumon: cannot read {}: {e}", p.display());
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        },
        _ => for_each_line(io::stdin().lock(), |l| scanner.push_line(l)),
    };
    if let Err(e) = read {
        eprintln!("gpumon: cannot read the input: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let analysis = scanner.finish();
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &render::to_json_with(&analysis, sizing.as_ref()))?;
        out.write_all(b"\n")?;
    } else {
        // Wrapped to the terminal (or COLUMNS, or 100), with hanging indents.
        let layout = render::Layout {
            width: Some(render::terminal_width()),
            sizing,
            ..render::Layout::default()
        };
        if analysis.main().is_some() {
            out.write_all(render::render_with(&analysis, Paint::for_stdout(), &layout).as_bytes())?;
        } else {
            eprint!(
                "gpumon: {}",
                render::render_with(&analysis, Paint(false), &layout)
            );
        }
    }
    out.flush()?;
    Ok(if analysis.main().is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
