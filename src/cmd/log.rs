//! `gpumon log`: one record per GPU (or per process) every interval, to stdout or a file.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use tokio::sync::watch;

use crate::cli::{Common, LogArgs};
use crate::collect::{check_gpus, open_sampler, sampler, Needs};
use crate::console::{shutdown_signal, usage_error};
use crate::store::logfile::{Expect, LogFile};
use crate::view::log::{Columns, Format, LogWriter};

pub fn run(common: &Common, args: &LogArgs) -> anyhow::Result<ExitCode> {
    let columns = match Columns::parse(args.fields.as_deref(), args.processes) {
        Ok(c) => c,
        Err(e) => return Ok(usage_error(e)),
    };
    let format = args
        .format
        .unwrap_or(if io::stdout().is_terminal() && args.output.is_none() {
            Format::Table
        } else {
            Format::Csv
        });
    // Unbuffered here: the log writer gathers each tick's records and writes them at once.
    // A file is kept as a daemon keeps its log (store::logfile): reopened when rotated or on
    // SIGHUP, never appended to under another header or onto a record cut short.
    let mut reopen = None;
    let (out, header): (Box<dyn Write + Send>, bool) = match &args.output {
        Some(path) => {
            let expect = Expect::new(format, &columns.names());
            let (file, flag) = match LogFile::open(path, expect) {
                Ok(f) => f,
                Err(e) => return Ok(usage_error(e)),
            };
            reopen = Some(flag);
            let header = file.needs_header();
            (Box::new(file), header)
        }
        None => (Box::new(io::stdout()), true),
    };
    // Per GPU, the process lists give processes.count and memory.unattributed; the host
    // facts and probe reports only feed per-process records, the per-process utilisation
    // only its two fields.
    let needs = Needs {
        processes: true,
        host: args.processes,
        process_utilization: columns.read_process_utilization(),
        system: false,
    };
    let mut writer = LogWriter::new(out, format, columns, header);
    if let Some(path) = &args.replay {
        return replay(common, args, path, &mut writer);
    }
    let mut sampler = match open_sampler(&common.collect(), needs) {
        Ok(s) => s,
        Err(e) => return Ok(usage_error(e)),
    };
    if let Err(e) = check_gpus(&common.collect(), &mut sampler) {
        return Ok(usage_error(e));
    }
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
        let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
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
                // logrotate's postrotate: reopen the file. Writing to standard output, a
                // hangup ends the log as the end of the terminal does.
                _ = hangup.recv() => match &reopen {
                    Some(flag) => flag.store(true, std::sync::atomic::Ordering::SeqCst),
                    None => break,
                },
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

/// `log --replay FILE`: the records of a recording's samples, as fast as they can be written.
fn replay(
    common: &Common,
    args: &LogArgs,
    path: &std::path::Path,
    writer: &mut LogWriter<Box<dyn io::Write + Send>>,
) -> anyhow::Result<ExitCode> {
    let reader = match crate::store::recording::Reader::open(path) {
        Ok(r) => r,
        Err(e) => return Ok(usage_error(e)),
    };
    let gpus = &common.gpu;
    let mut written = 0u64;
    let mut damaged = false;
    for item in reader.samples() {
        let mut sample = match item {
            Ok(s) => s,
            // The readable part is written; what is damaged is said once, at its place.
            Err(e) => {
                eprintln!("gpumon: {e}");
                damaged = true;
                continue;
            }
        };
        if !gpus.is_empty() {
            sample.devices.retain(|d| gpus.iter().any(|g| d.matches(g)));
        }
        writer.write(&sample)?;
        written += 1;
        if args.count.is_some_and(|n| written >= n) {
            break;
        }
    }
    if written == 0 && damaged {
        eprintln!(
            "gpumon: {}: no sample could be read",
            crate::text::escape(&path.display().to_string())
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
