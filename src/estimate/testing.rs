//! Fixtures the estimate's tests and its text view's tests share: one shape, one run, the
//! flags parser without clap, GPUs and a tracer's answer, so the model's assertions and the
//! text's assertions read the same reports.

use super::memory::{self, Checkpointing, Dtype, Optimizer, Run, Shape};
use super::{inputs, Flags, GpuFree};
use crate::model::{Device, Memory, MigDevice};

/// The estimate's inputs from a line of `key=value` words over a 7B shape.
pub(crate) fn flags(line: &str) -> Result<(Shape, Option<u64>, Run), String> {
    // The same parser the command line and the dashboard use, without clap here.
    let mut f = Flags {
        model: None,
        params: Some(7_000_000_000),
        layers: Some(32),
        hidden: Some(4096),
        heads: Some(32),
        kv_heads: None,
        vocab: Some(32000),
        intermediate: None,
        gated_mlp: false,
        batch: 1,
        seq_len: 2048,
        dtype: Dtype::Bf16,
        mixed_precision: false,
        optimizer: Optimizer::Adamw,
        checkpointing: Checkpointing::None,
        attention: memory::Attention::Sdpa,
        grad_accum: 1,
        inference: false,
        lora_rank: None,
        loss: memory::Loss::Standard,
        quant: None,
        group_size: 128,
        kernels: memory::Kernels::Eager,
    };
    for part in line.split_whitespace() {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let n = v.parse::<u64>().ok();
        match k {
            "kv" => f.kv_heads = n,
            "hidden" => f.hidden = n,
            "heads" => f.heads = n,
            "batch" => f.batch = n.unwrap_or(1),
            "seq" => f.seq_len = n.unwrap_or(1),
            "layers" => f.layers = n,
            "params" => f.params = n,
            _ => {}
        }
    }
    inputs(&f)
}

/// One GPU with `free` bytes free.
pub(crate) fn gpu(index: u32, name: Option<&str>, free: u64) -> GpuFree {
    GpuFree {
        index,
        uuid: None,
        name: name.map(str::to_owned),
        free_bytes: Some(free),
        mig: None,
    }
}

/// Llama 2 7B's shape.
pub(crate) fn llama7b() -> Shape {
    Shape {
        family: "llama".into(),
        params: 6_738_415_616,
        layers: Some(32),
        hidden: Some(4096),
        heads: Some(32),
        kv_heads: Some(32),
        vocab: Some(32000),
        intermediate: Some(11008),
        gated_mlp: true,
        tied_embeddings: Some(false),
        norm: Some(memory::Norm::RmsNorm),
        activation: Some(memory::Act::Silu),
        residual_dropout: Some(false),
    }
}

/// A bf16 mixed-precision AdamW training run, batch 8 × 4096, NF4 weights.
pub(crate) fn training() -> Run {
    Run {
        batch: 8,
        seq_len: 4096,
        dtype: Dtype::Bf16,
        mixed_precision: true,
        optimizer: Optimizer::Adamw,
        checkpointing: Checkpointing::None,
        attention: memory::Attention::Sdpa,
        grad_accum: 1,
        inference: false,
        lora_rank: None,
        loss: memory::Loss::Standard,
        quant: memory::Quant::Nf4,
        group_size: 128,
        kernels: memory::Kernels::Eager,
    }
}

/// A whole GPU and a MIG GPU split into two 3g.40gb instances (30 and 10 GiB free).
pub(crate) fn mig_devices() -> Vec<Device> {
    let inst = |index, gi, free| MigDevice {
        index,
        uuid: Some(format!("MIG-{gi}")),
        profile: Some("3g.40gb".into()),
        gpu_instance_id: Some(gi),
        memory: Memory {
            free_bytes: Some(free),
            ..Memory::default()
        },
        ..MigDevice::default()
    };
    let whole = Device {
        index: 0,
        uuid: Some("GPU-a".into()),
        memory: Memory {
            free_bytes: Some(70 << 30),
            ..Memory::default()
        },
        ..Device::default()
    };
    let split = Device {
        index: 1,
        uuid: Some("GPU-b".into()),
        memory: Memory {
            free_bytes: Some(60 << 30),
            ..Memory::default()
        },
        mig: vec![inst(0, 1, 30 << 30), inst(1, 2, 10 << 30)],
        ..Device::default()
    };
    vec![whole, split]
}

/// A tracer's answer with this peak and these parts at the peak (parameters, buffers,
/// gradients, optimizer states, inputs, saved activations, temporaries), two layers (one with
/// an escape sequence in its name) and three remedies: one saves, one costs, one failed.
pub(crate) fn answer(peak: u64, parts: [u64; 7]) -> String {
    serde_json::json!({
        "ok": true, "torch_version": "2.15.0", "inputs": "4x8",
        "trace": {
            "model": {"params": 10, "trainable": 10, "name": "M"},
            "peak_bytes": peak, "peak_phase": "backward",
            "at_peak": {"parameters": parts[0], "buffers": parts[1], "gradients": parts[2],
                "optimizer_states": parts[3], "inputs": parts[4], "saved_activations": parts[5],
                "temporaries": parts[6]},
            "saved_for_backward_bytes": 100, "between_steps_bytes": 50,
            "modules": [
                {"name": "a", "type": "Linear", "output_shape": [4, 8], "output_bytes": 128,
                 "saved_bytes": 0, "at_peak_bytes": 10, "calls": 1},
                {"name": "b\u{1b}[31m", "type": "ReLU", "output_shape": [4, 8], "output_bytes": 128,
                 "saved_bytes": 128, "at_peak_bytes": 90, "calls": 1}
            ],
            "modules_total": 2
        },
        "remedies": [
            {"id": "half-batch", "remedy": "half", "peak_bytes": 600, "measured": true},
            {"id": "inplace", "remedy": "inplace", "peak_bytes": 1100, "measured": true},
            {"id": "checkpoint", "remedy": "ckpt", "peak_bytes": null, "measured": false, "error": "boom"}
        ]
    })
    .to_string()
}
