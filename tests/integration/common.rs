//! Shared helpers: locate (or build) the fake NVML library and write scenario files.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::OnceLock;

use assert_cmd::Command;

/// The fake `libnvidia-ml.so.1` from `tests/fake-nvml`, built on first use.
pub fn fake_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_gpumon"));
        let dir = bin.parent().expect("target dir").to_path_buf();
        let lib = dir.join("libnvidia_ml.so");
        let status = StdCommand::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "fake-nvml"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build -p fake-nvml");
        assert!(status.success(), "building the fake NVML library failed");
        assert!(lib.exists(), "no {}", lib.display());
        lib
    })
}

/// A scenario file that lives as long as the returned handle.
pub fn scenario(json: &str) -> tempfile::TempPath {
    let mut f = tempfile::Builder::new()
        .suffix(".json")
        .tempfile()
        .expect("temp file");
    std::io::Write::write_all(&mut f, json.as_bytes()).expect("write scenario");
    f.into_temp_path()
}

/// `gpumon` reading NVML from the fake library serving `scenario`, its clock frozen at `t`.
pub fn gpumon_fake(scenario: &Path, t: f64) -> Command {
    let mut cmd = gpumon();
    cmd.env("GPUMON_NVML_LIB", fake_lib())
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_TIME", t.to_string())
        .env("FAKE_NVML_SPEED", "0");
    cmd
}

pub fn gpumon() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpumon"));
    cmd.env_remove("GPUMON_NVML_LIB").env("NO_COLOR", "1");
    cmd
}

pub fn stdout_json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().expect("run gpumon");
    assert!(
        out.status.success(),
        "gpumon failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

pub const MIB: u64 = 1 << 20;

/// The address `gpumon serve` says it listens on (the first line of its stderr).
pub fn serve_address(child: &mut std::process::Child) -> String {
    let stderr = child.stderr.take().expect("gpumon serve's stderr is piped");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stderr), &mut line)
        .expect("read the listening line");
    line.split("://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned()
}

/// The committed sharded safetensors model (its shards are their headers only), copied with
/// each shard as long as its header says (sparse: nothing is written), as a real download is.
pub fn sharded_model() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/safetensors-sharded");
    for e in std::fs::read_dir(fixture).expect("fixture") {
        let e = e.expect("entry");
        let to = dir.path().join(e.file_name());
        std::fs::copy(e.path(), &to).expect("copy");
        if to.extension().is_some_and(|x| x == "safetensors") {
            let bytes = std::fs::read(&to).expect("read");
            let (_, data) = gpumon::estimate::config::safetensors_header_counts(&bytes, "x", None)
                .expect("a valid header");
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&to)
                .expect("open");
            f.set_len(bytes.len() as u64 + data).expect("extend");
        }
    }
    dir
}

/// The dashboard's settings for a test: `interval` and `history`, idle after 10 minutes (the
/// `--idle-after` default), the real estimate parser.
pub fn dashboard_settings(
    interval: std::time::Duration,
    history: std::time::Duration,
) -> gpumon::tui::Settings {
    gpumon::tui::Settings {
        interval,
        history,
        idle_after: std::time::Duration::from_secs(600),
        estimate: gpumon::cli::panel_estimate,
    }
}
