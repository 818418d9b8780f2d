//! Runs `estimate --torch`'s helper in the user's own interpreter, within a deadline, and
//! brings back its answer bounded in size (what it means is `estimate::trace`'s business).
//!
//! What to trace comes in as an [`Ask`], values and no command line: the command line's
//! `estimate` flags make one (`cli::EstimateArgs::trace_ask`), for `estimate --torch` and for
//! the dashboard's estimate panel alike.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::estimate::memory::{Dtype, Optimizer, Run};
use crate::estimate::trace::{self, Fit, Request, TraceError, Traced, HELPER, MAX_ANSWER};
use crate::text::escape;

/// Stderr kept from the helper (its tail), for a cause when it dies without an answer.
const MAX_STDERR: usize = 16 << 10;

/// What a trace is asked: the model, the batch and the run, and the interpreter that runs it.
#[derive(Debug, Clone)]
pub struct Ask {
    /// `--torch SPEC`: a module and the callable that builds the model.
    pub torch: Option<String>,
    /// `--model config.json`: a Hugging Face config, traced with `--trace`.
    pub model: Option<PathBuf>,
    /// `--input SHAPES`, as typed (each may name several tensors).
    pub input: Vec<String>,
    /// `--input-fn file.py:callable`: the batch built by the user's own code.
    pub input_fn: Option<String>,
    pub batch: u64,
    pub seq_len: u64,
    /// The weights' dtype; `None` leaves the model's own.
    pub dtype: Option<Dtype>,
    pub mixed_precision: bool,
    pub optimizer: Optimizer,
    pub inference: bool,
    /// `--checkpointing` and `--lora-rank`, for a `--model --trace` config (a `--torch`
    /// model is traced as its own code runs).
    pub checkpointing: crate::estimate::memory::Checkpointing,
    pub lora_rank: Option<u64>,
    /// The interpreter the helper runs in, and how long it may take.
    pub python: PathBuf,
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum TracerError {
    #[error("no Python at '{python}' (--python): {source}")]
    NoPython {
        python: String,
        source: std::io::Error,
    },
    #[error("the tracer ran past --trace-timeout ({secs} s) and was stopped; a larger model needs a longer one")]
    Timeout { secs: u64 },
    #[error("the tracer ({python}) ended without an answer ({status}){tail}")]
    NoAnswer {
        python: String,
        status: String,
        tail: String,
    },
    #[error("cannot run the tracer: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads at most `limit` bytes of `r` (the rest is drained and dropped, so the child never
/// blocks on a full pipe); with `keep_tail`, the last `limit` bytes instead.
fn read_bounded(mut r: impl Read, limit: usize, keep_tail: bool) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    let mut over = false;
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > limit {
                    over = true;
                    if keep_tail {
                        let cut = out.len() - limit;
                        out.drain(..cut);
                    } else {
                        out.truncate(limit + 1);
                    }
                }
            }
        }
    }
    (out, over)
}

/// Runs the helper with `request`; its answer (stdout) or why there is none.
pub fn run(python: &Path, request: &Request, timeout: Duration) -> Result<Vec<u8>, TracerError> {
    let req = serde_json::to_string(request).map_err(std::io::Error::other)?;
    let shown = python.display().to_string();
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new(python)
            .arg("-c")
            .arg(HELPER)
            .arg(req)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a deadline stops whatever the model started too.
            .process_group(0)
            .spawn()
            .map_err(|source| TracerError::NoPython {
                python: shown.clone(),
                source,
            })?
    };
    let out = child.stdout.take();
    let err = child.stderr.take();
    let out = std::thread::spawn(move || out.map(|o| read_bounded(o, MAX_ANSWER, false)));
    let err = std::thread::spawn(move || err.map(|e| read_bounded(e, MAX_STDERR, true)));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() >= timeout {
            let pid = child.id() as i32;
            // SAFETY: signals the process group we made for the child.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            return Err(TracerError::Timeout {
                secs: timeout.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (answer, over) = out.join().ok().flatten().unwrap_or_default();
    let (stderr, _) = err.join().ok().flatten().unwrap_or_default();
    // Too long is the reader's to refuse (it says how long); empty is no answer at all.
    if !over && answer.iter().all(u8::is_ascii_whitespace) {
        let text = String::from_utf8_lossy(&stderr);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", crate::text::escape(l.trim())))
            .unwrap_or_default();
        return Err(TracerError::NoAnswer {
            python: shown,
            status: status.to_string(),
            tail: last,
        });
    }
    Ok(answer)
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

/// What the flags ask of a trace, checked before anything runs: the request, and the spec
/// as the report names it.
pub fn check(args: &Ask) -> Result<(Request, String), String> {
    let mut shapes = Vec::new();
    for s in &args.input {
        shapes.append(&mut trace::parse_inputs(s).map_err(|e| format!("--input {e}"))?);
    }
    if args.torch.is_some() && shapes.is_empty() && args.input_fn.is_none() {
        return Err(
            "--torch needs the batch: --input SHAPES (32x3x224x224, 8x512:int64) or \
                    --input-fn file.py:callable"
                .into(),
        );
    }
    if args.optimizer == Optimizer::Adamw8bit && !args.inference {
        return Err(
            "--optimizer adamw-8bit cannot be traced (bitsandbytes' kernels need a GPU): trace \
             adamw, and the plan gives 8-bit AdamW's saving by formula"
                .into(),
        );
    }
    let dtype = args.dtype.map(torch_dtype).transpose()?;
    let spec = match (&args.torch, &args.model) {
        (Some(s), _) => s.clone(),
        (None, Some(m)) => m.display().to_string(),
        (None, None) => return Err("--trace needs --model config.json".into()),
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
        checkpointing: (args.torch.is_none()
            && args.checkpointing == crate::estimate::memory::Checkpointing::Full)
            .then(|| "full".to_owned()),
        lora_rank: args.lora_rank.filter(|_| args.torch.is_none()),
        remedies: true,
        target_bytes: None,
    };
    Ok((request, spec))
}

/// Traces the run the flags describe; `best_free` (the most free memory on a GPU here)
/// decides whether the remedies are re-traced and what the fewest must fit.
pub fn trace(args: &Ask, best_free: Option<u64>) -> Result<(Traced, Option<Fit>, Run), String> {
    let (mut request, spec) = check(args)?;
    request.target_bytes = best_free.map(trace::target_for);
    let answer = run(&args.python, &request, args.timeout).map_err(|e| e.to_string())?;
    let (traced, fewest) = trace::parse(&answer, &spec).map_err(|e| match e {
        TraceError::Refused { message, .. } => escape(&message).into_owned(),
        e => e.to_string(),
    })?;
    let batch = request
        .inputs
        .first()
        .and_then(|s| s.shape.first().copied())
        .unwrap_or(args.batch);
    let mut run = trace::run_for(
        batch,
        args.dtype.unwrap_or(Dtype::Fp32),
        args.mixed_precision && !args.inference,
        args.optimizer,
        args.inference,
    );
    if request.hf_config.is_some() {
        run.seq_len = args.seq_len;
        run.lora_rank = request.lora_rank;
        if request.checkpointing.is_some() {
            run.checkpointing = crate::estimate::memory::Checkpointing::Full;
        }
    }
    Ok((traced, fewest, run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_is_bounded_at_the_head_or_the_tail() {
        let data = vec![b'a'; 100_000];
        let (head, over) = read_bounded(&data[..], 1000, false);
        assert!(over && head.len() == 1001);
        let mut tailed = vec![b'a'; 100_000];
        tailed.extend_from_slice(b"END");
        let (tail, over) = read_bounded(&tailed[..], 10, true);
        assert!(over);
        assert!(tail.ends_with(b"END") && tail.len() == 10);
    }
}
