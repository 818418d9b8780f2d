//! Recordings: `gpumon record` on the fake NVML, read back by `once --replay`, `log --replay`
//! and the replay dashboard; a recorder killed mid-write; bad files.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{fake_lib, gpumon, scenario, stdout_json, MIB};

/// GPU 0's used memory climbs 100 MiB a second; GPU 1 is lost after 2 s.
pub const CLIMB: &str = r#"{"version":1,"devices":[
  {"name":"G0","memory_total_mib":81920,"unattributed_mib":{"points":[[0,1000],[1000,101000]]},
   "processes":[{"pid":4600001,"memory_mib":2000,"sm_percent":50}]},
  {"name":"G1","memory_total_mib":81920}],
  "faults":[{"kind":"device_lost","device":1,"at_s":2}]}"#;

/// `gpumon record` on the fake library, running until killed.
pub fn start_record(scn: &Path, out: &Path, interval: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["record", "--interval", interval, "-o"])
        .arg(out)
        .env("GPUMON_NVML_LIB", fake_lib())
        .env("FAKE_NVML_SCENARIO", scn)
        .env("FAKE_NVML_SPEED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gpumon record")
}

/// Every sample of a recording, through `log --replay --format jsonl`.
pub fn replayed(file: &Path) -> Vec<Value> {
    let out = gpumon()
        .args(["log", "--format", "jsonl", "--replay"])
        .arg(file)
        .output()
        .expect("log --replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn wait_for_samples(file: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while replayed_count(file) < n {
        assert!(Instant::now() < deadline, "fewer than {n} samples recorded");
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn replayed_count(file: &Path) -> usize {
    if !file.exists() {
        return 0;
    }
    let out = gpumon()
        .args(["log", "--format", "jsonl", "--replay"])
        .arg(file)
        .output()
        .expect("log --replay");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// A recorder killed with SIGKILL leaves a file that reads back to the sample before the
/// kill; a recorder started again continues it; `once --replay --at` gives each recorded
/// sample's exact values, lost GPU included.
#[test]
fn killed_recorder_continued_and_read_back_exactly() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("night.rec.zst");
    let scn = scenario(CLIMB);
    let mut rec = start_record(&scn, &file, "100ms");
    // Two records (GPUs) a sample.
    wait_for_samples(&file, 60);
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(rec.id() as i32, libc::SIGKILL) };
    let _ = rec.wait();
    let rows = replayed(&file);
    // At most the sample being written is lost.
    assert!(rows.len() >= 60, "{} records", rows.len());
    let times: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["timestamp"].as_str())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in order");

    let mut again = start_record(&scn, &file, "100ms");
    let before = rows.len();
    let deadline = Instant::now() + Duration::from_secs(30);
    while replayed(&file).len() < before + 10 {
        assert!(
            Instant::now() < deadline,
            "the second recorder added nothing"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: as above.
    unsafe { libc::kill(again.id() as i32, libc::SIGTERM) };
    let _ = again.wait();
    let rows = replayed(&file);
    assert!(rows.len() >= before + 10);

    // Each sample, asked for by its own time, is the one recorded.
    for r in rows.iter().step_by(17) {
        let at = r["timestamp"].as_str().expect("time");
        let index = r["index"].as_u64().expect("index") as usize;
        let sample = stdout_json(
            gpumon()
                .args(["once", "--json", "--replay"])
                .arg(&file)
                .args(["--at", at]),
        );
        let d = &sample["devices"][index];
        assert_eq!(d["memory"]["used_bytes"], r["memory.used"], "at {at}: {d}");
        assert_eq!(d["error"], r["error"], "at {at}");
    }
    let used = |r: &Value| r["memory.used"].as_u64();
    let g0: Vec<u64> = rows
        .iter()
        .filter(|r| r["index"] == 0)
        .filter_map(used)
        .collect();
    assert!(g0.first() < g0.last(), "the climb was recorded");
    assert!(g0.iter().all(|u| *u >= 3000 * MIB));
    // GPU 1 is lost after 2 s, as recorded.
    assert!(rows
        .iter()
        .any(|r| r["index"] == 1 && r["error"] == "GPU is lost"));
}

/// Files that are not recordings, empty, cut short or from a newer gpumon: a clear message and
/// status 2, never a panic.
#[test]
fn bad_recordings_are_refused_clearly() {
    let dir = tempfile::tempdir().expect("dir");
    let header = br#"{"format":"gpumon-recording","version":7,"hostname":null,"started":"x","gpumon_version":"9"}"#;
    let mut future = vec![0x50, 0x2a, 0x4d, 0x18];
    future.extend_from_slice(&(header.len() as u32).to_le_bytes());
    future.extend_from_slice(header);
    let cases: [(&str, &[u8], &str); 3] = [
        ("empty", b"", "is empty: not a gpumon recording"),
        (
            "foreign",
            b"timestamp,index\n1,2\n",
            "is not a gpumon recording",
        ),
        ("future", &future, "format version 7"),
    ];
    for (name, bytes, says) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).expect("write");
        for args in [
            vec!["once", "--replay"],
            vec!["log", "--replay"],
            vec!["replay"],
        ] {
            let out = gpumon().args(&args).arg(&p).output().expect("run");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?} {name}: {err}");
            assert!(err.contains(says), "{args:?} {name}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    let missing = gpumon()
        .args(["once", "--replay", "/nonexistent/x.rec.zst"])
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(2));
}

/// `explain --recording`: a pasted OOM put against a recording of its host, at the time in
/// its log line or at --at: the minute before it, with the memory that appeared without an
/// owner (the scenario's climb).
#[test]
fn explain_puts_an_error_against_the_recording_of_its_host() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("night.rec.zst");
    let scn = scenario(CLIMB);
    let mut rec = start_record(&scn, &file, "200ms");
    wait_for_samples(&file, 30);
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    let _ = rec.wait();
    let rows = replayed(&file);
    let last = rows.last().expect("rows")["timestamp"]
        .as_str()
        .expect("time")
        .to_owned();
    let message = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 \
        has a total capacity of 80.00 GiB of which 1.00 GiB is free. Including non-PyTorch \
        memory, this process has 2.00 GiB memory in use. Of the allocated memory 1.50 GiB is \
        allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.";
    // The time from the log line's stamp.
    let logged = format!("{} ERROR train.py: {message}\n", last.replace('T', " "));
    let out = gpumon()
        .args(["explain", "--offline", "--json", "--recording"])
        .arg(&file)
        .write_stdin(logged)
        .output()
        .expect("explain");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let r = &v["recording"];
    assert_eq!(r["at_from"], "log", "{v:#}");
    assert_eq!(r["gpu"], 0);
    let events: Vec<&str> = r["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("memory used by no listed process grew from")),
        "{events:?}"
    );
    let (_, validator) = crate::docs::schema_pub("explain.schema.json");
    crate::docs::assert_valid(&validator, &v, "explain --recording --json");
    // At a time given, as text; a time outside the recording is a clear error.
    let text = gpumon()
        .args(["explain", "--offline", "--recording"])
        .arg(&file)
        .args(["--at", &last])
        .write_stdin(message)
        .output()
        .expect("explain");
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(t.contains("In the recording ("), "{t}");
    assert!(t.contains("memory used by no listed process grew"), "{t}");
    let outside = gpumon()
        .args(["explain", "--offline", "--recording"])
        .arg(&file)
        .args(["--at", "1999-01-01T00:00:00Z"])
        .write_stdin(message)
        .output()
        .expect("explain");
    assert_eq!(outside.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&outside.stderr).contains("runs from"));
}

/// `--at -10s` (a documented form) is taken as a value by every command that has `--at`; a
/// time outside the recording is an error that says its span (never the nearest sample, never
/// a panic); a second recorder on a file being recorded is refused with a clear message.
#[test]
fn at_takes_negative_offsets_and_a_recording_has_one_writer() {
    use gpumon::store::recording::{Limits, Writer};
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("r.rec.zst");
    let demo = stdout_json(gpumon().args(["--demo", "once", "--json"]));
    let mut sample: gpumon::model::Sample = serde_json::from_value(demo).expect("a sample");
    let start = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let mut writer = Writer::open(&file, Limits::default()).expect("writer");
    for i in 0..20 {
        sample.timestamp = start + Duration::from_secs(i);
        writer.append(&sample).expect("append");
    }
    // Held open: a recorder on the same file is refused.
    let out = gpumon()
        .args(["--demo", "record", "--interval", "100ms", "-o"])
        .arg(&file)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("record");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("another gpumon is recording"), "{err}");
    drop(writer);

    let j = stdout_json(
        gpumon()
            .args(["once", "--json", "--replay"])
            .arg(&file)
            .args(["--at", "-10s"]),
    );
    assert_eq!(j["timestamp"], "2026-11-18T11:06:49.000Z", "{j}");
    for (args, at) in [
        (vec!["once", "--replay"], "-10m"),
        (vec!["once", "--replay"], "+300000000000y"),
        (vec!["replay"], "-10m"),
        (vec!["once", "--replay"], "2026-11-18T17:00:00Z"),
    ] {
        let out = gpumon()
            .args(&args)
            .arg(&file)
            .args(["--at", at])
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {at}: {err}");
        assert!(
            err.contains("is not a time in this recording: it runs from 2026-11-18T11:06:40Z"),
            "{args:?} {at}: {err}"
        );
    }
    let out = gpumon()
        .args(["explain", "--offline", "--recording"])
        .arg(&file)
        .args(["--at", "-5s"])
        .write_stdin(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a \
             total capacity of 79.19 GiB of which 1.00 GiB is free.\n",
        )
        .output()
        .expect("explain");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("unexpected argument"), "{err}");
    assert!(!err.contains("not a time"), "{err}");
}
