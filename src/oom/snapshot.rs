//! PyTorch memory snapshots: what `torch.cuda.memory._snapshot()` returns, pickled as
//! `_dump_snapshot` writes it and pytorch.org/memory_viz opens it. Read with [`super::pickle`]
//! (plain dicts, lists, tuples, ints and strings; nothing is imported or called), then
//! summarised: the live memory by allocation site, the free pieces in the cache against the
//! request, and whether the OOM was fragmentation or genuinely too much.
//!
//! The layout is the one `_snapshot`'s docstring documents (torch/cuda/memory.py): `segments`
//! (one per cudaMalloc, or per expandable segment, with `blocks` in `active_allocated`,
//! `active_awaiting_free` or `inactive` state and each block's allocation stack in `frames`,
//! innermost first) and `device_traces` (one list per device; an `oom` entry carries the
//! request in `size` and the device's free bytes in `device_free`). PyTorch 2.0 kept a block's
//! stack under `history[-1].frames`; both are read.
//!
//! What the verdict rests on (c10/cuda/CUDACachingAllocator.cpp): before raising, the
//! allocator frees every cached segment that has no live block and retries cudaMalloc, and it
//! calls the out-of-memory observers only after that. So a snapshot taken at the OOM holds, as
//! `inactive`, only free pieces of segments that still hold live blocks: memory no cudaMalloc
//! can get back. With `expandable_segments:True` segments are mapped page by page and free
//! pages are unmapped, so those pieces become usable again.

use std::collections::HashMap;
use std::io::Read;

use serde::{Deserialize, Serialize};

use super::pickle::Value;

use crate::units::fmt_bytes;

/// A snapshot file larger than this is refused: reading one takes several times its size in
/// memory (OOM snapshots with 100,000 trace entries are tens of MiB).
pub const MAX_FILE: u64 = 1 << 30;

/// Sites listed in a summary.
const SITES: usize = 8;

#[derive(Debug, Default)]
struct Raw {
    segments: Vec<RawSegment>,
    device_traces: Vec<Vec<RawTrace>>,
}

#[derive(Debug, Default)]
struct RawSegment {
    device: Option<i64>,
    total_size: u64,
    allocated_size: Option<u64>,
    active_size: Option<u64>,
    segment_type: Option<String>,
    is_expandable: Option<bool>,
    blocks: Vec<RawBlock>,
}

#[derive(Debug, Default)]
struct RawBlock {
    size: u64,
    state: String,
    frames: Vec<Frame>,
}

#[derive(Debug, Default, Clone)]
struct Frame {
    filename: String,
    line: i64,
    name: String,
}

#[derive(Debug, Default)]
struct RawTrace {
    action: String,
    size: Option<u64>,
    device_free: Option<u64>,
}

impl Raw {
    /// The snapshot's layout read from the decoded pickle; anything unexpected is an error
    /// for the top level and skipped below it.
    fn from_value(v: &Value) -> Result<Raw, String> {
        if !v.is_dict() {
            return Err("the pickle holds no dict".into());
        }
        let segments = v.get("segments").ok_or("it has no segments")?;
        let segments = match segments {
            Value::List(_) | Value::Tuple(_) => segments.items(),
            _ => return Err("its segments are not a list".into()),
        };
        let segments = segments
            .iter()
            .filter(|s| s.is_dict())
            .map(|s| RawSegment {
                device: s.get("device").and_then(|d| d.as_int()),
                total_size: s.get("total_size").and_then(|x| x.as_u64()).unwrap_or(0),
                allocated_size: s.get("allocated_size").and_then(|x| x.as_u64()),
                active_size: s.get("active_size").and_then(|x| x.as_u64()),
                segment_type: s
                    .get("segment_type")
                    .and_then(|x| x.as_str().map(str::to_owned)),
                is_expandable: s.get("is_expandable").and_then(|x| x.as_bool()),
                blocks: s
                    .get("blocks")
                    .map(|b| b.items())
                    .unwrap_or_default()
                    .iter()
                    .map(|b| RawBlock {
                        size: b.get("size").and_then(|x| x.as_u64()).unwrap_or(0),
                        state: b
                            .get("state")
                            .and_then(|x| x.as_str().map(str::to_owned))
                            .unwrap_or_default(),
                        frames: block_frames(b),
                    })
                    .collect(),
            })
            .collect();
        let device_traces = v
            .get("device_traces")
            .map(|t| t.items())
            .unwrap_or_default()
            .iter()
            .map(|t| {
                t.items()
                    .iter()
                    .map(|e| RawTrace {
                        action: e
                            .get("action")
                            .and_then(|x| x.as_str().map(str::to_owned))
                            .unwrap_or_default(),
                        size: e.get("size").and_then(|x| x.as_u64()),
                        device_free: e.get("device_free").and_then(|x| x.as_u64()),
                    })
                    .collect()
            })
            .collect();
        Ok(Raw {
            segments,
            device_traces,
        })
    }
}

/// A block's stack: its `frames`, or PyTorch 2.0's last `history` entry's.
fn block_frames(b: &Value) -> Vec<Frame> {
    let own = b.get("frames").map(|f| f.items()).unwrap_or_default();
    let list = if own.is_empty() {
        b.get("history")
            .map(|h| h.items())
            .unwrap_or_default()
            .last()
            .and_then(|h| h.get("frames"))
            .map(|f| f.items())
            .unwrap_or_default()
    } else {
        own
    };
    list.iter()
        .map(|f| Frame {
            filename: f
                .get("filename")
                .and_then(|x| x.as_str().map(str::to_owned))
                .unwrap_or_default(),
            line: f.get("line").and_then(|x| x.as_int()).unwrap_or(0),
            name: f
                .get("name")
                .and_then(|x| x.as_str().map(str::to_owned))
                .unwrap_or_default(),
        })
        .collect()
}

/// What the OOM observer was told, when the probe saved it beside the snapshot (it is also in
/// the snapshot's trace when history was recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct OomContext {
    pub device: Option<i64>,
    /// The allocation that failed, in bytes.
    pub request: Option<u64>,
    /// What cudaMemGetInfo reported free on the device.
    pub device_free: Option<u64>,
}

/// What `gpumon run --snapshot`'s probe saves beside a snapshot (`….snapshot.json`): the OOM
/// observer's arguments, and what the dump cost.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Sidecar {
    #[serde(flatten)]
    pub oom: OomContext,
    /// Seconds the dump took.
    pub seconds: Option<f64>,
    /// The pickle's size.
    pub bytes: Option<u64>,
    /// How history was recorded; `None` when it could not be turned on.
    pub history: Option<String>,
}

impl Sidecar {
    /// The sidecar beside the snapshot at `pickle`, when there is a readable one.
    pub fn beside(pickle: &std::path::Path) -> Option<Sidecar> {
        let bytes = std::fs::read(pickle.with_extension("json")).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// Reads and summarises the snapshot file at `path`, with the OOM's context from its sidecar.
pub fn read_file(path: &std::path::Path, sidecar: Option<&Sidecar>) -> Result<Summary, Error> {
    let file = std::fs::File::open(path)?;
    read(std::io::BufReader::new(file), sidecar.map(|s| s.oom))
}

/// One allocation site's live memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Site {
    /// "train.py:88 in forward"; "(no stack recorded)" for memory allocated before history
    /// recording began.
    pub location: String,
    pub bytes: u64,
    pub blocks: usize,
    pub largest: u64,
}

/// Fragmentation or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// The cache's free pieces plus the device's free memory would hold the request; no single
    /// piece does.
    Fragmentation { available: u64 },
    /// Even all of it together falls short by `short`.
    TooMuch { short: u64 },
    /// A free cached block as large as the request existed but could not serve it (another
    /// stream or pool, or `max_split_size_mb` keeping large blocks whole).
    BlockElsewhere { largest: u64 },
}

/// A snapshot, summarised for one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub device: Option<i64>,
    /// Devices with segments in the snapshot.
    pub devices: Vec<i64>,
    pub reserved: u64,
    pub allocated: u64,
    /// Freed by the program but waiting for another stream's work (`record_stream`).
    pub awaiting_free: u64,
    /// Free pieces in the cache (`inactive` blocks).
    pub free_in_cache: u64,
    pub free_pieces: usize,
    /// The largest free piece in a large-pool segment (requests over 1 MiB come from those).
    pub largest_free: Option<u64>,
    pub segments: usize,
    pub large_segments: usize,
    pub expandable: bool,
    pub request: Option<u64>,
    pub device_free: Option<u64>,
    pub verdict: Option<Verdict>,
    /// Live memory by allocation site, largest first.
    pub sites: Vec<Site>,
    /// Sites beyond those listed.
    pub other_sites: usize,
    pub other_bytes: u64,
    /// Trace entries kept in the snapshot (0 when history was not recorded).
    pub trace_entries: usize,
}

/// `explain --snapshot --json` (docs/schema/snapshot.schema.json).
#[derive(Debug, Serialize)]
pub struct Json<'a> {
    pub schema_version: u32,
    #[serde(flatten)]
    pub summary: &'a Summary,
}

impl<'a> Json<'a> {
    pub fn new(summary: &'a Summary) -> Json<'a> {
        Json {
            schema_version: 1,
            summary,
        }
    }
}

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the snapshot: {0}")]
    Io(#[from] std::io::Error),
    #[error(
        "the snapshot is {} (more than {} gpumon reads)",
        fmt_bytes(*.0),
        fmt_bytes(MAX_FILE)
    )]
    TooLarge(u64),
    #[error("not a PyTorch memory snapshot (a pickled dict with segments): {0}")]
    Format(String),
}

/// Reads a pickled snapshot and summarises it. `context` (the observer's arguments) wins over
/// the trace's last `oom` entry; `device` picks the device, else the OOM's, else the one with
/// the most reserved memory.
pub fn read(reader: impl Read, context: Option<OomContext>) -> Result<Summary, Error> {
    let mut bytes = Vec::new();
    reader.take(MAX_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(Error::TooLarge(bytes.len() as u64));
    }
    let value = super::pickle::parse(&bytes).map_err(|e| Error::Format(e.to_string()))?;
    let raw = Raw::from_value(&value).map_err(Error::Format)?;
    if raw.segments.is_empty() && raw.device_traces.is_empty() {
        return Err(Error::Format("it has no segments and no trace".into()));
    }
    Ok(summarise(&raw, context.unwrap_or_default()))
}

fn summarise(raw: &Raw, context: OomContext) -> Summary {
    let mut devices: Vec<i64> = raw.segments.iter().filter_map(|s| s.device).collect();
    devices.sort_unstable();
    devices.dedup();
    // The last `oom` in any device's trace (the list index is the device).
    let traced = raw
        .device_traces
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let pos = t.iter().rposition(|e| e.action == "oom")?;
            Some((i as i64, pos, &t[pos]))
        })
        .max_by_key(|(_, pos, _)| *pos);
    let device = context.device.or(traced.map(|(d, _, _)| d)).or_else(|| {
        devices.iter().copied().max_by_key(|d| {
            raw.segments
                .iter()
                .filter(|s| s.device == Some(*d))
                .map(|s| s.total_size)
                .sum::<u64>()
        })
    });
    let traced = traced.filter(|(d, _, _)| Some(*d) == device);
    let request = context.request.or(traced.and_then(|(_, _, e)| e.size));
    let device_free = context
        .device_free
        .or(traced.and_then(|(_, _, e)| e.device_free));
    // Segments without a device field (PyTorch 2.0 with one device) belong to any device.
    let segments: Vec<&RawSegment> = raw
        .segments
        .iter()
        .filter(|s| device.is_none() || s.device.is_none() || s.device == device)
        .collect();

    let mut reserved = 0u64;
    let mut allocated = 0u64;
    let mut awaiting_free = 0u64;
    let mut free_in_cache = 0u64;
    let mut free_pieces = 0usize;
    let mut largest_free: Option<u64> = None;
    let mut large_segments = 0usize;
    let mut expandable = false;
    let mut by_site: HashMap<String, Site> = HashMap::new();
    for s in &segments {
        reserved = reserved.saturating_add(s.total_size);
        let large = s.segment_type.as_deref() != Some("small");
        large_segments += usize::from(large);
        expandable |= s.is_expandable == Some(true);
        let mut seg_allocated = 0u64;
        let mut seg_active = 0u64;
        for b in &s.blocks {
            match b.state.as_str() {
                "active_allocated" => {
                    seg_allocated = seg_allocated.saturating_add(b.size);
                    seg_active = seg_active.saturating_add(b.size);
                    let location = site(b);
                    let e = by_site.entry(location.clone()).or_insert(Site {
                        location,
                        bytes: 0,
                        blocks: 0,
                        largest: 0,
                    });
                    e.bytes = e.bytes.saturating_add(b.size);
                    e.blocks += 1;
                    e.largest = e.largest.max(b.size);
                }
                "active_awaiting_free" | "active_pending_free" => {
                    seg_active = seg_active.saturating_add(b.size);
                }
                "inactive" => {
                    free_in_cache = free_in_cache.saturating_add(b.size);
                    free_pieces += 1;
                    if large {
                        largest_free = largest_free.max(Some(b.size));
                    }
                }
                _ => {}
            }
        }
        // The segment's own totals when its blocks were left out.
        let seg_allocated = if s.blocks.is_empty() {
            s.allocated_size.unwrap_or(0)
        } else {
            seg_allocated
        };
        let seg_active = if s.blocks.is_empty() {
            s.active_size.unwrap_or(seg_allocated)
        } else {
            seg_active
        };
        allocated = allocated.saturating_add(seg_allocated);
        awaiting_free = awaiting_free.saturating_add(seg_active.saturating_sub(seg_allocated));
    }
    let mut sites: Vec<Site> = by_site.into_values().collect();
    sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.location.cmp(&b.location)));
    let rest = sites.split_off(sites.len().min(SITES));
    let verdict = request.map(|r| verdict(r, largest_free, free_in_cache, device_free));
    Summary {
        device,
        devices,
        reserved,
        allocated,
        awaiting_free,
        free_in_cache,
        free_pieces,
        largest_free,
        segments: segments.len(),
        large_segments,
        expandable,
        request,
        device_free,
        verdict,
        other_sites: rest.len(),
        other_bytes: rest.iter().map(|s| s.bytes).sum(),
        sites,
        trace_entries: raw.device_traces.iter().map(Vec::len).sum(),
    }
}

fn verdict(
    request: u64,
    largest_free: Option<u64>,
    free_in_cache: u64,
    device_free: Option<u64>,
) -> Verdict {
    if let Some(l) = largest_free.filter(|l| *l >= request) {
        return Verdict::BlockElsewhere { largest: l };
    }
    // Unknown device free memory counts as none: the verdict errs towards "too much".
    let available = free_in_cache.saturating_add(device_free.unwrap_or(0));
    if available >= request {
        Verdict::Fragmentation { available }
    } else {
        Verdict::TooMuch {
            short: request - available,
        }
    }
}

/// PyTorch's own code, the interpreter and C++ frames: not where the program allocated.
fn internal(f: &Frame) -> bool {
    let file = f.filename.as_str();
    file.contains("/torch/")
        || file.starts_with("torch/")
        || file.starts_with('<')
        || file.is_empty()
        || file == "??"
        || [".cpp", ".cc", ".h", ".hpp", ".cu", ".c"]
            .iter()
            .any(|ext| file.ends_with(ext))
}

/// The innermost frame of the program's own code (any frame when all are PyTorch's).
fn site(b: &RawBlock) -> String {
    let frames = &b.frames;
    let Some(f) = frames
        .iter()
        .find(|f| !internal(f))
        .or_else(|| frames.first())
    else {
        return "(no stack recorded)".into();
    };
    // The last three path components say enough ("models/llama/modeling_llama.py").
    let parts: Vec<&str> = f.filename.rsplit('/').take(3).collect();
    let short: Vec<&str> = parts.into_iter().rev().collect();
    let mut file = short.join("/");
    if f.filename.matches('/').count() >= 3 {
        file = format!(".../{file}");
    }
    format!("{file}:{} in {}", f.line, f.name)
}

/// Appends `text` as a paragraph: `first` before its first line, `rest` before the others,
/// wrapped at `width` columns when one is given.
fn para(out: &mut String, first: &str, rest: &str, width: Option<usize>, text: &str) {
    match width {
        Some(w) => {
            let options = textwrap::Options::new(w.max(40))
                .initial_indent(first)
                .subsequent_indent(rest);
            out.push_str(&textwrap::fill(text, options));
        }
        None => {
            out.push_str(first);
            out.push_str(text);
        }
    }
    out.push('\n');
}

/// The summary as text, `indent` before every line, wrapped at `width` columns when given.
pub fn render(s: &Summary, indent: &str, width: Option<usize>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let deeper = format!("{indent}  ");
    let deepest = format!("{indent}    ");
    let gpu = s
        .device
        .map_or(String::new(), |d| format!(" on device {d}"));
    let text = format!(
        "reserved {}{gpu} = allocated {} + free in the cache {} ({} piece{}{}){}",
        fmt_bytes(s.reserved),
        fmt_bytes(s.allocated),
        fmt_bytes(s.free_in_cache),
        s.free_pieces,
        if s.free_pieces == 1 { "" } else { "s" },
        s.largest_free
            .map_or(String::new(), |l| format!(", the largest {}", fmt_bytes(l))),
        if s.awaiting_free > 0 {
            format!(
                " + {} freed but waiting on other streams",
                fmt_bytes(s.awaiting_free)
            )
        } else {
            String::new()
        }
    );
    para(&mut out, indent, &deeper, width, &text);
    let _ = writeln!(
        out,
        "{indent}{} segment{} ({} large, {} small); expandable segments {}",
        s.segments,
        if s.segments == 1 { "" } else { "s" },
        s.large_segments,
        s.segments - s.large_segments,
        if s.expandable { "on" } else { "off" }
    );
    if let Some(r) = s.request {
        let _ = writeln!(
            out,
            "{indent}the failed request: {}; free on the device: {}",
            fmt_bytes(r),
            s.device_free.map_or_else(|| "N/A".into(), fmt_bytes)
        );
    }
    match s.verdict {
        Some(Verdict::Fragmentation { available }) => {
            let text = format!(
                "Verdict: fragmentation. The cache's free pieces and the device's free memory \
                 ({} together) would hold the {} request, but no piece is that large{}.",
                fmt_bytes(available),
                fmt_bytes(s.request.unwrap_or(0)),
                s.largest_free.map_or(String::new(), |l| format!(
                    " (the largest is {})",
                    fmt_bytes(l)
                ))
            );
            para(&mut out, indent, &deeper, width, &text);
            if s.expandable {
                para(
                    &mut out,
                    &deeper,
                    &deepest,
                    width,
                    "Expandable segments are already on: the free pieces share pages with live \
                     tensors. Lower the peak (a smaller batch, activation checkpointing) or free \
                     long-lived tensors earlier.",
                );
            } else {
                para(
                    &mut out,
                    &deeper,
                    &deepest,
                    width,
                    "Remedy: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 and \
                     later). Segments then grow page by page and free pages are returned, so \
                     these pieces become usable. torch.cuda.empty_cache() would not help: the \
                     allocator already released every empty segment and retried before raising.",
                );
            }
        }
        Some(Verdict::TooMuch { short }) => {
            let text = format!(
                "Verdict: genuinely too much. Even every free piece in the cache plus the \
                 device's free memory is {} short of the request; expandable_segments would not \
                 make it fit.",
                fmt_bytes(short)
            );
            para(&mut out, indent, &deeper, width, &text);
            para(
                &mut out,
                &deeper,
                &deepest,
                width,
                "Remedy: lower the peak: a smaller batch or sequence, activation checkpointing, \
                 bf16/fp16, or shard the model (FSDP, tensor parallelism); the sites below are \
                 where the memory is.",
            );
        }
        Some(Verdict::BlockElsewhere { largest }) => {
            let text = format!(
                "Verdict: a free cached block of {} was as large as the request but could not \
                 serve it: it belongs to another stream or memory pool (CUDA graphs), or \
                 max_split_size_mb keeps blocks that large whole.",
                fmt_bytes(largest)
            );
            para(&mut out, indent, &deeper, width, &text);
        }
        None => {
            para(
                &mut out,
                indent,
                &deeper,
                width,
                "No failed request in the snapshot (no oom entry in its trace): no verdict.",
            );
        }
    }
    if !s.sites.is_empty() {
        let _ = writeln!(out, "{indent}Live memory by allocation site:");
        for site in &s.sites {
            let _ = writeln!(
                out,
                "{indent}  {:>10}  {:>5} block{} (largest {:>10})  {}",
                fmt_bytes(site.bytes),
                site.blocks,
                if site.blocks == 1 { " " } else { "s" },
                fmt_bytes(site.largest),
                site.location
            );
        }
        if s.other_sites > 0 {
            let _ = writeln!(
                out,
                "{indent}  {:>10}  in {} other sites",
                fmt_bytes(s.other_bytes),
                s.other_sites
            );
        }
    }
    if s.trace_entries == 0 {
        para(
            &mut out,
            indent,
            &deeper,
            width,
            "(no allocation history in this snapshot: sites come from the live blocks' stacks \
             only)",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{GIB, MIB};
    use serde_pickle::{HashableValue as H, Value as V};
    use std::collections::BTreeMap;

    fn dict(items: Vec<(&str, V)>) -> V {
        V::Dict(
            items
                .into_iter()
                .map(|(k, v)| (H::String(k.into()), v))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    fn frame(file: &str, line: i64, name: &str) -> V {
        dict(vec![
            ("filename", V::String(file.into())),
            ("line", V::I64(line)),
            ("name", V::String(name.into())),
        ])
    }

    fn block(size: u64, state: &str, frames: Vec<V>) -> V {
        dict(vec![
            ("size", V::I64(size as i64)),
            ("requested_size", V::I64(size as i64)),
            ("address", V::I64(0x7f00_0000_0000)),
            ("state", V::String(state.into())),
            ("frames", V::List(frames)),
        ])
    }

    fn segment(device: i64, kind: &str, blocks: Vec<V>) -> V {
        let total: i64 = blocks
            .iter()
            .map(|b| match b {
                V::Dict(d) => match d.get(&H::String("size".into())) {
                    Some(V::I64(n)) => *n,
                    _ => 0,
                },
                _ => 0,
            })
            .sum();
        dict(vec![
            ("device", V::I64(device)),
            ("address", V::I64(0x7f00_0000_0000)),
            ("total_size", V::I64(total)),
            ("allocated_size", V::I64(0)),
            ("active_size", V::I64(0)),
            ("stream", V::I64(0)),
            ("segment_type", V::String(kind.into())),
            ("segment_pool_id", V::Tuple(vec![V::I64(0), V::I64(0)])),
            ("is_expandable", V::Bool(false)),
            ("blocks", V::List(blocks)),
        ])
    }

    fn pickle(segments: Vec<V>, traces: Vec<Vec<V>>) -> Vec<u8> {
        let v = dict(vec![
            ("segments", V::List(segments)),
            (
                "device_traces",
                V::List(traces.into_iter().map(V::List).collect()),
            ),
        ]);
        serde_pickle::value_to_vec(&v, serde_pickle::SerOptions::new()).expect("pickle")
    }

    fn oom(size: u64, free: u64) -> V {
        dict(vec![
            ("action", V::String("oom".into())),
            ("size", V::I64(size as i64)),
            ("stream", V::I64(0)),
            ("device_free", V::I64(free as i64)),
            ("frames", V::List(vec![])),
        ])
    }

    fn user() -> Vec<V> {
        vec![
            frame(
                "/usr/lib/python3/site-packages/torch/nn/modules/linear.py",
                125,
                "forward",
            ),
            frame("/home/alice/proj/model.py", 88, "forward"),
            frame("/home/alice/proj/train.py", 12, "<module>"),
        ]
    }

    #[test]
    fn fragmentation_when_pieces_and_free_memory_hold_the_request() {
        // 10 segments of 1 GiB, each with 768 MiB live and a 256 MiB hole: 2.5 GiB free in the
        // cache, the largest piece 256 MiB, 512 MiB free on the device, 2 GiB requested.
        let segs = (0..10)
            .map(|_| {
                segment(
                    0,
                    "large",
                    vec![
                        block(768 * MIB, "active_allocated", user()),
                        block(256 * MIB, "inactive", vec![]),
                    ],
                )
            })
            .collect();
        let bytes = pickle(segs, vec![vec![oom(2 * GIB, 512 * MIB)]]);
        let s = read(bytes.as_slice(), None).expect("snapshot");
        assert_eq!(s.device, Some(0));
        assert_eq!(s.reserved, 10 * GIB);
        assert_eq!(s.allocated, 7680 * MIB);
        assert_eq!(s.free_in_cache, 2560 * MIB);
        assert_eq!(s.free_pieces, 10);
        assert_eq!(s.largest_free, Some(256 * MIB));
        assert_eq!(s.request, Some(2 * GIB));
        assert_eq!(
            s.verdict,
            Some(Verdict::Fragmentation { available: 3 * GIB })
        );
        assert_eq!(s.sites.len(), 1);
        assert_eq!(s.sites[0].location, ".../alice/proj/model.py:88 in forward");
        assert_eq!(s.sites[0].blocks, 10);
        let text = render(&s, "  ", None);
        assert!(text.contains("Verdict: fragmentation"), "{text}");
        assert!(text.contains("expandable_segments:True"), "{text}");
    }

    #[test]
    fn too_much_when_even_everything_free_falls_short() {
        let segs = vec![segment(
            1,
            "large",
            vec![
                block(6 * GIB, "active_allocated", user()),
                block(64 * MIB, "inactive", vec![]),
            ],
        )];
        let bytes = pickle(segs, vec![vec![], vec![oom(4 * GIB, GIB)]]);
        let s = read(bytes.as_slice(), None).expect("snapshot");
        assert_eq!(s.device, Some(1));
        assert_eq!(
            s.verdict,
            Some(Verdict::TooMuch {
                short: 4 * GIB - GIB - 64 * MIB
            })
        );
        let text = render(&s, "", None);
        assert!(text.contains("genuinely too much"), "{text}");
        assert!(!text.contains("Remedy: PYTORCH_CUDA_ALLOC_CONF"), "{text}");
    }

    #[test]
    fn the_observers_arguments_win_and_small_pool_pieces_are_not_the_largest() {
        let segs = vec![
            segment(
                0,
                "small",
                vec![
                    block(MIB, "active_allocated", vec![]),
                    block(MIB, "inactive", vec![]),
                ],
            ),
            segment(
                0,
                "large",
                vec![
                    block(100 * MIB, "active_awaiting_free", vec![]),
                    block(20 * MIB, "active_allocated", vec![]),
                ],
            ),
        ];
        let bytes = pickle(segs, vec![]);
        let ctx = OomContext {
            device: Some(0),
            request: Some(50 * MIB),
            device_free: Some(0),
        };
        let s = read(bytes.as_slice(), Some(ctx)).expect("snapshot");
        assert_eq!(s.largest_free, None);
        assert_eq!(s.awaiting_free, 100 * MIB);
        assert_eq!(s.allocated, 21 * MIB);
        assert_eq!(s.verdict, Some(Verdict::TooMuch { short: 49 * MIB }));
        assert_eq!(s.sites[0].location, "(no stack recorded)");
        assert!(render(&s, "", None).contains("waiting on other streams"));
    }

    #[test]
    fn a_block_as_large_as_the_request_is_named() {
        let segs = vec![segment(
            0,
            "large",
            vec![block(3 * GIB, "inactive", vec![])],
        )];
        let bytes = pickle(segs, vec![vec![oom(2 * GIB, 0)]]);
        let s = read(bytes.as_slice(), None).expect("snapshot");
        assert_eq!(
            s.verdict,
            Some(Verdict::BlockElsewhere { largest: 3 * GIB })
        );
    }

    #[test]
    fn pytorch_2_0_history_frames_are_read() {
        let b = dict(vec![
            ("size", V::I64(GIB as i64)),
            ("state", V::String("active_allocated".into())),
            (
                "history",
                V::List(vec![dict(vec![
                    ("addr", V::I64(1)),
                    ("real_size", V::I64(GIB as i64)),
                    ("frames", V::List(vec![frame("train.py", 7, "step")])),
                ])]),
            ),
        ]);
        let bytes = pickle(vec![segment(0, "large", vec![b])], vec![]);
        let s = read(bytes.as_slice(), None).expect("snapshot");
        assert_eq!(s.sites[0].location, "train.py:7 in step");
        assert_eq!(s.verdict, None);
        assert!(render(&s, "", None).contains("no verdict"));
    }

    #[test]
    fn bad_input_is_an_error_never_a_panic() {
        for bytes in [
            &b""[..],
            b"not a pickle",
            b"\x80\x04\x95",
            b"\x80\x02}q\x00.",
            b"\x80\x02]q\x00.",
            b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.",
        ] {
            assert!(read(bytes, None).is_err(), "{bytes:?}");
        }
        // Truncated in the middle of a real one.
        let whole = pickle(
            vec![segment(0, "large", vec![block(GIB, "inactive", vec![])])],
            vec![],
        );
        for cut in [1, whole.len() / 2, whole.len() - 1] {
            assert!(read(&whole[..cut], None).is_err(), "cut at {cut}");
        }
        // Wrong types in known fields.
        let odd = dict(vec![("segments", V::String("x".into()))]);
        let bytes =
            serde_pickle::value_to_vec(&odd, serde_pickle::SerOptions::new()).expect("pickle");
        assert!(read(bytes.as_slice(), None).is_err());
    }
}
