//! Reading a file someone else named, safely: a model's `config.json`, a web configuration,
//! a certificate. Only regular files, opened without blocking (a FIFO would wait for a writer
//! forever), and never more than a stated size (`/dev/zero` or a 3 GiB weights file given where
//! a config belongs grew memory without bound). Every error names the file and the limit.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct FileError {
    pub path: String,
    pub reason: String,
}

fn error(path: &Path, reason: impl Into<String>) -> FileError {
    FileError {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// "1.5 MiB": sizes in errors.
fn size(n: u64) -> String {
    crate::units::fmt_bytes(n)
}

/// Opens `path` for reading if it is a regular file; `what` names it in errors ("a
/// config.json").
pub fn open_regular(path: &Path, what: &str) -> Result<(File, u64), FileError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO opened for reading waits for a writer: not with O_NONBLOCK. Reads of a
        // regular file ignore the flag.
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| error(path, format!("cannot open {what}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| error(path, format!("cannot read {what}: {e}")))?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let is = if kind.is_dir() {
            "a directory"
        } else if std::os::unix::fs::FileTypeExt::is_fifo(&kind) {
            "a FIFO"
        } else if std::os::unix::fs::FileTypeExt::is_char_device(&kind)
            || std::os::unix::fs::FileTypeExt::is_block_device(&kind)
        {
            "a device"
        } else if std::os::unix::fs::FileTypeExt::is_socket(&kind) {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(error(path, format!("is {is}, not {what}")));
    }
    Ok((file, meta.len()))
}

/// The whole of `path`, a regular file of at most `max` bytes.
pub fn read_bounded(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, FileError> {
    let (file, len) = open_regular(path, what)?;
    let too_big = |n: u64| {
        error(
            path,
            format!(
                "is {}, more than {what} can be (at most {})",
                size(n),
                size(max)
            ),
        )
    };
    if len > max {
        return Err(too_big(len));
    }
    let mut out = Vec::with_capacity(len as usize);
    // One byte more than allowed tells a file that grew since its size was read.
    file.take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| error(path, format!("cannot read {what}: {e}")))?;
    if out.len() as u64 > max {
        return Err(too_big(out.len() as u64));
    }
    Ok(out)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_text(path: &Path, max: u64, what: &str) -> Result<String, FileError> {
    String::from_utf8(read_bounded(path, max, what)?)
        .map_err(|_| error(path, format!("is not UTF-8 text, so not {what}")))
}

/// An error message cut to `max` characters: a parser quoting a 10 MB file is not a message.
pub fn cut_message(msg: &str, max: usize) -> String {
    if msg.chars().count() <= max {
        msg.to_owned()
    } else {
        let mut s: String = msg.chars().take(max).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_their_limit_are_read() {
        let dir = tempfile::tempdir().expect("dir");
        let small = dir.path().join("config.json");
        std::fs::write(&small, "{}").expect("write");
        assert_eq!(read_text(&small, 10, "a config.json").expect("read"), "{}");
        let big = dir.path().join("weights.bin");
        std::fs::write(&big, vec![0u8; 4096]).expect("write");
        let e = read_bounded(&big, 1024, "a config.json").expect_err("too big");
        assert!(
            e.to_string().contains(
                "weights.bin: is 4.0 KiB, more than a config.json can be (at most 1.0 KiB)"
            ),
            "{e}"
        );
        let e = read_bounded(Path::new("/dev/zero"), 1024, "a config.json").expect_err("device");
        assert!(e.to_string().contains("/dev/zero: is a device"), "{e}");
        let e = read_bounded(dir.path(), 1024, "a config.json").expect_err("dir");
        assert!(e.to_string().contains("is a directory"), "{e}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Returns at once (no writer needed) and refuses it.
        let e = read_bounded(&fifo, 1024, "a config.json").expect_err("fifo");
        assert!(e.to_string().contains("is a FIFO"), "{e}");
        let e = read_bounded(&dir.path().join("none"), 1, "a config.json").expect_err("missing");
        assert!(
            e.to_string().contains("none: cannot open a config.json"),
            "{e}"
        );
        let bin = dir.path().join("bin");
        std::fs::write(&bin, [0xff, 0xfe]).expect("write");
        assert!(read_text(&bin, 10, "a config.json").is_err());
        assert_eq!(cut_message(&"x".repeat(500), 10).chars().count(), 11);
    }
}
