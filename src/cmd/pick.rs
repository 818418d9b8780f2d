//! `gpumon pick`: one sample of every GPU, and the GPUs (or MIG instance) a job should use.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::cli::{Common, PickArgs, PickFormat};
use crate::collect::{open_sampler, Needs};
use crate::estimate::pick::{choose, Request};
use crate::runtime::usage_error;

pub fn run(common: &Common, args: &PickArgs) -> anyhow::Result<ExitCode> {
    let need = match (&args.estimate, args.need) {
        (Some(flags), _) => match crate::cli::estimate_line(flags) {
            Ok((shape, _, run)) => match crate::estimate::model::need(&shape, &run) {
                Ok(n) => Some(n),
                Err(e) => return Ok(usage_error(format!("--estimate: {e}"))),
            },
            Err(e) => return Ok(usage_error(format!("--estimate: {e}"))),
        },
        (None, need) => need,
    };
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
            &crate::collect::queue::read(&crate::collect::queue::dir(None)),
            crate::collect::queue::now(),
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
