//! The `explain` report, as text for a terminal and as stable JSON.

use std::fmt::Write as _;

use serde::Serialize;

use super::diagnose::Finding;
use super::{Analysis, Oom};
use crate::model::breakdown::{Breakdown, PartKind};
use crate::text::Paint;
use crate::units::fmt_bytes;

/// JSON schema version of `gpumon explain --json`.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct ExplainJson<'a> {
    pub schema_version: u32,
    pub found: bool,
    pub count: usize,
    /// How many times the explained failure appears at the end of the input (1 when once).
    pub repeats: usize,
    pub framework: Option<super::Framework>,
    pub format: Option<&'static str>,
    pub device_index: Option<u32>,
    /// What the message says and implies (`Facts`: bytes, `null` when unknown).
    pub breakdown: Option<&'a super::Facts>,
    /// The same split as the dashboard's gauge (parts add up to the total).
    pub parts: Option<Breakdown>,
    pub findings: Vec<Finding>,
    pub hint: Option<&'a str>,
    pub line: Option<&'a str>,
    /// Which memory ran out: "device" (the GPU's), "shared_memory" or "host".
    pub memory: Option<super::MemoryKind>,
    /// For memory that is not the GPU's, its limit as the message gives it.
    pub memory_limit_bytes: Option<u64>,
    /// A limit on a count of buffers, not bytes (MLX's Metal resource limit).
    pub buffer_limit: Option<u64>,
    /// Parts of the full message the paste lacks (their figures are unknown).
    pub missing: &'a [&'static str],
    /// TensorFlow's warnings that an allocation did not fit but is "not a failure".
    pub not_failures: u64,
    /// TensorRT's builder warnings that it skipped a tactic for want of scratch memory.
    pub skipped_tactics: u64,
    /// ROCm's warnings that a dispatch's scratch did not fit and it ran at a lower occupancy.
    pub reduced_scratch: u64,
}

pub fn to_json(a: &Analysis) -> ExplainJson<'_> {
    to_json_with(a, None)
}

/// [`to_json`], with remedies sized by the described run's model.
pub fn to_json_with<'a>(
    a: &'a Analysis,
    sizing: Option<&super::diagnose::Sizing>,
) -> ExplainJson<'a> {
    let main = a.main();
    ExplainJson {
        schema_version: SCHEMA_VERSION,
        found: main.is_some(),
        count: a.total as usize,
        repeats: a.repeats(),
        framework: main.map(|o| o.framework),
        format: main.map(|o| o.format),
        device_index: main.and_then(|o| o.device_index),
        breakdown: main.map(|o| &o.facts),
        parts: main.and_then(|o| o.facts.breakdown()),
        findings: main
            .map(|o| super::diagnose::diagnose_with(o, sizing))
            .unwrap_or_default(),
        hint: main.and_then(|o| o.hint.as_deref()),
        line: main.map(|o| o.line.as_str()),
        memory: main.map(|o| o.memory),
        memory_limit_bytes: main.and_then(|o| o.memory_limit_bytes),
        buffer_limit: main.and_then(|o| o.buffer_limit),
        missing: main.map_or(&[][..], |o| o.missing.as_slice()),
        not_failures: a.not_failures,
        skipped_tactics: a.skipped_tactics,
        reduced_scratch: a.reduced_scratch,
    }
}

/// TensorFlow's "not a failure" warnings, said as what they are: `bfc_allocator.cc` adds the
/// sentence when the caller allocated with `retry_on_failure = false`, as the cuDNN/cuBLAS
/// scratch allocators do (`GpuScratchAllocator::AllocateBytes`, XLA's
/// `ScratchAllocator::AllocateBytes`), which then pick an algorithm that needs less.
fn not_failures(n: u64) -> String {
    format!(
        "TensorFlow's allocator warned {n} time{} that an allocation did not fit, each time saying \"the caller indicates that this is not a failure\": the caller (typically a convolution's scratch space while cuDNN picks an algorithm) went on with one that needs less memory. The job did not fail there; more free GPU memory may only make it faster.",
        if n == 1 { "" } else { "s" }
    )
}

/// TensorRT's skipped tactics, said as what they are (`clean::is_skipped_tactic`).
fn skipped_tactics(n: u64) -> String {
    format!(
        "TensorRT's builder warned {n} time{} that it skipped a tactic (one way to run a layer) whose scratch memory did not fit in the GPU's free memory or the workspace limit, and went on with the others: warnings, not the build's failure. A skipped fast tactic may leave the engine slower. Only where no tactic of a layer fits does the build fail, with an error of its own (\"Could not find any implementation for node …\"); then free GPU memory or raise the workspace limit (IBuilderConfig::setMemoryPoolLimit, trtexec --memPoolSize=workspace:…).",
        if n == 1 { "" } else { "s" }
    )
}

/// ROCm's lowered occupancy, said as what it is (`clean::is_reduced_scratch`).
fn reduced_scratch(n: u64) -> String {
    format!(
        "ROCm's runtime warned {n} time{} that it could not map the scratch memory a kernel's dispatch asked for (each lane's private memory: register spills, stack, local arrays), and ran it with fewer waves at once: a lower occupancy, so slower, not a failure. Only where not even the fewest waves' scratch can be mapped does the dispatch fail. The scratch comes from the GPU's memory: less of it held by this and other processes, or a kernel that needs less private memory, gives back the occupancy.",
        if n == 1 { "" } else { "s" }
    )
}

/// What `explain` looked for, for the "nothing found" message.
pub const LOOKED_FOR: &str = "PyTorch (CUDA, ROCm/HIP, XPU, MPS; 1.0 to 2.x formats and the \
cudaMallocAsync backend) and its allocator's forks (Ascend NPU, Cambricon MLU, Moore Threads \
MUSA, Enflame GCU, Gaudi HPU), TensorFlow (OOM when allocating, BFC allocator and its Stats, \
eager ResourceExhaustedError), JAX/XLA (RESOURCE_EXHAUSTED; TPU compile-time and runtime HBM, \
also through PyTorch/XLA), MLX (metal::malloc), CUDA and ROCm stream executors, raw CUDA \
(cudaErrorMemoryAllocation, CUBLAS/CUDNN_STATUS_ALLOC_FAILED, THCudaCheck), ONNX Runtime, \
llama.cpp/ggml (CUDA, Vulkan, SYCL, Metal), vLLM (KV cache and the start-up guard), CuPy, \
PaddlePaddle, TensorRT and TensorRT-LLM out-of-memory messages";

const BAR_WIDTH: usize = 60;

fn glyph(kind: &PartKind) -> (char, &'static str) {
    match kind {
        PartKind::Allocated => ('█', "31"),
        PartKind::Cached | PartKind::Reserved => ('▓', "33"),
        PartKind::NonFramework | PartKind::ThisProcess => ('▒', "35"),
        PartKind::Process { .. }
        | PartKind::OtherApps
        | PartKind::Unattributed
        | PartKind::Used => ('░', "36"),
        PartKind::DriverReserved => ('▪', "2"),
        PartKind::Free => ('·', "32"),
        PartKind::Unaccounted => (' ', "0"),
    }
}

/// The stacked bar with the request marked under the free segment. `label` (padded to a
/// fixed width) goes before it when two bars are compared.
fn bar(
    b: &Breakdown,
    request: Option<u64>,
    free: Option<u64>,
    paint: Paint,
    bar_width: usize,
    label: &str,
    line_width: Option<usize>,
) -> String {
    let scale =
        |bytes: u64| ((bytes as f64 / b.total.max(1) as f64) * bar_width as f64).round() as usize;
    let mut line = String::new();
    let mut col = 0usize;
    let mut free_at = None;
    for p in &b.parts {
        let Some(bytes) = p.bytes else { continue };
        let (ch, code) = glyph(&p.kind);
        if p.kind == PartKind::Free {
            free_at = Some(col);
        }
        let n = scale(bytes).min(bar_width.saturating_sub(col));
        if n > 0 {
            line.push_str(&paint.wrap(code, &ch.to_string().repeat(n)));
        }
        col += n;
    }
    if col < bar_width {
        line.push_str(&" ".repeat(bar_width - col));
    }
    let mut out = format!("  {label}│{line}│\n");
    if let (Some(req), Some(at)) = (request, free_at) {
        let len = scale(req).max(1).min(bar_width + 1 - at.min(bar_width));
        let fits = free.is_some_and(|f| req <= f);
        let text = format!(
            "request {}{}",
            fmt_bytes(req),
            if fits { "" } else { " (does not fit)" }
        );
        let start = at + 3 + label.chars().count();
        let bracket = format!("└{}┘", "─".repeat(len.saturating_sub(1)));
        // The text after the bracket when the line stays within the bar's, else before it.
        let right_edge = line_width.unwrap_or(usize::MAX);
        let after = start + bracket.chars().count() + 1 + text.chars().count();
        let marker = if after <= right_edge {
            format!("{}{bracket} {text}", " ".repeat(start))
        } else if start > text.chars().count() {
            format!(
                "{}{text} {bracket}",
                " ".repeat(start - text.chars().count() - 1)
            )
        } else {
            format!("{}{bracket}\n  {text}", " ".repeat(start))
        };
        out.push_str(&if fits { marker } else { paint.red(&marker) });
        out.push('\n');
    }
    out
}

/// Width of the figures' label column: 38, or less to fit a narrow report.
fn label_width(w: Option<usize>) -> usize {
    w.map_or(38, |w| w.saturating_sub(2 + 1 + 12 + 11).clamp(12, 38))
}

fn row_w(out: &mut String, label: &str, v: Option<u64>, derived: bool, lw: usize) {
    if let Some(v) = v {
        // A label longer than its column gets a line of its own.
        let label = if label.chars().count() > lw {
            let _ = writeln!(out, "  {label}");
            ""
        } else {
            label
        };
        let _ = writeln!(
            out,
            "  {label:<lw$} {:>12}{}",
            fmt_bytes(v),
            if derived { "  (derived)" } else { "" }
        );
    }
}

fn legend_label(k: &PartKind) -> String {
    k.label()
}

/// How a report is laid out where it is shown.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Wrap to this many columns, with hanging indents; `None`: one line per item.
    pub width: Option<usize>,
    /// Leave out the quoted error line (the dashboard's panel shows the paste beside it).
    pub no_quote: bool,
    /// The GPU's live breakdown to draw under the message's, with its label.
    pub live: Option<(String, Breakdown)>,
    /// Findings before the table of figures, so the first is in view on a small screen.
    pub findings_first: bool,
    /// The run the user described, to size the remedies with the estimate's model.
    pub sizing: Option<super::diagnose::Sizing>,
}

/// Writes `text` wrapped to the layout's width: the first line after `first`, the others
/// after `rest` (a hanging indent).
fn para(out: &mut String, width: Option<usize>, first: &str, rest: &str, text: &str) {
    match width {
        Some(w) if w > first.chars().count().max(rest.chars().count()) + 10 => {
            let opts = textwrap::Options::new(w)
                .initial_indent(first)
                .subsequent_indent(rest)
                .break_words(true);
            for line in textwrap::wrap(text, opts) {
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        _ => {
            let _ = writeln!(out, "{first}{text}");
        }
    }
}

/// The terminal report for the main OOM.
pub fn render(a: &Analysis, paint: Paint) -> String {
    render_with(a, paint, &Layout::default())
}

/// [`render`] laid out for a place: see [`Layout`].
pub fn render_with(a: &Analysis, paint: Paint, layout: &Layout) -> String {
    let Some(oom) = a.main() else {
        let mut out = format!("No out-of-memory error found in {} lines.\n", a.lines);
        if a.not_failures > 0 {
            para(
                &mut out,
                layout.width,
                "",
                "  ",
                &not_failures(a.not_failures),
            );
        }
        if a.skipped_tactics > 0 {
            para(
                &mut out,
                layout.width,
                "",
                "  ",
                &skipped_tactics(a.skipped_tactics),
            );
        }
        if a.reduced_scratch > 0 {
            para(
                &mut out,
                layout.width,
                "",
                "  ",
                &reduced_scratch(a.reduced_scratch),
            );
        }
        para(
            &mut out,
            layout.width,
            "",
            "  ",
            &format!("Looked for: {LOOKED_FOR}."),
        );
        return out;
    };
    let mut out = String::new();
    render_oom_repeated(&mut out, oom, a.total as usize, a.repeats(), paint, layout);
    // TensorRT logs a tactic's failed allocation as an error, then skips the tactic.
    if a.skipped_tactics > 0 && oom.framework == super::Framework::Tensorrt {
        para(
            &mut out,
            layout.width,
            "",
            "  ",
            &format!(
                "Note: TensorRT's builder then skipped {} tactic{} for want of memory and went on with the others. The allocation error above may be that tactic's, not the build's failure: unless the build stopped with an error of its own, the engine was built, perhaps slower.",
                a.skipped_tactics,
                if a.skipped_tactics == 1 { "" } else { "s" }
            ),
        );
    }
    out
}

pub fn render_oom(out: &mut String, oom: &Oom, count: usize, paint: Paint) {
    render_oom_with(out, oom, count, paint, &Layout::default());
}

pub fn render_oom_with(out: &mut String, oom: &Oom, count: usize, paint: Paint, layout: &Layout) {
    render_oom_repeated(out, oom, count, 1, paint, layout);
}

/// [`render_oom_with`] for an OOM that is the last failure's most telling of `repeats`
/// repetitions ([`Analysis::repeats`]).
pub fn render_oom_repeated(
    out: &mut String,
    oom: &Oom,
    count: usize,
    repeats: usize,
    paint: Paint,
    layout: &Layout,
) {
    let f = &oom.facts;
    let w = layout.width;
    let word = match super::families::fork(oom.framework) {
        Some(fork) => fork.word,
        None if oom.format.starts_with("xla-tpu") || oom.format == "sophgo-bmlib" => "TPU",
        None => "GPU",
    };
    let device = oom
        .device_index
        .map(|d| format!(" on {word} {d}"))
        .unwrap_or_default();
    // A program read by its own words and no one API (hashcat's own check, COLMAP, Adreno):
    // named, rather than "an unrecognised program".
    let who = match super::api::program_of(oom) {
        Some(p) if oom.framework == super::Framework::Unknown => p.name,
        _ if oom.format == "dxvk" => "DXVK (Vulkan)",
        _ => oom.framework.name(),
    };
    let title = match oom.memory {
        super::MemoryKind::Device => format!("{who} out of memory{device}"),
        super::MemoryKind::SharedMemory if oom.format == "neuron-nki-sbuf" => {
            format!("{who}: out of a NeuronCore's on-chip state buffer")
        }
        super::MemoryKind::SharedMemory => {
            format!("{who}: out of on-chip shared memory")
        }
        super::MemoryKind::Host => format!("{who}: out of host memory"),
        super::MemoryKind::PinnedHost => {
            format!("{who}: out of pinned host memory")
        }
        super::MemoryKind::Buffers => {
            format!("{who}: out of Metal buffers")
        }
        super::MemoryKind::TpuOnChip => {
            format!(
                "{}: out of a TPU core's on-chip memory",
                oom.framework.name()
            )
        }
        super::MemoryKind::PlannedRegion => {
            format!("{who}: a planned storage region overflowed")
        }
    };
    let _ = writeln!(out, "{}", paint.bold(&title));
    // Past the cap the count is still true; only the last MAX_KEPT messages were read.
    let cap = if repeats > super::MAX_KEPT {
        format!(" (the last {} read)", super::MAX_KEPT)
    } else {
        String::new()
    };
    match (count, repeats) {
        (0 | 1, _) => {}
        (c, r) if r >= c => {
            let _ = writeln!(
                out,
                "{}",
                paint.dim(&format!(
                    "One failure, logged {c} times{cap}; explained from the message that says \
                     the most."
                ))
            );
        }
        (c, r) if r > 1 => {
            let _ = writeln!(
                out,
                "{}",
                paint.dim(&format!(
                    "{c} OOM errors in the input; the last failure, logged {r} times{cap}, is \
                     explained from the message that says the most."
                ))
            );
        }
        (c, _) => {
            let _ = writeln!(
                out,
                "{}",
                paint.dim(&format!(
                    "{c} OOM errors in the input; this is the last one."
                ))
            );
        }
    }
    if !oom.line.is_empty() && !layout.no_quote {
        let mut quoted = String::new();
        // A pasted line is text nobody vetted: the one escaping rule.
        para(&mut quoted, w, "  ", "  ", &crate::text::escape(&oom.line));
        out.push_str(&paint.dim(quoted.trim_end()));
        out.push('\n');
    }
    match oom.memory {
        super::MemoryKind::Device => {}
        super::MemoryKind::SharedMemory => {
            let what = if oom.format == "neuron-nki-sbuf" {
                "Not device memory: a partition of a NeuronCore's on-chip state buffer (SBUF)."
            } else {
                "Not GPU memory: a kernel's on-chip shared memory per block."
            };
            let _ = writeln!(out, "{}", paint.bold(what));
        }
        super::MemoryKind::Host => {
            let _ = writeln!(
                out,
                "{}",
                paint.bold("Not GPU memory: the host's RAM (a CPU buffer).")
            );
        }
        super::MemoryKind::PinnedHost => {
            let _ = writeln!(
                out,
                "{}",
                paint.bold("Not GPU memory: page-locked (pinned) host RAM.")
            );
        }
        super::MemoryKind::Buffers => {
            let _ = writeln!(
                out,
                "{}",
                paint.bold("Not bytes: the number of buffers one process may hold.")
            );
        }
        super::MemoryKind::TpuOnChip => {
            let _ = writeln!(
                out,
                "{}",
                paint.bold("Not HBM: a TPU core's on-chip memory (VMEM or SMEM).")
            );
        }
        super::MemoryKind::PlannedRegion => {
            let _ = writeln!(
                out,
                "{}",
                paint.bold("Not the device's free memory: a region the compiler planned ahead.")
            );
        }
    }
    out.push('\n');
    // Room for the bars: the label, the borders and a margin.
    let label_w = if layout.live.is_some() { 10 } else { 0 };
    let bar_w = w.map_or(BAR_WIDTH, |w| {
        w.saturating_sub(6 + label_w).clamp(10, BAR_WIDTH)
    });
    // A bar with nothing to draw in it (a capacity alone, or with a request larger than it,
    // from a program's start-up lines) is left out: the request is marked under a part.
    let message = f.breakdown().filter(|b| {
        b.parts
            .iter()
            .any(|p| p.kind != PartKind::Unaccounted && p.bytes.is_some_and(|x| x > 0))
    });
    if let Some(b) = &message {
        let label = if layout.live.is_some() {
            format!("{:<10}", "message")
        } else {
            String::new()
        };
        out.push_str(&bar(
            b,
            f.requested_bytes,
            f.free_bytes,
            paint,
            bar_w,
            &label,
            w,
        ));
    }
    if let Some((name, live)) = &layout.live {
        let label = format!("{:<10}", name.chars().take(9).collect::<String>());
        out.push_str(&bar(live, None, None, paint, bar_w, &label, w));
    }
    let mut kinds: Vec<&PartKind> = Vec::new();
    for b in message.iter().chain(layout.live.iter().map(|(_, b)| b)) {
        for p in &b.parts {
            let shown = p.bytes.is_some_and(|x| x > 0) && p.kind != PartKind::Unaccounted;
            // One legend entry per kind of part.
            if shown
                && !kinds
                    .iter()
                    .any(|k| legend_label(k) == legend_label(&p.kind))
            {
                kinds.push(&p.kind);
            }
        }
    }
    if !kinds.is_empty() {
        let legend: Vec<String> = kinds
            .iter()
            .map(|k| {
                let (ch, code) = glyph(k);
                format!("{} {}", paint.wrap(code, &ch.to_string()), legend_label(k))
            })
            .collect();
        para(out, w, "  ", "  ", &legend.join("  "));
        out.push('\n');
    }
    let sizing = layout.sizing.as_ref();
    if layout.findings_first {
        findings(out, oom, paint, w, sizing);
        figures(out, oom, paint, w);
    } else {
        figures(out, oom, paint, w);
        out.push('\n');
        findings(out, oom, paint, w, sizing);
    }
}

/// The table of figures the message gives and implies.
fn figures(out: &mut String, oom: &Oom, paint: Paint, w: Option<usize>) {
    if !oom.missing.is_empty() {
        para(
            out,
            w,
            "  ",
            "    ",
            &format!("Not in the paste: {}.", oom.missing.join("; ")),
        );
    }
    // A translated message (`families::pytorch_translated`): its figures are the framework's.
    if oom.format.ends_with("-translated") {
        para(
            out,
            w,
            "  ",
            "    ",
            "Read from a translated message; the figures are the framework's.",
        );
    }
    let f = &oom.facts;
    let d = |name: &str| f.derived.contains(&name);
    let lw = label_width(w);
    let row = |out: &mut String, label: &str, v: Option<u64>, derived: bool| {
        row_w(out, label, v, derived, lw)
    };
    row(out, "requested", f.requested_bytes, d("requested_bytes"));
    row(
        out,
        if f.total_is_limit {
            "limit (max allowed)"
        } else {
            "total capacity"
        },
        f.total_bytes,
        d("total_bytes"),
    );
    row(out, "free", f.free_bytes, d("free_bytes"));
    // From the program's start-up lines, not the failure's ([`super::banner`]).
    row(
        out,
        "free when the program started",
        f.startup_free_bytes,
        d("startup_free_bytes"),
    );
    row(
        out,
        "largest single allocation allowed",
        f.max_alloc_bytes,
        d("max_alloc_bytes"),
    );
    row(
        out,
        "in use on the device (all processes)",
        f.device_used_bytes,
        d("device_used_bytes"),
    );
    let cap = if oom.framework == super::Framework::VllmRs {
        "allowed (KV-cache budget)"
    } else {
        "allowed (per-process cap)"
    };
    row(out, cap, f.allowed_bytes, d("allowed_bytes"));
    row(
        out,
        "allocated by the framework",
        f.allocated_bytes,
        d("allocated_bytes"),
    );
    row(
        out,
        "  of which in private pools (CUDA Graphs)",
        f.private_pool_bytes,
        d("private_pool_bytes"),
    );
    row(
        out,
        "cached (reserved, unallocated)",
        f.reserved_unallocated_bytes,
        d("reserved_unallocated_bytes"),
    );
    row(
        out,
        "reserved by the framework",
        f.reserved_bytes,
        d("reserved_bytes"),
    );
    row(
        out,
        "outside the framework (context, libs)",
        f.non_framework_bytes,
        d("non_framework_bytes"),
    );
    match f.likely_self_pid {
        Some(pid) => row(
            out,
            &format!("this process (listed as pid {pid})"),
            f.process_bytes,
            true,
        ),
        None => row(
            out,
            "this process in total",
            f.process_bytes,
            d("process_bytes"),
        ),
    }
    // XLA's account of the compiled program that failed (its TPU report, its BufferAssignment).
    row(
        out,
        "the compiled program (XLA)",
        f.program_bytes,
        d("program_bytes"),
    );
    row(
        out,
        "  its arguments",
        f.arguments_bytes,
        d("arguments_bytes"),
    );
    row(out, "  its outputs", f.output_bytes, d("output_bytes"));
    row(
        out,
        "reserved by the runtime",
        f.runtime_reserved_bytes,
        d("runtime_reserved_bytes"),
    );
    for p in &f.other_processes {
        row(
            out,
            &format!("other process {}", p.pid),
            Some(p.bytes),
            false,
        );
    }
    if f.other_processes.is_empty() {
        row(
            out,
            "other allocations",
            f.other_processes_bytes,
            d("other_processes_bytes"),
        );
    }
    row(
        out,
        "unaccounted for",
        f.unaccounted_bytes.filter(|u| *u > 0),
        true,
    );
    // A start-up's components (TensorRT-LLM's executor): what each took of the free memory.
    for c in &f.components {
        match c.took_bytes() {
            Some(took) => row(out, &format!("created: {}", c.name), Some(took), false),
            None => row(
                out,
                &format!("failed: {} (free before it)", c.name),
                Some(c.free_before_bytes),
                false,
            ),
        }
    }
    if let Some(e) = f.elements.filter(|_| f.requested_bytes.is_none()) {
        let _ = writeln!(
            out,
            "  {:<lw$} {:>12}",
            "tensor elements (dtype not printed)", e
        );
    }
    if let Some(pid) = f.likely_self_pid {
        let mut note = String::new();
        para(
            &mut note,
            w,
            "  ",
            "  ",
            &format!(
                "Process {pid} is most likely this process itself: PyTorch printed no \"this process\" \
                 line, which happens in a container (its pid differs from the host's), and pid {pid} \
                 holds at least everything PyTorch reserved."
            ),
        );
        out.push_str(&paint.dim(note.trim_end()));
        out.push('\n');
    }
}

/// The findings, ranked, each with its remedies.
fn findings(
    out: &mut String,
    oom: &Oom,
    paint: Paint,
    w: Option<usize>,
    sizing: Option<&super::diagnose::Sizing>,
) {
    for (i, finding) in super::diagnose::diagnose_with(oom, sizing)
        .iter()
        .enumerate()
    {
        let number = format!("{}. ", i + 1);
        let mut title = String::new();
        para(&mut title, w, &number, "   ", &finding.title);
        out.push_str(&paint.bold(title.trim_end()));
        out.push('\n');
        para(out, w, "   ", "   ", &finding.detail);
        for r in &finding.remedies {
            let saving = r
                .saves_bytes
                .map(|s| format!(" [saves up to ~{}]", fmt_bytes(s)))
                .unwrap_or_default();
            para(
                out,
                w,
                "   - ",
                "     ",
                &format!("{}{}", r.text, paint.dim(&saving)),
            );
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_a_failure_warnings_are_said_as_such() {
        let w = "W bfc_allocator.cc:211] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.96GiB. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.";
        let a = super::super::analyze(&format!("{w}\n{w}\n"));
        assert!(a.main().is_none());
        let text = render(&a, Paint(false));
        assert!(text.starts_with("No out-of-memory error found"), "{text}");
        assert!(text.contains("warned 2 times"), "{text}");
        assert!(text.contains("did not fail there"), "{text}");
        let a = super::super::analyze("nothing here\n");
        assert!(!render(&a, Paint(false)).contains("warned"));
    }

    /// TensorRT's skipped tactics are warnings: alone, no failure and said as what they are;
    /// after a tactic's failed allocation, a note that the build went on.
    #[test]
    fn skipped_tactics_are_said_as_such() {
        let w = "[10/01/2025-08:26:34] [TRT] [W] UNSUPPORTED_STATE: Skipping tactic 9 due to insufficient memory on requested size of 1048576000 detected for tactic 0x8a196054417f1c8a.";
        let old = "[W] [TRT] Tactic Device request: 4360MB Available: 2304MB. Device memory is insufficient to use tactic.";
        let a = super::super::analyze(&format!("{w}\n{old}\n"));
        assert!(a.main().is_none());
        assert_eq!(a.skipped_tactics, 2);
        let text = render(&a, Paint(false));
        assert!(text.contains("skipped a tactic"), "{text}");
        let a = super::super::analyze(&format!("[TRT] [W] Requested amount of GPU memory (4294967296 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.\n{w}\n"));
        assert_eq!(
            a.main().map(|o| o.facts.requested_bytes),
            Some(Some(4 << 30))
        );
        assert!(render(&a, Paint(false)).contains("then skipped 1 tactic for want of memory"));
        let a = super::super::analyze("nothing here\n");
        assert!(!render(&a, Paint(false)).contains("tactic"));
    }

    /// ROCm's lowered occupancy is a warning: alone, no failure, said as what it is; older
    /// runtimes print it without the size.
    #[test]
    fn reduced_scratch_is_said_as_such() {
        let a = super::super::analyze("Failed to map requested scratch (3520331776) - reducing queue occupancy.\n  1760165888 scratch mapped, 50.00% occupancy.\nFailed to map requested scratch - reducing queue occupancy.\n");
        assert!(a.main().is_none());
        assert_eq!(a.reduced_scratch, 2);
        let text = render(&a, Paint(false));
        assert!(text.contains("fewer waves at once"), "{text}");
        assert_eq!(to_json(&a).reduced_scratch, 2);
        let a = super::super::analyze("scratch mapped\n");
        assert_eq!(a.reduced_scratch, 0);
        assert!(!render(&a, Paint(false)).contains("waves"));
    }

    /// A translated message says so; the original does not.
    #[test]
    fn a_translated_message_is_said_to_be_one() {
        let note = "Read from a translated message";
        let a = super::super::analyze("RuntimeError: CUDA 内存不足。尝试分配 20.00 MiB（GPU 0；总容量 7.79 GiB；已分配 6.03 GiB；空闲 3.56 MiB；PyTorch 总共保留 6.23 GiB）\n");
        assert!(render(&a, Paint(false)).contains(note));
        let a = super::super::analyze("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.03 GiB already allocated; 3.56 MiB free; 6.23 GiB reserved in total by PyTorch)\n");
        assert!(!render(&a, Paint(false)).contains(note));
    }

    #[test]
    fn wrapped_paragraphs_keep_their_hanging_indent() {
        let mut out = String::new();
        para(
            &mut out,
            Some(30),
            "   - ",
            "     ",
            "one two three four five six seven eight nine ten",
        );
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1, "{out}");
        assert!(lines[0].starts_with("   - one"));
        for l in &lines[1..] {
            assert!(l.starts_with("     ") && !l.starts_with("      "), "{l:?}");
        }
        assert!(lines.iter().all(|l| l.chars().count() <= 30));
        // No width: one line.
        let mut flat = String::new();
        para(&mut flat, None, "- ", "  ", "a b c");
        assert_eq!(flat, "- a b c\n");
    }
}
