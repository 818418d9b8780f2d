//! `gpumon estimate`: the model, the run, each GPU's live free memory, the plan.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::cli::{Common, EstimateArgs};
use crate::collect::{open_sampler, Needs};
use crate::estimate::model::{Dtype, Optimizer};
use crate::estimate::trace::{self, Request, TraceError};
use crate::estimate::{inputs, render_with, report, GpuFree, Report};
use crate::runtime::usage_error;
use crate::text::escape;

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

/// torch's name for a weights' dtype the trace can build.
fn torch_dtype(d: Dtype) -> Result<&'static str, String> {
    match d {
        Dtype::Fp32 => Ok("float32"),
        Dtype::Bf16 => Ok("bfloat16"),
        Dtype::Fp16 => Ok("float16"),
        Dtype::Int8 | Dtype::Int4 => Err(
            "--torch traces fp32, bf16 or fp16 weights; quantized weights need their library's \
             kernels, which fake tensors cannot run (use the formula: --params or --model)"
                .into(),
        ),
    }
}

/// `--torch SPEC` (or `--model config.json --trace`): one step of the model itself, traced
/// on fake tensors in the user's interpreter, each remedy re-traced.
fn traced(common: &Common, args: &EstimateArgs) -> anyhow::Result<ExitCode> {
    let mut shapes = Vec::new();
    for s in &args.input {
        match trace::parse_inputs(s) {
            Ok(mut v) => shapes.append(&mut v),
            Err(e) => return Ok(usage_error(format!("--input {e}"))),
        }
    }
    if args.torch.is_some() && shapes.is_empty() && args.input_fn.is_none() {
        return Ok(usage_error(
            "--torch needs the batch: --input SHAPES (32x3x224x224, 8x512:int64) or \
             --input-fn file.py:callable",
        ));
    }
    if args.optimizer == Optimizer::Adamw8bit && !args.inference {
        return Ok(usage_error(
            "--optimizer adamw-8bit cannot be traced (bitsandbytes' kernels need a GPU): trace \
             adamw, and the plan gives 8-bit AdamW's saving by formula",
        ));
    }
    let dtype = match args.dtype.map(torch_dtype).transpose() {
        Ok(d) => d,
        Err(e) => return Ok(usage_error(e)),
    };
    let gpus = match read_gpus(common) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let best_free = gpus
        .as_ref()
        .ok()
        .and_then(|l| l.iter().filter_map(|g| g.free_bytes).max());
    let batch = shapes
        .first()
        .and_then(|s| s.shape.first().copied())
        .unwrap_or(args.batch);
    let spec = match (&args.torch, &args.model) {
        (Some(s), _) => s.clone(),
        (None, Some(m)) => m.display().to_string(),
        (None, None) => return Ok(usage_error("--trace needs --model config.json")),
    };
    let request = Request {
        spec: args.torch.clone(),
        hf_config: if args.torch.is_none() {
            args.model.as_ref().map(|m| m.display().to_string())
        } else {
            None
        },
        inputs: shapes,
        input_fn: args.input_fn.clone(),
        batch: Some(args.batch),
        seq_len: Some(args.seq_len),
        optimizer: serde_json::to_value(args.optimizer)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "adamw".into()),
        dtype: dtype.map(str::to_owned),
        autocast: (args.mixed_precision && !args.inference).then(|| "bfloat16".to_owned()),
        inference: args.inference,
        remedies: true,
        target_bytes: best_free.map(trace::target_for),
    };
    let answer = match crate::tracer::run(&args.python, &request, args.trace_timeout) {
        Ok(a) => a,
        Err(e) => return Ok(usage_error(e)),
    };
    let (traced, fewest) = match trace::parse(&answer, &spec) {
        Ok(t) => t,
        Err(TraceError::Refused { message, .. }) => {
            return Ok(usage_error(escape(&message)));
        }
        Err(e) => return Ok(usage_error(e)),
    };
    let run = trace::run_for(
        batch,
        args.dtype.unwrap_or(Dtype::Fp32),
        args.mixed_precision && !args.inference,
        args.optimizer,
        args.inference,
    );
    let report = trace::report(traced, fewest, run, gpus);
    print(&report, args)
}
