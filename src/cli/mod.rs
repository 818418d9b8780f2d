//! Command-line interface: every flag and its help text.
//!
//! The doc comments on flags are clap's `--help` text, written for a terminal: `[::]:PORT` and
//! `<tmp>/gpumon-<uid>` are meant literally, not as rustdoc links or HTML.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgMatches, Args, FromArgMatches, Parser, Subcommand};

use crate::estimate::memory::{Attention, Checkpointing, Dtype, Kernels, Loss, Optimizer, Quant};
use crate::view::log::Format;

mod parse;
mod resolve;

use parse::{choice, parse_gpu, parse_step_marker};
pub use parse::{
    parse_auto_gpus, parse_demo_machine, parse_grace, parse_history, parse_idle_after,
    parse_interval, parse_keep, parse_listen, parse_max_size, parse_need, parse_peak_rate,
    parse_timeout, parse_wait,
};
pub use resolve::{estimate_line, panel_estimate};

#[derive(Debug, Parser)]
#[command(
    name = "gpumon",
    version,
    about = "Shows where GPU memory goes and explains why a job ran out of it",
    long_about = "Shows where GPU memory goes and explains why a job ran out of it.\n\n\
        With no command, gpumon opens the live dashboard on a terminal (memory breakdown \
        gauges, history, processes, and an OOM panel: press `o` or paste an error), or prints \
        the `once` report when its output is not a terminal. Use --demo to try it on \
        simulated GPUs without a GPU.",
    after_help = "Examples:\n  \
        gpumon --demo                      the dashboard on simulated GPUs\n  \
        gpumon --demo once                 simulated GPUs, no driver needed\n  \
        gpumon once --json                 the whole sample as JSON\n  \
        gpumon log --interval 500ms --count 20 --format csv\n  \
        gpumon log --processes --output gpu-procs.csv\n  \
        python train.py 2>&1 | tail -50 | gpumon explain\n  \
        gpumon run -- python train.py      allocator split live, OOM caught with its numbers\n  \
        gpumon serve                       Prometheus metrics on :9400 (dcgm-exporter names too)\n  \
        gpumon completions bash            shell completions (also zsh, fish, elvish, powershell)\n\n\
        Environment:\n  \
        GPUMON_NVML_LIB     the NVML library to load (as --nvml-lib)\n  \
        GPUMON_DEVICE_DIR   where the NVIDIA device nodes are (default /dev), to find the\n                      \
        processes that hold a GPU's memory without NVML listing them\n  \
        GPUMON_HOST_ROOT    the root under which /proc and /sys are read for shared memory\n                      \
        and the container's GPU memory limit (default /)\n  \
        NO_COLOR            plain text, no colours"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Where the dashboard reads from; given before a command (`gpumon --demo once`), the
    /// command's own flags take precedence.
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// How much history the dashboard keeps and charts: 10m, 1h, 90s…
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_history)]
    pub history: Duration,
    /// How long a process must do nothing on its GPU (0% SM) before its memory counts as an
    /// idle hold in the per-user view (Tab): 10m, 1h…
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_idle_after)]
    pub idle_after: Duration,
    /// Also record every sample the dashboard takes to FILE (as `gpumon record` does, within
    /// its default bounds: 1 GiB, 7 days)
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// The fleet view: a row per node for these `gpumon serve` endpoints (HOST:PORT or
    /// user:password@HOST:PORT, https:// with --remote-config; comma-separated), each read
    /// within --timeout (default 2s) every --interval (default 2s); Enter opens a node in the
    /// dashboard, Esc goes back
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with_all = ["demo", "demo_machine", "scenario", "record"]
    )]
    pub remote: Vec<String>,
    /// The fleet view's nodes, one a line: [NAME] HOST:PORT (`#` starts a comment)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["demo", "demo_machine", "scenario", "record"])]
    pub remote_file: Option<PathBuf>,
    /// The fleet view from a Prometheus that scrapes gpumon serve or dcgm-exporter:
    /// http[s]://[user:password@]HOST:PORT[/PREFIX], one query a refresh; a node opened
    /// there is read from it too, its history from a range query
    #[arg(
        long,
        value_name = "URL",
        conflicts_with_all = ["demo", "demo_machine", "scenario", "record", "remote", "remote_file"]
    )]
    pub prometheus: Option<String>,
    /// With --prometheus: only the series matching these labels: '{job="gpumon"}'
    #[arg(long, value_name = "SELECTOR", requires = "prometheus")]
    pub selector: Option<String>,
    /// How to reach the fleet's nodes: YAML with tls_config (ca_file, server_name) and
    /// basic_auth (username, password or password_file), as serve's web config file has
    #[arg(long, value_name = "FILE")]
    pub remote_config: Option<PathBuf>,
}

// Where readings come from: the flags of every command that reads GPUs (and of the
// dashboard). Not global: `explain`, `man` and `completions` read none, and their help does
// not list them. (Plain comments on the flattened structs here: clap takes a doc comment on
// one for the about text of every command that flattens it.)
#[derive(Debug, Clone, Default, Args)]
pub struct SourceArgs {
    /// Show simulated GPUs (a training run on two GPUs) instead of reading NVML
    #[arg(long, conflicts_with = "scenario")]
    pub demo: bool,

    /// Show this simulated machine instead of reading NVML (implies --demo): training (the
    /// default demo), spark (a DGX Spark: a GB10 whose memory is the system's), gh200 (a
    /// GH200 in NUMA mode, two containers with GPU memory limits)
    #[arg(long, value_name = "MACHINE", value_parser = parse_demo_machine, conflicts_with = "scenario")]
    pub demo_machine: Option<crate::collect::source::simulated::DemoMachine>,

    /// Show simulated GPUs from a scenario file (see assets/scenarios/README.md)
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,

    /// NVML library to load instead of the driver's libnvidia-ml.so.1 (an empty value means
    /// the driver's)
    #[arg(long, value_name = "PATH", env = "GPUMON_NVML_LIB")]
    pub nvml_lib: Option<String>,

    /// How long a GPU may take to answer before it is shown as stalled (not responding);
    /// also how long gpumon waits for the driver to initialise [default: the larger of 2s and
    /// twice the interval; 10s for initialisation]
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,

    /// Only these GPUs, by index or UUID (comma-separated): --gpu 0,2
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_gpu)]
    pub gpu: Vec<String>,

    /// The kubelet's pod-resources socket, asked for the names of the pods that hold GPUs
    /// (only when it exists) [default: /var/lib/kubelet/pod-resources/kubelet.sock]
    #[arg(long, value_name = "PATH")]
    pub kubelet_socket: Option<PathBuf>,
}

// How often to sample: the flag of the commands that sample on an interval.
#[derive(Debug, Clone, Default, Args)]
pub struct SamplingArgs {
    /// Time between samples: 1s, 500ms, 2m… (at least 10ms) [default: 1s]
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Option<Duration>,
    /// Memory-only reads per second per GPU between samples, so each sample carries the
    /// highest memory since the previous one (a spike of tens of ms); 0 turns them off
    /// [default: 50]
    #[arg(long, value_name = "HZ", value_parser = parse_peak_rate)]
    pub peak_rate: Option<f64>,
}

/// The flags a command runs with: its own, over those given before it.
#[derive(Debug, Clone)]
pub struct Common {
    pub demo: bool,
    /// `--demo-machine` (with it, `demo` is set).
    pub demo_machine: crate::collect::source::simulated::DemoMachine,
    pub scenario: Option<PathBuf>,
    pub nvml_lib: Option<String>,
    pub interval: Duration,
    /// `--interval` as given (`None`: the command's default).
    pub interval_given: Option<Duration>,
    /// Memory-only reads per second per GPU (`--peak-rate`; 0: off).
    pub peak_rate: f64,
    pub history: Duration,
    /// How long a process must do nothing on its GPU for its memory to be an idle hold.
    pub idle_after: Duration,
    /// The dashboard's `--record FILE`.
    pub record: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub gpu: Vec<String>,
    pub kubelet_socket: Option<PathBuf>,
}

/// A subcommand's arguments, built only when that subcommand is parsed (or its help, the
/// completions or the man page are made): `gpumon once` does not build the other commands'
/// flags and help, a third of what parsing its command line took.
#[derive(Debug)]
pub struct Deferred<T>(pub T);

impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.defer(T::augment_args)
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(T::augment_args_for_update)
    }
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Deferred)
    }
    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Deferred)
    }
    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }
    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print one snapshot of every GPU and its processes, then exit
    ///
    /// The text view fits the terminal's width (COLUMNS when set, 80 columns when the output
    /// is not a terminal): fields and columns drop as it narrows, and commands are cut with
    /// "…". A header line names the process columns.
    Once(Deferred<OnceArgs>),
    /// Write one record per GPU (or per process) every interval, for scripts and clusters
    Log(Deferred<LogArgs>),
    /// Record every sample to a compact, append-only file, for replay and post-mortems
    ///
    /// Each sample (GPUs, processes with their owners, allocator splits, stalled and lost
    /// GPUs, holders of unattributed memory) is appended to FILE as zstd-compressed JSON lines,
    /// written through per sample: a crash loses at most the sample being written. `zstdcat
    /// FILE` prints them. The size is bounded: FILE is rotated (FILE.<unix time>) and the
    /// oldest rotated files are removed past --keep or --max-size.
    #[command(
        after_help = "Examples:\n  gpumon record -o /var/lib/gpumon/node.rec.zst\n  \
        gpumon replay /var/lib/gpumon/node.rec.zst --at 03:10\n  \
        gpumon once --replay node.rec.zst --at 2026-11-23T03:12:00Z --json\n  \
        zstdcat node.rec.zst | jq -c '.devices[0].memory'"
    )]
    Record(Deferred<RecordArgs>),
    /// Open the dashboard on a recording, with a time cursor
    ///
    /// Everything the live dashboard shows (gauges, charts, processes, details, the per-user
    /// view), at the recording's time: ←/→ step a sample, [ and ] jump a minute, g goes to a
    /// typed time, space plays and pauses, + and - set the speed.
    Replay(Deferred<ReplayArgs>),
    /// Explain a pasted out-of-memory error: where the memory went and what to do.
    ///
    /// Reads a traceback or a whole log (from FILE, or standard input when FILE is absent or
    /// `-`), finds every OOM message in it (PyTorch in any version, ROCm, XPU, MPS, TensorFlow,
    /// JAX, raw CUDA, ONNX Runtime, llama.cpp, vLLM, CuPy, PaddlePaddle, TensorRT), and
    /// explains the last one. Exit status: 0 when an OOM was found, 1 when none was, 2 on a
    /// usage or I/O error.
    Explain(Deferred<ExplainArgs>),
    /// Run a command with the in-process probe, then summarise its GPU memory (and any OOM).
    ///
    /// CMD starts with gpumon's probe loaded into every Python process it starts (through
    /// PYTHONPATH and sitecustomize; an existing sitecustomize still runs). Once PyTorch has
    /// initialised CUDA, each process publishes its allocator's figures (allocated, cached,
    /// peaks, retries, OOMs), so any gpumon of yours (the dashboard, once, log) shows
    /// allocated / cached / outside-PyTorch / other apps / free for it. CMD's stdin, stdout,
    /// exit status and signals pass through; its stderr is relayed unchanged and watched for an
    /// OOM. When CMD ends, gpumon prints per-GPU peaks and, after an OOM, the explain report
    /// with the numbers sampled just before it.
    ///
    /// With --gpus auto[:N], gpumon first chooses the GPUs as `pick` does and sets
    /// CUDA_VISIBLE_DEVICES; --wait queues for room, first come, first served with the host's
    /// other waiters, and a launched job holds what it asked for until it has taken it.
    #[command(
        after_help = "Examples:\n  gpumon run -- python train.py --batch-size 64\n  \
        gpumon run --log mem.csv -- torchrun --nproc-per-node 8 train.py\n  \
        gpumon run --snapshot -- python train.py\n  \
        gpumon run --gpus auto:2 --need 30GiB --wait 2h -- torchrun --nproc-per-node 2 train.py"
    )]
    Run(Deferred<RunArgs>),
    /// Serve Prometheus metrics for this node's GPUs (dcgm-exporter's memory, utilisation,
    /// temperature and power fields under its names, and gpumon's own)
    ///
    /// Samples every --interval and serves the latest sample: /metrics (Prometheus text, or
    /// OpenMetrics when the scraper asks), /api/v1/sample (the `once --json` schema) and
    /// /healthz. A scrape never waits for the driver: a stalled or lost GPU is reported as such.
    /// Exports dcgm-exporter's DCGM_FI_DEV_* names (MiB, its labels) and gpumon_* metrics in
    /// base units: memory total/used/free/reserved/unattributed, utilisation, temperature,
    /// power, per-process GPU memory, the allocator split of processes under `gpumon run`, and
    /// each GPU's up/stalled state with the age of its data.
    #[command(after_help = "Examples:\n  gpumon serve\n  \
        gpumon serve --listen 127.0.0.1:9400 --interval 2s\n  \
        gpumon serve --web.config.file /etc/gpumon/web.yml --process-labels user")]
    Serve(Deferred<ServeArgs>),
    /// Estimate a training or inference run's GPU memory, and whether it fits the GPUs here
    ///
    /// The model comes from --model (a Hugging Face config.json, or a model directory: its
    /// *.safetensors headers give the exact parameter count) or from --params with optional
    /// shape flags. Parts: weights, gradients, optimizer states (with fp32 master weights under
    /// mixed precision, as in the ZeRO paper), activations per layer (what transformers'
    /// modules keep, or with --kernels fused Korthikanti et al. 2022's figures; a frozen base
    /// with --lora-rank; gradients and activations never all held at once), the KV cache for
    /// --inference, and a stated allowance for the CUDA context plus a fragmentation margin.
    /// Each GPU's live free
    /// memory is read (NVML, --demo or --scenario); when the run does not fit, what each
    /// standard remedy saves and the fewest that make it fit.
    ///
    /// --torch SPEC traces your own PyTorch model instead: a helper carried in gpumon runs in
    /// your interpreter (--python), builds the model on fake tensors (no GPU, no memory),
    /// runs one training step with --input or --input-fn and follows every tensor: the peak
    /// by kind, each layer's output and saved bytes and share of the peak, and each remedy
    /// measured by tracing again (half the batch, bf16 autocast, inplace activations, SGD,
    /// checkpointing, no_grad). The CUDA context allowance is added, said as not measured.
    #[command(after_help = "Examples:\n  \
        gpumon estimate --model ./Llama-2-7b-hf --batch 4 --seq-len 2048 --mixed-precision\n  \
        gpumon estimate --params 7B --layers 32 --hidden 4096 --heads 32 --inference \\\n      \
        --seq-len 4096 --dtype fp16\n  \
        gpumon estimate --torch torchvision.models:vgg16 --input 32x3x224x224 --optimizer adam\n  \
        gpumon estimate --torch ./model.py:build --input 8x512:int64 --python .venv/bin/python")]
    Estimate(Deferred<EstimateCmd>),
    /// Choose GPUs for a job: the idle ones with the most free memory, MIG instances included
    ///
    /// Reads every GPU once and prints the environment that runs a job there,
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,5` (PCI bus order is NVML's, so
    /// the indices mean what `nvidia-smi` and gpumon show), or a MIG instance's `MIG-` UUID.
    /// A candidate must answer (never a stalled or lost GPU), have --need free (or what
    /// --estimate's run needs), and with --idle run nothing; idle ones come first, then the
    /// most free memory. A CUDA process uses one MIG instance at most, so --count 2 or more
    /// takes whole GPUs. Exit status 1, with each GPU's reason, when too few fit.
    #[command(after_help = "Examples:\n  export $(gpumon pick --need 20GiB)\n  \
        env $(gpumon pick --count 2 --idle) torchrun --nproc-per-node 2 train.py\n  \
        gpumon pick --estimate \"--model ./Llama-2-7b-hf --batch 4 --seq-len 2048\" --format json")]
    Pick(Deferred<PickArgs>),
    /// Print a shell completion script: gpumon completions bash > /etc/bash_completion.d/gpumon
    Completions {
        /// bash, zsh, fish, elvish or powershell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): gpumon(1), or a command's (gpumon man once); --dir writes
    /// them all: gpumon man --dir /usr/local/share/man/man1
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (gpumon-once(1) for `once`…); none: gpumon(1)
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
    /// Write every page (gpumon.1, gpumon-once.1, gpumon-log.1…) into DIR
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

// `gpumon estimate`: the run's flags, and where the GPUs it is judged against are read.
#[derive(Debug, Args)]
pub struct EstimateCmd {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub run: EstimateArgs,
}

// The run `estimate` sizes (also what `explain --estimate` and the dashboard's panel parse).
#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// A Hugging Face config.json, or a model directory (config.json and *.safetensors,
    /// sharded through model.safetensors.index.json)
    #[arg(long, value_name = "PATH", conflicts_with = "params")]
    pub model: Option<PathBuf>,
    /// The parameter count: 7B, 350M, 6738415616
    #[arg(long, value_name = "N", value_parser = crate::estimate::parse_params,
          required_unless_present_any = ["model", "torch"])]
    pub params: Option<u64>,
    /// Trace your own PyTorch model instead: package.module:callable or path/file.py:callable
    /// returning an nn.Module. One training step (two where the optimizer makes its states
    /// lazily) runs on fake tensors in your interpreter (--python): no GPU memory is used
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["model", "params"])]
    pub torch: Option<String>,
    /// With --torch: the batch's tensors, 32x3x224x224; several separated by commas or given
    /// again; a dtype suffix for token ids: 8x512:int64
    #[arg(long, value_name = "SHAPES")]
    pub input: Vec<String>,
    /// With --torch: file.py:callable (or module:callable) returning the batch (a tensor, a
    /// tuple, or a dict of keyword arguments); called with --batch when it takes an argument
    #[arg(long, value_name = "SPEC", conflicts_with = "input")]
    pub input_fn: Option<String>,
    /// With --model: build the model from its config.json with transformers, on fake tensors,
    /// and trace it instead of using the formula
    #[arg(long, requires = "model")]
    pub trace: bool,
    /// The Python interpreter the trace runs in (yours: the one with your model and torch)
    #[arg(long, value_name = "PATH", default_value = "python3")]
    pub python: PathBuf,
    /// How long the trace may take before it is stopped
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout, default_value = "5m")]
    pub trace_timeout: Duration,
    /// Transformer layers (for activations and the KV cache); with --torch, how many rows
    /// of the layer table to show (without N: all of them)
    #[arg(long, value_name = "N", num_args = 0..=1,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub layers: Option<Option<u64>>,
    /// Hidden size
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub hidden: Option<u64>,
    /// Attention heads
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub heads: Option<u64>,
    /// Key/value heads (grouped-query attention; default: --heads)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub kv_heads: Option<u64>,
    /// Vocabulary size (for the output logits)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    pub vocab: Option<u64>,
    /// MLP width; a gated (SwiGLU) MLP with --gated-mlp
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 22))]
    pub intermediate: Option<u64>,
    /// The MLP has gate, up and down matrices (Llama, Mistral, Qwen2)
    #[arg(long)]
    pub gated_mlp: bool,
    /// Sequences per step (per GPU)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub batch: u64,
    /// Tokens per sequence
    #[arg(long, value_name = "N", default_value_t = 2048, value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    pub seq_len: u64,
    /// The weights' type (the compute type under --mixed-precision is bf16) [default: bf16;
    /// with --torch, the model's own]
    #[arg(long, value_parser = choice::<Dtype>())]
    pub dtype: Option<Dtype>,
    /// bf16 compute with fp32 master weights (training)
    #[arg(long)]
    pub mixed_precision: bool,
    /// The optimizer (training)
    #[arg(long, default_value = "adamw", value_parser = choice::<Optimizer>())]
    pub optimizer: Optimizer,
    /// Activation recomputation (training)
    #[arg(long, default_value = "none", value_parser = choice::<Checkpointing>())]
    pub checkpointing: Checkpointing,
    /// Attention kernels: sdpa (fused, as PyTorch 2 and transformers use by default: the s×s
    /// scores are never stored) or eager (scores, softmax and dropout stored per layer)
    #[arg(long, default_value = "sdpa", value_parser = choice::<Attention>())]
    pub attention: Attention,
    /// What the layers keep for backward: eager (the modules as transformers writes them:
    /// RMSNorm's fp32 copy, written-out GELUs such as GPT-2's gelu_new, the gated MLP's four
    /// tensors, PEFT's fp32 adapter inputs) or fused (Liger, llm.c, Megatron/Transformer
    /// Engine kernels: Korthikanti et al.'s figures)
    #[arg(long, default_value = "eager", value_parser = choice::<Kernels>())]
    pub kernels: Kernels,
    /// Gradient accumulation steps (the effective batch is batch × N)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub grad_accum: u64,
    /// Estimate inference: weights and the KV cache, no gradients or optimizer states
    #[arg(long)]
    pub inference: bool,
    /// Train LoRA adapters of this rank on the attention's query and value projections only
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub lora_rank: Option<u64>,
    /// How the loss meets the logits (training): standard (the logits upcast to fp32 whole, as
    /// transformers does), chunked (torchtune's CEWithChunkedOutputLoss) or fused (Liger's
    /// fused linear cross-entropy, Cut Cross-Entropy)
    #[arg(long, default_value = "standard", value_parser = choice::<Loss>())]
    pub loss: Loss,
    /// How 4-bit weights are stored (with --dtype int4): nf4 (bitsandbytes, the default),
    /// nf4-dq (with double quantization), gptq or awq
    #[arg(long, value_parser = choice::<Quant>())]
    pub quant: Option<Quant>,
    /// GPTQ's and AWQ's group size
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub group_size: u64,
    /// Print the report as JSON (schema version 1)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,

    /// Address to listen on: ADDR:PORT, [::]:PORT, or :PORT (dcgm-exporter's port by default)
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:9400",
          value_parser = parse_listen)]
    pub listen: std::net::SocketAddr,

    /// How long a process must do nothing on its GPU (0% SM) before its memory counts in
    /// gpumon_idle_held_bytes [default: 10m]
    #[arg(long, value_name = "DURATION", value_parser = parse_idle_after)]
    pub idle_after: Option<Duration>,

    /// Also record every sample to FILE (as `gpumon record` does, within its default bounds:
    /// 1 GiB, 7 days)
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// Leave out the dcgm-exporter compatible DCGM_FI_* metrics (the gpumon_* ones remain)
    #[arg(long)]
    pub no_dcgm_names: bool,

    /// Extra labels on per-process series: user, command, pod (dcgm-exporter's pod, namespace
    /// and container, for processes in a pod), job (slurm_job); comma-separated, none by
    /// default, for privacy and cardinality
    #[arg(long, value_name = "LIST")]
    pub process_labels: Option<String>,

    /// TLS and basic auth, in the Prometheus exporter-toolkit format (as node_exporter's
    /// --web.config.file): tls_server_config, basic_auth_users, http_server_config.headers
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,

    /// Record the run's processes every interval to FILE (appends; same formats as `log`)
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,

    /// Format of --log
    #[arg(long, value_enum, default_value = "csv")]
    pub log_format: Format,

    /// Columns of --log (the `log --processes` fields; default: the allocator split)
    #[arg(long, value_name = "LIST")]
    pub log_fields: Option<String>,

    /// Where probes publish [default: $XDG_RUNTIME_DIR/gpumon, else <tmp>/gpumon-<uid>]
    #[arg(long, value_name = "DIR")]
    pub probe_dir: Option<PathBuf>,

    /// Print no summary at the end
    #[arg(long, short)]
    pub quiet: bool,

    /// Record the run's samples to FILE (by default a file of its own under
    /// $XDG_STATE_HOME/gpumon/runs, kept 7 days, at most 256 MiB each), named in the summary
    /// for `gpumon replay`
    #[arg(long, value_name = "FILE", conflicts_with = "no_record")]
    pub record: Option<PathBuf>,

    /// Do not record the run
    #[arg(long)]
    pub no_record: bool,

    /// Turn on PyTorch's memory history (Python stacks of allocations, the last 100,000
    /// events) when the job initialises CUDA, and at an out-of-memory error save a memory
    /// snapshot (pytorch.org/memory_viz opens it) and summarise it: live memory by allocation
    /// site, the cache's free pieces against the request, fragmentation or genuinely too much
    #[arg(long)]
    pub snapshot: bool,

    /// Where --snapshot saves its files [default: $XDG_STATE_HOME/gpumon/runs, kept 7 days]
    #[arg(long, value_name = "DIR", requires = "snapshot")]
    pub snapshot_dir: Option<PathBuf>,

    /// What marks a training step for the per-step baseline that catches memory growing step
    /// after step: auto (the optimizer's step, PyTorch 2.0 and later; without an optimizer,
    /// each `backward()`), MODULE:FUNCTION (each return from that function, a method as
    /// Class.method; the script itself is __main__), or off
    #[arg(long, value_name = "MARKER", default_value = "auto", value_parser = parse_step_marker)]
    pub step_marker: String,

    /// Choose the GPUs as `gpumon pick` does (auto: one; auto:N: N) and run CMD on them
    /// (CUDA_VISIBLE_DEVICES, in PCI bus order); with --need or --estimate they must have that
    /// much free, without either they must run nothing
    #[arg(long, value_name = "auto[:N]", value_parser = parse_auto_gpus)]
    pub gpus: Option<u16>,

    /// With --gpus: the free memory CMD needs on each GPU (20GiB, 24G; GiB = 2^30)
    #[arg(long, value_name = "SIZE", value_parser = parse_need, requires = "gpus", conflicts_with = "estimate")]
    pub need: Option<u64>,

    /// CMD described with `gpumon estimate`'s flags, in one string: with --gpus, its estimated
    /// peak is the memory needed on each GPU; with --batch, the summary sets the measured
    /// figures beside the estimated ones
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub estimate: Option<String>,

    /// The batch size CMD runs with: the probe measures what its first steps hold and peak at,
    /// and the summary gives the cost of a sample and the largest batch that fits this GPU
    /// (PyTorch 2.0 or later; an extrapolation, linear in the batch)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: Option<u32>,

    /// With --gpus: when no GPU has room, wait for it (at most TIMEOUT: 30m, 2h; none: as long
    /// as it takes) in the host's first-come, first-served queue; without --wait, exit 1
    #[arg(long, value_name = "TIMEOUT", num_args = 0..=1, default_missing_value = "forever", value_parser = parse_wait, requires = "gpus")]
    pub wait: Option<Wait>,

    /// With --gpus: how long a launched job holds the memory it asked for and has not taken
    /// yet, so that the next waiter does not count it as free
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_grace, requires = "gpus")]
    pub grace: Duration,

    /// The queue's directory, shared by the host's users [default: $GPUMON_QUEUE_DIR, else
    /// /tmp/gpumon-queue]
    #[arg(long, value_name = "DIR")]
    pub queue_dir: Option<PathBuf>,

    /// The command and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// File to read; standard input when absent or `-`
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Print the analysis as JSON (schema: docs/schema/explain.schema.json)
    #[arg(long)]
    pub json: bool,

    /// Describe the run with gpumon estimate's flags (one quoted string, e.g.
    /// "--model ./Llama-2-7b-hf --batch 8 --seq-len 4096 --mixed-precision"), so the remedies'
    /// savings come from the estimate's model instead of rules of thumb
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub estimate: Option<String>,

    /// Do not look at this host's GPUs. By default, when the error names processes or a GPU
    /// found here, explain reads that GPU now and names who holds the memory the error
    /// cannot attribute (workers that outlived their job, zombies, other containers)
    #[arg(long)]
    pub offline: bool,

    /// A recording of the host where the error happened (`gpumon record`, or a run's): adds
    /// what the other processes on that GPU did in the minute before the error, read at the
    /// last time stamp in the input (UTC unless it says otherwise) or at --at
    #[arg(long, value_name = "FILE")]
    pub recording: Option<PathBuf>,

    /// With --recording: the time of the error (2026-11-23T03:12:05Z, 2026-11-23 03:12, 03:12,
    /// -10m before the recording's end)
    #[arg(
        long,
        value_name = "TIME",
        requires = "recording",
        allow_hyphen_values = true
    )]
    pub at: Option<String>,

    /// Summarise a PyTorch memory snapshot instead (a pickle from `gpumon run --snapshot`,
    /// torch.cuda.memory._dump_snapshot or an OOM observer): live memory by allocation site,
    /// the cache's free pieces against the failed request, fragmentation or genuinely too much.
    /// With --json: docs/schema/snapshot.schema.json
    #[arg(long, value_name = "PICKLE", conflicts_with_all = ["file", "estimate", "recording"])]
    pub snapshot: Option<PathBuf>,

    #[command(flatten)]
    pub source: SourceArgs,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,

    /// The recording to write (continued when it exists)
    #[arg(long, short, value_name = "FILE", default_value = "gpumon.rec.zst")]
    pub output: PathBuf,

    /// The most the recording may take on disk, rotated files included: 1GiB, 200MiB…
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = parse_max_size)]
    pub max_size: u64,

    /// Rotated files older than this are removed: 7d, 24h…
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_keep)]
    pub keep: Duration,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recording to replay (its rotated files are read too)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Where to start: a time (RFC 3339, `2026-11-23 03:12`, or `03:12` on the recording's
    /// last day, UTC), `-10m` before its end or `+5m` after its start; the start by default
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub at: Option<String>,
}

#[derive(Debug, Args, Default)]
pub struct OnceArgs {
    #[command(flatten)]
    pub source: SourceArgs,

    /// Print the whole sample as JSON (bytes as integers, unknown values as null; schema:
    /// docs/schema/once.schema.json)
    #[arg(long)]
    pub json: bool,

    /// Leave out the process lists
    #[arg(long)]
    pub no_processes: bool,

    /// One row per user, or per owner (pod, Slurm job, container, service), instead of the
    /// GPUs: GPUs used, memory held, %SM (schema: docs/schema/by.schema.json)
    #[arg(long, value_name = "WHO", conflicts_with = "no_processes")]
    pub by: Option<By>,

    /// Print a sample from this recording instead of the GPUs now (see --at)
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,

    /// With --replay: the sample at this time (RFC 3339, `2026-11-23 03:12`, `03:12` on the
    /// recording's last day, UTC; `-10m` before its end, `+5m` after its start); its last
    /// sample by default
    #[arg(
        long,
        value_name = "TIME",
        requires = "replay",
        allow_hyphen_values = true
    )]
    pub at: Option<String>,

    /// Read other nodes' `gpumon serve` instead of the GPUs here: HOST:PORT or
    /// user:password@HOST:PORT, comma-separated; each node within --timeout (default 2s), a
    /// node that cannot be read shown with why
    #[arg(long, value_name = "LIST", value_delimiter = ',', conflicts_with_all = ["replay", "by"])]
    pub remote: Vec<String>,

    /// The nodes to read, one a line: [NAME] HOST:PORT (`#` starts a comment)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["replay", "by"])]
    pub remote_file: Option<PathBuf>,

    /// Read the fleet from a Prometheus that scrapes gpumon serve or dcgm-exporter instead:
    /// http[s]://[user:password@]HOST:PORT[/PREFIX]; a summary per node (schema:
    /// docs/schema/prometheus.schema.json with --json)
    #[arg(long, value_name = "URL", conflicts_with_all = ["replay", "by", "remote", "remote_file"])]
    pub prometheus: Option<String>,

    /// With --prometheus: only the series matching these labels: '{job="gpumon"}'
    #[arg(long, value_name = "SELECTOR", requires = "prometheus")]
    pub selector: Option<String>,

    /// How to reach the nodes: YAML with tls_config (ca_file, server_name) for https:// nodes
    /// and basic_auth (username, password or password_file), as serve's web config file has
    #[arg(long, value_name = "FILE")]
    pub remote_config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PickArgs {
    #[command(flatten)]
    pub source: SourceArgs,

    /// How many GPUs
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub count: u16,

    /// The free memory the job needs on each GPU: 20GiB, 24G, 512MiB (GiB = 2^30)
    #[arg(long, value_name = "SIZE", value_parser = parse_need, conflicts_with = "estimate")]
    pub need: Option<u64>,

    /// The job described with `gpumon estimate`'s flags, in one string: its estimated peak
    /// is the memory needed on each GPU
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub estimate: Option<String>,

    /// Only GPUs (or MIG instances) that run nothing, or only processes at 0% SM
    #[arg(long)]
    pub idle: bool,

    /// GPUs or MIG instances not to use, by index or UUID (comma-separated)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub exclude: Vec<String>,

    /// env: `CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=…`; list: the ids alone;
    /// json: the choice, and why each other GPU was not chosen
    #[arg(long, value_enum, default_value = "env")]
    pub format: PickFormat,

    /// Choose among other nodes' GPUs (their `gpumon serve`, as `once --remote` reads them):
    /// prints NODE:GPU pairs (NODE:MIG-… for an instance), comma-separated
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub remote: Vec<String>,

    /// The nodes to choose among, one a line: [NAME] HOST:PORT
    #[arg(long, value_name = "FILE")]
    pub remote_file: Option<PathBuf>,

    /// How to reach the nodes (as `once --remote-config`)
    #[arg(long, value_name = "FILE")]
    pub remote_config: Option<PathBuf>,
}

/// `pick --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PickFormat {
    Env,
    List,
    Json,
}

/// `run --wait`: how long to wait for room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Forever,
    AtMost(Duration),
}

/// `once --by`: what a row of the rollup stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    User,
    Owner,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,

    /// Output format [default: table on a terminal, csv otherwise]
    #[arg(long, value_enum)]
    pub format: Option<Format>,

    /// Stop after this many samples (at least 1)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,

    /// Append to FILE instead of standard output (header written once, flushed every sample)
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Columns, comma-separated, named as in nvidia-smi --query-gpu where possible:
    /// timestamp, index, uuid, name, pci.bus_id, memory.total, memory.used, memory.free,
    /// memory.reserved, memory.unattributed, memory.peak (the highest used memory since the
    /// previous record, --peak-rate), memory.peak.at_ms (when, Unix ms),
    /// memory.peak.window_ms, utilization.gpu, utilization.memory,
    /// temperature.gpu, power.draw, power.limit, fan.speed, processes.count, error.
    /// MIG (a GPU with MIG on is followed by a record per MIG device): mig.profile,
    /// mig.gpu_instance_id, mig.compute_instance_id, mig.count. Health: xid.last, xid.count
    /// (Xid errors since the log began), ecc.errors.corrected.volatile.total,
    /// ecc.errors.uncorrected.volatile.total, ecc.errors.corrected.aggregate.total,
    /// ecc.errors.uncorrected.aggregate.total, remapped_rows.correctable,
    /// remapped_rows.uncorrectable, remapped_rows.pending, remapped_rows.failure,
    /// clocks_event_reasons.active (NVML's bit mask). Shared memory and limits:
    /// memory.method (nvml, or process_sum where NVML reports no device memory),
    /// memory.gpu_held, memory.headroom, memory.pressure (PSI some avg10), cgroup.name,
    /// cgroup.limit, cgroup.used (this container's GPU memory limit).
    /// With --processes: timestamp, gpu_index, gpu_instance_id, compute_instance_id, gpu_uuid,
    /// gpu_bus_id, pid, type, process_name,
    /// user, used_memory, cpu_percent, host_memory, start_time, command, container,
    /// owner.kind, owner.name, owner.namespace, owner.container, owner.job, sm_percent,
    /// mem_bw_percent, process.allocated, process.reserved, process.cached,
    /// process.non_framework, process.allocated_peak, process.reserved_peak (the process.*
    /// fields need `gpumon run`), peak_memory (the driver's peak of the process: NVML
    /// accounting mode, `nvidia-smi -am 1`)
    #[arg(long, value_name = "LIST")]
    pub fields: Option<String>,

    /// One record per GPU process instead of per GPU
    #[arg(long)]
    pub processes: bool,

    /// Write the records of a recording instead of sampling (as fast as they can be written;
    /// --count stops early)
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// `--layers` without N lists a trace's layers; for the formula it needs N, and the
    /// one-line flags (explain, pick, run) leave tracing to `estimate` itself.
    #[test]
    fn layers_without_n_and_traces_in_one_line_are_said() {
        assert!(estimate_line("--params 7B --layers 32 --hidden 4096 --heads 32").is_ok());
        let e = estimate_line("--params 7B --layers").expect_err("no N");
        assert!(e.contains("--layers needs N"), "{e}");
        let e = estimate_line("--torch m.py:f --input 4x8").expect_err("a trace");
        assert!(e.contains("use `gpumon estimate` itself"), "{e}");
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(
            parse_listen(":9400"),
            Ok(std::net::SocketAddr::from(([0, 0, 0, 0], 9400)))
        );
        assert_eq!(
            parse_listen("127.0.0.1:9"),
            Ok(std::net::SocketAddr::from(([127, 0, 0, 1], 9)))
        );
        assert!(parse_listen("[::]:9400").is_ok());
        assert!(parse_listen("localhost").is_err());
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_interval("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_interval("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_interval("5ms").is_err());
        assert!(parse_interval("-1").is_err());
        assert!(parse_interval("NaN").is_err());
        assert!(parse_interval("soon").is_err());
        assert_eq!(parse_timeout("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_peak_rate("50"), Ok(50.0));
        assert_eq!(parse_peak_rate("0"), Ok(0.0));
        assert!(parse_peak_rate("-1").is_err());
        assert!(parse_peak_rate("NaN").is_err());
        assert!(parse_peak_rate("inf").is_err());
        assert!(parse_peak_rate("5000").is_err());
        assert!(parse_peak_rate("fast").is_err());
        assert!(parse_timeout("2h").is_err());
    }

    #[test]
    fn log_help_names_every_field() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("log")
            .expect("log")
            .render_long_help()
            .to_string();
        let words: Vec<&str> = help
            .split_whitespace()
            .map(|w| w.trim_end_matches([',', '.', ')']))
            .collect();
        for processes in [false, true] {
            for name in crate::view::log::field_names(processes) {
                assert!(words.contains(&name), "--fields help lacks {name}");
            }
        }
    }

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn subcommand_flags_are_built_only_for_the_subcommand_parsed() {
        let cmd = Cli::command();
        let estimate = cmd.find_subcommand("estimate").expect("estimate");
        assert!(
            estimate.get_arguments().all(|a| a.get_id() != "model"),
            "estimate's flags were built before estimate was parsed"
        );
        let mut built = Cli::command();
        built.build();
        let estimate = built.find_subcommand("estimate").expect("estimate");
        assert!(estimate.get_arguments().any(|a| a.get_id() == "model"));
        let parsed = Cli::try_parse_from(["gpumon", "estimate", "--params", "7B", "--gpu", "0"])
            .expect("estimate parses");
        match &parsed.command {
            Some(Command::Estimate(Deferred(args))) => {
                assert!(args.run.params.is_some());
                assert_eq!(parsed.common(Some(&args.source), None).gpu, ["0"]);
            }
            other => panic!("parsed as {other:?}"),
        }
        let bad = Cli::try_parse_from(["gpumon", "once", "--model", "x"]).expect_err("not once's");
        assert_eq!(bad.kind(), clap::error::ErrorKind::UnknownArgument);
    }

    /// Each command's help lists the flags it uses: man and completions read no GPU; once,
    /// estimate and explain (which reads this host's GPUs for the holders of memory an error
    /// cannot attribute) sample nothing on an interval, and --history is the dashboard's. Flags given before a command still apply, the command's own first.
    #[test]
    fn each_command_takes_and_lists_only_its_own_flags() {
        let mut cmd = Cli::command();
        cmd.build();
        let flags = |name: &str| -> Vec<String> {
            cmd.find_subcommand(name)
                .expect("command")
                .get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned))
                .collect()
        };
        for name in ["man", "completions"] {
            let f = flags(name);
            for g in ["demo", "interval", "history", "timeout", "gpu", "nvml-lib"] {
                assert!(!f.iter().any(|x| x == g), "{name} lists --{g}");
            }
        }
        for name in ["once", "estimate", "explain"] {
            let f = flags(name);
            assert!(
                f.iter().any(|x| x == "demo") && !f.iter().any(|x| x == "interval"),
                "{name}: {f:?}"
            );
        }
        for name in ["log", "run", "serve"] {
            let f = flags(name);
            assert!(
                f.iter().any(|x| x == "interval") && !f.iter().any(|x| x == "history"),
                "{name}: {f:?}"
            );
        }
        assert!(Cli::try_parse_from(["gpumon", "man", "--demo"]).is_err());
        // `--demo-machine` implies the demo, before or after the command; `--demo` alone is
        // the training run; an unknown machine names the known ones.
        use crate::collect::source::simulated::DemoMachine;
        let spark = Cli::try_parse_from(["gpumon", "--demo-machine", "spark", "once"])
            .expect("--demo-machine");
        let c = spark.common(None, None);
        assert!(c.demo);
        assert_eq!(c.demo_machine, DemoMachine::Spark);
        let Some(Command::Once(Deferred(args))) =
            &Cli::try_parse_from(["gpumon", "once", "--demo-machine", "GH200"])
                .expect("after the command")
                .command
        else {
            panic!("once")
        };
        let c = Cli::try_parse_from(["gpumon"])
            .expect("bare")
            .common(Some(&args.source), None);
        assert_eq!((c.demo, c.demo_machine), (true, DemoMachine::Gh200));
        let plain = Cli::try_parse_from(["gpumon", "--demo"]).expect("--demo");
        assert_eq!(plain.common(None, None).demo_machine, DemoMachine::Training);
        let e = Cli::try_parse_from(["gpumon", "--demo-machine", "nope"]).expect_err("unknown");
        assert!(e.to_string().contains("training, spark, gh200"), "{e}");
        assert!(
            Cli::try_parse_from(["gpumon", "--demo-machine", "spark", "--scenario", "x"]).is_err()
        );
        let before =
            Cli::try_parse_from(["gpumon", "--demo", "--gpu", "1", "log", "--interval", "2s"])
                .expect("flags before the command");
        let Some(Command::Log(Deferred(args))) = &before.command else {
            panic!("log")
        };
        let c = before.common(Some(&args.source), Some(&args.sampling));
        assert!(c.demo);
        assert_eq!(c.gpu, ["1"]);
        assert_eq!(c.interval, Duration::from_secs(2));
        let own =
            Cli::try_parse_from(["gpumon", "--gpu", "1", "once", "--gpu", "0"]).expect("both");
        let Some(Command::Once(Deferred(args))) = &own.command else {
            panic!("once")
        };
        assert_eq!(
            own.common(Some(&args.source), None).gpu,
            ["0"],
            "the command's own wins"
        );
    }
}
