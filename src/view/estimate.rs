//! `gpumon estimate`'s report as text: the formula's parts or the trace's measured peak, each
//! GPU's verdict and the plan. Text from the estimate's model values ([`Report`], [`Traced`]);
//! no I/O: the command chooses where the text goes.

use std::fmt::Write as _;

use crate::estimate::trace::{Traced, DEFAULT_LAYERS};
use crate::estimate::Report;
use crate::text::escape;
use crate::units::fmt_bytes;

fn count(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.2} B", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} M", n as f64 / 1e6),
        n => n.to_string(),
    }
}

/// The report as text (a traced one with the first `layers` layers, or ten).
pub fn render(r: &Report) -> String {
    render_with(r, None)
}

/// The report as text, showing `layers` rows of a trace's layer table (`None`: ten).
pub fn render_with(r: &Report, layers: Option<usize>) -> String {
    let mut out = String::new();
    let run = &r.inputs.run;
    if let Some(t) = &r.trace {
        render_trace(&mut out, r, t, layers);
        fit_and_plan(&mut out, r);
        return out;
    }
    let m = &r.inputs.model;
    let what = if run.inference {
        "inference".to_owned()
    } else {
        format!(
            "training with {}{}{}",
            serde_json::to_value(run.optimizer)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            if run.mixed_precision {
                ", bf16 mixed precision"
            } else {
                ""
            },
            match run.lora_rank {
                Some(rank) => format!(
                    ", LoRA rank {rank} ({} trainable)",
                    count(r.inputs.trainable_params)
                ),
                None => String::new(),
            }
        )
    };
    let name = |v: serde_json::Value| v.as_str().map(str::to_owned).unwrap_or_default();
    let _ = writeln!(
        out,
        "{} parameters ({}), {what}: batch {} × {} tokens{}, {} weights, {} attention, {} kernels, checkpointing {}",
        count(m.params),
        m.family,
        run.batch,
        run.seq_len,
        if run.grad_accum > 1 { format!(" × {} accumulated", run.grad_accum) } else { String::new() },
        name(serde_json::json!(run.dtype)),
        name(serde_json::json!(run.attention)),
        name(serde_json::json!(run.kernels)),
        name(serde_json::json!(run.checkpointing)),
    );
    out.push('\n');
    let row = |out: &mut String, label: &str, v: Option<u64>| {
        let _ = writeln!(
            out,
            "  {label:<34}{:>12}",
            v.map_or_else(|| "—".to_owned(), fmt_bytes)
        );
    };
    let p = &r.parts;
    row(&mut out, "weights", Some(p.weights_bytes));
    row(&mut out, "gradients", p.gradients_bytes);
    row(&mut out, "optimizer states", p.optimizer_bytes);
    row(&mut out, "activations", p.activations_bytes);
    if !run.inference {
        row(&mut out, "logits and loss", p.logits_bytes);
    }
    row(&mut out, "KV cache", p.kv_cache_bytes);
    if p.not_together_bytes > 0 {
        let _ = writeln!(
            out,
            "  {:<34}{:>12}",
            "not held at once (see below)",
            format!("−{}", fmt_bytes(p.not_together_bytes))
        );
    }
    row(
        &mut out,
        "context allowance + fragmentation",
        Some(p.overhead_bytes),
    );
    row(&mut out, "between steps", Some(r.resident_bytes));
    if r.peak_known {
        row(&mut out, "peak (must fit)", Some(r.total_bytes));
    } else {
        let _ = writeln!(out, "  {:<34}{:>12}", "peak (must fit)", "unknown");
        let _ = writeln!(
            out,
            "\n  The peak is unknown: the activations{} need the model's shape (--layers,\n  \
             --hidden and --heads, or --model). It is more than the {} between steps.",
            if run.inference {
                " and the KV cache"
            } else {
                ""
            },
            fmt_bytes(r.resident_bytes)
        );
    }
    if p.not_together_bytes > 0 {
        let _ = writeln!(
            out,
            "\n  Not held at once: backward makes the gradients as it frees the activations,\n  \
             so the step holds the largest of its moments, the loss's backward among them."
        );
    }
    out.push('\n');
    fit_and_plan(&mut out, r);
    out
}

/// Each GPU's verdict, then (when none fits) what each change saves and the fewest that fit.
fn fit_and_plan(out: &mut String, r: &Report) {
    if let Some(e) = &r.gpus_error {
        let first = e.lines().next().unwrap_or("");
        let _ = writeln!(
            out,
            "No GPU was read, so the estimate stands alone: {first}"
        );
    }
    for g in &r.gpus {
        let verdict = match (g.fits, g.free_bytes) {
            (Some(true), Some(f)) => format!("fits ({} to spare)", fmt_bytes(f - r.total_bytes)),
            (Some(false), Some(f)) if !r.peak_known => format!(
                "does not fit (the states alone are {} short)",
                fmt_bytes(r.resident_bytes.saturating_sub(f))
            ),
            (Some(false), Some(f)) => {
                format!("does not fit ({} short)", fmt_bytes(r.total_bytes - f))
            }
            (None, Some(_)) => "room between steps; the peak is unknown".into(),
            _ => "free memory unknown".into(),
        };
        let name = match (&g.mig_profile, g.gpu_instance_id) {
            (Some(p), Some(gi)) => format!("MIG {p} (GI {gi})"),
            (Some(p), None) => format!("MIG {p}"),
            _ => g.name.clone().unwrap_or_else(|| "GPU".into()),
        };
        let _ = writeln!(
            out,
            "  [{}] {:<28} free {:>10}   {verdict}",
            g.index,
            name,
            g.free_bytes.map_or_else(|| "N/A".to_owned(), fmt_bytes)
        );
    }
    if let Some(t) = &r.trace {
        render_remedies(out, t);
        if t.fit_search_complete == Some(false) && r.fits_with.is_none() {
            out.push_str(
                "\nNo combination fitted within the re-traces allowed (12); the list above \
                 says what each change measures.\n",
            );
            return;
        }
    }
    if !r.plan.is_empty() && r.gpus.iter().all(|g| g.fits != Some(true)) {
        if r.trace.is_none() {
            out.push_str("\nWhat each change saves on its own:\n");
        }
        for rem in r.plan.iter().filter(|_| r.trace.is_none()) {
            let _ = writeln!(
                out,
                "  - {} (saves {})",
                rem.remedy,
                fmt_bytes(rem.saves_bytes)
            );
        }
        match &r.fits_with {
            Some(c) => {
                let _ = writeln!(
                    out,
                    "\nThe fewest changes that fit GPU {} ({} peak{}):",
                    c.gpu_index,
                    fmt_bytes(c.total_bytes),
                    if r.trace.is_some() {
                        ", re-traced together"
                    } else {
                        ""
                    }
                );
                for rem in &c.remedies {
                    let _ = writeln!(out, "  - {}", escape(rem));
                }
            }
            None if !r.peak_known => out.push_str(
                "\nWhich of these would fit is as unknown as the peak: give the model's shape.\n",
            ),
            None if !r.gpus.is_empty() => out.push_str(
                "\nNo combination of these fits any GPU here: shard the model across GPUs \
                 (FSDP, DeepSpeed ZeRO-3, tensor parallelism) or use a larger GPU.\n",
            ),
            None => {}
        }
    }
}

fn shape_text(s: &Option<Vec<u64>>) -> String {
    match s {
        Some(d) if !d.is_empty() => d.iter().map(u64::to_string).collect::<Vec<_>>().join("×"),
        Some(_) => "scalar".into(),
        None => "—".into(),
    }
}

/// The traced part of the text report: the peak by kind, the allowances, the layer table.
pub fn render_trace(out: &mut String, r: &Report, t: &Traced, layers: Option<usize>) {
    let run = &r.inputs.run;
    let what = if run.inference {
        "inference (torch.no_grad())".to_owned()
    } else {
        format!(
            "one training step with {}",
            serde_json::to_value(run.optimizer)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        )
    };
    let _ = writeln!(
        out,
        "{} ({}): {} parameters, traced on fake tensors with PyTorch {}: {what}, input {}",
        escape(&t.spec),
        escape(t.model_class.as_deref().unwrap_or("?")),
        count(r.inputs.model.params),
        escape(t.torch_version.as_deref().unwrap_or("?")),
        escape(t.inputs.as_deref().unwrap_or("?")),
    );
    out.push('\n');
    let row = |out: &mut String, label: &str, v: u64| {
        let _ = writeln!(out, "  {label:<40}{:>12}", fmt_bytes(v));
    };
    let a = &t.at_peak;
    let _ = writeln!(
        out,
        "  At the peak ({}), measured:",
        t.peak_phase.as_deref().map_or("?".into(), escape)
    );
    row(out, "parameters", a.parameters);
    if a.buffers > 0 {
        row(out, "buffers", a.buffers);
    }
    if !run.inference {
        row(out, "gradients", a.gradients);
        row(out, "optimizer states", a.optimizer_states);
    }
    row(out, "input batch", a.inputs);
    if !run.inference {
        row(out, "activations saved for backward", a.saved_activations);
    }
    row(out, "temporaries", a.temporaries);
    row(out, "peak allocated (traced)", t.peak_bytes);
    let _ = writeln!(out, "  Not seen by the trace, allowed for:");
    row(out, "CUDA context + allocator margin", t.allowance_bytes);
    row(out, "between steps", r.resident_bytes);
    row(out, "peak (must fit)", r.total_bytes);
    if !run.inference {
        let _ = writeln!(
            out,
            "\n  Saved for backward at the end of forward: {}.",
            fmt_bytes(t.saved_for_backward_bytes)
        );
    }
    let shown = layers.unwrap_or(DEFAULT_LAYERS).min(t.layers.len());
    if shown > 0 {
        let _ = writeln!(
            out,
            "\n  {:<28} {:<16} {:>18} {:>10} {:>10} {:>10} {:>6}",
            "layer", "type", "output", "out bytes", "saved", "at peak", "share"
        );
        for l in &t.layers[..shown] {
            let name = escape(&l.name);
            let name: String = if name.chars().count() > 28 {
                let tail: String = name
                    .chars()
                    .rev()
                    .take(27)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("…{tail}")
            } else {
                name.into_owned()
            };
            let share = if t.peak_bytes > 0 {
                l.at_peak_bytes as f64 * 100.0 / t.peak_bytes as f64
            } else {
                0.0
            };
            let kind: String = escape(&l.kind).chars().take(16).collect();
            let _ = writeln!(
                out,
                "  {name:<28} {kind:<16} {:>18} {:>10} {:>10} {:>10} {:>5.1}%",
                shape_text(&l.output_shape),
                fmt_bytes(l.output_bytes),
                fmt_bytes(l.saved_bytes),
                fmt_bytes(l.at_peak_bytes),
                share
            );
        }
        let total = t.layers_total.max(t.layers.len() as u64);
        if (shown as u64) < total {
            let _ = writeln!(
                out,
                "  … {} more (--layers N shows N, --layers all of them)",
                total - shown as u64
            );
        }
    }
    out.push('\n');
}

/// Each remedy's measured peak, for the text report (failed and costly ones included).
pub fn render_remedies(out: &mut String, t: &Traced) {
    if t.remedies.is_empty() {
        return;
    }
    out.push_str("\nEach change, re-traced (the peak with it, and what that saves):\n");
    for r in &t.remedies {
        let how = if r.measured {
            ""
        } else {
            " [formula, not traced]"
        };
        match (r.peak_bytes, r.saves_bytes) {
            (Some(p), Some(s)) if s > 0 => {
                let _ = writeln!(
                    out,
                    "  - {}: {} (saves {}){how}",
                    escape(&r.remedy),
                    fmt_bytes(p),
                    fmt_bytes(s as u64)
                );
            }
            (Some(p), Some(s)) if s < 0 => {
                let _ = writeln!(
                    out,
                    "  - {}: {} (costs {} more){how}",
                    escape(&r.remedy),
                    fmt_bytes(p),
                    fmt_bytes(s.unsigned_abs())
                );
            }
            (Some(p), _) => {
                let _ = writeln!(
                    out,
                    "  - {}: {} (saves nothing at the peak){how}",
                    escape(&r.remedy),
                    fmt_bytes(p)
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "  - {}: not traced ({})",
                    escape(&r.remedy),
                    escape(r.error.as_deref().unwrap_or("failed"))
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::memory::{Optimizer, Run, Shape};
    use crate::estimate::testing::{answer, flags, gpu, llama7b, mig_devices, training};
    use crate::estimate::trace::{overhead_for, parse, run_for};
    use crate::estimate::{memory, report, GpuFree};

    #[test]
    fn without_the_shape_the_peak_is_unknown_and_no_gpu_is_said_to_fit() {
        let shape = Shape {
            family: "custom".into(),
            params: 7_000_000_000,
            ..Shape::default()
        };
        let (_, _, run) = flags("").expect("flags");
        let r = report(
            shape,
            None,
            run,
            Ok(vec![gpu(0, None, 80 << 30), gpu(1, None, 20 << 30)]),
        );
        let text = render(&r);
        assert!(
            text.contains("peak (must fit)                        unknown"),
            "{text}"
        );
        assert!(
            text.contains("room between steps; the peak is unknown"),
            "{text}"
        );
        assert!(!text.contains("No combination"), "{text}");
    }

    #[test]
    fn with_mig_on_the_candidates_are_the_instances() {
        let c = GpuFree::candidates(&mig_devices());
        let r = report(llama7b(), None, training(), Ok(c));
        let text = render(&r);
        assert!(text.contains("[1] MIG 3g.40gb (GI 1)"), "{text}");
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
        assert!(!render(&fits).contains("fewest changes"));
        let r = report(
            llama7b(),
            None,
            training(),
            Ok(vec![gpu(0, None, 20 * gib), gpu(1, None, 79 * gib)]),
        );
        assert!(render(&r).contains("The fewest changes that fit GPU 1"));
    }

    #[test]
    fn without_a_gpu_the_estimate_still_stands() {
        let r = report(llama7b(), None, training(), Err("no NVIDIA driver".into()));
        assert!(render(&r).contains("No GPU was read, so the estimate stands alone"));
    }

    #[test]
    fn a_trace_is_shown_escaped_with_what_each_remedy_saves_or_costs() {
        let (t, _) = parse(
            answer(1000, [500, 0, 100, 200, 50, 100, 50]).as_bytes(),
            "m:f",
        )
        .expect("valid");
        let r = crate::estimate::trace::report(
            t.clone(),
            None,
            run_for(4, memory::Dtype::Fp32, false, Optimizer::Adam, false),
            Ok(vec![]),
        );
        assert_eq!(r.total_bytes, 1000 + overhead_for(1000));
        let mut text = String::new();
        render_trace(&mut text, &r, &t, None);
        assert!(!text.contains('\u{1b}'), "names are escaped: {text}");
        render_remedies(&mut text, &t);
        assert!(text.contains("costs"), "{text}");
        assert!(text.contains("not traced (boom)"), "{text}");
    }

    proptest::proptest! {
        /// Any shape and run the flags accept gives a report whose text never panics.
        #[test]
        fn any_accepted_input_gives_a_text(
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
            proptest::prop_assert!(!render(&r).is_empty());
        }
    }
}
