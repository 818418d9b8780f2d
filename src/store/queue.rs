//! The queue directory of `gpumon run --gpus auto --wait` (see [`crate::model::queue`]).
//!
//! One directory per host, shared by its users like `/tmp` (sticky, world-writable): each
//! waiter writes its own entry file and only its owner can replace or remove it. Joining the
//! queue and launching from it happen under an exclusive `flock` on `.lock`, so two waiters
//! never decide on the same free memory; readers (the dashboard, `once`, `pick`) take no lock,
//! as entries are replaced whole by `rename`. Another user's file is not trusted: it must be
//! small, valid, owned by the uid it names, and name a live process of that uid (pid and start
//! time), or it is ignored.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::model::queue::{self, Entry};

/// The queue's directory when neither `--queue-dir` nor `GPUMON_QUEUE_DIR` names one: one per
/// host, for all its users (a job in a private /tmp, as systemd's PrivateTmp or a Slurm job's
/// tmpfs gives, needs a shared one named).
pub const DEFAULT_DIR: &str = "/tmp/gpumon-queue";
/// An entry file larger than this is not read.
const MAX_ENTRY: u64 = 16 << 10;
/// Entries read at most (a directory flooded with files is not read whole).
const MAX_ENTRIES: usize = 4096;
/// How long joining or launching waits for another process's lock (less, when `--wait`
/// has less left).
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// `explicit`, else `$GPUMON_QUEUE_DIR`, else [`DEFAULT_DIR`].
pub fn dir(explicit: Option<&Path>) -> PathBuf {
    explicit.map(Path::to_path_buf).unwrap_or_else(|| {
        std::env::var_os("GPUMON_QUEUE_DIR")
            .filter(|v| !v.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from)
    })
}

/// Unix seconds now.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn my_uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// Creates the directory shared (mode 1777, as /tmp) or checks the one there: a real
/// directory, ours, or sticky so that no one else can replace our entries.
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
    if fs::symlink_metadata(dir).is_err() {
        match fs::create_dir(dir) {
            Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o1777))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let meta = fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let mode = meta.permissions().mode();
    if meta.uid() != my_uid() && meta.uid() != 0 && mode & 0o1000 == 0 {
        return Err(io::Error::other(format!(
            "{} belongs to uid {} and is not sticky: another user could remove the queue's entries (name another with --queue-dir)",
            dir.display(),
            meta.uid()
        )));
    }
    if meta.uid() != my_uid() && mode & 0o1000 == 0 && mode & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{} is writable by others but not sticky",
            dir.display()
        )));
    }
    Ok(())
}

/// An exclusive hold on the queue's lock, released when dropped.
pub struct Lock(#[allow(dead_code)] File);

/// Takes the queue's lock, waiting at most `within` for another process to release it.
/// `Ok(None)`: another process has held it all that time. Anyone who can read the lock file
/// can hold it (a read-only descriptor locks as well), so a lock held past a deadline is
/// a process that will not let go, and the queue goes on without it: at worst two jobs
/// launch at once, as without a queue, where waiting forever would let one user stop
/// everyone's jobs.
pub fn lock(dir: &Path, within: Duration) -> io::Result<Option<Lock>> {
    let path = dir.join(".lock");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .or_else(|_| {
            // Another user's lock file: a read-only descriptor locks as well.
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
        })?;
    let start = Instant::now();
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(Lock(file)));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
        if start.elapsed() >= within {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20).min(within));
    }
}

/// Whether `pid` is a live process of `uid` that started at `start_ticks`.
fn alive(pid: u32, uid: u32, start_ticks: u64) -> bool {
    let Ok(meta) = fs::metadata(format!("/proc/{pid}")) else {
        return false;
    };
    let mut buf = Vec::with_capacity(512);
    meta.uid() == uid
        && crate::collect::host::read_stat(pid, &mut buf)
            .is_some_and(|s| s.start_ticks == start_ticks && s.state != 'Z')
}

fn read_entry(path: &Path) -> Option<(Entry, u32)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_file() || meta.len() > MAX_ENTRY {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_ENTRY).read_to_string(&mut text).ok()?;
    let entry: Entry = serde_json::from_str(&text).ok()?;
    Some((entry, meta.uid()))
}

/// The live jobs in the queue, in its order. A missing directory is an empty queue; files
/// that are not entries, or whose process has gone, are skipped (our own stale ones removed).
pub fn read(dir: &Path) -> Vec<Entry> {
    scan(dir).entries
}

/// What [`scan`] found: the live jobs in the queue's order, and the entries it ignored, each
/// with why (for `run --wait` to say).
#[derive(Debug, Default)]
pub struct Scan {
    pub entries: Vec<Entry>,
    pub ignored: Vec<String>,
}

/// When `pid`, started `start_ticks` after boot, began, in Unix seconds.
fn started(start_ticks: u64) -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    Some(crate::collect::host::boot_time()? as f64 + start_ticks as f64 / ticks)
}

/// The queue as [`read`] gives it, with the entries it ignored. What an entry may claim is
/// bounded by what its writer cannot choose ([`Entry::trusted`]): the file's owner names its
/// user, its process's start bounds when it joined.
pub fn scan(dir: &Path) -> Scan {
    let Ok(list) = fs::read_dir(dir) else {
        return Scan::default();
    };
    let me = my_uid();
    let now = now();
    let mut names = std::collections::HashMap::new();
    let mut ignored = Vec::new();
    let mut out = Vec::new();
    for item in list.flatten().take(MAX_ENTRIES) {
        let name = item.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        let path = item.path();
        let Some((entry, owner)) = read_entry(&path) else {
            continue;
        };
        let said = |why: &str| {
            format!(
                "{} (uid {owner}): {why}",
                crate::text::escape(&crate::files::cut_message(&name, 64))
            )
        };
        if let Some(why) = entry.why_invalid() {
            ignored.push(said(why));
            continue;
        }
        if entry.uid != owner {
            ignored.push(said("names another user than its file's owner"));
            continue;
        }
        if !alive(entry.pid, entry.uid, entry.start_ticks) {
            if owner == me {
                let _ = fs::remove_file(&path);
            }
            continue;
        }
        let Some(began) = started(entry.start_ticks) else {
            continue;
        };
        let user = crate::collect::host::user_name(&mut names, owner);
        out.push(entry.trusted(began, now, user));
    }
    queue::sort(&mut out);
    Scan {
        entries: out,
        ignored,
    }
}

/// This process's place in the queue: its entry file, removed when dropped (leaving the
/// queue, or the launched job holding no more).
pub struct Ticket {
    dir: PathBuf,
    path: PathBuf,
    pub entry: Entry,
}

impl Ticket {
    /// Joins the queue (under `lock`, so the time it joined orders it). `entry`'s pid, uid,
    /// start time and join time are this process's.
    pub fn join(dir: &Path, mut entry: Entry, _lock: Option<&Lock>) -> io::Result<Ticket> {
        entry.pid = std::process::id();
        entry.uid = my_uid();
        let mut buf = Vec::with_capacity(512);
        entry.start_ticks = crate::collect::host::read_stat(entry.pid, &mut buf)
            .map(|s| s.start_ticks)
            .ok_or_else(|| io::Error::other("cannot read this process's /proc entry"))?;
        entry.enqueued_at = now();
        let (ns, pid) = entry.key();
        let ticket = Ticket {
            dir: dir.to_path_buf(),
            path: dir.join(format!("{ns:020}-{pid}.json")),
            entry,
        };
        ticket.write()?;
        Ok(ticket)
    }

    /// Writes the entry as it is now: whole, by rename.
    pub fn write(&self) -> io::Result<()> {
        let tmp = self.dir.join(format!(
            ".{}-{}.tmp",
            self.entry.pid,
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let result = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            f.write_all(&serde_json::to_vec(&self.entry).map_err(io::Error::other)?)?;
            fs::rename(&tmp, &self.path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::queue::{State, VERSION};

    fn entry() -> Entry {
        Entry {
            version: VERSION,
            pid: 0,
            start_ticks: 0,
            uid: 0,
            user: None,
            command: "train".into(),
            count: 1,
            need_bytes: Some(1 << 30),
            enqueued_at: 0.0,
            state: State::Waiting,
            launched_at: None,
            grace_s: 30.0,
            gpus: None,
            holds: Vec::new(),
        }
    }

    #[test]
    fn a_ticket_is_read_back_while_its_process_lives_and_gone_when_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        let q = dir.path().join("q");
        ensure_dir(&q).expect("created");
        assert_eq!(
            fs::metadata(&q).expect("meta").permissions().mode() & 0o7777,
            0o1777
        );
        let ticket = {
            let l = lock(&q, LOCK_WAIT).expect("lock").expect("free");
            Ticket::join(&q, entry(), Some(&l)).expect("joined")
        };
        let read_back = read(&q);
        assert_eq!(read_back.len(), 1);
        assert_eq!(read_back[0].pid, ticket.entry.pid);
        assert_eq!(read_back[0].uid, ticket.entry.uid);
        // Files that are not entries, and an entry of a process that is not there, are skipped.
        fs::write(q.join("junk.json"), b"{\"version\":1").expect("write");
        fs::write(q.join("huge.json"), vec![b' '; 20 << 10]).expect("write");
        let mut dead = ticket.entry.clone();
        dead.start_ticks += 1;
        fs::write(
            q.join("00000000000000000001-1.json"),
            serde_json::to_vec(&dead).expect("json"),
        )
        .expect("write");
        assert_eq!(read(&q).len(), 1);
        assert!(
            !q.join("00000000000000000001-1.json").exists(),
            "our own stale entry is removed"
        );
        let path = ticket.path().to_path_buf();
        drop(ticket);
        assert!(!path.exists());
        assert!(read(&q).is_empty());
        // A symlink in the directory's place is refused.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&q, &link).expect("symlink");
        assert!(ensure_dir(&link).is_err());
    }

    /// S6 / C5: a lock another process holds forever blocks no one past the deadline given
    /// (`run --wait 5s` gives its own), and a forged entry of another uid, or one asking for
    /// the impossible, is ignored and said.
    #[test]
    fn a_held_lock_and_forged_entries_stop_no_one() {
        let dir = tempfile::tempdir().expect("dir");
        let q = dir.path().join("q");
        ensure_dir(&q).expect("created");
        let held = lock(&q, LOCK_WAIT).expect("lock").expect("free");
        // The same file through another descriptor: held by "another process".
        let again = lock(&q, Duration::from_millis(50)).expect("no error");
        assert!(again.is_none(), "given up at the deadline, not an error");
        drop(held);
        assert!(lock(&q, Duration::ZERO).expect("lock").is_some());

        let ticket = Ticket::join(&q, entry(), None).expect("joined unlocked");
        let mut other_uid = ticket.entry.clone();
        other_uid.uid = ticket.entry.uid.wrapping_add(1);
        other_uid.enqueued_at = -1e300;
        fs::write(
            q.join("forged.json"),
            serde_json::to_vec(&other_uid).expect("json"),
        )
        .expect("write");
        let mut absurd = ticket.entry.clone();
        absurd.need_bytes = Some(u64::MAX);
        fs::write(
            q.join("absurd.json"),
            serde_json::to_vec(&absurd).expect("json"),
        )
        .expect("write");
        let mut backdated = ticket.entry.clone();
        backdated.enqueued_at = -1e300;
        backdated.grace_s = 1e300;
        backdated.user = Some("mallory".into());
        fs::write(
            q.join("backdated.json"),
            serde_json::to_vec(&backdated).expect("json"),
        )
        .expect("write");
        let scan = scan(&q);
        assert_eq!(scan.entries.len(), 2, "{:?}", scan.entries);
        assert_eq!(scan.ignored.len(), 2, "{:?}", scan.ignored);
        assert!(scan.ignored.iter().any(|i| i.contains("another user")));
        assert!(scan.ignored.iter().any(|i| i.contains("more memory")));
        for e in &scan.entries {
            assert!(e.enqueued_at > 1e9, "not back-dated: {}", e.enqueued_at);
            assert!(e.grace_s <= crate::model::queue::MAX_GRACE_S);
            assert_ne!(e.user.as_deref(), Some("mallory"));
        }
    }
}
