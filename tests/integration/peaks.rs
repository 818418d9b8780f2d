//! The peak-hold between frames: a 30 ms spike to 78 GiB between two 1 s frames, served by
//! the fake NVML library in real time, appears in `log`, the recording and `serve` (for each
//! of two scrapers), and `--peak-rate 0` shows no peak at all.
//!
//! The spike recurs every second (`loop_s` 1), so every 1 s window holds one; a frame that
//! happens to land inside it is allowed for, and the tests ask only that the peak was seen
//! where the frames missed it.

use std::path::Path;

use serde_json::Value;

use crate::common::{fake_lib, gpumon, scenario, stdout_json};

const GIB: u64 = 1 << 30;

/// 20 GiB used, and 78 GiB for 30 ms at 0.5 s of every second.
const SPIKE: &str = r#"{"version":1,"loop_s":1,"devices":[
  {"name":"Spiky","memory_total_mib":81920,
   "unattributed_mib":{"points":[[0,20480]],"spikes":[{"at_s":0.5,"len_s":0.03,"value":59392}]}}]}"#;

fn fake(cmd: &mut assert_cmd::Command, scn: &Path) {
    cmd.env("GPUMON_NVML_LIB", fake_lib())
        .env("FAKE_NVML_SCENARIO", scn)
        .env("FAKE_NVML_SPEED", "1");
}

/// Each record's (used, peak), GPU 0's.
fn used_and_peak(rows: &[Value]) -> Vec<(Option<u64>, Option<u64>)> {
    rows.iter()
        .filter(|r| r["index"] == 0)
        .map(|r| (r["memory.used"].as_u64(), r["memory.peak"].as_u64()))
        .collect()
}

/// The spike was caught where the frame missed it, and no peak is below its frame.
fn assert_spike_caught(pairs: &[(Option<u64>, Option<u64>)], what: &str) {
    assert!(
        pairs.contains(&(Some(20 * GIB), Some(78 * GIB))),
        "{what}: no record with 20 GiB used and a 78 GiB peak: {pairs:?}"
    );
    for (used, peak) in pairs {
        if let (Some(u), Some(p)) = (used, peak) {
            assert!(p >= u, "{what}: a peak below its own frame: {pairs:?}");
        }
    }
}

fn jsonl(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn a_30_ms_spike_between_1_s_frames_is_in_log_and_not_without_the_peak_hold() {
    let scn = scenario(SPIKE);
    let mut cmd = gpumon();
    fake(&mut cmd, &scn);
    let out = cmd
        .args([
            "log",
            "--interval",
            "1s",
            "--count",
            "4",
            "--format",
            "jsonl",
        ])
        .output()
        .expect("log");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_spike_caught(&used_and_peak(&jsonl(&out.stdout)), "log");

    let mut cmd = gpumon();
    fake(&mut cmd, &scn);
    let out = cmd
        .args([
            "log",
            "--interval",
            "100ms",
            "--count",
            "3",
            "--format",
            "jsonl",
        ])
        .args(["--peak-rate", "0"])
        .output()
        .expect("log");
    assert!(out.status.success());
    let rows = jsonl(&out.stdout);
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|r| r["memory.peak"].is_null()),
        "not measured, so not shown: {rows:?}"
    );
}

#[test]
fn once_says_its_peak_is_of_its_own_short_window() {
    let scn = scenario(SPIKE);
    let mut cmd = gpumon();
    fake(&mut cmd, &scn);
    let json = stdout_json(cmd.args(["once", "--json"]));
    let peak = &json["devices"][0]["peak"];
    assert!(peak["reads"].as_u64() >= Some(1), "{peak}");
    assert!(peak["window_ms"].as_u64().is_some(), "{peak}");
    assert!(peak["used_bytes"].as_u64() >= json["devices"][0]["memory"]["used_bytes"].as_u64());
}

#[test]
fn the_recording_keeps_the_peak_between_its_samples() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("spike.rec.zst");
    let scn = scenario(SPIKE);
    let mut rec = crate::recording::start_record(&scn, &file, "1s");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while crate::recording::replayed_count(&file) < 4 {
        assert!(std::time::Instant::now() < deadline, "too few samples");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    let _ = rec.wait();
    let rows = crate::recording::replayed(&file);
    assert_spike_caught(&used_and_peak(&rows), "the recording");
}

/// 20 GiB used, and 78 GiB once, for 30 ms at 2.5 s.
const ONE_SPIKE: &str = r#"{"version":1,"devices":[
  {"name":"Spiky","memory_total_mib":81920,
   "unattributed_mib":{"points":[[0,20480]],"spikes":[{"at_s":2.5,"len_s":0.03,"value":59392}]}}]}"#;

#[test]
fn serve_gives_each_scraper_the_highest_since_its_own_previous_scrape() {
    let scn = scenario(ONE_SPIKE);
    // 200 reads a second: what is tested here is who gets the peak, not the rate.
    let (_serving, addr) =
        crate::serve::serve(&scn, "1", &["--interval", "1s", "--peak-rate", "200"]);
    let scrape = |who: &str| -> (Option<u64>, Option<u64>) {
        let (_, body) = crate::serve::get(&format!("http://{addr}/metrics?scraper={who}"));
        let value = |name: &str| {
            body.lines()
                .find(|l| l.starts_with(&format!("{name}{{gpu=\"0\"")))
                .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        };
        (
            value("gpumon_memory_used_bytes"),
            value("gpumon_memory_peak_used_bytes"),
        )
    };
    // b scrapes once at the start, then not until well after the spike; a scrapes often,
    // before, through and after it.
    assert_eq!(scrape("b").1, Some(20 * GIB), "no spike yet");
    let mut a_saw = Vec::new();
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(6) {
        a_saw.push(scrape("a"));
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    assert!(
        a_saw.contains(&(Some(20 * GIB), Some(78 * GIB))),
        "scraper a never saw the spike: {a_saw:?}"
    );
    assert_eq!(
        a_saw.last().map(|s| s.1),
        Some(Some(20 * GIB)),
        "a's later scrapes are past it"
    );
    assert_eq!(
        scrape("b"),
        (Some(20 * GIB), Some(78 * GIB)),
        "b's window holds the spike that a's scrapes took"
    );
    assert_eq!(scrape("b").1, Some(20 * GIB), "and only once");
}
