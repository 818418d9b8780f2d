//! `gpumon estimate`: the model, the run, each GPU's live free memory, the plan.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::cli::{Common, EstimateArgs};
use crate::collect::{open_sampler, Needs};
use crate::estimate::{inputs, render, report, GpuFree};
use crate::runtime::usage_error;

pub fn run(common: &Common, args: &EstimateArgs) -> anyhow::Result<ExitCode> {
    let (shape, on_disk, run) = match inputs(&args.flags()) {
        Ok(found) => found,
        Err(e) => return Ok(usage_error(e)),
    };
    // The GPUs as they are now: free memory from one sample, no process lists.
    let gpus = match open_sampler(&common.collect(), Needs::DEVICES) {
        Ok(mut sampler) => {
            if let Some(e) = {
                sampler.tick();
                sampler.unmatched_gpus()
            } {
                return Ok(usage_error(e));
            }
            let sample = sampler.tick();
            drop(sampler);
            Ok(GpuFree::candidates(&sample.devices))
        }
        Err(e) => Err(e.to_string()),
    };
    let report = report(shape, on_disk, run, gpus);
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        crate::text::write_json_pretty(&mut out, &report)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(render(&report).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
