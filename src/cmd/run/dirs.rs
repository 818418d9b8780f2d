//! The directories `gpumon run` writes outside the probe's: the runs' recordings and snapshots,
//! checked as the probe's directory is, and pruned after a week.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::cli::RunArgs;
use crate::collect::probe;
use crate::console::usage;
use crate::store::recording::{Limits, Writer};
use crate::text::Paint;
use crate::units::fmt_bytes;

/// A run's own recording: at most this much.
pub(super) const RUN_RECORDING_MAX: u64 = 256 << 20;

/// Runs' recordings older than this are removed when the next run starts.
pub(super) const RUNS_KEPT: Duration = Duration::from_secs(7 * 86400);

/// `$XDG_STATE_HOME/gpumon/runs` (`~/.local/state` without it); with neither HOME nor
/// XDG_STATE_HOME (some services, `env -i`), `runs` in the probe's per-user directory
/// (`$XDG_RUNTIME_DIR/gpumon`, else `$TMPDIR/gpumon-<uid>`), never a directory other users
/// share: a shared `$TMPDIR/gpumon/runs` let anyone plant a symlink at the next run's name.
pub(super) fn runs_dir() -> PathBuf {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })
        .map_or_else(
            || probe::default_dir().join("runs"),
            |b| b.join("gpumon/runs"),
        )
}

/// Creates (0700) and checks the runs directory and the one above it as the probe directory is
/// checked ([`probe::ensure_dir`]: a real directory, not a symlink, ours, not writable by group
/// or others); what is above those is the user's (their home) or the system's.
pub(super) fn ensure_runs_dir(dir: &Path) -> Result<(), probe::DirError> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        probe::ensure_dir(parent)?;
    }
    probe::ensure_dir(dir)
}

/// `run-<date>-<pid>`: what this run's files in [`runs_dir`] start with.
pub(super) fn run_stem() -> String {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "");
    format!("run-{stamp}-{}", std::process::id())
}

/// Removes runs' recordings and snapshots older than [`RUNS_KEPT`] from `dir`.
pub(super) fn prune_runs(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let ours = [".rec.zst", ".snapshot.pickle", ".snapshot.json"]
            .iter()
            .any(|x| name.contains(x));
        if !name.starts_with("run-") || !ours {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > RUNS_KEPT);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The run's recording, for `gpumon replay` and the post-mortem of a night's OOM: `--record`'s
/// file, continued as `record -o` continues one, else a new file in [`runs_dir`] (checked as
/// the probe's directory is, and created new: its name is predictable, so nothing already
/// there is followed or appended to). A recording that cannot be opened is said and skipped.
pub(super) fn open_recording(args: &RunArgs, stem: &str) -> Option<(Writer, PathBuf)> {
    if args.no_record {
        return None;
    }
    let limits = Limits {
        max_size: RUN_RECORDING_MAX,
        keep: RUNS_KEPT,
    };
    let opened = match &args.record {
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::create_dir_all(dir);
            }
            Writer::open(path, limits)
                .map(|w| (w, path.clone()))
                .map_err(|e| e.to_string())
        }
        None => {
            let dir = runs_dir();
            let path = dir.join(format!("{stem}.rec.zst"));
            ensure_runs_dir(&dir)
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    prune_runs(&dir);
                    Writer::create_new(&path, limits)
                        .map_err(|e| format!("{}: {e}", path.display()))
                })
                .map(|w| (w, path))
        }
    };
    opened
        .map_err(|e| {
            eprintln!(
                "gpumon: not recording the run ({})",
                crate::text::escape(&e)
            )
        })
        .ok()
}

/// `--snapshot`'s directory, checked: the probe saves `<dir>/<stem>.<pid>.snapshot.{pickle,json}`
/// there at an OOM. A directory that fails the probe directory's checks is a usage error.
pub(super) fn snapshot_dir(args: &RunArgs) -> anyhow::Result<Option<PathBuf>> {
    if !args.snapshot {
        return Ok(None);
    }
    let dir = args.snapshot_dir.clone().unwrap_or_else(runs_dir);
    let checked = match args.snapshot_dir {
        Some(_) => probe::ensure_dir(&dir),
        None => ensure_runs_dir(&dir),
    };
    checked.map_err(|e| {
        usage(format!(
            "--snapshot: {}",
            crate::text::escape(&e.to_string())
        ))
    })?;
    if args.snapshot_dir.is_none() {
        prune_runs(&dir);
    }
    Ok(Some(dir))
}

/// The snapshots this run's processes saved, each summarised.
pub(super) fn snapshot_summaries(out: &mut String, dir: &Path, stem: &str, paint: Paint) {
    use crate::oom::snapshot;
    use std::fmt::Write as _;
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid = name
                .to_str()?
                .strip_prefix(stem)?
                .strip_prefix('.')?
                .strip_suffix(".snapshot.pickle")?
                .parse()
                .ok()?;
            Some((pid, e.path()))
        })
        .collect();
    found.sort();
    if found.is_empty() {
        let _ = writeln!(
            out,
            "  no memory snapshot was saved: no process of the run hit an out-of-memory error in \
             PyTorch's allocator (or its PyTorch is older than 2.0)"
        );
        return;
    }
    for (pid, path) in found {
        let (sidecar, sidecar_error) = match snapshot::Sidecar::beside(&path) {
            Ok(s) => (s, None),
            Err(e) => (None, Some(e)),
        };
        let history_off = sidecar.as_ref().is_some_and(|m| m.history.is_none());
        let _ = writeln!(
            out,
            "{}",
            paint.bold(&format!("Memory snapshot at the OOM (pid {pid}):"))
        );
        let _ = writeln!(
            out,
            "  {} (open it in pytorch.org/memory_viz){}",
            crate::text::escape(&path.display().to_string()),
            match sidecar.as_ref().map(|m| (m.seconds, m.bytes)) {
                Some((Some(s), Some(b))) => format!("; taken in {s:.2} s, {}", fmt_bytes(b)),
                _ => String::new(),
            }
        );
        if history_off {
            let _ = writeln!(
                out,
                "  (PyTorch's memory history could not be turned on: no allocation stacks)"
            );
        }
        if let Some(e) = sidecar_error {
            let _ = writeln!(out, "  {}", crate::text::escape(&e));
        }
        match snapshot::read_file(&path, sidecar.as_ref()) {
            Ok(s) => out.push_str(&snapshot::render(
                &s,
                "  ",
                Some(crate::console::terminal_width()),
            )),
            Err(e) => {
                let _ = writeln!(out, "  {}", crate::text::escape(&e.to_string()));
            }
        }
    }
}
