//! Shared bench equipment: the fake NVML library and an 8 GPU × 40 process scenario whose pids
//! are real, live `sleep` processes, so host lookups do real /proc work.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub const GPUS: usize = 8;
pub const PROCS: usize = 40;

/// Builds the fake library (release) and returns its path.
pub fn fake_lib() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--release", "-p", "fake-nvml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo build -p fake-nvml");
    assert!(status.success());
    PathBuf::from(env!("CARGO_BIN_EXE_gpumon"))
        .parent()
        .expect("target dir")
        .join("libnvidia_ml.so")
}

/// The gpumon binary as `cargo build --release` makes it, built in `target/bench-user`.
///
/// Not `CARGO_BIN_EXE_gpumon`: for benches cargo builds the binary with the dev-dependencies'
/// features merged into its dependencies' (regex-syntax's Unicode tables, more of
/// regex-automata, rustix's `fs`), a different and larger program: it measured 7.4 MiB of
/// resident memory where the binary users get measured 6.4.
/// A separate target directory keeps the two builds from replacing each other.
pub fn user_binary() -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-user");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--release",
            "--bin",
            "gpumon",
            "--target-dir",
        ])
        .arg(&dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo build --release --bin gpumon");
    assert!(status.success());
    dir.join("release/gpumon").display().to_string()
}

/// Live processes to stand in for GPU processes; killed on drop.
pub struct Sleepers(pub Vec<Child>);

impl Sleepers {
    pub fn spawn(n: usize) -> Self {
        Sleepers(
            (0..n)
                .map(|_| {
                    Command::new("sleep")
                        .arg("3600")
                        .stdout(Stdio::null())
                        .spawn()
                        .expect("spawn sleep")
                })
                .collect(),
        )
    }

    pub fn pids(&self) -> Vec<u32> {
        self.0.iter().map(Child::id).collect()
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        for s in &mut self.0 {
            let _ = s.kill();
            let _ = s.wait();
        }
    }
}

/// A scenario file with `GPUS` devices of `PROCS` processes each, using `pids`.
pub fn scenario(pids: &[u32]) -> tempfile::TempPath {
    scenario_with_faults(pids, "")
}

/// [`scenario`] with a JSON list of faults (`""` for none).
pub fn scenario_with_faults(pids: &[u32], faults: &str) -> tempfile::TempPath {
    let devices: Vec<String> = (0..GPUS)
        .map(|d| {
            let procs: Vec<String> = pids[d * PROCS..(d + 1) * PROCS]
                .iter()
                .enumerate()
                .map(|(i, pid)| {
                    format!(
                        r#"{{"pid":{pid},"memory_mib":{},"sm_percent":{}}}"#,
                        100 + i,
                        i % 100
                    )
                })
                .collect();
            format!(
                r#"{{"name":"Bench GPU","memory_total_mib":81559,"memory_reserved_mib":529,
                    "utilization_gpu":{{"points":[[0,10],[60,90]]}},"temperature_c":60,
                    "power_draw_w":300,"power_limit_w":700,"processes":[{}]}}"#,
                procs.join(",")
            )
        })
        .collect();
    let mut f = tempfile::NamedTempFile::new().expect("temp");
    std::io::Write::write_all(
        &mut f,
        format!(
            r#"{{"version":1,"devices":[{}],"faults":[{faults}]}}"#,
            devices.join(",")
        )
        .as_bytes(),
    )
    .expect("write");
    f.into_temp_path()
}

/// A process's memory as the kernel counts it, in KiB: the resident set beside what only this
/// process pays for. `anon` (Anonymous in `smaps_rollup`: heap, stacks, copied-on-write pages)
/// is private memory no other process shares and the kernel cannot drop without swap; the rest
/// of the resident set is mostly clean file pages (code, read-only data) that are shared with
/// every other process mapping the same files and reclaimed under pressure.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mem {
    pub rss: u64,
    pub peak_rss: u64,
    pub anon: u64,
    pub pss_anon: u64,
}

impl std::fmt::Display for Mem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |k: u64| k as f64 / 1024.0;
        write!(
            f,
            "anonymous {:.2} MiB (Pss_Anon {:.2}), RSS {:.2} MiB (peak {:.2})",
            mib(self.anon),
            mib(self.pss_anon),
            mib(self.rss),
            mib(self.peak_rss)
        )
    }
}

fn kib_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
}

/// `pid`'s memory now, from `/proc/PID/smaps_rollup` and `status`; `None` once it has exited.
pub fn memory(pid: u32) -> Option<Mem> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(Mem {
        rss: kib_field(&rollup, "Rss:")?,
        peak_rss: kib_field(&status, "VmHWM:").unwrap_or(0),
        anon: kib_field(&rollup, "Anonymous:")?,
        pss_anon: kib_field(&rollup, "Pss_Anon:").unwrap_or(0),
    })
}

/// Runs `cmd` to its end, polling its memory while it runs: the peak anonymous and resident
/// sizes seen (RssAnon from `status`, which is cheap enough to read every few microseconds
/// of a 10 ms run; a short process's last moments may be missed), its exit status and wall
/// time.
pub fn run_polled(cmd: &mut Command) -> (std::process::ExitStatus, Mem, std::time::Duration) {
    let t = std::time::Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let path = format!("/proc/{}/status", child.id());
    let mut peak = Mem::default();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return (status, peak, t.elapsed());
        }
        if let Ok(text) = std::fs::read_to_string(&path) {
            let anon = kib_field(&text, "RssAnon:").unwrap_or(0);
            let rss = kib_field(&text, "VmRSS:").unwrap_or(0);
            peak.anon = peak.anon.max(anon);
            peak.rss = peak.rss.max(rss);
            peak.peak_rss = peak.peak_rss.max(kib_field(&text, "VmHWM:").unwrap_or(0));
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// A directory holding `libnvidia-ml.so.1` → the fake library, for peers (nvtop, nvitop) that
/// load the driver's library by its soname through `LD_LIBRARY_PATH`.
pub fn soname_dir(lib: &std::path::Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(lib, dir.path().join("libnvidia-ml.so.1")).expect("symlink");
    dir
}
