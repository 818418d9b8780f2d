//! `gpumon estimate --torch`: what the tracer helper (run in the user's own interpreter, on
//! fake tensors) measured, checked as untrusted input, and turned into the estimate's report.
//!
//! The helper is `assets/python/gpumon_trace.py`; running it is the runtime's business
//! (`crate::tracer`). This module only builds its request, reads its answer and decides what
//! fits: the answer is bounded in size, every number is checked, and every string is escaped
//! where it is shown.

use serde::{Deserialize, Serialize};

use super::memory::{self, Parts, Run, Shape};
use super::{GpuFit, GpuFree, Inputs, Remedy, Report, SCHEMA_VERSION};

/// The helper, shipped inside the binary.
pub const HELPER: &str = include_str!("../../assets/python/gpumon_trace.py");
/// Largest answer read from the helper.
pub const MAX_ANSWER: usize = 4 << 20;
/// Rows of the layer table shown without `--layers`.
pub const DEFAULT_LAYERS: usize = 10;

/// Why no trace came back.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TraceError {
    /// The helper's own one-line cause (the model, the input, what the trace cannot follow).
    #[error("{message}")]
    Refused { kind: String, message: String },
    #[error("the tracer's answer is not what gpumon expects: {0}")]
    Malformed(String),
}

/// One input tensor: its shape and, for ids, an integer dtype.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputSpec {
    pub shape: Vec<u64>,
    pub dtype: Option<String>,
}

const INPUT_DTYPES: &[&str] = &[
    "float32", "fp32", "float16", "fp16", "bfloat16", "bf16", "int64", "long", "int32", "int",
    "int8", "uint8", "bool",
];

/// `32x3x224x224`, `8x512:int64`; several separated by commas.
pub fn parse_inputs(s: &str) -> Result<Vec<InputSpec>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (dims, dtype) = match part.split_once(':') {
            Some((d, t)) => (d, Some(t.trim().to_ascii_lowercase())),
            None => (part, None),
        };
        if let Some(t) = &dtype {
            if !INPUT_DTYPES.contains(&t.as_str()) {
                return Err(format!(
                    "'{part}': unknown dtype '{t}' (int64 for token ids, float32, bf16, fp16…)"
                ));
            }
        }
        let mut shape = Vec::new();
        let mut numel: u64 = 1;
        for d in dims.split(['x', 'X', '×']) {
            let n: u64 = d.trim().parse().map_err(|_| {
                format!("'{part}' is not a shape like 32x3x224x224 (or 8x512:int64)")
            })?;
            if n == 0 || n > 1 << 31 {
                return Err(format!("'{part}': each dimension is 1 to 2^31"));
            }
            numel = numel.saturating_mul(n);
            shape.push(n);
        }
        if shape.len() > 8 || numel > 1 << 40 {
            return Err(format!("'{part}': at most 8 dimensions and 2^40 elements"));
        }
        out.push(InputSpec { shape, dtype });
    }
    if out.is_empty() {
        return Err("--input needs a shape like 32x3x224x224".into());
    }
    Ok(out)
}

/// The run a trace describes, in the estimate's terms (the JSON report's `inputs.run`).
pub fn run_for(
    batch: u64,
    dtype: memory::Dtype,
    mixed_precision: bool,
    optimizer: memory::Optimizer,
    inference: bool,
) -> Run {
    Run {
        batch,
        seq_len: 1,
        dtype,
        mixed_precision,
        optimizer: if inference {
            memory::Optimizer::None
        } else {
            optimizer
        },
        checkpointing: memory::Checkpointing::None,
        attention: memory::Attention::Sdpa,
        grad_accum: 1,
        inference,
        lora_rank: None,
        loss: memory::Loss::Standard,
        quant: memory::Quant::Nf4,
        group_size: 128,
        kernels: memory::Kernels::Eager,
    }
}

/// What the helper is asked.
#[derive(Debug, Clone, Serialize)]
pub struct Request {
    pub spec: Option<String>,
    pub hf_config: Option<String>,
    pub inputs: Vec<InputSpec>,
    pub input_fn: Option<String>,
    pub batch: Option<u64>,
    pub seq_len: Option<u64>,
    pub optimizer: String,
    /// torch's dtype name for the model's weights; `None`: as the model builds them.
    pub dtype: Option<String>,
    /// torch's dtype name for autocast; `None`: none.
    pub autocast: Option<String>,
    pub inference: bool,
    /// `--model --trace` only: "full" runs transformers' `gradient_checkpointing_enable()`.
    pub checkpointing: Option<String>,
    /// `--model --trace` only: LoRA adapters of this rank on PEFT's default targets, the base
    /// frozen.
    pub lora_rank: Option<u64>,
    pub remedies: bool,
    /// The peak the best GPU has room for, once the allowances are taken off.
    pub target_bytes: Option<u64>,
}

/// The peak the trace may reach on a GPU with `free` bytes: what is left after the stated
/// allowances (the CUDA context, the allocator's margin) that the trace cannot see.
pub fn target_for(free: u64) -> u64 {
    let room = free.saturating_sub(memory::CONTEXT_ALLOWANCE) as f64;
    (room / (1.0 + memory::FRAGMENTATION_MARGIN)) as u64
}

/// The allowances on top of a traced peak.
pub fn overhead_for(peak: u64) -> u64 {
    memory::CONTEXT_ALLOWANCE.saturating_add((peak as f64 * memory::FRAGMENTATION_MARGIN) as u64)
}

#[derive(Debug, Clone, Deserialize)]
struct Answer {
    ok: bool,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    torch_version: Option<String>,
    #[serde(default)]
    inputs: Option<String>,
    #[serde(default)]
    trace: Option<Step>,
    #[serde(default)]
    remedies: Option<Vec<Tried>>,
    #[serde(default)]
    fits_with: Option<Fewest>,
    #[serde(default)]
    import_seconds: Option<f64>,
    #[serde(default)]
    trace_seconds: Option<f64>,
    #[serde(default)]
    seconds: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
struct Step {
    model: ModelInfo,
    peak_bytes: u64,
    #[serde(default)]
    peak_phase: Option<String>,
    at_peak: AtPeak,
    saved_for_backward_bytes: u64,
    between_steps_bytes: u64,
    #[serde(default)]
    modules: Vec<Layer>,
    #[serde(default)]
    modules_total: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct ModelInfo {
    params: u64,
    trainable: u64,
    #[serde(default)]
    name: Option<String>,
}

/// The peak, by what each byte alive at it was.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct AtPeak {
    pub parameters: u64,
    pub buffers: u64,
    pub gradients: u64,
    pub optimizer_states: u64,
    pub inputs: u64,
    pub saved_activations: u64,
    pub temporaries: u64,
}

impl AtPeak {
    fn sum(&self) -> u64 {
        [
            self.parameters,
            self.buffers,
            self.gradients,
            self.optimizer_states,
            self.inputs,
            self.saved_activations,
            self.temporaries,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// One module of the model, as the trace saw it in the last step.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct Layer {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub output_shape: Option<Vec<u64>>,
    pub output_bytes: u64,
    pub saved_bytes: u64,
    /// Bytes it made in forward that were still alive at the peak.
    pub at_peak_bytes: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct Tried {
    id: String,
    remedy: String,
    peak_bytes: Option<u64>,
    measured: bool,
    #[serde(default)]
    changes_task: bool,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Fewest {
    remedies: Option<Vec<String>>,
    peak_bytes: Option<u64>,
    #[serde(default)]
    searched: bool,
}

/// The fewest remedies whose combined re-trace fits the best GPU, and that trace's peak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fit {
    pub remedies: Vec<String>,
    pub peak_bytes: u64,
}

/// A remedy re-traced (or, where it cannot be, by formula, and said so).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TracedRemedy {
    pub id: String,
    pub remedy: String,
    /// The peak with it; `None` where the re-trace failed.
    pub peak_bytes: Option<u64>,
    /// What it saves on the traced peak (negative: it costs).
    pub saves_bytes: Option<i64>,
    /// Measured by re-tracing, or (false) a formula's figure.
    pub measured: bool,
    pub changes_task: bool,
    /// Why the re-trace failed.
    pub error: Option<String>,
}

/// What the trace measured: the JSON report's `trace` object.
#[derive(Debug, Clone, Serialize)]
pub struct Traced {
    pub spec: String,
    pub torch_version: Option<String>,
    pub model_class: Option<String>,
    pub params: u64,
    pub trainable_params: u64,
    pub inputs: Option<String>,
    /// The peak of one step on fake tensors, each allocation rounded up to 512 bytes as the
    /// CUDA caching allocator rounds it: comparable with `torch.cuda.max_memory_allocated()`.
    pub peak_bytes: u64,
    /// forward, backward or optimizer.
    pub peak_phase: Option<String>,
    pub at_peak: AtPeak,
    /// Every tensor autograd saved for backward, alive at the end of the forward pass.
    pub saved_for_backward_bytes: u64,
    /// What stays between steps (parameters, buffers, optimizer states).
    pub between_steps_bytes: u64,
    /// The CUDA context allowance and the allocator's margin: stated, not measured.
    pub allowance_bytes: u64,
    pub layers: Vec<Layer>,
    pub layers_total: u64,
    pub remedies: Vec<TracedRemedy>,
    /// Whether the search for the fewest remedies that fit ran to its end.
    pub fit_search_complete: Option<bool>,
    pub seconds: Option<f64>,
    pub import_seconds: Option<f64>,
    pub trace_seconds: Option<f64>,
}

fn plausible(what: &str, v: u64) -> Result<u64, TraceError> {
    if v >= super::MAX_PLAUSIBLE {
        return Err(TraceError::Malformed(format!("{what} is {v} bytes")));
    }
    Ok(v)
}

fn seconds(v: Option<f64>) -> Option<f64> {
    v.filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e7)
}

/// Reads the helper's answer: a trace, or its refusal with a cause.
pub fn parse(answer: &[u8], spec: &str) -> Result<(Traced, Option<Fit>), TraceError> {
    if answer.len() > MAX_ANSWER {
        return Err(TraceError::Malformed(format!(
            "{} bytes, more than the {} accepted",
            answer.len(),
            MAX_ANSWER
        )));
    }
    let a: Answer = serde_json::from_slice(answer)
        .map_err(|e| TraceError::Malformed(format!("not its JSON ({e})")))?;
    if !a.ok {
        let message = a
            .error
            .as_deref()
            .and_then(|e| e.lines().next())
            .unwrap_or("the tracer failed without a cause")
            .chars()
            .take(1000)
            .collect();
        return Err(TraceError::Refused {
            kind: a.kind.unwrap_or_else(|| "internal".into()),
            message,
        });
    }
    let step = a
        .trace
        .ok_or_else(|| TraceError::Malformed("no trace".into()))?;
    let peak = plausible("the peak", step.peak_bytes)?;
    for (what, v) in [
        ("the saved activations", step.saved_for_backward_bytes),
        ("what stays between steps", step.between_steps_bytes),
    ] {
        plausible(what, v)?;
    }
    if step.at_peak.sum() != peak {
        return Err(TraceError::Malformed(format!(
            "the peak's parts add up to {} bytes, not its {peak}",
            step.at_peak.sum()
        )));
    }
    if step.model.trainable > step.model.params {
        return Err(TraceError::Malformed(
            "more trainable parameters than parameters".into(),
        ));
    }
    let mut layers = step.modules;
    for l in &layers {
        for v in [l.output_bytes, l.saved_bytes, l.at_peak_bytes] {
            plausible("a layer's figure", v)?;
        }
        if l.at_peak_bytes > peak {
            return Err(TraceError::Malformed(format!(
                "a layer holds more at the peak than the peak ({} > {peak})",
                l.at_peak_bytes
            )));
        }
    }
    // The largest share of the peak first, whatever order the helper sent.
    layers.sort_by(|a, b| {
        (b.at_peak_bytes, b.saved_bytes, b.output_bytes)
            .cmp(&(a.at_peak_bytes, a.saved_bytes, a.output_bytes))
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut remedies = Vec::new();
    for t in a.remedies.unwrap_or_default() {
        let p = match t.peak_bytes {
            Some(p) => Some(plausible("a remedy's peak", p)?),
            None => None,
        };
        remedies.push(TracedRemedy {
            saves_bytes: p.map(|p| peak as i64 - p as i64),
            id: t.id,
            remedy: t.remedy,
            peak_bytes: p,
            measured: t.measured,
            changes_task: t.changes_task,
            error: t.error,
        });
    }
    // Largest saving first; failed re-traces last.
    remedies.sort_by_key(|r| std::cmp::Reverse(r.saves_bytes.unwrap_or(i64::MIN)));
    let (fit_search_complete, fewest) = match a.fits_with {
        Some(f) => {
            let names = f.remedies.map(|ids| {
                ids.iter()
                    .map(|id| {
                        remedies
                            .iter()
                            .find(|r| &r.id == id)
                            .map_or_else(|| id.clone(), |r| r.remedy.clone())
                    })
                    .collect::<Vec<_>>()
            });
            if let Some(p) = f.peak_bytes {
                plausible("the combination's peak", p)?;
            }
            (
                Some(f.searched),
                names.zip(f.peak_bytes).map(|(remedies, peak_bytes)| Fit {
                    remedies,
                    peak_bytes,
                }),
            )
        }
        None => (None, None),
    };
    let traced = Traced {
        spec: spec.to_owned(),
        torch_version: a.torch_version,
        model_class: step.model.name,
        params: step.model.params,
        trainable_params: step.model.trainable,
        inputs: a.inputs,
        peak_bytes: peak,
        peak_phase: step.peak_phase,
        at_peak: step.at_peak,
        saved_for_backward_bytes: step.saved_for_backward_bytes,
        between_steps_bytes: step.between_steps_bytes,
        allowance_bytes: overhead_for(peak),
        layers,
        layers_total: step.modules_total,
        remedies,
        fit_search_complete,
        seconds: seconds(a.seconds),
        import_seconds: seconds(a.import_seconds),
        trace_seconds: seconds(a.trace_seconds),
    };
    Ok((traced, fewest))
}

/// The report of a traced run: the estimate's layout and schema, `method: "traced"`.
pub fn report(
    traced: Traced,
    fewest: Option<Fit>,
    run: Run,
    gpus: Result<Vec<GpuFree>, String>,
) -> Report {
    let a = traced.at_peak;
    let total = traced.peak_bytes.saturating_add(traced.allowance_bytes);
    let training = !run.inference;
    let parts = Parts {
        weights_bytes: a.parameters.saturating_add(a.buffers),
        gradients_bytes: training.then_some(a.gradients),
        optimizer_bytes: training.then_some(a.optimizer_states),
        activations_bytes: Some(
            a.saved_activations
                .saturating_add(a.inputs)
                .saturating_add(a.temporaries),
        ),
        logits_bytes: None,
        kv_cache_bytes: None,
        not_together_bytes: 0,
        overhead_bytes: traced.allowance_bytes,
        total_bytes: total,
    };
    let resident = traced
        .between_steps_bytes
        .saturating_add(overhead_for(traced.between_steps_bytes));
    let (gpus, gpus_error) = match gpus {
        Ok(list) => (
            list.into_iter()
                .map(|g| {
                    let (mig_profile, gpu_instance_id) = g.mig.unwrap_or((None, None));
                    GpuFit {
                        fits: g.free_bytes.map(|f| total <= f),
                        index: g.index,
                        uuid: g.uuid,
                        name: g.name,
                        free_bytes: g.free_bytes,
                        mig_profile,
                        gpu_instance_id,
                    }
                })
                .collect::<Vec<_>>(),
            None,
        ),
        Err(e) => (Vec::new(), Some(e)),
    };
    let best_gpu = gpus
        .iter()
        .filter_map(|g| Some((g.index, g.free_bytes?)))
        .max_by_key(|(_, f)| *f);
    let plan = traced
        .remedies
        .iter()
        .filter_map(|r| {
            let s = r.saves_bytes.filter(|s| *s > 0)?;
            Some(Remedy {
                remedy: if r.measured {
                    format!("{} (measured)", r.remedy)
                } else {
                    r.remedy.clone()
                },
                saves_bytes: s as u64,
            })
        })
        .collect();
    let fits_with = match (fewest, best_gpu) {
        (Some(f), Some((gpu, free))) if total > free => Some(super::Combination {
            remedies: f.remedies,
            total_bytes: f.peak_bytes.saturating_add(overhead_for(f.peak_bytes)),
            gpu_index: gpu,
        }),
        _ => None,
    };
    Report {
        schema_version: SCHEMA_VERSION,
        method: "traced",
        inputs: Inputs {
            model: Shape {
                family: "traced".into(),
                params: traced.params,
                ..Shape::default()
            },
            weights_on_disk_bytes: None,
            trainable_params: traced.trainable_params,
            run,
        },
        parts,
        resident_bytes: resident,
        total_bytes: total,
        peak_known: true,
        gpus,
        gpus_error,
        plan,
        fits_with,
        trace: Some(traced),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::testing::answer;

    #[test]
    fn input_shapes_as_people_write_them() {
        assert_eq!(
            parse_inputs("32x3x224x224").expect("one"),
            vec![InputSpec {
                shape: vec![32, 3, 224, 224],
                dtype: None
            }]
        );
        let two = parse_inputs("8x512:int64, 8x512:int64").expect("two");
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].dtype.as_deref(), Some("int64"));
        assert!(parse_inputs("32x0").is_err());
        assert!(parse_inputs("32xabc").is_err());
        assert!(parse_inputs("8x512:complex")
            .expect_err("dtype")
            .contains("unknown dtype"));
        assert!(parse_inputs("").is_err());
        assert!(parse_inputs("65536x65536x65536").is_err(), "2^48 elements");
    }

    #[test]
    fn a_trace_is_read_checked_and_sorted() {
        let (t, _) = parse(
            answer(1000, [500, 0, 100, 200, 50, 100, 50]).as_bytes(),
            "m:f",
        )
        .expect("valid");
        assert_eq!(t.peak_bytes, 1000);
        assert_eq!(t.layers[0].at_peak_bytes, 90, "the largest share first");
        assert_eq!(t.remedies[0].saves_bytes, Some(400));
        assert_eq!(t.remedies[1].saves_bytes, Some(-100), "a remedy that costs");
        assert_eq!(t.remedies[2].saves_bytes, None);
        let r = report(
            t.clone(),
            None,
            run_for(
                4,
                memory::Dtype::Fp32,
                false,
                memory::Optimizer::Adam,
                false,
            ),
            Ok(vec![]),
        );
        assert_eq!(r.method, "traced");
        assert_eq!(r.total_bytes, 1000 + overhead_for(1000));
        assert_eq!(r.plan.len(), 1, "only what saves is a plan entry");
    }

    #[test]
    fn an_answer_that_does_not_add_up_or_is_too_big_is_refused() {
        let e = parse(
            answer(1000, [500, 0, 100, 200, 50, 100, 51]).as_bytes(),
            "m:f",
        )
        .expect_err("parts add to 1001");
        assert!(e.to_string().contains("add up to 1001"), "{e}");
        let e = parse(
            answer(1 << 62, [1 << 62, 0, 0, 0, 0, 0, 0]).as_bytes(),
            "m:f",
        )
        .expect_err("implausible");
        assert!(matches!(e, TraceError::Malformed(_)));
        let big = vec![b' '; MAX_ANSWER + 1];
        assert!(parse(&big, "m:f").is_err());
        assert!(parse(b"Traceback (most recent call last):", "m:f").is_err());
        let refused = parse(
            br#"{"ok": false, "kind": "input", "error": "the forward pass failed\nmore", "detail": "x"}"#,
            "m:f",
        )
        .expect_err("refused");
        assert_eq!(
            refused,
            TraceError::Refused {
                kind: "input".into(),
                message: "the forward pass failed".into()
            }
        );
    }

    #[test]
    fn the_target_leaves_room_for_the_allowances() {
        let free = 80u64 << 30;
        let t = target_for(free);
        assert!(t + overhead_for(t) <= free);
        assert!(t + overhead_for(t) + (1 << 20) > free - (1 << 20));
        assert_eq!(target_for(1 << 20), 0);
    }
}
