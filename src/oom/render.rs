//! The `explain` report, as text for a terminal and as stable JSON.

use std::fmt::Write as _;

use serde::Serialize;

use super::diagnose::{diagnose, Finding};
use super::{Analysis, Oom};
use crate::model::breakdown::{Breakdown, PartKind};
use crate::output::Paint;
use crate::units::fmt_bytes;

/// JSON schema version of `gpumon explain --json`.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct ExplainJson<'a> {
    pub schema_version: u32,
    pub found: bool,
    pub count: usize,
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
}

pub fn to_json(a: &Analysis) -> ExplainJson<'_> {
    let main = a.main();
    ExplainJson {
        schema_version: SCHEMA_VERSION,
        found: main.is_some(),
        count: a.ooms.len(),
        framework: main.map(|o| o.framework),
        format: main.map(|o| o.format),
        device_index: main.and_then(|o| o.device_index),
        breakdown: main.map(|o| &o.facts),
        parts: main.and_then(|o| o.facts.breakdown()),
        findings: main.map(diagnose).unwrap_or_default(),
        hint: main.and_then(|o| o.hint.as_deref()),
        line: main.map(|o| o.line.as_str()),
    }
}

/// What `explain` looked for, for the "nothing found" message.
pub const LOOKED_FOR: &str = "PyTorch (CUDA, ROCm/HIP, XPU, MPS; 1.0 to 2.x formats), \
TensorFlow (OOM when allocating, BFC allocator), JAX/XLA (RESOURCE_EXHAUSTED), raw CUDA \
(cudaErrorMemoryAllocation, CUBLAS/CUDNN_STATUS_ALLOC_FAILED, THCudaCheck), ONNX Runtime, \
llama.cpp/ggml, vLLM, CuPy, PaddlePaddle and TensorRT out-of-memory messages";

const BAR_WIDTH: usize = 60;

fn glyph(kind: &PartKind) -> (char, &'static str) {
    match kind {
        PartKind::Allocated => ('█', "31"),
        PartKind::Cached => ('▓', "33"),
        PartKind::NonFramework | PartKind::ThisProcess => ('▒', "35"),
        PartKind::Process { .. } | PartKind::OtherApps | PartKind::Unattributed => ('░', "36"),
        PartKind::DriverReserved => ('▪', "2"),
        PartKind::Free => ('·', "32"),
        PartKind::Unaccounted => (' ', "0"),
    }
}

/// The stacked bar with the request marked under the free segment.
fn bar(b: &Breakdown, request: Option<u64>, free: Option<u64>, paint: Paint) -> String {
    let scale =
        |bytes: u64| ((bytes as f64 / b.total.max(1) as f64) * BAR_WIDTH as f64).round() as usize;
    let mut line = String::new();
    let mut col = 0usize;
    let mut free_at = None;
    for p in &b.parts {
        let Some(bytes) = p.bytes else { continue };
        let (ch, code) = glyph(&p.kind);
        if p.kind == PartKind::Free {
            free_at = Some(col);
        }
        let n = scale(bytes).min(BAR_WIDTH.saturating_sub(col));
        if n > 0 {
            line.push_str(&paint.wrap(code, &ch.to_string().repeat(n)));
        }
        col += n;
    }
    if col < BAR_WIDTH {
        line.push_str(&" ".repeat(BAR_WIDTH - col));
    }
    let mut out = format!("  │{line}│\n");
    if let (Some(req), Some(at)) = (request, free_at) {
        let len = scale(req).max(1);
        let fits = free.is_some_and(|f| req <= f);
        let marker = format!(
            "{}└{}┘ request {}{}",
            " ".repeat(at + 3),
            "─".repeat(len.saturating_sub(1).min(BAR_WIDTH + 20)),
            fmt_bytes(req),
            if fits { "" } else { " (does not fit)" }
        );
        out.push_str(&if fits { marker } else { paint.red(&marker) });
        out.push('\n');
    }
    out
}

fn row(out: &mut String, label: &str, v: Option<u64>, derived: bool) {
    if let Some(v) = v {
        let _ = writeln!(
            out,
            "  {label:<38} {:>12}{}",
            fmt_bytes(v),
            if derived { "  (derived)" } else { "" }
        );
    }
}

/// The terminal report for the main OOM.
pub fn render(a: &Analysis, paint: Paint) -> String {
    let Some(oom) = a.main() else {
        return format!(
            "No out-of-memory error found in {} lines.\nLooked for: {LOOKED_FOR}.\n",
            a.lines
        );
    };
    let mut out = String::new();
    render_oom(&mut out, oom, a.ooms.len(), paint);
    out
}

pub fn render_oom(out: &mut String, oom: &Oom, count: usize, paint: Paint) {
    let f = &oom.facts;
    let device = oom
        .device_index
        .map(|d| format!(" on GPU {d}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}",
        paint.bold(&format!("{} out of memory{device}", oom.framework.name()))
    );
    if count > 1 {
        let _ = writeln!(
            out,
            "{}",
            paint.dim(&format!(
                "{count} OOM errors in the input; this is the last one."
            ))
        );
    }
    if !oom.line.is_empty() {
        let _ = writeln!(out, "{}", paint.dim(&format!("  {}", oom.line)));
    }
    out.push('\n');
    if let Some(b) = f.breakdown() {
        out.push_str(&bar(&b, f.requested_bytes, f.free_bytes, paint));
        let legend: Vec<String> = b
            .parts
            .iter()
            .filter(|p| p.bytes.is_some_and(|x| x > 0) && p.kind != PartKind::Unaccounted)
            .map(|p| {
                let (ch, code) = glyph(&p.kind);
                format!("{} {}", paint.wrap(code, &ch.to_string()), p.kind.label())
            })
            .collect();
        let _ = writeln!(out, "  {}\n", legend.join("  "));
    }
    let d = |name: &str| f.derived.contains(&name);
    row(out, "requested", f.requested_bytes, false);
    row(
        out,
        if f.total_is_limit {
            "limit (max allowed)"
        } else {
            "total capacity"
        },
        f.total_bytes,
        false,
    );
    row(out, "free", f.free_bytes, d("free_bytes"));
    row(out, "allowed (per-process cap)", f.allowed_bytes, false);
    row(out, "allocated by the framework", f.allocated_bytes, false);
    row(
        out,
        "  of which in private pools (CUDA Graphs)",
        f.private_pool_bytes,
        false,
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
        None => row(out, "this process in total", f.process_bytes, false),
    }
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
    if let Some(e) = f.elements.filter(|_| f.requested_bytes.is_none()) {
        let _ = writeln!(
            out,
            "  {:<38} {:>12}",
            "tensor elements (dtype not printed)", e
        );
    }
    if let Some(pid) = f.likely_self_pid {
        let _ = writeln!(
            out,
            "  {}",
            paint.dim(&format!(
                "Process {pid} is most likely this process itself: PyTorch printed no \"this process\" \
                 line, which happens in a container (its pid differs from the host's), and pid {pid} \
                 holds at least everything PyTorch reserved."
            ))
        );
    }
    out.push('\n');
    for (i, finding) in diagnose(oom).iter().enumerate() {
        let _ = writeln!(
            out,
            "{} {}",
            paint.bold(&format!("{}.", i + 1)),
            paint.bold(&finding.title)
        );
        let _ = writeln!(out, "   {}", finding.detail);
        for r in &finding.remedies {
            let saving = r
                .saves_bytes
                .map(|s| format!(" [saves up to ~{}]", fmt_bytes(s)))
                .unwrap_or_default();
            let _ = writeln!(out, "   - {}{}", r.text, paint.dim(&saving));
        }
        out.push('\n');
    }
}
