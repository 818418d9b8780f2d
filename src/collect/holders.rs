//! Who holds GPU memory that NVML attributes to nobody: the answer to "nvidia-smi shows memory
//! used but no process".
//!
//! Three causes account for nearly all of it. A worker (a DataLoader or `torch.multiprocessing`
//! child) outlives the job that started it: it inherited the job's open device files, so the
//! job's CUDA context, and its memory, live on, but NVML lists only the context's creator,
//! which is gone. A zombie whose parent never reaps it. A process of another container, whose
//! host pid NVML lists and which does not exist in this PID namespace.
//!
//! The first needs a scan of every process's open files for the GPU's device node
//! (`/dev/nvidia<minor>`) and the unified-memory node (`/dev/nvidia-uvm`, which every CUDA
//! process opens and a monitor such as nvidia-smi does not). The scan is done on demand: when a
//! GPU's unattributed memory appears or changes, at most every [`MIN_INTERVAL`], within
//! [`BUDGET`], on a thread of its own when sampling periodically. The other two causes come
//! from the process list itself, read every tick at no extra cost.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use crate::model::{Device, Holder, HolderReason};

/// Memory beyond what the listed processes hold that is worth a scan. The driver keeps a few
/// MiB per GPU outside any process even with NVML's v2 `reserved` split out.
pub const THRESHOLD: u64 = 64 << 20;
/// At most one scan this often.
pub const MIN_INTERVAL: Duration = Duration::from_secs(5);
/// A scan that takes longer stops where it is, and says it is incomplete.
pub const BUDGET: Duration = Duration::from_millis(250);
/// While unattributed memory stays, the holders are looked for again this often (a worker can
/// exit while another takes its place with the same total).
pub const RESCAN: Duration = Duration::from_secs(60);

/// The directory of the NVIDIA device nodes: `GPUMON_DEVICE_DIR`, else `/dev` (a container can
/// mount them elsewhere).
pub fn device_dir() -> PathBuf {
    std::env::var_os("GPUMON_DEVICE_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/dev"), PathBuf::from)
}

/// What an open file is, to compare with the device nodes: a character device by its device
/// number (however it was reached), anything else by its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeId {
    Char(u64),
    File(u64, u64),
}

impl NodeId {
    fn of(m: &std::fs::Metadata) -> NodeId {
        if m.file_type().is_char_device() {
            NodeId::Char(m.rdev())
        } else {
            NodeId::File(m.dev(), m.ino())
        }
    }
}

/// The device nodes to look for.
#[derive(Debug, Clone, Default)]
pub struct Nodes {
    gpus: Vec<(u32, NodeId)>,
    uvm: Option<NodeId>,
}

impl Nodes {
    /// The nodes of the GPUs with `minors` under `dir`; those that do not exist are left out.
    pub fn read(dir: &Path, minors: &[u32]) -> Nodes {
        let id = |name: &str| {
            std::fs::metadata(dir.join(name))
                .ok()
                .map(|m| NodeId::of(&m))
        };
        Nodes {
            gpus: minors
                .iter()
                .filter_map(|&m| Some((m, id(&format!("nvidia{m}"))?)))
                .collect(),
            uvm: id("nvidia-uvm"),
        }
    }

    fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }
}

/// A process that holds GPU device nodes open.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub pid: u32,
    /// The minors of the GPU nodes it holds.
    pub minors: Vec<u32>,
    /// It holds the unified-memory node too: a CUDA process, not a monitor.
    pub uvm: bool,
    pub state: Option<char>,
    pub parent_pid: Option<u32>,
    pub parent_state: Option<char>,
    pub user: Option<String>,
    pub command: Option<String>,
    /// Unix seconds.
    pub start_time: Option<u64>,
}

/// What one scan of /proc found.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub found: Vec<Found>,
    /// Processes whose open files could not be read (other users', without root).
    pub unreadable: u32,
    /// Processes looked at.
    pub processes: usize,
    /// Every process was looked at within the budget.
    pub complete: bool,
    pub elapsed: Duration,
}

/// Looks through `proc_dir` (`/proc`) for processes holding `nodes`, except `skip` (gpumon
/// itself), for at most `budget`. A process that exits mid-scan is passed over; one whose
/// files cannot be read is counted in [`Scan::unreadable`] (kernel threads aside).
pub fn scan(proc_dir: &Path, nodes: &Nodes, skip: u32, budget: Duration) -> Scan {
    let t0 = Instant::now();
    let mut out = Scan {
        complete: true,
        ..Scan::default()
    };
    if nodes.is_empty() {
        out.elapsed = t0.elapsed();
        return out;
    }
    let Ok(entries) = std::fs::read_dir(proc_dir) else {
        out.complete = false;
        out.elapsed = t0.elapsed();
        return out;
    };
    let pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| *p != skip)
        .collect();
    // The kernel's work, per open file: a few threads on a large host, each taking the next
    // pid until none is left or the budget is spent.
    let threads = super::host::cores().clamp(1, 4).min(pids.len() / 256 + 1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    // The first thread to find the budget spent stops the others at their next pid.
    let spent = std::sync::atomic::AtomicBool::new(false);
    let work = || {
        let mut mine = Looked::default();
        let mut buf = Vec::with_capacity(1024);
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(&pid) = pids.get(i) else { break };
            if spent.load(std::sync::atomic::Ordering::Relaxed)
                || (i % 64 == 63 && t0.elapsed() > budget)
            {
                spent.store(true, std::sync::atomic::Ordering::Relaxed);
                mine.stopped = true;
                break;
            }
            mine.processes += 1;
            match open_files(proc_dir, pid, nodes) {
                Ok(Some(held)) => mine.held.push(held),
                Ok(None) => {}
                Err(Unreadable) => {
                    if !kernel_thread(proc_dir, pid, &mut buf) {
                        mine.unreadable += 1;
                    }
                }
            }
        }
        mine
    };
    let looked: Vec<Looked> = if threads <= 1 {
        vec![work()]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
            // A thread that panicked (nothing in it unwraps) leaves its pids unlooked at.
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        })
    };
    let mut held: Vec<(u32, Vec<u32>, bool)> = Vec::new();
    for l in looked {
        out.processes += l.processes;
        out.unreadable += l.unreadable;
        out.complete &= !l.stopped;
        held.extend(l.held);
    }
    held.sort_unstable_by_key(|(pid, ..)| *pid);
    let mut buf = Vec::with_capacity(1024);
    let boot = super::host::boot_time();
    // SAFETY: sysconf has no preconditions.
    let ticks = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|t| *t > 0)
        .unwrap_or(100);
    let mut users = HashMap::new();
    for (pid, mut minors, uvm) in held {
        minors.sort_unstable();
        let stat_path = proc_dir.join(format!("{pid}/stat"));
        let file = super::host::read_file(&stat_path.to_string_lossy(), &mut buf);
        let stat = file.as_ref().and_then(|_| super::host::parse_stat(&buf));
        let uid = file.and_then(|f| f.metadata().ok()).map(|m| m.uid());
        let parent_state = stat.and_then(|s| {
            let p = proc_dir.join(format!("{}/stat", s.ppid));
            super::host::read_into(&p.to_string_lossy(), &mut buf)
                .then(|| super::host::parse_stat(&buf))
                .flatten()
                .map(|p| p.state)
        });
        let command = super::host::read_into(
            &proc_dir.join(format!("{pid}/cmdline")).to_string_lossy(),
            &mut buf,
        )
        .then(|| super::host::command_line(&buf))
        .flatten();
        out.found.push(Found {
            pid,
            minors,
            uvm,
            state: stat.map(|s| s.state),
            parent_pid: stat.map(|s| s.ppid).filter(|p| *p != 0),
            parent_state,
            user: uid.and_then(|u| super::host::user_name(&mut users, u)),
            command,
            start_time: stat.zip(boot).map(|(s, b)| b + s.start_ticks / ticks),
        });
    }
    out.elapsed = t0.elapsed();
    out
}

/// What one scanning thread found.
#[derive(Default)]
struct Looked {
    held: Vec<(u32, Vec<u32>, bool)>,
    processes: usize,
    unreadable: u32,
    stopped: bool,
}

/// The process's descriptor table may not be read (another user's, without root).
struct Unreadable;

/// The GPU nodes (minors) and whether the unified-memory node is among `pid`'s open files;
/// `None` when it holds no GPU node, or has gone. One `open` of its `fd` directory, one
/// `readlinkat` per open file (which touches no file system: a file on a hung network mount
/// cannot hold the scan up), and one `fstatat` per file whose name starts with `nvidia`.
fn open_files(
    proc_dir: &Path,
    pid: u32,
    nodes: &Nodes,
) -> Result<Option<(u32, Vec<u32>, bool)>, Unreadable> {
    use std::os::unix::ffi::OsStrExt;
    let path = proc_dir.join(format!("{pid}/fd"));
    let Ok(cpath) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Ok(None);
    };
    // SAFETY: a NUL-terminated path; the descriptor is owned by the DIR below or closed here.
    let fd = unsafe {
        libc::open(
            cpath.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => Err(Unreadable),
            // Gone (ENOENT), or a zombie's, or odd: nothing held.
            _ => Ok(None),
        };
    }
    // SAFETY: `fd` is an open directory; on success the DIR owns it, on failure we close it.
    let dir = unsafe { libc::fdopendir(fd) };
    if dir.is_null() {
        // SAFETY: `fd` is ours and still open.
        unsafe { libc::close(fd) };
        return Ok(None);
    }
    let mut minors = Vec::new();
    let mut uvm = false;
    let mut link = [0u8; 256];
    loop {
        // SAFETY: `dir` is a valid DIR until closedir below; readdir returns null at the end
        // or on an error (the process exited mid-listing).
        let entry = unsafe { libc::readdir(dir) };
        if entry.is_null() {
            break;
        }
        // SAFETY: d_name is a NUL-terminated name inside the entry readdir returned, valid
        // until the next readdir call on `dir`.
        let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
        if name.to_bytes().first() == Some(&b'.') {
            continue;
        }
        // SAFETY: `dir` is valid; readlinkat writes at most `link.len()` bytes and returns
        // how many.
        let n = unsafe {
            libc::readlinkat(
                libc::dirfd(dir),
                name.as_ptr(),
                link.as_mut_ptr().cast(),
                link.len(),
            )
        };
        let Ok(n) = usize::try_from(n) else { continue };
        let target = &link[..n.min(link.len())];
        let base = target.rsplit(|b| *b == b'/').next().unwrap_or(target);
        if !base.starts_with(b"nvidia") {
            continue;
        }
        // SAFETY: stat is plain data that fstatat fills on success.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `st` is a valid out-pointer.
        let rc = unsafe { libc::fstatat(libc::dirfd(dir), name.as_ptr(), &mut st, 0) };
        if rc != 0 {
            continue;
        }
        let id = if st.st_mode & libc::S_IFMT == libc::S_IFCHR {
            NodeId::Char(st.st_rdev)
        } else {
            NodeId::File(st.st_dev, st.st_ino)
        };
        if nodes.uvm == Some(id) {
            uvm = true;
        } else if let Some((m, _)) = nodes.gpus.iter().find(|(_, g)| *g == id) {
            if !minors.contains(m) {
                minors.push(*m);
            }
        }
    }
    // SAFETY: `dir` came from fdopendir and is closed once.
    unsafe { libc::closedir(dir) };
    Ok((!minors.is_empty()).then_some((pid, minors, uvm)))
}

/// Kernel threads (pid 2 and its children) hold no files of a user's.
fn kernel_thread(proc_dir: &Path, pid: u32, buf: &mut Vec<u8>) -> bool {
    pid == 2
        || super::host::read_into(&proc_dir.join(format!("{pid}/stat")).to_string_lossy(), buf)
            && super::host::parse_stat(buf).is_some_and(|s| s.ppid == 2)
}

/// What the process list and the last scan say of each device's holders.
///
/// `unresolved(pid)`: the listed pid does not exist here. `scan`: the last scan's findings,
/// `None` before the first. `now`: for ages.
pub fn assemble(
    devices: &mut [Device],
    unresolved: &dyn Fn(u32) -> bool,
    scan: Option<&Scan>,
    alive: &dyn Fn(u32) -> bool,
    now: SystemTime,
) {
    let listed: HashSet<u32> = devices
        .iter()
        .flat_map(|d| d.processes.iter().map(|p| p.pid))
        .collect();
    let now_s = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for d in devices.iter_mut() {
        let mut holders = Vec::new();
        for p in &d.processes {
            if unresolved(p.pid) {
                holders.push(Holder {
                    pid: Some(p.pid),
                    user: None,
                    command: None,
                    state: None,
                    parent_pid: None,
                    reason: HolderReason::OtherNamespace,
                    bytes: p.gpu_memory_bytes,
                    count: 1,
                    age_s: None,
                });
            } else if p.state == Some('Z') {
                holders.push(Holder {
                    pid: Some(p.pid),
                    user: p.user.clone(),
                    command: p.command.clone().or_else(|| p.name.clone()),
                    state: Some("Z".into()),
                    parent_pid: p.parent_pid,
                    reason: HolderReason::Zombie,
                    bytes: p.gpu_memory_bytes,
                    count: 1,
                    age_s: p.age_s(now),
                });
            }
        }
        let unexplained = d.unattributed_bytes().is_some_and(|u| u >= THRESHOLD);
        if let (true, Some(scan), Some(minor)) = (unexplained, scan, d.minor_number) {
            for f in &scan.found {
                if !f.uvm || !f.minors.contains(&minor) || listed.contains(&f.pid) {
                    continue;
                }
                if !alive(f.pid) {
                    continue;
                }
                let zombie = f.state == Some('Z') || f.parent_state == Some('Z');
                holders.push(Holder {
                    pid: Some(f.pid),
                    user: f.user.clone(),
                    command: f.command.clone(),
                    state: f.state.map(String::from),
                    parent_pid: f.parent_pid,
                    reason: if zombie {
                        HolderReason::Zombie
                    } else {
                        HolderReason::NotListed
                    },
                    bytes: None,
                    count: 1,
                    age_s: f.start_time.map(|s| now_s.saturating_sub(s)),
                });
            }
            if scan.unreadable > 0 {
                holders.push(Holder {
                    pid: None,
                    user: None,
                    command: None,
                    state: None,
                    parent_pid: None,
                    reason: HolderReason::Unreadable,
                    bytes: None,
                    count: scan.unreadable,
                    age_s: None,
                });
            }
        }
        holders.sort_by_key(|h| (h.reason, h.pid));
        d.holders = holders;
    }
}

/// Decides when to scan, runs the scans (on a thread, or here when asked to wait) and puts
/// the holders into each sample.
pub struct Watch {
    dir: PathBuf,
    proc_dir: PathBuf,
    last: Option<Scan>,
    /// When the last scan was started, and each device's unattributed memory then.
    started: Option<(Instant, Vec<(u32, u64)>)>,
    pending: Option<mpsc::Receiver<Scan>>,
}

impl Default for Watch {
    fn default() -> Self {
        Watch::new(device_dir(), PathBuf::from("/proc"))
    }
}

impl Watch {
    pub fn new(dir: PathBuf, proc_dir: PathBuf) -> Watch {
        Watch {
            dir,
            proc_dir,
            last: None,
            started: None,
            pending: None,
        }
    }

    /// The last scan's figures (for benches and the closing note's numbers).
    pub fn last_scan(&self) -> Option<&Scan> {
        self.last.as_ref()
    }

    /// Fills `devices[].holders`. `wait`: a view that samples once scans here, now, when it
    /// needs to; otherwise a scan runs on a thread and its findings show from the next sample.
    pub fn update(&mut self, devices: &mut [Device], unresolved: &dyn Fn(u32) -> bool, wait: bool) {
        if let Some(rx) = &self.pending {
            match rx.try_recv() {
                Ok(scan) => {
                    self.last = Some(scan);
                    self.pending = None;
                }
                Err(mpsc::TryRecvError::Empty) => {}
                Err(mpsc::TryRecvError::Disconnected) => self.pending = None,
            }
        }
        let now_unattributed: Vec<(u32, u64)> = devices
            .iter()
            .filter(|d| d.minor_number.is_some())
            .filter_map(|d| Some((d.index, d.unattributed_bytes()?)))
            .filter(|(_, u)| *u >= THRESHOLD)
            .collect();
        if !now_unattributed.is_empty() && self.pending.is_none() && self.due(&now_unattributed) {
            let minors: Vec<u32> = devices.iter().filter_map(|d| d.minor_number).collect();
            let nodes = Nodes::read(&self.dir, &minors);
            let proc_dir = self.proc_dir.clone();
            let me = std::process::id();
            self.started = Some((Instant::now(), now_unattributed));
            if wait {
                self.last = Some(scan(&proc_dir, &nodes, me, BUDGET));
            } else {
                let (tx, rx) = mpsc::channel();
                let spawned = std::thread::Builder::new()
                    .name("gpumon-holders".into())
                    .spawn(move || {
                        let _ = tx.send(scan(&proc_dir, &nodes, me, BUDGET));
                    });
                if spawned.is_ok() {
                    self.pending = Some(rx);
                }
            }
        }
        let proc_dir = &self.proc_dir;
        let alive = |pid: u32| proc_dir.join(pid.to_string()).exists();
        assemble(
            devices,
            unresolved,
            self.last.as_ref(),
            &alive,
            SystemTime::now(),
        );
    }

    /// Whether a scan is due for these unattributed figures: never scanned, a GPU's figure
    /// moved by [`THRESHOLD`] (or a new GPU has some), or [`RESCAN`] passed; never sooner
    /// than [`MIN_INTERVAL`] after the last.
    fn due(&self, now: &[(u32, u64)]) -> bool {
        let Some((at, then)) = &self.started else {
            return true;
        };
        let since = at.elapsed();
        if since < MIN_INTERVAL {
            return false;
        }
        since >= RESCAN
            || now.iter().any(|(i, u)| {
                then.iter()
                    .find(|(j, _)| j == i)
                    .is_none_or(|(_, v)| u.abs_diff(*v) >= THRESHOLD)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Memory, Process, ProcessKind};

    const GIB: u64 = 1 << 30;

    fn device(used: u64, listed: &[(u32, u64)]) -> Device {
        Device {
            index: 0,
            minor_number: Some(0),
            memory: Memory {
                total_bytes: Some(80 * GIB),
                used_bytes: Some(used),
                free_bytes: Some(80 * GIB - used),
                reserved_bytes: Some(0),
            },
            processes: listed
                .iter()
                .map(|&(pid, b)| Process::from_nvml(pid, ProcessKind::Compute, Some(b)))
                .collect(),
            ..Device::default()
        }
    }

    fn found(pid: u32, uvm: bool) -> Found {
        Found {
            pid,
            minors: vec![0],
            uvm,
            state: Some('S'),
            parent_pid: Some(1),
            parent_state: Some('S'),
            user: Some("alice".into()),
            command: Some("python train.py".into()),
            start_time: Some(1_000),
        }
    }

    #[test]
    fn unattributed_memory_is_used_less_the_listed_processes() {
        assert_eq!(
            device(10 * GIB, &[(1, 4 * GIB)]).unattributed_bytes(),
            Some(6 * GIB)
        );
        let mut d = device(10 * GIB, &[(1, 4 * GIB)]);
        d.processes[0].gpu_memory_bytes = None;
        assert_eq!(d.unattributed_bytes(), None, "a part unknown");
        assert_eq!(device(GIB, &[(1, 2 * GIB)]).unattributed_bytes(), Some(0));
    }

    #[test]
    fn holders_of_the_node_that_nvml_does_not_list_are_named_with_their_parent_and_age() {
        let scan = Scan {
            found: vec![
                found(10, true),
                // A monitor: the GPU's node without the unified-memory node.
                found(11, false),
                // Listed by NVML: its memory is attributed already.
                found(12, true),
                Found {
                    parent_state: Some('Z'),
                    parent_pid: Some(77),
                    ..found(13, true)
                },
                // Exited since the scan.
                found(14, true),
            ],
            unreadable: 3,
            complete: true,
            ..Scan::default()
        };
        let mut devs = vec![device(10 * GIB, &[(12, 2 * GIB)])];
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(4_600);
        assemble(&mut devs, &|_| false, Some(&scan), &|p| p != 14, now);
        let h = &devs[0].holders;
        let reasons: Vec<(Option<u32>, HolderReason)> =
            h.iter().map(|h| (h.pid, h.reason)).collect();
        assert_eq!(
            reasons,
            vec![
                (Some(13), HolderReason::Zombie),
                (Some(10), HolderReason::NotListed),
                (None, HolderReason::Unreadable),
            ]
        );
        assert_eq!(h[1].age_s, Some(3_600));
        assert_eq!(h[1].bytes, None, "the node says who, not how much");
        assert_eq!(h[2].count, 3);
        assert!(
            h[0].describe().contains("its parent 77 is defunct"),
            "{}",
            h[0].describe()
        );
        assert_eq!(
            h[1].describe(),
            "pid 10 (python train.py, alice): holds the GPU but NVML does not list it \
             (parent 1, up 1h00m)"
        );
    }

    #[test]
    fn no_scan_findings_without_unattributed_memory() {
        let scan = Scan {
            found: vec![found(10, true)],
            unreadable: 2,
            ..Scan::default()
        };
        // 32 MiB unattributed: under the threshold.
        let mut devs = vec![device(2 * GIB + (32 << 20), &[(12, 2 * GIB)])];
        assemble(
            &mut devs,
            &|_| false,
            Some(&scan),
            &|_| true,
            SystemTime::now(),
        );
        assert!(devs[0].holders.is_empty(), "{:?}", devs[0].holders);
    }

    #[test]
    fn listed_pids_of_another_namespace_and_listed_zombies_carry_nvmls_figure() {
        let mut devs = vec![device(10 * GIB, &[(500, 3 * GIB), (501, 7 * GIB)])];
        devs[0].processes[1].state = Some('Z');
        assemble(&mut devs, &|p| p == 500, None, &|_| true, SystemTime::now());
        let h = &devs[0].holders;
        assert_eq!(h.len(), 2);
        assert_eq!(
            (h[0].reason, h[0].bytes),
            (HolderReason::Zombie, Some(7 * GIB))
        );
        assert_eq!(
            (h[1].reason, h[1].bytes),
            (HolderReason::OtherNamespace, Some(3 * GIB))
        );
        assert!(h[1]
            .describe()
            .contains("3.0 GiB: not in this PID namespace"));
    }

    #[test]
    fn scans_are_rate_limited_and_follow_changes() {
        let mut w = Watch::new(PathBuf::from("/nonexistent"), PathBuf::from("/proc"));
        assert!(w.due(&[(0, GIB)]));
        w.started = Some((Instant::now(), vec![(0, GIB)]));
        assert!(!w.due(&[(0, 5 * GIB)]), "not within MIN_INTERVAL");
        w.started = Some((Instant::now() - MIN_INTERVAL, vec![(0, GIB)]));
        assert!(!w.due(&[(0, GIB + (1 << 20))]), "unchanged");
        assert!(w.due(&[(0, 2 * GIB)]), "changed");
        assert!(w.due(&[(0, GIB), (1, GIB)]), "a new GPU");
        w.started = Some((Instant::now() - RESCAN, vec![(0, GIB)]));
        assert!(w.due(&[(0, GIB)]), "rescan");
    }

    /// Real processes holding stand-in nodes (regular files under a temporary directory):
    /// one with the GPU's node and the unified-memory node, one with the GPU's only.
    #[test]
    fn a_scan_finds_real_processes_holding_the_nodes() {
        let dir = tempfile::tempdir().expect("test setup");
        for n in ["nvidia0", "nvidia1", "nvidia-uvm"] {
            std::fs::write(dir.path().join(n), b"").expect("test setup");
        }
        let spawn = |files: &str| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{files} exec sleep 30"))
                .current_dir(dir.path())
                .spawn()
                .expect("test setup")
        };
        let mut worker = spawn("exec 3<nvidia1 4<nvidia-uvm;");
        let mut monitor = spawn("exec 3<nvidia1;");
        let nodes = Nodes::read(dir.path(), &[0, 1]);
        let deadline = Instant::now() + Duration::from_secs(5);
        let s = loop {
            let s = scan(Path::new("/proc"), &nodes, std::process::id(), BUDGET * 20);
            // Found, and past the shell's exec (the files open before `sleep` replaces it).
            let both = [worker.id(), monitor.id()].iter().all(|p| {
                s.found
                    .iter()
                    .any(|f| f.pid == *p && f.command.as_deref() == Some("sleep 30"))
            });
            if both {
                // Seen past the exec, so every descriptor is open; this scan may still have
                // read one's table before the shell opened its last file, so scan once more.
                break scan(Path::new("/proc"), &nodes, std::process::id(), BUDGET * 20);
            }
            if Instant::now() > deadline {
                break s;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = worker.kill();
        let _ = monitor.kill();
        let _ = worker.wait();
        let _ = monitor.wait();
        let w = s
            .found
            .iter()
            .find(|f| f.pid == worker.id())
            .expect("worker found");
        assert_eq!((w.minors.as_slice(), w.uvm), (&[1][..], true));
        assert_eq!(w.command.as_deref(), Some("sleep 30"));
        assert_eq!(w.parent_pid, Some(std::process::id()));
        let m = s
            .found
            .iter()
            .find(|f| f.pid == monitor.id())
            .expect("monitor");
        assert!(!m.uvm);
        assert!(s.complete);
        assert!(s.processes > 2);
    }

    /// A /proc whose entries are odd or vanish: a pid without a descriptor table, a link to a
    /// node that no longer exists, names that are not pids. Only the real holder is named.
    #[test]
    fn odd_proc_entries_are_passed_over() {
        let root = tempfile::tempdir().expect("test setup");
        let dev = root.path().join("dev");
        let proc_dir = root.path().join("proc");
        std::fs::create_dir_all(&dev).expect("test setup");
        for n in ["nvidia0", "nvidia-uvm", "nvidia9"] {
            std::fs::write(dev.join(n), b"").expect("test setup");
        }
        let fd = |pid: &str, n: &str, target: &Path| {
            let d = proc_dir.join(pid).join("fd");
            std::fs::create_dir_all(&d).expect("test setup");
            std::os::unix::fs::symlink(target, d.join(n)).expect("test setup");
        };
        fd("100", "3", &dev.join("nvidia0"));
        fd("100", "4", &dev.join("nvidia-uvm"));
        fd("100", "5", Path::new("/nonexistent/nvidia7"));
        fd("102", "3", &dev.join("nvidia9"));
        std::fs::remove_file(dev.join("nvidia9")).expect("test setup");
        std::fs::create_dir_all(proc_dir.join("101")).expect("test setup");
        std::fs::create_dir_all(proc_dir.join("self/fd")).expect("test setup");
        std::fs::write(proc_dir.join("stat"), b"cpu 1 2 3").expect("test setup");
        let nodes = Nodes::read(&dev, &[0, 9]);
        let s = scan(&proc_dir, &nodes, 0, BUDGET);
        assert_eq!(s.found.len(), 1, "{:?}", s.found);
        assert_eq!((s.found[0].pid, s.found[0].uvm), (100, true));
        assert_eq!(s.found[0].state, None, "no stat file: unknown, not a guess");
        assert_eq!(s.processes, 3);
        assert_eq!(s.unreadable, 0);
    }

    /// Real processes start and exit while /proc is scanned, again and again: the holder is
    /// found each time and nothing fails.
    #[test]
    fn a_scan_survives_processes_that_come_and_go() {
        let dir = tempfile::tempdir().expect("test setup");
        for n in ["nvidia0", "nvidia-uvm"] {
            std::fs::write(dir.path().join(n), b"").expect("test setup");
        }
        let mut holder = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec 3<nvidia0 4<nvidia-uvm; exec sleep 30")
            .current_dir(dir.path())
            .spawn()
            .expect("test setup");
        let mut churn = std::process::Command::new("sh")
            .arg("-c")
            .arg("while :; do /bin/true & /bin/true & wait; done")
            .spawn()
            .expect("test setup");
        let nodes = Nodes::read(dir.path(), &[0]);
        std::thread::sleep(Duration::from_millis(50));
        let mut found = 0;
        for _ in 0..40 {
            let s = scan(Path::new("/proc"), &nodes, std::process::id(), BUDGET * 40);
            found += usize::from(s.found.iter().any(|f| f.pid == holder.id()));
        }
        let _ = churn.kill();
        let _ = holder.kill();
        let _ = churn.wait();
        let _ = holder.wait();
        assert_eq!(found, 40);
    }

    /// A scan past its budget stops and says so.
    #[test]
    fn a_scan_stops_at_its_budget() {
        let dir = tempfile::tempdir().expect("test setup");
        std::fs::write(dir.path().join("nvidia0"), b"").expect("test setup");
        let nodes = Nodes::read(dir.path(), &[0]);
        let s = scan(Path::new("/proc"), &nodes, 0, Duration::ZERO);
        // The clock is first looked at at the 64th pid; the thread that finds the budget spent
        // stops the others (up to 4 on a large /proc) at their next pid.
        let entries = std::fs::read_dir("/proc").expect("test setup").count();
        assert!(entries > 64, "a /proc with {entries} entries");
        assert!(!s.complete);
        assert!(s.processes < 64 + 4, "{} processes looked at", s.processes);
    }
}
