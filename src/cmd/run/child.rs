//! The child `gpumon run` starts: the probe's site directory, its stderr relayed byte for byte and
//! read for an OOM, the signals forwarded to it, and its exit status.

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::{self, IsTerminal, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::collect::probe;
use crate::oom::scan::{LineSplitter, Scanner};
use crate::oom::Analysis;

/// What the stderr relay found.
pub(super) struct Relayed {
    pub(super) analysis: Analysis,
    /// When the last OOM's first line went by.
    pub(super) oom_at: Option<SystemTime>,
}

/// What the relay has read of CMD's stderr so far, shared with `run`: when CMD exits, `run`
/// takes it without waiting for the pipe's end, which a backgrounded grandchild may hold
/// open for as long as it lives.
#[derive(Default)]
pub(super) struct Reading {
    pub(super) scanner: Scanner,
    pub(super) split: LineSplitter,
    pub(super) oom_at: Option<SystemTime>,
}

impl Reading {
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        let Reading {
            scanner,
            split,
            oom_at,
        } = self;
        split.feed(bytes, |line| {
            if crate::oom::scan::is_trigger(line) {
                *oom_at = Some(SystemTime::now());
            }
            scanner.push_line(line);
        });
    }

    /// What was found, the last line included even without its newline.
    pub(super) fn finish(self) -> Relayed {
        let Reading {
            mut scanner,
            mut split,
            mut oom_at,
        } = self;
        split.finish(|line| {
            if crate::oom::scan::is_trigger(line) {
                oom_at = Some(SystemTime::now());
            }
            scanner.push_line(line);
        });
        Relayed {
            analysis: scanner.finish(),
            oom_at,
        }
    }
}

/// How long `run` waits, once CMD has exited, for its stderr to be read to the end: what CMD
/// wrote is in the pipe already; only a process CMD left behind keeps the pipe open longer.
pub(super) const DRAIN: Duration = Duration::from_millis(200);

/// Copies CMD's stderr to ours unchanged, feeding what it reads to `reading`; tells `done`
/// at the end of the pipe.
pub(super) fn relay(
    mut from: impl Read,
    reading: Arc<std::sync::Mutex<Option<Reading>>>,
    done: std::sync::mpsc::Sender<()>,
) {
    let mut to = io::stderr();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // The user sees the bytes first; a closed stderr of ours must not stop the job.
        let _ = to.write_all(&chunk[..n]);
        let _ = to.flush();
        if let Some(r) = reading.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            r.feed(&chunk[..n]);
        }
    }
    let _ = done.send(());
}

/// The directory holding our sitecustomize.py, removed when dropped.
pub(super) struct SiteDir(pub(super) PathBuf);

impl SiteDir {
    pub(super) fn create(runtime: &Path) -> io::Result<SiteDir> {
        let dir = runtime.join(format!("site-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join("sitecustomize.py"))?;
        f.write_all(probe::SITECUSTOMIZE.as_bytes())?;
        Ok(SiteDir(dir))
    }
}

impl Drop for SiteDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

pub(super) fn python_path(site: &Path) -> OsString {
    let mut value = OsString::from(site.as_os_str());
    if let Some(prev) = std::env::var_os("PYTHONPATH").filter(|v| !v.is_empty()) {
        value.push(":");
        value.push(prev);
    }
    value
}

/// Whether a SIGINT/SIGQUIT we got was the terminal's, which the child got as well.
pub(super) fn from_terminal() -> bool {
    if !io::stdin().is_terminal() {
        return false;
    }
    // SAFETY: plain queries of our own process group and the terminal's foreground group.
    unsafe { libc::tcgetpgrp(0) == libc::getpgrp() }
}

pub(super) fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => (128 + sig) as u8,
        _ => 1,
    }
}

/// What CMD is started with beside its own environment: the probe's settings, the GPUs chosen
/// (`CUDA_VISIBLE_DEVICES`) and where a snapshot goes.
pub(super) struct Env {
    pub(super) vars: Vec<(&'static str, OsString)>,
}

/// Starts CMD with its stderr piped to us; `Err` is the exit code of a shell that could not
/// run it (127: not found, 126: not runnable), said on stderr.
pub(super) fn spawn(program: &OsString, args: &[OsString], env: &Env) -> Result<Child, ExitCode> {
    Command::new(program)
        .args(args)
        .envs(env.vars.iter().map(|(k, v)| (k, v)))
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            eprintln!("gpumon: cannot run '{}': {e}", program.to_string_lossy());
            ExitCode::from(if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            })
        })
}

/// CMD's stderr, relayed on a thread of its own while `run` reads what it found.
pub(super) struct Stderr {
    reading: Arc<std::sync::Mutex<Option<Reading>>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl Stderr {
    /// Starts relaying `child`'s stderr.
    pub(super) fn relay(child: &mut Child) -> Stderr {
        let reading = Arc::new(std::sync::Mutex::new(Some(Reading::default())));
        let (tx, done) = std::sync::mpsc::channel();
        if let Some(e) = child.stderr.take() {
            let reading = Arc::clone(&reading);
            std::thread::spawn(move || relay(e, reading, tx));
        }
        Stderr { reading, done }
    }

    /// Once CMD has exited: what it wrote is read within [`DRAIN`]; a process it left behind
    /// that still holds the pipe does not keep `run` waiting (what it writes later is relayed
    /// until gpumon exits, and not read for an OOM).
    pub(super) fn finish(self) -> Relayed {
        let _ = self.done.recv_timeout(DRAIN);
        self.reading
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .map_or(
                Relayed {
                    analysis: Analysis::default(),
                    oom_at: None,
                },
                Reading::finish,
            )
    }
}

/// The signals `run` passes on to CMD.
pub(super) struct Signals {
    int: Signal,
    quit: Signal,
    term: Signal,
    hup: Signal,
    usr1: Signal,
    usr2: Signal,
}

impl Signals {
    pub(super) fn new() -> io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            quit: signal(SignalKind::quit())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            usr1: signal(SignalKind::user_defined1())?,
            usr2: signal(SignalKind::user_defined2())?,
        })
    }

    /// Forwards each signal that comes to `pid`, for as long as it is polled (each wait is a
    /// `recv`, so it may be dropped at any point). SIGINT and SIGQUIT only when they did not
    /// come from the terminal, which already delivered them to CMD.
    pub(super) async fn forward_to(&mut self, pid: u32) -> std::convert::Infallible {
        loop {
            let sig = tokio::select! {
                _ = self.int.recv() => (!from_terminal()).then_some(libc::SIGINT),
                _ = self.quit.recv() => (!from_terminal()).then_some(libc::SIGQUIT),
                _ = self.term.recv() => Some(libc::SIGTERM),
                _ = self.hup.recv() => Some(libc::SIGHUP),
                _ = self.usr1.recv() => Some(libc::SIGUSR1),
                _ = self.usr2.recv() => Some(libc::SIGUSR2),
            };
            if let Some(sig) = sig {
                // SAFETY: kill(2) on our own child's pid.
                unsafe { libc::kill(pid as i32, sig) };
            }
        }
    }
}
