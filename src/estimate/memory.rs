//! The model of a run's GPU memory: pure arithmetic on a model's shape and the run's settings.
//!
//! Sources, as cited in the README:
//! - model states after ZeRO (Rajbhandari et al., 2020, §3.1): mixed-precision Adam keeps
//!   2 + 2 + 12 bytes per parameter (fp16 weights, fp16 gradients, fp32 master weights,
//!   momentum and variance);
//! - activations per transformer layer after Korthikanti et al. (2022, §4, eq. 1–2):
//!   s·b·h·(34 + 5·a·s/h) bytes with 16-bit activations and no recomputation, s·b·h·34 with
//!   selective recomputation, 2·s·b·h (the layer's input) with full recomputation; adapted
//!   here for grouped-query attention (K and V shrink by kv_heads/heads) and gated MLPs
//!   (three matrices of width `intermediate` instead of two of width 4h). That is what fused
//!   kernels keep ([`Kernels::Fused`]); the modules as transformers writes them keep more,
//!   counted term by term from their code and checked against a trace of them
//!   ([`Kernels::Eager`], the default), and a frozen base (LoRA) keeps less;
//! - what is held at once: gradients are made during backward as activations are freed, so
//!   the step's peak is the largest of its moments (the end of forward, the loss's backward,
//!   the output layer's backward, the end of backward), not their sum;
//! - the KV cache: 2 × layers × kv_heads × head_dim × seq × batch × bytes.

use serde::Serialize;

/// What is known of the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Shape {
    /// The architecture, as understood ("llama", "gpt2"…), or "custom" from flags.
    pub family: String,
    pub params: u64,
    pub layers: Option<u64>,
    pub hidden: Option<u64>,
    pub heads: Option<u64>,
    pub kv_heads: Option<u64>,
    pub vocab: Option<u64>,
    pub intermediate: Option<u64>,
    /// SwiGLU-style MLP: gate, up and down matrices.
    pub gated_mlp: bool,
    /// Whether the output layer shares the input embedding's matrix; `None`: not known
    /// (counted as two matrices).
    #[serde(default)]
    pub tied_embeddings: Option<bool>,
    /// The layers' normalization; `None`: not known (counted as a LayerNorm, which keeps its
    /// input alone).
    #[serde(default)]
    pub norm: Option<Norm>,
    /// The activation of a non-gated MLP, as the config names it; `None`: not known (counted
    /// as a fused GELU, which keeps its input alone).
    #[serde(default)]
    pub activation: Option<Act>,
    /// Whether dropout follows the attention and the MLP in training (a 1-byte mask each);
    /// `None`: not known (counted, as Korthikanti et al. count it).
    #[serde(default)]
    pub residual_dropout: Option<bool>,
}

/// A transformer layer's normalization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Norm {
    /// `nn.LayerNorm` (GPT-2, GPT-NeoX, BERT): `native_layer_norm` keeps its input and the
    /// per-row mean and rstd.
    LayerNorm,
    /// RMSNorm (Llama, Mistral, Qwen2, Gemma). As transformers writes it
    /// (`LlamaRMSNorm.forward`, models/llama/modeling_llama.py) it upcasts the input to fp32,
    /// keeps that copy for `pow` and the product with the rsqrt, and multiplies the weight by
    /// the normalized value cast back, which that product keeps: 4 + e bytes a value with
    /// e-byte activations. A fused RMSNorm (Liger's `LigerRMSNormFunction`) keeps its input
    /// and the rsqrt.
    RmsNorm,
}

/// The activation of a non-gated MLP, by the config's name for it (`hidden_act`, GPT-2's
/// `activation_function`), as transformers/activations.py implements each (`ACT2CLS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Act {
    /// One kernel: `gelu` (`GELUActivation`, `nn.functional.gelu`), `gelu_pytorch_tanh`
    /// (`GELUTanh`, `gelu(approximate="tanh")`): its input alone.
    Gelu,
    /// `gelu_new` (`NewGELUActivation`) and `gelu_python_tanh`, written out in Python:
    /// `0.5 * x * (1 + tanh(c * (x + 0.044715 * pow(x, 3))))`. `pow` keeps x, `tanh` its
    /// output, and the last product both its factors: four tensors as wide as x.
    GeluNew,
    /// `gelu_fast` (`FastGELUActivation`), written out: seven tensors as wide as x (x and
    /// `0.044715 * x` for their product, `x * c` and `1 + …` for theirs, `tanh`'s output, and
    /// both factors of the last product).
    GeluFast,
    /// `quick_gelu` (`QuickGELUActivation`, `x * sigmoid(1.702 * x)`): `sigmoid`'s output and
    /// x.
    QuickGelu,
    /// `relu`: its output, which is the next layer's input as well: nothing of its own.
    Relu,
    /// `silu`/`swish` (`nn.functional.silu`): its input.
    Silu,
}

impl Act {
    /// The config's name for it; an unknown name is counted as a fused GELU.
    pub fn from_config(name: &str) -> Act {
        match name {
            "gelu_new" | "gelu_python_tanh" => Act::GeluNew,
            "gelu_fast" => Act::GeluFast,
            "quick_gelu" => Act::QuickGelu,
            "relu" => Act::Relu,
            "silu" | "swish" => Act::Silu,
            _ => Act::Gelu,
        }
    }

    /// Tensors as wide as the MLP that the activation keeps for backward, beside its output
    /// (which the next linear layer keeps). A fused kernel keeps its input alone.
    fn saved(self, kernels: Kernels) -> f64 {
        match (self, kernels) {
            (Act::Relu, _) => 0.0,
            (_, Kernels::Fused) | (Act::Gelu | Act::Silu, _) => 1.0,
            (Act::GeluNew, Kernels::Eager) => 4.0,
            (Act::GeluFast, Kernels::Eager) => 7.0,
            (Act::QuickGelu, Kernels::Eager) => 2.0,
        }
    }
}

/// Which kernels the layers run, for what they keep for backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernels {
    /// The modules as transformers writes them (its default, and what `--model --trace`
    /// traces): RMSNorm upcast to fp32, written-out GELUs, the gated MLP as
    /// `down(act(gate(x)) * up(x))`, and PEFT's LoRA adapters in fp32.
    Eager,
    /// Fused kernels (Liger's RMSNorm, SwiGLU and GELU, llm.c, Megatron/Transformer Engine):
    /// Korthikanti et al.'s figures, each norm and activation keeping its input alone.
    Fused,
}

impl Shape {
    /// Parameters of the input embedding and the output layer: vocab × hidden, twice unless
    /// tied. Quantization libraries keep them in 16 bits.
    pub fn embedding_params(&self) -> Option<u64> {
        let one = self.vocab?.saturating_mul(self.hidden?);
        Some(match self.tied_embeddings {
            Some(true) => one,
            _ => one.saturating_mul(2),
        })
        .map(|e| e.min(self.params))
    }
}

impl Shape {
    fn head_dim(&self) -> Option<u64> {
        Some(self.hidden? / self.heads?.max(1))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Fp32,
    Bf16,
    Fp16,
    Int8,
    Int4,
}

impl Dtype {
    /// Bytes per parameter (int4 packs two per byte).
    pub fn bytes(self) -> f64 {
        match self {
            Dtype::Fp32 => 4.0,
            Dtype::Bf16 | Dtype::Fp16 => 2.0,
            Dtype::Int8 => 1.0,
            Dtype::Int4 => 0.5,
        }
    }
}

/// How 4-bit weights are stored (`--dtype int4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Quant {
    /// bitsandbytes NF4 (or FP4): blocks of 64 weights, each with an fp32 absmax.
    Nf4,
    /// NF4 with double quantization (`bnb_4bit_use_double_quant`): the absmax in 8 bits per
    /// block, with an fp32 constant per 256 blocks.
    #[serde(rename = "nf4-dq")]
    Nf4Dq,
    /// GPTQ: per group of input channels, an fp16 scale and a packed 4-bit zero point.
    Gptq,
    /// AWQ: the same per-group scales and zero points.
    Awq,
}

impl Quant {
    /// Bytes per quantized weight, its constants included: NF4 stores 4 bits and an fp32
    /// absmax per 64 (QLoRA, Dettmers et al. 2023, §3: 32/64 = 0.5 bits of constants per
    /// parameter, 8/64 + 32/(64·256) = 0.127 bits with double quantization); GPTQ and AWQ an
    /// fp16 scale and a 4-bit zero per `group` weights.
    pub fn bytes(self, group: u64) -> f64 {
        let g = group.max(1) as f64;
        match self {
            Quant::Nf4 => 0.5 + 4.0 / 64.0,
            Quant::Nf4Dq => 0.5 + 1.0 / 64.0 + 4.0 / (64.0 * 256.0),
            Quant::Gptq | Quant::Awq => 0.5 + (2.0 + 0.5) / g,
        }
    }
}

impl Choice for Quant {
    const ALL: &'static [(&'static str, Self)] = &[
        ("nf4", Quant::Nf4),
        ("nf4-dq", Quant::Nf4Dq),
        ("gptq", Quant::Gptq),
        ("awq", Quant::Awq),
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    Sgd,
    SgdMomentum,
    Adam,
    Adamw,
    #[serde(rename = "adamw-8bit")]
    Adamw8bit,
    Adafactor,
    None,
}

impl Optimizer {
    /// Optimizer state bytes per trainable parameter, beside any fp32 master copy, for
    /// parameters `width` bytes wide. torch.optim keeps its state like the parameter it
    /// updates: Adam and AdamW allocate `exp_avg` and `exp_avg_sq` with
    /// `torch.zeros_like(p, memory_format=torch.preserve_format)` (torch/optim/adam.py,
    /// `_init_group`), SGD's `momentum_buffer` is a clone of the gradient (torch/optim/sgd.py).
    /// So fp32 parameters (or mixed precision's fp32 master copy) hold 8 bytes of Adam state,
    /// pure bf16 training 4.
    fn state_bytes(self, width: f64) -> f64 {
        match self {
            Optimizer::Sgd | Optimizer::None => 0.0,
            Optimizer::SgdMomentum => width,
            Optimizer::Adam | Optimizer::Adamw => 2.0 * width,
            // bitsandbytes: both moments in 8 bits.
            Optimizer::Adamw8bit => 2.0,
            // Factored second moment, no momentum: rows + columns per matrix, about nothing
            // per parameter for large matrices.
            Optimizer::Adafactor => 0.0,
        }
    }
}

/// How attention is computed: fused kernels (PyTorch's scaled_dot_product_attention,
/// FlashAttention) never store the s×s scores; eager attention stores scores, softmax and its
/// dropout mask (Korthikanti's 5·a·s²·b).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Attention {
    Sdpa,
    Eager,
}

/// How the loss meets the logits (training a language model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Loss {
    /// The logits whole: 16-bit from the output layer, upcast to fp32 for the loss, whose
    /// log-softmax keeps its fp32 output for backward (transformers' `ForCausalLMLoss`:
    /// `logits = logits.float()`, then `cross_entropy`).
    Standard,
    /// torchtune's `CEWithChunkedOutputLoss`: the output layer's 16-bit logits in 8 chunks,
    /// one upcast (and its log-softmax) at a time.
    Chunked,
    /// A fused linear cross-entropy (Liger's `LigerFusedLinearCrossEntropyLoss`, Apple's
    /// Cut Cross-Entropy): the logits are never stored whole.
    Fused,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Checkpointing {
    None,
    Selective,
    Full,
}

/// A choice named on the command line and in JSON: each variant with its name. The command
/// line's parsers are built from [`Choice::ALL`] in `cli`, so this model needs no CLI crate.
pub trait Choice: Copy + PartialEq + Send + Sync + 'static {
    const ALL: &'static [(&'static str, Self)];

    fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("", |(n, _)| n)
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s.trim()))
            .map(|(_, v)| *v)
    }
}

impl Choice for Dtype {
    const ALL: &'static [(&'static str, Self)] = &[
        ("fp32", Dtype::Fp32),
        ("bf16", Dtype::Bf16),
        ("fp16", Dtype::Fp16),
        ("int8", Dtype::Int8),
        ("int4", Dtype::Int4),
    ];
}

impl Choice for Optimizer {
    const ALL: &'static [(&'static str, Self)] = &[
        ("sgd", Optimizer::Sgd),
        ("sgd-momentum", Optimizer::SgdMomentum),
        ("adam", Optimizer::Adam),
        ("adamw", Optimizer::Adamw),
        ("adamw-8bit", Optimizer::Adamw8bit),
        ("adafactor", Optimizer::Adafactor),
        ("none", Optimizer::None),
    ];
}

impl Choice for Attention {
    const ALL: &'static [(&'static str, Self)] =
        &[("sdpa", Attention::Sdpa), ("eager", Attention::Eager)];
}

impl Choice for Loss {
    const ALL: &'static [(&'static str, Self)] = &[
        ("standard", Loss::Standard),
        ("chunked", Loss::Chunked),
        ("fused", Loss::Fused),
    ];
}

impl Choice for Kernels {
    const ALL: &'static [(&'static str, Self)] =
        &[("eager", Kernels::Eager), ("fused", Kernels::Fused)];
}

impl Choice for Checkpointing {
    const ALL: &'static [(&'static str, Self)] = &[
        ("none", Checkpointing::None),
        ("selective", Checkpointing::Selective),
        ("full", Checkpointing::Full),
    ];
}

/// The run being estimated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub batch: u64,
    pub seq_len: u64,
    pub dtype: Dtype,
    /// Training with 16-bit compute and fp32 master weights.
    pub mixed_precision: bool,
    pub optimizer: Optimizer,
    pub checkpointing: Checkpointing,
    pub attention: Attention,
    pub grad_accum: u64,
    pub inference: bool,
    pub lora_rank: Option<u64>,
    pub loss: Loss,
    /// How 4-bit weights are stored (with `dtype` int4).
    pub quant: Quant,
    /// GPTQ's and AWQ's group size.
    pub group_size: u64,
    /// What the layers keep for backward: transformers' modules, or fused kernels.
    pub kernels: Kernels,
}

/// CUDA context, cuBLAS/cuDNN workspaces and the NCCL buffers of one process: a stated
/// allowance, not a measurement.
pub const CONTEXT_ALLOWANCE: u64 = 1 << 30;
/// The caching allocator's fragmentation, as a share of what it manages.
pub const FRAGMENTATION_MARGIN: f64 = 0.10;

/// The parts of the estimate, in bytes; `None` where the part does not apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Parts {
    pub weights_bytes: u64,
    pub gradients_bytes: Option<u64>,
    pub optimizer_bytes: Option<u64>,
    pub activations_bytes: Option<u64>,
    /// Training: the most the loss holds of the logits at once, in its forward or its
    /// backward ([`loss_moments`]; `None` without a vocabulary).
    pub logits_bytes: Option<u64>,
    pub kv_cache_bytes: Option<u64>,
    /// Counted above but never held at the same time, so left out of the total: the
    /// gradients are made in backward as the activations are freed, and the loss's backward
    /// frees most of what it holds before the output layer's, so the step holds at most the
    /// largest of the end of forward, the loss's backward, the output layer's backward and
    /// the end of backward (`held_at_peak`).
    pub not_together_bytes: u64,
    /// The CUDA context allowance plus the fragmentation margin.
    pub overhead_bytes: u64,
    pub total_bytes: u64,
}

/// Parameters the run trains: all of them, or the LoRA adapters on the attention's query
/// and value projections (the PEFT default) when a rank is given.
pub fn trainable_params(shape: &Shape, run: &Run) -> u64 {
    match run.lora_rank {
        Some(r) => match (shape.layers, shape.hidden) {
            (Some(l), Some(h)) => {
                let kv_dim = shape
                    .head_dim()
                    .zip(shape.kv_heads)
                    .map_or(h, |(d, kv)| d * kv);
                // q: h → h, v: h → kv_dim; each adapter is r × (in + out).
                l.saturating_mul(r)
                    .saturating_mul((h + h).saturating_add(h.saturating_add(kv_dim)))
            }
            // Without the shape, adapters are a fraction of a percent: count 0.5%.
            _ => shape.params / 200,
        },
        None => shape.params,
    }
}

/// Activation bytes one transformer layer keeps for backward, for one micro-batch.
///
/// In units of s·b·h bytes with e-byte activations (2, or 4 training in fp32), i the MLP's
/// width and r = kv_heads/heads. With fused kernels (Korthikanti et al. 2022, §4.1):
/// - each of the two norms keeps its input: e;
/// - attention its input e (the Q, K and V projections'), Q e, K and V e·r each (what the
///   fused kernel keeps, with its small log-sum-exp), its output e (the output projection's
///   input) and the 1-byte mask of the dropout after it: e·(3 + 2r) + 1;
/// - a gated MLP its input e, and the gate's and up's outputs and their product, e·i/h each;
///   a non-gated one its input, the activation's input and the second matrix's input, and
///   its dropout mask;
///
/// for e = 2, r = 1 and i = 4h: eq. 1's 34·s·b·h without the scores. With transformers'
/// modules ([`Kernels::Eager`]), checked against a trace of them: an RMSNorm keeps 4 + e
/// ([`Norm::RmsNorm`]), a written-out GELU more tensors as wide as the MLP ([`Act`]), and
/// the gated MLP as `LlamaMLP.forward` writes it, `down(act(gate(x)) * up(x))`, four:
/// SiLU's input and output, up's output and the product (a fused SwiGLU, Liger's
/// `LigerSiLUMulFunction`, recomputes SiLU in backward). There is no dropout mask where the
/// config has no residual dropout (Llama, Mistral and Qwen2 have none).
///
/// With LoRA the base weights are frozen, and a frozen linear layer keeps nothing: its
/// input is needed only for its weight's gradient (`mm` saves `self` only when `mat2`
/// requires grad: `mm`'s entry in PyTorch's tools/autograd/derivatives.yaml). What remains: the norms' fp32 copy (its `pow` still gives the input's
/// gradient) or a LayerNorm's input, the adapters' input (PEFT's `Linear.forward` casts it to
/// the fp32 adapters' dtype, `_cast_input_dtype`: one fp32 copy per adapted projection; a
/// fused recipe such as torchtune keeps 16-bit adapters that take the input as it is,
/// `LoRALinear.forward` in torchtune/modules/peft/lora.py, so q and v share one), attention's
/// Q, K, V and output, the MLP's activation (SiLU's input and output and up's output for the
/// product; not the product, which only the frozen `down` takes), and the dropout masks.
pub fn activations_per_layer(shape: &Shape, run: &Run) -> Option<u64> {
    let (h, a) = (shape.hidden? as f64, shape.heads? as f64);
    let (s, b) = (run.seq_len as f64, run.batch as f64);
    let sbh = s * b * h;
    let e: f64 = if run.dtype == Dtype::Fp32 && !run.mixed_precision {
        4.0
    } else {
        2.0
    };
    let r = shape.kv_heads.map_or(1.0, |kv| kv as f64 / a);
    let eager = run.kernels == Kernels::Eager;
    let frozen = run.lora_rank.is_some() && !run.inference;
    let masks = if shape.residual_dropout == Some(false) {
        0.0
    } else {
        2.0
    };
    let norm = match (shape.norm, eager, frozen) {
        (Some(Norm::RmsNorm), true, false) => 4.0 + e,
        (Some(Norm::RmsNorm), true, true) => e.max(4.0),
        _ => e,
    };
    let width = |i: u64| i as f64 / h;
    let act = shape.activation.unwrap_or(Act::Gelu);
    let mlp = match (shape.gated_mlp, shape.intermediate, frozen) {
        (true, Some(i), false) => e + e * width(i) * if eager { 4.0 } else { 3.0 },
        (true, Some(i), true) => e * width(i) * if eager { 3.0 } else { 2.0 },
        (false, Some(i), false) => e + e * width(i) * (act.saved(run.kernels) + 1.0),
        (false, Some(i), true) => {
            e * width(i) * (act.saved(run.kernels) + if act == Act::Relu { 1.0 } else { 0.0 })
        }
        // No width known: Korthikanti's 4h with a fused GELU.
        (_, None, false) => e + e * 4.0 * 2.0,
        (_, None, true) => e * 4.0,
    };
    // The projections' input; with LoRA, the adapters' (see above).
    let adapted = if matches!(shape.family.as_str(), "gpt2" | "gpt_neox") {
        1.0
    } else {
        2.0
    };
    let input = match (frozen, eager && e < 4.0) {
        (false, _) => e,
        (true, true) => 4.0 * adapted,
        (true, false) => e,
    };
    let attention = input + e * (2.0 + 2.0 * r);
    let scores = 5.0 * a * s * s * b * e / 2.0;
    let layer = (2.0 * norm + attention + mlp + masks) * sbh;
    let bytes = match (run.checkpointing, run.attention) {
        (Checkpointing::Full, _) => e * sbh,
        (Checkpointing::None, Attention::Eager) => layer + scores,
        _ => layer,
    };
    Some(bytes as u64)
}

/// What the loss holds of the logits at each moment of a training step, per micro-batch, in
/// bytes (see [`loss_moments`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossMoments {
    /// The loss's forward, at its largest.
    pub forward: u64,
    /// The loss's own backward, at its largest: the moment the step's peak often is.
    pub backward: u64,
    /// While the output layer's backward runs: the logits' gradient it takes, and what is kept.
    pub head: u64,
    /// Kept through the rest of backward.
    pub kept: u64,
    /// The output layer's weight gradient is made in the loss's forward (a fused loss
    /// computes it there).
    pub head_grad_in_forward: bool,
    /// The output layer's weight gradient is there during the loss's backward (a chunked
    /// loss runs the output layer's backward chunk by chunk; a fused one made it before).
    pub head_grad_in_loss_backward: bool,
}

/// The logits and what the loss holds of them at each moment of a training step, s·b·vocab
/// values (v) for one micro-batch. `None` for inference or without a vocabulary.
///
/// The standard loss, transformers' `ForCausalLMLoss` (`logits = logits.float()`, then
/// `cross_entropy`, which is `log_softmax` and `nll_loss`): the output layer's 16-bit logits
/// (2 bytes a value), the fp32 copy (4) and log-softmax's fp32 output (4), which it saves
/// for backward (`_log_softmax`'s entry in PyTorch's tools/autograd/derivatives.yaml takes
/// `result`): 10 bytes at the end of forward, the fp32 copy freed when the loss returns.
/// Backward starts with the loss: `nll_loss_backward` makes an fp32 gradient the size of the
/// log-probabilities (4) while the saved log-probabilities (4) are alive, then
/// `_log_softmax_backward_data` makes another (4) from both; with the 16-bit logits, which a
/// loop that holds the model's output (`outputs = model(**batch); outputs.loss.backward()`)
/// keeps alive, that is 14 bytes a value (12 where the output is let go first, as
/// transformers' `Trainer.compute_loss` returns the loss alone and torchtitan's step does
/// `del pred`; the formula counts 14, since it cannot know the loop). Then the output
/// layer's backward takes the gradient cast back to 16 bits (2) beside the kept logits (2),
/// and the kept logits stay to the end of backward (2).
///
/// torchtune's `CEWithChunkedOutputLoss` (8 chunks, each upcast in turn inside its compiled
/// `compute_cross_entropy`, as its recipes compile it): the 16-bit logits and one chunk's
/// 8 bytes, 3 bytes a value in forward; the compiled chunk keeps its 16-bit input for
/// backward, which makes each chunk's 16-bit gradient in one kernel: 2 + 2/8 = 2.25 bytes a
/// value (uncompiled, each chunk's cross-entropy saves its fp32 log-probabilities: 4 bytes a
/// value more, which the formula does not count). torchtune's recipes `del logits` before
/// backward, so nothing is kept after. The output layer's backward runs chunk by chunk,
/// so its weight gradient is there at the loss's backward.
///
/// A fused linear cross-entropy (Liger's `LigerFusedLinearCrossEntropyFunction`) keeps no
/// logits whole: it computes the hidden states' gradient (16-bit, 2·s·b·h) and the output
/// layer's weight gradient in its forward, with one chunk of logits that Liger sizes to
/// about as many values as the hidden states (`chunk_size = BT / ⌈V/H⌉`), up to 8 bytes each
/// while it is made, upcast and cast back: 10·s·b·h, as Liger 0.4.2's benchmark measures
/// (Cut Cross-Entropy and later Liger releases hold less). Its backward only hands the two
/// gradients on: 2·s·b·h.
pub fn loss_moments(shape: &Shape, run: &Run) -> Option<LossMoments> {
    if run.inference {
        return None;
    }
    let tokens = run.seq_len as f64 * run.batch as f64;
    let v = tokens * shape.vocab? as f64;
    let bytes = |x: f64| x as u64;
    Some(match run.loss {
        Loss::Standard => LossMoments {
            forward: bytes(10.0 * v),
            backward: bytes(14.0 * v),
            head: bytes(4.0 * v),
            kept: bytes(2.0 * v),
            head_grad_in_forward: false,
            head_grad_in_loss_backward: false,
        },
        Loss::Chunked => LossMoments {
            forward: bytes(2.0 * v + 8.0 * v / 8.0),
            backward: bytes(2.0 * v + 2.0 * v / 8.0),
            head: bytes(2.0 * v / 8.0),
            kept: 0,
            head_grad_in_forward: false,
            head_grad_in_loss_backward: true,
        },
        Loss::Fused => {
            let sbh = tokens * shape.hidden? as f64;
            LossMoments {
                forward: bytes(10.0 * sbh),
                backward: bytes(2.0 * sbh),
                head: bytes(2.0 * sbh),
                kept: 0,
                head_grad_in_forward: true,
                head_grad_in_loss_backward: true,
            }
        }
    })
}

/// The logits and loss part of the estimate: the most the loss holds at once
/// ([`loss_moments`]): 14 bytes a logit with the standard loss (its backward), 3 with the
/// chunked one, 10·s·b·h with a fused one (their forward).
pub fn logits(shape: &Shape, run: &Run) -> Option<u64> {
    loss_moments(shape, run).map(|m| m.forward.max(m.backward))
}

/// The KV cache for inference.
pub fn kv_cache(shape: &Shape, run: &Run) -> Option<u64> {
    let kv = shape.kv_heads.or(shape.heads)?;
    // Quantized weights keep a 16-bit cache.
    let bytes = run.dtype.bytes().max(2.0);
    Some(
        (2.0 * shape.layers? as f64
            * kv as f64
            * shape.head_dim()? as f64
            * run.seq_len as f64
            * run.batch as f64
            * bytes) as u64,
    )
}

/// The weights' bytes in `dtype`. Quantized weights (int8, int4) are stored as the libraries
/// store them: the input embedding and the output layer stay in 16 bits (transformers keeps
/// `lm_head` out of bitsandbytes' conversion, and an `nn.Embedding` is not a linear layer), the
/// linear layers carry their quantization constants ([`Quant::bytes`]), and bitsandbytes'
/// 4-bit matmul dequantizes one weight matrix at a time to 16 bits (the largest, an MLP
/// matrix, counted once).
pub fn weight_bytes(shape: &Shape, run: &Run, dtype: Dtype) -> u64 {
    let params = shape.params as f64;
    let quantized = match dtype {
        Dtype::Int8 => 1.0,
        Dtype::Int4 => run.quant.bytes(run.group_size),
        _ => return (params * dtype.bytes()) as u64,
    };
    let kept = shape.embedding_params().unwrap_or(0) as f64;
    let mut bytes = (params - kept) * quantized + kept * 2.0;
    if dtype == Dtype::Int4 && matches!(run.quant, Quant::Nf4 | Quant::Nf4Dq) {
        if let Some(h) = shape.hidden {
            let i = shape.intermediate.unwrap_or(4 * h);
            bytes += 2.0 * (h as f64) * (i as f64);
        }
    }
    bytes as u64
}

/// Whether `parts` hold everything the run's peak needs: training needs the activations,
/// inference its activations and KV cache, and both need the model's shape (layers, hidden
/// size, heads). Without them the states are known and the peak is not.
pub fn peak_known(parts: &Parts, run: &Run) -> bool {
    parts.activations_bytes.is_some() && (!run.inference || parts.kv_cache_bytes.is_some())
}

/// The memory a run needs on a GPU (`pick --estimate`, `run --estimate`): its peak, or why it
/// cannot be known.
pub fn need(shape: &Shape, run: &Run) -> Result<u64, String> {
    let parts = estimate(shape, run);
    if peak_known(&parts, run) {
        Ok(parts.total_bytes)
    } else {
        Err(format!(
            "the peak is unknown without the model's shape: give --layers, --hidden and --heads, or --model (the states alone need {})",
            crate::units::fmt_bytes(parts.total_bytes)
        ))
    }
}

/// What a training step holds beside the weights and the optimizer states, in bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    grads: u64,
    /// The output layer's gradient: the first made in backward.
    head_grads: u64,
    /// What every layer keeps at the end of forward (its input alone with full checkpointing).
    stored: u64,
    /// One layer's share of `stored`.
    per_layer: u64,
    /// The layer being recomputed in backward (full checkpointing), else 0.
    recomputed: u64,
    /// What the loss holds of the logits at each moment.
    loss: LossMoments,
    /// Gradient accumulation: the gradients of the earlier micro-batches are held throughout.
    accumulating: bool,
}

/// The most a training step holds at once of its gradients, activations and logits.
///
/// `zero_grad(set_to_none=True)` (torch/optim/optimizer.py; the default since PyTorch 2.0)
/// frees the gradients after each step, and backward makes each parameter's gradient
/// (autograd's `AccumulateGrad`) as it frees that layer's saved activations, from the last
/// layer to the first. So the peak is the largest of these moments, each with every layer's
/// activations until the last two:
/// - the end of forward: the loss's forward ([`LossMoments::forward`]), no gradients yet;
/// - the loss's backward, which autograd runs first ([`LossMoments::backward`]);
/// - the output layer's backward: its weight gradient and the logits' gradient, then the
///   last layer recomputed (full checkpointing) beside what the loss keeps;
/// - the end of backward: every gradient, the first layer's activations or recomputed
///   working set, and what the loss keeps.
///
/// The optimizer step holds the gradients alone (a fused or foreach step's temporaries are
/// not counted). With gradient accumulation the gradients are held from the first
/// micro-batch on.
fn held_at_peak(h: &Held) -> u64 {
    // Gradients there before the output layer's backward: the earlier micro-batches', or the
    // output layer's own where the loss makes it.
    let early = |made: bool| {
        if h.accumulating {
            h.grads
        } else if made {
            h.head_grads
        } else {
            0
        }
    };
    let forward = h
        .stored
        .saturating_add(h.loss.forward)
        .saturating_add(early(h.loss.head_grad_in_forward));
    let loss_backward = h
        .stored
        .saturating_add(h.loss.backward)
        .saturating_add(early(h.loss.head_grad_in_loss_backward));
    let head = if h.accumulating {
        h.grads
    } else {
        h.head_grads
    };
    let backward_start = h
        .stored
        .saturating_add(head)
        .saturating_add(h.loss.head.max(h.recomputed.saturating_add(h.loss.kept)));
    let backward_end = h
        .grads
        .saturating_add(h.per_layer)
        .saturating_add(h.recomputed)
        .saturating_add(h.loss.kept);
    forward
        .max(loss_backward)
        .max(backward_start)
        .max(backward_end)
}

/// The estimate for one run.
pub fn estimate(shape: &Shape, run: &Run) -> Parts {
    let training = !run.inference;
    // Mixed precision keeps 16-bit weights; otherwise weights are in the run's dtype.
    let weight_dtype = if run.mixed_precision && training && run.lora_rank.is_none() {
        Dtype::Bf16
    } else {
        run.dtype
    };
    let weights = weight_bytes(shape, run, weight_dtype);
    let mut p = Parts {
        weights_bytes: weights,
        ..Parts::default()
    };
    if training {
        let trainable = trainable_params(shape, run) as f64;
        // Gradients match the trainable weights' width (16-bit under mixed precision, 4 bytes
        // for adapters and fp32 runs).
        let grad_bytes = if run.mixed_precision && run.lora_rank.is_none() {
            2.0
        } else if run.lora_rank.is_some() {
            4.0
        } else {
            run.dtype.bytes().max(2.0)
        };
        p.gradients_bytes = Some((trainable * grad_bytes) as u64);
        // The fp32 master copy under mixed precision (ZeRO's 4 of its 12 bytes).
        let master = if run.mixed_precision && run.lora_rank.is_none() {
            4.0
        } else {
            0.0
        };
        // The width of the parameters the optimizer updates: the fp32 master copy under mixed
        // precision, fp32 LoRA adapters (PEFT casts them to fp32, `autocast_adapter_dtype`),
        // else the run's dtype (never below 16 bits: quantized weights are not trained).
        let width = if run.mixed_precision || run.lora_rank.is_some() {
            4.0
        } else {
            run.dtype.bytes().max(2.0)
        };
        p.optimizer_bytes = Some((trainable * (master + run.optimizer.state_bytes(width))) as u64);
        let layers = shape.layers.unwrap_or(0);
        // The layer being recomputed holds its full activations during backward.
        let recomputed = (run.checkpointing == Checkpointing::Full).then(|| {
            let full = Run {
                checkpointing: Checkpointing::None,
                ..run.clone()
            };
            activations_per_layer(shape, &full).unwrap_or(0)
        });
        p.activations_bytes = activations_per_layer(shape, run).map(|per| {
            per.saturating_mul(layers)
                .saturating_add(recomputed.unwrap_or(0))
        });
        p.logits_bytes = logits(shape, run);
        if let (Some(per), Some(all)) = (activations_per_layer(shape, run), p.activations_bytes) {
            let grads = p.gradients_bytes.unwrap_or(0);
            // The output layer's gradient is made first in backward (tied or not, it is one
            // vocab × hidden matrix); adapters leave it frozen.
            let head = match (run.lora_rank, shape.vocab, shape.hidden) {
                (None, Some(v), Some(h)) => ((v.saturating_mul(h)) as f64 * grad_bytes) as u64,
                _ => 0,
            };
            let held = held_at_peak(&Held {
                grads,
                head_grads: head.min(grads),
                stored: per.saturating_mul(layers),
                per_layer: per,
                recomputed: recomputed.unwrap_or(0),
                loss: loss_moments(shape, run).unwrap_or_default(),
                accumulating: run.grad_accum > 1,
            });
            p.not_together_bytes = grads
                .saturating_add(all)
                .saturating_add(p.logits_bytes.unwrap_or(0))
                .saturating_sub(held);
        }
    } else {
        p.kv_cache_bytes = kv_cache(shape, run);
        // One layer's activations at a time while the prompt is processed.
        let prefill = Run {
            checkpointing: Checkpointing::None,
            ..run.clone()
        };
        p.activations_bytes = activations_per_layer(shape, &prefill);
    }
    // Saturating: absurd inputs give an absurd figure, never an overflow.
    let managed = [
        p.gradients_bytes,
        p.optimizer_bytes,
        p.activations_bytes,
        p.logits_bytes,
        p.kv_cache_bytes,
    ]
    .iter()
    .fold(p.weights_bytes, |acc, x| acc.saturating_add(x.unwrap_or(0)))
    .saturating_sub(p.not_together_bytes);
    p.overhead_bytes =
        CONTEXT_ALLOWANCE.saturating_add((managed as f64 * FRAGMENTATION_MARGIN) as u64);
    p.total_bytes = managed.saturating_add(p.overhead_bytes);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> Run {
        Run {
            batch: 1,
            seq_len: 2048,
            dtype: Dtype::Bf16,
            mixed_precision: true,
            optimizer: Optimizer::Adam,
            checkpointing: Checkpointing::None,
            attention: Attention::Eager,
            grad_accum: 1,
            inference: false,
            lora_rank: None,
            loss: Loss::Standard,
            quant: Quant::Nf4,
            group_size: 128,
            kernels: Kernels::Eager,
        }
    }

    /// Weights, gradients and optimizer states: ZeRO's "model states".
    fn model_states(p: &Parts) -> u64 {
        p.weights_bytes + p.gradients_bytes.expect("known") + p.optimizer_bytes.expect("known")
    }

    #[test]
    fn zero_papers_mixed_precision_adam_is_16_bytes_per_parameter() {
        // ZeRO (Rajbhandari et al. 2020), §3.1: "a model with 7.5B parameters … requires
        // 120 GB of memory" for fp16 weights and gradients and fp32 Adam states (2+2+12 bytes).
        let shape = Shape {
            params: 7_500_000_000,
            ..Shape::default()
        };
        let p = estimate(&shape, &run());
        let states = model_states(&p);
        assert_eq!(states, 120_000_000_000);
        // Plain fp32 Adam: weights, gradients, two moments.
        let fp32 = Run {
            dtype: Dtype::Fp32,
            mixed_precision: false,
            ..run()
        };
        let p = estimate(&shape, &fp32);
        assert_eq!(model_states(&p), 16 * 7_500_000_000);
    }

    #[test]
    fn adam_keeps_its_moments_in_the_parameters_dtype() {
        // Pure bf16 training (no fp32 master copy): torch.optim.Adam's exp_avg and exp_avg_sq
        // are zeros_like(p), 2 bytes each: weights 2 + gradients 2 + moments 4 = 8 bytes per
        // parameter, half of mixed precision's 16.
        let shape = Shape {
            params: 1_000_000_000,
            ..Shape::default()
        };
        let pure = Run {
            mixed_precision: false,
            dtype: Dtype::Bf16,
            ..run()
        };
        let p = estimate(&shape, &pure);
        assert_eq!(p.optimizer_bytes, Some(4_000_000_000));
        assert_eq!(model_states(&p), 8_000_000_000);
        // SGD with momentum: one buffer like the gradient.
        let sgd = Run {
            optimizer: Optimizer::SgdMomentum,
            ..pure
        };
        assert_eq!(estimate(&shape, &sgd).optimizer_bytes, Some(2_000_000_000));
    }

    /// Llama-2-7B's whole shape (multi-head attention, gated MLP, untied embeddings).
    fn llama_2_7b_whole() -> Shape {
        Shape {
            vocab: Some(32000),
            intermediate: Some(11008),
            gated_mlp: true,
            tied_embeddings: Some(false),
            ..llama_2_7b()
        }
    }

    #[test]
    fn torchaos_measured_pure_bf16_adamw() {
        // torchao's optimizer README (torchao/optim/README.md; pytorch/ao #746, #812):
        // Llama-2-7B fine-tuned on Alpaca in full BF16 on one A100 with torchtune 52d1b838's
        // full_finetune_single_device (batch 2, activation checkpointing, chunked loss),
        // "Peak memory allocated": PyTorch's fused AdamW 51.6, bitsandbytes' 8-bit AdamW 39.3.
        // torchtune at that commit logs max_memory_allocated / 1024³: GiB.
        let gib = (1u64 << 30) as f64;
        let shape = llama_2_7b_whole();
        let pure = Run {
            batch: 2,
            seq_len: 512,
            dtype: Dtype::Bf16,
            mixed_precision: false,
            optimizer: Optimizer::Adamw,
            checkpointing: Checkpointing::Full,
            attention: Attention::Sdpa,
            loss: Loss::Chunked,
            ..run()
        };
        let states = |r: &Run| model_states(&estimate(&shape, r)) as f64;
        let eight_bit = Run {
            optimizer: Optimizer::Adamw8bit,
            ..pure.clone()
        };
        // The two rows differ only in the optimizer: 12.3 GiB measured. Adam's moments like
        // the bf16 parameters (4 bytes) against 8-bit moments (2): 12.55 GiB. Moments in fp32
        // whatever the parameters (8 bytes) would have said 37.7 GiB.
        let saved = (states(&pure) - states(&eight_bit)) / gib;
        assert!((saved / 12.3 - 1.0).abs() < 0.05, "{saved:.2} GiB");
        // The model states are most of the peak (2 + 2 + 4 bytes a parameter: 50.2 GiB), and
        // never more than it: the rest is a checkpointed batch of two short Alpaca samples.
        let measured = 51.6 * gib;
        assert!(states(&pure) <= measured, "{}", states(&pure) / gib);
        assert!(states(&pure) >= 0.95 * measured, "{}", states(&pure) / gib);
        let eight = 39.3 * gib;
        assert!(states(&eight_bit) <= eight && states(&eight_bit) >= 0.95 * eight);
        // The allocator's peak, the estimate without its context allowance and margin, at
        // 512 tokens a sample.
        let p = estimate(&shape, &pure);
        let managed = (p.total_bytes - p.overhead_bytes) as f64;
        assert!((managed / measured - 1.0).abs() < 0.05, "{}", managed / gib);
    }

    /// Llama 3.1 8B's shape (grouped-query attention, untied embeddings).
    fn llama_3_1_8b() -> Shape {
        Shape {
            params: 8_030_261_248,
            layers: Some(32),
            hidden: Some(4096),
            heads: Some(32),
            kv_heads: Some(8),
            vocab: Some(128_256),
            intermediate: Some(14336),
            gated_mlp: true,
            tied_embeddings: Some(false),
            ..Shape::default()
        }
    }

    #[test]
    fn the_logits_are_a_part_of_their_own_and_the_loss_decides_their_size() {
        // Llama 3's vocabulary, 8,192 packed tokens: 1.05 G values.
        let shape = llama_3_1_8b();
        let r = Run {
            seq_len: 8192,
            attention: Attention::Sdpa,
            checkpointing: Checkpointing::Full,
            ..run()
        };
        let values = 8192 * 128_256u64;
        // transformers: 16-bit logits, their fp32 upcast, the fp32 log-softmax: 10 bytes in
        // forward; in the loss's backward the kept logits, the log-softmax and two fp32
        // gradients: 14.
        assert_eq!(logits(&shape, &r), Some(14 * values));
        let p = estimate(&shape, &r);
        assert_eq!(p.logits_bytes, Some(14 * values));
        // Not counted twice: the activations are the layers' alone.
        assert_eq!(
            p.activations_bytes,
            Some(
                32 * activations_per_layer(&shape, &r).expect("known")
                    + activations_per_layer(
                        &shape,
                        &Run {
                            checkpointing: Checkpointing::None,
                            ..r.clone()
                        }
                    )
                    .expect("known")
            )
        );
        // torchtune's chunked loss: the 16-bit logits and one chunk of 8 upcast, 3 bytes in
        // forward; in backward, compiled, the 16-bit logits and one chunk's gradient, 2.25.
        let chunked = Run {
            loss: Loss::Chunked,
            ..r.clone()
        };
        let m = loss_moments(&shape, &chunked).expect("known");
        assert_eq!((m.forward, m.backward), (3 * values, 9 * values / 4));
        assert_eq!(logits(&shape, &chunked), Some(3 * values));
        // A fused linear cross-entropy: the hidden states' gradient and one chunk.
        let fused = Run {
            loss: Loss::Fused,
            ..r.clone()
        };
        assert_eq!(logits(&shape, &fused), Some(10 * 8192 * 4096));
        // Inference keeps no logits for a loss.
        let inference = Run {
            inference: true,
            ..r
        };
        assert_eq!(estimate(&shape, &inference).logits_bytes, None);
    }

    #[test]
    fn torchtitans_measured_saving_of_the_chunked_loss() {
        // torchtitan #996 ("chunked cross entropy loss to reduce peak memory"): Llama 3 8B,
        // torchtitan's llama3_8b.toml (batch 1, 8,192 tokens, selective activation
        // checkpointing, bf16 FSDP), the logs' peak memory (max reserved, GiB) 49.58 with
        // `cross_entropy(pred.float())` and 42.26 with the logits in 8 chunks, each upcast in
        // turn: 7.32 GiB saved. The loss is each rank's own, so sharding does not change it.
        let gib = (1u64 << 30) as f64;
        let shape = llama_3_1_8b();
        let standard = Run {
            batch: 1,
            seq_len: 8192,
            checkpointing: Checkpointing::Selective,
            attention: Attention::Sdpa,
            optimizer: Optimizer::Adamw,
            ..run()
        };
        // The standard loss's peak is its backward: no gradient made yet (all of them are
        // "not held together"), every layer's activations and 14 bytes a logit. torchtitan's
        // step does `del pred` before backward, so 12 are allocated there, but the 16-bit
        // logits' freed block stays reserved (it cannot hold a 4-byte gradient).
        let p = estimate(&shape, &standard);
        assert_eq!(Some(p.not_together_bytes), p.gradients_bytes);
        let values = 8192.0 * 128_256.0;
        assert_eq!(p.logits_bytes, Some((14.0 * values) as u64));
        // #996 cut the whole logits in 8 chunks, eager (not torchtune's chunks of the output
        // layer, compiled, which `--loss chunked` counts): each chunk's cross-entropy saves
        // its fp32 log-probabilities until backward, so at the last chunk the 16-bit logits
        // (2), seven chunks' log-probabilities (3.5) and the chunk being upcast (0.5 + 0.5),
        // and in backward one chunk's gradient more, reserved: 7 bytes a logit. The reserved
        // memory saved is 7 bytes a logit and the margin: 7.53 GiB.
        let chunks = 7.0 * values;
        let saved =
            (p.logits_bytes.expect("known") as f64 - chunks) * (1.0 + FRAGMENTATION_MARGIN) / gib;
        assert!((saved / 7.32 - 1.0).abs() < 0.05, "{saved:.2} GiB");
        // torchtune's compiled chunks hold less at their peak (3 bytes a logit, in forward),
        // so the formula's saving for them is larger.
        let chunked = Run {
            loss: Loss::Chunked,
            ..standard.clone()
        };
        let formula = (p.total_bytes - estimate(&shape, &chunked).total_bytes) as f64 / gib;
        assert!(formula > saved, "{formula:.2} GiB");
    }

    #[test]
    fn ligers_measured_fused_linear_cross_entropy() {
        // Liger-Kernel's benchmark data (benchmark/data/all_benchmark_data.csv, liger 0.4.2,
        // A100-SXM4-80GB): fused_linear_cross_entropy, full (forward and backward), H 4096,
        // V 128,256, bf16, max_memory_allocated in MiB: 4,910.44 at 16,384 tokens and
        // 5,794.63 at 32,768. The growth per token is the loss's own memory plus the
        // benchmark's input and its gradient (2 + 2 bytes a hidden value).
        let (h, v) = (4096u64, 128_256u64);
        let per_token = (5794.6259765625 - 4910.4384765625) * (1u64 << 20) as f64 / 16384.0;
        let shape = Shape {
            hidden: Some(h),
            vocab: Some(v),
            ..Shape::default()
        };
        let fused = Run {
            batch: 1,
            seq_len: 16384,
            loss: Loss::Fused,
            ..run()
        };
        let model = logits(&shape, &fused).expect("known") as f64 / 16384.0 + 4.0 * h as f64;
        // 14 bytes a hidden value: 57,344 against 56,590 measured.
        assert!(
            (model / per_token - 1.0).abs() < 0.05,
            "{model} against {per_token}"
        );
        // The same benchmark's plain PyTorch head (bf16 logits, no upcast) grew by 6.1 bytes
        // a logit: the fused loss keeps 13× less.
        let plain = (27582.5 - 15302.3759765625) * (1u64 << 20) as f64 / 16384.0;
        assert!(plain / per_token > 13.0);
    }

    #[test]
    fn four_bit_weights_as_the_libraries_store_them() {
        // QLoRA (Dettmers et al. 2023), §3: NF4's fp32 absmax per 64 weights costs 0.5 bits a
        // parameter; double quantization cuts it to 8/64 + 32/(64·256) = 0.127 bits.
        assert!((Quant::Nf4.bytes(128) - 0.5 - 0.5 / 8.0).abs() < 1e-12);
        assert!((Quant::Nf4Dq.bytes(128) - 0.5 - 0.127 / 8.0).abs() < 1e-4);
        let shape = llama_2_7b_whole();
        let embeddings = 2 * 32000 * 4096;
        assert_eq!(shape.embedding_params(), Some(embeddings));
        // TheBloke/Llama-2-7B-GPTQ's "Provided files": the 4-bit, group-size-128 model is
        // 3.90 GB on disk; its embedding and lm_head are fp16.
        let gptq = Run {
            dtype: Dtype::Int4,
            quant: Quant::Gptq,
            inference: true,
            ..run()
        };
        let bytes = weight_bytes(&shape, &gptq, Dtype::Int4) as f64;
        assert!((bytes / 3.90e9 - 1.0).abs() < 0.02, "{bytes}");
        // bitsandbytes: the same 16-bit embeddings, the constants, and one MLP matrix
        // dequantized at a time.
        let nf4 = Run {
            quant: Quant::Nf4Dq,
            ..gptq.clone()
        };
        let linear = (6_738_415_616u64 - embeddings) as f64;
        assert_eq!(
            weight_bytes(&shape, &nf4, Dtype::Int4),
            (linear * Quant::Nf4Dq.bytes(128) + embeddings as f64 * 2.0 + 2.0 * 4096.0 * 11008.0)
                as u64
        );
        // The old count (half a byte for everything) was 13% low for this model.
        assert!(bytes > 1.13 * 6_738_415_616.0 * 0.5);
    }

    #[test]
    fn torchtunes_measured_qlora_peak() {
        // torchtune's README, "Memory and training speed": Llama 3.1 8B, QLoRA, batch 2, a
        // dataset packed to 2048 tokens: 7.4 GiB peak per GPU (8B_qlora_single_device: NF4
        // base, activation checkpointing, CEWithChunkedOutputLoss, bf16, AdamW).
        let llama_3_1_8b = llama_3_1_8b();
        let qlora = Run {
            batch: 2,
            seq_len: 2048,
            dtype: Dtype::Int4,
            quant: Quant::Nf4Dq,
            mixed_precision: false,
            lora_rank: Some(8),
            checkpointing: Checkpointing::Full,
            attention: Attention::Sdpa,
            loss: Loss::Chunked,
            ..run()
        };
        let p = estimate(&llama_3_1_8b, &qlora);
        // The logits and the recomputed layer are not held at once.
        assert!(p.not_together_bytes > 0);
        // The allocator's peak: the estimate without its context allowance and margin.
        let managed = (p.total_bytes - p.overhead_bytes) as f64 / (1u64 << 30) as f64;
        assert!(
            (managed / 7.4 - 1.0).abs() < 0.10,
            "{managed:.2} GiB: {p:?}"
        );
    }

    #[test]
    fn qlora_fits_a_65b_model_in_48_gb() {
        // QLoRA's abstract: "finetune a 65B parameter model on a single 48GB GPU" (NF4 with
        // double quantization, LoRA adapters, gradient checkpointing).
        let llama_65b = Shape {
            params: 65_285_660_672,
            layers: Some(80),
            hidden: Some(8192),
            heads: Some(64),
            kv_heads: Some(64),
            vocab: Some(32000),
            intermediate: Some(22016),
            gated_mlp: true,
            tied_embeddings: Some(false),
            ..Shape::default()
        };
        let qlora = Run {
            dtype: Dtype::Int4,
            quant: Quant::Nf4Dq,
            mixed_precision: false,
            lora_rank: Some(64),
            checkpointing: Checkpointing::Full,
            attention: Attention::Sdpa,
            seq_len: 512,
            ..run()
        };
        let p = estimate(&llama_65b, &qlora);
        assert!(p.total_bytes < 48_000_000_000, "{p:?}");
        assert!(
            p.weights_bytes > 32_600_000_000,
            "at least half a byte a weight: {p:?}"
        );
    }

    /// The attention shape of Llama-2-7B (multi-head: 32 KV heads).
    fn llama_2_7b() -> Shape {
        Shape {
            params: 6_738_415_616,
            layers: Some(32),
            hidden: Some(4096),
            heads: Some(32),
            kv_heads: Some(32),
            ..Shape::default()
        }
    }

    /// GPT-3 175B's shape, as in Korthikanti et al. (2022), Table 3: h = 12288, a = 96,
    /// s = 2048; per layer and sequence, eq. 1–2.
    fn gpt3() -> Shape {
        Shape {
            params: 175_000_000_000,
            layers: Some(96),
            hidden: Some(12288),
            heads: Some(96),
            kv_heads: Some(96),
            intermediate: Some(4 * 12288),
            ..Shape::default()
        }
    }

    #[test]
    fn activations_follow_korthikanti() {
        let (s, b, h, a) = (2048u64, 1u64, 12288u64, 96u64);
        let sbh = s * b * h;
        let none = activations_per_layer(&gpt3(), &run()).expect("known");
        assert_eq!(none, sbh * 34 + 5 * a * s * s * b);
        let selective = Run {
            checkpointing: Checkpointing::Selective,
            ..run()
        };
        assert_eq!(
            activations_per_layer(&gpt3(), &selective).expect("known"),
            sbh * 34
        );
        let full = Run {
            checkpointing: Checkpointing::Full,
            ..run()
        };
        assert_eq!(
            activations_per_layer(&gpt3(), &full).expect("known"),
            2 * sbh
        );
        // Fused attention stores no scores: the selective figure without recomputing.
        let sdpa = Run {
            attention: Attention::Sdpa,
            ..run()
        };
        assert_eq!(
            activations_per_layer(&gpt3(), &sdpa).expect("known"),
            sbh * 34
        );
    }

    #[test]
    fn grouped_query_attention_and_gated_mlps_shrink_and_grow_what_they_should() {
        let mha = Shape {
            params: 1,
            layers: Some(32),
            hidden: Some(4096),
            heads: Some(32),
            kv_heads: Some(32),
            intermediate: Some(14336),
            gated_mlp: true,
            ..Shape::default()
        };
        let gqa = Shape {
            kv_heads: Some(8),
            ..mha.clone()
        };
        let r = Run {
            attention: Attention::Sdpa,
            ..run()
        };
        let sbh = 2048 * 4096;
        // K and V shrink to a quarter: 4·sbh × (1 − 8/32).
        assert_eq!(
            activations_per_layer(&mha, &r).expect("known")
                - activations_per_layer(&gqa, &r).expect("known"),
            3 * sbh
        );
        // Fused kernels: attention 10·sbh and its dropout mask, two norms' inputs, the MLP's
        // input and its mask, and gate, up and their product (2·s·b·i each).
        let sbi = 2048 * 14336;
        let fused = Run {
            kernels: Kernels::Fused,
            ..r.clone()
        };
        let expected = sbh * (10 + 1) + 4 * sbh + (2 + 1) * sbh + 6 * sbi;
        assert_eq!(
            activations_per_layer(&mha, &fused).expect("known"),
            expected
        );
        // As transformers writes it (`down(act(gate(x)) * up(x))`), SiLU's output is kept
        // for the product as well: 8·s·b·i.
        assert_eq!(
            activations_per_layer(&mha, &r).expect("known"),
            expected + 2 * sbi
        );
    }

    /// A layer of Llama-2-7B's shape with its norms and no dropout, as its config says.
    fn llama_layer() -> Shape {
        Shape {
            family: "llama".into(),
            norm: Some(Norm::RmsNorm),
            activation: Some(Act::Silu),
            residual_dropout: Some(false),
            ..llama_2_7b_whole()
        }
    }

    #[test]
    fn transformers_modules_keep_what_their_code_keeps() {
        // LlamaDecoderLayer at 2,048 tokens, pure bf16, fused attention; each term as a trace
        // of transformers' modules shows it (tests/integration/torch_trace.rs).
        let (s, h, i) = (2048u64, 4096u64, 11008u64);
        let (sbh, sbi) = (s * h, s * i);
        let r = Run {
            attention: Attention::Sdpa,
            mixed_precision: false,
            ..run()
        };
        let eager = activations_per_layer(&llama_layer(), &r).expect("known");
        // Two RMSNorms, each its fp32 copy and its 16-bit output (6); Q, K, V, the output
        // and the projections' input (10); the MLP's input (2) and its four tensors of width
        // i; no dropout mask.
        assert_eq!(eager, 2 * 6 * sbh + 10 * sbh + 2 * sbh + 8 * sbi);
        let fused = Run {
            kernels: Kernels::Fused,
            ..r.clone()
        };
        let korthikanti = activations_per_layer(&llama_layer(), &fused).expect("known");
        assert_eq!(korthikanti, 2 * 2 * sbh + 10 * sbh + 2 * sbh + 6 * sbi);
        // The difference is the norms' fp32 copies and SiLU's output.
        assert_eq!(eager - korthikanti, 2 * 4 * sbh + 2 * sbi);
        // Training in fp32: the RMSNorm's fp32 "copy" is its input, so it keeps 4 + 4.
        let fp32 = Run {
            dtype: Dtype::Fp32,
            ..r.clone()
        };
        assert_eq!(
            activations_per_layer(&llama_layer(), &fp32).expect("known"),
            2 * 8 * sbh + 20 * sbh + 4 * sbh + 16 * sbi
        );
        // GPT-2's gelu_new, written out, keeps four tensors of width 4h where a fused GELU
        // keeps one; the residual dropout keeps two 1-byte masks.
        let gpt2 = Shape {
            family: "gpt2".into(),
            layers: Some(12),
            hidden: Some(768),
            heads: Some(12),
            kv_heads: Some(12),
            intermediate: Some(3072),
            norm: Some(Norm::LayerNorm),
            activation: Some(Act::GeluNew),
            residual_dropout: Some(true),
            ..Shape::default()
        };
        let (sbh, sbi) = (2048 * 768, 2048 * 3072);
        assert_eq!(
            activations_per_layer(&gpt2, &r).expect("known"),
            4 * sbh + 10 * sbh + 2 * sbh + (4 + 1) * 2 * sbi + 2 * sbh
        );
        // Fused, it is Korthikanti et al.'s 34·sbh.
        assert_eq!(
            activations_per_layer(&gpt2, &fused).expect("known"),
            34 * sbh
        );
        // Each activation as a trace of a GPT-2 block with `activation_function` set to it
        // shows it: the tensors of width i it keeps beside the next layer's input (ReLU's
        // output is that input).
        for (name, kept) in [
            ("gelu_fast", 7),
            ("quick_gelu", 2),
            ("gelu_python_tanh", 4),
            ("gelu_pytorch_tanh", 1),
            ("gelu", 1),
            ("relu", 0),
        ] {
            let shape = Shape {
                activation: Some(Act::from_config(name)),
                ..gpt2.clone()
            };
            assert_eq!(
                activations_per_layer(&shape, &r).expect("known"),
                16 * sbh + (kept + 1) * 2 * sbi + 2 * sbh,
                "{name}"
            );
        }
        // gelu_pytorch_tanh is one kernel: as fused.
        let tanh = Shape {
            activation: Some(Act::from_config("gelu_pytorch_tanh")),
            ..gpt2
        };
        assert_eq!(activations_per_layer(&tanh, &r).expect("known"), 34 * sbh);
    }

    #[test]
    fn a_frozen_base_keeps_less_and_peft_keeps_its_adapters_input_in_fp32() {
        let (s, h, i) = (2048u64, 4096u64, 11008u64);
        let (sbh, sbi) = (s * h, s * i);
        let lora = Run {
            attention: Attention::Sdpa,
            mixed_precision: false,
            lora_rank: Some(16),
            ..run()
        };
        // Norms: the fp32 copy alone (4 each); q and v's adapters: an fp32 copy of their
        // input each (4 each); Q, K, V and the output (8); SiLU's input and output and up's
        // output (3 × 2·s·b·i). Nothing for the frozen projections' inputs or `down`'s.
        assert_eq!(
            activations_per_layer(&llama_layer(), &lora).expect("known"),
            2 * 4 * sbh + 2 * 4 * sbh + 8 * sbh + 6 * sbi
        );
        // A fused recipe (torchtune's LoRA keeps 16-bit adapters; Liger's RMSNorm and SwiGLU):
        // the norms' inputs, one shared 16-bit input, the attention, gate and up.
        let fused = Run {
            kernels: Kernels::Fused,
            ..lora.clone()
        };
        assert_eq!(
            activations_per_layer(&llama_layer(), &fused).expect("known"),
            2 * 2 * sbh + 2 * sbh + 8 * sbh + 4 * sbi
        );
        // Checkpointed, each layer keeps its input, as with full fine-tuning.
        let ckpt = Run {
            checkpointing: Checkpointing::Full,
            ..lora
        };
        assert_eq!(
            activations_per_layer(&llama_layer(), &ckpt).expect("known"),
            2 * sbh
        );
    }

    #[test]
    fn gradients_and_activations_are_not_all_held_at_once() {
        let gib = 1u64 << 30;
        let loss = |forward: u64, backward: u64| LossMoments {
            forward,
            backward,
            head: 0,
            kept: 0,
            head_grad_in_forward: false,
            head_grad_in_loss_backward: false,
        };
        let h = Held {
            grads: 10 * gib,
            head_grads: gib,
            stored: 8 * gib,
            per_layer: gib,
            recomputed: 0,
            loss: loss(3 * gib, 0),
            accumulating: false,
        };
        // The end of forward: the activations and the logits, no gradients yet.
        assert_eq!(held_at_peak(&h), 11 * gib);
        // The end of backward: every gradient and the first layer's activations.
        let grads = Held {
            grads: 20 * gib,
            ..h
        };
        assert_eq!(held_at_peak(&grads), 21 * gib);
        // With gradient accumulation the gradients are there from the start.
        let accumulating = Held {
            accumulating: true,
            ..h
        };
        assert_eq!(held_at_peak(&accumulating), 21 * gib);
        // Checkpointed: the output layer's backward holds every layer's input, its gradient,
        // then the recomputed layer.
        let ckpt = Held {
            grads: gib,
            stored: 5 * gib,
            per_layer: 0,
            recomputed: 2 * gib,
            loss: loss(gib, 0),
            ..h
        };
        assert_eq!(held_at_peak(&ckpt), 8 * gib);
    }

    #[test]
    fn the_losss_backward_is_a_moment_of_its_own() {
        let gib = 1u64 << 30;
        let h = Held {
            grads: 10 * gib,
            head_grads: gib,
            stored: 8 * gib,
            per_layer: gib,
            recomputed: 0,
            loss: LossMoments {
                forward: 3 * gib,
                backward: 5 * gib,
                head: 2 * gib,
                kept: gib,
                head_grad_in_forward: false,
                head_grad_in_loss_backward: false,
            },
            accumulating: false,
        };
        // The loss's backward, with every layer's activations and no gradient: 8 + 5, not
        // the forward's 8 + 3, and not summed with the gradients made after it.
        assert_eq!(held_at_peak(&h), 13 * gib);
        // The output layer's backward: its gradient (1) and the logits' gradient (2).
        let head = Held {
            loss: LossMoments {
                backward: 0,
                head: 4 * gib,
                ..h.loss
            },
            ..h
        };
        assert_eq!(held_at_peak(&head), 13 * gib);
        // What the loop keeps of the logits is there at the end of backward.
        let late = Held {
            grads: 20 * gib,
            ..h
        };
        assert_eq!(held_at_peak(&late), 22 * gib);
        // A loss that runs the output layer's backward itself holds its gradient in the
        // loss's backward; one that makes it in its forward, there too.
        let chunked = Held {
            loss: LossMoments {
                head_grad_in_loss_backward: true,
                ..h.loss
            },
            ..h
        };
        assert_eq!(held_at_peak(&chunked), 14 * gib);
        let fused = Held {
            loss: LossMoments {
                forward: 6 * gib,
                head_grad_in_forward: true,
                ..chunked.loss
            },
            ..h
        };
        assert_eq!(held_at_peak(&fused), 15 * gib);
        // With accumulation, every gradient is there at the loss's backward.
        let accumulating = Held {
            accumulating: true,
            ..h
        };
        assert_eq!(held_at_peak(&accumulating), 23 * gib);
    }

    #[test]
    fn the_standard_losss_backward_holds_14_bytes_a_logit_at_the_peak() {
        // GPT-2 small, pure bf16 AdamW, batch 4 × 1,024: the step's peak is the loss's
        // backward: every layer's activations and 14 bytes a logit (the kept 16-bit logits,
        // the saved log-probabilities and the two fp32 gradients), no gradient yet.
        let shape = Shape {
            family: "gpt2".into(),
            params: 124_439_808,
            layers: Some(12),
            hidden: Some(768),
            heads: Some(12),
            kv_heads: Some(12),
            vocab: Some(50_257),
            intermediate: Some(3072),
            tied_embeddings: Some(true),
            norm: Some(Norm::LayerNorm),
            activation: Some(Act::GeluNew),
            residual_dropout: Some(true),
            ..Shape::default()
        };
        let r = Run {
            batch: 4,
            seq_len: 1024,
            mixed_precision: false,
            optimizer: Optimizer::Adamw,
            attention: Attention::Sdpa,
            ..run()
        };
        let values = 4 * 1024 * 50_257u64;
        let m = loss_moments(&shape, &r).expect("known");
        assert_eq!((m.forward, m.backward), (10 * values, 14 * values));
        let p = estimate(&shape, &r);
        assert_eq!(p.logits_bytes, Some(14 * values));
        let acts = p.activations_bytes.expect("known");
        let weights_and_states = p.weights_bytes + p.optimizer_bytes.expect("known");
        let managed = p.total_bytes - p.overhead_bytes;
        assert_eq!(managed, weights_and_states + acts + 14 * values);
    }

    #[test]
    fn torchtunes_measured_full_fine_tune_with_checkpointing_on_packed_sequences() {
        // torchtune's README, "Optimization flags": Llama 3.2 3B, full_finetune_single_device,
        // batch 2, packed to 4,096 tokens, bf16, A100; with compile, the chunked loss and
        // activation checkpointing: 24.9 GiB peak memory active. AdamW keeps its moments in
        // bf16, like the parameters.
        let llama_3_2_3b = Shape {
            family: "llama".into(),
            params: 3_212_749_824,
            layers: Some(28),
            hidden: Some(3072),
            heads: Some(24),
            kv_heads: Some(8),
            vocab: Some(128_256),
            intermediate: Some(8192),
            gated_mlp: true,
            tied_embeddings: Some(true),
            norm: Some(Norm::RmsNorm),
            activation: Some(Act::Silu),
            residual_dropout: Some(false),
        };
        let r = Run {
            batch: 2,
            seq_len: 4096,
            dtype: Dtype::Bf16,
            mixed_precision: false,
            optimizer: Optimizer::Adamw,
            checkpointing: Checkpointing::Full,
            attention: Attention::Sdpa,
            loss: Loss::Chunked,
            ..run()
        };
        let managed = |r: &Run| {
            let p = estimate(&llama_3_2_3b, r);
            (p.total_bytes - p.overhead_bytes) as f64 / (1u64 << 30) as f64
        };
        // Every gradient and one recomputed layer at the end of backward: 25.0 GiB. Adding
        // the gradients to everything forward keeps said 28.2.
        let m = managed(&r);
        assert!((m / 24.9 - 1.0).abs() < 0.03, "{m:.2} GiB");
        let fused = Run {
            kernels: Kernels::Fused,
            ..r
        };
        assert!((managed(&fused) / 24.9 - 1.0).abs() < 0.03);
    }

    #[test]
    fn kv_cache_of_llama_2_7b() {
        // 2 × 32 layers × 32 heads × 128 × 2 bytes = 0.5 MiB per token: 2 GiB at 4096.
        let shape = llama_2_7b();
        let r = Run {
            inference: true,
            seq_len: 4096,
            dtype: Dtype::Fp16,
            ..run()
        };
        assert_eq!(kv_cache(&shape, &r), Some(2 << 30));
        // 4-bit weights keep a 16-bit cache; Mistral's 8 KV heads cut it to a quarter.
        let int4 = Run {
            dtype: Dtype::Int4,
            ..r.clone()
        };
        assert_eq!(kv_cache(&shape, &int4), Some(2 << 30));
        let gqa = Shape {
            kv_heads: Some(8),
            ..shape
        };
        assert_eq!(kv_cache(&gqa, &r), Some(512 << 20));
    }

    #[test]
    fn lora_trains_the_adapters_only() {
        // PEFT's LoRA r=16 on q_proj and v_proj of Llama-2-7B prints
        // "trainable params: 8,388,608".
        let shape = llama_2_7b();
        let r = Run {
            lora_rank: Some(16),
            ..run()
        };
        assert_eq!(trainable_params(&shape, &r), 8_388_608);
        let p = estimate(&shape, &r);
        // Frozen base weights in bf16; fp32 adapter gradients and Adam moments.
        assert_eq!(p.weights_bytes, 2 * 6_738_415_616);
        assert_eq!(p.gradients_bytes, Some(4 * 8_388_608));
        assert_eq!(p.optimizer_bytes, Some(8 * 8_388_608));
    }

    #[test]
    fn inference_has_no_gradients_and_the_total_adds_up() {
        let r = Run {
            inference: true,
            optimizer: Optimizer::None,
            ..run()
        };
        let p = estimate(&gpt3(), &r);
        assert_eq!((p.gradients_bytes, p.optimizer_bytes), (None, None));
        let managed = p.weights_bytes
            + p.activations_bytes.expect("known")
            + p.kv_cache_bytes.expect("known");
        assert_eq!(p.total_bytes, managed + p.overhead_bytes);
        assert_eq!(
            p.overhead_bytes,
            CONTEXT_ALLOWANCE + (managed as f64 * FRAGMENTATION_MARGIN) as u64
        );
    }
}
