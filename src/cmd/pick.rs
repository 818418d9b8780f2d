//! `gpumon pick`: one sample of every GPU, and the GPUs (or MIG instance) a job should use.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::cli::{Common, PickArgs, PickFormat};
use crate::collect::{open_sampler, Needs};
use crate::console::usage_error;
use crate::estimate::pick::{choose, Request};

pub fn run(common: &Common, args: &PickArgs) -> anyhow::Result<ExitCode> {
    let need = match (&args.estimate, args.need) {
        (Some(flags), _) => match crate::cli::estimate_line(flags) {
            Ok((shape, _, run)) => match crate::estimate::memory::need(&shape, &run) {
                Ok(n) => Some(n),
                Err(e) => return Ok(usage_error(format!("--estimate: {e}"))),
            },
            Err(e) => return Ok(usage_error(format!("--estimate: {e}"))),
        },
        (None, need) => need,
    };
    if !args.remote.is_empty() || args.remote_file.is_some() {
        return remote(common, args, need);
    }
    // Processes and their %SM (whether a GPU is idle); no host facts.
    let needs = Needs {
        processes: true,
        host: false,
        process_utilization: true,
        system: false,
    };
    let mut sampler = match open_sampler(&common.collect(), needs) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gpumon pick: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if let Err(e) = crate::collect::check_gpus(&common.collect(), &mut sampler) {
        return Ok(usage_error(e));
    }
    let sample = sampler.tick();
    drop(sampler);
    let request = Request {
        count: usize::from(args.count),
        need_bytes: need,
        idle_only: args.idle,
        exclude: args.exclude.clone(),
        // Memory that jobs just launched from `run --gpus`'s queue hold is not free.
        held: crate::model::queue::held(
            &crate::store::queue::read(&crate::store::queue::dir(None)),
            crate::store::queue::now(),
            None,
        ),
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    match choose(&sample.devices, &request) {
        Ok(choice) => {
            let ids = choice.cuda_visible_devices();
            match args.format {
                PickFormat::Env => writeln!(
                    out,
                    "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={ids}"
                )?,
                PickFormat::List => writeln!(out, "{ids}")?,
                PickFormat::Json => {
                    let json = serde_json::json!({
                        "cuda_visible_devices": ids,
                        "cuda_device_order": "PCI_BUS_ID",
                        "choice": choice,
                    });
                    crate::text::write_json_pretty(&mut out, &json)?;
                    out.write_all(b"\n")?;
                }
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(no_fit) => {
            if args.format == PickFormat::Json {
                let json = serde_json::json!({
                    "error": no_fit.to_string(),
                    "no_fit": no_fit,
                });
                crate::text::write_json_pretty(&mut out, &json)?;
                out.write_all(b"\n")?;
                out.flush()?;
            }
            eprintln!("gpumon pick: {}", crate::text::escape(&no_fit.to_string()));
            Ok(ExitCode::from(1))
        }
    }
}

/// `pick --remote`: the same choice among other nodes' GPUs, ranked together; NODE:GPU pairs.
/// A node that cannot be read is left out with why; the queue of a remote node is its own.
fn remote(common: &Common, args: &PickArgs, need: Option<u64>) -> anyhow::Result<ExitCode> {
    use crate::estimate::pick::{rank, screen, Candidate, Rejected};
    let nodes = match crate::feed::remote::read_nodes(
        &args.remote,
        args.remote_file.as_deref(),
        args.remote_config.as_deref(),
        common.timeout.unwrap_or(crate::feed::remote::DEADLINE),
    ) {
        Ok(n) => n,
        Err(e) => return Ok(usage_error(e)),
    };
    let request = Request {
        count: usize::from(args.count),
        need_bytes: need,
        idle_only: args.idle,
        exclude: args.exclude.clone(),
        held: Vec::new(),
    };
    let mut usable: Vec<(&str, Candidate)> = Vec::new();
    let mut rejected: Vec<(&str, Rejected)> = Vec::new();
    let mut unread: Vec<(&str, &str)> = Vec::new();
    for n in &nodes {
        let name = n.name.as_str();
        match &n.sample {
            Some(s) => {
                let (u, r) = screen(&s.devices, &request);
                usable.extend(u.into_iter().map(|c| (name, c)));
                rejected.extend(r.into_iter().map(|r| (name, r)));
            }
            None => unread.push((name, n.error.as_deref().unwrap_or("not read"))),
        }
    }
    usable.sort_by(|a, b| rank(&a.1, &b.1).then(a.0.cmp(b.0)));
    let count = request.count.max(1);
    let pair = |(node, c): &(&str, Candidate)| format!("{node}:{}", c.cuda_id());
    let mut out = io::BufWriter::new(io::stdout().lock());
    if usable.len() < count {
        let mut why = format!(
            "no room for {count} GPU{}{}: {} usable",
            if count == 1 { "" } else { "s" },
            need.map(|n| format!(" with {} free", crate::units::fmt_bytes(n)))
                .unwrap_or_default(),
            usable.len()
        );
        for (node, r) in &rejected {
            why.push_str(&format!("; {node} {}: {}", r.candidate.label(), r.why));
        }
        for (node, e) in &unread {
            why.push_str(&format!("; {node}: not read ({e})"));
        }
        if args.format == PickFormat::Json {
            let json = serde_json::json!({"error": why});
            crate::text::write_json_pretty(&mut out, &json)?;
            out.write_all(b"\n")?;
            out.flush()?;
        }
        eprintln!("gpumon pick: {}", crate::text::escape(&why));
        return Ok(ExitCode::from(1));
    }
    let chosen: Vec<String> = usable.iter().take(count).map(pair).collect();
    match args.format {
        PickFormat::Env | PickFormat::List => writeln!(out, "{}", chosen.join(","))?,
        PickFormat::Json => {
            let json = serde_json::json!({
                "chosen": usable.iter().take(count).map(|(node, c)| serde_json::json!({
                    "node": node, "id": c.cuda_id(), "candidate": c,
                })).collect::<Vec<_>>(),
                "unread": unread.iter().map(|(node, e)| serde_json::json!({"node": node, "error": e})).collect::<Vec<_>>(),
            });
            crate::text::write_json_pretty(&mut out, &json)?;
            out.write_all(b"\n")?;
        }
    }
    for (node, e) in &unread {
        eprintln!("gpumon pick: {node} not read: {}", crate::text::escape(e));
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
