//! The flags resolved: a command's own flags over the global ones ([`Common`]), and what
//! collection and the estimate take of them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::estimate::memory::{Dtype, Run, Shape};

use super::{By, Cli, Common, EstimateArgs, SamplingArgs, SourceArgs};

impl Cli {
    /// The flags for the command parsed: its own `source` and `sampling` flags (when it has
    /// them) over those given before it.
    pub fn common(&self, source: Option<&SourceArgs>, sampling: Option<&SamplingArgs>) -> Common {
        let top = &self.source;
        let own = source.cloned().unwrap_or_default();
        Common {
            demo: top.demo || own.demo || own.demo_machine.is_some() || top.demo_machine.is_some(),
            demo_machine: own.demo_machine.or(top.demo_machine).unwrap_or_default(),
            scenario: own.scenario.or_else(|| top.scenario.clone()),
            nvml_lib: own.nvml_lib.or_else(|| top.nvml_lib.clone()),
            interval: sampling
                .and_then(|s| s.interval)
                .or(self.sampling.interval)
                .unwrap_or(Duration::from_secs(1)),
            interval_given: sampling.and_then(|s| s.interval).or(self.sampling.interval),
            peak_rate: sampling
                .and_then(|s| s.peak_rate)
                .or(self.sampling.peak_rate)
                .unwrap_or(crate::collect::sampler::DEFAULT_PEAK_RATE),
            history: self.history,
            idle_after: self.idle_after,
            record: self.record.clone(),
            timeout: own.timeout.or(top.timeout),
            gpu: if own.gpu.is_empty() {
                top.gpu.clone()
            } else {
                own.gpu
            },
            kubelet_socket: own.kubelet_socket.or_else(|| top.kubelet_socket.clone()),
        }
    }
}

impl Common {
    /// What collection needs of the global flags.
    pub fn collect(&self) -> crate::collect::Config {
        crate::collect::Config {
            demo: self.demo,
            demo_machine: self.demo_machine,
            scenario: self.scenario.clone(),
            // Empty is unset (dlopen("") would load gpumon itself).
            nvml_lib: self.nvml_lib.clone().filter(|l| !l.trim().is_empty()),
            gpus: self.gpu.clone(),
            timeout: self.timeout,
            interval: self.interval,
            peak_rate: self.peak_rate,
            kubelet_socket: self
                .kubelet_socket
                .clone()
                .unwrap_or_else(|| PathBuf::from(crate::collect::kubelet::DEFAULT_SOCKET)),
        }
    }
}

impl EstimateArgs {
    /// `--layers` without N only means something for a trace's table.
    pub fn check_layers(&self) -> Result<(), String> {
        if self.layers == Some(None) && self.torch.is_none() && !self.trace {
            return Err(
                "--layers needs N (the transformer's layers); without N it shows every row of \
                 a trace's layer table (--torch)"
                    .into(),
            );
        }
        Ok(())
    }

    /// The flags as the tracer takes them (`--torch`, `--trace`).
    pub fn trace_ask(&self) -> crate::tracer::Ask {
        crate::tracer::Ask {
            torch: self.torch.clone(),
            model: self.model.clone(),
            input: self.input.clone(),
            input_fn: self.input_fn.clone(),
            batch: self.batch,
            seq_len: self.seq_len,
            dtype: self.dtype,
            mixed_precision: self.mixed_precision,
            optimizer: self.optimizer,
            inference: self.inference,
            checkpointing: self.checkpointing,
            lora_rank: self.lora_rank,
            python: self.python.clone(),
            timeout: self.trace_timeout,
        }
    }

    /// The flags as the estimate's model takes them.
    pub fn flags(&self) -> crate::estimate::Flags {
        crate::estimate::Flags {
            model: self.model.clone(),
            params: self.params,
            layers: self.layers.flatten(),
            hidden: self.hidden,
            heads: self.heads,
            kv_heads: self.kv_heads,
            vocab: self.vocab,
            intermediate: self.intermediate,
            gated_mlp: self.gated_mlp,
            batch: self.batch,
            seq_len: self.seq_len,
            dtype: self.dtype.unwrap_or(Dtype::Bf16),
            mixed_precision: self.mixed_precision,
            optimizer: self.optimizer,
            checkpointing: self.checkpointing,
            attention: self.attention,
            grad_accum: self.grad_accum,
            inference: self.inference,
            lora_rank: self.lora_rank,
            loss: self.loss,
            quant: self.quant,
            group_size: self.group_size,
            kernels: self.kernels,
        }
    }
}

/// The dashboard's estimate panel: `estimate`'s flags in one line, `--torch` and `--trace`
/// included (those run the tracer, for seconds: call it off the UI thread).
pub fn panel_estimate(line: &str) -> Result<crate::estimate::Estimated, String> {
    #[derive(Parser)]
    #[command(name = "estimate", no_binary_name = true)]
    struct Line {
        #[command(flatten)]
        args: EstimateArgs,
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    if !words
        .iter()
        .any(|w| *w == "--trace" || *w == "--torch" || w.starts_with("--torch="))
    {
        return estimate_line(line).map(|f| crate::estimate::Estimated::Formula(Box::new(f)));
    }
    let parsed = Line::try_parse_from(words).map_err(|e| first_error_line(&e))?;
    crate::tracer::trace(&parsed.args.trace_ask(), None)
        .map(|t| crate::estimate::Estimated::Traced(Box::new(t)))
}

/// What clap says is wrong with a line of flags: its first line, without `error: ` (the rest
/// is usage), for the places that show it in one line (the dashboard's `e` panel).
fn first_error_line(e: &clap::Error) -> String {
    e.to_string()
        .lines()
        .next()
        .unwrap_or("invalid flags")
        .trim_start_matches("error: ")
        .to_owned()
}

/// `gpumon estimate`'s flags in one line (`explain --estimate`, the dashboard's estimate
/// panel), split at whitespace: the model and the run they describe.
pub fn estimate_line(line: &str) -> Result<(Shape, Option<u64>, Run), String> {
    #[derive(Parser)]
    #[command(name = "estimate", no_binary_name = true)]
    struct Line {
        #[command(flatten)]
        args: EstimateArgs,
    }
    let parsed = Line::try_parse_from(line.split_whitespace()).map_err(|e| first_error_line(&e))?;
    if parsed.args.torch.is_some() || parsed.args.trace {
        return Err(
            "--torch and --trace run a trace: use `gpumon estimate` itself for those".into(),
        );
    }
    parsed.args.check_layers()?;
    crate::estimate::inputs(&parsed.args.flags())
}

impl By {
    pub fn group(self) -> crate::model::rollup::GroupBy {
        match self {
            By::User => crate::model::rollup::GroupBy::User,
            By::Owner => crate::model::rollup::GroupBy::Owner,
        }
    }
}
