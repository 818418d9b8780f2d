//! A device's memory as a program printed it at start-up, before it failed: hashcat's and
//! xmrig's device lists, an OpenCL program's device info, `clinfo`. Their failures print no
//! figure of their own (a status, "out of memory"); the lines above them give the device's
//! size, the largest single allocation it allows and what was free when the program started.
//!
//! Read line by line as the scanner passes them ([`read_line`]), kept per device
//! ([`Banners`]), and taken by a failure that printed none ([`Banners::for_device`]). The free
//! memory is the start-up's, never the failure's: kept apart (`Facts::startup_free_bytes`).

/// What one start-up line (or a device's run of lines) says of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Banner {
    /// The device's index where the program prints one that is the API's (xmrig's "CUDA GPU
    /// #6"); `None` where it prints its own numbering (hashcat's "Device #2" counts every
    /// backend's devices from 1) or none.
    pub device: Option<u32>,
    pub total: Option<u64>,
    pub free: Option<u64>,
    /// The largest single allocation the device allows (OpenCL's
    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`).
    pub max_alloc: Option<u64>,
}

impl Banner {
    fn is_empty(&self) -> bool {
        self.total.is_none() && self.free.is_none() && self.max_alloc.is_none()
    }

    /// How many of its figures it gives.
    fn known(&self) -> usize {
        [self.total, self.free, self.max_alloc]
            .iter()
            .filter(|f| f.is_some())
            .count()
    }

    /// This account, its gaps filled from `other`'s.
    fn filled_from(self, other: &Banner) -> Banner {
        Banner {
            total: self.total.or(other.total),
            free: self.free.or(other.free),
            max_alloc: self.max_alloc.or(other.max_alloc),
            ..self
        }
    }

    /// Whether `other` says nothing against this one: each figure both give is the same.
    fn agrees(&self, other: &Banner) -> bool {
        let same = |a: Option<u64>, b: Option<u64>| a.zip(b).is_none_or(|(a, b)| a == b);
        same(self.total, other.total)
            && same(self.free, other.free)
            && same(self.max_alloc, other.max_alloc)
    }
}

const MIB: u64 = 1 << 20;

/// Capture `i`, a whole number of MiB, in bytes.
pub(super) fn mib(c: &regex::Captures, i: usize) -> Option<u64> {
    c.get(i)?.as_str().parse::<u64>().ok()?.checked_mul(MIB)
}

// hashcat's device list (`src/backend.c`, `backend_session_begin` … `event_log_info`): before
// 6.0 "* Device #2: Hawaii, 2047/4096 MB allocatable, 40MCU", the largest allocation
// (`device_maxmem_alloc`) over the device's memory (`device_global_mem`); from 6.0 "* Device
// #1: GeForce RTX 2060, 5120/6144 MB (1536 MB allocatable), 30MCU" on OpenCL and "* Device #1:
// NVIDIA GeForce RTX 2070, 6744/8192 MB, 36MCU" on CUDA and HIP, the memory free when it
// started (`device_available_mem`) over the device's, then the largest allocation. 3.x printed
// "- Device #1:" in the same form.
re!(
    hashcat_old_re,
    r"[*-] Device #\d{1,3}: [^\n]{1,200}?, (\d{1,9})/(\d{1,9}) MB allocatable, \d{1,5} ?MCU"
);
re!(
    hashcat_re,
    r"\* Device #\d{1,3}: [^\n]{1,200}?, (\d{1,9})/(\d{1,9}) MB(?: \((\d{1,9}) MB allocatable\))?, \d{1,5} ?MCU"
);
// `hashcat -I` (its backend information) before 6.0: "Memory : 492/1968 MB allocatable", the
// largest allocation over the device's memory; from 6.0 "Memory.Total...: 6143 MB (limited to
// 1535 MB allocatable in one block)" (the total read as a key below).
re!(
    hashcat_info_re,
    r"\bMemory\s*:\s*(\d{1,9})/(\d{1,9}) MB allocatable\b"
);
re!(
    hashcat_limited_re,
    r"\(limited to (\d{1,9}) MB allocatable in one block\)"
);
// xmrig's CUDA backend lists each device as it starts ("CUDA GPU #6 09:00.0 NVIDIA GeForce RTX
// 3070 1905/7001 MHz smx:46 arch:86 mem:6686/8192 MB"): `CudaDevice::freeMemSize()` over
// `globalMemSize()`, the driver's free and total memory, the index CUDA's.
re!(
    xmrig_cuda_re,
    r"\bCUDA GPU\s{1,8}#(\d{1,2})\b[^\n]{0,200}?\bmem:(\d{1,9})/(\d{1,9}) MB\b"
);
// ethminer and its forks (kawpowminer) as they open each CUDA device: "cuda-0    Using Pci Id :
// 0c:00.0 NVIDIA GeForce GTX 1650 SUPER (Compute 7.5) Memory : 3.81 GB" (`CUDAMiner.cpp`,
// the device's total memory through `dev::getFormattedMemory`, powers of 1024), CUDA's index.
re!(
    ethminer_re,
    r"\bcuda-(\d{1,2})\s+Using Pci Id\s*:[^\n]{0,200}?\bMemory\s*:\s*(\d{1,6}(?:\.\d{1,3})?) ?GB\b"
);
// Genoil's ethminer (`libethash-cuda/ethash_cuda_miner.cpp`): "Found suitable CUDA device
// [GeForce GTX 760] with 2147483648 bytes of GPU memory" (bytes; its own count of devices, so
// no index).
re!(
    genoil_re,
    r"\bFound suitable CUDA device \[[^\]\n]{1,120}\] with (\d{1,20}) bytes of GPU memory\b"
);
// VanitySearch's device list (`GPUEngine::PrintCudaInfo`, `-l`): "GPU #0 GRID A100D-8C (108x64
// cores) (Cap 8.0) (8187.9 MB) (Multiple host threads)", CUDA's index and `totalGlobalMem` in
// MiB.
re!(
    vanitysearch_re,
    r"\bGPU #(\d{1,2}) [^\n]{1,120}?\(\d{1,5}x\d{1,5} cores\) \(Cap \d{1,2}\.\d{1,2}\) \((\d{1,7}(?:\.\d{1,3})?) MB\)"
);
// NBMiner as each device starts: "Device 0 started, Free mem = 5012 MB." (MiB, CUDA's index).
re!(
    nbminer_re,
    r"\bDevice (\d{1,2}) started, Free mem = (\d{1,9}) MB\b"
);
// profanity's device list ("GPU0: GeForce GTX 1060 3GB, 3157000192 bytes available, 9 compute
// units", forks "GPU-0: …"): CL_DEVICE_GLOBAL_MEM_SIZE in bytes, its own numbering of the
// OpenCL devices it found.
re!(
    profanity_re,
    r"\bGPU-?\d{1,2}: [^\n]{1,200}?, (\d{1,20}) bytes available, \d{1,5} compute units\b"
);
// A device-info line, "key: size", at the line's start (after a bullet or an indent): OpenCL
// programs print `CL_DEVICE_GLOBAL_MEM_SIZE` and `CL_DEVICE_MAX_MEM_ALLOC_SIZE` under their own
// names ("device memory: 24217 MB, max_mem_alloc_size: 6054 MB", "CL_DEVICE_GLOBAL_MEM_SIZE:
// 4096 MByte"), `clinfo` as "Global memory size  8589934592 (8GiB)" and "Max memory allocation
// 2147483648 (2GiB)", CUDA programs `cudaDeviceProp::totalGlobalMem` ("Total global memory:
// 8 GB"), hashcat's `-I` "Memory.Total...: 6143 MB", and a device list's "…, Detected total
// memory: 2048 MB" after a comma (NoncerPro's "GPU#0, Name: GeForce GT 740M, …"). Keys only: a failure's own sentence
// ("failed to allocate device memory: …") is no such line (see [`read_line`]).
const KEY_SIZE: &str =
    r"\s*(?:[:=]|\.{2,}:?)?\s*(\d+(?:\.\d+)?)\s?(bytes|[KMGT]i?B(?:yte)?s?|[KMGT]\b)?";
re!(
    key_total_re,
    format!(
        r"(?i)^[\s*#|>-]{{0,8}}(?:cl_device_global_mem_size|global[ _]mem(?:ory)?(?:[ _]size)?|total[ _]global[ _]mem(?:ory)?|totalglobalmem|device[ _]memory|memory\.total){KEY_SIZE}"
    )
);
re!(
    key_total_listed_re,
    format!(r"(?i)\bGPU ?#?\d{{1,2}},[^\n]{{0,160}}?,\s(?:detected\s)?total[ _]memory{KEY_SIZE}")
);
re!(
    key_alloc_re,
    format!(
        r"(?i)(?:^[\s*#|>-]{{0,8}}|,\s)(?:cl_device_max_mem_alloc_size|max[ _]mem[ _]alloc(?:ation)?(?:[ _]size)?|max(?:imum)? memory allocation(?: size)?){KEY_SIZE}"
    )
);
// lolMiner's device list ("Device 0:" then "    Memory:  6044 MByte"): a bare "Memory:" key is
// read only with the unit spelled as these lists spell it.
re!(
    key_memory_re,
    r"(?i)^[\s*#|>-]{0,8}memory:\s*(\d+(?:\.\d+)?)\s?([MG]Byte)s?\b"
);
// lolMiner's header over each device's keys, alone on its line ("Device 0:"): its own
// numbering, which its failures use too ("GPU 0: insufficient memory for DAG epoch 381.").
re!(device_header_re, r"^[\s*#|>-]{0,8}Device (\d{1,2}):\s*$");

// The first words of each account above (a list's "* Device #1:", xmrig's "CUDA GPU #0",
// profanity's "GPU0:", a key at the line's start): a line that has them and reads nothing may
// have its figures wrapped onto the next line.
re!(
    head_re,
    r"(?i)[*-] Device #\d|\bCUDA GPU\s{1,8}#\d|\bUsing Pci Id\b|\bFound suitable CUDA device\b|\bGPU#\d{1,2}, Name:|\bDevice \d{1,2} started\b|\bGPU-?\d{1,2}: |\bMemory\s*:|^[\s*#|>-]{0,8}(?:cl_device_\w+|global[ _]mem|total[ _]global|totalglobalmem|device[ _]memory|memory\.(?:total|free)|max[ _]mem|max(?:imum)? memory|free[ _]mem)"
);

/// Whether `line` starts a device's account whose figures may be on the next line (a paste
/// re-wrapped narrower than the list): after a log's prefix where there is one.
pub fn may_go_on(line: &str) -> bool {
    head_re().is_match(line)
        || head_re().is_match(&super::clean::unmark(&super::clean::without_log_prefix(
            line,
        )))
}

/// The device a header line names (lolMiner's "Device 0:"), for the key lines under it; after
/// a log's prefix where there is one.
pub fn device_header(line: &str) -> Option<u32> {
    let number = |l: &str| -> Option<u32> {
        device_header_re()
            .captures(l)?
            .get(1)?
            .as_str()
            .parse()
            .ok()
    };
    // As pasted: after a log's prefix, or inside markdown's code spans or bold.
    number(line).or_else(|| {
        number(&super::clean::unmark(&super::clean::without_log_prefix(
            line,
        )))
    })
}

// The free memory as a key: a start-up line's "free memory: N", nvidia-smi's "memory.free",
// a program's own check before it loads ("RAD paged load recommended: model=10304.2 MB, free
// VRAM=11815.5 MB", LichtFeld Studio), at the line's start, or that one after a comma.
re!(
    key_free_re,
    format!(
        r"(?i)(?:^[\s*#|>-]{{0,8}}(?:free[ _]mem(?:ory)?|memory\.free|free[ _]vram)|,\sfree[ _]vram){KEY_SIZE}"
    )
);

/// A key's size: a number with its unit, or a count of bytes where none follows (`clinfo`'s
/// "8589934592 (8GiB)": the exact count first). A bare number too small to be bytes is not read.
fn key_size(c: &regex::Captures) -> Option<u64> {
    let n = c.get(1)?.as_str();
    let Some(unit) = c.get(2) else {
        return n.parse::<u64>().ok().filter(|b| *b >= MIB);
    };
    // Binary multiples whatever the spelling (MB, MiB, MByte, mb), as the frameworks print.
    let unit = match unit.as_str().to_ascii_lowercase().chars().next()? {
        'k' => "KiB",
        'm' => "MiB",
        'g' => "GiB",
        't' => "TiB",
        _ => "bytes",
    };
    crate::units::parse_size(&format!("{n} {unit}"))
}

/// A device list's line in a fixed format: its pattern, and what its captures say.
type ListRule = (
    fn() -> &'static super::lazy::LazyRegex,
    fn(&regex::Captures) -> Banner,
);

/// The device lists' fixed formats, tried in order (hashcat's before 6.0 first: its line would
/// also pass for the later one).
const LISTS: &[ListRule] = &[
    (hashcat_old_re, |c| Banner {
        max_alloc: mib(c, 1),
        total: mib(c, 2),
        ..Banner::default()
    }),
    (hashcat_re, |c| Banner {
        free: mib(c, 1),
        total: mib(c, 2),
        max_alloc: mib(c, 3),
        ..Banner::default()
    }),
    (hashcat_info_re, |c| Banner {
        max_alloc: mib(c, 1),
        total: mib(c, 2),
        ..Banner::default()
    }),
    (ethminer_re, |c| Banner {
        device: c.get(1).and_then(|m| m.as_str().parse().ok()),
        total: c
            .get(2)
            .and_then(|m| crate::units::parse_size(&format!("{} GiB", m.as_str()))),
        ..Banner::default()
    }),
    (vanitysearch_re, |c| Banner {
        device: c.get(1).and_then(|m| m.as_str().parse().ok()),
        total: c
            .get(2)
            .and_then(|m| crate::units::parse_size(&format!("{} MiB", m.as_str()))),
        ..Banner::default()
    }),
    (genoil_re, |c| Banner {
        total: c.get(1).and_then(|m| m.as_str().parse().ok()),
        ..Banner::default()
    }),
    (nbminer_re, |c| Banner {
        device: c.get(1).and_then(|m| m.as_str().parse().ok()),
        free: mib(c, 2),
        ..Banner::default()
    }),
    (profanity_re, |c| Banner {
        total: c.get(1).and_then(|m| m.as_str().parse().ok()),
        ..Banner::default()
    }),
    (xmrig_cuda_re, |c| Banner {
        device: c.get(1).and_then(|m| m.as_str().parse().ok()),
        free: mib(c, 2),
        total: mib(c, 3),
        ..Banner::default()
    }),
];

/// What `line` (a log line as printed, not a failure's) says of a device at start-up.
pub fn read_line(line: &str) -> Option<Banner> {
    read(line).map(|(b, _)| b)
}

/// [`read_line`], and whether the line is a key line (which may continue on the next).
fn read(line: &str) -> Option<(Banner, bool)> {
    let listed = LISTS
        .iter()
        .find_map(|(re, read)| re().captures(line).map(|c| read(&c)));
    if let Some(b) = listed {
        return Some((b, false));
    }
    let b = Banner {
        total: key_total_re()
            .captures(line)
            .or_else(|| key_total_listed_re().captures(line))
            .or_else(|| key_memory_re().captures(line))
            .and_then(|c| key_size(&c)),
        max_alloc: key_alloc_re()
            .captures(line)
            .and_then(|c| key_size(&c))
            .or_else(|| hashcat_limited_re().captures(line).and_then(|c| mib(&c, 1))),
        free: key_free_re().captures(line).and_then(|c| key_size(&c)),
        device: None,
    };
    (!b.is_empty()).then_some((b, true))
}

/// The most devices' accounts a scan keeps.
const KEPT: usize = 16;

/// The start-up accounts a log has given so far, the last 16 (`KEPT`).
#[derive(Debug, Default)]
pub struct Banners {
    seen: Vec<Banner>,
    /// The last account came from key lines, which later key lines may add to (`clinfo` gives
    /// one key a line, with lines of other keys between).
    open_keys: bool,
}

impl Banners {
    /// Notes what `line` says: `None` where it says nothing, else whether it opened a new
    /// account from key lines that names no device: the caller may name it from a header above
    /// ([`Banners::name_last`]).
    pub fn note(&mut self, line: &str) -> Option<bool> {
        // The keys start their line, after a log's prefix where there is one.
        // As pasted: after a log's prefix, or inside markdown's code spans or bold.
        // The line as it is may already read in part (a key after a comma needs no line start:
        // "gpu-node-07: device memory: 24217 MB, max_mem_alloc_size: 6054 MB"): the reading
        // that gives more wins.
        let found = read(line);
        let bare = super::clean::without_log_prefix(line);
        let bare = super::clean::unmark(&bare);
        let found = match (
            found,
            (bare.len() != line.len()).then(|| read(&bare)).flatten(),
        ) {
            (Some(a), Some(b)) if b.0.known() > a.0.known() => Some(b),
            (a, b) => a.or(b),
        };
        let (b, keys) = found?;
        // A key line after another adds to the same device's account, until a figure repeats
        // (the next device's list). Lines that say nothing change nothing, so that the
        // scanner may skip them.
        if keys && self.open_keys {
            if let Some(last) = self.seen.last_mut() {
                let free = |a: Option<u64>, b: Option<u64>| a.is_none() || b.is_none();
                if free(last.total, b.total)
                    && free(last.free, b.free)
                    && free(last.max_alloc, b.max_alloc)
                {
                    last.total = last.total.or(b.total);
                    last.free = last.free.or(b.free);
                    last.max_alloc = last.max_alloc.or(b.max_alloc);
                    return Some(false);
                }
            }
        }
        if self.seen.len() >= KEPT {
            self.seen.remove(0);
        }
        self.seen.push(b);
        self.open_keys = keys;
        Some(keys && b.device.is_none())
    }

    /// Names the device of the last account, where it names none.
    pub fn name_last(&mut self, device: u32) {
        if let Some(last) = self.seen.last_mut() {
            last.device = last.device.or(Some(device));
        }
    }

    /// The account for a failure on `device` (its index as the failure names it): the one
    /// account with that index, else the account every device's agrees with (one device, or
    /// several alike); `None` where they differ and nothing tells which.
    pub fn for_device(&self, device: Option<u32>) -> Option<Banner> {
        if let Some(d) = device {
            // The device's latest account, with what its earlier ones (a device table, then its
            // "started" line) add where they do not disagree.
            let mut own = self.seen.iter().rev().filter(|b| b.device == Some(d));
            if let Some(last) = own.next() {
                return Some(own.fold(*last, |acc, b| {
                    if acc.agrees(b) {
                        acc.filled_from(b)
                    } else {
                        acc
                    }
                }));
            }
        }
        let first = *self.seen.first()?;
        self.seen
            .iter()
            .all(|b| b.agrees(&first) && first.agrees(b))
            .then(|| {
                // Alike accounts, each perhaps partial: together.
                self.seen.iter().fold(first, |acc, b| Banner {
                    device: acc.device.filter(|d| b.device == Some(*d)),
                    ..acc.filled_from(b)
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// profanity's device list: the device's memory in bytes, its own numbering not kept.
    #[test]
    fn profanity_device_list() {
        let b = read_line("\tGPU0: GeForce GTX 1060 3GB, 3157000192 bytes available, 9 compute units (precompiled = yes)").expect("read");
        assert_eq!(
            (b.device, b.total, b.free),
            (None, Some(3_157_000_192), None)
        );
        let b = read_line("  GPU-1: Radeon RX 580, 8589934592 bytes available, 36 compute units")
            .expect("read");
        assert_eq!(b.total, Some(8 * GIB));
        assert!(read_line(
            "dsv4 hash layer: scratch too small (4096 bytes available, 8192 required)"
        )
        .is_none());
    }

    /// A device list's "Detected total memory" after a comma (NoncerPro); not a figure a
    /// sentence gives with no comma before it.
    #[test]
    fn total_memory_after_a_comma() {
        let b = read_line("    GPU#0, Name: GeForce GT 740M, Detected total memory: 2048 MB, Allocated memory: 0 MB").expect("read");
        assert_eq!((b.total, b.free), (Some(2 * GIB), None));
        assert!(read_line("Not enough total memory: 2048 MB").is_none());
        // A host's account is no device's.
        assert!(read_line("OS: Linux, CPUs: 16, total memory: 31.3 GB").is_none());
    }

    #[test]
    fn hashcat_before_and_after_6_0() {
        let old = read_line("* Device #2: Hawaii, 2047/4096 MB allocatable, 40MCU").expect("read");
        assert_eq!(
            (old.max_alloc, old.total, old.free),
            (Some(2047 * MIB), Some(4096 * MIB), None)
        );
        let v6 =
            read_line("* Device #1: GeForce RTX 2060, 5120/6144 MB (1536 MB allocatable), 30MCU")
                .expect("read");
        assert_eq!(
            (v6.free, v6.total, v6.max_alloc),
            (Some(5120 * MIB), Some(6144 * MIB), Some(1536 * MIB))
        );
        let cuda =
            read_line("* Device #1: NVIDIA GeForce RTX 2070, 6744/8192 MB, 36MCU").expect("read");
        assert_eq!(
            (cuda.free, cuda.total, cuda.max_alloc),
            (Some(6744 * MIB), Some(8 * GIB), None)
        );
        assert_eq!(
            read_line("* Device #3: NVIDIA GeForce RTX 2070, skipped"),
            None
        );
    }

    #[test]
    fn ethminer_names_the_cuda_index() {
        let b = read_line("cu 19:17:23 cuda-0    Using Pci Id : 0c:00.0 NVIDIA GeForce GTX 1650 SUPER (Compute 7.5) Memory : 3.81 GB").expect("read");
        assert_eq!(
            (b.device, b.total),
            (Some(0), Some((3.81 * GIB as f64).round() as u64))
        );
    }

    #[test]
    fn xmrig_names_the_cuda_index() {
        let b = read_line(" * CUDA GPU     #6 09:00.0 NVIDIA GeForce RTX 3070 1905/7001 MHz smx:46 arch:86 mem:6686/8192 MB").expect("read");
        assert_eq!(
            (b.device, b.free, b.total),
            (Some(6), Some(6686 * MIB), Some(8 * GIB))
        );
    }

    #[test]
    fn key_lines_of_opencl_programs_and_clinfo() {
        let b = read_line(
            "device memory: 24217 MB, max_mem_alloc_size: 6054 MB, max_compute_units: 128",
        )
        .expect("read");
        assert_eq!(
            (b.total, b.max_alloc),
            (Some(24217 * MIB), Some(6054 * MIB))
        );
        let b = read_line("CL_DEVICE_GLOBAL_MEM_SIZE: 4096 MByte").expect("read");
        assert_eq!(b.total, Some(4 * GIB));
        let b = read_line("    Memory         : 492/1968 MB allocatable").expect("read");
        assert_eq!((b.max_alloc, b.total), (Some(492 * MIB), Some(1968 * MIB)));
        let b =
            read_line("    Memory.Total...: 6143 MB (limited to 1535 MB allocatable in one block)")
                .expect("read");
        assert_eq!((b.max_alloc, b.total), (Some(1535 * MIB), Some(6143 * MIB)));
        let b = read_line("    Memory:  6044 MByte ").expect("read");
        assert_eq!(b.total, Some(6044 * MIB));
        assert_eq!(read_line("Memory: 6044 MB"), None);
        let mut all = Banners::default();
        all.note("  Global memory size                              8589934592 (8GiB)");
        all.note("  Max memory allocation                           2147483648 (2GiB)");
        let b = all.for_device(None).expect("read");
        assert_eq!((b.total, b.max_alloc), (Some(8 * GIB), Some(2 * GIB)));
        // A failure's own sentence is not a key line, nor a small bare number.
        assert_eq!(read_line("Failed to allocate device memory: 1.5 GB"), None);
        assert_eq!(read_line("global memory: 64"), None);
        // A program's own check before it loads (LichtFeld Studio), the key after a comma.
        let b = read_line("RAD paged load recommended: model=10304.2 MB, free VRAM=11815.5 MB")
            .expect("read");
        assert_eq!(b.free, Some(12389449728));
    }

    #[test]
    fn devices_that_differ_give_nothing_without_an_index() {
        let mut all = Banners::default();
        all.note("* Device #1: A, 6744/8192 MB, 36MCU");
        all.note("* Device #2: B, 6744/8192 MB, 36MCU");
        assert_eq!(all.for_device(None).and_then(|b| b.total), Some(8 * GIB));
        all.note("* Device #3: C, 3000/4096 MB, 20MCU");
        assert_eq!(all.for_device(None), None);
        let mut x = Banners::default();
        x.note("CUDA GPU #0 01:00.0 A mem:1000/2048 MB");
        x.note("CUDA GPU #1 02:00.0 B mem:3000/4096 MB");
        assert_eq!(x.for_device(Some(1)).and_then(|b| b.total), Some(4 * GIB));
        assert_eq!(x.for_device(None), None);
    }

    /// lolMiner lists each device under its own header ("Device 0:", then keys): a failure
    /// naming "GPU 0" takes device 0's account, not device 1's.
    #[test]
    fn a_header_names_the_keys_under_it() {
        assert_eq!(device_header("Device 1:"), Some(1));
        assert_eq!(device_header("Device 1: GeForce GTX 1050 Ti"), None);
        assert_eq!(device_header("[rank3]: Device 2:"), Some(2));
        assert_eq!(device_header("`Device 3:`"), Some(3));
        let log = "Setup Miner...\nDevice 0:\n    Name:    GeForce GTX 1050 Ti\n    Address: 1:0\n    Vendor:  NVIDIA Corporation\n    Memory:  4036 MByte\nDevice 1:\n    Name:    Radeon RX 580 Series\n    Memory:  8178 MByte (8158 MByte free)\n     Done (2645 ms), size of new DAG: 4072 MByte\nGPU 0: insufficient memory for DAG epoch 381.\n";
        let a = crate::oom::analyze(log);
        let o = a.ooms.last().expect("found");
        assert_eq!(o.device_index, Some(0));
        assert_eq!(o.facts.total_bytes, Some(4036 * MIB));
        assert_eq!(o.facts.requested_bytes, Some(4072 * MIB));
    }

    #[test]
    fn the_kept_accounts_are_bounded() {
        let mut all = Banners::default();
        for i in 0..1000 {
            all.note(&format!(
                "CUDA GPU #{} 01:00.0 A mem:1000/{} MB",
                i % 90,
                2048 + i
            ));
        }
        assert!(all.seen.len() <= KEPT);
    }
}
