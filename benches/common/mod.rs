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
/// regex-automata, rustix's `fs`), a different and larger program whose code no longer matches
/// `assets/hot-text/hot-text.ld`: it measured 7.4 MiB where the binary users get measures 6.4.
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
