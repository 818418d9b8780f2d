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

use std::rc::Rc;

use super::pickle::Value;

use crate::units::fmt_bytes;

/// A snapshot file larger than this is refused: reading one takes several times its size in
/// memory (OOM snapshots with 100,000 trace entries are tens of MiB).
pub const MAX_FILE: u64 = 1 << 30;

/// Sites listed in a summary.
const SITES: usize = 8;

/// Segments, blocks, frames and trace entries visited, each reference counted (a block that
/// 1,000 segments share is visited 1,000 times, though read once). A real snapshot has a few
/// million at most; a crafted one whose segments all share one segment whose blocks all share
/// one block would otherwise cost hours of CPU from a few KB.
pub const MAX_VISITS: u64 = 20_000_000;

/// A container's identity: the address its `Rc` shares. What is read from a shared dict or
/// list is kept under it, so a shared object is read once however often it is referenced.
type Key = *const ();

fn key(v: &Value) -> Option<Key> {
    match v {
        Value::List(l) => Some(Rc::as_ptr(l) as Key),
        Value::Dict(d) => Some(Rc::as_ptr(d) as Key),
        Value::Tuple(t) => Some(Rc::as_ptr(t) as *const Value as Key),
        _ => None,
    }
}

/// The named fields of a dict, in one pass over it (a later duplicate key wins, as in
/// Python); `None` for anything that is not a dict.
fn fields<const N: usize>(v: &Value, names: [&str; N]) -> Option<[Option<Value>; N]> {
    let Value::Dict(d) = v else {
        return None;
    };
    let mut out: [Option<Value>; N] = std::array::from_fn(|_| None);
    for (k, val) in d.borrow().iter() {
        if let Some(i) = k.as_str().and_then(|k| names.iter().position(|n| *n == k)) {
            out[i] = Some(val.clone());
        }
    }
    Some(out)
}

/// `f` of a list's or tuple's items, borrowed (no items for anything else).
fn with_items<R>(v: &Value, f: impl FnOnce(&[Value]) -> R) -> R {
    match v {
        Value::List(l) => f(&l.borrow()),
        Value::Tuple(t) => f(t),
        _ => f(&[]),
    }
}

fn int(v: &Option<Value>) -> Option<i64> {
    v.as_ref().and_then(Value::as_int)
}

fn size(v: &Option<Value>) -> Option<u64> {
    v.as_ref().and_then(Value::as_u64)
}

fn text(v: &Option<Value>) -> Option<&str> {
    v.as_ref().and_then(Value::as_str)
}

/// A segment's own fields.
struct Segment {
    device: Option<i64>,
    total_size: u64,
    allocated_size: Option<u64>,
    active_size: Option<u64>,
    small: bool,
    expandable: bool,
    blocks: Option<Value>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Allocated,
    AwaitingFree,
    Inactive,
    Other,
}

/// A block as the summary needs it: its allocation site is an index into `Walk::sites`.
#[derive(Clone, Copy)]
struct Block {
    size: u64,
    state: State,
    site: u32,
}

/// A segment's list of blocks, summed: a list that several segments share is summed once.
#[derive(Default)]
struct BlockList {
    /// Its items (one that is not a dict still counts, with no size).
    count: usize,
    allocated: u64,
    /// Allocated, and freed but waiting on other streams.
    active: u64,
    free: u64,
    pieces: usize,
    largest_free: Option<u64>,
    /// Per site: its bytes, blocks and largest block.
    sites: Vec<(u32, u64, usize, u64)>,
}

/// An `oom` trace entry's request and the device's free memory.
type Oom = (Option<u64>, Option<u64>);

/// A device's trace: its length and its last `oom` entry (position, request, device free).
#[derive(Clone, Copy, Default)]
struct Trace {
    len: usize,
    oom: Option<(usize, Option<u64>, Option<u64>)>,
}

#[derive(Default)]
struct Frame {
    filename: String,
    line: i64,
    name: String,
}

/// The walk over the decoded pickle: what each shared object said, read once, and the
/// references visited against [`MAX_VISITS`].
#[derive(Default)]
struct Walk {
    visits: u64,
    segments: Vec<Segment>,
    segment_at: HashMap<Key, usize>,
    blocks: HashMap<Key, Block>,
    /// Per frame dict: whether it is PyTorch's own, and its site.
    frames: HashMap<Key, (bool, u32)>,
    /// Per stack (a list of frames): its site.
    stacks: HashMap<Key, u32>,
    block_lists: HashMap<Key, Rc<BlockList>>,
    traces: HashMap<Key, Trace>,
    /// Per trace entry: the request and free memory of an `oom`, `None` for other actions.
    entries: HashMap<Key, Option<Oom>>,
    sites: Vec<String>,
    site_ids: HashMap<String, u32>,
}

impl Walk {
    fn visit(&mut self) -> Result<(), Error> {
        self.visits += 1;
        if self.visits > MAX_VISITS {
            return Err(Error::Limit(format!(
                "it has more than {MAX_VISITS} segments, blocks, frames and trace entries \
                 (each reference counted; a real snapshot has a few million at most)"
            )));
        }
        Ok(())
    }

    fn visit_n(&mut self, n: u64) -> Result<(), Error> {
        self.visits = self.visits.saturating_add(n.saturating_sub(1));
        self.visit()
    }

    /// A segment's `blocks`, summed once however many segments share the list.
    fn block_list(&mut self, v: &Value) -> Result<Rc<BlockList>, Error> {
        let k = key(v);
        if let Some(l) = k.and_then(|k| self.block_lists.get(&k)) {
            return Ok(l.clone());
        }
        let mut l = BlockList::default();
        let mut sites: HashMap<u32, (u64, usize, u64)> = HashMap::new();
        with_items(v, |items| -> Result<(), Error> {
            for b in items {
                self.visit()?;
                l.count += 1;
                let Some(b) = self.block(b)? else {
                    continue;
                };
                match b.state {
                    State::Allocated => {
                        l.allocated = l.allocated.saturating_add(b.size);
                        l.active = l.active.saturating_add(b.size);
                        let e = sites.entry(b.site).or_default();
                        e.0 = e.0.saturating_add(b.size);
                        e.1 += 1;
                        e.2 = e.2.max(b.size);
                    }
                    State::AwaitingFree => l.active = l.active.saturating_add(b.size),
                    State::Inactive => {
                        l.free = l.free.saturating_add(b.size);
                        l.pieces += 1;
                        l.largest_free = l.largest_free.max(Some(b.size));
                    }
                    State::Other => {}
                }
            }
            Ok(())
        })?;
        l.sites = sites
            .into_iter()
            .map(|(site, (bytes, blocks, largest))| (site, bytes, blocks, largest))
            .collect();
        let l = Rc::new(l);
        if let Some(k) = k {
            self.block_lists.insert(k, l.clone());
        }
        Ok(l)
    }

    fn site_id(&mut self, location: String) -> u32 {
        if let Some(id) = self.site_ids.get(&location) {
            return *id;
        }
        let id = self.sites.len() as u32;
        self.sites.push(location.clone());
        self.site_ids.insert(location, id);
        id
    }

    /// The segment `v`, read once however often it is referenced; `None` for a non-dict.
    fn segment(&mut self, v: &Value) -> Option<usize> {
        let k = key(v)?;
        if let Some(i) = self.segment_at.get(&k) {
            return Some(*i);
        }
        let [device, total, allocated, active, kind, expandable, blocks] = fields(
            v,
            [
                "device",
                "total_size",
                "allocated_size",
                "active_size",
                "segment_type",
                "is_expandable",
                "blocks",
            ],
        )?;
        let i = self.segments.len();
        self.segments.push(Segment {
            device: int(&device),
            total_size: size(&total).unwrap_or(0),
            allocated_size: size(&allocated),
            active_size: size(&active),
            small: text(&kind) == Some("small"),
            expandable: expandable.as_ref().and_then(Value::as_bool) == Some(true),
            blocks,
        });
        self.segment_at.insert(k, i);
        Some(i)
    }

    /// The block `v`; `None` for a non-dict.
    fn block(&mut self, v: &Value) -> Result<Option<Block>, Error> {
        let Some(k) = key(v) else {
            return Ok(None);
        };
        if let Some(b) = self.blocks.get(&k) {
            return Ok(Some(*b));
        }
        let Some([size_v, state, frames, history]) =
            fields(v, ["size", "state", "frames", "history"])
        else {
            return Ok(None);
        };
        let state = match text(&state) {
            Some("active_allocated") => State::Allocated,
            Some("active_awaiting_free" | "active_pending_free") => State::AwaitingFree,
            Some("inactive") => State::Inactive,
            _ => State::Other,
        };
        // Only live blocks are listed by site.
        let site = if state == State::Allocated {
            self.block_site(frames.as_ref(), history.as_ref())?
        } else {
            0
        };
        let b = Block {
            size: size(&size_v).unwrap_or(0),
            state,
            site,
        };
        self.blocks.insert(k, b);
        Ok(Some(b))
    }

    /// A block's site, from its `frames`, or PyTorch 2.0's last `history` entry's.
    fn block_site(
        &mut self,
        frames: Option<&Value>,
        history: Option<&Value>,
    ) -> Result<u32, Error> {
        let own = frames.filter(|f| with_items(f, |i| !i.is_empty()));
        let stack = match own {
            Some(f) => Some(f.clone()),
            None => history
                .and_then(|h| with_items(h, |i| i.last().cloned()))
                .and_then(|last| fields(&last, ["frames"]))
                .and_then(|[f]| f),
        };
        match stack {
            Some(s) => self.stack_site(&s),
            None => Ok(self.site_id(NO_STACK.into())),
        }
    }

    /// The site of a stack: its innermost frame of the program's own code (the first frame
    /// when all are PyTorch's).
    fn stack_site(&mut self, list: &Value) -> Result<u32, Error> {
        let k = key(list);
        if let Some(id) = k.and_then(|k| self.stacks.get(&k)) {
            return Ok(*id);
        }
        let id = with_items(list, |items| -> Result<u32, Error> {
            let mut first = None;
            for f in items {
                self.visit()?;
                let (internal, id) = self.frame(f);
                if !internal {
                    return Ok(id);
                }
                first = first.or(Some(id));
            }
            Ok(match first {
                Some(id) => id,
                None => self.site_id(NO_STACK.into()),
            })
        })?;
        if let Some(k) = k {
            self.stacks.insert(k, id);
        }
        Ok(id)
    }

    fn frame(&mut self, v: &Value) -> (bool, u32) {
        let k = key(v);
        if let Some(f) = k.and_then(|k| self.frames.get(&k)) {
            return *f;
        }
        let f = fields(v, ["filename", "line", "name"]).map_or_else(Frame::default, |[f, l, n]| {
            Frame {
                filename: text(&f).unwrap_or_default().to_owned(),
                line: int(&l).unwrap_or(0),
                name: text(&n).unwrap_or_default().to_owned(),
            }
        });
        let out = (internal(&f), self.site_id(location(&f)));
        if let Some(k) = k {
            self.frames.insert(k, out);
        }
        out
    }

    /// A device's trace (one list of entries), read from its end to its last `oom`.
    fn trace(&mut self, v: &Value) -> Result<Trace, Error> {
        let k = key(v);
        if let Some(t) = k.and_then(|k| self.traces.get(&k)) {
            return Ok(*t);
        }
        let t = with_items(v, |items| -> Result<Trace, Error> {
            let mut t = Trace {
                len: items.len(),
                oom: None,
            };
            for (pos, e) in items.iter().enumerate().rev() {
                self.visit()?;
                if let Some((size, free)) = self.entry(e) {
                    t.oom = Some((pos, size, free));
                    break;
                }
            }
            Ok(t)
        })?;
        if let Some(k) = k {
            self.traces.insert(k, t);
        }
        Ok(t)
    }

    fn entry(&mut self, v: &Value) -> Option<Oom> {
        let k = key(v)?;
        if let Some(e) = self.entries.get(&k) {
            return *e;
        }
        let e = fields(v, ["action", "size", "device_free"])
            .filter(|[action, _, _]| text(action) == Some("oom"))
            .map(|[_, s, free]| (size(&s), size(&free)));
        self.entries.insert(k, e);
        e
    }
}

/// A block allocated before history recording began has no stack.
const NO_STACK: &str = "(no stack recorded)";

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

/// The most a sidecar may hold: it is a few hundred bytes of JSON (the queue's entries have
/// the same cap).
pub const MAX_SIDECAR: u64 = 16 << 10;

impl Sidecar {
    /// The sidecar beside the snapshot at `pickle`: `Ok(None)` when there is none, an error
    /// when there is one that cannot be used (not a regular file, larger than
    /// [`MAX_SIDECAR`], not the sidecar's JSON): the snapshot is then read without it.
    pub fn beside(pickle: &std::path::Path) -> Result<Option<Sidecar>, String> {
        let path = pickle.with_extension("json");
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        let bytes = crate::files::read_bounded(&path, MAX_SIDECAR, "a snapshot's sidecar")
            .map_err(|e| e.to_string())?;
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            format!(
                "{}: not a snapshot's sidecar ({})",
                path.display(),
                crate::files::cut_message(&e.to_string(), 200)
            )
        })
    }
}

/// Reads and summarises the snapshot file at `path`, with the OOM's context from its sidecar.
/// Only a regular file is read (a FIFO would block, a device never ends), and one larger
/// than [`MAX_FILE`] is refused before it is read.
pub fn read_file(path: &std::path::Path, sidecar: Option<&Sidecar>) -> Result<Summary, Error> {
    let bytes = crate::files::read_bounded(path, MAX_FILE, "a PyTorch memory snapshot")
        .map_err(|e| Error::File(e.reason))?;
    read_bytes(&bytes, sidecar.map(|s| s.oom))
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
    /// The file could not be read (the path is the caller's to show).
    #[error("{0}")]
    File(String),
    #[error(
        "the snapshot is {} (more than {} gpumon reads)",
        fmt_bytes(*.0),
        fmt_bytes(MAX_FILE)
    )]
    TooLarge(u64),
    #[error("not a PyTorch memory snapshot (a pickled dict with segments): {0}")]
    Format(String),
    /// A known container format, not the pickle itself.
    #[error("{0}: gpumon reads the pickle torch.cuda.memory._dump_snapshot(path) writes")]
    Container(&'static str),
    #[error("gpumon stops reading this snapshot: {0}")]
    Limit(String),
}

/// What a file that is not a pickle but is known says it is, by its first bytes.
const CONTAINERS: &[(&[u8], &str)] = &[
    (
        b"PK\x03\x04",
        "this is a zip archive, as torch.save writes (not a snapshot's pickle)",
    ),
    (b"\x1f\x8b", "this is gzip-compressed: gunzip it first"),
    (
        b"\x28\xb5\x2f\xfd",
        "this is zstd-compressed: unzstd it first",
    ),
];

/// Reads a pickled snapshot and summarises it. `context` (the observer's arguments) wins over
/// the trace's last `oom` entry; `device` picks the device, else the OOM's, else the one with
/// the most reserved memory.
pub fn read(reader: impl Read, context: Option<OomContext>) -> Result<Summary, Error> {
    let mut bytes = Vec::new();
    reader.take(MAX_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(Error::TooLarge(bytes.len() as u64));
    }
    read_bytes(&bytes, context)
}

/// [`read`] of a snapshot's bytes.
pub fn read_bytes(bytes: &[u8], context: Option<OomContext>) -> Result<Summary, Error> {
    if let Some((_, what)) = CONTAINERS
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
    {
        return Err(Error::Container(what));
    }
    let value = super::pickle::parse(bytes).map_err(|e| match e {
        super::pickle::Error::TooBig(_) | super::pickle::Error::StackTooDeep(_) => {
            Error::Limit(e.to_string())
        }
        e => Error::Format(e.to_string()),
    })?;
    summarise(&value, context.unwrap_or_default())
}

/// The summary, read from the decoded pickle while walking it: a shared segment, block, stack
/// or trace is read once and counted at each reference, never copied. Anything unexpected is
/// an error at the top level and skipped below it.
fn summarise(root: &Value, context: OomContext) -> Result<Summary, Error> {
    let format = |why: &str| Error::Format(why.into());
    let [segments, traces] =
        fields(root, ["segments", "device_traces"]).ok_or(format("the pickle holds no dict"))?;
    let segments = segments.ok_or(format("it has no segments"))?;
    if !matches!(segments, Value::List(_) | Value::Tuple(_)) {
        return Err(format("its segments are not a list"));
    }
    let mut w = Walk::default();
    // Each reference to a segment, as an index into `w.segments`.
    let mut refs: Vec<usize> = Vec::new();
    with_items(&segments, |items| -> Result<(), Error> {
        for s in items {
            w.visit()?;
            refs.extend(w.segment(s));
        }
        Ok(())
    })?;
    // Each device's trace (the list index is the device).
    let mut device_traces: Vec<Trace> = Vec::new();
    if let Some(t) = &traces {
        with_items(t, |items| -> Result<(), Error> {
            for l in items {
                w.visit()?;
                device_traces.push(w.trace(l)?);
            }
            Ok(())
        })?;
    }
    if refs.is_empty() && device_traces.is_empty() {
        return Err(format("it has no segments and no trace"));
    }

    let mut reserved_by_device: HashMap<i64, u64> = HashMap::new();
    for i in &refs {
        let s = &w.segments[*i];
        if let Some(d) = s.device {
            let r = reserved_by_device.entry(d).or_default();
            *r = r.saturating_add(s.total_size);
        }
    }
    let mut devices: Vec<i64> = reserved_by_device.keys().copied().collect();
    devices.sort_unstable();
    // The last `oom` in any device's trace.
    let traced = device_traces
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.oom.map(|(pos, size, free)| (i as i64, pos, size, free)))
        .max_by_key(|(_, pos, _, _)| *pos);
    let device = context.device.or(traced.map(|(d, ..)| d)).or_else(|| {
        devices
            .iter()
            .copied()
            .max_by_key(|d| reserved_by_device.get(d).copied().unwrap_or(0))
    });
    let traced = traced.filter(|(d, ..)| Some(*d) == device);
    let request = context.request.or(traced.and_then(|(_, _, size, _)| size));
    let device_free = context
        .device_free
        .or(traced.and_then(|(_, _, _, free)| free));

    let mut reserved = 0u64;
    let mut allocated = 0u64;
    let mut awaiting_free = 0u64;
    let mut free_in_cache = 0u64;
    let mut free_pieces = 0usize;
    let mut largest_free: Option<u64> = None;
    let mut segments_seen = 0usize;
    let mut large_segments = 0usize;
    let mut expandable = false;
    let mut by_site: HashMap<u32, Site> = HashMap::new();
    for i in refs {
        // Segments without a device field (PyTorch 2.0 with one device) belong to any device.
        let (seg_device, blocks) = {
            let s = &w.segments[i];
            (s.device, s.blocks.clone())
        };
        if !(device.is_none() || seg_device.is_none() || seg_device == device) {
            continue;
        }
        let large = !w.segments[i].small;
        let list = match &blocks {
            Some(b) => w.block_list(b)?,
            None => Rc::default(),
        };
        // Each block of a shared list counts at each reference.
        w.visit_n(list.count as u64)?;
        free_in_cache = free_in_cache.saturating_add(list.free);
        free_pieces += list.pieces;
        if large {
            largest_free = largest_free.max(list.largest_free);
        }
        for (site, bytes, blocks, largest) in &list.sites {
            let e = by_site.entry(*site).or_insert(Site {
                location: String::new(),
                bytes: 0,
                blocks: 0,
                largest: 0,
            });
            e.bytes = e.bytes.saturating_add(*bytes);
            e.blocks += blocks;
            e.largest = e.largest.max(*largest);
        }
        let (seg_allocated, seg_active, seg_blocks) = (list.allocated, list.active, list.count);
        let s = &w.segments[i];
        segments_seen += 1;
        reserved = reserved.saturating_add(s.total_size);
        large_segments += usize::from(large);
        expandable |= s.expandable;
        // The segment's own totals when its blocks were left out.
        let (seg_allocated, seg_active) = if seg_blocks == 0 {
            let a = s.allocated_size.unwrap_or(0);
            (a, s.active_size.unwrap_or(a))
        } else {
            (seg_allocated, seg_active)
        };
        allocated = allocated.saturating_add(seg_allocated);
        awaiting_free = awaiting_free.saturating_add(seg_active.saturating_sub(seg_allocated));
    }
    let mut sites: Vec<Site> = by_site
        .into_iter()
        .map(|(id, mut site)| {
            site.location = w.sites.get(id as usize).cloned().unwrap_or_default();
            site
        })
        .collect();
    sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.location.cmp(&b.location)));
    let rest = sites.split_off(sites.len().min(SITES));
    let verdict = request.map(|r| verdict(r, largest_free, free_in_cache, device_free));
    Ok(Summary {
        device,
        devices,
        reserved,
        allocated,
        awaiting_free,
        free_in_cache,
        free_pieces,
        largest_free,
        segments: segments_seen,
        large_segments,
        expandable,
        request,
        device_free,
        verdict,
        other_sites: rest.len(),
        other_bytes: rest.iter().fold(0u64, |a, s| a.saturating_add(s.bytes)),
        sites,
        trace_entries: device_traces.iter().map(|t| t.len).sum(),
    })
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

/// Where a frame is, as a site: the last three path components say enough
/// ("models/llama/modeling_llama.py:88 in forward").
fn location(f: &Frame) -> String {
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
                // Frame and file names come from whoever made the snapshot.
                crate::text::escape(&site.location)
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
    /// The hostile pickles of laughs.py: N segments that are all one segment, whose M blocks
    /// are all one block, whose P frames are all one frame.
    fn laughs(n: usize, m: usize, p: usize) -> Vec<u8> {
        fn s(x: &str) -> Vec<u8> {
            let mut b = vec![0x8c, x.len() as u8];
            b.extend_from_slice(x.as_bytes());
            b
        }
        let k = |n: i32| {
            let mut b = vec![b'J'];
            b.extend_from_slice(&n.to_le_bytes());
            b
        };
        let l8 = |n: i64| {
            let mut b = vec![0x8a, 8];
            b.extend_from_slice(&n.to_le_bytes());
            b
        };
        let dup = |count: usize| vec![b'2'; count - 1];
        let mut out = b"\x80\x04}(".to_vec();
        for part in [
            s("filename"),
            s("/x/y/z/train.py"),
            s("line"),
            k(1),
            s("name"),
            s("f"),
            b"u\x940](h\x00".to_vec(),
            dup(p),
            b"e\x94\x30}(".to_vec(),
            s("size"),
            l8(1 << 20),
            s("state"),
            s("active_allocated"),
            s("frames"),
            b"h\x01u\x94\x30](h\x02".to_vec(),
            dup(m),
            b"e\x94\x30}(".to_vec(),
            s("device"),
            k(0),
            s("total_size"),
            l8(1 << 40),
            s("segment_type"),
            s("large"),
            s("blocks"),
            b"h\x03u\x94\x30}(".to_vec(),
            s("segments"),
            b"](h\x04".to_vec(),
            dup(n),
            b"eu.".to_vec(),
        ] {
            out.extend(part);
        }
        out
    }

    #[test]
    fn shared_objects_are_read_once_and_counted_at_each_reference() {
        // 3 KB that expanded to 10^9 frames (U1, H1): each reference counts, nothing is copied.
        let bytes = laughs(1000, 1000, 1000);
        assert!(bytes.len() < 4096);
        let s = read(bytes.as_slice(), None).expect("snapshot");
        assert_eq!(s.segments, 1000);
        assert_eq!(s.allocated, 1_000_000 * MIB);
        assert_eq!(s.sites.len(), 1);
        assert_eq!(s.sites[0].blocks, 1_000_000);
        assert_eq!(s.sites[0].location, ".../y/z/train.py:1 in f");
    }

    #[test]
    fn references_past_the_visit_cap_are_refused() {
        // 25 million block references from 10 KB.
        let e = read(laughs(5000, 5000, 1).as_slice(), None).expect_err("refused");
        assert!(matches!(e, Error::Limit(_)), "{e}");
        assert!(e.to_string().contains("more than 20000000"), "{e}");
    }

    #[test]
    fn frame_names_are_escaped_in_text_and_kept_in_json() {
        let evil = frame(
            "/a/b/c/\u{1b}]2;PWNTITLE\u{7}\u{1b}[2Jevil.py",
            1,
            "\u{1b}]52;c;SGVsbG8=\u{7}fwd\u{202e}gnp\u{9b}2J",
        );
        let bytes = pickle(
            vec![segment(
                0,
                "large",
                vec![block(GIB, "active_allocated", vec![evil])],
            )],
            vec![],
        );
        let s = read(bytes.as_slice(), None).expect("snapshot");
        let text = render(&s, "", None);
        let unsafe_char = |t: &str| t.lines().any(|l| l.chars().any(crate::text::is_unsafe));
        assert!(!unsafe_char(&text), "{text:?}");
        assert!(text.contains(r"\u{1b}]2;PWNTITLE\u{7}"), "{text}");
        assert!(text.contains(r"\u{202e}gnp\u{9b}2J"), "{text}");
        // The JSON keeps the value; written with SafeJson, its bytes carry no control.
        let mut json = Vec::new();
        crate::text::write_json_pretty(&mut json, &Json::new(&s)).expect("json");
        let json = String::from_utf8(json).expect("utf-8");
        assert!(!unsafe_char(&json), "{json:?}");
        let back: serde_json::Value = serde_json::from_str(&json).expect("parse");
        assert_eq!(back["sites"][0]["location"], s.sites[0].location);
    }

    #[test]
    fn archives_and_compressed_files_are_named() {
        let zip = b"PK\x03\x04\x14\x00\x00\x00\x00\x00archive/data.pkl";
        let e = read(&zip[..], None).expect_err("zip");
        assert!(
            e.to_string().contains("zip archive, as torch.save writes"),
            "{e}"
        );
        assert!(e.to_string().contains("_dump_snapshot"), "{e}");
        let e = read(&b"\x1f\x8b\x08\x00\x00\x00"[..], None).expect_err("gzip");
        assert!(e.to_string().contains("gzip-compressed"), "{e}");
    }
}
