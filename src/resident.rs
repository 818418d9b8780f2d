//! Gives back the code and read-only data pages that only start-up used.
//!
//! Start-up runs code the rest of a long run never touches again: the dynamic loader's symbol
//! lookups in every library, the command-line parser, the driver library's initialisation.
//! Those pages stay mapped, and counted in the resident set, for as long as the process lives
//! unless memory runs short. [`release_start_up_pages`] unmaps them at once, as the kernel's
//! own reclaim would under pressure: only mappings of files that hold no private (copied on
//! write) page, so the next access reads exactly the same bytes back from the page cache.
//! The long-running views (dashboard, `log`, `serve`) call it once, after the source has
//! opened; what they run afterwards faults back in, the rest stays out.
//!
//! The kernel maps file pages in blocks (64 KiB of fault-around, or a whole large folio), so
//! what stays out is what lies apart from the code that keeps running: the hot-text linker
//! script (`assets/hot-text`) places the functions the dashboard runs every second first and
//! those it runs only at start after them.
//!
//! Only call it while no other thread loads or unloads a library: a mapping unmapped and
//! replaced between the read of `smaps` and the `madvise` would lose its pages.

/// What [`release_start_up_pages`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Released {
    /// Mappings given back.
    pub mappings: usize,
    /// Their resident size before, in bytes.
    pub bytes: u64,
}

/// One mapping of `/proc/self/smaps`, as far as the decision needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    /// Private, not writable, backed by a file (an inode).
    clean_candidate: bool,
    rss_kb: u64,
    /// Pages of the mapping that are anonymous: copies made on write (relocations, RELRO).
    anonymous_kb: Option<u64>,
}

impl Mapping {
    /// Every page can be read back from its file: no private copy, nothing writable.
    fn releasable(&self) -> bool {
        self.clean_candidate && self.anonymous_kb == Some(0) && self.rss_kb > 0
    }
}

/// Parses `/proc/self/smaps`. A header line is `start-end perms offset dev inode [path]`;
/// the fields after it (`Rss:`, `Anonymous:` …) belong to it until the next header.
fn parse_smaps(text: &str) -> Vec<Mapping> {
    let mut maps: Vec<Mapping> = Vec::new();
    for line in text.lines() {
        if let Some((key, value)) = line.split_once(':') {
            // "Rss:    123 kB" (a key has no '-' or space; a header's first field has '-').
            if !key.contains(['-', ' ']) {
                let kb = value
                    .trim()
                    .strip_suffix("kB")
                    .and_then(|v| v.trim().parse::<u64>().ok());
                if let (Some(m), Some(kb)) = (maps.last_mut(), kb) {
                    match key {
                        "Rss" => m.rss_kb = kb,
                        "Anonymous" => m.anonymous_kb = Some(kb),
                        _ => {}
                    }
                }
                continue;
            }
        }
        let mut fields = line.split_ascii_whitespace();
        let (Some(range), Some(perms), Some(_offset), Some(_dev), Some(inode)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        let perms = perms.as_bytes();
        let clean_candidate = perms.len() == 4
            && perms[0] == b'r'
            && perms[1] == b'-'
            && perms[3] == b'p'
            && inode != "0"
            && fields.next().is_some_and(|p| p.starts_with('/'));
        maps.push(Mapping {
            start,
            end,
            clean_candidate,
            rss_kb: 0,
            anonymous_kb: None,
        });
    }
    maps
}

/// Unmaps the resident pages of every private, read-only file mapping of this process that
/// holds no private copy of a page (code and read-only data of the binary and its libraries).
/// Nothing changes for the program: the next access maps the same page again from the page
/// cache. Errors (no /proc, a mapping that changed meanwhile) leave the pages where they are.
pub fn release_start_up_pages() -> Released {
    let Ok(text) = std::fs::read_to_string("/proc/self/smaps") else {
        return Released::default();
    };
    let mut released = Released::default();
    for m in parse_smaps(&text).iter().filter(|m| m.releasable()) {
        // SAFETY: the range is a whole mapping of this process, read-only and private, with no
        // anonymous (copied) page, so discarding its pages loses nothing: a later access
        // faults the file's unchanged bytes back in, as after reclaim. MADV_DONTNEED does not
        // unmap the range itself. A failure (the mapping changed since smaps was read) is
        // harmless and ignored.
        let rc = unsafe {
            libc::madvise(
                m.start as *mut libc::c_void,
                m.end - m.start,
                libc::MADV_DONTNEED,
            )
        };
        if rc == 0 {
            released.mappings += 1;
            released.bytes += m.rss_kb * 1024;
        }
    }
    released
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as /proc/self/smaps writes them (fields trimmed to those that matter, plus a few
    /// that must be skipped).
    const SMAPS: &str = "\
5581a0000000-5581a0100000 r--p 00000000 fd:01 1311 /usr/bin/gpumon
Size:               1024 kB
Rss:                 400 kB
Anonymous:             0 kB
VmFlags: rd mr mw me
5581a0100000-5581a0500000 r-xp 00100000 fd:01 1311 /usr/bin/gpumon
Size:               4096 kB
Rss:                1800 kB
Anonymous:             0 kB
THPeligible:    0
5581a0500000-5581a0540000 r--p 00500000 fd:01 1311 /usr/bin/gpumon
Size:                256 kB
Rss:                 184 kB
Anonymous:           184 kB
5581a0540000-5581a0544000 rw-p 00540000 fd:01 1311 /usr/bin/gpumon
Size:                 16 kB
Rss:                  16 kB
Anonymous:            16 kB
5581a1000000-5581a1200000 rw-p 00000000 00:00 0                          [heap]
Rss:                1200 kB
Anonymous:          1200 kB
7f0000000000-7f0000010000 r--s 00000000 00:05 77 /dev/shm/x
Rss:                  64 kB
Anonymous:             0 kB
7f0000100000-7f0000200000 r-xp 00028000 fd:01 2222 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 900 kB
Anonymous:             0 kB
7f0000300000-7f0000301000 r--p 00000000 fd:01 3333 /usr/lib/libnever-touched.so
Rss:                   0 kB
Anonymous:             0 kB
7f0000400000-7f0000401000 r--p 00000000 fd:01 4444 /usr/lib/libold-kernel.so
Rss:                   4 kB
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   8 kB
Anonymous:             0 kB
";

    #[test]
    fn only_clean_private_read_only_file_mappings_are_released() {
        let maps = parse_smaps(SMAPS);
        assert_eq!(maps.len(), 10);
        let released: Vec<(usize, u64)> = maps
            .iter()
            .filter(|m| m.releasable())
            .map(|m| (m.start, m.rss_kb))
            .collect();
        // The binary's read-only data and code, and libc's code. Not: the RELRO pages (read-only
        // now, but relocated: copies), data, heap, a shared mapping, a mapping with nothing
        // resident, one whose anonymous share is unknown, the vDSO.
        assert_eq!(
            released,
            vec![
                (0x5581_a000_0000, 400),
                (0x5581_a010_0000, 1800),
                (0x7f00_0010_0000, 900)
            ]
        );
        assert_eq!(maps[1].end, 0x5581_a050_0000);
    }

    #[test]
    fn odd_smaps_text_is_no_mapping() {
        assert!(parse_smaps("").is_empty());
        assert!(parse_smaps("Rss: 4 kB\nnot a header\nzz-yy r-xp 0 0:0 1 /x\n").is_empty());
        // A path with spaces still counts as a path.
        let m = parse_smaps(
            "1000-2000 r-xp 00000000 fd:01 9 /opt/my tools/lib.so\nRss: 4 kB\nAnonymous: 0 kB\n",
        );
        assert!(m[0].releasable());
    }
}
