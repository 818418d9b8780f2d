//! The file `log --output` and `run --log` write, kept as a daemon keeps its log:
//! - at open, a last record cut short (a full disk, a crash) is cut off, never appended to;
//!   a file written with other columns or another format is refused, naming both;
//! - the file is reopened when its path no longer names it (logrotate renamed or deleted it:
//!   the inode is compared at each tick) and on request (SIGHUP), and a new or truncated
//!   file gets the header again;
//! - a write that fails (ENOSPC) is cut back to the last whole tick, and the error names the
//!   file.
//!
//! The writer above ([`crate::view::log::LogWriter`]) writes each tick's records and flushes; a
//! flush is a record boundary here.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::view::log::Format;

/// What the first line of a log file must be for these flags to append to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// CSV: the header line, exactly.
    Csv(String),
    /// JSON lines: each record's keys, in this order.
    Jsonl(Vec<String>),
    /// The table: the header's column names.
    Table(Vec<String>),
}

impl Expect {
    pub fn new(format: Format, names: &[&str]) -> Expect {
        let owned = || names.iter().map(|n| (*n).to_owned()).collect();
        match format {
            Format::Csv => Expect::Csv(names.join(",")),
            Format::Jsonl => Expect::Jsonl(owned()),
            Format::Table => Expect::Table(owned()),
        }
    }

    /// Whether `line` (a file's first line, without its newline) is what these flags write.
    fn accepts(&self, line: &str) -> bool {
        match self {
            Expect::Csv(h) => line.trim_end_matches('\r') == h,
            Expect::Table(names) => line.split_whitespace().eq(names.iter().map(String::as_str)),
            Expect::Jsonl(names) => {
                // The same keys (their order is not kept by serde_json's map).
                let Ok(serde_json::Value::Object(map)) = serde_json::from_str(line) else {
                    return false;
                };
                let mut keys: Vec<&String> = map.keys().collect();
                let mut want: Vec<&String> = names.iter().collect();
                keys.sort();
                want.sort();
                keys == want
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Expect::Csv(h) => format!("the CSV header '{h}'"),
            Expect::Jsonl(names) => format!("JSON lines with the keys {}", names.join(",")),
            Expect::Table(names) => format!("a table of {}", names.join(" ")),
        }
    }

    fn has_header(&self) -> bool {
        !matches!(self, Expect::Jsonl(_))
    }
}

/// Why a log file could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum LogFileError {
    #[error("cannot open {path} for appending: {source}")]
    Open { path: String, source: io::Error },
    #[error(
        "{path} holds another log: its first line is '{found}', and these flags write {want}. \
         Give another --output, or move it away"
    )]
    Other {
        path: String,
        found: String,
        want: String,
    },
}

/// The log file; see the module's description.
pub struct LogFile {
    path: PathBuf,
    file: File,
    expect: Expect,
    /// The file's first line (its header), as written into it: written again into a new file.
    header: Option<Vec<u8>>,
    /// Bytes written since the file was opened or its header written (to tell that a new
    /// file needs a header, and a truncated one again).
    fresh: bool,
    /// The file's length after the last whole tick (flush).
    committed: u64,
    /// The next write starts a tick: check whether the file is still ours first.
    tick_start: bool,
    reopen: Arc<AtomicBool>,
}

fn first_line(file: &mut File, len: u64) -> io::Result<String> {
    file.seek(SeekFrom::Start(0))?;
    let mut buf = Vec::with_capacity(len.min(4096) as usize);
    file.take(64 * 1024).read_to_end(&mut buf)?;
    let end = buf.iter().position(|b| *b == b'\n').unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// The length of `file` up to and including its last newline (0 when it has none).
fn last_whole_record(file: &mut File, len: u64) -> io::Result<u64> {
    let mut pos = len;
    let mut chunk = vec![0u8; 64 * 1024];
    while pos > 0 {
        let start = pos.saturating_sub(chunk.len() as u64);
        let n = (pos - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..n])?;
        if let Some(i) = chunk[..n].iter().rposition(|b| *b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        pos = start;
    }
    Ok(0)
}

impl LogFile {
    /// Opens `path` to append `expect`'s records. The returned flag, set (on SIGHUP), has
    /// the file reopened before the next tick. A note about a cut-off record goes to stderr.
    pub fn open(path: &Path, expect: Expect) -> Result<(LogFile, Arc<AtomicBool>), LogFileError> {
        let reopen = Arc::new(AtomicBool::new(false));
        let f = LogFile::open_with(path, expect, Arc::clone(&reopen))?;
        Ok((f, reopen))
    }

    fn open_with(
        path: &Path,
        expect: Expect,
        reopen: Arc<AtomicBool>,
    ) -> Result<LogFile, LogFileError> {
        let shown = path.display().to_string();
        let open_err = |source| LogFileError::Open {
            path: shown.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(open_err)?;
        let mut len = file.metadata().map_err(open_err)?.len();
        if len > 0 {
            let whole = last_whole_record(&mut file, len).map_err(open_err)?;
            if whole < len {
                eprintln!(
                    "gpumon: {shown} ended in a record cut short (a full disk or a crash); \
                     cut it off to append whole records"
                );
                file.set_len(whole).map_err(open_err)?;
                len = whole;
            }
        }
        let mut header = None;
        if len > 0 {
            let line = first_line(&mut file, len).map_err(open_err)?;
            if !expect.accepts(&line) {
                return Err(LogFileError::Other {
                    path: shown,
                    found: crate::files::cut_message(&crate::text::escape(&line), 200),
                    want: expect.describe(),
                });
            }
            if expect.has_header() {
                header = Some([line.as_bytes(), b"\n"].concat());
            }
        }
        Ok(LogFile {
            path: path.to_owned(),
            file,
            expect,
            header,
            fresh: len == 0,
            committed: len,
            tick_start: true,
            reopen,
        })
    }

    /// Whether the writer above must write its header first (a new or emptied file; the
    /// file writes it itself after a rotation, once it has seen it).
    pub fn needs_header(&self) -> bool {
        self.fresh && self.expect.has_header()
    }

    /// At the start of a tick: reopen the path if asked to, or if it no longer names the file
    /// (renamed or deleted by logrotate); notice a file truncated under us (copytruncate).
    fn check(&mut self) -> io::Result<()> {
        let asked = self.reopen.swap(false, Ordering::SeqCst);
        let ours = self.file.metadata()?;
        let moved = match std::fs::metadata(&self.path) {
            Ok(m) => m.ino() != ours.ino() || m.dev() != ours.dev(),
            Err(_) => true,
        };
        if asked || moved {
            let next =
                LogFile::open_with(&self.path, self.expect.clone(), Arc::clone(&self.reopen))
                    .map_err(|e| io::Error::other(e.to_string()))?;
            let header = self.header.take();
            *self = LogFile { header, ..next };
            if self.committed == 0 {
                self.fresh = true;
            }
        } else if ours.len() < self.committed {
            // Truncated in place (copytruncate): the header again.
            self.committed = ours.len();
            self.fresh = ours.len() == 0;
        }
        if self.fresh {
            if let Some(h) = self.header.clone() {
                self.file.write_all(&h)?;
                self.committed += h.len() as u64;
                self.fresh = false;
            }
        }
        Ok(())
    }

    fn named(&self, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("cannot write to {}: {e}", self.path.display()),
        )
    }
}

impl Write for LogFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.tick_start {
            self.check().map_err(|e| self.named(e))?;
            self.tick_start = false;
        }
        if self.fresh && self.header.is_none() && self.expect.has_header() {
            // The first bytes of a fresh file start with its header: keep it for the next.
            let end = buf
                .iter()
                .position(|b| *b == b'\n')
                .map_or(buf.len(), |i| i + 1);
            self.header = Some(buf[..end].to_vec());
        }
        match self.file.write_all(buf) {
            Ok(()) => {
                self.fresh = false;
                Ok(buf.len())
            }
            Err(e) => {
                // Never leave part of a tick: back to the last whole one.
                let _ = self.file.set_len(self.committed);
                self.tick_start = true;
                Err(self.named(e))
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()?;
        self.committed = self
            .file
            .metadata()
            .map(|m| m.len())
            .unwrap_or(self.committed);
        self.tick_start = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv() -> Expect {
        Expect::new(Format::Csv, &["timestamp", "index", "memory.used"])
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).expect("read")
    }

    #[test]
    fn a_record_cut_short_is_cut_off_and_another_log_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("log.csv");
        std::fs::write(&p, "timestamp,index,memory.used\nt1,0,5\nt2,0,").expect("write");
        let (mut f, _) = LogFile::open(&p, csv()).expect("open");
        assert!(!f.needs_header());
        f.write_all(b"t3,0,7\n").expect("write");
        f.flush().expect("flush");
        assert_eq!(read(&p), "timestamp,index,memory.used\nt1,0,5\nt3,0,7\n");
        let other = Expect::new(Format::Csv, &["timestamp", "pid"]);
        let e = LogFile::open(&p, other).err().expect("refused");
        assert!(
            e.to_string()
                .contains("first line is 'timestamp,index,memory.used'"),
            "{e}"
        );
        let jsonl = Expect::new(Format::Jsonl, &["timestamp", "index", "memory.used"]);
        assert!(
            LogFile::open(&p, jsonl).is_err(),
            "JSON lines under a CSV header"
        );
        // A JSON lines file takes records with the same keys.
        let j = dir.path().join("log.jsonl");
        std::fs::write(&j, "{\"timestamp\":\"t\",\"index\":0}\n").expect("write");
        assert!(LogFile::open(&j, Expect::new(Format::Jsonl, &["timestamp", "index"])).is_ok());
        assert!(LogFile::open(&j, Expect::new(Format::Jsonl, &["index"])).is_err());
    }

    #[test]
    fn a_rotated_file_is_reopened_with_its_header_and_sighup_reopens() {
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("log.csv");
        let (mut f, reopen) = LogFile::open(&p, csv()).expect("open");
        assert!(f.needs_header());
        f.write_all(b"timestamp,index,memory.used\nt1,0,5\n")
            .expect("write");
        f.flush().expect("flush");
        // logrotate: rename, then (create) nothing; the next tick starts a new file.
        std::fs::rename(&p, dir.path().join("log.csv.1")).expect("rename");
        f.write_all(b"t2,0,6\n").expect("write");
        f.flush().expect("flush");
        assert_eq!(read(&p), "timestamp,index,memory.used\nt2,0,6\n");
        assert_eq!(
            read(&dir.path().join("log.csv.1")),
            "timestamp,index,memory.used\nt1,0,5\n"
        );
        // Deleted: the same.
        std::fs::remove_file(&p).expect("rm");
        f.write_all(b"t3,0,7\n").expect("write");
        f.flush().expect("flush");
        assert_eq!(read(&p), "timestamp,index,memory.used\nt3,0,7\n");
        // copytruncate: emptied in place; the header again.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .and_then(|h| h.set_len(0))
            .expect("truncate");
        f.write_all(b"t4,0,8\n").expect("write");
        f.flush().expect("flush");
        assert_eq!(read(&p), "timestamp,index,memory.used\nt4,0,8\n");
        // SIGHUP: reopened at once, even in place.
        std::fs::rename(&p, dir.path().join("moved")).expect("rename");
        std::fs::write(&p, "").expect("a new empty file, as logrotate's create makes");
        reopen.store(true, Ordering::SeqCst);
        f.write_all(b"t5,0,9\n").expect("write");
        f.flush().expect("flush");
        assert_eq!(read(&p), "timestamp,index,memory.used\nt5,0,9\n");
    }
}
