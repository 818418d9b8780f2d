//! Recordings: every sample, kept in a compact append-only file that replay, `once --replay`
//! and `log --replay` read back.
//!
//! ## The format (version 2)
//!
//! A recording is a sequence of frames as zstd defines them (RFC 8878), so `zstdcat FILE`
//! prints its samples as JSON lines and skips the rest:
//!
//! 1. A **header**: a skippable frame (magic `0x184D2A50`) whose payload is one JSON object,
//!    `{"format": "gpumon-recording", "version": 1, "hostname": …, "started": …}`.
//! 2. **Segments**, each a zstd frame of JSON lines, one [`Sample`] a line (the model's own
//!    serialisation: `once --json` without its derived `breakdown`, each device's processes
//!    as columns (`mod columns` below); version 1 had them as rows). The frame is flushed
//!    after every line, so a crash or SIGKILL loses at most the sample being written, and a
//!    segment ends (its frame is closed) after [`SEGMENT_SAMPLES`] samples.
//! 3. After each segment, a **trailer**: a skippable frame (magic `0x184D2A51`) of 32 bytes,
//!    little-endian: the first and last sample's time (ms since the epoch, i64), the segment's
//!    compressed length (u64), its sample count (u32) and a CRC-32 of the 28 bytes before it.
//!    Trailers chain backwards from the end of the file, so a reader finds any time by reading
//!    one 40-byte trailer per segment, not the segments.
//!
//! A file that ends without a trailer (the recorder was killed) ends in an open segment: the
//! reader finds the last trailer and decodes what follows it, up to the last whole line.
//! Bounded size: the recorder rotates `FILE` to `FILE.<unix seconds of its first sample>` and
//! removes the oldest rotated files past `--keep` or `--max-size`; a reader of `FILE` reads the
//! rotated files before it, in time order.

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::model::Sample;

/// The header's magic: the first of zstd's skippable-frame magics.
const HEADER_MAGIC: u32 = 0x184D_2A50;
/// A segment trailer's magic.
const TRAILER_MAGIC: u32 = 0x184D_2A51;
const TRAILER_PAYLOAD: usize = 32;
const TRAILER_LEN: u64 = 8 + TRAILER_PAYLOAD as u64;
/// The format's version; a newer file is refused with a clear message. Version 2 writes each
/// device's processes as columns (`mod columns`); version 1 wrote them as rows.
pub const VERSION: u32 = 2;
/// Samples in a segment: a minute at 1 s.
pub const SEGMENT_SAMPLES: u32 = 60;
/// The longest line a reader accepts. A sample of 8 GPUs × 40 processes with every field set
/// and 4 KiB command lines is 1.3 MiB (`the_largest_real_sample_fits_the_line_cap`); a
/// recording is a file from elsewhere (post-mortems are sent around), and 5 KB of zstd can
/// hold a line of 64 MiB that takes 5 GB to read.
const MAX_LINE: usize = 8 << 20;
/// Processes a device may have in a sample read back (NVML lists a few hundred at most).
pub const MAX_PROCESSES: usize = 4096;
/// What one segment may decompress to: its samples, each within [`MAX_LINE`].
const MAX_SEGMENT_BYTES: u64 = (SEGMENT_SAMPLES as u64 + 4) * MAX_LINE as u64;
/// The largest zstd window a reader allows (8 MiB; the writer uses 1 MiB, older versions 4):
/// a frame that asks for more is not ours, and its window would be allocated.
const WINDOW_LOG_MAX: u32 = 23;
/// The latest time a trailer may carry (9999-12-31T23:59:59.999Z, in ms): times outside
/// 1970..=9999 cannot be shown and are not a recorder's.
const MAX_MS: i64 = 253_402_300_799_999;
/// The compression level and the shortest match: level 9 with matches of 6 bytes or more
/// keeps the digits of the figures that move every sample as literals (cheap to code) rather
/// than short matches (dear). Measured on 8 × 40 (benches/record.rs): level 3, 1.69 KiB a
/// sample; 7, 1.13 KiB; 9, about 3% less again for 0.1 ms more a sample.
const LEVEL: i32 = 9;
const MIN_MATCH: u32 = 6;
/// A 1 MiB window (about ten samples of 8 × 40; matches are against the last one) and small
/// match tables: level 9's own (a 4 MiB window, 2^21 and 2^20 entries) took 10 MiB more
/// memory for 2% less size.
const WINDOW_LOG: u32 = 20;
const HASH_LOG: u32 = 17;
const CHAIN_LOG: u32 = 17;

/// Why a recording cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("{path} is not a gpumon recording ({why})")]
    Foreign { path: String, why: String },
    #[error(
        "{path} is a gpumon recording of format version {version}, newer than this gpumon reads \
         ({VERSION}): update gpumon"
    )]
    Future { path: String, version: u32 },
    /// Not a regular file, or not openable (the reason says which).
    #[error("{path}: {why}")]
    NotFile { path: String, why: String },
    #[error("{path} is empty: not a gpumon recording (or one whose recorder has not written yet)")]
    Empty { path: String },
    #[error("{path} holds no readable sample: {why}")]
    Unreadable { path: String, why: String },
}

/// The header's fields.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub hostname: Option<String>,
    /// RFC 3339.
    pub started: String,
    pub gpumon_version: String,
}

/// What a writer keeps to: rotation and pruning.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// All files of the recording together (the current one and the rotated ones).
    pub max_size: u64,
    /// Rotated files older than this are removed.
    pub keep: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_size: 1 << 30,
            keep: Duration::from_secs(7 * 86400),
        }
    }
}

/// Appends samples to a recording.
pub struct Writer {
    path: PathBuf,
    limits: Limits,
    file: Option<File>,
    /// The open segment's compressor, writing into the file.
    segment: Option<zstd::stream::write::Encoder<'static, CountingFile>>,
    first_ms: i64,
    last_ms: i64,
    count: u32,
    /// Where the open segment began.
    segment_start: u64,
    /// The current file's first sample (Unix seconds), for its rotated name.
    file_started: Option<u64>,
    /// Rotate the current file once it is this large.
    rotate_at: u64,
    line: Vec<u8>,
    /// Processes as columns (version 2); false while continuing a version 1 file.
    columns: bool,
    /// Each file is created here, never an existing one or a symlink ([`Writer::create_new`]).
    new_only: bool,
}

/// A file that counts what is written to it (the segment's compressed length).
pub struct CountingFile {
    file: File,
    written: u64,
}

impl Write for CountingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

fn ms(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

fn from_ms(ms: i64) -> SystemTime {
    if ms >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms as u64)
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
    }
}

fn skippable(magic: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + payload.len());
    out.extend_from_slice(&magic.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// A segment's trailer: what a reader needs to find samples by time without decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Trailer {
    first_ms: i64,
    last_ms: i64,
    len: u64,
    count: u32,
}

impl Trailer {
    fn encode(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(TRAILER_PAYLOAD);
        p.extend_from_slice(&self.first_ms.to_le_bytes());
        p.extend_from_slice(&self.last_ms.to_le_bytes());
        p.extend_from_slice(&self.len.to_le_bytes());
        p.extend_from_slice(&self.count.to_le_bytes());
        let crc = crc32(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        skippable(TRAILER_MAGIC, &p)
    }

    fn decode(b: &[u8]) -> Option<Trailer> {
        if b.len() != TRAILER_LEN as usize {
            return None;
        }
        let u32_at = |i: usize| Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?));
        let u64_at = |i: usize| Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?));
        if u32_at(0)? != TRAILER_MAGIC || u32_at(4)? as usize != TRAILER_PAYLOAD {
            return None;
        }
        let p = &b[8..];
        if crc32(&p[..28]) != u32_at(8 + 28)? {
            return None;
        }
        let t = Trailer {
            first_ms: u64_at(8)? as i64,
            last_ms: u64_at(16)? as i64,
            len: u64_at(24)?,
            count: u32_at(32)?,
        };
        // A trailer with times no recorder writes is not believed (the segment is then read
        // without it, its times from its samples).
        let plausible =
            (0..=MAX_MS).contains(&t.first_ms) && (t.first_ms..=MAX_MS).contains(&t.last_ms);
        plausible.then_some(t)
    }
}

/// CRC-32 (IEEE), for the trailers: a torn or foreign trailer is never believed.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

impl Writer {
    /// Appends to the recording at `path` (a file that exists is continued: a new segment
    /// after its last whole one; one that is not a recording is refused).
    pub fn open(path: &Path, limits: Limits) -> io::Result<Writer> {
        Writer::open_with(path, limits, false)
    }

    /// A new recording at `path`, created here: anything already at `path`, a symlink
    /// included, is refused (`O_CREAT | O_EXCL | O_NOFOLLOW`), so a name planted in a shared
    /// directory is never followed.
    pub fn create_new(path: &Path, limits: Limits) -> io::Result<Writer> {
        Writer::open_with(path, limits, true)
    }

    fn open_with(path: &Path, limits: Limits, new_only: bool) -> io::Result<Writer> {
        let mut w = Writer {
            path: path.to_path_buf(),
            limits,
            file: None,
            segment: None,
            first_ms: 0,
            last_ms: 0,
            count: 0,
            segment_start: 0,
            file_started: None,
            rotate_at: (limits.max_size / 8).max(1 << 20),
            line: Vec::with_capacity(64 << 10),
            columns: true,
            new_only,
        };
        w.open_file()?;
        Ok(w)
    }

    fn open_file(&mut self) -> io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut options = std::fs::OpenOptions::new();
        options.append(true);
        if self.new_only {
            options
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        } else {
            // Not blocking on a FIFO (refused below).
            options.create(true).custom_flags(libc::O_NONBLOCK);
        }
        let mut file = options.open(&self.path)?;
        let meta = file.metadata()?;
        if !meta.file_type().is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file (a device, a FIFO or a socket): a recording is a file",
            ));
        }
        lock(&file)?;
        let exists = meta.len() > 0;
        // The samples of an open segment a killed recorder left, to close it properly.
        let mut reclose = Vec::new();
        if exists {
            // Continue a recording after its last whole segment.
            let mut f = File::open(&self.path)?;
            let header = read_header(&mut f, &self.path.display().to_string())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            // A file is continued in its own version's layout.
            self.columns = header.version >= 2;
            let segs = segments(&self.path, &mut f)?;
            if let Some(open) = segs.last().filter(|s| s.open) {
                // Its whole lines, written again as a closed segment where it was, so that
                // the trailers chain across it and zstdcat reads on past it.
                reclose = decode_segment(&self.path, open.clone()).flatten().collect();
                let f = std::fs::OpenOptions::new().write(true).open(&self.path)?;
                f.set_len(open.start)?;
            }
            self.file_started = segs
                .iter()
                .find(|s| !s.open)
                .map(|s| (s.first_ms.max(0) / 1000) as u64)
                .or_else(|| {
                    reclose
                        .first()
                        .map(|s| (ms(s.timestamp).max(0) / 1000) as u64)
                });
        }
        if !exists {
            self.columns = true;
            let header = Header {
                format: "gpumon-recording".into(),
                version: VERSION,
                hostname: crate::collect::host::hostname(),
                started: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
                gpumon_version: env!("CARGO_PKG_VERSION").into(),
            };
            let json = serde_json::to_vec(&header).map_err(io::Error::other)?;
            file.write_all(&skippable(HEADER_MAGIC, &json))?;
            file.flush()?;
        }
        self.file = Some(file);
        if !reclose.is_empty() {
            for s in &reclose {
                self.append(s)?;
            }
            self.close_segment()?;
        }
        Ok(())
    }

    /// Appends one sample, written through to the file before this returns. A process's CPU
    /// share is kept to the unit (the views print no more; its float noise would be most of a
    /// compressed sample).
    pub fn append(&mut self, sample: &Sample) -> io::Result<()> {
        self.line.clear();
        if self.columns {
            serde_json::to_writer(&mut self.line, &columns::SampleColumns::new(sample))
                .map_err(io::Error::other)?;
        } else {
            let noisy = sample
                .devices
                .iter()
                .flat_map(|d| &d.processes)
                .any(|p| p.cpu_percent.is_some_and(|c| c.fract() != 0.0));
            if noisy {
                let mut s = sample.clone();
                for p in s.devices.iter_mut().flat_map(|d| d.processes.iter_mut()) {
                    p.cpu_percent = p.cpu_percent.map(f32::round);
                }
                serde_json::to_writer(&mut self.line, &s).map_err(io::Error::other)?;
            } else {
                serde_json::to_writer(&mut self.line, sample).map_err(io::Error::other)?;
            }
        }
        self.line.push(b'\n');
        let t = ms(sample.timestamp);
        if self.segment.is_none() {
            let Some(file) = self.file.as_ref() else {
                return Err(io::Error::other("the recording is closed"));
            };
            let file = file.try_clone()?;
            let start = file.metadata()?.len();
            self.segment_start = start;
            let mut enc =
                zstd::stream::write::Encoder::new(CountingFile { file, written: 0 }, LEVEL)?;
            enc.include_checksum(false)?;
            for p in [
                zstd::zstd_safe::CParameter::MinMatch(MIN_MATCH),
                zstd::zstd_safe::CParameter::WindowLog(WINDOW_LOG),
                zstd::zstd_safe::CParameter::HashLog(HASH_LOG),
                zstd::zstd_safe::CParameter::ChainLog(CHAIN_LOG),
            ] {
                enc.set_parameter(p)?;
            }
            self.segment = Some(enc);
            self.first_ms = t;
            self.count = 0;
            if self.file_started.is_none() {
                self.file_started = Some((t.max(0) / 1000) as u64);
            }
        }
        let Some(enc) = self.segment.as_mut() else {
            return Ok(());
        };
        enc.write_all(&self.line)?;
        // A block the decoder can read now: a crash loses no more than this sample.
        enc.flush()?;
        self.last_ms = t;
        self.count += 1;
        if self.count >= SEGMENT_SAMPLES {
            self.close_segment()?;
            self.maybe_rotate()?;
        }
        Ok(())
    }

    /// Ends the open segment with its trailer.
    pub fn close_segment(&mut self) -> io::Result<()> {
        let Some(enc) = self.segment.take() else {
            return Ok(());
        };
        let mut counting = enc.finish()?;
        let trailer = Trailer {
            first_ms: self.first_ms,
            last_ms: self.last_ms,
            len: counting.written,
            count: self.count,
        };
        counting.file.write_all(&trailer.encode())?;
        counting.file.flush()?;
        Ok(())
    }

    /// Rotates the current file once it is past its share of `max_size`, and prunes.
    fn maybe_rotate(&mut self) -> io::Result<()> {
        let size = self.path.metadata().map(|m| m.len()).unwrap_or(0);
        if size < self.rotate_at {
            return Ok(());
        }
        let started = self.file_started.unwrap_or(0);
        let rotated = PathBuf::from(format!("{}.{started}", self.path.display()));
        self.file = None;
        std::fs::rename(&self.path, &rotated)?;
        self.file_started = None;
        self.open_file()?;
        self.prune();
        Ok(())
    }

    /// Removes rotated files past `keep`, then the oldest until all fit `max_size`.
    pub fn prune(&self) {
        let mut rotated = rotated_files(&self.path);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let keep = self.limits.keep.as_secs();
        rotated.retain(|(started, p)| {
            if now.saturating_sub(*started) > keep {
                let _ = std::fs::remove_file(p);
                false
            } else {
                true
            }
        });
        let current = self.path.metadata().map(|m| m.len()).unwrap_or(0);
        let mut total: u64 = current
            + rotated
                .iter()
                .map(|(_, p)| p.metadata().map(|m| m.len()).unwrap_or(0))
                .sum::<u64>();
        for (_, p) in &rotated {
            if total <= self.limits.max_size {
                break;
            }
            let len = p.metadata().map(|m| m.len()).unwrap_or(0);
            if std::fs::remove_file(p).is_ok() {
                total = total.saturating_sub(len);
            }
        }
    }
}

/// Takes the recording's writer lock, held while the file is open: two recorders appending
/// to one file interleave their frames, and each one's trailers then chain through the
/// other's data.
fn lock(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this File owns, for as long as it is open.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "another gpumon is recording to this file (two recorders on one file would make it \
             unreadable): stop that one, or record to another file",
        ));
    }
    Err(e)
}

impl Writer {
    /// What SIGKILL leaves: the open segment never closed, the lock released with the
    /// process's descriptors (released here; the descriptors are leaked).
    #[cfg(test)]
    fn crash(self) {
        use std::os::fd::AsRawFd;
        if let Some(file) = &self.file {
            // SAFETY: flock on a descriptor this File owns.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
        }
        std::mem::forget(self);
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.close_segment();
    }
}

/// The rotated files of the recording `path`, oldest first, with the start each is named by.
fn rotated_files(path: &Path) -> Vec<(u64, PathBuf)> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = format!("{name}.");
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let started = n.strip_prefix(&prefix)?.parse::<u64>().ok()?;
            Some((started, e.path()))
        })
        .collect();
    out.sort();
    out
}

fn read_header(f: &mut File, path: &str) -> Result<Header, ReadError> {
    let foreign = |why: &str| ReadError::Foreign {
        path: path.to_owned(),
        why: why.to_owned(),
    };
    let io = |e: io::Error| ReadError::Io {
        path: path.to_owned(),
        source: e,
    };
    f.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut head = [0u8; 8];
    if let Err(e) = f.read_exact(&mut head) {
        return Err(if e.kind() == io::ErrorKind::UnexpectedEof {
            ReadError::Empty {
                path: path.to_owned(),
            }
        } else {
            io(e)
        });
    }
    let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if magic != HEADER_MAGIC || len > 64 << 10 {
        return Err(foreign("no recording header"));
    }
    let mut json = vec![0u8; len];
    f.read_exact(&mut json)
        .map_err(|_| foreign("its header is cut short"))?;
    let header: Header =
        serde_json::from_slice(&json).map_err(|e| foreign(&format!("a bad header: {e}")))?;
    if header.format != "gpumon-recording" {
        return Err(foreign(&format!("format {:?}", header.format)));
    }
    if header.version == 0 {
        return Err(foreign("format version 0, which no gpumon writes"));
    }
    if header.version > VERSION {
        return Err(ReadError::Future {
            path: path.to_owned(),
            version: header.version,
        });
    }
    Ok(header)
}

/// A segment as its trailer describes it, with where its data begins.
#[derive(Debug, Clone)]
struct Segment {
    first_ms: i64,
    last_ms: i64,
    start: u64,
    len: u64,
    /// The open segment at the end of a file whose recorder was killed: no trailer, its times
    /// unknown until it is decoded.
    open: bool,
    /// Samples, as its trailer says.
    count: Option<u32>,
    /// Damage found before it, said once where it is read.
    note: Option<Arc<str>>,
}

impl Segment {
    fn new(start: u64, len: u64) -> Segment {
        Segment {
            first_ms: i64::MIN,
            last_ms: i64::MAX,
            start,
            len,
            open: false,
            count: None,
            note: None,
        }
    }

    /// Holds no readable sample (damaged beyond reading): times are meaningless.
    fn empty(&self) -> bool {
        !self.open && self.first_ms > self.last_ms
    }
}

/// The segments of a file, in order: the closed ones from their trailers (read backwards from
/// the end), and an open one after the last trailer, if any. A stretch the trailers do not
/// reach (a damaged trailer, another writer's data) is walked forward frame by frame
/// ([`scan`]): what is readable there is read, and the damage is said once.
fn segments(path: &Path, f: &mut File) -> io::Result<Vec<Segment>> {
    let size = f.metadata()?.len();
    let data_start = {
        f.seek(SeekFrom::Start(4))?;
        let mut len = [0u8; 4];
        f.read_exact(&mut len)?;
        8 + u64::from(u32::from_le_bytes(len))
    };
    // The end of the last whole segment: the file's end if it ends in a trailer, else the
    // last trailer found looking backwards (within the size an open segment can reach).
    let mut end = size;
    let mut open_from = None;
    if read_trailer(f, end, data_start)?.is_none() {
        end = find_last_trailer(f, data_start, size)?;
        open_from = Some(end);
    }
    let mut closed = Vec::new();
    let mut at = end;
    while at > data_start {
        let Some(t) = read_trailer(f, at, data_start)? else {
            break;
        };
        let start = at - TRAILER_LEN - t.len;
        closed.push(Segment {
            first_ms: t.first_ms,
            last_ms: t.last_ms,
            count: Some(t.count),
            ..Segment::new(start, t.len)
        });
        at = start;
    }
    closed.reverse();
    let mut all = if at > data_start {
        // A broken chain: what is before it is found by walking forward.
        scan(path, f, data_start, at, false)?
    } else {
        Vec::new()
    };
    all.append(&mut closed);
    if let Some(from) = open_from.filter(|from| size > *from) {
        all.extend(scan(path, f, from, size, true)?);
    }
    Ok(all)
}

/// zstd's frame magic, as it is on disk.
const ZSTD_MAGIC: [u8; 4] = 0xFD2F_B528u32.to_le_bytes();

/// The segments in `from..to`, a stretch no trailer chain indexes: found by walking zstd's
/// frames forward. A frame followed by its valid trailer is a segment as the trailer says;
/// one without is read for its times; bytes that are neither (a torn write, another
/// writer's data) are skipped to the next frame, and said. `tail`: the stretch ends the file,
/// so a frame cut at its end is an open segment (a killed recorder), not damage.
fn scan(path: &Path, f: &mut File, from: u64, to: u64, tail: bool) -> io::Result<Vec<Segment>> {
    let shown = crate::text::escape(&path.display().to_string()).into_owned();
    let mut out: Vec<Segment> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut pos = from;
    while pos < to {
        let Some(start) = find_frame(f, pos, to)? else {
            notes.push(format!(
                "{shown}: {} bytes at byte {pos} are not a segment (damaged, or another writer's): skipped",
                to - pos
            ));
            break;
        };
        if start > pos {
            notes.push(format!(
                "{shown}: {} bytes at byte {pos} are not a segment (damaged, or another writer's): skipped",
                start - pos
            ));
        }
        let frame = frame_end(f, start, to)?;
        let mut seg = match frame {
            Some(end) => Segment::new(start, end - start),
            // Cut or overwritten: read up to the next frame.
            None => {
                let next = find_frame(f, start + 4, to)?.unwrap_or(to);
                let mut seg = Segment::new(start, next - start);
                seg.open = tail && next == to;
                seg
            }
        };
        pos = seg.start + seg.len;
        if let Some(end) = frame {
            let trailer = if end + TRAILER_LEN <= to {
                read_trailer(f, end + TRAILER_LEN, from.min(start))?
            } else {
                None
            };
            match trailer.filter(|t| t.len == end - start) {
                Some(t) => {
                    seg.first_ms = t.first_ms;
                    seg.last_ms = t.last_ms;
                    seg.count = Some(t.count);
                    pos = end + TRAILER_LEN;
                }
                None => {
                    if has_magic_at(f, end, to, TRAILER_MAGIC)? {
                        notes.push(format!(
                            "{shown}: a damaged segment trailer at byte {end}: its segment is read \
                             without it"
                        ));
                        pos = (end + TRAILER_LEN).min(to);
                    }
                }
            }
        }
        if !seg.open && seg.count.is_none() {
            // Its times, from its samples.
            let times: Vec<i64> = decode_segment(path, seg.clone())
                .flatten()
                .map(|s| ms(s.timestamp))
                .collect();
            match (times.first(), times.last()) {
                (Some(first), Some(last)) => {
                    seg.first_ms = *first;
                    seg.last_ms = *last;
                }
                _ => {
                    seg.first_ms = i64::MAX;
                    seg.last_ms = i64::MIN;
                }
            }
        }
        if !notes.is_empty() {
            seg.note = Some(Arc::from(notes.join("; ")));
            notes.clear();
        }
        out.push(seg);
    }
    if !notes.is_empty() {
        // Damage after the last segment: said where that stretch ends.
        let mut seg = Segment::new(to, 0);
        seg.first_ms = i64::MAX;
        seg.last_ms = i64::MIN;
        seg.note = Some(Arc::from(notes.join("; ")));
        out.push(seg);
    }
    Ok(out)
}

fn has_magic_at(f: &mut File, at: u64, to: u64, magic: u32) -> io::Result<bool> {
    if at + 4 > to {
        return Ok(false);
    }
    let mut b = [0u8; 4];
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b) == magic)
}

/// Where the next zstd frame starts in `from..to`.
fn find_frame(f: &mut File, from: u64, to: u64) -> io::Result<Option<u64>> {
    const CHUNK: u64 = 1 << 16;
    let mut lo = from;
    while lo + 4 <= to {
        let hi = (lo + CHUNK + 3).min(to);
        let mut buf = vec![0u8; (hi - lo) as usize];
        f.seek(SeekFrom::Start(lo))?;
        f.read_exact(&mut buf)?;
        if let Some(i) = buf.windows(4).position(|w| w == ZSTD_MAGIC) {
            return Ok(Some(lo + i as u64));
        }
        lo += CHUNK;
    }
    Ok(None)
}

/// The end of the zstd frame at `start`, from its header and block headers (RFC 8878 §3.1.1),
/// if it is whole and ends by `to`.
fn frame_end(f: &mut File, start: u64, to: u64) -> io::Result<Option<u64>> {
    let mut read = |at: u64, buf: &mut [u8]| -> io::Result<bool> {
        if at + buf.len() as u64 > to {
            return Ok(false);
        }
        f.seek(SeekFrom::Start(at))?;
        f.read_exact(buf)?;
        Ok(true)
    };
    let mut fhd = [0u8; 1];
    if !read(start + 4, &mut fhd)? {
        return Ok(None);
    }
    let fhd = fhd[0];
    if fhd & 0x08 != 0 {
        return Ok(None); // the reserved bit
    }
    let single = fhd & 0x20 != 0;
    let fcs = match fhd >> 6 {
        0 => u64::from(single),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let dict = [0, 1, 2, 4][usize::from(fhd & 3)];
    let mut at = start + 5 + u64::from(!single) + dict + fcs;
    loop {
        let mut bh = [0u8; 3];
        if !read(at, &mut bh)? {
            return Ok(None);
        }
        let h = u32::from(bh[0]) | u32::from(bh[1]) << 8 | u32::from(bh[2]) << 16;
        let size = u64::from(h >> 3);
        let content = match (h >> 1) & 3 {
            0 | 2 if size <= 1 << 17 => size,
            1 => 1,
            _ => return Ok(None), // reserved, or larger than a block can be
        };
        at += 3 + content;
        if at > to {
            return Ok(None);
        }
        if h & 1 == 1 {
            break;
        }
    }
    if fhd & 0x04 != 0 {
        at += 4; // the content checksum
    }
    Ok((at <= to).then_some(at))
}

/// The trailer that ends at `end`, if one does (and its segment fits after `data_start`).
fn read_trailer(f: &mut File, end: u64, data_start: u64) -> io::Result<Option<Trailer>> {
    if end < data_start + TRAILER_LEN {
        return Ok(None);
    }
    let mut b = [0u8; TRAILER_LEN as usize];
    f.seek(SeekFrom::Start(end - TRAILER_LEN))?;
    f.read_exact(&mut b)?;
    Ok(Trailer::decode(&b).filter(|t| t.len <= end - TRAILER_LEN - data_start))
}

/// The end of the last trailer before `size` (or `data_start` when there is none): a killed
/// recorder leaves an open segment after it.
fn find_last_trailer(f: &mut File, data_start: u64, size: u64) -> io::Result<u64> {
    const CHUNK: u64 = 1 << 16;
    let magic = TRAILER_MAGIC.to_le_bytes();
    let mut hi = size;
    while hi > data_start {
        let lo = hi.saturating_sub(CHUNK).max(data_start);
        // Overlap by a trailer's length, so one across the boundary is seen.
        let read_to = (hi + TRAILER_LEN).min(size);
        let mut buf = vec![0u8; (read_to - lo) as usize];
        f.seek(SeekFrom::Start(lo))?;
        f.read_exact(&mut buf)?;
        for i in (0..buf.len().saturating_sub(3)).rev() {
            if buf[i..i + 4] == magic {
                let end = lo + i as u64 + TRAILER_LEN;
                if end <= size && read_trailer(f, end, data_start)?.is_some() {
                    return Ok(end);
                }
            }
        }
        hi = lo;
    }
    Ok(data_start)
}

/// Opens a recording's file for reading: a regular file only (a FIFO would block, a device
/// never ends).
fn open_file(path: &Path) -> Result<File, ReadError> {
    crate::files::open_regular(path, "a gpumon recording")
        .map(|(f, _)| f)
        .map_err(|e| ReadError::NotFile {
            path: e.path,
            why: e.reason,
        })
}

/// A recording opened for reading: its files (rotated ones first) and their segments.
pub struct Reader {
    pub header: Header,
    files: Vec<(PathBuf, Vec<Segment>)>,
}

/// One sample read back, or why a line could not be.
pub type Item = Result<Sample, String>;

impl Reader {
    /// Opens the recording `path` and the files rotated from it.
    pub fn open(path: &Path) -> Result<Reader, ReadError> {
        let mut paths: Vec<PathBuf> = rotated_files(path).into_iter().map(|(_, p)| p).collect();
        paths.push(path.to_path_buf());
        let mut files = Vec::new();
        let mut header = None;
        for p in paths {
            let shown = p.display().to_string();
            let mut f = match open_file(&p) {
                Ok(f) => f,
                // A rotated file pruned meanwhile.
                Err(_) if p != path && !p.exists() => continue,
                Err(e) => return Err(e),
            };
            let h = read_header(&mut f, &shown)?;
            let segs = segments(&p, &mut f).map_err(|e| ReadError::Io {
                path: shown.clone(),
                source: e,
            })?;
            header = Some(h);
            files.push((p, segs));
        }
        let header = header.ok_or_else(|| ReadError::Empty {
            path: path.display().to_string(),
        })?;
        if files.iter().all(|(_, s)| s.is_empty()) {
            return Err(ReadError::Unreadable {
                path: path.display().to_string(),
                why: "it has a header and nothing after it".into(),
            });
        }
        let reader = Reader { header, files };
        // Every segment damaged beyond reading: say why, rather than "no sample".
        if reader.span().is_none() {
            return Err(reader.unreadable());
        }
        Ok(reader)
    }

    /// Why no sample could be read (when [`Reader::at`] found none): the first damage.
    pub fn unreadable(&self) -> ReadError {
        let path = self
            .files
            .last()
            .map_or_else(String::new, |(p, _)| p.display().to_string());
        let why = self
            .samples()
            .find_map(Result::err)
            .unwrap_or_else(|| "no whole sample in it".into());
        ReadError::Unreadable { path, why }
    }

    fn all(&self) -> impl Iterator<Item = (&PathBuf, &Segment)> + '_ {
        self.files
            .iter()
            .flat_map(|(p, segs)| segs.iter().map(move |s| (p, s)))
    }

    /// Every sample, in order. A damaged line or segment ends its segment (what came before
    /// it is kept) and is reported once as an `Err` item, saying what was lost.
    pub fn samples(&self) -> impl Iterator<Item = Item> + '_ {
        self.all().flat_map(|(p, s)| decode_segment(p, s.clone()))
    }

    /// The samples from the segment holding `from` on (`from` itself, or the first after it,
    /// comes first once the earlier ones of its segment are passed over).
    pub fn samples_from(&self, from: SystemTime) -> impl Iterator<Item = Item> + '_ {
        let t = ms(from);
        self.all()
            .filter(move |(_, s)| s.open || s.last_ms >= t)
            .flat_map(|(p, s)| decode_segment(p, s.clone()))
            .filter(move |i| i.as_ref().map_or(true, |s| ms(s.timestamp) >= t))
    }

    /// The last sample at or before `at` (the sample a clock at `at` shows), or the first one
    /// when `at` is before the recording.
    pub fn at(&self, at: SystemTime) -> Option<Sample> {
        let t = ms(at);
        // The segments that may hold it: the last one starting at or before `t`, and an open
        // one (times unknown).
        let mut best: Option<Sample> = None;
        let all: Vec<(&PathBuf, &Segment)> = self.all().filter(|(_, s)| !s.empty()).collect();
        let idx = all
            .iter()
            .rposition(|(_, s)| !s.open && s.first_ms <= t)
            .unwrap_or(0);
        for (p, s) in all.iter().skip(idx) {
            if !s.open && s.first_ms > t && best.is_some() {
                break;
            }
            for item in decode_segment(p, (*s).clone()).flatten() {
                if ms(item.timestamp) <= t || best.is_none() {
                    best = Some(item);
                } else {
                    return best;
                }
            }
        }
        best
    }

    /// The first and last sample's times, from the trailers (an open segment is decoded).
    pub fn span(&self) -> Option<(SystemTime, SystemTime)> {
        let all: Vec<(&PathBuf, &Segment)> = self.all().filter(|(_, s)| !s.empty()).collect();
        // A closed segment's trailer says its span; an open one is decoded for it.
        let decoded = |p: &PathBuf, s: &Segment| decode_segment(p, s.clone()).flatten();
        let first = all.iter().find_map(|(p, s)| match s.open {
            true => decoded(p, s).next().map(|s| s.timestamp),
            false => Some(from_ms(s.first_ms)),
        })?;
        let last = all.iter().rev().find_map(|(p, s)| match s.open {
            true => decoded(p, s).last().map(|s| s.timestamp),
            false => Some(from_ms(s.last_ms)),
        })?;
        Some((first, last))
    }
}

/// The time `text` names in a recording spanning `first`..=`last`: RFC 3339 (`2026-11-23T03:12:00Z`,
/// `2026-11-23 03:12`, UTC without a zone), a time of day (`03:12`, `03:12:30`, UTC) on the
/// recording's last day (the day before when that is after its end), `-10m` before its end,
/// or `+5m` after its start. A time outside the recording (beyond a second's rounding) is an
/// error that says what it spans: the nearest sample would be from another time.
pub fn resolve_at(text: &str, first: SystemTime, last: SystemTime) -> Result<SystemTime, String> {
    let at = parse_at(text, first, last)?;
    let slack = Duration::from_secs(1);
    let after_start = first.checked_sub(slack).is_none_or(|start| at >= start);
    let before_end = last.checked_add(slack).is_none_or(|end| at <= end);
    if after_start && before_end {
        return Ok(at);
    }
    Err(format!(
        "'{}' is not a time in this recording: it runs from {} to {}",
        crate::text::escape(text),
        humantime::format_rfc3339_seconds(first),
        humantime::format_rfc3339_seconds(last)
    ))
}

fn parse_at(text: &str, first: SystemTime, last: SystemTime) -> Result<SystemTime, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "'{}' is not a time: give 2026-11-23T03:12:00Z, 2026-11-23 03:12, 03:12 (UTC), \
             -10m (before the end) or +5m (after the start)",
            crate::text::escape(text)
        )
    };
    let outside = || {
        format!(
            "'{}' is not a time in this recording: it runs from {} to {}",
            crate::text::escape(text),
            humantime::format_rfc3339_seconds(first),
            humantime::format_rfc3339_seconds(last)
        )
    };
    if let Some(d) = t.strip_prefix('-') {
        let d = humantime::parse_duration(d.trim()).map_err(|_| bad())?;
        return last.checked_sub(d).ok_or_else(outside);
    }
    if let Some(d) = t.strip_prefix('+') {
        let d = humantime::parse_duration(d.trim()).map_err(|_| bad())?;
        return first.checked_add(d).ok_or_else(outside);
    }
    // A time of day: on the last day of the recording.
    let parts: Vec<&str> = t.split(':').collect();
    if (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty() && p.len() <= 2)
    {
        let n = |i: usize| {
            parts
                .get(i)
                .map_or(Ok(0), |p| p.parse::<u64>())
                .map_err(|_| bad())
        };
        let (h, m, sec) = (n(0)?, n(1)?, n(2)?);
        if h > 23 || m > 59 || sec > 59 {
            return Err(bad());
        }
        let last_s = last
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_err(|_| bad())?
            .as_secs();
        let day = last_s - last_s % 86400;
        let mut at = day + h * 3600 + m * 60 + sec;
        if at > last_s + 1 {
            at = at.saturating_sub(86400);
        }
        return Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(at));
    }
    let with_seconds = if t.len() == 16 {
        format!("{t}:00")
    } else {
        t.to_owned()
    };
    humantime::parse_rfc3339_weak(with_seconds.trim_end_matches('Z'))
        .or_else(|_| humantime::parse_rfc3339(t))
        .map_err(|_| bad())
}

/// Version 2's layout, written without building the JSON tree: the sample as the model
/// serialises it, except that each device's `processes`, an array of objects, is one object
/// of columns, each field's values for the device's processes in order (`null` where a
/// process has none). Consecutive samples then differ in a few columns of numbers rather than
/// in every process's row, which is what zstd codes cheaply. The destructuring below names
/// every field, so a field added to the model fails to compile here until it is recorded.
mod columns {
    use std::sync::Arc;
    use std::time::SystemTime;

    use serde::Serialize;

    use crate::model::owner::Owner;
    use crate::model::{
        health::Health, AllocatorStats, Device, Holder, HostStats, Memory, MemoryPeak, MigDevice,
        Process, ProcessKind, Sample, Utilization,
    };

    #[derive(Serialize)]
    pub struct SampleColumns<'a> {
        #[serde(serialize_with = "crate::model::rfc3339")]
        timestamp: SystemTime,
        hostname: &'a Option<String>,
        source: &'a str,
        driver_version: &'a Option<String>,
        cuda_version: &'a Option<String>,
        devices: Vec<DeviceColumns<'a>>,
        error: &'a Option<String>,
        host: &'a Option<HostStats>,
    }

    #[derive(Serialize)]
    struct DeviceColumns<'a> {
        index: u32,
        uuid: &'a Option<String>,
        name: &'a Option<String>,
        pci_bus_id: &'a Option<String>,
        memory: &'a Memory,
        utilization: &'a Utilization,
        temperature_c: Option<u32>,
        power_draw_w: Option<f64>,
        power_limit_w: Option<f64>,
        fan_percent: Option<u32>,
        minor_number: Option<u32>,
        processes: Columns<'a>,
        holders: &'a [Holder],
        processes_error: &'a Option<String>,
        field_errors: &'a std::collections::BTreeMap<&'static str, String>,
        error: &'a Option<String>,
        stalled: bool,
        late: bool,
        data_age_ms: Option<u64>,
        mig: &'a [MigDevice],
        health: &'a Health,
        peak: &'a Option<MemoryPeak>,
        #[serde(skip_serializing_if = "Option::is_none")]
        accounting: &'a Option<crate::model::accounting::Accounting>,
        shared_memory: &'a Option<crate::model::unified::SharedMemory>,
        #[serde(skip_serializing_if = "Option::is_none")]
        container_limit: &'a Option<crate::model::unified::GpuLimit>,
        #[serde(skip_serializing_if = "Option::is_none")]
        soc_gpu: &'a Option<crate::model::unified::SocGpu>,
    }

    /// The columns that rarely change first, those that move every sample last: the
    /// unchanged run before them is then one match for zstd (2% smaller than the model's
    /// order, measured).
    #[derive(Serialize, Default)]
    struct Columns<'a> {
        pid: Vec<u32>,
        kind: Vec<ProcessKind>,
        name: Vec<&'a Option<String>>,
        user: Vec<&'a Option<String>>,
        command: Vec<&'a Option<String>>,
        start_time: Vec<Option<u64>>,
        container: Vec<&'a Option<String>>,
        owner: Vec<&'a Option<Arc<Owner>>>,
        /// Left out where MIG is off (every value `None`).
        #[serde(skip_serializing_if = "all_none")]
        gpu_instance_id: Vec<Option<u32>>,
        #[serde(skip_serializing_if = "all_none")]
        compute_instance_id: Vec<Option<u32>>,
        gpu_memory_bytes: Vec<Option<u64>>,
        host_memory_bytes: Vec<Option<u64>>,
        cpu_percent: Vec<Option<f32>>,
        mem_bw_percent: Vec<Option<u32>>,
        sm_percent: Vec<Option<u32>>,
        allocator: Vec<&'a Option<Box<AllocatorStats>>>,
        /// Left out where accounting is off (every value `None`).
        #[serde(skip_serializing_if = "all_none_u64")]
        peak_bytes: Vec<Option<u64>>,
    }

    fn all_none_u64(v: &[Option<u64>]) -> bool {
        v.iter().all(Option::is_none)
    }

    fn all_none(v: &[Option<u32>]) -> bool {
        v.iter().all(Option::is_none)
    }

    impl<'a> SampleColumns<'a> {
        pub fn new(s: &'a Sample) -> SampleColumns<'a> {
            let Sample {
                timestamp,
                hostname,
                source,
                driver_version,
                cuda_version,
                devices,
                error,
                host,
            } = s;
            SampleColumns {
                timestamp: *timestamp,
                hostname,
                source,
                driver_version,
                cuda_version,
                devices: devices.iter().map(DeviceColumns::new).collect(),
                error,
                host,
            }
        }
    }

    impl<'a> DeviceColumns<'a> {
        fn new(d: &'a Device) -> DeviceColumns<'a> {
            let Device {
                index,
                uuid,
                name,
                pci_bus_id,
                memory,
                utilization,
                temperature_c,
                power_draw_w,
                power_limit_w,
                fan_percent,
                minor_number,
                processes,
                holders,
                processes_error,
                field_errors,
                error,
                stalled,
                late,
                data_age_ms,
                mig,
                health,
                peak,
                accounting,
                shared_memory,
                container_limit,
                soc_gpu,
            } = d;
            DeviceColumns {
                index: *index,
                uuid,
                name,
                pci_bus_id,
                memory,
                utilization,
                temperature_c: *temperature_c,
                power_draw_w: *power_draw_w,
                power_limit_w: *power_limit_w,
                fan_percent: *fan_percent,
                minor_number: *minor_number,
                processes: Columns::new(processes),
                holders,
                processes_error,
                field_errors,
                error,
                stalled: *stalled,
                late: *late,
                data_age_ms: *data_age_ms,
                mig,
                health,
                peak,
                accounting,
                shared_memory,
                container_limit,
                soc_gpu,
            }
        }
    }

    impl<'a> Columns<'a> {
        fn new(processes: &'a [Process]) -> Columns<'a> {
            let mut c = Columns::default();
            for p in processes {
                let Process {
                    pid,
                    kind,
                    gpu_memory_bytes,
                    name,
                    user,
                    command,
                    cpu_percent,
                    host_memory_bytes,
                    start_time,
                    container,
                    owner,
                    sm_percent,
                    mem_bw_percent,
                    allocator,
                    gpu_instance_id,
                    compute_instance_id,
                    peak_bytes,
                    // Not serialised.
                    state: _,
                    parent_pid: _,
                    cgroup: _,
                    // Not recorded per process: the device's `container_limit` is.
                    gpu_limit: _,
                } = p;
                c.gpu_instance_id.push(*gpu_instance_id);
                c.compute_instance_id.push(*compute_instance_id);
                c.pid.push(*pid);
                c.kind.push(*kind);
                c.gpu_memory_bytes.push(*gpu_memory_bytes);
                c.name.push(name);
                c.user.push(user);
                c.command.push(command);
                // Kept to the unit: the views print no more, and its float noise would be
                // most of a compressed sample.
                c.cpu_percent.push(cpu_percent.map(f32::round));
                c.host_memory_bytes.push(*host_memory_bytes);
                c.start_time.push(*start_time);
                c.container.push(container);
                c.owner.push(owner);
                c.sm_percent.push(*sm_percent);
                c.mem_bw_percent.push(*mem_bw_percent);
                c.allocator.push(allocator);
                c.peak_bytes.push(*peak_bytes);
            }
            c
        }
    }
}

/// Version 2's columns ([`columns`]) back to rows (a version 1 line, with rows, is left as it is). A `null` is left
/// out of its row, which deserialises as the absent value it stood for. A device with more
/// than [`MAX_PROCESSES`] processes is refused before its rows are built.
fn to_rows(sample: &mut serde_json::Value) -> Result<(), String> {
    use serde_json::{Map, Value};
    let devices = sample
        .get_mut("devices")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten();
    for d in devices.filter_map(Value::as_object_mut) {
        let Some(processes) = d.remove("processes") else {
            continue;
        };
        let too_many = |n: usize| {
            format!("a device with {n} processes (more than the {MAX_PROCESSES} gpumon reads)")
        };
        let Value::Object(columns) = processes else {
            if let Some(rows) = processes.as_array().filter(|r| r.len() > MAX_PROCESSES) {
                return Err(too_many(rows.len()));
            }
            d.insert("processes".into(), processes);
            continue;
        };
        let n = columns
            .values()
            .filter_map(Value::as_array)
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        if n > MAX_PROCESSES {
            return Err(too_many(n));
        }
        let mut rows = vec![Map::new(); n];
        for (k, col) in columns {
            let Value::Array(values) = col else {
                continue;
            };
            for (row, v) in rows.iter_mut().zip(values) {
                if !v.is_null() {
                    row.insert(k.clone(), v);
                }
            }
        }
        d.insert(
            "processes".into(),
            Value::Array(rows.into_iter().map(Value::Object).collect()),
        );
    }
    Ok(())
}

/// The samples of one segment, decoded as a stream: a segment cut short (a killed recorder)
/// yields its whole lines and stops. The damage noted before it comes first; damage in it ends
/// it, said once with what was lost. Bounded: a line of [`MAX_LINE`], a window of
/// 2^[`WINDOW_LOG_MAX`], [`MAX_SEGMENT_BYTES`] decompressed.
fn decode_segment(path: &Path, s: Segment) -> Box<dyn Iterator<Item = Item>> {
    let shown = crate::text::escape(&path.display().to_string()).into_owned();
    let note = s.note.as_ref().map(|n| Err(n.to_string()));
    if s.len == 0 {
        return Box::new(note.into_iter());
    }
    let cannot = |e: &dyn std::fmt::Display| -> Box<dyn Iterator<Item = Item>> {
        Box::new(
            s.note
                .as_ref()
                .map(|n| Err(n.to_string()))
                .into_iter()
                .chain(std::iter::once(Err(format!("cannot read {shown}: {e}")))),
        )
    };
    let mut file = match open_file(path) {
        Ok(f) => f,
        Err(e) => return cannot(&e),
    };
    if let Err(e) = file.seek(SeekFrom::Start(s.start)) {
        return cannot(&e);
    }
    let limited = file.take(s.len);
    let decoder = match zstd::stream::read::Decoder::new(limited).and_then(|mut d| {
        d.window_log_max(WINDOW_LOG_MAX)?;
        Ok(d.single_frame())
    }) {
        Ok(d) => d,
        Err(e) => return cannot(&e),
    };
    let mut reader = io::BufReader::with_capacity(64 << 10, decoder.take(MAX_SEGMENT_BYTES));
    let mut done = false;
    let mut read = 0u32;
    let open = s.open;
    // What is lost when the segment ends early, from its trailer.
    let lost = move |read: u32| match s.count {
        Some(n) if n > read => format!(
            ": {} of its {n} samples, {} to {}, are lost",
            n - read,
            humantime::format_rfc3339_millis(from_ms(s.first_ms)),
            humantime::format_rfc3339_millis(from_ms(s.last_ms))
        ),
        _ => String::new(),
    };
    let samples = std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut line = Vec::new();
        let result = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line);
        let item = match result {
            Ok(0) if reader.get_ref().limit() == 0 => Err(format!(
                "{shown}: a segment that decompresses to more than {}",
                crate::units::fmt_bytes(MAX_SEGMENT_BYTES)
            )),
            Ok(0) => return None,
            Ok(_) if line.len() > MAX_LINE => Err(format!(
                "{shown}: a sample longer than {} (the largest real one is under 2 MiB)",
                crate::units::fmt_bytes(MAX_LINE as u64)
            )),
            Ok(_) if line.last() != Some(&b'\n') => {
                // The last sample of a killed recorder, cut mid-line: not a sample.
                if open {
                    return None;
                }
                Err(format!("{shown}: a sample is cut short"))
            }
            Ok(_) => match serde_json::from_slice::<serde_json::Value>(&line)
                .map_err(|e| e.to_string())
                .and_then(|mut v| {
                    to_rows(&mut v)?;
                    serde_json::from_value::<Sample>(v).map_err(|e| e.to_string())
                }) {
                // A recording may come from anyone (post-mortems are sent around): its
                // samples pass the one boundary before any view.
                Ok(sample) => {
                    read += 1;
                    return Some(Ok(sample.admit()));
                }
                Err(e) => Err(format!(
                    "{shown}: a damaged sample ({})",
                    crate::files::cut_message(&e, 200)
                )),
            },
            // An open segment ends where the recorder was stopped: not damage.
            Err(_) if open => return None,
            Err(e) => Err(format!("{shown}: a damaged segment ({e})")),
        };
        done = true;
        Some(item.map_err(|e| format!("{e}{}", lost(read))))
    });
    Box::new(note.into_iter().chain(samples))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Device, Memory, Process, ProcessKind};
    use proptest::prelude::*;

    fn sample(t_ms: u64, used: Option<u64>, stalled: bool, pids: &[u32]) -> Sample {
        Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_000 + t_ms),
            hostname: Some("node-7".into()),
            source: "nvml",
            driver_version: Some("550.54.15".into()),
            cuda_version: None,
            devices: vec![Device {
                index: 0,
                name: Some("H100".into()),
                memory: Memory {
                    total_bytes: Some(80 << 30),
                    used_bytes: used,
                    free_bytes: used.map(|u| (80 << 30) - u),
                    reserved_bytes: None,
                },
                stalled,
                error: stalled.then(|| "not responding for 3 s".into()),
                data_age_ms: stalled.then_some(3000),
                processes: pids
                    .iter()
                    .map(|&p| {
                        // Fields present or absent by the pid, so that columns have gaps.
                        let kind = if p % 3 == 0 {
                            ProcessKind::Graphics
                        } else {
                            ProcessKind::Compute
                        };
                        let mut pr = Process::from_nvml(p, kind, (p % 4 != 0).then_some(1 << 30));
                        pr.command = Some(format!("python train.py --rank {p}"));
                        if p % 2 == 0 {
                            pr.user = Some("alice".into());
                            pr.sm_percent = Some(p % 101);
                            pr.cpu_percent = Some((p % 400) as f32);
                        }
                        if p % 5 == 0 {
                            pr.allocator = Some(Box::new(crate::model::AllocatorStats {
                                framework: "pytorch".into(),
                                framework_version: None,
                                allocated_bytes: Some(u64::from(p)),
                                allocated_peak_bytes: None,
                                reserved_bytes: Some(2 * u64::from(p)),
                                reserved_peak_bytes: None,
                                active_bytes: None,
                                inactive_split_bytes: None,
                                num_alloc_retries: Some(0),
                                num_ooms: None,
                                age_ms: 5,
                                run_id: None,
                                steps: None,
                                step_growth: None,
                                step_marker: None,
                                steps_marked: None,
                                held_sites: None,
                            }));
                        }
                        if p % 7 == 0 {
                            let owner = crate::model::owner::Owner::new(
                                crate::model::owner::OwnerKind::Slurm,
                                "81234",
                            );
                            pr.container = Some(owner.container_label());
                            pr.owner = Some(std::sync::Arc::new(owner));
                        }
                        pr
                    })
                    .collect(),
                ..Device::default()
            }],
            error: None,
            host: None,
        }
    }

    fn json(s: &Sample) -> serde_json::Value {
        serde_json::to_value(s).expect("json")
    }

    fn read_all(path: &Path) -> Vec<Sample> {
        Reader::open(path)
            .expect("open")
            .samples()
            .collect::<Result<Vec<_>, _>>()
            .expect("samples")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// What is read back is what was recorded: gaps in time, stalled devices, unknown
        /// values, processes that come and go, across segments.
        #[test]
        fn round_trip(steps in proptest::collection::vec(
            (1u64..5_000, proptest::option::of(0u64..(80 << 30)), any::<bool>(),
             proptest::collection::vec(1u32..4_000_000, 0..5)), 1..150)) {
            let dir = tempfile::tempdir().expect("dir");
            let path = dir.path().join("rec");
            let mut t = 0;
            let mut written = Vec::new();
            {
                let mut w = Writer::open(&path, Limits::default()).expect("writer");
                for (dt, used, stalled, pids) in &steps {
                    t += dt;
                    let s = sample(t, *used, *stalled, pids);
                    w.append(&s).expect("append");
                    written.push(json(&s));
                }
            }
            let read: Vec<serde_json::Value> = read_all(&path).iter().map(json).collect();
            prop_assert_eq!(read, written);
        }
    }

    /// Every line of a recording as JSON, as `zstdcat` prints them.
    fn raw_lines(path: &Path) -> Vec<serde_json::Value> {
        let bytes = std::fs::read(path).expect("read");
        let text = zstd::stream::decode_all(bytes.as_slice()).expect("zstd");
        String::from_utf8(text)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    #[test]
    fn version_1_files_are_read_and_continued_in_their_own_layout() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("v1.rec.zst");
        let old: Vec<Sample> = (0..3)
            .map(|i| sample(i * 1000, Some(i << 30), false, &[10, 14, 35]))
            .collect();
        // What gpumon 0.1 wrote: a version 1 header, one segment of row lines, its trailer.
        let header = serde_json::json!({"format": "gpumon-recording", "version": 1,
            "hostname": "node-7", "started": "2026-11-20T00:00:00Z", "gpumon_version": "0.1.0"});
        let mut file = skippable(HEADER_MAGIC, header.to_string().as_bytes());
        let mut lines = Vec::new();
        for s in &old {
            serde_json::to_writer(&mut lines, s).expect("json");
            lines.push(b'\n');
        }
        let segment = zstd::stream::encode_all(lines.as_slice(), 3).expect("zstd");
        let trailer = Trailer {
            first_ms: ms(old[0].timestamp),
            last_ms: ms(old[2].timestamp),
            len: segment.len() as u64,
            count: 3,
        };
        file.extend_from_slice(&segment);
        file.extend_from_slice(&trailer.encode());
        std::fs::write(&path, file).expect("write");
        let read: Vec<serde_json::Value> = read_all(&path).iter().map(json).collect();
        assert_eq!(read, old.iter().map(json).collect::<Vec<_>>());
        // Continued: the new samples are rows too, so a version 1 reader still reads it all.
        let more = sample(5000, Some(1 << 30), true, &[10, 21]);
        {
            let mut w = Writer::open(&path, Limits::default()).expect("writer");
            w.append(&more).expect("append");
        }
        assert_eq!(read_all(&path).len(), 4);
        assert!(raw_lines(&path)
            .iter()
            .all(|l| l["devices"][0]["processes"].is_array()));
        // A new file is version 2: processes as columns.
        let new = dir.path().join("v2.rec.zst");
        {
            let mut w = Writer::open(&new, Limits::default()).expect("writer");
            w.append(&more).expect("append");
        }
        let lines = raw_lines(&new);
        assert_eq!(
            lines[0]["devices"][0]["processes"]["pid"],
            serde_json::json!([10, 21])
        );
        assert_eq!(
            lines[0]["devices"][0]["processes"]["user"],
            serde_json::json!(["alice", null])
        );
        assert_eq!(json(&read_all(&new)[0]), json(&more));
    }

    #[test]
    fn a_killed_recorder_leaves_every_sample_it_wrote_readable() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("rec");
        let mut w = Writer::open(&path, Limits::default()).expect("writer");
        for i in 0..75 {
            w.append(&sample(i * 1000, Some(i << 20), false, &[1, 2]))
                .expect("append");
        }
        // As SIGKILL leaves it: no segment closed, nothing flushed beyond each append.
        w.crash();
        let read = read_all(&path);
        assert_eq!(read.len(), 75);
        let r = Reader::open(&path).expect("open");
        let (first, last) = r.span().expect("span");
        assert_eq!(
            last.duration_since(first).expect("order"),
            Duration::from_secs(74)
        );
        // Cut mid-sample: the samples before the cut remain.
        let len = path.metadata().expect("meta").len();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        f.set_len(len - 7).expect("truncate");
        let read = Reader::open(&path)
            .expect("open")
            .samples()
            .flatten()
            .count();
        assert!((73..=74).contains(&read), "{read}");
        // And a recorder started again continues the file.
        let mut w = Writer::open(&path, Limits::default()).expect("reopen");
        w.append(&sample(100_000, Some(1), false, &[]))
            .expect("append");
        drop(w);
        let all: Vec<Sample> = Reader::open(&path)
            .expect("open")
            .samples()
            .flatten()
            .collect();
        assert_eq!(all.len(), read + 1);
    }

    #[test]
    fn the_sample_at_a_time_is_the_last_one_at_or_before_it() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("rec");
        let mut w = Writer::open(&path, Limits::default()).expect("writer");
        for i in 0..200u64 {
            w.append(&sample(i * 1000, Some(i << 20), false, &[]))
                .expect("append");
        }
        drop(w);
        let r = Reader::open(&path).expect("open");
        let at = |ms: u64| {
            r.at(SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_000 + ms))
                .and_then(|s| s.devices[0].memory.used_bytes)
        };
        assert_eq!(at(0), Some(0));
        assert_eq!(at(61_500), Some(61 << 20));
        assert_eq!(at(120_000), Some(120 << 20));
        assert_eq!(at(10_000_000), Some(199 << 20), "after the end: the last");
        let before = r
            .at(SystemTime::UNIX_EPOCH)
            .and_then(|s| s.devices[0].memory.used_bytes);
        assert_eq!(before, Some(0), "before the start: the first");
        let from: Vec<u64> = r
            .samples_from(
                SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_000 + 150_000),
            )
            .flatten()
            .filter_map(|s| s.devices[0].memory.used_bytes)
            .collect();
        assert_eq!(from.first(), Some(&(150 << 20)));
        assert_eq!(from.len(), 50);
    }

    #[test]
    fn times_are_read_as_people_type_them() {
        let day = 1_795_000_000 - 1_795_000_000 % 86400;
        let first = SystemTime::UNIX_EPOCH + Duration::from_secs(day + 3600);
        let last = SystemTime::UNIX_EPOCH + Duration::from_secs(day + 5 * 3600);
        let at = |t: &str| {
            resolve_at(t, first, last).map(|s| {
                s.duration_since(SystemTime::UNIX_EPOCH)
                    .expect("after")
                    .as_secs() as i64
                    - day as i64
            })
        };
        assert_eq!(at("03:12"), Ok(3 * 3600 + 12 * 60));
        assert_eq!(at("03:12:30"), Ok(3 * 3600 + 12 * 60 + 30));
        assert_eq!(at("-10m"), Ok(5 * 3600 - 600));
        assert_eq!(at("+5m"), Ok(3600 + 300));
        // Outside the recording: an error that says what it spans, never the nearest sample
        // (the day before's 23:00 is before this one's start); no overflow.
        for outside in [
            "-9h",
            "+5h",
            "23:00",
            "+300000000000y",
            "-300000000000y",
            "00:30",
        ] {
            let e = at(outside).expect_err(outside);
            assert!(
                e.contains("is not a time in this recording: it runs from"),
                "{e}"
            );
        }
        let e = at("2030-01-01T00:00:00Z").expect_err("after");
        assert!(e.contains("runs from"), "{e}");
        let iso = humantime::format_rfc3339_seconds(
            SystemTime::UNIX_EPOCH + Duration::from_secs(day + 7200),
        )
        .to_string();
        assert_eq!(at(&iso), Ok(7200));
        assert_eq!(
            at(&iso.replace('T', " ").trim_end_matches('Z')[..16]),
            Ok(7200)
        );
        for bad in ["", "yesterday", "25:00", "-x", "03:7x"] {
            assert!(at(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rotation_keeps_the_bound() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("rec");
        let limits = Limits {
            max_size: 3 << 20,
            keep: Duration::from_secs(365 * 86400),
        };
        let mut w = Writer::open(&path, limits).expect("writer");
        // Incompressible commands, so the bytes add up fast.
        let mut x: u64 = 1;
        for i in 0..3_000u64 {
            let mut s = sample(i * 1000, Some(i), false, &[1]);
            let noise: String = (0..2000)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(b'a' + (x % 26) as u8)
                })
                .collect();
            s.devices[0].processes[0].command = Some(noise);
            w.append(&s).expect("append");
        }
        drop(w);
        let total: u64 = std::fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
            .sum();
        assert!(total <= (3 << 20) + (1 << 20), "{total} bytes");
        assert!(rotated_files(&path).len() >= 2);
        // What is left reads back, newest last, in order.
        let read = read_all(&path);
        assert!(!read.is_empty());
        assert!(read.windows(2).all(|w| w[0].timestamp < w[1].timestamp));
        assert_eq!(
            read.last().and_then(|s| s.devices[0].memory.used_bytes),
            Some(2999)
        );
    }

    #[test]
    fn bad_files_give_a_clear_error_or_their_readable_part() {
        let dir = tempfile::tempdir().expect("dir");
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("empty"), b"").expect("write");
        assert!(matches!(
            Reader::open(&p("empty")),
            Err(ReadError::Empty { .. })
        ));
        std::fs::write(p("foreign"), b"{\"hello\": 1}\n").expect("write");
        let e = Reader::open(&p("foreign")).err().expect("an error");
        assert!(e.to_string().contains("is not a gpumon recording"), "{e}");
        let future = skippable(
            HEADER_MAGIC,
            br#"{"format":"gpumon-recording","version":9,"hostname":null,"started":"x","gpumon_version":"9"}"#,
        );
        std::fs::write(p("future"), future).expect("write");
        let e = Reader::open(&p("future")).err().expect("an error");
        assert!(e.to_string().contains("format version 9"), "{e}");
        assert!(Reader::open(&p("missing")).is_err());
        // Garbage in the middle of a segment: the samples before it, and an error item.
        let path = p("rec");
        let mut w = Writer::open(&path, Limits::default()).expect("writer");
        for i in 0..150 {
            w.append(&sample(i * 1000, Some(i), false, &[1]))
                .expect("append");
        }
        drop(w);
        let mut bytes = std::fs::read(&path).expect("read");
        let mid = bytes.len() / 2;
        for b in &mut bytes[mid..mid + 64] {
            *b ^= 0x5A;
        }
        std::fs::write(&path, &bytes).expect("write");
        let r = Reader::open(&path).expect("a header and trailers");
        let items: Vec<Item> = r.samples().collect();
        let ok = items.iter().filter(|i| i.is_ok()).count();
        assert!((60..150).contains(&ok), "{ok}");
        // Random bytes after a header: no panic.
        let mut junk = skippable(
            HEADER_MAGIC,
            br#"{"format":"gpumon-recording","version":1,"hostname":null,"started":"x","gpumon_version":"1"}"#,
        );
        junk.extend((0..10_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        std::fs::write(p("junk"), junk).expect("write");
        if let Ok(r) = Reader::open(&p("junk")) {
            let _ = r.samples().count();
            let _ = r.at(SystemTime::now());
        }
    }
    /// A recording built frame by frame: a version 2 header, then for each segment its zstd
    /// frame of `per` samples (one a second from `first` s) and its trailer.
    fn built(segments: usize, per: u64) -> (Vec<u8>, Vec<(std::ops::Range<usize>, usize)>) {
        let header = serde_json::json!({"format": "gpumon-recording", "version": 2,
            "hostname": "node-7", "started": "2026-11-20T00:00:00Z", "gpumon_version": "0.2.0"});
        let mut file = skippable(HEADER_MAGIC, header.to_string().as_bytes());
        let mut where_ = Vec::new();
        for k in 0..segments as u64 {
            let samples: Vec<Sample> = (k * per..(k + 1) * per)
                .map(|i| sample(i * 1000, Some(i << 20), false, &[7]))
                .collect();
            let mut lines = Vec::new();
            for s in &samples {
                serde_json::to_writer(&mut lines, &columns::SampleColumns::new(s)).expect("json");
                lines.push(b'\n');
            }
            let seg = zstd::stream::encode_all(lines.as_slice(), 3).expect("zstd");
            let trailer = Trailer {
                first_ms: ms(samples[0].timestamp),
                last_ms: ms(samples[samples.len() - 1].timestamp),
                len: seg.len() as u64,
                count: samples.len() as u32,
            };
            let start = file.len();
            file.extend_from_slice(&seg);
            where_.push((start..file.len(), file.len()));
            file.extend_from_slice(&trailer.encode());
        }
        (file, where_)
    }

    fn used(items: &[Item]) -> Vec<u64> {
        items
            .iter()
            .flatten()
            .filter_map(|s| s.devices[0].memory.used_bytes.map(|u| u >> 20))
            .collect()
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_records() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("rec");
        let mut first = Writer::open(&path, Limits::default()).expect("first");
        first
            .append(&sample(0, Some(1), false, &[]))
            .expect("append");
        let e = Writer::open(&path, Limits::default())
            .err()
            .expect("refused");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(e.to_string().contains("another gpumon is recording"), "{e}");
        first
            .append(&sample(1000, Some(2), false, &[]))
            .expect("append");
        drop(first);
        // Once the first has stopped, the file is continued.
        let mut second = Writer::open(&path, Limits::default()).expect("second");
        second
            .append(&sample(2000, Some(3), false, &[]))
            .expect("append");
        drop(second);
        assert_eq!(read_all(&path).len(), 3);
    }

    #[test]
    fn a_bad_trailer_crc_hides_nothing_before_it() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("badcrc.rec.zst");
        let (mut file, at) = built(3, 10);
        // One flipped bit in the second segment's trailer's CRC.
        file[at[1].1 + 36] ^= 1;
        std::fs::write(&path, &file).expect("write");
        let r = Reader::open(&path).expect("open");
        let items: Vec<Item> = r.samples().collect();
        assert_eq!(used(&items), (0..30).collect::<Vec<u64>>());
        let damage: Vec<&String> = items.iter().filter_map(|i| i.as_ref().err()).collect();
        assert_eq!(damage.len(), 1, "{damage:?}");
        assert!(
            damage[0].contains("a damaged segment trailer"),
            "{damage:?}"
        );
        // A time in the segment whose trailer is damaged is found there.
        let t = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_000 + s);
        let at5 = r.at(t(15_000)).and_then(|s| s.devices[0].memory.used_bytes);
        assert_eq!(at5, Some(15 << 20));
        assert_eq!(r.span(), Some((t(0), t(29_000))));
    }

    #[test]
    fn foreign_data_between_segments_is_skipped_and_said() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("two.rec.zst");
        let (file, at) = built(3, 10);
        // Another writer's bytes after the first segment's trailer (what two recorders on
        // one file left): the chain from the end breaks there.
        let cut = at[0].1 + TRAILER_LEN as usize;
        let mut mixed = file[..cut].to_vec();
        mixed.extend((0..700u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8));
        mixed.extend_from_slice(&file[cut..]);
        std::fs::write(&path, &mixed).expect("write");
        let items: Vec<Item> = Reader::open(&path).expect("open").samples().collect();
        assert_eq!(used(&items), (0..30).collect::<Vec<u64>>());
        let damage: Vec<&String> = items.iter().filter_map(|i| i.as_ref().err()).collect();
        assert_eq!(damage.len(), 1, "{damage:?}");
        assert!(damage[0].contains("700 bytes at byte"), "{damage:?}");
    }

    #[test]
    fn a_damaged_segment_says_what_was_lost() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("rot.rec.zst");
        let (mut file, at) = built(3, 10);
        let mid = at[1].0.start + at[1].0.len() / 2;
        for b in &mut file[mid..mid + 8] {
            *b ^= 0x5A;
        }
        std::fs::write(&path, &file).expect("write");
        let items: Vec<Item> = Reader::open(&path).expect("open").samples().collect();
        let got = used(&items);
        assert!(got.starts_with(&(0..10).collect::<Vec<u64>>()), "{got:?}");
        assert!(got.ends_with(&(20..30).collect::<Vec<u64>>()), "{got:?}");
        let damage: Vec<&String> = items.iter().filter_map(|i| i.as_ref().err()).collect();
        assert_eq!(damage.len(), 1, "{damage:?}");
        assert!(damage[0].contains("of its 10 samples"), "{damage:?}");
        assert!(damage[0].contains("are lost"), "{damage:?}");
    }

    #[test]
    fn trailer_times_outside_1970_to_9999_are_not_believed() {
        let dir = tempfile::tempdir().expect("dir");
        for (name, first, last) in [
            ("neg", -5000, 9000),
            ("far", 0, MAX_MS + 1),
            ("backwards", 9000, 0),
        ] {
            let path = dir.path().join(name);
            let (mut file, at) = built(2, 10);
            let end = at[0].1;
            let seg = at[0].0.len() as u64;
            let t = Trailer {
                first_ms: first,
                last_ms: last,
                len: seg,
                count: 10,
            };
            file[end..end + TRAILER_LEN as usize].copy_from_slice(&t.encode());
            std::fs::write(&path, &file).expect("write");
            let r = Reader::open(&path).expect("open");
            let (a, b) = r.span().expect("span");
            let secs = |t: SystemTime| {
                t.duration_since(SystemTime::UNIX_EPOCH)
                    .expect("after 1970")
                    .as_millis()
            };
            assert_eq!(secs(a), 1_795_000_000_000, "{name}");
            assert_eq!(secs(b), 1_795_000_019_000, "{name}");
            assert_eq!(r.samples().flatten().count(), 20, "{name}");
        }
    }

    #[test]
    fn too_many_processes_or_too_long_a_line_is_refused_not_read() {
        let dir = tempfile::tempdir().expect("dir");
        let header = serde_json::json!({"format": "gpumon-recording", "version": 2,
            "hostname": null, "started": "x", "gpumon_version": "0.2.0"});
        let line = |n: usize| {
            let mut v =
                serde_json::to_value(columns::SampleColumns::new(&sample(0, Some(1), false, &[])))
                    .expect("json");
            v["devices"][0]["processes"] =
                serde_json::json!({"pid": vec![1; n], "kind": vec!["compute"; n]});
            let mut l = serde_json::to_vec(&v).expect("json");
            l.push(b'\n');
            l
        };
        // 10,000 processes on one device (20 KB), and a 9 MiB line of them.
        for (name, n, says) in [
            ("many", 10_000, "a device with 10000 processes"),
            ("long", 800_000, "a sample longer than 8.0 MiB"),
        ] {
            let l = line(n);
            let seg = zstd::stream::encode_all(l.as_slice(), 19).expect("zstd");
            let mut file = skippable(HEADER_MAGIC, header.to_string().as_bytes());
            file.extend_from_slice(&seg);
            file.extend_from_slice(
                &Trailer {
                    first_ms: 1_795_000_000_000,
                    last_ms: 1_795_000_000_000,
                    len: seg.len() as u64,
                    count: 1,
                }
                .encode(),
            );
            let path = dir.path().join(name);
            std::fs::write(&path, &file).expect("write");
            // Nothing readable: the reason, not "no sample".
            let r = Reader::open(&path).expect("a header and a trailer");
            assert!(r.at(SystemTime::now()).is_none());
            let e = r.unreadable().to_string();
            assert!(e.contains(says), "{name}: {e}");
            assert!(e.contains("holds no readable sample"), "{e}");
        }
    }

    #[test]
    fn the_largest_real_sample_fits_the_line_cap() {
        // 8 GPUs × 40 processes, every field set, 4 KiB command lines.
        let mut s = sample(0, Some(1 << 30), false, &(1..=40).collect::<Vec<u32>>());
        for p in &mut s.devices[0].processes {
            p.command = Some("x".repeat(4096));
            p.name = Some("python3".into());
            p.user = Some("alice".into());
            p.cpu_percent = Some(99.0);
            p.host_memory_bytes = Some(1 << 33);
            p.start_time = Some(1_795_000_000);
            p.sm_percent = Some(50);
            p.mem_bw_percent = Some(20);
        }
        let d = s.devices[0].clone();
        s.devices = (0..8)
            .map(|i| Device {
                index: i,
                ..d.clone()
            })
            .collect();
        let line = serde_json::to_vec(&columns::SampleColumns::new(&s)).expect("json");
        assert!(line.len() < 2 << 20, "{} bytes", line.len());
        assert!(line.len() * 4 < MAX_LINE, "{} bytes", line.len());
    }

    #[test]
    fn only_regular_files_are_recorded_to_and_version_0_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/null", &link).expect("symlink");
        let e = Writer::open(&link, Limits::default())
            .err()
            .expect("a device");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // A new file only: an existing one, or a symlink to a new path, is refused.
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(dir.path().join("victim"), &planted).expect("symlink");
        assert!(Writer::create_new(&planted, Limits::default()).is_err());
        assert!(!dir.path().join("victim").exists());
        let v0 = skippable(
            HEADER_MAGIC,
            br#"{"format":"gpumon-recording","version":0,"hostname":null,"started":"x","gpumon_version":"0"}"#,
        );
        std::fs::write(dir.path().join("v0"), v0).expect("write");
        let e = Reader::open(&dir.path().join("v0"))
            .err()
            .expect("version 0");
        assert!(e.to_string().contains("version 0"), "{e}");
        let e = Reader::open(Path::new("/dev/null"))
            .err()
            .expect("a device");
        assert!(e.to_string().contains("is a device"), "{e}");
    }
}
