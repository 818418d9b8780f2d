//! `gpumon once`: one sample of every GPU, as text or JSON, then exit.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::cli::{Common, OnceArgs};
use crate::collect::{open_sampler, Needs};
use crate::console::{text_width, usage_error};
use crate::text::Paint;
use crate::view::once;

pub fn run(common: &Common, args: &OnceArgs) -> anyhow::Result<ExitCode> {
    if !args.remote.is_empty() || args.remote_file.is_some() {
        return fleet(common, args);
    }
    if let Some(url) = &args.prometheus {
        return prometheus(common, args, url);
    }
    if let Some(path) = &args.replay {
        let reader = match crate::store::recording::Reader::open(path) {
            Ok(r) => r,
            Err(e) => return Ok(usage_error(e)),
        };
        let Some((first, last)) = reader.span() else {
            return Ok(usage_error(format!("{} holds no sample", path.display())));
        };
        let at = match args.at.as_deref() {
            Some(t) => match crate::store::recording::resolve_at(t, first, last) {
                Ok(at) => at,
                Err(e) => return Ok(usage_error(format!("--at: {e}"))),
            },
            None => last,
        };
        let Some(mut sample) = reader.at(at) else {
            return Ok(usage_error(reader.unreadable()));
        };
        if args.no_processes {
            for d in &mut sample.devices {
                d.processes.clear();
            }
        }
        return print(common, args, sample);
    }
    let processes = !args.no_processes;
    let needs = Needs {
        processes,
        host: processes,
        process_utilization: processes,
        system: true,
    };
    let mut sampler = match open_sampler(&common.collect(), needs) {
        Ok(s) => s,
        Err(e) => return Ok(usage_error(e)),
    };
    // On a Kubernetes node, the pods' names (the kubelet answers in milliseconds; one that
    // does not within its deadline leaves the pods' UIDs).
    sampler.wait_for_kubelet(crate::collect::kubelet::TIMEOUT);
    // One reading per device, within the deadline: a hung GPU is reported as stalled.
    let sample = sampler.tick();
    if let Some(e) = sampler.unmatched_gpus() {
        return Ok(usage_error(e));
    }
    // The process ends once the sample is written. Its idle device reader ends meanwhile
    // (left to the exit, it would make the exit longer); joining it and shutting the library
    // down (0.3-0.5 ms of a 10 ms run) would change nothing the kernel does not do at exit
    // anyway, and a reader stuck in the driver is never joined.
    sampler.dismiss_readers();
    std::mem::forget(sampler);
    print(common, args, sample)
}

/// Prints `sample` as the flags ask: the report, its JSON, or the rollup by user or owner.
fn print(
    common: &Common,
    args: &OnceArgs,
    sample: crate::model::Sample,
) -> anyhow::Result<ExitCode> {
    // One write per 64 KiB, not one per line.
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if let Some(by) = args.by {
        let by = by.group();
        // Owners' names come from cgroup paths and the kubelet: escaped before they are keys.
        let sample = sample.escaped();
        let mut usage = crate::model::rollup::Usage::new(common.idle_after, common.history);
        usage.record(&sample);
        let rows = usage.rollup(&sample, by);
        if args.json {
            let json = crate::view::by::ByJson {
                schema_version: crate::view::by::SCHEMA_VERSION,
                timestamp: sample.timestamp,
                hostname: sample.hostname.as_deref(),
                by,
                idle_after_s: common.idle_after.as_secs(),
                rows: &rows,
                exited: crate::view::accounting::exited(&sample),
            };
            crate::text::write_json_pretty(&mut out, &json)?;
            out.write_all(b"\n")?;
        } else {
            let width = text_width(80, 40);
            let mut text =
                crate::view::by::render(&rows, by, common.idle_after, Paint::for_stdout(), width);
            crate::view::accounting::append(&mut text, &sample, Paint::for_stdout(), width);
            out.write_all(text.as_bytes())?;
        }
    } else if args.json {
        // The host's queue now: a recorded sample has none.
        if sample.source == "recording" {
            crate::text::write_json_pretty(&mut out, &once::to_json(&sample))?;
        } else {
            let queue = crate::store::queue::read(&crate::store::queue::dir(None));
            crate::text::write_json_pretty(&mut out, &once::to_json_with_queue(&sample, &queue))?;
        }
        out.write_all(b"\n")?;
    } else {
        let width = text_width(80, 40);
        let text = once::render_width(&sample, Paint::for_stdout(), width);
        out.write_all(text.as_bytes())?;
        // Who waits for GPUs here (`gpumon run --gpus … --wait`), live samples only.
        if sample.source != "recording" {
            let queue = crate::store::queue::read(&crate::store::queue::dir(None));
            for (i, part) in once::queue_parts(&queue, crate::store::queue::now())
                .iter()
                .enumerate()
            {
                let head = if i == 0 { "queue " } else { "      " };
                let line: String = format!("{head}{part}").chars().take(width).collect();
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `once --remote`: every node's sample, read at once, each within the deadline. Exit status
/// 0 when every node was read, 1 when some could not be (the others are printed all the same).
fn fleet(common: &Common, args: &OnceArgs) -> anyhow::Result<ExitCode> {
    let nodes = match crate::feed::remote::read_nodes(
        &args.remote,
        args.remote_file.as_deref(),
        args.remote_config.as_deref(),
        common.timeout.unwrap_or(crate::feed::remote::DEADLINE),
    ) {
        Ok(n) => n,
        Err(e) => return Ok(usage_error(e)),
    };
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        let json = crate::view::fleet::FleetJson {
            timestamp: std::time::SystemTime::now(),
            nodes: &nodes,
        };
        crate::text::write_json_pretty(&mut out, &json)?;
        out.write_all(b"\n")?;
    } else {
        let text = crate::view::fleet::render(&nodes, Paint::for_stdout(), text_width(80, 40));
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    Ok(if nodes.iter().all(|n| n.sample.is_some()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `once --prometheus`: the fleet as a Prometheus has it, a summary per node. Exit status 0
/// when every node is up, 1 when some are down, 2 when the Prometheus could not be read.
fn prometheus(common: &Common, args: &OnceArgs, url: &str) -> anyhow::Result<ExitCode> {
    use crate::feed::prometheus;
    let (source, client) =
        match prometheus::open(url, args.selector.as_deref(), args.remote_config.as_deref()) {
            Ok(s) => s,
            Err(e) => return Ok(usage_error(e)),
        };
    let deadline = common.timeout.unwrap_or(crate::feed::remote::DEADLINE);
    let nodes = match prometheus::read_once(&source, &client, deadline) {
        Ok(n) => n,
        Err(e) => return Ok(usage_error(e)),
    };
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        let json = crate::view::fleet::PrometheusJson {
            timestamp: std::time::SystemTime::now(),
            query: &source.query(),
            nodes: &nodes,
        };
        crate::text::write_json_pretty(&mut out, &json)?;
        out.write_all(b"\n")?;
    } else {
        let text = crate::view::fleet::render_summaries(&nodes, Paint::for_stdout());
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    Ok(if nodes.iter().all(|n| n.2.is_none()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
