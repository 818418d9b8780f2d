//! `gpumon estimate`: the model, the run, each GPU's live free memory, the plan.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::cli::{Common, EstimateArgs};
use crate::collect::{open_sampler, Needs};
use crate::console::usage_error;
use crate::estimate::trace;
use crate::estimate::{inputs, report, GpuFree, Report};
use crate::view::estimate::render_with;

pub fn run(common: &Common, args: &EstimateArgs) -> anyhow::Result<ExitCode> {
    if let Err(e) = args.check_layers() {
        return Ok(usage_error(e));
    }
    if args.torch.is_some() || args.trace {
        return traced(common, args);
    }
    let (shape, on_disk, run) = match inputs(&args.flags()) {
        Ok(found) => found,
        Err(e) => return Ok(usage_error(e)),
    };
    let gpus = match read_gpus(common) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let report = report(shape, on_disk, run, gpus);
    print(&report, args)
}

/// The GPUs as they are now: free memory from one sample, no process lists.
fn read_gpus(common: &Common) -> Result<Result<Vec<GpuFree>, String>, ExitCode> {
    match open_sampler(&common.collect(), Needs::DEVICES) {
        Ok(mut sampler) => {
            if let Some(e) = {
                sampler.tick();
                sampler.unmatched_gpus()
            } {
                return Err(usage_error(e));
            }
            let sample = sampler.tick();
            drop(sampler);
            Ok(Ok(GpuFree::candidates(&sample.devices)))
        }
        Err(e) => Ok(Err(e.to_string())),
    }
}

fn print(report: &Report, args: &EstimateArgs) -> anyhow::Result<ExitCode> {
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        crate::text::write_json_pretty(&mut out, report)?;
        out.write_all(b"\n")?;
    } else {
        let layers = match args.layers {
            Some(None) => Some(usize::MAX),
            Some(Some(n)) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => None,
        };
        out.write_all(render_with(report, layers).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `--torch SPEC` (or `--model config.json --trace`): one step of the model itself, traced
/// on fake tensors in the user's interpreter, each remedy re-traced.
fn traced(common: &Common, args: &EstimateArgs) -> anyhow::Result<ExitCode> {
    let ask = args.trace_ask();
    if let Err(e) = crate::tracer::check(&ask) {
        return Ok(usage_error(e));
    }
    let gpus = match read_gpus(common) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let best_free = gpus
        .as_ref()
        .ok()
        .and_then(|l| l.iter().filter_map(|g| g.free_bytes).max());
    let (traced, fewest, run) = match crate::tracer::trace(&ask, best_free) {
        Ok(t) => t,
        Err(e) => return Ok(usage_error(e)),
    };
    let report = trace::report(traced, fewest, run, gpus);
    print(&report, args)
}
