//! `gpumon estimate`: will a training or inference run fit on the GPUs here, and what would
//! make it fit. The memory model is in [`memory`]; the model's shape comes from a
//! `config.json` and safetensors headers ([`config`]) or from flags.

pub mod batch;
pub mod config;
pub mod memory;
pub mod pick;
pub mod trace;

#[cfg(test)]
pub(crate) mod testing;

use serde::Serialize;

use crate::units::fmt_bytes;
use memory::{Checkpointing, Dtype, Optimizer, Parts, Run, Shape};

pub const SCHEMA_VERSION: u32 = 1;

/// "7B", "350M", "1.5b", "6738415616" → a parameter count.
pub fn parse_params(s: &str) -> Result<u64, String> {
    let t = s.trim().replace(['_', ','], "");
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('B') | Some('G') => (&t[..t.len() - 1], 1e9),
        Some('T') => (&t[..t.len() - 1], 1e12),
        _ => (t.as_str(), 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a parameter count (7B, 350M, 6738415616)"))?;
    let n = v * mult;
    if !(n.is_finite() && (1.0..1e15).contains(&n)) {
        return Err(format!("'{s}' is not a plausible parameter count"));
    }
    Ok(n.round() as u64)
}

/// What `gpumon estimate`'s flags say, as plain values (the command line's definitions are
/// in `cli`, which fills this in).
#[derive(Debug, Clone)]
pub struct Flags {
    pub model: Option<std::path::PathBuf>,
    pub params: Option<u64>,
    pub layers: Option<u64>,
    pub hidden: Option<u64>,
    pub heads: Option<u64>,
    pub kv_heads: Option<u64>,
    pub vocab: Option<u64>,
    pub intermediate: Option<u64>,
    pub gated_mlp: bool,
    pub batch: u64,
    pub seq_len: u64,
    pub dtype: Dtype,
    pub mixed_precision: bool,
    pub optimizer: Optimizer,
    pub checkpointing: Checkpointing,
    pub attention: memory::Attention,
    pub grad_accum: u64,
    pub inference: bool,
    pub lora_rank: Option<u64>,
    pub loss: memory::Loss,
    pub quant: Option<memory::Quant>,
    pub group_size: u64,
    pub kernels: memory::Kernels,
}

/// The model and the run the flags describe: a config or model directory completed (or
/// overridden) by the shape flags.
pub fn inputs(args: &Flags) -> Result<(Shape, Option<u64>, Run), String> {
    let (mut shape, on_disk) = match &args.model {
        Some(path) => config::load(path).map_err(|e| e.to_string())?,
        None => (
            Shape {
                family: "custom".into(),
                ..Shape::default()
            },
            None,
        ),
    };
    if let Some(p) = args.params {
        shape.params = p;
    }
    shape.layers = args.layers.or(shape.layers);
    shape.hidden = args.hidden.or(shape.hidden);
    shape.heads = args.heads.or(shape.heads);
    shape.kv_heads = args.kv_heads.or(shape.kv_heads).or(shape.heads);
    shape.vocab = args.vocab.or(shape.vocab);
    shape.intermediate = args.intermediate.or(shape.intermediate);
    shape.gated_mlp |= args.gated_mlp;
    if shape.params == 0 {
        return Err(format!(
            "{}: no parameter count (no config gpumon understands and no safetensors); give --params",
            args.model
                .as_deref()
                .map_or_else(|| "the model".to_owned(), |p| p.display().to_string())
        ));
    }
    let run = Run {
        batch: args.batch,
        seq_len: args.seq_len,
        dtype: args.dtype,
        mixed_precision: args.mixed_precision && !args.inference,
        optimizer: if args.inference {
            Optimizer::None
        } else {
            args.optimizer
        },
        checkpointing: args.checkpointing,
        attention: args.attention,
        grad_accum: args.grad_accum,
        inference: args.inference,
        lora_rank: args.lora_rank.filter(|_| !args.inference),
        loss: args.loss,
        quant: args.quant.unwrap_or(memory::Quant::Nf4),
        group_size: args.group_size,
        kernels: args.kernels,
    };
    if args.quant.is_some() && args.dtype != Dtype::Int4 {
        return Err("--quant describes 4-bit weights: give --dtype int4".into());
    }
    check(&shape, &run)?;
    Ok((shape, on_disk, run))
}

/// The largest figure an estimate states: beyond it the model's arithmetic saturates (a run
/// at the flags' caps), and a report would set "between steps 1.0 GiB" beside exabytes of
/// weights.
pub const MAX_PLAUSIBLE: u64 = 1 << 60;

/// A shape that can exist and a run whose figures can be stated: the errors name the flags
/// or the config's fields at fault.
fn check(shape: &Shape, run: &Run) -> Result<(), String> {
    if let (Some(heads), Some(kv)) = (shape.heads, shape.kv_heads) {
        if kv > heads || heads % kv != 0 {
            return Err(format!(
                "{kv} key/value heads for {heads} attention heads: grouped-query attention \
                 shares each key/value head among a whole number of query heads \
                 (--kv-heads, num_key_value_heads, at most --heads and dividing it)"
            ));
        }
    }
    if let (Some(hidden), Some(heads)) = (shape.hidden, shape.heads) {
        if hidden % heads != 0 {
            return Err(format!(
                "a hidden size of {hidden} is not divisible by {heads} heads: each head \
                 takes an equal share (--hidden, --heads)"
            ));
        }
    }
    let p = memory::estimate(shape, run);
    let too_big = [
        Some(p.weights_bytes),
        p.gradients_bytes,
        p.optimizer_bytes,
        p.activations_bytes,
        p.kv_cache_bytes,
        Some(p.total_bytes),
    ]
    .into_iter()
    .flatten()
    .any(|b| b >= MAX_PLAUSIBLE);
    if too_big {
        return Err(format!(
            "this run would need more than {} (weights {}, activations {}): more than any \
             machine holds, so no figure would mean anything; check --params, --batch, \
             --seq-len and the shape",
            fmt_bytes(MAX_PLAUSIBLE),
            fmt_bytes(p.weights_bytes),
            p.activations_bytes
                .map_or_else(|| "—".to_owned(), fmt_bytes)
        ));
    }
    Ok(())
}

/// The standard remedies `explain` ranks, sized by this model when the user describes the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lever {
    HalveBatch,
    FullCheckpointing,
    MixedPrecision,
    EightBitAdam,
}

/// What `lever` saves on the run's peak; `None` where it does not apply (already in
/// effect, a batch of one, not Adam).
pub fn lever_saving(shape: &Shape, run: &Run, lever: Lever) -> Option<u64> {
    let change = match lever {
        Lever::HalveBatch if run.batch > 1 => Change::Batch(1),
        Lever::FullCheckpointing if run.checkpointing != Checkpointing::Full && !run.inference => {
            Change::Checkpoint(Checkpointing::Full)
        }
        Lever::MixedPrecision
            if !run.mixed_precision && run.dtype == Dtype::Fp32 && !run.inference =>
        {
            Change::MixedPrecision
        }
        Lever::EightBitAdam if matches!(run.optimizer, Optimizer::Adam | Optimizer::Adamw) => {
            Change::EightBitAdam
        }
        _ => return None,
    };
    let base = memory::estimate(shape, run).total_bytes;
    Some(base.saturating_sub(memory::estimate(shape, &change.apply(run)).total_bytes))
}

/// What the dashboard's estimate panel shows: the formula's inputs, or a trace of the model.
#[derive(Debug, Clone)]
pub enum Estimated {
    Formula(Box<(Shape, Option<u64>, Run)>),
    Traced(Box<(trace::Traced, Option<trace::Fit>, Run)>),
}

impl Estimated {
    /// The report against `gpus`.
    pub fn report(&self, gpus: Result<Vec<GpuFree>, String>) -> Report {
        match self {
            Estimated::Formula(f) => report(f.0.clone(), f.1, f.2.clone(), gpus),
            Estimated::Traced(t) => trace::report(t.0.clone(), t.1.clone(), t.2.clone(), gpus),
        }
    }
}

/// One GPU's free memory, as read now.
#[derive(Debug, Clone)]
pub struct GpuFree {
    pub index: u32,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub free_bytes: Option<u64>,
    /// A MIG instance's profile and GPU instance, when this is one.
    pub mig: Option<(Option<String>, Option<u32>)>,
}

impl GpuFree {
    /// Where a job can run: each GPU, or with MIG on each of its MIG instances instead (CUDA
    /// runs on an instance, named by its `MIG-` UUID, never on the GPU as a whole).
    pub fn candidates(devices: &[crate::model::Device]) -> Vec<GpuFree> {
        let mut out = Vec::new();
        for d in devices {
            if d.mig.is_empty() {
                out.push(GpuFree {
                    index: d.index,
                    uuid: d.uuid.clone(),
                    name: d.name.clone(),
                    free_bytes: d.memory.free_bytes,
                    mig: None,
                });
                continue;
            }
            for m in &d.mig {
                out.push(GpuFree {
                    index: d.index,
                    uuid: m.uuid.clone(),
                    name: m.name.clone(),
                    free_bytes: m.memory.free_bytes,
                    mig: Some((m.profile.clone(), m.gpu_instance_id)),
                });
            }
        }
        out
    }
}

/// One GPU (or MIG instance) as read now, and whether the run fits it.
#[derive(Debug, Clone, Serialize)]
pub struct GpuFit {
    /// The GPU's index (a MIG instance's parent's).
    pub index: u32,
    /// A MIG instance's is `MIG-…`: what CUDA_VISIBLE_DEVICES takes.
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub free_bytes: Option<u64>,
    pub fits: Option<bool>,
    /// The MIG profile (`3g.40gb`), when this is a MIG instance.
    pub mig_profile: Option<String>,
    pub gpu_instance_id: Option<u32>,
}

/// One remedy and what it saves on its own.
#[derive(Debug, Clone, Serialize)]
pub struct Remedy {
    pub remedy: String,
    pub saves_bytes: u64,
}

/// The fewest remedies that make the run fit the GPU with the most free memory.
#[derive(Debug, Clone, Serialize)]
pub struct Combination {
    pub remedies: Vec<String>,
    pub total_bytes: u64,
    pub gpu_index: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema_version: u32,
    /// "formula" (from the model's shape) or "traced" (one step of the model itself, on fake
    /// tensors: `estimate --torch`).
    pub method: &'static str,
    pub inputs: Inputs,
    pub parts: Parts,
    /// What stays on the GPU between steps (without activations).
    pub resident_bytes: u64,
    /// The peak; with `peak_known` false, only the part that is known (a lower bound).
    pub total_bytes: u64,
    /// Whether the peak is known: without the model's shape the activations (and KV cache)
    /// are not, and no GPU is said to fit.
    pub peak_known: bool,
    pub gpus: Vec<GpuFit>,
    /// Why no GPU could be read, when none was.
    pub gpus_error: Option<String>,
    pub plan: Vec<Remedy>,
    pub fits_with: Option<Combination>,
    /// What the trace measured (`method: "traced"` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<trace::Traced>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Inputs {
    pub model: Shape,
    /// The weights' bytes on disk, from the safetensors headers.
    pub weights_on_disk_bytes: Option<u64>,
    pub run: Run,
    pub trainable_params: u64,
}

/// A change to the run that saves memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Halve the micro-batch `n` times, multiplying gradient accumulation to match.
    Batch(u32),
    MixedPrecision,
    Checkpoint(Checkpointing),
    EightBitAdam,
    Lora,
    HalfSequence,
    Int8,
    Int4,
    Loss(memory::Loss),
}

impl Change {
    fn apply(self, run: &Run) -> Run {
        let mut r = run.clone();
        match self {
            Change::Batch(n) => {
                let batch = (run.batch >> n).max(1);
                r.grad_accum = run.grad_accum.saturating_mul((run.batch / batch).max(1));
                r.batch = batch;
            }
            Change::MixedPrecision => {
                r.mixed_precision = true;
                r.dtype = Dtype::Bf16;
            }
            Change::Checkpoint(c) => r.checkpointing = c,
            Change::EightBitAdam => r.optimizer = Optimizer::Adamw8bit,
            Change::Lora => r.lora_rank = Some(16),
            Change::HalfSequence => r.seq_len = (run.seq_len / 2).max(1),
            Change::Int8 => r.dtype = Dtype::Int8,
            Change::Int4 => r.dtype = Dtype::Int4,
            Change::Loss(l) => r.loss = l,
        }
        r
    }

    fn describe(self, run: &Run) -> String {
        match self {
            Change::Batch(n) => {
                let batch = (run.batch >> n).max(1);
                let accum = run.grad_accum.saturating_mul((run.batch / batch).max(1));
                if run.inference {
                    format!("batch {batch} instead of {}", run.batch)
                } else {
                    format!("batch {batch} with gradient accumulation ×{accum} (the same effective batch)")
                }
            }
            Change::MixedPrecision => "bf16 mixed precision (fp32 master weights kept)".into(),
            Change::Checkpoint(Checkpointing::Selective) => {
                "selective activation recomputation (attention scores), or fused attention".into()
            }
            Change::Checkpoint(_) => {
                "full activation checkpointing (about 30% more compute)".into()
            }
            Change::EightBitAdam => "8-bit AdamW (bitsandbytes)".into(),
            Change::Lora => "LoRA, rank 16, instead of full fine-tuning".into(),
            Change::HalfSequence => format!(
                "sequences of {} tokens instead of {}",
                (run.seq_len / 2).max(1),
                run.seq_len
            ),
            Change::Int8 => "8-bit weights".into(),
            Change::Int4 => "4-bit weights".into(),
            Change::Loss(memory::Loss::Chunked) => {
                "a chunked cross-entropy (torchtune's CEWithChunkedOutputLoss)".into()
            }
            Change::Loss(_) => {
                "a fused linear cross-entropy (Liger's, or Cut Cross-Entropy): no logits kept"
                    .into()
            }
        }
    }

    /// Changes the task itself (what is learned or served), not only how: tried last.
    fn changes_the_task(self) -> bool {
        matches!(self, Change::HalfSequence | Change::Int4 | Change::Lora)
    }
}

/// The remedies that apply to `run`, one level each (batch halvings are listed as levels).
fn options(run: &Run) -> Vec<Vec<Change>> {
    let mut out = Vec::new();
    let halvings = (64 - run.batch.max(1).leading_zeros() - 1).min(6);
    if halvings > 0 {
        out.push((1..=halvings).map(Change::Batch).collect());
    }
    if run.inference {
        match run.dtype {
            Dtype::Fp32 | Dtype::Bf16 | Dtype::Fp16 => out.push(vec![Change::Int8, Change::Int4]),
            Dtype::Int8 => out.push(vec![Change::Int4]),
            Dtype::Int4 => {}
        }
    } else {
        if !run.mixed_precision && run.dtype == Dtype::Fp32 {
            out.push(vec![Change::MixedPrecision]);
        }
        match run.checkpointing {
            Checkpointing::None => out.push(vec![
                Change::Checkpoint(Checkpointing::Selective),
                Change::Checkpoint(Checkpointing::Full),
            ]),
            Checkpointing::Selective => out.push(vec![Change::Checkpoint(Checkpointing::Full)]),
            Checkpointing::Full => {}
        }
        if matches!(run.optimizer, Optimizer::Adam | Optimizer::Adamw) {
            out.push(vec![Change::EightBitAdam]);
        }
        if run.lora_rank.is_none() {
            out.push(vec![Change::Lora]);
        }
        match run.loss {
            memory::Loss::Standard => out.push(vec![
                Change::Loss(memory::Loss::Chunked),
                Change::Loss(memory::Loss::Fused),
            ]),
            memory::Loss::Chunked => out.push(vec![Change::Loss(memory::Loss::Fused)]),
            memory::Loss::Fused => {}
        }
    }
    if run.seq_len > 1 {
        out.push(vec![Change::HalfSequence]);
    }
    out
}

/// Each remedy alone, with its saving; then the fewest that fit `free` (task-changing ones
/// only when nothing else does), the smallest total among equals.
fn plan(shape: &Shape, run: &Run, free: Option<(u32, u64)>) -> (Vec<Remedy>, Option<Combination>) {
    let base = memory::estimate(shape, run).total_bytes;
    let groups = options(run);
    let mut alone: Vec<Remedy> = groups
        .iter()
        .flat_map(|g| g.iter().copied())
        .map(|c| Remedy {
            remedy: c.describe(run),
            saves_bytes: base.saturating_sub(memory::estimate(shape, &c.apply(run)).total_bytes),
        })
        .filter(|r| r.saves_bytes > 0)
        .collect();
    alone.sort_by_key(|r| std::cmp::Reverse(r.saves_bytes));
    let Some((gpu, free)) = free else {
        return (alone, None);
    };
    if base <= free {
        return (alone, None);
    }
    // Every choice of one level (or none) per group: at most 7 × 3 × 2⁴ combinations.
    let mut best: Option<(usize, usize, u64, Vec<Change>)> = None;
    let mut pick = vec![0usize; groups.len()];
    loop {
        let chosen: Vec<Change> = pick
            .iter()
            .zip(&groups)
            .filter(|(p, _)| **p > 0)
            .map(|(p, g)| g[*p - 1])
            .collect();
        let r = chosen.iter().fold(run.clone(), |r, c| c.apply(&r));
        let total = memory::estimate(shape, &r).total_bytes;
        if total <= free {
            let task = chosen.iter().filter(|c| c.changes_the_task()).count();
            let key = (task, chosen.len(), total);
            if best.as_ref().is_none_or(|b| key < (b.0, b.1, b.2)) {
                best = Some((task, chosen.len(), total, chosen));
            }
        }
        // Next combination (odometer).
        let mut i = 0;
        loop {
            if i == pick.len() {
                let fits = best.map(|(_, _, total, chosen)| Combination {
                    remedies: chosen.iter().map(|c| c.describe(run)).collect(),
                    total_bytes: total,
                    gpu_index: gpu,
                });
                return (alone, fits);
            }
            pick[i] += 1;
            if pick[i] <= groups[i].len() {
                break;
            }
            pick[i] = 0;
            i += 1;
        }
    }
}

/// The whole report: the estimate, each GPU's fit, the plan.
pub fn report(
    shape: Shape,
    weights_on_disk: Option<u64>,
    run: Run,
    gpus: Result<Vec<GpuFree>, String>,
) -> Report {
    let parts = memory::estimate(&shape, &run);
    let peak_known = memory::peak_known(&parts, &run);
    // Without a step's activations and logits (and their share of the fragmentation margin).
    let states = [
        parts.gradients_bytes,
        parts.optimizer_bytes,
        parts.kv_cache_bytes,
    ]
    .iter()
    .fold(parts.weights_bytes, |acc, x| {
        acc.saturating_add(x.unwrap_or(0))
    });
    let resident = states
        .saturating_add(memory::CONTEXT_ALLOWANCE)
        .saturating_add((states as f64 * memory::FRAGMENTATION_MARGIN) as u64);
    let (gpus, gpus_error) = match gpus {
        Ok(list) => (
            list.into_iter()
                .map(|g| {
                    let (mig_profile, gpu_instance_id) = g.mig.unwrap_or((None, None));
                    GpuFit {
                        // An unknown peak: a GPU without room for the states does not
                        // fit; one with room may or may not.
                        fits: g.free_bytes.and_then(|f| {
                            if peak_known {
                                Some(parts.total_bytes <= f)
                            } else {
                                (resident > f).then_some(false)
                            }
                        }),
                        index: g.index,
                        uuid: g.uuid,
                        name: g.name,
                        free_bytes: g.free_bytes,
                        mig_profile,
                        gpu_instance_id,
                    }
                })
                .collect(),
            None,
        ),
        Err(e) => (Vec::new(), Some(e)),
    };
    let best_gpu = gpus
        .iter()
        .filter_map(|g| Some((g.index, g.free_bytes?)))
        .max_by_key(|(_, f)| *f);
    let (plan, fits_with) = plan(&shape, &run, best_gpu);
    // What would fit is as unknown as the peak.
    let fits_with = fits_with.filter(|_| peak_known);
    Report {
        schema_version: SCHEMA_VERSION,
        method: "formula",
        inputs: Inputs {
            trainable_params: memory::trainable_params(&shape, &run),
            model: shape,
            weights_on_disk_bytes: weights_on_disk,
            run,
        },
        parts,
        resident_bytes: resident,
        total_bytes: parts.total_bytes,
        peak_known,
        gpus,
        gpus_error,
        plan,
        fits_with,
        trace: None,
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{flags, gpu, llama7b, mig_devices, training};
    use super::*;

    /// Finding 19: shapes that cannot exist and runs whose figures saturate are refused with
    /// the flags at fault, instead of a report beside exabytes.
    #[test]
    fn without_the_shape_the_peak_is_unknown_and_no_gpu_is_said_to_fit() {
        let shape = Shape {
            family: "custom".into(),
            params: 7_000_000_000,
            ..Shape::default()
        };
        let (_, _, run) = flags("").expect("flags");
        let free = |index, gib: u64| GpuFree {
            index,
            uuid: None,
            name: None,
            free_bytes: Some(gib << 30),
            mig: None,
        };
        let r = report(
            shape.clone(),
            None,
            run.clone(),
            Ok(vec![free(0, 80), free(1, 20)]),
        );
        assert!(!r.peak_known);
        // Room for the states: maybe; not even that: no.
        assert_eq!(
            r.gpus.iter().map(|g| g.fits).collect::<Vec<_>>(),
            [None, Some(false)]
        );
        assert!(r.fits_with.is_none());
        assert!(memory::need(&shape, &run).is_err());
        // With the shape, it is known.
        let (shape, _, run) = flags("").expect("flags");
        assert!(report(shape.clone(), None, run.clone(), Ok(vec![])).peak_known);
        assert!(memory::need(&shape, &run).is_ok());
    }

    #[test]
    fn impossible_shapes_and_saturated_runs_are_refused() {
        assert!(flags("").is_ok());
        assert!(flags("kv=8").is_ok(), "grouped-query attention");
        let e = flags("kv=64").expect_err("more KV heads than heads");
        assert!(
            e.contains("64 key/value heads for 32 attention heads"),
            "{e}"
        );
        assert!(
            flags("kv=5").is_err(),
            "32 heads do not share 5 KV heads evenly"
        );
        let e = flags("hidden=4097").expect_err("not divisible");
        assert!(e.contains("4097 is not divisible by 32 heads"), "{e}");
        let e = flags("params=999999999999999 layers=100000 hidden=1048576 heads=65536 batch=1048576 seq=16777216")
            .expect_err("saturated");
        assert!(e.contains("more than 1.0 EiB"), "{e}");
    }

    #[test]
    fn parameter_counts_as_people_write_them() {
        assert_eq!(parse_params("7B"), Ok(7_000_000_000));
        assert_eq!(parse_params("1.5b"), Ok(1_500_000_000));
        assert_eq!(parse_params("350M"), Ok(350_000_000));
        assert_eq!(parse_params("6738415616"), Ok(6_738_415_616));
        assert_eq!(parse_params("6_738_415_616"), Ok(6_738_415_616));
        assert!(parse_params("lots").is_err());
        assert!(parse_params("-3B").is_err());
        assert!(parse_params("1e30").is_err());
    }

    #[test]
    fn with_mig_on_the_candidates_are_the_instances() {
        let c = GpuFree::candidates(&mig_devices());
        let ids: Vec<(u32, Option<&str>, Option<u64>)> = c
            .iter()
            .map(|g| (g.index, g.uuid.as_deref(), g.free_bytes))
            .collect();
        assert_eq!(
            ids,
            vec![
                (0, Some("GPU-a"), Some(70 << 30)),
                (1, Some("MIG-1"), Some(30 << 30)),
                (1, Some("MIG-2"), Some(10 << 30)),
            ],
            "the MIG GPU's 60 GiB free is no candidate: no job can have it whole"
        );
    }

    #[test]
    fn a_run_that_fits_gets_no_plan_and_one_that_does_not_gets_the_fewest_changes() {
        let gib = 1u64 << 30;
        let fits = report(
            llama7b(),
            None,
            Run {
                inference: true,
                optimizer: Optimizer::None,
                batch: 1,
                ..training()
            },
            Ok(vec![gpu(0, Some("H100"), 79 * gib)]),
        );
        assert_eq!(fits.gpus[0].fits, Some(true));
        assert!(fits.fits_with.is_none());

        let r = report(
            llama7b(),
            None,
            training(),
            Ok(vec![gpu(0, None, 20 * gib), gpu(1, None, 79 * gib)]),
        );
        assert_eq!(
            r.gpus.iter().map(|g| g.fits).collect::<Vec<_>>(),
            [Some(false), Some(false)]
        );
        let c = r.fits_with.as_ref().expect("some combination fits 79 GiB");
        assert_eq!(c.gpu_index, 1);
        assert!(c.total_bytes <= 79 * gib);
        // The combination really fits when applied, and no single change alone would.
        assert!(c.remedies.len() >= 2, "{:?}", c.remedies);
        assert!(r
            .plan
            .iter()
            .all(|p| r.total_bytes - p.saves_bytes > 79 * gib));
        // Savings are listed largest first.
        assert!(r
            .plan
            .windows(2)
            .all(|w| w[0].saves_bytes >= w[1].saves_bytes));
    }

    proptest::proptest! {
        /// Any shape and run the flags accept gives a report, never an overflow or a panic.
        #[test]
        fn any_accepted_input_gives_a_report(
            params in 1u64..1_000_000_000_000_000,
            layers in 1u64..=100_000,
            hidden in 1u64..=1 << 20,
            heads in 1u64..=65_536,
            kv in 1u64..=65_536,
            vocab in 1u64..=1 << 24,
            inter in 1u64..=1 << 22,
            batch in 1u64..=1 << 20,
            seq in 1u64..=1 << 24,
            lora in proptest::option::of(1u64..=65_536),
            inference: bool,
            gated: bool,
        ) {
            let shape = Shape {
                family: "custom".into(),
                params,
                layers: Some(layers),
                hidden: Some(hidden),
                heads: Some(heads),
                kv_heads: Some(kv),
                vocab: Some(vocab),
                intermediate: Some(inter),
                gated_mlp: gated,
                tied_embeddings: None,
                ..Shape::default()
            };
            let run = Run { batch, seq_len: seq, inference, lora_rank: lora, ..training() };
            let r = report(shape, None, run, Ok(vec![gpu(0, None, 80 << 30)]));
            proptest::prop_assert!(r.total_bytes >= r.parts.weights_bytes);
        }
    }

    #[test]
    fn without_a_gpu_the_estimate_still_stands() {
        let r = report(llama7b(), None, training(), Err("no NVIDIA driver".into()));
        assert!(r.gpus.is_empty() && r.fits_with.is_none());
        let j = serde_json::to_value(&r).expect("json");
        assert_eq!(j["schema_version"], 1);
        assert!(j["parts"]["kv_cache_bytes"].is_null());
        assert!(j["parts"]["gradients_bytes"].as_u64().is_some());
    }
}
