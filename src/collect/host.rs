//! Host-side facts for GPU processes: user, command, CPU %, host RSS and start time.
//!
//! Only the PIDs that are on GPUs are looked at, never the whole process table. A pid is
//! looked up once, when it first appears, from `stat`, `cmdline`, `cgroup` and the owner of
//! `/proc/PID` (sysinfo's lookup read six files and listed the tasks of each pid: 1,934
//! `openat` for 320 pids against 971 now); after that, at most once per [`HOST_REFRESH`],
//! only `/proc/PID/stat` is read for CPU time and RSS. User names come from the C library's
//! `getpwuid_r`, as `ps` gets them, so directory users (LDAP, SSSD, NIS: the norm on shared
//! clusters) have names too; a list read from /etc/passwd would show them as numbers. A pid that
//! is not visible here (another PID namespace, or already exited) keeps its host fields `None`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::model::{Device, Process};

/// The longest host facts are reused before /proc is read again.
pub const HOST_REFRESH: Duration = Duration::from_secs(1);
/// With a focus (the dashboard's visible rows), how often the other pids are refreshed. A row
/// that scrolls into view is in the focus, so it is fresh within a second; only an order that
/// depends on host facts needs every pid fresh, and the dashboard asks for that (no focus).
pub const BACKGROUND_REFRESH: Duration = Duration::from_secs(30);

/// What the host says about one pid.
#[derive(Debug, Clone, Default)]
struct Facts {
    name: Option<String>,
    user: Option<String>,
    command: Option<String>,
    cpu_percent: Option<f32>,
    host_memory_bytes: Option<u64>,
    start_time: Option<u64>,
    container: Option<String>,
    owner: Option<std::sync::Arc<crate::model::owner::Owner>>,
    cgroup: Option<std::sync::Arc<str>>,
    state: Option<char>,
    parent_pid: Option<u32>,
}

impl Facts {
    fn apply(&self, p: &mut Process) {
        p.name.clone_from(&self.name);
        p.user.clone_from(&self.user);
        p.command.clone_from(&self.command);
        p.cpu_percent = self.cpu_percent;
        p.host_memory_bytes = self.host_memory_bytes;
        p.start_time = self.start_time;
        p.container.clone_from(&self.container);
        p.owner.clone_from(&self.owner);
        p.cgroup.clone_from(&self.cgroup);
        p.state = self.state;
        p.parent_pid = self.parent_pid;
    }
}

/// CPU time (ms) and when it was read, for the next CPU % delta.
#[derive(Debug, Clone, Copy)]
struct CpuMark {
    cpu_ms: u64,
    at: Instant,
}

pub struct HostLookup {
    /// uid → user name, looked up once per uid.
    user_names: HashMap<u32, Option<String>>,
    /// Unix seconds at boot, for start times (`None` inside: not read yet).
    boot_time: Option<Option<u64>>,
    facts: HashMap<u32, Facts>,
    marks: HashMap<u32, CpuMark>,
    /// Pids that could not be looked up (re-tried at each refresh).
    missing: HashSet<u32>,
    refreshed: Option<Instant>,
    /// Last refresh of every pid, when a focus limits the per-second refresh.
    refreshed_all: Option<Instant>,
    /// Open `stat` files of pids refreshed every second, read again from the start: one
    /// `pread` instead of `open`, `read` and `close` (4 µs against 9–10 µs a file on a 2-core
    /// VM). At most [`MAX_KEPT_FILES`]. A file names the process, not the pid: once it exits,
    /// the file reads nothing, even if its pid is reused.
    stat_files: HashMap<u32, std::fs::File>,
    /// In a child PID namespace, NVML's host pids name other processes (or none) here.
    foreign_pids: bool,
    clock_ticks: u64,
    page_size: u64,
    buf: Vec<u8>,
}

impl Default for HostLookup {
    fn default() -> Self {
        Self::new()
    }
}

impl HostLookup {
    pub fn new() -> Self {
        // SAFETY: sysconf has no preconditions.
        let (ticks, page) = unsafe {
            (
                libc::sysconf(libc::_SC_CLK_TCK),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        HostLookup {
            user_names: HashMap::new(),
            boot_time: None,
            facts: HashMap::new(),
            marks: HashMap::new(),
            missing: HashSet::new(),
            refreshed: None,
            refreshed_all: None,
            stat_files: HashMap::new(),
            foreign_pids: in_child_pid_namespace(),
            clock_ticks: u64::try_from(ticks).ok().filter(|t| *t > 0).unwrap_or(100),
            page_size: u64::try_from(page).ok().filter(|p| *p > 0).unwrap_or(4096),
            buf: Vec::with_capacity(1024),
        }
    }

    /// Whether `pid` could not be found here at its last lookup (another PID namespace's, or
    /// gone), or every pid is another namespace's ([`in_child_pid_namespace`]).
    pub fn unresolved(&self, pid: u32) -> bool {
        self.foreign_pids || self.missing.contains(&pid)
    }

    /// Whether NVML's pids name nothing here (gpumon in a container's PID namespace).
    pub fn foreign_pids(&self) -> bool {
        self.foreign_pids
    }

    /// Fills the host fields of every process in `devices`. With a `focus` (the pids a view
    /// shows), only those are refreshed every [`HOST_REFRESH`]; the others every
    /// [`BACKGROUND_REFRESH`].
    pub fn enrich(&mut self, devices: &mut [Device], focus: Option<&[u32]>) {
        if self.foreign_pids {
            return;
        }
        let mut pids: Vec<u32> = devices
            .iter()
            .flat_map(|d| d.processes.iter().map(|p| p.pid))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        let due = self.refreshed.is_none_or(|t| t.elapsed() >= HOST_REFRESH);
        if due {
            self.refreshed = Some(Instant::now());
            // Forget pids that left the GPUs.
            self.facts.retain(|pid, _| pids.binary_search(pid).is_ok());
            self.marks.retain(|pid, _| pids.binary_search(pid).is_ok());
            self.missing.retain(|pid| pids.binary_search(pid).is_ok());
            let all = focus.is_none()
                || self
                    .refreshed_all
                    .is_none_or(|t| t.elapsed() >= BACKGROUND_REFRESH);
            if all {
                self.refreshed_all = self.refreshed;
            }
            // Refreshed every second: every pid without a focus, else the focus.
            let every_second = |p: &u32| focus.is_none_or(|f| f.binary_search(p).is_ok());
            self.stat_files
                .retain(|p, _| pids.binary_search(p).is_ok() && every_second(p));
            let known: Vec<u32> = self
                .facts
                .keys()
                .copied()
                .filter(|p| !self.missing.contains(p))
                .filter(|p| all || every_second(p))
                .collect();
            for pid in known {
                let keep = every_second(&pid);
                self.refresh_stat(pid, keep);
            }
        }
        let new: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| !self.facts.contains_key(p) || (due && self.missing.contains(p)))
            .collect();
        if !new.is_empty() {
            self.first_sight(&new);
        }
        for p in devices.iter_mut().flat_map(|d| d.processes.iter_mut()) {
            if let Some(f) = self.facts.get(&p.pid) {
                f.apply(p);
            }
        }
    }

    /// Everything about pids seen for the first time, from the few /proc files the views
    /// print: `stat` (name, CPU time, RSS, start), the owner of `/proc/PID` (the user, as `ps`
    /// shows it), `cmdline` and `cgroup`. No per-pid task listing, no environment, no other
    /// files. Many new pids at once (the first sample of a busy node) are read by a few
    /// threads: the cost is the kernel's, per file, and the cores are idle.
    fn first_sight(&mut self, pids: &[u32]) {
        let now = Instant::now();
        let wall_s = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let boot = *self.boot_time.get_or_insert_with(boot_time);
        let threads = cores()
            .min(MAX_READ_THREADS)
            .min(pids.len() / PIDS_PER_THREAD)
            .max(1);
        let read = read_raw(pids, threads, &mut self.buf);
        self.facts.reserve(pids.len());
        self.marks.reserve(pids.len());
        for (&pid, raw) in pids.iter().zip(read) {
            let Some(raw) = raw else {
                // Not visible here (another PID namespace, or gone): N/A, retried at refresh.
                self.facts.insert(pid, Facts::default());
                self.missing.insert(pid);
                continue;
            };
            self.missing.remove(&pid);
            let stat = raw.stat;
            let user = raw.uid.and_then(|uid| user_name(&mut self.user_names, uid));
            let ticks = self.clock_ticks as f64;
            let start_s = boot.map(|b| b as f64 + stat.start_ticks as f64 / ticks);
            // First sight: CPU % averaged over the process's life, as `ps` shows it.
            let cpu_percent = start_s
                .map(|start| wall_s - start)
                .filter(|life| *life > 0.0)
                .map(|life| (stat.cpu_ticks as f64 / ticks * 100.0 / life) as f32);
            self.marks.insert(
                pid,
                CpuMark {
                    cpu_ms: stat.cpu_ticks.saturating_mul(1000) / self.clock_ticks,
                    at: now,
                },
            );
            self.facts.insert(
                pid,
                Facts {
                    name: raw.name,
                    user,
                    command: raw.command,
                    cpu_percent,
                    host_memory_bytes: Some(stat.rss_pages.saturating_mul(self.page_size)),
                    start_time: start_s.map(|s| s as u64),
                    container: raw.owner.as_ref().map(|o| o.container_label()),
                    owner: raw.owner.map(std::sync::Arc::new),
                    cgroup: raw.cgroup,
                    state: Some(stat.state),
                    parent_pid: Some(stat.ppid),
                },
            );
        }
    }

    /// CPU % since the last read and RSS, from `/proc/PID/stat` alone; `keep`: hold the file
    /// open for the next read.
    fn refresh_stat(&mut self, pid: u32, keep: bool) {
        let stat = if let Some(f) = self.stat_files.get(&pid) {
            fill(f, &mut self.buf)
                .then(|| parse_stat(&self.buf))
                .flatten()
        } else {
            let f = read_file(&format!("/proc/{pid}/stat"), &mut self.buf);
            let stat = f.as_ref().and_then(|_| parse_stat(&self.buf));
            if let Some(f) = f.filter(|_| keep && stat.is_some()) {
                if self.stat_files.len() < MAX_KEPT_FILES {
                    self.stat_files.insert(pid, f);
                }
            }
            stat
        };
        let Some(Stat {
            cpu_ticks,
            rss_pages,
            state,
            ppid,
            ..
        }) = stat
        else {
            self.stat_files.remove(&pid);
            // Gone, or no longer visible: what it was doing now is unknown.
            if let Some(f) = self.facts.get_mut(&pid) {
                f.cpu_percent = None;
                f.host_memory_bytes = None;
                f.state = None;
                f.parent_pid = None;
            }
            self.marks.remove(&pid);
            return;
        };
        let now = Instant::now();
        let cpu_ms = cpu_ticks.saturating_mul(1000) / self.clock_ticks;
        let percent = self.marks.get(&pid).and_then(|m| {
            let wall_ms = now.duration_since(m.at).as_millis() as f64;
            (wall_ms > 0.0)
                .then(|| (cpu_ms.saturating_sub(m.cpu_ms) as f64 * 100.0 / wall_ms) as f32)
        });
        self.marks.insert(pid, CpuMark { cpu_ms, at: now });
        if let Some(f) = self.facts.get_mut(&pid) {
            if percent.is_some() {
                f.cpu_percent = percent;
            }
            f.host_memory_bytes = Some(rss_pages.saturating_mul(self.page_size));
            f.state = Some(state);
            f.parent_pid = Some(ppid);
        }
    }
}

/// What /proc says of each of `pids`, in order: on this thread, or by `threads` threads
/// while this one waits (one of them on this thread would share its core with the new
/// thread, which the scheduler tends to start there: measured, the sample took longer). Each
/// takes the next unread pid until none is left, so a thread the scheduler holds back leaves
/// its share to the others instead of delaying the whole sample.
fn read_raw(pids: &[u32], threads: usize, buf: &mut Vec<u8>) -> Vec<Option<Raw>> {
    if threads <= 1 {
        return pids.iter().map(|&pid| Raw::read(pid, buf)).collect();
    }
    let next = AtomicUsize::new(0);
    let drain = || {
        let mut buf = Vec::with_capacity(4096);
        let mut read = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&pid) = pids.get(i) else {
                return read;
            };
            read.push((i, Raw::read(pid, &mut buf)));
        }
    };
    let mut all = vec![None; pids.len()];
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..threads).map(|_| scope.spawn(drain)).collect();
        for r in readers {
            // A reader that panicked (it cannot: nothing in it unwraps) leaves its pids
            // unread, retried at the next refresh.
            for (i, raw) in r.join().unwrap_or_default() {
                all[i] = raw;
            }
        }
    });
    all
}

/// At most this many `stat` files are held open. A process starts with a table of 64 file
/// descriptors, and growing it in a threaded process waits for an RCU grace period
/// (milliseconds); the dashboard's rows on screen fit in this many on most terminals.
const MAX_KEPT_FILES: usize = 48;

/// Up to this many threads read the /proc files of new pids.
const MAX_READ_THREADS: usize = 4;
/// ...and each has at least this many pids: below that, a thread costs more than it saves.
const PIDS_PER_THREAD: usize = 48;

/// What /proc says of a pid at first sight, before names are looked up.
#[derive(Debug, Clone)]
struct Raw {
    stat: Stat,
    name: Option<String>,
    uid: Option<u32>,
    command: Option<String>,
    owner: Option<crate::model::owner::Owner>,
    /// Its cgroup v2 path, from the same read as the owner.
    cgroup: Option<std::sync::Arc<str>>,
}

impl Raw {
    /// `None` when the pid is not visible here (another PID namespace, or gone).
    fn read(pid: u32, buf: &mut Vec<u8>) -> Option<Raw> {
        let file = read_file(&format!("/proc/{pid}/stat"), buf)?;
        let stat = parse_stat(buf)?;
        let name = comm(buf);
        // The owner of /proc/PID/stat is the owner of /proc/PID (the process's effective
        // uid, as `ps` shows it), from the open file: no second path lookup.
        let uid = file
            .metadata()
            .ok()
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m));
        drop(file);
        let command = read_into(&format!("/proc/{pid}/cmdline"), buf)
            .then(|| command_line(buf))
            .flatten();
        let (owner, cgroup) = if read_into(&format!("/proc/{pid}/cgroup"), buf) {
            let text = String::from_utf8_lossy(buf);
            (
                super::owner::owner_of(&text),
                crate::model::unified::cgroup_v2_path(&text).map(std::sync::Arc::from),
            )
        } else {
            (None, None)
        };
        Some(Raw {
            stat,
            name,
            uid,
            command,
            owner,
            cgroup,
        })
    }
}

/// The fields gpumon reads from `/proc/PID/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// `R`, `S`, `D`, `Z` (zombie), …
    pub state: char,
    pub ppid: u32,
    /// utime + stime, in clock ticks.
    pub cpu_ticks: u64,
    pub rss_pages: u64,
    /// When the process started, in clock ticks after boot: with the pid, it names one process
    /// (a reused pid has another start time).
    pub start_ticks: u64,
}

/// Parses `/proc/PID/stat`, whose `(comm)` may itself hold spaces and parens.
pub fn parse_stat(stat: &[u8]) -> Option<Stat> {
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 2..)?).ok()?;
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    // After the comm: state(0) ppid(1) … utime(11) stime(12) … starttime(19) … rss(21).
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(Stat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        cpu_ticks: utime + stime,
        rss_pages: f.get(21)?.parse().ok()?,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

/// `/proc/PID/stat` of `pid`, read into `buf`.
pub fn read_stat(pid: u32, buf: &mut Vec<u8>) -> Option<Stat> {
    if !read_into(&format!("/proc/{pid}/stat"), buf) {
        return None;
    }
    parse_stat(buf)
}

/// The command name between the parens of a `stat` line (it may hold spaces and parens).
fn comm(stat: &[u8]) -> Option<String> {
    let open = stat.iter().position(|b| *b == b'(')?;
    let close = stat.iter().rposition(|b| *b == b')')?;
    (close > open).then(|| String::from_utf8_lossy(&stat[open + 1..close]).into_owned())
}

/// `cmdline`'s NUL-separated arguments joined by spaces; `None` when empty (kernel threads,
/// zombies).
pub(super) fn command_line(raw: &[u8]) -> Option<String> {
    let args: Vec<std::borrow::Cow<str>> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(String::from_utf8_lossy)
        .collect();
    (!args.is_empty()).then(|| args.join(" "))
}

/// Reads a whole /proc file into `buf` (reused); false when it cannot be read. Plain `read`s
/// into the buffer's room: `read_to_end` would first `statx` the file to size it, one more
/// system call per file for /proc files that report size 0 anyway. procfs answers a file
/// that fits in one read (`stat`, `cgroup`, `cmdline` all generate their whole text per
/// read), so a read that leaves room in the buffer has reached the end: no second read
/// just to be told so.
pub(super) fn read_into(path: &str, buf: &mut Vec<u8>) -> bool {
    read_file(path, buf).is_some()
}

/// [`read_into`], handing back the open file (to `fstat` it without another path lookup).
pub(super) fn read_file(path: &str, buf: &mut Vec<u8>) -> Option<std::fs::File> {
    buf.clear();
    let f = std::fs::File::open(path).ok()?;
    fill(&f, buf).then_some(f)
}

/// Reads all of `f` from its start into `buf` (positional reads: a file held open is read
/// again the same way). `false`, with `buf` empty, on an error (the process has exited).
fn fill(f: &std::fs::File, buf: &mut Vec<u8>) -> bool {
    use std::os::unix::fs::FileExt;
    buf.clear();
    let mut len = 0;
    loop {
        if buf.len() < len + 1024 {
            buf.resize(len + 4096, 0);
        }
        let room = buf.len() - len;
        match f.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            // A /proc file is generated whole: a short read is its end.
            Ok(n) if n < room => {
                len += n;
                break;
            }
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                buf.clear();
                return false;
            }
        }
    }
    buf.truncate(len);
    true
}

/// The cores this process may run on (its CPU affinity, as `nproc` counts them), asked once.
/// Not `available_parallelism`, which also looks for a cgroup CPU quota through
/// /proc/self/mountinfo and the cgroup's files (0.1 ms before the first sample, on a 2-core
/// VM): a quota caps CPU time per period, and one sample's reads (10 ms of CPU for 320 new
/// pids) take a sliver of any period whichever number of threads does them.
pub(super) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| {
        // SAFETY: cpu_set_t is plain data; sched_getaffinity fills the set it is given, of
        // the size it is told.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        let n = if rc == 0 {
            // SAFETY: `set` was filled by sched_getaffinity.
            usize::try_from(unsafe { libc::CPU_COUNT(&set) }).unwrap_or(0)
        } else {
            0
        };
        if n > 0 {
            n
        } else {
            // More than 1,024 CPUs, or no answer: the standard library's count.
            std::thread::available_parallelism().map_or(1, usize::from)
        }
    })
}

/// Boot time in Unix seconds: the real-time clock less the time since boot (what the kernel
/// prints as `btime` in /proc/stat, whose per-CPU and per-interrupt lines cost milliseconds
/// to generate on a large machine). The boot clock counts suspended time, as the start
/// times in `/proc/PID/stat` do.
pub fn boot_time() -> Option<u64> {
    let clock = |id| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec, which `ts` is.
        let rc = unsafe { libc::clock_gettime(id, &mut ts) };
        (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
    };
    let real = clock(libc::CLOCK_REALTIME)?;
    let since_boot = clock(libc::CLOCK_BOOTTIME)?;
    Some((real - since_boot).round().max(0.0) as u64)
}

pub fn user_name(cache: &mut HashMap<u32, Option<String>>, uid: u32) -> Option<String> {
    cache
        .entry(uid)
        .or_insert_with(|| Some(passwd_name(uid).unwrap_or_else(|| uid.to_string())))
        .clone()
}

/// The account name of `uid` through the C library (NSS: files, LDAP, SSSD…), `None` when it
/// has none.
fn passwd_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: passwd is plain data; getpwuid_r writes it and its strings into `buf`, whose
        // length we pass, and sets `found` to `pwd` on success or null when there is no entry.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut pwd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success pw_name points to a NUL-terminated string inside `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
        return Some(name.to_string_lossy().into_owned());
    }
}

/// True when NVML's pids (the host's, the initial PID namespace's) do not name processes in
/// this /proc: gpumon runs in a PID namespace of its own (a container) and /proc shows that
/// namespace. Seen from the inode of `/proc/self/ns/pid` (the kernel numbers the initial
/// namespace `0xEFFFFFFC`) and the `NSpid` line of `/proc/self/status`, which lists one pid
/// per level from /proc's namespace down to ours: one pid in a namespace not the initial one
/// means /proc is that namespace's. Read once per run.
pub fn in_child_pid_namespace() -> bool {
    static CHILD_NS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHILD_NS.get_or_init(|| {
        let levels = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("NSpid:"))
                    .map(|l| l.split_whitespace().count() - 1)
            });
        let ns = std::fs::read_link("/proc/self/ns/pid").ok();
        foreign_pids(ns.as_deref().and_then(|p| p.to_str()), levels)
    })
}

/// [`in_child_pid_namespace`]'s rule, from the `/proc/self/ns/pid` link and the number of
/// pids on the `NSpid` line.
fn foreign_pids(ns_link: Option<&str>, nspid_levels: Option<usize>) -> bool {
    const INITIAL: &str = "pid:[4026531836]";
    match (ns_link, nspid_levels) {
        (Some(INITIAL), _) => false,
        // /proc is this namespace's own, and it is not the host's.
        (Some(_), Some(1)) => true,
        // /proc is an ancestor namespace's: the host's, where containers nest one deep.
        (Some(_), Some(_)) => false,
        // The link unreadable: several levels say that a namespace is nested.
        (None, Some(n)) => n > 1,
        (_, None) => false,
    }
}

/// The container, pod, or batch job that holds a process, from its `/proc/PID/cgroup`, in
/// the one-string form of `container`; see [`super::owner::owner_of`].
pub fn container_of(cgroup: &str) -> Option<String> {
    super::owner::owner_of(cgroup).map(|o| o.container_label())
}

/// This machine's host name, for headers and records.
pub fn hostname() -> Option<String> {
    static NAME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        (rc == 0).then_some(())?;
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        let name = String::from_utf8_lossy(&buf[..end]).trim().to_owned();
        (!name.is_empty()).then_some(name)
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_command_lines_from_proc_files() {
        assert_eq!(
            comm(b"42 (tmux: server) S 1 2"),
            Some("tmux: server".into())
        );
        assert_eq!(comm(b"42 (a) b) (c) S 1"), Some("a) b) (c".into()));
        assert_eq!(comm(b"garbage"), None);
        assert_eq!(
            command_line(b"python\0train.py\0--lr\x003e-4\0"),
            Some("python train.py --lr 3e-4".into())
        );
        assert_eq!(command_line(b""), None, "kernel threads have none");
        assert_eq!(
            command_line(b"\xff\xfe\0x\0").map(|c| c.ends_with(" x")),
            Some(true)
        );
        assert!(boot_time().is_some_and(|b| b > 1_000_000_000));
        // Files longer than one read, and missing ones. Compared with files that do not change
        // between two reads (/proc/self/status does: its context-switch counts grow).
        let mut buf = Vec::new();
        assert!(read_into("/proc/self/maps", &mut buf));
        let environ = std::fs::read("/proc/self/environ").expect("environ");
        assert!(read_into("/proc/self/environ", &mut buf));
        assert_eq!(buf, environ);
        let path = std::env::temp_dir().join(format!("gpumon-read-into-{}", std::process::id()));
        let long: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &long).expect("temp file");
        let read = read_into(path.to_str().expect("utf-8 path"), &mut buf);
        let _ = std::fs::remove_file(&path);
        assert!(read);
        assert_eq!(buf, long);
        assert!(!read_into("/proc/0/nonexistent", &mut buf));
        assert!(buf.is_empty());
    }

    #[test]
    fn containers_from_cgroup_files() {
        let id = "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e";
        let cases = [
            (format!("0::/system.slice/docker-{id}.scope\n"), Some("docker 3f4e5d6c7b8a".to_owned())),
            (format!("12:pids:/docker/{id}\n11:memory:/docker/{id}\n"), Some("docker 3f4e5d6c7b8a".to_owned())),
            (
                format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/cri-containerd-{id}.scope\n"),
                Some("k8s pod 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 (containerd 3f4e5d6c7b8a)".to_owned()),
            ),
            (
                format!("11:memory:/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/{id}\n"),
                Some("k8s pod 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 (container 3f4e5d6c7b8a)".to_owned()),
            ),
            (format!("0::/machine.slice/libpod-{id}.scope/container\n"), Some("podman 3f4e5d6c7b8a".to_owned())),
            ("0::/system.slice/slurmstepd.scope/job_81234/step_0/user/task_0\n".to_owned(), Some("slurm job 81234".to_owned())),
            ("0::/lxc.payload.trainbox/init.scope\n".to_owned(), Some("lxc trainbox".to_owned())),
            ("0::/system.slice/jupyterhub.service\n".to_owned(), Some("jupyterhub.service".to_owned())),
            ("0::/user.slice/user-1000.slice/session-3.scope\n".to_owned(), None),
            ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-code.scope\n".to_owned(), None),
            ("0::/\n".to_owned(), None),
            (
                format!("4:memory:/docker/{id}\n1:cpu:/\n0::/\n"),
                Some("docker 3f4e5d6c7b8a".to_owned()),
            ),
            ("0::/init.scope\n".to_owned(), None),
            ("garbage without colons".to_owned(), None),
            (String::new(), None),
        ];
        for (text, want) in cases {
            assert_eq!(container_of(&text), want, "{text}");
        }
    }

    #[test]
    fn nvml_pids_are_foreign_where_proc_is_a_child_namespaces() {
        assert!(!foreign_pids(Some("pid:[4026531836]"), Some(1)));
        // A container with its own /proc (docker, unshare --mount-proc).
        assert!(foreign_pids(Some("pid:[4026532178]"), Some(1)));
        // unshare -p -f without a /proc of its own: /proc is still the host's.
        assert!(!foreign_pids(Some("pid:[4026532178]"), Some(2)));
        assert!(foreign_pids(None, Some(2)));
        assert!(!foreign_pids(None, None));
    }

    #[test]
    fn stat_lines_with_odd_process_names() {
        let line = b"4242 (py (train) 1) S 1 4242 4242 0 -1 4194304 1000 0 0 0 150 50 0 0 20 0 8 0 123456 9000000 2048 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: 'S',
                ppid: 1,
                cpu_ticks: 200,
                rss_pages: 2048,
                start_ticks: 123456,
            })
        );
        assert_eq!(parse_stat(b"garbage"), None);
        assert_eq!(parse_stat(b"1 (x) S 1"), None);
    }

    /// A lookup that trusts pids here, and one device whose only process is this test.
    fn lookup_of_self() -> (HostLookup, Vec<Device>, u32) {
        let me = std::process::id();
        let mut h = HostLookup::new();
        h.foreign_pids = false;
        let process = Process::from_nvml(me, crate::model::ProcessKind::Compute, None);
        let devs = vec![Device {
            processes: vec![process],
            ..Device::default()
        }];
        (h, devs, me)
    }

    #[test]
    fn a_stat_file_held_open_reads_fresh_figures() {
        let mut buf = Vec::new();
        let me = std::process::id();
        let kept = read_file(&format!("/proc/{me}/stat"), &mut buf).expect("own stat");
        let before = parse_stat(&buf).expect("parsed").cpu_ticks;
        // Burn CPU until a fresh open sees more ticks; the held file must see them too.
        let start = Instant::now();
        let mut x = 0u64;
        while read_stat(me, &mut buf).expect("own stat").cpu_ticks < before + 2 {
            for i in 0..100_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no CPU time accounted"
            );
        }
        assert!(fill(&kept, &mut buf));
        assert!(parse_stat(&buf).expect("parsed").cpu_ticks >= before + 2);
    }

    #[test]
    fn stat_files_are_held_for_the_focus_and_let_go_when_it_moves_or_the_process_exits() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let (mut h, mut devs, me) = lookup_of_self();
        let pid = child.id();
        devs[0].processes.push(Process::from_nvml(
            pid,
            crate::model::ProcessKind::Compute,
            None,
        ));
        let mut focus = vec![me, pid];
        focus.sort_unstable();
        h.enrich(&mut devs, Some(&focus));
        h.refreshed = None;
        h.enrich(&mut devs, Some(&focus));
        assert!(h.stat_files.contains_key(&me) && h.stat_files.contains_key(&pid));
        // The child exits: its held file reads nothing, its figures are unknown.
        child.kill().expect("kill");
        child.wait().expect("reaped");
        h.refreshed = None;
        h.enrich(&mut devs, Some(&focus));
        assert!(!h.stat_files.contains_key(&pid));
        assert_eq!(devs[0].processes[1].host_memory_bytes, None);
        assert!(devs[0].processes[0].host_memory_bytes.is_some());
        // Out of focus: let go.
        h.refreshed = None;
        h.enrich(&mut devs, Some(&[]));
        assert!(h.stat_files.is_empty());
    }

    #[test]
    fn own_process_is_found_and_refreshed() {
        let (mut h, mut devs, _) = lookup_of_self();
        h.enrich(&mut devs, None);
        let p = &devs[0].processes[0];
        assert!(p.command.is_some() && p.host_memory_bytes.is_some_and(|b| b > 0));
        std::thread::sleep(Duration::from_millis(20));
        h.refreshed = None;
        h.enrich(&mut devs, None);
        assert!(devs[0].processes[0].cpu_percent.is_some());
    }

    #[test]
    fn many_new_pids_are_read_by_several_threads_each_fact_to_its_pid() {
        let (mut h, _, me) = lookup_of_self();
        // Pids far above any pid_max (never a process), with ours and three children told
        // apart by their command lines spread among them: a fact given to the wrong pid shows.
        let mut children: Vec<std::process::Child> = (0..3)
            .map(|i| {
                std::process::Command::new("sleep")
                    .arg(format!("{}", 60 + i))
                    .spawn()
                    .expect("sleep")
            })
            .collect();
        // `spawn` can return before the kernel has set out the new program's arguments: until
        // then the child's cmdline reads empty (or still the test's own).
        for (i, c) in children.iter().enumerate() {
            let want = format!("sleep\0{}\0", 60 + i).into_bytes();
            let deadline = Instant::now() + Duration::from_secs(5);
            while std::fs::read(format!("/proc/{}/cmdline", c.id()))
                .ok()
                .as_ref()
                != Some(&want)
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let mut pids: Vec<u32> = (0..4 * PIDS_PER_THREAD as u32)
            .map(|i| 2_000_000_000 + i)
            .collect();
        let n = pids.len();
        let placed = [
            (n - 3, me),
            (0, children[0].id()),
            (n / 2, children[1].id()),
            (n - 1, children[2].id()),
        ];
        for (at, pid) in placed {
            pids[at] = pid;
        }
        h.first_sight(&pids);
        let mine = h.facts.get(&me).expect("own facts");
        assert!(mine.command.is_some() && mine.start_time.is_some());
        for (i, child) in children.iter().enumerate() {
            let facts = h.facts.get(&child.id()).expect("child's facts");
            assert_eq!(
                facts.command.as_deref(),
                Some(format!("sleep {}", 60 + i).as_str()),
                "{facts:?}"
            );
            assert_eq!(facts.name.as_deref(), Some("sleep"));
        }
        for pid in pids.iter().filter(|p| !placed.iter().any(|(_, q)| q == *p)) {
            assert!(h.missing.contains(pid), "{pid}");
            assert!(h.facts.get(pid).is_some_and(|f| f.command.is_none()));
        }
        assert!(placed.iter().all(|(_, p)| !h.missing.contains(p)));
        for c in &mut children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    #[test]
    fn cores_are_the_cpus_this_process_may_run_on() {
        // The kernel's own list, e.g. "0-3,8,10-11".
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .expect("Cpus_allowed_list")
            .trim();
        let allowed: usize = list
            .split(',')
            .map(|r| match r.split_once('-') {
                Some((a, b)) => {
                    b.parse::<usize>().expect("cpu") - a.parse::<usize>().expect("cpu") + 1
                }
                None => 1,
            })
            .sum();
        assert_eq!(cores(), allowed, "Cpus_allowed_list: {list}");
    }

    #[test]
    fn boot_time_from_the_clocks_is_the_kernels_btime() {
        let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
        let btime: u64 = stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok())
            .expect("btime");
        let ours = boot_time().expect("clocks");
        assert!(ours.abs_diff(btime) <= 1, "{ours} vs btime {btime}");
    }

    #[test]
    fn users_and_host_name_come_from_the_c_library() {
        assert_eq!(passwd_name(0).as_deref(), Some("root"));
        assert_eq!(passwd_name(3_999_999_999), None);
        let mut cache = HashMap::new();
        assert_eq!(
            user_name(&mut cache, 3_999_999_999).as_deref(),
            Some("3999999999")
        );
        let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
        assert_eq!(hostname().as_deref(), Some(kernel.trim()));
    }

    #[test]
    fn focus_limits_the_per_second_refresh() {
        let (mut h, mut devs, me) = lookup_of_self();
        h.enrich(&mut devs, Some(&[]));
        let first = h.marks.get(&me).map(|m| m.at).expect("seen");
        // Due, but not in focus and the background refresh is recent: not re-read.
        h.refreshed = None;
        h.enrich(&mut devs, Some(&[]));
        assert_eq!(h.marks.get(&me).map(|m| m.at), Some(first));
        // In focus: re-read.
        h.refreshed = None;
        h.enrich(&mut devs, Some(&[me]));
        assert_ne!(h.marks.get(&me).map(|m| m.at), Some(first));
    }
}
